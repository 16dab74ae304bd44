/*
 * race.c — write-after-read races on shared memory: a write by one thread
 * that may overtake another thread's earlier read of the same bytes, because
 * no barrier lies between the read and the write (the commonest pipeline
 * bug: a stage buffer refilled without the trailing syncthreads()).
 *
 * The interpreter reports every shared read (a load, an ldmatrix row; not a
 * tag() observation) and every shared write (a store, a cp.async copy, at
 * its issue). Reads are kept until the next barrier only, since a barrier
 * orders every read before it against every write after it. Each write is
 * paired with the remembered reads of its buffer whose byte ranges may meet
 * it; a pair whose addresses and guards depend on the thread index only is
 * decided here by enumerating the block (no reader of a byte the write
 * touches other than the writing thread itself: race-free); any other pair
 * becomes an OB_RACE obligation that smt.c decides (some reader t and
 * writer t' != t whose bytes meet) and turns into a counterexample naming
 * both threads and both statements.
 *
 * Load: a few pairs per write in real kernels (reads and writes of a stage
 * are separated by barriers); each enumeration costs block size x access
 * width. A read the interval already holds (same buffer, address, width
 * and guard, e.g. from another loop iteration) is kept once. The work (pairs
 * scanned, bytes enumerated) is bounded by 32 x --max-steps, and the race
 * obligations by --max-writes; past either, the check stops with an error
 * naming the limit.
 */
#include "check_int.h"

#include <string.h>

void ag__race_read(ag__ck *c, const ag_tile_node *at, int buf, const ag_expr *addr, int width,
                   const ag__bx *guard) {
  if (c->ghost)
    return;
  struct {
    int64_t gen;
    const void *addr, *guard;
    int32_t buf, width;
  } key;
  memset(&key, 0, sizeof key);
  /* not the epoch: a loop summary restores the epoch and the list of reads
   * (loop.c), and a key of an abandoned attempt would hide the read */
  key.gen = c->read_gen;
  key.addr = addr;
  key.guard = guard;
  key.buf = buf;
  key.width = width;
  if (ag_map_has(&c->read_seen, &key, sizeof key))
    return; /* the same bytes read by the same threads in this interval */
  if (ag_map_put(&c->read_seen, &key, sizeof key, (void *)1))
    ag__ck_oom(c);
  ag__rrec r;
  memset(&r, 0, sizeof r);
  r.buf = buf;
  r.addr = addr;
  r.width = width;
  r.guard = guard;
  r.pc = c->pc;
  r.epoch = c->epoch;
  r.at = at;
  r.nloops = (int)c->loops.n;
  r.loops = ag__ck_alloc(c, (size_t)(r.nloops ? r.nloops : 1) * sizeof *r.loops);
  ag__mcpy(r.loops, c->loops.v, (size_t)r.nloops * sizeof *r.loops);
  int64_t lo, hi;
  if (ag__xbounds(c, addr, &lo, &hi) == 0) {
    r.lo = lo;
    r.hi = hi + width;
  } else {
    r.lo = 0;
    r.hi = c->sbufs.v[buf].size;
  }
  if (ag_vec_push(&c->reads, r))
    ag__ck_oom(c);
}

void ag__race_barrier(ag__ck *c) {
  c->reads.n = 0;
  c->read_gen++;
}

/* 1 when, for every thread, the bytes it writes are read by no other thread
 * (decided by enumerating the block); 0 when some may be, or when the
 * addresses or guards depend on more than the thread index. */
static void race_work(ag__ck *c, const ag_tile_node *at, int64_t units) {
  int64_t budget = 32 * (c->opts->max_steps > 0 ? c->opts->max_steps : AG_TILE_MAX_STEPS);
  c->race_work += units;
  if (c->race_work > budget)
    ag__ck_error(c, at,
                 "checking write-after-read races takes more than %lld steps (shared reads and "
                 "writes of the same bytes in long barrier intervals); add the barriers the "
                 "kernel needs or raise the limit with --max-steps (32 steps per statement)",
                 (long long)budget);
}

static int enum_race_free(ag__ck *c, const ag__rrec *r, const ag__wrec *w) {
  int64_t lo = r->lo, span = r->hi - r->lo;
  if (span <= 0 || span > c->sbufs.v[r->buf].size)
    return 0;
  race_work(c, w->at, span + c->nthreads * (r->width + w->width));
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
      if (b >= 0 && b < span && (reader[b] == -2 || (reader[b] >= 0 && reader[b] != t)))
        goto out;
    }
  }
  free_ = 1;
out:
  ag_free(reader);
  return free_;
}

void ag__race_write(ag__ck *c, const ag__wrec *w) {
  const ag__wrec *copy = NULL;
  if (c->replay)
    return; /* a summary's replayed iteration: its pairs are the checked one's */
  for (size_t i = 0; i < c->reads.n; i++) {
    const ag__rrec *r = &c->reads.v[i];
    race_work(c, w->at, 1);
    if (r->buf != w->buf || r->hi <= w->lo || r->lo >= w->hi)
      continue;
    int stmt = ag__ck_stmt(c, w->at);
    c->asserts.v[stmt].race = 1;
    if (enum_race_free(c, r, w))
      continue;
    int64_t max_writes = c->opts->max_writes ? c->opts->max_writes : AG_TILE_MAX_WRITES;
    if (++c->race_obligs > max_writes)
      ag__ck_error(c, w->at,
                   "more than %lld pairs of a shared write and another thread's earlier read "
                   "of the same bytes in one barrier interval to prove race-free; add the "
                   "barriers the kernel needs or raise the limit with --max-writes",
                   (long long)max_writes);
    if (!copy) {
      ag__wrec *cw = ag__ck_alloc(c, sizeof *cw);
      *cw = *w;
      copy = cw;
    }
    ag__rrec *cr = ag__ck_alloc(c, sizeof *cr);
    *cr = *r;
    ag__oblig o;
    memset(&o, 0, sizeof o);
    o.k = OB_RACE;
    o.at = w->at;
    o.stmt = stmt;
    o.rr = cr;
    o.rw = copy;
    o.nloops = (int)c->loops.n;
    o.loops = ag__ck_alloc(c, (size_t)(o.nloops ? o.nloops : 1) * sizeof *o.loops);
    ag__mcpy(o.loops, c->loops.v, (size_t)o.nloops * sizeof *o.loops);
    if (ag_vec_push(&c->obligs, o))
      ag__ck_oom(c);
  }
}
