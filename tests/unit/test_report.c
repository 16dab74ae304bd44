/* test_report.c — qualified values, provenance, missing and not-joined
 * entries, exact-join rule, text ordering. */
#include "argus/report.h"
#include "check.h"

TEST(test_values_carry_qual_and_provenance) {
  const char *sigs[] = {"duration"};
  ag_query q = {.region = "gemm", .signals = sigs, .nsignals = 1};
  ag_scope_parse("iter=0:4", &q.scope, NULL);
  ag_report *r = ag_report_new(&q, "gemm@v1");
  int tasks[] = {3, 4};
  ag_provenance pv = {tasks, 2, "gemm@v1", "traced", "iter=0:4", "trace"};
  CHECK_EQ_INT(ag_report_add(r, "gemm/mma", "duration", "total", 1500.0, "ns",
                             AG_QUAL_OBSERVED, -1, &pv), 0);
  CHECK_EQ_INT(ag_report_add(r, "gemm/loads", "duration", "total", 98000.5, "ns",
                             AG_QUAL_OBSERVED, -1, &pv), 0);
  CHECK_EQ_INT(ag_report_add(r, "gemm/mma", "inst_mix", "fma", 12.0, "count",
                             AG_QUAL_ATTRIBUTED, 0.69, &pv), 0);
  ag_report_missing(r, "gemm", "static", "compile failed: ptxas error at line 3");
  ag_report_not_joined(r, "probe #7 with reference", "different program versions (a vs b)");
  json_t *j = ag_report_to_json(r);
  CHECK_EQ_STR(json_string_value(json_object_get(j, "schema")), AG_REPORT_SCHEMA);
  json_t *vals = json_object_get(j, "values");
  CHECK_EQ_INT(json_array_size(vals), 3);
  size_t i;
  json_t *v;
  json_array_foreach(vals, i, v) {
    CHECK(json_is_string(json_object_get(v, "qual")));
    CHECK(json_is_string(json_object_get(v, "unit")));
    json_t *p = json_object_get(v, "provenance");
    CHECK_EQ_INT(json_array_size(json_object_get(p, "tasks")), 2);
    CHECK_EQ_STR(json_string_value(json_object_get(p, "program")), "gemm@v1");
    CHECK_EQ_STR(json_string_value(json_object_get(p, "scope")), "iter=0:4");
    /* the collection that recorded the evidence (the host runtime's) */
    CHECK_EQ_STR(json_string_value(json_object_get(p, "collector")), "trace");
  }
  /* entropy only on attributed values */
  CHECK(json_object_get(json_array_get(vals, 0), "entropy") == NULL);
  CHECK(json_object_get(json_array_get(vals, 2), "entropy") != NULL);
  CHECK_EQ_INT(json_array_size(json_object_get(j, "missing")), 1);
  CHECK_EQ_INT(json_array_size(json_object_get(j, "not_joined")), 1);
  json_decref(j);
  /* text: the biggest region first, missing and not-joined said plainly */
  ag_str s = AG_STR_INIT;
  CHECK_EQ_INT(ag_report_text(r, &s), 0);
  const char *t = ag_str_cstr(&s);
  CHECK(strstr(t, "gemm/loads") && strstr(t, "gemm/mma") &&
        strstr(t, "gemm/loads") < strstr(t, "gemm/mma"));
  CHECK_CONTAINS(t, "98.00 us");
  CHECK_CONTAINS(t, "[attributed, H=0.69]");
  CHECK_CONTAINS(t, "missing static: compile failed");
  CHECK_CONTAINS(t, "not joined probe #7");
  ag_str_release(&s);
  ag_report_free(r);
  /* evidence no run recorded (the compiler's report): collector null */
  ag_provenance none = {NULL, 0, "gemm@v1", "trace-free", "", NULL};
  r = ag_report_new(&q, "gemm@v1");
  CHECK_EQ_INT(ag_report_add(r, "gemm", "static", "registers", 90, "registers",
                             AG_QUAL_OBSERVED, -1, &none), 0);
  j = ag_report_to_json(r);
  json_t *p = json_object_get(json_array_get(json_object_get(j, "values"), 0), "provenance");
  CHECK(json_is_null(json_object_get(p, "collector")));
  json_decref(j);
  ag_report_free(r);
}

TEST(test_exact_joins) {
  ag_provenance a = {NULL, 0, "gemm@v1", "traced", "iter=0:8", NULL};
  ag_provenance b = a;
  ag_str why = AG_STR_INIT;
  CHECK_EQ_INT(ag_report_joinable(&a, &b, &why), 1);
  b.program = "gemm@v2";
  CHECK_EQ_INT(ag_report_joinable(&a, &b, &why), 0);
  CHECK_CONTAINS(ag_str_cstr(&why), "different program versions");
  ag_str_clear(&why);
  b = a;
  b.scope = "iter=0:4";
  CHECK_EQ_INT(ag_report_joinable(&a, &b, &why), 0);
  CHECK_CONTAINS(ag_str_cstr(&why), "different scope coordinates");
  ag_str_release(&why);
}

/* Regions are listed by their largest total time; an attributed
 * instruction total (not a time) orders only regions with no time. */
