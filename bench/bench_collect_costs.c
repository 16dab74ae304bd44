/*
 * bench_collect_costs.c — what each hardware and system collection costs
 * over the trace-free timing run (ARGUS_COLLECT=time), on the paper's
 * collector kernel (tests/data/cuda/attrib_truth.cu `collector`: 128 CTAs x
 * 256 threads, 8 x 2,048 dependent FMAs), side by side in one run on the
 * H200 (issue 21, "Costs over the trace-free run"):
 *
 *   time       the trace-free timing run (the baseline)
 *   system     CUPTI activity (src/collect/activity.c), all kinds
 *   system-k   CUPTI activity, kernels only (ARGUS_ACTIVITY_KINDS=kernel)
 *   stalls     CUPTI PC sampling (src/collect/pcsamp.c), default period
 *   counters   CUPTI range profiler (src/collect/counters.c), the default
 *              metric set, auto range (kernel replay: serializes)
 *   pm         CUPTI PM sampling (src/collect/pmsamp.c) with the activity
 *              trace beside it
 *
 * Each sample is a harness process (tests/hw/hw_harness, 200 launches on
 * one stream), the configurations in rotating order. Per process: launch to
 * idle per launch (the launch loop and the synchronization: what the
 * application sees), the launch loop's host time per launch, the median
 * kernel time of its launches where the collection times them
 * (timing.json: time, system, pm; PC sampling and the range profiler time
 * no launch), and the whole process's wall time (the collection's
 * once-per-process costs: loading CUPTI, configuring, flushing, writing).
 * Figures: medians over the processes, the difference from the baseline and
 * the ratio to it.
 *
 * Goal (the only one the issue states): the activity trace <= 1 us per
 * launch (the paper: nsys +1.19 us), on launch to idle. A configuration
 * whose run fails is reported and fails the benchmark.
 *
 *   bench_collect_costs [--samples N] [--results FILE]
 * --results writes the table into FILE (bench/RESULTS.md) between the
 * "bench_collect_costs" markers (bench/goal.h). Exit 0: figures printed,
 * goal met; 1: otherwise; 77: no GPU.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "argus/collect.h"
#include "argus/core.h"
#include "goal.h"

#ifndef HW_HARNESS
#define HW_HARNESS "hw_harness"
#endif
#ifndef ATTRIB_TRUTH_CUBIN
#define ATTRIB_TRUTH_CUBIN "attrib_truth.cubin"
#endif
#define MAXS 16
#define LAUNCHES 200

typedef struct fig {
  double kern_ns, host_us, e2e_us, proc_ms;
} fig;

typedef struct cfg {
  const char *name, *mode, *kinds, *what;
  int timed; /* the collection writes timing.json */
} cfg;

#define NV 6
static const cfg cfgs[NV] = {
    {"time", "time", NULL, "trace-free timing run (baseline)", 1},
    {"system", "system", NULL, "CUPTI activity, all kinds", 1},
    {"system-k", "system", "kernel", "CUPTI activity, kernels only", 1},
    {"stalls", "stalls", NULL, "CUPTI PC sampling", 0},
    {"counters", "counters", NULL, "CUPTI range profiler, default metrics", 0},
    {"pm", "pm", NULL, "CUPTI PM sampling + activity", 1},
};

/* One process of configuration c; its figures; 77: no GPU. */
static int sample(const cfg *c, fig *f) {
  char dir[] = "/tmp/argus-bcc-XXXXXX";
  if (!mkdtemp(dir))
    return 1;
  char envc[64], envout[256], envvar[512], nl[16], envk[128];
  snprintf(envc, sizeof envc, "ARGUS_COLLECT=%s", c->mode);
  snprintf(envout, sizeof envout, "ARGUS_OUT=%s", dir);
  snprintf(envvar, sizeof envvar, "ARGUS_VARIANT=%s", ATTRIB_TRUTH_CUBIN);
  snprintf(nl, sizeof nl, "%d", LAUNCHES);
  snprintf(envk, sizeof envk, "ARGUS_ACTIVITY_KINDS=%s", c->kinds ? c->kinds : "");
  const char *env[] = {envc, envout, envvar, "ARGUS_VARIANT_ID=collector",
                       "ARGUS_TRACE_LAUNCHES=1024", c->kinds ? envk : NULL, NULL};
  const char *argv[] = {HW_HARNESS, "--module", ATTRIB_TRUTH_CUBIN, "--kernel", "collector",
                        "--blocks", "128", "--threads", "256", "--launches", nl, NULL};
  ag_str out = AG_STR_INIT;
  ag_proc_result pr;
  ag_proc_opts o = {.argv = argv, .env_add = env, .capture_out = &out, .timeout_s = 300};
  double t0 = bench_now_ms();
  int rc = ag_proc_run(&o, &pr);
  f->proc_ms = bench_now_ms() - t0;
  if (rc || !pr.exited || pr.exit_code) {
    rc = pr.exited && pr.exit_code == 77 ? 77 : 1;
    char p[512], *why = NULL;
    size_t n = 0;
    snprintf(p, sizeof p, "%s/host-error.txt", dir);
    ag_file_read(p, &why, &n);
    fprintf(stderr, "bench_collect_costs: the %s run failed: %s%s\n", c->name,
            ag_str_cstr(&out), why ? why : "");
    ag_free(why);
    ag_str_release(&out);
    return rc;
  }
  const char *h = strstr(ag_str_cstr(&out), "host_us_per_launch ");
  const char *e = strstr(ag_str_cstr(&out), "e2e_us_per_launch ");
  f->host_us = h ? atof(h + 19) : NAN;
  f->e2e_us = e ? atof(e + 18) : NAN;
  ag_str_release(&out);
  f->kern_ns = NAN;
  if (!c->timed)
    return 0;
  char p[512];
  snprintf(p, sizeof p, "%s/timing.json", dir);
  json_error_t je;
  json_t *j = json_load_file(p, 0, &je), *l;
  size_t i;
  double ns[LAUNCHES];
  int n = 0;
  json_array_foreach(json_object_get(j, "launches"), i, l) if (n < LAUNCHES) ns[n++] =
      json_real_value(json_object_get(l, "ns"));
  json_decref(j);
  f->kern_ns = n ? bench_median(ns, n) : NAN;
  if (n != LAUNCHES)
    fprintf(stderr, "bench_collect_costs: the %s run timed %d of %d launches\n", c->name, n,
            LAUNCHES);
  return n == LAUNCHES ? 0 : 1;
}

