/* test_memo_key.c — what a Collect task's key holds and how tasks end, on
 * the CPU (docs/observe.md, "What a collection's key holds"). The harness is
 * a shell script that fails (there is no GPU here), so collections run for
 * real and end in failure: the keys, the task records and the sharing of
 * one execution among concurrent observes are checked on that. */
#include "argus/evidence.h"
#include "argus/observe.h"
#include "argus/store.h"
#include "check.h"
#include "../../src/collect/evwrite.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char ws[64], ptx[512];

static void setup(void) {
  if (ws[0])
    return;
  snprintf(ws, sizeof ws, "/tmp/argus-memo-XXXXXX");
  if (!mkdtemp(ws))
    exit(1);
  const char *bd = getenv("ARGUS_BUILD_DIR");
  char *abs = realpath(bd ? bd : "build", NULL);
  snprintf(ptx, sizeof ptx, "%s/tests/data/ptx/overhead.ptx", abs ? abs : "build");
  free(abs);
  if (access(ptx, R_OK) != 0) {
    printf("no PTX corpus (%s): skipped\n", ptx);
    exit(77);
  }
}

/* Writes <ws>/<name>.json whose harness is <ws>/<script> with `args`, and
 * the script itself with `body`. */
static void write_spec(const char *name, const char *script, const char *body, const char *args) {
  char path[256];
  ag_str s = AG_STR_INIT;
  snprintf(path, sizeof path, "%s/%s", ws, script);
  ag_str_printf(&s, "#!/bin/sh\n%s\n", body);
  ag_file_write_atomic(path, s.p, s.len);
  chmod(path, 0755);
  ag_str_clear(&s);
  ag_str_printf(&s,
                "{\"name\": \"overhead\", \"module\": {\"ptx\": \"%s\"}, \"run\": [\"%s/%s\"%s]}",
                ptx, ws, script, args);
  snprintf(path, sizeof path, "%s/%s.json", ws, name);
  ag_file_write_atomic(path, s.p, s.len);
  ag_str_release(&s);
}

typedef struct req {
  const char *spec, *workspace, *signals;
  int ndev;
  unsigned records;
  double timeout;
  const char *region, *scope; /* NULL: "work", everything */
} req;

static int observe(const req *q, ag_observe_result *r) {
  char spec[256], wsdir[256];
  snprintf(spec, sizeof spec, "%s/%s.json", ws, q->spec);
  snprintf(wsdir, sizeof wsdir, "%s/%s", ws, q->workspace);
  const char *sigs[] = {q->signals ? q->signals : "duration"};
  ag_observe_opts o = {.spec = spec, .workspace = wsdir,
                       .region = q->region ? q->region : "work", .scope = q->scope,
                       .signals = sigs, .nsignals = 1, .ndevices = q->ndev,
                       .records_per_warp = q->records,
                       .timeout_s = q->timeout > 0 ? q->timeout : 30};
  ag_diags d;
  ag_diags_init(&d);
  int rc = ag_observe(&o, &d, r);
  ag_diags_release(&d);
  return rc;
}

static ag_task *find(const ag_plan *p, const char *op) {
  for (size_t i = 0; p && i < p->tasks.n; i++)
    if (!strcmp(p->tasks.v[i]->op, op))
      return p->tasks.v[i];
  return NULL;
}

/* The traced run's collect (a duration query also has the trace-free
 * timing run, backend "time"). */
static ag_task *find_trace_collect(const ag_plan *p) {
  for (size_t i = 0; p && i < p->tasks.n; i++) {
    ag_task *t = p->tasks.v[i];
    json_t *b = json_array_get(json_object_get(t->config, "backends"), 0);
    if (!strcmp(t->op, "collect") && b && !strcmp(json_string_value(b), "trace"))
      return t;
  }
  return NULL;
}

/* The collect task's key of one observe (the collection fails: no GPU
 * harness here, but it is keyed and recorded first). */
