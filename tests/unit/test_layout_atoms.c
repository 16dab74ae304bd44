/*
 * test_layout_atoms.c — the instruction TV layouts of argus/layout_atoms.h,
 * point by point against the PTX ISA's fragment formulas, written here as
 * the ISA states them (an oracle independent of atoms.c's strides):
 *
 *  9.7.14.5.8 "Matrix Fragments for mma.m16n8k16 with floating point type",
 *  .f16/.bf16, groupID = %laneid >> 2, threadID_in_group = %laneid % 4:
 *   A (a0..a7): row = groupID         for ai, 0 <= i < 2 || 4 <= i < 6
 *                     groupID + 8     otherwise
 *               col = threadID_in_group*2 + (i & 0x1)       for i < 4
 *                     threadID_in_group*2 + (i & 0x1) + 8   for i >= 4
 *   B (b0..b3): row = threadID_in_group*2 + (i & 0x1)       for i < 2
 *                     threadID_in_group*2 + (i & 0x1) + 8   for i >= 2
 *               col = groupID
 *   C/D (c0..c3): row = groupID for i < 2, groupID + 8 for i >= 2
 *                 col = threadID_in_group*2 + (i & 0x1)
 *  ldmatrix .m8n8 .x4 .b16: threads 8i..8i+7 supply the row addresses of
 *   matrix i; destination register di holds matrix i, and in it each thread
 *   holds row groupID, elements threadID_in_group*2 and *2+1.
 *  9.7.15.5.1.1 wgmma .m64nNk16 A from registers (a0..a7, Figure 148), warp
 *   w of the warpgroup owning rows 16w..16w+15, each warp's 16 x 16 block as
 *   mma.m16n8k16's A:
 *   row = 16w + groupID      for ai, 0 <= i < 2 || 4 <= i < 6
 *         16w + groupID + 8  otherwise
 *   col = threadID_in_group*2 + (i & 0x1) (+ 8 for i >= 4)
 *  9.7.15.5.1.1 wgmma .m64nNk16 accumulator D (d0..d(N/2-1)), warp w of
 *   the warpgroup owning rows 16w..16w+15:
 *   row = 16w + groupID + 8*((i >> 1) & 1)   (groupID for i % 4 < 2, +8 otherwise)
 *   col = (i >> 2)*8 + threadID_in_group*2 + (i & 0x1)
 *
 * Every atom is also checked to be a bijection onto its tile, and each
 * comparison is run once more against a deliberately wrong oracle.
 */
#include "argus/layout_atoms.h"
#include "check.h"
#include "layout_ref.h"

#include <stdlib.h>

typedef void (*oracle)(int64_t t, int64_t v, int n, int64_t *row, int64_t *col);

static void mma_a(int64_t t, int64_t i, int n, int64_t *row, int64_t *col) {
  int64_t g = t >> 2, tig = t % 4;
  *row = ((i >= 0 && i < 2) || (i >= 4 && i < 6)) ? g : g + 8;
  *col = i < 4 ? tig * 2 + (i & 1) : tig * 2 + (i & 1) + 8;
}

static void mma_b(int64_t t, int64_t i, int n, int64_t *row, int64_t *col) {
  /* the ISA's (row, col) are (k, n); the tile is N x K, so row = n, col = k */
  int64_t g = t >> 2, tig = t % 4;
  int64_t k = i < 2 ? tig * 2 + (i & 1) : tig * 2 + (i & 1) + 8;
  *row = g;
  *col = k;
}

static void mma_c(int64_t t, int64_t i, int n, int64_t *row, int64_t *col) {
  int64_t g = t >> 2, tig = t % 4;
  *row = i < 2 ? g : g + 8;
  *col = tig * 2 + (i & 1);
}

static void ldsm_dst(int64_t t, int64_t v, int n, int64_t *row, int64_t *col) {
  int64_t i = v / 2, j = v % 2; /* register di, half j */
  *row = 8 * i + (t >> 2);     /* matrix i, row groupID */
  *col = (t % 4) * 2 + j;
}

static void ldsm_src(int64_t t, int64_t v, int n, int64_t *row, int64_t *col) {
  *row = t; /* thread t supplies the address of stacked row t */
  *col = v;
}

static void wgmma_d(int64_t t, int64_t i, int n, int64_t *row, int64_t *col) {
  int64_t w = t / 32, lane = t % 32, g = lane >> 2, tig = lane % 4;
  *row = 16 * w + g + 8 * ((i >> 1) & 1);
  *col = (i >> 2) * 8 + tig * 2 + (i & 1);
}

