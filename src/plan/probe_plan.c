/*
 * probe_plan.c — discovery-driven probe expansion (docs/probes.md): after the
 * Control(discover) task has listed the program's sites, every Synthesize
 * task of a per-instance signal (async_latency) gets one branch per (async
 * site in its region's subtree, iteration of its scope):
 *
 *   transform.probe {op, occurrence} -> compile -> collect (forces_completion)
 *
 * Only the pairs that can execute get a branch: discovery's "iterations" of
 * a site (an unrolled loop's copy runs at k = first + step*m) say which;
 * the requested pairs that do not exist are listed on the synthesis task
 * ("absent") for the report. What static analysis cannot tell (a remainder
 * copy's iterations depend on the trip count, a run-time value) the
 * counting run tells: a Control task `count` reads the reference run's
 * records per begin marker and iteration (ag_async_count), and every probe
 * collect waits for it; its expansion (ag_probe_prune) skips the probes of
 * pairs whose marker never began at that iteration, before they run, and
 * lists them as absent too. The synthesis task's "iterations_from" says
 * which knowledge the plan used ("static", then "counted").
 *
 * Each collect is its own run (ag_plan_partition gives every Collect task
 * one; per-instance collections are never merged): no two probes share a
 * run, and no probe shares the reference's run. Called once per Control
 * task; linear in sites x iterations.
 */
#include "argus/plan.h"

#include <string.h>

static const char *jstr(const json_t *o, const char *k) {
  return json_string_value(json_object_get(o, k));
}

/* Does task t depend on task `id` directly? */
static int uses(const ag_task *t, int id) {
  for (size_t k = 0; k < t->deps.n; k++)
    if (t->deps.v[k] == id)
      return 1;
  return 0;
}

static int probe_kind(const char *k) {
  static const char *const kinds[] = {"tma_load", "tma_store", "tma_reduce",
                                      "bulk_copy", "cp_async",  "wgmma"};
  for (size_t i = 0; k && i < sizeof kinds / sizeof kinds[0]; i++)
    if (!strcmp(k, kinds[i]))
      return 1;
  return 0;
}

/* 1 when region `id` is the queried region or inside it. */
static int in_subtree(const json_t *regions, const char *id, const char *query) {
  for (int guard = 0; id && guard < 4096; guard++) {
    const json_t *g = NULL;
    size_t i;
    json_t *x;
    json_array_foreach(regions, i, x) if (jstr(x, "id") && !strcmp(jstr(x, "id"), id)) g = x;
    if (!g)
      return 0;
    const char *q = jstr(g, "qname"), *n = jstr(g, "name");
    if ((q && !strcmp(q, query)) || (n && !strcmp(n, query)))
      return 1;
    id = jstr(g, "parent");
  }
  return 0;
}

static int add_branch(ag_plan *p, const ag_task *control, ag_task *synth, const char *op,
                      int64_t occ, int count) {
  char label[96];
  snprintf(label, sizeof label, "probe %s @ %lld", op, (long long)occ);
  ag_task *t = ag_plan_add(p, AG_TASK_TRANSFORM, "transform.probe", label, NULL, NULL,
                           json_pack("{s:s,s:s,s:I}", "variant", "probe", "op", op,
                                     "occurrence", (json_int_t)occ),
                           &control->id, 1);
  if (!t)
    return AG_ENOMEM;
  ag_task *c = ag_plan_add(p, AG_TASK_TRANSFORM, "compile", "compile PTX to cubin", NULL, NULL,
                           json_pack("{s:s}", "arch", "sm_90a"), &t->id, 1);
  if (!c)
    return AG_ENOMEM;
  snprintf(label, sizeof label, "run probe %s @ %lld", op, (long long)occ);
  /* the probe records one launch, the harness's second (caches and the
   * instruction cache warm, as in the reference's later launches); the
   * synthesis joins it with the same launch of the reference */
  ag_task *k = ag_plan_add(p, AG_TASK_COLLECT, "collect", label, NULL, NULL,
                           json_pack("{s:[s],s:s,s:s,s:I,s:i,s:i}", "backends", "trace",
                                     "variant", "probe", "op", op, "occurrence", (json_int_t)occ,
                                     "launches", 1, "skip", AG_PROBE_LAUNCH),
                           (int[]){c->id, count}, count >= 0 ? 2 : 1);
  if (!k)
    return AG_ENOMEM;
  k->effects = AG_EFF_FORCES_COMPLETION;
  k->needs_gpu = 1;
  k->sampling = (ag_sampling){0, 1};
  return ag_plan_add_dep(p, synth, k->id);
}

static void skip_unneeded(ag_plan *p, const char *why);

/* The signal does not apply (no site to probe): the synthesis is skipped
 * with the reason before anything runs, and so is every pending task that
 * only it needed (the reference run with timed waits). The scheduler
 * finishes such tasks when their inputs are done, without running them. */
