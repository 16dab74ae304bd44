/*
 * plan.c — the planner: binds each signal's recipe to the program version,
 * region and scope, adds prerequisites recursively, and builds the DAG of
 * typed tasks. Identical tasks (same op, canonical config and dependencies)
 * are one node, so signals that need the same evidence share it; Collect
 * tasks of one variant merge only when their effects do not conflict.
 * Planning a 1,000-task DAG takes well under a millisecond per hundred tasks
 * (bench/bench_plan.c).
 */
#include "argus/plan.h"

#include <string.h>

static const char *const status_names[] = {"pending", "running", "ok",
                                           "failed",  "skipped", "cached"};

const char *ag_task_status_name(ag_task_status s) {
  return (unsigned)s < 6 ? status_names[s] : "?";
}

/* Dedup index: "op\0canonical-config\0dep,dep,..." -> task. Kept beside the
 * plan (not in the public struct) through a side table keyed by plan. */
typedef struct plan_impl {
  ag_plan pub;
  ag_map index;
} plan_impl;

static int dedup_key(const char *op, const json_t *config, const int *deps, int ndeps,
                     ag_str *k) {
  char *c = ag_json_canonical(config);
  if (!c)
    return AG_ENOMEM;
  ag_str_puts(k, op);
  ag_str_putc(k, '\n');
  ag_str_puts(k, c);
  ag_str_putc(k, '\n');
  /* dependencies as a sorted set */
  int tmp[64];
  int n = ndeps < 64 ? ndeps : 64;
  if (n)
    memcpy(tmp, deps, sizeof(int) * (size_t)n);
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && tmp[j - 1] > tmp[j]; j--) {
      int t = tmp[j];
      tmp[j] = tmp[j - 1];
      tmp[j - 1] = t;
    }
  for (int i = 0; i < n; i++)
    ag_str_printf(k, "%d,", tmp[i]);
  ag_free(c);
  return k->oom ? AG_ENOMEM : 0;
}

ag_task *ag_plan_task(const ag_plan *p, int id) {
  return id >= 0 && (size_t)id < p->tasks.n ? p->tasks.v[id] : NULL;
}

const ag_task *ag_plan_next_failed(const ag_plan *p, const ag_task *after) {
  for (size_t i = after ? (size_t)after->id + 1 : 0; i < p->tasks.n; i++)
    if (p->tasks.v[i]->status == AG_TS_FAILED)
      return p->tasks.v[i];
  return NULL;
}

int ag_plan_add_dep(ag_plan *p, ag_task *t, int dep) {
  for (size_t i = 0; i < t->deps.n; i++)
    if (t->deps.v[i] == dep)
      return 0;
  return ag_vec_push(&t->deps, dep);
}

ag_task *ag_plan_add(ag_plan *p, ag_task_type type, const char *op, const char *label,
                     const char *region, const ag_scope *scope, json_t *config,
                     const int *deps, int ndeps) {
  plan_impl *pi = (plan_impl *)p;
  if (!op) {
    json_decref(config);
    return NULL;
  }
  if (!config)
    config = json_object();
  if (!config)
    return NULL;
  /* region and scope are part of identity */
  if (region)
    json_object_set_new(config, "region", json_string(region));
  ag_str sc = AG_STR_INIT, key = AG_STR_INIT;
  if (scope)
    ag_scope_format(scope, &sc);
  if (sc.len)
    json_object_set_new(config, "scope", json_string(sc.p));
  ag_task *t = NULL;
  if (dedup_key(op, config, deps, ndeps, &key))
    goto out;
  if ((t = ag_map_get(&pi->index, key.p, key.len))) {
    json_decref(config);
    config = NULL;
    goto out;
  }
  t = ag_arena_alloc(&p->arena, sizeof *t);
  if (!t)
    goto out;
  t->id = (int)p->tasks.n;
  t->type = type;
  t->op = ag_arena_strdup(&p->arena, op);
  t->label = ag_arena_strdup(&p->arena, label ? label : op);
  t->program = p->program;
  t->region = region ? ag_arena_strdup(&p->arena, region) : NULL;
  if (!t->op || !t->label || (region && !t->region)) {
    t = NULL;
    goto out;
  }
  if (scope)
    t->scope = *scope;
  t->config = config;
  config = NULL;
  t->run = -1;
  t->sampling = (ag_sampling){type == AG_TASK_COLLECT ? 1 : 0, 1};
  for (int i = 0; i < ndeps; i++)
    if (ag_plan_add_dep(p, t, deps[i]))
      goto fail;
  if (ag_vec_push(&p->tasks, t))
    goto fail;
  if (ag_map_put(&pi->index, key.p, key.len, t)) {
    p->tasks.n--;
    goto fail;
  }
  goto out;
fail:
  ag_vec_free(&t->deps);
  json_decref(t->config);
  t = NULL;
out:
  json_decref(config);
  ag_str_release(&sc);
  ag_str_release(&key);
  return t;
}

