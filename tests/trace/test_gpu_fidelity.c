/*
 * test_gpu_fidelity.c — ground truth on the GPU: regions that spin 1,000,
 * 10,000 and 100,000 cycles by %clock64 (gpu/spin.cu) are reported within
 * 1% (or 32 cycles) of the truth, which each occurrence measures itself with
 * the clock reads that open and close its body (gpu/spin.cu); the error
 * against the nominal count is printed too.
 * Every occurrence is checked, and a deliberately wrong truth must fail.
 * Then the same run with a 16-record buffer: the drops are counted exactly
 * and reported, and the occurrences before the buffer filled are intact.
 * Exit 77 without a GPU.
 */
#include "check.h"
#include "gpu_util.h"

#include <math.h>

#include "argus/synth.h"

#define WARPS (132 * 128 / 32)
#define REPS 4

static char *dir;
static char harness[1024];

typedef struct run {
  ag_evidence *ev;
  ag_trace *t;
  unsigned long long *truth;
} run;

/* Once per process: skip without a GPU, build both variants of spin.ptx. */
static void setup(void) {
  if (dir)
    return;
  gpu_or_skip("test_gpu_fidelity");
  dir = scratch_dir("fidelity");
  if (!dir || build_spin_variants(dir, harness, sizeof harness)) {
    fprintf(stderr, "test_gpu_fidelity: setup failed\n");
    exit(1);
  }
}

static int do_run(run *r, unsigned records, const char *tag) {
  setup();
  char cubin[1200], probes[1200], truth[1200], out[1200];
  snprintf(cubin, sizeof cubin, "%s/spin.traced.cubin", dir);
  snprintf(probes, sizeof probes, "%s/spin.traced.probes.json", dir);
  snprintf(truth, sizeof truth, "%s/truth-%s.bin", dir, tag);
  snprintf(out, sizeof out, "%s/out-%s", dir, tag);
  char free_cubin[1200];
  snprintf(free_cubin, sizeof free_cubin, "%s/spin.free.cubin", dir);
  const char *argv[] = {harness, "--module", free_cubin, "--truth", truth, "--reps", "4", NULL};
  ag_trace_run_opts o;
  memset(&o, 0, sizeof o);
  o.argv = argv;
  o.cubin_path = cubin;
  o.sites_path = probes;
  o.variant_id = "spin-traced";
  o.out_dir = out;
  o.timeout_s = 120;
  o.records_per_warp = records;
  ag_trace_run_result res;
  ag_str why = AG_STR_INIT;
  int rc = ag_trace_run(&o, &res, &why);
  if (rc) {
    fprintf(stderr, "trace run failed: %s\n", ag_str_cstr(&why));
    ag_str_release(&why);
    return rc;
  }
  ag_diags d;
  ag_diags_init(&d);
  rc = ag_evidence_load(res.evidence_path, &d, &r->ev);
  if (!rc)
    rc = ag_trace_decode(r->ev, &r->t);
  if (rc) {
    ag_str s = AG_STR_INIT;
    ag_diags_format(&d, &s);
    fprintf(stderr, "%s", ag_str_cstr(&s));
    ag_str_release(&s);
  }
  char *tb = NULL;
  size_t tl = 0;
  if (!rc && !(rc = ag_file_read(truth, &tb, &tl))) {
    if (tl != (size_t)WARPS * 3 * REPS * 8)
      rc = AG_ECORRUPT;
    r->truth = (unsigned long long *)(void *)tb;
  }
  ag_diags_release(&d);
  ag_trace_run_result_release(&res);
  ag_str_release(&why);
  return rc;
}

static const char *names[3] = {"spin1k", "spin10k", "spin100k"};
static const double nominal[3] = {1000, 10000, 100000};

/* Counts occurrences of region slot `k` outside tolerance when the truth is
 * bent by (scale, add); prints a summary line when `report`. */