static void collect_key(const req *q, char key[65]) {
  ag_observe_result r;
  key[0] = 0;
  CHECK_EQ_INT(observe(q, &r), 0);
  ag_task *c = find(r.plan, "collect");
  CHECK(c != NULL);
  if (c)
    snprintf(key, 65, "%s", c->key);
  CHECK_EQ_INT((int)strlen(key), 64);
  ag_observe_result_release(&r);
}

TEST(test_collect_key_holds_every_harness_input) {
  setup();
  write_spec("base", "h.sh", "exit 3", "");
  write_spec("size", "h.sh", "exit 3", ", \"--size\", \"1024\"");
  req q = {"base", "ws-key", NULL, 1, 0, 0, NULL, NULL};
  char k0[65], k1[65];
  collect_key(&q, k0);
  collect_key(&q, k1);
  CHECK_EQ_STR(k0, k1); /* the same request: the same key */
  /* the problem size in the spec's run */
  q.spec = "size";
  collect_key(&q, k1);
  CHECK(strcmp(k0, k1) != 0);
  q.spec = "base";
  /* --records and --timeout */
  q.records = 4096;
  collect_key(&q, k1);
  CHECK(strcmp(k0, k1) != 0);
  q.records = 0;
  q.timeout = 31;
  collect_key(&q, k1);
  CHECK(strcmp(k0, k1) != 0);
  q.timeout = 0;
  /* the environment the harness sees: CUDA's variables, ARGUS_KEY_ENV's names */
  setenv("CUDA_MEMO_TEST", "1", 1);
  collect_key(&q, k1);
  CHECK(strcmp(k0, k1) != 0);
  unsetenv("CUDA_MEMO_TEST");
  setenv("MEMO_TEST_SIZE", "2048", 1);
  collect_key(&q, k1);
  CHECK_EQ_STR(k0, k1); /* not a variable that is part of the key */
  setenv("ARGUS_KEY_ENV", "OTHER,MEMO_TEST_SIZE", 1);
  collect_key(&q, k1);
  CHECK(strcmp(k0, k1) != 0);
  unsetenv("ARGUS_KEY_ENV");
  unsetenv("MEMO_TEST_SIZE");
  collect_key(&q, k1);
  CHECK_EQ_STR(k0, k1);
  /* the harness program's content (same path, same argv) */
  write_spec("base", "h.sh", "exit 4", "");
  collect_key(&q, k1);
  CHECK(strcmp(k0, k1) != 0);
}

/* Keys are built from canonical inputs only: the compiler's log (it quotes
 * its own compile time) never feeds one, so the same request in two fresh
 * workspaces makes the same keys. */
TEST(test_keys_are_canonical) {
  setup();
  write_spec("canon", "c.sh", "exit 3", "");
  req a = {"canon", "ws-canon-a", NULL, 1, 0, 0, NULL, NULL};
  req b = {"canon", "ws-canon-b", NULL, 1, 0, 0, NULL, NULL};
  ag_observe_result ra, rb;
  CHECK_EQ_INT(observe(&a, &ra), 0);
  CHECK_EQ_INT(observe(&b, &rb), 0);
  static const char *const ops[] = {"transform.traced", "compile", "collect"};
  for (int i = 0; i < 3; i++) {
    ag_task *ta = find(ra.plan, ops[i]), *tb = find(rb.plan, ops[i]);
    CHECK(ta && tb && ta->status != AG_TS_CACHED && tb->status != AG_TS_CACHED);
    if (ta && tb)
      CHECK_EQ_STR(ta->key, tb->key);
  }
  ag_observe_result_release(&ra);
  ag_observe_result_release(&rb);
}

/* Without a GPU the collection ends "failed" with that reason in the
 * workspace, at once: never left "running" for a later run to call
 * "abandoned". */
