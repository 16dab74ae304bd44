/*
 * lower.c — tile program → CUDA C (docs/lower.md).
 *
 * One pass over each kernel's statements, in source order, without
 * unrolling: a DSL `for` becomes a C `for` under `#pragma unroll`, an `if`
 * on anything but a literal condition a C `if`. Values are tracked at
 * compile time: integers as symbolic expressions (ag_expr) over C variables,
 * loop variables, the thread and block index and the size parameters; tiles
 * as a buffer, a byte offset and a layout, so every index folds through the
 * layout algebra (and the swizzle) into one C expression. A value that must
 * be a compile-time constant in the DSL (a slice's extent, a register index)
 * but depends on loop variables is checked by enumerating the loops' values.
 *
 * Invariants: a DSL name bound inside a C block is unusable after it
 * (poisoned), unless it was a C variable of the same kind declared outside,
 * which the block then assigns (Python's scoping, exactly); a name a loop
 * assigns that the loop also reads from before is a mutable C variable.
 * Whatever does not fit these rules is an error at its DSL line.
 *
 * Load: linear in the program's size (each statement lowered once; the
 * enumeration of loop values is capped at 2^16 combinations).
 */
#include "../tile_builtin.h"
#include "../tile_intrin.h"
#include "../tile_xop.h"
#include "argus/layout.h"
#include "argus/layout_atoms.h"
#include "argus/tile_lower.h"

#include <ctype.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- dtypes */
/* The checker's dtype table (tile_builtin.h): names, sizes, C types. */
static int is_half(int dt) { return dt == DT_BF16 || dt == DT_F16; }

/* ---------------------------------------------------------------- values */
enum { SP_G, SP_S, SP_R };
typedef struct tile {
  int sp, dt;
  const char *buf; /* C name: the tensor parameter, the shared base pointer, the register array */
  int bufdt;       /* registers: the array's element type */
  int64_t bufbytes;
  /* shared and registers */
  ag_layout layout;
  const ag_expr *base; /* byte offset in the buffer */
  int swizzled;
  ag_swizzle swz;      /* in bytes, applied to the byte offset */
  /* global */
  int param;           /* 1: the tensor parameter itself (no view, no slice) */
  int rank;
  const ag_expr **ext, **stride; /* per mode; stride in elements of dt */
  int nterms;
  const ag_expr **tidx, **tmul; /* byte offset = sum (size_t)tidx[i] * tmul[i] */
} tile;

typedef enum { V_NONE, V_INT, V_BOOL, V_FLOAT, V_DATA, V_ELEM, V_TILE, V_LAYOUT, V_SWZ,
               V_TUPLE, V_DTYPE, V_INTRIN, V_IOP, V_POISON, V_TMAP } vkind;
typedef struct value value;
struct value {
  vkind k;
  const ag_expr *x; /* V_INT; V_ELEM: byte address in the buffer (shared: swizzled) */
  const char *c;    /* V_BOOL and V_DATA: C text (data: in its storage type) */
  int bconst;       /* V_BOOL: 0/1 when known, -1 otherwise */
  double f;         /* V_FLOAT */
  int dt;           /* V_DATA, V_DTYPE */
  tile *t;          /* V_TILE, V_ELEM */
  ag_layout layout; /* V_LAYOUT */
  ag_swizzle swz;   /* V_SWZ */
  int n;            /* V_TUPLE */
  value *items;
  const char *name; /* V_INTRIN, V_IOP: the intrinsic; V_POISON: why */
  const ag__intrin *in; /* V_INTRIN, V_IOP: its row of the intrinsic table */
  const char *op;   /* V_IOP: "a", "b", "c" */
  int cvar;         /* V_INT / V_DATA: index in lw.cvars, or -1 */
  int tmap;         /* V_TMAP: index in lw.tmaps */
};

typedef struct binding {
  const char *name;
  value *v;
  int depth;
} binding;

typedef struct cvar {
  const char *cname;
  const ag_expr *tree; /* its value (NULL: opaque, it is assigned at run time) */
  int depth;
  int data_dt;         /* DT_NONE for integers */
} cvar;

typedef struct loopv {
  const char *cname;
  int64_t start, stop, step;
  int64_t cur; /* during enumeration */
} loopv;

typedef struct watch {
  const char *name;
  value *outer;
  int read, rebound;
} watch;

typedef struct lw {
  const ag_tile_program *p;
  ag_diags *d;
  const ag_tile_lower_opts *o;
  ag_arena *ar;
  ag_layout_ctx lc;
  ag_str *out;
  int ind, depth, last_line;
  AG_VEC(binding) env;
  AG_VEC(cvar) cvars;
  AG_VEC(loopv) loops;
  AG_VEC(const char *) used; /* C names taken in this kernel */
  AG_VEC(watch) watches;
  int64_t smem_top;
  int tmp;
  const char *hint; /* the DSL name an assignment binds (names buffers) */
  int nested;       /* inside a loop or a run-time if */
  int lane_split;   /* inside an 'if' whose condition may differ between lanes of a warp */
  jmp_buf jb;
  int oom;
  /* the kernel being lowered */
  ag_tile_lkernel *k;
  AG_VEC(ag_tile_lparam) params;
  AG_VEC(ag_tile_lparam) tensors; /* while the parameters are set up */
  AG_VEC(char *) assumes;
  AG_VEC(int) assume_lines;
  AG_VEC(char *) regions;
  const char *rpath[64]; /* the regions open here, outermost first */
  int nrpath;
  int uses_tma;           /* the kernel has tensor maps: buffers on 1024-byte boundaries */
  AG_VEC(ag_tile_ltmap) tmaps; /* named by the pre-scan, filled where tma_map is lowered */
  int ntmap_done;
} lw;

static void fail(lw *L, const ag_tile_node *n, const char *fmt, ...) AG_PRINTF(3, 4)
    __attribute__((noreturn));
static void fail(lw *L, const ag_tile_node *n, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (ag_tile_diag(L->p, L->d, AG_SEV_ERROR, n, "%s", msg))
    L->oom = 1;
  longjmp(L->jb, 1);
}
static void oom(lw *L) __attribute__((noreturn));
static void oom(lw *L) {
  L->oom = 1;
  longjmp(L->jb, 1);
}
static void *zalloc(lw *L, size_t n) {
  void *p = ag_arena_alloc(L->ar, n ? n : 1);
  if (!p)
    oom(L);
  return p;
}
static char *fmt(lw *L, const char *f, ...) AG_PRINTF(2, 3);
static char *fmt(lw *L, const char *f, ...) {
  ag_str s = AG_STR_INIT;
  va_list ap;
  va_start(ap, f);
  ag_str_vprintf(&s, f, ap);
  va_end(ap);
  if (s.oom) {
    ag_str_release(&s);
    oom(L);
  }
  char *r = ag_arena_strdup(L->ar, ag_str_cstr(&s));
  ag_str_release(&s);
  if (!r)
    oom(L);
  return r;
}
static value *newv(lw *L, vkind k) {
  value *v = zalloc(L, sizeof *v);
  v->k = k;
  v->bconst = -1;
  v->cvar = -1;
  return v;
}
static const ag_expr *xc(lw *L, int64_t v) {
  const ag_expr *e = ag_expr_const(&L->lc, v);
  if (!e)
    oom(L);
  return e;
}
static const ag_expr *xs(lw *L, const char *name) {
  const ag_expr *e = ag_expr_sym(&L->lc, name);
  if (!e)
    oom(L);
  return e;
}
static const ag_expr *xb(lw *L, ag_expr_op op, const ag_expr *a, const ag_expr *b) {
  const ag_expr *e = ag_expr_bin(&L->lc, op, a, b);
  if (!e)
    oom(L);
  return e;
}
static value *vint(lw *L, const ag_expr *x) {
  value *v = newv(L, V_INT);
  v->x = x;
  return v;
}
static char *xtext(lw *L, const ag_expr *e) {
  ag_str s = AG_STR_INIT;
  ag_expr_print(e, &s);
  if (s.oom) {
    ag_str_release(&s);
    oom(L);
  }
  char *r = ag_arena_strdup(L->ar, ag_str_cstr(&s));
  ag_str_release(&s);
  if (!r)
    oom(L);
  return r;
}

/* ---------------------------------------------------------------- output */
static void put_line(lw *L, const ag_tile_node *at) {
  if (at && at->line != L->last_line) {
    ag_str_printf(L->out, "#line %d \"%s\"\n", at->line, L->p->file ? L->p->file : "tile");
    L->last_line = at->line;
  }
}
static void emit(lw *L, const ag_tile_node *at, const char *f, ...) AG_PRINTF(3, 4);
static void emit(lw *L, const ag_tile_node *at, const char *f, ...) {
  put_line(L, at);
  for (int i = 0; i < L->ind; i++)
    ag_str_puts(L->out, "  ");
  va_list ap;
  va_start(ap, f);
  ag_str_vprintf(L->out, f, ap);
  va_end(ap);
  ag_str_putc(L->out, '\n');
  if (L->out->oom)
    oom(L);
}

/* ------------------------------------------------------------ C names */
static int ident_char(char ch) { return ch == '_' || isalnum((unsigned char)ch); }
/* 1 when n is a builtin's name or a C function a builtin's CUDA C calls
 * (tile_builtin.h): a C variable of that name would hide the function. */
static int builtin_ident(const char *n) {
  int cnt;
  const ag__builtin *b = ag__builtin_table(&cnt);
  size_t len = strlen(n);
  for (int i = 0; i < cnt; i++) {
    if (!strcmp(b[i].name, n))
      return 1;
    const char *t[3] = {b[i].cuda_f32, b[i].cuda_f64, b[i].cuda_int};
    for (int j = 0; j < 3; j++)
      for (const char *p = t[j] ? strstr(t[j], n) : NULL; p; p = strstr(p + 1, n))
        if ((p == t[j] || !ident_char(p[-1])) && !ident_char(p[len]))
          return 1;
  }
  return 0;
}
static int reserved(const char *n) {
  static const char *const kw[] = {
      "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
      "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
      "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union",
      "unsigned", "void", "volatile", "while", "bool", "true", "false", "class", "new",
      "delete", "this", "template", "typename", "namespace", "operator", "private", "public",
      "protected", "virtual", "friend", "using", "try", "catch", "throw", "asm", "alignas",
      "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "max", "min", "exp2",
      "sqrt", "abs", "main", "NULL", NULL};
  for (int i = 0; kw[i]; i++)
    if (!strcmp(kw[i], n))
      return 1;
  return builtin_ident(n) || !strncmp(n, "ag_", 3) || !strncmp(n, "AG_", 3) ||
         !strncmp(n, "__", 2) || !strncmp(n, "ARGUS", 5);
}
static int taken(lw *L, const char *n) {
  for (size_t i = 0; i < L->used.n; i++)
    if (!strcmp(L->used.v[i], n))
      return 1;
  return 0;
}
static const char *cname(lw *L, const char *dsl) {
  const char *base = reserved(dsl) ? fmt(L, "%s_", dsl) : dsl;
  const char *n = base;
  for (int i = 2; taken(L, n); i++)
    n = fmt(L, "%s_%d", base, i);
  if (ag_vec_push(&L->used, n))
    oom(L);
  return n;
}
static const char *tmpname(lw *L, const char *what) {
  return cname(L, fmt(L, "ag_%s%d", what, ++L->tmp));
}

/* ----------------------------------------------------------- environment */
static value *lookup(lw *L, const char *name) {
  for (size_t i = L->env.n; i-- > 0;)
    if (!strcmp(L->env.v[i].name, name)) {
      value *v = L->env.v[i].v;
      for (size_t w = 0; w < L->watches.n; w++)
        if (L->watches.v[w].outer == v && !strcmp(L->watches.v[w].name, name))
          L->watches.v[w].read = 1;
      return v;
    }
  return NULL;
}
static value *peek(lw *L, const char *name) {
  for (size_t i = L->env.n; i-- > 0;)
    if (!strcmp(L->env.v[i].name, name))
      return L->env.v[i].v;
  return NULL;
}
static void bind(lw *L, const char *name, value *v) {
  binding b = {name, v, L->depth};
  for (size_t w = 0; w < L->watches.n; w++)
    if (!strcmp(L->watches.v[w].name, name))
      L->watches.v[w].rebound = 1;
  if (ag_vec_push(&L->env, b))
    oom(L);
}
/* Names bound since env length `mark` become unusable (their value after
 * the block is not known to the lowering). */
static void poison_since(lw *L, size_t mark, const char *why) {
  size_t n = L->env.n;
  const char **names = zalloc(L, (n - mark + 1) * sizeof *names);
  int k = 0;
  for (size_t i = mark; i < n; i++)
    names[k++] = L->env.v[i].name;
  L->env.n = mark;
  for (int i = 0; i < k; i++) {
    int dup = 0;
    for (int j = 0; j < i; j++)
      dup |= !strcmp(names[i], names[j]);
    if (dup)
      continue;
    value *v = newv(L, V_POISON);
    v->name = fmt(L, "'%s' %s", names[i], why);
    binding b = {names[i], v, L->depth};
    if (ag_vec_push(&L->env, b))
      oom(L);
  }
}
static int new_cvar(lw *L, const char *cn, const ag_expr *tree, int data_dt) {
  cvar c = {cn, tree, L->depth, data_dt};
  if (ag_vec_push(&L->cvars, c))
    oom(L);
  return (int)L->cvars.n - 1;
}
static int find_cvar(lw *L, const char *cn) {
  for (size_t i = 0; i < L->cvars.n; i++)
    if (!strcmp(L->cvars.v[i].cname, cn))
      return (int)i;
  return -1;
}
static loopv *find_loop(lw *L, const char *cn) {
  for (size_t i = 0; i < L->loops.n; i++)
    if (!strcmp(L->loops.v[i].cname, cn))
      return &L->loops.v[i];
  return NULL;
}

/* ---------------------------------------------- compile-time evaluation */
/* Collects the loop variables e depends on; 0 when e also depends on
 * anything known only at run time. */
static int loop_syms(lw *L, const ag_expr *e, const char **out, int *n, int max) {
  if (e->op == AG_X_CONST)
    return 1;
  if (e->op == AG_X_SYM) {
    if (find_loop(L, e->name)) {
      for (int i = 0; i < *n; i++)
        if (!strcmp(out[i], e->name))
          return 1;
      if (*n >= max)
        return 0;
      out[(*n)++] = e->name;
      return 1;
    }
    int c = find_cvar(L, e->name);
    if (c >= 0 && L->cvars.v[c].tree)
      return loop_syms(L, L->cvars.v[c].tree, out, n, max);
    return 0;
  }
  return loop_syms(L, e->a, out, n, max) && loop_syms(L, e->b, out, n, max);
}
/* 1 when e depends on an enclosing loop's variable (through C variables) */
static int mentions_loop(lw *L, const ag_expr *e, int depth) {
  if (!e || e->op == AG_X_CONST || depth > 64)
    return depth > 64;
  if (e->op == AG_X_SYM) {
    if (find_loop(L, e->name))
      return 1;
    int c = find_cvar(L, e->name);
    return c >= 0 && L->cvars.v[c].tree && mentions_loop(L, L->cvars.v[c].tree, depth + 1);
  }
  return mentions_loop(L, e->a, depth + 1) || mentions_loop(L, e->b, depth + 1);
}
static int env_cb(void *ud, const char *name, int64_t *v) {
  lw *L = ud;
  loopv *lp = find_loop(L, name);
  if (lp) {
    *v = lp->cur;
    return 0;
  }
  int c = find_cvar(L, name);
  if (c >= 0 && L->cvars.v[c].tree)
    return ag_expr_eval(L->cvars.v[c].tree, env_cb, ud, v);
  return AG_ENOTFOUND;
}
/* Calls fn for every combination of the loops' values; stops at the first
 * nonzero return. -1: too many combinations. */
static int enumerate(lw *L, const char **syms, int n, int i, int (*fn)(lw *, void *), void *ud,
                     int64_t *budget) {
  if (i == n) {
    if (--*budget < 0)
      return -1;
    return fn(L, ud);
  }
  loopv *lp = find_loop(L, syms[i]);
  for (int64_t v = lp->start; lp->step > 0 ? v < lp->stop : v > lp->stop; v += lp->step) {
    lp->cur = v;
    int rc = enumerate(L, syms, n, i + 1, fn, ud, budget);
    if (rc)
      return rc;
  }
  return 0;
}
typedef struct cst {
  const ag_expr *e;
  int64_t v;
  int have, bad;
} cst;
static int cst_fn(lw *L, void *ud) {
  cst *c = ud;
  int64_t v;
  if (ag_expr_eval(c->e, env_cb, L, &v)) {
    c->bad = 1;
    return 1;
  }
  if (c->have && v != c->v) {
    c->bad = 1;
    return 1;
  }
  c->v = v;
  c->have = 1;
  return 0;
}
/* 1 and *v when e has one value in every iteration of the enclosing loops. */
static int const_of(lw *L, const ag_expr *e, int64_t *v) {
  if (ag_expr_is_const(e, v))
    return 1;
  const char *syms[16];
  int n = 0;
  if (!loop_syms(L, e, syms, &n, 16))
    return 0;
  cst c = {e, 0, 0, 0};
  int64_t budget = 1 << 16;
  if (enumerate(L, syms, n, 0, cst_fn, &c, &budget) || c.bad)
    return 0;
  if (!c.have) {
    *v = 0; /* no iteration runs: any value */
    return 1;
  }
  *v = c.v;
  return 1;
}
/* 1 when e depends on constants and loop variables only. */
static int is_static(lw *L, const ag_expr *e) {
  const char *syms[16];
  int n = 0;
  return loop_syms(L, e, syms, &n, 16);
}

/* 1 when e depends on nothing but constants, loop variables and C variables
 * assigned at run time (a counter a loop carries, k = k + 1): a register
 * index the checker found constant in every unrolled instance, which C then
 * indexes at run time (the array may live in local memory: slower, never
 * wrong). The thread and block index and the sizes are not among them. */
static int runtime_index(lw *L, const ag_expr *e) {
  if (e->op == AG_X_CONST)
    return 1;
  if (e->op == AG_X_SYM) {
    if (find_loop(L, e->name))
      return 1;
    int c = find_cvar(L, e->name);
    return c >= 0 && (!L->cvars.v[c].tree || runtime_index(L, L->cvars.v[c].tree));
  }
  return runtime_index(L, e->a) && (!e->b || runtime_index(L, e->b));
}