void ag_plan_partition(ag_plan *p) {
  int run = 0;
  for (size_t i = 0; i < p->tasks.n; i++) {
    ag_task *t = p->tasks.v[i];
    t->run = t->type == AG_TASK_COLLECT ? run++ : -1;
  }
  p->nruns = run;
}

/* Finds a Collect task on the same compiled variant whose effects do not
 * conflict with `effects`, and adds the backend to it; else makes a new one. */
static ag_task *collect_for(ag_plan *p, ag_task *compiled, const ag_evidence_kind *ek,
                            const ag_scope *scope) {
  for (size_t i = 0; i < p->tasks.n; i++) {
    ag_task *t = p->tasks.v[i];
    if (t->type != AG_TASK_COLLECT || t->deps.n < 1 || t->deps.v[0] != compiled->id)
      continue;
    if (ag_effects_conflict(t->effects, ek->effects) || ek->per_instance)
      continue;
    json_t *b = json_object_get(t->config, "backends");
    size_t k;
    json_t *v;
    int have = 0;
    size_t at = json_array_size(b);
    json_array_foreach(b, k, v) {
      int c = strcmp(json_string_value(v), ek->backend);
      have |= c == 0;
      if (c > 0 && at > k)
        at = k;
    }
    if (!have) /* kept sorted: the same backends make the same key, in any signal order */
      json_array_insert_new(b, at, json_string(ek->backend));
    t->effects |= ek->effects;
    return t;
  }
  json_t *cfg = json_pack("{s:[s],s:s}", "backends", ek->backend, "variant", ek->variant);
  ag_str label = AG_STR_INIT;
  ag_str_printf(&label, "run %s variant", ek->variant);
  ag_task *t = ag_plan_add(p, AG_TASK_COLLECT, "collect", ag_str_cstr(&label), NULL, scope, cfg,
                           &compiled->id, 1);
  ag_str_release(&label);
  if (t) {
    t->effects = ek->effects;
    t->needs_gpu = 1;
    t->sampling = (ag_sampling){1, 1};
  }
  return t;
}

/* The task whose output is the evidence of kind ek: its variant, compiled,
 * and (when a run is needed) collected. Returns the task id or -1. */
