/*
 * test_cli_check.c — `argus check` as users run it: exit 0 when every
 * assertion holds, 1 on a violation, 2 on a malformed program (with
 * file:line:col and a caret on stderr) or bad usage; --json on stdout.
 */
#include "argus/core.h"
#include "check.h"

#include <stdlib.h>

static int run(const char *const *argv, ag_str *out, ag_str *err) {
  ag_str_clear(out);
  ag_str_clear(err);
  ag_proc_opts o = {.argv = argv, .capture_out = out, .capture_err = err, .timeout_s = 120};
  ag_proc_result r;
  if (ag_proc_run(&o, &r) || !r.exited)
    return -1;
  return r.exit_code;
}

static const char *bin(void) {
  const char *b = getenv("ARGUS_BIN");
  return b ? b : "argus";
}

static char path_buf[4][1024];
static const char *src_path(int slot, const char *rel) {
  const char *s = getenv("ARGUS_SOURCE_DIR");
  snprintf(path_buf[slot], sizeof path_buf[slot], "%s/%s", s ? s : ".", rel);
  return path_buf[slot];
}

static const char *write_tmp(int slot, const char *name, const char *text) {
  const char *b = getenv("ARGUS_BUILD_DIR");
  snprintf(path_buf[slot], sizeof path_buf[slot], "%s/%s", b ? b : ".", name);
  ag_file_write_atomic(path_buf[slot], text, strlen(text));
  return path_buf[slot];
}

TEST(test_proved_exit_0) {
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  const char *a[] = {bin(), "check", src_path(0, "examples/tile/gemm.tile"), NULL};
  CHECK_EQ_INT(run(a, &out, &err), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "OK: 4 assertions, 0 violated");
  CHECK_CONTAINS(ag_str_cstr(&out), "gemm.tile:");
  CHECK_CONTAINS(ag_str_cstr(&out), "in bounds: 5 accesses");
  const char *b[] = {bin(), "--json", "check", src_path(0, "examples/tile/attention.tile"), NULL};
  CHECK_EQ_INT(run(b, &out, &err), 0);
  json_t *j = json_loads(ag_str_cstr(&out), 0, NULL);
  CHECK(j != NULL);
  CHECK_EQ_STR(json_string_value(json_object_get(j, "verdict")), "proved");
  CHECK_EQ_INT(json_array_size(json_object_get(j, "assertions")), 4);
  json_decref(j);
  ag_str_release(&out);
  ag_str_release(&err);
}

TEST(test_violated_exit_1) {
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  const char *f = write_tmp(0, "cli_bad.tile",
                            "@threads(32)\ndef k(A: Tensor(32, f32)):\n    T = A[i] -> (i,)\n"
                            "    s = make_shared((32,), f32)\n"
                            "    s[threadIdx.x] = A[threadIdx.x]\n    syncthreads()\n"
                            "    assert tag(s[(threadIdx.x + 1) % 32]) == (threadIdx.x,)\n");
  const char *a[] = {bin(), "check", f, NULL};
  CHECK_EQ_INT(run(a, &out, &err), 1);
  CHECK_CONTAINS(ag_str_cstr(&out), "violated:");
  CHECK_CONTAINS(ag_str_cstr(&out), "counterexample: blockIdx (0, 0, 0), threadIdx (");
  CHECK_CONTAINS(ag_str_cstr(&out), "the tags differ");
  CHECK_CONTAINS(ag_str_cstr(&out), "FAIL: 1 assertion, 1 violated");
  const char *b[] = {bin(), "check", "--json", f, NULL};
  CHECK_EQ_INT(run(b, &out, &err), 1);
  json_t *j = json_loads(ag_str_cstr(&out), 0, NULL);
  CHECK(j != NULL);
  CHECK_EQ_STR(json_string_value(json_object_get(j, "verdict")), "violated");
  json_t *cx = json_object_get(json_array_get(json_object_get(j, "assertions"), 0),
                               "counterexample");
  CHECK(cx != NULL);
  json_int_t t = json_integer_value(json_object_get(cx, "thread"));
  char want[64];
  snprintf(want, sizeof want, "A[%lld]", (long long)((t + 1) % 32));
  CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(cx, "lhs"), "element")), want);
  json_decref(j);
  ag_str_release(&out);
  ag_str_release(&err);
}

