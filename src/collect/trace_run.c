/*
 * trace_run.c — the Collect task of a traced variant: runs the user's
 * harness once under Argus (ARGUS_COLLECT=trace and the variant, sites and
 * output directory in its environment), through ag_proc_run with a timeout
 * that kills the harness's process group, and checks what came back.
 *
 * A harness that crashes, hangs, faults the GPU or exits without finishing
 * its Argus session fails the task with the reason; the evidence file is
 * written by the host runtime atomically, so a failed run never leaves a
 * partial one that later steps could take for evidence.
 */
#include "argus/collect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "argus/evidence.h"
#include "collect_int.h"
#include "map_bind.h"
#include "sass_metrics.h"
#include "activity.h"
#include "pcsamp.h"
#include "pmsamp.h"
#include "counters.h"

void ag_trace_run_result_release(ag_trace_run_result *r) {
  ag_free(r->evidence_path);
  ag_free(r->log_path);
  ag_free(r->timing_path);
  ag_free(r->system_path);
  ag_free(r->late_exit);
  memset(r, 0, sizeof *r);
}

static void tail_of(const char *path, ag_str *why) {
  char *text = NULL;
  size_t len = 0;
  if (ag_file_read(path, &text, &len) || !len) {
    ag_free(text);
    return;
  }
  size_t from = len > 2000 ? len - 2000 : 0;
  while (len && (text[len - 1] == '\n' || text[len - 1] == ' '))
    text[--len] = 0;
  ag_str_printf(why, "\n--- last output of the harness (%s) ---\n%s", path, text + from);
  ag_free(text);
}

/* The harness runs in the spec's directory: every path it is given is
 * absolute (a relative workspace is the caller's, not the harness's). */
static int put_path(ag_str *e, const char *key, const char *path) {
  char *abs = ag_path_abs(path);
  if (!abs)
    return AG_ENOMEM;
  ag_str_printf(e, "%s=%s", key, abs);
  ag_free(abs);
  return 0;
}

char *ag_collect_host_library(void) {
  const char *e = getenv("ARGUS_HOST_LIBRARY");
  if (e && *e)
    return ag_strdup(e);
#ifdef ARGUS_HOST_SO_PATH
  if (access(ARGUS_HOST_SO_PATH, R_OK) == 0)
    return ag_strdup(ARGUS_HOST_SO_PATH);
#endif
  /* installed: <prefix>/lib/libargus_host.so.1 beside libargus (docs/api.md) */
  char *inst = ag_install_path("lib/libargus_host.so.1");
  if (inst && access(inst, R_OK) == 0)
    return inst;
  ag_free(inst);
  return ag_strdup("libargus_host.so.1");
}

char *ag_collect_python_dir(void) {
  const char *e = getenv("ARGUS_PYTHONPATH");
  if (e && *e)
    return ag_strdup(e);
#ifdef ARGUS_PYTHON_DIR
  if (access(ARGUS_PYTHON_DIR "/argus/_triton_run.py", R_OK) == 0)
    return ag_strdup(ARGUS_PYTHON_DIR);
#endif
  return NULL;
}

const char *ag_trace_run_collect(const ag_trace_run_opts *o) {
  return o->collect ? o->collect : o->time_only ? "time" : "trace";
}

const char *ag_trace_run_evidence_file(const char *collect) {
  static const char *const files[][2] = {{"trace", AG_EV_FILE_NAME},
                                         {"time", AG_EV_TIMING_FILE},
                                         {"map", AG_MAP_COUNTS_FILE},
                                         {"sass", AG_SASSM_FILE},
                                         {"system", AG_ACT_FILE},
                                         {"stalls", AG_PCS_FILE},
                                         {"pm", AG_PMS_FILE},
                                         {"counters", AG_CTR_FILE}};
  for (size_t i = 0; collect && i < sizeof files / sizeof files[0]; i++)
    if (!strcmp(files[i][0], collect))
      return files[i][1];
  return NULL;
}

