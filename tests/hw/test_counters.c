/*
 * test_counters.c — the hardware counters (docs/counters.md) on the CPU:
 *
 *   catalog          CUPTI's profiler host API with chip GH100, no GPU: every
 *                    metric of the default set is on the chip's list and the
 *                    set configures (its passes printed); a misspelt name is
 *                    refused with the meant one first among the close
 *                    matches; a base name without a rollup is refused; an
 *                    unknown chip; ag_counters_check (argus plan's check)
 *   synthetic        tests/data/evidence/counters.synthetic.json — SYNTHETIC,
 *                    written by hand in the collector's format with H200-like
 *                    figures, NOT recorded (the H200's replaces it): decoded;
 *                    its metrics are the collector's default set; the peaks
 *                    from the device's figures; per range the FLOPs, bytes,
 *                    intensity, bound and % of roof computed by hand here;
 *                    the user range's sums; the warnings; the text
 *   bad_evidence     malformed files: a diagnostic naming what is wrong
 *   collector_fake   the collector through the host runtime with a stand-in
 *                    driver and CUPTI (tests/probes/fake_cuda.c,
 *                    tests/sassm/fake_cupti_ctr.c): ranges matched to the
 *                    launches with their user ranges, the metrics (the
 *                    default set + ARGUS_COUNTERS_METRICS) and their values,
 *                    the device's figures; unmatched and dropped ranges;
 *                    ranges refused when unbalanced; no-ops outside
 *   failures         no CUPTI, another subscriber, profiling not permitted
 *                    (RmProfilingAdminOnly), a device that cannot be
 *                    profiled, an unknown metric, bad settings — each a
 *                    clear message, through the host runtime into
 *                    host-error.txt
 *   replay           user ranges with a 3-pass set through ag_trace_run:
 *                    the harness runs 3 times, the pass state is kept and
 *                    spent, one range per outermost user range; a state
 *                    file of another metric set is refused
 */
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "argus/collect.h"
#include "argus/counters_ev.h"
#include "argus/host.h"
#include "check.h"
#include "counters.h"
#include "ctr_catalog.h"
#include "hw_util.h"
#include "ctr_truth.h"

