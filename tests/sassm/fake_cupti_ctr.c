/*
 * fake_cupti_ctr.c — the range profiler and profiler host API of the
 * stand-in libcupti (with fake_cupti.c), for CPU tests of the hardware
 * counters' collector (tests/counters/test_counters.c). Nothing here
 * measures anything: it answers with the real headers' structures so the
 * collector's control flow runs — checks, the configuration, the counter
 * data, the pass loop of the application replay, the evaluation — and its
 * failures can be forced:
 *
 *   FAKE_CUPTI_PROFILER    cuptiProfilerInitialize's result (default 27,
 *                          CUPTI_ERROR_NOT_SUPPORTED, as fake_cupti.c had)
 *   FAKE_CUPTI_SUPPORTED   "vgpu": the device cannot be profiled (vGPU,
 *                          profiling disabled); default supported
 *   FAKE_CUPTI_RANGE_ENABLE cuptiRangeProfilerEnable's result (35:
 *                          CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
 *   FAKE_CUPTI_PASSES      passes of every configuration (default 10)
 *   FAKE_CUPTI_RANGES      auto ranges a start/stop profiles (default 0:
 *                          the launches are not seen here)
 *
 * The chip is GH100 and its metrics are the collector's default set and
 * lts__t_sectors.sum; a metric's value in range r is (r + 1) * 1000 + its
 * index in the evaluated list. The counter data image holds the ranges:
 * "FAKECD01", their count, the capacity, a 64-byte name each.
 */
#include <cupti_profiler_host.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/collect/ctr_default.h"

static int env_int(const char *k, int dflt) {
  const char *e = getenv(k);
  return e && *e ? atoi(e) : dflt;
}

#define NAME(n) n,
static const char *const known[] = {AG_CTR_DEFAULT_METRICS(NAME) "lts__t_sectors.sum"};
#undef NAME
#define NKNOWN (sizeof known / sizeof known[0])

static int is_known(const char *n) {
  for (size_t i = 0; n && i < NKNOWN; i++)
    if (!strcmp(known[i], n))
      return 1;
  return 0;
}

static size_t base_len(const char *n) { return strcspn(n, "."); }

static int type_of(const char *n) {
  return strstr(n, "hit_rate") ? CUPTI_METRIC_TYPE_RATIO
         : strstr(n, "throughput") ? CUPTI_METRIC_TYPE_THROUGHPUT
                                   : CUPTI_METRIC_TYPE_COUNTER;
}

/* ------------------------------------------------------ the host API */

static const char *bases[3][NKNOWN];
static size_t nbases[3];
static const char *subs[NKNOWN];
static char base_buf[NKNOWN][96];

