/*
 * argus/backend.h — the backend contract of `argus observe` (src/run/backend.c,
 * one src/run/backend_<name>.c per backend; docs/backends.md).
 *
 * A backend adapter is one way of obtaining evidence: region tracing, the
 * trace-free timing run, forced-completion probes, the compiler's report,
 * and later the PC->region mapping run and CUPTI SASS metrics. Each adapter
 * declares, as data: its name; the evidence kinds it provides (rows of the
 * recipe table, src/plan/recipe.c, which say what the planner needs); the
 * effects those collections may have; the variant its transform makes; the
 * collector of the host runtime (libargus_host, ARGUS_COLLECT) that runs in
 * the harness; its decoder; and its executors (its synthesis rules and,
 * when the generic variant transform does not make its variant, its
 * transform). Optional hooks let the generic driver ask it to bind options
 * to the plan, to prepare a Collect task's run and to expand a Control task.
 *
 * The planner (plan.h) and the scheduler (run.h) stay generic: the planner
 * reads recipe rows, the scheduler looks executors up by op. A backend set
 * joins the adapters' executors with the driver's generic ones into the
 * scheduler's executor table, and checks that the adapters and the recipe
 * rows agree (every row's collector and synthesis rule has an adapter, no
 * row has an effect its adapter does not declare). Adding a backend adds an
 * adapter file and recipe rows; the driver (src/run/observe.c) does not
 * change.
 *
 * Adapters are static const data; a set borrows them (they must outlive
 * it). ag_backend_set_* is built once per query: a handful of adapters.
 */
#ifndef ARGUS_BACKEND_H
#define ARGUS_BACKEND_H

#include "argus/collect.h"
#include "argus/plan.h"
#include "argus/run.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ag_observe_opts;

/* A Collect task's run as the generic collect executor prepares it (one
 * harness run: ag_trace_run or the GPU worker), handed to the collect hook
 * of each adapter whose collector the task lists ("backends"). */
typedef struct ag_collect_job {
  const char *cubin;     /* artifact hash of the cubin the run loads (the compiled
                            variant); a hook may name another (the timing run loads
                            the user's build, the compile's "production" output) */
  ag_trace_run_opts *ro; /* the run's options; hooks set what their collector needs
                            (time_only, skip/max launches, count_records, ...) */
  const char *output;    /* the name (and artifact kind) the evidence file is stored
                            under: the adapter's output, "evidence" if none; a hook
                            may change it */
  json_t *extra;         /* name -> JSON the driver stores beside the evidence as
                            artifacts of kind "json" (owned by the job) */
  int own_process;       /* 1: the run is a harness process of its own, never a
                            multi-variant worker's (CUPTI patches a kernel only at
                            its first launch in a process: docs/sass-metrics.md) */
  int all_devices;       /* 1: the harness sees every GPU (not bound to the lane's:
                            a multi-GPU communicator, docs/comm.md) */
} ag_collect_job;

/* Decodes one evidence artifact of this backend into *out (owned; released
 * with the adapter's release). Bad input: AG_EPARSE / AG_ECORRUPT with a
 * diagnostic in d naming `what`. */
typedef int (*ag_backend_decode_fn)(const void *data, size_t len, const char *what,
                                    ag_diags *d, void **out);

