/*
 * harness.c - host program of the overhead microbenchmark: loads the kernel
 * module (PTX or cubin; --module, default overhead.cubin beside the binary),
 * launches 128 CTAs x 256 threads, checks every thread's result against a
 * CPU reference computed with the same fused multiply-adds (bit-exact), and
 * prints the median kernel time over --reps launches.
 *
 *   overhead_harness [--type compute|memory] [--inner N] [--reps R] [--module FILE]
 * Exit 0: results match; 1: mismatch or CUDA error; 2: usage.
 */
#include <cuda.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CTAS 128
#define THREADS 256
#define OCCURRENCES 64
#define TABLE 4096

#define CK(call)                                                                   \
  do {                                                                             \
    CUresult e_ = (call);                                                          \
    if (e_ != CUDA_SUCCESS) {                                                      \
      const char *s_ = NULL;                                                       \
      cuGetErrorString(e_, &s_);                                                   \
      fprintf(stderr, "overhead: %s failed: %s\n", #call, s_ ? s_ : "?");          \
      return 1;                                                                    \
    }                                                                              \
  } while (0)

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

static char *default_module(const char *argv0) {
  const char *slash = strrchr(argv0, '/');
  size_t n = slash ? (size_t)(slash - argv0) + 1 : 0;
  char *p = malloc(n + 32);
  if (!p)
    return NULL;
  memcpy(p, argv0, n);
  strcpy(p + n, "overhead.cubin");
  return p;
}

int main(int argc, char **argv) {
  const char *type = "compute", *module = NULL;
  int inner = 64, reps = 20;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--type") && i + 1 < argc)
      type = argv[++i];
    else if (!strcmp(argv[i], "--inner") && i + 1 < argc)
      inner = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--module") && i + 1 < argc)
      module = argv[++i];
    else {
      fprintf(stderr, "usage: %s [--type compute|memory] [--inner N] [--reps R] [--module FILE]\n",
              argv[0]);
      return 2;
    }
  }
  int memory = !strcmp(type, "memory");
  if ((!memory && strcmp(type, "compute")) || inner < 1 || inner > 4096 || reps < 1) {
    fprintf(stderr, "overhead: --type must be compute or memory, --inner 1..4096, --reps >= 1\n");
    return 2;
  }
  char *defmod = module ? NULL : default_module(argv[0]);
  if (!module)
    module = defmod;
  const int n = CTAS * THREADS;
  float *seed = malloc(sizeof(float) * (memory ? TABLE : n));
  float *got = malloc(sizeof(float) * n);
  float *times = malloc(sizeof(float) * (size_t)reps);
  if (!seed || !got || !times || !module)
    return 1;
  int nin = memory ? TABLE : n;
  for (int i = 0; i < nin; i++)
    seed[i] = (float)((i * 37) % 101) / 101.0f;

  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction fn;
  CUdeviceptr d_in, d_out;
  CK(cuInit(0));
  CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  CK(cuModuleLoad(&mod, module));
  CK(cuModuleGetFunction(&fn, mod, memory ? "overhead_memory" : "overhead_compute"));
  CK(cuMemAlloc(&d_in, sizeof(float) * (size_t)nin));
  CK(cuMemAlloc(&d_out, sizeof(float) * (size_t)n));
  CK(cuMemcpyHtoD(d_in, seed, sizeof(float) * (size_t)nin));
  int tsize = TABLE;
  void *args_c[] = {&d_out, &d_in, &inner};
  void *args_m[] = {&d_out, &d_in, &tsize, &inner};
  CUevent e0, e1;
  CK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
  CK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
  /* warm-up, then timed launches */
  CK(cuLaunchKernel(fn, CTAS, 1, 1, THREADS, 1, 1, 0, 0, memory ? args_m : args_c, NULL));
  for (int r = 0; r < reps; r++) {
    CK(cuEventRecord(e0, 0));
    CK(cuLaunchKernel(fn, CTAS, 1, 1, THREADS, 1, 1, 0, 0, memory ? args_m : args_c, NULL));
    CK(cuEventRecord(e1, 0));
    CK(cuEventSynchronize(e1));
    CK(cuEventElapsedTime(&times[r], e0, e1));
  }
  CK(cuMemcpyDtoH(got, d_out, sizeof(float) * (size_t)n));

  /* CPU reference: the same operations in the same order */
  int bad = 0;
  for (int tid = 0; tid < n; tid++) {
    float a;
    if (!memory) {
      a = seed[tid];
      for (int o = 0; o < OCCURRENCES; o++)
        for (int j = 0; j < inner; j++)
          a = fmaf(a, 1.0000001f, 0.5f);
    } else {
      a = 0.f;
      unsigned idx = (unsigned)tid * 2654435761u;
      for (int o = 0; o < OCCURRENCES; o++)
        for (int j = 0; j < inner; j++) {
          idx = idx * 1664525u + 1013904223u;
          a = fmaf(a, seed[idx & (TABLE - 1)], 0.5f);
        }
    }
    if (memcmp(&a, &got[tid], sizeof a) != 0) {
      if (bad < 5)
        fprintf(stderr, "overhead: thread %d: got %.9g, expected %.9g\n", tid, got[tid], a);
      bad++;
    }
  }
  qsort(times, (size_t)reps, sizeof *times, cmp_float);
  printf("{\"type\":\"%s\",\"inner\":%d,\"reps\":%d,\"median_us\":%.3f,\"min_us\":%.3f,"
         "\"mismatches\":%d}\n",
         type, inner, reps, times[reps / 2] * 1000.0, times[0] * 1000.0, bad);
  cuMemFree(d_in);
  cuMemFree(d_out);
  cuModuleUnload(mod);
  cuDevicePrimaryCtxRelease(dev);
  free(seed);
  free(got);
  free(times);
  free(defmod);
  return bad ? 1 : 0;
}
