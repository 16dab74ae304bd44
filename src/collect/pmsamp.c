/*
 * pmsamp.c — the CUPTI PM-sampling collector (pmsamp.h, docs/throughput.md).
 * The GPU's performance monitors are read every `interval` ns of GPU time
 * (CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL: a fixed-frequency
 * source, so windows keep their length when clocks change) into a hardware
 * buffer that keeps the oldest records (a full buffer is reported, never
 * overwritten). The configuration is made by CUPTI's profiler host API from
 * the metric names of argus/pm_metrics.h and must take one pass. While the
 * harness runs, a decode thread empties the buffer every ARGUS_PM_DECODE_MS
 * (default: the time a quarter of an image takes to fill, at most 10 ms)
 * into a counter-data image of CHUNK samples (the buffer cannot hold a
 * whole run: the first H200 run, which decoded only at the end, found it
 * overflowed and nothing decodable); after the run, sampling stops and the
 * rest is decoded. Each completed sample's window (start and end
 * timestamps) and its counts (cuptiProfilerHostEvaluateToGpuValues) are
 * kept, once: an image is decoded into until it is half full with every
 * sample complete, and only its samples not taken yet are taken. An image
 * that fills loses the records CUPTI read past its end (a gap the decoder
 * reports).
 *
 * What is lost is counted: decodes that report an overflow (or fail with
 * CUPTI_ERROR_OUT_OF_MEMORY, the API's word for it), samples populated but
 * never completed, samples whose window is empty, counts CUPTI evaluated
 * as NaN or negative (written as 0), samples this collector could not
 * keep (out of memory).
 *
 * Load: one collection per harness run; memory of 80 bytes per sample
 * (10,000 per second of run at the default 100 us), two counter-data images
 * of CHUNK samples, and the decode thread's CPU: on the H200 machine CUPTI
 * decodes about 8,000 samples per second (docs/throughput.md), so a shorter
 * interval runs until the hardware buffer overflows, which is reported.
 */
#define _GNU_SOURCE
#include "pmsamp.h"

#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "argus/host.h"
#include "argus/pm_metrics.h"
#include "ctr_catalog.h"
#include "cupti_lib.h"

#define AG_PMS_FUNCS(X)                                                        \
  X(cuptiGetResultString)                                                      \
  X(cuptiGetVersion)                                                           \
  X(cuptiProfilerInitialize)                                                   \
  X(cuptiProfilerDeInitialize)                                                 \
  X(cuptiDeviceGetChipName)                                                    \
  X(cuptiPmSamplingGetCounterAvailability)                                     \
  X(cuptiPmSamplingEnable)                                                     \
  X(cuptiPmSamplingDisable)                                                    \
  X(cuptiPmSamplingSetConfig)                                                  \
  X(cuptiPmSamplingStart)                                                      \
  X(cuptiPmSamplingStop)                                                       \
  X(cuptiPmSamplingDecodeData)                                                 \
  X(cuptiPmSamplingGetCounterDataSize)                                         \
  X(cuptiPmSamplingCounterDataImageInitialize)                                 \
  X(cuptiPmSamplingGetCounterDataInfo)                                         \
  X(cuptiPmSamplingCounterDataGetSampleInfo)

#define WHO "PM sampling"
#define CHUNK 1024          /* samples per counter-data image (27 KiB each on the H200) */
#define MAX_DECODES 100000  /* 4 * 10^8 samples: more is a broken loop */
#define INTERVAL_MIN 1000   /* ns */
#define INTERVAL_MAX 1000000000
#define DECODE_MS_DEFAULT 10

#define AG__PM_NAME(e, name, short_name) name,
static const char *metric_names[AG_PM_NMETRICS] = {AG_PM_METRICS(AG__PM_NAME)};
#undef AG__PM_NAME
#define AG__PM_SHORT(e, name, short_name) short_name,
static const char *const short_names[AG_PM_NMETRICS] = {AG_PM_METRICS(AG__PM_SHORT)};
#undef AG__PM_SHORT

typedef struct sample {
  uint64_t t0, t1;
  double v[AG_PM_NMETRICS];
} sample;

