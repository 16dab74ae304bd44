/*
 * intrin.c — the table of hardware intrinsics the tile DSL exposes: for each,
 * its operands, its thread-value layouts and its semantics, as data. The
 * interpreter has one handler per semantic kind (matrix multiply-accumulate,
 * row gather, asynchronous copy, group bookkeeping, barrier); adding an
 * instruction of a known kind (a wgmma shape, a TMA box) is a new row plus
 * its layouts.
 *
 * The checker, the lowering and the value interpreter share it through
 * ../tile_intrin.h; it lives in the front end's library, which all three link.
 *
 * TV layouts map (lane, value) to the element's offset in the operand's tile,
 * column-major, as argus/layout_atoms.h does. The mma layouts come from the
 * layout module's atoms by name; the ldmatrix rows below are written for
 * every width and for .trans (the atoms module has .x4 only, and a test
 * compares the two). For ldmatrix the tile stacks the `num` 8x8 matrices
 * (row 8*i + r is row r of matrix i, supplied by lane 8*i + r):
 *   non-trans: lane (t0 = lane%4, t1 = lane/4), value (v0 = v%2, i = v/2)
 *              holds row 8i + t1, column 2*t0 + v0
 *   trans:     holds row 8i + 2*t0 + v0, column t1
 * (PTX ISA, "Warp-level matrix load instruction: ldmatrix").
 */
#include "../tile_intrin.h"
#include "argus/tile.h"
#include "../layout/layout_int.h" /* ag__lfail: the layout module's error convention */

#include <string.h>

#define MMA_ROW(nm, dtname)                                                                  \
  {                                                                                          \
    .name = nm, .kind = IK_MMA,                                                              \
    .ptx = "mma.sync.aligned.m16n8k16.row.col.f32." dtname "." dtname ".f32", .nops = 4,    \
    .opnames = {"d", "a", "b", "c"}, .m = 16, .n = 8, .k = 16,                               \
    .atom_a = "mma.m16n8k16.a", .atom_b = "mma.m16n8k16.b", .atom_c = "mma.m16n8k16.c",     \
    .acc_dt = DT_F32,                                                                        \
    .semantics = "D[m,n] = sum_k A[m,k] * B[n,k] + C[m,n] per warp; each D element takes "   \
                 "the tag of the C element in the same register"                             \
  }

#define LDM_ROW(nm, ptxname, num_, trans_, dst, src)                                         \
  {                                                                                          \
    .name = nm, .kind = IK_LDMATRIX, .ptx = ptxname, .nops = 2, .opnames = {"dst", "src"},   \
    .num = num_, .trans = trans_, .dst_tv = dst, .src_tv = src,                              \
    .semantics = "each lane supplies one 16-byte row address; destination b16 values take "  \
                 "the tags of the shared-memory bytes their layout selects"                  \
  }

/* wgmma.m64nNk16 with f32 accumulators: d is the thread's N/2 f32 registers
 * (the .d atom), a is either 8 bf16/f16 registers (the .a atom) or a 64 x 16
 * shared tile, b an N x 16 shared tile; the shared operands go to the
 * instruction as matrix descriptors derived from the tile's layout and
 * swizzle (ag_gmma_desc_derive). The PTX names .bf16; an f16 operand pair
 * gets .f16 from the lowering. */
#define WG_ROW(N)                                                                            \
  {                                                                                          \
    .name = "wgmma_m64n" #N "k16", .kind = IK_WGMMA,                                         \
    .ptx = "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.bf16.bf16", .nops = 3,            \
    .opnames = {"d", "a", "b"}, .m = 64, .n = N, .k = 16, .atom_a = "wgmma.m64nNk16.a",      \
    .atom_c = "wgmma.m64n" #N "k16.d", .acc_dt = DT_F32,                                     \
    .semantics = "D[m,n] += sum_k A[m,k] * B[n,k] per warpgroup, asynchronously: every "    \
                 "shared operand element a thread's accumulators depend on must be settled; "  \
                 "D keeps its tags and may not be read until a wgmma_wait retires its group"   \
  }

