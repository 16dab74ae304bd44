/*
 * argus/layout.h — CuTe's layout algebra in C (src/tile/layout), and the
 * symbolic integer expressions the tile DSL's checker evaluates layouts on.
 *
 * A layout is a pair of congruent nested integer tuples, shape:stride, e.g.
 * ((2,4),(3,5)):((3,6),(1,24)). It maps a coordinate (or a linear index,
 * colexicographic) to an offset. Operations follow CuTe's semantics; an
 * operation that CuTe leaves undefined (a composition whose divisibility
 * condition fails, ...) returns AG_EUNDEFINED with a message naming the
 * failing modes, never a wrong answer.
 *
 * Memory: tuples, layouts and expressions are allocated in an arena the
 * caller owns (ag_arena); results are valid until the arena is released.
 * Every function returns 0 or a negative AG_E* code; messages for people go
 * to the ag_layout_ctx's err buffer.
 */
#ifndef ARGUS_LAYOUT_H
#define ARGUS_LAYOUT_H

#include "argus/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- int tuples */
/* A nested integer tuple: a leaf (an integer) or a tuple of children. */
typedef struct ag_tuple ag_tuple;
struct ag_tuple {
  int is_leaf;
  int64_t value;     /* leaf */
  int n;             /* tuple: number of children */
  ag_tuple **child;  /* tuple: children */
};

typedef struct ag_layout {
  ag_tuple *shape;
  ag_tuple *stride; /* congruent with shape */
} ag_layout;

/* Swizzle<B,M,S>: x ^ ((x & (((1<<B)-1) << (M+S))) >> S). A swizzled layout
 * is swz o L (the swizzle applied to L's offsets). */
typedef struct ag_swizzle {
  int b, m, s;
} ag_swizzle;

/* A tiler: a layout, or a tuple of layouts applied mode by mode (<3:4,8:2>). */
typedef struct ag_tiler {
  int is_layout; /* 1: a single layout in .layout */
  ag_layout layout;
  int n;               /* otherwise: per-mode layouts */
  ag_layout *modes;
} ag_tiler;

/* Context: the arena results live in, and the last error message. */
typedef struct ag_layout_ctx {
  ag_arena *arena;
  ag_str err; /* message for the last failure: lowercase, names the modes */
  /* added by issue 7 (set up by ag_layout_ctx_init, freed by _release): */
  const char *src_name; /* name parse diagnostics carry as their "file" (NULL: none) */
  struct ag_expr **xtab; /* hash-consing table of the expressions in arena (internal) */
  size_t xcap, xcount;
} ag_layout_ctx;

void ag_layout_ctx_init(ag_layout_ctx *c, ag_arena *arena);
void ag_layout_ctx_release(ag_layout_ctx *c);

/* Parsing and printing in CuTe notation. Parse errors add a diagnostic with
 * the column (file name may be NULL) and return AG_EPARSE. */
int ag_layout_parse(ag_layout_ctx *c, const char *text, ag_diags *d, ag_layout *out);
int ag_tuple_parse(ag_layout_ctx *c, const char *text, ag_diags *d, ag_tuple **out);
int ag_tiler_parse(ag_layout_ctx *c, const char *text, ag_diags *d, ag_tiler *out);
int ag_layout_print(const ag_layout *l, ag_str *out); /* "(4,2):(2,1)" */
int ag_tuple_print(const ag_tuple *t, ag_str *out);
json_t *ag_layout_to_json(const ag_layout *l);

/* Constructors. */
ag_tuple *ag_tuple_leaf(ag_layout_ctx *c, int64_t v);
ag_tuple *ag_tuple_make(ag_layout_ctx *c, int n, ag_tuple *const *children);
int ag_layout_make(ag_layout_ctx *c, ag_tuple *shape, ag_tuple *stride, ag_layout *out);
/* Column-major compact layout of a shape (CuTe's make_layout(shape)). */
int ag_layout_compact(ag_layout_ctx *c, ag_tuple *shape, ag_layout *out);

/* Queries. */
int64_t ag_layout_size(const ag_layout *l);   /* product of the shape */
int64_t ag_layout_cosize(const ag_layout *l); /* L(size-1)+1 */
int ag_layout_rank(const ag_layout *l);
int ag_layout_depth(const ag_layout *l);
int ag_layout_mode(ag_layout_ctx *c, const ag_layout *l, int i, ag_layout *out);

/* Concrete evaluation. */
int ag_layout_eval_index(const ag_layout *l, int64_t idx, int64_t *offset);
int ag_layout_eval_coord(const ag_layout *l, const ag_tuple *coord, int64_t *offset);
int ag_idx2crd(ag_layout_ctx *c, int64_t idx, const ag_tuple *shape, ag_tuple **out);
int ag_crd2idx(const ag_tuple *coord, const ag_tuple *shape, int64_t *idx);

/* The algebra. */
int ag_layout_coalesce(ag_layout_ctx *c, const ag_layout *l, ag_layout *out);
int ag_layout_coalesce_by_mode(ag_layout_ctx *c, const ag_layout *l, ag_layout *out);
int ag_layout_compose(ag_layout_ctx *c, const ag_layout *a, const ag_layout *b, ag_layout *out);
int ag_layout_compose_tiler(ag_layout_ctx *c, const ag_layout *a, const ag_tiler *b, ag_layout *out);
int ag_layout_complement(ag_layout_ctx *c, const ag_layout *l, int64_t cotarget, ag_layout *out);
int ag_layout_right_inverse(ag_layout_ctx *c, const ag_layout *l, ag_layout *out);
int ag_layout_left_inverse(ag_layout_ctx *c, const ag_layout *l, ag_layout *out);
int ag_layout_logical_divide(ag_layout_ctx *c, const ag_layout *a, const ag_tiler *b, ag_layout *out);
int ag_layout_zipped_divide(ag_layout_ctx *c, const ag_layout *a, const ag_tiler *b, ag_layout *out);
int ag_layout_tiled_divide(ag_layout_ctx *c, const ag_layout *a, const ag_tiler *b, ag_layout *out);
int ag_layout_logical_product(ag_layout_ctx *c, const ag_layout *a, const ag_tiler *b, ag_layout *out);
int ag_layout_blocked_product(ag_layout_ctx *c, const ag_layout *a, const ag_layout *b, ag_layout *out);
int ag_layout_raked_product(ag_layout_ctx *c, const ag_layout *a, const ag_layout *b, ag_layout *out);
int64_t ag_swizzle_apply(ag_swizzle s, int64_t x);

