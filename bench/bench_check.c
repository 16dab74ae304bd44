/*
 * bench_check.c — how long `argus check` takes on the tile examples, on one
 * core: parse, interpret and prove (all assertions must be proved). Prints
 * the best and median of several runs, wall and CPU time. Goal (issue 8):
 * the flash-attention example checked in under 2 s of CPU (best run); its
 * line is printed (goal.h) and the benchmark exits 1 when it is not met or
 * an assertion is not proved. The gemm example states no goal.
 *
 *   bench_check [RUNS]      (ctest -L bench; ARGUS_SOURCE_DIR locates examples)
 */
#define _GNU_SOURCE
#include "argus/tile_check.h"
#include "goal.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int bench(const char *rel, int runs, double limit_cpu) {
  const char *src = getenv("ARGUS_SOURCE_DIR");
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", src ? src : ".", rel);
  double wall[32], cpu[32];
  int64_t instances = 0, queries = 0;
  for (int r = 0; r < runs; r++) {
    ag_diags d;
    ag_diags_init(&d);
    uint64_t w0 = ag_now_ns();
    double c0 = cpu_now();
    ag_tile_program *p = NULL;
    ag_tile_report *rep = NULL;
    int rc = ag_tile_parse_file(path, &d, &p);
    if (!rc)
      rc = ag_tile_check(p, NULL, &d, &rep);
    wall[r] = (double)(ag_now_ns() - w0) / 1e9;
    cpu[r] = cpu_now() - c0;
    if (rc || !ag_tile_report_ok(rep)) {
      fprintf(stderr, "%s: not proved (%s)\n", rel, ag_strerror(rc));
      return 1;
    }
    instances = 0;
    for (int i = 0; i < rep->nasserts; i++)
      instances += rep->asserts[i].instances;
    queries = rep->queries;
    ag_tile_report_free(rep);
    ag_tile_program_free(p);
    ag_diags_release(&d);
  }
  qsort(wall, (size_t)runs, sizeof wall[0], cmp_d);
  qsort(cpu, (size_t)runs, sizeof cpu[0], cmp_d);
  printf("%-32s %6lld assertion instances %4lld queries  cpu best %.3f s median %.3f s  "
         "wall best %.3f s median %.3f s\n",
         rel, (long long)instances, (long long)queries, cpu[0], cpu[runs / 2], wall[0],
         wall[runs / 2]);
  char goal[160];
  snprintf(goal, sizeof goal, "%.100s checked, CPU of the best run", rel);
  return limit_cpu > 0 && !bench_goal(goal, cpu[0], 1, limit_cpu, "s");
}

int main(int argc, char **argv) {
  int runs = argc > 1 ? atoi(argv[1]) : 5;
  if (runs < 1 || runs > 32)
    runs = 5;
  /* one core, as the target says */
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(0, &set);
  sched_setaffinity(0, sizeof set, &set);
  int bad = 0;
  bad |= bench("examples/tile/gemm.tile", runs, 0);
  bad |= bench("examples/tile/attention.tile", runs, 2.0);
  return bad;
}
