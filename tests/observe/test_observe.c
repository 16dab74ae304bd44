/* test_observe.c — `argus observe` / `argus plan` end to end on the CPU:
 * the real planner, runtime, executors and workspace on the overhead
 * example's PTX (built at build time by nvcc). Collection needs a GPU; here
 * the harness is a program that fails, or there is no GPU lane, so the
 * failure paths run for real. */
#include "argus/collect.h"
#include "argus/observe.h"
#include "argus/report.h"
#include "argus/store.h"
#include "argus/variant.h"
#include "check.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>

static char ws[64], specpath[256], badspec[256];

static void setup(void) {
  if (ws[0])
    return;
  snprintf(ws, sizeof ws, "/tmp/argus-obs-XXXXXX");
  if (!mkdtemp(ws))
    exit(1);
  const char *bd = getenv("ARGUS_BUILD_DIR");
  char ptx[512];
  char *abs = realpath(bd ? bd : "build", NULL);
  snprintf(ptx, sizeof ptx, "%s/tests/data/ptx/overhead.ptx", abs ? abs : "build");
  free(abs);
  if (access(ptx, R_OK) != 0) {
    printf("no PTX corpus (%s): skipped\n", ptx);
    exit(77);
  }
  /* the harness is `false`: a run that fails the way a broken harness does */
  snprintf(specpath, sizeof specpath, "%s/spec.json", ws);
  ag_str s = AG_STR_INIT;
  ag_str_printf(&s, "{\"name\": \"overhead\", \"module\": {\"ptx\": \"%s\"}, \"run\": [\"false\"]}",
                ptx);
  ag_file_write_atomic(specpath, s.p, s.len);
  ag_str_clear(&s);
  snprintf(badspec, sizeof badspec, "%s/bad.json", ws);
  ag_str_puts(&s, "{\"name\": \"x\",\n \"module\": {\"ptx\": \"missing.ptx\"},\n \"runn\": []}");
  ag_file_write_atomic(badspec, s.p, s.len);
  ag_str_release(&s);
}

static int observe(const char *region, const char *sigs_csv, const char *scope, int ndev,
                   int plan_only, ag_observe_result *r, ag_diags *d) {
  static char buf[256];
  static const char *sigs[8];
  int n = 0;
  snprintf(buf, sizeof buf, "%s", sigs_csv);
  for (char *t = strtok(buf, ","); t && n < 8; t = strtok(NULL, ","))
    sigs[n++] = t;
  char wsdir[128];
  snprintf(wsdir, sizeof wsdir, "%s/.argus", ws);
  ag_observe_opts o = {.spec = specpath, .workspace = wsdir, .region = region, .signals = sigs,
                       .nsignals = n, .scope = scope, .plan_only = plan_only, .ndevices = ndev,
                       .timeout_s = 30};
  int rc = ag_observe(&o, d, r);
  if (rc && d->items.n) {
    ag_str s = AG_STR_INIT;
    ag_diags_format(d, &s);
    fprintf(stderr, "(expected or not) %s", ag_str_cstr(&s));
    ag_str_release(&s);
  }
  return rc;
}

static ag_task *find(const ag_plan *p, const char *op) {
  for (size_t i = 0; i < p->tasks.n; i++)
    if (!strcmp(p->tasks.v[i]->op, op))
      return p->tasks.v[i];
  return NULL;
}

TEST(test_plan_runs_discovery_only) {
  setup();
  ag_diags d;
  ag_diags_init(&d);
  ag_observe_result r;
  CHECK_EQ_INT(observe("step", "duration,static", "iter=0:8", 0, 1, &r, &d), 0);
  CHECK_EQ_INT(find(r.plan, "discover")->status, AG_TS_OK);
  CHECK_EQ_INT(find(r.plan, "collect")->status, AG_TS_PENDING);
  CHECK_EQ_INT(find(r.plan, "compile")->status, AG_TS_PENDING);
  CHECK(r.report == NULL);
  CHECK_EQ_INT(r.stats.failed, 0);
  ag_observe_result_release(&r);
  /* an unknown region fails discovery with the known ones listed */
  CHECK_EQ_INT(observe("nope", "duration", NULL, 0, 1, &r, &d), 0);
  ag_task *disc = find(r.plan, "discover");
  CHECK_EQ_INT(disc->status, AG_TS_FAILED);
  CHECK_CONTAINS(disc->error, "unknown region 'nope'");
  CHECK_CONTAINS(disc->error, "overhead_compute/work/step");
  CHECK(!strstr(disc->error, "did you mean"));
  ag_observe_result_release(&r);
  /* a mistyped one: the close names first (its own name and the qualified) */
  CHECK_EQ_INT(observe("wrok", "duration", NULL, 0, 1, &r, &d), 0);
  disc = find(r.plan, "discover");
  CHECK_EQ_INT(disc->status, AG_TS_FAILED);
  printf("%s\n", disc->error);
  CHECK_CONTAINS(disc->error, "unknown region 'wrok' in overhead: did you mean 'work'? (known: ");
  ag_observe_result_release(&r);
  ag_diags_release(&d);
}

TEST(test_observe_without_gpu_and_memoization) {
  setup();
  ag_diags d;
  ag_diags_init(&d);
  ag_observe_result r;
  CHECK_EQ_INT(observe("work", "duration,static", NULL, 0, 0, &r, &d), 0);
  /* static is delivered, duration is missing with the reason */
  CHECK(r.report != NULL);
  json_t *vals = json_object_get(r.report, "values");
  CHECK(json_array_size(vals) > 0);
  size_t i;
  json_t *v;
  int regs = 0;
  json_array_foreach(vals, i, v) {
    CHECK_EQ_STR(json_string_value(json_object_get(v, "qual")), "observed");
    CHECK(json_array_size(json_object_get(json_object_get(v, "provenance"), "tasks")) >= 3);
    if (!strcmp(json_string_value(json_object_get(v, "stat")), "registers"))
      regs = (int)json_integer_value(json_object_get(v, "value"));
  }
  CHECK(regs > 0 && regs <= 255);
  json_t *miss = json_object_get(r.report, "missing");
  CHECK_EQ_INT(json_array_size(miss), 2); /* the duration and the tracing cost */
  CHECK_CONTAINS(json_string_value(json_object_get(json_array_get(miss, 0), "why")),
                 "needs a GPU");
  CHECK_CONTAINS(json_string_value(json_object_get(json_array_get(miss, 1), "why")),
                 "the traced run timed no launch");
  CHECK_EQ_INT(find(r.plan, "synth.duration")->status, AG_TS_SKIPPED);
  CHECK_EQ_INT(find(r.plan, "transform.traced")->status, AG_TS_OK); /* variants compiled */
  CHECK_EQ_INT(find(r.plan, "synth.static")->status, AG_TS_OK);
  CHECK(r.report_hash[0]);
  ag_observe_result_release(&r);
  /* the same query again: everything that succeeded comes from the workspace */
  CHECK_EQ_INT(observe("work", "static", NULL, 0, 0, &r, &d), 0);
  CHECK_EQ_INT(find(r.plan, "compile")->status, AG_TS_CACHED);
  CHECK_EQ_INT(find(r.plan, "synth.static")->status, AG_TS_CACHED);
  CHECK_EQ_INT(find(r.plan, "report")->status, AG_TS_OK); /* the report is joined afresh */
  CHECK_EQ_INT(r.stats.ok, 1);
  ag_observe_result_release(&r);
  ag_diags_release(&d);
}

