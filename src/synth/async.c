/*
 * async.c — synthesis of async_latency (docs/probes.md): per asynchronous
 * site and occurrence, the issue-to-completion latency measured by its
 * forced-completion probe (derived: the probe changed the execution), the
 * time the consumer waited for it in the reference run (exposed, observed)
 * and the hidden part, latency − exposed (derived).
 *
 * Joins are by identity, never by time across runs: a probe of (site S,
 * occurrence i) meets the reference's waits that complete S (S's done_by
 * sites from discovery) whose occurrence is i. A wait's occurrence is the
 * iteration of the innermost iterated region occurrence around it in the
 * same warp of the reference run (or, without one, its count among that
 * warp's occurrences of the wait), the same rule the probe uses for S.
 * Everything in a probe run except the probe's own records (warp spans and
 * any other record: events downstream of the forced wait) is discarded and
 * counted. Linear in the occurrences; runs once per query.
 *
 * ag_async_count: the counting run. The reference's records, per begin
 * marker of an iterated region (its probe-table line) and iteration, counted
 * over every warp of every recorded launch: which (copy, iteration) pairs
 * really ran, for the planner to drop the probes that cannot fire
 * (ag_probe_prune). n log n in the records.
 */
#include "argus/synth.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *jstr(const json_t *o, const char *k) {
  return json_string_value(json_object_get(o, k));
}

static const json_t *site_by_id(const json_t *sites, const char *op) {
  size_t i;
  json_t *s;
  json_array_foreach(sites, i, s) if (jstr(s, "op_id") && !strcmp(jstr(s, "op_id"), op)) return s;
  return NULL;
}

static int is_wait_kind(const char *k) {
  return k && (!strcmp(k, "mbarrier_wait") || !strcmp(k, "cp_async_wait") ||
               !strcmp(k, "wgmma_wait") || !strcmp(k, "bulk_wait"));
}

static double launch_hz(const ag_trace *t, uint32_t launch) {
  for (int i = 0; i < t->ev->nlaunches; i++)
    if (t->ev->launches[i].launch == launch)
      return t->clocks[i].hz;
  return t->ev->sm_hz;
}

/* The op ID a wait region stands for: "<parent region id>:<ordinal>". */
static int wait_op_of(const ag_evidence *ev, int region, char op[40]) {
  const ag_ev_region *g = &ev->regions[region];
  size_t pl = strlen(AG_EV_WAIT_PREFIX);
  if (strncmp(g->name, AG_EV_WAIT_PREFIX, pl) || g->parent < 0)
    return 0;
  char *e = NULL;
  long ord = strtol(g->name + pl, &e, 10);
  if (!e || *e || ord < 0)
    return 0;
  snprintf(op, 40, "%016llx:%ld", (unsigned long long)ev->regions[g->parent].id, ord);
  return 1;
}

/* Wait occurrences of the reference with their resolved occurrence. */
typedef struct wocc {
  int region;
  uint32_t occurrence;
  double ns;
  const ag_occ *o;
} wocc;

static int cmp_occ_warp(const void *a, const void *b) {
  const ag_occ *x = *(const ag_occ *const *)a, *y = *(const ag_occ *const *)b;
  if (x->launch != y->launch)
    return x->launch < y->launch ? -1 : 1;
  if (x->cta != y->cta)
    return x->cta < y->cta ? -1 : 1;
  if (x->warp != y->warp)
    return x->warp < y->warp ? -1 : 1;
  if (x->start != y->start)
    return x->start < y->start ? -1 : 1;
  return x->depth < y->depth ? -1 : x->depth > y->depth;
}

/* Resolves each wait occurrence's iteration from the occurrences around it
 * in its warp (sorted by warp, then begin, outer first). */
