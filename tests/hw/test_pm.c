/*
 * test_pm.c — PM sampling's throughput signal on the CPU
 * (docs/throughput.md):
 *
 *   join_*        the join over synthetic windows and region spans whose
 *                 answers are known: full and partial cover, a window two
 *                 regions share, a region shorter than a window, a nested
 *                 region, idle time, the clock offset (a wrong offset moves
 *                 the answer), bad input
 *   calib_*       the sampler's clock found from the calibration kernels'
 *                 edges in the samples
 *   evidence_*    a synthetic pm.json (made here, marked "synthetic": never
 *                 recorded on a GPU) decoded, its losses reported, bad
 *                 files refused with the reason
 *   signal_*      the signal on a synthetic evidence file and a synthetic
 *                 trace: the rates per region, a program version refused
 *   plan          `argus plan --signals duration,throughput` and the
 *                 adapter's declarations
 *   collector_*   the collector's failure paths (stand-in CUPTI)
 */
#include <math.h>
#include <unistd.h>

#include "argus/pm.h"
#include "argus/collect.h"
#include "check.h"
#include "evwrite.h"
#include "hw_util.h"
#include "pmsamp.h"

#define CHECK_NEAR(a, b, tol)                                                  \
  do {                                                                         \
    double chk_x = (a), chk_y = (b);                                           \
    if (!(fabs(chk_x - chk_y) <= (tol))) {                                     \
      fprintf(stderr, "%s:%d: %s ~= %s failed: %.9g vs %.9g\n", __FILE__,      \
              __LINE__, #a, #b, chk_x, chk_y);                                 \
      chk__failed_asserts++;                                                   \
      chk__cur_failed = 1;                                                     \
    }                                                                          \
  } while (0)

/* ------------------------------------------------------------- the join */

#define W 10000.0 /* a 10 us window */

enum { ROOT, A, B, C, NR };

/* The sampler's windows of a join test and their values (two metrics). */
typedef struct wins {
  double w0[8], w1[8], v[16];
  size_t n;
} wins;

/* nwin windows of W ns from `origin` on the sampler's clock; value m of
 * window k is (k + 1) * (m + 1). */
static wins windows(size_t nwin, double origin) {
  wins w;
  memset(&w, 0, sizeof w);
  w.n = nwin;
  for (size_t k = 0; k < nwin; k++) {
    w.w0[k] = origin + (double)k * W;
    w.w1[k] = w.w0[k] + W;
    for (int m = 0; m < 2; m++)
      w.v[k * 2 + (size_t)m] = (double)(k + 1) * (m + 1);
  }
  return w;
}

/* The join of the ns spans s (regions of NR) over w, the sampler's clock
 * `offset` ns ahead of %globaltimer. */
static int join(const wins *w, double offset, const ag_pm_span *s, size_t ns,
                ag_pm_join_out *out) {
  ag_pm_join_in in = {w->w0, w->w1, w->n, w->v, 2, offset, s, ns, NR, AG_PM_THRESHOLD};
  return ag_pm_join(&in, out);
}

/* One warp: A for 25 us, then B for 25 us. Windows 0-1 are A's, 3-4 B's;
 * window 2 is half each: mixed, no one's. A's counts are windows 0 and 1's. */
TEST(join_partial) {
  wins w = windows(6, 0);
  ag_pm_span s[] = {{0, 50000, ROOT, 1}, {0, 25000, A, 0}, {25000, 50000, B, 0}};
  ag_pm_join_out o;
  CHECK_EQ_INT(join(&w, 0, s, 3, &o), 0);
  CHECK_EQ_INT(o.regions[A].windows, 2);
  CHECK_EQ_INT(o.regions[A].touched, 3);
  CHECK_EQ_INT(o.regions[B].windows, 2);
  CHECK_EQ_INT(o.regions[ROOT].windows, 5);
  CHECK_NEAR(o.covered[2 * NR + A], 0.5, 1e-12);
  CHECK_NEAR(o.covered[2 * NR + B], 0.5, 1e-12);
  CHECK_NEAR(o.regions[A].covered_mean, 1.0, 1e-12);
  CHECK_NEAR(o.regions[A].ns, 2 * W, 1e-9);
  CHECK_NEAR(o.regions[A].sum[0], 1 + 2, 1e-12); /* windows 0 and 1 */
  CHECK_NEAR(o.regions[A].sum[1], 2 + 4, 1e-12);
  CHECK_NEAR(o.regions[B].sum[0], 4 + 5, 1e-12); /* windows 3 and 4 */
  CHECK_EQ_INT(o.mixed_windows, 1);
  CHECK_EQ_INT(o.idle_windows, 1); /* window 5 */
  CHECK_EQ_INT(o.regions[C].touched, 0);
  ag_pm_join_release(&o);
}

/* A window two regions share across warps: 4 warps in A and 1 in B cover
 * 0.8 and 0.2 (A's window, at the threshold); 3 and 1 cover 0.75 and 0.25
 * (no one's); 1 and 1, a half each. */
TEST(join_two_regions) {
  wins w = windows(3, 0);
  ag_pm_span s[32];
  size_t n = 0;
  int na[3] = {4, 3, 1};
  for (int k = 0; k < 3; k++) {
    double a = k * W, b = a + W;
    for (int i = 0; i < na[k]; i++) {
      s[n++] = (ag_pm_span){a, b, ROOT, 1};
      s[n++] = (ag_pm_span){a, b, A, 0};
    }
    s[n++] = (ag_pm_span){a, b, ROOT, 1};
    s[n++] = (ag_pm_span){a, b, B, 0};
  }
  ag_pm_join_out o;
  CHECK_EQ_INT(join(&w, 0, s, n, &o), 0);
  CHECK_NEAR(o.covered[0 * NR + A], 0.8, 1e-12);
  CHECK_NEAR(o.covered[1 * NR + A], 0.75, 1e-12);
  CHECK_NEAR(o.covered[1 * NR + B], 0.25, 1e-12);
  CHECK_NEAR(o.covered[2 * NR + A], 0.5, 1e-12);
  CHECK_EQ_INT(o.regions[A].windows, 1);
  CHECK_EQ_INT(o.regions[A].touched, 3);
  CHECK_EQ_INT(o.regions[B].windows, 0);
  CHECK_NEAR(o.regions[B].covered_max, 0.5, 1e-12);
  CHECK_EQ_INT(o.mixed_windows, 2);
  ag_pm_join_release(&o);
}

/* A region shorter than a window (4 us in 10 us windows) never has a window
 * of its own, wherever it falls; it is still seen (touched, its largest
 * cover). Idle time dilutes: a warp resident for half a window covers half
 * of it, whatever it runs. */
TEST(join_short_and_idle) {
  wins w = windows(5, 0);
  ag_pm_span s[] = {{0, 45000, ROOT, 1}, {0, 41000, A, 0}, {41000, 45000, C, 0}};
  ag_pm_join_out o;
  CHECK_EQ_INT(join(&w, 0, s, 3, &o), 0);
  CHECK_EQ_INT(o.regions[C].windows, 0);
  CHECK_EQ_INT(o.regions[C].touched, 1);
  CHECK_NEAR(o.regions[C].covered_max, 0.4, 1e-12);
  CHECK_NEAR(o.busy[4], 0.5, 1e-12);
  CHECK_EQ_INT(o.regions[A].windows, 4);
  CHECK_EQ_INT(o.regions[ROOT].windows, 4); /* window 4: half idle */
  CHECK_EQ_INT(o.idle_windows, 0);
  ag_pm_join_release(&o);
  /* two warps whose lives overlap count once toward busy */
  ag_pm_span t[] = {{0, 30000, ROOT, 1}, {10000, 40000, ROOT, 1}, {0, 30000, A, 0},
                    {10000, 40000, A, 0}};
  CHECK_EQ_INT(join(&w, 0, t, 4, &o), 0);
  CHECK_NEAR(o.busy[1], 1.0, 1e-12);
  CHECK_NEAR(o.busy[3], 1.0, 1e-12);
  CHECK_EQ_INT(o.idle_windows, 1);
  CHECK_EQ_INT(o.regions[A].windows, 4); /* both warps run A all their lives */
  ag_pm_join_release(&o);
  /* two warps resident in the same half of a window: busy for half of it */
  ag_pm_span u[] = {{0, 15000, ROOT, 1}, {5000, 15000, ROOT, 1}};
  CHECK_EQ_INT(join(&w, 0, u, 2, &o), 0);
  CHECK_NEAR(o.busy[1], 0.5, 1e-12);
  CHECK_EQ_INT(o.regions[ROOT].windows, 1);
  ag_pm_join_release(&o);
}

/* A region nested in another: the child's windows are the parent's too. */
TEST(join_nested) {
  wins w = windows(4, 0);
  ag_pm_span s[] = {{0, 40000, ROOT, 1}, {0, 40000, A, 0}, {10000, 30000, B, 0}};
  ag_pm_join_out o;
  CHECK_EQ_INT(join(&w, 0, s, 3, &o), 0);
  CHECK_EQ_INT(o.regions[A].windows, 4);
  CHECK_EQ_INT(o.regions[B].windows, 2);
  CHECK_EQ_INT(o.mixed_windows, 0);
  ag_pm_join_release(&o);
}

/* The sampler's clock runs 1 ms ahead of %globaltimer: with that offset the
 * answer is join_partial's; a wrong one (20 us off) moves it. */
TEST(join_offset) {
  wins w = windows(6, 1e6);
  ag_pm_span s[] = {{0, 50000, ROOT, 1}, {0, 25000, A, 0}, {25000, 50000, B, 0}};
  ag_pm_join_out o;
  CHECK_EQ_INT(join(&w, 1e6, s, 3, &o), 0);
  CHECK_EQ_INT(o.regions[A].windows, 2);
  CHECK_NEAR(o.regions[A].sum[0], 3, 1e-12);
  CHECK_EQ_INT(o.regions[B].windows, 2);
  ag_pm_join_release(&o);
  CHECK_EQ_INT(join(&w, 1e6 - 20000, s, 3, &o), 0);
  /* the windows now fall 20 us later on the timeline: A's part is mixed */
  CHECK_EQ_INT(o.regions[A].windows, 0);
  CHECK_EQ_INT(o.regions[B].windows, 2);
  CHECK_NEAR(o.regions[B].sum[0], 2 + 3, 1e-12); /* windows 1 and 2, not 3 and 4 */
  ag_pm_join_release(&o);
  CHECK_EQ_INT(join(&w, 0, s, 3, &o), 0); /* no offset: nothing joins */
  CHECK_EQ_INT(o.regions[A].touched, 0);
  CHECK_EQ_INT(o.idle_windows, 6);
  ag_pm_join_release(&o);
}

TEST(join_bad_input) {
  wins w = {{0, 10, 15}, {10, 20, 30}, {0}, 3};
  ag_pm_span s[] = {{0, 5, ROOT, 1}};
  ag_pm_join_out o;
  CHECK_EQ_INT(join(&w, 0, s, 1, &o), AG_EINVAL); /* overlapping windows */
  CHECK(o.regions == NULL);
  w.w0[2] = 20;
  CHECK_EQ_INT(join(&w, 0, s, 1, &o), 0);
  ag_pm_join_release(&o);
  ag_pm_span bad[] = {{0, 5, NR, 0}};
  CHECK_EQ_INT(join(&w, 0, bad, 1, &o), AG_EINVAL);
  ag_pm_span back[] = {{5, 4, A, 0}};
  CHECK_EQ_INT(join(&w, 0, back, 1, &o), AG_EINVAL);
  ag_pm_join_in in = {w.w0, w.w1, 3, w.v, 2, 0, s, 1, NR, 0.5};
  CHECK_EQ_INT(ag_pm_join(&in, &o), AG_EINVAL); /* two regions could share a window */
}

/* --------------------------------------------- synthetic evidence files */

/* The world the synthetic files describe (%globaltimer ns): a kernel
 * `pm_truth` of 4 warps on 2 SMs whose warps run region `stream` for
 * 100 us, then `mma` for 100 us; one-thread calibration kernels of 100 us
 * before and after it. The sampler's clock runs SAMPLER_OFF ahead of
 * %globaltimer; its windows are 10 us; in `stream` windows the DRAM reads
 * 30 MB (3,000 GB/s), in `mma` ones the tensor pipe is active 60 % of the
 * cycles (of 1.98 GHz SMs). The counts of each window follow from the
 * share of it each phase covered. */
#define G 1000000000000.0 /* %globaltimer at the open calibration */
#define SAMPLER_OFF 5000.0
#define CUPTI_OFF -41000.0
#define SMS 132

typedef struct world {
  double base;          /* the kernel's first warp enters at base + 300 us */
  double stretch;       /* the sampled run's phases, stretched */
  double grid0;         /* the first window starts here (%globaltimer) */
  int nwin;
  int64_t pid;
  int activity;         /* kernel records beside the samples */
  const char *metric0;  /* NULL: dram__bytes_read.sum */
  int overflow, overlap;
} world;

static double ovl(double a0, double a1, double b0, double b1) {
  return fmax(0, fmin(a1, b1) - fmax(a0, b0));
}

/* pm.json of world w at path (marked synthetic). */
static void write_pm(const char *path, const world *w) {
  double k0 = w->base + 300e3, s = w->stretch;
  double st0 = k0 + 10e3 * s, mm0 = k0 + 110e3 * s, mm1 = k0 + 210e3 * s;
  double kend = k0 + 215.096e3 * s;
  double cal[2][2] = {{w->base, w->base + 100e3}, {w->base + 600e3, w->base + 700e3}};
  json_t *samples = json_array();
  for (int k = 0; k < w->nwin; k++) {
    double a = w->grid0 + 10e3 * k, b = a + 10e3;
    double fs = ovl(a, b, st0, mm0) / 10e3, fm = ovl(a, b, mm0, mm1) / 10e3;
    double fk = ovl(a, b, k0, kend) / 10e3;
    double fc = (ovl(a, b, cal[0][0] - 400, cal[0][1] + 300) +
                 ovl(a, b, cal[1][0] - 400, cal[1][1] + 300)) / 10e3;
    double el = 19800; /* cycles at 1.98 GHz */
    json_t *row = json_pack("[I,I,f,f,f,f,f,f,f,f]", (json_int_t)llround(a + SAMPLER_OFF),
                            (json_int_t)llround(b + SAMPLER_OFF), fs * 30e6 + fm * 1e5,
                            fs * 29e6, fs * 60e6 + fm * 1e6, fk * el + fc * el / SMS,
                            fmax(fk, fc) * el, el, fm * 0.6 * el, fs * 1e5 + fm * 5e6);
    json_array_append_new(samples, row);
  }
  if (w->overlap) /* a window that starts inside the one before */
    json_integer_set(json_array_get(json_array_get(samples, 3), 0),
                     json_integer_value(json_array_get(json_array_get(samples, 2), 0)) + 5);
  json_t *metrics = json_pack("[s,s,s,s,s,s,s,s]", w->metric0 ? w->metric0 : "dram__bytes_read.sum",
                              "dram__bytes_write.sum", "lts__t_bytes.sum",
                              "sm__cycles_active.avg", "sm__cycles_active.max",
                              "sm__cycles_elapsed.avg",
                              "sm__pipe_tensor_cycles_active_realtime.avg",
                              "TPC.TriageCompute.sm__inst_executed_pipe_fma_realtime.sum");
  json_t *calib = json_array(), *recs = json_array();
  for (int i = 0; i < 2; i++) {
    json_int_t c0 = w->activity ? (json_int_t)(cal[i][0] - 500 + CUPTI_OFF) : 0;
    json_int_t c1 = w->activity ? (json_int_t)(cal[i][1] + 500 + CUPTI_OFF) : 0;
    json_array_append_new(calib, json_pack("{s:s,s:I,s:I,s:I,s:I}", "when",
                                           i ? "finish" : "open", "gt_first",
                                           (json_int_t)cal[i][0], "gt_last",
                                           (json_int_t)cal[i][1], "cupti_start", c0,
                                           "cupti_end", c1));
    json_array_append_new(recs, json_pack("{s:s,s:i,s:i,s:I,s:I,s:s,s:[i,i,i],s:[i,i,i],s:i}",
                                          "kind", "kernel", "corr", 1 + 2 * i, "stream", 7,
                                          "start", c0, "end", c1, "name", "argus_calibrate",
                                          "grid", 1, 1, 1, "block", 1, 1, 1, "registers", 8));
  }
  json_array_append_new(recs, json_pack("{s:s,s:i,s:i,s:I,s:I,s:s,s:[i,i,i],s:[i,i,i],s:i}",
                                        "kind", "kernel", "corr", 2, "stream", 7, "start",
                                        (json_int_t)(k0 + CUPTI_OFF), "end",
                                        (json_int_t)(kend + CUPTI_OFF), "name", "pm_truth",
                                        "grid", 2, 1, 1, "block", 64, 1, 1, "registers", 32));
  json_t *root = json_pack(
      "{s:s,s:i,s:s,s:I,s:{s:s,s:i},s:{s:s},s:i,s:[{s:i,s:s}],s:o,s:b,s:{s:s,s:s,s:i,s:o,"
      "s:i,s:i,s:o}}",
      "format", "argus-pm", "version", 1, "synthetic",
      "made by tests/hw/test_pm.c from a described world: never recorded on a GPU", "pid",
      (json_int_t)w->pid, "device", "name", "Simulated", "sm_count", SMS, "variant", "id",
      "v-truth", "launches_total", 1, "launches", "launch", 0, "kernel", "pm_truth",
      "calibration", calib, "activity", w->activity, "pm", "chip", "GH100", "trigger", "time",
      "interval_ns", 10000, "metrics", metrics, "overflow", w->overflow, "incomplete_samples",
      0, "samples", samples);
  if (w->activity) {
    json_object_set_new(root, "dropped_records", json_integer(0));
    json_object_set_new(root, "records", recs);
  } else {
    json_decref(recs);
  }
  CHECK(root && json_dump_file(root, path, 0) == 0);
  json_decref(root);
}

/* regions: 0 pm_truth (root), 1 pm_truth/stream, 2 pm_truth/mma */
static const char *truth_probes =
    "{\"format\":\"argus-probes\",\"version\":1,"
    "\"regions\":[{\"index\":0,\"id\":\"0x1\",\"name\":\"pm_truth\",\"qname\":\"pm_truth\","
    "\"parent\":-1,\"function\":\"pm_truth\",\"root\":true},"
    "{\"index\":1,\"id\":\"0x2\",\"name\":\"stream\",\"qname\":\"pm_truth/stream\",\"parent\":0,"
    "\"function\":\"pm_truth\",\"root\":false},"
    "{\"index\":2,\"id\":\"0x3\",\"name\":\"mma\",\"qname\":\"pm_truth/mma\",\"parent\":0,"
    "\"function\":\"pm_truth\",\"root\":false}],"
    "\"sites\":[{\"site\":0,\"kind\":\"region\",\"region\":1,\"line\":10,\"iter\":false},"
    "{\"site\":1,\"kind\":\"region\",\"region\":2,\"line\":20,\"iter\":false}],"
    "\"roles\":[]}";

/* The traced run of world w's kernel (unstretched, at w->base): 4 warps on
 * SMs 0 and 1 entering 0, 32, 64, 96 ns after the first, at 1 GHz. */
static void write_trace(const char *path, double base, int64_t pid) {
  ag_evw *ew = NULL;
  char err[256];
  CHECK_EQ_INT(ag_evw_open(path, &ew, err, sizeof err), 0);
  ag_ev_meta meta[4];
  ag_ev_record rec[4 * 4];
  memset(meta, 0, sizeof meta);
  memset(rec, 0, sizeof rec);
  for (int wp = 0; wp < 4; wp++) {
    uint64_t c0 = 1000 + 32 * (uint64_t)wp; /* clock == globaltimer - base - 300 us + 1000 */
    ag_ev_meta *m = &meta[wp];
    m->clock_entry = c0;
    m->gtime_entry = (uint64_t)(base + 300e3) + 32 * (uint64_t)wp;
    m->clock_exit = c0 + 215000;
    m->gtime_exit = m->gtime_entry + 215000;
    m->smid = (uint32_t)wp / 2;
    m->count = m->max_count = 2;
    m->flags = AG_EV_EXITED;
    rec[wp * 4 + 0] = (ag_ev_record){(uint32_t)(c0 + 10000), 0, (uint32_t)(c0 + 110000),
                                     AG_EV_NO_ITER ^ AG_EV_ITER_BIAS};
    rec[wp * 4 + 1] = (ag_ev_record){(uint32_t)(c0 + 110000), 1, (uint32_t)(c0 + 210000),
                                     AG_EV_NO_ITER ^ AG_EV_ITER_BIAS};
  }
  ag_evw_launch L = {0, "pm_truth", {2, 1, 1}, {64, 1, 1}, 0, 4, 2, 4, 4, meta, rec,
                     0, 0, 0, 0, 0};
  CHECK_EQ_INT(ag_evw_launch_add(ew, &L, err, sizeof err), 0);
  ag_jb j = {0};
  ag_jb_printf(&j, "\"pid\":%lld,\"device\":{\"name\":\"Simulated\"},\"clock\":{\"sm_hz\":1e9},"
                   "\"variant\":{\"id\":\"v-truth\"},\"probes\":%s",
               (long long)pid, truth_probes);
  CHECK_EQ_INT(ag_evw_close(ew, j.p, 1, err, sizeof err), 0);
  ag_jb_release(&j);
}

static world same_run(void) {
  return (world){.base = G, .stretch = 1, .grid0 = G - 50e3, .nwin = 85, .pid = 4242};
}

static char pm_path[256], tr_path[256];

/* The synthetic pm.json of world w, written and decoded: it must load
 * (checked; the diagnostics printed when it does not). */
static ag_pm_ev *load_pm(const world *w) {
  ag_diags d;
  ag_diags_init(&d);
  snprintf(pm_path, sizeof pm_path, "/tmp/argus-test-pm-%ld.json", (long)getpid());
  write_pm(pm_path, w);
  ag_pm_ev *e = NULL;
  if (ag_pm_ev_load(pm_path, &d, &e)) {
    ag_str s = AG_STR_INIT;
    ag_diags_format(&d, &s);
    fprintf(stderr, "%s", ag_str_cstr(&s));
    ag_str_release(&s);
  }
  CHECK(e != NULL);
  unlink(pm_path);
  ag_diags_release(&d);
  return e;
}

/* The calibration kernels' edges, read from the windows: the sampler's
 * clock is SAMPLER_OFF ahead, less the 50 ns by which the kernels' activity
 * is off-center (400 ns before the first edge, 300 after the last). */
TEST(calib_edges) {
  world w = same_run();
  ag_pm_ev *e = load_pm(&w);
  if (!e)
    return;
  CHECK_EQ_INT(e->nsamples, 85);
  CHECK_EQ_INT(e->ncal, 2);
  CHECK_NEAR(e->offset_ns, SAMPLER_OFF - 50, 1);
  CHECK_NEAR(e->error_ns, 350 + 32, 1);
  CHECK_EQ_INT(e->cal[0].other_start, (int64_t)(G - 400 + SAMPLER_OFF));
  CHECK_EQ_INT(e->cal[1].other_end, (int64_t)(G + 700e3 + 300 + SAMPLER_OFF));
  /* the run of a kernel that is not 100 us long is not a calibration */
  int64_t a, b;
  CHECK_EQ_INT(ag_pm_calib_span(e->samples, e->nsamples, 0, 50e3, &a, &b), 0);
  CHECK(a == 0 && b == 0);
  ag_pm_ev_free(e);
}

TEST(evidence_synthetic) {
  world w = same_run();
  w.overflow = 2;
  ag_pm_ev *e = load_pm(&w);
  if (!e)
    return;
  CHECK_EQ_STR(e->chip, "GH100");
  CHECK_EQ_STR(e->variant_id, "v-truth");
  CHECK_EQ_INT(e->interval_ns, 10000);
  CHECK_EQ_INT(e->overflow, 2);
  CHECK_EQ_INT(e->gaps, 0);
  CHECK(e->sys == NULL); /* no activity trace beside it */
  CHECK_NEAR(e->samples[36].v[AG_PM_DRAM_READ], 30e6, 1e-3); /* the first stream window */
  ag_pm_ev_free(e);
  /* the activity trace beside it: the kernels on CUPTI's clock */
  w.activity = 1;
  e = load_pm(&w);
  CHECK(e && e->sys);
  if (e && e->sys) {
    CHECK_NEAR(e->sys->offset_ns, CUPTI_OFF, 1);
    CHECK_EQ_INT(e->sys->nrecs, 3);
  }
  ag_pm_ev_free(e);
  /* a gap: a window dropped from the middle */
  ag_diags d;
  ag_diags_init(&d);
  snprintf(pm_path, sizeof pm_path, "/tmp/argus-test-pm-%ld.json", (long)getpid());
  write_pm(pm_path, &w);
  json_t *j = json_load_file(pm_path, 0, NULL);
  json_array_remove(json_object_get(json_object_get(j, "pm"), "samples"), 20);
  char *txt = json_dumps(j, 0);
  CHECK_EQ_INT(ag_pm_ev_load_mem(txt, strlen(txt), "pm.json", &d, &e), 0);
  CHECK(e && e->gaps == 1 && e->gap_ns == 10000);
  ag_pm_ev_free(e);
  free(txt);
  json_decref(j);
  unlink(pm_path);
  ag_diags_release(&d);
}

static void expect_bad(const world *w, const char *edit_from, const char *edit_to,
                       const char *want) {
  snprintf(pm_path, sizeof pm_path, "/tmp/argus-test-pm-%ld.json", (long)getpid());
  write_pm(pm_path, w);
  char *txt = NULL;
  size_t len = 0;
  CHECK_EQ_INT(ag_file_read(pm_path, &txt, &len), 0);
  ag_str t = AG_STR_INIT;
  ag_str_puts(&t, txt ? txt : "");
  if (edit_from) {
    char *at = strstr(t.p, edit_from);
    CHECK(at != NULL);
    if (at) {
      ag_str u = AG_STR_INIT;
      ag_str_printf(&u, "%.*s%s%s", (int)(at - t.p), t.p, edit_to, at + strlen(edit_from));
      ag_str_release(&t);
      t = u;
    }
  }
  ag_diags d;
  ag_diags_init(&d);
  ag_pm_ev *e = NULL;
  CHECK(ag_pm_ev_load_mem(t.p, t.len, "pm.json", &d, &e) != 0);
  CHECK(e == NULL);
  ag_str msg = AG_STR_INIT;
  ag_diags_format(&d, &msg);
  CHECK_CONTAINS(ag_str_cstr(&msg), want);
  ag_str_release(&msg);
  ag_diags_release(&d);
  ag_str_release(&t);
  ag_free(txt);
  unlink(pm_path);
}

TEST(evidence_bad) {
  world w = same_run();
  expect_bad(&w, "\"argus-pm\"", "\"argus-system\"",
             "not PM-sampling evidence (format is not \"argus-pm\")");
  w.metric0 = "dram__bytes.sum";
  expect_bad(&w, NULL, NULL, "pm.metrics[0] is 'dram__bytes.sum', this argus reads "
                             "'dram__bytes_read.sum' there");
  w.metric0 = NULL;
  w.overlap = 1;
  expect_bad(&w, NULL, NULL, "pm.samples: windows overlap");
  w.overlap = 0;
  expect_bad(&w, "\"samples\": [[", "\"samples\": [[1, ",
             "pm.samples[0]: needs [start, end, 8 counts]");
  expect_bad(&w, "\"version\": 1", "\"version\": 2", "PM-sampling evidence version 2");
}

/* ------------------------------------------------------------ the signal */

static json_t *signal_of(const world *w, double trace_base, int64_t trace_pid,
                         const char *pm_prog, const char *tr_prog, double wrong_offset,
                         ag_diags *d, int *rc) {
  ag_pm_ev *e = load_pm(w);
  snprintf(tr_path, sizeof tr_path, "/tmp/argus-test-pmtr-%ld.agev", (long)getpid());
  write_trace(tr_path, trace_base, trace_pid);
  ag_evidence *ev = NULL;
  ag_trace *tr = NULL;
  json_t *sig = NULL;
  *rc = -1;
  CHECK_EQ_INT(ag_evidence_load(tr_path, d, &ev), 0);
  if (ev)
    CHECK_EQ_INT(ag_trace_decode(ev, &tr), 0);
  if (e && tr) {
    if (wrong_offset)
      e->offset_ns += wrong_offset;
    ag_pm_signal_in in = {e, tr, pm_prog, tr_prog, 0};
    *rc = ag_pm_signal(&in, d, &sig);
  }
  ag_trace_free(tr);
  ag_evidence_free(ev);
  ag_pm_ev_free(e);
  unlink(tr_path);
  return sig;
}

/* The same run: stream's windows read 3,000 GB/s and no tensor work, mma's
 * the other way; 10 windows each. */
TEST(signal_same_run) {
  world w = same_run();
  ag_diags d;
  ag_diags_init(&d);
  int rc;
  json_t *sig = signal_of(&w, G, 4242, NULL, NULL, 0, &d, &rc);
  CHECK_EQ_INT(rc, 0);
  if (!sig)
    return;
  const json_t *st = hw_region(sig, "pm_truth/stream"), *mm = hw_region(sig, "pm_truth/mma");
  CHECK(st && mm);
  CHECK_EQ_STR(json_string_value(json_object_get(sig, "qual")), "derived");
  CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(sig, "alignment"), "mode")),
               "same run");
  CHECK_EQ_INT(hw_num(st, "windows"), 10);
  CHECK_EQ_INT(hw_num(mm, "windows"), 10);
  CHECK_NEAR(hw_num(st, "dram_read_GBps"), 3000, 1e-6);
  CHECK_NEAR(hw_num(st, "dram_write_GBps"), 2900, 1e-6);
  CHECK_NEAR(hw_num(st, "tensor_active_pct"), 0, 1e-9);
  CHECK_NEAR(hw_num(mm, "tensor_active_pct"), 60, 1e-6);
  CHECK_NEAR(hw_num(mm, "dram_read_GBps"), 10, 1e-6);
  CHECK_NEAR(hw_num(mm, "fma_ginst_per_s"), 500, 1e-6);
  CHECK_NEAR(hw_num(st, "sm_active_pct"), 100, 1e-6);
  CHECK(hw_num(st, "covered_share") > 0.99);
  CHECK_CONTAINS(json_string_value(json_object_get(sig, "rule")), "at least 80 %");
  ag_str txt = AG_STR_INIT;
  CHECK_EQ_INT(ag_pm_text(sig, &txt), 0);
  CHECK_CONTAINS(ag_str_cstr(&txt), "pm_truth/stream");
  CHECK_CONTAINS(ag_str_cstr(&txt), "3000.0");
  printf("%s", ag_str_cstr(&txt));
  ag_str_release(&txt);
  json_decref(sig);
  /* a clock offset 30 us wrong: the phases fall on other windows */
  sig = signal_of(&w, G, 4242, NULL, NULL, 30e3, &d, &rc);
  st = hw_region(sig, "pm_truth/stream");
  CHECK(st && hw_num(st, "dram_read_GBps") < 0.9 * 3000); /* 7 stream windows, 3 mma */
  json_decref(sig);
  ag_diags_release(&d);
}

