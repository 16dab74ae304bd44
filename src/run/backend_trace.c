/*
 * backend_trace.c — the region-tracing backend (docs/tracing.md): the
 * traced variant records every occurrence of the regions it probes (the
 * reference trace, and async_latency's reference with its waits timed);
 * the host runtime's "trace" collector binds the record buffers. Its
 * collect hook sizes a traced run from the trace-free run's launches; its
 * synthesis rules give duration, occurrences, timeline and what tracing
 * cost (perturbation). Called once per task.
 */
#include <stdlib.h>
#include <string.h>

#include "argus/report.h"
#include "argus/report_trace.h"
#include "observe_int.h"

/* The host runtime's defaults (src/collect/host.c) */
#define HOST_RECORDS 4096u
#define HOST_BUDGET_BYTES (1024ull << 20)
#define HOST_LAUNCHES 8u

/* Warps of a launch in the timing file. */
static uint64_t launch_warps(const json_t *l) {
  uint64_t w = 1, ctas = 1;
  for (int i = 0; i < 3; i++) {
    w *= (uint64_t)json_integer_value(json_array_get(json_object_get(l, "block"), (size_t)i));
    ctas *= (uint64_t)json_integer_value(json_array_get(json_object_get(l, "grid"), (size_t)i));
  }
  return ctas * ((w + 31) / 32);
}

/* Device bytes a whole recorded launch takes (host.c's pool layout). */
static uint64_t launch_bytes(const json_t *l, unsigned cap) {
  uint64_t warps = launch_warps(l);
  return ((warps * 64 + 255) & ~255ull) + ((warps * (cap + 1ull) * 16 + 255) & ~255ull);
}

/* The launches a traced run records (docs/tracing.md, "Launches"): from
 * --launches and the baseline run's launches (their number and geometry),
 * as many whole launches as the record budget holds. Without --records and
 * with a launch before the selection, that launch is run count-only and
 * its largest count sizes the records per warp (*count; the budget is then
 * checked at the smallest size, 16, and the host runtime records as many
 * whole launches as fit at the counted one). Fills skip, max, the most
 * warps of a selected launch (*warps) and the plan's JSON (what was
 * chosen, from what, and any warning). */
