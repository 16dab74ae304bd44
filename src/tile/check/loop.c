/*
 * loop.c — loops the checker proves without unrolling them (summaries).
 *
 * `for v in range(start, stop)` with a stop that depends on problem sizes
 * (or a long constant one) is checked as:
 *
 *  1. a prefix of F iterations run as usual, iteration u under the fact
 *     u < stop (its obligations hold only when it runs; each one implies
 *     the iterations before it ran, so the state it sees is exact);
 *  2. for each residue r of a ring of P stages, the iteration
 *     v = start + F + P*q + r for a fresh symbol q, under the fact v < stop.
 *     Its stage indices (v % P) fold to constants, so shared addresses depend
 *     on the thread only, as in an unrolled iteration, and counterexamples
 *     give the exact iteration (q from the model). The state it starts from
 *     over-approximates every real one: the D iterations before it are
 *     replayed (v - D .. v - 1, "ghost": no obligations) from
 *       - shared memory: every byte some iteration of the loop writes holds a
 *         top write ("havoc": anything an older iteration left there); the
 *         replayed iterations' resets and writes refine it;
 *       - registers: their state at the head of iteration start + F - D, a
 *         state every later head must equal (checked after the first replayed
 *         iteration and after the checked one; a byte that differs becomes
 *         top, which is above every tag);
 *       - names assigned in the loop: unusable until assigned again.
 *  After the loop, the bytes the loop writes are top, registers the join of
 *  the states the loop may leave, and names it assigned unusable.
 *
 * Why this is sound: every real iteration is either in the prefix (exact) or
 * an instance of step 2 (q, r given by it), whose state is above the real
 * one in the lattice; a top member violates every assertion kind (`!= bot`
 * is reported unknown when it depends on one: smt.c). A loop whose shared
 * addresses still depend on q, whose replay needs a barrier under a
 * condition the assumptions cannot decide, or that fails otherwise is not
 * summarized: exec_for unrolls it when its bounds are constant, or refuses it
 * naming the loop and the reason.
 *
 * Cost: a few attempts of F + P*(D + 1) iterations of interpretation; the
 * obligations are those of F + P iterations, whatever the trip count.
 */
#include "check_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char ag__havoc_why[] = "it may hold data from an iteration of a summarized loop that the "
                             "summary does not keep (reset() the bytes in each iteration, or "
                             "check a fixed size with --unroll)";

#define MAX_WARMUP 3  /* h: iterations unrolled beyond the replay depth */
#define MAX_RING 16   /* P */
#define MAX_ATTEMPTS 24

/* ------------------------------------------------------------ snapshots */
typedef struct snap {
  size_t nwrecs, nresets, nobligs, nasserts, nassumes, nrbufs, nsbufs, nloops, nbind;
  int64_t *inst;
  const ag__tag ***regs;
  ag__binding *bind;
  int64_t *done_pc;
  int *vis_epoch;
  ag__rrec *reads;         /* the barrier interval's reads (race.c) */
  size_t nreads;
  int64_t race_obligs;
  int64_t race_work;       /* the race check's work so far: an attempt's own is dropped */
  int64_t pc, smem_top;
  int epoch, group_open, ngroups, uniform_if, symbolic_if, nested, replay;
  const ag__bx *path, *facts; /* an enclosing summary's facts (NULL: none) */
  ag__mbar *mbars;         /* mbarrier states (interp.c) */
  size_t nmbars, nmsyncs;
  int64_t msettle_from;
  const ag__mset **mset;   /* per write record: its settling waits, ... */
  unsigned char *mlate;    /* ... and whether its phase may complete without it */
  int wg_ngroups;          /* wgmma groups and unretired accumulators */
  ag__wgpend *wg_pend;
  size_t nwg_pend;
} snap;

static ag__mbar *mbars_copy(ag__ck *c) {
  ag__mbar *m = ag__ck_alloc(c, (c->mbars.n + 1) * sizeof *m);
  ag__mcpy(m, c->mbars.v, c->mbars.n * sizeof *m);
  return m;
}

static void take(ag__ck *c, snap *s) {
  s->nwrecs = c->wrecs.n;
  s->nresets = c->resets.n;
  s->nobligs = c->obligs.n;
  s->nasserts = c->asserts.n;
  s->nassumes = c->assumes.n;
  s->nrbufs = c->rbufs.n;
  s->nsbufs = c->sbufs.n;
  s->nloops = c->loops.n;
  s->inst = ag__ck_alloc(c, (s->nasserts + 1) * sizeof *s->inst);
  for (size_t i = 0; i < s->nasserts; i++)
    s->inst[i] = c->asserts.v[i].instances;
  s->regs = ag__snapshot_regs(c);
  s->nbind = c->scope->b.n;
  s->bind = ag__ck_alloc(c, (s->nbind + 1) * sizeof *s->bind);
  ag__mcpy(s->bind, c->scope->b.v, s->nbind * sizeof *s->bind);
  s->done_pc = ag__ck_alloc(c, (s->nwrecs + 1) * sizeof *s->done_pc);
  s->vis_epoch = ag__ck_alloc(c, (s->nwrecs + 1) * sizeof *s->vis_epoch);
  for (size_t i = 0; i < s->nwrecs; i++) {
    s->done_pc[i] = c->wrecs.v[i].done_pc;
    s->vis_epoch[i] = c->wrecs.v[i].vis_epoch;
  }
  s->mset = ag__ck_alloc(c, (s->nwrecs + 1) * sizeof *s->mset);
  s->mlate = ag__ck_alloc(c, s->nwrecs + 1);
  for (size_t i = 0; i < s->nwrecs; i++) {
    s->mset[i] = c->wrecs.v[i].mset;
    s->mlate[i] = (unsigned char)c->wrecs.v[i].mlate;
  }
  s->nmbars = c->mbars.n;
  s->mbars = mbars_copy(c);
  s->nmsyncs = c->msyncs.n;
  s->msettle_from = c->msettle_from;
  s->nreads = c->reads.n;
  s->reads = ag__ck_alloc(c, (s->nreads + 1) * sizeof *s->reads);
  ag__mcpy(s->reads, c->reads.v, s->nreads * sizeof *s->reads);
  s->race_obligs = c->race_obligs;
  s->race_work = c->race_work;
  s->pc = c->pc;
  s->smem_top = c->smem_top;
  s->epoch = c->epoch;
  s->group_open = c->group_open;
  s->ngroups = c->ngroups;
  s->path = c->path;
  s->facts = c->facts;
  s->replay = c->replay;
  s->uniform_if = c->uniform_if;
  s->symbolic_if = c->symbolic_if;
  s->nested = c->nested;
  s->wg_ngroups = c->wg_ngroups;
  s->nwg_pend = c->wg_pend.n;
  s->wg_pend = ag__ck_alloc(c, (s->nwg_pend + 1) * sizeof *s->wg_pend);
  ag__mcpy(s->wg_pend, c->wg_pend.v, s->nwg_pend * sizeof *s->wg_pend);
}

