/*
 * argus/store.h — the versioned workspace: every artifact Argus makes or
 * reads (PTX, cubins, evidence, maps, reports, logs), bound to the task that
 * produced it, its inputs and its program version.
 *
 * A workspace is a directory (default `.argus/`) holding
 *   workspace.db   SQLite metadata (WAL mode): artifacts, program versions,
 *                  tasks, queries, reports, refs, the ref log, schema_version
 *   objects/ab/…   content-addressed blob files (SHA-256 of the content;
 *                  zstd-compressed when that saves space). Small blobs are
 *                  kept inside the database instead (see docs/workspace.md).
 *   tmp/           temporary files of blob writes in progress
 *   lock           advisory lock that keeps gc apart from blob writers
 * docs/workspace.md describes the layout, task keys, crash safety and gc.
 *
 * Conventions (STYLE.md): functions return 0 or a negative AG_E* code; after
 * a failure ag_store_errmsg() says what went wrong and what to do. Out-params
 * are zeroed on failure. Every returned pointer is documented as owned (free
 * it with the function named) or borrowed.
 *
 * Concurrency: any number of processes may open the same workspace at once;
 * writers serialize on the database's write lock and wait for it (never
 * failing with "database is locked"; after two minutes of waiting a call
 * returns AG_EBUSY). One ag_store handle may be shared by the threads of a
 * process: calls on it are serialized by a mutex. A handle must not be used
 * across fork(); open a new one in the child.
 *
 * Crash safety: a process killed at any instant leaves a workspace that opens
 * and passes ag_store_check, and every call that returned 0 before the kill
 * is durable (blob files are written to tmp/, fsynced, renamed, the directory
 * fsynced; metadata is committed in SQLite transactions with synchronous=FULL),
 * also across a power loss (tested by dropping every unsynced write).
 *
 * Creation: AG_STORE_CREATE creates a workspace only in a new or empty
 * directory (or finishes one a killed creation left); a directory holding a
 * workspace's data with a missing, empty or uninitialized database is
 * AG_ECORRUPT, never initialized over.
 */
#ifndef ARGUS_STORE_H
#define ARGUS_STORE_H

#include "argus/core.h"
#include "argus/task.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The schema this build writes. Opening a workspace with an older schema
 * migrates it; a newer one gives AG_ESCHEMA. */
#define AG_STORE_SCHEMA_VERSION 1

#define AG_STORE_HASH_LEN 64   /* lowercase hex SHA-256 */
#define AG_STORE_KIND_MAX 32   /* artifact kinds: [a-z0-9_.-], 1..32 chars */
#define AG_STORE_NAME_MAX 128  /* ref names and task output names */

typedef struct ag_store ag_store;

/* ------------------------------------------------------------- workspace */
enum {
  AG_STORE_CREATE = 1u << 0, /* create the directory and database if absent */
};

/* Opens the workspace at `path` (migrating an older schema). Without
 * AG_STORE_CREATE a missing workspace is AG_ENOTFOUND. A workspace written by
 * a newer argus is AG_ESCHEMA; a database that is not an argus workspace is
 * AG_ECORRUPT. *out is owned: ag_store_close it. */
int ag_store_open(const char *path, unsigned flags, ag_store **out);
/* Closes the handle (rolls back an unfinished batch). NULL is a no-op. */
void ag_store_close(ag_store *st);
/* The workspace directory as given to ag_store_open. Borrowed. */
const char *ag_store_path(const ag_store *st);
/* Text describing the last failure of an ag_store_* call in this thread
 * ("" if none). Borrowed; valid until the next failing call in this thread. */
const char *ag_store_errmsg(void);

/* The quick check that commands run before they write to a workspace
 * (observe, plan; docs/workspace.md "Health"): the database opened (its header
 * and schema version were read), and no read or check since the last sound
 * ag_store_check found damage (a corrupted blob, a damaged database page).
 * Costs one stat and no database page. 0, or AG_ECORRUPT with a message that
 * says what was found and points at `argus ws check`. */
int ag_store_health(ag_store *st);

