/*
 * race.c — data races on shared memory: two accesses of the same bytes by
 * different threads in one barrier interval, at least one a write, so
 * nothing orders them:
 *   - write-after-read: a write that may overtake another thread's earlier
 *     read (the commonest pipeline bug: a stage buffer refilled without the
 *     trailing syncthreads());
 *   - write-after-write: two threads write a byte, and which value it keeps
 *     depends on the order;
 *   - read-after-write: a read of a byte another thread wrote earlier in the
 *     program but with no barrier between, e.g. the write in one branch of a
 *     thread-dependent `if` and the read in the other (both branches run at
 *     once, in different threads). Its tag says so too (unsettled data is top)
 *     when an assertion looks at it; the race is reported without one.
 *
 * The interpreter reports every shared read (a load, an ldmatrix row; not a
 * tag() observation) and every shared write (a store, a cp.async copy, at
 * its issue). Both are kept until the next barrier only, since a barrier
 * orders every access before it against every one after it. Each access is
 * paired with the remembered accesses of its buffer whose byte ranges may
 * meet it and of which one of the two is a write; a pair whose addresses and
 * guards depend on the thread index only is decided here by enumerating the
 * block (no thread other than the later access's own touched a byte it
 * touches: race-free); any other pair becomes an OB_RACE obligation that
 * smt.c decides (some thread t of the earlier access and t' != t of the
 * later one meet a byte) and turns into a counterexample naming both
 * threads and both statements. Every pair is listed under the write's
 * statement ("no data race: <the write>").
 *
 * mbarriers order accesses too (ag__race_mbar_ordered): a bulk copy
 * before a read by threads that waited for its phase, and any access
 * before an arrive of every thread (a release) before an access by threads
 * that waited for that phase (an acquire); such pairs are race-free.
 *
 * Load: a few pairs per access in real kernels (reads and writes of a stage
 * are separated by barriers); each enumeration costs block size x access
 * width. An access the interval already holds (same kind, buffer, address,
 * width and guard, e.g. from another loop iteration) is kept once. The work
 * (pairs scanned, bytes enumerated) is bounded by 32 x --max-steps, and the
 * race obligations by --max-writes; past either, the check stops with an
 * error naming the limit.
 */
#include "check_int.h"

#include <stdint.h>
#include <string.h>

/* The key of access r in c->read_seen: generation gen (the interval's, or
 * one no interval has), r's address, guard, buffer and width, and kind (its
 * write flag, or 2 for a write paired with itself). */
typedef struct {
  int64_t gen;
  const void *addr, *guard;
  int32_t buf, width, write;
} access_key;
static access_key key_of(int64_t gen, const ag__rrec *r, int kind) {
  access_key key;
  memset(&key, 0, sizeof key);
  key.gen = gen;
  key.addr = r->addr;
  key.guard = r->guard;
  key.buf = r->buf;
  key.width = r->width;
  key.write = kind;
  return key;
}

/* Keeps access r until the next barrier; 0 when the interval holds it. */
static int remember(ag__ck *c, const ag__rrec *r) {
  /* not the epoch: a loop summary restores the epoch and the list of
   * accesses (loop.c), and a key of an abandoned attempt would hide one */
  access_key key = key_of(c->read_gen, r, r->write);
  void *seen = ag_map_get(&c->read_seen, &key, sizeof key);
  if (seen) {
    /* the same bytes accessed by the same threads in this interval: the
     * latest one is what an mbarrier must order (ag__race_mbar_ordered) */
    ag__rrec *o = &c->reads.v[(size_t)((intptr_t)seen - 1)];
    o->pc = r->pc;
    o->nloops = r->nloops;
    o->loops = r->loops;
    o->wrec = r->wrec;
    o->inflight = r->inflight;
    return 0;
  }
  if (ag_map_put(&c->read_seen, &key, sizeof key, (void *)(intptr_t)(c->reads.n + 1)))
    ag__ck_oom(c);
  if (ag_vec_push(&c->reads, *r))
    ag__ck_oom(c);
  return 1;
}

static void access_rec(ag__ck *c, ag__rrec *r, const ag_tile_node *at, int buf,
                       const ag_expr *addr, int width, const ag__bx *guard, int write) {
  memset(r, 0, sizeof *r);
  r->buf = buf;
  r->addr = addr;
  r->width = width;
  r->guard = guard;
  r->pc = c->pc;
  r->epoch = c->epoch;
  r->at = at;
  r->write = write;
  r->inflight = !write && c->race_inflight;
  r->nloops = (int)c->loops.n;
  r->loops = ag__ck_alloc(c, (size_t)(r->nloops ? r->nloops : 1) * sizeof *r->loops);
  ag__mcpy(r->loops, c->loops.v, (size_t)r->nloops * sizeof *r->loops);
}