static void set_regs(ag__ck *c, size_t nrbufs, const ag__tag ***regs) {
  for (size_t i = 0; i < nrbufs; i++)
    ag__mcpy(c->rbufs.v[i].bytes, regs[i], (size_t)c->rbufs.v[i].size * sizeof **regs);
}

static void set_bindings(ag__ck *c, const ag__binding *b, size_t n) {
  ag__binding *nv = ag__ck_alloc(c, (n + 1) * sizeof *nv);
  ag__mcpy(nv, b, n * sizeof *nv);
  c->scope->b.v = nv;
  c->scope->b.n = n;
  c->scope->b.cap = n + 1;
}

static void restore(ag__ck *c, const snap *s) {
  c->wrecs.n = s->nwrecs;
  c->resets.n = s->nresets;
  c->obligs.n = s->nobligs;
  c->asserts.n = s->nasserts;
  c->assumes.n = s->nassumes;
  c->rbufs.n = s->nrbufs;
  c->sbufs.n = s->nsbufs;
  c->loops.n = s->nloops;
  for (size_t i = 0; i < s->nasserts; i++)
    c->asserts.v[i].instances = s->inst[i];
  set_regs(c, s->nrbufs, s->regs);
  set_bindings(c, s->bind, s->nbind);
  for (size_t i = 0; i < s->nwrecs; i++) {
    c->wrecs.v[i].done_pc = s->done_pc[i];
    c->wrecs.v[i].vis_epoch = s->vis_epoch[i];
    c->wrecs.v[i].mset = s->mset[i];
    c->wrecs.v[i].mlate = s->mlate[i];
  }
  c->mbars.n = s->nmbars;
  ag__mcpy(c->mbars.v, s->mbars, s->nmbars * sizeof *s->mbars);
  c->msyncs.n = s->nmsyncs;
  c->msettle_from = s->msettle_from;
  c->reads.n = 0;
  for (size_t i = 0; i < s->nreads; i++)
    if (ag_vec_push(&c->reads, s->reads[i]))
      ag__ck_oom(c);
  c->read_gen++; /* race.c: reads seen since the snapshot must be seen again */
  c->race_obligs = s->race_obligs;
  c->race_work = s->race_work; /* the budget bounds one interpretation, not every attempt */
  c->pc = s->pc;
  c->smem_top = s->smem_top;
  c->epoch = s->epoch;
  c->group_open = s->group_open;
  c->ngroups = s->ngroups;
  c->path = s->path;
  c->facts = s->facts;
  c->replay = s->replay;
  c->uniform_if = s->uniform_if;
  c->symbolic_if = s->symbolic_if;
  c->nested = s->nested;
  c->wg_ngroups = s->wg_ngroups;
  c->wg_pend.n = 0;
  for (size_t i = 0; i < s->nwg_pend; i++)
    if (ag_vec_push(&c->wg_pend, s->wg_pend[i]))
      ag__ck_oom(c);
}

/* ------------------------------------------------------ the ring period */
/* P: the least common multiple of the constants m in `x % m` where x
 * depends on the loop variable (through names assigned from it in the
 * body); 1 when there is none. Syntactic, so cheap and predictable; a wrong
 * guess is caught by the check that shared addresses do not depend on q. */
typedef struct taint {
  const char *v[64];
  int n;
} taint;

static int tainted(const taint *t, const char *name) {
  for (int i = 0; i < t->n; i++)
    if (!strcmp(t->v[i], name))
      return 1;
  return 0;
}

static int mentions(const ag_tile_node *e, const taint *t) {
  if (!e)
    return 0;
  if (e->kind == AG_TN_NAME)
    return tainted(t, e->name);
  if (mentions(e->a, t) || mentions(e->b, t) || mentions(e->c, t))
    return 1;
  for (int i = 0; i < e->list.n; i++)
    if (mentions(e->list.v[i], t))
      return 1;
  return 0;
}

static int taint_block(const ag_tile_list *l, taint *t) {
  int grew = 0;
  for (int i = 0; i < l->n; i++) {
    const ag_tile_node *s = l->v[i];
    if (s->kind == AG_TN_ASSIGN) {
      int dep = 0;
      for (int j = 0; j < s->list2.n; j++)
        dep |= mentions(s->list2.v[j], t);
      for (int j = 0; dep && j < s->list.n; j++) {
        const ag_tile_node *x = s->list.v[j];
        if (x->kind == AG_TN_NAME && !tainted(t, x->name) && t->n < 64) {
          t->v[t->n++] = x->name;
          grew = 1;
        }
      }
    }
    grew |= taint_block(&s->list, t);
    grew |= taint_block(&s->list2, t);
  }
  return grew;
}

