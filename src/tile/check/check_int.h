/*
 * check_int.h — internals of the tile checker (src/tile/check): the values
 * the symbolic interpreter computes with, tags and the lattice, the shared
 * memory model and proof obligations (the intrinsic table: ../tile_intrin.h).
 *
 * One ag__ck context lives for one kernel check; everything it builds is in
 * its arena (expressions are hash-consed there by the layout module).
 */
#ifndef ARGUS_TILE_CHECK_INT_H
#define ARGUS_TILE_CHECK_INT_H

#include "argus/layout.h"
#include "argus/layout_atoms.h"
#include "argus/tile.h"
#include "argus/tile_check.h"
#include "../tile_builtin.h" /* ag__dt and the builtins, shared with the lowering and the runner */
#include "../tile_intrin.h"  /* the intrinsic table, shared likewise */

#include <setjmp.h>
#include <string.h>

/* memcpy that accepts (NULL, 0): empty vectors have no buffer */
static inline void ag__mcpy(void *dst, const void *src, size_t n) {
  if (n)
    memcpy(dst, src, n);
}

/* ------------------------------------------------------------- conditions */
/* Boolean formulas over integer expressions (thread-dependent conditions,
 * assumptions, guards of shared-memory writes). Built in the arena with
 * constant folding; comparisons are unsigned, as in the solver. */
typedef enum { BX_CONST, BX_CMP, BX_AND, BX_OR, BX_NOT } ag__bxk;
typedef struct ag__bx ag__bx;
struct ag__bx {
  ag__bxk k;
  int value;        /* BX_CONST */
  ag_tile_op op;    /* BX_CMP: EQ NE LT LE GT GE */
  const ag_expr *a, *b;
  const ag__bx *x, *y;
};

/* -------------------------------------------------------------------- tags */
/* A tag is bottom (no data: constants, unwritten memory), top (conflicting
 * or unsettled data), a tuple of integer expressions (with the data element
 * it was computed from), the join of several tags (path-insensitive merges,
 * arithmetic), or a shared-memory read whose value is the join of every
 * write that reaches the byte. Tags are hash-consed: equal pointers mean
 * equal tags. Expressions inside a tag are in terms of the symbol "tid" of
 * the thread that holds the value. */
typedef enum { TG_BOT, TG_TOP, TG_TUP, TG_JOIN, TG_SHR } ag__tgk;

typedef struct ag__tag ag__tag;
typedef struct ag__tagfn ag__tagfn;
struct ag__tag {
  ag__tgk k;
  /* TG_TOP: why */
  const char *why;
  /* TG_TUP */
  int n;
  const ag_expr **comp;
  const ag__tagfn *fn;     /* origin: the tag function, and ... */
  const ag_expr **coord;   /* ... the element's coordinates (fn->rank of them) */
  /* TG_JOIN */
  int nm;
  const ag__tag **m;
  /* TG_SHR: the byte at address `addr` (buffer-relative, after swizzle) of
   * shared buffer `buf`, read at time `pc` in barrier interval `epoch` by
   * thread "tid"; records [0, nrec) of the buffer existed then. */
  int buf;
  const ag_expr *addr;
  int64_t pc;
  int epoch;
  int nrec;
  const ag_tile_node *at; /* the reading statement */
};

/* A tag function: X[i, j, ...] -> (e1, e2, ...). */
struct ag__tagfn {
  const char *name;        /* "T_Q", or NULL */
  const char *target;      /* the tile or tensor it labels */
  int rank;
  const char **vars;       /* the index variable names */
  const ag_tile_node *body; /* the tag expression */
  const ag_tile_node *at;
  struct ag__scope *env;   /* the bindings it closes over */
  int active;              /* being applied: a tag() in its body that comes back is a cycle */
};

/* ----------------------------------------------------------------- memory */
typedef enum { SP_GLOBAL, SP_SHARED, SP_REG } ag__space;

