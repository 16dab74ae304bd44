/*
 * test_tile_ws.c — warp specialization in the checker (docs/check.md,
 * "Warp specialization"): a producer warpgroup and a consumer warpgroup in
 * the two branches of `if t / 128 == 0:` run as two timelines that meet at
 * the mbarriers of a full/empty ring. The correct ring is proved, unrolled
 * and summarized (--symbolic R); the planted bugs are refuted at the right
 * line with the thread and iteration: (a) the producer refills a stage the
 * consumer has not released (no empty wait), (b) the consumer waits on the
 * wrong parity, (c) the consumer reads the wrong stage. setmaxnreg and role
 * loops that do not line up get their errors. examples/tile/ws_gemm.tile
 * (a warp-specialized persistent wgmma GEMM) checks clean, lowers (its
 * setmaxnreg, its run-time tile loop), compiles for sm_90a, and the value
 * interpreter (the roles as cooperating tasks) matches C = A B^T.
 */
#include "argus/layout.h"
#include "argus/tile_run.h"
#include "check.h"
#include "tile_util.h"

#include "../../src/tile/run/run_int.h"
#define TILE_PIPE_FILE "ws_gemm.tile"

#include "tile_pipe.h"

static const char *ring =
    "K = 2\n"
    "@threads(256)\n"
    "@grid(1)\n"
    "def ws(X: Tensor(R, 128, f32), Y: Tensor(R, 128, f32), R: const = 4):\n"
    "    T_X = X[r, c] -> (r, c)\n"
    "    full = make_shared((K,), u64)\n"
    "    empty = make_shared((K,), u64)\n"
    "    buf = make_shared((K, 128), f32)\n"
    "    t = threadIdx.x\n"
    "    if t == 0:\n"
    "        for s in range(K):\n"
    "            mbar_init(full[s], 128)\n"
    "            mbar_init(empty[s], 128)\n"
    "        fence_mbar_init()\n"
    "    syncthreads()\n"
    "    if t / 128 == 0:\n"
    "        setmaxnreg_dec(40)\n"
    "        for i in range(R):\n"
    "            s = i % K\n"
    "            ph = i / K % 2\n"
    "            mbar_wait(empty[s], 1 - ph)\n"
    "            reset(buf[s, :])\n"
    "            cp_async(buf[s, t], X[i, t])\n"
    "            cp_async_mbar_arrive(full[s])\n"
    "    else:\n"
    "        setmaxnreg_inc(232)\n"
    "        for i in range(R):\n"
    "            s = i % K\n"
    "            ph = i / K % 2\n"
    "            mbar_wait(full[s], ph)\n"
    "            x = buf[s, t - 128]\n"
    "            assert tag(x) == (i, t - 128)\n"
    "            Y[i, t - 128] = x * 2.0\n"
    "            mbar_arrive(empty[s])\n";

/* ring with line `from` replaced by `to` (owned) */
static char *edit(const char *from, const char *to) {
  const char *p = strstr(ring, from);
  CHECK(p != NULL);
  if (!p)
    return NULL;
  size_t n = strlen(ring) + strlen(to) + 1;
  char *s = malloc(n);
  snprintf(s, n, "%.*s%s%s", (int)(p - ring), ring, to, p + strlen(from));
  return s;
}

static ag_tile_report *run(const char *text, int symbolic, int *rc) {
  ag_diags d;
  ag_diags_init(&d);
  ag_tile_check_opts o;
  memset(&o, 0, sizeof o);
  const char *sym[] = {"R"};
  if (symbolic) {
    o.symbolic = sym;
    o.nsymbolic = 1;
  }
  ag_tile_report *r = tu_check(text, "ws.tile", &d, rc, &o);
  if (*rc) {
    ag_str f = AG_STR_INIT;
    ag_diags_format(&d, &f);
    printf("  %s\n", ag_str_cstr(&f));
    ag_str_release(&f);
  }
  ag_diags_release(&d);
  return r;
}

TEST(test_ring_proved) {
  for (int sym = 0; sym < 2; sym++) {
    int rc;
    ag_tile_report *r = run(ring, sym, &rc);
    CHECK_EQ_INT(rc, 0);
    CHECK(r && ag_tile_report_ok(r));
    const ag_tile_assert_result *a = r ? tu_find(r, tu_line_of(ring, "assert tag(x)")) : NULL;
    CHECK(a && a->status == AG_TILE_PROVED);
    CHECK(r && r->races_proved >= 1);
    ag_tile_report_free(r);
  }
}

/* the bug is refuted: a race at the producer's cp_async (the copy and the
 * reader named), and for (b) and (c) the assertion too */
