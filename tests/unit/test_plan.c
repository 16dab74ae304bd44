/* test_plan.c — scopes, recipes, the planner's DAG shapes, effect
 * partitioning and bad queries. */
#include "argus/plan.h"
#include "check.h"

static ag_plan *plan_for(const char *region, const char *sigs_csv, const char *scope,
                         ag_diags *d, int *rc) {
  static char buf[256];
  static const char *sigs[16];
  int n = 0;
  snprintf(buf, sizeof buf, "%s", sigs_csv);
  for (char *t = strtok(buf, ","); t && n < 16; t = strtok(NULL, ","))
    sigs[n++] = t;
  ag_query q = {.region = region, .signals = sigs, .nsignals = n};
  *rc = ag_scope_parse(scope, &q.scope, d);
  if (*rc)
    return NULL;
  ag_plan *p = NULL;
  *rc = ag_plan_build(&q, "prog@v1", d, &p);
  return p;
}

static int count(const ag_plan *p, ag_task_type ty, const char *op) {
  int n = 0;
  for (size_t i = 0; i < p->tasks.n; i++)
    n += p->tasks.v[i]->type == ty && (!op || !strcmp(p->tasks.v[i]->op, op));
  return n;
}

TEST(test_scope_parse) {
  ag_diags d;
  ag_diags_init(&d);
  ag_scope s;
  CHECK_EQ_INT(ag_scope_parse("role=consumer,iter=0:8,sm=5,sm=1:3", &s, &d), 0);
  CHECK_EQ_STR(s.role, "consumer");
  CHECK_EQ_INT(s.dim[AG_SCOPE_ITER].n, 1);
  CHECK_EQ_INT(s.dim[AG_SCOPE_SM].n, 2);
  CHECK(ag_scope_contains(&s, AG_SCOPE_SM, 1));
  CHECK(!ag_scope_contains(&s, AG_SCOPE_SM, 3));
  CHECK(ag_scope_contains(&s, AG_SCOPE_SM, 5));
  CHECK(ag_scope_contains(&s, AG_SCOPE_CTA, 12345)); /* unrestricted */
  ag_str f = AG_STR_INIT;
  ag_scope_format(&s, &f);
  CHECK_EQ_STR(ag_str_cstr(&f), "iter=0:8,sm=1:3,sm=5:6,role=consumer");
  ag_str_release(&f);
  CHECK_EQ_INT(ag_scope_parse("", &s, &d), 0);
  CHECK_EQ_INT(d.nerrors, 0);
  /* errors */
  CHECK_EQ_INT(ag_scope_parse("iter=4:4", &s, &d), AG_EINVAL);
  CHECK_CONTAINS(d.items.v[d.items.n - 1].msg, "empty scope");
  CHECK_EQ_INT(ag_scope_parse("lane=3", &s, &d), AG_EPARSE);
  CHECK_EQ_STR(d.items.v[d.items.n - 1].msg,
               "unknown scope key 'lane' (known: role, iter, sm, cta, warp, launch)");
  CHECK_EQ_INT(ag_scope_parse("iter=0:2,lanch=3", &s, &d), AG_EPARSE);
  CHECK_EQ_STR(d.items.v[d.items.n - 1].msg, "unknown scope key 'lanch': did you mean "
                                             "'launch'? (known: role, iter, sm, cta, warp, "
                                             "launch)");
  CHECK_EQ_INT(ag_scope_parse("iter=a:b", &s, &d), AG_EPARSE);
  CHECK_EQ_INT(ag_scope_parse("iter", &s, &d), AG_EPARSE);
  CHECK_EQ_INT(ag_scope_parse("sm=-1", &s, &d), AG_EPARSE);
  /* launch= (the system timeline's selection, issue 21) */
  CHECK_EQ_INT(ag_scope_parse("launch=3,launch=5:7", &s, &d), 0);
  CHECK(ag_scope_contains(&s, AG_SCOPE_LAUNCH, 3) && ag_scope_contains(&s, AG_SCOPE_LAUNCH, 6));
  CHECK(!ag_scope_contains(&s, AG_SCOPE_LAUNCH, 4) && !ag_scope_contains(&s, AG_SCOPE_LAUNCH, 7));
  CHECK_EQ_INT(ag_scope_parse("launch=abc", &s, &d), AG_EPARSE);
  CHECK_EQ_STR(d.items.v[d.items.n - 1].msg,
               "'launch' needs a non-negative integer or a range a:b, got 'abc'");
  CHECK_EQ_INT(ag_scope_parse("launch=5:2", &s, &d), AG_EINVAL);
  CHECK_EQ_STR(d.items.v[d.items.n - 1].msg,
               "empty scope: launch=5:2 selects nothing (ranges are a:b with a < b)");
  CHECK_EQ_INT(ag_scope_parse("launch=", &s, &d), AG_EPARSE);
  CHECK_EQ_INT(ag_scope_parse("launch=1:x", &s, &d), AG_EPARSE);
  CHECK_EQ_INT(ag_scope_parse("iter=0:1,iter=0:1,iter=0:1,iter=0:1,iter=0:1,iter=0:1,iter=0:1,"
                              "iter=0:1,iter=0:1,iter=0:1,iter=0:1,iter=0:1,iter=0:1,iter=0:1,"
                              "iter=0:1,iter=0:1,iter=0:1",
                              &s, &d),
               AG_EINVAL);
  ag_diags_release(&d);
}

