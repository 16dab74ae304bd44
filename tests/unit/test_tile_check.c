/*
 * test_tile_check.c — the tile checker: the examples are proved (no false
 * alarm); every planted bug is caught with the right counterexample (which
 * assertion, which data, which reason, a consistent thread and block); the
 * lattice semantics on small programs (bottom for constants, join with
 * bottom, top for two writes, reset, byte reassembly, races, guards);
 * malformed programs give a diagnostic at the right place; the JSON report.
 */
#include "argus/tile_check.h"
#include "check.h"
#include "tile_util.h"

#include <sys/resource.h>
#include <time.h>

/* The resource limits' time bounds hold for the plain build; under
 * AddressSanitizer (make asan) the same work runs several times slower. */
#ifdef __SANITIZE_ADDRESS__
#define LIMIT_TIME_SCALE 5.0
#else
#define LIMIT_TIME_SCALE 1.0
#endif

static ag_tile_report *check_file(const char *rel, ag_diags *d, int *rc) {
  char *src = tu_read(rel, NULL);
  if (!src) {
    *rc = AG_EIO;
    return NULL;
  }
  ag_tile_report *r = tu_check(src, rel, d, rc, NULL);
  ag_free(src);
  return r;
}

TEST(test_examples_proved) {
  static const struct {
    const char *file;
    int nasserts;
    int64_t instances; /* of the largest assertion */
  } ex[] = {{"examples/tile/gemm.tile", 4, 128}, {"examples/tile/attention.tile", 4, 256}};
  for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
    ag_diags d;
    ag_diags_init(&d);
    int rc;
    ag_tile_report *r = check_file(ex[i].file, &d, &rc);
    CHECK_EQ_INT(rc, 0);
    if (!r) {
      ag_str s = AG_STR_INIT;
      ag_diags_format(&d, &s);
      fprintf(stderr, "%s", ag_str_cstr(&s));
      ag_str_release(&s);
      ag_diags_release(&d);
      continue;
    }
    CHECK_EQ_INT(r->nasserts, ex[i].nasserts);
    int64_t most = 0;
    for (int k = 0; k < r->nasserts; k++) {
      CHECK_EQ_INT(r->asserts[k].status, AG_TILE_PROVED);
      CHECK(r->asserts[k].cex == NULL);
      if (r->asserts[k].instances > most)
        most = r->asserts[k].instances;
    }
    CHECK_EQ_INT(most, ex[i].instances);
    CHECK(ag_tile_report_ok(r));
    ag_tile_report_free(r);
    ag_diags_release(&d);
  }
}

/* Parses "(a, b, c)" into v; returns the count. */
static int tag_vals(const char *t, int64_t *v, int max) {
  int n = 0;
  if (!t || *t != '(')
    return 0;
  const char *p = t + 1;
  while (*p && *p != ')' && n < max) {
    v[n++] = strtoll(p, (char **)&p, 10);
    while (*p == ',' || *p == ' ')
      p++;
  }
  return n;
}

typedef struct bug {
  const char *mut;
  const char *assert_text; /* a substring of the violated assertion's line */
  const char *reason;      /* substring of the counterexample's reason */
  const char *lhs_elem;    /* prefix of the left side's data element, or NULL */
  const char *rhs_elem;
  const char *via;         /* substring of the left or right 'via' */
  int differ_comp;         /* a tag component that must differ (-1: any / none) */
  int same_comp;           /* a tag component that must agree (-1: none) */
} bug;

static const bug bugs[] = {
    {"gemm-stage", "assert tag(fa[e])", "not settled", NULL, NULL, "not been waited", -1, -1},
    {"gemm-swizzle", "assert tag(fa[e])", "the tags differ", "A[", NULL, "'sA'", 1, 0},
    {"gemm-ldmatrix", "assert tag(fa[e])", "the tags differ", "A[", NULL, "'sA'", 0, 1},
    {"gemm-overlap", "assert tag(sAh[", "two writes", "", NULL, "'sA'", -1, -1},
    {"gemm-trans", "assert tag(fb[e])", "the tags differ", "B[", NULL, "'sB'", -1, -1},
    {"gemm-nosync", "assert tag(fa[e])", "not settled", NULL, NULL, "no barrier", -1, -1},
    {"attention-transpose", "assert tag(fp[e])", "the tags differ", "rs[", "V[", "'smem'", 2, 1},
    {"attention-stage", "assert tag(fq[e])", "right side is top", "Q[", NULL, "not been waited", -1,
     -1},
    {"attention-swizzle", "assert tag(fq[e])", "the tags differ", "Q[", "K[", "'smem'", -1, 1},
    {"attention-overlap", "assert tag(sVt[st, 2 * (u % (d / 2)), 4", "top", NULL, NULL, "'smem'", -1,
     -1},
    {"attention-ldmatrix", "assert tag(fq[e])", "the tags differ", "Q[", "K[", "'smem'", 2, 1},
    {"gemm-oob", "gA[bm + 1, r, 0, c]", "out of bounds: index 0 of 'gA'", NULL, NULL, "", -1, -1},
    {"gemm-alias", "sA[0, r + 32,", "out of bounds: index 1 of 'sA'", NULL, NULL, "", -1, -1},
    {"gemm-war", "cp_async(sA[nst", "write-after-read race: thread", NULL, NULL, "'sA'", -1, -1},
    {"attention-war", "cp_async(sKw[ls, r", "write-after-read race: thread", NULL, NULL, "'smem'",
     -1, -1},
    {"gemm-waw", "cp_async(sA[0, r, (c + 1) % 4", "write-after-write race: thread", NULL, NULL,
     "'sA'", -1, -1},
    {"gemm-noreset", "assert tag(sAh[", "add reset(sA[nst, :, :]) after the barrier", "A[", NULL,
     "'sA'", -1, -1},
    /* the mbarrier ring (examples/tile/ring_bulk.tile) */
    /* at row 0 no wait saw the copy's phase; later, the phase before may still be in flight
     * when the next copy on the barrier is issued */
    {"ring-parity", "assert tag(x)", "not settled", NULL, NULL, "of mbarrier 'full[", -1, -1},
    {"ring-parity", "bulk_copy(buf[s, 0]", "read-after-write race: thread", NULL, NULL,
     "'buf'", -1, -1},
    {"ring-stage", "assert tag(x)", "no data reaches it", NULL, NULL, "'buf' byte 512", -1, -1},
    {"ring-release", "bulk_copy(buf[s, 0]", "write-after-read race: thread 0's bulk copy", NULL,
     NULL, "'buf'", -1, -1},
    {"ring-expect", "assert tag(x)", "not settled", NULL, NULL, "may land after its phase", -1, -1},
    {"ring-bytes", "assert tag(x)", "not settled", NULL, NULL, "may land after its phase", -1, -1},
    {"ring-early-release", "bulk_copy(buf[s, 0]", "write-after-read race: thread 0's bulk copy",
     NULL, NULL, "'buf'", -1, -1},
};

TEST(test_planted_bugs) {
  for (size_t i = 0; i < sizeof bugs / sizeof bugs[0]; i++) {
    const bug *b = &bugs[i];
    char *src = tu_mutate(b->mut);
    CHECK(src != NULL);
    if (!src)
      continue;
    int line = tu_line_of(src, b->assert_text);
    CHECK(line > 0);
    ag_diags d;
    ag_diags_init(&d);
    int rc;
    ag_tile_report *r = tu_check(src, b->mut, &d, &rc, NULL);
    CHECK_EQ_INT(rc, 0);
    if (!r) {
      ag_diags_release(&d);
      free(src);
      continue;
    }
    CHECK(!ag_tile_report_ok(r));
    const ag_tile_assert_result *a = tu_find(r, line);
    CHECK(a != NULL);
    if (a && a->status != AG_TILE_VIOLATED)
      fprintf(stderr, "%s: line %d is not violated\n", b->mut, line);
    if (a && a->status == AG_TILE_VIOLATED && a->cex) {
      const ag_tile_cex *x = a->cex;
      CHECK_CONTAINS(x->reason, b->reason);
      CHECK_EQ_INT(x->warp, x->thread / 32);
      CHECK_EQ_INT(x->lane, x->thread % 32);
      CHECK(x->thread >= 0 && x->thread < 128);
      CHECK(x->nloops > 0);
      if (b->lhs_elem && *b->lhs_elem)
        CHECK(x->lhs.element && !strncmp(x->lhs.element, b->lhs_elem, strlen(b->lhs_elem)));
      if (b->rhs_elem)
        CHECK(x->rhs.element && !strncmp(x->rhs.element, b->rhs_elem, strlen(b->rhs_elem)));
      const char *via = x->lhs.via ? x->lhs.via : "";
      const char *via2 = x->rhs.via ? x->rhs.via : "";
      const char *tags = x->lhs.tag ? x->lhs.tag : "";
      const char *rtags = x->rhs.tag ? x->rhs.tag : "";
      if (!strstr(via, b->via) && !strstr(via2, b->via) && !strstr(tags, b->via) &&
          !strstr(rtags, b->via)) {
        fprintf(stderr, "%s: '%s' not in via/tag: %s | %s | %s | %s\n", b->mut, b->via, via,
                via2, tags, rtags);
        CHECK(0);
      }
      if (!strcmp(b->reason, "the tags differ"))
        CHECK(strcmp(x->lhs.tag, x->rhs.tag) != 0);
      int64_t lv[8], rv[8];
      int nl = tag_vals(x->lhs.tag, lv, 8), nr = tag_vals(x->rhs.tag, rv, 8);
      if (b->differ_comp >= 0) {
        CHECK(nl > b->differ_comp && nr > b->differ_comp);
        if (nl > b->differ_comp && nr > b->differ_comp)
          CHECK(lv[b->differ_comp] != rv[b->differ_comp]);
      }
      if (b->same_comp >= 0 && nl > b->same_comp && nr > b->same_comp)
        CHECK_EQ_INT(lv[b->same_comp], rv[b->same_comp]);
      /* the block lies inside the grid the kernel declares */
      int64_t M = tu_size(x, "M"), sq = tu_size(x, "sq"), hq = tu_size(x, "hq");
      if (M > 0)
        CHECK(x->block[0] < M / 64);
      if (sq > 0)
        CHECK(x->block[0] < sq / 64 && x->block[1] < hq);
    } else {
      CHECK(0);
    }
    ag_tile_report_free(r);
    ag_diags_release(&d);
    free(src);
  }
}

