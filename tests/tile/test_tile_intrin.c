/*
 * test_tile_intrin.c — every row of the intrinsic table (src/tile/tile_intrin.h)
 * in each of its three users. For each row, a kernel that calls it (by the
 * row's name, with the rows of the other kinds it needs looked up in the
 * table by kind) checks clean (the checker), lowers to CUDA C that holds
 * the row's instruction (the lowering), and runs in the value interpreter,
 * whose result is compared with a reference computed here: D = A B^T + C for
 * an mma (its fragments placed through the row's own .a/.b/.c layouts), the
 * PTX ISA's fragment layout for an ldmatrix of the row's width and
 * transposition (which must also be the row's dst_tv layout), a permuted copy
 * through shared memory for the cp.async group and the barrier. A row of a
 * kind this test has no program for fails it, and so does a row a module
 * does not handle: adding a row without handling it everywhere fails here.
 */
#include "argus/layout.h"
#include "argus/tile_run.h"
#include "check.h"

#include "../../src/tile/run/run_int.h"
#include "tile_util.h"
#define TILE_PIPE_FILE "intrin.tile"
#include "tile_pipe.h"

/* The name of the first row of kind k (NULL when the table has none). */
static const char *row_of(ag__ik k) {
  int n;
  const ag__intrin *t = ag__intrin_table(&n);
  for (int i = 0; i < n; i++)
    if (t[i].kind == k)
      return t[i].name;
  return NULL;
}

/* The name of the first row of kind k whose tx flag is tx (mbar_arrive / mbar_expect_tx). */
static const char *row_tx(ag__ik k, int tx) {
  int n;
  const ag__intrin *t = ag__intrin_table(&n);
  for (int i = 0; i < n; i++)
    if (t[i].kind == k && t[i].tx == tx)
      return t[i].name;
  return NULL;
}

