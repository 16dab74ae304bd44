/*
 * backend_sass.c — CUPTI SASS metrics (docs/sass-metrics.md): the
 * trace-free build compiled -lineinfo, run under the host runtime's "sass"
 * collection (src/collect/sass_metrics.c) in a harness process of its own;
 * CUPTI patches the kernel, so the run shares nothing. Its signals
 * (inst_mix, barriers, branch) are attributed to regions through the
 * mapping run's map (backend_map.c, ag__obs_synth_attributed).
 */
#include <string.h>

#include "argus/sass_ev.h"
#include "observe_int.h"

static int sass_collect(ag_exec_ctx *cx, ag_task *t, ag_collect_job *job) {
  job->ro->collect = "sass";
  job->own_process = 1; /* CUPTI patches a kernel only at its first launch in a process */
  return 0;
}

static int sass_decode(const void *data, size_t len, const char *what, ag_diags *d, void **out) {
  ag_sass_ev *e = NULL;
  int rc = ag_sass_ev_load_mem(data, len, what, d, &e);
  *out = e;
  return rc;
}

static void sass_release(void *e) { ag_sass_ev_free(e); }

static const ag_executor sass_execs[] = {{"synth.inst_mix", ag__obs_synth_attributed},
                                         {"synth.barriers", ag__obs_synth_attributed},
                                         {"synth.branch", ag__obs_synth_attributed}};

static const char *const sass_evidence[] = {"sass_metrics", NULL};

const ag_backend ag__backend_sass = {
    .name = "sass",
    .summary = "CUPTI SASS metrics per PC of the -lineinfo build, in a process of its own",
    .evidence = sass_evidence,
    .effects = AG_EFF_PATCHES_SASS,
    .variant = "trace-free",
    .collector = "sass",
    .output = "sass_metrics",
    .decode = sass_decode,
    .release = sass_release,
    .execs = sass_execs,
    .nexecs = sizeof sass_execs / sizeof sass_execs[0],
    .collect = sass_collect,
};
