/*
 * test_gpu_tile_wgmma.c — examples/tile/wgmma_gemm.tile (cp.async stages)
 * and examples/tile/tma_gemm.tile (TMA loads through a 4-stage mbarrier
 * ring, TMA stores of C; tma_ws_gemm.tile, its warp-specialized form) on the GPU (argus run, docs/run.md): at 512^3
 * against C = A B^T in double on the CPU, at a toy size against the value
 * interpreter, and at 4096^3 against cuBLAS. Exit 77 without a GPU.
 */
#include "argus/tile_run.h"
#include "check.h"
#include "../trace/gpu_util.h"
#include "tile_gpu.h"

static void wg_case_of(const char *file, const char *spec, ag_tile_ref ref,
                       const char *want_ref) {
  tile_gpu_case("test_gpu_tile_wgmma", file, spec, ref, want_ref);
}

static void wg_case(const char *spec, ag_tile_ref ref, const char *want_ref) {
  wg_case_of("wgmma_gemm.tile", spec, ref, want_ref);
}

TEST(test_wgmma_512) { wg_case("M=512,N=512,K=512", AG_TILE_REF_CPU, "cpu"); }
TEST(test_wgmma_toy_interp) { wg_case("M=64,N=128,K=128", AG_TILE_REF_INTERP, "interp"); }
TEST(test_wgmma_4096) { wg_case("M=4096,N=4096,K=4096", AG_TILE_REF_CUBLAS, "cublas"); }

/* tma_gemm.tile: K is a const parameter (512 unless set) */
TEST(test_tma_512) { wg_case_of("tma_gemm.tile", "M=512,N=512,K=512", AG_TILE_REF_CPU, "cpu"); }
TEST(test_tma_toy_interp) {
  wg_case_of("tma_gemm.tile", "M=64,N=128,K=256", AG_TILE_REF_INTERP, "interp");
}
TEST(test_tma_4096) {
  wg_case_of("tma_gemm.tile", "M=4096,N=4096,K=4096", AG_TILE_REF_CUBLAS, "cublas");
}

/* tma_ws_gemm.tile: tma_gemm warp-specialized (kb warp-specialize) */
TEST(test_tma_ws_512) {
  wg_case_of("tma_ws_gemm.tile", "M=512,N=512,K=512", AG_TILE_REF_CPU, "cpu");
}
TEST(test_tma_ws_4096) {
  wg_case_of("tma_ws_gemm.tile", "M=4096,N=4096,K=4096", AG_TILE_REF_CUBLAS, "cublas");
}

RUN_TESTS({"test_wgmma_512", test_wgmma_512}, {"test_wgmma_toy_interp", test_wgmma_toy_interp},
          {"test_wgmma_4096", test_wgmma_4096}, {"test_tma_512", test_tma_512},
          {"test_tma_toy_interp", test_tma_toy_interp}, {"test_tma_4096", test_tma_4096},
          {"test_tma_ws_512", test_tma_ws_512}, {"test_tma_ws_4096", test_tma_ws_4096})
