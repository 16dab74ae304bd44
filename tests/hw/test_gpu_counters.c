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
 *   tensor  examples/gemm_tma (FP16 wgmma, FP32 accumulators), 1024^3,
 *           under ARGUS_COLLECT=counters: every launch's tensor FLOPs
 *           (the default set's HGMMA FP16 math ops) = 2 x M x N x K within
 *           0.1 % (the rule "one math op = one FLOP" checked against the
 *           GEMM's known work), its precision "tensor" (the SASS FLOP
 *           counters see next to nothing), the tensor peak read from the
 *           device above the achieved rate
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
#include "ctr_truth.h"

#ifndef ATTRIB_TRUTH_CUBIN
#define ATTRIB_TRUTH_CUBIN "attrib_truth.cubin"
#endif


TEST(counters_auto) {
  gpu_or_skip("test_gpu_counters");
  char dir[] = "/tmp/argus-gctr-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  const double blocks = 131072, threads = 256;
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
  ctr_truth_check(e, blocks, threads);
  ag_ctr_ev_free(e);
}

/* The harness argv under the hardware counters through ag_trace_run (range
 * mode `range`, NULL: auto) into dir, the evidence kept as save_as:
 * decoded, or NULL (the reason printed). */
static ag_ctr_ev *ctr_run(const char *const *argv, const char *cubin, const char *id,
                          const char *range, const char *dir, const char *save_as) {
  ag_trace_run_opts o;
  hw_ctr_opts(&o, argv, cubin, dir);
  o.variant_id = id;
  o.counters_range = range;
  ag_trace_run_result res;
  ag_str why = AG_STR_INIT;
  int rc = ag_trace_run(&o, &res, &why);
  if (rc)
    fprintf(stderr, "%s\n", ag_str_cstr(&why));
  CHECK_EQ_INT(rc, 0);
  ag_str_release(&why);
  if (res.evidence_path)
    evidence_out(res.evidence_path, save_as);
  ag_trace_run_result_release(&res);
  return rc ? NULL : hw_ctr_load(dir);
}

TEST(counters_user) {
  gpu_or_skip("test_gpu_counters");
  char dir[] = "/tmp/argus-gctru-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  const char *argv[] = {HW_HARNESS, "--module", ATTRIB_TRUTH_CUBIN, "--kernel", "collector",
                        "--blocks", "1024", "--threads", "256", "--range", "phase", NULL};
  ag_ctr_ev *e = ctr_run(argv, ATTRIB_TRUTH_CUBIN, "collector", "user", dir,
                         "collector.counters.user.json");
  if (!e)
    return;
  printf("user ranges: %ld passes, %ld harness runs\n", e->passes, e->harness_runs);
  CHECK_EQ_STR(e->replay, "application");
  CHECK_EQ_INT((int)e->harness_runs, (int)e->passes);
  CHECK_EQ_INT((int)e->nranges, 1);
  if (e->nranges)
    CHECK_EQ_STR(e->ranges[0].name, "phase");
  CHECK(ctr_v(e, "sm__sass_thread_inst_executed_op_ffma_pred_on.sum") ==
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

#ifndef GEMM_HARNESS
#define GEMM_HARNESS "gemm_tma_harness"
#endif
#ifndef GEMM_CUBIN
#define GEMM_CUBIN "gemm_tma.cubin"
#endif

TEST(tensor) {
  gpu_or_skip("test_gpu_counters");
  char dir[] = "/tmp/argus-gctrt-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  const double M = 1024, N = 1024, K = 1024;
  const char *argv[] = {GEMM_HARNESS, "--size", "1024", "--reps", "3", "--module", GEMM_CUBIN,
                        NULL};
  ag_ctr_ev *e = ctr_run(argv, GEMM_CUBIN, "gemm_tma", NULL, dir, "gemm_tma.counters.json");
  if (!e)
    return;
  json_t *sig = ag_ctr_signal(e);
  ag_str t = AG_STR_INIT;
  CHECK(sig && ag_ctr_text(sig, &t) == 0);
  printf("%s", ag_str_cstr(&t));
  ag_str_release(&t);
  size_t i;
  json_t *r;
  int gemms = 0;
  json_array_foreach(json_object_get(sig, "ranges"), i, r) {
    const char *k = json_string_value(json_object_get(r, "kernel"));
    if (!k || !strstr(k, "gemm_tma"))
      continue;
    json_t *rf = json_object_get(r, "roofline");
    double ft = json_number_value(json_object_get(rf, "tensor_flop"));
    double rate = json_number_value(json_object_get(rf, "tensor_flop_per_s"));
    double peak = json_number_value(json_object_get(rf, "tensor_peak_flop_per_s"));
    printf("@ tensor: %s: %.0f tensor FLOPs (2MNK %.0f, ratio %.4f), %.1f of %.1f TFLOP/s, "
           "precision %s, source %s\n",
           json_string_value(json_object_get(r, "name")), ft, 2 * M * N * K,
           ft / (2 * M * N * K), rate / 1e12, peak / 1e12,
           json_string_value(json_object_get(rf, "precision")),
           json_string_value(json_object_get(rf, "tensor_source")));
    CHECK(fabs(ft / (2 * M * N * K) - 1) < 1e-3);
    CHECK_EQ_STR(json_string_value(json_object_get(rf, "precision")), "tensor");
    CHECK_EQ_STR(json_string_value(json_object_get(rf, "tensor_source")), "fp16");
    CHECK(peak > rate && rate > 0);
    gemms++;
  }
  CHECK(gemms >= 3);
  json_decref(sig);
  ag_ctr_ev_free(e);
}

RUN_TESTS(T(counters_auto), T(counters_user), T(held), T(tensor))
