/*
 * store.c — the workspace handle: opening and creating a workspace, the
 * schema and its migrations, SQLite set-up (WAL, synchronous=FULL, foreign
 * keys, busy waiting), the transaction runner that retries on lock
 * contention, batches, the statement cache and error messages.
 *
 * Invariants: every SQLite call goes through AG__SQL; every write happens
 * inside ag__txn (one transaction, or a savepoint inside a batch); SQLite's
 * memory comes from ag_malloc so the fault-injection hook reaches it. Opening
 * costs a few milliseconds (it is done once per process); a cached statement
 * costs microseconds.
 */
#include "store_int.h"
#include "store_test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* -------------------------------------------------------------- messages */
static _Thread_local char errbuf[1024];

const char *ag_store_errmsg(void) { return errbuf; }

int ag__fail(int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(errbuf, sizeof errbuf, fmt, ap);
  va_end(ap);
  return rc;
}

int ag__sqlrc(ag_store *st, int src, const char *call) {
  if (src == SQLITE_OK || src == SQLITE_ROW || src == SQLITE_DONE)
    return src;
  int prim = src & 0xff;
  int rc;
  switch (prim) {
  case SQLITE_BUSY:
  case SQLITE_LOCKED:
  case SQLITE_PROTOCOL:
    rc = AG_EBUSY;
    if (st)
      st->busy_hit = 1;
    break;
  case SQLITE_NOMEM: rc = AG_ENOMEM; break;
  case SQLITE_IOERR: rc = src == SQLITE_IOERR_NOMEM ? AG_ENOMEM : AG_EIO; break;
  case SQLITE_CORRUPT:
  case SQLITE_NOTADB: rc = AG_ECORRUPT; break;
  case SQLITE_FULL: rc = AG_EIO; break;
  case SQLITE_CANTOPEN: rc = AG_EIO; break;
  case SQLITE_CONSTRAINT: rc = AG_EINVAL; break;
  default: rc = AG_ESQL; break;
  }
  /* the call text is a C expression; keep the function name and first arg */
  char shortcall[96];
  size_t k = 0;
  for (; call[k] && call[k] != ',' && k + 1 < sizeof shortcall; k++)
    shortcall[k] = call[k];
  shortcall[k] = 0;
  const char *msg = st && st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(src);
  msg = msg ? msg : sqlite3_errstr(src);
  if (rc == AG_ECORRUPT && st && st->schema) { /* an open workspace's database is damaged */
    char what[300];
    snprintf(what, sizeof what, "its database is damaged (sqlite: %s)", msg);
    ag__mark_damaged(st, what);
    ag__fail(rc, "workspace '%s': the database is damaged (sqlite: %s…): %s); run 'argus ws "
                 "check' to see how far, and recover as docs/workspace.md, \"Recovery\" says",
             st->path, shortcall, msg);
  } else {
    ag__fail(rc, "sqlite: %s…): %s", shortcall, msg);
  }
  return rc;
}

/* ---------------------------------------------------------- damage marker */
char *ag__damaged_path(const ag_store *st) {
  ag_str s = AG_STR_INIT;
  ag_str_printf(&s, "%s/damaged", st->path);
  if (s.oom) {
    ag_str_release(&s);
    return NULL;
  }
  return ag_str_detach(&s);
}

void ag__mark_damaged(ag_store *st, const char *what) {
  char *p = ag__damaged_path(st);
  if (!p)
    return;
  static const char tail[] = "; run 'argus ws check'"; /* said once, by ag_store_health */
  size_t n = strlen(what);
  if (n >= sizeof tail - 1 && !strcmp(what + n - (sizeof tail - 1), tail))
    n -= sizeof tail - 1;
  ag_str s = AG_STR_INIT;
  char t[32];
  time_t now = time(NULL);
  struct tm tm;
  strftime(t, sizeof t, "%Y-%m-%d %H:%M:%S", localtime_r(&now, &tm));
  ag_str_printf(&s, "%.*s (found %s)\n", (int)n, what, t);
  if (!s.oom)
    ag_file_write_atomic(p, s.p, s.len); /* best effort: the caller reports the damage anyway */
  ag_str_release(&s);
  ag_free(p);
}

int ag_store_health(ag_store *st) {
  char *p = ag__damaged_path(st);
  if (!p)
    return ag__fail(AG_ENOMEM, "out of memory checking workspace '%s'", st->path);
  char *text = NULL;
  size_t n = 0;
  int rc = ag_file_read(p, &text, &n);
  ag_free(p);
  if (rc == AG_ENOTFOUND)
    return 0;
  if (rc)
    return ag__fail(rc, "cannot read '%s/damaged': %s", st->path, ag_strerror(rc));
  while (n && (text[n - 1] == '\n' || text[n - 1] == '\r'))
    text[--n] = 0;
  rc = ag__fail(AG_ECORRUPT,
                "workspace '%s' is damaged: %s; run 'argus ws check' to list every problem "
                "(putting the original content again repairs a damaged blob; a sound check "
                "clears this), and see docs/workspace.md, \"Recovery\"",
                st->path, text);
  ag_free(text);
  return rc;
}

