/* ncu_drv.c - loads a PTX module with the driver JIT, binds the trace
 * descriptor when there is one, launches overhead_compute or overhead_memory
 * (128 x 256) a few times: a target for ncu (ncu_stalls.sh). Exploration only.
 *   ncu_drv PTX KERNEL INNER [LAUNCHES] */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define CK(x) do { CUresult r_ = (x); if (r_) { const char *s_; cuGetErrorString(r_, &s_); fprintf(stderr, "%s: %s\n", #x, s_); exit(1); } } while (0)
int main(int argc, char **argv) {
  if (argc < 4) { fprintf(stderr, "drv PTX KERNEL INNER [LAUNCHES]\n"); return 2; }
  FILE *f = fopen(argv[1], "rb");
  if (!f) { perror(argv[1]); return 1; }
  fseek(f, 0, SEEK_END); long n = ftell(f); rewind(f);
  char *ptx = malloc(n + 1);
  if (!ptx || fread(ptx, 1, n, f) != (size_t)n) { fprintf(stderr, "%s: cannot read\n", argv[1]); return 1; }
  ptx[n] = 0; fclose(f);
  int inner = atoi(argv[3]), launches = argc > 4 ? atoi(argv[4]) : 3;
  CUdevice dev; CUcontext ctx; CUmodule mod; CUfunction fn;
  CK(cuInit(0)); CK(cuDeviceGet(&dev, 0)); CK(cuCtxCreate(&ctx, NULL, 0, dev));
  CK(cuModuleLoadData(&mod, ptx));
  CK(cuModuleGetFunction(&fn, mod, argv[2]));
  CUdeviceptr desc; size_t bytes;
  const int warps = 128 * 256 / 32, cap = 256;
  if (cuModuleGetGlobal(&desc, &bytes, mod, "__argus_trace") == CUDA_SUCCESS) {
    CUdeviceptr rec, meta;
    CK(cuMemAlloc(&rec, (size_t)warps * cap * 16)); CK(cuMemsetD8(rec, 0, (size_t)warps * cap * 16));
    CK(cuMemAlloc(&meta, (size_t)warps * 64)); CK(cuMemsetD8(meta, 0, (size_t)warps * 64));
    uint64_t d[4] = {rec, meta, (uint64_t)cap | (1ull << 32), 0};
    CK(cuMemcpyHtoD(desc, d, sizeof d));
  }
  CUdeviceptr out, in; int tn = 1 << 20;
  CK(cuMemAlloc(&out, 128 * 256 * 4)); CK(cuMemAlloc(&in, (size_t)tn * 4)); CK(cuMemsetD32(in, 0x3f800000, tn));
  void *args_c[] = {&out, &in, &inner};
  void *args_m[] = {&out, &in, &tn, &inner};
  int mem = strstr(argv[2], "memory") != NULL;
  CUevent a, b; CK(cuEventCreate(&a, 0)); CK(cuEventCreate(&b, 0));
  for (int i = 0; i < launches; i++) {
    CK(cuEventRecord(a, 0));
    CK(cuLaunchKernel(fn, 128, 1, 1, 256, 1, 1, 0, 0, mem ? args_m : args_c, NULL));
    CK(cuEventRecord(b, 0)); CK(cuEventSynchronize(b));
    float ms; CK(cuEventElapsedTime(&ms, a, b));
    printf("%s %s inner %d launch %d: %.3f us\n", argv[1], argv[2], inner, i, ms * 1e3);
  }
  return 0;
}
