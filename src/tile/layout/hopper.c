/*
 * hopper.c — Hopper's shared-memory operands in the layout algebra: the
 * canonical wgmma layouts of 16-bit tiles, the 64-bit wgmma matrix
 * descriptor (encode, decode, derive from a layout, the address it reads,
 * compare with a layout), and TMA tiled tensor maps (the driver's rules,
 * where each box element lands in shared memory). See argus/layout_atoms.h
 * and docs/layout.md ("Hopper shared memory") for the sources.
 *
 * Conventions: every address is a shared-memory byte address; a swizzle
 * mode of span 16c bytes (c = 1, 2, 4, 8 chunks of 16 bytes) is, in bytes,
 * Swizzle<log2 c, 4, 3>, applied by the hardware to the absolute address.
 * A tile (ag_smem_tile) anchors its swizzle at its base instead, so a tile
 * whose base is not aligned to the pattern disagrees with the hardware,
 * which is the point: that is a bug the comparisons must show.
 *
 * The checker and the lowering call these once per operand or tensor map;
 * a comparison walks every element (at most 256 x 16 for a descriptor, the
 * box for TMA), a few microseconds.
 */
#include "argus/layout_atoms.h"

#include "layout_int.h"

#define SMEM_LIMIT (1 << 18)   /* addresses and offsets a descriptor holds */
#define TILE_BYTES_MAX 232448  /* 227 KiB: the most shared memory a block gets */

/* ------------------------------------------------------------------ modes */

/* Chunks of 16 bytes per swizzle span (1 for none), or 0 for no mode. */
static int chunks(ag_swz_mode m) {
  switch (m) {
  case AG_SWZ_NONE: return 1;
  case AG_SWZ_32B: return 2;
  case AG_SWZ_64B: return 4;
  case AG_SWZ_128B: return 8;
  }
  return 0;
}

static int log2c(int c) { return c == 8 ? 3 : c == 4 ? 2 : c == 2 ? 1 : 0; }

static const char *mode_name(ag_swz_mode m) {
  switch (m) {
  case AG_SWZ_NONE: return "no swizzle";
  case AG_SWZ_32B: return "32B swizzle";
  case AG_SWZ_64B: return "64B swizzle";
  case AG_SWZ_128B: return "128B swizzle";
  }
  return "?";
}

static int bad_mode(ag_layout_ctx *c, const char *what, int m) {
  return ag__lfail(c, AG_EINVAL, "%s %d is no swizzle mode: 0 (none), 32, 64 or 128 bytes",
                   what, m);
}

/* The hardware's swizzle on an absolute byte address. */
static int64_t hw_swizzle(int chunk, int64_t addr) {
  return addr ^ (((addr >> 7) & (chunk - 1)) << 4);
}

static const char *major_name(ag_gmma_major m) {
  return m == AG_GMMA_K_MAJOR ? "K-major" : "MN-major";
}

/* ------------------------------------------------------------------ tiles */

static int tile_extent(const ag_smem_tile *t, int mode, int64_t *n) {
  *n = 0;
  if (!t->layout.shape || t->layout.shape->is_leaf || t->layout.shape->n != 2)
    return AG_EINVAL;
  *n = ag__tsize(t->layout.shape->child[mode]);
  return 0;
}

static int tile_check(ag_layout_ctx *c, const ag_smem_tile *t) {
  int64_t n;
  if (tile_extent(t, 0, &n))
    return ag__lfail(c, AG_EINVAL, "a shared tile's layout must have rank 2 (rows, cols)");
  int eb = t->elem_bytes;
  if (eb != 1 && eb != 2 && eb != 4 && eb != 8 && eb != 16)
    return ag__lfail(c, AG_EINVAL,
                     "a shared tile's elements are %d bytes: 1, 2, 4, 8 or 16", eb);
  return ag_swizzle_check(c, t->swz);
}