/* --------------------------------------------- SQLite memory via ag_malloc */
/* Each block carries its size in a 16-byte header (keeps 8-byte alignment). */
static void *sq_malloc(int n) {
  if (n <= 0)
    return NULL;
  unsigned char *p = ag_malloc((size_t)n + 16);
  if (!p)
    return NULL;
  memcpy(p, &(size_t){(size_t)n}, sizeof(size_t));
  return p + 16;
}
static void sq_free(void *p) {
  if (p)
    ag_free((unsigned char *)p - 16);
}
static void *sq_realloc(void *p, int n) {
  if (!p)
    return sq_malloc(n);
  if (n <= 0) {
    sq_free(p);
    return NULL;
  }
  unsigned char *q = ag_realloc((unsigned char *)p - 16, (size_t)n + 16);
  if (!q)
    return NULL;
  memcpy(q, &(size_t){(size_t)n}, sizeof(size_t));
  return q + 16;
}
static int sq_size(void *p) {
  if (!p)
    return 0;
  size_t n;
  memcpy(&n, (unsigned char *)p - 16, sizeof n);
  return (int)n;
}
static int sq_roundup(int n) { return (n + 7) & ~7; }
static int sq_init(void *ud) { return SQLITE_OK; }
static void sq_shutdown(void *ud) {}

static pthread_once_t sqlite_once = PTHREAD_ONCE_INIT;
static void sqlite_setup(void) {
  static const sqlite3_mem_methods m = {sq_malloc, sq_free,   sq_realloc, sq_size,
                                        sq_roundup, sq_init, sq_shutdown, NULL};
  /* fails harmlessly (SQLITE_MISUSE) if SQLite was initialized already */
  sqlite3_config(SQLITE_CONFIG_MALLOC, &m);
}

/* ----------------------------------------------------------- statements */
int ag__stmt(ag_store *st, const char *sql, sqlite3_stmt **out) {
  *out = NULL;
  int free_slot = -1;
  for (int i = 0; i < AG__NSTMT; i++) {
    if (st->stmts[i].sql == sql) {
      sqlite3_reset(st->stmts[i].stmt);
      sqlite3_clear_bindings(st->stmts[i].stmt);
      *out = st->stmts[i].stmt;
      return 0;
    }
    if (!st->stmts[i].sql && free_slot < 0)
      free_slot = i;
  }
  sqlite3_stmt *s = NULL;
  int rc = AG__SQL(st, sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, NULL));
  if (rc < 0)
    return rc;
  if (free_slot < 0) { /* more distinct statements than slots: evict one */
    free_slot = (int)(ag_now_ns() % AG__NSTMT);
    sqlite3_finalize(st->stmts[free_slot].stmt);
  }
  st->stmts[free_slot].sql = sql;
  st->stmts[free_slot].stmt = s;
  *out = s;
  return 0;
}

int ag__bind_text(ag_store *st, sqlite3_stmt *s, int i, const char *v) {
  int rc = AG__SQL(st, v ? sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(s, i));
  return rc < 0 ? rc : 0;
}
int ag__bind_i64(ag_store *st, sqlite3_stmt *s, int i, int64_t v) {
  int rc = AG__SQL(st, sqlite3_bind_int64(s, i, v));
  return rc < 0 ? rc : 0;
}
int ag__bind_id(ag_store *st, sqlite3_stmt *s, int i, int64_t v) {
  int rc = AG__SQL(st, v ? sqlite3_bind_int64(s, i, v) : sqlite3_bind_null(s, i));
  return rc < 0 ? rc : 0;
}

static int row_step(ag_store *st, sqlite3_stmt *s, sqlite3_stmt **row) {
  int rc = AG__SQL(st, sqlite3_step(s));
  if (rc < 0)
    return rc;
  *row = s;
  return rc == SQLITE_ROW;
}

int ag__row_text(ag_store *st, const char *sql, const char *key, sqlite3_stmt **row) {
  sqlite3_stmt *s;
  int rc;
  *row = NULL;
  if ((rc = ag__stmt(st, sql, &s)) || (rc = ag__bind_text(st, s, 1, key)))
    return rc;
  return row_step(st, s, row);
}

int ag__row_id(ag_store *st, const char *sql, int64_t key, sqlite3_stmt **row) {
  sqlite3_stmt *s;
  int rc;
  *row = NULL;
  if ((rc = ag__stmt(st, sql, &s)) || (rc = ag__bind_i64(st, s, 1, key)))
    return rc;
  return row_step(st, s, row);
}

int ag__artifact_exists(ag_store *st, const char *hash) {
  static const char sql[] = "SELECT 1 FROM artifacts WHERE hash = ?";
  sqlite3_stmt *s;
  return ag__row_text(st, sql, hash, &s);
}

int ag__record_exists(ag_store *st, ag_obj_kind kind, int64_t id) {
  static const char v[] = "SELECT 1 FROM versions WHERE id = ?";
  static const char t[] = "SELECT 1 FROM tasks WHERE id = ?";
  static const char q[] = "SELECT 1 FROM queries WHERE id = ?";
  sqlite3_stmt *s;
  return ag__row_id(st, kind == AG_OBJ_VERSION ? v : kind == AG_OBJ_TASK ? t : q, id, &s);
}

