/*
 * argus/plan.h — queries, scopes, recipes and the planner (src/plan).
 *
 * A query observe(region, signals, scope) is bound to a program version and
 * planned into a DAG of typed tasks: Transform (artifact -> artifact),
 * Collect (run a variant with backends -> evidence), Synthesize (evidence ->
 * derived data / report) and Control (discovery; adds branches while the plan
 * runs). Each signal resolves to a recipe — data in a table — naming the
 * evidence it needs; evidence providers name their transforms, backends,
 * retained scope coordinates and collection effects. The planner merges
 * collections that can share a run and separates those whose effects
 * conflict: the plan is measurement-valid, not minimal.
 *
 * The plan owns everything in its arena; task configs are jansson objects
 * owned by the task (released with the plan).
 */
#ifndef ARGUS_PLAN_H
#define ARGUS_PLAN_H

#include "argus/core.h"
#include "argus/task.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ scope */
#define AG_SCOPE_MAX_RANGES 16
typedef struct ag_range {
  int64_t lo, hi; /* [lo, hi) */
} ag_range;

typedef struct ag_scope_dim {
  int n; /* 0: unrestricted */
  ag_range r[AG_SCOPE_MAX_RANGES];
} ag_scope_dim;

typedef enum ag_scope_key {
  AG_SCOPE_ITER, AG_SCOPE_SM, AG_SCOPE_CTA, AG_SCOPE_WARP, AG_SCOPE_LAUNCH,
  AG_SCOPE_NDIMS
} ag_scope_key;

typedef struct ag_scope {
  char role[64]; /* "" = any role */
  ag_scope_dim dim[AG_SCOPE_NDIMS];
} ag_scope;

/* Parses "role=consumer,iter=0:8,sm=3,sm=5:7" (ranges are [a, b); a single
 * value is [a, a+1); a key may repeat to add ranges). Unknown keys, malformed
 * ranges and empty ranges give a diagnostic and AG_EPARSE. "" = everything. */
int ag_scope_parse(const char *text, ag_scope *out, ag_diags *d);
/* Canonical text: keys in fixed order, ranges sorted; "" for everything. */
int ag_scope_format(const ag_scope *s, ag_str *out);
int ag_scope_contains(const ag_scope *s, ag_scope_key k, int64_t v);
const char *ag_scope_key_name(ag_scope_key k);

/* ------------------------------------------------------- launch selection */
/* `--launches SPEC`: which launches a traced run records. "all", "last",
 * "N" (launch N) or "a:b" (launches a..b-1, half-open as scope ranges);
 * NULL or "" is the default: skip the first (warm-up) launch when there are
 * others and record as many whole launches as the record budget holds. */
typedef enum ag_launch_kind {
  AG_LAUNCH_DEFAULT, AG_LAUNCH_ALL, AG_LAUNCH_LAST, AG_LAUNCH_RANGE
} ag_launch_kind;
typedef struct ag_launch_sel {
  ag_launch_kind kind;
  int64_t lo, hi; /* AG_LAUNCH_RANGE: [lo, hi) */
} ag_launch_sel;
/* Malformed or empty ranges give a diagnostic (d may be NULL) and AG_EPARSE. */
int ag_launch_sel_parse(const char *text, ag_launch_sel *out, ag_diags *d);

/* ---------------------------------------------------------------- effects */
typedef enum ag_effect {
  AG_EFF_PERTURBS_TIMING = 1u << 0,    /* instrumentation adds work */
  AG_EFF_FORCES_COMPLETION = 1u << 1,  /* a probe waits where the program would not */
  AG_EFF_PATCHES_SASS = 1u << 2,       /* binary patching (CUPTI SASS metrics) */
  AG_EFF_SERIALIZES_KERNELS = 1u << 3, /* range profiler, replay */
} ag_effect;

/* Do two collections with these effects have to run apart? */
int ag_effects_conflict(unsigned a, unsigned b);
/* "perturbs_timing|forces_completion" */
int ag_effects_format(unsigned effects, ag_str *out);

/* ---------------------------------------------------------------- recipes */
typedef enum ag_qual { AG_QUAL_OBSERVED, AG_QUAL_ATTRIBUTED, AG_QUAL_DERIVED } ag_qual;
const char *ag_qual_name(ag_qual q);