/* Offset before the swizzle, in elements. */
static int tile_linear(ag_layout_ctx *c, const ag_smem_tile *t, int64_t row, int64_t col,
                       int64_t *off) {
  int64_t rows = 0, cols = 0;
  tile_extent(t, 0, &rows);
  tile_extent(t, 1, &cols);
  if (row < 0 || row >= rows || col < 0 || col >= cols)
    return ag__lfail(c, AG_ERANGE, "element (%lld, %lld) is outside the %lld x %lld tile",
                     (long long)row, (long long)col, (long long)rows, (long long)cols);
  ag_layout m0 = {t->layout.shape->child[0], t->layout.stride->child[0]};
  ag_layout m1 = {t->layout.shape->child[1], t->layout.stride->child[1]};
  int64_t a, b;
  if (ag_layout_eval_index(&m0, row, &a) || ag_layout_eval_index(&m1, col, &b) ||
      ag__add(a, b, off))
    return ag__lfail(c, AG_ERANGE, "element (%lld, %lld): offset overflows", (long long)row,
                     (long long)col);
  return 0;
}

int ag_smem_tile_addr(ag_layout_ctx *c, const ag_smem_tile *t, int64_t row, int64_t col,
                      int64_t *addr) {
  *addr = 0;
  int64_t off;
  int rc = tile_check(c, t);
  if (!rc)
    rc = tile_linear(c, t, row, col, &off);
  if (rc)
    return rc;
  *addr = (int64_t)t->base + (int64_t)t->elem_bytes * ag_swizzle_apply(t->swz, off);
  return 0;
}

int ag_gmma_smem_layout(ag_layout_ctx *c, ag_gmma_major major, ag_swz_mode swz, int64_t rows,
                        int64_t cols, uint32_t base, ag_smem_tile *out) {
  memset(out, 0, sizeof *out);
  int ch = chunks(swz);
  if (!ch)
    return bad_mode(c, "swizzle", (int)swz);
  if (major != AG_GMMA_K_MAJOR && major != AG_GMMA_MN_MAJOR)
    return ag__lfail(c, AG_EINVAL, "major %d is neither K-major (0) nor MN-major (1)", major);
  const char *mj = major_name(major);
  int64_t span = 8 * ch; /* elements in one swizzle row */
  /* K-major: core matrices of 8 rows, rows one span wide; MN-major: the other way */
  int kmaj = major == AG_GMMA_K_MAJOR;
  static const char *const dim[2] = {"rows (M or N)", "cols (K)"};
  int64_t ext[2] = {rows, cols}, step[2] = {kmaj ? 8 : span, kmaj ? span : 8};
  for (int i = 0; i < 2; i++)
    if (ext[i] < 1 || ext[i] % step[i])
      return ag__lfail(c, AG_EINVAL,
                       "%s tile %s is %lld: with %s it must be a positive multiple of %lld (%s)",
                       mj, dim[i], (long long)ext[i], mode_name(swz), (long long)step[i],
                       kmaj != (i == 0)   ? "one swizzle row of 16-bit elements"
                       : i == 0 ? "a core matrix has 8 rows"
                                : "a core matrix has 8 K rows");
  if (rows > TILE_BYTES_MAX / 2 / cols)
    return ag__lfail(c, AG_EINVAL,
                     "a %lld x %lld tile of 16-bit elements is %lld bytes: at most %d (227 KiB "
                     "of shared memory)",
                     (long long)rows, (long long)cols, (long long)(rows * cols * 2),
                     TILE_BYTES_MAX);
  int64_t atom = 8 * span; /* elements in one swizzle atom */
  int64_t s[4], d[4];
  if (major == AG_GMMA_K_MAJOR) {
    /* ((8, R/8), (8c, C/8c)) : ((8c, 64c), (1, 8c*R)) */
    int64_t ks[4] = {8, rows / 8, span, cols / span}, kd[4] = {span, atom, 1, span * rows};
    memcpy(s, ks, sizeof s);
    memcpy(d, kd, sizeof d);
  } else {
    /* ((8c, R/8c), (8, C/8)) : ((1, 8c*C), (8c, 64c)) */
    int64_t ms[4] = {span, rows / span, 8, cols / 8}, md[4] = {1, span * cols, span, atom};
    memcpy(s, ms, sizeof s);
    memcpy(d, md, sizeof d);
  }
  ag_tuple *sh[2], *st[2];
  for (int i = 0; i < 2; i++) {
    ag_tuple *ls[2] = {ag_tuple_leaf(c, s[2 * i]), ag_tuple_leaf(c, s[2 * i + 1])};
    ag_tuple *ld[2] = {ag_tuple_leaf(c, d[2 * i]), ag_tuple_leaf(c, d[2 * i + 1])};
    sh[i] = ag_tuple_make(c, 2, ls); /* NULL (out of memory) propagates */
    st[i] = ag_tuple_make(c, 2, ld);
  }
  ag_tuple *shape = ag_tuple_make(c, 2, sh), *stride = ag_tuple_make(c, 2, st);
  int rc = ag_layout_make(c, shape, stride, &out->layout);
  if (rc)
    return rc;
  out->base = base;
  out->swz = (ag_swizzle){log2c(ch), 3, 3};
  out->elem_bytes = 2;
  return 0;
}

