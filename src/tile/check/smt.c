/*
 * smt.c — tag assertions as Z3 bit-vector queries (the only file that sees
 * z3.h), and counterexamples from models.
 *
 * Encoding (docs/check.md has it with examples). Integers are 32-bit
 * vectors, division and remainder unsigned. The reading thread is the
 * variable tid (< block size), blocks bid.x/y/z (< 2^16) and problem sizes
 * (>= 1, each tensor under 2^31 bytes, no overflow) are shared by every
 * obligation. A tag denotes a set of tuples; a tag assertion is violated
 * when a member of one side differs from a member of the other (top members
 * differ from everything). Set membership is existential: a shared-memory
 * read byte X has a member for every write w and writing thread t with
 * guard_w(t) and X - addr_w(t) < width_w (unsigned, so X >= addr_w(t)):
 * the tag of w's byte X - addr_w(t), with tid := t; the member is top when
 * the write is not settled for the reader (no barrier between them, or a
 * cp.async group not yet waited for). Each side gets a selector variable
 * that picks one member, so a query is linear in the number of writes. A
 * satisfying model is a counterexample; the checker reads the block, the
 * thread, the writing thread, the data element and both tags out of it.
 * Unsatisfiable means the assertion holds for every block, thread and size.
 * Limits are deterministic (Z3's rlimit), never wall-clock.
 *
 * Emptiness (a side that is bottom because no write reaches it) is a
 * universal property; it is decided by enumerating the block's threads
 * when the read address depends on the thread index only, which is the
 * common case (shared addresses rarely depend on the block).
 */
#include "check_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <z3.h>

#define BITS 32
#define MAXC 12 /* tag components */

typedef struct alt {
  Z3_ast cond;
  int top;
  const char *why;
  const ag__tag *tup;   /* TG_TUP leaf */
  Z3_ast thread;        /* the thread tup's expressions belong to */
  Z3_ast byte;          /* the value of "@byte" in them (parametric tags) */
  const ag__wrec *rec;  /* outermost shared write on the way, or NULL */
  Z3_ast writer;
  const ag__tag *shr;
  Z3_ast reader;
} alt;

typedef struct member {
  Z3_ast cond, top, arity;
  int ncomp;               /* components in use (the largest arity) */
  Z3_ast comp[MAXC];
  Z3_ast sel;
  int nalts;
  alt *alts;
} member;

typedef struct smt {
  ag__ck *c;
  Z3_context z;
  Z3_sort bv;
  Z3_ast tid, bid[3];
  Z3_ast *sizes;
  int nsizes;
  int fresh;
  Z3_ast cur_byte;      /* value of "@byte" while translating */
  ag_map memo;
  Z3_solver solver;        /* reused across queries */
  Z3_solver solver_bv;     /* the same for queries about summarized iterations */
  int use_bv;              /* the next query is one: Z3's QF_BV solver */
  Z3_model defaults;       /* a model of the assumptions alone */
  int min_defaults;        /* defaults has the smallest sizes */
  int64_t *floor;          /* per size: its smallest value under the assumptions (0: not yet) */
  unsigned char **recbits; /* per write: bytes it may touch (NULL: unknown) */
  unsigned char *recdone;
  ag_map readbits;         /* read address -> bytes it may touch */
  int failed;
  char errtext[256];
  ag_tile_report *r;
  long alt_steps;          /* alts_of calls for the obligation being encoded */
  int alt_capped;          /* ... past AG_SMT_MAX_ALT_STEPS: a top member stands for the rest */
} smt;

/* The Z3 checking macro: runs a call, then records the call's text and
 * Z3's message if the context holds an error (the error handler is off, so
 * Z3 never aborts the process). */
#define Z3CALL(s, expr) ((void)(expr), zcheck_err((s), #expr))
static void zcheck_err(smt *s, const char *text) {
  Z3_error_code e = Z3_get_error_code(s->z);
  if (e != Z3_OK && !s->failed) {
    s->failed = 1;
    snprintf(s->errtext, sizeof s->errtext, "%s: %s", text, Z3_get_error_msg(s->z, e));
  }
}

static Z3_ast bvnum(smt *s, int64_t v) {
  return Z3_mk_unsigned_int64(s->z, (uint64_t)v & 0xffffffffu, s->bv);
}

/* A variable of `bits` bits, zero-extended to the working width: the
 * high bits are constant zero, which bit-blasting then propagates away. */
static Z3_ast narrow_var(smt *s, const char *name, int bits) {
  if (bits >= BITS)
    return Z3_mk_const(s->z, Z3_mk_string_symbol(s->z, name), s->bv);
  Z3_ast v = Z3_mk_const(s->z, Z3_mk_string_symbol(s->z, name), Z3_mk_bv_sort(s->z, (unsigned)bits));
  return Z3_mk_zero_ext(s->z, (unsigned)(BITS - bits), v);
}

static int bits_for(int64_t n) { /* bits to hold 0 .. n-1 */
  int b = 1;
  while (b < BITS && ((int64_t)1 << b) < n)
    b++;
  return b;
}

static Z3_ast fresh_bv(smt *s, const char *prefix, int64_t below) {
  char name[48];
  snprintf(name, sizeof name, "%s!%d", prefix, s->fresh++);
  return narrow_var(s, name, bits_for(below));
}

static Z3_ast and2(smt *s, Z3_ast a, Z3_ast b) {
  Z3_ast v[2] = {a, b};
  return Z3_mk_and(s->z, 2, v);
}
static Z3_ast or2(smt *s, Z3_ast a, Z3_ast b) {
  Z3_ast v[2] = {a, b};
  return Z3_mk_or(s->z, 2, v);
}
static Z3_ast ztrue(smt *s) { return Z3_mk_true(s->z); }
static Z3_ast zfalse(smt *s) { return Z3_mk_false(s->z); }

/* --------------------------------------------------------- translation */
static Z3_ast size_var(smt *s, const char *name) {
  for (int i = 0; i < s->nsizes; i++)
    if (!strcmp(s->c->sizes.v[i], name))
      return s->sizes[i];
  return NULL;
}

static Z3_ast tr(smt *s, const ag_expr *e, Z3_ast thread) {
  struct {
    const void *e, *t, *b;
  } key = {e, thread, s->cur_byte};
  Z3_ast hit = ag_map_get(&s->memo, &key, sizeof key);
  if (hit)
    return hit;
  Z3_ast r = NULL;
  switch (e->op) {
  case AG_X_CONST: r = bvnum(s, e->value); break;
  case AG_X_SYM:
    if (!strcmp(e->name, "tid"))
      r = thread;
    else if (!strcmp(e->name, "bid.x"))
      r = s->bid[0];
    else if (!strcmp(e->name, "bid.y"))
      r = s->bid[1];
    else if (!strcmp(e->name, "bid.z"))
      r = s->bid[2];
    else if (!strcmp(e->name, "@byte"))
      r = s->cur_byte ? s->cur_byte : bvnum(s, 0);
    else
      r = size_var(s, e->name);
    if (!r && strstr(e->name, "#q")) {
      /* a summarized loop's iteration counter: below 2^QBITS (loop.c's
       * facts), as narrow as the sizes it is compared with */
      r = narrow_var(s, e->name, AG__QBITS);
    } else if (!r) {
      /* a symbol the interpreter made that is not a problem size */
      r = Z3_mk_const(s->z, Z3_mk_string_symbol(s->z, e->name), s->bv);
    }
    break;
  default: {
    Z3_ast a = tr(s, e->a, thread), b = tr(s, e->b, thread);
    int64_t k;
    /* powers of two as shifts and masks: cheaper to bit-blast */
    if (ag_expr_is_const(e->b, &k) && k > 0 && (k & (k - 1)) == 0 && k < ((int64_t)1 << 31)) {
      int sh = 0;
      while (((int64_t)1 << sh) < k)
        sh++;
      if (e->op == AG_X_DIV) {
        r = Z3_mk_bvlshr(s->z, a, bvnum(s, sh));
        break;
      }
      if (e->op == AG_X_MOD) {
        r = Z3_mk_bvand(s->z, a, bvnum(s, k - 1));
        break;
      }
      if (e->op == AG_X_MUL) {
        r = Z3_mk_bvshl(s->z, a, bvnum(s, sh));
        break;
      }
    }
    if (e->op == AG_X_ADD) {
      /* fields that do not overlap: a + b is a | b (no carry chain) */
      if ((ag__xmask(s->c, e->a) & ag__xmask(s->c, e->b)) == 0) {
        r = Z3_mk_bvor(s->z, a, b);
        break;
      }
    }
    if (e->op == AG_X_SUB && e->b->op == AG_X_MOD && e->b->a == e->a &&
        ag_expr_is_const(e->b->b, &k) && k > 0 && (k & (k - 1)) == 0) {
      /* x - x % 2^n clears the low bits */
      r = Z3_mk_bvand(s->z, a, bvnum(s, ~(k - 1)));
      break;
    }
    switch (e->op) {
    case AG_X_ADD: r = Z3_mk_bvadd(s->z, a, b); break;
    case AG_X_SUB: r = Z3_mk_bvsub(s->z, a, b); break;
    case AG_X_MUL: r = Z3_mk_bvmul(s->z, a, b); break;
    case AG_X_DIV: r = Z3_mk_bvudiv(s->z, a, b); break;
    case AG_X_MOD: r = Z3_mk_bvurem(s->z, a, b); break;
    case AG_X_XOR: r = Z3_mk_bvxor(s->z, a, b); break;
    case AG_X_AND: r = Z3_mk_bvand(s->z, a, b); break;
    case AG_X_OR: r = Z3_mk_bvor(s->z, a, b); break;
    case AG_X_SHL: r = Z3_mk_bvshl(s->z, a, b); break;
    case AG_X_SHR: r = Z3_mk_bvlshr(s->z, a, b); break;
    default: r = bvnum(s, 0); break;
    }
  }
  }
  ag_map_put(&s->memo, &key, sizeof key, (void *)r);
  return r;
}

/* Translates with "@byte" bound to byte. */
static Z3_ast trx(smt *s, const ag_expr *e, Z3_ast thread, Z3_ast byte) {
  Z3_ast saved = s->cur_byte;
  s->cur_byte = byte;
  Z3_ast r = tr(s, e, thread);
  s->cur_byte = saved;
  return r;
}

static Z3_ast trb(smt *s, const ag__bx *b, Z3_ast thread) {
  if (!b)
    return ztrue(s);
  switch (b->k) {
  case BX_CONST: return b->value ? ztrue(s) : zfalse(s);
  case BX_CMP: {
    Z3_ast x = tr(s, b->a, thread), y = tr(s, b->b, thread);
    switch (b->op) {
    case AG_OP_EQ: return Z3_mk_eq(s->z, x, y);
    case AG_OP_NE: return Z3_mk_not(s->z, Z3_mk_eq(s->z, x, y));
    case AG_OP_LT: return Z3_mk_bvult(s->z, x, y);
    case AG_OP_LE: return Z3_mk_bvule(s->z, x, y);
    case AG_OP_GT: return Z3_mk_bvugt(s->z, x, y);
    case AG_OP_GE: return Z3_mk_bvuge(s->z, x, y);
    default: return ztrue(s);
    }
  }
  case BX_AND: return and2(s, trb(s, b->x, thread), trb(s, b->y, thread));
  case BX_OR: return or2(s, trb(s, b->x, thread), trb(s, b->y, thread));
  case BX_NOT: return Z3_mk_not(s->z, trb(s, b->x, thread));
  }
  return ztrue(s);
}

