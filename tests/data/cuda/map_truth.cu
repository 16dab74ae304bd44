/*
 * map_truth.cu — the mapping run's ground truth (issue 19, docs/attribution.md),
 * written for Argus. Ownership is known by construction: the __noinline__
 * helper `mix` is called K1 times per warp from region 'a' and K2 times from
 * region 'b'; `twice` is inlined into 'a' only; the code between the regions
 * is unmarked (owned by the kernel's root region). So every PC of `mix` has
 * alpha(a) = K1 / (K1 + K2), every PC of the inlined code entropy 0.
 *
 * Result: out[i] = a function of in[i] (the harness can recompute it).
 */
#include "argus/region.cuh"

#define K1 3
#define K2 5

/* straight-line (no loop for ptxas to unroll: each of its SASS
 * instructions runs once per call), and it stores its result (volatile), so
 * nvcc keeps each call inside its region */
__device__ __noinline__ float mix(volatile float *slot, float x, int k) {
  x = x * 1.0001f + 0.5f * (float)k;
  x = x * x + 1.0f;
  *slot = x;
  return x;
}

__device__ __forceinline__ float twice(float x) { return x * 2.0f + 1.0f; }

extern "C" __global__ void map_truth(const float *in, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  volatile float *slot = out + i;
  float x = in[i];
  ARGUS_BEGIN(a);
  for (int k = 0; k < K1; k++)
    x = mix(slot, x, k);
  x = twice(x);
  *slot = x;
  ARGUS_END(a);
  *slot = x - 1.0f; /* unmarked: the root region */
  x = *slot;
  ARGUS_BEGIN(b);
  for (int k = 0; k < K2; k++)
    x = mix(slot, x, k);
  ARGUS_END(b);
  *slot = x;
}
