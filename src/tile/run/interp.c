/*
 * interp.c — the value reference of `argus run` (docs/run.md): a concrete
 * interpreter that computes what a tile program computes, on the CPU, for
 * small sizes. It runs each block of the grid in turn, every thread of the
 * block in lockstep, statement by statement, over the front end's AST; the
 * layout algebra (ag_layout_*) and the instruction atoms (layout_atoms.h)
 * give every address and every fragment position, as they do for the
 * checker and the lowering.
 *
 * Semantics (docs/tile-dsl.md, docs/lower.md): integers are unsigned
 * 32-bit; an `if` runs its branches under a thread mask (a name assigned in
 * a branch keeps its old value in the threads that did not take it); data
 * arithmetic is f32 for bf16, f16 and f32, rounded to the type after each
 * operation; the builtins are the table's scalar operations (tile_builtin.h:
 * exp2 is exp2f, as in the lowered CUDA C); cp.async copies at once (a checked program reads
 * nothing before the wait that settles it, and statements run in lockstep);
 * barriers, commits, waits, resets, tags and assertions do nothing; an mma
 * sums its 16 products in double and rounds once to f32 (the tensor core's
 * accumulation is exact or nearly so; the run's tolerance covers the rest).
 * What it does not model is an error naming the construct, never a guess.
 *
 * Cost: about 10^7 thread-statements per second; gemm.tile at 128^3 runs
 * in well under a second. For toy sizes only.
 */
#include "../tile_intrin.h"
#include "../tile_xop.h"
#include "argus/layout_atoms.h"
#include "argus/tile_run.h"
#include "run_int.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>


enum { K_NONE, K_INT, K_BOOL, K_FLOAT, K_DTYPE, K_TUPLE, K_TILE, K_ELEM, K_DATA, K_LAYOUT,
       K_SWZ, K_INTRIN, K_IOP, K_TMAP };
enum { SP_G, SP_S, SP_R };

typedef struct tile {
  int sp, dt, buf;
  ag_layout lay;  /* element layout */
  int64_t *off;   /* [T] byte offset from dom */
  int64_t dom;    /* where the swizzle domain starts (bytes) */
  int swz;
  ag_swizzle sw;  /* in bytes */
} tile;

typedef struct rv rv;
struct rv {
  int k, dt, n;
  uint32_t *i;       /* K_INT, K_BOOL: [T] */
  double f;          /* K_FLOAT */
  rv **items;        /* K_TUPLE */
  tile *t;           /* K_TILE, K_ELEM (the element's tile) */
  int64_t *addr;     /* K_ELEM: [T] byte address in the buffer */
  unsigned char *d;  /* K_DATA: [T * 32] */
  ag_layout lay;     /* K_LAYOUT */
  ag_swizzle sw;     /* K_SWZ */
  const char *name;  /* K_INTRIN, K_IOP ("a", "b", "c") */
  const ag__intrin *in; /* K_INTRIN, K_IOP: the row of the intrinsic table */
  ag_tma_map *tm;    /* K_TMAP: the map, dimension 0 innermost (t: the tensor's tile) */
};

typedef struct bind {
  const char *name;
  rv *v;
} bind;

typedef struct ip {
  const ag_tile_program *p;
  const ag_tile_node *k;
  ag_arena ar;
  ag_layout_ctx lc;
  int lc_live;
  jmp_buf fail;
  char *err;
  size_t errlen;
  int T, bx[3];
  unsigned bid[3];
  unsigned char *mask; /* [T] */
  bind *env;
  int nenv, cap;
  /* buffers: globals are the tensors, 0 .. ng-1; shared is one; registers per thread */
  unsigned char **gbuf;
  uint64_t *gbytes;
  int ng;
  unsigned char *smem;
  int64_t smem_bytes, smem_cap;
  unsigned char **rbuf; /* [nr] of T * rsize */
  int64_t *rsize;
  int nr, rcap;
  const ag_tile_bound *b;
  const char *const *names; /* sizes and consts */
  const uint64_t *vals;
  int nnames;
} ip;

static _Noreturn void fail(ip *c, const ag_tile_node *n, const char *fmt, ...) AG_PRINTF(3, 4);
static _Noreturn void fail(ip *c, const ag_tile_node *n, const char *fmt, ...) {
  char msg[384];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(c->err, c->errlen, "%s:%d:%d: %s", c->p->file, n ? n->line : 0, n ? n->col : 0, msg);
  longjmp(c->fail, 1);
}
static void *alloc(ip *c, size_t n) {
  void *p = ag_arena_alloc(&c->ar, n ? n : 1);
  if (!p) {
    snprintf(c->err, c->errlen, "out of memory");
    longjmp(c->fail, 1);
  }
  memset(p, 0, n ? n : 1);
  return p;
}
static rv *newv(ip *c, int k) {
  rv *v = alloc(c, sizeof *v);
  v->k = k;
  return v;
}
static rv *vint_u(ip *c, uint32_t x) {
  rv *v = newv(c, K_INT);
  v->i = alloc(c, (size_t)c->T * 4);
  for (int t = 0; t < c->T; t++)
    v->i[t] = x;
  return v;
}
static rv *vint_a(ip *c, int k) {
  rv *v = newv(c, k);
  v->i = alloc(c, (size_t)c->T * 4);
  return v;
}
static int first_active(const ip *c) {
  for (int t = 0; t < c->T; t++)
    if (c->mask[t])
      return t;
  return 0;
}

/* -------------------------------------------------------------- numbers */
static double ld(int dt, const unsigned char *p) {
  switch (dt) {
  case DT_BF16: { uint16_t h; memcpy(&h, p, 2); return ag__bf2f(h); }
  case DT_F16: { uint16_t h; memcpy(&h, p, 2); return ag__h2f(h); }
  case DT_F32: { float f; memcpy(&f, p, 4); return f; }
  case DT_F64: { double f; memcpy(&f, p, 8); return f; }
  case DT_I8: return (int8_t)p[0];
  case DT_U8: return p[0];
  case DT_I16: { int16_t x; memcpy(&x, p, 2); return x; }
  case DT_U16: { uint16_t x; memcpy(&x, p, 2); return x; }
  case DT_I32: { int32_t x; memcpy(&x, p, 4); return x; }
  case DT_U32: { uint32_t x; memcpy(&x, p, 4); return x; }
  case DT_I64: { int64_t x; memcpy(&x, p, 8); return (double)x; }
  default: { uint64_t x; memcpy(&x, p, 8); return (double)x; }
  }
}
/* Rounds v to dt (floats: f32 first for the 16-bit types) and stores it. */
static void st(int dt, unsigned char *p, double v) {
  switch (dt) {
  case DT_BF16: { uint16_t h = ag__f2bf((float)v); memcpy(p, &h, 2); return; }
  case DT_F16: { uint16_t h = ag__f2h((float)v); memcpy(p, &h, 2); return; }
  case DT_F32: { float f = (float)v; memcpy(p, &f, 4); return; }
  case DT_F64: memcpy(p, &v, 8); return;
  default: {
    int64_t x = (int64_t)v;
    memcpy(p, &x, (size_t)ag__dt_size(dt)); /* little-endian: the low bytes */
  }
  }
}

/* Converts a float to integer type dt and stores it, as the lowering's
 * ag_f2i (PTX cvt.rzi): truncation toward zero, saturated to the type's
 * range, NaN to 0. */
static void st_f2i(int dt, unsigned char *p, double f) {
  int bits = 8 * ag__dt_size(dt), sgn;
  double lo, hi;
  ag__dt_int_range(dt, &lo, &hi, &sgn);
  uint64_t top = sgn ? (uint64_t)1 << (bits - 1) : 0; /* the minimum's bits */
  uint64_t u = f != f    ? 0
               : f <= lo ? top
               : f >= hi ? (bits == 64 && !sgn ? UINT64_MAX : ((uint64_t)1 << (bits - sgn)) - 1)
               : sgn     ? (uint64_t)(int64_t)f
                         : (uint64_t)f;
  memcpy(p, &u, (size_t)ag__dt_size(dt)); /* little-endian: the low bytes */
}

/* ------------------------------------------------------------------ env */
static rv *lookup(ip *c, const char *name) {
  for (int i = c->nenv - 1; i >= 0; i--)
    if (!strcmp(c->env[i].name, name))
      return c->env[i].v;
  return NULL;
}
static int all_active(const ip *c) {
  for (int t = 0; t < c->T; t++)
    if (!c->mask[t])
      return 0;
  return 1;
}
/* Binds name; under a partial mask a per-thread value merges with the old one. */
static void bindv(ip *c, const char *name, rv *v) {
  for (int i = c->nenv - 1; i >= 0; i--)
    if (!strcmp(c->env[i].name, name)) {
      rv *old = c->env[i].v;
      if (!all_active(c) && old->k == v->k && (v->k == K_INT || v->k == K_BOOL)) {
        rv *m = vint_a(c, v->k);
        for (int t = 0; t < c->T; t++)
          m->i[t] = c->mask[t] ? v->i[t] : old->i[t];
        v = m;
      } else if (!all_active(c) && old->k == K_DATA && v->k == K_DATA && old->dt == v->dt) {
        rv *m = newv(c, K_DATA);
        m->dt = v->dt;
        m->d = alloc(c, (size_t)c->T * 32);
        for (int t = 0; t < c->T; t++)
          memcpy(m->d + t * 32, (c->mask[t] ? v : old)->d + t * 32, 32);
        v = m;
      }
      c->env[i].v = v;
      return;
    }
  if (c->nenv == c->cap) {
    int nc = c->cap ? c->cap * 2 : 64;
    bind *ne = alloc(c, (size_t)nc * sizeof *ne);
    if (c->nenv)
      memcpy(ne, c->env, (size_t)c->nenv * sizeof *ne);
    c->env = ne;
    c->cap = nc;
  }
  c->env[c->nenv].name = name;
  c->env[c->nenv++].v = v;
}

