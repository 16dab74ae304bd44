/*
 * plan_print.c — the plan for people (text), for programs (JSON) and for
 * Graphviz (dot). Used by `argus plan` and in reports' provenance.
 */
#include "argus/plan.h"

static void deps_text(const ag_task *t, ag_str *out) {
  for (size_t i = 0; i < t->deps.n; i++)
    ag_str_printf(out, "%s#%d", i ? "," : "", t->deps.v[i]);
}

int ag_plan_print_text(const ag_plan *p, ag_str *out) {
  ag_str sc = AG_STR_INIT;
  ag_scope_format(&p->query.scope, &sc);
  ag_str_printf(out, "plan for observe(%s, [", p->query.region);
  for (int i = 0; i < p->query.nsignals; i++)
    ag_str_printf(out, "%s%s", i ? "," : "", p->query.signals[i]);
  ag_str_printf(out, "], {%s}) on %s: %zu tasks, %d run%s\n", ag_str_cstr(&sc),
                p->program && *p->program ? p->program : "(program)", p->tasks.n, p->nruns,
                p->nruns == 1 ? "" : "s");
  ag_str_release(&sc);
  for (size_t i = 0; i < p->tasks.n; i++) {
    const ag_task *t = p->tasks.v[i];
    ag_str_printf(out, "  #%-3d %-10s %-20s", t->id, ag_task_type_name(t->type), t->op);
    if (t->run >= 0)
      ag_str_printf(out, " run %d", t->run);
    if (t->deps.n) {
      ag_str_puts(out, " <- ");
      deps_text(t, out);
    }
    if (t->effects) {
      ag_str_puts(out, " effects=");
      ag_effects_format(t->effects, out);
    }
    if (t->status != AG_TS_PENDING)
      ag_str_printf(out, " [%s]", ag_task_status_name(t->status));
    ag_str_printf(out, "  %s\n", t->label);
    if (t->error)
      ag_str_printf(out, "        why: %s\n", t->error);
  }
  return out->oom ? AG_ENOMEM : 0;
}

json_t *ag_plan_to_json(const ag_plan *p) {
  json_t *tasks = json_array();
  for (size_t i = 0; i < p->tasks.n; i++) {
    const ag_task *t = p->tasks.v[i];
    json_t *deps = json_array();
    for (size_t k = 0; k < t->deps.n; k++)
      json_array_append_new(deps, json_integer(t->deps.v[k]));
    ag_str eff = AG_STR_INIT, sc = AG_STR_INIT;
    ag_effects_format(t->effects, &eff);
    ag_scope_format(&t->scope, &sc);
    json_t *o = json_pack("{s:i,s:s,s:s,s:s,s:O,s:o,s:s,s:s,s:s?,s:b,s:{s:i,s:i},s:s}", "id",
                          t->id, "type", ag_task_type_name(t->type), "op", t->op, "label",
                          t->label, "config", t->config, "deps", deps, "effects",
                          ag_str_cstr(&eff), "scope", ag_str_cstr(&sc), "region", t->region,
                          "needs_gpu", t->needs_gpu, "sampling", "warmups", t->sampling.warmups,
                          "repetitions", t->sampling.repetitions, "status",
                          ag_task_status_name(t->status));
    ag_str_release(&eff);
    ag_str_release(&sc);
    if (t->run >= 0)
      json_object_set_new(o, "run", json_integer(t->run));
    if (t->key[0])
      json_object_set_new(o, "key", json_string(t->key));
    if (t->error)
      json_object_set_new(o, "error", json_string(t->error));
    json_array_append_new(tasks, o);
  }
  json_t *sigs = json_array();
  for (int i = 0; i < p->query.nsignals; i++)
    json_array_append_new(sigs, json_string(p->query.signals[i]));
  ag_str sc = AG_STR_INIT;
  ag_scope_format(&p->query.scope, &sc);
  json_t *j = json_pack("{s:{s:s,s:o,s:s},s:s,s:i,s:o}", "query", "region", p->query.region,
                        "signals", sigs, "scope", ag_str_cstr(&sc), "program", p->program,
                        "runs", p->nruns, "tasks", tasks);
  ag_str_release(&sc);
  return j;
}

int ag_plan_print_dot(const ag_plan *p, ag_str *out) {
  static const char *const shapes[] = {"box", "ellipse", "note", "diamond"};
  ag_str_puts(out, "digraph plan {\n  rankdir=LR;\n  node [fontname=\"monospace\"];\n");
  for (size_t i = 0; i < p->tasks.n; i++) {
    const ag_task *t = p->tasks.v[i];
    ag_str_printf(out, "  t%d [shape=%s,label=\"#%d %s", t->id, shapes[t->type], t->id, t->op);
    if (t->run >= 0)
      ag_str_printf(out, "\\nrun %d", t->run);
    ag_str_puts(out, "\"];\n");
    for (size_t k = 0; k < t->deps.n; k++)
      ag_str_printf(out, "  t%d -> t%d;\n", t->deps.v[k], t->id);
  }
  ag_str_puts(out, "}\n");
  return out->oom ? AG_ENOMEM : 0;
}