/* One shared memory allocation. */
typedef struct ag__sbuf {
  const char *name;
  int64_t size; /* bytes */
} ag__sbuf;

/* A write to shared memory: every thread "tid" satisfying guard writes
 * `width` bytes at addr (buffer-relative, after swizzle); byte j gets tag
 * tags[j]. Plain stores settle at once for the writer and after the next
 * barrier for everyone; cp.async stores settle when a wait retires their
 * group (done_pc) and for others after the barrier that follows. */
typedef struct ag__wrec {
  int buf;
  const ag_expr *addr;
  int width;
  const ag__tag **tags;
  const ag__tag *ptag;   /* all bytes at once: tags[j] = ptag with "@byte" := j */
  int pgran;             /* ptag is constant on aligned blocks of pgran bytes */
  const ag__bx *guard;   /* NULL: all threads */
  int64_t pc;            /* when it was written */
  int epoch;             /* barrier interval of the write */
  int group;             /* cp.async group, or -1 */
  int64_t done_pc;       /* writer sees it from here (INT64_MAX: never waited) */
  int vis_epoch;         /* others see it from this barrier interval on */
  const ag_tile_node *at;
  int64_t lo, hi;        /* bounds of the bytes it may touch (for pruning) */
  /* a bulk copy: it completes transaction bytes of phase mphase of mbarrier
   * mbar - 1 (0: not a bulk copy); mlate: that phase may complete before its
   * bytes land (its expected bytes differ from the bytes copied into it);
   * mset: the waits that settle it for their threads from their pc on */
  int mbar;
  int64_t mphase;
  int mlate;
  const struct ag__mset *mset;
  /* a TMA box: byte "@byte" holds the source's data only where bcond holds
   * (the element is inside the tensor); elsewhere the copy writes zeros,
   * which carry no tag (bottom). NULL: every byte. */
  const struct ag__bx *bcond;
} ag__wrec;

/* A wait on an mbarrier that settles a bulk copy for the threads of its
 * guard (NULL: every thread) from time pc on. */
typedef struct ag__mset {
  int64_t pc;
  const ag__bx *guard;
  const struct ag__mset *next;
} ag__mset;

/* An mbarrier (PTX mbarrier.*): a u64 element of a shared tile at a
 * compile-time address. The interpreter keeps one timeline for the block,
 * so a barrier's phases are counted: phases below `done` have completed;
 * phases in [done, open) have all their arrivals and complete when their
 * bulk copies land, at a time nobody knows; phase `open` collects arrivals
 * (`pending` still missing) and transaction bytes (`tx`: expected minus
 * copied). */
typedef struct ag__mbar {
  int buf;
  int64_t addr;            /* byte address in the buffer */
  const char *name;        /* "full[1]", for messages */
  const char *why_wait, *why_late; /* why a bulk copy it completes is unsettled */
  const ag_tile_node *at;  /* its mbar_init */
  int64_t count;           /* arrivals per phase */
  int init_epoch;          /* barrier interval of the init */
  int fenced;              /* a fence_mbar_init() followed the init */
  int64_t done, open, pending, tx;
  int open_copies;         /* bulk copies counted against the open phase */
  const ag_tile_node *lost; /* a summarized loop that used it: its phase is unknown after */
} ag__mbar;

/* Orderings through mbarriers, for the race check: a release (every thread
 * of the block arrived on phase `phase` of mbarrier `bar` at pc) or an
 * acquire (the threads of guard waited at pc and saw every phase below
 * `phase` complete). */
typedef struct ag__msync {
  int bar, wait;
  int64_t phase, pc;
  const ag__bx *guard;
} ag__msync;

/* A read of shared memory (a load or an ldmatrix row; tag() is a ghost and
 * reads nothing): every thread "tid" satisfying guard reads `width` bytes at
 * addr, at time pc in barrier interval epoch, in loop iteration `loops`. The
 * interpreter keeps the reads of the current barrier interval only (race.c):
 * a later write of another thread in the same interval may overtake them. */