TEST(test_failing_harness_fails_alone) {
  setup();
  ag_diags d;
  ag_diags_init(&d);
  ag_observe_result r;
  /* one GPU lane: the collection runs the harness, which fails */
  CHECK_EQ_INT(observe("work", "duration,occurrences,static", NULL, 1, 0, &r, &d), 0);
  ag_task *col = find(r.plan, "collect");
  CHECK_EQ_INT(col->status, AG_TS_FAILED);
  CHECK(col->error != NULL);
  CHECK_EQ_INT(find(r.plan, "synth.duration")->status, AG_TS_SKIPPED);
  CHECK_EQ_INT(find(r.plan, "synth.occurrences")->status, AG_TS_SKIPPED);
  CHECK(find(r.plan, "synth.static")->status == AG_TS_OK ||
        find(r.plan, "synth.static")->status == AG_TS_CACHED);
  json_t *miss = json_object_get(r.report, "missing");
  CHECK_EQ_INT(json_array_size(miss), 3); /* duration, occurrences, the tracing cost */
  CHECK_CONTAINS(json_string_value(json_object_get(json_array_get(miss, 0), "why")),
                 "(collect) failed");
  ag_observe_result_release(&r);
  ag_diags_release(&d);
}

TEST(test_bad_queries) {
  setup();
  ag_diags d;
  ag_diags_init(&d);
  ag_observe_result r;
  CHECK_EQ_INT(observe("work", "duration,bogus", NULL, 0, 0, &r, &d), AG_EINVAL);
  CHECK_CONTAINS(d.items.v[d.items.n - 1].msg, "unknown signal 'bogus'");
  CHECK_EQ_INT(observe("work", "duration", "iter=3:3", 0, 0, &r, &d), AG_EINVAL);
  CHECK_CONTAINS(d.items.v[d.items.n - 1].msg, "empty scope");
  /* a spec with an unknown key: a diagnostic with line and column */
  char keep[256];
  memcpy(keep, specpath, sizeof keep);
  memcpy(specpath, badspec, sizeof specpath);
  CHECK(observe("work", "duration", NULL, 0, 0, &r, &d) != 0);
  memcpy(specpath, keep, sizeof keep);
  int found = 0;
  for (size_t i = 0; i < d.items.n; i++)
    found |= d.items.v[i].line == 3 && strstr(d.items.v[i].msg, "runn") != NULL;
  CHECK(found);
  ag_diags_release(&d);
}

/* Runs the argus binary with the NULL-terminated arguments. */
static int cli(ag_str *out, ag_str *err, ...) {
  char wsdir[128];
  snprintf(wsdir, sizeof wsdir, "%s/cli-ws", ws);
  const char *argv[16] = {getenv("ARGUS_BIN") ? getenv("ARGUS_BIN") : "argus", "-W", wsdir};
  int n = 3;
  va_list ap;
  va_start(ap, err);
  for (const char *x; n < 15 && (x = va_arg(ap, const char *));)
    argv[n++] = x;
  va_end(ap);
  argv[n] = NULL;
  ag_str_clear(out);
  ag_str_clear(err);
  ag_proc_opts o = {.argv = argv, .capture_out = out, .capture_err = err, .timeout_s = 120};
  ag_proc_result r;
  if (ag_proc_run(&o, &r) || !r.exited)
    return -1;
  return r.exit_code;
}

TEST(test_cli) {
  setup();
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  CHECK_EQ_INT(cli(&out, &err, "plan", specpath, "--region", "step", "--dot", NULL), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "digraph plan");
  CHECK_EQ_INT(cli(&out, &err, "--json", "plan", specpath, "--region", "step", NULL), 0);
  json_t *j = json_loads(ag_str_cstr(&out), 0, NULL);
  /* discover, both variants and compiles, the timing and traced runs, the
   * duration and its tracing cost, the report */
  CHECK(j && json_array_size(json_object_get(j, "tasks")) == 10);
  json_decref(j);
  CHECK_EQ_INT(cli(&out, &err, "plan", specpath, "--region", "nope", NULL), 1);
  CHECK_CONTAINS(ag_str_cstr(&err), "unknown region 'nope'");
  CHECK_EQ_INT(cli(&out, &err, "observe", specpath, NULL), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "--region NAME is required");
  CHECK_EQ_INT(cli(&out, &err, "observe", specpath, "--region", "work", "--signals", "nope", NULL),
               2);
  CHECK_CONTAINS(ag_str_cstr(&err), "unknown signal 'nope'");
  CHECK_EQ_INT(cli(&out, &err, "observe", "--retry-failed", NULL), 1);
  CHECK_CONTAINS(ag_str_cstr(&err), "no earlier query");
  CHECK_EQ_INT(cli(&out, &err, "observe", specpath, "--region", "work", "--launches", "5:3", NULL),
               2);
  CHECK_CONTAINS(ag_str_cstr(&err), "--launches '5:3' is not a launch selection");
  /* no GPU (or a failing harness): exit 1, the report says what is missing */
  CHECK_EQ_INT(cli(&out, &err, "observe", specpath, "--region", "work", "--signals",
                   "duration,static", NULL),
               1);
  CHECK_CONTAINS(ag_str_cstr(&out), "missing duration");
  CHECK_CONTAINS(ag_str_cstr(&out), "registers");
  /* stderr names the failed task and its reason */
  CHECK_CONTAINS(ag_str_cstr(&err), "argus observe: task #");
  CHECK_CONTAINS(ag_str_cstr(&err), ") failed: ");
  /* retry: what succeeded comes from the workspace */
  CHECK_EQ_INT(cli(&out, &err, "observe", "--retry-failed", NULL), 1);
  CHECK_CONTAINS(ag_str_cstr(&err), "from the workspace");
  CHECK_CONTAINS(ag_str_cstr(&out), "missing duration");
  CHECK_EQ_INT(cli(&out, &err, "--json", "observe", specpath, "--region", "work", "--signals",
                   "static", NULL),
               0);
  j = json_loads(ag_str_cstr(&out), 0, NULL);
  CHECK(j && !strcmp(json_string_value(json_object_get(j, "schema")), "argus.report/1"));
  json_decref(j);
  /* a workspace known to be damaged: observe and plan refuse to write to it
   * (issue 16), unless told to */
  char path[256];
  snprintf(path, sizeof path, "%s/cli-ws/damaged", ws);
  CHECK_EQ_INT(ag_file_write_atomic(path, "artifact 00ff is corrupted\n", 27), 0);
  CHECK_EQ_INT(cli(&out, &err, "observe", specpath, "--region", "work", "--signals", "static",
                   NULL),
               1);
  CHECK_CONTAINS(ag_str_cstr(&err), "refusing to write to the workspace");
  CHECK_CONTAINS(ag_str_cstr(&err), "artifact 00ff is corrupted");
  CHECK_CONTAINS(ag_str_cstr(&err), "argus ws check");
  CHECK_EQ_INT(cli(&out, &err, "plan", specpath, "--region", "step", NULL), 1);
  CHECK_CONTAINS(ag_str_cstr(&err), "refusing to write to the workspace");
  CHECK_EQ_INT(cli(&out, &err, "observe", specpath, "--region", "work", "--signals", "static",
                   "--ignore-damage", NULL),
               0);
  CHECK_CONTAINS(ag_str_cstr(&err), "writing to a damaged workspace");
  /* a sound check clears it */
  CHECK_EQ_INT(cli(&out, &err, "ws", "check", NULL), 0);
  CHECK(access(path, F_OK) != 0);
  CHECK_EQ_INT(cli(&out, &err, "plan", specpath, "--region", "step", NULL), 0);
  /* a zero-length database beside the blobs: never initialized over */
  snprintf(path, sizeof path, "%s/cli-ws/workspace.db", ws);
  CHECK_EQ_INT(truncate(path, 0), 0);
  CHECK_EQ_INT(cli(&out, &err, "plan", specpath, "--region", "step", NULL), 1);
  CHECK_CONTAINS(ag_str_cstr(&err), "will not initialize over it");
  CHECK_EQ_INT(cli(&out, &err, "observe", specpath, "--region", "work", "--signals", "static",
                   NULL),
               1);
  CHECK_CONTAINS(ag_str_cstr(&err), "will not initialize over it");
  struct stat sb;
  CHECK(stat(path, &sb) == 0 && sb.st_size == 0);
  ag_str_release(&out);
  ag_str_release(&err);
}