/* -------------------------------------------------- symbolic expressions */
/* Integer expressions over constants and named symbols (thread index, block
 * index, loop variables, problem sizes). Built hash-consed in the arena with
 * constant folding and light simplification (x+0, x*1, x*0, const op const).
 * The tile checker translates them to Z3 bit-vectors. */
typedef enum ag_expr_op {
  AG_X_CONST, AG_X_SYM, AG_X_ADD, AG_X_SUB, AG_X_MUL, AG_X_DIV, AG_X_MOD,
  AG_X_XOR, AG_X_AND, AG_X_OR, AG_X_SHL, AG_X_SHR
} ag_expr_op;

typedef struct ag_expr ag_expr;
struct ag_expr {
  ag_expr_op op;
  int64_t value;    /* AG_X_CONST */
  const char *name; /* AG_X_SYM (arena string) */
  const ag_expr *a, *b;
};

const ag_expr *ag_expr_const(ag_layout_ctx *c, int64_t v);
const ag_expr *ag_expr_sym(ag_layout_ctx *c, const char *name);
const ag_expr *ag_expr_bin(ag_layout_ctx *c, ag_expr_op op, const ag_expr *a, const ag_expr *b);
int ag_expr_is_const(const ag_expr *e, int64_t *v);
int ag_expr_print(const ag_expr *e, ag_str *out);
/* Evaluates with symbol values from a callback; AG_ENOTFOUND if a symbol is
 * unbound, AG_EUNDEFINED on division by zero. */
typedef int (*ag_expr_env)(void *ud, const char *name, int64_t *value);
int ag_expr_eval(const ag_expr *e, ag_expr_env env, void *ud, int64_t *out);

/* Symbolic evaluation: a coordinate whose leaves are expressions, or a linear
 * index expression, mapped to an offset expression. Division and modulus by
 * the shape follow idx2crd exactly. */
typedef struct ag_xtuple ag_xtuple; /* tuple with expression leaves */
struct ag_xtuple {
  int is_leaf;
  const ag_expr *value;
  int n;
  ag_xtuple **child;
};
int ag_layout_eval_index_x(ag_layout_ctx *c, const ag_layout *l, const ag_expr *idx,
                           const ag_expr **offset);
int ag_layout_eval_coord_x(ag_layout_ctx *c, const ag_layout *l, const ag_xtuple *coord,
                           const ag_expr **offset);
const ag_expr *ag_swizzle_apply_x(ag_layout_ctx *c, ag_swizzle s, const ag_expr *x);

/* ------------------------------------------------- additions (issue 7) */
/* Semantics decided where the interface above was silent (docs/layout.md):
 * - A layout is a function on all of N, as in CuTe: an index past size(L)
 *   runs on along the last mode (ag_layout_eval_index accepts it; negative
 *   indices are AG_ERANGE). Composition relies on this.
 * - cosize is CuTe's: sum over modes of (extent-1)*|stride|, plus 1.
 * - ag_layout_complement: cotarget 0 means CuTe's default, cosize(filter(L)).
 * - Composition with a tiler drops the modes of A the tiler does not reach
 *   (CuTe); the divides and products keep them.
 * - ag_expr: ADD/SUB/MUL/SHL wrap modulo 2^64; DIV/MOD truncate (C);
 *   SHR is arithmetic; a zero divisor, INT64_MIN/-1 or a shift outside
 *   [0,63] is AG_EUNDEFINED in ag_expr_eval and is never folded. x*0 and
 *   x&0 fold to 0 even when x would be undefined. Symbolic layout
 *   evaluation equals concrete evaluation for every index >= 0. */

/* The parsers accept d == NULL (c->err still gets "column N: message"). */

/* Bounds-checked variant of ag_layout_eval_coord's input: every coordinate
 * leaf inside its mode's extent, structure congruent with (or coarser than)
 * the shape. 0, or AG_EINVAL / AG_ERANGE with a message in c->err. */
int ag_layout_coord_check(ag_layout_ctx *c, const ag_layout *l, const ag_tuple *coord);
/* 0 when Swizzle<B,M,S> is well formed (B, M >= 0, |S| >= B,
 * B+M+|S| <= 62); AG_EINVAL with a message otherwise. Negative S shifts
 * left (CuTe). */
int ag_swizzle_check(ag_layout_ctx *c, ag_swizzle s);
/* Counts (CuTe's flatten): the leaves of a tuple. */
int ag_tuple_leaves(const ag_tuple *t);
/* Structural equality of tuples and of layouts (not functional equality). */
int ag_tuple_equal(const ag_tuple *a, const ag_tuple *b);
int ag_layout_equal(const ag_layout *a, const ag_layout *b);
/* Prints a tiler in the notation ag_tiler_parse reads ("<3:4,8:2>"). */
int ag_tiler_print(const ag_tiler *t, ag_str *out);

#ifdef __cplusplus
}
#endif
#endif
