/*
 * tile_intrin.h — the tile DSL's hardware intrinsics (mma_m16n8k16,
 * ldmatrix_x1/x2/x4[_trans], cp_async, cp_async_commit, cp_async_wait,
 * syncthreads, the mbarriers mbar_init/mbar_arrive/mbar_expect_tx/mbar_wait/
 * fence_mbar_init and the 1-D bulk copy bulk_copy), one table (src/tile/front/intrin.c) shared by the checker
 * (src/tile/check), the lowering (src/tile/lower) and the value interpreter
 * (src/tile/run), as tile_builtin.h is for builtins: each module looks a
 * name up with ag__intrin_lookup and dispatches on the row's kind, so no
 * module keeps a list of names of its own. Adding a row of a known kind (an
 * ldmatrix width, an mma shape of the same layouts) is one row here;
 * test_tile_intrin lowers and interprets a program per row and fails until
 * each module handles the row.
 */
#ifndef ARGUS_TILE_INTRIN_H
#define ARGUS_TILE_INTRIN_H

#include "tile_builtin.h"

/* The semantic kinds; each module has one handler per kind. */
typedef enum {
  IK_MMA, IK_LDMATRIX, IK_CP_ASYNC, IK_CP_COMMIT, IK_CP_WAIT, IK_SYNC,
  IK_MBAR_INIT,   /* mbar_init(bar, count) */
  IK_MBAR_FENCE,  /* fence_mbar_init(): inits visible to the async proxy */
  IK_MBAR_ARRIVE, /* mbar_arrive(bar); with tx: mbar_expect_tx(bar, bytes) */
  IK_MBAR_WAIT,   /* mbar_wait(bar, parity) */
  IK_BULK_COPY    /* bulk_copy(dst, src, bytes, bar) */
} ag__ik;

/* One row of the intrinsic table. TV layouts map (lane, value) to the
 * element's offset in the operand tile, column-major (row + rows * col), as
 * in argus/layout_atoms.h. */
typedef struct ag__intrin {
  const char *name;        /* as written in the DSL */
  ag__ik kind;
  const char *ptx;         /* the instruction it stands for */
  int nops;
  const char *opnames[4];  /* "d", "a", "b", "c" / "dst", "src" */
  /* MMA */
  int m, n, k;
  const char *atom_a, *atom_b, *atom_c; /* layout_atoms names */
  ag__dt acc_dt;
  /* LDMATRIX: num matrices, transposed; dst/src layouts in CuTe notation on
   * the stacked (8*num) x 8 tile */
  int num, trans;
  const char *dst_tv;
  const char *src_tv;
  /* CP_ASYNC: allowed sizes (bit mask of 4, 8, 16) */
  int sizes;
  /* MBAR_ARRIVE: 1 when the arrive also expects transaction bytes (its
   * second operand); BULK_COPY: the alignment of sizes and addresses */
  int tx;
  int align;
  const char *semantics;   /* one line for docs and --help */
} ag__intrin;

/* The row named name, or NULL (borrowed: static data). */
const ag__intrin *ag__intrin_lookup(const char *name);
/* Every row; *n gets their count. */
const ag__intrin *ag__intrin_table(int *n);

#endif
