/* test_store.c — unit tests for src/store: opening and schema migration,
 * blob round trips against a reference SHA-256, compression and inline
 * placement, corruption detection, artifacts, versions and ancestry, task
 * keys against an independent reference, memoization, abandoned tasks,
 * queries and reports, refs and name resolution, the log, check, gc,
 * batches, and one handle shared by threads. Every kind of bad input gets a
 * clear error. */
#include "util.h"

#include "argus/core.h"
#include "check.h"
#include "store_test.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/wait.h>

static char *ws_path(const char *dir) {
  static char buf[600];
  snprintf(buf, sizeof buf, "%s/ws", dir);
  return buf;
}

static ag_store *fresh(char **dir) {
  *dir = scratch_dir("store");
  ag_store *st = NULL;
  int rc = ag_store_open(ws_path(*dir), AG_STORE_CREATE, &st);
  if (rc) {
    fprintf(stderr, "open: %s\n", ag_store_errmsg());
    exit(2);
  }
  return st;
}

static void done(ag_store *st, char *dir) {
  ag_store_close(st);
  rm_rf(dir);
  free(dir);
}

static size_t check_problems(ag_store *st, int print) {
  ag_check_report r;
  int rc = ag_store_check(st, &r);
  if (rc) {
    fprintf(stderr, "check failed: %s\n", ag_store_errmsg());
    return 1000;
  }
  size_t n = r.nproblems;
  for (size_t i = 0; print && i < n; i++)
    fprintf(stderr, "problem: %s\n", r.problems[i]);
  ag_store_check_release(&r);
  return n;
}

/* ------------------------------------------------------------ opening */
TEST(test_open_errors) {
  char *dir = scratch_dir("open");
  char p[700];
  ag_store *st = NULL;
  snprintf(p, sizeof p, "%s/none", dir);
  CHECK_EQ_INT(ag_store_open(p, 0, &st), AG_ENOTFOUND);
  CHECK(st == NULL);
  CHECK_CONTAINS(ag_store_errmsg(), "argus ws init");
  CHECK_EQ_INT(ag_store_open("", 0, &st), AG_EINVAL);
  /* a file where a workspace should be */
  snprintf(p, sizeof p, "%s/file", dir);
  CHECK_EQ_INT(ag_file_write_atomic(p, "x", 1), 0);
  CHECK_EQ_INT(ag_store_open(p, AG_STORE_CREATE, &st), AG_EINVAL);
  CHECK_CONTAINS(ag_store_errmsg(), "not a directory");
  /* a directory without a database */
  snprintf(p, sizeof p, "%s/emptydir", dir);
  CHECK_EQ_INT(ag_mkdir_p(p, 0755), 0);
  CHECK_EQ_INT(ag_store_open(p, 0, &st), AG_ENOTFOUND);
  CHECK_CONTAINS(ag_store_errmsg(), "not an argus workspace");
  /* garbage where the database should be */
  snprintf(p, sizeof p, "%s/garbage", dir);
  CHECK_EQ_INT(ag_mkdir_p(p, 0755), 0);
  char db[800];
  snprintf(db, sizeof db, "%s/workspace.db", p);
  char junk[4096];
  memset(junk, 'J', sizeof junk);
  CHECK_EQ_INT(ag_file_write_atomic(db, junk, sizeof junk), 0);
  CHECK_EQ_INT(ag_store_open(p, 0, &st), AG_ECORRUPT);
  CHECK_CONTAINS(ag_store_errmsg(), "not an argus workspace database");
  /* a SQLite database of something else (made with python's sqlite3) */
  snprintf(p, sizeof p, "%s/foreign", dir);
  CHECK_EQ_INT(ag_mkdir_p(p, 0755), 0);
  snprintf(db, sizeof db, "%s/workspace.db", p);
  char code[1000];
  snprintf(code, sizeof code,
           "import sqlite3; c = sqlite3.connect('%s'); c.execute('create table t(x)'); c.commit()",
           db);
  const char *argv[] = {"python3", "-c", code, NULL};
  ag_proc_opts o = {.argv = argv, .timeout_s = 30};
  ag_proc_result r;
  if (ag_proc_run(&o, &r) == 0 && r.exited && r.exit_code == 0) {
    CHECK_EQ_INT(ag_store_open(p, AG_STORE_CREATE, &st), AG_ECORRUPT);
    CHECK_CONTAINS(ag_store_errmsg(), "not an argus workspace");
  }
  /* opening creates, then reopening without CREATE works */
  snprintf(p, sizeof p, "%s/ok", dir);
  CHECK_EQ_INT(ag_store_open(p, AG_STORE_CREATE, &st), 0);
  CHECK_EQ_STR(ag_store_path(st), p);
  ag_store_close(st);
  st = NULL;
  CHECK_EQ_INT(ag_store_open(p, 0, &st), 0);
  ag_store_close(st);
  ag_store_close(NULL);
  /* library versions for `argus doctor` */
  CHECK(!strncmp(ag_store_sqlite_version(), "3.", 2));
  CHECK(!strncmp(ag_store_zstd_version(), "1.", 2));
  rm_rf(dir);
  free(dir);
}

TEST(test_newer_schema) {
  char *dir;
  ag_store *st = fresh(&dir);
  CHECK_EQ_INT(ag__store_exec(st, "INSERT INTO schema_version VALUES(7, 0, 'future')"), 0);
  ag_store_close(st);
  st = NULL;
  CHECK_EQ_INT(ag_store_open(ws_path(dir), 0, &st), AG_ESCHEMA);
  CHECK(st == NULL);
  char want[100];
  snprintf(want, sizeof want, "workspace schema 7 is newer than this argus (%d): upgrade argus",
           AG_STORE_SCHEMA_VERSION);
  CHECK_EQ_STR(ag_store_errmsg(), want);
  rm_rf(dir);
  free(dir);
}

TEST(test_migration) {
  int n = 0;
  const char *const *builtin = ag__store_migrations(&n);
  CHECK_EQ_INT(n, AG_STORE_SCHEMA_VERSION);
  char *dir = scratch_dir("mig");
  const char *p = ws_path(dir);
  ag_store *st = NULL;
  CHECK_EQ_INT(ag__store_open_with(p, AG_STORE_CREATE, builtin, n, &st), 0);
  char h[65];
  CHECK_EQ_INT(ag_store_put(st, "before the upgrade", 18, NULL, h), 0);
  ag_store_close(st);
  /* a failing migration leaves the workspace as it was */
  const char *bad[8], *good[8];
  for (int i = 0; i < n; i++)
    bad[i] = good[i] = builtin[i];
  bad[n] = "CREATE TABLE extra(x); SELECT * FROM no_such_table;";
  good[n] = "CREATE TABLE extra(x); ALTER TABLE artifacts ADD COLUMN note TEXT;";
  st = NULL;
  CHECK(ag__store_open_with(p, 0, bad, n + 1, &st) < 0);
  CHECK(st == NULL);
  CHECK_EQ_INT(ag__store_open_with(p, 0, good, n + 1, &st), 0);
  CHECK_EQ_INT(ag__store_exec(st, "SELECT note FROM artifacts; SELECT x FROM extra"), 0);
  void *data = NULL;
  size_t len = 0;
  CHECK_EQ_INT(ag_store_get(st, h, &data, &len), 0);
  CHECK(len == 18 && memcmp(data, "before the upgrade", 18) == 0);
  ag_free(data);
  CHECK_EQ_INT(check_problems(st, 1), 0);
  ag_store_close(st);
  /* this build (schema n) refuses the upgraded workspace */
  st = NULL;
  CHECK_EQ_INT(ag_store_open(p, 0, &st), AG_ESCHEMA);
  CHECK_CONTAINS(ag_store_errmsg(), "is newer than this argus");
  rm_rf(dir);
  free(dir);
}

/* ------------------------------------------------------------ blobs */
typedef struct blob_case {
  const char *name;
  size_t size;
  int random; /* 1: incompressible */
  int want_compressed;
  int want_inline;
} blob_case;

