/*
 * tile_ref.c — the concrete reference interpreter (see tile_ref.h). Runs
 * ~10^5 statement-thread steps per second; the examples take well under a
 * second per block. Test code: it stops at the first construct it does not
 * know, with a message, rather than guessing.
 */
#include "tile_ref.h"

#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ tags */
typedef struct tset {
  int n, top;
  ag__ctag *t;
} tset; /* NULL: bottom */

typedef enum {
  R_NONE, R_INT, R_FLOAT, R_DTYPE, R_TILE, R_ELEM, R_DATA, R_TUPLE, R_LAYOUT, R_SWZ,
  R_TAGV, R_TAGFN, R_INTRIN, R_IOP, R_POISON
} rk;

typedef struct rtile {
  int sp; /* 0 global, 1 shared, 2 register */
  ag__dt dt;
  int tensor, rank;
  int64_t dims[16], stride[16], gbase; /* global: bytes */
  int buf;
  int64_t base;
  ag_layout layout;
  int swizzled;
  ag_swizzle swz; /* bytes */
} rtile;

typedef struct rtagfn {
  const char *target;
  int rank;
  const char **vars;
  const ag_tile_node *body;
  struct rbind *env;
  int nenv;
} rtagfn;

typedef struct rval {
  rk k;
  uint32_t i;
  int dyn;
  ag__dt dt;
  rtile *t;
  int64_t addr;
  int n;
  const tset **bytes;
  struct rval *items;
  ag_layout layout;
  ag_swizzle swz;
  const tset *tag;
  int proj, literal;
  rtagfn *fn;
  const ag__intrin *in;
  const char *op;
} rval;

typedef struct rbind {
  const char *name;
  rval *v;
} rbind;

typedef struct rth {
  rbind *b;
  int nb, cap;
  AG_VEC(const tset **) regs;
  AG_VEC(int64_t) regsz;
} rth;

typedef struct swrite {
  const tset *tags;
  int writer, epoch, group, vis_epoch;
  int64_t pc, done_pc;
} swrite;

typedef struct sbyte {
  AG_VEC(int) w;
} sbyte;

typedef struct sbuf {
  int64_t size;
  sbyte *bytes;
} sbuf;

typedef struct rparam {
  const char *name;
  int is_tensor;
  ag__dt dt;
  int rank;
  int64_t dims[16];
  rtagfn *fn;
} rparam;

typedef struct rx {
  const ag_tile_program *prog;
  const ref_cfg *cfg;
  ref_run *run;
  ag_arena ar;        /* what lives for the whole run */
  ag_arena *tmp;      /* the current statement's scratch */
  ag_layout_ctx *lcp; /* layouts built by the current statement */
  ag_map interned;    /* tag sets by content */
  jmp_buf fail;
  int T;
  int64_t tdim[3];
  rth *th;
  unsigned char *active;
  AG_VEC(rparam) params;
  AG_VEC(sbuf) sbufs;
  AG_VEC(swrite) writes;
  int64_t pc;
  int epoch, ngroups;
  AG_VEC(const char *) loopname;
  AG_VEC(int64_t) loopval;
  int cur; /* the thread being evaluated */
} rx;