/* Evidence provider: how one kind of evidence is obtained. */
typedef struct ag_evidence_kind {
  const char *name;        /* "trace", "compile_log" */
  const char *variant;     /* program variant it needs: "traced", "trace-free", ... */
  const char *backend;     /* collect backend, NULL if no run is needed */
  const char *prereq;      /* Control analysis it needs first ("discover"), or NULL */
  unsigned retained_scope; /* bit (1<<ag_scope_key) per coordinate recorded */
  unsigned effects;        /* collection effects (ag_effect bits) */
  int per_instance;        /* 1: one isolated collection per discovered instance */
  const char *transform;   /* extra transform configuration (JSON object text) or NULL:
                              "{\"waits\":true}" makes a traced variant time the waits */
  const char *baseline;    /* evidence kind of the unperturbed run this collection's cost
                              is measured against ("kernel_time"), or NULL: its variant is
                              compiled within the baseline's occupancy, its run is sized
                              from the baseline's launches, and synth.perturbation
                              compares the two (docs/tracing.md, "Perturbation") */
  const char *compile;     /* extra compile configuration (JSON object text) or NULL:
                              "{\"lineinfo\":true}" compiles the variant with ptxas
                              -lineinfo (the same SASS, with the SASS -> PTX line table
                              attribution reads: docs/attribution.md) */
} ag_evidence_kind;

typedef struct ag_recipe {
  const char *signal;   /* "duration" */
  const char *evidence; /* ag_evidence_kind name */
  const char *synth;    /* synthesis rule (a Synthesize op) */
  ag_qual qual;
  const char *unit;
  const char *summary;  /* one line for --help and docs */
  const char *reference; /* evidence kind of the run that gives the observed
                            baseline the synthesis joins (or NULL) */
  int evidence_optional; /* 1: the synthesis runs also when the evidence's run failed,
                            deriving what it can from the reference run (inst_mix and
                            barriers from the map alone: docs/attribution.md); it fails
                            itself, saying why, when it cannot */
} ag_recipe;

const ag_recipe *ag_recipe_find(const char *signal);
const ag_evidence_kind *ag_evidence_find(const char *name);
/* Iterates the table: returns NULL past the end. */
const ag_recipe *ag_recipe_at(size_t i);

/* A recipe table: rows of recipes and evidence kinds. The planner reads the
 * built-in one (ag_recipe_builtin); a test may plan with rows of its own to
 * exercise combinations the built-in table does not have yet. */
typedef struct ag_recipe_table {
  const ag_recipe *recipes;
  size_t nrecipes;
  const ag_evidence_kind *kinds;
  size_t nkinds;
} ag_recipe_table;
const ag_recipe_table *ag_recipe_builtin(void);
const ag_recipe *ag_recipe_table_find(const ag_recipe_table *t, const char *signal);
const ag_evidence_kind *ag_evidence_table_find(const ag_recipe_table *t, const char *name);

/* ------------------------------------------------------------------ tasks */
typedef enum ag_task_status {
  AG_TS_PENDING, AG_TS_RUNNING, AG_TS_OK, AG_TS_FAILED, AG_TS_SKIPPED, AG_TS_CACHED
} ag_task_status;
const char *ag_task_status_name(ag_task_status s);

typedef struct ag_sampling {
  int warmups;
  int repetitions;
} ag_sampling;

typedef struct ag_task ag_task;
struct ag_task {
  int id;
  ag_task_type type;
  const char *op;      /* executor name: "discover", "transform.traced", "compile", ... */
  const char *label;   /* short text for people */
  const char *program; /* program version the task reads (id or hash) */
  const char *region;  /* qualified region name or NULL */
  ag_scope scope;
  json_t *config;      /* canonical backend / transform configuration (owned) */
  unsigned effects;
  int run;             /* Collect: run partition id (>= 0); -1 otherwise */
  int needs_gpu;
  int partial_ok;      /* runs even when some dependencies failed (the report) */
  ag_sampling sampling;
  AG_VEC(int) deps;    /* task ids */
  /* filled in by the runtime */
  ag_task_status status;
  json_t *outputs;     /* name -> value (artifact hash, path, data); owned */
  char *error;         /* why it failed or was skipped (owned) */
  char key[65];        /* memoization key (hex), "" until computed */
  int64_t memo_id;     /* the workspace's record of this run of the task, 0 if none */
  int64_t memo_busy;   /* another process's running attempt of the same key, 0 if none */
  double wall_s;
  int ran;             /* 1 when an executor ran it in this process */
};