/* ------------------------------------------------------------ descriptors */

static int desc_mode_field(ag_swz_mode m) {
  return m == AG_SWZ_128B ? 1 : m == AG_SWZ_64B ? 2 : m == AG_SWZ_32B ? 3 : 0;
}

static int check_offset(ag_layout_ctx *c, const char *what, int64_t v) {
  if (v < 0 || v >= SMEM_LIMIT || v % 16)
    return ag__lfail(c, AG_EINVAL,
                     "%s is %lld bytes: a descriptor holds a multiple of 16 in 0..%d", what,
                     (long long)v, SMEM_LIMIT - 16);
  return 0;
}

static int desc_check(ag_layout_ctx *c, const ag_gmma_desc *d) {
  if (!chunks(d->swizzle))
    return bad_mode(c, "descriptor swizzle", (int)d->swizzle);
  int rc;
  if ((rc = check_offset(c, "the start address", d->start)) ||
      (rc = check_offset(c, "the leading dimension byte offset (LBO)", d->lbo)) ||
      (rc = check_offset(c, "the stride dimension byte offset (SBO)", d->sbo)))
    return rc;
  if (d->base_offset < 0 || d->base_offset > 7)
    return ag__lfail(c, AG_EINVAL, "base offset %d: the field holds 0..7", d->base_offset);
  if (d->base_offset && d->swizzle == AG_SWZ_NONE)
    return ag__lfail(c, AG_EINVAL,
                     "base offset %d with no swizzle: the ISA defines it for the swizzled "
                     "modes only; use 0",
                     d->base_offset);
  return 0;
}

int ag_gmma_desc_encode(ag_layout_ctx *c, const ag_gmma_desc *d, uint64_t *out) {
  *out = 0;
  int rc = desc_check(c, d);
  if (rc)
    return rc;
  *out = (uint64_t)(d->start >> 4) | (uint64_t)(d->lbo >> 4) << 16 |
         (uint64_t)(d->sbo >> 4) << 32 | (uint64_t)d->base_offset << 49 |
         (uint64_t)desc_mode_field(d->swizzle) << 62;
  return 0;
}

int ag_gmma_desc_decode(ag_layout_ctx *c, uint64_t v, ag_gmma_desc *out) {
  memset(out, 0, sizeof *out);
  const uint64_t used = 0x3FFFull | 0x3FFFull << 16 | 0x3FFFull << 32 | 7ull << 49 | 3ull << 62;
  if (v & ~used)
    return ag__lfail(c, AG_EINVAL,
                     "descriptor 0x%016llx sets unused bits 0x%016llx (14-15, 30-31, 46-48, "
                     "52-61 must be 0)",
                     (unsigned long long)v, (unsigned long long)(v & ~used));
  static const ag_swz_mode modes[4] = {AG_SWZ_NONE, AG_SWZ_128B, AG_SWZ_64B, AG_SWZ_32B};
  ag_gmma_desc d = {(uint32_t)(v & 0x3FFF) << 4, (uint32_t)(v >> 16 & 0x3FFF) << 4,
                    (uint32_t)(v >> 32 & 0x3FFF) << 4, (int)(v >> 49 & 7), modes[v >> 62]};
  int rc = desc_check(c, &d);
  if (rc)
    return rc;
  *out = d;
  return 0;
}

