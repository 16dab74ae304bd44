/*
 * host.c — libargus_host: the runtime a harness loads its module through
 * (include/argus/host.h).
 *
 * Outside Argus it wraps cuModuleLoadData / cuModuleGetFunction /
 * cuLaunchKernel on the primary context. Under Argus (ARGUS_COLLECT=trace)
 * it swaps in the variant cubin, and for each recorded launch carves the
 * launch's record and metadata areas out of one device pool, zeroes the
 * metadata and binds the constant descriptor __argus_trace — all stream
 * ordered on the launch's stream, from pinned memory, so recording adds no
 * host synchronization. ag_host_finish copies everything out and writes the
 * evidence file with evwrite.c. ARGUS_COLLECT=sass hands the variant to the
 * CUPTI SASS-metrics collector (sass_metrics.c) instead; =stalls to PC
 * sampling (pcsamp.c); =counters to the range profiler (counters.c).
 *
 * The driver is opened with dlopen, so this library depends on libc alone
 * and a harness starts on a machine without a GPU (AG_HOST_ENODEV). Every
 * driver call goes through CU(), which records the call's text and the
 * driver's error name in the session's message.
 *
 * Load: a handful of calls per launch; cost on the launch path is two async
 * copies (memset + descriptor) for recorded launches and nothing after.
 */
#define _GNU_SOURCE
#include "argus/host.h"

#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "argus/demangle.h"
#include "argus/evidence.h"
#include "evwrite.h"
#include "sass_metrics.h"
#include "activity.h"
#include "pcsamp.h"
#include "pmsamp.h"
#include "counters.h"
#include "map_bind.h"

/* ------------------------------------------------------------ the driver */

#define AG__STR2(x) #x
#define AG__STR(x) AG__STR2(x) /* expands cuMemAlloc to "cuMemAlloc_v2" */

#define AG_CU_FUNCS(X)                                                         \
  X(cuInit)                                                                    \
  X(cuDriverGetVersion)                                                        \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetName)                                                           \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDeviceGetUuid)                                                           \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuDevicePrimaryCtxRelease)                                                 \
  X(cuCtxSetCurrent)                                                           \
  X(cuCtxSynchronize)                                                          \
  X(cuModuleLoadData)                                                          \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuModuleGetGlobal)                                                         \
  X(cuFuncSetAttribute)                                                        \
  X(cuLaunchKernel)                                                            \
  X(cuMemAlloc)                                                                \
  X(cuMemFree)                                                                 \
  X(cuMemsetD8Async)                                                           \
  X(cuMemcpyHtoDAsync)                                                         \
  X(cuMemcpyDtoH)                                                              \
  X(cuMemHostAlloc)                                                            \
  X(cuMemFreeHost)                                                             \
  X(cuMemGetInfo)                                                              \
  X(cuStreamSynchronize)                                                       \
  X(cuEventCreate)                                                             \
  X(cuEventRecord)                                                             \
  X(cuEventElapsedTime)                                                        \
  X(cuEventDestroy)                                                            \
  X(cuStreamCreate)                                                            \
  X(cuStreamDestroy)                                                           \
  X(cuStreamWaitEvent)                                                         \
  X(cuEventSynchronize)                                                        \
  X(cuFuncGetAttribute)                                                        \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                               \
  X(cuStreamWaitValue32)                                                       \
  X(cuMemHostGetDevicePointer)                                                 \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)

/* Optional: the kernel lookup by a demangled name lists the module's
 * functions (CUDA 12.4+; without them only exact names are found), and a
 * recorded launch notes its kernel's registers, static shared memory and
 * the driver's occupancy (without them the evidence omits them). */
#define AG_CU_OPTIONAL(X)                                                      \
  X(cuModuleGetFunctionCount)                                                  \
  X(cuModuleEnumerateFunctions)                                                \
  X(cuFuncGetName)                                                             \
  X(cuStreamBatchMemOp)

typedef struct cu_api {
  void *lib;
#define AG__FP(fn) __typeof__(&fn) fn;
  AG_CU_FUNCS(AG__FP)
  AG_CU_OPTIONAL(AG__FP)
#undef AG__FP
} cu_api;

/* ---------------------------------------------------------------- objects */

typedef struct launch_rec {
  uint32_t launch;
  const char *kernel; /* borrowed from the kernel object */
  unsigned grid[3], block[3], shared_bytes;
  uint32_t warps, warps_per_cta, cap; /* cap: records a warp keeps */
  CUdeviceptr records, meta;          /* records: warp_slots(cap) per warp */
  int have_attrs, registers, static_smem, have_occ, occ_ctas; /* as the driver says */
} launch_rec;

/* Record slots per warp for cap kept records: the last is the probe's
 * trash slot, where records past the capacity go. */
static uint64_t warp_slots(uint32_t cap) {
  return (uint64_t)cap + 1;
}

/* Why a launch of the variant was or was not recorded (the timing file). */
typedef enum launch_why {
  LW_RECORDED, LW_BEFORE, LW_AFTER, LW_BUDGET, LW_WARPS, LW_TIME_ONLY, LW_COUNT
} launch_why;
static const char *const launch_why_text[] = {
    "recorded", "before the selection (ARGUS_TRACE_SKIP)",
    "after the selection (ARGUS_TRACE_LAUNCHES)", "the record budget was exhausted",
    "too many warps to record 16 records each", "timing run (nothing is recorded)",
    "count-only: its records per warp sized the record area (ARGUS_TRACE_COUNT)"};

/* One timed launch of the variant: events around the kernel alone, and the
 * occupancy the driver computes for its block and dynamic shared memory. */
typedef struct launch_time {
  uint32_t launch;
  const char *kernel; /* borrowed from the kernel object */
  unsigned grid[3], block[3], smem;
  CUevent a, b;
  int registers, ctas_per_sm;
  launch_why why;
} launch_time;
#define AG_HOST_MAX_TIMED (1u << 16)

struct ag_host_kernel {
  ag_host_module *mod;
  CUfunction fn;
  char *name;
  int registers;          /* CU_FUNC_ATTRIBUTE_NUM_REGS, -1 until asked */
  unsigned occ_threads, occ_smem; /* the configuration occ_ctas is for */
  int occ_ctas;
  ag_host_kernel *next;
};

struct ag_host_module {
  ag_host *h;
  CUmodule mod;
  char *name;
  int traced;
  int variant; /* the variant a Collect task loaded: its launches are timed */
  int adopted; /* loaded by another runtime (ag_host_adopt): never unloaded here */
  CUdeviceptr desc; /* __argus_trace, when traced */
  ag__map_binding map; /* a mapping variant's counters (map_bind.c) */
  ag_host_kernel *kernels;
  ag_host_module *next;
};

typedef struct calib {
  const char *when;
  uint64_t cycles, ns;
  uint64_t gt0, gt1; /* %globaltimer at the first and the last edge */
} calib;

struct ag_host {
  cu_api cu;
  int ok;        /* driver and context usable */
  int device;
  CUdevice dev;
  CUcontext ctx;
  char msg[1024];
  ag_host_module *modules;
  int finished;

  /* Argus collect configuration (from the environment) */
  int collect; /* 0: outside Argus; 1: trace; 2: time (the trace-free variant, or a
                  mapping variant under ARGUS_COLLECT=map); 3: sass; 4: stalls;
                  5: counters */
  int map_only; /* ARGUS_COLLECT=map: the variant must be a mapping variant */
  uint32_t map_slots; /* ARGUS_MAP_SLOTS: the most counter slots to bind (0: the need) */
  ag_sassm *sassm; /* ARGUS_COLLECT=sass: the SASS-metrics collector (sass_metrics.c) */
  int want_act;  /* ARGUS_COLLECT=system, or ARGUS_ACTIVITY=1 beside trace/time */
  ag_act *act;   /* the activity collector (activity.c): system.json */
  ag_pcs *pcs;   /* ARGUS_COLLECT=stalls (collect 4): PC sampling (pcsamp.c) */
  int want_pm;   /* ARGUS_COLLECT=pm, or ARGUS_PM=1 beside trace/time */
  ag_pms *pms;   /* PM sampling (pmsamp.c): pm.json */
  ag_ctr *ctr;   /* ARGUS_COLLECT=counters (collect 5): the range profiler (counters.c) */
  const char *out_dir, *variant, *variant_id, *module_match, *sites_path;
  uint32_t cap, max_launches, skip;
  uint64_t budget;
  int replaced; /* the variant was loaded */
  char *replaced_name;

  /* recording state */
  uint32_t nlaunch;  /* launches of traced kernels so far */
  launch_rec *recs;
  uint32_t nrecs;
  CUdeviceptr pool;
  uint64_t pool_size, pool_used;
  uint64_t pool_zeroed; /* the pool is zeroed up to here (bytes) */
  ag_ev_desc *pinned; /* 2 * max_launches + 2 slots (SLOT_* below) */
  ag_ev_desc cur;     /* what the descriptor holds once the queued copies ran */
  int cur_known;
  /* zeroing and binding ahead, on a side stream, off the harness's clock
   * (docs/tracing.md, "Launches and the record budget") */
  int ahead;           /* ARGUS_TRACE_AHEAD (default 1; 0: inline, as before) */
  uint32_t warps_hint; /* ARGUS_TRACE_WARPS: the most warps a launch will have */
  uint32_t area_warps; /* the warps each recorded launch's area is laid out for */
  CUstream side;
  CUevent bound, after; /* the last copy ahead; the kernel it waits for */
  int side_state;       /* 0 untried, 1 usable, -1 unavailable */
  int pending;          /* a copy ahead the next launch must wait for */
  uint32_t ahead_used;  /* 1 + the recorded-launch slot last bound ahead */
  uint32_t nbound_inline; /* recorded launches whose descriptor was bound inline */
  /* the count-only launch (ARGUS_TRACE_COUNT): sizes the records per warp */
  int count_first, counted;
  uint32_t count_max, count_exited, count_launch;
  uint64_t count_warps, count_bytes;
  CUdeviceptr count_area;
  CUevent spare[2]; /* the next timed launch's events */
  int nspare;
  void *last_stream;
  int have_last_stream;
  calib cal[2];
  int ncal;
  /* the calibration kernel, loaded by the first calibration (ag_host_open,
   * before the harness runs) and kept until ag_host_close: the finish
   * calibration loads no module after the harness's own code ran (a
   * profiler the harness ran may be tearing CUPTI down then: docs/triton.md,
   * "Limits") */
  CUmodule cal_mod;
  CUfunction cal_fn;
  CUdeviceptr cal_buf;
  char budget_note[160];
  launch_time *times; /* every timed launch of the variant, in launch order */
  uint32_t ntimes, times_cap;
  /* the gate: a stream wait the host releases once the start event, the
   * kernel and the end event are all queued, so the events hold the kernel
   * and not the host's submission gap (a harness that synchronizes after
   * every launch leaves the GPU idle while the host submits) */
  volatile uint32_t *gate;
  CUdeviceptr gate_dev;
  uint32_t gate_seq;
  int gate_state; /* 0 untried, 1 usable, -1 unavailable, -2 a profiler is attached */
  /* the launch between ag_host_launch_begin and ag_host_launch_end (another
   * runtime launches the kernel in between: docs/triton.md) */
  struct inflight {
    ag_host_kernel *k; /* NULL: none */
    launch_time *lt;
    launch_why why;
    uint32_t idx;
    int gated;
    void *stream;
  } fl;
};

