/*
 * fake_cupti.c — a stand-in libcupti for CPU tests of the SASS-metrics
 * collector's failure paths (test_sass_metrics.c). cuptiSubscribe returns
 * FAKE_CUPTI_SUBSCRIBE (default 39, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_
 * SUPPORTED: another tool holds the subscriber); with 0 it succeeds and
 * cuptiProfilerInitialize returns 27 (CUPTI_ERROR_NOT_SUPPORTED; it, the
 * chip name and the range profiler are in fake_cupti_ctr.c). Every other
 * entry point the collector loads exists and fails (the activity and
 * PC-sampling ones: see below).
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
       : r == 35 ? "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"
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

/* The activity and PC-sampling entry points (tests/hw/test_hw.c): with
 * FAKE_CUPTI_SUBSCRIBE=0, cuptiActivityEnable returns FAKE_CUPTI_ACTIVITY
 * (default 0; with FAKE_CUPTI_ACTIVITY_KIND=N, for kind N only) and cuptiPCSamplingEnable FAKE_CUPTI_PCSAMPLING (default 35,
 * CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: profiling not permitted). */
static res env_res(const char *k, int dflt) {
  const char *e = getenv(k);
  return e && *e ? atoi(e) : dflt;
}
res cuptiActivityRegisterCallbacks(void *a, void *b);
res cuptiActivityRegisterCallbacks(void *a, void *b) {
  (void)a, (void)b;
  return 0;
}
res cuptiActivityEnable(int kind);
res cuptiActivityEnable(int kind) {
  /* FAKE_CUPTI_ACTIVITY_KIND=N: only kind N gets FAKE_CUPTI_ACTIVITY's code */
  if (getenv("FAKE_CUPTI_ACTIVITY_KIND") && env_res("FAKE_CUPTI_ACTIVITY_KIND", -1) != kind)
    return 0;
  return env_res("FAKE_CUPTI_ACTIVITY", 0);
}
res cuptiActivityDisable(int kind);
res cuptiActivityDisable(int kind) {
  (void)kind;
  return 0;
}
res cuptiActivityFlushAll(unsigned flag);
res cuptiActivityFlushAll(unsigned flag) {
  (void)flag;
  return 0;
}
res cuptiActivitySetAttribute(int attr, size_t *size, void *value);
res cuptiActivitySetAttribute(int attr, size_t *size, void *value) {
  (void)attr, (void)size, (void)value;
  return 0;
}
FAIL_FN(cuptiActivityGetNextRecord)
FAIL_FN(cuptiActivityGetNumDroppedRecords)
FAIL_FN(cuptiGetTimestamp)
res cuptiPCSamplingEnable(void *p);
res cuptiPCSamplingEnable(void *p) {
  (void)p;
  return env_res("FAKE_CUPTI_PCSAMPLING", 35);
}
FAIL_FN(cuptiPCSamplingDisable)
FAIL_FN(cuptiPCSamplingStart)
FAIL_FN(cuptiPCSamplingStop)
FAIL_FN(cuptiPCSamplingGetData)
FAIL_FN(cuptiPCSamplingGetNumStallReasons)
FAIL_FN(cuptiPCSamplingGetStallReasons)
FAIL_FN(cuptiPCSamplingSetConfigurationAttribute)

/* PM sampling (tests/hw/test_pm.c): the counter availability, the first
 * call that asks the driver, returns FAKE_CUPTI_PMSAMPLING (default 35,
 * CUPTI_ERROR_INSUFFICIENT_PRIVILEGES); the rest exist and fail. */
res cuptiPmSamplingGetCounterAvailability(void *p);
res cuptiPmSamplingGetCounterAvailability(void *p) {
  (void)p;
  return env_res("FAKE_CUPTI_PMSAMPLING", 35);
}
FAIL_FN(cuptiPmSamplingEnable)
FAIL_FN(cuptiPmSamplingDisable)
FAIL_FN(cuptiPmSamplingSetConfig)
FAIL_FN(cuptiPmSamplingStart)
FAIL_FN(cuptiPmSamplingStop)
FAIL_FN(cuptiPmSamplingDecodeData)
FAIL_FN(cuptiPmSamplingGetCounterDataSize)
FAIL_FN(cuptiPmSamplingCounterDataImageInitialize)
FAIL_FN(cuptiPmSamplingGetCounterDataInfo)
FAIL_FN(cuptiPmSamplingCounterDataGetSampleInfo)
/* the profiler host API is fake_cupti_ctr.c's */
