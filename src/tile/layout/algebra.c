/*
 * algebra.c — CuTe's layout algebra: coalesce, composition (by layout and by
 * tiler), complement, right and left inverse, the divides (logical, zipped,
 * tiled), the products (logical, blocked, raked) and swizzles.
 *
 * The algorithms are CuTe's (cute/layout.hpp), run with every extent known,
 * like CuTe's static layouts, so results print as CuTe prints static ones.
 * Where CuTe checks a condition only "weakly" and would return a layout that
 * is not the composition (e.g. (6,2):(1,7) o 4:4), this file checks the
 * exact condition under which the algorithm is correct and returns
 * AG_EUNDEFINED with a message naming the modes instead. The property tests
 * (tests/unit/test_layout_props.c) hold every defined result to its
 * definition by brute force.
 *
 * Cost: O(leaves of A x leaves of B) for composition, O(leaves^2) for the
 * sorts in complement and the inverses; a depth-3 composition or divide
 * takes a few hundred nanoseconds (bench/bench_layout.c). All memory comes
 * from the context's arena.
 */
#include "layout_int.h"

#include <stdlib.h>

static int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }

/* ----------------------------------------------------------------- coalesce */

/* Coalesces n flat modes (CuTe's bw_coalesce, walking from the back): skips
 * extent-1 modes and merges s0:d0 ++ s1:(s0*d0) into (s0*s1):d0. With
 * unbounded set, the last mode is composition's unbounded last mode (CuTe's
 * coalesce_x): it is kept even at extent 1 and its extent is never read.
 * idx, when given, receives for each result mode the flat index of its
 * first source mode. Returns the count, or -1 on overflow. */
static int coalesce_modes(int n, const int64_t *s, const int64_t *d, int64_t *os, int64_t *od,
                          int *idx, int unbounded) {
  int k = n - 1;
  os[k] = s[n - 1];
  od[k] = d[n - 1];
  if (idx)
    idx[k] = n - 1;
  int seed = 1;
  for (int i = n - 2; i >= 0; i--) {
    if (s[i] == 1)
      continue;
    if (seed && os[k] == 1 && !unbounded) { /* replace the extent-1 seed */
      os[k] = s[i];
      od[k] = d[i];
      if (idx)
        idx[k] = i;
      seed = 0;
      continue;
    }
    seed = 0;
    int64_t sd;
    if (!ag__mul(s[i], d[i], &sd) && sd == od[k]) {
      if (ag__mul(os[k], s[i], &os[k])) {
        if (!unbounded || k != n - 1)
          return -1;
        os[k] = INT64_MAX; /* the unbounded mode's extent is never used */
      }
      od[k] = d[i];
      if (idx)
        idx[k] = i;
      continue;
    }
    k--;
    os[k] = s[i];
    od[k] = d[i];
    if (idx)
      idx[k] = i;
  }
  if (!unbounded && k == n - 1 && os[k] == 1)
    od[k] = 0;
  int cnt = n - k;
  memmove(os, os + k, (size_t)cnt * sizeof *os);
  memmove(od, od + k, (size_t)cnt * sizeof *od);
  if (idx)
    memmove(idx, idx + k, (size_t)cnt * sizeof *idx);
  return cnt;
}

/* Flattens and coalesces l into f (arrays from the arena); idx optional. */
static int flat_coalesced(ag_layout_ctx *c, const ag_layout *l, ag__flat *f, int **idx,
                          int unbounded) {
  int n = ag_tuple_leaves(l->shape);
  *f = (ag__flat){0, NULL, NULL}; /* set on every path, failures included */
  /* one block: raw extents and strides, the coalesced ones, and idx */
  int64_t *m = ag_arena_alloc(c->arena, 4 * (size_t)n * sizeof *m + (size_t)n * sizeof(int));
  if (!m)
    return ag__loom(c);
  ag__flat raw = {0, m, m + n};
  ag__flat_fill(l, &raw);
  f->s = m + 2 * n;
  f->d = m + 3 * n;
  if (idx)
    *idx = (int *)(m + 4 * n);
  f->n = coalesce_modes(n, raw.s, raw.d, f->s, f->d, idx ? *idx : NULL, unbounded);
  if (f->n < 0)
    return ag__lfail(c, AG_ERANGE, "coalesce: an extent times a stride overflows 64 bits");
  return 0;
}

int ag_layout_coalesce(ag_layout_ctx *c, const ag_layout *l, ag_layout *out) {
  ag__flat f;
  int rc = flat_coalesced(c, l, &f, NULL, 0);
  return rc ? rc : ag__from_flat(c, f.n, f.s, f.d, out);
}

int ag_layout_coalesce_by_mode(ag_layout_ctx *c, const ag_layout *l, ag_layout *out) {
  if (l->shape->is_leaf)
    return ag_layout_coalesce(c, l, out);
  int n = l->shape->n;
  ag_tuple *s, *d;
  int rc = ag__pair_nodes(c, n, &s, &d);
  for (int i = 0; i < n && !rc; i++) {
    ag_layout m = {l->shape->child[i], l->stride->child[i]}, r;
    rc = ag_layout_coalesce(c, &m, &r);
    s->child[i] = r.shape;
    d->child[i] = r.stride;
  }
  if (!rc) {
    out->shape = s;
    out->stride = d;
  }
  return rc;
}

/* -------------------------------------------------------------- composition */

