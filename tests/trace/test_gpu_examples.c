/*
 * test_gpu_examples.c — `argus trace` end to end on the examples: the
 * overhead microbenchmark and the Hopper TMA GEMM run under tracing, the
 * per-region report has the occurrence counts the kernels' structure
 * implies (every one "observed", nothing dropped), and each run writes a
 * timeline. With ARGUS_EVIDENCE_OUT set, the evidence files are copied there
 * (scripts/gpu/run.sh brings them back for tests/data/evidence). Exit 77
 * without a GPU.
 */
#include "check.h"
#include "report_util.h"
#include "gpu_util.h"

static char *dir;

/* Runs argus with argv (the examples' and benchmarks' harnesses on PATH),
 * its standard output into *out; 0 when it exited 0. */
static int run_argus_out(const char *const *args, int nargs, ag_str *out) {
  const char *bin = getenv("ARGUS_BIN"), *bd = getenv("ARGUS_BUILD_DIR");
  const char *argv[32];
  int n = 0;
  argv[n++] = bin ? bin : "argus";
  for (int i = 0; i < nargs; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  char path[4096], ws[1100];
  snprintf(path, sizeof path, "PATH=%s/examples:%s/bench:%s", bd ? bd : "build", bd ? bd : "build",
           getenv("PATH"));
  snprintf(ws, sizeof ws, "ARGUS_WORKSPACE=%s/ws", dir);
  const char *env[] = {path, ws, NULL};
  ag_str err = AG_STR_INIT;
  ag_proc_opts o;
  memset(&o, 0, sizeof o);
  o.argv = argv;
  o.env_add = env;
  o.capture_out = out;
  o.capture_err = &err;
  o.timeout_s = 300;
  ag_proc_result r;
  int ok = ag_proc_run(&o, &r) == 0 && r.exited && r.exit_code == 0;
  if (!ok)
    fprintf(stderr, "argus %s failed:\n%s\n%s\n", args[0], ag_str_cstr(out), ag_str_cstr(&err));
  ag_str_release(&err);
  return ok ? 0 : -1;
}

/* Runs argus with argv; returns the parsed JSON stdout or NULL. */
static json_t *run_argus(const char *const *args, int nargs) {
  ag_str out = AG_STR_INIT;
  json_t *j = NULL;
  if (!run_argus_out(args, nargs, &out))
    j = json_loads(ag_str_cstr(&out), 0, NULL);
  if (!j)
    fprintf(stderr, "argus %s: no JSON report:\n%s\n", args[0], ag_str_cstr(&out));
  ag_str_release(&out);
  return j;
}

static json_t *region(json_t *rep, const char *qname) {
  size_t i;
  json_t *g;
  json_array_foreach(json_object_get(rep, "regions"), i, g) if (
      !strcmp(json_string_value(json_object_get(g, "region")), qname)) return g;
  fprintf(stderr, "region %s not in the report\n", qname);
  return NULL;
}

static long long count_of(json_t *rep, const char *qname) {
  json_t *g = region(rep, qname);
  return g ? json_integer_value(json_object_get(json_object_get(g, "ns"), "count")) : -1;
}

static long long role_count(json_t *rep, const char *qname, const char *role) {
  json_t *g = region(rep, qname), *r;
  size_t i;
  if (g)
    json_array_foreach(json_object_get(g, "by_role"), i, r) if (
        json_is_string(json_object_get(r, "role")) &&
        !strcmp(json_string_value(json_object_get(r, "role")), role)) return json_integer_value(
        json_object_get(r, "count"));
  return -1;
}

static void keep_evidence(json_t *rep, const char *name) {
  const char *out = getenv("ARGUS_EVIDENCE_OUT");
  json_t *p = json_object_get(rep, "provenance");
  const char *ev = json_string_value(json_object_get(p, "evidence"));
  if (!out || !ev)
    return;
  char *data = NULL;
  size_t len = 0;
  char dst[4096];
  snprintf(dst, sizeof dst, "%s/%s", out, name);
  CHECK(ag_file_read(ev, &data, &len) == 0 && ag_file_write_atomic(dst, data, len) == 0);
  ag_free(data);
}

static void check_timeline(const char *tl) {
  json_error_t e;
  json_t *t = json_load_file(tl, 0, &e);
  CHECK(t != NULL);
  CHECK(json_array_size(json_object_get(t, "traceEvents")) > 0);
  json_decref(t);
}

TEST(overhead_traced) {
  gpu_or_skip("test_gpu_examples");
  dir = dir ? dir : scratch_dir("examples");
  const char *src = getenv("ARGUS_SOURCE_DIR");
  char spec[1024], tl[1200];
  snprintf(spec, sizeof spec, "%s/examples/overhead/spec.json", src ? src : ".");
  snprintf(tl, sizeof tl, "%s/overhead.timeline.json", dir);
  const char *args[] = {"--json", "trace", spec, "--launches", "1", "--timeline", tl};
  json_t *rep = run_argus(args, 7);
  CHECK(rep != NULL);
  if (!rep)
    return;
  /* 128 CTAs x 8 warps, 64 occurrences of step per warp, one launch */
  CHECK_EQ_INT(count_of(rep, "overhead_compute"), 1024);
  CHECK_EQ_INT(count_of(rep, "overhead_compute/work"), 1024);
  CHECK_EQ_INT(count_of(rep, "overhead_compute/work/step"), 1024 * 64);
  json_t *loss = json_object_get(rep, "losses");
  CHECK_EQ_INT(json_integer_value(json_object_get(loss, "dropped_records")), 0);
  CHECK_EQ_INT(json_integer_value(json_object_get(loss, "anomalies")), 0);
  CHECK_EQ_STR(json_string_value(json_object_get(region(rep, "overhead_compute/work/step"), "qual")),
               "observed");
  check_timeline(tl);
  keep_evidence(rep, "overhead.agev");
  char *s = json_dumps(json_object_get(rep, "regions"), JSON_COMPACT);
  printf("@example overhead regions: %.600s\n", s);
  free(s);
  json_decref(rep);
}

TEST(gemm_tma_traced) {
  gpu_or_skip("test_gpu_examples");
  dir = dir ? dir : scratch_dir("examples");
  const char *src = getenv("ARGUS_SOURCE_DIR");
  char spec[1024], tl[1200];
  snprintf(spec, sizeof spec, "%s/examples/gemm_tma/spec.json", src ? src : ".");
  snprintf(tl, sizeof tl, "%s/gemm.timeline.json", dir);
  const char *args[] = {"--json", "trace", spec, "--launches", "1", "--timeline", tl};
  json_t *rep = run_argus(args, 7);
  CHECK(rep != NULL);
  if (!rep)
    return;
  /* --size 1024: 8 x 16 = 128 CTAs of 2 warpgroups; 16 k-tiles. Producer:
   * thread 0 runs mainloop and loads; consumer warps (4 per CTA) run
   * mainloop, mma per k-tile, epilogue. */
  CHECK_EQ_INT(count_of(rep, "gemm_tma"), 128 * 8);
  CHECK_EQ_INT(count_of(rep, "gemm_tma/mainloop"), 128 * 5);
  CHECK_EQ_INT(role_count(rep, "gemm_tma/mainloop", "producer"), 128);
  CHECK_EQ_INT(role_count(rep, "gemm_tma/mainloop", "consumer"), 128 * 4);
  CHECK_EQ_INT(count_of(rep, "gemm_tma/mainloop/loads"), 128 * 16);
  CHECK_EQ_INT(count_of(rep, "gemm_tma/mainloop/mma"), 128 * 4 * 16);
  CHECK_EQ_INT(count_of(rep, "gemm_tma/epilogue"), 128 * 4);
  json_t *loss = json_object_get(rep, "losses");
  CHECK_EQ_INT(json_integer_value(json_object_get(loss, "dropped_records")), 0);
  check_timeline(tl);
  keep_evidence(rep, "gemm_tma.agev");
  char *s = json_dumps(json_object_get(rep, "regions"), JSON_COMPACT);
  printf("@example gemm regions: %.900s\n", s);
  free(s);
  json_decref(rep);
}

/* The first value of (region, signal, stat) in an observe report, or NULL. */
static json_t *value_of(json_t *rep, const char *qname, const char *signal, const char *stat) {
  return report_value(rep, qname, signal, stat);
}

/* The first value of (signal, stat) for any region, or NULL. */
static json_t *any_value(json_t *rep, const char *signal, const char *stat) {
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(rep, "values"), i, v) {
    const char *g = json_string_value(json_object_get(v, "signal"));
    const char *st = json_string_value(json_object_get(v, "stat"));
    if (g && st && !strcmp(g, signal) && !strcmp(st, stat))
      return json_object_get(v, "value");
  }
  return NULL;
}

