/*
 * wgmma_harness.c — a harness (libargus_host) for bf16 TMA + wgmma GEMM
 * kernels of the pranjalssh/fast.cu matmulKernel4 shape: kernel(int M,
 * int N, int K, bf16 *C, const CUtensorMap *A, const CUtensorMap *B), A
 * M x K and B N x K (K contiguous), C column-major, 128 x 128 tiles with
 * 64-wide K blocks through 128-byte swizzled TMA boxes, one CTA per tile.
 * Used by bench/explore/public_subsets.sh on a copy of that kernel out of
 * tree; no kernel code of theirs is here. Checks 64 elements of C against a
 * CPU reference (small integers: exact in fp32, bf16 output rounding
 * allowed) and prints {"median_us": X} over --reps launches after a warm-up.
 *
 *   wgmma_harness --module FILE --kernel NAME [--size S] [--smem BYTES]
 *                 [--threads 256] [--reps R] [--batch B] [--k7]
 * --batch B: times B back-to-back launches as one (reps / B times, each a
 * launch's share), so host work per launch shows only when it outruns the GPU.
 * --k7: the matmulKernel7 shape of the same repository (issue 27): the maps
 * by value (__grid_constant__), 5-D (64 x rows x K/64, 128-row A boxes and
 * 256-row B boxes), 128 persistent CTAs of 384 threads, 3 x 48 KB stages.
 * Exit 0: results match; 1: mismatch or CUDA error; 2: usage.
 */
#include <cuda.h>
#include <math.h>
#include <stdint.h>
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
      fprintf(stderr, "wgmma_harness: %s failed: %s\n", #call, s_ ? s_ : "?");     \
      return 1;                                                                    \
    }                                                                              \
  } while (0)
