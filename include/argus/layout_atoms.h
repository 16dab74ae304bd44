/*
 * argus/layout_atoms.h — the thread-value (TV) layouts of NVIDIA's matrix
 * instructions, written as ag_layouts, for the tile DSL's intrinsics and
 * for `argus layout print @NAME --tv`.
 *
 * A TV layout has rank 2: mode 0 is the thread (lane, or thread in the
 * warpgroup), mode 1 the value (the element index inside the thread's
 * fragment registers, in the ISA's order a0, a1, ...). It maps (t, v) to
 * the element's offset in the instruction's tile, column-major:
 *   offset = row + rows * col.
 * Tiles follow CuTe's convention: A is M x K, B is N x K (row = n, col = k),
 * C/D is M x N. Each layout was derived from, and is tested point by point
 * against, the PTX ISA's fragment formulas (tests/unit/test_layout_atoms.c).
 *
 *   name                 threads values  tile
 *   mma.m16n8k16.a       32      8       16 x 16  (M x K), f16/bf16
 *   mma.m16n8k16.b       32      4        8 x 16  (N x K), f16/bf16
 *   mma.m16n8k16.c       32      4       16 x 8   (M x N), f16x2 or f32 C/D
 *   ldmatrix.x4          32      8       32 x 8   destination fragments
 *   ldmatrix.x4.src      32      8       32 x 8   row addresses (source)
 *   wgmma.m64nNk16.a    128      8       64 x 16  (M x K), f16/bf16 A in registers
 *   wgmma.m64nNk16.d    128    N/2       64 x N   (M x N), N = 8..256 step 8
 *
 * ldmatrix.x4's tile stacks its four 8x8 b16 matrices: row 8*i + r is row r
 * of matrix i, i.e. the row whose address thread 8*i + r supplies.
 * Results live in the context's arena.
 */
#ifndef ARGUS_LAYOUT_ATOMS_H
#define ARGUS_LAYOUT_ATOMS_H

#include "argus/layout.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ag_atom_info {
  const char *name;      /* canonical name, e.g. "wgmma.m64n64k16.d" (static or arena) */
  const char *axes;      /* what rows and columns are: "M x K", "N x K", ... */
  int64_t threads, values;
  int64_t rows, cols;    /* the tile; offset = row + rows * col */
} ag_atom_info;

/* Looks an atom up by name (table above; "wgmma.m64n<N>k16.d" for a valid
 * N; "mma.m16n8k16.d" is the same layout as ".c"). AG_ENOTFOUND with a
 * message listing the names for an unknown one. info may be NULL. */
int ag_atom_layout(ag_layout_ctx *c, const char *name, ag_layout *tv, ag_atom_info *info);

int ag_atom_mma_m16n8k16_a(ag_layout_ctx *c, ag_layout *tv);
int ag_atom_mma_m16n8k16_b(ag_layout_ctx *c, ag_layout *tv);
int ag_atom_mma_m16n8k16_c(ag_layout_ctx *c, ag_layout *tv);
int ag_atom_ldmatrix_x4(ag_layout_ctx *c, ag_layout *tv);     /* destination */
int ag_atom_ldmatrix_x4_src(ag_layout_ctx *c, ag_layout *tv); /* source rows */
/* n in 8..256, a multiple of 8; AG_EINVAL otherwise. */
int ag_atom_wgmma_m64nNk16_d(ag_layout_ctx *c, int n, ag_layout *tv);
/* A from registers (f16/bf16): the same layout for every N. */
int ag_atom_wgmma_m64nNk16_a(ag_layout_ctx *c, ag_layout *tv);

/* ------------------------------------------ Hopper shared-memory operands
 * (src/tile/layout/hopper.c; docs/layout.md, "Hopper shared memory")
 *
 * Addresses are shared-memory byte addresses (what __cvta_generic_to_shared
 * gives, below 2^18). A swizzle mode names the span whose 16-byte chunks it
 * permutes; in bytes it is Swizzle<B,4,3> with B = 0, 1, 2, 3 for none,
 * 32B, 64B, 128B (chunk bits [4,4+B) ^= bits [7,7+B)); the pattern repeats
 * every 256, 512, 1024 bytes. wgmma (descriptor base offset 0) and TMA apply
 * it to the absolute address. */
typedef enum ag_swz_mode {
  AG_SWZ_NONE = 0, AG_SWZ_32B = 32, AG_SWZ_64B = 64, AG_SWZ_128B = 128
} ag_swz_mode;

typedef enum ag_gmma_major { AG_GMMA_K_MAJOR = 0, AG_GMMA_MN_MAJOR = 1 } ag_gmma_major;

/* A tile in shared memory: element (row, col) is at byte address
 *   base + elem_bytes * swz(layout(row, col))
 * with swz in elements (as the DSL's swizzle(B,M,S); {0,..} is none), so the
 * swizzle is anchored at base. layout has rank 2 (mode 0 rows, mode 1 cols).
 * wgmma operands: A is M x K, B is N x K (CuTe's convention). */
typedef struct ag_smem_tile {
  uint32_t base;
  ag_layout layout;
  ag_swizzle swz;
  int elem_bytes;
} ag_smem_tile;

/* Where two placements of a tile differ: the first element (row-major:
 * smallest row, then column) that both place at different addresses, or
 * if there is none, the first that only one side has (a box that misses a
 * column). differs = 0 when they agree. want is the tile's byte address,
 * got the other's; -1 on the side that lacks the element. */
typedef struct ag_smem_diff {
  int differs;
  int64_t row, col;
  int64_t want, got;
} ag_smem_diff;