/* ----------------------------------------------------------- membership */
typedef AG_VEC(alt) altvec;

static void push_alt(smt *s, altvec *v, alt a) {
  if (ag_vec_push(v, a))
    ag__ck_oom(s->c);
}

static void alts_of(smt *s, const ag__tag *t, Z3_ast thread, Z3_ast byte, Z3_ast cond,
                    altvec *out, int depth);

static void mark_via(altvec *out, size_t from, const ag__wrec *rec, Z3_ast w, const ag__tag *shr,
                     Z3_ast reader) {
  for (size_t q = from; q < out->n; q++)
    if (!out->v[q].rec) {
      out->v[q].rec = rec;
      out->v[q].writer = w;
      out->v[q].shr = shr;
      out->v[q].reader = reader;
    }
}

/* Footprints: the bytes of a buffer that a write (by any thread its guard
 * admits) or a read (by any thread) may touch, computed by evaluating the
 * address for every thread of the block when it depends on the thread index
 * only. A write whose footprint misses the read's is no member of it. */
static unsigned char *footprint(smt *s, int buf, const ag_expr *addr, int width,
                                const ag__bx *guard) {
  ag__ck *c = s->c;
  int64_t size = c->sbufs.v[buf].size;
  unsigned char *bits = ag_arena_alloc(&c->arena, (size_t)(size + 7) / 8);
  if (!bits)
    return NULL;
  memset(bits, 0, (size_t)(size + 7) / 8); /* arena memory is not zeroed */
  for (int64_t t = 0; t < c->nthreads; t++) {
    int g = ag__beval_tid(guard, t);
    if (g == 0)
      continue;
    int64_t a;
    if (ag__xeval_tid(addr, t, &a))
      return NULL; /* depends on more than the thread index */
    for (int j = 0; j < width; j++) {
      int64_t b = a + j;
      if (b < 0 || b >= size)
        return NULL;
      bits[b / 8] |= (unsigned char)(1u << (b % 8));
    }
  }
  return bits;
}

static unsigned char *rec_footprint(smt *s, int i) {
  if (!s->recdone[i]) {
    const ag__wrec *w = &s->c->wrecs.v[i];
    s->recbits[i] = footprint(s, w->buf, w->addr, w->width, w->guard);
    s->recdone[i] = 1;
  }
  return s->recbits[i];
}

static unsigned char *read_footprint(smt *s, int buf, const ag_expr *addr, int E) {
  struct {
    const void *a;
    intptr_t e;
  } key = {addr, E};
  if (ag_map_has(&s->readbits, &key, sizeof key))
    return ag_map_get(&s->readbits, &key, sizeof key);
  unsigned char *bits = footprint(s, buf, addr, E, NULL);
  ag_map_put(&s->readbits, &key, sizeof key, bits);
  return bits;
}

static int disjoint(const unsigned char *a, const unsigned char *b, int64_t size) {
  for (int64_t i = 0; i < (size + 7) / 8; i++)
    if (a[i] & b[i])
      return 0;
  return 1;
}

/* Steps of the member enumeration (alts_of calls, writes looked at) and
 * members, per obligation. Each level of shared memory multiplies the work by
 * the writes that may reach it: bounded, or a fuzzed kernel spends minutes
 * here. Past the bound, one top member that always exists stands for every
 * member not enumerated (sound: the assertion fails, saying why). */
#define AG_SMT_MAX_ALT_STEPS 4096

static int over_budget(smt *s, altvec *out) {
  if (++s->alt_steps <= AG_SMT_MAX_ALT_STEPS && out->n <= AG_SMT_MAX_ALT_STEPS)
    return 0;
  if (!s->alt_capped) {
    alt a;
    memset(&a, 0, sizeof a);
    s->alt_capped = 1;
    a.cond = Z3_mk_true(s->z);
    a.top = 1;
    a.why = "data reaches here through shared memory in more than 4096 ways (not tracked "
            "further)";
    push_alt(s, out, a);
  }
  return 1;
}

/* Members of the E bytes at addr (addr is in terms of the reader) of the
 * shared buffer read by `t` (a TG_SHR giving buffer, time and the writes
 * that existed). When the read and a write are both E-aligned, one write by
 * one thread covers all E bytes or none, so one writer variable and one
 * coverage test serve the whole element. */
static void alts_read(smt *s, const ag__tag *t, const ag_expr *addr, int E, Z3_ast reader,
                      Z3_ast cond, altvec *out, int depth) {
  ag__ck *c = s->c;
  Z3_ast X = tr(s, addr, reader);
  int64_t rlo = 0, rhi = -1;
  int bounded = ag__xbounds(c, addr, &rlo, &rhi) == 0;
  int64_t xal = ag__xalign(c, addr);
  Z3_ast w = fresh_bv(s, "writer", c->nthreads);
  Z3_ast wrange = Z3_mk_bvult(s->z, w, bvnum(s, c->nthreads));
  for (int i = 0; i < t->nrec && !over_budget(s, out); i++) {
    const ag__wrec *rec = &c->wrecs.v[i];
    if (rec->buf != t->buf)
      continue;
    if (bounded && (rhi + E <= rec->lo || rlo >= rec->hi))
      continue;
    unsigned char *rb = read_footprint(s, t->buf, addr, E), *wb = rb ? rec_footprint(s, i) : NULL;
    if (rb && wb && disjoint(rb, wb, c->sbufs.v[t->buf].size))
      continue;
    Z3_ast alive = ztrue(s);
    int dead = 0;
    for (size_t k = 0; k < c->resets.n && !dead; k++) {
      const ag__reset *e = &c->resets.v[k];
      if (e->buf != t->buf || e->pc <= rec->pc || e->pc >= t->pc)
        continue;
      if (!e->guard && rec->lo >= e->lo && rec->hi <= e->hi) {
        dead = 1;
        break;
      }
      if (rec->hi <= e->lo || rec->lo >= e->hi || (bounded && (rhi + E <= e->lo || rlo >= e->hi)))
        continue; /* the reset does not touch these bytes */
      Z3_ast inside = and2(s, Z3_mk_bvuge(s->z, X, bvnum(s, e->lo)),
                           Z3_mk_bvult(s->z, X, bvnum(s, e->hi)));
      if (e->guard) /* a reset under an undecided uniform condition */
        inside = and2(s, inside, trb(s, e->guard, reader));
      alive = and2(s, alive, Z3_mk_not(s->z, inside));
    }
    if (dead)
      continue;
    Z3_ast A = tr(s, rec->addr, w);
    int aligned = E == 1 || (xal >= E && ag__xalign(c, rec->addr) >= E && rec->width % E == 0);
    int self_ok = rec->done_pc <= t->pc;
    int all_ok = rec->vis_epoch <= t->epoch;
    Z3_ast settled = all_ok ? ztrue(s) : self_ok ? Z3_mk_eq(s->z, w, reader) : zfalse(s);
    /* a bulk copy: settled for the threads of each mbarrier wait on its phase before the read */
    for (const ag__mset *m = rec->mset; m && !all_ok; m = m->next)
      if (m->pc < t->pc) {
        if (!m->guard) {
          all_ok = 1;
          settled = ztrue(s);
        } else
          settled = Z3_mk_or(s->z, 2, (Z3_ast[]){settled, trb(s, m->guard, reader)});
      }
    Z3_ast live = and2(s, and2(s, wrange, trb(s, rec->guard, w)), alive);
    int nb = aligned ? 1 : E; /* byte groups to test */
    for (int j0 = 0; j0 < nb; j0++) {
      Z3_ast Xj = j0 ? Z3_mk_bvadd(s->z, X, bvnum(s, j0)) : X;
      int span = aligned ? E : 1;
      Z3_ast off, hit;
      int W = rec->width;
      if (aligned && (W & (W - 1)) == 0 && ag__xalign(c, rec->addr) >= W) {
        /* a W-aligned write of W bytes: same high bits, offset = low bits */
        hit = Z3_mk_eq(s->z, Z3_mk_bvand(s->z, Xj, bvnum(s, ~(int64_t)(W - 1))), A);
        off = Z3_mk_bvand(s->z, Xj, bvnum(s, W - 1));
      } else {
        off = Z3_mk_bvsub(s->z, Xj, A);
        hit = Z3_mk_bvult(s->z, off, bvnum(s, W));
      }
      Z3_ast cover = and2(s, live, hit);
      Z3_ast base = and2(s, cond, cover);
      if (!all_ok) {
        alt a;
        memset(&a, 0, sizeof a);
        a.cond = and2(s, base, Z3_mk_not(s->z, settled));
        a.top = 1;
        a.why = rec->mbar ? (rec->mlate ? c->mbars.v[rec->mbar - 1].why_late
                                        : c->mbars.v[rec->mbar - 1].why_wait)
                : rec->group >= 0 && rec->done_pc > t->pc
                    ? "the cp.async copy that writes it has not been waited for"
                    : "no barrier between the write and the read";
        a.rec = rec;
        a.writer = w;
        a.shr = t;
        a.reader = reader;
        push_alt(s, out, a);
      }
      Z3_ast ok = and2(s, base, settled);
      if (rec->bcond) { /* a TMA box: the byte holds data only inside the tensor (else zeros) */
        Z3_ast saved = s->cur_byte;
        s->cur_byte = off;
        ok = and2(s, ok, trb(s, rec->bcond, w));
        s->cur_byte = saved;
      }
      size_t before = out->n;
      if (rec->ptag && rec->pgran % span == 0) {
        /* one parametric tag for the whole write */
        alts_of(s, rec->ptag, w, off, ok, out, depth + 1);
      } else {
        for (int j = 0; j < rec->width;) {
          int k = j + 1;
          while (k < rec->width && rec->tags[k] == rec->tags[j])
            k++;
          /* [off, off + span) meets [j, k) */
          Z3_ast meet = and2(s, Z3_mk_bvult(s->z, off, bvnum(s, k)),
                             Z3_mk_bvugt(s->z, Z3_mk_bvadd(s->z, off, bvnum(s, span)),
                                         bvnum(s, j)));
          alts_of(s, rec->tags[j], w, off, and2(s, ok, meet), out, depth + 1);
          j = k;
        }
      }
      mark_via(out, before, rec, w, t, reader);
    }
  }
}

/* A join whose members are the consecutive bytes of one shared read: returns
 * the element's first address and width. */
