/*
 * test_report_names.c — names in the reference-trace report (issue 17): the
 * role of code that no role marker dominates reads "all", never "(none)";
 * region paths with a mangled kernel read demangled. On the recorded
 * gemm_tma evidence, with the mainloop's first occurrences made unroled.
 */
#include "check.h"

#include <math.h>

#include "argus/demangle.h"
#include "argus/report.h"
#include "argus/report_trace.h"
#include "argus/synth.h"
#include "trace_util.h"

/* The recorded gemm_tma evidence, decoded; returns its mainloop's index
 * (-1 after a failed check). */
static int load_gemm(ag_evidence **ev, ag_trace **t) {
  char p[1024];
  const char *src = getenv("ARGUS_SOURCE_DIR");
  snprintf(p, sizeof p, "%s/tests/data/evidence/gemm_tma.agev", src ? src : ".");
  *ev = tu_load_evidence(p);
  *t = NULL;
  CHECK(*ev && ag_trace_decode(*ev, t) == 0);
  int ml = *t ? ag_evidence_find_region(*ev, "gemm_tma/mainloop") : -1;
  CHECK(ml >= 0);
  if (ml < 0) {
    ag_trace_free(*t);
    ag_evidence_free(*ev);
  }
  return ml;
}

TEST(unroled_code_reads_all) {
  ag_evidence *ev = NULL;
  ag_trace *t = NULL;
  int ml = load_gemm(&ev, &t);
  if (ml < 0)
    return;
  size_t moved = 0;
  for (size_t i = 0; i < t->nocc && moved < 10; i++)
    if (t->occ[i].region == ml && t->occ[i].role >= 0)
      t->occ[i].role = -1, moved++;
  CHECK_EQ_INT((int)moved, 10);
  ag_region_stats *rs = NULL;
  int n = 0;
  CHECK_EQ_INT(ag_trace_stats(t, NULL, NULL, 0, &rs, &n), 0);
  ag_str out = AG_STR_INIT;
  CHECK_EQ_INT(ag_report_trace_text(t, NULL, rs, n, &out), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "role all                 10 mean");
  CHECK(!strstr(ag_str_cstr(&out), "(none)"));
  CHECK_EQ_STR(ag_evidence_role_name(ev, -1), "all");
  CHECK_EQ_STR(ag_evidence_role_name(ev, 0), ev->roles[0]);
  ag_str_release(&out);
  ag_region_stats_free(rs, n);
  ag_trace_free(t);
  ag_evidence_free(ev);
}

TEST(timeline_and_table_demangled) {
  /* the recorded gemm_tma evidence, its kernel renamed as a template's */
  ag_evidence *ev = NULL;
  ag_trace *t = NULL;
  int ml = load_gemm(&ev, &t);
  if (ml < 0)
    return;
  ev->regions[ml].qname = "_ZN4gemm5sgemmILi128ELi128ELi8EfEEvPT2_PKS1_S4_i/mainloop";
  ag_str ct = AG_STR_INIT;
  CHECK_EQ_INT(ag_report_chrome_trace(t, NULL, &ct), 0);
  CHECK_CONTAINS(ag_str_cstr(&ct), "{\"name\":\"gemm::sgemm<128, 128, 8, float>/mainloop\"");
  CHECK(!strstr(ag_str_cstr(&ct), "_ZN4gemm"));
  ag_region_stats *rs = NULL;
  int n = 0;
  CHECK_EQ_INT(ag_trace_stats(t, NULL, NULL, 0, &rs, &n), 0);
  ag_str out = AG_STR_INIT;
  CHECK_EQ_INT(ag_report_trace_text(t, NULL, rs, n, &out), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "\ngemm::sgemm<128, 128, 8, float>/mainloop ");
  ag_str_release(&out);
  ag_str_release(&ct);
  ag_region_stats_free(rs, n);
  ag_trace_free(t);
  ag_evidence_free(ev);
}

TEST(region_paths_demangled) {
  char b[256];
  ag_demangle_path("_ZN4gemm5sgemmILi128ELi128ELi8EfEEvPT2_PKS1_S4_i/mainloop/loads", b,
                   sizeof b);
  CHECK_EQ_STR(b, "gemm::sgemm<128, 128, 8, float>/mainloop/loads");
  ag_demangle_path("gemm_tma/mainloop", b, sizeof b);
  CHECK_EQ_STR(b, "gemm_tma/mainloop"); /* extern "C": as is */
  ag_demangle_path("_Zbroken/x", b, sizeof b);
  CHECK_EQ_STR(b, "_Zbroken/x"); /* not demangled: as is */
  CHECK_EQ_INT((int)ag_demangle_path("_Z5plainPf/work", b, 8), 7); /* truncated */
  CHECK_EQ_STR(b, "plain/w");
}

TEST(flagged_values_are_not_numbers) {
  const char *sigs[] = {"async_latency"};
  ag_query q = {"loads", sigs, 1, {{0}, {{0}}}};
  ag_report *r = ag_report_new(&q, "p@1");
  CHECK(r != NULL);
  if (!r)
    return;
  CHECK_EQ_INT(ag_report_add(r, "k/loads", "async_latency", "latency[a@0]", 512.5, "ns",
                             AG_QUAL_DERIVED, -1, NULL),
               0);
  CHECK_EQ_INT(ag_report_add_flagged(r, "k/loads", "async_latency", "hidden[a@0]", -54.25, "ns",
                                     AG_QUAL_DERIVED, "negative: exposed > latency", NULL),
               0);
  json_t *j = ag_report_to_json(r);
  json_t *v = json_array_get(json_object_get(j, "values"), 1);
  CHECK(json_is_null(json_object_get(v, "value"))); /* never a plain number */
  CHECK(fabs(json_number_value(json_object_get(v, "raw")) + 54.25) < 1e-9);
  CHECK_EQ_STR(json_string_value(json_object_get(v, "flag")), "negative: exposed > latency");
  ag_str t = AG_STR_INIT;
  CHECK_EQ_INT(ag_report_json_text(j, &t), 0);
  CHECK_CONTAINS(ag_str_cstr(&t), "hidden[a@0] flagged (raw -54.2 ns): negative: exposed > latency");
  CHECK_CONTAINS(ag_str_cstr(&t), "latency[a@0] 512.5 ns");
  ag_str_release(&t);
  json_decref(j);
  ag_report_free(r);
}

RUN_TESTS(T(unroled_code_reads_all), T(timeline_and_table_demangled), T(region_paths_demangled), T(flagged_values_are_not_numbers))
