/*
 * test_gpu_tile_tma.c — examples/tile/tma_gemm.tile on the GPU (argus run,
 * docs/run.md): TMA loads through a 4-stage mbarrier ring into wgmma, TMA
 * stores of C; at 512^3 against C = A B^T in double on the CPU, at a toy size
 * against the value interpreter, and at 4096^3 against cuBLAS. Exit 77
 * without a GPU.
 */
#include "argus/tile_run.h"
#include "check.h"
#include "../trace/gpu_util.h"

static void tma_case(const char *spec, ag_tile_ref ref, const char *want_ref) {
  gpu_or_skip("test_gpu_tile_tma");
  char path[1024];
  const char *s = getenv("ARGUS_SOURCE_DIR");
  snprintf(path, sizeof path, "%s/examples/tile/tma_gemm.tile", s ? s : ".");
  ag_tile_exec_opts o;
  memset(&o, 0, sizeof o);
  o.ref = ref;
  ag_tile_exec_result r;
  int rc = ag_tile_run_file(path, spec, &o, NULL, &r, NULL, NULL);
  if (rc)
    printf("  %s: %s: %s\n", spec, ag_strerror(rc), r.err);
  CHECK_EQ_INT(rc, 0);
  CHECK(r.ref_used && !strcmp(r.ref_used, want_ref));
  CHECK(r.nelems > 0);
  CHECK_EQ_U64(r.nbad, 0);
  printf("  tma_gemm.tile %s vs %s: %llu elements, %llu differ, max error %.3g\n", spec,
         want_ref, (unsigned long long)r.nelems, (unsigned long long)r.nbad, r.max_err);
}

TEST(test_tma_512) { tma_case("M=512,N=512,K=512", AG_TILE_REF_CPU, "cpu"); }
TEST(test_tma_toy_interp) { tma_case("M=64,N=128,K=256", AG_TILE_REF_INTERP, "interp"); }
TEST(test_tma_4096) { tma_case("M=4096,N=4096,K=4096", AG_TILE_REF_CUBLAS, "cublas"); }

RUN_TESTS({"test_tma_512", test_tma_512}, {"test_tma_toy_interp", test_tma_toy_interp},
          {"test_tma_4096", test_tma_4096})