static int element_group(smt *s, const ag__tag *t, const ag_expr **addr, int *E) {
  if (t->k != TG_JOIN || t->nm < 2 || t->nm > 16)
    return 0;
  const ag__tag *f = t->m[0];
  if (f->k != TG_SHR)
    return 0;
  int64_t offs[16], lo = INT64_MAX;
  const ag_expr *root = NULL;
  for (int i = 0; i < t->nm; i++) {
    const ag__tag *m = t->m[i];
    if (m->k != TG_SHR || m->buf != f->buf || m->pc != f->pc || m->epoch != f->epoch ||
        m->nrec != f->nrec)
      return 0;
    int64_t k;
    const ag_expr *r = ag__xsplit_const(s->c, m->addr, &k);
    if (root && r != root)
      return 0;
    root = r;
    offs[i] = k;
    if (k < lo)
      lo = k;
  }
  unsigned seen = 0;
  for (int i = 0; i < t->nm; i++) {
    int64_t d = offs[i] - lo;
    if (d < 0 || d >= t->nm || (seen & (1u << d)))
      return 0;
    seen |= 1u << d;
  }
  *addr = ag__x(s->c, AG_X_ADD, root, ag__xc(s->c, lo));
  *E = t->nm;
  return 1;
}

static void alts_of(smt *s, const ag__tag *t, Z3_ast thread, Z3_ast byte, Z3_ast cond,
                    altvec *out, int depth) {
  alt a;
  memset(&a, 0, sizeof a);
  if (over_budget(s, out))
    return;
  if (depth > 16) {
    a.cond = cond;
    a.top = 1;
    a.why = "data passed through shared memory more than 16 times (not tracked further)";
    push_alt(s, out, a);
    return;
  }
  switch (t->k) {
  case TG_BOT: return;
  case TG_TOP:
    a.cond = cond;
    a.top = 1;
    a.why = t->why;
    push_alt(s, out, a);
    return;
  case TG_TUP:
    a.cond = cond;
    a.tup = t;
    a.thread = thread;
    a.byte = byte;
    push_alt(s, out, a);
    return;
  case TG_JOIN: {
    const ag_expr *addr;
    int E;
    if (element_group(s, t, &addr, &E)) {
      alts_read(s, t->m[0], addr, E, thread, cond, out, depth);
      return;
    }
    for (int i = 0; i < t->nm; i++)
      alts_of(s, t->m[i], thread, byte, cond, out, depth);
    return;
  }
  case TG_SHR: alts_read(s, t, t->addr, 1, thread, cond, out, depth); return;
  }
}

/* One member of tag t (held by thread `thread`), chosen by a fresh
 * selector. proj >= 0 keeps only that component. */
static member mk_member(smt *s, const ag__tagv *tv, Z3_ast thread) {
  member m;
  memset(&m, 0, sizeof m);
  altvec v = {0};
  alts_of(s, tv->tag, thread, NULL, ztrue(s), &v, 0);
  m.nalts = (int)v.n;
  m.alts = ag__ck_alloc(s->c, (v.n ? v.n : 1) * sizeof *m.alts);
  if (v.n)
    ag__mcpy(m.alts, v.v, v.n * sizeof *m.alts);
  ag_vec_free(&v);
  if (m.nalts == 0) {
    m.cond = zfalse(s);
    m.top = zfalse(s);
    m.arity = bvnum(s, 0);
    for (int k = 0; k < MAXC; k++)
      m.comp[k] = bvnum(s, 0);
    return m;
  }
  if (m.nalts > 1)
    m.sel = fresh_bv(s, "member", m.nalts);
  Z3_ast *pick = ag__ck_alloc(s->c, (size_t)m.nalts * sizeof *pick);
  for (int i = 0; i < m.nalts; i++)
    pick[i] = m.nalts > 1 ? Z3_mk_eq(s->z, m.sel, bvnum(s, i)) : ztrue(s);
  Z3_ast *conds = ag__ck_alloc(s->c, (size_t)m.nalts * sizeof *conds);
  Z3_ast *tops = ag__ck_alloc(s->c, (size_t)m.nalts * sizeof *tops);
  int ntops = 0;
  for (int i = 0; i < m.nalts; i++) {
    conds[i] = and2(s, pick[i], m.alts[i].cond);
    if (m.alts[i].top)
      tops[ntops++] = pick[i];
  }
  m.cond = m.nalts == 1 ? m.alts[0].cond : Z3_mk_or(s->z, (unsigned)m.nalts, conds);
  m.top = ntops ? Z3_mk_or(s->z, (unsigned)ntops, tops) : zfalse(s);
  /* components and arity, by ite over the selector */
  m.ncomp = 0;
  for (int i = 0; i < m.nalts; i++) {
    int n = m.alts[i].tup ? (tv->proj >= 0 ? 1 : m.alts[i].tup->n) : 0;
    if (n > m.ncomp)
      m.ncomp = n > MAXC ? MAXC : n;
  }
  for (int k = 0; k < MAXC; k++)
    m.comp[k] = bvnum(s, 0);
  m.arity = bvnum(s, 0);
  for (int i = m.nalts - 1; i >= 0; i--) {
    const alt *a = &m.alts[i];
    int n = a->tup ? a->tup->n : 0;
    int arity = n;
    Z3_ast comp[MAXC];
    for (int k = 0; k < MAXC; k++)
      comp[k] = bvnum(s, 0);
    if (tv->proj >= 0) {
      arity = tv->proj < n ? 1 : 0;
      if (tv->proj < n)
        comp[0] = trx(s, a->tup->comp[tv->proj], a->thread, a->byte);
    } else {
      for (int k = 0; k < n && k < MAXC; k++)
        comp[k] = trx(s, a->tup->comp[k], a->thread, a->byte);
    }
    if (i == m.nalts - 1) {
      for (int k = 0; k < m.ncomp; k++)
        m.comp[k] = comp[k];
      m.arity = bvnum(s, arity);
    } else {
      for (int k = 0; k < m.ncomp; k++)
        if (comp[k] != m.comp[k]) /* Z3 terms are hash-consed */
          m.comp[k] = Z3_mk_ite(s->z, pick[i], comp[k], m.comp[k]);
      Z3_ast ar = bvnum(s, arity);
      if (ar != m.arity)
        m.arity = Z3_mk_ite(s->z, pick[i], ar, m.arity);
    }
  }
  return m;
}

static Z3_ast differ(smt *s, const member *a, const member *b) {
  Z3_ast d[MAXC + 3];
  int n = 0;
  d[n++] = a->top;
  d[n++] = b->top;
  d[n++] = Z3_mk_not(s->z, Z3_mk_eq(s->z, a->arity, b->arity));
  int nc = a->ncomp > b->ncomp ? a->ncomp : b->ncomp;
  for (int k = 0; k < nc; k++)
    d[n++] = Z3_mk_not(s->z, Z3_mk_eq(s->z, a->comp[k], b->comp[k]));
  return Z3_mk_or(s->z, (unsigned)n, d);
}

/* ------------------------------------------------------------ obligations */
typedef struct enc {
  Z3_ast viol;        /* the violation formula */
  member a, b, a2;    /* a2: the second member for top checks */
  int kind;           /* 0 mismatch (a vs b), 1 top (a vs a2) */
  Z3_ast mismatch, topness;
} enc;

static int is_lit(const ag__tagv *t, ag__tgk k) { return t->literal && t->tag->k == k; }

static Z3_ast topness(smt *s, const ag__tagv *t, member *x1, member *x2) {
  *x1 = mk_member(s, t, s->tid);
  *x2 = mk_member(s, t, s->tid);
  return and2(s, and2(s, x1->cond, x2->cond), or2(s, x1->top, differ(s, x1, x2)));
}

static enc encode(smt *s, const ag__oblig *o) {
  enc e;
  memset(&e, 0, sizeof e);
  s->alt_steps = 0;
  s->alt_capped = 0;
  Z3_ast path = trb(s, o->path, s->tid);
  if (o->k == OB_RACE) {
    /* the reader tid and another thread (the writer) meet a byte:
     * [Ar, Ar + wr) and [Aw, Aw + ww) intersect */
    const ag__rrec *rr = o->rr, *rw = o->rw;
    e.a.sel = fresh_bv(s, "racer", s->c->nthreads);
    Z3_ast w = e.a.sel;
    Z3_ast ar = tr(s, rr->addr, s->tid), aw = tr(s, rw->addr, w);
    Z3_ast meet = or2(s, Z3_mk_bvult(s->z, Z3_mk_bvsub(s->z, aw, ar), bvnum(s, rr->width)),
                      Z3_mk_bvult(s->z, Z3_mk_bvsub(s->z, ar, aw), bvnum(s, rw->width)));
    Z3_ast v[5] = {trb(s, rr->guard, s->tid), trb(s, rw->guard, w),
                   Z3_mk_bvult(s->z, w, bvnum(s, s->c->nthreads)),
                   Z3_mk_not(s->z, Z3_mk_eq(s->z, w, s->tid)), meet};
    e.viol = Z3_mk_and(s->z, 5, v);
    return e;
  }
  if (o->k == OB_INT) {
    e.viol = and2(s, path, Z3_mk_not(s->z, trb(s, o->cond, s->tid)));
    return e;
  }
  const ag__tagv *L = &o->lhs, *R = &o->rhs;
  if (o->k == OB_EQ) {
    if (is_lit(L, TG_BOT) || is_lit(R, TG_BOT)) {
      /* x == bot: no member at all */
      e.a = mk_member(s, is_lit(L, TG_BOT) ? R : L, s->tid);
      e.viol = and2(s, path, e.a.cond);
      e.mismatch = e.viol;
      return e;
    }
    e.a = mk_member(s, L, s->tid);
    e.b = mk_member(s, R, s->tid);
    e.mismatch = and2(s, and2(s, e.a.cond, e.b.cond), differ(s, &e.a, &e.b));
    e.viol = and2(s, path, e.mismatch);
    return e;
  }
  /* != */
  if (is_lit(L, TG_TOP) || is_lit(R, TG_TOP)) {
    e.kind = 1;
    e.topness = topness(s, is_lit(L, TG_TOP) ? R : L, &e.a, &e.a2);
    e.viol = and2(s, path, e.topness);
    return e;
  }
  if (is_lit(L, TG_BOT) || is_lit(R, TG_BOT)) {
    e.viol = zfalse(s); /* non-emptiness: decided by enumeration */
    return e;
  }
  e.a = mk_member(s, L, s->tid);
  e.b = mk_member(s, R, s->tid);
  Z3_ast same = and2(s, and2(s, e.a.cond, e.b.cond),
                     and2(s, and2(s, Z3_mk_not(s->z, e.a.top), Z3_mk_not(s->z, e.b.top)),
                          Z3_mk_not(s->z, differ(s, &e.a, &e.b))));
  member l1, l2, r1, r2;
  Z3_ast tl = topness(s, L, &l1, &l2), trr = topness(s, R, &r1, &r2);
  e.mismatch = same;
  e.topness = or2(s, tl, trr);
  e.a2 = l2;
  e.viol = and2(s, path, or2(s, same, e.topness));
  return e;
}

