/*
 * test_gpu_tile_wgmma.c — examples/tile/wgmma_gemm.tile (cp.async stages)
 * and examples/tile/tma_gemm.tile (TMA loads through a 4-stage mbarrier
 * ring, TMA stores of C) on the GPU (argus run, docs/run.md): at 512^3
 * against C = A B^T in double on the CPU, at a toy size against the value
 * interpreter, and at 4096^3 against cuBLAS. Exit 77 without a GPU.
 */
#include "argus/tile_run.h"
#include "check.h"
#include "../trace/gpu_util.h"

static void wg_case_of(const char *file, const char *spec, ag_tile_ref ref,
                       const char *want_ref) {
  gpu_or_skip("test_gpu_tile_wgmma");
  char path[1024];
  const char *s = getenv("ARGUS_SOURCE_DIR");
  snprintf(path, sizeof path, "%s/examples/tile/%s", s ? s : ".", file);
  ag_tile_exec_opts o;
  memset(&o, 0, sizeof o);
  o.ref = ref;
  ag_tile_exec_result r;
  int rc = ag_tile_run_file(path, spec, &o, NULL, &r, NULL, NULL);
  if (rc)
    printf("  %s %s: %s: %s\n", file, spec, ag_strerror(rc), r.err);
  CHECK_EQ_INT(rc, 0);
  CHECK(r.ref_used && !strcmp(r.ref_used, want_ref));
  CHECK(r.nelems > 0);
  CHECK_EQ_U64(r.nbad, 0);
  printf("  %s %s vs %s: %llu elements, %llu differ, max error %.3g\n", file, spec, want_ref,
         (unsigned long long)r.nelems, (unsigned long long)r.nbad, r.max_err);
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

RUN_TESTS({"test_wgmma_512", test_wgmma_512}, {"test_wgmma_toy_interp", test_wgmma_toy_interp},
          {"test_wgmma_4096", test_wgmma_4096}, {"test_tma_512", test_tma_512},
          {"test_tma_toy_interp", test_tma_toy_interp}, {"test_tma_4096", test_tma_4096})
