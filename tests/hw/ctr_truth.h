/*
 * ctr_truth.h — the physically checkable facts of the hardware counters on
 * the paper's collector kernel (tests/data/cuda/attrib_truth.cu `collector`:
 * 8 x 2,048 dependent FFMAs per thread, 4 bytes in and 4 out per thread),
 * run in one user range "phase": checked on the H200 by test_gpu_counters
 * and on the CPU by test_counters on the evidence recorded there
 * (tests/data/evidence/collector.counters.json, 131,072 CTAs x 256 threads).
 */
#ifndef ARGUS_TESTS_CTR_TRUTH_H
#define ARGUS_TESTS_CTR_TRUTH_H

#include <math.h>
#include <stdio.h>

#include "argus/counters_ev.h"
#include "check.h"

#define FFMA_PER_THREAD (8.0 * 2048)

static double ctr_v(const ag_ctr_ev *e, const char *m) { return ag_ctr_ev_value(e, 0, m); }
#define v ctr_v

/* The counters of one launch of `collector` on blocks x threads. */
__attribute__((unused)) static void ctr_truth_check(const ag_ctr_ev *e, double blocks,
                                                    double threads) {
  const double bytes = blocks * threads * 4;
  json_t *sig = ag_ctr_signal(e);
  ag_str txt = AG_STR_INIT;
  ag_ctr_text(sig, &txt);
  printf("%s", ag_str_cstr(&txt));
  ag_str_release(&txt);
  printf("passes %ld, chip %s\n", e->passes, e->chip);
  CHECK_EQ_STR(e->chip, "GH100");
  CHECK(e->passes >= 1);
  CHECK_EQ_INT((int)e->nranges, 1);
  CHECK(e->matched);
  if (e->nranges < 1)
    goto out;
  CHECK_EQ_STR(e->ranges[0].kernel, "collector");
  CHECK_EQ_INT((int)e->ranges[0].launch, 0);
  CHECK_EQ_STR(e->ranges[0].user_range, "phase");
  /* the FLOPs the kernel was built to do */
  double ffma = v(e, "sm__sass_thread_inst_executed_op_ffma_pred_on.sum");
  printf("FFMA thread instructions %.0f, want %.0f\n", ffma, blocks * threads * FFMA_PER_THREAD);
  CHECK(ffma == blocks * threads * FFMA_PER_THREAD);
  CHECK(v(e, "sm__sass_thread_inst_executed_op_fadd_pred_on.sum") == 0);
  CHECK(v(e, "sm__sass_thread_inst_executed_op_fmul_pred_on.sum") == 0);
  json_t *r0 = json_array_get(json_object_get(sig, "ranges"), 0);
  json_t *roof = json_object_get(r0, "roofline");
  CHECK(json_number_value(json_object_get(roof, "fp32_flop")) == 2 * ffma);
  /* the bytes it must move: at most L2's capacity can stay in (or come
   * from) L2 */
  double l2 = (double)json_integer_value(json_object_get(json_object_get(e->root, "peaks"),
                                                         "l2_bytes"));
  double rd = v(e, "dram__bytes_read.sum"), wr = v(e, "dram__bytes_write.sum");
  printf("DRAM read %.0f write %.0f, L2 %.0f, moved %.0f each way\n", rd, wr, l2, bytes);
  CHECK(l2 > 0 && l2 < bytes);
  CHECK(rd >= bytes - l2);
  CHECK(wr >= bytes - l2);
  CHECK(v(e, "lts__t_bytes.sum") >= 2 * bytes);
  /* within the device */
  double dur = v(e, "gpu__time_duration.sum");
  CHECK(dur > 0);
  CHECK(json_number_value(json_object_get(roof, "fp32_flop_per_s")) <=
        1.05 * e->peaks.fp32_flop_s);
  CHECK(json_number_value(json_object_get(roof, "dram_bytes_per_s")) <=
        1.05 * e->peaks.dram_bytes_s);
  double sm = v(e, "sm__throughput.avg.pct_of_peak_sustained_elapsed");
  double occ = v(e, "sm__warps_active.avg.pct_of_peak_sustained_active");
  CHECK(sm > 0 && sm <= 100.5 && occ > 0 && occ <= 100.5);
  /* CUPTI's own FFMA peak per cycle is SMs x the lanes the table gave */
  double pk = v(e, "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained");
  printf("FFMA peak per cycle %.1f, SMs x lanes %d\n", pk, e->peaks.sm_count * e->peaks.fp32_lanes);
  CHECK(fabs(pk - (double)e->peaks.sm_count * e->peaks.fp32_lanes) < 0.5);
  CHECK_EQ_STR(json_string_value(json_object_get(roof, "bound")), "compute");
out:
  json_decref(sig);
}
#undef v

#endif