/* Another run of the same program, 1 s later and 3 % slower: aligned
 * launch by launch through the kernel records, stretched. */
TEST(signal_other_run) {
  world w = same_run();
  w.base = 2 * G;
  w.stretch = 1.03;
  w.grid0 = 2 * G + 300e3 + 10.3e3 - 36 * 10e3; /* stream starts on a window's edge */
  w.pid = 999;
  w.activity = 1;
  ag_diags d;
  ag_diags_init(&d);
  int rc;
  json_t *sig = signal_of(&w, G, 4242, "prog@1", "prog@1", 0, &d, &rc);
  CHECK_EQ_INT(rc, 0);
  if (!sig)
    return;
  const json_t *al = json_object_get(sig, "alignment");
  CHECK_EQ_STR(json_string_value(json_object_get(al, "mode")), "per launch");
  CHECK_NEAR(hw_num(json_array_get(json_object_get(al, "launches"), 0), "stretch"), 1.03, 1e-5);
  const json_t *st = hw_region(sig, "pm_truth/stream"), *mm = hw_region(sig, "pm_truth/mma");
  CHECK(st && mm);
  CHECK_EQ_INT(hw_num(st, "windows"), 10);
  CHECK_EQ_INT(hw_num(mm, "windows"), 9);
  CHECK_NEAR(hw_num(st, "dram_read_GBps"), 3000, 1e-6);
  CHECK_NEAR(hw_num(mm, "tensor_active_pct"), 60, 1e-6);
  json_decref(sig);
  /* another program version: refused, naming both */
  sig = signal_of(&w, G, 4242, "prog@1", "prog@2", 0, &d, &rc);
  CHECK_EQ_INT(rc, AG_EINVAL);
  CHECK(sig == NULL);
  ag_str msg = AG_STR_INIT;
  ag_diags_format(&d, &msg);
  CHECK_CONTAINS(ag_str_cstr(&msg), "the region timeline is of program version prog@2, the PM "
                                    "samples of prog@1: not joined");
  /* versions unknown across runs; no kernel records to align with */
  ag_diags_release(&d);
  ag_diags_init(&d);
  sig = signal_of(&w, G, 4242, NULL, "prog@1", 0, &d, &rc);
  CHECK_EQ_INT(rc, AG_EINVAL);
  w.activity = 0;
  sig = signal_of(&w, G, 4242, "prog@1", "prog@1", 0, &d, &rc);
  CHECK_EQ_INT(rc, AG_EINVAL);
  ag_str_clear(&msg);
  ag_diags_format(&d, &msg);
  CHECK_CONTAINS(ag_str_cstr(&msg), "are of different runs whose program versions are not both "
                                    "known");
  CHECK_CONTAINS(ag_str_cstr(&msg), "no kernel records to align it with");
  ag_str_release(&msg);
  ag_diags_release(&d);
}