/* ------------------------------------------------------------ emptiness */
/* Bytes of buffer `buf` that some write alive at the read covers (by any
 * thread); NULL when that cannot be computed by enumeration. */
typedef struct cover_cache {
  int buf, nrec;
  size_t nresets;
  unsigned char *bits;
  int ok;
} cover_cache;
typedef AG_VEC(cover_cache) cover_vec;

static size_t resets_before(ag__ck *c, int64_t pc) {
  size_t n = 0;
  while (n < c->resets.n && c->resets.v[n].pc < pc)
    n++;
  return n;
}

static unsigned char *coverage(smt *s, cover_vec *cache, const ag__tag *t) {
  ag__ck *c = s->c;
  size_t nres = resets_before(c, t->pc);
  for (size_t i = 0; i < cache->n; i++)
    if (cache->v[i].buf == t->buf && cache->v[i].nrec == t->nrec &&
        cache->v[i].nresets == nres)
      return cache->v[i].ok ? cache->v[i].bits : NULL;
  cover_cache cc = {t->buf, t->nrec, nres, NULL, 1};
  int64_t size = c->sbufs.v[t->buf].size;
  cc.bits = ag_calloc((size_t)size + 1, 1);
  if (!cc.bits)
    ag__ck_oom(c);
  for (int i = 0; i < t->nrec && cc.ok; i++) {
    const ag__wrec *w = &c->wrecs.v[i];
    if (w->buf != t->buf)
      continue;
    if (ag__xdepends(w->addr, "bid.x") || ag__xdepends(w->addr, "bid.y") ||
        ag__xdepends(w->addr, "bid.z")) {
      cc.ok = 0;
      break;
    }
    for (int64_t th = 0; th < c->nthreads; th++) {
      int g = ag__beval_tid(w->guard, th);
      if (g == 0)
        continue; /* unknown guards count as writing: no false alarm */
      int64_t a;
      if (ag__xeval_tid(w->addr, th, &a)) {
        cc.ok = 0;
        break;
      }
      for (int j = 0; j < w->width; j++) {
        int64_t b = a + j;
        if (b < 0 || b >= size)
          continue;
        /* killed by a reset between the write and the read? */
        int killed = 0;
        for (size_t k = 0; k < nres && !killed; k++) {
          const ag__reset *e = &c->resets.v[k];
          /* a guarded reset may not happen: it kills nothing here (no
           * false bottom) */
          if (e->buf == t->buf && !e->guard && e->pc > w->pc && b >= e->lo && b < e->hi)
            killed = 1;
        }
        /* a TMA box that may pass the tensor's end: its bytes hold data only
         * where they are inside (2: ask box_byte_holds) */
        if (!killed && (!w->bcond || !cc.bits[b]))
          cc.bits[b] = w->bcond ? 2 : 1;
      }
    }
  }
  if (ag_vec_push(cache, cc)) {
    ag_free(cc.bits);
    ag__ck_oom(c);
  }
  return cc.ok ? cc.bits : NULL;
}

/* 1 when a TMA box that reaches byte a of t's buffer (read by t) holds
 * data there for every size the assumptions allow: its byte condition,
 * at that byte, decided by the solver. */
static int box_byte_holds(smt *s, const ag__tag *t, int64_t a) {
  ag__ck *c = s->c;
  const ag_expr *byte = ag_expr_sym(&c->lc, "@byte");
  if (!byte)
    ag__ck_oom(c);
  size_t nres = resets_before(c, t->pc);
  for (int i = 0; i < t->nrec; i++) {
    const ag__wrec *w = &c->wrecs.v[i];
    int64_t A;
    if (w->buf != t->buf || !w->bcond || ag__xeval_tid(w->addr, 0, &A) || a < A ||
        a >= A + w->width)
      continue;
    int killed = 0;
    for (size_t k = 0; k < nres && !killed; k++) {
      const ag__reset *e = &c->resets.v[k];
      killed = e->buf == t->buf && !e->guard && e->pc > w->pc && a >= e->lo && a < e->hi;
    }
    const ag__bx *saved = c->facts;
    c->facts = NULL; /* the check's facts are not the write's */
    int in = killed ? 0 : ag__smt_decide(c, ag__bsubst(c, w->bcond, byte, ag__xc(c, a - A)));
    c->facts = saved;
    if (in == 1)
      return 1;
  }
  return 0;
}

/* Finds a thread whose read of t reaches no write: returns 1 and sets
 * *thread and *addr, 0 when every thread's byte is covered or when the
 * check does not apply. */
static int empty_read(smt *s, cover_vec *cache, const ag__tag *t, const ag__bx *path,
                      int64_t *thread, int64_t *addr) {
  ag__ck *c = s->c;
  if (t->k == TG_JOIN) {
    /* empty only when every member is */
    int64_t th0 = -1, a0 = 0;
    for (int i = 0; i < t->nm; i++) {
      if (t->m[i]->k != TG_SHR)
        return 0;
      int64_t th, a;
      if (!empty_read(s, cache, t->m[i], path, &th, &a))
        return 0;
      if (th0 < 0) {
        th0 = th;
        a0 = a;
      }
    }
    *thread = th0;
    *addr = a0;
    return th0 >= 0;
  }
  if (t->k != TG_SHR)
    return 0;
  unsigned char *bits = coverage(s, cache, t);
  if (!bits)
    return 0;
  int64_t size = c->sbufs.v[t->buf].size;
  for (int64_t th = 0; th < c->nthreads; th++) {
    if (ag__beval_tid(path, th) == 0)
      continue;
    int64_t a;
    if (ag__xeval_tid(t->addr, th, &a))
      return 0;
    if (a < 0 || a >= size || !bits[a] || (bits[a] == 2 && !box_byte_holds(s, t, a))) {
      *thread = th;
      *addr = a;
      return 1;
    }
  }
  return 0;
}

/* --------------------------------------------------------- reporting */
static char *dupstr(smt *s, const char *p) {
  char *r = ag_strdup(p ? p : "");
  if (!r)
    ag__ck_oom(s->c);
  return r;
}

static int64_t mval(smt *s, Z3_model m, Z3_ast a) {
  Z3_ast out = NULL;
  uint64_t v = 0;
  if (Z3_model_eval(s->z, m, a, true, &out) && out && Z3_get_numeral_uint64(s->z, out, &v))
    return (int64_t)v;
  return 0;
}

static int mtrue(smt *s, Z3_model m, Z3_ast a) {
  Z3_ast out = NULL;
  if (!Z3_model_eval(s->z, m, a, true, &out) || !out)
    return 0;
  return Z3_get_bool_value(s->z, out) == Z3_L_TRUE;
}

static const char *where(smt *s, const ag_tile_node *n, char *buf, size_t len) {
  snprintf(buf, len, "%s:%d:%d", s->c->prog->file ? s->c->prog->file : "<input>",
           n ? n->line : 0, n ? n->col : 0);
  return buf;
}

/* The alternative of a member that model m chooses (NULL: none). */
static const alt *chosen(smt *s, Z3_model m, const member *mb) {
  if (mb->nalts == 1)
    return &mb->alts[0];
  if (mb->nalts > 1) {
    int64_t k = mval(s, m, mb->sel);
    if (k >= 0 && k < mb->nalts)
      return &mb->alts[k];
  }
  return NULL;
}

/* The shared tile a write statement writes to, as "sA[nst, :, :]": its
 * first index kept, the others whole (the stage of a staged buffer); a
 * tile of one mode whole ("s"). */
static void reset_target(const ag_tile_node *at, ag_str *out) {
  const ag_tile_node *t = at && (at->kind == AG_TN_CALL || at->kind == AG_TN_ASSIGN) &&
                                  at->list.n > 0
                              ? at->list.v[0]
                              : NULL;
  if (!t || t->kind != AG_TN_INDEX || !t->a) {
    ag_str_puts(out, "the tile");
    return;
  }
  ag_tile_print(t->a, 0, out);
  if (t->list.n < 2)
    return; /* one mode: the whole tile */
  ag_str_putc(out, '[');
  for (int i = 0; i < t->list.n; i++) {
    if (i)
      ag_str_puts(out, ", :");
    else
      ag_tile_print(t->list.v[0], 0, out);
  }
  ag_str_putc(out, ']');
}

/* When the member chosen in m is data of a write that a later write, after
 * a barrier, puts new data over (a buffer reused without reset(), so both
 * reach the read), the advice to add one; else NULL. */
static char *reuse_hint(smt *s, Z3_model m, const member *mb) {
  const alt *a = chosen(s, m, mb);
  if (!a || !a->rec || !a->shr)
    return NULL;
  ag__ck *c = s->c;
  int64_t X = (int64_t)(uint32_t)mval(s, m, tr(s, a->shr->addr, a->reader));
  for (int j = 0; j < a->shr->nrec; j++) {
    const ag__wrec *n = &c->wrecs.v[j];
    if (n->buf != a->rec->buf || n->pc <= a->rec->pc || n->epoch <= a->rec->epoch ||
        X < n->lo || X >= n->hi)
      continue;
    char w1[256], w2[256];
    ag_str t = AG_STR_INIT;
    ag_str_printf(&t,
                  "shared '%s' byte %lld still holds the data written at %s before a barrier, "
                  "and the write at %s puts new data there: shared memory keeps every write "
                  "until reset(); when a buffer is reused, add reset(",
                  c->sbufs.v[n->buf].name ? c->sbufs.v[n->buf].name : "?", (long long)X,
                  where(s, a->rec->at, w1, sizeof w1), where(s, n->at, w2, sizeof w2));
    reset_target(n->at, &t);
    ag_str_printf(&t, ") after the barrier that ends the old data's use and before the write "
                      "at %s",
                  w2);
    if (t.oom)
      ag__ck_oom(c);
    return ag_str_detach(&t);
  }
  return NULL;
}

/* Appends the reuse advice of the first side that has one to x->reason. */
static void add_reuse_hint(smt *s, Z3_model m, ag_tile_cex *x, const member *const *mbs,
                           int n) {
  for (int i = 0; i < n; i++) {
    if (!mbs[i])
      continue;
    char *h = reuse_hint(s, m, mbs[i]);
    if (!h)
      continue;
    ag_str t = AG_STR_INIT;
    ag_str_printf(&t, "%s; %s", x->reason ? x->reason : "", h);
    ag_free(h);
    if (t.oom)
      ag__ck_oom(s->c);
    ag_free(x->reason);
    x->reason = ag_str_detach(&t);
    return;
  }
}