TEST(test_dag_duration) {
  ag_diags d;
  ag_diags_init(&d);
  int rc;
  ag_plan *p = plan_for("gemm/mainloop", "duration", "iter=0:8", &d, &rc);
  CHECK_EQ_INT(rc, 0);
  CHECK(p != NULL);
  if (!p)
    return;
  /* discover -> transform.traced -> compile -> collect -> synth.duration -> report,
   * and the baseline: transform.trace-free -> compile -> collect (time), which
   * the traced compile (occupancy) and run (launches) read, and
   * synth.perturbation over both runs */
  CHECK_EQ_INT(p->tasks.n, 10);
  CHECK_EQ_INT(count(p, AG_TASK_CONTROL, "discover"), 1);
  CHECK_EQ_INT(count(p, AG_TASK_TRANSFORM, "transform.traced"), 1);
  CHECK_EQ_INT(count(p, AG_TASK_TRANSFORM, "transform.trace-free"), 1);
  CHECK_EQ_INT(count(p, AG_TASK_TRANSFORM, "compile"), 2);
  CHECK_EQ_INT(count(p, AG_TASK_COLLECT, NULL), 2);
  CHECK_EQ_INT(count(p, AG_TASK_SYNTHESIZE, "synth.perturbation"), 1);
  CHECK_EQ_INT(count(p, AG_TASK_SYNTHESIZE, NULL), 3);
  CHECK_EQ_INT(p->nruns, 2);
  {
    ag_task *tc = NULL, *bc = NULL, *cc = NULL;
    for (size_t i = 0; i < p->tasks.n; i++) {
      ag_task *t = p->tasks.v[i];
      const char *b0 = json_string_value(json_array_get(json_object_get(t->config, "backends"), 0));
      if (t->type == AG_TASK_COLLECT && !strcmp(b0, "trace"))
        tc = t;
      if (t->type == AG_TASK_COLLECT && !strcmp(b0, "time"))
        bc = t;
      if (!strcmp(t->op, "compile") && json_object_get(t->config, "occupancy_of"))
        cc = t;
    }
    CHECK(tc && bc && cc);
    /* the traced run reads the timing run; the traced compile the trace-free one */
    CHECK(tc && bc && tc->deps.n == 2 && tc->deps.v[1] == bc->id && tc->partial_ok);
    CHECK(cc && bc && cc->deps.n == 2 && cc->deps.v[1] == bc->deps.v[0]);
    CHECK(bc && bc->effects == 0);
  }
  ag_task *rep = ag_plan_task(p, p->report_task);
  CHECK(rep && rep->partial_ok && !strcmp(rep->op, "report"));
  /* every dependency points backwards (a DAG in topological order) */
  for (size_t i = 0; i < p->tasks.n; i++)
    for (size_t k = 0; k < p->tasks.v[i]->deps.n; k++)
      CHECK(p->tasks.v[i]->deps.v[k] < (int)i);
  /* the traced variant covers the module (reused by zoom-ins); synthesis is
   * bound to region and scope */
  ag_task *tr = NULL, *sy = NULL;
  for (size_t i = 0; i < p->tasks.n; i++) {
    if (!strcmp(p->tasks.v[i]->op, "transform.traced"))
      tr = p->tasks.v[i];
    if (!strcmp(p->tasks.v[i]->op, "synth.duration"))
      sy = p->tasks.v[i];
  }
  CHECK(tr && !json_object_get(tr->config, "region") && !json_object_get(tr->config, "scope"));
  CHECK(sy && !strcmp(json_string_value(json_object_get(sy->config, "region")), "gemm/mainloop"));
  CHECK(sy && !strcmp(json_string_value(json_object_get(sy->config, "scope")), "iter=0:8"));
  ag_plan_free(p);
  ag_diags_release(&d);
}

