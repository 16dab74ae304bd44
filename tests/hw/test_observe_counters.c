/*
 * test_observe_counters.c — the signal hw_counters through `argus plan` and
 * `argus observe` on the CPU (docs/counters.md):
 *
 *   plan       duration,hw_counters on the overhead example: the counters
 *              run is a partition of its own (effect serializes_kernels:
 *              it conflicts with timing), reads the trace-free build the
 *              timing run compiles, and says its replay passes
 *   metrics    --metrics checked against the chip's list before anything
 *              runs: a misspelt name is exit 2 with the meant one; a name
 *              without hw_counters, a bad --counter-ranges too
 *   observe    the whole query with a stand-in driver (fake_cuda as
 *              libcuda.so.1), CUPTI (fake_cupti) and harness: the report
 *              holds every metric of every launch with its unit, observed,
 *              the roofline and the device's peaks; a second run comes
 *              from the workspace
 */
#include "check.h"

#include <stdarg.h>
#include <unistd.h>

#include "argus/observe.h"

static char ws[64], specpath[256];

static void build_path(char *buf, size_t n, const char *rel) {
  const char *b = getenv("ARGUS_BUILD_DIR");
  snprintf(buf, n, "%s/%s", b ? b : "build", rel);
}

static void setup(void) {
  if (ws[0])
    return;
  snprintf(ws, sizeof ws, "/tmp/argus-octr-XXXXXX");
  if (!mkdtemp(ws))
    exit(1);
  char ptx[512], harness[512];
  build_path(ptx, sizeof ptx, "tests/data/ptx/overhead.ptx");
  build_path(harness, sizeof harness, "tests/probes/fake_harness_exe");
  char *aptx = ag_path_abs(ptx), *ah = ag_path_abs(harness);
  if (access(aptx, R_OK) != 0) {
    printf("no PTX corpus (%s): skipped\n", aptx);
    exit(77);
  }
  snprintf(specpath, sizeof specpath, "%s/spec.json", ws);
  ag_str s = AG_STR_INIT;
  ag_str_printf(&s, "{\"name\": \"overhead\", \"module\": {\"ptx\": \"%s\"}, \"run\": [\"%s\", "
                    "\"ok\", \"module.cubin\", \"2\"]}",
                aptx, ah);
  ag_file_write_atomic(specpath, s.p, s.len);
  ag_str_release(&s);
  ag_free(aptx);
  ag_free(ah);
}

static const ag_task *counters_run(const ag_plan *p) {
  for (size_t i = 0; i < p->tasks.n; i++) {
    const ag_task *t = p->tasks.v[i];
    json_t *b = json_object_get(t->config, "backends");
    if (t->type == AG_TASK_COLLECT && json_array_size(b) == 1 &&
        !strcmp(json_string_value(json_array_get(b, 0)), "counters"))
      return t;
  }
  return NULL;
}

TEST(plan) {
  CHK_SKIP_UNDER_ASAN_CUPTI_HOST();
  setup();
  unsetenv("ARGUS_LIBCUPTI"); /* the real CUPTI's host API: GH100's list */
  const char *sigs[] = {"duration", "hw_counters"};
  char wsdir[128];
  snprintf(wsdir, sizeof wsdir, "%s/.argus", ws);
  ag_observe_opts o = {.spec = specpath, .workspace = wsdir, .region = "step", .signals = sigs,
                       .nsignals = 2, .plan_only = 1, .ndevices = 0};
  ag_diags d;
  ag_diags_init(&d);
  ag_observe_result r;
  CHECK_EQ_INT(ag_observe(&o, &d, &r), 0);
  if (!r.plan)
    goto out;
  const ag_task *ct = counters_run(r.plan);
  CHECK(ct != NULL);
  if (!ct)
    goto out;
  CHECK_EQ_INT(ct->effects, AG_EFF_SERIALIZES_KERNELS);
  CHECK_EQ_STR(json_string_value(json_object_get(ct->config, "variant")), "trace-free");
  CHECK_EQ_STR(json_string_value(json_object_get(ct->config, "ranges")), "auto");
  /* a partition of its own: no other collection shares its run */
  int others = 0, shared_compile = 0;
  for (size_t i = 0; i < r.plan->tasks.n; i++) {
    const ag_task *t = r.plan->tasks.v[i];
    if (t->type != AG_TASK_COLLECT || t == ct)
      continue;
    others++;
    CHECK(t->run != ct->run);
    /* the trace-free timing run compiles the same build */
    shared_compile |= t->deps.n && ct->deps.n && t->deps.v[0] == ct->deps.v[0];
  }
  CHECK_EQ_INT(others, 2); /* the timing run and the traced run */
  CHECK(shared_compile);
  CHECK_EQ_INT(r.plan->nruns, 3);
  ag_str txt = AG_STR_INIT;
  ag_plan_print_text(r.plan, &txt);
  printf("%s", ag_str_cstr(&txt));
  CHECK_CONTAINS(ag_str_cstr(&txt), "effects=serializes_kernels");
  CHECK_CONTAINS(ag_str_cstr(&txt), "hardware counters, ");
  CHECK_CONTAINS(ag_str_cstr(&txt), " replay passes per launch (kernel replay)");
  ag_str_release(&txt);
out:
  ag_observe_result_release(&r);
  ag_diags_release(&d);
}