int ag__run_env(const ag_trace_run_opts *o, ag_str e[AG__RUN_ENV_MAX], int *n) {
  int ne = 0, rc = 0;
  for (int i = 0; i < AG__RUN_ENV_MAX; i++)
    ag_str_init(&e[i]);
  ag_str_printf(&e[ne++], "ARGUS_COLLECT=%s", ag_trace_run_collect(o));
  rc |= put_path(&e[ne++], "ARGUS_OUT", o->out_dir);
  rc |= put_path(&e[ne++], "ARGUS_VARIANT", o->cubin_path);
  if (o->sites_path)
    rc |= put_path(&e[ne++], "ARGUS_SITES", o->sites_path);
  if (o->variant_id)
    ag_str_printf(&e[ne++], "ARGUS_VARIANT_ID=%s", o->variant_id);
  if (o->module_match)
    ag_str_printf(&e[ne++], "ARGUS_MODULE=%s", o->module_match);
  if (o->records_per_warp)
    ag_str_printf(&e[ne++], "ARGUS_TRACE_RECORDS=%u", o->records_per_warp);
  if (o->max_launches)
    ag_str_printf(&e[ne++], "ARGUS_TRACE_LAUNCHES=%u", o->max_launches);
  if (o->skip_launches)
    ag_str_printf(&e[ne++], "ARGUS_TRACE_SKIP=%u", o->skip_launches);
  if (o->count_records)
    ag_str_printf(&e[ne++], "ARGUS_TRACE_COUNT=1");
  if (o->warps_hint)
    ag_str_printf(&e[ne++], "ARGUS_TRACE_WARPS=%u", o->warps_hint);
  if (o->device >= 0)
    ag_str_printf(&e[ne++], "CUDA_VISIBLE_DEVICES=%d", o->device);
  if (o->counters_metrics && *o->counters_metrics)
    ag_str_printf(&e[ne++], "ARGUS_COUNTERS_METRICS=%s", o->counters_metrics);
  if (o->counters_range && *o->counters_range)
    ag_str_printf(&e[ne++], "ARGUS_COUNTERS_RANGE=%s", o->counters_range);
  if (o->activity)
    ag_str_printf(&e[ne++], "ARGUS_ACTIVITY=1");
  *n = ne;
  for (int i = 0; i < ne; i++)
    if (e[i].oom)
      return AG_ENOMEM;
  return rc ? AG_ENOMEM : 0;
}

/* Prepares the output directory: evidence and errors of an earlier run are
 * not this run's. Sets the three paths (owned by the caller's strings),
 * absolute: the worker opens the log after entering the spec's directory. */
int ag__run_prepare(const ag_trace_run_opts *o, ag_str *ev, ag_str *herr, ag_str *logp,
                    ag_str *why) {
  int rc = ag_mkdir_p(o->out_dir, 0755);
  if (rc) {
    ag_str_printf(why, "cannot create the output directory '%s': %s", o->out_dir,
                  ag_strerror(rc));
    return rc;
  }
  char *out = ag_path_abs(o->out_dir);
  if (!out)
    return AG_ENOMEM;
  ag_str tp = AG_STR_INIT;
  ag_str_printf(&tp, "%s/%s", out, AG_EV_TIMING_FILE);
  /* a timing run's evidence is its timing file, a mapping run's its counts */
  const char *file = ag_trace_run_evidence_file(ag_trace_run_collect(o));
  if (!file) {
    ag_free(out);
    ag_str_release(&tp);
    ag_str_printf(why, "'%s' is not a collection the host runtime makes (trace, time, map, "
                       "sass, system, stalls, pm, counters)",
                  ag_trace_run_collect(o));
    return AG_EINVAL;
  }
  ag_str_printf(ev, "%s/%s", out, file);
  ag_str_printf(herr, "%s/host-error.txt", out);
  ag_str_printf(logp, "%s/harness.log", out);
  ag_free(out);
  int oom = ev->oom || herr->oom || logp->oom || tp.oom;
  if (!oom) {
    unlink(ag_str_cstr(ev));
    unlink(ag_str_cstr(&tp));
    unlink(ag_str_cstr(herr));
    ag_str_clear(&tp);
    ag_str_printf(&tp, "%s/%s", o->out_dir, AG_HOST_CLOSED_FILE);
    if (!tp.oom)
      unlink(ag_str_cstr(&tp));
    /* the activity trace beside it is this run's too */
    ag_str_clear(&tp);
    ag_str_printf(&tp, "%s/%s", o->out_dir, AG_ACT_FILE);
    if (!tp.oom)
      unlink(ag_str_cstr(&tp));
    /* the hardware counters' application replay starts at its first pass */
    ag_str_clear(&tp);
    ag_str_printf(&tp, "%s/%s", o->out_dir, AG_CTR_REPLAY_FILE);
    if (!tp.oom)
      unlink(ag_str_cstr(&tp));
    ag_str_clear(&tp);
    ag_str_printf(&tp, "%s/%s", o->out_dir, AG_CTR_NEXT_FILE);
    if (!tp.oom)
      unlink(ag_str_cstr(&tp));
  }
  ag_str_release(&tp);
  return oom ? AG_ENOMEM : 0;
}