static void refuted(const char *from, const char *to, int assert_too, const char *why) {
  for (int sym = 0; sym < 2; sym++) {
    char *s = edit(from, to);
    int rc;
    ag_tile_report *r = s ? run(s, sym, &rc) : NULL;
    CHECK(r != NULL);
    const ag_tile_assert_result *w = r ? tu_find(r, tu_line_of(s, "cp_async(buf")) : NULL;
    CHECK(w && w->race && w->status == AG_TILE_VIOLATED && w->cex);
    if (w && w->cex) {
      CHECK_CONTAINS(w->cex->reason, why);
      CHECK(w->cex->thread >= 0 && w->cex->other >= 0);
      CHECK((w->cex->thread < 128) != (w->cex->other < 128)); /* one of each role */
    }
    const ag_tile_assert_result *a = r ? tu_find(r, tu_line_of(s, "assert tag(x)")) : NULL;
    if (assert_too)
      CHECK(a && a->status == AG_TILE_VIOLATED && a->cex && a->cex->thread >= 128);
    ag_tile_report_free(r);
    free(s);
  }
}

TEST(test_planted_bugs) {
  /* (a) no empty wait: the refill overtakes the consumer's read */
  refuted("            mbar_wait(empty[s], 1 - ph)\n", "            pass\n", 0,
          "write-after-read race");
  /* (b) the wrong parity: the read is not ordered after the copy */
  refuted("mbar_wait(full[s], ph)", "mbar_wait(full[s], 1 - ph)", 1, "read-after-write race");
  /* (c) the stage off by one */
  refuted("x = buf[s, t - 128]", "x = buf[(i + 1) % K, t - 128]", 1, "write-after-read race");
}

static void refused(const char *from, const char *to, const char *msg) {
  char *s = edit(from, to);
  ag_diags d;
  ag_diags_init(&d);
  int rc;
  ag_tile_report *r = s ? tu_check(s, "ws.tile", &d, &rc, NULL) : NULL;
  CHECK(s && rc != 0);
  ag_str f = AG_STR_INIT;
  ag_diags_format(&d, &f);
  CHECK_CONTAINS(ag_str_cstr(&f), msg);
  ag_str_release(&f);
  ag_diags_release(&d);
  ag_tile_report_free(r);
  free(s);
}

TEST(test_bad_input) {
  refused("setmaxnreg_dec(40)", "setmaxnreg_dec(44)",
          "setmaxnreg_dec needs a register count that is a multiple of 8 in 24..256, not 44");
  refused("setmaxnreg_inc(232)", "setmaxnreg_inc(264)", "multiple of 8 in 24..256, not 264");
  refused("        setmaxnreg_dec(40)\n", "        if t < 64:\n            setmaxnreg_dec(40)\n",
          "setmaxnreg_dec inside a thread-dependent 'if' that does not take whole warpgroups: "
          "thread 0 runs it and thread 64 of the same warpgroup 0 does not");
  /* the consumer's loop runs another range than the producer's */
  refused("        for i in range(R):\n            s = i % K\n            ph = i / K % 2\n"
          "            mbar_wait(full",
          "        for i in range(R + 1):\n            s = i % K\n            ph = i / K % 2\n"
          "            mbar_wait(full",
          "run side by side (the checker interleaves the roles' mbarrier loops in order): give "
          "them the same variable and the same range");
}

TEST(test_example) {
  char *src = tu_read("examples/tile/ws_gemm.tile", NULL);
  CHECK(src != NULL);
  if (!src)
    return;
  ag_tile_program *p = checked(src);
  CHECK(p != NULL);
  ag_tile_lowered *l = p ? lowered(p) : NULL;
  CHECK(l != NULL);
  if (l) {
    CHECK_CONTAINS(l->cuda, "setmaxnreg.dec.sync.aligned.u32 40;");
    CHECK_CONTAINS(l->cuda, "setmaxnreg.inc.sync.aligned.u32 232;");
    CHECK_CONTAINS(l->cuda, "__launch_bounds__(256, 1)"); /* setmaxnreg needs it */
    CHECK_CONTAINS(l->cuda, "cp.async.mbarrier.arrive.noinc.shared::cta.b64");
    CHECK_CONTAINS(l->cuda, "< (unsigned)((7 - blockIdx.x) / 4 + 1)"); /* the tile loop */
    CHECK_CONTAINS(l->cuda, "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16");
    int c = pipe_compiles(l);
    if (c < 0)
      printf("  NVRTC or ptxas missing: the compile step is skipped\n");
    else
      CHECK_EQ_INT(c, 1);
    /* the value interpreter: C (128 x 256) = A B^T, K = 256, 4 blocks of 2 tiles (run
     * one role after the other, the producer's last k-tiles would be all the consumer
     * sees: the roles must step together) */
    CHECK_EQ_INT(pipe_gemm_interp(p, l, "ws_gemm", NULL, 128, 256, 256), 0);
  }
  ag_tile_lowered_free(l);
  ag_tile_program_free(p);
  free(src);
}