static void setmsg(ag_host *h, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void setmsg(ag_host *h, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(h->msg, sizeof h->msg, fmt, ap);
  va_end(ap);
}

static int cu_fail(ag_host *h, CUresult r, const char *call) {
  const char *name = NULL, *text = NULL;
  if (h->cu.cuGetErrorName)
    h->cu.cuGetErrorName(r, &name);
  if (h->cu.cuGetErrorString)
    h->cu.cuGetErrorString(r, &text);
  setmsg(h, "%s failed: %s (%s)", call, name ? name : "CUDA_ERROR_?", text ? text : "?");
  return AG_HOST_ECUDA;
}

/* The one checking macro for driver calls: evaluates the call, and on error
 * records its text and the driver's error in h->msg and returns
 * AG_HOST_ECUDA from the enclosing function. */
#define CU(h, call)                                                            \
  do {                                                                         \
    CUresult cu_r_ = (h)->cu.call;                                             \
    if (cu_r_ != CUDA_SUCCESS)                                                 \
      return cu_fail((h), cu_r_, #call);                                       \
  } while (0)

static int load_driver(ag_host *h) {
  const char *path = getenv("ARGUS_LIBCUDA");
  h->cu.lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h->cu.lib) {
    setmsg(h, "no CUDA driver: cannot load %s (%s); this needs a machine with an "
              "NVIDIA GPU and its driver",
           path && *path ? path : "libcuda.so.1", dlerror());
    return AG_HOST_ENODEV;
  }
#define AG__LOAD(fn)                                                           \
  *(void **)(&h->cu.fn) = dlsym(h->cu.lib, AG__STR(fn));                       \
  if (!h->cu.fn) {                                                             \
    setmsg(h, "the CUDA driver lacks %s: it is older than this argus needs",  \
           AG__STR(fn));                                                       \
    return AG_HOST_ENODEV;                                                     \
  }
  AG_CU_FUNCS(AG__LOAD)
#undef AG__LOAD
#define AG__LOAD_OPT(fn) *(void **)(&h->cu.fn) = dlsym(h->cu.lib, AG__STR(fn));
  AG_CU_OPTIONAL(AG__LOAD_OPT)
#undef AG__LOAD_OPT
  return 0;
}

/* ---------------------------------------------------------- environment */

static const char *env(const char *k) {
  const char *v = getenv(k);
  return v && *v ? v : NULL;
}

static int env_u64(ag_host *h, const char *k, uint64_t dflt, uint64_t lo, uint64_t hi,
                   uint64_t *out) {
  const char *v = env(k);
  *out = dflt;
  if (!v)
    return 0;
  char *end = NULL;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  if (errno || !end || *end || x < lo || x > hi) {
    setmsg(h, "%s='%s' is not a whole number in [%llu, %llu]", k, v,
           (unsigned long long)lo, (unsigned long long)hi);
    return AG_HOST_EINVAL;
  }
  *out = x;
  return 0;
}

static int read_env(ag_host *h) {
  const char *c = env("ARGUS_COLLECT");
  if (!c)
    return 0;
  if (strcmp(c, "trace") != 0 && strcmp(c, "time") != 0 && strcmp(c, "sass") != 0 &&
      strcmp(c, "map") != 0 && strcmp(c, "system") != 0 && strcmp(c, "stalls") != 0 &&
      strcmp(c, "pm") != 0 && strcmp(c, "counters") != 0) {
    setmsg(h, "ARGUS_COLLECT='%s' is not a collection this host runtime knows "
              "(known: trace, time, map, sass, system, stalls, pm, counters)", c);
    return AG_HOST_EUNSUPPORTED;
  }
  /* map: a mapping variant's counters, its launches timed as in a timing run;
   * system: the timing run (time) with the activity trace beside it */
  h->map_only = !strcmp(c, "map");
  h->collect = !strcmp(c, "trace") ? 1
               : !strcmp(c, "time") || h->map_only || !strcmp(c, "system") || !strcmp(c, "pm")
                   ? 2
               : !strcmp(c, "sass") ? 3 : !strcmp(c, "stalls") ? 4 : 5;
  const char *act = env("ARGUS_ACTIVITY");
  h->want_act = !strcmp(c, "system") || (act && !strcmp(act, "1") && h->collect <= 2);
  /* pm: the timing run with PM sampling beside it (docs/throughput.md) */
  const char *pm = env("ARGUS_PM");
  h->want_pm = !strcmp(c, "pm") || (pm && !strcmp(pm, "1") && h->collect <= 2);
  h->out_dir = env("ARGUS_OUT");
  h->variant = env("ARGUS_VARIANT");
  h->variant_id = env("ARGUS_VARIANT_ID");
  h->module_match = env("ARGUS_MODULE");
  h->sites_path = env("ARGUS_SITES");
  if (!h->out_dir || !h->variant) {
    setmsg(h, "ARGUS_COLLECT=%s needs ARGUS_OUT (output directory) and "
              "ARGUS_VARIANT (variant cubin)", c);
    return AG_HOST_EINVAL;
  }
  uint64_t v;
  int rc;
  if ((rc = env_u64(h, "ARGUS_TRACE_RECORDS", 4096, 1, 1u << 24, &v)))
    return rc;
  h->cap = (uint32_t)v;
  if ((rc = env_u64(h, "ARGUS_TRACE_LAUNCHES", 8, 1, 1u << 16, &v)))
    return rc;
  h->max_launches = (uint32_t)v;
  if ((rc = env_u64(h, "ARGUS_TRACE_SKIP", 0, 0, 1u << 30, &v)))
    return rc;
  h->skip = (uint32_t)v;
  if ((rc = env_u64(h, "ARGUS_TRACE_BUDGET_MB", 1024, 1, 1u << 20, &v)))
    return rc;
  h->budget = v << 20;
  if ((rc = env_u64(h, "ARGUS_TRACE_COUNT", 0, 0, 1, &v)))
    return rc;
  h->count_first = (int)v;
  if ((rc = env_u64(h, "ARGUS_TRACE_WARPS", 0, 0, 0xffffffffu, &v)))
    return rc;
  h->warps_hint = (uint32_t)v;
  if ((rc = env_u64(h, "ARGUS_TRACE_AHEAD", 1, 0, 2, &v)))
    return rc;
  h->ahead = (int)v;
  if ((rc = env_u64(h, "ARGUS_MAP_SLOTS", 0, 1, AG_MAP_MAX_SLOTS, &v)))
    return rc;
  h->map_slots = (uint32_t)v;
  return 0;
}

/* Writes <out>/host-error.txt so the Collect task can say why a run failed. */
static void note_error(ag_host *h) {
  if (!h->collect || !h->out_dir || !h->msg[0])
    return;
  char path[4096];
  snprintf(path, sizeof path, "%s/host-error.txt", h->out_dir);
  FILE *f = fopen(path, "w");
  if (f) {
    fprintf(f, "%s\n", h->msg);
    fclose(f);
  }
}

static int fail(ag_host *h, int rc) {
  if (rc)
    note_error(h);
  return rc;
}

/* ----------------------------------------------------------- calibration */

/* One thread: waits for a %globaltimer edge, reads %clock64, spins for
 * out[4] ns, waits for the next edge, reads %clock64 again. Edge-aligned
 * reads make the 32 ns timer step cancel out. Compiled by the driver. */
static const char calib_ptx[] =
    ".version 7.0\n"
    ".target sm_70\n"
    ".address_size 64\n"
    ".visible .entry argus_calibrate(.param .u64 out, .param .u64 span)\n"
    "{\n"
    "  .reg .b64 %rd<12>;\n"
    "  .reg .pred %p<2>;\n"
    "  ld.param.u64 %rd1, [out];\n"
    "  ld.param.u64 %rd2, [span];\n"
    "  cvta.to.global.u64 %rd1, %rd1;\n"
    "  mov.u64 %rd3, %globaltimer;\n"
    "L0:\n"
    "  mov.u64 %rd4, %globaltimer;\n"
    "  setp.eq.u64 %p1, %rd4, %rd3;\n"
    "  @%p1 bra L0;\n"
    "  mov.u64 %rd5, %clock64;\n"
    "  add.u64 %rd6, %rd4, %rd2;\n"
    "L1:\n"
    "  mov.u64 %rd7, %globaltimer;\n"
    "  setp.lt.u64 %p1, %rd7, %rd6;\n"
    "  @%p1 bra L1;\n"
    "L2:\n"
    "  mov.u64 %rd8, %globaltimer;\n"
    "  setp.eq.u64 %p1, %rd8, %rd7;\n"
    "  @%p1 bra L2;\n"
    "  mov.u64 %rd9, %clock64;\n"
    "  st.global.v2.u64 [%rd1], {%rd4, %rd5};\n"
    "  st.global.v2.u64 [%rd1+16], {%rd8, %rd9};\n"
    "  ret;\n"
    "}\n";

static int calibrate(ag_host *h, const char *when, uint64_t span_ns) {
  CUresult r;
  uint64_t out[4] = {0};
  if (!h->cal_mod) {
    if ((r = h->cu.cuModuleLoadData(&h->cal_mod, calib_ptx)) != CUDA_SUCCESS) {
      h->cal_mod = NULL;
      return cu_fail(h, r, "cuModuleLoadData(calibration kernel)");
    }
    if ((r = h->cu.cuModuleGetFunction(&h->cal_fn, h->cal_mod, "argus_calibrate")) ||
        (r = h->cu.cuMemAlloc(&h->cal_buf, sizeof out))) {
      h->cu.cuModuleUnload(h->cal_mod); /* the next calibration tries again */
      h->cal_mod = NULL;
      h->cal_buf = 0;
      return cu_fail(h, r, "calibration setup");
    }
  }
  uint64_t span = span_ns;
  void *args[] = {&h->cal_buf, &span};
  if ((r = h->cu.cuLaunchKernel(h->cal_fn, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL)) ||
      (r = h->cu.cuCtxSynchronize()) ||
      (r = h->cu.cuMemcpyDtoH(out, h->cal_buf, sizeof out)))
    return cu_fail(h, r, "calibration kernel");
  if (out[2] <= out[0] || out[3] <= out[1]) {
    setmsg(h, "clock calibration read no progress (globaltimer %llu..%llu, clock "
              "%llu..%llu)",
           (unsigned long long)out[0], (unsigned long long)out[2],
           (unsigned long long)out[1], (unsigned long long)out[3]);
    return AG_HOST_ECUDA;
  }
  if (h->ncal < 2) {
    h->cal[h->ncal].when = when;
    h->cal[h->ncal].gt0 = out[0];
    h->cal[h->ncal].gt1 = out[2];
    h->cal[h->ncal].ns = out[2] - out[0];
    h->cal[h->ncal].cycles = out[3] - out[1];
    h->ncal++;
  }
  return 0;
}

/* PM sampling, started before the calibration kernel that aligns its clock;
 * the activity trace beside it (kernels on CUPTI's clock, which align a
 * region timeline of another run) unless ARGUS_PM_ACTIVITY=0: kernels only,
 * so a PM run sets no NVTX injection (docs/throughput.md). */
static int open_pm(ag_host *h) {
  const char *a = env("ARGUS_PM_ACTIVITY");
  int rc;
  if (!h->act && !(a && !strcmp(a, "0")) &&
      (rc = ag_act_open(&h->act, "kernel", h->msg, sizeof h->msg)))
    return rc;
  return ag_pms_open(h->device, &h->pms, h->msg, sizeof h->msg);
}

/* ------------------------------------------------------------ lifecycle */

int ag_host_open(ag_host **out) {
  *out = NULL;
  ag_host *h = calloc(1, sizeof *h);
  if (!h)
    return AG_HOST_ENOMEM;
  *out = h;
  int rc = read_env(h);
  if (rc)
    return fail(h, rc);
  if ((rc = load_driver(h)))
    return fail(h, rc);
  CUresult r = h->cu.cuInit(0);
  if (r == CUDA_ERROR_NO_DEVICE || r == CUDA_ERROR_NOT_FOUND ||
      r == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH || r == CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE) {
    cu_fail(h, r, "cuInit(0)");
    return fail(h, AG_HOST_ENODEV);
  }
  if (r != CUDA_SUCCESS)
    return fail(h, cu_fail(h, r, "cuInit(0)"));
  int count = 0;
  if ((r = h->cu.cuDeviceGetCount(&count)))
    return fail(h, cu_fail(h, r, "cuDeviceGetCount"));
  uint64_t dev = 0;
  if ((rc = env_u64(h, "ARGUS_DEVICE", 0, 0, 1023, &dev)))
    return fail(h, rc);
  if (count == 0 || (int)dev >= count) {
    setmsg(h, "no CUDA device %d (the driver sees %d)", (int)dev, count);
    return fail(h, AG_HOST_ENODEV);
  }
  h->device = (int)dev;
  if ((r = h->cu.cuDeviceGet(&h->dev, h->device)))
    return fail(h, cu_fail(h, r, "cuDeviceGet"));
  if ((r = h->cu.cuDevicePrimaryCtxRetain(&h->ctx, h->dev)))
    return fail(h, cu_fail(h, r, "cuDevicePrimaryCtxRetain"));
  if ((r = h->cu.cuCtxSetCurrent(h->ctx)))
    return fail(h, cu_fail(h, r, "cuCtxSetCurrent"));
  h->ok = 1;
  if (h->collect) {
    struct stat st;
    if (stat(h->out_dir, &st) || !S_ISDIR(st.st_mode)) {
      setmsg(h, "ARGUS_OUT='%s' is not a directory", h->out_dir);
      return fail(h, AG_HOST_EINVAL);
    }
    /* the activity trace sees the calibration kernels: they align its
     * clock with %globaltimer (docs/system.md) */
    if (h->want_act && (rc = ag_act_open(&h->act, NULL, h->msg, sizeof h->msg))) {
      h->finished = 1;
      return fail(h, rc);
    }
    if (h->want_pm && (rc = open_pm(h))) {
      h->finished = 1;
      return fail(h, rc);
    }
    /* 100 ms: also the clock's warm-up, so the harness's first launches do
     * not run while an idle GPU ramps its clocks (the timing run comes first
     * and would look slower than the traced one: docs/tracing.md) */
    if ((rc = calibrate(h, "open", 100000000)))
      return fail(h, rc);
  }
  if (h->collect == 3 &&
      (rc = ag_sassm_open(h->ctx, h->device, NULL, &h->sassm, h->msg, sizeof h->msg))) {
    h->finished = 1; /* nothing to finish: ag_host_close keeps this reason */
    return fail(h, rc);
  }
  if (h->collect == 4 && (rc = ag_pcs_open(h->ctx, &h->pcs, h->msg, sizeof h->msg))) {
    h->finished = 1;
    return fail(h, rc);
  }
  if (h->collect == 5 &&
      (rc = ag_ctr_open(h->ctx, h->device, h->out_dir, &h->ctr, h->msg, sizeof h->msg))) {
    h->finished = 1;
    return fail(h, rc);
  }
  return 0;
}

const char *ag_host_errmsg(const ag_host *h) { return h ? h->msg : "out of memory"; }
int ag_host_under_argus(const ag_host *h) { return h && h->collect; }
int ag_host_device(const ag_host *h) { return h ? h->device : -1; }

int ag_host_range_push(ag_host *h, const char *name) {
  if (!h || !h->ctr)
    return 0; /* outside ARGUS_COLLECT=counters: nothing to measure */
  return fail(h, ag_ctr_push(h->ctr, name, h->msg, sizeof h->msg));
}

int ag_host_range_pop(ag_host *h) {
  if (!h || !h->ctr)
    return 0;
  return fail(h, ag_ctr_pop(h->ctr, h->msg, sizeof h->msg));
}

/* host.c's driver, as the mapping run's binding calls it */
static ag__map_cu map_cu(const ag_host *h) {
  ag__map_cu c = {h->cu.cuModuleGetGlobal, h->cu.cuMemAlloc,        h->cu.cuMemFree,
                  h->cu.cuMemsetD8Async,   h->cu.cuMemcpyHtoDAsync, h->cu.cuMemcpyDtoH};
  return c;
}

static void free_module(ag_host *h, ag_host_module *m) {
  if (m->map.bound && h->ok) {
    ag__map_cu c = map_cu(h);
    ag__map_unbind(&c, &m->map);
  }
  while (m->kernels) {
    ag_host_kernel *k = m->kernels;
    m->kernels = k->next;
    free(k->name);
    free(k);
  }
  if (m->mod && h->ok && !m->adopted)
    h->cu.cuModuleUnload(m->mod);
  free(m->name);
  free(m);
}

void ag_host_close(ag_host *h) {
  if (!h)
    return;
  if (h->ok && !h->finished)
    ag_host_finish(h);
  while (h->modules) {
    ag_host_module *m = h->modules;
    h->modules = m->next;
    free_module(h, m);
  }
  ag_sassm_close(h->sassm); /* before the context goes */
  ag_pcs_close(h->pcs);
  ag_pms_close(h->pms);
  ag_ctr_close(h->ctr);
  ag_act_close(h->act);
  if (h->ok) {
    if (h->pool)
      h->cu.cuMemFree(h->pool);
    if (h->count_area)
      h->cu.cuMemFree(h->count_area);
    if (h->pinned)
      h->cu.cuMemFreeHost(h->pinned);
    if (h->side_state == 1) {
      h->cu.cuEventDestroy(h->bound);
      h->cu.cuEventDestroy(h->after);
    }
    if (h->side)
      h->cu.cuStreamDestroy(h->side);
    if (h->nspare) {
      h->cu.cuEventDestroy(h->spare[0]);
      h->cu.cuEventDestroy(h->spare[1]);
    }
    if (h->cal_buf)
      h->cu.cuMemFree(h->cal_buf);
    if (h->cal_mod)
      h->cu.cuModuleUnload(h->cal_mod);
  }
  /* every driver call before the context goes and the library is closed */
  for (uint32_t i = 0; h->ok && i < h->ntimes; i++) {
    if (h->times[i].a)
      h->cu.cuEventDestroy(h->times[i].a);
    if (h->times[i].b)
      h->cu.cuEventDestroy(h->times[i].b);
  }
  free(h->times);
  if (h->ok && h->gate)
    h->cu.cuMemFreeHost((void *)h->gate);
  if (h->ok)
    h->cu.cuDevicePrimaryCtxRelease(h->dev);
  if (h->cu.lib)
    dlclose(h->cu.lib);
  /* the last act: the evidence is written and the session closed, so a
   * death of the process after this leaves it whole (AG_HOST_CLOSED_FILE) */
  if (h->ok && h->collect && h->finished && h->out_dir && !h->msg[0]) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", h->out_dir, AG_HOST_CLOSED_FILE);
    FILE *f = fopen(path, "w");
    if (f) {
      fputs("closed\n", f);
      fclose(f);
    }
  }
  free(h->recs);
  free(h->replaced_name);
  free(h);
}