/* Small programs: the lattice, shared memory, guards. */
typedef struct prog {
  const char *name;
  const char *text;
  ag_tile_status want[4]; /* per assertion, in source order */
  const char *reason;     /* for the first violated one */
} prog;

#define HDR32 "@threads(32)\ndef k(A: Tensor(4096, f32)):\n    T = A[i] -> (i,)\n    tid = threadIdx.x\n"

static const prog progs[] = {
    {"constant indices past the end are refuted",
     "@threads(32)\ndef k(A: Tensor(64, f32), B: Tensor(64, f32)):\n    T = A[i] -> (i,)\n"
     "    tid = threadIdx.x\n    B[70] = A[100]\n    B[tid] = A[tid + 32]\n",
     {AG_TILE_VIOLATED, AG_TILE_VIOLATED, AG_TILE_VIOLATED}, "index 0 of 'B' is 70,"},
    {"a row past the end in the last block",
     "@threads(32)\n@grid(M / 32)\ndef k(A: Tensor(M, 8, f32)):\n    assume M % 32 == 0\n"
     "    T = A[i, j] -> (i, j)\n    row = blockIdx.x * 32 + threadIdx.x\n"
     "    x = A[row, 7]\n    y = A[row + 5, 0]\n",
     {AG_TILE_VIOLATED}, "index 0 of 'A' is "},
    {"an index past its mode does not alias the next row",
     HDR32 "    s = make_shared((2, 32), f32)\n    s[1, tid] = A[tid]\n    s[0, tid + 32] = A[tid]\n",
     {AG_TILE_VIOLATED}, "index 1 of 's' is "},
    {"guarded accesses are in bounds",
     "@threads(32)\ndef k(A: Tensor(64, f32), B: Tensor(64, f32)):\n    T = A[i] -> (i,)\n"
     "    tid = threadIdx.x\n    if tid < 16:\n        B[tid + 48] = A[tid * 4 + 3]\n"
     "    assert tid < 32\n",
     {AG_TILE_PROVED}, NULL},
    {"constants are bot",
     HDR32 "    r = make_local((2,), f32)\n    fill(r, 0)\n    assert tag(r[0]) == bot\n"
           "    assert tag(r[1]) == (1,)\n",
     {AG_TILE_PROVED, AG_TILE_VIOLATED}, "bot"},
    {"select joins with bot",
     HDR32 "    x = 0 if tid < 3 else A[tid]\n    assert tag(x) == (tid,)\n"
           "    assert tag(x) == (tid + 1,)\n",
     {AG_TILE_PROVED, AG_TILE_VIOLATED}, "the tags differ"},
    {"two writes make top",
     HDR32 "    s = make_shared((32,), f32)\n    s[tid] = A[tid]\n    s[tid] = A[tid + 32]\n"
           "    syncthreads()\n    assert tag(s[tid]) != top\n",
     {AG_TILE_VIOLATED}, "two writes"},
    {"reset clears",
     HDR32 "    s = make_shared((32,), f32)\n    s[tid] = A[tid]\n    syncthreads()\n"
           "    reset(s)\n    assert tag(s[tid]) == bot\n    s[tid] = A[tid + 32]\n"
           "    syncthreads()\n    assert tag(s[tid]) == (tid + 32,)\n"
           "    assert tag(s[tid]) != top\n",
     {AG_TILE_PROVED, AG_TILE_PROVED, AG_TILE_PROVED}, NULL},
    {"a 16-byte load reassembles 2-byte writes",
     "@threads(32)\ndef k(A: Tensor(4096, bf16)):\n    T = A[i] -> (i,)\n    tid = threadIdx.x\n"
     "    s = make_shared((32, 8), bf16)\n    for j in range(8):\n"
     "        s[tid, j] = A[tid * 8 + j]\n    syncthreads()\n    s16 = s.view((32,), u128)\n"
     "    v = s16[(tid + 5) % 32]\n    vh = v.view((8,), bf16)\n    for j in range(8):\n"
     "        assert tag(vh[j]) == ((tid + 5) % 32 * 8 + j,)\n"
     "        assert tag(vh[j]) == ((tid + 5) % 32 * 8 + 7 - j,)\n",
     {AG_TILE_PROVED, AG_TILE_VIOLATED}, "the tags differ"},
    {"a read without a barrier races",
     HDR32 "    s = make_shared((32,), f32)\n    s[tid] = A[tid]\n    assert tag(s[tid]) == (tid,)\n"
           "    assert tag(s[(tid + 1) % 32]) == ((tid + 1) % 32,)\n",
     {AG_TILE_PROVED, AG_TILE_VIOLATED}, "not settled"},
    {"guarded writes",
     "@threads(128)\ndef k(A: Tensor(4096, f32)):\n    T = A[i] -> (i,)\n    tid = threadIdx.x\n"
     "    s = make_shared((128,), f32)\n    if tid < 64:\n        s[tid] = A[tid]\n"
     "    syncthreads()\n    assert tag(s[tid % 64]) == (tid % 64,)\n"
     "    assert tag(s[tid]) == (tid,)\n",
     {AG_TILE_PROVED, AG_TILE_VIOLATED}, "bot"},
    {"integer assertions",
     HDR32 "    assert tid < 32\n    assert tid < 20\n", {AG_TILE_PROVED, AG_TILE_VIOLATED},
     "false"},
    {"non-conformity",
     HDR32 "    assert tag(A[tid]) != tag(A[tid + 1])\n    assert tag(A[tid]) != tag(A[tid])\n",
     {AG_TILE_PROVED, AG_TILE_VIOLATED}, "same tag"},
    {"a view the checker addresses linearly",
     "@threads(32)\n@grid(M * N / 32)\ndef k(A: Tensor(M, N, f32)):\n"
     "    assume M * N % 32 == 0\n    T = A[i, j] -> (i, j)\n"
     "    Af = A.view((M * N,), f32)\n    g = blockIdx.x * 32 + threadIdx.x\n"
     "    assert tag(Af[g]) == (g / N, g % N)\n    assert tag(Af[g]) == (g / N, g % M)\n",
     {AG_TILE_PROVED, AG_TILE_VIOLATED}, "the tags differ"},
    {"vector loads from global carry one tag per element",
     "@threads(32)\n@grid(M)\ndef k(A: Tensor(M, 64, bf16)):\n    T = A[i, j] -> (i, j)\n"
     "    Av = A.view((M, 8), u128)\n    x = Av[blockIdx.x, threadIdx.x % 8]\n"
     "    xh = x.view((8,), bf16)\n    for j in range(8):\n"
     "        assert tag(xh[j]) == (blockIdx.x, threadIdx.x % 8 * 8 + j)\n",
     {AG_TILE_PROVED}, NULL},
    {"a tag function relabels registers",
     HDR32 "    r = make_local((4,), f32)\n    T_r = r[v] -> (tid * 4 + v, 7)\n"
           "    for v in range(4):\n        assert tag(r[v]) == (tid * 4 + v, 7)\n"
           "        assert tag(r[v])[1] == tag(r[(v + 1) % 4])[1]\n",
     {AG_TILE_PROVED, AG_TILE_PROVED}, NULL},
    {"an unwaited cp.async is top",
     "@threads(32)\ndef k(A: Tensor(4096, u32)):\n    T = A[i] -> (i,)\n    tid = threadIdx.x\n"
     "    s = make_shared((32,), u32)\n    cp_async(s[tid], A[tid])\n    cp_async_commit()\n"
     "    syncthreads()\n    assert tag(s[tid]) == (tid,)\n    cp_async_wait(0)\n"
     "    syncthreads()\n    assert tag(s[(tid + 3) % 32]) == ((tid + 3) % 32,)\n",
     {AG_TILE_VIOLATED, AG_TILE_PROVED}, "not been waited"},
    {"ldmatrix x1 and x2.trans follow the PTX fragment layouts",
     "@threads(32)\ndef k(A: Tensor(16, 8, bf16)):\n    T = A[r, c] -> (r, c)\n"
     "    lane = threadIdx.x\n    s = make_shared((16, 8), bf16)\n    sv = s.view((16,), u128)\n"
     "    Av = A.view((16,), u128)\n    if lane < 16:\n        sv[lane] = Av[lane]\n"
     "    syncthreads()\n    r1 = make_local((1,), u32)\n    ldmatrix_x1(r1, sv[lane % 8])\n"
     "    h1 = r1.view((2,), bf16)\n    r2 = make_local((2,), u32)\n"
     "    ldmatrix_x2_trans(r2, sv[lane % 16])\n    h2 = r2.view((4,), bf16)\n"
     "    for v in range(2):\n        assert tag(h1[v]) == (lane / 4, lane % 4 * 2 + v)\n"
     "    for v in range(4):\n"
     "        assert tag(h2[v]) == (v / 2 * 8 + lane % 4 * 2 + v % 2, lane / 4)\n"
     "    for v in range(2):\n        assert tag(h1[v]) == (lane % 4 * 2 + v, lane / 4)\n",
     {AG_TILE_PROVED, AG_TILE_PROVED, AG_TILE_VIOLATED}, "the tags differ"},
    /* mbarriers: a bulk copy is settled for the threads whose wait saw its
     * phase complete, and for every thread after a barrier that follows */
    {"mbar-one-waiter",
     HDR32 "    bar = make_shared((1,), u64)\n    s = make_shared((32,), f32)\n"
           "    if tid == 0:\n        mbar_init(bar[0], 1)\n        fence_mbar_init()\n"
           "    syncthreads()\n"
           "    if tid == 0:\n        mbar_expect_tx(bar[0], 128)\n"
           "        bulk_copy(s[0], A[0], 128, bar[0])\n        mbar_wait(bar[0], 0)\n"
           "        assert tag(s[tid]) == (tid,)\n"
           "    assert tag(s[tid]) == (tid,)\n"
           "    syncthreads()\n    assert tag(s[tid]) == (tid,)\n",
     {AG_TILE_PROVED, AG_TILE_VIOLATED, AG_TILE_PROVED}, "no mbar_wait in this thread"},
    /* the other threads read without waiting: a read-after-write race */
    {"mbar-one-waiter-race",
     "@threads(32)\ndef k(A: Tensor(4096, f32), Y: Tensor(32, f32)):\n    T = A[i] -> (i,)\n"
     "    tid = threadIdx.x\n"
     "    bar = make_shared((1,), u64)\n    s = make_shared((32,), f32)\n"
     "    if tid == 0:\n        mbar_init(bar[0], 1)\n        fence_mbar_init()\n"
     "    syncthreads()\n"
     "    if tid == 0:\n        mbar_expect_tx(bar[0], 128)\n"
     "        bulk_copy(s[0], A[0], 128, bar[0])\n        mbar_wait(bar[0], 0)\n"
     "    Y[tid] = s[tid]\n    assert tid < 32\n",
     {AG_TILE_VIOLATED, AG_TILE_PROVED}, "read-after-write race: thread"},
    /* two phases of one barrier: the parity alternates */
    {"mbar-phases",
     HDR32 "    bar = make_shared((1,), u64)\n    s = make_shared((32,), f32)\n"
           "    if tid == 0:\n        mbar_init(bar[0], 1)\n        fence_mbar_init()\n"
           "    syncthreads()\n"
           "    for r in range(2):\n        reset(s)\n"
           "        if tid == 0:\n            mbar_expect_tx(bar[0], 128)\n"
           "            bulk_copy(s[0], A[r * 32], 128, bar[0])\n"
           "        mbar_wait(bar[0], r % 2)\n"
           "        assert tag(s[tid]) == (r * 32 + tid,)\n        syncthreads()\n",
     {AG_TILE_PROVED}, NULL},
    {"mbar-phases-parity",
     HDR32 "    bar = make_shared((1,), u64)\n    s = make_shared((32,), f32)\n"
           "    if tid == 0:\n        mbar_init(bar[0], 1)\n        fence_mbar_init()\n"
           "    syncthreads()\n"
           "    for r in range(2):\n        reset(s)\n"
           "        if tid == 0:\n            mbar_expect_tx(bar[0], 128)\n"
           "            bulk_copy(s[0], A[r * 32], 128, bar[0])\n"
           "        mbar_wait(bar[0], 0)\n"
           "        assert tag(s[tid]) == (r * 32 + tid,)\n        syncthreads()\n",
     {AG_TILE_VIOLATED}, "no mbar_wait in this thread"},
    /* two bulk copies of 64 bytes complete one phase that expects 128 */
    {"mbar-two-copies",
     HDR32 "    bar = make_shared((1,), u64)\n    s = make_shared((32,), f32)\n"
           "    if tid == 0:\n        mbar_init(bar[0], 1)\n        fence_mbar_init()\n"
           "    syncthreads()\n"
           "    if tid == 0:\n        mbar_expect_tx(bar[0], 128)\n"
           "        bulk_copy(s[0], A[0], 64, bar[0])\n"
           "        bulk_copy(s[16], A[16], 64, bar[0])\n"
           "    mbar_wait(bar[0], 0)\n    assert tag(s[tid]) == (tid,)\n",
     {AG_TILE_PROVED}, NULL},
    /* a copy into a phase that expects no bytes: it completed before */
    {"mbar-unexpected",
     HDR32 "    bar = make_shared((1,), u64)\n    s = make_shared((32,), f32)\n"
           "    if tid == 0:\n        mbar_init(bar[0], 1)\n        fence_mbar_init()\n"
           "    syncthreads()\n"
           "    if tid == 0:\n        mbar_arrive(bar[0])\n"
           "        bulk_copy(s[0], A[0], 128, bar[0])\n"
           "    mbar_wait(bar[0], 0)\n    assert tag(s[tid]) == (tid,)\n",
     {AG_TILE_VIOLATED}, "may land after its phase"},
    /* a read before the wait that settles the copy */
    {"mbar-early-read",
     HDR32 "    bar = make_shared((1,), u64)\n    s = make_shared((32,), f32)\n"
           "    if tid == 0:\n        mbar_init(bar[0], 1)\n        fence_mbar_init()\n"
           "    syncthreads()\n"
           "    if tid == 0:\n        mbar_expect_tx(bar[0], 128)\n"
           "        bulk_copy(s[0], A[0], 128, bar[0])\n"
           "    assert tag(s[tid]) == (tid,)\n"
           "    mbar_wait(bar[0], 0)\n    assert tag(s[tid]) == (tid,)\n",
     {AG_TILE_VIOLATED, AG_TILE_PROVED}, "no mbar_wait in this thread"},
    /* a second copy while the phase waits for the first one's bytes: its
     * bytes may complete that phase, before the first copy lands */
    {"mbar-in-flight",
     HDR32 "    bar = make_shared((1,), u64)\n    s = make_shared((32,), f32)\n"
           "    if tid == 0:\n        mbar_init(bar[0], 1)\n        fence_mbar_init()\n"
           "    syncthreads()\n"
           "    if tid == 0:\n        mbar_expect_tx(bar[0], 64)\n"
           "        bulk_copy(s[0], A[0], 64, bar[0])\n"
           "        bulk_copy(s[16], A[16], 64, bar[0])\n"
           "    mbar_wait(bar[0], 0)\n    assert tag(s[tid % 16]) == (tid % 16,)\n",
     {AG_TILE_VIOLATED}, "may land after its phase"},
    /* more bytes copied than expected before the last arrival: every copy of
     * the phase may land after it completes */
    {"mbar-overcopy",
     HDR32 "    bar = make_shared((1,), u64)\n    s = make_shared((32,), f32)\n"
           "    if tid == 0:\n        mbar_init(bar[0], 2)\n        fence_mbar_init()\n"
           "    syncthreads()\n"
           "    if tid == 0:\n        mbar_expect_tx(bar[0], 64)\n"
           "        bulk_copy(s[0], A[0], 64, bar[0])\n"
           "        bulk_copy(s[16], A[16], 64, bar[0])\n        mbar_arrive(bar[0])\n"
           "    mbar_wait(bar[0], 0)\n    assert tag(s[tid % 16]) == (tid % 16,)\n",
     {AG_TILE_VIOLATED}, "may land after its phase"},
};

