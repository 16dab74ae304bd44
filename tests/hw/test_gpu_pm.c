/*
 * test_gpu_pm.c — PM sampling and the throughput signal on the H200
 * (docs/throughput.md), on the ground truth tests/data/cuda/pm_truth.cu
 * (region `stream`: DRAM copies; region `mma`: tensor-pipe MMAs and FMA
 * chains in registers; one CTA per SM, each phase several ms):
 *
 *   same_run   the traced variant under ARGUS_COLLECT=trace with ARGUS_PM=1:
 *              trace.agev and pm.json of one run, joined
 *   other_run  the user's build under ARGUS_COLLECT=pm, joined with a traced
 *              run of the same PTX (aligned launch by launch)
 *   observe    `argus observe --signals duration,throughput` from an empty
 *              workspace: the report's derived rates
 *
 *   overflow   the user's build sampled every 1 us (the shortest interval):
 *              the hardware buffer overflows within milliseconds; the run
 *              ends normally (no hang: the decode thread stops between
 *              images), the overflow is counted, what came before it kept
 *
 * Each asserts what the construction gives: both phases last at least 2 ms
 * and each has at least half the windows its length holds (and 10);
 * the DRAM read and write rates are higher in `stream` than in `mma`; the
 * tensor-pipe activity and the FMA rate the other way; at the default
 * interval no hardware-buffer overflow, no incomplete sample, no gap, and
 * both calibration kernels found in the samples. It prints the rates, the
 * sampler's clock offset and the windows, for docs/throughput.md.
 * The evidence goes to $ARGUS_EVIDENCE_OUT (pm.*). Exit 77 without a GPU.
 */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "argus/collect.h"
#include "argus/observe.h"
#include "argus/pm.h"
#include "argus/variant.h"
#include "check.h"
#include "report_util.h"
#include "../trace/gpu_util.h"
#include "../trace/trace_util.h"
#include "hw_util.h"
#include "pm_trace_util.h"
#include "pmsamp.h"

#ifndef PM_PTX
#define PM_PTX "pm_truth.ptx"
#endif
#ifndef PM_CUBIN
#define PM_CUBIN "pm_truth.cubin"
#endif

/* --n: the mma phase's steps, about as long as the stream phase (10 ms) */
static const char *const truth_args[] = {"--kernel", "pm_truth", "--n", "400000", NULL};

/* The harness under `mode` (more: extra environment), its output printed;
 * 0 when it ran and passed its own check. */
static int run(const char *dir, const char *mode, const char *variant, const char *const *more) {
  ag_str out = {0};
  ag_proc_result pr;
  int rc = hw_run(dir, mode, variant, PM_CUBIN, truth_args, more, &out, &pr);
  printf("%s", out.p ? out.p : "");
  ag_str_release(&out);
  if (!rc && !(pr.exited && pr.exit_code == 0)) {
    char p[1200], *t = NULL;
    size_t tl = 0;
    snprintf(p, sizeof p, "%s/host-error.txt", dir);
    if (!ag_file_read(p, &t, &tl))
      fprintf(stderr, "host-error.txt: %s\n", t);
    ag_free(t);
    rc = -1;
  }
  return rc;
}

/* The mean duration (ms) of region `name`'s occurrences. */
static double mean_ms(const ag_trace *tr, const char *name) {
  double mean, span;
  pm_region_ms(tr, name, &mean, &span);
  return mean;
}