/* A Control task's expander: called after the task succeeded, with its
 * outputs; may add tasks (which may depend on any existing task). */
typedef struct ag_plan ag_plan;
typedef int (*ag_expander)(ag_plan *p, ag_task *control, void *ud);

typedef struct ag_query {
  const char *region;
  const char *const *signals;
  int nsignals;
  ag_scope scope;
} ag_query;

struct ag_plan {
  ag_arena arena;
  AG_VEC(ag_task *) tasks;
  ag_query query;
  const char *program;
  int nruns;
  int report_task; /* id of the final Synthesize(report) task, -1 if none */
  ag_expander expand;
  void *expand_ud;
};

/* Builds the plan for a query on a program version. Unknown signals and
 * empty scopes give diagnostics and AG_EINVAL. */
int ag_plan_build(const ag_query *q, const char *program, ag_diags *d, ag_plan **out);
/* The same with a recipe table of the caller's (it must outlive the plan). */
int ag_plan_build_table(const ag_query *q, const char *program, const ag_recipe_table *tbl,
                        ag_diags *d, ag_plan **out);
void ag_plan_free(ag_plan *p);

/* Adds a task (deduplicated: an identical op + config + deps returns the
 * existing task). config is stolen. */
ag_task *ag_plan_add(ag_plan *p, ag_task_type type, const char *op, const char *label,
                     const char *region, const ag_scope *scope, json_t *config,
                     const int *deps, int ndeps);
int ag_plan_add_dep(ag_plan *p, ag_task *t, int dep);
ag_task *ag_plan_task(const ag_plan *p, int id);
/* The first failed task after `after` (NULL: from the start), in plan
 * order, or NULL: `for (t = ag_plan_next_failed(p, NULL); t; t =
 * ag_plan_next_failed(p, t))` visits every failure (a discovery that
 * failed makes a failed plan). */
const ag_task *ag_plan_next_failed(const ag_plan *p, const ag_task *after);

/* Numbers the runs: one per Collect task, each one execution of the harness.
 * The planner has already merged the collections that can share a run into
 * one Collect task (same compiled variant, effects that do not conflict:
 * its "backends" lists them all); collections whose effects conflict, and
 * per-instance probes, are Collect tasks of their own. Called by
 * ag_plan_build and again after expansion. */
void ag_plan_partition(ag_plan *p);

/* Async probes (docs/probes.md). The expansion of a Control(discover) task
 * for per-instance evidence: from the discovery's site table (the JSON of
 * ag_ptx_regions_to_json), one branch per (async site in the queried
 * region's subtree, iteration in the scope's iteration window):
 * transform.probe -> compile -> collect (its own run, forces_completion),
 * each feeding the signal's Synthesize task. Call it from the plan's
 * expander with the discover task's outputs. At most AG_PROBE_MAX_BRANCHES
 * branches (AG_EINVAL with a message in *why beyond). */
#define AG_PROBE_MAX_BRANCHES 4096
/* The launch a probe collection records (launches before it run unrecorded):
 * the harness's second, warm like the reference's later launches. */
#define AG_PROBE_LAUNCH 1
int ag_probe_expand(ag_plan *p, const ag_task *control, const json_t *discovery,
                    ag_str *why);
/* The expansion of the Control task `count` that ag_probe_expand adds
 * (deps: the discovery and the reference run): counts is its output (the
 * reference's begin markers per iteration, ag_async_count). Every pending
 * probe collect that waits for it and whose site's occurrence comes from a
 * begin marker (discovery's iterations.marker_line) that never began at
 * that iteration is skipped before it runs (config "absent": "counted"),
 * with the compile and transform only it needed, and listed in its
 * synthesis's "absent" (from "counted"); the synthesis's "iterations_from"
 * says what the plan used. A count that lost records drops nothing. */
int ag_probe_prune(ag_plan *p, const ag_task *count, const json_t *discovery,
                   const json_t *counts, ag_str *why);

/* Printing: text for people, JSON, Graphviz dot. */
int ag_plan_print_text(const ag_plan *p, ag_str *out);
json_t *ag_plan_to_json(const ag_plan *p);
int ag_plan_print_dot(const ag_plan *p, ag_str *out);

#ifdef __cplusplus
}
#endif
#endif
