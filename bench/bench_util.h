/*
 * bench_util.h — what the benchmarks that link argus_core share: a path in
 * the source tree ($ARGUS_SOURCE_DIR, else "."), whether a GPU is there
 * (the driver loaded with dlopen, as Argus does), and the commit a RESULTS.md
 * section names (`git rev-parse --short HEAD` in a directory).
 */
#ifndef ARGUS_BENCH_UTIL_H
#define ARGUS_BENCH_UTIL_H

#include "argus/core.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* $ARGUS_SOURCE_DIR/rel; four calls' results live at once. */
static inline const char *bench_src(const char *rel) {
  static char buf[4][1024];
  static int slot;
  const char *s = getenv("ARGUS_SOURCE_DIR");
  slot = (slot + 1) % 4;
  snprintf(buf[slot], sizeof buf[slot], "%s/%s", s ? s : ".", rel);
  return buf[slot];
}

/* The number of CUDA devices the driver sees (0: no driver, or none). */
/* The driver's function `name` after cuInit succeeded; NULL: no driver or no
 * such function. */
static inline void *bench_cuda_fn(const char *name) {
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
  int (*init)(unsigned) = cuda ? (int (*)(unsigned))dlsym(cuda, "cuInit") : NULL;
  return init && !init(0) ? dlsym(cuda, name) : NULL;
}

static inline int bench_gpu_count(void) {
  int (*count)(int *) = (int (*)(int *))bench_cuda_fn("cuDeviceGetCount");
  int n = 0;
  if (!count || count(&n))
    return 0;
  return n;
}

/* The SM count of device 0 (0: no driver, or no device). */
static inline int bench_gpu_sms(void) {
  int (*attr)(int *, int, int) = (int (*)(int *, int, int))bench_cuda_fn("cuDeviceGetAttribute");
  int n = 0;
  /* 16: CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device ordinal 0 */
  if (!attr || attr(&n, 16, 0))
    return 0;
  return n;
}

/* The short commit of the checkout at dir into out: $ARGUS_COMMIT when set
 * (scripts/gpu/pack.sh records the commit it packed, run.sh exports it: the
 * pack's copy of the sources is no checkout, and git would answer with the
 * commit of whatever checkout holds the copy), else HEAD where dir is a git
 * checkout's top, else "unknown". */
static inline void bench_commit(const char *dir, char *out, size_t n) {
  const char *env = getenv("ARGUS_COMMIT");
  if (env && *env) {
    snprintf(out, n, "%s", env);
    return;
  }
  snprintf(out, n, "unknown (not a git checkout: set ARGUS_COMMIT)");
  char want[4096], top[4096];
  if (!realpath(dir, want))
    return;
  const char *av[] = {"git", "-C", dir, "rev-parse", "--show-toplevel", NULL};
  ag_str co = AG_STR_INIT;
  ag_proc_opts po;
  memset(&po, 0, sizeof po);
  po.argv = av;
  po.capture_out = &co;
  ag_proc_result pr;
  int ok = !ag_proc_run(&po, &pr) && pr.exited && pr.exit_code == 0 && co.len;
  if (ok) {
    char got[4096];
    snprintf(got, sizeof got, "%.*s", (int)strcspn(ag_str_cstr(&co), "\n"), ag_str_cstr(&co));
    ok = realpath(got, top) && !strcmp(top, want);
  }
  ag_str_release(&co);
  if (!ok)
    return;
  const char *hv[] = {"git", "-C", dir, "rev-parse", "--short", "HEAD", NULL};
  ag_str ho = AG_STR_INIT;
  po.argv = hv;
  po.capture_out = &ho;
  snprintf(out, n, "unknown");
  if (!ag_proc_run(&po, &pr) && pr.exited && pr.exit_code == 0 && ho.len)
    snprintf(out, n, "%.*s", (int)strcspn(ag_str_cstr(&ho), "\n"), ag_str_cstr(&ho));
  ag_str_release(&ho);
}

#endif
