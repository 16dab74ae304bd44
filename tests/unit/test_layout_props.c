/*
 * test_layout_props.c — every operation of the layout algebra against brute
 * force over thousands of seeded random layouts. Each property is a checker
 * that returns 0 when a result satisfies its definition (evaluated with the
 * independent reference evaluator of layout_ref.h); each checker is also
 * fed a deliberately wrong result (a perturbed stride, a borrowed offset)
 * that it must reject. Composition's undefined cases are held against
 * CuTe's own (weakly checked) algorithm: whenever that algorithm would have
 * returned a layout, the layout must be wrong. Runs in about a second.
 */
#include "check.h"
#include "layout_ref.h"

#include <stdlib.h>

/* ARGUS_PROP_ITER scales the number of cases (default 3000) for longer
 * local runs; ARGUS_PROP_SEED shifts the seeds. */
static int ITER = 3000;
static uint64_t SEED0 = 0;

static void setup(void) {
  const char *e = getenv("ARGUS_PROP_ITER");
  if (e && atoi(e) > 0)
    ITER = atoi(e);
  e = getenv("ARGUS_PROP_SEED");
  if (e)
    SEED0 = strtoull(e, NULL, 10) * 1000;
}

static int layout_depth(int max) { return (int)rnd(0, max); }

/* ------------------------------------------------------------- composition */

/* R refines B: each leaf of B becomes a subtree of R of the same size. */
static int compatible(const ag_tuple *b, const ag_tuple *r) {
  if (b->is_leaf) {
    ag_layout l = {(ag_tuple *)r, (ag_tuple *)r};
    return ref_size(&l) == b->value;
  }
  if (r->is_leaf || r->n != b->n)
    return 0;
  for (int i = 0; i < b->n; i++)
    if (!compatible(b->child[i], r->child[i]))
      return 0;
  return 1;
}

static int check_compose(const ag_layout *a, const ag_layout *b, const ag_layout *r) {
  if (!compatible(b->shape, r->shape))
    return 1;
  int64_t n = ref_size(b);
  for (int64_t i = 0; i < n; i++)
    if (ref_eval(r, i) != ref_eval(a, ref_eval(b, i)))
      return 2;
  return 0;
}

/* CuTe's composition as cute/layout.hpp runs it with static integers: the
 * "weak" divisibility checks only, and distribution over B's modes without
 * any check. Returns 0 (with a layout) where CuTe compiles, 1 where its
 * static assertions fire. Written here from CuTe's definition, apart from
 * the library. */
typedef struct weak {
  lctx *t;
  rflat a; /* coalesce_x(A): flat, last mode unbounded */
  int rejected;
} weak;

