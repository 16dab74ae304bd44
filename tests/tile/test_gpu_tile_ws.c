/*
 * test_gpu_tile_ws.c — examples/tile/ws_gemm.tile (warp-specialized,
 * persistent: a producer warpgroup with cp.async + mbarrier arrivals, a
 * consumer warpgroup with wgmma, setmaxnreg) on the GPU (argus run,
 * docs/run.md): at 512^3 against C = A B^T in double on the CPU (32 blocks
 * of two tiles each), at the file's toy size against the value interpreter
 * (the roles run as cooperating tasks there), and at 4096^3 against cuBLAS
 * on 132 persistent blocks (uneven: 31 or 32 tiles each); and
 * examples/tile/gemm_hopper.tile (TMA producer, two wgmma.m64n256k16 consumer
 * warpgroups, one group in flight) and its bf16-out twin gemm_hopper_bf16.tile
 * at 512^3 against the CPU (3 blocks over 8 tiles, groups of 2 block rows)
 * and 4096^3 against cuBLAS (groups of 8).
 * Exit 77 without a GPU.
 */
#include "argus/tile_run.h"
#include "check.h"
#include "../trace/gpu_util.h"
#include "tile_gpu.h"

static void ws_case(const char *spec, ag_tile_ref ref, const char *want_ref) {
  tile_gpu_case("test_gpu_tile_ws", "ws_gemm.tile", spec, ref, want_ref);
}

TEST(test_ws_512) { ws_case("MT=8,NT=8,K=512,NB=32", AG_TILE_REF_CPU, "cpu"); }
TEST(test_ws_toy_interp) { ws_case("MT=2,NT=4,K=256,NB=4", AG_TILE_REF_INTERP, "interp"); }
TEST(test_ws_4096) { ws_case("MT=64,NT=64,K=4096,NB=132", AG_TILE_REF_CUBLAS, "cublas"); }

static void hopper_case(const char *file, const char *spec, ag_tile_ref ref, const char *want) {
  tile_gpu_case("test_gpu_tile_ws", file, spec, ref, want);
}

TEST(test_hopper_512) {
  hopper_case("gemm_hopper.tile", "MT=4,NT=2,K=512,NB=3,GM=2", AG_TILE_REF_CPU, "cpu");
  hopper_case("gemm_hopper_bf16.tile", "MT=4,NT=2,K=512,NB=3,GM=2", AG_TILE_REF_CPU, "cpu");
}
TEST(test_hopper_4096) {
  hopper_case("gemm_hopper.tile", "MT=32,NT=16,K=4096,NB=132,GM=8", AG_TILE_REF_CUBLAS, "cublas");
  hopper_case("gemm_hopper_bf16.tile", "MT=32,NT=16,K=4096,NB=132,GM=8", AG_TILE_REF_CUBLAS, "cublas");
}

RUN_TESTS({"test_ws_512", test_ws_512}, {"test_ws_toy_interp", test_ws_toy_interp},
          {"test_ws_4096", test_ws_4096}, {"test_hopper_512", test_hopper_512},
          {"test_hopper_4096", test_hopper_4096})
