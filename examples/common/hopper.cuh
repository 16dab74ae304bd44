/*
 * hopper.cuh - device helpers shared by the Hopper examples (gemm_tma,
 * tma_probe): mbarrier operations, a 2-D TMA load, the wgmma shared-memory
 * descriptor for 128-byte-swizzled K-major tiles, and wgmma m64n128k16 with
 * FP32 accumulators. Each is one inline-asm statement, as a kernel author
 * writes them.
 */
#ifndef ARGUS_EXAMPLES_HOPPER_CUH
#define ARGUS_EXAMPLES_HOPPER_CUH

#include <cuda.h>
#include <stdint.h>

__device__ static inline uint32_t smem_addr(const void *p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}

__device__ static inline void mbar_init(uint64_t *bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count));
}

__device__ static inline void mbar_expect_tx(uint64_t *bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)),
               "r"(bytes)
               : "memory");
}

__device__ static inline void mbar_arrive(uint64_t *bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}

/* Spins until the barrier's phase with the given parity has completed. */
__device__ static inline void mbar_wait(uint64_t *bar, unsigned parity) {
  asm volatile("{\n"
               ".reg .pred done;\n"
               "wait_again:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
               "@!done bra wait_again;\n"
               "}\n" ::"r"(smem_addr(bar)),
               "r"(parity)
               : "memory");
}

__device__ static inline void tma_load_2d(void *dst, const CUtensorMap *map, uint64_t *bar,
                                          int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_addr(dst)),
               "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(smem_addr(bar))
               : "memory");
}

/* wgmma shared-memory descriptor for a K-major tile with 128-byte swizzle:
 * start address >> 4, leading byte offset 16 (unused), stride byte offset
 * 1024 (8 rows of 128 bytes), layout type 1 (SWIZZLE_128B). */
__device__ static inline uint64_t smem_desc(const void *p) {
  uint64_t a = smem_addr(p);
  return ((a & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

#define F8(b) "+f"(d[b]), "+f"(d[b + 1]), "+f"(d[b + 2]), "+f"(d[b + 3]), \
    "+f"(d[b + 4]), "+f"(d[b + 5]), "+f"(d[b + 6]), "+f"(d[b + 7])

__device__ static inline void wgmma_m64n128k16(float d[64], uint64_t da, uint64_t db) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p, 1, 1, 0, 0;\n"
      "}\n"
      : F8(0), F8(8), F8(16), F8(24), F8(32), F8(40), F8(48), F8(56)
      : "l"(da), "l"(db), "r"(1));
}

#endif
