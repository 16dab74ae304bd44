/*
 * pm_signal.c — the `throughput` signal (argus/pm.h, docs/throughput.md):
 * a region timeline (a decoded trace) placed on PM sampling's windows and
 * joined (pm_join.c); per region, the hardware rates of the windows where
 * it ran alone or nearly so. Derived: the rates are measured, their
 * assignment to a region is the join's inference.
 *
 * Placing the timeline: every occurrence is on %globaltimer (the warp's
 * anchors, src/synth/decode.c); the windows are on the sampler's clock,
 * whose offset from %globaltimer the evidence fitted on the calibration
 * kernels. A timeline of the same run (the same harness process) needs
 * nothing more. A timeline of another run of the same program version is
 * moved launch by launch: each traced launch's span (first warp in, last
 * warp out) is mapped linearly onto the same launch's kernel span in the
 * sampled run (CUPTI's record, on %globaltimer through the activity trace's
 * own calibration), so a run that was uniformly slower or faster still
 * lines up; the stretch is reported per launch.
 *
 * Load: one pass over the occurrences, the join, a few lines of JSON per
 * region. Called once per signal.
 */
#include "argus/pm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STRETCH_WARN 0.05 /* a launch 5 % longer or shorter in one run than the other */

static double launch_in(const ag_ev_launch *L) {
  double t = INFINITY;
  for (uint32_t w = 0; w < L->warps; w++)
    if ((L->meta[w].flags & AG_EV_EXITED) && (double)L->meta[w].gtime_entry < t)
      t = (double)L->meta[w].gtime_entry;
  return t;
}

static double launch_out(const ag_ev_launch *L) {
  double t = -INFINITY;
  for (uint32_t w = 0; w < L->warps; w++)
    if ((L->meta[w].flags & AG_EV_EXITED) && (double)L->meta[w].gtime_exit > t)
      t = (double)L->meta[w].gtime_exit;
  return t;
}

/* How launch l's times map onto the sampled run: t' = b0 + (t - a0) * k. */
typedef struct lmap {
  int ok;
  double a0, k, b0;
} lmap;

/* The sampled run's kernel span of trace launch L (another run): the same
 * launch index in its launch list, then that kernel's record among
 * CUPTI's records of the kernel's name, in order. */
static int sampled_span(const ag_pm_ev *pm, uint32_t launch, const char *kernel, double *b0,
                        double *b1) {
  json_t *ls = json_object_get(pm->root, "launches"), *l;
  size_t i, nth = 0;
  int found = 0;
  json_array_foreach(ls, i, l) {
    const char *k = json_string_value(json_object_get(l, "kernel"));
    json_int_t li = json_integer_value(json_object_get(l, "launch"));
    if (!k || strcmp(k, kernel))
      continue;
    if ((uint32_t)li == launch) {
      found = 1;
      break;
    }
    nth++;
  }
  if (!found || !pm->sys)
    return 0;
  for (size_t r = 0; r < pm->sys->nrecs; r++) {
    const ag_sys_rec *x = &pm->sys->recs[r];
    if (x->kind == AG_SYS_KERNEL && !x->argus && x->name && !strcmp(x->name, kernel) &&
        nth-- == 0) {
      *b0 = ag_sys_ev_gt(pm->sys, x->start);
      *b1 = ag_sys_ev_gt(pm->sys, x->end);
      return *b1 > *b0;
    }
  }
  return 0;
}

/* A refusal: its reason as a diagnostic, AG_EINVAL. */
#define REFUSE(d, ...)                                                                     \
  (ag_diags_add((d), AG_SEV_ERROR, NULL, 0, 0, NULL, 0, __VA_ARGS__), AG_EINVAL)

static json_t *rate(double num, double den, double scale) {
  return den > 0 ? json_real(num / den * scale) : json_null();
}

