/*
 * pm_truth.cu — the ground truth of the throughput signal (issue 21,
 * docs/throughput.md), written for Argus. Two regions, each several
 * milliseconds long on every SM, whose hardware rates are known by
 * construction:
 *
 *   stream  every thread copies float4s of a buffer far larger than the
 *           50 MB L2 (256 MiB in, 256 MiB out by default), `passes` times:
 *           DRAM-bound, reads and writes at terabytes per second, no tensor
 *           work and few FMA-pipe instructions (the address arithmetic);
 *   mma     every warp runs `iters` steps of a 16x16x16 half-precision MMA
 *           (wmma: HMMA on the tensor pipe) and of 8 independent FMA chains,
 *           all in registers: no DRAM traffic.
 *
 * One CTA per SM (132 x 256 threads on the H200) makes every SM run the
 * same region at the same time: the phases change within microseconds of
 * each other, so most sampling windows hold one region alone.
 *
 * Result: dst equals src; out[t] = 2 * iters (each MMA adds 16 x 0.5 x 0.25
 * to every accumulator element: exact in float below 2^24) plus the sum of
 * the 8 chains of x = (t % 13) / 16, which the harness checks bit for bit
 * with the same float operations.
 */
#include <cuda_fp16.h>
#include <mma.h>

#include "argus/region.cuh"

using namespace nvcuda;

extern "C" __global__ void __launch_bounds__(256)
    pm_truth(float4 *dst, const float4 *src, unsigned long long n4, int passes, int iters,
             float *out) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  const unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  ARGUS_BEGIN(stream);
#pragma unroll 1
  for (int p = 0; p < passes; p++)
    for (unsigned long long i = t; i < n4; i += stride)
      dst[i] = src[i];
  ARGUS_END(stream);
  ARGUS_BEGIN(mma);
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
  wmma::fill_fragment(a, __float2half(0.5f));
  wmma::fill_fragment(b, __float2half(0.25f));
  wmma::fill_fragment(c, 0.0f);
  const float x = (float)(t % 13) * 0.0625f;
  float a0 = x, a1 = x + 1.0f, a2 = x + 2.0f, a3 = x + 3.0f;
  float a4 = x + 4.0f, a5 = x + 5.0f, a6 = x + 6.0f, a7 = x + 7.0f;
#pragma unroll 1
  for (int i = 0; i < iters; i++) {
    wmma::mma_sync(c, a, b, c);
    a0 = fmaf(a0, 0.999f, 0.5f);
    a1 = fmaf(a1, 0.999f, 0.5f);
    a2 = fmaf(a2, 0.999f, 0.5f);
    a3 = fmaf(a3, 0.999f, 0.5f);
    a4 = fmaf(a4, 0.999f, 0.5f);
    a5 = fmaf(a5, 0.999f, 0.5f);
    a6 = fmaf(a6, 0.999f, 0.5f);
    a7 = fmaf(a7, 0.999f, 0.5f);
  }
  ARGUS_END(mma);
  out[t] = c.x[0] + (((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)));
}
