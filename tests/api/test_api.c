/* test_api.c — the client API (argus/argus.h) through libargus.so, on the
 * CPU: a workspace opened and refused (missing, a newer schema), plan and
 * observe of the overhead example's PTX (the static signal needs no GPU; its
 * values read through the report handle and read back from the workspace),
 * the prompt-sized summary of a stored report (its budget, its ranking, bad
 * budgets), fork of a version by ref, check of proved, violated and
 * malformed tile programs, and bad arguments and options, each a clear
 * error with the thread's message. Only argus.h is included: the test is a client. */
#include "argus/argus.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64], spec[256], ptx[512];

static void setup(void) {
  if (dir[0])
    return;
  snprintf(dir, sizeof dir, "/tmp/argus-api-XXXXXX");
  if (!mkdtemp(dir))
    exit(1);
  const char *bd = getenv("ARGUS_BUILD_DIR");
  char *abs = realpath(bd ? bd : "build", NULL);
  snprintf(ptx, sizeof ptx, "%s/tests/data/ptx/overhead.ptx", abs ? abs : "build");
  free(abs);
  snprintf(spec, sizeof spec, "%s/spec.json", dir);
  FILE *f = fopen(spec, "w");
  fprintf(f, "{\"name\": \"overhead\", \"module\": {\"ptx\": \"%s\"}, \"run\": [\"false\"]}", ptx);
  fclose(f);
}