typedef struct ag__rrec {
  int buf;
  const ag_expr *addr;
  int width;
  const ag__bx *guard;   /* NULL: all threads */
  int64_t pc;
  int epoch;
  const ag_tile_node *at;
  int nloops;
  struct ag__loopvar *loops;
  int64_t lo, hi;        /* bounds of the bytes it may touch */
  int write;             /* 1: a write (a store, a cp.async at its issue), else a read */
  int wrec;              /* a write: its record's index + 1 (0: none) */
  int inflight;          /* a wgmma's operand read whose group has not retired */
} ag__rrec;

/* reset(tile): the bytes [lo, hi) of a buffer lose their tags at time pc,
 * when guard holds (NULL: always; a guard is a condition that does not depend
 * on the thread: an undecided 'if' on problem sizes or a summarized loop's
 * iteration). */
typedef struct ag__reset {
  int buf;
  int64_t pc, lo, hi;
  const ag__bx *guard;
} ag__reset;

/* ------------------------------------------------------------------ tiles */
/* A global view: dims of a row-major reshape of a tensor parameter. Each
 * view dim i advances tensor dim `tdim[i]` by `mult[i]` (elements; for the
 * innermost tensor dim, bytes). Linear views (a reshape the checker could not
 * match dim by dim) address bytes: offset = lbase + sum idx_i * lstride_i. */
typedef struct ag__gview {
  int tensor;              /* parameter index */
  int rank;
  const ag_expr **dims;
  int *tdim;
  const ag_expr **mult;
  const ag_expr **origin;  /* per tensor dim; innermost in bytes */
  int linear;
  const ag_expr *lbase;
  const ag_expr **lstride;
} ag__gview;

typedef struct ag__tile {
  ag__space sp;
  ag__dt dt;
  /* shared and register */
  int buf;                 /* shared buffer / register buffer index */
  const ag_expr *base;     /* byte offset of coordinate 0 (before swizzle) */
  ag_layout layout;        /* coordinate -> element offset */
  int swizzled;
  ag_swizzle swz;          /* on byte offsets */
  /* global */
  ag__gview g;
  const char *name;        /* for messages */
} ag__tile;

/* A register file buffer of one thread. */
typedef struct ag__rbuf {
  const char *name;
  int64_t size;
  const ag__tag **bytes;
} ag__rbuf;

/* ----------------------------------------------------------------- values */
typedef enum {
  V_NONE, V_INT, V_BOOL, V_FLOAT, V_TILE, V_ELEM, V_DATA, V_TUPLE, V_DTYPE,
  V_LAYOUT, V_SWIZZLE, V_TAGFN, V_INTRIN, V_INTRIN_OP, V_TAGV,
  V_POISON, /* differs between the branches of a thread-dependent if (at: poison_at) */
  V_TMAP     /* a TMA tensor map (tma_map) */
} ag__vk;

/* tma_map(A, box=(...), swizzle=S): the box of tensor parameter `param`, in
 * the tensor's dimension order (the last is contiguous); map: the same as
 * the layout module's ag_tma_map (dimension 0 innermost; dims and strides
 * are the run's, so placeholders here). */
typedef struct ag__tmap {
  int param;
  int rank;
  int64_t box[5];
  int64_t bytes;           /* what one copy moves */
  ag_tma_map map;
  const char *name;        /* the name it is bound to, or NULL */
} ag__tmap;

/* A tma_store whose shared source bytes [lo, hi) of buffer buf the copy
 * engine may still read: group is the bulk group (-1: not committed yet). */
typedef struct ag__tstore {
  int buf;
  int64_t lo, hi;
  int64_t group;
  const ag_tile_node *at;
} ag__tstore;

typedef struct ag__value ag__value;

/* An element reference: one element of a tile, not yet loaded. */
typedef struct ag__elem {
  ag__tile *tile;
  const ag_expr *addr;     /* shared: physical byte address; reg: byte offset */
  const ag_expr **tcoord;  /* global: tensor coordinates (innermost in bytes) */
  const ag_expr *gbyte;    /* global linear view: byte offset */
} ag__elem;

