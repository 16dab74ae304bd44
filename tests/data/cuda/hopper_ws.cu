/*
 * hopper_ws.cu — a warp-specialized Hopper kernel written for Argus's build
 * fidelity test (tests/ptx/test_build_fidelity.c): one producer warpgroup
 * streams tiles of X into a STAGES-deep ring in dynamic shared memory with
 * bulk copies (cp.async.bulk, the 1-D TMA) completing on mbarriers; two
 * consumer warpgroups reduce each tile with FMAs and hand the slot back.
 * The producer gives registers away and the consumers take them
 * (setmaxnreg, sm_90a only); the ring is 1024-byte aligned dynamic shared
 * memory (the alignment TMA needs), far above the 48 KB static limit. How
 * the PTX is compiled decides whether setmaxnreg is kept and how the
 * dynamic shared memory is placed. Compiled only (never run) by the tests.
 */
#include "argus/region.cuh"

#define STAGES 4
#define TILE_FLOATS 8192 /* 32 KB per stage: 128 KB of ring */
#define THREADS 384

__device__ __forceinline__ unsigned smem_addr(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void mbar_init(unsigned long long *bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count));
}

__device__ __forceinline__ void mbar_expect_tx(unsigned long long *bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)),
               "r"(bytes));
}

__device__ __forceinline__ void mbar_arrive(unsigned long long *bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)));
}

__device__ __forceinline__ void mbar_wait(unsigned long long *bar, unsigned phase) {
  asm volatile("{\n .reg .pred p;\n"
               "W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
               " @!p bra W;\n}" ::"r"(smem_addr(bar)),
               "r"(phase));
}

__device__ __forceinline__ void bulk_load(float *dst, const float *src, unsigned bytes,
                                          unsigned long long *bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
               "[%0], [%1], %2, [%3];" ::"r"(smem_addr(dst)),
               "l"(src), "r"(bytes), "r"(smem_addr(bar))
               : "memory");
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    hopper_ws(const float *__restrict__ x, float *__restrict__ out, int ntiles, float scale) {
  extern __shared__ __align__(1024) float ring[]; /* STAGES * TILE_FLOATS */
  __shared__ unsigned long long full[STAGES], empty[STAGES];
  __shared__ float partial[THREADS];
  const int wg = threadIdx.x / 128;
  if (threadIdx.x == 0)
    for (int s = 0; s < STAGES; s++) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], 256);
    }
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  __syncthreads();
  float acc[16] = {0.f};
  if (wg == 0) {
    ARGUS_ROLE(producer);
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    if (threadIdx.x == 0) {
      for (int t = 0; t < ntiles; t++) {
        ARGUS_BEGIN_AT(load, t);
        int s = t % STAGES;
        if (t >= STAGES)
          mbar_wait(&empty[s], ((t / STAGES) - 1) & 1);
        mbar_expect_tx(&full[s], TILE_FLOATS * 4);
        bulk_load(ring + s * TILE_FLOATS,
                  x + ((size_t)blockIdx.x * ntiles + t) * TILE_FLOATS, TILE_FLOATS * 4,
                  &full[s]);
        ARGUS_END(load);
      }
    }
  } else {
    ARGUS_ROLE(consumer);
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int c = threadIdx.x - 128;
    for (int t = 0; t < ntiles; t++) {
      int s = t % STAGES;
      ARGUS_BEGIN_AT(wait, t);
      mbar_wait(&full[s], (t / STAGES) & 1);
      ARGUS_END(wait);
      ARGUS_BEGIN_AT(reduce, t);
      const float4 *tile = reinterpret_cast<const float4 *>(ring + s * TILE_FLOATS);
#pragma unroll
      for (int i = 0; i < TILE_FLOATS / 4 / 256; i++) {
        float4 v = tile[i * 256 + c];
        acc[(i * 4 + 0) % 16] = fmaf(v.x, scale, acc[(i * 4 + 0) % 16]);
        acc[(i * 4 + 1) % 16] = fmaf(v.y, scale, acc[(i * 4 + 1) % 16]);
        acc[(i * 4 + 2) % 16] = fmaf(v.z, acc[(i * 4 + 2) % 16], v.w);
        acc[(i * 4 + 3) % 16] = fmaf(v.w, v.x, acc[(i * 4 + 3) % 16]);
      }
      mbar_arrive(&empty[s]);
      ARGUS_END(reduce);
    }
  }
  float sum = 0.f;
#pragma unroll
  for (int i = 0; i < 16; i++)
    sum += acc[i];
  partial[threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.x < 32) {
    float v = 0.f;
    for (int i = threadIdx.x; i < THREADS; i += 32)
      v += partial[i];
    for (int o = 16; o; o >>= 1)
      v += __shfl_down_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0)
      out[blockIdx.x] = v;
  }
}
