/* test_store_crash.c — crash safety of the workspace under kill -9.
 *
 * A writer process puts blobs (inline, file-stored, compressed, raw, up to
 * 1.5 MiB), runs tasks, derives program versions, moves refs and commits
 * batches, and after each call that returned 0 reports what it committed
 * through a pipe (one write() per line, so lines arrive whole). The parent
 * kills it with SIGKILL after a random delay, then opens the workspace and
 * verifies every reported record: content hashes, task status and outputs,
 * version parents, ref targets, and that a finished task is memoized. Some
 * rounds run a gc process alongside (and kill it too); the first rounds kill
 * a process while it creates the workspace. ag_store_check must pass
 * throughout. ARGUS_CRASH_ROUNDS overrides the number of rounds (200). The
 * kill comes 0–15 ms after the writer opened the workspace and reported 0–7
 * commits, so a slow (loaded, sanitized) machine still kills it mid-work.
 * test_kill_in_commit and test_gc_after_kill_in_commit kill a writer at one
 * exact instant instead: inside SQLite's commit (see below). */
#include "util.h"

#include "argus/core.h"
#include "check.h"
#include "store_test.h"

#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <time.h>

typedef struct rec {
  char kind; /* R ref, T task, V version, F failed task */
  int64_t id, parent;
  long seed, j;
  char name[64];
  char hash[65];  /* R: target; T: output; V: module */
  char input[65]; /* T: input */
} rec;

static rec *recs;
static size_t nrecs, caprecs;

static void report(int fd, const char *fmt, ...) AG_PRINTF(2, 3);
static void report(int fd, const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (write(fd, line, (size_t)n) != n)
    _exit(9);
}

static unsigned char *payload(uint64_t *rng, size_t *n) {
  uint64_t r = rng_next(rng) % 100;
  size_t size = r < 70   ? 10 + rng_next(rng) % 4000
                : r < 98 ? 20000 + rng_next(rng) % 180000
                         : (1u << 20) + rng_next(rng) % (512u << 10);
  unsigned char *p = malloc(size);
  if (rng_next(rng) & 1)
    fill_random(p, size, rng_next(rng));
  else
    fill_trace(p, size, rng_next(rng));
  *n = size;
  return p;
}

static json_t *task_config(long seed, long j) {
  return json_pack("{s:I,s:I,s:s}", "seed", (json_int_t)seed, "j", (json_int_t)j, "backend",
                   "trace");
}