int ag_gmma_desc_addr(ag_layout_ctx *c, const ag_gmma_desc *d, ag_gmma_major major,
                      int64_t row, int64_t k, int64_t *addr) {
  *addr = 0;
  int rc = desc_check(c, d);
  if (rc)
    return rc;
  if (d->base_offset)
    return ag__lfail(c, AG_EUNSUPPORTED,
                     "base offset %d is not modelled: place the operand on its swizzle "
                     "pattern's boundary (base offset 0)",
                     d->base_offset);
  if (row < 0 || row >= 256 || k < 0 || k >= 16)
    return ag__lfail(c, AG_ERANGE,
                     "operand element (%lld, %lld): a 16-bit wgmma operand has rows 0..255 and "
                     "k 0..15",
                     (long long)row, (long long)k);
  int64_t ch = chunks(d->swizzle), lin = d->start;
  if (major == AG_GMMA_K_MAJOR) {
    /* core matrices of 8 rows x 16 bytes; rows of one 8-row group 16c apart */
    lin += 16 * ch * (row % 8) + (int64_t)d->sbo * (row / 8) + 2 * (k % 8);
    lin += (ch == 1 ? (int64_t)d->lbo : 16) * (k / 8);
  } else {
    /* core matrices of 8 k x 16 bytes of MN */
    int64_t j = row / 8; /* 16-byte chunk along MN */
    lin += 2 * (row % 8);
    if (ch == 1)
      lin += (int64_t)d->sbo * j + 16 * (k % 8) + (int64_t)d->lbo * (k / 8);
    else
      lin += 16 * (j % ch) + (int64_t)d->lbo * (j / ch) + 16 * ch * (k % 8) +
             (int64_t)d->sbo * (k / 8);
  }
  *addr = hw_swizzle((int)ch, lin);
  return 0;
}

static int operand_check(ag_layout_ctx *c, const ag_smem_tile *t, int64_t row0, int64_t k0,
                         int64_t rows) {
  int rc = tile_check(c, t);
  if (rc)
    return rc;
  if (t->elem_bytes != 2)
    return ag__lfail(c, AG_EINVAL,
                     "the tile's elements are %d bytes: wgmma descriptors are modelled for "
                     "16-bit elements (f16, bf16)",
                     t->elem_bytes);
  if (rows < 8 || rows > 256 || rows % 8)
    return ag__lfail(c, AG_EINVAL,
                     "an operand of %lld rows: 64 for A (M), N = 8..256 step 8 for B",
                     (long long)rows);
  int64_t tr, tc;
  tile_extent(t, 0, &tr);
  tile_extent(t, 1, &tc);
  if (row0 < 0 || k0 < 0 || row0 + rows > tr || k0 + 16 > tc)
    return ag__lfail(c, AG_ERANGE,
                     "the %lld x 16 operand at (%lld, %lld) does not fit the %lld x %lld tile",
                     (long long)rows, (long long)row0, (long long)k0, (long long)tr,
                     (long long)tc);
  return 0;
}

int ag_gmma_desc_compare(ag_layout_ctx *c, const ag_gmma_desc *d, ag_gmma_major major,
                         const ag_smem_tile *t, int64_t row0, int64_t k0, int64_t rows,
                         ag_smem_diff *diff) {
  memset(diff, 0, sizeof *diff);
  int rc = operand_check(c, t, row0, k0, rows);
  if (rc)
    return rc;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t k = 0; k < 16; k++) {
      int64_t want, got;
      if ((rc = ag_smem_tile_addr(c, t, row0 + r, k0 + k, &want)) ||
          (rc = ag_gmma_desc_addr(c, d, major, r, k, &got)))
        return rc;
      if (want != got) {
        *diff = (ag_smem_diff){1, r, k, want, got};
        return 0;
      }
    }
  return 0;
}

