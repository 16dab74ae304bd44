/*
 * maint.c — `check` (is this workspace sound?) and `gc` (drop what nothing
 * reaches).
 *
 * check holds the workspace lock shared (so gc cannot remove files under it)
 * and reads one database snapshot: SQLite's integrity_check and
 * foreign_key_check, every blob read back through zstd and SHA-256, every
 * task key recomputed, structural rules (version parents older than their
 * children, refs with one target, finished tasks with end times), and a scan
 * of objects/ and tmp/ for files no record owns (notes, not problems: a
 * crashed put leaves them and gc removes them).
 *
 * gc takes the database write lock and then, without waiting, the
 * workspace lock exclusive (a writer holding it shared is finishing a put;
 * gc lets go and tries again), deletes the unreachable artifact rows, commits,
 * and only then unlinks their files — a crash in between leaves orphan files,
 * never a row without its file. That transaction always writes (gc_fence), so
 * the commit of a writer killed half-way through it is settled before gc takes
 * its blob file for an orphan. gc also removes the run directories of failed
 * runs (trace/, runs/: no evidence file, process gone). Cost: check reads
 * every stored byte once; gc is a few indexed queries plus directory scans.
 */
#include "store_int.h"

#include "argus/evidence.h" /* AG_EV_FILE_NAME: a run directory's evidence */

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- check */
typedef struct chk {
  ag_check_report *r;
  size_t pcap, ncap;
  int oom;
} chk;

static void add_line(chk *c, int problem, const char *fmt, ...) AG_PRINTF(3, 4);
static void add_line(chk *c, int problem, const char *fmt, ...) {
  ag_str s = AG_STR_INIT;
  va_list ap;
  va_start(ap, fmt);
  ag_str_vprintf(&s, fmt, ap);
  va_end(ap);
  char *line = s.oom ? NULL : ag_str_detach(&s);
  ag_str_release(&s);
  char ***v = problem ? &c->r->problems : &c->r->notes;
  size_t *n = problem ? &c->r->nproblems : &c->r->nnotes;
  size_t *cap = problem ? &c->pcap : &c->ncap;
  if (line && *n == *cap) {
    size_t nc = *cap ? 2 * *cap : 8;
    char **nv = ag_realloc(*v, nc * sizeof *nv);
    if (nv) {
      *v = nv;
      *cap = nc;
    }
  }
  if (!line || *n == *cap) {
    ag_free(line);
    c->oom = 1;
    return;
  }
  (*v)[(*n)++] = line;
}

void ag_store_check_release(ag_check_report *r) {
  if (!r)
    return;
  for (size_t i = 0; i < r->nproblems; i++)
    ag_free(r->problems[i]);
  for (size_t i = 0; i < r->nnotes; i++)
    ag_free(r->notes[i]);
  ag_free(r->problems);
  ag_free(r->notes);
  memset(r, 0, sizeof *r);
}

static void chk_reset(chk *c) {
  ag_store_check_release(c->r);
  c->pcap = c->ncap = 0;
  c->oom = 0;
}

static int discard_sink(void *ctx, const void *p, size_t n) { return 0; }

/* Runs a pragma whose rows are findings; "ok" alone means none. */
static int pragma_rows(ag_store *st, chk *c, const char *sql, const char *label) {
  sqlite3_stmt *s = NULL;
  int rc = AG__SQL(st, sqlite3_prepare_v2(st->db, sql, -1, &s, NULL));
  if (rc < 0)
    return rc;
  while ((rc = AG__SQL(st, sqlite3_step(s))) == SQLITE_ROW) {
    int ncol = sqlite3_column_count(s);
    if (ncol == 1) {
      const char *t = (const char *)sqlite3_column_text(s, 0);
      if (t && strcmp(t, "ok") != 0)
        add_line(c, 1, "%s: %s", label, t);
    } else { /* foreign_key_check: table, rowid, parent, fkid */
      add_line(c, 1, "%s: row %lld of table '%s' refers to a missing row of '%s'", label,
               (long long)sqlite3_column_int64(s, 1), sqlite3_column_text(s, 0),
               sqlite3_column_text(s, 2));
    }
  }
  sqlite3_finalize(s);
  return rc < 0 ? rc : 0;
}

