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

/* q or q + k, for the iteration counter q of a summarized loop (loop.c) */
static int is_iteration(const ag_expr *e) {
  if (e->op == AG_X_ADD && ag_expr_is_const(e->b, NULL))
    e = e->a;
  return e->op == AG_X_SYM && strstr(e->name, "#q") != NULL;
}

/* floor division (the remainder a - m * fdiv(a, m) is in [0, m) for m > 0) */
static int64_t fdiv(int64_t a, int64_t m) { return a >= 0 ? a / m : -((-a + m - 1) / m); }

/* (v + k) % m for the iteration v of a summarized loop being checked, whose
 * facts say v = P*q + r0 and vmin <= v < 2^31 (loop.c), and m | P: the
 * stage, (r0 + k) mod m. Sound in 32-bit arithmetic when m is a power of two
 * (2^32 is a multiple of it), else when v + k stays in [0, 2^32) for every v
 * the facts allow; NULL when it does not apply. */
static const ag_expr *fold_stage(ag__ck *c, const ag_expr *a, int64_t m) {
  int64_t k = 0, d = 1;
  /* ((v + k) / d) % m, the phase parity (i / K) % 2 of a K-stage ring, with
   * d*m | P: v + k = P*q + r0 + k and d | P give (r0 + k) / d mod m, when
   * v + k cannot wrap (unsigned division) */
  if (a->op == AG_X_DIV && ag_expr_is_const(a->b, &d) && d > 1 && d <= (1 << 16)) {
    a = a->a;
    m *= d;
  } else
    d = 1;
  if (a->op == AG_X_ADD && ag_expr_is_const(a->b, &k))
    a = a->a;
  if (a->op != AG_X_SYM || k < -((int64_t)1 << 40) || k > ((int64_t)1 << 40))
    return NULL;
  const ag__iterq *it = c->iters;
  while (it && it->v != a)
    it = it->up;
  if (!it || !it->P || it->P % m != 0)
    return NULL;
  if ((d > 1 || (m & (m - 1)) != 0) &&
      (it->vmin + k < 0 || ((int64_t)1 << 31) - 1 + k >= ((int64_t)1 << 32)))
    return NULL;
  int64_t r = it->r0 + k;
  if (d > 1) {
    int64_t md = m / d;
    r = fdiv(r, d);
    return ag__xc(c, r - fdiv(r, md) * md);
  }
  return ag__xc(c, r - fdiv(r, m) * m);
}