static int resolve_waits(const ag_trace *t, const char *is_wait, wocc **out, size_t *nout) {
  *out = NULL;
  *nout = 0;
  const ag_occ **v = ag_calloc(t->nocc + 1, sizeof *v);
  wocc *w = ag_calloc(t->nocc + 1, sizeof *w);
  /* per region, count of wait occurrences so far in the current warp */
  uint32_t *seen = ag_calloc((size_t)t->ev->nregions + 1, sizeof *seen);
  if (!v || !w || !seen) {
    ag_free(v);
    ag_free(w);
    ag_free(seen);
    return AG_ENOMEM;
  }
  for (size_t i = 0; i < t->nocc; i++)
    v[i] = &t->occ[i];
  qsort(v, t->nocc, sizeof *v, cmp_occ_warp);
  const ag_occ *stack[64];
  int depth = 0;
  size_t n = 0;
  for (size_t i = 0; i < t->nocc; i++) {
    const ag_occ *o = v[i];
    if (i == 0 || o->launch != v[i - 1]->launch || o->cta != v[i - 1]->cta ||
        o->warp != v[i - 1]->warp) {
      depth = 0;
      memset(seen, 0, sizeof *seen * (size_t)t->ev->nregions);
    }
    while (depth && stack[depth - 1]->end <= o->start)
      depth--;
    if (is_wait[o->region]) {
      uint32_t it = AG_EV_NO_ITER;
      for (int k = depth - 1; k >= 0 && it == AG_EV_NO_ITER; k--)
        it = stack[k]->iter;
      uint32_t cnt = seen[o->region]++;
      w[n].region = o->region;
      w[n].occurrence = it != AG_EV_NO_ITER ? it : cnt;
      w[n].ns = (double)(o->end - o->start) / launch_hz(t, o->launch) * 1e9;
      w[n].o = o;
      n++;
    }
    if (depth < 64)
      stack[depth++] = o;
  }
  ag_free(v);
  ag_free(seen);
  *out = w;
  *nout = n;
  return 0;
}

static void stats_json(json_t *o, const char *key, const ag_dstats *s, const char *qual) {
  json_object_set_new(o, key, json_pack("{s:I,s:f,s:f,s:f,s:f,s:f,s:s,s:s}", "count",
                                        (json_int_t)s->count, "mean", s->mean, "p50", s->p50,
                                        "p95", s->p95, "min", s->min, "max", s->max, "unit",
                                        "ns", "qual", qual));
}

/* A wgmma site's group (docs/probes.md, "wgmma groups"): the wgmma sites
 * closed by the same commit. Sets *last to the group's last op (the one
 * whose probe spans the whole group) and returns the group's size; 0 for a
 * site that is not a wgmma or has no commit. */
static int wgmma_group(const json_t *sites, const json_t *site, const char **last) {
  *last = NULL;
  const char *k = jstr(site, "kind");
  if (!k || strcmp(k, "wgmma"))
    return 0;
  const char *commit = NULL;
  size_t i;
  json_t *d;
  json_array_foreach(json_object_get(site, "done_by"), i, d) {
    const json_t *c = site_by_id(sites, json_string_value(d));
    if (!commit && c && jstr(c, "kind") && !strcmp(jstr(c, "kind"), "wgmma_commit"))
      commit = json_string_value(d);
  }
  if (!commit)
    return 0;
  int n = 0;
  json_int_t best = -1;
  json_t *x;
  json_array_foreach(sites, i, x) {
    int in = 0;
    size_t j;
    if (!jstr(x, "kind") || strcmp(jstr(x, "kind"), "wgmma"))
      continue;
    json_array_foreach(json_object_get(x, "done_by"), j, d) in |= !strcmp(json_string_value(d), commit);
    if (!in)
      continue;
    n++;
    json_int_t line = json_integer_value(json_object_get(x, "line"));
    if (line >= best) {
      best = line;
      *last = jstr(x, "op_id");
    }
  }
  return n;
}

/* 1 when sites a and b complete on one mbarrier phase at the same
 * iteration (docs/probes.md, "One wait, several loads"): both are loads
 * onto a barrier (TMA, bulk copy), through the same barrier operand, in the
 * same copy of the same loop (equal iterations, the begin marker's line
 * included), completed by the same waits. gemm's A and B tiles share one
 * expect_tx this way, so the consumer's wait is one instance for both. */
static int same_phase(const json_t *a, const json_t *b) {
  const char *ka = jstr(a, "kind"), *kb = jstr(b, "kind");
  int la = ka && (!strcmp(ka, "tma_load") || !strcmp(ka, "bulk_copy"));
  int lb = kb && (!strcmp(kb, "tma_load") || !strcmp(kb, "bulk_copy"));
  const json_t *ba = json_object_get(a, "barrier");
  return la && lb && json_is_object(ba) && json_equal(ba, json_object_get(b, "barrier")) &&
         json_equal(json_object_get(a, "iterations"), json_object_get(b, "iterations")) &&
         json_equal(json_object_get(a, "loop"), json_object_get(b, "loop")) &&
         json_equal(json_object_get(a, "done_by"), json_object_get(b, "done_by")) &&
         json_array_size(json_object_get(a, "done_by")) > 0 && jstr(a, "region") &&
         jstr(b, "region") && !strcmp(jstr(a, "region"), jstr(b, "region"));
}

