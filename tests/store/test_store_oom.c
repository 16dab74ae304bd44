/* test_store_oom.c — out-of-memory fault loops for src/store (SQLite's own
 * discipline): every allocation of a scenario is made to fail once, in turn,
 * through ag_alloc_fail_at (SQLite's memory also comes from ag_malloc). Each
 * time the call that hit the failure must return a negative code with a
 * message, nothing may crash or leak (ASan/LSan in `make asan`), and the
 * workspace must reopen afterwards and pass ag_store_check.
 *
 * Workspaces live in /dev/shm when it exists (fsync is free there), so the
 * few thousand iterations take seconds. ARGUS_OOM_STRIDE=N tests every N-th
 * allocation only (for quick local runs); CI uses 1. */
#include "util.h"

#include "argus/core.h"
#include "check.h"

static const char *base_dir(void) {
  static char buf[256];
  if (!buf[0]) {
    if (access("/dev/shm", W_OK) == 0)
      snprintf(buf, sizeof buf, "/dev/shm");
    else
      snprintf(buf, sizeof buf, "%s", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  }
  return buf;
}

static long stride(void) {
  const char *s = getenv("ARGUS_OOM_STRIDE");
  long v = s ? atol(s) : 1;
  return v > 0 ? v : 1;
}

static int bad_failures; /* a failing call without a clean error */

/* Records a failed call: it must carry a negative code and a message. */
static int failed(int rc, const char *what) {
  if (rc >= 0 || !ag_store_errmsg()[0]) {
    fprintf(stderr, "%s: unclean failure rc=%d msg='%s'\n", what, rc, ag_store_errmsg());
    bad_failures++;
  }
  return 1;
}

#define STEP(call)                                                                                 \
  do {                                                                                             \
    int rc_ = (call);                                                                              \
    if (rc_ != 0)                                                               \
      return failed(rc_, #call);                                                                   \
  } while (0)

static unsigned char *big;
#define BIG (100 * 1024) /* compressed it still exceeds the inline limit */
#define FILESZ (20 * 1024) /* random: stored raw in objects/ */

/* What the first half leaves for the second. */
typedef struct state {
  char h1[65], h2[65], h3[65];
  int64_t v1, v2, q, task;
} state;

/* Everything a planner, a worker and the CLI do, once, in two halves (run
 * as two tests side by side). Each returns 1 when a call failed (then it
 * stops), 0 when all succeeded. */
static int scenario_a(ag_store *st, const char *dir, state *S) {
  char *h1 = S->h1, *h2 = S->h2, *h3 = S->h3;
  ag_put_opts ptx = {"ptx", 0};
  STEP(ag_store_put(st, ".version 8.0\n.target sm_90a\n// module", 37, &ptx, h1));
  STEP(ag_store_put(st, big, BIG, NULL, h2));
  char path[600];
  snprintf(path, sizeof path, "%s/file.bin", dir);
  STEP(ag_store_put_file(st, path, NULL, h3));
  void *d = NULL;
  size_t dl = 0;
  STEP(ag_store_get(st, h2, &d, &dl));
  ag_free(d);
  snprintf(path, sizeof path, "%s/out.bin", dir);
  STEP(ag_store_get_file(st, h3, path));
  ag_artifact a;
  STEP(ag_store_artifact(st, h1, &a));
  ag_version_spec vs = {0, h1, NULL, NULL, 0};
  int64_t v1 = 0, v2 = 0;
  STEP(ag_store_version_create(st, &vs, &v1));
  S->v1 = v1;
  ag_version_spec vs2 = {v1, h2, "trace", NULL, 0};
  STEP(ag_store_version_create(st, &vs2, &v2));
  int64_t *ids = NULL;
  size_t n = 0;
  STEP(ag_store_version_ancestry(st, v2, &ids, &n));
  ag_free(ids);
  ag_version ver;
  STEP(ag_store_version_get(st, v2, &ver));
  ag_store_version_release(&ver);
  json_t *qs = json_pack("{s:s}", "region", "gemm/mainloop");
  int64_t q = 0;
  int rc = ag_store_query_add(st, qs, v1, &q);
  json_decref(qs);
  if (rc)
    return failed(rc, "query_add");
  const char *in[] = {h1, h2};
  json_t *cfg = json_pack("{s:s,s:i}", "backend", "trace", "iters", 4);
  ag_store_task_spec ts = {AG_TASK_COLLECT, cfg, in, 2, "gpu0", q, NULL};
  ag_store_claim c;
  rc = ag_store_task_begin(st, &ts, 0, &c);
  if (rc) {
    json_decref(cfg);
    return failed(rc, "task_begin");
  }
  ag_put_opts ev = {"evidence", c.task_id};
  rc = ag_store_put(st, "evidence bytes", 14, &ev, h3);
  if (!rc) {
    ag_store_output o;
    snprintf(o.name, sizeof o.name, "evidence");
    memcpy(o.hash, h3, 65);
    ag_store_result r = {AG_STORE_TASK_OK, &o, 1, NULL};
    rc = ag_store_task_finish(st, c.task_id, &r);
  }
  if (!rc) {
    ag_store_claim m;
    rc = ag_store_task_begin(st, &ts, 0, &m); /* memoized */
    ag_free(m.outputs);
  }
  if (!rc) {
    ag_store_task_spec plan = {AG_TASK_SYNTHESIZE, cfg, in, 1, NULL, 0, NULL};
    ag_store_claim p;
    rc = ag_store_task_begin(st, &plan, AG_STORE_PLAN, &p);
  }
  json_decref(cfg);
  if (rc)
    return failed(rc, "task lifecycle");
  S->v2 = v2;
  S->q = q;
  S->task = c.task_id;
  return 0;
}

static int scenario_b(ag_store *st, const char *dir, state *S) {
  char rep[65], h1[65], *h2 = S->h2;
  int64_t v2 = S->v2, q = S->q;
  size_t n = 0;
  ag_store_claim c = {.task_id = S->task};
  int rc;
  ag_store_task t;
  STEP(ag_store_task_get(st, c.task_id, &t));
  ag_store_task_release(&t);
  ag_store_task *tl = NULL;
  STEP(ag_store_tasks(st, NULL, &tl, &n));
  ag_store_tasks_free(tl, n);
  STEP(ag_store_put(st, "{\"report\":true}", 15, NULL, rep));
  STEP(ag_store_report_add(st, q, rep));
  ag_store_query qq;
  STEP(ag_store_query_get(st, q, &qq));
  ag_store_query_release(&qq);
  ag_store_query *ql = NULL;
  STEP(ag_store_queries(st, NULL, &ql, &n));
  ag_store_queries_free(ql, n);
  ag_obj to = {AG_OBJ_VERSION, v2, ""};
  STEP(ag_store_ref_set(st, "gemm@traced", &to));
  ag_ref r;
  STEP(ag_store_ref_get(st, "gemm@traced", &r));
  ag_ref *refs = NULL;
  STEP(ag_store_refs(st, &refs, &n));
  ag_free(refs);
  ag_obj o;
  STEP(ag_store_resolve(st, "gemm@traced", &o));
  char prefix[8];
  snprintf(prefix, sizeof prefix, "%.6s", h2);
  STEP(ag_store_resolve(st, prefix, &o));
  ag_artifact *al = NULL;
  STEP(ag_store_artifacts(st, NULL, &al, &n));
  ag_free(al);
  ag_version *vl = NULL;
  STEP(ag_store_versions(st, NULL, &vl, &n));
  ag_store_versions_free(vl, n);
  ag_log_entry *log = NULL;
  STEP(ag_store_log(st, 0, &log, &n));
  ag_store_log_free(log, n);
  ag_store_stats stt;
  STEP(ag_store_stats_get(st, &stt));
  STEP(ag_store_batch_begin(st));
  rc = ag_store_put(st, "in a batch", 10, NULL, h1);
  if (rc) {
    ag_store_batch_abort(st);
    return failed(rc, "put in batch");
  }
  STEP(ag_store_batch_commit(st));
  ag_check_report cr;
  STEP(ag_store_check(st, &cr));
  ag_store_check_release(&cr);
  STEP(ag_store_ref_delete(st, "gemm@traced"));
  ag_gc_opts go = {0, 0};
  ag_gc_report gr;
  STEP(ag_store_gc(st, &go, &gr));
  ag_store_gc_release(&gr);
  return 0;
}

/* A fresh workspace from a template made once (creating one costs ~4000
 * SQLite allocations and milliseconds; copying its database, microseconds). */
static int from_template(const char *tmpl, const char *ws) {
  char src[500], dst[500];
  rm_rf(ws);
  snprintf(dst, sizeof dst, "%s/objects", ws);
  if (ag_mkdir_p(dst, 0755))
    return -1;
  snprintf(dst, sizeof dst, "%s/tmp", ws);
  if (ag_mkdir_p(dst, 0755))
    return -1;
  snprintf(src, sizeof src, "%s/workspace.db", tmpl);
  snprintf(dst, sizeof dst, "%s/workspace.db", ws);
  char *data = NULL;
  size_t len = 0;
  int rc = ag_file_read(src, &data, &len);
  if (!rc)
    rc = ag_file_write_atomic(dst, data, len);
  ag_free(data);
  return rc;
}

/* After a failure: the workspace must open cleanly and pass check. */
static int sound(const char *ws) {
  ag_store *st = NULL;
  if (ag_store_open(ws, AG_STORE_CREATE, &st)) {
    fprintf(stderr, "reopen failed: %s\n", ag_store_errmsg());
    return 0;
  }
  ag_check_report r;
  int ok = ag_store_check(st, &r) == 0 && r.nproblems == 0;
  for (size_t i = 0; i < r.nproblems; i++)
    fprintf(stderr, "problem: %s\n", r.problems[i]);
  ag_store_check_release(&r);
  ag_store_close(st);
  return ok;
}

TEST(test_oom_open) {
  char tmpl[300];
  snprintf(tmpl, sizeof tmpl, "%s/argus-oom-XXXXXX", base_dir());
  char *dir = mkdtemp(tmpl);
  CHECK(dir != NULL);
  char ws[400];
  snprintf(ws, sizeof ws, "%s/ws", dir);
  long k = 1, iters = 0, step = stride();
  int unsound = 0;
  for (;; k += step, iters++) { /* creating a workspace */
    rm_rf(ws);
    long c0 = ag_alloc_count();
    ag_alloc_fail_at(k);
    ag_store *st = NULL;
    int rc = ag_store_open(ws, AG_STORE_CREATE, &st);
    ag_alloc_fail_at(0);
    long used = ag_alloc_count() - c0;
    if (rc)
      failed(rc, "create");
    ag_store_close(st);
    if (!sound(ws))
      unsound++;
    if (used < k)
      break; /* no allocation left to fail */
  }
  for (k = 1;; k += step, iters++) { /* opening an existing one */
    long c0 = ag_alloc_count();
    ag_alloc_fail_at(k);
    ag_store *st = NULL;
    int rc = ag_store_open(ws, 0, &st);
    ag_alloc_fail_at(0);
    long used = ag_alloc_count() - c0;
    if (rc)
      failed(rc, "open");
    ag_store_close(st);
    if (used < k)
      break;
  }
  printf("open: %ld fault points\n", iters);
  CHECK(iters > 50);
  CHECK_EQ_INT(unsound, 0);
  CHECK_EQ_INT(bad_failures, 0);
  rm_rf(dir);
}

static void oom_operations(int part) {
  char tmpl[300];
  snprintf(tmpl, sizeof tmpl, "%s/argus-oom-XXXXXX", base_dir());
  char *dir = mkdtemp(tmpl);
  CHECK(dir != NULL);
  char ws[400], file[400], tmplws[400];
  snprintf(ws, sizeof ws, "%s/ws", dir);
  snprintf(tmplws, sizeof tmplws, "%s/template", dir);
  ag_store *t0 = NULL;
  CHECK_EQ_INT(ag_store_open(tmplws, AG_STORE_CREATE, &t0), 0);
  ag_store_close(t0); /* the last close folds the WAL into workspace.db */
  snprintf(file, sizeof file, "%s/file.bin", dir);
  big = malloc(BIG);
  fill_trace(big, BIG, 3);
  unsigned char *fb = malloc(FILESZ);
  fill_random(fb, FILESZ, 4);
  CHECK_EQ_INT(ag_file_write_atomic(file, fb, FILESZ), 0);
  free(fb);
  long k = 1, iters = 0, step = stride();
  int unsound = 0, completed = 0;
  for (;; k += step, iters++) {
    ag_store *st = NULL;
    if (from_template(tmplws, ws) || ag_store_open(ws, 0, &st)) {
      fprintf(stderr, "setup: %s\n", ag_store_errmsg());
      CHECK(0);
      break;
    }
    state S;
    memset(&S, 0, sizeof S);
    if (part == 2 && scenario_a(st, dir, &S)) { /* set-up, without faults */
      CHECK(0);
      ag_store_close(st);
      break;
    }
    long c0 = ag_alloc_count();
    ag_alloc_fail_at(k);
    int stopped = part == 1 ? scenario_a(st, dir, &S) : scenario_b(st, dir, &S);
    ag_alloc_fail_at(0);
    long used = ag_alloc_count() - c0;
    ag_store_close(st);
    if (!sound(ws))
      unsound++;
    if (used < k) {
      completed = !stopped;
      break;
    }
  }
  printf("operations, part %d: %ld fault points\n", part, iters);
  CHECK(completed); /* without a fault the scenario runs to the end */
  CHECK(iters > 500);
  CHECK_EQ_INT(unsound, 0);
  CHECK_EQ_INT(bad_failures, 0);
  free(big);
  rm_rf(dir);
}

TEST(test_oom_operations_a) { oom_operations(1); }
TEST(test_oom_operations_b) { oom_operations(2); }

RUN_TESTS(T(test_oom_open), T(test_oom_operations_a), T(test_oom_operations_b))