static void coalesce_x(const ag_layout *l, rflat *out) {
  rflat f;
  rflatten(l, &f);
  int64_t s[REF_MAX], d[REF_MAX];
  int k = REF_MAX - 1;
  s[k] = f.s[f.n - 1] == 1 ? 2 : f.s[f.n - 1];
  d[k] = f.d[f.n - 1];
  for (int i = f.n - 2; i >= 0; i--) {
    if (f.s[i] == 1)
      continue;
    if (f.s[i] * f.d[i] == d[k]) {
      s[k] *= f.s[i];
      d[k] = f.d[i];
    } else {
      k--;
      s[k] = f.s[i];
      d[k] = f.d[i];
    }
  }
  out->n = REF_MAX - k;
  memcpy(out->s, s + k, (size_t)out->n * sizeof *s);
  memcpy(out->d, d + k, (size_t)out->n * sizeof *d);
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static void weak_leaf(weak *w, int64_t m, int64_t r, ag_tuple **os, ag_tuple **od) {
  ag_layout_ctx *c = &w->t->c;
  const rflat *a = &w->a;
  if (r == 0 || a->n == 1) {
    *os = ag_tuple_leaf(c, m);
    *od = ag_tuple_leaf(c, r * a->d[0]);
    return;
  }
  ag_tuple *rs[REF_MAX], *rd[REF_MAX];
  int n = 0;
  for (int i = 0; i < a->n - 1; i++) {
    int64_t cs = a->s[i];
    if (!(r % cs == 0 || r < cs))
      w->rejected = 1;
    int64_t next_shape = cdiv(cs, r), next_stride = cdiv(r, cs);
    if (next_shape == 1 || m == 1) {
      r = next_stride;
      continue;
    }
    int64_t ns = next_shape < m ? next_shape : m;
    if (m % ns != 0)
      w->rejected = 1;
    rs[n] = ag_tuple_leaf(c, ns);
    rd[n++] = ag_tuple_leaf(c, r * a->d[i]);
    m /= ns;
    r = next_stride;
  }
  if (n == 0) {
    *os = ag_tuple_leaf(c, m);
    *od = ag_tuple_leaf(c, r * a->d[a->n - 1]);
    return;
  }
  if (m != 1) {
    rs[n] = ag_tuple_leaf(c, m);
    rd[n++] = ag_tuple_leaf(c, r * a->d[a->n - 1]);
  }
  *os = n == 1 ? rs[0] : ag_tuple_make(c, n, rs);
  *od = n == 1 ? rd[0] : ag_tuple_make(c, n, rd);
}

static void weak_rec(weak *w, const ag_tuple *bs, const ag_tuple *bd, ag_tuple **os,
                     ag_tuple **od) {
  if (bs->is_leaf) {
    weak_leaf(w, bs->value, bd->value, os, od);
    return;
  }
  ag_tuple *s[16], *d[16];
  for (int i = 0; i < bs->n; i++)
    weak_rec(w, bs->child[i], bd->child[i], &s[i], &d[i]);
  *os = ag_tuple_make(&w->t->c, bs->n, s);
  *od = ag_tuple_make(&w->t->c, bs->n, d);
}

TEST(test_compose_props) {
  int defined = 0, undefined = 0, caught = 0, weak_wrong = 0, weak_rejects = 0;
  setup();
  rng_seed(SEED0 + 1);
  for (int it = 0; it < ITER; it++) {
    lctx t;
    lctx_init(&t);
    ag_layout a = gen_layout(&t.c, layout_depth(3), 256, (int)rnd(0, 4));
    ag_layout b = gen_layout(&t.c, layout_depth(2), 64, (int)rnd(0, 3));
    ag_layout r, bad;
    int rc = ag_layout_compose(&t.c, &a, &b, &r);
    if (rc == 0) {
      defined++;
      int e = check_compose(&a, &b, &r);
      if (e)
        fprintf(stderr, "compose %s o %s = %s fails check %d\n", lstr(&a), lstr(&b), lstr(&r), e);
      CHECK_EQ_INT(e, 0);
      if (perturb(&t.c, &r, &bad)) {
        CHECK(check_compose(&a, &b, &bad) != 0);
        caught++;
      }
    } else {
      undefined++;
      CHECK_EQ_INT(rc, AG_EUNDEFINED);
      CHECK_CONTAINS(ag_str_cstr(&t.c.err), "mode");
      /* where CuTe's algorithm would answer, its answer must be wrong */
      weak w = {&t, {0}, 0};
      coalesce_x(&a, &w.a);
      ag_layout wl;
      weak_rec(&w, b.shape, b.stride, &wl.shape, &wl.stride);
      int has_neg = 0;
      rflat bf;
      rflatten(&b, &bf);
      for (int i = 0; i < bf.n; i++)
        has_neg |= bf.d[i] < 0;
      if (w.rejected || has_neg) {
        weak_rejects++;
      } else {
        int e = check_compose(&a, &b, &wl);
        if (!e)
          fprintf(stderr, "rejected %s o %s, but CuTe's %s is right: %s\n", lstr(&a), lstr(&b),
                  lstr(&wl), ag_str_cstr(&t.c.err));
        CHECK(e != 0);
        weak_wrong++;
      }
    }
    lctx_free(&t);
  }
  printf("compose: %d defined (%d wrong results caught), %d undefined (%d CuTe rejects, %d "
         "where CuTe answers wrongly)\n",
         defined, caught, undefined, weak_rejects, weak_wrong);
  CHECK(defined > ITER / 4);
  CHECK(undefined > ITER / 20);
  CHECK(weak_wrong > 0);
}

TEST(test_compose_tiler_props) {
  int defined = 0, caught = 0;
  setup();
  rng_seed(SEED0 + 2);
  for (int it = 0; it < ITER; it++) {
    lctx t;
    lctx_init(&t);
    ag_layout a = gen_layout(&t.c, 2, 256, (int)rnd(0, 3));
    int ra = ag_layout_rank(&a), n = (int)rnd(1, ra);
    ag_layout modes[8];
    for (int i = 0; i < n; i++)
      modes[i] = gen_layout(&t.c, layout_depth(1), 16, (int)rnd(0, 1));
    ag_tiler tl = {0, {0, 0}, n, modes};
    ag_layout r;
    if (ag_layout_compose_tiler(&t.c, &a, &tl, &r) == 0) {
      defined++;
      CHECK_EQ_INT(ag_layout_rank(&r), n); /* CuTe drops the modes past the tiler */
      for (int i = 0; i < n; i++) {
        ag_layout am, rm;
        ag_layout_mode(&t.c, &a, i, &am);
        if (ag_layout_mode(&t.c, &r, i, &rm) == 0) {
          ag_layout bad;
          CHECK_EQ_INT(check_compose(&am, &modes[i], &rm), 0);
          if (perturb(&t.c, &rm, &bad)) {
            CHECK(check_compose(&am, &modes[i], &bad) != 0);
            caught++;
          }
        }
      }
    }
    lctx_free(&t);
  }
  CHECK(defined > ITER / 4);
  CHECK(caught > ITER / 4);
}

/* --------------------------------------------------------------- complement */

typedef struct vset {
  unsigned char *bits;
  int64_t n;
} vset;

static int check_complement(const ag_layout *l, int64_t cot, const ag_layout *r) {
  rflat f, fl;
  rflatten(l, &f);
  fl.n = 0;
  int64_t cosl = 1, sfl = 1;
  for (int i = 0; i < f.n; i++) {
    cosl += (f.s[i] - 1) * (f.d[i] < 0 ? -f.d[i] : f.d[i]);
    if (f.d[i] != 0 && f.s[i] != 1) {
      fl.s[fl.n] = f.s[i];
      fl.d[fl.n++] = f.d[i];
      sfl *= f.s[i];
    }
  }
  if (cot == 0) {
    cot = 1;
    for (int i = 0; i < fl.n; i++)
      cot += (fl.s[i] - 1) * fl.d[i];
  }
  int64_t nr = ref_size(r), maxr = 0;
  for (int64_t i = 1; i < nr; i++)
    if (ref_eval(r, i - 1) >= ref_eval(r, i))
      return 1; /* ordered */
  if (nr)
    maxr = ref_eval(r, nr - 1);
  int64_t maxl = cosl, span = maxl + maxr + 1;
  unsigned char *seen = calloc((size_t)span + 1, 1);
  ag_layout L = *l;
  int64_t nl = ref_size(&L);
  for (int64_t i = 0; i < nl; i++)
    seen[ref_eval(&L, i)] = 1;
  int e = 0;
  for (int64_t j = 1; j < nr && !e; j++)
    if (ref_eval(r, j) <= maxl && seen[ref_eval(r, j)])
      e = 2; /* disjoint from L's image, but for 0 */
  memset(seen, 0, (size_t)span + 1);
  int64_t top = 0;
  for (int64_t i = 0; i < sfl && !e; i++) {
    int64_t x = i, v = 0; /* filter(L)(i) */
    for (int k = 0; k < fl.n; k++) {
      int64_t cc = k + 1 < fl.n ? x % fl.s[k] : x;
      x /= fl.s[k];
      v += cc * fl.d[k];
    }
    for (int64_t j = 0; j < nr; j++) {
      int64_t w = v + ref_eval(r, j);
      if (seen[w]) {
        e = 3; /* (filter(L), R) injective */
        break;
      }
      seen[w] = 1;
      if (w > top)
        top = w;
    }
  }
  free(seen);
  if (e)
    return e;
  /* the span of filter(L): its largest extent*stride */
  int64_t lspan = 1;
  for (int i = 0; i < fl.n; i++)
    if (fl.s[i] * fl.d[i] > lspan)
      lspan = fl.s[i] * fl.d[i];
  if (top + 1 < cot)
    return 4; /* cosize((L, R)) >= cotarget */
  if (top + 1 >= cot + lspan)
    return 5; /* ... and no larger than needed: R repeats L's span no more than it must */
  if (nr * sfl < cot)
    return 6; /* size(R) >= cotarget / size(filter(L)): no holes */
  (void)maxr;
  return 0;
}

/* The condition for a complement: sorted by stride, each filtered mode
 * starts at a multiple of the span of the one before it (CuTe asserts only
 * that it does not start inside it; a gap that is no multiple leaves holes,
 * which CuTe's postcondition size(R) >= cotarget/size(filter(L)) forbids). */
static int overlapping(const ag_layout *l) {
  rflat f, g;
  rflatten(l, &f);
  g.n = 0;
  for (int i = 0; i < f.n; i++)
    if (f.d[i] != 0 && f.s[i] != 1) {
      g.s[g.n] = f.s[i];
      g.d[g.n++] = f.d[i];
    }
  for (int i = 0; i < g.n; i++)
    for (int j = i + 1; j < g.n; j++)
      if (g.d[j] < g.d[i]) {
        int64_t ts = g.s[i], td = g.d[i];
        g.s[i] = g.s[j];
        g.d[i] = g.d[j];
        g.s[j] = ts;
        g.d[j] = td;
      }
  for (int i = 0; i + 1 < g.n; i++)
    if (g.d[i + 1] < g.s[i] * g.d[i] || g.d[i + 1] % (g.s[i] * g.d[i]) != 0)
      return 1;
  return 0;
}

TEST(test_complement_props) {
  int defined = 0, undefined = 0, caught = 0;
  setup();
  rng_seed(SEED0 + 3);
  for (int it = 0; it < ITER; it++) {
    lctx t;
    lctx_init(&t);
    ag_layout l = gen_layout(&t.c, layout_depth(3), 32, (int)rnd(0, 3));
    int64_t cosl = ag_layout_cosize(&l);
    int64_t cot = rnd(0, 3) == 0 ? 0 : rnd(1, 4 * cosl);
    ag_layout r;
    int rc = ag_layout_complement(&t.c, &l, cot, &r);
    if (rc == 0) {
      defined++;
      int e = check_complement(&l, cot, &r);
      if (e)
        fprintf(stderr, "complement(%s, %lld) = %s fails check %d\n", lstr(&l), (long long)cot,
                lstr(&r), e);
      CHECK_EQ_INT(e, 0);
      CHECK(!overlapping(&l));
      /* wrong: a complement that reuses an offset L reaches */
      int64_t v = 0;
      for (int64_t i = 1; i < ag_layout_size(&l) && !v; i++)
        v = ref_eval(&l, i);
      if (v > 0) {
        ag_tuple *s2[2] = {ag_tuple_leaf(&t.c, 2), r.shape}, *d2[2] = {ag_tuple_leaf(&t.c, v), r.stride};
        ag_layout bad = {ag_tuple_make(&t.c, 2, s2), ag_tuple_make(&t.c, 2, d2)};
        CHECK(check_complement(&l, cot, &bad) != 0);
        caught++;
      }
    } else {
      undefined++;
      CHECK_EQ_INT(rc, AG_EUNDEFINED);
      CHECK(overlapping(&l));
      CHECK_CONTAINS(ag_str_cstr(&t.c.err), "mode");
    }
    lctx_free(&t);
  }
  printf("complement: %d defined (%d wrong caught), %d undefined\n", defined, caught, undefined);
  CHECK(defined > ITER / 2);
  CHECK(undefined > ITER / 20);
  CHECK(caught > ITER / 4);
}

/* ----------------------------------------------------------------- inverses */

/* R maps into L's domain, and L(R(i)) == i there. */
static int check_right_inverse(const ag_layout *l, const ag_layout *r) {
  int64_t n = ref_size(r), nl = ref_size(l);
  for (int64_t i = 0; i < n; i++) {
    int64_t x = ref_eval(r, i);
    if (x < 0 || x >= nl || ref_eval(l, x) != i)
      return 1;
  }
  return 0;
}

static int check_left_inverse(const ag_layout *l, const ag_layout *r, int injective) {
  int64_t n = ref_size(l);
  for (int64_t i = 0; i < n; i++) {
    int64_t x = ref_eval(r, ref_eval(l, i));
    if (injective ? x != i : ref_eval(l, x) != ref_eval(l, i))
      return 1;
  }
  return 0;
}

/* CuTe's left inverse (issue 16) is the right inverse of M = (L,
 * complement(L)): on [0, size(R)) the inverse function of M, where each
 * offset x maps to the smallest index i with M(i) == x (the one whose
 * zero-stride coordinates are 0), and size(R) is the number of offsets M
 * reaches, all of [0, size(R)). Brute force; 0 when r is that. */
static int check_cute_left(const ag_layout *m, const ag_layout *r) {
  int64_t n = ref_size(m), top = 0;
  for (int64_t i = 0; i < n; i++)
    if (ref_eval(m, i) + 1 > top)
      top = ref_eval(m, i) + 1;
  int64_t *inv = malloc(sizeof *inv * (size_t)(top ? top : 1));
  int rc = 0;
  for (int64_t x = 0; x < top; x++)
    inv[x] = -1;
  int64_t reached = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t x = ref_eval(m, i);
    if (inv[x] < 0) {
      inv[x] = i;
      reached++;
    }
  }
  if (ref_size(r) != reached)
    rc = 1;
  for (int64_t x = 0; x < reached && !rc; x++)
    if (x >= top || inv[x] < 0 || ref_eval(r, x) != inv[x])
      rc = 2;
  free(inv);
  return rc;
}