/* What the construction gives, on a signal and the evidence it came from. */
static void check_truth(const json_t *sig, const ag_pm_ev *pm, const ag_trace *tr) {
  ag_str txt = AG_STR_INIT;
  ag_pm_text(sig, &txt);
  printf("%s", ag_str_cstr(&txt));
  ag_str_release(&txt);
  double ds = mean_ms(tr, "pm_truth/stream"), dm = mean_ms(tr, "pm_truth/mma");
  printf("@ pm: stream %.3f ms, mma %.3f ms per warp; %zu samples of %llu ns; clock offset %.0f "
         "ns (error %.0f ns, %d of %d calibrations); overflow %llu, incomplete %llu, gaps %zu\n",
         ds, dm, pm->nsamples, (unsigned long long)pm->interval_ns, pm->offset_ns, pm->error_ns,
         pm->ncal, pm->ncal_read, (unsigned long long)pm->overflow,
         (unsigned long long)pm->incomplete, pm->gaps);
  CHECK(ds >= 2.0 && dm >= 2.0); /* several ms each: hundreds of windows */
  CHECK_EQ_INT(pm->interval_ns, AG_PMS_DEFAULT_INTERVAL_NS);
  CHECK_EQ_INT(pm->overflow, 0);
  CHECK_EQ_INT(pm->incomplete, 0);
  CHECK_EQ_INT(pm->gaps, 0);
  CHECK_EQ_INT(pm->ncal, 2);
  const json_t *st = hw_region(sig, "pm_truth/stream"), *mm = hw_region(sig, "pm_truth/mma");
  CHECK(st && mm);
  if (!st || !mm)
    return;
  printf("@ pm: stream: %.0f windows, dram read %.1f GB/s, write %.1f GB/s, L2 %.1f GB/s, "
         "tensor %.1f %%, FMA %.1f Ginst/s; mma: %.0f windows, dram read %.1f GB/s, write %.1f "
         "GB/s, L2 %.1f GB/s, tensor %.1f %%, FMA %.1f Ginst/s\n",
         hw_num(st, "windows"), hw_num(st, "dram_read_GBps"), hw_num(st, "dram_write_GBps"),
         hw_num(st, "l2_GBps"), hw_num(st, "tensor_active_pct"), hw_num(st, "fma_ginst_per_s"),
         hw_num(mm, "windows"), hw_num(mm, "dram_read_GBps"), hw_num(mm, "dram_write_GBps"),
         hw_num(mm, "l2_GBps"), hw_num(mm, "tensor_active_pct"), hw_num(mm, "fma_ginst_per_s"));
  /* each phase has at least half the windows its length holds, and 10 */
  double want_s = fmax(10, 0.5 * ds * 1e6 / (double)pm->interval_ns),
         want_m = fmax(10, 0.5 * dm * 1e6 / (double)pm->interval_ns);
  CHECK(hw_num(st, "windows") >= want_s && hw_num(mm, "windows") >= want_m);
  CHECK(hw_num(st, "dram_read_GBps") > hw_num(mm, "dram_read_GBps"));
  CHECK(hw_num(st, "dram_write_GBps") > hw_num(mm, "dram_write_GBps"));
  CHECK(hw_num(mm, "tensor_active_pct") > hw_num(st, "tensor_active_pct"));
  CHECK(hw_num(mm, "fma_ginst_per_s") > hw_num(st, "fma_ginst_per_s"));
}

/* The decode thread's figures from dir/pm.json, printed for
 * docs/throughput.md. */
static void print_decode(const char *dir) {
  json_t *j = hw_load(dir, "pm.json");
  const json_t *pm = json_object_get(j, "pm"), *h = json_object_get(pm, "host_s");
  double n = json_number_value(json_object_get(pm, "samples_total"));
  double dec = json_number_value(json_object_get(h, "decode")),
         ev = json_number_value(json_object_get(h, "evaluate")),
         in = json_number_value(json_object_get(h, "init"));
  printf("@ pm decode: %.0f samples, interval %.0f ns, %.0f live decodes, overflow %.0f; host "
         "decode %.3f s, evaluate %.3f s, image reset %.3f s: %.0f samples/s\n",
         n, json_number_value(json_object_get(pm, "interval_ns")),
         json_number_value(json_object_get(pm, "live_decodes")),
         json_number_value(json_object_get(pm, "overflow")), dec, ev, in,
         dec + ev + in > 0 ? n / (dec + ev + in) : 0);
  CHECK(h != NULL);
  json_decref(j);
}

