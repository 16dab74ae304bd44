/*
 * ctr_catalog.c — the chip's metric catalog over CUPTI's profiler host API
 * (ctr_catalog.h, docs/counters.md). The host object is made once per
 * catalog; the three base-metric lists (counters, ratios, throughputs) are
 * CUPTI's and live as long as it. A lookup asks CUPTI for the metric's
 * properties; only a refused name walks the lists for close matches.
 *
 * cupti_profiler_host.h includes C++'s <string>: this file is compiled
 * with cupti_c/ on the include path, whose empty `string` lets the C
 * compiler read the header's C declarations unchanged.
 */
#define _GNU_SOURCE
#include "ctr_catalog.h"

#include <cupti_profiler_host.h>
#include <cupti_result.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argus/host.h"
#include "ctr_default.h"
#include "cupti_lib.h"
#include "evwrite.h"

#define CAT_FUNCS(X)                                                           \
  X(cuptiGetResultString)                                                      \
  X(cuptiProfilerHostGetSupportedChips)                                        \
  X(cuptiProfilerHostInitialize)                                               \
  X(cuptiProfilerHostDeinitialize)                                             \
  X(cuptiProfilerHostGetBaseMetrics)                                           \
  X(cuptiProfilerHostGetSubMetrics)                                            \
  X(cuptiProfilerHostGetMetricProperties)                                      \
  X(cuptiProfilerHostConfigAddMetrics)                                         \
  X(cuptiProfilerHostGetConfigImageSize)                                       \
  X(cuptiProfilerHostGetConfigImage)                                           \
  X(cuptiProfilerHostGetNumOfPasses)                                           \
  X(cuptiProfilerHostEvaluateToGpuValues)

#define AG__NAME(n) n,
const char *const ag_ctr_default[] = {AG_CTR_DEFAULT_METRICS(AG__NAME) NULL};
#undef AG__NAME

struct ag_ctr_cat {
  void *lib;
  int own_lib;
#define AG__FP(fn) __typeof__(&fn) fn;
  CAT_FUNCS(AG__FP)
#undef AG__FP
  CUpti_Profiler_Host_Object *host;
  char chip[64];
  const char **base[CUPTI_METRIC_TYPE__COUNT];
  size_t nbase[CUPTI_METRIC_TYPE__COUNT];
  int configured; /* ConfigAddMetrics adds to the host object: once per catalog */
};

static int fail(ag_ctr_cat *c, CUptiResult r, const char *call, char *err, size_t errlen) {
  return ag__cupti_fail((void *)c->cuptiGetResultString, (int)r, call, err, errlen);
}