/* The writer: runs until killed. */
static void writer(const char *ws, long seed, int fd) {
  ag_store *st = NULL;
  if (ag_store_open(ws, AG_STORE_CREATE, &st))
    _exit(3);
  report(fd, "O\n"); /* open: the parent's clock starts now */
  uint64_t rng = (uint64_t)seed * 7919 + 1;
  int64_t last_version = 0;
  for (long j = 0;; j++) {
    unsigned op = (unsigned)(rng_next(&rng) % 10);
    size_t n;
    unsigned char *p = payload(&rng, &n);
    char h[65], h2[65];
    if (op < 3) { /* a blob kept by a ref */
      if (ag_store_put(st, p, n, NULL, h) == 0) {
        char name[64];
        snprintf(name, sizeof name, "w%ld-%ld", seed, j);
        ag_obj t = {AG_OBJ_ARTIFACT, 0, ""};
        memcpy(t.hash, h, 65);
        if (ag_store_ref_set(st, name, &t) == 0)
          report(fd, "R %s %s\n", name, h);
      }
    } else if (op < 6) { /* a task with an input and an output */
      if (ag_store_put(st, p, n / 2 + 1, NULL, h) == 0) {
        const char *in[] = {h};
        json_t *cfg = task_config(seed, j);
        ag_store_task_spec ts = {AG_TASK_COLLECT, cfg, in, 1, "crash-test", 0, NULL};
        ag_store_claim c;
        if (ag_store_task_begin(st, &ts, 0, &c) == 0 && c.status == AG_STORE_TASK_RUNNING) {
          ag_put_opts po = {"evidence", c.task_id};
          if (ag_store_put(st, p, n, &po, h2) == 0) {
            ag_store_output o;
            snprintf(o.name, sizeof o.name, "evidence");
            memcpy(o.hash, h2, 65);
            ag_store_result r = {AG_STORE_TASK_OK, &o, 1, NULL};
            if (ag_store_task_finish(st, c.task_id, &r) == 0)
              report(fd, "T %lld %ld %ld %s %s\n", (long long)c.task_id, seed, j, h, h2);
          }
        }
        json_decref(cfg);
      }
    } else if (op < 8) { /* a program version derived from the last one */
      if (ag_store_put(st, p, n, NULL, h) == 0) {
        char tr[32];
        snprintf(tr, sizeof tr, "step(%ld)", j);
        ag_version_spec vs = {last_version, h, last_version ? tr : NULL, NULL, 0};
        int64_t v;
        if (ag_store_version_create(st, &vs, &v) == 0) {
          report(fd, "V %lld %lld %s\n", (long long)v, (long long)last_version, h);
          last_version = v;
        }
      }
    } else if (op < 9) { /* a failed task */
      json_t *cfg = task_config(seed, j);
      ag_store_task_spec ts = {AG_TASK_TRANSFORM, cfg, NULL, 0, NULL, 0, NULL};
      ag_store_claim c;
      if (ag_store_task_begin(st, &ts, 0, &c) == 0 && c.status == AG_STORE_TASK_RUNNING) {
        ag_store_result r = {AG_STORE_TASK_FAILED, NULL, 0, "injected failure"};
        if (ag_store_task_finish(st, c.task_id, &r) == 0)
          report(fd, "F %lld\n", (long long)c.task_id);
      }
      json_decref(cfg);
    } else { /* a batch of refs: all or nothing */
      if (ag_store_batch_begin(st) == 0) {
        char names[4][64], hs[4][65];
        int ok = 1;
        for (int b = 0; b < 4 && ok; b++) {
          snprintf(names[b], sizeof names[b], "b%ld-%ld-%d", seed, j, b);
          ok = ag_store_put(st, p, n - (size_t)b, NULL, hs[b]) == 0; /* n >= 10 */
          ag_obj t = {AG_OBJ_ARTIFACT, 0, ""};
          memcpy(t.hash, hs[b], 65);
          ok = ok && ag_store_ref_set(st, names[b], &t) == 0;
        }
        if (ok && ag_store_batch_commit(st) == 0) {
          for (int b = 0; b < 4; b++)
            report(fd, "R %s %s\n", names[b], hs[b]);
        } else {
          ag_store_batch_abort(st);
        }
      }
    }
    free(p);
  }
}

/* A collector running gc again and again (no grace: only refs, tasks and
 * versions keep blobs). */
static void collector(const char *ws) {
  ag_store *st = NULL;
  if (ag_store_open(ws, AG_STORE_CREATE, &st))
    _exit(3);
  for (;;) {
    ag_gc_opts o = {0, 0};
    ag_gc_report r;
    if (ag_store_gc(st, &o, &r) == 0)
      ag_store_gc_release(&r);
  }
}

static void parse_lines(char *buf, size_t len) {
  size_t start = 0;
  for (size_t i = 0; i < len; i++) {
    if (buf[i] != '\n')
      continue;
    buf[i] = 0;
    char *line = buf + start;
    start = i + 1;
    if (nrecs == caprecs) {
      caprecs = caprecs ? 2 * caprecs : 256;
      recs = realloc(recs, caprecs * sizeof *recs);
    }
    rec *r = &recs[nrecs];
    memset(r, 0, sizeof *r);
    long long a = 0, b = 0;
    int ok = 0;
    switch (line[0]) {
    case 'R':
      ok = sscanf(line, "R %63s %64s", r->name, r->hash) == 2;
      break;
    case 'T':
      ok = sscanf(line, "T %lld %ld %ld %64s %64s", &a, &r->seed, &r->j, r->input, r->hash) == 5;
      r->id = a;
      break;
    case 'V':
      ok = sscanf(line, "V %lld %lld %64s", &a, &b, r->hash) == 3;
      r->id = a;
      r->parent = b;
      break;
    case 'F':
      ok = sscanf(line, "F %lld", &a) == 1;
      r->id = a;
      break;
    case 'O':
      continue;
    }
    if (!ok) {
      fprintf(stderr, "bad report line '%s'\n", line);
      CHECK(0);
      continue;
    }
    r->kind = line[0];
    nrecs++;
  }
}

