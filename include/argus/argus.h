/*
 * argus/argus.h — the stable client API of Argus (libargus.so; docs/api.md).
 *
 * One header for programs that call Argus instead of running the `argus`
 * command: open a workspace, plan a query, observe (the report as JSON text
 * and as values to read), check a tile program, read a stored report, list
 * and fork program versions by ref. It includes nothing of Argus's internal
 * headers (not even jansson): every object is an opaque handle, every
 * structured result is JSON text in the schemas docs/ describes.
 *
 * Versioning: ARGUS_API_VERSION is the API this header declares; the shared
 * library's soname is libargus.so.ARGUS_API_VERSION and only the argus_*
 * symbols listed in src/api/argus.map are exported. A change that breaks a
 * caller compiled against this header (a removed function, a changed
 * signature or struct, a renumbered code) bumps the version; additions keep
 * it. Options travel as JSON objects (NULL: the defaults) so new options do
 * not change signatures.
 *
 * Errors: every function that can fail returns an int: ARGUS_OK (0) or a
 * negative ARGUS_E* code. The calling thread's last error is then described
 * by argus_errmsg() (one line for people, what and where: "cannot open the
 * workspace '/x': ...") and argus_errdiags() (the diagnostics as a JSON
 * array of {severity, file, line, col, message}, "[]" when none). Both stay
 * valid until the next failing call in the same thread. The library never
 * prints and never exits.
 *
 * Memory: strings returned through char ** are owned by the caller and freed
 * with argus_free; const char * results are borrowed from the handle they
 * came from and live as long as it does. Handles may be used from one
 * thread at a time each.
 */
#ifndef ARGUS_ARGUS_H
#define ARGUS_ARGUS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ARGUS_API_VERSION 1

/* Error codes: the values of the library's AG_E* codes (argus/core.h),
 * frozen here. */
enum {
  ARGUS_OK = 0,
  ARGUS_ENOMEM = -999,       /* out of memory */
  ARGUS_EINVAL = -998,       /* invalid argument (a bad option, an unknown signal) */
  ARGUS_EIO = -997,          /* a file could not be read or written */
  ARGUS_EPARSE = -996,       /* malformed input (spec, tile program, report) */
  ARGUS_ENOTFOUND = -995,    /* no such file, workspace, ref, version or report */
  ARGUS_EEXISTS = -994,
  ARGUS_ECORRUPT = -993,     /* the workspace is damaged (argus ws check) */
  ARGUS_EBUSY = -992,
  ARGUS_EUNSUPPORTED = -991, /* not built into this library (no CUDA toolkit) */
  ARGUS_ESCHEMA = -990,      /* the workspace was written by a newer argus */
  ARGUS_ERANGE = -989,
  ARGUS_ETIMEOUT = -988,
  ARGUS_ECHILD = -987,
  ARGUS_ENODEV = -986,       /* no GPU */
  ARGUS_ECUDA = -985,
  ARGUS_ECUPTI = -984,
  ARGUS_EJIT = -983,         /* a compilation failed */
  ARGUS_ESQL = -982,
  ARGUS_ESOLVER = -981,      /* the checker's solver failed */
  ARGUS_EUNDEFINED = -980,
  ARGUS_EVIOLATION = -979,
  ARGUS_EFULL = -978,
  ARGUS_EISDIR = -977,       /* a directory where a file was expected */
  ARGUS_EFAILED = -900       /* the work ran and failed: a plan task failed (an unknown
                                region); the message says which and why */
};

/* ARGUS_API_VERSION of the library loaded (compare with the header's). */
int argus_api_version(void);
/* "0.1.0": the argus release. Static text. */
const char *argus_version(void);
/* "invalid argument" for ARGUS_EINVAL; static text, never NULL. */
const char *argus_strerror(int code);
/* "ARGUS_EINVAL"; static text, never NULL. */
const char *argus_error_name(int code);
/* The calling thread's last error (see above): borrowed, never NULL. */
const char *argus_errmsg(void);
const char *argus_errdiags(void);
/* Frees a string this library returned. NULL is a no-op. */
void argus_free(void *p);

