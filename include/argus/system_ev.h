/*
 * argus/system_ev.h — the system timeline's evidence (system.json, written
 * by libargus_host under ARGUS_COLLECT=system or ARGUS_ACTIVITY=1;
 * docs/system.md), decoded and checked, and the `system` signal made from
 * it: per launch (kernel, stream, correlation ID, grid, block, registers,
 * shared memory, start and duration) and per stream (kernels, copies,
 * sets, busy time, bytes), on the %globaltimer clock; the harness's NVTX
 * ranges (start and end markers paired by ID, with the launches each
 * encloses) and its CUDA graph launches (kernels grouped by graph ID and
 * the graph launch's correlation ID).
 *
 * Clock alignment: the evidence holds the calibration kernels' first and
 * last %globaltimer edges and CUPTI's start and end of the same kernels;
 * the offset (CUPTI minus globaltimer) is the mean of the start and end
 * differences over the calibrations, and the stated error bound is half
 * the largest start/end spread plus the offsets' drift between the
 * calibrations plus one 32 ns timer step. A malformed file gets a
 * diagnostic naming the file and the part that is wrong. Pure CPU.
 */
#ifndef ARGUS_SYSTEM_EV_H
#define ARGUS_SYSTEM_EV_H

#include "argus/core.h"
#include "argus/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ag_sys_kind {
  AG_SYS_KERNEL,
  AG_SYS_MEMCPY,
  AG_SYS_MEMSET,
  AG_SYS_SYNC,
  AG_SYS_STREAM,
  AG_SYS_API /* a launch call (CUPTI's runtime / driver API records, the `api` kind:
                kept for the calls that launched a kernel), host-side */
} ag_sys_kind;

typedef struct ag_sys_rec {
  ag_sys_kind kind;
  uint32_t corr, stream, context;
  int64_t start, end;  /* CUPTI clock (ns); 0 for stream records */
  const char *name;    /* kernels (borrowed from the JSON) */
  int grid[3], block[3], cluster[3];
  int registers, static_smem, dynamic_smem, local_per_thread;
  uint64_t bytes;      /* memcpy / memset */
  int copy_kind, sync_type;
  int argus;           /* an Argus calibration kernel, not the harness's */
  uint32_t graph;      /* kernels, copies, sets launched from a CUDA graph: its ID (0: none) */
  uint64_t graph_node; /* and the node's */
  int device;          /* kernels, copies, sets: the device (0 when not recorded) */
  uint32_t tid;        /* api: the calling thread */
  const char *api;     /* api: "runtime" or "driver" (borrowed) */
} ag_sys_rec;

/* An NVTX range (a start and an end marker of one ID) or an instant marker,
 * host-side, on CUPTI's clock. */
typedef struct ag_sys_range {
  const char *name;    /* borrowed from the JSON; NULL: unnamed */
  const char *domain;  /* NULL: NVTX's default domain */
  uint32_t id, pid, tid;
  int64_t start, end;  /* an instant marker: start == end; open: end = start */
  int instant;
  int open;            /* its end marker was not seen (the harness never popped it) */
  int depth;           /* ranges of its thread open at its start (push/pop nesting) */
} ag_sys_range;

typedef struct ag_sys_ev {
  json_t *root;
  const char *variant_id;
  ag_sys_rec *recs;    /* by start */
  size_t nrecs;
  uint64_t dropped;    /* records CUPTI dropped */
  int lost;            /* records the collector could not keep */
  int ncal;            /* calibrations read */
  double offset_ns;    /* CUPTI clock minus %globaltimer */
  double error_ns;     /* the alignment's error bound */
  ag_sys_range *ranges; /* NVTX ranges and instant markers, by start */
  size_t nranges;
  size_t nvtx_unmatched; /* end markers whose start was not seen */
  int nvtx_on;          /* the collection had the nvtx kind on */
  const char *nvtx_injection; /* NVTX_INJECTION64_PATH then (borrowed), "" none */
  int nvtx_by_argus;    /* the host runtime set it */
} ag_sys_ev;

int ag_sys_ev_load(const char *path, ag_diags *diags, ag_sys_ev **out);
int ag_sys_ev_load_mem(const void *data, size_t len, const char *name, ag_diags *diags,
                       ag_sys_ev **out);
