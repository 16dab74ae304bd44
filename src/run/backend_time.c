/*
 * backend_time.c — the trace-free timing backend (docs/tracing.md,
 * "Perturbation"): the build the user ships, run once with every launch
 * timed by the host runtime's "time" collector, in a run of its own; the
 * baseline every trace is sized from and compared with. No synthesis rule
 * of its own (synth.perturbation, the trace backend's, reads it).
 */
#include <string.h>

#include "observe_int.h"

/* What the timing run loads, for the report: {"build", "what"}. */
static json_t *baseline_of(const obs *ob, int have_production) {
  const ag_spec *sp = ob->spec;
  ag_str w = AG_STR_INIT;
  const char *kind;
  if (!have_production) {
    kind = "trace-free variant";
    ag_str_puts(&w, "the trace-free variant (markers on): the user's build could not be made");
  } else if (sp->python) {
    kind = "triton build";
    ag_str_printf(&w, "Triton's own build of '%s' (its ptxas and options), as the script "
                      "'%s' runs it", sp->python_kernel ? sp->python_kernel : "?", sp->python);
  } else if (sp->production) {
    kind = "production file";
    ag_str_printf(&w, "the production build '%s' named in the spec", sp->production);
  } else if (sp->cuda) {
    kind = "markers-off build";
    ag__obs_user_build_label(sp, &w);
  } else {
    kind = "ptx module";
    ag_str_printf(&w, "the PTX module '%s' itself (the driver compiles it at the load)",
                  sp->ptx ? sp->ptx : "?");
  }
  json_t *j = json_pack("{s:s,s:s}", "build", kind, "what", ag_str_cstr(&w));
  ag_str_release(&w);
  return j;
}

/* The trace-free run's collect hook: it times the build the user ships
 * (docs/tracing.md, "Perturbation"): the compile's "production" output,
 * when it made one; every launch timed; the evidence is the timing file. */
static int time_collect(ag_exec_ctx *cx, ag_task *t, ag_collect_job *job) {
  obs *ob = cx->ud;
  const char *prod = ag__obs_input(cx->plan, t, "production");
  json_object_set_new(job->extra, "baseline", baseline_of(ob, prod != NULL));
  if (prod)
    job->cubin = prod;
  job->ro->time_only = 1; /* its output, "timing", is the adapter's */
  return 0;
}

static int time_decode(const void *data, size_t len, const char *what, ag_diags *d, void **out) {
  json_error_t e;
  *out = json_loadb(data, len, 0, &e);
  if (*out)
    return 0;
  ag_diags_add(d, AG_SEV_ERROR, what, e.line, e.column, NULL, 0,
               "the timing file '%s' is not JSON: %s", what, e.text);
  return AG_ECORRUPT;
}

static void time_release(void *j) { json_decref(j); }

static const char *const time_evidence[] = {"kernel_time", NULL};

const ag_backend ag__backend_time = {
    .name = "time",
    .summary = "the trace-free build's kernel times, every launch timed, in a run of its own",
    .evidence = time_evidence,
    .effects = 0,
    .variant = "trace-free",
    .collector = "time",
    .output = "timing",
    .decode = time_decode,
    .release = time_release,
    .collect = time_collect,
};