/* Describes the member chosen in model m. */
static void describe(smt *s, Z3_model m, const member *mb, char **tag, char **element,
                     char **via) {
  ag_str t = AG_STR_INIT, el = AG_STR_INIT, v = AG_STR_INIT;
  const alt *a = chosen(s, m, mb);
  if (!a) {
    ag_str_puts(&t, "bot");
  } else if (a->top) {
    ag_str_printf(&t, "top (%s)", a->why ? a->why : "conflicting data");
  } else {
    ag_str_putc(&t, '(');
    for (int k = 0; k < a->tup->n; k++)
      ag_str_printf(&t, "%s%lld", k ? ", " : "",
                    (long long)mval(s, m, trx(s, a->tup->comp[k], a->thread, a->byte)));
    ag_str_putc(&t, ')');
    if (a->tup->fn) {
      ag_str_printf(&el, "%s[", a->tup->fn->target);
      for (int k = 0; k < a->tup->fn->rank; k++)
        ag_str_printf(&el, "%s%lld", k ? ", " : "",
                      (long long)mval(s, m, trx(s, a->tup->coord[k], a->thread, a->byte)));
      ag_str_putc(&el, ']');
    }
  }
  if (a && a->rec) {
    char w[256];
    const ag__sbuf *sb = &s->c->sbufs.v[a->rec->buf];
    ag_str_printf(&v, "shared '%s' byte %lld, written by thread %lld at %s",
                  sb->name ? sb->name : "?", (long long)mval(s, m, tr(s, a->shr->addr, a->reader)),
                  (long long)mval(s, m, a->writer), where(s, a->rec->at, w, sizeof w));
  }
  if (t.oom || el.oom || v.oom)
    ag__ck_oom(s->c);
  *tag = ag_str_detach(&t);
  if (!*tag)
    *tag = dupstr(s, "bot");
  *element = el.len ? ag_str_detach(&el) : NULL;
  *via = v.len ? ag_str_detach(&v) : NULL;
  ag_str_release(&el);
  ag_str_release(&v);
}

static void min_pos(const ag_tile_node *n, int *line, int *col) {
  if (!n)
    return;
  if (n->line < *line || (n->line == *line && n->col < *col)) {
    *line = n->line;
    *col = n->col;
  }
  min_pos(n->a, line, col);
  min_pos(n->b, line, col);
  min_pos(n->c, line, col);
  for (int i = 0; i < n->list.n; i++)
    min_pos(n->list.v[i], line, col);
  for (int i = 0; i < n->list2.n; i++)
    min_pos(n->list2.v[i], line, col);
}

/* The source text of one side of an assertion's comparison, as written;
 * the canonical form when it spans lines. */
static char *side_text_of(smt *s, const ag_tile_node *stmt, int right) {
  const ag_tile_node *cmp = stmt->a, *n = right ? cmp->b : cmp->a;
  int l = INT_MAX, col = INT_MAX;
  min_pos(n, &l, &col);
  size_t len = 0;
  const char *line = ag_tile_srcline(s->c->prog, cmp->line, &len);
  if (line && l == cmp->line) {
    size_t a = (size_t)(col - 1), b;
    if (!right) {
      b = (size_t)(cmp->col - 1);
    } else {
      b = len;
      if (stmt->b && stmt->b->line == cmp->line) {
        b = (size_t)(stmt->b->col - 1);
        while (b > a && line[b - 1] != ',')
          b--;
        if (b > a)
          b--;
      } else {
        for (size_t i = a; i < len; i++)
          if (line[i] == '#') {
            b = i;
            break;
          }
      }
    }
    while (b > a && (line[b - 1] == ' ' || line[b - 1] == '\t'))
      b--;
    if (a < b && b <= len) {
      char *r = ag_strndup(line + a, b - a);
      if (!r)
        ag__ck_oom(s->c);
      return r;
    }
  }
  ag_str t = AG_STR_INIT;
  ag_tile_print(n, 0, &t);
  if (t.oom)
    ag__ck_oom(s->c);
  if (t.len && t.p[t.len - 1] == '\n')
    t.p[--t.len] = 0;
  char *r = ag_str_detach(&t);
  return r ? r : dupstr(s, "");
}

static ag_tile_cex *new_cex(smt *s, const ag__oblig *o) {
  ag_tile_cex *x = ag_calloc(1, sizeof *x);
  if (!x)
    ag__ck_oom(s->c);
  x->nloops = o->nloops;
  if (o->nloops) {
    x->loops = ag_calloc((size_t)o->nloops, sizeof *x->loops);
    if (!x->loops)
      ag__ck_oom(s->c);
    for (int i = 0; i < o->nloops; i++) {
      x->loops[i].name = dupstr(s, o->loops[i].name);
      x->loops[i].value = o->loops[i].value;
    }
  }
  const ag_tile_node *e = o->at->a;
  (void)e;
  if (o->k == OB_NE && o->why) { /* an implicit obligation (a wgmma operand): no assert */
    x->lhs.expr = dupstr(s, o->why);
    x->rhs.expr = dupstr(s, "top");
  } else if (o->k != OB_INT && o->k != OB_RACE) {
    x->lhs.expr = side_text_of(s, o->at, 0);
    x->rhs.expr = side_text_of(s, o->at, 1);
  }
  return x;
}

/* threadIdx (x, y, z) of a linear thread index, from the block shape */
static void thread_idx(smt *s, int64_t t, int64_t out[3]) {
  const int64_t *d = s->c->tdim;
  out[0] = d[0] > 0 ? t % d[0] : t;
  out[1] = d[0] > 0 && d[1] > 0 ? t / d[0] % d[1] : 0;
  out[2] = d[0] > 0 && d[1] > 0 ? t / (d[0] * d[1]) : 0;
}

static void set_thread(smt *s, ag_tile_cex *x, int64_t t) {
  x->thread = t;
  x->warp = t / 32;
  x->lane = t % 32;
  thread_idx(s, t, x->tidx);
}

static void fill_env(smt *s, ag_tile_cex *x, Z3_model m) {
  set_thread(s, x, mval(s, m, s->tid));
  x->other = -1;
  for (int k = 0; k < 3; k++)
    x->block[k] = mval(s, m, s->bid[k]);
  x->nsizes = s->nsizes;
  if (s->nsizes) {
    x->sizes = ag_calloc((size_t)s->nsizes, sizeof *x->sizes);
    if (!x->sizes)
      ag__ck_oom(s->c);
    for (int i = 0; i < s->nsizes; i++) {
      x->sizes[i].name = dupstr(s, s->c->sizes.v[i]);
      x->sizes[i].value = mval(s, m, s->sizes[i]);
    }
  }
}

/* The iteration of a summarized loop, from the model (the instance's loop
 * variable is an expression of the summary's iteration symbol). */
static void loops_from_model(smt *s, ag_tile_cex *x, const ag__oblig *o, Z3_model m) {
  for (int i = 0; i < o->nloops && i < x->nloops; i++)
    if (o->loops[i].x)
      x->loops[i].value = (int64_t)(uint32_t)mval(s, m, tr(s, o->loops[i].x, s->tid));
}

/* The statement at n as written (from its column to the end of the line). */
static char *stmt_text(smt *s, const ag_tile_node *n) {
  size_t len = 0;
  const char *line = ag_tile_srcline(s->c->prog, n->line, &len);
  size_t skip = (size_t)(n->col > 0 ? n->col - 1 : 0);
  char *r = line && skip < len ? ag_strndup(line + skip, len - skip) : ag_strdup("");
  if (!r)
    ag__ck_oom(s->c);
  return r;
}

/* "thread 12 (threadIdx (12, 0, 0)) reads bytes [240, 256) at kt=0, kk=1" */
static void race_side(smt *s, ag_tile_cex_side *sd, const ag_tile_node *at, const char *verb,
                      int64_t thread, int64_t addr, int width, int buf,
                      const ag__loopvar *loops, int nloops) {
  int64_t ti[3];
  thread_idx(s, thread, ti);
  char w[256];
  ag_str t = AG_STR_INIT, v = AG_STR_INIT;
  ag_str_printf(&t, "thread %lld (threadIdx (%lld, %lld, %lld)) %s bytes [%lld, %lld)",
                (long long)thread, (long long)ti[0], (long long)ti[1], (long long)ti[2], verb,
                (long long)addr, (long long)(addr + width));
  for (int k = 0; k < nloops; k++)
    ag_str_printf(&t, "%s %s=%lld", k ? "," : " at", loops[k].name, (long long)loops[k].value);
  const ag__sbuf *sb = &s->c->sbufs.v[buf];
  ag_str_printf(&v, "shared '%s', the statement at %s", sb->name ? sb->name : "?",
                where(s, at, w, sizeof w));
  if (t.oom || v.oom)
    ag__ck_oom(s->c);
  sd->expr = stmt_text(s, at);
  sd->tag = ag_str_detach(&t);
  sd->via = ag_str_detach(&v);
  if (!sd->tag || !sd->via)
    ag__ck_oom(s->c);
}

/* A race: the earlier access's thread (tid), the later one's, the byte. */
static ag_tile_cex *race_cex(smt *s, const ag__oblig *o, const enc *e, Z3_model m,
                             ag_tile_cex *x) {
  const ag__rrec *rr = o->rr, *rw = o->rw;
  int64_t w = mval(s, m, e->a.sel);
  int64_t ar = (int64_t)(uint32_t)mval(s, m, tr(s, rr->addr, s->tid));
  int64_t aw = (int64_t)(uint32_t)mval(s, m, tr(s, rw->addr, e->a.sel));
  int64_t byte = ar > aw ? ar : aw;
  x->other = w;
  thread_idx(s, w, x->other_tidx);
  race_side(s, &x->lhs, rr->at, rr->write ? "writes" : "reads", x->thread, ar, rr->width,
            rr->buf, rr->loops, rr->nloops);
  race_side(s, &x->rhs, rw->at, rw->write ? "writes" : "reads", w, aw, rw->width, rw->buf,
            o->loops, o->nloops);
  char buf[1200], wr[256], rd[256];
  const ag__sbuf *sb = &s->c->sbufs.v[rw->buf];
  const char *name = sb->name ? sb->name : "?";
  where(s, rw->at, wr, sizeof wr);
  where(s, rr->at, rd, sizeof rd);
  /* a bulk copy (an mbarrier's transactions): the fix is an mbarrier wait */
  const ag__wrec *bulk = rr->write && rr->wrec && s->c->wrecs.v[rr->wrec - 1].mbar
                             ? &s->c->wrecs.v[rr->wrec - 1]
                         : rw->write && rw->wrec ? &s->c->wrecs.v[rw->wrec - 1]
                                                 : NULL;
  const char *bar = bulk && bulk->mbar ? s->c->mbars.v[bulk->mbar - 1].name : NULL;
  /* a cp.async an mbarrier tracks (cp_async_mbar_arrive), or a bulk copy */
  const char *copy = bulk && bulk->group >= 0 ? "cp.async" : "bulk copy";
  if (bar && !rr->write)
    snprintf(buf, sizeof buf,
             "write-after-read race: thread %lld's %s writes shared '%s' byte %lld at %s "
             "while thread %lld may still be reading it at %s (no mbarrier orders the read "
             "before the copy); make the copying thread mbar_wait, before the copy, on an "
             "mbarrier every reader arrives on after its last read of the stage (an 'empty' "
             "barrier)",
             (long long)w, copy, name, (long long)byte, wr, (long long)x->thread, rd);
  else if (bar && !rw->write)
    snprintf(buf, sizeof buf,
             "read-after-write race: thread %lld reads shared '%s' byte %lld at %s, which "
             "thread %lld's %s writes at %s, before a wait on the phase of mbarrier '%s' "
             "that the copy completes has returned in the reading thread; mbar_wait on that "
             "phase (its parity) before the read, and let the phase expect exactly the bytes "
             "copied (mbar_expect_tx)",
             (long long)w, name, (long long)byte, wr, (long long)x->thread, copy, rd, bar);
  else if (!rr->write)
    snprintf(buf, sizeof buf,
             "write-after-read race: thread %lld writes shared '%s' byte %lld at %s while "
             "thread %lld may still be reading it at %s (no barrier between the read and the "
             "write); add syncthreads() after the last read of these bytes and before the write",
             (long long)w, name, (long long)byte, wr, (long long)x->thread, rd);
  else if (rw->write)
    snprintf(buf, sizeof buf,
             "write-after-write race: thread %lld writes shared '%s' byte %lld at %s and thread "
             "%lld writes it at %s with no barrier between the writes, so which value the byte "
             "keeps depends on their order; let one thread write each byte, or add "
             "syncthreads() between the two writes",
             (long long)w, name, (long long)byte, wr, (long long)x->thread, rd);
  else
    snprintf(buf, sizeof buf,
             "read-after-write race: thread %lld reads shared '%s' byte %lld at %s, which thread "
             "%lld writes at %s with no barrier between the write and the read (threads of a "
             "thread-dependent 'if' run both branches at once), so the read may see the old "
             "value; add syncthreads() between the write and the read",
             (long long)w, name, (long long)byte, wr, (long long)x->thread, rd);
  x->reason = dupstr(s, buf);
  return x;
}

