/*
 * fake_cupti.c — a stand-in libcupti for CPU tests of the SASS-metrics
 * collector's failure paths (test_sass_metrics.c). cuptiSubscribe returns
 * FAKE_CUPTI_SUBSCRIBE (default 39, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_
 * SUPPORTED: another tool holds the subscriber); with 0 it succeeds and
 * cuptiProfilerInitialize returns 27 (CUPTI_ERROR_NOT_SUPPORTED). Every
 * other entry point the collector loads exists and fails.
 */
#include <stdlib.h>

typedef int res;
#define FAIL_FN(name)                                                          \
  res name(void *p);                                                           \
  res name(void *p) {                                                          \
    (void)p;                                                                   \
    return 999;                                                                \
  }

res cuptiGetResultString(int r, const char **s);
res cuptiGetResultString(int r, const char **s) {
  *s = r == 39 ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
       : r == 27 ? "CUPTI_ERROR_NOT_SUPPORTED"
                 : "CUPTI_ERROR_UNKNOWN";
  return 0;
}
res cuptiGetVersion(unsigned *v);
res cuptiGetVersion(unsigned *v) {
  *v = 0;
  return 0;
}
res cuptiSubscribe(void **h, void *cb, void *u);
res cuptiSubscribe(void **h, void *cb, void *u) {
  (void)cb, (void)u;
  const char *e = getenv("FAKE_CUPTI_SUBSCRIBE");
  *h = (void *)1;
  return e && *e ? atoi(e) : 39;
}
res cuptiUnsubscribe(void *h);
res cuptiUnsubscribe(void *h) {
  (void)h;
  return 0;
}
res cuptiProfilerInitialize(void *p);
res cuptiProfilerInitialize(void *p) {
  (void)p;
  return 27;
}
FAIL_FN(cuptiProfilerDeInitialize)
FAIL_FN(cuptiDeviceGetChipName)
FAIL_FN(cuptiSassMetricsGetNumOfMetrics)
FAIL_FN(cuptiSassMetricsGetMetrics)
FAIL_FN(cuptiSassMetricsGetProperties)
FAIL_FN(cuptiSassMetricsSetConfig)
FAIL_FN(cuptiSassMetricsUnsetConfig)
FAIL_FN(cuptiSassMetricsEnable)
FAIL_FN(cuptiSassMetricsDisable)
FAIL_FN(cuptiSassMetricsGetDataProperties)
FAIL_FN(cuptiSassMetricsFlushData)
FAIL_FN(cuptiGetCubinCrc)
