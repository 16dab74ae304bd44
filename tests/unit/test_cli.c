/* test_cli.c — the argus binary's dispatch: exit codes, --help, unknown
 * commands and options, --json. Runs the built binary (ARGUS_BIN). */
#include "argus/core.h"
#include "check.h"

#include <stdlib.h>
#include <unistd.h>

static int run(const char *const *argv, ag_str *out, ag_str *err) {
  ag_str_clear(out);
  ag_str_clear(err);
  ag_proc_opts o = {.argv = argv, .capture_out = out, .capture_err = err, .timeout_s = 30};
  ag_proc_result r;
  if (ag_proc_run(&o, &r) || !r.exited)
    return -1;
  return r.exit_code;
}

static const char *bin(void) {
  const char *b = getenv("ARGUS_BIN");
  return b ? b : "argus";
}

TEST(test_version) {
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  const char *a[] = {bin(), "version", NULL};
  CHECK_EQ_INT(run(a, &out, &err), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "argus " AG_VERSION_STRING);
  const char *b[] = {bin(), "--json", "version", NULL};
  CHECK_EQ_INT(run(b, &out, &err), 0);
  json_t *j = json_loads(ag_str_cstr(&out), 0, NULL);
  CHECK(j != NULL);
  CHECK_EQ_STR(json_string_value(json_object_get(j, "argus")), AG_VERSION_STRING);
  json_decref(j);
  ag_str_release(&out);
  ag_str_release(&err);
}

TEST(test_usage_errors) {
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  const char *a[] = {bin(), NULL};
  CHECK_EQ_INT(run(a, &out, &err), 2);
  const char *b[] = {bin(), "frobnicate", NULL};
  CHECK_EQ_INT(run(b, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "unknown command 'frobnicate'");
  const char *c[] = {bin(), "version", "--bogus", NULL};
  CHECK_EQ_INT(run(c, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "--bogus");
  const char *d[] = {bin(), "version", "--help", NULL};
  CHECK_EQ_INT(run(d, &out, &err), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "usage: argus version");
  const char *e[] = {bin(), "--help", NULL};
  CHECK_EQ_INT(run(e, &out, &err), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "commands:");
  ag_str_release(&out);
  ag_str_release(&err);
}

TEST(test_doctor) {
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  const char *a[] = {bin(), "doctor", "--json", NULL};
  int rc = run(a, &out, &err);
  if (rc == 1 && strstr(ag_str_cstr(&err), "built without the CUDA toolkit")) {
    /* an argus built without the toolkit (CMake's ARGUS_HAVE_CUDA): every
     * GPU-facing command says so, exit 1, and prints nothing on stdout */
    static const char *const cmds[] = {"doctor", "observe", "plan", "trace"};
    for (int i = 0; i < 4; i++) {
      const char *g[] = {bin(), cmds[i], "x.json", "--region", "r", NULL};
      ag_str_clear(&out);
      ag_str_clear(&err);
      CHECK_EQ_INT(run(g, &out, &err), 1);
      CHECK_CONTAINS(ag_str_cstr(&err), "this argus was built without the CUDA toolkit");
      CHECK_CONTAINS(ag_str_cstr(&err), cmds[i]);
      CHECK_EQ_INT((int)out.len, 0);
    }
    ag_str_release(&out);
    ag_str_release(&err);
    return;
  }
  CHECK_EQ_INT(rc, 0);
  json_t *j = json_loads(ag_str_cstr(&out), 0, NULL);
  CHECK(j != NULL);
  json_t *drv = json_object_get(j, "driver");
  CHECK(json_is_boolean(json_object_get(drv, "available")));
  /* without a driver, the reason is given; with one, the devices are listed */
  if (json_is_false(json_object_get(drv, "available")))
    CHECK(json_is_string(json_object_get(drv, "error")));
  else
    CHECK(json_is_array(json_object_get(j, "devices")));
  CHECK(json_is_object(json_object_get(json_object_get(j, "tools"), "nvcc")));
  CHECK(json_is_object(json_object_get(j, "profiling")));
  json_decref(j);
  const char *b[] = {bin(), "doctor", NULL};
  CHECK_EQ_INT(run(b, &out, &err), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "CUDA tools");
  const char *c[] = {bin(), "doctor", "extra", NULL};
  CHECK_EQ_INT(run(c, &out, &err), 2);
  ag_str_release(&out);
  ag_str_release(&err);
}

TEST(test_self_trace) {
  /* ARGUS_TRACE=file: argus writes its own timing regions as Chrome trace */
  char path[] = "/tmp/argus-selftrace-XXXXXX";
  close(mkstemp(path));
  ag_str env = AG_STR_INIT, out = AG_STR_INIT;
  ag_str_printf(&env, "ARGUS_TRACE=%s", path);
  const char *argv[] = {bin(), "version", NULL};
  const char *add[] = {env.p, NULL};
  ag_proc_opts o = {.argv = argv, .env_add = add, .capture_out = &out, .timeout_s = 30};
  ag_proc_result r;
  CHECK_EQ_INT(ag_proc_run(&o, &r), 0);
  CHECK(r.exited && r.exit_code == 0);
  json_t *j = json_load_file(path, 0, NULL);
  CHECK(j != NULL);
  json_t *ev = json_object_get(j, "traceEvents");
  CHECK(json_array_size(ev) >= 2);
  CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(ev, 0), "name")), "version");
  CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(ev, 0), "ph")), "B");
  json_decref(j);
  unlink(path);
  ag_str_release(&env);
  ag_str_release(&out);
}

RUN_TESTS(T(test_version), T(test_usage_errors), T(test_doctor), T(test_self_trace))