/* Data held by a thread: bytes with tags. */
typedef struct ag__data {
  ag__dt dt;
  int n;
  const ag__tag **tags;
  const ag__tag *ptag;     /* optional: tags[j] == ptag with "@byte" := j */
  int pgran;
} ag__data;

/* A tag expression inside an assertion: a tag, optionally projected. */
typedef struct ag__tagv {
  const ag__tag *tag;
  int proj;                /* -1: the whole tag; else the component */
  int literal;             /* 1: a literal tuple / top / bot in the source */
} ag__tagv;

struct ag__value {
  ag__vk k;
  const ag_expr *i;
  const ag__bx *b;
  double f;
  ag__tile *t;
  ag__elem e;
  ag__data d;
  int n;
  ag__value *items;
  ag__dt dt;
  ag_layout layout;
  ag_swizzle swz;
  ag__tagfn *fn;
  const ag__intrin *in;
  const char *opname;      /* V_INTRIN_OP: "a", "b", "c" */
  const ag_tile_node *poison_at;
  ag__tagv tv;
  const ag__tmap *tm;      /* V_TMAP */
};

/* ------------------------------------------------------------- obligations */
typedef enum { OB_EQ, OB_NE, OB_INT, OB_RACE } ag__obk;

typedef struct ag__loopvar {
  const char *name;
  int64_t value;
  const ag_expr *x;        /* the iteration of a summarized loop (symbolic), or NULL */
} ag__loopvar;

typedef struct ag__oblig {
  ag__obk k;
  const ag_tile_node *at;  /* the assert statement */
  int stmt;                /* index of the assert statement in the report */
  ag__tagv lhs, rhs;
  const ag__bx *cond;      /* OB_INT: must hold */
  const ag__bx *path;      /* the path condition (NULL: true) */
  int nloops;
  ag__loopvar *loops;
  /* memory safety (an OB_INT of an access): index bidx of mode bmode of
   * bname must be below bext (unsigned: a negative index is out too) */
  const ag_expr *bidx, *bext;
  int bmode;
  const char *bname;
  /* OB_RACE: the access rw (a copy of its record, owned by the arena) by
   * another thread may overtake the earlier access rr in the same barrier
   * interval, at least one of them a write (violated when rr's thread and
   * another thread, rw's, meet a byte): write-after-read, write-after-write,
   * read-after-write (race.c) */
  const ag__rrec *rr;
  const ag__rrec *rw;
  const char *why;         /* OB_INT: the counterexample's reason when set (arena);
                              OB_NE: the left side's text (a wgmma operand) */
  const ag_expr *wv, *wk;  /* a wgmma operand's value index and k (symbols), or NULL */
} ag__oblig;

/* Accumulator registers a wgmma wrote that no wgmma_wait has retired yet:
 * bytes [lo, hi) of register buffer buf, written by the wgmma at `at` in
 * wgmma group `group` (interp.c, "wgmma"). */
typedef struct ag__wgread {
  const ag_tile_node *at;
  int buf, width;
  const ag_expr *addr;
  const ag__bx *guard;
} ag__wgread;
/* ... and the shared operand reads it issued (reads[0 .. nreads), arena):
 * the wgmma reads them asynchronously until its group retires, so the race
 * check moves them to the wgmma_wait that retires it (race.c). */
typedef struct ag__wgpend {
  int buf;
  int64_t lo, hi;
  int group;
  const ag_tile_node *at;
  ag__wgread *reads;
  int nreads;
} ag__wgpend;

/* ---------------------------------------------------------------- context */
typedef struct ag__binding {
  const char *name;
  ag__value *v;
} ag__binding;

typedef struct ag__scope {
  AG_VEC(ag__binding) b;
  struct ag__scope *parent;
} ag__scope;