static void pair_all(ag__ck *c, const ag__rrec *later);

void ag__race_read(ag__ck *c, const ag_tile_node *at, int buf, const ag_expr *addr, int width,
                   const ag__bx *guard) {
  if (c->ghost)
    return;
  ag__rrec r;
  access_rec(c, &r, at, buf, addr, width, guard, 0);
  int64_t lo, hi;
  if (ag__xbounds(c, addr, &lo, &hi) == 0) {
    r.lo = lo;
    r.hi = hi + width;
  } else {
    r.lo = 0;
    r.hi = c->sbufs.v[buf].size;
  }
  if (!c->replay)
    pair_all(c, &r); /* read-after-write */
  remember(c, &r);
}

void ag__race_read_retire(ag__ck *c, const ag__wgread *w) {
  if (c->ghost)
    return; /* a ghost run records no access */
  ag__rrec r;
  access_rec(c, &r, w->at, w->buf, w->addr, w->width, w->guard, 0);
  access_key key = key_of(c->read_gen, &r, 0);
  void *seen = ag_map_get(&c->read_seen, &key, sizeof key);
  if (seen) {
    ag__rrec *o = &c->reads.v[(size_t)((intptr_t)seen - 1)];
    if (o->pc < r.pc)
      o->pc = r.pc; /* its loops stay the (the counterexample's iteration) */
    o->inflight = 0;
    return;
  }
  /* the record under another key generation (a loop summary
   * restored the list of accesses, or a barrier came between): the same
   * read, retired here */
  for (size_t i = 0; i < c->reads.n; i++) {
    ag__rrec *o = &c->reads.v[i];
    if (o->inflight && !o->write && o->at == w->at && o->buf == w->buf && o->addr == w->addr &&
        o->guard == w->guard && o->width == w->width) {
      if (o->pc < r.pc)
        o->pc = r.pc;
      o->inflight = 0;
    }
  }
  /* a barrier came between the issue and the retirement: it does not order
   * an asynchronous read, which stays in the new interval */
  int64_t lo, hi;
  if (ag__xbounds(c, w->addr, &lo, &hi) == 0) {
    r.lo = lo;
    r.hi = hi + w->width;
  } else {
    r.lo = 0;
    r.hi = c->sbufs.v[w->buf].size;
  }
  remember(c, &r);
}

/* wgmma_wait(0): no wgmma operand read of the role that commits them is in
 * flight any more. Beside the pending groups' own records (retired one by
 * one above), this retires the instances a loop summary keeps from the
 * stages of its ring that did not leave their group in the state after the
 * loop (loop.c, the reads the loop leaves after it): each is the last
 * iteration's in flight for some trip count, retired here. */
void ag__race_retire_all(ag__ck *c) {
  for (size_t i = 0; i < c->reads.n; i++) {
    ag__rrec *o = &c->reads.v[i];
    if (!o->inflight)
      continue;
    o->inflight = 0;
    if (o->pc < c->pc)
      o->pc = c->pc;
  }
}

void ag__race_barrier(ag__ck *c) {
  c->reads.n = 0;
  c->read_gen++;
}

static void race_work(ag__ck *c, const ag_tile_node *at, int64_t units) {
  /* at least 2^20 (a few ms): one enumeration of a write against itself
   * costs block size x width, so a small --max-steps is hit as a statement
   * limit, not here */
  int64_t budget = 32 * (c->opts->max_steps > 0 ? c->opts->max_steps : AG_TILE_MAX_STEPS);
  if (budget < ((int64_t)1 << 20))
    budget = (int64_t)1 << 20;
  c->race_work += units;
  if (c->race_work > budget)
    ag__ck_stop(c, at, 1,
                 "checking data races takes more than %lld steps (shared reads and writes of "
                 "the same bytes in long barrier intervals); add the barriers the kernel needs "
                 "or raise the limit with --max-steps (32 steps per statement, at least 2^20)",
                 (long long)budget);
}

/* 1 when, for every thread, the bytes the later access w touches are
 * touched by the earlier one r of no other thread (decided by enumerating
 * the block); 0 when some may be, or when the addresses or guards depend on
 * more than the thread index. */