TEST(test_semantics) {
  for (size_t i = 0; i < sizeof progs / sizeof progs[0]; i++) {
    const prog *p = &progs[i];
    ag_diags d;
    ag_diags_init(&d);
    int rc;
    ag_tile_report *r = tu_check(p->text, p->name, &d, &rc, NULL);
    if (rc) {
      ag_str s = AG_STR_INIT;
      ag_diags_format(&d, &s);
      fprintf(stderr, "%s: %s\n%s", p->name, ag_strerror(rc), ag_str_cstr(&s));
      ag_str_release(&s);
    }
    CHECK_EQ_INT(rc, 0);
    if (!r) {
      ag_diags_release(&d);
      continue;
    }
    int first_bad = 1;
    for (int k = 0; k < r->nasserts && k < 4; k++) {
      if ((int)r->asserts[k].status != (int)p->want[k])
        fprintf(stderr, "%s: assertion %d (line %d) is %d, want %d\n", p->name, k,
                r->asserts[k].line, r->asserts[k].status, p->want[k]);
      CHECK_EQ_INT(r->asserts[k].status, p->want[k]);
      if (r->asserts[k].status == AG_TILE_VIOLATED && first_bad) {
        first_bad = 0;
        CHECK(r->asserts[k].cex != NULL);
        if (r->asserts[k].cex && p->reason) {
          const ag_tile_cex *x = r->asserts[k].cex;
          char all[1024];
          snprintf(all, sizeof all, "%s | %s | %s", x->reason ? x->reason : "",
                   x->lhs.tag ? x->lhs.tag : "", x->rhs.tag ? x->rhs.tag : "");
          CHECK_CONTAINS(all, p->reason);
        }
      }
    }
    ag_tile_report_free(r);
    ag_diags_release(&d);
  }
}

