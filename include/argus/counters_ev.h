/*
 * argus/counters_ev.h — the hardware counters' evidence (counters.json,
 * written by libargus_host under ARGUS_COLLECT=counters; docs/counters.md),
 * decoded and checked, and the `hw_counters` signal made from it: per
 * range (a kernel launch, or a range the harness opened) every metric's
 * value with its unit, and a roofline position — achieved FLOP/s and DRAM
 * bytes/s against the device's peaks, which the evidence holds as the
 * driver reported them (SM count, SM clock, memory clock and bus width).
 *
 * The peaks: FP32 (FP64) FLOP/s = SMs x lanes per SM x 2 x SM clock, the
 * lanes by compute capability (recorded with the evidence); DRAM bytes/s =
 * 2 x memory clock x bus width / 8 (double data rate). The FLOPs: 2 x FFMA
 * + FADD + FMUL thread instructions (predicated on), DFMA.. for FP64. The
 * roof at intensity I (FLOP per DRAM byte) is min(peak FLOP/s, I x peak
 * bytes/s); a range left of the ridge is memory-bound. A malformed file
 * gets a diagnostic naming the file and the part that is wrong. Pure CPU.
 */
#ifndef ARGUS_COUNTERS_EV_H
#define ARGUS_COUNTERS_EV_H

#include "argus/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ag_ctr_metric_ev {
  const char *name, *type, *unit, *description; /* borrowed from the JSON */
} ag_ctr_metric_ev;

typedef struct ag_ctr_range_ev {
  const char *name;       /* CUPTI's range name ("0", or the user range) */
  const char *kernel;     /* NULL when the ranges are not matched to launches */
  const char *user_range; /* the harness's ranges open at the launch ("a/b"), or NULL */
  long launch;            /* the variant's launch index, -1: none */
  double *values;         /* one per metric; NAN where CUPTI gave none */
} ag_ctr_range_ev;

typedef struct ag_ctr_peaks {
  int sm_count, sm_clock_khz, mem_clock_khz, mem_bus_bits, cc[2];
  int fp32_lanes, fp64_lanes; /* per SM per clock; 0: unknown */
  double fp32_flop_s, fp64_flop_s, dram_bytes_s; /* 0: unknown */
} ag_ctr_peaks;

typedef struct ag_ctr_ev {
  json_t *root;
  const char *variant_id, *chip, *range_mode, *replay;
  const char *synthetic; /* the file says it was made by hand, not recorded: why */
  long passes, harness_runs, dropped_ranges;
  int matched;
  ag_ctr_metric_ev *metrics;
  size_t nmetrics;
  ag_ctr_range_ev *ranges;
  size_t nranges;
  ag_ctr_peaks peaks;
} ag_ctr_ev;

int ag_ctr_ev_load(const char *path, ag_diags *diags, ag_ctr_ev **out);
int ag_ctr_ev_load_mem(const void *data, size_t len, const char *name, ag_diags *diags,
                       ag_ctr_ev **out);
void ag_ctr_ev_free(ag_ctr_ev *e);
/* The index of metric `name`, -1 when not collected. */
int ag_ctr_ev_metric(const ag_ctr_ev *e, const char *name);
/* Range r's value of metric `name`; NAN when not collected or not given. */
double ag_ctr_ev_value(const ag_ctr_ev *e, size_t r, const char *name);

/* The `hw_counters` signal (new reference): {"signal":"hw_counters",
 * "qual":"observed","chip","range_mode","replay","passes","dropped_ranges",
 * "matched","peaks":{...,"rule"},"metrics":[{name,type,unit,description}],
 * "ranges":[{"name" ("(launch N kernel)" or "(range R)"),"range","kernel",
 * "launch","user_range","values":{metric:value},"roofline":{...}}],
 * "user_ranges":[{"name","launches","sums":{metric:value}}],"warnings":[]}.
 * NULL when out of memory. */
json_t *ag_ctr_signal(const ag_ctr_ev *e);
/* The text a kernel engineer reads first: per range the headline metrics
 * and the roofline position. */
int ag_ctr_text(const json_t *signal, ag_str *out);

#ifdef __cplusplus
}
#endif
#endif
