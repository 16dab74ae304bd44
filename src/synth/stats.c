/*
 * stats.c — scopes and per-region statistics over decoded occurrences.
 *
 * A scope is a conjunction of coordinate ranges (launch, SM, CTA, warp,
 * iteration) and a role name. Statistics: count, total, mean, nearest-rank
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

static int parse_u64(const char *s, size_t n, uint64_t *out) {
  if (!n || n > 20)
    return -1;
  char buf[24];
  memcpy(buf, s, n);
  buf[n] = 0;
  if (buf[0] == '-' || buf[0] == '+')
    return -1;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(buf, &end, 10);
  if (errno || *end)
    return -1;
  *out = v;
  return 0;
}

int ag_scope_parse(const char *text, ag_scope *s, ag_str *err) {
  memset(s, 0, sizeof *s);
  if (!text)
    return 0;
  const char *p = text;
  while (*p) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    const char *eq = memchr(p, '=', n);
    if (!eq) {
      ag_str_printf(err, "scope term '%.*s' is not key=value (keys: launch, sm, cta, warp, "
                         "iter, role)", (int)n, p);
      return AG_EPARSE;
    }
    size_t kl = (size_t)(eq - p);
    const char *v = eq + 1;
    size_t vl = n - kl - 1;
    ag_range *r = NULL;
    if (kl == 6 && !strncmp(p, "launch", 6)) r = &s->launch;
    else if (kl == 2 && !strncmp(p, "sm", 2)) r = &s->sm;
    else if (kl == 3 && !strncmp(p, "cta", 3)) r = &s->cta;
    else if (kl == 4 && !strncmp(p, "warp", 4)) r = &s->warp;
    else if (kl == 4 && !strncmp(p, "iter", 4)) r = &s->iter;
    else if (kl == 4 && !strncmp(p, "role", 4)) {
      if (!vl) {
        ag_str_puts(err, "scope 'role=' needs a role name");
        return AG_EPARSE;
      }
      if (vl >= sizeof s->role) {
        ag_str_puts(err, "scope role name is too long");
        return AG_EPARSE;
      }
      memcpy(s->role, v, vl);
      s->role[vl] = 0;
    } else {
      ag_str_printf(err, "unknown scope key '%.*s' (keys: launch, sm, cta, warp, iter, role)",
                    (int)kl, p);
      return AG_EPARSE;
    }
    if (r) {
      if (r->set) {
        ag_str_printf(err, "scope key '%.*s' given twice", (int)kl, p);
        return AG_EPARSE;
      }
      const char *colon = memchr(v, ':', vl);
      uint64_t lo, hi;
      if (colon) {
        if (parse_u64(v, (size_t)(colon - v), &lo) ||
            parse_u64(colon + 1, vl - (size_t)(colon - v) - 1, &hi) || hi <= lo) {
          ag_str_printf(err, "scope '%.*s': expected a range a:b of whole numbers with a < b",
                        (int)n, p);
          return AG_EPARSE;
        }
      } else {
        if (parse_u64(v, vl, &lo)) {
          ag_str_printf(err, "scope '%.*s': expected a whole number or a range a:b", (int)n,
                        p);
          return AG_EPARSE;
        }
        hi = lo + 1;
      }
      r->set = 1;
      r->lo = lo;
      r->hi = hi;
    }
    p = e ? e + 1 : p + n;
  }
  return 0;
}

static int in(const ag_range *r, uint64_t v) { return !r->set || (v >= r->lo && v < r->hi); }

int ag_scope_match(const ag_scope *s, const ag_evidence *ev, const ag_occ *o) {
  if (!in(&s->launch, o->launch) || !in(&s->sm, o->sm) || !in(&s->cta, o->cta) ||
      !in(&s->warp, o->warp))
    return 0;
  if (s->iter.set && (o->iter == AG_EV_NO_ITER || !in(&s->iter, o->iter)))
    return 0;
  if (s->role[0] && (o->role < 0 || strcmp(ev->roles[o->role], s->role) != 0))
    return 0;
  return 1;
}

json_t *ag_scope_to_json(const ag_scope *s) {
  json_t *j = json_object();
  const ag_range *rs[] = {&s->launch, &s->sm, &s->cta, &s->warp, &s->iter};
  const char *ks[] = {"launch", "sm", "cta", "warp", "iter"};
  for (int i = 0; i < 5; i++)
    if (rs[i]->set)
      json_object_set_new(j, ks[i], json_pack("[I,I]", (json_int_t)rs[i]->lo,
                                              (json_int_t)rs[i]->hi));
  if (s->role[0])
    json_object_set_new(j, "role", json_string(s->role));
  return j;
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
