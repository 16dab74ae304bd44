/*
 * test_layout_hopper.c — Hopper's shared-memory operands (argus/layout_atoms.h,
 * src/tile/layout/hopper.c) point by point against oracles written here from
 * the sources, independently of hopper.c's formulas:
 *
 *  - where TMA puts a box (CUDA Programming Guide, "TMA Swizzle"): rows of
 *    the box packed, then in each 128-byte line y of shared memory the
 *    16-byte chunk x goes to chunk x ^ (y % c), c = span / 16;
 *  - the canonical tile: one TMA box per span-wide strip, strips stacked;
 *  - the PTX ISA's canonical layouts ("Canonical Layouts", T = 8 for 16-bit
 *    elements), evaluated term by term as the table writes them:
 *      K-major none      ((8,m),(T,2k)):((1T,SBO),(1,LBO))
 *      K-major c chunks  ((8,m),(T,2k)):((cT,SBO),(1,T))
 *      MN-major none     ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))
 *      MN-major c chunks ((T,c,m),(8,k)):((1,T,LBO),(cT,SBO))
 *    and its examples' exact layouts with their LBO and SBO;
 *  - the descriptor bits ("Matrix Descriptor Format") and the descriptor
 *    examples/common/hopper.cuh computes for its 128B K-major tiles;
 *  - cuTensorMapEncodeTiled's requirements (cuda.h).
 * Every comparison also runs against a deliberately wrong oracle.
 */
#include "argus/layout_atoms.h"
#include "check.h"
#include "layout_ref.h"

static const ag_swz_mode MODES[4] = {AG_SWZ_NONE, AG_SWZ_32B, AG_SWZ_64B, AG_SWZ_128B};

static int64_t nchunks(ag_swz_mode m) { return m ? m / 16 : 1; }

/* The guide's chunk permutation on an absolute shared address. */
static int64_t chunk_perm(int64_t c, int64_t a) {
  int64_t y = a / 128, x = (a % 128) / 16, b = a % 16;
  return y * 128 + ((y % c) ^ x) * 16 + b;
}

/* The canonical tile as TMA strips: K-major strips are span-wide column
 * blocks (R rows each), MN-major strips are span-tall row blocks (C k each). */
static int64_t strip_oracle(ag_gmma_major mj, int64_t c, int64_t R, int64_t C, int64_t base,
                            int64_t row, int64_t col) {
  int64_t span = 8 * c, rel;
  if (mj == AG_GMMA_K_MAJOR)
    rel = (col / span) * (R * 16 * c) + row * 16 * c + 2 * (col % span);
  else
    rel = (row / span) * (C * 16 * c) + col * 16 * c + 2 * (row % span);
  return base + chunk_perm(c, rel);
}

/* The ISA's canonical form of one wgmma operand (row < MN, k < 16), then
 * the swizzle on the absolute address. lbo, sbo, start in bytes. */
static int64_t isa_oracle(ag_gmma_major mj, int64_t c, int64_t start, int64_t lbo, int64_t sbo,
                          int64_t r, int64_t k) {
  const int64_t T = 8;
  int64_t L = lbo / 2, S = sbo / 2, off;
  if (mj == AG_GMMA_K_MAJOR && c == 1)
    off = (r % 8) * T + (r / 8) * S + (k % T) * 1 + (k / T) * L;
  else if (mj == AG_GMMA_K_MAJOR)
    off = (r % 8) * (c * T) + (r / 8) * S + (k % T) * 1 + (k / T) * T;
  else if (c == 1)
    off = (r % T) * 1 + 0 * T + (r / T) * S + (k % 8) * T + (k / 8) * L;
  else
    off = (r % T) * 1 + ((r / T) % c) * T + (r / (c * T)) * L + (k % 8) * (c * T) + (k / 8) * S;
  return chunk_perm(c, start + 2 * off);
}

/* ------------------------------------------------------------ tile layouts */

static void check_tile(ag_gmma_major mj, ag_swz_mode m, int64_t R, int64_t C, uint32_t base) {
  lctx t;
  lctx_init(&t);
  ag_smem_tile tile;
  int rc = ag_gmma_smem_layout(&t.c, mj, m, R, C, base, &tile);
  CHECK_EQ_INT(rc, 0);
  if (!rc) {
    int64_t c = nchunks(m), bad = 0, wrong = 0;
    unsigned char *seen = calloc((size_t)(R * C), 1);
    int bij = 1;
    for (int64_t r = 0; r < R; r++)
      for (int64_t k = 0; k < C; k++) {
        int64_t a;
        CHECK_EQ_INT(ag_smem_tile_addr(&t.c, &tile, r, k, &a), 0);
        if (a != strip_oracle(mj, c, R, C, base, r, k))
          bad++;
        /* wrong oracle: the strips stacked along the other dimension */
        if (a != strip_oracle(mj, c, R, C, base, k % R, r % C) || R != C)
          wrong++;
        int64_t e = (a - base) / 2;
        if (a < base || (a - base) % 2 || e >= R * C || seen[e])
          bij = 0;
        else
          seen[e] = 1;
      }
    free(seen);
    if (bad)
      fprintf(stderr, "%s %d %lldx%lld: %lld elements off the strip oracle\n",
              mj == AG_GMMA_K_MAJOR ? "K" : "MN", (int)m, (long long)R, (long long)C,
              (long long)bad);
    CHECK_EQ_INT(bad, 0);
    CHECK(bij);
    CHECK(wrong > 0);
  }
  lctx_free(&t);
}