/* --------------------------------------------------------------- modules */

/* Reads a whole file, NUL-terminated (PTX must be, for cuModuleLoadData). */
static int read_file(ag_host *h, const char *path, char **data, size_t *len) {
  FILE *f = fopen(path, "rb");
  *data = NULL;
  if (!f) {
    setmsg(h, "cannot open '%s': %s", path, strerror(errno));
    return errno == ENOENT ? AG_HOST_ENOTFOUND : AG_HOST_EIO;
  }
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (!buf) {
      fclose(f);
      setmsg(h, "out of memory reading '%s'", path);
      return AG_HOST_ENOMEM;
    }
    n += fread(buf + n, 1, cap - n - 1, f);
    if (n < cap - 1)
      break;
    cap *= 2;
    char *nb = realloc(buf, cap);
    if (!nb)
      free(buf);
    buf = nb;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    setmsg(h, "cannot read '%s'", path);
    return AG_HOST_EIO;
  }
  buf[n] = 0; /* PTX text must be NUL-terminated for cuModuleLoadData */
  *data = buf;
  *len = n;
  return 0;
}

static int replaces(ag_host *h, const char *name) {
  if (!h->collect || h->replaced)
    return 0;
  if (!h->module_match)
    return 1;
  return name && strstr(name, h->module_match) != NULL;
}

/* Loads `image` (adopted NULL), or takes the module another runtime loaded
 * (adopted), and binds what a variant needs. */
static int load_common(ag_host *h, const void *image, CUmodule adopted, const char *name,
                       int is_variant, ag_host_module **out) {
  ag_host_module *m = calloc(1, sizeof *m);
  if (!m) {
    setmsg(h, "out of memory");
    return AG_HOST_ENOMEM;
  }
  m->h = h;
  m->name = strdup(name ? name : "(image)");
  m->adopted = adopted != NULL;
  CUresult r = adopted ? (m->mod = adopted, CUDA_SUCCESS) : h->cu.cuModuleLoadData(&m->mod, image);
  if (r != CUDA_SUCCESS) {
    char call[512];
    snprintf(call, sizeof call, "cuModuleLoadData('%s')", m->name ? m->name : "?");
    free_module(h, m);
    return cu_fail(h, r, call);
  }
  size_t bytes = 0;
  CUdeviceptr d = 0;
  r = h->cu.cuModuleGetGlobal(&d, &bytes, m->mod, AG_EV_DESC_SYMBOL);
  m->variant = is_variant && h->collect;
  if (r == CUDA_SUCCESS && bytes == AG_EV_DESC_BYTES) {
    m->traced = is_variant && h->collect == 1;
    m->desc = d;
  } else if (is_variant && h->collect == 1) {
    setmsg(h, "variant '%s' has no probe descriptor %s: it is not a traced variant",
           m->name, AG_EV_DESC_SYMBOL);
    free_module(h, m);
    return AG_HOST_EINVAL;
  }
  if (m->variant) { /* a mapping variant: its counters (docs/attribution.md) */
    ag__map_cu c = map_cu(h);
    int mr = ag__map_bind(&c, m->mod, NULL, h->map_slots, &m->map, h->msg, sizeof h->msg);
    if (!mr && is_variant && h->map_only && !m->map.bound) {
      setmsg(h, "variant '%s' has no counter descriptor %s: ARGUS_COLLECT=map runs a "
                "mapping variant (argus variant --kind mapping)", m->name, AG_MAP_DESC_SYMBOL);
      mr = AG_HOST_EINVAL;
    }
    if (mr) {
      free_module(h, m);
      return mr;
    }
  }
  m->next = h->modules;
  h->modules = m;
  *out = m;
  return 0;
}

static int prepare_ahead(ag_host *h, ag_host_module *m);

/* Loads the variant file in place of the module `name`; or, adopted, takes
 * the module another runtime loaded from `image` (len bytes; NULL: not
 * checked) as the variant, once its bytes are the variant file's. */
static int load_variant(ag_host *h, const char *name, CUmodule adopted, const void *image,
                        size_t ilen, ag_host_module **out) {
  char *data = NULL;
  size_t len = 0;
  int rc = read_file(h, h->variant, &data, &len);
  if (rc)
    return rc;
  if (adopted && image && (ilen != len || memcmp(image, data, len) != 0)) {
    setmsg(h, "the module '%s' that was loaded is not the variant '%s' (%zu bytes, the "
              "variant %zu): the substitution was not applied",
           name ? name : "(image)", h->variant, ilen, len);
    free(data);
    return AG_HOST_EINVAL;
  }
  rc = load_common(h, data, adopted, h->variant, 1, out);
  /* SASS metrics: the variant's CRC, and the patching range opened before
   * its kernels' first launch */
  if (rc == 0 && h->sassm &&
      ((rc = ag_sassm_cubin(h->sassm, data, len, h->msg, sizeof h->msg)) ||
       (rc = ag_sassm_begin(h->sassm, h->msg, sizeof h->msg))))
    *out = NULL;
  /* PC sampling: the variant's CRC, and the range opened before its launches */
  if (rc == 0 && h->pcs &&
      ((rc = ag_pcs_cubin(h->pcs, data, len, h->msg, sizeof h->msg)) ||
       (rc = ag_pcs_begin(h->pcs, h->msg, sizeof h->msg))))
    *out = NULL;
  /* the range profiler: started before the variant's first launch */
  if (rc == 0 && h->ctr && (rc = ag_ctr_begin(h->ctr, h->msg, sizeof h->msg)))
    *out = NULL;
  free(data);
  if (rc == 0) {
    h->replaced = 1;
    h->replaced_name = strdup(name ? name : "(image)");
    rc = prepare_ahead(h, *out);
  }
  return rc;
}