/* e / k when every term of e is visibly a multiple of k; NULL otherwise. */
static const ag_expr *xdiv_exact(lw *L, const ag_expr *e, int64_t k) {
  int64_t v;
  if (k == 1)
    return e;
  if (ag_expr_is_const(e, &v))
    return v % k == 0 ? xc(L, v / k) : NULL;
  if (e->op == AG_X_ADD || e->op == AG_X_SUB) {
    const ag_expr *a = xdiv_exact(L, e->a, k), *b = a ? xdiv_exact(L, e->b, k) : NULL;
    return b ? xb(L, e->op, a, b) : NULL;
  }
  if (e->op == AG_X_MUL) {
    const ag_expr *a = xdiv_exact(L, e->a, k);
    if (a)
      return xb(L, AG_X_MUL, a, e->b);
    const ag_expr *b = xdiv_exact(L, e->b, k);
    return b ? xb(L, AG_X_MUL, e->a, b) : NULL;
  }
  return NULL;
}

/* ---------------------------------------------------------- conversions */
static const char *kind_name(vkind k) {
  static const char *const n[] = {"nothing", "an integer", "a condition", "a float constant",
                                  "a data value", "a tile element", "a tile", "a layout",
                                  "a swizzle", "a tuple", "a data type", "an intrinsic",
                                  "an operand layout", "an unusable name", "a tensor map"};
  return n[k];
}
static const ag_expr *as_int(lw *L, const ag_tile_node *n, value *v, const char *what) {
  if (v->k == V_INT)
    return v->x;
  if (v->k == V_BOOL && v->bconst >= 0)
    return xc(L, v->bconst);
  fail(L, n, "%s must be an integer, not %s", what, kind_name(v->k));
  return NULL;
}
static int64_t as_const(lw *L, const ag_tile_node *n, value *v, const char *what) {
  int64_t c;
  if (!const_of(L, as_int(L, n, v, what), &c))
    fail(L, n, "%s must be a compile-time constant", what);
  return c;
}
static char *flit(lw *L, double f, int dt) {
  char b[64];
  if (dt == DT_F64) {
    snprintf(b, sizeof b, "%.17g", f);
  } else {
    snprintf(b, sizeof b, "%.9g", f);
  }
  if (isnan(f))
    return fmt(L, "%s(0x7fc00000)", dt == DT_F64 ? "(double)__int_as_float" : "__int_as_float");
  if (isinf(f))
    return fmt(L, "%s%s(0x7f800000)", f < 0 ? "-" : "",
               dt == DT_F64 ? "(double)__int_as_float" : "__int_as_float");
  if (!strpbrk(b, ".eE"))
    strcat(b, ".0");
  return fmt(L, "%s%s", b, dt == DT_F64 ? "" : "f");
}
/* C text of v as data of type dt (storage form). */
static const char *elem_load(lw *L, const tile *t, const ag_expr *addr);
static const char *store_of(lw *L, int dt, const char *c);
static const char *lit_as(lw *L, const ag_tile_node *n, value *v, int dt) {
  double f = v->k == V_FLOAT ? v->f : 0;
  int64_t iv = 0;
  if (v->k == V_INT) {
    if (!ag_expr_is_const(v->x, &iv)) {
      /* a run-time integer (unsigned 32-bit) converted to the type, as C converts */
      if (ag__dt_size(dt) > 8)
        fail(L, n, "an integer cannot be %s data (view the tile with a scalar type)",
             ag__dt_name(dt));
      const char *x = xtext(L, v->x);
      if (!ag__dt_is_float(dt))
        return fmt(L, "(%s)(%s)", ag__dt_ctype(dt), x);
      return store_of(L, dt, fmt(L, "(%s)(%s)", dt == DT_F64 ? "double" : "float", x));
    }
    f = (double)iv;
  } else if (v->k == V_BOOL && v->bconst >= 0) {
    iv = v->bconst;
    f = (double)iv;
  } else if (v->k != V_FLOAT) {
    fail(L, n, "expected data, not %s", kind_name(v->k));
  }
  if (ag__dt_size(dt) > 8)
    fail(L, n, "a constant cannot be %s data (view the tile with a scalar type)", ag__dt_name(dt));
  if (dt == DT_BF16)
    return fmt(L, "ag_f32_bf16(%s)", flit(L, f, DT_F32));
  if (dt == DT_F16)
    return fmt(L, "ag_f32_f16(%s)", flit(L, f, DT_F32));
  if (ag__dt_is_float(dt))
    return flit(L, f, dt);
  if (v->k == V_FLOAT && f != floor(f))
    fail(L, n, "the constant %g is not an integer, so it cannot be %s data", f, ag__dt_name(dt));
  return fmt(L, "(%s)%lldll", ag__dt_ctype(dt), v->k == V_FLOAT ? (long long)f : (long long)iv);
}
static int is_dataish(value *v) { return v->k == V_DATA || v->k == V_ELEM; }
static int data_dt(value *v) {
  return v->k == V_DATA ? v->dt : v->k == V_ELEM ? v->t->dt : DT_NONE;
}
static const char *data_text(lw *L, const ag_tile_node *n, value *v, int dt) {
  if (v->k == V_DATA)
    return v->c;
  if (v->k == V_ELEM)
    return elem_load(L, v->t, v->x);
  return lit_as(L, n, v, dt);
}
static const char *compute_of(lw *L, int dt, const char *c) {
  if (dt == DT_BF16)
    return fmt(L, "ag_bf16_f32(%s)", c);
  if (dt == DT_F16)
    return fmt(L, "ag_f16_f32(%s)", c);
  return c;
}
static const char *store_of(lw *L, int dt, const char *c) {
  if (dt == DT_BF16)
    return fmt(L, "ag_f32_bf16(%s)", c);
  if (dt == DT_F16)
    return fmt(L, "ag_f32_f16(%s)", c);
  if (!ag__dt_is_float(dt) && ag__dt_size(dt) < 4)
    return fmt(L, "(%s)(%s)", ag__dt_ctype(dt), c);
  return c;
}
static value *vdata(lw *L, int dt, const char *c) {
  value *v = newv(L, V_DATA);
  v->dt = dt;
  v->c = c;
  return v;
}

/* ------------------------------------------------------------ addressing */
static char *gl_offset(lw *L, const tile *t) {
  if (t->nterms == 0)
    return "0";
  ag_str s = AG_STR_INIT;
  for (int i = 0; i < t->nterms; i++) {
    int64_t m, iv;
    if (ag_expr_is_const(t->tidx[i], &iv) && iv == 0)
      continue;
    const char *ix = xtext(L, t->tidx[i]);
    if (s.len)
      ag_str_puts(&s, " + ");
    if (ag_expr_is_const(t->tmul[i], &m) && m == 1)
      ag_str_printf(&s, "(ag_size)(%s)", ix);
    else if (ag_expr_is_const(t->tmul[i], &m))
      ag_str_printf(&s, "(ag_size)(%s) * %lld", ix, (long long)m);
    else
      ag_str_printf(&s, "(ag_size)(%s) * (ag_size)(%s)", ix, xtext(L, t->tmul[i]));
  }
  if (!s.len)
    ag_str_putc(&s, '0');
  if (s.oom)
    oom(L);
  char *r = fmt(L, "%s", ag_str_cstr(&s));
  ag_str_release(&s);
  return r;
}
/* A register element as a C lvalue/rvalue: "arr[i]" when the array has the
 * element's type at an aligned offset, else NULL. */
static const char *reg_direct(lw *L, const tile *t, const ag_expr *addr, int dt) {
  if (t->bufdt != dt && !(ag__dt_size(t->bufdt) == ag__dt_size(dt) && !ag__dt_is_float(dt) &&
                          !ag__dt_is_float(t->bufdt) && ag__dt_size(dt) >= 4))
    return NULL;
  const ag_expr *ix = xdiv_exact(L, addr, ag__dt_size(dt));
  if (!ix)
    return NULL;
  return fmt(L, "%s[%s]", t->buf, xtext(L, ix));
}
static const char *elem_load(lw *L, const tile *t, const ag_expr *addr) {
  const char *ct = ag__dt_ctype(t->dt);
  switch (t->sp) {
  case SP_G:
    return fmt(L, "AG_GL(%s, %s, %s)", ct, t->buf, gl_offset(L, t));
  case SP_S:
    return fmt(L, "AG_SH(%s, %s, %s)", ct, t->buf, xtext(L, addr));
  default: {
    const char *d = reg_direct(L, t, addr, t->dt);
    return d ? d : fmt(L, "ag_ld<%s>(%s, %s)", ct, t->buf, xtext(L, addr));
  }
  }
}
static void elem_store(lw *L, const ag_tile_node *at, const tile *t, const ag_expr *addr,
                       const char *val) {
  const char *ct = ag__dt_ctype(t->dt);
  switch (t->sp) {
  case SP_G:
    emit(L, at, "AG_GL(%s, %s, %s) = %s;", ct, t->buf, gl_offset(L, t), val);
    return;
  case SP_S:
    emit(L, at, "AG_SH(%s, %s, %s) = %s;", ct, t->buf, xtext(L, addr), val);
    return;
  default: {
    const char *d = reg_direct(L, t, addr, t->dt);
    if (d)
      emit(L, at, "%s = %s;", d, val);
    else
      emit(L, at, "ag_st<%s>(%s, %s, %s);", ct, t->buf, xtext(L, addr), val);
  }
  }
}
static const ag_expr *swizzled(lw *L, const tile *t, const ag_expr *byteoff) {
  if (!t->swizzled)
    return byteoff;
  const ag_expr *r = ag_swizzle_apply_x(&L->lc, t->swz, byteoff);
  if (!r)
    oom(L);
  return r;
}

/* ------------------------------------------------------------- indexing */
static value *ev(lw *L, const ag_tile_node *n);

static const ag_expr *mode_offset(lw *L, const ag_tile_node *n, const ag_layout *mode,
                                  const ag_expr *idx) {
  ag_xtuple leaf = {1, idx, 0, NULL};
  const ag_expr *off = NULL;
  if (ag_layout_eval_coord_x(&L->lc, mode, &leaf, &off) || !off) {
    if (ag_layout_eval_index_x(&L->lc, mode, idx, &off) || !off)
      fail(L, n, "cannot index the tile: %s", ag_str_cstr(&L->lc.err));
  }
  return off;
}

static value *index_local(lw *L, const ag_tile_node *n, tile *t) {
  int rank = ag_layout_rank(&t->layout);
  if (n->list.n > rank)
    fail(L, n, "%d indices for a tile of rank %d", n->list.n, rank);
  const ag_expr *off = xc(L, 0);
  ag_tuple **ks = zalloc(L, (size_t)rank * sizeof *ks), **kd = zalloc(L, (size_t)rank * sizeof *kd);
  int kept = 0;
  for (int i = 0; i < rank; i++) {
    ag_layout mode;
    if (ag_layout_mode(&L->lc, &t->layout, i, &mode))
      fail(L, n, "cannot take mode %d of the tile: %s", i, ag_str_cstr(&L->lc.err));
    const ag_tile_node *ix = i < n->list.n ? n->list.v[i] : NULL;
    if (!ix || ix->kind == AG_TN_SLICE) {
      if (ix && (ix->a || ix->b)) {
        if (!mode.shape->is_leaf)
          fail(L, ix, "a range 'a:b' needs a mode with a single extent");
        const ag_expr *lo = ix->a ? as_int(L, ix->a, ev(L, ix->a), "a range bound") : xc(L, 0);
        const ag_expr *hi = ix->b ? as_int(L, ix->b, ev(L, ix->b), "a range bound")
                                  : xc(L, mode.shape->value);
        int64_t ext;
        if (!const_of(L, xb(L, AG_X_SUB, hi, lo), &ext))
          fail(L, ix,
               "not lowered: the extent of this range changes from one loop iteration to "
               "the next (or is not a compile-time constant)");
        if (!is_static(L, lo))
          fail(L, ix, "a range bound must be a compile-time constant");
        off = xb(L, AG_X_ADD, off, xb(L, AG_X_MUL, lo, xc(L, mode.stride->value)));
        ks[kept] = ag_tuple_leaf(&L->lc, ext);
        kd[kept] = ag_tuple_leaf(&L->lc, mode.stride->value);
        if (!ks[kept] || !kd[kept])
          oom(L);
      } else {
        ks[kept] = mode.shape;
        kd[kept] = mode.stride;
      }
      kept++;
      continue;
    }
    const ag_expr *idx = as_int(L, ix, ev(L, ix), "a tile index");
    off = xb(L, AG_X_ADD, off, mode_offset(L, ix, &mode, idx));
  }
  const ag_expr *byteoff =
      xb(L, AG_X_ADD, t->base, xb(L, AG_X_MUL, off, xc(L, ag__dt_size(t->dt))));
  if (t->sp == SP_R && !is_static(L, byteoff) && !runtime_index(L, byteoff))
    fail(L, n,
         "a register tile index must be a compile-time constant (registers are not "
         "addressable by the thread index)");
  if (kept == 0) {
    value *v = newv(L, V_ELEM);
    v->t = t;
    v->x = t->sp == SP_S ? swizzled(L, t, byteoff) : byteoff;
    return v;
  }
  tile *s = zalloc(L, sizeof *s);
  *s = *t;
  s->base = byteoff;
  ag_tuple *sh = ag_tuple_make(&L->lc, kept, ks), *st = ag_tuple_make(&L->lc, kept, kd);
  if (!sh || !st || ag_layout_make(&L->lc, sh, st, &s->layout))
    oom(L);
  value *v = newv(L, V_TILE);
  v->t = s;
  return v;
}

static value *index_global(lw *L, const ag_tile_node *n, tile *t) {
  if (n->list.n > t->rank)
    fail(L, n, "%d indices for '%s' of rank %d", n->list.n, t->buf, t->rank);
  tile *s = zalloc(L, sizeof *s);
  *s = *t;
  s->param = 0;
  s->ext = zalloc(L, (size_t)t->rank * sizeof *s->ext);
  s->stride = zalloc(L, (size_t)t->rank * sizeof *s->stride);
  s->tidx = zalloc(L, (size_t)(t->nterms + t->rank) * sizeof *s->tidx);
  s->tmul = zalloc(L, (size_t)(t->nterms + t->rank) * sizeof *s->tmul);
  if (t->nterms) { /* a tile of no terms has no arrays to copy (memcpy from NULL is undefined) */
    memcpy(s->tidx, t->tidx, (size_t)t->nterms * sizeof *s->tidx);
    memcpy(s->tmul, t->tmul, (size_t)t->nterms * sizeof *s->tmul);
  }
  int kept = 0;
  const ag_expr *esz = xc(L, ag__dt_size(t->dt));
  for (int i = 0; i < t->rank; i++) {
    const ag_tile_node *ix = i < n->list.n ? n->list.v[i] : NULL;
    if (!ix || ix->kind == AG_TN_SLICE) {
      const ag_expr *ext = t->ext[i];
      if (ix && (ix->a || ix->b)) {
        const ag_expr *lo = ix->a ? as_int(L, ix->a, ev(L, ix->a), "a range bound") : xc(L, 0);
        const ag_expr *hi = ix->b ? as_int(L, ix->b, ev(L, ix->b), "a range bound") : ext;
        ext = xb(L, AG_X_SUB, hi, lo);
        s->tidx[s->nterms] = lo;
        s->tmul[s->nterms++] = xb(L, AG_X_MUL, t->stride[i], esz);
      }
      s->ext[kept] = ext;
      s->stride[kept++] = t->stride[i];
      continue;
    }
    const ag_expr *idx = as_int(L, ix, ev(L, ix), "a tensor index");
    s->tidx[s->nterms] = idx;
    s->tmul[s->nterms++] = xb(L, AG_X_MUL, t->stride[i], esz);
  }
  s->rank = kept;
  value *v = newv(L, kept ? V_TILE : V_ELEM);
  v->t = s;
  return v;
}

/* ---------------------------------------------------------------- tuples */
static ag_tuple *to_tuple(lw *L, const ag_tile_node *n, value *v, const char *what) {
  if (v->k == V_TUPLE) {
    ag_tuple **kids = zalloc(L, (size_t)(v->n ? v->n : 1) * sizeof *kids);
    for (int i = 0; i < v->n; i++)
      kids[i] = to_tuple(L, n, &v->items[i], what);
    ag_tuple *t = ag_tuple_make(&L->lc, v->n, kids);
    if (!t)
      oom(L);
    return t;
  }
  ag_tuple *t = ag_tuple_leaf(&L->lc, as_const(L, n, v, what));
  if (!t)
    oom(L);
  return t;
}
static ag_tuple *rowmajor_stride(lw *L, const ag_tuple *shape, int64_t *running) {
  if (shape->is_leaf) {
    ag_tuple *t = ag_tuple_leaf(&L->lc, *running);
    if (!t)
      oom(L);
    *running *= shape->value;
    return t;
  }
  ag_tuple **kids = zalloc(L, (size_t)(shape->n ? shape->n : 1) * sizeof *kids);
  for (int i = shape->n - 1; i >= 0; i--)
    kids[i] = rowmajor_stride(L, shape->child[i], running);
  ag_tuple *t = ag_tuple_make(&L->lc, shape->n, kids);
  if (!t)
    oom(L);
  return t;
}
static ag_layout layout_of(lw *L, const ag_tile_node *n, value *v) {
  if (v->k == V_LAYOUT)
    return v->layout;
  ag_tuple *shape = to_tuple(L, n, v, "a tile shape");
  if (shape->is_leaf) {
    ag_tuple *k[1] = {shape};
    shape = ag_tuple_make(&L->lc, 1, k);
    if (!shape)
      oom(L);
  }
  int64_t run = 1;
  ag_layout l;
  if (ag_layout_make(&L->lc, shape, rowmajor_stride(L, shape, &run), &l))
    fail(L, n, "bad layout: %s", ag_str_cstr(&L->lc.err));
  return l;
}