/* 1 when some probe run measured (op, occurrence). */
static int probed(const ag_evidence *const *probes, int nprobes, const char *op, uint32_t occ) {
  for (int p = 0; p < nprobes; p++)
    for (int si = 0; si < probes[p]->nsites; si++) {
      const ag_ev_site *es = &probes[p]->sites[si];
      if (es->kind == AG_SITE_ASYNC && es->occurrence == occ && es->op_id && !strcmp(es->op_id, op))
        return 1;
    }
  return 0;
}

/* The loads whose phase site's completes on (site included, in the site
 * table's order) into covers; returns the one that reports the shared wait:
 * the first of them probed at occ. */
static const char *phase_owner(const json_t *sites, const json_t *site,
                               const ag_evidence *const *probes, int nprobes, uint32_t occ,
                               json_t *covers) {
  const char *owner = NULL;
  size_t i;
  json_t *x;
  json_array_foreach(sites, i, x) {
    if (x != site && !same_phase(site, x))
      continue;
    json_array_append_new(covers, json_string(jstr(x, "op_id")));
    if (!owner && probed(probes, nprobes, jstr(x, "op_id"), occ))
      owner = jstr(x, "op_id");
  }
  return owner ? owner : jstr(site, "op_id");
}

/* Why the waits of a site were not timed: discovery's reasons, joined. */
static void untimed_why(const json_t *sites, const json_t *wl, ag_str *out) {
  size_t i;
  json_t *d;
  ag_str_puts(out, "the reference did not time the waits of this site");
  json_array_foreach(wl, i, d) {
    const json_t *ws = site_by_id(sites, json_string_value(d));
    const char *why = jstr(json_object_get(ws, "wait"), "why");
    if (why)
      ag_str_printf(out, "; %s: %s", json_string_value(d), why);
  }
}

static void add_missing(json_t *missing, const char *what, const ag_ev_site *es,
                        const char *why) {
  char stat[128];
  snprintf(stat, sizeof stat, "%s[%s@%u]", what, es->op_id, es->occurrence);
  json_array_append_new(missing, json_pack("{s:s,s:s}", "what", stat, "why", why));
}

/* One report value: {region, signal, stat "<what>[<op>@<occurrence>]", value, unit, qual}. */
#define NEGATIVE_HIDDEN                                                                     \
  "negative: the exposed wait exceeds the latency, so the consumer began waiting before the " \
  "operation was issued (a pipeline's first iterations, or no prefetch distance); nothing "   \
  "of the latency was hidden, and the difference is not a latency"

/* One flat value; flag: why it is not to be read as a plain number (the
 * report keeps it apart), or NULL. */
static void add_value(json_t *values, const char *region, const char *what, const ag_ev_site *es,
                      double v, const char *qual, const char *flag, const ag_dstats *dist) {
  char stat[128];
  snprintf(stat, sizeof stat, "%s[%s@%u]", what, es->op_id, es->occurrence);
  json_t *o = json_pack("{s:s,s:s,s:s,s:f,s:s,s:s,s:s?}", "region", region, "signal",
                        "async_latency", "stat", stat, "value", v, "unit", "ns", "qual", qual,
                        "flag", flag);
  if (o && dist) /* a pooled value (over CTAs, warps): its spread */
    json_object_set_new(o, "dist", json_pack("{s:I,s:f,s:f,s:f,s:f}", "count",
                                             (json_int_t)dist->count, "min", dist->min, "p50",
                                             dist->p50, "p95", dist->p95, "max", dist->max));
  json_array_append_new(values, o);
}

