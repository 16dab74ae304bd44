/*
 * cmd_observe.c — `argus observe SPEC --region R --signals s1,s2 [--scope …]`:
 * plans the query, runs it (memoized in the workspace), prints the report.
 * `--retry-failed` reruns the workspace's last query: what succeeded comes
 * from the workspace, only what failed runs again. Also holds the query
 * options shared with `argus plan` (cmd_plan.c).
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "argus/observe.h"
#include "argus/report.h"
#include "argus/spec.h"
#include "argus/store.h"

const ag_cli_opt cmd_observe_opts[] = {
    {"region", 'r', "NAME", "the region (qualified kernel/a/b or local name)"},
    {"signals", 's', "S[,S...]", "signals, comma-separated or the option repeated (default duration); see docs/observe.md"},
    {"scope", 0, "K=V,...", "role, iter, sm, cta, warp, launch (N or a:b)"},
    {"timeout", 0, "SECONDS", "kill a harness run after this long (default 300)"},
    {"records", 0, "N", "trace records per warp (default: the host runtime's)"},
    {"launches", 0, "SPEC", "launches to record: all, last, N or a:b (default: after the "
                            "warm-up, as many whole launches as the budget holds)"},
    {"trace", 0, "R,...", "probe only these regions and their subtrees in the traced run "
                          "(default: every region; fewer regions perturb less)"},
    {"metrics", 0, "M,...", "hardware counters to read beside hw_counters' default set "
                            "(names of the chip's metrics, e.g. lts__t_sectors.sum)"},
    {"counter-ranges", 0, "MODE", "hw_counters' ranges: auto (a range per kernel launch, the "
                                  "default) or user (the harness's ag_host_range_push/pop)"},
    {"timeline", 't', "FILE", "write the timeline signal's Chrome trace to FILE"},
    {"retry-failed", 0, NULL, "rerun the workspace's last query; only what failed runs again"},
    {"ignore-damage", 0, NULL, "write to the workspace even when its last check found damage"},
    {"summary", 0, "[=TOKENS]", "print the prompt-sized summary for agents instead of the "
                                "report (default 256 tokens; docs/report.md)"},
    {0},
};

static void progress(void *ud, const ag_plan *p, const ag_task *t, int done, int total) {
  if (!isatty(2))
    return;
  fprintf(stderr, "\r\033[K[%d/%d] %s %s%s", done, total, t->op, ag_task_status_name(t->status),
          done >= total ? "\n" : "");
}

/* The spec and the module file it names can be read, and the spec is well
 * formed: a bad path is the usage error it is in every command. */
static int spec_files(ag_cli *cli, const char *path) {
  int ec = ag_cli_input_file(cli, path);
  if (ec)
    return ec;
  ag_diags d;
  ag_diags_init(&d);
  ag_spec *sp = NULL;
  const char *why;
  int rc = ag_spec_load(path, &d, &sp);
  if (rc) {
    ag_cli_print_diags(&d);
    ec = ag_cli_fail_input(cli, rc, "invalid program spec '%s'", path);
  } else if ((sp->ptx || sp->cuda) && ag_file_problem(sp->ptx ? sp->ptx : sp->cuda, &why)) {
    ag_cli_error(cli, "cannot read '%s', the module of '%s': %s", sp->ptx ? sp->ptx : sp->cuda,
                 path, why);
    ec = AG_EXIT_USAGE;
  }
  ag_spec_free(sp);
  ag_diags_release(&d);
  return ec;
}

int ag_cli_query(ag_cli *cli, int plan_only, ag_observe_opts *o, char ***sigs_out,
                 const char **spec_out) {
  memset(o, 0, sizeof *o);
  o->workspace = cli->workspace;
  o->plan_only = plan_only;
  o->ignore_damage = ag_cli_flag(cli, "ignore-damage");
  o->ndevices = plan_only ? 0 : -1;
  o->progress = progress;
  *sigs_out = NULL;
  if (cli->npos != 1)
    return ag_cli_usage_error(cli, "expected one program spec");
  if (!ag_cli_get(cli, "region"))
    return ag_cli_usage_error(cli, "--region NAME is required");
  o->spec = cli->pos[0];
  *spec_out = o->spec;
  o->region = ag_cli_get(cli, "region");
  int n = 0;
  char **s = ag_cli_split_list(ag_cli_get(cli, "signals") ? ag_cli_get(cli, "signals")
                                                          : "duration", &n);
  if (!s || !n) {
    ag_cli_free_list(s);
    return ag_cli_usage_error(cli, "--signals needs at least one signal");
  }
  *sigs_out = s;
  o->signals = (const char *const *)s;
  o->nsignals = n;
  o->scope = ag_cli_get(cli, "scope");
  o->metrics = ag_cli_get(cli, "metrics");
  o->counter_ranges = ag_cli_get(cli, "counter-ranges");
  return spec_files(cli, o->spec);
}