static const char *const chips[] = {"GH100"};
CUptiResult cuptiProfilerHostGetSupportedChips(CUpti_Profiler_Host_GetSupportedChips_Params *p) {
  p->ppChipNames = chips;
  p->numChips = 1;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiProfilerHostInitialize(CUpti_Profiler_Host_Initialize_Params *p) {
  if (!p->pChipName || strcmp(p->pChipName, "GH100"))
    return CUPTI_ERROR_INVALID_PARAMETER;
  memset(nbases, 0, sizeof nbases);
  for (size_t i = 0; i < NKNOWN; i++) {
    size_t l = base_len(known[i]);
    snprintf(base_buf[i], sizeof base_buf[i], "%.*s", (int)l, known[i]);
    int t = type_of(known[i]), dup = 0;
    for (size_t k = 0; k < nbases[t] && !dup; k++)
      dup = !strcmp(bases[t][k], base_buf[i]);
    if (!dup)
      bases[t][nbases[t]++] = base_buf[i];
  }
  p->pHostObject = (CUpti_Profiler_Host_Object *)(void *)base_buf;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiProfilerHostDeinitialize(CUpti_Profiler_Host_Deinitialize_Params *p) {
  (void)p;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiProfilerHostGetBaseMetrics(CUpti_Profiler_Host_GetBaseMetrics_Params *p) {
  p->ppMetricNames = bases[p->metricType];
  p->numMetrics = nbases[p->metricType];
  return CUPTI_SUCCESS;
}
CUptiResult cuptiProfilerHostGetSubMetrics(CUpti_Profiler_Host_GetSubMetrics_Params *p) {
  size_t l = strlen(p->pMetricName), n = 0;
  for (size_t i = 0; i < NKNOWN; i++)
    if (!strncmp(known[i], p->pMetricName, l) && known[i][l] == '.')
      subs[n++] = known[i] + l;
  p->ppSubMetrics = subs;
  p->numOfSubmetrics = n;
  return n ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_METRIC_NAME;
}
CUptiResult cuptiProfilerHostGetMetricProperties(
    CUpti_Profiler_Host_GetMetricProperties_Params *p) {
  const char *n = p->pMetricName;
  int base = 0; /* a base name alone has properties, as CUPTI's do */
  for (size_t i = 0; i < NKNOWN && !base; i++)
    base = strlen(n) == base_len(known[i]) && !strncmp(n, known[i], strlen(n));
  if (!is_known(n) && !base)
    return CUPTI_ERROR_INVALID_METRIC_NAME;
  p->metricType = (CUpti_MetricType)type_of(n);
  p->pHwUnit = "fake";
  p->pDimUnit = strstr(n, "pct") || strstr(n, "rate") ? "percent"
                : strstr(n, "bytes")                  ? "byte"
                : strstr(n, "duration")               ? "nanosecond"
                                                      : "instruction";
  p->pDescription = "a stand-in metric";
  return CUPTI_SUCCESS;
}
CUptiResult cuptiProfilerHostConfigAddMetrics(CUpti_Profiler_Host_ConfigAddMetrics_Params *p) {
  for (size_t i = 0; i < p->numMetrics; i++)
    if (!is_known(p->ppMetricNames[i]))
      return CUPTI_ERROR_INVALID_PARAMETER;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiProfilerHostGetConfigImageSize(
    CUpti_Profiler_Host_GetConfigImageSize_Params *p) {
  p->configImageSize = 64;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiProfilerHostGetConfigImage(CUpti_Profiler_Host_GetConfigImage_Params *p) {
  memset(p->pConfigImage, 0x5a, p->configImageSize);
  return CUPTI_SUCCESS;
}
CUptiResult cuptiProfilerHostGetNumOfPasses(CUpti_Profiler_Host_GetNumOfPasses_Params *p) {
  p->numOfPasses = (size_t)env_int("FAKE_CUPTI_PASSES", 10);
  return CUPTI_SUCCESS;
}
CUptiResult cuptiProfilerHostEvaluateToGpuValues(
    CUpti_Profiler_Host_EvaluateToGpuValues_Params *p) {
  for (size_t k = 0; k < p->numMetrics; k++)
    p->pMetricValues[k] = (double)(p->rangeIndex + 1) * 1000.0 + (double)k;
  return CUPTI_SUCCESS;
}

/* ---------------------------------------------------- the target side */

typedef struct cd_head {
  char magic[8];
  uint32_t nranges, cap;
} cd_head;
#define NAME_BYTES 64

static struct {
  uint8_t *cd;
  size_t cd_size, pass, passes;
  int user, depth, started;
  char pushed[64][NAME_BYTES];
  int npushed;
} st;

CUptiResult cuptiProfilerInitialize(CUpti_Profiler_Initialize_Params *p) {
  (void)p;
  return (CUptiResult)env_int("FAKE_CUPTI_PROFILER", 27);
}
CUptiResult cuptiProfilerDeInitialize(CUpti_Profiler_DeInitialize_Params *p) {
  (void)p;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiProfilerDeviceSupported(CUpti_Profiler_DeviceSupported_Params *p) {
  const char *e = getenv("FAKE_CUPTI_SUPPORTED");
  int vgpu = e && !strcmp(e, "vgpu");
  p->isSupported = vgpu ? CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED
                        : CUPTI_PROFILER_CONFIGURATION_SUPPORTED;
  p->architecture = p->sli = p->confidentialCompute = p->cmp = p->wsl =
      CUPTI_PROFILER_CONFIGURATION_SUPPORTED;
  p->vGpu = vgpu ? CUPTI_PROFILER_CONFIGURATION_DISABLED : CUPTI_PROFILER_CONFIGURATION_SUPPORTED;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiDeviceGetChipName(CUpti_Device_GetChipName_Params *p) {
  p->pChipName = "GH100";
  return CUPTI_SUCCESS;
}
CUptiResult cuptiProfilerGetCounterAvailability(CUpti_Profiler_GetCounterAvailability_Params *p) {
  if (p->pCounterAvailabilityImage)
    memset(p->pCounterAvailabilityImage, 1, p->counterAvailabilityImageSize);
  p->counterAvailabilityImageSize = 16;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiRangeProfilerEnable(CUpti_RangeProfiler_Enable_Params *p) {
  int r = env_int("FAKE_CUPTI_RANGE_ENABLE", 0);
  memset(&st, 0, sizeof st);
  p->pRangeProfilerObject = r ? NULL : (CUpti_RangeProfiler_Object *)(void *)&st;
  return (CUptiResult)r;
}
CUptiResult cuptiRangeProfilerDisable(CUpti_RangeProfiler_Disable_Params *p) {
  (void)p;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiRangeProfilerGetCounterDataSize(
    CUpti_RangeProfiler_GetCounterDataSize_Params *p) {
  p->counterDataSize = sizeof(cd_head) + p->maxNumOfRanges * NAME_BYTES;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiRangeProfilerCounterDataImageInitialize(
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params *p) {
  cd_head h = {{'F', 'A', 'K', 'E', 'C', 'D', '0', '1'}, 0,
               (uint32_t)((p->counterDataSize - sizeof(cd_head)) / NAME_BYTES)};
  memset(p->pCounterData, 0, p->counterDataSize);
  memcpy(p->pCounterData, &h, sizeof h);
  return CUPTI_SUCCESS;
}
CUptiResult cuptiRangeProfilerSetConfig(CUpti_RangeProfiler_SetConfig_Params *p) {
  if (!p->pConfig || !p->pCounterDataImage || memcmp(p->pCounterDataImage, "FAKECD01", 8))
    return CUPTI_ERROR_INVALID_PARAMETER;
  st.cd = p->pCounterDataImage;
  st.cd_size = p->counterDataImageSize;
  st.user = p->range == CUPTI_UserRange;
  st.pass = p->passIndex;
  st.passes = (size_t)env_int("FAKE_CUPTI_PASSES", 10);
  /* kernel replay only in the auto mode (as CUPTI) */
  if (p->replayMode == CUPTI_KernelReplay && st.user)
    return CUPTI_ERROR_INVALID_PARAMETER;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiRangeProfilerStart(CUpti_RangeProfiler_Start_Params *p) {
  (void)p;
  st.started = 1;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiRangeProfilerPushRange(CUpti_RangeProfiler_PushRange_Params *p) {
  if (!st.user)
    return CUPTI_ERROR_INVALID_OPERATION;
  if (st.depth++ == 0 && st.npushed < 64)
    snprintf(st.pushed[st.npushed++], NAME_BYTES, "%s", p->pRangeName);
  return CUPTI_SUCCESS;
}
CUptiResult cuptiRangeProfilerPopRange(CUpti_RangeProfiler_PopRange_Params *p) {
  (void)p;
  if (!st.user || !st.depth)
    return CUPTI_ERROR_INVALID_OPERATION;
  st.depth--;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiRangeProfilerStop(CUpti_RangeProfiler_Stop_Params *p) {
  if (!st.started)
    return CUPTI_ERROR_INVALID_OPERATION;
  st.started = 0;
  p->isAllPassSubmitted = !st.user || st.pass + 1 >= st.passes;
  p->passIndex = st.user ? st.pass + 1 : 0;
  p->targetNestingLevel = 1;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiRangeProfilerDecodeData(CUpti_RangeProfiler_DecodeData_Params *p) {
  cd_head h;
  memcpy(&h, st.cd, sizeof h);
  int want = st.user ? st.npushed : env_int("FAKE_CUPTI_RANGES", 0);
  p->numOfRangeDropped = want > (int)h.cap ? (size_t)want - h.cap : 0;
  h.nranges = want > (int)h.cap ? h.cap : (uint32_t)want;
  for (uint32_t i = 0; i < h.nranges; i++) {
    char *name = (char *)st.cd + sizeof h + (size_t)i * NAME_BYTES;
    if (st.user)
      snprintf(name, NAME_BYTES, "%s", st.pushed[i]);
    else
      snprintf(name, NAME_BYTES, "%u", i);
  }
  memcpy(st.cd, &h, sizeof h);
  return CUPTI_SUCCESS;
}
CUptiResult cuptiRangeProfilerGetCounterDataInfo(
    CUpti_RangeProfiler_GetCounterDataInfo_Params *p) {
  cd_head h;
  memcpy(&h, p->pCounterDataImage, sizeof h);
  p->numTotalRanges = h.nranges;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiRangeProfilerCounterDataGetRangeInfo(
    CUpti_RangeProfiler_CounterData_GetRangeInfo_Params *p) {
  p->rangeName = (const char *)p->pCounterDataImage + sizeof(cd_head) +
                 p->rangeIndex * NAME_BYTES;
  return CUPTI_SUCCESS;
}
