/*
 * tile_intrin.h — the tile DSL's hardware intrinsics (mma_m16n8k16,
 * ldmatrix_x1/x2/x4[_trans], cp_async, cp_async_commit, cp_async_wait,
 * syncthreads, the mbarriers mbar_init/mbar_arrive/mbar_expect_tx/mbar_wait/
 * fence_mbar_init, the 1-D bulk copy bulk_copy and the TMA tensor copies
 * tma_load/tma_store/tma_store_commit/tma_store_wait), one table (src/tile/front/intrin.c) shared by the checker
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
  IK_BULK_COPY,   /* bulk_copy(dst, src, bytes, bar) */
  /* TMA tensor copies through a tma_map (cp.async.bulk.tensor): a box into shared memory
   * completing on an mbarrier, a box out of it in a bulk group, the group's commit and its
   * wait for the reads */
  IK_TMA_LOAD,    /* tma_load(map, coords..., dst, bar) */
  IK_TMA_STORE,   /* tma_store(map, coords..., src) */
  IK_TMA_COMMIT,  /* tma_store_commit() */
  IK_TMA_WAIT,    /* tma_store_wait(n) */
  /* wgmma (warpgroup, asynchronous): the product, fence, commit_group, wait_group */
  IK_WGMMA, IK_WG_FENCE, IK_WG_COMMIT, IK_WG_WAIT,
  /* warp specialization: setmaxnreg_inc/_dec(N) (tx: 1 inc, 0 dec), and
   * cp_async_mbar_arrive(bar): an arrival when the thread's cp.asyncs land */
  IK_SETMAXNREG, IK_CP_MBAR_ARRIVE
} ag__ik;

/* One row of the intrinsic table. TV layouts map (lane, value) to the
 * element's offset in the operand tile, column-major (row + rows * col), as
 * in argus/layout_atoms.h. */
typedef struct ag__intrin {
  const char *name;        /* as written in the DSL */
  ag__ik kind;
  const char *ptx;         /* the instruction it stands for */
  int nops;                /* -1: variable (a TMA copy has one coordinate per map dimension) */
  const char *opnames[4];  /* "d", "a", "b", "c" / "dst", "src" */
  /* MMA, WGMMA (atom_c: wgmma's accumulator, the .d atom; atom_b: none, B is
   * read from shared memory through a descriptor) */
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

/* A wgmma shared operand (rows x 16, 16-bit elements esz = 2): the tile's
 * layout l, swizzle (on byte offsets, when swizzled) and byte offset base in
 * its buffer, whose swizzle period (ag__wgmma_period) the buffer is aligned
 * to. Only base's constant term (ag__xconst_term) modulo the period matters
 * (the caller checks that the rest is a multiple of it). Derives the matrix descriptor
 * (ag_gmma_desc_derive) with start relative to the period-aligned part and
 * gives the operand's major-ness; an error (in c->err) names the first
 * element where the tile is not a canonical GMMA layout of its mode. The
 * checker and the lowering both call it, so they derive the same one. */
#include "argus/layout_atoms.h"
#include "argus/tile.h"
int64_t ag__wgmma_period(int swizzled, ag_swizzle swz);
/* The constant term of e read as a sum of terms: through +, - and
 * multiplication by a constant (((c * 4096) + 16) * 2 has 32), the other
 * nodes opaque terms; e is that constant plus the rest (the checker's
 * ag__xsplit_lin builds the rest the same way). */
int64_t ag__xconst_term(const ag_expr *e);
int ag__wgmma_desc(ag_layout_ctx *c, const ag_layout *l, int swizzled, ag_swizzle swz, int esz,
                   const ag_expr *base, int64_t rows, ag_gmma_desc *out, ag_gmma_major *major);

/* Warp specialization: 1 when statement s is a `for` whose body (at any
 * depth) calls an mbarrier operation (mbar_wait, mbar_arrive/expect_tx,
 * bulk_copy, tma_load, cp_async_mbar_arrive): the loops the checker and the value
 * interpreter run side by side for the roles of a role split. */
struct ag_tile_node;
int ag__intrin_sync_loop(const struct ag_tile_node *s);
/* 1 when the tree under n calls tma_map: every shared buffer of such a
 * kernel starts on a 1024-byte boundary (the checker's addresses and the
 * lowering's placement), since TMA swizzles absolute addresses. */
int ag__tile_uses_tma(const ag_tile_node *n);
/* 1 when the tree under n calls the function named fn. */
int ag__tile_calls(const ag_tile_node *n, const char *fn);
#define AG__TMA_SMEM_ALIGN 1024

/* The row named name, or NULL (borrowed: static data). */
const ag__intrin *ag__intrin_lookup(const char *name);
/* Every row; *n gets their count. */
const ag__intrin *ag__intrin_table(int *n);

#endif