static ag_tile_cex *cex_from_model(smt *s, const ag__oblig *o, const enc *e, Z3_model m) {
  ag_tile_cex *x = new_cex(s, o);
  fill_env(s, x, m);
  loops_from_model(s, x, o, m);
  if (o->wv && o->wk) {
    /* which of the thread's accumulator values and which k read the element */
    char buf[400];
    snprintf(buf, sizeof buf, "%s (accumulator value %lld, k = %lld)", o->why ? o->why : "",
             (long long)mval(s, m, tr(s, o->wv, s->tid)),
             (long long)mval(s, m, tr(s, o->wk, s->tid)));
    ag_free(x->lhs.expr);
    x->lhs.expr = dupstr(s, buf);
  }
  if (o->k == OB_INT && o->bidx) {
    /* an access out of bounds: which index, its value, the extent */
    char buf[512];
    ag_str ix = AG_STR_INIT;
    if (!ag_expr_is_const(o->bidx, NULL)) {
      ag_str_puts(&ix, " = ");
      ag__xprint(o->bidx, &ix);
    }
    snprintf(buf, sizeof buf, "out of bounds: index %d of '%s' is %lld%s, outside [0, %lld)",
             o->bmode, o->bname, (long long)(int32_t)mval(s, m, tr(s, o->bidx, s->tid)),
             ag_str_cstr(&ix), (long long)mval(s, m, tr(s, o->bext, s->tid)));
    ag_str_release(&ix);
    x->reason = dupstr(s, buf);
    return x;
  }
  if (o->k == OB_INT && o->why) {
    x->reason = dupstr(s, o->why);
    return x;
  }
  if (o->k == OB_INT) {
    x->reason = dupstr(s, "the condition is false");
    return x;
  }
  if (o->k == OB_RACE)
    return race_cex(s, o, e, m, x);
  if (e->kind == 1 || (e->topness && mtrue(s, m, e->topness) && !(e->mismatch && mtrue(s, m, e->mismatch)))) {
    /* a side is top: an unsettled member, or two members that disagree */
    describe(s, m, &e->a, &x->lhs.tag, &x->lhs.element, &x->lhs.via);
    int self_top = strncmp(x->lhs.tag, "top", 3) == 0;
    if (!self_top) {
      char *el2 = NULL;
      describe(s, m, &e->a2, &x->lhs.tag_other, &el2, &x->lhs.via_other);
      x->lhs.element_other = el2;
    }
    if (e->kind == 1 && o->rhs.literal)
      x->rhs.tag = dupstr(s, "top");
    else if (!x->rhs.tag)
      x->rhs.tag = dupstr(s, "");
    x->reason = dupstr(s, self_top ? "the left side is top: its data is not settled when it is "
                                     "read"
                                   : "the left side is top: two writes that reach it carry "
                                     "different tags");
    if (!self_top) {
      const member *mbs[2] = {&e->a, &e->a2};
      add_reuse_hint(s, m, x, mbs, 2);
    }
    return x;
  }
  describe(s, m, &e->a, &x->lhs.tag, &x->lhs.element, &x->lhs.via);
  if (e->b.nalts || !o->rhs.literal || o->rhs.tag->k != TG_BOT)
    describe(s, m, &e->b, &x->rhs.tag, &x->rhs.element, &x->rhs.via);
  else
    x->rhs.tag = dupstr(s, "bot");
  if (o->k == OB_NE)
    x->reason = dupstr(s, "the two sides carry the same tag");
  else if (strncmp(x->lhs.tag, "top", 3) == 0)
    x->reason = dupstr(s, "the left side is top: its data is not settled when it is read, or "
                          "two writes disagree");
  else if (strncmp(x->rhs.tag, "top", 3) == 0)
    x->reason = dupstr(s, "the right side is top: its data is not settled when it is read, or "
                          "two writes disagree");
  else if (o->rhs.literal && o->rhs.tag->k == TG_BOT)
    x->reason = dupstr(s, "the left side holds data, not bot");
  else
    x->reason = dupstr(s, "the tags differ");
  const member *mbs[2] = {&e->a, &e->b};
  add_reuse_hint(s, m, x, mbs, 2);
  return x;
}

/* ----------------------------------------------------------------- driver */
/* Asserts what every query assumes: the thread index below the block size,
 * the program's assumptions (and @grid bounds), positive problem sizes, and
 * for tensors addressed through a linear view, byte sizes that do not wrap.
 * (Block indices and sizes are narrow variables: below 2^16 and 2^24.) */
static void global_constraints(smt *s, Z3_solver sol, Z3_ast q) {
  ag__ck *c = s->c;
  (void)q;
  Z3_solver_assert(s->z, sol, Z3_mk_bvult(s->z, s->tid, bvnum(s, c->nthreads)));
  for (size_t i = 0; i < c->assumes.n; i++)
    Z3_solver_assert(s->z, sol, trb(s, c->assumes.v[i], s->tid));
  for (int i = 0; i < s->nsizes; i++)
    Z3_solver_assert(s->z, sol, Z3_mk_bvuge(s->z, s->sizes[i], bvnum(s, 1)));
  for (size_t p = 0; p < c->params.n; p++) {
    const ag__param *pm = &c->params.v[p];
    if (!pm->is_tensor || !pm->linear_used)
      continue;
    Z3_ast acc = bvnum(s, ag__dt_size(pm->dt));
    for (int d = 0; d < pm->rank; d++) {
      Z3_ast dim = tr(s, pm->dims[d], s->tid);
      Z3_solver_assert(s->z, sol, Z3_mk_bvmul_no_overflow(s->z, acc, dim, false));
      acc = Z3_mk_bvmul(s->z, acc, dim);
      Z3_solver_assert(s->z, sol, Z3_mk_bvult(s->z, acc, bvnum(s, (int64_t)1 << 31)));
    }
  }
}

/* One solver serves every query of a kernel: reset between queries (it
 * stays in its non-incremental bit-blasting mode, and its tactic is built
 * once). */
static Z3_solver new_solver(smt *s, Z3_ast q) {
  Z3_solver sol = s->use_bv ? s->solver_bv : s->solver;
  if (sol) {
    Z3_solver_reset(s->z, sol);
  } else if (s->use_bv) {
    /* a summarized iteration's symbolic counter: Z3's QF_BV solver, whose
     * preprocessing the lean pipeline lacks, is 2-3x faster on these
     * (gemm.tile --set K=8192: 0.53 s against 0.93 s) */
    sol = Z3_mk_solver_for_logic(s->z, Z3_mk_string_symbol(s->z, "QF_BV"));
    s->solver_bv = sol;
    Z3_solver_inc_ref(s->z, sol);
  } else {
    /* a lean bit-blasting pipeline: on these queries (bit fields, shifts,
     * masks, few adders) it is about 1.5x faster than Z3's default QF_BV
     * solver, which tries more preprocessing */
    static const char *const steps[] = {"simplify", "solve-eqs", "elim-uncnstr", "bit-blast",
                                        "sat"};
    Z3_tactic t = NULL;
    for (int i = (int)(sizeof steps / sizeof steps[0]) - 1; i >= 0; i--) {
      Z3_tactic u = Z3_mk_tactic(s->z, steps[i]);
      Z3_tactic_inc_ref(s->z, u);
      if (t) {
        Z3_tactic both = Z3_tactic_and_then(s->z, u, t);
        Z3_tactic_inc_ref(s->z, both);
        Z3_tactic_dec_ref(s->z, u);
        Z3_tactic_dec_ref(s->z, t);
        t = both;
      } else {
        t = u;
      }
    }
    sol = Z3_mk_solver_from_tactic(s->z, t);
    Z3_tactic_dec_ref(s->z, t);
    s->solver = sol;
    Z3_solver_inc_ref(s->z, sol); /* the kernel's reference */
  }
  Z3_solver_inc_ref(s->z, sol);   /* the caller's, dropped after the query */
  Z3_params p = Z3_mk_params(s->z);
  Z3_params_inc_ref(s->z, p);
  uint64_t rl = s->c->opts->rlimit;
  Z3_params_set_uint(s->z, p, Z3_mk_string_symbol(s->z, "rlimit"),
                     (unsigned)(rl > UINT_MAX ? UINT_MAX : rl));
  Z3_params_set_uint(s->z, p, Z3_mk_string_symbol(s->z, "random_seed"), 0);
  /* the rlimit does not bound every tactic: bit-blasting hundreds of symbolic
   * products grew past 3 GB in a minute at rlimit 300000 (found by fuzzing); the
   * examples need a small part of this */
  Z3_params_set_uint(s->z, p, Z3_mk_string_symbol(s->z, "max_memory"), AG_SMT_MAX_MEMORY_MIB);
  Z3_solver_set_params(s->z, sol, p);
  Z3_params_dec_ref(s->z, p);
  global_constraints(s, sol, q);
  return sol;
}

/* The smallest value of size i in [lo, its value in *m] for which viol
 * stays satisfiable, by binary search (the first probe at lo itself), with
 * the sizes before i fixed at their values in *m when `fix`, and the block
 * indices within *m's. *m becomes the last satisfying model (the replaced
 * one released). */