#define CHECK_NEAR(a, b, rel)                                                  \
  do {                                                                         \
    double chk_x = (a), chk_y = (b);                                           \
    if (!(fabs(chk_x - chk_y) <= (rel) * fabs(chk_y))) {                       \
      fprintf(stderr, "%s:%d: %s ~ %s failed: %.9g vs %.9g\n", __FILE__,       \
              __LINE__, #a, #b, chk_x, chk_y);                                 \
      chk__failed_asserts++;                                                   \
      chk__cur_failed = 1;                                                     \
    }                                                                          \
  } while (0)


/* ------------------------------------------------------------ catalog */

TEST(catalog) {
  CHK_SKIP_UNDER_ASAN_CUPTI_HOST();
  unsetenv("ARGUS_LIBCUPTI");
  CHECK_EQ_INT((int)ag_ctr_edit_distance("kitten", "sitting"), 3);
  CHECK_EQ_INT((int)ag_ctr_edit_distance("", "abc"), 3);
  CHECK_EQ_INT((int)ag_ctr_edit_distance("dram__bytes_read.sum", "dram__bytes_read.sum"), 0);
  char longa[300], longb[300];
  memset(longa, 'a', 299), memset(longb, 'a', 299);
  longa[299] = longb[299] = 0;
  longb[150] = 'b';
  CHECK_EQ_INT((int)ag_ctr_edit_distance(longa, longb), 1); /* long names: rows of 300 */
  char err[2048] = "";
  ag_ctr_cat *c = NULL;
  int rc = ag_ctr_cat_open(NULL, AG_CTR_RANGE, "GH100", NULL, &c, err, sizeof err);
  if (rc == AG_HOST_ENODEV)
    SKIP("no CUPTI with the profiler host API here: %s", err);
  CHECK_EQ_INT(rc, 0);
  if (!c)
    return;
  printf("GH100: %zu base metrics\n", ag_ctr_cat_count(c));
  CHECK(ag_ctr_cat_count(c) > 1000);
  size_t n = 0;
  for (; ag_ctr_default[n]; n++) {
    ag_ctr_props p;
    int r = ag_ctr_cat_lookup(c, ag_ctr_default[n], &p, err, sizeof err);
    if (r)
      fprintf(stderr, "default metric: %s\n", err);
    CHECK_EQ_INT(r, 0);
    CHECK(p.unit[0] != 0);
  }
  ag_ctr_props p;
  CHECK_EQ_INT(ag_ctr_cat_lookup(c, "dram__bytes_read.sum", &p, err, sizeof err), 0);
  CHECK_EQ_STR(p.unit, "byte");
  CHECK_EQ_INT(p.type, 0);
  CHECK_EQ_INT(ag_ctr_cat_lookup(c, "sm__throughput.avg.pct_of_peak_sustained_elapsed", &p, err,
                                 sizeof err), 0);
  CHECK_EQ_STR(p.unit, "percent");
  CHECK_EQ_INT(p.type, 2);
  /* misspelt: the meant name first */
  CHECK_EQ_INT(ag_ctr_cat_lookup(c, "dram__bytes_red.sum", &p, err, sizeof err), AG_HOST_EINVAL);
  CHECK_CONTAINS(err, "'dram__bytes_red.sum' is not a metric of chip GH100: did you mean "
                      "'dram__bytes_read.sum'");
  CHECK_EQ_INT(ag_ctr_cat_lookup(c, "sm__throughput.avg.pct_of_peak_sustained_elapse", &p, err,
                                 sizeof err), AG_HOST_EINVAL);
  CHECK_CONTAINS(err, "did you mean 'sm__throughput.avg.pct_of_peak_sustained_elapsed'");
  CHECK_EQ_INT(ag_ctr_cat_lookup(c, "smsp__issue_activ.avg.pct_of_peak_sustained_active", &p,
                                 err, sizeof err), AG_HOST_EINVAL);
  CHECK_CONTAINS(err, "did you mean 'smsp__issue_active.avg.pct_of_peak_sustained_active'");
  /* a base name alone: CUPTI has its properties, but it does not configure */
  CHECK_EQ_INT(ag_ctr_cat_lookup(c, "dram__bytes_read", &p, err, sizeof err), AG_HOST_EINVAL);
  CHECK_CONTAINS(err, "that can be collected (it needs a rollup)");
  CHECK_CONTAINS(err, "'dram__bytes_read.sum'");
  CHECK_EQ_INT(ag_ctr_cat_lookup(c, "zzzzzzzz.sum", &p, err, sizeof err), AG_HOST_EINVAL);
  CHECK_CONTAINS(err, "no close match among its");
  const char *near[3];
  char buf[512];
  CHECK(ag_ctr_cat_close_matches(c, "lts__t_byts.sum", buf, sizeof buf, near, 3) >= 1);
  CHECK_EQ_STR(near[0], "lts__t_bytes.sum");
  CHECK_EQ_INT(ag_ctr_cat_close_matches(c, "lts__t_bytes.summ", buf, sizeof buf, near, 3), 3);
  CHECK_EQ_STR(near[0], "lts__t_bytes.sum");
  /* the default set configures; kernel replay runs each launch once per pass */
  uint8_t *img = NULL;
  size_t size = 0, passes = 0;
  CHECK_EQ_INT(ag_ctr_cat_config(c, ag_ctr_default, n, &img, &size, &passes, err, sizeof err), 0);
  printf("the default set (%zu metrics): %zu passes, a %zu-byte configuration image\n", n,
         passes, size);
  CHECK(passes >= 2 && passes <= 16 && size > 0);
  free(img);
  CHECK_EQ_INT(ag_ctr_cat_config(c, ag_ctr_default, n, &img, &size, &passes, err, sizeof err),
               AG_HOST_EINVAL); /* once per catalog */
  ag_ctr_cat_close(c);
  CHECK_EQ_INT(ag_ctr_cat_open(NULL, AG_CTR_RANGE, "GX999", NULL, &c, err, sizeof err), AG_HOST_EUNSUPPORTED);
  CHECK_CONTAINS(err, "this CUPTI does not know chip 'GX999' (it knows ");
  CHECK_CONTAINS(err, "GH100");
  /* argus plan's check: every name, with the default set */
  ag_str why = AG_STR_INIT;
  CHECK_EQ_INT(ag_counters_check(NULL, "lts__t_sectors.sum, l1tex__t_sectors.sum", &passes, &why),
               0);
  CHECK(passes >= 2);
  ag_str_clear(&why);
  CHECK_EQ_INT(ag_counters_check("GH100", "lts__t_sectrs.sum,dram__bytes_read", &passes, &why),
               AG_EINVAL);
  CHECK_EQ_INT((int)passes, 0);
  CHECK_CONTAINS(ag_str_cstr(&why), "did you mean 'lts__t_sectors.sum'");
  CHECK_CONTAINS(ag_str_cstr(&why), "\n'dram__bytes_read' is not a metric of chip GH100 that");
  ag_str_release(&why);
}

/* ------------------------------------------- the synthetic evidence */

static json_t *range_of(json_t *sig, const char *name) {
  size_t i;
  json_t *r;
  json_array_foreach(json_object_get(sig, "ranges"), i, r) {
    if (!strcmp(json_string_value(json_object_get(r, "name")), name))
      return r;
  }
  return NULL;
}

static double rf(json_t *r, const char *k) {
  json_t *v = json_object_get(json_object_get(r, "roofline"), k);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

/* The evidence recorded on the H200 (2026-12-02, test_gpu_counters at
 * 3355600: `collector` on 131,072 CTAs x 256 threads in the user range
 * "phase", kernel replay): the facts of the construction hold in it. */
TEST(recorded) {
  ag_ctr_ev *e = hw_ctr_data("collector.counters.json");
  CHECK(e != NULL);
  if (!e)
    return;
  CHECK(e->synthetic == NULL); /* recorded, not made by hand */
  CHECK_EQ_INT((int)e->passes, 10);
  CHECK_EQ_INT((int)e->peaks.sm_count, 132);
  ctr_truth_check(e, 131072, 256);
  ag_ctr_ev_free(e);
}

TEST(synthetic) {
  ag_ctr_ev *e = hw_ctr_data("counters.synthetic.json");
  CHECK(e != NULL);
  if (!e)
    return;
  /* made by hand, and it says so */
  CHECK(e->synthetic && strstr(e->synthetic, "NOT recorded on a GPU"));
  /* the collector's format: its default set, in its order */
  size_t n = 0;
  for (; ag_ctr_default[n]; n++)
    CHECK(n < e->nmetrics && !strcmp(e->metrics[n].name, ag_ctr_default[n]));
  CHECK_EQ_INT((int)e->nmetrics, (int)n);
  CHECK_EQ_STR(e->chip, "GH100");
  CHECK_EQ_INT((int)e->passes, 10);
  CHECK_EQ_INT((int)e->nranges, 3);
  CHECK(e->matched);
  CHECK_EQ_STR(e->ranges[1].kernel, "stream");
  CHECK_EQ_INT((int)e->ranges[2].launch, 2);
  CHECK_EQ_STR(e->ranges[0].user_range, "phase");
  CHECK(e->ranges[2].user_range == NULL);
  CHECK_NEAR(ag_ctr_ev_value(e, 1, "dram__bytes_read.sum"), 67108864.0, 0);
  CHECK(isnan(ag_ctr_ev_value(e, 1, "lts__t_sectors.sum"))); /* not collected */
  CHECK_EQ_STR(e->metrics[ag_ctr_ev_metric(e, "dram__bytes_read.sum")].unit, "byte");
  /* the peaks from the device's figures: 132 SMs x 128 lanes x 2 x 1.98 GHz;
   * 2 x 3.201 GHz x 6144 bits / 8 */
  CHECK_NEAR(e->peaks.fp32_flop_s, 132.0 * 128 * 2 * 1.98e9, 1e-12);
  CHECK_NEAR(e->peaks.fp64_flop_s, 132.0 * 64 * 2 * 1.98e9, 1e-12);
  CHECK_NEAR(e->peaks.dram_bytes_s, 2 * 3.201e9 * 768, 1e-12);
  json_t *sig = ag_ctr_signal(e);
  CHECK(sig != NULL);
  if (!sig)
    goto out;
  CHECK_EQ_STR(json_string_value(json_object_get(sig, "qual")), "observed");
  json_t *pk = json_object_get(sig, "peaks");
  /* CUPTI's own per-cycle peak agrees with the lanes the device table gives */
  CHECK_NEAR(json_number_value(json_object_get(pk, "counter_fp32_flop_per_s")),
             2.0 * 16896 * 1.755e9, 1e-12);
  CHECK_NEAR(16896.0, 132.0 * 128, 0);
  /* range 0, the collector kernel: 128 x 256 threads x 16,384 FFMAs */
  json_t *r0 = range_of(sig, "(launch 0 collector)"), *r1 = range_of(sig, "(launch 1 stream)");
  CHECK(r0 && r1);
  if (!r0 || !r1)
    goto out;
  double f0 = 2.0 * 128 * 256 * 16384, b0 = 278528 + 131072;
  CHECK_NEAR(rf(r0, "fp32_flop"), f0, 0);
  CHECK_NEAR(rf(r0, "fp32_flop_per_s"), f0 / 35424e-9, 1e-12);
  CHECK_NEAR(rf(r0, "dram_bytes"), b0, 0);
  CHECK_NEAR(rf(r0, "intensity"), f0 / b0, 1e-12);
  double ridge = (132.0 * 128 * 2 * 1.98e9) / (2 * 3.201e9 * 768);
  CHECK_NEAR(rf(r0, "ridge"), ridge, 1e-12);
  CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(r0, "roofline"), "bound")),
               "compute");
  CHECK_NEAR(rf(r0, "pct_of_roof"), 100.0 * (f0 / 35424e-9) / (132.0 * 128 * 2 * 1.98e9), 1e-9);
  CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(r0, "roofline"), "precision")),
               "fp32");
  /* range 1, the streaming kernel: 64 MiB each way, 16 M FFMAs, 30 us */
  double f1 = 2.0 * 16777216, b1 = 2.0 * 67108864;
  CHECK_NEAR(rf(r1, "intensity"), f1 / b1, 1e-12);
  CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(r1, "roofline"), "bound")),
               "memory");
  CHECK_NEAR(rf(r1, "roof_flop_per_s"), (f1 / b1) * 2 * 3.201e9 * 768, 1e-12);
  CHECK_NEAR(rf(r1, "pct_of_roof"), 100.0 * (f1 / 30e-6) / ((f1 / b1) * 2 * 3.201e9 * 768), 1e-9);
  CHECK_NEAR(rf(r1, "dram_bytes_per_s"), b1 / 30e-6, 1e-12);
  CHECK_NEAR(rf(r1, "pct_of_peak_dram"), 100.0 * (b1 / 30e-6) / (2 * 3.201e9 * 768), 1e-9);
  CHECK(json_is_null(json_object_get(json_object_get(r1, "roofline"), "tensor_source")));
  CHECK_NEAR(rf(r1, "tensor_flop"), 0, 0);
  /* range 2, a 4096^3 FP16 GEMM on HGMMA: no SASS FLOP at all; its tensor
   * FLOPs (2 x 4096^3 math ops) against the HGMMA FP16 peak (540,672 math
   * ops per GPC cycle x 1.755 GHz) make it compute bound on the tensor roof */
  json_t *r2 = range_of(sig, "(launch 2 gemm)");
  CHECK(r2 != NULL);
  if (r2) {
    double ft = 2.0 * 4096 * 4096 * 4096, tp = 540672.0 * 1.755e9, b2 = 100663296.0;
    CHECK_NEAR(rf(r2, "fp32_flop"), 0, 0);
    CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(r2, "roofline"),
                                                   "precision")), "tensor");
    CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(r2, "roofline"),
                                                   "tensor_source")), "fp16");
    CHECK_NEAR(rf(r2, "tensor_flop"), ft, 0);
    CHECK_NEAR(rf(r2, "tensor_flop_per_s"), ft / 200e-6, 1e-12);
    CHECK_NEAR(rf(r2, "tensor_peak_flop_per_s"), tp, 1e-12);
    CHECK_NEAR(rf(r2, "pct_of_tensor_peak"), 100.0 * (ft / 200e-6) / tp, 1e-9);
    CHECK_NEAR(rf(r2, "pct_of_peak_flop"), 100.0 * (ft / 200e-6) / tp, 1e-9);
    CHECK_NEAR(rf(r2, "intensity"), ft / b2, 1e-12);
    CHECK_NEAR(rf(r2, "ridge"), tp / (2 * 3.201e9 * 768), 1e-12);
    CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(r2, "roofline"), "bound")),
                 "compute");
    CHECK_CONTAINS(json_string_value(json_object_get(json_object_get(r2, "roofline"),
                                                     "tensor_rule")),
                   "sm__ops_path_tensor_op_hgmma_src_<source>.sum");
  }
  CHECK_NEAR(json_number_value(json_object_get(json_object_get(r1, "values"),
                                               "sm__throughput.avg.pct_of_peak_sustained_elapsed")),
             20.5, 0);
  /* the harness's range "phase": launches 0 and 1, their additive counters summed */
  json_t *u = json_array_get(json_object_get(sig, "user_ranges"), 0);
  CHECK_EQ_INT((int)json_array_size(json_object_get(sig, "user_ranges")), 1);
  CHECK_EQ_STR(json_string_value(json_object_get(u, "name")), "phase");
  CHECK_EQ_INT((int)json_integer_value(json_object_get(u, "launches")), 2);
  json_t *sums = json_object_get(u, "sums");
  CHECK_NEAR(json_number_value(json_object_get(sums, "gpu__time_duration.sum")), 35424 + 30000.0,
             0);
  CHECK_NEAR(json_number_value(json_object_get(sums, "dram__bytes_read.sum")),
             278528 + 67108864.0, 0);
  CHECK(!json_object_get(sums, "lts__t_sector_hit_rate.pct")); /* a ratio: not summed */
  CHECK(!json_object_get(sums, "dram__bytes.sum.peak_sustained"));
  char *w = json_dumps(json_object_get(sig, "warnings"), 0);
  CHECK_CONTAINS(w, "SYNTHETIC evidence, not recorded on a GPU");
  CHECK_CONTAINS(w, "needs 10 passes: each kernel ran 10 times (kernel replay)");
  free(w);
  ag_str txt = AG_STR_INIT;
  CHECK_EQ_INT(ag_ctr_text(sig, &txt), 0);
  printf("%s", ag_str_cstr(&txt));
  CHECK_CONTAINS(ag_str_cstr(&txt), "hardware counters on GH100 (observed, CUPTI range profiler: "
                                    "auto ranges, 10 passes, kernel replay)");
  CHECK_CONTAINS(ag_str_cstr(&txt), "66.9 FP32 TFLOP/s, 33.5 FP64 TFLOP/s, 4.92 TB/s DRAM");
  CHECK_CONTAINS(ag_str_cstr(&txt), "memory (91.0)");
  CHECK_CONTAINS(ag_str_cstr(&txt), "user range phase: 2 launches");
  CHECK_CONTAINS(ag_str_cstr(&txt), "  tensor (launch 2 gemm)       687.2 TFLOP/s (source "
                                    "fp16), 72.4 % of its peak 948.9 TFLOP/s (rule: ");
  ag_str_release(&txt);
  json_decref(sig);
  /* with the metric of every FP16 tensor op in the set (--metrics), the
   * HGMMA count is not added to it: here the BF16 HGMMA column renamed to
   * sm__ops_path_tensor_src_fp16.sum, counting HGMMA's ops and 4096^3 more
   * (as if an HMMA phase ran too): that count alone is the FP16 tensor work */
  {
    size_t kb = (size_t)ag_ctr_ev_metric(e, "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum");
    size_t kf = (size_t)ag_ctr_ev_metric(e, "sm__ops_path_tensor_op_hgmma_src_fp16.sum");
    const char *was = e->metrics[kb].name;
    e->metrics[kb].name = "sm__ops_path_tensor_src_fp16.sum";
    e->ranges[2].values[kb] = e->ranges[2].values[kf] + 4096.0 * 4096 * 4096;
    sig = ag_ctr_signal(e);
    json_t *g = sig ? range_of(sig, "(launch 2 gemm)") : NULL;
    CHECK(g != NULL);
    if (g)
      CHECK_NEAR(rf(g, "tensor_flop"), 3.0 * 4096 * 4096 * 4096, 0);
    json_decref(sig);
    e->metrics[kb].name = was;
    e->ranges[2].values[kb] = 0;
  }
  /* the wrong case: a device without an FP peak has no compute roof */
  e->peaks.fp32_lanes = 0, e->peaks.fp32_flop_s = 0;
  sig = ag_ctr_signal(e);
  r0 = sig ? range_of(sig, "(launch 0 collector)") : NULL;
  CHECK(r0 && json_is_null(json_object_get(json_object_get(r0, "roofline"), "bound")));
  w = sig ? json_dumps(json_object_get(sig, "warnings"), 0) : NULL;
  CHECK_CONTAINS(w, "no FP peak for compute capability 9.0");
  free(w);
  json_decref(sig);
