/*
 * backend_probe.c — the forced-completion probe backend (docs/probes.md):
 * one probe variant per (async site, iteration) makes its wait complete
 * the operation where it is issued, each in a run of its own (the trace
 * collector records it). Its expansion adds the branches after discovery;
 * its synthesis rule joins them with the reference trace (async_latency).
 */
#include <string.h>

#include "argus/report.h"
#include "observe_int.h"

/* 1 when the evidence a collection made is this program's (joinable); else
 * 0 with the reason in why. */
static int evidence_joinable(const obs *ob, const ag_plan *p, const ag_task *collect,
                             const ag_evidence *ev, ag_str *why) {
  ag_str prog = AG_STR_INIT;
  ag__obs_evidence_program(ob, p, collect, ev, &prog);
  ag_provenance mine = {NULL, 0, ob->program, NULL, "", NULL},
                theirs = {NULL, 0, ag_str_cstr(&prog), NULL, "", NULL};
  int ok = ag_report_joinable(&mine, &theirs, why);
  ag_str_release(&prog);
  return ok;
}

/* Synthesize async_latency (docs/probes.md): the discovery's site table,
 * the reference run with timed waits (observed) and each probe run
 * (derived), joined by op ID and occurrence. Runs with the probe runs that
 * succeeded; the others are reported missing, with their reason. */