static void size_launches(const ag_observe_opts *o, const json_t *timing, unsigned *skip,
                          unsigned *max, int *count, unsigned *warps, json_t *lp) {
  ag_launch_sel sel;
  ag_launch_sel_parse(o->launches, &sel, NULL); /* checked when the query was made */
  *count = 0;
  *warps = 0;
  unsigned cap = o->records_per_warp ? o->records_per_warp : HOST_RECORDS;
  json_t *ls = json_object_get(timing, "launches");
  size_t n = json_array_size(ls);
  json_object_set_new(lp, "select", json_string(o->launches ? o->launches : "default"));
  json_object_set_new(lp, "records_per_warp", json_integer(cap));
  json_object_set_new(lp, "budget_bytes", json_integer((json_int_t)HOST_BUDGET_BYTES));
  if (!timing) { /* no baseline: the host runtime's defaults after the warm-up */
    *skip = sel.kind == AG_LAUNCH_RANGE ? (unsigned)sel.lo : 0;
    *max = sel.kind == AG_LAUNCH_RANGE ? (unsigned)(sel.hi - sel.lo) : HOST_LAUNCHES;
    json_object_set_new(lp, "sized_from",
                        json_string("nothing: the trace-free run gave no "
                                    "launches; the host runtime's defaults"));
    goto done;
  }
  json_object_set_new(lp, "launches_seen", json_integer((json_int_t)n));
  switch (sel.kind) {
  case AG_LAUNCH_ALL:
    *skip = 0, *max = (unsigned)n;
    break;
  case AG_LAUNCH_LAST:
    *skip = n ? (unsigned)n - 1 : 0, *max = 1;
    break;
  case AG_LAUNCH_RANGE:
    *skip = (unsigned)sel.lo, *max = (unsigned)(sel.hi - sel.lo);
    break;
  default: /* the first launch is a warm-up when there are others */
    *skip = n > 1 ? 1 : 0;
    *max = n > *skip ? (unsigned)(n - *skip) : 1;
  }
  if (!o->records_per_warp && *skip >= 1 && *skip < n) {
    *count = 1;
    cap = 16; /* the least a launch is recorded with */
    json_object_set_new(lp, "records_per_warp",
                        json_pack("{s:s,s:i}", "sized_from",
                                  "a count-only run of the launch "
                                  "before the selection: its largest count + 1/8 + 2",
                                  "launch", *skip - 1));
  }
  for (size_t i = *skip; i < n && i < (size_t)*skip + *max; i++) {
    uint64_t w = launch_warps(json_array_get(ls, i));
    *warps = w > *warps && w <= 0xffffffffu ? (unsigned)w : *warps;
  }
  uint64_t used = 0;
  unsigned fit = 0;
  for (size_t i = *skip; i < n && i < (size_t)*skip + *max; i++) {
    uint64_t b = launch_bytes(json_array_get(ls, i), cap);
    if (used + b > HOST_BUDGET_BYTES)
      break;
    used += b;
    fit++;
  }
  json_object_set_new(lp, "sized_from",
                      json_string("the trace-free run's launches (their number and geometry) "
                                  "and the records per warp"));
  ag_str w = AG_STR_INIT;
  if (*skip >= n)
    ag_str_printf(&w, "--launches %s selects no launch: the harness made %zu", o->launches, n);
  else if (!fit)
    ag_str_printf(
        &w,
        "the record budget (%llu MiB at %u records per warp) cannot hold one "
        "whole launch (launch %u needs %llu MiB): lower --records",
        HOST_BUDGET_BYTES >> 20, cap, *skip,
        (unsigned long long)((launch_bytes(json_array_get(ls, *skip), cap) + (1u << 20) - 1) >>
                             20));
  else if (fit < *max && sel.kind != AG_LAUNCH_DEFAULT)
    ag_str_printf(&w, "the record budget holds %u of the %u selected launches", fit, *max);
  if (w.len) {
    AG_LOG(AG_LOG_WARN, "%s", ag_str_cstr(&w));
    json_object_set_new(lp, "warning", json_string(ag_str_cstr(&w)));
  }
  ag_str_release(&w);
  if (sel.kind == AG_LAUNCH_DEFAULT && fit && !*count)
    *max = fit; /* whole launches only (counted: the host runtime keeps to whole ones) */
  json_object_set_new(lp, "fits", json_integer(fit));
done:
  json_object_set_new(lp, "skip", json_integer(*skip));
  json_object_set_new(lp, "max_launches", json_integer(*max));
}

/* The traced run's collect hook: a traced run with a baseline is sized
 * from the baseline's launches (size_launches); one the planner gave the
 * activity trace (config "activity": the timeline and the system timeline
 * in one query, docs/system.md) runs with it, in a process of its own (one
 * CUPTI subscriber per process). */
static int trace_collect(ag_exec_ctx *cx, ag_task *t, ag_collect_job *job) {
  obs *ob = cx->ud;
  ag_trace_run_opts *ro = job->ro;
  if (json_is_true(json_object_get(t->config, "activity")))
    ro->activity = 1, job->own_process = 1;
  const ag_task *bt = ag__obs_collect_dep(cx->plan, t, "time");
  if (!bt)
    return 0;
  json_t *base = NULL;
  const char *th = bt->outputs ? json_string_value(json_object_get(bt->outputs, "timing")) : NULL;
  int rc;
  if (th && (rc = ag__obs_get_json(ob, t, th, "the trace-free run's timing", &base)))
    return rc;
  json_t *lp = json_object();
  size_launches(ob->o, base, &ro->skip_launches, &ro->max_launches, &ro->count_records,
                &ro->warps_hint, lp);
  if (ro->max_launches == 0)
    ro->max_launches = 1;
  json_object_set_new(job->extra, "launch_plan", lp);
  json_decref(base);
  return 0;
}