/* perturb, but only a leaf with a nonzero stride (the zero-stride modes of
 * a left inverse cover offsets L never produces) */
static int perturb_nonzero(ag_layout_ctx *c, const ag_layout *l, ag_layout *out) {
  rflat f;
  rflatten(l, &f);
  int k = -1;
  for (int i = 0; i < f.n && k < 0; i++)
    if (f.s[i] > 1 && f.d[i] != 0)
      k = i;
  if (k < 0)
    return 0;
  f.d[k]++;
  int idx = 0;
  out->shape = l->shape;
  out->stride = with_leaves(c, l->shape, f.d, &idx);
  return 1;
}

/* wrong for every left inverse of an injective L of size >= 2: every leaf
 * with a nonzero stride one more. R(L(1)) == 1 needs a leaf with a nonzero
 * stride and coordinate, so R(L(1)) grows. (CuTe's left inverse maps the
 * offsets L never reaches through its complement's modes, so perturbing one
 * leaf may leave it a left inverse.) */
static int perturb_all_nonzero(ag_layout_ctx *c, const ag_layout *l, ag_layout *out) {
  rflat f;
  rflatten(l, &f);
  int k = 0;
  for (int i = 0; i < f.n; i++)
    if (f.s[i] > 1 && f.d[i] != 0) {
      f.d[i]++;
      k++;
    }
  int idx = 0;
  out->shape = l->shape;
  out->stride = with_leaves(c, l->shape, f.d, &idx);
  return k > 0;
}