out:
  ag_ctr_ev_free(e);
}

static void bad_ctr(const char *text, const char *want) {
  ag_diags d;
  ag_diags_init(&d);
  ag_ctr_ev *e = NULL;
  int rc = ag_ctr_ev_load_mem(text, strlen(text), "counters.json", &d, &e);
  CHECK(rc != 0 && e == NULL);
  ag_str msg = {0};
  ag_diags_format(&d, &msg);
  if (!strstr(ag_str_cstr(&msg), want))
    fprintf(stderr, "want '%s' in: %s\n", want, ag_str_cstr(&msg));
  CHECK_CONTAINS(ag_str_cstr(&msg), want);
  CHECK_CONTAINS(ag_str_cstr(&msg), "counters.json");
  ag_str_release(&msg);
  ag_diags_release(&d);
  ag_ctr_ev_free(e);
}

#define HEAD "{\"format\":\"argus-counters\",\"version\":1,\"chip\":\"GH100\","
#define PEAKS "\"peaks\":{\"sm_count\":132,\"sm_clock_khz\":1980000,\"mem_clock_khz\":3201000," \
              "\"mem_bus_bits\":6144,\"cc\":[9,0],\"fp32_lanes_per_sm\":128,"              \
              "\"fp64_lanes_per_sm\":64},"