static int check_blobs(ag_store *st, chk *c) {
  sqlite3_stmt *s = NULL;
  int rc = AG__SQL(st, sqlite3_prepare_v2(st->db,
                                          "SELECT hash, size, stored_size, codec, data IS NOT "
                                          "NULL, data FROM artifacts ORDER BY hash",
                                          -1, &s, NULL));
  if (rc < 0)
    return rc;
  while ((rc = AG__SQL(st, sqlite3_step(s))) == SQLITE_ROW) {
    char hash[AG_STORE_HASH_LEN + 1];
    ag__col_copy(s, 0, hash, sizeof hash);
    if (!ag__hash_valid(hash)) {
      add_line(c, 1, "artifact '%s': not a valid hash", hash);
      continue;
    }
    uint64_t size = (uint64_t)sqlite3_column_int64(s, 1);
    uint64_t stored = (uint64_t)sqlite3_column_int64(s, 2);
    int codec = sqlite3_column_int(s, 3);
    int inl = sqlite3_column_int(s, 4);
    const void *data = NULL;
    if (inl) {
      data = sqlite3_column_blob(s, 5);
      int n = sqlite3_column_bytes(s, 5);
      if (!data && n > 0) {
        rc = ag__fail(AG_ENOMEM, "out of memory checking artifact %s", hash);
        break;
      }
      if ((uint64_t)n != stored) {
        add_line(c, 1, "artifact %s: %d stored bytes in the database, %llu recorded", hash, n,
                 (unsigned long long)stored);
        continue;
      }
    }
    rc = ag__blob_read(st, hash, size, stored, codec, data, inl, discard_sink, NULL);
    if (rc == AG_ENOMEM)
      break;
    if (rc)
      add_line(c, 1, "%s", ag_store_errmsg());
    c->r->blobs_checked++;
    c->r->bytes_checked += size;
    rc = 0;
  }
  sqlite3_finalize(s);
  return rc < 0 ? rc : 0;
}

static int check_tasks(ag_store *st, chk *c) {
  sqlite3_stmt *s = NULL, *in = NULL;
  int rc = AG__SQL(st, sqlite3_prepare_v2(st->db,
                                          "SELECT id, key, type, config, argus_version, status, "
                                          "owner, error, end_ns, "
                                          "(SELECT count(*) FROM task_outputs o WHERE o.task_id = "
                                          "tasks.id) FROM tasks ORDER BY id",
                                          -1, &s, NULL));
  if (rc >= 0)
    rc = AG__SQL(st, sqlite3_prepare_v2(st->db,
                                        "SELECT hash FROM task_inputs WHERE task_id = ? ORDER BY ord",
                                        -1, &in, NULL));
  const char **inputs = NULL;
  char *store = NULL;
  size_t icap = 0;
  while (rc >= 0 && (rc = AG__SQL(st, sqlite3_step(s))) == SQLITE_ROW) {
    int64_t id = sqlite3_column_int64(s, 0);
    const char *key = (const char *)sqlite3_column_text(s, 1);
    const char *type = (const char *)sqlite3_column_text(s, 2);
    const char *config = (const char *)sqlite3_column_text(s, 3);
    const char *version = (const char *)sqlite3_column_text(s, 4);
    const char *status = (const char *)sqlite3_column_text(s, 5);
    const char *owner = (const char *)sqlite3_column_text(s, 6);
    int has_error = sqlite3_column_type(s, 7) != SQLITE_NULL;
    int has_end = sqlite3_column_type(s, 8) != SQLITE_NULL;
    int64_t nout = sqlite3_column_int64(s, 9);
    if (!key || !type || !config || !version || !status) {
      rc = ag__fail(AG_ENOMEM, "out of memory checking tasks");
      break;
    }
    /* recompute the key from what is stored */
    sqlite3_reset(in);
    sqlite3_bind_int64(in, 1, id);
    size_t n = 0;
    while ((rc = AG__SQL(st, sqlite3_step(in))) == SQLITE_ROW) {
      if (n == icap) {
        size_t nc = icap ? 2 * icap : 8;
        const char **ni = ag_realloc(inputs, nc * sizeof *ni);
        char *ns = ni ? ag_realloc(store, nc * 65) : NULL;
        if (ni)
          inputs = ni;
        if (ns)
          store = ns;
        if (!ni || !ns) {
          rc = ag__fail(AG_ENOMEM, "out of memory checking tasks");
          break;
        }
        icap = nc;
      }
      ag__col_copy(in, 0, store + 65 * n, 65);
      n++;
    }
    if (rc < 0)
      break;
    for (size_t i = 0; i < n; i++)
      inputs[i] = store + 65 * i;
    char want[65];
    if ((rc = ag__task_key_raw(type, config, inputs, n, version, want)))
      break;
    if (strcmp(want, key) != 0)
      add_line(c, 1, "task t%lld: key %.12s does not match its type, config and inputs (%.12s)",
               (long long)id, key, want);
    int done = !strcmp(status, "ok") || !strcmp(status, "failed");
    if (done && !has_end)
      add_line(c, 1, "task t%lld is %s but has no end time", (long long)id, status);
    if (!done && nout)
      add_line(c, 1, "task t%lld is %s but has outputs", (long long)id, status);
    if (!strcmp(status, "failed") && !has_error)
      add_line(c, 1, "task t%lld failed without an error text", (long long)id);
    if (!strcmp(status, "running") && !ag__owner_alive(st, owner))
      add_line(c, 0, "task t%lld was abandoned by process %s (it is rerun on the next request)",
               (long long)id, owner ? owner : "?");
    rc = 0;
  }
  sqlite3_finalize(s);
  sqlite3_finalize(in);
  ag_free(inputs);
  ag_free(store);
  return rc < 0 ? rc : 0;
}