/* ------------------------------------------------------------ workspace */
typedef struct argus_ws argus_ws;
enum { ARGUS_WS_CREATE = 1 }; /* create the workspace when it does not exist */

/* Opens the workspace directory `path` (NULL: $ARGUS_WORKSPACE, else
 * ".argus"). Without ARGUS_WS_CREATE a missing one is ARGUS_ENOTFOUND; one
 * written by a newer argus is ARGUS_ESCHEMA. *out is owned: argus_ws_close. */
int argus_ws_open(const char *path, unsigned flags, argus_ws **out);
void argus_ws_close(argus_ws *ws); /* NULL is a no-op */
/* The workspace directory. Borrowed. */
const char *argus_ws_path(const argus_ws *ws);
/* The refs as a JSON array of {name, target_type ("version"|"artifact"),
 * target ("v3" or a hash), updated}. */
int argus_ws_refs(argus_ws *ws, char **json_out);
/* Program versions, newest first (limit 0: all), as a JSON array of
 * {id, parent, module, transform, origin, task, created}. */
int argus_ws_versions(argus_ws *ws, size_t limit, char **json_out);
/* One version by what a person types ("v3", or a ref naming a version),
 * with "ancestry": [id, parent, ..., root]. */
int argus_ws_version(argus_ws *ws, const char *id, char **json_out);
/* Points ref `name` at `target` ("v3", a hash or prefix, another ref). */
int argus_ws_ref_set(argus_ws *ws, const char *name, const char *target);
/* Forks a program version: a new version whose parent is the version `from`
 * names ("v3" or a ref) and whose module is the PTX file `ptx_path` (NULL:
 * the parent's module, unchanged), made by `transform` (free text such as
 * "edit: unroll the main loop"; NULL: "fork"). When `ref` is not NULL it is
 * pointed at the new version. *version_out (may be NULL) gets its id. */
int argus_ws_fork(argus_ws *ws, const char *from, const char *ptx_path, const char *transform,
                  const char *ref, int64_t *version_out);

/* -------------------------------------------------------------- queries */
/* A query: the program spec file (docs/observe.md), a region ("gemm/mainloop"
 * or a local name), signals comma-separated (NULL: "duration"), a scope
 * ("iter=0:8,role=consumer"; NULL: everything). options_json (NULL: {}):
 *   "timeout_s": seconds per harness run, "records": trace records per
 *   warp (>= 16), "launches": "all"|"last"|"N"|"a:b", "trace": "r1,r2",
 *   "ignore_damage": true.
 * An unknown option or a value of the wrong type is ARGUS_EINVAL. */

/* The measurement plan without collecting (discovery runs: every branch is
 * there), as the JSON of `argus plan --json`. A discovery that failed (an
 * unknown region, bad markers) is ARGUS_EFAILED, with *plan_json still set
 * when not NULL. Needs no GPU. */
int argus_plan(argus_ws *ws, const char *spec, const char *region, const char *signals,
               const char *scope, const char *options_json, char **plan_json);

typedef struct argus_report argus_report;

/* Plans and runs the query (memoized in the workspace) and returns its
 * report. 0 whenever a report was made, even one whose "missing" lists
 * values that could not be measured (no GPU, a failed run): see
 * argus_report_complete. Needs the CUDA toolkit at build time
 * (ARGUS_EUNSUPPORTED otherwise). *out is owned: argus_report_free. */
int argus_observe(argus_ws *ws, const char *spec, const char *region, const char *signals,
                  const char *scope, const char *options_json, argus_report **out);
/* A report stored in the workspace: `id` is its hash, a unique prefix, or a
 * ref naming it. Not a report (another artifact, malformed JSON) is
 * ARGUS_EPARSE. */
int argus_report_read(argus_ws *ws, const char *id, argus_report **out);
void argus_report_free(argus_report *r); /* NULL is a no-op */