/* The system part of a file of another format that has the same members
 * (pm.json, format "argus-pm", written with the activity trace beside PM
 * sampling: docs/throughput.md). */
int ag_sys_ev_load_mem_as(const void *data, size_t len, const char *name, const char *format,
                          ag_diags *diags, ag_sys_ev **out);
void ag_sys_ev_free(ag_sys_ev *e);

/* One calibration kernel seen on two clocks: its first and last
 * %globaltimer edges, and its start and end on the other clock (CUPTI's
 * activity records, or the PM sampler's windows); 0: the other clock did
 * not see it. */
typedef struct ag_clock_cal {
  int64_t gt_first, gt_last, other_start, other_end;
} ag_clock_cal;
/* The other clock minus %globaltimer and its error bound by the rule
 * above, over the calibrations the other clock saw: their number (0: none,
 * offset and error 0). */
int ag_sys_clock_fit(const ag_clock_cal *c, size_t n, double *offset_ns, double *error_ns);
/* A CUPTI timestamp on the %globaltimer clock. */
static inline double ag_sys_ev_gt(const ag_sys_ev *e, int64_t cupti_ns) {
  return (double)cupti_ns - e->offset_ns;
}

/* The `system` signal (new reference): {"signal":"system","qual":
 * "observed","clock":{"offset_ns","error_ns","calibrations","rule"},
 * "dropped_records","lost_records","launches":[{"launch","kernel","corr",
 * "stream","start_ns" (globaltimer),"duration_ns","grid","block","cluster",
 * "registers","static_smem","dynamic_smem", "graph" and "graph_node" (a
 * graph's kernel), "nvtx" (the innermost enclosing range's name)}],
 * "streams":[{"stream","kernels","memcpy","memset","sync","busy_ns",
 * "bytes","first_ns","last_ns"}],"calibration_kernels",
 * "graphs":[{"graph","corr","stream","kernels","launches","start_ns",
 * "duration_ns"}] (one per graph launch), "nvtx" (with the nvtx kind on):
 * {"injection","set_by_argus","rule","unmatched_ends","ranges":[{"name",
 * "domain","tid","depth","start_ns","duration_ns","instant","open",
 * "launches"}]}}. A range encloses a launch when the kernel's CUPTI start
 * and end lie within the range's start and end markers (one clock).
 * Argus's calibration kernels are not launches. NULL when out of memory. */
json_t *ag_sys_signal(const ag_sys_ev *e);
/* The same over the launches `scope` selects (NULL or no launch range: all):
 * a launch keeps its number in the run (launch=1:3 gives launches 1 and 2),
 * and the per-stream figures count the selected launches only (copies,
 * sets and synchronizations are not launches: they stay). With a launch
 * range the signal has "selection": {"scope" (the launch ranges),
 * "covered" (the launch numbers kept), "launches_in_run"}. */
json_t *ag_sys_signal_in(const ag_sys_ev *e, const ag_scope *scope);
/* The synthesis output of signal `system` (src/run/backend_system.c):
 * {"values", "system" (the signal), "warnings", "missing"}. `retained` is
 * the evidence kind's retained scope (bit 1 << ag_scope_key per coordinate
 * the evidence records: the launch only): those the scope restricts select;
 * any other coordinate (and a role) is a warning saying the values cover
 * all of it. A selection that covers no launch is missing, with why; one
 * that covers some adds the value "(system) launches_covered". AG_ENOMEM. */
int ag_sys_synth(const ag_sys_ev *e, const ag_scope *scope, unsigned retained, json_t **out);
/* Appends one report value {"region","signal","stat","value" (taken, even
 * on failure),"unit","qual"} to vals: nonzero when out of memory. The
 * system and comm syntheses' values. */
int ag_sys_value(json_t *vals, const char *signal, const char *region, const char *stat,
                 json_t *v, const char *unit, const char *qual);
/* A deep copy of o's member k, or JSON null when it has none. */
json_t *ag_sys_field(const json_t *o, const char *k);
/* The text a kernel engineer reads first: launches, streams, the clock. */
int ag_sys_text(const json_t *signal, ag_str *out);

#ifdef __cplusplus
}
#endif
#endif
