/*
 * counters_ev.c — reads the hardware counters' evidence and makes the
 * `hw_counters` signal (argus/counters_ev.h, docs/counters.md): every
 * range's metric values with their units, the user ranges' sums of the
 * additive metrics, and each range's roofline position against the peaks
 * the evidence recorded from the device. One pass per file; called once
 * per collection.
 */
#include "argus/counters_ev.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the metrics the roofline reads (all in the collector's default set:
 * test_counters checks it) */
#define M_DURATION "gpu__time_duration.sum"
#define M_DRAM_READ "dram__bytes_read.sum"
#define M_DRAM_WRITE "dram__bytes_write.sum"
#define M_OP(op) "sm__sass_thread_inst_executed_op_" op "_pred_on.sum"
#define M_FFMA_PEAK M_OP("ffma") ".peak_sustained"
#define M_SM_HZ "sm__cycles_elapsed.avg.per_second"
#define M_DRAM_PEAK "dram__bytes.sum.peak_sustained"
#define M_DRAM_HZ "dram__cycles_elapsed.avg.per_second"
/* the tensor path's math ops by source precision, their peaks per GPC
 * cycle, and the GPC clock (docs/counters.md, "Tensor FLOPs"): per source
 * the metric of every tensor op (sm__ops_path_tensor_src_*) when the set
 * has it (--metrics), else the default set's HGMMA one (Hopper's wgmma, at
 * no extra replay pass); never both, which would count HGMMA twice */
#define M_GPC_HZ "gpc__cycles_elapsed.avg.per_second"
static const struct {
  const char *src, *all, *hgmma;
} tensor_src[] = {
    {"fp16", "sm__ops_path_tensor_src_fp16.sum", "sm__ops_path_tensor_op_hgmma_src_fp16.sum"},
    {"bf16", "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
     "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum"},
    {"tf32", "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
     "sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32.sum"},
    {"fp8", "sm__ops_path_tensor_src_fp8.sum", NULL},
    {"fp64", "sm__ops_path_tensor_src_fp64.sum", NULL},
};
#define NTENSOR (sizeof tensor_src / sizeof tensor_src[0])
#define TENSOR_RULE                                                            \
  "tensor FLOPs = the sum over sources (fp16, bf16, tf32, fp8, fp64) of CUPTI's tensor-path "  \
  "math ops, one FLOP each (a multiply-add counts 2): sm__ops_path_tensor_src_<source>.sum "   \
  "when the set has it, else the default set's HGMMA count "                                  \
  "sm__ops_path_tensor_op_hgmma_src_<source>.sum (wgmma only: mma.sync's HMMA and fp64 DMMA "  \
  "need --metrics sm__ops_path_tensor_src_<source>.sum); the tensor peak = the dominant "      \
  "source's metric .peak_sustained (math ops per GPC cycle) x "                               \
  "gpc__cycles_elapsed.avg.per_second, both read from the device in the range; the compute "  \
  "roof is the dominant precision's peak (FP32 or FP64 from the SASS FLOP counters, or "      \
  "tensor). On GH100 the HGMMA fp16 source's peak_sustained is 8,192 math ops per SM per "     \
  "cycle, twice the dense FP16 rate (the 2:4-sparse one): a dense kernel reaches at most "     \
  "half of this tensor roof"

typedef struct rd {
  const char *path;
  ag_diags *diags;
} rd;

/* A diagnostic naming the file; the decoder's error, AG_EPARSE. */
#define BAD(r, ...)                                                            \
  (ag_diags_add((r)->diags, AG_SEV_ERROR, (r)->path, 0, 0, NULL, 0, __VA_ARGS__), AG_EPARSE)

static const char *str_of(const json_t *o, const char *k) {
  return json_string_value(json_object_get(o, k));
}

static int int_of(const json_t *o, const char *k, long *v) {
  json_t *x = json_object_get(o, k);
  if (!json_is_integer(x))
    return -1;
  *v = (long)json_integer_value(x);
  return 0;
}