static int64_t gcd(int64_t a, int64_t b) {
  while (b) {
    int64_t r = a % b;
    a = b;
    b = r;
  }
  return a;
}

/* A literal, or a name bound to a compile-time integer (a module constant:
 * `i % K`), in 2 .. MAX_RING; else 0. */
static int64_t ring_const(ag__ck *c, const ag_tile_node *e) {
  int64_t v = 0;
  if (e && e->kind == AG_TN_INT)
    v = e->ival;
  else if (!e || e->kind != AG_TN_NAME || ag__name_const(c, e->name, &v))
    return 0;
  return v > 1 && v <= MAX_RING ? v : 0;
}

static void ring_expr(ag__ck *c, const ag_tile_node *e, const taint *t, int64_t *p) {
  if (!e)
    return;
  int64_t m;
  if (e->kind == AG_TN_BINOP && e->op == AG_OP_MOD && (m = ring_const(c, e->b)) &&
      mentions(e->a, t)) {
    /* (x / d) % m, the phase parity (i / K) % 2 of a K-stage ring: period d*m */
    const ag_tile_node *a = e->a;
    int64_t d;
    if (a->kind == AG_TN_BINOP && (a->op == AG_OP_DIV || a->op == AG_OP_FLOORDIV) &&
        (d = ring_const(c, a->b)))
      m *= d;
    *p = *p / gcd(*p, m) * m;
    if (*p > MAX_RING)
      *p = MAX_RING + 1; /* too long: no summary (and no overflow) */
  }
  ring_expr(c, e->a, t, p);
  ring_expr(c, e->b, t, p);
  ring_expr(c, e->c, t, p);
  for (int i = 0; i < e->list.n; i++)
    ring_expr(c, e->list.v[i], t, p);
  for (int i = 0; i < e->list2.n; i++)
    ring_expr(c, e->list2.v[i], t, p);
}

static int ring_period(ag__ck *c, const ag_tile_node *loop) {
  taint t = {{loop->name}, 1};
  for (int pass = 0; pass < 8 && taint_block(&loop->list, &t); pass++)
    ;
  int64_t p = 1;
  for (int i = 0; i < loop->list.n; i++)
    ring_expr(c, loop->list.v[i], &t, &p);
  return p > MAX_RING ? 0 : (int)p;
}

/* ---------------------------------------------------------- an attempt */
typedef struct range {
  int buf;
  int64_t lo, hi;
} range;

typedef struct summ {
  const ag_tile_node *n;
  int64_t start;
  const ag_expr *stop;
  const ag__bx *fout;           /* an enclosing summary's facts at the loop (NULL: none) */
  int P, D, h;
  const ag_expr *q, *v;         /* the checked iteration v = P*q + r */
  ag__iterq *it;               /* q's range for the stage being checked (xexpr.c) */
  AG_VEC(range) ranges;        /* bytes the loop writes (havoc there) */
  size_t nr0;                  /* register buffers that exist before the loop */
  const ag__tag ***rstar;      /* register state at the head of iteration start + h */
  unsigned char **tops;        /* bytes of rstar that are top */
  unsigned char **miss;        /* bytes that differed in this attempt */
  int nmiss, prev_nmiss, settled_h;
  const ag__tag ***rexit;      /* registers after the loop (join) */
  const char *why;
  int empty_classes, group_open;
  const char *bmiss;           /* an mbarrier whose state does not repeat every P iterations */
  const ag__mbar *bexit;       /* the mbarriers after the loop, or NULL: not tracked */
  AG_VEC(ag__rrec) end_reads;  /* reads the loop may leave to the code after it */
  ag_map end_seen;             /* a read of end_reads by its access: its index + 1 */
  AG_VEC(ag__rrec) later_reads; /* accesses live at a head the loop cannot stop at */
} summ;

/* The key of an access in end_seen: the same record (the same access at
 * the same time) */
typedef struct {
  const void *at, *addr, *guard;
  int64_t pc;
  int32_t buf, width, write, inflight;
} end_key;

/* Adds access r to those the loop leaves after it, once: each stage of the
 * ring adds the accesses live before its replay, which hold those of the
 * stages before it (no barrier between); kept again, a summarized loop
 * inside a summarized loop would multiply them by the stages of both
 * rings. */
static void end_read(ag__ck *c, summ *S, const ag__rrec *r) {
  end_key k;
  memset(&k, 0, sizeof k);
  k.at = r->at;
  k.addr = r->addr;
  k.guard = r->guard;
  k.pc = r->pc;
  k.buf = r->buf;
  k.width = r->width;
  k.write = r->write;
  k.inflight = r->inflight;
  if (ag_map_has(&S->end_seen, &k, sizeof k))
    return;
  if (ag_vec_push(&S->end_reads, *r) || ag_map_put(&S->end_seen, &k, sizeof k, (void *)1))
    ag__ck_oom(c);
}

static const ag__tag *havoc_tag(ag__ck *c) { return ag__tag_top(c, ag__havoc_why); }

/* The register state replayed iterations start from. */
static void load_rstar(ag__ck *c, summ *S) {
  const ag__tag *top = havoc_tag(c);
  for (size_t i = 0; i < S->nr0; i++)
    for (int64_t j = 0; j < c->rbufs.v[i].size; j++)
      c->rbufs.v[i].bytes[j] = S->tops[i][j] ? top : S->rstar[i][j];
}

/* Registers must be below rstar at every head: a byte that differs is
 * noted (the next attempt unrolls more, or makes it top). */
static void compare_rstar(ag__ck *c, summ *S) {
  for (size_t i = 0; i < S->nr0; i++)
    for (int64_t j = 0; j < c->rbufs.v[i].size; j++)
      if (!S->tops[i][j] && c->rbufs.v[i].bytes[j] != S->rstar[i][j] && !S->miss[i][j]) {
        S->miss[i][j] = 1;
        S->nmiss++;
      }
}

