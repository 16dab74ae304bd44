/* test_backends_builtin.c — the built-in backend adapters (src/run/backend_*.c)
 * agree with the built-in recipe rows (src/plan/recipe.c), and their set
 * gives the executor table `argus observe` ran before the adapters had
 * files of their own: every op, once. A row changed against its adapter
 * is refused. */
#include "argus/backend.h"
#include "check.h"

static int ex_stub(ag_exec_ctx *cx, ag_task *t) { return 0; }

static const ag_executor generic[] = {
    {"discover", ex_stub}, {"compile", ex_stub}, {"collect", ex_stub}, {"report", ex_stub}};

static int count_op(const ag_backend_set *s, const char *op) {
  int n = 0;
  for (size_t i = 0; i < s->execs.n; i++)
    n += !strcmp(s->execs.v[i].op, op);
  return n;
}

TEST(test_builtin_agree) {
  ag_backend_set s;
  ag_diags d;
  ag_diags_init(&d);
  CHECK_EQ_INT(ag_backend_set_init(&s, ag_backends_builtin(), -1, generic, 4, ex_stub, &d), 0);
  CHECK_EQ_INT(ag_backend_set_check(&s, ag_recipe_builtin(), &d), 0);
  ag_str msg = AG_STR_INIT;
  ag_diags_format(&d, &msg);
  CHECK_EQ_STR(ag_str_cstr(&msg), "");
  ag_str_release(&msg);
  /* the executor table observe.c had (13 ops), the probe's count and the
   * system timeline's synthesis, each once */
  const char *ops[] = {"discover",         "transform.traced",  "transform.trace-free",
                       "transform.probe",  "synth.async_latency", "compile", "count",
                       "collect",          "synth.duration",    "synth.occurrences",
                       "synth.timeline",   "synth.static",      "synth.perturbation",
                       "report",
                       /* issue 19: the mapping run and SASS metrics */
                       "transform.mapping", "synth.ownership",  "synth.inst_mix",
                       "synth.barriers",    "synth.branch",
                       /* issue 21: the system timeline, stalls, PM sampling, hardware
                          counters */
                       "synth.system", "synth.stalls", "synth.throughput", "synth.hw_counters",
                       /* issue 26: NCCL's collectives on the system timeline */
                       "synth.comm"};
  CHECK_EQ_INT(s.execs.n, sizeof ops / sizeof ops[0]);
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    if (count_op(&s, ops[i]) != 1)
      fprintf(stderr, "op '%s' appears %d times\n", ops[i], count_op(&s, ops[i]));
    CHECK_EQ_INT(count_op(&s, ops[i]), 1);
  }
  /* the adapters' declarations */
  const ag_backend *tr = ag_backend_find(&s, "trace"), *tm = ag_backend_find(&s, "time"),
                   *pr = ag_backend_find(&s, "probe"), *st = ag_backend_find(&s, "static");
  CHECK(tr && tm && pr && st);
  if (!tr || !tm || !pr || !st)
    goto out;
  CHECK(ag_backend_collector(&s, "trace") == tr); /* probes share the collector, not the hook */
  CHECK(ag_backend_collector(&s, "time") == tm);
  CHECK(tr->bind && !tm->bind && pr->expand && !tr->expand && !st->collector);
  CHECK_EQ_INT(pr->effects, AG_EFF_FORCES_COMPLETION);
  CHECK_EQ_STR(tm->output, "timing");
  CHECK(ag_backend_for_evidence(&s, "async_ref") == tr);
  CHECK(ag_backend_for_evidence(&s, "async_probe") == pr);
  /* the probe backend owns its Control task (the counting run) and prunes after it */
  CHECK(ag_backend_for_op(&s, "count") == pr && pr->control_done);
  CHECK(ag_backend_for_op(&s, "discover") == NULL && !tr->control_done);
  /* the decoders: bad evidence is refused with a message */
  void *x = NULL;
  ag_diags_release(&d);
  ag_diags_init(&d);
  CHECK(tm->decode("{not json", 9, "timing.json", &d, &x) != 0);
  CHECK(x == NULL);
  CHECK_EQ_INT(tm->decode("{\"launches\":[]}", 15, "timing.json", &d, &x), 0);
  tm->release(x);
  CHECK(tr->decode("garbage", 7, "evidence", &d, &x) != 0);
  /* the mapping run and SASS metrics: each its own collector and hook, the
   * SASS run's patching declared, the -lineinfo build the compiler's */
  const ag_backend *mp = ag_backend_find(&s, "map"), *ss = ag_backend_find(&s, "sass");
  CHECK(mp && ss);
  if (!mp || !ss)
    goto out;
  CHECK(ag_backend_collector(&s, "map") == mp && ag_backend_collector(&s, "sass") == ss);
  CHECK_EQ_INT(ss->effects, AG_EFF_PATCHES_SASS);
  CHECK_EQ_INT(mp->effects, AG_EFF_PERTURBS_TIMING);
  CHECK_EQ_STR(mp->variant, "mapping");
  CHECK(ag_backend_for_evidence(&s, "lineinfo") == st);
  CHECK(ag_backend_for_op(&s, "synth.inst_mix") == ss);
  CHECK(ag_backend_for_op(&s, "synth.ownership") == mp);
  {
    ag_trace_run_opts ro;
    memset(&ro, 0, sizeof ro);
    ag_collect_job job = {"c", &ro, "evidence", NULL, 0, 0};
    CHECK_EQ_INT(ss->collect(NULL, NULL, &job), 0);
    CHECK_EQ_STR(ro.collect, "sass");
    CHECK_EQ_INT(job.own_process, 1); /* CUPTI patches at a kernel's first launch only */
    job.own_process = 0;
    CHECK_EQ_INT(mp->collect(NULL, NULL, &job), 0);
    CHECK_EQ_STR(ro.collect, "map");
    CHECK_EQ_INT(job.own_process, 0);
    const ag_backend *pcs = ag_backend_find(&s, "stalls");
    CHECK(pcs && ag_backend_collector(&s, "stalls") == pcs);
    if (pcs) { /* PC sampling: a CUPTI subscriber of its own */
      CHECK_EQ_INT(pcs->collect(NULL, NULL, &job), 0);
      CHECK_EQ_STR(ro.collect, "stalls");
      CHECK_EQ_INT(job.own_process, 1);
      CHECK(ag_backend_for_op(&s, "synth.stalls") == pcs);
    }
    const ag_backend *ctr = ag_backend_find(&s, "counters");
    CHECK(ctr && ag_backend_collector(&s, "counters") == ctr);
    if (ctr) { /* the range profiler: kernels replayed one at a time, a process of its own */
      job.own_process = 0;
      CHECK_EQ_INT(ctr->collect(NULL, NULL, &job), 0);
      CHECK_EQ_STR(ro.collect, "counters");
      CHECK_EQ_INT(job.own_process, 1);
      CHECK_EQ_INT(ctr->effects, AG_EFF_SERIALIZES_KERNELS);
      CHECK_EQ_STR(ctr->variant, "trace-free");
      CHECK(ag_backend_for_op(&s, "synth.hw_counters") == ctr && ctr->bind);
      CHECK(ctr->decode("{\"format\":\"argus-system\"}", 24, "counters.json", &d, &x) != 0);
      CHECK(x == NULL);
    }
  }
  CHECK(mp->decode("{\"format\":\"x\"}", 14, "map_counts.json", &d, &x) != 0);
  CHECK(x == NULL);
  CHECK(mp->decode("[1", 2, "map_counts.json", &d, &x) != 0);
  {
    const char *ok = "{\"format\":\"argus-map-counts\",\"slots\":2,\"counts\":[0,5]}";
    CHECK_EQ_INT(mp->decode(ok, strlen(ok), "map_counts.json", &d, &x), 0);
    CHECK(x != NULL);
    mp->release(x);
  }
  CHECK(ss->decode("{}", 2, "sass_metrics.json", &d, &x) != 0);
  CHECK(x == NULL);
  /* a row whose effects its adapter does not declare */
  const ag_recipe_table *b = ag_recipe_builtin();
  ag_evidence_kind kinds[16];
  CHECK(b->nkinds <= 16);
  memcpy(kinds, b->kinds, sizeof kinds[0] * b->nkinds);
  for (size_t i = 0; i < b->nkinds; i++)
    if (!strcmp(kinds[i].name, "async_probe"))
      kinds[i].effects |= AG_EFF_PATCHES_SASS;
  ag_recipe_table t2 = {b->recipes, b->nrecipes, kinds, b->nkinds};
  ag_diags_release(&d);
  ag_diags_init(&d);
  CHECK_EQ_INT(ag_backend_set_check(&s, &t2, &d), AG_EINVAL);
  ag_diags_format(&d, &msg);
  CHECK_CONTAINS(ag_str_cstr(&msg), "evidence 'async_probe' has effects "
                                    "forces_completion|patches_sass but its backend 'probe'");
  ag_str_release(&msg);
