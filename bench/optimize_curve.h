/*
 * optimize_curve.h — the figures bench_optimize draws from a run of `argus
 * optimize` (issue 24): the best-so-far curve of a run's trials, the trial
 * at which a curve first reaches a target time (within a tolerance), and
 * the verdict "evidence reaches blind's final best in fewer trials". Pure
 * functions: tests/unit/test_bench_goal.c tests them on the CPU.
 */
#ifndef ARGUS_BENCH_OPTIMIZE_CURVE_H
#define ARGUS_BENCH_OPTIMIZE_CURVE_H

#include "goal.h"

/* best[i] = the least ms[j] over j <= i with valid[j] (0 while none is). */
static inline void opt_best_so_far(const double *ms, const int *valid, int n, double *best) {
  double b = 0;
  for (int i = 0; i < n; i++) {
    if (valid[i] && ms[i] > 0 && (b == 0 || ms[i] < b))
      b = ms[i];
    best[i] = b;
  }
}

/* The first trial i whose best-so-far is within tol (a fraction) of target:
 * best[i] <= target * (1 + tol); -1 when none is. */
static inline int opt_trials_to_reach(const double *best, int n, double target, double tol) {
  for (int i = 0; i < n; i++)
    if (best[i] > 0 && best[i] <= target * (1 + tol))
      return i;
  return -1;
}

/* The goal: evidence reaches blind's final best in fewer trials than blind
 * did. ev and bl are the trials to reach (per repeat, -1: never); met when
 * the median over the repeats of evidence's (never counting as n_trials +
 * 1) is less than blind's. *ev_med and *bl_med get the medians. */
static inline int opt_fewer_trials(const int *ev, const int *bl, int nrep, int n_trials,
                                   double *ev_med, double *bl_med) {
  double e[64], b[64];
  if (nrep < 1 || nrep > 64)
    return 0;
  for (int i = 0; i < nrep; i++) {
    e[i] = ev[i] < 0 ? n_trials + 1 : ev[i];
    b[i] = bl[i] < 0 ? n_trials + 1 : bl[i];
  }
  *ev_med = bench_median(e, nrep);
  *bl_med = bench_median(b, nrep);
  return *ev_med < *bl_med;
}

#endif