static void wgmma_a(int64_t t, int64_t i, int n, int64_t *row, int64_t *col) {
  int64_t w = t / 32, lane = t % 32, g = lane >> 2, tig = lane % 4;
  *row = ((i >= 0 && i < 2) || (i >= 4 && i < 6)) ? 16 * w + g : 16 * w + g + 8;
  *col = i < 4 ? tig * 2 + (i & 1) : tig * 2 + (i & 1) + 8;
}

/* deliberately wrong oracles: a plausible misreading of each formula */
static void mma_a_wrong(int64_t t, int64_t i, int n, int64_t *row, int64_t *col) {
  mma_a(t, i, n, row, col);
  *row = (t >> 2) + 8 * (i & 1); /* +8 on odd registers instead of i in {2,3,6,7} */
}
static void mma_b_wrong(int64_t t, int64_t i, int n, int64_t *row, int64_t *col) {
  mma_b(t, i, n, row, col);
  int64_t r = *row;
  *row = *col % 8; /* k and n swapped */
  *col = r + 8 * (i >> 1);
}
static void mma_c_wrong(int64_t t, int64_t i, int n, int64_t *row, int64_t *col) {
  mma_c(t, i, n, row, col);
  *col = (t % 4) * 2 + (i >> 1); /* columns from the high bit */
  *row = (t >> 2) + 8 * (i & 1);
}
static void ldsm_dst_wrong(int64_t t, int64_t v, int n, int64_t *row, int64_t *col) {
  ldsm_dst(t, v, n, row, col);
  *row = 8 * (v / 2) + (t % 8); /* rows from the low lane bits */
}
static void ldsm_src_wrong(int64_t t, int64_t v, int n, int64_t *row, int64_t *col) {
  *row = (t % 8) * 4 + t / 8;
  *col = v;
}
static void wgmma_d_wrong(int64_t t, int64_t i, int n, int64_t *row, int64_t *col) {
  wgmma_d(t, i, n, row, col);
  *col = (i >> 2) * 8 + (t % 4) * 2 + ((i >> 1) & 1); /* the row bit as column bit */
}

static void wgmma_a_wrong(int64_t t, int64_t i, int n, int64_t *row, int64_t *col) {
  wgmma_a(t, i, n, row, col);
  *row = (t % 32 >> 2) + 8 * (t / 32) + 32 * ((i >> 1) & 1); /* warps as 8-row blocks */
}

/* Number of (t, v) whose offset disagrees with the oracle; also checks the
 * TV layout is a bijection onto the rows x cols tile. */
static int64_t compare(const ag_layout *tv, int64_t rows, int64_t cols, int n, oracle f,
                       int *bijective) {
  ag_layout tm = {tv->shape->child[0], tv->stride->child[0]};
  ag_layout vm = {tv->shape->child[1], tv->stride->child[1]};
  int64_t nt = ag_layout_size(&tm), nv = ag_layout_size(&vm), bad = 0;
  unsigned char *seen = calloc((size_t)(rows * cols), 1);
  *bijective = nt * nv == rows * cols;
  for (int64_t t = 0; t < nt; t++)
    for (int64_t v = 0; v < nv; v++) {
      int64_t a, b, row, col;
      CHECK_EQ_INT(ag_layout_eval_index(&tm, t, &a), 0);
      CHECK_EQ_INT(ag_layout_eval_index(&vm, v, &b), 0);
      int64_t off = a + b; /* TV(t, v) */
      f(t, v, n, &row, &col);
      if (off != row + rows * col)
        bad++;
      if (off < 0 || off >= rows * cols || seen[off])
        *bijective = 0;
      else
        seen[off] = 1;
    }
  free(seen);
  return bad;
}

static void check_atom(const char *name, int n, oracle good, oracle wrong, int64_t threads,
                       int64_t values, int64_t rows, int64_t cols) {
  lctx t;
  lctx_init(&t);
  ag_layout tv;
  ag_atom_info info;
  int rc = ag_atom_layout(&t.c, name, &tv, &info);
  CHECK_EQ_INT(rc, 0);
  if (rc == 0) {
    CHECK_EQ_INT(ag_layout_rank(&tv), 2);
    CHECK_EQ_INT(info.threads, threads);
    CHECK_EQ_INT(info.values, values);
    CHECK_EQ_INT(info.rows, rows);
    CHECK_EQ_INT(info.cols, cols);
    ag_layout tm = {tv.shape->child[0], tv.stride->child[0]};
    ag_layout vm = {tv.shape->child[1], tv.stride->child[1]};
    CHECK_EQ_INT(ag_layout_size(&tm), threads);
    CHECK_EQ_INT(ag_layout_size(&vm), values);
    int bij;
    int64_t bad = compare(&tv, rows, cols, n, good, &bij);
    if (bad)
      fprintf(stderr, "%s: %lld of %lld (t,v) disagree with the ISA\n", name, (long long)bad,
              (long long)(threads * values));
    CHECK_EQ_INT(bad, 0);
    CHECK(bij);
    CHECK(compare(&tv, rows, cols, n, wrong, &bij) > 0);
  }
  lctx_free(&t);
}