static int not_applicable(ag_plan *p, ag_task *synth, const char *signal) {
  ag_str e = AG_STR_INIT;
  ag_str_printf(&e, "%s does not apply to '%s': it has no asynchronous site (TMA load, "
                    "store or reduce, bulk copy, cp.async, wgmma) in it or its subregions "
                    "(see 'argus regions'); nothing was run for it",
                signal, synth->region);
  if (e.oom) {
    ag_str_release(&e);
    return AG_ENOMEM;
  }
  ag_free(synth->error);
  synth->error = ag_str_detach(&e);
  synth->status = AG_TS_SKIPPED;
  skip_unneeded(p, "not needed: the only signal that needed it does not apply");
  return 0;
}

/* Skips every pending task (not a Control task) all of whose users are
 * skipped, upstream to a fixpoint; why: its reason. */
static void skip_unneeded(ag_plan *p, const char *why) {
  for (int changed = 1; changed;) { /* upstream, to a fixpoint */
    changed = 0;
    for (size_t i = 0; i < p->tasks.n; i++) {
      ag_task *t = p->tasks.v[i];
      if (t->status != AG_TS_PENDING || t->type == AG_TASK_CONTROL)
        continue;
      int users = 0, skipped = 0;
      for (size_t k = 0; k < p->tasks.n; k++)
        for (size_t j = 0; j < p->tasks.v[k]->deps.n; j++)
          if (p->tasks.v[k]->deps.v[j] == t->id) {
            users++;
            skipped += p->tasks.v[k]->status == AG_TS_SKIPPED;
          }
      if (!users || users != skipped)
        continue;
      ag_free(t->error);
      t->error = ag_strdup(why);
      t->status = AG_TS_SKIPPED;
      changed = 1;
    }
  }
}

/* 1 when the site can execute at iteration occ (discovery's "iterations":
 * first + step * m, m >= 0; unknown: any). */
static int can_execute(const json_t *site, int64_t occ) {
  const json_t *it = json_object_get(site, "iterations");
  const json_t *f = json_object_get(it, "first");
  if (!json_is_integer(f)) /* unknown: any iteration, the run tells */
    return json_is_object(json_object_get(site, "loop")) || occ == 0;
  int64_t first = json_integer_value(f), step = json_integer_value(json_object_get(it, "step"));
  if (!step)
    return occ == first;
  int64_t d = occ - first;
  return (step > 0 ? d >= 0 : d <= 0) && d % step == 0;
}

/* The requested (site, iteration) pairs that do not exist, one entry per
 * site: {op, absent: [iterations], why}, kept on the synthesis task's
 * config ("absent") for the report. */
static int note_absent(ag_task *synth, const json_t *site, const ag_scope_dim *it) {
  json_t *list = json_array();
  for (int k = 0; list && k < it->n; k++)
    for (int64_t occ = it->r[k].lo; occ < it->r[k].hi; occ++)
      if (!can_execute(site, occ) && json_array_append_new(list, json_integer((json_int_t)occ)))
        break;
  if (!list)
    return AG_ENOMEM;
  if (!json_array_size(list)) {
    json_decref(list);
    return 0;
  }
  json_t *all = json_object_get(synth->config, "absent");
  if (!all && (all = json_array()) && json_object_set_new(synth->config, "absent", all))
    all = NULL;
  const char *from = jstr(json_object_get(site, "iterations"), "from");
  json_t *e = json_pack("{s:s,s:o,s:s,s:s}", "op", jstr(site, "op_id"), "iterations", list, "why",
                        from ? from : "the site runs outside every loop", "from", "static");
  return !all || !e || json_array_append_new(all, e) ? AG_ENOMEM : 0;
}

/* The counting run for synth's probes (*count: its task id, -1 when none
 * is needed): a Control task over the discovery and the reference run, made
 * when some probed site's occurrence comes from a begin marker (the
 * reference records it per iteration); a plan without a reference run, or
 * whose sites count their own occurrences, keeps the static plan. */
static int add_count(ag_plan *p, const ag_task *control, ag_task *synth, const json_t *sites,
                     const json_t *regions, int *count) {
  *count = -1;
  int ref = -1, marked = 0;
  for (size_t k = 0; k < synth->deps.n; k++) {
    const ag_task *d = ag_plan_task(p, synth->deps.v[k]);
    if (d && d->type == AG_TASK_COLLECT && ref < 0)
      ref = d->id;
  }
  size_t i;
  json_t *x;
  json_array_foreach(sites, i, x) marked |=
      probe_kind(jstr(x, "kind")) && in_subtree(regions, jstr(x, "region"), synth->region) &&
      json_is_integer(json_object_get(json_object_get(x, "iterations"), "marker_line"));
  if (json_object_set_new(synth->config, "iterations_from", json_string("static")))
    return AG_ENOMEM;
  if (ref < 0 || !marked)
    return 0;
  /* "counts": the counting's format, part of the task's key; the key also
   * holds the discovery's and the reference's outputs, all it depends on */
  ag_task *c = ag_plan_add(p, AG_TASK_CONTROL, "count", "count the iterations each copy ran",
                           synth->region, NULL, json_pack("{s:i}", "counts", 1),
                           (int[]){control->id, ref}, 2);
  if (!c)
    return AG_ENOMEM;
  c->partial_ok = 1; /* a failed reference counts nothing and drops nothing */
  *count = c->id;
  return 0;
}