static _Noreturn void fail(rx *x, const ag_tile_node *n, const char *fmt, ...) AG_PRINTF(3, 4);
static _Noreturn void fail(rx *x, const ag_tile_node *n, const char *fmt, ...) {
  char msg[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(x->run->err, sizeof x->run->err, "line %d: %s", n ? n->line : 0, msg);
  longjmp(x->fail, 1);
}

static void *al(rx *x, size_t n) { /* scratch: freed after the statement */
  void *p = ag_arena_alloc(x->tmp, n);
  if (!p)
    fail(x, NULL, "out of memory");
  return p;
}

static void *alp(rx *x, size_t n) { /* kept for the whole run */
  void *p = ag_arena_alloc(&x->ar, n);
  if (!p)
    fail(x, NULL, "out of memory");
  return p;
}

/* 32-bit unsigned integers, as the solver computes (the one definition
 * of the DSL's integer semantics, shared with the checker). */
#define u32op ag__u32_op

/* --------------------------------------------------------------- tag sets */
static int tag_eq(const ag__ctag *a, const ag__ctag *b) {
  return a->n == b->n && !memcmp(a->v, b->v, (size_t)a->n * sizeof a->v[0]);
}

/* Tag sets are interned: one copy per content, kept for the whole run. */
static const tset *intern(rx *x, int top, const ag__ctag *t, int n) {
  if (!top && n == 0)
    return NULL;
  size_t klen = sizeof(int64_t) * (size_t)(2 + n * (AG__CTAG_MAX + 1));
  int64_t *key = calloc(1, klen);
  key[0] = top;
  key[1] = n;
  for (int i = 0; i < n; i++) {
    key[2 + i * (AG__CTAG_MAX + 1)] = t[i].n;
    ag__mcpy(&key[3 + i * (AG__CTAG_MAX + 1)], t[i].v, (size_t)t[i].n * sizeof t[i].v[0]);
  }
  tset *hit = ag_map_get(&x->interned, key, klen);
  if (!hit) {
    hit = alp(x, sizeof *hit);
    hit->top = top;
    hit->n = n;
    hit->t = alp(x, (size_t)(n + 1) * sizeof *hit->t);
    if (n)
      ag__mcpy(hit->t, t, (size_t)n * sizeof *t);
    if (ag_map_put(&x->interned, key, klen, hit)) {
      free(key);
      fail(x, NULL, "out of memory");
    }
  }
  free(key);
  return hit;
}

static const tset *ts_one(rx *x, const ag__ctag *t) {
  if (t->top)
    return intern(x, 1, NULL, 0);
  ag__ctag c;
  memset(&c, 0, sizeof c);
  c.n = t->n;
  ag__mcpy(c.v, t->v, (size_t)t->n * sizeof t->v[0]);
  return intern(x, 0, &c, 1);
}

static int ctag_cmp(const void *a, const void *b) {
  const ag__ctag *p = a, *q = b;
  if (p->n != q->n)
    return p->n < q->n ? -1 : 1;
  for (int i = 0; i < p->n; i++)
    if (p->v[i] != q->v[i])
      return p->v[i] < q->v[i] ? -1 : 1;
  return 0;
}

static const tset *ts_union(rx *x, const tset *a, const tset *b) {
  if (!a || a == b)
    return b;
  if (!b)
    return a;
  ag__ctag *m = al(x, (size_t)(a->n + b->n + 1) * sizeof *m);
  int n = 0;
  for (int s = 0; s < 2; s++) {
    const tset *z = s ? b : a;
    for (int i = 0; i < z->n; i++) {
      int dup = 0;
      for (int j = 0; j < n && !dup; j++)
        dup = tag_eq(&m[j], &z->t[i]);
      if (!dup) {
        memset(&m[n], 0, sizeof m[n]);
        m[n].n = z->t[i].n;
        ag__mcpy(m[n].v, z->t[i].v, (size_t)z->t[i].n * sizeof z->t[i].v[0]);
        n++;
      }
    }
  }
  qsort(m, (size_t)n, sizeof *m, ctag_cmp);
  return intern(x, a->top || b->top, m, n);
}

static const tset *ts_top(rx *x) {
  ag__ctag t = {1, 0, {0}};
  return ts_one(x, &t);
}

/* ------------------------------------------------------------------- env */
static rval *nv(rx *x, rk k) {
  rval *v = al(x, sizeof *v);
  v->k = k;
  return v;
}

static rval *vint(rx *x, uint32_t i, int dyn) {
  rval *v = nv(x, R_INT);
  v->i = i;
  v->dyn = dyn;
  return v;
}

static rval *lookup_in(rbind *b, int n, const char *name) {
  for (int i = n - 1; i >= 0; i--)
    if (!strcmp(b[i].name, name))
      return b[i].v;
  return NULL;
}

static ag_tuple *copy_tuple(rx *x, const ag_tuple *t) {
  ag_tuple *r = alp(x, sizeof *r);
  *r = *t;
  if (!t->is_leaf) {
    r->child = alp(x, (size_t)(t->n + 1) * sizeof *r->child);
    for (int i = 0; i < t->n; i++)
      r->child[i] = copy_tuple(x, t->child[i]);
  }
  return r;
}

static void copy_layout(rx *x, ag_layout *l) {
  if (l->shape)
    l->shape = copy_tuple(x, l->shape);
  if (l->stride)
    l->stride = copy_tuple(x, l->stride);
}

/* A value that outlives its statement: copied out of the scratch arena. */
static rval *persist(rx *x, const rval *v) {
  rval *r = alp(x, sizeof *r);
  *r = *v;
  if (v->t) {
    r->t = alp(x, sizeof *r->t);
    *r->t = *v->t;
    copy_layout(x, &r->t->layout);
  }
  if (v->k == R_LAYOUT)
    copy_layout(x, &r->layout);
  if (v->k == R_DATA) {
    r->bytes = alp(x, (size_t)(v->n + 1) * sizeof *r->bytes);
    ag__mcpy(r->bytes, v->bytes, (size_t)v->n * sizeof *r->bytes);
  }
  if (v->k == R_TUPLE) {
    r->items = alp(x, (size_t)(v->n + 1) * sizeof *r->items);
    for (int i = 0; i < v->n; i++)
      r->items[i] = *persist(x, &v->items[i]);
  }
  return r;
}

static void bind_raw(rx *x, rth *t, const char *name, rval *v);
static void bind(rx *x, rth *t, const char *name, rval *v) { bind_raw(x, t, name, persist(x, v)); }

static void bind_raw(rx *x, rth *t, const char *name, rval *v) {
  for (int i = 0; i < t->nb; i++)
    if (!strcmp(t->b[i].name, name)) {
      t->b[i].v = v;
      return;
    }
  if (t->nb == t->cap) {
    int cap = t->cap ? t->cap * 2 : 32;
    rbind *nb = alp(x, (size_t)cap * sizeof *nb);
    if (t->nb)
      ag__mcpy(nb, t->b, (size_t)t->nb * sizeof *nb);
    t->b = nb;
    t->cap = cap;
  }
  t->b[t->nb].name = name;
  t->b[t->nb].v = v;
  t->nb++;
}

/* --------------------------------------------------------------- forward */
static rval *ev(rx *x, const ag_tile_node *n);
static void exec_block(rx *x, const ag_tile_list *l);

static uint32_t as_u(rx *x, const ag_tile_node *n, rval *v) {
  if (v->k != R_INT)
    fail(x, n, "expected an integer");
  return v->i;
}

static ag__dt as_dt(rx *x, const ag_tile_node *n) {
  rval *v = ev(x, n);
  if (v->k != R_DTYPE)
    fail(x, n, "expected a dtype");
  return v->dt;
}

/* ---------------------------------------------------------------- layouts */
static ag_tuple *to_tuple(rx *x, const ag_tile_node *n, rval *v) {
  if (v->k == R_TUPLE) {
    ag_tuple **k = al(x, (size_t)v->n * sizeof *k);
    for (int i = 0; i < v->n; i++)
      k[i] = to_tuple(x, n, &v->items[i]);
    return ag_tuple_make(x->lcp, v->n, k);
  }
  return ag_tuple_leaf(x->lcp, as_u(x, n, v));
}

static ag_tuple *rm_stride(rx *x, const ag_tuple *s, int64_t *run) {
  if (s->is_leaf) {
    ag_tuple *t = ag_tuple_leaf(x->lcp, *run);
    *run *= s->value;
    return t;
  }
  ag_tuple **k = al(x, (size_t)s->n * sizeof *k);
  for (int i = s->n - 1; i >= 0; i--)
    k[i] = rm_stride(x, s->child[i], run);
  return ag_tuple_make(x->lcp, s->n, k);
}

static ag_layout layout_of(rx *x, const ag_tile_node *n, rval *v) {
  if (v->k == R_LAYOUT)
    return v->layout;
  ag_tuple *s = to_tuple(x, n, v);
  if (s->is_leaf) {
    ag_tuple *k[1] = {s};
    s = ag_tuple_make(x->lcp, 1, k);
  }
  int64_t run = 1;
  ag_layout l;
  if (ag_layout_make(x->lcp, s, rm_stride(x, s, &run), &l))
    fail(x, n, "bad layout");
  return l;
}

static int64_t swz(const rtile *t, int64_t b) {
  return t->swizzled ? ag_swizzle_apply(t->swz, b) : b;
}

/* ------------------------------------------------------------- tag funcs */
static rtagfn *mk_tagfn(rx *x, const ag_tile_node *arrow) {
  const ag_tile_node *lhs = arrow->a;
  rtagfn *f = alp(x, sizeof *f);
  f->target = lhs->a->name;
  f->rank = lhs->list.n;
  f->vars = alp(x, (size_t)f->rank * sizeof *f->vars);
  for (int i = 0; i < f->rank; i++)
    f->vars[i] = lhs->list.v[i]->name;
  f->body = arrow->b;
  rth *t = &x->th[x->cur];
  f->env = alp(x, (size_t)(t->nb + 1) * sizeof *f->env);
  ag__mcpy(f->env, t->b, (size_t)t->nb * sizeof *f->env);
  f->nenv = t->nb;
  return f;
}

static ag__ctag apply_fn(rx *x, rtagfn *f, const uint32_t *coord) {
  rth *t = &x->th[x->cur];
  rbind *saved = t->b;
  int snb = t->nb, scap = t->cap;
  t->b = al(x, (size_t)(f->nenv + f->rank + 1) * sizeof *t->b);
  ag__mcpy(t->b, f->env, (size_t)f->nenv * sizeof *t->b);
  t->nb = f->nenv;
  t->cap = f->nenv + f->rank + 1;
  for (int i = 0; i < f->rank; i++)
    bind_raw(x, t, f->vars[i], vint(x, coord[i], 1));
  rval *v = ev(x, f->body);
  t->b = saved;
  t->nb = snb;
  t->cap = scap;
  ag__ctag c;
  memset(&c, 0, sizeof c);
  if (v->k == R_TAGV) {
    c.top = v->tag && v->tag->top;
    return c;
  }
  int n = v->k == R_TUPLE ? v->n : 1;
  c.n = n;
  for (int i = 0; i < n && i < AG__CTAG_MAX; i++)
    c.v[i] = as_u(x, f->body, v->k == R_TUPLE ? &v->items[i] : v);
  return c;
}

/* ------------------------------------------------------------------ memory */
static const tset **load(rx *x, const ag_tile_node *n, rtile *t, int64_t addr, int *nbytes) {
  int w = ag__dt_size(t->dt);
  const tset **b = al(x, (size_t)w * sizeof *b);
  *nbytes = w;
  if (t->sp == 2) {
    const tset **r = x->th[x->cur].regs.v[t->buf];
    for (int j = 0; j < w; j++)
      b[j] = r[addr + j];
    return b;
  }
  if (t->sp == 1) {
    sbuf *s = &x->sbufs.v[t->buf];
    for (int j = 0; j < w; j++) {
      int64_t a = addr + j;
      const tset *acc = NULL;
      if (a >= 0 && a < s->size)
        for (size_t k = 0; k < s->bytes[a].w.n; k++) {
          const swrite *wr = &x->writes.v[s->bytes[a].w.v[k]];
          int settled = (wr->writer == x->cur && wr->done_pc <= x->pc) || wr->vis_epoch <= x->epoch;
          acc = ts_union(x, acc, settled ? wr->tags : ts_top(x));
        }
      b[j] = acc;
    }
    return b;
  }
  /* global: the element of every byte, by its actual coordinates */
  rparam *p = &x->params.v[t->tensor];
  int es = ag__dt_size(p->dt);
  for (int j = 0; j < w; j++) {
    if (!p->fn) {
      b[j] = NULL;
      continue;
    }
    uint32_t el = u32op(AG_X_DIV, (uint32_t)(addr + j), (uint32_t)es);
    uint32_t co[16];
    for (int k = p->rank - 1; k >= 0; k--) {
      co[k] = k ? u32op(AG_X_MOD, el, (uint32_t)p->dims[k]) : el;
      el = u32op(AG_X_DIV, el, (uint32_t)p->dims[k]);
    }
    ag__ctag c = apply_fn(x, p->fn, co);
    b[j] = ts_one(x, &c);
  }
  (void)n;
  return b;
}

static void shared_write(rx *x, rtile *t, int64_t addr, const tset **bytes, int w, int group) {
  sbuf *s = &x->sbufs.v[t->buf];
  for (int j = 0; j < w; j++) {
    int64_t a = addr + j;
    if (a < 0 || a >= s->size)
      continue;
    swrite wr = {bytes[j], x->cur, x->epoch, group, group < 0 ? x->epoch + 1 : 1 << 30, x->pc,
                 group < 0 ? x->pc : INT64_MAX};
    if (ag_vec_push(&x->writes, wr) || ag_vec_push(&s->bytes[a].w, (int)x->writes.n - 1))
      fail(x, NULL, "out of memory");
  }
}

/* ------------------------------------------------------------------ tiles */
static rval *index_tile(rx *x, const ag_tile_node *n, rtile *t) {
  if (t->sp == 0) {
    rtile *s = al(x, sizeof *s);
    *s = *t;
    int kept = 0;
    for (int i = 0; i < t->rank; i++) {
      const ag_tile_node *ix = i < n->list.n ? n->list.v[i] : NULL;
      if (!ix || ix->kind == AG_TN_SLICE) {
        uint32_t lo = ix && ix->a ? as_u(x, ix->a, ev(x, ix->a)) : 0;
        uint32_t hi = ix && ix->b ? as_u(x, ix->b, ev(x, ix->b)) : (uint32_t)t->dims[i];
        s->gbase = (uint32_t)(s->gbase + lo * t->stride[i]);
        s->dims[kept] = hi - lo;
        s->stride[kept] = t->stride[i];
        kept++;
        continue;
      }
      uint32_t v = as_u(x, ix, ev(x, ix));
      s->gbase = (uint32_t)(s->gbase + (uint32_t)(v * (uint32_t)t->stride[i]));
    }
    s->rank = kept;
    rval *r = nv(x, kept ? R_TILE : R_ELEM);
    r->t = s;
    r->addr = s->gbase;
    return r;
  }
  int rank = ag_layout_rank(&t->layout);
  int64_t off = 0;
  ag_tuple *ks[16], *kst[16];
  int kept = 0;
  for (int i = 0; i < rank; i++) {
    ag_layout mode;
    ag_layout_mode(x->lcp, &t->layout, i, &mode);
    const ag_tile_node *ix = i < n->list.n ? n->list.v[i] : NULL;
    if (!ix || ix->kind == AG_TN_SLICE) {
      if (ix && (ix->a || ix->b)) {
        int64_t lo = ix->a ? as_u(x, ix->a, ev(x, ix->a)) : 0;
        int64_t hi = ix->b ? as_u(x, ix->b, ev(x, ix->b)) : mode.shape->value;
        off += lo * mode.stride->value;
        ks[kept] = ag_tuple_leaf(x->lcp, hi - lo);
        kst[kept] = ag_tuple_leaf(x->lcp, mode.stride->value);
      } else {
        ks[kept] = mode.shape;
        kst[kept] = mode.stride;
      }
      kept++;
      continue;
    }
    uint32_t v = as_u(x, ix, ev(x, ix));
    int64_t o;
    if (ag_layout_eval_index(&mode, v, &o))
      fail(x, ix, "index out of the layout's domain");
    off += o;
  }
  int64_t byte = t->base + off * ag__dt_size(t->dt);
  if (!kept) {
    rval *r = nv(x, R_ELEM);
    r->t = t;
    r->addr = t->sp == 1 ? swz(t, byte) : byte;
    return r;
  }
  rtile *s = al(x, sizeof *s);
  *s = *t;
  s->base = byte;
  ag_layout_make(x->lcp, ag_tuple_make(x->lcp, kept, ks), ag_tuple_make(x->lcp, kept, kst),
                 &s->layout);
  rval *r = nv(x, R_TILE);
  r->t = s;
  return r;
}

static rval *new_regs(rx *x, ag__dt dt, ag_layout l) {
  int64_t bytes = ag_layout_cosize(&l) * ag__dt_size(dt);
  rth *t = &x->th[x->cur];
  const tset **b = alp(x, (size_t)(bytes ? bytes : 1) * sizeof *b);
  if (ag_vec_push(&t->regs, b) || ag_vec_push(&t->regsz, bytes))
    fail(x, NULL, "out of memory");
  rtile *rt = al(x, sizeof *rt);
  rt->sp = 2;
  rt->dt = dt;
  rt->buf = (int)t->regs.n - 1;
  rt->layout = l;
  rval *v = nv(x, R_TILE);
  v->t = rt;
  return v;
}

/* Bytes of a value as data: loads elements; constants are bottom. */
static const tset **data_of(rx *x, const ag_tile_node *n, rval *v, int *nb, ag__dt *dt) {
  if (v->k == R_DATA) {
    *nb = v->n;
    *dt = v->dt;
    return v->bytes;
  }
  if (v->k == R_ELEM) {
    *dt = v->t->dt;
    return load(x, n, v->t, v->addr, nb);
  }
  if (v->k == R_TILE && v->t->sp == 2 && ag_layout_size(&v->t->layout) == 1) {
    *dt = v->t->dt;
    return load(x, n, v->t, v->t->base, nb);
  }
  *nb = 0;
  *dt = DT_NONE;
  return NULL;
}

static const tset *union_bytes(rx *x, const tset **b, int n) {
  const tset *u = NULL;
  for (int j = 0; j < n; j++)
    u = ts_union(x, u, b[j]);
  return u;
}

static rval *mk_data(rx *x, ag__dt dt, int n, const tset *all) {
  rval *v = nv(x, R_DATA);
  v->dt = dt;
  v->n = n;
  v->bytes = al(x, (size_t)(n ? n : 1) * sizeof *v->bytes);
  for (int j = 0; j < n; j++)
    v->bytes[j] = all;
  return v;
}

/* Arithmetic: the union of all operand tags, on every byte. */
static rval *arith(rx *x, const ag_tile_node *n, rval **ops, int k) {
  ag__dt dt = DT_NONE;
  const tset *u = NULL;
  for (int i = 0; i < k; i++) {
    int nb;
    ag__dt d;
    const tset **b = data_of(x, n, ops[i], &nb, &d);
    if (d != DT_NONE)
      dt = d;
    u = ts_union(x, u, union_bytes(x, b, nb));
  }
  if (dt == DT_NONE)
    fail(x, n, "untyped arithmetic");
  return mk_data(x, dt, ag__dt_size(dt), u);
}

/* ------------------------------------------------------------- intrinsics */
static void reg_range(rx *x, const ag_tile_node *n, rval *v, int *buf, int64_t *base,
                      int64_t *size) {
  if (v->k == R_ELEM && v->t->sp == 2) {
    *buf = v->t->buf;
    *base = v->addr;
    *size = ag__dt_size(v->t->dt);
    return;
  }
  if (v->k != R_TILE || v->t->sp != 2)
    fail(x, n, "expected registers");
  *buf = v->t->buf;
  *base = v->t->base;
  *size = ag_layout_size(&v->t->layout) * ag__dt_size(v->t->dt);
}

/* PTX ISA fragment layouts of mma.m16n8k16 (bf16/f16 A, B; f32 C/D). */
static void mma_coord(const char *op, uint32_t lane, uint32_t v, uint32_t *r, uint32_t *c) {
  uint32_t g = lane / 4, q = lane % 4;
  if (op[0] == 'a') {
    *r = g + 8 * ((v / 2) % 2);
    *c = 2 * q + v % 2 + 8 * (v / 4);
  } else if (op[0] == 'b') { /* (n, k) */
    *r = g;
    *c = 2 * q + v % 2 + 8 * (v / 2);
  } else { /* (m, n) */
    *r = g + 8 * (v / 2);
    *c = 2 * q + v % 2;
  }
}

static void do_ldmatrix(rx *x, const ag_tile_node *n, const ag__intrin *in) {
  int T = x->T;
  int *buf = al(x, (size_t)T * sizeof *buf);
  int64_t *base = al(x, (size_t)T * sizeof *base), *src = al(x, (size_t)T * sizeof *src);
  int sbufi = -1;
  for (int t = 0; t < T; t++) {
    x->cur = t;
    int64_t size;
    reg_range(x, n->list.v[0], ev(x, n->list.v[0]), &buf[t], &base[t], &size);
    rval *s = ev(x, n->list.v[1]);
    if (s->k != R_ELEM || s->t->sp != 1)
      fail(x, n, "ldmatrix source");
    src[t] = s->addr;
    sbufi = s->t->buf;
  }
  rtile st = {0};
  st.sp = 1;
  st.dt = DT_U8;
  st.buf = sbufi;
  for (int t = 0; t < T; t++) {
    x->cur = t;
    int lane = t % 32, w0 = t - lane;
    for (int v = 0; v < 2 * in->num; v++) {
      int i = v / 2, h = v % 2, row, col;
      if (!in->trans) {
        row = lane / 4;
        col = 2 * (lane % 4) + h;
      } else {
        row = 2 * (lane % 4) + h;
        col = lane / 4;
      }
      int provider = w0 + 8 * i + row;
      for (int j = 0; j < 2; j++) {
        int nb;
        const tset **b = load(x, n, &st, src[provider] + 2 * col + j, &nb);
        x->th[t].regs.v[buf[t]][base[t] + 2 * v + j] = b[0];
      }
    }
  }
}

/* ------------------------------------------------------------------ eval */
static rval *call(rx *x, const ag_tile_node *n);

static rval *ev(rx *x, const ag_tile_node *n) {
  switch (n->kind) {
  case AG_TN_INT: return vint(x, (uint32_t)n->ival, 0);
  case AG_TN_FLOAT: return nv(x, R_FLOAT);
  case AG_TN_BOOL: return vint(x, (uint32_t)n->ival, 0);
  case AG_TN_NAME: {
    rval *v = lookup_in(x->th[x->cur].b, x->th[x->cur].nb, n->name);
    if (v) {
      if (v->k == R_POISON)
        fail(x, n, "poisoned name");
      return v;
    }
    ag__dt dt = ag__dt_lookup(n->name);
    if (dt != DT_NONE) {
      v = nv(x, R_DTYPE);
      v->dt = dt;
      return v;
    }
    const ag__intrin *in = ag__intrin_lookup(n->name);
    if (in) {
      v = nv(x, R_INTRIN);
      v->in = in;
      return v;
    }
    if (!strcmp(n->name, "top") || !strcmp(n->name, "bot")) {
      v = nv(x, R_TAGV);
      v->tag = n->name[0] == 't' ? ts_top(x) : NULL;
      v->proj = -1;
      v->literal = 1;
      return v;
    }
    fail(x, n, "unknown name %s", n->name);
  }
  case AG_TN_ATTR: {
    if (n->a->kind == AG_TN_NAME && !strcmp(n->a->name, "threadIdx")) {
      uint32_t t = (uint32_t)x->cur;
      int ax = n->name[0] - 'x';
      uint32_t v = ax == 0 ? t % (uint32_t)x->tdim[0]
                   : ax == 1 ? (t / (uint32_t)x->tdim[0]) % (uint32_t)x->tdim[1]
                             : t / (uint32_t)(x->tdim[0] * x->tdim[1]);
      return vint(x, v, 1);
    }
    if (n->a->kind == AG_TN_NAME && !strcmp(n->a->name, "blockIdx"))
      return vint(x, (uint32_t)x->cfg->bid[n->name[0] - 'x'], 1);
    rval *b = ev(x, n->a);
    if (b->k == R_INTRIN) {
      rval *v = nv(x, R_IOP);
      v->in = b->in;
      v->op = n->name;
      return v;
    }
    fail(x, n, "attribute");
  }
  case AG_TN_BINOP: {
    rval *a = ev(x, n->a), *b = ev(x, n->b);
    if (a->k == R_INT && b->k == R_INT) {
      ag_expr_op op = n->op == AG_OP_ADD ? AG_X_ADD : n->op == AG_OP_SUB ? AG_X_SUB
                      : n->op == AG_OP_MUL ? AG_X_MUL
                      : (n->op == AG_OP_DIV || n->op == AG_OP_FLOORDIV) ? AG_X_DIV
                      : n->op == AG_OP_MOD ? AG_X_MOD : n->op == AG_OP_AND ? AG_X_AND
                      : n->op == AG_OP_OR ? AG_X_OR : n->op == AG_OP_XOR ? AG_X_XOR
                      : n->op == AG_OP_SHL ? AG_X_SHL : AG_X_SHR;
      return vint(x, u32op(op, a->i, b->i), a->dyn | b->dyn);
    }
    if (a->k == R_FLOAT && b->k == R_FLOAT)
      return a;
    rval *ops[2] = {a, b};
    return arith(x, n, ops, 2);
  }
  case AG_TN_UNOP: {
    rval *a = ev(x, n->a);
    if (a->k == R_INT)
      return vint(x, n->op == AG_OP_NEG ? 0u - a->i : n->op == AG_OP_INV ? ~a->i : a->i, a->dyn);
    if (a->k == R_FLOAT)
      return a;
    rval *ops[1] = {a};
    return arith(x, n, ops, 1);
  }
  case AG_TN_CMP: {
    rval *a = ev(x, n->a), *b = ev(x, n->b);
    uint32_t p = as_u(x, n, a), q = as_u(x, n, b), r = 0;
    switch (n->op) {
    case AG_OP_EQ: r = p == q; break;
    case AG_OP_NE: r = p != q; break;
    case AG_OP_LT: r = p < q; break;
    case AG_OP_LE: r = p <= q; break;
    case AG_OP_GT: r = p > q; break;
    case AG_OP_GE: r = p >= q; break;
    default: break;
    }
    return vint(x, r, a->dyn | b->dyn);
  }
  case AG_TN_LAND:
  case AG_TN_LOR: {
    rval *a = ev(x, n->a), *b = ev(x, n->b);
    uint32_t r = n->kind == AG_TN_LAND ? (as_u(x, n, a) && as_u(x, n, b))
                                       : (as_u(x, n, a) || as_u(x, n, b));
    return vint(x, r, a->dyn | b->dyn);
  }
  case AG_TN_LNOT: {
    rval *a = ev(x, n->a);
    return vint(x, !as_u(x, n, a), a->dyn);
  }
  case AG_TN_TERNARY: {
    rval *c = ev(x, n->b);
    if (!c->dyn)
      return ev(x, as_u(x, n, c) ? n->a : n->c);
    rval *a = ev(x, n->a), *b = ev(x, n->c);
    if (a->k == R_INT && b->k == R_INT)
      fail(x, n, "dynamic integer select");
    int na, nb;
    ag__dt da, db;
    const tset **ba = data_of(x, n, a, &na, &da), **bb = data_of(x, n, b, &nb, &db);
    ag__dt dt = da != DT_NONE ? da : db;
    int w = ag__dt_size(dt);
    rval *v = mk_data(x, dt, w, NULL);
    for (int j = 0; j < w; j++)
      v->bytes[j] = ts_union(x, j < na ? ba[j] : NULL, j < nb ? bb[j] : NULL);
    return v;
  }
  case AG_TN_CALL: return call(x, n);
  case AG_TN_INDEX: {
    if (n->a->kind == AG_TN_CALL && n->a->a->kind == AG_TN_NAME && !strcmp(n->a->a->name, "tag")) {
      rval *t = ev(x, n->a);
      rval *v = nv(x, R_TAGV);
      *v = *t;
      v->proj = (int)as_u(x, n, ev(x, n->list.v[0]));
      return v;
    }
    rval *b = ev(x, n->a);
    if (b->k == R_TUPLE)
      return &b->items[as_u(x, n, ev(x, n->list.v[0]))];
    if (b->k != R_TILE)
      fail(x, n, "index");
    return index_tile(x, n, b->t);
  }
  case AG_TN_TUPLE: {
    rval *v = nv(x, R_TUPLE);
    v->n = n->list.n;
    v->items = al(x, (size_t)(v->n ? v->n : 1) * sizeof *v->items);
    for (int i = 0; i < v->n; i++)
      v->items[i] = *ev(x, n->list.v[i]);
    return v;
  }
  default: fail(x, n, "expression kind %d", n->kind);
  }
}

static rval *view(rx *x, const ag_tile_node *n) {
  rval *b = ev(x, n->a->a);
  rval *shape = ev(x, n->list.v[0]);
  ag__dt dt = as_dt(x, n->list.v[1]);
  if (b->k == R_DATA) {
    ag_layout one;
    ag_layout_make(x->lcp, ag_tuple_leaf(x->lcp, 1), ag_tuple_leaf(x->lcp, 0), &one);
    rval *t = new_regs(x, b->dt, one);
    const tset **r = x->th[x->cur].regs.v[t->t->buf];
    for (int j = 0; j < b->n; j++)
      r[j] = b->bytes[j];
    b = t;
  }
  rtile *t = b->t, *s = al(x, sizeof *s);
  *s = *t;
  s->dt = dt;
  if (t->sp == 0) {
    int m = shape->k == R_TUPLE ? shape->n : 1;
    s->rank = m;
    int64_t st = ag__dt_size(dt);
    for (int i = m - 1; i >= 0; i--) {
      s->dims[i] = as_u(x, n, shape->k == R_TUPLE ? &shape->items[i] : shape);
      s->stride[i] = st;
      st *= s->dims[i];
    }
  } else {
    s->layout = layout_of(x, n, shape);
    if (n->list.n == 3) {
      rval *z = ev(x, n->list.v[2]);
      s->swizzled = 1;
      s->swz = z->swz;
      int l = 0;
      while ((1 << l) < ag__dt_size(dt))
        l++;
      s->swz.m += l;
    }
  }
  rval *v = nv(x, R_TILE);
  v->t = s;
  return v;
}

static rval *call(rx *x, const ag_tile_node *n) {
  const ag_tile_node *f = n->a;
  if (f->kind == AG_TN_ATTR && !strcmp(f->name, "view"))
    return view(x, n);
  if (f->kind == AG_TN_ATTR) {
    rval *op = ev(x, f);
    uint32_t r, c;
    mma_coord(op->op, as_u(x, n, ev(x, n->list.v[0])), as_u(x, n, ev(x, n->list.v[1])), &r, &c);
    rval *v = nv(x, R_TUPLE);
    v->n = 2;
    v->items = al(x, 2 * sizeof *v->items);
    v->items[0] = *vint(x, r, 1);
    v->items[1] = *vint(x, c, 1);
    return v;
  }
  const char *fn = f->name;
  if (!strcmp(fn, "make_local")) {
    return new_regs(x, as_dt(x, n->list.v[1]), layout_of(x, n, ev(x, n->list.v[0])));
  }
  if (!strcmp(fn, "tag")) {
    rval *e = ev(x, n->list.v[0]);
    int nb;
    ag__dt dt;
    const tset **b = data_of(x, n, e, &nb, &dt);
    rval *v = nv(x, R_TAGV);
    v->tag = union_bytes(x, b, nb);
    v->proj = -1;
    return v;
  }
  if (!strcmp(fn, "swizzle")) {
    rval *v = nv(x, R_SWZ);
    v->swz.b = (int)as_u(x, n, ev(x, n->list.v[0]));
    v->swz.m = (int)as_u(x, n, ev(x, n->list.v[1]));
    v->swz.s = (int)as_u(x, n, ev(x, n->list.v[2]));
    return v;
  }
  if (!strcmp(fn, "layout")) {
    rval *v = nv(x, R_LAYOUT);
    ag_layout_make(x->lcp, to_tuple(x, n, ev(x, n->list.v[0])),
                   to_tuple(x, n, ev(x, n->list.v[1])), &v->layout);
    return v;
  }
  if (!strcmp(fn, "cvt")) {
    rval *e = ev(x, n->list.v[0]);
    ag__dt dt = as_dt(x, n->list.v[1]);
    int nb;
    ag__dt d0;
    const tset **b = data_of(x, n, e, &nb, &d0);
    return mk_data(x, dt, ag__dt_size(dt), union_bytes(x, b, nb));
  }
  /* the builtin table (src/tile/tile_builtin.h), by kind */
  const ag__builtin *bi = ag__builtin_lookup(fn);
  if (bi && bi->kind == AG__BI_MAP) {
    rval *ops[2];
    int k = n->list.n;
    for (int i = 0; i < k; i++)
      ops[i] = ev(x, n->list.v[i]);
    return arith(x, n, ops, k);
  }
  if (bi && bi->kind == AG__BI_LANE) {
    /* another lane's value carries no tag of its origin: top (bottom stays
     * bottom), as docs/tile-dsl.md defines it */
    rval *e = ev(x, n->list.v[0]);
    int nb;
    ag__dt d0;
    const tset **b = data_of(x, n, e, &nb, &d0);
    return mk_data(x, d0, nb, union_bytes(x, b, nb) ? ts_top(x) : NULL);
  }
  if (bi && bi->kind == AG__BI_REDUCE) {
    rval *t = ev(x, n->list.v[0]);
    int64_t sz = ag_layout_size(&t->t->layout);
    int es = ag__dt_size(t->t->dt);
    const tset *u = NULL;
    const tset **r = x->th[x->cur].regs.v[t->t->buf];
    for (int64_t i = 0; i < sz; i++) {
      int64_t o;
      ag_layout_eval_index(&t->t->layout, i, &o);
      for (int j = 0; j < es; j++)
        u = ts_union(x, u, r[t->t->base + o * es + j]);
    }
    return mk_data(x, t->t->dt, es, u);
  }
  fail(x, n, "function %s", fn);
}

/* ------------------------------------------------------------- statements */
static void store(rx *x, const ag_tile_node *n, rval *dst, rval *v) {
  int w = ag__dt_size(dst->t->dt), nb;
  ag__dt dt;
  const tset **b = data_of(x, n, v, &nb, &dt);
  const tset **bytes = al(x, (size_t)w * sizeof *bytes);
  for (int j = 0; j < w; j++)
    bytes[j] = j < nb ? b[j] : NULL;
  if (dst->t->sp == 2) {
    const tset **r = x->th[x->cur].regs.v[dst->t->buf];
    for (int j = 0; j < w; j++)
      r[dst->addr + j] = bytes[j];
  } else if (dst->t->sp == 1 && x->active[x->cur]) {
    shared_write(x, dst->t, dst->addr, bytes, w, -1);
  }
}

static void assign1(rx *x, const ag_tile_node *tgt, rval *v) {
  rth *t = &x->th[x->cur];
  if (tgt->kind == AG_TN_NAME) {
    if (v->k == R_ELEM) {
      int nb;
      ag__dt dt;
      const tset **b = data_of(x, tgt, v, &nb, &dt);
      rval *d = mk_data(x, dt, nb, NULL);
      ag__mcpy(d->bytes, b, (size_t)nb * sizeof *b);
      v = d;
    }
    bind(x, t, tgt->name, v);
    return;
  }
  rval *dst = ev(x, tgt);
  if (dst->k == R_TILE) { /* constant broadcast into registers */
    int64_t sz = ag_layout_size(&dst->t->layout), es = ag__dt_size(dst->t->dt);
    const tset **r = t->regs.v[dst->t->buf];
    for (int64_t i = 0; i < sz; i++) {
      int64_t o;
      ag_layout_eval_index(&dst->t->layout, i, &o);
      for (int j = 0; j < es; j++)
        r[dst->t->base + o * es + j] = NULL;
    }
    return;
  }
  store(x, tgt, dst, v);
}

static void relabel(rx *x, const ag_tile_node *arrow) {
  rtagfn *f = mk_tagfn(x, arrow);
  rval *tv = ev(x, arrow->a->a);
  rtile *t = tv->t;
  int rank = ag_layout_rank(&t->layout), es = ag__dt_size(t->dt);
  ag_layout modes[16];
  int64_t ext[16], total = 1;
  for (int i = 0; i < rank; i++) {
    ag_layout_mode(x->lcp, &t->layout, i, &modes[i]);
    ext[i] = ag_layout_size(&modes[i]);
    total *= ext[i];
  }
  const tset **r = x->th[x->cur].regs.v[t->buf];
  for (int64_t idx = 0; idx < total; idx++) {
    int64_t rest = idx, off = 0;
    uint32_t co[16];
    for (int i = rank - 1; i >= 0; i--) {
      int64_t ci = rest % ext[i], o;
      rest /= ext[i];
      co[i] = (uint32_t)ci;
      ag_layout_eval_index(&modes[i], ci, &o);
      off += o;
    }
    ag__ctag c = apply_fn(x, f, co);
    const tset *s = ts_one(x, &c);
    for (int j = 0; j < es; j++)
      r[t->base + off * es + j] = s;
  }
}

static int is_tagfn_of_tensor(rx *x, const ag_tile_node *arrow) {
  const char *tgt = arrow->a->a->name;
  for (size_t i = 0; i < x->params.n; i++)
    if (x->params.v[i].is_tensor && !strcmp(x->params.v[i].name, tgt))
      return (int)i;
  return -1;
}

static void exec_assign(rx *x, const ag_tile_node *n) {
  /* block-level: shared allocation happens once */
  if (n->list2.n == 1 && n->list2.v[0]->kind == AG_TN_CALL &&
      n->list2.v[0]->a->kind == AG_TN_NAME && !strcmp(n->list2.v[0]->a->name, "make_shared")) {
    const ag_tile_node *c = n->list2.v[0];
    x->cur = 0;
    ag_layout l = layout_of(x, c, ev(x, c->list.v[0]));
    ag__dt dt = as_dt(x, c->list.v[1]);
    sbuf sb;
    sb.size = ag_layout_cosize(&l) * ag__dt_size(dt);
    sb.bytes = calloc((size_t)sb.size, sizeof *sb.bytes);
    if (ag_vec_push(&x->sbufs, sb))
      fail(x, n, "out of memory");
    rtile *t = al(x, sizeof *t);
    t->sp = 1;
    t->dt = dt;
    t->buf = (int)x->sbufs.n - 1;
    t->layout = l;
    if (c->list.n == 3) {
      rval *z = ev(x, c->list.v[2]);
      t->swizzled = 1;
      t->swz = z->swz;
      int lg = 0;
      while ((1 << lg) < ag__dt_size(dt))
        lg++;
      t->swz.m += lg;
    }
    rval *v = nv(x, R_TILE);
    v->t = t;
    v = persist(x, v);
    for (int th = 0; th < x->T; th++)
      bind_raw(x, &x->th[th], n->list.v[0]->name, v);
    return;
  }
  for (int th = 0; th < x->T; th++) {
    x->cur = th;
    if (n->list2.n == n->list.n) {
      rval *vals[16];
      for (int i = 0; i < n->list.n; i++) {
        const ag_tile_node *rhs = n->list2.v[i];
        if (rhs->kind == AG_TN_ARROW) {
          int p = is_tagfn_of_tensor(x, rhs);
          if (p >= 0)
            x->params.v[p].fn = mk_tagfn(x, rhs);
          else
            relabel(x, rhs);
          vals[i] = NULL;
          continue;
        }
        rval *v = ev(x, rhs);
        if (n->op != AG_OP_NONE) {
          rval *cur = ev(x, n->list.v[0]);
          if (cur->k == R_INT && v->k == R_INT) {
            ag_expr_op op = n->op == AG_OP_ADD ? AG_X_ADD : n->op == AG_OP_SUB ? AG_X_SUB : AG_X_MUL;
            v = vint(x, u32op(op, cur->i, v->i), cur->dyn | v->dyn);
          } else {
            rval *ops[2] = {cur, v};
            v = arith(x, n, ops, 2);
          }
        }
        if (v->k == R_ELEM) {
          int nb;
          ag__dt dt;
          const tset **b = data_of(x, rhs, v, &nb, &dt);
          rval *d = mk_data(x, dt, nb, NULL);
          ag__mcpy(d->bytes, b, (size_t)nb * sizeof *b);
          v = d;
        }
        vals[i] = v;
      }
      for (int i = 0; i < n->list.n; i++)
        if (vals[i])
          assign1(x, n->list.v[i], vals[i]);
    } else {
      rval *tv = ev(x, n->list2.v[0]);
      for (int i = 0; i < n->list.n; i++)
        assign1(x, n->list.v[i], &tv->items[i]);
    }
  }
}

static void exec_call(rx *x, const ag_tile_node *n) {
  const ag_tile_node *f = n->a;
  const char *fn = f->kind == AG_TN_NAME ? f->name : "";
  const ag__intrin *in = ag__intrin_lookup(fn);
  if (in && in->kind == IK_SYNC) {
    x->epoch++;
    return;
  }
  if (in && in->kind == IK_CP_COMMIT) {
    x->ngroups++;
    return;
  }
  if (in && in->kind == IK_CP_WAIT) {
    x->cur = 0;
    uint32_t k = as_u(x, n, ev(x, n->list.v[0]));
    for (size_t i = 0; i < x->writes.n; i++) {
      swrite *w = &x->writes.v[i];
      if (w->group >= 0 && w->group < x->ngroups - (int)k && w->done_pc == INT64_MAX) {
        w->done_pc = x->pc;
        w->vis_epoch = x->epoch + 1;
      }
    }
    return;
  }
  if (in && in->kind == IK_LDMATRIX) {
    do_ldmatrix(x, n, in);
    return;
  }
  if (!strcmp(fn, "reset")) {
    x->cur = 0;
    rval *t = ev(x, n->list.v[0]);
    int64_t sz = ag_layout_size(&t->t->layout), es = ag__dt_size(t->t->dt);
    sbuf *s = &x->sbufs.v[t->t->buf];
    for (int64_t i = 0; i < sz; i++) {
      int64_t o;
      ag_layout_eval_index(&t->t->layout, i, &o);
      for (int j = 0; j < es; j++) {
        int64_t b = swz(t->t, t->t->base + o * es + j);
        if (b >= 0 && b < s->size)
          s->bytes[b].w.n = 0;
      }
    }
    return;
  }
  for (int th = 0; th < x->T; th++) {
    x->cur = th;
    if (in && in->kind == IK_MMA) {
      int b[4];
      int64_t base[4], size[4];
      for (int i = 0; i < 4; i++)
        reg_range(x, n, ev(x, n->list.v[i]), &b[i], &base[i], &size[i]);
      const tset *tmp[16];
      for (int j = 0; j < 16; j++)
        tmp[j] = x->th[th].regs.v[b[3]][base[3] + j];
      for (int j = 0; j < 16; j++)
        x->th[th].regs.v[b[0]][base[0] + j] = tmp[j];
    } else if (in && in->kind == IK_CP_ASYNC) {
      rval *d = ev(x, n->list.v[0]), *s = ev(x, n->list.v[1]);
      int nb;
      const tset **bytes = load(x, n, s->t, s->addr, &nb);
      if (x->active[th])
        shared_write(x, d->t, d->addr, bytes, nb, x->ngroups);
    } else if (!strcmp(fn, "fill")) {
      int b;
      int64_t base, size;
      reg_range(x, n, ev(x, n->list.v[0]), &b, &base, &size);
      rval *v = ev(x, n->list.v[1]);
      int nb;
      ag__dt dt;
      const tset **vb = data_of(x, n, v, &nb, &dt);
      const tset *u = union_bytes(x, vb, nb);
      for (int64_t j = 0; j < size; j++)
        x->th[th].regs.v[b][base + j] = u;
    } else {
      ev(x, n);
    }
  }
}

static void record_assert(rx *x, const ag_tile_node *n) {
  ref_run *r = x->run;
  if (r->n == r->cap) {
    r->cap = r->cap ? r->cap * 2 : 64;
    r->inst = realloc(r->inst, (size_t)r->cap * sizeof *r->inst);
  }
  ref_inst *in = &r->inst[r->n++];
  memset(in, 0, sizeof *in);
  in->at = n;
  in->nloops = (int)x->loopname.n;
  for (int i = 0; i < in->nloops && i < 16; i++) {
    in->loopname[i] = x->loopname.v[i];
    in->loopval[i] = x->loopval.v[i];
  }
  in->nthreads = x->T;
  in->lhs = calloc((size_t)x->T, sizeof *in->lhs);
  in->rhs = calloc((size_t)x->T, sizeof *in->rhs);
  if (!in->lhs || !in->rhs)
    fail(x, n, "out of memory");
  in->active = calloc((size_t)x->T, 1);
  in->violated = calloc((size_t)x->T, 1);
  const ag_tile_node *e = n->a;
  int is_tag = e->kind == AG_TN_CMP && (e->op == AG_OP_EQ || e->op == AG_OP_NE);
  for (int th = 0; th < x->T; th++) {
    if (!x->active[th])
      continue;
    x->cur = th;
    in->active[th] = 1;
    rval *a = is_tag ? ev(x, e->a) : NULL, *b = is_tag ? ev(x, e->b) : NULL;
    if (!is_tag || (a->k != R_TAGV && b->k != R_TAGV)) {
      in->kind = 2;
      in->violated[th] = !as_u(x, e, ev(x, e));
      continue;
    }
    in->kind = e->op == AG_OP_EQ ? 0 : 1;
    const tset *s[2];
    int lit[2];
    rval *sv[2] = {a, b};
    for (int k = 0; k < 2; k++) {
      rval *v = sv[k];
      lit[k] = 1;
      if (v->k == R_TAGV) {
        lit[k] = v->literal;
        const tset *t = v->tag;
        if (v->proj >= 0 && t) {
          tset *p = al(x, sizeof *p);
          p->top = t->top;
          p->t = al(x, (size_t)(t->n + 1) * sizeof *p->t);
          for (int i = 0; i < t->n; i++) {
            ag__ctag c;
            memset(&c, 0, sizeof c);
            if (v->proj < t->t[i].n) {
              c.n = 1;
              c.v[0] = t->t[i].v[v->proj];
            }
            int dup = 0;
            for (int q = 0; q < p->n && !dup; q++)
              dup = tag_eq(&p->t[q], &c);
            if (!dup)
              p->t[p->n++] = c;
          }
          t = intern(x, p->top, p->t, p->n);
        }
        s[k] = t;
      } else {
        ag__ctag c;
        memset(&c, 0, sizeof c);
        int cnt = v->k == R_TUPLE ? v->n : 1;
        c.n = cnt;
        for (int i = 0; i < cnt; i++)
          c.v[i] = as_u(x, e, v->k == R_TUPLE ? &v->items[i] : v);
        s[k] = ts_one(x, &c);
      }
    }
    in->lhs[th] = s[0];
    in->rhs[th] = s[1];
    /* the verdict, from the lattice's definitions */
    const tset *A = s[0], *B = s[1];
    int topA = A && (A->top || A->n > 1), topB = B && (B->top || B->n > 1);
    int litTopA = lit[0] && A && A->top, litTopB = lit[1] && B && B->top;
    int litBotA = lit[0] && !A, litBotB = lit[1] && !B;
    int viol;
    if (in->kind == 0) {
      if (litBotA || litBotB)
        viol = (litBotA ? B : A) != NULL;
      else if (!A || !B)
        viol = 1;
      else {
        viol = A->top || B->top;
        for (int i = 0; i < A->n && !viol; i++)
          for (int j = 0; j < B->n && !viol; j++)
            viol = !tag_eq(&A->t[i], &B->t[j]);
      }
    } else {
      if (litTopA || litTopB)
        viol = litTopA ? topB : topA;
      else if (litBotA || litBotB)
        viol = (litBotA ? B : A) == NULL;
      else {
        viol = topA || topB;
        for (int i = 0; A && B && i < A->n && !viol; i++)
          for (int j = 0; j < B->n && !viol; j++)
            viol = tag_eq(&A->t[i], &B->t[j]);
      }
    }
    in->violated[th] = (unsigned char)viol;
  }
}

/* Thread-dependent if: both branches for the registers of every thread,
 * merged; shared writes and assertions only where the condition holds. */
static void exec_if(rx *x, const ag_tile_node *n) {
  int T = x->T, dyn = 0;
  unsigned char *cond = al(x, (size_t)T);
  for (int th = 0; th < T; th++) {
    x->cur = th;
    rval *c = ev(x, n->a);
    cond[th] = as_u(x, n->a, c) != 0;
    dyn |= c->dyn;
  }
  if (!dyn) {
    exec_block(x, cond[0] ? &n->list : &n->list2);
    return;
  }
  unsigned char *act0 = al(x, (size_t)T);
  ag__mcpy(act0, x->active, (size_t)T);
  /* snapshot registers and names */
  rth *snap = al(x, (size_t)T * sizeof *snap);
  size_t *nregs = al(x, (size_t)T * sizeof *nregs);
  for (int th = 0; th < T; th++) {
    rth *t = &x->th[th];
    snap[th] = *t;
    snap[th].b = al(x, (size_t)(t->nb + 1) * sizeof *t->b);
    ag__mcpy(snap[th].b, t->b, (size_t)t->nb * sizeof *t->b);
    nregs[th] = t->regs.n;
    snap[th].regs.v = al(x, (t->regs.n + 1) * sizeof *t->regs.v);
    for (size_t i = 0; i < t->regs.n; i++) {
      snap[th].regs.v[i] = al(x, (size_t)(t->regsz.v[i] + 1) * sizeof **t->regs.v);
      ag__mcpy(snap[th].regs.v[i], t->regs.v[i], (size_t)t->regsz.v[i] * sizeof **t->regs.v);
    }
  }
  for (int th = 0; th < T; th++)
    x->active[th] = act0[th] && cond[th];
  exec_block(x, &n->list);
  rth *after = al(x, (size_t)T * sizeof *after);
  for (int th = 0; th < T; th++) {
    rth *t = &x->th[th];
    after[th] = *t;
    after[th].b = al(x, (size_t)(t->nb + 1) * sizeof *t->b);
    ag__mcpy(after[th].b, t->b, (size_t)t->nb * sizeof *t->b);
    after[th].regs.v = al(x, (nregs[th] + 1) * sizeof *t->regs.v);
    for (size_t i = 0; i < nregs[th]; i++) {
      after[th].regs.v[i] = al(x, (size_t)(t->regsz.v[i] + 1) * sizeof **t->regs.v);
      ag__mcpy(after[th].regs.v[i], t->regs.v[i], (size_t)t->regsz.v[i] * sizeof **t->regs.v);
      ag__mcpy(t->regs.v[i], snap[th].regs.v[i], (size_t)t->regsz.v[i] * sizeof **t->regs.v);
    }
    t->nb = snap[th].nb;
    ag__mcpy(t->b, snap[th].b, (size_t)snap[th].nb * sizeof *t->b);
  }
  for (int th = 0; th < T; th++)
    x->active[th] = act0[th] && !cond[th];
  exec_block(x, &n->list2);
  ag__mcpy(x->active, act0, (size_t)T);
  for (int th = 0; th < T; th++) {
    rth *t = &x->th[th];
    for (size_t i = 0; i < nregs[th]; i++)
      for (int64_t j = 0; j < t->regsz.v[i]; j++)
        t->regs.v[i][j] = ts_union(x, t->regs.v[i][j], after[th].regs.v[i][j]);
    /* names: kept when equal, data joined, dropped or poisoned otherwise */
    rbind *eb = al(x, (size_t)(t->nb + 1) * sizeof *eb);
    int en = t->nb;
    ag__mcpy(eb, t->b, (size_t)en * sizeof *eb);
    t->nb = 0;
    for (int i = 0; i < after[th].nb; i++) {
      rval *tv = after[th].b[i].v, *evv = lookup_in(eb, en, after[th].b[i].name);
      if (!evv)
        continue;
      rval *m = tv;
      if (evv != tv) {
        if (evv->k == R_DATA && tv->k == R_DATA && evv->n == tv->n) {
          m = mk_data(x, tv->dt, tv->n, NULL);
          for (int j = 0; j < tv->n; j++)
            m->bytes[j] = ts_union(x, evv->bytes[j], tv->bytes[j]);
        } else if (!(evv->k == R_INT && tv->k == R_INT && evv->i == tv->i)) {
          m = nv(x, R_POISON);
        }
      }
      bind(x, t, after[th].b[i].name, m);
    }
  }
}

static void exec_stmt1(rx *x, const ag_tile_node *n);

/* Each statement gets a scratch arena; what it binds is copied out. */
static void exec_stmt(rx *x, const ag_tile_node *n) {
  ag_arena scratch, *saved = x->tmp;
  ag_layout_ctx lc, *saved_lc = x->lcp;
  ag_arena_init(&scratch, 1 << 16);
  ag_layout_ctx_init(&lc, &scratch);
  x->tmp = &scratch;
  x->lcp = &lc;
  exec_stmt1(x, n);
  x->tmp = saved;
  x->lcp = saved_lc;
  ag_layout_ctx_release(&lc);
  ag_arena_release(&scratch);
}

static void exec_stmt1(rx *x, const ag_tile_node *n) {
  x->pc++;
  switch (n->kind) {
  case AG_TN_ASSIGN: exec_assign(x, n); break;
  case AG_TN_EXPR: exec_call(x, n->a); break;
  case AG_TN_REGION: exec_block(x, &n->list); break;
  case AG_TN_FOR: {
    x->cur = 0;
    const ag_tile_node *it = n->a;
    uint32_t a[3] = {0, 0, 1};
    for (int i = 0; i < it->list.n; i++)
      a[i] = as_u(x, it, ev(x, it->list.v[i]));
    int64_t start = it->list.n == 1 ? 0 : a[0], stop = it->list.n == 1 ? a[0] : a[1],
            step = it->list.n == 3 ? (int32_t)a[2] : 1;
    if (ag_vec_push(&x->loopname, n->name) || ag_vec_push(&x->loopval, 0))
      fail(x, n, "oom");
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      x->loopval.v[x->loopval.n - 1] = i;
      for (int th = 0; th < x->T; th++)
        bind(x, &x->th[th], n->name, vint(x, (uint32_t)i, 0));
      exec_block(x, &n->list);
    }
    x->loopname.n--;
    x->loopval.n--;
    break;
  }
  case AG_TN_IF: exec_if(x, n); break;
  case AG_TN_ASSERT: record_assert(x, n); break;
  case AG_TN_ASSUME:
  case AG_TN_PASS: break;
  default: fail(x, n, "statement kind %d", n->kind);
  }
}