/* --------------------------------------------------------------- values */
static rv *eval(ip *c, const ag_tile_node *n);
static void exec_block(ip *c, const ag_tile_list *l);
static void exec_stmt(ip *c, const ag_tile_node *n);

static uint32_t as_u(ip *c, const ag_tile_node *n, rv *v, int t) {
  if (v->k == K_INT || v->k == K_BOOL)
    return v->i[t];
  fail(c, n, "expected an integer here");
}
static int64_t as_const(ip *c, const ag_tile_node *n, rv *v) {
  return as_u(c, n, v, first_active(c));
}
static ag_tuple *to_tuple(ip *c, const ag_tile_node *n, rv *v) {
  if (v->k == K_INT)
    return ag_tuple_leaf(&c->lc, v->i[first_active(c)]);
  if (v->k != K_TUPLE)
    fail(c, n, "expected a shape (an integer or a tuple)");
  ag_tuple **ch = alloc(c, (size_t)(v->n ? v->n : 1) * sizeof *ch);
  for (int i = 0; i < v->n; i++)
    ch[i] = to_tuple(c, n, v->items[i]);
  return ag_tuple_make(&c->lc, v->n, ch);
}
static ag_layout rowmajor(ip *c, const ag_tile_node *n, ag_tuple *shape) {
  ag_layout l;
  /* strides: the last mode contiguous; nested modes colexicographic within */
  int64_t run = 1;
  int nn = shape->is_leaf ? 1 : shape->n;
  ag_tuple **st = alloc(c, (size_t)nn * sizeof *st);
  for (int i = nn - 1; i >= 0; i--) {
    ag_tuple *m = shape->is_leaf ? shape : shape->child[i];
    int64_t sz = 1;
    if (m->is_leaf) {
      st[i] = ag_tuple_leaf(&c->lc, run);
      sz = m->value;
    } else {
      /* a nested mode: colexicographic strides times run */
      ag_tuple **cc = alloc(c, (size_t)m->n * sizeof *cc);
      int64_t r = run;
      for (int j = 0; j < m->n; j++) {
        if (!m->child[j]->is_leaf)
          fail(c, n, "shapes nested more than two levels are not interpreted");
        cc[j] = ag_tuple_leaf(&c->lc, r);
        r *= m->child[j]->value;
      }
      st[i] = ag_tuple_make(&c->lc, m->n, cc);
      sz = r / run;
    }
    run *= sz;
  }
  if (ag_layout_make(&c->lc, shape, shape->is_leaf ? st[0] : ag_tuple_make(&c->lc, nn, st), &l))
    fail(c, n, "bad layout");
  return l;
}
static tile *tile_new(ip *c, int sp, int dt, int buf) {
  tile *t = alloc(c, sizeof *t);
  t->sp = sp;
  t->dt = dt;
  t->buf = buf;
  t->off = alloc(c, (size_t)c->T * 8);
  return t;
}
static unsigned char *buf_of(ip *c, const tile *t, int thr, int64_t *bytes) {
  if (t->sp == SP_G) {
    *bytes = (int64_t)c->gbytes[t->buf];
    return c->gbuf[t->buf];
  }
  if (t->sp == SP_S) {
    *bytes = c->smem_bytes;
    return c->smem;
  }
  *bytes = c->rsize[t->buf];
  return c->rbuf[t->buf] + (size_t)thr * (size_t)c->rsize[t->buf];
}
static int64_t swz(const tile *t, int64_t off) {
  return t->swz ? ag_swizzle_apply(t->sw, off) : off;
}

/* t[idx...]: an element (every mode fixed) or a sub-tile. */
static rv *index_tile(ip *c, const ag_tile_node *n, tile *t) {
  const ag_tile_list *ix = &n->list;
  int rank = ag_layout_rank(&t->lay);
  if (ix->n != rank)
    fail(c, n, "%d indices for a tile of %d modes", ix->n, rank);
  tile *r = tile_new(c, t->sp, t->dt, t->buf);
  r->dom = t->dom;
  r->swz = t->swz;
  r->sw = t->sw;
  memcpy(r->off, t->off, (size_t)c->T * 8);
  ag_tuple **ksh = alloc(c, (size_t)rank * sizeof *ksh), **kst = alloc(c, (size_t)rank * sizeof *kst);
  int kept = 0, esz = ag__dt_size(t->dt);
  for (int i = 0; i < rank; i++) {
    ag_layout m;
    if (ag_layout_mode(&c->lc, &t->lay, i, &m))
      fail(c, n, "bad mode");
    const ag_tile_node *e = ix->v[i];
    if (e->kind == AG_TN_SLICE) {
      if (!e->a && !e->b) {
        ksh[kept] = m.shape;
        kst[kept++] = m.stride;
        continue;
      }
      if (!m.shape->is_leaf)
        fail(c, e, "a slice a:b of a nested mode is not interpreted");
      int64_t a = e->a ? as_const(c, e->a, eval(c, e->a)) : 0;
      int64_t b = e->b ? as_const(c, e->b, eval(c, e->b)) : m.shape->value;
      if (a < 0 || b > m.shape->value || a >= b)
        fail(c, e, "slice %lld:%lld of a mode of extent %lld", (long long)a, (long long)b,
             (long long)m.shape->value);
      for (int th = 0; th < c->T; th++)
        r->off[th] += a * m.stride->value * esz;
      ksh[kept] = ag_tuple_leaf(&c->lc, b - a);
      kst[kept++] = m.stride;
      continue;
    }
    rv *iv = eval(c, e);
    int64_t ext = ag_layout_size(&m);
    for (int th = 0; th < c->T; th++) {
      if (!c->mask[th])
        continue;
      int64_t idx = as_u(c, e, iv, th), o;
      if (idx >= ext)
        fail(c, e, "index %lld of mode %d is outside [0, %lld) in thread %d of block (%u, %u, "
                   "%u)", (long long)idx, i, (long long)ext, th, c->bid[0], c->bid[1], c->bid[2]);
      ag_layout_eval_index(&m, idx, &o);
      r->off[th] += o * esz;
    }
  }
  if (kept) {
    if (ag_layout_make(&c->lc, ag_tuple_make(&c->lc, kept, ksh), ag_tuple_make(&c->lc, kept, kst),
                       &r->lay))
      fail(c, n, "bad sub-tile");
    rv *v = newv(c, K_TILE);
    v->t = r;
    return v;
  }
  rv *v = newv(c, K_ELEM);
  v->t = r;
  v->addr = alloc(c, (size_t)c->T * 8);
  for (int th = 0; th < c->T; th++)
    v->addr[th] = r->dom + swz(r, r->off[th]);
  return v;
}

static rv *load(ip *c, const ag_tile_node *n, rv *e) {
  rv *v = newv(c, K_DATA);
  v->dt = e->t->dt;
  v->d = alloc(c, (size_t)c->T * 32);
  int w = ag__dt_size(v->dt);
  for (int th = 0; th < c->T; th++) {
    if (!c->mask[th])
      continue;
    int64_t bytes;
    unsigned char *b = buf_of(c, e->t, th, &bytes);
    if (e->addr[th] < 0 || e->addr[th] + w > bytes)
      fail(c, n, "read of %d bytes at byte %lld is outside its buffer of %lld bytes (thread %d)",
           w, (long long)e->addr[th], (long long)bytes, th);
    memcpy(v->d + th * 32, b + e->addr[th], (size_t)w);
  }
  return v;
}
static rv *as_data(ip *c, const ag_tile_node *n, rv *v, int dt) {
  if (v->k == K_ELEM)
    return load(c, n, v);
  if (v->k == K_DATA)
    return v;
  if (v->k == K_FLOAT || v->k == K_INT) {
    if (!dt)
      fail(c, n, "a constant needs a data type here");
    rv *d = newv(c, K_DATA);
    d->dt = dt;
    d->d = alloc(c, (size_t)c->T * 32);
    for (int th = 0; th < c->T; th++)
      st(dt, d->d + th * 32, v->k == K_FLOAT ? v->f : (double)v->i[th]);
    return d;
  }
  fail(c, n, "expected a data value");
}
static void store(ip *c, const ag_tile_node *n, rv *e, rv *val) {
  int dt = e->t->dt, w = ag__dt_size(dt);
  rv *d = as_data(c, n, val, dt);
  if (ag__dt_size(d->dt) != w)
    fail(c, n, "a store of %d bytes into an element of %d", ag__dt_size(d->dt), w);
  for (int th = 0; th < c->T; th++) {
    if (!c->mask[th])
      continue;
    int64_t bytes;
    unsigned char *b = buf_of(c, e->t, th, &bytes);
    if (e->addr[th] < 0 || e->addr[th] + w > bytes)
      fail(c, n, "write of %d bytes at byte %lld is outside its buffer of %lld bytes (thread %d)",
           w, (long long)e->addr[th], (long long)bytes, th);
    memcpy(b + e->addr[th], d->d + th * 32, (size_t)w); /* same size: the bits, as the lowering */
  }
}
/* The element of tile t at layout offset o (in elements), for every thread. */
static rv *elem_at(ip *c, const tile *t, int64_t o) {
  rv *v = newv(c, K_ELEM);
  v->t = (tile *)t;
  v->addr = alloc(c, (size_t)c->T * 8);
  for (int th = 0; th < c->T; th++)
    v->addr[th] = t->dom + swz(t, t->off[th] + o * ag__dt_size(t->dt));
  return v;
}