/* The byte distance between two elements of t before the swizzle. */
static int64_t lin_step(ag_layout_ctx *c, const ag_smem_tile *t, int64_t r0, int64_t k0,
                        int64_t r1, int64_t k1) {
  int64_t a = 0, b = 0;
  tile_linear(c, t, r0, k0, &a);
  tile_linear(c, t, r1, k1, &b);
  return 2 * (b - a);
}

int ag_gmma_desc_derive(ag_layout_ctx *c, const ag_smem_tile *t, ag_gmma_major major,
                        int64_t row0, int64_t k0, int64_t rows, ag_gmma_desc *out) {
  memset(out, 0, sizeof *out);
  if (major != AG_GMMA_K_MAJOR && major != AG_GMMA_MN_MAJOR)
    return ag__lfail(c, AG_EINVAL, "major %d is neither K-major (0) nor MN-major (1)", major);
  int rc = operand_check(c, t, row0, k0, rows);
  if (rc)
    return rc;
  ag_swizzle s = t->swz;
  static const ag_swz_mode by_b[4] = {AG_SWZ_NONE, AG_SWZ_32B, AG_SWZ_64B, AG_SWZ_128B};
  if (s.b && (s.b > 3 || s.m != 3 || s.s != 3))
    return ag__lfail(c, AG_EINVAL,
                     "the tile's Swizzle<%d,%d,%d> (in 16-bit elements) is no wgmma mode: "
                     "Swizzle<1,3,3> (32B), <2,3,3> (64B), <3,3,3> (128B) or none",
                     s.b, s.m, s.s);
  ag_gmma_desc d = {0, 16, 16, 0, by_b[s.b]};
  int64_t ch = chunks(d.swizzle), span = 8 * ch;
  if (ch > 1 && t->base % (128 * ch))
    return ag__lfail(c, AG_EINVAL,
                     "the tile's base 0x%x is not aligned to the %lld bytes after which the %s "
                     "pattern repeats: wgmma and TMA swizzle absolute addresses",
                     (unsigned)t->base, (long long)(128 * ch), mode_name(d.swizzle));
  int64_t o;
  if ((rc = tile_linear(c, t, row0, k0, &o)))
    return rc;
  int64_t start = (int64_t)t->base + 2 * o, lbo = 16, sbo = 16;
  /* read the strides the canonical form names off the layout */
  if (major == AG_GMMA_K_MAJOR) {
    if (rows > 8)
      sbo = lin_step(c, t, row0, k0, row0 + 8, k0);
    if (ch == 1)
      lbo = lin_step(c, t, row0, k0, row0, k0 + 8);
  } else if (ch == 1) {
    if (rows > 8)
      sbo = lin_step(c, t, row0, k0, row0 + 8, k0);
    lbo = lin_step(c, t, row0, k0, row0, k0 + 8);
  } else {
    if (rows > span)
      lbo = lin_step(c, t, row0, k0, row0 + span, k0);
    sbo = lin_step(c, t, row0, k0, row0, k0 + 8);
  }
  if ((rc = check_offset(c, "the operand's start address", start)) ||
      (rc = check_offset(c, "the leading dimension byte offset (LBO) the layout needs", lbo)) ||
      (rc = check_offset(c, "the stride dimension byte offset (SBO) the layout needs", sbo)))
    return rc;
  d.start = (uint32_t)start;
  d.lbo = (uint32_t)lbo;
  d.sbo = (uint32_t)sbo;
  ag_smem_diff diff;
  if ((rc = ag_gmma_desc_compare(c, &d, major, t, row0, k0, rows, &diff)))
    return rc;
  if (diff.differs)
    return ag__lfail(c, AG_EINVAL,
                     "the tile is no canonical %s %s layout: its element (%lld, %lld) is at "
                     "byte 0x%llx, but the descriptor (start 0x%x, LBO %u, SBO %u) reads 0x%llx",
                     major_name(major), mode_name(d.swizzle), (long long)(row0 + diff.row),
                     (long long)(k0 + diff.col), (unsigned long long)diff.want,
                     (unsigned)d.start, (unsigned)d.lbo, (unsigned)d.sbo,
                     (unsigned long long)diff.got);
  *out = d;
  return 0;
}

