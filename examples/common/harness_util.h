/*
 * harness_util.h - host helpers shared by the Hopper examples' harnesses
 * (gemm_tma, tma_probe): exact FP16 inputs, a float comparison for qsort,
 * a 2-D FP16 TMA tensor map with 128-byte swizzle, and the CPU reference.
 */
#ifndef ARGUS_EXAMPLES_HARNESS_UTIL_H
#define ARGUS_EXAMPLES_HARNESS_UTIL_H

#include <cuda.h>
#include <stdint.h>
#include <stdio.h>

/* value k/8 for k in -8..8 as IEEE half bits (exact) */
static uint16_t ex_half_of_eighths(int k) {
  if (k == 0)
    return 0;
  uint16_t sign = k < 0 ? 0x8000 : 0;
  int a = k < 0 ? -k : k; /* a/8 = m * 2^e with 1 <= m < 2 */
  int e = 0;
  while ((1 << (e + 1)) <= a)
    e++;
  /* a = 2^e * (1 + f), value = 2^(e-3) * (1 + f) */
  int exp = e - 3 + 15;
  int frac = ((a << 10) >> e) & 0x3FF;
  return (uint16_t)(sign | (exp << 10) | frac);
}

static int ex_cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* A tensor map over a rows x cols FP16 matrix (cols contiguous) with
 * box_rows x box_cols boxes and 128-byte swizzle; 0, or 1 after saying why
 * (prefixed with `who`). */
static int ex_make_map(CUtensorMap *map, CUdeviceptr base, int rows, int cols, int box_rows,
                       int box_cols, const char *who) {
  cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
  cuuint64_t strides[1] = {(cuuint64_t)cols * 2};
  cuuint32_t box[2] = {(cuuint32_t)box_cols, (cuuint32_t)box_rows};
  cuuint32_t estr[2] = {1, 1};
  CUresult e = cuTensorMapEncodeTiled(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, (void *)base, dims,
                                      strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                      CU_TENSOR_MAP_SWIZZLE_128B,
                                      CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (e != CUDA_SUCCESS) {
    const char *s = NULL;
    cuGetErrorString(e, &s);
    fprintf(stderr, "%s: cuTensorMapEncodeTiled failed: %s\n", who, s ? s : "?");
    return 1;
  }
  return 0;
}

/* The harness's CPU reference: C = (Ak * Bk^T) / 64 exactly (the inputs are
 * k/8 with k in -8..8, so every partial sum is exact in FP32). Returns the
 * mismatches; the first five are printed (prefixed with `who`). */
static long ex_check_gemm(const signed char *Ak, const signed char *Bk, const float *C, int M,
                          int N, int K, const char *who) {
  long bad = 0;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      long s = 0;
      const signed char *a = Ak + (size_t)i * K, *b = Bk + (size_t)j * K;
      for (int k = 0; k < K; k++)
        s += a[k] * b[k];
      float want = (float)s / 64.0f, got = C[(size_t)i * N + j];
      if (!(got == want)) {
        if (bad < 5)
          fprintf(stderr, "%s: C[%d][%d] = %.9g, expected %.9g\n", who, i, j, got, want);
        bad++;
      }
    }
  return bad;
}

#endif