int ag_async_synth(const json_t *discovery, const ag_evidence *ref,
                   const ag_evidence *const *probes, int nprobes, const ag_scope *scope,
                   json_t **out) {
  *out = NULL;
  const json_t *sites = json_object_get(discovery, "sites");
  ag_trace *rt = NULL;
  wocc *waits = NULL;
  size_t nwaits = 0;
  char *is_wait = NULL;
  char (*wait_ops)[40] = NULL;
  double *buf = NULL;
  json_t *insts = json_array(), *values = json_array(), *notes = json_array();
  json_t *missing = json_array(), *warnings = json_array();
  int rc = 0;
  if (!insts || !values || !notes || !missing || !warnings) {
    rc = AG_ENOMEM;
    goto out;
  }
  if (!json_is_array(sites)) {
    json_array_append_new(notes, json_string("the discovery output has no site table"));
    rc = AG_EINVAL;
    goto out;
  }
  /* the reference: timed waits and their occurrences */
  if (ref) {
    if ((rc = ag_trace_decode(ref, &rt)))
      goto out;
    is_wait = ag_calloc((size_t)ref->nregions + 1, 1);
    wait_ops = ag_calloc((size_t)ref->nregions + 1, sizeof *wait_ops);
    if (!is_wait || !wait_ops) {
      rc = AG_ENOMEM;
      goto out;
    }
    for (int i = 0; i < ref->nregions; i++)
      is_wait[i] = (char)wait_op_of(ref, i, wait_ops[i]);
    if ((rc = resolve_waits(rt, is_wait, &waits, &nwaits)))
      goto out;
  }
  size_t bufcap = nwaits + 1;
  for (int p = 0; p < nprobes; p++)
    for (int l = 0; l < probes[p]->nlaunches; l++)
      bufcap += probes[p]->launches[l].warps;
  if (!(buf = ag_calloc(bufcap, sizeof *buf))) {
    rc = AG_ENOMEM;
    goto out;
  }
  for (int p = 0; p < nprobes; p++) {
    const ag_evidence *ev = probes[p];
    ag_trace *pt = NULL;
    if ((rc = ag_trace_decode(ev, &pt)))
      goto out;
    for (int si = 0; si < ev->nsites; si++) {
      const ag_ev_site *es = &ev->sites[si];
      if (es->kind != AG_SITE_ASYNC)
        continue;
      if (scope && !ag_scope_contains(scope, AG_SCOPE_ITER, es->occurrence))
        continue;
      const json_t *site = site_by_id(sites, es->op_id);
      json_t *inst = json_pack("{s:s,s:s,s:I}", "op_id", es->op_id, "op", es->op, "occurrence",
                               (json_int_t)es->occurrence);
      const char *region = site ? jstr(site, "region") : NULL;
      const char *qname = NULL;
      for (int g = 0; g < ev->nregions && region; g++) {
        char id[24];
        snprintf(id, sizeof id, "0x%016llx", (unsigned long long)ev->regions[g].id);
        if (!strcmp(id, region))
          qname = ev->regions[g].qname;
      }
      json_object_set_new(inst, "region", json_string(qname ? qname : "?"));
      if (!site) {
        json_object_set_new(inst, "note",
                            json_string("the probed site is not in this program's discovery: "
                                        "the probe belongs to another program version; not "
                                        "joined"));
        json_array_append_new(insts, inst);
        continue;
      }
      json_object_set_new(inst, "line", json_incref(json_object_get(site, "line")));
      /* latency: the probe's records in the scope */
      size_t n = 0;
      double cyc = 0;
      for (size_t k = 0; k < pt->nprobes; k++) {
        const ag_probe_rec *r = &pt->probes[k];
        if (r->site != si)
          continue;
        if (scope && (!ag_scope_contains(scope, AG_SCOPE_LAUNCH, r->launch) ||
                      !ag_scope_contains(scope, AG_SCOPE_SM, r->sm) ||
                      !ag_scope_contains(scope, AG_SCOPE_CTA, r->cta) ||
                      !ag_scope_contains(scope, AG_SCOPE_WARP, r->warp)))
          continue;
        cyc += (double)(r->done - r->issue);
        buf[n++] = (double)(r->done - r->issue) / launch_hz(pt, r->launch) * 1e9;
      }
      json_object_set_new(inst, "discarded_events", json_integer((json_int_t)pt->nocc));
      /* the launches the probe measured: the reference's waits join on the
       * same launch index (a scope coordinate, so identity, not time) */
      uint64_t lmask = 0;
      for (size_t k = 0; k < pt->nprobes; k++)
        if (pt->probes[k].site == si && pt->probes[k].launch < 64)
          lmask |= 1ull << pt->probes[k].launch;
      ag_dstats lat = {0};
      if (n) {
        ag_dstats_of(buf, n, &lat);
        stats_json(inst, "latency", &lat, "derived");
        json_object_set_new(inst, "latency_cycles_mean", json_real(cyc / (double)n));
      } else {
        /* it never ran: nothing of it is reported, not even the consumer's
         * wait at that iteration (which waited for another copy's load) */
        const char *why = "no warp ran the probed instance in the scope (the site did not "
                          "execute at this occurrence: another copy of an unrolled loop, or a "
                          "remainder copy the trip count skips)";
        json_object_set_new(inst, "note", json_string(why));
        add_missing(missing, "latency/exposed/hidden", es, why);
        json_array_append_new(insts, inst);
        continue;
      }
      /* exposed: the reference's waits that complete this site, same occurrence */
      json_t *wl = json_array();
      size_t k2;
      json_t *d;
      json_array_foreach(json_object_get(site, "done_by"), k2, d) {
        const json_t *ws = site_by_id(sites, json_string_value(d));
        if (ws && is_wait_kind(jstr(ws, "kind")))
          json_array_append_new(wl, json_string(json_string_value(d)));
      }
      json_object_set_new(inst, "waits", wl);
      size_t m = 0, timed = 0;
      for (size_t w = 0; w < nwaits; w++) {
        int match = 0;
        json_array_foreach(wl, k2, d) match |= !strcmp(json_string_value(d),
                                                       wait_ops[waits[w].region]);
        if (!match)
          continue;
        timed++;
        if (waits[w].occurrence != es->occurrence)
          continue;
        if (lmask && (waits[w].o->launch >= 64 || !(lmask >> waits[w].o->launch & 1)))
          continue;
        if (scope && !ag_scope_match(scope, ref, &(ag_occ){.region = waits[w].o->region,
                                                           .role = waits[w].o->role,
                                                           .launch = waits[w].o->launch,
                                                           .sm = waits[w].o->sm,
                                                           .cta = waits[w].o->cta,
                                                           .warp = waits[w].o->warp,
                                                           .iter = es->occurrence}))
          continue;
        buf[m++] = waits[w].ns;
      }
      ag_dstats exp = {0};
      /* one wait for several loads (one mbarrier phase): reported once, by
       * the first load probed, naming every load it covers; the others keep
       * their hidden part against it and point at it */
      json_t *covers = json_array();
      const char *owner = phase_owner(sites, site, probes, nprobes, es->occurrence, covers);
      int shared = json_array_size(covers) > 1, owns = !shared || !strcmp(owner, es->op_id);
      if (m) {
        ag_dstats_of(buf, m, &exp);
        if (owns)
          stats_json(inst, "exposed", &exp, "observed");
        if (shared && owns)
          json_object_set(json_object_get(inst, "exposed"), "covers", covers);
        if (!owns) {
          char st[128];
          snprintf(st, sizeof st, "exposed[%s@%u]", owner, es->occurrence);
          json_object_set_new(inst, "exposed_shared", json_pack("{s:s,s:O}", "stat", st,
                                                                "covers", covers));
        }
      } else {
        ag_str why = AG_STR_INIT;
        if (!ref)
          ag_str_puts(&why, "no reference run: the exposed wait is unknown");
        else if (!json_array_size(wl))
          ag_str_puts(&why, "no wait completes this site (discovery found none): the exposed "
                            "wait is unknown");
        else if (!timed)
          untimed_why(sites, wl, &why);
        else
          ag_str_puts(&why, "no wait of this site ran at this occurrence and launch in the "
                            "scope: not joined");
        json_object_set_new(inst, "note", json_string(ag_str_cstr(&why)));
        add_missing(missing, "exposed/hidden", es, ag_str_cstr(&why));
        ag_str_release(&why);
      }
      /* a wgmma group completes as one (one wait_group for all its ops): its
       * exposed wait and hidden part belong to the group, measured against
       * the last op's probe (issue of the last op to the group's
       * completion); the other ops keep their latency only */
      const char *last = NULL;
      int gsize = wgmma_group(sites, site, &last);
      int grouped = gsize > 1 && last;
      int group_last = grouped && !strcmp(last, es->op_id);
      if (grouped) {
        json_object_set_new(inst, "group", json_pack("{s:i,s:s}", "ops", gsize, "last", last));
        if (m && !group_last) { /* given for the group: said, not missing */
          json_array_append_new(
              warnings, json_sprintf("async_latency: exposed/hidden[%s@%u]: not separable per "
                                     "op: one wgmma.wait_group completes the whole group of "
                                     "%d; see group_exposed and group_hidden[%s@%u]",
                                     es->op_id, es->occurrence, gsize, last, es->occurrence));
          m = 0;
        }
      }
      double hidden = lat.mean - exp.mean; /* meaningful when n && m */
      /* a negative hidden part is no latency: the consumer began waiting
       * before the operation was issued; flagged, never a plain number */
      const char *neg = n && m && hidden < 0 ? NEGATIVE_HIDDEN : NULL;
      if (n && m) {
        json_t *h = json_pack("{s:f,s:s,s:s}", "mean", hidden, "unit", "ns", "qual", "derived");
        if (neg)
          json_object_set_new(h, "flag", json_string(neg));
        json_object_set_new(inst, "hidden", h);
      }
      /* flat values for the report */
      const char *rq = qname ? qname : "?";
      add_value(values, rq, group_last ? "group_latency" : "latency", es, lat.mean, "derived",
                NULL, &lat);
      if (m && owns)
        add_value(values, rq, group_last ? "group_exposed" : "exposed", es, exp.mean,
                  "observed", NULL, &exp);
      if (m && owns && shared) /* the loads the one wait covers, named */
        json_object_set(json_array_get(values, json_array_size(values) - 1), "covers", covers);
      json_decref(covers);
      if (m)
        add_value(values, rq, group_last ? "group_hidden" : "hidden", es, hidden, "derived",
                  neg, NULL);
      json_array_append_new(insts, inst);
    }
    ag_trace_free(pt);
  }
  *out = json_pack("{s:o,s:o,s:o,s:o,s:o}", "instances", insts, "values", values, "notes", notes,
                   "missing", missing, "warnings", warnings);
  insts = values = notes = missing = warnings = NULL;
  if (!*out)
    rc = AG_ENOMEM;
out:
  json_decref(insts);
  json_decref(values);
  json_decref(notes);
  json_decref(missing);
  json_decref(warnings);
  ag_trace_free(rt);
  ag_free(waits);
  ag_free(is_wait);
  ag_free(wait_ops);
  ag_free(buf);
  return rc;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

int ag_async_count(const ag_evidence *ref, json_t **out) {
  *out = NULL;
  uint64_t n = 0, dropped = 0;
  for (int l = 0; l < ref->nlaunches; l++) {
    n += ref->launches[l].nrecords;
    dropped += ref->launches[l].dropped;
  }
  uint64_t *keys = ag_calloc((size_t)n + 1, sizeof *keys);
  json_t *markers = json_array();
  int rc = AG_ENOMEM;
  if (!keys || !markers)
    goto out;
  size_t nk = 0;
  for (int l = 0; l < ref->nlaunches; l++) {
    const ag_ev_launch *L = &ref->launches[l];
    for (uint64_t k = 0; k < L->nrecords; k++) {
      const ag_ev_record *r = &L->records[k];
      uint32_t it = ag_ev_record_iter(r);
      if (r->site >= (uint32_t)ref->nsites || ref->sites[r->site].kind != AG_SITE_REGION ||
          !ref->sites[r->site].has_iter || it == AG_EV_NO_ITER)
        continue;
      keys[nk++] = (uint64_t)r->site << 32 | it;
    }
  }
  qsort(keys, nk, sizeof *keys, cmp_u64);
  json_t *cur = NULL;
  for (size_t i = 0; i < nk;) {
    size_t j = i;
    while (j < nk && keys[j] == keys[i])
      j++;
    uint32_t site = (uint32_t)(keys[i] >> 32);
    if (!i || site != (uint32_t)(keys[i - 1] >> 32)) {
      const ag_ev_site *es = &ref->sites[site];
      json_t *m = json_pack("{s:i,s:s,s:[]}", "line", es->line, "region",
                            es->region >= 0 && es->region < ref->nregions
                                ? ref->regions[es->region].qname
                                : "?",
                            "iterations");
      if (!m || json_array_append_new(markers, m))
        goto out;
      cur = json_object_get(m, "iterations");
    }
    if (json_array_append_new(cur, json_pack("[I,I]", (json_int_t)(uint32_t)keys[i],
                                             (json_int_t)(j - i))))
      goto out;
    i = j;
  }
  /* records past a full buffer were not kept: what did not show may have run */
  *out = json_pack("{s:i,s:i,s:I,s:b,s:O}", "format", 1, "launches", ref->nlaunches, "dropped",
                   (json_int_t)dropped, "complete", dropped == 0, "markers", markers);
  rc = *out ? 0 : AG_ENOMEM;
out:
  ag_free(keys);
  json_decref(markers);
  return rc;
}
