/*
 * spin.cu - ground-truth kernels for trace fidelity: regions that spin a
 * known number of SM cycles by %clock64. In each occurrence the region body
 * reads the clock as its first instruction (t0) and as its last (t2, after
 * the spin loop has exited); t2 - t0 is the truth, and lane 0 stores it after
 * the region ends, so the store is outside what the trace measures.
 *
 * Layout of truth: [warp][region 0..2][rep] cycles, warp = global warp index.
 * `fault` != 0 makes thread 0 write through a bad pointer (the fault test);
 * `forever` != 0 makes every thread spin forever (the hang test).
 */
#include "argus/region.cuh"

#define SPIN(name, cycles, slot)                                                   \
  do {                                                                             \
    ARGUS_BEGIN_AT(name, r);                                                       \
    long long t0 = clock64(), t1;                                                  \
    do {                                                                           \
      t1 = clock64();                                                              \
    } while (t1 - t0 < (cycles));                                                  \
    long long t2 = clock64();                                                      \
    ARGUS_END(name);                                                               \
    if (lane == 0)                                                                 \
      truth[((size_t)warp * 3 + (slot)) * reps + r] = (unsigned long long)(t2 - t0); \
  } while (0)

extern "C" __global__ void spin(unsigned long long *truth, int reps, int fault, int forever) {
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned warp = tid / 32, lane = tid % 32;
  if (forever)
    for (;;)
      asm volatile("nanosleep.u32 1000;");
  if (fault && tid == 0)
    *(volatile int *)(unsigned long long)16 = 1;
#pragma unroll 1
  for (int r = 0; r < reps; r++) {
    SPIN(spin1k, 1000, 0);
    SPIN(spin10k, 10000, 1);
    SPIN(spin100k, 100000, 2);
  }
}
