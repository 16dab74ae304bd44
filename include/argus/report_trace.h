/*
 * argus/report_trace.h — the reference-trace views of src/report: the per-region table of
 * a reference trace as text and as JSON (schema "argus.trace/1": every value
 * carries its qualification and where it came from), and the timeline as
 * Chrome-trace JSON (opens in Perfetto and chrome://tracing; a track per SM,
 * a thread per launch/CTA/warp).
 */
#ifndef ARGUS_REPORT_TRACE_H
#define ARGUS_REPORT_TRACE_H

#include "argus/core.h"
#include "argus/synth.h"
#include "argus/system_ev.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The table: one row per region (count, mean, p50, p95, min, max, total in
 * ns; cycles in JSON), then launches, clock, drops and anomalies. */
int ag_report_trace_text(const ag_trace *t, const ag_scope *scope,
                         const ag_region_stats *rs, int n, ag_str *out);
/* New reference. provenance: extra fields merged into "provenance" (may be
 * NULL; borrowed). */
json_t *ag_report_trace_json(const ag_trace *t, const ag_scope *scope,
                             const ag_region_stats *rs, int n, json_t *provenance);

/* Chrome-trace JSON of the occurrences in scope. Time is microseconds on
 * each launch's common time line; launches follow one another. */
int ag_report_chrome_trace(const ag_trace *t, const ag_scope *scope, ag_str *out);

/* At most this many events by default: about 150 MB of JSON, which
 * Perfetto's UI opens in a browser tab (its JSON import holds the whole file
 * and its parse in the tab's memory; several million events exhaust it, and
 * chrome://tracing is slow well before). */
#define AG_TIMELINE_MAX_EVENTS 1000000u

typedef struct ag_timeline_info {
  uint64_t events;      /* occurrences in scope */
  uint64_t written;     /* events written */
  uint32_t every_nth;   /* 1: all warps; k: warp tracks whose slot % k == 0 */
} ag_timeline_info;

/* As ag_report_chrome_trace, sampled when the scope holds more than
 * max_events occurrences (0: no limit): whole warp tracks are kept, every
 * k-th warp slot of each launch, k the smallest that fits. info says what
 * was written (may be NULL). */
int ag_report_chrome_trace_ex(const ag_trace *t, const ag_scope *scope, uint64_t max_events,
                              ag_str *out, ag_timeline_info *info);

/* The timeline with the system timeline of the same run beside it
 * (docs/system.md): region tracks as above, and a process "system"
 * (AG_CHROME_SYSTEM_PID) with a thread per stream (kernels, copies, sets)
 * and one for synchronizations; everything on the %globaltimer clock,
 * CUPTI's records moved by the calibrated offset. */
#define AG_CHROME_SYSTEM_PID 1000000u
int ag_report_chrome_system(const ag_trace *t, const ag_sys_ev *sys, const ag_scope *scope,
                            uint64_t max_events, ag_str *out, ag_timeline_info *info);

#ifdef __cplusplus
}
#endif
#endif