TEST(test_dag_shared_evidence) {
  ag_diags d;
  ag_diags_init(&d);
  int rc;
  /* three trace signals share one traced variant and one run; static needs
   * the trace-free compile and no run */
  ag_plan *p = plan_for("gemm", "duration,occurrences,timeline,static", "", &d, &rc);
  CHECK_EQ_INT(rc, 0);
  if (!p)
    return;
  CHECK_EQ_INT(count(p, AG_TASK_CONTROL, NULL), 1);
  CHECK_EQ_INT(count(p, AG_TASK_TRANSFORM, "transform.traced"), 1);
  CHECK_EQ_INT(count(p, AG_TASK_TRANSFORM, "transform.trace-free"), 1);
  CHECK_EQ_INT(count(p, AG_TASK_TRANSFORM, "compile"), 2);
  CHECK_EQ_INT(count(p, AG_TASK_COLLECT, NULL), 2);
  CHECK_EQ_INT(count(p, AG_TASK_SYNTHESIZE, NULL), 6); /* one synth.perturbation */
  CHECK_EQ_INT(p->nruns, 2);
  ag_task *rep = ag_plan_task(p, p->report_task);
  CHECK_EQ_INT(rep->deps.n, 5);
  /* printing */
  ag_str s = AG_STR_INIT;
  ag_plan_print_text(p, &s);
  CHECK_CONTAINS(ag_str_cstr(&s), "13 tasks, 2 runs");
  ag_str_clear(&s);
  ag_plan_print_dot(p, &s);
  CHECK_CONTAINS(ag_str_cstr(&s), "digraph plan");
  CHECK_CONTAINS(ag_str_cstr(&s), "t0 -> t1;");
  json_t *j = ag_plan_to_json(p);
  CHECK_EQ_INT(json_array_size(json_object_get(j, "tasks")), 13);
  CHECK_EQ_INT(json_integer_value(json_object_get(j, "runs")), 2);
  json_decref(j);
  ag_str_release(&s);
  ag_plan_free(p);
  ag_diags_release(&d);
}

/* A recipe table of the test's own: kinds on one traced variant with
 * compatible effects (timing instrumentation, a passive counter read), with
 * conflicting ones (SASS patching, kernel serialization), and one on
 * another variant. The planner must merge the compatible ones into one run
 * and keep every conflicting one apart, as the built-in table will once it
 * has such rows. */
static const ag_evidence_kind test_kinds[] = {
    {"k_trace", "traced", "trace", "discover", 0, AG_EFF_PERTURBS_TIMING, 0, NULL, NULL, NULL},
    {"k_counters", "traced", "counters", "discover", 0, 0, 0, NULL, NULL, NULL},
    {"k_sass", "traced", "sass", "discover", 0, AG_EFF_PATCHES_SASS, 0, NULL, NULL, NULL},
    {"k_range", "traced", "range", "discover", 0, AG_EFF_SERIALIZES_KERNELS, 0, NULL, NULL, NULL},
    {"k_plain", "trace-free", "counters", "discover", 0, 0, 0, NULL, NULL, NULL},
};
static const ag_recipe test_recipes[] = {
    {"dur", "k_trace", "synth.duration", AG_QUAL_OBSERVED, "ns", "", NULL, 0},
    {"cnt", "k_counters", "synth.cnt", AG_QUAL_OBSERVED, "count", "", NULL, 0},
    {"sass", "k_sass", "synth.sass", AG_QUAL_OBSERVED, "count", "", NULL, 0},
    {"rng", "k_range", "synth.rng", AG_QUAL_OBSERVED, "count", "", NULL, 0},
    {"plain", "k_plain", "synth.plain", AG_QUAL_OBSERVED, "count", "", NULL, 0},
    {"lost", "k_nowhere", "synth.lost", AG_QUAL_OBSERVED, "count", "", NULL, 0},
};
static const ag_recipe_table test_table = {test_recipes, 6, test_kinds, 5};

