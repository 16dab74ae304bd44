/*
 * backend_system.c — the system timeline (signal `system`, docs/system.md):
 * the build the user ships, run once under the host runtime's "system"
 * collection (the timing run with CUPTI's activity trace beside it:
 * kernels, copies, sets, synchronizations, streams, correlation IDs), in a
 * run of its own (its transform config keeps it apart from the trace-free
 * timing run, whose kernel times it would move). Synthesis: per launch
 * and per stream, on the %globaltimer clock, over the launches the scope
 * selects (ag_sys_synth, argus/system_ev.h).
 */
#include <string.h>

#include "argus/comm.h"
#include "argus/system_ev.h"
#include "observe_int.h"

/* The comm evidence's run: its variant's transform config (collect <-
 * compile <- transform) asks for the launch calls ("api"). */
static int wants_api(const ag_plan *p, const ag_task *t) {
  const ag_task *c = p && t->deps.n ? ag_plan_task(p, t->deps.v[0]) : NULL;
  const ag_task *v = c && c->deps.n ? ag_plan_task(p, c->deps.v[0]) : NULL;
  return v && json_is_true(json_object_get(v->config, "api"));
}

/* The collect hook: the production build when the compile made one (what
 * the user ships, as the timing run), under ARGUS_COLLECT=system, in a
 * harness process of its own (one CUPTI subscriber per process). */
static int system_collect(ag_exec_ctx *cx, ag_task *t, ag_collect_job *job) {
  /* the comm evidence: the launch calls too, and every GPU (docs/comm.md) */
  static const char *const with_api[] = {
      "ARGUS_ACTIVITY_KINDS=kernel,memcpy,memset,sync,stream,nvtx,api", NULL};
  const char *prod = ag__obs_input(cx->plan, t, "production");
  if (prod)
    job->cubin = prod;
  job->ro->collect = "system";
  job->own_process = 1;
  if (wants_api(cx->plan, t)) {
    if (job->ro->env_extra)
      return ag__obs_fail(t, AG_EINVAL, "the comm signal's run sets ARGUS_ACTIVITY_KINDS, and "
                                        "this run has an environment of its own already");
    job->ro->env_extra = with_api;
    job->all_devices = 1;
  }
  return 0;
}

static int system_decode(const void *data, size_t len, const char *what, ag_diags *d,
                         void **out) {
  return ag_sys_ev_load_mem(data, len, what, d, (ag_sys_ev **)out);
}

static void system_release(void *e) { ag_sys_ev_free(e); }

/* Synthesize `system`: per launch and per stream (observed), over the
 * launches the query's scope selects (the evidence kind's retained scope
 * says which coordinates select: docs/system.md, "Scope"). */
static int ex_synth_system(ag_exec_ctx *cx, ag_task *t) {
  obs *ob = cx->ud;
  /* the comm collection is the system backend's run too: its output is
   * named "system" (the backend's output; the only input of synth.comm) */
  const char *h = ag__obs_input(cx->plan, t, "system");
  const ag_evidence_kind *ek = ag_evidence_find("system");
  char *data = NULL;
  size_t len = 0;
  ag_sys_ev *e = NULL;
  json_t *res = NULL;
  ag_scope scope;
  ag_diags d;
  ag_diags_init(&d);
  int rc = ag__obs_scope_of(t, &scope);
  if (rc) {
    rc = ag__obs_fail(t, rc, "the synthesis's scope does not parse");
    goto out;
  }
  if ((rc = ag__obs_get(ob, t, h, "the system timeline", &data, &len)))
    goto out;
  if ((rc = ag_sys_ev_load_mem(data, len, "system.json", &d, &e))) {
    rc = ag__obs_fail_diags(t, rc, "the system timeline's evidence", &d);
    goto out;
  }
  if (!strcmp(t->op, "synth.comm") ? (rc = ag_comm_synth(e, &d, &res)) != 0
                                    : (rc = ag_sys_synth(e, &scope, ek ? ek->retained_scope : 0,
                                                         &res)) != 0) {
    rc = rc == AG_ENOMEM ? ag__obs_fail(t, rc, "out of memory")
                         : ag__obs_fail_diags(t, rc, "the comm signal's NVTX declarations", &d);
    goto out;
  }
  rc = ag__obs_put_json(ob, t, "values", res, "json");
out:
  json_decref(res);
  ag_diags_release(&d);
  ag_sys_ev_free(e);
  ag_free(data);
  return rc;
}

/* synth.system and synth.comm (argus/comm.h): NCCL's collectives on the
 * same evidence, read with the launch calls */
static const ag_executor system_execs[] = {{"synth.system", ex_synth_system},
                                           {"synth.comm", ex_synth_system}};

static const char *const system_evidence[] = {"system", "comm", NULL};

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
