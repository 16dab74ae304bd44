/* test_store_concurrency.c — many processes on one workspace at once.
 *
 * Four writer processes put blobs, derive versions, move refs and run tasks
 * (ten task keys are shared by all four, so they race for the same work);
 * two reader processes list, read and resolve; a collector runs gc; and the
 * parent runs the argus binary (`ws ls`, `ws log --json`, `ws check`)
 * meanwhile. No call may fail (in particular never with "database is
 * locked"); afterwards ag_store_check passes, every record a writer committed
 * is there, and each shared task ran exactly once — all four writers got the
 * same memoized answer. */
#include "util.h"

#include "argus/core.h"
#include "check.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#define WRITERS 4
#define READERS 2
#define OPS 120
#define SHARED 10

static char ws[600], dir_path[600];

static void sleep_us(long us) {
  struct timespec t = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&t, NULL);
}

static void die(FILE *log, const char *what) {
  fprintf(log, "FAIL %s: %s\n", what, ag_store_errmsg());
  fclose(log);
  _exit(1);
}

/* Each writer writes its committed records to its own file:
 *   R name hash | V id module | S k task_id output_hash claimed(0/1) */
static void writer(int w) {
  char path[700];
  snprintf(path, sizeof path, "%s/writer%d.txt", dir_path, w);
  FILE *log = fopen(path, "w");
  ag_store *st = NULL;
  if (ag_store_open(ws, 0, &st))
    die(log, "open");
  uint64_t rng = (uint64_t)w * 1000003 + 17;
  int64_t last_v = 0;
  for (int i = 0; i < OPS; i++) {
    size_t n = (rng_next(&rng) % 8 == 0) ? 40000 + rng_next(&rng) % 400000 : 50 + rng_next(&rng) % 3000;
    unsigned char *p = malloc(n);
    fill_trace(p, n, (uint64_t)w * 100000 + (uint64_t)i);
    char h[65];
    ag_put_opts po = {"evidence", 0};
    if (ag_store_put(st, p, n, &po, h))
      die(log, "put");
    free(p);
    switch (i % 3) {
    case 0: {
      char name[64];
      snprintf(name, sizeof name, "w%d/r%d", w, i);
      ag_obj t = {AG_OBJ_ARTIFACT, 0, ""};
      memcpy(t.hash, h, 65);
      if (ag_store_ref_set(st, name, &t))
        die(log, "ref_set");
      fprintf(log, "R %s %s\n", name, h);
      break;
    }
    case 1: {
      char tr[32];
      snprintf(tr, sizeof tr, "step%d", i);
      ag_version_spec vs = {last_v, h, last_v ? tr : NULL, NULL, 0};
      int64_t v;
      if (ag_store_version_create(st, &vs, &v))
        die(log, "version_create");
      fprintf(log, "V %lld %s\n", (long long)v, h);
      last_v = v;
      break;
    }
    default: { /* a shared task: whoever claims it runs it, the rest reuse it */
      int k = (i / 3) % SHARED;
      json_t *cfg = json_pack("{s:i}", "shared", k);
      ag_store_task_spec ts = {AG_TASK_SYNTHESIZE, cfg, NULL, 0, NULL, 0, NULL};
      ag_store_claim c;
      int rc, claimed = 0;
      uint64_t t0 = ag_now_ns();
      while ((rc = ag_store_task_begin(st, &ts, 0, &c)) == AG_EBUSY &&
             strstr(ag_store_errmsg(), "already running") && ag_now_ns() - t0 < 60000000000ull)
        sleep_us(2000); /* someone else runs it: wait for the answer */
      json_decref(cfg);
      if (rc)
        die(log, "task_begin");
      char out[65];
      if (c.status == AG_STORE_TASK_RUNNING) {
        claimed = 1;
        char body[64];
        int bl = snprintf(body, sizeof body, "shared %d computed by writer %d", k, w);
        ag_put_opts eo = {"json", c.task_id};
        if (ag_store_put(st, body, (size_t)bl, &eo, out))
          die(log, "put output");
        ag_store_output o;
        snprintf(o.name, sizeof o.name, "result");
        memcpy(o.hash, out, 65);
        ag_store_result r = {AG_STORE_TASK_OK, &o, 1, NULL};
        if (ag_store_task_finish(st, c.task_id, &r))
          die(log, "task_finish");
      } else if (c.status == AG_STORE_TASK_OK && c.noutputs == 1) {
        memcpy(out, c.outputs[0].hash, 65);
      } else {
        fprintf(log, "FAIL shared task %d: status %d outputs %zu\n", k, (int)c.status,
                c.noutputs);
        fclose(log);
        _exit(1);
      }
      ag_free(c.outputs);
      fprintf(log, "S %d %lld %s %d\n", k, (long long)c.task_id, out, claimed);
    }
    }
    fflush(log);
  }
  ag_store_close(st);
  fclose(log);
  _exit(0);
}