/* -------------------------------------------------------------------- TMA */

int ag_tma_map_check(ag_layout_ctx *c, const ag_tma_map *m) {
  if (m->rank < 1 || m->rank > 5)
    return ag__lfail(c, AG_EINVAL, "tensor rank is %d: 1 to 5", m->rank);
  int eb = m->elem_bytes;
  if (eb != 1 && eb != 2 && eb != 4 && eb != 8)
    return ag__lfail(c, AG_EINVAL, "element size is %d bytes: 1, 2, 4 or 8", eb);
  if (m->gaddr % 16)
    return ag__lfail(c, AG_EINVAL, "global address 0x%llx is not 16-byte aligned",
                     (unsigned long long)m->gaddr);
  for (int i = 0; i < m->rank; i++)
    if (m->dim[i] < 1 || m->dim[i] > (1ull << 32))
      return ag__lfail(c, AG_EINVAL, "global dimension %d is %llu: 1 to 2^32", i,
                       (unsigned long long)m->dim[i]);
  for (int i = 0; i + 1 < m->rank; i++)
    if (m->stride[i] % 16 || m->stride[i] >= (1ull << 40))
      return ag__lfail(c, AG_EINVAL,
                       "global stride %d (of dimension %d) is %llu bytes: a multiple of 16 "
                       "below 2^40",
                       i, i + 1, (unsigned long long)m->stride[i]);
  for (int i = 0; i < m->rank; i++)
    if (m->box[i] < 1 || m->box[i] > 256)
      return ag__lfail(c, AG_EINVAL, "box dimension %d is %u: 1 to 256", i, m->box[i]);
  int64_t inner = (int64_t)m->box[0] * eb;
  if (inner % 16)
    return ag__lfail(c, AG_EINVAL,
                     "box dimension 0 is %u elements of %d bytes = %lld bytes: the inner box "
                     "must be a multiple of 16 bytes",
                     m->box[0], eb, (long long)inner);
  for (int i = 0; i < m->rank; i++)
    if (m->estride[i] < 1 || m->estride[i] > 8)
      return ag__lfail(c, AG_EINVAL, "element stride %d is %u: 1 to 8", i, m->estride[i]);
  if (m->interleave)
    return ag__lfail(c, AG_EINVAL, "interleave %d is not supported: only none (0)",
                     m->interleave);
  if (!chunks(m->swizzle))
    return bad_mode(c, "swizzle", (int)m->swizzle);
  if (m->swizzle != AG_SWZ_NONE && inner > (int64_t)m->swizzle)
    return ag__lfail(c, AG_EINVAL,
                     "box dimension 0 is %u elements of %d bytes = %lld bytes: the %s allows "
                     "at most %d",
                     m->box[0], eb, (long long)inner, mode_name(m->swizzle), (int)m->swizzle);
  if (m->oob_nan && !m->elem_float)
    return ag__lfail(c, AG_EINVAL,
                     "NaN out-of-bounds fill needs a floating-point element type");
  return 0;
}

int64_t ag_tma_box_extent(const ag_tma_map *m, int i) {
  if (i == 0)
    return m->box[0];
  return (m->box[i] + m->estride[i] - 1) / m->estride[i];
}

int64_t ag_tma_box_bytes(const ag_tma_map *m) {
  int64_t n = m->elem_bytes;
  for (int i = 0; i < m->rank; i++)
    n *= ag_tma_box_extent(m, i);
  return n;
}

