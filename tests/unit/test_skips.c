/*
 * test_skips.c — a test whose precondition is missing exits 77 (ctest:
 * Skipped), never 0. Checks check.h's SKIP on a probe program (exit 77 when
 * a case skipped, 1 when one also failed, 0 when the skipping case is not
 * run), then takes away the precondition of the tests that skip without
 * nvcc — the nvcc-built PTX corpus (ARGUS_BUILD_DIR), nvcc itself
 * (ARGUS_NVCC) — and checks that each of their cases exits 77.
 *
 * ctest names the programs in TEST_SKIPS_PROGS, colon-separated: the probe,
 * test_ptx_discover, test_spec, test_cli_ptx.
 */
#include "check.h"

#include "argus/core.h"

static char *prog[4];

/* The programs of TEST_SKIPS_PROGS; 0 when all four are there. */
static int programs(void) {
  static char buf[4096];
  const char *e = getenv("TEST_SKIPS_PROGS");
  if (!e || snprintf(buf, sizeof buf, "%s", e) >= (int)sizeof buf)
    return -1;
  char *p = buf;
  for (int i = 0; i < 4; i++) {
    prog[i] = p;
    p = strchr(p, ':');
    if (p)
      *p++ = 0;
    else if (i < 3)
      return -1;
  }
  return 0;
}

/* Runs argv with env added; returns the exit code (-1: did not exit) and
 * captures stdout into out. */
static int run(const char *const *argv, const char *env, ag_str *out) {
  const char *add[] = {env, NULL};
  ag_str err = AG_STR_INIT;
  ag_proc_opts o;
  memset(&o, 0, sizeof o);
  o.argv = argv;
  o.env_add = env ? add : NULL;
  o.capture_out = out;
  o.capture_err = &err;
  o.timeout_s = 120;
  ag_proc_result r;
  int rc = ag_proc_run(&o, &r);
  if (rc || !r.exited || getenv("TEST_SKIPS_VERBOSE"))
    fprintf(stderr, "%s %s: %s%s", argv[0], argv[1] ? argv[1] : "", ag_str_cstr(out),
            ag_str_cstr(&err));
  ag_str_release(&err);
  return rc || !r.exited ? -1 : r.exit_code;
}

TEST(test_skip_exits_77) {
  if (programs()) {
    CHECK(!"TEST_SKIPS_PROGS names the probe and three tests (run it through ctest)");
    return;
  }
  ag_str out = AG_STR_INIT;
  const char *all[] = {prog[0], NULL};
  CHECK_EQ_INT(run(all, NULL, &out), 77);
  CHECK_CONTAINS(ag_str_cstr(&out), "skipped: no frobnicator on this machine");
  CHECK_CONTAINS(ag_str_cstr(&out), "2 passed, 0 failed, 1 skipped");
  ag_str_clear(&out);
  const char *one[] = {prog[0], "passes", NULL};
  CHECK_EQ_INT(run(one, NULL, &out), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "1 passed, 0 failed, 0 skipped");
  ag_str_clear(&out);
  CHECK_EQ_INT(run(all, "CHECK_PROBE_FAIL=1", &out), 1); /* a failure wins over a skip */
  CHECK_CONTAINS(ag_str_cstr(&out), "1 passed, 1 failed, 1 skipped");
  ag_str_release(&out);
}

/* Each case of the program, run alone with env, exits 77. */
static void expect_skip(const char *bin, const char *cs, const char *env) {
  ag_str out = AG_STR_INIT;
  const char *argv[] = {bin, cs, NULL};
  int rc = run(argv, env, &out);
  if (rc != 77)
    fprintf(stderr, "%s %s with %s: exit %d, want 77 (skipped)\n", bin, cs, env, rc);
  CHECK_EQ_INT(rc, 77);
  CHECK_CONTAINS(ag_str_cstr(&out), "skipped: ");
  ag_str_release(&out);
}

TEST(test_missing_nvcc_skips) {
  if (programs()) {
    CHECK(!"TEST_SKIPS_PROGS names the probe and three tests (run it through ctest)");
    return;
  }
  expect_skip(prog[1], "gemm_tma", "ARGUS_BUILD_DIR=/nonexistent/argus-build");
  expect_skip(prog[1], "overhead", "ARGUS_BUILD_DIR=/nonexistent/argus-build");
  expect_skip(prog[2], "ptx_cache", "ARGUS_NVCC=/nonexistent/nvcc");
  expect_skip(prog[3], "spec_json", "ARGUS_NVCC=/nonexistent/nvcc");
}

RUN_TESTS(T(test_skip_exits_77), T(test_missing_nvcc_skips))
