/*
 * goal.h — a benchmark's verdict on a goal it states, one uniform line each:
 *
 *   goal: <name>: met (<figure> <unit>, goal <= <limit> <unit>)
 *   goal: <name>: NOT met (<figure> <unit>, goal <= <limit> <unit>)
 *
 * A benchmark that states a goal prints its line through bench_goal() and
 * exits non-zero when any goal is not met; one that prints no such line
 * states no goal. scripts/gpu/run.sh lists every "NOT met" line in the GPU
 * suite's summary. The verdict functions are pure and have a CPU unit test
 * (tests/unit/test_bench_goal.c), so a benchmark that only runs on the GPU
 * still has its verdict tested.
 */
#ifndef ARGUS_BENCH_GOAL_H
#define ARGUS_BENCH_GOAL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CPU time of the calling thread in ns: the clock the CPU benchmarks' goals
 * ("on one core") are measured on; the machine is shared, and wall time
 * would count the other processes' turns too. */
static inline uint64_t bench_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* 1 when value meets "value < limit" (strict) or "value <= limit". A NaN
 * never meets a goal. */
/* Wall clock in ms (CLOCK_MONOTONIC): the GPU benchmarks' process and run
 * timings. */
static inline double bench_now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static inline int bench_cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of v[0..n) (1 <= n <= 256; v is left as it is). */
static inline double bench_median(const double *v0, int n) {
  double v[256];
  if (n < 1 || n > 256)
    return 0;
  memcpy(v, v0, sizeof(double) * (size_t)n);
  qsort(v, (size_t)n, sizeof *v, bench_cmp_dbl);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static inline int bench_goal_met(double value, double limit, int strict) {
  return strict ? value < limit : value <= limit;
}

/* Formats the goal line (no newline) into buf and returns 1 when met. */
static inline int bench_goal_line(char *buf, size_t n, const char *name, double value,
                                  int strict, double limit, const char *unit) {
  int met = bench_goal_met(value, limit, strict);
  snprintf(buf, n, "goal: %.200s: %s (%.4g %.40s, goal %s %.4g %.40s)", name, met ? "met" : "NOT met", value,
           unit, strict ? "<" : "<=", limit, unit);
  return met;
}

/* Prints the goal line on stdout; returns 1 when met. With
 * ARGUS_BENCH_REPORT_ONLY set (ctest sets it for the CPU benchmarks, whose
 * times on the shared 2-core CI machine move with its load) the line says
 * so and the goal does not fail the run; run the benchmark itself to
 * enforce it (docs/testing.md). */
static inline int bench_goal(const char *name, double value, int strict, double limit,
                             const char *unit) {
  char line[512];
  int met = bench_goal_line(line, sizeof line, name, value, strict, limit, unit);
  const char *ro = getenv("ARGUS_BENCH_REPORT_ONLY");
  int report_only = ro && *ro && *ro != '0';
  printf("%s%s\n", line, !met && report_only ? " [report only: ARGUS_BENCH_REPORT_ONLY]" : "");
  fflush(stdout);
  return met || report_only;
}

/* Writes `section` into the results file `file` (bench/RESULTS.md) between
 * the lines "<!-- KEY: begin (written by the benchmark) -->" and
 * "<!-- KEY: end -->", replacing what was there; appends the marked section
 * when the markers are missing. The file is replaced through a temporary
 * beside it. 0 on success; 1 (with a message on stderr) when it cannot be
 * read or written. */
static inline int bench_results_section(const char *file, const char *key, const char *section) {
  char begin[256], end[256], tmp[4096];
  snprintf(begin, sizeof begin, "<!-- %.200s: begin (written by the benchmark) -->\n", key);
  snprintf(end, sizeof end, "<!-- %.200s: end -->\n", key);
  snprintf(tmp, sizeof tmp, "%.4000s.tmp", file);
  FILE *f = fopen(file, "rb");
  char *old = NULL;
  long n = -1;
  if (f && !fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET) &&
      (old = (char *)malloc((size_t)n + 1)) && fread(old, 1, (size_t)n, f) == (size_t)n)
    old[n] = 0;
  else
    n = -1;
  if (f)
    fclose(f);
  if (n < 0) {
    fprintf(stderr, "bench: cannot read the results file '%s'\n", file);
    free(old);
    return 1;
  }
  char *b = strstr(old, begin), *e = b ? strstr(b, end) : NULL;
  FILE *o = fopen(tmp, "wb");
  int bad = !o;
  if (o) {
    if (b && e)
      bad |= fwrite(old, 1, (size_t)(b - old), o) != (size_t)(b - old);
    else
      bad |= fputs(old, o) < 0 || fputs("\n", o) < 0;
    bad |= fputs(begin, o) < 0 || fputs(section, o) < 0 || fputs(end, o) < 0;
    if (b && e)
      bad |= fputs(e + strlen(end), o) < 0;
    bad |= fclose(o) != 0;
  }
  bad = bad || rename(tmp, file) != 0;
  if (bad) {
    fprintf(stderr, "bench: cannot write the results file '%s'\n", file);
    remove(tmp);
  }
  free(old);
  return bad;
}

/* The verdict of a paired estimate p (95 % confidence interval upper bound
 * hi) on an upper limit: "met" when the whole interval is under it, "met,
 * within noise" when only the estimate is, else "NOT met". */
static inline const char *bench_paired_verdict(double p, double hi, double limit) {
  return hi <= limit ? "met" : p <= limit ? "met, within noise" : "NOT met";
}

#endif