/* The program for row in (owned by out); 0 when this test has no program for its kind. */
static int program(const ag__intrin *in, ag_str *out) {
  switch (in->kind) {
  case IK_MMA:
    ag_str_printf(out,
                  "@threads(32)\n"
                  "def kern(A: Tensor(16, 16, bf16), B: Tensor(8, 16, bf16), C: Tensor(16, 8, f32),\n"
                  "         D: Tensor(16, 8, f32)):\n"
                  "    lane = threadIdx.x\n"
                  "    a = make_local((8,), bf16)\n    b = make_local((4,), bf16)\n"
                  "    c = make_local((4,), f32)\n    d = make_local((4,), f32)\n"
                  "    for e in range(8):\n"
                  "        m, k = %s.a(lane, e)\n        a[e] = A[m, k]\n"
                  "    for e in range(4):\n"
                  "        n, k = %s.b(lane, e)\n        b[e] = B[n, k]\n"
                  "        m, n = %s.c(lane, e)\n        c[e] = C[m, n]\n"
                  "    %s(d, a, b, c)\n"
                  "    for e in range(4):\n"
                  "        m, n = %s.c(lane, e)\n        D[m, n] = d[e]\n",
                  in->name, in->name, in->name, in->name, in->name);
    return 1;
  case IK_LDMATRIX: {
    int r = 8 * in->num, v = 2 * in->num; /* rows of the stacked tile; values per lane */
    ag_str_printf(out,
                  "@threads(32)\n"
                  "def kern(S: Tensor(%d, bf16), Y: Tensor(%d, bf16)):\n"
                  "    t = threadIdx.x\n"
                  "    s = make_shared((%d, 8), bf16)\n"
                  "    for j in range(%d):\n"
                  "        e = t * %d + j\n        s[e / 8, e %% 8] = S[e]\n"
                  "    syncthreads()\n"
                  "    r = make_local((%d,), bf16)\n"
                  "    %s(r, s[t %% %d, 0])\n"
                  "    for j in range(%d):\n        Y[t * %d + j] = r[j]\n",
                  r * 8, 32 * v, r, v, v, v, in->name, r, v, v);
    return 1;
  }
  case IK_CP_ASYNC:
  case IK_CP_COMMIT:
  case IK_CP_WAIT:
  case IK_SYNC: {
    /* one program holds the four kinds; the row under test takes its kind's place */
    const char *cp = in->kind == IK_CP_ASYNC ? in->name : row_of(IK_CP_ASYNC);
    const char *commit = in->kind == IK_CP_COMMIT ? in->name : row_of(IK_CP_COMMIT);
    const char *wait = in->kind == IK_CP_WAIT ? in->name : row_of(IK_CP_WAIT);
    const char *sync = in->kind == IK_SYNC ? in->name : row_of(IK_SYNC);
    if (!cp || !commit || !wait || !sync)
      return 0;
    ag_str_printf(out,
                  "@threads(32)\n"
                  "def kern(X: Tensor(32, u32), Y: Tensor(32, u32)):\n"
                  "    t = threadIdx.x\n"
                  "    s = make_shared((32,), u32)\n"
                  "    %s(s[t], X[t])\n    %s()\n    %s(0)\n    %s()\n"
                  "    Y[t] = s[31 - t]\n",
                  cp, commit, wait, sync);
    return 1;
  }
  case IK_MBAR_INIT:
  case IK_MBAR_FENCE:
  case IK_MBAR_ARRIVE:
  case IK_MBAR_WAIT:
  case IK_BULK_COPY: {
    /* one program holds the mbarrier kinds: thread 0 initializes (count 33:
     * its expect_tx and the 32 plain arrivals), expects 128 bytes and copies
     * them in bulk; every thread arrives and waits for phase 0 */
#define PICK(k_, tx_) (in->kind == (k_) && in->tx == (tx_) ? in->name : row_tx((k_), (tx_)))
    const char *init = PICK(IK_MBAR_INIT, 0), *fence = PICK(IK_MBAR_FENCE, 0);
    const char *expect = PICK(IK_MBAR_ARRIVE, 1), *arrive = PICK(IK_MBAR_ARRIVE, 0);
    const char *wait = PICK(IK_MBAR_WAIT, 0), *bulk = PICK(IK_BULK_COPY, 0);
#undef PICK
    if (!init || !fence || !expect || !arrive || !wait || !bulk)
      return 0;
    ag_str_printf(out,
                  "@threads(32)\n"
                  "def kern(X: Tensor(32, u32), Y: Tensor(32, u32)):\n"
                  "    t = threadIdx.x\n"
                  "    bar = make_shared((1,), u64)\n"
                  "    s = make_shared((32,), u32)\n"
                  "    if t == 0:\n        %s(bar[0], 33)\n        %s()\n"
                  "    syncthreads()\n"
                  "    if t == 0:\n        %s(bar[0], 128)\n        %s(s[0], X[0], 128, bar[0])\n"
                  "    %s(bar[0])\n    %s(bar[0], 0)\n"
                  "    Y[t] = s[31 - t]\n",
                  init, fence, expect, bulk, arrive, wait);
    return 1;
  }
  case IK_TMA_LOAD:
  case IK_TMA_STORE:
  case IK_TMA_COMMIT:
  case IK_TMA_WAIT: {
    /* one program holds the TMA kinds: thread 0 loads X's box (rank 1, 128 bytes) on an
     * mbarrier, every thread writes s reversed into r, and thread 0 stores r to Y */
    const char *ld = in->kind == IK_TMA_LOAD ? in->name : row_of(IK_TMA_LOAD);
    const char *stv = in->kind == IK_TMA_STORE ? in->name : row_of(IK_TMA_STORE);
    const char *commit = in->kind == IK_TMA_COMMIT ? in->name : row_of(IK_TMA_COMMIT);
    const char *wait = in->kind == IK_TMA_WAIT ? in->name : row_of(IK_TMA_WAIT);
    if (!ld || !stv || !commit || !wait)
      return 0;
    ag_str_printf(out,
                  "@threads(32)\n"
                  "def kern(X: Tensor(32, u32), Y: Tensor(32, u32)):\n"
                  "    t = threadIdx.x\n"
                  "    tmX = tma_map(X, box=(32,))\n"
                  "    tmY = tma_map(Y, box=(32,))\n"
                  "    bar = make_shared((1,), u64)\n"
                  "    s = make_shared((32,), u32)\n"
                  "    r = make_shared((32,), u32)\n"
                  "    if t == 0:\n        mbar_init(bar[0], 1)\n        fence_mbar_init()\n"
                  "    syncthreads()\n"
                  "    if t == 0:\n        mbar_expect_tx(bar[0], tmX.bytes)\n"
                  "        %s(tmX, 0, s, bar[0])\n"
                  "    mbar_wait(bar[0], 0)\n"
                  "    r[t] = s[31 - t]\n"
                  "    syncthreads()\n"
                  "    if t == 0:\n        %s(tmY, 0, r)\n        %s()\n        %s(0)\n",
                  ld, stv, commit, wait);
    return 1;
  }
  case IK_WGMMA:
  case IK_WG_FENCE:
  case IK_WG_COMMIT:
  case IK_WG_WAIT: {
    /* one product, fenced, committed and waited for; the row under test takes its kind's
     * place (the product: the m64n64k16 row). A comes from registers when N % 16 == 8,
     * else from shared memory; both operands 32-byte swizzled, K-major. */
    const char *mm = in->kind == IK_WGMMA ? in->name : "wgmma_m64n64k16";
    const ag__intrin *w = ag__intrin_lookup(mm);
    const char *fence = in->kind == IK_WG_FENCE ? in->name : row_of(IK_WG_FENCE);
    const char *commit = in->kind == IK_WG_COMMIT ? in->name : row_of(IK_WG_COMMIT);
    const char *wait = in->kind == IK_WG_WAIT ? in->name : row_of(IK_WG_WAIT);
    if (!w || !fence || !commit || !wait)
      return 0;
    int n = w->n, areg = n % 16 == 8;
    ag_str_printf(out,
                  "@threads(128)\n"
                  "def kern(A: Tensor(64, 16, bf16), B: Tensor(%d, 16, bf16), C: Tensor(64, %d, f32),\n"
                  "         D: Tensor(64, %d, f32)):\n"
                  "    t = threadIdx.x\n"
                  "    sA = make_shared((64, 16), bf16, swizzle(1, 3, 3))\n"
                  "    sB = make_shared((%d, 16), bf16, swizzle(1, 3, 3))\n"
                  "    for j in range(8):\n"
                  "        e = j * 128 + t\n        sA[e / 16, e %% 16] = A[e / 16, e %% 16]\n"
                  "    for j in range(%d):\n"
                  "        e = j * 128 + t\n        sB[e / 16, e %% 16] = B[e / 16, e %% 16]\n"
                  "    syncthreads()\n"
                  "    a = make_local((8,), bf16)\n"
                  "    for e in range(8):\n"
                  "        m, k = %s.a(t, e)\n        a[e] = A[m, k]\n"
                  "    d = make_local((%d,), f32)\n"
                  "    for v in range(%d):\n"
                  "        m, n = %s.d(t, v)\n        d[v] = C[m, n]\n"
                  "    %s()\n    %s(d, %s, sB)\n    %s()\n    %s(0)\n"
                  "    for v in range(%d):\n"
                  "        m, n = %s.d(t, v)\n        D[m, n] = d[v]\n",
                  n, n, n, n, n / 8, mm, n / 2, n / 2, mm, fence, mm, areg ? "a" : "sA", commit,
                  wait, n / 2, mm);
    return 1;
  }
  case IK_SETMAXNREG: {
    /* a warp-specialized block: warpgroup 0 lowers its registers, warpgroup 1
     * raises them (the row under test is one of the two) */
    const char *other = row_tx(IK_SETMAXNREG, !in->tx);
    if (!other)
      return 0;
    ag_str_printf(out,
                  "@threads(256)\n"
                  "def kern(X: Tensor(32, u32), Y: Tensor(32, u32)):\n"
                  "    t = threadIdx.x\n"
                  "    if t / 128 == 0:\n        %s(40)\n    else:\n        %s(232)\n"
                  "    if t < 32:\n        Y[t] = X[31 - t]\n",
                  in->tx ? other : in->name, in->tx ? in->name : other);
    return 1;
  }
  case IK_CP_MBAR_ARRIVE: {
    /* every thread copies one word with cp.async and arrives when it lands */
    const char *init = row_tx(IK_MBAR_INIT, 0), *fence = row_tx(IK_MBAR_FENCE, 0);
    const char *wait = row_tx(IK_MBAR_WAIT, 0), *cp = row_of(IK_CP_ASYNC);
    if (!init || !fence || !wait || !cp)
      return 0;
    ag_str_printf(out,
                  "@threads(32)\n"
                  "def kern(X: Tensor(32, u32), Y: Tensor(32, u32)):\n"
                  "    t = threadIdx.x\n"
                  "    bar = make_shared((1,), u64)\n"
                  "    s = make_shared((32,), u32)\n"
                  "    if t == 0:\n        %s(bar[0], 32)\n        %s()\n"
                  "    syncthreads()\n"
                  "    %s(s[t], X[t])\n    %s(bar[0])\n    %s(bar[0], 0)\n"
                  "    Y[t] = s[31 - t]\n",
                  init, fence, cp, in->name, wait);
    return 1;
  }
  }
  return 0;
}