TEST(test_no_gpu_task_ends_with_its_reason) {
  setup();
  write_spec("nogpu", "n.sh", "exit 3", "");
  req q = {"nogpu", "ws-nogpu", "duration", 0, 0, 0, NULL, NULL};
  ag_observe_result r;
  for (int round = 0; round < 2; round++) {
    CHECK_EQ_INT(observe(&q, &r), 0);
    ag_task *c = find(r.plan, "collect");
    CHECK(c && c->status == AG_TS_FAILED && c->memo_id > 0);
    int64_t id = c ? c->memo_id : 0;
    ag_observe_result_release(&r);
    char wsdir[256];
    snprintf(wsdir, sizeof wsdir, "%s/ws-nogpu", ws);
    ag_store *st = NULL;
    CHECK_EQ_INT(ag_store_open(wsdir, 0, &st), 0);
    ag_store_task *ts = NULL;
    size_t n = 0;
    CHECK_EQ_INT(ag_store_tasks(st, NULL, &ts, &n), 0);
    int found = 0;
    for (size_t i = 0; i < n; i++) {
      CHECK(ts[i].status != AG_STORE_TASK_RUNNING);
      CHECK(!ts[i].error || !strstr(ts[i].error, "abandoned"));
      if (ts[i].id == id) {
        found = 1;
        CHECK_EQ_INT(ts[i].status, AG_STORE_TASK_FAILED);
        CHECK_CONTAINS(ts[i].error, "needs a GPU");
      }
    }
    CHECK(found);
    ag_store_tasks_free(ts, n);
    ag_store_close(st);
  }
}

/* Three identical observes at once on one workspace: each task runs once;
 * the others take its result, here the harness's failure with its reason
 * (the harness counts its runs in a file and takes 10 s, so they overlap
 * even when CI's load starts one process seconds after the others: at 4 s one
 * started after the first run had failed and ran it again;
 * the trace-free timing run before it succeeds). */
TEST(test_concurrent_identical_observes_share_one_run) {
  setup();
  char count[256], body[1024];
  snprintf(count, sizeof count, "%s/runs.txt", ws);
  /* the trace-free timing run succeeds (one timed launch); the trace fails */
  snprintf(body, sizeof body,
           "if [ \"$ARGUS_COLLECT\" = time ]; then echo '{\"format\":\"argus-timing\","
           "\"version\":1,\"collect\":\"time\",\"launches_total\":1,\"timed\":1,"
           "\"launches\":[{\"launch\":0,\"kernel\":\"overhead_compute\",\"grid\":[1,1,1],"
           "\"block\":[32,1,1],\"shared_bytes\":0,\"ns\":1000.0,\"registers\":8,"
           "\"ctas_per_sm\":8,\"recorded\":false,\"why\":\"timing run (nothing is "
           "recorded)\"}]}' > \"$ARGUS_OUT/timing.json\"; exit 0; fi\n"
           "echo run >> '%s'\nsleep 10\nexit 3",
           count);
  write_spec("conc", "k.sh", body, "");
  int go[2];
  CHECK_EQ_INT(pipe(go), 0);
  pid_t kids[3];
  for (int i = 0; i < 3; i++) {
    if ((kids[i] = fork()) == 0) {
      char c;
      close(go[1]);
      if (read(go[0], &c, 1) < 0)
        _exit(90);
      req q = {"conc", "ws-conc", "duration", 1, 0, 0, NULL, NULL};
      ag_observe_result r;
      if (observe(&q, &r))
        _exit(91);
      ag_task *col = find_trace_collect(r.plan), *cc = find(r.plan, "compile");
      /* 10 + 1 if this process ran the collection, + 2 if it ran the compile */
      int code = 10 + (col && col->ran) + 2 * (cc && cc->ran);
      if (!col || col->status != AG_TS_FAILED || !col->error || !strstr(col->error, "exit 3")) {
        fprintf(stderr, "collect: %s\n", col && col->error ? col->error : "(none)");
        code = 92;
      }
      ag_observe_result_release(&r);
      _exit(code);
    }
  }
  close(go[0]);
  CHECK_EQ_INT((int)write(go[1], "ggg", 3), 3);
  close(go[1]);
  int ran_collect = 0, ran_compile = 0;
  for (int i = 0; i < 3; i++) {
    int st = 0;
    waitpid(kids[i], &st, 0);
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (code < 10 || code > 13)
      fprintf(stderr, "observe process %d: status %d\n", i, code);
    CHECK(code >= 10 && code <= 13);
    ran_collect += code >= 10 && (code - 10) & 1;
    ran_compile += code >= 10 && ((code - 10) & 2) != 0;
  }
  CHECK_EQ_INT(ran_collect, 1);
  CHECK_EQ_INT(ran_compile, 1);
  char *text = NULL;
  size_t len = 0;
  CHECK_EQ_INT(ag_file_read(count, &text, &len), 0);
  CHECK_EQ_INT((int)len, 4); /* one "run\n": the harness ran once */
  ag_free(text);
}