int ag_probe_expand(ag_plan *p, const ag_task *control, const json_t *discovery, ag_str *why) {
  const json_t *regions = json_object_get(discovery, "regions");
  const json_t *sites = json_object_get(discovery, "sites");
  if (!json_is_array(regions) || !json_is_array(sites)) {
    ag_str_puts(why, "the discovery output has no region or site table");
    return AG_EINVAL;
  }
  size_t ntasks = p->tasks.n;
  for (size_t ti = 0; ti < ntasks; ti++) {
    ag_task *s = p->tasks.v[ti];
    if (s->type != AG_TASK_SYNTHESIZE)
      continue;
    const char *signal = jstr(s->config, "signal");
    const ag_recipe *r = signal ? ag_recipe_find(signal) : NULL;
    const ag_evidence_kind *ek = r ? ag_evidence_find(r->evidence) : NULL;
    if (!ek || !ek->per_instance || !uses(s, control->id) || !s->region)
      continue;
    const ag_scope_dim *it = &s->scope.dim[AG_SCOPE_ITER];
    /* count first: refuse a plan too large to run before adding anything */
    int64_t total = 0;
    int nasync = 0;
    size_t i;
    json_t *x;
    json_array_foreach(sites, i, x) {
      if (probe_kind(jstr(x, "kind")) && in_subtree(regions, jstr(x, "region"), s->region)) {
        nasync++;
        for (int k = 0; k < it->n; k++)
          for (int64_t occ = it->r[k].lo; occ < it->r[k].hi && total <= AG_PROBE_MAX_BRANCHES;
               occ++)
            total += can_execute(x, occ);
      }
    }
    if (!nasync) {
      int rc = not_applicable(p, s, signal);
      if (rc)
        return rc;
      continue;
    }
    if (total > AG_PROBE_MAX_BRANCHES) {
      ag_str_printf(why, "'%s' over the scope's iterations makes more than %d probe runs: "
                         "narrow the region or the iteration window",
                    s->region, AG_PROBE_MAX_BRANCHES);
      return AG_EINVAL;
    }
    int count = -1, rc = add_count(p, control, s, sites, regions, &count);
    if (rc) {
      ag_str_printf(why, "out of memory adding the counting run of '%s'", s->region);
      return rc;
    }
    json_array_foreach(sites, i, x) {
      const char *op = jstr(x, "op_id");
      if (!op || !probe_kind(jstr(x, "kind")) || !in_subtree(regions, jstr(x, "region"), s->region))
        continue;
      /* only the pairs that can execute: an unrolled copy runs at its own
       * iterations, a site outside every loop at occurrence 0 */
      if (note_absent(s, x, it)) {
        ag_str_printf(why, "out of memory noting the absent iterations of %s", op);
        return AG_ENOMEM;
      }
      for (int k = 0; k < it->n; k++)
        for (int64_t occ = it->r[k].lo; occ < it->r[k].hi; occ++) {
          if (!can_execute(x, occ))
            continue;
          rc = add_branch(p, control, s, op, occ, count);
          if (rc) {
            ag_str_printf(why, "out of memory adding the probe of %s", op);
            return rc;
          }
        }
    }
  }
  return 0;
}

/* The count of marker `line` at iteration occ in the counting run's output
 * (ag_async_count), 0 when it never began there. */
static json_int_t counted(const json_t *counts, json_int_t line, int64_t occ) {
  size_t i, j;
  json_t *m, *e;
  json_array_foreach(json_object_get(counts, "markers"), i, m) {
    if (json_integer_value(json_object_get(m, "line")) != line)
      continue;
    json_array_foreach(json_object_get(m, "iterations"), j, e) if (
        json_integer_value(json_array_get(e, 0)) == occ) return json_integer_value(json_array_get(e, 1));
  }
  return 0;
}

