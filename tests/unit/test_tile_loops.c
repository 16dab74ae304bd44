/*
 * test_tile_loops.c — loops the tile checker proves without unrolling them
 * (src/tile/check/loop.c): the gemm example with a symbolic K is proved and
 * says which loop it summarized; a bug that shows only in the last
 * iteration is refuted with that iteration (kt = K / 32 - 1) and a thread,
 * at symbolic K and at K = 8192; a loop that cannot be summarized soundly
 * is unrolled (constant bounds) or refused naming the loop (symbolic
 * bounds); loop-carried registers and names are never trusted; a long
 * constant loop (--set K=8192) is checked in bounded time.
 */
#include "argus/tile_check.h"
#include "check.h"
#include "tile_util.h"

#include <time.h>

#ifdef __SANITIZE_ADDRESS__
#define TIME_SCALE 5.0
#else
#define TIME_SCALE 1.0
#endif

static double cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* text with the first occurrence of `from` replaced by `to` (malloc'd) */
static char *edit(const char *text, const char *from, const char *to) {
  const char *p = strstr(text, from);
  CHECK(p != NULL);
  if (!p)
    return strdup(text);
  size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
  char *r = malloc(n);
  snprintf(r, n, "%.*s%s%s", (int)(p - text), text, to, p + strlen(from));
  return r;
}

static char *gemm_src(void) {
  char *src = tu_read("examples/tile/gemm.tile", NULL);
  CHECK(src != NULL);
  return src;
}

/* gemm.tile with the first `from` replaced by `to` (malloc'd; NULL: no
 * gemm.tile, a failure) */
static char *gemm_edit(const char *from, const char *to) {
  char *src = gemm_src();
  char *bug = src ? edit(src, from, to) : NULL;
  free(src);
  return bug;
}

/* a check's report and its diagnostics, released */
static void release(ag_tile_report *r, ag_diags *d) {
  ag_tile_report_free(r);
  ag_diags_release(d);
}

static const ag_tile_assert_result *first_violated(const ag_tile_report *r) {
  for (int i = 0; r && i < r->nasserts; i++)
    if (r->asserts[i].status == AG_TILE_VIOLATED)
      return &r->asserts[i];
  return NULL;
}

static ag_tile_report *run(const char *src, const char *sym, const char *set, ag_diags *d,
                           int *rc) {
  ag_tile_check_opts o;
  memset(&o, 0, sizeof o);
  const char *syms[1] = {sym}, *defs[1] = {set};
  if (sym) {
    o.symbolic = syms;
    o.nsymbolic = 1;
  }
  if (set) {
    o.defines = defs;
    o.ndefines = 1;
  }
  ag_diags_init(d);
  return tu_check(src, "loops.tile", d, rc, &o);
}

/* The sizes a loop test checks gemm at: 0 symbolic K, 1 K = 8192 (both
 * summarized: one loop), 2 K = 128 (unrolled: none). */
enum { NSIZES = 3 };
static const char *const size_set[NSIZES] = {NULL, "K=8192", "K=128"};

static ag_tile_report *run_size(const char *src, int k, ag_diags *d, int *rc) {
  return run(src, k == 0 ? "K" : NULL, size_set[k], d, rc);
}

/* K of size k's run (for symbolic K, the counterexample's) */
static int64_t size_K(int k, const ag_tile_cex *x) {
  return k == 0 ? tu_size(x, "K") : k == 1 ? 8192 : 128;
}

/* the loops size k's report summarizes */
static int size_loops(int k) { return k < 2 ? 1 : 0; }

TEST(test_symbolic_gemm) {
  char *src = gemm_src();
  if (!src)
    return;
  ag_diags d;
  int rc;
  ag_tile_report *r = run(src, "K", NULL, &d, &rc);
  CHECK_EQ_INT(rc, 0);
  CHECK(r && ag_tile_report_ok(r));
  CHECK(r && r->nloops == 1);
  if (r && r->nloops == 1) {
    CHECK_EQ_STR(r->loops[0].var, "kt");
    CHECK_EQ_INT(r->loops[0].line, tu_line_of(src, "for kt in range(K / BK)"));
    CHECK_CONTAINS(r->loops[0].how, "K / 32");
    ag_str s = AG_STR_INIT;
    ag_tile_report_text(r, &s);
    CHECK_CONTAINS(ag_str_cstr(&s), "summarized: loop 'kt'");
    ag_str_release(&s);
  }
  /* every assertion is reached in the summarized iterations */
  for (int i = 0; r && i < r->nasserts; i++)
    CHECK(r->asserts[i].instances > 0);
  release(r, &d);
  /* the unrolled example (K = 128, four iterations) summarizes nothing */
  r = run(src, NULL, NULL, &d, &rc);
  CHECK_EQ_INT(rc, 0);
  CHECK(r && ag_tile_report_ok(r) && r->nloops == 0);
  release(r, &d);
  free(src);
}

/* The prefetch skips the last k-tile: only iteration K / 32 - 1 reads a
 * stage nobody filled for it. */
TEST(test_last_iteration_bug) {
  char *bug = gemm_edit("if kt + 1 < K / BK:", "if kt + 2 < K / BK:");
  for (int k = 0; bug && k < NSIZES; k++) {
    ag_diags d;
    int rc;
    ag_tile_report *r = run_size(bug, k, &d, &rc);
    CHECK_EQ_INT(rc, 0);
    const ag_tile_assert_result *a = first_violated(r);
    CHECK(a != NULL && a->cex != NULL);
    if (a && a->cex) {
      int64_t K = size_K(k, a->cex);
      int64_t kt = tu_loop(a->cex, "kt");
      if (kt != K / 32 - 1)
        fprintf(stderr, "case %d: K=%lld kt=%lld\n", k, (long long)K, (long long)kt);
      CHECK(K >= 64 && K % 32 == 0);
      CHECK_EQ_INT(kt, K / 32 - 1);
      CHECK(a->cex->thread >= 0 && a->cex->thread < 128);
    }
    /* K = 8192 and symbolic K are summarized, K = 128 unrolled */
    CHECK(r && r->nloops == size_loops(k));
    release(r, &d);
  }
  free(bug);
}

/* The trailing barrier gone (examples/tile/bugs/gemm-war.mut): iteration
 * kt + 1's prefetch overwrites the stage iteration kt's warps may still read.
 * A race between two iterations of a summarized loop is refuted as in the
 * unrolled one (it was proved once: a summary's replayed iteration dropped
 * its reads, their keys taken by an abandoned attempt of the same epoch). */
TEST(test_race_across_summarized_iterations) {
  char *bug = gemm_edit("                    assert tag(fb[e]) == (bn * BN + wn * 32 + ni * 8 + n, "
                        "kt * BK + kk * 16 + k)\n        syncthreads()\n",
                        "                    assert tag(fb[e]) == (bn * BN + wn * 32 + ni * 8 + n, "
                        "kt * BK + kk * 16 + k)\n");
  for (int k = 0; bug && k < NSIZES; k++) {
    ag_diags d;
    int rc;
    ag_tile_report *r = run_size(bug, k, &d, &rc);
    CHECK_EQ_INT(rc, 0);
    int races = 0;
    for (int i = 0; r && i < r->nasserts; i++)
      if (r->asserts[i].race && r->asserts[i].status == AG_TILE_VIOLATED) {
        races++;
        const ag_tile_cex *x = r->asserts[i].cex;
        CHECK(x != NULL && x->other >= 0 && x->other != x->thread);
      }
    if (races != 2)
      fprintf(stderr, "case %d: %d races refuted\n", k, races);
    CHECK_EQ_INT(races, 2); /* the cp.async into sA and the one into sB */
    CHECK(r && r->nloops == size_loops(k));
    release(r, &d);
  }
  free(bug);
}

/* Every planted bug of examples/tile/bugs that lives in a summarized loop is
 * refuted at a symbolic size too, at the line the unrolled check refutes
 * (the summary is sound only if none of them is proved). */
TEST(test_planted_bugs_summarized) {
  static const struct {
    const char *mut, *line, *sym;
  } bugs[] = {
      {"gemm-stage", "assert tag(fa[e])", "K"},     {"gemm-swizzle", "assert tag(fa[e])", "K"},
      {"gemm-ldmatrix", "assert tag(fa[e])", "K"},  {"gemm-overlap", "assert tag(sAh[", "K"},
      {"gemm-trans", "assert tag(fb[e])", "K"},     {"gemm-nosync", "assert tag(fa[e])", "K"},
      {"gemm-oob", "gA[bm + 1, r, 0, c]", "K"},     {"gemm-alias", "sA[0, r + 32,", "K"},
      {"gemm-war", "cp_async(sA[nst", "K"},         {"gemm-noreset", "assert tag(sAh[", "K"},
      {"attention-war", "cp_async(sKw[ls, r", "skv"},
      /* the mbarrier ring: stage and phase parity of i summarized (period 2K) */
      {"ring-parity", "assert tag(x)", "R"},        {"ring-stage", "assert tag(x)", "R"},
      {"ring-release", "bulk_copy(buf[s, 0]", "R"}, {"ring-expect", "assert tag(x)", "R"},
      {"ring-bytes", "assert tag(x)", "R"},         {"ring-early-release", "bulk_copy(buf[s, 0]", "R"},
  };
  for (size_t i = 0; i < sizeof bugs / sizeof bugs[0]; i++) {
#ifdef __SANITIZE_ADDRESS__
    /* several times slower under the sanitizers (make asan): the race, the
     * bounds and the reset cases there; the plain build checks them all */
    if (!strstr(bugs[i].mut, "war") && !strstr(bugs[i].mut, "oob") &&
        !strstr(bugs[i].mut, "noreset"))
      continue;
    if (!strcmp(bugs[i].sym, "skv"))
      continue;
#endif
    int line;
    char *src = tu_mutate_at(bugs[i].mut, bugs[i].line, &line);
    if (!src)
      continue;
    ag_diags d;
    int rc;
    ag_tile_report *r = run(src, bugs[i].sym, NULL, &d, &rc);
    CHECK_EQ_INT(rc, 0);
    int hit = 0;
    for (int k = 0; r && k < r->nasserts; k++)
      if (r->asserts[k].status == AG_TILE_VIOLATED && r->asserts[k].line == line)
        hit = 1;
    if (!hit)
      fprintf(stderr, "%s --symbolic %s: line %d not refuted\n", bugs[i].mut, bugs[i].sym, line);
    CHECK(hit);
    CHECK(r && r->nloops >= 1);
    release(r, &d);
    free(src);
  }
}

/* Summaries against the unrolled truth, on small programs a soundness
 * audit wrote (each was proved under a summary while a size that unrolls
 * refuted it): a read under a condition on the iteration, or before the loop,
 * overtaken by a later iteration's write with no barrier between (the live
 * reads were dropped before the replayed iteration); and a symbolic trip
 * count below the prefix, whose exit state (registers, live reads) was not
 * joined into the state after the loop. Each size gives the verdict the
 * unrolled check gives; "sym" is --symbolic K. */
typedef struct sumcase {
  const char *name, *src;
  struct {
    const char *size; /* NULL: --symbolic K */
    int violated;
  } at[5];
} sumcase;

/* the body of the nested-* programs: a 2-stage ring in a k loop inside a
 * tile loop, a barrier between each stage's write and its read */
#define NESTED_RING                                                          \
  "@threads(128)\n"                                                          \
  "def k(A: Tensor(128, f32), O: Tensor(128, f32), K: const = 8):\n"         \
  "    tid = threadIdx.x\n"                                                  \
  "    s = make_shared((2, 128), f32)\n"                                     \
  "    for j in range(K):\n"                                                 \
  "        for kt in range(K):\n"                                            \
  "            s[kt % 2, tid] = A[tid]\n"                                    \
  "            syncthreads()\n"                                              \
  "            x = s[kt % 2, (tid + 1) % 128]\n"                             \
  "            O[tid] = x\n"

static const sumcase sumcases[] = {
    {"war1",
      "@threads(128)\n"
      "def k(A: Tensor(128, f32), O: Tensor(128, f32), K: const = 8):\n"
      "    tid = threadIdx.x\n"
      "    s = make_shared((128,), f32)\n"
      "    s[tid] = A[tid]\n"
      "    syncthreads()\n"
      "    for kt in range(K):\n"
      "        if kt == 0:\n"
      "            x = s[(tid + 1) % 128]\n"
      "            O[tid] = x\n"
      "        if kt >= 5:\n"
      "            s[tid] = A[tid]\n"
      "    syncthreads()\n",
     {{"K=8", 1}, {"K=64", 1}, {"K=8192", 1}, {NULL, 1}, {"K=1", 0}}},
    {"war2",
      "@threads(128)\n"
      "def k(A: Tensor(128, f32), O: Tensor(128, f32), K: const = 8):\n"
      "    tid = threadIdx.x\n"
      "    s = make_shared((128,), f32)\n"
      "    s[tid] = A[tid]\n"
      "    syncthreads()\n"
      "    x = s[(tid + 1) % 128]\n"
      "    O[tid] = x\n"
      "    for kt in range(K):\n"
      "        if kt == K - 1:\n"
      "            s[tid] = A[tid]\n"
      "    syncthreads()\n",
     {{"K=8", 1}, {"K=64", 1}, {"K=8192", 1}, {NULL, 1}, {"K=1", 1}}},
    {"war3",
      "@threads(128)\n"
      "def k(A: Tensor(128, f32), O: Tensor(128, 3, f32), K: const = 8):\n"
      "    tid = threadIdx.x\n"
      "    s = make_shared((128,), f32)\n"
      "    s[tid] = A[tid]\n"
      "    for kt in range(K):\n"
      "        syncthreads()\n"
      "        if kt == 0:\n"
      "            x = s[(tid + 1) % 128]\n"
      "            O[tid, 0] = x\n"
      "        j = kt % 3\n"
      "    s[tid] = A[tid]\n"
      "    syncthreads()\n",
     {{"K=8", 0}, {"K=64", 0}, {"K=8192", 0}, {NULL, 1}, {"K=1", 1}}},
    {"reg1",
      "@threads(128)\n"
      "def k(A: Tensor(128, 4, f32), O: Tensor(128, 2, f32), K: const = 8):\n"
      "    T_A = A[m, k] -> (m, k)\n"
      "    tid = threadIdx.x\n"
      "    r = make_local((2,), f32)\n"
      "    fill(r, 0)\n"
      "    for kt in range(K):\n"
      "        if kt == 0:\n"
      "            r[0] = A[tid, 0]\n"
      "            r[1] = A[tid, 2]\n"
      "        if kt == 1:\n"
      "            r[0] = A[tid, 1]\n"
      "    assert tag(r[0]) == (tid, 1)\n"
      "    O[tid, 0] = r[0]\n"
      "    O[tid, 1] = r[1]\n",
     {{"K=8", 0}, {"K=64", 0}, {"K=8192", 0}, {NULL, 1}, {"K=1", 1}}},
    /* a stage index of a 3-stage ring with an offset that is negative in the
     * first summarized iterations (kt - 5 for kt = 2..4): it must not fold
     * to the remainder of a nonnegative value (the fold is sound only where
     * kt + k stays in [0, 2^32)) */
    {"fold-neg",
      "@threads(32)\n"
      "def k(A: Tensor(32, f32), K: const = 8):\n"
      "    for kt in range(K):\n"
      "        j = kt % 3\n"
      "        if kt >= 2:\n"
      "            assert (kt - 5) % 3 == (kt + 1) % 3\n",
     {{"K=8", 1}, {"K=64", 1}, {"K=8192", 1}, {NULL, 1}, {"K=2", 0}}},
    /* a stage refilled on three iterations of four: iteration 4n + 3 reads the data of 4n + 1 */
    {"stage-skipped",
      "@threads(32)\n"
      "def k(A: Tensor(K * 32, f32), K: const = 8):\n"
      "    T = A[i] -> (i,)\n"
      "    tid = threadIdx.x\n"
      "    s = make_shared((2, 32), f32)\n"
      "    for kt in range(K):\n"
      "        st = kt % 2\n"
      "        if kt % 4 != 3:\n"
      "            reset(s[st, :])\n"
      "            s[st, tid] = A[kt * 32 + tid]\n"
      "        syncthreads()\n"
      "        assert tag(s[st, tid]) == (kt * 32 + tid,)\n"
      "        syncthreads()\n",
     {{"K=8", 1}, {"K=64", 1}, {"K=8192", 1}, {NULL, 1}, {"K=3", 0}}},
    /* the refill skipped on iteration 5 only (an if on kt the summary cannot decide) */
    {"if-on-kt",
      "@threads(32)\n"
      "def k(A: Tensor(K * 32, f32), K: const = 8):\n"
      "    T = A[i] -> (i,)\n"
      "    tid = threadIdx.x\n"
      "    s = make_shared((2, 32), f32)\n"
      "    for kt in range(K):\n"
      "        st = kt % 2\n"
      "        if kt != 5:\n"
      "            reset(s[st, :])\n"
      "            s[st, tid] = A[kt * 32 + tid]\n"
      "        syncthreads()\n"
      "        assert tag(s[st, tid]) == (kt * 32 + tid,)\n"
      "        syncthreads()\n",
     {{"K=8", 1}, {"K=64", 1}, {"K=8192", 1}, {NULL, 1}, {"K=4", 0}}},
    /* the refill in a nested constant loop, under a condition on its variable */
    {"nested",
      "@threads(32)\n"
      "def k(A: Tensor(K * 32, f32), K: const = 8):\n"
      "    T = A[i] -> (i,)\n"
      "    tid = threadIdx.x\n"
      "    s = make_shared((2, 32), f32)\n"
      "    for kt in range(K):\n"
      "        st = kt % 2\n"
      "        reset(s[st, :])\n"
      "        for i in range(2):\n"
      "            if i == 1:\n"
      "                s[st, tid] = A[kt * 32 + tid]\n"
      "        syncthreads()\n"
      "        for i in range(2):\n"
      "            assert tag(s[st, tid]) == (kt * 32 + tid,)\n"
      "        syncthreads()\n",
     {{"K=8", 0}, {"K=64", 0}, {"K=8192", 0}, {NULL, 0}, {"K=3", 0}}},
    /* no trailing barrier, a 2-stage ring: the next refill of a stage is after a barrier (race-free) */
    {"no-trailing-barrier",
      "@threads(32)\n"
      "def k(A: Tensor(K * 32, f32), K: const = 8):\n"
      "    T = A[i] -> (i,)\n"
      "    tid = threadIdx.x\n"
      "    s = make_shared((2, 32), f32)\n"
      "    for kt in range(K):\n"
      "        st = kt % 2\n"
      "        reset(s[st, :])\n"
      "        s[st, tid] = A[kt * 32 + tid]\n"
      "        syncthreads()\n"
      "        assert tag(s[st, (tid + 1) % 32]) == (kt * 32 + (tid + 1) % 32,)\n",
     {{"K=8", 0}, {"K=64", 0}, {"K=8192", 0}, {NULL, 0}, {"K=3", 0}}},
    /* a write-after-write race between iterations 3 and 4 (no barrier in the loop) */
    {"waw-across",
      "@threads(32)\n"
      "def k(A: Tensor(K * 32, f32), K: const = 8):\n"
      "    T = A[i] -> (i,)\n"
      "    tid = threadIdx.x\n"
      "    s = make_shared((2, 32), f32)\n"
      "    for kt in range(K):\n"
      "        st = kt % 2\n"
      "        if kt == 3:\n"
      "            s[0, (tid + 1) % 32] = A[tid]\n"
      "        if kt == 4:\n"
      "            s[0, tid] = A[tid]\n",
     {{"K=8", 1}, {"K=64", 1}, {"K=8192", 1}, {NULL, 1}, {"K=4", 0}}},
    /* a remainder by a modulus that does not divide the ring's period (17 is
     * over the longest ring, so P = 2) is not a stage index */
    {"fold-divisor",
      "@threads(32)\n"
      "def k(A: Tensor(32, f32), K: const = 8):\n"
      "    for kt in range(K):\n"
      "        j = kt % 2\n"
      "        assert kt % 17 == kt % 2\n",
     {{"K=8", 1}, {"K=64", 1}, {"K=8192", 1}, {NULL, 1}, {"K=2", 0}}},
    {"fold-pos",
      "@threads(32)\n"
      "def k(A: Tensor(32, f32), K: const = 8):\n"
      "    for kt in range(K):\n"
      "        j = kt % 3\n"
      "        if kt >= 5:\n"
      "            assert (kt - 5) % 3 == (kt + 1) % 3\n"
      "            assert (kt + 7) % 3 != (kt + 2) % 3\n"
      "            assert kt * 2 % 3 == kt % 3 * 2 % 3\n",
     {{"K=8", 0}, {"K=64", 0}, {"K=8192", 0}, {NULL, 0}, {"K=6", 0}}},
    /* Nested summaries (issue 23): an outer loop with a symbolic bound
     * around an inner one with a symbolic bound, both summarized under
     * --symbolic K; at K = 20 the outer loop is summarized around the
     * unrolled inner one, at small K both are unrolled. A 2-stage ring
     * with a barrier after the read of each stage: race-free. */
    {"nested-sync",
      NESTED_RING
      "            syncthreads()\n",
     {{"K=2", 0}, {"K=3", 0}, {"K=20", 0}, {NULL, 0}, {"K=1", 0}}},
    /* without the second barrier: the last read of tile j (stage (K - 1) % 2)
     * meets the first write of tile j + 1 (stage 0) when K is odd, and only
     * across the outer loop's iterations */
    {"nested-across",
      NESTED_RING,
     {{"K=3", 1}, {"K=4", 0}, {"K=21", 1}, {NULL, 1}, {"K=20", 0}}},
    /* one stage: the next inner iteration's write meets the read */
    {"nested-inner",
      "@threads(128)\n"
      "def k(A: Tensor(128, f32), O: Tensor(128, f32), K: const = 8):\n"
      "    tid = threadIdx.x\n"
      "    s = make_shared((128,), f32)\n"
      "    for j in range(K):\n"
      "        for kt in range(K):\n"
      "            s[tid] = A[tid]\n"
      "            syncthreads()\n"
      "            x = s[(tid + 1) % 128]\n"
      "            O[tid] = x\n",
     {{"K=2", 1}, {"K=3", 1}, {"K=20", 1}, {NULL, 1}, {"K=1", 0}}},
    /* a barrier under a condition on the outer iteration: the inner
     * summary decides it only with the outer summary's facts (j < K) */
    {"nested-outer-facts",
      NESTED_RING
      "            if j < K:\n"
      "                syncthreads()\n",
     {{"K=2", 0}, {"K=3", 0}, {"K=20", 0}, {NULL, 0}, {"K=1", 0}}},
};

/* An mbarrier ring (a bulk copy per stage, full and empty barriers, the
 * tag of each element read checked) in a k loop inside a tile loop, both
 * with the trip count K: nested summaries (issue 23). The ring's parities
 * start over with every tile (K a multiple of 2 * S): the state of both
 * barriers after the inner loop is tracked, proved for every K. The
 * consumer's wait on the wrong parity of `full` leaves phases half done at
 * the inner loop's end (its copies not waited for): refuted unrolled, and
 * under --symbolic K refuted too (the check stops at the first use of the
 * barrier the summary cannot track, after the violation of the first tile:
 * refute, don't refuse); with K a multiple of S only the phases do not start
 * over: refused naming the barrier (a correct kernel is never refuted). */
static const char ring_nested_src[] =
      "S = 2\n"
      "C = 32\n"
      "\n"
      "@threads(32)\n"
      "@grid(1)\n"
      "def ring2(X: Tensor(K * K, 32, f32), Y: Tensor(K * K, 32, f32), K: const = 8):\n"
      "    assume K % 4 == 0\n"
      "    assume K >= 4\n"
      "    assume K <= 64\n"
      "    T_X = X[r, c] -> (r, c)\n"
      "    full = make_shared((S,), u64)\n"
      "    empty = make_shared((S,), u64)\n"
      "    buf = make_shared((S, C), f32)\n"
      "    t = threadIdx.x\n"
      "    if t == 0:\n"
      "        for s in range(S):\n"
      "            mbar_init(full[s], 1)\n"
      "            mbar_init(empty[s], C)\n"
      "        fence_mbar_init()\n"
      "    syncthreads()\n"
      "    for j in range(K):\n"
      "        for i in range(K):\n"
      "            s = i % S\n"
      "            ph = i / S % 2\n"
      "            reset(buf[s, :])\n"
      "            if t == 0:\n"
      "                mbar_wait(empty[s], 1 - ph)\n"
      "                mbar_expect_tx(full[s], C * 4)\n"
      "                bulk_copy(buf[s, 0], X[j * K + i, 0], C * 4, full[s])\n"
      "            mbar_wait(full[s], ph)\n"
      "            x = buf[s, t]\n"
      "            assert tag(x) == (j * K + i, t)\n"
      "            Y[j * K + i, t] = x * 2.0\n"
      "            mbar_arrive(empty[s])\n";

TEST(test_nested_ring) {
  ag_diags d;
  int rc;
  ag_tile_report *r = run(ring_nested_src, "K", NULL, &d, &rc);
  CHECK_EQ_INT(rc, 0);
  CHECK(r && r->nasserts >= 1 && !first_violated(r));
  CHECK(r && r->nloops == 2); /* each loop listed once */
  release(r, &d);
  char *bug = edit(ring_nested_src, "mbar_wait(full[s], ph)", "mbar_wait(full[s], 1 - ph)");
  char *odd = edit(ring_nested_src, "assume K % 4 == 0", "assume K % 2 == 0");
  CHECK(bug && odd);
  for (int k = 0; bug && k < 2; k++) {
    r = run(bug, k ? NULL : "K", k ? "K=8" : NULL, &d, &rc);
    CHECK_EQ_INT(rc, 0);
    const ag_tile_assert_result *a = first_violated(r);
    CHECK(a != NULL);
    if (!k) {
      /* refuted, not refused: the wait after the inner loop stops the check
       * (its barrier is not tracked), and the tag assertion is violated in
       * the first tile's first k-tile, with the thread and the iterations */
      CHECK(d.items.n >= 1 && strstr(d.items.v[0].msg, "after the summarized loop") &&
            strstr(d.items.v[0].msg, "the check stopped here") &&
            d.items.v[0].sev == AG_SEV_WARNING);
      a = r ? tu_find(r, tu_line_of(ring_nested_src, "assert tag(x)")) : NULL;
      CHECK(a && a->status == AG_TILE_VIOLATED && a->cex && a->cex->thread >= 0 &&
            tu_loop(a->cex, "j") == 0 && tu_loop(a->cex, "i") >= 0 && a->cex->lhs.via);
    }
    release(r, &d);
  }
  if (odd) {
    r = run(odd, "K", NULL, &d, &rc);
    CHECK_EQ_INT(rc, AG_EPARSE);
    CHECK(d.items.n >= 1 && strstr(d.items.v[0].msg, "its phase there is not tracked"));
    release(r, &d);
  }
  free(bug);
  free(odd);
}

TEST(test_summary_matches_unrolled) {
  for (size_t i = 0; i < sizeof sumcases / sizeof sumcases[0]; i++)
    for (int k = 0; k < 5; k++) {
      const char *size = sumcases[i].at[k].size;
      ag_diags d;
      int rc;
      ag_tile_report *r = run(sumcases[i].src, size ? NULL : "K", size, &d, &rc);
      CHECK_EQ_INT(rc, 0);
      int violated = first_violated(r) != NULL;
      if (violated != sumcases[i].at[k].violated)
        fprintf(stderr, "%s at %s: %s, expected %s\n", sumcases[i].name,
                size ? size : "symbolic K", violated ? "violated" : "proved",
                sumcases[i].at[k].violated ? "violated" : "proved");
      CHECK_EQ_INT(violated, sumcases[i].at[k].violated);
      release(r, &d);
    }
}

/* gemm.tile with a 3-stage cp.async ring: stage kt % 3 is read while k-tile
 * kt + 2 is prefetched into stage (kt + 2) % 3 (the one read two iterations
 * ago). Its stage indices fold over the summarized iteration kt = 3q + r
 * (once refused under --symbolic K: "reset() needs a tile at a compile-time
 * offset"; at K = 8192 it was unrolled and hit the memory limit). */
static char *ring3_src(void) {
  static const char *const edits[][2] = {
      {"make_shared((2, BM, 4), u128)", "make_shared((3, BM, 4), u128)"},
      {"make_shared((2, BN, 4), u128)", "make_shared((3, BN, 4), u128)"},
      {"    for i in range(2):\n        r = i * 32 + tid / 4\n        c = tid % 4\n"
       "        cp_async(sA[0, r, c ^ (r / 2 % 4)], gA[bm, r, 0, c])\n"
       "        cp_async(sB[0, r, c ^ (r / 2 % 4)], gB[bn, r, 0, c])\n    cp_async_commit()\n",
       "    for p in range(2):\n        if p < K / BK:\n            for i in range(2):\n"
       "                r = i * 32 + tid / 4\n                c = tid % 4\n"
       "                cp_async(sA[p, r, c ^ (r / 2 % 4)], gA[bm, r, p, c])\n"
       "                cp_async(sB[p, r, c ^ (r / 2 % 4)], gB[bn, r, p, c])\n"
       "        cp_async_commit()\n"},
      {"st = kt % 2", "st = kt % 3"},
      {"if kt + 1 < K / BK:", "if kt + 2 < K / BK:"},
      {"nst = (kt + 1) % 2", "nst = (kt + 2) % 3"},
      {"gA[bm, r, kt + 1, c]", "gA[bm, r, kt + 2, c]"},
      {"gB[bn, r, kt + 1, c]", "gB[bn, r, kt + 2, c]"},
      {"cp_async_wait(1)", "cp_async_wait(2)"},
      {"sA.view((2, BM, 32), bf16)", "sA.view((3, BM, 32), bf16)"},
      {"sB.view((2, BN, 32), bf16)", "sB.view((3, BN, 32), bf16)"},
  };
  char *src = gemm_src();
  for (size_t i = 0; src && i < sizeof edits / sizeof edits[0]; i++) {
    char *n = edit(src, edits[i][0], edits[i][1]);
    free(src);
    src = n;
  }
  return src;
}

TEST(test_ring3) {
  char *src = ring3_src();
  if (!src)
    return;
  /* the prefetch into the stage being read (kt + 1 is the next k-tile's
   * stage, which iteration kt + 1 still needs) */
  char *bug = edit(src, "nst = (kt + 2) % 3", "nst = (kt + 1) % 3");
  for (int k = 0; k < NSIZES; k++)
    for (int b = 0; b < 2; b++) {
      ag_diags d;
      int rc;
      ag_tile_report *r = run_size(b ? bug : src, k, &d, &rc);
      if (rc)
        for (size_t i = 0; i < d.items.n; i++)
          fprintf(stderr, "ring3 %s: %s\n", size_set[k] ? size_set[k] : "symbolic K",
                  d.items.v[i].msg);
      CHECK_EQ_INT(rc, 0);
      CHECK(r && ag_tile_report_ok(r) == !b);
      CHECK(r && r->nloops == size_loops(k)); /* summarized, not unrolled */
      if (r && r->nloops == 1)
        CHECK_CONTAINS(r->loops[0].how, "3*q + r for each stage r < 3");
      const ag_tile_assert_result *a = first_violated(r);
      if (b && a && a->cex) {
        int64_t kt = tu_loop(a->cex, "kt");
        CHECK(kt >= 0 && kt < size_K(k, a->cex) / 32);
      }
      release(r, &d);
    }
  free(bug);
  free(src);
}

/* --set K=8192 is summarized: checked in about the time of K = 128. */
TEST(test_long_constant_loop) {
  char *src = gemm_src();
  if (!src)
    return;
  ag_diags d;
  int rc;
  double t0 = cpu_s();
  ag_tile_report *r = run(src, NULL, "K=8192", &d, &rc);
  double dt = cpu_s() - t0;
  CHECK_EQ_INT(rc, 0);
  CHECK(r && ag_tile_report_ok(r) && r->nloops == 1);
  fprintf(stderr, "gemm.tile --set K=8192: %.2f s CPU\n", dt);
  CHECK(dt < 4.0 * TIME_SCALE); /* 1.0 s on the 2-core machine; unrolled it was refused */
  release(r, &d);
  /* --unroll: the same loop unrolled is over the write limit, refused */
  ag_tile_check_opts o;
  memset(&o, 0, sizeof o);
  const char *defs[1] = {"K=8192"};
  o.defines = defs;
  o.ndefines = 1;
  o.unroll = 1;
  ag_diags_init(&d);
  r = tu_check(src, "gemm.tile", &d, &rc, &o);
  CHECK_EQ_INT(rc, AG_EPARSE);
  release(r, &d);
  free(src);
}

/* The runaway inputs of issue 18 answer at once: a 10^8-iteration loop is
 * summarized; one past 2^31 iterations is refused. */
TEST(test_runaway_loops) {
  static const struct {
    const char *text;
    int rc;
  } cases[] = {
      {"@threads(32)\ndef k(A: Tensor(M, f32)):\n    assume M >= 32\n    tid = threadIdx.x\n"
       "    s = make_shared((32,), f32)\n    for kt in range(100000000):\n        reset(s)\n"
       "        s[tid] = A[tid]\n        syncthreads()\n        assert tag(s[tid]) == (tid,)\n"
       "        syncthreads()\n",
       0},
      {"@threads(32)\ndef k(A: Tensor(M, f32)):\n    K = 128\n    BK = 32\n"
       "    for kt in range(K << BK):\n        x = kt\n",
       AG_EPARSE},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ag_diags d;
    int rc;
    double t0 = cpu_s();
    ag_tile_report *r = run(cases[i].text, NULL, NULL, &d, &rc);
    double dt = cpu_s() - t0;
    CHECK_EQ_INT(rc, cases[i].rc);
    CHECK(dt < 1.0 * TIME_SCALE);
    if (!rc)
      CHECK(r && ag_tile_report_ok(r) && r->nloops == 1);
    release(r, &d);
  }
}

#define HEAD "@threads(32)\ndef k(A: Tensor(M, f32), B: Tensor(M, f32)):\n" \
             "    T_A = A[m] -> (m,)\n    tid = threadIdx.x\n"

/* HEAD + body checked with no option */
static ag_tile_report *run_body(const char *body, ag_diags *d, int *rc) {
  char src[1024];
  snprintf(src, sizeof src, "%s%s", HEAD, body);
  return run(src, NULL, NULL, d, rc);
}

/* Loops the summary cannot cover soundly. */
TEST(test_not_summarizable) {
  static const struct {
    const char *body, *msg;
  } cases[] = {
      /* a barrier under a condition on the iteration no prefix decides */
      {"    for i in range(M):\n        if i == 7:\n            syncthreads()\n",
       "syncthreads"},
      /* a stage index with a ring longer than the summary follows */
      {"    s = make_shared((32, 32), f32)\n    for i in range(M):\n"
       "        s[i % 32, tid] = A[i]\n",
       "ring of stages"},
      /* a name carried from the previous iteration */
      {"    x = 0\n    for i in range(M):\n        assert x < M\n        x = i\n",
       "'x' was assigned in loop"},
      /* a step other than 1 */
      {"    for i in range(0, M, 2):\n        pass\n", "step other than 1"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ag_diags d;
    int rc;
    ag_tile_report *r = run_body(cases[i].body, &d, &rc);
    CHECK_EQ_INT(rc, AG_EPARSE);
    CHECK(d.items.n >= 1);
    if (d.items.n >= 1) {
      if (!strstr(d.items.v[0].msg, cases[i].msg))
        fprintf(stderr, "case %zu: %s\n", i, d.items.v[0].msg);
      CHECK_CONTAINS(d.items.v[0].msg, "loop 'for i in range(...)'");
      CHECK_CONTAINS(d.items.v[0].msg, cases[i].msg);
      CHECK_EQ_INT(d.items.v[0].line, 5 + (i == 1 || i == 2));
    }
    release(r, &d);
  }
  /* the same loops with constant bounds are unrolled and checked */
  static const char *const unrolled[] = {
      "    for i in range(20):\n        if i == 7:\n            syncthreads()\n"
      "        assert tid < 32\n",
      "    assume M >= 32\n    s = make_shared((32, 32), f32)\n    for i in range(32):\n"
      "        s[i % 32, tid] = A[tid]\n        assert tag(s[i % 32, tid]) == (tid,)\n",
  };
  for (size_t i = 0; i < sizeof unrolled / sizeof unrolled[0]; i++) {
    ag_diags d;
    int rc;
    ag_tile_report *r = run_body(unrolled[i], &d, &rc);
    CHECK_EQ_INT(rc, 0);
    CHECK(r && ag_tile_report_ok(r) && r->nloops == 0);
    release(r, &d);
  }
}

/* What a summary does not keep is never trusted: a register carried from
 * the previous iteration, data older than the replayed iterations. */
TEST(test_summary_soundness) {
  static const char *const wrong[] = {
      /* r holds A[i - 1], not A[i] */
      "    r = make_local((1,), f32)\n    fill(r, 0)\n    for i in range(M):\n"
      "        if i > 0:\n            assert tag(r[0]) == (i,)\n        r[0] = A[i]\n",
      /* shared data of the previous iteration (and, with no reset, of every
       * earlier one) read as this iteration's */
      "    s = make_shared((32,), f32)\n    for i in range(M):\n"
      "        assert tag(s[tid]) == (i,)\n        syncthreads()\n        s[tid] = A[i]\n"
      "        syncthreads()\n",
  };
  for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
    ag_diags d;
    int rc;
    ag_tile_report *r = run_body(wrong[i], &d, &rc);
    CHECK_EQ_INT(rc, 0);
    CHECK(r && !ag_tile_report_ok(r));
    CHECK(r && r->nloops == 1);
    const ag_tile_assert_result *a = first_violated(r);
    CHECK(a != NULL && a->cex != NULL);
    if (a && a->cex)
      CHECK(tu_loop(a->cex, "i") >= 0 && tu_loop(a->cex, "i") < tu_size(a->cex, "M"));
    release(r, &d);
  }
  /* a correct loop over a symbolic range: proved, with the accesses in
   * bounds (i < M) */
  const char *ok = HEAD "    s = make_shared((2, 32), f32)\n    for i in range(M):\n"
                        "        reset(s[i % 2, :])\n        s[i % 2, tid] = A[i]\n        syncthreads()\n"
                        "        assert tag(s[i % 2, tid]) == (i,)\n        syncthreads()\n";
  ag_diags d;
  int rc;
  const ag_tile_assert_result *a;
  ag_tile_report *r = run(ok, NULL, NULL, &d, &rc);
  CHECK_EQ_INT(rc, 0);
  CHECK(r && ag_tile_report_ok(r) && r->nloops == 1);
  release(r, &d);
  /* a reset under a condition the summary cannot decide happens only when
   * it holds: in the last iteration the older data is still there */
  r = run(HEAD "    s = make_shared((32,), f32)\n    for i in range(M):\n        if i + 1 < M:\n"
               "            reset(s)\n        s[tid] = A[i]\n        syncthreads()\n"
               "        assert tag(s[tid]) == (i,)\n        syncthreads()\n",
          NULL, NULL, &d, &rc);
  CHECK_EQ_INT(rc, 0);
  a = first_violated(r);
  CHECK(a != NULL && a->cex && !a->bounds);
  if (a && a->cex)
    CHECK_EQ_INT(tu_loop(a->cex, "i"), tu_size(a->cex, "M") - 1);
  release(r, &d);
  /* a register set in iteration 0 only: the summary unrolls one more
   * iteration so that every later head has it (proved, not a join) */
  r = run(HEAD "    assume M >= 2\n    r = make_local((1,), f32)\n    r[0] = A[0]\n"
               "    for i in range(M):\n        if i == 0:\n            r[0] = A[1]\n"
               "        assert tag(r[0]) == (1,)\n",
          NULL, NULL, &d, &rc);
  CHECK_EQ_INT(rc, 0);
  CHECK(r && ag_tile_report_ok(r) && r->nloops == 1);
  if (r && r->nloops == 1)
    CHECK_CONTAINS(r->loops[0].how, "iterations 0 .. 1 unrolled");
  release(r, &d);
  /* a prefix iteration is checked only when it runs (M >= 5 here) */
  r = run(HEAD "    assume M >= 4\n    for i in range(M - 4):\n        x = A[i + 4]\n"
               "        assert tag(x) == (i + 4,)\n",
          NULL, NULL, &d, &rc);
  CHECK_EQ_INT(rc, 0);
  CHECK(r && ag_tile_report_ok(r) && r->nloops == 1);
  release(r, &d);
  /* and the same with A[i + 1]: out of bounds in the last iteration */
  char *oob = edit(ok, "= A[i]", "= A[i + 1]");
  r = run(oob, NULL, NULL, &d, &rc);
  CHECK_EQ_INT(rc, 0);
  a = first_violated(r);
  CHECK(a != NULL && a->bounds && a->cex);
  if (a && a->cex)
    CHECK_EQ_INT(tu_loop(a->cex, "i"), tu_size(a->cex, "M") - 1);
  release(r, &d);
  free(oob);
}

RUN_TESTS(T(test_symbolic_gemm), T(test_last_iteration_bug), T(test_race_across_summarized_iterations),
          T(test_planted_bugs_summarized), T(test_summary_matches_unrolled), T(test_long_constant_loop),
          T(test_not_summarizable), T(test_summary_soundness), T(test_runaway_loops),
          T(test_ring3), T(test_nested_ring))