static int blob_intact(ag_store *st, const char *hash) {
  void *d = NULL;
  size_t n = 0;
  int rc = ag_store_get(st, hash, &d, &n);
  if (rc) {
    fprintf(stderr, "blob %s: %s\n", hash, ag_store_errmsg());
    return 0;
  }
  char h[65];
  ag_sha256_hex(d, n, h);
  ag_free(d);
  return strcmp(h, hash) == 0;
}

static int verify(ag_store *st, const rec *r) {
  switch (r->kind) {
  case 'R': {
    ag_ref ref;
    if (ag_store_ref_get(st, r->name, &ref) || ref.target.kind != AG_OBJ_ARTIFACT ||
        strcmp(ref.target.hash, r->hash) != 0) {
      fprintf(stderr, "ref %s lost or changed\n", r->name);
      return 0;
    }
    return blob_intact(st, r->hash);
  }
  case 'T': {
    ag_store_task t;
    if (ag_store_task_get(st, r->id, &t)) {
      fprintf(stderr, "task t%lld lost\n", (long long)r->id);
      return 0;
    }
    int ok = t.status == AG_STORE_TASK_OK && t.noutputs == 1 && !strcmp(t.outputs[0].hash, r->hash) &&
             t.ninputs == 1 && !strcmp(t.inputs[0], r->input);
    ag_store_task_release(&t);
    if (!ok) {
      fprintf(stderr, "task t%lld changed\n", (long long)r->id);
      return 0;
    }
    /* memoized: the same spec is answered without running */
    const char *in[] = {r->input};
    json_t *cfg = task_config(r->seed, r->j);
    ag_store_task_spec ts = {AG_TASK_COLLECT, cfg, in, 1, NULL, 0, NULL};
    ag_store_claim c;
    int rc = ag_store_task_begin(st, &ts, 0, &c);
    json_decref(cfg);
    ok = rc == 0 && c.status == AG_STORE_TASK_OK && c.task_id == r->id && c.noutputs == 1 &&
         !strcmp(c.outputs[0].hash, r->hash);
    ag_free(c.outputs);
    if (!ok) {
      fprintf(stderr, "task t%lld not memoized (rc %d)\n", (long long)r->id, rc);
      return 0;
    }
    return blob_intact(st, r->input) && blob_intact(st, r->hash);
  }
  case 'V': {
    ag_version v;
    if (ag_store_version_get(st, r->id, &v)) {
      fprintf(stderr, "version v%lld lost\n", (long long)r->id);
      return 0;
    }
    int ok = v.parent == r->parent && !strcmp(v.module, r->hash);
    ag_store_version_release(&v);
    return ok && blob_intact(st, r->hash);
  }
  case 'F': {
    ag_store_task t;
    if (ag_store_task_get(st, r->id, &t))
      return 0;
    int ok = t.status == AG_STORE_TASK_FAILED && t.error && !strcmp(t.error, "injected failure");
    ag_store_task_release(&t);
    return ok;
  }
  }
  return 0;
}

static size_t problems(ag_store *st) {
  ag_check_report r;
  if (ag_store_check(st, &r)) {
    fprintf(stderr, "check: %s\n", ag_store_errmsg());
    return 1000;
  }
  for (size_t i = 0; i < r.nproblems; i++)
    fprintf(stderr, "problem: %s\n", r.problems[i]);
  size_t n = r.nproblems;
  ag_store_check_release(&r);
  return n;
}

static void sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

/* Runs one round: writer (and maybe collector) killed after a random delay.
 * Returns the number of records the writer reported. */
