/*
 * tma_probe.cu - the multi-run workload of the async-latency probes
 * (docs/probes.md; the paper's Fig. 14c): an FP16 TMA matmul, C = A * B^T
 * with A (M x K) and B (N x K) half precision, K contiguous, C (M x N) float,
 * a TMA_PROBE_STAGES-deep shared-memory pipeline (default 3) and a K loop of
 * K / 64 iterations with two TMA loads each. With K = 512 the loop runs 8
 * iterations: 2 load sites x 8 iterations = 16 probe candidates.
 *
 * One CTA computes a 64 x 128 tile of C with two warpgroups:
 *   warpgroup 0 (role producer): thread 0 waits until stage s is free
 *     (empty_bar[s]), announces the bytes (expect_tx) and issues the A and B
 *     loads against full_bar[s];
 *   warpgroup 1 (role consumer): waits for full_bar[s], runs four
 *     wgmma.mma_async m64n128k16, waits for them, frees the stage, and
 *     finally writes its accumulators.
 * Unlike examples/gemm_tma, the producer's first STAGES waits are not a
 * branch: a fresh barrier's "preceding phase" (parity 1) counts as
 * complete, so waiting for parity ((kt / STAGES) + 1) & 1 passes at once
 * for kt < STAGES (the CUTLASS convention). Both loops are kept rolled
 * (`#pragma unroll 1`), so each load is one PTX site whose iteration is the
 * `loads` region's ARGUS_BEGIN_AT operand.
 *
 * Built with -DTMA_PROBE_STAGES=1 it has no prefetch distance: the producer
 * issues iteration kt only after the consumer has released kt - 1, so the
 * consumer waits for every load in full (the probes' ground truth). Built
 * with -DTMA_PROBE_SPIN=N the consumer also spends N cycles on other work
 * after it releases each stage: with 3 stages, each load is then issued at
 * least 2 x N cycles before it is needed (the deep-pipeline ground truth:
 * nothing left to wait for).
 * Requires M % 64 == 0, N % 128 == 0, K % 64 == 0.
 */
#include <cuda.h>
#include <stdint.h>

#include "argus/region.cuh"
#include "../common/hopper.cuh"

#ifndef TMA_PROBE_STAGES
#define TMA_PROBE_STAGES 3
#endif
#define STAGES TMA_PROBE_STAGES
#ifndef TMA_PROBE_SPIN
#define TMA_PROBE_SPIN 0
#endif
#define BM 64
#define BN 128
#define BK 64
#define A_TILE_BYTES (BM * BK * 2)
#define B_TILE_BYTES (BN * BK * 2)

__shared__ alignas(8) uint64_t full_bar[STAGES];
__shared__ alignas(8) uint64_t empty_bar[STAGES];

extern "C" __global__ void __launch_bounds__(256)
    tma_probe(const __grid_constant__ CUtensorMap tma_a, const __grid_constant__ CUtensorMap tma_b,
              float *C, int M, int N, int K) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char *smem =
      (unsigned char *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
  unsigned char *sA = smem;
  unsigned char *sB = smem + STAGES * A_TILE_BYTES;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int ktiles = K / BK;
  const int wg = threadIdx.x / 128, t = threadIdx.x % 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; s++) {
      mbar_init(&full_bar[s], 1);
      mbar_init(&empty_bar[s], 128);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();

  if (wg == 0) {
    ARGUS_ROLE(producer);
    if (t == 0) {
      ARGUS_BEGIN(mainloop);
#pragma unroll 1
      for (int kt = 0; kt < ktiles; kt++) {
        ARGUS_BEGIN_AT(loads, kt);
        int s = kt % STAGES;
        mbar_wait(&empty_bar[s], ((kt / STAGES) + 1) & 1);
        mbar_expect_tx(&full_bar[s], A_TILE_BYTES + B_TILE_BYTES);
        tma_load_2d(sA + s * A_TILE_BYTES, &tma_a, &full_bar[s], kt * BK, m0);
        tma_load_2d(sB + s * B_TILE_BYTES, &tma_b, &full_bar[s], kt * BK, n0);
        ARGUS_END(loads);
      }
      ARGUS_END(mainloop);
    }
  } else {
    ARGUS_ROLE(consumer);
    float d[64];
#pragma unroll
    for (int i = 0; i < 64; i++)
      d[i] = 0.f;
    ARGUS_BEGIN(mainloop);
#pragma unroll 1
    for (int kt = 0; kt < ktiles; kt++) {
      ARGUS_BEGIN_AT(mma, kt);
      int s = kt % STAGES;
      mbar_wait(&full_bar[s], (kt / STAGES) & 1);
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
      uint64_t da = smem_desc(sA + s * A_TILE_BYTES);
      uint64_t db = smem_desc(sB + s * B_TILE_BYTES);
#pragma unroll
      for (int kk = 0; kk < BK / 16; kk++)
        wgmma_m64n128k16(d, da + 2 * kk, db + 2 * kk);
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
      mbar_arrive(&empty_bar[s]);
      if (TMA_PROBE_SPIN) { /* other work, after the stage is free again */
        long long t0 = clock64();
        while (clock64() - t0 < TMA_PROBE_SPIN)
          ;
      }
      ARGUS_END(mma);
    }
    ARGUS_END(mainloop);

    ARGUS_BEGIN(epilogue);
    const int w = t / 32, l = t % 32;
    const int r0 = m0 + w * 16 + l / 4;
#pragma unroll
    for (int g = 0; g < BN / 8; g++) {
      int c = n0 + 8 * g + 2 * (l % 4);
      C[(size_t)r0 * N + c] = d[4 * g + 0];
      C[(size_t)r0 * N + c + 1] = d[4 * g + 1];
      C[(size_t)(r0 + 8) * N + c] = d[4 * g + 2];
      C[(size_t)(r0 + 8) * N + c + 1] = d[4 * g + 3];
    }
    ARGUS_END(epilogue);
  }
  (void)M;
}
