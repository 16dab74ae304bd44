/*
 * test_trace_cli.c — `argus variant` and `argus trace` as users run them:
 * outputs, exit codes (0 ok, 1 failure, 2 usage) and messages; `argus trace`
 * on recorded evidence; `argus trace SPEC` on a machine without a GPU fails
 * with a clear message after building the traced variant.
 */
#include "check.h"

#include <unistd.h>

#include "argus/collect.h"
#include "trace_util.h"

static char ws[128];

static int argus(const char *const *args, ag_str *out, ag_str *err) {
  return tu_argus(args, ws, out, err);
}

static void path(char *buf, size_t n, const char *env, const char *rel) {
  const char *b = getenv(env);
  snprintf(buf, n, "%s/%s", b ? b : ".", rel);
}

TEST(variant_command) {
  char ptx[1024], out[256], probes[256];
  path(ptx, sizeof ptx, "ARGUS_BUILD_DIR", "tests/data/ptx/overhead.ptx");
  snprintf(out, sizeof out, "%s/v.ptx", ws);
  snprintf(probes, sizeof probes, "%s/p.json", ws);
  ag_str o = AG_STR_INIT, e = AG_STR_INIT;
  const char *a1[] = {"variant", "--kind", "traced", ptx, "-o", out, "--probes", probes, NULL};
  CHECK_EQ_INT(argus(a1, &o, &e), 0);
  CHECK_CONTAINS(ag_str_cstr(&o), "traced variant of");
  CHECK_CONTAINS(ag_str_cstr(&o), "(4 probes");
  json_t *pj = json_load_file(probes, 0, NULL);
  CHECK(pj && json_array_size(json_object_get(pj, "sites")) == 4);
  json_decref(pj);
  char *text = NULL;
  size_t len = 0;
  CHECK_EQ_INT(ag_file_read(out, &text, &len), 0);
  CHECK_CONTAINS(text, ".const .align 8 .b8 __argus_trace[32];");
  ag_free(text);
  ag_str_clear(&o);
  ag_str_clear(&e);
  const char *a2[] = {"variant", "--kind", "bogus", ptx, NULL};
  CHECK_EQ_INT(argus(a2, &o, &e), 2);
  CHECK_CONTAINS(ag_str_cstr(&e), "--kind must be trace-free, traced, probe or mapping");
  ag_str_clear(&e);
  const char *a3[] = {"variant", "--kind", "trace-free", "--region", "step", ptx, NULL};
  CHECK_EQ_INT(argus(a3, &o, &e), 2);
  ag_str_clear(&e);
  const char *a4[] = {"variant", "--kind", "traced", "--region", "nosuch", ptx, NULL};
  CHECK_EQ_INT(argus(a4, &o, &e), 2); /* a name the module lacks: bad input */
  CHECK_CONTAINS(ag_str_cstr(&e), "no region 'nosuch' in the module");
  ag_str_clear(&e);
  ag_str_clear(&o);
  /* trace-free to stdout is the module itself */
  const char *a5[] = {"variant", "--kind", "trace-free", ptx, NULL};
  CHECK_EQ_INT(argus(a5, &o, &e), 0);
  CHECK_EQ_INT(ag_file_read(ptx, &text, &len), 0);
  CHECK(o.len == len && !memcmp(o.p, text, len));
  ag_free(text);
  ag_str_clear(&o);
  ag_str_clear(&e);
  /* a traced variant of the traced variant: bad input, refused at once
   * with exit 2 (issue 16: it ran past 100 s on a 20,000-region module) */
  const char *a6[] = {"variant", "--kind", "traced", out, NULL};
  CHECK_EQ_INT(argus(a6, &o, &e), 2);
  CHECK_CONTAINS(ag_str_cstr(&e), "is an Argus variant already (it uses the probe name");
  CHECK_EQ_INT((int)o.len, 0);
  ag_str_release(&o);
  ag_str_release(&e);
}