static int ex_synth_async(ag_exec_ctx *cx, ag_task *t) {
  obs *ob = cx->ud;
  json_t *disc = NULL, *out = NULL, *missing = json_array(), *not_joined = json_array();
  ag_evidence *ref = NULL, **probes = ag_calloc(t->deps.n + 1, sizeof *probes);
  int np = 0, rc = 0;
  ag_diags d;
  ag_diags_init(&d);
  if (!probes || !missing || !not_joined) {
    rc = ag__obs_fail(t, AG_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < t->deps.n; i++) {
    const ag_task *dt = ag_plan_task(cx->plan, t->deps.v[i]);
    int ok = dt->status == AG_TS_OK || dt->status == AG_TS_CACHED;
    if (dt->type == AG_TASK_CONTROL) {
      if (!ok ||
          (rc = ag__obs_get_json(ob, t, json_string_value(json_object_get(dt->outputs, "regions")),
                                 "the discovery", &disc)))
        goto out;
      continue;
    }
    if (dt->type != AG_TASK_COLLECT)
      continue;
    const char *vk = json_string_value(json_object_get(dt->config, "variant"));
    int is_probe = vk && !strcmp(vk, "probe");
    if (!ok && json_object_get(dt->config, "absent")) /* dropped by the count: "absent" */
      continue;
    if (!ok) {
      json_array_append_new(missing, json_pack("{s:s,s:s}", "what", dt->label, "why",
                                               dt->error ? dt->error : "not run"));
      continue;
    }
    char *data;
    size_t len;
    ag_evidence *ev = NULL;
    if ((rc = ag__obs_get(ob, t, json_string_value(json_object_get(dt->outputs, "evidence")),
                          "the evidence", &data, &len)))
      goto out;
    rc = ag_evidence_load_mem(data, len, dt->label, &d, &ev);
    ag_free(data);
    if (rc) {
      rc = ag__obs_fail_diags(t, rc, "cannot read the evidence", &d);
      goto out;
    }
    ag_str why = AG_STR_INIT;
    int joinable = evidence_joinable(ob, cx->plan, dt, ev, &why);
    if (!joinable) /* another build's evidence: listed, never joined */
      json_array_append_new(not_joined,
                            json_pack("{s:s,s:s}", "what", dt->label, "why", ag_str_cstr(&why)));
    ag_str_release(&why);
    if (!joinable)
      ag_evidence_free(ev);
    else if (is_probe)
      probes[np++] = ev;
    else if (!ref)
      ref = ev;
    else
      ag_evidence_free(ev);
  }
  if (!disc) {
    rc = ag__obs_fail(t, AG_EINVAL, "async_latency needs the discovery's site table");
    goto out;
  }
  ag_scope scope;
  ag__obs_scope_of(t, &scope);
  if ((rc = ag_async_synth(disc, ref, (const ag_evidence *const *)probes, np, &scope, &out))) {
    rc = ag__obs_fail(t, rc, "async_latency synthesis failed: %s", ag_strerror(rc));
    goto out;
  }
  /* the synthesis's own missing instances, then the runs that failed; the
   * requested (site, iteration) pairs that do not exist, as warnings */
  json_t *own = json_object_get(out, "missing");
  if (json_is_array(own))
    json_array_extend(own, missing);
  else
    json_object_set(out, "missing", missing);
  json_object_set_new(out, "not_joined", not_joined);
  not_joined = NULL;
  json_t *absent = json_object_get(t->config, "absent"), *a;
  json_t *warn = json_incref(json_object_get(out, "warnings")); /* the synthesis's own */
  if (!json_is_array(warn)) {
    json_decref(warn);
    warn = json_array();
  }
  size_t ai;
  json_array_foreach(absent, ai, a) {
    ag_str w = AG_STR_INIT;
    ag_str_printf(
        &w,
        "async_latency: no probe of %s at %zu requested iteration(s) (first %lld): "
        "the site does not execute there (%s)",
        json_string_value(json_object_get(a, "op")),
        json_array_size(json_object_get(a, "iterations")),
        (long long)json_integer_value(json_array_get(json_object_get(a, "iterations"), 0)),
        json_string_value(json_object_get(a, "why")));
    json_array_append_new(warn, json_string(ag_str_cstr(&w)));
    ag_str_release(&w);
  }
  json_object_set_new(out, "warnings", warn);
  json_object_set(out, "iterations_from", json_object_get(t->config, "iterations_from"));
  rc = ag__obs_put_json(ob, t, "values", out, "json");
out:
  for (int i = 0; i < np; i++)
    ag_evidence_free(probes[i]);
  ag_free(probes);
  ag_evidence_free(ref);
  json_decref(disc);
  json_decref(out);
  json_decref(missing);
  json_decref(not_joined);
  ag_diags_release(&d);
  return rc;
}

/* The counting run's output when it counted nothing (why: what and detail). */
static json_t *uncounted(const char *what, const char *detail) {
  return json_pack("{s:i,s:i,s:i,s:b,s:[],s:s+}", "format", 1, "launches", 0, "dropped", 0,
                   "complete", 0, "markers", "why", what, detail);
}

/* Control: the counting run (docs/probes.md): the reference run's records
 * per begin marker and iteration, which control_done prunes the probes by. */
static int ex_count(ag_exec_ctx *cx, ag_task *t) {
  obs *ob = cx->ud;
  const ag_task *ref = ag__obs_dep_of(cx->plan, t, AG_TASK_COLLECT);
  char *data = NULL;
  size_t len = 0;
  ag_evidence *ev = NULL;
  json_t *j = NULL;
  if (ref && ref->status != AG_TS_OK && ref->status != AG_TS_CACHED) { /* nothing to count */
    j = uncounted("the reference run did not succeed", "");
    int r = j ? ag__obs_put_json(ob, t, "counts", j, "json") : AG_ENOMEM;
    json_decref(j);
    return r;
  }
  ag_diags d;
  ag_diags_init(&d);
  int rc = ref ? ag__obs_get(ob, t, json_string_value(json_object_get(ref->outputs, "evidence")),
                             "the reference evidence", &data, &len)
               : ag__obs_fail(t, AG_EINVAL, "the counting run has no reference run");
  if (!rc && (rc = ag_evidence_load_mem(data, len, ref->label, &d, &ev)))
    rc = ag__obs_fail_diags(t, rc, "cannot read the reference evidence", &d);
  ag_str why = AG_STR_INIT;
  if (!rc && !evidence_joinable(ob, cx->plan, ref, ev, &why)) { /* another build's: not read */
    j = uncounted("the reference's evidence is not this program's: ", ag_str_cstr(&why));
    rc = j ? 0 : AG_ENOMEM;
  } else if (!rc && (rc = ag_async_count(ev, &j))) {
    rc = ag__obs_fail(t, rc, "counting the reference's iterations failed: %s", ag_strerror(rc));
  }
  ag_str_release(&why);
  if (!rc)
    rc = ag__obs_put_json(ob, t, "counts", j, "json");
  json_decref(j);
  ag_evidence_free(ev);
  ag_free(data);
  ag_diags_release(&d);
  return rc;
}

/* After the count: the probes of pairs that did not run are dropped before
 * they run (ag_probe_prune). */
static int count_done(void *ud, ag_plan *p, ag_task *count) {
  obs *ob = ud;
  if (strcmp(count->op, "count"))
    return 0;
  const ag_task *dt = ag__obs_dep_of(p, count, AG_TASK_CONTROL);
  json_t *disc = NULL, *counts = NULL;
  ag_str why = AG_STR_INIT;
  int rc = dt ? ag__obs_get_json(ob, count,
                                 json_string_value(json_object_get(dt->outputs, "regions")),
                                 "the discovery", &disc)
              : ag__obs_fail(count, AG_EINVAL, "the counting run has no discovery");
  if (!rc)
    rc = ag__obs_get_json(ob, count, json_string_value(json_object_get(count->outputs, "counts")),
                          "the counts", &counts);
  if (!rc && (rc = ag_probe_prune(p, count, disc, counts, &why)))
    ag__obs_fail(count, rc, "%s", ag_str_cstr(&why));
  ag_str_release(&why);
  json_decref(disc);
  json_decref(counts);
  return rc;
}

static const ag_executor probe_execs[] = {{"synth.async_latency", ex_synth_async},
                                          {"count", ex_count}};

static const char *const probe_evidence[] = {"async_probe", NULL};

const ag_backend ag__backend_probe = {
    .name = "probe",
    .summary = "forced-completion probes: one run per async site and iteration",
    .evidence = probe_evidence,
    .effects = AG_EFF_FORCES_COMPLETION,
    .variant = "probe",
    .collector = "trace",
    .output = "evidence",
    .decode = ag__obs_evidence_decode,
    .release = ag__obs_evidence_release,
    .execs = probe_execs,
    .nexecs = sizeof probe_execs / sizeof probe_execs[0],
    .expand = ag_probe_expand,
    .control_done = count_done,
};