/* What the lowered CUDA C of row in must hold, written here (mma and
 * ldmatrix: the row's instruction, which names its width and .trans). */
static const char *cuda_want(const ag__intrin *in) {
  switch (in->kind) {
  case IK_MMA:
  case IK_LDMATRIX: return in->ptx;
  case IK_CP_ASYNC: return "ag_cp_async<4>(";
  case IK_CP_COMMIT: return "asm volatile(\"cp.async.commit_group;\"";
  case IK_CP_WAIT: return "asm volatile(\"cp.async.wait_group 0;\"";
  case IK_SYNC: return "__syncthreads();";
  /* the prelude's helpers spell the instructions (it holds every row's PTX
   * whatever is called): the call of the row's helper on the program's tiles */
  case IK_MBAR_INIT: return "ag_mbar_init(bar + ";
  case IK_MBAR_FENCE: return "ag_mbar_fence_init();";
  case IK_MBAR_ARRIVE: return in->tx ? "ag_mbar_expect_tx(bar + " : "ag_mbar_arrive(bar + ";
  case IK_MBAR_WAIT: return "ag_mbar_wait(bar + ";
  case IK_BULK_COPY: return "ag_bulk_copy(s + ";
  case IK_TMA_LOAD: return "ag_tma_load1(s + ";
  case IK_TMA_STORE: return "ag_tma_store1(&tmY, r + ";
  case IK_TMA_COMMIT: return "asm volatile(\"cp.async.bulk.commit_group;\"";
  case IK_TMA_WAIT: return "asm volatile(\"cp.async.bulk.wait_group.read 0;\"";
  case IK_WGMMA: return in->ptx;
  case IK_WG_FENCE: return "asm volatile(\"wgmma.fence.sync.aligned;\"";
  case IK_WG_COMMIT: return "asm volatile(\"wgmma.commit_group.sync.aligned;\"";
  case IK_WG_WAIT: return "asm volatile(\"wgmma.wait_group.sync.aligned 0;\"";
  case IK_SETMAXNREG: return in->tx ? "setmaxnreg.inc.sync.aligned.u32 232;"
                                    : "setmaxnreg.dec.sync.aligned.u32 40;";
  case IK_CP_MBAR_ARRIVE: return "ag_cp_async_mbar_arrive(bar + ";
  }
  return NULL;
}


