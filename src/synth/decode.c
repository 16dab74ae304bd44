/*
 * decode.c — raw trace records to region occurrences.
 *
 * A warp's records are in the order its regions began (one lane wrote them;
 * a role record when its marker ran, an async probe's record right after
 * its end): each holds the low 32 bits of the begin and end clocks. 64-bit
 * times are restored by unwrapping each record's first clock from the
 * previous one (from the warp's 64-bit entry anchor on), the other from it;
 * the exit anchor checks that no gap reached 2^32 cycles. A region record
 * whose second half was never written began and did not end (lane 0 did not
 * run the end marker, or the kernel faulted in the region): an anomaly.
 * Occurrences are then sorted by begin and nested with a stack: each must
 * lie inside the innermost open one (crossing regions are anomalies), which
 * gives each its depth. Role records set the warp's role for occurrences
 * that begin after them. The kernel is a root occurrence from the warp's
 * entry anchor to its exit anchor.
 * Everything that breaks the picture is an anomaly line naming the launch,
 * CTA and warp: a full buffer (and from which cycle on occurrences are
 * missing), occurrences that never ended, crossing regions, ambiguous
 * timestamps, warps that never exited, warps whose lanes made different
 * numbers of records.
 *
 * Time line: each launch's clock (anchors when warps span >= 20 us, else the
 * session's calibration); per (launch, SM) an offset from the warps'
 * (%clock64, %globaltimer) anchor pairs maps cycles to globaltimer ns, so
 * occurrences on different SMs line up. ~10^7 records per second.
 */
#include "argus/synth.h"

#include "argus/demangle.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ANOMALY_LINES 200

typedef struct wocc {
  int region;
  uint32_t iter;
  uint64_t begin, end;
} wocc;

typedef struct role_at {
  uint64_t t;
  int role;
} role_at;

static int cmp_wocc(const void *a, const void *b) {
  const wocc *x = a, *y = b;
  if (x->begin != y->begin)
    return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end)
    return x->end > y->end ? -1 : 1; /* outer first */
  return x->region - y->region;
}

