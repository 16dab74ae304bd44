/* bench_plan.c — planning plus scheduling a 1,000-task DAG of no-op tasks
 * (issue 5's figure; goal: under 50 ms). The DAG is layered: 50 layers of
 * 20 tasks, each task depending on 3 tasks of the layer before, plus a
 * Control task at the root. Prints the median and max of N repetitions and
 * the goal's line (goal.h); exits 1 when a run fails or the goal is not met.
 * usage: bench_plan [reps] [tasks] */
#include "argus/run.h"
#include "goal.h"

#include <stdlib.h>
#include <string.h>

static int noop(ag_exec_ctx *cx, ag_task *t) { return 0; }

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 21;
  int ntasks = argc > 2 ? atoi(argv[2]) : 1000;
  if (reps < 1 || ntasks < 40) {
    fprintf(stderr, "usage: bench_plan [reps>=1] [tasks>=40]\n");
    return 2;
  }
  const int width = 20;
  double *plan_ms = calloc((size_t)reps, sizeof(double));
  double *run_ms = calloc((size_t)reps, sizeof(double));
  double *tot_ms = calloc((size_t)reps, sizeof(double));
  static const ag_executor execs[] = {{"*", noop}};
  for (int r = 0; r < reps; r++) {
    uint64_t t0 = ag_now_ns();
    const char *sigs[] = {"static"};
    ag_query q = {.region = "k", .signals = sigs, .nsignals = 1};
    ag_plan *p = NULL;
    if (ag_plan_build(&q, "prog", NULL, &p))
      return 1;
    int prev[20], cur[20];
    int made = (int)p->tasks.n;
    for (int layer = 0; made < ntasks; layer++) {
      for (int k = 0; k < width && made < ntasks; k++, made++) {
        int deps[3];
        int nd = 0;
        if (layer)
          for (int j = 0; j < 3; j++)
            deps[nd++] = prev[(k + j * 7) % width];
        ag_task *t = ag_plan_add(p, AG_TASK_TRANSFORM, "noop", NULL, NULL, NULL,
                                 json_pack("{s:i,s:i}", "layer", layer, "k", k), deps, nd);
        if (!t)
          return 1;
        cur[k] = t->id;
      }
      memcpy(prev, cur, sizeof cur);
    }
    ag_plan_partition(p);
    uint64_t t1 = ag_now_ns();
    ag_run_opts o = {.cpu_workers = 2, .execs = execs, .nexecs = 1};
    ag_run_stats st;
    if (ag_run_plan(p, &o, &st) || st.ok != (int)p->tasks.n) {
      fprintf(stderr, "bench_plan: %d of %d tasks ok\n", st.ok, (int)p->tasks.n);
      return 1;
    }
    uint64_t t2 = ag_now_ns();
    plan_ms[r] = (double)(t1 - t0) / 1e6;
    run_ms[r] = (double)(t2 - t1) / 1e6;
    tot_ms[r] = (double)(t2 - t0) / 1e6;
    ag_plan_free(p);
  }
  qsort(plan_ms, (size_t)reps, sizeof(double), cmp_d);
  qsort(run_ms, (size_t)reps, sizeof(double), cmp_d);
  qsort(tot_ms, (size_t)reps, sizeof(double), cmp_d);
  printf("tasks %d, reps %d, 2 CPU workers\n", ntasks, reps);
  printf("plan      median %.2f ms\n", plan_ms[reps / 2]);
  printf("schedule  median %.2f ms\n", run_ms[reps / 2]);
  printf("total     median %.2f ms  max %.2f ms\n", tot_ms[reps / 2], tot_ms[reps - 1]);
  char name[96];
  snprintf(name, sizeof name, "plan + schedule of %d tasks, median", ntasks);
  int ok = bench_goal(name, tot_ms[reps / 2], 1, 50.0, "ms");
  free(plan_ms);
  free(run_ms);
  free(tot_ms);
  return ok ? 0 : 1;
}
