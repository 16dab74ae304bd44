/* test_gpu_observe.c — `argus observe` on the H200 (label gpu; exit 77
 * without a GPU): the TMA GEMM example end to end, its region counts checked
 * against the kernel's structure, then a zoom-in query (a subregion, a
 * narrower scope) that must reuse the first query's evidence: its variant,
 * compile and collection come from the workspace, and it takes less time. */
#include "argus/collect.h"
#include "argus/observe.h"
#include "check.h"

#include <stdlib.h>
#include <unistd.h>

static char ws[64];

static const char *example = "gemm_tma";

static int run_query(const char *region, const char *sigs_csv, const char *scope,
                     ag_observe_result *r) {
  static char buf[256];
  static const char *sigs[8];
  int n = 0;
  snprintf(buf, sizeof buf, "%s", sigs_csv);
  for (char *t = strtok(buf, ","); t && n < 8; t = strtok(NULL, ","))
    sigs[n++] = t;
  char spec[512];
  const char *src = getenv("ARGUS_SOURCE_DIR");
  snprintf(spec, sizeof spec, "%s/examples/%s/spec.json", src ? src : ".", example);
  ag_observe_opts o = {.spec = spec, .workspace = ws, .region = region, .signals = sigs,
                       .nsignals = n, .scope = scope, .ndevices = -1, .timeout_s = 120};
  ag_diags d;
  ag_diags_init(&d);
  int rc = ag_observe(&o, &d, r);
  if (rc) {
    ag_str s = AG_STR_INIT;
    ag_diags_format(&d, &s);
    fprintf(stderr, "%s", ag_str_cstr(&s));
    ag_str_release(&s);
  }
  ag_diags_release(&d);
  return rc;
}

/* The value of (region, signal, stat) in a report, -1 if absent. */
static double val(json_t *rep, const char *region, const char *stat) {
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(rep, "values"), i, v) {
    const char *r = json_string_value(json_object_get(v, "region"));
    const char *s = json_string_value(json_object_get(v, "stat"));
    if (r && s && !strcmp(r, region) && !strcmp(s, stat))
      return json_number_value(json_object_get(v, "value"));
  }
  return -1;
}

static double role_count(json_t *rep, const char *region, const char *role) {
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(rep, "values"), i, v) {
    const char *r = json_string_value(json_object_get(v, "region"));
    const char *s = json_string_value(json_object_get(v, "stat"));
    if (r && s && !strcmp(r, region) && !strcmp(s, "by_role"))
      return json_number_value(
          json_object_get(json_object_get(json_object_get(v, "value"), role), "count"));
  }
  return -1;
}

static ag_task *find(const ag_plan *p, const char *op) {
  for (size_t i = 0; i < p->tasks.n; i++)
    if (!strcmp(p->tasks.v[i]->op, op) &&
        (strcmp(op, "collect") || !strcmp(json_string_value(json_array_get(
                                              json_object_get(p->tasks.v[i]->config, "backends"), 0)),
                                          "trace")))
      return p->tasks.v[i]; /* "collect": the traced run */
  return NULL;
}

/* The perturbation value `stat` (no region), -1 if absent. */
static double pval(json_t *rep, const char *stat) {
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(rep, "values"), i, v) {
    const char *sg = json_string_value(json_object_get(v, "signal"));
    const char *s = json_string_value(json_object_get(v, "stat"));
    if (sg && s && !strcmp(sg, "perturbation") && !strcmp(s, stat))
      return json_number_value(json_object_get(v, "value"));
  }
  return -1;
}

static void gpu_setup(void) {
  ag_str why = AG_STR_INIT;
  if (ag_collect_gpu_probe(&why)) {
    printf("no GPU (%s): skipped\n", ag_str_cstr(&why));
    exit(77);
  }
  ag_str_release(&why);
  const char *bd = getenv("ARGUS_BUILD_DIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/examples:%s", bd ? bd : "build", getenv("PATH"));
  setenv("PATH", path, 1);
}

