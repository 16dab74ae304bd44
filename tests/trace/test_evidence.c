/*
 * test_evidence.c — the evidence file, its reader, the decoder and the
 * statistics against a reference: a simulated kernel (launches x CTAs x
 * warps, a role, a region `outer` with `inner` occurrences nested inside,
 * random durations) is written with the host runtime's own writer
 * (src/collect/evwrite.c); the ground truth is the list of occurrences the
 * simulation made. Decoding must give back exactly those occurrences and
 * statistics equal to brute force; a deliberately wrong truth must not
 * match. Then every kind of damage to the file gets a clear error, and
 * nesting errors, full buffers and divergence become anomalies.
 */
#include "check.h"

#include <math.h>
#include <unistd.h>

#include "../../src/collect/evwrite.h"
#include "argus/report_trace.h"
#include "argus/synth.h"
#include "trace_util.h"

#define GRID 6
#define WPC 3
#define WARPS (GRID * WPC)
#define INNER 5

/* regions: 0 kern (root), 1 kern/outer, 2 kern/outer/inner
 * sites (record makers): 0 role producer, 1 begin of inner, 2 begin of outer */
static const char *probes_json =
    "{\"format\":\"argus-probes\",\"version\":1,"
    "\"regions\":[{\"index\":0,\"id\":\"0x1\",\"name\":\"kern\",\"qname\":\"kern\",\"parent\":-1,"
    "\"function\":\"kern\",\"root\":true},"
    "{\"index\":1,\"id\":\"0x2\",\"name\":\"outer\",\"qname\":\"kern/outer\",\"parent\":0,"
    "\"function\":\"kern\",\"root\":false},"
    "{\"index\":2,\"id\":\"0x3\",\"name\":\"inner\",\"qname\":\"kern/outer/inner\",\"parent\":1,"
    "\"function\":\"kern\",\"root\":false}],"
    "\"sites\":[{\"site\":0,\"kind\":\"role\",\"role\":0,\"line\":10},"
    "{\"site\":1,\"kind\":\"region\",\"region\":2,\"line\":13,\"iter\":true},"
    "{\"site\":2,\"kind\":\"region\",\"region\":1,\"line\":14,\"iter\":false}],"
    "\"roles\":[\"producer\"]}";

typedef struct truth_occ {
  int region;
  uint32_t launch, cta, warp, iter, sm;
  uint64_t start, end;
} truth_occ;

static truth_occ truth[4 * WARPS * (INNER + 2)];
static int ntruth;
static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

#define HZ 1.5e9

/* Simulates `nl` launches the way the probe records them: one record per
 * occurrence, taken when it begins (so in begin order: the role, outer,
 * then the inner ones) and holding both clocks, 32-bit, each warp's clock
 * crossing a 2^32 boundary. cap = records a warp keeps. bad_nesting: warp
 * 1's outer begins inside inner 2 (crossing); divergent: warp 2's lanes
 * made more records than lane 0; ambiguous: warp 3's exit anchor is 2^32
 * cycles later than its records allow; unended: warp 4's last inner never
 * ends (its record keeps a zero second half). */
