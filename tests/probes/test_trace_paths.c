/*
 * test_trace_paths.c — where `argus trace SPEC` finds things when it does
 * not start in the spec's directory (issue 17): a relative workspace (the
 * default .argus) and a relative harness path in the spec's "run" both work
 * from the repository root, with the stand-in driver (fake_cuda.c, as
 * libcuda.so.1 through LD_LIBRARY_PATH) and the fake harness built as a
 * program. Also the spec loader's rule for "run"'s argv[0] and the process
 * runner's rule for relative paths when the child changes directory; and
 * template kernels by their demangled names: in --region (argus trace, argus
 * observe's plan), in the host runtime's kernel lookup, in the reports.
 */
#include "check.h"

#include <sys/stat.h>
#include <unistd.h>

#include "argus/observe.h"
#include "argus/spec.h"
#include "../trace/trace_util.h"

static char root[256];
static const char *extra_env; /* one more NAME=VALUE for argus, or NULL */

static void build_path(char *buf, size_t n, const char *rel) {
  const char *b = getenv("ARGUS_BUILD_DIR");
  snprintf(buf, n, "%s/%s", b ? b : "build", rel);
}

/* Runs argus in cwd with the fake driver; returns its exit status. */
static int argus_in(const char *cwd, const char *const *args, ag_str *out, ag_str *err) {
  const char *bin = getenv("ARGUS_BIN");
  char absbin[1024], ld[1200];
  build_path(absbin, sizeof absbin, "tools/argus/argus");
  char *b = ag_path_abs(bin ? bin : absbin);
  char fake[1024];
  build_path(fake, sizeof fake, "tests/probes/fakecuda");
  char *fa = ag_path_abs(fake);
  snprintf(ld, sizeof ld, "LD_LIBRARY_PATH=%s", fa);
  const char *env[] = {ld, "ARGUS_TRACE_BUDGET_MB=4", "ARGUS_WORKSPACE=", extra_env, NULL};
  const char *argv[32];
  int n = 0;
  argv[n++] = b;
  for (; *args && n < 31; args++)
    argv[n++] = *args;
  argv[n] = NULL;
  ag_proc_opts o;
  memset(&o, 0, sizeof o);
  o.argv = argv;
  o.env_add = env;
  o.cwd = cwd;
  o.capture_out = out;
  o.capture_err = err;
  o.timeout_s = 120;
  ag_proc_result r;
  int rc = ag_proc_run(&o, &r);
  ag_free(b);
  ag_free(fa);
  return rc || !r.exited ? -1 : r.exit_code;
}

static int copy_file(const char *from, const char *to) {
  char *d = NULL;
  size_t n = 0;
  int rc = ag_file_read(from, &d, &n);
  if (!rc)
    rc = ag_file_write_atomic(to, d, n);
  ag_free(d);
  return rc;
}

/* root/NAME/{spec.json, overhead.ptx, bin/fake_harness_exe}: a PTX module and
 * the fake harness, named by a relative path in the spec's run */
static void make_project(const char *name) {
  char p[600], from[1024];
  snprintf(p, sizeof p, "%s/%s/bin", root, name);
  CHECK_EQ_INT(ag_mkdir_p(p, 0755), 0);
  build_path(from, sizeof from, "tests/data/ptx/overhead.ptx");
  snprintf(p, sizeof p, "%s/%s/overhead.ptx", root, name);
  CHECK_EQ_INT(copy_file(from, p), 0);
  build_path(from, sizeof from, "tests/probes/fake_harness_exe");
  snprintf(p, sizeof p, "%s/%s/bin/fake_harness_exe", root, name);
  CHECK_EQ_INT(copy_file(from, p), 0);
  CHECK_EQ_INT(chmod(p, 0755), 0);
  snprintf(p, sizeof p, "%s/%s/spec.json", root, name);
  const char *spec = "{\"name\": \"ovh\", \"module\": {\"ptx\": \"overhead.ptx\"},\n"
                     " \"run\": [\"./bin/fake_harness_exe\", \"ok\", \"module.cubin\"]}\n";
  CHECK_EQ_INT(ag_file_write_atomic(p, spec, strlen(spec)), 0);
}

/* Reads FILE of the run directory named by argus's JSON output (relative
 * to cwd when it is relative); NULL when there is none. */
