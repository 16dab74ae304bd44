/*
 * pm_ev.c — reads PM sampling's evidence, pm.json (argus/pm.h,
 * docs/throughput.md, "Evidence"). Checks the format, the metrics (the
 * names of argus/pm_metrics.h, in order), every sample (a window with
 * start < end, not overlapping the one before), counts the gaps between
 * windows, and fits the sampler's clock against %globaltimer on the
 * calibration kernels as the activity trace's clock is fitted
 * (ag_sys_clock_fit): each calibration kernel's span on the sampler's clock
 * is read from the samples (ag_pm_calib_span). With the activity trace
 * beside the sampler ("activity": true) the system members are read too
 * (ag_sys_ev_load_mem_as). One pass plus a sort; called once per
 * collection.
 */
#include "argus/pm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AG__PM_NAME(e, name, short_name) name,
static const char *const metric_names[AG_PM_NMETRICS] = {AG_PM_METRICS(AG__PM_NAME)};
#undef AG__PM_NAME

typedef struct rd {
  const char *path;
  ag_diags *diags;
} rd;

/* A malformed file: the diagnostic names it, AG_EPARSE. */
#define bad(r, ...)                                                                        \
  (ag_diags_add((r)->diags, AG_SEV_ERROR, (r)->path, 0, 0, NULL, 0, __VA_ARGS__), AG_EPARSE)

static int get_i64(const json_t *o, const char *k, int64_t *v) {
  json_t *x = json_object_get(o, k);
  if (!json_is_integer(x))
    return -1;
  *v = json_integer_value(x);
  return 0;
}

static uint64_t get_u64(const json_t *o, const char *k) {
  int64_t v = 0;
  return get_i64(o, k, &v) || v < 0 ? 0 : (uint64_t)v;
}

static int cmp_sample(const void *a, const void *b) {
  const ag_pm_sample *x = a, *y = b;
  return (x->t0 > y->t0) - (x->t0 < y->t0);
}

/* The busiest SM's active share of window k. */
static double active_share(const ag_pm_sample *s) {
  double el = s->v[AG_PM_SM_ELAPSED], ac = s->v[AG_PM_SM_ACTIVE_MAX];
  return el > 0 ? fmin(1.0, fmax(0.0, ac / el)) : 0;
}

int ag_pm_calib_span(const ag_pm_sample *s, size_t n, int last, double span_ns,
                     int64_t *start, int64_t *end) {
  *start = *end = 0;
  /* the runs of consecutive active windows; keep the first or the last */
  size_t a = 0, b = 0;
  int have = 0;
  for (size_t k = 0; k < n;) {
    if (!(active_share(&s[k]) > 0)) {
      k++;
      continue;
    }
    size_t j = k + 1;
    while (j < n && active_share(&s[j]) > 0 && s[j].t0 <= s[j - 1].t1)
      j++;
    if (!have || last)
      a = k, b = j - 1, have = 1;
    if (!last)
      break;
    k = j;
  }
  if (!have || b == a) /* one window: its length, not where in it */
    return 0;
  double st = (double)s[a].t1 - active_share(&s[a]) * (double)(s[a].t1 - s[a].t0);
  double en = (double)s[b].t0 + active_share(&s[b]) * (double)(s[b].t1 - s[b].t0);
  double win = (double)(s[a].t1 - s[a].t0);
  if (fabs((en - st) - span_ns) > 2 * win + 0.01 * span_ns)
    return 0;
  *start = (int64_t)llround(st);
  *end = (int64_t)llround(en);
  return 1;
}

static int read_samples(rd *r, ag_pm_ev *e, const json_t *pm) {
  json_t *ms = json_object_get(pm, "metrics");
  if (!json_is_array(ms) || json_array_size(ms) != AG_PM_NMETRICS)
    return bad(r, "pm.metrics: needs the %d metrics this argus reads", AG_PM_NMETRICS);
  for (size_t m = 0; m < AG_PM_NMETRICS; m++) {
    const char *nm = json_string_value(json_array_get(ms, m));
    if (!nm || strcmp(nm, metric_names[m]))
      return bad(r, "pm.metrics[%zu] is '%s', this argus reads '%s' there", m,
                 nm ? nm : "(not a string)", metric_names[m]);
  }
  json_t *ss = json_object_get(pm, "samples"), *row;
  if (!json_is_array(ss))
    return bad(r, "pm.samples is missing or not an array");
  e->nsamples = json_array_size(ss);
  e->samples = ag_calloc(e->nsamples + 1, sizeof *e->samples);
  if (!e->samples)
    return AG_ENOMEM;
  size_t i;
  json_array_foreach(ss, i, row) {
    ag_pm_sample *s = &e->samples[i];
    if (!json_is_array(row) || json_array_size(row) != 2 + AG_PM_NMETRICS ||
        !json_is_integer(json_array_get(row, 0)) || !json_is_integer(json_array_get(row, 1)))
      return bad(r, "pm.samples[%zu]: needs [start, end, %d counts]", i, AG_PM_NMETRICS);
    s->t0 = json_integer_value(json_array_get(row, 0));
    s->t1 = json_integer_value(json_array_get(row, 1));
    if (s->t1 <= s->t0)
      return bad(r, "pm.samples[%zu]: its window ends (%lld) before it starts (%lld)", i,
                 (long long)s->t1, (long long)s->t0);
    for (size_t m = 0; m < AG_PM_NMETRICS; m++) {
      json_t *v = json_array_get(row, 2 + m);
      if (!json_is_number(v) || json_number_value(v) < 0)
        return bad(r, "pm.samples[%zu]: count %zu (%s) is not a number >= 0", i, m,
                   metric_names[m]);
      s->v[m] = json_number_value(v);
    }
  }
  qsort(e->samples, e->nsamples, sizeof *e->samples, cmp_sample);
  double half = e->interval_ns ? 0.5 * (double)e->interval_ns : 0;
  for (i = 1; i < e->nsamples; i++) {
    const ag_pm_sample *p = &e->samples[i - 1], *s = &e->samples[i];
    if (s->t0 < p->t1)
      return bad(r, "pm.samples: windows overlap (%lld..%lld and %lld..%lld)",
                 (long long)p->t0, (long long)p->t1, (long long)s->t0, (long long)s->t1);
    if ((double)(s->t0 - p->t1) > half) {
      e->gaps++;
      e->gap_ns += (double)(s->t0 - p->t1);
    }
  }
  return 0;
}