/* A record's bias on its region's duration, measured on spin regions by
 * tests/trace/test_gpu_fidelity (docs/tracing.md, "Fidelity"). */
#define RECORD_BIAS_MIN 15
#define RECORD_BIAS_MAX 20

/* Synthesize duration / occurrences / timeline from reference-trace
 * evidence: decode, select the queried region's subtree and the scope. */
static int ex_synth_trace(ag_exec_ctx *cx, ag_task *t) {
  obs *ob = cx->ud;
  const char *signal = json_string_value(json_object_get(t->config, "signal"));
  char *data;
  size_t len;
  int rc = ag__obs_get(ob, t, ag__obs_input(cx->plan, t, "evidence"), "the evidence", &data, &len);
  if (rc)
    return rc;
  ag_diags d;
  ag_diags_init(&d);
  ag_evidence *ev = NULL;
  ag_trace *tr = NULL;
  ag_region_stats *rs = NULL;
  int nrs = 0;
  int *only = NULL, nonly = 0;
  char *sel = NULL;
  json_t *out = json_object(), *vals = json_array();
  ag_scope scope;
  ag__obs_scope_of(t, &scope);
  if ((rc = ag_evidence_load_mem(data, len, "evidence", &d, &ev)) ||
      (rc = ag_trace_decode(ev, &tr))) {
    rc = ag__obs_fail_diags(t, rc, "cannot decode the evidence", &d);
    goto out;
  }
  only = ag_calloc((size_t)ev->nregions + 1, sizeof *only);
  sel = ag_calloc((size_t)ev->nregions + 1, 1);
  if (!only || !sel) {
    rc = ag__obs_fail(t, AG_ENOMEM, "out of memory");
    goto out;
  }
  for (int i = 0; i < ev->nregions; i++)
    if (!strcmp(ev->regions[i].qname, t->region) || !strcmp(ev->regions[i].name, t->region))
      sel[i] = 1;
  for (int i = 0; i < ev->nregions; i++) { /* parents precede children */
    if (!sel[i] && ev->regions[i].parent >= 0 && sel[ev->regions[i].parent])
      sel[i] = 1;
    if (sel[i])
      only[nonly++] = i;
  }
  if (!nonly) {
    rc = ag__obs_fail(t, AG_ENOTFOUND, "region '%s' is not in the evidence", t->region);
    goto out;
  }
  if (!strcmp(signal, "timeline")) {
    ag_str ct = AG_STR_INIT;
    ag_timeline_info ti;
    uint64_t lim = json_integer_value(json_object_get(t->config, "max_events"));
    /* the system timeline of the same run, when the planner had it taken
     * (docs/system.md, "Chrome trace"): one trace, one clock */
    ag_sys_ev *sys = NULL;
    const char *sh = ag__obs_input(cx->plan, t, "system");
    if (sh) {
      char *sd = NULL;
      size_t sl = 0;
      if ((rc = ag__obs_get(ob, t, sh, "the traced run's system timeline", &sd, &sl)) ||
          (rc = ag_sys_ev_load_mem(sd, sl, "system.json", &d, &sys))) {
        ag_free(sd);
        rc = ag__obs_fail_diags(t, rc, "the traced run's system timeline", &d);
        goto out;
      }
      ag_free(sd);
    }
    rc = sys ? ag_report_chrome_system(tr, sys, &scope, lim ? lim : AG_TIMELINE_MAX_EVENTS, &ct,
                                       &ti)
             : ag_report_chrome_trace_ex(tr, &scope, lim ? lim : AG_TIMELINE_MAX_EVENTS, &ct,
                                         &ti);
    if (rc == 0)
      rc = ag__obs_put(ob, t, "timeline", ct.p, ct.len, "timeline");
    ag_str_release(&ct);
    if (!rc && sys) {
      ag__obs_value(vals, t->region, signal, "system_tracks", json_true(), "", "observed");
      ag__obs_value(vals, t->region, signal, "clock_error_ns", json_real(sys->error_ns), "ns",
                    "observed");
    }
    ag_sys_ev_free(sys);
    if (rc)
      goto out;
    if (ti.every_nth > 1) {
      json_t *w = json_array();
      json_array_append_new(w,
                            json_sprintf("the timeline holds %llu events, more than a viewer "
                                         "opens (%llu): it is sampled, every %u-th warp of "
                                         "each launch (%llu events); narrow --scope (cta, "
                                         "warp, launch, iter) for all of a part",
                                         (unsigned long long)ti.events,
                                         (unsigned long long)(lim ? lim : AG_TIMELINE_MAX_EVENTS),
                                         ti.every_nth, (unsigned long long)ti.written));
      json_object_set_new(out, "warnings", w);
    }
    ag__obs_value(vals, t->region, signal, "events_in_scope", json_integer((json_int_t)ti.events),
                  "count", "observed");
    ag__obs_value(vals, t->region, signal, "events_written", json_integer((json_int_t)ti.written),
                  "count", "observed");
    ag__obs_value(vals, t->region, signal, "file",
                  json_string(json_string_value(json_object_get(t->outputs, "timeline"))),
                  "chrome-trace", "observed");
  } else {
    if ((rc = ag_trace_stats(tr, &scope, only, nonly, &rs, &nrs))) {
      rc = ag__obs_fail(t, rc, "statistics failed");
      goto out;
    }
    for (int i = 0; i < nrs; i++) {
      const char *q = ev->regions[rs[i].region].qname;
      const ag_dstats *s = &rs[i].ns;
      if (!strcmp(signal, "occurrences")) {
        ag__obs_value(vals, q, signal, "count", json_integer((json_int_t)s->count), "count",
                      "observed");
        continue;
      }
      ag__obs_value(vals, q, signal, "count", json_integer((json_int_t)s->count), "count",
                    "observed");
      const char *names[] = {"total", "mean", "p50", "p95", "min", "max"};
      double xs[] = {s->total, s->mean, s->p50, s->p95, s->min, s->max};
      for (int k = 0; k < 6; k++)
        ag__obs_value(vals, q, signal, names[k], json_real(xs[k]), "ns", "observed");
      json_t *by_sm = json_object(), *by_role = json_object();
      for (int k = 0; k < rs[i].nsm; k++) {
        char key[16];
        snprintf(key, sizeof key, "%d", rs[i].by_sm[k].key);
        json_object_set_new(by_sm, key,
                            json_pack("{s:I,s:f}", "count", (json_int_t)rs[i].by_sm[k].ns.count,
                                      "total", rs[i].by_sm[k].ns.total));
      }
      for (int k = 0; k < rs[i].nrole; k++) {
        int ri = rs[i].by_role[k].key;
        json_object_set_new(by_role, ag_evidence_role_name(ev, ri),
                            json_pack("{s:I,s:f,s:f}", "count",
                                      (json_int_t)rs[i].by_role[k].ns.count, "total",
                                      rs[i].by_role[k].ns.total, "mean", rs[i].by_role[k].ns.mean));
      }
      ag__obs_value(vals, q, signal, "by_sm", by_sm, "ns", "observed");
      /* the fixed cost a record adds to its own region (docs/tracing.md,
       * "Fidelity"): reported, never subtracted */
      ag__obs_value(vals, q, signal, "bias",
                    json_pack("{s:i,s:i,s:f,s:b,s:s}", "cycles_min", RECORD_BIAS_MIN, "cycles_max",
                              RECORD_BIAS_MAX, "ns_max",
                              ev->sm_hz > 0 ? RECORD_BIAS_MAX * 1e9 / ev->sm_hz : 0.0, "subtracted",
                              0, "why",
                              "not subtracted: exact only on code that cannot hide it (+15 to "
                              "+20 cycles on spin regions); loop bodies hide it in their slack, "
                              "and records of nested regions add their own"),
                    "ns", "derived");
      ag__obs_value(vals, q, signal, "by_role", by_role, "ns", "observed");
    }
  }
  json_object_set_new(out, "values", vals);
  vals = NULL;
  json_object_set_new(out, "dropped", json_integer((json_int_t)tr->dropped));
  json_object_set_new(out, "nesting_errors", json_integer((json_int_t)tr->nesting_errors));
  json_object_set_new(out, "unended", json_integer((json_int_t)tr->unended));
  json_object_set_new(out, "anomalies", json_string(ag_str_cstr(&tr->anomalies)));
  json_object_set_new(out, "sm_hz", json_real(ev->sm_hz));
  { /* the evidence's own program version: the report joins only this plan's */
    ag_str prog = AG_STR_INIT;
    ag__obs_evidence_program(ob, cx->plan, ag__obs_dep_of(cx->plan, t, AG_TASK_COLLECT), ev, &prog);
    json_object_set_new(out, "program", json_string(ag_str_cstr(&prog)));
    ag_str_release(&prog);
  }
  rc = ag__obs_put_json(ob, t, "values", out, "json");
out:
  json_decref(vals);
  json_decref(out);
  ag_region_stats_free(rs, nrs);
  ag_trace_free(tr);
  ag_evidence_free(ev);
  ag_free(only);
  ag_free(sel);
  ag_diags_release(&d);
  ag_free(data);
  return rc;
}

