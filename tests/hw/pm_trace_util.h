/*
 * pm_trace_util.h — a region's times in a decoded trace, for the PM-sampling
 * tests (test_gpu_pm on the H200, test_pm_recorded on its evidence).
 */
#ifndef ARGUS_TESTS_PM_TRACE_UTIL_H
#define ARGUS_TESTS_PM_TRACE_UTIL_H

#include <math.h>
#include <string.h>

#include "argus/collect.h"

/* Region `name`'s occurrences: their mean duration (ms) and their span (ms,
 * the first begin to the last end over every warp). */
__attribute__((unused)) static void pm_region_ms(const ag_trace *tr, const char *name,
                                                 double *mean, double *span) {
  double s = 0, lo = INFINITY, hi = -INFINITY;
  size_t n = 0;
  for (size_t i = 0; i < tr->nocc; i++) {
    const ag_occ *o = &tr->occ[i];
    int l = 0;
    while (l < tr->ev->nlaunches && tr->ev->launches[l].launch != o->launch)
      l++;
    if (l < tr->ev->nlaunches && !strcmp(tr->ev->regions[o->region].qname, name)) {
      double ms = 1e3 / tr->clocks[l].hz;
      s += (double)(o->end - o->start) * ms;
      lo = fmin(lo, (double)o->start * ms);
      hi = fmax(hi, (double)o->end * ms);
      n++;
    }
  }
  *mean = n ? s / (double)n : 0;
  *span = hi > lo ? hi - lo : 0;
}

#endif