/* Loads the trace and the samples in dir (trace: dir2, or dir) and makes the
 * signal. */
static void join_and_check(const char *dir, const char *tdir, const char *pprog,
                           const char *tprog, const char *tag) {
  char p[1200], name[128];
  ag_diags d;
  ag_diags_init(&d);
  ag_pm_ev *pm = NULL;
  ag_evidence *ev = NULL;
  ag_trace *tr = NULL;
  json_t *sig = NULL;
  snprintf(p, sizeof p, "%s/pm.json", dir);
  snprintf(name, sizeof name, "pm.%s.json", tag);
  evidence_out(p, name);
  print_decode(dir);
  CHECK_EQ_INT(ag_pm_ev_load(p, &d, &pm), 0);
  snprintf(p, sizeof p, "%s/trace.agev", tdir);
  snprintf(name, sizeof name, "pm.%s.trace.agev", tag);
  evidence_out(p, name);
  CHECK_EQ_INT(ag_evidence_load(p, &d, &ev), 0);
  if (ev)
    CHECK_EQ_INT(ag_trace_decode(ev, &tr), 0);
  if (pm && tr) {
    ag_pm_signal_in in = {pm, tr, pprog, tprog, 0};
    CHECK_EQ_INT(ag_pm_signal(&in, &d, &sig), 0);
  }
  if (sig)
    check_truth(sig, pm, tr);
  else
    tu_print_diags(&d);
  json_decref(sig);
  ag_trace_free(tr);
  ag_evidence_free(ev);
  ag_pm_ev_free(pm);
  ag_diags_release(&d);
}

TEST(same_run) {
  gpu_or_skip("test_gpu_pm");
  char dir[] = "/tmp/argus-gpm-XXXXXX", v[1200];
  CHECK(mkdtemp(dir) != NULL);
  CHECK_EQ_INT(build_variant(PM_PTX, dir, "pm.traced", AG_VARIANT_TRACED, NULL, 0), 0);
  snprintf(v, sizeof v, "%s/pm.traced.cubin", dir);
  char sites[1280];
  snprintf(sites, sizeof sites, "ARGUS_SITES=%s/pm.traced.probes.json", dir);
  const char *more[] = {"ARGUS_PM=1", sites, NULL};
  int rc = run(dir, "trace", v, more);
  CHECK_EQ_INT(rc, 0);
  if (!rc)
    join_and_check(dir, dir, NULL, NULL, "same_run");
}

TEST(other_run) {
  gpu_or_skip("test_gpu_pm");
  char dir[] = "/tmp/argus-gpmo-XXXXXX", tdir[] = "/tmp/argus-gpmt-XXXXXX", v[1200];
  CHECK(mkdtemp(dir) != NULL && mkdtemp(tdir) != NULL);
  CHECK_EQ_INT(build_variant(PM_PTX, tdir, "pm.traced", AG_VARIANT_TRACED, NULL, 0), 0);
  snprintf(v, sizeof v, "%s/pm.traced.cubin", tdir);
  char sites[1280];
  snprintf(sites, sizeof sites, "ARGUS_SITES=%s/pm.traced.probes.json", tdir);
  const char *more[] = {sites, NULL};
  int rc = run(tdir, "trace", v, more);
  CHECK_EQ_INT(rc, 0);
  /* the user's build, sampled (the activity trace beside it) */
  CHECK_EQ_INT(run(dir, "pm", PM_CUBIN, NULL), 0);
  if (!rc) /* the same program: the PTX both builds came from */
    join_and_check(dir, tdir, "pm_truth@test", "pm_truth@test", "other_run");
}

