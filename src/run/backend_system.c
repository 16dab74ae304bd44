/*
 * backend_system.c — the system timeline (signal `system`, docs/system.md):
 * the build the user ships, run once under the host runtime's "system"
 * collection (the timing run with CUPTI's activity trace beside it:
 * kernels, copies, sets, synchronizations, streams, correlation IDs), in a
 * run of its own (its transform config keeps it apart from the trace-free
 * timing run, whose kernel times it would move). Synthesis: per launch
 * and per stream, on the %globaltimer clock (argus/system_ev.h).
 */
#include <string.h>

#include "argus/system_ev.h"
#include "observe_int.h"

/* The collect hook: the production build when the compile made one (what
 * the user ships, as the timing run), under ARGUS_COLLECT=system, in a
 * harness process of its own (one CUPTI subscriber per process). */
static int system_collect(ag_exec_ctx *cx, ag_task *t, ag_collect_job *job) {
  const char *prod = ag__obs_input(cx->plan, t, "production");
  if (prod)
    job->cubin = prod;
  job->ro->collect = "system";
  job->own_process = 1;
  return 0;
}

static int system_decode(const void *data, size_t len, const char *what, ag_diags *d,
                         void **out) {
  return ag_sys_ev_load_mem(data, len, what, d, (ag_sys_ev **)out);
}

static void system_release(void *e) { ag_sys_ev_free(e); }

static json_t *dim(const json_t *o, const char *k) { return json_deep_copy(json_object_get(o, k)); }

/* Synthesize `system`: per launch and per stream (observed). */
static int ex_synth_system(ag_exec_ctx *cx, ag_task *t) {
  obs *ob = cx->ud;
  const char *h = ag__obs_input(cx->plan, t, "system");
  char *data = NULL;
  size_t len = 0;
  ag_sys_ev *e = NULL;
  ag_diags d;
  ag_diags_init(&d);
  int rc = ag__obs_get(ob, t, h, "the system timeline", &data, &len);
  if (rc)
    goto out;
  if ((rc = ag_sys_ev_load_mem(data, len, "system.json", &d, &e))) {
    rc = ag__obs_fail_diags(t, rc, "the system timeline's evidence", &d);
    goto out;
  }
  json_t *sig = ag_sys_signal(e), *vals = json_array(), *o;
  if (!sig || !vals) {
    json_decref(sig);
    json_decref(vals);
    rc = ag__obs_fail(t, AG_ENOMEM, "out of memory");
    goto out;
  }
  size_t i;
  char name[320];
  json_array_foreach(json_object_get(sig, "launches"), i, o) {
    snprintf(name, sizeof name, "(launch %lld %s)",
             (long long)json_integer_value(json_object_get(o, "launch")),
             json_string_value(json_object_get(o, "kernel")));
    static const char *const ks[][2] = {{"duration_ns", "ns"}, {"start_ns", "ns"},
                                        {"stream", ""},       {"corr", ""},
                                        {"registers", "registers"}, {"static_smem", "bytes"},
                                        {"dynamic_smem", "bytes"}};
    for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++)
      ag__obs_value(vals, name, "system", ks[k][0], json_incref(json_object_get(o, ks[k][0])),
                    ks[k][1], "observed");
    ag__obs_value(vals, name, "system", "grid", dim(o, "grid"), "", "observed");
    ag__obs_value(vals, name, "system", "block", dim(o, "block"), "", "observed");
  }
  json_array_foreach(json_object_get(sig, "streams"), i, o) {
    snprintf(name, sizeof name, "(stream %lld)",
             (long long)json_integer_value(json_object_get(o, "stream")));
    static const char *const ks[][2] = {{"kernels", "count"}, {"memcpy", "count"},
                                        {"memset", "count"},  {"sync", "count"},
                                        {"busy_ns", "ns"},    {"bytes", "bytes"}};
    for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++)
      ag__obs_value(vals, name, "system", ks[k][0], json_incref(json_object_get(o, ks[k][0])),
                    ks[k][1], "observed");
  }
  json_t *clk = json_object_get(sig, "clock");
  ag__obs_value(vals, "(system)", "system", "clock_offset_ns",
                json_incref(json_object_get(clk, "offset_ns")), "ns", "observed");
  ag__obs_value(vals, "(system)", "system", "clock_error_ns",
                json_incref(json_object_get(clk, "error_ns")), "ns", "observed");
  ag__obs_value(vals, "(system)", "system", "dropped_records",
                json_incref(json_object_get(sig, "dropped_records")), "count", "observed");
  json_t *res = json_pack("{s:o,s:o}", "values", vals, "system", sig);
  rc = ag__obs_put_json(ob, t, "values", res, "json");
  json_decref(res);
out:
  ag_diags_release(&d);
  ag_sys_ev_free(e);
  ag_free(data);
  return rc;
}

static const ag_executor system_execs[] = {{"synth.system", ex_synth_system}};

static const char *const system_evidence[] = {"system", NULL};

const ag_backend ag__backend_system = {
    .name = "system",
    .summary = "the system timeline: CUPTI activity (kernels, copies, sets, synchronization, "
               "streams) beside the timing run of the build the user ships",
    .evidence = system_evidence,
    .effects = AG_EFF_PERTURBS_TIMING,
    .variant = "trace-free",
    .collector = "system",
    .output = "system",
    .decode = system_decode,
    .release = system_release,
    .collect = system_collect,
    .execs = system_execs,
    .nexecs = sizeof system_execs / sizeof system_execs[0],
};