TEST(test_observe_gemm_and_zoom_in) {
  ag_str why = AG_STR_INIT;
  if (ag_collect_gpu_probe(&why)) {
    printf("no GPU (%s): skipped\n", ag_str_cstr(&why));
    exit(77);
  }
  ag_str_release(&why);
  snprintf(ws, sizeof ws, "/tmp/argus-gpuobs-XXXXXX");
  CHECK(mkdtemp(ws) != NULL);
  const char *bd = getenv("ARGUS_BUILD_DIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/examples:%s", bd ? bd : "build", getenv("PATH"));
  setenv("PATH", path, 1); /* the spec's harness, gemm_tma_harness */

  ag_observe_result a, b;
  uint64_t t0 = ag_now_ns();
  CHECK_EQ_INT(run_query("gemm_tma", "duration,occurrences,timeline,static", NULL, &a), 0);
  double ta = (double)(ag_now_ns() - t0) / 1e9;
  CHECK(a.report != NULL);
  if (!a.report)
    return;
  CHECK_EQ_INT(a.stats.failed + a.stats.skipped, 0);
  CHECK_EQ_INT(json_array_size(json_object_get(a.report, "missing")), 0);
  /* structure: one producer thread runs mainloop and a load per k-tile; four
   * consumer warps run mainloop, an mma per k-tile, and the epilogue */
  double prod = role_count(a.report, "gemm_tma/mainloop", "producer");
  double cons = role_count(a.report, "gemm_tma/mainloop", "consumer");
  double loads = val(a.report, "gemm_tma/mainloop/loads", "count");
  double mma = val(a.report, "gemm_tma/mainloop/mma", "count");
  double epi = val(a.report, "gemm_tma/epilogue", "count");
  printf("producer %g consumer %g loads %g mma %g epilogue %g\n", prod, cons, loads, mma, epi);
  CHECK(prod > 0 && (long)prod % 128 == 0);
  CHECK(cons == 4 * prod);
  CHECK(loads == 16 * prod); /* --size 1024: 16 k-tiles of 64 */
  CHECK(mma == 4 * loads);
  CHECK(epi == cons);
  CHECK(val(a.report, "gemm_tma/mainloop", "total") > 0);
  CHECK(val(a.report, "gemm_tma", "registers") > 0);
  /* zoom in: a subregion, consumers only — no new variant, compile or run */
  t0 = ag_now_ns();
  CHECK_EQ_INT(run_query("mma", "duration", "role=consumer,iter=0:4", &b), 0);
  double tb = (double)(ag_now_ns() - t0) / 1e9;
  CHECK(b.report != NULL);
  if (b.report) {
    CHECK_EQ_INT(find(b.plan, "collect")->status, AG_TS_CACHED);
    CHECK_EQ_INT(find(b.plan, "compile")->status, AG_TS_CACHED);
    CHECK_EQ_INT(find(b.plan, "transform.traced")->status, AG_TS_CACHED);
    CHECK_EQ_INT(find(b.plan, "synth.duration")->status, AG_TS_OK);
    double zc = val(b.report, "gemm_tma/mainloop/mma", "count");
    printf("zoom-in: mma count in scope %g (of %g); first query %.3f s, zoom-in %.3f s\n", zc,
           mma, ta, tb);
    CHECK(zc > 0 && zc < mma);
    CHECK(tb < ta);
    /* provenance names the first query's collect task's evidence: the same
     * artifact */
    CHECK_EQ_STR(json_string_value(json_object_get(find(a.plan, "collect")->outputs, "evidence")),
                 json_string_value(json_object_get(find(b.plan, "collect")->outputs, "evidence")));
  }
  ag_observe_result_release(&a);
  ag_observe_result_release(&b);
}

/* The overhead microbenchmark: 64 occurrences of step per work, per warp;
 * an iteration window keeps exactly its share. */
