/* test_summary.c — the prompt-sized summary (src/report/summary.c) on
 * stored reports (tests/data/reports: two recorded on the H200, one made
 * without a GPU) and on the argus.trace/1 reports of the recorded H200
 * evidence (tests/data/evidence, through `argus --json trace --evidence`):
 * every budget holds under the stated token rule, facts carry their
 * qualification, time facts come in falling share, what is left out is
 * counted; bad input is refused. */
#include "argus/report.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

static json_t *load_report(const char *name) {
  char p[1024];
  const char *src = getenv("ARGUS_SOURCE_DIR");
  snprintf(p, sizeof p, "%s/tests/data/reports/%s", src ? src : ".", name);
  json_error_t e;
  json_t *j = json_load_file(p, 0, &e);
  if (!j)
    printf("cannot load %s: %s\n", p, e.text);
  CHECK(j != NULL);
  return j;
}

/* `argus --json trace --evidence FILE`: NULL when this argus has no trace
 * command (built without the CUDA toolkit). */
static json_t *trace_report(const char *evidence) {
  const char *bin = getenv("ARGUS_BIN"), *src = getenv("ARGUS_SOURCE_DIR");
  if (!bin)
    return NULL;
  char p[1024];
  snprintf(p, sizeof p, "%s/tests/data/evidence/%s", src ? src : ".", evidence);
  const char *argv[] = {bin, "--json", "trace", "--evidence", p, NULL};
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  ag_proc_opts o = {.argv = argv, .capture_out = &out, .capture_err = &err, .timeout_s = 60};
  ag_proc_result r;
  json_t *j = NULL;
  if (ag_proc_run(&o, &r) == 0 && r.exited && r.exit_code == 0)
    j = json_loads(ag_str_cstr(&out), 0, NULL);
  else
    printf("argus trace --evidence %s: %s\n", evidence, ag_str_cstr(&err));
  ag_str_release(&out);
  ag_str_release(&err);
  return j;
}

static int nlines(const char *s) {
  int n = 0;
  for (; *s; s++)
    n += *s == '\n';
  return n;
}

static const char *line_at(const char *s, int k, size_t *len) {
  for (int i = 0; i < k && s; i++)
    s = strchr(s, '\n') ? strchr(s, '\n') + 1 : NULL;
  const char *e = s ? strchr(s, '\n') : NULL;
  *len = e ? (size_t)(e - s) : 0;
  return s;
}

/* The invariants of every summary of r at every budget. Returns the number
 * of lines at the largest budget (everything). */
static int check_budgets(const char *what, const json_t *r) {
  static const int budgets[] = {64, 80, 100, 128, 256, 512, 100000};
  int all = -1;
  for (int b = (int)(sizeof budgets / sizeof *budgets) - 1; b >= 0; b--) {
    ag_str s = AG_STR_INIT;
    CHECK_EQ_INT(ag_report_summary(r, budgets[b], &s), 0);
    size_t tokens = ag_summary_tokens(s.len);
    if (tokens > (size_t)budgets[b])
      printf("%s: %zu tokens over the budget of %d:\n%s", what, tokens, budgets[b], s.p);
    CHECK(tokens <= (size_t)budgets[b]);
    CHECK(s.len > 0 && s.p[s.len - 1] == '\n');
    CHECK(!strncmp(s.p, "argus ", 6));
    int n = nlines(s.p);
    const char *cut = strstr(s.p, "… ");
    int left = 0, nf = 0, nw = 0, nm = 0;
    const char *tr = strstr(s.p, "more left out (");
    if (tr) { /* the last line counts what was left out */
      size_t l;
      const char *last = line_at(s.p, n - 1, &l);
      CHECK(last && !strncmp(last, "… ", strlen("… ")));
      CHECK_EQ_INT(sscanf(last + strlen("… "), "%d more left out (%d facts, %d warnings, %d missing)",
                          &left, &nf, &nw, &nm), 4);
      CHECK_EQ_INT(nf + nw + nm, left);
    }
    if (all < 0) {
      CHECK(tr == NULL); /* the largest budget holds everything */
      all = n;
    } else {
      /* shown (without the left-out line) + left out = everything */
      CHECK_EQ_INT(n - (tr ? 1 : 0) + left, all);
    }
    (void)cut;
    /* each fact says how it was obtained; time shares fall */
    double last_share = 1e9;
    for (int k = 1; k < n - (tr ? 1 : 0); k++) {
      size_t l;
      const char *ln = line_at(s.p, k, &l);
      char buf[1024];
      snprintf(buf, sizeof buf, "%.*s", (int)(l < 1000 ? l : 1000), ln);
      int qualified = strstr(buf, "[observed") || strstr(buf, "[derived") ||
                      strstr(buf, "[attributed") || !strncmp(buf, "warning: ", 9) ||
                      !strncmp(buf, "missing ", 8) || !strncmp(buf, "losses: ", 8) ||
                      strstr(buf, "not joined");
      if (!qualified)
        printf("%s: unqualified line '%s'\n", what, buf);
      CHECK(qualified);
      const char *pc = strstr(buf, "% (");
      if (!pc)
        pc = strstr(buf, "% in none of ");
      if (pc && !strstr(buf, "async site")) {
        const char *p = pc;
        while (p > buf && (p[-1] == '.' || (p[-1] >= '0' && p[-1] <= '9')))
          p--;
        double share = atof(p);
        CHECK(share <= last_share);
        last_share = share;
      }
    }
    ag_str_release(&s);
  }
  return all;
}

