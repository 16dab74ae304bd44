/* test_backend.c — the backend contract (argus/backend.h, docs/backends.md):
 * two test backends registered through a backend set, with recipe rows of
 * their own and no change to the driver, planned (their collections on one
 * compiled variant, apart because their effects conflict) and scheduled
 * (the set's executor table dispatches their synthesis rules; the generic
 * collect stand-in calls their collect hooks); the check that adapters and
 * recipe rows agree, with each kind of disagreement. */
#include "argus/backend.h"
#include "check.h"

/* ----------------------------------------------------- the test backends */

/* "echo": a SASS-patching collector (as CUPTI SASS metrics will be) */
static int echo_collect(ag_exec_ctx *cx, ag_task *t, ag_collect_job *job) {
  (void)cx;
  (void)t;
  job->output = "echo_evidence";
  json_object_set_new(job->extra, "echo_note", json_string("hooked"));
  return 0;
}

static int ex_synth_echo(ag_exec_ctx *cx, ag_task *t) {
  /* reads what its collection stored under the adapter's output name */
  for (size_t i = 0; i < t->deps.n; i++) {
    const ag_task *d = ag_plan_task(cx->plan, t->deps.v[i]);
    const char *ev = json_string_value(json_object_get(d->outputs, "echo_evidence"));
    if (ev) {
      t->outputs = json_pack("{s:s,s:s}", "values", ev, "by", "synth.echo");
      return 0;
    }
  }
  t->error = ag_strdup("no echo evidence");
  return AG_ENOTFOUND;
}

static const ag_executor echo_execs[] = {{"synth.echo", ex_synth_echo}};
static const char *const echo_evidence[] = {"echo_ev", NULL};
static int echo_decode(const void *data, size_t len, const char *what, ag_diags *d, void **out) {
  (void)what;
  (void)d;
  *out = ag_strndup(data, len);
  return *out ? 0 : AG_ENOMEM;
}
static const ag_backend echo = {"echo",
                                "a test backend that patches SASS",
                                echo_evidence,
                                AG_EFF_PATCHES_SASS,
                                "trace-free",
                                "echo",
                                "echo_evidence",
                                echo_decode,
                                ag_free,
                                echo_execs,
                                1,
                                NULL,
                                echo_collect,
                                NULL,
                                NULL};

/* "tick": a perturbing collector on the same variant */
static int tick_collect(ag_exec_ctx *cx, ag_task *t, ag_collect_job *job) {
  (void)cx;
  (void)t;
  (void)job; /* its output name is the adapter's */
  return 0;
}
static int ex_synth_tick(ag_exec_ctx *cx, ag_task *t) {
  (void)cx;
  t->outputs = json_pack("{s:s}", "by", "synth.tick");
  return 0;
}
static const ag_executor tick_execs[] = {{"synth.tick", ex_synth_tick}};
static const char *const tick_evidence[] = {"tick_ev", NULL};
static const ag_backend tick = {"tick",
                                "a test backend that perturbs timing",
                                tick_evidence,
                                AG_EFF_PERTURBS_TIMING,
                                "trace-free",
                                "tick",
                                "tick_evidence",
                                NULL,
                                NULL,
                                tick_execs,
                                1,
                                NULL,
                                tick_collect,
                                NULL,
                                NULL};

/* recipe rows of the test backends */
static const ag_evidence_kind kinds[] = {
    {"echo_ev", "trace-free", "echo", NULL, 0, AG_EFF_PATCHES_SASS, 0, NULL, NULL, NULL},
    {"tick_ev", "trace-free", "tick", NULL, 0, AG_EFF_PERTURBS_TIMING, 0, NULL, NULL, NULL},
};
static const ag_recipe recipes[] = {
    {"echo", "echo_ev", "synth.echo", AG_QUAL_ATTRIBUTED, "count", "echoes", NULL, 0},
    {"tick", "tick_ev", "synth.tick", AG_QUAL_OBSERVED, "ns", "ticks", NULL, 0},
};
static const ag_recipe_table table = {recipes, 2, kinds, 2};