int ag_host_load(ag_host *h, const char *path, ag_host_module **out) {
  *out = NULL;
  if (!h->ok) {
    setmsg(h, "ag_host_load: the session is not open");
    return AG_HOST_EINVAL;
  }
  if (replaces(h, path))
    return fail(h, load_variant(h, path, NULL, NULL, 0, out));
  char *data = NULL;
  size_t len = 0;
  int rc = read_file(h, path, &data, &len);
  if (rc)
    return fail(h, rc);
  rc = load_common(h, data, NULL, path, 0, out);
  free(data);
  return fail(h, rc);
}

int ag_host_load_image(ag_host *h, const void *image, const char *name,
                       ag_host_module **out) {
  *out = NULL;
  if (!h->ok) {
    setmsg(h, "ag_host_load_image: the session is not open");
    return AG_HOST_EINVAL;
  }
  if (replaces(h, name))
    return fail(h, load_variant(h, name, NULL, NULL, 0, out));
  return fail(h, load_common(h, image, NULL, name, 0, out));
}

int ag_host_adopt(ag_host *h, void *cumodule, const void *image, size_t image_bytes,
                  const char *name, ag_host_module **out) {
  *out = NULL;
  if (!h->ok) {
    setmsg(h, "ag_host_adopt: the session is not open");
    return AG_HOST_EINVAL;
  }
  if (!cumodule) {
    setmsg(h, "ag_host_adopt('%s'): no module (the CUmodule is NULL)", name ? name : "(image)");
    return fail(h, AG_HOST_EINVAL);
  }
  for (ag_host_module *m = h->modules; m; m = m->next)
    if (m->mod == (CUmodule)cumodule) {
      *out = m; /* adopted (or loaded) before: the same module object */
      return 0;
    }
  if (replaces(h, name))
    return fail(h, load_variant(h, name, (CUmodule)cumodule, image, image_bytes, out));
  return fail(h, load_common(h, NULL, (CUmodule)cumodule, name, 0, out));
}

int ag_host_module_traced(const ag_host_module *m) { return m && m->traced; }

/* 1 when `name` is the mangled `sym` or one of its demangled spellings. */
static int names_kernel(const char *sym, const char *name) {
  return sym && (strcmp(sym, name) == 0 || ag_demangle_prefix(sym, name) == strlen(name));
}

/* The module's function whose mangled name demangles to `name`
 * ("gemm::sgemm<128, 128, 8, float>" or the full signature). */
static CUresult find_demangled(ag_host *h, CUmodule mod, const char *name, CUfunction *fn,
                               const char **sym) {
  unsigned n = 0;
  if (!h->cu.cuModuleGetFunctionCount || !h->cu.cuModuleEnumerateFunctions ||
      !h->cu.cuFuncGetName || h->cu.cuModuleGetFunctionCount(&n, mod) != CUDA_SUCCESS ||
      n == 0 || n > 65536)
    return CUDA_ERROR_NOT_FOUND;
  CUfunction *fs = calloc(n, sizeof *fs);
  CUresult r = CUDA_ERROR_NOT_FOUND;
  if (fs && h->cu.cuModuleEnumerateFunctions(fs, n, mod) == CUDA_SUCCESS)
    for (unsigned i = 0; i < n && r != CUDA_SUCCESS; i++) {
      const char *s = NULL;
      if (h->cu.cuFuncGetName(&s, fs[i]) == CUDA_SUCCESS && names_kernel(s, name)) {
        *fn = fs[i];
        *sym = s;
        r = CUDA_SUCCESS;
      }
    }
  free(fs);
  return r;
}

int ag_host_kernel_get(ag_host_module *m, const char *name, ag_host_kernel **out) {
  ag_host *h = m->h;
  *out = NULL;
  for (ag_host_kernel *k = m->kernels; k; k = k->next)
    if (names_kernel(k->name, name)) {
      *out = k;
      return 0;
    }
  ag_host_kernel *k = calloc(1, sizeof *k);
  if (!k) {
    setmsg(h, "out of memory");
    return AG_HOST_ENOMEM;
  }
  const char *sym = name; /* the evidence names kernels by their symbol */
  CUresult r = h->cu.cuModuleGetFunction(&k->fn, m->mod, name);
  if (r == CUDA_ERROR_NOT_FOUND)
    r = find_demangled(h, m->mod, name, &k->fn, &sym);
  if (r == CUDA_SUCCESS && !(k->name = strdup(sym))) {
    free(k);
    setmsg(h, "out of memory");
    return AG_HOST_ENOMEM;
  }
  if (r != CUDA_SUCCESS) {
    free(k->name);
    free(k);
    if (r == CUDA_ERROR_NOT_FOUND) {
      setmsg(h, "kernel '%s' not found in module '%s' (give its symbol or its demangled name, "
                "e.g. 'ns::kern<128>')",
             name, m->name);
      return fail(h, AG_HOST_ENOTFOUND);
    }
    return fail(h, cu_fail(h, r, "cuModuleGetFunction"));
  }
  k->mod = m;
  k->registers = -1;
  k->next = m->kernels;
  m->kernels = k;
  *out = k;
  return 0;
}

int ag_host_kernel_set_attr(ag_host_kernel *k, int attribute, int value) {
  ag_host *h = k->mod->h;
  CUresult r = h->cu.cuFuncSetAttribute(k->fn, (CUfunction_attribute)attribute, value);
  if (r != CUDA_SUCCESS)
    return fail(h, cu_fail(h, r, "cuFuncSetAttribute"));
  return 0;
}

void *ag_host_kernel_cufunction(ag_host_kernel *k) { return k ? (void *)k->fn : NULL; }

/* ------------------------------------------------------------ recording */

/* Pinned descriptor slots: two per recordable launch (bound ahead, bound at
 * the launch when the guess was wrong), the "off" descriptor, the count-only
 * launch's. A slot is never rewritten while a copy from it may be pending. */
#define SLOT_AHEAD(h, i) (&(h)->pinned[2 * (size_t)(i)])
#define SLOT_INLINE(h, i) (&(h)->pinned[2 * (size_t)(i) + 1])
#define SLOT_OFF(h) (&(h)->pinned[2 * (size_t)(h)->max_launches])
#define SLOT_COUNT(h) (&(h)->pinned[2 * (size_t)(h)->max_launches + 1])

static int ensure_pool(ag_host *h) {
  if (h->pinned)
    return 0;
  size_t nslots = 2 * (size_t)h->max_launches + 2;
  CU(h, cuMemHostAlloc((void **)&h->pinned, nslots * sizeof(ag_ev_desc), 0));
  memset(h->pinned, 0, nslots * sizeof(ag_ev_desc));
  size_t free_b = 0, total_b = 0;
  CU(h, cuMemGetInfo(&free_b, &total_b));
  uint64_t size = h->budget;
  if (size > free_b / 2) {
    size = free_b / 2;
    snprintf(h->budget_note, sizeof h->budget_note,
             "budget cut to half the free device memory (%llu MiB)",
             (unsigned long long)(size >> 20));
  }
  size &= ~(uint64_t)255;
  CU(h, cuMemAlloc(&h->pool, size));
  h->pool_size = size;
  h->recs = calloc(h->max_launches, sizeof *h->recs);
  if (!h->recs) {
    setmsg(h, "out of memory");
    return AG_HOST_ENOMEM;
  }
  return 0;
}

/* The side stream the host zeroes and binds on ahead of the launches, off
 * the harness's stream (so off the clock the harness times its launches
 * with); 0 when it cannot be had (then everything goes inline, as before). */