/* Versions of the SQLite and zstd libraries in use (for `argus doctor`;
 * their headers stay inside src/store). Static text. */
const char *ag_store_sqlite_version(void);
const char *ag_store_zstd_version(void);

/* Groups the following writes through this handle into one transaction,
 * holding the workspace's write lock until ag_store_batch_commit (keep batches
 * short: other writers wait). Other threads using the same handle wait too.
 * Batches do not nest (AG_EINVAL). ag_store_batch_abort rolls back. Commit or
 * abort from the thread that began the batch. */
int ag_store_batch_begin(ag_store *st);
int ag_store_batch_commit(ag_store *st);
void ag_store_batch_abort(ag_store *st);

/* ------------------------------------------------------------- artifacts */
typedef struct ag_put_opts {
  const char *kind; /* "ptx", "cubin", "evidence", "map", "report", "log",
                       "json", …; NULL = "blob" */
  int64_t task_id;  /* producing task (must exist); 0 = none */
} ag_put_opts;

typedef struct ag_artifact {
  char hash[AG_STORE_HASH_LEN + 1];
  char kind[AG_STORE_KIND_MAX + 1];
  uint64_t size;        /* content bytes */
  uint64_t stored_size; /* bytes as stored (after compression) */
  int compressed;       /* 1: stored zstd-compressed */
  int inline_db;        /* 1: stored inside the database, 0: in objects/ */
  int64_t task_id;      /* producing task; 0 = none */
  uint64_t created_ns;  /* wall clock of the first put */
} ag_artifact;

/* Stores `len` bytes (deduplicated by content) and records the artifact.
 * `opts` may be NULL. Writes the content hash to hash_out (65 bytes). Putting
 * content that exists already keeps its first kind and producing task (a
 * producing task is filled in if it had none). */
int ag_store_put(ag_store *st, const void *data, size_t len,
                 const ag_put_opts *opts, char hash_out[65]);
/* Same, streaming from a file (or "-" for standard input) in 1 MiB chunks:
 * memory use does not grow with the file's size. */
int ag_store_put_file(ag_store *st, const char *path, const ag_put_opts *opts,
                      char hash_out[65]);
/* Same, streaming from an open descriptor (read to EOF, not closed). */
int ag_store_put_fd(ag_store *st, int fd, const ag_put_opts *opts,
                    char hash_out[65]);

/* Reads the content of artifact `hash`, verifying its SHA-256: a mismatch is
 * AG_ECORRUPT and no data is returned. *data is owned (ag_free) and has a NUL
 * byte after the last one. An unknown hash is AG_ENOTFOUND. */
int ag_store_get(ag_store *st, const char *hash, void **data, size_t *len);
/* Writes the content to `path` atomically (temp file beside it, verified,
 * then renamed): a corrupted blob never reaches `path`. Streams. */
int ag_store_get_file(ag_store *st, const char *hash, const char *path);
/* The artifact record of `hash` (AG_ENOTFOUND if none). */
int ag_store_artifact(ag_store *st, const char *hash, ag_artifact *out);

typedef struct ag_list_opts {
  size_t limit;     /* 0 = no limit */
  size_t offset;
  const char *kind; /* artifacts only: this kind only; NULL = all */
} ag_list_opts;

/* Artifacts, newest first. *out is owned (ag_free); opts may be NULL. */
int ag_store_artifacts(ag_store *st, const ag_list_opts *opts,
                       ag_artifact **out, size_t *n);

/* ------------------------------------------------------ program versions */
typedef struct ag_version_spec {
  int64_t parent;        /* 0: a root version */
  const char *module;    /* artifact hash of the PTX module (must exist) */
  const char *transform; /* what made it from parent ("probe(op=3,occ=1)");
                            required with a parent, NULL for a root */
  const json_t *origin;  /* source, flags, …; NULL = {} */
  int64_t task_id;       /* the Transform task that made it; 0 = none */
} ag_version_spec;