static int enum_race_free(ag__ck *c, const ag__rrec *r, const ag__rrec *w, int *found) {
  int64_t lo = r->lo, span = r->hi - r->lo;
  if (span <= 0 || span > c->sbufs.v[r->buf].size)
    return 0;
  /* the work: the bytes each access's threads touch (a copy one thread
   * issues, such as a TMA box, costs its width once) */
  int64_t nr = 0, nw = 0;
  for (int64_t t = 0; t < c->nthreads; t++) {
    nr += ag__beval_tid(r->guard, t) != 0;
    nw += ag__beval_tid(w->guard, t) != 0;
  }
  race_work(c, w->at, span + 2 * c->nthreads + nr * r->width + nw * w->width);
  int32_t *reader = ag_calloc((size_t)span, sizeof *reader);
  if (!reader)
    ag__ck_oom(c);
  int free_ = 0;
  for (int64_t b = 0; b < span; b++)
    reader[b] = -1; /* nobody; t: only thread t; -2: several threads */
  for (int64_t t = 0; t < c->nthreads; t++) {
    int g = ag__beval_tid(r->guard, t);
    int64_t a;
    if (g < 0 || (g && ag__xeval_tid(r->addr, t, &a)))
      goto out;
    for (int j = 0; g && j < r->width; j++) {
      int64_t b = a + j - lo;
      if (b < 0 || b >= span)
        goto out;
      reader[b] = reader[b] == -1 || reader[b] == t ? (int32_t)t : -2;
    }
  }
  for (int64_t t = 0; t < c->nthreads; t++) {
    int g = ag__beval_tid(w->guard, t);
    int64_t a;
    if (g < 0 || (g && ag__xeval_tid(w->addr, t, &a)))
      goto out;
    for (int j = 0; g && j < w->width; j++) {
      int64_t b = a + j - lo;
      if (b >= 0 && b < span && (reader[b] == -2 || (reader[b] >= 0 && reader[b] != t))) {
        *found = 1; /* two threads meet this byte: a race, whatever the solver says */
        goto out;
      }
    }
  }
  free_ = 1;
out:
  ag_free(reader);
  return free_;
}

/* 1 when every thread of guard x is one of guard y's (syntactically: y is
 * true, x itself, or a conjunct of x) */
static int bx_same(const ag__bx *x, const ag__bx *y) {
  if (x == y)
    return 1;
  if (!x || !y || x->k != y->k)
    return 0;
  switch (x->k) {
  case BX_CONST: return x->value == y->value;
  case BX_CMP: return x->op == y->op && x->a == y->a && x->b == y->b;
  default: return bx_same(x->x, y->x) && bx_same(x->y, y->y);
  }
}
static int implies(const ag__bx *x, const ag__bx *y) {
  if (!y || bx_same(x, y))
    return 1;
  return x && x->k == BX_AND && (implies(x->x, y) || implies(x->y, y));
}

int ag__bx_implies(const ag__bx *x, const ag__bx *y) { return implies(x, y); }

int ag__wrec_msettled(const ag__wrec *w, int64_t reader, int64_t pc) {
  for (const ag__mset *m = w->mset; m; m = m->next)
    if (m->pc < pc && (!m->guard || (reader >= 0 && ag__beval_tid(m->guard, reader) == 1)))
      return 1;
  return 0;
}

int ag__race_mbar_ordered(ag__ck *c, const ag__rrec *r, const ag__rrec *l) {
  if (r->write && r->wrec && !l->write) {
    /* a bulk copy, read by threads that each waited on its phase */
    for (const ag__mset *m = c->wrecs.v[r->wrec - 1].mset; m; m = m->next)
      if (m->pc < l->pc && implies(l->guard, m->guard))
        return 1;
  }
  /* every thread of r arrived after r (a release: all threads, or a role's
   * threads of a warp-specialized kernel), and l's threads waited for that
   * phase before l (an acquire); a wgmma's read still in flight (l comes
   * before the wgmma_wait that retires it) is released by no arrive */
  if (r->inflight)
    return 0;
  for (size_t i = 0; i < c->msyncs.n; i++) {
    const ag__msync *a = &c->msyncs.v[i];
    if (a->wait || a->pc <= r->pc || a->pc >= l->pc || !implies(r->guard, a->guard))
      continue;
    for (size_t j = i + 1; j < c->msyncs.n; j++) {
      const ag__msync *w = &c->msyncs.v[j];
      if (w->wait && w->bar == a->bar && w->pc > a->pc && w->pc < l->pc && w->phase > a->phase &&
          implies(l->guard, w->guard))
        return 1;
    }
  }
  return 0;
}

/* Pairs the earlier access r with the later one; *copy: the later one's
 * record for the obligations (made once). 1 when decided race-free here. */