TEST(test_relative_workspace) {
  /* a relative workspace path: harnesses run in the spec's directory, so the
   * run directory must not be relative (regression seen on the H200) */
  setup();
  char cwd[4096];
  CHECK(getcwd(cwd, sizeof cwd) != NULL);
  char sub[128];
  snprintf(sub, sizeof sub, "%s/sub", ws);
  ag_mkdir_p(sub, 0755);
  CHECK_EQ_INT(chdir(sub), 0); /* the spec's directory is not the current one */
  const char *sigs[] = {"duration"};
  ag_observe_opts o = {.spec = "../spec.json", .workspace = "rel/.argus", .region = "work",
                       .signals = sigs, .nsignals = 1, .ndevices = 1, .timeout_s = 30};
  ag_diags d;
  ag_diags_init(&d);
  ag_observe_result r;
  CHECK_EQ_INT(ag_observe(&o, &d, &r), 0);
  ag_task *col = find(r.plan, "collect");
  CHECK_EQ_INT(col->status, AG_TS_FAILED);
  CHECK(col->error && !strstr(col->error, "cannot start the harness"));
  printf("collect error with a relative workspace: %.200s\n", col->error ? col->error : "");
  ag_observe_result_release(&r);
  ag_diags_release(&d);
  CHECK_EQ_INT(chdir(cwd), 0);
}

/* The perturbation value `stat` of a report (no region), -1 if absent. */
static double pval(json_t *rep, const char *stat) {
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(rep, "values"), i, v) {
    const char *sg = json_string_value(json_object_get(v, "signal"));
    const char *st = json_string_value(json_object_get(v, "stat"));
    if (sg && st && !strcmp(sg, "perturbation") && !strcmp(st, stat))
      return json_number_value(json_object_get(v, "value"));
  }
  return -1;
}

static json_t *pjson(json_t *rep, const char *stat) {
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(rep, "values"), i, v) {
    const char *st = json_string_value(json_object_get(v, "stat"));
    if (st && !strcmp(st, stat))
      return json_object_get(v, "value");
  }
  return NULL;
}

/* The provenance "collector" of the first value of `signal`: "(null)" for
 * JSON null, "(absent)" when the field or the value is not there. */
static const char *collector(json_t *rep, const char *signal) {
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(rep, "values"), i, v) {
    const char *sg = json_string_value(json_object_get(v, "signal"));
    if (!sg || strcmp(sg, signal))
      continue;
    json_t *c = json_object_get(json_object_get(v, "provenance"), "collector");
    return json_is_null(c) ? "(null)" : c ? json_string_value(c) : "(absent)";
  }
  return "(absent)";
}

static int has_warning(json_t *rep, const char *needle) {
  size_t i;
  json_t *w;
  json_array_foreach(json_object_get(rep, "warnings"), i, w) if (strstr(json_string_value(w),
                                                                        needle)) return 1;
  return 0;
}

/* observe on the fake driver (tests/probes/fake_cuda.c) through the worker
 * and the fake harness, launching `launches` times; the fake's kernel times
 * and occupancy come from FAKE_CUDA_* (the caller sets them). */
static unsigned fake_records; /* --records for fake_observe (0: the default) */
static const char *fake_production; /* the spec's "production" file (NULL: none) */
static const char *fake_tag = "";   /* a workspace of its own (no memo hits from others) */
static const char *fake_trace;      /* --trace (NULL: every region) */
static const char *fake_scope;      /* --scope (NULL: everything) */
static const char *fake_mode = "ok"; /* the fake harness's mode (fake_harness.c) */
static int fake_process;             /* run the harness as a program (fake_harness_exe) */