TEST(overflow) {
  gpu_or_skip("test_gpu_pm");
  char dir[] = "/tmp/argus-gpmv-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  const char *more[] = {"ARGUS_PM_INTERVAL=1000", NULL};
  double t0 = (double)ag_now_ns() * 1e-9;
  CHECK_EQ_INT(run(dir, "pm", PM_CUBIN, more), 0);
  double took = (double)ag_now_ns() * 1e-9 - t0;
  print_decode(dir);
  char p[1200];
  snprintf(p, sizeof p, "%s/pm.json", dir);
  ag_diags d;
  ag_diags_init(&d);
  ag_pm_ev *pm = NULL;
  CHECK_EQ_INT(ag_pm_ev_load(p, &d, &pm), 0);
  if (pm) {
    printf("@ pm overflow: 1 us interval: %zu samples kept, overflow %llu, run %.1f s\n",
           pm->nsamples, (unsigned long long)pm->overflow, took);
    CHECK(pm->overflow >= 1);
    CHECK(pm->nsamples > 0);
  }
  CHECK(took < 60); /* the harness's own run is about a second */
  ag_pm_ev_free(pm);
  ag_diags_release(&d);
}

static double val(json_t *rep, const char *region, const char *stat) {
  json_t *v = report_value(rep, region, "throughput", stat);
  return v ? json_number_value(v) : NAN;
}

TEST(observe) {
  gpu_or_skip("test_gpu_pm");
  char dir[] = "/tmp/argus-gpmx-XXXXXX", spec[1200], ws[1200];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(spec, sizeof spec, "%s/spec.json", dir);
  snprintf(ws, sizeof ws, "%s/ws", dir);
  ag_str s = AG_STR_INIT;
  ag_str_printf(&s,
                "{\"name\": \"pm_truth\", \"module\": {\"ptx\": \"%s\"},\n"
                " \"run\": [\"%s\", \"--kernel\", \"pm_truth\", \"--n\", \"400000\", \"--module\", \"%s\"]}\n",
                PM_PTX, HW_HARNESS, PM_CUBIN);
  CHECK_EQ_INT(ag_file_write_atomic(spec, s.p, s.len), 0);
  ag_str_release(&s);
  static const char *sigs[] = {"duration", "throughput"};
  ag_observe_opts o = {.spec = spec, .workspace = ws, .region = "pm_truth", .signals = sigs,
                       .nsignals = 2, .ndevices = -1, .timeout_s = 300};
  ag_observe_result r;
  memset(&r, 0, sizeof r);
  ag_diags d;
  ag_diags_init(&d);
  int rc = ag_observe(&o, &d, &r);
  if (rc)
    tu_print_diags(&d);
  CHECK_EQ_INT(rc, 0);
  if (r.report) {
    char *txt = json_dumps(r.report, JSON_INDENT(1));
    const char *eo = getenv("ARGUS_EVIDENCE_OUT");
    if (eo && *eo && txt) {
      char to[1200];
      snprintf(to, sizeof to, "%s/pm.observe.report.json", eo);
      ag_file_write_atomic(to, txt, strlen(txt));
    }
    if (json_array_size(json_object_get(r.report, "missing")))
      fprintf(stderr, "%s\n", txt ? txt : "");
    free(txt);
    CHECK_EQ_INT(json_array_size(json_object_get(r.report, "missing")), 0);
    CHECK_EQ_INT(json_array_size(json_object_get(r.report, "not_joined")), 0);
    double sr = val(r.report, "pm_truth/stream", "dram_read_GBps");
    double mr = val(r.report, "pm_truth/mma", "dram_read_GBps");
    double st = val(r.report, "pm_truth/stream", "tensor_active_pct");
    double mt = val(r.report, "pm_truth/mma", "tensor_active_pct");
    printf("@ observe throughput: dram read stream %.1f, mma %.1f GB/s; tensor stream %.1f, mma "
           "%.1f %%; windows stream %.0f, mma %.0f\n",
           sr, mr, st, mt, val(r.report, "pm_truth/stream", "windows"),
           val(r.report, "pm_truth/mma", "windows"));
    CHECK(sr > mr);
    CHECK(mt > st);
  }
  ag_observe_result_release(&r);
  ag_diags_release(&d);
}

RUN_TESTS(T(same_run), T(other_run), T(observe), T(overflow))