static long check_region(run *r, int k, double scale, double add, int report, long *count) {
  int g = ag_evidence_find_region(r->ev, names[k]);
  long out = 0, n = 0;
  double maxerr = 0, sumerr = 0, sumt = 0, maxrel = 0, summ = 0;
  for (size_t i = 0; g >= 0 && i < r->t->nocc; i++) {
    const ag_occ *o = &r->t->occ[i];
    if (o->region != g)
      continue;
    uint32_t wpc = r->ev->launches[0].warps_per_cta;
    size_t warp = (size_t)o->cta * wpc + o->warp;
    double truth = (double)r->truth[(warp * 3 + (size_t)k) * REPS + o->iter] * scale + add;
    double meas = (double)(o->end - o->start);
    double err = meas - truth, tol = fmax(0.01 * truth, 32.0);
    if (fabs(err) > tol)
      out++;
    n++;
    summ += meas;
    sumerr += err;
    sumt += truth;
    if (fabs(err) > fabs(maxerr))
      maxerr = err;
    if (fabs(err) / truth > maxrel)
      maxrel = fabs(err) / truth;
  }
  if (report)
    printf("@fidelity region %-8s nominal %6.0f cycles: %ld occurrences, mean truth %.1f, "
           "mean reported %.1f (%+.2f%% from nominal), mean error %+.2f cycles, worst error "
           "%+.1f cycles (%.3f%%), outside 1%%-or-32: %ld\n",
           names[k], nominal[k], n, n ? sumt / (double)n : 0, n ? summ / (double)n : 0,
           n ? 100.0 * (summ / (double)n - nominal[k]) / nominal[k] : 0,
           n ? sumerr / (double)n : 0, maxerr, 100 * maxrel, out);
  *count = n;
  return out;
}

TEST(spin_regions_match_truth) {
  run r = {0};
  if (do_run(&r, 0, "full")) {
    CHECK(0);
    return;
  }
  CHECK_EQ_INT(r.ev->nlaunches, 1);
  CHECK_EQ_U64(r.t->dropped, 0);
  CHECK_EQ_INT(r.t->nanomalies, 0);
  for (int k = 0; k < 3; k++) {
    long n = 0;
    CHECK_EQ_INT(check_region(&r, k, 1.0, 0.0, 1, &n), 0);
    CHECK_EQ_INT(n, WARPS * REPS);
    /* the truth itself spun at least the nominal count */
    for (size_t w = 0; w < (size_t)WARPS * REPS; w++)
      CHECK(r.truth[(w / REPS * 3 + (size_t)k) * REPS + w % REPS] >= (unsigned long long)nominal[k]);
    /* deliberately wrong truth (2% + 64 cycles more): must be caught */
    long bad = check_region(&r, k, 1.02, 64.0, 0, &n);
    CHECK(bad >= n * 99 / 100);
  }
  /* the measured clock is a plausible SM clock and the two estimates agree */
  double hz = r.t->clocks[0].hz;
  printf("@fidelity clock: calibration %.2f MHz, launch anchors %.2f MHz (%s), median warp "
         "span %.1f us\n",
         r.ev->sm_hz / 1e6, r.t->clocks[0].anchor_hz / 1e6, r.t->clocks[0].source,
         r.t->clocks[0].span_ns / 1e3);
  CHECK(hz > 5e8 && hz < 3e9);
  CHECK(fabs(r.t->clocks[0].anchor_hz - r.ev->sm_hz) / r.ev->sm_hz < 0.02);
  ag_trace_free(r.t);
  ag_evidence_free(r.ev);
  ag_free(r.truth);
}

TEST(full_buffer_drops_are_counted) {
  run r = {0};
  if (do_run(&r, 5, "small")) {
    CHECK(0);
    return;
  }
  /* 3 regions x 4 reps = 12 occurrences per warp, a buffer of 5 */
  CHECK_EQ_U64(r.t->dropped, (uint64_t)WARPS * 7);
  CHECK_EQ_U64(r.ev->launches[0].dropped, (uint64_t)WARPS * 7);
  CHECK_CONTAINS(ag_str_cstr(&r.t->anomalies), "trace buffer full (5 records)");
  long n = 0;
  /* occurrences before the buffer filled: 2 + 2 + 1 per warp, each exact */
  CHECK_EQ_INT(check_region(&r, 0, 1.0, 0.0, 0, &n), 0);
  CHECK_EQ_INT(n, WARPS * 2);
  CHECK_EQ_INT(check_region(&r, 1, 1.0, 0.0, 0, &n), 0);
  CHECK_EQ_INT(n, WARPS * 2);
  CHECK_EQ_INT(check_region(&r, 2, 1.0, 0.0, 0, &n), 0);
  CHECK_EQ_INT(n, WARPS * 1);
  printf("@fidelity full buffer: %llu records dropped, reported: %s",
         (unsigned long long)r.t->dropped, ag_str_cstr(&r.t->anomalies));
  ag_trace_free(r.t);
  ag_evidence_free(r.ev);
  ag_free(r.truth);
}

RUN_TESTS(T(spin_regions_match_truth), T(full_buffer_drops_are_counted))