/* ------------------------------------------------------------- builtins */
static const ag_tile_node *arg(lw *L, const ag_tile_node *call, int i, const char *name,
                               int required) {
  int pos = 0;
  for (int k = 0; k < call->list.n; k++) {
    const ag_tile_node *a = call->list.v[k];
    if (a->kind == AG_TN_KWARG) {
      if (name && !strcmp(a->name, name))
        return a->a;
    } else if (pos++ == i) {
      return a;
    }
  }
  if (required)
    fail(L, call, "missing argument %d ('%s')", i + 1, name ? name : "?");
  return NULL;
}
static int as_dtype(lw *L, const ag_tile_node *n) {
  value *v = ev(L, n);
  if (v->k != V_DTYPE)
    fail(L, n, "expected a data type (bf16, f32, u128, ...), not %s", kind_name(v->k));
  return v->dt;
}
static int log2i(int64_t v) {
  int k = 0;
  while (((int64_t)1 << k) < v)
    k++;
  return k;
}

static value *make_shared(lw *L, const ag_tile_node *n) {
  if (L->nested)
    fail(L, n, "not lowered: make_shared inside a loop or a run-time 'if'; allocate the "
               "shared tile at the kernel's top level");
  value *sv = ev(L, arg(L, n, 0, "shape", 1));
  int dt = as_dtype(L, arg(L, n, 1, "dtype", 1));
  const ag_tile_node *sn = arg(L, n, 2, "swizzle", 0);
  tile *t = zalloc(L, sizeof *t);
  t->sp = SP_S;
  t->dt = dt;
  t->layout = layout_of(L, n, sv);
  t->base = xc(L, 0);
  if (sn) {
    value *s = ev(L, sn);
    if (s->k != V_SWZ)
      fail(L, sn, "expected swizzle(B, M, S), not %s", kind_name(s->k));
    t->swizzled = 1;
    t->swz = s->swz;
    t->swz.m += log2i(ag__dt_size(dt));
  }
  int64_t bytes = ag_layout_cosize(&t->layout) * ag__dt_size(dt);
  L->smem_top = (L->smem_top + 127) / 128 * 128;
  if (L->uses_tma) /* TMA swizzles absolute addresses: the checker places every buffer so */
    L->smem_top = (L->smem_top + AG__TMA_SMEM_ALIGN - 1) / AG__TMA_SMEM_ALIGN * AG__TMA_SMEM_ALIGN;
  if (t->swizzled) /* wgmma swizzles absolute addresses: start on the pattern's period */
    L->smem_top = (L->smem_top + ag__wgmma_period(1, t->swz) - 1) / ag__wgmma_period(1, t->swz) *
                  ag__wgmma_period(1, t->swz);
  t->buf = cname(L, L->hint ? L->hint : "ag_smem_tile");
  emit(L, n, "unsigned char *const %s = ag_smem + %lld; /* %lld bytes */", t->buf,
       (long long)L->smem_top, (long long)bytes);
  L->smem_top += bytes;
  value *v = newv(L, V_TILE);
  v->t = t;
  return v;
}
static value *make_local(lw *L, const ag_tile_node *n) {
  value *sv = ev(L, arg(L, n, 0, "shape", 1));
  int dt = as_dtype(L, arg(L, n, 1, "dtype", 1));
  tile *t = zalloc(L, sizeof *t);
  t->sp = SP_R;
  t->dt = t->bufdt = dt;
  t->layout = layout_of(L, n, sv);
  t->base = xc(L, 0);
  int64_t cnt = ag_layout_cosize(&t->layout);
  t->bufbytes = cnt * ag__dt_size(dt);
  t->buf = cname(L, L->hint ? L->hint : "ag_regs");
  emit(L, n, "%s %s[%lld];", ag__dt_ctype(dt), t->buf, (long long)cnt);
  value *v = newv(L, V_TILE);
  v->t = t;
  return v;
}
static value *view(lw *L, const ag_tile_node *n, tile *t) {
  const ag_tile_node *shn = arg(L, n, 0, "shape", 1);
  int dt = as_dtype(L, arg(L, n, 1, "dtype", 1));
  const ag_tile_node *sn = arg(L, n, 2, "swizzle", 0);
  value *shv = ev(L, shn);
  tile *s = zalloc(L, sizeof *s);
  *s = *t;
  s->dt = dt;
  if (t->sp == SP_G) {
    if (!t->param)
      fail(L, n, "view() applies to a tensor parameter itself; view the tensor first, then "
                 "index or slice the view");
    if (sn)
      fail(L, sn, "global memory is not swizzled");
    int m = shv->k == V_TUPLE ? shv->n : 1;
    s->rank = m;
    s->ext = zalloc(L, (size_t)m * sizeof *s->ext);
    s->stride = zalloc(L, (size_t)m * sizeof *s->stride);
    for (int i = 0; i < m; i++) {
      value *iv = shv->k == V_TUPLE ? &shv->items[i] : shv;
      if (iv->k == V_TUPLE || iv->k == V_LAYOUT)
        fail(L, n, "a global view's shape is a flat tuple of extents");
      s->ext[i] = as_int(L, n, iv, "a view extent");
    }
    const ag_expr *st = xc(L, 1);
    for (int i = m - 1; i >= 0; i--) {
      s->stride[i] = st;
      st = xb(L, AG_X_MUL, st, s->ext[i]);
    }
    s->param = 0;
    value *v = newv(L, V_TILE);
    v->t = s;
    return v;
  }
  s->layout = layout_of(L, n, shv);
  if (sn) {
    value *sw = ev(L, sn);
    if (sw->k != V_SWZ)
      fail(L, sn, "expected swizzle(B, M, S), not %s", kind_name(sw->k));
    if (t->sp != SP_S)
      fail(L, n, "only shared tiles are swizzled");
    s->swizzled = 1;
    s->swz = sw->swz;
    s->swz.m += log2i(ag__dt_size(dt));
  }
  value *v = newv(L, V_TILE);
  v->t = s;
  return v;
}

/* A register operand: tile, its base byte offset, its size. */
static const tile *reg_range(lw *L, const ag_tile_node *n, value *v, const char *what,
                             const ag_expr **base, int64_t *size) {
  if (v->k == V_ELEM && v->t->sp == SP_R) {
    *base = v->x;
    *size = ag__dt_size(v->t->dt);
    return v->t;
  }
  if (v->k != V_TILE || v->t->sp != SP_R)
    fail(L, n, "%s must be a register tile (make_local), not %s", what, kind_name(v->k));
  *base = v->t->base;
  *size = ag_layout_size(&v->t->layout) * ag__dt_size(v->t->dt);
  return v->t;
}
/* The C lvalue for word j (4 bytes at base + 4j) of a register operand,
 * through a temporary when the array holds another type. */
static const char *word_rval(lw *L, const tile *t, const ag_expr *base, int j, const char *ty,
                             int dt) {
  const ag_expr *a = xb(L, AG_X_ADD, base, xc(L, 4 * j));
  const char *d = reg_direct(L, t, a, dt);
  return d ? d : fmt(L, "ag_ld<%s>(%s, %s)", ty, t->buf, xtext(L, a));
}

/* The C lvalues of the nw 4-byte words at base of a register operand that
 * an instruction writes (as type dt, C type ty): the array's elements when
 * it holds dt at those offsets (returns 0), else temporaries declared here,
 * which store_words copies into the array after the instruction (returns 1:
 * an f32 view of a u32 accumulator, an ldmatrix into a bf16 tile). */
static int reg_words(lw *L, const tile *t, const ag_expr *base, int nw, int dt, const char *ty,
                     const char **out) {
  int direct = 1;
  for (int j = 0; j < nw && direct; j++)
    direct = (out[j] = reg_direct(L, t, xb(L, AG_X_ADD, base, xc(L, 4 * j)), dt)) != NULL;
  if (direct)
    return 0;
  for (int j = 0; j < nw; j++) {
    out[j] = tmpname(L, "w");
    emit(L, NULL, "%s %s;", ty, out[j]);
  }
  return 1;
}
static void store_words(lw *L, const ag_tile_node *at, const tile *t, const ag_expr *base,
                        int nw, const char *ty, const char **w) {
  for (int j = 0; j < nw; j++)
    emit(L, at, "ag_st<%s>(%s, %s, %s);", ty, t->buf,
         xtext(L, xb(L, AG_X_ADD, base, xc(L, 4 * j))), w[j]);
}

static void elements(lw *L, const ag_tile_node *n, const tile *t, int64_t **offs, int64_t *cnt) {
  int64_t sz = ag_layout_size(&t->layout);
  *offs = zalloc(L, (size_t)sz * sizeof **offs);
  for (int64_t i = 0; i < sz; i++)
    if (ag_layout_eval_index(&t->layout, i, &(*offs)[i]))
      fail(L, n, "cannot enumerate the tile's elements");
  *cnt = sz;
}
static const ag_expr *elem_addr(lw *L, const tile *t, int64_t off) {
  return xb(L, AG_X_ADD, t->base, xc(L, off * ag__dt_size(t->dt)));
}

static void do_fill(lw *L, const ag_tile_node *at, value *tv, value *val,
                    const ag_tile_node *vn) {
  if (tv->k != V_TILE || tv->t->sp != SP_R)
    fail(L, at, "fill() needs a register tile (make_local), not %s",
         tv->k == V_TILE ? "a shared or global tile" : kind_name(tv->k));
  const tile *t = tv->t;
  const char *c;
  if (is_dataish(val)) {
    if (data_dt(val) != t->dt)
      fail(L, vn, "fill value is %s, the tile holds %s; convert with cvt()",
           ag__dt_name(data_dt(val)), ag__dt_name(t->dt));
    c = data_text(L, vn, val, t->dt);
  } else {
    c = lit_as(L, vn, val, t->dt);
  }
  int64_t *offs, cnt, b;
  elements(L, at, t, &offs, &cnt);
  int plain = t->bufdt == t->dt && ag_expr_is_const(t->base, &b) && b == 0 &&
              cnt * ag__dt_size(t->dt) == t->bufbytes;
  unsigned char *seen = plain ? zalloc(L, (size_t)cnt) : NULL;
  for (int64_t i = 0; plain && i < cnt; i++) {
    plain = offs[i] >= 0 && offs[i] < cnt && !seen[offs[i]];
    if (plain)
      seen[offs[i]] = 1;
  }
  if (plain) {
    const char *iv = tmpname(L, "i");
    emit(L, at, "for (int %s = 0; %s < %lld; %s++) %s[%s] = %s;", iv, iv, (long long)cnt, iv,
         t->buf, iv, c);
    return;
  }
  for (int64_t i = 0; i < cnt; i++)
    elem_store(L, at, t, elem_addr(L, t, offs[i]), c);
}

/* A builtin's CUDA C for data of type dt (tile_builtin.h), NULL when the row
 * has none; expand() puts the operands' C text in place of $0 and $1. */
static const char *cuda_of(const ag__builtin *bi, int dt) {
  return !ag__dt_is_float(dt) ? bi->cuda_int : dt == DT_F64 ? bi->cuda_f64 : bi->cuda_f32;
}
static const char *expand(lw *L, const char *tmpl, const char *const *a) {
  ag_str s = AG_STR_INIT;
  for (const char *p = tmpl; *p; p++) {
    if (p[0] == '$' && (p[1] == '0' || p[1] == '1'))
      ag_str_puts(&s, a[*++p - '0']);
    else
      ag_str_putc(&s, *p);
  }
  if (s.oom)
    oom(L);
  const char *r = fmt(L, "%s", ag_str_cstr(&s));
  ag_str_release(&s);
  return r;
}

static value *reduce(lw *L, const ag_tile_node *n, const ag__builtin *bi) {
  const char *fn = bi->name;
  if (n->list.n != 1)
    fail(L, n, "%s(t) takes one register tile", fn);
  value *tv = ev(L, n->list.v[0]);
  if (tv->k != V_TILE || tv->t->sp != SP_R)
    fail(L, n, "%s() needs a register tile, not %s", fn, kind_name(tv->k));
  const tile *t = tv->t;
  int dt = t->dt;
  if (ag__dt_size(dt) > 8)
    fail(L, n, "%s() needs scalar elements, not %s", fn, ag__dt_name(dt));
  /* the step: a row of the table (max, min), or addition */
  const ag__builtin *st = bi->step ? ag__builtin_lookup(bi->step) : NULL;
  if (bi->step && (!st || !cuda_of(st, dt)))
    fail(L, n, "%s() on %s data is not lowered", fn, ag__dt_name(dt));
  int64_t *offs, cnt;
  elements(L, n, t, &offs, &cnt);
  const char *r = tmpname(L, "r");
  const char *ct = ag__dt_is_float(dt) && dt != DT_F64 ? "float" : ag__dt_ctype(dt);
  emit(L, n, "%s %s = %s;", ct, r, compute_of(L, dt, elem_load(L, t, elem_addr(L, t, offs[0]))));
  for (int64_t i = 1; i < cnt; i++) {
    const char *e = compute_of(L, dt, elem_load(L, t, elem_addr(L, t, offs[i])));
    if (!st) {
      emit(L, n, "%s = %s;", r,
           is_half(dt) ? compute_of(L, dt, store_of(L, dt, fmt(L, "%s + %s", r, e)))
                       : fmt(L, "%s + %s", r, e));
    } else {
      const char *a[2] = {r, e};
      emit(L, n, "%s = %s;", r, expand(L, cuda_of(st, dt), a));
    }
  }
  return vdata(L, dt, store_of(L, dt, r));
}

/* Each value of a lane mask over the enclosing loops' values must be in 0..31. */
typedef struct lanemask {
  const ag_expr *e;
  int64_t v;
  int bad;
} lanemask;
static int lanemask_fn(lw *L, void *ud) {
  lanemask *c = ud;
  if (ag_expr_eval(c->e, env_cb, L, &c->v) || c->v < 0 || c->v > 31)
    c->bad = 1;
  return c->bad;
}

/* A warp exchange (AG__BI_LANE, tile_builtin.h): the data in its storage
 * type (bf16 and f16 as their bits), moved by a full-mask shfl.sync.bfly,
 * so every lane of the warp must reach it: refused under an 'if' that may
 * split a warp (a warp-role branch such as `if wid < 2:` keeps warps whole)
 * and in a block whose threads are not whole warps. */
static value *lane_xchg(lw *L, const ag_tile_node *n, const ag__builtin *bi) {
  if (n->list.n != 2)
    fail(L, n, "%s(x, lane_mask) takes two arguments", bi->name);
  const int64_t *b = L->k->block;
  if ((b[0] * b[1] * b[2]) % 32)
    fail(L, n, "%s() needs a block of whole warps (this one has %lld threads)", bi->name,
         (long long)(b[0] * b[1] * b[2]));
  if (L->lane_split)
    fail(L, n, "%s() inside an 'if' whose condition may differ between the lanes of a warp "
               "(every lane of the warp must take part; branch on the warp index instead)",
         bi->name);
  value *x = ev(L, n->list.v[0]);
  if (!is_dataish(x))
    fail(L, n->list.v[0], "%s() exchanges data, not %s", bi->name, kind_name(x->k));
  int dt = data_dt(x);
  if (ag__dt_size(dt) > 8)
    fail(L, n->list.v[0], "%s() needs a scalar element (8 bytes at most), not %s", bi->name,
         ag__dt_name(dt));
  /* the mask: a constant, or loop variables only (the same in every lane), each value in 0..31 */
  const ag_expr *mx = as_int(L, n->list.v[1], ev(L, n->list.v[1]), "the lane mask");
  if (!is_static(L, mx))
    fail(L, n->list.v[1], "the lane mask of %s() must be the same in every lane: a constant or "
                          "an expression of loop variables", bi->name);
  lanemask lm = {mx, 0, 0};
  int64_t budget = 1 << 16;
  const char *syms[16];
  int ns = 0;
  loop_syms(L, mx, syms, &ns, 16);
  if (enumerate(L, syms, ns, 0, lanemask_fn, &lm, &budget) || lm.bad)
    fail(L, n->list.v[1], "%s() needs a lane mask in 0..31, not %lld", bi->name,
         (long long)lm.v);
  int64_t m;
  const char *mtext = const_of(L, mx, &m) ? fmt(L, "%lld", (long long)m) : xtext(L, mx);
  const char *t = !ag__dt_is_float(dt) || is_half(dt) ? bi->cuda_int : cuda_of(bi, dt);
  const char *a[2] = {data_text(L, n->list.v[0], x, dt), mtext};
  const char *r = expand(L, t, a);
  return vdata(L, dt, ag__dt_size(dt) < 4 ? fmt(L, "(%s)%s", ag__dt_ctype(dt), r) : r);
}

/* Element-wise arithmetic on data: an operator (op: + - * / or "neg"), or
 * a builtin of the table (bi). */
static value *data_arith(lw *L, const ag_tile_node *n, const char *op, const ag__builtin *bi,
                         value **ops, int nops, const ag_tile_node **nodes) {
  int dt = DT_NONE;
  for (int i = 0; i < nops; i++) {
    int d = data_dt(ops[i]);
    if (d == DT_NONE)
      continue;
    if (dt != DT_NONE && d != dt)
      fail(L, n, "operands have different types (%s and %s); convert with cvt()",
           ag__dt_name(dt), ag__dt_name(d));
    dt = d;
  }
  if (dt == DT_NONE)
    fail(L, n, "arithmetic on constants only; give one operand a type");
  if (ag__dt_size(dt) > 8)
    fail(L, n, "arithmetic needs scalar elements; %s is a vector type", ag__dt_name(dt));
  const char *a[2];
  for (int i = 0; i < nops; i++)
    a[i] = compute_of(L, dt, data_text(L, nodes[i], ops[i], dt));
  const char *r;
  if (bi) {
    const char *t = cuda_of(bi, dt);
    if (!t)
      fail(L, n, "%s() on %s data is not lowered (floating-point types only)", bi->name,
           ag__dt_name(dt));
    r = expand(L, t, a);
  } else if (!strcmp(op, "neg")) {
    r = fmt(L, "-%s", a[0]);
  } else {
    r = fmt(L, "(%s %s %s)", a[0], op, a[1]);
  }
  return vdata(L, dt, store_of(L, dt, r));
}