/* Integers in -8..7, exact in bf16 and in the sums of 16 products, with no
 * short period in i (an element read from the wrong place shows). */
static float small(int i, int k) {
  return (float)((int)(((uint32_t)i * 2654435761u + (uint32_t)k * 40503u) >> 28) - 8);
}

/* The value interpreter's result for row in against the reference; the number of mismatches. */
static long run_and_compare(const ag__intrin *in, const ag_tile_program *p,
                            const ag_tile_lowered *l) {
  void *t[4] = {0};
  char err[512] = "";
  long bad = 0;
  int rc = -1;
  if (in->kind == IK_MMA) {
    uint16_t *A = malloc(256 * 2), *B = malloc(128 * 2);
    float *C = malloc(128 * 4), *D = calloc(128, 4);
    for (int i = 0; i < 256; i++)
      A[i] = ag__f2bf(small(i, 5));
    for (int i = 0; i < 128; i++) {
      B[i] = ag__f2bf(small(i, 3));
      C[i] = small(i, 11) / 2;
    }
    t[0] = A, t[1] = B, t[2] = C, t[3] = D;
    rc = interpret(p, l, "kern", t, err, sizeof err);
    for (int m = 0; !rc && m < 16; m++)
      for (int n = 0; n < 8; n++) {
        double s = C[m * 8 + n];
        for (int k = 0; k < 16; k++)
          s += (double)ag__bf2f(A[m * 16 + k]) * ag__bf2f(B[n * 16 + k]);
        bad += D[m * 8 + n] != (float)s;
      }
  } else if (in->kind == IK_LDMATRIX) {
    int r = 8 * in->num, v = 2 * in->num;
    uint16_t *S = malloc((size_t)r * 8 * 2), *Y = calloc((size_t)32 * v, 2);
    for (int i = 0; i < r * 8; i++)
      S[i] = (uint16_t)(0x1000 + i); /* distinct patterns: the value names its element */
    t[0] = S, t[1] = Y;
    rc = interpret(p, l, "kern", t, err, sizeof err);
    /* the row's destination layout: (lane, value) -> row + r * column */
    ag_arena ar;
    ag_arena_init(&ar, 0);
    ag_layout_ctx lc;
    ag_layout_ctx_init(&lc, &ar);
    ag_layout tv;
    ag_diags d;
    ag_diags_init(&d);
    int lrc = ag_layout_parse(&lc, in->dst_tv, &d, &tv);
    CHECK_EQ_INT(lrc, 0);
    for (int lane = 0; !rc && !lrc && lane < 32; lane++)
      for (int j = 0; j < v; j++) {
        /* PTX ISA: value j of lane (t0 = lane % 4, t1 = lane / 4) is matrix j / 2's
         * row t1, column 2 t0 + j % 2; .trans: row 2 t0 + j % 2, column t1 */
        int t0 = lane % 4, t1 = lane / 4, i = j / 2;
        int row = in->trans ? 8 * i + 2 * t0 + j % 2 : 8 * i + t1;
        int col = in->trans ? t1 : 2 * t0 + j % 2;
        int64_t o = -1;
        ag_layout_eval_index(&tv, lane + 32 * j, &o);
        bad += o != row + (int64_t)r * col; /* the table says the same */
        bad += Y[lane * v + j] != S[row * 8 + col];
      }
    ag_diags_release(&d);
    ag_layout_ctx_release(&lc);
    ag_arena_release(&ar);
  } else if (in->kind >= IK_WGMMA && in->kind <= IK_WG_WAIT) {
    int n = in->kind == IK_WGMMA ? in->n : 64;
    uint16_t *A = malloc(64 * 16 * 2), *B = malloc((size_t)n * 16 * 2);
    float *C = malloc((size_t)64 * n * 4), *D = calloc((size_t)64 * n, 4);
    for (int i = 0; i < 64 * 16; i++)
      A[i] = ag__f2bf(small(i, 7));
    for (int i = 0; i < n * 16; i++)
      B[i] = ag__f2bf(small(i, 13));
    for (int i = 0; i < 64 * n; i++)
      C[i] = small(i, 17) / 2;
    t[0] = A, t[1] = B, t[2] = C, t[3] = D;
    rc = interpret(p, l, "kern", t, err, sizeof err);
    for (int m = 0; !rc && m < 64; m++)
      for (int j = 0; j < n; j++) {
        double s = C[m * n + j];
        for (int k = 0; k < 16; k++)
          s += (double)ag__bf2f(A[m * 16 + k]) * ag__bf2f(B[j * 16 + k]);
        bad += D[m * n + j] != (float)s;
      }
  } else {
    uint32_t *X = malloc(32 * 4), *Y = calloc(32, 4);
    for (int i = 0; i < 32; i++)
      X[i] = 0x9e3779b9u * (uint32_t)(i + 1);
    t[0] = X, t[1] = Y;
    rc = interpret(p, l, "kern", t, err, sizeof err);
    for (int i = 0; !rc && i < 32; i++)
      bad += Y[i] != X[31 - i];
  }
  if (rc)
    printf("  %s: the value interpreter fails: %s\n", in->name, err);
  CHECK_EQ_INT(rc, 0);
  for (int i = 0; i < 4; i++)
    free(t[i]);
  return rc ? -1 : bad;
}

