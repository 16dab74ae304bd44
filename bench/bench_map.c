/*
 * bench_map.c — what the mapping run adds to a launch (issue 19, "Figures";
 * docs/attribution.md), side by side in one run on the GPU, on the paper's
 * collector kernel (tests/data/cuda/attrib_truth.cu `collector`: 128 CTAs x
 * 256 threads, 8 occurrences of 2,048 dependent FMAs).
 *
 * Two builds of the same PTX (nvcc -ptx, markers on), both loaded as PTX
 * (the driver JIT-compiles both the same way):
 *   marker   the PTX itself: the marker-only build, no counters
 *   mapping  its mapping variant (ag_variant_make, AG_VARIANT_MAPPING): a
 *            warp-level red.global.add.u64 per unit execution, the counter
 *            slots bound by libargus_host (src/collect/map_bind.c)
 * Each sample is one process of tests/sassm/attrib_truth_harness.c
 * (--kernel collector; it checks the result bit for bit) under
 * ARGUS_COLLECT=time with ARGUS_VARIANT = the build, as a Collect task runs
 * it, in alternating order; the kernel time is timing.json's (events around
 * the launch, queued behind the host's gate: no submission gap). Checked:
 * every mapping run writes map_counts.json with nothing dropped and the
 * same counts, at least the 8 occurrences of each of the 1,024 warps; no
 * marker run writes one. Printed: the medians, the added time per launch
 * (difference of medians, and the median of the paired differences), the
 * processes' wall times.
 *
 * Goal (issue 19): added time per launch <= 1 ms by the difference of
 * medians (the paper's NVBit mapping added 109.4 ms).
 *
 *   bench_map [--samples N] [--ptx FILE]
 * Exit 0: figures printed, checks passed, goal met; 1: otherwise; 77: no GPU.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "argus/collect.h"
#include "argus/core.h"
#include "argus/variant.h"
#include "goal.h"

#ifndef ATTRIB_TRUTH_HARNESS
#define ATTRIB_TRUTH_HARNESS "attrib_truth_harness"
#endif
#ifndef ATTRIB_TRUTH_PTX
#define ATTRIB_TRUTH_PTX "attrib_truth.ptx"
#endif
#define MAXS 64
#define WARPS (128 * 256 / 32)


/* The JSON file dir/name, or NULL (and the reason on stderr when must). */
static json_t *load(const char *dir, const char *name, int must) {
  char p[1200];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  json_error_t je;
  json_t *j = json_load_file(p, 0, &je);
  if (!j && must)
    fprintf(stderr, "check: %s: %s\n", p, je.text);
  return j;
}

/* One harness process on build `variant` (ARGUS_COLLECT=time) into a fresh
 * directory: its kernel ns, its wall ms and, for a mapping build, the sum
 * of its counts. 0 when it ran and passed its checks. */
static int sample(const char *ptx, const char *variant, int mapping, double *ns, double *wall,
                  unsigned long long *counted) {
  char dir[] = "/tmp/argus-bmap-XXXXXX", eo[1200], ev[1200];
  if (!mkdtemp(dir))
    return -1;
  snprintf(eo, sizeof eo, "ARGUS_OUT=%s", dir);
  snprintf(ev, sizeof ev, "ARGUS_VARIANT=%s", variant);
  const char *env[] = {"ARGUS_COLLECT=time", eo, ev,
                       mapping ? "ARGUS_VARIANT_ID=collector-mapping"
                               : "ARGUS_VARIANT_ID=collector-marker",
                       NULL};
  const char *argv[] = {ATTRIB_TRUTH_HARNESS, "--kernel", "collector", "--blocks", "128",
                        "--threads", "256", "--module", ptx, NULL};
  ag_str out = {0};
  ag_proc_result res;
  ag_proc_opts o = {.argv = argv, .env_add = env, .capture_out = &out, .timeout_s = 120};
  double t0 = bench_now_ms();
  int rc = ag_proc_run(&o, &res);
  *wall = bench_now_ms() - t0;
  if (rc || !res.exited || res.exit_code) {
    fprintf(stderr, "check: the %s harness failed (exit %d): %s\n", mapping ? "mapping" : "marker",
            res.exited ? res.exit_code : -1, out.p ? out.p : "");
    ag_str_release(&out);
    return res.exited && res.exit_code == 77 ? 77 : -1;
  }
  ag_str_release(&out);
  json_t *t = load(dir, "timing.json", 1), *m = load(dir, "map_counts.json", 0);
  json_t *l = json_array_get(json_object_get(t, "launches"), 0);
  *ns = json_number_value(json_object_get(l, "ns"));
  rc = 0;
  if (!l || !(*ns > 0)) {
    fprintf(stderr, "check: %s/timing.json has no timed launch\n", dir);
    rc = -1;
  }
  *counted = 0;
  if (mapping && !m) {
    fprintf(stderr, "check: the mapping run wrote no %s/map_counts.json\n", dir);
    rc = -1;
  } else if (!mapping && m) {
    fprintf(stderr, "check: the marker-only run wrote %s/map_counts.json\n", dir);
    rc = -1;
  } else if (m) {
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(m, "counts"), i, c) {
      if (i) /* slot 0 counts what was dropped */
        *counted += (unsigned long long)json_integer_value(c);
    }
    json_int_t dropped = json_integer_value(json_object_get(m, "dropped"));
    if (dropped) {
      fprintf(stderr, "check: the mapping run dropped %lld executions\n", (long long)dropped);
      rc = -1;
    }
  }
  json_decref(t);
  json_decref(m);
  return rc;
}