typedef struct ag_version {
  int64_t id;
  int64_t parent; /* 0 = root */
  char module[AG_STORE_HASH_LEN + 1];
  char *transform; /* owned by the record; NULL for roots */
  char *origin;    /* owned by the record; canonical JSON */
  int64_t task_id;
  uint64_t created_ns;
} ag_version;

/* Records a program version. Versions are immutable and identified by
 * (parent, module, transform, origin): creating the same one again returns
 * the existing id. */
int ag_store_version_create(ag_store *st, const ag_version_spec *spec,
                            int64_t *id_out);
/* Fills *out; release it with ag_store_version_release. */
int ag_store_version_get(ag_store *st, int64_t id, ag_version *out);
void ag_store_version_release(ag_version *v);
/* The chain id, parent, grandparent, …, root. *ids is owned (ag_free). */
int ag_store_version_ancestry(ag_store *st, int64_t id, int64_t **ids,
                              size_t *n);
/* Versions, newest first; free with ag_store_versions_free. */
int ag_store_versions(ag_store *st, const ag_list_opts *opts, ag_version **out,
                      size_t *n);
void ag_store_versions_free(ag_version *v, size_t n);

/* ------------------------------------------------------------------ tasks */
/* Task types (ag_task_type, ag_task_type_name) are in argus/task.h, shared
 * with the planner. */
typedef enum ag_store_task_status {
  AG_STORE_TASK_PENDING = 0, /* planned, not claimed */
  AG_STORE_TASK_RUNNING,     /* claimed by a process */
  AG_STORE_TASK_OK,
  AG_STORE_TASK_FAILED
} ag_store_task_status;

/* "running"; static text */
const char *ag_store_task_status_name(ag_store_task_status s);

typedef struct ag_store_task_spec {
  ag_task_type type;
  const json_t *config;       /* NULL = {}; canonicalized before hashing */
  const char *const *inputs;  /* artifact hashes (must exist); order kept */
  size_t ninputs;
  const char *worker;         /* free text naming the worker; NULL = none */
  int64_t query_id;           /* link the task to this query; 0 = none */
  const char *argus_version;  /* NULL = this build (tests override it) */
} ag_store_task_spec;

typedef struct ag_store_output {
  char name[AG_STORE_NAME_MAX + 1];
  char hash[AG_STORE_HASH_LEN + 1];
} ag_store_output;

/* The task key: SHA-256 over a domain tag, the type, the canonical config,
 * the sorted input hashes and the Argus version (docs/workspace.md). */
int ag_store_task_key(const ag_store_task_spec *spec, char key_out[65]);

enum {
  AG_STORE_PLAN = 1u << 0, /* record the task as pending instead of claiming */
};

typedef struct ag_store_claim {
  int64_t task_id;
  /* OK: memoized, outputs filled, do not run it; RUNNING: claimed by this
   * call, run it then call ag_store_task_finish (with AG_STORE_PLAN: being
   * run by another process); PENDING: planned (AG_STORE_PLAN) */
  ag_store_task_status status;
  char key[AG_STORE_HASH_LEN + 1];
  ag_store_output *outputs; /* owned (ag_free); set when status is OK */
  size_t noutputs;
} ag_store_claim;

/* Starts a task, or returns the outputs of an earlier success with the same
 * key (memoization). A pending task with the same key is claimed. If a live
 * process is running the same key, returns AG_EBUSY with claim->task_id set
 * to that attempt; an attempt whose process has died (same host) is marked
 * failed ("abandoned") and a new one is claimed. */
int ag_store_task_begin(ag_store *st, const ag_store_task_spec *spec,
                        unsigned flags, ag_store_claim *claim);

typedef struct ag_store_result {
  ag_store_task_status status;    /* AG_STORE_TASK_OK or AG_STORE_TASK_FAILED */
  const ag_store_output *outputs; /* name → artifact hash (must exist) */
  size_t noutputs;
  const char *error;              /* required when FAILED */
} ag_store_result;

/* Finishes a running task. Its outputs' artifacts get it as producing task. */
int ag_store_task_finish(ag_store *st, int64_t task_id,
                         const ag_store_result *r);