const ag_expr *ag__x(ag__ck *c, ag_expr_op op, const ag_expr *a, const ag_expr *b) {
  int64_t m, k, r0;
  if (op == AG_X_MOD && ag_expr_is_const(b, &m) && m > 1 && (m & (m - 1)) == 0 &&
      a->op == AG_X_ADD && ag_expr_is_const(a->b, &r0) && a->a->op == AG_X_MUL &&
      ag_expr_is_const(a->a->b, &k) && k % m == 0)
    /* (q * k + r) % m with m | k, m a power of two: r % m, also in wrapping
     * 32-bit arithmetic (a summarized loop's stage index) */
    return ag__xc(c, r0 & (m - 1));
  if (op == AG_X_MOD && ag_expr_is_const(b, &m) && m > 1 && (m & (m - 1)) == 0 &&
      a->op == AG_X_MUL && ag_expr_is_const(a->b, &k) && k % m == 0)
    return ag__xc(c, 0);
  if (op == AG_X_MOD && ag_expr_is_const(b, &m) && m > 1 && c->iters) {
    const ag_expr *f = fold_stage(c, a, m);
    if (f)
      return f;
  }
  if (op == AG_X_ADD && a->op == AG_X_MUL && ag_expr_is_const(b, &r0) &&
      ag_expr_is_const(a->b, &m) && m > 1 && (m & (m - 1)) == 0 && (r0 < 0 || r0 >= m) &&
      is_iteration(a->a)) {
    /* a summarized iteration P*q + c keeps 0 <= c < P: P*(q + k) + c', so
     * the stage stays in the low bits (ORs for the solver) and equal
     * iterations are the same expression */
    int64_t k2 = fdiv(r0, m);
    return ag__x(c, AG_X_ADD, ag__x(c, AG_X_MUL, ag__x(c, AG_X_ADD, a->a, ag__xc(c, k2)), a->b),
                 ag__xc(c, r0 - k2 * m));
  }
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

/* ------------------------------------------------------------ alignment */
static int64_t lowbit(int64_t v) {
  if (v == 0)
    return (int64_t)1 << 40;
  return v & -v;
}

static int64_t align_rec(ag_map *memo, const ag_expr *e, int depth);

static int64_t align_node(ag_map *memo, const ag_expr *e, int depth) {
  int64_t a = align_rec(memo, e->a, depth + 1), b, k;
  switch (e->op) {
  case AG_X_ADD:
  case AG_X_SUB:
  case AG_X_XOR:
  case AG_X_OR:
    b = align_rec(memo, e->b, depth + 1);
    return a < b ? a : b;
  case AG_X_MUL:
    b = align_rec(memo, e->b, depth + 1);
    return (a > ((int64_t)1 << 40) / b) ? (int64_t)1 << 40 : a * b;
  case AG_X_AND:
    b = align_rec(memo, e->b, depth + 1);
    return a > b ? a : b;
  case AG_X_MOD:
    if (ag_expr_is_const(e->b, &k) && k > 0 && (k & (k - 1)) == 0)
      return a < k ? a : k;
    return 1;
  case AG_X_SHL:
    if (ag_expr_is_const(e->b, &k) && k >= 0 && k < 30)
      return a << k;
    return 1;
  case AG_X_SHR:
    if (ag_expr_is_const(e->b, &k) && k >= 0 && k < 62) {
      int64_t r = a >> k;
      return r < 1 ? 1 : r;
    }
    return 1;
  default:
    return 1;
  }
}

static int64_t align_rec(ag_map *memo, const ag_expr *e, int depth) {
  if (e->op == AG_X_CONST)
    return lowbit(e->value < 0 ? -e->value : e->value);
  if (e->op == AG_X_SYM || depth > 200)
    return 1;
  void *hit = ag_map_get(memo, &e, sizeof e);
  if (hit)
    return (int64_t)(intptr_t)hit;
  int64_t r = align_node(memo, e, depth);
  ag_map_put(memo, &e, sizeof e, (void *)(intptr_t)r);
  return r;
}

int64_t ag__xalign(ag__ck *c, const ag_expr *e) { return align_rec(&c->align_memo, e, 0); }

const ag_expr *ag__xsplit_const(ag__ck *c, const ag_expr *e, int64_t *k) {
  int64_t v;
  *k = 0;
  if (ag_expr_is_const(e, &v)) {
    *k = v;
    return ag__xc(c, 0);
  }
  if (e->op == AG_X_ADD && ag_expr_is_const(e->b, &v)) {
    *k = v;
    return e->a;
  }
  return e;
}

static const ag_expr *strip_const(ag__ck *c, const ag_expr *e) {
  int64_t v;
  if (ag_expr_is_const(e, &v))
    return ag__xc(c, 0);
  switch (e->op) {
  case AG_X_ADD:
  case AG_X_SUB:
    return ag__x(c, e->op, strip_const(c, e->a), strip_const(c, e->b));
  case AG_X_MUL:
    if (ag_expr_is_const(e->b, &v))
      return ag__x(c, AG_X_MUL, strip_const(c, e->a), e->b);
    if (ag_expr_is_const(e->a, &v))
      return ag__x(c, AG_X_MUL, e->a, strip_const(c, e->b));
    return e;
  default:
    return e;
  }
}

const ag_expr *ag__xsplit_lin(ag__ck *c, const ag_expr *e, int64_t *k) {
  *k = ag__xconst_term(e);
  return strip_const(c, e);
}

/* ---------------------------------------------------------- bit masks */
/* The bits of e that can be 1 (an over-approximation), for tid in
 * [0, nthreads), block indices below 2^16 and problem sizes below 2^24 (the
 * solver's global bounds). */
static uint64_t fill_up(uint64_t m) {
  if (!m)
    return 0;
  uint64_t low = m & -m;
  int top = 63 - __builtin_clzll(m);
  uint64_t upto = top >= 62 ? ~(uint64_t)0 : ((uint64_t)1 << (top + 2)) - 1;
  return upto & ~(low - 1);
}

static uint64_t mask_rec(ag__ck *c, const ag_expr *e, int depth) {
  if (e->op == AG_X_CONST)
    return (uint64_t)e->value;
  if (e->op == AG_X_SYM) {
    if (!strcmp(e->name, "tid")) {
      uint64_t m = 1;
      while ((int64_t)m < c->nthreads)
        m <<= 1;
      return m - 1;
    }
    if (!strcmp(e->name, "@byte")) /* a byte inside one shared write: a store or a cp.async
                                       moves at most 16 bytes, a bulk copy or a TMA box more */
      return c->wide_writes ? 0x3ffff : 0xf;
    if (!strncmp(e->name, "bid.", 4))
      return 0xffff;
    for (size_t i = 0; i < c->sizes.n; i++)
      if (!strcmp(c->sizes.v[i], e->name))
        return 0xffffff;
    return ~(uint64_t)0;
  }
  if (depth > 200)
    return ~(uint64_t)0;
  void *hit = ag_map_get(&c->mask_memo, &e, sizeof e);
  if (hit)
    return *(uint64_t *)hit;
  uint64_t a = mask_rec(c, e->a, depth + 1), b = mask_rec(c, e->b, depth + 1), r = ~(uint64_t)0;
  int64_t k;
  int kc = ag_expr_is_const(e->b, &k);
  switch (e->op) {
  case AG_X_AND: r = a & b; break;
  case AG_X_OR:
  case AG_X_XOR: r = a | b; break;
  case AG_X_ADD: r = (a & b) ? fill_up(a | b) : (a | b); break;
  case AG_X_SUB:
    if (e->b->op == AG_X_MOD && e->b->a == e->a && ag_expr_is_const(e->b->b, &k) && k > 0 &&
        (k & (k - 1)) == 0)
      r = a & ~(uint64_t)(k - 1);
    break;
  case AG_X_SHL:
    if (kc && k >= 0 && k < 63)
      r = a << k;
    break;
  case AG_X_SHR:
    if (kc && k >= 0 && k < 63)
      r = a >> k;
    break;
  case AG_X_MUL:
    if (kc && k > 0 && (k & (k - 1)) == 0)
      r = a << __builtin_ctzll((uint64_t)k);
    else if (kc && k > 0 && a != ~(uint64_t)0 && !(a >> 40))
      r = fill_up(a * (uint64_t)k) | (a * (uint64_t)k);
    break;
  case AG_X_DIV:
    if (kc && k > 0 && (k & (k - 1)) == 0)
      r = a >> __builtin_ctzll((uint64_t)k);
    else if (kc && k > 0)
      r = fill_up(a) | a;
    break;
  case AG_X_MOD:
    if (kc && k > 0 && (k & (k - 1)) == 0)
      r = a & (uint64_t)(k - 1);
    else if (kc && k > 0)
      r = (fill_up((uint64_t)k) | (uint64_t)k) & (fill_up(a) | a);
    break;
  default: break;
  }
  uint64_t *st = ag_arena_alloc(&c->arena, sizeof *st);
  if (st) {
    *st = r;
    ag_map_put(&c->mask_memo, &e, sizeof e, st);
  }
  return r;
}

uint64_t ag__xmask(ag__ck *c, const ag_expr *e) { return mask_rec(c, e, 0); }

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

static ival bounds_rec(ag__ck *c, const ag_expr *e, ag_map *memo) {
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
  ival a = bounds_rec(c, e->a, memo);
  ival b = bounds_rec(c, e->b, memo);
  if (!a.ok || !b.ok)
    goto out;
  int64_t kk;
  if (e->op == AG_X_SUB && e->b->op == AG_X_MOD && e->b->a == e->a &&
      ag_expr_is_const(e->b->b, &kk) && kk > 0 && a.lo >= 0) {
    /* x - x % k: x rounded down to a multiple of k */
    r.ok = 1;
    r.lo = a.lo / kk * kk;
    r.hi = a.hi / kk * kk;
    goto out;
  }
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
      /* x ^ y stays in x's aligned block of the size y's bits can reach */
      for (int side = 0; side < 2; side++) {
        ival x = side ? b : a;
        uint64_t ym = ag__xmask(c, side ? e->a : e->b);
        if (ym >> 40)
          continue;
        int64_t block = 1;
        while ((uint64_t)block <= ym)
          block <<= 1;
        int64_t lo = x.lo / block * block, hi = (x.hi / block + 1) * block - 1;
        if (lo > r.lo)
          r.lo = lo;
        if (hi < r.hi)
          r.hi = hi;
      }
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
out:;
  ival *st = ag_arena_alloc(&c->arena, sizeof *st);
  if (st) {
    *st = r;
    ag_map_put(memo, &e, sizeof e, st);
  }
  return r;
}

int ag__xbounds(ag__ck *c, const ag_expr *e, int64_t *lo, int64_t *hi) {
  ival r = bounds_rec(c, e, &c->bounds_memo);
  *lo = r.lo;
  *hi = r.hi;
  return r.ok ? 0 : AG_ENOTFOUND;
}

/* Evaluation for one thread, with the solver's integer semantics (32-bit
 * unsigned, ag__u32_op); anything but tid and constants is unknown. */
static int eval_tid_rec(const ag_expr *e, uint32_t t, uint32_t *out, int depth, long *budget) {
  if (e->op == AG_X_CONST) {
    *out = (uint32_t)e->value;
    return 0;
  }
  if (e->op == AG_X_SYM) {
    if (strcmp(e->name, "tid"))
      return AG_ENOTFOUND;
    *out = t;
    return 0;
  }
  /* no memo: a visit budget bounds a DAG with heavy sharing (unknown then) */
  if (depth > 4000 || --*budget < 0)
    return AG_EUNDEFINED;
  uint32_t a, b;
  int rc = eval_tid_rec(e->a, t, &a, depth + 1, budget);
  if (!rc)
    rc = eval_tid_rec(e->b, t, &b, depth + 1, budget);
  if (rc)
    return rc;
  *out = ag__u32_op(e->op, a, b);
  return 0;
}

int ag__xeval_tid(const ag_expr *e, int64_t t, int64_t *out) {
  uint32_t v = 0;
  long budget = 1000000;
  int rc = eval_tid_rec(e, (uint32_t)t, &v, 0, &budget);
  *out = rc ? 0 : (int64_t)v;
  return rc;
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
