/*
 * test_pm_plan.c — the `throughput` signal in the planner and the backend
 * set (docs/throughput.md, "Planning"), on the CPU:
 *
 *   plan      duration + throughput: three runs (the timing run, the traced
 *             run, the PM run of the user's build with its own transform
 *             config), the synthesis reading the PM run and the traced one;
 *             the PM row never shares a run with SASS patching
 *   adapter   the `pm` adapter's declarations, its collect hook and its
 *             decoder
 *   cli       `argus plan SPEC --region R --signals duration,throughput`
 *             on tests/data/evidence/hw.ptx prints the three runs
 *   timeline_system  timeline + system in one query: the traced run the
 *             timeline reads takes the activity trace beside it (config
 *             "activity", so its key differs from a traced run without),
 *             the system signal keeps its own run; without either signal
 *             no traced run has it (docs/system.md, "Chrome trace")
 */
#include <unistd.h>

#include "argus/backend.h"
#include "argus/collect.h"
#include "check.h"

/* The plan's Collect tasks of the PM run, the traced run and the timing
 * run (their one backend each). */
static void runs_of(const ag_plan *p, const ag_task **pm, const ag_task **tr,
                    const ag_task **tm) {
  *pm = *tr = *tm = NULL;
  for (size_t i = 0; i < p->tasks.n; i++) {
    const ag_task *t = p->tasks.v[i];
    json_t *b = json_object_get(t->config, "backends");
    const char *one = json_array_size(b) == 1 ? json_string_value(json_array_get(b, 0)) : "";
    if (t->type != AG_TASK_COLLECT)
      continue;
    *(!strcmp(one, "pm") ? pm : !strcmp(one, "trace") ? tr : tm) = t;
  }
}

static int depends_on(const ag_task *t, const ag_task *d) {
  for (size_t k = 0; k < t->deps.n; k++)
    if (t->deps.v[k] == d->id)
      return 1;
  return 0;
}

TEST(plan) {
  const char *sigs[] = {"duration", "throughput"};
  ag_query q;
  memset(&q, 0, sizeof q);
  q.region = "k";
  q.signals = sigs;
  q.nsignals = 2;
  ag_diags d;
  ag_diags_init(&d);
  ag_plan *p = NULL;
  CHECK_EQ_INT(ag_plan_build(&q, "prog", &d, &p), 0);
  if (!p)
    return;
  CHECK_EQ_INT(p->nruns, 3);
  const ag_task *pm, *tr, *tm;
  runs_of(p, &pm, &tr, &tm);
  CHECK(pm && tr && tm);
  if (pm && tr && tm) {
    CHECK(pm->run != tr->run && pm->run != tm->run);
    CHECK_EQ_INT(pm->effects, AG_EFF_PERTURBS_TIMING);
    CHECK_EQ_STR(json_string_value(json_object_get(pm->config, "variant")), "trace-free");
    /* its own variant task: the transform config keeps it out of the timing run */
    const ag_task *c = ag_plan_task(p, pm->deps.v[0]);
    const ag_task *v = ag_plan_task(p, c->deps.v[0]);
    CHECK_EQ_STR(v->op, "transform.trace-free");
    CHECK(json_is_true(json_object_get(v->config, "pm")));
    int synth = 0;
    for (size_t i = 0; i < p->tasks.n; i++) {
      const ag_task *t = p->tasks.v[i];
      if (!strcmp(t->op, "synth.throughput")) {
        synth++;
        CHECK(depends_on(t, pm) && depends_on(t, tr));
        CHECK_EQ_STR(json_string_value(json_object_get(t->config, "unit")), "GB/s");
      }
    }
    CHECK_EQ_INT(synth, 1);
  }
  const ag_recipe *r = ag_recipe_find("throughput");
  CHECK(r && r->qual == AG_QUAL_DERIVED && !strcmp(r->reference, "trace"));
  const ag_evidence_kind *ek = ag_evidence_find("pm");
  CHECK(ek && ag_effects_conflict(ek->effects, AG_EFF_PATCHES_SASS));
  ag_plan_free(p);
  ag_diags_release(&d);
}

static int ex_stub(ag_exec_ctx *cx, ag_task *t) { return 0; }

TEST(adapter) {
  static const ag_executor generic[] = {
      {"discover", ex_stub}, {"compile", ex_stub}, {"collect", ex_stub}, {"report", ex_stub}};
  ag_backend_set s;
  ag_diags d;
  ag_diags_init(&d);
  CHECK_EQ_INT(ag_backend_set_init(&s, ag_backends_builtin(), -1, generic, 4, ex_stub, &d), 0);
  CHECK_EQ_INT(ag_backend_set_check(&s, ag_recipe_builtin(), &d), 0);
  const ag_backend *b = ag_backend_find(&s, "pm");
  CHECK(b != NULL);
  if (b) {
    CHECK(ag_backend_collector(&s, "pm") == b);
    CHECK(ag_backend_for_evidence(&s, "pm") == b);
    CHECK(ag_backend_for_op(&s, "synth.throughput") == b);
    CHECK_EQ_INT(b->effects, AG_EFF_PERTURBS_TIMING);
    CHECK_EQ_STR(b->output, "pm");
    ag_trace_run_opts ro;
    memset(&ro, 0, sizeof ro);
    ag_collect_job job = {"c", &ro, "pm", NULL, 0, 0};
    CHECK_EQ_INT(b->collect(NULL, NULL, &job), 0);
    CHECK_EQ_STR(ro.collect, "pm");
    CHECK_EQ_INT(job.own_process, 1);
    void *x = NULL;
    CHECK(b->decode("{\"format\":\"argus-system\"}", 25, "pm.json", &d, &x) != 0);
    CHECK(x == NULL);
  }
  ag_backend_set_release(&s);
  ag_diags_release(&d);
}