static ag_plan *plan_table(const char *sigs_csv, ag_diags *d, int *rc) {
  static char buf[256];
  static const char *sigs[16];
  int n = 0;
  snprintf(buf, sizeof buf, "%s", sigs_csv);
  for (char *t = strtok(buf, ","); t && n < 16; t = strtok(NULL, ","))
    sigs[n++] = t;
  ag_query q = {.region = "gemm", .signals = sigs, .nsignals = n};
  ag_plan *p = NULL;
  *rc = ag_plan_build_table(&q, "prog@v1", &test_table, d, &p);
  return p;
}

/* The Collect task whose backends include `backend` (NULL if none). */
static ag_task *collect_with(const ag_plan *p, const char *backend) {
  for (size_t i = 0; i < p->tasks.n; i++) {
    ag_task *t = p->tasks.v[i];
    size_t k;
    json_t *v;
    if (t->type == AG_TASK_COLLECT)
      json_array_foreach(json_object_get(t->config, "backends"), k, v) if (
          !strcmp(json_string_value(v), backend)) return t;
  }
  return NULL;
}

/* No two collections whose effects conflict share a run; each run's effects
 * are its collections'. */
static void check_measurement_valid(const ag_plan *p) {
  for (size_t i = 0; i < p->tasks.n; i++) {
    const ag_task *t = p->tasks.v[i];
    if (t->type != AG_TASK_COLLECT)
      continue;
    CHECK(t->run >= 0 && t->run < p->nruns);
    json_t *b = json_object_get(t->config, "backends");
    for (size_t x = 0; x < json_array_size(b); x++)
      for (size_t y = x + 1; y < json_array_size(b); y++) {
        unsigned ex = 0, ey = 0;
        for (size_t k = 0; k < 5; k++) {
          if (!strcmp(test_kinds[k].backend, json_string_value(json_array_get(b, x))))
            ex |= test_kinds[k].effects;
          if (!strcmp(test_kinds[k].backend, json_string_value(json_array_get(b, y))))
            ey |= test_kinds[k].effects;
        }
        CHECK(!ag_effects_conflict(ex, ey));
      }
    for (size_t k = i + 1; k < p->tasks.n; k++)
      if (p->tasks.v[k]->type == AG_TASK_COLLECT)
        CHECK(p->tasks.v[k]->run != t->run);
  }
}

TEST(test_compatible_collections_share_a_run) {
  ag_diags d;
  ag_diags_init(&d);
  int rc;
  /* timing and counters on the same traced variant: one run, both backends */
  ag_plan *p = plan_table("dur,cnt", &d, &rc);
  CHECK_EQ_INT(rc, 0);
  if (!p)
    return;
  CHECK_EQ_INT(count(p, AG_TASK_COLLECT, "collect"), 1);
  CHECK_EQ_INT(p->nruns, 1);
  ag_task *c = collect_with(p, "trace");
  CHECK(c && c == collect_with(p, "counters"));
  CHECK(c && c->effects == AG_EFF_PERTURBS_TIMING);
  char *k1 = c ? ag_json_canonical(c->config) : NULL;
  check_measurement_valid(p);
  ag_plan_free(p);
  /* the signals' order does not change the run's configuration (its key) */
  p = plan_table("cnt,dur", &d, &rc);
  CHECK_EQ_INT(rc, 0);
  c = p ? collect_with(p, "trace") : NULL;
  char *k2 = c ? ag_json_canonical(c->config) : NULL;
  CHECK(k1 && k2);
  if (k1 && k2)
    CHECK_EQ_STR(k1, k2);
  CHECK_CONTAINS(k1, "\"backends\":[\"counters\",\"trace\"]");
  ag_free(k1);
  ag_free(k2);
  ag_plan_free(p);
  /* the same backend on another variant is another run */
  p = plan_table("cnt,plain", &d, &rc);
  CHECK_EQ_INT(rc, 0);
  if (p) {
    CHECK_EQ_INT(count(p, AG_TASK_COLLECT, "collect"), 2);
    CHECK_EQ_INT(p->nruns, 2);
    check_measurement_valid(p);
  }
  ag_plan_free(p);
  /* a recipe naming evidence the table lacks is an error, not a crash */
  CHECK(plan_table("dur,lost", &d, &rc) == NULL);
  CHECK_EQ_INT(rc, AG_EINVAL);
  CHECK_CONTAINS(d.items.v[d.items.n - 1].msg, "evidence 'k_nowhere'");
  ag_diags_release(&d);
}