/* `argus observe` on a public kernel (examples/public), the way a user
 * would: its spec with the production build (nvcc's cubin without markers,
 * as the examples' CMake makes it) named, so that `static` compares the
 * trace-free variant with it and `perturbation` times it. */
static json_t *observe_public(const char *name, const char *dirname, const char *cu,
                              const char *flags, const char *run, const char *root) {
  const char *src = getenv("ARGUS_SOURCE_DIR"), *bd = getenv("ARGUS_BUILD_DIR");
  char spec[1200], body[4096];
  snprintf(spec, sizeof spec, "%s/%s.spec.json", dir, name);
  snprintf(body, sizeof body,
           "{\"name\": \"%s\", \"module\": {\"cuda\": \"%s/examples/public/%s/%s\", "
           "\"flags\": [%s], \"production\": \"%s/examples/%s.cubin\"}, \"run\": [%s]}\n",
           name, src ? src : ".", dirname, cu, flags, bd ? bd : "build", name, run);
  CHECK_EQ_INT(ag_file_write_atomic(spec, body, strlen(body)), 0);
  const char *args[] = {"--json", "observe", spec, "--region", root, "--signals",
                        "duration,static,inst_mix,barriers,ownership,hw_counters"};
  double t0 = (double)ag_now_ns() * 1e-9;
  json_t *rep = run_argus(args, 7);
  printf("@public %s: observe %.1f s\n", name, (double)ag_now_ns() * 1e-9 - t0);
  return rep;
}