/* The device's peaks from the figures the collector recorded. */
static int read_peaks(rd *r, ag_ctr_ev *e) {
  json_t *p = json_object_get(e->root, "peaks");
  long v[8];
  static const char *const k[] = {"sm_count",     "sm_clock_khz",      "mem_clock_khz",
                                  "mem_bus_bits", "fp32_lanes_per_sm", "fp64_lanes_per_sm"};
  if (!json_is_object(p))
    return BAD(r, "field 'peaks' (the device's figures from cuDeviceGetAttribute) is missing");
  for (int i = 0; i < 6; i++)
    if (int_of(p, k[i], &v[i]) || v[i] < 0)
      return BAD(r, "peaks: '%s' is missing or negative", k[i]);
  json_t *cc = json_object_get(p, "cc");
  ag_ctr_peaks *pk = &e->peaks;
  pk->sm_count = (int)v[0], pk->sm_clock_khz = (int)v[1], pk->mem_clock_khz = (int)v[2];
  pk->mem_bus_bits = (int)v[3], pk->fp32_lanes = (int)v[4], pk->fp64_lanes = (int)v[5];
  pk->cc[0] = (int)json_integer_value(json_array_get(cc, 0));
  pk->cc[1] = (int)json_integer_value(json_array_get(cc, 1));
  double hz = (double)pk->sm_clock_khz * 1e3;
  pk->fp32_flop_s = (double)pk->sm_count * pk->fp32_lanes * 2.0 * hz;
  pk->fp64_flop_s = (double)pk->sm_count * pk->fp64_lanes * 2.0 * hz;
  pk->dram_bytes_s = 2.0 * (double)pk->mem_clock_khz * 1e3 * (double)pk->mem_bus_bits / 8.0;
  return 0;
}

static int read_all(rd *r, ag_ctr_ev *e) {
  const char *fmt = str_of(e->root, "format");
  if (!fmt || strcmp(fmt, "argus-counters"))
    return BAD(r, "not hardware-counter evidence (format is not \"argus-counters\")");
  long v = 0;
  if (int_of(e->root, "version", &v) || v != 1)
    return BAD(r, "hardware-counter evidence version %ld: this argus reads version 1", v);
  e->variant_id = json_string_value(json_object_get(json_object_get(e->root, "variant"), "id"));
  e->synthetic = str_of(e->root, "synthetic");
  if (!(e->chip = str_of(e->root, "chip")))
    return BAD(r, "field 'chip' is missing");
  e->range_mode = str_of(e->root, "range_mode");
  e->replay = str_of(e->root, "replay");
  if (!e->range_mode || (strcmp(e->range_mode, "auto") && strcmp(e->range_mode, "user")))
    return BAD(r, "field 'range_mode' is neither \"auto\" nor \"user\"");
  if (int_of(e->root, "passes", &e->passes) || e->passes < 1)
    return BAD(r, "field 'passes' (the replay passes, >= 1) is missing");
  if (int_of(e->root, "dropped_ranges", &e->dropped_ranges) || e->dropped_ranges < 0)
    return BAD(r, "field 'dropped_ranges' is missing");
  if (int_of(e->root, "harness_runs", &e->harness_runs))
    e->harness_runs = 1;
  e->matched = json_is_true(json_object_get(e->root, "matched"));
  int rc = read_peaks(r, e);
  if (rc)
    return rc;
  json_t *ms = json_object_get(e->root, "metrics"), *o;
  size_t i;
  if (!json_is_array(ms) || !json_array_size(ms))
    return BAD(r, "field 'metrics' is missing or empty");
  e->nmetrics = json_array_size(ms);
  if (!(e->metrics = ag_calloc(e->nmetrics, sizeof *e->metrics)))
    return AG_ENOMEM;
  json_array_foreach(ms, i, o) {
    ag_ctr_metric_ev *m = &e->metrics[i];
    if (!(m->name = str_of(o, "name")) || !(m->unit = str_of(o, "unit")))
      return BAD(r, "metrics[%zu]: needs 'name' and 'unit'", i);
    for (size_t k = 0; k < i; k++)
      if (!strcmp(e->metrics[k].name, m->name))
        return BAD(r, "metrics[%zu]: '%s' is listed twice", i, m->name);
    m->type = str_of(o, "type");
    m->description = str_of(o, "description");
  }
  json_t *rs = json_object_get(e->root, "ranges");
  if (!json_is_array(rs))
    return BAD(r, "field 'ranges' is missing or not an array");
  e->nranges = json_array_size(rs);
  if (!(e->ranges = ag_calloc(e->nranges + 1, sizeof *e->ranges)))
    return AG_ENOMEM;
  json_array_foreach(rs, i, o) {
    ag_ctr_range_ev *g = &e->ranges[i];
    json_t *vals = json_object_get(o, "values");
    if (!(g->name = str_of(o, "name")))
      return BAD(r, "ranges[%zu]: no 'name'", i);
    if (!json_is_array(vals) || json_array_size(vals) != e->nmetrics)
      return BAD(r, "ranges[%zu]: 'values' has %zu entries for %zu metrics", i,
                 json_array_size(vals), e->nmetrics);
    g->kernel = str_of(o, "kernel");
    g->user_range = str_of(o, "user_range");
    if (int_of(o, "launch", &g->launch))
      g->launch = -1;
    if (!(g->values = ag_calloc(e->nmetrics, sizeof *g->values)))
      return AG_ENOMEM;
    for (size_t k = 0; k < e->nmetrics; k++) {
      json_t *x = json_array_get(vals, k);
      if (!json_is_number(x) && !json_is_null(x))
        return BAD(r, "ranges[%zu]: value %zu (%s) is not a number", i, k, e->metrics[k].name);
      g->values[k] = json_is_number(x) ? json_number_value(x) : NAN;
    }
  }
  return 0;
}