TEST(test_conflicting_collections_separate) {
  ag_diags d;
  ag_diags_init(&d);
  int rc;
  /* SASS patching and kernel serialization each run alone, apart from the
   * timing run (which still takes the counters) and from each other */
  ag_plan *p = plan_table("dur,sass,cnt,rng", &d, &rc);
  CHECK_EQ_INT(rc, 0);
  if (!p)
    return;
  CHECK_EQ_INT(count(p, AG_TASK_COLLECT, "collect"), 3);
  CHECK_EQ_INT(p->nruns, 3);
  ag_task *tr = collect_with(p, "trace"), *sa = collect_with(p, "sass"),
          *rg = collect_with(p, "range");
  CHECK(tr && sa && rg);
  if (tr && sa && rg) {
    CHECK(tr == collect_with(p, "counters"));
    CHECK(tr != sa && tr != rg && sa != rg);
    CHECK(tr->run != sa->run && tr->run != rg->run && sa->run != rg->run);
    CHECK_EQ_INT(sa->effects, AG_EFF_PATCHES_SASS);
    CHECK_EQ_INT(rg->effects, AG_EFF_SERIALIZES_KERNELS);
    CHECK_EQ_INT((int)json_array_size(json_object_get(sa->config, "backends")), 1);
    /* all three on the same compiled variant */
    CHECK(tr->deps.v[0] == sa->deps.v[0] && sa->deps.v[0] == rg->deps.v[0]);
  }
  check_measurement_valid(p);
  ag_plan_free(p);
  /* in the signals' other order, the same runs */
  p = plan_table("sass,rng,cnt,dur", &d, &rc);
  CHECK_EQ_INT(rc, 0);
  if (p) {
    CHECK_EQ_INT(p->nruns, 3);
    CHECK(collect_with(p, "trace") == collect_with(p, "counters"));
    check_measurement_valid(p);
  }
  ag_plan_free(p);
  CHECK(ag_effects_conflict(AG_EFF_FORCES_COMPLETION, AG_EFF_PERTURBS_TIMING));
  CHECK(ag_effects_conflict(AG_EFF_SERIALIZES_KERNELS, 0));
  CHECK(!ag_effects_conflict(AG_EFF_PERTURBS_TIMING, AG_EFF_PERTURBS_TIMING));
  ag_str e = AG_STR_INIT;
  ag_effects_format(AG_EFF_PERTURBS_TIMING | AG_EFF_PATCHES_SASS, &e);
  CHECK_EQ_STR(ag_str_cstr(&e), "perturbs_timing|patches_sass");
  ag_str_release(&e);
  ag_diags_release(&d);
}

TEST(test_zoom_in_shares_evidence) {
  /* a query on a subregion with a narrower scope needs the same variant,
   * compile and collection as the wider one: identical task configs, so the
   * workspace's memoization reuses them */
  ag_diags d;
  ag_diags_init(&d);
  int rc;
  ag_plan *a = plan_for("gemm", "duration", "", &d, &rc);
  ag_plan *b = plan_for("gemm/mainloop/mma", "duration", "iter=2:4,role=consumer", &d, &rc);
  CHECK(a && b);
  if (!a || !b)
    return;
  for (size_t i = 0; i < a->tasks.n; i++) {
    ag_task *x = a->tasks.v[i];
    if (x->type == AG_TASK_SYNTHESIZE || x->type == AG_TASK_CONTROL)
      continue; /* discovery checks the queried region; its outputs are the module's */
    ag_task *y = ag_plan_task(b, x->id);
    char *cx = ag_json_canonical(x->config), *cy = ag_json_canonical(y->config);
    CHECK(!strcmp(x->op, y->op));
    CHECK_EQ_STR(cx, cy);
    ag_free(cx);
    ag_free(cy);
  }
  ag_plan_free(a);
  ag_plan_free(b);
  ag_diags_release(&d);
}