TEST(test_every_row) {
  int n;
  const ag__intrin *tab = ag__intrin_table(&n);
  CHECK(n >= 56); /* mma, six ldmatrix, four cp.async and barrier rows, six mbarrier rows,
                     four TMA rows, 32 wgmma products and their fence, commit and wait */
  for (int i = 0; i < n; i++) {
    const ag__intrin *in = &tab[i];
    CHECK(ag__intrin_lookup(in->name) == in);
    ag_str text = AG_STR_INIT;
    int known = program(in, &text);
    if (!known)
      printf("  row '%s': this test has no program for its kind: add one\n", in->name);
    CHECK(known);
    ag_tile_program *p = known ? checked(ag_str_cstr(&text)) : NULL;
    ag_tile_lowered *l = p ? lowered(p) : NULL;
    CHECK(l != NULL);
    if (l) {
      const char *want = cuda_want(in);
      CHECK(want != NULL);
      if (in->kind >= IK_MBAR_INIT && in->kind <= IK_BULK_COPY) /* the row's instruction is in
                                                                 the CUDA C too (the helpers) */
        CHECK_CONTAINS(l->cuda, in->ptx);
      if (want && !strstr(l->cuda, want))
        printf("  row '%s': the lowered CUDA C lacks \"%s\"\n", in->name, want);
      CHECK(want && strstr(l->cuda, want));
      long bad = run_and_compare(in, p, l);
      if (bad)
        printf("  row '%s': %ld values differ from the reference\n", in->name, bad);
      CHECK_EQ_INT(bad, 0);
    }
    ag_tile_lowered_free(l);
    ag_tile_program_free(p);
    ag_str_release(&text);
  }
}

