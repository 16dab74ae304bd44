/*
 * eval.c — concrete evaluation of symbolic tags: for one thread, block and
 * set of problem sizes, the set of tuples a tag stands for (top included).
 * A shared-memory read is resolved by enumerating every write and writing
 * thread that reaches the byte, with the same rules the solver encodes
 * (coverage, guards, resets, settledness) but computed directly. Tests
 * compare these sets with a concrete interpreter; nothing in the checker's
 * verdicts depends on this file.
 */
#include "check_int.h"

#include <string.h>

typedef struct evctx {
  ag__ck *c;
  const ag__cenv *e;
  int64_t tid, byte;
  long budget; /* expression nodes one evaluation may visit */
} evctx;

static int env_cb(void *ud, const char *name, int64_t *v) {
  const evctx *x = ud;
  if (!strcmp(name, "tid")) {
    *v = x->tid;
    return 0;
  }
  if (!strcmp(name, "@byte")) {
    *v = x->byte;
    return 0;
  }
  if (!strncmp(name, "bid.", 4) && name[4] >= 'x' && name[4] <= 'z' && !name[5]) {
    *v = x->e->bid[name[4] - 'x'];
    return 0;
  }
  for (int i = 0; i < x->e->nsizes; i++)
    if (!strcmp(x->e->names[i], name)) {
      *v = x->e->vals[i];
      return 0;
    }
  return AG_ENOTFOUND;
}

/* Integer semantics of the solver: 32-bit unsigned, wrapping; x / 0 is all
 * ones and x % 0 is x (SMT-LIB); shifts by 32 or more give 0. */
uint32_t ag__u32_op(ag_expr_op op, uint32_t a, uint32_t b) {
  switch (op) {
  case AG_X_ADD: return a + b;
  case AG_X_SUB: return a - b;
  case AG_X_MUL: return a * b;
  case AG_X_DIV: return b ? a / b : 0xffffffffu;
  case AG_X_MOD: return b ? a % b : a;
  case AG_X_XOR: return a ^ b;
  case AG_X_AND: return a & b;
  case AG_X_OR: return a | b;
  case AG_X_SHL: return b >= 32 ? 0 : a << b;
  case AG_X_SHR: return b >= 32 ? 0 : a >> b;
  default: return 0;
  }
}

static int xev_rec(evctx *x, const ag_expr *e, uint32_t *v, int depth) {
  if (e->op == AG_X_CONST) {
    *v = (uint32_t)e->value;
    return 0;
  }
  if (e->op == AG_X_SYM) {
    int64_t s;
    if (env_cb(x, e->name, &s))
      return AG_EUNDEFINED;
    *v = (uint32_t)s;
    return 0;
  }
  if (depth > 4000 || --x->budget < 0)
    return AG_EUNDEFINED;
  uint32_t a, b;
  if (xev_rec(x, e->a, &a, depth + 1) || xev_rec(x, e->b, &b, depth + 1))
    return AG_EUNDEFINED;
  *v = ag__u32_op(e->op, a, b);
  return 0;
}

static int xev(evctx *x, const ag_expr *e, int64_t *v) {
  uint32_t r;
  x->budget = 1000000;
  if (xev_rec(x, e, &r, 0))
    return AG_EUNDEFINED;
  *v = r;
  return 0;
}

static int bev(evctx *x, const ag__bx *b, int *out) {
  if (!b) {
    *out = 1;
    return 0;
  }
  int l, r;
  int64_t a, c;
  switch (b->k) {
  case BX_CONST: *out = b->value; return 0;
  case BX_CMP:
    if (xev(x, b->a, &a) || xev(x, b->b, &c))
      return AG_EUNDEFINED;
    switch (b->op) {
    case AG_OP_EQ: *out = a == c; break;
    case AG_OP_NE: *out = a != c; break;
    case AG_OP_LT: *out = (uint64_t)a < (uint64_t)c; break;
    case AG_OP_LE: *out = (uint64_t)a <= (uint64_t)c; break;
    case AG_OP_GT: *out = (uint64_t)a > (uint64_t)c; break;
    case AG_OP_GE: *out = (uint64_t)a >= (uint64_t)c; break;
    default: return AG_EUNDEFINED;
    }
    return 0;
  case BX_AND:
  case BX_OR:
    if (bev(x, b->x, &l) || bev(x, b->y, &r))
      return AG_EUNDEFINED;
    *out = b->k == BX_AND ? (l && r) : (l || r);
    return 0;
  case BX_NOT:
    if (bev(x, b->x, &l))
      return AG_EUNDEFINED;
    *out = !l;
    return 0;
  }
  return AG_EUNDEFINED;
}