struct ag_pms {
  void *lib;
#define AG__FP(fn) __typeof__(&fn) fn;
  AG_PMS_FUNCS(AG__FP)
#undef AG__FP
  uint32_t version;
  int device;
  char chip[64];
  uint64_t interval_ns, hw_bytes;
  int profiler, enabled, started;
  ag_ctr_cat *cat; /* the host API: configuration and evaluation */
  CUpti_PmSampling_Object *obj;
  uint8_t *avail, *config, *data, *blank; /* blank: the image as initialized */
  size_t config_bytes, passes, data_bytes;
  /* what the decodes found */
  uint64_t decodes, full, overflow, incomplete, empty, bad_values;
  size_t taken;     /* samples of the current image already kept */
  size_t populated; /* the current image's populated samples, at the last decode */
  sample *s;
  size_t ns, cap;
  int oom;
  /* the decode thread, while sampling runs */
  pthread_t thr;
  int thr_on;
  int stop; /* read and written with __atomic builtins */
  uint64_t decode_ms, live_decodes;
  uint64_t t_decode, t_eval, t_init; /* ns of the host spent in each (monotonic clock) */
  int thr_rc; /* the thread's failure (it stops decoding; ag_pms_end reports it) */
  char thr_err[512];
};

static uint64_t mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int load(ag_pms *p, char *err, size_t errlen) {
  if (!(p->lib = ag__cupti_lib(WHO, err, errlen)))
    return AG_HOST_ENODEV;
#define AG__LOAD(fn)                                                           \
  *(void **)(&p->fn) = dlsym(p->lib, #fn);                                     \
  if (!p->fn) {                                                                \
    ag__cupti_lacks(WHO, #fn, err, errlen);                                    \
    return AG_HOST_ENODEV;                                                     \
  }
  AG_PMS_FUNCS(AG__LOAD)
#undef AG__LOAD
  p->cuptiGetVersion(&p->version);
  return 0;
}

static int env_u64(const char *k, uint64_t dflt, uint64_t lo, uint64_t hi, const char *what,
                   uint64_t *out, char *err, size_t errlen) {
  const char *v = getenv(k);
  *out = dflt;
  if (!v || !*v)
    return 0;
  char *end = NULL;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  if (errno || !end || *end || *v == '-' || x < lo || x > hi) {
    ag__seterr(err, errlen, "%s='%s' is not a whole number %s in [%llu, %llu]", k, v, what,
               (unsigned long long)lo, (unsigned long long)hi);
    return AG_HOST_EINVAL;
  }
  *out = x;
  return 0;
}

/* The host API's configuration of the metrics for p->chip (with the
 * device's counter availability when p->avail is set): one pass, or
 * refused. */
static int host_config(ag_pms *p, char *err, size_t errlen) {
  uint8_t *img = NULL;
  int rc = ag_ctr_cat_open(p->lib, AG_CTR_PM, p->chip, p->avail, &p->cat, err, errlen);
  if (!rc)
    rc = ag_ctr_cat_config(p->cat, metric_names, AG_PM_NMETRICS, &img, &p->config_bytes,
                           &p->passes, err, errlen);
  p->config = img;
  if (rc)
    return rc;
  if (p->passes != 1) {
    ag__seterr(err, errlen, "the PM sampler collects in one pass, and CUPTI schedules its %d "
                            "metrics in %zu passes on %s",
               AG_PM_NMETRICS, p->passes, p->chip);
    return AG_HOST_EUNSUPPORTED;
  }
  return 0;
}

int ag_pms_host_check(const char *chip, size_t *config_bytes, size_t *passes, char *err,
                      size_t errlen) {
  *config_bytes = *passes = 0;
  ag_pms *p = calloc(1, sizeof *p);
  if (!p) {
    ag__seterr(err, errlen, "out of memory");
    return AG_HOST_ENOMEM;
  }
  snprintf(p->chip, sizeof p->chip, "%s", chip);
  int rc = load(p, err, errlen);
  if (!rc)
    rc = host_config(p, err, errlen);
  *config_bytes = p->config_bytes;
  *passes = p->passes;
  ag_pms_close(p);
  return rc;
}

/* The counter-data image, empty: initialized by CUPTI once (at open), then
 * restored from that copy after each decode that filled it (a copy costs a
 * fifth of CUPTI's initialization). */
static int init_image(ag_pms *p, char *err, size_t errlen) {
  uint64_t t0 = mono_ns();
  if (p->blank) {
    memcpy(p->data, p->blank, p->data_bytes);
  } else {
    CUpti_PmSampling_CounterDataImage_Initialize_Params di = {
        .structSize = CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    di.pPmSamplingObject = p->obj;
    di.counterDataSize = p->data_bytes;
    di.pCounterData = p->data;
    AG__CP(p, cuptiPmSamplingCounterDataImageInitialize(&di));
    if (!(p->blank = malloc(p->data_bytes ? p->data_bytes : 1))) {
      ag__seterr(err, errlen, "out of memory");
      return AG_HOST_ENOMEM;
    }
    memcpy(p->blank, p->data, p->data_bytes);
  }
  p->t_init += mono_ns() - t0;
  return 0;
}

static void *decode_thread(void *arg);

static int open_device(ag_pms *p, char *err, size_t errlen) {
  CUpti_Profiler_Initialize_Params pi = {
      .structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  AG__CP(p, cuptiProfilerInitialize(&pi));
  p->profiler = 1;
  CUpti_Device_GetChipName_Params cn = {.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  cn.deviceIndex = (size_t)p->device;
  AG__CP(p, cuptiDeviceGetChipName(&cn));
  snprintf(p->chip, sizeof p->chip, "%s", cn.pChipName ? cn.pChipName : "?");
  /* the counters this device exposes now (before sampling is enabled) */
  CUpti_PmSampling_GetCounterAvailability_Params ca = {
      .structSize = CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE};
  ca.deviceIndex = (size_t)p->device;
  AG__CP(p, cuptiPmSamplingGetCounterAvailability(&ca));
  if (!(p->avail = calloc(1, ca.counterAvailabilityImageSize + 1))) {
    ag__seterr(err, errlen, "out of memory");
    return AG_HOST_ENOMEM;
  }
  ca.pCounterAvailabilityImage = p->avail;
  AG__CP(p, cuptiPmSamplingGetCounterAvailability(&ca));
  int rc = host_config(p, err, errlen);
  if (rc)
    return rc;
  CUpti_PmSampling_Enable_Params en = {.structSize = CUpti_PmSampling_Enable_Params_STRUCT_SIZE};
  en.deviceIndex = (size_t)p->device;
  AG__CP(p, cuptiPmSamplingEnable(&en));
  p->obj = en.pPmSamplingObject;
  p->enabled = 1;
  CUpti_PmSampling_SetConfig_Params sc = {
      .structSize = CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE};
  sc.pPmSamplingObject = p->obj;
  sc.configSize = p->config_bytes;
  sc.pConfig = p->config;
  sc.hardwareBufferSize = (size_t)p->hw_bytes;
  sc.samplingInterval = p->interval_ns;
  sc.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
  sc.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
  AG__CP(p, cuptiPmSamplingSetConfig(&sc));
  CUpti_PmSampling_GetCounterDataSize_Params ds = {
      .structSize = CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE};
  ds.pPmSamplingObject = p->obj;
  ds.pMetricNames = metric_names;
  ds.numMetrics = AG_PM_NMETRICS;
  ds.maxSamples = CHUNK;
  AG__CP(p, cuptiPmSamplingGetCounterDataSize(&ds));
  p->data_bytes = ds.counterDataSize;
  if (!(p->data = malloc(p->data_bytes ? p->data_bytes : 1))) {
    ag__seterr(err, errlen, "out of memory");
    return AG_HOST_ENOMEM;
  }
  if ((rc = init_image(p, err, errlen)))
    return rc;
  CUpti_PmSampling_Start_Params st = {.structSize = CUpti_PmSampling_Start_Params_STRUCT_SIZE};
  st.pPmSamplingObject = p->obj;
  AG__CP(p, cuptiPmSamplingStart(&st));
  p->started = 1;
  if (pthread_create(&p->thr, NULL, decode_thread, p)) {
    ag__seterr(err, errlen, "PM sampling: cannot start the decode thread");
    return AG_HOST_ENOMEM;
  }
  p->thr_on = 1;
  return 0;
}

int ag_pms_open(int device, ag_pms **out, char *err, size_t errlen) {
  *out = NULL;
  uint64_t interval, mb, dms;
  int rc;
  if ((rc = env_u64("ARGUS_PM_INTERVAL", AG_PMS_DEFAULT_INTERVAL_NS, INTERVAL_MIN, INTERVAL_MAX,
                    "of ns", &interval, err, errlen)) ||
      (rc = env_u64("ARGUS_PM_DECODE_MS", DECODE_MS_DEFAULT, 1, 10000, "of ms", &dms, err,
                    errlen)) ||
      (rc = env_u64("ARGUS_PM_BUFFER_MB", AG_PMS_DEFAULT_BUFFER_MB, 1, 16384, "of MiB", &mb, err,
                    errlen)))
    return rc;
  ag_pms *p = calloc(1, sizeof *p);
  if (!p) {
    ag__seterr(err, errlen, "out of memory");
    return AG_HOST_ENOMEM;
  }
  p->device = device;
  p->interval_ns = interval;
  p->decode_ms = dms;
  if (!getenv("ARGUS_PM_DECODE_MS")) { /* a quarter of an image per decode, at most */
    uint64_t q = interval * (CHUNK / 4) / 1000000;
    p->decode_ms = q < 1 ? 1 : q < dms ? q : dms;
  }
  p->hw_bytes = mb << 20;
  if (!(rc = load(p, err, errlen)) && !(rc = open_device(p, err, errlen)))
    *out = p;
  else
    ag_pms_close(p);
  return rc;
}

static int push(ag_pms *p, const sample *s) {
  if (p->ns == p->cap) {
    size_t c = p->cap ? 2 * p->cap : 4096;
    sample *n = realloc(p->s, c * sizeof *n);
    if (!n)
      return p->oom = 1, -1;
    p->s = n;
    p->cap = c;
  }
  p->s[p->ns++] = *s;
  return 0;
}

/* Keeps the completed samples of the counter-data image not kept yet
 * (p->taken on); at the last decode, counts those never completed. */
static int take(ag_pms *p, int last, char *err, size_t errlen) {
  CUpti_PmSampling_GetCounterDataInfo_Params ci = {
      .structSize = CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE};
  ci.pCounterDataImage = p->data;
  ci.counterDataImageSize = p->data_bytes;
  AG__CP(p, cuptiPmSamplingGetCounterDataInfo(&ci));
  uint64_t t0 = mono_ns();
  for (size_t i = p->taken; i < ci.numCompletedSamples; i++) {
    CUpti_PmSampling_CounterData_GetSampleInfo_Params si = {
        .structSize = CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE};
    si.pPmSamplingObject = p->obj;
    si.pCounterDataImage = p->data;
    si.counterDataImageSize = p->data_bytes;
    si.sampleIndex = i;
    AG__CP(p, cuptiPmSamplingCounterDataGetSampleInfo(&si));
    p->taken = i + 1;
    sample s;
    memset(&s, 0, sizeof s);
    s.t0 = si.startTimestamp;
    s.t1 = si.endTimestamp;
    if (!s.t0 || s.t1 <= s.t0) {
      p->empty++;
      continue;
    }
    int rc = ag_ctr_cat_eval(p->cat, p->data, p->data_bytes, i, metric_names, AG_PM_NMETRICS,
                             s.v, err, errlen);
    if (rc)
      return rc;
    for (int m = 0; m < AG_PM_NMETRICS; m++)
      if (!(s.v[m] >= 0)) { /* NaN or negative: counted, written as 0 */
        s.v[m] = 0;
        p->bad_values++;
      }
    if (push(p, &s)) {
      ag__seterr(err, errlen, "out of memory keeping PM samples");
      return AG_HOST_ENOMEM;
    }
  }
  p->t_eval += mono_ns() - t0;
  p->populated = ci.numPopulatedSamples;
  if (last && ci.numPopulatedSamples > ci.numCompletedSamples)
    p->incomplete += ci.numPopulatedSamples - ci.numCompletedSamples;
  return 0;
}

/* Decodes what the hardware buffer holds into the image, image after image,
 * until CUPTI has no more records or reports an overflow (the records after
 * it are gone: the session cannot be resumed). Sampling has stopped when
 * `last`; while it runs (the decode thread) one call decodes at most one
 * image, so the thread sees its stop request between images even when the
 * sampler produces as fast as CUPTI decodes. *more: an image filled (decode
 * again at once). */
static int drain(ag_pms *p, int last, int *more, char *err, size_t errlen) {
  int rc;
  *more = 0;
  for (;;) {
    if (p->decodes >= MAX_DECODES) {
      ag__seterr(err, errlen, "PM sampling: the hardware buffer still had records after %d "
                              "decodes of %d samples",
                 MAX_DECODES, CHUNK);
      return AG_HOST_ECUPTI;
    }
    CUpti_PmSampling_DecodeData_Params dd = {
        .structSize = CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE};
    dd.pPmSamplingObject = p->obj;
    dd.pCounterDataImage = p->data;
    dd.counterDataImageSize = p->data_bytes;
    uint64_t t0 = mono_ns();
    CUptiResult r = p->cuptiPmSamplingDecodeData(&dd);
    p->t_decode += mono_ns() - t0;
    p->decodes++;
    int overflow = dd.overflow || r == CUPTI_ERROR_OUT_OF_MEMORY;
    p->overflow += (uint64_t)overflow;
    if (r != CUPTI_SUCCESS && r != CUPTI_ERROR_OUT_OF_MEMORY)
      return AG__CUPTI_FAIL(p, r, "cuptiPmSamplingDecodeData", err, errlen);
    int full = r == CUPTI_SUCCESS &&
               dd.decodeStopReason == CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL;
    if ((rc = take(p, last && !full, err, errlen)))
      return rc;
    if (overflow)
      return 0;
    if (!full) { /* the end of the records (or CUPTI's other reason) */
      /* A full image loses the records CUPTI read past its end (the H200 run
       * found a window missing at every full image): an image half full whose
       * samples are all complete is emptied now, so the next decodes start
       * with room. */
      if (!last && p->taken >= CHUNK / 2 && p->populated == p->taken) {
        p->taken = 0;
        return init_image(p, err, errlen);
      }
      return 0;
    }
    p->full++;
    p->taken = 0;
    if ((rc = init_image(p, err, errlen)))
      return rc;
    if (!last) {
      *more = 1;
      return 0;
    }
  }
}

static void *decode_thread(void *arg) {
  ag_pms *p = arg;
  struct timespec ts = {(time_t)(p->decode_ms / 1000), (long)(p->decode_ms % 1000) * 1000000L};
  int more = 0;
  while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
    if (!more)
      nanosleep(&ts, NULL);
    uint64_t over = p->overflow;
    int rc = drain(p, 0, &more, p->thr_err, sizeof p->thr_err);
    p->live_decodes++;
    if (rc || p->overflow > over) { /* nothing more can be decoded: stop here */
      p->thr_rc = rc;
      break;
    }
  }
  return NULL;
}

int ag_pms_end(ag_pms *p, char *err, size_t errlen) {
  if (p->thr_on) {
    __atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
    pthread_join(p->thr, NULL);
    p->thr_on = 0;
    if (p->thr_rc) {
      snprintf(err, errlen, "%s", p->thr_err);
      return p->thr_rc;
    }
  }
  if (p->started) {
    CUpti_PmSampling_Stop_Params st = {.structSize = CUpti_PmSampling_Stop_Params_STRUCT_SIZE};
    st.pPmSamplingObject = p->obj;
    p->started = 0;
    AG__CP(p, cuptiPmSamplingStop(&st));
  }
  if (p->overflow) /* the session ended at the overflow: what it kept is kept */
    return take(p, 1, err, errlen);
  int more;
  return drain(p, 1, &more, err, errlen);
}

size_t ag_pms_samples(const ag_pms *p) { return p ? p->ns : 0; }

void ag_pms_json(const ag_pms *p, ag_jb *j) {
  ag_jb_printf(j, "\"cupti_version\":%u,\"chip\":", p->version);
  ag_jb_str(j, p->chip);
  ag_jb_printf(j, ",\"trigger\":\"time\",\"interval_ns\":%llu,\"hw_buffer_bytes\":%llu,"
                  "\"append\":\"keep_oldest\",\"samples_per_decode\":%d,"
                  "\"counter_data_bytes\":%zu,\"config_bytes\":%zu,\"passes\":%zu,\"metrics\":[",
               (unsigned long long)p->interval_ns, (unsigned long long)p->hw_bytes, CHUNK,
               p->data_bytes, p->config_bytes, p->passes);
  for (int m = 0; m < AG_PM_NMETRICS; m++)
    ag_jb_printf(j, "%s\"%s\"", m ? "," : "", metric_names[m]);
  ag_jb_printf(j, "],\"decode_ms\":%llu,\"live_decodes\":%llu,\"host_s\":{\"decode\":%.6f,"
                  "\"evaluate\":%.6f,\"init\":%.6f}",
               (unsigned long long)p->decode_ms, (unsigned long long)p->live_decodes,
               (double)p->t_decode * 1e-9, (double)p->t_eval * 1e-9, (double)p->t_init * 1e-9);
  ag_jb_printf(j, ",\"decodes\":%llu,\"counter_data_full\":%llu,\"overflow\":%llu,"
                  "\"incomplete_samples\":%llu,\"empty_samples\":%llu,\"bad_values\":%llu,"
                  "\"lost_samples\":%d,"
                  "\"samples_total\":%zu,\"columns\":[\"start\",\"end\"",
               (unsigned long long)p->decodes, (unsigned long long)p->full,
               (unsigned long long)p->overflow, (unsigned long long)p->incomplete,
               (unsigned long long)p->empty, (unsigned long long)p->bad_values, p->oom, p->ns);
  for (int m = 0; m < AG_PM_NMETRICS; m++)
    ag_jb_printf(j, ",\"%s\"", short_names[m]);
  ag_jb_puts(j, "],\"samples\":[");
  for (size_t i = 0; i < p->ns; i++) {
    const sample *s = &p->s[i];
    ag_jb_printf(j, "%s[%llu,%llu", i ? ",\n" : "\n", (unsigned long long)s->t0,
                 (unsigned long long)s->t1);
    for (int m = 0; m < AG_PM_NMETRICS; m++)
      ag_jb_printf(j, ",%.10g", s->v[m]);
    ag_jb_puts(j, "]");
  }
  ag_jb_puts(j, "]");
}

void ag_pms_close(ag_pms *p) {
  if (!p)
    return;
  if (p->thr_on) {
    __atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
    pthread_join(p->thr, NULL);
  }
  if (p->started) {
    CUpti_PmSampling_Stop_Params st = {.structSize = CUpti_PmSampling_Stop_Params_STRUCT_SIZE};
    st.pPmSamplingObject = p->obj;
    p->cuptiPmSamplingStop(&st);
  }
  if (p->enabled) {
    CUpti_PmSampling_Disable_Params d = {.structSize = CUpti_PmSampling_Disable_Params_STRUCT_SIZE};
    d.pPmSamplingObject = p->obj;
    p->cuptiPmSamplingDisable(&d);
  }
  ag_ctr_cat_close(p->cat);
  if (p->profiler) {
    CUpti_Profiler_DeInitialize_Params pd = {
        .structSize = CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE};
    p->cuptiProfilerDeInitialize(&pd);
  }
  free(p->avail);
  free(p->config);
  free(p->data);
  free(p->blank);
  free(p->s);
  free(p);
}
