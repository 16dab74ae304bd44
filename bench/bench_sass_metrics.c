/*
 * bench_sass_metrics.c — what a SASS-metrics collection costs (issue 19,
 * "Figures"), side by side in one run on the H200, on the paper's collector
 * kernel (tests/data/cuda/attrib_truth.cu `collector`: 128 CTAs x 256
 * threads, 8 occurrences of 2,048 dependent FMAs; trace-free about 38 us).
 *
 Each sample loads a cubin of its own (CUPTI patches a function only at its
 * first launch, and knows a function by its cubin's CRC: every sample's
 * image has another value of the kernel's unused global `attrib_salt`, the
 * same code) and times one launch two ways, back to back, in alternating
 * order, from after the module load:
 *   plain  launch, synchronize                              (no collector)
 *   sass   name the cubin, open the range, launch, synchronize, flush and
 *          close the range                                  (the collector,
 *          sass_metrics.c, with its default metrics)
 * The run cost is the difference of the medians, and the paired median of
 * the per-sample differences. Printed beside it, with no goal: the collector's
 * one-off open per process (subscribe, profiler init, metric lookup, config),
 * the disassembly of the cubin (nvdisasm, once per collection), and the same
 * cost with smsp__sass_inst_executed alone. Checked: every collection counts
 * the same warp instructions, at least the 16,384 FFMAs of each of the
 * 1,024 warps, and drops no record.
 *
 * Goal (issue 19): run cost <= 3.85 ms (the paper's lower SASS-metrics
 * figure), by the difference of medians.
 *
 *   bench_sass_metrics [--cubin FILE] [--samples N]
 * Exit 0: figures printed, checks passed, goal met; 1: otherwise; 77: no GPU.
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "argus/host.h"
#include "goal.h"
#include "sass_metrics.h"

#ifndef ATTRIB_TRUTH_CUBIN
#define ATTRIB_TRUTH_CUBIN "attrib_truth.cubin"
#endif
#define CTAS 128
#define THREADS 256
#define MAXS 64

/* the runtime API beside libargus_host, on the same primary context */
#define CK(call)                                                                   \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      fprintf(stderr, "bench_sass_metrics: %s failed: %s\n", #call,                \
              cudaGetErrorName(e_));                                               \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)