static value *cvt(lw *L, const ag_tile_node *n) {
  if (n->list.n != 2)
    fail(L, n, "cvt(x, dtype) takes two arguments");
  value *x = ev(L, n->list.v[0]);
  int to = as_dtype(L, n->list.v[1]);
  if (ag__dt_size(to) > 8)
    fail(L, n, "cvt converts to a scalar type");
  if (!is_dataish(x))
    return vdata(L, to, lit_as(L, n->list.v[0], x, to));
  int from = data_dt(x);
  const char *c = data_text(L, n, x, from);
  if (from == to)
    return vdata(L, to, c);
  if (ag__dt_size(from) > 8)
    fail(L, n, "cvt converts from a scalar type, not %s", ag__dt_name(from));
  const char *cf = compute_of(L, from, c);
  if (ag__dt_is_float(from) && !ag__dt_is_float(to)) {
    /* truncation toward zero, saturated to the type's range, NaN to 0: cvt.rzi's
     * semantics, defined for every value (a C cast of an out-of-range value is not) */
    double lo, hi;
    int sgn;
    ag__dt_int_range(to, &lo, &hi, &sgn);
    return vdata(L, to, store_of(L, to, fmt(L, "ag_f2i<%s>((double)%s, %.1f, %.1f)",
                                             ag__dt_ctype(to), cf, lo, hi)));
  }
  if (ag__dt_is_float(to))
    return vdata(L, to, store_of(L, to, fmt(L, "(%s)%s", to == DT_F64 ? "double" : "float", cf)));
  return vdata(L, to, fmt(L, "(%s)%s", ag__dt_ctype(to), cf));
}

/* ----------------------------------------------------------- intrinsics */
/* Every intrinsic is a row of the shared table (../tile_intrin.h), looked up
 * by name (ag__intrin_lookup) and lowered by its kind: one handler per kind. */

static void do_mma(lw *L, const ag_tile_node *n) {
  if (n->list.n != 4)
    fail(L, n, "mma_m16n8k16(d, a, b, c) takes four register tiles");
  const ag_expr *base[4];
  int64_t size[4];
  const tile *t[4];
  static const char *const what[] = {"d", "a", "b", "c"};
  static const int64_t need[] = {16, 16, 8, 16};
  for (int i = 0; i < 4; i++) {
    t[i] = reg_range(L, n->list.v[i], ev(L, n->list.v[i]), what[i], &base[i], &size[i]);
    if (size[i] != need[i])
      fail(L, n->list.v[i], "operand %s of mma_m16n8k16 has %lld bytes, not %lld", what[i],
           (long long)size[i], (long long)need[i]);
  }
  if (t[0]->dt != DT_F32 || t[3]->dt != DT_F32)
    fail(L, n, "the d and c operands of mma_m16n8k16 are 4 f32 registers");
  if (t[1]->dt != t[2]->dt || (t[1]->dt != DT_BF16 && t[1]->dt != DT_F16))
    fail(L, n, "the a and b operands of mma_m16n8k16 are bf16 (or f16) tiles of one type");
  const char *ab = t[1]->dt == DT_BF16 ? "bf16" : "f16";
  ag_str s = AG_STR_INIT;
  /* outputs through temporaries when the accumulator array is not f32 */
  const char *dl[4];
  int via = reg_words(L, t[0], base[0], 4, DT_F32, "float", dl);
  ag_str_printf(&s, "asm(\"mma.sync.aligned.m16n8k16.row.col.f32.%s.%s.f32 {%%0, %%1, %%2, %%3}, "
                    "{%%4, %%5, %%6, %%7}, {%%8, %%9}, {%%10, %%11, %%12, %%13};\"\n",
                ab, ab);
  ag_str_printf(&s, "      : \"=f\"(%s), \"=f\"(%s), \"=f\"(%s), \"=f\"(%s)\n", dl[0], dl[1],
                dl[2], dl[3]);
  ag_str_puts(&s, "      : ");
  for (int j = 0; j < 4; j++)
    ag_str_printf(&s, "\"r\"(%s), ", word_rval(L, t[1], base[1], j, "unsigned", DT_U32));
  for (int j = 0; j < 2; j++)
    ag_str_printf(&s, "\"r\"(%s), ", word_rval(L, t[2], base[2], j, "unsigned", DT_U32));
  for (int j = 0; j < 4; j++)
    ag_str_printf(&s, "\"f\"(%s)%s", word_rval(L, t[3], base[3], j, "float", DT_F32),
                  j < 3 ? ", " : ");");
  if (s.oom)
    oom(L);
  emit(L, n, "%s", ag_str_cstr(&s));
  ag_str_release(&s);
  if (via)
    store_words(L, n, t[0], base[0], 4, "float", dl);
}

static void do_ldmatrix(lw *L, const ag_tile_node *n, const ag__intrin *in) {
  const char *name = in->name;
  int num = in->num, trans = in->trans;
  if (n->list.n != 2)
    fail(L, n, "%s(dst, src) takes two arguments", name);
  const ag_expr *base;
  int64_t size;
  const tile *dt = reg_range(L, n->list.v[0], ev(L, n->list.v[0]), "dst", &base, &size);
  if (size != 4 * num)
    fail(L, n->list.v[0], "the destination of %s is %d u32 registers, not %lld bytes", name,
         num, (long long)size);
  value *src = ev(L, n->list.v[1]);
  if (src->k != V_ELEM || src->t->sp != SP_S)
    fail(L, n->list.v[1], "the source of %s is this lane's row start, a shared tile element",
         name);
  const char *lv[4];
  int via = reg_words(L, dt, base, num, DT_U32, "unsigned", lv);
  ag_str s = AG_STR_INIT;
  ag_str_printf(&s, "asm volatile(\"ldmatrix.sync.aligned.m8n8.x%d%s.shared.b16 {", num,
                trans ? ".trans" : "");
  for (int j = 0; j < num; j++)
    ag_str_printf(&s, "%%%d%s", j, j + 1 < num ? ", " : "");
  ag_str_printf(&s, "}, [%%%d];\" : ", num);
  for (int j = 0; j < num; j++)
    ag_str_printf(&s, "\"=r\"(%s)%s", lv[j], j + 1 < num ? ", " : "");
  ag_str_printf(&s, " : \"r\"(ag_saddr(%s + (%s))) : \"memory\");", src->t->buf,
                xtext(L, src->x));
  if (s.oom)
    oom(L);
  emit(L, n, "%s", ag_str_cstr(&s));
  ag_str_release(&s);
  if (via)
    store_words(L, n, dt, base, num, "unsigned", lv);
}

static void do_cp_async(lw *L, const ag_tile_node *n, const ag__intrin *in) {
  if (n->list.n != 2)
    fail(L, n, "cp_async(dst, src) takes two arguments");
  value *d = ev(L, n->list.v[0]), *s = ev(L, n->list.v[1]);
  if (d->k != V_ELEM || d->t->sp != SP_S)
    fail(L, n->list.v[0], "the destination of cp_async is a shared tile element");
  if (s->k != V_ELEM || s->t->sp != SP_G)
    fail(L, n->list.v[1], "the source of cp_async is a global tensor element");
  int w = ag__dt_size(d->t->dt);
  /* the row's sizes: a bit mask of byte counts (every element size is a power of two) */
  if (w != ag__dt_size(s->t->dt) || !(w & in->sizes))
    fail(L, n, "cp_async copies 4, 8 or 16 bytes between elements of one size");
  emit(L, n, "ag_cp_async<%d>(%s + (%s), &AG_GL(%s, %s, %s));", w, d->t->buf, xtext(L, d->x),
       ag__dt_ctype(s->t->dt), s->t->buf, gl_offset(L, s->t));
}

/* The mbarrier operand of an mbar_* or bulk_copy call: its address as C. */
static const char *mbar_addr(lw *L, const ag_tile_node *n, const char *name) {
  value *b = ev(L, n);
  if (b->k != V_ELEM || b->t->sp != SP_S || b->t->dt != DT_U64)
    fail(L, n, "the mbarrier of %s is a u64 element of a shared tile", name);
  return fmt(L, "%s + (%s)", b->t->buf, xtext(L, b->x));
}

static void do_mbar(lw *L, const ag_tile_node *n, const ag__intrin *in) {
  if (n->list.n != in->nops)
    fail(L, n, "%s takes %d argument%s", in->name, in->nops, in->nops == 1 ? "" : "s");
  switch (in->kind) {
  case IK_MBAR_INIT:
    emit(L, n, "ag_mbar_init(%s, %lldu);", mbar_addr(L, n->list.v[0], in->name),
         (long long)as_const(L, n->list.v[1], ev(L, n->list.v[1]), "the arrival count"));
    break;
  case IK_MBAR_FENCE: emit(L, n, "ag_mbar_fence_init();"); break;
  case IK_MBAR_ARRIVE:
    if (in->tx)
      emit(L, n, "ag_mbar_expect_tx(%s, %lldu);", mbar_addr(L, n->list.v[0], in->name),
           (long long)as_const(L, n->list.v[1], ev(L, n->list.v[1]), "the transaction bytes"));
    else
      emit(L, n, "ag_mbar_arrive(%s);", mbar_addr(L, n->list.v[0], in->name));
    break;
  case IK_MBAR_WAIT: {
    const char *bar = mbar_addr(L, n->list.v[0], in->name);
    emit(L, n, "ag_mbar_wait(%s, %s);", bar, xtext(L, as_int(L, n->list.v[1], ev(L, n->list.v[1]), "the phase parity")));
    break;
  }
  default: { /* IK_BULK_COPY */
    value *d = ev(L, n->list.v[0]), *s = ev(L, n->list.v[1]);
    if (d->k != V_ELEM || d->t->sp != SP_S)
      fail(L, n->list.v[0], "the destination of bulk_copy is a shared tile element");
    if (s->k != V_ELEM || s->t->sp != SP_G)
      fail(L, n->list.v[1], "the source of bulk_copy is a global tensor element");
    int64_t bytes = as_const(L, n->list.v[2], ev(L, n->list.v[2]), "the byte count");
    if (bytes <= 0 || bytes % in->align)
      fail(L, n->list.v[2], "bulk_copy moves a positive multiple of %d bytes, not %lld", in->align,
           (long long)bytes);
    const char *bar = mbar_addr(L, n->list.v[3], in->name);
    emit(L, n, "ag_bulk_copy(%s + (%s), &AG_GL(%s, %s, %s), %lldu, %s);", d->t->buf,
         xtext(L, d->x), ag__dt_ctype(s->t->dt), s->t->buf, gl_offset(L, s->t),
         (long long)bytes, bar);
  }
  }
}

/* wgmma_m64nNk16(d, a, b): d the thread's N/2 f32 accumulators ("+f", in
 * the .d atom's order), a 8 bf16/f16 registers or a shared tile, b a shared
 * tile; a shared operand goes as a matrix descriptor whose LBO, SBO and mode
 * ag__wgmma_desc derives from the tile (as the checker does) and whose start
 * is the tile's address at run time. scale-d is 1 (D += A B^T); a K-major
 * operand is not transposed, an MN-major one is (imm-trans 1). */
static const char *wg_desc(lw *L, const ag_tile_node *n, const tile *t, const ag__intrin *in,
                           const char *opname, int64_t rows, int *trans) {
  ag_gmma_desc d;
  ag_gmma_major major;
  if (ag__wgmma_desc(&L->lc, &t->layout, t->swizzled, t->swz, ag__dt_size(t->dt), t->base, rows,
                     &d, &major))
    fail(L, n, "operand %s of %s has no wgmma descriptor: %s", opname, in->name,
         ag_str_cstr(&L->lc.err));
  *trans = major == AG_GMMA_MN_MAJOR;
  int mode = d.swizzle == AG_SWZ_128B ? 1 : d.swizzle == AG_SWZ_64B ? 2 : d.swizzle == AG_SWZ_32B ? 3 : 0;
  return fmt(L, "ag_wgmma_desc(ag_saddr(%s + (%s)), %uu, %uu, %du)", t->buf, xtext(L, t->base),
             (unsigned)d.lbo, (unsigned)d.sbo, mode);
}

static void do_wgmma(lw *L, const ag_tile_node *n, const ag__intrin *in) {
  if (n->list.n != 3)
    fail(L, n, "%s(d, a, b) takes three operands", in->name);
  const ag_expr *dbase, *abase = NULL;
  int64_t dsize, asize = 0;
  const tile *dt = reg_range(L, n->list.v[0], ev(L, n->list.v[0]), "d", &dbase, &dsize);
  int nd = in->n / 2;
  if (dt->dt != DT_F32 || dsize != 4 * nd)
    fail(L, n->list.v[0], "operand d of %s is %d f32 registers", in->name, nd);
  value *av = ev(L, n->list.v[1]), *bv = ev(L, n->list.v[2]);
  if (bv->k != V_TILE || bv->t->sp != SP_S)
    fail(L, n->list.v[2], "operand b of %s is a shared tile", in->name);
  int ashared = av->k == V_TILE && av->t->sp == SP_S;
  const tile *at = ashared ? av->t : reg_range(L, n->list.v[1], av, "a", &abase, &asize);
  if (!ashared && asize != 16)
    fail(L, n->list.v[1], "operand a of %s in registers is 8 bf16/f16 values", in->name);
  if (at->dt != bv->t->dt || (at->dt != DT_BF16 && at->dt != DT_F16))
    fail(L, n, "the a and b operands of %s are bf16 (or f16) of one type", in->name);
  const char *ab = at->dt == DT_BF16 ? "bf16" : "f16";
  int ta = 0, tb = 0;
  const char *da = ashared ? wg_desc(L, n->list.v[1], at, in, "a", 64, &ta) : NULL;
  const char *db = wg_desc(L, n->list.v[2], bv->t, in, "b", in->n, &tb);
  const char **dl = zalloc(L, (size_t)nd * sizeof *dl);
  int via = reg_words(L, dt, dbase, nd, DT_F32, "float", dl);
  if (via)
    for (int j = 0; j < nd; j++)
      emit(L, n, "%s = %s;", dl[j], word_rval(L, dt, dbase, j, "float", DT_F32));
  ag_str s = AG_STR_INIT;
  int na = ashared ? 1 : 4; /* a's operands after the nd accumulators */
  ag_str_printf(&s, "asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %%%d, 0;\\n"
                    "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {",
                nd + na + 1, in->n, ab, ab);
  for (int j = 0; j < nd; j++)
    ag_str_printf(&s, "%%%d%s", j, j + 1 < nd ? ", " : "}, ");
  if (ashared)
    ag_str_printf(&s, "%%%d, ", nd);
  else
    ag_str_printf(&s, "{%%%d, %%%d, %%%d, %%%d}, ", nd, nd + 1, nd + 2, nd + 3);
  ag_str_printf(&s, "%%%d, p, 1, 1", nd + na);
  if (ashared)
    ag_str_printf(&s, ", %d", ta);
  ag_str_printf(&s, ", %d;\\n}\\n\"\n      : ", tb);
  for (int j = 0; j < nd; j++)
    ag_str_printf(&s, "\"+f\"(%s)%s", dl[j], j + 1 < nd ? ", " : "\n      : ");
  if (ashared)
    ag_str_printf(&s, "\"l\"(%s), ", da);
  else
    for (int j = 0; j < 4; j++)
      ag_str_printf(&s, "\"r\"(%s), ", word_rval(L, at, abase, j, "unsigned", DT_U32));
  ag_str_printf(&s, "\"l\"(%s), \"r\"(1) : \"memory\");", db);
  if (s.oom)
    oom(L);
  emit(L, n, "%s", ag_str_cstr(&s));
  ag_str_release(&s);
  if (via)
    store_words(L, n, dt, dbase, nd, "float", dl);
}

/* tma_map(A, box=..., swizzle=...): the pre-scan named it (a parameter of
 * the entry); here its tensor, box and swizzle are recorded for the host. */
static value *tma_map(lw *L, const ag_tile_node *n) {
  if (L->nested || (size_t)L->ntmap_done >= L->tmaps.n)
    fail(L, n, "not lowered: tma_map outside an assignment 'name = tma_map(...)' at the "
               "kernel's top level");
  const ag_tile_node *an = arg(L, n, 0, "tensor", 1);
  value *tv = ev(L, an);
  int j = -1;
  for (size_t i = 0; tv->k == V_TILE && tv->t->sp == SP_G && tv->t->param && i < L->params.n; i++)
    if (L->params.v[i].kind == AG_TILE_PARAM_TENSOR && !strcmp(L->params.v[i].name, tv->t->buf))
      j = (int)i;
  if (j < 0)
    fail(L, an, "tma_map takes a tensor parameter itself, not %s", kind_name(tv->k));
  ag_tile_ltmap *m = &L->tmaps.v[L->ntmap_done];
  m->tensor = j;
  m->rank = L->params.v[j].rank;
  const ag_tile_node *bn = arg(L, n, 1, "box", 1);
  value *bv = ev(L, bn);
  int nb = bv->k == V_TUPLE ? bv->n : 1;
  if (nb != m->rank || m->rank > 5)
    fail(L, bn, "the box of tma_map has one extent per dimension of the tensor (%d), not %d",
         m->rank, nb);
  for (int i = 0; i < nb; i++)
    m->box[i] = as_const(L, bn, bv->k == V_TUPLE ? &bv->items[i] : bv, "a box extent");
  const ag_tile_node *sn = arg(L, n, 2, "swizzle", 0);
  m->swizzle = sn ? (int)as_const(L, sn, ev(L, sn), "the swizzle span") : 0;
  value *v = newv(L, V_TMAP);
  v->tmap = L->ntmap_done++;
  return v;
}

/* The shared side of a TMA copy: a tile's first element or an element. */
static const char *tma_smem(lw *L, const ag_tile_node *n, const char *name) {
  value *d = ev(L, n);
  if (d->k == V_TILE && d->t->sp == SP_S)
    return fmt(L, "%s + (%s)", d->t->buf, xtext(L, d->t->base));
  if (d->k == V_ELEM && d->t->sp == SP_S)
    return fmt(L, "%s + (%s)", d->t->buf, xtext(L, d->x));
  fail(L, n, "the shared side of %s is a shared tile or element", name);
  return NULL;
}

/* tma_load(map, coords..., dst, bar), tma_store(map, coords..., src): the
 * prelude's helper for the map's rank, coordinates innermost first. */
