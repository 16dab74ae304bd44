/*
 * test_probe_plan.c — discovery-driven probe expansion: the plan of the
 * paper's multi-run workload (examples/tma_probe: 2 TMA loads x 8
 * iterations) has 16 isolated probe collections and one reference, all
 * feeding the synthesis; the count is checked against brute force (the TMA
 * and wgmma instructions in the PTX text times the iterations); a plan in
 * which two probes share a run is rejected by the same checker (the check can
 * fail); a query without iterations and one too large are errors that say
 * why. Discovery runs for real on the example's PTX, through the scheduler
 * with only Control tasks run (what `argus plan` does).
 */
#include "check.h"

#include "argus/ptx.h"
#include "argus/run.h"
#include "../trace/trace_util.h"

#include "plan_util.h"

static size_t count(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *q = strstr(hay, needle); q; q = strstr(q + 1, needle))
    n++;
  return n;
}

TEST(sixteen_isolated_probes_and_one_reference) {
  discovery = discover_file("tests/data/ptx/tma_probe.ptx");
  CHECK(discovery != NULL);
  size_t len = 0;
  char *ptx = tu_read_build_file("tests/data/ptx/tma_probe.ptx", &len);
  CHECK(ptx != NULL);
  if (!discovery || !ptx)
    return;
  int rc = 0;
  ag_plan *p = plan_and_expand("tma_probe/mainloop/loads", "iter=0:8", &rc);
  CHECK_EQ_INT(rc, 0);
  int refs = 0;
  size_t tma = count(ptx, "cp.async.bulk.tensor"); /* brute force: the text */
  CHECK_EQ_U64(tma, 2);
  CHECK_EQ_INT(p ? probe_runs(p, &refs) : -2, (int)(tma * 8));
  CHECK_EQ_INT(refs, 1);
  CHECK_EQ_INT(p ? p->nruns : 0, (int)(tma * 8) + 1);
  /* every (site, iteration) once */
  int seen[2][8] = {{0}};
  const char *ops[2] = {NULL, NULL};
  for (size_t i = 0; p && i < p->tasks.n; i++) {
    const ag_task *t = p->tasks.v[i];
    if (strcmp(t->op, "transform.probe"))
      continue;
    const char *op = json_string_value(json_object_get(t->config, "op"));
    int occ = (int)json_integer_value(json_object_get(t->config, "occurrence"));
    int k = ops[0] && !strcmp(ops[0], op) ? 0 : ops[1] && !strcmp(ops[1], op) ? 1 : !ops[0] ? 0 : 1;
    if (!ops[k])
      ops[k] = op;
    CHECK(occ >= 0 && occ < 8);
    if (occ >= 0 && occ < 8)
      seen[k][occ]++;
  }
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < 8; i++)
      CHECK_EQ_INT(seen[k][i], 1);
  /* the printed plan shows every branch */
  ag_str txt = AG_STR_INIT;
  if (p)
    ag_plan_print_text(p, &txt);
  CHECK_EQ_U64(count(ag_str_cstr(&txt), "transform.probe"), 16);
  CHECK_EQ_U64(count(ag_str_cstr(&txt), "effects=forces_completion"), 16);
  ag_str_release(&txt);
  /* deliberately wrong: two probes in one run must be caught */
  if (p) {
    ag_task *a = NULL, *b = NULL;
    for (size_t i = 0; i < p->tasks.n; i++)
      if (p->tasks.v[i]->type == AG_TASK_COLLECT &&
          json_object_get(p->tasks.v[i]->config, "op"))
        (a ? (b ? (void)0 : (void)(b = p->tasks.v[i])) : (void)(a = p->tasks.v[i]));
    CHECK(a && b);
    if (a && b) {
      b->run = a->run;
      CHECK_EQ_INT(probe_runs(p, &refs), -1);
    }
  }
  ag_plan_free(p);
  /* the whole mainloop: the wgmma sites too (4 of them), brute force again */
  p = plan_and_expand("mainloop", "iter=0:8", &rc);
  CHECK_EQ_INT(rc, 0);
  size_t wgmma = count(ptx, "wgmma.mma_async");
  CHECK_EQ_INT(p ? probe_runs(p, &refs) : -2, (int)((tma + wgmma) * 8));
  ag_plan_free(p);
  /* a window: iterations 2, 3 and 6 */
  p = plan_and_expand("loads", "iter=2:4,iter=6", &rc);
  CHECK_EQ_INT(rc, 0);
  CHECK_EQ_INT(p ? probe_runs(p, &refs) : -2, (int)(tma * 3));
  ag_plan_free(p);
  ag_free(ptx);
}