static const ag__intrin table[] = {
    MMA_ROW("mma_m16n8k16", "bf16"),
    LDM_ROW("ldmatrix_x1", "ldmatrix.sync.aligned.m8n8.x1.shared.b16", 1, 0,
            "((4,8),(2,1)):((16,1),(8,8))", "(8,8):(1,8)"),
    LDM_ROW("ldmatrix_x2", "ldmatrix.sync.aligned.m8n8.x2.shared.b16", 2, 0,
            "((4,8),(2,2)):((32,1),(16,8))", "(16,8):(1,16)"),
    LDM_ROW("ldmatrix_x4", "ldmatrix.sync.aligned.m8n8.x4.shared.b16", 4, 0,
            "((4,8),(2,4)):((64,1),(32,8))", "(32,8):(1,32)"),
    LDM_ROW("ldmatrix_x1_trans", "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16", 1, 1,
            "((4,8),(2,1)):((2,8),(1,8))", "(8,8):(1,8)"),
    LDM_ROW("ldmatrix_x2_trans", "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16", 2, 1,
            "((4,8),(2,2)):((2,16),(1,8))", "(16,8):(1,16)"),
    LDM_ROW("ldmatrix_x4_trans", "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", 4, 1,
            "((4,8),(2,4)):((2,32),(1,8))", "(32,8):(1,32)"),
    {.name = "cp_async", .kind = IK_CP_ASYNC, .ptx = "cp.async.cg/ca.shared.global",
     .nops = 2, .opnames = {"dst", "src"}, .sizes = 4 | 8 | 16,
     .semantics = "copies 4, 8 or 16 bytes from global to shared memory in the open group; "
                  "the bytes carry the source's tags once a wait retires the group"},
    {.name = "cp_async_commit", .kind = IK_CP_COMMIT, .ptx = "cp.async.commit_group",
     .semantics = "closes the open group of cp_async copies"},
    {.name = "cp_async_wait", .kind = IK_CP_WAIT, .ptx = "cp.async.wait_group N", .nops = 1,
     .opnames = {"n"},
     .semantics = "waits until at most N committed groups are pending"},
    {.name = "syncthreads", .kind = IK_SYNC, .ptx = "bar.sync 0",
     .semantics = "block-wide barrier: shared-memory writes before it are visible after it"},
    /* mbarriers (PTX ISA, "Parallel Synchronization and Communication
     * Instructions: mbarrier"): a u64 in shared memory; a phase completes
     * when its pending arrival count and its transaction count are both 0 */
    {.name = "mbar_init", .kind = IK_MBAR_INIT, .ptx = "mbarrier.init.shared::cta.b64",
     .nops = 2, .opnames = {"bar", "count"},
     .semantics = "initializes the mbarrier (a u64 shared element): phase 0, `count` "
                  "arrivals expected per phase"},
    {.name = "fence_mbar_init", .kind = IK_MBAR_FENCE,
     .ptx = "fence.mbarrier_init.release.cluster",
     .semantics = "makes the mbar_init before it visible to bulk copies (the async proxy); "
                  "a syncthreads() after it makes them visible to the other threads"},
    {.name = "mbar_arrive", .kind = IK_MBAR_ARRIVE,
     .ptx = "mbarrier.arrive.shared::cta.b64", .nops = 1, .opnames = {"bar"},
     .semantics = "one arrival per calling thread on the current phase"},
    {.name = "mbar_expect_tx", .kind = IK_MBAR_ARRIVE, .tx = 1,
     .ptx = "mbarrier.arrive.expect_tx.shared::cta.b64", .nops = 2,
     .opnames = {"bar", "bytes"},
     .semantics = "the current phase expects `bytes` more transaction bytes, then one "
                  "arrival per calling thread"},
    {.name = "mbar_wait", .kind = IK_MBAR_WAIT,
     .ptx = "mbarrier.try_wait.parity.shared::cta.b64", .nops = 2, .opnames = {"bar", "parity"},
     .semantics = "waits until the phase of parity `parity` has completed (a try_wait.parity "
                  "loop); bulk copies that completed it are settled for the calling thread"},
    {.name = "bulk_copy", .kind = IK_BULK_COPY,
     .ptx = "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes", .nops = 4,
     .opnames = {"dst", "src", "bytes", "bar"}, .align = 16,
     .semantics = "copies `bytes` (a multiple of 16) from a global element on into shared "
                  "memory, both 16-byte aligned; the bytes complete transactions of the "
                  "mbarrier's current phase and are settled once a wait on that phase returns"},
    /* TMA tensor copies (PTX ISA, "cp.async.bulk.tensor"): the box a tma_map
     * (a CUtensorMap the host encodes) selects at the coordinates */
    {.name = "tma_load", .kind = IK_TMA_LOAD,
     .ptx = "cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx::bytes",
     .nops = -1, .opnames = {"map", "coords", "dst", "bar"}, .align = 128,
     .semantics = "copies the map's box at the coordinates (zeros outside the tensor) into "
                  "shared memory from dst's first element on, placed by the map's swizzle; "
                  "the bytes complete transactions of the mbarrier's current phase and "
                  "carry the source's tags once a wait on that phase returns"},
    {.name = "tma_store", .kind = IK_TMA_STORE,
     .ptx = "cp.async.bulk.tensor.Nd.global.shared::cta.bulk_group", .nops = -1,
     .opnames = {"map", "coords", "src"}, .align = 128,
     .semantics = "copies the box from shared memory (src's first element on) to the tensor "
                  "at the coordinates (elements outside it are skipped) in the open bulk "
                  "group; the shared bytes are read until a tma_store_wait retires the group"},
    {.name = "tma_store_commit", .kind = IK_TMA_COMMIT, .ptx = "cp.async.bulk.commit_group",
     .semantics = "closes the open group of tma_store copies"},
    {.name = "tma_store_wait", .kind = IK_TMA_WAIT, .ptx = "cp.async.bulk.wait_group.read N",
     .nops = 1, .opnames = {"n"},
     .semantics = "waits until at most N committed tma_store groups still read shared "
                  "memory: the others' source bytes may be overwritten"},
    WG_ROW(8),
    WG_ROW(16),
    WG_ROW(24),
    WG_ROW(32),
    WG_ROW(40),
    WG_ROW(48),
    WG_ROW(56),
    WG_ROW(64),
    WG_ROW(72),
    WG_ROW(80),
    WG_ROW(88),
    WG_ROW(96),
    WG_ROW(104),
    WG_ROW(112),
    WG_ROW(120),
    WG_ROW(128),
    WG_ROW(136),
    WG_ROW(144),
    WG_ROW(152),
    WG_ROW(160),
    WG_ROW(168),
    WG_ROW(176),
    WG_ROW(184),
    WG_ROW(192),
    WG_ROW(200),
    WG_ROW(208),
    WG_ROW(216),
    WG_ROW(224),
    WG_ROW(232),
    WG_ROW(240),
    WG_ROW(248),
    WG_ROW(256),
    {.name = "wgmma_fence", .kind = IK_WG_FENCE,
     .ptx = "fence.proxy.async.shared::cta; wgmma.fence.sync.aligned",
     .semantics = "orders register and shared-memory accesses before the wgmma that follow"},
    {.name = "wgmma_commit", .kind = IK_WG_COMMIT, .ptx = "wgmma.commit_group.sync.aligned",
     .semantics = "closes the open group of wgmma operations"},
    {.name = "wgmma_wait", .kind = IK_WG_WAIT, .ptx = "wgmma.wait_group.sync.aligned N",
     .nops = 1, .opnames = {"n"},
     .semantics = "waits until at most N committed wgmma groups are pending: the accumulators "
                  "of the others are settled"},
    /* warp specialization (docs/tile-dsl.md, "Warp specialization") */
    {.name = "setmaxnreg_inc", .kind = IK_SETMAXNREG, .tx = 1,
     .ptx = "setmaxnreg.inc.sync.aligned.u32", .nops = 1, .opnames = {"n"},
     .semantics = "raises the warpgroup's per-thread register limit to N (a multiple of 8 in "
                  "24..256); every warp of the warpgroup executes it"},
    {.name = "setmaxnreg_dec", .kind = IK_SETMAXNREG, .tx = 0,
     .ptx = "setmaxnreg.dec.sync.aligned.u32", .nops = 1, .opnames = {"n"},
     .semantics = "lowers the warpgroup's per-thread register limit to N (a multiple of 8 in "
                  "24..256); every warp of the warpgroup executes it"},
    {.name = "cp_async_mbar_arrive", .kind = IK_CP_MBAR_ARRIVE,
     .ptx = "cp.async.mbarrier.arrive.noinc.shared::cta.b64", .nops = 1, .opnames = {"bar"},
     .semantics = "one arrival per calling thread on the mbarrier once every cp_async the "
                  "thread issued before it has landed (counted in mbar_init's count); a wait "
                  "on that phase settles those copies"},
};