typedef struct comp {
  ag_layout_ctx *c;
  const char *op;       /* message prefix: "compose", "logical_divide", ... */
  int n;                /* A, coalesced with an unbounded last mode */
  const int64_t *s, *d;
  const ag_tuple *bshape; /* B, for the mode paths in messages */
  int leaf;               /* flat index of the B leaf being composed */
  int64_t *rs, *rd;       /* scratch: n + 1 result modes */
  int64_t *used;          /* per mode of A: sum of the largest digits B's leaves put there */
  int *owner;             /* per mode of A: the last B leaf that put a nonzero digit there */
  int weak;               /* run CuTe's algorithm with CuTe's own (weak) checks only */
  int64_t cos;            /* cosize of the result so far, minus 1 */
} comp;

static void flat_text(int n, const int64_t *s, const int64_t *d, ag_str *out) {
  if (n == 1) {
    ag_str_printf(out, "%lld:%lld", (long long)s[0], (long long)d[0]);
    return;
  }
  ag_str_putc(out, '(');
  for (int i = 0; i < n; i++)
    ag_str_printf(out, "%s%lld", i ? "," : "", (long long)s[i]);
  ag_str_puts(out, "):(");
  for (int i = 0; i < n; i++)
    ag_str_printf(out, "%s%lld", i ? "," : "", (long long)d[i]);
  ag_str_putc(out, ')');
}

enum { F_NEG, F_STRIDE_LT, F_STRIDE_GT, F_SHAPE };

static int comp_fail(comp *k, int kind, int64_t m0, int64_t d0, int64_t m, int64_t r, int i) {
  ag_str path = AG_STR_INIT, at = AG_STR_INIT;
  ag__leaf_path(k->bshape, k->leaf, &path);
  flat_text(k->n, k->s, k->d, &at);
  /* the last mode of A is unbounded; show its extent as written */
  const char *p = ag_str_cstr(&path), *a = ag_str_cstr(&at);
  long long s = (long long)k->s[i];
  int rc;
  switch (kind) {
  case F_NEG:
    rc = ag__lfail(k->c, AG_EUNDEFINED,
                   "%s: mode %s of B (%lld:%lld) has a negative stride; composition is "
                   "defined for non-negative strides of B only",
                   k->op, p, (long long)m0, (long long)d0);
    break;
  case F_STRIDE_LT:
    rc = ag__lfail(k->c, AG_EUNDEFINED,
                   "%s: stride divisibility fails: mode %s of B (%lld:%lld) steps by %lld "
                   "through mode %d of A, whose shape %lld is not a multiple of %lld "
                   "(A coalesced: %s)",
                   k->op, p, (long long)m0, (long long)d0, (long long)r, i, s, (long long)r, a);
    break;
  case F_STRIDE_GT:
    rc = ag__lfail(k->c, AG_EUNDEFINED,
                   "%s: stride divisibility fails: mode %s of B (%lld:%lld) steps by %lld "
                   "over mode %d of A, and %lld is not a multiple of its shape %lld "
                   "(A coalesced: %s)",
                   k->op, p, (long long)m0, (long long)d0, (long long)r, i, (long long)r, s, a);
    break;
  default:
    rc = ag__lfail(k->c, AG_EUNDEFINED,
                   "%s: shape divisibility fails: mode %s of B (%lld:%lld) still needs %lld "
                   "elements, which is not a multiple of the %lld that mode %d of A (shape "
                   "%lld) holds at stride %lld (A coalesced: %s)",
                   k->op, p, (long long)m0, (long long)d0, (long long)m,
                   (long long)ceil_div(k->s[i], r), i, s, (long long)r, a);
  }
  ag_str_release(&path);
  ag_str_release(&at);
  return rc;
}

/* Leaf k->leaf puts digits up to top into mode i of A. Distributing A over
 * B's modes (A o (B0,B1) = (A o B0, A o B1)) is only right when A is
 * additive over them: the digits the leaves put into each bounded mode of
 * A must add up without a carry. */
static int occupy(comp *k, int i, int64_t top) {
  if (top == 0)
    return 0;
  if (k->used[i] + top >= k->s[i]) {
    ag_str p = AG_STR_INIT, q = AG_STR_INIT, at = AG_STR_INIT;
    ag__leaf_path(k->bshape, k->leaf, &p);
    ag__leaf_path(k->bshape, k->owner[i], &q);
    flat_text(k->n, k->s, k->d, &at);
    int rc = ag__lfail(k->c, AG_EUNDEFINED,
                       "%s: modes %s and %s of B overlap in mode %d of A (shape %lld): their "
                       "offsets add up past it, so A o B is not (A o B%s, A o B%s) "
                       "(A coalesced: %s)",
                       k->op, ag_str_cstr(&q), ag_str_cstr(&p), i, (long long)k->s[i],
                       ag_str_cstr(&q), ag_str_cstr(&p), ag_str_cstr(&at));
    ag_str_release(&p);
    ag_str_release(&q);
    ag_str_release(&at);
    return rc;
  }
  k->used[i] += top;
  k->owner[i] = k->leaf;
  return 0;
}

static int overflow(ag_layout_ctx *c, const char *op) {
  return ag__lfail(c, AG_ERANGE, "%s: a stride of the result overflows 64 bits", op);
}

/* Builds the result of one leaf from k->rs/rd, keeping cosize(R) in range
 * as R grows (so the result needs no range walk). */