/* Fills the query from the workspace's most recent one (--retry-failed). */
static int last_query(ag_cli *cli, ag_observe_opts *o, json_t **keep, char ***sigs) {
  ag_store *st = NULL;
  int rc = ag_store_open(cli->workspace, 0, &st);
  if (rc)
    return ag_cli_fail(cli, rc, "cannot open the workspace '%s': %s", cli->workspace,
                       ag_store_errmsg());
  ag_list_opts lo = {1, 0, NULL};
  ag_store_query *q = NULL;
  size_t n = 0;
  rc = ag_store_queries(st, &lo, &q, &n);
  ag_store_close(st);
  if (rc || !n) {
    ag_store_queries_free(q, n);
    return ag_cli_fail(cli, rc ? rc : AG_ENOTFOUND, "no earlier query to retry in '%s'",
                       cli->workspace);
  }
  *keep = json_loads(q[0].spec, 0, NULL);
  ag_store_queries_free(q, n);
  const char *spec = json_string_value(json_object_get(*keep, "spec"));
  json_t *js = json_object_get(*keep, "signals");
  if (!spec || !json_is_array(js))
    return ag_cli_fail(cli, AG_ECORRUPT, "the last query in '%s' cannot be retried",
                       cli->workspace);
  *sigs = ag_calloc(json_array_size(js) + 1, sizeof **sigs);
  for (size_t i = 0; *sigs && i < json_array_size(js); i++)
    (*sigs)[i] = ag_strdup(json_string_value(json_array_get(js, i)));
  memset(o, 0, sizeof *o);
  o->workspace = cli->workspace;
  o->ignore_damage = ag_cli_flag(cli, "ignore-damage");
  o->ndevices = -1;
  o->progress = progress;
  o->spec = spec;
  o->region = json_string_value(json_object_get(*keep, "region"));
  o->signals = (const char *const *)*sigs;
  o->nsignals = (int)json_array_size(js);
  o->scope = json_string_value(json_object_get(*keep, "scope"));
  return spec_files(cli, spec);
}

static void print_summary(const ag_observe_result *r) {
  fprintf(stderr, "argus observe: %s: %d tasks: %d ran ok, %d from the workspace, %d failed, "
                  "%d skipped (%.2f s)\n",
          r->program, r->stats.total, r->stats.ok, r->stats.cached, r->stats.failed,
          r->stats.skipped, r->stats.wall_s);
  /* what failed, and why: the report says what each failure cost (missing,
   * or a value of lower qualification), this says which task it was */
  for (size_t i = 0; r->plan && i < r->plan->tasks.n; i++) {
    const ag_task *t = r->plan->tasks.v[i];
    if (t->status == AG_TS_FAILED)
      fprintf(stderr, "argus observe: task #%d (%s) failed: %s\n", t->id, t->label,
              t->error ? t->error : "no reason given");
  }
}

