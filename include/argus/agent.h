/*
 * argus/agent.h — `argus optimize` (src/agent, docs/optimize.md): the task
 * file, the knowledge base of edits, the validator and the policies of the
 * optimization loop, whose candidates are program versions in the
 * workspace.
 *
 * Library code: never prints, never exits. Errors are AG_E* codes with
 * diagnostics (file:line:col for task files and KB entries) or a message.
 */
#ifndef ARGUS_AGENT_H
#define ARGUS_AGENT_H

#include "argus/core.h"
#include "argus/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ task */
/* A task file (JSON, docs/optimize.md "Task files"). Paths are resolved
 * against the task file's directory. */
typedef struct ag_opt_task {
  char *name;        /* [A-Za-z0-9._-], 1..64: the refs optimize/<name>/... */
  char *file;        /* the task file as given */
  char *program;     /* the starting .tile (resolved path) */
  char *reference;   /* the reference .tile (resolved; default: program) */
  char *sizes;       /* "M=64,N=64,K=64": argus run's --size text; the check and the
                        correctness runs (toy sizes: the reference is interpreted) */
  char *time_sizes;  /* the same names at the timing (and evidence) sizes; NULL: sizes */
  char **outputs;    /* tensors the reference defines (NULL-terminated); every other tensor
                        is an input */
  int noutputs;
  double atol, rtol; /* 0: the dtype's tolerance (docs/run.md) */
  uint64_t *seeds;   /* correctness inputs, one run per seed (and the policy's seed: seeds[0]) */
  int nseeds;
  int samples;       /* timing samples (GPU) */
} ag_opt_task;

/* Loads and validates a task file: AG_EPARSE with diagnostics at the key or
 * value (an unknown key, a wrong type, a missing field, a size that is not a
 * positive integer below 2^32, a bad name, a file that cannot be read).
 * *out is owned: ag_opt_task_free. */
int ag_opt_task_load(const char *path, ag_diags *d, ag_opt_task **out);
void ag_opt_task_free(ag_opt_task *t);

/* ---------------------------------------------------------- knowledge base */
/* One entry of src/agent/kb/ (a JSON file each): its precondition on the
 * program (and on evidence), the edit of the tile source it makes, the
 * invariant templates that must still hold. */
typedef struct ag_kb_entry {
  char *id;
  char *file;
  json_t *j; /* the whole entry (owned reference) */
} ag_kb_entry;

typedef struct ag_kb {
  ag_kb_entry *e;
  int n;
} ag_kb;

/* Loads every *.json of dir (sorted by name). AG_EPARSE with diagnostics at
 * the offending key of the offending file. */
int ag_kb_load(const char *dir, ag_diags *d, ag_kb *out);
void ag_kb_release(ag_kb *kb);
/* The knowledge base shipped with Argus: $ARGUS_KB_DIR, else the source
 * tree's src/agent/kb. Static text. */
const char *ag_kb_default_dir(void);

/* 1 when the program preconditions of e hold on src (constants, text the
 * program contains or not); why (may be NULL) gets the first that fails. */
int ag_kb_applies(const ag_kb_entry *e, const char *src, ag_str *why);
/* The parameter values of e's edit, in the order the search tries them
 * (json array, borrowed); values equal to the program's current one are
 * skipped by ag_kb_apply. */
const json_t *ag_kb_values(const ag_kb_entry *e);
/* Applies e to src with parameter value v (a set_const's value, a splice's
 * {V}; ignored by a rewrite and a splice without values): *out the edited
 * source (owned), *what the transform text ("kb:pipeline-stages(STAGES=2)",
 * "kb:attn-causal-skip(1 step)", owned). AG_EINVAL when the edit does not
 * apply or changes nothing (why says which: a splice's anchor on no line or
 * on several). */
int ag_kb_apply(const ag_kb_entry *e, const char *src, const json_t *v, char **out, char **what,
                ag_str *why);
/* The value of module-level constant NAME in src (a plain integer). */
int ag_tile_src_const(const char *src, const char *name, int64_t *val);

/* 1 when every evidence precondition of e holds on evidence (an object of
 * ag_opt_evidence_from_report), 0 when one fails (why gets which), -1 when
 * one cannot be decided: no evidence, or a signal it did not observe. */