static char *summary_of(const json_t *r, int budget) {
  ag_str s = AG_STR_INIT;
  CHECK_EQ_INT(ag_report_summary(r, budget, &s), 0);
  return ag_str_detach(&s);
}

TEST(test_token_rule) {
  CHECK_EQ_U64(ag_summary_tokens(0), 0);
  CHECK_EQ_U64(ag_summary_tokens(1), 1);
  CHECK_EQ_U64(ag_summary_tokens(3), 1);
  CHECK_EQ_U64(ag_summary_tokens(4), 2);
  CHECK_EQ_U64(ag_summary_tokens(768), 256);
}

TEST(test_gemm_h200_ranked_by_share) {
  json_t *r = load_report("gemm_tma.h200.report.json");
  check_budgets("gemm_tma.h200", r);
  char *s = summary_of(r, 256);
  /* mainloop 23.458 ms; mma 17.301 ms (73.8 %); loads 3.277 ms (14.0 %) */
  CHECK_CONTAINS(s, "; % = share of gemm_tma/mainloop's summed occurrence time\n");
  CHECK_CONTAINS(s, "\ngemm_tma/mainloop 100% (23.5 ms over 5120 occurrences, mean 4.58 us, "
                    "p95 5.05 us) [observed]\n");
  CHECK_CONTAINS(s, "\ngemm_tma/mainloop/mma 73.8% (17.3 ms over 65536 occurrences, mean 264 ns, "
                    "p95 613 ns) [observed]\n");
  CHECK_CONTAINS(s, "\ngemm_tma/mainloop/loads 14.0% (3.28 ms");
  CHECK_CONTAINS(s, "\n12.3% in none of gemm_tma/mainloop's 2 child regions (2.88 ms) [derived]\n");
  CHECK_CONTAINS(s, "registers 90");
  CHECK(strstr(s, "/mainloop 100%") < strstr(s, "/mma 73.8%"));
  CHECK(strstr(s, "/mma 73.8%") < strstr(s, "/loads 14.0%"));
  CHECK(strstr(s, "/loads 14.0%") < strstr(s, "in none of"));
  CHECK(strstr(s, "in none of") < strstr(s, "compiler:"));
  CHECK(strstr(s, "left out") == NULL);
  ag_free(s);
  /* the smallest budget keeps the header and the largest share first */
  s = summary_of(r, 64);
  CHECK_CONTAINS(s, "left out");
  CHECK(strstr(s, "/loads 14.0%") == NULL);
  ag_free(s);
  json_decref(r);
}

TEST(test_async_sites_by_exposed_wait) {
  json_t *r = load_report("tma_probe.h200.report.json");
  check_budgets("tma_probe.h200", r);
  char *s = summary_of(r, 256);
  /* site 3's one iteration waited 365.2 ns; site 2's eight 67.7 ns on average */
  CHECK_CONTAINS(s, "async site 2f8440dedd58145c:3 in tma_probe/mainloop/loads: exposed wait "
                    "mean 365 ns over 1 iteration [observed]");
  CHECK_CONTAINS(s, "async site 2f8440dedd58145c:2 in tma_probe/mainloop/loads: exposed wait "
                    "mean 67.7 ns over 8 iterations [observed]");
  CHECK(strstr(s, "2f8440dedd58145c:3 in") < strstr(s, "2f8440dedd58145c:2 in"));
  CHECK_CONTAINS(s, "latency mean 283 ns [derived]");
  CHECK_CONTAINS(s, "1 value flagged");
  ag_free(s);
  json_decref(r);
}