static int source_for(ag_plan *p, const ag_recipe_table *tb, const ag_evidence_kind *ek,
                      int prereq) {
  /* the variant: a traced variant probes every region of the module, so
   * one reference run serves this query and any zoom-in on a subregion or
   * a narrower scope (synthesis selects); docs/observe.md */
  json_t *cfg = ek->transform ? json_loads(ek->transform, 0, NULL) : json_object();
  if (!cfg)
    return -1;
  json_object_set_new(cfg, "variant", json_string(ek->variant));
  ag_str op = AG_STR_INIT;
  ag_str_printf(&op, "transform.%s", ek->variant);
  ag_task *v = ag_plan_add(p, AG_TASK_TRANSFORM, ag_str_cstr(&op), ag_str_cstr(&op), NULL, NULL,
                           cfg, &prereq, prereq >= 0 ? 1 : 0);
  ag_str_release(&op);
  if (!v)
    return -1;
  /* a variant with a baseline is compiled within the baseline build's
   * occupancy: its compile reads the baseline's compile report */
  const ag_evidence_kind *bk = ek->baseline ? ag_evidence_table_find(tb, ek->baseline) : NULL;
  int cdeps[2] = {v->id, -1}, ncd = 1;
  int base_run = -1;
  if (bk) {
    if ((base_run = source_for(p, tb, bk, prereq)) < 0)
      return -1;
    ag_task *br = ag_plan_task(p, base_run);
    cdeps[ncd++] = br->type == AG_TASK_COLLECT ? br->deps.v[0] : br->id;
  }
  json_t *ccfg = ek->compile ? json_loads(ek->compile, 0, NULL) : json_object();
  if (!ccfg)
    return -1;
  json_object_set_new(ccfg, "arch", json_string("sm_90a"));
  if (bk)
    json_object_set_new(ccfg, "occupancy_of", json_string(bk->variant));
  ag_task *cc = ag_plan_add(p, AG_TASK_TRANSFORM, "compile",
                            json_is_true(json_object_get(ccfg, "lineinfo"))
                                ? "compile PTX to cubin (-lineinfo)"
                                : "compile PTX to cubin",
                            NULL, NULL, ccfg, cdeps, ncd);
  if (!cc)
    return -1;
  if (!ek->backend)
    return cc->id;
  ag_task *col = collect_for(p, cc, ek, NULL);
  /* the baseline runs first: its launches size this run's record budget */
  if (col && base_run >= 0 && ag_plan_task(p, base_run)->type == AG_TASK_COLLECT) {
    if (ag_plan_add_dep(p, col, base_run))
      return -1;
    col->partial_ok = 1; /* without the baseline it runs with the default sizing */
  }
  return col ? col->id : -1;
}

/* Per-instance evidence needs the iteration window its branches cover. */
static int check_instances(const ag_query *q, const ag_recipe_table *tb, ag_diags *d) {
  int bad = 0;
  for (int i = 0; i < q->nsignals; i++) {
    const ag_recipe *r = ag_recipe_table_find(tb, q->signals[i]);
    const ag_evidence_kind *ek = r ? ag_evidence_table_find(tb, r->evidence) : NULL;
    if (ek && ek->per_instance && q->scope.dim[AG_SCOPE_ITER].n == 0) {
      ag_diags_add(d, AG_SEV_ERROR, NULL, 0, 0, NULL, 0,
                   "signal '%s' runs one probe per site and iteration: give the iterations "
                   "in the scope (--scope iter=0:8)",
                   r->signal);
      bad = 1;
    }
  }
  return bad ? AG_EINVAL : 0;
}

static int has_signal(const ag_query *q, const char *name) {
  for (int i = 0; i < q->nsignals; i++)
    if (!strcmp(q->signals[i], name))
      return 1;
  return 0;
}

/* The timeline and the system timeline in one query: the traced run the
 * timeline reads also takes CUPTI's activity trace (its config "activity",
 * part of its key), so the timeline's Chrome trace holds the region tracks
 * and the system tracks of one run on one clock (docs/system.md, "Chrome
 * trace"); the `system` signal keeps its own run (the build the user
 * ships). 0, or AG_ENOMEM. */
static int join_system_timeline(ag_plan *p, const ag_query *q) {
  if (!has_signal(q, "timeline") || !has_signal(q, "system"))
    return 0;
  for (size_t i = 0; i < p->tasks.n; i++) {
    ag_task *s = p->tasks.v[i];
    if (s->type != AG_TASK_SYNTHESIZE || strcmp(s->op, "synth.timeline") || !s->deps.n)
      continue;
    ag_task *c = ag_plan_task(p, s->deps.v[0]);
    if (!c || c->type != AG_TASK_COLLECT || json_is_true(json_object_get(c->config, "activity")))
      continue;
    const char *label = ag_arena_strdup(&p->arena, "run traced variant with CUPTI's activity "
                                                   "trace beside it (the timeline's system "
                                                   "tracks)");
    if (!label || json_object_set_new(c->config, "activity", json_true()))
      return AG_ENOMEM;
    c->label = label;
  }
  return 0;
}