/* Tracing cost thresholds (docs/tracing.md, "Perturbation"). */
#define PERTURB_WARN_SHARE 0.02 /* the bound for a trace to stand for the program */
#define PERTURB_WARN_NS 1000.0  /* twice the event timer's resolution (about 0.5 us) */

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median of xs[0..n) (sorted in place); 0 for n == 0. */
static double median(double *xs, size_t n) {
  if (!n)
    return 0;
  qsort(xs, n, sizeof *xs, cmp_dbl);
  return n % 2 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
}

static const json_t *launch_at(const json_t *timing, json_int_t launch) {
  size_t i;
  json_t *l;
  json_array_foreach(json_object_get(timing, "launches"), i,
                     l) if (json_integer_value(json_object_get(l, "launch")) == launch) return l;
  return NULL;
}

/* Synthesize `perturbation`: what the traced build cost, from the traced
 * run's kernel times on the launches it recorded against the trace-free
 * run's on the same launches, with each build's registers and CTAs per SM,
 * which launches were recorded and why the others were not; warnings when
 * the traced build changed occupancy or added more than the thresholds. */
static int ex_synth_perturbation(ag_exec_ctx *cx, ag_task *t) {
  obs *ob = cx->ud;
  json_t *tr = NULL, *tf = NULL, *lp = NULL, *res = NULL, *tb = NULL;
  json_t *vals = json_array(), *missing = json_array(), *warn = json_array();
  double *a = NULL, *b = NULL;
  int rc = 0;
  const ag_task *tc = ag__obs_collect_dep(cx->plan, t, "trace"),
                *bc = ag__obs_collect_dep(cx->plan, t, "time");
  const char *th =
      tc && tc->outputs ? json_string_value(json_object_get(tc->outputs, "timing")) : NULL;
  const char *bh =
      bc && bc->outputs ? json_string_value(json_object_get(bc->outputs, "timing")) : NULL;
  const char *lh =
      tc && tc->outputs ? json_string_value(json_object_get(tc->outputs, "launch_plan")) : NULL;
  const char *rh = tc ? ag__obs_dep_output(cx->plan, tc, "compile", "resources") : NULL;
  const char *blh =
      bc && bc->outputs ? json_string_value(json_object_get(bc->outputs, "baseline")) : NULL;
  if ((blh && (rc = ag__obs_get_json(ob, t, blh, "the timing run's build", &tb))) ||
      (th && (rc = ag__obs_get_json(ob, t, th, "the traced run's timing", &tr))) ||
      (bh && (rc = ag__obs_get_json(ob, t, bh, "the trace-free run's timing", &tf))) ||
      (lh && (rc = ag__obs_get_json(ob, t, lh, "the launch plan", &lp))) ||
      (rh && (rc = ag__obs_get_json(ob, t, rh, "the traced build's compiler report", &res))))
    goto out;
  if (!tr || !tf) {
    ag_str why = AG_STR_INIT;
    if (!tr)
      ag_str_printf(&why, "the traced run timed no launch (%s)",
                    tc && tc->error ? tc->error : "it did not run");
    if (!tf)
      ag_str_printf(&why, "%sthe trace-free run timed no launch (%s)", tr ? "" : "; ",
                    bc && bc->error ? bc->error : "it did not run");
    json_array_append_new(
        missing, json_pack("{s:s,s:s}", "what", "the tracing cost", "why", ag_str_cstr(&why)));
    ag_str_release(&why);
  }
  json_t *occ = json_object_get(res, "occupancy");
  if (occ && !json_is_true(json_object_get(occ, "kept")))
    json_array_append_new(warn, json_sprintf("the traced build could not be kept within the "
                                             "trace-free build's occupancy: %s",
                                             json_string_value(json_object_get(occ, "why"))));
  else if (occ && json_integer_value(json_object_get(occ, "capped")) > 0) {
    size_t k;
    json_t *f;
    json_array_foreach(json_object_get(occ, "functions"), k, f) {
      json_int_t cap = json_integer_value(json_object_get(f, "maxnreg"));
      if (cap > 0)
        json_array_append_new(
            warn,
            json_sprintf("the traced build of '%s' was capped at %lld registers "
                         "(.maxnreg; it needed %lld) to keep the trace-free build's "
                         "occupancy (%lld bytes of spill stores)",
                         json_string_value(json_object_get(f, "name")), (long long)cap,
                         (long long)json_integer_value(json_object_get(f, "registers_uncapped")),
                         (long long)json_integer_value(json_object_get(f, "spill_store_bytes"))));
    }
  }
  const char *lw = json_string_value(json_object_get(lp, "warning"));
  if (lw)
    json_array_append_new(warn, json_string(lw));
  if (tr) { /* which launches were recorded, and why the others were not */
    json_t *rec = json_array(), *unrec = json_object();
    size_t i;
    json_t *l;
    json_array_foreach(json_object_get(tr, "launches"), i, l) {
      json_t *id = json_object_get(l, "launch");
      if (json_is_true(json_object_get(l, "recorded"))) {
        json_array_append(rec, id);
        continue;
      }
      const char *why = json_string_value(json_object_get(l, "why"));
      json_t *lst = json_object_get(unrec, why ? why : "?");
      if (!lst)
        json_object_set_new(unrec, why ? why : "?", lst = json_array());
      json_array_append(lst, id);
    }
    json_t *ln = json_pack("{s:o,s:o,s:I,s:O?,s:O?,s:O?}", "recorded", rec, "unrecorded", unrec,
                           "total", json_integer_value(json_object_get(tr, "launches_total")),
                           "plan", lp, "records_sized", json_object_get(tr, "records_sized"),
                           "ahead", json_object_get(tr, "ahead"));
    ag__obs_value(vals, NULL, "perturbation", "launches", ln, "", "observed");
    if (!json_array_size(rec))
      json_array_append_new(warn, json_string("no launch was recorded: the region values are "
                                              "empty (see the launches value)"));
  }
  if (tr && tf) {
    size_t n = json_array_size(json_object_get(tr, "launches"));
    a = ag_calloc(n + 1, sizeof *a);
    b = ag_calloc(n + 1, sizeof *b);
    if (!a || !b) {
      rc = ag__obs_fail(t, AG_ENOMEM, "out of memory");
      goto out;
    }
    size_t m = 0;
    const json_t *l0 = NULL, *b0 = NULL;
    size_t i;
    json_t *l;
    json_array_foreach(json_object_get(tr, "launches"), i, l) {
      const json_t *bl = launch_at(tf, json_integer_value(json_object_get(l, "launch")));
      if (!json_is_true(json_object_get(l, "recorded")) || !bl)
        continue;
      a[m] = json_number_value(json_object_get(l, "ns"));
      b[m++] = json_number_value(json_object_get(bl, "ns"));
      if (!l0)
        l0 = l, b0 = bl;
    }
    if (!m) {
      json_array_append_new(missing, json_pack("{s:s,s:s}", "what", "added time", "why",
                                               "no recorded launch has a trace-free twin"));
    } else {
      double lo_a = a[0], hi_a = a[0];
      for (size_t k = 0; k < m; k++)
        lo_a = a[k] < lo_a ? a[k] : lo_a, hi_a = a[k] > hi_a ? a[k] : hi_a;
      double mt = median(a, m), mb = median(b, m), add = mt - mb;
      ag__obs_value(vals, NULL, "perturbation", "trace_free_kernel_time", json_real(mb), "ns",
                    "observed");
      if (tb) /* which build that time is of */
        ag__obs_value(vals, NULL, "perturbation", "timed_build",
                      json_string(json_string_value(json_object_get(tb, "what"))), "", "observed");
      const char *tbk = json_string_value(json_object_get(tb, "build"));
      if (tbk && !strcmp(tbk, "trace-free variant"))
        json_array_append_new(warn, json_string("the trace-free time is of the trace-free "
                                                "variant (markers on), not of the user's "
                                                "build, which could not be made"));
      ag__obs_value(vals, NULL, "perturbation", "traced_kernel_time", json_real(mt), "ns",
                    "observed");
      ag__obs_value(vals, NULL, "perturbation", "added_time", json_real(add), "ns", "derived");
      ag__obs_value(vals, NULL, "perturbation", "added_share",
                    json_real(mb > 0 ? 100.0 * add / mb : 0), "%", "derived");
      ag__obs_value(vals, NULL, "perturbation", "launches_compared", json_integer((json_int_t)m),
                    "count", "observed");
      const char *keys[] = {"registers", "ctas_per_sm"};
      for (int k = 0; k < 2; k++) {
        json_int_t x = json_integer_value(json_object_get(b0, keys[k]));
        json_int_t y = json_integer_value(json_object_get(l0, keys[k]));
        char st[48];
        snprintf(st, sizeof st, "%s.trace_free", keys[k]);
        ag__obs_value(vals, NULL, "perturbation", st, json_integer(x), "count", "observed");
        snprintf(st, sizeof st, "%s.traced", keys[k]);
        ag__obs_value(vals, NULL, "perturbation", st, json_integer(y), "count", "observed");
      }
      json_int_t cf = json_integer_value(json_object_get(b0, "ctas_per_sm"));
      json_int_t ct = json_integer_value(json_object_get(l0, "ctas_per_sm"));
      if (cf != ct)
        json_array_append_new(warn, json_sprintf("the traced build changed occupancy: %lld "
                                                 "CTAs per SM against the trace-free build's "
                                                 "%lld",
                                                 (long long)ct, (long long)cf));
      if (mb > 0 && add > PERTURB_WARN_SHARE * mb && add > PERTURB_WARN_NS)
        json_array_append_new(
            warn, json_sprintf("tracing added %.2f us (%.1f %%) to the kernel (trace-free %.2f "
                               "us, traced %.2f us over %zu launches, traced spread %.2f-%.2f "
                               "us): above the %.0f %% bound, region values describe a slower "
                               "program; trace fewer regions (--trace) to lower it",
                               add / 1e3, 100.0 * add / mb, mb / 1e3, mt / 1e3, m, lo_a / 1e3,
                               hi_a / 1e3, PERTURB_WARN_SHARE * 100));
    }
  }
  json_t *out = json_pack("{s:o,s:o,s:o}", "values", vals, "missing", missing, "warnings", warn);
  vals = missing = warn = NULL;
  rc = ag__obs_put_json(ob, t, "values", out, "json");
  json_decref(out);
out:
  ag_free(a);
  ag_free(b);
  json_decref(tr);
  json_decref(tf);
  json_decref(lp);
  json_decref(res);
  json_decref(tb);
  json_decref(vals);
  json_decref(missing);
  json_decref(warn);
  return rc;
}

