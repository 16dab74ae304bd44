/*
 * store_int.h — what the files of src/store share: the handle, the SQLite
 * checking macro, the transaction runner with retry, the statement cache,
 * the blob reader, and the error-message helpers. Not installed; only
 * src/store includes it (it is the one place that sees sqlite3.h).
 */
#ifndef ARGUS_STORE_INT_H
#define ARGUS_STORE_INT_H

#include "argus/store.h"
#include "store_test.h"

#include <pthread.h>
#include <sqlite3.h>

/* Blobs whose stored size is at most this live inside the database. */
#define AG__INLINE_MAX (16 * 1024)
/* Streaming chunk for reads and writes of blobs. */
#define AG__CHUNK (1024 * 1024)
/* How long a call waits for the workspace's locks before AG_EBUSY. */
#define AG__BUSY_DEADLINE_NS (120ull * 1000000000ull)
#define AG__NSTMT 96

typedef struct ag__stmt_slot {
  const char *sql; /* identity: the address of a static string */
  sqlite3_stmt *stmt;
} ag__stmt_slot;

struct ag_store {
  char *path;      /* as given */
  char *db_path;   /* path/workspace.db */
  char *objects;   /* path/objects */
  char *tmp;       /* path/tmp */
  char *lock_path; /* path/lock */
  sqlite3 *db;
  pthread_mutex_t mu; /* recursive: a batch holds it across calls */
  int batch;          /* inside ag_store_batch_begin … commit */
  int busy_hit;       /* the last SQLite error was BUSY/LOCKED (retryable) */
  int schema;         /* the schema version this handle migrated to */
  ag__stmt_slot stmts[AG__NSTMT];
  char host[128];
  char owner[200]; /* "host:pid:starttime" of this process */
};

/* ------------------------------------------------------------ errors */
/* Sets this thread's message (ag_store_errmsg) and returns rc. */
int ag__fail(int rc, const char *fmt, ...) AG_PRINTF(2, 3);
/* Maps a SQLite result: OK/ROW/DONE come back unchanged (>= 0); anything
 * else records "sqlite: CALL: message" and returns a negative AG_E* code. */
int ag__sqlrc(ag_store *st, int src, const char *call);
#define AG__SQL(st, call) ag__sqlrc((st), (call), #call)

/* -------------------------------------------------------- statements */
/* A cached prepared statement for a static SQL string, reset and with its
 * bindings cleared. Borrowed. Call with the handle's mutex held. */
int ag__stmt(ag_store *st, const char *sql, sqlite3_stmt **out);
int ag__bind_text(ag_store *st, sqlite3_stmt *s, int i, const char *v);
int ag__bind_i64(ag_store *st, sqlite3_stmt *s, int i, int64_t v);
/* Binds NULL when v == 0. */
int ag__bind_id(ag_store *st, sqlite3_stmt *s, int i, int64_t v);
/* Runs a cached single-key query (the key bound to ?1) and steps once:
 * returns 1 with *row positioned on the first row, 0 when there is none, or
 * a negative error. *row is borrowed (reset by the next ag__stmt of sql). */
int ag__row_text(ag_store *st, const char *sql, const char *key, sqlite3_stmt **row);
int ag__row_id(ag_store *st, const char *sql, int64_t key, sqlite3_stmt **row);
/* 1 if the artifact / the version, task or query exists, 0 if not, or an error. */
int ag__artifact_exists(ag_store *st, const char *hash);
int ag__record_exists(ag_store *st, ag_obj_kind kind, int64_t id);
/* Grows an array for one more element (ag__vec_reserve with a message). */
int ag__grow(void *vp, size_t *cap, size_t n, size_t elem);
/* Copies column text into an owned string (NULL for SQL NULL); *ok = 0 on OOM. */
char *ag__col_strdup(sqlite3_stmt *s, int col, int *ok);
/* Copies column text into a fixed buffer (truncating). */
void ag__col_copy(sqlite3_stmt *s, int col, char *buf, size_t cap);

/* ------------------------------------------------------ transactions */
/* Resets every cached statement: a statement left mid-result pins an old
 * snapshot, and the next BEGIN IMMEDIATE would fail for as long as it stays
 * so. ag__txn does it after every body; code that runs a cached statement
 * outside ag__txn must call it too. */
void ag__reset_all(ag_store *st);
typedef int (*ag__txn_fn)(ag_store *st, void *ctx);
/* Internal result of a body that wants to be run again after a pause. */
#define AG__RETRY 1
enum { AG__READ = 0, AG__WRITE = 1 };
/* Runs fn inside a transaction (BEGIN IMMEDIATE when writing), holding the
 * handle's mutex. Commits when fn returns 0, rolls back otherwise. When
 * SQLite reports BUSY/LOCKED, or fn returns AG__RETRY, it rolls back, sleeps
 * and runs fn again, until AG__BUSY_DEADLINE_NS has passed (AG_EBUSY). Inside
 * a batch fn runs in a savepoint. fn must therefore be re-runnable: it must
 * reset what it outputs. */
int ag__txn(ag_store *st, int mode, ag__txn_fn fn, void *ctx);

/* ----------------------------------------------------- damage marker */
/* path/damaged: one line saying what damage a read or a check found; kept
 * until a check finds the workspace sound (ag_store_health reads it). */
char *ag__damaged_path(const ag_store *st); /* owned */
/* Records the damage (best effort; keeps this thread's error message). */
void ag__mark_damaged(ag_store *st, const char *what);

/* ------------------------------------------------------------ files */
/* flock on path/lock: shared for blob writers and check, exclusive for gc.
 * Sets *fd_out (pass it to ag__unlock) and returns 0, or a negative error;
 * with nonblock, returns AG__RETRY instead of waiting. */
int ag__lock(ag_store *st, int exclusive, int nonblock, int *fd_out);
void ag__unlock(int fd);
/* "objects/ab/cdef…" under the workspace; owned. */
char *ag__object_path(const ag_store *st, const char *hash);
int ag__fsync_dir(const char *path);
/* The file-system calls of blob writes (store_test.h): the system calls,
 * unless a test substituted them. Never NULL. */
extern const ag__io_ops *ag__io;
/* Configures SQLite (memory through ag_malloc) once per process. */
void ag__sqlite_setup(void);

/* ------------------------------------------------------------ checks */
int ag__hash_valid(const char *h); /* 64 lowercase hex */
int ag__kind_valid(const char *k);
/* Sink for blob reads: called with consecutive pieces of content. */
typedef int (*ag__sink_fn)(void *ctx, const void *p, size_t n);
/* Streams artifact content through sink, verifying size and hash.
 * inline_data (stored bytes) is used when the blob lives in the database. */
int ag__blob_read(ag_store *st, const char *hash, uint64_t size,
                  uint64_t stored_size, int codec, const void *inline_data,
                  int is_inline, ag__sink_fn sink, void *ctx);
/* Is the process that wrote `owner` ("host:pid:start") still alive? An owner
 * on another host is assumed alive. */
int ag__owner_alive(const ag_store *st, const char *owner);
/* Loads task outputs of task id into an owned array. */
int ag__load_outputs(ag_store *st, int64_t id, ag_store_output **out, size_t *n);
/* Computes a task key from stored fields (used by check). */
int ag__task_key_raw(const char *type, const char *canon_config,
                     const char *const *inputs, size_t ninputs,
                     const char *version, char key[65]);
int ag__task_type_parse(const char *s, ag_task_type *t);
int ag__task_status_parse(const char *s, ag_store_task_status *t);

#endif
