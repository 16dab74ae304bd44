/*
 * cmd_optimize.c — `argus optimize TASK`: the optimization loop
 * (docs/optimize.md; the library is src/agent). Prints one line per trial
 * (or the run as JSON) and where the best version is.
 */
#include "argus/agent.h"
#include "cli.h"

#include <stdlib.h>
#include <string.h>

const ag_cli_opt cmd_optimize_opts[] = {
    {"policy", 0, "NAME", "evidence (default), blind, or llm (the command after '--')"},
    {"trials", 0, "N", "candidates in the whole run, resumed ones included (default 5)"},
    {"budget-seconds", 0, "S", "start no trial after S seconds of this invocation"},
    {"resume", 0, NULL, "continue the run of this task recorded in the workspace"},
    {"cpu", 0, NULL, "validate in the value interpreter even where a GPU is (nothing is timed)"},
    {"kb", 0, "DIR", "the knowledge base (default $ARGUS_KB_DIR or the shipped src/agent/kb)"},
    {"policy-timeout", 0, "S", "llm: seconds the policy command may take per candidate (600)"},
    {"seed", 0, "N", "the search's seed: its tie order and blind's order (default: the task's "
                     "first seed; a resumed run keeps its own)"},
    {"policy-tokens", 0, "N", "llm: the request's token budget (4 bytes a token): the oldest "
                              "trials of its history are left out to fit (32768)"},
    {0},
};

const char cmd_optimize_details[] =
    "Every candidate is a program version in the workspace, forked from its parent by the\n"
    "edit that made it; its validator verdict is bound to it. Refs: optimize/TASK/best (the\n"
    "best version by measured time; the start while nothing is timed), optimize/TASK/state.\n"
    "'argus ws log' shows the trajectory. The llm policy runs the command after '--' (argv,\n"
    "never a shell) with a JSON request on stdin; it prints one candidate. docs/optimize.md.";

static int parse_num(ag_cli *cli, const char *opt, double lo, double hi, double *out) {
  const char *s = ag_cli_get(cli, opt);
  if (!s)
    return 0;
  char *end;
  double v = strtod(s, &end);
  if (!*s || *end || !(v >= lo && v <= hi))
    return ag_cli_usage_error(cli, "--%s must be a number in %g..%g, not '%s'", opt, lo, hi, s);
  *out = v;
  return 0;
}