/* --trace R,...: the traced variant's regions, in its transform's config
 * (so in its key): at most 64, none empty. */
static int trace_selection(const char *list, ag_plan *p, ag_diags *d) {
  if (!list)
    return 0;
  json_t *rs = json_array();
  for (const char *s = list; rs;) {
    const char *c = strchr(s, ',');
    size_t n = c ? (size_t)(c - s) : strlen(s);
    if (!n || json_array_size(rs) == 64) {
      ag_diags_add(d, AG_SEV_ERROR, "--trace", 0, 0, NULL, 0,
                   "--trace '%s' %s: give region names separated by commas", list,
                   n ? "names more than 64 regions" : "has an empty name");
      json_decref(rs);
      return AG_EINVAL;
    }
    json_array_append_new(rs, json_stringn(s, n));
    if (!c)
      break;
    s = c + 1;
  }
  for (size_t i = 0; i < p->tasks.n; i++)
    if (!strcmp(p->tasks.v[i]->op, "transform.traced"))
      json_object_set(p->tasks.v[i]->config, "regions", rs);
  json_decref(rs);
  return 0;
}

/* The query's tracing options, in the traced tasks' configurations (so in
 * their keys): --trace's regions, and what a traced run records. */
static int trace_bind(const ag_observe_opts *o, ag_plan *p, ag_diags *d) {
  int rc = trace_selection(o->trace_regions, p, d);
  if (rc)
    return rc;
  for (size_t i = 0; i < p->tasks.n; i++) {
    ag_task *t = p->tasks.v[i];
    if (t->type == AG_TASK_COLLECT && ag__obs_has_backend(t, "trace") &&
        !json_object_get(t->config, "skip")) {
      if (o->launches && *o->launches)
        json_object_set_new(t->config, "select", json_string(o->launches));
      if (o->records_per_warp)
        json_object_set_new(t->config, "records", json_integer(o->records_per_warp));
    }
  }
  return 0;
}

static const ag_executor trace_execs[] = {
    {"synth.duration", ex_synth_trace},
    {"synth.occurrences", ex_synth_trace},
    {"synth.timeline", ex_synth_trace},
    {"synth.perturbation", ex_synth_perturbation},
};

static const char *const trace_evidence[] = {"trace", "async_ref", NULL};

const ag_backend ag__backend_trace = {
    .name = "trace",
    .summary = "region tracing: a record at every marker of the probed regions",
    .evidence = trace_evidence,
    .effects = AG_EFF_PERTURBS_TIMING,
    .variant = "traced",
    .collector = "trace",
    .output = "evidence",
    .decode = ag__obs_evidence_decode,
    .release = ag__obs_evidence_release,
    .execs = trace_execs,
    .nexecs = sizeof trace_execs / sizeof trace_execs[0],
    .bind = trace_bind,
    .collect = trace_collect,
};
