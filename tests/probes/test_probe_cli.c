/*
 * test_probe_cli.c — the async probes from the command line: `argus variant
 * --kind probe|traced --waits` (outputs, exit codes 0/1/2 and messages) and
 * `argus plan ... --signals async_latency` on a machine without a GPU, which
 * runs discovery and shows every probe branch (the paper's 16 candidates:
 * 16 forced-completion runs and one reference), or says why it cannot.
 */
#include "check.h"

#include <unistd.h>

#include "../trace/trace_util.h"

static char dir[128];

static int argus(const char *const *args, ag_str *out, ag_str *err) {
  char ws[200];
  snprintf(ws, sizeof ws, "%s/ws", dir);
  ag_str_clear(out);
  ag_str_clear(err);
  return tu_argus(args, ws, out, err);
}

static size_t count(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *q = strstr(hay, needle); q; q = strstr(q + 1, needle))
    n++;
  return n;
}

TEST(variant_and_plan_commands) {
  snprintf(dir, sizeof dir, "/tmp/argus-probe-cli-%ld", (long)getpid());
  CHECK_EQ_INT(ag_mkdir_p(dir, 0755), 0);
  const char *bd = getenv("ARGUS_BUILD_DIR");
  char ptx[1024], spec[1200], out[1200];
  snprintf(ptx, sizeof ptx, "%s/tests/data/ptx/tma_probe.ptx", bd ? bd : "build");
  snprintf(spec, sizeof spec, "%s/spec.json", dir);
  snprintf(out, sizeof out, "%s/probe.ptx", dir);
  char js[1500];
  snprintf(js, sizeof js, "{\"name\": \"tma_probe\", \"module\": {\"ptx\": \"%s\"}, "
                          "\"run\": [\"tma_probe_harness\"], \"run_library\": "
                          "\"libtma_probe_harness.so\"}",
           ptx);
  CHECK_EQ_INT(ag_file_write_atomic(spec, js, strlen(js)), 0);
  ag_str o = AG_STR_INIT, e = AG_STR_INIT;
  /* a probe variant */
  const char *a1[] = {"variant", "--kind", "probe", "--op", "2f8440dedd58145c:2",
                      "--occurrence", "5", "-o", out, ptx, NULL};
  CHECK_EQ_INT(argus(a1, &o, &e), 0);
  CHECK_CONTAINS(ag_str_cstr(&o), "probe variant of");
  char *text = NULL;
  size_t len = 0;
  CHECK_EQ_INT(ag_file_read(out, &text, &len), 0);
  if (text)
    CHECK_CONTAINS(text, "// argus: probe 2f8440dedd58145c:2 occurrence 5");
  ag_free(text);
  /* usage errors: exit 2 with the reason */
  const char *a2[] = {"variant", "--kind", "probe", ptx, NULL};
  CHECK_EQ_INT(argus(a2, &o, &e), 2);
  CHECK_CONTAINS(ag_str_cstr(&e), "--kind probe needs --op");
  const char *a3[] = {"variant", "--kind", "traced", "--op", "x:1", ptx, NULL};
  CHECK_EQ_INT(argus(a3, &o, &e), 2);
  CHECK_CONTAINS(ag_str_cstr(&e), "--op and --occurrence apply to --kind probe only");
  const char *a4[] = {"variant", "--kind", "probe", "--op", "x:1", "--occurrence", "-1", ptx,
                      NULL};
  CHECK_EQ_INT(argus(a4, &o, &e), 2);
  CHECK_CONTAINS(ag_str_cstr(&e), "--occurrence must be a whole number");
  const char *a5[] = {"variant", "--kind", "trace-free", "--waits", ptx, NULL};
  CHECK_EQ_INT(argus(a5, &o, &e), 2);
  CHECK_CONTAINS(ag_str_cstr(&e), "--waits applies to --kind traced only");
  /* a site that is not async: exit 1, the diagnostic names it */
  const char *a6[] = {"variant", "--kind", "probe", "--op", "2f8440dedd58145c:0", ptx, NULL};
  CHECK_EQ_INT(argus(a6, &o, &e), 1);
  CHECK_CONTAINS(ag_str_cstr(&e), "is a mbarrier_wait");
  /* the reference with timed waits */
  const char *a7[] = {"variant", "--kind", "traced", "--waits", ptx, NULL};
  CHECK_EQ_INT(argus(a7, &o, &e), 0);
  CHECK_EQ_U64(count(ag_str_cstr(&o), "// argus: begin argus_wait_"), 2);
  /* the plan: discovery on the CPU, 16 probe branches and one reference */
  const char *a8[] = {"plan", spec, "--region", "loads", "--signals", "async_latency",
                      "--scope", "iter=0:8", NULL};
  CHECK_EQ_INT(argus(a8, &o, &e), 0);
  CHECK_EQ_U64(count(ag_str_cstr(&o), "transform.probe"), 16);
  CHECK_EQ_U64(count(ag_str_cstr(&o), "effects=forces_completion"), 16);
  CHECK_EQ_U64(count(ag_str_cstr(&o), "effects=perturbs_timing"), 1);
  CHECK_CONTAINS(ag_str_cstr(&o), "17 runs");
  const char *a9[] = {"--json", "plan", spec, "--region", "loads", "--signals",
                      "async_latency", "--scope", "iter=0:8", NULL};
  CHECK_EQ_INT(argus(a9, &o, &e), 0);
  json_t *j = json_loads(ag_str_cstr(&o), 0, NULL);
  CHECK(j != NULL);
  CHECK_EQ_INT(json_integer_value(json_object_get(j, "runs")), 17);
  json_decref(j);
  /* without iterations: a usage error that says what to add */
  const char *a10[] = {"plan", spec, "--region", "loads", "--signals", "async_latency", NULL};
  CHECK(argus(a10, &o, &e) != 0);
  CHECK_CONTAINS(ag_str_cstr(&e), "--scope iter=0:8");
  ag_str_release(&o);
  ag_str_release(&e);
  tu_rm_rf(dir);
}

RUN_TESTS(T(variant_and_plan_commands))