TEST(test_observe_overhead_iterations) {
  ag_str why = AG_STR_INIT;
  if (ag_collect_gpu_probe(&why)) {
    printf("no GPU (%s): skipped\n", ag_str_cstr(&why));
    exit(77);
  }
  ag_str_release(&why);
  if (!ws[0]) {
    snprintf(ws, sizeof ws, "/tmp/argus-gpuobs-XXXXXX");
    CHECK(mkdtemp(ws) != NULL);
    const char *bd = getenv("ARGUS_BUILD_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/examples:%s", bd ? bd : "build", getenv("PATH"));
    setenv("PATH", path, 1);
  }
  example = "overhead";
  ag_observe_result a, b;
  CHECK_EQ_INT(run_query("overhead_compute/work", "duration", NULL, &a), 0);
  CHECK_EQ_INT(run_query("step", "duration", "iter=0:8", &b), 0);
  if (a.report && b.report) {
    double work = val(a.report, "overhead_compute/work", "count");
    double step = val(a.report, "overhead_compute/work/step", "count");
    double step8 = val(b.report, "overhead_compute/work/step", "count");
    printf("overhead: work %g step %g step[iter 0:8] %g\n", work, step, step8);
    CHECK(work > 0 && (long)work % 1024 == 0); /* 128 CTAs x 8 warps per launch */
    CHECK(step == 64 * work);
    CHECK(step8 == 8 * work);
    CHECK_EQ_INT(find(b.plan, "collect")->status, AG_TS_CACHED);
    CHECK(val(a.report, "overhead_compute/work/step", "mean") > 0);
  }
  ag_observe_result_release(&a);
  ag_observe_result_release(&b);
}

/* What tracing costs (docs/tracing.md, "Perturbation"): every observe that
 * traces also times the trace-free build on the same launches; three fresh
 * workspaces per example give the spread (bench/RESULTS.md). The traced
 * build keeps the trace-free build's CTAs per SM, or the report warns. */
TEST(test_observe_perturbation) {
  gpu_setup();
  static const char *const ex[][2] = {{"gemm_tma", "gemm_tma"},
                                      {"overhead", "overhead_compute/work"}};
  for (int e = 0; e < 2; e++)
    for (int rep = 0; rep < 3; rep++) {
      snprintf(ws, sizeof ws, "/tmp/argus-gpupt-XXXXXX");
      CHECK(mkdtemp(ws) != NULL);
      example = ex[e][0];
      ag_observe_result a;
      CHECK_EQ_INT(run_query(ex[e][1], "duration", NULL, &a), 0);
      if (!a.report)
        continue;
      double tf = pval(a.report, "trace_free_kernel_time"), tr = pval(a.report, "traced_kernel_time");
      double rf = pval(a.report, "registers.trace_free"), rt = pval(a.report, "registers.traced");
      double cf = pval(a.report, "ctas_per_sm.trace_free"), ct = pval(a.report, "ctas_per_sm.traced");
      double n = pval(a.report, "launches_compared");
      size_t nw = json_array_size(json_object_get(a.report, "warnings"));
      printf("@perturb %s rep %d: trace-free %.2f us traced %.2f us added %.2f us (%.2f %%) over "
             "%g launches; registers %g -> %g; CTAs/SM %g -> %g; %zu warnings\n",
             ex[e][0], rep, tf / 1e3, tr / 1e3, pval(a.report, "added_time") / 1e3,
             pval(a.report, "added_share"), n, rf, rt, cf, ct, nw);
      size_t i;
      json_t *w;
      json_array_foreach(json_object_get(a.report, "warnings"), i, w)
          printf("  warning: %s\n", json_string_value(w));
      CHECK(tf > 0 && tr > 0 && n >= 1);
      CHECK(rf > 0 && rt > 0 && cf > 0);
      CHECK(ct == cf || nw > 0); /* never silently */
      ag_observe_result_release(&a);
    }
}

RUN_TESTS(T(test_observe_gemm_and_zoom_in), T(test_observe_overhead_iterations),
          T(test_observe_perturbation))