/* The file `path` (data NULL) or the bytes data[0..len) named `path`. */
static int load(const char *path, const void *data, size_t len, ag_diags *diags,
                ag_ctr_ev **out) {
  rd r = {path, diags};
  ag_ctr_ev *e = ag_calloc(1, sizeof *e);
  int rc = !e ? AG_ENOMEM
              : ag_json_load_doc(path, data, len, "hardware-counter evidence", diags, &e->root);
  rc = rc ? rc : !json_is_object(e->root) ? BAD(&r, "not a JSON object") : read_all(&r, e);
  *out = rc ? NULL : e;
  if (rc)
    ag_ctr_ev_free(e);
  return rc;
}

int ag_ctr_ev_load(const char *path, ag_diags *diags, ag_ctr_ev **out) {
  return load(path, NULL, 0, diags, out);
}

int ag_ctr_ev_load_mem(const void *data, size_t len, const char *name, ag_diags *diags,
                       ag_ctr_ev **out) {
  return load(name, len ? data : "", len, diags, out);
}

void ag_ctr_ev_free(ag_ctr_ev *e) {
  if (!e)
    return;
  for (size_t i = 0; e->ranges && i < e->nranges; i++)
    ag_free(e->ranges[i].values);
  ag_free(e->ranges);
  ag_free(e->metrics);
  json_decref(e->root);
  ag_free(e);
}

int ag_ctr_ev_metric(const ag_ctr_ev *e, const char *name) {
  for (size_t i = 0; i < e->nmetrics; i++)
    if (!strcmp(e->metrics[i].name, name))
      return (int)i;
  return -1;
}

double ag_ctr_ev_value(const ag_ctr_ev *e, size_t r, const char *name) {
  int k = ag_ctr_ev_metric(e, name);
  return k < 0 || r >= e->nranges ? NAN : e->ranges[r].values[k];
}

/* ---------------------------------------------------------- the signal */

static json_t *num(double v) { return isfinite(v) ? json_real(v) : json_null(); }

/* 2 x fma + add + mul thread instructions of one precision ("f", "d", "h") */
static double flops(const ag_ctr_ev *e, size_t r, const char *p) {
  char fma[96], add[96], mul[96];
  snprintf(fma, sizeof fma, M_OP("%sfma"), p);
  snprintf(add, sizeof add, M_OP("%sadd"), p);
  snprintf(mul, sizeof mul, M_OP("%smul"), p);
  return 2.0 * ag_ctr_ev_value(e, r, fma) + ag_ctr_ev_value(e, r, add) +
         ag_ctr_ev_value(e, r, mul);
}

