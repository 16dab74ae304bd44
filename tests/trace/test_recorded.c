/*
 * test_recorded.c — decode and report on evidence recorded on the H200
 * (tests/data/evidence): the structure the kernels imply (counts per region,
 * roles, iterations 0..63 in order, nesting), statistics against a
 * brute-force reading of the raw records written here independently of the
 * decoder (count, total, mean, p50, p95, min, max), deliberately wrong
 * references (each one field off by a cycle) that the same comparison must
 * reject, the Chrome trace, and damage to the recorded files.
 */
#include "check.h"

#include <math.h>

#include "argus/report_trace.h"
#include "argus/synth.h"
#include "trace_util.h"

static ag_evidence *load(const char *name) {
  char p[1024];
  const char *src = getenv("ARGUS_SOURCE_DIR");
  snprintf(p, sizeof p, "%s/tests/data/evidence/%s", src ? src : ".", name);
  ag_evidence *ev = tu_load_evidence(p);
  CHECK(ev != NULL);
  return ev;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Brute-force statistics of n durations (v is sorted here): sums and
 * extremes by a plain walk; pP the smallest value with at least P % of the
 * values at or below it, found by counting in integers. */
static ag_dstats brute_stats(double *v, size_t n) {
  ag_dstats o = {.count = n, .min = INFINITY};
  qsort(v, n, sizeof *v, cmp_d);
  for (size_t i = 0; i < n; i++) {
    o.total += v[i];
    o.min = fmin(o.min, v[i]);
    o.max = fmax(o.max, v[i]);
  }
  o.mean = n ? o.total / (double)n : 0;
  int have50 = 0, have95 = 0;
  for (size_t i = 0; i < n; i++) {
    size_t le = i + 1;
    while (le < n && v[le] == v[i])
      le++;
    if (!have50 && le * 100 >= n * 50)
      o.p50 = v[i], have50 = 1;
    if (!have95 && le * 100 >= n * 95)
      o.p95 = v[i], have95 = 1;
  }
  return o;
}

static const ag_region_stats *find(const ag_region_stats *rs, int n, const ag_evidence *ev,
                                   const char *q) {
  for (int i = 0; i < n; i++)
    if (!strcmp(ev->regions[rs[i].region].qname, q))
      return &rs[i];
  fprintf(stderr, "no statistics for %s\n", q);
  return NULL;
}

TEST(overhead_structure_and_brute_force) {
  ag_evidence *ev = load("overhead.agev");
  ag_trace *t = NULL;
  if (!ev || ag_trace_decode(ev, &t)) {
    CHECK(0);
    return;
  }
  CHECK_EQ_INT(ev->nlaunches, 1);
  const ag_ev_launch *L = &ev->launches[0];
  CHECK_EQ_INT(L->warps, 1024);
  CHECK_EQ_U64(L->nrecords, 1024 * 65);
  CHECK_EQ_U64(L->dropped, 0);
  CHECK_EQ_INT(t->nanomalies, 0);
  CHECK(ev->sm_hz > 1.0e9 && ev->sm_hz < 2.1e9);
  int step = ag_evidence_find_region(ev, "overhead_compute/work/step");
  int work = ag_evidence_find_region(ev, "overhead_compute/work");
  CHECK(step >= 0 && work >= 0);
  /* brute force from the raw records: per warp, work's record (taken at
   * its begin), then 64 step records with iterations 0..63; durations are
   * end - begin (mod 2^32) */
  static double dur[1024 * 64];
  uint64_t n = 0;
  int order_ok = 1;
  for (uint32_t w = 0; w < L->warps; w++) {
    const ag_ev_record *r = L->records + L->first[w];
    CHECK_EQ_U64(L->first[w + 1] - L->first[w], 65);
    order_ok &= ev->sites[r[0].site].region == work && ag_ev_record_ended(&r[0]);
    for (uint32_t i = 0; i < 64; i++) {
      const ag_ev_record *q = &r[i + 1];
      order_ok &= ev->sites[q->site].region == step && ag_ev_record_iter(q) == i &&
                  ag_ev_record_ended(q);
      if (n < sizeof dur / sizeof dur[0])
        dur[n] = (double)(uint32_t)(q->end - q->begin);
      n++;
    }
  }
  CHECK(order_ok);
  CHECK_EQ_U64(n, sizeof dur / sizeof dur[0]);
  ag_dstats want = brute_stats(dur, n);
  ag_region_stats *rs = NULL;
  int nrs = 0;
  CHECK_EQ_INT(ag_trace_stats(t, NULL, NULL, 0, &rs, &nrs), 0);
  const ag_region_stats *s = find(rs, nrs, ev, "overhead_compute/work/step");
  if (s) {
    CHECK(tu_dstats_match(&s->cycles, &want, 0.5, 1));
    /* the same comparison rejects every deliberately wrong reference (one
     * field off by a cycle), so it can fail */
    CHECK_EQ_INT(tu_dstats_wrong_accepted(&s->cycles, &want, 0.5), 0);
    /* the compute loop: 64 dependent FMAs per occurrence */
    CHECK(s->cycles.mean > 64 * 4 && s->cycles.mean < 64 * 100);
    /* one SM row per SM the launch ran on, counts adding up */
    uint64_t c = 0;
    for (int k = 0; k < s->nsm; k++)
      c += s->by_sm[k].ns.count;
    CHECK_EQ_U64(c, n);
  }
  /* nesting: every step occurrence lies inside its warp's work occurrence */
  const ag_occ *wk = NULL;
  int inside = 1;
  for (size_t i = 0; i < t->nocc; i++) {
    const ag_occ *o = &t->occ[i];
    if (o->region == work)
      wk = o;
    else if (o->region == step) {
      inside &= wk && wk->cta == o->cta && wk->warp == o->warp && o->start >= wk->start &&
                o->end <= wk->end && o->depth == 2;
    }
  }
  CHECK(inside);
  /* timeline: valid JSON, one event per occurrence */
  ag_str ct = AG_STR_INIT;
  CHECK_EQ_INT(ag_report_chrome_trace(t, NULL, &ct), 0);
  json_t *j = json_loads(ag_str_cstr(&ct), 0, NULL);
  CHECK(j != NULL);
  size_t xs = 0, i;
  json_t *e;
  json_array_foreach(json_object_get(j, "traceEvents"), i, e) xs +=
      !strcmp(json_string_value(json_object_get(e, "ph")), "X");
  CHECK_EQ_U64(xs, t->nocc);
  json_decref(j);
  /* more events than the limit: whole warp tracks, every k-th slot, and the
   * file says so (docs/tracing.md, "Launches") */
  ag_str_clear(&ct);
  ag_timeline_info ti;
  uint64_t lim = t->nocc / 3;
  CHECK_EQ_INT(ag_report_chrome_trace_ex(t, NULL, lim, &ct, &ti), 0);
  CHECK_EQ_U64(ti.events, t->nocc);
  CHECK((uint64_t)ti.every_nth >= (t->nocc + lim - 1) / lim);
  CHECK(ti.written <= lim && ti.written > 0);
  j = json_loads(ag_str_cstr(&ct), 0, NULL);
  CHECK(j != NULL);
  xs = 0;
  int bad_slot = 0;
  json_array_foreach(json_object_get(j, "traceEvents"), i, e) {
    if (strcmp(json_string_value(json_object_get(e, "ph")), "X"))
      continue;
    xs++;
    bad_slot |= (json_integer_value(json_object_get(e, "tid")) & 0xffffffff) % ti.every_nth != 0;
  }
  CHECK_EQ_U64(xs, ti.written);
  CHECK(!bad_slot);
  CHECK_CONTAINS(json_string_value(json_object_get(json_object_get(j, "metadata"),
                                                   "argus-sampled")),
                 "narrow with --scope");
  json_decref(j);
  /* within the limit: everything, no note */
  ag_str_clear(&ct);
  CHECK_EQ_INT(ag_report_chrome_trace_ex(t, NULL, t->nocc, &ct, &ti), 0);
  CHECK_EQ_U64(ti.written, t->nocc);
  CHECK(strstr(ag_str_cstr(&ct), "argus-sampled") == NULL);
  ag_str_release(&ct);
  ag_region_stats_free(rs, nrs);
  ag_trace_free(t);
  ag_evidence_free(ev);
}

TEST(gemm_roles_and_counts) {
  ag_evidence *ev = load("gemm_tma.agev");
  ag_trace *t = NULL;
  if (!ev || ag_trace_decode(ev, &t)) {
    CHECK(0);
    return;
  }
  CHECK_EQ_INT(t->nanomalies, 0);
  ag_region_stats *rs = NULL;
  int n = 0;
  CHECK_EQ_INT(ag_trace_stats(t, NULL, NULL, 0, &rs, &n), 0);
  const ag_region_stats *ml = find(rs, n, ev, "gemm_tma/mainloop");
  const ag_region_stats *ld = find(rs, n, ev, "gemm_tma/mainloop/loads");
  const ag_region_stats *mma = find(rs, n, ev, "gemm_tma/mainloop/mma");
  const ag_region_stats *epi = find(rs, n, ev, "gemm_tma/epilogue");
  if (ml && ld && mma && epi) {
    CHECK_EQ_U64(ml->cycles.count, 128 * 5);
    CHECK_EQ_U64(ld->cycles.count, 128 * 16);
    CHECK_EQ_U64(mma->cycles.count, 128 * 4 * 16);
    CHECK_EQ_U64(epi->cycles.count, 128 * 4);
    /* roles: loads are the producer's, mma and the epilogue the consumers' */
    CHECK_EQ_INT(ld->nrole, 1);
    CHECK_EQ_STR(ev->roles[ld->by_role[0].key], "producer");
    CHECK_EQ_INT(mma->nrole, 1);
    CHECK_EQ_STR(ev->roles[mma->by_role[0].key], "consumer");
    CHECK_EQ_INT(ml->nrole, 2);
  }
  /* per scope: the consumers of CTA 0 did 4 x 16 mma occurrences, iterations
   * 0..15 each */
  ag_scope sc;
  ag_diags d;
  ag_diags_init(&d);
  CHECK_EQ_INT(ag_scope_parse("cta=0,role=consumer,iter=0:16", &sc, &d), 0);
  ag_region_stats *r2 = NULL;
  int n2 = 0;
  CHECK_EQ_INT(ag_trace_stats(t, &sc, NULL, 0, &r2, &n2), 0);
  CHECK_EQ_INT(n2, 1);
  if (n2 == 1)
    CHECK_EQ_U64(r2[0].cycles.count, 4 * 16);
  ag_region_stats_free(r2, n2);
  ag_diags_release(&d);
  ag_region_stats_free(rs, n);
  ag_trace_free(t);
  ag_evidence_free(ev);
}

TEST(recorded_files_damaged) {
  char p[1024];
  const char *src = getenv("ARGUS_SOURCE_DIR");
  snprintf(p, sizeof p, "%s/tests/data/evidence/gemm_tma.agev", src ? src : ".");
  char *data = NULL;
  size_t len = 0;
  CHECK_EQ_INT(ag_file_read(p, &data, &len), 0);
  if (!data)
    return;
  size_t cuts[] = {len - 1, len / 3, 40};
  for (size_t k = 0; k < 3; k++) {
    ag_diags d;
    ag_diags_init(&d);
    ag_evidence *ev = NULL;
    CHECK_EQ_INT(ag_evidence_load_mem(data, cuts[k], "cut.agev", &d, &ev), AG_ECORRUPT);
    ag_str s = AG_STR_INIT;
    ag_diags_format(&d, &s);
    CHECK_CONTAINS(ag_str_cstr(&s), "cut.agev: error: truncated");
    ag_str_release(&s);
    ag_diags_release(&d);
  }
  ag_free(data);
}

RUN_TESTS(T(overhead_structure_and_brute_force), T(gemm_roles_and_counts),
          T(recorded_files_damaged))
