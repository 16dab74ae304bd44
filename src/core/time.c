/*
 * time.c — clocks: monotonic nanoseconds for durations, wall time for
 * records people read.
 */
#include "argus/core.h"

#include <time.h>

uint64_t ag_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t ag_wall_time_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void ag_iso8601(uint64_t wall_ns, char buf[32]) {
  time_t t = (time_t)(wall_ns / 1000000000ull);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}
