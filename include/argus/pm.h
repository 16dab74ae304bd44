/*
 * argus/pm.h — hardware counters over time, joined to regions (issue 21,
 * docs/throughput.md): the evidence of CUPTI PM sampling (pm.json, written
 * by libargus_host under ARGUS_COLLECT=pm, or beside a trace with
 * ARGUS_PM=1), the join of its sampling windows with a region timeline,
 * and the `throughput` signal made from them. Pure CPU.
 *
 *   ag_pm_ev_load   reads and checks pm.json: its samples (window start and
 *                   end on the sampler's clock, one count per metric of
 *                   argus/pm_metrics.h), what was lost (hardware buffer
 *                   overflow, incomplete samples, gaps between windows),
 *                   and the sampler's clock against %globaltimer, fitted
 *                   on the calibration kernels as the activity trace's is
 *                   (ag_sys_clock_fit); with the activity trace beside it,
 *                   the kernels' spans (CUPTI's records, ag_sys_ev)
 *   ag_pm_join      the join, over plain arrays: for every window, the
 *                   share each region's occurrences covered, and per
 *                   region the windows it covered at least `threshold` of
 *                   with the counts summed over them
 *   ag_pm_signal    the `throughput` signal: a region timeline (a decoded
 *                   trace) placed on the sampler's windows, from the same
 *                   run or from another run of the same program version
 *                   (aligned launch by launch), joined, and the rates per
 *                   region (derived)
 */
#ifndef ARGUS_PM_H
#define ARGUS_PM_H

#include "argus/core.h"
#include "argus/pm_metrics.h"
#include "argus/synth.h"
#include "argus/system_ev.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A window counts for a region when the region covered at least this share
 * of it (docs/throughput.md, "The join"). */
#define AG_PM_THRESHOLD 0.8

/* ------------------------------------------------------------- the join */

/* One span of the region timeline on %globaltimer (ns): an occurrence of
 * region `region` in one warp; `warp` 1: the warp's whole life (the
 * kernel's root occurrence, entry to exit), which is what shares are of. */
typedef struct ag_pm_span {
  double t0, t1;
  int region;
  int warp;
} ag_pm_span;

typedef struct ag_pm_join_in {
  const double *w0, *w1; /* nwin windows on the sampler's clock, in order, not overlapping */
  size_t nwin;
  const double *values;  /* nwin x nmetrics counts (row per window), or NULL */
  int nmetrics;
  double offset_ns;      /* the sampler's clock minus %globaltimer */
  const ag_pm_span *spans;
  size_t nspans;
  int nregions;          /* spans' regions are 0..nregions-1 */
  double threshold;      /* in (0.5, 1]: a window counts for at most one of
                            two regions that do not nest */
} ag_pm_join_in;

typedef struct ag_pm_region_join {
  size_t windows;       /* windows it covered >= threshold of (its windows) */
  size_t touched;       /* windows it covered any of */
  double ns;            /* its windows' total length */
  double covered_mean;  /* the mean covered share over its windows */
  double covered_max;   /* the largest covered share of any window */
  double *sum;          /* nmetrics: the counts summed over its windows */
} ag_pm_region_join;

typedef struct ag_pm_join_out {
  size_t nwin;
  int nregions, nmetrics;
  /* per window: the share of it during which some warp was resident
   * (busy), and per region the share of it the region covered:
   * covered[w * nregions + r] = (the region's warp-time in w / all
   * resident warps' warp-time in w) x busy[w] */
  double *busy, *covered;
  ag_pm_region_join *regions; /* nregions */
  size_t idle_windows;  /* no warp of the timeline in them */
  size_t mixed_windows; /* busy, but no region other than a kernel's root
                           covered >= threshold of them */
} ag_pm_join_out;

/* The join. AG_EINVAL for windows out of order or overlapping, a span of a
 * region out of range or ending before it starts, or a threshold out of
 * (0.5, 1]; AG_ENOMEM. out is released by ag_pm_join_release. */