static void reader(int r) {
  ag_store *st = NULL;
  if (ag_store_open(ws, 0, &st))
    _exit(10);
  for (int i = 0; i < 150; i++) {
    ag_artifact *a = NULL;
    size_t n = 0;
    ag_list_opts lo = {10, 0, NULL};
    if (ag_store_artifacts(st, &lo, &a, &n))
      _exit(11);
    for (size_t k = 0; k < n; k++) {
      void *d = NULL;
      size_t dl = 0;
      int rc = ag_store_get(st, a[k].hash, &d, &dl);
      if (rc) {
        fprintf(stderr, "reader %d: get: %s\n", r, ag_store_errmsg());
        _exit(12);
      }
      ag_free(d);
    }
    ag_free(a);
    ag_log_entry *e = NULL;
    if (ag_store_log(st, 20, &e, &n))
      _exit(13);
    ag_store_log_free(e, n);
    ag_store_stats s;
    if (ag_store_stats_get(st, &s))
      _exit(14);
    ag_ref *refs = NULL;
    if (ag_store_refs(st, &refs, &n))
      _exit(15);
    ag_free(refs);
  }
  ag_store_close(st);
  _exit(0);
}

static void collector(void) {
  ag_store *st = NULL;
  if (ag_store_open(ws, 0, &st))
    _exit(20);
  for (int i = 0; i < 30; i++) {
    ag_gc_opts o = {0, 3600}; /* everything is fresh: nothing may go */
    ag_gc_report r;
    if (ag_store_gc(st, &o, &r)) {
      fprintf(stderr, "collector: %s\n", ag_store_errmsg());
      _exit(21);
    }
    if (r.nremoved)
      _exit(22);
    ag_store_gc_release(&r);
    sleep_us(5000);
  }
  ag_store_close(st);
  _exit(0);
}