int ag_plan_build(const ag_query *q, const char *program, ag_diags *d, ag_plan **out) {
  return ag_plan_build_table(q, program, ag_recipe_builtin(), d, out);
}

int ag_plan_build_table(const ag_query *q, const char *program, const ag_recipe_table *tb,
                        ag_diags *d, ag_plan **out) {
  *out = NULL;
  if (!q->region || !*q->region) {
    ag_diags_add(d, AG_SEV_ERROR, NULL, 0, 0, NULL, 0, "a query needs a region (--region NAME)");
    return AG_EINVAL;
  }
  if (q->nsignals <= 0) {
    ag_diags_add(d, AG_SEV_ERROR, NULL, 0, 0, NULL, 0,
                 "a query needs at least one signal (--signals s1,s2)");
    return AG_EINVAL;
  }
  int bad = 0;
  for (int i = 0; i < q->nsignals; i++)
    if (!ag_recipe_table_find(tb, q->signals[i])) {
      ag_str known = AG_STR_INIT, near = AG_STR_INIT;
      const char **names = ag_calloc(tb->nrecipes + 1, sizeof *names);
      for (size_t k = 0; k < tb->nrecipes; k++) {
        ag_str_printf(&known, "%s%s", k ? ", " : "", tb->recipes[k].signal);
        if (names)
          names[k] = tb->recipes[k].signal;
      }
      if (names && ag_str_suggest(&near, q->signals[i], names, tb->nrecipes))
        ag_diags_add(d, AG_SEV_ERROR, NULL, 0, 0, NULL, 0,
                     "unknown signal '%s': %s (known: %s)", q->signals[i], ag_str_cstr(&near),
                     ag_str_cstr(&known));
      else
        ag_diags_add(d, AG_SEV_ERROR, NULL, 0, 0, NULL, 0, "unknown signal '%s' (known: %s)",
                     q->signals[i], ag_str_cstr(&known));
      ag_free(names);
      ag_str_release(&near);
      ag_str_release(&known);
      bad = 1;
    }
  if (bad || check_instances(q, tb, d))
    return AG_EINVAL;
  plan_impl *pi = ag_calloc(1, sizeof *pi);
  if (!pi)
    return AG_ENOMEM;
  ag_plan *p = &pi->pub;
  ag_arena_init(&p->arena, 0);
  ag_map_init(&pi->index);
  p->report_task = -1;
  p->program = ag_arena_strdup(&p->arena, program ? program : "");
  p->query = *q;
  p->query.region = ag_arena_strdup(&p->arena, q->region);
  const char **sigs = ag_arena_alloc(&p->arena, sizeof(char *) * (size_t)q->nsignals);
  int rc = AG_ENOMEM;
  if (!p->program || !p->query.region || !sigs)
    goto fail;
  for (int i = 0; i < q->nsignals; i++)
    if (!(sigs[i] = ag_arena_strdup(&p->arena, q->signals[i])))
      goto fail;
  p->query.signals = sigs;

  AG_VEC(int) synths = {0};
  for (int i = 0; i < q->nsignals; i++) {
    const ag_recipe *r = ag_recipe_table_find(tb, q->signals[i]);
    const ag_evidence_kind *ek = ag_evidence_table_find(tb, r->evidence);
    int prereq = -1;
    if (!ek) {
      ag_diags_add(d, AG_SEV_ERROR, NULL, 0, 0, NULL, 0,
                   "signal '%s' names evidence '%s' that the recipe table does not have",
                   r->signal, r->evidence);
      rc = AG_EINVAL;
      goto fail_vec;
    }
    if (ek->prereq) {
      /* discovery validates the queried region (part of its identity) and
       * lists its sites */
      /* "sites": the site table's format (2: waits' spans and sites'
       * iterations, issue 27; 3: the iterations' marker_line), part of the
       * task's key, so a workspace's discovery from an older Argus is not
       * reused */
      ag_task *c = ag_plan_add(p, AG_TASK_CONTROL, ek->prereq, "discover regions and sites",
                               q->region, NULL, json_pack("{s:i}", "sites", 3), NULL, 0);
      if (!c)
        goto fail_vec;
      prereq = c->id;
    }
    /* the synthesis reads the evidence's source (per-instance evidence: the
     * branches the Control task adds later, and the discovery itself) and
     * the reference run */
    int deps[2], nd = 0;
    if (ek->per_instance) {
      if (prereq >= 0)
        deps[nd++] = prereq;
    } else if ((deps[nd++] = source_for(p, tb, ek, prereq)) < 0) {
      goto fail_vec;
    }
    if (r->reference) {
      const ag_evidence_kind *rk = ag_evidence_table_find(tb, r->reference);
      if (!rk || (deps[nd++] = source_for(p, tb, rk, prereq)) < 0)
        goto fail_vec;
    }
    ag_task *s = ag_plan_add(p, AG_TASK_SYNTHESIZE, r->synth, r->synth, q->region, &q->scope,
                             json_pack("{s:s,s:s}", "signal", r->signal, "unit", r->unit),
                             deps, nd);
    if (!s || ag_vec_push(&synths, s->id))
      goto fail_vec;
    /* one failed probe branch leaves the other instances' synthesis standing;
     * a synthesis with optional evidence runs on its reference alone */
    s->partial_ok = ek->per_instance || r->evidence_optional;
    /* a perturbing collection with a baseline: what it cost, beside the values */
    const ag_evidence_kind *bk = ek->baseline ? ag_evidence_table_find(tb, ek->baseline) : NULL;
    if (bk && !ek->per_instance) {
      int pd[2] = {deps[0], source_for(p, tb, bk, prereq)};
      if (pd[1] < 0)
        goto fail_vec;
      ag_task *pt = ag_plan_add(p, AG_TASK_SYNTHESIZE, "synth.perturbation",
                                "measure what tracing cost", NULL, NULL,
                                json_pack("{s:s,s:s}", "signal", "perturbation", "unit", "ns"),
                                pd, 2);
      if (!pt)
        goto fail_vec;
      pt->partial_ok = 1; /* says what it lacks */
      int have = 0;
      for (size_t k = 0; k < synths.n; k++)
        have |= synths.v[k] == pt->id;
      if (!have && ag_vec_push(&synths, pt->id))
        goto fail_vec;
    }
  }
  if (join_system_timeline(p, q))
    goto fail_vec; /* rc: AG_ENOMEM */
  ag_task *rep = ag_plan_add(p, AG_TASK_SYNTHESIZE, "report", "join into the report",
                             q->region, &q->scope, NULL, synths.v, (int)synths.n);
  if (!rep)
    goto fail_vec;
  rep->partial_ok = 1;
  p->report_task = rep->id;
  ag_vec_free(&synths);
  ag_plan_partition(p);
  *out = p;
  return 0;
fail_vec:
  ag_vec_free(&synths);
fail:
  ag_plan_free(p);
  return rc;
}

void ag_plan_free(ag_plan *p) {
  if (!p)
    return;
  plan_impl *pi = (plan_impl *)p;
  for (size_t i = 0; i < p->tasks.n; i++) {
    ag_task *t = p->tasks.v[i];
    ag_vec_free(&t->deps);
    json_decref(t->config);
    json_decref(t->outputs);
    ag_free(t->error);
  }
  ag_vec_free(&p->tasks);
  ag_map_release(&pi->index);
  ag_arena_release(&p->arena);
  ag_free(pi);
}