int ag_ctr_cat_open(void *lib, ag_ctr_kind kind, const char *chip, const uint8_t *avail,
                    ag_ctr_cat **out, char *err, size_t errlen) {
  *out = NULL;
  ag_ctr_cat *c = calloc(1, sizeof *c);
  if (!c) {
    ag__seterr(err, errlen, "out of memory");
    return AG_HOST_ENOMEM;
  }
  int rc = 0;
  snprintf(c->chip, sizeof c->chip, "%s", chip && *chip ? chip : AG_CTR_DEFAULT_CHIP);
  c->lib = lib;
  if (!c->lib) {
    if (!(c->lib = ag__cupti_lib("hardware counters", err, errlen))) {
      rc = AG_HOST_ENODEV;
      goto out;
    }
    c->own_lib = 1;
  }
#define AG__LOAD(fn)                                                           \
  *(void **)(&c->fn) = dlsym(c->lib, #fn);                                     \
  if (!c->fn) {                                                                \
    ag__cupti_lacks("hardware counters", #fn, err, errlen);                    \
    rc = AG_HOST_ENODEV;                                                       \
    goto out;                                                                  \
  }
  CAT_FUNCS(AG__LOAD)
#undef AG__LOAD
  AG_CUPTI_PARAMS(CUpti_Profiler_Host_Initialize_Params, ip);
  ip.profilerType =
      kind == AG_CTR_PM ? CUPTI_PROFILER_TYPE_PM_SAMPLING : CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  ip.pChipName = c->chip;
  ip.pCounterAvailabilityImage = avail;
  CUptiResult r = c->cuptiProfilerHostInitialize(&ip);
  if (r != CUPTI_SUCCESS) {
    /* a chip this CUPTI does not know: say which it knows */
    AG_CUPTI_PARAMS(CUpti_Profiler_Host_GetSupportedChips_Params, sc);
    int known = 0;
    char list[1024] = "";
    size_t used = 0;
    if (c->cuptiProfilerHostGetSupportedChips(&sc) == CUPTI_SUCCESS)
      for (size_t i = 0; i < sc.numChips; i++) {
        known |= !strcmp(sc.ppChipNames[i], c->chip);
        if (used < sizeof list)
          used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                                   sc.ppChipNames[i]);
      }
    if (!known && used) {
      ag__seterr(err, errlen, "this CUPTI does not know chip '%s' (it knows %s)", c->chip,
                 list);
      rc = AG_HOST_EUNSUPPORTED;
    } else {
      char call[128];
      snprintf(call, sizeof call, "cuptiProfilerHostInitialize(chip '%s')", c->chip);
      rc = fail(c, r, call, err, errlen);
    }
    goto out;
  }
  c->host = ip.pHostObject;
  for (int t = 0; t < CUPTI_METRIC_TYPE__COUNT; t++) {
    AG_CUPTI_PARAMS(CUpti_Profiler_Host_GetBaseMetrics_Params, bp);
    bp.pHostObject = c->host;
    bp.metricType = (CUpti_MetricType)t;
    if ((r = c->cuptiProfilerHostGetBaseMetrics(&bp)) != CUPTI_SUCCESS) {
      rc = fail(c, r, "cuptiProfilerHostGetBaseMetrics", err, errlen);
      goto out;
    }
    c->base[t] = bp.ppMetricNames;
    c->nbase[t] = bp.numMetrics;
  }
  *out = c;
out:
  if (rc)
    ag_ctr_cat_close(c);
  return rc;
}

void ag_ctr_cat_close(ag_ctr_cat *c) {
  if (!c)
    return;
  if (c->host) {
    AG_CUPTI_PARAMS(CUpti_Profiler_Host_Deinitialize_Params, dp);
    dp.pHostObject = c->host;
    c->cuptiProfilerHostDeinitialize(&dp);
  }
  if (c->own_lib && c->lib)
    dlclose(c->lib);
  free(c);
}

const char *ag_ctr_cat_chip(const ag_ctr_cat *c) { return c->chip; }

size_t ag_ctr_cat_count(const ag_ctr_cat *c) {
  size_t n = 0;
  for (int t = 0; t < CUPTI_METRIC_TYPE__COUNT; t++)
    n += c->nbase[t];
  return n;
}

/* The base metric `name` starts with (the longest; base names may hold a
 * '.': "TriageCompute.sm__throughput"), its type in *type; NULL if none. */
static const char *base_of(const ag_ctr_cat *c, const char *name, int *type) {
  const char *best = NULL;
  size_t bl = 0;
  for (int t = 0; t < CUPTI_METRIC_TYPE__COUNT; t++)
    for (size_t i = 0; i < c->nbase[t]; i++) {
      const char *b = c->base[t][i];
      size_t l = strlen(b);
      if (l > bl && !strncmp(name, b, l) && (name[l] == '.' || !name[l])) {
        best = b, bl = l;
        *type = t;
      }
    }
  return best;
}

typedef struct match {
  size_t d;
  const char *base, *sub; /* the candidate is base + sub */
} match;

static void consider(match *m, int *n, int max, size_t d, const char *base, const char *sub) {
  if (*n == max && m[max - 1].d <= d)
    return;
  int i = *n < max ? (*n)++ : max - 1;
  for (; i > 0 && m[i - 1].d > d; i--)
    m[i] = m[i - 1];
  m[i].d = d, m[i].base = base, m[i].sub = sub;
}

int ag_ctr_cat_close_matches(ag_ctr_cat *c, const char *name, char *buf, size_t buflen,
                             const char **out, int max) {
  if (max <= 0)
    return 0;
  if (max > 16)
    max = 16;
  match m[16];
  memset(m, 0, sizeof m);
  int n = 0, type = 0;
  size_t len = strlen(name);
  const char *b = base_of(c, name, &type);
  if (b) { /* the base is right: its rollups and submetrics */
    AG_CUPTI_PARAMS(CUpti_Profiler_Host_GetSubMetrics_Params, sp);
    sp.pHostObject = c->host;
    sp.metricType = (CUpti_MetricType)type;
    sp.pMetricName = b;
    if (c->cuptiProfilerHostGetSubMetrics(&sp) == CUPTI_SUCCESS)
      for (size_t i = 0; i < sp.numOfSubmetrics; i++) {
        char full[512];
        snprintf(full, sizeof full, "%s%s", b, sp.ppSubMetrics[i]);
        consider(m, &n, max, ag_ctr_edit_distance(name, full), b, sp.ppSubMetrics[i]);
      }
  } else { /* the base: compare it alone, keep the name's rollup */
    const char *dot = strchr(name, '.');
    size_t bl = dot ? (size_t)(dot - name) : len;
    char want[256];
    snprintf(want, sizeof want, "%.*s", (int)(bl < 255 ? bl : 255), name);
    for (int t = 0; t < CUPTI_METRIC_TYPE__COUNT; t++)
      for (size_t i = 0; i < c->nbase[t]; i++)
        consider(m, &n, max, ag_ctr_edit_distance(want, c->base[t][i]), c->base[t][i],
                 dot ? dot : "");
    len = bl;
  }
  size_t limit = len / 3 > 3 ? len / 3 : 3, used = 0;
  int k = 0;
  for (int i = 0; i < n; i++) {
    if (m[i].d > limit)
      continue;
    int w = snprintf(buf + used, buflen - used, "%s%s", m[i].base, m[i].sub);
    if (w < 0 || (size_t)w >= buflen - used)
      break;
    out[k++] = buf + used;
    used += (size_t)w + 1;
  }
  return k;
}

int ag_ctr_cat_lookup(ag_ctr_cat *c, const char *name, ag_ctr_props *p, char *err,
                      size_t errlen) {
  memset(p, 0, sizeof *p);
  AG_CUPTI_PARAMS(CUpti_Profiler_Host_GetMetricProperties_Params, pp);
  pp.pHostObject = c->host;
  pp.pMetricName = name;
  CUptiResult r = c->cuptiProfilerHostGetMetricProperties(&pp);
  int type = 0;
  const char *b = r == CUPTI_SUCCESS ? base_of(c, name, &type) : NULL;
  if (r == CUPTI_SUCCESS && !(b && !strcmp(b, name))) {
    p->type = (int)pp.metricType;
    snprintf(p->hw_unit, sizeof p->hw_unit, "%s", pp.pHwUnit ? pp.pHwUnit : "");
    snprintf(p->unit, sizeof p->unit, "%s", pp.pDimUnit ? pp.pDimUnit : "");
    snprintf(p->description, sizeof p->description, "%s",
             pp.pDescription ? pp.pDescription : "");
    return 0;
  }
  if (r != CUPTI_SUCCESS && r != CUPTI_ERROR_INVALID_METRIC_NAME &&
      r != CUPTI_ERROR_INVALID_PARAMETER)
    return fail(c, r, "cuptiProfilerHostGetMetricProperties", err, errlen);
  char buf[2048];
  const char *near[5];
  int k = ag_ctr_cat_close_matches(c, name, buf, sizeof buf, near, 5);
  char list[2200] = "";
  size_t used = 0;
  for (int i = 0; i < k && used < sizeof list; i++)
    used += (size_t)snprintf(list + used, sizeof list - used, "%s'%s'", i ? ", " : "", near[i]);
  if (k)
    ag__seterr(err, errlen, "'%s' is not a metric of chip %s%s: did you mean %s?", name,
               c->chip, r == CUPTI_SUCCESS ? " that can be collected (it needs a rollup)" : "",
               list);
  else
    ag__seterr(err, errlen,
               "'%s' is not a metric of chip %s (no close match among its %zu metrics; a name "
               "is base.rollup[.submetric], e.g. dram__bytes_read.sum)",
               name, c->chip, ag_ctr_cat_count(c));
  return AG_HOST_EINVAL;
}

int ag_ctr_cat_config(ag_ctr_cat *c, const char *const *names, size_t n, uint8_t **image,
                      size_t *size, size_t *passes, char *err, size_t errlen) {
  *image = NULL, *size = 0, *passes = 0;
  if (c->configured) {
    ag__seterr(err, errlen, "the metric catalog made its configuration already");
    return AG_HOST_EINVAL;
  }
  c->configured = 1;
  AG_CUPTI_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params, ap);
  ap.pHostObject = c->host;
  ap.ppMetricNames = (const char **)names;
  ap.numMetrics = n;
  CUptiResult r = c->cuptiProfilerHostConfigAddMetrics(&ap);
  if (r != CUPTI_SUCCESS)
    return fail(c, r, "cuptiProfilerHostConfigAddMetrics", err, errlen);
  AG_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params, sp);
  sp.pHostObject = c->host;
  if ((r = c->cuptiProfilerHostGetConfigImageSize(&sp)) != CUPTI_SUCCESS)
    return fail(c, r, "cuptiProfilerHostGetConfigImageSize", err, errlen);
  uint8_t *img = malloc(sp.configImageSize ? sp.configImageSize : 1);
  if (!img) {
    ag__seterr(err, errlen, "out of memory for the configuration image");
    return AG_HOST_ENOMEM;
  }
  AG_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImage_Params, gp);
  gp.pHostObject = c->host;
  gp.configImageSize = sp.configImageSize;
  gp.pConfigImage = img;
  AG_CUPTI_PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params, np);
  np.configImageSize = sp.configImageSize;
  np.pConfigImage = img;
  if ((r = c->cuptiProfilerHostGetConfigImage(&gp)) != CUPTI_SUCCESS ||
      (r = c->cuptiProfilerHostGetNumOfPasses(&np)) != CUPTI_SUCCESS) {
    free(img);
    return fail(c, r, "cuptiProfilerHostGetConfigImage/GetNumOfPasses", err, errlen);
  }
  *image = img, *size = sp.configImageSize, *passes = np.numOfPasses;
  return 0;
}

int ag_ctr_cat_eval(ag_ctr_cat *c, const uint8_t *image, size_t size, size_t range,
                    const char *const *names, size_t n, double *values, char *err,
                    size_t errlen) {
  AG_CUPTI_PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params, ep);
  ep.pHostObject = c->host;
  ep.pCounterDataImage = image;
  ep.counterDataImageSize = size;
  ep.rangeIndex = range;
  ep.ppMetricNames = (const char **)names;
  ep.numMetrics = n;
  ep.pMetricValues = values;
  CUptiResult r = c->cuptiProfilerHostEvaluateToGpuValues(&ep);
  if (r != CUPTI_SUCCESS) {
    char call[96];
    snprintf(call, sizeof call, "cuptiProfilerHostEvaluateToGpuValues(range %zu)", range);
    return fail(c, r, call, err, errlen);
  }
  return 0;
}