static void do_tma(lw *L, const ag_tile_node *n, const ag__intrin *in) {
  value *mv = n->list.n ? ev(L, n->list.v[0]) : NULL;
  if (!mv || mv->k != V_TMAP)
    fail(L, n, "%s takes a tensor map first", in->name);
  const ag_tile_ltmap *m = &L->tmaps.v[mv->tmap];
  int r = m->rank, load = in->kind == IK_TMA_LOAD;
  if (n->list.n != 1 + r + (load ? 2 : 1))
    fail(L, n, "%s takes the map, %d coordinates and %s", in->name, r,
         load ? "the destination and the mbarrier" : "the source");
  ag_str co = AG_STR_INIT;
  for (int i = r - 1; i >= 0; i--)
    ag_str_printf(&co, ", (int)(%s)",
                  xtext(L, as_int(L, n->list.v[1 + i], ev(L, n->list.v[1 + i]), "a box coordinate")));
  const char *cs = fmt(L, "%s", co.oom ? "" : ag_str_cstr(&co));
  int bad = co.oom;
  ag_str_release(&co);
  if (bad)
    oom(L);
  const char *sm = tma_smem(L, n->list.v[1 + r], in->name);
  if (load)
    emit(L, n, "ag_tma_load%d(%s, &%s, %s%s);", r, sm, m->name,
         mbar_addr(L, n->list.v[2 + r], in->name), cs);
  else
    emit(L, n, "ag_tma_store%d(&%s, %s%s);", r, m->name, sm, cs);
}

/* Shared-memory writes of the generic proxy (stores, cp.async) made visible
 * to the async proxy (wgmma's operand reads, TMA stores). */
static void proxy_fence(lw *L, const ag_tile_node *n) {
  emit(L, n, "asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");");
}

static value *call_intrinsic(lw *L, const ag_tile_node *n, const ag__intrin *in) {
  switch (in->kind) {
  case IK_MMA: do_mma(L, n); break;
  case IK_LDMATRIX: do_ldmatrix(L, n, in); break;
  case IK_CP_ASYNC: do_cp_async(L, n, in); break;
  case IK_CP_COMMIT: emit(L, n, "asm volatile(\"cp.async.commit_group;\" ::: \"memory\");"); break;
  case IK_CP_WAIT: {
    if (n->list.n != 1)
      fail(L, n, "%s(n) takes one argument", in->name);
    int64_t k = as_const(L, n->list.v[0], ev(L, n->list.v[0]), "the group count");
    if (k < 0 || k > 7)
      fail(L, n->list.v[0], "%s(n) needs n in 0..7, not %lld", in->name, (long long)k);
    emit(L, n, "asm volatile(\"cp.async.wait_group %lld;\" ::: \"memory\");", (long long)k);
    break;
  }
  case IK_SYNC:
    if (L->uses_tma) /* shared stores made visible to the async proxy a tma_store reads through */
      proxy_fence(L, n);
    emit(L, n, "__syncthreads();");
    break;
  case IK_MBAR_INIT:
  case IK_MBAR_FENCE:
  case IK_MBAR_ARRIVE:
  case IK_MBAR_WAIT:
  case IK_BULK_COPY: do_mbar(L, n, in); break;
  case IK_TMA_LOAD:
  case IK_TMA_STORE: do_tma(L, n, in); break;
  case IK_TMA_COMMIT: emit(L, n, "asm volatile(\"cp.async.bulk.commit_group;\" ::: \"memory\");"); break;
  case IK_TMA_WAIT: {
    if (n->list.n != 1)
      fail(L, n, "%s(n) takes one argument", in->name);
    int64_t k = as_const(L, n->list.v[0], ev(L, n->list.v[0]), "the group count");
    if (k < 0 || k > 7)
      fail(L, n->list.v[0], "%s(n) needs n in 0..7, not %lld", in->name, (long long)k);
    emit(L, n, "asm volatile(\"cp.async.bulk.wait_group.read %lld;\" ::: \"memory\");", (long long)k);
    break;
  }
  case IK_WGMMA: do_wgmma(L, n, in); break;
  case IK_WG_FENCE:
    /* shared-memory writes of the generic proxy (stores, cp.async) made visible to the
     * async proxy wgmma reads through, then the wgmma fence */
    proxy_fence(L, n);
    emit(L, n, "asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");");
    break;
  case IK_WG_COMMIT:
    emit(L, n, "asm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\");");
    break;
  case IK_WG_WAIT: {
    if (n->list.n != 1)
      fail(L, n, "%s(n) takes one argument", in->name);
    int64_t k = as_const(L, n->list.v[0], ev(L, n->list.v[0]), "the group count");
    if (k < 0 || k > 7)
      fail(L, n->list.v[0], "%s(n) needs n in 0..7, not %lld", in->name, (long long)k);
    emit(L, n, "asm volatile(\"wgmma.wait_group.sync.aligned %lld;\" ::: \"memory\");",
         (long long)k);
    break;
  }
  case IK_CP_MBAR_ARRIVE:
    if (n->list.n != 1)
      fail(L, n, "%s(bar) takes one argument", in->name);
    emit(L, n, "ag_cp_async_mbar_arrive(%s);", mbar_addr(L, n->list.v[0], in->name));
    break;
  case IK_SETMAXNREG: {
    /* warp specialization: every warp of the warpgroup (checked by argus check) */
    if (n->list.n != 1)
      fail(L, n, "%s(n) takes one argument", in->name);
    int64_t r = as_const(L, n->list.v[0], ev(L, n->list.v[0]), "the register count");
    if (r < 24 || r > 256 || r % 8)
      fail(L, n->list.v[0], "%s needs a register count that is a multiple of 8 in 24..256, "
                            "not %lld", in->name, (long long)r);
    emit(L, n, "asm volatile(\"setmaxnreg.%s.sync.aligned.u32 %lld;\" ::: \"memory\");",
         in->tx ? "inc" : "dec", (long long)r);
    break;
  }
  default: fail(L, n, "the lowering has no handler for intrinsic '%s'", in->name);
  }
  return newv(L, V_NONE);
}

static value *intrin_coord(lw *L, const ag_tile_node *n, value *op) {
  if (n->list.n != 2)
    fail(L, n, "an operand layout takes (lane, value)");
  const char *atom = !strcmp(op->op, "a")   ? op->in->atom_a
                     : !strcmp(op->op, "b") ? op->in->atom_b : op->in->atom_c;
  ag_layout tv;
  ag_atom_info info;
  if (ag_atom_layout(&L->lc, atom, &tv, &info))
    fail(L, n, "no layout for '%s': %s", atom, ag_str_cstr(&L->lc.err));
  const ag_expr *lane = as_int(L, n->list.v[0], ev(L, n->list.v[0]), "a lane");
  const ag_expr *val = as_int(L, n->list.v[1], ev(L, n->list.v[1]), "a value index");
  ag_xtuple kids[2] = {{1, lane, 0, NULL}, {1, val, 0, NULL}};
  ag_xtuple *kp[2] = {&kids[0], &kids[1]};
  ag_xtuple co = {0, NULL, 2, kp};
  const ag_expr *off;
  if (ag_layout_eval_coord_x(&L->lc, &tv, &co, &off))
    fail(L, n, "cannot evaluate '%s': %s", atom, ag_str_cstr(&L->lc.err));
  value *v = newv(L, V_TUPLE);
  v->n = 2;
  v->items = zalloc(L, 2 * sizeof *v->items);
  v->items[0] = *vint(L, xb(L, AG_X_MOD, off, xc(L, info.rows)));
  v->items[1] = *vint(L, xb(L, AG_X_DIV, off, xc(L, info.rows)));
  return v;
}

/* ---------------------------------------------------------- expressions */
static value *call(lw *L, const ag_tile_node *n) {
  const ag_tile_node *f = n->a;
  if (f->kind == AG_TN_ATTR && !strcmp(f->name, "view")) {
    value *t = ev(L, f->a);
    if (t->k != V_TILE)
      fail(L, f, "view() applies to a tile, not %s", kind_name(t->k));
    return view(L, n, t->t);
  }
  if (f->kind != AG_TN_NAME) {
    value *fv = ev(L, f);
    if (fv->k == V_IOP)
      return intrin_coord(L, n, fv);
    fail(L, f, "this is not a function");
  }
  const char *fn = f->name;
  value *user = lookup(L, fn);
  if (user)
    fail(L, f, "'%s' is %s, not a function", fn, kind_name(user->k));
  const ag__intrin *in = ag__intrin_lookup(fn);
  if (in)
    return call_intrinsic(L, n, in);
  if (!strcmp(fn, "make_shared"))
    return make_shared(L, n);
  if (!strcmp(fn, "make_local"))
    return make_local(L, n);
  if (!strcmp(fn, "tma_map"))
    return tma_map(L, n);
  if (!strcmp(fn, "reset"))
    return newv(L, V_NONE); /* tags only */
  if (!strcmp(fn, "fill")) {
    if (n->list.n != 2)
      fail(L, n, "fill(t, v) takes two arguments");
    do_fill(L, n, ev(L, n->list.v[0]), ev(L, n->list.v[1]), n->list.v[1]);
    return newv(L, V_NONE);
  }
  if (!strcmp(fn, "layout")) {
    if (n->list.n != 2)
      fail(L, n, "layout(shape, stride) takes two arguments");
    ag_tuple *sh = to_tuple(L, n, ev(L, n->list.v[0]), "a layout shape");
    ag_tuple *st = to_tuple(L, n, ev(L, n->list.v[1]), "a layout stride");
    value *v = newv(L, V_LAYOUT);
    if (ag_layout_make(&L->lc, sh, st, &v->layout))
      fail(L, n, "bad layout: %s", ag_str_cstr(&L->lc.err));
    return v;
  }
  if (!strcmp(fn, "swizzle")) {
    if (n->list.n != 3)
      fail(L, n, "swizzle(B, M, S) takes three arguments");
    value *v = newv(L, V_SWZ);
    v->swz.b = (int)as_const(L, n->list.v[0], ev(L, n->list.v[0]), "B");
    v->swz.m = (int)as_const(L, n->list.v[1], ev(L, n->list.v[1]), "M");
    v->swz.s = (int)as_const(L, n->list.v[2], ev(L, n->list.v[2]), "S");
    return v;
  }
  if (!strcmp(fn, "cvt"))
    return cvt(L, n);
  const ag__builtin *bi = ag__builtin_lookup(fn);
  if (bi && bi->kind == AG__BI_REDUCE)
    return reduce(L, n, bi);
  if (bi && bi->kind == AG__BI_LANE)
    return lane_xchg(L, n, bi);
  if (bi) {
    if (n->list.n != bi->arity)
      fail(L, n, "%s() takes %d argument%s", fn, bi->arity, bi->arity == 1 ? "" : "s");
    value *ops[2];
    const ag_tile_node *nodes[2];
    int ints = 1;
    for (int i = 0; i < bi->arity; i++) {
      ops[i] = ev(L, n->list.v[i]);
      nodes[i] = n->list.v[i];
      ints &= ops[i]->k == V_INT;
    }
    if (bi->ints && ints) {
      int64_t x[2] = {0, 0};
      for (int i = 0; i < bi->arity; i++)
        if (!ag_expr_is_const(ops[i]->x, &x[i]))
          fail(L, n, "%s of integers that are not compile-time constants", fn);
      return vint(L, xc(L, bi->ints(x[0], x[1])));
    }
    return data_arith(L, n, NULL, bi, ops, bi->arity, nodes);
  }
  if (!strcmp(fn, "tag"))
    fail(L, n, "tag() is only valid in an assertion");
  if (!strcmp(fn, "range"))
    fail(L, n, "range() is only valid in a 'for' loop");
  if (ag__dt_lookup(fn))
    fail(L, f, "'%s' is a data type; to convert a value write cvt(x, %s)", fn, fn);
  fail(L, f, "unknown function '%s'", fn);
  return NULL;
}


static const char *ctext(lw *L, const ag_expr *e);
static value *binop(lw *L, const ag_tile_node *n, ag_tile_op op, value *a, value *b,
                    const ag_tile_node *na, const ag_tile_node *nb) {
  if ((a->k == V_INT || a->k == V_BOOL) && (b->k == V_INT || b->k == V_BOOL)) {
    const ag_expr *x = as_int(L, na, a, "an operand"), *y = as_int(L, nb, b, "an operand");
    int64_t yv;
    if ((op == AG_OP_DIV || op == AG_OP_FLOORDIV || op == AG_OP_MOD) &&
        ag_expr_is_const(y, &yv) && yv == 0)
      fail(L, n, "division by zero");
    int64_t xv;
    int yc = ag_expr_is_const(y, &yv);
    if ((op == AG_OP_SHL || op == AG_OP_SHR) && !(yc && yv >= 0 && yv <= 31) &&
        !(yc && ag_expr_is_const(x, &xv))) {
      /* a run-time count, or one past 31: 0 past 31, as the checker's and the
       * interpreter's 32-bit integers (C leaves such shifts undefined) */
      const char *cn = tmpname(L, "sh");
      emit(L, n, "unsigned %s = ag_%s(%s, %s);", cn, op == AG_OP_SHL ? "shl" : "shr",
           ctext(L, x), ctext(L, y));
      new_cvar(L, cn, NULL, DT_NONE); /* opaque: a run-time value */
      return vint(L, xs(L, cn));
    }
    return vint(L, xb(L, ag_tile_xop(op), x, y));
  }
  if (is_dataish(a) || is_dataish(b)) {
    static const char *const t[] = {[AG_OP_ADD] = "+", [AG_OP_SUB] = "-", [AG_OP_MUL] = "*",
                                    [AG_OP_DIV] = "/"};
    if (op != AG_OP_ADD && op != AG_OP_SUB && op != AG_OP_MUL && op != AG_OP_DIV)
      fail(L, n, "'%s' on data values is not supported (use + - * /)", ag_tile_op_text(op));
    value *ops[2] = {a, b};
    const ag_tile_node *nodes[2] = {na, nb};
    return data_arith(L, n, t[op], NULL, ops, 2, nodes);
  }
  if (a->k == V_FLOAT && b->k == V_FLOAT) {
    value *v = newv(L, V_FLOAT);
    int ok;
    v->f = ag_tile_fop(op, a->f, b->f, &ok);
    if (!ok)
      fail(L, n, "'%s' on float constants is not supported (use + - * /)",
           ag_tile_op_text(op));
    return v;
  }
  fail(L, n, "'%s' between %s and %s is not supported", ag_tile_op_text(op), kind_name(a->k),
       kind_name(b->k));
  return NULL;
}

static value *vbool(lw *L, const char *c, int k) {
  value *v = newv(L, V_BOOL);
  v->c = c;
  v->bconst = k;
  return v;
}
static value *as_cond(lw *L, const ag_tile_node *n, value *v) {
  if (v->k == V_BOOL)
    return v;
  if (v->k == V_INT) {
    int64_t c;
    if (ag_expr_is_const(v->x, &c))
      return vbool(L, c ? "true" : "false", c != 0);
    return vbool(L, fmt(L, "(%s) != 0u", xtext(L, v->x)), -1);
  }
  fail(L, n, "a condition is an integer comparison, not %s", kind_name(v->k));
  return NULL;
}
static const char *ctext(lw *L, const ag_expr *e) {
  int64_t v;
  if (ag_expr_is_const(e, &v))
    return fmt(L, "%lldu", (long long)(uint32_t)v);
  return xtext(L, e);
}

