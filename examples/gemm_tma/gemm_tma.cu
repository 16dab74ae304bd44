/*
 * gemm_tma.cu - a Hopper (sm_90a) GEMM with regions: C = A * B^T, A (M x K)
 * and B (N x K) half precision with K contiguous, C (M x N) float.
 *
 * One CTA computes a 64 x 128 tile of C with two warpgroups:
 *   warpgroup 0 (role producer): one thread issues TMA loads of the A and B
 *     tiles (cp.async.bulk.tensor, 128-byte swizzle) into a 3-stage shared
 *     memory ring; full_bar[s] signals a filled stage (expect_tx + complete_tx),
 *     empty_bar[s] a stage the consumers are done with;
 *   warpgroup 1 (role consumer): waits on full_bar[s], runs four
 *     wgmma.mma_async m64n128k16 per stage, waits for them, releases the stage,
 *     and finally writes its accumulators (the epilogue).
 * Regions: mainloop (both roles), loads (producer, per k-tile), mma (consumer,
 * per k-tile), epilogue. Requires M % 64 == 0, N % 128 == 0, K % 64 == 0.
 */
#include <cuda.h>
#include <stdint.h>

#include "argus/region.cuh"
#include "../common/hopper.cuh"

#define BM 64
#define BN 128
#define BK 64
#define STAGES 3
#define A_TILE_BYTES (BM * BK * 2)
#define B_TILE_BYTES (BN * BK * 2)

__shared__ alignas(8) uint64_t full_bar[STAGES];
__shared__ alignas(8) uint64_t empty_bar[STAGES];

extern "C" __global__ void __launch_bounds__(256)
    gemm_tma(const __grid_constant__ CUtensorMap tma_a, const __grid_constant__ CUtensorMap tma_b,
             float *C, int M, int N, int K) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  /* 128-byte swizzle needs 1024-byte aligned tiles */
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
      for (int kt = 0; kt < ktiles; kt++) {
        ARGUS_BEGIN_AT(loads, kt);
        int s = kt % STAGES;
        if (kt >= STAGES)
          mbar_wait(&empty_bar[s], ((kt / STAGES) - 1) & 1);
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
    for (int kt = 0; kt < ktiles; kt++) {
      ARGUS_BEGIN_AT(mma, kt);
      int s = kt % STAGES;
      mbar_wait(&full_bar[s], (kt / STAGES) & 1);
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
      uint64_t da = smem_desc(sA + s * A_TILE_BYTES);
      uint64_t db = smem_desc(sB + s * B_TILE_BYTES);
#pragma unroll
      for (int kk = 0; kk < BK / 16; kk++) /* 16 halves = 32 bytes = 2 in desc units */
        wgmma_m64n128k16(d, da + 2 * kk, db + 2 * kk);
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
      mbar_arrive(&empty_bar[s]);
      ARGUS_END(mma);
    }
    ARGUS_END(mainloop);

    ARGUS_BEGIN(epilogue);
    /* accumulator layout of m64nNk16: thread t holds rows w*16 + l/4 (+8),
     * columns 8*g + 2*(l%4) (+1) for g = 0..N/8-1 */
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