int ag_pm_signal(const ag_pm_signal_in *in, ag_diags *d, json_t **out) {
  *out = NULL;
  const ag_pm_ev *pm = in->pm;
  const ag_evidence *ev = in->trace->ev;
  double th = in->threshold > 0 ? in->threshold : AG_PM_THRESHOLD;
  json_int_t tpid = json_integer_value(json_object_get(ev->header, "pid"));
  const char *tvid =
      json_string_value(json_object_get(json_object_get(ev->header, "variant"), "id"));
  int same = pm->pid > 0 && tpid == pm->pid && tvid && pm->variant_id &&
             !strcmp(tvid, pm->variant_id);
  /* identity first: never joined silently */
  if (in->pm_program && in->trace_program && strcmp(in->pm_program, in->trace_program))
    return REFUSE(d, "the region timeline is of program version %s, the PM samples of %s: "
                     "not joined",
                  in->trace_program, in->pm_program);
  if (!same && (!in->pm_program || !in->trace_program))
    return REFUSE(d, "the region timeline (%s) and the PM samples (%s) are of different runs "
                     "whose program versions are not both known: not joined",
                  in->trace_program ? in->trace_program : "version unknown",
                  in->pm_program ? in->pm_program : "version unknown");
  if (!pm->ncal)
    return REFUSE(d, "the PM samples: the sampler's clock cannot be placed on %%globaltimer "
                     "(no calibration kernel was found in the samples)");
  if (!same && !pm->sys)
    return REFUSE(d, "the region timeline is of another run and the sampled run has no "
                     "kernel records to align it with (the activity trace was off: "
                     "ARGUS_PM_ACTIVITY=0): not joined");
  int rc = AG_ENOMEM;
  size_t nl = (size_t)(ev->nlaunches > 0 ? ev->nlaunches : 0);
  lmap *maps = ag_calloc(nl + 1, sizeof *maps);
  ag_pm_span *spans = ag_calloc(in->trace->nocc + 1, sizeof *spans);
  double *w0 = ag_calloc(pm->nsamples + 1, sizeof *w0);
  double *w1 = ag_calloc(pm->nsamples + 1, sizeof *w1);
  double *vals = ag_calloc(pm->nsamples * AG_PM_NMETRICS + 1, sizeof *vals);
  json_t *res = NULL, *regions = json_array(), *warnings = json_array(), *launches = json_array();
  ag_pm_join_out jo;
  memset(&jo, 0, sizeof jo);
  if (!maps || !spans || !w0 || !w1 || !vals || !regions || !warnings || !launches)
    goto out;
  for (size_t l = 0; l < nl; l++) {
    const ag_ev_launch *L = &ev->launches[l];
    double a0 = launch_in(L), a1 = launch_out(L), b0 = 0, b1 = 0;
    if (!(a1 > a0)) {
      json_array_append_new(warnings, json_sprintf("launch %u: no warp exited; not joined",
                                                   L->launch));
      continue;
    }
    if (same) {
      maps[l] = (lmap){1, a0, 1.0, a0};
      continue;
    }
    if (!sampled_span(pm, L->launch, L->kernel, &b0, &b1)) {
      json_array_append_new(warnings,
                            json_sprintf("launch %u (%s): the sampled run has no kernel record "
                                         "of it; not joined",
                                         L->launch, L->kernel));
      continue;
    }
    maps[l] = (lmap){1, a0, (b1 - b0) / (a1 - a0), b0};
    json_array_append_new(launches, json_pack("{s:i,s:s,s:f,s:f,s:f,s:f}", "launch",
                                              (int)L->launch, "kernel", L->kernel, "trace_ns",
                                              a1 - a0, "pm_ns", b1 - b0, "stretch",
                                              maps[l].k, "shift_ns", b0 - a0));
    if (fabs(maps[l].k - 1) > STRETCH_WARN)
      json_array_append_new(warnings,
                            json_sprintf("launch %u took %.1f us in the traced run and %.1f us "
                                         "in the sampled run: the timeline is stretched by %.3f "
                                         "to fit",
                                         L->launch, (a1 - a0) / 1e3, (b1 - b0) / 1e3,
                                         maps[l].k));
  }
  size_t ns = 0;
  for (size_t i = 0; i < in->trace->nocc; i++) {
    const ag_occ *o = &in->trace->occ[i];
    int l = -1;
    for (int k = 0; k < ev->nlaunches && l < 0; k++)
      if (ev->launches[k].launch == o->launch)
        l = k;
    if (l < 0 || !maps[l].ok)
      continue;
    double origin = launch_in(&ev->launches[l]); /* t0_ns's origin (decode.c) */
    double t0 = origin + o->t0_ns;
    double t1 = t0 + (double)(o->end - o->start) * 1e9 / in->trace->clocks[l].hz;
    const lmap *m = &maps[l];
    spans[ns++] = (ag_pm_span){m->b0 + (t0 - m->a0) * m->k, m->b0 + (t1 - m->a0) * m->k,
                               o->region, ev->regions[o->region].root};
  }
  for (size_t k = 0; k < pm->nsamples; k++) {
    w0[k] = (double)pm->samples[k].t0;
    w1[k] = (double)pm->samples[k].t1;
    memcpy(&vals[k * AG_PM_NMETRICS], pm->samples[k].v, sizeof pm->samples[k].v);
  }
  ag_pm_join_in ji = {w0, w1, pm->nsamples, vals, AG_PM_NMETRICS, pm->offset_ns,
                      spans, ns,  ev->nregions, th};
  if ((rc = ag_pm_join(&ji, &jo))) {
    if (rc == AG_EINVAL)
      ag_diags_add(d, AG_SEV_ERROR, NULL, 0, 0, NULL, 0,
                   "the PM samples or the region timeline are malformed: not joined");
    goto out;
  }
  rc = AG_ENOMEM;
  for (int r = 0; r < ev->nregions; r++) {
    const ag_pm_region_join *g = &jo.regions[r];
    if (!g->touched)
      continue;
    json_t *o = json_pack("{s:s,s:I,s:I,s:f,s:f,s:f}", "region", ev->regions[r].qname,
                          "windows", (json_int_t)g->windows, "touched",
                          (json_int_t)g->touched, "covered_share", g->covered_mean,
                          "covered_max", g->covered_max, "ns", g->ns);
    if (!o)
      goto out;
    if (g->windows) {
      const double *s = g->sum;
      json_object_set_new(o, "dram_read_GBps", rate(s[AG_PM_DRAM_READ], g->ns, 1));
      json_object_set_new(o, "dram_write_GBps", rate(s[AG_PM_DRAM_WRITE], g->ns, 1));
      json_object_set_new(o, "l2_GBps", rate(s[AG_PM_L2], g->ns, 1));
      json_object_set_new(o, "sm_active_pct",
                          rate(s[AG_PM_SM_ACTIVE], s[AG_PM_SM_ELAPSED], 100));
      json_object_set_new(o, "tensor_active_pct", rate(s[AG_PM_TENSOR], s[AG_PM_SM_ELAPSED], 100));
      json_object_set_new(o, "fma_ginst_per_s", rate(s[AG_PM_FMA], g->ns, 1));
    } else {
      json_array_append_new(warnings,
                            json_sprintf("%s covered at most %.0f %% of any window (a window "
                                         "counts at %.0f %%): it is shorter than the sampling "
                                         "interval (%llu ns) or never ran alone; no rates",
                                         ev->regions[r].qname, 100 * g->covered_max, 100 * th,
                                         (unsigned long long)pm->interval_ns));
    }
    json_array_append_new(regions, o);
  }
  if (pm->overflow)
    json_array_append_new(warnings,
                          json_sprintf("the sampler's hardware buffer overflowed (%llu "
                                       "decode%s): samples after it were lost; a longer "
                                       "ARGUS_PM_INTERVAL or a larger ARGUS_PM_BUFFER_MB keeps "
                                       "them",
                                       (unsigned long long)pm->overflow,
                                       pm->overflow == 1 ? "" : "s"));
  if (pm->incomplete)
    json_array_append_new(warnings, json_sprintf("%llu sample%s never completed and %s not "
                                                 "used",
                                                 (unsigned long long)pm->incomplete,
                                                 pm->incomplete == 1 ? "" : "s",
                                                 pm->incomplete == 1 ? "was" : "were"));
  if (pm->gaps)
    json_array_append_new(warnings, json_sprintf("%zu gap%s between windows (%.1f us in all): "
                                                 "no counts for that time (the decoder fell "
                                                 "behind the sampler: a longer "
                                                 "ARGUS_PM_INTERVAL avoids it)",
                                                 pm->gaps, pm->gaps == 1 ? "" : "s",
                                                 pm->gap_ns / 1e3));
  if (pm->ncal < pm->ncal_read)
    json_array_append_new(warnings, json_sprintf("%d of %d calibration kernels were found in "
                                                 "the samples: the clock's error bound rests "
                                                 "on fewer",
                                                 pm->ncal, pm->ncal_read));
  char rule[512];
  snprintf(rule, sizeof rule,
           "a sampling window counts for a region when the region covered at least %.0f %% of "
           "it: its warp-time in the window over all resident warps' warp-time, times the "
           "share of the window in which any traced warp was resident; a region's rates are "
           "its windows' counts summed over their total time",
           100 * th);
  res = json_pack("{s:s,s:s,s:s,s:f,s:{s:s,s:o},s:{s:f,s:f,s:i},s:I,s:I,s:I,s:I,s:I,s:I,s:I,"
                  "s:I,s:f,s:o,s:o}",
                  "signal", "throughput", "qual", "derived", "rule", rule, "threshold", th,
                  "alignment", "mode", same ? "same run" : "per launch", "launches", launches,
                  "clock", "offset_ns", pm->offset_ns, "error_ns", pm->error_ns,
                  "calibrations", pm->ncal, "interval_ns", (json_int_t)pm->interval_ns,
                  "windows", (json_int_t)pm->nsamples, "windows_joined",
                  (json_int_t)(pm->nsamples - jo.idle_windows), "idle_windows",
                  (json_int_t)jo.idle_windows, "mixed_windows", (json_int_t)jo.mixed_windows,
                  "overflow", (json_int_t)pm->overflow, "incomplete_samples",
                  (json_int_t)pm->incomplete, "gaps", (json_int_t)pm->gaps, "gap_ns",
                  pm->gap_ns, "regions", regions, "warnings", warnings);
  launches = regions = warnings = NULL;
  if (res) {
    *out = res;
    rc = 0;
  }
out:
  json_decref(regions);
  json_decref(warnings);
  json_decref(launches);
  ag_pm_join_release(&jo);
  ag_free(maps);
  ag_free(spans);
  ag_free(w0);
  ag_free(w1);
  ag_free(vals);
  return rc;
}

