/*
 * counters.c — the CUPTI range-profiler collector (counters.h,
 * docs/counters.md). The metric names are checked and the configuration
 * image is built on the host side (ctr_catalog.c, CUPTI's profiler host API
 * with the device's chip name and counter availability); the target side
 * (cupti_range_profiler.h) enables the profiler on the context, collects
 * the ranges into a counter-data image this file owns, and decodes them;
 * the host side evaluates every metric of every range from that image.
 *
 * Written against the CUDA 13.0 headers and not yet run on a GPU: the CPU
 * tests drive it against a stand-in CUPTI (tests/sassm/fake_cupti.c) and
 * the host runtime against a stand-in driver (tests/probes/fake_cuda.c).
 *
 * Load: one collection per harness run; the evaluation is O(ranges x
 * metrics) host calls after the kernels ran.
 */
#define _GNU_SOURCE
#include "counters.h"

#include <cupti.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "argus/host.h"
#include "ctr_catalog.h"
#include "cupti_lib.h"

#define AG_CTR_FUNCS(X)                                                        \
  X(cuptiGetResultString)                                                      \
  X(cuptiGetVersion)                                                           \
  X(cuptiSubscribe)                                                            \
  X(cuptiUnsubscribe)                                                          \
  X(cuptiProfilerInitialize)                                                   \
  X(cuptiProfilerDeInitialize)                                                 \
  X(cuptiProfilerDeviceSupported)                                              \
  X(cuptiDeviceGetChipName)                                                    \
  X(cuptiProfilerGetCounterAvailability)                                       \
  X(cuptiRangeProfilerEnable)                                                  \
  X(cuptiRangeProfilerDisable)                                                 \
  X(cuptiRangeProfilerSetConfig)                                               \
  X(cuptiRangeProfilerStart)                                                   \
  X(cuptiRangeProfilerStop)                                                    \
  X(cuptiRangeProfilerPushRange)                                               \
  X(cuptiRangeProfilerPopRange)                                                \
  X(cuptiRangeProfilerDecodeData)                                              \
  X(cuptiRangeProfilerGetCounterDataSize)                                      \
  X(cuptiRangeProfilerCounterDataImageInitialize)                              \
  X(cuptiRangeProfilerGetCounterDataInfo)                                      \
  X(cuptiRangeProfilerCounterDataGetRangeInfo)

#define WHO "hardware counters"
#define MAX_METRICS 128
#define MAX_DEPTH 16
#define DEFAULT_MAX_RANGES 256

typedef struct ctr_launch {
  char *kernel;
  unsigned grid[3], block[3];
  long launch;
  char *user_range; /* the user ranges open at the launch, "a/b", or NULL */
} ctr_launch;

typedef struct ctr_range {
  char *name;       /* CUPTI's: the launch's order ("0", "1", ...) or the user range */
  double *values;   /* one per metric */
} ctr_range;

struct ag_ctr {
  void *lib;
#define AG__FP(fn) __typeof__(&fn) fn;
  AG_CTR_FUNCS(AG__FP)
#undef AG__FP
  CUcontext ctx;
  int device;
  uint32_t version;
  CUpti_SubscriberHandle sub;
  int subscribed, prof_init, started;
  CUpti_RangeProfiler_Object *obj;
  char chip[64];
  uint8_t *avail;
  size_t avail_size;
  ag_ctr_cat *cat;
  const char *names[MAX_METRICS];
  char *owned[MAX_METRICS]; /* the names from ARGUS_COUNTERS_METRICS */
  ag_ctr_props props[MAX_METRICS];
  size_t nmetrics;
  uint8_t *config;
  size_t config_size, passes;
  uint8_t *cd; /* the counter-data image */
  size_t cd_size, max_ranges;
  int user;    /* ARGUS_COUNTERS_RANGE=user: application replay */
  size_t pass_index, target_level; /* the pass this run collects */
  int all_submitted;
  char replay_path[4200], next_path[4200];
  ctr_launch *launches;
  size_t nlaunch, launch_cap, launches_lost;
  char *stack[MAX_DEPTH];
  int depth, pushed; /* open user ranges; ranges pushed in all */
  ctr_range *ranges;
  size_t nranges, dropped;
};