/* Element e (0 .. size-1, in index order) of a tile: its element value. */
static rv *tile_elem(ip *c, const tile *t, int64_t e) {
  int64_t o;
  ag_layout_eval_index(&t->lay, e, &o);
  return elem_at(c, t, o);
}

/* The element of register operand t at `byte` bytes past its first byte
 * (the element at coordinate zero): an intrinsic's operand is one
 * contiguous range of bytes (the checker requires it) whose register j is
 * bytes 4j..4j+3, as the lowering passes them; an ldmatrix into
 * rb[2 * nj:2 * nj + 2, :] fills rb[2nj, 0], rb[2nj, 1], ... */
static rv *reg_at(ip *c, const tile *t, int64_t byte) {
  rv *v = elem_at(c, t, 0);
  for (int th = 0; th < c->T; th++)
    v->addr[th] += byte;
  return v;
}

/* ------------------------------------------------------------- arithmetic */
/* Element-wise arithmetic on data: an operator (op: + - * / and 'n', the
 * unary minus), or, when bi is set, a builtin of the table (tile_builtin.h). */
static rv *data_op(ip *c, const ag_tile_node *n, int op, const ag__builtin *bi, rv *a, rv *b) {
  int dt = a->k == K_DATA || a->k == K_ELEM ? (a->k == K_ELEM ? a->t->dt : a->dt)
           : !b ? 0 : (b->k == K_ELEM ? b->t->dt : b->dt);
  rv *x = as_data(c, n, a, dt), *y = b ? as_data(c, n, b, dt) : NULL;
  if (x->dt != dt || (y && y->dt != dt))
    fail(c, n, "data of two types (%s, %s): convert one with cvt()", ag__dt_name(x->dt),
         ag__dt_name(y ? y->dt : dt));
  if (!ag__dt_is_float(dt))
    fail(c, n, "arithmetic on %s data is not interpreted", ag__dt_name(dt));
  rv *r = newv(c, K_DATA);
  r->dt = dt;
  r->d = alloc(c, (size_t)c->T * 32);
  for (int th = 0; th < c->T; th++) {
    double u = ld(dt, x->d + th * 32), v = y ? ld(dt, y->d + th * 32) : 0, z;
    if (dt == DT_F64) {
      z = bi ? bi->f64(u, v) : op == '+' ? u + v : op == '-' ? u - v : op == '*' ? u * v
          : op == '/' ? u / v : -u;
    } else {
      float fu = (float)u, fv = (float)v;
      z = bi ? bi->f32(fu, fv) : op == '+' ? fu + fv : op == '-' ? fu - fv : op == '*' ? fu * fv
          : op == '/' ? fu / fv : -fu;
    }
    st(dt, r->d + th * 32, z);
  }
  return r;
}

static rv *int_op(ip *c, const ag_tile_node *n, ag_tile_op op, rv *a, rv *b) {
  rv *r = vint_a(c, K_INT);
  for (int th = 0; th < c->T; th++) {
    uint32_t x = a->i[th], y = b->i[th], z = 0;
    switch (op) {
    case AG_OP_ADD: z = x + y; break;
    case AG_OP_SUB: z = x - y; break;
    case AG_OP_MUL: z = x * y; break;
    case AG_OP_DIV:
    case AG_OP_FLOORDIV:
    case AG_OP_MOD:
      if (y == 0) {
        if (c->mask[th])
          fail(c, n, "division by zero (thread %d)", th);
        break;
      }
      z = op == AG_OP_MOD ? x % y : x / y;
      break;
    case AG_OP_AND: z = x & y; break;
    case AG_OP_OR: z = x | y; break;
    case AG_OP_XOR: z = x ^ y; break;
    case AG_OP_SHL: z = y < 32 ? x << y : 0; break;
    case AG_OP_SHR: z = y < 32 ? x >> y : 0; break;
    default: fail(c, n, "'%s' on integers", ag_tile_op_text(op));
    }
    r->i[th] = z;
  }
  return r;
}

static int is_dataish(const rv *v) { return v->k == K_DATA || v->k == K_ELEM; }

static rv *binop(ip *c, const ag_tile_node *n) {
  rv *a = eval(c, n->a), *b = eval(c, n->b);
  if ((a->k == K_INT || a->k == K_BOOL) && (b->k == K_INT || b->k == K_BOOL))
    return int_op(c, n, n->op, a, b);
  if (a->k == K_FLOAT && b->k == K_FLOAT) {
    rv *v = newv(c, K_FLOAT);
    int ok;
    v->f = ag_tile_fop(n->op, a->f, b->f, &ok);
    if (!ok)
      fail(c, n, "'%s' on float constants", ag_tile_op_text(n->op));
    return v;
  }
  if (is_dataish(a) || is_dataish(b)) {
    int op = n->op == AG_OP_ADD ? '+' : n->op == AG_OP_SUB ? '-' : n->op == AG_OP_MUL ? '*'
             : n->op == AG_OP_DIV ? '/' : 0;
    if (!op)
      fail(c, n, "'%s' on data values", ag_tile_op_text(n->op));
    return data_op(c, n, op, NULL, a, b);
  }
  fail(c, n, "'%s' on these operands is not interpreted", ag_tile_op_text(n->op));
}

static rv *cmp(ip *c, const ag_tile_node *n) {
  rv *a = eval(c, n->a), *b = eval(c, n->b);
  rv *r = vint_a(c, K_BOOL);
  for (int th = 0; th < c->T; th++) {
    uint32_t x = as_u(c, n->a, a, th), y = as_u(c, n->b, b, th);
    r->i[th] = n->op == AG_OP_EQ ? x == y : n->op == AG_OP_NE ? x != y : n->op == AG_OP_LT ? x < y
               : n->op == AG_OP_LE ? x <= y : n->op == AG_OP_GT ? x > y : x >= y;
  }
  return r;
}

/* ------------------------------------------------------------- builtins */
static const ag_tile_node *argn(ip *c, const ag_tile_node *call, int i) {
  if (i >= call->list.n)
    fail(c, call, "too few arguments");
  return call->list.v[i];
}
static int as_dtype(ip *c, const ag_tile_node *n) {
  rv *v = eval(c, n);
  if (v->k != K_DTYPE)
    fail(c, n, "expected a data type");
  return v->dt;
}
static int new_rbuf(ip *c, int64_t bytes) {
  if (c->nr == c->rcap) {
    int nc = c->rcap ? c->rcap * 2 : 64;
    unsigned char **nb = alloc(c, (size_t)nc * sizeof *nb);
    int64_t *ns = alloc(c, (size_t)nc * sizeof *ns);
    if (c->nr) {
      memcpy(nb, c->rbuf, (size_t)c->nr * sizeof *nb);
      memcpy(ns, c->rsize, (size_t)c->nr * sizeof *ns);
    }
    c->rbuf = nb;
    c->rsize = ns;
    c->rcap = nc;
  }
  c->rbuf[c->nr] = alloc(c, (size_t)(bytes * c->T));
  c->rsize[c->nr] = bytes;
  return c->nr++;
}
static rv *tile_value(ip *c, tile *t) {
  rv *v = newv(c, K_TILE);
  v->t = t;
  return v;
}

static rv *view(ip *c, const ag_tile_node *n, rv *base) {
  int dt = as_dtype(c, argn(c, n, 1));
  rv *shape = eval(c, argn(c, n, 0));
  if (base->k == K_DATA) { /* a register value as a tile: fresh registers */
    int w = ag__dt_size(base->dt);
    int rb = new_rbuf(c, w);
    for (int th = 0; th < c->T; th++)
      memcpy(c->rbuf[rb] + th * w, base->d + th * 32, (size_t)w);
    tile *t = tile_new(c, SP_R, base->dt, rb);
    t->lay = rowmajor(c, n, ag_tuple_leaf(&c->lc, 1));
    base = tile_value(c, t);
  }
  if (base->k == K_ELEM)
    fail(c, n, "view() of a single element: load it into a name first (x = t[i]; x.view(...))");
  if (base->k != K_TILE)
    fail(c, n, "view() applies to a tile");
  tile *t = tile_new(c, base->t->sp, dt, base->t->buf);
  memcpy(t->off, base->t->off, (size_t)c->T * 8);
  t->dom = base->t->dom;
  t->swz = base->t->swz;
  t->sw = base->t->sw;
  t->lay = shape->k == K_LAYOUT ? shape->lay : rowmajor(c, n, to_tuple(c, n, shape));
  if (n->list.n == 3) {
    rv *s = eval(c, n->list.v[2]);
    if (s->k != K_SWZ)
      fail(c, n->list.v[2], "expected swizzle(B, M, S)");
    int lg = 0;
    while ((1 << lg) < ag__dt_size(dt))
      lg++;
    t->swz = 1;
    t->sw = s->sw;
    t->sw.m += lg; /* in bytes */
    /* the swizzle's domain starts at the view */
    int64_t o0 = t->off[first_active(c)];
    t->dom += o0;
    for (int th = 0; th < c->T; th++)
      t->off[th] -= o0;
  }
  int64_t want = ag_layout_size(&base->t->lay) * ag__dt_size(base->t->dt);
  if (ag_layout_size(&t->lay) * ag__dt_size(dt) != want)
    fail(c, n, "view of %lld bytes over a tile of %lld",
         (long long)(ag_layout_size(&t->lay) * ag__dt_size(dt)), (long long)want);
  return tile_value(c, t);
}