TEST(test_inverse_props) {
  int rdef = 0, ldef = 0, lundef = 0, bij = 0, caught = 0, cute = 0;
  setup();
  rng_seed(SEED0 + 4);
  for (int it = 0; it < ITER; it++) {
    lctx t;
    lctx_init(&t);
    int kind = (int)rnd(0, 4);
    ag_layout l = gen_layout(&t.c, layout_depth(3), 128, kind), r, bad;
    int inj = ref_injective(&l);
    CHECK_EQ_INT(ag_layout_right_inverse(&t.c, &l, &r), 0);
    rdef++;
    CHECK_EQ_INT(check_right_inverse(&l, &r), 0);
    if (kind == 0) { /* a bijection onto [0,size): the inverse is total */
      bij++;
      CHECK_EQ_INT(ag_layout_size(&r), ag_layout_size(&l));
    }
    if (inj && perturb_nonzero(&t.c, &r, &bad)) {
      if (!check_right_inverse(&l, &bad))
        fprintf(stderr, "right_inverse(%s) = %s; not caught: %s\n", lstr(&l), lstr(&r), lstr(&bad));
      CHECK(check_right_inverse(&l, &bad) != 0);
      caught++;
    }
    int rc = ag_layout_left_inverse(&t.c, &l, &r);
    if (rc == 0) {
      ldef++;
      int e = check_left_inverse(&l, &r, inj);
      if (e)
        fprintf(stderr, "left_inverse(%s) = %s fails (injective %d)\n", lstr(&l), lstr(&r), inj);
      CHECK_EQ_INT(e, 0);
      if (inj && ag_layout_size(&l) > 1 && perturb_all_nonzero(&t.c, &r, &bad)) {
        CHECK(check_left_inverse(&l, &bad, inj) != 0);
        caught++;
      }
      /* where L has a complement, the result is CuTe's */
      ag_layout cm;
      if (ag_layout_complement(&t.c, &l, 0, &cm) == 0 && ag_layout_cosize(&l) < (1 << 16)) {
        ag_tuple *ms[2] = {l.shape, cm.shape}, *md[2] = {l.stride, cm.stride};
        ag_layout m = {ag_tuple_make(&t.c, 2, ms), ag_tuple_make(&t.c, 2, md)};
        int ce = check_cute_left(&m, &r);
        if (ce)
          fprintf(stderr, "left_inverse(%s) = %s is not CuTe's (check %d)\n", lstr(&l), lstr(&r),
                  ce);
        CHECK_EQ_INT(ce, 0);
        cute++;
        if (perturb_nonzero(&t.c, &r, &bad)) /* the check can fail */
          CHECK(check_cute_left(&m, &bad) != 0);
      }
    } else {
      lundef++;
      CHECK_EQ_INT(rc, AG_EUNDEFINED);
      /* an injective layout is refused only for a stride that is no multiple of
       * the one before, or a negative stride */
      CHECK(!inj || strstr(ag_str_cstr(&t.c.err), "not a multiple") ||
            strstr(ag_str_cstr(&t.c.err), "negative stride"));
    }
    lctx_free(&t);
  }
  printf("inverses: %d right, %d left defined (%d checked as CuTe's), %d left undefined, %d "
         "bijections, %d wrong caught\n",
         rdef, ldef, cute, lundef, bij, caught);
  CHECK(ldef > ITER / 2);
  CHECK(cute > ITER / 4);
  CHECK(lundef > ITER / 50);
  CHECK(caught > ITER / 2);
}