/* ------------------------------------------------------------------
 * This program as a harness (argv[1] = as_harness or as_other_harness,
 * under a collection's environment): it writes evidence the way the host
 * runtime does, one warp with one occurrence of each region of the probe
 * table, naming the variant it was given, or, as another build would, a
 * variant that is not this plan's. Outside a collection both do nothing. */
static void write_evidence(int other_build) {
  const char *out = getenv("ARGUS_OUT"), *sites = getenv("ARGUS_SITES");
  const char *vid = getenv("ARGUS_VARIANT_ID");
  if (!out || !sites)
    return;
  char *pj = NULL;
  size_t pl = 0;
  if (ag_file_read(sites, &pj, &pl))
    exit(20);
  json_t *pt = json_loadb(pj, pl, 0, NULL);
  static ag_ev_meta meta[1];
  static ag_ev_record rec[64];
  uint32_t n = 0;
  uint64_t clk = 1000000;
  size_t i;
  json_t *x;
  json_array_foreach(json_object_get(pt, "sites"), i, x) {
    const char *k = json_string_value(json_object_get(x, "kind"));
    if (k && !strcmp(k, "region") && n < 63) {
      rec[n++] = (ag_ev_record){(uint32_t)clk, (uint32_t)i, (uint32_t)(clk + 900),
                                AG_EV_NO_ITER ^ AG_EV_ITER_BIAS};
      clk += 1000;
    }
  }
  meta[0] = (ag_ev_meta){0};
  meta[0].clock_entry = 1000000 - 10;
  meta[0].gtime_entry = 5000000;
  meta[0].clock_exit = clk + 10;
  meta[0].gtime_exit = 5000000 + (clk - 1000000 + 20) / 2;
  meta[0].count = meta[0].max_count = n;
  meta[0].flags = AG_EV_EXITED;
  char path[1024], err[256];
  snprintf(path, sizeof path, "%s/%s", out, AG_EV_FILE_NAME);
  ag_evw *w = NULL;
  ag_evw_launch L = {0, "overhead_compute", {1, 1, 1}, {32, 1, 1}, 0, 1, 1, 64, 64, meta, rec, 0, 0, 0, 0, 0};
  ag_str h = AG_STR_INIT;
  ag_str_printf(&h,
                "\"device\":{\"name\":\"Simulated\"},\"clock\":{\"sm_hz\":2000000000.0},"
                "\"variant\":{\"id\":\"%s\"},\"probes\":%.*s",
                other_build ? "feedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedface"
                            : (vid ? vid : ""),
                (int)pl, pj);
  if (ag_evw_open(path, &w, err, sizeof err) || ag_evw_launch_add(w, &L, err, sizeof err) ||
      ag_evw_close(w, ag_str_cstr(&h), 1, err, sizeof err)) {
    fprintf(stderr, "harness: %s\n", err);
    exit(21);
  }
  ag_str_release(&h);
  json_decref(pt);
  ag_free(pj);
  exit(0);
}

TEST(as_harness) { write_evidence(0); }
TEST(as_other_harness) { write_evidence(1); }
/* The same, except that a run of a variant with no async probe (the
 * reference) fails. */