TEST(test_malformed_exit_2) {
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  const char *f = write_tmp(0, "cli_syntax.tile", "@threads(32)\ndef k(:):\n    pass\n");
  const char *a[] = {bin(), "check", f, NULL};
  CHECK_EQ_INT(run(a, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "cli_syntax.tile:2:7: error: expected a parameter name");
  CHECK_CONTAINS(ag_str_cstr(&err), "    def k(:):\n          ^\n");
  const char *g = write_tmp(1, "cli_sem.tile",
                            "@threads(32)\ndef k(A: Tensor(N, f32)):\n    x = nope + 1\n");
  const char *b[] = {bin(), "check", g, NULL};
  CHECK_EQ_INT(run(b, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "cli_sem.tile:3:9: error: unknown name 'nope'");
  const char *c[] = {bin(), "--json", "check", g, NULL};
  CHECK_EQ_INT(run(c, &out, &err), 2);
  json_t *j = json_loads(ag_str_cstr(&out), 0, NULL);
  CHECK(j != NULL);
  CHECK_EQ_STR(json_string_value(json_object_get(j, "verdict")), "malformed");
  json_t *d0 = json_array_get(json_object_get(j, "diagnostics"), 0);
  CHECK_EQ_INT(json_integer_value(json_object_get(d0, "line")), 3);
  CHECK_EQ_INT(json_integer_value(json_object_get(d0, "col")), 9);
  json_decref(j);
  ag_str_release(&out);
  ag_str_release(&err);
}

TEST(test_usage) {
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  const char *a[] = {bin(), "check", NULL};
  CHECK_EQ_INT(run(a, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "expected a FILE");
  const char *b[] = {bin(), "check", "/nonexistent/x.tile", NULL};
  CHECK_EQ_INT(run(b, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "cannot read '/nonexistent/x.tile': no such file");
  const char *c[] = {bin(), "check", "--batch", "0", src_path(0, "examples/tile/gemm.tile"), NULL};
  CHECK_EQ_INT(run(c, &out, &err), 2);
  const char *d[] = {bin(), "check", "--set", "K", src_path(0, "examples/tile/gemm.tile"), NULL};
  CHECK_EQ_INT(run(d, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "NAME=INTEGER");
  /* a repeated --set extends the list: the first one is not dropped */
  const char *d2[] = {bin(), "check", "--set", "Q=1", "-D", "K=64",
                      src_path(0, "examples/tile/gemm.tile"), NULL};
  CHECK_EQ_INT(run(d2, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "--set Q=1: kernel 'gemm' has no constant parameter");
  const char *e[] = {bin(), "check", "--help", NULL};
  CHECK_EQ_INT(run(e, &out, &err), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "usage: argus check");
  const char *g[] = {bin(), "check", "-D", "K=64", src_path(0, "examples/tile/gemm.tile"), NULL};
  CHECK_EQ_INT(run(g, &out, &err), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "64 instances");
  /* the limits: a bad value is a usage error; a small one is hit and named */
  const char *h[] = {bin(), "check", "--max-steps", "0", src_path(0, "examples/tile/gemm.tile"),
                     NULL};
  CHECK_EQ_INT(run(h, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "--max-steps takes an integer");
  const char *k[] = {bin(), "check", "--max-steps", "100",
                     src_path(0, "examples/tile/gemm.tile"), NULL};
  CHECK_EQ_INT(run(k, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "limit of 100 interpreted statements");
  const char *m[] = {bin(), "check", "--max-writes", "3",
                     src_path(0, "examples/tile/gemm.tile"), NULL};
  CHECK_EQ_INT(run(m, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "more than 3 shared-memory writes");
  /* --symbolic: a const checked for every value; the summarized loop is listed */
  const char *sy[] = {bin(), "check", "--symbolic", "K", src_path(0, "examples/tile/gemm.tile"),
                      NULL};
  CHECK_EQ_INT(run(sy, &out, &err), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "summarized: loop 'kt' [gemm]: range(K / 32)");
  const char *sz[] = {bin(), "check", "--symbolic", "Z", src_path(0, "examples/tile/gemm.tile"),
                      NULL};
  CHECK_EQ_INT(run(sz, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "--symbolic Z: kernel 'gemm' has no constant parameter");
  /* --unroll: K = 8192 unrolled is over a limit; summarized it is checked */
  const char *un[] = {bin(), "check", "--unroll", "--set", "K=8192",
                      src_path(0, "examples/tile/gemm.tile"), NULL};
  CHECK_EQ_INT(run(un, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "raise the limit with --max-");
  ag_str_release(&out);
  ag_str_release(&err);
}

RUN_TESTS(T(test_proved_exit_0), T(test_violated_exit_1), T(test_malformed_exit_2), T(test_usage))