#define MODE "\"range_mode\":\"auto\",\"replay\":\"kernel\",\"passes\":1,\"dropped_ranges\":0,"
#define MET "\"metrics\":[{\"name\":\"gpu__time_duration.sum\",\"unit\":\"nanosecond\"}],"

TEST(bad_evidence) {
  bad_ctr("[1]", "not a JSON object");
  bad_ctr("{\"format\":\"argus-system\",\"version\":1}", "not hardware-counter evidence");
  bad_ctr("{\"format\":\"argus-counters\",\"version\":2}", "version 2");
  bad_ctr(HEAD "\"range_mode\":\"some\"}", "'range_mode' is neither");
  bad_ctr(HEAD "\"range_mode\":\"auto\",\"passes\":0}", "'passes'");
  bad_ctr(HEAD MODE "\"ranges\":[]}", "field 'peaks'");
  bad_ctr(HEAD MODE "\"peaks\":{\"sm_count\":132}}", "peaks: 'sm_clock_khz' is missing");
  bad_ctr(HEAD MODE PEAKS "\"metrics\":[]}", "'metrics' is missing or empty");
  bad_ctr(HEAD MODE PEAKS "\"metrics\":[{\"name\":\"a.sum\"}]}", "metrics[0]: needs 'name' and");
  bad_ctr(HEAD MODE PEAKS "\"metrics\":[{\"name\":\"a.sum\",\"unit\":\"x\"},{\"name\":\"a.sum\","
                          "\"unit\":\"x\"}]}",
          "metrics[1]: 'a.sum' is listed twice");
  bad_ctr(HEAD MODE PEAKS MET "\"ranges\":{}}", "'ranges' is missing");
  bad_ctr(HEAD MODE PEAKS MET "\"ranges\":[{\"name\":\"0\",\"values\":[1,2]}]}",
          "ranges[0]: 'values' has 2 entries for 1 metrics");
  bad_ctr(HEAD MODE PEAKS MET "\"ranges\":[{\"name\":\"0\",\"values\":[\"x\"]}]}",
          "ranges[0]: value 0 (gpu__time_duration.sum) is not a number");
  /* only counters add up over a user range's launches: a throughput (even
   * under a .sum rollup) does not */
  const char *two = HEAD MODE PEAKS "\"metrics\":[{\"name\":\"gpu__time_duration.sum\","
                    "\"type\":\"counter\",\"unit\":\"nanosecond\"},{\"name\":"
                    "\"sm__throughput.sum\",\"type\":\"throughput\",\"unit\":\"percent\"}],"
                    "\"ranges\":[{\"name\":\"0\",\"user_range\":\"u\",\"values\":[10,40]},"
                    "{\"name\":\"1\",\"user_range\":\"u\",\"values\":[20,50]}]}";
  ag_diags d;
  ag_diags_init(&d);
  ag_ctr_ev *e = NULL;
  CHECK_EQ_INT(ag_ctr_ev_load_mem(two, strlen(two), "two.json", &d, &e), 0);
  json_t *sig = e ? ag_ctr_signal(e) : NULL;
  json_t *sums = json_object_get(json_array_get(json_object_get(sig, "user_ranges"), 0), "sums");
  CHECK(json_number_value(json_object_get(sums, "gpu__time_duration.sum")) == 30.0);
  CHECK(json_object_get(sums, "sm__throughput.sum") == NULL);
  json_decref(sig);
  ag_ctr_ev_free(e);
  /* a minimal good one: a null value is a NaN, not a zero */
  const char *ok = HEAD MODE PEAKS MET "\"ranges\":[{\"name\":\"0\",\"values\":[null]}]}";
  CHECK_EQ_INT(ag_ctr_ev_load_mem(ok, strlen(ok), "ok.json", &d, &e), 0);
  CHECK(e && isnan(e->ranges[0].values[0]) && e->ranges[0].launch == -1);
  ag_ctr_ev_free(e);
  ag_diags_release(&d);
}