/* o[k], else NaN */
static double num(const json_t *o, const char *k) { return ag_json_num(o, k, NAN); }

int ag_pm_text(const json_t *s, ag_str *out) {
  const json_t *al = json_object_get(s, "alignment"), *clk = json_object_get(s, "clock");
  ag_str_printf(out, "throughput (derived: PM sampling every %.1f us joined with the region "
                     "timeline, %s): %lld windows, %lld with traced warps, %lld mixed\n",
                num(s, "interval_ns") / 1e3, json_string_value(json_object_get(al, "mode")),
                (long long)num(s, "windows"), (long long)num(s, "windows_joined"),
                (long long)num(s, "mixed_windows"));
  ag_str_printf(out, "  %-28s %7s %7s %9s %9s %9s %7s %7s %9s\n", "region", "windows", "covered",
                "dram_rd", "dram_wr", "L2", "SM act", "tensor", "FMA");
  ag_str_printf(out, "  %-28s %7s %7s %9s %9s %9s %7s %7s %9s\n", "", "", "", "GB/s", "GB/s",
                "GB/s", "%", "%", "Ginst/s");
  size_t i;
  json_t *r;
  json_array_foreach(json_object_get(s, "regions"), i, r) {
    if (!num(r, "windows"))
      continue;
    ag_str_printf(out, "  %-28s %7lld %7.3f %9.1f %9.1f %9.1f %7.1f %7.1f %9.1f\n",
                  json_string_value(json_object_get(r, "region")), (long long)num(r, "windows"),
                  num(r, "covered_share"), num(r, "dram_read_GBps"), num(r, "dram_write_GBps"),
                  num(r, "l2_GBps"), num(r, "sm_active_pct"), num(r, "tensor_active_pct"),
                  num(r, "fma_ginst_per_s"));
  }
  ag_str_printf(out, "  rule: %s\n", json_string_value(json_object_get(s, "rule")));
  ag_str_printf(out, "  clock: sampler - %%globaltimer = %.0f ns (error <= %.0f ns, %lld "
                     "calibrations); overflow %lld, incomplete samples %lld, gaps %lld\n",
                num(clk, "offset_ns"), num(clk, "error_ns"), (long long)num(clk, "calibrations"),
                (long long)num(s, "overflow"), (long long)num(s, "incomplete_samples"),
                (long long)num(s, "gaps"));
  json_array_foreach(json_object_get(s, "warnings"), i, r)
      ag_str_printf(out, "  warning: %s\n", json_string_value(r));
  return out->oom ? AG_ENOMEM : 0;
}