/* ------------------------------------------- the driver's generic stand-ins */

static const ag_backend_set *the_set;
static int variant_calls;

static int ex_variant(ag_exec_ctx *cx, ag_task *t) {
  (void)cx;
  variant_calls++;
  t->outputs = json_pack("{s:s}", "ptx", "variant-ptx");
  return 0;
}
static int ex_compile(ag_exec_ctx *cx, ag_task *t) {
  (void)cx;
  t->outputs = json_pack("{s:s}", "cubin", "the-cubin");
  return 0;
}
/* as observe.c's ex_collect: each listed collector's hook prepares the run */
static int ex_collect(ag_exec_ctx *cx, ag_task *t) {
  ag_trace_run_opts ro;
  memset(&ro, 0, sizeof ro);
  ag_collect_job job = {"the-cubin", &ro, "evidence", json_object(), 0, 0};
  size_t k;
  json_t *v;
  int rc = 0;
  json_array_foreach(json_object_get(t->config, "backends"), k, v) {
    const ag_backend *b = ag_backend_collector(the_set, json_string_value(v));
    if (!b) {
      t->error = ag_strdup("no collector");
      rc = AG_EINVAL;
      break;
    }
    if (b->output)
      job.output = b->output;
    if ((rc = b->collect(cx, t, &job)))
      break;
  }
  if (!rc) {
    t->outputs = json_pack("{s:s}", job.output, "evidence-hash");
    json_object_update(t->outputs, job.extra);
  }
  json_decref(job.extra);
  return rc;
}
static int ex_report(ag_exec_ctx *cx, ag_task *t) {
  (void)cx;
  t->outputs = json_pack("{s:s}", "report", "r");
  return 0;
}
static const ag_executor generic[] = {
    {"compile", ex_compile}, {"collect", ex_collect}, {"report", ex_report}};

static ag_task *find_op(const ag_plan *p, const char *op, int nth) {
  for (size_t i = 0; i < p->tasks.n; i++)
    if (!strcmp(p->tasks.v[i]->op, op) && nth-- == 0)
      return p->tasks.v[i];
  return NULL;
}

/* ------------------------------------------------------------------ tests */

TEST(test_set_executors) {
  const ag_backend *list[] = {&echo, &tick, NULL};
  ag_backend_set s;
  ag_diags d;
  ag_diags_init(&d);
  CHECK_EQ_INT(ag_backend_set_init(&s, list, -1, generic, 3, ex_variant, &d), 0);
  /* the adapters' rules, one generic transform for their variant, the generic ones */
  CHECK_EQ_INT(s.execs.n, 2 + 1 + 3);
  CHECK_EQ_STR(s.execs.v[0].op, "synth.echo");
  CHECK_EQ_STR(s.execs.v[2].op, "transform.trace-free");
  CHECK(ag_backend_find(&s, "tick") == &tick);
  CHECK(ag_backend_find(&s, "nope") == NULL);
  CHECK(ag_backend_for_evidence(&s, "echo_ev") == &echo);
  CHECK(ag_backend_for_evidence(&s, "trace") == NULL);
  CHECK(ag_backend_collector(&s, "tick") == &tick);
  CHECK_EQ_INT(ag_backend_set_check(&s, &table, &d), 0);
  CHECK_EQ_INT((int)d.items.n, 0);
  /* the decoder is the adapter's */
  void *dec = NULL;
  CHECK_EQ_INT(echo.decode("abc", 3, "x", &d, &dec), 0);
  CHECK_EQ_STR((char *)dec, "abc");
  echo.release(dec);
  ag_backend_set_release(&s);
  /* two adapters of one name */
  const ag_backend *twice[] = {&echo, &echo};
  CHECK_EQ_INT(ag_backend_set_init(&s, twice, 2, generic, 3, ex_variant, &d), AG_EINVAL);
  ag_str msg = AG_STR_INIT;
  ag_diags_format(&d, &msg);
  CHECK_CONTAINS(ag_str_cstr(&msg), "backend 'echo' is in the set twice");
  ag_str_release(&msg);
  ag_diags_release(&d);
}