int ag_kb_evidence_holds(const ag_kb_entry *e, const json_t *evidence, ag_str *why);

/* ------------------------------------------------------- region evidence */
/* Evidence (docs/optimize.md, "Region evidence"): {"kernel", "sizes",
 * "signals": ["duration"], "total_ns": the kernel's, "regions": {PATH:
 * {"total_ns", "count", "share"}}}, PATH the region below the kernel
 * ("mainloop", "prologue/loop_i_42"). From an `argus observe` report
 * (its "values"); AG_ENOTFOUND (why says) when it has no duration of the
 * kernel. *out owned. */
int ag_opt_evidence_from_report(const json_t *report, const char *kernel, const char *sizes,
                                json_t **out, char *why, size_t whylen);
/* A region's share of the kernel's time (0 for a region not in it). */
double ag_opt_evidence_share(const json_t *evidence, const char *region);
/* 1 when (signal, metric) is one evidence preconditions and gains read
 * (metric NULL: any of the signal's); *region: 1 when it is of a region,
 * *unit: 1 when it lies in 0..1 (either may be NULL). */
int ag_opt_metric_known(const char *signal, const char *metric, int *region, int *unit);
/* The signals the evidence preconditions may name ("duration, inst_mix, ..."), or with
 * metrics 1 each signal with its metrics ("duration: share; inst_mix: loads_per_mma, ...")
 * from the same table ag_opt_metric_known reads: into buf (cap bytes, cut when short). */
void ag_opt_metric_list(int metrics, char *buf, size_t cap);
/* The value of a metric in evidence: 1 with *v, 0 when the signal was not
 * observed or the metric is not defined there (no tensor instruction).
 * duration share (0 for a region not in it); inst_mix loads_per_mma,
 * load_share, shared_share of region; static occupancy, registers. */
int ag_opt_evidence_metric(const json_t *evidence, const char *region, const char *signal,
                           const char *metric, double *v);
/* Adds the theoretical occupancy (ag_occupancy, sm_90's limits) to the
 * evidence's "static" from its registers and static shared memory and the
 * launch's threads and dynamic shared memory; AG_ENOTFOUND without
 * registers. */
int ag_opt_evidence_occupancy(json_t *evidence, unsigned threads, unsigned dynamic_smem);
/* The expected gain of entry e on the program src with evidence: the share
 * of time of the region it targets times each factor of its "gain" (an
 * evidence metric, its complement, the tile's intensity gain, a scale);
 * how (NULL: not wanted) gets the product written out. */
double ag_kb_gain(const ag_kb_entry *e, const json_t *evidence, const char *src, ag_str *how);
/* The signals the KB's evidence preconditions and gains read, duration
 * first, comma-separated, into out. */
int ag_kb_signals(const ag_kb *kb, ag_str *out);

/* ------------------------------------------------------------- validator */
typedef struct ag_opt_verdict {
  int ok;              /* 1: every step that ran passed */
  char step[32];       /* the first step that failed ("" when ok) */
  int timed;           /* 1: the timing step ran (a GPU) */
  double median_ms;    /* when timed */
  json_t *feedback;    /* {"ok", "failed_step", "steps": [{"step", "status", ...}]}: owned */
} ag_opt_verdict;

/* How the validator runs the candidate: AUTO takes the GPU when there is
 * one (argus run's launch path) and the value interpreter otherwise; CPU
 * always the interpreter (timing: not run). */
typedef enum ag_opt_device { AG_OPT_DEVICE_AUTO, AG_OPT_DEVICE_CPU } ag_opt_device;

/* Validates a candidate's source, in order: parse, `argus check` at the
 * task's sizes (the counterexample is the feedback), invariants of the edit
 * (kb may be NULL), lowering, binding to the sizes, compilation (NVRTC,
 * where built), correctness against the reference on each seed (fresh
 * seeded buffers per run, inputs compared byte for byte after it), timing
 * (GPU only). Returns 0 with *v filled whatever the verdict, or AG_ENOMEM
 * / AG_EIO for the validator's own failures (err says). */
int ag_opt_validate(const ag_opt_task *t, const char *src, size_t len, const char *name,
                    const ag_kb_entry *kb, ag_opt_device dev, ag_opt_verdict *v, char *err,
                    size_t errlen);
