/*
 * test_tile_attnh.c — examples/tile/attention_hopper.tile (FA3-style
 * attention: TMA K/V ring, producer and consumer warpgroups, wgmma with P
 * in registers and V^T MN-major) and attention_hopper_pipe.tile (its
 * softmax overlapped with P V) on the CPU: each checks clean at head dims
 * 64 and 128, causal and not, at skv = 512 (four key tiles: the ring of
 * two stages is refilled; causal: the key loop is summarized, its trip
 * count depending on the block) — the pipelined one non-causal only,
 * lowers, and compiles for sm_90a (NVRTC + ptxas, skipped without them);
 * the lowered P V wgmma takes A from registers and B transposed; the
 * planted bugs (examples/tile/bugs/attnh-*.mut) are refuted with the
 * thread, the line and the reason; shfl_xor is accepted under an 'if' that
 * keeps warps whole and refused, naming two threads, under one that splits
 * a warp. The value interpreter's runs are in test_tile_interp; the GPU's
 * in test_gpu_tile_run (test_attention_hopper).
 */
#include "argus/tile_run.h"
#include "check.h"

#include "../../src/tile/run/run_int.h"
#define TILE_PIPE_FILE "attention_hopper.tile"
#include "tile_pipe.h"

/* The example's text with its const defaults replaced (skv, d, causal). */
static char *variant(const char *file, int skv, int d, int causal) {
  char path[96];
  snprintf(path, sizeof path, "examples/tile/%s", file);
  char *src = tu_read(path, NULL);
  CHECK(src != NULL);
  if (!src)
    return NULL;
  const char *from = "d: const = 64, gqa: const = 4, skv: const = 256, causal: const = 0";
  char to[128];
  snprintf(to, sizeof to, "d: const = %d, gqa: const = 4, skv: const = %d, causal: const = %d", d,
           skv, causal);
  char *p = strstr(src, from);
  CHECK(p != NULL);
  if (!p) {
    free(src);
    return NULL;
  }
  size_t n = strlen(src) + strlen(to) + 1;
  char *s = malloc(n);
  snprintf(s, n, "%.*s%s%s", (int)(p - src), src, to, p + strlen(from));
  free(src);
  return s;
}