TEST(test_plan_and_schedule) {
  const ag_backend *list[] = {&echo, &tick};
  ag_backend_set s;
  CHECK_EQ_INT(ag_backend_set_init(&s, list, 2, generic, 3, ex_variant, NULL), 0);
  the_set = &s;
  const char *sigs[] = {"tick", "echo"};
  ag_query q = {.region = "k", .signals = sigs, .nsignals = 2};
  ag_plan *p = NULL;
  ag_diags d;
  ag_diags_init(&d);
  CHECK_EQ_INT(ag_plan_build_table(&q, "prog", &table, &d, &p), 0);
  if (!p)
    return;
  /* one variant, one compile; two collections apart (patches_sass conflicts) */
  CHECK(find_op(p, "transform.trace-free", 0) != NULL);
  CHECK(find_op(p, "transform.trace-free", 1) == NULL);
  CHECK(find_op(p, "compile", 1) == NULL);
  ag_task *c0 = find_op(p, "collect", 0), *c1 = find_op(p, "collect", 1);
  CHECK(c0 && c1);
  if (!c0 || !c1)
    return;
  CHECK_EQ_INT(p->nruns, 2);
  CHECK(c0->run != c1->run);
  CHECK_EQ_INT(c0->effects, AG_EFF_PERTURBS_TIMING);
  CHECK_EQ_INT(c1->effects, AG_EFF_PATCHES_SASS);
  CHECK_EQ_STR(json_string_value(json_array_get(json_object_get(c1->config, "backends"), 0)),
               "echo");
  ag_run_opts o = {.cpu_workers = 2, .ndevices = 1, .execs = s.execs.v, .nexecs = s.execs.n};
  ag_run_stats st;
  variant_calls = 0;
  CHECK_EQ_INT(ag_run_plan(p, &o, &st), 0);
  CHECK_EQ_INT(st.failed + st.skipped, 0);
  CHECK_EQ_INT(variant_calls, 1);
  /* the collect hooks ran: each collection stored under its adapter's name */
  CHECK_EQ_STR(json_string_value(json_object_get(c1->outputs, "echo_evidence")), "evidence-hash");
  CHECK_EQ_STR(json_string_value(json_object_get(c1->outputs, "echo_note")), "hooked");
  CHECK(json_object_get(c0->outputs, "tick_evidence") != NULL); /* the adapter's output */
  CHECK(json_object_get(c0->outputs, "echo_evidence") == NULL);
  ag_task *se = find_op(p, "synth.echo", 0), *sr = find_op(p, "report", 0);
  CHECK(se && sr);
  if (se) {
    CHECK_EQ_INT(se->status, AG_TS_OK);
    CHECK_EQ_STR(json_string_value(json_object_get(se->outputs, "values")), "evidence-hash");
  }
  if (sr)
    CHECK_EQ_INT(sr->status, AG_TS_OK);
  ag_plan_free(p);
  ag_diags_release(&d);
  ag_backend_set_release(&s);
}

/* each disagreement between adapters and recipe rows is named */
static void check_bad(const ag_backend *const *list, int n, const ag_recipe_table *t,
                      const char *want) {
  ag_backend_set s;
  ag_diags d;
  ag_diags_init(&d);
  CHECK_EQ_INT(ag_backend_set_init(&s, list, n, generic, 3, ex_variant, &d), 0);
  CHECK_EQ_INT(ag_backend_set_check(&s, t, &d), AG_EINVAL);
  ag_str msg = AG_STR_INIT;
  ag_diags_format(&d, &msg);
  CHECK_CONTAINS(ag_str_cstr(&msg), want);
  ag_str_release(&msg);
  ag_diags_release(&d);
  ag_backend_set_release(&s);
}