/* The file `name` in the evidence file ev's directory, when it can be read:
 * owned, or NULL. */
static char *beside(const char *ev, const char *name) {
  const char *sl = strrchr(ev, '/');
  ag_str p = AG_STR_INIT;
  ag_str_printf(&p, "%.*s%s", sl ? (int)(sl - ev + 1) : 0, ev, name);
  if (p.oom || access(ag_str_cstr(&p), R_OK) != 0) {
    ag_str_release(&p);
    return NULL;
  }
  return ag_str_detach(&p);
}

int ag__run_outcome(const char *ev, const char *herr, ag_trace_run_result *res, double timeout_s,
                    int allow_late, ag_str *why) {
  int rc = 0;
  char *hosterr = NULL;
  size_t hl = 0;
  if (ag_file_read(herr, &hosterr, &hl) == 0) {
    while (hl && hosterr[hl - 1] == '\n')
      hosterr[--hl] = 0;
  }
  int have_ev = access(ev, R_OK) == 0;
  /* the host runtime closed after writing the evidence: a death by a signal
   * after that (a library's teardown at exit) leaves the evidence whole; an
   * exit status is the program's own verdict and still fails the run */
  char *cp = beside(ev, AG_HOST_CLOSED_FILE);
  int closed = cp != NULL;
  ag_free(cp);
  if (allow_late && !res->proc.timed_out && !res->proc.exited && have_ev && !hosterr && closed) {
    ag_str d = AG_STR_INIT, note = AG_STR_INIT;
    ag_proc_describe(&res->proc, &d);
    ag_str_printf(&note, "the harness did not end cleanly (%s), after the Argus host runtime had "
                         "written the evidence and closed: the evidence is complete; what the "
                         "process did at its exit is not Argus's",
                  ag_str_cstr(&d));
    if (res->log_path)
      tail_of(res->log_path, &note);
    ag_str_release(&d);
    if (note.oom || !(res->late_exit = ag_str_detach(&note))) {
      ag_str_release(&note);
      ag_free(hosterr);
      return AG_ENOMEM;
    }
  }
  if (res->proc.timed_out) {
    ag_str_printf(why, "the harness did not finish within %.0f s and was killed", timeout_s);
    rc = AG_ETIMEOUT;
  } else if (!res->late_exit && (!res->proc.exited || res->proc.exit_code != 0)) {
    ag_str d = AG_STR_INIT;
    ag_proc_describe(&res->proc, &d);
    ag_str_printf(why, "the harness failed (%s)", ag_str_cstr(&d));
    ag_str_release(&d);
    if (hosterr)
      ag_str_printf(why, "; the argus host runtime reported: %s", hosterr);
    rc = hosterr && strstr(hosterr, "CUDA_ERROR") ? AG_ECUDA : AG_ECHILD;
  } else if (hosterr) {
    ag_str_printf(why, "the argus host runtime reported: %s", hosterr);
    rc = strstr(hosterr, "CUDA_ERROR") ? AG_ECUDA : AG_ECHILD;
  } else if (!have_ev) {
    ag_str_printf(why, "the harness exited without writing evidence: it must load its "
                       "module with ag_host_load and call ag_host_finish (or "
                       "ag_host_close) before it exits");
    rc = AG_ECHILD;
  }
  if (rc) {
    if (res->log_path)
      tail_of(res->log_path, why);
    if (have_ev)
      unlink(ev); /* a failed run's evidence is not evidence */
  } else {
    res->evidence_path = ag_strdup(ev);
    if (!res->evidence_path)
      rc = AG_ENOMEM;
    /* the kernel times beside a trace (absent from an older host runtime),
     * and the activity trace beside a trace or time run (ARGUS_ACTIVITY=1) */
    char *sys = rc ? NULL : beside(ev, AG_ACT_FILE);
    res->timing_path = rc ? NULL : beside(ev, AG_EV_TIMING_FILE);
    if (sys && strcmp(ev, sys))
      res->system_path = sys;
    else
      ag_free(sys);
  }
  ag_free(hosterr);
  return rc;
}

