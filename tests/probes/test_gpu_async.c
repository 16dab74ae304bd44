/*
 * test_gpu_async.c — issue 27 on the H200, with the ground-truth kernels of
 * tests/data/cuda/async_truth.cu (8 CTAs, 16 tiles, examples/async_truth):
 *
 *   wait_shapes/load, iter=0:8: the consumers' one-block wait with a
 *     suspend-time hint is timed: 8 instances, each with latency, exposed and
 *     hidden (a negative one flagged), every value naming its instance;
 *   wait_shapes/use/sum (nested, no iteration of its own), duration at
 *     iter=2:4: it inherits use[t]'s iteration, so it is counted (3 consumer
 *     warps x 2 iterations x 8 CTAs per launch recorded; before: count 0);
 *   unroll4/load, iter=0:8: 16 probe runs + 1 reference planned from static
 *     analysis (before: 40 + 1); the counting run of the reference drops the
 *     remainder loop's 8 (16 % 4 == 0: its begin marker never began) before
 *     they run, so exactly 9 collections run: the 4 unrolled copies fire at
 *     their iterations (8 instances with values), the remainder's 8 pairs are
 *     warnings from "counted", none is a missing entry;
 *   untimed_wait/load, iter=0:2: latency only; exposed and hidden are
 *     missing with discovery's reason (the wait loop does more than wait).
 * Exits 77 without a GPU.
 */
#include "check.h"

#include <unistd.h>

#include "argus/observe.h"
#include "../trace/gpu_util.h"
#include "../trace/trace_util.h"

static char ws[1100];
static int ran; /* the collections of the last observe that ran (or were cached) */
static char iterations_from[512];

static json_t *observe(const char *kernel, const char *region, const char *signal,
                       const char *scope, int *runs) {
  const char *src = getenv("ARGUS_SOURCE_DIR");
  char spec[1024];
  snprintf(spec, sizeof spec, "%s/examples/async_truth/spec_%s.json", src ? src : ".", kernel);
  const char *sigs[] = {signal};
  ag_observe_opts o = {.spec = spec, .workspace = ws, .region = region, .signals = sigs,
                       .nsignals = 1, .scope = scope, .ndevices = -1, .timeout_s = 120};
  ag_diags d;
  ag_diags_init(&d);
  ag_observe_result res;
  uint64_t t0 = ag_now_ns();
  int rc = ag_observe(&o, &d, &res);
  if (rc)
    tu_print_diags(&d);
  CHECK_EQ_INT(rc, 0);
  ag_diags_release(&d);
  if (rc)
    return NULL;
  *runs = res.plan->nruns;
  ran = 0;
  iterations_from[0] = 0;
  for (size_t i = 0; i < res.plan->tasks.n; i++) {
    const ag_task *t = res.plan->tasks.v[i];
    ran += t->type == AG_TASK_COLLECT && (t->status == AG_TS_OK || t->status == AG_TS_CACHED);
    const char *f = json_string_value(json_object_get(t->config, "iterations_from"));
    if (f)
      snprintf(iterations_from, sizeof iterations_from, "%s", f);
  }
  printf("@async   collections run: %d; iterations from: %s\n", ran, iterations_from);
  printf("@async %s %s %s %s: %d runs, %.2f s\n", kernel, region, signal, scope, *runs,
         (double)(ag_now_ns() - t0) / 1e9);
  json_t *rep = json_incref(res.report);
  ag_observe_result_release(&res);
  return rep;
}

/* values whose stat starts with `what`; missing entries whose text has `why` */
static int nvalues(const json_t *rep, const char *what) {
  size_t i;
  json_t *v;
  int n = 0;
  json_array_foreach(json_object_get(rep, "values"), i, v) {
    const char *s = json_string_value(json_object_get(v, "stat"));
    n += s && !strncmp(s, what, strlen(what));
  }
  return n;
}

static int nmissing(const json_t *rep, const char *why) {
  size_t i;
  json_t *v;
  int n = 0;
  json_array_foreach(json_object_get(rep, "missing"), i, v) {
    const char *s = json_string_value(json_object_get(v, "why"));
    n += s && strstr(s, why);
  }
  return n;
}

