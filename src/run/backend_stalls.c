/*
 * backend_stalls.c — CUPTI PC sampling (docs/stalls.md): the trace-free
 * build compiled -lineinfo, run under the host runtime's "stalls"
 * collection (src/collect/pcsamp.c) in a harness process of its own; the
 * samples (by stall reason, per PC) are attributed to regions through the
 * mapping run's map by the same synthesis as the SASS metrics
 * (backend_map.c, ag__obs_synth_attributed -> ag_stalls_json).
 */
#include "argus/sass_ev.h"
#include "observe_int.h"

static int stalls_collect(ag_exec_ctx *cx, ag_task *t, ag_collect_job *job) {
  job->ro->collect = "stalls";
  job->own_process = 1; /* a CUPTI subscriber of its own, never the worker's */
  return 0;
}

static int stalls_decode(const void *data, size_t len, const char *what, ag_diags *d,
                         void **out) {
  ag_sass_ev *e = NULL;
  int rc = ag_sass_ev_load_mem_as(data, len, what, "argus-stalls", d, &e);
  *out = e;
  return rc;
}

static void stalls_release(void *e) { ag_sass_ev_free(e); }

static const ag_executor stalls_execs[] = {{"synth.stalls", ag__obs_synth_attributed}};

static const char *const stalls_evidence[] = {"stalls", NULL};

const ag_backend ag__backend_stalls = {
    .name = "stalls",
    .summary = "CUPTI PC sampling of the -lineinfo build: samples per PC by stall reason",
    .evidence = stalls_evidence,
    .effects = AG_EFF_PERTURBS_TIMING,
    .variant = "trace-free",
    .collector = "stalls",
    .output = "stalls",
    .decode = stalls_decode,
    .release = stalls_release,
    .execs = stalls_execs,
    .nexecs = sizeof stalls_execs / sizeof stalls_execs[0],
    .collect = stalls_collect,
};
