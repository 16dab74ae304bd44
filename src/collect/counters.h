/*
 * counters.h — the CUPTI range-profiler collector of libargus_host
 * (counters.c, docs/counters.md): hardware-counter metrics per range,
 * written as the evidence file counters.json.
 *
 *   ag_ctr_open    dlopens CUPTI, becomes the process's one CUPTI
 *                  subscriber, checks that the device can be profiled,
 *                  checks every metric name against the chip's list (an
 *                  unknown one is refused with the closest names), builds
 *                  the configuration image (its number of passes), enables
 *                  the range profiler on the context and sets it up
 *   ag_ctr_begin   starts profiling (before the variant's first launch)
 *   ag_ctr_launch  notes a launch made through libargus_host (its kernel,
 *                  grid, block, launch index): range i of the auto mode is
 *                  the i-th kernel launched after the start
 *   ag_ctr_push    a user range (ag_host_range_push); ag_ctr_pop ends it
 *   ag_ctr_end     stops, decodes the counter data and evaluates every
 *                  metric of every range; *more is 1 when the application
 *                  must run again for another pass (user ranges, below)
 *   ag_ctr_json    the evidence members (the caller adds the header)
 *   ag_ctr_close   disables the profiler and unsubscribes
 *
 * Ranges (ARGUS_COUNTERS_RANGE): `auto` (default) is a range per kernel
 * launch, replayed by CUPTI inside the launch (kernel replay: every pass,
 * memory saved and restored), so kernels run one at a time; the user
 * ranges a harness opens then only label the launches inside them.
 * `user` measures the ranges the harness opens (ag_host_range_push/pop,
 * the outermost level) as wholes; CUPTI cannot replay host code, so a
 * metric set of more than one pass is collected by running the harness
 * once per pass (application replay): the counter data and the pass state
 * are kept in <out>/counters.replay between the runs, and a run that
 * leaves a pass to do writes <out>/counters.next instead of evidence
 * (ag_trace_run runs the harness again).
 *
 * Metrics: the default set (ctr_catalog.h) plus ARGUS_COUNTERS_METRICS (a
 * comma list). ARGUS_COUNTERS_MAX_RANGES (default 256) sizes the counter
 * data; ranges past it are dropped by CUPTI and counted.
 *
 * Errors are AG_HOST_* with the reason in err: ENODEV (no CUPTI), EBUSY
 * (another subscriber), EUNSUPPORTED (the device cannot be profiled, or
 * profiling is not permitted: RmProfilingAdminOnly), EINVAL (an unknown
 * metric, a bad setting, unbalanced ranges), ECUPTI. Nothing here prints
 * or exits.
 */
#ifndef ARGUS_COLLECT_COUNTERS_H
#define ARGUS_COLLECT_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include "evwrite.h"

#define AG_CTR_FILE "counters.json"
#define AG_CTR_FORMAT "argus-counters"
#define AG_CTR_VERSION 1
#define AG_CTR_REPLAY_FILE "counters.replay"
#define AG_CTR_NEXT_FILE "counters.next"
#define AG_CTR_MAX_PASSES 64

typedef struct ag_ctr ag_ctr;

/* ctx: the CUcontext; device: its ordinal; out_dir: ARGUS_OUT (the
 * application replay's state lives there). */
int ag_ctr_open(void *ctx, int device, const char *out_dir, ag_ctr **out, char *err,
                size_t errlen);
int ag_ctr_begin(ag_ctr *c, char *err, size_t errlen);
/* launch: the variant's launch index, -1 for another module's kernel. */
int ag_ctr_launch(ag_ctr *c, const char *kernel, const unsigned grid[3], const unsigned block[3],
                  long launch);
int ag_ctr_push(ag_ctr *c, const char *name, char *err, size_t errlen);
int ag_ctr_pop(ag_ctr *c, char *err, size_t errlen);
int ag_ctr_end(ag_ctr *c, int *more, char *err, size_t errlen);
/* The number of replay passes the metric set needs, and the ranges read. */
size_t ag_ctr_passes(const ag_ctr *c);
size_t ag_ctr_ranges(const ag_ctr *c);
void ag_ctr_json(const ag_ctr *c, ag_jb *j);
void ag_ctr_close(ag_ctr *c);

#endif