typedef struct ag__param {
  const char *name;
  int is_tensor;
  ag__dt dt;
  int rank;
  const ag_expr **dims;
  ag__tagfn *tagfn;
  int linear_used;         /* read through a linear (unmatched) view */
} ag__param;

typedef struct ag__stmt_info {
  const ag_tile_node *at;
  int64_t instances;
  int bounds;              /* 1: the in-bounds obligation of an access (at: the index) */
  int race;                /* 1: the race-freedom obligation of a shared write (at: it) */
} ag__stmt_info;

/* The iteration v of a summarized loop being checked (loop.c) and what its
 * facts say of it: v = P*q + r0, vmin <= v < 2^31 (P = 0: no stage being
 * checked). xexpr.c folds stage indices (v + k) % m over it. */
typedef struct ag__iterq {
  const ag_expr *v;
  int64_t P, r0, vmin;
  const struct ag__iterq *up;  /* an enclosing summarized loop's */
} ag__iterq;

typedef struct ag__ck {
  const ag_tile_program *prog;
  const ag_tile_node *kernel;
  const ag_tile_check_opts *opts;
  ag_diags *diags;
  ag_arena arena;
  ag_layout_ctx lc;
  jmp_buf fail;            /* a malformed program or out of memory */
  int fail_rc;

  int64_t nthreads;
  int64_t tdim[3];
  const ag_tile_node *grid; /* @grid(...), or NULL: blocks only below 2^16 */
  const ag_expr *tid;      /* the symbol "tid" */
  const ag_expr *bid[3];

  AG_VEC(ag__param) params;
  AG_VEC(const char *) sizes;   /* symbolic problem sizes */
  AG_VEC(const ag__bx *) assumes;
  AG_VEC(ag__sbuf) sbufs;
  int64_t smem_top;
  AG_VEC(ag__rbuf) rbufs;
  AG_VEC(ag__wrec) wrecs;
  AG_VEC(ag__reset) resets;
  AG_VEC(ag__rrec) reads;  /* shared reads of the current barrier interval (race.c) */
  ag_map read_seen;        /* (generation, buffer, address, width, guard) of those reads */
  int64_t read_gen;        /* changes whenever the list of reads is cleared or restored */
  int64_t race_work;       /* pairs scanned + bytes enumerated for races (bounded) */
  int64_t race_obligs;     /* race pairs left to the solver (at most --max-writes) */
  int ghost;               /* inside tag(): accesses are observations, not reads */
  AG_VEC(ag__oblig) obligs;
  AG_VEC(ag__stmt_info) asserts;
  ag_map tagcons;          /* hash-consing of tags */
  ag_map bounds_memo;      /* expression -> interval (xexpr.c) */
  ag_map align_memo;       /* expression -> known power-of-two divisor */
  ag_map mask_memo;        /* expression -> bits that may be 1 */
  struct ag__evcache *evcache; /* eval.c */

  ag__scope *scope;
  const ag__bx *path;      /* current path condition (NULL: true) */
  int symbolic_if;         /* depth of thread-dependent ifs */
  int uniform_if;          /* depth of undecided ifs that do not depend on the thread */
  int nested;              /* loops and ifs on conditions that are not compile-time
                              constants around the statement: the lowering's C blocks,
                              where make_shared and assume do not lower */
  /* loop summaries (loop.c) */
  const ag__bx *facts;     /* what holds of a summarized iteration (NULL: nothing) */
  int replay;              /* > 0: replaying iterations for their state only (no
                              obligations, no assumptions) */
  int summarizing;         /* inside a summarized loop's body */
  const ag__iterq *iters;  /* the summarized iterations being checked (innermost first) */
  AG_VEC(ag_tile_loop_note) notes; /* summarized loops, for the report (owned strings) */
  void *decider;           /* smt.c's context for ag__smt_decide */
  int64_t pc;
  int epoch;
  AG_VEC(ag__mbar) mbars;  /* mbarriers (interp.c) */
  AG_VEC(ag__msync) msyncs; /* releases and acquires through them (race.c) */
  int64_t msettle_from;    /* waits settle the bulk copies issued from here on (loop.c) */
  int next_mbar;           /* the next shared write is a bulk copy on this mbarrier + 1 ... */
  int64_t next_mphase;     /* ... completing this phase of it (interp.c) */
  int group_open;          /* cp.async writes since the last commit */
  int ngroups;             /* committed groups */
  AG_VEC(ag__loopvar) loops;
  int64_t steps;           /* interpreted statements (bounded) */
  int wg_ngroups;          /* committed wgmma groups */
  int race_inflight;       /* the reads recorded now are a wgmma's, in flight */
  AG_VEC(ag__wgpend) wg_pend; /* accumulators of wgmmas not yet retired */
  const ag__bx *wg_role;   /* the threads of the first wgmma_commit under a role split */
  struct ag__roles *roles; /* the warp-specialized role splits being run (interp.c) */
  int wide_writes;         /* the kernel has bulk copies or TMA loads: a shared write's
                              byte index ("@byte") may exceed 15 */
  const ag__tag **tma_wide; /* [tma_wide_n] of one top tag: the per-byte tags of every TMA
                               box (reads wider than an element), shared, never written */
  int64_t tma_wide_n;
  int64_t tst_ngroups;     /* committed tma_store groups */
  AG_VEC(ag__tstore) tst_pend; /* tma_store sources not yet released by a tma_store_wait */
  /* the interpretation stopped at a loop that could not be summarized after
   * its exact prefix (ag__loop_cut): the refusal, where, and how many
   * iterations ran */
  const char *cut;
  const ag_tile_node *cut_at;
  int cut_iters;
  int cutting;             /* running such a prefix */
  /* memory an attempt of a summary would otherwise take again and again in the arena:
   * the per-byte tags of a havoc write (every one top, shared and never written,
   * loop.c) and the concrete offsets of a layout (a scratch array each use fills,
   * interp.c layout_offsets; heap, freed with the checker) */
  const ag__tag **havoc_tags;
  int64_t havoc_n;
  int64_t *offs;
  int64_t offs_cap;
} ag__ck;