static int finish_leaf(comp *k, int cnt, ag_tuple **os, ag_tuple **od) {
  for (int i = 0; i < cnt; i++) {
    int64_t ad = k->rd[i] < 0 ? -k->rd[i] : k->rd[i], t;
    if (k->rd[i] == INT64_MIN || ag__mul(k->rs[i] - 1, ad, &t) || ag__add(k->cos, t, &k->cos) ||
        k->cos == INT64_MAX)
      return overflow(k->c, k->op);
  }
  ag_layout res;
  int rc = ag__from_flat(k->c, cnt, k->rs, k->rd, &res);
  *os = res.shape;
  *od = res.stride;
  return rc;
}

/* A o (m:r) for one leaf of B: CuTe's composition_impl with exact checks. */
static int compose_leaf(comp *k, int64_t m, int64_t r, ag_tuple **os, ag_tuple **od) {
  ag_layout_ctx *c = k->c;
  const int64_t m0 = m, d0 = r;
  int64_t t;
  int rc;
  if (r < 0)
    return comp_fail(k, F_NEG, m0, d0, m, r, 0);
  if (r == 0 || k->n == 1) {
    if (ag__mul(r, k->d[0], &t))
      return overflow(c, k->op);
    k->rs[0] = m;
    k->rd[0] = r == 0 ? 0 : t;
    return finish_leaf(k, 1, os, od);
  }
  int cnt = 0;
  for (int i = 0; i < k->n - 1 && k->weak; i++) {
    /* CuTe's composition_impl as written: static asserts only */
    int64_t s = k->s[i];
    if (!(r % s == 0 || r < s))
      return AG_EUNDEFINED;
    int64_t next_shape = ceil_div(s, r), next_stride = ceil_div(r, s);
    if (next_shape == 1 || m == 1) {
      r = next_stride;
      continue;
    }
    int64_t ns = next_shape < m ? next_shape : m;
    if (m % ns != 0)
      return AG_EUNDEFINED;
    if (ag__mul(r, k->d[i], &t))
      return overflow(c, k->op);
    k->rs[cnt] = ns;
    k->rd[cnt++] = t;
    m /= ns;
    r = next_stride;
  }
  for (int i = 0; i < k->n - 1 && !k->weak; i++) {
    int64_t s = k->s[i];
    if (m == 1) {
      if (cnt)
        break; /* done; the stride below only matters for an extent-1 leaf */
      r = ceil_div(r, s);
      continue;
    }
    if (r % s == 0) {
      r /= s;
      continue;
    }
    if (r > s)
      return comp_fail(k, F_STRIDE_GT, m0, d0, m, r, i);
    int64_t q = ceil_div(s, r);
    if (s % r != 0 && m > q)
      return comp_fail(k, F_STRIDE_LT, m0, d0, m, r, i);
    if (ag__mul(r, k->d[i], &t))
      return overflow(c, k->op);
    if (m <= q) {
      if ((rc = occupy(k, i, (m - 1) * r)))
        return rc;
      k->rs[cnt] = m;
      k->rd[cnt++] = t;
      m = 1;
      r = 1;
      continue;
    }
    if (m % q != 0)
      return comp_fail(k, F_SHAPE, m0, d0, m, r, i);
    if ((rc = occupy(k, i, (q - 1) * r)))
      return rc;
    k->rs[cnt] = q;
    k->rd[cnt++] = t;
    m /= q;
    r = 1;
  }
  int64_t last = k->d[k->n - 1];
  if (cnt == 0 || m != 1) {
    if (ag__mul(r, last, &t)) {
      if (m != 1)
        return overflow(c, k->op);
      t = 0; /* the stride of an extent-1 mode is irrelevant */
    }
    k->rs[cnt] = m;
    k->rd[cnt++] = t;
  }
  return finish_leaf(k, cnt, os, od);
}

static int compose_rec(comp *k, const ag_tuple *bs, const ag_tuple *bd, ag_tuple **os,
                       ag_tuple **od) {
  if (bs->is_leaf) {
    int rc = compose_leaf(k, bs->value, bd->value, os, od);
    k->leaf++;
    return rc;
  }
  int n = bs->n;
  ag_tuple *s, *d;
  int rc = ag__pair_nodes(k->c, n, &s, &d);
  for (int i = 0; i < n && !rc; i++)
    rc = compose_rec(k, bs->child[i], bd->child[i], &s->child[i], &d->child[i]);
  *os = s;
  *od = d;
  return rc;
}

enum { VERIFY_MAX = 1 << 16 };

/* The exact rules above refused B (c->err says why). They are sufficient,
 * not necessary: CuTe's own algorithm can still be right, e.g. when the
 * mode of A it cuts through has stride 0. Run it, and return its result
 * only if enumeration shows R(i) == A(B(i)) for every i < size(B). */
