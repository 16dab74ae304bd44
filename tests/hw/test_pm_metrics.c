/*
 * test_pm_metrics.c — the PM sampler's metrics (argus/pm_metrics.h) against
 * the GH100 through CUPTI's profiler host API, which needs no GPU: the
 * collector's own configuration path (ag_pms_host_check, as ag_pms_open
 * runs it with the device's chip) accepts every name for PM sampling and
 * schedules all of them in one pass. A name the PM sampler lacks, or a set
 * that needs a second pass, fails here before any GPU sees it. Exit 77 when
 * the CUDA toolkit's libcupti cannot be loaded (ARGUS_LIBCUPTI names it), and
 * under AddressSanitizer, which refuses the RTLD_DEEPBIND with which CUPTI
 * opens libnvperf_host.so (the plain build runs it).
 */
#include "argus/host.h"
#include "check.h"
#include "pmsamp.h"

TEST(metrics_gh100) {
  CHK_SKIP_UNDER_ASAN_CUPTI_HOST();
  char err[1024] = "";
  size_t bytes = 0, passes = 0;
  int rc = ag_pms_host_check("GH100", &bytes, &passes, err, sizeof err);
  if (rc == AG_HOST_ENODEV)
    SKIP("%s", err);
  if (rc)
    fprintf(stderr, "%s\n", err);
  CHECK_EQ_INT(rc, 0);
  CHECK_EQ_INT(passes, 1);
  CHECK(bytes > 0);
  printf("GH100: %zu-byte PM-sampling config image, %zu pass\n", bytes, passes);
  /* a chip CUPTI does not know is refused with the reason */
  rc = ag_pms_host_check("GX999", &bytes, &passes, err, sizeof err);
  CHECK_EQ_INT(rc, AG_HOST_EUNSUPPORTED);
  CHECK_CONTAINS(err, "this CUPTI does not know chip 'GX999' (it knows ");
}

RUN_TESTS(T(metrics_gh100))