static int64_t shrink_size(smt *s, Z3_ast viol, Z3_model *m, int i, int64_t lo, int fix) {
  int64_t bcap[3];
  for (int k = 0; k < 3; k++)
    bcap[k] = mval(s, *m, s->bid[k]);
  int64_t hi = mval(s, *m, s->sizes[i]);
  for (int first = 1; lo < hi && !s->failed; first = 0) {
    int64_t mid = first ? lo : lo + (hi - lo) / 2;
    Z3_solver sol = new_solver(s, viol);
    Z3_solver_assert(s->z, sol, viol);
    for (int k = 0; k < 3; k++)
      Z3_solver_assert(s->z, sol, Z3_mk_bvule(s->z, s->bid[k], bvnum(s, bcap[k])));
    for (int j = 0; fix && j < i; j++)
      Z3_solver_assert(s->z, sol, Z3_mk_eq(s->z, s->sizes[j], bvnum(s, mval(s, *m, s->sizes[j]))));
    Z3_solver_assert(s->z, sol, Z3_mk_bvule(s->z, s->sizes[i], bvnum(s, mid)));
    Z3_lbool r = Z3_L_UNDEF;
    Z3CALL(s, r = Z3_solver_check(s->z, sol));
    s->r->queries++;
    if (r == Z3_L_TRUE) {
      Z3_model m2 = Z3_solver_get_model(s->z, sol);
      Z3_model_inc_ref(s->z, m2);
      Z3_model_dec_ref(s->z, *m);
      *m = m2;
      hi = mval(s, *m, s->sizes[i]);
      for (int k = 0; k < 3; k++)
        bcap[k] = mval(s, *m, s->bid[k]);
    } else {
      lo = mid + 1; /* unsat, or the solver gave up: keep what we have */
    }
    Z3_solver_dec_ref(s->z, sol);
  }
  return hi;
}

/* The smallest value of size i that the assumptions allow (computed once
 * per kernel, below its value in m, a model of them): no violation has a
 * smaller one. */
static int64_t size_floor(smt *s, int i, Z3_model m) {
  if (!s->floor[i]) {
    Z3_model_inc_ref(s->z, m);
    s->floor[i] = shrink_size(s, ztrue(s), &m, i, 1, 0);
    Z3_model_dec_ref(s->z, m);
  }
  return s->floor[i];
}

/* The smallest problem sizes of a violation: one size at a time, in
 * parameter order, each earlier size fixed at its minimum (shrink_size,
 * from the size's floor under the assumptions, so a violation that does
 * not depend on a size costs one query for it). Returns the model with those
 * sizes (m itself when nothing is smaller; m is released when replaced). */
static Z3_model minimize_sizes(smt *s, Z3_ast viol, Z3_model m) {
  for (int i = 0; i < s->nsizes && !s->failed; i++)
    shrink_size(s, viol, &m, i, size_floor(s, i, m), 1);
  return m;
}

/* A counterexample people can read: the same violation with small problem
 * sizes and block indices, when one exists (NULL: keep the first model);
 * with `minimal`, the smallest sizes (minimize_sizes). */
static Z3_model small_model(smt *s, Z3_ast viol, int minimal) {
  static const int64_t caps[] = {64, 1024, 65536};
  for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
    Z3_solver sol = new_solver(s, viol);
    Z3_solver_assert(s->z, sol, viol);
    for (int k = 0; k < 3; k++)
      Z3_solver_assert(s->z, sol, Z3_mk_bvule(s->z, s->bid[k], bvnum(s, caps[i] / 8)));
    for (int k = 0; k < s->nsizes; k++)
      Z3_solver_assert(s->z, sol, Z3_mk_bvule(s->z, s->sizes[k], bvnum(s, caps[i] * 4)));
    Z3_lbool r = Z3_L_UNDEF;
    Z3CALL(s, r = Z3_solver_check(s->z, sol));
    s->r->queries++;
    Z3_model m = NULL;
    if (r == Z3_L_TRUE) {
      m = Z3_solver_get_model(s->z, sol);
      Z3_model_inc_ref(s->z, m);
    }
    Z3_solver_dec_ref(s->z, sol);
    if (m)
      return minimal && s->nsizes ? minimize_sizes(s, viol, m) : m;
  }
  return NULL;
}

static ag_tile_assert_result *result_for(smt *s, const ag__oblig *o) {
  return &s->r->asserts[s->r->nasserts - (int)s->c->asserts.n + o->stmt];
}

/* Records a violating instance: the first counterexample of an assertion,
 * and under --all every further one (in `more`). */
static void set_cex(smt *s, const ag__oblig *o, ag_tile_cex *x) {
  ag_tile_assert_result *ar = result_for(s, o);
  ar->status = AG_TILE_VIOLATED;
  ar->violations++;
  if (!ar->cex) {
    ar->cex = x;
    return;
  }
  if (!s->c->opts->all) {
    ag__tile_cex_free(x);
    return;
  }
  ag_tile_cex **nm = ag_realloc(ar->more, (size_t)(ar->nmore + 1) * sizeof *nm);
  if (!nm) {
    ag__tile_cex_free(x);
    ag__ck_oom(s->c);
  }
  ar->more = nm;
  ar->more[ar->nmore++] = x;
}

/* Static shortcuts: 1 proved, 0 unknown. */
static int trivially_holds(const ag__oblig *o) {
  if (o->k == OB_INT) {
    int v;
    return ag__bis_const(o->cond, &v) && v;
  }
  if (o->k != OB_EQ)
    return 0;
  const ag__tag *a = o->lhs.tag, *b = o->rhs.tag;
  if (a->k != TG_TUP || b->k != TG_TUP || o->lhs.proj != o->rhs.proj)
    return 0;
  if (o->lhs.proj >= 0)
    return o->lhs.proj < a->n && o->lhs.proj < b->n && a->comp[o->lhs.proj] == b->comp[o->lhs.proj];
  if (a->n != b->n)
    return 0;
  for (int i = 0; i < a->n; i++)
    if (a->comp[i] != b->comp[i])
      return 0;
  return 1;
}

/* Statically bottom sides (no member at all): a violation of == . */
static int static_bot(const ag__tag *t) { return t->k == TG_BOT; }

static void report_bot(smt *s, const ag__oblig *o, int left, int64_t thread, int64_t addr,
                       const ag__tag *shr) {
  ag_tile_cex *x = new_cex(s, o);
  if (!s->min_defaults) {
    /* the smallest sizes the assumptions allow */
    s->min_defaults = 1;
    Z3_model m = small_model(s, ztrue(s), 1);
    if (m) {
      if (s->defaults)
        Z3_model_dec_ref(s->z, s->defaults);
      s->defaults = m;
    }
  }
  if (s->defaults)
    fill_env(s, x, s->defaults);
  else
    x->other = -1;
  set_thread(s, x, thread < 0 ? 0 : thread);
  int symbolic = 0;
  for (int i = 0; i < o->nloops; i++)
    symbolic |= o->loops[i].x != NULL;
  if (symbolic) {
    /* a summarized iteration: sizes and iteration that reach this read */
    Z3_solver sol = new_solver(s, NULL);
    Z3_solver_assert(s->z, sol, trb(s, o->path, s->tid));
    Z3_solver_assert(s->z, sol, Z3_mk_eq(s->z, s->tid, bvnum(s, thread < 0 ? 0 : thread)));
    Z3_lbool r = Z3_L_UNDEF;
    Z3CALL(s, r = Z3_solver_check(s->z, sol));
    s->r->queries++;
    if (r == Z3_L_TRUE) {
      Z3_model m = Z3_solver_get_model(s->z, sol);
      Z3_model_inc_ref(s->z, m);
      fill_env(s, x, m);
      loops_from_model(s, x, o, m);
      Z3_model_dec_ref(s->z, m);
    }
    Z3_solver_dec_ref(s->z, sol);
  }
  ag_tile_cex_side *sd = left ? &x->lhs : &x->rhs, *other = left ? &x->rhs : &x->lhs;
  sd->tag = dupstr(s, "bot");
  if (shr) {
    char w[256], buf[400];
    snprintf(buf, sizeof buf, "shared '%s' byte %lld, which no write reaches (read at %s)",
             s->c->sbufs.v[shr->buf].name ? s->c->sbufs.v[shr->buf].name : "?", (long long)addr,
             where(s, shr->at, w, sizeof w));
    sd->via = dupstr(s, buf);
  }
  other->tag = dupstr(s, "-");
  x->reason = dupstr(s, left ? "the left side is bot: no data reaches it"
                             : "the right side is bot: no data reaches it");
  set_cex(s, o, x);
}

/* A Z3 context with the kernel's variables: the thread, the blocks, the
 * problem sizes. */
static int smt_open(smt *s, ag__ck *c) {
  memset(s, 0, sizeof *s);
  s->c = c;
  Z3_config cfg = Z3_mk_config();
  Z3_set_param_value(cfg, "model", "true");
  s->z = Z3_mk_context(cfg);
  Z3_del_config(cfg);
  if (!s->z)
    return AG_ESOLVER;
  Z3_set_error_handler(s->z, NULL);
  ag_map_init(&s->memo);
  ag_map_init(&s->readbits);
  s->bv = Z3_mk_bv_sort(s->z, BITS);
  s->tid = narrow_var(s, "tid", bits_for(c->nthreads));
  static const char *bn[3] = {"bid.x", "bid.y", "bid.z"};
  for (int k = 0; k < 3; k++)
    s->bid[k] = narrow_var(s, bn[k], 16);
  s->nsizes = (int)c->sizes.n;
  s->sizes = ag__ck_alloc(c, (size_t)(s->nsizes ? s->nsizes : 1) * sizeof *s->sizes);
  for (int i = 0; i < s->nsizes; i++)
    s->sizes[i] = narrow_var(s, c->sizes.v[i], 24);
  zcheck_err(s, "creating the context");
  return 0;
}

static void smt_close(smt *s) {
  ag_map_release(&s->memo);
  ag_map_release(&s->readbits);
  if (s->solver)
    Z3_solver_dec_ref(s->z, s->solver);
  if (s->solver_bv)
    Z3_solver_dec_ref(s->z, s->solver_bv);
  if (s->defaults)
    Z3_model_dec_ref(s->z, s->defaults);
  Z3_del_context(s->z);
}

/* Conditions of the interpreter (loop.c, interp.c's 'if'): one context per
 * kernel, made at the first question; each question is two small queries
 * (b can be false? b can be true?) under the assumptions so far. */
int ag__smt_decide(ag__ck *c, const ag__bx *b) {
  smt *s = c->decider;
  if (!s) {
    s = ag_calloc(1, sizeof *s);
    if (!s)
      ag__ck_oom(c);
    if (smt_open(s, c)) {
      ag_free(s);
      return -1;
    }
    c->decider = s;
  }
  if (s->failed)
    return -1;
  Z3_ast q = trb(s, b, s->tid);
  Z3_ast f = trb(s, c->facts, s->tid);
  int can[2];
  for (int want = 0; want < 2; want++) {
    Z3_solver sol = new_solver(s, NULL);
    Z3_solver_assert(s->z, sol, f);
    Z3_solver_assert(s->z, sol, want ? q : Z3_mk_not(s->z, q));
    Z3_lbool r = Z3_L_UNDEF;
    Z3CALL(s, r = Z3_solver_check(s->z, sol));
    Z3_solver_dec_ref(s->z, sol);
    if (r == Z3_L_UNDEF || s->failed)
      return -1;
    can[want] = r == Z3_L_TRUE;
  }
  if (!can[0])
    return 1; /* never false (or nothing satisfies the facts) */
  if (!can[1])
    return 0;
  return -1;
}