static int fake_observe(const char *launches_arg, const char *sel, ag_observe_result *r) {
  const char *bd = getenv("ARGUS_BUILD_DIR");
  char *abs = realpath(bd ? bd : "build", NULL);
  char fake[512], lib[512], ptx[512], spec[256], wsdir[160];
  snprintf(fake, sizeof fake, "%s/tests/probes/libfake_cuda.so", abs ? abs : "build");
  snprintf(lib, sizeof lib, "%s/tests/probes/%s", abs ? abs : "build",
           fake_process ? "fake_harness_exe" : "libfake_harness.so");
  snprintf(ptx, sizeof ptx, "%s/tests/data/ptx/overhead.ptx", abs ? abs : "build");
  free(abs);
  setenv("ARGUS_LIBCUDA", fake, 1);
  snprintf(spec, sizeof spec, "%s/fake-spec.json", ws);
  snprintf(wsdir, sizeof wsdir, "%s/fake-%s-%s%s", ws, launches_arg, sel ? sel : "default",
           fake_tag);
  ag_str s = AG_STR_INIT;
  ag_str_printf(&s, "{\"name\": \"overhead\", \"module\": {\"ptx\": \"%s\"%s%s%s}, \"run\": "
                    "[\"%s\", \"%s\", \"/dev/null\", \"%s\"]%s%s%s}",
                ptx, fake_production ? ", \"production\": \"" : "",
                fake_production ? fake_production : "", fake_production ? "\"" : "",
                fake_process ? lib : "fake", fake_mode, launches_arg,
                fake_process ? "" : ", \"run_library\": \"", fake_process ? "" : lib,
                fake_process ? "" : "\"");
  ag_file_write_atomic(spec, s.p, s.len);
  ag_str_release(&s);
  const char *sigs[] = {"duration"};
  ag_observe_opts o = {.spec = spec, .workspace = wsdir, .region = "work", .signals = sigs,
                       .nsignals = 1, .ndevices = 1, .timeout_s = 30, .launches = sel,
                       .records_per_warp = fake_records, .trace_regions = fake_trace,
                       .scope = fake_scope};
  ag_diags d;
  ag_diags_init(&d);
  int rc = ag_observe(&o, &d, r);
  ag_diags_release(&d);
  return rc;
}

/* The lines of FAKE_CUDA_LOG that start with `prefix`, joined by '|'. */
static void fake_lines(const char *log, const char *prefix, ag_str *out) {
  char *text = NULL;
  size_t len = 0;
  ag_str_init(out);
  if (ag_file_read(log, &text, &len))
    return;
  for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n"))
    if (!strncmp(l, prefix, strlen(prefix)))
      ag_str_printf(out, "%s%s", out->len ? "|" : "", l);
  ag_free(text);
}

/* Issue 17: the timing run loads the build the user ships (a PTX module
 * itself; the spec's production file), and the report says which; the
 * records per warp come from the count-only warm-up launch (its largest
 * count + 1/8 + 2) unless --records is given; every recorded launch's
 * descriptor was bound ahead (none inline) when the layout was known. */
TEST(test_timed_build_and_counted_records) {
  setup();
  ag_observe_result r;
  char log[256];
  snprintf(log, sizeof log, "%s/fake-cuda.log", ws);
  setenv("FAKE_CUDA_LOG", log, 1);
  setenv("FAKE_CUDA_RECORDS", "40", 1);
  setenv("FAKE_CUDA_NS_TIME", "100000", 1);
  setenv("FAKE_CUDA_NS_TRACE", "100500", 1);
  fake_tag = "-sized";
  unlink(log);
  CHECK_EQ_INT(fake_observe("5", NULL, &r), 0);
  ag_str l = AG_STR_INIT;
  fake_lines(log, "launch", &l);
  /* launch 0 count-only (one trash slot per warp), 1-4 at 40 + 5 + 2 = 47 records (48 slots) */
  CHECK_EQ_STR(ag_str_cstr(&l), "launch 0 enabled 1 cap 1|launch 1 enabled 1 cap 48|"
                                "launch 2 enabled 1 cap 48|launch 3 enabled 1 cap 48|"
                                "launch 4 enabled 1 cap 48");
  ag_str_release(&l);
  fake_lines(log, "load", &l);
  /* the timing run loaded the PTX module itself, the traced run a cubin */
  CHECK_EQ_STR(ag_str_cstr(&l), "load //.// Ge|load .ELF...A");
  ag_str_release(&l);
  if (r.report) {
    json_t *ln = pjson(r.report, "launches");
    json_t *rs = json_object_get(ln, "records_sized");
    CHECK_EQ_STR(json_string_value(json_object_get(rs, "from")), "count");
    CHECK_EQ_INT((int)json_integer_value(json_object_get(rs, "max_count")), 40);
    CHECK_EQ_INT((int)json_integer_value(json_object_get(rs, "records_per_warp")), 47);
    json_t *ah = json_object_get(ln, "ahead");
    CHECK_EQ_INT((int)json_integer_value(json_object_get(ah, "bound_inline")), 0);
    CHECK_EQ_INT((int)json_integer_value(json_object_get(ah, "layout_warps")), 4);
    json_t *tb = pjson(r.report, "timed_build");
    CHECK_CONTAINS(json_string_value(tb) ? json_string_value(tb) : "", "the PTX module '");
    ag_str t = AG_STR_INIT;
    ag_report_json_text(r.report, &t);
    CHECK_CONTAINS(ag_str_cstr(&t), "47 records per warp (sized from the count-only launch)");
    ag_str_release(&t);
  }
  ag_observe_result_release(&r);
  /* --records given: no count-only launch; launch 0 unrecorded, 1-4 at 64 */
  fake_records = 64;
  fake_tag = "-sized-64";
  unlink(log);
  CHECK_EQ_INT(fake_observe("5", NULL, &r), 0);
  fake_lines(log, "launch", &l);
  CHECK_EQ_STR(ag_str_cstr(&l), "launch 0 enabled 0 cap 0|launch 1 enabled 1 cap 65|"
                                "launch 2 enabled 1 cap 65|launch 3 enabled 1 cap 65|"
                                "launch 4 enabled 1 cap 65");
  ag_str_release(&l);
  if (r.report) {
    json_t *ah = json_object_get(pjson(r.report, "launches"), "ahead");
    CHECK_EQ_INT((int)json_integer_value(json_object_get(ah, "bound_inline")), 0);
    CHECK(json_is_true(json_object_get(ah, "side_stream")));
  }
  ag_observe_result_release(&r);
  /* ARGUS_TRACE_AHEAD=0: every descriptor bound at its launch, as before */
  setenv("ARGUS_TRACE_AHEAD", "0", 1);
  fake_tag = "-inline";
  unlink(log);
  CHECK_EQ_INT(fake_observe("5", "all", &r), 0);
  unsetenv("ARGUS_TRACE_AHEAD");
  if (r.report) {
    json_t *ah = json_object_get(pjson(r.report, "launches"), "ahead");
    CHECK_EQ_INT((int)json_integer_value(json_object_get(ah, "bound_inline")), 5);
  }
  ag_observe_result_release(&r);
  fake_records = 0;
  /* a spec's production file is what the timing run loads */
  char prod[256];
  snprintf(prod, sizeof prod, "%s/prod.bin", ws);
  ag_file_write_atomic(prod, "FAKEPROD build", 14);
  fake_production = prod;
  fake_tag = "-prod";
  unlink(log);
  CHECK_EQ_INT(fake_observe("3", NULL, &r), 0);
  fake_production = NULL;
  fake_lines(log, "load", &l);
  CHECK_EQ_STR(ag_str_cstr(&l), "load FAKEPROD|load .ELF...A");
  ag_str_release(&l);
  if (r.report) {
    json_t *tb = pjson(r.report, "timed_build");
    CHECK_CONTAINS(json_string_value(tb) ? json_string_value(tb) : "", "prod.bin' named in the spec");
  }
  ag_observe_result_release(&r);
  unsetenv("FAKE_CUDA_LOG");
  unsetenv("FAKE_CUDA_RECORDS");
  fake_tag = "";
}