static void anomaly(ag_trace *t, const char *fmt, ...) AG_PRINTF(2, 3);
static void anomaly(ag_trace *t, const char *fmt, ...) {
  t->nanomalies++;
  if (t->nanomalies > MAX_ANOMALY_LINES) {
    if (t->nanomalies == MAX_ANOMALY_LINES + 1)
      ag_str_puts(&t->anomalies, "(further anomalies are counted, not listed)\n");
    return;
  }
  va_list ap;
  va_start(ap, fmt);
  ag_str_vprintf(&t->anomalies, fmt, ap);
  va_end(ap);
  ag_str_putc(&t->anomalies, '\n');
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int push_occ(ag_trace *t, size_t *cap, const ag_occ *o) {
  if (t->nocc == *cap) {
    size_t nc = *cap ? *cap * 2 : 1024;
    ag_occ *n = ag_realloc(t->occ, nc * sizeof *n);
    if (!n)
      return AG_ENOMEM;
    t->occ = n;
    *cap = nc;
  }
  t->occ[t->nocc++] = *o;
  return 0;
}

/* Probe records are few (one per warp that ran the probed instance): the
 * array grows to 16, then doubles whenever its count is a power of two. */
static int push_probe(ag_trace *t, const ag_probe_rec *p) {
  size_t n = t->nprobes;
  if (n == 0 || (n >= 16 && (n & (n - 1)) == 0)) {
    ag_probe_rec *v = ag_realloc(t->probes, (n ? 2 * n : 16) * sizeof *v);
    if (!v)
      return AG_ENOMEM;
    t->probes = v;
  }
  t->probes[t->nprobes++] = *p;
  return 0;
}

static int root_of(const ag_evidence *ev, const char *kernel) {
  for (int i = 0; i < ev->nregions; i++)
    if (ev->regions[i].root && !strcmp(ev->regions[i].function, kernel))
      return i;
  return -1;
}

/* 1 when a warp lived 2^32 cycles or more (by its globaltimer span and the
 * session's calibrated clock, which does not depend on the anchors): the
 * probe rebuilds its 64-bit entry anchors from their low words, so they and
 * its timestamps are then ambiguous. The span itself is good to 2^32 ns
 * (4.3 s); 2 % of margin covers the calibration. */
static int long_lived(const ag_evidence *ev, const ag_ev_meta *m) {
  return (double)(m->gtime_exit - m->gtime_entry) * ev->sm_hz / 1e9 >= 0.98 * 4294967296.0;
}

/* The launch's clock: the median over warps of cycles per globaltimer ns
 * between the entry and exit anchors, when the median span is long enough
 * that the 32 ns timer step is under 0.2 %; otherwise the calibration. */
static int launch_clock(const ag_evidence *ev, const ag_ev_launch *L, ag_launch_clock *c) {
  double *hz = ag_malloc(((size_t)L->warps + 1) * sizeof *hz);
  double *span = ag_malloc(((size_t)L->warps + 1) * sizeof *span);
  if (!hz || !span) {
    ag_free(hz);
    ag_free(span);
    return AG_ENOMEM;
  }
  size_t n = 0;
  for (uint32_t w = 0; w < L->warps; w++) {
    const ag_ev_meta *m = &L->meta[w];
    if (!(m->flags & AG_EV_EXITED) || m->gtime_exit <= m->gtime_entry ||
        m->clock_exit <= m->clock_entry || long_lived(ev, m))
      continue;
    span[n] = (double)(m->gtime_exit - m->gtime_entry);
    hz[n] = (double)(m->clock_exit - m->clock_entry) * 1e9 / span[n];
    n++;
  }
  c->hz = ev->sm_hz;
  c->source = "calibration";
  c->anchor_hz = 0;
  c->span_ns = 0;
  if (n) {
    qsort(span, n, sizeof *span, cmp_dbl);
    c->span_ns = span[n / 2];
    if (c->span_ns >= 20000.0) {
      qsort(hz, n, sizeof *hz, cmp_dbl);
      c->anchor_hz = hz[n / 2];
      if (c->span_ns >= 20000.0 * 1.0 && c->anchor_hz > 1e6) {
        c->hz = c->anchor_hz;
        c->source = "anchors";
      }
    }
  }
  ag_free(hz);
  ag_free(span);
  return 0;
}

static int decode_launch(ag_trace *t, int li, size_t *cap) {
  const ag_evidence *ev = t->ev;
  const ag_ev_launch *L = &ev->launches[li];
  ag_launch_clock *clk = &t->clocks[li];
  int rc = launch_clock(ev, L, clk);
  if (rc)
    return rc;
  double ns_per_cycle = 1e9 / clk->hz;
  /* per-SM offsets: mean of (gtime - clock * ns_per_cycle) over anchors */
  uint32_t maxsm = 0;
  for (uint32_t w = 0; w < L->warps; w++)
    if ((L->meta[w].flags & AG_EV_EXITED) && L->meta[w].smid > maxsm)
      maxsm = L->meta[w].smid;
  if (maxsm > 1u << 16)
    maxsm = 1u << 16;
  double *off = ag_calloc((size_t)maxsm + 1, sizeof *off);
  uint32_t *noff = ag_calloc((size_t)maxsm + 1, sizeof *noff);
  AG_VEC(wocc) stack = {0};
  AG_VEC(wocc) occ = {0};
  AG_VEC(role_at) roles = {0};
  if (!off || !noff) {
    rc = AG_ENOMEM;
    goto out;
  }
  double t_first = INFINITY;
  for (uint32_t w = 0; w < L->warps; w++) {
    const ag_ev_meta *m = &L->meta[w];
    if (!(m->flags & AG_EV_EXITED) || m->smid > maxsm)
      continue;
    off[m->smid] += (double)m->gtime_entry - (double)m->clock_entry * ns_per_cycle;
    off[m->smid] += (double)m->gtime_exit - (double)m->clock_exit * ns_per_cycle;
    noff[m->smid] += 2;
    if ((double)m->gtime_entry < t_first)
      t_first = (double)m->gtime_entry;
  }
  for (uint32_t s = 0; s <= maxsm; s++)
    if (noff[s])
      off[s] /= noff[s];
  int root = root_of(ev, L->kernel);
  if (root < 0) {
    char name[512];
    ag_demangle_path(L->kernel, name, sizeof name);
    anomaly(t, "launch %u: kernel '%s' is not in the probe table; its root region is not "
               "reported",
            L->launch, name);
  }
  for (uint32_t w = 0; w < L->warps; w++) {
    const ag_ev_meta *m = &L->meta[w];
    uint32_t cta = w / L->warps_per_cta, warp = w % L->warps_per_cta;
    if (!(m->flags & AG_EV_EXITED)) {
      anomaly(t, "launch %u cta %u warp %u: the warp never reached an exit; its records "
                 "(if any) are not decoded",
              L->launch, cta, warp);
      continue;
    }
    if (long_lived(ev, m))
      anomaly(t, "launch %u cta %u warp %u: the warp ran for %.2f s, 2^32 cycles or more: "
                 "its entry anchor and timestamps are ambiguous",
              L->launch, cta, warp, (double)(m->gtime_exit - m->gtime_entry) / 1e9);
    if (m->launch != L->launch)
      anomaly(t, "launch %u cta %u warp %u: the warp saw launch index %u in its descriptor "
                 "(launches overlapped on different streams?)",
              L->launch, cta, warp, m->launch);
    if (m->max_count > m->count) {
      t->divergent_warps++;
      anomaly(t, "launch %u cta %u warp %u: lanes made up to %u records but lane 0 made "
                 "%u; regions under divergent control flow are missing",
              L->launch, cta, warp, m->max_count, m->count);
    }
    double base = m->smid <= maxsm ? off[m->smid] - t_first : 0.0;
    uint64_t n = L->first[w + 1] - L->first[w];
    const ag_ev_record *r = L->records + L->first[w];
    /* unwrap: records are in the order they were taken, each at its first
     * clock (a probe's: its end) */
    uint64_t prev = m->clock_entry;
    occ.n = roles.n = 0;
    for (uint64_t j = 0; j < n; j++) {
      const ag_ev_site *s = &ev->sites[r[j].site];
      uint32_t len = r[j].end - r[j].begin;
      uint64_t b, e;
      if (s->kind == AG_SITE_ASYNC) {
        e = prev + (uint32_t)(r[j].end - (uint32_t)prev);
        b = e - len;
        prev = e;
      } else {
        b = prev + (uint32_t)(r[j].begin - (uint32_t)prev);
        e = b + len;
        prev = b;
      }
      if (s->kind == AG_SITE_ROLE) {
        if ((rc = ag_vec_push(&roles, ((role_at){e, s->role}))))
          goto out;
        continue;
      }
      if (s->kind == AG_SITE_ASYNC) {
        ag_probe_rec pr = {(int)r[j].site, L->launch, m->smid, cta, warp, ag_ev_record_iter(&r[j]), b, e};
        if ((rc = push_probe(t, &pr)))
          goto out;
        continue;
      }
      if (!ag_ev_record_ended(&r[j])) {
        t->unended++;
        anomaly(t, "launch %u cta %u warp %u: '%s' began at cycle %" PRIu64 " (%.1f us into "
                   "the warp) and never ended: lane 0 did not run its end marker (divergent "
                   "control flow), or the kernel faulted in the region",
                L->launch, cta, warp, ev->regions[s->region].qname, b,
                (double)(b - m->clock_entry) * ns_per_cycle / 1e3);
        continue;
      }
      if (b < m->clock_entry) {
        t->nesting_errors++;
        anomaly(t, "launch %u cta %u warp %u: record %" PRIu64 " of '%s' begins before the "
                   "warp entered; the record is damaged",
                L->launch, cta, warp, j, ev->regions[s->region].qname);
        continue;
      }
      if ((rc = ag_vec_push(&occ, ((wocc){s->region, ag_ev_record_iter(&r[j]), b, e}))))
        goto out;
    }
    uint64_t exit_unwrapped = prev + (uint32_t)((uint32_t)m->clock_exit - (uint32_t)prev);
    if (exit_unwrapped != m->clock_exit)
      anomaly(t, "launch %u cta %u warp %u: %" PRIu64 " cycles are missing between the "
                 "records and the exit anchor: the warp spent 2^32 cycles or more between "
                 "two records, so its timestamps are ambiguous",
              L->launch, cta, warp, m->clock_exit - exit_unwrapped);
    if (m->count > L->cap) {
      uint64_t lost = m->count - L->cap;
      t->dropped += lost;
      anomaly(t, "launch %u cta %u warp %u: trace buffer full (%u records): %" PRIu64
                 " records were dropped; every occurrence that began after cycle %" PRIu64
                 " (%.1f us into the warp) is missing",
              L->launch, cta, warp, L->cap, lost, prev,
              (double)(prev - m->clock_entry) * ns_per_cycle / 1e3);
    }
    if (root >= 0) {
      ag_occ o = {root, -1, L->launch, m->smid, cta, warp, AG_EV_NO_ITER, 0,
                  m->clock_entry, m->clock_exit,
                  (double)m->clock_entry * ns_per_cycle + base};
      if ((rc = push_occ(t, cap, &o)))
        goto out;
    }
    /* nesting: by begin, outer first; each must lie in the innermost open */
    if (occ.n)
      qsort(occ.v, occ.n, sizeof *occ.v, cmp_wocc);
    stack.n = 0;
    for (size_t k = 0; k < occ.n; k++) {
      const wocc *c = &occ.v[k];
      while (stack.n && stack.v[stack.n - 1].end <= c->begin)
        stack.n--;
      if (stack.n && c->end > stack.v[stack.n - 1].end) {
        t->nesting_errors++;
        anomaly(t, "launch %u cta %u warp %u: '%s' (cycles %" PRIu64 "..%" PRIu64
                   ") crosses '%s' (%" PRIu64 "..%" PRIu64 ")",
                L->launch, cta, warp, ev->regions[c->region].qname, c->begin, c->end,
                ev->regions[stack.v[stack.n - 1].region].qname, stack.v[stack.n - 1].begin,
                stack.v[stack.n - 1].end);
      }
      int role = -1;
      for (size_t q = 0; q < roles.n; q++) /* the latest role set before the begin */
        if (roles.v[q].t <= c->begin)
          role = roles.v[q].role;
      /* a region without its own iteration inherits the one of the
       * occurrence it lies in (scopes select nested regions by the
       * iteration they run in); one that crosses it inherits nothing */
      wocc me = *c;
      if (me.iter == AG_EV_NO_ITER && stack.n && c->end <= stack.v[stack.n - 1].end)
        me.iter = stack.v[stack.n - 1].iter;
      ag_occ o = {c->region, role, L->launch, m->smid, cta, warp, me.iter,
                  (uint32_t)stack.n + 1, c->begin, c->end,
                  (double)c->begin * ns_per_cycle + base};
      if ((rc = push_occ(t, cap, &o)) || (rc = ag_vec_push(&stack, me)))
        goto out;
    }
  }
out:
  ag_free(off);
  ag_free(noff);
  ag_vec_free(&stack);
  ag_vec_free(&occ);
  ag_vec_free(&roles);
  return rc;
}

int ag_trace_decode(const ag_evidence *ev, ag_trace **out) {
  *out = NULL;
  ag_trace *t = ag_calloc(1, sizeof *t);
  if (!t)
    return AG_ENOMEM;
  t->ev = ev;
  ag_str_init(&t->anomalies);
  t->clocks = ag_calloc((size_t)ev->nlaunches + 1, sizeof *t->clocks);
  if (!t->clocks) {
    ag_trace_free(t);
    return AG_ENOMEM;
  }
  size_t cap = 0;
  for (int i = 0; i < ev->nlaunches; i++) {
    int rc = decode_launch(t, i, &cap);
    if (rc) {
      ag_trace_free(t);
      return rc;
    }
  }
  if (t->anomalies.oom) {
    ag_trace_free(t);
    return AG_ENOMEM;
  }
  *out = t;
  return 0;
}

void ag_trace_free(ag_trace *t) {
  if (!t)
    return;
  ag_free(t->occ);
  ag_free(t->probes);
  ag_free(t->clocks);
  ag_str_release(&t->anomalies);
  ag_free(t);
}