static void exec_block(rx *x, const ag_tile_list *l) {
  for (int i = 0; i < l->n; i++)
    exec_stmt(x, l->v[i]);
}

int ref_execute(const ag_tile_program *p, const ref_cfg *cfg, ref_run *run) {
  memset(run, 0, sizeof *run);
  rx *x = calloc(1, sizeof *x);
  x->prog = p;
  x->cfg = cfg;
  x->run = run;
  ag_arena_init(&x->ar, 1 << 20);
  ag_map_init(&x->interned);
  ag_arena top_scratch;
  ag_arena_init(&top_scratch, 1 << 16);
  ag_layout_ctx top_lc;
  ag_layout_ctx_init(&top_lc, &top_scratch);
  x->tmp = &top_scratch;
  x->lcp = &top_lc;
  int rc = 0;
  if (setjmp(x->fail)) {
    rc = -1;
    goto out;
  }
  const ag_tile_node *k = NULL;
  for (int i = 0; i < p->top.n && !k; i++)
    if (p->top.v[i]->kind == AG_TN_KERNEL)
      k = p->top.v[i];
  if (!k)
    fail(x, NULL, "no kernel");
  /* threads */
  x->tdim[0] = x->tdim[1] = x->tdim[2] = 1;
  const ag_tile_node *th = NULL;
  for (int i = 0; k->a && i < k->a->list.n; i++)
    if (!strcmp(k->a->list.v[i]->a->name, "threads"))
      th = k->a->list.v[i];
  x->th = calloc(1, sizeof *x->th);
  x->T = 1;
  x->active = calloc(1, 1);
  x->cur = 0;
  /* module constants */
  for (int i = 0; i < p->top.n; i++)
    if (p->top.v[i]->kind == AG_TN_ASSIGN)
      exec_assign(x, p->top.v[i]);
  int T = 1;
  for (int i = 0; th && i < th->list.n; i++) {
    x->tdim[i] = as_u(x, th, ev(x, th->list.v[i]));
    T *= (int)x->tdim[i];
  }
  rbind *mod = x->th[0].b;
  int nmod = x->th[0].nb;
  free(x->th);
  free(x->active);
  x->T = T;
  x->th = calloc((size_t)T, sizeof *x->th);
  x->active = calloc((size_t)T, 1);
  memset(x->active, 1, (size_t)T);
  for (int t = 0; t < T; t++)
    for (int i = 0; i < nmod; i++)
      bind(x, &x->th[t], mod[i].name, mod[i].v);
  /* parameters: constants, then tensors with concrete dims */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < k->list.n; i++) {
      const ag_tile_node *pn = k->list.v[i];
      int is_const = pn->a->kind == AG_TN_NAME;
      if (is_const && pass == 0) {
        x->cur = 0;
        uint32_t v = pn->b ? as_u(x, pn, ev(x, pn->b)) : 0;
        size_t l = strlen(pn->name);
        for (int d = 0; d < cfg->ndefines; d++)
          if (!strncmp(cfg->defines[d], pn->name, l) && cfg->defines[d][l] == '=')
            v = (uint32_t)strtoll(cfg->defines[d] + l + 1, NULL, 0);
        for (int t = 0; t < T; t++)
          bind(x, &x->th[t], pn->name, vint(x, v, 0));
      } else if (!is_const && pass == 1) {
        rparam pm;
        memset(&pm, 0, sizeof pm);
        pm.name = pn->name;
        pm.is_tensor = 1;
        int nd = pn->a->list.n - 1;
        pm.rank = nd;
        x->cur = 0;
        pm.dt = as_dt(x, pn->a->list.v[nd]);
        for (int d = 0; d < nd; d++) {
          const ag_tile_node *dn = pn->a->list.v[d];
          if (dn->kind == AG_TN_NAME && !lookup_in(x->th[0].b, x->th[0].nb, dn->name)) {
            int found = 0;
            for (int s = 0; s < cfg->nsizes; s++)
              if (!strcmp(cfg->names[s], dn->name)) {
                for (int t = 0; t < T; t++)
                  bind(x, &x->th[t], dn->name, vint(x, (uint32_t)cfg->vals[s], 1));
                found = 1;
              }
            if (!found)
              fail(x, dn, "no value for size %s", dn->name);
          }
          pm.dims[d] = as_u(x, dn, ev(x, dn));
        }
        if (ag_vec_push(&x->params, pm))
          fail(x, pn, "oom");
        rtile *t = al(x, sizeof *t);
        t->sp = 0;
        t->dt = pm.dt;
        t->tensor = (int)x->params.n - 1;
        t->rank = nd;
        int64_t st = ag__dt_size(pm.dt);
        for (int d = nd - 1; d >= 0; d--) {
          t->dims[d] = pm.dims[d];
          t->stride[d] = st;
          st *= pm.dims[d];
        }
        rval *v = nv(x, R_TILE);
        v->t = t;
        for (int q = 0; q < T; q++)
          bind(x, &x->th[q], pn->name, v);
      }
    }
  exec_block(x, &k->list2);
  if (getenv("REF_STATS"))
  {
    FILE *f = fopen("/proc/self/statm", "r");
    long a = 0, b = 0;
    if (f && fscanf(f, "%ld %ld", &a, &b) == 2)
      fprintf(stderr, "ref: rss %ld MB, persistent %zu bytes, %zu interned sets, %zu writes\n",
              b * 4 / 1024, x->ar.used_total, x->interned.count, x->writes.n);
    if (f)
      fclose(f);
  }