typedef struct ag_store_task {
  int64_t id;
  char key[AG_STORE_HASH_LEN + 1];
  ag_task_type type;
  ag_store_task_status status;
  char argus_version[32];
  char *config; /* owned by the record: canonical JSON */
  char *worker; /* owned; NULL if none */
  char *owner;  /* owned; "host:pid:start" of the claiming process, or NULL */
  char *error;  /* owned; NULL unless failed */
  uint64_t created_ns, start_ns, end_ns; /* wall clock; 0 = not yet */
  char (*inputs)[AG_STORE_HASH_LEN + 1]; /* owned by the record */
  size_t ninputs;
  ag_store_output *outputs; /* owned by the record */
  size_t noutputs;
} ag_store_task;

int ag_store_task_get(ag_store *st, int64_t id, ag_store_task *out);
void ag_store_task_release(ag_store_task *t);
/* Tasks, newest first; free with ag_store_tasks_free. */
int ag_store_tasks(ag_store *st, const ag_list_opts *opts, ag_store_task **out,
                   size_t *n);
void ag_store_tasks_free(ag_store_task *t, size_t n);

/* ------------------------------------------------------ queries, reports */
typedef struct ag_store_query {
  int64_t id;
  int64_t version_id; /* the program version asked about; 0 = none */
  char *spec;         /* owned by the record: canonical JSON */
  uint64_t created_ns;
  char (*reports)[AG_STORE_HASH_LEN + 1]; /* owned; oldest first */
  size_t nreports;
  int64_t *tasks; /* owned; tasks linked to the query */
  size_t ntasks;
} ag_store_query;

int ag_store_query_add(ag_store *st, const json_t *spec, int64_t version_id,
                       int64_t *id_out);
/* Records artifact `hash` as a report of query `query_id`. */
int ag_store_report_add(ag_store *st, int64_t query_id, const char *hash);
int ag_store_query_get(ag_store *st, int64_t id, ag_store_query *out);
void ag_store_query_release(ag_store_query *q);
/* Queries, newest first (reports and tasks not filled); free with
 * ag_store_queries_free. */
int ag_store_queries(ag_store *st, const ag_list_opts *opts, ag_store_query **out,
                     size_t *n);
void ag_store_queries_free(ag_store_query *q, size_t n);

/* ------------------------------------------------------- objects and refs */
typedef enum ag_obj_kind {
  AG_OBJ_NONE = 0,
  AG_OBJ_ARTIFACT,
  AG_OBJ_VERSION,
  AG_OBJ_TASK,
  AG_OBJ_QUERY
} ag_obj_kind;

typedef struct ag_obj {
  ag_obj_kind kind;
  int64_t id;                        /* versions, tasks, queries */
  char hash[AG_STORE_HASH_LEN + 1];  /* artifacts */
} ag_obj;

/* Resolves what a person typed: "v12" (version), "t7" (task), "q3" (query),
 * a full hash or a unique hash prefix of at least 4 characters (artifact), or
 * a ref name (its target). AG_ENOTFOUND / AG_EINVAL (ambiguous prefix). */
int ag_store_resolve(ag_store *st, const char *text, ag_obj *out);

typedef struct ag_ref {
  char name[AG_STORE_NAME_MAX + 1];
  ag_obj target; /* AG_OBJ_VERSION or AG_OBJ_ARTIFACT */
  uint64_t updated_ns;
} ag_ref;

/* Ref names: 1..128 of [A-Za-z0-9._@/:+-], not starting with '-', with at
 * least one character outside 0-9a-f, and not of the form v<N>, t<N>, q<N>
 * (so that names never collide with ids or hash prefixes). */
int ag_store_ref_name_valid(const char *name);
/* Points `name` at a version or an artifact (which must exist). Every change
 * is recorded in the ref log (ag_store_log). */
int ag_store_ref_set(ag_store *st, const char *name, const ag_obj *target);
int ag_store_ref_get(ag_store *st, const char *name, ag_ref *out);
int ag_store_ref_delete(ag_store *st, const char *name);
/* All refs by name. *out is owned (ag_free). */
int ag_store_refs(ag_store *st, ag_ref **out, size_t *n);

