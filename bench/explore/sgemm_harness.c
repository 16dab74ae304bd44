/*
 * sgemm_harness.c — a harness (libargus_host) for fp32 SGEMM kernels of the
 * siboehm/SGEMM_CUDA shape: kernel(int M, int N, int K, float alpha,
 * float *A, float *B, float beta, float *C), row-major, one CTA per
 * BM x BN tile of C. Used by bench/explore/public_subsets.sh on a copy of
 * that repository's kernel 10 (warptiling) out of tree; no kernel code of
 * theirs is here. Checks 64 elements of C against a CPU reference and prints
 * {"median_us": X} over --reps launches after one warm-up.
 *
 *   sgemm_harness --module FILE --kernel NAME [--size S] [--bm 128 --bn 128]
 *                 [--threads 128] [--reps R]
 * Exit 0: results match; 1: mismatch or CUDA error; 2: usage.
 */
#include <cuda.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argus/host.h"

#define CK(call)                                                                   \
  do {                                                                             \
    CUresult e_ = (call);                                                          \
    if (e_ != CUDA_SUCCESS) {                                                      \
      const char *s_ = NULL;                                                       \
      cuGetErrorString(e_, &s_);                                                   \
      fprintf(stderr, "sgemm_harness: %s failed: %s\n", #call, s_ ? s_ : "?");     \
      return 1;                                                                    \
    }                                                                              \
  } while (0)
#define AH(call)                                                                   \
  do {                                                                             \
    if ((call) != 0) {                                                             \
      fprintf(stderr, "sgemm_harness: %s failed: %s\n", #call, ag_host_errmsg(host)); \
      return 1;                                                                    \
    }                                                                              \
  } while (0)

static int cmpf(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int S = 4096, bm = 128, bn = 128, threads = 128, reps = 20;
  const char *module = NULL, *kernel = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--module"))
      module = argv[i + 1];
    else if (!strcmp(argv[i], "--kernel"))
      kernel = argv[i + 1];
    else if (!strcmp(argv[i], "--size"))
      S = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--bm"))
      bm = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--bn"))
      bn = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--threads"))
      threads = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--reps"))
      reps = atoi(argv[i + 1]);
    else
      module = NULL, i = argc;
  }
  if (!module || !kernel || S <= 0 || bm <= 0 || bn <= 0 || S % bm || S % bn || reps < 1 ||
      threads <= 0) {
    fprintf(stderr, "usage: sgemm_harness --module FILE --kernel NAME [--size S] [--bm N] "
                    "[--bn N] [--threads N] [--reps R] (S a multiple of bm and bn)\n");
    return 2;
  }
  size_t n = (size_t)S * S;
  float *A = malloc(n * 4), *B = malloc(n * 4), *C = malloc(n * 4);
  float *times = malloc(sizeof(float) * (size_t)reps);
  if (!A || !B || !C || !times)
    return 1;
  unsigned x = 12345;
  for (size_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    A[i] = (float)((int)(x >> 24) % 9 - 4) / 4.0f;
    x = x * 1664525u + 1013904223u;
    B[i] = (float)((int)(x >> 24) % 9 - 4) / 4.0f;
  }
  ag_host *host = NULL;
  ag_host_module *mod = NULL;
  ag_host_kernel *fn = NULL;
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr dA, dB, dC;
  AH(ag_host_open(&host));
  CK(cuInit(0));
  CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  AH(ag_host_load(host, module, &mod));
  AH(ag_host_kernel_get(mod, kernel, &fn));
  CK(cuMemAlloc(&dA, n * 4));
  CK(cuMemAlloc(&dB, n * 4));
  CK(cuMemAlloc(&dC, n * 4));
  CK(cuMemcpyHtoD(dA, A, n * 4));
  CK(cuMemcpyHtoD(dB, B, n * 4));
  CK(cuMemsetD32(dC, 0, n));
  float alpha = 1.0f, beta = 0.0f;
  void *args[] = {&S, &S, &S, &alpha, &dA, &dB, &beta, &dC};
  ag_host_dim grid = {(unsigned)(S / bn), (unsigned)(S / bm), 1}, block = {(unsigned)threads, 1, 1};
  CUevent e0, e1;
  CK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
  CK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
  AH(ag_host_launch(fn, grid, block, 0, NULL, args));
  CK(cuCtxSynchronize());
  for (int r = 0; r < reps; r++) {
    CK(cuEventRecord(e0, 0));
    AH(ag_host_launch(fn, grid, block, 0, NULL, args));
    CK(cuEventRecord(e1, 0));
    CK(cuEventSynchronize(e1));
    CK(cuEventElapsedTime(&times[r], e0, e1));
  }
  CK(cuMemcpyDtoH(C, dC, n * 4));
  long bad = 0;
  for (int s = 0; s < 64; s++) { /* exact: every partial sum is a multiple of 1/16 */
    size_t i = (size_t)(s * 7919) % (size_t)S, j = (size_t)(s * 104729) % (size_t)S;
    double ref = 0;
    for (int k = 0; k < S; k++)
      ref += (double)A[i * S + k] * B[(size_t)k * S + j];
    if (fabs(ref - C[i * S + j]) > 1e-3 * (fabs(ref) + 1))
      bad++;
  }
  qsort(times, (size_t)reps, sizeof *times, cmpf);
  printf("{\"size\":%d,\"reps\":%d,\"median_us\":%.3f,\"mismatches\":%ld}\n", S, reps,
         times[reps / 2] * 1000.0, bad);
  AH(ag_host_finish(host));
  ag_host_close(host);
  return bad ? 1 : 0;
}
