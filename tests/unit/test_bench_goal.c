/*
 * test_bench_goal.c — the benchmarks' goal verdicts (bench/goal.h) on the
 * CPU: the comparison at, under and over a limit (strict or not), NaN never
 * meeting a goal, the uniform line scripts/gpu/run.sh greps, and the paired
 * estimate's three verdicts; the results file's marked section written,
 * replaced, and refused for a file that cannot be read. A benchmark that runs only on the GPU
 * (trace_overhead, bench_probes, bench_optimize) has its verdict tested here.
 */
#include "check.h"

#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "bench_util.h"
#include "goal.h"
#include "optimize_curve.h"

TEST(test_goal_comparison) {
  CHECK(bench_goal_met(0.9, 1.0, 1));
  CHECK(!bench_goal_met(1.0, 1.0, 1)); /* "< limit": the limit itself fails */
  CHECK(!bench_goal_met(1.1, 1.0, 1));
  CHECK(bench_goal_met(0.9, 1.1, 0));
  CHECK(bench_goal_met(1.1, 1.1, 0)); /* "<= limit": the limit itself meets it */
  CHECK(!bench_goal_met(1.2, 1.1, 0));
  CHECK(!bench_goal_met(NAN, 1.0, 1));
  CHECK(!bench_goal_met(NAN, 1.0, 0));
  CHECK(bench_goal_met(-5.0, 1.0, 0)); /* a negative added time meets an upper limit */
}

TEST(test_goal_line) {
  char line[256];
  CHECK_EQ_INT(bench_goal_line(line, sizeof line, "x", 0.75, 0, 1.1, "us"), 1);
  CHECK_EQ_STR(line, "goal: x: met (0.75 us, goal <= 1.1 us)");
  CHECK_EQ_INT(bench_goal_line(line, sizeof line, "plan, median", 51.25, 1, 50, "ms"), 0);
  CHECK_EQ_STR(line, "goal: plan, median: NOT met (51.25 ms, goal < 50 ms)");
  CHECK_EQ_INT(bench_goal_line(line, sizeof line, "y", 50, 1, 50, "ms"), 0);
  CHECK_EQ_STR(line, "goal: y: NOT met (50 ms, goal < 50 ms)");
  /* a long name is cut, the verdict is still there */
  char name[400];
  memset(name, 'n', sizeof name - 1);
  name[sizeof name - 1] = 0;
  CHECK_EQ_INT(bench_goal_line(line, sizeof line, name, 2, 0, 1, "s"), 0);
  CHECK_CONTAINS(line, ": NOT met (2 s, goal <= 1 s)");
  /* bench_goal() prints this line; it is not called here, so that no
   * "goal: ...: NOT met" line of a test reads as a benchmark's (the CPU
   * benchmarks' own mutations in tests/mutations/tests.mut cover it) */
}

TEST(test_paired_verdict) {
  CHECK_EQ_STR(bench_paired_verdict(0.80, 0.90, 1.1), "met");
  CHECK_EQ_STR(bench_paired_verdict(0.80, 1.10, 1.1), "met");
  CHECK_EQ_STR(bench_paired_verdict(1.00, 1.20, 1.1), "met, within noise");
  CHECK_EQ_STR(bench_paired_verdict(1.10, 1.20, 1.1), "met, within noise");
  CHECK_EQ_STR(bench_paired_verdict(1.20, 1.30, 1.1), "NOT met");
}

TEST(test_median) {
  const double odd[] = {5, 1, 3}, even[] = {4, 1, 3, 2}, one[] = {7};
  CHECK(bench_median(odd, 3) == 3);
  CHECK(bench_median(even, 4) == 2.5);
  CHECK(bench_median(one, 1) == 7);
  CHECK(odd[0] == 5 && odd[1] == 1); /* the input is not reordered */
  CHECK(bench_median(odd, 0) == 0);
  double t0 = bench_now_ms(), t1 = bench_now_ms();
  CHECK(t1 >= t0 && t0 > 0);
}

static char *slurp(const char *p) {
  FILE *f = fopen(p, "rb");
  static char buf[4096];
  size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  buf[n] = 0;
  if (f)
    fclose(f);
  return buf;
}

