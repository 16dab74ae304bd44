/*
 * harness.c - host program of the async-probe workload (tma_probe.cu): builds
 * A (M x K) and B (N x K) in half precision from small exactly representable
 * values, creates the two TMA tensor maps (128-byte swizzle, 64 x 64 and
 * 128 x 64 boxes), launches tma_probe from the module (--module, default
 * tma_probe.cubin beside the binary, tma_probe_s1.cubin with --stages 1), checks C = A * B^T against a CPU
 * reference (exact: every partial sum is representable in FP32) and prints
 * the median kernel time.
 *
 *   tma_probe_harness [--m M --n N --k K] [--stages S] [--reps R] [--module FILE]
 * Exit 0: results match; 1: mismatch or CUDA error; 2: usage.
 *
 * The same source builds two ways: an executable (main) and, with
 * -DARGUS_HARNESS_LIBRARY, a shared library exporting argus_harness_main
 * (ARGUS_HARNESS_MAIN, argus/host.h) that Argus's multi-variant GPU worker
 * calls once per collection in one process (docs/probes.md). Hence: no
 * exit(), no static state, and one cleanup path that frees everything.
 */
#include <cuda.h>

#include "argus/host.h"
#include "../common/harness_util.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BM 64
#define BN 128
#define BK 64
#define SMEM_BYTES(stages) ((stages) * (BM * BK * 2 + BN * BK * 2) + 1024)

