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
static inline int bench_gpu_count(void) {
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
  int (*init)(unsigned) = cuda ? (int (*)(unsigned))dlsym(cuda, "cuInit") : NULL;
  int (*count)(int *) = cuda ? (int (*)(int *))dlsym(cuda, "cuDeviceGetCount") : NULL;
  int n = 0;
  if (!init || !count || init(0) || count(&n))
    return 0;
  return n;
}

/* The short commit of the checkout at dir into out ("unknown" when git
 * cannot say). */
static inline void bench_commit(const char *dir, char *out, size_t n) {
  ag_str co = AG_STR_INIT;
  const char *av[] = {"git", "-C", dir, "rev-parse", "--short", "HEAD", NULL};
  ag_proc_opts po;
  memset(&po, 0, sizeof po);
  po.argv = av;
  po.capture_out = &co;
  ag_proc_result pr;
  snprintf(out, n, "unknown");
  if (!ag_proc_run(&po, &pr) && pr.exited && pr.exit_code == 0 && co.len)
    snprintf(out, n, "%.*s", (int)strcspn(ag_str_cstr(&co), "\n"), ag_str_cstr(&co));
  ag_str_release(&co);
}

#endif
