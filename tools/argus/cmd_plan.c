/*
 * cmd_plan.c — `argus plan SPEC --region R --signals … [--scope …]`: the
 * measurement plan of a query without collecting. Runs the Control tasks
 * (discovery), so every discovered branch is shown; works without a GPU.
 * Text, --json, or --dot (Graphviz).
 */
#include "cli.h"

#include "argus/observe.h"

const ag_cli_opt cmd_plan_opts[] = {
    {"region", 'r', "NAME", "the region (qualified kernel/a/b or local name)"},
    {"signals", 's', "S[,S...]", "signals, comma-separated or the option repeated (default duration)"},
    {"scope", 0, "K=V,...", "role, iter, sm, cta, warp, launch (N or a:b)"},
    {"metrics", 0, "M,...", "hardware counters to read beside hw_counters' default set"},
    {"counter-ranges", 0, "MODE", "hw_counters' ranges: auto (per kernel launch) or user"},
    {"dot", 0, NULL, "print the DAG in Graphviz dot"},
    {"ignore-damage", 0, NULL, "write to the workspace even when its last check found damage"},
    {0},
};

int cmd_plan(ag_cli *cli) {
  ag_observe_opts o;
  char **sigs = NULL;
  const char *spec = NULL;
  int ec = ag_cli_query(cli, 1, &o, &sigs, &spec);
  if (ec) {
    ag_cli_free_list(sigs);
    return ec;
  }
  o.progress = NULL;
  ag_diags d;
  ag_diags_init(&d);
  ag_observe_result r;
  int rc = ag_observe(&o, &d, &r);
  if (d.items.n)
    ag_cli_print_diags(&d);
  ag_diags_release(&d);
  if (rc) {
    ag_cli_free_list(sigs);
    return rc == AG_EINVAL || rc == AG_EPARSE ? AG_EXIT_USAGE
                                              : ag_cli_fail(cli, rc, "cannot plan the query");
  }
  ec = AG_EXIT_OK;
  if (cli->json) {
    json_t *j = ag_plan_to_json(r.plan);
    ag_cli_print_json(j);
    json_decref(j);
  } else {
    ag_str s = AG_STR_INIT;
    if (ag_cli_flag(cli, "dot"))
      ag_plan_print_dot(r.plan, &s);
    else
      ag_plan_print_text(r.plan, &s);
    fputs(ag_str_cstr(&s), stdout);
    ag_str_release(&s);
  }
  /* a discovery failure (unknown region, bad markers) is a failed plan */
  for (const ag_task *f = ag_plan_next_failed(r.plan, NULL); f; f = ag_plan_next_failed(r.plan, f)) {
    ag_cli_error(cli, "%s failed: %s", f->op, f->error ? f->error : "");
    ec = AG_EXIT_FAIL;
  }
  ag_observe_result_release(&r);
  ag_cli_free_list(sigs);
  return ec;
}