/* Counterexample contents for small programs whose answer is known. */
TEST(test_counterexample_values) {
  ag_diags d;
  ag_diags_init(&d);
  int rc;
  const char *text = "@threads(128)\ndef k(A: Tensor(4096, f32)):\n    T = A[i] -> (i,)\n"
                     "    tid = threadIdx.x\n    s = make_shared((128,), f32)\n"
                     "    if tid < 64:\n        s[tid] = A[tid]\n    syncthreads()\n"
                     "    assert tag(s[tid]) == (tid,)\n";
  ag_tile_report *r = tu_check(text, "g.tile", &d, &rc, NULL);
  CHECK_EQ_INT(rc, 0);
  if (r && r->nasserts == 1 && r->asserts[0].cex) {
    const ag_tile_cex *x = r->asserts[0].cex;
    CHECK(x->thread >= 64); /* only threads 64.. read an unwritten word */
    CHECK_CONTAINS(x->lhs.tag, "bot");
    CHECK_CONTAINS(x->lhs.via, "which no write reaches");
    CHECK_EQ_INT(r->asserts[0].line, 9);
    CHECK_EQ_INT(r->asserts[0].col, 5);
  } else {
    CHECK(0);
  }
  ag_tile_report_free(r);
  ag_diags_release(&d);
  /* the element and the writer of a wrong read */
  ag_diags_init(&d);
  const char *t2 = "@threads(32)\ndef k(A: Tensor(4096, f32)):\n    T = A[i] -> (i * 10,)\n"
                   "    tid = threadIdx.x\n    s = make_shared((32,), f32)\n"
                   "    s[(tid + 1) % 32] = A[tid + 100]\n    syncthreads()\n"
                   "    assert tag(s[tid]) == (tid * 10 + 1000,)\n";
  r = tu_check(t2, "w.tile", &d, &rc, NULL);
  CHECK_EQ_INT(rc, 0);
  if (r && r->nasserts == 1 && r->asserts[0].cex) {
    const ag_tile_cex *x = r->asserts[0].cex;
    int64_t t = x->thread, w = (t + 31) % 32; /* the thread that wrote s[t] */
    char want[64];
    snprintf(want, sizeof want, "A[%lld]", (long long)(w + 100));
    CHECK_EQ_STR(x->lhs.element, want);
    snprintf(want, sizeof want, "(%lld)", (long long)((w + 100) * 10));
    CHECK_EQ_STR(x->lhs.tag, want);
    snprintf(want, sizeof want, "(%lld)", (long long)(t * 10 + 1000));
    CHECK_EQ_STR(x->rhs.tag, want);
    snprintf(want, sizeof want, "written by thread %lld at w.tile:6:5", (long long)w);
    CHECK_CONTAINS(x->lhs.via, want);
    CHECK(x->lhs.via && strstr(x->lhs.via, "shared 's' byte"));
  } else {
    CHECK(0);
  }
  ag_tile_report_free(r);
  ag_diags_release(&d);
}

/* Malformed programs: AG_EPARSE with a diagnostic where the problem is. */
#define H "@threads(32)\ndef k(A: Tensor(N, f32), B: Tensor(M, 8, bf16)):\n"
/* an initialized mbarrier bar[0] (count 1), a shared tile s of 64 f32 */
#define MB                                                                                      \
  H "    bar = make_shared((2,), u64)\n    s = make_shared((64,), f32)\n"                        \
    "    if threadIdx.x == 0:\n        mbar_init(bar[0], 1)\n        fence_mbar_init()\n"      \
    "    syncthreads()\n"
static const dc_case sbads[] = { /* diag_case.h */
    {H "    x = y + 1\n", 3, 9, "unknown name 'y'"},
    {H "    v = B.view((M, 3), u128)\n", 3, 9, "does not cover tensor 'B'"},
    {H "    v = B.view((M / 2, 16), u128)\n", 3, 9, "is exact only when"},
    {H "    r = make_local((4,), f32)\n    r[threadIdx.x % 4] = A[0]\n", 4, 5,
     "register tile index must be a compile-time constant"},
    {H "    for i in range(N, 4):\n        pass\n", 3, 20, "compile-time constant"},
    {"def k(A: Tensor(N, f32)):\n    pass\n", 1, 1, "@threads(128)"},
    {H "    assume 1 == 2\n", 3, 5, "this assumption is false"},
    {H "    s = make_shared((32,), u128)\n    cp_async(s[0], A[0])\n", 4, 5,
     "same size"},
    {H "    r = make_local((4,), u32)\n    ldmatrix_x4(r, A[0])\n", 4, 20,
     "shared tile element"},
    {H "    r = make_local((4,), u32)\n    reset(r)\n", 4, 5, "reset() takes a shared tile"},
    {H "    T = B[i] -> (i,)\n", 3, 9, "has 2 dims; the tag function names 1"},
    {H "    r = make_local((4,), f32)\n    r[0] = B[0, 0]\n", 4, 5, "cannot store 2-byte bf16"},
    {H "    x = frobnicate(3)\n", 3, 9, "unknown function 'frobnicate'"},
    {H "    if threadIdx.x < 3:\n        syncthreads()\n", 4, 9, "thread-dependent 'if'"},
    {H "    if threadIdx.x < 3:\n        q = 1\n    else:\n        q = 2\n    z = q\n", 7, 9,
     "different values on the two paths"},
    {H "    s = make_shared((300000,), f32)\n", 3, 9, "exceeds the 227 KiB"},
    {H "    s = make_shared((4,), u256)\n    s[0] = 1\n", 4, 5, "moves 1, 2, 4, 8 or 16 bytes"},
    {"@threads(32)\n@frob(1)\ndef k(A: Tensor(N, f32)):\n    pass\n", 2, 2, "unknown decorator"},
    {H "    a = make_local((8,), bf16)\n    b = make_local((4,), bf16)\n"
       "    c = make_local((4,), f32)\n    mma_m16n8k16(c, a, a, c)\n",
     6, 24, "is 16 bytes; it must be 8"},
    {H "    x = A[0]\n    y = x[1]\n", 4, 9, "holds a single value"},
    {H "    s = make_shared((64,), bf16)\n    v = s.view((8,), u128, swizzle(3, 0, 3))\n", 4, 9,
     "swizzle period"},
    {H "    assert tag(A[0]) == top\n", 3, 22, "not supported"},
    {H "    assume N % 64 == 0\n    assume N < 64\n", 2, 1, "contradict each other"},
    {H "    x = threadIdx.x % (1 << 70)\n", 3, 26, "'<<' by 70 overflows"},
    {"@threads(32)\ndef k(A: Tensor(N, f32), A: Tensor(N, f32)):\n    pass\n", 2, 26,
     "parameter 'A' is declared twice"},
    {"@threads(32)\ndef k(A: Tensor(N, f32)):\n    pass\n@threads(32)\ndef k(A: Tensor(N, f32)):"
     "\n    pass\n",
     5, 1, "kernel 'k' is defined twice (first at line 2)"},
    {H "    x = threadIdx.x >> 64\n", 3, 21, "'>>' by 64 overflows"},
    {H "    x = (1 << 40) << 30\n", 3, 19, "'<<' by 30 overflows"},
    /* what the lowering cannot place: shared memory and assumptions in C blocks */
    {H "    for i in range(2):\n        s = make_shared((64,), f32)\n", 4, 13,
     "make_shared inside a loop or an 'if' on a run-time condition"},
    {H "    assume N >= 128\n    if N > 64:\n        s = make_shared((64,), f32)\n", 5, 13,
     "allocate the tile before the loop or the 'if'"},
    {H "    for i in range(2):\n        assume N > i\n", 4, 9,
     "'assume' inside a loop or an 'if' on a run-time condition"},
    {H "    if N > 0:\n        assume N % 2 == 0\n", 4, 9, "move it to the kernel's top level"},
    {H "    assume threadIdx.x < 16\n", 3, 5, "over the thread or block index"},
    {H "    assume blockIdx.y < 4\n", 3, 5, "bound the index with @threads or @grid"},
    /* what has no meaning as data */
    {H "    v = B.view((M, 1), u128)\n    x = cvt(v[0, 0], f32)\n", 4, 9,
     "cvt converts from a scalar type, not u128"},
    {H "    r = make_local((4,), u32)\n    fill(r, 1.5)\n", 4, 5,
     "the constant 1.5 is not an integer, so it cannot be u32 data"},
    {H "    r = make_local((4,), u32)\n    r[0] = 2.5\n", 4, 5,
     "the constant 2.5 is not an integer"},
    /* mbarriers and bulk copies (the statement under test is at line 9) */
    {MB "    mbar_arrive(s[0])\n", 9, 17, "is a u64 element of a shared tile"},
    {MB "    mbar_wait(A[0], 0)\n", 9, 15, "not a global element"},
    {MB "    x = make_local((2,), u64)\n    mbar_arrive(x[0])\n", 10, 17, "not a register element"},
    {MB "    bulk_copy(s[0], A[0], 24, bar[0])\n", 9, 27, "a positive multiple of 16 bytes"},
    {MB "    bulk_copy(s[1], A[0], 16, bar[0])\n", 9, 15,
     "shared destination of bulk_copy must be 16-byte aligned"},
    {MB "    bulk_copy(s[0], A[1], 16, bar[0])\n", 9, 21,
     "global source of bulk_copy must be 16-byte aligned"},
    {MB "    bulk_copy(s[32], A[0], 256, bar[0])\n", 9, 15, "runs past its 256 bytes"},
    {MB "    mbar_wait(bar[0], threadIdx.x % 2)\n", 9, 35, "phase parity known at each wait"},
    {MB "    mbar_wait(bar[0], 2)\n", 9, 23, "parity is 0 or 1, not 2"},
    {MB "    mbar_wait(bar[1], 0)\n", 9, 15, "which no mbar_init before it initializes"},
    {MB "    mbar_wait(bar[0], 0)\n", 9, 5, "can never return here: it waits for phase 0"},
    {MB "    if threadIdx.x == 0:\n        mbar_init(bar[1], 2)\n    syncthreads()\n"
        "    if threadIdx.x == 0:\n        mbar_arrive(bar[1])\n    mbar_wait(bar[1], 0)\n",
     14, 5, "which still needs 1 arrivals"},
    {MB "    if N > 4:\n        mbar_wait(bar[0], 1)\n", 10, 9,
     "mbar_wait inside an 'if' whose condition the checker cannot decide"},
    {MB "    mbar_init(bar[0], 1)\n", 9, 5, "again (initialized at line 6)"},
    {MB "    if threadIdx.x < N:\n        mbar_arrive(bar[0])\n", 10, 9,
     "cannot count the threads of"},
    {MB "    mbar_arrive(bar[threadIdx.x % 2])\n", 9, 17, "the same element for every thread"},
    {MB "    if threadIdx.x == 0:\n        mbar_init(bar[1], 0)\n", 10, 27,
     "arrival count in 1 .. 2^20 - 1, not 0"},
    {MB "    if threadIdx.x == 0:\n        mbar_init(bar[1], 1)\n    mbar_arrive(bar[1])\n", 11,
     5, "before the syncthreads() that makes its mbar_init (line 10) visible"},
    {MB "    if threadIdx.x == 0:\n        mbar_init(bar[1], 1)\n    syncthreads()\n"
        "    bulk_copy(s[0], A[0], 16, bar[1])\n",
     12, 31, "no fence_mbar_init() follows its mbar_init"},
};