static size_t round_once(const char *ws, long seed, long delay_us, int with_gc, int wait_lines) {
  int fds[2];
  if (pipe(fds) != 0)
    abort();
  pid_t w = fork();
  if (w == 0) {
    close(fds[0]);
    writer(ws, seed, fds[1]);
    _exit(0);
  }
  close(fds[1]);
  pid_t g = -1;
  if (with_gc && (g = fork()) == 0) {
    close(fds[0]);
    collector(ws);
    _exit(0);
  }
  ag_str buf = AG_STR_INIT;
  char chunk[4096];
  ssize_t k;
  /* start the clock once the writer has the workspace open and has committed
   * `wait_lines` - 1 records, so a slow (loaded, sanitized) machine still
   * kills it in the middle of its work */
  for (;;) {
    int lines = 0;
    for (size_t i = 0; i < buf.len; i++)
      lines += buf.p[i] == '\n';
    if (lines >= wait_lines || (k = read(fds[0], chunk, sizeof chunk)) <= 0)
      break;
    ag_str_append(&buf, chunk, (size_t)k);
  }
  sleep_us(delay_us);
  kill(w, SIGKILL);
  if (g > 0) {
    sleep_us(delay_us % 3000);
    kill(g, SIGKILL);
  }
  int status;
  waitpid(w, &status, 0);
  if (g > 0)
    waitpid(g, &status, 0);
  while ((k = read(fds[0], chunk, sizeof chunk)) > 0)
    ag_str_append(&buf, chunk, (size_t)k);
  close(fds[0]);
  size_t before = nrecs;
  if (buf.len)
    parse_lines(buf.p, buf.len);
  ag_str_release(&buf);
  return nrecs - before;
}

TEST(test_kill_during_create) {
  char *dir = scratch_dir("crash-create");
  char ws[600];
  uint64_t rng = 42;
  int bad = 0;
  for (int i = 0; i < 20; i++) {
    snprintf(ws, sizeof ws, "%s/ws%d", dir, i);
    size_t first = nrecs;
    round_once(ws, 1000 + i, (long)(rng_next(&rng) % 6000), 0, 0);
    ag_store *st = NULL;
    if (ag_store_open(ws, AG_STORE_CREATE, &st)) {
      fprintf(stderr, "round %d: open: %s\n", i, ag_store_errmsg());
      bad++;
      continue;
    }
    if (problems(st))
      bad++;
    for (size_t r = first; r < nrecs; r++)
      if (!verify(st, &recs[r]))
        bad++;
    ag_store_close(st);
  }
  CHECK_EQ_INT(bad, 0);
  nrecs = 0;
  rm_rf(dir);
  free(dir);
}

TEST(test_kill_writers) {
  const char *e = getenv("ARGUS_CRASH_ROUNDS");
  int rounds = e ? atoi(e) : 200;
  char *dir = scratch_dir("crash");
  char ws[600];
  snprintf(ws, sizeof ws, "%s/ws", dir);
  ag_store *st0 = NULL; /* kills during creation are test_kill_during_create's */
  CHECK_EQ_INT(ag_store_open(ws, AG_STORE_CREATE, &st0), 0);
  ag_store_close(st0);
  uint64_t rng = 7;
  int bad = 0, killed_with_records = 0;
  uint64_t t0 = ag_now_ns();
  for (int i = 0; i < rounds; i++) {
    size_t first = nrecs;
    long delay = (long)(rng_next(&rng) % 15000); /* 0–15 ms after… */
    int after = 1 + (int)(rng_next(&rng) % 8);    /* …the open and 0–7 commits */
    size_t got = round_once(ws, i + 1, delay, i % 5 == 4, after);
    killed_with_records += got > 0;
    ag_store *st = NULL;
    if (ag_store_open(ws, 0, &st)) {
      fprintf(stderr, "round %d: open: %s\n", i, ag_store_errmsg());
      bad++;
      continue;
    }
    for (size_t r = first; r < nrecs; r++)
      if (!verify(st, &recs[r])) {
        fprintf(stderr, "round %d: record %zu (%c) not intact\n", i, r, recs[r].kind);
        bad++;
      }
    if (i % 25 == 24 && problems(st)) {
      fprintf(stderr, "round %d: check found problems\n", i);
      bad++;
    }
    ag_store_close(st);
  }
  /* at the end: everything ever reported, and a full check */
  ag_store *st = NULL;
  CHECK_EQ_INT(ag_store_open(ws, 0, &st), 0);
  if (st) {
    for (size_t r = 0; r < nrecs; r++)
      if (!verify(st, &recs[r]))
        bad++;
    CHECK_EQ_INT(problems(st), 0);
    ag_store_stats s;
    CHECK_EQ_INT(ag_store_stats_get(st, &s), 0);
    printf("%d kills in %.1f s: %zu records verified; %llu artifacts, %llu tasks (%llu running "
           "when killed), %llu versions, %llu refs\n",
           rounds, (double)(ag_now_ns() - t0) / 1e9, nrecs, (unsigned long long)s.artifacts,
           (unsigned long long)s.tasks, (unsigned long long)s.tasks_by_status[AG_STORE_TASK_RUNNING],
           (unsigned long long)s.versions, (unsigned long long)s.refs);
    ag_store_close(st);
  }
  CHECK_EQ_INT(bad, 0);
  CHECK(killed_with_records > rounds / 2); /* the kills landed mid-work */
  CHECK(nrecs > (size_t)rounds);
  free(recs);
  recs = NULL;
  nrecs = caprecs = 0;
  rm_rf(dir);
  free(dir);
}