TEST(as_noref_harness) {
  const char *sites = getenv("ARGUS_SITES");
  char *pj = NULL;
  size_t pl = 0;
  if (!sites || ag_file_read(sites, &pj, &pl))
    return;
  int probe = strstr(pj, "\"async\"") != NULL;
  ag_free(pj);
  if (!probe)
    exit(3);
  write_evidence(0);
}

static void harness_spec_of(const char *name, const char *mode, const char *module) {
  char self[1024] = "";
  ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
  self[k > 0 ? k : 0] = 0;
  char path[256];
  ag_str s = AG_STR_INIT;
  ag_str_printf(&s, "{\"name\": \"overhead\", \"module\": {\"ptx\": \"%s\"}, \"run\": [\"%s\", "
                    "\"%s\"]}",
                module, self, mode);
  snprintf(path, sizeof path, "%s/%s.json", ws, name);
  ag_file_write_atomic(path, s.p, s.len);
  ag_str_release(&s);
}

static void harness_spec(const char *name, const char *mode) { harness_spec_of(name, mode, ptx); }

/* The report joins only evidence of this program version: evidence that
 * names another build's variant is listed in not_joined with the reason,
 * its values are not reported, and the signal is missing; this program's
 * own evidence is joined. */
TEST(test_report_lists_evidence_not_joined) {
  setup();
  harness_spec("mine", "as_harness");
  harness_spec("other", "as_other_harness");
  req q = {"mine", "ws-join", "duration", 1, 0, 0, NULL, NULL};
  ag_observe_result r;
  CHECK_EQ_INT(observe(&q, &r), 0);
  ag_task *c = find_trace_collect(r.plan);
  CHECK(c && c->status == AG_TS_OK);
  if (c && c->error)
    fprintf(stderr, "collect: %s\n", c->error);
  CHECK_EQ_INT((int)json_array_size(json_object_get(r.report, "not_joined")), 0);
  size_t i;
  json_t *v;
  int counts = 0;
  json_array_foreach(json_object_get(r.report, "values"), i, v) counts +=
      !strcmp(json_string_value(json_object_get(v, "stat")), "count") &&
      json_integer_value(json_object_get(v, "value")) == 1;
  CHECK(counts >= 1);
  ag_observe_result_release(&r);
  q.spec = "other";
  CHECK_EQ_INT(observe(&q, &r), 0);
  c = find_trace_collect(r.plan);
  CHECK(c && c->status == AG_TS_OK);
  json_t *nj = json_object_get(r.report, "not_joined");
  CHECK_EQ_INT((int)json_array_size(nj), 1);
  CHECK_CONTAINS(json_string_value(json_object_get(json_array_get(nj, 0), "why")),
                 "different program versions");
  CHECK_CONTAINS(json_string_value(json_object_get(json_array_get(nj, 0), "why")),
                 "variant feedfacefeed");
  CHECK_CONTAINS(json_string_value(json_object_get(json_array_get(nj, 0), "what")), "duration");
  CHECK_EQ_INT((int)json_array_size(json_object_get(r.report, "values")), 0);
  CHECK_CONTAINS(
      json_string_value(json_object_get(json_array_get(json_object_get(r.report, "missing"), 0),
                                        "why")),
      "not this program's");
  ag_observe_result_release(&r);
}

/* async_latency joins a reference run and a probe run per (site,
 * iteration): each run whose evidence is another build's is listed in
 * not_joined and left out; this program's own runs are joined. The counting
 * run reads only this program's reference: on its own build it may drop
 * probes (the stand-in harness runs no kernel, so no marker began), on
 * another build's it drops nothing. */