static const char *write_file(const char *name, const char *text) {
  static char path[8][256];
  static int k;
  char *p = path[k++ % 8];
  snprintf(p, 256, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  fputs(text, f);
  fclose(f);
  return p;
}

static argus_ws *open_ws(const char *name) {
  char p[128];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  argus_ws *ws = NULL;
  CHECK_EQ_INT(argus_ws_open(p, ARGUS_WS_CREATE, &ws), 0);
  return ws;
}

TEST(test_version_and_errors) {
  CHECK_EQ_INT(argus_api_version(), ARGUS_API_VERSION);
  CHECK(argus_version()[0] != 0);
  CHECK_EQ_STR(argus_error_name(ARGUS_EINVAL), "ARGUS_EINVAL");
  CHECK_EQ_STR(argus_error_name(ARGUS_ESCHEMA), "ARGUS_ESCHEMA");
  CHECK_EQ_STR(argus_error_name(ARGUS_EFAILED), "ARGUS_EFAILED");
  CHECK_EQ_STR(argus_strerror(ARGUS_ENOTFOUND), "not found");
  argus_free(NULL);
}

TEST(test_workspace_open) {
  setup();
  argus_ws *ws = (argus_ws *)1;
  char p[128];
  snprintf(p, sizeof p, "%s/none", dir);
  CHECK_EQ_INT(argus_ws_open(p, 0, &ws), ARGUS_ENOTFOUND);
  CHECK(ws == NULL);
  CHECK_CONTAINS(argus_errmsg(), "cannot open the workspace '");
  CHECK_CONTAINS(argus_errmsg(), "/none'");
  CHECK_EQ_INT(argus_ws_open(p, 8, &ws), ARGUS_EINVAL);
  ws = open_ws("ws1");
  CHECK_CONTAINS(argus_ws_path(ws), "/ws1");
  char *j = NULL;
  CHECK_EQ_INT(argus_ws_refs(ws, &j), 0);
  CHECK_EQ_STR(j, "[]");
  argus_free(j);
  CHECK_EQ_INT(argus_ws_versions(ws, 0, &j), 0);
  CHECK_EQ_STR(j, "[]");
  argus_free(j);
  CHECK_EQ_INT(argus_ws_refs(NULL, &j), ARGUS_EINVAL);
  CHECK_CONTAINS(argus_errmsg(), "'ws' must not be NULL");
  argus_ws_close(ws);
  argus_ws_close(NULL);
}

TEST(test_plan) {
  setup();
  if (access(ptx, R_OK) != 0)
    SKIP("no PTX corpus (%s; built with nvcc)", ptx);
  argus_ws *ws = open_ws("ws2");
  char *plan = NULL;
  CHECK_EQ_INT(argus_plan(ws, spec, "step", "duration,static", "iter=0:8", NULL, &plan), 0);
  CHECK(plan != NULL);
  CHECK_CONTAINS(plan, "\"op\": \"discover\"");
  CHECK_CONTAINS(plan, "synth.static");
  argus_free(plan);
  /* an unknown region fails the discovery: the plan comes back with the error */
  CHECK_EQ_INT(argus_plan(ws, spec, "nope", NULL, NULL, NULL, &plan), ARGUS_EFAILED);
  CHECK(plan != NULL);
  CHECK_CONTAINS(argus_errmsg(), "discover failed:");
  CHECK_CONTAINS(argus_errmsg(), "nope");
  argus_free(plan);
  /* an unknown signal: an error with the diagnostic */
  CHECK_EQ_INT(argus_plan(ws, spec, "work", "duration,bogus", NULL, NULL, &plan), ARGUS_EINVAL);
  CHECK(plan == NULL);
  CHECK_CONTAINS(argus_errmsg(), "bogus");
  CHECK_CONTAINS(argus_errdiags(), "bogus");
  /* options: unknown keys and wrong types are named */
  CHECK_EQ_INT(argus_plan(ws, spec, "work", NULL, NULL, "{\"timeout\": 3}", &plan), ARGUS_EINVAL);
  CHECK_CONTAINS(argus_errmsg(), "unknown option 'timeout' (known: timeout_s,");
  CHECK_EQ_INT(argus_plan(ws, spec, "work", NULL, NULL, "{\"records\": \"9\"}", &plan),
               ARGUS_EINVAL);
  CHECK_CONTAINS(argus_errmsg(), "option 'records' takes a positive integer");
  CHECK_EQ_INT(argus_plan(ws, spec, "work", NULL, NULL, "{\"records\": 8}", &plan), ARGUS_EINVAL);
  CHECK_CONTAINS(argus_errmsg(), "'records' needs a number >= 16");
  CHECK_EQ_INT(argus_plan(ws, spec, "work", NULL, NULL, "[1]", &plan), ARGUS_EINVAL);
  CHECK_CONTAINS(argus_errmsg(), "the options must be a JSON object");
  CHECK_EQ_INT(argus_plan(ws, spec, "work", NULL, NULL, "{oops", &plan), ARGUS_EINVAL);
  CHECK_CONTAINS(argus_errmsg(), "the options are not JSON");
  /* files */
  CHECK_EQ_INT(argus_plan(ws, "/nonexistent/s.json", "work", NULL, NULL, NULL, &plan),
               ARGUS_ENOTFOUND);
  CHECK_EQ_STR(argus_errmsg(), "cannot read '/nonexistent/s.json': no such file");
  const char *bad = write_file("bad.json", "{\"name\": \"x\",\n \"runn\": []}");
  CHECK_EQ_INT(argus_plan(ws, bad, "work", NULL, NULL, NULL, &plan), ARGUS_EPARSE);
  CHECK_CONTAINS(argus_errdiags(), "\"line\": 2");
  CHECK_EQ_INT(argus_plan(ws, spec, NULL, NULL, NULL, NULL, &plan), ARGUS_EINVAL);
  CHECK_CONTAINS(argus_errmsg(), "'region' must not be NULL");
  argus_ws_close(ws);
}

TEST(test_observe_static_and_read_back) {
  setup();
  if (access(ptx, R_OK) != 0)
    SKIP("no PTX corpus (%s; built with nvcc)", ptx);
  argus_ws *ws = open_ws("ws3");
  argus_report *r = NULL;
  CHECK_EQ_INT(argus_observe(ws, spec, "work", "static", NULL, NULL, &r), 0);
  if (!r) {
    fprintf(stderr, "%s\n%s\n", argus_errmsg(), argus_errdiags());
    argus_ws_close(ws);
    return;
  }
  CHECK(argus_report_nvalues(r) > 0);
  CHECK_EQ_INT(strlen(argus_report_hash(r)), 64);
  CHECK_CONTAINS(argus_report_json(r), "\"schema\": \"argus.report/1\"");
  int regs = 0;
  argus_value v;
  for (size_t i = 0; i < argus_report_nvalues(r); i++) {
    CHECK_EQ_INT(argus_report_value(r, i, &v), 0);
    CHECK_EQ_STR(v.signal, "static");
    CHECK_EQ_STR(v.qual, "observed");
    CHECK_CONTAINS(v.provenance, "\"tasks\": [");
    CHECK_CONTAINS(v.provenance, "\"collector\": null"); /* the compiler's report: no run */
    CHECK(v.entropy == -1);
    if (!strcmp(v.stat, "registers")) {
      CHECK(v.has_number);
      regs = (int)v.number;
      CHECK_EQ_STR(v.unit, "registers");
    }
  }
  CHECK(regs > 0 && regs <= 255);
  CHECK_EQ_INT(argus_report_value(r, argus_report_nvalues(r), &v), ARGUS_ERANGE);
  char *text = NULL;
  CHECK_EQ_INT(argus_report_text(r, &text), 0);
  CHECK_CONTAINS(text, "registers");
  argus_free(text);
  /* the stored report, by a hash prefix */
  char prefix[13];
  snprintf(prefix, sizeof prefix, "%s", argus_report_hash(r));
  argus_report *back = NULL;
  CHECK_EQ_INT(argus_report_read(ws, prefix, &back), 0);
  CHECK_EQ_INT(argus_report_nvalues(back), argus_report_nvalues(r));
  CHECK_EQ_STR(argus_report_hash(back), argus_report_hash(r));
  CHECK_EQ_STR(argus_report_json(back), argus_report_json(r));
  argus_report_free(back);
  argus_report_free(r);
  CHECK_EQ_INT(argus_report_read(ws, "feedbeef0000", &back), ARGUS_ENOTFOUND);
  CHECK_CONTAINS(argus_errmsg(), "no report 'feedbeef0000' in '");
  CHECK(back == NULL);
  /* JSON of another schema is not a report (stored with `argus ws put`) */
  const char *bin = getenv("ARGUS_BIN");
  const char *other = write_file("plan.json", "{\"schema\": \"argus.plan/1\", \"values\": []}");
  char cmd[1024], hash[80] = "";
  snprintf(cmd, sizeof cmd, "'%s' -W '%s' ws put '%s'", bin ? bin : "argus", argus_ws_path(ws),
           other);
  FILE *p = popen(cmd, "r");
  CHECK(p && fgets(hash, sizeof hash, p));
  if (p)
    pclose(p);
  hash[strcspn(hash, "\n")] = 0;
  CHECK_EQ_INT(strlen(hash), 64);
  CHECK_EQ_INT(argus_report_read(ws, hash, &back), ARGUS_EPARSE);
  CHECK_CONTAINS(argus_errmsg(), "not an argus.report/1 report (schema 'argus.plan/1')");
  /* a version is not a report */
  CHECK_EQ_INT(argus_report_read(ws, "v1", &back), ARGUS_EPARSE);
  CHECK_CONTAINS(argus_errmsg(), "'v1' is not a report");
  argus_ws_close(ws);
}

/* A report stored with `argus ws put` into the workspace ws: its hash in
 * hash (65 bytes), "" when it could not be stored. */
static void put_report(argus_ws *ws, const char *path, char *hash) {
  const char *bin = getenv("ARGUS_BIN");
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "'%s' -W '%s' ws put '%s'", bin ? bin : "argus", argus_ws_path(ws),
           path);
  hash[0] = 0;
  FILE *p = popen(cmd, "r");
  if (p && !fgets(hash, 65, p))
    hash[0] = 0;
  if (p)
    pclose(p);
  hash[strcspn(hash, "\n")] = 0;
}