#define AH(call)                                                                   \
  do {                                                                             \
    if ((call) != 0) {                                                             \
      fprintf(stderr, "wgmma_harness: %s failed: %s\n", #call, ag_host_errmsg(host)); \
      return 1;                                                                    \
    }                                                                              \
  } while (0)

#define TILE 128
#define BK 64

static int cmpf(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

static uint16_t bf16_of(float f) { /* exact for the small integers used here */
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16);
}

static float float_of(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static int make_map(CUtensorMap *m, CUdeviceptr base, int rows, int K, int k7, unsigned box_rows) {
  cuuint64_t dims[5] = {(cuuint64_t)K, (cuuint64_t)rows, 1, 1, 1};
  cuuint64_t strides[4] = {(cuuint64_t)K * 2, 0, 0, 0};
  cuuint32_t box[5] = {BK, TILE, 1, 1, 1}, estr[5] = {1, 1, 1, 1, 1};
  if (k7) { /* 64 x rows x K/64: the K blocks are the outer dimension */
    dims[0] = BK, dims[2] = (cuuint64_t)K / BK;
    strides[1] = BK * 2;
    box[1] = box_rows;
  }
  CUresult r = cuTensorMapEncodeTiled(m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, k7 ? 5 : 2, (void *)base, dims,
                                      strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    fprintf(stderr, "wgmma_harness: cuTensorMapEncodeTiled failed (%d)\n", (int)r);
  return r != CUDA_SUCCESS;
}

int main(int argc, char **argv) {
  int S = 4096, threads = 256, reps = 20, k7 = 0, batch = 1;
  unsigned smem = (TILE * BK * 5 + BK * TILE * 5) * 2; /* SMem<128, 128, 64, 5> */
  const char *module = NULL, *kernel = NULL;
  for (int i = 1; i < argc; i += 2) {
    if (!strcmp(argv[i], "--k7")) {
      k7 = 1, threads = 384, smem = (TILE * BK * 3 + BK * 256 * 3) * 2, i--;
      continue;
    }
    if (i + 1 >= argc)
      module = NULL;
    else if (!strcmp(argv[i], "--module"))
      module = argv[i + 1];
    else if (!strcmp(argv[i], "--kernel"))
      kernel = argv[i + 1];
    else if (!strcmp(argv[i], "--size"))
      S = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--smem"))
      smem = (unsigned)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--threads"))
      threads = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--reps"))
      reps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--batch"))
      batch = atoi(argv[i + 1]);
    else
      module = NULL, i = argc;
  }
  if (!module || !kernel || S <= 0 || S % (k7 ? 256 : TILE) || reps < 1 || threads <= 0 ||
      batch < 1 || reps % batch) {
    fprintf(stderr, "usage: wgmma_harness --module FILE --kernel NAME [--size S] "
                    "[--smem BYTES] [--threads N] [--reps R] [--batch B] [--k7] (S a multiple of 128, 256 with --k7)\n");
    return 2;
  }
  size_t n = (size_t)S * S;
  uint16_t *A = malloc(n * 2), *B = malloc(n * 2), *C = malloc(n * 2);
  float *times = malloc(sizeof(float) * (size_t)reps);
  if (!A || !B || !C || !times)
    return 1;
  unsigned x = 12345;
  for (size_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    A[i] = bf16_of((float)((int)(x >> 24) % 5 - 2));
    x = x * 1664525u + 1013904223u;
    B[i] = bf16_of((float)((int)(x >> 24) % 5 - 2));
  }
  ag_host *host = NULL;
  ag_host_module *mod = NULL;
  ag_host_kernel *fn = NULL;
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr dA, dB, dC, dmA, dmB;
  AH(ag_host_open(&host));
  CK(cuInit(0));
  CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  AH(ag_host_load(host, module, &mod));
  AH(ag_host_kernel_get(mod, kernel, &fn));
  AH(ag_host_kernel_set_attr(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem));
  CK(cuMemAlloc(&dA, n * 2));
  CK(cuMemAlloc(&dB, n * 2));
  CK(cuMemAlloc(&dC, n * 2));
  CK(cuMemcpyHtoD(dA, A, n * 2));
  CK(cuMemcpyHtoD(dB, B, n * 2));
  CK(cuMemsetD16(dC, 0x7fc0, n)); /* NaN: unwritten outputs show */
  CUtensorMap ma, mb;
  if (make_map(&ma, dA, S, S, k7, TILE) || make_map(&mb, dB, S, S, k7, 256))
    return 1;
  CK(cuMemAlloc(&dmA, sizeof ma));
  CK(cuMemAlloc(&dmB, sizeof mb));
  CK(cuMemcpyHtoD(dmA, &ma, sizeof ma));
  CK(cuMemcpyHtoD(dmB, &mb, sizeof mb));
  void *args[] = {&S, &S, &S, &dC, &dmA, &dmB};
  if (k7) /* by value */
    args[4] = &ma, args[5] = &mb;
  ag_host_dim grid = {k7 ? 128u : (unsigned)((S / TILE) * (S / TILE)), 1, 1},
              block = {(unsigned)threads, 1, 1};
  CUevent e0, e1;
  CK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
  CK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
  AH(ag_host_launch(fn, grid, block, smem, NULL, args));
  CK(cuCtxSynchronize());
  int nt = reps / batch; /* --batch: one time per batch of back-to-back launches */
  for (int r = 0; r < nt; r++) {
    CK(cuEventRecord(e0, 0));
    for (int b = 0; b < batch; b++)
      AH(ag_host_launch(fn, grid, block, smem, NULL, args));
    CK(cuEventRecord(e1, 0));
    CK(cuEventSynchronize(e1));
    CK(cuEventElapsedTime(&times[r], e0, e1));
    times[r] /= (float)batch;
  }
  CK(cuMemcpyDtoH(C, dC, n * 2));
  long bad = 0;
  for (int s = 0; s < 64; s++) {
    size_t i = (size_t)(s * 7919) % (size_t)S, j = (size_t)(s * 104729) % (size_t)S;
    double ref = 0;
    for (int k = 0; k < S; k++)
      ref += (double)float_of(A[i * S + k]) * float_of(B[j * S + k]);
    double got = float_of(C[j * S + i]); /* column-major */
    if (!(fabs(ref - got) <= fabs(ref) / 128 + 1e-3))
      bad++;
  }
  qsort(times, (size_t)nt, sizeof *times, cmpf);
  printf("{\"size\":%d,\"reps\":%d,\"batch\":%d,\"median_us\":%.3f,\"mismatches\":%ld}\n", S,
         reps, batch, times[nt / 2] * 1000.0, bad);
  AH(ag_host_finish(host));
  ag_host_close(host);
  return bad ? 1 : 0;
}