/* driver calls: on error say which, and leave through the cleanup path */
#define CK(call)                                                                   \
  do {                                                                             \
    CUresult e_ = (call);                                                          \
    if (e_ != CUDA_SUCCESS) {                                                      \
      const char *s_ = NULL;                                                       \
      cuGetErrorString(e_, &s_);                                                   \
      fprintf(stderr, "tma_probe: %s failed: %s\n", #call, s_ ? s_ : "?");         \
      goto out;                                                                    \
    }                                                                              \
  } while (0)

/* libargus_host calls: under Argus they load the variant and write the
 * evidence; otherwise they are the plain driver calls */
#define AH(call)                                                                   \
  do {                                                                             \
    if ((call) != 0) {                                                             \
      fprintf(stderr, "tma_probe: %s failed: %s\n", #call, ag_host_errmsg(host));  \
      goto out;                                                                    \
    }                                                                              \
  } while (0)

ARGUS_HARNESS_MAIN(int argc, char **argv) {
  int M = 512, N = 512, K = 512, reps = 5, stages = 3;
  const char *module = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--m") && i + 1 < argc)
      M = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--n") && i + 1 < argc)
      N = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--k") && i + 1 < argc)
      K = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--stages") && i + 1 < argc)
      stages = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--module") && i + 1 < argc)
      module = argv[++i];
    else {
      fprintf(stderr, "usage: %s [--m M --n N --k K] [--stages S] [--reps R] [--module FILE]\n",
              argv[0]);
      return 2;
    }
  }
  if (M <= 0 || N <= 0 || K <= 0 || M % BM || N % BN || K % BK || K > 8192 || reps < 1 ||
      stages < 1 || stages > 4) {
    fprintf(stderr, "tma_probe: need M %% %d == 0, N %% %d == 0, K %% %d == 0, K <= 8192, "
                    "1 <= stages <= 4\n", BM, BN, BK);
    return 2;
  }
  char defmod[4096];
  if (!module) {
    const char *slash = strrchr(argv[0], '/');
    int n = slash ? (int)(slash - argv[0]) + 1 : 0;
    snprintf(defmod, sizeof defmod, "%.*stma_probe%s.cubin", n, argv[0],
             stages == 1 ? "_s1" : "");
    module = defmod;
  }
  int status = 1;
  size_t na = (size_t)M * K, nb = (size_t)N * K, nc = (size_t)M * N;
  uint16_t *A = malloc(na * 2), *B = malloc(nb * 2);
  signed char *Ak = malloc(na), *Bk = malloc(nb);
  float *C = malloc(nc * 4), *times = malloc(sizeof(float) * (size_t)reps);
  CUdevice dev = 0;
  CUcontext ctx = NULL;
  ag_host *host = NULL;
  ag_host_module *mod = NULL;
  ag_host_kernel *fn = NULL;
  CUdeviceptr dA = 0, dB = 0, dC = 0;
  CUevent e0 = NULL, e1 = NULL;
  if (!A || !B || !Ak || !Bk || !C || !times) {
    fprintf(stderr, "tma_probe: out of memory\n");
    goto out;
  }
  uint32_t x = 12345;
  for (size_t i = 0; i < na; i++) {
    x = x * 1664525u + 1013904223u;
    Ak[i] = (signed char)((int)(x >> 24) % 17 - 8);
    A[i] = ex_half_of_eighths(Ak[i]);
  }
  for (size_t i = 0; i < nb; i++) {
    x = x * 1664525u + 1013904223u;
    Bk[i] = (signed char)((int)(x >> 24) % 17 - 8);
    B[i] = ex_half_of_eighths(Bk[i]);
  }
  AH(ag_host_open(&host));
  CK(cuInit(0));
  CK(cuDeviceGet(&dev, ag_host_device(host)));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  AH(ag_host_load(host, module, &mod));
  AH(ag_host_kernel_get(mod, "tma_probe", &fn));
  AH(ag_host_kernel_set_attr(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                             SMEM_BYTES(stages)));
  CK(cuMemAlloc(&dA, na * 2));
  CK(cuMemAlloc(&dB, nb * 2));
  CK(cuMemAlloc(&dC, nc * 4));
  CK(cuMemcpyHtoD(dA, A, na * 2));
  CK(cuMemcpyHtoD(dB, B, nb * 2));
  CK(cuMemsetD32(dC, 0x7fc00000u, nc)); /* NaN: unwritten outputs show */
  CUtensorMap ma, mb;
  if (ex_make_map(&ma, dA, M, K, BM, BK, "tma_probe") ||
      ex_make_map(&mb, dB, N, K, BN, BK, "tma_probe"))
    goto out;
  void *args[] = {&ma, &mb, &dC, &M, &N, &K};
  ag_host_dim grid = {(unsigned)(N / BN), (unsigned)(M / BM), 1}, block = {256, 1, 1};
  CK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
  CK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
  /* the checked launch (launch 0: the one a probe collection records) */
  AH(ag_host_launch(fn, grid, block, SMEM_BYTES(stages), NULL, args));
  CK(cuCtxSynchronize());
  CK(cuMemcpyDtoH(C, dC, nc * 4));
  for (int r = 0; r < reps; r++) {
    CK(cuEventRecord(e0, 0));
    AH(ag_host_launch(fn, grid, block, SMEM_BYTES(stages), NULL, args));
    CK(cuEventRecord(e1, 0));
    CK(cuEventSynchronize(e1));
    CK(cuEventElapsedTime(&times[r], e0, e1));
  }
  long bad = ex_check_gemm(Ak, Bk, C, M, N, K, "tma_probe");
  qsort(times, (size_t)reps, sizeof *times, ex_cmp_float);
  printf("{\"m\":%d,\"n\":%d,\"k\":%d,\"stages\":%d,\"reps\":%d,\"median_us\":%.3f,"
         "\"mismatches\":%ld}\n",
         M, N, K, stages, reps, times[reps / 2] * 1000.0, bad);
  AH(ag_host_finish(host));
  status = bad ? 1 : 0;
out:
  if (e0)
    cuEventDestroy(e0);
  if (e1)
    cuEventDestroy(e1);
  if (dA)
    cuMemFree(dA);
  if (dB)
    cuMemFree(dB);
  if (dC)
    cuMemFree(dC);
  ag_host_close(host);
  if (ctx)
    cuDevicePrimaryCtxRelease(dev);
  free(A);
  free(B);
  free(Ak);
  free(Bk);
  free(C);
  free(times);
  fflush(stdout);
  return status;
}