static void add_range(ag__ck *c, summ *S, int buf, int64_t lo, int64_t hi, int *grew) {
  for (size_t i = 0; i < S->ranges.n; i++) {
    range *r = &S->ranges.v[i];
    if (r->buf == buf && lo <= r->hi && hi >= r->lo) {
      if (lo < r->lo || hi > r->hi) {
        *grew = 1;
        if (lo < r->lo)
          r->lo = lo;
        if (hi > r->hi)
          r->hi = hi;
      }
      return;
    }
  }
  range r = {buf, lo, hi};
  if (ag_vec_push(&S->ranges, r))
    ag__ck_oom(c);
  *grew = 1;
}

/* Kills what the loop's bytes held and puts a top write there. */
static void havoc(ag__ck *c, summ *S) {
  const ag__tag *top = havoc_tag(c);
  for (size_t i = 0; i < S->ranges.n; i++) {
    const range *r = &S->ranges.v[i];
    c->pc++;
    ag__reset k = {r->buf, c->pc, r->lo, r->hi, NULL};
    if (ag_vec_push(&c->resets, k))
      ag__ck_oom(c);
    c->pc++;
    ag__wrec w;
    memset(&w, 0, sizeof w);
    w.buf = r->buf;
    w.addr = ag__xc(c, r->lo);
    w.width = (int)(r->hi - r->lo);
    if (c->havoc_n < w.width) {
      /* one array of top tags for every havoc write, as wide as the widest */
      c->havoc_tags = ag__ck_alloc(c, (size_t)w.width * sizeof *c->havoc_tags);
      for (int j = 0; j < w.width; j++)
        c->havoc_tags[j] = top;
      c->havoc_n = w.width;
    }
    w.tags = c->havoc_tags; /* read-only, like a TMA box's (interp.c, tma_wide) */
    w.ptag = top;
    w.pgran = w.width;
    w.pc = c->pc;
    w.epoch = c->epoch;
    w.group = -1;
    w.done_pc = c->pc;
    w.vis_epoch = 0; /* settled long ago */
    w.at = S->n;
    w.lo = r->lo;
    w.hi = r->hi;
    if (ag_vec_push(&c->wrecs, w))
      ag__ck_oom(c);
  }
}

/* one of havoc()'s resets (its range is one of S's) */
static int is_kill(const summ *S, const ag__reset *e) {
  for (size_t i = 0; i < S->ranges.n; i++)
    if (S->ranges.v[i].buf == e->buf && S->ranges.v[i].lo == e->lo && S->ranges.v[i].hi == e->hi &&
        !e->guard)
      return 1;
  return 0;
}

static ag__value *poison(ag__ck *c, const ag_tile_node *n) {
  ag__value *v = ag__ck_alloc(c, sizeof *v);
  v->k = V_POISON;
  v->poison_at = n;
  return v;
}

/* The bindings at the head of a replayed iteration or after the loop: the
 * ones from before the loop, and every name the loop assigned unusable. */
static void head_bindings(ag__ck *c, summ *S, const snap *pre) {
  size_t n = c->scope->b.n;
  ag__binding *b = ag__ck_alloc(c, (n + 1) * sizeof *b);
  ag__mcpy(b, c->scope->b.v, n * sizeof *b);
  for (size_t i = 0; i < n; i++) {
    int same = 0;
    for (size_t k = 0; k < pre->nbind && !same; k++)
      same = !strcmp(pre->bind[k].name, b[i].name) && pre->bind[k].v == b[i].v;
    if (!same)
      b[i].v = poison(c, S->n);
  }
  set_bindings(c, b, n);
}

static void run_iteration(ag__ck *c, summ *S, const ag_expr *v, int64_t value) {
  ag__loopvar *lv = &c->loops.v[c->loops.n - 1];
  lv->value = value;
  lv->x = ag_expr_is_const(v, NULL) ? NULL : v;
  ag__bind(c, S->n->name, v);
  ag__exec_block(c, &S->n->list);
}

enum { A_OK, A_MISMATCH, A_RANGES, A_FAIL, A_BARS };

/* The mbarriers at the head of a replay for stage r: their state at the
 * prefix's head start + h + r (the replay starts at v - D = start + h + r +
 * P*(q - qmin)), with every phase number moved up by an even count past
 * every number used so far, so that waits of the replay see the releases of
 * the prefix (their order) and the parities are the real ones: the check
 * after the stage (bars_repeat) makes sure P iterations complete an even
 * number of phases of each barrier and leave it as they found it. */
static ag__mbar *bars_shifted(ag__ck *c, const ag__mbar *head, size_t n) {
  ag__mbar *m = ag__ck_alloc(c, (n + 1) * sizeof *m);
  for (size_t i = 0; i < n; i++) {
    m[i] = head[i];
    int64_t delta = c->mbars.v[i].open + 2 - head[i].done;
    if (delta < 0)
      delta = 0;
    delta += delta & 1;
    m[i].done += delta;
    m[i].open += delta;
  }
  return m;
}

static void bars_repeat(ag__ck *c, summ *S, const ag__mbar *start, size_t n) {
  for (size_t i = 0; i < n && !S->bmiss; i++) {
    const ag__mbar *a = &start[i], *b = &c->mbars.v[i];
    int64_t dd = b->done - a->done;
    if (a->count != b->count || dd != b->open - a->open || (dd & 1) || a->pending != b->pending ||
        a->tx != b->tx || a->open_copies != b->open_copies)
      S->bmiss = a->name;
  }
}

/* 1 when the loop may stop at head uv (its trip count may be uv - start)
 * under the assumptions; a constant bound decides it at once */
static int exit_possible(ag__ck *c, summ *S, const ag_expr *uv) {
  int64_t sv, u;
  if (ag_expr_is_const(S->stop, &sv) && ag_expr_is_const(uv, &u))
    return sv == u;
  const ag__bx *f0 = c->facts;
  c->facts = ag__band(c, S->fout, ag__bcmp(c, AG_OP_EQ, S->stop, uv));
  int never = ag__smt_decide(c, ag__bconst(c, 0)) == 1;
  c->facts = f0;
  return !never;
}

