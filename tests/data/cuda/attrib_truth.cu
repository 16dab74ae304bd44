/*
 * attrib_truth.cu — the ground truth of PC-to-region attribution (issue 19),
 * written for Argus. Its ownership is known by construction:
 *
 *   region A   calls the __noinline__ helper `mix` k1 times per warp,
 *   region B   calls the same helper k2 times per warp,
 *   region C   runs an inlined (__forceinline__) step k3 times per warp,
 *   unmarked   the loads and stores around the regions (the kernel's root).
 *
 * Every thread of a warp runs the same path (the trip counts are kernel
 * arguments, the same for all threads; no data-dependent branch), so every
 * SASS instruction executes a whole number of times per warp and with all
 * 32 threads: per PC, warp instructions = warps x n(p) and thread
 * instructions = 32 x that. The helper is straight-line code: each of its
 * PCs runs k1 + k2 times per warp (alpha(A, p) = k1 / (k1 + k2)); the
 * inlined step's PCs run k3 (or k3 + 1 for a loop test) times; the
 * unmarked code once. tests/sassm/test_gpu_sass_metrics.c checks that rule
 * per PC against CUPTI's counts, and the kernel total against the hardware
 * counter (ncu's smsp__inst_executed.sum) when ncu is there.
 *
 * Result: out[t] = f(in[t]) computed on the CPU by the harness
 * (examples/attrib_truth/harness.c) with the same float operations; the
 * helper and the step use only fmaf, so the result is exact to the bit.
 *
 * The collector kernel of the paper's figures (`collector`: 8 occurrences
 * of a region of 2,048 dependent FMAs, 128 CTAs x 256 threads) lives here
 * too, for bench/bench_sass_metrics.c.
 */
#include "argus/region.cuh"

/* straight-line: no branch, so every PC runs once per call */
__device__ __noinline__ float mix(float a, float s) {
  a = fmaf(a, 1.0001f, s);
  a = fmaf(a, 0.9999f, 0.25f);
  a = fmaf(a, a, -0.5f) * 0.125f;
  return fmaf(a, 0.5f, s);
}

__device__ __forceinline__ float step(float a, int i) {
  return fmaf(a, 0.75f, (float)(i & 3));
}

extern "C" __global__ void attrib_truth(float *out, const float *in, int k1, int k2,
                                        int k3) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  float a = in[t];
  ARGUS_BEGIN(A);
#pragma unroll 1
  for (int i = 0; i < k1; i++)
    a = mix(a, 1.0f);
  ARGUS_END(A);
  ARGUS_BEGIN(B);
#pragma unroll 1
  for (int i = 0; i < k2; i++)
    a = mix(a, 2.0f);
  ARGUS_END(B);
  ARGUS_BEGIN(C);
#pragma unroll 1
  for (int i = 0; i < k3; i++)
    a = step(a, i);
  ARGUS_END(C);
  out[t] = a;
}

/* The paper's collector kernel: 8 occurrences of `occ`, each 2,048
 * dependent FMAs (unrolled: the chain, not loop overhead, sets the time),
 * inside `work`. */
#define COLLECTOR_INNER 2048
extern "C" __global__ void __launch_bounds__(256) collector(float *out, const float *seed) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  float a = seed[t];
  ARGUS_BEGIN(work);
#pragma unroll 1
  for (int o = 0; o < 8; o++) {
    ARGUS_BEGIN_AT(occ, o);
#pragma unroll
    for (int j = 0; j < COLLECTOR_INNER; j++)
      a = fmaf(a, 1.0000001f, 0.5f);
    ARGUS_END(occ);
  }
  ARGUS_END(work);
  out[t] = a;
}

/* Which kernel features CUPTI's SASS patching counts (docs/sass-metrics.md:
 * TMA kernels returned no record): out[t] = in[t] + 1 through a 128-byte
 * __grid_constant__ parameter (a CUtensorMap's size and alignment), and
 * through an mbarrier every thread of the CTA arrives at and waits on. */
struct __align__(64) attrib_p128 {
  float v[32];
};

extern "C" __global__ void attrib_param(const __grid_constant__ attrib_p128 p, float *out,
                                        const float *in) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  out[t] = in[t] + p.v[threadIdx.x & 31];
}

extern "C" __global__ void attrib_mbar(float *out, const float *in) {
  __shared__ __align__(8) unsigned long long bar;
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned a = (unsigned)__cvta_generic_to_shared(&bar);
  if (threadIdx.x == 0)
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(a), "r"(blockDim.x));
  __syncthreads();
  unsigned long long st;
  asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];" : "=l"(st) : "r"(a) : "memory");
  unsigned done = 0;
  while (!done)
    asm volatile("{\n.reg .pred p;\nmbarrier.test_wait.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n}"
                 : "=r"(done)
                 : "r"(a), "l"(st)
                 : "memory");
  out[t] = in[t] + 1.0f;
}