/* A planted bug of ws_gemm.tile (examples/tile/bugs/ws-*.mut, applied as apply.sh does
 * for a one-line edit): the write at `at` races (reason `why`), between a producer
 * thread and a consumer thread; with `operand`, the wgmma's operand is top too. */
static void ws_bug(const char *from, const char *to, const char *at, const char *why,
                   int operand) {
  char *src = tu_read("examples/tile/ws_gemm.tile", NULL);
  CHECK(src != NULL);
  const char *p = src ? strstr(src, from) : NULL;
  CHECK(p != NULL);
  if (!p) {
    free(src);
    return;
  }
  size_t n = strlen(src) + strlen(to) + 1;
  char *s = malloc(n);
  snprintf(s, n, "%.*s%s%s", (int)(p - src), src, to, p + strlen(from));
  int rc;
  ag_tile_report *r = run(s, 0, &rc);
  CHECK_EQ_INT(rc, 0);
  CHECK(r && !ag_tile_report_ok(r));
  const ag_tile_assert_result *w = r ? tu_find(r, tu_line_of(s, at)) : NULL;
  CHECK(w && w->race && w->status == AG_TILE_VIOLATED && w->cex);
  if (w && w->cex) {
    CHECK_CONTAINS(w->cex->reason, why);
    CHECK((w->cex->thread < 128) != (w->cex->other < 128)); /* one of each role */
  }
  const ag_tile_assert_result *o = r ? tu_find(r, tu_line_of(s, "wgmma_m64n64k16(acc")) : NULL;
  if (operand) {
    CHECK(o && o->status == AG_TILE_VIOLATED && o->cex && o->cex->thread >= 128);
    if (o && o->cex)
      CHECK_CONTAINS(o->cex->reason, "not settled");
  }
  ag_tile_report_free(r);
  free(s);
  free(src);
}

TEST(test_example_bugs) {
  ws_bug("mbar_wait(empty[s], 1 - ph)", "pass", "cp_async(sAc[s, e / 8, e % 8]",
         "write-after-read race: thread", 0);
  ws_bug("mbar_wait(full[s], ph)", "mbar_wait(full[s], 1 - ph)", "cp_async(sAc[s, e / 8, e % 8]",
         "read-after-write race", 1);
  ws_bug("sA[s, :, kk * 16:kk * 16 + 16], sB[s, :", "sA[(kt + 1) % S, :, kk * 16:kk * 16 + 16], "
         "sB[(kt + 1) % S, :", "cp_async(sAc[s, e / 8, e % 8]", "write-after-read race", 0);
}

/* examples/tile/gemm_hopper.tile (issue 23): a TMA producer warpgroup and two
 * wgmma.m64n256k16 consumer warpgroups; consumer c = tid / 128 - 1 reads rows
 * c * 64 .. of the A stage, an operand offset ((c * 4096) + kk * 16) * 2 whose
 * varying part is a multiple of the 1024-byte swizzle period only once the
 * constant is split out of the product (ag__xsplit_lin). It checks clean with
 * one wgmma group in flight, lowers (the ring loops stay loops), compiles, and
 * the value interpreter matches C = A B^T at its toy size (256 x 512 x 512). */
static ag_tile_program *hopper_checked(const char *text, ag_tile_report **rep) {
  ag_diags d;
  ag_diags_init(&d);
  ag_tile_program *p = NULL;
  ag_tile_check_opts o;
  memset(&o, 0, sizeof o);
  o.max_steps = 4000000; /* 384 threads over a 4-stage ring: the race check's work */
  *rep = NULL;
  int rc = ag_tile_parse(text, strlen(text), "gemm_hopper.tile", &d, &p);
  if (!rc)
    rc = ag_tile_check(p, &o, &d, rep);
  if (rc == AG_EVIOLATION && *rep)
    rc = 0; /* a planted bug: the report says */
  if (rc) {
    ag_str f = AG_STR_INIT;
    ag_diags_format(&d, &f);
    printf("  %s\n", ag_str_cstr(&f));
    ag_str_release(&f);
  }
  CHECK_EQ_INT(rc, 0);
  ag_diags_release(&d);
  return p;
}