/* A short region's warning; the losses said */
TEST(signal_losses) {
  world w = same_run();
  w.overflow = 1;
  ag_diags d;
  ag_diags_init(&d);
  int rc;
  json_t *sig = signal_of(&w, G, 4242, NULL, NULL, 0, &d, &rc);
  CHECK_EQ_INT(rc, 0);
  ag_str txt = AG_STR_INIT;
  size_t i;
  json_t *x;
  json_array_foreach(json_object_get(sig, "warnings"), i, x)
      ag_str_printf(&txt, "%s\n", json_string_value(x));
  CHECK_CONTAINS(ag_str_cstr(&txt), "hardware buffer overflowed (1 decode)");
  CHECK_EQ_INT(hw_num(sig, "overflow"), 1);
  ag_str_release(&txt);
  json_decref(sig);
  ag_diags_release(&d);
}

/* --------------------------------------------------------- the collector */

TEST(collector_no_cupti) {
  setenv("ARGUS_LIBCUPTI", "/nonexistent/libcupti.so", 1);
  char err[1024] = "";
  ag_pms *p = NULL;
  CHECK_EQ_INT(ag_pms_open(0, &p, err, sizeof err), AG_HOST_ENODEV);
  CHECK(p == NULL);
  CHECK_CONTAINS(err, "no CUPTI: cannot load /nonexistent/libcupti.so");
  CHECK_CONTAINS(err, "PM sampling needs libcupti.so");
  unsetenv("ARGUS_LIBCUPTI");
}

