/*
 * hold_cupti.h — what another CUPTI tool in a harness process does: take
 * the process's one CUPTI subscriber (the harnesses' --hold-cupti; the
 * collectors must refuse clearly). Prints "@ <who>: holding the CUPTI
 * subscriber: yes|no"; 0 when it holds it.
 */
#ifndef ARGUS_TEST_HOLD_CUPTI_H
#define ARGUS_TEST_HOLD_CUPTI_H

#include <dlfcn.h>
#include <stdio.h>

static void hold_cupti_noop(void *u, int d, unsigned id, const void *p) {
  (void)u, (void)d, (void)id, (void)p;
}

static int hold_cupti(const char *who) {
  void *lib = dlopen("libcupti.so.13", RTLD_NOW | RTLD_GLOBAL);
  if (!lib)
    lib = dlopen("/usr/local/cuda/lib64/libcupti.so.13", RTLD_NOW | RTLD_GLOBAL);
  typedef int (*sub_fn)(void **, void (*)(void *, int, unsigned, const void *), void *);
  sub_fn sub = lib ? (sub_fn)dlsym(lib, "cuptiSubscribe") : NULL;
  void *handle = NULL;
  int r = sub ? sub(&handle, hold_cupti_noop, NULL) : -1;
  printf("@ %s: holding the CUPTI subscriber: %s\n", who, r == 0 ? "yes" : "no");
  return r == 0 ? 0 : -1;
}

#endif