int ag_pm_join(const ag_pm_join_in *in, ag_pm_join_out *out);
void ag_pm_join_release(ag_pm_join_out *out);

/* ---------------------------------------------------------- evidence */

typedef struct ag_pm_sample {
  int64_t t0, t1;                 /* the window on the sampler's clock (ns) */
  double v[AG_PM_NMETRICS];
} ag_pm_sample;

typedef struct ag_pm_ev {
  json_t *root;
  const char *variant_id;         /* borrowed from root */
  int64_t pid;                    /* the harness process that sampled */
  const char *chip;
  const char *trigger;            /* "time": windows of interval_ns */
  uint64_t interval_ns;
  int sm_count;
  ag_pm_sample *samples;          /* by t0 */
  size_t nsamples;
  /* what was lost, never silently */
  uint64_t overflow;              /* decodes that reported a full hardware buffer */
  uint64_t incomplete;            /* samples populated but never completed */
  size_t gaps;                    /* windows that do not start where the last ended */
  double gap_ns;                  /* their total */
  /* the sampler's clock minus %globaltimer, fitted on the calibration
   * kernels (their spans as the samples show them: cal[i].other_*) */
  ag_clock_cal cal[4];
  int ncal_read, ncal;            /* calibrations in the file; seen by the samples */
  double offset_ns, error_ns;
  ag_sys_ev *sys;                 /* the activity trace beside it, or NULL */
} ag_pm_ev;

int ag_pm_ev_load(const char *path, ag_diags *diags, ag_pm_ev **out);
int ag_pm_ev_load_mem(const void *data, size_t len, const char *name, ag_diags *diags,
                      ag_pm_ev **out);
void ag_pm_ev_free(ag_pm_ev *e);

/* Where a calibration kernel (one thread on one SM, `span_ns` of
 * %globaltimer between its edges) lies on the sampler's clock: the first
 * (last = 0) or the last (last = 1) run of consecutive windows in which
 * some SM was active, if its length is the kernel's (within two windows
 * and 1 %); its start and end interpolated inside the edge windows by the
 * busiest SM's active share. 1 when found, else 0 (*start, *end 0). */
int ag_pm_calib_span(const ag_pm_sample *s, size_t n, int last, double span_ns,
                     int64_t *start, int64_t *end);

/* ------------------------------------------------------------ the signal */

typedef struct ag_pm_signal_in {
  const ag_pm_ev *pm;
  const ag_trace *trace;          /* the region timeline (decoded trace) */
  const char *pm_program;         /* the program version each belongs to; */
  const char *trace_program;      /* NULL: unknown */
  double threshold;               /* 0: AG_PM_THRESHOLD */
} ag_pm_signal_in;

/* The `throughput` signal (new reference): {"signal":"throughput","qual":
 * "derived","rule","threshold","alignment":{"mode":"same run"|"per launch",
 * "launches":[{"launch","trace_ns","pm_ns","stretch","shift_ns"}]},"clock":
 * {"offset_ns","error_ns","calibrations"},"interval_ns","windows",
 * "windows_joined","idle_windows","mixed_windows","overflow",
 * "incomplete_samples","gaps","gap_ns","regions":[{"region","windows",
 * "touched","covered_share","covered_max","ns","dram_read_GBps",
 * "dram_write_GBps","l2_GBps","sm_active_pct","tensor_active_pct",
 * "fma_ginst_per_s"}],"warnings":[...]}; rates only for regions with at
 * least one window. Refused (AG_EINVAL, a diagnostic naming both) when the
 * two program versions differ or cannot be told the same, or when a
 * timeline of another run cannot be aligned (no kernel records); AG_ENOMEM. */
int ag_pm_signal(const ag_pm_signal_in *in, ag_diags *d, json_t **out);
/* Its text: one line per region with windows, the rule, what was lost. */
int ag_pm_text(const json_t *signal, ag_str *out);

#ifdef __cplusplus
}
#endif
#endif