/* The report's name of the queried kernel (its symbol): the region of the
 * first duration value without a parent. */
static const char *root_of(json_t *rep) {
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(rep, "values"), i, v) {
    const char *r = json_string_value(json_object_get(v, "region"));
    const char *g = json_string_value(json_object_get(v, "signal"));
    if (r && g && !strcmp(g, "duration") && !strchr(r, '/'))
      return r;
  }
  return "(none)";
}

/* What every public kernel's report must hold. */
static void check_public(json_t *rep, const char *name, const char *const *regions) {
  const char *root = root_of(rep);
  char *txt = json_dumps(rep, JSON_INDENT(1));
  const char *out = getenv("ARGUS_EVIDENCE_OUT");
  if (out && txt) {
    char p[1200];
    snprintf(p, sizeof p, "%s/%s.observe.json", out, name);
    ag_file_write_atomic(p, txt, strlen(txt));
  }
  free(txt);
  /* the trace-free variant against the build the user ships: identical, or
   * the report says how it differs (markers can move code: docs/build-fidelity.md) */
  const char *prod = json_string_value(value_of(rep, "(module)", "static", "production"));
  printf("@public %s: static production: %.400s\n", name, prod ? prod : "(none)");
  CHECK(prod && (strstr(prod, "identical code") || !strncmp(prod, "warning: ", 9)));
  for (int i = 0; regions[i]; i++) {
    char q[512];
    snprintf(q, sizeof q, "%s%s%s", root, *regions[i] ? "/" : "", regions[i]);
    json_t *n = value_of(rep, q, "duration", "count"), *m = value_of(rep, q, "duration", "mean");
    printf("@public %s: %s: %lld occurrences, mean %.0f ns\n", name, q,
           (long long)json_integer_value(n), json_number_value(m));
    CHECK(json_integer_value(n) > 0 && json_number_value(m) > 0);
  }
  json_t *inst = any_value(rep, "inst_mix", "kernel_total");
  json_t *own = any_value(rep, "ownership", "pcs");
  printf("@public %s: inst_mix kernel total %.0f, ownership PCs %.0f\n", name,
         json_number_value(inst), json_number_value(own));
  CHECK(json_number_value(inst) > 0 && json_number_value(own) > 0);
  /* The derived mix against the hardware: the mapping run made 6 launches
   * (the harnesses' warm-up and --reps 5); the range profiler counted the
   * production build's warp instructions launch by launch. SASS that ptxas
   * duplicated takes its PTX block's count at every copy, and spin loops run
   * longer in an instrumented run: the derived total is an estimate, measured
   * 3-7 % high on these two kernels (docs/attribution.md). */
  json_t *hw = any_value(rep, "hw_counters", "sm__inst_executed.sum");
  if (hw && json_number_value(hw) > 0) {
    double ratio = json_number_value(inst) / 6 / json_number_value(hw);
    printf("@public %s: derived inst_mix per launch %.0f, hardware sm__inst_executed %.0f: "
           "ratio %.4f\n",
           name, json_number_value(inst) / 6, json_number_value(hw), ratio);
    CHECK(ratio > 0.97 && ratio < 1.10);
  }
  json_t *ts = value_of(rep, NULL, "perturbation", "added_share");
  json_t *rf = value_of(rep, NULL, "perturbation", "registers.trace_free");
  json_t *rt = value_of(rep, NULL, "perturbation", "registers.traced");
  json_t *cf = value_of(rep, NULL, "perturbation", "ctas_per_sm.trace_free");
  json_t *ct = value_of(rep, NULL, "perturbation", "ctas_per_sm.traced");
  printf("@public %s: tracing adds %.1f %%, registers %lld -> %lld, CTAs/SM %lld -> %lld; "
         "%zu warnings, %zu missing\n",
         name, json_number_value(ts), (long long)json_integer_value(rf),
         (long long)json_integer_value(rt), (long long)json_integer_value(cf),
         (long long)json_integer_value(ct), json_array_size(json_object_get(rep, "warnings")),
         json_array_size(json_object_get(rep, "missing")));
  CHECK(ts != NULL && rf != NULL && rt != NULL);
  const char *tb = json_string_value(value_of(rep, NULL, "perturbation", "timed_build"));
  printf("@public %s: timed build: %s\n", name, tb ? tb : "(none)");
  CHECK(tb && strstr(tb, "production build"));
  /* a traced build that lost occupancy must say so */
  if (json_integer_value(ct) < json_integer_value(cf))
    CHECK(json_array_size(json_object_get(rep, "warnings")) > 0);
  size_t i;
  json_t *w;
  json_array_foreach(json_object_get(rep, "warnings"), i, w) {
    char *s = json_dumps(w, JSON_COMPACT | JSON_ENCODE_ANY);
    printf("@public %s: warning %.300s\n", name, s ? s : "");
    free(s);
  }
}