void ag_opt_verdict_release(ag_opt_verdict *v);

/* 1 (why: the diagnostics) when the task's sizes or time_sizes refuse src
 * before anything is checked: it does not parse, a size is missing or
 * unknown, it does not lower, or an `assume` does not hold at them (BM =
 * 128 at M = 64); 0 when it binds at both. The evidence and blind
 * searches propose only such candidates: a refusal that depends on no
 * measurement is not a trial. */
int ag_opt_admissible(const ag_opt_task *t, const char *src, const char *name, char *why,
                      size_t whylen);

/* ------------------------------------------------------------ the loop */
struct ag_opt_opts;
/* Collects the evidence of a valid candidate src: 0 with *ev (owned), or
 * non-zero with why (no GPU, an observation that failed): the evidence is
 * then absent. workdir: a directory of the workspace for scratch files. */
typedef int (*ag_opt_evidence_fn)(const ag_opt_task *t, const struct ag_opt_opts *o,
                                  const char *src, const char *workdir, json_t **ev, char *why,
                                  size_t whylen);
/* The collector the evidence and llm policies use by default: `argus
 * observe` (the duration of every region) on the candidate lowered at the
 * task's timing sizes, on the GPU; AG_ENODEV without one or with --cpu. The
 * tile spec builder must be registered (ag_spec_set_tile_builder: argus
 * does). */
int ag_opt_evidence_observe(const ag_opt_task *t, const struct ag_opt_opts *o, const char *src,
                            const char *workdir, json_t **ev, char *why, size_t whylen);

typedef struct ag_opt_opts {
  const char *policy;     /* "evidence", "blind" or "llm" */
  const char *const *llm_argv; /* llm: the policy command (argv, never a shell) */
  int trials;             /* candidates to make in this run (0: 5) */
  double budget_s;        /* stop starting trials after this many seconds (0: none) */
  int resume;             /* 1: continue the run recorded in the workspace */
  uint64_t seed;          /* the search's seed (ties, blind's order; 0: the task's first
                             seed); a resumed run keeps the seed it was started with */
  const char *kb_dir;     /* NULL: ag_kb_default_dir() */
  ag_opt_device device;
  double llm_timeout_s;   /* 0: 600 */
  int llm_tokens;         /* llm: the request's budget in tokens, 4 bytes each: the history's
                             oldest trials are left out to stay under it (0: 32768) */
  ag_opt_evidence_fn evidence; /* NULL: ag_opt_evidence_observe; blind never calls it */
  const char *evidence_signals; /* the signals the collector observes, comma-separated
                                   (ag_opt_run sets it from the KB: ag_kb_signals); NULL:
                                   "duration" */
} ag_opt_opts;

typedef struct ag_opt_trial {
  int n;                  /* 0: the starting program */
  int64_t version, parent;
  char *edit;             /* the transform text */
  char step[32];          /* failed step, "" when valid */
  int valid, timed;
  double median_ms;
  char *rank;             /* how the policy ranked the entries for it ("evidence: mainloop
                             0.97", "prior: no evidence of v3 (no GPU ...)"); NULL: none */
  int has_evidence;       /* 1: the version's evidence was collected */
} ag_opt_trial;

typedef struct ag_opt_result {
  ag_opt_trial *trials;   /* every trial of the run so far, resumed ones too */
  int ntrials;
  int64_t best;           /* the version optimize/<task>/best names */
  int stopped;            /* 1: stopped by the budget before the trials were made */
  char state[AG_STORE_HASH_LEN + 1]; /* the state artifact */
} ag_opt_result;

/* Runs the loop (docs/optimize.md): AG_EPARSE (bad policy, or the policy
 * command's garbage: err says), AG_EEXISTS (a run of this task is in the
 * workspace and resume is 0), AG_ENOTFOUND (resume with no run), AG_ECHILD
 * (the policy command crashed). r is filled as far as it got. */
int ag_opt_run(ag_store *st, const ag_opt_task *t, const ag_opt_opts *o, ag_opt_result *r,
               char *err, size_t errlen);
void ag_opt_result_release(ag_opt_result *r);

#ifdef __cplusplus
}
#endif
#endif