static int ensure_side(ag_host *h) {
  if (h->side_state == 0) {
    h->side_state = -1;
    if (h->ahead && h->cu.cuStreamCreate(&h->side, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS) {
      if (h->cu.cuEventCreate(&h->bound, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS &&
          h->cu.cuEventCreate(&h->after, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS)
        h->side_state = 1;
    }
  }
  return h->side_state == 1;
}

/* Bytes of a recorded launch's areas for `warps` warps: the metadata, then
 * the records (warp_slots(cap) per warp), each 256-byte aligned. */
static uint64_t area_bytes(uint64_t warps, uint32_t cap) {
  return ((warps * AG_EV_META_BYTES + 255) & ~(uint64_t)255) +
         ((warps * warp_slots(cap) * AG_EV_RECORD_BYTES + 255) & ~(uint64_t)255);
}

/* The warps the areas are laid out for: ARGUS_TRACE_WARPS, or the first
 * recorded (or counted) launch's; a launch with more takes its own size. */
static uint64_t layout_warps(const ag_host *h, uint64_t warps) {
  return warps > h->area_warps ? warps : h->area_warps;
}

/* Whether launch idx of `warps` warps is recorded, and with how many
 * records per warp (*capp). Reads the state, changes nothing, so the host
 * can ask it for the next launch before that launch is made. Returns 1:
 * recorded, 2: the count-only launch, 0: not recorded (*why says why;
 * *note, when given, gets the reason's detail). */
static int decide(const ag_host *h, uint32_t idx, uint64_t warps, uint32_t *capp,
                  launch_why *why, char *note, size_t nn) {
  uint32_t cap = h->cap;
  *capp = cap;
  if (h->count_first && !h->counted && idx + 1 == h->skip && warps > 0 &&
      warps <= 0xffffffffu / 2) {
    *why = LW_COUNT;
    *capp = 0;
    return 2;
  }
  int record = idx >= h->skip && h->nrecs < h->max_launches && warps > 0 &&
               warps <= 0xffffffffu;
  *why = idx < h->skip ? LW_BEFORE : h->nrecs >= h->max_launches ? LW_AFTER
         : record                                                 ? LW_RECORDED
                                                                  : LW_WARPS;
  if (record && warps * warp_slots(cap) > 0xffffffffu) {
    cap = (uint32_t)(0xffffffffu / warps) - 1; /* the probe forms slot * slots in 32 bits */
    if (cap < 16) {
      *why = LW_WARPS;
      if (note)
        snprintf(note, nn, "launch %u has %llu warps: too many to record 16 records each",
                 idx, (unsigned long long)warps);
      return 0;
    }
  }
  if (record) {
    uint64_t left = h->pool_size - h->pool_used, aw = layout_warps(h, warps);
    if (area_bytes(aw, cap) > left) {
      uint64_t c = left / aw;
      c = c > AG_EV_META_BYTES + 2 * AG_EV_RECORD_BYTES + 512 / aw
              ? (c - AG_EV_META_BYTES - 512 / aw) / AG_EV_RECORD_BYTES - 1
              : 0;
      /* records sized from a count: whole launches only */
      if (c < 16 || h->counted) {
        *why = LW_BUDGET;
        if (note)
          snprintf(note, nn, "trace buffer budget exhausted at launch %u", idx);
        return 0;
      }
      cap = (uint32_t)c;
    }
  }
  *capp = cap;
  return record;
}

/* Zeroes the pool ahead, on the side stream and waited for, up to what the
 * launches still to record need at the layout's size: called where the
 * layout is known and no launch of the harness is being timed (the module
 * load, the count-only launch). Zeroing each launch's area just before it
 * ran the kernel with its inputs evicted from L2: on examples/gemm_tma,
 * 67 MB per launch made the traced kernel 18-22 % slower instead of 2-4 %
 * (bench/RESULTS.md, "The record area's memset"). */
static int zero_ahead(ag_host *h) {
  if (!h->area_warps || !ensure_side(h))
    return 0;
  uint64_t end = h->pool_used + (uint64_t)(h->max_launches - h->nrecs) *
                                     area_bytes(h->area_warps, h->cap);
  if (end > h->pool_size || end < h->pool_used)
    end = h->pool_size;
  if (end > h->pool_zeroed) {
    CU(h, cuMemsetD8Async(h->pool + h->pool_zeroed, 0, end - h->pool_zeroed, h->side));
    CU(h, cuStreamSynchronize(h->side));
    h->pool_zeroed = end;
  }
  return 0;
}

/* The descriptor launch idx gets (recorded: its areas at the pool's next
 * free byte; else "off"), as decide says; 1 when it is recorded. */
static int desc_for(const ag_host *h, uint32_t idx, uint64_t warps, ag_ev_desc *d) {
  uint32_t cap;
  launch_why why;
  memset(d, 0, sizeof *d);
  int r = decide(h, idx, warps, &cap, &why, NULL, 0);
  if (r == 1) {
    uint64_t aw = layout_warps(h, warps);
    d->meta = h->pool + h->pool_used;
    d->records = d->meta + ((aw * AG_EV_META_BYTES + 255) & ~(uint64_t)255);
    d->cap = (uint32_t)warp_slots(cap);
    d->enabled = 1;
    d->launch = idx;
  }
  return r;
}

/* Queues a copy of *src into the module's descriptor on `stream`, and notes
 * what the descriptor holds once the queued copies have run. */
static int bind_desc(ag_host *h, ag_host_module *m, const ag_ev_desc *src, void *stream) {
  if (h->ahead == 2 && h->cu.cuStreamBatchMemOp) {
    /* ARGUS_TRACE_AHEAD=2: the descriptor's 64-bit words as stream writes in
     * one batch, on the launch's stream (no copy engine, no wait across
     * streams) */
    enum { NW = sizeof *src / 8 };
    uint64_t w[NW];
    CUstreamBatchMemOpParams op[NW];
    memcpy(w, src, sizeof w);
    memset(op, 0, sizeof op);
    for (int i = 0; i < NW; i++) {
      op[i].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
      op[i].writeValue.address = m->desc + 8u * (unsigned)i;
      op[i].writeValue.value64 = w[i];
      op[i].writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
    }
    CU(h, cuStreamBatchMemOp((CUstream)stream, NW, op, 0));
  } else {
    CU(h, cuMemcpyHtoDAsync(m->desc, src, sizeof *src, (CUstream)stream));
  }
  h->cur = *src;
  h->cur_known = 1;
  return 0;
}

/* After launch idx's kernel is queued: binds the descriptor launch idx + 1
 * will most likely need (the same number of warps as the layout's) on the
 * side stream, behind the kernel, so the next launch finds it bound and only
 * waits for the copy, which has long run by then. */
static int bind_ahead(ag_host_kernel *k, uint32_t idx, void *stream, CUevent after) {
  ag_host *h = k->mod->h;
  ag_ev_desc d;
  if (!k->mod->traced || !h->area_warps || !h->cur_known || h->ahead == 2 || !ensure_side(h))
    return 0; /* 2: stream writes bind each launch's descriptor in its stream */
  int r = desc_for(h, idx + 1, h->area_warps, &d);
  if (r == 2 || !memcmp(&d, &h->cur, sizeof d))
    return 0; /* the count-only launch binds its own; or nothing changes */
  ag_ev_desc *src = r == 1 ? SLOT_AHEAD(h, h->nrecs) : SLOT_OFF(h);
  if (r == 1 && h->ahead_used == h->nrecs + 1) /* rewritten: its last copy must be done */
    CU(h, cuEventSynchronize(h->bound));
  if (r == 1) {
    *src = d;
    h->ahead_used = h->nrecs + 1;
  }
  if (!after) {
    CU(h, cuEventRecord(h->after, (CUstream)stream));
    after = h->after;
  }
  CU(h, cuStreamWaitEvent(h->side, after, 0));
  CU(h, cuMemcpyHtoDAsync(k->mod->desc, src, sizeof *src, h->side));
  CU(h, cuEventRecord(h->bound, h->side));
  h->cur = d;
  h->pending = 1;
  return 0;
}

/* At the variant's load (outside every launch the harness times): the pool,
 * the zeroing ahead and the first launch's descriptor, when the layout is
 * known (ARGUS_TRACE_WARPS, and no count-only launch to wait for). */
static int prepare_ahead(ag_host *h, ag_host_module *m) {
  int rc;
  if (!m->traced || !h->ahead)
    return 0;
  if ((rc = ensure_pool(h)))
    return rc;
  h->area_warps = h->warps_hint;
  if (!h->area_warps || (h->count_first && h->skip > 0) || !ensure_side(h))
    return 0;
  if ((rc = zero_ahead(h)))
    return rc;
  ag_ev_desc d;
  int r = desc_for(h, 0, h->area_warps, &d);
  if (r == 2)
    return 0;
  ag_ev_desc *src = r == 1 ? SLOT_AHEAD(h, 0) : SLOT_OFF(h);
  if (r == 1) {
    *src = d;
    h->ahead_used = 1;
  }
  if ((rc = bind_desc(h, m, src, h->side)))
    return rc;
  CU(h, cuStreamSynchronize(h->side));
  return 0;
}

/* The kernel's registers and static shared memory and the driver's CTAs
 * per SM for this launch's block and dynamic shared memory, when the driver
 * has the calls (the report computes occupancy and compares). */
static void note_resources(ag_host *h, ag_host_kernel *k, unsigned threads, unsigned smem,
                           launch_rec *lr) {
  int regs = 0, st = 0, n = 0;
  lr->have_attrs = h->cu.cuFuncGetAttribute &&
                   h->cu.cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, k->fn) == 0 &&
                   h->cu.cuFuncGetAttribute(&st, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k->fn) == 0;
  lr->registers = regs;
  lr->static_smem = st;
  lr->have_occ = h->cu.cuOccupancyMaxActiveBlocksPerMultiprocessor &&
                 h->cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, k->fn, (int)threads,
                                                                   smem) == 0;
  lr->occ_ctas = n;
}

/* Binds the descriptor of a recorded launch, of the count-only launch or
 * the "off" descriptor: nothing on the launch's stream when the descriptor
 * bound ahead is the one it needs (a wait for that copy), else a copy. */
static int prepare_launch(ag_host_kernel *k, uint32_t idx, ag_host_dim g, ag_host_dim b,
                          unsigned smem, void *stream, launch_why *why) {
  ag_host_module *m = k->mod;
  ag_host *h = m->h;
  int rc;
  if ((rc = ensure_pool(h)))
    return rc;
  uint64_t threads = (uint64_t)b.x * b.y * b.z;
  uint64_t wpc = (threads + 31) / 32;
  uint64_t warps = (uint64_t)g.x * g.y * g.z * wpc;
  uint32_t cap = 0;
  char note[160] = "";
  int record = decide(h, idx, warps, &cap, why, note, sizeof note);
  if (note[0])
    snprintf(h->budget_note, sizeof h->budget_note, "%s", note);
  /* Launches on different streams could overlap and share the descriptor:
   * serialize launches that change stream. */
  if (h->have_last_stream && h->last_stream != stream)
    CU(h, cuStreamSynchronize((CUstream)h->last_stream));
  h->last_stream = stream;
  h->have_last_stream = 1;
  if (h->pending) { /* the copy bound ahead runs before this kernel */
    CU(h, cuStreamWaitEvent((CUstream)stream, h->bound, 0));
    h->pending = 0;
  }
  if (record == 2) { /* count-only: one trash slot per warp, counts in the metadata */
    uint64_t need = ((warps * AG_EV_META_BYTES + 255) & ~(uint64_t)255) +
                    warps * AG_EV_RECORD_BYTES;
    if (!h->count_area || h->count_bytes < need) {
      if (h->count_area)
        CU(h, cuMemFree(h->count_area));
      h->count_area = 0;
      CU(h, cuMemAlloc(&h->count_area, need));
      h->count_bytes = need;
    }
    CU(h, cuMemsetD8Async(h->count_area, 0, need, (CUstream)stream));
    ag_ev_desc *d = SLOT_COUNT(h);
    d->meta = h->count_area;
    d->records = h->count_area + ((warps * AG_EV_META_BYTES + 255) & ~(uint64_t)255);
    d->cap = 1;
    d->enabled = 1;
    d->launch = idx;
    h->count_warps = warps;
    h->count_launch = idx;
    return bind_desc(h, m, d, stream);
  }
  if (!record) {
    if (!h->cur_known || h->cur.enabled)
      return bind_desc(h, m, SLOT_OFF(h), stream);
    return 0;
  }
  if (!h->area_warps)
    h->area_warps = warps;
  launch_rec *lr = &h->recs[h->nrecs];
  memset(lr, 0, sizeof *lr);
  lr->launch = idx;
  lr->kernel = k->name;
  lr->grid[0] = g.x, lr->grid[1] = g.y, lr->grid[2] = g.z;
  lr->block[0] = b.x, lr->block[1] = b.y, lr->block[2] = b.z;
  lr->shared_bytes = smem;
  note_resources(h, k, (unsigned)threads, smem, lr);
  lr->warps = (uint32_t)warps;
  lr->warps_per_cta = (uint32_t)wpc;
  lr->cap = cap;
  uint64_t aw = layout_warps(h, warps), start = h->pool_used;
  lr->meta = h->pool + start;
  lr->records = lr->meta + ((aw * AG_EV_META_BYTES + 255) & ~(uint64_t)255);
  h->pool_used += area_bytes(aw, cap);
  ag_ev_desc want;
  memset(&want, 0, sizeof want);
  want.records = lr->records;
  want.meta = lr->meta;
  want.cap = (uint32_t)warp_slots(cap);
  want.enabled = 1;
  want.launch = idx;
  /* Past the extent zeroed ahead (no layout known at the load, or a launch
   * larger than the layout): zero on the launch's stream, ahead for the
   * launches still to record at this launch's size (within the pool).
   * Zeroing the whole 1 GiB pool instead slowed the loads of a small
   * kernel's probe runs twofold (the dirty lines' write-back). */
  if (h->pool_used > h->pool_zeroed) {
    uint64_t each = h->pool_used - start, todo = h->max_launches - h->nrecs;
    uint64_t end = start + each * todo;
    if (end > h->pool_size || end < start)
      end = h->pool_size;
    if (end < h->pool_used)
      end = h->pool_used;
    uint64_t from = h->pool_zeroed > start ? h->pool_zeroed : start;
    CU(h, cuMemsetD8Async(h->pool + from, 0, end - from, (CUstream)stream));
    h->pool_zeroed = end;
  }
  if (!h->cur_known || memcmp(&want, &h->cur, sizeof want)) {
    ag_ev_desc *src = SLOT_INLINE(h, h->nrecs);
    *src = want;
    h->nbound_inline++;
    if ((rc = bind_desc(h, m, src, stream)))
      return rc;
  }
  h->nrecs++;
  return 0;
}

/* After the count-only launch: waits for it, reads its warps' counts and
 * sizes the records per warp of the launches to record from the largest
 * (+ 1/8 + 2, at least 16), then zeroes ahead at that size. All within the
 * count-only launch's call: the harness's warm-up. */
static int finish_count(ag_host *h, void *stream) {
  CU(h, cuStreamSynchronize((CUstream)stream));
  size_t n = (size_t)h->count_warps;
  ag_ev_meta *meta = malloc(n * sizeof *meta);
  if (!meta) {
    setmsg(h, "out of memory");
    return AG_HOST_ENOMEM;
  }
  CUresult r = h->cu.cuMemcpyDtoH(meta, h->count_area, n * sizeof *meta);
  if (r != CUDA_SUCCESS) {
    free(meta);
    return cu_fail(h, r, "cuMemcpyDtoH(count-only launch)");
  }
  uint32_t mx = 0, exited = 0;
  for (size_t i = 0; i < n; i++) {
    if (!(meta[i].flags & AG_EV_EXITED))
      continue;
    exited++;
    mx = meta[i].count > mx ? meta[i].count : mx;
    mx = meta[i].max_count > mx ? meta[i].max_count : mx;
  }
  free(meta);
  h->counted = 1;
  h->count_max = mx;
  h->count_exited = exited;
  if (exited) {
    uint64_t c = (uint64_t)mx + mx / 8 + 2;
    h->cap = (uint32_t)(c < 16 ? 16 : c > (1u << 24) ? (1u << 24) : c);
  }
  if (!h->area_warps)
    h->area_warps = h->warps_hint > h->count_warps ? h->warps_hint : (uint32_t)h->count_warps;
  return zero_ahead(h);
}

/* The timing slot of a variant launch, with its events and occupancy: the
 * registers and CTAs per SM the driver gives this kernel at this block size
 * and dynamic shared memory (asked once per configuration). NULL past
 * AG_HOST_MAX_TIMED launches (the file says how many were not timed). The
 * events were made after the previous launch (spare_events), not on the
 * way to this one's kernel. */
static int time_slot(ag_host_kernel *k, uint32_t idx, ag_host_dim g, ag_host_dim b,
                     unsigned smem, launch_time **out) {
  ag_host *h = k->mod->h;
  *out = NULL;
  if (h->ntimes >= AG_HOST_MAX_TIMED)
    return 0;
  if (h->ntimes == h->times_cap) {
    uint32_t nc = h->times_cap ? h->times_cap * 2 : 64;
    launch_time *nt = realloc(h->times, nc * sizeof *nt);
    if (!nt) {
      setmsg(h, "out of memory");
      return AG_HOST_ENOMEM;
    }
    h->times = nt;
    h->times_cap = nc;
  }
  unsigned threads = b.x * b.y * b.z;
  if (k->registers < 0)
    CU(h, cuFuncGetAttribute(&k->registers, CU_FUNC_ATTRIBUTE_NUM_REGS, k->fn));
  if (!k->occ_threads || k->occ_threads != threads || k->occ_smem != smem) {
    CU(h, cuOccupancyMaxActiveBlocksPerMultiprocessor(&k->occ_ctas, k->fn, (int)threads,
                                                       smem));
    k->occ_threads = threads;
    k->occ_smem = smem;
  }
  launch_time *t = &h->times[h->ntimes];
  memset(t, 0, sizeof *t);
  t->launch = idx;
  t->kernel = k->name;
  t->grid[0] = g.x, t->grid[1] = g.y, t->grid[2] = g.z;
  t->block[0] = b.x, t->block[1] = b.y, t->block[2] = b.z;
  t->smem = smem;
  t->registers = k->registers;
  t->ctas_per_sm = k->occ_ctas;
  if (h->nspare) {
    t->a = h->spare[0];
    t->b = h->spare[1];
    h->nspare = 0;
  } else {
    CU(h, cuEventCreate(&t->a, CU_EVENT_DEFAULT));
    CUresult r = h->cu.cuEventCreate(&t->b, CU_EVENT_DEFAULT);
    if (r != CUDA_SUCCESS) {
      h->cu.cuEventDestroy(t->a);
      return cu_fail(h, r, "cuEventCreate");
    }
  }
  h->ntimes++;
  *out = t;
  return 0;
}

/* The next launch's two events, made while this launch's kernel runs. */
static int spare_events(ag_host *h) {
  if (h->nspare || h->ntimes >= AG_HOST_MAX_TIMED)
    return 0;
  CU(h, cuEventCreate(&h->spare[0], CU_EVENT_DEFAULT));
  CUresult r = h->cu.cuEventCreate(&h->spare[1], CU_EVENT_DEFAULT);
  if (r != CUDA_SUCCESS) {
    h->cu.cuEventDestroy(h->spare[0]);
    return cu_fail(h, r, "cuEventCreate");
  }
  h->nspare = 1;
  return 0;
}

/* Queues the gate on the stream (see ag_host); 1 when it was queued and must
 * be released with open_gate, 0 when timing goes without it. */
static int close_gate(ag_host *h, void *stream) {
  if (h->gate_state == 0) {
    /* a profiler injected into the process (ncu, nsys: CUDA_INJECTION64_PATH)
     * may replay the kernel inside cuLaunchKernel, before the host opens the
     * gate: the stream would wait forever */
    const char *inj = getenv("CUDA_INJECTION64_PATH");
    /* CUPTI patches, samples or replays inside the launch call too */
    if ((inj && *inj) || h->collect >= 3) {
      h->gate_state = -2;
      return 0;
    }
    void *p = NULL;
    h->gate_state = -1;
    if (h->cu.cuMemHostAlloc(&p, 64, CU_MEMHOSTALLOC_DEVICEMAP) == CUDA_SUCCESS) {
      h->gate = p;
      *h->gate = 0;
      if (h->cu.cuMemHostGetDevicePointer(&h->gate_dev, p, 0) == CUDA_SUCCESS)
        h->gate_state = 1;
    }
  }
  if (h->gate_state != 1)
    return 0;
  uint32_t seq = h->gate_seq + 1;
  if (h->cu.cuStreamWaitValue32((CUstream)stream, h->gate_dev, seq, CU_STREAM_WAIT_VALUE_GEQ) !=
      CUDA_SUCCESS) {
    h->gate_state = -1; /* stream memory operations unsupported: time without it */
    return 0;
  }
  h->gate_seq = seq;
  return 1;
}

static void open_gate(ag_host *h) {
  __atomic_store_n(h->gate, h->gate_seq, __ATOMIC_SEQ_CST);
}

/* The first half of a launch: the launch index, the descriptor, the timing
 * slot and its start event behind the gate; *f says what the second half
 * finishes. On failure nothing is left queued behind a closed gate. */
static int launch_begin(ag_host_kernel *k, ag_host_dim grid, ag_host_dim block,
                        unsigned shared_bytes, void *stream, struct inflight *f) {
  ag_host *h = k->mod->h;
  int rc;
  memset(f, 0, sizeof *f);
  f->why = LW_TIME_ONLY;
  f->stream = stream;
  if (h->finished) {
    setmsg(h, "ag_host_launch after ag_host_finish");
    return AG_HOST_EINVAL;
  }
  if (k->mod->variant) {
    f->idx = h->nlaunch++;
    if (k->mod->traced &&
        (rc = prepare_launch(k, f->idx, grid, block, shared_bytes, stream, &f->why)))
      return rc;
    if ((rc = time_slot(k, f->idx, grid, block, shared_bytes, &f->lt)))
      return rc;
    if (f->lt)
      f->lt->why = f->why;
  }
  /* the range profiler's auto range i is the i-th kernel launched */
  if (h->ctr) {
    unsigned g3[3] = {grid.x, grid.y, grid.z}, b3[3] = {block.x, block.y, block.z};
    ag_ctr_launch(h->ctr, k->name, g3, b3, k->mod->variant ? (long)f->idx : -1);
  }
  /* after the descriptor's copies, behind the gate: the events hold the kernel */
  f->gated = f->lt && close_gate(h, stream);
  CUresult r = f->lt ? h->cu.cuEventRecord(f->lt->a, (CUstream)stream) : CUDA_SUCCESS;
  if (r != CUDA_SUCCESS) {
    if (f->gated)
      open_gate(h);
    return cu_fail(h, r, "cuEventRecord(launch start)");
  }
  f->k = k;
  return 0;
}

/* The second half, once the kernel is queued (launched 1) or its launch
 * failed (0): the end event, the gate opened (on every path: a closed gate
 * would hold the stream forever), then, while the kernel runs, the count's
 * verdict and the next launch's descriptor and events. */
static int launch_end(struct inflight *f, int launched) {
  ag_host_kernel *k = f->k;
  ag_host *h = k->mod->h;
  int rc;
  f->k = NULL;
  CUresult r = launched && f->lt ? h->cu.cuEventRecord(f->lt->b, (CUstream)f->stream)
                                 : CUDA_SUCCESS;
  if (f->gated)
    open_gate(h); /* on every path: a closed gate would hold the stream forever */
  if (r != CUDA_SUCCESS)
    return cu_fail(h, r, "cuEventRecord(launch end)");
  if (!launched && f->lt && f->lt == &h->times[h->ntimes - 1]) {
    /* a launch that did not happen is not timed: its events go back (spares) */
    if (!h->nspare) {
      h->spare[0] = f->lt->a, h->spare[1] = f->lt->b;
      h->nspare = 1;
    } else {
      h->cu.cuEventDestroy(f->lt->a);
      h->cu.cuEventDestroy(f->lt->b);
    }
    h->ntimes--;
  }
  if (!launched || !k->mod->variant)
    return 0;
  if (f->why == LW_COUNT && (rc = finish_count(h, f->stream)))
    return rc;
  if (h->ahead && (rc = bind_ahead(k, f->idx, f->stream, f->lt ? f->lt->b : NULL)))
    return rc;
  return spare_events(h);
}

int ag_host_launch(ag_host_kernel *k, ag_host_dim grid, ag_host_dim block,
                   unsigned shared_bytes, void *stream, void **args) {
  ag_host *h = k->mod->h;
  struct inflight f;
  int rc = launch_begin(k, grid, block, shared_bytes, stream, &f);
  if (rc)
    return fail(h, rc);
  CUresult r = h->cu.cuLaunchKernel(k->fn, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                    shared_bytes, (CUstream)stream, args, NULL);
  rc = launch_end(&f, r == CUDA_SUCCESS);
  if (r != CUDA_SUCCESS) {
    char call[300];
    snprintf(call, sizeof call, "cuLaunchKernel('%s', grid %ux%ux%u, block %ux%ux%u)",
             k->name, grid.x, grid.y, grid.z, block.x, block.y, block.z);
    return fail(h, cu_fail(h, r, call));
  }
  return fail(h, rc);
}

int ag_host_launch_begin(ag_host_kernel *k, ag_host_dim grid, ag_host_dim block,
                         unsigned shared_bytes, void *stream) {
  ag_host *h = k->mod->h;
  if (h->fl.k) {
    /* the earlier launch's gate must not hold its stream: open it, and refuse */
    launch_end(&h->fl, 0);
    setmsg(h, "ag_host_launch_begin('%s'): the launch begun before has no "
              "ag_host_launch_end (each begin needs its end, after the launch)", k->name);
    return fail(h, AG_HOST_EBUSY);
  }
  return fail(h, launch_begin(k, grid, block, shared_bytes, stream, &h->fl));
}

int ag_host_launch_end(ag_host_kernel *k, int launched) {
  ag_host *h = k->mod->h;
  if (h->fl.k != k) {
    int other = h->fl.k != NULL;
    setmsg(h, "ag_host_launch_end('%s'): %s", k->name,
           other ? "the launch begun is another kernel's" : "no launch was begun "
                                                             "(ag_host_launch_begin)");
    if (other)
      launch_end(&h->fl, 0);
    return fail(h, AG_HOST_EINVAL);
  }
  return fail(h, launch_end(&h->fl, launched != 0));
}

int ag_host_sync(ag_host *h) {
  CUresult r = h->cu.cuCtxSynchronize();
  if (r != CUDA_SUCCESS)
    return fail(h, cu_fail(h, r, "cuCtxSynchronize"));
  return 0;
}

/* --------------------------------------------------------------- finish */

/* How the records per warp were chosen and how the areas were prepared:
 * ,"records_sized":{...},"ahead":{...} (docs/evidence.md). */
static void sizing_fields(ag_host *h, ag_jb *j) {
  if (h->collect != 1)
    return;
  if (h->counted)
    ag_jb_printf(j, ",\"records_sized\":{\"from\":\"count\",\"launch\":%u,\"max_count\":%u,"
                    "\"warps_exited\":%u,\"records_per_warp\":%u}",
                 h->count_launch, h->count_max, h->count_exited, h->cap);
  else
    ag_jb_printf(j, ",\"records_sized\":{\"from\":\"%s\",\"records_per_warp\":%u}",
                 h->count_first ? "default (no count-only launch ran)" : "ARGUS_TRACE_RECORDS",
                 h->cap);
  ag_jb_printf(j, ",\"ahead\":{\"enabled\":%s,\"side_stream\":%s,\"layout_warps\":%u,"
                  "\"zeroed_bytes\":%llu,\"bound_inline\":%u}",
               h->ahead ? "true" : "false", h->side_state == 1 ? "true" : "false",
               h->area_warps, (unsigned long long)h->pool_zeroed, h->nbound_inline);
}

/* "created", "pid" and "device" (the first fields of every evidence header). */
static void device_fields(ag_host *h, ag_jb *j) {
  char name[256] = "?";
  h->cu.cuDeviceGetName(name, sizeof name, h->dev);
  int sms = 0, ccmaj = 0, ccmin = 0, khz = 0, drv = 0;
  h->cu.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, h->dev);
  h->cu.cuDeviceGetAttribute(&ccmaj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, h->dev);
  h->cu.cuDeviceGetAttribute(&ccmin, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, h->dev);
  h->cu.cuDeviceGetAttribute(&khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, h->dev);
  h->cu.cuDriverGetVersion(&drv);
  CUuuid uu;
  memset(&uu, 0, sizeof uu);
  h->cu.cuDeviceGetUuid(&uu, h->dev);
  char uuid[64];
  const unsigned char *u = (const unsigned char *)uu.bytes;
  snprintf(uuid, sizeof uuid,
           "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
           u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
           u[13], u[14], u[15]);
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  char when[32];
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);

  ag_jb_puts(j, "\"created\":");
  ag_jb_str(j, when);
  ag_jb_printf(j, ",\"pid\":%ld,\"device\":{\"ordinal\":%d,\"name\":", (long)getpid(),
               h->device);
  ag_jb_str(j, name);
  ag_jb_printf(j, ",\"uuid\":\"%s\",\"sm_count\":%d,\"cc\":[%d,%d],\"max_clock_khz\":%d,"
                  "\"driver_version\":%d}",
               uuid, sms, ccmaj, ccmin, khz, drv);
}