TEST(test_no_gpu_report_says_what_is_missing) {
  json_t *r = load_report("gemm_tma.nogpu.report.json");
  check_budgets("gemm_tma.nogpu", r);
  char *s = summary_of(r, 256);
  CHECK_CONTAINS(s, "missing duration of mainloop: ");
  CHECK_CONTAINS(s, "needs a GPU");
  CHECK_CONTAINS(s, "warning: the measured build differs");
  ag_free(s);
  /* a small budget cuts the warning rather than drop it */
  s = summary_of(r, 80);
  CHECK_CONTAINS(s, "\nwarning: the measured build differs");
  CHECK_CONTAINS(s, " …\n");
  ag_free(s);
  s = summary_of(r, 256);
  /* qualifications before facts, missing before the compiler's figures */
  CHECK(strstr(s, "warning: ") < strstr(s, "missing duration"));
  CHECK(strstr(s, "missing duration") < strstr(s, "compiler: "));
  ag_free(s);
  json_decref(r);
}

TEST(test_trace_reports_of_recorded_evidence) {
  static const char *const ev[] = {"gemm_tma.agev", "overhead.agev"};
  for (int i = 0; i < 2; i++) {
    json_t *r = trace_report(ev[i]);
    if (!r) {
      printf("no argus trace (built without the CUDA toolkit): %s not checked\n", ev[i]);
      continue;
    }
    check_budgets(ev[i], r);
    char *s = summary_of(r, 256);
    CHECK_CONTAINS(s, "argus trace on ");
    CHECK_CONTAINS(s, " 100% (");
    CHECK_CONTAINS(s, "[observed]");
    ag_free(s);
    json_decref(r);
  }
}

/* A report of query region qregion on program k@v1; add() puts one duration
 * value (observed, traced) in it. */
static const ag_provenance kpv = {NULL, 0, "k@v1", "traced", "", NULL};

static ag_report *new_report(const char *qregion) {
  static const char *sigs[] = {"duration"};
  ag_query q = {.region = qregion, .signals = sigs, .nsignals = 1};
  ag_report *rep = ag_report_new(&q, "k@v1");
  CHECK(rep != NULL);
  return rep;
}

static void add(ag_report *rep, const char *region, const char *stat, double ns) {
  CHECK_EQ_INT(ag_report_add(rep, region, "duration", stat, ns, "ns", AG_QUAL_OBSERVED, -1, &kpv),
               0);
}

/* 300 regions and 50 warnings: most is left out, the budget holds, and the
 * left-out line counts them by kind. */
TEST(test_large_report_cut_to_budget) {
  ag_report *rep = new_report("k");
  add(rep, "k", "total", 1e11);
  for (int i = 0; i < 300; i++) {
    char n[64];
    snprintf(n, sizeof n, "k/region_%03d", i);
    add(rep, n, "total", 1e6 * (i + 1));
    add(rep, n, "mean", 100 + i);
  }
  for (int i = 0; i < 50; i++)
    ag_report_warning(rep, "the traced build changed occupancy: 1 CTAs per SM against 2");
  ag_report_missing(rep, "k", "static", "compile failed");
  json_t *r = ag_report_to_json(rep);
  int all = check_budgets("large", r);
  CHECK_EQ_INT(all, 1 + 50 + 301 + 1 + 1); /* header, warnings, regions, rest, missing */
  char *s = summary_of(r, 256);
  /* warnings first (they qualify every number), then the largest region */
  CHECK_CONTAINS(s, "warning: the traced build changed occupancy");
  ag_free(s);
  s = summary_of(r, 2000);
  CHECK_CONTAINS(s, "k/region_299 0.3% (");
  CHECK_CONTAINS(s, "54.9% in none of k's 300 child regions");
  CHECK(strstr(s, "k/region_299 ") < strstr(s, "k/region_298 "));
  ag_free(s);
  json_decref(r);
  ag_report_free(rep);
}

/* Shares are of the query's region (named by its local name), not of the
 * largest one. */