TEST(collector_not_permitted) {
  setenv("ARGUS_LIBCUPTI", FAKE_CUPTI, 1);
  setenv("FAKE_CUPTI_PROFILER", "0", 1);
  setenv("FAKE_CUPTI_SUBSCRIBE", "0", 1);
  char err[1024] = "";
  ag_pms *p = NULL;
  CHECK_EQ_INT(ag_pms_open(0, &p, err, sizeof err), AG_HOST_EUNSUPPORTED);
  CHECK(p == NULL);
  CHECK_CONTAINS(err, "cuptiPmSamplingGetCounterAvailability(&ca) failed: profiling is not "
                      "permitted");
  CHECK_CONTAINS(err, "RmProfilingAdminOnly=1");
  /* through the host runtime: a failed task with the reason, with or
   * without the activity trace beside the sampler */
  char why[1200];
  unsetenv("NVTX_INJECTION64_PATH");
  CHECK_EQ_INT(host_open("pm", why, sizeof why), AG_HOST_EUNSUPPORTED);
  CHECK_CONTAINS(why, "profiling is not permitted");
  /* the activity trace beside PM sampling opened first, kernels only: no
   * NVTX injection (docs/throughput.md) */
  CHECK(getenv("NVTX_INJECTION64_PATH") == NULL);
  setenv("ARGUS_PM_ACTIVITY", "0", 1);
  CHECK_EQ_INT(host_open("pm", why, sizeof why), AG_HOST_EUNSUPPORTED);
  CHECK_CONTAINS(why, "profiling is not permitted");
  unsetenv("ARGUS_PM_ACTIVITY");
  /* another tool holds the subscriber the activity trace needs */
  unsetenv("FAKE_CUPTI_SUBSCRIBE");
  CHECK_EQ_INT(host_open("pm", why, sizeof why), AG_HOST_EBUSY);
  CHECK_CONTAINS(why, "the activity trace needs the process's one CUPTI subscriber");
  unsetenv("FAKE_CUPTI_PROFILER");
  unsetenv("ARGUS_LIBCUPTI");
}

