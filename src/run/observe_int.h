/*
 * observe_int.h — what the driver of `argus observe` (observe.c) shares with
 * the backend adapters (backend_<name>.c, docs/backends.md): the query's
 * state, which every executor gets as ag_exec_ctx.ud, and the helpers that
 * read and write a task's artifacts in the workspace. Internal to
 * argus_observe.
 */
#ifndef ARGUS_OBSERVE_INT_H
#define ARGUS_OBSERVE_INT_H

#include "argus/backend.h"
#include "argus/collect.h"
#include "argus/observe.h"
#include "argus/spec.h"
#include "argus/store.h"
#include "argus/synth.h"

typedef struct obs {
  ag_store *st;
  ag_spec *spec;
  const ag_observe_opts *o;
  ag_query query;
  char ptx_hash[65];
  char program[80];
  int64_t root_version;
  int64_t query_id;
  char *rundir; /* <workspace>/runs */
  ag_plan *plan;
  const ag_backend_set *backends; /* the adapters this query runs with */
  /* how every variant is compiled: the ptxas options nvcc passes for the
   * spec's flags (NULL: nvcc's default for the PTX's .target), and the
   * build's identity for the memo key (compiler, options, production) */
  char **ptxas_opts;
  const char *ptxas; /* the ptxas (NULL: ag_jit_ptxas's; a python spec: Triton's) */
  json_t *build;
  /* multi-variant GPU workers, one per device lane (spec "run_library"),
   * or NULL: a harness process per collection */
  ag_worker **workers;
  int nworkers;
  /* everything besides the variant that can change what a collection
   * measures (harness_identity): part of every Collect task's key */
  json_t *harness;
} obs;

/* Sets t->error (formatted) and returns rc, or AG_EINVAL for rc 0. */
int ag__obs_fail(ag_task *t, int rc, const char *fmt, ...) AG_PRINTF(3, 4);
/* The same with the diagnostics appended after `what`. */
int ag__obs_fail_diags(ag_task *t, int rc, const char *what, const ag_diags *d);
/* Stores data as an artifact of `kind` and names it t->outputs[name]. */
int ag__obs_put(obs *ob, ag_task *t, const char *name, const void *data, size_t len,
                const char *kind);
int ag__obs_put_json(obs *ob, ag_task *t, const char *name, json_t *j, const char *kind);
/* The artifact hash named `name` among t's dependencies' outputs (borrowed). */
const char *ag__obs_input(const ag_plan *p, const ag_task *t, const char *name);
/* The outputs[name] of the first dependency of t whose op is `op`. */
const char *ag__obs_dep_output(const ag_plan *p, const ag_task *t, const char *op,
                               const char *name);
/* Reads an artifact (owned *data, ag_free) or its JSON (owned *out). */
int ag__obs_get(obs *ob, ag_task *t, const char *hash, const char *what, char **data,
                size_t *len);
int ag__obs_get_json(obs *ob, ag_task *t, const char *hash, const char *what, json_t **out);
/* Does Collect task t list collector b; the first dependency of t that is a
 * Collect task listing b; the first dependency of this type. */
int ag__obs_has_backend(const ag_task *t, const char *b);
const ag_task *ag__obs_collect_dep(const ag_plan *p, const ag_task *t, const char *b);
const ag_task *ag__obs_dep_of(const ag_plan *p, const ag_task *t, ag_task_type type);
/* Appends one value of a synthesis output: {region, signal, stat, value, unit, qual}. */
void ag__obs_value(json_t *vals, const char *region, const char *signal, const char *stat,
                   json_t *v, const char *unit, const char *qual);
/* The program version a collection's evidence belongs to (docs/report.md). */
void ag__obs_evidence_program(const obs *ob, const ag_plan *p, const ag_task *collect,
                              const ag_evidence *ev, ag_str *out);
/* A Synthesize task's scope. */
int ag__obs_scope_of(const ag_task *t, ag_scope *s);
/* The decoder of the evidence file format the trace collector writes
 * (docs/evidence.md): an ag_evidence (ag_evidence_load_mem), for the
 * adapters whose collector is "trace". */
int ag__obs_evidence_decode(const void *data, size_t len, const char *what, ag_diags *d,
                            void **out);
void ag__obs_evidence_release(void *ev);
/* The synthesis of the attributed signals (ownership, inst_mix, barriers,
 * branch: backend_map.c), shared by the map and sass adapters. */
int ag__obs_synth_attributed(ag_exec_ctx *cx, ag_task *t);
/* "the user's build (nvcc -cubin FLAGS, markers off)" */
void ag__obs_user_build_label(const ag_spec *sp, ag_str *w);

#endif