/* The percentage after "<region> " at the start of a line of text, or -1
 * when no line starts with it. */
static double share_of(const char *text, const char *region) {
  size_t n = strlen(region);
  for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
    if (!strncmp(l, region, n) && l[n] == ' ')
      return atof(l + n + 1);
  return -1;
}

/* The prompt-sized summary through the API (docs/report.md, "Summary"), on
 * the stored H200 report of gemm_tma: every budget is kept under the rule
 * of 3 bytes per token, regions come by their share of time, a small budget
 * says what it left out, and a budget out of range is refused. */
TEST(test_report_summary) {
  setup();
  const char *src = getenv("ARGUS_SOURCE_DIR");
  char path[512], hash[80];
  snprintf(path, sizeof path, "%s/tests/data/reports/gemm_tma.h200.report.json",
           src ? src : ".");
  if (access(path, R_OK) != 0)
    SKIP("no stored report at %s", path);
  argus_ws *ws = open_ws("ws5");
  put_report(ws, path, hash);
  CHECK_EQ_INT(strlen(hash), 64);
  argus_report *r = NULL;
  CHECK_EQ_INT(argus_report_read(ws, hash, &r), 0);
  if (!r) {
    argus_ws_close(ws);
    return;
  }
  static const int budgets[] = {ARGUS_SUMMARY_MIN_TOKENS, 80, 120, ARGUS_SUMMARY_DEFAULT_TOKENS,
                                4000, ARGUS_SUMMARY_MAX_TOKENS};
  size_t prev = 0;
  for (size_t b = 0; b < sizeof budgets / sizeof budgets[0]; b++) {
    char *t = NULL;
    CHECK_EQ_INT(argus_report_summary(r, budgets[b], &t), 0);
    if (!t)
      continue;
    size_t len = strlen(t);
    size_t tokens = (len + ARGUS_SUMMARY_BYTES_PER_TOKEN - 1) / ARGUS_SUMMARY_BYTES_PER_TOKEN;
    printf("budget %d: %zu bytes, %zu tokens\n", budgets[b], len, tokens);
    CHECK(tokens <= (size_t)budgets[b]);
    CHECK(len >= prev); /* a larger budget never says less */
    prev = len;
    CHECK_CONTAINS(t, "argus observe mainloop on gemm_tma");
    if (budgets[b] == ARGUS_SUMMARY_MIN_TOKENS)
      CHECK_CONTAINS(t, "more left out");
    if (budgets[b] == 120) { /* the budget cuts the smaller shares first */
      CHECK(share_of(t, "gemm_tma/mainloop/mma") > 73);
      CHECK(share_of(t, "gemm_tma/mainloop/loads") < 0);
      CHECK_CONTAINS(t, "… 3 more left out (3 facts, 0 warnings, 0 missing)");
    }
    printf("%s", t);
    if (budgets[b] == ARGUS_SUMMARY_DEFAULT_TOKENS) {
      /* ranked by share of time: mainloop 100 %, mma 73.8 %, loads 14.0 % */
      double main = share_of(t, "gemm_tma/mainloop"), mma = share_of(t, "gemm_tma/mainloop/mma"),
             loads = share_of(t, "gemm_tma/mainloop/loads");
      CHECK(main == 100 && mma > 73 && mma < 74 && loads > 13.9 && loads < 14.1);
      const char *pm = strstr(t, "\ngemm_tma/mainloop/mma "),
                 *pl = strstr(t, "\ngemm_tma/mainloop/loads ");
      CHECK(pm && pl && pm < pl);
      CHECK_CONTAINS(t, "[observed]");
    }
    argus_free(t);
  }
  /* the same text as the library's for the same budget, whatever the call */
  char *a = NULL, *b2 = NULL;
  CHECK_EQ_INT(argus_report_summary(r, 100, &a), 0);
  CHECK_EQ_INT(argus_report_summary(r, 100, &b2), 0);
  CHECK_EQ_STR(a ? a : "", b2 ? b2 : "-");
  argus_free(a);
  argus_free(b2);
  /* budgets out of range, and NULLs */
  char *t = (char *)1;
  CHECK_EQ_INT(argus_report_summary(r, ARGUS_SUMMARY_MIN_TOKENS - 1, &t), ARGUS_ERANGE);
  CHECK(t == NULL);
  CHECK_EQ_STR(argus_errmsg(), "argus_report_summary: max_tokens takes 64 to 1000000 tokens, "
                               "not 63");
  CHECK_EQ_INT(argus_report_summary(r, ARGUS_SUMMARY_MAX_TOKENS + 1, &t), ARGUS_ERANGE);
  CHECK_CONTAINS(argus_errmsg(), "not 1000001");
  CHECK_EQ_INT(argus_report_summary(r, 0, &t), ARGUS_ERANGE);
  CHECK_EQ_INT(argus_report_summary(r, -256, &t), ARGUS_ERANGE);
  CHECK_EQ_INT(argus_report_summary(NULL, 256, &t), ARGUS_EINVAL);
  CHECK_CONTAINS(argus_errmsg(), "'r' must not be NULL");
  CHECK_EQ_INT(argus_report_summary(r, 256, NULL), ARGUS_EINVAL);
  argus_report_free(r);
  argus_ws_close(ws);
}