TEST(test_hopper) {
  char *src = tu_read("examples/tile/gemm_hopper.tile", NULL);
  CHECK(src != NULL);
  if (!src)
    return;
  ag_tile_report *r;
  ag_tile_program *p = hopper_checked(src, &r);
  CHECK(r && ag_tile_report_ok(r) && r->races_proved >= 2); /* both tma_loads */
  ag_tile_report_free(r);
  ag_tile_lowered *l = p ? lowered(p) : NULL;
  CHECK(l != NULL);
  if (l) {
    CHECK_CONTAINS(l->cuda, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16");
    CHECK_CONTAINS(l->cuda, "wgmma.wait_group.sync.aligned 1;");
    CHECK_CONTAINS(l->cuda, "setmaxnreg.inc.sync.aligned.u32 232;");
    CHECK_CONTAINS(l->cuda, "__launch_bounds__(384, 1)");
    CHECK_CONTAINS(l->cuda, "#pragma unroll 1\n"); /* the k ring */
    int c = pipe_compiles(l);
    if (c >= 0)
      CHECK_EQ_INT(c, 1);
    CHECK_EQ_INT(pipe_gemm_interp(p, l, "gemm_hopper", NULL, 256, 512, 512), 0);
  }
  ag_tile_lowered_free(l);
  ag_tile_program_free(p);
  free(src);
}

/* examples/tile/bugs/hopper-early-release.mut: with wgmma_wait(1) the consumer
 * releases the stage its in-flight group still reads: the next TMA box into it
 * is a write-after-read race (the wgmma's read lasts until the wgmma_wait that
 * retires its group), producer thread against consumer thread. */
TEST(test_hopper_bugs) {
  char *src = tu_read("examples/tile/gemm_hopper.tile", NULL);
  CHECK(src != NULL);
  if (!src)
    return;
  const char *from = "if kt > 0:\n                    mbar_arrive(empty[(kt + S - 1) % S])";
  const char *p0 = strstr(src, from);
  CHECK(p0 != NULL);
  if (p0) {
    /* as examples/tile/bugs/hopper-early-release.mut: the current stage released, and
     * no release of the last one after the loop */
    const char *to = "mbar_arrive(empty[s])";
    const char *tail = "mbar_arrive(empty[(K / BK - 1) % S])";
    const char *p1 = strstr(p0, tail);
    CHECK(p1 != NULL);
    if (!p1)
      p1 = p0 + strlen(from);
    size_t n = strlen(src) + strlen(to) + 8;
    char *s = malloc(n);
    snprintf(s, n, "%.*s%s%.*spass%s", (int)(p0 - src), src, to, (int)(p1 - p0 - strlen(from)),
             p0 + strlen(from), p1 + strlen(tail));
    ag_tile_report *r;
    ag_tile_program *p = hopper_checked(s, &r);
    CHECK(r && !ag_tile_report_ok(r));
    const ag_tile_assert_result *w = r ? tu_find(r, tu_line_of(s, "tma_load(tmA")) : NULL;
    CHECK(w && w->race && w->status == AG_TILE_VIOLATED && w->cex);
    if (w && w->cex) {
      CHECK_CONTAINS(w->cex->reason, "write-after-read race: thread 0's bulk copy writes shared 'sA'");
      CHECK_CONTAINS(w->cex->reason, "may still be reading it");
      CHECK(w->cex->thread >= 128 && w->cex->other == 0);
    }
    ag_tile_report_free(r);
    ag_tile_program_free(p);
    free(s);
  }
  free(src);
}

/* The GPU test's specs (test_gpu_tile_ws) lower, bind and compile here (all but the launch;
 * NVRTC missing: skipped) */
TEST(test_gpu_specs) {
  char path[1024];
  const char *src = getenv("ARGUS_SOURCE_DIR");
  snprintf(path, sizeof path, "%s/examples/tile/ws_gemm.tile", src ? src : ".");
  static const char *specs[] = {"MT=8,NT=8,K=512,NB=32", "MT=2,NT=4,K=256,NB=4",
                                "MT=64,NT=64,K=4096,NB=132"};
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    ag_tile_exec_result r;
    int rc = ag_tile_run_file(path, specs[i], NULL, NULL, &r, NULL, NULL);
    if (rc == AG_EUNSUPPORTED) {
      printf("  %s: NVRTC missing: skipped\n", specs[i]);
      continue;
    }
    if (rc)
      printf("  %s: %s: %s\n", specs[i], ag_strerror(rc), r.err);
    CHECK_EQ_INT(rc, 0);
  }
  /* a spec that breaks an assumption is refused */
  ag_tile_exec_result r;
  int rc = ag_tile_run_file(path, "MT=1,NT=1,K=256,NB=2", NULL, NULL, &r,
                            NULL, NULL);
  CHECK(rc != 0);
  CHECK_CONTAINS(r.err, "assume NB <= MT * NT");
}

RUN_TESTS({"test_example", test_example}, {"test_hopper", test_hopper},
          {"test_hopper_bugs", test_hopper_bugs}, {"test_gpu_specs", test_gpu_specs}, {"test_example_bugs", test_example_bugs}, {"test_ring_proved", test_ring_proved}, {"test_planted_bugs", test_planted_bugs},
          {"test_bad_input", test_bad_input})