/* What a person types for an object: "v12", "t3", "q7" or the hash ("-"
 * for none), into buf. */
void ag_store_obj_text(const ag_obj *o, char *buf, size_t cap);
/* The JSON of `argus ws --json` (and the client API, argus.h): a version
 * {id, parent, module, transform, origin, task, created}; a ref {name,
 * target_type, target, updated}. New references, NULL when out of memory. */
json_t *ag_store_version_json(const ag_version *v);
json_t *ag_store_ref_json(const ag_ref *r);

/* ---------------------------------------------------------------- history */
typedef struct ag_log_entry {
  uint64_t time_ns;
  ag_obj obj;   /* the task, version or query (reports: their query);
                   AG_OBJ_NONE for ref changes */
  char *what;   /* owned: "task", "version", "query", "report", "ref" */
  char *text;   /* owned: one line for people */
} ag_log_entry;

/* The newest `limit` events (0 = all), newest first: tasks started or
 * planned, versions created, queries asked, reports written, refs moved.
 * Free with ag_store_log_free. */
int ag_store_log(ag_store *st, size_t limit, ag_log_entry **out, size_t *n);
void ag_store_log_free(ag_log_entry *e, size_t n);

/* ------------------------------------------------------------ maintenance */
typedef struct ag_store_stats {
  uint64_t artifacts, versions, tasks, refs, queries, reports;
  uint64_t tasks_by_status[4]; /* indexed by ag_store_task_status */
  uint64_t payload_bytes;      /* sum of content sizes */
  uint64_t stored_bytes;       /* sum of stored (compressed) sizes */
  uint64_t inline_artifacts;   /* stored inside the database */
  uint64_t disk_bytes;         /* allocated bytes of every file under the workspace */
} ag_store_stats;

int ag_store_stats_get(ag_store *st, ag_store_stats *out);

typedef struct ag_check_report {
  char **problems; /* owned; each a line; a workspace is sound iff nproblems == 0 */
  size_t nproblems;
  char **notes;    /* owned; harmless findings (orphan files, abandoned tasks) */
  size_t nnotes;
  uint64_t blobs_checked, bytes_checked;
} ag_check_report;

/* Verifies the database (integrity_check, foreign keys), every blob's hash,
 * every task key, and that nothing refers to a missing record. Returns 0 when
 * the check ran (whatever it found: see report); release the report with
 * ag_store_check_release. */
int ag_store_check(ag_store *st, ag_check_report *report);
void ag_store_check_release(ag_check_report *report);

typedef struct ag_gc_opts {
  int dry_run;      /* list what would go, delete nothing */
  int64_t grace_s;  /* keep unreachable artifacts put less than this many
                       seconds ago (protects a writer between a put and the
                       task or ref that uses it); the CLI default is 3600 */
} ag_gc_opts;

typedef struct ag_gc_report {
  char (*removed)[AG_STORE_HASH_LEN + 1]; /* owned; artifacts (to be) removed */
  size_t nremoved;
  uint64_t removed_bytes;  /* stored bytes freed */
  size_t orphan_files;     /* blob files without a record (from crashed puts) */
  size_t temp_files;       /* leftovers in tmp/ */
  char **run_dirs;         /* owned; failed run directories (to be) removed */
  size_t nrun_dirs;
} ag_gc_report;

/* Deletes artifacts that nothing reaches: not a ref target, not a version's
 * module, not a task's input or output, not produced by a task, not a report
 * — plus orphan blob files, stale temp files, and the run directories of
 * failed runs: trace/ and runs/ hold one directory per harness run
 * (`argus trace`, observe's collections), named …-PID; one that holds no
 * evidence file, whose process is gone and that is older than the grace
 * period is removed (a successful run's directory keeps its evidence). */
int ag_store_gc(ag_store *st, const ag_gc_opts *opts, ag_gc_report *report);
void ag_store_gc_release(ag_gc_report *report);

#ifdef __cplusplus
}
#endif
#endif