static void header_fields(ag_host *h, ag_jb *j, const char *sites) {
  device_fields(h, j);
  /* the measured SM clock: the last calibration (after the launches) */
  const calib *c = h->ncal ? &h->cal[h->ncal - 1] : NULL;
  double hz = c && c->ns ? (double)c->cycles * 1e9 / (double)c->ns : 0.0;
  ag_jb_printf(j, ",\"clock\":{\"sm_hz\":%.1f,\"method\":\"clock64 against globaltimer "
                  "over a 10 ms edge-aligned spin\",\"calibrations\":[",
               hz);
  for (int i = 0; i < h->ncal; i++)
    ag_jb_printf(j, "%s{\"when\":\"%s\",\"cycles\":%llu,\"ns\":%llu}", i ? "," : "",
                 h->cal[i].when, (unsigned long long)h->cal[i].cycles,
                 (unsigned long long)h->cal[i].ns);
  ag_jb_puts(j, "]},\"variant\":{\"id\":");
  ag_jb_str(j, h->variant_id);
  ag_jb_puts(j, ",\"path\":");
  ag_jb_str(j, h->variant);
  ag_jb_puts(j, ",\"replaces\":");
  ag_jb_str(j, h->replaced_name);
  ag_jb_printf(j, "},\"buffers\":{\"records_per_warp\":%u,\"max_launches\":%u,"
                  "\"skip\":%u,\"budget_bytes\":%llu,\"note\":",
               h->cap, h->max_launches, h->skip, (unsigned long long)h->pool_size);
  ag_jb_str(j, h->budget_note[0] ? h->budget_note : NULL);
  sizing_fields(h, j);
  ag_jb_puts(j, "},\"probes\":");
  ag_jb_puts(j, sites ? sites : "null");
}