TEST(test_canonical_layouts) {
  for (int i = 0; i < 4; i++) {
    int64_t span = 8 * nchunks(MODES[i]);
    check_tile(AG_GMMA_K_MAJOR, MODES[i], 64, 64, 0);
    check_tile(AG_GMMA_K_MAJOR, MODES[i], 128, 2 * span, 4096);
    check_tile(AG_GMMA_K_MAJOR, MODES[i], 8, span, 1024);
    check_tile(AG_GMMA_MN_MAJOR, MODES[i], 64, 64, 0);
    check_tile(AG_GMMA_MN_MAJOR, MODES[i], 2 * span, 32, 2048);
    check_tile(AG_GMMA_MN_MAJOR, MODES[i], span, 8, 1024);
  }
  /* the layout algebra's own form of the 128B K-major 64 x 64 tile */
  lctx t;
  lctx_init(&t);
  ag_smem_tile tile;
  CHECK_EQ_INT(ag_gmma_smem_layout(&t.c, AG_GMMA_K_MAJOR, AG_SWZ_128B, 64, 64, 0, &tile), 0);
  ag_str s = AG_STR_INIT;
  ag_layout_print(&tile.layout, &s);
  CHECK_EQ_STR(ag_str_cstr(&s), "((8,8),(64,1)):((64,512),(1,4096))");
  CHECK_EQ_INT(tile.swz.b, 3);
  CHECK_EQ_INT(tile.swz.m, 3);
  CHECK_EQ_INT(tile.swz.s, 3);
  CHECK_EQ_INT(tile.elem_bytes, 2);
  ag_str_clear(&s);
  CHECK_EQ_INT(ag_gmma_smem_layout(&t.c, AG_GMMA_MN_MAJOR, AG_SWZ_64B, 64, 16, 0, &tile), 0);
  ag_layout_print(&tile.layout, &s);
  CHECK_EQ_STR(ag_str_cstr(&s), "((32,2),(8,2)):((1,512),(32,256))");
  ag_str_release(&s);
  lctx_free(&t);
}

TEST(test_canonical_layout_errors) {
  lctx t;
  lctx_init(&t);
  ag_smem_tile tile;
  static const struct {
    int major, mode;
    int64_t rows, cols;
    const char *msg;
  } cases[] = {
      {0, 48, 64, 64, "swizzle 48 is no swizzle mode: 0 (none), 32, 64 or 128"},
      {2, 0, 64, 64, "major 2 is neither K-major (0) nor MN-major (1)"},
      {0, 128, 60, 64,
       "K-major tile rows (M or N) is 60: with 128B swizzle it must be a positive multiple of "
       "8 (a core matrix has 8 rows)"},
      {0, 128, 64, 32,
       "K-major tile cols (K) is 32: with 128B swizzle it must be a positive multiple of 64 "
       "(one swizzle row of 16-bit elements)"},
      {0, 32, 64, 0, "cols (K) is 0"},
      {1, 64, 48, 64,
       "MN-major tile rows (M or N) is 48: with 64B swizzle it must be a positive multiple of "
       "32 (one swizzle row of 16-bit elements)"},
      {1, 0, 64, 12, "MN-major tile cols (K) is 12: with no swizzle it must be a positive "
                     "multiple of 8 (a core matrix has 8 K rows)"},
      {0, 128, 256, 512, "a 256 x 512 tile of 16-bit elements is 262144 bytes: at most 232448"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    CHECK_EQ_INT(ag_gmma_smem_layout(&t.c, (ag_gmma_major)cases[i].major,
                                     (ag_swz_mode)cases[i].mode, cases[i].rows, cases[i].cols, 0,
                                     &tile),
                 AG_EINVAL);
    CHECK_CONTAINS(ag_str_cstr(&t.c.err), cases[i].msg);
  }
  CHECK_EQ_INT(ag_gmma_smem_layout(&t.c, AG_GMMA_K_MAJOR, AG_SWZ_128B, 224, 512, 0, &tile), 0);
  /* tiles made by hand */
  CHECK_EQ_INT(ag_gmma_smem_layout(&t.c, AG_GMMA_K_MAJOR, AG_SWZ_128B, 64, 64, 0, &tile), 0);
  int64_t a;
  CHECK_EQ_INT(ag_smem_tile_addr(&t.c, &tile, 64, 0, &a), AG_ERANGE);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "element (64, 0) is outside the 64 x 64 tile");
  CHECK_EQ_INT(ag_smem_tile_addr(&t.c, &tile, 0, -1, &a), AG_ERANGE);
  ag_smem_tile bad = tile;
  bad.elem_bytes = 3;
  CHECK_EQ_INT(ag_smem_tile_addr(&t.c, &bad, 0, 0, &a), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "elements are 3 bytes: 1, 2, 4, 8 or 16");
  bad = tile;
  CHECK_EQ_INT(ag_layout_parse(&t.c, "64:1", NULL, &bad.layout), 0);
  CHECK_EQ_INT(ag_smem_tile_addr(&t.c, &bad, 0, 0, &a), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "must have rank 2 (rows, cols)");
  bad = tile;
  bad.swz = (ag_swizzle){3, 3, 2};
  CHECK_EQ_INT(ag_smem_tile_addr(&t.c, &bad, 0, 0, &a), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "|S| must be at least B");
  lctx_free(&t);
}

/* ------------------------------------------------------------- descriptors */

