/* test_sched.c — the scheduler: dependency order, failure isolation,
 * dynamic expansion by Control tasks, GPU lanes, cycles, task keys,
 * --retry-failed. The executors here are the tasks under test. */
#include "argus/run.h"
#include "check.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int order[4096];
static int norder;
static atomic_int gpu_now, gpu_max;

static void record(int id) {
  pthread_mutex_lock(&mu);
  order[norder++] = id;
  pthread_mutex_unlock(&mu);
}

static int pos_of(int id) {
  for (int i = 0; i < norder; i++)
    if (order[i] == id)
      return i;
  return -1;
}

static int exec_ok(ag_exec_ctx *cx, ag_task *t) {
  record(t->id);
  t->outputs = json_pack("{s:i}", "id", t->id);
  return 0;
}

static int exec_fail(ag_exec_ctx *cx, ag_task *t) {
  record(t->id);
  t->error = ag_strdup("planted failure");
  return AG_ECHILD;
}

static int exec_gpu(ag_exec_ctx *cx, ag_task *t) {
  int now = atomic_fetch_add(&gpu_now, 1) + 1;
  int m = atomic_load(&gpu_max);
  while (now > m && !atomic_compare_exchange_weak(&gpu_max, &m, now))
    ;
  struct timespec ts = {0, 2000000};
  nanosleep(&ts, NULL);
  atomic_fetch_sub(&gpu_now, 1);
  record(t->id);
  t->outputs = json_pack("{s:i,s:i}", "id", t->id, "device", cx->device);
  return 0;
}

static const ag_executor execs[] = {{"fail", exec_fail}, {"gpu", exec_gpu}, {"*", exec_ok}};

static ag_plan *empty_plan(void) {
  const char *sigs[] = {"static"};
  ag_query q = {.region = "k", .signals = sigs, .nsignals = 1};
  ag_plan *p = NULL;
  ag_plan_build(&q, "prog", NULL, &p);
  return p;
}

static ag_task *add(ag_plan *p, const char *op, int tag, const int *deps, int n) {
  return ag_plan_add(p, AG_TASK_TRANSFORM, op, NULL, NULL, NULL, json_pack("{s:i}", "tag", tag),
                     deps, n);
}

static ag_run_opts opts(int cpus, int devs) {
  ag_run_opts o = {.cpu_workers = cpus, .ndevices = devs, .execs = execs,
                   .nexecs = sizeof execs / sizeof execs[0]};
  return o;
}

TEST(test_order) {
  norder = 0;
  ag_plan *p = empty_plan();
  /* a layered DAG: every task after all of its deps */
  int prev[4] = {0, 0, 0, 0};
  for (int layer = 0; layer < 20; layer++) {
    int cur[4];
    for (int k = 0; k < 4; k++)
      cur[k] = add(p, "op", layer * 10 + k, layer ? prev : NULL, layer ? 4 : 0)->id;
    memcpy(prev, cur, sizeof cur);
  }
  ag_run_opts o = opts(2, 0);
  ag_run_stats st;
  CHECK_EQ_INT(ag_run_plan(p, &o, &st), 0);
  CHECK_EQ_INT(st.failed, 0);
  CHECK_EQ_INT(st.ok, (int)p->tasks.n);
  for (size_t i = 0; i < p->tasks.n; i++) {
    ag_task *t = p->tasks.v[i];
    CHECK_EQ_INT(t->status, AG_TS_OK);
    for (size_t k = 0; k < t->deps.n; k++)
      CHECK(pos_of(t->deps.v[k]) < pos_of(t->id));
  }
  ag_plan_free(p);
}