static char *run_file(const char *json, const char *cwd, const char *file) {
  json_t *j = json_loads(json, 0, NULL);
  const char *rd = json_string_value(
      json_object_get(json_object_get(j, "provenance"), "run_dir"));
  char *d = NULL;
  if (rd) {
    char lp[1400];
    snprintf(lp, sizeof lp, "%s%s%s/%s", rd[0] == '/' ? "" : cwd, rd[0] == '/' ? "" : "/", rd,
             file);
    size_t n = 0;
    if (ag_file_read(lp, &d, &n))
      d = NULL;
  }
  json_decref(j);
  return d;
}

TEST(trace_from_the_repository_root) {
  /* root/proj; argus runs in root with the default relative workspace */
  char p[600];
  make_project("proj");
  ag_str o = AG_STR_INIT, e = AG_STR_INIT;
  const char *a[] = {"--json", "trace", "proj/spec.json", NULL};
  int rc = argus_in(root, a, &o, &e);
  if (rc)
    fprintf(stderr, "argus trace from %s: exit %d\n%s\n", root, rc, ag_str_cstr(&e));
  CHECK_EQ_INT(rc, 0);
  CHECK_CONTAINS(ag_str_cstr(&o), "\"argus.trace/1\"");
  /* the run directory is in the relative workspace, the harness's log in it */
  char *log = run_file(ag_str_cstr(&o), root, "harness.log");
  CHECK(log && strstr(log, "fake harness: ok"));
  ag_free(log);
  /* the same spec from its own directory runs the same program */
  ag_str_clear(&o);
  ag_str_clear(&e);
  snprintf(p, sizeof p, "%s/proj", root);
  const char *a2[] = {"--json", "trace", "spec.json", NULL};
  CHECK_EQ_INT(argus_in(p, a2, &o, &e), 0);
  /* a harness path that does not exist names the resolved path */
  snprintf(p, sizeof p, "%s/proj/bad.json", root);
  const char *bad = "{\"name\": \"ovh\", \"module\": {\"ptx\": \"overhead.ptx\"},\n"
                    " \"run\": [\"./bin/no_such_harness\"]}\n";
  CHECK_EQ_INT(ag_file_write_atomic(p, bad, strlen(bad)), 0);
  ag_str_clear(&o);
  ag_str_clear(&e);
  const char *a3[] = {"trace", "proj/bad.json", NULL};
  CHECK_EQ_INT(argus_in(root, a3, &o, &e), 1);
  CHECK_CONTAINS(ag_str_cstr(&e), "cannot start the harness 'proj/./bin/no_such_harness'");
  ag_str_release(&o);
  ag_str_release(&e);
}

static const char *const TMPL = "_ZN4gemm5sgemmILi128ELi128ELi8EfEEvPT2_PKS1_S4_i";

/* root/tmpl/: overhead.ptx with its first kernel renamed to a template
 * kernel's mangled name, the fake harness launching `kernel` */
static void template_project(const char *kernel) {
  char p[600], from[1024];
  snprintf(p, sizeof p, "%s/tmpl/bin", root);
  ag_mkdir_p(p, 0755);
  build_path(from, sizeof from, "tests/probes/fake_harness_exe");
  snprintf(p, sizeof p, "%s/tmpl/bin/fake_harness_exe", root);
  CHECK_EQ_INT(copy_file(from, p), 0);
  CHECK_EQ_INT(chmod(p, 0755), 0);
  build_path(from, sizeof from, "tests/data/ptx/overhead.ptx");
  char *ptx = NULL;
  size_t n = 0;
  CHECK_EQ_INT(ag_file_read(from, &ptx, &n), 0);
  ag_str m = AG_STR_INIT;
  for (const char *q = ptx ? ptx : ""; *q;) {
    const char *hit = strstr(q, "overhead_compute");
    if (!hit) {
      ag_str_puts(&m, q);
      break;
    }
    ag_str_append(&m, q, (size_t)(hit - q));
    ag_str_puts(&m, "_Z4workILi64EEvPfi");
    q = hit + strlen("overhead_compute");
  }
  snprintf(p, sizeof p, "%s/tmpl/m.ptx", root);
  CHECK_EQ_INT(ag_file_write_atomic(p, m.p, m.len), 0);
  ag_str_release(&m);
  ag_free(ptx);
  ag_str spec = AG_STR_INIT;
  ag_str_printf(&spec, "{\"name\": \"t\", \"module\": {\"ptx\": \"m.ptx\"},\n"
                       " \"run\": [\"./bin/fake_harness_exe\", \"template\", \"x\", \"%s\"]}\n",
                kernel);
  snprintf(p, sizeof p, "%s/tmpl/spec.json", root);
  CHECK_EQ_INT(ag_file_write_atomic(p, spec.p, spec.len), 0);
  ag_str_release(&spec);
}