TEST(collector_bad_config) {
  setenv("ARGUS_LIBCUPTI", FAKE_CUPTI, 1);
  char err[1024] = "";
  ag_pms *p = NULL;
  const char *bad[] = {"999", "1000000001", "10us", "-5"};
  for (size_t i = 0; i < 4; i++) {
    setenv("ARGUS_PM_INTERVAL", bad[i], 1);
    CHECK_EQ_INT(ag_pms_open(0, &p, err, sizeof err), AG_HOST_EINVAL);
    CHECK_CONTAINS(err, "is not a whole number of ns in [1000, 1000000000]");
  }
  unsetenv("ARGUS_PM_INTERVAL");
  setenv("ARGUS_PM_BUFFER_MB", "0", 1);
  CHECK_EQ_INT(ag_pms_open(0, &p, err, sizeof err), AG_HOST_EINVAL);
  CHECK_CONTAINS(err, "ARGUS_PM_BUFFER_MB='0' is not a whole number of MiB in [1, 16384]");
  unsetenv("ARGUS_PM_BUFFER_MB");
  unsetenv("ARGUS_LIBCUPTI");
  /* the collection is known by name, and its file */
  CHECK_EQ_STR(ag_trace_run_evidence_file("pm"), "pm.json");
  setenv("ARGUS_COLLECT", "pmx", 1);
  ag_host *h = NULL;
  CHECK_EQ_INT(ag_host_open(&h), AG_HOST_EUNSUPPORTED);
  CHECK_CONTAINS(ag_host_errmsg(h), "(known: trace, time, map, sass, system, stalls, pm, counters)");
  ag_host_close(h);
  unsetenv("ARGUS_COLLECT");
}

RUN_TESTS(T(join_partial), T(join_two_regions), T(join_short_and_idle), T(join_nested),
          T(join_offset), T(join_bad_input), T(calib_edges), T(evidence_synthetic),
          T(evidence_bad), T(signal_same_run), T(signal_other_run), T(signal_losses),
          T(collector_no_cupti), T(collector_not_permitted), T(collector_bad_config))