TEST(test_failure_isolation) {
  norder = 0;
  ag_plan *p = empty_plan();
  size_t base = p->tasks.n;
  ag_task *a = add(p, "op", 1, NULL, 0);
  ag_task *bad = add(p, "fail", 2, &a->id, 1);
  ag_task *child = add(p, "op", 3, &bad->id, 1);
  ag_task *grandchild = add(p, "op", 4, &child->id, 1);
  ag_task *sibling = add(p, "op", 5, &a->id, 1);
  int both[2] = {grandchild->id, sibling->id};
  ag_task *rep = add(p, "op", 6, both, 2);
  rep->partial_ok = 1;
  ag_run_opts o = opts(2, 0);
  ag_run_stats st;
  CHECK_EQ_INT(ag_run_plan(p, &o, &st), 0);
  CHECK_EQ_INT(bad->status, AG_TS_FAILED);
  CHECK_EQ_STR(bad->error, "planted failure");
  CHECK_EQ_INT(child->status, AG_TS_SKIPPED);
  CHECK_CONTAINS(child->error, "failed: planted failure");
  CHECK_EQ_INT(grandchild->status, AG_TS_SKIPPED);
  CHECK_CONTAINS(grandchild->error, "was skipped");
  CHECK_EQ_INT(sibling->status, AG_TS_OK);
  CHECK_EQ_INT(rep->status, AG_TS_OK); /* the report runs with what exists */
  CHECK_EQ_INT(st.failed, 1);
  CHECK_EQ_INT(st.skipped, 2);
  CHECK(pos_of(child->id) < 0); /* never executed */
  /* retry only what failed: make the failing op succeed now */
  bad->op = "op";
  o.only_failed = 1;
  norder = 0;
  CHECK_EQ_INT(ag_run_plan(p, &o, &st), 0);
  CHECK_EQ_INT(bad->status, AG_TS_OK);
  CHECK_EQ_INT(child->status, AG_TS_OK);
  CHECK_EQ_INT(grandchild->status, AG_TS_OK);
  CHECK(pos_of(sibling->id) < 0); /* not rerun */
  CHECK(pos_of(a->id) < 0);
  (void)base;
  ag_plan_free(p);
}

/* The Control task discovers 8 "sites" and materializes a branch for each,
 * all feeding one join task. */
static int join_id;
static int expand(ag_plan *p, ag_task *control, void *ud) {
  int n = strcmp(control->op, "discover-sites") == 0 ? 8 : 0;
  for (int i = 0; i < n; i++) {
    ag_task *tr = add(p, "op", 100 + i, &control->id, 1);
    ag_task *col = ag_plan_add(p, AG_TASK_COLLECT, "gpu", "probe", NULL, NULL,
                               json_pack("{s:i}", "site", i), &tr->id, 1);
    col->needs_gpu = 1;
    col->effects = AG_EFF_FORCES_COMPLETION;
    ag_plan_add_dep(p, ag_plan_task(p, join_id), col->id);
  }
  return 0;
}

TEST(test_dynamic_expansion) {
  norder = 0;
  atomic_store(&gpu_max, 0);
  ag_plan *p = empty_plan();
  ag_task *c = ag_plan_add(p, AG_TASK_CONTROL, "discover-sites", NULL, NULL, NULL, NULL, NULL, 0);
  ag_task *join = add(p, "op", 999, &c->id, 1);
  join_id = join->id;
  p->expand = expand;
  size_t before = p->tasks.n;
  ag_run_opts o = opts(2, 1);
  ag_run_stats st;
  CHECK_EQ_INT(ag_run_plan(p, &o, &st), 0);
  CHECK_EQ_INT(p->tasks.n, before + 16);
  CHECK_EQ_INT(st.failed + st.skipped, 0);
  CHECK_EQ_INT(join->status, AG_TS_OK);
  /* the join ran after every materialized branch */
  for (size_t i = before; i < p->tasks.n; i++)
    CHECK(pos_of((int)i) < pos_of(join->id));
  /* each forced-completion probe is its own run; one device: never concurrent */
  int collects = 0;
  for (size_t i = 0; i < p->tasks.n; i++)
    collects += p->tasks.v[i]->type == AG_TASK_COLLECT;
  CHECK_EQ_INT(p->nruns, collects);
  CHECK_EQ_INT(atomic_load(&gpu_max), 1);
  ag_plan_free(p);
}