TEST(template_kernels_by_demangled_name) {
  template_project("gemm::sgemm<128, 128, 8, float>");
  ag_str o = AG_STR_INIT, e = AG_STR_INIT;
  /* --region with the kernel demangled; the harness asks for its kernel
   * demangled too, and the host runtime finds the mangled symbol */
  const char *a[] = {"--json", "trace", "tmpl/spec.json", "--region", "work<64>/work", NULL};
  int rc = argus_in(root, a, &o, &e);
  if (rc)
    fprintf(stderr, "%s\n", ag_str_cstr(&e));
  CHECK_EQ_INT(rc, 0);
  json_t *j = json_loads(ag_str_cstr(&o), 0, NULL);
  CHECK(j != NULL);
  json_t *L = json_array_get(json_object_get(j, "launches"), 0);
  CHECK_EQ_STR(json_string_value(json_object_get(L, "kernel")), TMPL); /* JSON keeps it */
  CHECK_EQ_STR(json_string_value(json_object_get(L, "demangled")),
               "void gemm::sgemm<128, 128, 8, float>(float*, float const*, float const*, int)");
  json_t *res = json_object_get(L, "resources");
  CHECK_EQ_INT((int)json_integer_value(json_object_get(res, "dynamic_shared_bytes")), 99328);
  CHECK_EQ_INT((int)json_integer_value(json_object_get(res, "static_shared_bytes")), 1072);
  CHECK_EQ_INT((int)json_integer_value(json_object_get(json_object_get(res, "occupancy"),
                                                       "ctas_per_sm")),
               2);
  CHECK_EQ_INT((int)json_integer_value(json_object_get(res, "ctas_per_sm_driver")), 2);
  size_t i;
  json_t *g;
  int seen = 0;
  json_array_foreach(json_object_get(j, "regions"), i, g) {
    const char *q = json_string_value(json_object_get(g, "region"));
    const char *dp = json_string_value(json_object_get(g, "display"));
    CHECK(q && !strncmp(q, "_Z4workILi64EEvPfi/work", 23)); /* only the selected subtree */
    CHECK(dp && !strncmp(dp, "work<64>/work", 13));
    seen++;
  }
  CHECK_EQ_INT(seen, 2); /* work and work/step */
  const char *rd = json_string_value(json_object_get(json_object_get(j, "provenance"), "run_dir"));
  char ev[1400];
  snprintf(ev, sizeof ev, "%s%s%s/trace.agev", rd && rd[0] == '/' ? "" : root,
           rd && rd[0] == '/' ? "" : "/", rd ? rd : "");
  json_decref(j);
  /* the text report on that evidence: demangled names, --region demangled */
  ag_str_clear(&o);
  ag_str_clear(&e);
  const char *a2[] = {"trace", "--evidence", ev, "--region", "gemm::sgemm<128, 128, 8, float>",
                      NULL};
  CHECK_EQ_INT(argus_in(root, a2, &o, &e), 2); /* unknown region: exit 2 (docs/cli.md); a launch's kernel, not a region */
  CHECK_CONTAINS(ag_str_cstr(&e), "no region 'gemm::sgemm<128, 128, 8, float>'");
  ag_str_clear(&o);
  ag_str_clear(&e);
  const char *a3[] = {"trace", "--evidence", ev, "--region", "void work<64>(float*, int)", NULL};
  CHECK_EQ_INT(argus_in(root, a3, &o, &e), 0);
  CHECK_CONTAINS(ag_str_cstr(&o), "\nwork<64>/work/step ");
  CHECK_CONTAINS(ag_str_cstr(&o), "launch 0: gemm::sgemm<128, 128, 8, float> ");
  /* the launch's shared memory as the harness made it, and the occupancy
   * (the fake driver's kernel: 168 registers, 1,072 B static) */
  CHECK_CONTAINS(ag_str_cstr(&o), "  shared memory 1072 B static + 99328 B dynamic, 168 "
                                  "registers: 2 CTAs per SM (limited by shared memory; 6 % of "
                                  "the warps); the driver says 2\n");
  /* the table, the launch lines and the anomalies: no mangled name */
  if (strstr(ag_str_cstr(&o), "_Z"))
    fprintf(stderr, "a mangled name in the text report:\n%s", ag_str_cstr(&o));
  CHECK(!strstr(ag_str_cstr(&o), "_Z"));
  CHECK_CONTAINS(ag_str_cstr(&o), "kernel 'gemm::sgemm<128, 128, 8, float>' is not in the probe");
  /* a kernel the module does not have, by a demangled name: the harness
   * fails saying so */
  template_project("gemm::sgemm<64, 32, 16, double>");
  ag_str_clear(&o);
  ag_str_clear(&e);
  const char *a4[] = {"trace", "tmpl/spec.json", NULL};
  CHECK_EQ_INT(argus_in(root, a4, &o, &e), 1);
  CHECK_CONTAINS(ag_str_cstr(&e), "kernel 'gemm::sgemm<64, 32, 16, double>' not found");
  ag_str_release(&o);
  ag_str_release(&e);
  /* argus observe / plan: the region by its demangled kernel name */
  char spec[700], wsd[700];
  snprintf(spec, sizeof spec, "%s/tmpl/spec.json", root);
  snprintf(wsd, sizeof wsd, "%s/ws", root);
  const char *sigs[] = {"duration"};
  ag_observe_opts oo = {.spec = spec, .workspace = wsd, .region = "work<64>/work/step",
                        .signals = sigs, .nsignals = 1, .plan_only = 1, .ndevices = 0,
                        .timeout_s = 30};
  ag_diags d;
  ag_diags_init(&d);
  ag_observe_result r;
  CHECK_EQ_INT(ag_observe(&oo, &d, &r), 0);
  for (size_t k = 0; r.plan && k < r.plan->tasks.n; k++)
    if (!strcmp(r.plan->tasks.v[k]->op, "discover")) {
      CHECK_EQ_INT(r.plan->tasks.v[k]->status, AG_TS_OK);
      CHECK_EQ_STR(r.plan->tasks.v[k]->region, "_Z4workILi64EEvPfi/work/step");
    }
  ag_observe_result_release(&r);
  ag_diags_release(&d);
}

