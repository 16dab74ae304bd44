/*
 * test_pm_recorded.c — the throughput signal on evidence recorded on the
 * H200 (tests/data/evidence/pm.other_run.*, README there): the user's build
 * of the ground truth pm_truth sampled every 100 us by the collector's
 * decode thread, joined with a traced run of the same PTX. Decoded, aligned
 * and joined on the CPU, the signal must show what the construction gives:
 * the DRAM phase `stream` moves DRAM bytes and leaves the tensor pipe idle,
 * the `mma` phase the other way; each phase has about as many windows as
 * its length holds; nothing was lost (the decoder kept up at 100 us).
 */
#include <math.h>
#include <string.h>

#include "argus/collect.h"
#include "argus/pm.h"
#include "check.h"
#include "../trace/trace_util.h"
#include "hw_util.h"
#include "pm_trace_util.h"

static double num(const json_t *o, const char *k) {
  return json_number_value(json_object_get(o, k));
}

static double span_ms(const ag_trace *tr, const char *name) {
  double mean, span;
  pm_region_ms(tr, name, &mean, &span);
  return span;
}

TEST(recorded_other_run) {
  ag_diags d;
  ag_diags_init(&d);
  char *pp = hw_data_path("pm.other_run.json"), *tp = hw_data_path("pm.other_run.trace.agev");
  ag_pm_ev *pm = NULL;
  ag_evidence *ev = NULL;
  ag_trace *tr = NULL;
  json_t *sig = NULL;
  CHECK_EQ_INT(ag_pm_ev_load(pp, &d, &pm), 0);
  CHECK_EQ_INT(ag_evidence_load(tp, &d, &ev), 0);
  if (ev)
    CHECK_EQ_INT(ag_trace_decode(ev, &tr), 0);
  if (pm && tr) {
    ag_pm_signal_in in = {pm, tr, "pm_truth@test", "pm_truth@test", 0};
    CHECK_EQ_INT(ag_pm_signal(&in, &d, &sig), 0);
  }
  if (!sig)
    hw_print_diags(&d);
  CHECK(sig != NULL);
  if (pm) {
    CHECK_EQ_INT(pm->interval_ns, 100000);
    CHECK_EQ_INT(pm->overflow, 0);
    CHECK_EQ_INT(pm->incomplete, 0);
    CHECK_EQ_INT(pm->gaps, 0);
    CHECK_EQ_INT(pm->ncal, 2); /* both calibration kernels found in the samples */
    CHECK(pm->nsamples > 1000);
  }
  const json_t *st = sig ? hw_region(sig, "pm_truth/stream") : NULL;
  const json_t *mm = sig ? hw_region(sig, "pm_truth/mma") : NULL;
  CHECK(st && mm);
  if (st && mm) {
    /* at least half the windows a phase's span holds, and never more */
    double ss = span_ms(tr, "pm_truth/stream") * 10, sm = span_ms(tr, "pm_truth/mma") * 10;
    printf("@ windows: stream %.0f of %.1f, mma %.0f of %.1f\n", num(st, "windows"), ss,
           num(mm, "windows"), sm);
    CHECK(ss > 50 && sm > 50); /* phases of about 11 ms */
    CHECK(num(st, "windows") >= ss / 2 && num(st, "windows") <= ss + 1);
    CHECK(num(mm, "windows") >= sm / 2 && num(mm, "windows") <= sm + 1);
    CHECK(num(st, "dram_read_GBps") > 100 * fmax(num(mm, "dram_read_GBps"), 0.1));
    CHECK(num(st, "dram_write_GBps") > 100 * fmax(num(mm, "dram_write_GBps"), 0.1));
    CHECK(num(st, "dram_read_GBps") < 4800); /* the H200's peak */
    CHECK(num(mm, "tensor_active_pct") > 50 && num(st, "tensor_active_pct") < 10);
    CHECK(num(mm, "fma_ginst_per_s") > 5 * num(st, "fma_ginst_per_s"));
  }
  json_decref(sig);
  ag_trace_free(tr);
  ag_evidence_free(ev);
  ag_pm_ev_free(pm);
  ag_diags_release(&d);
  free(pp);
  free(tp);
}

RUN_TESTS(T(recorded_other_run))