TEST(test_semantic_errors) {
  for (size_t i = 0; i < sizeof sbads / sizeof sbads[0]; i++) {
    const dc_case *b = &sbads[i];
    ag_diags d;
    ag_diags_init(&d);
    int rc;
    ag_tile_report *r = tu_check(b->text, "bad.tile", &d, &rc, NULL);
    CHECK_EQ_INT(rc, AG_EPARSE);
    CHECK(r == NULL);
    ag_tile_report_free(r);
    tu_expect_diag(&d, i, b->line, b->col, b->msg);
    ag_diags_release(&d);
  }
}

TEST(test_json_report) {
  char *src = tu_mutate("gemm-swizzle");
  CHECK(src != NULL);
  if (!src)
    return;
  ag_diags d;
  ag_diags_init(&d);
  int rc;
  ag_tile_report *r = tu_check(src, "gemm-swizzle.tile", &d, &rc, NULL);
  CHECK_EQ_INT(rc, 0);
  json_t *j = r ? ag_tile_report_json(r) : NULL;
  CHECK(j != NULL);
  if (j) {
    CHECK_EQ_INT(json_integer_value(json_object_get(j, "schema")), 1);
    CHECK_EQ_STR(json_string_value(json_object_get(j, "verdict")), "violated");
    json_t *as = json_object_get(j, "assertions");
    CHECK(json_is_array(as) && json_array_size(as) == 4);
    int found = 0;
    for (size_t k = 0; k < json_array_size(as); k++) {
      json_t *a = json_array_get(as, k);
      json_t *cx = json_object_get(a, "counterexample");
      if (!cx)
        continue;
      found = 1;
      CHECK_EQ_STR(json_string_value(json_object_get(a, "status")), "violated");
      CHECK(json_is_array(json_object_get(cx, "block")));
      CHECK(json_is_integer(json_object_get(cx, "thread")));
      CHECK(json_is_object(json_object_get(cx, "loops")));
      CHECK(json_is_integer(json_object_get(json_object_get(cx, "loops"), "kt")));
      CHECK(json_is_string(json_object_get(json_object_get(cx, "lhs"), "element")));
      CHECK(json_is_string(json_object_get(json_object_get(cx, "rhs"), "tag")));
    }
    CHECK(found);
    json_t *st = json_object_get(j, "stats");
    CHECK(json_is_integer(json_object_get(st, "queries")));
  }
  json_decref(j);
  ag_tile_report_free(r);
  ag_diags_release(&d);
  free(src);
}

TEST(test_set_overrides) {
  /* --set changes a const parameter: more K-tiles, more instances */
  char *src = tu_read("examples/tile/gemm.tile", NULL);
  CHECK(src != NULL);
  if (!src)
    return;
  const char *defs[] = {"K=256"};
  ag_tile_check_opts o;
  memset(&o, 0, sizeof o);
  o.defines = defs;
  o.ndefines = 1;
  ag_diags d;
  ag_diags_init(&d);
  int rc;
  ag_tile_report *r = tu_check(src, "gemm.tile", &d, &rc, &o);
  CHECK_EQ_INT(rc, 0);
  if (r) {
    CHECK(ag_tile_report_ok(r));
    int64_t most = 0;
    for (int k = 0; k < r->nasserts; k++)
      if (r->asserts[k].instances > most)
        most = r->asserts[k].instances;
    CHECK_EQ_INT(most, 256);
  }
  ag_tile_report_free(r);
  ag_diags_release(&d);
  /* an unknown name is an error */
  const char *bad[] = {"KK=3"};
  o.defines = bad;
  ag_diags_init(&d);
  r = tu_check(src, "gemm.tile", &d, &rc, &o);
  CHECK_EQ_INT(rc, AG_EPARSE);
  CHECK(d.items.n >= 1 && strstr(d.items.v[0].msg, "no constant parameter"));
  ag_tile_report_free(r);
  ag_diags_release(&d);
  free(src);
}

/* Resource limits: inputs that crashed the checker (a stack overflow on long
 * chains) or ran for a minute and many gigabytes before a limit fired are
 * refused up front with the construct, the limit and how to raise it, in
 * well under a second and a bounded amount of memory. The time is the
 * process's CPU time: the bound is on the checker's work, and on a loaded
 * 2-core machine the wall clock is the scheduler's (2.3 s wall seen at a
 * load of 10 for 0.44 s of work). */
static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char *chain_src(const char *head, const char *link, const char *tail, int n) {
  ag_str s = AG_STR_INIT;
  ag_str_puts(&s, HDR32);
  ag_str_puts(&s, head);
  for (int i = 0; i < n; i++)
    ag_str_puts(&s, i ? link : "tid");
  ag_str_puts(&s, tail);
  char *out = ag_strdup(ag_str_cstr(&s));
  ag_str_release(&s);
  return out;
}