static int compose_fallback(comp *k, const ag_layout *a, const ag_layout *b, ag_layout *out) {
  ag_layout_ctx *c = k->c;
  ag_str why = AG_STR_INIT;
  ag_str_puts(&why, ag_str_cstr(&c->err));
  int64_t n = ag_layout_size(b), bad = -1, want = 0, got = 0;
  ag_layout w;
  k->weak = 1;
  k->leaf = 0;
  k->cos = 0;
  int rc = compose_rec(k, b->shape, b->stride, &w.shape, &w.stride);
  if (rc == 0 && n <= VERIFY_MAX) {
    for (int64_t i = 0; i < n && bad < 0; i++) {
      int64_t x;
      if (ag_layout_eval_index(b, i, &x) || ag_layout_eval_index(a, x, &want) ||
          ag_layout_eval_index(&w, i, &got))
        bad = i, want = got = 0;
      else if (want != got)
        bad = i;
    }
    if (bad < 0) {
      ag_str_release(&why);
      *out = w;
      return 0;
    }
  }
  if (rc == AG_ENOMEM) {
    ag_str_release(&why);
    return rc;
  }
  ag_str wt = AG_STR_INIT;
  if (rc == 0)
    ag_layout_print(&w, &wt);
  if (rc == 0 && bad >= 0)
    rc = ag__lfail(c, AG_EUNDEFINED,
                   "%s; CuTe's algorithm would return %s, which is wrong at index %lld (%lld "
                   "instead of %lld)",
                   ag_str_cstr(&why), ag_str_cstr(&wt), (long long)bad, (long long)got,
                   (long long)want);
  else if (rc == 0)
    rc = ag__lfail(c, AG_EUNDEFINED,
                   "%s; CuTe's algorithm would return %s, which is not checked for more than "
                   "%d elements",
                   ag_str_cstr(&why), ag_str_cstr(&wt), VERIFY_MAX);
  else
    rc = ag__lfail(c, AG_EUNDEFINED, "%s", ag_str_cstr(&why));
  ag_str_release(&wt);
  ag_str_release(&why);
  return rc;
}

static int compose_impl(ag_layout_ctx *c, const char *op, const ag_layout *a,
                        const ag_layout *b, ag_layout *out) {
  ag__flat f;
  int rc = flat_coalesced(c, a, &f, NULL, 1);
  if (rc)
    return rc;
  comp k = {c, op, f.n, f.s, f.d, b->shape, 0, NULL, NULL, NULL, NULL, 0, 0};
  k.rs = ag_arena_alloc(c->arena, 4 * ((size_t)f.n + 1) * sizeof(int64_t));
  if (!k.rs)
    return ag__loom(c);
  k.rd = k.rs + f.n + 1;
  k.used = k.rd + f.n + 1; /* zeroed by the arena */
  k.owner = (int *)(k.used + f.n + 1);
  ag_layout r;
  rc = compose_rec(&k, b->shape, b->stride, &r.shape, &r.stride);
  if (rc == AG_EUNDEFINED)
    return compose_fallback(&k, a, b, out);
  if (rc)
    return rc;
  *out = r; /* size(R) == size(B); cosize was checked leaf by leaf */
  return 0;
}

int ag_layout_compose(ag_layout_ctx *c, const ag_layout *a, const ag_layout *b, ag_layout *out) {
  return compose_impl(c, "compose", a, b, out);
}

static int rank_fail(ag_layout_ctx *c, const char *op, int nt, const ag_layout *a) {
  return ag__lfail(c, AG_EUNDEFINED, "%s: the tiler has %d modes but the layout has rank %d",
                   op, nt, ag__rank(a->shape));
}

/* Applies f to the first n modes of a (with the tiler's modes); keep says
 * whether the modes of a past the tiler stay (divides, products) or go
 * (composition, as in CuTe). */
typedef int (*by_mode_fn)(ag_layout_ctx *c, const char *op, const ag_layout *a,
                          const ag_layout *t, ag_layout *out);

static int by_mode(ag_layout_ctx *c, const char *op, const ag_layout *a, const ag_tiler *t,
                   int keep, by_mode_fn f, ag_layout *out) {
  int ra = ag__rank(a->shape), n = t->n;
  if (n > ra)
    return rank_fail(c, op, n, a);
  int total = keep ? ra : n;
  ag_tuple *os, *od;
  int prc = ag__pair_nodes(c, total, &os, &od);
  if (prc)
    return prc;
  for (int i = 0; i < total; i++) {
    ag_layout m = {ag__mode(a->shape, i), ag__mode(a->stride, i)}, r;
    if (i < n) {
      int rc = f(c, op, &m, &t->modes[i], &r);
      if (rc && rc != AG_ENOMEM) { /* name the tiler's mode: "op (tiler mode i): ..." */
        size_t k = strlen(op);
        ag_str msg = AG_STR_INIT;
        const char *e = ag_str_cstr(&c->err);
        if (!strncmp(e, op, k) && e[k] == ':')
          ag_str_printf(&msg, "%s (tiler mode %d)%s", op, i, e + k);
        else
          ag_str_printf(&msg, "%s (tiler mode %d): %s", op, i, e);
        ag__lfail(c, rc, "%s", ag_str_cstr(&msg));
        ag_str_release(&msg);
      }
      if (rc)
        return rc;
      m = r;
    }
    os->child[i] = m.shape;
    od->child[i] = m.stride;
  }
  out->shape = os;
  out->stride = od;
  return 0;
}

int ag_layout_compose_tiler(ag_layout_ctx *c, const ag_layout *a, const ag_tiler *b,
                            ag_layout *out) {
  if (b->is_layout)
    return compose_impl(c, "compose", a, &b->layout, out);
  return by_mode(c, "compose", a, b, 0, compose_impl, out);
}

/* --------------------------------------------------------------- complement */