/* ----------------------------------------------------------------- coalesce */

static int check_coalesce(const ag_layout *l, const ag_layout *r) {
  int64_t n = ref_size(l);
  if (ref_size(r) != n)
    return 1;
  for (int64_t i = 0; i < n; i++)
    if (ref_eval(r, i) != ref_eval(l, i))
      return 2;
  if (ag_layout_depth(r) > 1)
    return 3;
  rflat f, g;
  rflatten(r, &f);
  rflatten(l, &g);
  if (f.n > g.n)
    return 4;
  for (int i = 0; i < f.n; i++) {
    if (f.s[i] == 1 && !(f.n == 1 && f.d[i] == 0))
      return 5; /* extent-1 modes are dropped */
    if (i + 1 < f.n && f.s[i] * f.d[i] == f.d[i + 1])
      return 6; /* adjacent modes that could merge */
  }
  return 0;
}

TEST(test_coalesce_props) {
  int caught = 0;
  setup();
  rng_seed(SEED0 + 5);
  for (int it = 0; it < ITER; it++) {
    lctx t;
    lctx_init(&t);
    ag_layout l = gen_layout(&t.c, layout_depth(3), 256, (int)rnd(0, 4)), r, bad;
    CHECK_EQ_INT(ag_layout_coalesce(&t.c, &l, &r), 0);
    int e = check_coalesce(&l, &r);
    if (e)
      fprintf(stderr, "coalesce(%s) = %s fails check %d\n", lstr(&l), lstr(&r), e);
    CHECK_EQ_INT(e, 0);
    if (perturb(&t.c, &r, &bad)) {
      CHECK(check_coalesce(&l, &bad) != 0);
      caught++;
    }
    CHECK_EQ_INT(ag_layout_coalesce_by_mode(&t.c, &l, &r), 0);
    CHECK_EQ_INT(ag_layout_rank(&r), ag_layout_rank(&l));
    for (int i = 0; i < ag_layout_rank(&l); i++) {
      ag_layout lm, rm;
      ag_layout_mode(&t.c, &l, i, &lm);
      ag_layout_mode(&t.c, &r, i, &rm);
      CHECK_EQ_INT(check_coalesce(&lm, &rm), 0);
      if (perturb(&t.c, &rm, &bad)) {
        CHECK(check_coalesce(&lm, &bad) != 0);
        caught++;
      }
    }
    lctx_free(&t);
  }
  CHECK(caught > ITER / 2);
}

/* ------------------------------------------------------------------ divides */

/* R == A o (B, C): R(i + size(B)*j) == A(B(i) + C(j)). */
static int check_divide(const ag_layout *a, const ag_layout *b, const ag_layout *cb,
                        const ag_layout *r) {
  if (ag_layout_rank(r) != 2)
    return 1;
  int64_t sb = ref_size(b), sc = ref_size(cb);
  if (ref_size(r) != sb * sc)
    return 2;
  for (int64_t j = 0; j < sc; j++)
    for (int64_t i = 0; i < sb; i++)
      if (ref_eval(r, i + sb * j) != ref_eval(a, ref_eval(b, i) + ref_eval(cb, j)))
        return 3;
  return 0;
}

static int same_function(const ag_layout *x, const ag_layout *y) {
  int64_t n = ref_size(x);
  if (ref_size(y) != n)
    return 0;
  for (int64_t i = 0; i < n; i++)
    if (ref_eval(x, i) != ref_eval(y, i))
      return 0;
  return 1;
}

static ag_tuple *tmode(ag_tuple *t, int i) {
  if (t->is_leaf)
    return i == 0 ? t : NULL;
  return i < t->n ? t->child[i] : NULL;
}

/* Mode i of l (l itself for i == 0 when its shape is an integer). */
static ag_layout sub(const ag_layout *l, int i) {
  ag_layout m = {tmode(l->shape, i), tmode(l->stride, i)};
  return m;
}