TEST(test_desc_encode_decode) {
  lctx t;
  lctx_init(&t);
  ag_gmma_desc d = {0x1230, 0x40, 0x400, 0, AG_SWZ_128B}, e;
  uint64_t v;
  CHECK_EQ_INT(ag_gmma_desc_encode(&t.c, &d, &v), 0);
  /* the ISA's fields, written out */
  CHECK_EQ_U64(v, (uint64_t)(0x1230 >> 4) | (uint64_t)(0x40 >> 4) << 16 |
                      (uint64_t)(0x400 >> 4) << 32 | 1ull << 62);
  static const uint64_t field[4] = {0, 3, 2, 1}; /* none, 32B, 64B, 128B */
  for (int i = 0; i < 4; i++) {
    for (int bo = 0; bo < 8; bo++) {
      if (bo && !i)
        continue;
      ag_gmma_desc x = {0x3FFF0, 0x3FFF0 - 16 * (uint32_t)bo, 16, bo, MODES[i]};
      CHECK_EQ_INT(ag_gmma_desc_encode(&t.c, &x, &v), 0);
      CHECK_EQ_U64(v >> 62, field[i]);
      CHECK_EQ_U64(v >> 49 & 7, (uint64_t)bo);
      CHECK_EQ_U64(v & 0x3FFF, 0x3FFFu);
      CHECK_EQ_U64(v >> 16 & 0x3FFF, (uint64_t)(0x3FFF - bo));
      CHECK_EQ_U64(v >> 32 & 0x3FFF, 1u);
      CHECK_EQ_INT(ag_gmma_desc_decode(&t.c, v, &e), 0);
      CHECK_EQ_INT(e.start, x.start);
      CHECK_EQ_INT(e.lbo, x.lbo);
      CHECK_EQ_INT(e.sbo, x.sbo);
      CHECK_EQ_INT(e.base_offset, x.base_offset);
      CHECK_EQ_INT(e.swizzle, x.swizzle);
    }
  }
  /* bad descriptors */
  ag_gmma_desc b = d;
  b.start = 0x1238;
  CHECK_EQ_INT(ag_gmma_desc_encode(&t.c, &b, &v), AG_EINVAL);
  CHECK_EQ_U64(v, 0);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err),
                 "the start address is 4664 bytes: a descriptor holds a multiple of 16 in "
                 "0..262128");
  b = d;
  b.start = 1u << 18;
  CHECK_EQ_INT(ag_gmma_desc_encode(&t.c, &b, &v), AG_EINVAL);
  b = d;
  b.lbo = 24;
  CHECK_EQ_INT(ag_gmma_desc_encode(&t.c, &b, &v), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "leading dimension byte offset (LBO) is 24 bytes");
  b = d;
  b.sbo = 1u << 18;
  CHECK_EQ_INT(ag_gmma_desc_encode(&t.c, &b, &v), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "stride dimension byte offset (SBO) is 262144 bytes");
  b = d;
  b.base_offset = 8;
  CHECK_EQ_INT(ag_gmma_desc_encode(&t.c, &b, &v), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "base offset 8: the field holds 0..7");
  b = d;
  b.base_offset = -1;
  CHECK_EQ_INT(ag_gmma_desc_encode(&t.c, &b, &v), AG_EINVAL);
  b = d;
  b.base_offset = 2;
  b.swizzle = AG_SWZ_NONE;
  CHECK_EQ_INT(ag_gmma_desc_encode(&t.c, &b, &v), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "base offset 2 with no swizzle");
  b = d;
  b.swizzle = (ag_swz_mode)16;
  CHECK_EQ_INT(ag_gmma_desc_encode(&t.c, &b, &v), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "descriptor swizzle 16 is no swizzle mode");
  for (int bit = 0; bit < 64; bit++) {
    int unused = (bit >= 14 && bit <= 15) || (bit >= 30 && bit <= 31) ||
                 (bit >= 46 && bit <= 48) || (bit >= 52 && bit <= 61);
    int rc = ag_gmma_desc_decode(&t.c, 1ull << 62 | 1ull << bit, &e);
    CHECK_EQ_INT(rc, unused ? AG_EINVAL : 0);
  }
  CHECK_EQ_INT(ag_gmma_desc_decode(&t.c, 1ull << 47, &e), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err),
                 "descriptor 0x0000800000000000 sets unused bits 0x0000800000000000");
  CHECK_EQ_INT(ag_gmma_desc_decode(&t.c, 1ull << 50, &e), AG_EINVAL); /* base offset, none */
  lctx_free(&t);
}

TEST(test_desc_addr_isa) {
  lctx t;
  lctx_init(&t);
  rng_seed(23);
  for (int mj = 0; mj < 2; mj++)
    for (int i = 0; i < 4; i++)
      for (int trial = 0; trial < 40; trial++) {
        int64_t c = nchunks(MODES[i]);
        ag_gmma_desc d = {(uint32_t)(16 * rnd(0, 8000)), (uint32_t)(16 * rnd(0, 4000)),
                          (uint32_t)(16 * rnd(0, 4000)), 0, MODES[i]};
        int64_t bad = 0, wrong = 0;
        for (int64_t r = 0; r < 256; r++)
          for (int64_t k = 0; k < 16; k++) {
            int64_t a;
            CHECK_EQ_INT(ag_gmma_desc_addr(&t.c, &d, (ag_gmma_major)mj, r, k, &a), 0);
            if (a != isa_oracle((ag_gmma_major)mj, c, d.start, d.lbo, d.sbo, r, k))
              bad++;
            /* wrong oracle: LBO and SBO exchanged */
            if (a != isa_oracle((ag_gmma_major)mj, c, d.start, d.sbo, d.lbo, r, k))
              wrong++;
          }
        if (bad)
          fprintf(stderr, "major %d mode %d: %lld elements off the ISA's canonical layout\n",
                  mj, (int)MODES[i], (long long)bad);
        CHECK_EQ_INT(bad, 0);
        CHECK(wrong > 0 || d.lbo == d.sbo);
      }
  ag_gmma_desc d = {0, 16, 1024, 0, AG_SWZ_128B};
  int64_t a;
  CHECK_EQ_INT(ag_gmma_desc_addr(&t.c, &d, AG_GMMA_K_MAJOR, 256, 0, &a), AG_ERANGE);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "operand element (256, 0): a 16-bit wgmma operand");
  CHECK_EQ_INT(ag_gmma_desc_addr(&t.c, &d, AG_GMMA_K_MAJOR, 0, 16, &a), AG_ERANGE);
  CHECK_EQ_INT(ag_gmma_desc_addr(&t.c, &d, AG_GMMA_K_MAJOR, -1, 0, &a), AG_ERANGE);
  CHECK_EQ_INT(ag_gmma_desc_addr(&t.c, &d, AG_GMMA_K_MAJOR, 0, -1, &a), AG_ERANGE);
  d.base_offset = 3;
  CHECK_EQ_INT(ag_gmma_desc_addr(&t.c, &d, AG_GMMA_K_MAJOR, 0, 0, &a), AG_EUNSUPPORTED);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "base offset 3 is not modelled");
  d.base_offset = 0;
  d.start = 8;
  CHECK_EQ_INT(ag_gmma_desc_addr(&t.c, &d, AG_GMMA_K_MAJOR, 0, 0, &a), AG_EINVAL);
  lctx_free(&t);
}

/* Derives the descriptor of every 16-wide k step (and 64-row block of a
 * taller tile), encodes and decodes it, and checks that the decoded
 * descriptor's address is the tile's at every element. */