TEST(test_results_section) {
  char p[] = "/tmp/argus-results-XXXXXX";
  int fd = mkstemp(p);
  CHECK(fd >= 0);
  const char *head = "# results\n\n## old\ntext\n";
  CHECK(write(fd, head, strlen(head)) == (ssize_t)strlen(head));
  close(fd);
  /* no markers yet: the section is appended */
  CHECK_EQ_INT(bench_results_section(p, "bench_x", "| a | 1 |\n"), 0);
  CHECK_EQ_STR(slurp(p), "# results\n\n## old\ntext\n\n"
                         "<!-- bench_x: begin (written by the benchmark) -->\n| a | 1 |\n"
                         "<!-- bench_x: end -->\n");
  /* text after the section stays; a second write replaces the section only */
  FILE *f = fopen(p, "ab");
  fputs("## after\n", f);
  fclose(f);
  CHECK_EQ_INT(bench_results_section(p, "bench_x", "| a | 2 |\n| b | 3 |\n"), 0);
  CHECK_EQ_STR(slurp(p), "# results\n\n## old\ntext\n\n"
                         "<!-- bench_x: begin (written by the benchmark) -->\n| a | 2 |\n"
                         "| b | 3 |\n<!-- bench_x: end -->\n## after\n");
  /* another key: a section of its own */
  CHECK_EQ_INT(bench_results_section(p, "bench_y", "y\n"), 0);
  CHECK_CONTAINS(slurp(p), "| b | 3 |\n<!-- bench_x: end -->\n## after\n\n<!-- bench_y: begin");
  unlink(p);
  /* a file that is not there: refused, nothing made */
  CHECK_EQ_INT(bench_results_section(p, "bench_x", "z\n"), 1);
  CHECK(access(p, F_OK) != 0);
}

/* bench_optimize: the best-so-far curve (invalid and untimed trials never
 * count), the trial that reaches a target within a tolerance, and the
 * verdict on the medians over the repeats (never reaching counts as worst). */
TEST(test_optimize_curve) {
  const double ms[] = {5.0, 4.0, 9.0, 1.0, 3.5, 0};
  const int valid[] = {1, 1, 1, 0, 1, 1};
  double best[6];
  opt_best_so_far(ms, valid, 6, best);
  const double want[] = {5.0, 4.0, 4.0, 4.0, 3.5, 3.5};
  for (int i = 0; i < 6; i++)
    CHECK(best[i] == want[i]);
  const int none[] = {0, 0};
  opt_best_so_far(ms, none, 2, best);
  CHECK(best[0] == 0 && best[1] == 0);
  opt_best_so_far(ms, valid, 6, best);
  CHECK_EQ_INT(opt_trials_to_reach(best, 6, 3.5, 0), 4);
  CHECK_EQ_INT(opt_trials_to_reach(best, 6, 3.9, 0.03), 1); /* 4.0 <= 3.9 * 1.03 */
  CHECK_EQ_INT(opt_trials_to_reach(best, 6, 3.8, 0.03), 4);
  CHECK_EQ_INT(opt_trials_to_reach(best, 6, 3.0, 0.03), -1);
  double e, b;
  const int ev[] = {2, 4, 3}, bl[] = {5, 3, 6};
  CHECK(opt_fewer_trials(ev, bl, 3, 10, &e, &b));
  CHECK(e == 3 && b == 5);
  CHECK(!opt_fewer_trials(bl, ev, 3, 10, &e, &b));
  const int same[] = {3, 3};
  CHECK(!opt_fewer_trials(same, same, 2, 10, &e, &b)); /* equal is not fewer */
  const int never[] = {-1, -1}, late[] = {9, 10};
  CHECK(!opt_fewer_trials(never, late, 2, 10, &e, &b));
  CHECK(e == 11 && b == 9.5);
  CHECK(!opt_fewer_trials(ev, bl, 0, 10, &e, &b));
}


/* the commit a section names: $ARGUS_COMMIT first (the GPU pack's), else HEAD
 * only where the directory is a checkout's top: a copy of the sources inside
 * another checkout (the pack on the GPU machine) must not name that one's */
TEST(test_commit) {
  char c[128];
  setenv("ARGUS_COMMIT", "abc1234-dirty", 1);
  bench_commit(ARGUS_SOURCE_DEFAULT, c, sizeof c);
  CHECK_EQ_STR(c, "abc1234-dirty");
  unsetenv("ARGUS_COMMIT");
  char tmp[] = "/tmp/argus-commit-XXXXXX";
  CHECK(mkdtemp(tmp) != NULL);
  bench_commit(tmp, c, sizeof c);
  CHECK(strncmp(c, "unknown", 7) == 0);
  rmdir(tmp);
  /* a folder inside a checkout is not its top */
  bench_commit(ARGUS_SOURCE_DEFAULT "/bench", c, sizeof c);
  CHECK(strncmp(c, "unknown", 7) == 0);
  char head[64] = "";
  /* HEAD where the sources are a checkout's top (not in mutate.py's copy
   * under build/, whose enclosing checkout is another's) */
  FILE *f = popen("cd '" ARGUS_SOURCE_DEFAULT "' && [ \"$(git rev-parse --show-toplevel "
                  "2>/dev/null)\" = \"$(pwd -P)\" ] && git rev-parse --short HEAD", "r");
  if (f) {
    if (!fgets(head, sizeof head, f))
      head[0] = 0;
    pclose(f);
  }
  head[strcspn(head, "\n")] = 0;
  bench_commit(ARGUS_SOURCE_DEFAULT, c, sizeof c);
  if (head[0])
    CHECK_EQ_STR(c, head);
  else
    CHECK(strncmp(c, "unknown", 7) == 0); /* no checkout's top: no commit */
}

RUN_TESTS(T(test_commit), T(test_goal_comparison), T(test_goal_line), T(test_paired_verdict), T(test_median),
          T(test_results_section), T(test_optimize_curve))