/* -------------------------------------- the collector with stand-ins */

static void stand_ins(void) {
  setenv("ARGUS_LIBCUPTI", FAKE_CUPTI, 1);
  setenv("ARGUS_LIBCUDA", FAKE_CUDA, 1);
  setenv("FAKE_CUPTI_SUBSCRIBE", "0", 1);
  setenv("FAKE_CUPTI_PROFILER", "0", 1);
}

static void clear_env(void) {
  static const char *const ks[] = {
      "ARGUS_LIBCUPTI", "ARGUS_LIBCUDA", "FAKE_CUPTI_SUBSCRIBE", "FAKE_CUPTI_PROFILER",
      "FAKE_CUPTI_RANGES", "FAKE_CUPTI_PASSES", "FAKE_CUPTI_SUPPORTED", "FAKE_CUPTI_RANGE_ENABLE",
      "ARGUS_COLLECT", "ARGUS_OUT", "ARGUS_VARIANT", "ARGUS_COUNTERS_METRICS",
      "ARGUS_COUNTERS_RANGE", "ARGUS_COUNTERS_MAX_RANGES"};
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++)
    unsetenv(ks[i]);
}

/* A scratch directory with a "variant" the stand-in driver loads. */
static void scratch(char *dir, char *variant, size_t n) {
  strcpy(dir, "/tmp/argus-ctr-XXXXXX");
  if (!mkdtemp(dir))
    exit(1);
  snprintf(variant, n, "%s/variant.cubin", dir);
  ag_file_write_atomic(variant, "fakecubin\n", 10);
}

static void rm_dir(const char *dir) {
  static const char *const fs[] = {"variant.cubin", AG_CTR_FILE, "host-error.txt",
                                   AG_CTR_REPLAY_FILE, AG_CTR_NEXT_FILE, "harness.log",
                                   "timing.json"};
  char p[1200];
  for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, fs[i]);
    unlink(p);
  }
  rmdir(dir);
}

/* ops: 'o' push outer, 'i' push inner, 'p' pop, 'l' launch; then finish.
 * A leading 'x': first a module Argus does not replace, and a launch of
 * its kernel before the variant's load. Returns the first failing call's
 * code (ag_host_finish's last), the message in why. */