/* --trace R,...: the traced variant's transform gets the regions (so its
 * key differs from the all-regions variant's); a name the module lacks is
 * the transform's clear error, an empty name a usage error before anything
 * runs. */
TEST(test_trace_selection) {
  setup();
  ag_observe_result r;
  fake_tag = "-trace";
  fake_trace = "step";
  CHECK_EQ_INT(fake_observe("3", NULL, &r), 0);
  int seen = 0;
  for (size_t i = 0; r.plan && i < r.plan->tasks.n; i++) {
    ag_task *t = r.plan->tasks.v[i];
    if (strcmp(t->op, "transform.traced"))
      continue;
    json_t *rs = json_object_get(t->config, "regions");
    CHECK_EQ_INT((int)json_array_size(rs), 1);
    CHECK_EQ_STR(json_string_value(json_array_get(rs, 0)), "step");
    CHECK_EQ_INT(t->status, AG_TS_OK);
    seen++;
  }
  CHECK_EQ_INT(seen, 1);
  ag_observe_result_release(&r);
  fake_trace = "nope";
  CHECK_EQ_INT(fake_observe("3", NULL, &r), 0);
  char *js = r.report ? json_dumps(r.report, 0) : NULL; /* the traced transform's error */
  CHECK_CONTAINS(js ? js : "", "no region 'nope' in the module");
  free(js);
  ag_observe_result_release(&r);
  fake_trace = "step,,work";
  CHECK_EQ_INT(fake_observe("3", NULL, &r), AG_EINVAL);
  ag_observe_result_release(&r);
  fake_trace = NULL;
  fake_tag = "";
}

TEST(test_perturbation_report) {
  setup();
  ag_observe_result r;
  /* the traced build 3 us (3 %) slower and at half the CTAs per SM */
  setenv("FAKE_CUDA_NS_TIME", "100000", 1);
  setenv("FAKE_CUDA_NS_TRACE", "103000", 1);
  setenv("FAKE_CUDA_REGS_TIME", "40", 1);
  setenv("FAKE_CUDA_REGS_TRACE", "72", 1);
  setenv("FAKE_CUDA_CTAS_TIME", "8", 1);
  setenv("FAKE_CUDA_CTAS_TRACE", "4", 1);
  CHECK_EQ_INT(fake_observe("5", NULL, &r), 0);
  CHECK(r.report != NULL);
  if (r.report) {
    CHECK(fabs(pval(r.report, "trace_free_kernel_time") - 100000) < 1);
    CHECK(fabs(pval(r.report, "traced_kernel_time") - 103000) < 1);
    CHECK(fabs(pval(r.report, "added_time") - 3000) < 1);
    CHECK(fabs(pval(r.report, "added_share") - 3.0) < 0.01);
    CHECK_EQ_INT((int)pval(r.report, "registers.trace_free"), 40);
    CHECK_EQ_INT((int)pval(r.report, "registers.traced"), 72);
    CHECK_EQ_INT((int)pval(r.report, "ctas_per_sm.trace_free"), 8);
    CHECK_EQ_INT((int)pval(r.report, "ctas_per_sm.traced"), 4);
    /* each value names the collection that recorded it: the durations the
     * trace, what tracing cost the trace and the timing run it compares */
    CHECK_EQ_STR(collector(r.report, "duration"), "trace");
    CHECK_EQ_STR(collector(r.report, "perturbation"), "trace+time");
    /* the default: launch 0 is the warm-up, 1-4 are recorded (4 launches compared) */
    CHECK_EQ_INT((int)pval(r.report, "launches_compared"), 4);
    json_t *ln = pjson(r.report, "launches");
    CHECK_EQ_INT((int)json_array_size(json_object_get(ln, "recorded")), 4);
    CHECK_EQ_INT((int)json_integer_value(json_array_get(json_object_get(ln, "recorded"), 0)), 1);
    json_t *un = json_object_get(ln, "unrecorded");
    CHECK_EQ_INT((int)json_array_size(json_object_get(un, "count-only: its records per warp "
                                                         "sized the record area "
                                                         "(ARGUS_TRACE_COUNT)")), 1);
    CHECK_EQ_INT((int)json_integer_value(json_object_get(ln, "total")), 5);
    CHECK(has_warning(r.report, "changed occupancy: 4 CTAs per SM against the trace-free "
                                "build's 8"));
    CHECK(has_warning(r.report, "tracing added 3.00 us (3.0 %)"));
    /* each duration carries its record bias, never subtracted */
    json_t *bias = pjson(r.report, "bias");
    CHECK(bias != NULL);
    CHECK_EQ_INT((int)json_integer_value(json_object_get(bias, "cycles_max")), 20);
    CHECK(json_is_false(json_object_get(bias, "subtracted")));
    ag_str t = AG_STR_INIT;
    ag_report_json_text(r.report, &t);
    CHECK_CONTAINS(ag_str_cstr(&t), "warning: the traced build changed occupancy");
    CHECK_CONTAINS(ag_str_cstr(&t), "traced_kernel_time");
    CHECK_CONTAINS(ag_str_cstr(&t), "launches   recorded 1-4 of 5; 0: count-only");
    ag_str_release(&t);
  }
  ag_observe_result_release(&r);
  /* within the bounds: no warning; 1.5 % and 0.9 us over a 60 us kernel */
  setenv("FAKE_CUDA_NS_TIME", "60000", 1);
  setenv("FAKE_CUDA_NS_TRACE", "60900", 1);
  setenv("FAKE_CUDA_CTAS_TRACE", "8", 1);
  CHECK_EQ_INT(fake_observe("3", "last", &r), 0);
  if (r.report) {
    CHECK_EQ_INT((int)json_array_size(json_object_get(r.report, "warnings")), 0);
    json_t *ln = pjson(r.report, "launches");
    CHECK_EQ_INT((int)json_array_size(json_object_get(ln, "recorded")), 1);
    CHECK_EQ_INT((int)json_integer_value(json_array_get(json_object_get(ln, "recorded"), 0)), 2);
  }
  ag_observe_result_release(&r);
  /* 3 % but under 1 us: the timer's resolution, no warning either */
  setenv("FAKE_CUDA_NS_TIME", "20000", 1);
  setenv("FAKE_CUDA_NS_TRACE", "20600", 1);
  CHECK_EQ_INT(fake_observe("3", "all", &r), 0);
  if (r.report) {
    CHECK_EQ_INT((int)json_array_size(json_object_get(r.report, "warnings")), 0);
    CHECK_EQ_INT((int)pval(r.report, "launches_compared"), 3);
  }
  ag_observe_result_release(&r);
  /* a scoped query keeps what tracing cost (a whole-kernel figure, joined on
   * the program alone; before: missing, "its evidence is not this
   * program's", for every scoped duration query) */
  fake_scope = "iter=0:2";
  CHECK_EQ_INT(fake_observe("3", NULL, &r), 0);
  if (r.report) {
    CHECK_EQ_INT((int)pval(r.report, "launches_compared"), 2);
    CHECK_EQ_U64(json_array_size(json_object_get(r.report, "missing")), 0);
    CHECK_EQ_U64(json_array_size(json_object_get(r.report, "not_joined")), 0);
  }
  ag_observe_result_release(&r);
  fake_scope = NULL;
  /* one launch: nothing to skip, it is recorded */
  CHECK_EQ_INT(fake_observe("1", NULL, &r), 0);
  if (r.report)
    CHECK_EQ_INT((int)pval(r.report, "launches_compared"), 1);
  ag_observe_result_release(&r);
  /* a selection past the harness's launches: a warning, nothing recorded */
  CHECK_EQ_INT(fake_observe("2", "5:7", &r), 0);
  if (r.report) {
    CHECK(has_warning(r.report, "--launches 5:7 selects no launch: the harness made 2"));
    CHECK(has_warning(r.report, "no launch was recorded"));
  }
  ag_observe_result_release(&r);
  /* a budget that cannot hold one whole launch: a warning before the run
   * (the host runtime then records the launch with fewer records per warp,
   * and the report counts what it dropped) */
  fake_records = 1u << 24; /* 4 warps x 2^24 records x 16 B: more than 1 GiB */
  CHECK_EQ_INT(fake_observe("2", NULL, &r), 0);
  fake_records = 0;
  if (r.report) {
    CHECK(has_warning(r.report, "cannot hold one whole launch"));
    CHECK(has_warning(r.report, "(launch 1 needs 1025 MiB): lower --records"));
    json_t *lp = json_object_get(pjson(r.report, "launches"), "plan");
    CHECK_EQ_INT((int)json_integer_value(json_object_get(lp, "fits")), 0);
  }
  ag_observe_result_release(&r);
  /* a bad selection is refused before anything runs */
  ag_diags d;
  ag_diags_init(&d);
  ag_launch_sel sel;
  CHECK_EQ_INT(ag_launch_sel_parse("5:3", &sel, &d), AG_EPARSE);
  CHECK_CONTAINS(d.items.v[0].msg, "--launches '5:3' is not a launch selection");
  CHECK_EQ_INT(ag_launch_sel_parse("x", &sel, NULL), AG_EPARSE);
  CHECK_EQ_INT(ag_launch_sel_parse("4:4", &sel, NULL), AG_EPARSE); /* empty */
  CHECK_EQ_INT(ag_launch_sel_parse("-1", &sel, NULL), AG_EPARSE);
  CHECK_EQ_INT(ag_launch_sel_parse("2:", &sel, NULL), AG_EPARSE);
  CHECK_EQ_INT(ag_launch_sel_parse("3", &sel, NULL), 0);
  CHECK(sel.kind == AG_LAUNCH_RANGE && sel.lo == 3 && sel.hi == 4);
  CHECK_EQ_INT(ag_launch_sel_parse("2:5", &sel, NULL), 0);
  CHECK(sel.lo == 2 && sel.hi == 5);
  ag_diags_release(&d);
  unsetenv("ARGUS_LIBCUDA");
}

