/*
 * backend_pm.c — counters over time, joined to regions (signal
 * `throughput`, docs/throughput.md): the build the user ships, run once
 * under the host runtime's "pm" collection (the timing run with CUPTI PM
 * sampling and the activity trace beside it, src/collect/pmsamp.c) in a
 * harness process and a run of its own (its transform config keeps it out
 * of the trace-free timing run). Synthesis: the reference trace's region
 * timeline, aligned launch by launch on the sampled windows and joined
 * (argus/pm.h); per region the hardware rates of the windows where it ran
 * (nearly) alone, derived.
 */
#include <string.h>

#include "argus/pm.h"
#include "observe_int.h"

/* The collect hook: the production build (as the timing run and the system
 * timeline), under ARGUS_COLLECT=pm, in a harness process of its own (the
 * activity trace beside the sampler needs the process's one subscriber). */
static int pm_collect(ag_exec_ctx *cx, ag_task *t, ag_collect_job *job) {
  const char *prod = cx ? ag__obs_input(cx->plan, t, "production") : NULL;
  if (prod)
    job->cubin = prod;
  job->ro->collect = "pm";
  job->own_process = 1;
  return 0;
}

static int pm_decode(const void *data, size_t len, const char *what, ag_diags *d, void **out) {
  return ag_pm_ev_load_mem(data, len, what, d, (ag_pm_ev **)out);
}

static void pm_release(void *e) { ag_pm_ev_free(e); }

static const char *out_of(const ag_task *t, const char *name) {
  return t && t->outputs ? json_string_value(json_object_get(t->outputs, name)) : NULL;
}

/* The program version the PM samples belong to: this query's program when
 * the run loaded the build this plan gave it (the compiled variant or the
 * production build), else the build the evidence names. */
static void pm_program(const obs *ob, const ag_plan *p, const ag_task *collect,
                       const ag_pm_ev *e, ag_str *out) {
  const char *cubin = ag__obs_input(p, collect, "cubin");
  const char *prod = ag__obs_input(p, collect, "production");
  const char *got = e->variant_id;
  if (got && ((cubin && !strcmp(got, cubin)) || (prod && !strcmp(got, prod))))
    ag_str_puts(out, ob->program);
  else
    ag_str_printf(out, "the build of variant %.12s", got ? got : "(none named)");
}

static void put(json_t *vals, const char *region, const char *stat, json_t *v,
                const char *unit, const char *qual) {
  if (v && !json_is_null(v))
    ag__obs_value(vals, region, "throughput", stat, json_incref(v), unit, qual);
}

/* Synthesize `throughput`: the PM run's samples joined with the reference
 * trace's region timeline. */