/* The lowering's message for text (a program it must refuse), "" when it lowers. */
static void lower_error(const char *text, ag_str *out) {
  ag_diags d;
  ag_diags_init(&d);
  ag_tile_program *p = NULL;
  ag_tile_lowered *l = NULL;
  ag_tile_lower_opts o;
  memset(&o, 0, sizeof o);
  if (!ag_tile_parse(text, strlen(text), "t.tile", &d, &p))
    ag_tile_lower(p, &o, &d, &l);
  ag_diags_format(&d, out);
  ag_tile_lowered_free(l);
  ag_tile_program_free(p);
  ag_diags_release(&d);
}

/* What the lowering refuses by the row (the checker refuses these first):
 * a cp.async size outside the row's sizes, a group count out of range. */
TEST(test_lower_refusals) {
  static const struct {
    const char *dt, *wait, *want;
  } cases[] = {
      {"u16", "0", "t.tile:5:5: error: cp_async copies 4, 8 or 16 bytes between elements of one size"},
      {"u32", "8", "t.tile:6:19: error: cp_async_wait(n) needs n in 0..7, not 8"},
      {"u64", "0", ""}, /* 8 bytes: one of the row's sizes */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ag_str text = AG_STR_INIT, err = AG_STR_INIT;
    ag_str_printf(&text,
                  "@threads(32)\ndef kern(X: Tensor(32, %s)):\n    t = threadIdx.x\n"
                  "    s = make_shared((32,), %s)\n    cp_async(s[t], X[t])\n"
                  "    cp_async_wait(%s)\n",
                  cases[i].dt, cases[i].dt, cases[i].wait);
    lower_error(ag_str_cstr(&text), &err);
    if (cases[i].want[0])
      CHECK_CONTAINS(ag_str_cstr(&err), cases[i].want);
    else
      CHECK_EQ_STR(ag_str_cstr(&err), "");
    ag_str_release(&text);
    ag_str_release(&err);
  }
}