TEST(probe_plan_errors) {
  int rc = 0;
  /* no iteration window */
  const char *sigs[] = {"async_latency"};
  ag_query q = {.region = "loads", .signals = sigs, .nsignals = 1};
  ag_diags d;
  ag_diags_init(&d);
  ag_plan *p = NULL;
  CHECK_EQ_INT(ag_plan_build(&q, "x", &d, &p), AG_EINVAL);
  CHECK(p == NULL);
  CHECK(d.items.n > 0);
  if (d.items.n)
    CHECK_CONTAINS(d.items.v[0].msg, "--scope iter=0:8");
  ag_diags_release(&d);
  /* too many branches: the Control task fails, saying why */
  p = plan_and_expand("loads", "iter=0:5000", &rc);
  CHECK(rc != 0);
  int probes = 0;
  for (size_t i = 0; p && i < p->tasks.n; i++)
    probes += !strcmp(p->tasks.v[i]->op, "transform.probe");
  CHECK_EQ_INT(probes, 0);
  for (size_t i = 0; p && i < p->tasks.n; i++)
    if (p->tasks.v[i]->type == AG_TASK_CONTROL)
      CHECK_CONTAINS(p->tasks.v[i]->error, "expanding discovered branches failed");
  ag_plan_free(p);
  /* a region without async sites: no probe, the plan still has its reference */
  p = plan_and_expand("epilogue", "iter=0:8", &rc);
  CHECK_EQ_INT(rc, 0);
  int refs = 0;
  CHECK_EQ_INT(p ? probe_runs(p, &refs) : -2, 0);
  CHECK_EQ_INT(refs, 1);
  ag_plan_free(p);
  /* a bad discovery output */
  ag_str why = AG_STR_INIT;
  json_t *bad = json_object();
  p = plan_and_expand("loads", "iter=0:1", &rc);
  if (p)
    CHECK_EQ_INT(ag_probe_expand(p, p->tasks.v[0], bad, &why), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&why), "no region or site table");
  ag_str_release(&why);
  json_decref(bad);
  ag_plan_free(p);
  json_decref(discovery);
}

/* The absent pairs the planner noted on the synthesis: per site, how many. */
static size_t absent_of(const ag_plan *p, const char *op) {
  for (size_t i = 0; i < p->tasks.n; i++) {
    json_t *a = json_object_get(p->tasks.v[i]->config, "absent"), *x;
    size_t k;
    json_array_foreach(a, k, x) if (!strcmp(json_string_value(json_object_get(x, "op")), op))
        return json_array_size(json_object_get(x, "iterations"));
  }
  return 0;
}

/* A loop unrolled x4 by nvcc over a run-time trip count
 * (tests/data/cuda/async_truth.cu, unroll4): copy j of the loop runs at
 * t = 4m + j, the remainder loop's copy at any t. For iter=0:8 the plan has
 * one probe per executing pair: 4 copies x 2 + 8 = 16 (before: 5 x 8 = 40),
 * the absent pairs listed per copy (6 each), and the count checked against
 * brute force over the text (the copies' marker registers). */
TEST(unrolled_copies_probe_only_their_iterations) {
  discovery = discover_file("tests/data/ptx/async_truth.ptx");
  CHECK(discovery != NULL);
  if (!discovery)
    return;
  int rc = 0;
  ag_plan *p = plan_and_expand("unroll4/load", "iter=0:8", &rc);
  CHECK_EQ_INT(rc, 0);
  int refs = 0;
  CHECK_EQ_INT(p ? probe_runs(p, &refs) : -2, 16);
  CHECK_EQ_INT(refs, 1);
  /* per site: planned occurrences match its iterations exactly */
  size_t i;
  json_t *x;
  int copies = 0, remainder = 0;
  json_array_foreach(json_object_get(discovery, "sites"), i, x) {
    const char *k = json_string_value(json_object_get(x, "kind"));
    const char *fn = json_string_value(json_object_get(x, "function"));
    if (strcmp(k, "bulk_copy") || strcmp(fn, "unroll4"))
      continue;
    json_t *it = json_object_get(x, "iterations");
    json_int_t first = json_integer_value(json_object_get(it, "first"));
    json_int_t step = json_integer_value(json_object_get(it, "step"));
    const char *op = json_string_value(json_object_get(x, "op_id"));
    int planned = 0, want = 0;
    for (size_t t = 0; p && t < p->tasks.n; t++) {
      const ag_task *c = p->tasks.v[t];
      const char *cop = json_string_value(json_object_get(c->config, "op"));
      if (c->type != AG_TASK_COLLECT || !cop || strcmp(cop, op))
        continue;
      json_int_t occ = json_integer_value(json_object_get(c->config, "occurrence"));
      planned++;
      CHECK_EQ_INT((int)((occ - first) % step), 0);
    }
    for (int t = 0; t < 8; t++)
      want += t >= first && (t - first) % step == 0;
    CHECK_EQ_INT(planned, want);
    if (step == 4) {
      copies++;
      CHECK_EQ_U64(absent_of(p, op), 6);
    } else {
      remainder++;
      CHECK_EQ_INT((int)step, 1);
      CHECK_EQ_U64(absent_of(p, op), 0);
    }
  }
  CHECK_EQ_INT(copies, 4);
  CHECK_EQ_INT(remainder, 1);
  /* the site table's format is part of the discovery's identity (its memo
   * key): a workspace's discovery from before the iterations is not reused */
  int ncount = 0;
  for (size_t t = 0; p && t < p->tasks.n; t++)
    if (p->tasks.v[t]->type == AG_TASK_CONTROL && !strcmp(p->tasks.v[t]->op, "discover"))
      CHECK_EQ_INT((int)json_integer_value(json_object_get(p->tasks.v[t]->config, "sites")), 3);
    else if (p->tasks.v[t]->type == AG_TASK_CONTROL)
      ncount += !strcmp(p->tasks.v[t]->op, "count");
  CHECK_EQ_INT(ncount, 1);
  ag_plan_free(p);
  json_decref(discovery);
}