static rv *reg_tile(ip *c, const ag_tile_node *n, const ag_tile_node *arg) {
  rv *v = eval(c, arg);
  if (v->k != K_TILE || v->t->sp != SP_R)
    fail(c, arg, "expected a register tile");
  (void)n;
  return v;
}

/* 1 when every lane of warp w takes part, 0 when none does; a warp-wide
 * intrinsic with part of a warp is an error (the checker refuses it too). */
static int warp_active(ip *c, const ag_tile_node *n, int w, const char *what) {
  int active = 0;
  for (int l = 0; l < 32; l++)
    active += c->mask[w * 32 + l];
  if (active && active != 32)
    fail(c, n, "%s with part of warp %d", what, w);
  return active != 0;
}

/* A warp exchange (AG__BI_LANE, tile_builtin.h): lane l of each warp gets
 * the bits of lane l ^ mask, as shfl.sync.bfly with a full mask; every lane
 * of a warp takes part or none does (the lowering refuses what could split
 * a warp; a run that splits one anyway is an error here). */
static rv *lane_xchg(ip *c, const ag_tile_node *n, const ag__builtin *bi) {
  if (n->list.n != 2)
    fail(c, n, "%s(x, lane_mask) takes two arguments", bi->name);
  if (c->T % 32)
    fail(c, n, "%s() needs a block of whole warps (this one has %d threads)", bi->name, c->T);
  rv *x = eval(c, argn(c, n, 0));
  if (!is_dataish(x))
    fail(c, n, "%s() exchanges data", bi->name);
  x = as_data(c, n, x, 0);
  int w = ag__dt_size(x->dt);
  if (w > 8)
    fail(c, n, "%s() needs a scalar element, not %s", bi->name, ag__dt_name(x->dt));
  int64_t m = as_const(c, argn(c, n, 1), eval(c, argn(c, n, 1)));
  if (m < 0 || m > 31)
    fail(c, n, "%s() needs a lane mask in 0..31, not %lld", bi->name, (long long)m);
  rv *r = newv(c, K_DATA);
  r->dt = x->dt;
  r->d = alloc(c, (size_t)c->T * 32);
  for (int wp = 0; wp < c->T / 32; wp++)
    if (warp_active(c, n, wp, bi->name))
      for (int l = 0; l < 32; l++)
        memcpy(r->d + (wp * 32 + l) * 32, x->d + (wp * 32 + (l ^ (int)m)) * 32, (size_t)w);
  return r;
}

static void mma(ip *c, const ag_tile_node *n) {
  rv *d = reg_tile(c, n, argn(c, n, 0)), *a = reg_tile(c, n, argn(c, n, 1)),
     *b = reg_tile(c, n, argn(c, n, 2)), *cc = reg_tile(c, n, argn(c, n, 3));
  if (ag_layout_size(&a->t->lay) != 8 || ag_layout_size(&b->t->lay) != 4 ||
      ag_layout_size(&d->t->lay) != 4 || ag_layout_size(&cc->t->lay) != 4)
    fail(c, n, "mma_m16n8k16 takes d, c of 4 f32, a of 8 and b of 4 bf16/f16 elements");
  ag_layout la, lb, lcl;
  ag_atom_mma_m16n8k16_a(&c->lc, &la);
  ag_atom_mma_m16n8k16_b(&c->lc, &lb);
  ag_atom_mma_m16n8k16_c(&c->lc, &lcl);
  rv *ae[8], *be[4], *ce[4], *de[4];
  int ab = ag__dt_size(a->t->dt); /* 2: bf16, f16 (b: the same); c and d: f32 */
  for (int e = 0; e < 8; e++)
    ae[e] = load(c, n, reg_at(c, a->t, ab * e));
  for (int e = 0; e < 4; e++) {
    be[e] = load(c, n, reg_at(c, b->t, ab * e));
    ce[e] = load(c, n, reg_at(c, cc->t, 4 * e));
    de[e] = reg_at(c, d->t, 4 * e);
  }
  for (int w = 0; w < c->T / 32; w++) {
    double A[16][16], B[8][16], C[16][8];
    if (!warp_active(c, n, w, "mma_m16n8k16"))
      continue;
    for (int l = 0; l < 32; l++) {
      int th = w * 32 + l;
      int64_t o;
      for (int e = 0; e < 8; e++) {
        ag_layout_eval_index(&la, l + 32 * e, &o);
        A[o % 16][o / 16] = ld(a->t->dt, ae[e]->d + th * 32);
      }
      for (int e = 0; e < 4; e++) {
        ag_layout_eval_index(&lb, l + 32 * e, &o);
        B[o % 8][o / 8] = ld(b->t->dt, be[e]->d + th * 32);
        ag_layout_eval_index(&lcl, l + 32 * e, &o);
        C[o % 16][o / 16] = ld(DT_F32, ce[e]->d + th * 32);
      }
    }
    for (int l = 0; l < 32; l++) {
      int th = w * 32 + l;
      for (int e = 0; e < 4; e++) {
        int64_t o;
        ag_layout_eval_index(&lcl, l + 32 * e, &o);
        int m = (int)(o % 16), nn = (int)(o / 16);
        double s = C[m][nn];
        for (int k = 0; k < 16; k++)
          s += A[m][k] * B[nn][k];
        int64_t bytes;
        unsigned char *buf = buf_of(c, d->t, th, &bytes);
        st(DT_F32, buf + de[e]->addr[th], s);
      }
    }
  }
}

static void ldmatrix(ip *c, const ag_tile_node *n, int nmat, int trans) {
  rv *d = reg_tile(c, n, argn(c, n, 0)), *s = eval(c, argn(c, n, 1));
  if (s->k != K_ELEM || s->t->sp != SP_S)
    fail(c, n, "ldmatrix reads from a shared-memory element (this lane's row)");
  if (ag_layout_size(&d->t->lay) * ag__dt_size(d->t->dt) != 4 * nmat)
    fail(c, n, "ldmatrix_x%d writes %d bytes of registers", nmat, 4 * nmat);
  rv *de[4]; /* register j: bytes 4j..4j+3 of the destination */
  for (int j = 0; j < nmat; j++)
    de[j] = reg_at(c, d->t, 4 * j);
  for (int w = 0; w < c->T / 32; w++) {
    if (!warp_active(c, n, w, "ldmatrix"))
      continue;
    for (int l = 0; l < 32; l++) {
      int th = w * 32 + l;
      for (int j = 0; j < nmat; j++) {
        unsigned char v[4];
        if (!trans) {
          int64_t row = s->addr[w * 32 + 8 * j + l / 4];
          memcpy(v, c->smem + row + 4 * (l % 4), 4);
        } else {
          int64_t r0 = s->addr[w * 32 + 8 * j + 2 * (l % 4)],
                  r1 = s->addr[w * 32 + 8 * j + 2 * (l % 4) + 1];
          memcpy(v, c->smem + r0 + 2 * (l / 4), 2);
          memcpy(v + 2, c->smem + r1 + 2 * (l / 4), 2);
        }
        int64_t bytes;
        unsigned char *buf = buf_of(c, d->t, th, &bytes);
        memcpy(buf + de[j]->addr[th], v, 4);
      }
    }
  }
}

/* wgmma_m64nNk16(d, a, b) per warpgroup (lockstep: at once): A (64 x 16)
 * from the threads' registers through the .a atom or from a shared tile, B
 * (N x 16) from a shared tile, D += A B^T through the .d atom, summed in
 * double and rounded to f32 once, as mma. A shared operand is the same tile
 * for every thread of the warpgroup. */
static double wg_shared(ip *c, const ag_tile_node *n, const tile *t, int th0, int64_t row,
                        int64_t k) {
  int64_t ln;
  ag_layout m0;
  if (ag_layout_mode(&c->lc, &t->lay, 0, &m0))
    fail(c, n, "out of memory");
  int64_t rows = ag_layout_size(&m0);
  if (ag_layout_eval_index(&t->lay, row + rows * k, &ln))
    fail(c, n, "cannot evaluate the operand's layout");
  int64_t a = t->dom + swz(t, t->off[th0] + ln * ag__dt_size(t->dt));
  return ld(t->dt, c->smem + a);
}

