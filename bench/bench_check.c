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
#include <unistd.h>
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

/* One configuration of a check: a file, a const parameter made symbolic
 * (--symbolic) or set (--set), or neither. */
typedef struct cfg {
  const char *rel, *sym, *set;
} cfg;

static int check_once(const cfg *k, double *wall, double *cpu, int64_t *instances,
                      int64_t *queries, int *nloops) {
  const char *src = getenv("ARGUS_SOURCE_DIR");
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", src ? src : ".", k->rel);
  ag_tile_check_opts o;
  memset(&o, 0, sizeof o);
  const char *syms[1] = {k->sym}, *defs[1] = {k->set};
  if (k->sym) {
    o.symbolic = syms;
    o.nsymbolic = 1;
  }
  if (k->set) {
    o.defines = defs;
    o.ndefines = 1;
  }
  ag_diags d;
  ag_diags_init(&d);
  uint64_t w0 = ag_now_ns();
  double c0 = cpu_now();
  ag_tile_program *p = NULL;
  ag_tile_report *rep = NULL;
  int rc = ag_tile_parse_file(path, &d, &p);
  if (!rc)
    rc = ag_tile_check(p, &o, &d, &rep);
  *wall = (double)(ag_now_ns() - w0) / 1e9;
  *cpu = cpu_now() - c0;
  int ok = !rc && ag_tile_report_ok(rep);
  if (!ok)
    fprintf(stderr, "%s: not proved (%s)\n", k->rel, ag_strerror(rc));
  *instances = 0;
  for (int i = 0; rep && i < rep->nasserts; i++)
    *instances += rep->asserts[i].instances;
  *queries = rep ? rep->queries : 0;
  *nloops = rep ? rep->nloops : 0;
  ag_tile_report_free(rep);
  ag_tile_program_free(p);
  ag_diags_release(&d);
  return ok ? 0 : 1;
}

/* The peak resident set of one check, in a fresh process (this program
 * again, `bench_check --one FILE SYM SET`, which prints its VmHWM), in MiB,
 * or -1. */
static double peak_mib(const cfg *k) {
  char exe[1024], cmd[2048];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0)
    return -1;
  exe[n] = 0;
  snprintf(cmd, sizeof cmd, "'%s' --one '%s' '%s' '%s'", exe, k->rel, k->sym ? k->sym : "-",
           k->set ? k->set : "-");
  fflush(stdout);
  FILE *f = popen(cmd, "r");
  if (!f)
    return -1;
  long kb = -1;
  if (fscanf(f, "peak_kb %ld", &kb) != 1)
    kb = -1;
  return pclose(f) == 0 && kb > 0 ? (double)kb / 1024.0 : -1;
}

/* VmHWM of this process, in kB (-1: unknown). */
static long hwm_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmHWM:", 6))
      kb = strtol(line + 6, NULL, 10);
  if (f)
    fclose(f);
  return kb;
}

/* Best CPU time of `runs` checks (-1: not proved); prints one line. */
static double bench(const cfg *k, int runs) {
  double wall[32], cpu[32];
  int64_t instances = 0, queries = 0;
  int nloops = 0;
  for (int r = 0; r < runs; r++)
    if (check_once(k, &wall[r], &cpu[r], &instances, &queries, &nloops))
      return -1;
  qsort(wall, (size_t)runs, sizeof wall[0], cmp_d);
  qsort(cpu, (size_t)runs, sizeof cpu[0], cmp_d);
  char name[160];
  snprintf(name, sizeof name, "%s%s%s%s%s", k->rel, k->sym ? " --symbolic " : "",
           k->sym ? k->sym : "", k->set ? " --set " : "", k->set ? k->set : "");
  printf("%-52s %6lld instances %4lld queries %d summarized  cpu best %.3f s median %.3f s  "
         "wall best %.3f s  peak %.0f MiB\n",
         name, (long long)instances, (long long)queries, nloops, cpu[0], cpu[runs / 2], wall[0],
         peak_mib(k));
  return cpu[0];
}

/* A goal on a check's best CPU time (a check not proved fails its goal). */
static int goal_under(const cfg *k, double cpu, double limit) {
  char goal[200];
  snprintf(goal, sizeof goal, "%.60s%s%.20s%s%.20s proved, CPU of the best run", k->rel,
           k->sym ? " --symbolic " : "", k->sym ? k->sym : "", k->set ? " --set " : "",
           k->set ? k->set : "");
  return cpu >= 0 && bench_goal(goal, cpu, 0, limit, "s");
}

/* "At the size it would run, no slower than at the small size." */
static int goal_no_slower(const cfg *big, double cbig, const cfg *small, double csmall) {
  char goal[200];
  snprintf(goal, sizeof goal, "%.40s --set %.20s no slower than --set %.20s (CPU ratio)",
           big->rel, big->set, small->set);
  return cbig >= 0 && csmall > 0 && bench_goal(goal, cbig / csmall, 0, 1.0, "x");
}

int main(int argc, char **argv) {
  if (argc == 5 && !strcmp(argv[1], "--one")) {
    cfg k = {argv[2], strcmp(argv[3], "-") ? argv[3] : NULL, strcmp(argv[4], "-") ? argv[4] : NULL};
    double w, c;
    int64_t i, q;
    int nl;
    int bad = check_once(&k, &w, &c, &i, &q, &nl);
    printf("peak_kb %ld\n", hwm_kb());
    return bad;
  }
  int runs = argc > 1 ? atoi(argv[1]) : 5;
  if (runs < 1 || runs > 32)
    runs = 5;
  /* one core, as the target says */
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(0, &set);
  sched_setaffinity(0, sizeof set, &set);
  int bad = 0;
  static const cfg gemm = {"examples/tile/gemm.tile", NULL, NULL},
                   attn = {"examples/tile/attention.tile", NULL, NULL},
                   gemm_sym = {"examples/tile/gemm.tile", "K", NULL},
                   attn_sym = {"examples/tile/attention.tile", "skv", NULL},
                   gemm_128 = {"examples/tile/gemm.tile", NULL, "K=128"},
                   gemm_8192 = {"examples/tile/gemm.tile", NULL, "K=8192"},
                   attn_64 = {"examples/tile/attention.tile", NULL, "skv=64"},
                   attn_16k = {"examples/tile/attention.tile", NULL, "skv=16384"};
  bad |= bench(&gemm, runs) < 0;
  bad |= !goal_under(&attn, bench(&attn, runs), 2.0);
  /* issue 18: symbolic sizes (M, N and K; the sequence length) */
  bad |= !goal_under(&gemm_sym, bench(&gemm_sym, runs), 2.0);
  bad |= !goal_under(&attn_sym, bench(&attn_sym, runs), 2.0);
  /* the sizes kernels run at, against the examples' */
  double c128 = bench(&gemm_128, runs), c8192 = bench(&gemm_8192, runs);
  bad |= !goal_no_slower(&gemm_8192, c8192, &gemm_128, c128);
  double c64 = bench(&attn_64, runs), c16k = bench(&attn_16k, runs);
  bad |= !goal_no_slower(&attn_16k, c16k, &attn_64, c64);
  return bad;
}