/* The report's JSON (schema argus.report/1, docs/report.md). Borrowed. */
const char *argus_report_json(const argus_report *r);
/* Its artifact hash in the workspace ("" if it was not stored). Borrowed. */
const char *argus_report_hash(const argus_report *r);
/* 1 when nothing asked for is missing, else 0. */
int argus_report_complete(const argus_report *r);
/* The text summary `argus observe` prints. Owned (argus_free). */
int argus_report_text(const argus_report *r, char **text_out);
/* The prompt-sized summary for agents (`argus observe --summary=TOKENS`,
 * docs/report.md "Summary"): the facts an optimizer acts on, each with its
 * qualification, ranked (qualifications, then regions by share of time,
 * async sites, what is missing), in at most max_tokens tokens counted as
 * ARGUS_SUMMARY_BYTES_PER_TOKEN bytes each, rounded up; the last line says
 * what was left out. A budget outside ARGUS_SUMMARY_MIN_TOKENS to
 * ARGUS_SUMMARY_MAX_TOKENS is ARGUS_ERANGE. Owned (argus_free). */
enum {
  ARGUS_SUMMARY_BYTES_PER_TOKEN = 3,
  ARGUS_SUMMARY_MIN_TOKENS = 64,
  ARGUS_SUMMARY_DEFAULT_TOKENS = 256,
  ARGUS_SUMMARY_MAX_TOKENS = 1000000
};
int argus_report_summary(const argus_report *r, int max_tokens, char **text_out);

/* One reported value. Strings are borrowed from the report. */
typedef struct argus_value {
  const char *region;     /* qualified region, "" for a program-wide value */
  const char *signal;     /* "duration" */
  const char *stat;       /* "mean", "p50", "count", ... */
  const char *unit;       /* "ns", "cycles", "" */
  const char *qual;       /* "observed", "attributed" or "derived" */
  int has_number;         /* 1: `number` holds the value; 0: structured or flagged */
  double number;
  double entropy;         /* association entropy of an attributed value, else -1 */
  const char *value_json; /* the value as JSON text (numbers, breakdowns, null) */
  const char *flag;       /* why a flagged value must not be read as a number, or NULL */
  const char *provenance; /* JSON object: tasks, program, variant, scope */
} argus_value;
size_t argus_report_nvalues(const argus_report *r);
/* The i-th value (i < argus_report_nvalues): ARGUS_ERANGE past the end. */
int argus_report_value(const argus_report *r, size_t i, argus_value *out);

/* ----------------------------------------------------------------- check */
typedef struct argus_check argus_check;
enum { ARGUS_CHECK_PROVED = 0, ARGUS_CHECK_VIOLATED = 1, ARGUS_CHECK_UNKNOWN = 2 };

/* Checks a tile program (docs/check.md). options_json (NULL: {}):
 *   "set": {"NAME": integer, ...}, "symbolic": ["NAME", ...], "unroll",
 *   "all", "strict": booleans; "rlimit", "batch", "max_steps",
 *   "max_writes", "max_memory_mib": positive integers.
 * A malformed program is ARGUS_EPARSE with the diagnostics (argus_errdiags);
 * a violated assertion is a result (ARGUS_CHECK_VIOLATED), not an error.
 * *out is owned: argus_check_free. */
int argus_check_file(const char *path, const char *options_json, argus_check **out);
void argus_check_free(argus_check *c); /* NULL is a no-op */
/* ARGUS_CHECK_PROVED when every assertion holds; VIOLATED when one has a
 * counterexample; UNKNOWN when one is neither (the solver hit its limit, or
 * an assertion is never reached and that is an error: docs/check.md). */
int argus_check_verdict(const argus_check *c);
/* The result as `argus check --json` prints it. Borrowed. */
const char *argus_check_json(const argus_check *c);
/* Warnings the checker gave (JSON array of diagnostics). Borrowed. */
const char *argus_check_diagnostics(const argus_check *c);

#ifdef __cplusplus
}
#endif
#endif