static char path[256];
static int long_lived; /* every warp idles 3 s after entry (see below) */
static int unended;
typedef struct sim_rec {
  uint64_t b, e;
  uint32_t site, iter;
  int region; /* -1: a role record */
} sim_rec;
static int cmp_sim(const void *a, const void *b) {
  const sim_rec *x = a, *y = b;
  return x->b != y->b ? (x->b < y->b ? -1 : 1) : x->region - y->region; /* outer first */
}
static void simulate(int nl, uint32_t cap, int bad_nesting, int divergent, int ambiguous) {
  ntruth = 0;
  snprintf(path, sizeof path, "/tmp/argus-test-ev-%ld.agev", (long)getpid());
  ag_evw *w = NULL;
  char err[256];
  CHECK_EQ_INT(ag_evw_open(path, &w, err, sizeof err), 0);
  static ag_ev_meta meta[WARPS];
  static ag_ev_record rec[WARPS * 64];
  for (int l = 0; l < nl; l++) {
    memset(meta, 0, sizeof meta);
    memset(rec, 0xa5, sizeof rec);
    for (int s = 0; s < WARPS; s++) {
      uint32_t sm = (uint32_t)(s / WPC) % 4, cta = (uint32_t)(s / WPC), wp = (uint32_t)(s % WPC);
      uint64_t clk = ((uint64_t)(sm + 1) << 32) - 3000 + (uint64_t)l * 5000000 + next() % 1000;
      uint64_t gt = 7000000000ull + (uint64_t)l * 4000000 + (uint64_t)((double)(clk % 1000) / HZ * 1e9);
      ag_ev_meta *m = &meta[s];
      m->clock_entry = clk;
      m->gtime_entry = gt;
      sim_rec sr[INNER + 2];
      uint32_t n = 0;
      clk += 10 + (long_lived ? (uint64_t)(3.0 * HZ) : 0);
      sr[n++] = (sim_rec){clk, clk, 0, AG_EV_NO_ITER, -1};
      clk += 20;
      uint64_t ostart = clk, in2 = 0;
      for (uint32_t i = 0; i < INNER; i++) {
        clk += 5 + next() % 50;
        uint64_t st = clk;
        clk += 100 + next() % 1000;
        sr[n++] = (sim_rec){st, clk, 1, i, 2};
        if (i == 2)
          in2 = st;
      }
      clk += 30;
      if (bad_nesting && s == 1)
        ostart = in2 + 1;
      sr[n++] = (sim_rec){ostart, clk, 2, AG_EV_NO_ITER, 1};
      qsort(sr, n, sizeof *sr, cmp_sim);
      for (uint32_t j = 0; j < n && j < cap; j++) {
        int open = unended && s == 4 && sr[j].region == 2 && sr[j].iter == INNER - 1;
        rec[(size_t)s * cap + j] = (ag_ev_record){
            (uint32_t)sr[j].b, sr[j].site, open ? 0 : (uint32_t)sr[j].e,
            open ? 0 : sr[j].iter ^ AG_EV_ITER_BIAS};
        if (sr[j].region >= 0 && !open)
          truth[ntruth++] = (truth_occ){sr[j].region, (uint32_t)l, cta, wp, sr[j].iter, sm,
                                        sr[j].b, sr[j].e};
      }
      clk += 40;
      m->clock_exit = clk + (ambiguous && s == 3 ? (1ull << 32) : 0);
      m->gtime_exit = m->gtime_entry + (uint64_t)((double)(clk - m->clock_entry) / HZ * 1e9);
      if (long_lived) /* what the probe writes: entry rebuilt from its low 32 bits */
        m->clock_entry = m->clock_exit - (uint32_t)(m->clock_exit - m->clock_entry);
      m->smid = sm;
      m->count = n;
      m->max_count = n + (divergent && s == 2 ? 3u : 0u);
      m->flags = AG_EV_EXITED;
      m->launch = (uint32_t)l;
      truth[ntruth++] = (truth_occ){0, (uint32_t)l, cta, wp, AG_EV_NO_ITER, sm, m->clock_entry,
                                    m->clock_exit};
    }
    ag_evw_launch L = {(uint32_t)l, "kern", {GRID, 1, 1}, {WPC * 32, 1, 1}, 0, WARPS, WPC, cap,
                       cap, meta, rec, 0, 0, 0, 0, 0};
    CHECK_EQ_INT(ag_evw_launch_add(w, &L, err, sizeof err), 0);
  }
  ag_jb j = {0};
  ag_jb_printf(&j, "\"device\":{\"name\":\"Simulated\"},\"clock\":{\"sm_hz\":%.1f},\"probes\":%s",
               HZ, probes_json);
  CHECK_EQ_INT(ag_evw_close(w, j.p, (uint32_t)nl + 2, err, sizeof err), 0);
  ag_jb_release(&j);
}

static int cmp_truth(const void *a, const void *b) {
  const truth_occ *x = a, *y = b;
  if (x->launch != y->launch) return x->launch < y->launch ? -1 : 1;
  if (x->cta != y->cta) return x->cta < y->cta ? -1 : 1;
  if (x->warp != y->warp) return x->warp < y->warp ? -1 : 1;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return x->region - y->region;
}

static ag_evidence *load_ok(void) {
  ag_evidence *ev = tu_load_evidence(path);
  CHECK(ev != NULL);
  return ev;
}

/* Loads the simulated file and decodes it; NULL (a failed check) if either
 * fails. */
static ag_trace *decode_ok(ag_evidence **ev) {
  ag_trace *t = NULL;
  *ev = load_ok();
  if (!*ev || ag_trace_decode(*ev, &t)) {
    CHECK(0);
    ag_evidence_free(*ev);
    *ev = NULL;
    return NULL;
  }
  return t;
}

/* Compares decoded occurrences to a truth list; returns mismatches. */
static int compare(const ag_trace *t, truth_occ *want, int nwant) {
  truth_occ *got = calloc(t->nocc + 1, sizeof *got);
  for (size_t i = 0; i < t->nocc; i++) {
    const ag_occ *o = &t->occ[i];
    got[i] = (truth_occ){o->region, o->launch, o->cta, o->warp, o->iter, o->sm, o->start, o->end};
  }
  qsort(got, t->nocc, sizeof *got, cmp_truth);
  qsort(want, (size_t)nwant, sizeof *want, cmp_truth);
  int bad = (int)t->nocc != nwant;
  for (int i = 0; !bad && i < nwant; i++)
    bad += memcmp(&got[i], &want[i], sizeof *got) != 0;
  free(got);
  return bad;
}

TEST(decode_gives_back_the_simulated_occurrences) {
  simulate(2, 64, 0, 0, 0);
  ag_evidence *ev = load_ok();
  if (!ev)
    return;
  ag_trace *t = NULL;
  CHECK_EQ_INT(ag_trace_decode(ev, &t), 0);
  CHECK_EQ_INT(ev->nlaunches, 2);
  CHECK_EQ_INT(ev->launches_total, 4);
  CHECK_EQ_INT(compare(t, truth, ntruth), 0);
  CHECK_EQ_INT(t->nanomalies, 0);
  /* roles: everything after the role record is "producer" */
  for (size_t i = 0; i < t->nocc; i++)
    if (t->occ[i].region != 0)
      CHECK_EQ_INT(t->occ[i].role, 0);
  /* depth: inner is 2 deep */
  for (size_t i = 0; i < t->nocc; i++)
    CHECK_EQ_INT(t->occ[i].depth, (uint32_t)t->occ[i].region);
  /* a deliberately wrong truth must not match */
  truth[0].end++;
  CHECK(compare(t, truth, ntruth) != 0);
  /* clocks: warps span ~5 us < 20 us, so the calibration is used */
  CHECK_EQ_STR(t->clocks[0].source, "calibration");
  CHECK(fabs(t->clocks[0].hz - HZ) < 1);
  ag_trace_free(t);
  ag_evidence_free(ev);
  unlink(path);
}

static void brute(int region, double *v, size_t *n) {
  *n = 0;
  for (int i = 0; i < ntruth; i++)
    if (truth[i].region == region)
      v[(*n)++] = (double)(truth[i].end - truth[i].start);
}

TEST(stats_equal_brute_force) {
  simulate(3, 64, 0, 0, 0);
  ag_evidence *ev = NULL;
  ag_trace *t = decode_ok(&ev);
  if (!t)
    return;
  ag_region_stats *rs = NULL;
  int n = 0;
  CHECK_EQ_INT(ag_trace_stats(t, NULL, NULL, 0, &rs, &n), 0);
  CHECK_EQ_INT(n, 3);
  static double v[4 * WARPS * (INNER + 2)];
  for (int k = 0; k < n; k++) {
    size_t m;
    brute(rs[k].region, v, &m);
    /* brute force: nearest rank by counting */
    ag_dstats want = {.count = m, .min = INFINITY};
    for (size_t i = 0; i < m; i++) {
      want.total += v[i];
      want.min = fmin(want.min, v[i]);
      want.max = fmax(want.max, v[i]);
    }
    want.mean = want.total / (double)m;
    for (size_t i = 0; i < m; i++) { /* smallest x with #(<= x) >= p*m */
      size_t le = 0;
      for (size_t j = 0; j < m; j++)
        le += v[j] <= v[i];
      if (le * 100 >= m * 50 && (want.p50 == 0 || v[i] < want.p50))
        want.p50 = v[i];
      if (le * 100 >= m * 95 && (want.p95 == 0 || v[i] < want.p95))
        want.p95 = v[i];
    }
    CHECK(tu_dstats_match(&rs[k].cycles, &want, 1e-6, 1));
    CHECK(fabs(rs[k].ns.mean - want.mean / HZ * 1e9) < 1e-6);
    /* deliberately wrong oracles (one field off by a cycle each): the same
     * comparison must reject every one, so it can fail */
    CHECK_EQ_INT(tu_dstats_wrong_accepted(&rs[k].cycles, &want, 1e-6), 0);
    /* by SM: 4 SMs, counts add up */
    uint64_t c = 0;
    for (int s = 0; s < rs[k].nsm; s++)
      c += rs[k].by_sm[s].ns.count;
    CHECK_EQ_U64(c, m);
    CHECK_EQ_INT(rs[k].nsm, 4);
  }
  /* scope: launch 1, SM 0..1, inner iterations 1..2 */
  ag_scope sc;
  ag_diags err;
  ag_diags_init(&err);
  CHECK_EQ_INT(ag_scope_parse("launch=1,sm=0:2,iter=1:3", &sc, &err), 0);
  ag_region_stats *rs2 = NULL;
  int n2 = 0;
  CHECK_EQ_INT(ag_trace_stats(t, &sc, NULL, 0, &rs2, &n2), 0);
  CHECK_EQ_INT(n2, 1); /* only inner has iterations */
  size_t want = 0;
  for (int i = 0; i < ntruth; i++)
    want += truth[i].region == 2 && truth[i].launch == 1 && truth[i].sm < 2 &&
            truth[i].iter >= 1 && truth[i].iter < 3;
  CHECK_EQ_U64(rs2[0].cycles.count, want);
  ag_region_stats_free(rs2, n2);
  /* role scope */
  CHECK_EQ_INT(ag_scope_parse("role=producer", &sc, &err), 0);
  CHECK_EQ_INT(ag_trace_stats(t, &sc, NULL, 0, &rs2, &n2), 0);
  CHECK_EQ_INT(n2, 2); /* the root has no role */
  ag_region_stats_free(rs2, n2);
  ag_diags_release(&err);
  ag_region_stats_free(rs, n);
  ag_trace_free(t);
  ag_evidence_free(ev);
  unlink(path);
}

TEST(scope_matching) {
  /* occurrences against scopes: ranges half-open, iteration and role
   * restrictions exclude occurrences without them */
  simulate(1, 64, 0, 0, 0);
  ag_evidence *ev = NULL;
  ag_trace *t = decode_ok(&ev);
  if (!t)
    return;
  ag_scope sc;
  ag_diags d;
  ag_diags_init(&d);
  CHECK_EQ_INT(ag_scope_parse("warp=1:3,cta=2", &sc, &d), 0);
  size_t in = 0, want = 0;
  for (size_t i = 0; i < t->nocc; i++) {
    in += (size_t)ag_scope_match(&sc, ev, &t->occ[i]);
    want += t->occ[i].cta == 2 && t->occ[i].warp >= 1 && t->occ[i].warp < 3;
  }
  CHECK_EQ_U64(in, want);
  CHECK(want > 0);
  CHECK_EQ_INT(ag_scope_parse("iter=0:100", &sc, &d), 0);
  for (size_t i = 0; i < t->nocc; i++)
    CHECK_EQ_INT(ag_scope_match(&sc, ev, &t->occ[i]), t->occ[i].region == 2);
  CHECK_EQ_INT(ag_scope_parse("role=consumer", &sc, &d), 0);
  for (size_t i = 0; i < t->nocc; i++)
    CHECK_EQ_INT(ag_scope_match(&sc, ev, &t->occ[i]), 0);
  ag_diags_release(&d);
  ag_trace_free(t);
  ag_evidence_free(ev);
  unlink(path);
}

/* 1 when the text report of t contains `what`. */
static int report_says(const ag_trace *t, const char *what) {
  ag_str txt = AG_STR_INIT;
  ag_region_stats *rs = NULL;
  int n = 0;
  ag_trace_stats(t, NULL, NULL, 0, &rs, &n);
  ag_report_trace_text(t, NULL, rs, n, &txt);
  int ok = strstr(ag_str_cstr(&txt), what) != NULL;
  if (!ok)
    fprintf(stderr, "'%s' not in the report:\n%s", what, ag_str_cstr(&txt));
  ag_str_release(&txt);
  ag_region_stats_free(rs, n);
  return ok;
}

TEST(full_buffer_reports_drops) {
  simulate(1, 4, 0, 0, 0); /* 7 records per warp: role, outer, inner x 5 */
  ag_evidence *ev = NULL;
  ag_trace *t = decode_ok(&ev);
  if (!t)
    return;
  CHECK_EQ_U64(t->dropped, (uint64_t)WARPS * 3);
  CHECK_EQ_U64(ev->launches[0].dropped, (uint64_t)WARPS * 3);
  CHECK_EQ_INT(compare(t, truth, ntruth), 0); /* what was kept decodes exactly */
  CHECK_CONTAINS(ag_str_cstr(&t->anomalies), "trace buffer full (4 records): 3 records were "
                                             "dropped; every occurrence that began after cycle");
  CHECK(report_says(t, "records dropped (buffers full)"));
  ag_trace_free(t);
  ag_evidence_free(ev);
  unlink(path);
}

TEST(nesting_divergence_and_ambiguity_are_anomalies) {
  simulate(1, 64, 1, 1, 1);
  ag_evidence *ev = NULL;
  ag_trace *t = decode_ok(&ev);
  if (!t)
    return;
  CHECK_EQ_U64(t->nesting_errors, 1);
  CHECK_CONTAINS(ag_str_cstr(&t->anomalies), "cta 0 warp 1: 'kern/outer' (cycles");
  CHECK_CONTAINS(ag_str_cstr(&t->anomalies), "crosses 'kern/outer/inner'");
  CHECK_CONTAINS(ag_str_cstr(&t->anomalies), "cta 0 warp 2: lanes made up to 10 records but "
                                             "lane 0 made 7");
  CHECK_EQ_INT(t->divergent_warps, 1);
  CHECK_CONTAINS(ag_str_cstr(&t->anomalies), "cta 1 warp 0: 4294967296 cycles are missing");
  CHECK_EQ_INT(compare(t, truth, ntruth), 0); /* still decoded, with the anomalies said */
  ag_trace_free(t);
  ag_evidence_free(ev);
  unlink(path);
}

/* One launch simulated with *flag set (unended, long_lived), decoded. */
static ag_trace *simulate_flagged(int *flag, ag_evidence **ev) {
  *flag = 1;
  simulate(1, 64, 0, 0, 0);
  *flag = 0;
  return decode_ok(ev);
}

/* An occurrence whose end marker never ran (its record's second half is
 * still zero) is not an occurrence: it is an anomaly naming the region and
 * when it began, counted, and said in the report. */
TEST(unended_occurrences_are_anomalies) {
  ag_evidence *ev = NULL;
  ag_trace *t = simulate_flagged(&unended, &ev);
  if (!t)
    return;
  CHECK_EQ_U64(t->unended, 1);
  CHECK_EQ_INT(t->nanomalies, 1);
  CHECK_CONTAINS(ag_str_cstr(&t->anomalies), "cta 1 warp 1: 'kern/outer/inner' began at cycle");
  CHECK_CONTAINS(ag_str_cstr(&t->anomalies), "and never ended");
  CHECK_EQ_INT(compare(t, truth, ntruth), 0); /* every other occurrence decodes exactly */
  CHECK(report_says(t, "1 occurrence began and never ended"));
  ag_trace_free(t);
  ag_evidence_free(ev);
  unlink(path);
}

/* Warps that lived 3 s (2^32 cycles or more at HZ): the probe's entry
 * anchors, rebuilt from their low words, are wrong for them. Every such warp
 * is an anomaly, and the launch clock comes from the calibration, not from
 * anchors those warps would bend. */
TEST(long_lived_warps_are_anomalies) {
  ag_evidence *ev = NULL;
  ag_trace *t = simulate_flagged(&long_lived, &ev);
  if (!t)
    return;
  CHECK_CONTAINS(ag_str_cstr(&t->anomalies), "cta 0 warp 0: the warp ran for 3.00 s, 2^32 "
                                             "cycles or more");
  CHECK_EQ_U64(tu_count(ag_str_cstr(&t->anomalies), "2^32 cycles or more: its entry"), WARPS);
  CHECK_EQ_STR(t->clocks[0].source, "calibration");
  CHECK(fabs(t->clocks[0].hz - HZ) < 1.0);
  ag_trace_free(t);
  ag_evidence_free(ev);
  unlink(path);
}

/* ----------------------------------------------------------- damage */

static char *file;
static size_t flen;

static void load_file(void) {
  simulate(1, 64, 0, 0, 0);
  CHECK_EQ_INT(ag_file_read(path, &file, &flen), 0);
  unlink(path);
}

static void expect_error(const void *data, size_t len, int want_rc, const char *want_msg) {
  ag_diags d;
  ag_diags_init(&d);
  ag_evidence *ev = NULL;
  int rc = ag_evidence_load_mem(data, len, "damaged.agev", &d, &ev);
  CHECK_EQ_INT(rc, want_rc);
  CHECK(ev == NULL);
  ag_str s = AG_STR_INIT;
  ag_diags_format(&d, &s);
  CHECK_CONTAINS(ag_str_cstr(&s), "damaged.agev");
  CHECK_CONTAINS(ag_str_cstr(&s), want_msg);
  ag_str_release(&s);
  ag_diags_release(&d);
}

/* Rebuilds a file with new JSON (valid checksum), to damage the header. */
static char *with_json(const char *js, size_t *len) {
  ag_ev_file_header h;
  memcpy(&h, file, sizeof h);
  size_t dl = (size_t)h.data_len, jl = strlen(js);
  char *f = malloc(32 + dl + jl);
  memcpy(f + 32, file + 32, dl);
  memcpy(f + 32 + dl, js, jl);
  h.header_len = (uint32_t)jl;
  h.checksum = ag_ev_fnv(AG_EV_FNV_INIT, f + 32, dl + jl);
  memcpy(f, &h, sizeof h);
  *len = 32 + dl + jl;
  return f;
}

static void json_edit(const char *from, const char *to, int rc, const char *msg) {
  ag_ev_file_header h;
  memcpy(&h, file, sizeof h);
  const char *js = file + 32 + h.data_len;
  char *copy = ag_strndup(js, h.header_len);
  char *at = strstr(copy, from);
  CHECK(at != NULL);
  if (!at) {
    ag_free(copy);
    return;
  }
  ag_str e = AG_STR_INIT;
  ag_str_append(&e, copy, (size_t)(at - copy));
  ag_str_puts(&e, to);
  ag_str_puts(&e, at + strlen(from));
  size_t len;
  char *f = with_json(ag_str_cstr(&e), &len);
  expect_error(f, len, rc, msg);
  free(f);
  ag_str_release(&e);
  ag_free(copy);
}

TEST(damaged_files_get_clear_errors) {
  load_file();
  if (!file)
    return;
  /* it loads undamaged */
  ag_diags d;
  ag_diags_init(&d);
  ag_evidence *ev = NULL;
  CHECK_EQ_INT(ag_evidence_load_mem(file, flen, "ok.agev", &d, &ev), 0);
  ag_evidence_free(ev);
  ag_diags_release(&d);
  /* truncated anywhere */
  size_t cuts[] = {0, 5, 31, 32, 100, flen / 2, flen - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++)
    expect_error(file, cuts[i], cuts[i] < 8 ? AG_EPARSE : AG_ECORRUPT,
                 cuts[i] < 32 ? "shorter than the 32-byte header" : "truncated");
  /* trailing garbage */
  char *g = malloc(flen + 3);
  memcpy(g, file, flen);
  memcpy(g + flen, "xyz", 3);
  expect_error(g, flen + 3, AG_ECORRUPT, "3 bytes of trailing garbage");
  free(g);
  /* bad magic, future version, one flipped bit in the data */
  char *c = malloc(flen);
  memcpy(c, file, flen);
  c[0] = 'X';
  expect_error(c, flen, AG_EPARSE, "not an argus evidence file (bad magic");
  memcpy(c, file, flen);
  c[8] = 9;
  expect_error(c, flen, AG_EPARSE, "evidence format version 9");
  memcpy(c, file, flen);
  c[200] ^= 4;
  expect_error(c, flen, AG_ECORRUPT, "checksum mismatch");
  free(c);
  /* header damage with a valid checksum */
  size_t len;
  char *f = with_json("{\"format\":", &len);
  expect_error(f, len, AG_EPARSE, "evidence header is not valid JSON");
  free(f);
  json_edit("\"format\":\"argus-evidence\"", "\"format\":\"other\"", AG_EPARSE,
            "format 'other' is not argus-evidence");
  json_edit("\"sm_hz\":", "\"sm_hz_x\":", AG_EPARSE, "field 'clock.sm_hz' is missing");
  json_edit("\"probes\":", "\"probes_x\":", AG_EPARSE, "evidence has no probe table");
  json_edit("\"warps\":18", "\"warps\":19", AG_ECORRUPT, "do not match grid");
  json_edit("\"records\":", "\"records\":1", AG_ECORRUPT, "lie outside");
  json_edit("\"dropped\":0", "\"dropped\":5", AG_ECORRUPT, "dropped records but the header");
  json_edit("\"kind\":\"region\",\"region\":1", "\"kind\":\"start\",\"region\":1",
            AG_EPARSE, "is not region, role or async");
  json_edit("\"region\":2,\"line\":13", "\"region\":7,\"line\":13", AG_EPARSE,
            "'probes.sites[1].region' = 7 is out of range");
  json_edit("\"parent\":1", "\"parent\":2", AG_EPARSE, "must name an earlier region");
  json_edit("\"grid\":[6,1,1]", "\"grid\":[6,1]", AG_EPARSE, "must have 3 elements");
  ag_free(file);
  file = NULL;
}

TEST(record_with_unknown_site_is_an_error) {
  simulate(1, 64, 0, 0, 0);
  char *f = NULL;
  size_t n = 0;
  CHECK_EQ_INT(ag_file_read(path, &f, &n), 0);
  unlink(path);
  if (!f)
    return;
  ag_ev_file_header h;
  memcpy(&h, f, sizeof h);
  /* the first record of warp 0 follows the metadata: set its site to 99 */
  ag_ev_record r;
  size_t at = 32 + (size_t)WARPS * AG_EV_META_BYTES;
  memcpy(&r, f + at, sizeof r);
  r.site = 99;
  memcpy(f + at, &r, sizeof r);
  h.checksum = ag_ev_fnv(AG_EV_FNV_INIT, f + 32, h.data_len + h.header_len);
  memcpy(f, &h, sizeof h);
  expect_error(f, n, AG_ECORRUPT, "record 0 names site 99 but the variant has 3 sites");
  ag_free(f);
}

TEST(reports_and_timeline) {
  simulate(2, 64, 0, 0, 0);
  ag_evidence *ev = NULL;
  ag_trace *t = decode_ok(&ev);
  if (!t)
    return;
  ag_region_stats *rs = NULL;
  int n = 0;
  CHECK_EQ_INT(ag_trace_stats(t, NULL, NULL, 0, &rs, &n), 0);
  ag_str txt = AG_STR_INIT;
  CHECK_EQ_INT(ag_report_trace_text(t, NULL, rs, n, &txt), 0);
  CHECK_CONTAINS(ag_str_cstr(&txt), "kern/outer/inner");
  CHECK_CONTAINS(ag_str_cstr(&txt), "durations are observed");
  CHECK_CONTAINS(ag_str_cstr(&txt), "role producer");
  json_t *j = ag_report_trace_json(t, NULL, rs, n, NULL);
  CHECK(j != NULL);
  json_t *g0 = json_array_get(json_object_get(j, "regions"), 0);
  CHECK_EQ_STR(json_string_value(json_object_get(g0, "qual")), "observed");
  CHECK_EQ_STR(json_string_value(json_object_get(j, "schema")), "argus.trace/1");
  json_decref(j);
  ag_str ct = AG_STR_INIT;
  CHECK_EQ_INT(ag_report_chrome_trace(t, NULL, &ct), 0);
  json_error_t e;
  json_t *tj = json_loads(ag_str_cstr(&ct), 0, &e);
  CHECK(tj != NULL);
  size_t xs = 0, i;
  json_t *ev1;
  json_array_foreach(json_object_get(tj, "traceEvents"), i, ev1) xs +=
      !strcmp(json_string_value(json_object_get(ev1, "ph")), "X");
  CHECK_EQ_U64(xs, t->nocc);
  /* within a warp, an inner occurrence lies inside its outer one */
  json_decref(tj);
  /* an empty scope still gives valid JSON */
  ag_scope sc;
  ag_diags err;
  ag_diags_init(&err);
  ag_scope_parse("launch=9", &sc, &err);
  ag_str_clear(&ct);
  CHECK_EQ_INT(ag_report_chrome_trace(t, &sc, &ct), 0);
  tj = json_loads(ag_str_cstr(&ct), 0, &e);
  CHECK(tj != NULL);
  json_decref(tj);
  ag_diags_release(&err);
  ag_str_release(&ct);
  ag_str_release(&txt);
  ag_region_stats_free(rs, n);
  ag_trace_free(t);
  ag_evidence_free(ev);
  unlink(path);
}

RUN_TESTS(T(decode_gives_back_the_simulated_occurrences), T(stats_equal_brute_force),
          T(scope_matching), T(full_buffer_reports_drops),
          T(nesting_divergence_and_ambiguity_are_anomalies), T(unended_occurrences_are_anomalies),
          T(long_lived_warps_are_anomalies), T(damaged_files_get_clear_errors),
          T(record_with_unknown_site_is_an_error), T(reports_and_timeline))