static int run_cli(const char *const *args) {
  const char *argv[16];
  int n = 0;
  const char *b = getenv("ARGUS_BIN");
  argv[n++] = b ? b : "argus";
  argv[n++] = "--workspace";
  argv[n++] = ws;
  for (int i = 0; args[i]; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  ag_proc_opts o = {.argv = argv, .capture_out = &out, .capture_err = &err, .timeout_s = 120};
  ag_proc_result r;
  int rc = ag_proc_run(&o, &r);
  int ok = rc == 0 && r.exited && r.exit_code == 0 && !strstr(ag_str_cstr(&err), "locked");
  if (!ok)
    fprintf(stderr, "argus %s %s: exit %d\n%s\n", args[0], args[1], r.exit_code,
            ag_str_cstr(&err));
  ag_str_release(&out);
  ag_str_release(&err);
  return ok;
}

TEST(test_many_processes) {
  char *d = scratch_dir("conc");
  snprintf(dir_path, sizeof dir_path, "%s", d);
  snprintf(ws, sizeof ws, "%s/ws", d);
  ag_store *st = NULL;
  CHECK_EQ_INT(ag_store_open(ws, AG_STORE_CREATE, &st), 0);
  ag_store_close(st);
  pid_t pids[WRITERS + READERS + 1];
  int np = 0;
  for (int w = 0; w < WRITERS; w++)
    if ((pids[np++] = fork()) == 0)
      writer(w);
  for (int r = 0; r < READERS; r++)
    if ((pids[np++] = fork()) == 0)
      reader(r);
  if ((pids[np++] = fork()) == 0)
    collector();
  /* the argus binary, meanwhile */
  int cli_ok = 0, cli_runs = 0;
  static const char *const ls[] = {"ws", "ls", NULL};
  static const char *const log[] = {"--json", "ws", "log", NULL};
  static const char *const chk[] = {"ws", "check", NULL};
  for (int i = 0; i < 12; i++) {
    cli_ok += run_cli(ls);
    cli_ok += run_cli(log);
    cli_runs += 2;
    if (i % 4 == 3) {
      cli_ok += run_cli(chk);
      cli_runs++;
    }
  }
  for (int i = 0; i < np; i++) {
    int status = 0;
    waitpid(pids[i], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      fprintf(stderr, "process %d (%s) exited with %d\n", i,
              i < WRITERS ? "writer" : i < WRITERS + READERS ? "reader" : "collector",
              WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  CHECK_EQ_INT(cli_ok, cli_runs);
  /* verify what every writer reported */
  CHECK_EQ_INT(ag_store_open(ws, 0, &st), 0);
  int64_t shared_id[SHARED] = {0};
  char shared_out[SHARED][65];
  int claims[SHARED] = {0};
  size_t records = 0;
  for (int w = 0; w < WRITERS; w++) {
    char path[700], line[300];
    snprintf(path, sizeof path, "%s/writer%d.txt", dir_path, w);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    while (f && fgets(line, sizeof line, f)) {
      records++;
      char a[80], h[65];
      long long id;
      int k, claimed;
      if (!strncmp(line, "FAIL", 4)) {
        fprintf(stderr, "writer %d: %s", w, line);
        CHECK(0);
      } else if (sscanf(line, "R %79s %64s", a, h) == 2) {
        ag_ref r;
        CHECK_EQ_INT(ag_store_ref_get(st, a, &r), 0);
        CHECK_EQ_STR(r.target.hash, h);
      } else if (sscanf(line, "V %lld %64s", &id, h) == 2) {
        ag_version v;
        CHECK_EQ_INT(ag_store_version_get(st, id, &v), 0);
        CHECK_EQ_STR(v.module, h);
        ag_store_version_release(&v);
      } else if (sscanf(line, "S %d %lld %64s %d", &k, &id, h, &claimed) == 4) {
        if (!shared_id[k]) {
          shared_id[k] = id;
          memcpy(shared_out[k], h, 65);
        }
        CHECK_EQ_INT(id, shared_id[k]); /* everyone got the same answer */
        CHECK_EQ_STR(h, shared_out[k]);
        claims[k] += claimed;
      } else {
        fprintf(stderr, "bad line: %s", line);
        CHECK(0);
      }
    }
    if (f)
      fclose(f);
  }
  CHECK_EQ_INT(records, WRITERS * OPS);
  for (int k = 0; k < SHARED; k++)
    CHECK_EQ_INT(claims[k], 1); /* ran exactly once */
  ag_check_report r;
  CHECK_EQ_INT(ag_store_check(st, &r), 0);
  for (size_t i = 0; i < r.nproblems; i++)
    fprintf(stderr, "problem: %s\n", r.problems[i]);
  CHECK_EQ_INT(r.nproblems, 0);
  ag_store_check_release(&r);
  ag_store_stats s;
  CHECK_EQ_INT(ag_store_stats_get(st, &s), 0);
  CHECK_EQ_U64(s.tasks, SHARED);
  printf("%d writers, %d readers, gc and %d argus runs: %zu records verified, %llu artifacts\n",
         WRITERS, READERS, cli_runs, records, (unsigned long long)s.artifacts);
  ag_store_close(st);
  rm_rf(d);
  free(d);
}

RUN_TESTS(T(test_many_processes))