TEST(test_resource_limits) {
  static const struct {
    const char *head, *link, *tail; /* a chain of n links, or a fixed text (n = 0) */
    int n, line, col;
    const char *msg;
  } cases[] = {
      {"    x = ", " + tid", "\n", 20000, 5, 0, "nested deeper than 200 levels"},
      {"    x = A[", "][0", "]\n", 20000, 5, 0, "nested deeper than 200 levels"},
      {"    assert ", " < tid", "\n", 20000, 5, 0, "nested deeper than 200 levels"},
      {"    x = ", " and tid", "\n", 20000, 5, 0, "nested deeper than 200 levels"},
      {"    x = ", " .a", "\n", 20000, 5, 0, "nested deeper than 200 levels"},
      {"    for kt in range(100000000):\n        pass\n", NULL, NULL, 0, 5, 15,
       "unrolls to 100000000 iterations"},
      {"    K = 128\n    BK = 32\n    for kt in range(K << BK):\n        x = kt\n", NULL, NULL, 0,
       7, 15, "--max-steps"},
      {"    for i in range(1000):\n        for j in range(1000):\n            for k in range(10):"
       "\n                pass\n",
       NULL, NULL, 0, 5, 14, "limit of 1000000 interpreted statements"},
      {"    s = make_shared((32,), f32)\n    for kt in range(100000):\n        s[tid] = A[tid]\n"
       "        syncthreads()\n        assert tag(s[tid]) != top\n",
       NULL, NULL, 0, 7, 9, "more than 4096 shared-memory writes"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *src = cases[i].n ? chain_src(cases[i].head, cases[i].link, cases[i].tail, cases[i].n)
                           : chain_src(cases[i].head, "", "", 0);
    ag_diags d;
    ag_diags_init(&d);
    int rc;
    /* the unrolling limits (a long constant loop is summarized otherwise:
     * test_tile_loops) */
    ag_tile_check_opts uo;
    memset(&uo, 0, sizeof uo);
    uo.unroll = 1;
    double t0 = now_s();
    ag_tile_report *r = tu_check(src, "limits.tile", &d, &rc, &uo);
    double dt = now_s() - t0;
    CHECK_EQ_INT(rc, AG_EPARSE);
    CHECK(r == NULL);
    if (dt >= 1.0)
      fprintf(stderr, "case %zu took %.2f s\n", i, dt);
    CHECK(dt < 1.0 * LIMIT_TIME_SCALE);
    if (cases[i].col)
      tu_expect_diag(&d, i, cases[i].line, cases[i].col, cases[i].msg);
    else if (d.items.n >= 1) {
      CHECK_EQ_INT(d.items.v[0].line, cases[i].line);
      CHECK_CONTAINS(d.items.v[0].msg, cases[i].msg);
    } else
      CHECK(0);
    ag_tile_report_free(r);
    ag_diags_release(&d);
    ag_free(src);
  }
  /* just under the limits: chains of 150 links and a loop of 1000 statements check */
  const char *ok[] = {"    x = ", " + tid", "\n    assert x == 150 * tid\n"};
  char *src = chain_src(ok[0], ok[1], ok[2], 150);
  ag_diags d;
  ag_diags_init(&d);
  int rc;
  ag_tile_report *r = tu_check(src, "limits.tile", &d, &rc, NULL);
  CHECK_EQ_INT(rc, 0);
  CHECK(r && ag_tile_report_ok(r));
  ag_tile_report_free(r);
  ag_diags_release(&d);
  ag_free(src);
  ag_tile_check_opts o;
  memset(&o, 0, sizeof o);
  o.max_steps = 1000;
  o.unroll = 1;
  src = chain_src("    for i in range(997):\n        pass\n", "", "", 0);
  ag_diags_init(&d);
  r = tu_check(src, "limits.tile", &d, &rc, &o);
  CHECK_EQ_INT(rc, 0); /* 2 statements of the header, the loop and 997: 1000 */
  ag_tile_report_free(r);
  ag_diags_release(&d);
  ag_free(src);
  src = chain_src("    for i in range(998):\n        pass\n", "", "", 0);
  ag_diags_init(&d);
  r = tu_check(src, "limits.tile", &d, &rc, &o);
  CHECK_EQ_INT(rc, AG_EPARSE);
  ag_tile_report_free(r);
  ag_diags_release(&d);
  ag_free(src);
  /* attention at a 16k sequence unrolls past the memory limit: refused early */
  src = tu_read("examples/tile/attention.tile", NULL);
  CHECK(src != NULL);
  const char *defs[] = {"skv=16384"};
  memset(&o, 0, sizeof o);
  o.defines = defs;
  o.ndefines = 1;
  o.unroll = 1;
  ag_diags_init(&d);
  double t0 = now_s();
  r = src ? tu_check(src, "attention.tile", &d, &rc, &o) : NULL;
  double dt = now_s() - t0;
  CHECK_EQ_INT(rc, AG_EPARSE);
  CHECK(dt < 2.0 * LIMIT_TIME_SCALE); /* 0.44 s measured on the 2-core machine */
  /* the memory limit, or first the race-work limit (its write-after-write
   * pairs: every V^T store against the others of its barrier interval) */
  CHECK(d.items.n >= 1 &&
        ((strstr(d.items.v[0].msg, "more than 128 MiB") &&
          strstr(d.items.v[0].msg, "--max-memory")) ||
         (strstr(d.items.v[0].msg, "checking data races takes more than") &&
          strstr(d.items.v[0].msg, "--max-steps"))));
  ag_tile_report_free(r);
  ag_diags_release(&d);
  free(src);
  /* the memory bound of docs/check.md: all of the above within 256 MiB
   * (not under AddressSanitizer, whose shadow memory and quarantine are
   * part of the resident set; the plain build checks it) */
#ifndef __SANITIZE_ADDRESS__
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  CHECK(ru.ru_maxrss < 256 * 1024);
#endif
}

/* Write-after-read races: a read, then another thread's write of the same
 * bytes with no barrier between them; both threads and both statements in
 * the counterexample. Reading one's own bytes, a barrier between, tag()
 * observations and writes that miss every read are race-free. */
typedef struct race_case {
  const char *name;
  const char *body;  /* after HDR32 and a shared tile s of 32 f32 written and synced */
  int violated;      /* 1: the write at write_line races */
  int write_line, read_line;  /* the write's (the entry's), the other access's */
  int64_t proved;    /* races_proved expected: the header's write and every race-free one */
  const char *kind;  /* NULL: write-after-read; "write-after-write", "read-after-write" */
} race_case;

#define RACE_HDR HDR32 "    s = make_shared((32,), f32)\n    s[tid] = A[tid]\n    syncthreads()\n"

static const race_case races[] = {
    {"the neighbour's element is refilled after it was read",
     "    x = s[(tid + 1) % 32]\n    s[tid] = A[tid + 32]\n", 1, 9, 8, 1, NULL},
    {"a write in the same statement as the read",
     "    s[tid] = s[(tid + 1) % 32]\n", 1, 8, 8, 1, NULL},
    {"each thread refills its own element",
     "    x = s[tid]\n    s[tid] = A[tid + 32]\n", 0, 0, 0, 2, NULL},
    {"a barrier between the read and the write",
     "    x = s[(tid + 1) % 32]\n    syncthreads()\n    s[tid] = A[tid + 32]\n", 0, 0, 0, 2, NULL},
    {"tag() observes and reads nothing",
     "    assert tag(s[(tid + 1) % 32]) == ((tid + 1) % 32,)\n    s[tid] = A[tid + 32]\n", 0, 0,
     0, 2, NULL},
    {"the solver decides an address with the block index (own element)",
     "    x = s[(tid + blockIdx.x * 32) % 32]\n    s[tid] = A[tid + 32]\n", 0, 0, 0, 2, NULL},
    {"the solver decides an address with the block index (race)",
     "    x = s[(tid + blockIdx.x) % 32]\n    s[tid] = A[tid + 32]\n", 1, 9, 8, 1, NULL},
    {"a guarded read of the half that other threads refill",
     "    if tid < 16:\n        x = s[tid + 16]\n    if tid >= 16:\n        s[tid] = A[tid + 32]\n",
     1, 11, 9, 1, NULL},
    {"a guarded read of the half nobody refills",
     "    if tid < 16:\n        x = s[tid + 16]\n    if tid >= 16:\n        s[tid - 16] = A[tid]\n",
     0, 0, 0, 2, NULL},
    {"two threads write one element in one statement",
     "    s[tid / 2] = A[tid + 32]\n", 1, 8, 8, 1, "write-after-write"},
    {"the neighbour's element written after one's own",
     "    s[tid] = A[tid + 32]\n    s[(tid + 1) % 32] = A[tid]\n", 1, 9, 8, 2, "write-after-write"},
    {"one's own element written twice",
     "    s[tid] = A[tid + 32]\n    s[tid] = A[tid]\n", 0, 0, 0, 3, NULL},
    {"a barrier between two threads' writes",
     "    s[tid] = A[tid + 32]\n    syncthreads()\n    s[(tid + 1) % 32] = A[tid]\n", 0, 0, 0, 3, NULL},
    {"a write in one branch of a thread-dependent if, the read in the other",
     "    if tid < 16:\n        s[tid + 16] = A[tid + 32]\n    else:\n        x = s[tid]\n", 1, 9, 11,
     1, "read-after-write"},
    {"the branches touch different elements",
     "    if tid < 16:\n        s[tid] = A[tid + 32]\n    else:\n        x = s[tid]\n", 0, 0, 0, 2, NULL},
};

TEST(test_races) {
  for (size_t i = 0; i < sizeof races / sizeof races[0]; i++) {
    const race_case *rc_ = &races[i];
    char text[2048];
    snprintf(text, sizeof text, "%s%s", RACE_HDR, rc_->body);
    ag_diags d;
    ag_diags_init(&d);
    int rc;
    ag_tile_report *r = tu_check(text, "race.tile", &d, &rc, NULL);
    CHECK_EQ_INT(rc, 0);
    if (!r) {
      ag_diags_release(&d);
      continue;
    }
    const ag_tile_assert_result *a = NULL;
    for (int k = 0; k < r->nasserts; k++)
      if (r->asserts[k].race)
        a = &r->asserts[k];
    if (rc_->violated) {
      CHECK(a != NULL);
      if (a && a->cex) {
        const ag_tile_cex *x = a->cex;
        CHECK_EQ_INT(a->status, AG_TILE_VIOLATED);
        CHECK_EQ_INT(a->line, rc_->write_line);
        const char *kind = rc_->kind ? rc_->kind : "write-after-read";
        int raw = !strcmp(kind, "read-after-write"), waw = !strcmp(kind, "write-after-write");
        CHECK_CONTAINS(a->text, "no data race");
        CHECK_CONTAINS(x->reason, kind);
        CHECK_CONTAINS(x->reason, waw ? "let one thread write each byte" : "add syncthreads()");
        CHECK(x->other >= 0 && x->other < 32 && x->other != x->thread);
        CHECK_EQ_INT(x->other_tidx[0], x->other);
        CHECK_EQ_INT(x->tidx[0], x->thread);
        char rl[32], wl[32];
        snprintf(rl, sizeof rl, "race.tile:%d:", rc_->read_line);
        snprintf(wl, sizeof wl, "race.tile:%d:", rc_->write_line);
        /* lhs: the earlier access (its thread is x->thread), rhs: the later */
        CHECK_CONTAINS(x->lhs.via, raw ? wl : rl);
        CHECK_CONTAINS(x->rhs.via, raw ? rl : wl);
        CHECK_CONTAINS(x->lhs.tag, raw || waw ? "writes bytes" : "reads bytes");
        CHECK_CONTAINS(x->rhs.tag, raw ? "reads bytes" : "writes bytes");
        /* the two accesses meet: reader's and writer's bytes overlap */
        long long r0 = 0, w0 = 0;
        const char *p = strchr(x->lhs.tag, '['), *q = strchr(x->rhs.tag, '[');
        CHECK(p && q);
        if (p && q) {
          r0 = strtoll(p + 1, NULL, 10);
          w0 = strtoll(q + 1, NULL, 10);
          CHECK(r0 / 4 == w0 / 4);
        }
      } else {
        fprintf(stderr, "%s: no race found\n", rc_->name);
        CHECK(0);
      }
    } else {
      if (a)
        fprintf(stderr, "%s: a race reported\n", rc_->name);
      CHECK(a == NULL);
      CHECK(ag_tile_report_ok(r));
    }
    if (r->races_proved != rc_->proved)
      fprintf(stderr, "%s: %lld race-free writes\n", rc_->name, (long long)r->races_proved);
    CHECK_EQ_INT(r->races_proved, rc_->proved);
    ag_tile_report_free(r);
    ag_diags_release(&d);
  }
  /* long barrier intervals are bounded: a racy one is refuted at its first
   * racing pair (the pair's later instances add nothing); a race-free
   * one (once refused by the enumeration work) is proved in bounded time,
   * since a pair found race-free is not enumerated again (msg NULL) */
  static const struct {
    const char *body, *msg;
  } heavy[] = {
      {"        x = s[(tid + i) % 32]\n        s[tid] = A[tid]\n", "--max-writes"},
      {"        x = s[(tid + 32 * i) % 32]\n        s[tid] = A[tid]\n", NULL},
  };
  for (size_t i = 0; i < sizeof heavy / sizeof heavy[0]; i++) {
    char text[1024];
    snprintf(text, sizeof text, "%s    for i in range(3000):\n%s", RACE_HDR, heavy[i].body);
    ag_diags d;
    ag_diags_init(&d);
    int rc;
    clock_t t0 = clock(); /* CPU time: the machine is shared */
    ag_tile_check_opts uo; /* unrolled (summarized, the loop is one interval's pairs) */
    memset(&uo, 0, sizeof uo);
    uo.unroll = 1;
    ag_tile_report *r = tu_check(text, "heavy.tile", &d, &rc, &uo);
    double dt = (double)(clock() - t0) / CLOCKS_PER_SEC;
    if (!heavy[i].msg) {
      CHECK_EQ_INT(rc, 0);
      CHECK(r && ag_tile_report_ok(r));
      CHECK(dt < 3.0 * LIMIT_TIME_SCALE); /* 0.7 s on the loaded 2-core machine */
    } else {
      /* the racy one: the first pair of the two statements that the
       * enumeration finds racing is the counterexample; the other
       * instances of that pair are not enumerated again (race.c), so it is
       * refuted in bounded time instead of running into --max-writes */
      CHECK_EQ_INT(rc, 0);
      CHECK(r && !ag_tile_report_ok(r));
      CHECK(dt < 3.0 * LIMIT_TIME_SCALE);
      int raced = 0;
      for (int j = 0; r && j < r->nasserts; j++)
        raced |= r->asserts[j].race && r->asserts[j].status == AG_TILE_VIOLATED;
      CHECK(raced);
    }
    ag_tile_report_free(r);
    ag_diags_release(&d);
  }
  /* the correct gemm is race-free; without its trailing barrier it is not */
  char *src = tu_read("examples/tile/gemm.tile", NULL);
  CHECK(src != NULL);
  ag_diags d;
  ag_diags_init(&d);
  int rc;
  ag_tile_report *r = src ? tu_check(src, "gemm.tile", &d, &rc, NULL) : NULL;
  CHECK(r && ag_tile_report_ok(r));
  ag_tile_report_free(r);
  ag_diags_release(&d);
  free(src);
}

/* Counterexamples: threadIdx (x, y, z) from the block shape, the smallest
 * sizes that violate (one at a time, in parameter order). */
TEST(test_cex_minimal) {
  static const struct {
    const char *text;
    int64_t M, N, ty, tx;
  } cs[] = {
      {"@threads(32)\ndef k(A: Tensor(M, N, f32)):\n    assert M < 5000\n", 5000, 1, -1, -1},
      {"@threads(32)\ndef k(A: Tensor(M, N, f32)):\n    assume M % 7 == 3\n    assume N > 20\n"
       "    assert M + N < 40\n",
       3, 37, -1, -1},
      {"@threads(8, 4)\ndef k(A: Tensor(M, N, f32)):\n    assert threadIdx.y < 3\n", 1, 1, 3, -1},
      {"@threads(8, 4)\ndef k(A: Tensor(M, N, f32)):\n"
       "    assert threadIdx.x != 5 or threadIdx.y != 2\n",
       1, 1, 2, 5},
  };
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
    ag_diags d;
    ag_diags_init(&d);
    int rc;
    ag_tile_report *r = tu_check(cs[i].text, "min.tile", &d, &rc, NULL);
    CHECK_EQ_INT(rc, 0);
    const ag_tile_cex *x = r && r->nasserts == 1 ? r->asserts[0].cex : NULL;
    CHECK(x != NULL);
    if (x) {
      CHECK_EQ_INT(tu_size(x, "M"), cs[i].M);
      CHECK_EQ_INT(tu_size(x, "N"), cs[i].N);
      CHECK_EQ_INT(x->thread, x->tidx[0] + 8 * x->tidx[1] * (cs[i].ty >= 0) +
                                  32 * x->tidx[1] * (cs[i].ty < 0) + 32 * x->tidx[2]);
      if (cs[i].ty >= 0)
        CHECK_EQ_INT(x->tidx[1], cs[i].ty);
      if (cs[i].tx >= 0)
        CHECK_EQ_INT(x->tidx[0], cs[i].tx);
      CHECK(x->tidx[0] < (cs[i].ty >= 0 ? 8 : 32));
      ag_str s = AG_STR_INIT;
      ag_tile_report_text(r, &s);
      char want[64];
      snprintf(want, sizeof want, "threadIdx (%lld, %lld, 0)", (long long)x->tidx[0],
               (long long)x->tidx[1]);
      CHECK_CONTAINS(ag_str_cstr(&s), want);
      ag_str_release(&s);
      json_t *j = ag_tile_report_json(r);
      json_t *ti = json_object_get(
          json_object_get(json_array_get(json_object_get(j, "assertions"), 0), "counterexample"),
          "threadIdx");
      CHECK_EQ_INT(json_integer_value(json_array_get(ti, 1)), x->tidx[1]);
      json_decref(j);
    }
    ag_tile_report_free(r);
    ag_diags_release(&d);
  }
}