int ag_tma_box_elem(ag_layout_ctx *c, const ag_tma_map *m, const int32_t *origin, uint32_t dst,
                    const int64_t *j, ag_tma_elem *out) {
  memset(out, 0, sizeof *out);
  int rc = ag_tma_map_check(c, m);
  if (rc)
    return rc;
  if (dst % 128)
    return ag__lfail(c, AG_EINVAL, "shared destination 0x%x is not 128-byte aligned",
                     (unsigned)dst);
  int ch = chunks(m->swizzle);
  if (ch > 1 && (int64_t)m->box[0] * m->elem_bytes != (int64_t)m->swizzle)
    return ag__lfail(c, AG_EUNSUPPORTED,
                     "the inner box is %lld bytes, narrower than the %s span: where TMA puts "
                     "such rows is not modelled; make it %d bytes",
                     (long long)m->box[0] * m->elem_bytes, mode_name(m->swizzle),
                     (int)m->swizzle);
  int64_t lin = 0, pitch = m->elem_bytes;
  for (int i = 0; i < m->rank; i++) {
    int64_t n = ag_tma_box_extent(m, i);
    if (j[i] < 0 || j[i] >= n)
      return ag__lfail(c, AG_ERANGE,
                       "box position %lld in dimension %d is outside the box's %lld elements",
                       (long long)j[i], i, (long long)n);
    int64_t g = (int64_t)origin[i] + j[i] * (i ? (int64_t)m->estride[i] : 1);
    out->g[i] = g;
    if (g < 0 || (uint64_t)g >= m->dim[i])
      out->oob = 1;
    lin += j[i] * pitch;
    pitch *= n;
  }
  out->addr = hw_swizzle(ch, (int64_t)dst + lin);
  return 0;
}

int ag_tma_box_compare(ag_layout_ctx *c, const ag_tma_map *m, uint32_t dst, int row_dim,
                       int col_dim, const ag_smem_tile *t, ag_smem_diff *diff) {
  memset(diff, 0, sizeof *diff);
  int rc = ag_tma_map_check(c, m);
  if (!rc)
    rc = tile_check(c, t);
  if (rc)
    return rc;
  if (row_dim < 0 || row_dim >= m->rank || col_dim < 0 || col_dim >= m->rank ||
      row_dim == col_dim)
    return ag__lfail(c, AG_EINVAL,
                     "box dimensions %d (rows) and %d (cols): two different dimensions of the "
                     "rank-%d map",
                     row_dim, col_dim, m->rank);
  for (int i = 0; i < m->rank; i++)
    if (i != row_dim && i != col_dim && ag_tma_box_extent(m, i) != 1)
      return ag__lfail(c, AG_EINVAL,
                       "box dimension %d holds %lld elements: only the row and column "
                       "dimensions may hold more than one",
                       i, (long long)ag_tma_box_extent(m, i));
  if (t->elem_bytes != m->elem_bytes)
    return ag__lfail(c, AG_EINVAL, "the tile's elements are %d bytes, the map's %d",
                     t->elem_bytes, m->elem_bytes);
  int64_t br = ag_tma_box_extent(m, row_dim), bc = ag_tma_box_extent(m, col_dim), tr, tc;
  tile_extent(t, 0, &tr);
  tile_extent(t, 1, &tc);
  int64_t nr = br > tr ? br : tr, nc = bc > tc ? bc : tc;
  int32_t origin[5] = {0};
  ag_smem_diff only = {0};
  for (int64_t r = 0; r < nr; r++)
    for (int64_t col = 0; col < nc; col++) {
      int64_t want = -1, got = -1;
      if (r < tr && col < tc && (rc = ag_smem_tile_addr(c, t, r, col, &want)))
        return rc;
      if (r < br && col < bc) {
        int64_t j[5] = {0};
        j[row_dim] = r;
        j[col_dim] = col;
        ag_tma_elem e;
        if ((rc = ag_tma_box_elem(c, m, origin, dst, j, &e)))
          return rc;
        got = e.addr;
      }
      if (want == got)
        continue;
      if (want >= 0 && got >= 0) {
        *diff = (ag_smem_diff){1, r, col, want, got};
        return 0;
      }
      if (!only.differs)
        only = (ag_smem_diff){1, r, col, want, got};
    }
  *diff = only;
  return 0;
}