static void wgmma(ip *c, const ag_tile_node *n, const ag__intrin *in) {
  if (c->T % 128)
    fail(c, n, "%s needs whole warpgroups of 128 threads", in->name);
  rv *d = reg_tile(c, n, argn(c, n, 0)), *a = eval(c, argn(c, n, 1)), *b = eval(c, argn(c, n, 2));
  int nd = in->n / 2;
  if (ag_layout_size(&d->t->lay) != nd || d->t->dt != DT_F32)
    fail(c, n, "%s takes d of %d f32", in->name, nd);
  if (b->k != K_TILE || b->t->sp != SP_S || (a->k != K_TILE))
    fail(c, n, "%s takes a (registers or shared) and b (shared) tiles", in->name);
  int ashared = a->t->sp == SP_S;
  ag_layout la, ld_;
  ag_atom_info info;
  if (ag_atom_layout(&c->lc, in->atom_a, &la, NULL) || ag_atom_layout(&c->lc, in->atom_c, &ld_, &info))
    fail(c, n, "no layout for %s", in->name);
  rv **ae = alloc(c, 8 * sizeof *ae), **de = alloc(c, (size_t)nd * sizeof *de);
  if (!ashared)
    for (int e = 0; e < 8; e++)
      ae[e] = load(c, n, reg_at(c, a->t, 2 * e));
  for (int e = 0; e < nd; e++)
    de[e] = reg_at(c, d->t, 4 * e);
  int N = in->n;
  double *A = alloc(c, 64 * 16 * sizeof *A), *B = alloc(c, (size_t)N * 16 * sizeof *B);
  for (int w = 0; w < c->T / 128; w++) {
    int act = 0;
    for (int q = 0; q < 4; q++)
      act += warp_active(c, n, 4 * w + q, in->name);
    if (!act)
      continue;
    if (act != 4)
      fail(c, n, "%s with part of warpgroup %d", in->name, w);
    int th0 = 128 * w;
    for (int th = th0; th < th0 + 128; th++)
      if ((ashared && a->t->off[th] != a->t->off[th0]) || b->t->off[th] != b->t->off[th0])
        fail(c, n, "%s: thread %d names another shared operand than thread %d of its warpgroup",
             in->name, th, th0);
    for (int64_t r = 0; r < (N > 64 ? N : 64); r++)
      for (int64_t k = 0; k < 16; k++) {
        if (r < N)
          B[r * 16 + k] = wg_shared(c, n, b->t, th0, r, k);
        if (r < 64 && ashared)
          A[r * 16 + k] = wg_shared(c, n, a->t, th0, r, k);
      }
    if (!ashared)
      for (int t = 0; t < 128; t++)
        for (int e = 0; e < 8; e++) {
          int64_t o;
          ag_layout_eval_index(&la, t + 128 * e, &o);
          A[(o % 64) * 16 + o / 64] = ld(a->t->dt, ae[e]->d + (th0 + t) * 32);
        }
    for (int t = 0; t < 128; t++) {
      int th = th0 + t;
      int64_t bytes;
      unsigned char *buf = buf_of(c, d->t, th, &bytes);
      for (int e = 0; e < nd; e++) {
        int64_t o;
        ag_layout_eval_index(&ld_, t + 128 * e, &o);
        int64_t m = o % 64, nn = o / 64;
        double s = ld(DT_F32, buf + de[e]->addr[th]);
        for (int k = 0; k < 16; k++)
          s += A[m * 16 + k] * B[nn * 16 + k];
        st(DT_F32, buf + de[e]->addr[th], s);
      }
    }
  }
}

/* ------------------------------------------------------------------- TMA
 * tma_map builds the layout module's ag_tma_map for the bound sizes (the
 * driver's rules checked as argus run checks them before encoding);
 * tma_load and tma_store move the box element by element where
 * ag_tma_box_elem puts it (the map's swizzle on the shared address, zeros
 * for elements outside the tensor; a store skips those), in every thread of
 * the mask at once, as a bulk copy. */
static const ag_tile_node *kwarg(const ag_tile_node *call, int pos, const char *name) {
  int k = 0;
  for (int i = 0; i < call->list.n; i++) {
    const ag_tile_node *a = call->list.v[i];
    if (a->kind == AG_TN_KWARG ? !strcmp(a->name, name) : k++ == pos)
      return a->kind == AG_TN_KWARG ? a->a : a;
  }
  return NULL;
}

static rv *tma_map(ip *c, const ag_tile_node *n) {
  const ag_tile_node *an = kwarg(n, 0, "tensor"), *bn = kwarg(n, 1, "box"),
                     *sn = kwarg(n, 2, "swizzle");
  if (!an || !bn)
    fail(c, n, "tma_map(tensor, box=(...)[, swizzle=S])");
  rv *tv = eval(c, an), *bv = eval(c, bn);
  if (tv->k != K_TILE || tv->t->sp != SP_G)
    fail(c, an, "tma_map takes a tensor parameter");
  int r = ag_layout_rank(&tv->t->lay), nb = bv->k == K_TUPLE ? bv->n : 1;
  if (r < 1 || r > 5 || nb != r)
    fail(c, bn, "the box of tma_map has one extent per dimension of the tensor (%d), not %d", r,
         nb);
  ag_tma_map *m = alloc(c, sizeof *m);
  memset(m, 0, sizeof *m);
  m->rank = r;
  m->elem_bytes = ag__dt_size(tv->t->dt);
  m->elem_float = ag__dt_is_float(tv->t->dt);
  uint64_t pitch = (uint64_t)m->elem_bytes;
  for (int i = 0; i < r; i++) { /* dimension i is the tensor's r - 1 - i */
    ag_layout md;
    if (ag_layout_mode(&c->lc, &tv->t->lay, r - 1 - i, &md))
      fail(c, an, "bad tensor layout");
    m->dim[i] = (uint64_t)ag_layout_size(&md);
    if (i)
      m->stride[i - 1] = pitch;
    pitch *= m->dim[i];
    m->box[i] = (uint32_t)as_const(c, bn, bv->k == K_TUPLE ? bv->items[r - 1 - i] : bv);
    m->estride[i] = 1;
  }
  m->swizzle = (ag_swz_mode)(sn ? as_const(c, sn, eval(c, sn)) : 0);
  if (ag_tma_map_check(&c->lc, m))
    fail(c, n, "tma_map: %s", ag_str_cstr(&c->lc.err));
  rv *v = newv(c, K_TMAP);
  v->t = tv->t;
  v->tm = m;
  return v;
}

static void tma_copy(ip *c, const ag_tile_node *n, const ag__intrin *in) {
  rv *mv = eval(c, argn(c, n, 0));
  if (mv->k != K_TMAP)
    fail(c, n, "%s takes a tensor map first", in->name);
  const ag_tma_map *m = mv->tm;
  int r = m->rank, load = in->kind == IK_TMA_LOAD;
  if (n->list.n != 1 + r + (load ? 2 : 1))
    fail(c, n, "%s takes the map, %d coordinates and %s", in->name, r,
         load ? "the destination and the mbarrier" : "the source");
  rv *co[5];
  for (int i = 0; i < r; i++)
    co[i] = eval(c, argn(c, n, 1 + i));
  rv *sv = eval(c, argn(c, n, 1 + r));
  if ((sv->k != K_TILE && sv->k != K_ELEM) || sv->t->sp != SP_S)
    fail(c, n, "the shared side of %s is a shared tile or element", in->name);
  int64_t gbytes, sbytes;
  unsigned char *g = buf_of(c, mv->t, 0, &gbytes), *sm = buf_of(c, sv->t, 0, &sbytes);
  int64_t es = m->elem_bytes, ext[5], total = 1;
  for (int i = 0; i < r; i++)
    total *= ext[i] = ag_tma_box_extent(m, i);
  for (int th = 0; th < c->T; th++) {
    if (!c->mask[th])
      continue;
    int32_t org[5];
    for (int i = 0; i < r; i++)
      org[i] = (int32_t)as_u(c, n, co[r - 1 - i], th);
    int64_t dst = sv->k == K_ELEM ? sv->addr[th] : sv->t->dom + swz(sv->t, sv->t->off[th]);
    for (int64_t e = 0; e < total; e++) {
      int64_t j[5] = {0}, x = e;
      for (int i = 0; i < r; i++) {
        j[i] = x % ext[i];
        x /= ext[i];
      }
      ag_tma_elem te;
      if (dst < 0 || dst > UINT32_MAX ||
          ag_tma_box_elem(&c->lc, m, org, (uint32_t)dst, j, &te))
        fail(c, n, "%s: %s", in->name, ag_str_cstr(&c->lc.err));
      if (te.addr + es > sbytes)
        fail(c, n, "%s writes past shared memory (thread %d)", in->name, th);
      int64_t go = 0;
      for (int i = r - 1; !te.oob && i >= 0; i--)
        go = go * (int64_t)m->dim[i] + te.g[i];
      go *= es;
      if (!te.oob && go + es > gbytes)
        fail(c, n, "%s outside its tensor (thread %d)", in->name, th);
      if (load && te.oob)
        memset(sm + te.addr, 0, (size_t)es);
      else if (load)
        memcpy(sm + te.addr, g + go, (size_t)es);
      else if (!te.oob)
        memcpy(g + go, sm + te.addr, (size_t)es);
    }
  }
}