const ag__intrin *ag__intrin_lookup(const char *name) {
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strcmp(table[i].name, name) == 0)
      return &table[i];
  return NULL;
}

int ag__tile_calls(const ag_tile_node *n, const char *fn) {
  if (!n)
    return 0;
  if (n->kind == AG_TN_CALL && n->a && n->a->kind == AG_TN_NAME && !strcmp(n->a->name, fn))
    return 1;
  if (ag__tile_calls(n->a, fn) || ag__tile_calls(n->b, fn) || ag__tile_calls(n->c, fn))
    return 1;
  for (int i = 0; i < n->list.n; i++)
    if (ag__tile_calls(n->list.v[i], fn))
      return 1;
  for (int i = 0; i < n->list2.n; i++)
    if (ag__tile_calls(n->list2.v[i], fn))
      return 1;
  return 0;
}

int ag__tile_uses_tma(const ag_tile_node *n) { return ag__tile_calls(n, "tma_map"); }

const ag__intrin *ag__intrin_table(int *n) {
  *n = (int)(sizeof table / sizeof table[0]);
  return table;
}

/* ------------------------------------------------- wgmma shared operands */
int64_t ag__wgmma_period(int swizzled, ag_swizzle swz) {
  return swizzled ? (int64_t)1 << (swz.b + swz.m + swz.s) : 128;
}

