/*
 * test_async_applies.c — async_latency on a region without asynchronous
 * sites (issue 17): the plan says the signal does not apply, with the
 * reason, before anything runs; the reference run that only it needed is
 * skipped too, and a signal that does apply in the same query keeps its
 * tasks. CPU only: observe with no GPU, and plan (discovery alone).
 */
#include "check.h"

#include <unistd.h>

#include "argus/observe.h"
#include "../trace/trace_util.h"

static char ws[128];

static int observe(const char *region, const char *s1, const char *s2, int plan_only,
                   ag_observe_result *r) {
  char spec[1024];
  const char *src = getenv("ARGUS_SOURCE_DIR");
  snprintf(spec, sizeof spec, "%s/examples/overhead/spec.json", src ? src : ".");
  const char *sigs[] = {s1, s2};
  ag_observe_opts o = {.spec = spec, .workspace = ws, .region = region, .signals = sigs,
                       .nsignals = s2 ? 2 : 1, .scope = "iter=0:2", .plan_only = plan_only,
                       .ndevices = 0, .timeout_s = 30};
  ag_diags d;
  ag_diags_init(&d);
  int rc = ag_observe(&o, &d, r);
  if (rc)
    tu_print_diags(&d);
  ag_diags_release(&d);
  return rc;
}

static const ag_task *find(const ag_plan *p, const char *op, int nth) {
  for (size_t i = 0; i < p->tasks.n; i++)
    if (!strcmp(p->tasks.v[i]->op, op) && nth-- == 0)
      return p->tasks.v[i];
  return NULL;
}

TEST(does_not_apply_before_running) {
  ag_observe_result r;
  CHECK_EQ_INT(observe("work", "async_latency", NULL, 0, &r), 0);
  const ag_task *s = find(r.plan, "synth.async_latency", 0);
  CHECK(s && s->status == AG_TS_SKIPPED);
  CHECK(s && s->error && strstr(s->error, "async_latency does not apply to 'work'"));
  CHECK(s && s->error && strstr(s->error, "no asynchronous site"));
  /* the reference run was not attempted: skipped, not failed for want of a GPU */
  const ag_task *c = find(r.plan, "collect", 0);
  CHECK(c && c->status == AG_TS_SKIPPED && !c->ran);
  CHECK(c && c->error && !strstr(c->error, "needs a GPU"));
  CHECK_EQ_INT(r.stats.failed, 0);
  /* the report says so in its missing list, and has no values */
  CHECK(r.report != NULL);
  json_t *miss = json_object_get(r.report, "missing");
  CHECK_EQ_INT((int)json_array_size(miss), 1);
  CHECK_CONTAINS(json_string_value(json_object_get(json_array_get(miss, 0), "why")),
                 "does not apply");
  CHECK_EQ_INT((int)json_array_size(json_object_get(r.report, "values")), 0);
  ag_observe_result_release(&r);
}

TEST(other_signals_keep_their_tasks) {
  ag_observe_result r;
  CHECK_EQ_INT(observe("work", "async_latency", "duration", 1, &r), 0); /* argus plan */
  const ag_task *s = find(r.plan, "synth.async_latency", 0);
  CHECK(s && s->status == AG_TS_SKIPPED && strstr(s->error, "does not apply"));
  const ag_task *dur = find(r.plan, "synth.duration", 0);
  CHECK(dur && dur->status == AG_TS_PENDING);
  int pending_collect = 0, skipped_collect = 0;
  for (int k = 0; k < 2; k++) {
    const ag_task *c = find(r.plan, "collect", k);
    pending_collect += c && c->status == AG_TS_PENDING;
    skipped_collect += c && c->status == AG_TS_SKIPPED;
  }
  CHECK_EQ_INT(pending_collect, 1); /* duration's run */
  CHECK_EQ_INT(skipped_collect, 1); /* the timed-waits reference */
  ag_observe_result_release(&r);
}

static void setup(void) __attribute__((constructor));
static void setup(void) {
  snprintf(ws, sizeof ws, "/tmp/argus-applies-%ld", (long)getpid());
}
static void teardown(void) __attribute__((destructor));
static void teardown(void) { tu_rm_rf(ws); }

RUN_TESTS(T(does_not_apply_before_running), T(other_signals_keep_their_tasks))