TEST(trace_on_recorded_evidence) {
  char ev[1024], tl[256];
  path(ev, sizeof ev, "ARGUS_SOURCE_DIR", "tests/data/evidence/overhead.agev");
  snprintf(tl, sizeof tl, "%s/t.json", ws);
  ag_str o = AG_STR_INIT, e = AG_STR_INIT;
  const char *a1[] = {"--json", "trace", "--evidence", ev, "--scope", "sm=0:4",
                      "--timeline", tl, NULL};
  CHECK_EQ_INT(argus(a1, &o, &e), 0);
  json_t *j = json_loads(ag_str_cstr(&o), 0, NULL);
  CHECK(j != NULL);
  if (j) {
    CHECK_EQ_STR(json_string_value(json_object_get(j, "schema")), "argus.trace/1");
    CHECK_EQ_STR(json_string_value(json_object_get(j, "scope")), "sm=0:4");
    CHECK_EQ_INT(json_array_size(json_object_get(j, "regions")), 3);
  }
  json_decref(j);
  j = json_load_file(tl, 0, NULL);
  CHECK(j && json_array_size(json_object_get(j, "traceEvents")) > 0);
  json_decref(j);
  ag_str_clear(&o);
  const char *a2[] = {"trace", "--evidence", ev, "--region", "step", NULL};
  CHECK_EQ_INT(argus(a2, &o, &e), 0);
  CHECK_CONTAINS(ag_str_cstr(&o), "overhead_compute/work/step");
  CHECK(!strstr(ag_str_cstr(&o), "overhead_compute/work "));
  const char *a3[] = {"trace", "--evidence", ev, "--scope", "core=1", NULL};
  CHECK_EQ_INT(argus(a3, &o, &e), 2);
  /* a region the evidence lacks is bad input, as in 'argus variant' */
  const char *a5[] = {"trace", "--evidence", ev, "--region", "nosuch", NULL};
  ag_str_clear(&e);
  CHECK_EQ_INT(argus(a5, &o, &e), 2);
  CHECK_CONTAINS(ag_str_cstr(&e), "no region 'nosuch' in the evidence");
  const char *a4[] = {"trace", "--evidence", "/nonexistent.agev", NULL};
  ag_str_clear(&e);
  CHECK_EQ_INT(argus(a4, &o, &e), 2);
  CHECK_CONTAINS(ag_str_cstr(&e), "cannot read '/nonexistent.agev': no such file");
  ag_str_release(&o);
  ag_str_release(&e);
}

TEST(trace_without_gpu_fails_clearly) {
  ag_str why = AG_STR_INIT;
  if (ag_collect_gpu_probe(&why) == 0) {
    printf("a GPU is present: the no-GPU path is not exercised here\n");
    ag_str_release(&why);
    return;
  }
  ag_str_release(&why);
  char spec[1024];
  path(spec, sizeof spec, "ARGUS_SOURCE_DIR", "examples/overhead/spec.json");
  ag_str o = AG_STR_INIT, e = AG_STR_INIT;
  const char *a[] = {"trace", spec, NULL};
  CHECK_EQ_INT(argus(a, &o, &e), 1);
  CHECK_CONTAINS(ag_str_cstr(&e), "argus trace: no GPU to run the harness on");
  CHECK_CONTAINS(ag_str_cstr(&e), "the traced variant is in");
  CHECK_EQ_INT(o.len, 0);
  ag_str_release(&o);
  ag_str_release(&e);
}

static void setup(void) __attribute__((constructor));
static void setup(void) {
  snprintf(ws, sizeof ws, "/tmp/argus-cli-test-%ld", (long)getpid());
  ag_mkdir_p(ws, 0755);
}

static void teardown(void) __attribute__((destructor));
static void teardown(void) { tu_rm_rf(ws); }

RUN_TESTS(T(variant_command), T(trace_on_recorded_evidence), T(trace_without_gpu_fails_clearly))