/* A name that is not a row is no intrinsic to the lowering (the prefix of a
 * row is not enough: ldmatrix_x3 is none), as to the checker. */
TEST(test_not_a_row) {
  CHECK(ag__intrin_lookup("ldmatrix_x3") == NULL);
  CHECK(ag__intrin_lookup("mma_m16n8k8") == NULL);
  static const char text[] = "@threads(32)\ndef kern(Y: Tensor(32, u32)):\n"
                             "    r = make_local((4,), u32)\n"
                             "    ldmatrix_x3(r, Y[threadIdx.x])\n";
  ag_str err = AG_STR_INIT;
  lower_error(text, &err);
  CHECK_CONTAINS(ag_str_cstr(&err), "t.tile:4:5: error: unknown function 'ldmatrix_x3'");
  ag_str_release(&err);
}

/* examples/tile/ring_bulk.tile, a 2-stage mbarrier ring of bulk copies:
 * checked clean (also for every row count, --symbolic R), lowered with the
 * mbarrier and bulk-copy PTX, and run in the value interpreter against
 * Y = 2 X; a wrong reference (Y = X) must fail. */
TEST(test_ring_bulk) {
  char *src = tu_read("examples/tile/ring_bulk.tile", NULL);
  CHECK(src != NULL);
  if (!src)
    return;
  ag_tile_program *p = checked(src);
  ag_tile_lowered *l = p ? lowered(p) : NULL;
  CHECK(l != NULL);
  if (l) {
    CHECK_CONTAINS(l->cuda, "ag_bulk_copy(");
    CHECK_CONTAINS(l->cuda, ", 1 - ph);"); /* the producer's parity, then the consumers' */
    CHECK_CONTAINS(l->cuda, "ag_mbar_wait(full + (s_2 * 8), ph);\n");
    CHECK_CONTAINS(l->cuda, ", 512u, full + (s_2 * 8));"); /* the row's bytes */
    CHECK_CONTAINS(l->cuda, "ag_mbar_expect_tx(");
    enum { R = 8, C = 128 };
    float *X = malloc(R * C * 4), *Y = calloc(R * C, 4);
    for (int i = 0; i < R * C; i++)
      X[i] = small(i, 7) / 4;
    void *t[2] = {X, Y};
    char err[512] = "";
    int rc = interpret(p, l, "ring_bulk", t, err, sizeof err);
    if (rc)
      printf("  ring_bulk: the value interpreter fails: %s\n", err);
    CHECK_EQ_INT(rc, 0);
    long bad = 0, bad_wrong = 0;
    for (int i = 0; i < R * C; i++) {
      bad += Y[i] != 2 * X[i];
      bad_wrong += Y[i] != X[i];
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(bad_wrong > 0); /* the deliberately wrong reference */
    free(X);
    free(Y);
  }
  ag_tile_lowered_free(l);
  ag_tile_program_free(p);
  /* every row count */
  ag_diags d;
  ag_diags_init(&d);
  ag_tile_check_opts o;
  memset(&o, 0, sizeof o);
  const char *sym[] = {"R"};
  o.symbolic = sym;
  o.nsymbolic = 1;
  int rc;
  ag_tile_report *r = tu_check(src, "ring_bulk.tile", &d, &rc, &o);
  CHECK_EQ_INT(rc, 0);
  CHECK(r && ag_tile_report_ok(r));
  CHECK(r && r->nloops == 1); /* the ring loop is summarized */
  ag_tile_report_free(r);
  ag_diags_release(&d);
  free(src);
}

RUN_TESTS({"test_every_row", test_every_row}, {"test_lower_refusals", test_lower_refusals},
          {"test_not_a_row", test_not_a_row}, {"test_ring_bulk", test_ring_bulk})