static int write_evidence(ag_host *h) {
  char path[4096];
  char err[512] = "";
  snprintf(path, sizeof path, "%s/%s", h->out_dir, AG_EV_FILE_NAME);
  char *sites = NULL;
  size_t sl = 0;
  int rc0 = h->sites_path ? read_file(h, h->sites_path, &sites, &sl) : 0;
  if (rc0) {
    setmsg(h, "cannot read ARGUS_SITES='%s'", h->sites_path);
    return rc0;
  }
  ag_evw *w = NULL;
  int rc = ag_evw_open(path, &w, err, sizeof err);
  void *meta = NULL, *recs = NULL;
  ag_jb j = {0};
  if (rc) {
    setmsg(h, "%s", err);
    goto out;
  }
  for (uint32_t i = 0; i < h->nrecs; i++) {
    launch_rec *lr = &h->recs[i];
    size_t mb = (size_t)lr->warps * AG_EV_META_BYTES;
    size_t rb = (size_t)lr->warps * (size_t)warp_slots(lr->cap) * AG_EV_RECORD_BYTES;
    free(meta);
    free(recs);
    meta = malloc(mb ? mb : 1);
    recs = malloc(rb ? rb : 1);
    if (!meta || !recs) {
      setmsg(h, "out of host memory copying launch %u's records (%zu bytes)", lr->launch,
             rb);
      rc = AG_HOST_ENOMEM;
      goto out;
    }
    CUresult r;
    if ((r = h->cu.cuMemcpyDtoH(meta, lr->meta, mb)) ||
        (r = h->cu.cuMemcpyDtoH(recs, lr->records, rb))) {
      rc = cu_fail(h, r, "cuMemcpyDtoH(trace records)");
      goto out;
    }
    ag_evw_launch L;
    memset(&L, 0, sizeof L);
    L.launch = lr->launch;
    L.kernel = lr->kernel;
    memcpy(L.grid, lr->grid, sizeof L.grid);
    memcpy(L.block, lr->block, sizeof L.block);
    L.shared_bytes = lr->shared_bytes;
    L.warps = lr->warps;
    L.warps_per_cta = lr->warps_per_cta;
    L.cap = lr->cap;
    L.stride = (uint32_t)warp_slots(lr->cap);
    L.meta = meta;
    L.records = recs;
    L.have_attrs = lr->have_attrs;
    L.registers = lr->registers;
    L.static_shared_bytes = lr->static_smem;
    L.have_driver_ctas = lr->have_occ;
    L.driver_ctas_per_sm = lr->occ_ctas;
    if ((rc = ag_evw_launch_add(w, &L, err, sizeof err))) {
      setmsg(h, "%s", err);
      goto out;
    }
  }
  header_fields(h, &j, sites);
  if (j.oom) {
    setmsg(h, "out of memory");
    rc = AG_HOST_ENOMEM;
    goto out;
  }
  rc = ag_evw_close(w, j.p, h->nlaunch, err, sizeof err);
  w = NULL;
  if (rc)
    setmsg(h, "%s", err);
out:
  if (w)
    ag_evw_abort(w);
  ag_jb_release(&j);
  free(meta);
  free(recs);
  free(sites);
  return rc;
}

/* Writes j (released here) to <out>/name atomically (a temp file renamed). */
static int write_json_file(ag_host *h, const char *name, ag_jb *j) {
  char path[4096], tmp[4200];
  snprintf(path, sizeof path, "%s/%s", h->out_dir, name);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  int bad = !f || fwrite(j->p, 1, j->len, f) != j->len;
  if (f && fclose(f))
    bad = 1;
  ag_jb_release(j);
  if (bad || rename(tmp, path)) {
    setmsg(h, "cannot write '%s': %s", path, strerror(errno));
    unlink(tmp);
    return AG_HOST_EIO;
  }
  return 0;
}

/* <out>/timing.json (AG_EV_TIMING_FILE, docs/evidence.md): every timed
 * launch of the variant with its kernel time, occupancy and whether and why
 * it was recorded. Written by both collections, atomically. */
static int write_timing(ag_host *h) {
  ag_jb j = {0};
  char name[256] = "?";
  h->cu.cuDeviceGetName(name, sizeof name, h->dev);
  ag_jb_printf(&j, "{\"format\":\"argus-timing\",\"version\":1,\"collect\":\"%s\","
                   "\"method\":\"cuEventRecord before and after each launch of the variant, "
                   "on its stream (resolution about 0.5 us)%s\",\"device\":",
               h->map_only ? "map" : h->collect == 2 ? "time" : "trace",
               h->gate_state == 1 ? ", both queued behind a stream wait the host releases after "
                                    "the launch (no submission gap)"
               : h->gate_state == -2 ? "; no stream wait: a profiler is attached "
                                       "(CUDA_INJECTION64_PATH), whose kernel replay inside the "
                                       "launch call would wait on it forever; a launch on an idle "
                                       "stream includes the host's submission gap"
               : h->gate_state < 0 ? "; no stream wait (unsupported): a launch on an idle stream "
                                     "includes the host's submission gap"
                                   : "");
  ag_jb_str(&j, name);
  ag_jb_puts(&j, ",\"variant\":");
  ag_jb_str(&j, h->variant_id);
  ag_jb_printf(&j, ",\"launches_total\":%u,\"timed\":%u,\"selection\":{\"skip\":%u,"
                   "\"max_launches\":%u,\"records_per_warp\":%u,\"budget_bytes\":%llu},"
                   "\"budget_note\":",
               h->nlaunch, h->ntimes, h->skip, h->max_launches, h->cap,
               (unsigned long long)(h->pool_size ? h->pool_size : h->budget));
  ag_jb_str(&j, h->budget_note[0] ? h->budget_note : NULL);
  sizing_fields(h, &j);
  ag_jb_puts(&j, ",\"launches\":[");
  for (uint32_t i = 0; i < h->ntimes; i++) {
    launch_time *t = &h->times[i];
    float ms = 0;
    CUresult r = h->cu.cuEventElapsedTime(&ms, t->a, t->b);
    if (r != CUDA_SUCCESS) {
      ag_jb_release(&j);
      return cu_fail(h, r, "cuEventElapsedTime");
    }
    ag_jb_printf(&j, "%s{\"launch\":%u,\"kernel\":", i ? "," : "", t->launch);
    ag_jb_str(&j, t->kernel);
    ag_jb_printf(&j, ",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"shared_bytes\":%u,"
                     "\"ns\":%.1f,\"registers\":%d,\"ctas_per_sm\":%d,\"recorded\":%s,"
                     "\"why\":\"%s\"}",
                 t->grid[0], t->grid[1], t->grid[2], t->block[0], t->block[1], t->block[2],
                 t->smem, (double)ms * 1e6, t->registers, t->ctas_per_sm,
                 t->why == LW_RECORDED ? "true" : "false", launch_why_text[t->why]);
  }
  ag_jb_puts(&j, "]}\n");
  if (j.oom) {
    ag_jb_release(&j);
    setmsg(h, "out of memory");
    return AG_HOST_ENOMEM;
  }
  return write_json_file(h, AG_EV_TIMING_FILE, &j);
}

/* The header every CUPTI evidence file shares: format, version, device,
 * variant, the launches with their kernel times. */