int ag__grow(void *vp, size_t *cap, size_t n, size_t elem) {
  if (n < *cap)
    return 0;
  if (ag__vec_reserve((void **)vp, cap, n + 1, elem))
    return ag__fail(AG_ENOMEM, "out of memory building a list");
  return 0;
}

char *ag__col_strdup(sqlite3_stmt *s, int col, int *ok) {
  const unsigned char *t = sqlite3_column_text(s, col);
  if (!t) {
    if (sqlite3_column_type(s, col) != SQLITE_NULL)
      *ok = 0; /* text conversion ran out of memory */
    return NULL;
  }
  char *r = ag_strdup((const char *)t);
  if (!r)
    *ok = 0;
  return r;
}

void ag__col_copy(sqlite3_stmt *s, int col, char *buf, size_t cap) {
  const unsigned char *t = sqlite3_column_text(s, col);
  snprintf(buf, cap, "%s", t ? (const char *)t : "");
}

/* --------------------------------------------------------- transactions */
static void pause_ns(uint64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* Runs a statement that returns no rows, outside the statement cache. */
static int exec(ag_store *st, const char *sql) {
  int rc = AG__SQL(st, sqlite3_exec(st->db, sql, NULL, NULL, NULL));
  return rc < 0 ? rc : 0;
}

/* A statement left mid-result keeps its read snapshot open after COMMIT; the
 * next BEGIN IMMEDIATE would then fail with SQLITE_BUSY_SNAPSHOT for as long
 * as it stays so. Every transaction therefore ends by resetting them all. */
void ag__reset_all(ag_store *st) {
  for (int i = 0; i < AG__NSTMT; i++)
    if (st->stmts[i].stmt)
      sqlite3_reset(st->stmts[i].stmt);
}

int ag__txn(ag_store *st, int mode, ag__txn_fn fn, void *ctx) {
  pthread_mutex_lock(&st->mu);
  int rc;
  if (st->batch) {
    /* inside a batch: the write lock is held; isolate this call's effects */
    rc = exec(st, "SAVEPOINT ag_op");
    if (rc == 0) {
      rc = fn(st, ctx);
      ag__reset_all(st);
      if (rc == AG__RETRY)
        rc = ag__fail(AG_EBUSY, "the workspace is busy (inside a batch)");
      if (rc != 0)
        exec(st, "ROLLBACK TO ag_op");
      int rc2 = exec(st, "RELEASE ag_op");
      if (rc == 0)
        rc = rc2;
    }
    pthread_mutex_unlock(&st->mu);
    return rc;
  }
  uint64_t t0 = ag_now_ns();
  uint64_t nap = 200000; /* 0.2 ms, doubling to 50 ms, with jitter */
  for (;;) {
    st->busy_hit = 0;
    rc = exec(st, mode == AG__WRITE ? "BEGIN IMMEDIATE" : "BEGIN");
    if (rc == 0) {
      rc = fn(st, ctx);
      ag__reset_all(st);
      if (rc == 0)
        rc = exec(st, "COMMIT");
      if (rc != 0 && !sqlite3_get_autocommit(st->db)) {
        int keep = st->busy_hit;
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
        st->busy_hit = keep;
      }
    }
    int retry = rc == AG__RETRY || (rc == AG_EBUSY && st->busy_hit);
    if (!retry)
      break;
    if (ag_now_ns() - t0 > AG__BUSY_DEADLINE_NS) {
      rc = ag__fail(AG_EBUSY,
                    "workspace '%s' stayed locked by another process for %llu s; "
                    "try again, or look for a stuck argus process",
                    st->path, (unsigned long long)(AG__BUSY_DEADLINE_NS / 1000000000ull));
      break;
    }
    pthread_mutex_unlock(&st->mu);
    pause_ns(nap + (ag_now_ns() % (nap / 2 + 1)));
    if (nap < 50000000)
      nap *= 2;
    pthread_mutex_lock(&st->mu);
  }
  pthread_mutex_unlock(&st->mu);
  return rc;
}

int ag_store_batch_begin(ag_store *st) {
  pthread_mutex_lock(&st->mu);
  if (st->batch) {
    pthread_mutex_unlock(&st->mu);
    return ag__fail(AG_EINVAL, "a batch is already open on this handle (batches do not nest)");
  }
  uint64_t t0 = ag_now_ns();
  int rc;
  for (;;) {
    st->busy_hit = 0;
    rc = exec(st, "BEGIN IMMEDIATE");
    if (rc != AG_EBUSY || ag_now_ns() - t0 > AG__BUSY_DEADLINE_NS)
      break;
    pause_ns(1000000);
  }
  if (rc) {
    pthread_mutex_unlock(&st->mu);
    return rc;
  }
  st->batch = 1; /* the mutex stays held until commit or abort */
  return 0;
}

int ag_store_batch_commit(ag_store *st) {
  if (!st->batch)
    return ag__fail(AG_EINVAL, "no batch is open on this handle");
  int rc = exec(st, "COMMIT");
  if (rc && !sqlite3_get_autocommit(st->db))
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
  st->batch = 0;
  pthread_mutex_unlock(&st->mu);
  return rc;
}

void ag_store_batch_abort(ag_store *st) {
  if (!st->batch)
    return;
  sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
  st->batch = 0;
  pthread_mutex_unlock(&st->mu);
}

/* ------------------------------------------------------------ the schema */
/* Migration i (0-based) takes a workspace from schema i to schema i+1. The
 * list only ever grows; a shipped migration is never edited. */
static const char *const migrations[] = {
    /* 1: the initial schema */
    "CREATE TABLE schema_version("
    "  version INTEGER PRIMARY KEY, applied_ns INTEGER NOT NULL, argus TEXT NOT NULL);"
    "CREATE TABLE tasks("
    "  id INTEGER PRIMARY KEY,"
    "  key TEXT NOT NULL CHECK(length(key) = 64),"
    "  type TEXT NOT NULL CHECK(type IN ('transform','collect','synthesize','control')),"
    "  config TEXT NOT NULL,"
    "  argus_version TEXT NOT NULL,"
    "  status TEXT NOT NULL CHECK(status IN ('pending','running','ok','failed')),"
    "  worker TEXT, owner TEXT, error TEXT,"
    "  created_ns INTEGER NOT NULL, start_ns INTEGER, end_ns INTEGER);"
    "CREATE INDEX tasks_key ON tasks(key, status);"
    "CREATE TABLE artifacts("
    "  hash TEXT PRIMARY KEY NOT NULL CHECK(length(hash) = 64),"
    "  kind TEXT NOT NULL,"
    "  size INTEGER NOT NULL CHECK(size >= 0),"
    "  stored_size INTEGER NOT NULL CHECK(stored_size >= 0),"
    "  codec INTEGER NOT NULL CHECK(codec IN (0, 1)),"
    "  task_id INTEGER REFERENCES tasks(id),"
    "  created_ns INTEGER NOT NULL,"
    "  last_put_ns INTEGER NOT NULL,"
    "  data BLOB);"
    "CREATE TABLE task_inputs("
    "  task_id INTEGER NOT NULL REFERENCES tasks(id),"
    "  ord INTEGER NOT NULL,"
    "  hash TEXT NOT NULL REFERENCES artifacts(hash),"
    "  PRIMARY KEY(task_id, ord)) WITHOUT ROWID;"
    "CREATE INDEX task_inputs_hash ON task_inputs(hash);"
    "CREATE TABLE task_outputs("
    "  task_id INTEGER NOT NULL REFERENCES tasks(id),"
    "  name TEXT NOT NULL,"
    "  hash TEXT NOT NULL REFERENCES artifacts(hash),"
    "  PRIMARY KEY(task_id, name)) WITHOUT ROWID;"
    "CREATE INDEX task_outputs_hash ON task_outputs(hash);"
    "CREATE TABLE versions("
    "  id INTEGER PRIMARY KEY,"
    "  parent INTEGER REFERENCES versions(id),"
    "  module TEXT NOT NULL REFERENCES artifacts(hash),"
    "  transform TEXT,"
    "  origin TEXT NOT NULL,"
    "  task_id INTEGER REFERENCES tasks(id),"
    "  created_ns INTEGER NOT NULL,"
    "  CHECK((parent IS NULL) = (transform IS NULL)),"
    "  CHECK(parent IS NULL OR parent < id));"
    "CREATE UNIQUE INDEX versions_identity ON versions("
    "  IFNULL(parent, 0), module, IFNULL(transform, ''), origin);"
    "CREATE INDEX versions_module ON versions(module);"
    "CREATE INDEX versions_parent ON versions(parent);"
    "CREATE TABLE refs("
    "  name TEXT PRIMARY KEY NOT NULL,"
    "  version_id INTEGER REFERENCES versions(id),"
    "  artifact TEXT REFERENCES artifacts(hash),"
    "  updated_ns INTEGER NOT NULL,"
    "  CHECK((version_id IS NULL) != (artifact IS NULL)));"
    "CREATE INDEX refs_artifact ON refs(artifact);"
    "CREATE INDEX refs_version ON refs(version_id);"
    "CREATE TABLE ref_log("
    "  id INTEGER PRIMARY KEY, name TEXT NOT NULL,"
    "  target TEXT,"       /* "v12", a hash, or NULL when deleted */
    "  time_ns INTEGER NOT NULL);"
    "CREATE TABLE queries("
    "  id INTEGER PRIMARY KEY,"
    "  spec TEXT NOT NULL,"
    "  version_id INTEGER REFERENCES versions(id),"
    "  created_ns INTEGER NOT NULL);"
    "CREATE TABLE reports("
    "  id INTEGER PRIMARY KEY,"
    "  query_id INTEGER NOT NULL REFERENCES queries(id),"
    "  artifact TEXT NOT NULL REFERENCES artifacts(hash),"
    "  created_ns INTEGER NOT NULL);"
    "CREATE INDEX reports_query ON reports(query_id);"
    "CREATE INDEX reports_artifact ON reports(artifact);"
    "CREATE TABLE query_tasks("
    "  query_id INTEGER NOT NULL REFERENCES queries(id),"
    "  task_id INTEGER NOT NULL REFERENCES tasks(id),"
    "  PRIMARY KEY(query_id, task_id)) WITHOUT ROWID;"
    "CREATE INDEX query_tasks_task ON query_tasks(task_id);",
};

_Static_assert(sizeof migrations / sizeof migrations[0] == AG_STORE_SCHEMA_VERSION,
               "AG_STORE_SCHEMA_VERSION must equal the number of migrations");

/* The migration list in force (tests substitute their own). */
typedef struct mig_list {
  const char *const *sql;
  int n;
} mig_list;

typedef struct ver_ctx {
  int version;   /* out: the workspace's schema version (0: none) */
  int foreign;   /* out: tables exist but none of ours */
  mig_list mig;  /* in: for the migrating body */
} ver_ctx;

static int read_version(ag_store *st, void *vc) {
  ver_ctx *c = vc;
  c->version = 0;
  c->foreign = 0;
  sqlite3_stmt *s = NULL;
  int rc = AG__SQL(st, sqlite3_prepare_v2(st->db,
                                          "SELECT (SELECT count(*) FROM sqlite_master WHERE "
                                          "name = 'schema_version'), (SELECT count(*) FROM "
                                          "sqlite_master)",
                                          -1, &s, NULL));
  if (rc < 0)
    return rc;
  rc = AG__SQL(st, sqlite3_step(s));
  if (rc == SQLITE_ROW) {
    int ours = sqlite3_column_int(s, 0);
    int all = sqlite3_column_int(s, 1);
    c->foreign = !ours && all > 0;
    rc = 0;
    if (ours) {
      sqlite3_finalize(s);
      s = NULL;
      rc = AG__SQL(st, sqlite3_prepare_v2(st->db, "SELECT IFNULL(max(version), 0) FROM schema_version",
                                          -1, &s, NULL));
      if (rc >= 0)
        rc = AG__SQL(st, sqlite3_step(s));
      if (rc == SQLITE_ROW) {
        c->version = sqlite3_column_int(s, 0);
        rc = 0;
      } else if (rc >= 0) {
        rc = ag__fail(AG_ESQL, "cannot read the schema version");
      }
    }
  }
  sqlite3_finalize(s);
  return rc;
}

static int refuse_unless_fresh(const ag_store *st);

static int migrate_body(ag_store *st, void *vc) {
  ver_ctx *c = vc;
  int rc = read_version(st, c); /* again, under the write lock */
  if (rc)
    return rc;
  if (c->foreign || c->version >= c->mig.n)
    return 0;
  /* the first migration creates the workspace: only in a fresh directory
   * (checked under the write lock, so a concurrent creator's first puts are
   * never mistaken for an older workspace's data) */
  if (c->version == 0 && (rc = refuse_unless_fresh(st)))
    return rc;
  for (int v = c->version; v < c->mig.n; v++) {
    if ((rc = exec(st, c->mig.sql[v])))
      return rc;
    sqlite3_stmt *s;
    static const char sql[] =
        "INSERT INTO schema_version(version, applied_ns, argus) VALUES(?, ?, ?)";
    if ((rc = ag__stmt(st, sql, &s)) || (rc = ag__bind_i64(st, s, 1, v + 1)) ||
        (rc = ag__bind_i64(st, s, 2, (int64_t)ag_wall_time_ns())) ||
        (rc = ag__bind_text(st, s, 3, AG_VERSION_STRING)))
      return rc;
    if ((rc = AG__SQL(st, sqlite3_step(s))) < 0)
      return rc;
  }
  c->version = c->mig.n;
  return 0;
}

/* ----------------------------------------------------- fresh workspaces */
/* What a creation leaves, even one killed half-way: the database (and its
 * WAL files), empty objects/ and tmp/. cache/, trace/ and runs/ hold scratch
 * files of commands that ran before the workspace existed (argus trace) and
 * no records. Anything else — a blob file, the lock file that every put and
 * check creates, a file of the user's — means the directory held data. */
static int creation_entry(const char *name) {
  static const char *const ok[] = {"workspace.db", "workspace.db-wal", "workspace.db-shm",
                                   "workspace.db-journal", "cache", "trace", "runs"};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
    if (!strcmp(name, ok[i]))
      return 1;
  return 0;
}

/* Counts the entries of dir (recursively for objects/: the blob files). */
static size_t count_entries(const char *dir, int depth) {
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  size_t n = 0;
  struct dirent *de;
  char sub[4096];
  while ((de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
      continue;
    struct stat sb;
    if (depth > 0 && snprintf(sub, sizeof sub, "%s/%s", dir, de->d_name) < (int)sizeof sub &&
        lstat(sub, &sb) == 0 && S_ISDIR(sb.st_mode))
      n += count_entries(sub, depth - 1);
    else
      n++;
  }
  closedir(d);
  return n;
}

/* 0 when the workspace directory holds nothing but what a creation leaves
 * (so creating the workspace there loses nothing). Otherwise a message that
 * says what is there: AG_ECORRUPT when it holds a workspace's traces (blob
 * or temp files, the lock file) — with what is wrong with the database and
 * how to recover —, AG_EEXISTS when it holds only files of someone else's.
 * Never changes anything. */
static int db_has_content(const ag_store *st) {
  struct stat sb;
  return stat(st->db_path, &sb) == 0 && sb.st_size > 0;
}

static int refuse_unless_fresh(const ag_store *st) {
  DIR *d = opendir(st->path);
  if (!d)
    return errno == ENOENT ? 0 : ag__fail(AG_EIO, "cannot read workspace '%s': %s", st->path,
                                          strerror(errno));
  ag_str what = AG_STR_INIT;
  size_t blobs = count_entries(st->objects, 1), tmps = count_entries(st->tmp, 0), others = 0;
  int lock = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    const char *n = de->d_name;
    lock |= !strcmp(n, "lock");
    if (!strcmp(n, ".") || !strcmp(n, "..") || creation_entry(n) || !strcmp(n, "objects") ||
        !strcmp(n, "tmp"))
      continue;
    if (others++ < 3)
      ag_str_printf(&what, "%s'%s'", what.len ? ", " : "", n);
  }
  closedir(d);
  if (!blobs && !tmps && !others) {
    ag_str_release(&what);
    return 0;
  }
  if (others > 3)
    ag_str_printf(&what, " and %zu more", others - 3);
  if (blobs)
    ag_str_printf(&what, "%s%zu file(s) in objects/", what.len ? ", " : "", blobs);
  if (tmps)
    ag_str_printf(&what, "%s%zu file(s) in tmp/", what.len ? ", " : "", tmps);
  const char *w = what.oom ? "files" : ag_str_cstr(&what);
  int rc;
  if (!blobs && !tmps && !lock) {
    rc = ag__fail(AG_EEXISTS,
                  "'%s' is not an argus workspace and is not empty (it holds %s): a workspace "
                  "is created only in a new or empty directory; choose another --workspace",
                  st->path, w);
  } else {
    struct stat sb;
    const char *db = stat(st->db_path, &sb) != 0 ? "is missing"
                     : sb.st_size == 0           ? "is empty (0 bytes)"
                                                 : "holds no argus schema (never initialized)";
    rc = ag__fail(AG_ECORRUPT,
                  "workspace '%s' holds data (%s) but its database '%s' %s; argus will not "
                  "initialize over it. To recover: restore workspace.db from a backup, or move "
                  "the directory aside (mv '%s' '%s.damaged'), run 'argus ws init' and re-add "
                  "the blob files with 'argus ws put' (docs/workspace.md, \"Recovery\")",
                  st->path, w, st->db_path, db, st->path, st->path);
  }
  ag_str_release(&what);
  return rc;
}

/* ---------------------------------------------------------------- open */
static char *join(const char *a, const char *b) {
  ag_str s = AG_STR_INIT;
  ag_str_printf(&s, "%s/%s", a, b);
  if (s.oom) {
    ag_str_release(&s);
    return NULL;
  }
  return ag_str_detach(&s);
}

/* "host:pid:starttime": the start time (clock ticks since boot, field 22 of
 * /proc/PID/stat) tells a live process from a later one that reused its pid. */
static int proc_start(long pid, unsigned long long *start, char *state) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return -1;
  buf[n] = 0;
  char *p = strrchr(buf, ')'); /* the command name may contain anything */
  if (!p || p[1] != ' ')
    return -1;
  p += 2;
  *state = *p;
  /* fields after ')' start at field 3 (state); starttime is field 22 */
  for (int field = 3; field < 22; field++) {
    p = strchr(p, ' ');
    if (!p)
      return -1;
    p++;
  }
  *start = strtoull(p, NULL, 10);
  return 0;
}

