/*
 * test_tile_tma.c — TMA tensor copies in the tile DSL (docs/tile-dsl.md,
 * "TMA tensor copies"; docs/check.md, "TMA"): examples/tile/tma_gemm.tile
 * (and tma_ws_gemm.tile, its warp-specialized form) checks clean, lowers to
 * CUDA C whose PTX (NVRTC) assembles for sm_90a (ptxas; skipped without
 * them) and whose value-interpreter run matches
 * C = A B^T; a box partly outside its tensor is zero-filled (interpreter)
 * and bottom (checker); the planted bugs are refuted with the thread, the
 * element and the line; a write over a tma_store's source before its wait
 * is refuted; bad input (the driver's map rules, alignment, arguments) gets
 * its message at its line.
 */
#include "argus/layout.h"
#include "argus/tile_run.h"
#include "check.h"
#include "tile_util.h"

#include "../../src/tile/run/run_int.h"
#define TILE_PIPE_FILE "tma.tile"
#include "tile_pipe.h"

TEST(test_example) {
  ag_tile_lowered *l;
  ag_tile_program *p = pipe_example("examples/tile/tma_gemm.tile", &l);
  if (l) {
    const ag_tile_lkernel *k = &l->kernels[0];
    /* three maps, after the parameters: A's and B's boxes 128B-swizzled, C's not */
    CHECK_EQ_INT(k->ntmaps, 3);
    if (k->ntmaps == 3) {
      CHECK_EQ_INT(k->tmaps[0].tensor, 0);
      CHECK_EQ_INT(k->tmaps[1].tensor, 1);
      CHECK_EQ_INT(k->tmaps[2].tensor, 2);
      CHECK_EQ_INT(k->tmaps[1].box[0], 128);
      CHECK_EQ_INT(k->tmaps[1].box[1], 64);
      CHECK_EQ_INT(k->tmaps[0].swizzle, 128);
      CHECK_EQ_INT(k->tmaps[2].swizzle, 0);
    }
    CHECK_CONTAINS(l->cuda, "unsigned M, unsigned N, const __grid_constant__ CUtensorMap tmA, "
                            "const __grid_constant__ CUtensorMap tmB, const __grid_constant__ "
                            "CUtensorMap tmC) {");
    CHECK_CONTAINS(l->cuda, "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_"
                            "tx::bytes [%0], [%1, {%2, %3}], [%4];");
    CHECK_CONTAINS(l->cuda, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group");
    /* coordinates innermost first; the expected bytes are the two boxes' */
    CHECK_CONTAINS(l->cuda, "ag_tma_load2(sA + (j * 8192), &tmA, full + (j * 8), (int)(j * 64), "
                            "(int)(bm * 64));");
    CHECK_CONTAINS(l->cuda, "ag_mbar_expect_tx(full + (j * 8), 24576u);");
    CHECK_CONTAINS(l->cuda, "asm volatile(\"cp.async.bulk.wait_group.read 0;\" ::: \"memory\");");
    /* the tile's shared stores reach the async proxy before the barrier the store follows */
    CHECK_CONTAINS(l->cuda, "asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");\n"
                            "  __syncthreads();");
    /* buffers of a TMA kernel start on 1024-byte boundaries (the barriers too) */
    CHECK_CONTAINS(l->cuda, "empty = ag_smem + 132096;");
    /* the value interpreter at M = 128, N = 256, K = 512 against C = A B^T */
    CHECK_EQ_INT(pipe_gemm_example(p, l, "tma_gemm", 128, 256, 512), 0);
  }
  ag_tile_lowered_free(l);
  ag_tile_program_free(p);
}

/* examples/tile/tma_ws_gemm.tile, tma_gemm warp-specialized (kb warp-specialize's
 * result): two warpgroups, the register split at entry fixed by one block per
 * SM, the producer's loads S k-tiles ahead, the value interpreter running the
 * roles as cooperating tasks against C = A B^T. */