static int host_run(const char *dir, const char *variant, const char *ops, char *why,
                    size_t n) {
  setenv("ARGUS_COLLECT", "counters", 1);
  setenv("ARGUS_OUT", dir, 1);
  setenv("ARGUS_VARIANT", variant, 1);
  ag_host *h = NULL;
  ag_host_module *m = NULL;
  ag_host_kernel *k = NULL;
  if (*ops == 'x') /* "init" stays the harness's */
    setenv("ARGUS_MODULE", "module.cubin", 1);
  int rc = ag_host_open(&h);
  if (!rc && *ops == 'x') {
    ag_host_module *im = NULL;
    ag_host_kernel *ik = NULL;
    if (!(rc = ag_host_load_image(h, "fake init module", "init", &im)) &&
        !(rc = ag_host_kernel_get(im, "kern", &ik)))
      rc = ag_host_launch(ik, (ag_host_dim){1, 1, 1}, (ag_host_dim){32, 1, 1}, 0, NULL, NULL);
    ops++;
  }
  if (!rc)
    rc = ag_host_load(h, "module.cubin", &m);
  if (!rc)
    rc = ag_host_kernel_get(m, "kern", &k);
  for (const char *o = ops; !rc && *o; o++)
    rc = *o == 'l'   ? ag_host_launch(k, (ag_host_dim){4, 1, 1}, (ag_host_dim){128, 1, 1}, 0,
                                      NULL, NULL)
         : *o == 'p' ? ag_host_range_pop(h)
                     : ag_host_range_push(h, *o == 'o' ? "outer" : "inner");
  if (!rc)
    rc = ag_host_finish(h);
  snprintf(why, n, "%s", ag_host_errmsg(h));
  ag_host_close(h);
  unsetenv("ARGUS_MODULE");
  return rc;
}

TEST(collector_fake) {
  char dir[64], variant[128], why[1200];
  scratch(dir, variant, sizeof variant);
  stand_ins();
  setenv("FAKE_CUPTI_RANGES", "3", 1);
  setenv("ARGUS_COUNTERS_METRICS", "lts__t_sectors.sum, dram__bytes_read.sum", 1);
  int rc = host_run(dir, variant, "olilppl", why, sizeof why);
  if (rc)
    fprintf(stderr, "%s\n", why);
  CHECK_EQ_INT(rc, 0);
  ag_ctr_ev *e = hw_ctr_load(dir);
  CHECK(e != NULL);
  if (e) {
    /* the default set, then the named metric (the other was in the set) */
    size_t n = 0;
    while (ag_ctr_default[n])
      n++;
    CHECK_EQ_INT((int)e->nmetrics, (int)n + 1);
    CHECK_EQ_STR(e->metrics[n].name, "lts__t_sectors.sum");
    CHECK_EQ_STR(e->metrics[ag_ctr_ev_metric(e, "dram__bytes_read.sum")].unit, "byte");
    CHECK_EQ_STR(e->range_mode, "auto");
    CHECK_EQ_STR(e->replay, "kernel");
    CHECK_EQ_INT((int)e->passes, 10);
    CHECK(e->matched);
    CHECK_EQ_INT((int)e->nranges, 3);
    if (e->nranges == 3) {
      /* range i is launch i, labelled with the harness's ranges open then */
      for (int i = 0; i < 3; i++) {
        CHECK_EQ_STR(e->ranges[i].kernel, "kern");
        CHECK_EQ_INT((int)e->ranges[i].launch, i);
      }
      CHECK_EQ_STR(e->ranges[0].user_range, "outer");
      CHECK_EQ_STR(e->ranges[1].user_range, "outer/inner");
      CHECK(e->ranges[2].user_range == NULL);
      CHECK_NEAR(e->ranges[1].values[n], 2000.0 + (double)n, 0); /* the stand-in's value */
    }
    /* the device's figures, from the driver */
    CHECK_EQ_INT(e->peaks.sm_count, 132);
    CHECK_EQ_INT(e->peaks.sm_clock_khz, 1980000);
    CHECK_EQ_INT(e->peaks.mem_clock_khz, 3201000);
    CHECK_EQ_INT(e->peaks.mem_bus_bits, 6144);
    CHECK_EQ_INT(e->peaks.fp32_lanes, 128);
    CHECK_EQ_INT(e->peaks.fp64_lanes, 64);
    CHECK_EQ_INT(json_integer_value(json_object_get(e->root, "launches_total")), 3);
  }
  ag_ctr_ev_free(e);
  /* a kernel launched before the variant's load is not profiled, nor noted */
  setenv("FAKE_CUPTI_RANGES", "3", 1);
  CHECK_EQ_INT(host_run(dir, variant, "xlll", why, sizeof why), 0);
  e = hw_ctr_load(dir);
  CHECK(e && e->matched && e->nranges == 3 && e->ranges[0].launch == 0);
  CHECK(e && json_integer_value(json_object_get(e->root, "launches_noted")) == 3);
  ag_ctr_ev_free(e);
  /* more ranges than launches: CUPTI saw kernels outside libargus_host */
  setenv("FAKE_CUPTI_RANGES", "4", 1);
  CHECK_EQ_INT(host_run(dir, variant, "lll", why, sizeof why), 0);
  e = hw_ctr_load(dir);
  CHECK(e && !e->matched && e->nranges == 4 && !e->ranges[0].kernel);
  json_t *sig = e ? ag_ctr_signal(e) : NULL;
  CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(json_object_get(sig, "ranges"),
                                                                3), "name")),
               "(range 3)");
  char *w = sig ? json_dumps(json_object_get(sig, "warnings"), 0) : NULL;
  CHECK_CONTAINS(w, "the ranges are not matched to launches");
  free(w);
  json_decref(sig);
  ag_ctr_ev_free(e);
  /* more ranges than the counter data holds */
  setenv("ARGUS_COUNTERS_MAX_RANGES", "2", 1);
  setenv("FAKE_CUPTI_RANGES", "3", 1);
  CHECK_EQ_INT(host_run(dir, variant, "lll", why, sizeof why), 0);
  e = hw_ctr_load(dir);
  CHECK(e && e->dropped_ranges == 1 && e->nranges == 2 && e->matched);
  ag_ctr_ev_free(e);
  unsetenv("ARGUS_COUNTERS_MAX_RANGES");
  /* ranges that do not balance */
  CHECK_EQ_INT(host_run(dir, variant, "olp", why, sizeof why), 0);
  CHECK_EQ_INT(host_run(dir, variant, "olpp", why, sizeof why), AG_HOST_EINVAL);
  CHECK_CONTAINS(why, "ag_host_range_pop without an open range");
  CHECK_EQ_INT(host_run(dir, variant, "oil", why, sizeof why), AG_HOST_EINVAL);
  CHECK_CONTAINS(why, "2 user ranges are still open at ag_host_finish (the innermost: 'inner')");
  /* no kernel profiled */
  setenv("FAKE_CUPTI_RANGES", "0", 1);
  CHECK_EQ_INT(host_run(dir, variant, "", why, sizeof why), AG_HOST_EINVAL);
  CHECK_CONTAINS(why, "CUPTI profiled no kernel launch between the variant's load");
  /* outside this collection the ranges do nothing */
  unsetenv("ARGUS_COLLECT");
  ag_host *h = NULL;
  CHECK_EQ_INT(ag_host_range_push(NULL, "x"), 0);
  CHECK_EQ_INT(ag_host_range_pop(NULL), 0);
  if (ag_host_open(&h) == 0) {
    CHECK_EQ_INT(ag_host_range_push(h, "outside"), 0);
    CHECK_EQ_INT(ag_host_range_pop(h), 0);
    CHECK_EQ_INT(ag_host_range_pop(h), 0);
  }
  ag_host_close(h);
  clear_env();
  rm_dir(dir);
}