/* Writes the spec text s (released) to spec and observes it in wsdir: rc of
 * ag_observe, the diagnostics dropped. */
static int observe_text(const char *spec, ag_str *s, const char *wsdir, const char *region,
                        const char *const *sigs, int n, int ndev, ag_observe_result *r) {
  ag_file_write_atomic(spec, s->p, s->len);
  ag_str_release(s);
  ag_observe_opts o = {.spec = spec, .workspace = wsdir, .region = region, .signals = sigs,
                       .nsignals = n, .ndevices = ndev, .timeout_s = 30};
  ag_diags d;
  ag_diags_init(&d);
  int rc = ag_observe(&o, &d, r);
  ag_diags_release(&d);
  return rc;
}

/* The attributed signals through the real observe driver on the CPU (issue
 * 19): the fake driver runs the mapping variant's cubin and counts into its
 * slots; the stand-in CUPTI (tests/sassm/fake_cupti.c) is held by another
 * subscriber, so the SASS-metrics run fails. ownership, from the mapping run
 * alone, stands; inst_mix is missing with the failed run's reason. */
TEST(test_attributed_without_cupti) {
  setup();
  const char *bd = getenv("ARGUS_BUILD_DIR");
  char *abs = realpath(bd ? bd : "build", NULL);
  char fake[512], lib[512], exe[512], cupti[512], ptx[512], spec[256], wsdir[160];
  snprintf(fake, sizeof fake, "%s/tests/probes/libfake_cuda.so", abs ? abs : "build");
  snprintf(exe, sizeof exe, "%s/tests/probes/fake_harness_exe", abs ? abs : "build");
  snprintf(lib, sizeof lib, "%s/tests/probes/libfake_harness.so", abs ? abs : "build");
  snprintf(cupti, sizeof cupti, "%s/tests/sassm/libfake_cupti.so", abs ? abs : "build");
  snprintf(ptx, sizeof ptx, "%s/tests/data/ptx/overhead.ptx", abs ? abs : "build");
  free(abs);
  setenv("ARGUS_LIBCUDA", fake, 1);
  setenv("ARGUS_LIBCUPTI", cupti, 1);
  /* a stand-in nvdisasm: 256 FFMAs in each kernel's section (inst_mix and
   * barriers are derived from the map with the -lineinfo cubin's opcodes) */
  char dis[200];
  snprintf(dis, sizeof dis, "%s/fake-nvdisasm.sh", ws);
  FILE *df = fopen(dis, "w");
  if (df) {
    fputs("#!/bin/sh\nfor k in overhead_compute overhead_memory; do\n"
          "  printf '\\t.section\\t.text.%s,\"ax\",@progbits\\n%s:\\n' $k $k\n"
          "  i=0; while [ $i -lt 256 ]; do\n"
          "    printf '        /*%04x*/                   FFMA R1, R2, R3, R4 ;\\n' $((i*16))\n"
          "    i=$((i+1)); done\ndone\n",
          df);
    fclose(df);
    chmod(dis, 0755);
  }
  setenv("ARGUS_NVDISASM", dis, 1);
  snprintf(spec, sizeof spec, "%s/attr-spec.json", ws);
  snprintf(wsdir, sizeof wsdir, "%s/attr-ws", ws);
  ag_str s = AG_STR_INIT;
  /* the SASS run is a process of its own (the executable), the mapping run
   * goes through the worker (the library) */
  ag_str_printf(&s, "{\"name\": \"overhead\", \"module\": {\"ptx\": \"%s\"}, \"run\": "
                    "[\"%s\", \"ok\", \"/dev/null\", \"2\"], \"run_library\": \"%s\"}",
                ptx, exe, lib);
  const char *sigs[] = {"ownership", "inst_mix", "barriers", "branch"};
  ag_observe_result r;
  int rc = observe_text(spec, &s, wsdir, "work", sigs, 4, 1, &r);
  unsetenv("ARGUS_NVDISASM");
  unsetenv("ARGUS_LIBCUPTI");
  unsetenv("ARGUS_LIBCUDA");
  CHECK_EQ_INT(rc, 0);
  if (rc)
    return;
  const ag_task *own = find(r.plan, "synth.ownership"), *mix = find(r.plan, "synth.inst_mix");
  const ag_task *mapc = NULL, *sassc = NULL;
  for (size_t i = 0; i < r.plan->tasks.n; i++) {
    const ag_task *t = r.plan->tasks.v[i];
    const char *b = json_string_value(json_array_get(json_object_get(t->config, "backends"), 0));
    if (t->type == AG_TASK_COLLECT && b && !strcmp(b, "map"))
      mapc = t;
    if (t->type == AG_TASK_COLLECT && b && !strcmp(b, "sass"))
      sassc = t;
  }
  CHECK(own && mix && mapc && sassc);
  if (!own || !mix || !mapc || !sassc)
    goto out;
  if (mapc->error)
    fprintf(stderr, "mapping run: %s\n", mapc->error);
  CHECK_EQ_INT(mapc->status, AG_TS_OK);
  CHECK_EQ_INT(own->status, AG_TS_OK);
  CHECK_EQ_INT(sassc->status, AG_TS_FAILED);
  CHECK_CONTAINS(sassc->error ? sassc->error : "", "CUPTI already has a subscriber");
  /* inst_mix and barriers: derived from the map (their recipe's evidence is
   * optional); branch, which needs CUPTI's thread-level counts, skipped */
  CHECK_EQ_INT(mix->status, AG_TS_OK);
  const ag_task *bar = find(r.plan, "synth.barriers"), *br = find(r.plan, "synth.branch");
  CHECK(bar && bar->status == AG_TS_OK);
  CHECK(br && br->status == AG_TS_SKIPPED);
  /* the report: ownership's values for the queried region; inst_mix's
   * derived, its total the ownership's dynamic count (both sum n(r, p)) */
  int owned = 0, mixed = 0, fp32 = 0;
  double dyn = 0, tot = 0; /* over the regions named work (of both kernels) */
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(r.report, "values"), i, v) {
    const char *sg = json_string_value(json_object_get(v, "signal"));
    const char *rg = json_string_value(json_object_get(v, "region"));
    const char *st = json_string_value(json_object_get(v, "stat"));
    double x = json_number_value(json_object_get(v, "value"));
    if (sg && rg && st && !strcmp(sg, "ownership") && strstr(rg, "work") &&
        !strcmp(st, "static_pcs")) {
      owned++;
      CHECK(x > 0);
      CHECK_EQ_STR(json_string_value(json_object_get(v, "qual")), "attributed");
    }
    if (sg && rg && st && !strcmp(sg, "ownership") && strstr(rg, "work") &&
        !strcmp(st, "dynamic"))
      dyn += x;
    if (sg && (!strcmp(sg, "inst_mix") || !strcmp(sg, "barriers"))) {
      mixed++;
      CHECK_EQ_STR(json_string_value(json_object_get(v, "qual")), "derived");
      if (!strcmp(sg, "inst_mix") && rg && strstr(rg, "work") && !strcmp(st, "total"))
        tot += x;
      fp32 += !strcmp(sg, "inst_mix") && rg && strstr(rg, "work") && !strcmp(st, "fp32") &&
              x > 0;
    }
    CHECK(!sg || strcmp(sg, "branch"));
  }
  CHECK(owned >= 1);
  CHECK(mixed >= 1);
  CHECK(fp32 >= 1);
  CHECK(dyn > 0);
  CHECK(tot == dyn);
  char *t = json_dumps(json_object_get(r.report, "warnings"), 0);
  CHECK_CONTAINS(t ? t : "", "is derived from the mapping run's block counts through line info");
  CHECK_CONTAINS(t ? t : "", "so `branch` stays missing (the harness failed");
  free(t);
  t = json_dumps(json_object_get(r.report, "missing"), 0);
  CHECK_CONTAINS(t ? t : "", "branch");
  CHECK_CONTAINS(t ? t : "", "CUPTI already has a subscriber");
  CHECK(!strstr(t ? t : "", "inst_mix"));
  free(t);