out:
  ag_diags_release(&d);
  ag_backend_set_release(&s);
}

/* The attributed signals' plan: the mapping run and the SASS-metrics run
 * apart (each its own Collect, the SASS run patching), both reading a
 * -lineinfo build of the trace-free program; ownership reads that build
 * without the SASS run; each synthesis depends on both of its runs. */
static const ag_task *collect_of(const ag_plan *p, const char *backend) {
  for (size_t i = 0; i < p->tasks.n; i++) {
    const ag_task *t = p->tasks.v[i];
    json_t *b = json_object_get(t->config, "backends");
    if (t->type == AG_TASK_COLLECT && json_array_size(b) == 1 &&
        !strcmp(json_string_value(json_array_get(b, 0)), backend))
      return t;
  }
  return NULL;
}

TEST(test_attributed_plan) {
  const char *sigs[] = {"inst_mix", "ownership", "duration"};
  ag_query q;
  memset(&q, 0, sizeof q);
  q.region = "k";
  q.signals = sigs;
  q.nsignals = 3;
  ag_diags d;
  ag_diags_init(&d);
  ag_plan *p = NULL;
  CHECK_EQ_INT(ag_plan_build(&q, "prog", &d, &p), 0);
  if (!p)
    goto out;
  /* over the partition: no run holds the mapping collection together with a
   * timing one (trace, time: they would time the mapping build), though the
   * query plans both */
  int map_runs = 0, timing_runs = 0;
  for (int run = 0; run < p->nruns; run++) {
    int map = 0, timing = 0;
    for (size_t i = 0; i < p->tasks.n; i++) {
      const ag_task *t = p->tasks.v[i];
      size_t k;
      json_t *b;
      if (t->type != AG_TASK_COLLECT || t->run != run)
        continue;
      json_array_foreach(json_object_get(t->config, "backends"), k, b) {
        map |= !strcmp(json_string_value(b), "map");
        timing |= !strcmp(json_string_value(b), "trace") || !strcmp(json_string_value(b), "time");
      }
    }
    if (map && timing)
      fprintf(stderr, "run %d holds the mapping collection and a timing one\n", run);
    CHECK(!(map && timing));
    map_runs += map;
    timing_runs += timing;
  }
  CHECK_EQ_INT(map_runs, 1);
  CHECK(timing_runs >= 1);
  const ag_task *ms = collect_of(p, "sass"), *mm = collect_of(p, "map");
  CHECK(ms && mm && ms != mm);
  if (!ms || !mm)
    goto out;
  CHECK_EQ_INT(ms->effects, AG_EFF_PATCHES_SASS);
  CHECK_EQ_INT(mm->effects, AG_EFF_PERTURBS_TIMING);
  /* the SASS run patches the kernel: its collection may share no run with
   * the mapping one */
  CHECK(ag_effects_conflict(ms->effects, mm->effects));
  const ag_task *cs = ag_plan_task(p, ms->deps.v[0]), *cm = ag_plan_task(p, mm->deps.v[0]);
  CHECK_EQ_STR(cs->op, "compile");
  CHECK(json_is_true(json_object_get(cs->config, "lineinfo")));
  CHECK(!json_is_true(json_object_get(cm->config, "lineinfo")));
  CHECK_EQ_STR(json_string_value(json_object_get(ms->config, "variant")), "trace-free");
  CHECK_EQ_STR(json_string_value(json_object_get(mm->config, "variant")), "mapping");
  int found = 0;
  for (size_t i = 0; i < p->tasks.n; i++) {
    const ag_task *t = p->tasks.v[i];
    int dms = 0, dmm = 0, dcs = 0;
    for (size_t k = 0; k < t->deps.n; k++) {
      dms |= t->deps.v[k] == ms->id;
      dmm |= t->deps.v[k] == mm->id;
      dcs |= t->deps.v[k] == cs->id;
    }
    if (!strcmp(t->op, "synth.inst_mix"))
      found += dms && dmm;
    if (!strcmp(t->op, "synth.ownership"))
      found += dmm && dcs && !dms; /* the -lineinfo build, shared; no SASS run */
    /* the trace's compile is not the -lineinfo one */
    if (!strcmp(t->op, "compile") && t != cs)
      CHECK(!json_is_true(json_object_get(t->config, "lineinfo")));
  }
  CHECK_EQ_INT(found, 2);
out:
  ag_plan_free(p);
  ag_diags_release(&d);
}

RUN_TESTS(T(test_builtin_agree), T(test_attributed_plan))