int ag_trace_run(const ag_trace_run_opts *o, ag_trace_run_result *res, ag_str *why) {
  memset(res, 0, sizeof *res);
  ag_str ev = AG_STR_INIT, herr = AG_STR_INIT, logp = AG_STR_INIT;
  ag_str e[AG__RUN_ENV_MAX];
  int ne = 0;
  int rc = ag__run_env(o, e, &ne);
  if (!rc)
    rc = ag__run_prepare(o, &ev, &herr, &logp, why);
  if (rc)
    goto out;
  size_t nx = 0;
  while (o->env_extra && o->env_extra[nx])
    nx++;
  const char **envv = ag_calloc((size_t)ne + nx + 1, sizeof *envv);
  if (!envv) {
    rc = AG_ENOMEM;
    goto out;
  }
  for (int i = 0; i < ne; i++)
    envv[i] = ag_str_cstr(&e[i]);
  for (size_t i = 0; i < nx; i++)
    envv[(size_t)ne + i] = o->env_extra[i];
  ag_proc_opts po;
  memset(&po, 0, sizeof po);
  po.argv = o->argv;
  po.env_add = envv;
  po.cwd = o->cwd;
  po.stdout_path = ag_str_cstr(&logp);
  po.stderr_path = ag_str_cstr(&logp);
  po.timeout_s = o->timeout_s > 0 ? o->timeout_s : 600;
  /* the hardware counters of user ranges: one run per replay pass, as long
   * as a run exits well and leaves counters.next (counters.h) */
  ag_str next = AG_STR_INIT;
  ag_str_printf(&next, "%s/%s", o->out_dir, AG_CTR_NEXT_FILE);
  int counters = !strcmp(ag_trace_run_collect(o), "counters");
  for (int pass = 0;; pass++) {
    rc = ag_proc_run(&po, &res->proc);
    if (rc) {
      ag_str_printf(why, "cannot start the harness '%s': %s", o->argv[0], ag_strerror(rc));
      ag_str_release(&next);
      ag_free(envv);
      goto out;
    }
    if (!counters || next.oom || !res->proc.exited || res->proc.exit_code != 0 ||
        access(ag_str_cstr(&next), F_OK) != 0)
      break;
    unlink(ag_str_cstr(&next));
    if (pass + 1 >= AG_CTR_MAX_PASSES) {
      ag_str_printf(why, "the hardware counters' application replay asked for more than %d "
                         "runs of the harness", AG_CTR_MAX_PASSES);
      ag_str_release(&next);
      ag_free(envv);
      rc = AG_ECHILD;
      goto out;
    }
  }
  ag_free(envv);
  ag_str_release(&next);
  res->log_path = ag_str_detach(&logp);
  rc = ag__run_outcome(ag_str_cstr(&ev), ag_str_cstr(&herr), res, po.timeout_s, 1, why);
out:
  for (int i = 0; i < AG__RUN_ENV_MAX; i++)
    ag_str_release(&e[i]);
  ag_str_release(&ev);
  ag_str_release(&herr);
  ag_str_release(&logp);
  return rc;
}