/* ------------------------------------------------------------ failures */

TEST(failures) {
  char dir[64], variant[128], why[1200], err[2048];
  scratch(dir, variant, sizeof variant);
  ag_ctr *c = NULL;
  setenv("ARGUS_LIBCUPTI", "/nonexistent/libcupti.so", 1);
  CHECK_EQ_INT(ag_ctr_open(NULL, 0, dir, &c, err, sizeof err), AG_HOST_ENODEV);
  CHECK(c == NULL);
  CHECK_CONTAINS(err, "hardware counters need libcupti.so");
  stand_ins();
  setenv("FAKE_CUPTI_SUBSCRIBE", "39", 1); /* another tool holds it */
  CHECK_EQ_INT(ag_ctr_open(NULL, 0, dir, &c, err, sizeof err), AG_HOST_EBUSY);
  CHECK_CONTAINS(err, "hardware counters need the process's one CUPTI subscriber");
  setenv("FAKE_CUPTI_SUBSCRIBE", "0", 1);
  /* RmProfilingAdminOnly: the range profiler's enable is refused */
  setenv("FAKE_CUPTI_RANGE_ENABLE", "35", 1);
  CHECK_EQ_INT(ag_ctr_open(NULL, 0, dir, &c, err, sizeof err), AG_HOST_EUNSUPPORTED);
  CHECK_CONTAINS(err, "cuptiRangeProfilerEnable failed: profiling is not permitted "
                      "(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)");
  CHECK_CONTAINS(err, "RmProfilingAdminOnly=1");
  CHECK_EQ_INT(host_run(dir, variant, "l", why, sizeof why), AG_HOST_EUNSUPPORTED);
  char p[1200], *txt = NULL;
  size_t len = 0;
  snprintf(p, sizeof p, "%s/host-error.txt", dir);
  CHECK_EQ_INT(ag_file_read(p, &txt, &len), 0); /* the Collect task's reason */
  CHECK_CONTAINS(txt, "profiling is not permitted");
  ag_free(txt);
  unsetenv("FAKE_CUPTI_RANGE_ENABLE");
  /* a device the range profiler cannot profile */
  setenv("FAKE_CUPTI_SUPPORTED", "vgpu", 1);
  CHECK_EQ_INT(ag_ctr_open(NULL, 0, dir, &c, err, sizeof err), AG_HOST_EUNSUPPORTED);
  CHECK_CONTAINS(err, "device 0 cannot be profiled with CUPTI's range profiler: this vGPU "
                      "configuration (profiling disabled)");
  unsetenv("FAKE_CUPTI_SUPPORTED");
  /* a CUPTI whose profiler does not support the device */
  setenv("FAKE_CUPTI_PROFILER", "27", 1);
  CHECK_EQ_INT(ag_ctr_open(NULL, 0, dir, &c, err, sizeof err), AG_HOST_EUNSUPPORTED);
  CHECK_CONTAINS(err, "cuptiProfilerInitialize failed: CUPTI_ERROR_NOT_SUPPORTED");
  setenv("FAKE_CUPTI_PROFILER", "0", 1);
  /* an unknown metric: its close matches */
  setenv("ARGUS_COUNTERS_METRICS", "lts__t_sector.sum", 1);
  CHECK_EQ_INT(ag_ctr_open(NULL, 0, dir, &c, err, sizeof err), AG_HOST_EINVAL);
  CHECK_CONTAINS(err, "'lts__t_sector.sum' is not a metric of chip GH100: did you mean "
                      "'lts__t_sectors.sum'");
  CHECK_EQ_INT(host_run(dir, variant, "l", why, sizeof why), AG_HOST_EINVAL);
  CHECK_CONTAINS(why, "did you mean 'lts__t_sectors.sum'");
  unsetenv("ARGUS_COUNTERS_METRICS");
  /* bad settings */
  setenv("ARGUS_COUNTERS_RANGE", "kernel", 1);
  CHECK_EQ_INT(ag_ctr_open(NULL, 0, dir, &c, err, sizeof err), AG_HOST_EINVAL);
  CHECK_CONTAINS(err, "ARGUS_COUNTERS_RANGE='kernel' is neither 'auto'");
  unsetenv("ARGUS_COUNTERS_RANGE");
  const char *bad_max[] = {"0", "65537", "8x"};
  for (int i = 0; i < 3; i++) {
    setenv("ARGUS_COUNTERS_MAX_RANGES", bad_max[i], 1);
    CHECK_EQ_INT(ag_ctr_open(NULL, 0, dir, &c, err, sizeof err), AG_HOST_EINVAL);
    CHECK_CONTAINS(err, "is not a whole number in [1, 65536]");
  }
  unsetenv("ARGUS_COUNTERS_MAX_RANGES");
  /* it opens, and closes */
  CHECK_EQ_INT(ag_ctr_open(NULL, 0, dir, &c, err, sizeof err), 0);
  CHECK(c && ag_ctr_passes(c) == 10 && ag_ctr_ranges(c) == 0);
  ag_ctr_close(c);
  /* user ranges open after the profiler starts (at the module's load) */
  setenv("ARGUS_COUNTERS_RANGE", "user", 1);
  CHECK_EQ_INT(ag_ctr_open(NULL, 0, dir, &c, err, sizeof err), 0);
  if (c) {
    CHECK_EQ_INT(ag_ctr_push(c, "early", err, sizeof err), AG_HOST_EINVAL);
    CHECK_CONTAINS(err, "ag_host_range_push('early') before the module's load");
    CHECK_EQ_INT(ag_ctr_begin(c, err, sizeof err), 0);
    CHECK_EQ_INT(ag_ctr_push(c, "a/b", err, sizeof err), AG_HOST_EINVAL);
    CHECK_CONTAINS(err, "'/' separates nested ranges");
    CHECK_EQ_INT(ag_ctr_push(c, "late", err, sizeof err), 0);
    CHECK_EQ_INT(ag_ctr_pop(c, err, sizeof err), 0);
  }
  ag_ctr_close(c);
  unsetenv("ARGUS_COUNTERS_RANGE");
  clear_env();
  rm_dir(dir);
}

