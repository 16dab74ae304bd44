/*
 * layout_ref.h — what the layout tests share: a seeded random generator of
 * layouts, a reference evaluator written independently of the library
 * (flatten, then mixed radix with an unbounded last mode, CuTe's rule), and
 * a per-case context (arena, layout context, diagnostics).
 * Include once per test program, after check.h.
 */
#ifndef ARGUS_TEST_LAYOUT_REF_H
#define ARGUS_TEST_LAYOUT_REF_H

#include "argus/layout.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_s = 0x9e3779b97f4a7c15ull;
static inline void rng_seed(uint64_t s) { rng_s = s ? s : 1; }
static inline uint64_t rng(void) {
  rng_s ^= rng_s >> 12;
  rng_s ^= rng_s << 25;
  rng_s ^= rng_s >> 27;
  return rng_s * 2685821657736338717ull;
}
static inline int64_t rnd(int64_t lo, int64_t hi) { return lo + (int64_t)(rng() % (uint64_t)(hi - lo + 1)); }

/* ------------------------------------------------ a context for each case */
typedef struct lctx {
  ag_arena arena;
  ag_layout_ctx c;
  ag_diags d;
} lctx;

static inline void lctx_init(lctx *t) {
  ag_arena_init(&t->arena, 0);
  ag_layout_ctx_init(&t->c, &t->arena);
  ag_diags_init(&t->d);
}

static inline void lctx_free(lctx *t) {
  ag_diags_release(&t->d);
  ag_layout_ctx_release(&t->c);
  ag_arena_release(&t->arena);
}

/* ------------------------------------------------------ reference evaluator */
enum { REF_MAX = 128 };
typedef struct rflat {
  int n;
  int64_t s[REF_MAX], d[REF_MAX];
} rflat;

static inline void rflat_rec(const ag_tuple *s, const ag_tuple *d, rflat *f) {
  if (s->is_leaf) {
    if (f->n < REF_MAX) {
      f->s[f->n] = s->value;
      f->d[f->n] = d->value;
    }
    f->n++;
    return;
  }
  for (int i = 0; i < s->n; i++)
    rflat_rec(s->child[i], d->child[i], f);
}

static inline void rflatten(const ag_layout *l, rflat *f) {
  f->n = 0;
  rflat_rec(l->shape, l->stride, f);
}

static inline int64_t ref_size(const ag_layout *l) {
  rflat f;
  rflatten(l, &f);
  int64_t p = 1;
  for (int i = 0; i < f.n; i++)
    p *= f.s[i];
  return p;
}

/* L(idx) for any idx >= 0: the last flat mode takes what is left. */
static inline int64_t ref_eval(const ag_layout *l, int64_t idx) {
  rflat f;
  rflatten(l, &f);
  int64_t acc = 0;
  for (int i = 0; i < f.n; i++) {
    int64_t c = i + 1 < f.n ? idx % f.s[i] : idx;
    if (i + 1 < f.n)
      idx /= f.s[i];
    acc += c * f.d[i];
  }
  return acc;
}

/* 1 if L is injective on [0, size). */
static inline int ref_injective(const ag_layout *l) {
  int64_t n = ref_size(l);
  int64_t *v = malloc((size_t)n * sizeof *v);
  int ok = 1;
  for (int64_t i = 0; i < n; i++)
    v[i] = ref_eval(l, i);
  for (int64_t i = 0; i < n && ok; i++)
    for (int64_t j = i + 1; j < n; j++)
      if (v[i] == v[j]) {
        ok = 0;
        break;
      }
  free(v);
  return ok;
}

/* ------------------------------------------------------------- generation */
static inline ag_tuple *gen_shape(ag_layout_ctx *c, int depth, int64_t *budget) {
  static const int64_t ext[] = {1, 2, 2, 2, 3, 4, 4, 4, 6, 8};
  if (depth == 0 || rnd(0, 2) == 0 || *budget < 4) {
    int64_t e = ext[rnd(0, 9)];
    while (e > *budget && e > 1)
      e /= 2;
    if (e < 1)
      e = 1;
    *budget /= e;
    return ag_tuple_leaf(c, e);
  }
  int n = (int)rnd(1, 3);
  ag_tuple *ch[3];
  for (int i = 0; i < n; i++)
    ch[i] = gen_shape(c, depth - 1, budget);
  return ag_tuple_make(c, n, ch);
}

