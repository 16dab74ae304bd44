/*
 * harness.c - host program of the async ground-truth kernels
 * (tests/data/cuda/async_truth.cu): fills x (blocks x ntiles x 1024 floats)
 * with small integers, launches one kernel (--kernel wait_shapes, unroll4
 * or untimed_wait) on --blocks CTAs of 128 threads, checks out[b] = the sum
 * of block b's tiles exactly (integers below 2^24), once, then --reps more
 * launches.
 *
 *   async_truth_harness --kernel K [--blocks B] [--ntiles N] [--reps R] [--module FILE]
 * Exit 0: results match; 1: mismatch or CUDA error; 2: usage.
 */
#include <cuda.h>

#include "argus/host.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TILE 1024

#define CK(call)                                                                   \
  do {                                                                             \
    CUresult e_ = (call);                                                          \
    if (e_ != CUDA_SUCCESS) {                                                      \
      const char *s_ = NULL;                                                       \
      cuGetErrorString(e_, &s_);                                                   \
      fprintf(stderr, "async_truth: %s failed: %s\n", #call, s_ ? s_ : "?");       \
      goto out;                                                                    \
    }                                                                              \
  } while (0)

#define AH(call)                                                                   \
  do {                                                                             \
    if ((call) != 0) {                                                             \
      fprintf(stderr, "async_truth: %s failed: %s\n", #call, ag_host_errmsg(host)); \
      goto out;                                                                    \
    }                                                                              \
  } while (0)

ARGUS_HARNESS_MAIN(int argc, char **argv) {
  int blocks = 8, ntiles = 16, reps = 2;
  const char *kernel = NULL, *module = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--kernel") && i + 1 < argc)
      kernel = argv[++i];
    else if (!strcmp(argv[i], "--blocks") && i + 1 < argc)
      blocks = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--ntiles") && i + 1 < argc)
      ntiles = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--module") && i + 1 < argc)
      module = argv[++i];
    else
      kernel = NULL, i = argc;
  }
  if (!kernel || blocks < 1 || ntiles < 1 || ntiles > 4096 || reps < 0) {
    fprintf(stderr, "usage: async_truth_harness --kernel wait_shapes|unroll4|untimed_wait "
                    "[--blocks B] [--ntiles 1..4096] [--reps R] [--module FILE]\n");
    return 2;
  }
  char defmod[4096];
  if (!module) {
    const char *slash = strrchr(argv[0], '/');
    int n = slash ? (int)(slash - argv[0]) + 1 : 0;
    snprintf(defmod, sizeof defmod, "%.*sasync_truth.cubin", n, argv[0]);
    module = defmod;
  }
  int status = 1;
  size_t nx = (size_t)blocks * ntiles * TILE;
  float *x = malloc(nx * sizeof *x), *out = malloc((size_t)blocks * sizeof *out);
  CUdevice dev = 0;
  CUcontext ctx = NULL;
  ag_host *host = NULL;
  ag_host_module *mod = NULL;
  ag_host_kernel *fn = NULL;
  CUdeviceptr dx = 0, dout = 0;
  long bad = 0;
  if (!x || !out) {
    fprintf(stderr, "async_truth: out of memory\n");
    goto out;
  }
  for (size_t i = 0; i < nx; i++)
    x[i] = (float)((i * 2654435761u >> 20) % 7);
  AH(ag_host_open(&host));
  CK(cuInit(0));
  CK(cuDeviceGet(&dev, ag_host_device(host)));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  AH(ag_host_load(host, module, &mod));
  AH(ag_host_kernel_get(mod, kernel, &fn));
  CK(cuMemAlloc(&dx, nx * sizeof *x));
  CK(cuMemAlloc(&dout, (size_t)blocks * sizeof *out));
  CK(cuMemcpyHtoD(dx, x, nx * sizeof *x));
  CK(cuMemsetD32(dout, 0x7fc00000u, (size_t)blocks));
  void *args[] = {&dx, &dout, &ntiles};
  ag_host_dim grid = {(unsigned)blocks, 1, 1}, block = {128, 1, 1};
  for (int r = 0; r <= reps; r++) {
    AH(ag_host_launch(fn, grid, block, 0, NULL, args));
    CK(cuCtxSynchronize());
  }
  CK(cuMemcpyDtoH(out, dout, (size_t)blocks * sizeof *out));
  for (int b = 0; b < blocks; b++) {
    double want = 0;
    for (size_t i = (size_t)b * ntiles * TILE; i < (size_t)(b + 1) * ntiles * TILE; i++)
      want += x[i];
    if (out[b] != (float)want && bad++ < 5)
      fprintf(stderr, "async_truth: %s block %d: %.1f, want %.1f\n", kernel, b, out[b], want);
  }
  printf("{\"kernel\":\"%s\",\"blocks\":%d,\"ntiles\":%d,\"mismatches\":%ld}\n", kernel, blocks,
         ntiles, bad);
  AH(ag_host_finish(host));
  status = bad ? 1 : 0;
out:
  if (dx)
    cuMemFree(dx);
  if (dout)
    cuMemFree(dout);
  ag_host_close(host);
  if (ctx)
    cuDevicePrimaryCtxRelease(dev);
  free(x);
  free(out);
  fflush(stdout);
  return status;
}