/* ------------------------------------------- the application replay */

TEST(replay) {
  char dir[64], variant[128], err[2048];
  scratch(dir, variant, sizeof variant);
  stand_ins();
  setenv("FAKE_CUPTI_PASSES", "3", 1);
  const char *argv[] = {FAKE_HARNESS, "ranges", "module.cubin", NULL};
  ag_trace_run_opts o;
  hw_ctr_opts(&o, argv, variant, dir);
  o.counters_range = "user";
  o.counters_metrics = "lts__t_sectors.sum";
  /* a state file of another metric set is refused, not continued */
  setenv("ARGUS_COLLECT", "counters", 1);
  setenv("ARGUS_COUNTERS_RANGE", "user", 1);
  char rp[1200];
  snprintf(rp, sizeof rp, "%s/%s", dir, AG_CTR_REPLAY_FILE);
  { /* the stand-in's counter data: 16 + 256 ranges x 64 bytes */
    uint64_t tl = 5, hdr[3] = {1, 1, 16 + 256 * 64};
    ag_str f = AG_STR_INIT;
    ag_str_append(&f, "AGCTR01\n", 8);
    ag_str_append(&f, (const char *)&tl, 8);
    ag_str_append(&f, "a.sum", 5);
    ag_str_append(&f, (const char *)hdr, sizeof hdr);
    for (int i = 0; i < 16 + 256 * 64; i++)
      ag_str_append(&f, "", 1);
    ag_file_write_atomic(rp, f.p, f.len);
    ag_str_release(&f);
  }
  ag_ctr *c = NULL;
  CHECK_EQ_INT(ag_ctr_open(NULL, 0, dir, &c, err, sizeof err), AG_HOST_EINVAL);
  CHECK_CONTAINS(err, "holds the passes of another metric set");
  ag_file_write_atomic(rp, "garbage", 7);
  CHECK_EQ_INT(ag_ctr_open(NULL, 0, dir, &c, err, sizeof err), AG_HOST_EINVAL);
  CHECK_CONTAINS(err, "is not the counter data of an earlier pass");
  unsetenv("ARGUS_COLLECT");
  unsetenv("ARGUS_COUNTERS_RANGE");
  /* through ag_trace_run: a fresh start (the stale state removed), 3 runs */
  ag_trace_run_result res;
  ag_str why = AG_STR_INIT;
  int rc = ag_trace_run(&o, &res, &why);
  if (rc)
    fprintf(stderr, "%s\n", ag_str_cstr(&why));
  CHECK_EQ_INT(rc, 0);
  CHECK(res.evidence_path && strstr(res.evidence_path, AG_CTR_FILE));
  CHECK(access(rp, F_OK) != 0); /* the pass state is spent */
  ag_ctr_ev *e = hw_ctr_load(dir);
  CHECK(e != NULL);
  if (e) {
    CHECK_EQ_STR(e->range_mode, "user");
    CHECK_EQ_STR(e->replay, "application");
    CHECK_EQ_INT((int)e->passes, 3);
    CHECK_EQ_INT((int)e->harness_runs, 3);
    CHECK_EQ_INT((int)e->nranges, 1); /* the outermost level: "outer", with "inner" in it */
    if (e->nranges)
      CHECK_EQ_STR(e->ranges[0].name, "outer");
    CHECK(ag_ctr_ev_metric(e, "lts__t_sectors.sum") >= 0);
    json_t *sig = ag_ctr_signal(e);
    json_t *r0 = json_array_get(json_object_get(sig, "ranges"), 0);
    CHECK_EQ_STR(json_string_value(json_object_get(r0, "name")), "(range outer)");
    char *w = json_dumps(json_object_get(sig, "warnings"), 0);
    CHECK_CONTAINS(w, "each user range ran 3 times (application replay)");
    free(w);
    json_decref(sig);
  }
  ag_ctr_ev_free(e);
  ag_trace_run_result_release(&res);
  /* a one-pass set: one run */
  setenv("FAKE_CUPTI_PASSES", "1", 1);
  ag_str_clear(&why);
  CHECK_EQ_INT(ag_trace_run(&o, &res, &why), 0);
  e = hw_ctr_load(dir);
  CHECK(e && e->harness_runs == 1 && e->passes == 1);
  ag_ctr_ev_free(e);
  ag_trace_run_result_release(&res);
  ag_str_release(&why);
  clear_env();
  rm_dir(dir);
}

RUN_TESTS(T(catalog), T(synthetic), T(recorded), T(bad_evidence), T(collector_fake), T(failures), T(replay))