/* 1 when the loop may stop at a head start + h + r + Pm*e for some e >= 0
 * under the assumptions and the enclosing facts */
static int exit_class_possible(ag__ck *c, summ *S, int64_t r, int64_t Pm) {
  char en[96];
  snprintf(en, sizeof en, "%s#e", S->n->name);
  const ag_expr *e = ag_expr_sym(&c->lc, en);
  if (!e)
    ag__ck_oom(c);
  const ag_expr *t = ag__x(c, AG_X_ADD, ag__x(c, AG_X_MUL, e, ag__xc(c, Pm)),
                           ag__xc(c, S->start + S->h + r));
  const ag__bx *f0 = c->facts;
  c->facts = ag__band(
      c, S->fout,
      ag__band(c, ag__bcmp(c, AG_OP_EQ, S->stop, t),
               ag__band(c, ag__bcmp(c, AG_OP_GE, e, ag__xc(c, 0)),
                        ag__bcmp(c, AG_OP_LT, e, ag__xc(c, ((int64_t)1 << 31) / Pm)))));
  int never = ag__smt_decide(c, ag__bconst(c, 0)) == 1;
  c->facts = f0;
  return !never;
}

/* The same mbarrier state up to an even number of completed phases, with
 * no phase half done (every arrival of the open phase missing, no bytes
 * expected or copies counted, every phase that opened complete): a later
 * wait then sees every phase the loop released complete. */
static int bars_settled_same(const ag__mbar *a, const ag__mbar *b, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (a[i].pending != a[i].count || a[i].tx || a[i].open_copies || a[i].done != a[i].open)
      return 0;
    if (a[i].count != b[i].count || a[i].pending != b[i].pending || a[i].tx != b[i].tx ||
        a[i].open_copies != b[i].open_copies || a[i].open - a[i].done != b[i].open - b[i].done ||
        ((a[i].done - b[i].done) & 1))
      return 0;
  }
  return 1;
}

/* The mbarriers after the loop (S->bexit), when every trip count the loop
 * may run leaves them alike: a trip count T < h leaves the prefix's head T
 * exactly; T = h + r + Pm*k leaves head h + r's state with an even number of
 * phases more, since the checked stages showed Pm iterations (D + 1) bring
 * each barrier back to its state with an even number of phases completed
 * (bars_repeat) and an iteration's effect on a barrier depends on its
 * state and stage only. NULL (not tracked after the loop) otherwise. */
static void bars_exit(ag__ck *c, summ *S, ag__mbar **bheads, const unsigned char *exitp, int F,
                      size_t nbars) {
  S->bexit = NULL;
  if (!nbars)
    return;
  int64_t Pm = S->D + 1;
  const ag__mbar *first = NULL;
  for (int u = 0; u < S->h && u <= F; u++)
    if (exitp[u]) {
      if (!bheads[u])
        return;
      if (!first)
        first = bheads[u];
      if (!bars_settled_same(bheads[u], first, nbars))
        return;
    }
  for (int64_t r = 0; r < Pm; r++) {
    int u = S->h + (int)r;
    if (!exit_class_possible(c, S, r, Pm))
      continue;
    if (u > F || !bheads[u])
      return;
    if (!first)
      first = bheads[u];
    if (!bars_settled_same(bheads[u], first, nbars))
      return;
  }
  if (first)
    S->bexit = bars_shifted(c, first, nbars);
}

/* 1 when the loop may stop right after the checked iteration v (its trip
 * count may be v + 1 - start) under the stage's facts */
static int stops_after(ag__ck *c, summ *S, const ag_expr *v) {
  const ag__bx *f0 = c->facts;
  c->facts = ag__band(c, f0, ag__bcmp(c, AG_OP_EQ, S->stop, ag__x(c, AG_X_ADD, v, ag__xc(c, 1))));
  int never = ag__smt_decide(c, ag__bconst(c, 0)) == 1;
  c->facts = f0;
  return !never;
}