/* Selection sort of mode indices by stride (stable: ties keep order). */
static void sort_by_stride(int n, const int64_t *d, int *ord) {
  for (int i = 0; i < n; i++)
    ord[i] = i;
  for (int i = 0; i < n; i++) {
    int m = i;
    for (int j = i + 1; j < n; j++)
      if (d[ord[j]] < d[ord[m]])
        m = j;
    int t = ord[m];
    memmove(ord + i + 1, ord + i, (size_t)(m - i) * sizeof *ord);
    ord[i] = t;
  }
}

static int complement_impl(ag_layout_ctx *c, const char *op, const ag_layout *l,
                           int64_t cotarget, ag_layout *out) {
  if (cotarget < 0)
    return ag__lfail(c, AG_EINVAL, "%s: cotarget %lld is negative", op, (long long)cotarget);
  int N = ag_tuple_leaves(l->shape), rc;
  /* one block of scratch: raw, filtered and coalesced modes, the result
   * before and after coalescing, and three index arrays */
  int64_t *m = ag_arena_alloc(c->arena, (10 * (size_t)N + 4) * sizeof *m + 3 * (size_t)N * sizeof(int));
  if (!m)
    return ag__loom(c);
  ag__flat raw = {0, m, m + N};
  ag__flat_fill(l, &raw);
  int64_t *fs = m + 2 * N, *fd = fs + N, *cs = fd + N, *cd = cs + N;
  int64_t *rs = cd + N, *rd = rs + N + 1, *os = rd + N + 1, *od = os + N + 1;
  int *src = (int *)(od + N + 1), *cidx = src + N, *ord = cidx + N;
  /* filter: drop stride-0 and extent-1 modes, then coalesce */
  int n = 0;
  for (int i = 0; i < raw.n; i++) {
    if (raw.d[i] < 0) {
      ag_str p = AG_STR_INIT;
      ag__leaf_path(l->shape, i, &p);
      rc = ag__lfail(c, AG_EUNDEFINED,
                     "%s: mode %s has a negative stride %lld; complement is defined for "
                     "non-negative strides only",
                     op, ag_str_cstr(&p), (long long)raw.d[i]);
      ag_str_release(&p);
      return rc;
    }
    if (raw.d[i] == 0 || raw.s[i] == 1)
      continue;
    fs[n] = raw.s[i];
    fd[n] = raw.d[i];
    src[n++] = i;
  }
  int64_t cos = 1;
  for (int i = 0; i < n; i++)
    cos += (fs[i] - 1) * fd[i];
  if (cotarget == 0)
    cotarget = cos;
  if (n == 0) { /* nothing left: the complement is the whole cotarget */
    int64_t s1 = cotarget > 1 ? cotarget : 1, d1 = cotarget > 1 ? 1 : 0;
    return ag__from_flat(c, 1, &s1, &d1, out);
  }
  int cn = coalesce_modes(n, fs, fd, cs, cd, cidx, 0);
  if (cn < 0)
    return ag__lfail(c, AG_ERANGE, "%s: an extent times a stride overflows 64 bits", op);
  for (int i = 0; i < cn; i++)
    cidx[i] = src[cidx[i]];
  sort_by_stride(cn, cd, ord);
  rd[0] = 1;
  for (int i = 0; i < cn; i++) {
    int k = ord[i];
    rs[i] = cd[k] / rd[i];
    /* i > 0 here (rd[0] == 1 divides any stride). CuTe floors the quotient;
     * a remainder would leave holes no layout fills (size(R) would fall
     * short of cotarget/size(L), against CuTe's postcondition). */
    if (rs[i] == 0 || cd[k] % rd[i] != 0) {
      int pk = ord[i - 1];
      ag_str p = AG_STR_INIT, q = AG_STR_INIT;
      ag__leaf_path(l->shape, cidx[k], &p);
      ag__leaf_path(l->shape, cidx[pk], &q);
      if (rs[i] == 0)
        rc = ag__lfail(c, AG_EUNDEFINED,
                       "%s: mode %s (stride %lld) overlaps mode %s (%lld:%lld), which spans "
                       "%lld; the layout interleaves its modes, so it has no complement",
                       op, ag_str_cstr(&p), (long long)cd[k], ag_str_cstr(&q),
                       (long long)cs[pk], (long long)cd[pk], (long long)rd[i]);
      else
        rc = ag__lfail(c, AG_EUNDEFINED,
                       "%s: stride %lld of mode %s is not a multiple of %lld, the span of "
                       "mode %s (%lld:%lld); no layout fills the gap between them, so there "
                       "is no complement",
                       op, (long long)cd[k], ag_str_cstr(&p), (long long)rd[i], ag_str_cstr(&q),
                       (long long)cs[pk], (long long)cd[pk]);
      ag_str_release(&p);
      ag_str_release(&q);
      return rc;
    }
    if (ag__mul(cd[k], cs[k], &rd[i + 1]))
      return ag__lfail(c, AG_ERANGE, "%s: a stride overflows 64 bits", op);
  }
  rs[cn] = cotarget >= 1 ? ceil_div(cotarget, rd[cn]) : 1;
  /* cosize of the result: the modes tile [0, rd[cn] * rs[cn]) exactly */
  int64_t top;
  if (ag__mul(rd[cn], rs[cn], &top))
    return ag__lfail(c, AG_ERANGE, "%s: the complement's cosize overflows 64 bits", op);
  int on = coalesce_modes(cn + 1, rs, rd, os, od, NULL, 0);
  if (on < 0)
    return ag__lfail(c, AG_ERANGE, "%s: a stride overflows 64 bits", op);
  return ag__from_flat(c, on, os, od, out);
}