TEST(test_ws_example) {
  ag_tile_lowered *l;
  ag_tile_program *p = pipe_example("examples/tile/tma_ws_gemm.tile", &l);
  if (l) {
    CHECK_EQ_INT(l->kernels[0].ntmaps, 3);
    CHECK_CONTAINS(l->cuda, "__launch_bounds__(256, 1) tma_ws_gemm(");
    CHECK_CONTAINS(l->cuda, "setmaxnreg.dec.sync.aligned.u32 40;");
    CHECK_CONTAINS(l->cuda, "setmaxnreg.inc.sync.aligned.u32 232;");
    CHECK_CONTAINS(l->cuda, "ag_mbar_expect_tx(full + (s_2 * 8), 24576u);");
    CHECK_EQ_INT(pipe_gemm_example(p, l, "tma_ws_gemm", 128, 256, 512), 0);
  }
  ag_tile_lowered_free(l);
  ag_tile_program_free(p);
}

/* Refuted at the line holding `at`, in thread `thread` (-1: any), the reason holding
 * `want` and the left side's tag `lhs` (NULL: not checked). */
static void refuted(const char *name, const char *src, const char *at, int thread,
                    const char *want, const char *lhs) {
  tu_refuted(name, src, at, (tu_refute){want, thread, NULL, lhs, NULL});
}

TEST(test_planted_bugs) {
  /* B's box 8 rows short: thread 120 (the first row the box misses) reads no data */
  tu_bug_refuted("tma-box", "assert tag(sB[st, tid, g * 8 + c])",
                 (tu_refute){"no data reaches it", 120, NULL, "bot", NULL});
  /* A unswizzled into a swizzled stage: row r's chunk c holds chunk c ^ (r % 8) */
  tu_bug_refuted("tma-swizzle", "assert tag(sA[st, tid / 2, k])",
                 (tu_refute){"the tags differ", -1, NULL, NULL, NULL});
  /* half of B's bytes expected: the phase may complete before the boxes land */
  tu_bug_refuted("tma-bytes", "assert tag(sB[st, tid, g * 8 + c])",
                 (tu_refute){"not settled", -1, NULL,
                             "may land after its phase of mbarrier 'full[3]' completes", NULL});
}

/* A small program around one tma_load of X's 16 x 8 f32 box at (r0, 0) into
 * s; the pieces vary. */
static char *prog(const char *map, const char *decl, const char *load, const char *after) {
  ag_str t = AG_STR_INIT;
  ag_str_printf(&t,
                "@threads(128)\n"
                "def k(X: Tensor(R, 8, f32), Y: Tensor(16, 8, f32), r0: const = 0):\n"
                "    T_X = X[r, c] -> (r, c)\n"
                "    t = threadIdx.x\n"
                "    tm = %s\n"
                "    bar = make_shared((1,), u64)\n"
                "    s = make_shared((16, 8), f32)\n"
                "%s"
                "    if t == 0:\n"
                "        mbar_init(bar[0], 1)\n"
                "        fence_mbar_init()\n"
                "    syncthreads()\n"
                "    if t == 0:\n"
                "        mbar_expect_tx(bar[0], 512)\n"
                "        %s\n"
                "    mbar_wait(bar[0], 0)\n"
                "%s",
                map, decl, load, after);
  char *r = ag_strdup(ag_str_cstr(&t));
  ag_str_release(&t);
  return r;
}

/* Y stored from s by thread 0 (committed), then `wait`, then every thread writes s. */
static char *store_prog(const char *wait) {
  ag_str t = AG_STR_INIT;
  ag_str_printf(&t,
                "    syncthreads()\n"
                "    if t == 0:\n"
                "        tma_store(tY, 0, 0, s)\n"
                "        tma_store_commit()\n"
                "%s"
                "    s[t / 8, t %% 8] = 1.0\n",
                wait);
  char *r = prog("tma_map(X, box=(16, 8))", "    tY = tma_map(Y, box=(16, 8))\n",
                 "tma_load(tm, 0, 0, s, bar[0])", ag_str_cstr(&t));
  ag_str_release(&t);
  return r;
}