/* Adds iteration occ of op to synth's counted absent entry. */
static int note_counted(ag_task *synth, const char *op, int64_t occ, const char *why) {
  json_t *all = json_object_get(synth->config, "absent"), *e = NULL, *x;
  size_t i;
  if (!all && (all = json_array()) && json_object_set_new(synth->config, "absent", all))
    return AG_ENOMEM;
  json_array_foreach(all, i, x) if (!strcmp(jstr(x, "op"), op) && jstr(x, "from") &&
                                    !strcmp(jstr(x, "from"), "counted")) e = x;
  if (!e && (!(e = json_pack("{s:s,s:[],s:s,s:s}", "op", op, "iterations", "why", why, "from",
                             "counted")) ||
             json_array_append_new(all, e)))
    return AG_ENOMEM;
  return json_array_append_new(json_object_get(e, "iterations"), json_integer((json_int_t)occ))
             ? AG_ENOMEM
             : 0;
}

int ag_probe_prune(ag_plan *p, const ag_task *count, const json_t *discovery,
                   const json_t *counts, ag_str *why) {
  const json_t *sites = json_object_get(discovery, "sites");
  int complete = json_is_true(json_object_get(counts, "complete"));
  json_int_t launches = json_integer_value(json_object_get(counts, "launches"));
  if (!json_is_array(sites) || !json_is_array(json_object_get(counts, "markers"))) {
    ag_str_puts(why, "the counting run's output or the discovery has no table");
    return AG_EINVAL;
  }
  int dropped = 0;
  for (size_t ti = 0; ti < p->tasks.n; ti++) {
    ag_task *t = p->tasks.v[ti];
    const char *v = jstr(t->config, "variant");
    if (t->type != AG_TASK_COLLECT || !uses(t, count->id) || !v || strcmp(v, "probe"))
      continue;
    const char *op = jstr(t->config, "op");
    int64_t occ = json_integer_value(json_object_get(t->config, "occurrence"));
    const json_t *site = NULL, *x;
    size_t i;
    json_array_foreach(sites, i, x) if (op && jstr(x, "op_id") && !strcmp(jstr(x, "op_id"), op))
        site = x;
    const json_t *it = json_object_get(site, "iterations");
    const json_t *line = json_object_get(it, "marker_line");
    if (!complete || t->status != AG_TS_PENDING || !json_is_integer(line) ||
        counted(counts, json_integer_value(line), occ) > 0)
      continue;
    /* the begin marker that gives this site its occurrence never began at
     * occ in any warp of any recorded launch: the probe cannot fire */
    ag_str w = AG_STR_INIT;
    ag_str_printf(&w, "counted: in the reference run's %lld recorded launch(es) the begin "
                      "marker at line %lld that gives it its iteration never began there "
                      "(a copy of an unrolled loop the trip count skips)",
                  (long long)launches, (long long)json_integer_value(line));
    int rc = w.oom ? AG_ENOMEM : 0;
    for (size_t k = 0; !rc && k < p->tasks.n; k++) {
      ag_task *s = p->tasks.v[k];
      if (s->type == AG_TASK_SYNTHESIZE && uses(s, t->id))
        rc = note_counted(s, op, occ, ag_str_cstr(&w));
    }
    ag_free(t->error);
    t->error = rc ? NULL : ag_str_detach(&w);
    ag_str_release(&w);
    if (rc || json_object_set_new(t->config, "absent", json_string("counted"))) {
      ag_str_printf(why, "out of memory dropping the probe of %s", op ? op : "?");
      return AG_ENOMEM;
    }
    t->status = AG_TS_SKIPPED;
    dropped++;
  }
  skip_unneeded(p, "not needed: the counting run dropped the only probe that needed it");
  /* what the plan's knowledge came from, on every synthesis the count feeds */
  for (size_t ti = 0; ti < p->tasks.n; ti++) {
    ag_task *s = p->tasks.v[ti];
    if (s->type != AG_TASK_SYNTHESIZE || !json_object_get(s->config, "iterations_from"))
      continue;
    int fed = 0;
    for (size_t j = 0; !fed && j < s->deps.n; j++) {
      const ag_task *d = ag_plan_task(p, s->deps.v[j]);
      fed = d && uses(d, count->id);
    }
    if (!fed)
      continue;
    ag_str w = AG_STR_INIT;
    if (complete)
      ag_str_printf(&w, "counted: the reference run's %lld launch(es) counted per copy and "
                        "iteration; %d probe(s) dropped", (long long)launches, dropped);
    else if (jstr(counts, "why"))
      ag_str_printf(&w, "static: %s, so nothing was dropped", jstr(counts, "why"));
    else
      ag_str_printf(&w, "static: the counting run lost %lld record(s) to full buffers, so "
                        "nothing was dropped",
                    (long long)json_integer_value(json_object_get(counts, "dropped")));
    int bad = w.oom || json_object_set_new(s->config, "iterations_from",
                                           json_string(ag_str_cstr(&w)));
    ag_str_release(&w);
    if (bad)
      return AG_ENOMEM;
  }
  return 0;
}