out:
  ag_observe_result_release(&r);
}

/* The traced build of tests/observe/occupancy.cu needs 37 registers where
 * the trace-free one needs 27 (bucket up to 32): observe compiles it again
 * with .maxnreg 32 (ptxas ignores -maxrregcount under launch bounds) and
 * says so, also without a GPU. */
TEST(test_traced_build_keeps_occupancy) {
  setup();
  const char *src = getenv("ARGUS_SOURCE_DIR");
  char *abs = realpath(src ? src : ".", NULL);
  char spec[256], wsdir[160];
  snprintf(spec, sizeof spec, "%s/occ-spec.json", ws);
  snprintf(wsdir, sizeof wsdir, "%s/occ-ws", ws);
  ag_str s = AG_STR_INIT;
  ag_str_printf(&s, "{\"name\": \"occ\", \"module\": {\"cuda\": \"%s/tests/observe/occupancy.cu\", "
                    "\"flags\": [\"-arch=sm_90a\"]}, \"run\": [\"false\"]}",
                abs ? abs : ".");
  free(abs);
  const char *sigs[] = {"duration"};
  ag_observe_result r;
  int rc = observe_text(spec, &s, wsdir, "body", sigs, 1, 0, &r);
  if (rc == AG_ENOTFOUND || rc == AG_ECHILD) { /* no nvcc here */
    printf("cannot build occupancy.cu (%s): skipped\n", ag_strerror(rc));
    exit(77);
  }
  CHECK_EQ_INT(rc, 0);
  if (rc)
    return;
  ag_task *cc = NULL;
  for (size_t i = 0; i < r.plan->tasks.n; i++)
    if (!strcmp(r.plan->tasks.v[i]->op, "compile") &&
        json_object_get(r.plan->tasks.v[i]->config, "occupancy_of"))
      cc = r.plan->tasks.v[i];
  CHECK(cc && cc->status == AG_TS_OK);
  /* the trace-free compile's "production" output is the markers-off build
   * (what the timing run loads; here the markers change no code, so it may
   * be the same cubin as the trace-free variant's) */
  for (size_t i = 0; i < r.plan->tasks.n; i++) {
    ag_task *t = r.plan->tasks.v[i];
    if (strcmp(t->op, "compile") || json_object_get(t->config, "occupancy_of"))
      continue;
    const char *ph = json_string_value(json_object_get(t->outputs, "production"));
    const char *ch = json_string_value(json_object_get(t->outputs, "cubin"));
    CHECK(ph && ch);
    printf("production build %s the trace-free variant's cubin\n",
           ph && ch && !strcmp(ph, ch) ? "is" : "differs from");
  }
  ag_store *st = NULL;
  void *data = NULL;
  size_t len = 0;
  json_t *res = NULL;
  if (cc && ag_store_open(wsdir, 0, &st) == 0 &&
      ag_store_get(st, json_string_value(json_object_get(cc->outputs, "resources")), &data,
                   &len) == 0)
    res = json_loadb(data, len, 0, NULL);
  ag_free(data);
  ag_store_close(st);
  json_t *occ = json_object_get(res, "occupancy");
  CHECK(occ != NULL);
  CHECK_EQ_INT((int)json_integer_value(json_object_get(occ, "capped")), 1);
  CHECK(json_is_true(json_object_get(occ, "kept")));
  json_t *f = json_array_get(json_object_get(occ, "functions"), 0);
  int tf = (int)json_integer_value(json_object_get(f, "trace_free_registers"));
  int unc = (int)json_integer_value(json_object_get(f, "registers_uncapped"));
  int got = (int)json_integer_value(json_object_get(f, "registers"));
  printf("occupancy.cu: trace-free %d registers, traced %d uncapped, %d capped\n", tf, unc, got);
  CHECK(tf > 0 && ag_occ_reg_bucket_max(tf) == 32);
  CHECK(unc > 32 && got <= 32 && got > 0);
  CHECK_EQ_INT((int)json_integer_value(json_object_get(f, "maxnreg")), 32);
  CHECK(has_warning(r.report, "'occ_kernel' was capped at 32 registers (.maxnreg; it needed"));
  json_decref(res);
  ag_observe_result_release(&r);
}

