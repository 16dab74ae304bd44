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
                       "synth.system",     "report"};
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

RUN_TESTS(T(test_builtin_agree))