static int attempt(ag__ck *c, summ *S, const snap *pre) {
  int F = S->D + S->h;
  const ag_tile_node *n = S->n;
  ag__loopvar lv = {n->name, 0, NULL};
  if (ag_vec_push(&c->loops, lv))
    ag__ck_oom(c);
  S->nmiss = 0;
  for (size_t i = 0; i < S->nr0; i++)
    memset(S->miss[i], 0, (size_t)c->rbufs.v[i].size);
  /* 1. the prefix, iteration u under u < stop. Each head u is also a state
   * the loop may exit in (a trip count of u: the registers and the shared
   * reads still live then go on after the loop) */
  const ag__bx *path0 = c->path;
  const ag__tag ****heads = ag__ck_alloc(c, (size_t)(F + 1) * sizeof *heads);
  ag__mbar **bheads = ag__ck_alloc(c, (size_t)(F + 1) * sizeof *bheads);
  memset(bheads, 0, (size_t)(F + 1) * sizeof *bheads);
  size_t nbars = c->mbars.n;
  unsigned char *exitp = ag__ck_alloc(c, (size_t)F + 1);
  memset(exitp, 0, (size_t)F + 1);
  int nheads = 0;
  S->bmiss = NULL;
  S->end_reads.n = 0;
  ag_map_release(&S->end_seen);
  ag_map_init(&S->end_seen);
  for (int u = 0; u < F; u++) {
    const ag_expr *uv = ag__xc(c, S->start + u);
    const ag__bx *runs = ag__bcmp(c, AG_OP_LT, uv, S->stop);
    if (u == S->h)
      S->rstar = ag__snapshot_regs(c);
    bheads[u] = mbars_copy(c);
    if (exit_possible(c, S, uv)) {
      exitp[u] = 1;
      if (u > 0)
        heads[nheads++] = ag__snapshot_regs(c);
      for (size_t i = 0; i < c->reads.n; i++)
        end_read(c, S, &c->reads.v[i]);
    }
    int k;
    if (ag__bis_const(runs, &k) && !k)
      break; /* a constant trip count below F: nothing more to check */
    c->facts = ag__band(c, S->fout, runs);
    c->path = ag__band(c, path0, runs);
    run_iteration(c, S, uv, S->start + u);
    c->path = path0;
    c->facts = S->fout;
  }
  if (!S->rstar)
    S->rstar = ag__snapshot_regs(c);
  if (!bheads[F] && (F == 0 || bheads[F - 1]))
    bheads[F] = mbars_copy(c); /* the head after the prefix */
  const ag__tag ***rpfx = ag__snapshot_regs(c);
  int group_open = c->group_open;
  size_t wr0 = c->wrecs.n;
  S->group_open = group_open;
  (void)wr0;
  /* 2. one checked iteration per stage of the ring */
  S->empty_classes = 0;
  /* whether the loop may stop at the head the next stage's replay starts
   * after (the prefix's end, then the head after a checked iteration) */
  int stops_here = exit_possible(c, S, ag__xc(c, S->start + F));
  int epoch0 = c->epoch;
  S->later_reads.n = 0;
  for (int r = 0; r < S->P; r++) {
    /* v = P*q + r0 with q >= qmin. v is a symbol of its own, tied to q by
     * a fact: its multiples and offsets stay shifts and small additions for
     * the solver whatever P is, and its stage indices (v + k) % m fold to
     * constants (xexpr.c) */
    int64_t c0 = S->start + F + r, r0 = c0 % S->P, qmin = c0 / S->P;
    const ag_expr *v = S->v;
    const ag__bx *facts = ag__band(
        c,
        ag__band(c, ag__band(c, ag__bcmp(c, AG_OP_GE, S->q, ag__xc(c, qmin)),
                             ag__bcmp(c, AG_OP_LT, v, S->stop)),
                 ag__bcmp(c, AG_OP_LT, S->q, ag__xc(c, ((int64_t)1 << 31) / S->P))),
        ag__band(c, ag__bcmp(c, AG_OP_GE, v, ag__xc(c, c0)),
                 ag__bcmp(c, AG_OP_EQ, v,
                          ag__x(c, AG_X_ADD, ag__x(c, AG_X_MUL, S->q, ag__xc(c, S->P)),
                                ag__xc(c, r0)))));
    c->facts = ag__band(c, S->fout, facts);
    S->it->P = S->P; /* what the facts say of v: its stage indices fold */
    S->it->r0 = r0;
    S->it->vmin = c0;
    int k;
    if ((ag__bis_const(facts, &k) && !k) || ag__smt_decide(c, ag__bconst(c, 0)) == 1) {
      /* no such iteration under the assumptions */
      c->facts = S->fout;
      S->empty_classes++;
      continue;
    }
    /* the reads live before a replay stay live: a replayed iteration
     * without a barrier leaves them to the checked iteration's writes (a
     * read in the prefix, under a condition on the iteration, or before the
     * loop, overtaken by a later iteration's write) */
    for (size_t i = 0; i < c->reads.n; i++)
      if (stops_here)
        end_read(c, S, &c->reads.v[i]);
      else if (ag_vec_push(&S->later_reads, c->reads.v[i]))
        ag__ck_oom(c);
    c->read_gen++;
    const ag__mbar *bstart = NULL;
    if (nbars && S->h + r <= F && bheads[S->h + r]) {
      bstart = bars_shifted(c, bheads[S->h + r], nbars);
      ag__mcpy(c->mbars.v, bstart, nbars * sizeof *bstart);
    }
    int64_t settle0 = c->msettle_from;
    c->msettle_from = c->pc + 1; /* waits of the replay settle its own copies only */
    havoc(c, S);
    load_rstar(c, S);
    head_bindings(c, S, pre);
    c->group_open = group_open;
    c->replay++;
    for (int d = S->D; d >= 1; d--) {
      run_iteration(c, S, ag__x(c, AG_X_ADD, v, ag__xc(c, -d)), -1);
      if (d == S->D)
        compare_rstar(c, S);
    }
    c->replay--;
    c->path = ag__band(c, path0, facts);
    run_iteration(c, S, v, 0);
    stops_here = stops_after(c, S, v);
    c->path = path0;
    c->facts = S->fout;
    S->it->P = 0;
    c->msettle_from = settle0;
    compare_rstar(c, S);
    if (bstart)
      bars_repeat(c, S, bstart, nbars);
  }
  /* the accesses live at a head the loop cannot stop at are those of an
   * iteration that another follows: with no barrier after the prefix they
   * stay in the list of accesses to the end of the attempt, where a later
   * stage's replay retires and releases them as the next iteration does
   * (a copy taken here would keep a wgmma read in flight that the next
   * iteration retires: a false race with the refill after the loop); a
   * barrier clears that list, so then the copies are kept */
  if (c->epoch != epoch0)
    for (size_t i = 0; i < S->later_reads.n; i++)
      end_read(c, S, &S->later_reads.v[i]);
  S->later_reads.n = 0;
  if (S->bmiss)
    return A_BARS;
  bars_exit(c, S, bheads, exitp, F, nbars);
  /* the summary needs shared addresses that do not depend on q; the bytes
   * the loop writes or resets are havoc before a replay and after the loop
   * (a reset of the prefix that may not run must not kill older data
   * there) */
  int grew = 0;
  for (size_t i = pre->nresets; i < c->resets.n; i++)
    if (!(c->resets.v[i].pc > pre->pc && is_kill(S, &c->resets.v[i])))
      add_range(c, S, c->resets.v[i].buf, c->resets.v[i].lo, c->resets.v[i].hi, &grew);
  for (size_t i = pre->nwrecs; i < c->wrecs.n; i++) {
    const ag__wrec *w = &c->wrecs.v[i];
    if (w->ptag && w->ptag->k == TG_TOP && w->ptag->why == ag__havoc_why)
      continue;
    if (ag__xdepends(w->addr, S->q->name) || ag__xdepends(w->addr, S->v->name)) {
      S->why = "its shared-memory addresses depend on the iteration in a way a ring of "
               "stages does not capture (stage indices should be 'v % P' for a constant P)";
      return A_FAIL;
    }
    add_range(c, S, w->buf, w->lo, w->hi, &grew);
  }
  if (grew)
    return A_RANGES;
  if (S->nmiss)
    return A_MISMATCH;
  /* registers after the loop: any head state (the loop may run no iteration) */
  S->rexit = ag__snapshot_regs(c);
  for (size_t i = 0; i < S->nr0; i++)
    for (int64_t j = 0; j < c->rbufs.v[i].size; j++) {
      const ag__tag *t = S->tops[i][j] ? havoc_tag(c) : S->rstar[i][j];
      t = ag__tag_join(c, t, rpfx[i][j]);
      for (int h = 0; h < nheads; h++)
        t = ag__tag_join(c, t, heads[h][i][j]);
      S->rexit[i][j] = ag__tag_join(c, t, pre->regs[i][j]);
    }
  return A_OK;
}

