/*
 * map_helper_region.cu — a region opened inside a helper (issue 19,
 * docs/attribution.md, "Regions inside a helper"), written for Argus. The
 * __noinline__ helper `hstep` opens its own region `inner` and calls the
 * __noinline__ leaf `hleaf` inside it; the kernel calls `hstep` K1 times per
 * warp from region A and K2 times from region B. By construction:
 *
 *   hstep's code before and after `inner`   the caller's region: A or B
 *   hstep's code inside `inner`             hstep/inner, whichever region calls
 *   hleaf (called inside `inner`)           hstep/inner
 *
 * so every PC of hstep outside `inner` has alpha(A) = K1 / (K1 + K2), and every
 * PC inside it, and every PC of hleaf, belongs to hstep/inner alone.
 * extern "C" keeps the PTX names plain. Result: out[i] = a function of in[i].
 */
#include "argus/region.cuh"

#define K1 3
#define K2 5

extern "C" __device__ __noinline__ float hleaf(volatile float *slot, float x) {
  x = x * 0.5f + 1.0f;
  *slot = x;
  return x;
}

/* straight-line around the call, and it stores (volatile), so nvcc keeps
 * each part on its side of the markers */
extern "C" __device__ __noinline__ float hstep(volatile float *slot, float x, int k) {
  x = x * 1.0001f + 0.5f * (float)k;
  *slot = x;
  ARGUS_BEGIN(inner);
  x = hleaf(slot, x * x);
  ARGUS_END(inner);
  *slot = x + 2.0f;
  return x - 0.25f;
}

extern "C" __global__ void map_helper_region(const float *in, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  volatile float *slot = out + i;
  float x = in[i];
  ARGUS_BEGIN(A);
  for (int k = 0; k < K1; k++)
    x = hstep(slot, x, k);
  ARGUS_END(A);
  ARGUS_BEGIN(B);
  for (int k = 0; k < K2; k++)
    x = hstep(slot, x, k);
  ARGUS_END(B);
  *slot = x;
}
