/*
 * plan_util.h — the probe tests' planner harness: discovery of a PTX file
 * into the site table, a plan for async_latency of a region expanded by the
 * real Control task (ag_probe_expand, as `argus plan` does), and the plan's
 * measurement-validity check (probe_runs).
 */
#ifndef ARGUS_TESTS_PLAN_UTIL_H
#define ARGUS_TESTS_PLAN_UTIL_H

#include "argus/ptx.h"
#include "argus/run.h"
#include "../trace/trace_util.h"

static json_t *discovery;

__attribute__((unused)) static int ex_discover(ag_exec_ctx *cx, ag_task *t) {
  (void)cx;
  t->outputs = json_pack("{s:s}", "regions", "in-memory");
  return 0;
}

static int expand(ag_plan *p, ag_task *control, void *ud) {
  (void)ud;
  ag_str why = AG_STR_INIT;
  int rc = ag_probe_expand(p, control, discovery, &why);
  if (rc)
    fprintf(stderr, "expand: %s\n", ag_str_cstr(&why));
  ag_str_release(&why);
  return rc;
}

/* The site table of a PTX file: a path under the build directory, or an
 * absolute one. */
__attribute__((unused)) static json_t *discover_file(const char *rel) {
  size_t len = 0;
  char *ptx = NULL;
  if (rel[0] == '/') {
    if (ag_file_read(rel, &ptx, &len))
      ptx = NULL;
  } else {
    ptx = tu_read_build_file(rel, &len);
  }
  if (!ptx)
    return NULL;
  ag_diags d;
  ag_diags_init(&d);
  ag_ptx_module *m = NULL;
  ag_ptx_regions *r = NULL;
  json_t *j = NULL;
  if (ag_ptx_parse(ptx, len, rel, &d, &m) == 0 && ag_ptx_discover(m, &d, &r) == 0)
    j = ag_ptx_regions_to_json(m, r);
  else
    tu_print_diags(&d);
  ag_ptx_module_free(m);
  ag_diags_release(&d);
  ag_free(ptx);
  return j;
}

__attribute__((unused)) static ag_plan *plan_and_expand(const char *region, const char *scope, int *rc_out) {
  const char *sigs[] = {"async_latency"};
  ag_query q = {.region = region, .signals = sigs, .nsignals = 1};
  ag_diags d;
  ag_diags_init(&d);
  ag_plan *p = NULL;
  int rc = ag_scope_parse(scope, &q.scope, &d);
  if (!rc)
    rc = ag_plan_build(&q, "tma_probe@test", &d, &p);
  ag_diags_release(&d);
  if (rc) {
    *rc_out = rc;
    return NULL;
  }
  p->expand = expand;
  ag_executor ex[] = {{"discover", ex_discover}};
  ag_run_opts o = {.cpu_workers = 1, .ndevices = 0, .execs = ex, .nexecs = 1,
                   .types = 1u << AG_TASK_CONTROL};
  ag_run_stats st;
  rc = ag_run_plan(p, &o, &st);
  ag_task *c = NULL;
  for (size_t i = 0; i < p->tasks.n; i++)
    if (p->tasks.v[i]->type == AG_TASK_CONTROL && !strcmp(p->tasks.v[i]->op, "discover"))
      c = p->tasks.v[i];
  *rc_out = rc ? rc : c && c->status == AG_TS_OK ? 0 : AG_EINVAL;
  return p;
}

/* The plan's measurement validity for async_latency: every probe collect
 * forces completion and has a run of its own, one reference run, and the
 * synthesis depends on all of them. Returns the number of probe runs, or -1
 * when the plan is invalid. */
__attribute__((unused)) static int probe_runs(const ag_plan *p, int *refs) {
  int probes = 0, bad = 0;
  *refs = 0;
  const ag_task *synth = NULL;
  for (size_t i = 0; i < p->tasks.n; i++)
    if (!strcmp(p->tasks.v[i]->op, "synth.async_latency"))
      synth = p->tasks.v[i];
  if (!synth)
    return -1;
  for (size_t i = 0; i < p->tasks.n; i++) {
    const ag_task *t = p->tasks.v[i];
    if (t->type != AG_TASK_COLLECT)
      continue;
    const char *v = json_string_value(json_object_get(t->config, "variant"));
    int feeds = 0;
    for (size_t k = 0; k < synth->deps.n; k++)
      feeds |= synth->deps.v[k] == t->id;
    if (!feeds || t->run < 0)
      bad = 1;
    for (size_t j = 0; j < p->tasks.n; j++) /* nobody shares its run */
      if (j != i && p->tasks.v[j]->type == AG_TASK_COLLECT && p->tasks.v[j]->run == t->run)
        bad = 1;
    if (v && !strcmp(v, "probe")) {
      probes++;
      bad |= !(t->effects & AG_EFF_FORCES_COMPLETION) || !t->needs_gpu;
    } else {
      (*refs)++;
    }
  }
  return bad ? -1 : probes;
}

#endif