/* A malformed program: adds an error at node n and unwinds to the check's
 * entry point (exit code 2 in the CLI). */
_Noreturn void ag__ck_error(ag__ck *c, const ag_tile_node *n, const char *fmt, ...)
    AG_PRINTF(3, 4);
_Noreturn void ag__ck_oom(ag__ck *c);
/* A checker limit at n (not a malformed program): an error inside a loop
 * summary's attempt; outside, the interpretation stops there and the
 * violations found so far refute the kernel (check.c), else the error; a
 * work limit (limit = 1) so only inside ag__loop_cut's prefix. */
_Noreturn void ag__ck_stop(ag__ck *c, const ag_tile_node *n, int limit, const char *fmt, ...)
    AG_PRINTF(4, 5);
void *ag__ck_alloc(ag__ck *c, size_t n);
const char *ag__ck_strdup(ag__ck *c, const char *s);

/* expressions (xexpr.c) */
const ag_expr *ag__x(ag__ck *c, ag_expr_op op, const ag_expr *a, const ag_expr *b);
const ag_expr *ag__xc(ag__ck *c, int64_t v);
const ag_expr *ag__xsubst(ag__ck *c, const ag_expr *e, const ag_expr *sym, const ag_expr *by);
/* Bounds of e for tid in [0, nthreads) and other symbols unbounded; returns
 * 0 and [lo, hi] when e depends only on tid and constants. */