static void cupti_header(ag_host *h, ag_jb *j, const char *format, int version,
                         const char *time_name) {
  ag_jb_printf(j, "{\"format\":\"%s\",\"version\":%d,", format, version);
  device_fields(h, j);
  ag_jb_puts(j, ",\"variant\":{\"id\":");
  ag_jb_str(j, h->variant_id);
  ag_jb_puts(j, ",\"path\":");
  ag_jb_str(j, h->variant);
  ag_jb_puts(j, ",\"replaces\":");
  ag_jb_str(j, h->replaced_name);
  ag_jb_printf(j, "},\"launches_total\":%u,\"launches\":[", h->nlaunch);
  for (uint32_t i = 0; i < h->ntimes; i++) {
    launch_time *t = &h->times[i];
    float ms = 0;
    if (h->cu.cuEventElapsedTime(&ms, t->a, t->b) != CUDA_SUCCESS)
      ms = -1;
    ag_jb_printf(j, "%s{\"launch\":%u,\"kernel\":", i ? "," : "", t->launch);
    ag_jb_str(j, t->kernel);
    ag_jb_printf(j, ",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"shared_bytes\":%u,"
                    "\"%s\":%.1f}",
                 t->grid[0], t->grid[1], t->grid[2], t->block[0], t->block[1], t->block[2],
                 t->smem, time_name, (double)ms * 1e6);
  }
  ag_jb_puts(j, "],");
}

static int write_cupti_file(ag_host *h, const char *name, ag_jb *j) {
  ag_jb_puts(j, "}\n");
  if (j->oom) {
    ag_jb_release(j);
    setmsg(h, "out of memory");
    return AG_HOST_ENOMEM;
  }
  return write_json_file(h, name, j);
}

/* <out>/sass_metrics.json (AG_SASSM_FILE, docs/sass-metrics.md): the
 * range's records, the variant's opcodes and the launches, atomically. The
 * launches' times are those of patched code: kept for the record, never a
 * timing. */
static int write_sass(ag_host *h) {
  int rc = ag_sassm_end(h->sassm, h->msg, sizeof h->msg);
  if (rc)
    return rc;
  if (h->nlaunch && !ag_sassm_rows(h->sassm)) {
    char other[300];
    size_t n = ag_sassm_other(h->sassm, other, sizeof other), nrec, ninst, ndrop;
    ag_sassm_end_state(h->sassm, &nrec, &ninst, &ndrop);
    setmsg(h, "SASS metrics: CUPTI returned no count for the %u launch%s of variant '%s' (%zu "
              "record%s of other cubins%s%s; at the range's end CUPTI reported %zu patched-"
              "instruction records of %zu instances, %zu dropped): CUPTI counts a kernel only "
              "from its first launch in a process, and in some harness processes no kernel at "
              "all (seen on the H200 for examples/gemm_tma, tma_probe, the decode megakernel "
              "and a public SGEMM, lazy patching or not, eager module loading or not; the cause "
              "is not known: docs/sass-metrics.md); the attributed signals of SASS metrics "
              "cannot be had for this kernel, the mapping run's ownership can",
           h->nlaunch, h->nlaunch == 1 ? "" : "es", h->variant, n, n == 1 ? "" : "s",
           n ? ": " : "", other, nrec, ninst, ndrop);
    return AG_HOST_EUNSUPPORTED;
  }
  ag_sassm_disasm(h->sassm, h->variant);
  ag_jb j = {0};
  cupti_header(h, &j, AG_SASSM_FORMAT, AG_SASSM_VERSION, "patched_ns");
  ag_sassm_json(h->sassm, &j);
  return write_cupti_file(h, AG_SASSM_FILE, &j);
}

/* <out>/stalls.json (AG_PCS_FILE, docs/stalls.md): the range's samples per
 * (cubin, function, pc) and reason, the variant's opcodes and the
 * launches (their times are of sampled code: kept, never a timing). */
static int write_stalls(ag_host *h) {
  int rc = ag_pcs_end(h->pcs, h->msg, sizeof h->msg);
  if (rc)
    return rc;
  ag_pcs_disasm(h->pcs, h->variant);
  ag_jb j = {0};
  cupti_header(h, &j, AG_PCS_FORMAT, AG_PCS_VERSION, "sampled_ns");
  ag_pcs_json(h->pcs, &j);
  return write_cupti_file(h, AG_PCS_FILE, &j);
}

/* The calibration kernels: their %globaltimer edges and, with the activity
 * trace, their span on CUPTI's clock (0 without it). */
static void calibration_fields(ag_host *h, ag_jb *j) {
  ag_jb_puts(j, "\"calibration\":[");
  for (int i = 0; i < h->ncal; i++) {
    uint64_t s = 0, e = 0;
    ag_act_kernel_span(h->act, "argus_calibrate", (size_t)i, &s, &e);
    ag_jb_printf(j, "%s{\"when\":\"%s\",\"gt_first\":%llu,\"gt_last\":%llu,"
                    "\"cupti_start\":%llu,\"cupti_end\":%llu}",
                 i ? "," : "", h->cal[i].when, (unsigned long long)h->cal[i].gt0,
                 (unsigned long long)h->cal[i].gt1, (unsigned long long)s,
                 (unsigned long long)e);
  }
  ag_jb_puts(j, "],");
}

/* FP32 and FP64 results per clock per SM by compute capability (the CUDA
 * C++ Programming Guide's arithmetic-instruction throughput table): the one
 * figure of the peaks the device does not report; 0 when not listed. The
 * recorded ffma peak_sustained counter checks it on the GPU
 * (docs/counters.md, "Peaks"). */
static void lanes_per_sm(int major, int minor, int *fp32, int *fp64) {
  static const int t[][4] = {{7, 0, 64, 32},  {7, 5, 64, 2},   {8, 0, 64, 32},
                             {8, 6, 128, 2},  {8, 7, 128, 2},  {8, 9, 128, 2},
                             {9, 0, 128, 64}, {10, 0, 128, 64}, {12, 0, 128, 2}};
  *fp32 = *fp64 = 0;
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (t[i][0] == major && t[i][1] == minor)
      *fp32 = t[i][2], *fp64 = t[i][3];
}

/* "peaks":{...}, the device's figures a roofline needs, as the driver
 * reports them (cuDeviceGetAttribute); the decoder computes the peaks. */
static void peak_fields(ag_host *h, ag_jb *j) {
  int sms = 0, khz = 0, mkhz = 0, bus = 0, ma = 0, mi = 0, l2 = 0, f32, f64;
  h->cu.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, h->dev);
  h->cu.cuDeviceGetAttribute(&khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, h->dev);
  h->cu.cuDeviceGetAttribute(&mkhz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, h->dev);
  h->cu.cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, h->dev);
  h->cu.cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, h->dev);
  h->cu.cuDeviceGetAttribute(&ma, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, h->dev);
  h->cu.cuDeviceGetAttribute(&mi, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, h->dev);
  lanes_per_sm(ma, mi, &f32, &f64);
  ag_jb_printf(j, "\"peaks\":{\"source\":\"cuDeviceGetAttribute\",\"sm_count\":%d,"
                  "\"sm_clock_khz\":%d,\"mem_clock_khz\":%d,\"mem_bus_bits\":%d,"
                  "\"l2_bytes\":%d,\"cc\":[%d,%d],\"fp32_lanes_per_sm\":%d,"
                  "\"fp64_lanes_per_sm\":%d,\"lanes_source\":\"CUDA programming guide, "
                  "arithmetic instruction throughput per SM for compute capability %d.%d\"},",
               sms, khz, mkhz, bus, l2, ma, mi, f32, f64, ma, mi);
}

/* <out>/counters.json (AG_CTR_FILE, docs/counters.md): every range's
 * metric values, the metrics' units, the device's peaks and the launches
 * (their times are of profiled, replayed kernels: kept, never a timing).
 * Under user ranges with passes left, the harness runs again: this run
 * leaves counters.next (counters.c) and no evidence. */
static int write_counters(ag_host *h) {
  int more = 0;
  int rc = ag_ctr_end(h->ctr, &more, h->msg, sizeof h->msg);
  if (rc || more)
    return rc;
  ag_jb j = {0};
  cupti_header(h, &j, AG_CTR_FORMAT, AG_CTR_VERSION, "profiled_ns");
  peak_fields(h, &j);
  ag_ctr_json(h->ctr, &j);
  return write_cupti_file(h, AG_CTR_FILE, &j);
}

/* <out>/system.json (AG_ACT_FILE, docs/system.md): the activity records
 * and the two calibrations that align CUPTI's clock with %globaltimer. */
static int write_system(ag_host *h) {
  int rc;
  /* the trace's finish calibration when this is a trace run (10 ms: the
   * SM clock's), else a short one: only the clock alignment needs it */
  if (h->ncal < 2 && (rc = calibrate(h, "finish", h->collect == 1 ? 10000000 : 1000000)))
    return rc;
  if ((rc = ag_host_sync(h)) || (rc = ag_act_flush(h->act, h->msg, sizeof h->msg)))
    return rc;
  ag_jb j = {0};
  cupti_header(h, &j, AG_ACT_FORMAT, AG_ACT_VERSION, "ns");
  calibration_fields(h, &j);
  ag_act_json(h->act, &j);
  return write_cupti_file(h, AG_ACT_FILE, &j);
}

/* <out>/pm.json (AG_PMS_FILE, docs/throughput.md): the samples, the
 * calibrations that align the sampler's clock (and CUPTI's, with the
 * activity trace beside it) with %globaltimer, and the activity records. */
static int write_pm(ag_host *h) {
  int rc;
  if (h->ncal < 2 && (rc = calibrate(h, "finish", h->collect == 1 ? 10000000 : 1000000)))
    return rc;
  if ((rc = ag_host_sync(h)) || (h->act && (rc = ag_act_flush(h->act, h->msg, sizeof h->msg))) ||
      (rc = ag_pms_end(h->pms, h->msg, sizeof h->msg)))
    return rc;
  ag_jb j = {0};
  cupti_header(h, &j, AG_PMS_FORMAT, AG_PMS_VERSION, "ns");
  calibration_fields(h, &j);
  ag_jb_printf(&j, "\"activity\":%s,", h->act ? "true" : "false");
  if (h->act) {
    ag_act_json(h->act, &j);
    ag_jb_puts(&j, ",");
  }
  ag_jb_puts(&j, "\"pm\":{");
  ag_pms_json(h->pms, &j);
  ag_jb_puts(&j, "}");
  return write_cupti_file(h, AG_PMS_FILE, &j);
}

int ag_host_finish(ag_host *h) {
  if (!h || !h->ok)
    return AG_HOST_EINVAL;
  if (h->finished)
    return 0;
  h->finished = 1;
  if (h->fl.k) /* a launch begun and never ended: its gate would hold the device */
    launch_end(&h->fl, 0);
  int rc = ag_host_sync(h);
  if (rc || !h->collect)
    return rc;
  if (!h->replaced) {
    setmsg(h, "the harness loaded no module that the variant replaces (ARGUS_MODULE=%s)",
           h->module_match ? h->module_match : "(first load)");
    return fail(h, AG_HOST_ENOTFOUND);
  }
  if (h->collect == 3)
    return fail(h, write_sass(h));
  if (h->collect == 4)
    return fail(h, write_stalls(h));
  if (h->collect == 5)
    return fail(h, write_counters(h));
  if ((rc = write_timing(h)))
    return fail(h, rc);
  if (h->act && h->want_act && (rc = write_system(h)))
    return fail(h, rc);
  if (h->pms && (rc = write_pm(h)))
    return fail(h, rc);
  for (ag_host_module *m = h->modules; m; m = m->next) /* a mapping variant's counts */
    if (m->map.bound) {
      ag__map_cu c = map_cu(h);
      if ((rc = ag__map_write(&c, &m->map, h->out_dir, h->msg, sizeof h->msg)))
        return fail(h, rc);
    }
  if (h->collect == 2) /* the timing run records nothing */
    return 0;
  if (h->ncal < 2 && (rc = calibrate(h, "finish", 10000000))) /* done by write_system */
    return fail(h, rc);
  return fail(h, write_evidence(h));
}