TEST(test_async_runs_of_another_build_not_joined) {
  setup();
  char tma[600];
  snprintf(tma, sizeof tma, "%.*s/tma_probe.ptx", (int)(strrchr(ptx, '/') - ptx), ptx);
  if (access(tma, R_OK) != 0) {
    printf("no %s: skipped\n", tma);
    exit(77);
  }
  harness_spec_of("amine", "as_harness", tma);
  harness_spec_of("aother", "as_other_harness", tma);
  req q = {"amine", "ws-async", "async_latency", 1, 0, 0, "mainloop", "iter=0:1"};
  ag_observe_result r;
  CHECK_EQ_INT(observe(&q, &r), 0);
  int runs = 0, ok = 0, counted = 0;
  for (size_t i = 0; r.plan && i < r.plan->tasks.n; i++)
    if (r.plan->tasks.v[i]->type == AG_TASK_COLLECT) {
      const ag_task *t = r.plan->tasks.v[i];
      const char *a = json_string_value(json_object_get(t->config, "absent"));
      runs++;
      ok += t->status == AG_TS_OK;
      counted += t->status == AG_TS_SKIPPED && a && !strcmp(a, "counted");
    }
  CHECK(runs >= 2 && ok >= 1 && ok + counted == runs); /* the reference, probes run or dropped */
  CHECK_EQ_INT((int)json_array_size(json_object_get(r.report, "not_joined")), 0);
  ag_observe_result_release(&r);
  q.spec = "aother";
  CHECK_EQ_INT(observe(&q, &r), 0);
  json_t *nj = json_object_get(r.report, "not_joined");
  CHECK_EQ_INT((int)json_array_size(nj), runs); /* every run: nothing dropped by its count */
  size_t i;
  json_t *v;
  json_array_foreach(nj, i, v) {
    CHECK_CONTAINS(json_string_value(json_object_get(v, "why")), "different program versions");
  }
  ag_observe_result_release(&r);
}

/* A failed reference run counts nothing: the counting run drops no probe,
 * every probe still runs (latency without exposed), and the plan says its
 * knowledge stayed static, with the reason. */
TEST(test_failed_reference_drops_no_probe) {
  setup();
  char tma[600];
  snprintf(tma, sizeof tma, "%.*s/tma_probe.ptx", (int)(strrchr(ptx, '/') - ptx), ptx);
  if (access(tma, R_OK) != 0) {
    printf("no %s: skipped\n", tma);
    exit(77);
  }
  harness_spec_of("anoref", "as_noref_harness", tma);
  req q = {"anoref", "ws-noref", "async_latency", 1, 0, 0, "mainloop", "iter=0:1"};
  ag_observe_result r;
  memset(&r, 0, sizeof r);
  observe(&q, &r); /* whatever it returns: what ran is checked */
  int probes = 0, ran = 0, ref_failed = 0;
  const char *from = NULL;
  for (size_t i = 0; r.plan && i < r.plan->tasks.n; i++) {
    const ag_task *t = r.plan->tasks.v[i];
    const char *v = json_string_value(json_object_get(t->config, "variant"));
    if (json_string_value(json_object_get(t->config, "iterations_from")))
      from = json_string_value(json_object_get(t->config, "iterations_from"));
    if (t->type != AG_TASK_COLLECT)
      continue;
    if (v && !strcmp(v, "probe")) {
      probes++;
      ran += t->status == AG_TS_OK;
    } else {
      ref_failed += t->status == AG_TS_FAILED;
    }
  }
  CHECK_EQ_INT(ref_failed, 1);
  CHECK(probes >= 1);
  CHECK_EQ_INT(ran, probes);
  CHECK(from != NULL);
  if (from)
    CHECK_CONTAINS(from, "static: the reference run did not succeed");
  if (r.plan)
    ag_observe_result_release(&r);
}

RUN_TESTS(T(test_collect_key_holds_every_harness_input), T(test_keys_are_canonical),
          T(test_no_gpu_task_ends_with_its_reason),
          T(test_concurrent_identical_observes_share_one_run),
          T(test_report_lists_evidence_not_joined),
          T(test_async_runs_of_another_build_not_joined), T(test_failed_reference_drops_no_probe),
          T(as_harness), T(as_other_harness), T(as_noref_harness))
