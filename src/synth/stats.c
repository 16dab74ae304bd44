/*
 * stats.c — scopes and per-region statistics over decoded occurrences.
 *
 * A scope (argus/plan.h) is a conjunction of coordinate ranges (launch, SM,
 * CTA, warp, iteration) and a role name. Statistics: count, total, mean, nearest-rank
 * p50 and p95, min and max of durations, in cycles and in ns (each launch's
 * clock), with breakdowns by SM and by role. One pass to bucket, one sort per
 * region; 10^6 occurrences take well under a second.
 */
#include "argus/synth.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

void ag_dstats_of(double *v, size_t n, ag_dstats *o) {
  memset(o, 0, sizeof *o);
  o->count = n;
  if (!n)
    return;
  qsort(v, n, sizeof *v, cmp_dbl);
  double sum = 0;
  for (size_t i = 0; i < n; i++)
    sum += v[i];
  o->total = sum;
  o->mean = sum / (double)n;
  /* nearest rank: the smallest value with at least p*n values at or below */
  size_t r50 = (size_t)ceil(0.50 * (double)n), r95 = (size_t)ceil(0.95 * (double)n);
  o->p50 = v[(r50 ? r50 : 1) - 1];
  o->p95 = v[(r95 ? r95 : 1) - 1];
  o->min = v[0];
  o->max = v[n - 1];
}

int ag_scope_match(const ag_scope *s, const ag_evidence *ev, const ag_occ *o) {
  if (!ag_scope_contains(s, AG_SCOPE_LAUNCH, o->launch) ||
      !ag_scope_contains(s, AG_SCOPE_SM, o->sm) || !ag_scope_contains(s, AG_SCOPE_CTA, o->cta) ||
      !ag_scope_contains(s, AG_SCOPE_WARP, o->warp))
    return 0;
  if (s->dim[AG_SCOPE_ITER].n &&
      (o->iter == AG_EV_NO_ITER || !ag_scope_contains(s, AG_SCOPE_ITER, o->iter)))
    return 0;
  if (s->role[0] && (o->role < 0 || strcmp(ev->roles[o->role], s->role) != 0))
    return 0;
  return 1;
}

static double hz_of(const ag_trace *t, uint32_t launch) {
  for (int i = 0; i < t->ev->nlaunches; i++)
    if (t->ev->launches[i].launch == launch)
      return t->clocks[i].hz;
  return t->ev->sm_hz;
}

/* Breakdown by SM or by role: counting sort on the key, then statistics of
 * each key's slice. O(n + keys). */
static int group_stats(const ag_trace *t, const size_t *idx, size_t n, int by_sm,
                       ag_group_stats **out, int *nout) {
  *out = NULL;
  *nout = 0;
  /* keys: SM number, or role index + 1 (0 = no role) */
  size_t maxk = 0;
  for (size_t i = 0; i < n; i++) {
    const ag_occ *o = &t->occ[idx[i]];
    size_t k = by_sm ? o->sm : (size_t)(o->role + 1);
    if (k > maxk)
      maxk = k;
  }
  double *v = ag_malloc((n ? n : 1) * sizeof *v);
  size_t *pos = ag_calloc(maxk + 2, sizeof *pos);
  ag_group_stats *g = NULL;
  int ng = 0;
  if (!v || !pos)
    goto oom;
  for (size_t i = 0; i < n; i++) {
    const ag_occ *o = &t->occ[idx[i]];
    pos[(by_sm ? o->sm : (size_t)(o->role + 1)) + 1]++;
  }
  for (size_t k = 0; k <= maxk; k++) {
    ng += pos[k + 1] != 0;
    pos[k + 1] += pos[k];
  }
  if (!(g = ag_calloc((size_t)ng + 1, sizeof *g)))
    goto oom;
  for (size_t i = 0; i < n; i++) {
    const ag_occ *o = &t->occ[idx[i]];
    size_t k = by_sm ? o->sm : (size_t)(o->role + 1);
    v[pos[k]++] = (double)(o->end - o->start) * 1e9 / hz_of(t, o->launch);
  }
  /* pos[k] now holds the end of key k's slice */
  ng = 0;
  size_t begin = 0;
  for (size_t k = 0; k <= maxk; k++) {
    size_t end = pos[k];
    if (end > begin) {
      g[ng].key = by_sm ? (int)k : (int)k - 1;
      ag_dstats_of(v + begin, end - begin, &g[ng].ns);
      ng++;
    }
    begin = end;
  }
  ag_free(v);
  ag_free(pos);
  *out = g;
  *nout = ng;
  return 0;
oom:
  ag_free(v);
  ag_free(pos);
  ag_free(g);
  return AG_ENOMEM;
}

int ag_trace_stats(const ag_trace *t, const ag_scope *scope, const int *only, int n_only,
                   ag_region_stats **out, int *nout) {
  *out = NULL;
  *nout = 0;
  const ag_evidence *ev = t->ev;
  int nreg = ev->nregions;
  AG_VEC(size_t) *per = ag_calloc((size_t)nreg + 1, sizeof *per);
  ag_region_stats *rs = ag_calloc((size_t)nreg + 1, sizeof *rs);
  int rc = 0, n = 0;
  if (!per || !rs) {
    rc = AG_ENOMEM;
    goto out;
  }
  for (size_t i = 0; i < t->nocc; i++) {
    const ag_occ *o = &t->occ[i];
    if (scope && !ag_scope_match(scope, ev, o))
      continue;
    if (ag_vec_push(&per[o->region], i)) {
      rc = AG_ENOMEM;
      goto out;
    }
  }
  for (int r = 0; r < nreg; r++) {
    int want = !only;
    for (int k = 0; only && k < n_only; k++)
      want |= only[k] == r;
    if (!want || (!only && per[r].n == 0))
      continue;
    ag_region_stats *s = &rs[n++];
    s->region = r;
    size_t m = per[r].n;
    double *cyc = ag_malloc((m ? m : 1) * sizeof *cyc);
    double *ns = ag_malloc((m ? m : 1) * sizeof *ns);
    if (!cyc || !ns) {
      ag_free(cyc);
      ag_free(ns);
      rc = AG_ENOMEM;
      goto out;
    }
    for (size_t i = 0; i < m; i++) {
      const ag_occ *o = &t->occ[per[r].v[i]];
      cyc[i] = (double)(o->end - o->start);
      ns[i] = cyc[i] * 1e9 / hz_of(t, o->launch);
    }
    ag_dstats_of(cyc, m, &s->cycles);
    ag_dstats_of(ns, m, &s->ns);
    ag_free(cyc);
    ag_free(ns);
    if ((rc = group_stats(t, per[r].v, m, 1, &s->by_sm, &s->nsm)) ||
        (rc = group_stats(t, per[r].v, m, 0, &s->by_role, &s->nrole)))
      goto out;
  }
out:
  if (per)
    for (int r = 0; r < nreg; r++)
      ag_vec_free(&per[r]);
  ag_free(per);
  if (rc) {
    ag_region_stats_free(rs, n);
    return rc;
  }
  *out = rs;
  *nout = n;
  return 0;
}

void ag_region_stats_free(ag_region_stats *s, int n) {
  if (!s)
    return;
  for (int i = 0; i < n; i++) {
    ag_free(s[i].by_sm);
    ag_free(s[i].by_role);
  }
  ag_free(s);
}