/* "+1.234 us (x1.03)" against the baseline b; "n/a" when not measured */
static void delta(ag_str *o, double v, double b, const char *unit, double scale, int prec) {
  if (!isfinite(v) || !isfinite(b)) {
    ag_str_puts(o, "n/a");
    return;
  }
  ag_str_printf(o, "%.*f %s (%+.*f, x%.3f)", prec, v * scale, unit, prec, (v - b) * scale,
                b != 0 ? v / b : NAN);
}

int main(int argc, char **argv) {
  int S = 4;
  const char *results = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--samples") && i + 1 < argc)
      S = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--results") && i + 1 < argc)
      results = argv[++i];
    else {
      fprintf(stderr, "usage: bench_collect_costs [--samples N] [--results FILE]\n");
      return 2;
    }
  }
  if (S < 1 || S > MAXS) {
    fprintf(stderr, "bench_collect_costs: --samples %d: expected 1 to %d\n", S, MAXS);
    return 2;
  }
  ag_str why = AG_STR_INIT; /* no GPU (CI): skipped, not failed */
  if (ag_collect_gpu_probe(&why)) {
    printf("bench_collect_costs: skipped: %s\n", ag_str_cstr(&why));
    ag_str_release(&why);
    return 77;
  }
  ag_str_release(&why);
  double k[NV][MAXS], h[NV][MAXS], e[NV][MAXS], w[NV][MAXS];
  double mk[NV], mh[NV], me[NV], mw[NV];
  int failed[NV] = {0}, any_failed = 0;
  for (int s = 0; s < S; s++)
    for (int r = 0; r < NV; r++) {
      int v = (r + s) % NV; /* rotating order */
      fig f = {NAN, NAN, NAN, NAN};
      int rc = failed[v] ? 1 : sample(&cfgs[v], &f);
      if (rc == 77)
        return 77;
      if (rc)
        failed[v] = any_failed = 1;
      k[v][s] = f.kern_ns, h[v][s] = f.host_us, e[v][s] = f.e2e_us, w[v][s] = f.proc_ms;
    }
  ag_str t = AG_STR_INIT;
  ag_str_printf(&t, "bench/bench_collect_costs.c on the paper's collector kernel "
                    "(tests/data/cuda/attrib_truth.cu `collector`, 128 CTAs x 256 threads), "
                    "%d launches per harness process, %d processes per configuration in "
                    "rotating order, side by side in one run; medians over the processes "
                    "(difference from the trace-free run, ratio to it).\n\n",
                LAUNCHES, S);
  ag_str_puts(&t, "| configuration | kernel per launch | host launch per launch | launch to "
                  "idle per launch | harness process |\n|---|---|---|---|---|\n");
  for (int v = 0; v < NV; v++) {
    mk[v] = bench_median(k[v], S), mh[v] = bench_median(h[v], S);
    me[v] = bench_median(e[v], S), mw[v] = bench_median(w[v], S);
    ag_str_printf(&t, "| %s (%s) | ", cfgs[v].name, cfgs[v].what);
    if (failed[v]) {
      ag_str_puts(&t, "run failed | | | |\n");
      continue;
    }
    if (!cfgs[v].timed)
      ag_str_puts(&t, "not timed by this collection");
    else
      delta(&t, mk[v], mk[0], "ns", 1, 0);
    ag_str_puts(&t, " | ");
    delta(&t, mh[v], mh[0], "us", 1, 3);
    ag_str_puts(&t, " | ");
    delta(&t, me[v], me[0], "us", 1, 3);
    ag_str_puts(&t, " | ");
    delta(&t, mw[v], mw[0], "ms", 1, 0);
    ag_str_puts(&t, " |\n");
  }
  /* the goal: what the application sees per launch (launch to idle) */
  char line[512];
  double act = failed[0] || failed[1] ? NAN : me[1] - me[0];
  (void)bench_goal_line(line, sizeof line, "activity trace cost per launch (launch to idle)",
                            act, 0, 1.0, "us");
  ag_str_printf(&t, "\n%s (the paper: nsys +1.19 us). The other collections have no goal in "
                    "the issue: their figures are what they cost.%s\n",
                line, any_failed ? " Some configuration's run FAILED (stderr says why)." : "");
  fputs(ag_str_cstr(&t), stdout);
  int rc = bench_goal("activity trace cost per launch (launch to idle)", act, 0, 1.0, "us") &&
                   !any_failed
               ? 0
               : 1;
  if (results && bench_results_section(results, "bench_collect_costs", ag_str_cstr(&t)))
    rc = 1;
  ag_str_release(&t);
  return rc;
}