int64_t ag__xconst_term(const ag_expr *e) {
  int64_t v;
  if (ag_expr_is_const(e, &v))
    return v;
  switch (e->op) {
  case AG_X_ADD:
    return ag__xconst_term(e->a) + ag__xconst_term(e->b);
  case AG_X_SUB:
    return ag__xconst_term(e->a) - ag__xconst_term(e->b);
  case AG_X_MUL:
    if (ag_expr_is_const(e->b, &v))
      return ag__xconst_term(e->a) * v;
    if (ag_expr_is_const(e->a, &v))
      return v * ag__xconst_term(e->b);
    return 0;
  default:
    return 0;
  }
}

int ag__wgmma_desc(ag_layout_ctx *c, const ag_layout *l, int swizzled, ag_swizzle swz, int esz,
                   const ag_expr *base, int64_t rows, ag_gmma_desc *out, ag_gmma_major *major) {
  int64_t period = ag__wgmma_period(swizzled, swz), k0 = ag__xconst_term(base);
  int64_t r = ((k0 % period) + period) % period;
  if (r % esz)
    return ag__lfail(c, AG_EINVAL, "the operand starts inside an element");
  ag_layout m0, m1;
  if (ag_layout_rank(l) != 2 || ag_layout_mode(c, l, 0, &m0) || ag_layout_mode(c, l, 1, &m1))
    return ag__lfail(c, AG_EINVAL, "the operand is a rank-2 shared tile");
  ag_smem_tile st;
  memset(&st, 0, sizeof st);
  st.elem_bytes = esz;
  if (swizzled) {
    st.swz = swz;
    for (int b = esz; b > 1; b /= 2)
      st.swz.m--; /* bytes to elements */
  }
  /* (rows, (cols, 2)) : (.., (.., r)): element (row, 16 + k) is at r + l(row, k) */
  int64_t kc = 0;
  st.layout = *l;
  if (r) {
    ag_tuple *sh[2] = {m1.shape, ag_tuple_leaf(c, 2)};
    ag_tuple *sd[2] = {m1.stride, ag_tuple_leaf(c, r / esz)};
    ag_tuple *s2[2] = {m0.shape, ag_tuple_make(c, 2, sh)};
    ag_tuple *d2[2] = {m0.stride, ag_tuple_make(c, 2, sd)};
    if (!sh[1] || !sd[1] || !s2[1] || !d2[1] ||
        ag_layout_make(c, ag_tuple_make(c, 2, s2), ag_tuple_make(c, 2, d2), &st.layout))
      return AG_ENOMEM;
    kc = 16;
  }
  /* K-major: k is contiguous; MN-major: the row is */
  int64_t o00 = 0, o01 = 0, o10 = 0;
  int rc = ag_smem_tile_addr(c, &st, 0, kc, &o00);
  if (!rc)
    rc = ag_smem_tile_addr(c, &st, 0, kc + 1, &o01);
  if (!rc)
    rc = ag_smem_tile_addr(c, &st, 1, kc, &o10);
  if (rc)
    return rc;
  if (o01 - o00 != esz && o10 - o00 != esz)
    return ag__lfail(c, AG_EINVAL, "the tile is neither K-major (k contiguous) nor MN-major "
                                   "(the row contiguous) in shared memory");
  *major = o01 - o00 == esz ? AG_GMMA_K_MAJOR : AG_GMMA_MN_MAJOR;
  return ag_gmma_desc_derive(c, &st, *major, 0, kc, rows, out);
}

static int mbar_call(const ag_tile_node *e) {
  if (!e)
    return 0;
  if (e->kind == AG_TN_CALL && e->a && e->a->kind == AG_TN_NAME) {
    const ag__intrin *in = ag__intrin_lookup(e->a->name);
    if (in && (in->kind == IK_MBAR_WAIT || in->kind == IK_MBAR_ARRIVE ||
               in->kind == IK_BULK_COPY || in->kind == IK_TMA_LOAD ||
               in->kind == IK_CP_MBAR_ARRIVE))
      return 1;
  }
  if (mbar_call(e->a) || mbar_call(e->b) || mbar_call(e->c))
    return 1;
  for (int i = 0; i < e->list.n; i++)
    if (mbar_call(e->list.v[i]))
      return 1;
  for (int i = 0; i < e->list2.n; i++)
    if (mbar_call(e->list2.v[i]))
      return 1;
  return 0;
}

int ag__intrin_sync_loop(const ag_tile_node *s) { return s->kind == AG_TN_FOR && mbar_call(s); }
