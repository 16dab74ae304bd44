/*
 * pm_join.c — the join of PM sampling windows with a region timeline
 * (argus/pm.h, docs/throughput.md, "The join"). Over plain arrays: windows
 * on the sampler's clock, spans (region occurrences, one per warp) on
 * %globaltimer, and the offset between the two clocks.
 *
 * For window w and region R: R's warp-time in w (the overlap of each of its
 * occurrences with w, summed over warps) over all resident warps'
 * warp-time in w (the kernels' root occurrences: a warp from entry to
 * exit) is R's share of what ran; times the share of w during which any
 * warp was resident (busy) it is the share of the window R covered. A
 * window counts for R when R covered at least `threshold` of it; R's counts
 * are summed over its windows, so its rates are those of windows where
 * (mostly) R ran. With a threshold above one half, two regions that do not
 * nest never share a window; a region nested in another shares the
 * parent's windows where it covers enough itself.
 *
 * Load: O(spans x windows each spans + windows x regions), one pass; spans
 * are occurrences (up to millions), windows up to 10^5. Called once per
 * signal.
 */
#include "argus/pm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The first window whose end (on %globaltimer) is after t. */
static size_t first_after(const ag_pm_join_in *in, double t) {
  size_t lo = 0, hi = in->nwin;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (in->w1[mid] - in->offset_ns > t)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

/* Adds the overlap of [t0, t1) with each window to acc[k * stride + col]. */
static void spread(const ag_pm_join_in *in, double t0, double t1, double *acc, size_t stride,
                   size_t col) {
  for (size_t k = first_after(in, t0); k < in->nwin; k++) {
    double a = in->w0[k] - in->offset_ns, b = in->w1[k] - in->offset_ns;
    if (a >= t1)
      break;
    double ov = fmin(t1, b) - fmax(t0, a);
    if (ov > 0)
      acc[k * stride + col] += ov;
  }
}

static int cmp_span(const void *x, const void *y) {
  const ag_pm_span *a = x, *b = y;
  return (a->t0 > b->t0) - (a->t0 < b->t0);
}

static int check(const ag_pm_join_in *in) {
  if (!(in->threshold > 0.5 && in->threshold <= 1.0) || in->nregions < 0 || in->nmetrics < 0 ||
      (in->nmetrics && in->nwin && !in->values))
    return AG_EINVAL;
  for (size_t k = 0; k < in->nwin; k++)
    if (!(in->w0[k] < in->w1[k]) || (k && in->w0[k] < in->w1[k - 1]))
      return AG_EINVAL;
  for (size_t i = 0; i < in->nspans; i++)
    if (in->spans[i].region < 0 || in->spans[i].region >= in->nregions ||
        !(in->spans[i].t1 >= in->spans[i].t0))
      return AG_EINVAL;
  return 0;
}

int ag_pm_join(const ag_pm_join_in *in, ag_pm_join_out *out) {
  memset(out, 0, sizeof *out);
  int rc = check(in);
  if (rc)
    return rc;
  size_t nw = in->nwin, nr = (size_t)in->nregions, nm = (size_t)in->nmetrics;
  out->nwin = nw;
  out->nregions = in->nregions;
  out->nmetrics = in->nmetrics;
  out->busy = ag_calloc(nw + 1, sizeof *out->busy);
  out->covered = ag_calloc(nw * nr + 1, sizeof *out->covered);
  out->regions = ag_calloc(nr + 1, sizeof *out->regions);
  double *warp_ns = ag_calloc(nw + 1, sizeof *warp_ns);
  int *root = ag_calloc(nr + 1, sizeof *root);
  ag_pm_span *warps = NULL;
  size_t nwarps = 0;
  rc = AG_ENOMEM;
  if (!out->busy || !out->covered || !out->regions || !warp_ns || !root)
    goto out;
  for (size_t r = 0; r < nr; r++)
    if (!(out->regions[r].sum = ag_calloc(nm + 1, sizeof(double))))
      goto out;
  for (size_t i = 0; i < in->nspans; i++) {
    const ag_pm_span *s = &in->spans[i];
    spread(in, s->t0, s->t1, out->covered, nr, (size_t)s->region);
    if (s->warp) {
      spread(in, s->t0, s->t1, warp_ns, 1, 0);
      root[s->region] = 1;
      nwarps++;
    }
  }
  /* busy: the union of the warps' lives, so overlapping warps count once */
  if (nwarps && !(warps = ag_malloc(nwarps * sizeof *warps)))
    goto out;
  nwarps = 0;
  for (size_t i = 0; i < in->nspans; i++)
    if (in->spans[i].warp)
      warps[nwarps++] = in->spans[i];
  qsort(warps, nwarps, sizeof *warps, cmp_span);
  for (size_t i = 0; i < nwarps;) {
    double a = warps[i].t0, b = warps[i].t1;
    for (i++; i < nwarps && warps[i].t0 <= b; i++)
      b = fmax(b, warps[i].t1);
    spread(in, a, b, out->busy, 1, 0);
  }
  for (size_t k = 0; k < nw; k++) {
    double len = in->w1[k] - in->w0[k];
    out->busy[k] = fmin(1.0, out->busy[k] / len);
    int qualified = 0;
    for (size_t r = 0; r < nr; r++) {
      double *c = &out->covered[k * nr + r];
      *c = warp_ns[k] > 0 ? fmin(1.0, *c / warp_ns[k]) * out->busy[k] : 0;
      ag_pm_region_join *g = &out->regions[r];
      if (*c > 0)
        g->touched++;
      g->covered_max = fmax(g->covered_max, *c);
      if (*c < in->threshold - 1e-9)
        continue;
      g->windows++;
      g->ns += len;
      g->covered_mean += *c;
      for (size_t m = 0; m < nm; m++)
        g->sum[m] += in->values[k * nm + m];
      qualified |= !root[r];
    }
    if (warp_ns[k] <= 0)
      out->idle_windows++;
    else if (!qualified)
      out->mixed_windows++;
  }
  for (size_t r = 0; r < nr; r++)
    if (out->regions[r].windows)
      out->regions[r].covered_mean /= (double)out->regions[r].windows;
  rc = 0;
out:
  ag_free(warp_ns);
  ag_free(root);
  ag_free(warps);
  if (rc)
    ag_pm_join_release(out);
  return rc;
}

void ag_pm_join_release(ag_pm_join_out *out) {
  if (!out)
    return;
  for (int r = 0; out->regions && r < out->nregions; r++)
    ag_free(out->regions[r].sum);
  ag_free(out->regions);
  ag_free(out->busy);
  ag_free(out->covered);
  memset(out, 0, sizeof *out);
}
