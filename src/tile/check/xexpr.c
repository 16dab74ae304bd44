/*
 * xexpr.c — what the checker adds to the layout module's symbolic integer
 * expressions: substitution of a symbol, interval bounds over the thread
 * index, evaluation for a concrete thread, and boolean conditions.
 *
 * Expressions are DAGs with heavy sharing (hash-consed); every walk here is
 * memoized per call so it is linear in the number of distinct nodes.
 */
#include "check_int.h"

#include <string.h>

_Noreturn void ag__ck_oom(ag__ck *c) {
  c->fail_rc = AG_ENOMEM;
  longjmp(c->fail, 1);
}

void *ag__ck_alloc(ag__ck *c, size_t n) {
  void *p = ag_arena_alloc(&c->arena, n);
  if (!p)
    ag__ck_oom(c);
  return p;
}

const char *ag__ck_strdup(ag__ck *c, const char *s) {
  char *r = ag_arena_strdup(&c->arena, s);
  if (!r)
    ag__ck_oom(c);
  return r;
}

const ag_expr *ag__x(ag__ck *c, ag_expr_op op, const ag_expr *a, const ag_expr *b) {
  const ag_expr *r = ag_expr_bin(&c->lc, op, a, b);
  if (!r)
    ag__ck_oom(c);
  return r;
}

const ag_expr *ag__xc(ag__ck *c, int64_t v) {
  const ag_expr *r = ag_expr_const(&c->lc, v);
  if (!r)
    ag__ck_oom(c);
  return r;
}

/* ----------------------------------------------------------- substitution */
static const ag_expr *subst_rec(ag__ck *c, ag_map *memo, const ag_expr *e, const ag_expr *sym,
                                const ag_expr *by) {
  if (e == sym)
    return by;
  if (e->op == AG_X_CONST || e->op == AG_X_SYM)
    return e;
  const ag_expr *m = ag_map_get(memo, &e, sizeof e);
  if (m)
    return m;
  const ag_expr *a = subst_rec(c, memo, e->a, sym, by);
  const ag_expr *b = subst_rec(c, memo, e->b, sym, by);
  const ag_expr *r = (a == e->a && b == e->b) ? e : ag__x(c, e->op, a, b);
  if (ag_map_put(memo, &e, sizeof e, (void *)r))
    ag__ck_oom(c);
  return r;
}

const ag_expr *ag__xsubst(ag__ck *c, const ag_expr *e, const ag_expr *sym, const ag_expr *by) {
  if (!ag__xdepends(e, sym->name))
    return e;
  ag_map memo;
  ag_map_init(&memo);
  /* the memo is released on the normal path; on out-of-memory the check is
   * abandoned and the leak of one small map is bounded */
  const ag_expr *r = subst_rec(c, &memo, e, sym, by);
  ag_map_release(&memo);
  return r;
}

static int depends_rec(const ag_expr *e, const char *sym, ag_map *seen) {
  if (e->op == AG_X_CONST)
    return 0;
  if (e->op == AG_X_SYM)
    return strcmp(e->name, sym) == 0;
  if (ag_map_has(seen, &e, sizeof e))
    return 0;
  if (depends_rec(e->a, sym, seen) || depends_rec(e->b, sym, seen))
    return 1;
  ag_map_put(seen, &e, sizeof e, (void *)e);
  return 0;
}

int ag__xdepends(const ag_expr *e, const char *sym) {
  if (e->op == AG_X_CONST)
    return 0;
  if (e->op == AG_X_SYM)
    return strcmp(e->name, sym) == 0;
  ag_map seen;
  ag_map_init(&seen);
  int r = depends_rec(e, sym, &seen);
  ag_map_release(&seen);
  return r;
}

/* --------------------------------------------------------------- bounds */
typedef struct ival {
  int ok;
  int64_t lo, hi;
} ival;

static int64_t pow2_ceil_minus1(int64_t v) {
  int64_t r = 0;
  while (r < v && r < INT64_MAX / 2)
    r = r * 2 + 1;
  return r;
}