/* The counting run's output for unroll4 at `ntiles` tiles, as the GPU gives
 * it (ag_async_count): each begin marker of `load` at the iterations its
 * copy ran (copy j of the x4 loop at 4m + j below ntiles rounded down to 4,
 * the remainder loop at the rest), 8 CTAs each. */
static json_t *unroll4_counts(int ntiles, int complete) {
  json_t *markers = json_array();
  size_t i;
  json_t *x;
  json_array_foreach(json_object_get(discovery, "sites"), i, x) {
    const char *k = json_string_value(json_object_get(x, "kind"));
    const char *fn = json_string_value(json_object_get(x, "function"));
    if (strcmp(k, "bulk_copy") || strcmp(fn, "unroll4"))
      continue;
    json_t *it = json_object_get(x, "iterations");
    json_int_t first = json_integer_value(json_object_get(it, "first"));
    json_int_t step = json_integer_value(json_object_get(it, "step"));
    json_t *its = json_array();
    int main_end = ntiles / 4 * 4;
    for (int t = 0; t < ntiles; t++)
      if (step == 4 ? t < main_end && (t - first) % 4 == 0 : t >= main_end)
        json_array_append_new(its, json_pack("[i,i]", t, 8));
    if (json_array_size(its))
      json_array_append_new(markers, json_pack("{s:O,s:s,s:o}", "line",
                                               json_object_get(it, "marker_line"), "region",
                                               "unroll4/load", "iterations", its));
    else
      json_decref(its);
  }
  return json_pack("{s:i,s:i,s:i,s:b,s:o}", "format", 1, "launches", 2, "dropped",
                   complete ? 0 : 3, "complete", complete, "markers", markers);
}

/* Counts the probe collects by status; *bad: a skipped one that is not
 * marked absent-by-count, or a skipped one whose compile still runs. */
static void probe_status(const ag_plan *p, int *pending, int *skipped, int *bad) {
  *pending = *skipped = *bad = 0;
  for (size_t t = 0; t < p->tasks.n; t++) {
    const ag_task *c = p->tasks.v[t];
    const char *v = json_string_value(json_object_get(c->config, "variant"));
    if (c->type != AG_TASK_COLLECT || !v || strcmp(v, "probe"))
      continue;
    if (c->status == AG_TS_PENDING) {
      (*pending)++;
      continue;
    }
    (*skipped)++;
    const char *a = json_string_value(json_object_get(c->config, "absent"));
    *bad += c->status != AG_TS_SKIPPED || !a || strcmp(a, "counted") ||
            !strstr(c->error ? c->error : "", "counted: ");
    for (size_t k = 0; k < c->deps.n; k++) { /* its compile, only it needed: skipped */
      const ag_task *d = ag_plan_task(p, c->deps.v[k]);
      *bad += d->type == AG_TASK_TRANSFORM && d->status != AG_TS_SKIPPED;
    }
  }
}