/* Strides congruent with shape from per-leaf values v (in flat order). */
static inline ag_tuple *with_leaves(ag_layout_ctx *c, const ag_tuple *shape, const int64_t *v, int *k) {
  if (shape->is_leaf)
    return ag_tuple_leaf(c, v[(*k)++]);
  ag_tuple *ch[REF_MAX]; /* a flat result (a CuTe left inverse) has many modes */
  for (int i = 0; i < shape->n && i < REF_MAX; i++)
    ch[i] = with_leaves(c, shape->child[i], v, k);
  return ag_tuple_make(c, shape->n, ch);
}

/* kind 0: a compact layout with its modes permuted (a bijection);
 * kind 1: compact with gaps (injective, not onto);
 * kind 2: random strides in 0..12 (anything);
 * kind 3: like 0 but with some stride-0 (broadcast) modes;
 * kind 4: random strides in -6..12 (negative ones too). */
static inline ag_layout gen_layout(ag_layout_ctx *c, int depth, int64_t max_size, int kind) {
  int64_t budget = max_size;
  ag_tuple *shape = gen_shape(c, depth, &budget);
  rflat f;
  ag_layout tmp = {shape, shape};
  rflatten(&tmp, &f);
  int n = f.n, perm[REF_MAX];
  int64_t v[REF_MAX];
  for (int i = 0; i < n; i++)
    perm[i] = i;
  for (int i = n - 1; i > 0; i--) {
    int j = (int)rnd(0, i), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  int64_t pre = 1;
  for (int i = 0; i < n; i++) {
    int m = perm[i];
    switch (kind) {
    case 0: v[m] = pre; pre *= f.s[m]; break;
    case 1: v[m] = pre; pre *= f.s[m] * rnd(1, 2); break;
    case 2: v[m] = rnd(0, 12); break;
    case 4: v[m] = rnd(-6, 12); break;
    default:
      if (rnd(0, 3) == 0) {
        v[m] = 0;
      } else {
        v[m] = pre;
        pre *= f.s[m];
      }
    }
  }
  int k = 0;
  ag_layout l = {shape, with_leaves(c, shape, v, &k)};
  return l;
}

/* Copy of l with the stride of the first leaf of extent > 1 increased by
 * one: a deliberately wrong result whose function differs from l's at an
 * index inside the domain. Returns 0 when l has no such leaf. */
static inline ag_tuple *perturb_rec(ag_layout_ctx *c, const ag_tuple *s, const ag_tuple *d, int *done) {
  if (s->is_leaf) {
    int hit = !*done && s->value > 1;
    if (hit)
      *done = 1;
    return ag_tuple_leaf(c, d->value + hit);
  }
  ag_tuple *ch[64];
  for (int i = 0; i < s->n && i < 64; i++)
    ch[i] = perturb_rec(c, s->child[i], d->child[i], done);
  return ag_tuple_make(c, s->n, ch);
}

static inline int perturb(ag_layout_ctx *c, const ag_layout *l, ag_layout *out) {
  int done = 0;
  out->shape = l->shape;
  out->stride = perturb_rec(c, l->shape, l->stride, &done);
  return done;
}

/* Copies s into one of 8 static buffers (for printing in messages) and
 * releases it. */
static inline const char *ring(ag_str *s) {
  static char buf[8][512];
  static int k;
  char *b = buf[k++ % 8];
  snprintf(b, 512, "%s", ag_str_cstr(s));
  ag_str_release(s);
  return b;
}

static inline const char *lstr(const ag_layout *l) {
  ag_str s = AG_STR_INIT;
  ag_layout_print(l, &s);
  return ring(&s);
}

#endif