TEST(test_dedup) {
  ag_diags d;
  ag_diags_init(&d);
  int rc;
  ag_plan *p = plan_for("r", "duration", "", &d, &rc);
  size_t n = p->tasks.n;
  ag_task *a = ag_plan_add(p, AG_TASK_TRANSFORM, "x", NULL, NULL, NULL,
                           json_pack("{s:i,s:i}", "a", 1, "b", 2), NULL, 0);
  ag_task *b = ag_plan_add(p, AG_TASK_TRANSFORM, "x", NULL, NULL, NULL,
                           json_pack("{s:i,s:i}", "b", 2, "a", 1), NULL, 0);
  ag_task *c = ag_plan_add(p, AG_TASK_TRANSFORM, "x", NULL, NULL, NULL,
                           json_pack("{s:i,s:i}", "a", 1, "b", 3), NULL, 0);
  CHECK(a == b);
  CHECK(a != c);
  CHECK_EQ_INT(p->tasks.n, n + 2);
  ag_plan_free(p);
  ag_diags_release(&d);
}

TEST(test_bad_queries) {
  ag_diags d;
  ag_diags_init(&d);
  int rc;
  ag_plan *p = plan_for("gemm", "duration,bogus", "", &d, &rc);
  CHECK(p == NULL);
  CHECK_EQ_INT(rc, AG_EINVAL);
  CHECK_CONTAINS(d.items.v[0].msg, "unknown signal 'bogus' (known: duration, ");
  /* a mistyped signal: the close ones named first */
  p = plan_for("gemm", "duraton,sytem", "", &d, &rc);
  CHECK(p == NULL);
  CHECK_EQ_INT(rc, AG_EINVAL);
  CHECK_CONTAINS(d.items.v[d.items.n - 2].msg,
                 "unknown signal 'duraton': did you mean 'duration'? (known: duration, ");
  CHECK_CONTAINS(d.items.v[d.items.n - 1].msg,
                 "unknown signal 'sytem': did you mean 'system'? (known: ");
  p = plan_for("", "duration", "", &d, &rc);
  CHECK(p == NULL);
  CHECK_CONTAINS(d.items.v[d.items.n - 1].msg, "needs a region");
  p = plan_for("gemm", "duration", "iter=3:1", &d, &rc);
  CHECK(p == NULL);
  CHECK_CONTAINS(d.items.v[d.items.n - 1].msg, "empty scope");
  ag_query q = {.region = "gemm"};
  CHECK_EQ_INT(ag_plan_build(&q, "x", &d, &p), AG_EINVAL);
  CHECK_CONTAINS(d.items.v[d.items.n - 1].msg, "at least one signal");
  ag_diags_release(&d);
}

TEST(test_plan_oom) {
  /* every allocation in planning fails once: a clean error, no crash */
  for (long k = 1; k < 400; k++) {
    ag_diags d;
    ag_diags_init(&d);
    const char *sigs[] = {"duration", "static", "timeline"};
    ag_query q = {.region = "gemm/mainloop", .signals = sigs, .nsignals = 3};
    ag_plan *p = NULL;
    ag_alloc_fail_at(k);
    int rc = ag_plan_build(&q, "prog", &d, &p);
    ag_alloc_fail_at(0);
    CHECK(rc == 0 || rc == AG_ENOMEM);
    CHECK((rc == 0) == (p != NULL));
    ag_plan_free(p);
    ag_diags_release(&d);
  }
}

RUN_TESTS(T(test_scope_parse), T(test_dag_duration), T(test_dag_shared_evidence),
          T(test_compatible_collections_share_a_run), T(test_conflicting_collections_separate),
          T(test_zoom_in_shares_evidence), T(test_dedup), T(test_bad_queries),
          T(test_plan_oom))