int cmd_optimize(ag_cli *cli) {
  if (cli->npos < 1)
    return ag_cli_usage_error(cli, "optimize needs a task file (docs/optimize.md, \"Task files\")");
  const char *policy = ag_cli_get(cli, "policy");
  policy = policy ? policy : "evidence";
  if (strcmp(policy, "evidence") && strcmp(policy, "blind") && strcmp(policy, "llm"))
    return ag_cli_usage_error(cli, "unknown policy '%s' (evidence, blind, llm)", policy);
  int is_llm = !strcmp(policy, "llm");
  if (is_llm && cli->npos < 2)
    return ag_cli_usage_error(cli, "--policy llm needs its command after '--': argus optimize "
                                   "TASK --policy llm -- PROGRAM [ARG...]");
  if (!is_llm && cli->npos > 1)
    return ag_cli_usage_error(cli, "unexpected argument '%s' (only --policy llm takes a "
                                   "command after '--')", cli->pos[1]);
  double trials = 5, budget = 0, ptime = 600, ptok = 32768, seed = 0;
  int rc;
  if ((rc = parse_num(cli, "trials", 1, 10000, &trials)) ||
      (rc = parse_num(cli, "budget-seconds", 0.001, 1e9, &budget)) ||
      (rc = parse_num(cli, "policy-timeout", 0.001, 1e6, &ptime)) ||
      (rc = parse_num(cli, "policy-tokens", 1024, 1e8, &ptok)) ||
      (rc = parse_num(cli, "seed", 1, 4294967295.0, &seed)))
    return rc;
  if (ptok != (int)ptok)
    return ag_cli_usage_error(cli, "--policy-tokens must be an integer");
  if (seed != (double)(uint64_t)seed)
    return ag_cli_usage_error(cli, "--seed must be an integer");
  if (trials != (int)trials)
    return ag_cli_usage_error(cli, "--trials must be an integer");
  if ((rc = ag_cli_input_file(cli, cli->pos[0])))
    return rc;
  ag_diags d;
  ag_diags_init(&d);
  ag_opt_task *t = NULL;
  rc = ag_opt_task_load(cli->pos[0], &d, &t);
  if (rc) {
    ag_cli_print_diags(&d);
    ag_diags_release(&d);
    return ag_cli_fail_input(cli, rc, "the task file '%s' is not valid", cli->pos[0]);
  }
  ag_diags_release(&d);
  ag_store *st = NULL;
  if ((rc = ag_store_open(cli->workspace, AG_STORE_CREATE, &st))) {
    ag_opt_task_free(t);
    return ag_cli_fail(cli, rc, "cannot open the workspace '%s': %s", cli->workspace,
                       ag_store_errmsg());
  }
  ag_opt_opts o;
  memset(&o, 0, sizeof o);
  o.policy = policy;
  o.llm_argv = is_llm ? cli->pos + 1 : NULL;
  o.trials = (int)trials;
  o.budget_s = budget;
  o.resume = ag_cli_flag(cli, "resume");
  o.kb_dir = ag_cli_get(cli, "kb");
  o.device = ag_cli_flag(cli, "cpu") ? AG_OPT_DEVICE_CPU : AG_OPT_DEVICE_AUTO;
  o.llm_timeout_s = ptime;
  o.llm_tokens = (int)ptok;
  o.seed = (uint64_t)seed;
  ag_opt_result r;
  char err[2048];
  rc = ag_opt_run(st, t, &o, &r, err, sizeof err);
  int code = AG_EXIT_OK;
  if (cli->json) {
    json_t *arr = json_array();
    for (int i = 0; i < r.ntrials; i++) {
      ag_opt_trial *x = &r.trials[i];
      json_t *j = json_pack("{s:i, s:I, s:I, s:s, s:b, s:s}", "trial", x->n, "version",
                            (json_int_t)x->version, "parent", (json_int_t)x->parent, "edit",
                            x->edit, "valid", x->valid, "failed_step", x->step);
      if (x->timed)
        json_object_set_new(j, "median_ms", json_real(x->median_ms));
      if (x->rank)
        json_object_set_new(j, "rank", json_string(x->rank));
      json_object_set_new(j, "evidence", json_boolean(x->has_evidence));
      json_array_append_new(arr, j);
    }
    if (!rc) {
      json_t *out = json_pack("{s:s, s:s, s:s, s:o, s:I, s:s, s:s}", "schema",
                              "argus.optimize/1", "task", t->name, "policy", policy, "trials",
                              arr, "best", (json_int_t)r.best, "state", r.state, "stopped",
                              r.stopped == 1 ? "budget" : r.stopped == 2 ? "exhausted" : "trials");
      ag_cli_print_json(out);
      json_decref(out);
    } else {
      json_decref(arr);
    }
  } else {
    for (int i = 0; i < r.ntrials; i++) {
      ag_opt_trial *x = &r.trials[i];
      char tm[64] = "not timed";
      if (x->timed)
        snprintf(tm, sizeof tm, "%.4f ms", x->median_ms);
      if (x->parent)
        printf("trial %d: v%lld from v%lld by %s: %s%s%s\n", x->n, (long long)x->version,
               (long long)x->parent, x->edit, x->valid ? "valid, " : "rejected at ",
               x->valid ? tm : x->step, "");
      if (x->rank)
        printf("  ranked by %s\n", x->rank);
      else
        printf("trial %d: v%lld (the start, %s): %s%s\n", x->n, (long long)x->version, t->program,
               x->valid ? "valid, " : "rejected at ", x->valid ? tm : x->step);
    }
    if (!rc) {
      if (r.stopped == 1)
        printf("stopped by the budget (--budget-seconds); continue with --resume\n");
      else if (r.stopped == 2)
        printf("the search is exhausted: no knowledge-base edit applies that was not tried\n");
      printf("best: v%lld (ref optimize/%s/best)%s\n", (long long)r.best, t->name,
             r.ntrials && !r.trials[0].timed ? "; nothing was timed (no GPU): the best by "
                                               "measured time is the start"
                                             : "");
    }
  }
  if (rc) {
    ag_cli_error(cli, "%s", err);
    code = rc == AG_ENOMEM || rc == AG_EIO || rc == AG_ECHILD ? AG_EXIT_FAIL
           : rc == AG_EPARSE || rc == AG_EEXISTS || rc == AG_ENOTFOUND || rc == AG_EINVAL
               ? (rc == AG_EPARSE && is_llm ? AG_EXIT_FAIL : AG_EXIT_USAGE)
               : AG_EXIT_FAIL;
  }
  ag_opt_result_release(&r);
  ag_store_close(st);
  ag_opt_task_free(t);
  return code;
}
