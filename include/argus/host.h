/*
 * argus/host.h — the host runtime a harness links (libargus_host).
 *
 * A harness is the user's own program: it sets up inputs, launches kernels
 * and checks results. It loads its module and launches through these calls.
 *
 *   Outside Argus they are a thin wrapper over the CUDA driver API
 *   (cuModuleLoadData, cuModuleGetFunction, cuLaunchKernel) on the device's
 *   primary context, so the harness may use the CUDA runtime API
 *   (cudaMalloc, cudaMemcpy, streams) beside them.
 *
 *   Under Argus (a Collect task sets ARGUS_COLLECT and friends, see
 *   docs/evidence.md) ag_host_load loads the variant the task names instead
 *   of the harness's module, binds and zeroes the evidence buffers before
 *   each recorded launch, and ag_host_finish writes the evidence file (device,
 *   measured SM clock, launches, records, drop counts) into the task's output
 *   directory. Each launch is a scope coordinate `launch` (0, 1, ...).
 *   Every launch of the variant is timed (cuEvents behind a stream wait the
 *   host releases after the launch) with its registers and CTAs per SM,
 *   into timing.json; ARGUS_COLLECT=time does only that, on the trace-free
 *   build (docs/tracing.md, "Perturbation"). ARGUS_COLLECT=sass counts every
 *   SASS instruction of the variant with CUPTI instead and writes
 *   sass_metrics.json (docs/sass-metrics.md); ARGUS_COLLECT=counters reads
 *   the hardware counters of every launch (CUPTI's range profiler) into
 *   counters.json (docs/counters.md).
 *
 * libargus_host depends on libc alone: the driver (libcuda.so.1) is opened at
 * run time, so a harness starts on a machine without a GPU and gets
 * AG_HOST_ENODEV from ag_host_open instead of a loader error. This header
 * needs no CUDA header: streams are passed as void * (a CUstream or a
 * cudaStream_t; NULL is the default stream).
 *
 * Functions return 0 or a negative AG_HOST_E* code (the same numbers as
 * argus/core.h's AG_E* codes); ag_host_errmsg() says what failed in words.
 * Nothing here prints or exits.
 */
#ifndef ARGUS_HOST_H
#define ARGUS_HOST_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Equal to argus/core.h's AG_E* values (tests/trace/test_host_codes.c). */
enum {
  AG_HOST_OK = 0,
  AG_HOST_ENOMEM = -999,
  AG_HOST_EINVAL = -998,
  AG_HOST_EIO = -997,
  AG_HOST_EPARSE = -996,
  AG_HOST_ENOTFOUND = -995,
  AG_HOST_EBUSY = -992,
  AG_HOST_EUNSUPPORTED = -991,
  AG_HOST_ENODEV = -986,
  AG_HOST_ECUDA = -985,
  AG_HOST_ECUPTI = -984,
  AG_HOST_EFULL = -978,
};

typedef struct ag_host ag_host;               /* one per process */
typedef struct ag_host_module ag_host_module; /* owned by the ag_host */
typedef struct ag_host_kernel ag_host_kernel; /* owned by its module */

typedef struct ag_host_dim {
  unsigned x, y, z;
} ag_host_dim;

/* Opens the driver, picks the device (ARGUS_DEVICE or 0), makes its primary
 * context current on the calling thread. Under Argus it also measures the SM
 * clock (clock64 against %globaltimer over a 10 ms spin). On failure *out is
 * still set when memory allowed, so ag_host_errmsg(*out) can say why; close
 * it with ag_host_close. AG_HOST_ENODEV: no driver or no device. */
int ag_host_open(ag_host **out);
/* Finishes (as ag_host_finish) if the harness did not, unloads the modules,
 * releases the primary context. ag_host_close(NULL) is a no-op. */
void ag_host_close(ag_host *h);
/* The last error in words ("cuLaunchKernel(...) failed: CUDA_ERROR_... (...)");
 * "" when none. Borrowed; valid until the next call on h. */
const char *ag_host_errmsg(const ag_host *h);
/* 1 when a Collect task controls this run (ARGUS_COLLECT is set). */
int ag_host_under_argus(const ag_host *h);
/* The CUDA device ordinal in use. */
int ag_host_device(const ag_host *h);

/* Loads a module from a file (cubin, fatbin or PTX). Under Argus, the
 * variant named by ARGUS_VARIANT is loaded instead when this load is the one
 * the task replaces (ARGUS_MODULE matches the path, or the first load when
 * ARGUS_MODULE is unset). */
int ag_host_load(ag_host *h, const char *path, ag_host_module **out);
/* As ag_host_load from an image in memory; `name` identifies it for
 * ARGUS_MODULE and in the evidence (may be NULL). */
int ag_host_load_image(ag_host *h, const void *image, const char *name,
                       ag_host_module **out);