TEST(test_small_programs) {
  /* every element of the box: settled, with X's tag (the assumption keeps the box inside X) */
  const char *check_all = "    y = s[t / 8, t % 8]\n"
                          "    assert tag(y) == (t / 8, t % 8)\n"
                          "    Y[t / 8, t % 8] = y\n";
  char *s = prog("tma_map(X, box=(16, 8))", "    assume R >= 16\n", "tma_load(tm, r0, 0, s, bar[0])",
                 check_all);
  ag_tile_program *p = checked(s);
  CHECK(p != NULL);
  ag_tile_program_free(p);
  free(s);
  /* the box at row 8 of a 20-row X: rows 20..23 are zeros in the value interpreter,
   * and the checker proves the copy's tags where the assumption keeps it inside */
  s = prog("tma_map(X, box=(16, 8))", "", "tma_load(tm, 8, 0, s, bar[0])",
           "    y = s[t / 8, t % 8]\n"
           "    Y[t / 8, t % 8] = y\n");
  p = checked(s);
  CHECK(p != NULL);
  ag_tile_lowered *l = p ? lowered(p) : NULL;
  CHECK(l != NULL);
  if (l) {
    float X[20 * 8], Y[16 * 8];
    for (int i = 0; i < 20 * 8; i++)
      X[i] = (float)(i + 1);
    void *t[2] = {X, Y};
    char err[512] = "";
    int rc = interpret_sizes(p, l, "k", "R=20", t, err, sizeof err);
    if (rc)
      printf("  interp: %s\n", err);
    CHECK_EQ_INT(rc, 0);
    long bad = 0;
    for (int i = 0; !rc && i < 16 * 8; i++)
      bad += Y[i] != (i / 8 + 8 < 20 ? X[(i / 8 + 8) * 8 + i % 8] : 0.0f);
    CHECK_EQ_INT(bad, 0);
  }
  ag_tile_lowered_free(l);
  ag_tile_program_free(p);
  free(s);
  s = prog("tma_map(X, box=(16, 8))", "    assume R >= 24\n", "tma_load(tm, 8, 0, s, bar[0])",
           "    y = s[t / 8, t % 8]\n    assert tag(y) == (t / 8 + 8, t % 8)\n");
  p = checked(s);
  CHECK(p != NULL);
  ag_tile_program_free(p);
  free(s);
  /* ... and without it, a size for which the box passes X's end: zeros, no data (bottom) */
  s = prog("tma_map(X, box=(16, 8))", "", "tma_load(tm, 8, 0, s, bar[0])",
           "    y = s[t / 8, t % 8]\n    assert tag(y) != bot\n");
  refuted("oob", s, "assert tag(y) != bot", -1, "no data reaches it", NULL);
  free(s);
  /* ... and with R = 20 (the box provably passes the end): rows 20..23 of the box, read by
   * threads 96..127, are zeros */
  s = prog("tma_map(X, box=(16, 8))", "    assume R == 20\n", "tma_load(tm, 8, 0, s, bar[0])",
           "    y = s[t / 8, t % 8]\n    assert tag(y) != bot\n");
  refuted("oob-20", s, "assert tag(y) != bot", 96, "no data reaches it", NULL);
  free(s);
  /* a tma_store's source overwritten before the wait */
  s = store_prog("");
  refuted("store-war", s, "s[t / 8, t % 8] = 1.0", -1,
          "write-after-read race: this write to shared 's' (bytes 0..511) may land while the "
          "tma_store at line 19 still reads them",
          NULL);
  free(s);
  /* ... and after it: clean */
  s = store_prog("        tma_store_wait(0)\n    syncthreads()\n");
  p = checked(s);
  CHECK(p != NULL);
  ag_tile_program_free(p);
  free(s);
}