TEST(test_text_order_times_first) {
  const char *sigs[] = {"duration", "inst_mix"};
  ag_query q = {.region = "k", .signals = sigs, .nsignals = 2};
  ag_report *r = ag_report_new(&q, "k@v1");
  ag_provenance pv = {NULL, 0, "k@v1", "traced", "", NULL};
  ag_report_add(r, "k/small", "duration", "total", 100.0, "ns", AG_QUAL_OBSERVED, -1, &pv);
  ag_report_add(r, "k/big", "duration", "total", 9000.0, "ns", AG_QUAL_OBSERVED, -1, &pv);
  ag_report_add(r, "k/small", "inst_mix", "total", 1e9, "warp-inst", AG_QUAL_ATTRIBUTED, -1, &pv);
  ag_report_add(r, "k/x", "inst_mix", "total", 5.0, "warp-inst", AG_QUAL_ATTRIBUTED, -1, &pv);
  ag_report_add(r, "k/y", "inst_mix", "total", 50.0, "warp-inst", AG_QUAL_ATTRIBUTED, -1, &pv);
  ag_str t = AG_STR_INIT;
  CHECK_EQ_INT(ag_report_text(r, &t), 0);
  const char *s = ag_str_cstr(&t), *b = strstr(s, "\nk/big\n"), *sm = strstr(s, "\nk/small\n"),
             *x = strstr(s, "\nk/x\n"), *y = strstr(s, "\nk/y\n");
  CHECK(b && sm && x && y);
  if (b && sm && x && y)
    CHECK(b < sm && sm < y && y < x);
  ag_str_release(&t);
  ag_report_free(r);
}

/* Regions of equal weight in natural order: launch 2 before launch 10 */
TEST(test_text_order_natural) {
  const char *sigs[] = {"hw_counters"};
  ag_query q = {.region = "k", .signals = sigs, .nsignals = 1};
  ag_report *r = ag_report_new(&q, "k@v1");
  ag_provenance pv = {NULL, 0, "k@v1", "counters", "", NULL};
  static const char *const names[] = {"(launch 10 k)", "(launch 2 k)", "(launch 1 k)",
                                      "(launch 02a k)"};
  for (int i = 0; i < 4; i++)
    ag_report_add(r, names[i], "hw_counters", "gpu__time_duration.sum", 1.0, "nanosecond",
                  AG_QUAL_OBSERVED, -1, &pv);
  ag_str t = AG_STR_INIT;
  CHECK_EQ_INT(ag_report_text(r, &t), 0);
  const char *s = ag_str_cstr(&t), *l1 = strstr(s, "(launch 1 k)"),
             *l2 = strstr(s, "(launch 2 k)"), *l2a = strstr(s, "(launch 02a k)"),
             *l10 = strstr(s, "(launch 10 k)");
  CHECK(l1 && l2 && l2a && l10);
  if (l1 && l2 && l2a && l10)
    CHECK(l1 < l2 && l2 < l2a && l2a < l10);
  ag_str_release(&t);
  ag_report_free(r);
}

/* One failure behind several signals is said once in full; a breakdown
 * object prints its fields (numbers, text, yes/no) and groups with their
 * unit; an attributed value shows its entropy. */
TEST(test_text_missing_once_and_fields) {
  const char *sigs[] = {"inst_mix", "barriers"};
  ag_query q = {.region = "k", .signals = sigs, .nsignals = 2};
  ag_report *r = ag_report_new(&q, "k@v1");
  ag_provenance pv = {NULL, 0, "k@v1", "traced", "", NULL};
  const char *why = "input #7 (collect) failed: the harness failed (exit 1); the argus host "
                    "runtime reported: CUPTI already has a subscriber in this process";
  ag_report_missing(r, "k", "inst_mix", why);
  ag_report_missing(r, "k", "barriers", why);
  ag_report_missing(r, "k", "branch", "short");
  ag_report_missing(r, "k", "static", "short");
  ag_report_add_json(r, "k/a", "duration", "bias",
                     json_pack("{s:i,s:f,s:b,s:s}", "cycles_max", 20, "ns_max", 10.1, "subtracted",
                               0, "why", "not subtracted"),
                     "ns", AG_QUAL_DERIVED, &pv);
  ag_report_add_json(r, "k/a", "duration", "by_role",
                     json_pack("{s:{s:i,s:f}}", "all", "count", 5120, "mean", 557328.0), "ns",
                     AG_QUAL_OBSERVED, &pv);
  ag_report_add(r, "k/a", "inst_mix", "total", 800, "warp-inst", AG_QUAL_ATTRIBUTED, 0.5154, &pv);
  ag_str t = AG_STR_INIT;
  CHECK_EQ_INT(ag_report_text(r, &t), 0);
  const char *s = ag_str_cstr(&t);
  CHECK_CONTAINS(s, "missing inst_mix: input #7");
  CHECK_CONTAINS(s, "missing barriers: the same failure as inst_mix (above)");
  CHECK_CONTAINS(s, "missing static: short"); /* a short reason is said again */
  CHECK_CONTAINS(s, "cycles_max: 20, ns_max: 10.1, subtracted: no, why: not subtracted");
  CHECK_CONTAINS(s, "all: n=5120 mean 557.33 us");
  CHECK_CONTAINS(s, "[attributed, H=0.52]");
  ag_str_release(&t);
  ag_report_free(r);
}

RUN_TESTS(T(test_values_carry_qual_and_provenance), T(test_exact_joins),
          T(test_text_order_times_first), T(test_text_order_natural),
          T(test_text_missing_once_and_fields))