int ag__owner_alive(const ag_store *st, const char *owner) {
  if (!owner)
    return 0;
  const char *c2 = strrchr(owner, ':');
  if (!c2 || c2 == owner)
    return 1;
  const char *c1 = c2 - 1;
  while (c1 > owner && *c1 != ':')
    c1--;
  if (*c1 != ':')
    return 1;
  size_t hl = (size_t)(c1 - owner);
  if (hl != strlen(st->host) || strncmp(owner, st->host, hl) != 0)
    return 1; /* another machine: we cannot tell */
  long pid = strtol(c1 + 1, NULL, 10);
  unsigned long long want = strtoull(c2 + 1, NULL, 10), have = 0;
  char state = 0;
  if (pid <= 0 || proc_start(pid, &have, &state) != 0)
    return 0;
  if (state == 'Z' || state == 'X')
    return 0;
  return have == want;
}

static void store_free(ag_store *st) {
  for (int i = 0; i < AG__NSTMT; i++)
    if (st->stmts[i].stmt)
      sqlite3_finalize(st->stmts[i].stmt);
  if (st->db)
    sqlite3_close_v2(st->db);
  pthread_mutex_destroy(&st->mu);
  ag_free(st->path);
  ag_free(st->db_path);
  ag_free(st->objects);
  ag_free(st->tmp);
  ag_free(st->lock_path);
  ag_free(st);
}

