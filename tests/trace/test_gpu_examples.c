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
#include "gpu_util.h"

static char *dir;

/* Runs argus with argv; returns the parsed JSON stdout or NULL. */
static json_t *run_argus(const char *const *args, int nargs) {
  const char *bin = getenv("ARGUS_BIN"), *bd = getenv("ARGUS_BUILD_DIR");
  const char *argv[32];
  int n = 0;
  argv[n++] = bin ? bin : "argus";
  for (int i = 0; i < nargs; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  char path[4096], ws[1100];
  snprintf(path, sizeof path, "PATH=%s/examples:%s", bd ? bd : "build", getenv("PATH"));
  snprintf(ws, sizeof ws, "ARGUS_WORKSPACE=%s/ws", dir);
  const char *env[] = {path, ws, NULL};
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  ag_proc_opts o;
  memset(&o, 0, sizeof o);
  o.argv = argv;
  o.env_add = env;
  o.capture_out = &out;
  o.capture_err = &err;
  o.timeout_s = 300;
  ag_proc_result r;
  json_t *j = NULL;
  if (ag_proc_run(&o, &r) == 0 && r.exited && r.exit_code == 0)
    j = json_loads(ag_str_cstr(&out), 0, NULL);
  if (!j)
    fprintf(stderr, "argus %s failed:\n%s\n%s\n", args[0], ag_str_cstr(&out), ag_str_cstr(&err));
  ag_str_release(&out);
  ag_str_release(&err);
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

RUN_TESTS(T(overhead_traced), T(gemm_tma_traced))