TEST(test_gpu_lanes) {
  /* two devices: independent runs spread across both, each device serial */
  norder = 0;
  atomic_store(&gpu_max, 0);
  ag_plan *p = empty_plan();
  for (int i = 0; i < 8; i++) {
    ag_task *t = add(p, "gpu", i, NULL, 0);
    t->needs_gpu = 1;
  }
  ag_run_opts o = opts(1, 2);
  ag_run_stats st;
  CHECK_EQ_INT(ag_run_plan(p, &o, &st), 0);
  int used[2] = {0, 0};
  for (size_t i = 0; i < p->tasks.n; i++)
    if (!strcmp(p->tasks.v[i]->op, "gpu"))
      used[json_integer_value(json_object_get(p->tasks.v[i]->outputs, "device"))]++;
  CHECK(used[0] > 0 && used[1] > 0);
  CHECK(atomic_load(&gpu_max) <= 2);
  ag_plan_free(p);
  /* no device: GPU tasks fail with the reason, the rest still runs */
  p = empty_plan();
  ag_task *g = add(p, "gpu", 1, NULL, 0);
  g->needs_gpu = 1;
  ag_task *after = add(p, "op", 2, &g->id, 1);
  ag_task *other = add(p, "op", 3, NULL, 0);
  o = opts(1, 0);
  CHECK_EQ_INT(ag_run_plan(p, &o, &st), 0);
  CHECK_EQ_INT(g->status, AG_TS_FAILED);
  CHECK_CONTAINS(g->error, "needs a GPU");
  CHECK_EQ_INT(after->status, AG_TS_SKIPPED);
  CHECK_EQ_INT(other->status, AG_TS_OK);
  ag_plan_free(p);
}

TEST(test_cycle_and_missing_executor) {
  ag_plan *p = empty_plan();
  ag_task *a = add(p, "op", 1, NULL, 0);
  ag_task *b = add(p, "op", 2, &a->id, 1);
  ag_plan_add_dep(p, a, b->id); /* a <-> b */
  ag_run_opts o = opts(1, 0);
  ag_run_stats st;
  CHECK_EQ_INT(ag_run_plan(p, &o, &st), 0);
  CHECK_EQ_INT(a->status, AG_TS_FAILED);
  CHECK_CONTAINS(a->error, "cycle");
  ag_plan_free(p);
  /* an op nobody implements fails with a message */
  p = empty_plan();
  static const ag_executor only_fail[] = {{"fail", exec_fail}};
  o.execs = only_fail;
  o.nexecs = 1;
  CHECK_EQ_INT(ag_run_plan(p, &o, &st), 0);
  CHECK_CONTAINS(ag_plan_task(p, 0)->error, "no executor for task op");
  ag_plan_free(p);
}

TEST(test_task_keys) {
  ag_plan *p = empty_plan();
  ag_task *a = add(p, "op", 1, NULL, 0);
  ag_task *b = add(p, "op", 2, &a->id, 1);
  a->outputs = json_pack("{s:s}", "ptx", "sha256:aaa");
  ag_task_compute_key(p, b);
  char k1[65];
  memcpy(k1, b->key, 65);
  CHECK_EQ_INT(strlen(k1), 64);
  ag_task_compute_key(p, b);
  CHECK_EQ_STR(b->key, k1); /* deterministic */
  json_decref(a->outputs);
  a->outputs = json_pack("{s:s}", "ptx", "sha256:bbb");
  ag_task_compute_key(p, b);
  CHECK(strcmp(b->key, k1) != 0); /* a different input: a different key */
  ag_plan_free(p);
}

TEST(test_control_only) {
  /* `argus plan` runs discovery only: Control tasks run and expand, the rest
   * stays pending without errors */
  norder = 0;
  ag_plan *p = empty_plan();
  ag_task *c = ag_plan_add(p, AG_TASK_CONTROL, "discover-sites", NULL, NULL, NULL, NULL, NULL, 0);
  ag_task *join = add(p, "op", 999, &c->id, 1);
  join_id = join->id;
  p->expand = expand;
  size_t before = p->tasks.n;
  ag_run_opts o = opts(2, 0);
  o.types = 1u << AG_TASK_CONTROL;
  ag_run_stats st;
  CHECK_EQ_INT(ag_run_plan(p, &o, &st), 0);
  CHECK_EQ_INT(c->status, AG_TS_OK);
  CHECK_EQ_INT(p->tasks.n, before + 16); /* the branches are materialized */
  CHECK_EQ_INT(join->status, AG_TS_PENDING);
  CHECK_EQ_INT(st.failed + st.skipped, 0);
  for (size_t i = 0; i < p->tasks.n; i++)
    if (p->tasks.v[i]->type != AG_TASK_CONTROL)
      CHECK_EQ_INT(p->tasks.v[i]->status, AG_TS_PENDING);
  ag_plan_free(p);
}

RUN_TESTS(T(test_control_only), T(test_order), T(test_failure_isolation), T(test_dynamic_expansion), T(test_gpu_lanes),
          T(test_cycle_and_missing_executor), T(test_task_keys))
