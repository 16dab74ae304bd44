/*
 * test_report_names.c — names in the reference-trace report (issue 17): the
 * role of code that no role marker dominates reads "all", never "(none)";
 * region paths with a mangled kernel read demangled. On the recorded
 * gemm_tma evidence, with the mainloop's first occurrences made unroled.
 */
#include "check.h"

#include "argus/demangle.h"
#include "argus/report_trace.h"
#include "argus/synth.h"
#include "trace_util.h"

TEST(unroled_code_reads_all) {
  char p[1024];
  const char *src = getenv("ARGUS_SOURCE_DIR");
  snprintf(p, sizeof p, "%s/tests/data/evidence/gemm_tma.agev", src ? src : ".");
  ag_evidence *ev = tu_load_evidence(p);
  ag_trace *t = NULL;
  CHECK(ev && ag_trace_decode(ev, &t) == 0);
  if (!t)
    return;
  int ml = ag_evidence_find_region(ev, "gemm_tma/mainloop");
  CHECK(ml >= 0);
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

RUN_TESTS(T(unroled_code_reads_all), T(region_paths_demangled))