out:
  for (size_t i = 0; i < x->sbufs.n; i++) {
    for (int64_t b = 0; b < x->sbufs.v[i].size; b++)
      ag_vec_free(&x->sbufs.v[i].bytes[b].w);
    free(x->sbufs.v[i].bytes);
  }
  ag_vec_free(&x->sbufs);
  ag_vec_free(&x->writes);
  ag_vec_free(&x->params);
  ag_vec_free(&x->loopname);
  ag_vec_free(&x->loopval);
  for (int t = 0; t < x->T && x->th; t++) {
    ag_vec_free(&x->th[t].regs);
    ag_vec_free(&x->th[t].regsz);
  }
  free(x->th);
  free(x->active);
  ag_layout_ctx_release(&top_lc);
  ag_arena_release(&top_scratch);
  ag_map_release(&x->interned);
  /* the tag sets stay alive with the run */
  ag_arena *keep = malloc(sizeof *keep);
  if (keep) {
    *keep = x->ar;
    run->mem = keep;
  } else {
    ag_arena_release(&x->ar);
  }
  free(x);
  return rc;
}

void ref_side(const ref_inst *in, int thread, int side, ag__cset *out) {
  memset(out, 0, sizeof *out);
  const tset *s = side ? in->rhs[thread] : in->lhs[thread];
  if (!s)
    return;
  for (int i = 0; i < s->n; i++)
    ag__cset_add(out, &s->t[i]);
  if (s->top) {
    ag__ctag t = {1, 0, {0}};
    ag__cset_add(out, &t);
  }
}

void ref_run_free(ref_run *run) {
  for (int i = 0; i < run->n; i++) {
    free(run->inst[i].lhs);
    free(run->inst[i].rhs);
    free(run->inst[i].active);
    free(run->inst[i].violated);
  }
  free(run->inst);
  if (run->mem) {
    ag_arena_release(run->mem);
    free(run->mem);
  }
  memset(run, 0, sizeof *run);
}