static int check_rules(ag_store *st, chk *c) {
  static const struct {
    const char *sql, *what;
  } rules[] = {
      {"SELECT id FROM versions WHERE parent IS NOT NULL AND parent >= id",
       "version v%lld: its parent is not older than it"},
      {"SELECT id FROM versions WHERE parent IS NOT NULL AND parent NOT IN (SELECT id FROM versions)",
       "version v%lld: its parent does not exist"},
      {"SELECT id FROM versions WHERE module NOT IN (SELECT hash FROM artifacts)",
       "version v%lld: its module artifact is missing"},
      {"SELECT rowid FROM refs WHERE (version_id IS NULL) = (artifact IS NULL) OR "
       "(version_id IS NOT NULL AND version_id NOT IN (SELECT id FROM versions)) OR "
       "(artifact IS NOT NULL AND artifact NOT IN (SELECT hash FROM artifacts))",
       "ref #%lld: its target is missing"},
      {"SELECT task_id FROM task_inputs WHERE hash NOT IN (SELECT hash FROM artifacts)",
       "task t%lld: an input artifact is missing"},
      {"SELECT task_id FROM task_outputs WHERE hash NOT IN (SELECT hash FROM artifacts)",
       "task t%lld: an output artifact is missing"},
      {"SELECT query_id FROM reports WHERE artifact NOT IN (SELECT hash FROM artifacts)",
       "query q%lld: a report artifact is missing"},
  };
  for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
    sqlite3_stmt *s = NULL;
    int rc = AG__SQL(st, sqlite3_prepare_v2(st->db, rules[i].sql, -1, &s, NULL));
    if (rc < 0)
      return rc;
    while ((rc = AG__SQL(st, sqlite3_step(s))) == SQLITE_ROW)
      add_line(c, 1, rules[i].what, (long long)sqlite3_column_int64(s, 0));
    sqlite3_finalize(s);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* Calls fn for each file under objects/ whose name forms a hash; other
 * entries are reported through odd. */
typedef int (*obj_fn)(ag_store *st, void *ctx, const char *hash, const char *path);
static int scan_objects(ag_store *st, void *ctx, obj_fn fn, void (*odd)(void *, const char *)) {
  DIR *d = opendir(st->objects);
  if (!d)
    return errno == ENOENT ? 0 : ag__fail(AG_EIO, "cannot read '%s': %s", st->objects, strerror(errno));
  int rc = 0;
  struct dirent *de;
  char sub[4096], path[4096 + 300], hash[600];
  while (!rc && (de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
      continue;
    if (snprintf(sub, sizeof sub, "%s/%s", st->objects, de->d_name) >= (int)sizeof sub)
      continue;
    DIR *d2 = strlen(de->d_name) == 2 ? opendir(sub) : NULL;
    if (!d2) {
      odd(ctx, sub);
      continue;
    }
    struct dirent *f;
    while (!rc && (f = readdir(d2))) {
      if (!strcmp(f->d_name, ".") || !strcmp(f->d_name, ".."))
        continue;
      if (snprintf(path, sizeof path, "%s/%s", sub, f->d_name) >= (int)sizeof path ||
          snprintf(hash, sizeof hash, "%s%s", de->d_name, f->d_name) >= (int)sizeof hash) {
        odd(ctx, sub);
        continue;
      }
      if (strlen(de->d_name) + strlen(f->d_name) != AG_STORE_HASH_LEN || !ag__hash_valid(hash)) {
        odd(ctx, path);
        continue;
      }
      rc = fn(st, ctx, hash, path);
    }
    closedir(d2);
  }
  closedir(d);
  return rc;
}

static int file_has_row(ag_store *st, const char *hash, int *yes) {
  sqlite3_stmt *s;
  static const char sql[] = "SELECT 1 FROM artifacts WHERE hash = ? AND data IS NULL";
  int rc = ag__row_text(st, sql, hash, &s);
  *yes = rc > 0;
  return rc < 0 ? rc : 0;
}

static int chk_obj(ag_store *st, void *ctx, const char *hash, const char *path) {
  int yes = 0;
  int rc = file_has_row(st, hash, &yes);
  if (!rc && !yes)
    add_line(ctx, 0, "orphan blob file '%s' has no record (a put was interrupted; gc removes it)",
             path);
  return rc;
}

static void chk_odd(void *ctx, const char *path) {
  add_line(ctx, 0, "unexpected entry '%s' in the blob store", path);
}

static int count_dir(const char *path, size_t *n, int unlink_them) {
  *n = 0;
  DIR *d = opendir(path);
  if (!d)
    return 0;
  struct dirent *de;
  char buf[4096];
  while ((de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
      continue;
    (*n)++;
    if (unlink_them) {
      if (snprintf(buf, sizeof buf, "%s/%s", path, de->d_name) < (int)sizeof buf)
        unlink(buf);
    }
  }
  closedir(d);
  return 0;
}

static int check_body(ag_store *st, void *vctx) {
  chk *c = vctx;
  chk_reset(c);
  int rc;
  if ((rc = pragma_rows(st, c, "PRAGMA integrity_check", "database integrity")) ||
      (rc = pragma_rows(st, c, "PRAGMA foreign_key_check", "dangling reference")) ||
      (rc = check_rules(st, c)) || (rc = check_blobs(st, c)) || (rc = check_tasks(st, c)) ||
      (rc = scan_objects(st, c, chk_obj, chk_odd)))
    return rc;
  {
    sqlite3_stmt *s = NULL;
    rc = AG__SQL(st, sqlite3_prepare_v2(st->db, "SELECT max(version) FROM schema_version", -1, &s,
                                        NULL));
    if (rc >= 0 && (rc = AG__SQL(st, sqlite3_step(s))) == SQLITE_ROW &&
        sqlite3_column_int(s, 0) != st->schema)
      add_line(c, 1, "schema version %d recorded, %d expected", sqlite3_column_int(s, 0),
               st->schema);
    sqlite3_finalize(s);
    if (rc < 0)
      return rc;
  }
  size_t ntmp = 0;
  count_dir(st->tmp, &ntmp, 0);
  if (ntmp)
    add_line(c, 0, "%zu file(s) in '%s' left by interrupted writes (gc removes them)", ntmp,
             st->tmp);
  if (c->oom)
    return ag__fail(AG_ENOMEM, "out of memory writing the check report");
  return 0;
}

int ag_store_check(ag_store *st, ag_check_report *report) {
  memset(report, 0, sizeof *report);
  int lockfd = -1;
  int rc = ag__lock(st, 0, 0, &lockfd);
  if (rc)
    return rc;
  chk c = {report, 0, 0, 0};
  rc = ag__txn(st, AG__READ, check_body, &c);
  ag__unlock(lockfd);
  if (rc) {
    ag_store_check_release(report);
    return rc;
  }
  /* the verdict is what ag_store_health reports until the next check */
  if (report->nproblems) {
    ag_str what = AG_STR_INIT;
    ag_str_printf(&what, "%zu problem(s) found by 'argus ws check', the first: %s",
                  report->nproblems, report->problems[0]);
    if (!what.oom)
      ag__mark_damaged(st, ag_str_cstr(&what));
    ag_str_release(&what);
  } else {
    char *p = ag__damaged_path(st);
    if (p)
      unlink(p);
    ag_free(p);
  }
  return 0;
}

/* ------------------------------------------------------------------- gc */
typedef struct gc_ctx {
  const ag_gc_opts *o;
  ag_gc_report *r;
  size_t cap;
  unsigned char *file; /* per removed entry: 1 when stored in objects/ */
  int lockfd;
} gc_ctx;

/* A writer killed inside its commit (the commit frame is in workspace.db-wal,
 * the shared WAL index not yet updated) leaves that commit in doubt: live
 * connections do not see it, but the next WAL recovery (the first open after
 * every connection has gone) finds it committed, unless a later commit has
 * overwritten those frames first. Its blob file was published before the
 * commit and its shared lock died with it, so gc would take the file for an
 * orphan and the recovered row would have no file. gc therefore commits a
 * change of its own before it unlinks anything: it bumps PRAGMA user_version
 * (Argus does not use it otherwise), which always writes a page, so its
 * frames take the place of the dead writer's and a commit gc cannot see is
 * then lost for good. */
static int gc_fence(ag_store *st) {
  static const char get[] = "PRAGMA user_version";
  sqlite3_stmt *s;
  int rc = ag__stmt(st, get, &s);
  if (rc)
    return rc;
  if ((rc = AG__SQL(st, sqlite3_step(s))) < 0)
    return rc;
  int64_t v = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
  sqlite3_reset(s);
  char set[64];
  snprintf(set, sizeof set, "PRAGMA user_version = %d", (int)((v + 1) & 0x7fffffff));
  rc = AG__SQL(st, sqlite3_exec(st->db, set, NULL, NULL, NULL));
  return rc < 0 ? rc : 0;
}

static int gc_body(ag_store *st, void *vctx) {
  gc_ctx *c = vctx;
  c->r->nremoved = 0;
  c->r->removed_bytes = 0;
  int rc;
  if (c->lockfd < 0) {
    /* we hold the write lock: now the file lock, without waiting (a writer
     * holding it shared may be waiting for our write lock) */
    if ((rc = ag__lock(st, 1, 1, &c->lockfd)))
      return rc; /* AG__RETRY: let go of everything and try again */
  }
  /* every writer that held the lock has finished or died: settle its commit */
  if (!c->o->dry_run && (rc = gc_fence(st)))
    return rc;
  int64_t cutoff = (int64_t)ag_wall_time_ns() - c->o->grace_s * 1000000000ll;
  sqlite3_stmt *s;
  static const char sql[] =
      "SELECT hash, stored_size, data IS NULL FROM artifacts a WHERE last_put_ns <= ?"
      " AND a.task_id IS NULL"
      " AND NOT EXISTS (SELECT 1 FROM refs r WHERE r.artifact = a.hash)"
      " AND NOT EXISTS (SELECT 1 FROM versions v WHERE v.module = a.hash)"
      " AND NOT EXISTS (SELECT 1 FROM task_inputs i WHERE i.hash = a.hash)"
      " AND NOT EXISTS (SELECT 1 FROM task_outputs o WHERE o.hash = a.hash)"
      " AND NOT EXISTS (SELECT 1 FROM reports p WHERE p.artifact = a.hash)"
      " ORDER BY hash";
  if ((rc = ag__stmt(st, sql, &s)) || (rc = ag__bind_i64(st, s, 1, cutoff)))
    return rc;
  while ((rc = AG__SQL(st, sqlite3_step(s))) == SQLITE_ROW) {
    if (c->r->nremoved == c->cap) {
      size_t cap = c->cap ? 2 * c->cap : 16;
      void *nv = ag_realloc(c->r->removed, cap * sizeof *c->r->removed);
      if (nv)
        c->r->removed = nv;
      unsigned char *nf = nv ? ag_realloc(c->file, cap) : NULL;
      if (nf)
        c->file = nf;
      if (!nv || !nf)
        return ag__fail(AG_ENOMEM, "out of memory collecting garbage");
      c->cap = cap;
    }
    ag__col_copy(s, 0, c->r->removed[c->r->nremoved], AG_STORE_HASH_LEN + 1);
    c->r->removed_bytes += (uint64_t)sqlite3_column_int64(s, 1);
    c->file[c->r->nremoved] = (unsigned char)sqlite3_column_int(s, 2);
    c->r->nremoved++;
  }
  if (rc < 0)
    return rc;
  if (c->o->dry_run)
    return 0;
  static const char del[] = "DELETE FROM artifacts WHERE hash = ?";
  for (size_t i = 0; i < c->r->nremoved; i++) {
    if ((rc = ag__stmt(st, del, &s)) || (rc = ag__bind_text(st, s, 1, c->r->removed[i])))
      return rc;
    if ((rc = AG__SQL(st, sqlite3_step(s))) < 0)
      return rc;
  }
  return 0;
}

typedef struct orphan_ctx {
  int dry;
  size_t n;
} orphan_ctx;

static int gc_obj(ag_store *st, void *ctx, const char *hash, const char *path) {
  orphan_ctx *o = ctx;
  int yes = 0;
  pthread_mutex_lock(&st->mu); /* outside a transaction: reset what we used */
  int rc = file_has_row(st, hash, &yes);
  ag__reset_all(st);
  pthread_mutex_unlock(&st->mu);
  if (!rc && !yes) {
    o->n++;
    if (!o->dry)
      unlink(path);
  }
  return rc;
}

static void gc_odd(void *ctx, const char *path) {}

/* ---------------------------------------------------- run directories */
/* The pid a run directory's name ends with (…-PID), or 0. */
static long run_pid(const char *name) {
  const char *dash = strrchr(name, '-');
  if (!dash || !dash[1])
    return 0;
  char *e = NULL;
  long pid = strtol(dash + 1, &e, 10);
  return *e || pid <= 0 ? 0 : pid;
}

/* Removes (or lists, dry_run) the failed run directories under trace/ and
 * runs/: no evidence file, process gone, older than the grace period. */
static int gc_runs(ag_store *st, const ag_gc_opts *o, ag_gc_report *r) {
  static const char *const parents[] = {"trace", "runs"};
  size_t cap = 0;
  int rc = 0;
  time_t cutoff = time(NULL) - (time_t)o->grace_s;
  for (size_t k = 0; k < sizeof parents / sizeof parents[0] && !rc; k++) {
    char dir[4096], sub[4096 + 256], ev[4096 + 300];
    if (snprintf(dir, sizeof dir, "%s/%s", st->path, parents[k]) >= (int)sizeof dir)
      continue;
    DIR *d = opendir(dir);
    if (!d)
      continue;
    struct dirent *de;
    while (!rc && (de = readdir(d))) {
      long pid = run_pid(de->d_name);
      struct stat sb;
      if (!pid || snprintf(sub, sizeof sub, "%s/%s", dir, de->d_name) >= (int)sizeof sub ||
          lstat(sub, &sb) != 0 || !S_ISDIR(sb.st_mode) || sb.st_mtime > cutoff)
        continue;
      snprintf(ev, sizeof ev, "%s/" AG_EV_FILE_NAME, sub);
      if (access(ev, F_OK) == 0 || kill((pid_t)pid, 0) == 0 || errno == EPERM)
        continue; /* evidence of a run that succeeded, or a run still going */
      if (ag__grow(&r->run_dirs, &cap, r->nrun_dirs, sizeof *r->run_dirs))
        rc = AG_ENOMEM;
      else if (!(r->run_dirs[r->nrun_dirs] = ag_strdup(sub)))
        rc = ag__fail(AG_ENOMEM, "out of memory collecting garbage");
      else if (!o->dry_run && ag_remove_tree(sub) != 0)
        rc = ag__fail(AG_EIO, "cannot remove the run directory '%s': %s", sub, strerror(errno));
      else
        r->nrun_dirs++;
    }
    closedir(d);
  }
  return rc;
}

void ag_store_gc_release(ag_gc_report *r) {
  if (!r)
    return;
  for (size_t i = 0; i < r->nrun_dirs; i++)
    ag_free(r->run_dirs[i]);
  ag_free(r->run_dirs);
  ag_free(r->removed);
  memset(r, 0, sizeof *r);
}

int ag_store_gc(ag_store *st, const ag_gc_opts *opts, ag_gc_report *report) {
  memset(report, 0, sizeof *report);
  ag_gc_opts none = {0, 0};
  if (!opts)
    opts = &none;
  if (opts->grace_s < 0)
    return ag__fail(AG_EINVAL, "gc grace period must be >= 0 seconds");
  gc_ctx c = {opts, report, 0, NULL, -1};
  int rc = ag__txn(st, AG__WRITE, gc_body, &c);
  if (rc)
    goto out;
  /* rows are gone (committed); the exclusive lock keeps writers out while
   * the files go */
  if (!opts->dry_run) {
    for (size_t i = 0; i < report->nremoved; i++) {
      if (!c.file[i])
        continue;
      char *p = ag__object_path(st, report->removed[i]);
      if (p) {
        unlink(p);
        ag_free(p);
      }
    }
  }
  orphan_ctx o = {opts->dry_run, 0};
  rc = scan_objects(st, &o, gc_obj, gc_odd);
  report->orphan_files = o.n;
  if (!rc)
    count_dir(st->tmp, &report->temp_files, !opts->dry_run);
  if (!rc)
    rc = gc_runs(st, opts, report);
out:
  ag__unlock(c.lockfd);
  ag_free(c.file);
  if (rc)
    ag_store_gc_release(report);
  return rc;
}