TEST(test_roundtrip) {
  char *dir;
  ag_store *st = fresh(&dir);
  static const blob_case cases[] = {
      {"empty", 0, 0, 0, 1},          {"one byte", 1, 1, 0, 1},
      {"63 bytes", 63, 0, 0, 1},      {"small text", 700, 0, 1, 1},
      {"small random", 700, 1, 0, 1}, {"16 KiB random", 16 * 1024, 1, 0, 1},
      {"16 KiB+1 random", 16 * 1024 + 1, 1, 0, 0},
      {"50 KiB trace", 50 * 1024, 0, 1, 1}, /* compresses below 16 KiB */
      {"3 MiB random", 3u << 20, 1, 0, 0},    {"3 MiB trace", 3u << 20, 0, 1, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const blob_case *c = &cases[i];
    unsigned char *buf = malloc(c->size + 1);
    if (c->random)
      fill_random(buf, c->size, i + 1);
    else
      fill_trace(buf, c->size, i + 1);
    char want[65], h[65];
    CHECK_EQ_INT(ag_sha256_hex(buf, c->size, want), 0);
    ag_put_opts o = {"evidence", 0};
    CHECK_EQ_INT(ag_store_put(st, buf, c->size, &o, h), 0);
    CHECK_EQ_STR(h, want);
    ag_artifact a;
    CHECK_EQ_INT(ag_store_artifact(st, h, &a), 0);
    CHECK_EQ_U64(a.size, c->size);
    CHECK_EQ_STR(a.kind, "evidence");
    if (a.compressed != c->want_compressed || a.inline_db != c->want_inline)
      fprintf(stderr, "case '%s': compressed %d inline %d stored %llu\n", c->name, a.compressed,
              a.inline_db, (unsigned long long)a.stored_size);
    CHECK_EQ_INT(a.compressed, c->want_compressed);
    CHECK_EQ_INT(a.inline_db, c->want_inline);
    if (a.compressed)
      CHECK(a.stored_size < a.size);
    else
      CHECK_EQ_U64(a.stored_size, a.size);
    void *data = NULL;
    size_t len = 0;
    CHECK_EQ_INT(ag_store_get(st, h, &data, &len), 0);
    CHECK_EQ_U64(len, c->size);
    CHECK(data && memcmp(data, buf, c->size) == 0);
    CHECK(data && ((char *)data)[len] == 0);
    /* the deliberately wrong case: one flipped byte gives another hash */
    if (c->size) {
      buf[c->size / 2] ^= 1;
      char other[65];
      ag_sha256_hex(buf, c->size, other);
      CHECK(strcmp(other, h) != 0);
      CHECK(memcmp(data, buf, c->size) != 0);
    }
    ag_free(data);
    free(buf);
  }
  rm_rf(dir);
  free(dir);
  ag_store_close(st);
}

TEST(test_put_file_and_dedup) {
  char *dir;
  ag_store *st = fresh(&dir);
  size_t n = (5u << 20) + 12345; /* several chunks */
  unsigned char *buf = malloc(n);
  fill_trace(buf, n, 99);
  char path[700], out[700], want[65], h[65], h2[65];
  snprintf(path, sizeof path, "%s/in.trace", dir);
  CHECK_EQ_INT(ag_file_write_atomic(path, buf, n), 0);
  ag_sha256_hex(buf, n, want);
  ag_put_opts o = {"evidence", 0};
  CHECK_EQ_INT(ag_store_put_file(st, path, &o, h), 0);
  CHECK_EQ_STR(h, want);
  /* same content again, from memory, with another kind: deduplicated, first kind kept */
  ag_store_stats s1, s2;
  CHECK_EQ_INT(ag_store_stats_get(st, &s1), 0);
  ag_put_opts o2 = {"log", 0};
  CHECK_EQ_INT(ag_store_put(st, buf, n, &o2, h2), 0);
  CHECK_EQ_STR(h2, h);
  CHECK_EQ_INT(ag_store_stats_get(st, &s2), 0);
  CHECK_EQ_U64(s2.artifacts, s1.artifacts);
  ag_artifact a;
  CHECK_EQ_INT(ag_store_artifact(st, h, &a), 0);
  CHECK_EQ_STR(a.kind, "evidence");
  /* get to a file */
  snprintf(out, sizeof out, "%s/out.trace", dir);
  CHECK_EQ_INT(ag_store_get_file(st, h, out), 0);
  char *back = NULL;
  size_t blen = 0;
  CHECK_EQ_INT(ag_file_read(out, &back, &blen), 0);
  CHECK(blen == n && memcmp(back, buf, n) == 0);
  ag_free(back);
  /* from a pipe (not a regular file: no size known in advance) */
  int fds[2];
  CHECK_EQ_INT(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    size_t off = 0;
    while (off < n) {
      ssize_t k = write(fds[1], buf + off, n - off < 4000 ? n - off : 4000);
      if (k <= 0)
        _exit(1);
      off += (size_t)k;
    }
    _exit(0);
  }
  close(fds[1]);
  CHECK_EQ_INT(ag_store_put_fd(st, fds[0], NULL, h2), 0);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK_EQ_STR(h2, want);
  /* a small pipe */
  CHECK_EQ_INT(pipe(fds), 0);
  CHECK_EQ_INT((int)write(fds[1], "tiny", 4), 4);
  close(fds[1]);
  CHECK_EQ_INT(ag_store_put_fd(st, fds[0], NULL, h2), 0);
  close(fds[0]);
  ag_sha256_hex("tiny", 4, want);
  CHECK_EQ_STR(h2, want);
  /* bad inputs */
  char missing[700];
  snprintf(missing, sizeof missing, "%s/missing", dir);
  CHECK_EQ_INT(ag_store_put_file(st, missing, NULL, h), AG_ENOTFOUND);
  CHECK_CONTAINS(ag_store_errmsg(), "missing");
  CHECK_EQ_INT(ag_store_put_file(st, dir, NULL, h), AG_EINVAL);
  CHECK_CONTAINS(ag_store_errmsg(), "is a directory");
  ag_put_opts bad = {"Bad Kind", 0};
  CHECK_EQ_INT(ag_store_put(st, "x", 1, &bad, h), AG_EINVAL);
  CHECK_CONTAINS(ag_store_errmsg(), "invalid artifact kind 'Bad Kind'");
  ag_put_opts badtask = {"log", 999};
  CHECK_EQ_INT(ag_store_put(st, "x", 1, &badtask, h), AG_ENOTFOUND);
  CHECK_CONTAINS(ag_store_errmsg(), "t999");
  void *d = NULL;
  size_t dl = 0;
  CHECK_EQ_INT(ag_store_get(st, "xyz", &d, &dl), AG_EINVAL);
  CHECK_EQ_INT(ag_store_get(st, "ABCDEF0000000000000000000000000000000000000000000000000000000000",
                            &d, &dl),
               AG_EINVAL);
  CHECK_EQ_INT(ag_store_get(st, "abcdef0000000000000000000000000000000000000000000000000000000000",
                            &d, &dl),
               AG_ENOTFOUND);
  CHECK_CONTAINS(ag_store_errmsg(), "not in the workspace");
  CHECK(d == NULL && dl == 0);
  CHECK_EQ_INT(check_problems(st, 1), 0);
  free(buf);
  done(st, dir);
}

/* Flips one byte of a file (blobs are read-only: make it writable first). */
static void flip_byte(const char *path, long off) {
  chmod(path, 0644);
  int fd = open(path, O_RDWR);
  unsigned char b = 0;
  if (fd < 0 || pread(fd, &b, 1, off) != 1)
    abort();
  b ^= 0x40;
  if (pwrite(fd, &b, 1, off) != 1)
    abort();
  close(fd);
}

static char *object_path(const char *dir, const char *h) {
  static char buf[800];
  snprintf(buf, sizeof buf, "%s/objects/%.2s/%s", ws_path(dir), h, h + 2);
  return buf;
}

TEST(test_corruption) {
  char *dir;
  ag_store *st = fresh(&dir);
  size_t n = 1u << 20;
  unsigned char *trace = malloc(n), *rnd = malloc(n);
  fill_trace(trace, n, 5);
  fill_random(rnd, n, 6);
  char hz[65], hr[65], hi[65], hm[65], out[700];
  CHECK_EQ_INT(ag_store_put(st, trace, n, NULL, hz), 0); /* zstd file */
  CHECK_EQ_INT(ag_store_put(st, rnd, n, NULL, hr), 0);   /* raw file */
  CHECK_EQ_INT(ag_store_put(st, "inline blob content", 19, NULL, hi), 0);
  CHECK_EQ_INT(ag_store_put(st, rnd, 300000, NULL, hm), 0); /* to delete */
  CHECK_EQ_INT(check_problems(st, 1), 0);
  flip_byte(object_path(dir, hz), 5000);
  flip_byte(object_path(dir, hr), 777);
  unlink(object_path(dir, hm));
  CHECK_EQ_INT(ag__store_exec(st, "UPDATE artifacts SET data = CAST('inline blob CONTENT' AS BLOB) "
                                  "WHERE length(data) = 19"),
               0);
  const char *hs[] = {hz, hr, hi, hm};
  for (int i = 0; i < 4; i++) {
    void *d = (void *)1;
    size_t dl = 1;
    CHECK_EQ_INT(ag_store_get(st, hs[i], &d, &dl), AG_ECORRUPT);
    CHECK(d == NULL && dl == 0);
    CHECK_CONTAINS(ag_store_errmsg(), hs[i]);
    CHECK_CONTAINS(ag_store_errmsg(), "argus ws check");
    snprintf(out, sizeof out, "%s/out%d", dir, i);
    CHECK_EQ_INT(ag_store_get_file(st, hs[i], out), AG_ECORRUPT);
    CHECK(access(out, F_OK) != 0); /* nothing reaches the destination */
  }
  CHECK_CONTAINS(ag_store_errmsg(), "missing");
  ag_check_report r;
  CHECK_EQ_INT(ag_store_check(st, &r), 0);
  CHECK_EQ_INT(r.nproblems, 4);
  ag_store_check_release(&r);
  /* putting the content again restores a missing blob file */
  char again[65];
  CHECK_EQ_INT(ag_store_put(st, rnd, 300000, NULL, again), 0);
  CHECK_EQ_STR(again, hm);
  void *dd = NULL;
  size_t ddl = 0;
  CHECK_EQ_INT(ag_store_get(st, hm, &dd, &ddl), 0);
  CHECK(ddl == 300000 && memcmp(dd, rnd, ddl) == 0);
  ag_free(dd);
  CHECK_EQ_INT(ag_store_check(st, &r), 0);
  CHECK_EQ_INT(r.nproblems, 3); /* the other three remain */
  ag_str all = AG_STR_INIT;
  for (size_t i = 0; i < r.nproblems; i++)
    ag_str_printf(&all, "%s\n", r.problems[i]);
  for (int i = 0; i < 3; i++)
    CHECK_CONTAINS(ag_str_cstr(&all), hs[i]);
  ag_str_release(&all);
  ag_store_check_release(&r);
  /* a truncated file is caught too */
  ag_store_close(st);
  st = NULL;
  CHECK_EQ_INT(ag_store_open(ws_path(dir), 0, &st), 0);
  char hz2[65];
  fill_trace(trace, n, 55);
  CHECK_EQ_INT(ag_store_put(st, trace, n, NULL, hz2), 0);
  CHECK_EQ_INT(truncate(object_path(dir, hz2), 100), 0);
  void *d = NULL;
  size_t dl = 0;
  CHECK_EQ_INT(ag_store_get(st, hz2, &d, &dl), AG_ECORRUPT);
  CHECK_CONTAINS(ag_store_errmsg(), "bytes, expected");
  free(trace);
  free(rnd);
  done(st, dir);
}

/* A put of content whose stored blob is damaged repairs it (issue 16): the
 * file is replaced atomically, an inline copy is rewritten, and check is
 * clean again. */
TEST(test_reput_repairs) {
  char *dir;
  ag_store *st = fresh(&dir);
  size_t n = 1u << 20;
  unsigned char *trace = malloc(n), *rnd = malloc(n);
  fill_trace(trace, n, 15);
  fill_random(rnd, n, 16);
  char hz[65], hr[65], hi[65], ht[65], again[65];
  CHECK_EQ_INT(ag_store_put(st, trace, n, NULL, hz), 0); /* zstd file */
  CHECK_EQ_INT(ag_store_put(st, rnd, n, NULL, hr), 0);   /* raw file */
  CHECK_EQ_INT(ag_store_put(st, "inline blob content", 19, NULL, hi), 0);
  CHECK_EQ_INT(ag_store_put(st, rnd, 200000, NULL, ht), 0); /* to truncate */
  flip_byte(object_path(dir, hz), 5000);
  flip_byte(object_path(dir, hr), 777);
  CHECK_EQ_INT(truncate(object_path(dir, ht), 10), 0);
  CHECK_EQ_INT(ag__store_exec(st, "UPDATE artifacts SET data = CAST('inline blob CONTENT' AS BLOB) "
                                  "WHERE length(data) = 19"),
               0);
  CHECK_EQ_INT(check_problems(st, 0), 4);
  const struct {
    const void *p;
    size_t n;
    const char *h;
  } c[] = {{trace, n, hz}, {rnd, n, hr}, {"inline blob content", 19, hi}, {rnd, 200000, ht}};
  for (int i = 0; i < 4; i++) {
    void *d = NULL;
    size_t dl = 0;
    CHECK_EQ_INT(ag_store_get(st, c[i].h, &d, &dl), AG_ECORRUPT);
    CHECK_EQ_INT(ag_store_put(st, c[i].p, c[i].n, NULL, again), 0);
    CHECK_EQ_STR(again, c[i].h);
    CHECK_EQ_INT(ag_store_get(st, c[i].h, &d, &dl), 0);
    CHECK(dl == c[i].n && memcmp(d, c[i].p, dl) == 0);
    ag_free(d);
    CHECK_EQ_INT(check_problems(st, 1), (size_t)(3 - i));
  }
  /* a repaired file is still read-only and nothing is left in tmp/ */
  struct stat sb;
  CHECK_EQ_INT(stat(object_path(dir, hr), &sb), 0);
  CHECK_EQ_INT(sb.st_mode & 0777, 0444);
  char tmp[700];
  snprintf(tmp, sizeof tmp, "%s/tmp", ws_path(dir));
  DIR *td = opendir(tmp);
  int left = 0;
  for (struct dirent *de; td && (de = readdir(td));)
    left += de->d_name[0] != '.';
  if (td)
    closedir(td);
  CHECK_EQ_INT(left, 0);
  free(trace);
  free(rnd);
  done(st, dir);
}

/* The quick health check (issue 16): damage found by a read or a check is
 * remembered in the workspace until a check finds it sound; a damaged
 * database page says what to do next. */
TEST(test_health) {
  char *dir;
  ag_store *st = fresh(&dir);
  CHECK_EQ_INT(ag_store_health(st), 0);
  size_t n = 300000;
  unsigned char *rnd = malloc(n);
  fill_random(rnd, n, 31);
  char h[65], again[65];
  CHECK_EQ_INT(ag_store_put(st, rnd, n, NULL, h), 0);
  flip_byte(object_path(dir, h), 4321);
  void *d = NULL;
  size_t dl = 0;
  CHECK_EQ_INT(ag_store_get(st, h, &d, &dl), AG_ECORRUPT);
  CHECK_EQ_INT(ag_store_health(st), AG_ECORRUPT);
  CHECK_CONTAINS(ag_store_errmsg(), "is damaged");
  CHECK_CONTAINS(ag_store_errmsg(), h);
  CHECK_CONTAINS(ag_store_errmsg(), "argus ws check");
  ag_store_close(st); /* remembered across processes */
  st = NULL;
  CHECK_EQ_INT(ag_store_open(ws_path(dir), 0, &st), 0);
  CHECK_EQ_INT(ag_store_health(st), AG_ECORRUPT);
  CHECK_EQ_INT(check_problems(st, 0), 1);
  CHECK_EQ_INT(ag_store_health(st), AG_ECORRUPT);
  CHECK_CONTAINS(ag_store_errmsg(), "1 problem(s) found by 'argus ws check'");
  CHECK_EQ_INT(ag_store_put(st, rnd, n, NULL, again), 0); /* repairs */
  CHECK_EQ_INT(ag_store_health(st), AG_ECORRUPT); /* until a check says so */
  CHECK_EQ_INT(check_problems(st, 1), 0);
  CHECK_EQ_INT(ag_store_health(st), 0);
  /* a damaged database page */
  for (int i = 0; i < 60; i++) {
    fill_random(rnd, 12000, 100 + (uint64_t)i);
    CHECK_EQ_INT(ag_store_put(st, rnd, 12000, NULL, again), 0);
  }
  ag_store_close(st);
  st = NULL;
  char db[700];
  snprintf(db, sizeof db, "%s/workspace.db", ws_path(dir));
  struct stat sb;
  CHECK_EQ_INT(stat(db, &sb), 0);
  int fd = open(db, O_WRONLY);
  CHECK(fd >= 0);
  memset(rnd, 0xa5, 4096);
  for (off_t off = 4 * 4096; off + 4096 <= sb.st_size; off += 3 * 4096)
    CHECK(pwrite(fd, rnd, 4096, off) == 4096);
  close(fd);
  int rc = ag_store_open(ws_path(dir), 0, &st);
  if (rc == 0) {
    ag_artifact *a = NULL;
    size_t na = 0;
    rc = ag_store_artifacts(st, NULL, &a, &na);
    ag_free(a);
  }
  CHECK_EQ_INT(rc, AG_ECORRUPT);
  CHECK_CONTAINS(ag_store_errmsg(), "database is damaged");
  CHECK_CONTAINS(ag_store_errmsg(), "Recovery");
  if (st) {
    CHECK_EQ_INT(ag_store_health(st), AG_ECORRUPT);
    ag_store_close(st);
  }
  free(rnd);
  rm_rf(dir);
  free(dir);
}

/* Never initialize over a directory that holds a workspace's data (issue 16):
 * a zero-length or missing workspace.db beside blob files is refused, with
 * what is there and how to recover, whether or not the opener may create; a
 * directory of someone else's files is refused; what a killed creation leaves
 * is finished. */
TEST(test_no_init_over_data) {
  char *dir;
  ag_store *st = fresh(&dir);
  char ws[600], db[700];
  snprintf(ws, sizeof ws, "%s", ws_path(dir));
  snprintf(db, sizeof db, "%s/workspace.db", ws);
  size_t n = 300000;
  unsigned char *rnd = malloc(n);
  fill_random(rnd, n, 21);
  char h[65];
  CHECK_EQ_INT(ag_store_put(st, rnd, n, NULL, h), 0);
  ag_obj t = {AG_OBJ_ARTIFACT, 0, ""};
  memcpy(t.hash, h, 65);
  CHECK_EQ_INT(ag_store_ref_set(st, "kept", &t), 0);
  ag_store_close(st);
  st = NULL;
  CHECK_EQ_INT(truncate(db, 0), 0);
  for (int create = 1; create >= 0; create--) {
    CHECK_EQ_INT(ag_store_open(ws, create ? AG_STORE_CREATE : 0, &st), AG_ECORRUPT);
    CHECK(st == NULL);
    CHECK_CONTAINS(ag_store_errmsg(), "will not initialize over it");
    CHECK_CONTAINS(ag_store_errmsg(), "is empty (0 bytes)");
    CHECK_CONTAINS(ag_store_errmsg(), "1 file(s) in objects/");
    CHECK_CONTAINS(ag_store_errmsg(), "restore workspace.db from a backup");
  }
  struct stat sb;
  CHECK_EQ_INT(stat(db, &sb), 0);
  CHECK_EQ_INT(sb.st_size, 0); /* nothing was written into it */
  CHECK_EQ_INT(access(object_path(dir, h), F_OK), 0);
  /* no database at all */
  CHECK_EQ_INT(unlink(db), 0);
  CHECK_EQ_INT(ag_store_open(ws, AG_STORE_CREATE, &st), AG_ECORRUPT);
  CHECK_CONTAINS(ag_store_errmsg(), "is missing");
  CHECK(access(db, F_OK) != 0);
  CHECK_EQ_INT(ag_store_open(ws, 0, &st), AG_ECORRUPT);
  /* a database that holds no schema, beside the lock file only */
  rm_rf(ws);
  CHECK_EQ_INT(ag_mkdir_p(ws, 0755), 0);
  char lock[700];
  snprintf(lock, sizeof lock, "%s/lock", ws);
  CHECK_EQ_INT(ag_file_write_atomic(lock, "", 0), 0);
  CHECK_EQ_INT(ag_file_write_atomic(db, "", 0), 0);
  CHECK_EQ_INT(ag_store_open(ws, AG_STORE_CREATE, &st), AG_ECORRUPT);
  /* someone else's files */
  rm_rf(ws);
  CHECK_EQ_INT(ag_mkdir_p(ws, 0755), 0);
  char other[700];
  snprintf(other, sizeof other, "%s/notes.txt", ws);
  CHECK_EQ_INT(ag_file_write_atomic(other, "mine", 4), 0);
  CHECK_EQ_INT(ag_store_open(ws, AG_STORE_CREATE, &st), AG_EEXISTS);
  CHECK_CONTAINS(ag_store_errmsg(), "'notes.txt'");
  CHECK_CONTAINS(ag_store_errmsg(), "new or empty directory");
  CHECK_EQ_INT(ag_store_open(ws, 0, &st), AG_ENOTFOUND);
  /* what a killed creation leaves (an empty database, empty objects/ and
   * tmp/), and an empty directory, are created */
  rm_rf(ws);
  CHECK_EQ_INT(ag_mkdir_p(ws, 0755), 0);
  CHECK_EQ_INT(ag_store_open(ws, AG_STORE_CREATE, &st), 0);
  ag_store_close(st);
  st = NULL;
  rm_rf(ws);
  snprintf(other, sizeof other, "%s/objects", ws);
  CHECK_EQ_INT(ag_mkdir_p(other, 0755), 0);
  snprintf(other, sizeof other, "%s/tmp", ws);
  CHECK_EQ_INT(ag_mkdir_p(other, 0755), 0);
  CHECK_EQ_INT(ag_file_write_atomic(db, "", 0), 0);
  CHECK_EQ_INT(ag_store_open(ws, AG_STORE_CREATE, &st), 0);
  CHECK_EQ_INT(check_problems(st, 1), 0);
  ag_store_close(st);
  free(rnd);
  rm_rf(dir);
  free(dir);
}

/* ------------------------------------------------------------ versions */
TEST(test_versions) {
  char *dir;
  ag_store *st = fresh(&dir);
  char a[65], b[65], c[65];
  ag_put_opts ptx = {"ptx", 0};
  CHECK_EQ_INT(ag_store_put(st, ".version 8.0\n// a", 17, &ptx, a), 0);
  CHECK_EQ_INT(ag_store_put(st, ".version 8.0\n// b", 17, &ptx, b), 0);
  CHECK_EQ_INT(ag_store_put(st, ".version 8.0\n// c", 17, &ptx, c), 0);
  json_t *origin = json_pack("{s:s,s:[s]}", "cuda", "gemm.cu", "flags", "-O3");
  ag_version_spec root = {0, a, NULL, origin, 0};
  int64_t v1 = 0, v2 = 0, v3 = 0, v1b = 0, v4 = 0;
  CHECK_EQ_INT(ag_store_version_create(st, &root, &v1), 0);
  CHECK_EQ_INT(ag_store_version_create(st, &root, &v1b), 0);
  CHECK_EQ_INT(v1b, v1); /* same identity, same version */
  ag_version_spec d2 = {v1, b, "trace", NULL, 0};
  CHECK_EQ_INT(ag_store_version_create(st, &d2, &v2), 0);
  ag_version_spec d3 = {v2, c, "probe(op=3,occ=1)", NULL, 0};
  CHECK_EQ_INT(ag_store_version_create(st, &d3, &v3), 0);
  CHECK(v1 < v2 && v2 < v3);
  int64_t *ids = NULL;
  size_t n = 0;
  CHECK_EQ_INT(ag_store_version_ancestry(st, v3, &ids, &n), 0);
  CHECK_EQ_INT(n, 3);
  if (n == 3) {
    CHECK_EQ_INT(ids[0], v3);
    CHECK_EQ_INT(ids[1], v2);
    CHECK_EQ_INT(ids[2], v1);
  }
  ag_free(ids);
  ag_version v;
  CHECK_EQ_INT(ag_store_version_get(st, v3, &v), 0);
  CHECK_EQ_INT(v.parent, v2);
  CHECK_EQ_STR(v.transform, "probe(op=3,occ=1)");
  CHECK_EQ_STR(v.module, c);
  CHECK_EQ_STR(v.origin, "{}");
  ag_store_version_release(&v);
  CHECK_EQ_INT(ag_store_version_get(st, v1, &v), 0);
  CHECK_EQ_STR(v.origin, "{\"cuda\":\"gemm.cu\",\"flags\":[\"-O3\"]}");
  CHECK(v.transform == NULL);
  ag_store_version_release(&v);
  /* an optimizer forks from an earlier, named version */
  ag_obj t = {AG_OBJ_VERSION, v1, ""};
  CHECK_EQ_INT(ag_store_ref_set(st, "gemm@baseline", &t), 0);
  ag_obj got;
  CHECK_EQ_INT(ag_store_resolve(st, "gemm@baseline", &got), 0);
  CHECK_EQ_INT(got.kind, AG_OBJ_VERSION);
  ag_version_spec fork = {got.id, c, "unroll(4)", NULL, 0};
  CHECK_EQ_INT(ag_store_version_create(st, &fork, &v4), 0);
  CHECK_EQ_INT(ag_store_version_ancestry(st, v4, &ids, &n), 0);
  CHECK_EQ_INT(n, 2);
  if (n == 2)
    CHECK_EQ_INT(ids[1], v1);
  ag_free(ids);
  ag_version *list = NULL;
  CHECK_EQ_INT(ag_store_versions(st, NULL, &list, &n), 0);
  CHECK_EQ_INT(n, 4);
  if (n == 4)
    CHECK_EQ_INT(list[0].id, v4); /* newest first */
  ag_store_versions_free(list, n);
  /* bad input */
  ag_version_spec bad1 = {v1, b, NULL, NULL, 0};
  CHECK_EQ_INT(ag_store_version_create(st, &bad1, &v4), AG_EINVAL);
  CHECK_CONTAINS(ag_store_errmsg(), "must name the transform");
  ag_version_spec bad2 = {0, b, "trace", NULL, 0};
  CHECK_EQ_INT(ag_store_version_create(st, &bad2, &v4), AG_EINVAL);
  ag_version_spec bad3 = {99, b, "x", NULL, 0};
  CHECK_EQ_INT(ag_store_version_create(st, &bad3, &v4), AG_ENOTFOUND);
  CHECK_CONTAINS(ag_store_errmsg(), "v99");
  ag_version_spec bad4 = {0, "abcd", NULL, NULL, 0};
  CHECK_EQ_INT(ag_store_version_create(st, &bad4, &v4), AG_EINVAL);
  ag_version_spec bad5 = {0, "abcdef0000000000000000000000000000000000000000000000000000000000",
                          NULL, NULL, 0};
  CHECK_EQ_INT(ag_store_version_create(st, &bad5, &v4), AG_ENOTFOUND);
  CHECK_EQ_INT(ag_store_version_get(st, 77, &v), AG_ENOTFOUND);
  CHECK_EQ_INT(ag_store_version_ancestry(st, 77, &ids, &n), AG_ENOTFOUND);
  json_decref(origin);
  CHECK_EQ_INT(check_problems(st, 1), 0);
  done(st, dir);
}

/* ------------------------------------------------------------ tasks */
static int cmp_cstr(const void *x, const void *y) {
  return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* The documented key preimage, built independently of the store. */
static void ref_key(const char *type, const char *canon, const char **in, size_t n,
                    const char *ver, int sort, char out[65]) {
  const char *v[16];
  for (size_t i = 0; i < n; i++)
    v[i] = in[i];
  if (sort)
    qsort(v, n, sizeof v[0], cmp_cstr);
  ag_str s = AG_STR_INIT;
  ag_str_append(&s, "argus-task/1", 13);
  ag_str_append(&s, type, strlen(type) + 1);
  ag_str_append(&s, canon, strlen(canon) + 1);
  char cnt[16];
  snprintf(cnt, sizeof cnt, "%zu", n);
  ag_str_append(&s, cnt, strlen(cnt) + 1);
  for (size_t i = 0; i < n; i++)
    ag_str_append(&s, v[i], strlen(v[i]) + 1);
  ag_str_append(&s, ver, strlen(ver) + 1);
  ag_sha256_hex(s.p, s.len, out);
  ag_str_release(&s);
}

TEST(test_task_keys) {
  char h1[65], h2[65];
  ag_sha256_hex("one", 3, h1);
  ag_sha256_hex("two", 3, h2);
  const char *in12[] = {h1, h2}, *in21[] = {h2, h1};
  json_t *c1 = json_loads("{\"b\": 1, \"a\": [1, 2]}", 0, NULL);
  json_t *c1b = json_loads("{\"a\":[1,2],\"b\":1}", 0, NULL);
  json_t *c2 = json_loads("{\"a\":[2,1],\"b\":1}", 0, NULL);
  ag_store_task_spec s = {AG_TASK_COLLECT, c1, in21, 2, NULL, 0, NULL};
  char k[65], want[65], wrong[65];
  CHECK_EQ_INT(ag_store_task_key(&s, k), 0);
  ref_key("collect", "{\"a\":[1,2],\"b\":1}", in21, 2, AG_VERSION_STRING, 1, want);
  CHECK_EQ_STR(k, want);
  /* deliberately wrong references: unsorted inputs, other type, other version */
  const char **desc = strcmp(h1, h2) > 0 ? in12 : in21;
  ref_key("collect", "{\"a\":[1,2],\"b\":1}", desc, 2, AG_VERSION_STRING, 0, wrong);
  CHECK(strcmp(k, wrong) != 0);
  ref_key("transform", "{\"a\":[1,2],\"b\":1}", in21, 2, AG_VERSION_STRING, 1, wrong);
  CHECK(strcmp(k, wrong) != 0);
  char k2[65];
  ag_store_task_spec s2 = {AG_TASK_COLLECT, c1b, in12, 2, "w", 0, NULL}; /* key order, input order */
  CHECK_EQ_INT(ag_store_task_key(&s2, k2), 0);
  CHECK_EQ_STR(k2, k);
  s2.config = c2;
  CHECK_EQ_INT(ag_store_task_key(&s2, k2), 0);
  CHECK(strcmp(k2, k) != 0);
  s2.config = c1;
  s2.argus_version = "9.9.9";
  CHECK_EQ_INT(ag_store_task_key(&s2, k2), 0);
  CHECK(strcmp(k2, k) != 0);
  ref_key("collect", "{\"a\":[1,2],\"b\":1}", in12, 2, "9.9.9", 1, want);
  CHECK_EQ_STR(k2, want);
  s2.argus_version = NULL;
  s2.type = AG_TASK_SYNTHESIZE;
  CHECK_EQ_INT(ag_store_task_key(&s2, k2), 0);
  CHECK(strcmp(k2, k) != 0);
  s2.ninputs = 1;
  CHECK_EQ_INT(ag_store_task_key(&s2, k2), 0);
  CHECK(strcmp(k2, k) != 0);
  /* NULL config is {} */
  ag_store_task_spec s3 = {AG_TASK_CONTROL, NULL, NULL, 0, NULL, 0, NULL};
  CHECK_EQ_INT(ag_store_task_key(&s3, k2), 0);
  ref_key("control", "{}", NULL, 0, AG_VERSION_STRING, 1, want);
  CHECK_EQ_STR(k2, want);
  /* bad specs */
  ag_store_task_spec b1 = {(ag_task_type)9, NULL, NULL, 0, NULL, 0, NULL};
  CHECK_EQ_INT(ag_store_task_key(&b1, k2), AG_EINVAL);
  json_t *arr = json_array();
  ag_store_task_spec b2 = {AG_TASK_CONTROL, arr, NULL, 0, NULL, 0, NULL};
  CHECK_EQ_INT(ag_store_task_key(&b2, k2), AG_EINVAL);
  CHECK_CONTAINS(ag_store_errmsg(), "JSON object");
  const char *badin[] = {"not-a-hash"};
  ag_store_task_spec b3 = {AG_TASK_CONTROL, NULL, badin, 1, NULL, 0, NULL};
  CHECK_EQ_INT(ag_store_task_key(&b3, k2), AG_EINVAL);
  CHECK_CONTAINS(ag_store_errmsg(), "not-a-hash");
  json_decref(arr);
  json_decref(c1);
  json_decref(c1b);
  json_decref(c2);
}

static int runs; /* how many times the "work" of a task actually ran */

/* What a planner does: begin; run only if claimed; finish. */
static int run_task(ag_store *st, const ag_store_task_spec *spec, const char *payload,
                    ag_store_claim *claim) {
  int rc = ag_store_task_begin(st, spec, 0, claim);
  if (rc || claim->status == AG_STORE_TASK_OK)
    return rc;
  runs++;
  char h[65];
  ag_put_opts o = {"evidence", claim->task_id};
  if ((rc = ag_store_put(st, payload, strlen(payload), &o, h)))
    return rc;
  ag_store_output out;
  snprintf(out.name, sizeof out.name, "evidence");
  memcpy(out.hash, h, 65);
  ag_store_result r = {AG_STORE_TASK_OK, &out, 1, NULL};
  return ag_store_task_finish(st, claim->task_id, &r);
}

TEST(test_memoization) {
  char *dir;
  ag_store *st = fresh(&dir);
  char in[65];
  CHECK_EQ_INT(ag_store_put(st, "cubin bytes", 11, NULL, in), 0);
  const char *inputs[] = {in};
  json_t *cfg = json_pack("{s:s,s:i}", "backend", "cupti", "iters", 8);
  ag_store_task_spec spec = {AG_TASK_COLLECT, cfg, inputs, 1, "gpu0", 0, NULL};
  ag_store_claim c1, c2;
  runs = 0;
  CHECK_EQ_INT(run_task(st, &spec, "evidence #1", &c1), 0);
  CHECK_EQ_INT(runs, 1);
  CHECK_EQ_INT(c1.status, AG_STORE_TASK_RUNNING);
  ag_store_stats s1, s2;
  CHECK_EQ_INT(ag_store_stats_get(st, &s1), 0);
  CHECK_EQ_INT(run_task(st, &spec, "evidence #2", &c2), 0);
  CHECK_EQ_INT(runs, 1); /* not run again */
  CHECK_EQ_INT(c2.status, AG_STORE_TASK_OK);
  CHECK_EQ_INT(c2.task_id, c1.task_id);
  CHECK_EQ_STR(c2.key, c1.key);
  CHECK_EQ_INT(c2.noutputs, 1);
  char want[65];
  ag_sha256_hex("evidence #1", 11, want);
  if (c2.noutputs == 1) {
    CHECK_EQ_STR(c2.outputs[0].name, "evidence");
    CHECK_EQ_STR(c2.outputs[0].hash, want);
  }
  CHECK_EQ_INT(ag_store_stats_get(st, &s2), 0);
  CHECK_EQ_U64(s2.tasks, s1.tasks);
  CHECK_EQ_U64(s2.artifacts, s1.artifacts);
  ag_free(c2.outputs);
  /* the produced artifact knows its task */
  ag_artifact a;
  CHECK_EQ_INT(ag_store_artifact(st, want, &a), 0);
  CHECK_EQ_INT(a.task_id, c1.task_id);
  /* a reopened workspace (another process, later) still answers from memory */
  ag_store_close(st);
  st = NULL;
  CHECK_EQ_INT(ag_store_open(ws_path(dir), 0, &st), 0);
  CHECK_EQ_INT(run_task(st, &spec, "evidence #3", &c2), 0);
  CHECK_EQ_INT(runs, 1);
  CHECK_EQ_INT(c2.status, AG_STORE_TASK_OK);
  ag_free(c2.outputs);
  /* another Argus version does not reuse it */
  spec.argus_version = "0.0.1-other";
  CHECK_EQ_INT(run_task(st, &spec, "evidence #4", &c2), 0);
  CHECK_EQ_INT(runs, 2);
  CHECK(c2.task_id != c1.task_id);
  spec.argus_version = NULL;
  /* the full record */
  ag_store_task t;
  CHECK_EQ_INT(ag_store_task_get(st, c1.task_id, &t), 0);
  CHECK_EQ_INT(t.type, AG_TASK_COLLECT);
  CHECK_EQ_INT(t.status, AG_STORE_TASK_OK);
  CHECK_EQ_STR(t.config, "{\"backend\":\"cupti\",\"iters\":8}");
  CHECK_EQ_STR(t.worker, "gpu0");
  CHECK_EQ_STR(t.argus_version, AG_VERSION_STRING);
  CHECK_EQ_INT(t.ninputs, 1);
  if (t.ninputs == 1)
    CHECK_EQ_STR(t.inputs[0], in);
  CHECK_EQ_INT(t.noutputs, 1);
  CHECK(t.start_ns > 0 && t.end_ns >= t.start_ns && t.created_ns > 0);
  CHECK(t.error == NULL);
  ag_store_task_release(&t);
  json_decref(cfg);
  CHECK_EQ_INT(check_problems(st, 1), 0);
  done(st, dir);
}

TEST(test_task_lifecycle) {
  char *dir;
  ag_store *st = fresh(&dir);
  json_t *cfg = json_pack("{s:s}", "pass", "discover");
  ag_store_task_spec spec = {AG_TASK_CONTROL, cfg, NULL, 0, NULL, 0, NULL};
  ag_store_claim c, c2;
  /* running in this (live) process: a second begin is told to wait */
  CHECK_EQ_INT(ag_store_task_begin(st, &spec, 0, &c), 0);
  CHECK_EQ_INT(c.status, AG_STORE_TASK_RUNNING);
  CHECK_EQ_INT(ag_store_task_begin(st, &spec, 0, &c2), AG_EBUSY);
  CHECK_EQ_INT(c2.task_id, c.task_id);
  CHECK_CONTAINS(ag_store_errmsg(), "already running");
  /* failure, then a rerun of the same key */
  ag_store_result bad = {AG_STORE_TASK_FAILED, NULL, 0, NULL};
  CHECK_EQ_INT(ag_store_task_finish(st, c.task_id, &bad), AG_EINVAL);
  CHECK_CONTAINS(ag_store_errmsg(), "without an error text");
  ag_store_result failed = {AG_STORE_TASK_FAILED, NULL, 0, "ptxas: out of registers"};
  CHECK_EQ_INT(ag_store_task_finish(st, c.task_id, &failed), 0);
  CHECK_EQ_INT(ag_store_task_finish(st, c.task_id, &failed), AG_EINVAL);
  CHECK_CONTAINS(ag_store_errmsg(), "not running");
  CHECK_EQ_INT(ag_store_task_begin(st, &spec, 0, &c2), 0);
  CHECK_EQ_INT(c2.status, AG_STORE_TASK_RUNNING);
  CHECK(c2.task_id != c.task_id);
  ag_store_task t;
  CHECK_EQ_INT(ag_store_task_get(st, c.task_id, &t), 0);
  CHECK_EQ_INT(t.status, AG_STORE_TASK_FAILED);
  CHECK_EQ_STR(t.error, "ptxas: out of registers");
  ag_store_task_release(&t);
  /* bad results */
  ag_store_output outs[2];
  memset(outs, 0, sizeof outs);
  snprintf(outs[0].name, sizeof outs[0].name, "map");
  snprintf(outs[0].hash, sizeof outs[0].hash, "%064d", 0);
  ag_store_result r1 = {AG_STORE_TASK_OK, outs, 1, NULL};
  CHECK_EQ_INT(ag_store_task_finish(st, c2.task_id, &r1), AG_ENOTFOUND);
  CHECK_CONTAINS(ag_store_errmsg(), "output 'map'");
  char h[65];
  CHECK_EQ_INT(ag_store_put(st, "map", 3, NULL, h), 0);
  memcpy(outs[0].hash, h, 65);
  outs[1] = outs[0];
  ag_store_result r2 = {AG_STORE_TASK_OK, outs, 2, NULL};
  CHECK_EQ_INT(ag_store_task_finish(st, c2.task_id, &r2), AG_EINVAL);
  CHECK_CONTAINS(ag_store_errmsg(), "appears twice");
  outs[1].name[0] = 0;
  CHECK_EQ_INT(ag_store_task_finish(st, c2.task_id, &r2), AG_EINVAL);
  ag_store_result r3 = {(ag_store_task_status)7, NULL, 0, NULL};
  CHECK_EQ_INT(ag_store_task_finish(st, c2.task_id, &r3), AG_EINVAL);
  CHECK_EQ_INT(ag_store_task_finish(st, 4242, &r1), AG_ENOTFOUND);
  CHECK_EQ_INT(ag_store_task_finish(st, c2.task_id, &r1), 0);
  /* a missing input */
  const char *ghost[] = {"abcdef0000000000000000000000000000000000000000000000000000000000"};
  ag_store_task_spec gs = {AG_TASK_TRANSFORM, NULL, ghost, 1, NULL, 0, NULL};
  CHECK_EQ_INT(ag_store_task_begin(st, &gs, 0, &c), AG_ENOTFOUND);
  CHECK_CONTAINS(ag_store_errmsg(), "put it first");
  /* planning: pending, then claimed */
  json_t *cfg2 = json_pack("{s:i}", "n", 2);
  ag_store_task_spec ps = {AG_TASK_SYNTHESIZE, cfg2, NULL, 0, NULL, 0, NULL};
  CHECK_EQ_INT(ag_store_task_begin(st, &ps, AG_STORE_PLAN, &c), 0);
  CHECK_EQ_INT(c.status, AG_STORE_TASK_PENDING);
  CHECK_EQ_INT(ag_store_task_begin(st, &ps, AG_STORE_PLAN, &c2), 0);
  CHECK_EQ_INT(c2.task_id, c.task_id);
  CHECK_EQ_INT(ag_store_task_begin(st, &ps, 0, &c2), 0);
  CHECK_EQ_INT(c2.status, AG_STORE_TASK_RUNNING);
  CHECK_EQ_INT(c2.task_id, c.task_id);
  ag_store_task *list = NULL;
  size_t n = 0;
  ag_list_opts lo = {2, 0, NULL};
  CHECK_EQ_INT(ag_store_tasks(st, &lo, &list, &n), 0);
  CHECK_EQ_INT(n, 2);
  if (n == 2)
    CHECK_EQ_INT(list[0].id, c2.task_id);
  ag_store_tasks_free(list, n);
  json_decref(cfg);
  json_decref(cfg2);
  CHECK_EQ_INT(check_problems(st, 1), 0);
  done(st, dir);
}

TEST(test_abandoned_task) {
  char *dir;
  ag_store *st = fresh(&dir);
  ag_store_task_spec spec = {AG_TASK_TRANSFORM, NULL, NULL, 0, "child", 0, NULL};
  pid_t pid = fork();
  if (pid == 0) { /* a worker that dies mid-task */
    ag_store *cst = NULL;
    ag_store_claim c;
    if (ag_store_open(ws_path(dir), 0, &cst) || ag_store_task_begin(cst, &spec, 0, &c))
      _exit(3);
    _exit(0); /* no finish, no close */
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ag_check_report r;
  CHECK_EQ_INT(ag_store_check(st, &r), 0);
  CHECK_EQ_INT(r.nproblems, 0);
  CHECK_EQ_INT(r.nnotes, 1);
  if (r.nnotes)
    CHECK_CONTAINS(r.notes[0], "abandoned");
  ag_store_check_release(&r);
  ag_store_claim c;
  CHECK_EQ_INT(ag_store_task_begin(st, &spec, 0, &c), 0);
  CHECK_EQ_INT(c.status, AG_STORE_TASK_RUNNING);
  CHECK_EQ_INT(c.task_id, 2);
  ag_store_task t;
  CHECK_EQ_INT(ag_store_task_get(st, 1, &t), 0);
  CHECK_EQ_INT(t.status, AG_STORE_TASK_FAILED);
  CHECK_CONTAINS(t.error, "abandoned");
  ag_store_task_release(&t);
  done(st, dir);
}

/* ------------------------------------------------------ queries, refs */
TEST(test_queries_refs_log) {
  char *dir;
  ag_store *st = fresh(&dir);
  char m[65], rep[65];
  CHECK_EQ_INT(ag_store_put(st, "module", 6, NULL, m), 0);
  ag_version_spec vs = {0, m, NULL, NULL, 0};
  int64_t v = 0, q = 0;
  CHECK_EQ_INT(ag_store_version_create(st, &vs, &v), 0);
  json_t *qs = json_pack("{s:s,s:[s]}", "region", "gemm/mainloop", "signals", "duration");
  CHECK_EQ_INT(ag_store_query_add(st, qs, v, &q), 0);
  CHECK_EQ_INT(ag_store_query_add(st, qs, 99, &q), AG_ENOTFOUND);
  CHECK_EQ_INT(ag_store_query_add(st, NULL, 0, &q), AG_EINVAL);
  CHECK_EQ_INT(ag_store_query_add(st, qs, v, &q), 0);
  ag_store_task_spec ts = {AG_TASK_SYNTHESIZE, NULL, NULL, 0, NULL, q, NULL};
  ag_store_claim c;
  CHECK_EQ_INT(ag_store_task_begin(st, &ts, 0, &c), 0);
  ag_store_result ok = {AG_STORE_TASK_OK, NULL, 0, NULL};
  CHECK_EQ_INT(ag_store_task_finish(st, c.task_id, &ok), 0);
  ag_put_opts ro = {"report", c.task_id};
  CHECK_EQ_INT(ag_store_put(st, "{\"report\":1}", 12, &ro, rep), 0);
  CHECK_EQ_INT(ag_store_report_add(st, q, rep), 0);
  CHECK_EQ_INT(ag_store_report_add(st, 77, rep), AG_ENOTFOUND);
  CHECK_EQ_INT(ag_store_report_add(st, q, "zz"), AG_EINVAL);
  ag_store_query qq;
  CHECK_EQ_INT(ag_store_query_get(st, q, &qq), 0);
  CHECK_EQ_INT(qq.version_id, v);
  CHECK_EQ_STR(qq.spec, "{\"region\":\"gemm/mainloop\",\"signals\":[\"duration\"]}");
  CHECK_EQ_INT(qq.nreports, 1);
  CHECK_EQ_INT(qq.ntasks, 1);
  if (qq.nreports)
    CHECK_EQ_STR(qq.reports[0], rep);
  if (qq.ntasks)
    CHECK_EQ_INT(qq.tasks[0], c.task_id);
  ag_store_query_release(&qq);
  ag_store_query *ql = NULL;
  size_t n = 0;
  CHECK_EQ_INT(ag_store_queries(st, NULL, &ql, &n), 0);
  CHECK_EQ_INT(n, 2);
  ag_store_queries_free(ql, n);
  /* refs */
  ag_obj to_art = {AG_OBJ_ARTIFACT, 0, ""}, to_v = {AG_OBJ_VERSION, v, ""};
  memcpy(to_art.hash, rep, 65);
  CHECK_EQ_INT(ag_store_ref_set(st, "gemm@baseline", &to_v), 0);
  CHECK_EQ_INT(ag_store_ref_set(st, "latest-report", &to_art), 0);
  CHECK_EQ_INT(ag_store_ref_set(st, "latest-report", &to_v), 0); /* moves */
  ag_ref r;
  CHECK_EQ_INT(ag_store_ref_get(st, "latest-report", &r), 0);
  CHECK_EQ_INT(r.target.kind, AG_OBJ_VERSION);
  ag_ref *refs = NULL;
  CHECK_EQ_INT(ag_store_refs(st, &refs, &n), 0);
  CHECK_EQ_INT(n, 2);
  if (n == 2)
    CHECK_EQ_STR(refs[0].name, "gemm@baseline");
  ag_free(refs);
  CHECK_EQ_INT(ag_store_ref_delete(st, "latest-report"), 0);
  CHECK_EQ_INT(ag_store_ref_delete(st, "latest-report"), AG_ENOTFOUND);
  CHECK_EQ_INT(ag_store_ref_get(st, "latest-report", &r), AG_ENOTFOUND);
  static const char *bad_names[] = {"", "-x", "abc", "v12", "t3", "q7", "a b", "x\n", NULL};
  for (int i = 0; bad_names[i]; i++) {
    CHECK(!ag_store_ref_name_valid(bad_names[i]));
    CHECK_EQ_INT(ag_store_ref_set(st, bad_names[i], &to_v), AG_EINVAL);
  }
  char longname[200];
  memset(longname, 'x', 150);
  longname[150] = 0;
  CHECK(!ag_store_ref_name_valid(longname));
  CHECK(ag_store_ref_name_valid("v12b"));
  CHECK(ag_store_ref_name_valid("gemm/sm90:v2+fast"));
  ag_obj ghost = {AG_OBJ_VERSION, 999, ""};
  CHECK_EQ_INT(ag_store_ref_set(st, "ghost", &ghost), AG_ENOTFOUND);
  ag_obj tk = {AG_OBJ_TASK, c.task_id, ""};
  CHECK_EQ_INT(ag_store_ref_set(st, "task-ref", &tk), AG_EINVAL);
  /* resolve */
  ag_obj o;
  char txt[80];
  snprintf(txt, sizeof txt, "t%lld", (long long)c.task_id);
  CHECK_EQ_INT(ag_store_resolve(st, txt, &o), 0);
  CHECK_EQ_INT(o.kind, AG_OBJ_TASK);
  CHECK_EQ_INT(ag_store_resolve(st, "q1", &o), 0);
  CHECK_EQ_INT(o.kind, AG_OBJ_QUERY);
  CHECK_EQ_INT(ag_store_resolve(st, "v9", &o), AG_ENOTFOUND);
  CHECK_EQ_INT(ag_store_resolve(st, "gemm@baseline", &o), 0);
  CHECK_EQ_INT(o.kind, AG_OBJ_VERSION);
  CHECK_EQ_INT(o.id, v);
  snprintf(txt, sizeof txt, "%.6s", rep);
  CHECK_EQ_INT(ag_store_resolve(st, txt, &o), 0);
  CHECK_EQ_INT(o.kind, AG_OBJ_ARTIFACT);
  CHECK_EQ_STR(o.hash, rep);
  CHECK_EQ_INT(ag_store_resolve(st, "abc", &o), AG_EINVAL); /* too short a prefix */
  CHECK_EQ_INT(ag_store_resolve(st, "no-such-ref", &o), AG_ENOTFOUND);
  CHECK_EQ_INT(ag_store_resolve(st, "bad name!", &o), AG_ENOTFOUND);
  /* two hashes sharing 4 hex digits: an ambiguous prefix */
  {
    static char seen[65536][8];
    memset(seen, 0, sizeof seen);
    char hx[65], a1[32] = "", a2[32] = "";
    for (int i = 0; i < 100000 && !a2[0]; i++) {
      char s[32];
      snprintf(s, sizeof s, "amb%d", i);
      ag_sha256_hex(s, strlen(s), hx);
      unsigned idx = (unsigned)strtoul((char[]){hx[0], hx[1], hx[2], hx[3], 0}, NULL, 16);
      if (seen[idx][0]) {
        snprintf(a1, sizeof a1, "amb%s", seen[idx]);
        snprintf(a2, sizeof a2, "%s", s);
      } else {
        snprintf(seen[idx], sizeof seen[idx], "%d", i);
      }
    }
    char x1[65], x2[65];
    CHECK_EQ_INT(ag_store_put(st, a1, strlen(a1), NULL, x1), 0);
    CHECK_EQ_INT(ag_store_put(st, a2, strlen(a2), NULL, x2), 0);
    CHECK(strncmp(x1, x2, 4) == 0);
    snprintf(txt, sizeof txt, "%.4s", x1);
    CHECK_EQ_INT(ag_store_resolve(st, txt, &o), AG_EINVAL);
    CHECK_CONTAINS(ag_store_errmsg(), "ambiguous");
  }
  /* the log: newest first, every kind of event */
  ag_log_entry *log = NULL;
  CHECK_EQ_INT(ag_store_log(st, 0, &log, &n), 0);
  ag_str all = AG_STR_INIT;
  for (size_t i = 0; i < n; i++)
    ag_str_printf(&all, "%s|%s\n", log[i].what, log[i].text);
  for (size_t i = 1; i < n; i++)
    CHECK(log[i - 1].time_ns >= log[i].time_ns);
  CHECK_CONTAINS(ag_str_cstr(&all), "task|t1 synthesize ok");
  CHECK_CONTAINS(ag_str_cstr(&all), "version|v1 root");
  CHECK_CONTAINS(ag_str_cstr(&all), "query|q1 on v1");
  CHECK_CONTAINS(ag_str_cstr(&all), "report|report ");
  CHECK_CONTAINS(ag_str_cstr(&all), "ref|ref latest-report -> (deleted)");
  CHECK_CONTAINS(ag_str_cstr(&all), "ref|ref gemm@baseline -> v1");
  ag_str_release(&all);
  ag_store_log_free(log, n);
  CHECK_EQ_INT(ag_store_log(st, 3, &log, &n), 0);
  CHECK_EQ_INT(n, 3);
  ag_store_log_free(log, n);
  json_decref(qs);
  CHECK_EQ_INT(check_problems(st, 1), 0);
  done(st, dir);
}

/* ------------------------------------------------------- check and gc */
TEST(test_gc) {
  char *dir;
  ag_store *st = fresh(&dir);
  char A[65], B[65], C[65], D[65], E[65], F[65];
  size_t big = 200000;
  unsigned char *rnd = malloc(big);
  fill_random(rnd, big, 77);
  CHECK_EQ_INT(ag_store_put(st, rnd, big, NULL, A), 0); /* unreachable, in objects/ */
  CHECK_EQ_INT(ag_store_put(st, "ref target", 10, NULL, B), 0);
  CHECK_EQ_INT(ag_store_put(st, "task input", 10, NULL, C), 0);
  CHECK_EQ_INT(ag_store_put(st, "task output", 11, NULL, D), 0);
  CHECK_EQ_INT(ag_store_put(st, "version module", 14, NULL, E), 0);
  CHECK_EQ_INT(ag_store_put(st, "report", 6, NULL, F), 0);
  ag_obj rb = {AG_OBJ_ARTIFACT, 0, ""};
  memcpy(rb.hash, B, 65);
  CHECK_EQ_INT(ag_store_ref_set(st, "keep-b", &rb), 0);
  const char *in[] = {C};
  ag_store_task_spec ts = {AG_TASK_TRANSFORM, NULL, in, 1, NULL, 0, NULL};
  ag_store_claim c;
  CHECK_EQ_INT(ag_store_task_begin(st, &ts, 0, &c), 0);
  ag_store_output out;
  snprintf(out.name, sizeof out.name, "ptx");
  memcpy(out.hash, D, 65);
  ag_store_result res = {AG_STORE_TASK_OK, &out, 1, NULL};
  CHECK_EQ_INT(ag_store_task_finish(st, c.task_id, &res), 0);
  ag_version_spec vs = {0, E, NULL, NULL, 0};
  int64_t v;
  CHECK_EQ_INT(ag_store_version_create(st, &vs, &v), 0);
  json_t *qs = json_object();
  int64_t q;
  CHECK_EQ_INT(ag_store_query_add(st, qs, 0, &q), 0);
  CHECK_EQ_INT(ag_store_report_add(st, q, F), 0);
  json_decref(qs);
  /* an orphan blob file (from a put killed after its rename) and a temp file */
  char orphan_hash[65], p[900];
  ag_sha256_hex("orphan", 6, orphan_hash);
  snprintf(p, sizeof p, "%s/objects/%.2s", ws_path(dir), orphan_hash);
  mkdir(p, 0755);
  snprintf(p, sizeof p, "%s/objects/%.2s/%s", ws_path(dir), orphan_hash, orphan_hash + 2);
  CHECK_EQ_INT(ag_file_write_atomic(p, "orphan", 6), 0);
  char tmpf[900];
  snprintf(tmpf, sizeof tmpf, "%s/tmp/put-1-abcdef", ws_path(dir));
  CHECK_EQ_INT(ag_file_write_atomic(tmpf, "partial", 7), 0);
  ag_check_report cr;
  CHECK_EQ_INT(ag_store_check(st, &cr), 0);
  CHECK_EQ_INT(cr.nproblems, 0);
  CHECK_EQ_INT(cr.nnotes, 2); /* orphan + temp: harmless */
  ag_store_check_release(&cr);
  /* dry run: lists A only, deletes nothing */
  ag_gc_opts dry = {1, 0};
  ag_gc_report gr;
  CHECK_EQ_INT(ag_store_gc(st, &dry, &gr), 0);
  CHECK_EQ_INT(gr.nremoved, 1);
  if (gr.nremoved)
    CHECK_EQ_STR(gr.removed[0], A);
  CHECK_EQ_U64(gr.removed_bytes, big);
  CHECK_EQ_INT(gr.orphan_files, 1);
  CHECK_EQ_INT(gr.temp_files, 1);
  ag_store_gc_release(&gr);
  CHECK(access(p, F_OK) == 0 && access(tmpf, F_OK) == 0);
  ag_artifact a;
  CHECK_EQ_INT(ag_store_artifact(st, A, &a), 0);
  /* the grace period protects a fresh put (orphans and temp files go) */
  ag_gc_opts keep = {0, 3600};
  CHECK_EQ_INT(ag_store_gc(st, &keep, &gr), 0);
  CHECK_EQ_INT(gr.nremoved, 0);
  CHECK_EQ_INT(gr.orphan_files, 1);
  ag_store_gc_release(&gr);
  CHECK_EQ_INT(ag_store_artifact(st, A, &a), 0);
  CHECK(access(p, F_OK) != 0 && access(tmpf, F_OK) != 0);
  /* the real thing */
  ag_gc_opts now = {0, 0};
  CHECK_EQ_INT(ag_store_gc(st, &now, &gr), 0);
  CHECK_EQ_INT(gr.nremoved, 1);
  ag_store_gc_release(&gr);
  CHECK_EQ_INT(ag_store_artifact(st, A, &a), AG_ENOTFOUND);
  CHECK(access(object_path(dir, A), F_OK) != 0);
  const char *kept[] = {B, C, D, E, F};
  for (int i = 0; i < 5; i++) {
    void *d = NULL;
    size_t dl = 0;
    CHECK_EQ_INT(ag_store_get(st, kept[i], &d, &dl), 0);
    ag_free(d);
  }
  CHECK_EQ_INT(ag_store_check(st, &cr), 0);
  CHECK_EQ_INT(cr.nproblems, 0);
  CHECK_EQ_INT(cr.nnotes, 0);
  ag_store_check_release(&cr);
  ag_gc_opts neg = {0, -1};
  CHECK_EQ_INT(ag_store_gc(st, &neg, &gr), AG_EINVAL);
  /* once the ref is gone, B goes too */
  CHECK_EQ_INT(ag_store_ref_delete(st, "keep-b"), 0);
  CHECK_EQ_INT(ag_store_gc(st, &now, &gr), 0);
  CHECK_EQ_INT(gr.nremoved, 1);
  if (gr.nremoved)
    CHECK_EQ_STR(gr.removed[0], B);
  ag_store_gc_release(&gr);
  free(rnd);
  done(st, dir);
}

/* gc scans objects/ outside a transaction; a statement it left open would pin
 * an old snapshot and the handle's next write would wait forever once another
 * process had committed (found by the concurrency test). */
/* gc removes the run directories of failed runs (issue 16): under trace/ and
 * runs/, a directory named …-PID without evidence whose process is gone and
 * that is older than the grace period; it keeps a successful run's, a live
 * run's, and anything not named like a run. */
static void make_run_dir(const char *ws, const char *sub, const char *file) {
  char p[1200];
  snprintf(p, sizeof p, "%s/%s", ws, sub);
  CHECK_EQ_INT(ag_mkdir_p(p, 0755), 0);
  snprintf(p, sizeof p, "%s/%s/%s", ws, sub, file);
  CHECK_EQ_INT(ag_file_write_atomic(p, "x", 1), 0);
}

TEST(test_gc_run_dirs) {
  char *dir;
  ag_store *st = fresh(&dir);
  const char *ws = ws_path(dir);
  pid_t dead = fork(); /* a pid that is gone */
  if (dead == 0)
    _exit(0);
  waitpid(dead, NULL, 0);
  char failed[200], failed2[200], ok[200], live[200];
  snprintf(failed, sizeof failed, "trace/0123456789abcdef-1700000000-%ld", (long)dead);
  snprintf(failed2, sizeof failed2, "runs/fedcba9876543210-3-%ld", (long)dead);
  snprintf(ok, sizeof ok, "trace/00112233aabbccdd-1700000001-%ld", (long)dead);
  snprintf(live, sizeof live, "trace/0123456789abcdef-1700000002-%ld", (long)getpid());
  make_run_dir(ws, failed, "variant.ptx");
  char p[1200];
  snprintf(p, sizeof p, "%s/sub", failed);
  make_run_dir(ws, p, "harness.log");
  make_run_dir(ws, failed2, "variant.cubin");
  make_run_dir(ws, ok, "trace.agev");
  make_run_dir(ws, live, "variant.ptx");
  make_run_dir(ws, "trace/notes", "mine.txt");
  ag_gc_opts o = {0, 3600};
  ag_gc_report r;
  CHECK_EQ_INT(ag_store_gc(st, &o, &r), 0); /* too young */
  CHECK_EQ_INT(r.nrun_dirs, 0);
  ag_store_gc_release(&r);
  ag_gc_opts dry = {1, 0};
  CHECK_EQ_INT(ag_store_gc(st, &dry, &r), 0);
  CHECK_EQ_INT(r.nrun_dirs, 2);
  ag_store_gc_release(&r);
  snprintf(p, sizeof p, "%s/%s", ws, failed);
  CHECK_EQ_INT(access(p, F_OK), 0); /* a dry run removes nothing */
  ag_gc_opts now = {0, 0};
  CHECK_EQ_INT(ag_store_gc(st, &now, &r), 0);
  CHECK_EQ_INT(r.nrun_dirs, 2);
  ag_str all = AG_STR_INIT;
  for (size_t i = 0; i < r.nrun_dirs; i++)
    ag_str_printf(&all, "%s\n", r.run_dirs[i]);
  CHECK_CONTAINS(ag_str_cstr(&all), failed);
  CHECK_CONTAINS(ag_str_cstr(&all), failed2);
  ag_str_release(&all);
  ag_store_gc_release(&r);
  CHECK(access(p, F_OK) != 0);
  snprintf(p, sizeof p, "%s/%s", ws, failed2);
  CHECK(access(p, F_OK) != 0);
  const char *kept[] = {ok, live, "trace/notes"};
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s/%s", ws, kept[i]);
    CHECK_EQ_INT(access(p, F_OK), 0);
  }
  CHECK_EQ_INT(check_problems(st, 1), 0);
  done(st, dir);
}

TEST(test_gc_leaves_no_snapshot) {
  char *dir;
  ag_store *st = fresh(&dir), *other = NULL;
  CHECK_EQ_INT(ag_store_open(ws_path(dir), 0, &other), 0);
  size_t n = 100000;
  unsigned char *rnd = malloc(n);
  fill_random(rnd, n, 9);
  char h[65];
  CHECK_EQ_INT(ag_store_put(st, rnd, n, NULL, h), 0); /* a blob file */
  ag_obj t = {AG_OBJ_ARTIFACT, 0, ""};
  memcpy(t.hash, h, 65);
  CHECK_EQ_INT(ag_store_ref_set(st, "kept", &t), 0);
  ag_gc_opts o = {0, 0};
  ag_gc_report r;
  for (int i = 0; i < 3; i++) {
    CHECK_EQ_INT(ag_store_gc(st, &o, &r), 0);
    ag_store_gc_release(&r);
    char h2[65];
    CHECK_EQ_INT(ag_store_put(other, &i, sizeof i, NULL, h2), 0); /* another commit */
    uint64_t t0 = ag_now_ns();
    CHECK_EQ_INT(ag_store_put(st, rnd, 10 + (size_t)i, NULL, h2), 0);
    CHECK(ag_now_ns() - t0 < 5000000000ull);
  }
  ag_store_close(other);
  free(rnd);
  done(st, dir);
}

TEST(test_check_finds_damage) {
  char *dir;
  ag_store *st = fresh(&dir);
  char m[65];
  CHECK_EQ_INT(ag_store_put(st, "module text", 11, NULL, m), 0);
  ag_version_spec vs = {0, m, NULL, NULL, 0};
  int64_t v;
  CHECK_EQ_INT(ag_store_version_create(st, &vs, &v), 0);
  ag_obj to = {AG_OBJ_ARTIFACT, 0, ""};
  memcpy(to.hash, m, 65);
  CHECK_EQ_INT(ag_store_ref_set(st, "mod", &to), 0);
  json_t *cfg = json_pack("{s:i}", "x", 1);
  ag_store_task_spec ts = {AG_TASK_TRANSFORM, cfg, NULL, 0, NULL, 0, NULL};
  ag_store_claim c;
  CHECK_EQ_INT(ag_store_task_begin(st, &ts, 0, &c), 0);
  ag_store_result ok = {AG_STORE_TASK_OK, NULL, 0, NULL};
  CHECK_EQ_INT(ag_store_task_finish(st, c.task_id, &ok), 0);
  json_decref(cfg);
  CHECK_EQ_INT(check_problems(st, 1), 0);
  /* tamper with a task's config: its key no longer matches */
  CHECK_EQ_INT(ag__store_exec(st, "UPDATE tasks SET config = '{\"x\":2}'"), 0);
  ag_check_report r;
  CHECK_EQ_INT(ag_store_check(st, &r), 0);
  CHECK_EQ_INT(r.nproblems, 1);
  if (r.nproblems)
    CHECK_CONTAINS(r.problems[0], "does not match");
  ag_store_check_release(&r);
  CHECK_EQ_INT(ag__store_exec(st, "UPDATE tasks SET config = '{\"x\":1}'"), 0);
  CHECK_EQ_INT(check_problems(st, 1), 0);
  /* remove the module behind the ref's and the version's back */
  CHECK_EQ_INT(ag__store_exec(st, "PRAGMA foreign_keys=OFF; DELETE FROM artifacts; "
                                  "PRAGMA foreign_keys=ON"),
               0);
  CHECK_EQ_INT(ag_store_check(st, &r), 0);
  ag_str all = AG_STR_INIT;
  for (size_t i = 0; i < r.nproblems; i++)
    ag_str_printf(&all, "%s\n", r.problems[i]);
  CHECK(r.nproblems >= 2);
  CHECK_CONTAINS(ag_str_cstr(&all), "dangling reference");
  CHECK_CONTAINS(ag_str_cstr(&all), "module artifact is missing");
  CHECK_CONTAINS(ag_str_cstr(&all), "target is missing");
  ag_str_release(&all);
  ag_store_check_release(&r);
  done(st, dir);
}

/* ------------------------------------------------------------ batches */
TEST(test_batch) {
  char *dir;
  ag_store *st = fresh(&dir);
  CHECK_EQ_INT(ag_store_batch_begin(st), 0);
  CHECK_EQ_INT(ag_store_batch_begin(st), AG_EINVAL);
  for (int i = 0; i < 50; i++) {
    json_t *cfg = json_pack("{s:i}", "i", i);
    ag_store_task_spec ts = {AG_TASK_TRANSFORM, cfg, NULL, 0, NULL, 0, NULL};
    ag_store_claim c;
    CHECK_EQ_INT(ag_store_task_begin(st, &ts, AG_STORE_PLAN, &c), 0);
    json_decref(cfg);
  }
  /* a failing call inside a batch undoes only itself */
  ag_put_opts badtask = {"log", 9999};
  char h[65];
  CHECK_EQ_INT(ag_store_put(st, "x", 1, &badtask, h), AG_ENOTFOUND);
  CHECK_EQ_INT(ag_store_put(st, "kept", 4, NULL, h), 0);
  CHECK_EQ_INT(ag_store_batch_commit(st), 0);
  CHECK_EQ_INT(ag_store_batch_commit(st), AG_EINVAL);
  ag_store_stats s;
  CHECK_EQ_INT(ag_store_stats_get(st, &s), 0);
  CHECK_EQ_U64(s.tasks, 50);
  CHECK_EQ_U64(s.tasks_by_status[AG_STORE_TASK_PENDING], 50);
  CHECK_EQ_U64(s.artifacts, 1);
  CHECK_EQ_INT(ag_store_batch_begin(st), 0);
  CHECK_EQ_INT(ag_store_put(st, "dropped", 7, NULL, h), 0);
  ag_store_batch_abort(st);
  CHECK_EQ_INT(ag_store_stats_get(st, &s), 0);
  CHECK_EQ_U64(s.artifacts, 1);
  /* an unfinished batch is rolled back by close */
  CHECK_EQ_INT(ag_store_batch_begin(st), 0);
  CHECK_EQ_INT(ag_store_put(st, "dropped too", 11, NULL, h), 0);
  ag_store_close(st);
  st = NULL;
  CHECK_EQ_INT(ag_store_open(ws_path(dir), 0, &st), 0);
  CHECK_EQ_INT(ag_store_stats_get(st, &s), 0);
  CHECK_EQ_U64(s.artifacts, 1);
  CHECK_EQ_INT(check_problems(st, 1), 0);
  done(st, dir);
}

/* ------------------------------------------------------------ threads */
typedef struct thr {
  ag_store *st;
  int id, errors;
} thr;

static void *thread_main(void *p) {
  thr *t = p;
  for (int i = 0; i < 40; i++) {
    char buf[64], h[65];
    int n = snprintf(buf, sizeof buf, "thread %d item %d", t->id, i);
    if (ag_store_put(t->st, buf, (size_t)n, NULL, h)) {
      t->errors++;
      continue;
    }
    void *d = NULL;
    size_t dl = 0;
    if (ag_store_get(t->st, h, &d, &dl) || dl != (size_t)n || memcmp(d, buf, dl))
      t->errors++;
    ag_free(d);
    const char *in[] = {h};
    ag_store_task_spec ts = {AG_TASK_TRANSFORM, NULL, in, 1, NULL, 0, NULL};
    ag_store_claim c;
    if (ag_store_task_begin(t->st, &ts, 0, &c)) {
      t->errors++;
      continue;
    }
    ag_store_output o;
    snprintf(o.name, sizeof o.name, "same");
    memcpy(o.hash, h, 65);
    ag_store_result r = {AG_STORE_TASK_OK, &o, 1, NULL};
    if (ag_store_task_finish(t->st, c.task_id, &r))
      t->errors++;
  }
  return NULL;
}

TEST(test_threads_share_a_handle) {
  char *dir;
  ag_store *st = fresh(&dir);
  pthread_t th[4];
  thr t[4];
  for (int i = 0; i < 4; i++) {
    t[i] = (thr){st, i, 0};
    pthread_create(&th[i], NULL, thread_main, &t[i]);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    CHECK_EQ_INT(t[i].errors, 0);
  }
  ag_store_stats s;
  CHECK_EQ_INT(ag_store_stats_get(st, &s), 0);
  CHECK_EQ_U64(s.artifacts, 160);
  CHECK_EQ_U64(s.tasks_by_status[AG_STORE_TASK_OK], 160);
  CHECK(s.disk_bytes > 0);
  CHECK_EQ_INT(check_problems(st, 1), 0);
  done(st, dir);
}

RUN_TESTS(T(test_open_errors), T(test_newer_schema), T(test_migration), T(test_roundtrip),
          T(test_put_file_and_dedup), T(test_corruption), T(test_reput_repairs), T(test_health),
          T(test_no_init_over_data), T(test_versions), T(test_task_keys),
          T(test_memoization), T(test_task_lifecycle), T(test_abandoned_task),
          T(test_queries_refs_log), T(test_gc), T(test_gc_run_dirs), T(test_gc_leaves_no_snapshot),
          T(test_check_finds_damage), T(test_batch),
          T(test_threads_share_a_handle))