TEST(test_divide_props) {
  int defined = 0, undefined = 0, caught = 0;
  setup();
  rng_seed(SEED0 + 6);
  for (int it = 0; it < ITER; it++) {
    lctx t;
    lctx_init(&t);
    ag_layout a = gen_layout(&t.c, layout_depth(3), 256, (int)rnd(0, 3));
    ag_layout b = gen_layout(&t.c, layout_depth(2), 16, (int)rnd(0, 1));
    ag_tiler tl = {1, b, 0, NULL};
    ag_layout r, cb, bad;
    int rc = ag_layout_logical_divide(&t.c, &a, &tl, &r);
    if (rc) {
      undefined++;
      CHECK(rc == AG_EUNDEFINED || rc == AG_ERANGE);
      lctx_free(&t);
      continue;
    }
    defined++;
    CHECK_EQ_INT(ag_layout_complement(&t.c, &b, ag_layout_size(&a), &cb), 0);
    int e = check_divide(&a, &b, &cb, &r);
    if (e)
      fprintf(stderr, "logical_divide(%s, %s) = %s fails %d\n", lstr(&a), lstr(&b), lstr(&r), e);
    CHECK_EQ_INT(e, 0);
    if (perturb(&t.c, &r, &bad)) {
      CHECK(check_divide(&a, &b, &cb, &bad) != 0);
      caught++;
    }
    /* with a layout tiler, zipped_divide is logical_divide and tiled_divide
     * unpacks the rest mode */
    ag_layout z, td;
    CHECK_EQ_INT(ag_layout_zipped_divide(&t.c, &a, &tl, &z), 0);
    CHECK(ag_layout_equal(&z, &r));
    CHECK_EQ_INT(ag_layout_tiled_divide(&t.c, &a, &tl, &td), 0);
    ag_layout r1 = sub(&r, 1);
    if (r1.shape->is_leaf) {
      CHECK(ag_layout_equal(&td, &r));
    } else {
      CHECK_EQ_INT(ag_layout_rank(&td), 1 + r1.shape->n);
      ag_layout t0 = sub(&td, 0), r0 = sub(&r, 0);
      CHECK(ag_layout_equal(&t0, &r0));
      for (int i = 0; i < r1.shape->n; i++) {
        ag_layout x = sub(&td, 1 + i), y = sub(&r1, i);
        CHECK(ag_layout_equal(&x, &y));
      }
    }
    lctx_free(&t);
  }
  printf("logical_divide: %d defined (%d wrong caught), %d undefined\n", defined, caught, undefined);
  CHECK(defined > ITER / 3);
  CHECK(caught > ITER / 4);
}

/* Evaluates l at a coordinate built from integer indices into the given
 * sub-modes; used to compare rearranged layouts point by point. */
TEST(test_divide_tiler_props) {
  int defined = 0, caught = 0;
  setup();
  rng_seed(SEED0 + 7);
  for (int it = 0; it < ITER; it++) {
    lctx t;
    lctx_init(&t);
    int ra = (int)rnd(1, 3);
    ag_tuple *ms[3], *md[3];
    for (int i = 0; i < ra; i++) {
      ag_layout m = gen_layout(&t.c, layout_depth(1), 16, (int)rnd(0, 3));
      ms[i] = m.shape;
      md[i] = m.stride;
    }
    ag_layout a = {ag_tuple_make(&t.c, ra, ms), ag_tuple_make(&t.c, ra, md)};
    int n = (int)rnd(1, ra);
    ag_layout modes[3];
    for (int i = 0; i < n; i++)
      modes[i] = gen_layout(&t.c, layout_depth(1), 8, (int)rnd(0, 1));
    ag_tiler tl = {0, {0, 0}, n, modes};
    ag_layout l, z, td;
    if (ag_layout_logical_divide(&t.c, &a, &tl, &l)) {
      lctx_free(&t);
      continue;
    }
    defined++;
    CHECK_EQ_INT(ag_layout_rank(&l), ra);
    for (int i = 0; i < ra; i++) {
      ag_layout am = sub(&a, i), lm = sub(&l, i), cb;
      if (i >= n) {
        CHECK(ag_layout_equal(&am, &lm)); /* modes past the tiler stay */
        continue;
      }
      CHECK_EQ_INT(ag_layout_complement(&t.c, &modes[i], ag_layout_size(&am), &cb), 0);
      CHECK_EQ_INT(check_divide(&am, &modes[i], &cb, &lm), 0);
      ag_layout bad;
      if (perturb(&t.c, &lm, &bad)) {
        CHECK(check_divide(&am, &modes[i], &cb, &bad) != 0);
        caught++;
      }
    }
    /* zipped: ((tile_0..tile_n-1), (rest_0..rest_n-1, A_n..)) */
    CHECK_EQ_INT(ag_layout_zipped_divide(&t.c, &a, &tl, &z), 0);
    ag_layout z0 = sub(&z, 0), z1 = sub(&z, 1);
    CHECK_EQ_INT(ag_layout_rank(&z), 2);
    CHECK_EQ_INT(ag_layout_rank(&z0), n);
    CHECK_EQ_INT(ag_layout_rank(&z1), ra);
    for (int i = 0; i < ra; i++) {
      ag_layout li = sub(&l, i);
      if (i < n) {
        ag_layout zt = sub(&z0, i), zr = sub(&z1, i), lt = sub(&li, 0), lr = sub(&li, 1);
        CHECK(same_function(&zt, &lt));
        CHECK(same_function(&zr, &lr));
      } else {
        ag_layout zr = sub(&z1, i);
        CHECK(same_function(&zr, &li));
      }
    }
    /* wrong: a perturbed zipped tile no longer matches the divide's tile */
    ag_layout zt0 = sub(&z0, 0), l0 = sub(&l, 0), lt0 = sub(&l0, 0), badz;
    if (perturb(&t.c, &zt0, &badz)) {
      CHECK(!same_function(&badz, &lt0));
      caught++;
    }
    /* tiled: ((tiles), rest_0, ..., A_n, ...) */
    CHECK_EQ_INT(ag_layout_tiled_divide(&t.c, &a, &tl, &td), 0);
    CHECK_EQ_INT(ag_layout_rank(&td), 1 + ra);
    ag_layout t0 = sub(&td, 0);
    CHECK(same_function(&t0, &z0));
    for (int i = 0; i < ra; i++) {
      ag_layout x = sub(&td, 1 + i), y = sub(&z1, i);
      CHECK(same_function(&x, &y));
    }
    lctx_free(&t);
  }
  CHECK(defined > ITER / 3);
  CHECK(caught > ITER / 4);
}

