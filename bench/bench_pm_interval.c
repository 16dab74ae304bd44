/*
 * bench_pm_interval.c — the finest PM-sampling interval the collector keeps
 * without loss on the H200 (issue 21: "sampled at the finest interval that
 * does not overflow on the H200 (measure it)"; docs/throughput.md).
 *
 * The user's build of the ground truth tests/data/cuda/pm_truth.cu (a DRAM
 * phase and a tensor/FMA phase of about 11 ms each, one launch, the
 * harness's own calibrations and copies around it: a run of about a
 * second) under ARGUS_COLLECT=pm at each interval, --runs times. Per run:
 * the samples kept, the hardware-buffer overflows, the gaps between
 * windows (records lost past a full counter-data image) and their share of
 * the sampled span, and the decode thread's host time per sample. Side by
 * side, the ratio of the rate the sampler produces (1e9 / interval) to the
 * rate the collector decoded: above 1 it falls behind, and the run keeps
 * what the hardware buffer absorbs.
 *
 * Goal: the default interval (AG_PMS_DEFAULT_INTERVAL_NS) loses nothing in
 * every run (no overflow, no gap, no incomplete sample). The finest interval
 * lossless in every run is printed.
 *
 *   bench_pm_interval [--runs N]
 * Exit 0: figures printed, goal met; 1: otherwise; 77: no GPU.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "argus/collect.h"
#include "argus/core.h"
#include "argus/pm.h"
#include "goal.h"
#include "hw_util.h"
#include "pmsamp.h"

#ifndef PM_CUBIN
#define PM_CUBIN "pm_truth.cubin"
#endif

static const unsigned long long intervals[] = {10000, 20000, 50000, 75000, 100000, 200000};
#define NI (sizeof intervals / sizeof *intervals)
#define MAXR 5

typedef struct fig {
  double samples, overflow, gaps, lost_share, incomplete, us_per_sample, decoded_per_s;
  int lossless;
} fig;

/* One harness process at `iv` ns; 0 ok, 77 no GPU, 1 failure. */
static int sample(unsigned long long iv, fig *f) {
  char dir[] = "/tmp/argus-bpmi-XXXXXX";
  if (!mkdtemp(dir))
    return 1;
  char envi[64];
  snprintf(envi, sizeof envi, "ARGUS_PM_INTERVAL=%llu", iv);
  const char *more[] = {envi, NULL};
  const char *args[] = {"--kernel", "pm_truth", "--n", "400000", NULL};
  ag_str out = AG_STR_INIT;
  ag_proc_result r;
  int rc = hw_run(dir, "pm", PM_CUBIN, PM_CUBIN, args, more, &out, &r);
  if (rc || !r.exited || r.exit_code) {
    fprintf(stderr, "bench_pm_interval: the harness failed at %llu ns:\n%s\n", iv,
            ag_str_cstr(&out));
    ag_str_release(&out);
    return 1;
  }
  ag_str_release(&out);
  char p[600];
  snprintf(p, sizeof p, "%s/pm.json", dir);
  ag_diags d;
  ag_diags_init(&d);
  ag_pm_ev *pm = NULL;
  json_error_t je;
  json_t *j = json_load_file(p, 0, &je);
  rc = ag_pm_ev_load(p, &d, &pm);
  ag_diags_release(&d);
  if (rc || !j) {
    fprintf(stderr, "bench_pm_interval: cannot read %s\n", p);
    json_decref(j);
    ag_pm_ev_free(pm);
    return 1;
  }
  const json_t *h = json_object_get(json_object_get(j, "pm"), "host_s");
  double host = json_number_value(json_object_get(h, "decode")) +
                json_number_value(json_object_get(h, "evaluate")) +
                json_number_value(json_object_get(h, "init"));
  double span = pm->nsamples ? (double)(pm->samples[pm->nsamples - 1].t1 - pm->samples[0].t0) : 0;
  f->samples = (double)pm->nsamples;
  f->overflow = (double)pm->overflow;
  f->gaps = (double)pm->gaps;
  f->incomplete = (double)pm->incomplete;
  f->lost_share = span > 0 ? 100.0 * pm->gap_ns / span : 0;
  f->us_per_sample = pm->nsamples ? 1e6 * host / (double)pm->nsamples : 0;
  f->decoded_per_s = host > 0 ? (double)pm->nsamples / host : 0;
  f->lossless = !pm->overflow && !pm->gaps && !pm->incomplete && pm->nsamples > 0;
  json_decref(j);
  ag_pm_ev_free(pm);
  return 0;
}

int main(int argc, char **argv) {
  int runs = 2;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--runs") && i + 1 < argc)
      runs = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_pm_interval [--runs N (1..%d)]\n", MAXR);
      return 2;
    }
  }
  if (runs < 1 || runs > MAXR) {
    fprintf(stderr, "bench_pm_interval: --runs must be 1..%d\n", MAXR);
    return 2;
  }
  ag_str why = AG_STR_INIT; /* no GPU (CI): skipped, not failed */
  if (ag_collect_gpu_probe(&why)) {
    printf("bench_pm_interval: skipped: %s\n", ag_str_cstr(&why));
    ag_str_release(&why);
    return 77;
  }
  ag_str_release(&why);
  fig f[NI][MAXR];
  memset(f, 0, sizeof f);
  printf("| interval | run | samples | overflow | gaps | lost share | incomplete | host us/sample "
         "| decoded/s | produced/decoded |\n|---|---|---|---|---|---|---|---|---|---|\n");
  unsigned long long finest = 0;
  int default_ok = 1;
  for (size_t i = 0; i < NI; i++) {
    int all = 1;
    for (int k = 0; k < runs; k++) {
      int rc = sample(intervals[i], &f[i][k]);
      if (rc)
        return rc;
      const fig *x = &f[i][k];
      double produced = 1e9 / (double)intervals[i];
      printf("| %llu us | %d | %.0f | %.0f | %.0f | %.1f %% | %.0f | %.1f | %.0f | %.2f |\n",
             intervals[i] / 1000, k + 1, x->samples, x->overflow, x->gaps, x->lost_share,
             x->incomplete, x->us_per_sample, x->decoded_per_s,
             x->decoded_per_s > 0 ? produced / x->decoded_per_s : 0);
      all &= x->lossless;
    }
    if (all && (!finest || intervals[i] < finest))
      finest = intervals[i];
    if (intervals[i] == AG_PMS_DEFAULT_INTERVAL_NS)
      default_ok = all;
  }
  printf("finest interval lossless in every run: %s%llu us\n", finest ? "" : "none (",
         finest / 1000);
  int met = bench_goal("pm-default-interval-lossless", default_ok ? 0 : 1, 0, 0,
                       "intervals with loss");
  return met ? 0 : 1;
}