TEST(public_sgemm_cuda) {
  gpu_or_skip("test_gpu_examples");
  dir = dir ? dir : scratch_dir("examples");
  const char *root = "sgemmWarptiling<128, 128, 16, 64, 64, 4, 8, 4, 128>";
  json_t *rep = observe_public(
      "sgemm10", "sgemm_cuda", "sgemm10.cu", "\"-arch=sm_90a\"",
      "\"sgemm_harness\", \"--module\", \"none.cubin\", \"--kernel\", "
      "\"sgemmWarptiling<128, 128, 16, 64, 64, 4, 8, 4, 128>\", \"--size\", \"2048\", "
      "\"--reps\", \"5\"",
      root);
  CHECK(rep != NULL);
  if (!rep)
    return;
  static const char *const regs[] = {"mainloop", "mainloop/ktile", "mainloop/ktile/load",
                                     "mainloop/ktile/compute", "epilogue", NULL};
  check_public(rep, "sgemm10", regs);
  root = root_of(rep);
  /* 2048^2 / 128^2 = 256 CTAs of 4 warps; 2048 / 16 = 128 k-tiles each */
  char q[512];
  snprintf(q, sizeof q, "%s/mainloop/ktile", root);
  json_t *n = value_of(rep, q, "duration", "count"), *m = NULL;
  snprintf(q, sizeof q, "%s/mainloop", root);
  m = value_of(rep, q, "duration", "count");
  CHECK(json_integer_value(m) > 0 && json_integer_value(n) == 128 * json_integer_value(m));
  json_decref(rep);
}

