/* occupancy.cu — a kernel for tests/observe/test_observe.c: 20 accumulators
 * live across a loop with a traced region, so the trace-free build needs 27
 * registers (occupancy bucket up to 32) and the traced build 37 without a
 * cap: observe must compile the traced variant with -maxrregcount=32. */
#define K 20
#include "argus/region.cuh"
extern "C" __global__ void __launch_bounds__(256) occ_kernel(float *out, const float *in, int n) {
  const int tid = blockIdx.x * blockDim.x + threadIdx.x;
  float acc[K];
#pragma unroll
  for (int k = 0; k < K; k++)
    acc[k] = in[tid + k * 4096];
  ARGUS_BEGIN(body);
#pragma unroll 1
  for (int i = 0; i < n; i++) {
    ARGUS_BEGIN_AT(step, i);
#pragma unroll
    for (int k = 0; k < K; k++)
      acc[k] = fmaf(acc[k], acc[(k + 1) % K], 0.5f);
    ARGUS_END(step);
  }
  ARGUS_END(body);
  float s = 0;
#pragma unroll
  for (int k = 0; k < K; k++)
    s += acc[k];
  out[tid] = s;
}