int main(int argc, char **argv) {
  int n = 7;
  const char *ptx = ATTRIB_TRUTH_PTX;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--samples") && i + 1 < argc)
      n = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--ptx") && i + 1 < argc)
      ptx = argv[++i];
    else {
      fprintf(stderr, "usage: bench_map [--samples N] [--ptx FILE]\n");
      return 1;
    }
  }
  if (n < 1 || n > MAXS) {
    fprintf(stderr, "bench_map: --samples must be 1 to %d\n", MAXS);
    return 1;
  }
  ag_str why = {0};
  if (ag_collect_gpu_probe(&why)) {
    printf("bench_map: no GPU: %s\n", why.p ? why.p : "?");
    ag_str_release(&why);
    return 77;
  }
  ag_str_release(&why);
  char *text = NULL;
  size_t len = 0;
  if (ag_file_read(ptx, &text, &len)) {
    fprintf(stderr, "bench_map: cannot read '%s' (build the target ptx_attrib_truth)\n", ptx);
    return 1;
  }
  ag_diags d;
  ag_diags_init(&d);
  ag_variant_opts vo = {AG_VARIANT_MAPPING, NULL, 0, 0};
  ag_variant *v = NULL;
  char dir[] = "/tmp/argus-bmapv-XXXXXX", vpath[1200];
  if (ag_variant_make(text, len, ptx, &vo, &d, &v) || !mkdtemp(dir)) {
    ag_str msg = {0};
    ag_diags_format(&d, &msg);
    fprintf(stderr, "bench_map: the mapping variant of '%s': %s\n", ptx, msg.p ? msg.p : "?");
    return 1;
  }
  snprintf(vpath, sizeof vpath, "%s/collector.map.ptx", dir);
  if (ag_file_write_atomic(vpath, v->ptx, v->len)) {
    fprintf(stderr, "bench_map: cannot write '%s'\n", vpath);
    return 1;
  }
  double mk[MAXS], mp[MAXS], dd[MAXS], wk[MAXS], wp[MAXS];
  unsigned long long first = 0, c = 0, none;
  for (int i = 0; i < n; i++) {
    int rc = 0;
    for (int h = 0; h < 2 && !rc; h++) /* alternating order */
      rc = (h == i % 2) ? sample(ptx, ptx, 0, &mk[i], &wk[i], &none)
                        : sample(ptx, vpath, 1, &mp[i], &wp[i], &c);
    if (rc)
      return rc == 77 ? 77 : 1;
    if (i && c != first) {
      fprintf(stderr, "check: mapping run %d counted %llu unit executions, the first %llu\n", i,
              c, first);
      return 1;
    }
    first = c;
    dd[i] = mp[i] - mk[i];
  }
  if (first < (unsigned long long)WARPS * 8) {
    fprintf(stderr, "check: %llu unit executions, fewer than 8 occurrences x %d warps\n", first,
            WARPS);
    return 1;
  }
  double k = bench_median(mk, n) / 1e3, p = bench_median(mp, n) / 1e3, paired = bench_median(dd, n) / 1e3;
  printf("bench_map: collector kernel, 128 x 256 threads, %d samples each (one process each, "
         "ARGUS_COLLECT=time)\n", n);
  printf("  marker-only build   %10.2f us per launch (median)\n", k);
  printf("  mapping variant     %10.2f us per launch (median): %llu unit executions "
         "counted, 0 dropped\n", p, first);
  printf("  added per launch    %10.2f us (difference of medians), %.2f us (paired median)\n",
         p - k, paired);
  printf("  harness process     %10.1f ms marker-only, %.1f ms mapping (wall, medians)\n",
         bench_median(wk, n), bench_median(wp, n));
  int met = bench_goal("mapping run: added time per launch (collector kernel)", (p - k) / 1e3, 0,
                       1.0, "ms");
  ag_variant_free(v);
  ag_diags_release(&d);
  ag_free(text);
  return met ? 0 : 1;
}
