/*
 * backend_counters.c — hardware counters (signal `hw_counters`,
 * docs/counters.md): the build the user ships, run once under the host
 * runtime's "counters" collection (CUPTI's range profiler: a range per
 * kernel launch, each launch replayed once per pass, or the harness's own
 * ranges, the harness run once per pass), in a harness process of its own
 * and a run of its own (effect serializes_kernels). Binding checks the
 * metrics the query names (--metrics) against the chip's list on the CPU,
 * with close matches for a name it lacks. Synthesis: every range's metric
 * values with their units and its roofline position (argus/counters_ev.h).
 */
#include <string.h>

#include "argus/counters_ev.h"
#include "observe_int.h"

static int is_counters(const ag_task *t) {
  return t->type == AG_TASK_COLLECT && ag__obs_has_backend(t, "counters");
}

/* The query's metrics and range mode into the counters run's
 * configuration (so its key), after checking the names; the run's label
 * says how many passes the set needs. */
static int counters_bind(const ag_observe_opts *o, ag_plan *p, ag_diags *d) {
  ag_task *run = NULL;
  for (size_t i = 0; i < p->tasks.n && !run; i++)
    if (is_counters(p->tasks.v[i]))
      run = p->tasks.v[i];
  int named = o->metrics && *o->metrics;
  if (!run) {
    if (named || o->counter_ranges) {
      ag_diags_add(d, AG_SEV_ERROR, NULL, 0, 0, NULL, 0, "--%s names hardware counters: it "
                   "needs the signal hw_counters (--signals ...,hw_counters)",
                   named ? "metrics" : "counter-ranges");
      return AG_EINVAL;
    }
    return 0;
  }
  const char *mode = o->counter_ranges ? o->counter_ranges : "auto";
  if (strcmp(mode, "auto") && strcmp(mode, "user")) {
    ag_diags_add(d, AG_SEV_ERROR, NULL, 0, 0, NULL, 0, "--counter-ranges '%s' is neither "
                 "'auto' (a range per kernel launch) nor 'user' (the harness's "
                 "ag_host_range_push/pop)", mode);
    return AG_EINVAL;
  }
  ag_str why = AG_STR_INIT;
  size_t passes = 0;
  int rc = ag_counters_check(NULL, named ? o->metrics : NULL, &passes, &why);
  if (rc == AG_EINVAL) {
    ag_diags_add(d, AG_SEV_ERROR, NULL, 0, 0, NULL, 0, "--metrics: %s", ag_str_cstr(&why));
    ag_str_release(&why);
    return AG_EINVAL;
  }
  if (rc)
    ag_diags_add(d, AG_SEV_WARNING, NULL, 0, 0, NULL, 0, "hardware-counter names not checked "
                 "on this machine (%s): the collector checks them on the GPU",
                 ag_str_cstr(&why));
  ag_str_release(&why);
  for (size_t i = 0; i < p->tasks.n; i++) {
    ag_task *t = p->tasks.v[i];
    if (!is_counters(t))
      continue;
    if (named)
      json_object_set_new(t->config, "metrics", json_string(o->metrics));
    json_object_set_new(t->config, "ranges", json_string(mode));
    ag_str l = AG_STR_INIT;
    if (passes)
      ag_str_printf(&l, "%s: hardware counters, %zu replay pass%s per %s", t->label, passes,
                    passes == 1 ? "" : "es", strcmp(mode, "user") ? "launch (kernel replay)"
                                                                  : "harness run");
    else
      ag_str_printf(&l, "%s: hardware counters", t->label);
    const char *nl = l.oom ? NULL : ag_arena_strdup(&p->arena, ag_str_cstr(&l));
    if (nl)
      t->label = nl;
    ag_str_release(&l);
  }
  return 0;
}

/* The collect hook: the production build when the compile made one (what
 * the user ships), under ARGUS_COLLECT=counters, in a harness process of
 * its own (one CUPTI subscriber per process). */
static int counters_collect(ag_exec_ctx *cx, ag_task *t, ag_collect_job *job) {
  const char *prod = cx ? ag__obs_input(cx->plan, t, "production") : NULL;
  if (prod)
    job->cubin = prod;
  job->ro->collect = "counters";
  job->ro->counters_metrics = t ? json_string_value(json_object_get(t->config, "metrics")) : NULL;
  job->ro->counters_range = t ? json_string_value(json_object_get(t->config, "ranges")) : NULL;
  job->own_process = 1;
  return 0;
}

static int counters_decode(const void *data, size_t len, const char *what, ag_diags *d,
                           void **out) {
  return ag_ctr_ev_load_mem(data, len, what, d, (ag_ctr_ev **)out);
}

static void counters_release(void *e) { ag_ctr_ev_free(e); }

static const char *const roof_units[][2] = {
    {"duration_ns", "ns"},         {"dram_bytes", "bytes"},
    {"fp32_flop", "FLOP"},         {"fp64_flop", "FLOP"},
    {"fp16_inst_flop", "FLOP"},    {"fp32_flop_per_s", "FLOP/s"},
    {"fp64_flop_per_s", "FLOP/s"}, {"dram_bytes_per_s", "bytes/s"},
    {"intensity", "FLOP/byte"},    {"ridge", "FLOP/byte"},
    {"roof_flop_per_s", "FLOP/s"}, {"pct_of_roof", "percent"},
    {"pct_of_peak_flop", "percent"}, {"pct_of_peak_dram", "percent"},
    {"bound", ""},                 {"precision", ""},
    {"tensor_flop", "FLOP"},       {"tensor_flop_per_s", "FLOP/s"},
    {"tensor_source", ""},         {"tensor_peak_flop_per_s", "FLOP/s"},
    {"pct_of_tensor_peak", "percent"}};