static int pair_one(ag__ck *c, const ag__rrec *r, const ag__rrec *later, const ag__rrec **copy) {
  race_work(c, later->at, 1);
  if ((!r->write && !later->write) || r->buf != later->buf || r->hi <= later->lo ||
      r->lo >= later->hi)
    return 1;
  if (r != later && c->msyncs.n && ag__race_mbar_ordered(c, r, later)) {
    int si = ag__ck_stmt(c, later->write ? later->at : r->at);
    c->asserts.v[si].race = 1; /* its entry, proved */
    return 1;
  }
  const ag_tile_node *wat = later->write ? later->at : r->at; /* the write's entry */
  int stmt = ag__ck_stmt(c, wat);
  c->asserts.v[stmt].race = 1;
  /* the enumeration's verdict depends on the two addresses, widths and
   * guards only: a pair found race-free once (another iteration of an
   * unrolled loop) is not enumerated again (keys no interval has) */
  struct {
    int64_t gen;
    const void *ra, *rg, *la, *lg;
    int32_t buf, rw, lw, kinds;
  } key;
  memset(&key, 0, sizeof key);
  key.gen = -2;
  key.ra = r->addr;
  key.rg = r->guard;
  key.la = later->addr;
  key.lg = later->guard;
  key.buf = r->buf;
  key.rw = r->width;
  key.lw = later->width;
  key.kinds = r->write * 2 + later->write;
  if (ag_map_has(&c->read_seen, &key, sizeof key))
    return 1;
  /* the two statements already race (found by enumeration): the write's
   * entry is violated; more instances of the pair add nothing but work (a
   * broken ring pairs every stage access with every refill) */
  struct {
    int64_t tag, gen; /* gen: an abandoned summary attempt's pairs do not count */
    const void *ra, *la;
  } skey = {-3, c->read_gen, r->at, later->at};
  if (ag_map_has(&c->read_seen, &skey, sizeof skey))
    return 0;
  int found = 0;
  if (enum_race_free(c, r, later, &found)) {
    if (ag_map_put(&c->read_seen, &key, sizeof key, (void *)1))
      ag__ck_oom(c);
    return 1;
  }
  int64_t max_writes = c->opts->max_writes ? c->opts->max_writes : AG_TILE_MAX_WRITES;
  if (found && ag_map_put(&c->read_seen, &skey, sizeof skey, (void *)1))
    ag__ck_oom(c);
  if (++c->race_obligs > max_writes)
    ag__ck_stop(c, later->at, 1,
                 "more than %lld pairs of shared accesses by different threads of the same "
                 "bytes in one barrier interval (one of them a write) to prove race-free; "
                 "add the barriers the kernel needs or raise the limit with --max-writes",
                 (long long)max_writes);
  if (!*copy) {
    ag__rrec *cw = ag__ck_alloc(c, sizeof *cw);
    *cw = *later;
    *copy = cw;
  }
  ag__rrec *cr = ag__ck_alloc(c, sizeof *cr);
  *cr = *r;
  ag__oblig o;
  memset(&o, 0, sizeof o);
  o.k = OB_RACE;
  o.at = wat;
  o.stmt = stmt;
  o.rr = cr;
  o.rw = *copy;
  o.nloops = (int)c->loops.n;
  o.loops = ag__ck_alloc(c, (size_t)(o.nloops ? o.nloops : 1) * sizeof *o.loops);
  ag__mcpy(o.loops, c->loops.v, (size_t)o.nloops * sizeof *o.loops);
  if (ag_vec_push(&c->obligs, o))
    ag__ck_oom(c);
  return 0;
}

/* Pairs the later access with every remembered one it may race with. */
static void pair_all(ag__ck *c, const ag__rrec *later) {
  const ag__rrec *copy = NULL;
  for (size_t i = 0; i < c->reads.n; i++)
    pair_one(c, &c->reads.v[i], later, &copy);
}

void ag__race_write(ag__ck *c, const ag__wrec *w) {
  ag__rrec r;
  access_rec(c, &r, w->at, w->buf, w->addr, w->width, w->guard, 1);
  r.pc = w->pc; /* the write's time and bounds (interp.c, loop.c) */
  r.epoch = w->epoch;
  r.lo = w->lo;
  r.hi = w->hi;
  r.wrec = (int)(w - c->wrecs.v) + 1; /* its mbarrier, if any, may come later (cp.async) */
  /* a summary's replayed iteration: its pairs are the checked one's, but
   * its writes stay for the checked iteration's accesses */
  if (!c->replay) {
    pair_all(c, &r); /* write-after-read, write-after-write */
    /* two threads of this write meet a byte: a property of its address,
     * width and guard alone, so one found race-free is not enumerated again
     * (a key no interval has: generation -1) */
    access_key key = key_of(-1, &r, 2);
    const ag__rrec *copy = NULL;
    if (ag_map_has(&c->read_seen, &key, sizeof key)) {
      int si = ag__ck_stmt(c, r.at); /* may grow c->asserts: index it after the call */
      c->asserts.v[si].race = 1;     /* its entry, proved */
    } else if (pair_one(c, &r, &r, &copy) && ag_map_put(&c->read_seen, &key, sizeof key, (void *)1))
      ag__ck_oom(c);
  }
  remember(c, &r);
}