static int mkdir_one(const char *p) {
  if (mkdir(p, 0755) == 0 || errno == EEXIST)
    return 0;
  return ag__fail(AG_EIO, "cannot create directory '%s': %s", p, strerror(errno));
}

const char *const *ag__store_migrations(int *n) {
  *n = (int)(sizeof migrations / sizeof migrations[0]);
  return migrations;
}

void ag__sqlite_setup(void) { pthread_once(&sqlite_once, sqlite_setup); }

int ag__store_open_with(const char *path, unsigned flags, const char *const *mig, int nmig,
                        ag_store **out) {
  *out = NULL;
  errbuf[0] = 0;
  ag__sqlite_setup();
  if (!path || !*path)
    return ag__fail(AG_EINVAL, "workspace path is empty");
  int create = (flags & AG_STORE_CREATE) != 0;
  struct stat sb;
  if (stat(path, &sb) != 0) {
    if (errno != ENOENT)
      return ag__fail(AG_EIO, "cannot access workspace '%s': %s", path, strerror(errno));
    if (!create)
      return ag__fail(AG_ENOTFOUND, "no workspace at '%s' (run 'argus ws init' to create one)", path);
  } else if (!S_ISDIR(sb.st_mode)) {
    return ag__fail(AG_EINVAL, "workspace '%s' is not a directory", path);
  }
  ag_store *st = ag_calloc(1, sizeof *st);
  if (!st)
    return ag__fail(AG_ENOMEM, "out of memory opening workspace '%s'", path);
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&st->mu, &ma);
  pthread_mutexattr_destroy(&ma);
  int rc = 0;
  st->path = ag_strdup(path);
  st->db_path = join(path, "workspace.db");
  st->objects = join(path, "objects");
  st->tmp = join(path, "tmp");
  st->lock_path = join(path, "lock");
  if (!st->path || !st->db_path || !st->objects || !st->tmp || !st->lock_path) {
    rc = ag__fail(AG_ENOMEM, "out of memory opening workspace '%s'", path);
    goto fail;
  }
  if (gethostname(st->host, sizeof st->host - 1) != 0)
    snprintf(st->host, sizeof st->host, "localhost");
  for (char *h = st->host; *h; h++)
    if (*h == ':')
      *h = '_';
  {
    unsigned long long start = 0;
    char state;
    proc_start((long)getpid(), &start, &state);
    snprintf(st->owner, sizeof st->owner, "%s:%ld:%llu", st->host, (long)getpid(), start);
  }
  /* before SQLite makes a database file there, or writes a header into an
   * empty one. A creator running alongside writes the header (enabling WAL)
   * before anything else, so a database that has content by the time the
   * directory was read is that creator's: go on and open it. */
  if (!db_has_content(st) && (rc = refuse_unless_fresh(st)) && !db_has_content(st)) {
    if (!create && rc != AG_ECORRUPT) /* someone else's directory */
      rc = ag__fail(AG_ENOTFOUND, "'%s' is not an argus workspace (%s; run 'argus ws init')", path,
                    access(st->db_path, F_OK) ? "no workspace.db" : "workspace.db is empty");
    goto fail;
  }
  rc = 0;
  if (create) {
    if ((rc = ag_mkdir_p(path, 0755))) {
      rc = ag__fail(rc, "cannot create workspace directory '%s': %s", path, ag_strerror(rc));
      goto fail;
    }
    if ((rc = mkdir_one(st->objects)) || (rc = mkdir_one(st->tmp)))
      goto fail;
  } else if (access(st->db_path, F_OK) != 0) {
    rc = ag__fail(AG_ENOTFOUND,
                  "'%s' is not an argus workspace (no workspace.db; run 'argus ws init')", path);
    goto fail;
  }
  int oflags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
  int src = sqlite3_open_v2(st->db_path, &st->db, oflags, NULL);
  if (src != SQLITE_OK) {
    rc = AG__SQL(st, src);
    rc = ag__fail(rc, "cannot open workspace database '%s': %s", st->db_path,
                  st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(src));
    goto fail;
  }
  sqlite3_extended_result_codes(st->db, 1);
  sqlite3_busy_timeout(st->db, 10000);
  /* WAL: readers never block the writer; the mode is persistent. Switching
   * needs a moment alone with the database, so retry while others hold it. */
  {
    uint64_t t0 = ag_now_ns();
    for (;;) {
      sqlite3_stmt *s = NULL;
      rc = AG__SQL(st, sqlite3_prepare_v2(st->db, "PRAGMA journal_mode=WAL", -1, &s, NULL));
      if (rc >= 0)
        rc = AG__SQL(st, sqlite3_step(s));
      char mode[16] = "";
      if (rc == SQLITE_ROW)
        ag__col_copy(s, 0, mode, sizeof mode);
      sqlite3_finalize(s);
      if (rc == SQLITE_ROW) {
        if (strcmp(mode, "wal") != 0) {
          rc = ag__fail(AG_EIO, "workspace '%s': cannot use WAL journaling (got '%s'); is it on a "
                                "network file system?", path, mode);
          goto fail;
        }
        rc = 0;
        break;
      }
      if (rc != AG_EBUSY || ag_now_ns() - t0 > AG__BUSY_DEADLINE_NS)
        break;
      pause_ns(2000000);
    }
    if (rc) {
      if (rc == AG_ECORRUPT)
        rc = ag__fail(rc, "'%s' is not an argus workspace database (%s)", st->db_path,
                      sqlite3_errmsg(st->db));
      goto fail;
    }
  }
  if ((rc = exec(st, "PRAGMA synchronous=FULL")) || (rc = exec(st, "PRAGMA foreign_keys=ON")))
    goto fail;
  ver_ctx vc = {0, 0, {mig, nmig}};
  if ((rc = ag__txn(st, AG__READ, read_version, &vc)))
    goto fail;
  if (vc.foreign) {
    rc = ag__fail(AG_ECORRUPT, "'%s' is a SQLite database but not an argus workspace", st->db_path);
    goto fail;
  }
  if (vc.version > nmig) {
    rc = ag__fail(AG_ESCHEMA, "workspace schema %d is newer than this argus (%d): upgrade argus",
                  vc.version, nmig);
    goto fail;
  }
  if (vc.version == 0 && !create) {
    if (!(rc = refuse_unless_fresh(st)))
      rc = ag__fail(AG_ENOTFOUND, "workspace '%s' was never initialized (run 'argus ws init')",
                    path);
    goto fail;
  }
  if (vc.version < nmig) {
    if ((rc = ag__txn(st, AG__WRITE, migrate_body, &vc)))
      goto fail;
    if (vc.foreign) {
      rc = ag__fail(AG_ECORRUPT, "'%s' is a SQLite database but not an argus workspace",
                    st->db_path);
      goto fail;
    }
    if (vc.version > nmig) {
      rc = ag__fail(AG_ESCHEMA, "workspace schema %d is newer than this argus (%d): upgrade argus",
                    vc.version, nmig);
      goto fail;
    }
  }
  st->schema = nmig;
  *out = st;
  return 0;
