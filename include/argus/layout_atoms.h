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

#ifdef __cplusplus
}
#endif
#endif