static void check_derive(ag_gmma_major mj, ag_swz_mode m, int64_t R, int64_t C, int64_t rows,
                         uint32_t base) {
  lctx t;
  lctx_init(&t);
  ag_smem_tile tile;
  CHECK_EQ_INT(ag_gmma_smem_layout(&t.c, mj, m, R, C, base, &tile), 0);
  int64_t bad = 0;
  for (int64_t r0 = 0; r0 + rows <= R; r0 += rows)
    for (int64_t k0 = 0; k0 < C; k0 += 16) {
      ag_gmma_desc d, e;
      uint64_t v;
      int rc = ag_gmma_desc_derive(&t.c, &tile, mj, r0, k0, rows, &d);
      if (rc)
        fprintf(stderr, "derive: %s\n", ag_str_cstr(&t.c.err));
      CHECK_EQ_INT(rc, 0);
      CHECK_EQ_INT(ag_gmma_desc_encode(&t.c, &d, &v), 0);
      CHECK_EQ_INT(ag_gmma_desc_decode(&t.c, v, &e), 0);
      for (int64_t r = 0; r < rows; r++)
        for (int64_t k = 0; k < 16; k++) {
          int64_t want, got;
          CHECK_EQ_INT(ag_smem_tile_addr(&t.c, &tile, r0 + r, k0 + k, &want), 0);
          CHECK_EQ_INT(ag_gmma_desc_addr(&t.c, &e, mj, r, k, &got), 0);
          if (want != got ||
              want != strip_oracle(mj, nchunks(m), R, C, base, r0 + r, k0 + k))
            bad++;
        }
    }
  CHECK_EQ_INT(bad, 0);
  lctx_free(&t);
}

TEST(test_desc_derive_every_mode) {
  for (int i = 0; i < 4; i++) {
    int64_t span = 8 * nchunks(MODES[i]);
    check_derive(AG_GMMA_K_MAJOR, MODES[i], 64, 64, 64, 0);       /* A: 64 x 64 */
    check_derive(AG_GMMA_K_MAJOR, MODES[i], 128, 64, 64, 8192);   /* A: two M blocks */
    check_derive(AG_GMMA_K_MAJOR, MODES[i], 256, 2 * span, 256, 0); /* B: N = 256 */
    check_derive(AG_GMMA_K_MAJOR, MODES[i], 8, span < 16 ? 16 : span, 8, 1024); /* N = 8 */
    check_derive(AG_GMMA_MN_MAJOR, MODES[i], 64, 64, 64, 0);
    check_derive(AG_GMMA_MN_MAJOR, MODES[i], 128, 32, 128, 4096);
    check_derive(AG_GMMA_MN_MAJOR, MODES[i], span, 16, span, 0);
  }
}

/* examples/common/hopper.cuh: smem_desc(p) = ((a & 0x3FFFF) >> 4) | 1 << 16 |
 * 64 << 32 | 1 << 62 for a 1024-aligned 128B K-major tile, advanced by 2 (32
 * bytes) per 16-wide k step: A is 64 x 64, B 128 x 64. */
TEST(test_desc_matches_hopper_cuh) {
  lctx t;
  lctx_init(&t);
  static const uint32_t bases[] = {0, 1024, 0x8000, 0x1C400, 0x37C00};
  static const int64_t rows[] = {64, 128};
  for (size_t bi = 0; bi < sizeof bases / sizeof bases[0]; bi++)
    for (int ri = 0; ri < 2; ri++) {
      ag_smem_tile tile;
      CHECK_EQ_INT(
          ag_gmma_smem_layout(&t.c, AG_GMMA_K_MAJOR, AG_SWZ_128B, rows[ri], 64, bases[bi], &tile),
          0);
      uint64_t a = bases[bi];
      uint64_t hopper = ((a & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
      for (int kk = 0; kk < 4; kk++) {
        ag_gmma_desc d;
        uint64_t v = 0;
        CHECK_EQ_INT(ag_gmma_desc_derive(&t.c, &tile, AG_GMMA_K_MAJOR, 0, 16 * kk, rows[ri], &d),
                     0);
        CHECK_EQ_INT(ag_gmma_desc_encode(&t.c, &d, &v), 0);
        CHECK_EQ_U64(v, hopper + 2 * (uint64_t)kk);
        CHECK(v != (hopper | 2ull << 62) + 2 * (uint64_t)kk); /* not the 64B mode */
      }
    }
  lctx_free(&t);
}

/* The ISA's examples (bf16, "Canonical Layouts"): exact layout, LBO, SBO. */
TEST(test_desc_derive_isa_examples) {
  static const struct {
    const char *layout;
    ag_swizzle swz;
    int64_t rows;
    uint32_t lbo, sbo;
    ag_swz_mode mode;
  } ex[] = {
      {"((8,1,2),(8,2)):((1,8,64),(8,128))", {0, 3, 3}, 16, 128 * 2, 64 * 2, AG_SWZ_NONE},
      {"((8,2,2),(8,2)):((1,8,128),(16,256))", {1, 3, 3}, 32, 128 * 2, 256 * 2, AG_SWZ_32B},
      {"((8,4,2),(8,2)):((1,8,256),(32,512))", {2, 3, 3}, 64, 256 * 2, 512 * 2, AG_SWZ_64B},
  };
  lctx t;
  lctx_init(&t);
  for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
    ag_smem_tile tile = {0x2000, {0}, ex[i].swz, 2};
    CHECK_EQ_INT(ag_layout_parse(&t.c, ex[i].layout, NULL, &tile.layout), 0);
    ag_gmma_desc d;
    int rc = ag_gmma_desc_derive(&t.c, &tile, AG_GMMA_MN_MAJOR, 0, 0, ex[i].rows, &d);
    if (rc)
      fprintf(stderr, "%s: %s\n", ex[i].layout, ag_str_cstr(&t.c.err));
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(d.start, 0x2000);
    CHECK_EQ_INT(d.lbo, ex[i].lbo);
    CHECK_EQ_INT(d.sbo, ex[i].sbo);
    CHECK_EQ_INT(d.swizzle, ex[i].mode);
    /* the same layout read as K-major is no canonical K-major layout */
    CHECK_EQ_INT(ag_gmma_desc_derive(&t.c, &tile, AG_GMMA_K_MAJOR, 0, 0, ex[i].rows, &d),
                 AG_EINVAL);
    CHECK_CONTAINS(ag_str_cstr(&t.c.err), "the tile is no canonical K-major");
  }
  lctx_free(&t);
}

/* The planted bug: a descriptor whose swizzle disagrees with the layout. */
TEST(test_desc_compare_mismatch) {
  lctx t;
  lctx_init(&t);
  ag_smem_tile tile;
  CHECK_EQ_INT(ag_gmma_smem_layout(&t.c, AG_GMMA_K_MAJOR, AG_SWZ_128B, 64, 64, 0, &tile), 0);
  ag_gmma_desc d;
  CHECK_EQ_INT(ag_gmma_desc_derive(&t.c, &tile, AG_GMMA_K_MAJOR, 0, 0, 64, &d), 0);
  ag_smem_diff diff;
  CHECK_EQ_INT(ag_gmma_desc_compare(&t.c, &d, AG_GMMA_K_MAJOR, &tile, 0, 0, 64, &diff), 0);
  CHECK_EQ_INT(diff.differs, 0);
  d.swizzle = AG_SWZ_64B;
  CHECK_EQ_INT(ag_gmma_desc_compare(&t.c, &d, AG_GMMA_K_MAJOR, &tile, 0, 0, 64, &diff), 0);
  CHECK_EQ_INT(diff.differs, 1);
  /* row 0 is unswizzled either way; the tile puts (1, 0) at 128 ^ 16 (line
   * 1, chunk 0 ^ 1), the 64B descriptor reads 64-byte rows: 64 */
  CHECK_EQ_INT(diff.row, 1);
  CHECK_EQ_INT(diff.col, 0);
  CHECK_EQ_INT(diff.want, strip_oracle(AG_GMMA_K_MAJOR, 8, 64, 64, 0, 1, 0));
  CHECK_EQ_INT(diff.want, 144);
  CHECK_EQ_INT(diff.got, 64);
  /* the tile's base off its 1024-byte pattern: the hardware swizzles the
   * absolute address, the tile its own offsets */
  ag_smem_tile off = tile;
  off.base = 128;
  d.swizzle = AG_SWZ_128B;
  d.start = 128;
  CHECK_EQ_INT(ag_gmma_desc_compare(&t.c, &d, AG_GMMA_K_MAJOR, &off, 0, 0, 64, &diff), 0);
  CHECK_EQ_INT(diff.differs, 1);
  CHECK_EQ_INT(diff.row, 0);
  CHECK_EQ_INT(diff.col, 0);
  CHECK_EQ_INT(diff.want, 128);
  CHECK_EQ_INT(diff.got, 128 + 16);
  CHECK_EQ_INT(ag_gmma_desc_derive(&t.c, &off, AG_GMMA_K_MAJOR, 0, 0, 64, &d), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err),
                 "the tile's base 0x80 is not aligned to the 1024 bytes after which the 128B "
                 "swizzle pattern repeats");
  /* a layout that is no canonical one: rows 136 bytes apart (padding) */
  ag_smem_tile pad = {0, {0}, {0, 3, 3}, 2};
  CHECK_EQ_INT(ag_layout_parse(&t.c, "(64,16):(68,1)", NULL, &pad.layout), 0);
  CHECK_EQ_INT(ag_gmma_desc_derive(&t.c, &pad, AG_GMMA_K_MAJOR, 0, 0, 64, &d), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err),
                 "the tile is no canonical K-major no swizzle layout: its element (1, 0) is at "
                 "byte 0x88, but the descriptor (start 0x0, LBO 16, SBO 1088) reads 0x10");
  lctx_free(&t);
}