/* Adopts a module another runtime loaded (Triton's launcher: docs/triton.md,
 * "Load-time substitution"): `cumodule` is its CUmodule, `name` identifies it
 * for ARGUS_MODULE and in the evidence, `image` and `image_bytes` are the
 * bytes that runtime loaded (NULL: not checked). The module stays the other
 * runtime's (ag_host never unloads it) and must be loaded in the primary
 * context ag_host_open made current. Outside Argus, and for a module the
 * task does not replace, it is a module like any other (its kernels launch
 * through ag_host_launch or ag_host_launch_begin/_end). Under Argus, when it
 * is the module the task replaces, it is taken as the variant, as
 * ag_host_load would load it: its bytes must be ARGUS_VARIANT's (else
 * AG_HOST_EINVAL: the other runtime loaded something else, the substitution
 * was not applied), a traced run needs its probe descriptor, a mapping run
 * its counter descriptor; the descriptors are bound and its launches
 * timed. Adopting the same CUmodule again returns the same module. */
int ag_host_adopt(ag_host *h, void *cumodule, const void *image, size_t image_bytes,
                  const char *name, ag_host_module **out);
/* 1 when this module is the Argus variant (probes present and bound). */
int ag_host_module_traced(const ag_host_module *m);

int ag_host_kernel_get(ag_host_module *m, const char *name, ag_host_kernel **out);
/* cuFuncSetAttribute (e.g. CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8). */
int ag_host_kernel_set_attr(ag_host_kernel *k, int attribute, int value);
/* The CUfunction, for calls this header does not wrap. Borrowed. */
void *ag_host_kernel_cufunction(ag_host_kernel *k);

/* Launches (cuLaunchKernel). Under Argus a launch of a traced kernel gets
 * launch index n (0, 1, ... in launch order over the whole process); the
 * first ARGUS_TRACE_LAUNCHES of them after ARGUS_TRACE_SKIP are recorded. */
int ag_host_launch(ag_host_kernel *k, ag_host_dim grid, ag_host_dim block,
                   unsigned shared_bytes, void *stream, void **args);

/* ag_host_launch in two halves, for a kernel another runtime launches
 * (Triton's launcher calls cuLaunchKernelEx itself): ag_host_launch_begin
 * does what ag_host_launch does before cuLaunchKernel (the launch index, the
 * trace descriptor, the timing's start event behind a stream wait the host
 * releases), the caller then launches k's function with the same grid,
 * block, shared bytes and stream, and ag_host_launch_end (launched: 1 when
 * the launch was queued, 0 when it failed) records the end event, releases
 * the stream and binds ahead for the next launch. Every begin needs its end,
 * on the error path too: until then the stream waits. A begin while another
 * launch is begun, or an end without its begin, is an error (the earlier
 * launch's stream is released); ag_host_finish ends a launch left begun. */
int ag_host_launch_begin(ag_host_kernel *k, ag_host_dim grid, ag_host_dim block,
                         unsigned shared_bytes, void *stream);
int ag_host_launch_end(ag_host_kernel *k, int launched);

/* A named range of the harness's own (docs/counters.md): under Argus's
 * hardware-counter collection (ARGUS_COLLECT=counters) the launches between
 * ag_host_range_push and its ag_host_range_pop are labelled with the range
 * ("outer/inner" when nested), or, with ARGUS_COUNTERS_RANGE=user, measured
 * as one range (the outermost level). Outside that collection, and outside
 * Argus, both do nothing and return 0. A name holds no '/'; a pop without a
 * push, or a range still open at ag_host_finish, is AG_HOST_EINVAL. */
int ag_host_range_push(ag_host *h, const char *name);
int ag_host_range_pop(ag_host *h);

/* Waits for all work on the context (cuCtxSynchronize). */
int ag_host_sync(ag_host *h);
/* Under Argus: waits for the device, copies the records out and writes the
 * evidence file. Outside Argus: waits for the device. Idempotent. A harness
 * calls it (or ag_host_close) before it exits; a run that exits without it
 * leaves no evidence and its task fails saying so. */
int ag_host_finish(ag_host *h);

/* A harness's entry point. Written `ARGUS_HARNESS_MAIN(int argc, char **argv)`
 * it is `main`; built with -DARGUS_HARNESS_LIBRARY (a shared library, the
 * spec's "run_library") it is the exported `argus_harness_main`, which
 * Argus's multi-variant GPU worker calls once per collection in one process
 * that keeps its CUDA context (docs/probes.md). Such a harness returns
 * instead of calling exit(), keeps no state in statics between calls, and
 * frees what it allocates (host memory, device memory, its ag_host). */
#define ARGUS_HARNESS_ENTRY "argus_harness_main"
#ifdef ARGUS_HARNESS_LIBRARY
#define ARGUS_HARNESS_MAIN __attribute__((visibility("default"))) int argus_harness_main
#else
#define ARGUS_HARNESS_MAIN int main
#endif
typedef int (*ag_harness_main_fn)(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif
