/*
 * test_async_synth.c — async_latency synthesis against brute force. The
 * probe tables are the real ones of examples/tma_probe (the traced variant
 * with timed waits, and a probe variant per instance); the records are
 * simulated with the host runtime's own writer (src/collect/evwrite.c):
 * 4 CTAs x 8 warps, two launches, warp 0 the producer (a `loads` occurrence
 * per iteration), warps 4-7 the consumers (an `mma` occurrence per iteration
 * with the full_bar wait and the wgmma wait nested in it), known random
 * durations. Each probe's evidence holds one record per CTA (warp 0, the
 * second launch). The synthesis must give, per (load, iteration): the mean
 * latency of the probe's records (derived), the mean exposed wait of the
 * consumers' full_bar waits at that iteration in the same launch (observed),
 * and their difference (derived) — equal to brute force. A deliberately
 * wrong join (the next iteration's waits, or the other launch's) must not
 * match; a probe of a site the discovery does not know is not joined.
 */
#include "check.h"

#include <math.h>
#include <unistd.h>

#include "../../src/collect/evwrite.h"
#include "argus/report_trace.h"
#include "argus/synth.h"
#include "argus/variant.h"
#include "../trace/trace_util.h"

#define HZ 1.8e9
#define CTAS 4
#define WPC 8
#define WARPS (CTAS * WPC)
#define ITERS 8
#define LAUNCHES 2

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* truth: exposed[launch][cta][consumer warp 0..3][iter], latency[load][iter][cta] (cycles) */
static uint32_t exposed[LAUNCHES][CTAS][4][ITERS];
static uint32_t latency[2][ITERS][CTAS];
/* globaltimer minus clock (ns) of each CTA's SM: 0 unless a test skews it */
static double skew_ns[CTAS];

static int site_of(json_t *probes, const char *qname) {
  json_t *regs = json_object_get(probes, "regions"), *sites = json_object_get(probes, "sites");
  int reg = -1;
  size_t i;
  json_t *x;
  json_array_foreach(regs, i, x) if (!strcmp(json_string_value(json_object_get(x, "qname")),
                                             qname)) reg = (int)i;
  json_array_foreach(sites, i, x) {
    const char *k = json_string_value(json_object_get(x, "kind"));
    if (!strcmp(k, "region") && json_integer_value(json_object_get(x, "region")) == reg)
      return (int)i;
  }
  return -1;
}

static int role_site(json_t *probes, int role) {
  size_t i;
  json_t *x;
  json_array_foreach(json_object_get(probes, "sites"), i, x) if (
      !strcmp(json_string_value(json_object_get(x, "kind")), "role") &&
      json_integer_value(json_object_get(x, "role")) == role) return (int)i;
  return -1;
}

static void write_ev(const char *path, const char *probes_json, int probe, int load, int iter) {
  ag_evw *w = NULL;
  char err[256];
  CHECK_EQ_INT(ag_evw_open(path, &w, err, sizeof err), 0);
  json_t *pt = json_loads(probes_json, 0, NULL);
  int s_loads = probe ? -1 : site_of(pt, "tma_probe/mainloop/loads");
  int s_mma = probe ? -1 : site_of(pt, "tma_probe/mainloop/mma");
  int s_w0 = probe ? -1 : site_of(pt, "tma_probe/mainloop/mma/" AG_EV_WAIT_PREFIX "0");
  int s_w7 = probe ? -1 : site_of(pt, "tma_probe/mainloop/mma/" AG_EV_WAIT_PREFIX "7");
  int s_prod = probe ? -1 : role_site(pt, 0), s_cons = probe ? -1 : role_site(pt, 1);
  if (!probe)
    CHECK(s_loads >= 0 && s_mma >= 0 && s_w0 >= 0 && s_w7 >= 0 && s_prod >= 0 && s_cons >= 0);
  const uint32_t cap = 64;
  static ag_ev_meta meta[WARPS];
  static ag_ev_record rec[WARPS * 64];
  for (int l = probe ? 1 : 0; l < LAUNCHES; l++) {
    memset(meta, 0, sizeof meta);
    memset(rec, 0, sizeof rec);
    for (int s = 0; s < WARPS; s++) {
      int cta = s / WPC, wp = s % WPC;
      uint64_t clk = ((uint64_t)(cta + 1) << 32) - 5000 + (uint64_t)l * 1000000;
      ag_ev_meta *m = &meta[s];
      m->clock_entry = clk;
      m->gtime_entry = (uint64_t)((double)clk / HZ * 1e9 + skew_ns[cta]);
      uint32_t n = 0;
      ag_ev_record *r = &rec[(size_t)s * cap];
#define PUT(b_, e_, site_, it_)                                                    \
  r[n++] = (ag_ev_record){(uint32_t)(b_), (uint32_t)(site_), (uint32_t)(e_),          \
                          (uint32_t)(it_) ^ AG_EV_ITER_BIAS}
      clk += 10;
      if (probe) {
        if (wp == 0) { /* the producer's record of the probed instance */
          clk += 100;
          uint64_t b = clk;
          clk += latency[load][iter][cta];
          PUT(b, clk, 0, (uint32_t)iter);
        }
      } else if (wp == 0) {
        PUT(clk, clk, s_prod, AG_EV_NO_ITER);
        for (int it = 0; it < ITERS; it++) {
          uint64_t b = clk + 5;
          clk += 200 + next() % 100;
          PUT(b, clk, s_loads, (uint32_t)it);
        }
      } else if (wp >= 4) {
        PUT(clk, clk, s_cons, AG_EV_NO_ITER);
        for (int it = 0; it < ITERS; it++) {
          uint64_t b = clk + 5;
          uint64_t wb = b + 20;
          uint64_t we = wb + exposed[l][cta][wp - 4][it];
          uint64_t gb = we + 300, ge = gb + 40 + next() % 30;
          clk = ge + 30;
          PUT(b, clk, s_mma, (uint32_t)it); /* records in begin order */
          PUT(wb, we, s_w0, AG_EV_NO_ITER);
          PUT(gb, ge, s_w7, AG_EV_NO_ITER);
        }
      }
      clk += 50;
      m->clock_exit = clk;
      m->gtime_exit = (uint64_t)((double)clk / HZ * 1e9 + skew_ns[cta]);
      m->smid = (uint32_t)cta;
      m->count = m->max_count = n;
      m->flags = AG_EV_EXITED;
      m->launch = (uint32_t)l;
    }
    ag_evw_launch L = {(uint32_t)l, "tma_probe", {CTAS, 1, 1}, {WPC * 32, 1, 1}, 0, WARPS, WPC,
                       cap, cap, meta, rec, 0, 0, 0, 0, 0};
    CHECK_EQ_INT(ag_evw_launch_add(w, &L, err, sizeof err), 0);
  }
  ag_jb j = {0};
  ag_jb_printf(&j, "\"device\":{\"name\":\"Simulated\"},\"clock\":{\"sm_hz\":%.1f},\"probes\":%s",
               HZ, probes_json);
  CHECK_EQ_INT(ag_evw_close(w, j.p, LAUNCHES, err, sizeof err), 0);
  ag_jb_release(&j);
  json_decref(pt);
}

static ag_evidence *load(const char *path) { return tu_load_evidence(path); }

TEST(synthesis_matches_brute_force) {
  size_t len = 0;
  char *ptx = tu_read_build_file("tests/data/ptx/tma_probe.ptx", &len);
  CHECK(ptx != NULL);
  if (!ptx)
    return;
  ag_diags d;
  ag_diags_init(&d);
  ag_ptx_module *m = NULL;
  ag_ptx_regions *r = NULL;
  CHECK_EQ_INT(ag_ptx_parse(ptx, len, "tma_probe", &d, &m), 0);
  CHECK_EQ_INT(ag_ptx_discover(m, &d, &r), 0);
  json_t *disc = ag_ptx_regions_to_json(m, r);
  const char *loads[2] = {NULL, NULL};
  int nl = 0;
  for (int i = 0; r && i < r->nsites; i++)
    if (r->sites[i].kind == AG_PTX_SITE_TMA_LOAD && nl < 2)
      loads[nl++] = r->sites[i].op_id;
  CHECK_EQ_INT(nl, 2);
  const char *full_wait = "";
  for (int i = 0; r && i < r->nsites; i++)
    if (r->sites[i].kind == AG_PTX_SITE_MBAR_WAIT && r->sites[i].bar.sym &&
        !strcmp(r->sites[i].bar.sym, "full_bar"))
      full_wait = r->sites[i].op_id;
  for (int l = 0; l < LAUNCHES; l++)
    for (int c = 0; c < CTAS; c++)
      for (int w = 0; w < 4; w++)
        for (int i = 0; i < ITERS; i++)
          /* iteration 0: the consumers wait from the start for the first
           * loads (exposed > latency, as on the H200): a negative hidden part */
          exposed[l][c][w][i] = 50 + (uint32_t)(next() % 900) + (i == 0 ? 2000 : 0);
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < ITERS; i++)
      for (int c = 0; c < CTAS; c++)
        latency[k][i][c] = 400 + (uint32_t)(next() % 500);
  /* the reference: the traced variant with timed waits */
  ag_variant_opts tr = {AG_VARIANT_TRACED, NULL, 0, 0};
  ag_variant_async wa = {1, NULL, 0, 0};
  ag_variant *v = NULL;
  CHECK_EQ_INT(ag_variant_make_ex(ptx, len, "tma_probe", &tr, &wa, &d, &v), 0);
  char path[256];
  snprintf(path, sizeof path, "/tmp/argus-async-%ld-ref.agev", (long)getpid());
  char *pj = v ? json_dumps(v->probes, JSON_COMPACT) : NULL;
  if (pj)
    write_ev(path, pj, 0, 0, 0);
  free(pj);
  ag_variant_free(v);
  ag_evidence *ref = load(path);
  CHECK(ref != NULL);
  unlink(path);
  /* the counting run: per begin marker of an iterated region, the warps that
   * began it at each iteration over both launches (loads: warp 0 of each
   * CTA; mma: the 4 consumer warps); the waits carry no iteration. The
   * markers' lines are discovery's: the loads' occurrence comes from the
   * `loads` marker the count names. */
  json_t *counts = NULL;
  CHECK_EQ_INT(ref ? ag_async_count(ref, &counts) : -1, 0);
  CHECK(json_is_true(json_object_get(counts, "complete")));
  CHECK_EQ_INT((int)json_integer_value(json_object_get(counts, "launches")), LAUNCHES);
  CHECK_EQ_U64(json_array_size(json_object_get(counts, "markers")), 2);
  json_int_t load_line = -1;
  for (size_t mi = 0; mi < json_array_size(json_object_get(counts, "markers")); mi++) {
    json_t *mk = json_array_get(json_object_get(counts, "markers"), mi);
    const char *rq = json_string_value(json_object_get(mk, "region"));
    int is_loads = rq && !strcmp(rq, "tma_probe/mainloop/loads");
    CHECK(is_loads || (rq && !strcmp(rq, "tma_probe/mainloop/mma")));
    if (is_loads)
      load_line = json_integer_value(json_object_get(mk, "line"));
    json_t *its = json_object_get(mk, "iterations");
    CHECK_EQ_U64(json_array_size(its), ITERS);
    for (int it = 0; it < ITERS; it++) {
      CHECK_EQ_INT((int)json_integer_value(json_array_get(json_array_get(its, (size_t)it), 0)), it);
      CHECK_EQ_INT((int)json_integer_value(json_array_get(json_array_get(its, (size_t)it), 1)),
                   (is_loads ? 1 : 4) * CTAS * LAUNCHES);
    }
  }
  for (int i = 0; r && i < r->nsites; i++)
    if (r->sites[i].kind == AG_PTX_SITE_TMA_LOAD)
      CHECK_EQ_INT(r->sites[i].iter_line, (int)load_line);
  json_decref(counts);
  /* the probes */
  ag_evidence *pr[2 * ITERS];
  int np = 0;
  ag_variant_opts po = {AG_VARIANT_PROBE, NULL, 0, 0};
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < ITERS; i++) {
      ag_variant_async a = {0, loads[k], (uint32_t)i, 0};
      CHECK_EQ_INT(ag_variant_make_ex(ptx, len, "tma_probe", &po, &a, &d, &v), 0);
      if (!v)
        continue;
      pj = json_dumps(v->probes, JSON_COMPACT);
      snprintf(path, sizeof path, "/tmp/argus-async-%ld-p%d.agev", (long)getpid(), np);
      write_ev(path, pj, 1, k, i);
      free(pj);
      ag_variant_free(v);
      if ((pr[np] = load(path)))
        np++;
      unlink(path);
    }
  CHECK_EQ_INT(np, 16);
  json_t *out = NULL;
  CHECK_EQ_INT(ag_async_synth(disc, ref, (const ag_evidence *const *)pr, np, NULL, &out), 0);
  json_t *insts = json_object_get(out, "instances");
  CHECK_EQ_U64(json_array_size(insts), 16);
  int checked = 0, wrong_caught = 0, negative = 0;
  size_t i;
  json_t *x;
  /* the brute-force figures per instance, for the report's flat values */
  json_t *want = json_object(), *want_a = json_object(); /* A's instances by exposed stat */
  json_array_foreach(insts, i, x) {
    char st[96];
    snprintf(st, sizeof st, "exposed[%s@%lld]", json_string_value(json_object_get(x, "op_id")),
             (long long)json_integer_value(json_object_get(x, "occurrence")));
    json_object_set(want_a, st, x);
  }
  json_array_foreach(insts, i, x) {
    const char *op = json_string_value(json_object_get(x, "op_id"));
    int k = !strcmp(op, loads[0]) ? 0 : 1;
    int it = (int)json_integer_value(json_object_get(x, "occurrence"));
    /* brute force: the probe's records; the consumers' full_bar waits at
     * this iteration in the probe's launch (1) */
    double lat = 0, exp = 0, exp_next = 0, exp_other_launch = 0;
    for (int c = 0; c < CTAS; c++)
      lat += latency[k][it][c] / HZ * 1e9 / CTAS;
    for (int c = 0; c < CTAS; c++)
      for (int w = 0; w < 4; w++) {
        exp += exposed[1][c][w][it] / HZ * 1e9 / (CTAS * 4);
        exp_next += exposed[1][c][w][(it + 1) % ITERS] / HZ * 1e9 / (CTAS * 4);
        exp_other_launch += exposed[0][c][w][it] / HZ * 1e9 / (CTAS * 4);
      }
    json_t *L = json_object_get(x, "latency"), *E = json_object_get(x, "exposed");
    /* A and B complete on one full_bar phase: the consumers' wait is one
     * instance, reported by A (naming both), never twice */
    if (k == 1) {
      const json_t *sh = json_object_get(x, "exposed_shared");
      char st[96];
      snprintf(st, sizeof st, "exposed[%s@%d]", loads[0], it);
      CHECK(E == NULL);
      CHECK_EQ_STR(json_string_value(json_object_get(sh, "stat")), st);
      CHECK_EQ_U64(json_array_size(json_object_get(sh, "covers")), 2);
      E = json_object_get(json_object_get(want_a, st), "exposed");
    } else {
      CHECK_EQ_U64(json_array_size(json_object_get(E, "covers")), 2);
    }
    double gl = json_number_value(json_object_get(L, "mean"));
    double ge = json_number_value(json_object_get(E, "mean"));
    double gh = json_number_value(json_object_get(json_object_get(x, "hidden"), "mean"));
    CHECK(fabs(gl - lat) < 1e-6 * lat);
    CHECK(fabs(ge - exp) < 1e-6 * exp);
    CHECK(fabs(gh - (lat - exp)) < 1e-6 * lat);
    char key[96];
    static const char *const what[] = {"latency", "exposed", "hidden"};
    double fig[3] = {lat, exp, lat - exp};
    for (int q = 0; q < 3; q++) {
      if (q == 1 && k == 1)
        continue; /* B's wait is A's */
      snprintf(key, sizeof key, "%s[%s@%d]", what[q], op, it);
      json_object_set_new(want, key, json_real(fig[q]));
    }
    /* a negative hidden part is flagged with the reason; a positive one is not */
    const char *hf = json_string_value(json_object_get(json_object_get(x, "hidden"), "flag"));
    CHECK_EQ_INT(hf != NULL, lat - exp < 0);
    if (hf)
      CHECK_CONTAINS(hf, "negative: the exposed wait exceeds the latency");
    negative += lat - exp < 0;
    CHECK_EQ_INT(json_integer_value(json_object_get(L, "count")), CTAS);
    CHECK_EQ_INT(json_integer_value(json_object_get(E, "count")), CTAS * 4);
    CHECK_EQ_STR(json_string_value(json_object_get(L, "qual")), "derived");
    CHECK_EQ_STR(json_string_value(json_object_get(E, "qual")), "observed");
    /* the wait that completes it: the consumer's wait on full_bar */
    CHECK_EQ_U64(json_array_size(json_object_get(x, "waits")), 1);
    CHECK_EQ_STR(json_string_value(json_array_get(json_object_get(x, "waits"), 0)), full_wait);
    /* deliberately wrong joins give other numbers, which the check sees */
    wrong_caught += fabs(ge - exp_next) > 1e-6 * exp && fabs(ge - exp_other_launch) > 1e-6 * exp;
    checked++;
  }
  CHECK_EQ_INT(checked, 16);
  CHECK_EQ_INT(wrong_caught, 16);
  /* the flat values: 16 each of latency (derived) and hidden (derived), 8 of
   * exposed (observed: one per phase, covering both loads) */
  int nv[3] = {0, 0, 0};
  json_array_foreach(json_object_get(out, "values"), i, x) {
    const char *stat = json_string_value(json_object_get(x, "stat"));
    const char *q = json_string_value(json_object_get(x, "qual"));
    /* each flat value is the brute-force figure: hidden = latency - exposed */
    json_t *w = json_object_get(want, stat);
    double got = json_number_value(json_object_get(x, "value"));
    CHECK(w != NULL);
    if (w && fabs(got - json_number_value(w)) > 1e-6 * 1000) {
      fprintf(stderr, "%s: %f, brute force %f\n", stat, got, json_number_value(w));
      CHECK(0);
    }
    nv[0] += !strncmp(stat, "latency[", 8) && !strcmp(q, "derived");
    nv[1] += !strncmp(stat, "exposed[", 8) && !strcmp(q, "observed");
    if (!strncmp(stat, "exposed[", 8)) /* names the loads its one wait covers */
      CHECK_EQ_U64(json_array_size(json_object_get(x, "covers")), 2);
    nv[2] += !strncmp(stat, "hidden[", 7) && !strcmp(q, "derived");
    CHECK_EQ_STR(json_string_value(json_object_get(x, "region")), "tma_probe/mainloop/loads");
  }
  CHECK(nv[0] == 16 && nv[1] == 8 && nv[2] == 16); /* one exposed wait per phase */
  json_decref(want);
  json_decref(want_a);
  /* the flat hidden values carry the flag too (the report keeps them apart) */
  int flagged = 0;
  json_array_foreach(json_object_get(out, "values"), i, x) flagged +=
      json_object_get(x, "flag") != NULL && json_number_value(json_object_get(x, "value")) < 0;
  CHECK(negative >= 2); /* both loads at iteration 0 */
  CHECK_EQ_INT(flagged, negative);
  json_decref(out);
  /* a scope: iterations 2 and 3 only */
  ag_scope sc;
  CHECK_EQ_INT(ag_scope_parse("iter=2:4", &sc, &d), 0);
  CHECK_EQ_INT(ag_async_synth(disc, ref, (const ag_evidence *const *)pr, np, &sc, &out), 0);
  CHECK_EQ_U64(json_array_size(json_object_get(out, "instances")), 4);
  json_decref(out);
  /* without a reference: latencies only, each says why exposed is missing */
  CHECK_EQ_INT(ag_async_synth(disc, NULL, (const ag_evidence *const *)pr, np, NULL, &out), 0);
  x = json_array_get(json_object_get(out, "instances"), 0);
  CHECK(json_object_get(x, "latency") != NULL && json_object_get(x, "exposed") == NULL);
  CHECK_CONTAINS(json_string_value(json_object_get(x, "note")), "no reference run");
  json_decref(out);
  /* another program's discovery: the probes are not joined */
  json_t *other = json_pack("{s:[],s:[]}", "regions", "sites");
  CHECK_EQ_INT(ag_async_synth(other, ref, (const ag_evidence *const *)pr, np, NULL, &out), 0);
  x = json_array_get(json_object_get(out, "instances"), 0);
  CHECK_CONTAINS(json_string_value(json_object_get(x, "note")), "not joined");
  CHECK_EQ_U64(json_array_size(json_object_get(out, "values")), 0);
  json_decref(out);
  json_decref(other);
  /* a nested region without its own iteration (the timed wait inside
   * 'mma[it]') inherits the enclosing iteration: an iteration scope keeps
   * it (before: count 0) */
  {
    ag_trace *rt = NULL;
    CHECK_EQ_INT(ag_trace_decode(ref, &rt), 0);
    int w0 = -1;
    for (int g = 0; rt && g < ref->nregions; g++)
      if (!strcmp(ref->regions[g].qname, "tma_probe/mainloop/mma/" AG_EV_WAIT_PREFIX "0"))
        w0 = g;
    ag_scope s24;
    CHECK_EQ_INT(ag_scope_parse("iter=2:4", &s24, &d), 0);
    ag_region_stats *rs = NULL;
    int nrs = 0;
    CHECK(w0 >= 0);
    if (rt && w0 >= 0 && ag_trace_stats(rt, &s24, &w0, 1, &rs, &nrs) == 0) {
      CHECK_EQ_INT(nrs, 1);
      CHECK_EQ_U64(nrs ? rs[0].cycles.count : 0, (uint64_t)LAUNCHES * CTAS * 4 * 2);
      ag_region_stats_free(rs, nrs);
    }
    ag_trace_free(rt);
  }
  /* the waits untimed (discovery says why): no exposed value, and every
   * instance is a missing entry with the reason (the report never drops it) */
  {
    json_t *d2 = json_deep_copy(disc);
    json_t *sx;
    size_t si;
    json_array_foreach(json_object_get(d2, "sites"), si, sx) {
      const char *op = json_string_value(json_object_get(sx, "op_id"));
      if (!strcmp(op, full_wait)) {
        json_object_set_new(sx, "op_id", json_string("ffffffffffffffff:99"));
        json_object_set_new(sx, "wait", json_pack("{s:b,s:s}", "timed", 0, "why",
                                                  "the loop does more than wait"));
      }
      json_t *db = json_object_get(sx, "done_by"), *e;
      size_t di;
      json_array_foreach(db, di, e) if (!strcmp(json_string_value(e), full_wait))
          json_array_set_new(db, di, json_string("ffffffffffffffff:99"));
    }
    CHECK_EQ_INT(ag_async_synth(d2, ref, (const ag_evidence *const *)pr, np, NULL, &out), 0);
    size_t nm = 0, ne = 0;
    json_array_foreach(json_object_get(out, "missing"), i, x) {
      nm++;
      CHECK_CONTAINS(json_string_value(json_object_get(x, "why")),
                     "the reference did not time the waits of this site; "
                     "ffffffffffffffff:99: the loop does more than wait");
    }
    json_array_foreach(json_object_get(out, "values"), i, x) ne +=
        strncmp(json_string_value(json_object_get(x, "stat")), "latency[", 8) != 0;
    CHECK_EQ_U64(nm, 16);
    CHECK_EQ_U64(ne, 0);
    json_decref(out);
    json_decref(d2);
  }
  /* instances that did not run (no probe record in the scope): nothing of
   * them is a value, not even the consumer's wait at that iteration */
  {
    ag_scope none;
    CHECK_EQ_INT(ag_scope_parse("cta=99", &none, &d), 0);
    CHECK_EQ_INT(ag_async_synth(disc, ref, (const ag_evidence *const *)pr, np, &none, &out), 0);
    CHECK_EQ_U64(json_array_size(json_object_get(out, "values")), 0);
    CHECK_EQ_U64(json_array_size(json_object_get(out, "missing")), 16);
    CHECK_CONTAINS(json_string_value(json_object_get(json_array_get(json_object_get(out, "missing"),
                                                                    0), "why")),
                   "no warp ran the probed instance");
    json_decref(out);
  }
  /* a wgmma group of four with one wait: per-group exposed and hidden
   * (against the last op's probe), latency per op, the other ops' exposed
   * and hidden said as not separable (a warning); no negative per-op hidden */
  {
    const char *wg[4];
    int nw = 0, last_line = -1;
    const char *last = NULL;
    for (int q = 0; r && q < r->nsites && nw < 4; q++)
      if (r->sites[q].kind == AG_PTX_SITE_WGMMA) {
        wg[nw++] = r->sites[q].op_id;
        if (r->sites[q].line > last_line) {
          last_line = r->sites[q].line;
          last = r->sites[q].op_id;
        }
      }
    CHECK_EQ_INT(nw, 4);
    ag_evidence *gp[4];
    int ng = 0;
    for (int q = 0; q < nw; q++) {
      ag_variant_async a = {0, wg[q], 3, 0};
      CHECK_EQ_INT(ag_variant_make_ex(ptx, len, "tma_probe", &po, &a, &d, &v), 0);
      if (!v)
        continue;
      pj = json_dumps(v->probes, JSON_COMPACT);
      snprintf(path, sizeof path, "/tmp/argus-async-%ld-g%d.agev", (long)getpid(), q);
      write_ev(path, pj, 1, 0, 3);
      free(pj);
      ag_variant_free(v);
      if ((gp[ng] = load(path)))
        ng++;
      unlink(path);
    }
    CHECK_EQ_INT(ng, 4);
    CHECK_EQ_INT(ag_async_synth(disc, ref, (const ag_evidence *const *)gp, ng, NULL, &out), 0);
    int nlat = 0, ngroup = 0, nhid = 0, nsep = 0;
    json_array_foreach(json_object_get(out, "values"), i, x) {
      const char *stat = json_string_value(json_object_get(x, "stat"));
      nlat += !strncmp(stat, "latency[", 8);
      nhid += !strncmp(stat, "hidden[", 7) || !strncmp(stat, "exposed[", 8);
      if (!strncmp(stat, "group_", 6)) {
        ngroup++;
        CHECK_CONTAINS(stat, last ? last : "?");
      }
      CHECK(json_object_get(x, "dist") != NULL || !strncmp(stat, "group_hidden", 12));
    }
    json_array_foreach(json_object_get(out, "warnings"), i, x) nsep +=
        strstr(json_string_value(x), "not separable per op") != NULL;
    /* said among the warnings, not missing: the group has the value */
    CHECK_EQ_INT((int)json_array_size(json_object_get(out, "missing")), 0);
    CHECK_EQ_INT(nlat, 3);
    CHECK_EQ_INT(ngroup, 3);
    CHECK_EQ_INT(nhid, 0);
    CHECK_EQ_INT(nsep, 3);
    json_decref(out);
    for (int q = 0; q < ng; q++)
      ag_evidence_free(gp[q]);
  }
  /* no site table at all */
  json_t *bad = json_object();
  CHECK_EQ_INT(ag_async_synth(bad, ref, NULL, 0, NULL, &out), AG_EINVAL);
  json_decref(bad);
  for (int k = 0; k < np; k++)
    ag_evidence_free(pr[k]);
  ag_evidence_free(ref);
  json_decref(disc);
  ag_ptx_module_free(m);
  ag_diags_release(&d);
  ag_free(ptx);
}

/* Cross-SM time alignment: each SM's %clock64 has its own origin; the
 * decoder maps it to globaltimer ns with the SM's mean anchor offset, so
 * an occurrence's place on the time line (t0_ns, and the timeline's "ts")
 * is its true globaltimer time after the launch's first warp entered. The
 * simulated SMs' clocks are 2^32 cycles apart and their globaltimer offsets
 * differ by microseconds; a sum of the anchors instead of their mean, or
 * one SM's offset for all, puts the occurrences elsewhere. */
TEST(timeline_aligns_sms) {
  size_t len = 0;
  char *ptx = tu_read_build_file("tests/data/ptx/tma_probe.ptx", &len);
  CHECK(ptx != NULL);
  if (!ptx)
    return;
  ag_diags d;
  ag_diags_init(&d);
  for (int c = 0; c < CTAS; c++)
    skew_ns[c] = 1e9 + 2500.0 * c * (c % 2 ? 1 : -1);
  ag_variant_opts tr = {AG_VARIANT_TRACED, NULL, 0, 0};
  ag_variant_async wa = {1, NULL, 0, 0};
  ag_variant *v = NULL;
  CHECK_EQ_INT(ag_variant_make_ex(ptx, len, "tma_probe", &tr, &wa, &d, &v), 0);
  char path[256];
  snprintf(path, sizeof path, "/tmp/argus-align-%ld.agev", (long)getpid());
  char *pj = v ? json_dumps(v->probes, JSON_COMPACT) : NULL;
  if (pj)
    write_ev(path, pj, 0, 0, 0);
  free(pj);
  ag_variant_free(v);
  memset(skew_ns, 0, sizeof skew_ns);
  ag_evidence *ev = load(path);
  unlink(path);
  ag_trace *t = NULL;
  CHECK(ev != NULL);
  if (ev)
    CHECK_EQ_INT(ag_trace_decode(ev, &t), 0);
  if (!t) {
    ag_evidence_free(ev);
    ag_free(ptx);
    ag_diags_release(&d);
    return;
  }
  /* the truth: globaltimer = clock / HZ + the SM's skew, by construction */
  const ag_ev_launch *L0 = &ev->launches[0];
  double t_first = INFINITY;
  for (uint32_t w = 0; w < L0->warps; w++)
    if ((double)L0->meta[w].gtime_entry < t_first)
      t_first = (double)L0->meta[w].gtime_entry;
  double skew[CTAS];
  for (int c = 0; c < CTAS; c++)
    skew[c] = 1e9 + 2500.0 * c * (c % 2 ? 1 : -1);
  ag_str ct = AG_STR_INIT;
  ag_scope sc;
  CHECK_EQ_INT(ag_scope_parse("launch=0", &sc, &d), 0);
  CHECK_EQ_INT(ag_report_chrome_trace(t, &sc, &ct), 0);
  json_t *tl = json_loads(ag_str_cstr(&ct), 0, NULL);
  json_t *evs = json_object_get(tl, "traceEvents");
  size_t k = 0, checked = 0, sms = 0;
  uint32_t seen_sm = 0;
  for (size_t i = 0; i < t->nocc; i++) {
    const ag_occ *o = &t->occ[i];
    if (o->launch != 0)
      continue;
    double want = (double)o->start / HZ * 1e9 + skew[o->sm] - t_first;
    if (fabs(o->t0_ns - want) > 2.0) {
      fprintf(stderr, "sm %u occurrence at %.1f ns on the time line, truth %.1f ns\n", o->sm,
              o->t0_ns, want);
      CHECK(0);
    }
    /* the timeline's events are the launch's occurrences, in order */
    json_t *e = NULL;
    while ((e = json_array_get(evs, k)) && strcmp(json_string_value(json_object_get(e, "ph")), "X"))
      k++;
    CHECK(e != NULL);
    if (e) {
      double ts_ns = json_number_value(json_object_get(e, "ts")) * 1e3;
      CHECK_EQ_INT((int)json_integer_value(json_object_get(e, "pid")), (int)o->sm);
      if (fabs(ts_ns - want) > 2.0) {
        fprintf(stderr, "sm %u timeline ts %.1f ns, truth %.1f ns\n", o->sm, ts_ns, want);
        CHECK(0);
      }
      k++;
    }
    if (!(seen_sm >> o->sm & 1))
      sms++;
    seen_sm |= 1u << o->sm;
    checked++;
  }
  CHECK(checked > 100);
  CHECK_EQ_INT((int)sms, CTAS);
  json_decref(tl);
  ag_str_release(&ct);
  ag_trace_free(t);
  ag_evidence_free(ev);
  ag_free(ptx);
  ag_diags_release(&d);
}

RUN_TESTS(T(synthesis_matches_brute_force), T(timeline_aligns_sms))