static value *ev(lw *L, const ag_tile_node *n) {
  switch (n->kind) {
  case AG_TN_INT: return vint(L, xc(L, n->ival));
  case AG_TN_FLOAT: {
    value *v = newv(L, V_FLOAT);
    v->f = n->fval;
    return v;
  }
  case AG_TN_BOOL: return vbool(L, n->ival ? "true" : "false", n->ival ? 1 : 0);
  case AG_TN_STR: fail(L, n, "a string is only valid as an assertion message");
  case AG_TN_NAME: {
    value *v = lookup(L, n->name);
    if (v && v->k == V_POISON)
      fail(L, n, "not lowered: %s", v->name);
    if (v)
      return v;
    int dt = ag__dt_lookup(n->name);
    if (dt) {
      value *d = newv(L, V_DTYPE);
      d->dt = dt;
      return d;
    }
    const ag__intrin *in = ag__intrin_lookup(n->name);
    if (in) {
      value *i = newv(L, V_INTRIN);
      i->name = n->name;
      i->in = in;
      return i;
    }
    fail(L, n, "unknown name '%s'", n->name);
  }
  case AG_TN_ATTR: {
    const ag_tile_node *b = n->a;
    if (b->kind == AG_TN_NAME && (!strcmp(b->name, "threadIdx") || !strcmp(b->name, "blockIdx")) &&
        !lookup(L, b->name)) {
      if (strcmp(n->name, "x") && strcmp(n->name, "y") && strcmp(n->name, "z"))
        fail(L, n, "%s has fields x, y and z", b->name);
      return vint(L, xs(L, fmt(L, "%s.%s", b->name, n->name)));
    }
    value *bv = ev(L, b);
    if (bv->k == V_INTRIN && bv->in->kind == IK_WGMMA && (!strcmp(n->name, "a") || !strcmp(n->name, "d"))) {
      value *v = newv(L, V_IOP); /* wgmma's .a and .d atoms */
      v->name = bv->name;
      v->in = bv->in;
      v->op = n->name;
      return v;
    }
    if (bv->k == V_INTRIN && bv->in->kind == IK_MMA &&
        (!strcmp(n->name, "a") || !strcmp(n->name, "b") || !strcmp(n->name, "c"))) {
      value *v = newv(L, V_IOP);
      v->name = bv->name;
      v->in = bv->in;
      v->op = n->name;
      return v;
    }
    if (bv->k == V_TMAP && !strcmp(n->name, "bytes")) { /* what one copy of the box moves */
      const ag_tile_ltmap *m = &L->tmaps.v[bv->tmap];
      int64_t bytes = ag__dt_size(ag__dt_lookup(L->params.v[m->tensor].dtype));
      for (int i = 0; i < m->rank; i++)
        bytes *= m->box[i];
      return vint(L, xc(L, bytes));
    }
    fail(L, n, "%s has no attribute '%s'", kind_name(bv->k), n->name);
  }
  case AG_TN_BINOP:
    return binop(L, n, n->op, ev(L, n->a), ev(L, n->b), n->a, n->b);
  case AG_TN_UNOP: {
    value *a = ev(L, n->a);
    if (n->op == AG_OP_POS)
      return a;
    if (a->k == V_INT)
      return vint(L, n->op == AG_OP_NEG ? xb(L, AG_X_SUB, xc(L, 0), a->x)
                                        : xb(L, AG_X_XOR, a->x, xc(L, 0xffffffffll)));
    if (a->k == V_FLOAT && n->op == AG_OP_NEG) {
      value *v = newv(L, V_FLOAT);
      v->f = -a->f;
      return v;
    }
    if (is_dataish(a) && n->op == AG_OP_NEG) {
      value *ops[1] = {a};
      const ag_tile_node *nodes[1] = {n->a};
      return data_arith(L, n, "neg", NULL, ops, 1, nodes);
    }
    fail(L, n, "'%s' on %s is not supported", ag_tile_op_text(n->op), kind_name(a->k));
  }
  case AG_TN_CMP: {
    value *a = ev(L, n->a), *b = ev(L, n->b);
    const ag_expr *x = as_int(L, n->a, a, "a compared value"),
                  *y = as_int(L, n->b, b, "a compared value");
    int64_t xv, yv;
    if (ag_expr_is_const(x, &xv) && ag_expr_is_const(y, &yv)) {
      uint32_t ux = (uint32_t)xv, uy = (uint32_t)yv;
      int r = n->op == AG_OP_EQ ? ux == uy : n->op == AG_OP_NE ? ux != uy
              : n->op == AG_OP_LT ? ux < uy : n->op == AG_OP_LE ? ux <= uy
              : n->op == AG_OP_GT ? ux > uy : ux >= uy;
      return vbool(L, r ? "true" : "false", r);
    }
    return vbool(L, fmt(L, "%s %s %s", ctext(L, x), ag_tile_op_text(n->op), ctext(L, y)), -1);
  }
  case AG_TN_LAND:
  case AG_TN_LOR: {
    value *a = as_cond(L, n->a, ev(L, n->a));
    int is_and = n->kind == AG_TN_LAND;
    if (a->bconst >= 0 && a->bconst == !is_and)
      return a; /* short circuit, as the checker */
    value *b = as_cond(L, n->b, ev(L, n->b));
    if (a->bconst >= 0)
      return b;
    if (b->bconst >= 0)
      return b->bconst == is_and ? a : b;
    return vbool(L, fmt(L, "(%s) %s (%s)", a->c, is_and ? "&&" : "||", b->c), -1);
  }
  case AG_TN_LNOT: {
    value *a = as_cond(L, n->a, ev(L, n->a));
    if (a->bconst >= 0)
      return vbool(L, a->bconst ? "false" : "true", !a->bconst);
    return vbool(L, fmt(L, "!(%s)", a->c), -1);
  }
  case AG_TN_TERNARY: {
    value *c = as_cond(L, n->b, ev(L, n->b));
    if (c->bconst >= 0)
      return ev(L, c->bconst ? n->a : n->c);
    value *a = ev(L, n->a), *b = ev(L, n->c);
    if (a->k == V_INT && b->k == V_INT) {
      const char *cn = tmpname(L, "sel");
      emit(L, n, "const unsigned %s = %s ? %s : %s;", cn, c->c, ctext(L, a->x), ctext(L, b->x));
      value *v = vint(L, xs(L, cn));
      v->cvar = new_cvar(L, cn, NULL, DT_NONE);
      return v;
    }
    int dt = data_dt(a) ? data_dt(a) : data_dt(b);
    if (!dt || (data_dt(a) && data_dt(b) && data_dt(a) != data_dt(b)))
      fail(L, n, "the two values of 'x if c else y' must be data of one type");
    return vdata(L, dt, fmt(L, "(%s ? %s : %s)", c->c, data_text(L, n->a, a, dt),
                            data_text(L, n->c, b, dt)));
  }
  case AG_TN_CALL: return call(L, n);
  case AG_TN_INDEX: {
    value *b = ev(L, n->a);
    if (b->k != V_TILE)
      fail(L, n, "only tiles can be indexed, not %s", kind_name(b->k));
    return b->t->sp == SP_G ? index_global(L, n, b->t) : index_local(L, n, b->t);
  }
  case AG_TN_TUPLE: {
    value *v = newv(L, V_TUPLE);
    v->n = n->list.n;
    v->items = zalloc(L, (size_t)(v->n ? v->n : 1) * sizeof *v->items);
    for (int i = 0; i < v->n; i++)
      v->items[i] = *ev(L, n->list.v[i]);
    return v;
  }
  default:
    fail(L, n, "this expression is not valid here");
  }
  return NULL;
}

/* ----------------------------------------------------------- statements */
static void lower_block(lw *L, const ag_tile_list *body);
static int add_region(lw *L, const char *kernel, const char *name);
static void push_region(lw *L, const ag_tile_node *at, const char *name) {
  if (L->nrpath >= 64)
    fail(L, at, "not lowered: regions nested more than 64 deep");
  add_region(L, L->k->name, name);
  L->rpath[L->nrpath++] = name;
}
/* The region push_region opened ends here. */
static void end_region(lw *L, const ag_tile_node *at, const char *name) {
  L->nrpath--;
  emit(L, at, "ARGUS_END(%s);", name);
}

/* Binds name to v: a C variable for integers and data, declared here, or
 * an assignment to an enclosing block's variable of the same kind. */
static void assign_name(lw *L, const ag_tile_node *at, const char *name, value *v) {
  value *cur = peek(L, name);
  if (v->k == V_ELEM)
    v = vdata(L, v->t->dt, elem_load(L, v->t, v->x));
  if (cur && cur->cvar >= 0 && L->cvars.v[cur->cvar].depth < L->depth) {
    cvar *cv = &L->cvars.v[cur->cvar];
    if (cur->k == V_INT && v->k == V_INT && !cv->data_dt) {
      emit(L, at, "%s = %s;", cv->cname, ctext(L, v->x));
      cv->tree = NULL;
      return;
    }
    if (cur->k == V_DATA && v->k == V_DATA && cv->data_dt == v->dt) {
      emit(L, at, "%s = %s;", cv->cname, v->c);
      return;
    }
  }
  if (v->k == V_INT) {
    int64_t c;
    if (ag_expr_is_const(v->x, &c)) {
      bind(L, name, v);
      return;
    }
    const char *cn = cname(L, name);
    emit(L, at, "unsigned %s = %s;", cn, ctext(L, v->x));
    value *nv = vint(L, xs(L, cn));
    nv->cvar = new_cvar(L, cn, v->x, DT_NONE);
    bind(L, name, nv);
    return;
  }
  if (v->k == V_DATA) {
    const char *cn = cname(L, name);
    emit(L, at, "%s %s = %s;", ag__dt_ctype(v->dt), cn, v->c);
    value *nv = vdata(L, v->dt, cn);
    nv->cvar = new_cvar(L, cn, NULL, v->dt);
    bind(L, name, nv);
    return;
  }
  if (v->k == V_NONE)
    fail(L, at, "this call gives no value to assign");
  if (v->k == V_BOOL && v->bconst < 0)
    fail(L, at, "not lowered: a name bound to a run-time condition");
  bind(L, name, v);
}

static void store_to(lw *L, const ag_tile_node *at, const ag_tile_node *tn, value *target,
                     value *v, const ag_tile_node *vn) {
  if (target->k == V_TILE) {
    do_fill(L, at, target, v, vn);
    return;
  }
  if (target->k != V_ELEM)
    fail(L, tn, "cannot assign to %s", kind_name(target->k));
  const tile *t = target->t;
  const char *c;
  if (is_dataish(v)) {
    int d = data_dt(v);
    c = data_text(L, vn, v, d);
    if (d != t->dt) {
      if (ag__dt_size(d) != ag__dt_size(t->dt))
        fail(L, at, "a %d-byte %s value cannot be stored in a %d-byte %s element (view the "
                    "tile, or convert with cvt())",
             ag__dt_size(d), ag__dt_name(d), ag__dt_size(t->dt), ag__dt_name(t->dt));
      c = fmt(L, "ag_bitcast<%s>(%s)", ag__dt_ctype(t->dt), c);
    }
  } else {
    c = lit_as(L, vn, v, t->dt);
  }
  elem_store(L, at, t, target->x, c);
}

static void lower_assign(lw *L, const ag_tile_node *n) {
  for (int i = 0; i < n->list2.n; i++)
    if (n->list2.v[i]->kind == AG_TN_ARROW)
      return; /* a tag function: tags never reach code */
  value **vals;
  int nv = n->list.n;
  vals = zalloc(L, (size_t)nv * sizeof *vals);
  L->hint = nv == 1 && n->list.v[0]->kind == AG_TN_NAME ? n->list.v[0]->name : NULL;
  if (n->list2.n == 1 && nv > 1) {
    value *t = ev(L, n->list2.v[0]);
    if (t->k != V_TUPLE || t->n != nv)
      fail(L, n, "%d targets but the value is %s", nv,
           t->k == V_TUPLE ? fmt(L, "a tuple of %d", t->n) : kind_name(t->k));
    for (int i = 0; i < nv; i++)
      vals[i] = &t->items[i];
  } else {
    for (int i = 0; i < nv; i++)
      vals[i] = ev(L, n->list2.v[i]);
  }
  L->hint = NULL;
  for (int i = 0; i < nv; i++) {
    const ag_tile_node *tn = n->list.v[i];
    value *v = vals[i];
    if (n->op != AG_OP_NONE)
      v = binop(L, n, n->op, ev(L, tn), v, tn, n->list2.v[0]);
    if (tn->kind == AG_TN_NAME)
      assign_name(L, n, tn->name, v);
    else
      store_to(L, n, tn, ev(L, tn), v, n->list2.n == nv ? n->list2.v[i] : n->list2.v[0]);
  }
}

/* Names a block assigns (targets of assignments, nested blocks included). */
static void assigned_names(const ag_tile_list *b, const char **out, int *n, int max) {
  for (int i = 0; i < b->n; i++) {
    const ag_tile_node *s = b->v[i];
    if (s->kind == AG_TN_ASSIGN) {
      int tagfn = 0;
      for (int j = 0; j < s->list2.n; j++)
        tagfn |= s->list2.v[j]->kind == AG_TN_ARROW;
      for (int j = 0; j < s->list.n && !tagfn; j++)
        if (s->list.v[j]->kind == AG_TN_NAME && *n < max)
          out[(*n)++] = s->list.v[j]->name;
    } else if (s->kind == AG_TN_FOR || s->kind == AG_TN_IF || s->kind == AG_TN_REGION) {
      assigned_names(&s->list, out, n, max);
      assigned_names(&s->list2, out, n, max);
    }
  }
}

/* Before a block that runs conditionally or repeatedly: the integer
 * variables it may assign lose their compile-time value, and integer
 * constants it may assign become variables. */
static void prepare_block(lw *L, const ag_tile_node *at, const ag_tile_list *a,
                          const ag_tile_list *b, size_t *wmark) {
  const char *names[256];
  int n = 0;
  assigned_names(a, names, &n, 256);
  if (b)
    assigned_names(b, names, &n, 256);
  if (n >= 256)
    fail(L, at, "not lowered: a block that assigns more than 255 names");
  *wmark = L->watches.n;
  for (int i = 0; i < n; i++) {
    value *cur = peek(L, names[i]);
    if (!cur || cur->k == V_POISON)
      continue;
    if (cur->k == V_INT && cur->cvar < 0) {
      const char *cn = cname(L, names[i]);
      emit(L, at, "unsigned %s = %s;", cn, ctext(L, cur->x));
      value *nv = vint(L, xs(L, cn));
      nv->cvar = new_cvar(L, cn, NULL, DT_NONE);
      bind(L, names[i], nv);
      cur = nv;
    } else if (cur->k == V_INT) {
      L->cvars.v[cur->cvar].tree = NULL;
    }
    watch w = {names[i], cur, 0, 0};
    if (ag_vec_push(&L->watches, w))
      oom(L);
  }
}
static void finish_watches(lw *L, const ag_tile_node *at, size_t wmark, int loop) {
  for (size_t i = wmark; i < L->watches.n && loop; i++)
    if (L->watches.v[i].read && L->watches.v[i].rebound)
      fail(L, at,
           "not lowered: the loop reads '%s' from before the loop and then binds it to a new "
           "kind of value (a different type, a tile); the next iteration would see the new one",
           L->watches.v[i].name);
  L->watches.n = wmark;
}

static int64_t trips_of(int64_t start, int64_t stop, int64_t step) {
  if (step > 0 ? start >= stop : start <= stop)
    return 0;
  return step > 0 ? (stop - start + step - 1) / step : (start - stop - step - 1) / -step;
}
static int64_t cost(const ag_tile_list *b);
static int64_t stmt_cost(const ag_tile_node *s) {
  if (s->kind == AG_TN_FOR) {
    int64_t t = 2;
    const ag_tile_node *it = s->a;
    if (it->kind == AG_TN_CALL && it->list.n >= 1 && it->list.v[it->list.n > 1]->kind == AG_TN_INT)
      t = it->list.v[it->list.n > 1]->ival;
    return 1 + (t > 0 ? t : 1) * cost(&s->list);
  }
  if (s->kind == AG_TN_IF || s->kind == AG_TN_REGION)
    return 1 + cost(&s->list) + cost(&s->list2);
  return 1;
}
static int64_t cost(const ag_tile_list *b) {
  int64_t c = 0;
  for (int i = 0; i < b->n; i++)
    c += stmt_cost(b->v[i]);
  return c;
}

/* 1 when lowering the block would emit nothing that outlives it: it only
 * binds names (poisoned after it), asserts, passes, and nests such blocks. */
static int effect_free(const ag_tile_list *b) {
  for (int i = 0; i < b->n; i++) {
    const ag_tile_node *s = b->v[i];
    if (s->kind == AG_TN_ASSERT || s->kind == AG_TN_PASS)
      continue;
    if (s->kind == AG_TN_ASSIGN) {
      for (int j = 0; j < s->list.n; j++)
        if (s->list.v[j]->kind != AG_TN_NAME || s->op != AG_OP_NONE)
          return 0;
      continue;
    }
    if ((s->kind == AG_TN_FOR || s->kind == AG_TN_IF) && effect_free(&s->list) &&
        effect_free(&s->list2))
      continue;
    return 0;
  }
  return 1;
}
static int skip_block(lw *L, const ag_tile_node *n) {
  if (!effect_free(&n->list) || !effect_free(&n->list2))
    return 0;
  const char *names[256];
  int k = 0;
  assigned_names(&n->list, names, &k, 256);
  assigned_names(&n->list2, names, &k, 256);
  if (k >= 256)
    return 0;
  for (int i = 0; i < k; i++) {
    value *v = peek(L, names[i]);
    if (v && v->k != V_POISON)
      return 0; /* it would assign a variable that outlives the block */
  }
  for (int i = 0; i < k; i++) {
    value *v = newv(L, V_POISON);
    v->name = fmt(L, "'%s' is bound inside the block at line %d and is not known after it",
                  names[i], n->line);
    bind(L, names[i], v);
  }
  emit(L, n, "/* line %d: assertions only (no code) */", n->line);
  return 1;
}

/* 1 when a statement of l (at any depth) calls an intrinsic of kind k */
static int calls_kind_node(const ag_tile_node *e, ag__ik k);
static int calls_kind(const ag_tile_list *l, ag__ik k) {
  for (int i = 0; i < l->n; i++)
    if (calls_kind_node(l->v[i], k))
      return 1;
  return 0;
}
static int calls_kind_node(const ag_tile_node *e, ag__ik k) {
  if (!e)
    return 0;
  if (e->kind == AG_TN_CALL && e->a && e->a->kind == AG_TN_NAME) {
    const ag__intrin *in = ag__intrin_lookup(e->a->name);
    if (in && in->kind == k)
      return 1;
  }
  return calls_kind_node(e->a, k) || calls_kind_node(e->b, k) || calls_kind_node(e->c, k) ||
         calls_kind(&e->list, k) || calls_kind(&e->list2, k);
}

#define AG_LOWER_UNROLL_MAX 64
#define AG_LOWER_SYNC_UNROLL_MAX 8
static void lower_for(lw *L, const ag_tile_node *n, const char *region) {
  const ag_tile_node *it = n->a;
  if (it->kind != AG_TN_CALL || it->a->kind != AG_TN_NAME || strcmp(it->a->name, "range") ||
      it->list.n < 1 || it->list.n > 3)
    fail(L, it, "a loop runs over range(stop), range(start, stop) or range(start, stop, step)");
  int64_t a[3] = {0, 0, 1};
  const char *rstop = NULL; /* a run-time stop (a persistent tile loop's), as C */
  for (int i = 0; i < it->list.n; i++) {
    value *v = ev(L, it->list.v[i]);
    int64_t c;
    const ag_expr *x = as_int(L, it->list.v[i], v, "a loop bound");
    int is_stop = i == (it->list.n == 1 ? 0 : 1);
    if (!ag_expr_is_const(x, &c)) {
      /* a stop over the block index (and sizes bound by --set): the loop
       * stays a C loop whose variable is the same in every thread */
      if (!is_stop || mentions_loop(L, x, 0))
        fail(L, it->list.v[i],
             "not lowered: a loop bound that is not a compile-time constant (it may depend on "
             "an enclosing loop's variable in the checker, not in the lowering; a run-time "
             "stop may depend on the block index only)");
      rstop = xtext(L, x);
      c = 0;
    }
    a[i] = c;
  }
  int64_t start = 0, stop = a[0], step = 1;
  if (it->list.n >= 2) {
    start = a[0];
    stop = a[1];
    step = it->list.n == 3 ? a[2] : 1;
  }
  if (step == 0)
    fail(L, it, "range() step must not be zero");
  if (rstop && (start < 0 || step <= 0))
    fail(L, it, "not lowered: a loop with a run-time stop needs a start >= 0 and a step > 0");
  if (!region && skip_block(L, n))
    return;
  int64_t trips = rstop ? INT64_MAX : trips_of(start, stop, step);
  if (trips == 0) {
    emit(L, n, "/* for %s in range(...): no iterations */", n->name);
    return;
  }
  size_t wmark;
  prepare_block(L, n, &n->list, NULL, &wmark);
  const char *cv = cname(L, n->name);
  /* short loops unroll (register indices over their variable fold to
   * registers); a long one is left to the compiler, so that gemm.tile's main
   * loop at K = 8192 or a spin of 2^31 iterations stays a loop. So does a
   * ring's loop (it waits on or arrives at mbarriers: its variable picks a
   * stage, a phase and coordinates in shared memory, not registers) above
   * AG_LOWER_SYNC_UNROLL_MAX trips: unrolled whole, gemm_hopper.tile's 64
   * k-tiles took ptxas 23 s, and attention_hopper.tile's 32 key tiles
   * spilled 1.4 KB in 1.3 MB of code, 4x the time per tile of its causal
   * (run-time trip count) form on the H200 */
  int pipe = trips > AG_LOWER_SYNC_UNROLL_MAX && ag__intrin_sync_loop(n);
  if (trips <= AG_LOWER_UNROLL_MAX && !pipe)
    emit(L, n, "#pragma unroll");
  else if (pipe)
    emit(L, n, "#pragma unroll 1");
  if (rstop) {
    emit(L, n, "for (unsigned %s = %lldu; %s < (unsigned)(%s); %s += %lldu) {", cv,
         (long long)start, cv, rstop, cv, (long long)step);
    stop = INT64_MAX; /* not enumerable: what depends on the variable is not a constant */
  } else if (start >= 0 && step > 0)
    emit(L, n, "for (unsigned %s = %lldu; %s < %lldu; %s += %lldu) {", cv, (long long)start, cv,
         (long long)stop, cv, (long long)step);
  else {
    const char *ic = tmpname(L, "k");
    emit(L, n, "for (long long %s = %lld; %s %s %lld; %s += %lld) {", ic, (long long)start, ic,
         step > 0 ? "<" : ">", (long long)stop, ic, (long long)step);
    emit(L, n, "  const unsigned %s = (unsigned)%s;", cv, ic);
  }
  L->ind++;
  L->depth++;
  L->nested++;
  size_t mark = L->env.n;
  loopv lv = {cv, start, stop, step, start};
  if (ag_vec_push(&L->loops, lv))
    oom(L);
  value *v = vint(L, xs(L, cv));
  bind(L, n->name, v);
  if (region && !L->o->no_markers) {
    emit(L, n, "ARGUS_BEGIN_AT(%s, %s);", region, cv);
    push_region(L, n, region);
  }
  lower_block(L, &n->list);
  if (region && !L->o->no_markers) {
    end_region(L, n, region);
  }
  L->loops.n--;
  L->nested--;
  L->depth--;
  L->ind--;
  emit(L, NULL, "}");
  poison_since(L, mark, fmt(L, "is bound inside the loop at line %d and is not known after it "
                               "(bind it before the loop)", n->line));
  finish_watches(L, n, wmark, 1);
}