/* The report's values of the signal: per range every metric (its unit
 * CUPTI's), its roofline, the user ranges' sums and the device's peaks. */
static void counter_values(json_t *vals, const json_t *sig) {
  size_t i, k;
  json_t *r, *m;
  json_array_foreach(json_object_get(sig, "ranges"), i, r) {
    const char *name = json_string_value(json_object_get(r, "name"));
    json_array_foreach(json_object_get(sig, "metrics"), k, m) {
      const char *mn = json_string_value(json_object_get(m, "name"));
      ag__obs_value(vals, name, "hw_counters", mn,
                    json_incref(json_object_get(json_object_get(r, "values"), mn)),
                    json_string_value(json_object_get(m, "unit")), "observed");
    }
    for (k = 0; k < sizeof roof_units / sizeof roof_units[0]; k++) {
      char stat[64];
      snprintf(stat, sizeof stat, "roofline.%s", roof_units[k][0]);
      ag__obs_value(vals, name, "hw_counters", stat,
                    json_incref(json_object_get(json_object_get(r, "roofline"), roof_units[k][0])),
                    roof_units[k][1], "observed");
    }
  }
  json_array_foreach(json_object_get(sig, "user_ranges"), i, r) {
    char name[320];
    snprintf(name, sizeof name, "(user range %s)", json_string_value(json_object_get(r, "name")));
    ag__obs_value(vals, name, "hw_counters", "launches",
                  json_incref(json_object_get(r, "launches")), "count", "observed");
    const char *mn;
    json_t *v;
    json_object_foreach(json_object_get(r, "sums"), mn, v) {
      const char *unit = "";
      json_array_foreach(json_object_get(sig, "metrics"), k, m)
        if (!strcmp(json_string_value(json_object_get(m, "name")), mn))
          unit = json_string_value(json_object_get(m, "unit"));
      ag__obs_value(vals, name, "hw_counters", mn, json_incref(v), unit, "observed");
    }
  }
  json_t *pk = json_object_get(sig, "peaks");
  static const char *const pks[][2] = {{"fp32_flop_per_s", "FLOP/s"},
                                       {"fp64_flop_per_s", "FLOP/s"},
                                       {"dram_bytes_per_s", "bytes/s"},
                                       {"counter_fp32_flop_per_s", "FLOP/s"},
                                       {"counter_dram_bytes_per_s", "bytes/s"},
                                       {"sm_hz_measured", "Hz"}};
  for (k = 0; k < sizeof pks / sizeof pks[0]; k++) {
    char stat[64];
    snprintf(stat, sizeof stat, "peak.%s", pks[k][0]);
    ag__obs_value(vals, "(device)", "hw_counters", stat,
                  json_incref(json_object_get(pk, pks[k][0])), pks[k][1], "observed");
  }
}

/* Synthesize `hw_counters` (observed, per range). */
static int ex_synth_counters(ag_exec_ctx *cx, ag_task *t) {
  obs *ob = cx->ud;
  const char *h = ag__obs_input(cx->plan, t, "counters");
  char *data = NULL;
  size_t len = 0;
  ag_ctr_ev *e = NULL;
  ag_diags d;
  ag_diags_init(&d);
  int rc = ag__obs_get(ob, t, h, "the hardware counters", &data, &len);
  if (rc)
    goto out;
  if ((rc = ag_ctr_ev_load_mem(data, len, "counters.json", &d, &e))) {
    rc = ag__obs_fail_diags(t, rc, "the hardware counters' evidence", &d);
    goto out;
  }
  json_t *sig = ag_ctr_signal(e), *vals = json_array();
  if (!sig || !vals) {
    json_decref(sig);
    json_decref(vals);
    rc = ag__obs_fail(t, AG_ENOMEM, "out of memory");
    goto out;
  }
  counter_values(vals, sig);
  json_t *res = json_pack("{s:o,s:O,s:o}", "values", vals, "warnings",
                          json_object_get(sig, "warnings"), "hw_counters", sig);
  rc = res ? ag__obs_put_json(ob, t, "values", res, "json") : AG_ENOMEM;
  json_decref(res);
out:
  ag_diags_release(&d);
  ag_ctr_ev_free(e);
  ag_free(data);
  return rc;
}

static const ag_executor counters_execs[] = {{"synth.hw_counters", ex_synth_counters}};

static const char *const counters_evidence[] = {"counters", NULL};

const ag_backend ag__backend_counters = {
    .name = "counters",
    .summary = "hardware counters: CUPTI's range profiler on the build the user ships, a range "
               "per kernel launch (replayed once per pass) or per harness range, in a run and "
               "a process of its own",
    .evidence = counters_evidence,
    .effects = AG_EFF_SERIALIZES_KERNELS,
    .variant = "trace-free",
    .collector = "counters",
    .output = "counters",
    .decode = counters_decode,
    .release = counters_release,
    .execs = counters_execs,
    .nexecs = sizeof counters_execs / sizeof counters_execs[0],
    .bind = counters_bind,
    .collect = counters_collect,
};