TEST(test_versions_and_fork) {
  setup();
  if (access(ptx, R_OK) != 0)
    SKIP("no PTX corpus (%s; built with nvcc)", ptx);
  argus_ws *ws = open_ws("ws4");
  char *j = NULL;
  CHECK_EQ_INT(argus_plan(ws, spec, "work", "static", NULL, NULL, &j), 0);
  argus_free(j);
  CHECK_EQ_INT(argus_ws_versions(ws, 0, &j), 0);
  CHECK_CONTAINS(j, "\"id\": 1");
  argus_free(j);
  CHECK_EQ_INT(argus_ws_ref_set(ws, "base", "v1"), 0);
  int64_t id = 0;
  const char *edited = write_file("edited.ptx", "// an edited module\n");
  CHECK_EQ_INT(argus_ws_fork(ws, "base", edited, "edit: unroll", "cand-1", &id), 0);
  CHECK(id > 1);
  CHECK_EQ_INT(argus_ws_version(ws, "cand-1", &j), 0);
  char want[64];
  snprintf(want, sizeof want, "\"ancestry\": [%lld, 1]", (long long)id);
  CHECK_CONTAINS(j, want);
  CHECK_CONTAINS(j, "\"transform\": \"edit: unroll\"");
  CHECK_CONTAINS(j, "\"parent\": 1");
  argus_free(j);
  CHECK_EQ_INT(argus_ws_refs(ws, &j), 0);
  CHECK_CONTAINS(j, "\"name\": \"cand-1\"");
  CHECK_CONTAINS(j, "\"name\": \"base\"");
  argus_free(j);
  /* a fork without a module keeps the parent's; forking twice the same way
   * gives the same version (versions are identified by their content) */
  int64_t a = 0, b = 0;
  CHECK_EQ_INT(argus_ws_fork(ws, "v1", NULL, NULL, NULL, &a), 0);
  CHECK_EQ_INT(argus_ws_fork(ws, "v1", NULL, NULL, NULL, &b), 0);
  CHECK(a > 1 && a == b && a != id);
  /* bad input */
  CHECK_EQ_INT(argus_ws_fork(ws, "nope", NULL, NULL, NULL, &a), ARGUS_ENOTFOUND);
  CHECK_CONTAINS(argus_errmsg(), "no version 'nope' in '");
  CHECK(a == 0);
  CHECK_EQ_INT(argus_ws_fork(ws, "v1", "/nonexistent.ptx", NULL, NULL, NULL), ARGUS_ENOTFOUND);
  CHECK_EQ_STR(argus_errmsg(), "cannot read '/nonexistent.ptx': no such file");
  CHECK_EQ_INT(argus_ws_fork(ws, "v1", NULL, NULL, "v7", NULL), ARGUS_EINVAL);
  CHECK_CONTAINS(argus_errmsg(), "invalid ref name 'v7'");
  CHECK_EQ_INT(argus_ws_ref_set(ws, "x", "t1"), ARGUS_EINVAL);
  CHECK_CONTAINS(argus_errmsg(), "a ref points at a version (v12) or an artifact, not 't1'");
  CHECK_EQ_INT(argus_ws_version(ws, "t1", &j), ARGUS_EINVAL);
  CHECK_CONTAINS(argus_errmsg(), "'t1' is not a program version");
  argus_ws_close(ws);
}