/* checks clean, lowers, compiles; the lowered code holds what we expect */
static void example(const char *file, int skv, int d, int causal, int compile) {
  char *s = variant(file, skv, d, causal);
  ag_tile_program *p = s ? checked(s) : NULL;
  CHECK(p != NULL);
  ag_tile_lowered *l = p ? lowered(p) : NULL;
  CHECK(l != NULL);
  if (l) {
    /* P V: A from four registers, B through a descriptor, transposed (MN-major V^T) */
    CHECK_CONTAINS(l->cuda, "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {");
    CHECK_CONTAINS(l->cuda, "p, 1, 1, 1;");
    /* S = Q K^T: both operands through descriptors, neither transposed */
    CHECK_CONTAINS(l->cuda, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {");
    CHECK_CONTAINS(l->cuda, "p, 1, 1, 0, 0;");
    CHECK_CONTAINS(l->cuda, "setmaxnreg.dec.sync.aligned.u32 40;");
    CHECK_CONTAINS(l->cuda, "__shfl_xor_sync(0xffffffffu");
    if (compile) {
      int rc = pipe_compiles(l);
      CHECK(rc != 0);
      printf("  %s d=%d causal=%d skv=%d: checks, lowers%s\n", file, d, causal, skv,
             rc > 0 ? ", assembles for sm_90a" : " (no NVRTC/ptxas: not compiled)");
    }
  }
  ag_tile_lowered_free(l);
  ag_tile_program_free(p);
  free(s);
}

TEST(test_example) {
  for (int c = 0; c < 4; c++)
    example("attention_hopper.tile", 512, c % 2 ? 128 : 64, c / 2, c == 0 || c == 3);
}

/* the key loop at skv = 4096 (32 tiles; it waits on full and issues
 * wgmma; the producer's waits and issues TMA loads) stays a loop in the CUDA C (docs/lower.md: unrolled it spilled);
 * its short inner loops unroll */
TEST(test_pipeline_loop_kept) {
  char *s = variant("attention_hopper.tile", 4096, 64, 0);
  ag_diags d;
  ag_diags_init(&d);
  ag_tile_program *p = NULL;
  ag_tile_lowered *l = NULL;
  CHECK_EQ_INT(s ? ag_tile_parse(s, strlen(s), "a.tile", &d, &p) : -1, 0);
  if (p) {
    l = lowered(p);
    CHECK(l != NULL);
  }
  if (l) {
    /* the producer's (TMA loads) and the consumer's (wgmma) */
    CHECK_CONTAINS(l->cuda, "#pragma unroll 1\n    for (unsigned kt = 0u; kt < 32u; kt += 1u) {");
    CHECK_CONTAINS(l->cuda, "#pragma unroll 1\n    for (unsigned kt_2 = 0u; kt_2 < 32u; kt_2 += 1u) {");
    CHECK_CONTAINS(l->cuda, "#pragma unroll\n      for (unsigned kk = 0u; kk < 4u; kk += 1u) {");
  }
  ag_tile_lowered_free(l);
  ag_tile_program_free(p);
  ag_diags_release(&d);
  free(s);
}

TEST(test_pipe_example) {
  example("attention_hopper_pipe.tile", 512, 64, 0, 1);
  example("attention_hopper_pipe.tile", 512, 128, 0, 0);
}

static void bug(const char *name, const char *at, int64_t thread, const char *why) {
  char *s = tu_mutate(name);
  CHECK(s != NULL);
  if (!s)
    return;
  /* four key tiles: the ring of two stages is refilled */
  const char *from = "skv: const = 256";
  char *p = strstr(s, from);
  CHECK(p != NULL);
  if (p)
    memcpy(p, "skv: const = 512", strlen(from));
  tu_refuted(name, s, at, (tu_refute){why, thread, NULL, NULL, NULL});
  free(s);
}

TEST(test_planted_bugs) {
  /* the softmax reads S before the wgmma_wait that retires its group */
  bug("attnh-nowait", "rs[nt, v] = exp2(rs[nt, v] * sl2 - ms[v / 2])", 128,
      "an accumulator of the wgmma at line");
  /* P V on the next tile's V stage: the producer refills it meanwhile */
  bug("attnh-vstage", "tma_load(tmV, kt * Bc, hk, hh * 64, sV[s, hh, :, :], full[s])", -1,
      "write-after-read race");
  /* P's registers from the wrong n8 tile: keys 8..15 where the .a atom wants 0..7 */
  bug("attnh-pfrag", "assert tag(fp[kk, e])", 128, "the tags differ");
  /* the wrong parity on full: K is read before its box lands */
  bug("attnh-parity", "tma_load(tmK, kt * Bc, hk, hh * 64, sK[s, hh, :, :], full[s])", -1,
      "read-after-write race");
}

/* shfl_xor under a role: whole warps (warps 0-1 of 64 threads) check; a
 * branch that splits warp 0 is refused naming two of its threads */
TEST(test_shfl_whole_warps) {
  const char *ok = "@threads(64)\n"
                   "def k(X: Tensor(64, f32)):\n"
                   "    t = threadIdx.x\n"
                   "    if t / 32 == 1:\n"
                   "        X[t] = shfl_xor(X[t], 1)\n";
  ag_diags d;
  ag_diags_init(&d);
  int rc;
  ag_tile_report *r = tu_check(ok, "t.tile", &d, &rc, NULL);
  CHECK_EQ_INT(rc, 0);
  CHECK(r && ag_tile_report_ok(r));
  ag_tile_report_free(r);
  ag_diags_release(&d);
  tu_expect_error("@threads(64)\n"
                  "def k(X: Tensor(64, f32)):\n"
                  "    t = threadIdx.x\n"
                  "    if t / 16 == 1:\n"
                  "        X[t] = shfl_xor(X[t], 1)\n",
                  5, 16,
                  "shfl_xor inside a thread-dependent 'if' that does not take whole warps: "
                  "thread 0 does not run it and thread 16 of the same warp 0 does");
}

RUN_TESTS({"test_example", test_example}, {"test_pipe_example", test_pipe_example},
          {"test_pipeline_loop_kept", test_pipeline_loop_kept},
          {"test_planted_bugs", test_planted_bugs}, {"test_shfl_whole_warps", test_shfl_whole_warps})