/* The canonical wgmma layout of a rows x cols tile of 16-bit elements at
 * base: its swizzle atoms (8 rows x the span for K-major, the span x 8 K
 * for MN-major) stacked along the non-contiguous dimension first, i.e. what
 * one TMA box per span-wide strip writes. AG_EINVAL, naming the value and
 * what is allowed, for a shape that does not fit the mode. */
int ag_gmma_smem_layout(ag_layout_ctx *c, ag_gmma_major major, ag_swz_mode swz, int64_t rows,
                        int64_t cols, uint32_t base, ag_smem_tile *out);
/* Byte address of element (row, col) of t; AG_ERANGE outside the tile. */
int ag_smem_tile_addr(ag_layout_ctx *c, const ag_smem_tile *t, int64_t row, int64_t col,
                      int64_t *addr);

/* The 64-bit wgmma matrix descriptor (PTX ISA, "Matrix Descriptor Format"):
 * bits 0-13 start >> 4, 16-29 lbo >> 4, 32-45 sbo >> 4, 49-51 base offset,
 * 62-63 mode (0 none, 1 128B, 2 64B, 3 32B); other bits 0. */
typedef struct ag_gmma_desc {
  uint32_t start;          /* byte address, a multiple of 16 below 2^18 */
  uint32_t lbo, sbo;       /* byte offsets, multiples of 16 below 2^18 */
  int base_offset;         /* 0..7; 0 for none */
  ag_swz_mode swizzle;
} ag_gmma_desc;

int ag_gmma_desc_encode(ag_layout_ctx *c, const ag_gmma_desc *d, uint64_t *out);
int ag_gmma_desc_decode(ag_layout_ctx *c, uint64_t v, ag_gmma_desc *out);
/* The byte address wgmma reads for element (row, k) of a 16-bit operand
 * (row < 256: M or N; k < 16) through d. A base offset other than 0 is
 * AG_EUNSUPPORTED (not modelled). */
int ag_gmma_desc_addr(ag_layout_ctx *c, const ag_gmma_desc *d, ag_gmma_major major,
                      int64_t row, int64_t k, int64_t *addr);
/* The descriptor of the rows x 16 operand of t at (row0, k0) (rows = 64 for
 * A, N for B): mode from t's swizzle, start, LBO and SBO read off t's
 * layout; the unused offsets are 16 (the ISA's "assumed 1"). Then every
 * element is checked; AG_EINVAL names the first where t is not a canonical
 * layout of that mode. */
int ag_gmma_desc_derive(ag_layout_ctx *c, const ag_smem_tile *t, ag_gmma_major major,
                        int64_t row0, int64_t k0, int64_t rows, ag_gmma_desc *out);
/* Compares what d reads for the rows x 16 operand with t's elements at
 * (row0 + r, k0 + k): the first difference in *diff (differs = 0: none). */
int ag_gmma_desc_compare(ag_layout_ctx *c, const ag_gmma_desc *d, ag_gmma_major major,
                         const ag_smem_tile *t, int64_t row0, int64_t k0, int64_t rows,
                         ag_smem_diff *diff);

/* A tiled TMA tensor map, as cuTensorMapEncodeTiled takes it. Dimension 0
 * is the contiguous one; stride[i] is dimension i+1's, in bytes. */
typedef struct ag_tma_map {
  int rank;                /* 1..5 */
  int elem_bytes;          /* 1, 2, 4 or 8 */
  int elem_float;          /* a floating-point element type */
  uint64_t gaddr;          /* globalAddress */
  uint64_t dim[5];         /* globalDim */
  uint64_t stride[4];      /* globalStrides */
  uint32_t box[5];         /* boxDim */
  uint32_t estride[5];     /* elementStrides (estride[0] is ignored, as by TMA) */
  int interleave;          /* 0: none, the only one modelled */
  ag_swz_mode swizzle;
  int oob_nan;             /* 1: FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA; 0: zeros */
} ag_tma_map;

/* The driver's rules; AG_EINVAL naming the field, its value and the bound. */
int ag_tma_map_check(ag_layout_ctx *c, const ag_tma_map *m);
/* Elements the box holds along dimension i (box[0]; ceil(box[i]/estride[i])
 * for i > 0) and the bytes one copy writes (the mbarrier's transaction
 * count), for a map that passed the check. */
int64_t ag_tma_box_extent(const ag_tma_map *m, int i);
int64_t ag_tma_box_bytes(const ag_tma_map *m);

typedef struct ag_tma_elem {
  int64_t g[5];            /* global element coordinate */
  int oob;                 /* outside the tensor: filled (zeros or NaN) */
  int64_t addr;            /* shared byte address it is written to */
} ag_tma_elem;
/* Box element j (0 <= j[i] < extent i) of the copy at tensor coordinate
 * origin into shared memory at dst (128-byte aligned): rows of the box are
 * packed, then the swizzle permutes 16-byte chunks by the absolute address.
 * A swizzled box narrower than its span is AG_EUNSUPPORTED. */
int ag_tma_box_elem(ag_layout_ctx *c, const ag_tma_map *m, const int32_t *origin, uint32_t dst,
                    const int64_t *j, ag_tma_elem *out);
/* Where a copy at dst writes each element against where t expects it: box
 * dimension row_dim runs along t's rows, col_dim along its columns; other
 * dimensions must hold one element. Elements that only one side has
 * differ too (a box that misses a column). */
int ag_tma_box_compare(ag_layout_ctx *c, const ag_tma_map *m, uint32_t dst, int row_dim,
                       int col_dim, const ag_smem_tile *t, ag_smem_diff *diff);

#ifdef __cplusplus
}
#endif
#endif