TEST(cli) {
  const char *src = getenv("ARGUS_SOURCE_DIR");
  char dir[] = "/tmp/argus-pmplan-XXXXXX", spec[256], ws[256], ptx[512];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(ptx, sizeof ptx, "%s/tests/data/evidence/hw.ptx", src ? src : ".");
  snprintf(spec, sizeof spec, "%s/spec.json", dir);
  snprintf(ws, sizeof ws, "%s/ws", dir);
  ag_str s = AG_STR_INIT, out = AG_STR_INIT, err = AG_STR_INIT;
  ag_str_printf(&s, "{\"name\":\"hw\",\"module\":{\"ptx\":\"%s\"},\"run\":[\"false\"]}", ptx);
  CHECK_EQ_INT(ag_file_write_atomic(spec, s.p, s.len), 0);
  const char *argv[] = {getenv("ARGUS_BIN") ? getenv("ARGUS_BIN") : "argus", "-W", ws, "plan",
                        spec, "--region", "stall_truth", "--signals", "duration,throughput",
                        NULL};
  ag_proc_opts o = {.argv = argv, .capture_out = &out, .capture_err = &err, .timeout_s = 120};
  ag_proc_result r;
  CHECK_EQ_INT(ag_proc_run(&o, &r), 0);
  CHECK(r.exited && r.exit_code == 0);
  printf("%s%s", ag_str_cstr(&out), ag_str_cstr(&err));
  CHECK_CONTAINS(ag_str_cstr(&out), "14 tasks, 3 runs");
  CHECK_CONTAINS(ag_str_cstr(&out), "synth.throughput");
  CHECK_CONTAINS(ag_str_cstr(&out), "run 2 <-");
  ag_str_release(&s);
  ag_str_release(&out);
  ag_str_release(&err);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK_EQ_INT(system(cmd), 0);
}

/* The traced run's Collect task of a plan for `sigs`, or NULL. */
static ag_plan *plan_of(const char *const *sigs, int n) {
  ag_query q;
  memset(&q, 0, sizeof q);
  q.region = "k";
  q.signals = (const char **)sigs;
  q.nsignals = n;
  ag_diags d;
  ag_diags_init(&d);
  ag_plan *p = NULL;
  CHECK_EQ_INT(ag_plan_build(&q, "prog", &d, &p), 0);
  ag_diags_release(&d);
  return p;
}

static int activity_runs(const ag_plan *p, int *traced_with, int *system_runs) {
  int with = 0, sys = 0;
  for (size_t i = 0; p && i < p->tasks.n; i++) {
    const ag_task *t = p->tasks.v[i];
    json_t *b = json_object_get(t->config, "backends");
    const char *one = json_array_size(b) == 1 ? json_string_value(json_array_get(b, 0)) : "";
    if (t->type != AG_TASK_COLLECT)
      continue;
    if (!strcmp(one, "trace") && json_is_true(json_object_get(t->config, "activity"))) {
      with++;
      CHECK_CONTAINS(t->label, "activity trace beside it");
    }
    sys += !strcmp(one, "system");
  }
  *traced_with = with, *system_runs = sys;
  return with;
}

TEST(timeline_system) {
  const char *both[] = {"duration", "timeline", "system"};
  const char *tl[] = {"timeline"}, *ds[] = {"duration", "system"};
  int with, sys;
  ag_plan *p = plan_of(both, 3);
  activity_runs(p, &with, &sys);
  CHECK_EQ_INT(with, 1);
  CHECK_EQ_INT(sys, 1); /* the system signal: the user's build, a run of its own */
  /* the timeline reads the traced run that has the activity trace */
  for (size_t i = 0; p && i < p->tasks.n; i++) {
    const ag_task *t = p->tasks.v[i];
    if (!strcmp(t->op, "synth.timeline"))
      CHECK(json_is_true(json_object_get(ag_plan_task(p, t->deps.v[0])->config, "activity")));
  }
  CHECK_EQ_INT(p ? p->nruns : 0, 3);
  ag_plan_free(p);
  p = plan_of(tl, 1);
  activity_runs(p, &with, &sys);
  CHECK_EQ_INT(with, 0);
  ag_plan_free(p);
  p = plan_of(ds, 2);
  activity_runs(p, &with, &sys);
  CHECK_EQ_INT(with, 0);
  CHECK_EQ_INT(sys, 1);
  ag_plan_free(p);
}

RUN_TESTS(T(plan), T(adapter), T(cli), T(timeline_system))