int ag__xbounds(ag__ck *c, const ag_expr *e, int64_t *lo, int64_t *hi);
int ag__xdepends(const ag_expr *e, const char *sym);
/* The largest power of two that provably divides e (1 when unknown). */
int64_t ag__xalign(ag__ck *c, const ag_expr *e);
/* The bits of e that may be 1 (see xexpr.c for the symbol bounds used). */
uint64_t ag__xmask(ag__ck *c, const ag_expr *e);
/* e = root + k with k a constant: returns root (possibly e) and sets *k. */
const ag_expr *ag__xsplit_const(ag__ck *c, const ag_expr *e, int64_t *k);
/* e = rest + k with k = ag__xconst_term(e), the constant term of e read as a
 * sum through +, - and multiplication by a constant: returns rest, whose
 * terms are e's without their constants (((c * 4096) + 16) * 2 is c * 8192 +
 * 32), so that ag__xalign sees the alignment of what varies. */
const ag_expr *ag__xsplit_lin(ag__ck *c, const ag_expr *e, int64_t *k);
/* Evaluates e with tid = t (and nothing else bound); 0 or an error. */
int ag__xeval_tid(const ag_expr *e, int64_t t, int64_t *out);
const ag__bx *ag__bconst(ag__ck *c, int v);
const ag__bx *ag__bcmp(ag__ck *c, ag_tile_op op, const ag_expr *a, const ag_expr *b);
const ag__bx *ag__band(ag__ck *c, const ag__bx *x, const ag__bx *y);
const ag__bx *ag__bor(ag__ck *c, const ag__bx *x, const ag__bx *y);
const ag__bx *ag__bnot(ag__ck *c, const ag__bx *x);
int ag__bis_const(const ag__bx *b, int *v);
const ag__bx *ag__bsubst(ag__ck *c, const ag__bx *b, const ag_expr *sym, const ag_expr *by);
/* -1 unknown, 0 false, 1 true, for tid = t. */
int ag__beval_tid(const ag__bx *b, int64_t t);
void ag__xprint(const ag_expr *e, ag_str *out);

/* tags (tags.c) */
const ag__tag *ag__tag_bot(ag__ck *c);
const ag__tag *ag__tag_top(ag__ck *c, const char *why);
const ag__tag *ag__tag_tup(ag__ck *c, int n, const ag_expr **comp, const ag__tagfn *fn,
                           const ag_expr **coord);
const ag__tag *ag__tag_join(ag__ck *c, const ag__tag *a, const ag__tag *b);
const ag__tag *ag__tag_shr(ag__ck *c, int buf, const ag_expr *addr, const ag_tile_node *at);
void ag__tag_print(const ag__tag *t, ag_str *out);
int ag__tag_has_shr(const ag__tag *t);

/* races (race.c): a shared read to check against the interval's writes of
 * other threads and remember until the next barrier, a shared write to
 * check against the reads and writes it may overtake, and the barrier that
 * orders them */
/* A wgmma's operand read r (ag__race_read at its issue) retires now: it is
 * kept in the barrier interval as an access at this point, the latest its
 * asynchronous read may happen, so that only an arrive after the retiring
 * wgmma_wait releases it (ag__race_mbar_ordered). */
void ag__race_retire_all(ag__ck *c);
void ag__race_read_retire(ag__ck *c, const ag__wgread *r);
void ag__race_read(ag__ck *c, const ag_tile_node *at, int buf, const ag_expr *addr, int width,
                   const ag__bx *guard);
void ag__race_write(ag__ck *c, const ag__wrec *w);
void ag__race_barrier(ag__ck *c);
/* 1 when the earlier access r and the later one l are ordered through
 * mbarriers for every thread pair (a bulk copy settled for l's threads; an
 * arrive of every thread after r and a wait of l's threads before l that saw
 * its phase complete) */
int ag__race_mbar_ordered(ag__ck *c, const ag__rrec *r, const ag__rrec *l);
/* 1 when every thread of guard x is one of guard y's (syntactically: y is
 * NULL, x itself, or a conjunct of x) */
int ag__bx_implies(const ag__bx *x, const ag__bx *y);
/* 1 when bulk copy w is settled for thread `reader` (tid := reader, -1:
 * unknown) at time pc: a wait on its phase returned in that thread */