static rv *call(ip *c, const ag_tile_node *n) {
  const ag_tile_node *f = n->a;
  if (f->kind == AG_TN_ATTR && !strcmp(f->name, "view"))
    return view(c, n, eval(c, f->a));
  if (f->kind == AG_TN_ATTR) {
    rv *fv = eval(c, f);
    if (fv->k != K_IOP)
      fail(c, f, "'%s' is not a function", f->name);
    /* mma_m16n8k16.a/.b/.c(lane, e): the fragment's coordinates, by the row's layout atoms */
    rv *lane = eval(c, argn(c, n, 0)), *e = eval(c, argn(c, n, 1));
    const char *atom = fv->name[0] == 'a'   ? fv->in->atom_a
                       : fv->name[0] == 'b' ? fv->in->atom_b : fv->in->atom_c;
    ag_layout tv;
    ag_atom_info info;
    if (ag_atom_layout(&c->lc, atom, &tv, &info))
      fail(c, f, "no layout for '%s'", atom);
    int rows = (int)info.rows;
    rv *x = vint_a(c, K_INT), *y = vint_a(c, K_INT);
    for (int th = 0; th < c->T; th++) {
      int64_t o;
      ag_layout_eval_index(&tv, (int64_t)(lane->i[th] % info.threads) +
                                    info.threads * (int64_t)e->i[th], &o);
      x->i[th] = (uint32_t)(o % rows);
      y->i[th] = (uint32_t)(o / rows);
    }
    rv *t = newv(c, K_TUPLE);
    t->n = 2;
    t->items = alloc(c, 2 * sizeof *t->items);
    t->items[0] = x;
    t->items[1] = y;
    return t;
  }
  if (f->kind != AG_TN_NAME)
    fail(c, f, "only named functions can be called");
  const char *fn = f->name;
  if (!strcmp(fn, "tma_map"))
    return tma_map(c, n);
  if (!strcmp(fn, "make_shared")) {
    ag_tuple *sh = to_tuple(c, n, eval(c, argn(c, n, 0)));
    int dt = as_dtype(c, argn(c, n, 1));
    tile *t = tile_new(c, SP_S, dt, 0);
    t->lay = rowmajor(c, n, sh);
    int64_t bytes = ag_layout_size(&t->lay) * ag__dt_size(dt);
    int64_t al = ag__tile_uses_tma(c->k) ? AG__TMA_SMEM_ALIGN : 128; /* as the lowering */
    t->dom = (c->smem_bytes + al - 1) / al * al;
    c->smem_bytes = t->dom + bytes;
    if (c->smem_bytes > c->smem_cap)
      fail(c, n, "shared memory over %lld bytes", (long long)c->smem_cap);
    if (n->list.n == 3) {
      rv *s = eval(c, n->list.v[2]);
      int lg = 0;
      while ((1 << lg) < ag__dt_size(dt))
        lg++;
      t->swz = 1;
      t->sw = s->sw;
      t->sw.m += lg;
    }
    return tile_value(c, t);
  }
  if (!strcmp(fn, "make_local")) {
    ag_tuple *sh = to_tuple(c, n, eval(c, argn(c, n, 0)));
    int dt = as_dtype(c, argn(c, n, 1));
    tile *t = tile_new(c, SP_R, dt, 0);
    t->lay = rowmajor(c, n, sh);
    t->buf = new_rbuf(c, ag_layout_size(&t->lay) * ag__dt_size(dt));
    return tile_value(c, t);
  }
  if (!strcmp(fn, "layout")) {
    rv *v = newv(c, K_LAYOUT);
    if (ag_layout_make(&c->lc, to_tuple(c, n, eval(c, argn(c, n, 0))),
                       to_tuple(c, n, eval(c, argn(c, n, 1))), &v->lay))
      fail(c, n, "bad layout");
    return v;
  }
  if (!strcmp(fn, "swizzle")) {
    rv *v = newv(c, K_SWZ);
    v->sw.b = (int)as_const(c, n, eval(c, argn(c, n, 0)));
    v->sw.m = (int)as_const(c, n, eval(c, argn(c, n, 1)));
    v->sw.s = (int)as_const(c, n, eval(c, argn(c, n, 2)));
    return v;
  }
  if (!strcmp(fn, "fill")) {
    rv *t = reg_tile(c, n, argn(c, n, 0)), *x = eval(c, argn(c, n, 1));
    for (int64_t e = 0; e < ag_layout_size(&t->t->lay); e++)
      store(c, n, tile_elem(c, t->t, e), x);
    return newv(c, K_NONE);
  }
  if (!strcmp(fn, "cvt")) {
    rv *x = eval(c, argn(c, n, 0));
    int dt = as_dtype(c, argn(c, n, 1));
    if (x->k == K_FLOAT || x->k == K_INT)
      return as_data(c, n, x, dt);
    rv *s = as_data(c, n, x, 0), *r = newv(c, K_DATA);
    int f2i = ag__dt_is_float(s->dt) && !ag__dt_is_float(dt);
    r->dt = dt;
    r->d = alloc(c, (size_t)c->T * 32);
    for (int th = 0; th < c->T; th++) {
      if (f2i)
        st_f2i(dt, r->d + th * 32, ld(s->dt, s->d + th * 32));
      else
        st(dt, r->d + th * 32, ld(s->dt, s->d + th * 32));
    }
    return r;
  }
  const ag__builtin *bi = ag__builtin_lookup(fn);
  if (bi && bi->kind == AG__BI_REDUCE) {
    const ag__builtin *step = bi->step ? ag__builtin_lookup(bi->step) : NULL;
    rv *t = reg_tile(c, n, argn(c, n, 0));
    rv *acc = load(c, n, tile_elem(c, t->t, 0));
    for (int64_t e = 1; e < ag_layout_size(&t->t->lay); e++)
      acc = data_op(c, n, '+', step, acc, load(c, n, tile_elem(c, t->t, e)));
    return acc;
  }
  if (bi && bi->kind == AG__BI_LANE)
    return lane_xchg(c, n, bi);
  if (bi) {
    rv *a = eval(c, argn(c, n, 0)), *b = bi->arity == 2 ? eval(c, argn(c, n, 1)) : NULL;
    if (bi->ints && a->k == K_INT && (!b || b->k == K_INT)) {
      rv *r = vint_a(c, K_INT);
      for (int th = 0; th < c->T; th++)
        r->i[th] = (uint32_t)bi->ints(a->i[th], b ? b->i[th] : 0);
      return r;
    }
    return data_op(c, n, 0, bi, a, b);
  }
  const ag__intrin *in = ag__intrin_lookup(fn);
  if (in) { /* one handler per kind of the intrinsic table (../tile_intrin.h) */
    switch (in->kind) {
    case IK_CP_ASYNC: {
      rv *d = eval(c, argn(c, n, 0)), *s = eval(c, argn(c, n, 1));
      if (d->k != K_ELEM || s->k != K_ELEM)
        fail(c, n, "%s copies a global element into a shared one", in->name);
      if (ag__dt_size(d->t->dt) != ag__dt_size(s->t->dt))
        fail(c, n, "%s of elements of different sizes", in->name);
      store(c, n, d, load(c, n, s));
      break;
    }
    case IK_MMA: mma(c, n); break;
    case IK_LDMATRIX: ldmatrix(c, n, in->num, in->trans); break;
    case IK_BULK_COPY: {
      /* every thread of the mask copies its bytes at once, as a cp.async */
      rv *d = eval(c, argn(c, n, 0)), *s = eval(c, argn(c, n, 1));
      rv *nb = eval(c, argn(c, n, 2));
      if (d->k != K_ELEM || s->k != K_ELEM || d->t->sp != SP_S || s->t->sp != SP_G)
        fail(c, n, "%s copies from a global element on into shared memory", in->name);
      int64_t bytes = as_const(c, argn(c, n, 2), nb);
      for (int th = 0; th < c->T; th++) {
        if (!c->mask[th])
          continue;
        int64_t db, sb;
        unsigned char *dp = buf_of(c, d->t, th, &db), *sp = buf_of(c, s->t, th, &sb);
        if (bytes <= 0 || d->addr[th] < 0 || d->addr[th] + bytes > db || s->addr[th] < 0 ||
            s->addr[th] + bytes > sb)
          fail(c, n, "%s of %lld bytes outside its buffers (thread %d)", in->name,
               (long long)bytes, th);
        memcpy(dp + d->addr[th], sp + s->addr[th], (size_t)bytes);
      }
      break;
    }
    case IK_TMA_LOAD: case IK_TMA_STORE: tma_copy(c, n, in); break;
    case IK_TMA_COMMIT: case IK_TMA_WAIT:
    case IK_SYNC: case IK_CP_COMMIT: case IK_CP_WAIT:
    case IK_MBAR_INIT: case IK_MBAR_FENCE: case IK_MBAR_ARRIVE: case IK_MBAR_WAIT:
    case IK_CP_MBAR_ARRIVE: case IK_SETMAXNREG:
      break; /* lockstep: nothing to wait for (a checked program waits where it must) */
    case IK_WGMMA: wgmma(c, n, in); break;
    case IK_WG_FENCE: case IK_WG_COMMIT: case IK_WG_WAIT:
      break; /* lockstep: the product is done at the call */
    default: fail(c, f, "the value interpreter has no handler for intrinsic '%s'", in->name);
    }
    return newv(c, K_NONE);
  }
  if (!strcmp(fn, "reset") || !strcmp(fn, "tag"))
    return newv(c, K_NONE); /* tags are not values */
  fail(c, f, "'%s' is not interpreted by the value reference", fn);
}