int cmd_observe(ag_cli *cli) {
  ag_observe_opts o;
  char **sigs = NULL;
  json_t *keep = NULL;
  const char *spec = NULL;
  int ec;
  if (ag_cli_flag(cli, "retry-failed") && cli->npos == 0)
    ec = last_query(cli, &o, &keep, &sigs);
  else
    ec = ag_cli_query(cli, 0, &o, &sigs, &spec);
  if (ec) {
    ag_cli_free_list(sigs);
    json_decref(keep);
    return ec;
  }
  const char *v = ag_cli_get(cli, "timeout");
  if (v && (o.timeout_s = atof(v)) <= 0) {
    ag_cli_free_list(sigs);
    return ag_cli_usage_error(cli, "--timeout needs a positive number of seconds");
  }
  if ((v = ag_cli_get(cli, "records")) && (o.records_per_warp = (unsigned)atoi(v)) < 16) {
    ag_cli_free_list(sigs);
    return ag_cli_usage_error(cli, "--records needs a number >= 16");
  }
  int summary = 0;
  if ((v = ag_cli_get(cli, "summary"))) {
    char *end = NULL;
    long t = *v ? strtol(v, &end, 10) : AG_SUMMARY_DEFAULT_TOKENS;
    if ((*v && *end) || t < AG_SUMMARY_MIN_TOKENS || t > AG_SUMMARY_MAX_TOKENS) {
      ag_cli_free_list(sigs);
      json_decref(keep);
      return ag_cli_usage_error(cli, "--summary=TOKENS needs a number of tokens from %d to "
                                     "%d, not '%s'", AG_SUMMARY_MIN_TOKENS,
                                AG_SUMMARY_MAX_TOKENS, v);
    }
    summary = (int)t;
  }
  o.launches = ag_cli_get(cli, "launches");
  o.trace_regions = ag_cli_get(cli, "trace");
  ag_diags d;
  ag_diags_init(&d);
  ag_observe_result r;
  int rc = ag_observe(&o, &d, &r);
  if (d.items.n)
    ag_cli_print_diags(&d);
  ag_diags_release(&d);
  if (rc) {
    ec = rc == AG_EINVAL || rc == AG_EPARSE ? AG_EXIT_USAGE
                                            : ag_cli_fail(cli, rc, "the query could not run");
    goto out;
  }
  print_summary(&r);
  int gpu_failed = 0;
  for (size_t i = 0; r.plan && i < r.plan->tasks.n; i++)
    gpu_failed |= r.plan->tasks.v[i]->needs_gpu && r.plan->tasks.v[i]->status == AG_TS_FAILED;
  if (r.nogpu_reason[0] && gpu_failed)
    fprintf(stderr, "argus observe: could not collect on a GPU: %s\n", r.nogpu_reason);
  json_t *missing = json_object_get(r.report, "missing");
  const char *tl = ag_cli_get(cli, "timeline");
  if (tl && r.plan) {
    ag_store *st = NULL;
    const char *h = NULL;
    for (size_t i = 0; i < r.plan->tasks.n && !h; i++)
      if (r.plan->tasks.v[i]->outputs)
        h = json_string_value(json_object_get(r.plan->tasks.v[i]->outputs, "timeline"));
    if (!h)
      fprintf(stderr, "argus observe: no timeline to write (ask for --signals timeline)\n");
    else if (ag_store_open(cli->workspace, 0, &st) || ag_store_get_file(st, h, tl))
      fprintf(stderr, "argus observe: cannot write '%s': %s\n", tl, ag_store_errmsg());
    ag_store_close(st);
  }
  if (!r.report) {
    ec = ag_cli_fail(cli, 0, "no report was produced");
  } else if (summary) {
    ag_str s = AG_STR_INIT;
    int src = ag_report_summary(r.report, summary, &s);
    json_t *j = src || !cli->json ? NULL
                                  : json_pack("{s:s,s:s,s:i,s:I,s:s}", "schema", "argus.summary/1",
                                              "report", r.report_hash, "max_tokens", summary,
                                              "tokens", (json_int_t)ag_summary_tokens(s.len),
                                              "text", ag_str_cstr(&s));
    if (src)
      ec = ag_cli_fail(cli, src, "cannot summarize the report");
    else if (j)
      ag_cli_print_json(j);
    else
      fputs(ag_str_cstr(&s), stdout);
    if (!src) {
      fprintf(stderr, "argus observe: report %s (argus ws get %.12s)\n", r.report_hash,
              r.report_hash);
      ec = json_array_size(missing) ? AG_EXIT_FAIL : AG_EXIT_OK;
    }
    json_decref(j);
    ag_str_release(&s);
  } else if (cli->json) {
    ag_cli_print_json(r.report);
    ec = json_array_size(missing) ? AG_EXIT_FAIL : AG_EXIT_OK;
  } else {
    ag_str s = AG_STR_INIT;
    ag_report_json_text(r.report, &s);
    fputs(ag_str_cstr(&s), stdout);
    ag_str_release(&s);
    printf("report %s (argus ws get %.12s)\n", r.report_hash, r.report_hash);
    ec = json_array_size(missing) ? AG_EXIT_FAIL : AG_EXIT_OK;
  }
  ag_observe_result_release(&r);
out:
  ag_cli_free_list(sigs);
  json_decref(keep);
  return ec;
}
