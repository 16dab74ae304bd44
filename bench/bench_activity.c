/*
 * bench_activity.c — what the activity trace (ARGUS_COLLECT=system,
 * src/collect/activity.c) costs per launch over the trace-free timing run
 * (ARGUS_COLLECT=time), on the paper's collector kernel
 * (tests/data/cuda/attrib_truth.cu `collector`: 128 CTAs x 256 threads,
 * 8 x 2,048 dependent FMAs), side by side in one run on the H200.
 *
 * Each sample is a harness process (tests/hw/hw_harness, 200 launches on
 * one stream), rotating time / system / system with kernels only
 * (ARGUS_ACTIVITY_KINDS=kernel). Per process: the median kernel time of its
 * launches (timing.json, events on the stream), the launch loop's host time
 * per launch, and launch to idle (the loop and the synchronization) per
 * launch. The cost per launch is the difference of the medians over the
 * processes, for each clock.
 *
 * Goal (issue 21): <= 1 us per launch (the paper: nsys +1.19 us), on the
 * launch-to-idle difference (what the application sees).
 *
 *   bench_activity [--samples N]
 * Exit 0: figures printed, goal met; 1: otherwise; 77: no GPU.
 */
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

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n ? (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2])) : 0;
}

typedef struct fig {
  double kern_ns, host_us, e2e_us;
} fig;

/* One process (`kinds`: ARGUS_ACTIVITY_KINDS or NULL); its figures; 77: no GPU. */
static int sample(const char *mode, const char *kinds, fig *f) {
  char dir[] = "/tmp/argus-bact-XXXXXX";
  if (!mkdtemp(dir))
    return 1;
  char envc[64], envout[256], envvar[512], nl[16];
  snprintf(envc, sizeof envc, "ARGUS_COLLECT=%s", mode);
  snprintf(envout, sizeof envout, "ARGUS_OUT=%s", dir);
  snprintf(envvar, sizeof envvar, "ARGUS_VARIANT=%s", ATTRIB_TRUTH_CUBIN);
  snprintf(nl, sizeof nl, "%d", LAUNCHES);
  char envk[128];
  snprintf(envk, sizeof envk, "ARGUS_ACTIVITY_KINDS=%s", kinds ? kinds : "");
  const char *env[] = {envc, envout, envvar, "ARGUS_VARIANT_ID=collector",
                       "ARGUS_TRACE_LAUNCHES=1024", kinds ? envk : NULL, NULL};
  const char *argv[] = {HW_HARNESS, "--module", ATTRIB_TRUTH_CUBIN, "--kernel", "collector",
                        "--blocks", "128", "--threads", "256", "--launches", nl, NULL};
  ag_str out = AG_STR_INIT;
  ag_proc_result pr;
  ag_proc_opts o = {.argv = argv, .env_add = env, .capture_out = &out, .timeout_s = 120};
  if (ag_proc_run(&o, &pr) || !pr.exited || pr.exit_code) {
    int rc = pr.exited && pr.exit_code == 77 ? 77 : 1;
    fprintf(stderr, "bench_activity: %s run failed: %s\n", mode, ag_str_cstr(&out));
    ag_str_release(&out);
    return rc;
  }
  const char *h = strstr(ag_str_cstr(&out), "host_us_per_launch ");
  const char *e = strstr(ag_str_cstr(&out), "e2e_us_per_launch ");
  f->host_us = h ? atof(h + 19) : -1;
  f->e2e_us = e ? atof(e + 18) : -1;
  ag_str_release(&out);
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
  f->kern_ns = median(ns, n);
  return n == LAUNCHES ? 0 : 1;
}

#define NV 3
static const char *const vmode[NV] = {"time", "system", "system"};
static const char *const vkinds[NV] = {NULL, NULL, "kernel"};
static const char *const vname[NV] = {"time (trace-free)", "system (all kinds)",
                                      "system (kernels only)"};

int main(int argc, char **argv) {
  int S = 6;
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--samples") && i + 1 < argc)
      S = atoi(argv[++i]);
  if (S < 1 || S > MAXS)
    S = 6;
  ag_str why = AG_STR_INIT; /* no GPU (CI): skipped, not failed */
  if (ag_collect_gpu_probe(&why)) {
    printf("bench_activity: skipped: %s\n", ag_str_cstr(&why));
    ag_str_release(&why);
    return 77;
  }
  ag_str_release(&why);
  double k[NV][MAXS], h[NV][MAXS], e[NV][MAXS], mk[NV], mh[NV], me[NV];
  for (int s = 0; s < S; s++)
    for (int w = 0; w < NV; w++) {
      int v = (w + s) % NV; /* rotating order */
      fig f;
      int rc = sample(vmode[v], vkinds[v], &f);
      if (rc)
        return rc;
      k[v][s] = f.kern_ns, h[v][s] = f.host_us, e[v][s] = f.e2e_us;
    }
  printf("device: the paper's collector kernel, 128 CTAs x 256 threads, %d launches per "
         "process, %d processes each, rotating order\n", LAUNCHES, S);
  for (int v = 0; v < NV; v++) {
    mk[v] = median(k[v], S), mh[v] = median(h[v], S), me[v] = median(e[v], S);
    printf("%-22s kernel %.0f ns, host launch %.3f us, launch to idle %.3f us per launch",
           vname[v], mk[v], mh[v], me[v]);
    if (v)
      printf(" (+%.0f ns, %+.3f us, %+.3f us)", mk[v] - mk[0], mh[v] - mh[0], me[v] - me[0]);
    printf("\n");
  }
  printf("checks: every run's results matched\n");
  /* the goal: what the application sees per launch (launch to idle) */
  return bench_goal("activity trace cost per launch (launch to idle)", me[1] - me[0], 0, 1.0,
                    "us") ? 0 : 1;
}