static ival bounds_rec(ag__ck *c, const ag_expr *e, ag_map *memo, ival *store, int *nstore,
                       int cap) {
  ival r = {0, 0, 0};
  if (e->op == AG_X_CONST) {
    r.ok = 1;
    r.lo = r.hi = e->value;
    return r;
  }
  if (e->op == AG_X_SYM) {
    if (strcmp(e->name, "tid") == 0) {
      r.ok = 1;
      r.lo = 0;
      r.hi = c->nthreads - 1;
    }
    return r;
  }
  ival *m = ag_map_get(memo, &e, sizeof e);
  if (m)
    return *m;
  ival a = bounds_rec(c, e->a, memo, store, nstore, cap);
  ival b = bounds_rec(c, e->b, memo, store, nstore, cap);
  if (!a.ok || !b.ok)
    goto out;
  const int64_t big = (int64_t)1 << 40;
  if (a.lo < -big || a.hi > big || b.lo < -big || b.hi > big)
    goto out;
  switch (e->op) {
  case AG_X_ADD: r.ok = 1; r.lo = a.lo + b.lo; r.hi = a.hi + b.hi; break;
  case AG_X_SUB: r.ok = 1; r.lo = a.lo - b.hi; r.hi = a.hi - b.lo; break;
  case AG_X_MUL: {
    int64_t p[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
    r.ok = 1;
    r.lo = r.hi = p[0];
    for (int i = 1; i < 4; i++) {
      if (p[i] < r.lo) r.lo = p[i];
      if (p[i] > r.hi) r.hi = p[i];
    }
    break;
  }
  case AG_X_DIV:
    if (b.lo == b.hi && b.lo > 0 && a.lo >= 0) {
      r.ok = 1;
      r.lo = a.lo / b.lo;
      r.hi = a.hi / b.lo;
    }
    break;
  case AG_X_MOD:
    if (b.lo == b.hi && b.lo > 0 && a.lo >= 0) {
      r.ok = 1;
      if (a.hi - a.lo < b.lo && a.lo % b.lo <= a.hi % b.lo) {
        r.lo = a.lo % b.lo;
        r.hi = a.hi % b.lo;
      } else {
        r.lo = 0;
        r.hi = b.lo - 1;
      }
    }
    break;
  case AG_X_AND:
    if (a.lo >= 0 && b.lo >= 0) {
      r.ok = 1;
      r.lo = 0;
      r.hi = a.hi < b.hi ? a.hi : b.hi;
    }
    break;
  case AG_X_OR:
  case AG_X_XOR:
    if (a.lo >= 0 && b.lo >= 0) {
      r.ok = 1;
      r.lo = 0;
      r.hi = pow2_ceil_minus1(a.hi > b.hi ? a.hi : b.hi);
    }
    break;
  case AG_X_SHL:
    if (b.lo == b.hi && b.lo >= 0 && b.lo < 20 && a.lo >= 0) {
      r.ok = 1;
      r.lo = a.lo << b.lo;
      r.hi = a.hi << b.lo;
    }
    break;
  case AG_X_SHR:
    if (b.lo == b.hi && b.lo >= 0 && b.lo < 63 && a.lo >= 0) {
      r.ok = 1;
      r.lo = a.lo >> b.lo;
      r.hi = a.hi >> b.lo;
    }
    break;
  default:
    break;
  }
out:
  if (*nstore < cap) {
    store[*nstore] = r;
    if (ag_map_put(memo, &e, sizeof e, &store[*nstore]) == 0)
      (*nstore)++;
  }
  return r;
}

int ag__xbounds(ag__ck *c, const ag_expr *e, int64_t *lo, int64_t *hi) {
  enum { CAP = 4096 };
  ival *store = ag_malloc(CAP * sizeof *store);
  if (!store)
    ag__ck_oom(c);
  int nstore = 0;
  ag_map memo;
  ag_map_init(&memo);
  ival r = bounds_rec(c, e, &memo, store, &nstore, CAP);
  ag_map_release(&memo);
  ag_free(store);
  *lo = r.lo;
  *hi = r.hi;
  return r.ok ? 0 : AG_ENOTFOUND;
}

static int tid_env(void *ud, const char *name, int64_t *v) {
  if (strcmp(name, "tid") == 0) {
    *v = *(const int64_t *)ud;
    return 0;
  }
  return AG_ENOTFOUND;
}

int ag__xeval_tid(const ag_expr *e, int64_t t, int64_t *out) {
  return ag_expr_eval(e, tid_env, &t, out);
}

void ag__xprint(const ag_expr *e, ag_str *out) { ag_expr_print(e, out); }

/* ------------------------------------------------------------- conditions */
static ag__bx *bnew(ag__ck *c, ag__bxk k) {
  ag__bx *b = ag__ck_alloc(c, sizeof *b);
  b->k = k;
  return b;
}

const ag__bx *ag__bconst(ag__ck *c, int v) {
  static const ag__bx t = {BX_CONST, 1, AG_OP_NONE, NULL, NULL, NULL, NULL};
  static const ag__bx f = {BX_CONST, 0, AG_OP_NONE, NULL, NULL, NULL, NULL};
  (void)c;
  return v ? &t : &f;
}

int ag__bis_const(const ag__bx *b, int *v) {
  if (b->k != BX_CONST)
    return 0;
  if (v)
    *v = b->value;
  return 1;
}

const ag__bx *ag__bcmp(ag__ck *c, ag_tile_op op, const ag_expr *a, const ag_expr *b) {
  int64_t va, vb;
  if (ag_expr_is_const(a, &va) && ag_expr_is_const(b, &vb)) {
    uint64_t ua = (uint64_t)va, ub = (uint64_t)vb; /* unsigned, as in the solver */
    int r = 0;
    switch (op) {
    case AG_OP_EQ: r = ua == ub; break;
    case AG_OP_NE: r = ua != ub; break;
    case AG_OP_LT: r = ua < ub; break;
    case AG_OP_LE: r = ua <= ub; break;
    case AG_OP_GT: r = ua > ub; break;
    case AG_OP_GE: r = ua >= ub; break;
    default: break;
    }
    return ag__bconst(c, r);
  }
  if (a == b && (op == AG_OP_EQ || op == AG_OP_LE || op == AG_OP_GE))
    return ag__bconst(c, 1);
  if (a == b && (op == AG_OP_NE || op == AG_OP_LT || op == AG_OP_GT))
    return ag__bconst(c, 0);
  ag__bx *r = bnew(c, BX_CMP);
  r->op = op;
  r->a = a;
  r->b = b;
  return r;
}

const ag__bx *ag__band(ag__ck *c, const ag__bx *x, const ag__bx *y) {
  int v;
  if (!x) return y;
  if (!y) return x;
  if (ag__bis_const(x, &v)) return v ? y : x;
  if (ag__bis_const(y, &v)) return v ? x : y;
  if (x == y) return x;
  ag__bx *r = bnew(c, BX_AND);
  r->x = x;
  r->y = y;
  return r;
}

const ag__bx *ag__bor(ag__ck *c, const ag__bx *x, const ag__bx *y) {
  int v;
  if (ag__bis_const(x, &v)) return v ? x : y;
  if (ag__bis_const(y, &v)) return v ? y : x;
  if (x == y) return x;
  ag__bx *r = bnew(c, BX_OR);
  r->x = x;
  r->y = y;
  return r;
}

const ag__bx *ag__bnot(ag__ck *c, const ag__bx *x) {
  int v;
  if (ag__bis_const(x, &v))
    return ag__bconst(c, !v);
  if (x->k == BX_NOT)
    return x->x;
  ag__bx *r = bnew(c, BX_NOT);
  r->x = x;
  return r;
}

const ag__bx *ag__bsubst(ag__ck *c, const ag__bx *b, const ag_expr *sym, const ag_expr *by) {
  if (!b)
    return NULL;
  switch (b->k) {
  case BX_CONST: return b;
  case BX_CMP:
    return ag__bcmp(c, b->op, ag__xsubst(c, b->a, sym, by), ag__xsubst(c, b->b, sym, by));
  case BX_AND:
    return ag__band(c, ag__bsubst(c, b->x, sym, by), ag__bsubst(c, b->y, sym, by));
  case BX_OR:
    return ag__bor(c, ag__bsubst(c, b->x, sym, by), ag__bsubst(c, b->y, sym, by));
  case BX_NOT: return ag__bnot(c, ag__bsubst(c, b->x, sym, by));
  }
  return b;
}

int ag__beval_tid(const ag__bx *b, int64_t t) {
  if (!b)
    return 1;
  switch (b->k) {
  case BX_CONST: return b->value;
  case BX_CMP: {
    int64_t va, vb;
    if (ag__xeval_tid(b->a, t, &va) || ag__xeval_tid(b->b, t, &vb))
      return -1;
    uint64_t ua = (uint64_t)va, ub = (uint64_t)vb;
    switch (b->op) {
    case AG_OP_EQ: return ua == ub;
    case AG_OP_NE: return ua != ub;
    case AG_OP_LT: return ua < ub;
    case AG_OP_LE: return ua <= ub;
    case AG_OP_GT: return ua > ub;
    case AG_OP_GE: return ua >= ub;
    default: return -1;
    }
  }
  case BX_AND: {
    int x = ag__beval_tid(b->x, t), y = ag__beval_tid(b->y, t);
    if (x == 0 || y == 0) return 0;
    return (x == 1 && y == 1) ? 1 : -1;
  }
  case BX_OR: {
    int x = ag__beval_tid(b->x, t), y = ag__beval_tid(b->y, t);
    if (x == 1 || y == 1) return 1;
    return (x == 0 && y == 0) ? 0 : -1;
  }
  case BX_NOT: {
    int x = ag__beval_tid(b->x, t);
    return x < 0 ? -1 : !x;
  }
  }
  return -1;
}