/* The remainder copies' iterations depend on the trip count (a kernel
 * argument), which static analysis cannot tell; the counting run of the
 * reference can. Every probe collect waits for the Control task `count`
 * (over the discovery and the reference run); from its counts the plan drops
 * exactly the pairs that did not run, before they run, lists them as absent
 * ("counted"), and says where its knowledge came from. At 16 tiles the
 * remainder never runs (8 of 16 probes dropped); at 6 tiles the copies run
 * at 0-3 and the remainder at 4-5 (6 kept, 10 dropped); a count that lost
 * records drops nothing. */
TEST(counted_iterations_drop_the_probes_that_cannot_fire) {
  discovery = discover_file("tests/data/ptx/async_truth.ptx");
  CHECK(discovery != NULL);
  if (!discovery)
    return;
  static const struct {
    int ntiles, complete, kept, dropped;
  } cases[] = {{16, 1, 8, 8}, {6, 1, 6, 10}, {16, 0, 16, 0}};
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    int rc = 0;
    ag_plan *p = plan_and_expand("unroll4/load", "iter=0:8", &rc);
    CHECK_EQ_INT(rc, 0);
    if (!p)
      continue;
    ag_task *count = NULL, *synth = NULL, *ref = NULL;
    for (size_t t = 0; t < p->tasks.n; t++) {
      ag_task *x = p->tasks.v[t];
      const char *v = json_string_value(json_object_get(x->config, "variant"));
      if (!strcmp(x->op, "count"))
        count = x;
      else if (!strcmp(x->op, "synth.async_latency"))
        synth = x;
      else if (x->type == AG_TASK_COLLECT && v && strcmp(v, "probe"))
        ref = x;
    }
    CHECK(count && synth && ref);
    if (!count || !synth || !ref) {
      ag_plan_free(p);
      continue;
    }
    /* the count reads the discovery and the reference (its key holds both) */
    CHECK_EQ_U64(count->deps.n, 2);
    CHECK_EQ_INT(count->deps.v[1], ref->id);
    CHECK_EQ_STR(json_string_value(json_object_get(synth->config, "iterations_from")), "static");
    int pending, skipped, bad;
    probe_status(p, &pending, &skipped, &bad);
    CHECK_EQ_INT(pending, 16);
    /* every probe waits for the count */
    for (size_t t = 0; t < p->tasks.n; t++) {
      const ag_task *c = p->tasks.v[t];
      const char *v = json_string_value(json_object_get(c->config, "variant"));
      int waits = 0;
      for (size_t k = 0; k < c->deps.n; k++)
        waits |= c->deps.v[k] == count->id;
      if (c->type == AG_TASK_COLLECT && v && !strcmp(v, "probe"))
        CHECK(waits);
    }
    json_t *counts = unroll4_counts(cases[ci].ntiles, cases[ci].complete);
    ag_str why = AG_STR_INIT;
    CHECK_EQ_INT(ag_probe_prune(p, count, discovery, counts, &why), 0);
    ag_str_release(&why);
    json_decref(counts);
    probe_status(p, &pending, &skipped, &bad);
    CHECK_EQ_INT(pending, cases[ci].kept);
    CHECK_EQ_INT(skipped, cases[ci].dropped);
    CHECK_EQ_INT(bad, 0);
    /* the dropped pairs are the synthesis's absent ones, from "counted" */
    size_t n_counted = 0, k;
    json_t *a;
    json_array_foreach(json_object_get(synth->config, "absent"), k, a) if (
        !strcmp(json_string_value(json_object_get(a, "from")), "counted")) n_counted +=
        json_array_size(json_object_get(a, "iterations"));
    CHECK_EQ_U64(n_counted, (size_t)cases[ci].dropped);
    const char *from = json_string_value(json_object_get(synth->config, "iterations_from"));
    CHECK(from && !strncmp(from, cases[ci].complete ? "counted: " : "static: ", 8));
    ag_plan_free(p);
  }
  /* bad input: a count without its table is refused with the reason */
  int rc = 0;
  ag_plan *p = plan_and_expand("unroll4/load", "iter=0:8", &rc);
  ag_task *count = NULL;
  for (size_t t = 0; p && t < p->tasks.n; t++)
    if (!strcmp(p->tasks.v[t]->op, "count"))
      count = p->tasks.v[t];
  json_t *junk = json_pack("{s:i}", "format", 1);
  ag_str why = AG_STR_INIT;
  CHECK_EQ_INT(count ? ag_probe_prune(p, count, discovery, junk, &why) : -1, AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&why), "counting run");
  ag_str_release(&why);
  json_decref(junk);
  ag_plan_free(p);
  json_decref(discovery);
}

RUN_TESTS(T(sixteen_isolated_probes_and_one_reference), T(probe_plan_errors),
          T(unrolled_copies_probe_only_their_iterations),
          T(counted_iterations_drop_the_probes_that_cannot_fire))