TEST(public_fast_cu) {
  gpu_or_skip("test_gpu_examples");
  dir = dir ? dir : scratch_dir("examples");
  const char *root = "M4::matmulKernel4<128, 128, 64, 256, 5>";
  json_t *rep = observe_public(
      "fastcu4", "fast_cu", "fastcu4.cu",
      "\"-std=c++17\", \"-O3\", \"-DNDEBUG\", \"-w\", \"--expt-relaxed-constexpr\", "
      "\"--expt-extended-lambda\", \"--use_fast_math\", \"-arch=sm_90a\", \"-lineinfo\"",
      "\"wgmma_harness\", \"--module\", \"none.cubin\", \"--kernel\", "
      "\"M4::matmulKernel4<128, 128, 64, 256, 5>\", \"--size\", \"4096\", \"--reps\", "
      "\"5\"",
      root);
  CHECK(rep != NULL);
  if (!rep)
    return;
  static const char *const regs[] = {"produce", "consume", "consume/ktile", "consume/ktile/wait",
                                     "consume/ktile/mma", "epilogue", NULL};
  check_public(rep, "fastcu4", regs);
  json_decref(rep);
}

/* The end-to-end query on examples/gemm_tma: durations, stalls,
 * hardware counters and the system timeline in one report, nothing missing;
 * the text a kernel engineer reads first is kept for docs/ (the same query
 * again, served from the workspace). */
TEST(gemm_tma_observe_all) {
  gpu_or_skip("test_gpu_examples");
  dir = dir ? dir : scratch_dir("examples");
  const char *src = getenv("ARGUS_SOURCE_DIR");
  char spec[1024];
  snprintf(spec, sizeof spec, "%s/examples/gemm_tma/spec.json", src ? src : ".");
  const char *args[] = {"--json", "observe", spec, "--region", "mainloop", "--signals",
                        "duration,stalls,hw_counters,system"};
  double t0 = (double)ag_now_ns() * 1e-9;
  json_t *rep = run_argus(args, 7);
  printf("@gemm_tma observe all: %.1f s\n", (double)ag_now_ns() * 1e-9 - t0);
  CHECK(rep != NULL);
  if (!rep)
    return;
  CHECK_EQ_INT(json_array_size(json_object_get(rep, "missing")), 0);
  if (json_array_size(json_object_get(rep, "missing"))) {
    char *m = json_dumps(json_object_get(rep, "missing"), JSON_COMPACT);
    fprintf(stderr, "missing: %.2000s\n", m ? m : "");
    free(m);
  }
  static const char *const sigs[] = {"duration", "stalls", "hw_counters", "system"};
  for (int k = 0; k < 4; k++) {
    size_t i, n = 0;
    json_t *v;
    json_array_foreach(json_object_get(rep, "values"), i, v) {
      const char *g = json_string_value(json_object_get(v, "signal"));
      n += g && !strcmp(g, sigs[k]);
    }
    printf("@gemm_tma observe all: %s: %zu values\n", sigs[k], n);
    CHECK(n > 0);
  }
  json_decref(rep);
  ag_str txt = AG_STR_INIT;
  CHECK_EQ_INT(run_argus_out(args + 1, 6, &txt), 0);
  const char *out = getenv("ARGUS_EVIDENCE_OUT");
  char p[1200];
  if (out) {
    snprintf(p, sizeof p, "%s/gemm_tma.observe.txt", out);
    ag_file_write_atomic(p, txt.p ? txt.p : "", txt.len);
  }
  CHECK(strstr(ag_str_cstr(&txt), "stalls") && strstr(ag_str_cstr(&txt), "hw_counters"));
  ag_str_release(&txt);
}

RUN_TESTS(T(overhead_traced), T(gemm_tma_traced), T(public_sgemm_cuda), T(public_fast_cu),
          T(gemm_tma_observe_all))