static void note(ag__ck *c, summ *S) {
  ag_str t = AG_STR_INIT;
  ag_str_puts(&t, "range(");
  if (S->start)
    ag_str_printf(&t, "%lld, ", (long long)S->start);
  ag__xprint(S->stop, &t);
  ag_str_printf(&t, "): iterations %lld .. %lld unrolled, then every %s >= %lld "
                    "checked as %d*q + r for each stage r < %d of the ring (after %d replayed)",
                (long long)S->start, (long long)(S->start + S->D + S->h - 1), S->n->name,
                (long long)(S->start + S->D + S->h), S->P, S->P, S->D);
  /* a loop summarized inside each interpreted iteration of an enclosing
   * summary (or again by a later attempt) is listed once */
  for (size_t i = 0; !t.oom && i < c->notes.n; i++)
    if (c->notes.v[i].line == S->n->line && c->notes.v[i].col == S->n->col &&
        c->notes.v[i].how && !strcmp(c->notes.v[i].how, ag_str_cstr(&t)) &&
        !strcmp(c->notes.v[i].kernel, c->kernel->name)) {
      ag_str_release(&t);
      return;
    }
  ag_tile_loop_note nt;
  memset(&nt, 0, sizeof nt);
  nt.line = S->n->line;
  nt.col = S->n->col;
  nt.kernel = ag_strdup(c->kernel->name);
  nt.var = ag_strdup(S->n->name);
  nt.how = t.oom ? NULL : ag_strdup(ag_str_cstr(&t));
  ag_str_release(&t);
  if (!nt.kernel || !nt.var || !nt.how || ag_vec_push(&c->notes, nt)) {
    ag_free(nt.kernel);
    ag_free(nt.var);
    ag_free(nt.how);
    ag__ck_oom(c);
  }
}

