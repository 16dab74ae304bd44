/*
 * async_truth.cu — ground-truth kernels for async probes and waits of every
 * shape (issue 27, docs/probes.md), written for Argus. Each kernel streams
 * tiles of x through a 2-stage ring of shared memory with bulk copies
 * (cp.async.bulk, the 1-D TMA) completing on mbarriers; thread 0 of warp 0
 * produces, warps 1..3 consume (sum the tile into out). What differs is the
 * shape of the waits and of the producer loop:
 *
 *   wait_shapes   the producer's empty wait is CUTLASS's two-block loop in a
 *                 { } scope (try_wait; @P bra DONE; bra WAIT), the
 *                 consumers' full wait a one-block loop with a suspend-time
 *                 hint; the consumer's nested region 'sum' has no iteration
 *                 of its own (it inherits 'use[t]'s);
 *   unroll4       the producer loop unrolled x4 by nvcc over a run-time trip
 *                 count: 4 copies in the loop (copy j runs at t = 4m + j)
 *                 and 3 remainder copies after it;
 *   untimed_wait  the consumers' wait loop also counts its spins: not a pure
 *                 spin loop, so its exposed wait cannot be timed (a missing
 *                 entry with the reason).
 *
 * Result (every kernel): out[blockIdx.x] = sum of the block's ntiles tiles.
 */
#include "argus/region.cuh"
#include "../../../examples/common/hopper.cuh" /* smem_addr, mbar_init/expect_tx/arrive */

#define TILE 1024 /* floats per tile: 4 KB */
#define STAGES 2
#define THREADS 128

/* two blocks in a scope: CUTLASS's ClusterBarrier::wait */
__device__ __forceinline__ void wait_two_block(uint64_t *bar, unsigned phase) {
  asm volatile("{\n.reg .pred P1;\nLAB_WAIT:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
               "@P1 bra.uni DONE;\nbra.uni LAB_WAIT;\nDONE:\n}" ::"r"(smem_addr(bar)),
               "r"(phase));
}

/* one block with a suspend-time hint (ns) */
__device__ __forceinline__ void wait_hint(uint64_t *bar, unsigned phase) {
  asm volatile("{\n.reg .pred p;\nW:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1, %2;\n"
               "@!p bra W;\n}" ::"r"(smem_addr(bar)),
               "r"(phase), "r"(1000000));
}

/* spins counted: the loop does more than wait */
__device__ __forceinline__ unsigned wait_counted(uint64_t *bar, unsigned phase) {
  unsigned n;
  asm volatile("{\n.reg .pred p;\nmov.u32 %0, 0;\nW:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
               "@p bra D;\nadd.u32 %0, %0, 1;\nbra W;\nD:\n}"
               : "=r"(n)
               : "r"(smem_addr(bar)), "r"(phase));
  return n;
}

__device__ __forceinline__ void bulk_load(float *dst, const float *src, unsigned bytes,
                                          uint64_t *bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
               "[%0], [%1], %2, [%3];" ::"r"(smem_addr(dst)),
               "l"(src), "r"(bytes), "r"(smem_addr(bar))
               : "memory");
}

#define RING_SETUP()                                                                    \
  __shared__ __align__(128) float ring[STAGES * TILE];                                  \
  __shared__ uint64_t full[STAGES], empty[STAGES];                            \
  __shared__ float partial[THREADS];                                                    \
  if (threadIdx.x == 0)                                                                 \
    for (int s = 0; s < STAGES; s++) {                                                  \
      mbar_init(&full[s], 1);                                                           \
      mbar_init(&empty[s], THREADS - 32);                                               \
    }                                                                                   \
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");                  \
  __syncthreads();                                                                      \
  float acc = 0.f

#define PRODUCE(t, WAIT)                                                                \
  do {                                                                                  \
    int s_ = (t) % STAGES;                                                              \
    if ((t) >= STAGES)                                                                  \
      WAIT(&empty[s_], (((t) / STAGES) - 1) & 1);                                       \
    mbar_expect_tx(&full[s_], TILE * 4);                                                \
    bulk_load(ring + s_ * TILE, x + ((size_t)blockIdx.x * ntiles + (t)) * TILE, TILE * 4, \
              &full[s_]);                                                               \
  } while (0)

#define CONSUME_SUM(t)                                                                  \
  do {                                                                                  \
    const float *tile_ = ring + ((t) % STAGES) * TILE;                                  \
    for (int i = threadIdx.x - 32; i < TILE; i += THREADS - 32)                         \
      acc += tile_[i];                                                                  \
    mbar_arrive(&empty[(t) % STAGES]);                                                  \
  } while (0)

#define FINISH()                                                                        \
  partial[threadIdx.x] = acc;                                                           \
  __syncthreads();                                                                      \
  if (threadIdx.x == 0) {                                                               \
    float v = 0.f;                                                                      \
    for (int i = 0; i < THREADS; i++)                                                   \
      v += partial[i];                                                                  \
    out[blockIdx.x] = v;                                                                \
  }

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    wait_shapes(const float *__restrict__ x, float *__restrict__ out, int ntiles) {
  RING_SETUP();
  if (threadIdx.x < 32) {
    if (threadIdx.x == 0) {
#pragma unroll 1
      for (int t = 0; t < ntiles; t++) {
        ARGUS_BEGIN_AT(load, t);
        PRODUCE(t, wait_two_block);
        ARGUS_END(load);
      }
    }
  } else {
#pragma unroll 1
    for (int t = 0; t < ntiles; t++) {
      ARGUS_BEGIN_AT(use, t);
      wait_hint(&full[t % STAGES], (t / STAGES) & 1);
      ARGUS_BEGIN(sum);
      CONSUME_SUM(t);
      ARGUS_END(sum);
      ARGUS_END(use);
    }
  }
  FINISH();
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    unroll4(const float *__restrict__ x, float *__restrict__ out, int ntiles) {
  RING_SETUP();
  if (threadIdx.x < 32) {
    if (threadIdx.x == 0) {
#pragma unroll 4
      for (int t = 0; t < ntiles; t++) {
        ARGUS_BEGIN_AT(load, t);
        PRODUCE(t, wait_two_block);
        ARGUS_END(load);
      }
    }
  } else {
#pragma unroll 1
    for (int t = 0; t < ntiles; t++) {
      ARGUS_BEGIN_AT(use, t);
      wait_two_block(&full[t % STAGES], (t / STAGES) & 1);
      CONSUME_SUM(t);
      ARGUS_END(use);
    }
  }
  FINISH();
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    untimed_wait(const float *__restrict__ x, float *__restrict__ out, int ntiles) {
  RING_SETUP();
  unsigned spins = 0;
  if (threadIdx.x < 32) {
    if (threadIdx.x == 0) {
#pragma unroll 1
      for (int t = 0; t < ntiles; t++) {
        ARGUS_BEGIN_AT(load, t);
        PRODUCE(t, wait_two_block);
        ARGUS_END(load);
      }
    }
  } else {
#pragma unroll 1
    for (int t = 0; t < ntiles; t++) {
      ARGUS_BEGIN_AT(use, t);
      spins += wait_counted(&full[t % STAGES], (t / STAGES) & 1);
      CONSUME_SUM(t);
      ARGUS_END(use);
    }
  }
  acc += spins * 0.f;
  FINISH();
}