TEST(spec_resolves_the_harness_path) {
  ag_diags d;
  ag_diags_init(&d);
  ag_spec *s = NULL;
  const char *t1 = "{\"name\": \"x\", \"module\": {\"ptx\": \"k.ptx\"}, "
                   "\"run\": [\"./h\", \"./data\"]}";
  CHECK_EQ_INT(ag_spec_load_str(t1, "a/b/spec.json", &d, &s), 0);
  if (s) {
    CHECK_EQ_STR(s->run[0], "a/b/./h"); /* the spec's directory */
    CHECK_EQ_STR(s->run[1], "./data");  /* arguments are passed as written */
    CHECK_EQ_STR(s->dir, "a/b");
  }
  ag_spec_free(s);
  const char *t2 = "{\"name\": \"x\", \"module\": {\"ptx\": \"k.ptx\"}, "
                   "\"run\": [\"harness\"]}";
  CHECK_EQ_INT(ag_spec_load_str(t2, "a/b/spec.json", &d, &s), 0);
  if (s)
    CHECK_EQ_STR(s->run[0], "harness"); /* a bare name: PATH */
  ag_spec_free(s);
  const char *t3 = "{\"name\": \"x\", \"module\": {\"ptx\": \"k.ptx\"}, "
                   "\"run\": [\"/opt/h\"]}";
  CHECK_EQ_INT(ag_spec_load_str(t3, "a/b/spec.json", &d, &s), 0);
  if (s)
    CHECK_EQ_STR(s->run[0], "/opt/h");
  ag_spec_free(s);
  ag_diags_release(&d);
}

TEST(proc_paths_are_the_callers) {
  /* the child runs in sub/; its program and output file are named
   * relative to the caller's directory */
  char here[4096];
  CHECK(getcwd(here, sizeof here) != NULL);
  CHECK_EQ_INT(chdir(root), 0);
  ag_mkdir_p("sub", 0755);
  ag_mkdir_p("out", 0755);
  const char *sh = "#!/bin/sh\npwd\n";
  CHECK_EQ_INT(ag_file_write_atomic("out/pwd.sh", sh, strlen(sh)), 0);
  CHECK_EQ_INT(chmod("out/pwd.sh", 0755), 0);
  const char *argv[] = {"out/pwd.sh", NULL};
  ag_proc_opts o;
  memset(&o, 0, sizeof o);
  o.argv = argv;
  o.cwd = "sub";
  o.stdout_path = "out/log.txt";
  o.stderr_path = "out/log.txt";
  ag_proc_result r;
  CHECK_EQ_INT(ag_proc_run(&o, &r), 0);
  CHECK(r.exited && r.exit_code == 0);
  char *log = NULL;
  size_t n = 0;
  CHECK_EQ_INT(ag_file_read("out/log.txt", &log, &n), 0);
  CHECK(log && strstr(log, "/sub\n")); /* it ran in sub/ */
  ag_free(log);
  CHECK_EQ_INT(chdir(here), 0);
}