/* Runs argus with the stand-ins; returns its exit status. */
static int argus(ag_str *out, ag_str *err, int fakes, ...) {
  char bin[1024], fake[1024], ld[1200], wsdir[128];
  build_path(bin, sizeof bin, "tools/argus/argus");
  build_path(fake, sizeof fake, "tests/probes/fakecuda");
  char *ab = ag_path_abs(getenv("ARGUS_BIN") ? getenv("ARGUS_BIN") : bin);
  char *af = ag_path_abs(fake);
  snprintf(ld, sizeof ld, "LD_LIBRARY_PATH=%s", af);
  snprintf(wsdir, sizeof wsdir, "%s/cli-ws", ws);
  const char *env[] = {ld, "ARGUS_LIBCUPTI=" FAKE_CUPTI, "FAKE_CUPTI_SUBSCRIBE=0",
                       "FAKE_CUPTI_PROFILER=0", "FAKE_CUPTI_RANGES=2", NULL};
  const char *argv[24] = {ab, "-W", wsdir};
  int n = 3;
  va_list ap;
  va_start(ap, fakes);
  for (const char *x; n < 23 && (x = va_arg(ap, const char *));)
    argv[n++] = x;
  va_end(ap);
  argv[n] = NULL;
  ag_str_clear(out);
  ag_str_clear(err);
  ag_proc_opts o = {.argv = argv, .env_add = fakes ? env : NULL, .capture_out = out,
                    .capture_err = err, .timeout_s = 120};
  ag_proc_result r;
  int rc = ag_proc_run(&o, &r);
  ag_free(ab);
  ag_free(af);
  return rc || !r.exited ? -1 : r.exit_code;
}

TEST(metrics) {
  CHK_SKIP_UNDER_ASAN_CUPTI_HOST();
  setup();
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  unsetenv("ARGUS_LIBCUPTI");
  CHECK_EQ_INT(argus(&out, &err, 0, "plan", specpath, "--region", "step", "--signals",
                     "duration,hw_counters", "--metrics", "dram__bytes_red.sum", NULL),
               2);
  CHECK_CONTAINS(ag_str_cstr(&err), "--metrics: 'dram__bytes_red.sum' is not a metric of chip "
                                    "GH100: did you mean 'dram__bytes_read.sum'");
  CHECK_EQ_INT(argus(&out, &err, 0, "plan", specpath, "--region", "step", "--signals",
                     "hw_counters", "--metrics", "lts__t_sectors.sum", NULL),
               0);
  CHECK_EQ_INT(argus(&out, &err, 0, "observe", specpath, "--region", "step", "--metrics",
                     "lts__t_sectors.sum", NULL),
               2);
  CHECK_CONTAINS(ag_str_cstr(&err), "--metrics names hardware counters: it needs the signal "
                                    "hw_counters");
  CHECK_EQ_INT(argus(&out, &err, 0, "plan", specpath, "--region", "step", "--signals",
                     "hw_counters", "--counter-ranges", "kernel", NULL),
               2);
  CHECK_CONTAINS(ag_str_cstr(&err), "--counter-ranges 'kernel' is neither 'auto'");
  ag_str_release(&out);
  ag_str_release(&err);
}