TEST(test_desc_derive_errors) {
  lctx t;
  lctx_init(&t);
  ag_smem_tile tile;
  ag_gmma_desc d;
  ag_smem_diff diff;
  CHECK_EQ_INT(ag_gmma_smem_layout(&t.c, AG_GMMA_K_MAJOR, AG_SWZ_128B, 64, 64, 0, &tile), 0);
  CHECK_EQ_INT(ag_gmma_desc_derive(&t.c, &tile, (ag_gmma_major)5, 0, 0, 64, &d), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "major 5 is neither");
  CHECK_EQ_INT(ag_gmma_desc_derive(&t.c, &tile, AG_GMMA_K_MAJOR, 0, 0, 12, &d), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "an operand of 12 rows: 64 for A (M), N = 8..256");
  CHECK_EQ_INT(ag_gmma_desc_derive(&t.c, &tile, AG_GMMA_K_MAJOR, 0, 0, 264, &d), AG_EINVAL);
  CHECK_EQ_INT(ag_gmma_desc_derive(&t.c, &tile, AG_GMMA_K_MAJOR, 0, 0, 0, &d), AG_EINVAL);
  CHECK_EQ_INT(ag_gmma_desc_derive(&t.c, &tile, AG_GMMA_K_MAJOR, 8, 0, 64, &d), AG_ERANGE);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err),
                 "the 64 x 16 operand at (8, 0) does not fit the 64 x 64 tile");
  CHECK_EQ_INT(ag_gmma_desc_derive(&t.c, &tile, AG_GMMA_K_MAJOR, 0, 56, 64, &d), AG_ERANGE);
  CHECK_EQ_INT(ag_gmma_desc_derive(&t.c, &tile, AG_GMMA_K_MAJOR, -8, 0, 8, &d), AG_ERANGE);
  CHECK_EQ_INT(ag_gmma_desc_derive(&t.c, &tile, AG_GMMA_K_MAJOR, 0, -16, 8, &d), AG_ERANGE);
  CHECK_EQ_INT(ag_gmma_desc_compare(&t.c, &d, AG_GMMA_K_MAJOR, &tile, 0, 48, 64, &diff), 0);
  CHECK_EQ_INT(ag_gmma_desc_compare(&t.c, &d, AG_GMMA_K_MAJOR, &tile, 0, 56, 64, &diff),
               AG_ERANGE);
  ag_smem_tile bad = tile;
  bad.elem_bytes = 4;
  CHECK_EQ_INT(ag_gmma_desc_derive(&t.c, &bad, AG_GMMA_K_MAJOR, 0, 0, 64, &d), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "the tile's elements are 4 bytes: wgmma descriptors");
  bad = tile;
  bad.swz = (ag_swizzle){3, 4, 3}; /* the byte swizzle given in elements */
  CHECK_EQ_INT(ag_gmma_desc_derive(&t.c, &bad, AG_GMMA_K_MAJOR, 0, 0, 64, &d), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err),
                 "the tile's Swizzle<3,4,3> (in 16-bit elements) is no wgmma mode");
  bad.swz = (ag_swizzle){4, 3, 4};
  CHECK_EQ_INT(ag_gmma_desc_derive(&t.c, &bad, AG_GMMA_K_MAJOR, 0, 0, 64, &d), AG_EINVAL);
  bad.swz = (ag_swizzle){3, 3, 4};
  CHECK_EQ_INT(ag_gmma_desc_derive(&t.c, &bad, AG_GMMA_K_MAJOR, 0, 0, 64, &d), AG_EINVAL);
  /* strides a descriptor cannot hold */
  ag_smem_tile wide = {0, {0}, {0, 3, 3}, 2};
  CHECK_EQ_INT(ag_layout_parse(&t.c, "((8,2),(8,2)):((8,-64),(1,64))", NULL, &wide.layout), 0);
  wide.base = 4096;
  CHECK_EQ_INT(ag_gmma_desc_derive(&t.c, &wide, AG_GMMA_K_MAJOR, 0, 0, 16, &d), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err),
                 "the stride dimension byte offset (SBO) the layout needs is -128 bytes");
  CHECK_EQ_INT(ag_layout_parse(&t.c, "((8,2),(8,2)):((8,131072),(1,64))", NULL, &wide.layout),
               0);
  CHECK_EQ_INT(ag_gmma_desc_derive(&t.c, &wide, AG_GMMA_K_MAJOR, 0, 0, 16, &d), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "(SBO) the layout needs is 262144 bytes");
  CHECK_EQ_INT(ag_layout_parse(&t.c, "((8,2),(8,2)):((8,64),(1,-64))", NULL, &wide.layout), 0);
  CHECK_EQ_INT(ag_gmma_desc_derive(&t.c, &wide, AG_GMMA_K_MAJOR, 0, 0, 16, &d), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "(LBO) the layout needs is -128 bytes");
  wide.base = 8;
  CHECK_EQ_INT(ag_layout_parse(&t.c, "((8,2),(8,2)):((8,64),(1,128))", NULL, &wide.layout), 0);
  CHECK_EQ_INT(ag_gmma_desc_derive(&t.c, &wide, AG_GMMA_K_MAJOR, 0, 0, 16, &d), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "the operand's start address is 8 bytes");
  wide.base = 0;
  CHECK_EQ_INT(ag_gmma_desc_derive(&t.c, &wide, AG_GMMA_K_MAJOR, 0, 0, 16, &d), 0);
  CHECK_EQ_INT(d.lbo, 256);
  CHECK_EQ_INT(d.sbo, 128);
  lctx_free(&t);
}