TEST(test_set_maxnreg) {
  const char *ptx = ".visible .entry k(\n.param .u64 a\n)\n.maxntid 256, 1, 1\n{\nret;\n}\n"
                    ".visible .entry k2(.param .u64 a)\n.maxnreg 40\n{\nret;\n}\n";
  ag_str out = AG_STR_INIT;
  CHECK_EQ_INT(ag_ptx_set_maxnreg(ptx, strlen(ptx), "k", 32, &out), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), ".maxntid 256, 1, 1\n.maxnreg 32\n{");
  CHECK(strstr(ag_str_cstr(&out), "k2(.param .u64 a)\n.maxnreg 40\n{") != NULL);
  ag_str_clear(&out);
  CHECK_EQ_INT(ag_ptx_set_maxnreg(ptx, strlen(ptx), "k2", 32, &out), 0); /* the smaller */
  CHECK_CONTAINS(ag_str_cstr(&out), "k2(.param .u64 a)\n.maxnreg 32\n{");
  ag_str_clear(&out);
  CHECK_EQ_INT(ag_ptx_set_maxnreg(ptx, strlen(ptx), "k2", 48, &out), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), ".maxnreg 40\n{");
  ag_str_clear(&out);
  CHECK_EQ_INT(ag_ptx_set_maxnreg(ptx, strlen(ptx), "nope", 32, &out), AG_ENOTFOUND);
  ag_str_release(&out);
}

TEST(test_occupancy_buckets) {
  /* Hopper: 65,536 registers per SM, 8 per thread at a time, 64 warps */
  CHECK_EQ_INT(ag_occ_reg_bucket_max(90), 96);   /* gemm_tma: 21 warps */
  CHECK_EQ_INT(ag_occ_reg_bucket_max(168), 168); /* the SGEMM of issue 17: 12 warps */
  CHECK_EQ_INT(ag_occ_reg_bucket_max(179), 184); /* nvJitLink's 179: 11 warps */
  CHECK_EQ_INT(ag_occ_reg_bucket_max(10), 32);   /* 64 warps, the SM's limit */
  CHECK_EQ_INT(ag_occ_reg_bucket_max(255), 255);
  CHECK_EQ_INT(ag_occ_reg_warps(168), 12);
  CHECK_EQ_INT(ag_occ_reg_warps(169), 11);
  CHECK_EQ_INT(ag_occ_reg_bucket_max(0), -1);
  CHECK_EQ_INT(ag_occ_reg_bucket_max(256), -1);
}

/* A harness that dies by a signal after the host runtime closed: its
 * collections count, and the report warns, naming the collection and what
 * the harness said last (docs/harness.md, "A harness that dies at exit"). */
TEST(test_harness_dies_at_exit) {
  fake_mode = "abortafterclose";
  fake_tag = "-late";
  fake_process = 1; /* a process of its own: the worker's harness is a function */
  ag_observe_result r;
  memset(&r, 0, sizeof r);
  int rc = fake_observe("3", NULL, &r);
  fake_mode = "ok";
  fake_tag = "";
  fake_process = 0;
  CHECK_EQ_INT(rc, 0);
  json_t *w = json_object_get(r.report, "warnings");
  int late = 0;
  for (size_t i = 0; i < json_array_size(w); i++) {
    const char *s = json_string_value(json_array_get(w, i));
    late += s && strstr(s, "collection ") && strstr(s, "did not end cleanly (killed by signal 6") &&
            strstr(s, "free(): invalid pointer");
  }
  if (late < 2)
    fprintf(stderr, "warnings: %s\n", json_dumps(w, 0));
  CHECK(late >= 2); /* the timing run and the traced run */
  CHECK(json_array_size(json_object_get(r.report, "missing")) == 0);
  ag_observe_result_release(&r);
}

RUN_TESTS(T(test_attributed_without_cupti), T(test_perturbation_report), T(test_trace_selection),
          T(test_timed_build_and_counted_records), T(test_occupancy_buckets),
          T(test_traced_build_keeps_occupancy), T(test_set_maxnreg), T(test_relative_workspace),
          T(test_cli), T(test_plan_runs_discovery_only),
          T(test_observe_without_gpu_and_memoization), T(test_failing_harness_fails_alone),
          T(test_bad_queries), T(test_harness_dies_at_exit))