static int ex_synth_throughput(ag_exec_ctx *cx, ag_task *t) {
  obs *ob = cx->ud;
  const ag_task *pc = ag__obs_collect_dep(cx->plan, t, "pm");
  const ag_task *tc = ag__obs_collect_dep(cx->plan, t, "trace");
  const char *hp = out_of(pc, "pm"), *ht = out_of(tc, "evidence");
  char *pd = NULL, *td = NULL;
  size_t pl = 0, tl = 0;
  ag_pm_ev *pm = NULL;
  ag_evidence *ev = NULL;
  ag_trace *tr = NULL;
  json_t *sig = NULL, *out = NULL;
  ag_str pprog = AG_STR_INIT, tprog = AG_STR_INIT;
  ag_diags d;
  ag_diags_init(&d);
  int rc;
  if (!hp || !ht) {
    rc = ag__obs_fail(t, AG_ENOTFOUND, "throughput needs %s: %s",
                      !hp ? "the PM-sampling run" : "the reference trace (its region timeline)",
                      !hp && pc && pc->error   ? pc->error
                      : !ht && tc && tc->error ? tc->error
                                               : "it did not run");
    goto out;
  }
  if ((rc = ag__obs_get(ob, t, hp, "the PM samples", &pd, &pl)) ||
      (rc = ag__obs_get(ob, t, ht, "the reference trace", &td, &tl)))
    goto out;
  if ((rc = ag_pm_ev_load_mem(pd, pl, "pm.json", &d, &pm)) ||
      (rc = ag_evidence_load_mem(td, tl, "trace.agev", &d, &ev)) ||
      (rc = ag_trace_decode(ev, &tr))) {
    rc = ag__obs_fail_diags(t, rc, "cannot decode the throughput's evidence", &d);
    goto out;
  }
  pm_program(ob, cx->plan, pc, pm, &pprog);
  ag__obs_evidence_program(ob, cx->plan, tc, ev, &tprog);
  ag_pm_signal_in in = {pm, tr, ag_str_cstr(&pprog), ag_str_cstr(&tprog), 0};
  json_t *vals = json_array(), *warn = json_array();
  out = json_pack("{s:o,s:o,s:s}", "values", vals, "warnings", warn, "program", ob->program);
  if (!out) {
    rc = ag__obs_fail(t, AG_ENOMEM, "out of memory");
    goto out;
  }
  rc = ag_pm_signal(&in, &d, &sig);
  if (rc == AG_EINVAL) { /* another program or an unalignable run: never joined silently */
    ag_str why = AG_STR_INIT, what = AG_STR_INIT;
    ag_diags_format(&d, &why);
    while (why.len && why.p[why.len - 1] == '\n')
      why.p[--why.len] = 0;
    ag_str_printf(&what, "throughput of '%s' (t%d)", t->region ? t->region : "", t->id);
    json_t *entry = json_pack("{s:s,s:s}", "what", ag_str_cstr(&what), "why", ag_str_cstr(&why));
    json_object_set_new(out, "not_joined", json_pack("[O]", entry));
    json_object_set_new(out, "missing", json_pack("[{s:s,s:s}]", "what", "the PM samples",
                                                  "why", "not joined: see not_joined"));
    json_decref(entry);
    ag_str_release(&why);
    ag_str_release(&what);
    rc = ag__obs_put_json(ob, t, "values", out, "json");
    goto out;
  }
  if (rc) {
    rc = ag__obs_fail_diags(t, rc, "the throughput join failed", &d);
    goto out;
  }
  size_t i;
  json_t *r, *w;
  json_array_foreach(json_object_get(sig, "regions"), i, r) {
    const char *name = json_string_value(json_object_get(r, "region"));
    static const char *const ks[][2] = {{"dram_read_GBps", "GB/s"}, {"dram_write_GBps", "GB/s"},
                                        {"l2_GBps", "GB/s"},        {"sm_active_pct", "%"},
                                        {"tensor_active_pct", "%"}, {"fma_ginst_per_s", "Ginst/s"},
                                        {"windows", "count"},       {"covered_share", "ratio"}};
    for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++)
      put(vals, name, ks[k][0], json_object_get(r, ks[k][0]), ks[k][1], "derived");
  }
  /* the rule, and what the run lost, stated beside the values */
  put(vals, "(throughput)", "rule", json_object_get(sig, "rule"), "", "derived");
  put(vals, "(throughput)", "threshold", json_object_get(sig, "threshold"), "ratio", "derived");
  put(vals, "(throughput)", "interval_ns", json_object_get(sig, "interval_ns"), "ns", "observed");
  put(vals, "(throughput)", "windows", json_object_get(sig, "windows"), "count", "observed");
  put(vals, "(throughput)", "mixed_windows", json_object_get(sig, "mixed_windows"), "count",
      "derived");
  put(vals, "(throughput)", "overflow", json_object_get(sig, "overflow"), "count", "observed");
  put(vals, "(throughput)", "clock_offset_ns",
      json_object_get(json_object_get(sig, "clock"), "offset_ns"), "ns", "observed");
  put(vals, "(throughput)", "clock_error_ns",
      json_object_get(json_object_get(sig, "clock"), "error_ns"), "ns", "observed");
  json_array_foreach(json_object_get(sig, "warnings"), i, w) json_array_append(warn, w);
  ag_scope s;
  ag__obs_scope_of(t, &s);
  ag_str sc = AG_STR_INIT;
  ag_scope_format(&s, &sc);
  if (sc.len) /* the counters are the whole GPU's */
    json_array_append_new(warn, json_sprintf("throughput covers every SM, CTA and warp: the PM "
                                             "sampler counts for the whole GPU, so the scope "
                                             "'%s' is not applied to it",
                                             ag_str_cstr(&sc)));
  ag_str_release(&sc);
  json_object_set(out, "throughput", sig);
  rc = ag__obs_put_json(ob, t, "values", out, "json");
out:
  json_decref(sig);
  json_decref(out);
  ag_trace_free(tr);
  ag_evidence_free(ev);
  ag_pm_ev_free(pm);
  ag_free(pd);
  ag_free(td);
  ag_str_release(&pprog);
  ag_str_release(&tprog);
  ag_diags_release(&d);
  return rc;
}

static const ag_executor pm_execs[] = {{"synth.throughput", ex_synth_throughput}};

static const char *const pm_evidence[] = {"pm", NULL};

const ag_backend ag__backend_pm = {
    .name = "pm",
    .summary = "CUPTI PM sampling beside the timing run of the build the user ships: hardware "
               "counters per sampling window, joined with the reference trace's regions",
    .evidence = pm_evidence,
    .effects = AG_EFF_PERTURBS_TIMING,
    .variant = "trace-free",
    .collector = "pm",
    .output = "pm",
    .decode = pm_decode,
    .release = pm_release,
    .collect = pm_collect,
    .execs = pm_execs,
    .nexecs = sizeof pm_execs / sizeof pm_execs[0],
};
