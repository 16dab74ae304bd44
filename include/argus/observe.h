/*
 * argus/observe.h — `argus observe` and `argus plan` as a library: a query on
 * a program spec is planned (plan.h), bound to a program version in the
 * workspace (store.h), and run by the scheduler (run.h) with the generic
 * executors of src/run/observe.c and the backend adapters' (backend.h); the result is a qualified report (report.h) stored in
 * the workspace. Every task's outputs are artifacts named by content hash, so
 * a task whose key already succeeded is taken from the workspace.
 */
#ifndef ARGUS_OBSERVE_H
#define ARGUS_OBSERVE_H

#include "argus/plan.h"
#include "argus/run.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ag_observe_opts {
  const char *spec;      /* program spec path */
  const char *workspace; /* workspace directory (created if absent) */
  const char *region;
  const char *const *signals;
  int nsignals;
  const char *scope; /* scope text; NULL = everything */
  int plan_only;     /* run only Control tasks (argus plan) */
  int ignore_damage; /* write even to a workspace ag_store_health calls damaged */
  int ndevices;      /* -1: probe the CUDA driver; 0: no GPU */
  double timeout_s;  /* per harness run; <= 0: 300 s */
  unsigned records_per_warp; /* 0: the host runtime's default */
  const char *launches;      /* --launches SPEC (ag_launch_sel_parse); NULL: the default */
  const char *trace_regions; /* --trace R,...: the traced variant probes only these regions
                                and their subtrees; NULL: every region */
  const char *metrics;       /* --metrics a,b: hardware counters read beside hw_counters'
                                default set (docs/counters.md); NULL: the default set */
  const char *counter_ranges; /* --counter-ranges auto|user: hw_counters' ranges; NULL: auto */
  ag_progress_fn progress;
  void *progress_ud;
} ag_observe_opts;

typedef struct ag_observe_result {
  ag_plan *plan;     /* owned (ag_plan_free) */
  ag_run_stats stats;
  json_t *report;    /* the report (new reference), NULL for plan_only or failure */
  char report_hash[65]; /* its artifact in the workspace, "" if none */
  char program[80];  /* "<name>@<ptx hash prefix>" */
  int64_t query_id;
  char nogpu_reason[256]; /* why GPU tasks could not run, "" if they could */
} ag_observe_result;

/* Plans and runs a query. Returns 0 when the plan ran (even if tasks failed:
 * the report says what is missing and why); an error with diagnostics when
 * the query, the spec or the workspace is unusable. */
int ag_observe(const ag_observe_opts *o, ag_diags *d, ag_observe_result *res);
void ag_observe_result_release(ag_observe_result *res);

#ifdef __cplusplus
}
#endif
#endif