int ag__cset_add(ag__cset *s, const ag__ctag *t) {
  for (int i = 0; i < s->n; i++) {
    const ag__ctag *u = &s->t[i];
    if (u->top == t->top && u->n == t->n &&
        (t->top || !memcmp(u->v, t->v, (size_t)t->n * sizeof t->v[0])))
      return 0;
  }
  if (s->n == (int)(sizeof s->t / sizeof s->t[0])) {
    s->overflow = 1;
    return 0;
  }
  s->t[s->n++] = *t;
  return 0;
}

static int eval_rec(evctx *x, const ag__tag *t, int proj, ag__cset *out, int depth);

/* Per write, which thread wrote each byte (for one block and set of sizes):
 * built once by evaluating the write's address for every thread, so a read
 * finds its writer without enumerating threads again. */
struct ag__evcache {
  ag__cenv env;
  int64_t vals[64];
  int32_t **who; /* per write: writer + 1 per byte, 0 none, -1 several (or NULL) */
  uint8_t **off;
  unsigned char *done;
  size_t n;
};

static int same_env(const ag__cenv *a, const struct ag__evcache *k) {
  if (memcmp(a->bid, k->env.bid, sizeof a->bid) || a->nsizes != k->env.nsizes)
    return 0;
  for (int i = 0; i < a->nsizes && i < 64; i++)
    if (a->vals[i] != k->vals[i])
      return 0;
  return 1;
}

static void evcache_free(struct ag__evcache *k) {
  if (!k)
    return;
  for (size_t i = 0; i < k->n; i++) {
    ag_free(k->who[i]);
    ag_free(k->off[i]);
  }
  ag_free(k->who);
  ag_free(k->off);
  ag_free(k->done);
  ag_free(k);
}

void ag__evcache_free(ag__ck *c) {
  evcache_free(c->evcache);
  c->evcache = NULL;
}

static struct ag__evcache *cache_for(evctx *x) {
  ag__ck *c = x->c;
  struct ag__evcache *k = c->evcache;
  if (k && (k->n != c->wrecs.n || !same_env(x->e, k))) {
    evcache_free(k);
    k = c->evcache = NULL;
  }
  if (!k) {
    k = ag_calloc(1, sizeof *k);
    if (!k)
      return NULL;
    k->env = *x->e;
    for (int i = 0; i < x->e->nsizes && i < 64; i++)
      k->vals[i] = x->e->vals[i];
    k->n = c->wrecs.n;
    k->who = ag_calloc(k->n + 1, sizeof *k->who);
    k->off = ag_calloc(k->n + 1, sizeof *k->off);
    k->done = ag_calloc(k->n + 1, 1);
    if (!k->who || !k->off || !k->done) {
      evcache_free(k);
      return NULL;
    }
    c->evcache = k;
  }
  return k;
}

/* The writer map of write i, or NULL when it cannot be built. */
static int32_t *writers_of(evctx *x, int i, uint8_t **offs) {
  struct ag__evcache *k = cache_for(x);
  if (!k)
    return NULL;
  if (!k->done[i]) {
    k->done[i] = 1;
    const ag__wrec *w = &x->c->wrecs.v[i];
    int64_t size = x->c->sbufs.v[w->buf].size;
    int32_t *who = ag_calloc((size_t)size + 1, sizeof *who);
    uint8_t *off = ag_calloc((size_t)size + 1, 1);
    int ok = who && off;
    for (int64_t t = 0; ok && t < x->c->nthreads; t++) {
      evctx y = *x;
      y.tid = t;
      int g;
      int64_t A;
      if (bev(&y, w->guard, &g) || xev(&y, w->addr, &A)) {
        ok = 0;
        break;
      }
      if (!g)
        continue;
      for (int j = 0; j < w->width; j++) {
        int64_t b = A + j;
        if (b < 0 || b >= size)
          continue;
        who[b] = who[b] ? -1 : (int32_t)(t + 1);
        off[b] = (uint8_t)j;
      }
    }
    if (!ok) {
      ag_free(who);
      ag_free(off);
      who = NULL;
      off = NULL;
    }
    k->who[i] = who;
    k->off[i] = off;
  }
  *offs = k->off[i];
  return k->who[i];
}