fail:
  store_free(st);
  return rc;
}

int ag_store_open(const char *path, unsigned flags, ag_store **out) {
  return ag__store_open_with(path, flags, migrations,
                             (int)(sizeof migrations / sizeof migrations[0]), out);
}

void ag_store_close(ag_store *st) {
  if (!st)
    return;
  if (st->batch)
    ag_store_batch_abort(st);
  store_free(st);
}

const char *ag_store_path(const ag_store *st) { return st->path; }

const char *ag_store_sqlite_version(void) { return sqlite3_libversion(); }

/* ------------------------------------------------------------ test hooks */
/* Runs SQL directly (tests use it to damage a workspace on purpose). */
int ag__store_exec(ag_store *st, const char *sql) {
  pthread_mutex_lock(&st->mu);
  int rc = exec(st, sql);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

/* ------------------------------------------------------------ file locks */
int ag__lock(ag_store *st, int exclusive, int nonblock, int *fd_out) {
  *fd_out = -1;
  int fd = open(st->lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return ag__fail(AG_EIO, "cannot open lock file '%s': %s", st->lock_path, strerror(errno));
  int op = (exclusive ? LOCK_EX : LOCK_SH) | (nonblock ? LOCK_NB : 0);
  while (flock(fd, op) != 0) {
    if (errno == EINTR)
      continue;
    int e = errno;
    close(fd);
    if (nonblock && e == EWOULDBLOCK)
      return AG__RETRY;
    return ag__fail(AG_EIO, "cannot lock '%s': %s", st->lock_path, strerror(e));
  }
  *fd_out = fd;
  return 0;
}

void ag__unlock(int fd) {
  if (fd >= 0)
    close(fd); /* closing the descriptor drops the flock */
}

char *ag__object_path(const ag_store *st, const char *hash) {
  ag_str s = AG_STR_INIT;
  ag_str_printf(&s, "%s/%.2s/%s", st->objects, hash, hash + 2);
  if (s.oom) {
    ag_str_release(&s);
    return NULL;
  }
  return ag_str_detach(&s);
}

int ag__fsync_dir(const char *path) {
  int fd = ag__io->open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (fd < 0)
    return ag__fail(AG_EIO, "cannot open directory '%s': %s", path, strerror(errno));
  int rc = 0;
  if (ag__io->fsync(fd) != 0)
    rc = ag__fail(AG_EIO, "cannot sync directory '%s': %s", path, strerror(errno));
  ag__io->close(fd);
  return rc;
}

/* ------------------------------------------------------ the I/O hook */
static int sys_open(const char *path, int flags, mode_t mode) { return open(path, flags, mode); }
static int sys_mkdir(const char *path, mode_t mode) { return mkdir(path, mode); }
static const ag__io_ops sys_io = {mkstemp, sys_open, write, fsync, close, sys_mkdir, rename};
const ag__io_ops *ag__io = &sys_io;

void ag__store_set_io(const ag__io_ops *ops) { ag__io = ops ? ops : &sys_io; }

/* --------------------------------------------------------------- checks */
int ag__hash_valid(const char *h) {
  if (!h)
    return 0;
  size_t i = 0;
  for (; h[i]; i++)
    if (!((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f')))
      return 0;
  return i == AG_STORE_HASH_LEN;
}

int ag__kind_valid(const char *k) {
  if (!k || !*k)
    return 0;
  size_t i = 0;
  for (; k[i]; i++)
    if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= '0' && k[i] <= '9') || k[i] == '_' ||
          k[i] == '-' || k[i] == '.'))
      return 0;
  return i <= AG_STORE_KIND_MAX;
}