/* -------------------------------------------------------------------- TMA */

/* examples/common/harness_util.h's map: a rows x cols f16 matrix, cols
 * contiguous, box_rows x box_cols, 128B swizzle. */
static ag_tma_map map2d(int64_t rows, int64_t cols, uint32_t brows, uint32_t bcols,
                        ag_swz_mode swz) {
  ag_tma_map m = {0};
  m.rank = 2;
  m.elem_bytes = 2;
  m.elem_float = 1;
  m.gaddr = 0x7f0000000000ull;
  m.dim[0] = (uint64_t)cols;
  m.dim[1] = (uint64_t)rows;
  m.stride[0] = (uint64_t)cols * 2;
  m.box[0] = bcols;
  m.box[1] = brows;
  m.estride[0] = m.estride[1] = 1;
  m.swizzle = swz;
  return m;
}

TEST(test_tma_check) {
  lctx t;
  lctx_init(&t);
  ag_tma_map ok = map2d(4096, 4096, 64, 64, AG_SWZ_128B);
  CHECK_EQ_INT(ag_tma_map_check(&t.c, &ok), 0);
  ag_tma_map b128 = map2d(4096, 4096, 128, 64, AG_SWZ_128B); /* gemm_tma's B */
  CHECK_EQ_INT(ag_tma_map_check(&t.c, &b128), 0);
  CHECK_EQ_INT(ag_tma_box_bytes(&b128), 128 * 64 * 2);
  ag_tma_map m5 = ok;
  m5.rank = 5;
  for (int i = 2; i < 5; i++) {
    m5.dim[i] = 3;
    m5.stride[i - 1] = m5.stride[i - 2] * m5.dim[i - 1];
    m5.box[i] = 5;
    m5.estride[i] = 2;
  }
  CHECK_EQ_INT(ag_tma_map_check(&t.c, &m5), 0);
  CHECK_EQ_INT(ag_tma_box_extent(&m5, 2), 3); /* ceil(5 / 2) */
  CHECK_EQ_INT(ag_tma_box_bytes(&m5), 64 * 64 * 27 * 2);
  static const struct {
    int field, index;
    int64_t value;
    const char *msg;
  } bad[] = {
      {0, 0, 0, "tensor rank is 0: 1 to 5"},
      {0, 0, 6, "tensor rank is 6: 1 to 5"},
      {1, 0, 3, "element size is 3 bytes: 1, 2, 4 or 8"},
      {2, 0, 0x7f0000000008ll, "global address 0x7f0000000008 is not 16-byte aligned"},
      {3, 1, 0, "global dimension 1 is 0: 1 to 2^32"},
      {3, 0, (1ll << 32) + 1, "global dimension 0 is 4294967297: 1 to 2^32"},
      {4, 0, 100, "global stride 0 (of dimension 1) is 100 bytes: a multiple of 16 below 2^40"},
      {4, 0, 1ll << 40, "global stride 0 (of dimension 1) is 1099511627776 bytes"},
      {5, 1, 300, "box dimension 1 is 300: 1 to 256"},
      {5, 1, 0, "box dimension 1 is 0: 1 to 256"},
      {5, 0, 4, "box dimension 0 is 4 elements of 2 bytes = 8 bytes: the inner box must be a "
                "multiple of 16 bytes"},
      {5, 0, 128, "box dimension 0 is 128 elements of 2 bytes = 256 bytes: the 128B swizzle "
                  "allows at most 128"},
      {6, 1, 9, "element stride 1 is 9: 1 to 8"},
      {6, 0, 0, "element stride 0 is 0: 1 to 8"},
      {7, 0, 1, "interleave 1 is not supported: only none (0)"},
      {8, 0, 16, "swizzle 16 is no swizzle mode: 0 (none), 32, 64 or 128 bytes"},
      {8, 0, 64, "box dimension 0 is 64 elements of 2 bytes = 128 bytes: the 64B swizzle allows "
                 "at most 64"},
      {9, 0, 1, "NaN out-of-bounds fill needs a floating-point element type"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ag_tma_map m = ok;
    int64_t v = bad[i].value;
    switch (bad[i].field) {
    case 0: m.rank = (int)v; break;
    case 1: m.elem_bytes = (int)v; break;
    case 2: m.gaddr = (uint64_t)v; break;
    case 3: m.dim[bad[i].index] = (uint64_t)v; break;
    case 4: m.stride[bad[i].index] = (uint64_t)v; break;
    case 5: m.box[bad[i].index] = (uint32_t)v; break;
    case 6: m.estride[bad[i].index] = (uint32_t)v; break;
    case 7: m.interleave = (int)v; break;
    case 8: m.swizzle = (ag_swz_mode)v; break;
    case 9: m.oob_nan = 1; m.elem_float = 0; break;
    }
    CHECK_EQ_INT(ag_tma_map_check(&t.c, &m), AG_EINVAL);
    CHECK_CONTAINS(ag_str_cstr(&t.c.err), bad[i].msg);
  }
  /* at the bounds */
  ag_tma_map edge = ok;
  edge.dim[1] = 1ull << 32;
  edge.stride[0] = (1ull << 40) - 16;
  edge.box[1] = 256;
  edge.estride[1] = 8;
  edge.oob_nan = 1;
  CHECK_EQ_INT(ag_tma_map_check(&t.c, &edge), 0);
  ag_tma_map r1 = ok;
  r1.rank = 1;
  r1.stride[0] = 8; /* unused at rank 1 */
  CHECK_EQ_INT(ag_tma_map_check(&t.c, &r1), 0);
  ag_tma_map none = map2d(64, 64, 64, 256, AG_SWZ_NONE); /* no swizzle: no inner limit */
  CHECK_EQ_INT(ag_tma_map_check(&t.c, &none), 0);
  lctx_free(&t);
}

TEST(test_tma_box_elem) {
  lctx t;
  lctx_init(&t);
  for (int i = 0; i < 4; i++) {
    int64_t c = nchunks(MODES[i]), inner = 8 * c; /* elements in one span */
    ag_tma_map m = map2d(300, 1000, 40, (uint32_t)inner, MODES[i]);
    static const uint32_t dsts[] = {0, 1024, 128, 0x9380};
    for (size_t di = 0; di < 4; di++) {
      int32_t origin[2] = {1001 - (int32_t)inner, -3}; /* the last column at 1000 */
      int64_t bad = 0, wrong = 0, oob = 0;
      for (int64_t r = 0; r < 40; r++)
        for (int64_t e = 0; e < inner; e++) {
          int64_t j[2] = {e, r};
          ag_tma_elem el;
          CHECK_EQ_INT(ag_tma_box_elem(&t.c, &m, origin, dsts[di], j, &el), 0);
          int64_t lin = dsts[di] + 2 * (r * inner + e);
          if (el.addr != chunk_perm(c, lin))
            bad++;
          if (el.addr != chunk_perm(c, dsts[di]) - dsts[di] + chunk_perm(c, lin - dsts[di]))
            wrong++; /* wrong oracle: the swizzle anchored at dst */
          if (el.g[0] != origin[0] + e || el.g[1] != origin[1] + r)
            bad++;
          oob += el.oob;
          if (el.oob != (origin[1] + r < 0 || origin[0] + e >= 1000))
            bad++;
        }
      CHECK_EQ_INT(bad, 0);
      CHECK_EQ_INT(oob, 3 * inner + 37);
      CHECK(wrong > 0 || c == 1 || dsts[di] % (128 * c) == 0);
    }
  }
  /* element strides: dimension 1 every third row, dimension 0 ignored */
  ag_tma_map m = map2d(300, 1000, 10, 64, AG_SWZ_128B);
  m.estride[0] = 4;
  m.estride[1] = 3;
  CHECK_EQ_INT(ag_tma_box_extent(&m, 1), 4);
  CHECK_EQ_INT(ag_tma_box_bytes(&m), 4 * 64 * 2);
  int32_t origin[2] = {8, 100};
  int64_t j[2] = {5, 3};
  ag_tma_elem el;
  CHECK_EQ_INT(ag_tma_box_elem(&t.c, &m, origin, 0, j, &el), 0);
  CHECK_EQ_INT(el.g[0], 13);
  CHECK_EQ_INT(el.g[1], 109);
  CHECK_EQ_INT(el.addr, chunk_perm(8, 3 * 128 + 10));
  j[1] = 4;
  CHECK_EQ_INT(ag_tma_box_elem(&t.c, &m, origin, 0, j, &el), AG_ERANGE);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err),
                 "box position 4 in dimension 1 is outside the box's 4 elements");
  j[1] = 0;
  j[0] = -1;
  CHECK_EQ_INT(ag_tma_box_elem(&t.c, &m, origin, 0, j, &el), AG_ERANGE);
  j[0] = 0;
  CHECK_EQ_INT(ag_tma_box_elem(&t.c, &m, origin, 64, j, &el), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "shared destination 0x40 is not 128-byte aligned");
  ag_tma_map narrow = map2d(64, 64, 64, 32, AG_SWZ_128B);
  CHECK_EQ_INT(ag_tma_box_elem(&t.c, &narrow, origin, 0, j, &el), AG_EUNSUPPORTED);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err),
                 "the inner box is 64 bytes, narrower than the 128B swizzle span");
  narrow.swizzle = AG_SWZ_NONE;
  CHECK_EQ_INT(ag_tma_box_elem(&t.c, &narrow, origin, 0, j, &el), 0);
  narrow.rank = 0;
  CHECK_EQ_INT(ag_tma_box_elem(&t.c, &narrow, origin, 0, j, &el), AG_EINVAL);
  lctx_free(&t);
}