int ag__wrec_msettled(const ag__wrec *w, int64_t reader, int64_t pc);
/* A statement's entry in the report (c->asserts), counting one instance. */
int ag__ck_stmt(ag__ck *c, const ag_tile_node *n);

/* the interpreter (interp.c) */
int ag__interp_kernel(ag__ck *c);

/* Interprets one kernel without solving: the context holds the obligations
 * (owned; ag__ck_free), or NULL with *rc (diagnostics added). Tests use it to
 * compare the symbolic tags with a concrete interpreter. */
ag__ck *ag__ck_run(const ag_tile_program *p, const ag_tile_node *k, const ag_tile_check_opts *o,
                   ag_diags *d, int *rc);
void ag__ck_free(ag__ck *c);

/* Concrete evaluation of symbolic tags (eval.c): the set of tuples a tag
 * denotes for one thread, block and problem sizes; shared-memory reads are
 * resolved by enumerating the writing threads. */
#define AG__CTAG_MAX 8
typedef struct ag__ctag {
  int top;
  int n;
  int64_t v[AG__CTAG_MAX];
} ag__ctag;
typedef struct ag__cset {
  int n, overflow;
  ag__ctag t[64];
} ag__cset;
typedef struct ag__cenv {
  int64_t bid[3];
  int nsizes;
  const char *const *names;
  const int64_t *vals;
} ag__cenv;
/* proj >= 0 keeps that component of each tuple. 0 or AG_EUNDEFINED (an
 * expression could not be evaluated: an unbound symbol, division by 0). */
int ag__tag_eval(ag__ck *c, const ag__tag *t, const ag__cenv *e, int64_t tid, int proj,
                 ag__cset *out);
int ag__cset_add(ag__cset *s, const ag__ctag *t);
void ag__evcache_free(ag__ck *c);
uint32_t ag__u32_op(ag_expr_op op, uint32_t a, uint32_t b);

/* loop summaries (loop.c): the statements of interp.c they reuse */
void ag__exec_block(ag__ck *c, const ag_tile_list *body);
void ag__bind(ag__ck *c, const char *name, const ag_expr *value);
/* 0 and *v when name is bound to a compile-time integer here, else -1. */
int ag__name_const(ag__ck *c, const char *name, int64_t *v);
const ag__tag ***ag__snapshot_regs(ag__ck *c);
int64_t ag__block_cost(const ag_tile_list *body);
/* Checks loop n (`for v in range(start, stop)`, stop maybe symbolic) without
 * unrolling it; 0 when done (the loop's effect is in c), or -1 with c back in
 * its state before the loop and *why set (arena text) when it cannot be
 * summarized soundly. */
int ag__loop_summarize(ag__ck *c, const ag_tile_node *n, int64_t start, const ag_expr *stop,
                       const char **why, int *prefix);
/* A loop with a symbolic bound that cannot be summarized, outside every
 * summary (refute, don't refuse): runs its first `prefix` iterations exactly
 * (iteration u under u < stop, as a summary's prefix), then stops the
 * kernel's interpretation (c->cut = msg, the refusal): check.c decides the
 * obligations so far and reports their violations, which are real, or the
 * refusal when there is none. */
_Noreturn void ag__loop_cut(ag__ck *c, const ag_tile_node *n, const ag_tile_node *at,
                            int64_t start, const ag_expr *stop, int prefix, const char *msg);
extern const char ag__havoc_why[];
/* A summarized iteration v = P*q + r has q < 2^31 / P: every iteration
 * below 2^31 (integers are 32-bit). */
#define AG__QBITS 31

/* the solver (smt.c) */
/* Decides b (a condition that does not depend on the thread) under the
 * kernel's assumptions so far and c->facts: 1 always true, 0 always false,
 * -1 undecided (or the solver gave up). */
int ag__smt_decide(ag__ck *c, const ag__bx *b);
void ag__smt_decider_free(ag__ck *c);
void ag__tile_cex_free(ag_tile_cex *x);
int ag__smt_check(ag__ck *c, ag_tile_report *r, int kernel_index);

#endif