int ag_layout_complement(ag_layout_ctx *c, const ag_layout *l, int64_t cotarget,
                         ag_layout *out) {
  return complement_impl(c, "complement", l, cotarget, out);
}

/* ----------------------------------------------------------------- inverses */

/* What both inverses start from: coalesce(L) flat, the prefix products of
 * its extents, its modes sorted by stride, and room for the result. */
typedef struct inv {
  ag__flat f;
  int *idx, *ord;          /* source leaf of each coalesced mode; sort order */
  int64_t *pre;            /* pre[i] = product of the extents before mode i */
  int64_t *rs, *rd, *os, *od; /* the result before and after coalescing */
} inv;

static int inverse_setup(ag_layout_ctx *c, const ag_layout *l, inv *v) {
  int rc = flat_coalesced(c, l, &v->f, &v->idx, 0);
  if (rc)
    return rc;
  int n = v->f.n;
  v->pre = ag_arena_alloc(c->arena, (5 * ((size_t)n + 1)) * sizeof(int64_t) + (size_t)n * sizeof(int));
  if (!v->pre)
    return ag__loom(c);
  v->rs = v->pre + n + 1;
  v->rd = v->rs + n + 1;
  v->os = v->rd + n + 1;
  v->od = v->os + n + 1;
  v->ord = (int *)(v->od + n + 1);
  v->pre[0] = 1;
  for (int i = 0; i < n; i++)
    v->pre[i + 1] = v->pre[i] * v->f.s[i]; /* <= size, which fits */
  sort_by_stride(n, v->f.d, v->ord);
  return 0;
}

/* Coalesces the n-mode result in v into out. */
static int inverse_finish(ag_layout_ctx *c, const char *op, inv *v, int n, ag_layout *out) {
  int on = coalesce_modes(n, v->rs, v->rd, v->os, v->od, NULL, 0);
  if (on < 0)
    return ag__lfail(c, AG_ERANGE, "%s: a stride overflows 64 bits", op);
  return ag__from_flat(c, on, v->os, v->od, out);
}

int ag_layout_right_inverse(ag_layout_ctx *c, const ag_layout *l, ag_layout *out) {
  inv v;
  int rc = inverse_setup(c, l, &v);
  if (rc)
    return rc;
  int cnt = 0;
  v.rs[cnt] = 1;
  v.rd[cnt++] = 0;
  int64_t curr = 1;
  for (int i = 0; i < v.f.n; i++) {
    int m = v.ord[i];
    if (v.f.d[m] != curr)
      continue;
    v.rs[cnt] = v.f.s[m];
    v.rd[cnt++] = v.pre[m];
    if (ag__mul(v.f.s[m], v.f.d[m], &curr))
      break; /* nothing further can match */
  }
  return inverse_finish(c, "right_inverse", &v, cnt, out);
}

/* "left_inverse: <what> mode P (...) <why>" naming coalesced mode m and,
 * if prev >= 0, the mode before it. */
static int left_fail(ag_layout_ctx *c, const ag_layout *l, const inv *v, int m, int prev,
                     int kind) {
  ag_str p = AG_STR_INIT, q = AG_STR_INIT;
  ag__leaf_path(l->shape, v->idx[m], &p);
  if (prev >= 0)
    ag__leaf_path(l->shape, v->idx[prev], &q);
  long long d = (long long)v->f.d[m];
  int rc;
  if (kind == 0)
    rc = ag__lfail(c, AG_EUNDEFINED,
                   "left_inverse: mode %s has a negative stride %lld; left_inverse is defined "
                   "for non-negative strides only",
                   ag_str_cstr(&p), d);
  else if (kind == 1)
    rc = ag__lfail(c, AG_EUNDEFINED,
                   "left_inverse: stride %lld of mode %s is not a multiple of stride %lld of "
                   "mode %s, the next smaller one, so no layout inverts it",
                   d, ag_str_cstr(&p), (long long)v->f.d[prev], ag_str_cstr(&q));
  else
    rc = ag__lfail(c, AG_EUNDEFINED,
                   "left_inverse: mode %s (stride %lld) starts inside mode %s (%lld:%lld), so "
                   "the layout is not injective and has no left inverse",
                   ag_str_cstr(&p), d, ag_str_cstr(&q), (long long)v->f.s[prev],
                   (long long)v->f.d[prev]);
  ag_str_release(&p);
  ag_str_release(&q);
  return rc;
}

static int pair(ag_layout_ctx *c, const ag_layout *x, const ag_layout *y, ag_layout *out);

/* CuTe's left inverse: the right inverse of (L, complement(L, cosize(L))).
 * Where that complement does not exist though L is injective (a stride no
 * multiple of the span below it: (3,2):(1,4)), CuTe's result is no left
 * inverse; then the one built here mode by mode is returned, which agrees
 * with CuTe's on L's image. The checks first: they give the reasons. */
