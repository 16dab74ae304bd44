/*
 * cupti_lib.c — loading CUPTI and taking its one subscriber, for every
 * CUPTI collector of libargus_host (cupti_lib.h). Called once per
 * collector per harness run.
 */
#define _GNU_SOURCE
#include "cupti_lib.h"

#include <cupti.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argus/host.h"
#include "evwrite.h"

/* "need" after a plural subject ("SASS metrics"), else "needs" */
static const char *verb_s(const char *who) {
  size_t n = strlen(who);
  return n && who[n - 1] == 's' ? "" : "s";
}

void *ag__cupti_lib(const char *who, char *err, size_t errlen) {
  const char *env = getenv("ARGUS_LIBCUPTI");
  const char *tries[] = {env && *env ? env : NULL, "libcupti.so.13", "libcupti.so",
                         "/usr/local/cuda/lib64/libcupti.so.13",
                         "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so"};
  char first[512] = "";
  void *lib = NULL;
  for (size_t i = 0; i < sizeof tries / sizeof *tries && !lib; i++) {
    if (!tries[i])
      continue;
    lib = dlopen(tries[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib && !first[0])
      snprintf(first, sizeof first, "%s", dlerror());
    if (env && *env)
      break; /* the library asked for, or none */
  }
  if (!lib)
    ag__seterr(err, errlen,
               "no CUPTI: cannot load %s (%s); %s need%s libcupti.so from the CUDA toolkit "
               "(set LD_LIBRARY_PATH to its lib64, or ARGUS_LIBCUPTI to the library)",
               env && *env ? env : "libcupti.so.13", first, who,
               verb_s(who));
  return lib;
}

void ag__cupti_lacks(const char *who, const char *sym, char *err, size_t errlen) {
  ag__seterr(err, errlen, "CUPTI lacks %s: it is older than %s need%s (CUDA 12.5+)", sym, who,
             verb_s(who));
}

int ag__cupti_fail(void *result_string, int r, const char *call, char *err, size_t errlen) {
  CUptiResult (*str)(CUptiResult, const char **);
  *(void **)&str = result_string;
  const char *text = NULL;
  if (str)
    str((CUptiResult)r, &text);
  if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES) {
    ag__seterr(err, errlen,
               "%s failed: profiling is not permitted (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES): the "
               "driver restricts GPU profiling to administrators (RmProfilingAdminOnly=1); run "
               "as root or load the driver with NVreg_RestrictProfilingToAdminUsers=0",
               call);
    return AG_HOST_EUNSUPPORTED;
  }
  ag__seterr(err, errlen, "%s failed: %s (CUPTI error %d)", call, text ? text : "?", r);
  if (r == CUPTI_ERROR_NOT_SUPPORTED || r == CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED ||
      r == CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED)
    return AG_HOST_EUNSUPPORTED;
  return AG_HOST_ECUPTI;
}

static void CUPTIAPI on_callback(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id,
                                 const void *p) {
  (void)u, (void)d, (void)id, (void)p; /* the subscription holds the slot; no callbacks enabled */
}

int ag__cupti_subscribe(void *subscribe, void **handle, const char *who, char *err,
                        size_t errlen) {
  CUptiResult (*sub)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
  *(void **)&sub = subscribe;
  CUpti_SubscriberHandle h = NULL;
  CUptiResult r = sub(&h, on_callback, NULL);
  *handle = h;
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    const char *inj = getenv("CUDA_INJECTION64_PATH");
    ag__seterr(err, errlen,
               "CUPTI already has a subscriber in this process (another tool holds it%s%s%s): "
               "%s need%s the process's one CUPTI subscriber; run the collection without the "
               "other profiler or CUPTI-based library",
               inj && *inj ? ": CUDA_INJECTION64_PATH='" : "", inj && *inj ? inj : "",
               inj && *inj ? "'" : "", who, verb_s(who));
    return AG_HOST_EBUSY;
  }
  if (r != CUPTI_SUCCESS) {
    ag__seterr(err, errlen, "cuptiSubscribe failed (CUPTI error %d)", (int)r);
    return AG_HOST_ECUPTI;
  }
  return 0;
}