/* TMA -> wgmma: a box of the span's width per strip lands exactly where the
 * canonical layout of the same mode expects each element. */
TEST(test_tma_gmma_agreement) {
  lctx t;
  lctx_init(&t);
  for (int i = 0; i < 4; i++) {
    int64_t span = 8 * nchunks(MODES[i]);
    ag_smem_tile tile;
    ag_smem_diff diff;
    /* K-major: the matrix is rows x K, K contiguous: dimension 0 is K */
    CHECK_EQ_INT(ag_gmma_smem_layout(&t.c, AG_GMMA_K_MAJOR, MODES[i], 64, span, 2048, &tile), 0);
    ag_tma_map m = map2d(4096, 4096, 64, (uint32_t)span, MODES[i]);
    CHECK_EQ_INT(ag_tma_box_compare(&t.c, &m, 2048, 1, 0, &tile, &diff), 0);
    CHECK_EQ_INT(diff.differs, 0);
    /* MN-major: the matrix is K x MN, MN contiguous: dimension 0 is MN */
    CHECK_EQ_INT(ag_gmma_smem_layout(&t.c, AG_GMMA_MN_MAJOR, MODES[i], span, 64, 4096, &tile),
                 0);
    m = map2d(4096, 4096, 64, (uint32_t)span, MODES[i]);
    CHECK_EQ_INT(ag_tma_box_compare(&t.c, &m, 4096, 0, 1, &tile, &diff), 0);
    CHECK_EQ_INT(diff.differs, 0);
    /* the dimensions exchanged disagree */
    CHECK_EQ_INT(ag_tma_box_compare(&t.c, &m, 4096, 1, 0, &tile, &diff), 0);
    CHECK_EQ_INT(diff.differs, 1);
  }
  /* the brief's case: 64 x 64 bf16 K-major, 128B both sides */
  ag_smem_tile tile;
  ag_smem_diff diff;
  CHECK_EQ_INT(ag_gmma_smem_layout(&t.c, AG_GMMA_K_MAJOR, AG_SWZ_128B, 64, 64, 0x8000, &tile),
               0);
  ag_tma_map m = map2d(4096, 4096, 64, 64, AG_SWZ_128B);
  CHECK_EQ_INT(ag_tma_box_compare(&t.c, &m, 0x8000, 1, 0, &tile, &diff), 0);
  CHECK_EQ_INT(diff.differs, 0);
  /* a 64B TMA swizzle (box 32 wide, its limit) against the 128B layout */
  m = map2d(4096, 4096, 64, 32, AG_SWZ_64B);
  CHECK_EQ_INT(ag_tma_box_compare(&t.c, &m, 0x8000, 1, 0, &tile, &diff), 0);
  CHECK_EQ_INT(diff.differs, 1);
  CHECK_EQ_INT(diff.row, 1);
  CHECK_EQ_INT(diff.col, 0);
  CHECK_EQ_INT(diff.want, 0x8000 + 144);
  CHECK_EQ_INT(diff.got, 0x8000 + 64);
  /* a box that misses columns: 56 of the tile's 64 (no swizzle, 16-wide K) */
  CHECK_EQ_INT(ag_gmma_smem_layout(&t.c, AG_GMMA_K_MAJOR, AG_SWZ_NONE, 64, 16, 0, &tile), 0);
  m = map2d(4096, 4096, 64, 8, AG_SWZ_NONE);
  CHECK_EQ_INT(ag_tma_box_compare(&t.c, &m, 0, 1, 0, &tile, &diff), 0);
  CHECK_EQ_INT(diff.differs, 1);
  CHECK_EQ_INT(diff.row, 0);
  CHECK_EQ_INT(diff.col, 8);
  CHECK_EQ_INT(diff.want, 64 * 16);
  CHECK_EQ_INT(diff.got, -1);
  /* a box larger than the tile writes outside it */
  CHECK_EQ_INT(ag_gmma_smem_layout(&t.c, AG_GMMA_K_MAJOR, AG_SWZ_NONE, 56, 8, 0, &tile), 0);
  CHECK_EQ_INT(ag_tma_box_compare(&t.c, &m, 0, 1, 0, &tile, &diff), 0);
  CHECK_EQ_INT(diff.differs, 1);
  CHECK_EQ_INT(diff.row, 56);
  CHECK_EQ_INT(diff.col, 0);
  CHECK_EQ_INT(diff.want, -1);
  CHECK_EQ_INT(diff.got, 56 * 16);
  /* errors */
  CHECK_EQ_INT(ag_tma_box_compare(&t.c, &m, 0, 1, 1, &tile, &diff), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err),
                 "box dimensions 1 (rows) and 1 (cols): two different dimensions");
  CHECK_EQ_INT(ag_tma_box_compare(&t.c, &m, 0, 2, 0, &tile, &diff), AG_EINVAL);
  CHECK_EQ_INT(ag_tma_box_compare(&t.c, &m, 0, 1, -1, &tile, &diff), AG_EINVAL);
  ag_tma_map m3 = m;
  m3.rank = 3;
  m3.dim[2] = 4;
  m3.stride[1] = 4096 * 4096 * 2;
  m3.box[2] = 2;
  m3.estride[2] = 1;
  CHECK_EQ_INT(ag_tma_box_compare(&t.c, &m3, 0, 1, 0, &tile, &diff), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "box dimension 2 holds 2 elements");
  m3.estride[2] = 2; /* one element: fine */
  CHECK_EQ_INT(ag_tma_box_compare(&t.c, &m3, 0, 1, 0, &tile, &diff), 0);
  m3.elem_bytes = 4;
  CHECK_EQ_INT(ag_tma_box_compare(&t.c, &m3, 0, 1, 0, &tile, &diff), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "the tile's elements are 2 bytes, the map's 4");
  m3.rank = 7;
  CHECK_EQ_INT(ag_tma_box_compare(&t.c, &m3, 0, 1, 0, &tile, &diff), AG_EINVAL);
  ag_smem_tile bt = tile;
  bt.elem_bytes = 5;
  CHECK_EQ_INT(ag_tma_box_compare(&t.c, &m, 0, 1, 0, &bt, &diff), AG_EINVAL);
  CHECK_EQ_INT(ag_tma_box_compare(&t.c, &m, 64, 1, 0, &tile, &diff), AG_EINVAL);
  lctx_free(&t);
}

RUN_TESTS(T(test_canonical_layouts), T(test_canonical_layout_errors), T(test_desc_encode_decode),
          T(test_desc_addr_isa), T(test_desc_derive_every_mode), T(test_desc_matches_hopper_cuh),
          T(test_desc_derive_isa_examples), T(test_desc_compare_mismatch),
          T(test_desc_derive_errors), T(test_tma_check), T(test_tma_box_elem),
          T(test_tma_gmma_agreement))