int ag_layout_left_inverse(ag_layout_ctx *c, const ag_layout *l, ag_layout *out) {
  inv v;
  int rc = inverse_setup(c, l, &v);
  if (rc)
    return rc;
  for (int i = 0; i < v.f.n; i++)
    if (v.f.d[i] < 0)
      return left_fail(c, l, &v, i, -1, 0);
  int ns = 0, nd = 0, prev = -1;
  v.rd[nd++] = 0;
  int64_t size = 1;
  for (int i = 0; i < v.f.n; i++) {
    int m = v.ord[i];
    if (v.f.d[m] == 0)
      continue;
    if (v.f.d[m] % size != 0)
      return left_fail(c, l, &v, m, prev, 1);
    /* divisibility holds but the modes overlap: L is not injective on its
     * nonzero-stride modes, and CuTe's result is no quasi-inverse */
    if (prev >= 0 && v.f.s[prev] * v.f.d[prev] > v.f.d[m])
      return left_fail(c, l, &v, m, prev, 2);
    v.rs[ns++] = v.f.d[m] / size;
    v.rd[nd++] = v.pre[m];
    size = v.f.d[m];
    prev = m;
  }
  ag_layout cl, lc;
  rc = complement_impl(c, "left_inverse", l, 0, &cl);
  if (!rc && !(rc = pair(c, l, &cl, &lc)))
    return ag_layout_right_inverse(c, &lc, out);
  if (rc != AG_EUNDEFINED)
    return rc;
  ag_str_clear(&c->err); /* no complement: the construction above */
  v.rs[ns++] = v.f.s[v.ord[v.f.n - 1]];
  return inverse_finish(c, "left_inverse", &v, ns, out);
}

/* ------------------------------------------------------------------ divides */

static int pair(ag_layout_ctx *c, const ag_layout *x, const ag_layout *y, ag_layout *out) {
  int rc = ag__pair_nodes(c, 2, &out->shape, &out->stride);
  if (rc)
    return rc;
  out->shape->child[0] = x->shape;
  out->shape->child[1] = y->shape;
  out->stride->child[0] = x->stride;
  out->stride->child[1] = y->stride;
  return 0;
}

/* logical_divide(A, B) = A o (B, complement(B, size(A))) */
static int divide1(ag_layout_ctx *c, const char *op, const ag_layout *a, const ag_layout *b,
                   ag_layout *out) {
  ag_layout cb, bc;
  int rc = complement_impl(c, op, b, ag_layout_size(a), &cb);
  if (rc || (rc = pair(c, b, &cb, &bc)))
    return rc;
  return compose_impl(c, op, a, &bc, out);
}

static int divide(ag_layout_ctx *c, const char *op, const ag_layout *a, const ag_tiler *t,
                  ag_layout *out) {
  if (t->is_layout)
    return divide1(c, op, a, &t->layout, out);
  return by_mode(c, op, a, t, 1, divide1, out);
}

int ag_layout_logical_divide(ag_layout_ctx *c, const ag_layout *a, const ag_tiler *b,
                             ag_layout *out) {
  return divide(c, "logical_divide", a, b, out);
}

static int internal(ag_layout_ctx *c, const char *op) {
  return ag__lfail(c, AG_EINVAL, "%s: internal error: a divided mode is not rank 2", op);
}

static int zipped(ag_layout_ctx *c, const char *op, const ag_layout *a, const ag_tiler *t,
                  ag_layout *out) {
  ag_layout l;
  int rc = divide(c, op, a, t, &l);
  if (rc)
    return rc;
  if (t->is_layout) {
    *out = l;
    return 0;
  }
  int n = t->n, ra = l.shape->n;
  ag_tuple *ts, *td, *rs, *rd;
  if ((rc = ag__pair_nodes(c, n, &ts, &td)) || (rc = ag__pair_nodes(c, ra, &rs, &rd)) ||
      (rc = ag__pair_nodes(c, 2, &out->shape, &out->stride)))
    return rc;
  for (int i = 0; i < ra; i++) {
    ag_tuple *ms = l.shape->child[i], *md = l.stride->child[i];
    if (i >= n) {
      rs->child[i] = ms;
      rd->child[i] = md;
      continue;
    }
    if (ms->is_leaf || ms->n != 2)
      return internal(c, op);
    ts->child[i] = ms->child[0];
    td->child[i] = md->child[0];
    rs->child[i] = ms->child[1];
    rd->child[i] = md->child[1];
  }
  out->shape->child[0] = ts;
  out->shape->child[1] = rs;
  out->stride->child[0] = td;
  out->stride->child[1] = rd;
  return 0;
}

int ag_layout_zipped_divide(ag_layout_ctx *c, const ag_layout *a, const ag_tiler *b,
                            ag_layout *out) {
  return zipped(c, "zipped_divide", a, b, out);
}

int ag_layout_tiled_divide(ag_layout_ctx *c, const ag_layout *a, const ag_tiler *b,
                           ag_layout *out) {
  ag_layout z;
  int rc = zipped(c, "tiled_divide", a, b, &z);
  if (rc)
    return rc;
  ag_tuple *z1s = z.shape->child[1], *z1d = z.stride->child[1];
  if (z1s->is_leaf) {
    *out = z;
    return 0;
  }
  int n = 1 + z1s->n;
  if ((rc = ag__pair_nodes(c, n, &out->shape, &out->stride)))
    return rc;
  out->shape->child[0] = z.shape->child[0];
  out->stride->child[0] = z.stride->child[0];
  for (int i = 0; i < z1s->n; i++) {
    out->shape->child[1 + i] = z1s->child[i];
    out->stride->child[1 + i] = z1d->child[i];
  }
  return 0;
}

/* ----------------------------------------------------------------- products */