/* ------------------------------------------------------------ evaluation */
static rv *eval(ip *c, const ag_tile_node *n) {
  switch (n->kind) {
  case AG_TN_INT: return vint_u(c, (uint32_t)n->ival);
  case AG_TN_BOOL: {
    rv *v = vint_u(c, (uint32_t)n->ival);
    v->k = K_BOOL;
    return v;
  }
  case AG_TN_FLOAT: {
    rv *v = newv(c, K_FLOAT);
    v->f = n->fval;
    return v;
  }
  case AG_TN_NAME: {
    rv *v = lookup(c, n->name);
    if (v)
      return v;
    int dt = ag__dt_lookup(n->name);
    if (dt) {
      v = newv(c, K_DTYPE);
      v->dt = dt;
      return v;
    }
    const ag__intrin *in = ag__intrin_lookup(n->name);
    if (in) {
      v = newv(c, K_INTRIN);
      v->name = n->name;
      v->in = in;
      return v;
    }
    fail(c, n, "unknown name '%s'", n->name);
  }
  case AG_TN_ATTR: {
    const ag_tile_node *b = n->a;
    if (b->kind == AG_TN_NAME && (!strcmp(b->name, "threadIdx") || !strcmp(b->name, "blockIdx"))) {
      int ax = n->name[0] - 'x';
      if (ax < 0 || ax > 2 || n->name[1])
        fail(c, n, "%s has fields x, y and z", b->name);
      rv *v = vint_a(c, K_INT);
      for (int th = 0; th < c->T; th++) {
        if (b->name[0] == 'b')
          v->i[th] = c->bid[ax];
        else
          v->i[th] = (uint32_t)(ax == 0 ? th % c->bx[0]
                               : ax == 1 ? th / c->bx[0] % c->bx[1]
                                         : th / (c->bx[0] * c->bx[1]));
      }
      return v;
    }
    rv *bv = eval(c, b);
    if (bv->k == K_INTRIN && bv->in->kind == IK_WGMMA && (!strcmp(n->name, "a") || !strcmp(n->name, "d"))) {
      rv *v = newv(c, K_IOP); /* wgmma's .a and .d atoms */
      v->name = n->name;
      v->in = bv->in;
      return v;
    }
    if (bv->k == K_INTRIN && bv->in->kind == IK_MMA &&
        (!strcmp(n->name, "a") || !strcmp(n->name, "b") || !strcmp(n->name, "c"))) {
      rv *v = newv(c, K_IOP);
      v->name = n->name;
      v->in = bv->in;
      return v;
    }
    if (bv->k == K_TMAP && !strcmp(n->name, "bytes"))
      return vint_u(c, (uint32_t)ag_tma_box_bytes(bv->tm));
    fail(c, n, "'.%s' is not interpreted here", n->name);
  }
  case AG_TN_BINOP: return binop(c, n);
  case AG_TN_UNOP: {
    rv *a = eval(c, n->a);
    if (a->k == K_FLOAT) {
      rv *v = newv(c, K_FLOAT);
      v->f = n->op == AG_OP_NEG ? -a->f : a->f;
      return v;
    }
    if (is_dataish(a)) {
      if (n->op != AG_OP_NEG)
        return a;
      return data_op(c, n, 'n', NULL, a, NULL);
    }
    rv *v = vint_a(c, K_INT);
    for (int th = 0; th < c->T; th++) {
      uint32_t x = as_u(c, n->a, a, th);
      v->i[th] = n->op == AG_OP_NEG ? 0u - x : n->op == AG_OP_INV ? ~x : x;
    }
    return v;
  }
  case AG_TN_CMP: return cmp(c, n);
  case AG_TN_LAND:
  case AG_TN_LOR: {
    rv *a = eval(c, n->a), *b = eval(c, n->b), *v = vint_a(c, K_BOOL);
    for (int th = 0; th < c->T; th++) {
      int x = as_u(c, n->a, a, th) != 0, y = as_u(c, n->b, b, th) != 0;
      v->i[th] = (uint32_t)(n->kind == AG_TN_LAND ? x && y : x || y);
    }
    return v;
  }
  case AG_TN_LNOT: {
    rv *a = eval(c, n->a), *v = vint_a(c, K_BOOL);
    for (int th = 0; th < c->T; th++)
      v->i[th] = as_u(c, n->a, a, th) == 0;
    return v;
  }
  case AG_TN_TERNARY: { /* a if b else c */
    rv *cond = eval(c, n->b), *x = eval(c, n->a), *y = eval(c, n->c);
    if ((x->k == K_INT || x->k == K_BOOL) && (y->k == K_INT || y->k == K_BOOL)) {
      rv *v = vint_a(c, K_INT);
      for (int th = 0; th < c->T; th++)
        v->i[th] = as_u(c, n->b, cond, th) ? x->i[th] : y->i[th];
      return v;
    }
    int dt = is_dataish(x) ? (x->k == K_ELEM ? x->t->dt : x->dt)
                           : is_dataish(y) ? (y->k == K_ELEM ? y->t->dt : y->dt) : DT_F32;
    rv *dx = as_data(c, n->a, x, dt), *dy = as_data(c, n->c, y, dt), *v = newv(c, K_DATA);
    v->dt = dt;
    v->d = alloc(c, (size_t)c->T * 32);
    for (int th = 0; th < c->T; th++)
      memcpy(v->d + th * 32, (as_u(c, n->b, cond, th) ? dx : dy)->d + th * 32, 32);
    return v;
  }
  case AG_TN_CALL: return call(c, n);
  case AG_TN_INDEX: {
    rv *b = eval(c, n->a);
    if (b->k == K_TUPLE) {
      int64_t i = as_const(c, n->list.v[0], eval(c, n->list.v[0]));
      if (n->list.n != 1 || i >= b->n)
        fail(c, n, "tuple index out of range");
      return b->items[i];
    }
    if (b->k != K_TILE)
      fail(c, n->a, "only tiles and tuples can be indexed");
    return index_tile(c, n, b->t);
  }
  case AG_TN_TUPLE: {
    rv *v = newv(c, K_TUPLE);
    v->n = n->list.n;
    v->items = alloc(c, (size_t)(v->n ? v->n : 1) * sizeof *v->items);
    for (int i = 0; i < v->n; i++)
      v->items[i] = eval(c, n->list.v[i]);
    return v;
  }
  default: fail(c, n, "this expression is not interpreted by the value reference");
  }
}

/* ------------------------------------------------------------ statements */
static void assign_to(ip *c, const ag_tile_node *t, rv *v) {
  if (t->kind == AG_TN_NAME) {
    if (v->k == K_ELEM)
      v = load(c, t, v);
    bindv(c, t->name, v);
    return;
  }
  if (t->kind == AG_TN_INDEX) {
    rv *dst = eval(c, t);
    if (dst->k == K_ELEM) {
      store(c, t, dst, v);
      return;
    }
    if (dst->k == K_TILE && dst->t->sp == SP_R && (v->k == K_INT || v->k == K_FLOAT)) {
      for (int64_t e = 0; e < ag_layout_size(&dst->t->lay); e++)
        store(c, t, tile_elem(c, dst->t, e), v);
      return;
    }
    fail(c, t, "this assignment target is not interpreted");
  }
  fail(c, t, "cannot assign to this");
}

static void exec_assign(ip *c, const ag_tile_node *n) {
  const ag_tile_list *tg = &n->list, *vs = &n->list2;
  for (int i = 0; i < vs->n; i++)
    if (vs->v[i]->kind == AG_TN_ARROW)
      return; /* a tag function: no value */
  if (n->op != AG_OP_NONE) { /* x op= y */
    ag_tile_node fake = *n;
    fake.kind = AG_TN_BINOP;
    fake.a = tg->v[0];
    fake.b = vs->v[0];
    assign_to(c, tg->v[0], binop(c, &fake));
    return;
  }
  if (tg->n == vs->n) {
    rv **vals = alloc(c, (size_t)vs->n * sizeof *vals);
    for (int i = 0; i < vs->n; i++)
      vals[i] = eval(c, vs->v[i]);
    for (int i = 0; i < tg->n; i++)
      assign_to(c, tg->v[i], vals[i]);
    return;
  }
  rv *v = eval(c, vs->v[0]);
  if (vs->n != 1 || v->k != K_TUPLE || v->n != tg->n)
    fail(c, n, "%d targets for %d values", tg->n, vs->n);
  for (int i = 0; i < tg->n; i++)
    assign_to(c, tg->v[i], v->items[i]);
}

/* Warp specialization (docs/run.md): a role split is an 'if' whose condition
 * takes whole warpgroups, differs between two of them, and whose branches
 * hold loops that synchronize through mbarriers. Threads run in lockstep
 * here and mbarrier waits are no-ops, so the roles are run as cooperating
 * tasks that step at their mbarrier loops: each branch is cut at those
 * loops (which must line up, as the checker requires), the statements
 * between run for each role under its mask (producer first), and a matched
 * pair of loops runs one iteration of each role's body at a time. That is
 * an execution of the kernel: the producer fills a stage before the
 * consumers read it, and refills it after they released it (a checked
 * kernel waits for nothing else). */
static int role_mask(ip *c, const unsigned char *m) {
  if (c->T % 128)
    return 0;
  for (int th = 0; th < c->T; th++)
    if (m[th] != m[th - th % 128])
      return 0;
  return 1;
}
static int has_sync(const ag_tile_list *l) {
  for (int i = 0; i < l->n; i++)
    if (ag__intrin_sync_loop(l->v[i]) ||
        (l->v[i]->kind != AG_TN_FOR && (has_sync(&l->v[i]->list) || has_sync(&l->v[i]->list2))))
      return 1;
  return 0;
}
static void range_of(ip *c, const ag_tile_node *f, int64_t *a3) {
  const ag_tile_node *it = f->a;
  if (it->kind != AG_TN_CALL || it->a->kind != AG_TN_NAME || strcmp(it->a->name, "range") ||
      it->list.n < 1 || it->list.n > 3)
    fail(c, it, "a loop runs over range(...)");
  int64_t a[3] = {0, 0, 1};
  for (int i = 0; i < it->list.n; i++)
    a[i] = as_const(c, it->list.v[i], eval(c, it->list.v[i]));
  a3[0] = it->list.n >= 2 ? a[0] : 0;
  a3[1] = it->list.n >= 2 ? a[1] : a[0];
  a3[2] = it->list.n == 3 ? a[2] : 1;
  if (a3[2] == 0)
    fail(c, it, "range() step must not be zero");
}
static void role_fuse(ip *c, const ag_tile_list *lp, unsigned char *mp, const ag_tile_list *lq,
                      unsigned char *mq) {
  unsigned char *all = c->mask;
  int ip0 = 0, iq0 = 0;
  for (;;) {
    int jp = ip0, jq = iq0;
    while (jp < lp->n && !ag__intrin_sync_loop(lp->v[jp]))
      jp++;
    while (jq < lq->n && !ag__intrin_sync_loop(lq->v[jq]))
      jq++;
    c->mask = mp;
    for (int i = ip0; i < jp; i++)
      exec_stmt(c, lp->v[i]);
    c->mask = mq;
    for (int i = iq0; i < jq; i++)
      exec_stmt(c, lq->v[i]);
    c->mask = all;
    if (jp == lp->n && jq == lq->n)
      return;
    const ag_tile_node *fp = jp < lp->n ? lp->v[jp] : NULL, *fq = jq < lq->n ? lq->v[jq] : NULL;
    int64_t rp[3], rq[3];
    if (fp && fq) {
      c->mask = mp;
      range_of(c, fp, rp);
      c->mask = mq;
      range_of(c, fq, rq);
      c->mask = all;
    }
    if (!fp || !fq || strcmp(fp->name, fq->name) || rp[0] != rq[0] || rp[1] != rq[1] ||
        rp[2] != rq[2])
      fail(c, fp ? fp : fq,
           "the roles' mbarrier loops do not line up (the same loops, variables and ranges in "
           "both branches; argus check says which)");
    for (int64_t v = rp[0]; rp[2] > 0 ? v < rp[1] : v > rp[1]; v += rp[2]) {
      bindv(c, fp->name, vint_u(c, (uint32_t)v));
      role_fuse(c, &fp->list, mp, &fq->list, mq);
    }
    ip0 = jp + 1;
    iq0 = jq + 1;
  }
}