/* The tensor path's FLOPs (NAN when the set has none of its metrics), the
 * dominant source (the most ops; -1: none ran) and its peak FLOP/s. */
static double tensor_flops(const ag_ctr_ev *e, size_t r, int *src, double *peak) {
  double sum = NAN, best = 0;
  *src = -1, *peak = NAN;
  const char *used[NTENSOR] = {0};
  for (size_t k = 0; k < NTENSOR; k++) {
    const char *m = tensor_src[k].all;
    double v = ag_ctr_ev_value(e, r, m);
    if (!isfinite(v) && tensor_src[k].hgmma)
      v = ag_ctr_ev_value(e, r, m = tensor_src[k].hgmma);
    if (!isfinite(v))
      continue;
    used[k] = m;
    sum = isfinite(sum) ? sum + v : v;
    if (v > best)
      best = v, *src = (int)k;
  }
  if (*src >= 0) {
    char m[160];
    snprintf(m, sizeof m, "%s.peak_sustained", used[*src]);
    *peak = ag_ctr_ev_value(e, r, m) * ag_ctr_ev_value(e, r, M_GPC_HZ);
  }
  return sum;
}

static json_t *roofline(const ag_ctr_ev *e, size_t r) {
  const ag_ctr_peaks *pk = &e->peaks;
  double ns = ag_ctr_ev_value(e, r, M_DURATION);
  double bytes = ag_ctr_ev_value(e, r, M_DRAM_READ) + ag_ctr_ev_value(e, r, M_DRAM_WRITE);
  double f32 = flops(e, r, "f"), f64 = flops(e, r, "d"), f16 = flops(e, r, "h");
  int tsrc;
  double tpeak, ft = tensor_flops(e, r, &tsrc, &tpeak);
  double s = ns > 0 ? ns * 1e-9 : NAN;
  /* the dominant precision: the most FLOPs of FP32, FP64 and the tensor path */
  int dp = isfinite(f64) && (!isfinite(f32) || f64 > f32);
  int tc = tsrc >= 0 && ft > (dp ? f64 : isfinite(f32) ? f32 : 0);
  double f = tc ? ft : dp ? f64 : f32;
  double peak = tc ? tpeak : dp ? pk->fp64_flop_s : pk->fp32_flop_s;
  double intensity = bytes > 0 ? f / bytes : NAN;
  double ridge = peak > 0 && pk->dram_bytes_s > 0 ? peak / pk->dram_bytes_s : NAN;
  double roof = isfinite(intensity) && peak > 0
                    ? fmin(peak, intensity * pk->dram_bytes_s) : NAN;
  const char *bound = !isfinite(intensity) || !isfinite(ridge) ? NULL
                      : intensity < ridge                        ? "memory"
                                                                 : "compute";
  json_t *o = json_pack(
      "{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:s,s:o,s:o,s:s?,s:o,s:o,s:o,s:o}", "duration_ns",
      num(ns), "dram_bytes", num(bytes), "fp32_flop", num(f32), "fp64_flop", num(f64),
      "fp16_inst_flop", num(f16), "fp32_flop_per_s", num(f32 / s), "fp64_flop_per_s",
      num(f64 / s), "dram_bytes_per_s", num(bytes / s), "precision",
      tc ? "tensor" : dp ? "fp64" : "fp32", "intensity",
                   num(intensity), "ridge", num(ridge), "bound", bound, "roof_flop_per_s",
                   num(roof), "pct_of_roof", num(100.0 * (f / s) / roof), "pct_of_peak_flop",
                   num(peak > 0 ? 100.0 * (f / s) / peak : NAN), "pct_of_peak_dram",
                   num(pk->dram_bytes_s > 0 ? 100.0 * (bytes / s) / pk->dram_bytes_s : NAN));
  if (o && (json_object_set_new(o, "tensor_flop", num(ft)) ||
            json_object_set_new(o, "tensor_flop_per_s", num(ft / s)) ||
            json_object_set_new(o, "tensor_source",
                                tsrc >= 0 ? json_string(tensor_src[tsrc].src) : json_null()) ||
            json_object_set_new(o, "tensor_peak_flop_per_s", num(tpeak)) ||
            json_object_set_new(o, "pct_of_tensor_peak",
                                num(tpeak > 0 ? 100.0 * (ft / s) / tpeak : NAN)) ||
            json_object_set_new(o, "tensor_rule", json_string(TENSOR_RULE)))) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* A counter summed over a range's launches: a `.sum` rollup with no
 * submetric after it (ratios, averages and percentages do not add). */
static int additive(const ag_ctr_metric_ev *m) {
  size_t l = strlen(m->name);
  return (!m->type || !strcmp(m->type, "counter")) && l > 4 && !strcmp(m->name + l - 4, ".sum");
}

static json_t *peaks_json(const ag_ctr_ev *e) {
  const ag_ctr_peaks *pk = &e->peaks;
  /* the same peaks from CUPTI's own figures, where the set has them
   * (range 0): a check of the lanes per SM on the GPU */
  double ffma = ag_ctr_ev_value(e, 0, M_FFMA_PEAK), hz = ag_ctr_ev_value(e, 0, M_SM_HZ);
  double dpk = ag_ctr_ev_value(e, 0, M_DRAM_PEAK), dhz = ag_ctr_ev_value(e, 0, M_DRAM_HZ);
  return json_pack("{s:i,s:i,s:i,s:i,s:[i,i],s:i,s:i,s:o,s:o,s:o,s:o,s:o,s:o,s:s}",
                   "sm_count", pk->sm_count, "sm_clock_khz", pk->sm_clock_khz, "mem_clock_khz",
                   pk->mem_clock_khz, "mem_bus_bits", pk->mem_bus_bits, "cc", pk->cc[0],
                   pk->cc[1], "fp32_lanes_per_sm", pk->fp32_lanes, "fp64_lanes_per_sm",
                   pk->fp64_lanes, "fp32_flop_per_s", num(pk->fp32_flop_s > 0 ? pk->fp32_flop_s
                                                                              : NAN),
                   "fp64_flop_per_s", num(pk->fp64_flop_s > 0 ? pk->fp64_flop_s : NAN),
                   "dram_bytes_per_s", num(pk->dram_bytes_s > 0 ? pk->dram_bytes_s : NAN),
                   "sm_hz_measured", num(hz), "counter_fp32_flop_per_s", num(2.0 * ffma * hz),
                   "counter_dram_bytes_per_s", num(dpk * dhz), "rule",
                   "FP32/FP64 FLOP/s = SMs x lanes per SM x 2 x SM clock (cuDeviceGetAttribute; "
                   "lanes by compute capability); DRAM bytes/s = 2 x memory clock x bus width / 8; "
                   "counter_*: the same from CUPTI's peak_sustained counters and the clocks "
                   "measured in range 0");
}

json_t *ag_ctr_signal(const ag_ctr_ev *e) {
  json_t *sig = json_pack("{s:s,s:s,s:s,s:s,s:s?,s:i,s:i,s:b,s:o,s:[],s:[],s:[],s:[]}",
                          "signal",
                          "hw_counters", "qual", "observed", "chip", e->chip, "range_mode",
                          e->range_mode, "replay", e->replay, "passes", (int)e->passes,
                          "dropped_ranges", (int)e->dropped_ranges, "matched", e->matched,
                          "peaks", peaks_json(e), "metrics", "ranges", "user_ranges", "warnings");
  if (!sig)
    return NULL;
  json_t *ms = json_object_get(sig, "metrics"), *rs = json_object_get(sig, "ranges");
  json_t *us = json_object_get(sig, "user_ranges"), *w = json_object_get(sig, "warnings");
  for (size_t k = 0; k < e->nmetrics; k++)
    json_array_append_new(ms, json_pack("{s:s,s:s?,s:s,s:s?}", "name", e->metrics[k].name,
                                        "type", e->metrics[k].type, "unit", e->metrics[k].unit,
                                        "description", e->metrics[k].description));
  for (size_t i = 0; i < e->nranges; i++) {
    const ag_ctr_range_ev *g = &e->ranges[i];
    char name[320];
    if (!strcmp(e->range_mode, "user"))
      snprintf(name, sizeof name, "(range %s)", g->name);
    else if (g->kernel && g->launch >= 0)
      snprintf(name, sizeof name, "(launch %ld %s)", g->launch, g->kernel);
    else if (g->kernel) /* a kernel of another module */
      snprintf(name, sizeof name, "(range %s %s)", g->name, g->kernel);
    else /* not matched to a launch */
      snprintf(name, sizeof name, "(range %s)", g->name);
    json_t *vals = json_object();
    for (size_t k = 0; k < e->nmetrics; k++)
      json_object_set_new(vals, e->metrics[k].name, num(g->values[k]));
    json_array_append_new(
        rs, json_pack("{s:s,s:s,s:s?,s:o,s:s?,s:o,s:o}", "name", name, "range", g->name,
                      "kernel", g->kernel, "launch",
                      g->launch >= 0 ? json_integer(g->launch) : json_null(), "user_range",
                      g->user_range, "values", vals, "roofline", roofline(e, i)));
  }
  /* the harness's ranges in the auto mode: their launches' additive counters */
  for (size_t i = 0; !strcmp(e->range_mode, "auto") && i < e->nranges; i++) {
    const char *u = e->ranges[i].user_range;
    int seen = !u;
    for (size_t j = 0; j < i && !seen; j++)
      seen = e->ranges[j].user_range && !strcmp(e->ranges[j].user_range, u);
    if (seen)
      continue;
    json_t *sums = json_object();
    int n = 0;
    for (size_t j = i; j < e->nranges; j++)
      n += e->ranges[j].user_range && !strcmp(e->ranges[j].user_range, u);
    for (size_t k = 0; k < e->nmetrics; k++) {
      if (!additive(&e->metrics[k]))
        continue;
      double s = 0;
      for (size_t j = i; j < e->nranges; j++)
        if (e->ranges[j].user_range && !strcmp(e->ranges[j].user_range, u))
          s += e->ranges[j].values[k];
      json_object_set_new(sums, e->metrics[k].name, num(s));
    }
    json_array_append_new(us, json_pack("{s:s,s:i,s:o}", "name", u, "launches", n, "sums",
                                        sums));
  }
  if (e->synthetic)
    json_array_append_new(w, json_sprintf("SYNTHETIC evidence, not recorded on a GPU: %s",
                                          e->synthetic));
  if (e->dropped_ranges)
    json_array_append_new(w, json_sprintf("%ld ranges were dropped: the counter data held "
                                          "fewer ranges than were profiled (raise "
                                          "ARGUS_COUNTERS_MAX_RANGES)", e->dropped_ranges));
  if (!strcmp(e->range_mode, "auto") && !e->matched)
    json_array_append_new(w, json_string("the ranges are not matched to launches: CUPTI "
                                         "profiled kernels launched outside libargus_host "
                                         "too, so range i is not the i-th launch the harness "
                                         "made through it"));
  if (!e->peaks.fp32_lanes)
    json_array_append_new(w, json_sprintf("no FP peak for compute capability %d.%d: the "
                                          "roofline has no compute roof", e->peaks.cc[0],
                                          e->peaks.cc[1]));
  if (e->passes > 1)
    json_array_append_new(w, json_sprintf("the metric set needs %ld passes: each %s ran %ld "
                                          "times (%s replay); its values come from different "
                                          "passes", e->passes, strcmp(e->range_mode, "user")
                                          ? "kernel" : "user range", e->passes,
                                          e->replay ? e->replay : "?"));
  return sig;
}

static double val(const json_t *range, const char *metric) {
  json_t *v = json_object_get(json_object_get(range, "values"), metric);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

static double roof(const json_t *range, const char *k) {
  json_t *v = json_object_get(json_object_get(range, "roofline"), k);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

int ag_ctr_text(const json_t *sig, ag_str *out) {
  json_t *pk = json_object_get(sig, "peaks");
  ag_str_printf(out, "hardware counters on %s (observed, CUPTI range profiler: %s ranges, "
                     "%lld pass%s, %s replay)\n",
                json_string_value(json_object_get(sig, "chip")),
                json_string_value(json_object_get(sig, "range_mode")),
                (long long)json_integer_value(json_object_get(sig, "passes")),
                json_integer_value(json_object_get(sig, "passes")) == 1 ? "" : "es",
                json_string_value(json_object_get(sig, "replay")));
  ag_str_printf(out, "  peaks: %.1f FP32 TFLOP/s, %.1f FP64 TFLOP/s, %.2f TB/s DRAM "
                     "(%lld SMs at %.0f MHz)\n",
                json_number_value(json_object_get(pk, "fp32_flop_per_s")) / 1e12,
                json_number_value(json_object_get(pk, "fp64_flop_per_s")) / 1e12,
                json_number_value(json_object_get(pk, "dram_bytes_per_s")) / 1e12,
                (long long)json_integer_value(json_object_get(pk, "sm_count")),
                (double)json_integer_value(json_object_get(pk, "sm_clock_khz")) / 1e3);
  ag_str_printf(out, "  %-28s %9s %6s %6s %6s %6s %9s %9s %7s %s\n", "range", "dur_us", "sm%",
                "dram%", "occ%", "issue%", "GB/s", "GFLOP/s", "FLOP/B", "bound (% of roof)");
  size_t i;
  json_t *r;
  json_array_foreach(json_object_get(sig, "ranges"), i, r) {
    const char *bound = json_string_value(json_object_get(json_object_get(r, "roofline"),
                                                          "bound"));
    const char *prec = json_string_value(json_object_get(json_object_get(r, "roofline"),
                                                         "precision"));
    const char *fk = !strcmp(prec, "tensor") ? "tensor_flop_per_s"
                     : !strcmp(prec, "fp64") ? "fp64_flop_per_s"
                                             : "fp32_flop_per_s";
    ag_str_printf(out, "  %-28.28s %9.3f %6.1f %6.1f %6.1f %6.1f %9.1f %9.1f %7.2f %s (%.1f)\n",
                  json_string_value(json_object_get(r, "name")), roof(r, "duration_ns") / 1e3,
                  val(r, "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
                  val(r, "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
                  val(r, "sm__warps_active.avg.pct_of_peak_sustained_active"),
                  val(r, "smsp__issue_active.avg.pct_of_peak_sustained_active"),
                  roof(r, "dram_bytes_per_s") / 1e9,
                  roof(r, fk) / 1e9, roof(r, "intensity"), bound ? bound : "-",
                  roof(r, "pct_of_roof"));
  }
  /* the tensor path, where it ran: its rate against its own peak */
  int tensor_rule = 0;
  json_array_foreach(json_object_get(sig, "ranges"), i, r) {
    const char *src = json_string_value(json_object_get(json_object_get(r, "roofline"),
                                                        "tensor_source"));
    if (!src)
      continue;
    ag_str_printf(out, "  tensor %-21.28s %.1f TFLOP/s (source %s), %.1f %% of its peak %.1f "
                       "TFLOP/s%s\n",
                  json_string_value(json_object_get(r, "name")),
                  roof(r, "tensor_flop_per_s") / 1e12, src, roof(r, "pct_of_tensor_peak"),
                  roof(r, "tensor_peak_flop_per_s") / 1e12,
                  tensor_rule++ ? "" : " (rule: tensor FLOPs = CUPTI's tensor-path math ops; "
                                       "peak = the source's peak_sustained x GPC clock)");
  }
  json_array_foreach(json_object_get(sig, "user_ranges"), i, r)
    ag_str_printf(out, "  user range %s: %lld launches, %.0f ns, %.0f DRAM bytes\n",
                  json_string_value(json_object_get(r, "name")),
                  (long long)json_integer_value(json_object_get(r, "launches")),
                  json_number_value(json_object_get(json_object_get(r, "sums"), M_DURATION)),
                  json_number_value(json_object_get(json_object_get(r, "sums"), M_DRAM_READ)) +
                      json_number_value(json_object_get(json_object_get(r, "sums"),
                                                        M_DRAM_WRITE)));
  json_array_foreach(json_object_get(sig, "warnings"), i, r)
    ag_str_printf(out, "  warning: %s\n", json_string_value(r));
  return out->oom ? AG_ENOMEM : 0;
}