/* ------------------------------------------- a kill inside SQLite's commit
 * A process killed between writing its commit frame to workspace.db-wal and
 * publishing it in the shared WAL index leaves a commit in doubt: live
 * connections do not see it, but the next connection to open the workspace
 * after every other one has gone runs WAL recovery from the file and finds
 * it committed, unless a later commit overwrote those frames first. The
 * writer's shared lock on `lock` died with it, so gc may run in between.
 * These tests kill a writer at exactly that point through the unix VFS's
 * system-call hooks (in the child only). */
typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
static write_fn real_write;
static pwrite_fn real_pwrite, real_pwrite64;
static int commit_frame_started;

static int is_wal_fd(int fd) {
  char link[64], target[1024];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, target, sizeof target - 1);
  if (n < 4)
    return 0;
  target[n] = 0;
  return strcmp(target + n - 4, "-wal") == 0;
}

/* A WAL frame is written as a 24-byte header (bytes 4..7: the database size
 * in pages on a commit frame, else 0) and then the page: die once the page of
 * the commit frame is in the file, before SQLite updates the WAL index. */
static void after_write(int fd, const void *p, size_t n, ssize_t k) {
  if (k <= 0 || !is_wal_fd(fd))
    return;
  const unsigned char *b = p;
  if (commit_frame_started)
    raise(SIGKILL);
  if (n == 24 && (b[4] | b[5] | b[6] | b[7]))
    commit_frame_started = 1;
}
static ssize_t hook_write(int fd, const void *p, size_t n) {
  ssize_t k = real_write(fd, p, n);
  after_write(fd, p, n, k);
  return k;
}
static ssize_t hook_pwrite(int fd, const void *p, size_t n, off_t off) {
  ssize_t k = real_pwrite(fd, p, n, off);
  after_write(fd, p, n, k);
  return k;
}
static ssize_t hook_pwrite64(int fd, const void *p, size_t n, off_t off) {
  ssize_t k = real_pwrite64(fd, p, n, off);
  after_write(fd, p, n, k);
  return k;
}

/* Arms the hooks: the next commit of this process dies half-way. Call after
 * ag_store_open (SQLite is initialized then). */
static void die_in_next_commit(void) {
  sqlite3_vfs *v = sqlite3_vfs_find(NULL);
  if (!v || v->iVersion < 3 || !v->xSetSystemCall)
    _exit(5);
  /* SQLite writes through one of these, depending on how it was built */
  real_write = (write_fn)v->xGetSystemCall(v, "write");
  real_pwrite = (pwrite_fn)v->xGetSystemCall(v, "pwrite");
  real_pwrite64 = (pwrite_fn)v->xGetSystemCall(v, "pwrite64");
  if (!real_write ||
      v->xSetSystemCall(v, "write", (sqlite3_syscall_ptr)hook_write) != SQLITE_OK ||
      (real_pwrite &&
       v->xSetSystemCall(v, "pwrite", (sqlite3_syscall_ptr)hook_pwrite) != SQLITE_OK) ||
      (real_pwrite64 &&
       v->xSetSystemCall(v, "pwrite64", (sqlite3_syscall_ptr)hook_pwrite64) != SQLITE_OK))
    _exit(5);
}

/* Forks a writer that puts `data` (a file-stored blob) and is killed inside
 * the commit of its artifact row; returns 1 when it died that way. */
