/*
 * test_gpu_failures.c — a harness that faults the GPU or hangs fails its
 * Collect task with the reason, and leaves no evidence file behind. Exit 77
 * without a GPU.
 */
#include "check.h"
#include "gpu_util.h"

static char *dir;
static char harness[1024], cubin[1200], probes[1200], free_cubin[1200];

static void setup(void) {
  if (dir)
    return;
  gpu_or_skip("test_gpu_failures");
  dir = scratch_dir("failures");
  if (!dir || build_spin_variants(dir, harness, sizeof harness)) {
    fprintf(stderr, "test_gpu_failures: setup failed\n");
    exit(1);
  }
  snprintf(cubin, sizeof cubin, "%s/spin.traced.cubin", dir);
  snprintf(probes, sizeof probes, "%s/spin.traced.probes.json", dir);
  snprintf(free_cubin, sizeof free_cubin, "%s/spin.free.cubin", dir);
}

static int run_with(const char *flag, double timeout, const char *tag, ag_str *why) {
  setup();
  char truth[1300], out[1300], ev[1400];
  snprintf(truth, sizeof truth, "%s/truth-%s.bin", dir, tag);
  snprintf(out, sizeof out, "%s/out-%s", dir, tag);
  const char *argv[] = {harness, "--module", free_cubin, "--truth", truth, flag, NULL};
  ag_trace_run_opts o;
  memset(&o, 0, sizeof o);
  o.argv = argv;
  o.cubin_path = cubin;
  o.sites_path = probes;
  o.out_dir = out;
  o.timeout_s = timeout;
  ag_trace_run_result res;
  int rc = ag_trace_run(&o, &res, why);
  snprintf(ev, sizeof ev, "%s/trace.agev", out);
  CHECK(access(ev, F_OK) != 0); /* no evidence from a failed run */
  CHECK(res.evidence_path == NULL);
  ag_trace_run_result_release(&res);
  printf("@failure %s: %s\n", tag, ag_str_cstr(why));
  return rc;
}

TEST(gpu_fault_fails_with_reason) {
  ag_str why = AG_STR_INIT;
  int rc = run_with("--fault", 120, "fault", &why);
  CHECK_EQ_INT(rc, AG_ECUDA);
  CHECK_CONTAINS(ag_str_cstr(&why), "CUDA_ERROR_ILLEGAL_ADDRESS");
  CHECK_CONTAINS(ag_str_cstr(&why), "the harness failed (exit 1)");
  ag_str_release(&why);
}

TEST(hang_is_killed_at_timeout) {
  ag_str why = AG_STR_INIT;
  int rc = run_with("--hang", 5, "hang", &why);
  CHECK_EQ_INT(rc, AG_ETIMEOUT);
  CHECK_CONTAINS(ag_str_cstr(&why), "did not finish within 5 s");
  ag_str_release(&why);
}

RUN_TESTS(T(gpu_fault_fails_with_reason), T(hang_is_killed_at_timeout))