TEST(test_check_disagreements) {
  const ag_backend *only_echo[] = {&echo};
  check_bad(only_echo, 1, &table, "evidence 'tick_ev' has no backend adapter");
  check_bad(only_echo, 1, &table, "'synth.tick' that no backend adapter executes");
  const ag_backend *both[] = {&echo, &tick};
  /* a row with an effect its adapter does not declare */
  ag_evidence_kind k2[2] = {kinds[0], kinds[1]};
  k2[1].effects |= AG_EFF_FORCES_COMPLETION;
  ag_recipe_table t2 = {recipes, 2, k2, 2};
  check_bad(both, 2, &t2,
            "evidence 'tick_ev' has effects perturbs_timing|forces_completion "
            "but its backend 'tick' declares only perturbs_timing");
  /* a row collected by another collector, or on another variant */
  k2[1] = kinds[1];
  k2[1].backend = "echo";
  check_bad(both, 2, &t2,
            "evidence 'tick_ev' is collected by 'echo' but its backend 'tick' "
            "declares collector 'tick'");
  k2[1] = kinds[1];
  k2[1].variant = "traced";
  check_bad(both, 2, &t2,
            "evidence 'tick_ev' needs the 'traced' variant but its backend "
            "'tick' makes 'trace-free'");
  /* one evidence kind, two adapters; one collector, two collect hooks */
  ag_backend echo2 = echo;
  echo2.name = "echo2";
  const ag_backend *dup[] = {&echo, &echo2, &tick};
  check_bad(dup, 3, &table, "evidence 'echo_ev' is provided by 2 backend adapters");
  check_bad(dup, 3, &table, "backends 'echo' and 'echo2' both have a collect hook");
  /* a recipe naming evidence the table lacks */
  ag_recipe r2[2] = {recipes[0], recipes[1]};
  r2[1].evidence = "gone";
  ag_recipe_table t3 = {r2, 2, kinds, 2};
  check_bad(both, 2, &t3, "signal 'tick' names evidence 'gone'");
}

/* a backend's baseline is found in the plan's own table, not only in the
 * built-in one: its run comes first, the measured run depends on it, and
 * what the collection cost is synthesized */
TEST(test_plan_baseline_from_table) {
  const ag_evidence_kind k4[] = {
      {"tick_ev", "traced", "tick", NULL, 0, AG_EFF_PERTURBS_TIMING, 0, NULL, "tick_base", NULL},
      {"tick_base", "trace-free", "tickbase", NULL, 0, 0, 0, NULL, NULL, NULL},
  };
  ag_recipe_table t4 = {&recipes[1], 1, k4, 2};
  const char *sigs[] = {"tick"};
  ag_query q = {.region = "k", .signals = sigs, .nsignals = 1};
  ag_plan *p = NULL;
  CHECK_EQ_INT(ag_plan_build_table(&q, "prog", &t4, NULL, &p), 0);
  if (!p)
    return;
  ag_task *base = NULL, *run = NULL;
  for (int i = 0; i < 4; i++) {
    ag_task *c = find_op(p, "collect", i);
    const char *b =
        c ? json_string_value(json_array_get(json_object_get(c->config, "backends"), 0)) : NULL;
    if (b && !strcmp(b, "tickbase"))
      base = c;
    if (b && !strcmp(b, "tick"))
      run = c;
  }
  CHECK(base != NULL);
  CHECK(run != NULL);
  int dep = 0;
  for (size_t i = 0; run && base && i < run->deps.n; i++)
    dep |= run->deps.v[i] == base->id;
  CHECK(dep);
  CHECK(find_op(p, "synth.perturbation", 0) != NULL);
  ag_plan_free(p);
}

RUN_TESTS(T(test_set_executors), T(test_plan_and_schedule), T(test_check_disagreements),
          T(test_plan_baseline_from_table))