static json_t *value_of(json_t *rep, const char *region, const char *stat) {
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(rep, "values"), i, v) {
    const char *r = json_string_value(json_object_get(v, "region"));
    if (r && !strcmp(r, region) &&
        !strcmp(json_string_value(json_object_get(v, "stat")), stat) &&
        !strcmp(json_string_value(json_object_get(v, "signal")), "hw_counters"))
      return v;
  }
  return NULL;
}

TEST(observe) {
  setup();
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  int rc = argus(&out, &err, 1, "--json", "observe", specpath, "--region", "step", "--signals",
                 "hw_counters", "--metrics", "lts__t_sectors.sum", NULL);
  if (rc)
    fprintf(stderr, "%s\n%s\n", ag_str_cstr(&out), ag_str_cstr(&err));
  CHECK_EQ_INT(rc, 0);
  json_t *rep = json_loads(ag_str_cstr(&out), 0, NULL);
  CHECK(rep != NULL);
  if (!rep)
    goto out;
  /* the stand-in's value of metric k in range r: (r + 1) * 1000 + k */
  json_t *v = value_of(rep, "(launch 1 kern)", "dram__bytes_read.sum");
  CHECK(v != NULL);
  if (v) {
    CHECK_EQ_STR(json_string_value(json_object_get(v, "unit")), "byte");
    CHECK_EQ_STR(json_string_value(json_object_get(v, "qual")), "observed");
    CHECK(json_number_value(json_object_get(v, "value")) == 2005.0);
  }
  /* the named metric, last: after the 37 of the default set */
  v = value_of(rep, "(launch 0 kern)", "lts__t_sectors.sum");
  CHECK(v && json_number_value(json_object_get(v, "value")) == 1037.0);
  v = value_of(rep, "(launch 0 kern)", "roofline.fp32_flop");
  CHECK(v && !strcmp(json_string_value(json_object_get(v, "unit")), "FLOP"));
  v = value_of(rep, "(device)", "peak.fp32_flop_per_s");
  CHECK(v && json_number_value(json_object_get(v, "value")) == 132.0 * 128 * 2 * 1.98e9);
  char *w = json_dumps(json_object_get(rep, "warnings"), 0);
  CHECK_CONTAINS(w, "needs 10 passes");
  free(w);
  json_decref(rep);
  /* again: from the workspace */
  CHECK_EQ_INT(argus(&out, &err, 1, "observe", specpath, "--region", "step", "--signals",
                     "hw_counters", "--metrics", "lts__t_sectors.sum", NULL),
               0);
  CHECK_CONTAINS(ag_str_cstr(&err), "from the workspace");
out:
  ag_str_release(&out);
  ag_str_release(&err);
}

/* The comm signal through observe with the stand-ins: its run is the system
 * backend's (its output is named "system"), so synth.comm must read that
 * run's timeline. The stand-in CUPTI records no calibration kernel, so the
 * timeline is refused when decoded: the synthesis got as far as the file
 * (before, it found no input at all: "cannot read the system timeline (none)"). */
TEST(comm) {
  setup();
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  int rc = argus(&out, &err, 1, "--json", "observe", specpath, "--region", "step", "--signals",
                 "comm", NULL);
  CHECK_EQ_INT(rc, 1);
  json_t *rep = json_loads(ag_str_cstr(&out), 0, NULL);
  CHECK(rep != NULL);
  char *m = rep ? json_dumps(json_object_get(rep, "missing"), 0) : NULL;
  CHECK_CONTAINS(m ? m : "", "system.json: error: no calibration kernel");
  CHECK(m && !strstr(m, "cannot read the system timeline"));
  free(m);
  json_decref(rep);
  ag_str_release(&out);
  ag_str_release(&err);
}

RUN_TESTS(T(plan), T(metrics), T(observe), T(comm))