typedef struct ag_backend {
  const char *name;    /* adapter name, unique in a set: "trace", "time", "probe" */
  const char *summary; /* one line for people (docs/backends.md) */
  /* the evidence kinds (recipe-table rows) it provides, NULL-terminated */
  const char *const *evidence;
  unsigned effects;    /* ag_effect bits its collections may have: every row of
                          its evidence must stay within them */
  const char *variant; /* the variant kind its transform makes ("traced"), or NULL */
  const char *collector; /* the recipe rows' collect backend, which is the host
                            runtime's ARGUS_COLLECT value ("trace", "time"); NULL
                            when its evidence needs no run (the compiler's report).
                            Two adapters may share a collector (probes run the
                            trace collector); at most one of them has a collect hook */
  const char *output;  /* the Collect output (and artifact kind) its evidence is stored
                          under ("evidence", "timing"), or NULL: "evidence". The generic
                          collect sets job->output from it before the collect hook */
  ag_backend_decode_fn decode; /* its evidence's decoder, or NULL */
  void (*release)(void *decoded);
  /* its executors: synthesis rules ("synth.duration") and, when the generic
   * variant transform (ag_variant_make_ex) does not make its variant,
   * "transform.<variant>" */
  const ag_executor *execs;
  size_t nexecs;
  /* hooks (each may be NULL). bind: once per query, before the plan runs,
   * to put the query's options into its tasks' configurations (so into
   * their keys); diagnostics in d, AG_EINVAL on bad options. */
  int (*bind)(const struct ag_observe_opts *o, ag_plan *p, ag_diags *d);
  /* collect: once per Collect task that lists its collector, before the
   * run directory is made (job->ro holds the generic options; the paths
   * are set after the hooks). Returns 0 or an AG_E* code with t->error set. */
  int (*collect)(ag_exec_ctx *cx, ag_task *t, ag_collect_job *job);
  /* expand: after a Control(discover) task succeeded, when a signal of the
   * plan needs one of its evidence kinds: may add branches (ag_plan_add);
   * `discovery` is the site table (ag_ptx_regions_to_json). AG_E* with a
   * message in *why. */
  int (*expand)(ag_plan *p, const ag_task *control, const json_t *discovery, ag_str *why);
  /* control_done: after a Control task of the adapter's own (an op among
   * its execs, e.g. the probe backend's "count") succeeded: may add or
   * prune branches. `ud` is the driver's state (src/run/observe_int.h).
   * An AG_E* code with the control task's error set. */
  int (*control_done)(void *ud, ag_plan *p, ag_task *control);
} ag_backend;

/* A set of adapters and the executor table it makes. */
typedef struct ag_backend_set {
  AG_VEC(const ag_backend *) backends;
  AG_VEC(ag_executor) execs; /* the adapters' executors, then the generic ones */
  ag_arena arena;            /* op names made for generic variant transforms */
} ag_backend_set;

/* The built-in adapters (trace, time, probe, static), NULL-terminated.
 * Defined with the adapters in libargus_observe. */
const ag_backend *const *ag_backends_builtin(void);

/* Makes a set of adapters (list: n entries, or NULL-terminated when n < 0)
 * and the generic executors (the driver's: discover, compile, collect,
 * report, the generic variant transform `variant_fn`, which serves every
 * adapter variant that no adapter's executors transform). Fails with
 * AG_EINVAL (message in d) on two adapters of one name. */
int ag_backend_set_init(ag_backend_set *s, const ag_backend *const *list, int n,
                        const ag_executor *generic, size_t ngeneric, ag_exec_fn variant_fn,
                        ag_diags *d);
void ag_backend_set_release(ag_backend_set *s);

/* Borrowed, NULL when absent. */
const ag_backend *ag_backend_find(const ag_backend_set *s, const char *name);
/* The adapter that provides evidence kind `evidence`. */
const ag_backend *ag_backend_for_evidence(const ag_backend_set *s, const char *evidence);
/* The adapter whose executors serve op `op` (its own Control tasks). */
const ag_backend *ag_backend_for_op(const ag_backend_set *s, const char *op);
/* The adapter with a collect hook for collector `collector`. */
const ag_backend *ag_backend_collector(const ag_backend_set *s, const char *collector);

/* Checks that a recipe table and the adapters agree: every evidence kind
 * has exactly one adapter, whose collector is the row's backend, whose
 * variant is the row's and whose declared effects hold the row's; every
 * recipe's synthesis rule has an executor in the set; at most one collect
 * hook per collector. One diagnostic per disagreement; AG_EINVAL if any. */
int ag_backend_set_check(const ag_backend_set *s, const ag_recipe_table *t, ag_diags *d);

#ifdef __cplusplus
}
#endif
#endif