int ag__loop_summarize(ag__ck *c, const ag_tile_node *n, int64_t start, const ag_expr *stop,
                       const char **why, int *prefix) {
  *why = NULL;
  summ *S = ag__ck_alloc(c, sizeof *S);
  memset(S, 0, sizeof *S);
  S->n = n;
  S->start = start;
  S->stop = stop;
  S->fout = c->facts;
  S->P = ring_period(c, n);
  if (!S->P) {
    *why = "its ring of stages ('v % P') is longer than 16";
    return -1;
  }
  S->D = S->P > 1 ? S->P - 1 : 1;
  S->settled_h = -1;
  char qn[96];
  snprintf(qn, sizeof qn, "%s#q", n->name);
  S->q = ag_expr_sym(&c->lc, qn);
  if (!S->q)
    ag__ck_oom(c);
  S->it = ag__ck_alloc(c, sizeof *S->it);
  snprintf(qn, sizeof qn, "%s#qv", n->name); /* "#q": 31 bits for the solver */
  S->v = ag_expr_sym(&c->lc, qn);
  if (!S->v)
    ag__ck_oom(c);
  S->it->v = S->v; /* P = 0: no stage being checked, nothing folds */
  S->it->up = c->iters;
  c->iters = S->it;
  snap *pre = ag__ck_alloc(c, sizeof *pre);
  take(c, pre);
  S->nr0 = pre->nrbufs;
  S->tops = ag__ck_alloc(c, (S->nr0 + 1) * sizeof *S->tops);
  S->miss = ag__ck_alloc(c, (S->nr0 + 1) * sizeof *S->miss);
  for (size_t i = 0; i < S->nr0; i++) {
    S->tops[i] = ag__ck_alloc(c, (size_t)c->rbufs.v[i].size + 1);
    S->miss[i] = ag__ck_alloc(c, (size_t)c->rbufs.v[i].size + 1);
    memset(S->tops[i], 0, (size_t)c->rbufs.v[i].size + 1);
  }
  jmp_buf outer;
  memcpy(outer, c->fail, sizeof outer);
  struct ag__roles *roles = c->roles; /* the role splits around the loop (interp.c) */
  size_t ndiag = c->diags->items.n;
  int nerr = c->diags->nerrors;
  c->summarizing++;
  int result = -1;
  for (int tries = 0; tries < MAX_ATTEMPTS; tries++) {
    if (setjmp(c->fail)) {
      /* an error in the attempt: a malformed body fails again when it is
       * unrolled; a condition the summary could not decide may be decided
       * after more unrolled iterations */
      memcpy(c->fail, outer, sizeof outer);
      c->roles = roles;
      c->iters = S->it; /* an inner summary's, when it failed inside */
      S->it->P = 0;
      if (c->fail_rc == AG_ENOMEM)
        longjmp(c->fail, 1);
      char msg[400] = "";
      if (c->diags->items.n > ndiag) {
        const ag_diag *dg = &c->diags->items.v[c->diags->items.n - 1];
        snprintf(msg, sizeof msg, "%s (line %d)", dg->msg ? dg->msg : "", dg->line);
      }
      for (size_t i = ndiag; i < c->diags->items.n; i++) {
        ag_free(c->diags->items.v[i].file);
        ag_free(c->diags->items.v[i].msg);
        ag_free(c->diags->items.v[i].srcline);
      }
      c->diags->items.n = ndiag;
      c->diags->nerrors = nerr;
      restore(c, pre);
      S->why = ag__ck_strdup(c, msg);
      if (S->h < MAX_WARMUP && S->settled_h < 0) {
        S->h++;
        S->rstar = NULL;
        continue;
      }
      break;
    }
    S->rstar = NULL;
    int a = attempt(c, S, pre);
    memcpy(c->fail, outer, sizeof outer);
    if (a == A_OK) {
      result = 0;
      break;
    }
    restore(c, pre);
    if (a == A_FAIL)
      break;
    if (a == A_RANGES)
      continue;
    if (a == A_BARS) {
      /* the head state of an mbarrier may settle after more iterations */
      if (S->h < MAX_WARMUP) {
        S->h++;
        continue;
      }
      char *w = ag__ck_alloc(c, 300);
      snprintf(w, 300,
               "the phases of mbarrier '%s' do not repeat every %d iterations (the ring's "
               "period): its arrivals, expected bytes or completed phases per period differ",
               S->bmiss, S->P);
      S->why = w;
      break;
    }
    /* registers differ between heads: unroll one more iteration while that
     * removes differences, then make the rest top */
    if (S->settled_h < 0 && S->h < MAX_WARMUP && (S->prev_nmiss == 0 || S->nmiss < S->prev_nmiss)) {
      S->prev_nmiss = S->nmiss;
      S->h++;
      continue;
    }
    if (S->settled_h < 0 && S->h > 0 && S->nmiss == S->prev_nmiss)
      S->h--; /* the extra iteration did not help */
    S->settled_h = S->h;
    for (size_t i = 0; i < S->nr0; i++)
      for (int64_t j = 0; j < c->rbufs.v[i].size; j++)
        S->tops[i][j] |= S->miss[i][j];
  }
  c->summarizing--;
  c->iters = S->it->up;
  if (result) {
    restore(c, pre);
    ag_vec_free(&S->ranges);
    ag_vec_free(&S->end_reads);
    ag_vec_free(&S->later_reads);
    ag_map_release(&S->end_seen);
    *why = S->why ? S->why : "its summary did not settle";
    if (prefix)
      *prefix = S->D + S->h; /* the last attempt's prefix */
    return -1;
  }
  /* after the loop: what it may have left, whether it ran or not. Data
   * from before the loop that was not settled then (a cp.async not waited
   * for, a store before no barrier) is top too: the loop may run no
   * iteration, and a record's settledness is one for all its readers */
  for (size_t i = 0; i < pre->nwrecs; i++)
    if (pre->done_pc[i] == INT64_MAX || pre->vis_epoch[i] > pre->epoch) {
      int grew = 0;
      add_range(c, S, c->wrecs.v[i].buf, c->wrecs.v[i].lo, c->wrecs.v[i].hi, &grew);
    }
  havoc(c, S);
  /* the phase of an mbarrier the loop used is not tracked after it,
   * unless every trip count leaves it alike (bars_exit) */
  for (size_t i = 0; i < pre->nmbars; i++)
    if (c->mbars.v[i].done != pre->mbars[i].done || c->mbars.v[i].open != pre->mbars[i].open ||
        c->mbars.v[i].pending != pre->mbars[i].pending || c->mbars.v[i].tx != pre->mbars[i].tx) {
      if (S->bexit)
        c->mbars.v[i] = S->bexit[i];
      else
        c->mbars.v[i].lost = S->n;
    }
  set_regs(c, S->nr0, S->rexit);
  head_bindings(c, S, pre);
  c->group_open = S->group_open;
  for (size_t i = 0; i < S->end_reads.n; i++)
    if (ag_vec_push(&c->reads, S->end_reads.v[i]))
      ag__ck_oom(c);
  ag_vec_free(&S->end_reads);
  ag_vec_free(&S->later_reads);
  ag_map_release(&S->end_seen);
  c->loops.n--;
  note(c, S);
  ag_vec_free(&S->ranges);
  return 0;
}

_Noreturn void ag__loop_cut(ag__ck *c, const ag_tile_node *n, const ag_tile_node *at,
                            int64_t start, const ag_expr *stop, int prefix, const char *msg) {
  ag__loopvar lv = {n->name, 0, NULL};
  if (ag_vec_push(&c->loops, lv))
    ag__ck_oom(c);
  const ag__bx *path_in = c->path, *facts_in = c->facts;
  int u = 0;
  c->cutting++;
  for (; u < prefix; u++) {
    const ag_expr *uv = ag__xc(c, start + u);
    const ag__bx *runs = ag__bcmp(c, AG_OP_LT, uv, stop);
    int k;
    if (ag__bis_const(runs, &k) && !k)
      break;
    c->facts = ag__band(c, facts_in, runs);
    c->path = ag__band(c, path_in, runs);
    c->loops.v[c->loops.n - 1].value = start + u;
    c->loops.v[c->loops.n - 1].x = NULL;
    ag__bind(c, n->name, uv);
    ag__exec_block(c, &n->list);
    c->path = path_in;
    c->facts = facts_in;
  }
  c->cut = ag__ck_strdup(c, msg);
  c->cut_at = at;
  c->cut_iters = u;
  c->fail_rc = 0;
  longjmp(c->fail, 1);
}