TEST(test_shares_of_the_query_region) {
  ag_report *rep = new_report("a");
  add(rep, "k", "total", 1000);
  add(rep, "k/a", "total", 400);
  add(rep, "k/a/b", "total", 100);
  json_t *r = ag_report_to_json(rep);
  check_budgets("query region", r);
  char *s = summary_of(r, 256);
  CHECK_CONTAINS(s, "% = share of k/a's summed occurrence time");
  CHECK_CONTAINS(s, "\nk/a/b 25.0% (100 ns)");
  CHECK_CONTAINS(s, "\nk 250.0% (1.00 us)");
  CHECK_CONTAINS(s, "\n75.0% in none of k/a's 1 child region (300 ns) [derived]");
  ag_free(s);
  json_decref(r);
  ag_report_free(rep);
}

static int valid_utf8(const unsigned char *p) {
  while (*p) {
    int n = *p < 0x80 ? 0 : (*p & 0xE0) == 0xC0 ? 1 : (*p & 0xF0) == 0xE0 ? 2
                                                     : (*p & 0xF8) == 0xF0 ? 3 : -1;
    if (n < 0)
      return 0;
    p++;
    for (int i = 0; i < n; i++, p++)
      if ((*p & 0xC0) != 0x80)
        return 0;
  }
  return 1;
}

/* A long warning of two-byte characters is cut at a character, never inside one. */
TEST(test_cut_keeps_utf8) {
  ag_report *rep = new_report("k");
  add(rep, "k", "total", 1000);
  ag_str w = AG_STR_INIT;
  for (int i = 0; i < 400; i++)
    ag_str_puts(&w, "\xc3\xa9");
  ag_report_warning(rep, ag_str_cstr(&w));
  ag_str_release(&w);
  json_t *r = ag_report_to_json(rep);
  for (int b = 64; b < 200; b++) {
    char *s = summary_of(r, b);
    CHECK(valid_utf8((const unsigned char *)s));
    CHECK_CONTAINS(s, "\nwarning: \xc3\xa9");
    CHECK(ag_summary_tokens(strlen(s)) <= (size_t)b);
    ag_free(s);
  }
  json_decref(r);
  ag_report_free(rep);
}

TEST(test_bad_input_refused) {
  ag_str s = AG_STR_INIT;
  json_t *r = json_pack("{s:s}", "schema", "argus.report/2");
  CHECK_EQ_INT(ag_report_summary(r, 256, &s), AG_EINVAL);
  json_decref(r);
  r = json_pack("{s:[]}", "values");
  CHECK_EQ_INT(ag_report_summary(r, 256, &s), AG_EINVAL);
  json_decref(r);
  CHECK_EQ_INT(ag_report_summary(NULL, 256, &s), AG_EINVAL);
  r = load_report("gemm_tma.h200.report.json");
  CHECK_EQ_INT(ag_report_summary(r, AG_SUMMARY_MIN_TOKENS - 1, &s), AG_ERANGE);
  CHECK_EQ_INT(ag_report_summary(r, -5, &s), AG_ERANGE);
  CHECK_EQ_INT((int)s.len, 0);
  /* malformed values (wrong types) are passed over, never trusted */
  json_t *v = json_object_get(r, "values");
  json_array_append_new(v, json_pack("{s:i,s:s,s:s,s:s}", "region", 3, "signal", "duration",
                                     "stat", "total", "value", "many"));
  json_array_append_new(v, json_pack("{s:s,s:s,s:s,s:i}", "region", "x", "signal",
                                     "async_latency", "stat", "exposed[", "value", 1));
  json_array_append_new(v, json_string("not a value"));
  CHECK_EQ_INT(ag_report_summary(r, 256, &s), 0);
  CHECK_CONTAINS(s.p, "73.8%");
  json_decref(r);
  ag_str_release(&s);
}

TEST(test_out_of_memory) {
  json_t *r = load_report("gemm_tma.h200.report.json");
  for (long n = 1; n < 400; n++) {
    ag_str s = AG_STR_INIT;
    ag_alloc_fail_at(n);
    int rc = ag_report_summary(r, 256, &s);
    ag_alloc_fail_at(0);
    CHECK(rc == 0 || rc == AG_ENOMEM);
    ag_str_release(&s);
    if (rc == 0)
      break;
  }
  json_decref(r);
}

RUN_TESTS(T(test_token_rule), T(test_gemm_h200_ranked_by_share), T(test_async_sites_by_exposed_wait),
          T(test_no_gpu_report_says_what_is_missing), T(test_trace_reports_of_recorded_evidence),
          T(test_large_report_cut_to_budget), T(test_shares_of_the_query_region), T(test_cut_keeps_utf8),
          T(test_bad_input_refused), T(test_out_of_memory))
