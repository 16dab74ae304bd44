/*
 * test_tile_wgmma.c — wgmma in the tile DSL (docs/tile-dsl.md, "wgmma";
 * docs/check.md, "wgmma"): examples/tile/wgmma_gemm.tile checks clean,
 * lowers to CUDA C whose PTX (NVRTC) assembles for sm_90a (ptxas; that part
 * is skipped without them), and its value-interpreter run matches C = A B^T
 * at a small size; the planted bugs are refuted with the thread, the
 * element and the line (a missing wgmma_wait, an operand not waited for, a
 * write into pending accumulators) or refused naming the first element
 * (a swizzle that is no canonical GMMA layout of the tile); bad input gets
 * its message.
 */
#include "argus/layout.h"
#include "argus/tile_run.h"
#include "check.h"
#include "tile_util.h"

#include "../../src/tile/run/run_int.h"
#define TILE_PIPE_FILE "wgmma.tile"
#include "tile_pipe.h"

TEST(test_example) {
  ag_tile_lowered *l;
  ag_tile_program *p = pipe_example("examples/tile/wgmma_gemm.tile", &l);
  if (l) {
    CHECK_CONTAINS(l->cuda, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16");
    /* the descriptors hopper.cuh writes by hand: LBO 16, SBO 1024, 128B */
    CHECK_CONTAINS(l->cuda, "16u, 1024u, 1u)");
    CHECK_CONTAINS(l->cuda, ", p, 1, 1, 0, 0;"); /* K-major A and B: not transposed */
    /* cp.async's writes made visible to wgmma's async proxy */
    CHECK_CONTAINS(l->cuda, "asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");");
    CHECK_CONTAINS(l->cuda, "__align__(1024) unsigned char ag_smem[]");
    /* the value interpreter at M = 128, N = 256, K = 256 against C = A B^T */
    CHECK_EQ_INT(pipe_gemm_example(p, l, "wgmma_gemm", 128, 256, 256), 0);
  }
  ag_tile_lowered_free(l);
  ag_tile_program_free(p);
}

/* A small program refuted at the line holding `at`, in a thread of the warpgroup, the reason
 * holding `want`; lhs: the operand's left side (an unsettled cp.async byte of sA). */
static void refuted(const char *name, const char *src, const char *at, const char *want,
                    const char *lhs) {
  tu_refuted(name, src, at,
             (tu_refute){want, -1, lhs, lhs ? "not been waited for" : NULL,
                         lhs ? "shared 'sA' byte" : NULL});
}

TEST(test_planted_bugs) {
  tu_bug_refuted("wgmma-nowait", "C[bm * BM + m, bn * BN + n] = acc[v]",
                 (tu_refute){"reads register 'acc' byte 0, an accumulator of the wgmma at line "
                             "71, before a wgmma_wait retires its group",
                             -1, NULL, NULL, NULL});
  const char *lhs = "wgmma_m64n128k16 operand a: A[m, k] of the thread's accumulator (m, n) "
                    "(accumulator value ";
  tu_bug_refuted("wgmma-nocpwait", "wgmma_m64n128k16(acc, sA[st",
                 (tu_refute){"not settled", -1, lhs, "not been waited for", "shared 'sA' byte"});
  char *s = tu_mutate("wgmma-swizzle");
  CHECK(s != NULL);
  if (s) {
    ag_diags d;
    ag_diags_init(&d);
    int rc;
    ag_tile_report *r = tu_check(s, "wgmma-swizzle", &d, &rc, NULL);
    CHECK(rc != 0 && r == NULL);
    tu_expect_diag(&d, 0, 71, 35,
                   "operand a of wgmma_m64n128k16 has no wgmma descriptor: the tile is no "
                   "canonical K-major 64B swizzle layout: its element (1, 0) is at byte 0x90, "
                   "but the descriptor (start 0x0, LBO 16, SBO 1024) reads 0x40");
    ag_tile_report_free(r);
    ag_diags_release(&d);
  }
  free(s);
}

/* A small one-warpgroup program around one wgmma_m64n64k16; the pieces vary. */
static char *prog(const char *threads, const char *decl, const char *call, const char *after) {
  ag_str t = AG_STR_INIT;
  ag_str_printf(&t,
                "@threads(%s)\n"
                "def k(A: Tensor(64, 16, bf16), B: Tensor(64, 16, bf16), C: Tensor(64, 64, f32)):\n"
                "    t = threadIdx.x\n"
                "    sA = make_shared((64, 16), bf16, swizzle(1, 3, 3))\n"
                "    sB = make_shared((64, 16), bf16, swizzle(1, 3, 3))\n"
                "    for j in range(8):\n"
                "        e = j * 128 + t\n"
                "        sA[e / 16, e %% 16] = A[e / 16, e %% 16]\n"
                "        sB[e / 16, e %% 16] = B[e / 16, e %% 16]\n"
                "    syncthreads()\n"
                "    acc = make_local((32,), f32)\n"
                "    fill(acc, 0)\n"
                "%s"
                "    wgmma_fence()\n"
                "    %s\n"
                "    wgmma_commit()\n"
                "%s"
                "    wgmma_wait(0)\n"
                "    for v in range(32):\n"
                "        m, n = wgmma_m64n64k16.d(t, v)\n"
                "        C[m, n] = acc[v]\n",
                threads, decl, call, after);
  char *r = ag_strdup(ag_str_cstr(&t));
  ag_str_release(&t);
  return r;
}

TEST(test_small_programs) {
  /* the base program checks clean, and so does A from registers */
  char *s = prog("128", "", "wgmma_m64n64k16(acc, sA, sB)", "");
  ag_tile_program *p = checked(s);
  CHECK(p != NULL);
  ag_tile_program_free(p);
  free(s);
  s = prog("128",
           "    a = make_local((8,), bf16)\n"
           "    for e in range(8):\n"
           "        m, kk = wgmma_m64n64k16.a(t, e)\n"
           "        a[e] = A[m, kk]\n",
           "wgmma_m64n64k16(acc, a, sB)", "");
  p = checked(s);
  CHECK(p != NULL);
  ag_tile_lowered *l = p ? lowered(p) : NULL;
  CHECK(l != NULL);
  if (l) {
    CHECK_CONTAINS(l->cuda, "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16");
    int c = pipe_compiles(l);
    if (c >= 0)
      CHECK_EQ_INT(c, 1);
  }
  ag_tile_lowered_free(l);
  ag_tile_program_free(p);
  free(s);
  /* one row of A stored again after the barrier: only the threads whose accumulators
   * need row 63 read unsettled data; refuted at the wgmma, naming operand a */
  s = prog("128", "    if t < 16:\n        sA[63, t] = A[63, t]\n", "wgmma_m64n64k16(acc, sA, sB)",
           "");
  refuted("late-row", s, "wgmma_m64n64k16(acc, sA, sB)", "not settled", NULL);
  free(s);
  /* a write into the accumulators before the wait: refuted at that line */
  s = prog("128", "", "wgmma_m64n64k16(acc, sA, sB)", "    fill(acc, 1)\n");
  refuted("pending-fill", s, "fill(acc, 1)", "fill() writes register 'acc'",
          NULL);
  free(s);
}

TEST(test_bad_input) {
  static const struct {
    const char *threads, *decl, *call;
    int line, col;
    const char *msg;
  } cases[] = {
      {"128", "", "wgmma_m64n128k16(acc, sA, sB)", 14, 22,
       "operand d of wgmma_m64n128k16 is the thread's 64 f32 accumulators "
       "(make_local((64,), f32)), not 128 bytes of f32"},
      {"128", "", "wgmma_m64n64k16(acc, sA, sB[0:32, :])", 14, 30,
       "operand b of wgmma_m64n64k16 is a 64 x 16 shared tile, not 32 x 16"},
      {"128", "    r = make_local((8,), bf16)\n", "wgmma_m64n64k16(acc, sA, r)", 15, 30,
       "operand b of wgmma_m64n64k16 is an N x 16 shared tile (read through a descriptor), not "
       "a register or global tile"},
      {"128", "    f = make_shared((64, 16), f32)\n", "wgmma_m64n64k16(acc, f, sB)", 15, 5,
       "operands a and b of wgmma_m64n64k16 must both be bf16 or both f16 (got f32 and bf16)"},
      {"128", "    h = make_shared((64, 16), f16, swizzle(1, 3, 3))\n",
       "wgmma_m64n64k16(acc, h, sB)", 15, 5,
       "operands a and b of wgmma_m64n64k16 must both be bf16 or both f16 (got f16 and bf16)"},
      {"256", "", "wgmma_m64n64k16(acc, sA, sB)", 15, 9,
       "inside a thread-dependent 'if' that does not take whole warpgroups: thread 0 runs it "
       "and thread 64 of the same warpgroup 0 does not"},
      {"128", "    p = make_shared((64, 24), bf16)\n", "wgmma_m64n64k16(acc, p[:, 0:16], sB)",
       15, 26,
       "operand a of wgmma_m64n64k16 has no wgmma descriptor: the tile is no canonical "
       "K-major"},
      {"128", "", "wgmma_m64n64k16(acc, sA, sB)\n    wgmma_wait(8)", 15, 5,
       "wgmma_wait needs a count in 0..7, not 8"},
      {"128", "", "m, n = wgmma_m64n64k16.b(t, 0)", 14, 12,
       "wgmma_m64n64k16 has operand layouts .a and .d (thread in the warpgroup, value)"},
      {"128", "", "wgmma_m64n12k16(acc, sA, sB)", 14, 5, "unknown function 'wgmma_m64n12k16'"},
      {"128", "    w = make_shared((64, 32), bf16, swizzle(2, 3, 3))\n",
       "wgmma_m64n64k16(acc, w[:, 4:20], sB)", 15, 26,
       "operand a of wgmma_m64n64k16 has no wgmma descriptor: the operand's start address is 8 "
       "bytes: a descriptor holds a multiple of 16"},
      {"64", "", "wgmma_m64n64k16(acc, sA, sB)", 14, 5,
       "wgmma_m64n64k16 is issued by whole warpgroups of 128 threads; the block has 64"},
      {"128",
       "    q = make_shared(layout((4, 64, 16), (16, 64, 1)), bf16, swizzle(1, 3, 3))\n"
       "    r0 = blockIdx.x % 4\n",
       "wgmma_m64n64k16(acc, sA, q[r0, :, :])", 16, 30,
       "operand b of wgmma_m64n64k16: the tile's offset in its buffer varies by other than "
       "multiples of 256 bytes (the swizzle's period)"},
      /* the constant inside the product ((r0 * 2 + 1) * 16 * 2) is split out, and what
       * varies (64 * r0) is still no multiple of the period */
      {"128",
       "    q = make_shared(layout((4, 64, 16), (16, 64, 1)), bf16, swizzle(1, 3, 3))\n"
       "    r0 = blockIdx.x % 2\n",
       "wgmma_m64n64k16(acc, sA, q[r0 * 2 + 1, :, :])", 16, 30,
       "operand b of wgmma_m64n64k16: the tile's offset in its buffer varies by other than "
       "multiples of 256 bytes (the swizzle's period)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *s = prog(cases[i].threads, cases[i].decl, cases[i].call, "");
    if (!strcmp(cases[i].threads, "256")) { /* an 'if' that splits a warpgroup around it (one
                                               on whole warpgroups is a role: allowed) */
      char *s2 = prog("256", "", "if t < 64:\n        wgmma_m64n64k16(acc, sA, sB)", "");
      free(s);
      s = s2;
    }
    tu_expect_error(s, cases[i].line, cases[i].col, cases[i].msg);
    free(s);
  }
}

RUN_TESTS({"test_example", test_example}, {"test_planted_bugs", test_planted_bugs},
          {"test_small_programs", test_small_programs}, {"test_bad_input", test_bad_input})