static int nwarnings(const json_t *rep, const char *what) {
  size_t i;
  json_t *v;
  int n = 0;
  json_array_foreach(json_object_get(rep, "warnings"), i, v) {
    const char *s = json_string_value(v);
    n += s && strstr(s, what);
  }
  return n;
}

static void print_values(const json_t *rep) {
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(rep, "values"), i, v) {
    json_t *val = json_object_get(v, "value"), *dist = json_object_get(v, "dist");
    printf("@async   %-34s %9.1f ns%s", json_string_value(json_object_get(v, "stat")),
           json_is_number(val) ? json_number_value(val)
                               : json_number_value(json_object_get(v, "raw")),
           json_is_number(val) ? "" : " (flagged)");
    if (dist)
      printf("  n=%lld p50 %.1f p95 %.1f", (long long)json_integer_value(json_object_get(dist, "count")),
             json_number_value(json_object_get(dist, "p50")),
             json_number_value(json_object_get(dist, "p95")));
    printf("\n");
  }
  json_array_foreach(json_object_get(rep, "missing"), i, v)
      printf("@async   missing: %s\n", json_string_value(json_object_get(v, "why")));
}

TEST(async_truth_on_the_h200) {
  gpu_or_skip("test_gpu_async");
  const char *bd = getenv("ARGUS_BUILD_DIR");
  char path[8192], tmpl[] = "/tmp/argus-gpu-async-XXXXXX";
  char *dir = mkdtemp(tmpl);
  CHECK(dir != NULL);
  if (!dir)
    return;
  snprintf(ws, sizeof ws, "%s/ws", dir);
  snprintf(path, sizeof path, "%s/examples:%s", bd ? bd : "build", getenv("PATH"));
  setenv("PATH", path, 1);
  int runs = 0;
  json_t *r = observe("wait_shapes", "wait_shapes/load", "async_latency", "iter=0:8", &runs);
  if (r) {
    print_values(r);
    CHECK_EQ_INT(runs, 9);
    CHECK_EQ_INT(nvalues(r, "latency["), 8);
    CHECK_EQ_INT(nvalues(r, "exposed["), 8);
    CHECK_EQ_INT(nvalues(r, "hidden["), 8);
    CHECK_EQ_U64(json_array_size(json_object_get(r, "missing")), 0);
    json_decref(r);
  }
  r = observe("wait_shapes", "wait_shapes/use/sum", "duration", "iter=2:4", &runs);
  if (r) {
    print_values(r);
    size_t i;
    json_t *v;
    json_int_t count = -1;
    json_array_foreach(json_object_get(r, "values"), i, v) {
      const char *s = json_string_value(json_object_get(v, "stat"));
      if (s && !strcmp(s, "count"))
        count = json_integer_value(json_object_get(v, "value"));
    }
    CHECK(count > 0 && count % (3 * 2 * 8) == 0);
    printf("@async nested sum at iter=2:4: count %lld\n", (long long)count);
    json_decref(r);
  }
  r = observe("unroll4", "unroll4/load", "async_latency", "iter=0:8", &runs);
  if (r) {
    print_values(r);
    CHECK_EQ_INT(runs, 17);
    CHECK_EQ_INT(ran, 9);
    CHECK(!strncmp(iterations_from, "counted:", 8));
    CHECK_EQ_INT(nvalues(r, "latency["), 8);
    CHECK_EQ_INT(nvalues(r, "exposed["), 8);
    CHECK_EQ_INT(nmissing(r, "no warp ran the probed instance"), 0);
    CHECK_EQ_INT(nwarnings(r, "(counted: "), 1);
    json_decref(r);
  }
  r = observe("untimed_wait", "untimed_wait/load", "async_latency", "iter=0:2", &runs);
  if (r) {
    print_values(r);
    CHECK_EQ_INT(runs, 3);
    CHECK_EQ_INT(nvalues(r, "latency["), 2);
    CHECK_EQ_INT(nvalues(r, "exposed["), 0);
    CHECK_EQ_INT(nmissing(r, "does more than wait"), 2);
    json_decref(r);
  }
  tu_rm_rf(dir);
}

RUN_TESTS(T(async_truth_on_the_h200))