static int put_killed_in_commit(const char *ws, const void *data, size_t n) {
  pid_t w = fork();
  if (w == 0) {
    ag_store *st = NULL;
    if (ag_store_open(ws, 0, &st))
      _exit(3);
    die_in_next_commit();
    char h[65];
    ag_store_put(st, data, n, NULL, h);
    _exit(4); /* the commit went by without the hook firing */
  }
  int status = 0;
  waitpid(w, &status, 0);
  if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)) {
    fprintf(stderr, "writer was not killed in its commit (status %#x)\n", status);
    return 0;
  }
  return 1;
}

/* After a reopen: the artifact is either absent or intact, and check is clean.
 * Returns whether it is present. */
static int absent_or_intact(const char *ws, const char *hash) {
  ag_store *st = NULL;
  CHECK_EQ_INT(ag_store_open(ws, 0, &st), 0);
  if (!st)
    return 0;
  ag_artifact a;
  int rc = ag_store_artifact(st, hash, &a);
  CHECK(rc == 0 || rc == AG_ENOTFOUND);
  if (rc == 0)
    CHECK(blob_intact(st, hash));
  CHECK_EQ_INT(problems(st), 0);
  ag_store_close(st);
  return rc == 0;
}

/* The kill-in-commit tests' setup: a fresh workspace in a scratch directory
 * and a 64 KiB random blob (from seed) with its hash. */
typedef struct commit_case {
  char *dir;
  char ws[600];
  unsigned char *p;
  size_t n;
  char h[65];
} commit_case;

static void commit_case_init(commit_case *c, const char *tag, uint64_t seed) {
  c->dir = scratch_dir(tag);
  snprintf(c->ws, sizeof c->ws, "%s/ws", c->dir);
  ag_store *st = NULL;
  CHECK_EQ_INT(ag_store_open(c->ws, AG_STORE_CREATE, &st), 0);
  ag_store_close(st);
  c->n = 64 << 10;
  c->p = malloc(c->n);
  fill_random(c->p, c->n, seed);
  ag_sha256_hex(c->p, c->n, c->h);
}

static void commit_case_free(commit_case *c) {
  free(c->p);
  rm_rf(c->dir);
  free(c->dir);
}

/* The control: with nobody else around, the commit in doubt becomes a commit
 * when the workspace is opened again, and the blob is there. */
TEST(test_kill_in_commit) {
  commit_case c;
  commit_case_init(&c, "crash-commit", 11);
  CHECK(put_killed_in_commit(c.ws, c.p, c.n));
  CHECK_EQ_INT(absent_or_intact(c.ws, c.h), 1); /* recovered: the kill landed after the commit frame */
  commit_case_free(&c);
}

/* gc in a process that had the workspace open before the writer died: it does
 * not see the row in doubt, and must not delete the blob file of a row that
 * the next recovery brings back. The gc process then dies too (no clean close,
 * which would checkpoint and drop the frames in doubt). */
TEST(test_gc_after_kill_in_commit) {
  commit_case c;
  commit_case_init(&c, "crash-gc-commit", 12);
  int go[2], done[2];
  if (pipe(go) != 0 || pipe(done) != 0)
    abort();
  pid_t g = fork();
  if (g == 0) { /* the collector: open now, gc when told, then die */
    close(go[1]);
    close(done[0]);
    ag_store *gs = NULL;
    char r = ag_store_open(c.ws, 0, &gs) ? 'E' : 'O';
    if (write(done[1], &r, 1) != 1 || r != 'O' || read(go[0], &r, 1) != 1)
      _exit(3);
    ag_gc_opts o = {0, 0};
    ag_gc_report rep;
    r = ag_store_gc(gs, &o, &rep) ? 'E' : 'G';
    if (write(done[1], &r, 1) != 1)
      _exit(3);
    _exit(0); /* as if killed: no ag_store_close */
  }
  close(go[0]);
  close(done[1]);
  char r = 0;
  CHECK(read(done[0], &r, 1) == 1 && r == 'O');
  CHECK(put_killed_in_commit(c.ws, c.p, c.n));
  CHECK(write(go[1], "g", 1) == 1);
  CHECK(read(done[0], &r, 1) == 1 && r == 'G');
  int status;
  waitpid(g, &status, 0);
  close(go[1]);
  close(done[0]);
  absent_or_intact(c.ws, c.h);
  commit_case_free(&c);
}