/* Roles: how an integer depends on the thread index. TH_WARP: the same in
 * every thread of a warp, different between warps (threadIdx.x / 32 in a
 * block whose rows are whole warps, or one row); TH_LANE: it may differ
 * within a warp (or it is a run-time value Argus cannot follow). */
enum { TH_NONE, TH_WARP, TH_LANE };
static const ag_expr *resolve_cvar(lw *L, const ag_expr *e, int *opaque) {
  *opaque = 0;
  for (int hops = 0; e && e->op == AG_X_SYM && hops < 64; hops++) {
    const cvar *cv = NULL;
    for (size_t i = 0; i < L->loops.n; i++)
      if (!strcmp(L->loops.v[i].cname, e->name))
        return e; /* a loop variable: the same in every thread */
    for (size_t i = 0; i < L->cvars.n && !cv; i++)
      if (!strcmp(L->cvars.v[i].cname, e->name))
        cv = &L->cvars.v[i];
    if (!cv)
      return e;
    if (!cv->tree) {
      *opaque = 1;
      return e;
    }
    e = cv->tree;
  }
  return e;
}
static int thread_dep(lw *L, const ag_expr *e, int depth) {
  int opaque;
  e = resolve_cvar(L, e, &opaque);
  if (!e || opaque || depth > 256)
    return TH_LANE;
  const int64_t *b = L->k->block;
  int rows_are_warps = b[0] % 32 == 0 || (b[1] == 1 && b[2] == 1);
  if (e->op == AG_X_CONST)
    return TH_NONE;
  if (e->op == AG_X_SYM) {
    if (strncmp(e->name, "threadIdx.", 10))
      return TH_NONE; /* sizes, loop variables, the block index */
    return e->name[10] != 'x' && b[0] % 32 == 0 ? TH_WARP : TH_LANE;
  }
  int64_t c;
  if (e->op == AG_X_DIV || e->op == AG_X_SHR) {
    const ag_expr *a = resolve_cvar(L, e->a, &opaque);
    if (!opaque && a->op == AG_X_SYM && !strcmp(a->name, "threadIdx.x") && rows_are_warps &&
        ag_expr_is_const(e->b, &c) &&
        (e->op == AG_X_DIV ? c > 0 && c % 32 == 0 : c >= 5 && c < 32))
      return TH_WARP;
  }
  int x = thread_dep(L, e->a, depth + 1), y = e->b ? thread_dep(L, e->b, depth + 1) : TH_NONE;
  return x > y ? x : y;
}
/* TH_WARP when the condition branches on a warp role (`if wid < 2:`): its
 * comparisons depend on the thread only through the warp index. */
static int cond_dep(lw *L, const ag_tile_node *c) {
  switch (c->kind) {
  case AG_TN_LAND:
  case AG_TN_LOR: {
    int x = cond_dep(L, c->a), y = cond_dep(L, c->b);
    return x > y ? x : y;
  }
  case AG_TN_LNOT: return cond_dep(L, c->a);
  case AG_TN_CMP: {
    value *a = ev(L, c->a), *b = ev(L, c->b);
    if (a->k != V_INT || b->k != V_INT)
      return TH_LANE;
    int x = thread_dep(L, a->x, 0), y = thread_dep(L, b->x, 0);
    return x > y ? x : y;
  }
  default: return TH_LANE;
  }
}

static void lower_if(lw *L, const ag_tile_node *n) {
  value *c = as_cond(L, n->a, ev(L, n->a));
  if (c->bconst >= 0) {
    lower_block(L, c->bconst ? &n->list : &n->list2);
    return;
  }
  if (skip_block(L, n))
    return;
  size_t wmark;
  prepare_block(L, n, &n->list, &n->list2, &wmark);
  /* a branch on a warp role is a role region: ARGUS_ROLE labels it, and a
   * region of the same name spans it (docs/lower.md, "Regions for free") */
  int dep = cond_dep(L, n->a);
  int role = !L->o->no_markers && dep == TH_WARP;
  int split = dep == TH_LANE;
  emit(L, n, "if (%s) {", c->c);
  for (int br = 0; br < 2; br++) {
    const ag_tile_list *b = br ? &n->list2 : &n->list;
    if (br) {
      if (!b->n)
        break;
      emit(L, NULL, "} else {");
    }
    L->ind++;
    L->depth++;
    L->nested++;
    L->lane_split += split;
    size_t mark = L->env.n;
    const char *rname = role ? fmt(L, br ? "role_%d_else" : "role_%d", n->line) : NULL;
    if (rname) {
      emit(L, NULL, "ARGUS_ROLE(%s);", rname);
      emit(L, NULL, "ARGUS_BEGIN(%s);", rname);
      push_region(L, n, rname);
    }
    lower_block(L, b);
    if (rname) {
      end_region(L, NULL, rname);
    }
    L->nested--;
    L->lane_split -= split;
    L->depth--;
    L->ind--;
    poison_since(L, mark, fmt(L, "is bound in a branch of the 'if' at line %d and is not known "
                                 "after it (bind it before the 'if')", n->line));
  }
  emit(L, NULL, "}");
  finish_watches(L, n, wmark, 0);
}

static void lower_stmt(lw *L, const ag_tile_node *n, const char *region) {
  switch (n->kind) {
  case AG_TN_ASSIGN: lower_assign(L, n); break;
  case AG_TN_EXPR:
    if (n->a->kind != AG_TN_CALL)
      fail(L, n->a, "this expression has no effect (did you mean an assignment?)");
    ev(L, n->a);
    break;
  case AG_TN_FOR: lower_for(L, n, region); break;
  case AG_TN_IF: lower_if(L, n); break;
  case AG_TN_ASSERT: break; /* tags and assertions never reach code */
  case AG_TN_ASSUME: {
    if (L->nested)
      fail(L, n, "not lowered: an 'assume' inside a loop or a run-time 'if' (a launch "
                 "precondition is written at the kernel's top level)");
    value *c = as_cond(L, n->a, ev(L, n->a));
    if (c->bconst == 0)
      fail(L, n, "this assumption is false");
    if (c->bconst < 0) {
      if (strstr(c->c, "threadIdx") || strstr(c->c, "blockIdx"))
        fail(L, n, "not lowered: an assumption over the thread or block index cannot be "
                   "checked before a launch");
      char *s = ag_strdup(c->c);
      if (!s || ag_vec_push(&L->assumes, s) || ag_vec_push(&L->assume_lines, n->line)) {
        ag_free(s);
        oom(L);
      }
    }
    break;
  }
  case AG_TN_PASS: break;
  case AG_TN_REGION:
    /* the body is not a scope: it is lowered in place, between the markers */
    if (!L->o->no_markers) {
      for (int i = 0; i < L->nrpath; i++)
        if (!strcmp(L->rpath[i], n->name))
          fail(L, n, "region '%s' inside a region of the same name", n->name);
      emit(L, n, "ARGUS_BEGIN(%s);", n->name);
      push_region(L, n, n->name);
    }
    lower_block(L, &n->list);
    if (!L->o->no_markers) {
      end_region(L, n, n->name);
    }
    break;
  default: fail(L, n, "not a statement");
  }
}
static void lower_block(lw *L, const ag_tile_list *b) {
  for (int i = 0; i < b->n; i++)
    lower_stmt(L, b->v[i], NULL);
}

/* ---------------------------------------------------------------- kernel */
static int add_region(lw *L, const char *kernel, const char *name) {
  char *q = NULL;
  ag_str s = AG_STR_INIT;
  ag_str_puts(&s, kernel);
  for (int i = 0; i < L->nrpath; i++)
    ag_str_printf(&s, "/%s", L->rpath[i]);
  ag_str_printf(&s, "/%s", name);
  for (size_t i = 0; i < L->regions.n; i++)
    if (!s.oom && !strcmp(L->regions.v[i], ag_str_cstr(&s))) {
      ag_str_release(&s);
      return 0; /* the same region again (another marker site) */
    }
  q = s.oom ? NULL : ag_str_detach(&s);
  ag_str_release(&s);
  if (!q || ag_vec_push(&L->regions, q)) {
    ag_free(q);
    oom(L);
  }
  return 0;
}

static const ag_tile_node *find_call(const ag_tile_node *k, const char *name) {
  if (!k->a)
    return NULL;
  for (int i = 0; i < k->a->list.n; i++) {
    const ag_tile_node *c = k->a->list.v[i];
    if (c->kind == AG_TN_CALL && c->a->kind == AG_TN_NAME && !strcmp(c->a->name, name))
      return c;
  }
  return NULL;
}
static int64_t define_value(lw *L, const char *name, int *found) {
  *found = 0;
  for (int i = 0; i < L->o->ndefines; i++) {
    const char *d = L->o->defines[i];
    size_t l = strlen(name);
    if (!strncmp(d, name, l) && d[l] == '=') {
      *found = 1;
      return strtoll(d + l + 1, NULL, 0);
    }
  }
  return 0;
}
static int is_tensor_type(const ag_tile_node *ty) {
  return ty->kind == AG_TN_CALL && ty->a->kind == AG_TN_NAME && !strcmp(ty->a->name, "Tensor");
}
/* Free names of an expression that are not bound: problem sizes. */
static void free_names(lw *L, const ag_tile_node *e) {
  if (!e)
    return;
  if (e->kind == AG_TN_NAME) {
    if (!lookup(L, e->name) && !ag__dt_lookup(e->name)) {
      const char *cn = cname(L, e->name);
      bind(L, e->name, vint(L, xs(L, cn)));
      ag_tile_lparam prm;
      memset(&prm, 0, sizeof prm);
      prm.name = ag_strdup(cn);
      prm.kind = AG_TILE_PARAM_SIZE;
      if (!prm.name || ag_vec_push(&L->params, prm)) {
        ag_free(prm.name);
        oom(L);
      }
    }
    return;
  }
  free_names(L, e->a);
  free_names(L, e->b);
  free_names(L, e->c);
  for (int i = 0; i < e->list.n; i++)
    free_names(L, e->list.v[i]);
}

static void lower_kernel(lw *L, const ag_tile_node *k) {
  ag_str *o = L->out;
  /* constants: --set, then defaults */
  for (int i = 0; i < k->list.n; i++) {
    const ag_tile_node *p = k->list.v[i];
    if (p->a->kind == AG_TN_NAME && !strcmp(p->a->name, "const")) {
      int found;
      int64_t v = define_value(L, p->name, &found);
      if (!found) {
        if (!p->b)
          fail(L, p, "constant '%s' needs a value: '%s: const = 64' (or --set %s=64)", p->name,
               p->name, p->name);
        v = as_const(L, p->b, ev(L, p->b), "a constant's value");
      }
      bind(L, p->name, vint(L, xc(L, v)));
    } else if (!is_tensor_type(p->a)) {
      fail(L, p->a, "a parameter is 'name: Tensor(dims..., dtype)' or 'name: const = value'");
    }
  }
  /* tensors, in order; their free dim names become size parameters, after them */
  for (int i = 0; i < k->list.n; i++) {
    const ag_tile_node *p = k->list.v[i];
    if (!is_tensor_type(p->a))
      continue;
    const ag_tile_node *ty = p->a;
    if (ty->list.n < 2)
      fail(L, ty, "Tensor(d0, ..., dtype) needs at least one dim and a type");
    int dt = as_dtype(L, ty->list.v[ty->list.n - 1]);
    tile *t = zalloc(L, sizeof *t);
    t->sp = SP_G;
    t->dt = dt;
    t->param = 1;
    t->rank = ty->list.n - 1;
    t->ext = zalloc(L, (size_t)t->rank * sizeof *t->ext);
    t->stride = zalloc(L, (size_t)t->rank * sizeof *t->stride);
    ag_tile_lparam prm;
    memset(&prm, 0, sizeof prm);
    prm.kind = AG_TILE_PARAM_TENSOR;
    prm.rank = t->rank;
    prm.dims = ag_calloc((size_t)t->rank, sizeof *prm.dims);
    if (!prm.dims || ag_vec_push(&L->tensors, prm)) {
      ag_free(prm.dims);
      oom(L);
    }
    ag_tile_lparam *tp = &L->tensors.v[L->tensors.n - 1];
    tp->dtype = ag_strdup(ag__dt_name(dt));
    for (int j = 0; j < t->rank; j++) {
      free_names(L, ty->list.v[j]);
      t->ext[j] = as_int(L, ty->list.v[j], ev(L, ty->list.v[j]), "a tensor dim");
      tp->dims[j] = ag_strdup(ctext(L, t->ext[j]));
    }
    const ag_expr *st = xc(L, 1);
    for (int j = t->rank - 1; j >= 0; j--) {
      t->stride[j] = st;
      st = xb(L, AG_X_MUL, st, t->ext[j]);
    }
    t->buf = cname(L, p->name);
    tp->name = ag_strdup(t->buf);
    if (!tp->dtype || !tp->name)
      oom(L);
    value *v = newv(L, V_TILE);
    v->t = t;
    bind(L, p->name, v);
  }
  /* tensors first, then sizes */
  size_t nsizes = L->params.n;
  if (ag_vec_reserve(&L->params, L->params.n + L->tensors.n))
    oom(L);
  for (size_t i = 0; i < L->tensors.n; i++)
    L->params.v[L->params.n++] = L->tensors.v[i];
  L->tensors.n = 0;
  {
    size_t n = L->params.n;
    ag_tile_lparam *re = ag_malloc((n ? n : 1) * sizeof *re);
    if (!re)
      oom(L);
    if (n) { /* no parameters: no array (memcpy from NULL is undefined) */
      memcpy(re, L->params.v + nsizes, (n - nsizes) * sizeof *re);
      memcpy(re + (n - nsizes), L->params.v, nsizes * sizeof *re);
      memcpy(L->params.v, re, n * sizeof *re);
    }
    ag_free(re);
  }
  /* launch shape */
  ag_tile_lkernel *lk = L->k;
  const ag_tile_node *th = find_call(k, "threads"), *gr = find_call(k, "grid");
  if (!th)
    fail(L, k, "kernel '%s' needs @threads(X[, Y[, Z]])", k->name);
  for (int i = 0; i < 3; i++)
    lk->block[i] = i < th->list.n ? as_const(L, th->list.v[i], ev(L, th->list.v[i]),
                                             "a block size") : 1;
  for (int i = 0; i < 3; i++) {
    const char *g = "1u";
    if (gr && i < gr->list.n)
      g = ctext(L, as_int(L, gr->list.v[i], ev(L, gr->list.v[i]), "a grid size"));
    lk->grid[i] = ag_strdup(g);
    if (!lk->grid[i])
      oom(L);
  }
  /* tensor maps: the top-level 'name = tma_map(...)' statements, entry parameters */
  L->uses_tma = ag__tile_uses_tma(k);
  for (int i = 0; i < k->list2.n; i++) {
    const ag_tile_node *st = k->list2.v[i];
    if (st->kind != AG_TN_ASSIGN || st->list.n != 1 || st->list.v[0]->kind != AG_TN_NAME ||
        st->list2.n != 1 || st->list2.v[0]->kind != AG_TN_CALL ||
        st->list2.v[0]->a->kind != AG_TN_NAME || strcmp(st->list2.v[0]->a->name, "tma_map"))
      continue;
    ag_tile_ltmap tm;
    memset(&tm, 0, sizeof tm);
    tm.name = ag_strdup(cname(L, st->list.v[0]->name));
    if (!tm.name || ag_vec_push(&L->tmaps, tm)) {
      ag_free(tm.name);
      oom(L);
    }
  }
  /* the entry */
  ag_str_printf(o, "\n/* kernel %s: block (%lld, %lld, %lld), grid (%s, %s, %s) */\n", k->name,
                (long long)lk->block[0], (long long)lk->block[1], (long long)lk->block[2],
                lk->grid[0], lk->grid[1], lk->grid[2]);
  /* setmaxnreg needs the register count at entry fixed (ptxas ignores it
   * otherwise): one block per SM */
  ag_str_printf(o, "extern \"C\" __global__ void __launch_bounds__(%lld%s) %s(",
                (long long)(lk->block[0] * lk->block[1] * lk->block[2]),
                calls_kind(&k->list2, IK_SETMAXNREG) ? ", 1" : "", k->name);
  for (size_t i = 0; i < L->params.n; i++) {
    const ag_tile_lparam *p = &L->params.v[i];
    if (p->kind == AG_TILE_PARAM_TENSOR)
      ag_str_printf(o, "%s%s *__restrict__ %s", i ? ", " : "",
                    ag__dt_ctype(ag__dt_lookup(p->dtype)), p->name);
    else
      ag_str_printf(o, "%sunsigned %s", i ? ", " : "", p->name);
  }
  for (size_t i = 0; i < L->tmaps.n; i++)
    ag_str_printf(o, "%sconst __grid_constant__ CUtensorMap %s", L->params.n || i ? ", " : "",
                  L->tmaps.v[i].name);
  ag_str_puts(o, ") {\n");
  L->ind = 1;
  emit(L, NULL, "extern __shared__ __align__(1024) unsigned char ag_smem[];");
  /* regions: the main loop is the top-level loop with the most work */
  const ag_tile_list *body = &k->list2;
  int main_i = -1;
  int64_t best = -1;
  for (int i = 0; i < body->n; i++)
    if (body->v[i]->kind == AG_TN_FOR && stmt_cost(body->v[i]) > best) {
      best = stmt_cost(body->v[i]);
      main_i = i;
    }
  int markers = !L->o->no_markers;
  int first_code = -1, last_code = -1;
  for (int i = 0; i < body->n; i++) {
    int kind = body->v[i]->kind;
    if (kind != AG_TN_ASSERT && kind != AG_TN_ASSUME && kind != AG_TN_PASS) {
      if (first_code < 0)
        first_code = i;
      last_code = i;
    }
  }
  for (int i = 0; i < body->n; i++) {
    const ag_tile_node *s = body->v[i];
    if (markers && main_i >= 0 && i == first_code && i < main_i) {
      emit(L, s, "ARGUS_BEGIN(prologue);");
      push_region(L, s, "prologue");
    }
    if (markers && main_i >= 0 && i == main_i + 1 && i <= last_code) {
      emit(L, s, "ARGUS_BEGIN(epilogue);");
      push_region(L, s, "epilogue");
    }
    const char *region = NULL;
    if (markers && s->kind == AG_TN_FOR)
      region = i == main_i ? "mainloop" : fmt(L, "loop_%s_%d", s->name, s->line);
    lower_stmt(L, s, region);
    if (markers && main_i >= 0 && i == main_i - 1 && first_code >= 0 && first_code < main_i) {
      end_region(L, NULL, "prologue");
    }
  }
  if (markers && main_i >= 0 && last_code > main_i) {
    end_region(L, NULL, "epilogue");
  }
  L->ind = 0;
  ag_str_puts(o, "}\n");
  lk->smem_bytes = (L->smem_top + 127) / 128 * 128;
  if (lk->smem_bytes > 227 * 1024)
    fail(L, k, "shared memory use %lld bytes exceeds the 227 KiB a block may have",
         (long long)lk->smem_bytes);
  /* host side: the launch shape and the preconditions (each `assume`) */
  ag_str sizes = AG_STR_INIT;
  for (size_t i = 0; i < L->params.n; i++)
    if (L->params.v[i].kind == AG_TILE_PARAM_SIZE)
      ag_str_printf(&sizes, "%sunsigned %s", sizes.len ? ", " : "", L->params.v[i].name);
  const char *sz = sizes.len ? ag_str_cstr(&sizes) : "void";
  ag_str_puts(o, "#if !defined(__CUDACC_RTC__)\n");
  ag_str_printf(o, "/* %s: %lld bytes of dynamic shared memory; the grid for these sizes */\n",
                k->name, (long long)lk->smem_bytes);
  ag_str_printf(o, "static const unsigned %s_smem_bytes = %lldu;\n", k->name,
                (long long)lk->smem_bytes);
  ag_str_printf(o, "static inline void %s_grid(%s%sunsigned grid[3]) {\n", k->name,
                sizes.len ? sz : "", sizes.len ? ", " : "");
  for (int i = 0; i < 3; i++)
    ag_str_printf(o, "  grid[%d] = %s;\n", i, lk->grid[i]);
  ag_str_puts(o, "}\n");
  ag_str_printf(o, "/* 0 when every launch precondition of %s holds, else the DSL line of the "
                   "first that fails */\n", k->name);
  ag_str_printf(o, "static inline int %s_preconditions(%s) {\n", k->name, sz);
  for (size_t i = 0; i < L->assumes.n; i++)
    ag_str_printf(o, "  if (!(%s)) return %d;\n", L->assumes.v[i], L->assume_lines.v[i]);
  ag_str_puts(o, "  return 0;\n}\n#endif\n");
  ag_str_release(&sizes);
  if (o->oom)
    oom(L);
}