TEST(test_bad_input) {
  static const struct {
    const char *map, *decl, *load;
    int line, col;
    const char *msg;
  } cases[] = {
      {"tma_map(X, box=(16, 300))", "", "pass", 5, 25,
       "box extent 1 of tma_map is 300: TMA boxes hold 1 to 256 elements per dimension"},
      {"tma_map(X, box=(16,))", "", "pass", 5, 25,
       "the box of tma_map has one extent per dimension of 'X' (2, in its order), not 1"},
      {"tma_map(X, box=(16, 64), swizzle=128)", "", "pass", 5, 10,
       "tma_map of 'X': box dimension 0 is 64 elements of 4 bytes = 256 bytes: the 128B "
       "swizzle allows at most 128 (TMA's dimension 0 is the tensor's last)"},
      {"tma_map(X, box=(16, 8), swizzle=16)", "", "pass", 5, 42,
       "the swizzle of tma_map is a span in bytes: 0 (none), 32, 64 or 128, not 16"},
      {"tma_map(X, box=(16, 2))", "", "pass", 5, 10,
       "box dimension 0 is 2 elements of 4 bytes = 8 bytes: the inner box must be a multiple "
       "of 16 bytes"},
      {"tma_map(Y[0, :], box=(8,))", "", "pass", 5, 18,
       "tma_map takes the tensor parameter itself ('Y'), not a view or a slice of it"},
      {"tma_map(t, box=(16, 8))", "", "pass", 5, 18,
       "the first argument of tma_map is a tensor parameter (tma_map(A, box=(64, 64), "
       "swizzle=128)), not an integer"},
      {"tma_map(X, box=(16, 8))", "    q = make_shared((2, 16, 8), f32)\n",
       "tma_load(tm, 0, 0, q[1, 1:16, :], bar[0])", 15, 28,
       "the shared side of tma_load must start on a 128-byte boundary"},
      {"tma_map(X, box=(16, 8))", "    q = make_shared((8, 8), f32)\n",
       "tma_load(tm, 0, 0, q, bar[0])", 15, 28, "the box of tma_load is 512 bytes; the shared "
                                                "tile holds 256"},
      {"tma_map(X, box=(16, 8))", "", "tma_load(tm, 0, s, bar[0])", 14, 9,
       "tma_load(map, 2 coordinates, dst, bar) takes 5 arguments for the rank-2 map of 'X', "
       "not 4"},
      {"tma_map(X, box=(16, 8))", "", "tma_load(s, 0, 0, s, bar[0])", 14, 18,
       "the first argument of tma_load is a tensor map"},
      {"tma_map(X, box=(16, 8))", "", "tma_load(tm, 0, 0, X, bar[0])", 14, 28,
       "the shared side of tma_load is a shared tile"},
      {"tma_map(X, box=(16, 8))", "", "mbar_expect_tx(bar[0], tm.size)", 14, 32,
       "a tensor map has one attribute, .bytes"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *s = prog(cases[i].map, cases[i].decl, cases[i].load, "");
    tu_expect_error(s, cases[i].line, cases[i].col, cases[i].msg);
    free(s);
  }
  /* a row of N f32 with nothing saying N % 4 == 0: no provable 16-byte stride */
  tu_expect_error("@threads(32)\n"
                  "def k(X: Tensor(4, N, f32)):\n"
                  "    tm = tma_map(X, box=(4, 8))\n",
                  3, 18,
                  "tma_map of 'X': a row of 'X' (its last dimension times 4 bytes) must be a "
                  "provable multiple of 16 bytes");
}

RUN_TESTS({"test_example", test_example}, {"test_ws_example", test_ws_example},
          {"test_planted_bugs", test_planted_bugs},
          {"test_small_programs", test_small_programs}, {"test_bad_input", test_bad_input})