static void exec_stmt(ip *c, const ag_tile_node *n) {
  switch (n->kind) {
  case AG_TN_ASSIGN: exec_assign(c, n); return;
  case AG_TN_EXPR: eval(c, n->a); return;
  case AG_TN_ASSERT:
  case AG_TN_ASSUME:
  case AG_TN_PASS: return;
  case AG_TN_REGION: exec_block(c, &n->list); return;
  case AG_TN_IF: {
    rv *cond = eval(c, n->a);
    unsigned char *saved = c->mask, *mt = alloc(c, (size_t)c->T), *me = alloc(c, (size_t)c->T);
    int any_t = 0, any_e = 0;
    for (int th = 0; th < c->T; th++) {
      int x = as_u(c, n->a, cond, th) != 0;
      mt[th] = saved[th] && x;
      me[th] = saved[th] && !x;
      any_t |= mt[th];
      any_e |= me[th];
    }
    if (any_t && any_e && role_mask(c, mt) && (has_sync(&n->list) || has_sync(&n->list2))) {
      role_fuse(c, &n->list, mt, &n->list2, me); /* warp specialization */
      c->mask = saved;
      return;
    }
    if (any_t) {
      c->mask = mt;
      exec_block(c, &n->list);
    }
    if (any_e) {
      c->mask = me;
      exec_block(c, &n->list2);
    }
    c->mask = saved;
    return;
  }
  case AG_TN_FOR: {
    const ag_tile_node *it = n->a;
    if (it->kind != AG_TN_CALL || it->a->kind != AG_TN_NAME || strcmp(it->a->name, "range"))
      fail(c, it, "a loop runs over range(...)");
    int64_t a[3] = {0, 0, 1};
    for (int i = 0; i < it->list.n && i < 3; i++)
      a[i] = as_const(c, it->list.v[i], eval(c, it->list.v[i]));
    int64_t start = it->list.n >= 2 ? a[0] : 0, stop = it->list.n >= 2 ? a[1] : a[0],
            step = it->list.n == 3 ? a[2] : 1;
    if (step == 0)
      fail(c, it, "range() step must not be zero");
    for (int64_t v = start; step > 0 ? v < stop : v > stop; v += step) {
      bindv(c, n->name, vint_u(c, (uint32_t)v));
      exec_block(c, &n->list);
    }
    return;
  }
  default: fail(c, n, "this statement is not interpreted");
  }
}
static void exec_block(ip *c, const ag_tile_list *l) {
  for (int i = 0; i < l->n; i++)
    exec_stmt(c, l->v[i]);
}

/* One block: a fresh environment with the module constants and parameters. */
static void run_block(ip *c) {
  c->nenv = 0;
  c->cap = 0;
  c->env = NULL;
  c->nr = c->rcap = 0;
  c->smem_bytes = 0;
  memset(c->smem, 0, (size_t)c->smem_cap);
  for (int i = 0; i < c->nnames; i++)
    bindv(c, c->names[i], vint_u(c, (uint32_t)c->vals[i]));
  for (int i = 0; i < c->p->top.n; i++) {
    const ag_tile_node *s = c->p->top.v[i];
    if (s->kind == AG_TN_ASSIGN && s->list.n == 1 && s->list.v[0]->kind == AG_TN_NAME &&
        !lookup(c, s->list.v[0]->name))
      bindv(c, s->list.v[0]->name, eval(c, s->list2.v[0]));
  }
  for (int i = 0; i < c->k->list.n; i++) {
    const ag_tile_node *prm = c->k->list.v[i];
    if (prm->a->kind == AG_TN_CALL && prm->a->a->kind == AG_TN_NAME &&
        !strcmp(prm->a->a->name, "Tensor")) {
      const ag_tile_lkernel *lk = c->b->k;
      int j = 0;
      while (j < lk->nparams && strcmp(lk->params[j].name, prm->name))
        j++;
      if (j == lk->nparams)
        fail(c, prm, "tensor '%s' is not a parameter of the lowered kernel", prm->name);
      int dt = ag__dt_lookup(lk->params[j].dtype);
      tile *t = tile_new(c, SP_G, dt, j);
      ag_tuple **sh = alloc(c, (size_t)lk->params[j].rank * sizeof *sh);
      for (int r = 0; r < lk->params[j].rank; r++)
        sh[r] = ag_tuple_leaf(&c->lc, (int64_t)c->b->dims[j * AG_TILE_RUN_MAXRANK + r]);
      t->lay = rowmajor(c, prm, ag_tuple_make(&c->lc, lk->params[j].rank, sh));
      bindv(c, prm->name, tile_value(c, t));
    } else if (!lookup(c, prm->name) && prm->b) {
      bindv(c, prm->name, eval(c, prm->b)); /* a const parameter's default */
    }
  }
  exec_block(c, &c->k->list2);
}

int ag_tile_interp(const ag_tile_program *p, const ag_tile_bound *b,
                   const char *const *defines, int ndefines, void **tensors, char *err,
                   size_t errlen) {
  ip *c = ag_calloc(1, sizeof *c);
  if (!c)
    return AG_ENOMEM;
  int rc = 0, np = b->k->nparams;
  c->p = p;
  c->b = b;
  c->err = err;
  c->errlen = errlen;
  err[0] = 0;
  for (int i = 0; i < p->top.n; i++)
    if (p->top.v[i]->kind == AG_TN_KERNEL && !strcmp(p->top.v[i]->name, b->k->name))
      c->k = p->top.v[i];
  const char **names = ag_calloc((size_t)(np + ndefines) + 1, sizeof *names);
  uint64_t *vals = ag_calloc((size_t)(np + ndefines) + 1, sizeof *vals);
  char **dn = ag_calloc((size_t)ndefines + 1, sizeof *dn);
  c->gbuf = ag_calloc((size_t)np + 1, sizeof *c->gbuf);
  c->gbytes = ag_calloc((size_t)np + 1, sizeof *c->gbytes);
  c->smem_cap = 227 * 1024;
  c->smem = ag_malloc((size_t)c->smem_cap);
  if (!names || !vals || !dn || !c->gbuf || !c->gbytes || !c->smem || !c->k) {
    rc = c->k ? AG_ENOMEM : AG_ENOTFOUND;
    goto out;
  }
  for (int j = 0; j < np; j++) {
    if (b->k->params[j].kind == AG_TILE_PARAM_SIZE) {
      names[c->nnames] = b->k->params[j].name;
      vals[c->nnames++] = b->size_vals[j];
    } else {
      c->gbuf[j] = tensors[j];
      c->gbytes[j] = b->bytes[j];
    }
  }
  for (int i = 0; i < ndefines; i++) {
    if (!(dn[i] = ag_strdup(defines[i]))) {
      rc = AG_ENOMEM;
      goto out;
    }
    char *eq = strchr(dn[i], '=');
    if (!eq)
      continue;
    *eq = 0;
    names[c->nnames] = dn[i];
    vals[c->nnames++] = strtoull(eq + 1, NULL, 0);
  }
  c->names = names;
  c->vals = vals;
  for (int i = 0; i < 3; i++)
    c->bx[i] = (int)b->k->block[i];
  c->T = c->bx[0] * c->bx[1] * c->bx[2];
  ag_arena_init(&c->ar, 1 << 20);
  if (c->T > 1024 || c->T % 32) {
    snprintf(err, errlen, "blocks of %d threads: the value reference takes whole warps, at most "
                          "1024", c->T);
    rc = AG_EUNSUPPORTED;
    ag_arena_release(&c->ar);
    goto out;
  }
  if (setjmp(c->fail)) {
    rc = err[0] && !strcmp(err, "out of memory") ? AG_ENOMEM : AG_EUNSUPPORTED;
    if (c->lc_live)
      ag_layout_ctx_release(&c->lc);
  } else {
    for (unsigned z = 0; z < b->grid[2]; z++)
      for (unsigned y = 0; y < b->grid[1]; y++)
        for (unsigned x = 0; x < b->grid[0]; x++) {
          ag_arena_release(&c->ar);
          ag_arena_init(&c->ar, 1 << 20);
          ag_layout_ctx_init(&c->lc, &c->ar);
          c->lc_live = 1;
          c->bid[0] = x;
          c->bid[1] = y;
          c->bid[2] = z;
          c->mask = alloc(c, (size_t)c->T);
          memset(c->mask, 1, (size_t)c->T);
          run_block(c);
          ag_layout_ctx_release(&c->lc);
          c->lc_live = 0;
        }
  }
  ag_arena_release(&c->ar);
out:
  for (int i = 0; dn && i < ndefines; i++)
    ag_free(dn[i]);
  ag_free(dn);
  ag_free(names);
  ag_free(vals);
  ag_free(c->gbuf);
  ag_free(c->gbytes);
  ag_free(c->smem);
  ag_free(c);
  return rc;
}
