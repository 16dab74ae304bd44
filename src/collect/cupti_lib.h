/*
 * cupti_lib.h — what the CUPTI collectors of libargus_host share
 * (sass_metrics.c, activity.c, pcsamp.c): finding and loading libcupti with
 * dlopen, subscribing as the process's one CUPTI subscriber, and the
 * messages for a missing library and a held subscriber. `who` names the
 * collector in the messages ("SASS metrics", "PC sampling", "the activity
 * trace"). Nothing here prints or exits.
 */
#ifndef ARGUS_COLLECT_CUPTI_LIB_H
#define ARGUS_COLLECT_CUPTI_LIB_H

#include <stddef.h>

/* A CUPTI profiler parameter struct `v` of type T, zeroed, its structSize
 * set (the cupti_profiler_*.h and cupti_range_profiler.h convention). */
#define AG_CUPTI_PARAMS(T, v) T v = {.structSize = T##_STRUCT_SIZE}

/* The CUPTI library: ARGUS_LIBCUPTI when set (only that one), else
 * libcupti.so.13, libcupti.so and the toolkit's copies. NULL (the reason
 * in err) when none loads. */
void *ag__cupti_lib(const char *who, char *err, size_t errlen);
/* The message for a symbol the library lacks. */
void ag__cupti_lacks(const char *who, const char *sym, char *err, size_t errlen);
/* The message and code of a failed CUPTI call `call` (its result r; the
 * library's cuptiGetResultString as its address, or NULL): profiling not
 * permitted (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: RmProfilingAdminOnly) and
 * an unsupported device are AG_HOST_EUNSUPPORTED, the rest AG_HOST_ECUPTI. */
int ag__cupti_fail(void *result_string, int r, const char *call, char *err, size_t errlen);
/* ag__cupti_fail for a collector object o that holds the library's
 * cuptiGetResultString (every collector's). */
#define AG__CUPTI_FAIL(o, r, call, err, n)                                     \
  ag__cupti_fail((void *)(o)->cuptiGetResultString, (int)(r), (call), (err), (n))
/* The one checking macro for the collectors' CUPTI calls: `call` through o's
 * function pointer; on failure the calling function returns the code, the
 * message in err (err and errlen in scope). */
#define AG__CP(o, call)                                                        \
  do {                                                                         \
    CUptiResult cp_r_ = (o)->call;                                             \
    if (cp_r_ != CUPTI_SUCCESS)                                                \
      return AG__CUPTI_FAIL((o), cp_r_, #call, err, errlen);                   \
  } while (0)
/* cuptiSubscribe through `subscribe` (the library's, as its address) with a
 * callback that does nothing: 0, *handle set; AG_HOST_EBUSY with the
 * message naming the other tool when CUPTI already has a subscriber;
 * AG_HOST_ECUPTI otherwise (the error code in the message). */
int ag__cupti_subscribe(void *subscribe, void **handle, const char *who, char *err,
                        size_t errlen);

#endif
