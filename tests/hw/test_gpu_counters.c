/*
 * test_gpu_counters.c — the hardware counters on the H200 (docs/counters.md),
 * on the paper's collector kernel (tests/data/cuda/attrib_truth.cu
 * `collector`: 8 x 2,048 dependent FFMAs per thread, out[t] from seed[t]),
 * run by tests/hw/hw_harness inside a user range "phase". Physically
 * checkable facts only:
 *
 *   auto    ARGUS_COLLECT=counters, 131,072 CTAs x 256 threads (128 MiB in,
 *           128 MiB out: more than L2 holds): the harness's results are
 *           right under kernel replay; one range, matched to launch 0 of
 *           `collector`, labelled "phase"; FFMA thread instructions =
 *           threads x 16,384 exactly, no FADD/FMUL, so FP32 FLOPs = 2 x that;
 *           DRAM bytes read (written) >= the bytes in (out) minus what L2
 *           can hold; L2 requested bytes >= in + out; the achieved FLOP/s
 *           within the device's peak; CUPTI's FFMA peak per cycle = SMs x
 *           the FP32 lanes the evidence recorded; compute-bound
 *   user    ARGUS_COUNTERS_RANGE=user through ag_trace_run: the harness runs
 *           once per pass (application replay); one range "phase" with
 *           the same FFMA count for its grid
 *   held    another tool holds CUPTI's subscriber: a clear failure, no
 *           evidence
 * The evidence goes to $ARGUS_EVIDENCE_OUT (collector.counters*.json: the
 * recorded evidence that replaces tests/data/evidence/counters.synthetic.json).
 * Exit 77 without a GPU. Written before any GPU run: the first run on the
 * H200 is its first test.
 */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "argus/collect.h"
#include "argus/counters_ev.h"
#include "check.h"
#include "../trace/gpu_util.h"
#include "hw_util.h"

#ifndef ATTRIB_TRUTH_CUBIN
#define ATTRIB_TRUTH_CUBIN "attrib_truth.cubin"
#endif

#define FFMA_PER_THREAD (8.0 * 2048)

static double v(const ag_ctr_ev *e, const char *m) { return ag_ctr_ev_value(e, 0, m); }

TEST(counters_auto) {
  gpu_or_skip("test_gpu_counters");
  char dir[] = "/tmp/argus-gctr-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  const double blocks = 131072, threads = 256, bytes = blocks * threads * 4;
  ag_str out = {0};
  ag_proc_result pr;
  const char *args[] = {"--kernel", "collector", "--blocks", "131072", "--threads", "256",
                        "--range", "phase", NULL};
  CHECK_EQ_INT(hw_run(dir, "counters", ATTRIB_TRUTH_CUBIN, ATTRIB_TRUTH_CUBIN, args, NULL, &out,
                      &pr), 0);
  printf("%s", out.p ? out.p : "");
  ag_str_release(&out);
  if (pr.exited && pr.exit_code == 77)
    SKIP("no GPU");
  if (!pr.exited || pr.exit_code) { /* why: the host runtime's message */
    char p[1200], *t = NULL;
    size_t n = 0;
    snprintf(p, sizeof p, "%s/host-error.txt", dir);
    if (!ag_file_read(p, &t, &n))
      fprintf(stderr, "host runtime: %s", t);
    ag_free(t);
  }
  /* kernel replay restores memory between passes: the results are right */
  CHECK(pr.exited && pr.exit_code == 0);
  char p[1200];
  snprintf(p, sizeof p, "%s/counters.json", dir);
  evidence_out(p, "collector.counters.json");
  ag_ctr_ev *e = hw_ctr_load(dir);
  CHECK(e != NULL);
  if (!e)
    return;
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
  ag_ctr_ev_free(e);
}

TEST(counters_user) {
  gpu_or_skip("test_gpu_counters");
  char dir[] = "/tmp/argus-gctru-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  const char *argv[] = {HW_HARNESS, "--module", ATTRIB_TRUTH_CUBIN, "--kernel", "collector",
                        "--blocks", "1024", "--threads", "256", "--range", "phase", NULL};
  ag_trace_run_opts o;
  hw_ctr_opts(&o, argv, ATTRIB_TRUTH_CUBIN, dir);
  o.variant_id = "collector";
  o.counters_range = "user";
  ag_trace_run_result res;
  ag_str why = AG_STR_INIT;
  int rc = ag_trace_run(&o, &res, &why);
  if (rc)
    fprintf(stderr, "%s\n", ag_str_cstr(&why));
  CHECK_EQ_INT(rc, 0);
  ag_str_release(&why);
  if (res.evidence_path)
    evidence_out(res.evidence_path, "collector.counters.user.json");
  ag_trace_run_result_release(&res);
  ag_ctr_ev *e = rc ? NULL : hw_ctr_load(dir);
  if (!e)
    return;
  printf("user ranges: %ld passes, %ld harness runs\n", e->passes, e->harness_runs);
  CHECK_EQ_STR(e->replay, "application");
  CHECK_EQ_INT((int)e->harness_runs, (int)e->passes);
  CHECK_EQ_INT((int)e->nranges, 1);
  if (e->nranges)
    CHECK_EQ_STR(e->ranges[0].name, "phase");
  CHECK(v(e, "sm__sass_thread_inst_executed_op_ffma_pred_on.sum") ==
        1024.0 * 256 * FFMA_PER_THREAD);
  ag_ctr_ev_free(e);
}

TEST(held) {
  gpu_or_skip("test_gpu_counters");
  char dir[] = "/tmp/argus-gctrh-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  ag_str out = {0};
  ag_proc_result pr;
  const char *args[] = {"--kernel", "collector", "--blocks", "4", "--threads", "128",
                        "--hold-cupti", NULL};
  CHECK_EQ_INT(hw_run(dir, "counters", ATTRIB_TRUTH_CUBIN, ATTRIB_TRUTH_CUBIN, args, NULL, &out,
                      &pr), 0);
  ag_str_release(&out);
  CHECK(pr.exited && pr.exit_code != 0);
  char p[1200], *t = NULL;
  size_t n = 0;
  snprintf(p, sizeof p, "%s/host-error.txt", dir);
  CHECK_EQ_INT(ag_file_read(p, &t, &n), 0);
  CHECK_CONTAINS(t ? t : "", "hardware counters need the process's one CUPTI subscriber");
  ag_free(t);
  snprintf(p, sizeof p, "%s/counters.json", dir);
  CHECK(access(p, F_OK) != 0);
}

RUN_TESTS(T(counters_auto), T(counters_user), T(held))