static int eval_write(evctx *x, const ag__tag *t, const ag__wrec *w, int64_t wt, int64_t off,
                      int proj, ag__cset *out, int depth) {
  int settled = (wt == x->tid && w->done_pc <= t->pc) || w->vis_epoch <= t->epoch ||
                ag__wrec_msettled(w, x->tid, t->pc);
  if (!settled) {
    ag__ctag top = {1, 0, {0}};
    return ag__cset_add(out, &top);
  }
  evctx y = *x;
  y.tid = wt;
  y.byte = off;
  if (w->bcond) { /* a TMA box: zeros (bottom) outside the tensor */
    int in = 0;
    if (bev(&y, w->bcond, &in))
      return AG_EUNDEFINED;
    if (!in)
      return 0;
  }
  return eval_rec(&y, w->ptag ? w->ptag : w->tags[off], proj, out, depth + 1);
}

static int eval_shr(evctx *x, const ag__tag *t, int proj, ag__cset *out, int depth) {
  ag__ck *c = x->c;
  int64_t X;
  if (xev(x, t->addr, &X))
    return AG_EUNDEFINED;
  int64_t reader = x->tid;
  for (int i = 0; i < t->nrec; i++) {
    const ag__wrec *w = &c->wrecs.v[i];
    if (w->buf != t->buf)
      continue;
    int dead = 0;
    for (size_t k = 0; k < c->resets.n && !dead; k++) {
      const ag__reset *e = &c->resets.v[k];
      if (e->buf == t->buf && e->pc > w->pc && e->pc < t->pc && X >= e->lo && X < e->hi)
        dead = 1;
    }
    if (dead)
      continue;
    uint8_t *offs = NULL;
    int32_t *who = writers_of(x, i, &offs);
    if (who && X >= 0 && X < c->sbufs.v[t->buf].size && who[X] >= 0) {
      if (who[X] > 0) {
        int rc = eval_write(x, t, w, who[X] - 1, offs[X], proj, out, depth);
        if (rc)
          return rc;
      }
      continue;
    }
    if (who && (X < 0 || X >= c->sbufs.v[t->buf].size))
      continue;
    for (int64_t wt = 0; wt < c->nthreads; wt++) {
      evctx y = *x;
      y.tid = wt;
      int g;
      if (bev(&y, w->guard, &g))
        return AG_EUNDEFINED;
      if (!g)
        continue;
      int64_t A;
      if (xev(&y, w->addr, &A))
        return AG_EUNDEFINED;
      int64_t off = X - A;
      if (off < 0 || off >= w->width)
        continue;
      int settled = (wt == reader && w->done_pc <= t->pc) || w->vis_epoch <= t->epoch ||
                    ag__wrec_msettled(w, reader, t->pc);
      if (!settled) {
        ag__ctag top = {1, 0, {0}};
        ag__cset_add(out, &top);
        continue;
      }
      y.byte = off;
      const ag__tag *bt = w->ptag ? w->ptag : w->tags[off];
      int rc = eval_rec(&y, bt, proj, out, depth + 1);
      if (rc)
        return rc;
    }
  }
  return 0;
}

static int eval_rec(evctx *x, const ag__tag *t, int proj, ag__cset *out, int depth) {
  ag__ctag ct;
  memset(&ct, 0, sizeof ct);
  if (depth > 16) {
    ct.top = 1;
    return ag__cset_add(out, &ct);
  }
  switch (t->k) {
  case TG_BOT: return 0;
  case TG_TOP:
    ct.top = 1;
    return ag__cset_add(out, &ct);
  case TG_TUP:
    if (proj >= 0) {
      if (proj < t->n) {
        ct.n = 1;
        if (xev(x, t->comp[proj], &ct.v[0]))
          return AG_EUNDEFINED;
      }
    } else {
      ct.n = t->n > AG__CTAG_MAX ? AG__CTAG_MAX : t->n;
      for (int i = 0; i < ct.n; i++)
        if (xev(x, t->comp[i], &ct.v[i]))
          return AG_EUNDEFINED;
    }
    return ag__cset_add(out, &ct);
  case TG_JOIN:
    for (int i = 0; i < t->nm; i++) {
      int rc = eval_rec(x, t->m[i], proj, out, depth);
      if (rc)
        return rc;
    }
    return 0;
  case TG_SHR: return eval_shr(x, t, proj, out, depth);
  }
  return 0;
}

int ag__tag_eval(ag__ck *c, const ag__tag *t, const ag__cenv *e, int64_t tid, int proj,
                 ag__cset *out) {
  evctx x = {c, e, tid, 0, 0};
  return eval_rec(&x, t, proj, out, 0);
}