static int cotarget_of(ag_layout_ctx *c, const char *op, const ag_layout *a,
                       const ag_layout *b, int64_t *cot) {
  if (ag__mul(ag_layout_size(a), ag_layout_cosize(b), cot))
    return ag__lfail(c, AG_ERANGE, "%s: size(A)*cosize(B) overflows 64 bits", op);
  return 0;
}

/* logical_product(A, B) = (A, complement(A, size(A)*cosize(B)) o B) */
static int product1(ag_layout_ctx *c, const char *op, const ag_layout *a, const ag_layout *b,
                    ag_layout *out) {
  int64_t cot;
  ag_layout ca, y;
  int rc = cotarget_of(c, op, a, b, &cot);
  if (rc || (rc = complement_impl(c, op, a, cot, &ca)) ||
      (rc = compose_impl(c, op, &ca, b, &y)))
    return rc;
  return pair(c, a, &y, out);
}

int ag_layout_logical_product(ag_layout_ctx *c, const ag_layout *a, const ag_tiler *b,
                              ag_layout *out) {
  if (b->is_layout)
    return product1(c, "logical_product", a, &b->layout, out);
  return by_mode(c, "logical_product", a, b, 1, product1, out);
}

/* blocked (raked = 0) or raked (raked = 1) product: pad A and B to the same
 * rank R with 1:0 modes, take the logical product, and zip its modes:
 * mode i = (A_i, (A* o B)_i), or the reverse for raked. */
static int rank_product(ag_layout_ctx *c, const char *op, const ag_layout *a,
                        const ag_layout *b, int raked, ag_layout *out) {
  int ra = ag__rank(a->shape), rb = ag__rank(b->shape), R = ra > rb ? ra : rb;
  int64_t cot;
  ag_layout ca, bp = *b, y;
  int rc = cotarget_of(c, op, a, b, &cot);
  if (rc || (rc = complement_impl(c, op, a, cot, &ca)))
    return rc;
  ag_tuple *one = ag_tuple_leaf(c, 1), *zero = ag_tuple_leaf(c, 0);
  ag_tuple **ch = ag_arena_alloc(c->arena, 4 * (size_t)R * sizeof *ch);
  if (!one || !zero || !ch)
    return ag__loom(c);
  if (R > 1 && rb < R) { /* B' = B padded with 1:0 modes to rank R */
    for (int i = 0; i < R; i++) {
      ch[i] = i < rb ? ag__mode(b->shape, i) : one;
      ch[R + i] = i < rb ? ag__mode(b->stride, i) : zero;
    }
    bp.shape = ag_tuple_make(c, R, ch);
    bp.stride = ag_tuple_make(c, R, ch + R);
    if (!bp.shape || !bp.stride)
      return ag__loom(c);
  }
  /* one composition over all of B', so its modes are checked together */
  if ((rc = compose_impl(c, op, &ca, &bp, &y)))
    return rc;
  for (int i = 0; i < R; i++) {
    ag_layout ai = {one, zero}, m;
    if (i < ra)
      ai = (ag_layout){ag__mode(a->shape, i), ag__mode(a->stride, i)};
    ag_layout yi = R == 1 ? y : (ag_layout){ag__mode(y.shape, i), ag__mode(y.stride, i)};
    if ((rc = raked ? pair(c, &yi, &ai, &m) : pair(c, &ai, &yi, &m)))
      return rc;
    ch[2 * R + i] = m.shape;
    ch[3 * R + i] = m.stride;
  }
  out->shape = ag_tuple_make(c, R, ch + 2 * R);
  out->stride = ag_tuple_make(c, R, ch + 3 * R);
  if (!out->shape || !out->stride)
    return ag__loom(c);
  return ag__range_check(c, out);
}

int ag_layout_blocked_product(ag_layout_ctx *c, const ag_layout *a, const ag_layout *b,
                              ag_layout *out) {
  return rank_product(c, "blocked_product", a, b, 0, out);
}

int ag_layout_raked_product(ag_layout_ctx *c, const ag_layout *a, const ag_layout *b,
                            ag_layout *out) {
  return rank_product(c, "raked_product", a, b, 1, out);
}

/* ----------------------------------------------------------------- swizzles */

int ag_swizzle_check(ag_layout_ctx *c, ag_swizzle s) {
  int as = s.s < 0 ? -s.s : s.s;
  if (s.b < 0 || s.m < 0)
    return ag__lfail(c, AG_EINVAL, "Swizzle<%d,%d,%d>: B and M must not be negative", s.b,
                     s.m, s.s);
  if (as < s.b)
    return ag__lfail(c, AG_EINVAL,
                     "Swizzle<%d,%d,%d>: |S| must be at least B, or the bits it moves "
                     "overlap the bits it reads",
                     s.b, s.m, s.s);
  if (s.b + s.m + as > 62)
    return ag__lfail(c, AG_EINVAL, "Swizzle<%d,%d,%d>: B+M+|S| must be at most 62", s.b, s.m,
                     s.s);
  return 0;
}

int64_t ag_swizzle_apply(ag_swizzle s, int64_t x) {
  if (s.b <= 0)
    return x;
  uint64_t bits = (((uint64_t)1 << s.b) - 1), ux = (uint64_t)x;
  if (s.s >= 0)
    return (int64_t)(ux ^ ((ux & (bits << (s.m + s.s))) >> s.s));
  return (int64_t)(ux ^ ((ux & (bits << s.m)) << -s.s));
}