TEST(test_mma_m16n8k16) {
  check_atom("mma.m16n8k16.a", 0, mma_a, mma_a_wrong, 32, 8, 16, 16);
  check_atom("mma.m16n8k16.b", 0, mma_b, mma_b_wrong, 32, 4, 8, 16);
  check_atom("mma.m16n8k16.c", 0, mma_c, mma_c_wrong, 32, 4, 16, 8);
  check_atom("mma.m16n8k16.d", 0, mma_c, mma_c_wrong, 32, 4, 16, 8);
}

TEST(test_ldmatrix_x4) {
  check_atom("ldmatrix.x4", 0, ldsm_dst, ldsm_dst_wrong, 32, 8, 32, 8);
  check_atom("ldmatrix.x4.src", 0, ldsm_src, ldsm_src_wrong, 32, 8, 32, 8);
}

TEST(test_wgmma_accumulator) {
  for (int n = 8; n <= 256; n += 8) {
    char name[32];
    snprintf(name, sizeof name, "wgmma.m64n%dk16.d", n);
    check_atom(name, n, wgmma_d, wgmma_d_wrong, 128, n / 2, 64, n);
  }
}

TEST(test_wgmma_a) {
  check_atom("wgmma.m64nNk16.a", 0, wgmma_a, wgmma_a_wrong, 128, 8, 64, 16);
  for (int n = 8; n <= 256; n += 8) {
    char name[32];
    snprintf(name, sizeof name, "wgmma.m64n%dk16.a", n);
    check_atom(name, n, wgmma_a, wgmma_a_wrong, 128, 8, 64, 16);
  }
  lctx t;
  lctx_init(&t);
  ag_layout tv;
  ag_atom_info info;
  CHECK_EQ_INT(ag_atom_layout(&t.c, "wgmma.m64n96k16.a", &tv, &info), 0);
  CHECK_EQ_STR(info.name, "wgmma.m64n96k16.a");
  CHECK_EQ_STR(info.axes, "M x K");
  CHECK_EQ_INT(ag_atom_layout(&t.c, "wgmma.m64n12k16.a", &tv, NULL), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "N must be a multiple of 8 in 8..256, not 12");
  CHECK_EQ_INT(ag_atom_layout(&t.c, "wgmma.m64n264k16.a", &tv, NULL), AG_EINVAL);
  CHECK_EQ_INT(ag_atom_layout(&t.c, "wgmma.m64n64k16.b", &tv, NULL), AG_ENOTFOUND);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "wgmma.m64n<N>k16.a");
  lctx_free(&t);
}

TEST(test_atom_lookup_errors) {
  lctx t;
  lctx_init(&t);
  ag_layout tv;
  CHECK_EQ_INT(ag_atom_layout(&t.c, "mma.m16n8k8.a", &tv, NULL), AG_ENOTFOUND);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "unknown atom 'mma.m16n8k8.a'; known:");
  CHECK_EQ_INT(ag_atom_layout(&t.c, "wgmma.m64n12k16.d", &tv, NULL), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "N must be a multiple of 8");
  CHECK_EQ_INT(ag_atom_layout(&t.c, "wgmma.m64n264k16.d", &tv, NULL), AG_EINVAL);
  CHECK_EQ_INT(ag_atom_layout(&t.c, "wgmma.m64n064k16.d", &tv, NULL), AG_ENOTFOUND);
  CHECK_EQ_INT(ag_atom_layout(&t.c, "wgmma.m64nk16.d", &tv, NULL), AG_ENOTFOUND);
  CHECK_EQ_INT(ag_atom_wgmma_m64nNk16_d(&t.c, 0, &tv), AG_EINVAL);
  CHECK_EQ_INT(ag_atom_mma_m16n8k16_a(&t.c, &tv), 0);
  lctx_free(&t);
}

RUN_TESTS(T(test_mma_m16n8k16), T(test_ldmatrix_x4), T(test_wgmma_accumulator), T(test_wgmma_a),
          T(test_atom_lookup_errors))