#define AH(call)                                                                   \
  do {                                                                             \
    if ((call) != 0) {                                                             \
      fprintf(stderr, "bench_sass_metrics: %s failed: %s\n", #call,                \
              ag_host_errmsg(host));                                               \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(const double *v0, int n) {
  double v[MAXS];
  memcpy(v, v0, sizeof(double) * (size_t)n);
  qsort(v, (size_t)n, sizeof *v, cmp_dbl);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static char *img;
static size_t img_len, salt_at;
static uint64_t salt;

#define SALT 0x5341524755535341ull /* attrib_salt's value in the built cubin */

/* Offset of attrib_salt's initial value in the image; 0 when not found. */
static size_t find_salt(void) {
  uint64_t v = SALT;
  for (size_t i = 1; i + sizeof v <= img_len; i++)
    if (!memcmp(img + i, &v, sizeof v))
      return i;
  return 0;
}
static void *dout, *dseed;
static ag_host *host;

static void launch(ag_host_kernel *k) {
  void *args[] = {&dout, &dseed};
  AH(ag_host_launch(k, (ag_host_dim){CTAS, 1, 1}, (ag_host_dim){THREADS, 1, 1}, 0, NULL, args));
}

/* One collection (s != NULL) or one plain run of a freshly loaded module
 * (ag_host keeps every module it loaded: a few KB each); returns its wall
 * time in ms. */
static double one_run(ag_sassm *s) {
  char err[1024];
  ag_host_module *m;
  ag_host_kernel *k;
  uint64_t v = ++salt;
  memcpy(img + salt_at, &v, sizeof v); /* a cubin no launch has seen */
  AH(ag_host_load_image(host, img, "collector", &m));
  AH(ag_host_kernel_get(m, "collector", &k));
  double t0 = now_ms();
  if (s && (ag_sassm_cubin(s, img, img_len, err, sizeof err) ||
            ag_sassm_begin(s, err, sizeof err))) {
    fprintf(stderr, "bench_sass_metrics: %s\n", err);
    exit(1);
  }
  launch(k);
  AH(ag_host_sync(host));
  if (s && ag_sassm_end(s, err, sizeof err)) {
    fprintf(stderr, "bench_sass_metrics: %s\n", err);
    exit(1);
  }
  return now_ms() - t0;
}

/* Samples plain vs the collector with `metrics`; fills the medians. Returns
 * 0 when the checks passed. */
static int measure(void *ctx, const char *metrics, int n, double *open_ms, double *plain,
                   double *sass, double *paired, uint64_t *inst) {
  char err[1024];
  ag_sassm *s = NULL;
  double t0 = now_ms();
  if (ag_sassm_open(ctx, 0, metrics, &s, err, sizeof err)) {
    fprintf(stderr, "bench_sass_metrics: %s\n", err);
    return 1;
  }
  *open_ms = now_ms() - t0;
  double p[MAXS], q[MAXS], d[MAXS];
  uint64_t last = 0, per = 0;
  int bad = 0;
  one_run(NULL); /* warm: the module's first load */
  for (int i = 0; i < n; i++) {
    if (i % 2) {
      q[i] = one_run(s);
      p[i] = one_run(NULL);
    } else {
      p[i] = one_run(NULL);
      q[i] = one_run(s);
    }
    d[i] = q[i] - p[i];
    uint64_t t = ag_sassm_total(s, "smsp__sass_inst_executed");
    if (i == 0)
      per = t;
    else if (t - last != per) {
      fprintf(stderr, "check: collection %d counted %llu warp instructions, the first %llu\n",
              i, (unsigned long long)(t - last), (unsigned long long)per);
      bad = 1;
    }
    last = t;
  }
  *plain = median(p, n);
  *sass = median(q, n);
  *paired = median(d, n);
  *inst = per;
  if (per < (uint64_t)CTAS * THREADS / 32 * 8 * 2048) {
    fprintf(stderr, "check: %llu warp instructions, fewer than the kernel's FFMAs\n",
            (unsigned long long)per);
    bad = 1;
  }
  ag_sassm_close(s);
  return bad;
}

int main(int argc, char **argv) {
  const char *cubin = ATTRIB_TRUTH_CUBIN;
  int n = 11;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--cubin") && i + 1 < argc)
      cubin = argv[++i];
    else if (!strcmp(argv[i], "--samples") && i + 1 < argc)
      n = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_sass_metrics [--cubin FILE] [--samples N]\n");
      return 2;
    }
  }
  if (n < 1 || n > MAXS)
    n = 11;
  int rc = ag_host_open(&host);
  if (rc == AG_HOST_ENODEV) {
    printf("bench_sass_metrics: no GPU (skipped): %s\n", ag_host_errmsg(host));
    ag_host_close(host);
    return 77;
  }
  AH(rc);
  FILE *f = fopen(cubin, "rb");
  if (!f) {
    fprintf(stderr, "bench_sass_metrics: cannot open '%s'\n", cubin);
    return 1;
  }
  fseek(f, 0, SEEK_END);
  img_len = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  img = malloc(img_len + 1);
  if (!img || fread(img, 1, img_len, f) != img_len) {
    fclose(f);
    fprintf(stderr, "bench_sass_metrics: cannot read '%s'\n", cubin);
    return 1;
  }
  fclose(f);
  /* the primary context ag_host made current, for CUPTI */
  void *ctx = NULL;
  void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  int (*get_ctx)(void **) = cu ? (int (*)(void **))dlsym(cu, "cuCtxGetCurrent") : NULL;
  if (!get_ctx || get_ctx(&ctx) || !ctx) {
    fprintf(stderr, "bench_sass_metrics: no current context\n");
    return 1;
  }
  struct cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  CK(cudaMalloc(&dout, CTAS * THREADS * 4));
  CK(cudaMalloc(&dseed, CTAS * THREADS * 4));
  CK(cudaMemset(dseed, 0, CTAS * THREADS * 4));
  printf("device: %s; collector kernel %d CTAs x %d threads, 8 x 2,048 dependent FMAs; "
         "%d samples\n",
         prop.name, CTAS, THREADS, n);

  /* the kernel itself, trace-free: events around 20 launches */
  ag_host_module *mod;
  ag_host_kernel *kern;
  cudaEvent_t a, b;
  AH(ag_host_load_image(host, img, "collector", &mod));
  AH(ag_host_kernel_get(mod, "collector", &kern));
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < 5; i++)
    launch(kern);
  CK(cudaEventRecord(a, NULL));
  for (int i = 0; i < 20; i++)
    launch(kern);
  CK(cudaEventRecord(b, NULL));
  CK(cudaEventSynchronize(b));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, a, b));
  printf("trace-free kernel: %.1f us per launch\n", ms * 1e3 / 20);

  if (!(salt_at = find_salt())) {
    fprintf(stderr, "check: the cubin has no attrib_salt value to vary\n");
    return 1;
  }
  double open_ms = 0, plain = 0, sass = 0, paired = 0, open1 = 0, plain1 = 0, sass1 = 0,
         paired1 = 0;
  uint64_t inst = 0, inst1 = 0;
  int bad = measure(ctx, NULL, n, &open_ms, &plain, &sass, &paired, &inst);
  /* a second configuration in the same process (informative: not a check) */
  if (measure(ctx, "smsp__sass_inst_executed", n, &open1, &plain1, &sass1, &paired1, &inst1))
    printf("second collector in one process: failed (see above)\n");
  else if (inst != inst1) {
    fprintf(stderr, "check: %llu warp instructions with the default metrics, %llu alone\n",
            (unsigned long long)inst, (unsigned long long)inst1);
    bad = 1;
  }
  /* the disassembly a collection adds (once per cubin) */
  char path[] = "/tmp/argus-bench-sassm-XXXXXX";
  int fd = mkstemp(path);
  double dis = -1;
  if (fd >= 0 && write(fd, img, img_len) == (ssize_t)img_len) {
    ag_sassm *s = ag_sassm_new_offline();
    double t0 = now_ms();
    ag_sassm_disasm(s, path);
    dis = now_ms() - t0;
    ag_jb j = {0};
    ag_sassm_json(s, &j);
    if (!j.p || !strstr(j.p, "\"status\":null")) {
      fprintf(stderr, "check: nvdisasm gave no opcodes\n");
      bad = 1;
    }
    ag_jb_release(&j);
    ag_sassm_close(s);
  }
  if (fd >= 0) {
    close(fd);
    unlink(path);
  }
  printf("| collection | plain run | with SASS metrics | run cost (medians) | paired | "
         "collector open | warp inst |\n");
  printf("| default metrics (15) | %.3f ms | %.3f ms | %.3f ms | %.3f ms | %.1f ms | %llu |\n",
         plain, sass, sass - plain, paired, open_ms, (unsigned long long)inst);
  printf("| inst_executed alone | %.3f ms | %.3f ms | %.3f ms | %.3f ms | %.1f ms | %llu |\n",
         plain1, sass1, sass1 - plain1, paired1, open1, (unsigned long long)inst1);
  printf("nvdisasm of the cubin (once per collection): %.1f ms\n", dis);
  printf("checks: %s\n", bad ? "FAILED" : "passed");
  int met = bench_goal("SASS-metrics run cost on the collector kernel (default metrics)",
                       sass - plain, 0, 3.85, "ms");
  free(img);
  cudaFree(dout);
  cudaFree(dseed);
  ag_host_close(host);
  return bad || !met ? 1 : 0;
}
