/*
 * attention_ref.h — what examples/tile/attention.tile computes, written out
 * by hand for its tests (test_gpu_tile_run, test_tile_interp): the kernel
 * on the GPU and the value reference on the CPU are both compared with it.
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

/* What attention.tile computes (head dim D: 64 or 128; Bc 32, gqa 4), for
 * query block qb of head h: per warp's 16 rows, S = Q K^T per kv tile; the
 * thread holding S[m][c] in the mma C layout has mx = the max over its 2
 * rows x Bc/4 columns; P = exp2(0.18 S - mx) rounded to bf16; O = O exp2(mx)
 * + P V. Returns the mismatches against O (bf16) within 2e-2 + 2e-2 |ref|. */
static long attention_ref_d(const uint16_t *Q, const uint16_t *K, const uint16_t *V,
                            const uint16_t *O, int hq, int hkv, int skv, int qb, int h, int D) {
  enum { DMAX = 128, BC = 32, GQA = 4 };
  int hk = h / GQA;
  long bad = 0;
  if (D < 1 || D > DMAX)
    return -1;
  for (int w = 0; w < 4; w++) {
    static double o[16][DMAX];
    memset(o, 0, sizeof o);
    for (int t = 0; t < skv / BC; t++) {
      double s[16][BC], mx[32];
      float p[16][BC];
      for (int m = 0; m < 16; m++)
        for (int c = 0; c < BC; c++) {
          double a = 0;
          long qrow = ((long)(qb * 64 + w * 16 + m) * hq + h) * D;
          long krow = ((long)(t * BC + c) * hkv + hk) * D;
          for (int dd = 0; dd < D; dd++)
            a += (double)bf2f(Q[qrow + dd]) * bf2f(K[krow + dd]);
          s[m][c] = (float)a;
        }
      for (int l = 0; l < 32; l++) {
        mx[l] = -INFINITY;
        for (int m = l / 4; m < 16; m += 8)
          for (int c = 0; c < BC; c++)
            if (c % 8 / 2 == l % 4 && s[m][c] > mx[l])
              mx[l] = s[m][c];
      }
      for (int m = 0; m < 16; m++)
        for (int c = 0; c < BC; c++)
          p[m][c] = bf2f(f2bf(exp2f((float)s[m][c] * 0.18f - (float)mx[(m % 8) * 4 + c % 8 / 2])));
      for (int m = 0; m < 16; m++)
        for (int dd = 0; dd < D; dd++) {
          o[m][dd] *= exp2f((float)mx[(m % 8) * 4 + dd % 8 / 2]);
          for (int c = 0; c < BC; c++)
            o[m][dd] += (double)p[m][c] * bf2f(V[((long)(t * BC + c) * hkv + hk) * D + dd]);
        }
    }
    for (int m = 0; m < 16; m++)
      for (int dd = 0; dd < D; dd++) {
        double got = bf2f(O[((long)(qb * 64 + w * 16 + m) * hq + h) * D + dd]), want = o[m][dd];
        if (!(fabs(got - want) <= 2e-2 + 2e-2 * fabs(want))) {
          if (!bad)
            printf("  attention: first mismatch at O[%d, %d, %d]: %.6g, expected %.6g\n",
                   qb * 64 + w * 16 + m, h, dd, got, want);
          bad++;
        }
      }
  }
  return bad;
}
static inline long attention_ref(const uint16_t *Q, const uint16_t *K, const uint16_t *V,
                                 const uint16_t *O, int hq, int hkv, int skv, int qb, int h) {
  return attention_ref_d(Q, K, V, O, hq, hkv, skv, qb, h, 64);
}

#endif
