/*
 * hw_truth.cu — the ground truth of the stalls signal (issue 21), written
 * for Argus. Two regions whose dominant warp state is known by
 * construction:
 *
 *   wait    warp 0 of each CTA sleeps (__nanosleep, `spin` times 2 us)
 *           while the CTA's other warps wait at __syncthreads: most sampled
 *           warps of this region are stalled at the barrier;
 *   issue   every warp runs 8 independent FMA chains (`n` steps each, the
 *           loop unrolled by 8): always an instruction ready, so samples
 *           are of issued or issue-limited warps (selected, not selected,
 *           math pipe throttle, short dependency waits), never the barrier.
 *
 * Result: out[t] = the sum of the 8 chains of in[t] (the harness checks it
 * bit for bit with the same fmaf operations).
 */
#include "argus/region.cuh"

extern "C" __global__ void __launch_bounds__(256) stall_truth(float *out, const float *in,
                                                              int spin, int n) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  float x = in[t];
  ARGUS_BEGIN(wait);
  if (threadIdx.x < 32) {
#pragma unroll 1
    for (int i = 0; i < spin; i++)
      __nanosleep(2000);
  }
  __syncthreads();
  ARGUS_END(wait);
  ARGUS_BEGIN(issue);
  float a0 = x, a1 = x + 1.0f, a2 = x + 2.0f, a3 = x + 3.0f;
  float a4 = x + 4.0f, a5 = x + 5.0f, a6 = x + 6.0f, a7 = x + 7.0f;
#pragma unroll 1
  for (int i = 0; i < n; i++) {
    a0 = fmaf(a0, 0.999f, 0.5f);
    a1 = fmaf(a1, 0.999f, 0.5f);
    a2 = fmaf(a2, 0.999f, 0.5f);
    a3 = fmaf(a3, 0.999f, 0.5f);
    a4 = fmaf(a4, 0.999f, 0.5f);
    a5 = fmaf(a5, 0.999f, 0.5f);
    a6 = fmaf(a6, 0.999f, 0.5f);
    a7 = fmaf(a7, 0.999f, 0.5f);
  }
  ARGUS_END(issue);
  out[t] = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
}