/* ----------------------------------------------------------------- products */

/* R == (A, C o B): R(i + size(A)*j) == A(i) + C(B(j)) */
static int check_product(const ag_layout *a, const ag_layout *b, const ag_layout *cc,
                         const ag_layout *r) {
  int64_t sa = ref_size(a), sb = ref_size(b);
  if (ag_layout_rank(r) != 2 || ref_size(r) != sa * sb)
    return 1;
  for (int64_t j = 0; j < sb; j++)
    for (int64_t i = 0; i < sa; i++)
      if (ref_eval(r, i + sa * j) != ref_eval(a, i) + ref_eval(cc, ref_eval(b, j)))
        return 2;
  return 0;
}

/* Index of mode i (of rank R, padded with extent-1 modes) inside k. */
static int64_t mode_index(const ag_layout *l, int rank_pad, int i, int64_t k) {
  int rl = ag_layout_rank(l);
  for (int m = 0; m < i; m++) {
    if (m >= rl)
      return 0;
    ag_layout lm = sub(l, m);
    k /= ref_size(&lm);
  }
  if (i >= rl)
    return 0;
  if (i == rank_pad - 1 || i == rl - 1)
    return k;
  ag_layout lm = sub(l, i);
  return k % ref_size(&lm);
}

static int check_rank_product(ag_layout_ctx *c, const ag_layout *a, const ag_layout *b,
                              const ag_layout *cc, const ag_layout *r, int raked) {
  int ra = ag_layout_rank(a), rb = ag_layout_rank(b), R = ra > rb ? ra : rb;
  if (ag_layout_rank(r) != R)
    return 1;
  int64_t sa = ref_size(a), sb = ref_size(b);
  for (int64_t k = 0; k < sa; k++) {
    for (int64_t j = 0; j < sb; j++) {
      ag_tuple *m[8];
      for (int i = 0; i < R; i++) {
        ag_tuple *x = ag_tuple_leaf(c, mode_index(a, R, i, k));
        ag_tuple *y = ag_tuple_leaf(c, mode_index(b, R, i, j));
        ag_tuple *p[2] = {raked ? y : x, raked ? x : y};
        m[i] = ag_tuple_make(c, 2, p);
      }
      ag_tuple *crd = ag_tuple_make(c, R, m);
      int64_t v;
      if (ag_layout_eval_coord(r, crd, &v))
        return 2;
      if (v != ref_eval(a, k) + ref_eval(cc, ref_eval(b, j)))
        return 3;
    }
  }
  return 0;
}

TEST(test_product_props) {
  int defined = 0, rdef = 0, caught = 0, inj = 0;
  setup();
  rng_seed(SEED0 + 8);
  for (int it = 0; it < ITER; it++) {
    lctx t;
    lctx_init(&t);
    ag_layout a = gen_layout(&t.c, layout_depth(2), 16, (int)rnd(0, 3));
    ag_layout b = gen_layout(&t.c, layout_depth(2), 12, (int)rnd(0, 3));
    ag_tiler tl = {1, b, 0, NULL};
    ag_layout r, cc, bad;
    int64_t cot = ag_layout_size(&a) * ag_layout_cosize(&b);
    if (ag_layout_logical_product(&t.c, &a, &tl, &r) == 0) {
      defined++;
      CHECK_EQ_INT(ag_layout_complement(&t.c, &a, cot, &cc), 0);
      int e = check_product(&a, &b, &cc, &r);
      if (e)
        fprintf(stderr, "logical_product(%s, %s) = %s fails %d\n", lstr(&a), lstr(&b), lstr(&r), e);
      CHECK_EQ_INT(e, 0);
      ag_layout r0 = sub(&r, 0);
      CHECK(ag_layout_equal(&r0, &a));
      if (ref_injective(&a) && ref_injective(&b)) {
        CHECK(ref_injective(&r));
        inj++;
      }
      if (perturb(&t.c, &r, &bad)) {
        CHECK(check_product(&a, &b, &cc, &bad) != 0);
        caught++;
      }
      for (int raked = 0; raked < 2; raked++) {
        int rc = raked ? ag_layout_raked_product(&t.c, &a, &b, &r)
                       : ag_layout_blocked_product(&t.c, &a, &b, &r);
        if (rc) {
          CHECK_EQ_INT(rc, AG_EUNDEFINED);
          continue;
        }
        rdef++;
        e = check_rank_product(&t.c, &a, &b, &cc, &r, raked);
        if (e)
          fprintf(stderr, "%s_product(%s, %s) = %s fails %d\n", raked ? "raked" : "blocked",
                  lstr(&a), lstr(&b), lstr(&r), e);
        CHECK_EQ_INT(e, 0);
        if (perturb(&t.c, &r, &bad)) {
          CHECK(check_rank_product(&t.c, &a, &b, &cc, &bad, raked) != 0);
          caught++;
        }
      }
    }
    lctx_free(&t);
  }
  printf("products: %d logical, %d blocked/raked defined, %d injective, %d wrong caught\n",
         defined, rdef, inj, caught);
  CHECK(defined > ITER / 3);
  CHECK(rdef > ITER / 3);
  CHECK(caught > ITER / 3);
}

