/*
 * attention_ref.h — what examples/tile/attention.tile must compute: true
 * attention, softmax(Q K^T / sqrt(d)) V in double, for its tests
 * (test_gpu_tile_run, test_tile_interp; attention_hopper.tile too): the kernel on the GPU and the value
 * reference on the CPU are both compared with it.
 * Include once per test program.
 */
#ifndef ARGUS_TEST_ATTENTION_REF_H
#define ARGUS_TEST_ATTENTION_REF_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../src/tile/run/run_int.h" /* the bf16 conversions argus run uses */
#define bf2f ag__bf2f
#define f2bf ag__f2bf

/* True attention for query block qb (64 rows) of head h, head dim D, keys
 * and values of kv head h / 4 (attention.tile's gqa): O[r] = sum_j p_j V[j]
 * / sum_j p_j with p_j = exp(S[r, j] - max_j S[r, j]), S = Q K^T / sqrt(D),
 * all in double from the bf16 inputs (causal: j runs over keys 0 .. the
 * query's row, sq = skv, SDPA's is_causal); it knows nothing of the kernel's
 * tiling, lanes or exp2. Returns the mismatches against O (bf16), and prints
 * the first with its coordinates.
 *
 * Tolerance (bf16 output): |got - want| <= 4e-3 |want| + 4e-3 vmax, vmax =
 * max |V| of the head. The kernel rounds P to bf16 for the P V mma (2^-9
 * relative each, so at most 2^-9 vmax on O, as P / l sums to 1) and O to
 * bf16 (2^-9 |O|), and sums in f32 in its own order (2^-24 relative a
 * term); 4e-3 is twice 2^-9. A kernel without the row sum, with a per-lane max, or with the
 * accumulator not rescaled misses it by far more (the tests check both). */
static long attention_ref_dc(const uint16_t *Q, const uint16_t *K, const uint16_t *V,
                             const uint16_t *O, int hq, int hkv, int skv, int qb, int h, int D,
                             int causal) {
  enum { DMAX = 128, GQA = 4, SKVMAX = 1 << 16 };
  int hk = h / GQA;
  long bad = 0;
  if (D < 1 || D > DMAX || skv < 1 || skv > SKVMAX)
    return -1;
  static double s[SKVMAX];
  double vmax = 0, scale = 1.0 / sqrt((double)D);
  for (int j = 0; j < skv; j++)
    for (int dd = 0; dd < D; dd++)
      vmax = fmax(vmax, fabs(bf2f(V[((long)j * hkv + hk) * D + dd])));
  for (int m = 0; m < 64; m++) {
    long qrow = ((long)(qb * 64 + m) * hq + h) * D;
    double mx = -INFINITY, l = 0, o[DMAX] = {0};
    int nj = causal ? qb * 64 + m + 1 : skv; /* causal: keys 0 .. the query's row */
    if (nj > skv)
      return -1;
    for (int j = 0; j < nj; j++) {
      double a = 0;
      long krow = ((long)j * hkv + hk) * D;
      for (int dd = 0; dd < D; dd++)
        a += (double)bf2f(Q[qrow + dd]) * bf2f(K[krow + dd]);
      s[j] = a * scale;
      mx = fmax(mx, s[j]);
    }
    for (int j = 0; j < nj; j++) {
      double p = exp(s[j] - mx);
      l += p;
      for (int dd = 0; dd < D; dd++)
        o[dd] += p * bf2f(V[((long)j * hkv + hk) * D + dd]);
    }
    for (int dd = 0; dd < D; dd++) {
      double got = bf2f(O[qrow + dd]), want = o[dd] / l;
      if (!(fabs(got - want) <= 4e-3 * fabs(want) + 4e-3 * vmax)) {
        if (!bad)
          printf("  attention: first mismatch at O[%d, %d, %d]: %.6g, expected %.6g\n",
                 qb * 64 + m, h, dd, got, want);
        bad++;
      }
    }
  }
  return bad;
}
static inline long attention_ref_d(const uint16_t *Q, const uint16_t *K, const uint16_t *V,
                                   const uint16_t *O, int hq, int hkv, int skv, int qb, int h,
                                   int D) {
  return attention_ref_dc(Q, K, V, O, hq, hkv, skv, qb, h, D, 0);
}
static inline long attention_ref(const uint16_t *Q, const uint16_t *K, const uint16_t *V,
                                 const uint16_t *O, int hq, int hkv, int skv, int qb, int h) {
  return attention_ref_d(Q, K, V, O, hq, hkv, skv, qb, h, 64);
}

#endif