/* Under a profiler (ncu, nsys: CUDA_INJECTION64_PATH) the host runtime
 * queues no timing gate: ncu replays the kernel inside cuLaunchKernel,
 * before the host opens the gate, and the stream would wait forever (seen on
 * the H200; the stand-in driver fails such a launch). timing.json says why
 * its events include the submission gap. */
TEST(trace_under_a_profiler) {
  char p[600];
  make_project("prof");
  ag_str o = AG_STR_INIT, e = AG_STR_INIT;
  snprintf(p, sizeof p, "%s/prof", root);
  extra_env = "CUDA_INJECTION64_PATH=/nonexistent/libprofiler-injection.so";
  const char *a[] = {"--json", "trace", "spec.json", NULL};
  int rc = argus_in(p, a, &o, &e);
  extra_env = NULL;
  if (rc)
    fprintf(stderr, "argus trace under a profiler: exit %d\n%s\n", rc, ag_str_cstr(&e));
  CHECK_EQ_INT(rc, 0);
  char *t = run_file(ag_str_cstr(&o), p, "timing.json");
  CHECK(t && strstr(t, "a profiler is attached (CUDA_INJECTION64_PATH)"));
  ag_free(t);
  ag_str_release(&o);
  ag_str_release(&e);
}

static void setup(void) __attribute__((constructor));
static void setup(void) {
  char t[] = "/tmp/argus-paths-XXXXXX";
  char *d = mkdtemp(t);
  snprintf(root, sizeof root, "%s", d ? d : "/tmp/argus-paths");
}

static void teardown(void) __attribute__((destructor));
/* A harness that dies by a signal after the host runtime closed (a library's
 * teardown at exit, as PyTorch's profiler did on the H200) left complete
 * evidence: the trace stands, with a warning that says what happened. One
 * that dies before the close, or exits with a status after it (the
 * program's own verdict), still fails. */
TEST(harness_dies_at_exit) {
  static const struct {
    const char *mode;
    int rc;
    const char *err;
  } cases[] = {
      {"abortafterclose", 0, "warning: the harness did not end cleanly (killed by signal 6"},
      {"abortbeforeclose", 1, "the harness failed (killed by signal 6"},
      {"exitafterclose", 1, "the harness failed (exit 7)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char p[600], name[64];
    snprintf(name, sizeof name, "die%zu", i);
    make_project(name);
    snprintf(p, sizeof p, "%s/%s/spec.json", root, name);
    ag_str spec = AG_STR_INIT;
    ag_str_printf(&spec, "{\"name\": \"ovh\", \"module\": {\"ptx\": \"overhead.ptx\"},\n"
                         " \"run\": [\"./bin/fake_harness_exe\", \"%s\", \"module.cubin\"]}\n",
                  cases[i].mode);
    CHECK_EQ_INT(ag_file_write_atomic(p, spec.p, spec.len), 0);
    ag_str_release(&spec);
    snprintf(p, sizeof p, "%s/%s", root, name);
    ag_str o = AG_STR_INIT, e = AG_STR_INIT;
    const char *a[] = {"--json", "trace", "spec.json", NULL};
    int rc = argus_in(p, a, &o, &e);
    if (rc != cases[i].rc || !strstr(ag_str_cstr(&e), cases[i].err))
      fprintf(stderr, "%s: exit %d\n%s\n", cases[i].mode, rc, ag_str_cstr(&e));
    CHECK_EQ_INT(rc, cases[i].rc);
    CHECK_CONTAINS(ag_str_cstr(&e), cases[i].err);
    if (!cases[i].rc) { /* the evidence, and the harness's last words in the warning */
      CHECK_CONTAINS(ag_str_cstr(&o), "\"argus.trace/1\"");
      CHECK_CONTAINS(ag_str_cstr(&e), "free(): invalid pointer");
      CHECK_CONTAINS(ag_str_cstr(&e), "after the Argus host runtime had written the evidence");
    }
    ag_str_release(&o);
    ag_str_release(&e);
  }
}

static void teardown(void) { tu_rm_rf(root); }

RUN_TESTS(T(trace_from_the_repository_root), T(template_kernels_by_demangled_name),
          T(spec_resolves_the_harness_path),
          T(proc_paths_are_the_callers), T(trace_under_a_profiler), T(harness_dies_at_exit))
