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
#include "check.h"

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

/* nwin windows of W ns from `origin` on the sampler's clock; value m of
 * window k is (k + 1) * (m + 1). */
static void windows(size_t nwin, double origin, double *w0, double *w1, double *v, int nm) {
  for (size_t k = 0; k < nwin; k++) {
    w0[k] = origin + (double)k * W;
    w1[k] = w0[k] + W;
    for (int m = 0; m < nm; m++)
      v[k * (size_t)nm + (size_t)m] = (double)(k + 1) * (m + 1);
  }
}

static int join(const double *w0, const double *w1, const double *v, size_t nwin,
                double offset, const ag_pm_span *s, size_t ns, int nr, ag_pm_join_out *out) {
  ag_pm_join_in in = {w0, w1, nwin, v, 2, offset, s, ns, nr, AG_PM_THRESHOLD};
  return ag_pm_join(&in, out);
}

enum { ROOT, A, B, C, NR };

/* One warp: A for 25 us, then B for 25 us. Windows 0-1 are A's, 3-4 B's;
 * window 2 is half each: mixed, no one's. A's counts are windows 0 and 1's. */
TEST(join_partial) {
  double w0[6], w1[6], v[12];
  windows(6, 0, w0, w1, v, 2);
  ag_pm_span s[] = {{0, 50000, ROOT, 1}, {0, 25000, A, 0}, {25000, 50000, B, 0}};
  ag_pm_join_out o;
  CHECK_EQ_INT(join(w0, w1, v, 6, 0, s, 3, NR, &o), 0);
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
  double w0[3], w1[3], v[6];
  windows(3, 0, w0, w1, v, 2);
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
  CHECK_EQ_INT(join(w0, w1, v, 3, 0, s, n, NR, &o), 0);
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
  double w0[5], w1[5], v[10];
  windows(5, 0, w0, w1, v, 2);
  ag_pm_span s[] = {{0, 45000, ROOT, 1}, {0, 41000, A, 0}, {41000, 45000, C, 0}};
  ag_pm_join_out o;
  CHECK_EQ_INT(join(w0, w1, v, 5, 0, s, 3, NR, &o), 0);
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
  CHECK_EQ_INT(join(w0, w1, v, 5, 0, t, 4, NR, &o), 0);
  CHECK_NEAR(o.busy[1], 1.0, 1e-12);
  CHECK_NEAR(o.busy[3], 1.0, 1e-12);
  CHECK_EQ_INT(o.idle_windows, 1);
  CHECK_EQ_INT(o.regions[A].windows, 4); /* both warps run A all their lives */
  ag_pm_join_release(&o);
}

/* A region nested in another: the child's windows are the parent's too. */
TEST(join_nested) {
  double w0[4], w1[4], v[8];
  windows(4, 0, w0, w1, v, 2);
  ag_pm_span s[] = {{0, 40000, ROOT, 1}, {0, 40000, A, 0}, {10000, 30000, B, 0}};
  ag_pm_join_out o;
  CHECK_EQ_INT(join(w0, w1, v, 4, 0, s, 3, NR, &o), 0);
  CHECK_EQ_INT(o.regions[A].windows, 4);
  CHECK_EQ_INT(o.regions[B].windows, 2);
  CHECK_EQ_INT(o.mixed_windows, 0);
  ag_pm_join_release(&o);
}

/* The sampler's clock runs 1 ms ahead of %globaltimer: with that offset the
 * answer is join_partial's; a wrong one (20 us off) moves it. */
TEST(join_offset) {
  double w0[6], w1[6], v[12];
  windows(6, 1e6, w0, w1, v, 2);
  ag_pm_span s[] = {{0, 50000, ROOT, 1}, {0, 25000, A, 0}, {25000, 50000, B, 0}};
  ag_pm_join_out o;
  CHECK_EQ_INT(join(w0, w1, v, 6, 1e6, s, 3, NR, &o), 0);
  CHECK_EQ_INT(o.regions[A].windows, 2);
  CHECK_NEAR(o.regions[A].sum[0], 3, 1e-12);
  CHECK_EQ_INT(o.regions[B].windows, 2);
  ag_pm_join_release(&o);
  CHECK_EQ_INT(join(w0, w1, v, 6, 1e6 - 20000, s, 3, NR, &o), 0);
  /* the windows now fall 20 us later on the timeline: A's part is mixed */
  CHECK_EQ_INT(o.regions[A].windows, 0);
  CHECK_EQ_INT(o.regions[B].windows, 2);
  CHECK_NEAR(o.regions[B].sum[0], 2 + 3, 1e-12); /* windows 1 and 2, not 3 and 4 */
  ag_pm_join_release(&o);
  CHECK_EQ_INT(join(w0, w1, v, 6, 0, s, 3, NR, &o), 0); /* no offset: nothing joins */
  CHECK_EQ_INT(o.regions[A].touched, 0);
  CHECK_EQ_INT(o.idle_windows, 6);
  ag_pm_join_release(&o);
}

TEST(join_bad_input) {
  double w0[3] = {0, 10, 15}, w1[3] = {10, 20, 30}, v[6] = {0};
  ag_pm_span s[] = {{0, 5, ROOT, 1}};
  ag_pm_join_out o;
  CHECK_EQ_INT(join(w0, w1, v, 3, 0, s, 1, NR, &o), AG_EINVAL); /* overlapping windows */
  CHECK(o.regions == NULL);
  w0[2] = 20;
  CHECK_EQ_INT(join(w0, w1, v, 3, 0, s, 1, NR, &o), 0);
  ag_pm_join_release(&o);
  ag_pm_span bad[] = {{0, 5, NR, 0}};
  CHECK_EQ_INT(join(w0, w1, v, 3, 0, bad, 1, NR, &o), AG_EINVAL);
  ag_pm_span back[] = {{5, 4, A, 0}};
  CHECK_EQ_INT(join(w0, w1, v, 3, 0, back, 1, NR, &o), AG_EINVAL);
  ag_pm_join_in in = {w0, w1, 3, v, 2, 0, s, 1, NR, 0.5};
  CHECK_EQ_INT(ag_pm_join(&in, &o), AG_EINVAL); /* two regions could share a window */
}

RUN_TESTS(T(join_partial), T(join_two_regions), T(join_short_and_idle), T(join_nested),
          T(join_offset), T(join_bad_input))