/* A side no write reaches (decided by enumeration, no solver model): the
 * sizes of its counterexample are the smallest the assumptions allow (they
 * were an arbitrary model, M = 8388608). */
TEST(test_cex_minimal_bot) {
  const char *text = "@threads(128)\n@grid(M / 128)\ndef k(A: Tensor(M, f32)):\n"
                     "    assume M % 128 == 0\n    T = A[i] -> (i,)\n    tid = threadIdx.x\n"
                     "    s = make_shared((128,), f32)\n    if tid < 64:\n"
                     "        s[tid] = A[blockIdx.x * 128 + tid]\n    syncthreads()\n"
                     "    assert tag(s[tid]) == (blockIdx.x * 128 + tid,)\n";
  ag_diags d;
  ag_diags_init(&d);
  int rc;
  ag_tile_report *r = tu_check(text, "bot.tile", &d, &rc, NULL);
  CHECK_EQ_INT(rc, 0);
  const ag_tile_cex *x = r && r->nasserts == 1 ? r->asserts[0].cex : NULL;
  CHECK(x != NULL);
  if (x) {
    CHECK_CONTAINS(x->reason, "bot");
    CHECK_EQ_INT(tu_size(x, "M"), 128);
    CHECK_EQ_INT(x->tidx[0], x->thread);
    CHECK(x->thread >= 64);
  }
  ag_tile_report_free(r);
  ag_diags_release(&d);
}

/* A one-mode tile refilled after a barrier without reset(): the advice
 * names the whole tile; with the reset() it is proved. */
TEST(test_reset_advice) {
  for (int with_reset = 0; with_reset < 2; with_reset++) {
    char text[1024];
    snprintf(text, sizeof text,
             HDR32 "    s = make_shared((32,), f32)\n    s[tid] = A[tid]\n    syncthreads()\n"
                   "    x = s[tid]\n    syncthreads()\n%s    s[tid] = A[tid + 32]\n"
                   "    syncthreads()\n    assert tag(s[tid]) == (tid + 32,)\n",
             with_reset ? "    reset(s)\n" : "");
    ag_diags d;
    ag_diags_init(&d);
    int rc;
    ag_tile_report *r = tu_check(text, "reuse.tile", &d, &rc, NULL);
    CHECK_EQ_INT(rc, 0);
    const ag_tile_cex *x = r && r->nasserts == 1 ? r->asserts[0].cex : NULL;
    if (with_reset) {
      CHECK(r && ag_tile_report_ok(r));
    } else {
      CHECK(x != NULL);
      if (x) {
        CHECK_CONTAINS(x->reason, "the tags differ");
        CHECK_CONTAINS(x->reason, "written at reuse.tile:6:5 before a barrier");
        CHECK_CONTAINS(x->reason, "add reset(s) after the barrier");
        CHECK_CONTAINS(x->reason, "before the write at reuse.tile:10:5");
      }
    }
    ag_tile_report_free(r);
    ag_diags_release(&d);
  }
}

/* --all: every violating instance, counted, with a counterexample each;
 * without it, the first only. */
/* text checked (with --all and a batch size when given) that must succeed
 * and hold one assertion: its result, or NULL (a failure); *r and d are the
 * caller's to free. */
static const ag_tile_assert_result *one_assert(const char *text, const char *name, int all,
                                               int batch, ag_diags *d, ag_tile_report **r) {
  ag_tile_check_opts o;
  memset(&o, 0, sizeof o);
  o.all = all;
  o.batch = batch;
  ag_diags_init(d);
  int rc;
  *r = tu_check(text, name, d, &rc, &o);
  CHECK_EQ_INT(rc, 0);
  const ag_tile_assert_result *a = *r && (*r)->nasserts == 1 ? &(*r)->asserts[0] : NULL;
  CHECK(a != NULL);
  return a;
}

/* --all minimizes every counterexample, not only the first: each instance
 * of `M < 5000 + 1000 * i` is violated first at M = 5000 + 1000 * i. */