static int load(ag_ctr *c, char *err, size_t errlen) {
  if (!(c->lib = ag__cupti_lib(WHO, err, errlen)))
    return AG_HOST_ENODEV;
#define AG__LOAD(fn)                                                           \
  *(void **)(&c->fn) = dlsym(c->lib, #fn);                                     \
  if (!c->fn) {                                                                \
    ag__cupti_lacks(WHO, #fn, err, errlen);                                    \
    return AG_HOST_ENODEV;                                                     \
  }
  AG_CTR_FUNCS(AG__LOAD)
#undef AG__LOAD
  return 0;
}

/* The settings from the environment: the ranges' mode, their number, the
 * metrics (the default set, then ARGUS_COUNTERS_METRICS, each once). */
static int settings(ag_ctr *c, char *err, size_t errlen) {
  const char *m = getenv("ARGUS_COUNTERS_RANGE");
  if (m && *m && strcmp(m, "auto") && strcmp(m, "user")) {
    ag__seterr(err, errlen, "ARGUS_COUNTERS_RANGE='%s' is neither 'auto' (a range per kernel "
                            "launch) nor 'user' (the harness's ag_host_range_push/pop)", m);
    return AG_HOST_EINVAL;
  }
  c->user = m && !strcmp(m, "user");
  c->max_ranges = DEFAULT_MAX_RANGES;
  const char *r = getenv("ARGUS_COUNTERS_MAX_RANGES");
  if (r && *r) {
    char *end = NULL;
    long v = strtol(r, &end, 10);
    if (!end || *end || v < 1 || v > 65536) {
      ag__seterr(err, errlen, "ARGUS_COUNTERS_MAX_RANGES='%s' is not a whole number in "
                              "[1, 65536]", r);
      return AG_HOST_EINVAL;
    }
    c->max_ranges = (size_t)v;
  }
  for (size_t i = 0; ag_ctr_default[i]; i++)
    c->names[c->nmetrics++] = ag_ctr_default[i];
  const char *x = getenv("ARGUS_COUNTERS_METRICS");
  for (const char *p = x; p && *p;) {
    size_t n = strcspn(p, ",");
    while (n && (*p == ' ')) /* "a, b" */
      p++, n--;
    if (n) {
      char *name = strndup(p, n);
      if (!name)
        return AG_HOST_ENOMEM;
      int dup = 0;
      for (size_t i = 0; i < c->nmetrics && !dup; i++)
        dup = !strcmp(c->names[i], name);
      if (dup) {
        free(name);
      } else if (c->nmetrics == MAX_METRICS) {
        free(name);
        ag__seterr(err, errlen, "ARGUS_COUNTERS_METRICS: more than %d metrics in all",
                   MAX_METRICS);
        return AG_HOST_EINVAL;
      } else {
        c->owned[c->nmetrics] = name;
        c->names[c->nmetrics++] = name;
      }
    }
    p += n;
    p += *p == ',';
  }
  return 0;
}

/* Profiling support on this device: the reasons CUPTI gives. */
static int supported(ag_ctr *c, char *err, size_t errlen) {
  AG_CUPTI_PARAMS(CUpti_Profiler_DeviceSupported_Params, sp);
  sp.cuDevice = (CUdevice)c->device;
  sp.api = CUPTI_PROFILER_RANGE_PROFILING;
  AG__CP(c, cuptiProfilerDeviceSupported(&sp));
  if (sp.isSupported == CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
    return 0;
  const struct {
    CUpti_Profiler_Support_Level l;
    const char *what;
  } why[] = {{sp.architecture, "its architecture (compute capability 7.5 or newer is needed)"},
             {sp.sli, "SLI"},
             {sp.vGpu, "this vGPU configuration"},
             {sp.confidentialCompute, "confidential compute"},
             {sp.cmp, "a crypto-mining processor"},
             {sp.wsl, "WSL"}};
  char list[400] = "";
  size_t used = 0;
  for (size_t i = 0; i < sizeof why / sizeof why[0]; i++)
    if (why[i].l == CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED ||
        why[i].l == CUPTI_PROFILER_CONFIGURATION_DISABLED)
      used += (size_t)snprintf(list + used, used < sizeof list ? sizeof list - used : 0, "%s%s%s",
                               used ? "; " : "", why[i].what,
                               why[i].l == CUPTI_PROFILER_CONFIGURATION_DISABLED
                                   ? " (profiling disabled)" : "");
  ag__seterr(err, errlen, "device %d cannot be profiled with CUPTI's range profiler: %s",
             c->device, used ? list : "CUPTI gives no reason");
  return AG_HOST_EUNSUPPORTED;
}

/* The chip, and the counter availability image of the context. */
static int chip_and_availability(ag_ctr *c, char *err, size_t errlen) {
  AG_CUPTI_PARAMS(CUpti_Device_GetChipName_Params, cn);
  cn.deviceIndex = (size_t)c->device;
  AG__CP(c, cuptiDeviceGetChipName(&cn));
  snprintf(c->chip, sizeof c->chip, "%s", cn.pChipName ? cn.pChipName : "?");
  AG_CUPTI_PARAMS(CUpti_Profiler_GetCounterAvailability_Params, ap);
  ap.ctx = c->ctx;
  AG__CP(c, cuptiProfilerGetCounterAvailability(&ap));
  if (!(c->avail = calloc(1, ap.counterAvailabilityImageSize + 1)))
    return AG_HOST_ENOMEM;
  c->avail_size = ap.counterAvailabilityImageSize;
  ap.pCounterAvailabilityImage = c->avail;
  AG__CP(c, cuptiProfilerGetCounterAvailability(&ap));
  return 0;
}

/* ---------------------------------------------- the application replay */

/* <out>/counters.replay: "AGCTR01\n", the metric list's length and text
 * (the next run must collect the same set), pass index, target nesting
 * level, the counter-data image's size and bytes. */
static const char replay_magic[8] = {'A', 'G', 'C', 'T', 'R', '0', '1', '\n'};

static size_t metric_text(const ag_ctr *c, char *buf, size_t n) {
  size_t used = 0;
  for (size_t i = 0; i < c->nmetrics; i++)
    used += (size_t)snprintf(buf + (used < n ? used : n), used < n ? n - used : 0, "%s%s",
                             i ? "," : "", c->names[i]);
  return used;
}

static int save_replay(ag_ctr *c, char *err, size_t errlen) {
  char text[8192];
  uint64_t tl = metric_text(c, text, sizeof text);
  uint64_t hdr[3] = {c->pass_index, c->target_level, c->cd_size};
  char tmp[4300];
  snprintf(tmp, sizeof tmp, "%s.tmp", c->replay_path);
  FILE *f = fopen(tmp, "wb");
  int bad = !f || tl >= sizeof text || fwrite(replay_magic, 1, 8, f) != 8 ||
            fwrite(&tl, sizeof tl, 1, f) != 1 || fwrite(text, 1, tl, f) != tl ||
            fwrite(hdr, sizeof hdr, 1, f) != 1 || fwrite(c->cd, 1, c->cd_size, f) != c->cd_size;
  if (f && fclose(f))
    bad = 1;
  if (bad || rename(tmp, c->replay_path)) {
    unlink(tmp);
    ag__seterr(err, errlen, "cannot save the counter data for the next pass to '%s': %s",
               c->replay_path, strerror(errno));
    return AG_HOST_EIO;
  }
  return 0;
}

/* The state an earlier run of this collection left: 0 and nothing done
 * when there is none (the first pass). */
static int load_replay(ag_ctr *c, char *err, size_t errlen) {
  FILE *f = fopen(c->replay_path, "rb");
  if (!f)
    return 0;
  char magic[8], text[8192], want[8192];
  uint64_t tl = 0, hdr[3] = {0, 0, 0};
  size_t wl = metric_text(c, want, sizeof want);
  int bad = fread(magic, 1, 8, f) != 8 || memcmp(magic, replay_magic, 8) ||
            fread(&tl, sizeof tl, 1, f) != 1 || tl >= sizeof text ||
            fread(text, 1, tl, f) != tl || fread(hdr, sizeof hdr, 1, f) != 1 ||
            hdr[2] != c->cd_size;
  if (!bad && (tl != wl || memcmp(text, want, wl))) {
    fclose(f);
    ag__seterr(err, errlen, "'%s' holds the passes of another metric set: remove it to start "
                            "the collection again", c->replay_path);
    return AG_HOST_EINVAL;
  }
  bad = bad || fread(c->cd, 1, c->cd_size, f) != c->cd_size;
  fclose(f);
  if (bad) {
    ag__seterr(err, errlen, "'%s' is not the counter data of an earlier pass (truncated or of "
                            "another version)", c->replay_path);
    return AG_HOST_EINVAL;
  }
  c->pass_index = hdr[0];
  c->target_level = hdr[1];
  return 0;
}

/* ----------------------------------------------------------- lifecycle */

static int counter_data(ag_ctr *c, char *err, size_t errlen) {
  AG_CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataSize_Params, gs);
  gs.pRangeProfilerObject = c->obj;
  gs.pMetricNames = c->names;
  gs.numMetrics = c->nmetrics;
  gs.maxNumOfRanges = c->max_ranges;
  gs.maxNumRangeTreeNodes = (uint32_t)c->max_ranges;
  AG__CP(c, cuptiRangeProfilerGetCounterDataSize(&gs));
  if (!(c->cd = calloc(1, gs.counterDataSize ? gs.counterDataSize : 1))) {
    ag__seterr(err, errlen, "out of memory for the counter data (%zu bytes)", gs.counterDataSize);
    return AG_HOST_ENOMEM;
  }
  c->cd_size = gs.counterDataSize;
  AG_CUPTI_PARAMS(CUpti_RangeProfiler_CounterDataImage_Initialize_Params, ci);
  ci.pRangeProfilerObject = c->obj;
  ci.counterDataSize = c->cd_size;
  ci.pCounterData = c->cd;
  AG__CP(c, cuptiRangeProfilerCounterDataImageInitialize(&ci));
  return 0;
}

static int set_config(ag_ctr *c, char *err, size_t errlen) {
  AG_CUPTI_PARAMS(CUpti_RangeProfiler_SetConfig_Params, sc);
  sc.pRangeProfilerObject = c->obj;
  sc.configSize = c->config_size;
  sc.pConfig = c->config;
  sc.counterDataImageSize = c->cd_size;
  sc.pCounterDataImage = c->cd;
  sc.range = c->user ? CUPTI_UserRange : CUPTI_AutoRange;
  sc.replayMode = c->user ? CUPTI_ApplicationReplay : CUPTI_KernelReplay;
  sc.maxRangesPerPass = c->max_ranges;
  sc.numNestingLevels = 1; /* auto ranges: 1; user ranges: the outermost level */
  sc.minNestingLevel = 1;
  sc.passIndex = c->pass_index;
  sc.targetNestingLevel = (uint16_t)c->target_level;
  AG__CP(c, cuptiRangeProfilerSetConfig(&sc));
  return 0;
}

int ag_ctr_open(void *ctx, int device, const char *out_dir, ag_ctr **out, char *err,
                size_t errlen) {
  *out = NULL;
  ag_ctr *c = calloc(1, sizeof *c);
  if (!c) {
    ag__seterr(err, errlen, "out of memory");
    return AG_HOST_ENOMEM;
  }
  c->ctx = (CUcontext)ctx;
  c->device = device;
  c->target_level = 1; /* the first pass: minNestingLevel */
  snprintf(c->replay_path, sizeof c->replay_path, "%s/%s", out_dir ? out_dir : ".",
           AG_CTR_REPLAY_FILE);
  snprintf(c->next_path, sizeof c->next_path, "%s/%s", out_dir ? out_dir : ".",
           AG_CTR_NEXT_FILE);
  int rc;
  void *h = NULL;
  if ((rc = settings(c, err, errlen)) || (rc = load(c, err, errlen)))
    goto out;
  rc = ag__cupti_subscribe((void *)c->cuptiSubscribe, &h, WHO, err, errlen);
  c->sub = h;
  if (rc)
    goto out;
  c->subscribed = 1;
  c->cuptiGetVersion(&c->version);
  AG_CUPTI_PARAMS(CUpti_Profiler_Initialize_Params, pi);
  CUptiResult r = c->cuptiProfilerInitialize(&pi);
  if (r != CUPTI_SUCCESS) {
    rc = AG__CUPTI_FAIL(c, r, "cuptiProfilerInitialize", err, errlen);
    goto out;
  }
  c->prof_init = 1;
  if ((rc = supported(c, err, errlen)) || (rc = chip_and_availability(c, err, errlen)) ||
      (rc = ag_ctr_cat_open(c->lib, AG_CTR_RANGE, c->chip, c->avail, &c->cat, err, errlen)))
    goto out;
  for (size_t i = 0; i < c->nmetrics; i++)
    if ((rc = ag_ctr_cat_lookup(c->cat, c->names[i], &c->props[i], err, errlen)))
      goto out;
  if ((rc = ag_ctr_cat_config(c->cat, c->names, c->nmetrics, &c->config, &c->config_size,
                              &c->passes, err, errlen)))
    goto out;
  AG_CUPTI_PARAMS(CUpti_RangeProfiler_Enable_Params, en);
  en.ctx = c->ctx;
  if ((r = c->cuptiRangeProfilerEnable(&en)) != CUPTI_SUCCESS) {
    rc = AG__CUPTI_FAIL(c, r, "cuptiRangeProfilerEnable", err, errlen);
    goto out;
  }
  c->obj = en.pRangeProfilerObject;
  if ((rc = counter_data(c, err, errlen)) || (c->user && (rc = load_replay(c, err, errlen))) ||
      (rc = set_config(c, err, errlen)))
    goto out;
  *out = c;
out:
  if (rc == AG_HOST_ENOMEM && err && !err[0])
    ag__seterr(err, errlen, "out of memory");
  if (rc)
    ag_ctr_close(c);
  return rc;
}

int ag_ctr_begin(ag_ctr *c, char *err, size_t errlen) {
  if (c->started)
    return 0;
  AG_CUPTI_PARAMS(CUpti_RangeProfiler_Start_Params, sp);
  sp.pRangeProfilerObject = c->obj;
  AG__CP(c, cuptiRangeProfilerStart(&sp));
  c->started = 1;
  return 0;
}

/* "a/b": the open user ranges; NULL when none (owned). */
static char *stack_path(const ag_ctr *c) {
  if (!c->depth)
    return NULL;
  size_t n = 0;
  for (int i = 0; i < c->depth; i++)
    n += strlen(c->stack[i]) + 1;
  char *p = malloc(n), *w = p;
  for (int i = 0; p && i < c->depth; i++) {
    size_t l = strlen(c->stack[i]);
    memcpy(w, c->stack[i], l);
    w += l;
    *w++ = i + 1 < c->depth ? '/' : 0;
  }
  return p;
}

int ag_ctr_launch(ag_ctr *c, const char *kernel, const unsigned grid[3], const unsigned block[3],
                  long launch) {
  if (!c->started) /* before the variant's load: CUPTI profiles nothing yet */
    return 0;
  if (c->nlaunch == c->launch_cap) {
    size_t cap = c->launch_cap ? 2 * c->launch_cap : 64;
    ctr_launch *l = cap <= (size_t)1 << 20 ? realloc(c->launches, cap * sizeof *l) : NULL;
    if (!l) {
      c->launches_lost++; /* reported: the ranges are then not matched to launches */
      return AG_HOST_ENOMEM;
    }
    c->launches = l;
    c->launch_cap = cap;
  }
  ctr_launch *l = &c->launches[c->nlaunch++];
  memset(l, 0, sizeof *l);
  l->kernel = strdup(kernel ? kernel : "?");
  memcpy(l->grid, grid, sizeof l->grid);
  memcpy(l->block, block, sizeof l->block);
  l->launch = launch;
  l->user_range = stack_path(c);
  return 0;
}

int ag_ctr_push(ag_ctr *c, const char *name, char *err, size_t errlen) {
  if (!name || !*name) {
    ag__seterr(err, errlen, "ag_host_range_push: a range needs a name");
    return AG_HOST_EINVAL;
  }
  if (c->depth == MAX_DEPTH) {
    ag__seterr(err, errlen, "ag_host_range_push('%s'): more than %d ranges open", name,
               MAX_DEPTH);
    return AG_HOST_EINVAL;
  }
  if (strchr(name, '/')) {
    ag__seterr(err, errlen, "ag_host_range_push('%s'): '/' separates nested ranges; a name "
                            "cannot hold one", name);
    return AG_HOST_EINVAL;
  }
  if (c->user && !c->started) {
    ag__seterr(err, errlen, "ag_host_range_push('%s') before the module's load: the profiler "
                            "starts when the harness loads the module Argus replaces "
                            "(ARGUS_COUNTERS_RANGE=user measures ranges opened after it)", name);
    return AG_HOST_EINVAL;
  }
  if (!(c->stack[c->depth] = strdup(name)))
    return AG_HOST_ENOMEM;
  if (c->user) {
    AG_CUPTI_PARAMS(CUpti_RangeProfiler_PushRange_Params, pp);
    pp.pRangeProfilerObject = c->obj;
    pp.pRangeName = name;
    CUptiResult r = c->cuptiRangeProfilerPushRange(&pp);
    if (r != CUPTI_SUCCESS) {
      free(c->stack[c->depth]);
      return AG__CUPTI_FAIL(c, r, "cuptiRangeProfilerPushRange", err, errlen);
    }
  }
  c->depth++;
  c->pushed++;
  return 0;
}

int ag_ctr_pop(ag_ctr *c, char *err, size_t errlen) {
  if (!c->depth) {
    ag__seterr(err, errlen, "ag_host_range_pop without an open range (ag_host_range_push)");
    return AG_HOST_EINVAL;
  }
  if (c->user) {
    AG_CUPTI_PARAMS(CUpti_RangeProfiler_PopRange_Params, pp);
    pp.pRangeProfilerObject = c->obj;
    AG__CP(c, cuptiRangeProfilerPopRange(&pp));
  }
  free(c->stack[--c->depth]);
  return 0;
}

/* Every metric of every range in the decoded counter data. */
static int evaluate(ag_ctr *c, char *err, size_t errlen) {
  AG_CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataInfo_Params, gi);
  gi.pCounterDataImage = c->cd;
  gi.counterDataImageSize = c->cd_size;
  AG__CP(c, cuptiRangeProfilerGetCounterDataInfo(&gi));
  if (gi.numTotalRanges > c->max_ranges) {
    ag__seterr(err, errlen, "CUPTI reports %zu ranges in counter data sized for %zu",
               gi.numTotalRanges, c->max_ranges);
    return AG_HOST_ECUPTI;
  }
  if (gi.numTotalRanges && !(c->ranges = calloc(gi.numTotalRanges, sizeof *c->ranges)))
    return AG_HOST_ENOMEM;
  for (size_t i = 0; i < gi.numTotalRanges; i++) {
    ctr_range *r = &c->ranges[c->nranges++];
    AG_CUPTI_PARAMS(CUpti_RangeProfiler_CounterData_GetRangeInfo_Params, ri);
    ri.pCounterDataImage = c->cd;
    ri.counterDataImageSize = c->cd_size;
    ri.rangeIndex = i;
    ri.rangeDelimiter = "/";
    AG__CP(c, cuptiRangeProfilerCounterDataGetRangeInfo(&ri));
    /* the name is CUPTI's (not freed here: whether the caller owns it is
     * not documented for this call) */
    if (!(r->name = strdup(ri.rangeName ? ri.rangeName : "")) ||
        !(r->values = calloc(c->nmetrics, sizeof *r->values)))
      return AG_HOST_ENOMEM;
    int rc = ag_ctr_cat_eval(c->cat, c->cd, c->cd_size, i, c->names, c->nmetrics, r->values,
                             err, errlen);
    if (rc)
      return rc;
  }
  return 0;
}

int ag_ctr_end(ag_ctr *c, int *more, char *err, size_t errlen) {
  *more = 0;
  if (c->depth) {
    ag__seterr(err, errlen, "%d user range%s still open at ag_host_finish (the innermost: "
                            "'%s'): every ag_host_range_push needs its ag_host_range_pop",
               c->depth, c->depth == 1 ? " is" : "s are", c->stack[c->depth - 1]);
    return AG_HOST_EINVAL;
  }
  if (!c->started)
    return 0;
  AG_CUPTI_PARAMS(CUpti_RangeProfiler_Stop_Params, sp);
  sp.pRangeProfilerObject = c->obj;
  AG__CP(c, cuptiRangeProfilerStop(&sp));
  c->started = 0;
  c->all_submitted = sp.isAllPassSubmitted;
  AG_CUPTI_PARAMS(CUpti_RangeProfiler_DecodeData_Params, dd);
  dd.pRangeProfilerObject = c->obj;
  AG__CP(c, cuptiRangeProfilerDecodeData(&dd));
  c->dropped += dd.numOfRangeDropped;
  if (c->user && !c->all_submitted) { /* another run of the harness: the next pass */
    c->pass_index = sp.passIndex;
    c->target_level = sp.targetNestingLevel;
    if (sp.passIndex >= AG_CTR_MAX_PASSES) {
      ag__seterr(err, errlen, "the application replay did not finish in %d passes (CUPTI "
                              "asks for pass %zu)", AG_CTR_MAX_PASSES, sp.passIndex);
      return AG_HOST_ECUPTI;
    }
    int rc = save_replay(c, err, errlen);
    if (rc)
      return rc;
    FILE *f = fopen(c->next_path, "w");
    if (!f || fprintf(f, "pass %zu of %zu\n", sp.passIndex + 1, c->passes) < 0) {
      if (f)
        fclose(f);
      ag__seterr(err, errlen, "cannot write '%s'", c->next_path);
      return AG_HOST_EIO;
    }
    fclose(f);
    *more = 1;
    return 0;
  }
  unlink(c->replay_path); /* the last pass: the state is spent */
  int rc = evaluate(c, err, errlen);
  if (!rc && !c->nranges) {
    if (c->user)
      ag__seterr(err, errlen, "hardware counters: no user range was measured "
                              "(ARGUS_COUNTERS_RANGE=user measures between ag_host_range_push "
                              "and ag_host_range_pop; the harness pushed %d)", c->pushed);
    else
      ag__seterr(err, errlen, "hardware counters: CUPTI profiled no kernel launch between the "
                              "variant's load and ag_host_finish (%zu launches through "
                              "libargus_host)", c->nlaunch);
    rc = AG_HOST_EINVAL;
  }
  return rc;
}

size_t ag_ctr_passes(const ag_ctr *c) { return c->passes; }
size_t ag_ctr_ranges(const ag_ctr *c) { return c->nranges; }

static const char *type_name(int t) {
  return t == 0 ? "counter" : t == 1 ? "ratio" : t == 2 ? "throughput" : "?";
}

static void dim(ag_jb *j, const char *k, const unsigned d[3]) {
  ag_jb_printf(j, ",\"%s\":[%u,%u,%u]", k, d[0], d[1], d[2]);
}

void ag_ctr_json(const ag_ctr *c, ag_jb *j) {
  /* auto ranges are launches in order: range i is the i-th launch noted,
   * when every kernel went through libargus_host */
  int matched = !c->user && c->nranges + c->dropped == c->nlaunch && !c->launches_lost;
  ag_jb_puts(j, "\"chip\":");
  ag_jb_str(j, c->chip);
  ag_jb_printf(j, ",\"cupti_version\":%u,\"subscriber\":\"argus (the process's one CUPTI "
                  "subscriber)\",\"range_mode\":\"%s\",\"replay\":\"%s\",\"passes\":%zu,"
                  "\"harness_runs\":%zu,\"max_ranges\":%zu,\"dropped_ranges\":%zu,"
                  "\"user_ranges_pushed\":%d,\"launches_noted\":%zu,\"launches_lost\":%zu,"
                  "\"matched\":%s,\"config_bytes\":%zu,\"counter_data_bytes\":%zu,\"metrics\":[",
               c->version, c->user ? "user" : "auto", c->user ? "application" : "kernel",
               c->passes, c->user ? c->pass_index + 1 : 1, c->max_ranges, c->dropped, c->pushed,
               c->nlaunch, c->launches_lost, matched ? "true" : "false", c->config_size,
               c->cd_size);
  for (size_t i = 0; i < c->nmetrics; i++) {
    ag_jb_printf(j, "%s{\"name\":", i ? "," : "");
    ag_jb_str(j, c->names[i]);
    ag_jb_printf(j, ",\"type\":\"%s\",\"unit\":", type_name(c->props[i].type));
    ag_jb_str(j, c->props[i].unit);
    ag_jb_puts(j, ",\"hw_unit\":");
    ag_jb_str(j, c->props[i].hw_unit);
    ag_jb_puts(j, ",\"description\":");
    ag_jb_str(j, c->props[i].description);
    ag_jb_puts(j, "}");
  }
  ag_jb_puts(j, "],\"ranges\":[");
  for (size_t i = 0; i < c->nranges; i++) {
    const ctr_range *r = &c->ranges[i];
    const ctr_launch *l = matched ? &c->launches[i] : NULL;
    ag_jb_printf(j, "%s{\"index\":%zu,\"name\":", i ? "," : "", i);
    ag_jb_str(j, r->name);
    ag_jb_puts(j, ",\"kernel\":");
    ag_jb_str(j, l ? l->kernel : NULL);
    if (l && l->launch >= 0)
      ag_jb_printf(j, ",\"launch\":%ld", l->launch);
    else
      ag_jb_puts(j, ",\"launch\":null");
    ag_jb_puts(j, ",\"user_range\":");
    ag_jb_str(j, c->user ? r->name : l ? l->user_range : NULL);
    if (l) {
      dim(j, "grid", l->grid);
      dim(j, "block", l->block);
    }
    ag_jb_puts(j, ",\"values\":[");
    for (size_t k = 0; k < c->nmetrics; k++) {
      double v = r->values[k];
      if (isfinite(v))
        ag_jb_printf(j, "%s%.17g", k ? "," : "", v);
      else
        ag_jb_printf(j, "%snull", k ? "," : "");
    }
    ag_jb_puts(j, "]}");
  }
  ag_jb_puts(j, "]");
}

void ag_ctr_close(ag_ctr *c) {
  if (!c)
    return;
  if (c->started) {
    AG_CUPTI_PARAMS(CUpti_RangeProfiler_Stop_Params, sp);
    sp.pRangeProfilerObject = c->obj;
    c->cuptiRangeProfilerStop(&sp);
  }
  if (c->obj) {
    AG_CUPTI_PARAMS(CUpti_RangeProfiler_Disable_Params, dp);
    dp.pRangeProfilerObject = c->obj;
    c->cuptiRangeProfilerDisable(&dp);
  }
  ag_ctr_cat_close(c->cat);
  if (c->prof_init) {
    AG_CUPTI_PARAMS(CUpti_Profiler_DeInitialize_Params, dp);
    c->cuptiProfilerDeInitialize(&dp);
  }
  if (c->subscribed)
    c->cuptiUnsubscribe(c->sub);
  for (size_t i = 0; i < c->nmetrics; i++)
    free(c->owned[i]);
  for (size_t i = 0; i < c->nlaunch; i++) {
    free(c->launches[i].kernel);
    free(c->launches[i].user_range);
  }
  free(c->launches);
  for (int i = 0; i < c->depth; i++)
    free(c->stack[i]);
  for (size_t i = 0; i < c->nranges; i++) {
    free(c->ranges[i].name);
    free(c->ranges[i].values);
  }
  free(c->ranges);
  free(c->config);
  free(c->cd);
  free(c->avail);
  free(c);
}