/* ------------------------------------------------------------ power loss
 * kill -9 keeps the page cache: a write that never reached the disk survives
 * it. Here the writer runs under the power-loss simulation (store_test.h,
 * src/store/powerloss.c): at a random one of its file-system operations —
 * a blob write, fsync, mkdir or rename, a SQLite write, truncate or sync —
 * every write not followed by an fsync of its file, and every creation,
 * mkdir and rename not followed by an fsync of its directory, is undone on
 * disk and the writer exits. Every record it had reported committed must be
 * there, blob and row, and check must pass. ARGUS_POWERLOSS_ROUNDS overrides
 * the number of rounds (60). */
static size_t power_loss_round(const char *ws, const char *stash, long seed, long crash_at,
                               int *crashed) {
  int fds[2];
  if (pipe(fds) != 0)
    abort();
  rm_rf(stash);
  if (mkdir(stash, 0755) != 0)
    abort();
  pid_t w = fork();
  if (w == 0) {
    close(fds[0]);
    if (ag__powerloss_begin(stash, crash_at))
      _exit(5);
    writer(ws, seed, fds[1]);
    _exit(0);
  }
  close(fds[1]);
  ag_str buf = AG_STR_INIT;
  char chunk[4096];
  ssize_t k;
  while ((k = read(fds[0], chunk, sizeof chunk)) > 0)
    ag_str_append(&buf, chunk, (size_t)k);
  close(fds[0]);
  int status = 0;
  waitpid(w, &status, 0);
  *crashed = WIFEXITED(status) && WEXITSTATUS(status) == AG__POWERLOSS_EXIT;
  if (!*crashed)
    fprintf(stderr, "writer did not end in a simulated power loss (status %#x)\n", status);
  size_t before = nrecs;
  if (buf.len)
    parse_lines(buf.p, buf.len);
  ag_str_release(&buf);
  return nrecs - before;
}

TEST(test_power_loss) {
  const char *e = getenv("ARGUS_POWERLOSS_ROUNDS");
  int rounds = e ? atoi(e) : 60;
  char *dir = scratch_dir("powerloss");
  char ws[600], stash[600];
  snprintf(ws, sizeof ws, "%s/ws", dir);
  snprintf(stash, sizeof stash, "%s/stash", dir);
  ag_store *st = NULL;
  CHECK_EQ_INT(ag_store_open(ws, AG_STORE_CREATE, &st), 0);
  ag_store_close(st);
  uint64_t rng = 99;
  int bad = 0, crashes = 0, with_records = 0;
  uint64_t t0 = ag_now_ns();
  for (int i = 0; i < rounds; i++) {
    size_t first = nrecs;
    long crash_at = 1 + (long)(rng_next(&rng) % 1500);
    int crashed = 0;
    size_t got = power_loss_round(ws, stash, 5000 + i, crash_at, &crashed);
    crashes += crashed;
    with_records += got > 0;
    st = NULL;
    if (ag_store_open(ws, 0, &st)) {
      fprintf(stderr, "round %d: open: %s\n", i, ag_store_errmsg());
      bad++;
      continue;
    }
    for (size_t r = first; r < nrecs; r++)
      if (!verify(st, &recs[r])) {
        fprintf(stderr, "round %d (crash at operation %ld): record %zu (%c) lost\n", i, crash_at,
                r, recs[r].kind);
        bad++;
      }
    if (i % 10 == 9 && problems(st)) {
      fprintf(stderr, "round %d: check found problems\n", i);
      bad++;
    }
    ag_store_close(st);
  }
  st = NULL;
  CHECK_EQ_INT(ag_store_open(ws, 0, &st), 0);
  if (st) {
    for (size_t r = 0; r < nrecs; r++)
      if (!verify(st, &recs[r]))
        bad++;
    CHECK_EQ_INT(problems(st), 0);
    ag_store_close(st);
  }
  printf("%d power losses in %.1f s: %zu committed records verified\n", rounds,
         (double)(ag_now_ns() - t0) / 1e9, nrecs);
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(crashes, rounds);
  CHECK(with_records > rounds / 2); /* the losses landed after commits */
  free(recs);
  recs = NULL;
  nrecs = caprecs = 0;
  rm_rf(dir);
  free(dir);
}

RUN_TESTS(T(test_kill_during_create), T(test_kill_writers), T(test_kill_in_commit),
          T(test_gc_after_kill_in_commit), T(test_power_loss))