static const char prelude[] =
    "/* Lowered by argus from a tile program (docs/lower.md). Compile with NVRTC or nvcc\n"
    " * for sm_90; -DARGUS_MARKERS=1 turns the region markers on. */\n"
    "#include \"argus/region.cuh\"\n"
    "typedef unsigned long long ag_size;\n"
    "struct alignas(16) ag_u128 { unsigned w[4]; };\n"
    "struct alignas(32) ag_u256 { unsigned w[8]; };\n"
    "#define AG_GL(T, p, off) (*(T *)((unsigned char *)(p) + (off)))\n"
    "#define AG_SH(T, p, off) (*(T *)((p) + (off)))\n"
    "template <class T, class A> static __device__ __forceinline__ T ag_ld(const A *a, unsigned off) {\n"
    "  T v; memcpy(&v, (const unsigned char *)a + off, sizeof v); return v;\n"
    "}\n"
    "template <class T, class A> static __device__ __forceinline__ void ag_st(A *a, unsigned off, T v) {\n"
    "  memcpy((unsigned char *)a + off, &v, sizeof v);\n"
    "}\n"
    "template <class T, class F> static __device__ __forceinline__ T ag_bitcast(F f) {\n"
    "  static_assert(sizeof(T) == sizeof(F), \"same size\");\n"
    "  T t; memcpy(&t, &f, sizeof t); return t;\n"
    "}\n"
    "template <class T>\n"
    "static __device__ __forceinline__ T ag_f2i(double f, double lo, double hi) {\n"
    "  return f != f ? (T)0 : f <= lo ? (T)lo : f >= hi ? (T)~(T)lo : (T)f;\n"
    "}\n"
    "static __device__ __forceinline__ unsigned ag_shl(unsigned x, unsigned n) {\n"
    "  return n < 32u ? x << n : 0u;\n"
    "}\n"
    "static __device__ __forceinline__ unsigned ag_shr(unsigned x, unsigned n) {\n"
    "  return n < 32u ? x >> n : 0u;\n"
    "}\n"
    "static __device__ __forceinline__ float ag_bf16_f32(unsigned short h) {\n"
    "  return __uint_as_float((unsigned)h << 16);\n"
    "}\n"
    "static __device__ __forceinline__ unsigned short ag_f32_bf16(float f) {\n"
    "  unsigned u = __float_as_uint(f);\n"
    "  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);\n"
    "  u += 0x7fffu + ((u >> 16) & 1u);\n"
    "  return (unsigned short)(u >> 16);\n"
    "}\n"
    "static __device__ __forceinline__ float ag_f16_f32(unsigned short h) {\n"
    "  float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h)); return f;\n"
    "}\n"
    "static __device__ __forceinline__ unsigned short ag_f32_f16(float f) {\n"
    "  unsigned short h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h;\n"
    "}\n"
    "static __device__ __forceinline__ unsigned ag_saddr(const void *p) {\n"
    "  return (unsigned)__cvta_generic_to_shared(p);\n"
    "}\n"
    "/* a wgmma matrix descriptor: start, LBO, SBO >> 4; mode 0 none, 1 128B, 2 64B, 3 32B */\n"
    "static __device__ __forceinline__ unsigned long long ag_wgmma_desc(unsigned a, unsigned lbo,\n"
    "                                                                   unsigned sbo, unsigned mode) {\n"
    "  return (unsigned long long)((a & 0x3FFFFu) >> 4) | ((unsigned long long)(lbo >> 4) << 16) |\n"
    "         ((unsigned long long)(sbo >> 4) << 32) | ((unsigned long long)mode << 62);\n"
    "}\n"
    "template <int N> static __device__ __forceinline__ void ag_cp_async(void *dst, const void *src) {\n"
    "  if (N == 16)\n"
    "    asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16;\" :: \"r\"(ag_saddr(dst)), \"l\"(src) : \"memory\");\n"
    "  else\n"
    "    asm volatile(\"cp.async.ca.shared.global [%0], [%1], %2;\" :: \"r\"(ag_saddr(dst)), \"l\"(src), \"n\"(N) : \"memory\");\n"
    "}\n"
    /* mbarriers and the 1-D bulk copy (PTX ISA 8.0, sm_90) */
    "static __device__ __forceinline__ void ag_mbar_init(void *bar, unsigned count) {\n"
    "  asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\" :: \"r\"(ag_saddr(bar)), \"r\"(count) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void ag_mbar_fence_init(void) {\n"
    "  asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void ag_mbar_arrive(void *bar) {\n"
    "  asm volatile(\"{\\n .reg .b64 st;\\n mbarrier.arrive.shared::cta.b64 st, [%0];\\n}\" :: \"r\"(ag_saddr(bar)) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void ag_mbar_expect_tx(void *bar, unsigned bytes) {\n"
    "  asm volatile(\"{\\n .reg .b64 st;\\n mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\\n}\" :: \"r\"(ag_saddr(bar)), \"r\"(bytes) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void ag_mbar_wait(void *bar, unsigned parity) {\n"
    "  asm volatile(\"{\\n .reg .pred p;\\n AG_WAIT:\\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\\n @!p bra AG_WAIT;\\n}\" :: \"r\"(ag_saddr(bar)), \"r\"(parity) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void ag_cp_async_mbar_arrive(void *bar) {\n"
    "  asm volatile(\"cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\" :: \"r\"(ag_saddr(bar)) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void ag_bulk_copy(void *dst, const void *src, unsigned bytes, void *bar) {\n"
    "  asm volatile(\"cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\" :: \"r\"(ag_saddr(dst)), \"l\"(src), \"r\"(bytes), \"r\"(ag_saddr(bar)) : \"memory\");\n"
    "}\n"
    /* TMA tensor copies (PTX ISA 8.0, sm_90): the map is a __grid_constant__ CUtensorMap
     * parameter, addressed generically; coordinates innermost first */
    "#ifndef CU_TENSOR_MAP_NUM_QWORDS\n"
    "#define CU_TENSOR_MAP_NUM_QWORDS 16\n"
    "typedef struct CUtensorMap_st { alignas(64) unsigned long long opaque[CU_TENSOR_MAP_NUM_QWORDS]; } CUtensorMap;\n"
    "#endif\n"
    "static __device__ __forceinline__ void ag_tma_load1(void *dst, const CUtensorMap *map, void *bar, int c0) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2}], [%3];\" :: \"r\"(ag_saddr(dst)), \"l\"((unsigned long long)map), \"r\"(c0), \"r\"(ag_saddr(bar)) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void ag_tma_store1(const CUtensorMap *map, const void *src, int c0) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [%0, {%2}], [%1];\" :: \"l\"((unsigned long long)map), \"r\"(ag_saddr(src)), \"r\"(c0) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void ag_tma_load2(void *dst, const CUtensorMap *map, void *bar, int c0, int c1) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\" :: \"r\"(ag_saddr(dst)), \"l\"((unsigned long long)map), \"r\"(c0), \"r\"(c1), \"r\"(ag_saddr(bar)) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void ag_tma_store2(const CUtensorMap *map, const void *src, int c0, int c1) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\" :: \"l\"((unsigned long long)map), \"r\"(ag_saddr(src)), \"r\"(c0), \"r\"(c1) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void ag_tma_load3(void *dst, const CUtensorMap *map, void *bar, int c0, int c1, int c2) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\" :: \"r\"(ag_saddr(dst)), \"l\"((unsigned long long)map), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(ag_saddr(bar)) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void ag_tma_store3(const CUtensorMap *map, const void *src, int c0, int c1, int c2) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];\" :: \"l\"((unsigned long long)map), \"r\"(ag_saddr(src)), \"r\"(c0), \"r\"(c1), \"r\"(c2) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void ag_tma_load4(void *dst, const CUtensorMap *map, void *bar, int c0, int c1, int c2, int c3) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];\" :: \"r\"(ag_saddr(dst)), \"l\"((unsigned long long)map), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(c3), \"r\"(ag_saddr(bar)) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void ag_tma_store4(const CUtensorMap *map, const void *src, int c0, int c1, int c2, int c3) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];\" :: \"l\"((unsigned long long)map), \"r\"(ag_saddr(src)), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(c3) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void ag_tma_load5(void *dst, const CUtensorMap *map, void *bar, int c0, int c1, int c2, int c3, int c4) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], [%7];\" :: \"r\"(ag_saddr(dst)), \"l\"((unsigned long long)map), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(c3), \"r\"(c4), \"r\"(ag_saddr(bar)) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void ag_tma_store5(const CUtensorMap *map, const void *src, int c0, int c1, int c2, int c3, int c4) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.5d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];\" :: \"l\"((unsigned long long)map), \"r\"(ag_saddr(src)), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(c3), \"r\"(c4) : \"memory\");\n"
    "}\n";

/* One kernel; 0, or 1 after an error (diagnosed). */
static int lower_one(lw *L, const ag_tile_node *k) {
  if (setjmp(L->jb))
    return 1;
  /* module constants, in order */
  const ag_tile_program *p = L->p;
  for (int j = 0; j < p->top.n; j++) {
    const ag_tile_node *c = p->top.v[j];
    if (c->kind == AG_TN_ASSIGN && c->list.n == 1 && c->list.v[0]->kind == AG_TN_NAME &&
        c->list2.n == 1) {
      value *v = ev(L, c->list2.v[0]);
      bind(L, c->list.v[0]->name, vint(L, xc(L, as_const(L, c, v, "a module constant"))));
    }
  }
  L->k->name = ag_strdup(k->name);
  if (!L->k->name)
    oom(L);
  lower_kernel(L, k);
  return 0;
}

static void free_params(ag_tile_lparam *p, int n) {
  for (int i = 0; i < n; i++) {
    ag_free(p[i].name);
    ag_free(p[i].dtype);
    for (int j = 0; j < p[i].rank; j++)
      ag_free(p[i].dims[j]);
    ag_free(p[i].dims);
  }
  ag_free(p);
}

static void free_kernel(ag_tile_lkernel *k) {
  ag_free(k->name);
  for (int i = 0; i < 3; i++)
    ag_free(k->grid[i]);
  free_params(k->params, k->nparams);
  for (int i = 0; i < k->nassumes; i++)
    ag_free(k->assumes[i]);
  ag_free(k->assumes);
  ag_free(k->assume_lines);
  for (int i = 0; i < k->nregions; i++)
    ag_free(k->regions[i]);
  ag_free(k->regions);
  for (int i = 0; i < k->ntmaps; i++)
    ag_free(k->tmaps[i].name);
  ag_free(k->tmaps);
}

void ag_tile_lowered_free(ag_tile_lowered *l) {
  if (!l)
    return;
  for (int i = 0; i < l->nkernels; i++)
    free_kernel(&l->kernels[i]);
  ag_free(l->kernels);
  ag_free(l->cuda);
  ag_free(l);
}

int ag_tile_lower(const ag_tile_program *p, const ag_tile_lower_opts *o, ag_diags *d,
                  ag_tile_lowered **out) {
  *out = NULL;
  ag_tile_lower_opts none;
  memset(&none, 0, sizeof none);
  if (!o)
    o = &none;
  int nk = 0;
  for (int i = 0; i < p->top.n; i++)
    if (p->top.v[i]->kind == AG_TN_KERNEL && (!o->kernel || !strcmp(p->top.v[i]->name, o->kernel)))
      nk++;
  if (nk == 0) {
    ag_diags_add(d, AG_SEV_ERROR, p->file, 0, 0, NULL, 0,
                 o->kernel ? "no kernel named '%s' in the program" : "the program has no kernel%s",
                 o->kernel ? o->kernel : "");
    return AG_EPARSE;
  }
  ag_tile_lowered *res = ag_calloc(1, sizeof *res);
  ag_str src = AG_STR_INIT;
  ag_arena ar;
  ag_arena_init(&ar, 0);
  int rc = 0;
  if (!res || !(res->kernels = ag_calloc((size_t)nk, sizeof *res->kernels))) {
    rc = AG_ENOMEM;
    goto out;
  }
  ag_str_puts(&src, prelude);
  for (int i = 0; i < p->top.n && !rc; i++) {
    const ag_tile_node *k = p->top.v[i];
    if (k->kind != AG_TN_KERNEL || (o->kernel && strcmp(k->name, o->kernel)))
      continue;
    lw *L = ag_calloc(1, sizeof *L);
    if (!L) {
      rc = AG_ENOMEM;
      break;
    }
    L->p = p;
    L->d = d;
    L->o = o;
    L->ar = &ar;
    L->out = &src;
    L->k = &res->kernels[res->nkernels++];
    ag_layout_ctx_init(&L->lc, &ar);
    if (lower_one(L, k))
      rc = L->oom ? AG_ENOMEM : AG_EPARSE;
    ag_tile_lkernel *lk = L->k;
    lk->params = L->params.v;
    lk->nparams = (int)L->params.n;
    lk->assumes = L->assumes.v;
    lk->assume_lines = L->assume_lines.v;
    lk->nassumes = (int)L->assumes.n;
    lk->regions = L->regions.v;
    lk->nregions = (int)L->regions.n;
    lk->tmaps = L->tmaps.v;
    lk->ntmaps = (int)L->tmaps.n;
    free_params(L->tensors.v, (int)L->tensors.n);
    ag_vec_free(&L->env);
    ag_vec_free(&L->cvars);
    ag_vec_free(&L->loops);
    ag_vec_free(&L->used);
    ag_vec_free(&L->watches);
    ag_layout_ctx_release(&L->lc);
    ag_free(L);
  }
  if (!rc && src.oom)
    rc = AG_ENOMEM;
  if (!rc) {
    res->len = src.len;
    res->cuda = ag_str_detach(&src);
  }
out:
  ag_str_release(&src);
  ag_arena_release(&ar);
  if (rc) {
    ag_tile_lowered_free(res);
    return rc;
  }
  *out = res;
  return 0;
}
