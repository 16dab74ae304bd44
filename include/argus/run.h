/*
 * argus/run.h — the task runtime (src/run): a dependency-driven scheduler
 * that dispatches each task of a plan as soon as its inputs exist. CPU tasks
 * (transform, compile, synthesize, control) run on a pool of threads; tasks
 * that need a GPU run on a lane per device, one at a time, so collections
 * never share a device concurrently. Control tasks may add branches while
 * the plan runs (the plan's expander). A failed task fails alone: its
 * dependents are skipped with the reason, everything else goes on, and
 * tasks marked partial_ok (the report) run with what exists.
 */
#ifndef ARGUS_RUN_H
#define ARGUS_RUN_H

#include "argus/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ag_exec_ctx {
  ag_plan *plan;
  int device; /* the device lane a GPU task runs on; -1 for CPU tasks */
  void *ud;   /* ag_run_opts.ud */
} ag_exec_ctx;

/* Runs one task: reads its dependencies' outputs (ag_plan_task(plan, id)
 * ->outputs), sets t->outputs (a JSON object it owns), returns 0; or
 * returns an AG_E* code and sets t->error (ag_malloc'd text). Called from a
 * worker thread: it must not touch other tasks' fields except to read the
 * outputs of its (finished) dependencies. */
typedef int (*ag_exec_fn)(ag_exec_ctx *cx, ag_task *t);

typedef struct ag_executor {
  const char *op; /* matches ag_task.op; "*" matches any op */
  ag_exec_fn fn;
} ag_executor;

/* Memoization: lookup returns 1 and sets *outputs (new reference) when a task
 * with the same identity already succeeded (it may also record that the task
 * starts, and set t->key: ag_task_compute_key or the workspace's own key);
 * publish records how a task that lookup recorded as started ended
 * (t->status is AG_TS_OK or AG_TS_FAILED: it ran, or the scheduler failed
 * it, e.g. a GPU task without a GPU). When lookup found the same identity
 * being run by another process it sets t->memo_busy; the worker thread then
 * calls wait before running the task, which returns 1 with *outputs when
 * that run succeeded (the task is cached: one execution serves both), 1
 * with *outputs NULL and t->error set when it failed (the task fails with
 * that reason), or 0 when this task is to run after all (it may have
 * recorded its start). Any of them may be NULL (no memoization). */
typedef struct ag_memo {
  int (*lookup)(void *ud, const ag_task *t, json_t **outputs);
  int (*publish)(void *ud, const ag_task *t);
  void *ud;
  int (*wait)(void *ud, ag_task *t, json_t **outputs);
} ag_memo;

typedef void (*ag_progress_fn)(void *ud, const ag_plan *p, const ag_task *t, int done,
                               int total);

typedef struct ag_run_opts {
  int cpu_workers; /* <= 0: number of online CPUs */
  int ndevices;    /* GPU lanes; 0: tasks that need a GPU fail with AG_ENODEV */
  const ag_executor *execs;
  size_t nexecs;
  void *ud;
  ag_memo memo;
  ag_progress_fn progress; /* called in the scheduler thread after each task */
  void *progress_ud;
  int only_failed; /* rerun only tasks that failed or were skipped before */
  unsigned types;  /* bit (1 << ag_task_type) per type to run; 0 = all. Tasks of
                      other types, and everything downstream, stay pending
                      (`argus plan` runs only Control tasks). */
} ag_run_opts;

typedef struct ag_run_stats {
  int total, ok, failed, skipped, cached;
  double wall_s;
} ag_run_stats;

/* Computes t->key: SHA-256 over type, op, canonical config, program, the
 * canonical outputs of its dependencies (which name their artifacts by
 * hash) and the Argus version. Call once the dependencies are done. */
int ag_task_compute_key(const ag_plan *p, ag_task *t);

/* Runs every pending task. Returns 0 when the scheduler itself worked (even
 * if tasks failed: see stats), or an error (AG_ENOMEM, AG_EINVAL for a cycle
 * or a task without an executor is reported as that task's failure). */
int ag_run_plan(ag_plan *p, const ag_run_opts *o, ag_run_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