void ag__smt_decider_free(ag__ck *c) {
  if (!c->decider)
    return;
  smt_close(c->decider);
  ag_free(c->decider);
  c->decider = NULL;
}

/* Does tag t reach data a summarized loop forgot (a top member standing for
 * earlier iterations)? Then its emptiness is not known. */
static int touches_havoc(ag__ck *c, const ag__tag *t) {
  switch (t->k) {
  case TG_TOP: return t->why == ag__havoc_why;
  case TG_JOIN:
    for (int i = 0; i < t->nm; i++)
      if (touches_havoc(c, t->m[i]))
        return 1;
    return 0;
  case TG_SHR:
    for (int i = 0; i < t->nrec; i++)
      if (c->wrecs.v[i].buf == t->buf && c->wrecs.v[i].ptag &&
          c->wrecs.v[i].ptag->k == TG_TOP && c->wrecs.v[i].ptag->why == ag__havoc_why)
        return 1;
    return 0;
  default: return 0;
  }
}

int ag__smt_check(ag__ck *c, ag_tile_report *r, int kernel_index) {
  (void)kernel_index;
  smt s;
  int orc = smt_open(&s, c);
  if (orc)
    return orc;
  s.r = r;
  s.recbits = ag__ck_alloc(c, (c->wrecs.n ? c->wrecs.n : 1) * sizeof *s.recbits);
  s.recdone = ag__ck_alloc(c, c->wrecs.n ? c->wrecs.n : 1);
  s.floor = ag__ck_alloc(c, (size_t)(s.nsizes ? s.nsizes : 1) * sizeof *s.floor);
  memset(s.floor, 0, (size_t)(s.nsizes ? s.nsizes : 1) * sizeof *s.floor);
  {
    /* the assumptions and bounds must be satisfiable, or every query would
     * be vacuously proved */
    Z3_solver sol = new_solver(&s, NULL);
    Z3_lbool res = Z3_L_UNDEF;
    Z3CALL(&s, res = Z3_solver_check(s.z, sol));
    r->queries++;
    if (res == Z3_L_TRUE) {
      /* sizes and a block for counterexamples that need no solver (a read
       * no write reaches, found by enumerating threads) */
      Z3_model m = Z3_solver_get_model(s.z, sol);
      Z3_model_inc_ref(s.z, m);
      s.defaults = m;
    }
    Z3_solver_dec_ref(s.z, sol);
    if (res == Z3_L_FALSE) {
      const ag_tile_node *at = c->kernel;
      size_t ll = 0;
      const char *src = ag_tile_srcline(c->prog, at->line, &ll);
      ag_diags_add(c->diags, AG_SEV_ERROR, c->prog->file, at->line, at->col, src, ll,
                   "the assumptions of kernel '%s' contradict each other (or the bounds on "
                   "problem sizes); nothing could be checked",
                   at->name);
      smt_close(&s);
      return AG_EPARSE;
    }
  }

  cover_vec cache = {0};
  int rc = 0;
  int batch = c->opts->batch > 0 ? c->opts->batch : 32;
  /* per assertion statement, in source order */
  for (size_t st = 0; st < c->asserts.n && !s.failed; st++) {
    AG_VEC(size_t) todo = {0};
    for (size_t i = 0; i < c->obligs.n; i++) {
      const ag__oblig *o = &c->obligs.v[i];
      if ((size_t)o->stmt != st)
        continue;
      if (trivially_holds(o))
        continue;
      if (result_for(&s, o)->status == AG_TILE_VIOLATED && !c->opts->all)
        break;
      /* bottom sides */
      if (o->k == OB_EQ || (o->k == OB_NE && (is_lit(&o->lhs, TG_BOT) || is_lit(&o->rhs, TG_BOT)))) {
        int want_nonempty = o->k == OB_EQ ? 1 : 0;
        const ag__tagv *sides[2] = {&o->lhs, &o->rhs};
        int reported = 0;
        for (int sd = 0; sd < 2 && !reported; sd++) {
          const ag__tagv *tv = sides[sd];
          if (tv->literal)
            continue;
          if (o->k == OB_EQ && (is_lit(&o->lhs, TG_BOT) || is_lit(&o->rhs, TG_BOT)))
            continue; /* x == bot: emptiness is what is asked */
          if (static_bot(tv->tag) && (want_nonempty || o->k == OB_NE)) {
            report_bot(&s, o, sd == 0, 0, 0, NULL);
            reported = 1;
            break;
          }
          int64_t th, addr;
          if ((want_nonempty || o->k == OB_NE) && empty_read(&s, &cache, tv->tag, o->path, &th, &addr)) {
            const ag__tag *shr = tv->tag->k == TG_SHR ? tv->tag : tv->tag->m[0];
            report_bot(&s, o, sd == 0, th, addr, shr);
            reported = 1;
          }
        }
        if (reported)
          continue;
        if (o->k == OB_NE) {
          const ag__tag *side = is_lit(&o->lhs, TG_BOT) ? o->rhs.tag : o->lhs.tag;
          ag_tile_assert_result *ar = result_for(&s, o);
          if (touches_havoc(c, side) && ar->status == AG_TILE_PROVED) {
            /* non-empty only through a summarized loop's forgotten
             * iterations: not proved */
            ar->status = AG_TILE_UNKNOWN;
            if (!ar->detail)
              ar->detail = dupstr(&s, "not decided: the data may come from iterations of a "
                                      "summarized loop that the summary does not keep (check "
                                      "with --unroll)");
          }
          continue; /* != bot holds once non-empty */
        }
      }
      if (ag_vec_push(&todo, i)) {
        ag_vec_free(&todo);
        rc = AG_ENOMEM;
        goto out;
      }
    }
    for (size_t b0 = 0; b0 < todo.n && !s.failed; b0 += (size_t)batch) {
      const ag__oblig *first = &c->obligs.v[todo.v[b0]];
      if (result_for(&s, first)->status == AG_TILE_VIOLATED && !c->opts->all)
        break;
      size_t nb = todo.n - b0 < (size_t)batch ? todo.n - b0 : (size_t)batch;
      enc *es = ag__ck_alloc(c, nb * sizeof *es);
      Z3_ast *vs = ag__ck_alloc(c, nb * sizeof *vs);
      for (size_t k = 0; k < nb; k++) {
        es[k] = encode(&s, &c->obligs.v[todo.v[b0 + k]]);
        vs[k] = es[k].viol;
      }
      s.use_bv = 0;
      for (size_t k = 0; k < nb; k++) {
        const ag__oblig *o = &c->obligs.v[todo.v[b0 + k]];
        for (int l = 0; l < o->nloops; l++)
          s.use_bv |= o->loops[l].x != NULL;
      }
      /* under --all, every violating instance: the batch is asked again
       * without the instances found until nothing more is violated */
      unsigned char *done = ag__ck_alloc(c, nb);
      memset(done, 0, nb);
      Z3_ast *rest = ag__ck_alloc(c, nb * sizeof *rest);
      for (int more = 1; more && !s.failed;) {
        unsigned nr = 0;
        for (size_t k = 0; k < nb; k++)
          if (!done[k])
            rest[nr++] = vs[k];
        if (!nr)
          break;
        more = 0;
        Z3_ast q = Z3_mk_or(s.z, nr, rest);
        Z3_solver sol = new_solver(&s, q);
        Z3CALL(&s, Z3_solver_assert(s.z, sol, q));
        const char *dump = getenv("ARGUS_SMT_DUMP");
        if (dump && *dump) {
          /* debugging aid: each query as SMT-LIB2 */
          char path[512];
          snprintf(path, sizeof path, "%s/q%03lld.smt2", dump, (long long)r->queries);
          FILE *f = fopen(path, "w");
          if (f) {
            fputs(Z3_solver_to_string(s.z, sol), f);
            fclose(f);
          }
        }
        Z3_lbool res = Z3_L_UNDEF;
        Z3CALL(&s, res = Z3_solver_check(s.z, sol));
        r->queries++;
        if (s.failed) {
          Z3_solver_dec_ref(s.z, sol);
          break;
        }
        if (res == Z3_L_TRUE) {
          Z3_model m = Z3_solver_get_model(s.z, sol);
          Z3_model_inc_ref(s.z, m);
          for (size_t k = 0; k < nb; k++) {
            if (done[k] || !mtrue(&s, m, vs[k]))
              continue;
            done[k] = 1;
            more = c->opts->all;
            const ag__oblig *o = &c->obligs.v[todo.v[b0 + k]];
            Z3_model small = small_model(&s, vs[k], 1); /* every one minimized */
            set_cex(&s, o, cex_from_model(&s, o, &es[k], small ? small : m));
            if (small)
              Z3_model_dec_ref(s.z, small);
            if (!c->opts->all)
              break;
          }
          Z3_model_dec_ref(s.z, m);
        } else if (res == Z3_L_UNDEF) {
          ag_tile_assert_result *ar = result_for(&s, first);
          if (ar->status != AG_TILE_VIOLATED) {
            ar->status = AG_TILE_UNKNOWN;
            if (!ar->detail) {
              char buf[300];
              const char *why = Z3_solver_get_reason_unknown(s.z, sol);
              if (strstr(why, "memory"))
                snprintf(buf, sizeof buf, "the solver gave up: %s (%d MiB per query; split the "
                         "assertion or make its index arithmetic simpler)", why,
                         AG_SMT_MAX_MEMORY_MIB);
              else
                snprintf(buf, sizeof buf, "the solver gave up: %s (raise the limit with --rlimit)",
                         why);
              ar->detail = dupstr(&s, buf);
            }
          }
        }
        Z3_solver_dec_ref(s.z, sol);
      }
    }
    ag_vec_free(&todo);
  }
out:
  for (size_t i = 0; i < cache.n; i++)
    ag_free(cache.v[i].bits);
  ag_vec_free(&cache);
  if (s.failed && !rc) {
    rc = AG_ESOLVER;
    ag_diags_add(c->diags, AG_SEV_ERROR, c->prog->file, 0, 0, NULL, 0, "solver error: %s",
                 s.errtext);
  }
  smt_close(&s);
  return rc;
}

const char *ag_tile_z3_version(void) {
  static char buf[32];
  unsigned a = 0, b = 0, c = 0, d = 0;
  Z3_get_version(&a, &b, &c, &d);
  snprintf(buf, sizeof buf, "%u.%u.%u.%u", a, b, c, d);
  return buf;
}