TEST(test_all_minimized) {
  const char *text = "@threads(32)\ndef k(A: Tensor(M, f32)):\n    for i in range(3):\n"
                     "        assert M < 5000 + 1000 * i\n";
  ag_diags d;
  ag_tile_report *r;
  const ag_tile_assert_result *a = one_assert(text, "allmin.tile", 1, 0, &d, &r);
  if (a) {
    CHECK_EQ_INT(a->violations, 3);
    CHECK_EQ_INT(a->nmore, 2);
    int seen = 0;
    for (int k = -1; k < a->nmore; k++) {
      const ag_tile_cex *x = k < 0 ? a->cex : a->more[k];
      CHECK(x && x->nloops == 1);
      if (x && x->nloops == 1) {
        int64_t i = x->loops[0].value;
        CHECK(i >= 0 && i < 3);
        CHECK_EQ_INT(tu_size(x, "M"), 5000 + 1000 * i);
        seen |= 1 << i;
      }
    }
    CHECK_EQ_INT(seen, 7);
  }
  ag_tile_report_free(r);
  ag_diags_release(&d);
}

TEST(test_all_instances) {
  const char *text = HDR32 "    s = make_shared((32,), f32)\n    s[tid] = A[tid]\n    syncthreads()\n"
                           "    for i in range(4):\n"
                           "        assert tag(s[(tid + i) % 32]) == (tid,)\n";
  for (int all = 0; all < 2; all++) {
    ag_diags d;
    ag_tile_report *r;
    /* batches of 2: instances found across batches and within one */
    const ag_tile_assert_result *a = one_assert(text, "all.tile", all, all ? 2 : 0, &d, &r);
    if (a) {
      CHECK_EQ_INT(a->status, AG_TILE_VIOLATED);
      CHECK_EQ_INT(a->instances, 4);
      CHECK_EQ_INT(a->violations, all ? 3 : 1);
      CHECK_EQ_INT(a->nmore, all ? 2 : 0);
      int seen = 0; /* the loop values of the violating instances: 1, 2, 3 */
      for (int k = -1; k < a->nmore; k++) {
        const ag_tile_cex *x = k < 0 ? a->cex : a->more[k];
        CHECK(x && x->nloops == 1);
        if (x && x->nloops == 1) {
          CHECK(x->loops[0].value >= 1 && x->loops[0].value <= 3);
          seen |= 1 << x->loops[0].value;
        }
      }
      if (all)
        CHECK_EQ_INT(seen, 0xe);
      ag_str s = AG_STR_INIT;
      ag_tile_report_text(r, &s);
      if (all)
        CHECK_CONTAINS(ag_str_cstr(&s), "violated in 3 of 4 instances");
      ag_str_release(&s);
      json_t *j = ag_tile_report_json(r);
      json_t *aj = json_array_get(json_object_get(j, "assertions"), 0);
      CHECK_EQ_INT(json_integer_value(json_object_get(aj, "violations")), all ? 3 : 1);
      CHECK_EQ_INT((int64_t)json_array_size(json_object_get(aj, "counterexamples")), all ? 3 : 0);
      json_decref(j);
    }
    ag_tile_report_free(r);
    ag_diags_release(&d);
  }
  /* instances that no single model violates together (each needs its own
   * thread): one batch, asked again until every one is found */
  const char *excl = HDR32 "    for i in range(4):\n        assert tid != 3 * i + 1\n";
  ag_diags d;
  ag_tile_report *r;
  const ag_tile_assert_result *a = one_assert(excl, "excl.tile", 1, 0, &d, &r);
  if (a) {
    CHECK_EQ_INT(a->violations, 4);
    CHECK_EQ_INT(a->nmore, 3);
    for (int k = -1; k < a->nmore; k++) {
      const ag_tile_cex *x = k < 0 ? a->cex : a->more[k];
      CHECK(x && x->nloops == 1);
      if (x && x->nloops == 1)
        CHECK_EQ_INT(x->thread, 3 * x->loops[0].value + 1);
    }
  }
  ag_tile_report_free(r);
  ag_diags_release(&d);
}

/* Planted bug gemm-vacuous: never-reached assertions, an error under
 * strict; correct variations of gemm (examples/tile/variants) proved. */
TEST(test_variants_and_vacuous) {
  static const char *const variants[] = {"gemm-reorder", "gemm-swizzle-rows", "gemm-fragswap"};
  for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
    char name[64];
    snprintf(name, sizeof name, "../variants/%s", variants[i]);
    char *src = tu_mutate(name);
    CHECK(src != NULL);
    if (!src)
      continue;
    ag_tile_check_opts o;
    memset(&o, 0, sizeof o);
    o.strict = 1;
    ag_diags d;
    ag_diags_init(&d);
    int rc;
    ag_tile_report *r = tu_check(src, variants[i], &d, &rc, &o);
    CHECK_EQ_INT(rc, 0);
    CHECK(r && r->nasserts == 4 && ag_tile_report_ok(r));
    if (r && !ag_tile_report_ok(r))
      fprintf(stderr, "variant %s is not proved\n", variants[i]);
    ag_tile_report_free(r);
    ag_diags_release(&d);
    free(src);
  }
  char *src = tu_mutate("gemm-vacuous");
  CHECK(src != NULL);
  int line = src ? tu_line_of(src, "assert tag(sAh[") : 0;
  for (int strict = 0; src && strict < 2; strict++) {
    ag_tile_check_opts o;
    memset(&o, 0, sizeof o);
    o.strict = strict;
    ag_diags d;
    ag_diags_init(&d);
    int rc;
    ag_tile_report *r = tu_check(src, "gemm-vacuous", &d, &rc, &o);
    CHECK_EQ_INT(rc, 0);
    const ag_tile_assert_result *a = r ? tu_find(r, line) : NULL;
    CHECK(a != NULL);
    if (a) {
      CHECK_EQ_INT(a->status, strict ? AG_TILE_VACUOUS : AG_TILE_PROVED);
      CHECK_EQ_INT(a->instances, 0);
    }
    CHECK_EQ_INT(r ? ag_tile_report_ok(r) : -1, !strict);
    CHECK_EQ_INT((int)d.items.n, 2);
    ag_tile_report_free(r);
    ag_diags_release(&d);
  }
  free(src);
}

/* Vacuity: an assertion no instance reaches is a warning by default, an
 * error under strict, and a kernel whose assertions are all unreached (the
 * loops of --set K=0) is never OK. */
static const ag_tile_assert_result *at_line(const ag_tile_report *r, int line) {
  return tu_find(r, line);
}

TEST(test_vacuity) {
  const char *text = "@threads(32)\ndef k(A: Tensor(M, f32), K: const = 4):\n"
                     "    for i in range(K):\n        assert threadIdx.x < 32\n"
                     "    assert threadIdx.x < 32\n    if K > 100:\n"
                     "        assert threadIdx.x < 3\n";
  ag_tile_check_opts o;
  memset(&o, 0, sizeof o);
  for (int strict = 0; strict < 2; strict++) {
    o.strict = strict;
    ag_diags d;
    ag_diags_init(&d);
    int rc;
    ag_tile_report *r = tu_check(text, "vac.tile", &d, &rc, &o);
    CHECK_EQ_INT(rc, 0);
    const ag_tile_assert_result *a = at_line(r, 7);
    CHECK(a != NULL);
    if (a)
      CHECK_EQ_INT(a->status, strict ? AG_TILE_VACUOUS : AG_TILE_PROVED);
    CHECK(at_line(r, 4) && at_line(r, 4)->status == AG_TILE_PROVED);
    CHECK_EQ_INT(r ? ag_tile_report_ok(r) : -1, !strict);
    CHECK(d.items.n == 1);
    if (d.items.n >= 1) {
      CHECK_EQ_INT(d.items.v[0].sev, strict ? AG_SEV_ERROR : AG_SEV_WARNING);
      CHECK_EQ_INT(d.items.v[0].line, 7);
      CHECK_EQ_INT(d.items.v[0].col, 9);
      CHECK_CONTAINS(d.items.v[0].msg, "assertion never reached");
    }
    ag_tile_report_free(r);
    ag_diags_release(&d);
  }
  /* every assertion unreached: not OK even without strict */
  char *src = tu_read("examples/tile/gemm.tile", NULL);
  CHECK(src != NULL);
  const char *defs[] = {"K=0"};
  memset(&o, 0, sizeof o);
  o.defines = defs;
  o.ndefines = 1;
  ag_diags d;
  ag_diags_init(&d);
  int rc;
  ag_tile_report *r = src ? tu_check(src, "gemm.tile", &d, &rc, &o) : NULL;
  CHECK(r != NULL);
  if (r) {
    CHECK(!ag_tile_report_ok(r));
    int nvac = 0;
    for (int i = 0; i < r->nasserts; i++)
      nvac += r->asserts[i].status == AG_TILE_VACUOUS;
    CHECK_EQ_INT(nvac, 4);
    ag_str s = AG_STR_INIT;
    ag_tile_report_text(r, &s);
    CHECK_CONTAINS(ag_str_cstr(&s), "4 never reached");
    ag_str_release(&s);
  }
  ag_tile_report_free(r);
  ag_diags_release(&d);
  free(src);
}

RUN_TESTS(T(test_resource_limits), T(test_vacuity), T(test_examples_proved), T(test_planted_bugs), T(test_semantics),
          T(test_counterexample_values), T(test_semantic_errors), T(test_json_report),
          T(test_set_overrides), T(test_races), T(test_cex_minimal), T(test_cex_minimal_bot), T(test_reset_advice), T(test_all_instances), T(test_all_minimized),
          T(test_variants_and_vacuous))