/* The calibration kernels on the sampler's clock: the first is the first
 * active run of the samples, the last the last (the host runtime runs them
 * before and after everything else, with the sampler running). */
static int read_clock(rd *r, ag_pm_ev *e) {
  json_t *cal = json_object_get(e->root, "calibration"), *c;
  if (!json_is_array(cal))
    return bad(r, "field 'calibration' is missing or not an array");
  size_t n = json_array_size(cal), i;
  json_array_foreach(cal, i, c) {
    int64_t g0, g1;
    if (get_i64(c, "gt_first", &g0) || get_i64(c, "gt_last", &g1) || g1 <= g0)
      return bad(r, "calibration[%zu]: needs gt_first < gt_last (%%globaltimer ns)", i);
    if (i >= sizeof e->cal / sizeof e->cal[0])
      break;
    ag_clock_cal *k = &e->cal[e->ncal_read++];
    *k = (ag_clock_cal){g0, g1, 0, 0};
    if (i == 0 || i + 1 == n)
      ag_pm_calib_span(e->samples, e->nsamples, i > 0, (double)(g1 - g0), &k->other_start,
                       &k->other_end);
  }
  e->ncal = ag_sys_clock_fit(e->cal, (size_t)e->ncal_read, &e->offset_ns, &e->error_ns);
  return 0;
}

static int read_all(rd *r, ag_pm_ev *e, const void *data, size_t len) {
  json_t *fmt = json_object_get(e->root, "format"), *ver = json_object_get(e->root, "version");
  if (!json_is_string(fmt) || strcmp(json_string_value(fmt), "argus-pm") != 0)
    return bad(r, "not PM-sampling evidence (format is not \"argus-pm\")");
  if (!json_is_integer(ver) || json_integer_value(ver) != 1)
    return bad(r, "PM-sampling evidence version %lld: this argus reads version 1",
               json_is_integer(ver) ? (long long)json_integer_value(ver) : -1LL);
  json_t *vid = json_object_get(json_object_get(e->root, "variant"), "id");
  e->variant_id = json_is_string(vid) ? json_string_value(vid) : NULL;
  e->pid = -1;
  get_i64(e->root, "pid", &e->pid);
  int64_t sms = 0;
  get_i64(json_object_get(e->root, "device"), "sm_count", &sms);
  e->sm_count = (int)sms;
  json_t *pm = json_object_get(e->root, "pm");
  if (!json_is_object(pm))
    return bad(r, "field 'pm' (the sampler's configuration and samples) is missing");
  e->chip = json_string_value(json_object_get(pm, "chip"));
  e->trigger = json_string_value(json_object_get(pm, "trigger"));
  e->interval_ns = get_u64(pm, "interval_ns");
  e->overflow = get_u64(pm, "overflow");
  e->incomplete = get_u64(pm, "incomplete_samples");
  int rc;
  if ((rc = read_samples(r, e, pm)) || (rc = read_clock(r, e)))
    return rc;
  if (json_is_true(json_object_get(e->root, "activity")) &&
      (rc = ag_sys_ev_load_mem_as(data, len, r->path, "argus-pm", r->diags, &e->sys)))
    return rc;
  return 0;
}

static int load(const char *path, const void *data, size_t len, ag_diags *diags,
                ag_pm_ev **out) {
  *out = NULL;
  rd r = {path, diags};
  ag_pm_ev *e = ag_calloc(1, sizeof *e);
  char *own = NULL;
  if (!e)
    return AG_ENOMEM;
  int rc = 0;
  if (!data) { /* the activity part reads the bytes again */
    rc = ag_file_read(path, &own, &len);
    if (rc)
      ag_diags_add(diags, AG_SEV_ERROR, path, 0, 0, NULL, 0, "cannot read '%s': %s", path,
                   ag_strerror(rc));
    data = own;
  }
  if (!rc)
    rc = ag_json_load_doc(path, data, len, "PM-sampling evidence", diags, &e->root);
  if (!rc)
    rc = json_is_object(e->root) ? read_all(&r, e, data, len) : bad(&r, "not a JSON object");
  ag_free(own);
  if (rc) {
    ag_pm_ev_free(e);
    return rc;
  }
  *out = e;
  return 0;
}

int ag_pm_ev_load(const char *path, ag_diags *diags, ag_pm_ev **out) {
  return load(path, NULL, 0, diags, out);
}

int ag_pm_ev_load_mem(const void *data, size_t len, const char *name, ag_diags *diags,
                      ag_pm_ev **out) {
  static const char empty[1] = "";
  return load(name, len ? data : empty, len, diags, out);
}

void ag_pm_ev_free(ag_pm_ev *e) {
  if (!e)
    return;
  json_decref(e->root);
  ag_free(e->samples);
  ag_sys_ev_free(e->sys);
  ag_free(e);
}