TEST(test_product_tiler_props) {
  int defined = 0, caught = 0;
  setup();
  rng_seed(SEED0 + 9);
  for (int it = 0; it < ITER / 2; it++) {
    lctx t;
    lctx_init(&t);
    int ra = (int)rnd(1, 3);
    ag_tuple *ms[3], *md[3];
    for (int i = 0; i < ra; i++) {
      ag_layout m = gen_layout(&t.c, layout_depth(1), 8, (int)rnd(0, 3));
      ms[i] = m.shape;
      md[i] = m.stride;
    }
    ag_layout a = {ag_tuple_make(&t.c, ra, ms), ag_tuple_make(&t.c, ra, md)}, r;
    int n = (int)rnd(1, ra);
    ag_layout modes[3];
    for (int i = 0; i < n; i++)
      modes[i] = gen_layout(&t.c, layout_depth(1), 6, (int)rnd(0, 1));
    ag_tiler tl = {0, {0, 0}, n, modes};
    if (ag_layout_logical_product(&t.c, &a, &tl, &r) == 0) {
      defined++;
      CHECK_EQ_INT(ag_layout_rank(&r), ra);
      for (int i = 0; i < ra; i++) {
        ag_layout am = sub(&a, i), rm = sub(&r, i), cc;
        if (i >= n) {
          CHECK(ag_layout_equal(&am, &rm));
          continue;
        }
        int64_t cot = ag_layout_size(&am) * ag_layout_cosize(&modes[i]);
        CHECK_EQ_INT(ag_layout_complement(&t.c, &am, cot, &cc), 0);
        CHECK_EQ_INT(check_product(&am, &modes[i], &cc, &rm), 0);
        ag_layout bad;
        if (perturb(&t.c, &rm, &bad)) {
          CHECK(check_product(&am, &modes[i], &cc, &bad) != 0);
          caught++;
        }
      }
    }
    lctx_free(&t);
  }
  CHECK(defined > ITER / 6);
  CHECK(caught > ITER / 6);
}

/* ----------------------------------------------------------------- swizzles */

/* Swizzle<B,M,S> from its definition, bit by bit: each bit j of the B bits
 * starting at M+max(S,0) is xored into bit j-S. */
static int64_t ref_swizzle(int b, int m, int s, int64_t x) {
  int64_t r = x;
  int lo = m + (s > 0 ? s : 0);
  for (int j = lo; j < lo + b; j++)
    if ((x >> j) & 1)
      r ^= (int64_t)1 << (j - s);
  return r;
}

TEST(test_swizzle_props) {
  lctx t;
  lctx_init(&t);
  int checked = 0, caught = 0;
  for (int b = 0; b <= 4; b++)
    for (int m = 0; m <= 4; m++)
      for (int s = -6; s <= 6; s++) {
        ag_swizzle sw = {b, m, s};
        int as = s < 0 ? -s : s;
        if (as < b) {
          CHECK_EQ_INT(ag_swizzle_check(&t.c, sw), AG_EINVAL);
          continue;
        }
        CHECK_EQ_INT(ag_swizzle_check(&t.c, sw), 0);
        int64_t n = (int64_t)1 << (b + m + as);
        unsigned char *seen = calloc((size_t)n, 1);
        int bij = 1, eq = 1, wrong = 0;
        for (int64_t x = 0; x < n; x++) {
          int64_t y = ag_swizzle_apply(sw, x);
          if (y < 0 || y >= n || seen[y])
            bij = 0;
          else
            seen[y] = 1;
          if (y != ref_swizzle(b, m, s, x))
            eq = 0;
          if (y != ref_swizzle(b, m, s + 1, x)) /* the off-by-one oracle */
            wrong = 1;
          if (ag_swizzle_apply(sw, y) != x) /* an involution */
            eq = 0;
        }
        free(seen);
        CHECK(bij);
        CHECK(eq);
        if (b > 0) {
          CHECK(wrong);
          caught += wrong;
        }
        checked++;
      }
  CHECK_EQ_INT(ag_swizzle_check(&t.c, (ag_swizzle){-1, 0, 0}), AG_EINVAL);
  CHECK_EQ_INT(ag_swizzle_check(&t.c, (ag_swizzle){3, 40, 30}), AG_EINVAL);
  CHECK(checked > 100);
  CHECK(caught > 50);
  lctx_free(&t);
}

/* ------------------------------------------------ reference vs library eval */

TEST(test_eval_matches_reference) {
  setup();
  rng_seed(SEED0 + 10);
  for (int it = 0; it < ITER; it++) {
    lctx t;
    lctx_init(&t);
    ag_layout l = gen_layout(&t.c, layout_depth(3), 256, (int)rnd(0, 4));
    int64_t n = ag_layout_size(&l);
    CHECK_EQ_INT(n, ref_size(&l));
    for (int64_t i = 0; i < 2 * n; i++) {
      int64_t v;
      CHECK_EQ_INT(ag_layout_eval_index(&l, i, &v), 0);
      CHECK_EQ_INT(v, ref_eval(&l, i));
      ag_tuple *crd;
      int64_t back;
      CHECK_EQ_INT(ag_idx2crd(&t.c, i, l.shape, &crd), 0);
      CHECK_EQ_INT(ag_layout_eval_coord(&l, crd, &v), 0);
      CHECK_EQ_INT(v, ref_eval(&l, i));
      CHECK_EQ_INT(ag_crd2idx(crd, l.shape, &back), 0);
      CHECK_EQ_INT(back, i);
    }
    lctx_free(&t);
  }
}

RUN_TESTS(T(test_compose_props), T(test_compose_tiler_props), T(test_complement_props),
          T(test_inverse_props), T(test_coalesce_props), T(test_divide_props),
          T(test_divide_tiler_props), T(test_product_props), T(test_product_tiler_props),
          T(test_swizzle_props), T(test_eval_matches_reference))