TEST(test_check) {
  setup();
  const char *ok = write_file("ok.tile", "@threads(32)\ndef k(A: Tensor(32, f32)):\n"
                                         "    T = A[i] -> (i,)\n    x = A[threadIdx.x]\n"
                                         "    assert tag(x) == (threadIdx.x,)\n");
  argus_check *c = NULL;
  CHECK_EQ_INT(argus_check_file(ok, NULL, &c), 0);
  CHECK_EQ_INT(argus_check_verdict(c), ARGUS_CHECK_PROVED);
  CHECK_CONTAINS(argus_check_json(c), "\"verdict\": \"proved\"");
  CHECK_EQ_STR(argus_check_diagnostics(c), "[]");
  argus_check_free(c);
  const char *bad = write_file(
      "bad.tile", "@threads(32)\ndef k(A: Tensor(32, f32)):\n    T = A[i] -> (i,)\n"
                  "    s = make_shared((32,), f32)\n"
                  "    s[threadIdx.x] = A[threadIdx.x]\n    syncthreads()\n"
                  "    assert tag(s[(threadIdx.x + 1) % 32]) == (threadIdx.x,)\n");
  CHECK_EQ_INT(argus_check_file(bad, "{\"all\": true, \"batch\": 8}", &c), 0);
  CHECK_EQ_INT(argus_check_verdict(c), ARGUS_CHECK_VIOLATED);
  CHECK_CONTAINS(argus_check_json(c), "\"counterexample\"");
  argus_check_free(c);
  /* a malformed program is an error with the diagnostics */
  const char *mal = write_file("mal.tile", "@threads(32)\ndef k(:):\n    pass\n");
  CHECK_EQ_INT(argus_check_file(mal, NULL, &c), ARGUS_EPARSE);
  CHECK(c == NULL);
  CHECK_CONTAINS(argus_errmsg(), "malformed tile program '");
  CHECK_CONTAINS(argus_errmsg(), "expected a parameter name");
  CHECK_CONTAINS(argus_errdiags(), "\"line\": 2, \"col\": 7");
  /* options */
  /* options: "set" reaches the checker (the access is shifted by N - 32) */
  const char *sized = write_file("sized.tile", "@threads(32)\ndef k(A: Tensor(N, f32), N: const = 32):\n"
                                               "    T = A[i] -> (i,)\n    x = A[threadIdx.x + N - 32]\n"
                                               "    assert tag(x) == (threadIdx.x,)\n");
  CHECK_EQ_INT(argus_check_file(sized, "{\"unroll\": true}", &c), 0);
  CHECK_EQ_INT(argus_check_verdict(c), ARGUS_CHECK_PROVED);
  argus_check_free(c);
  CHECK_EQ_INT(argus_check_file(sized, "{\"set\": {\"N\": 64}}", &c), 0);
  CHECK_EQ_INT(argus_check_verdict(c), ARGUS_CHECK_VIOLATED);
  argus_check_free(c);
  CHECK_EQ_INT(argus_check_file(sized, "{\"set\": {\"N\": \"64\"}}", &c), ARGUS_EINVAL);
  CHECK_CONTAINS(argus_errmsg(), "option 'set' takes an object of integers");
  CHECK_EQ_INT(argus_check_file(sized, "{\"batch\": 5000}", &c), ARGUS_EINVAL);
  CHECK_CONTAINS(argus_errmsg(), "'batch' takes 1 to 4096");
  CHECK_EQ_INT(argus_check_file(sized, "{\"unroll\": 1}", &c), ARGUS_EINVAL);
  CHECK_CONTAINS(argus_errmsg(), "option 'unroll' takes true or false");
  CHECK_EQ_INT(argus_check_file(dir, NULL, &c), ARGUS_EISDIR);
  CHECK_CONTAINS(argus_errmsg(), "it is a directory");
  CHECK_EQ_INT(argus_check_file("/nonexistent.tile", NULL, &c), ARGUS_ENOTFOUND);
  CHECK_EQ_INT(argus_check_file(NULL, NULL, &c), ARGUS_EINVAL);
}

RUN_TESTS(T(test_version_and_errors), T(test_workspace_open), T(test_plan),
          T(test_observe_static_and_read_back), T(test_report_summary),
          T(test_versions_and_fork), T(test_check))
