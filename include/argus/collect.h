/*
 * argus/collect.h — turning a variant into evidence on the CPU side:
 * PTX -> cubin with ptxas, as nvcc compiles the user's build (with the
 * compiler's resource report kept as evidence and a cache keyed by content
 * hash; docs/build-fidelity.md), and running a
 * harness under Argus for a reference trace (the Collect task of a traced
 * variant). The harness side of the contract is include/argus/host.h.
 *
 * Nothing here needs a GPU to build; ptxas runs on the CPU. Running a
 * harness needs one: ag_collect_gpu_probe says whether this machine has it.
 */
#ifndef ARGUS_COLLECT_H
#define ARGUS_COLLECT_H

#include "argus/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------- compilation */

/* What ptxas reported for one function. -1 where the log did not say. */
typedef struct ag_jit_func {
  char *name;
  int registers;
  int barriers;
  int stack_bytes;
  int spill_store_bytes;
  int spill_load_bytes;
  int smem_bytes;
  int cmem0_bytes;
} ag_jit_func;

typedef struct ag_cubin {
  unsigned char *data; /* the cubin image (owned) */
  size_t len;
  char arch[16];       /* "sm_90a" */
  char key[65];        /* SHA-256 over PTX, options, ptxas version */
  char *info_log;      /* ptxas's info log (-v), verbatim (owned) */
  ag_jit_func *funcs;  /* parsed from the info log */
  int nfuncs;
  int from_cache;      /* 1 when ag_jit_compile_cached found it */
  char compiler[80];   /* "ptxas 13.0.88" */
  char **options;      /* the ptxas options it was compiled with, NULL-terminated
                          (owned; input, output and the added -v left out) */
} ag_cubin;

/* The target of a PTX module (".target sm_90a, debug" -> "sm_90a"). */
int ag_jit_target(const char *ptx, size_t len, char arch[16]);

/* Compiles PTX to a cubin with ptxas (ag_jit_ptxas) and the ptxas options
 * `opts` (NULL-terminated; NULL: none), as nvcc runs it: the options nvcc
 * passes for the user's flags come from ag_spec_ptxas_options. Without an
 * -arch in opts, `-arch=ARCH -m64` is added (what nvcc passes for
 * -arch=ARCH), ARCH being `arch` or (NULL) the module's .target. Whole
 * program unless opts say --compile-only. `name` names the PTX in
 * diagnostics. A ptxas error becomes a diagnostic at the PTX line it names,
 * with the source line; returns AG_EJIT (AG_ENOTFOUND: no ptxas). *out is
 * owned. */
int ag_jit_compile_ex(const char *ptx, size_t len, const char *name, const char *arch,
                      const char *const *opts, ag_diags *diags, ag_cubin **out);
/* ag_jit_compile_ex with the ptxas at `ptxas` (NULL: ag_jit_ptxas's), e.g.
 * the one Triton assembles with for a python spec (docs/triton.md). */
int ag_jit_compile_with(const char *ptxas, const char *ptx, size_t len, const char *name,
                        const char *arch, const char *const *opts, ag_diags *diags,
                        ag_cubin **out);
/* ag_jit_compile_ex with no options: `-arch=ARCH -m64`, nvcc's default. */
int ag_jit_compile(const char *ptx, size_t len, const char *name, const char *arch,
                   ag_diags *diags, ag_cubin **out);
/* The occupancy bucket of a register count on Hopper (sm_90): the highest
 * registers per thread that allow as many warps per SM as `registers` does
 * (65,536 registers per SM allocated 256 per warp, i.e. 8 per thread; at
 * most 64 warps and 255 registers). Every block size then gets the same CTAs
 * per SM from registers at either count. -1 for registers outside 1..255. */
int ag_occ_reg_bucket_max(int registers);
/* Warps per SM that `registers` per thread allow (the same model). */
int ag_occ_reg_warps(int registers);
/* The full option list ag_jit_compile_ex gives ptxas (without input, output
 * and -v): *out is owned (ag_jit_options_free). AG_ENOTFOUND / AG_EPARSE
 * when the architecture must come from a .target the PTX lacks. */
int ag_jit_options(const char *ptx, size_t len, const char *arch, const char *const *opts,
                   char ***out);
void ag_jit_options_free(char **opts);
/* As ag_jit_compile_ex, through the cache under cache_dir (NULL: no cache):
 * a hit returns the stored cubin and report without compiling. */
int ag_jit_compile_cached_ex(const char *cache_dir, const char *ptx, size_t len,
                             const char *name, const char *arch, const char *const *opts,
                             ag_diags *diags, ag_cubin **out);
int ag_jit_compile_cached(const char *cache_dir, const char *ptx, size_t len,
                          const char *name, const char *arch, ag_diags *diags,
                          ag_cubin **out);
void ag_cubin_free(ag_cubin *c);
/* {"arch","key","bytes","functions":[{name,registers,...}],"info_log",
 *  "from_cache","build":{"compiler","options":[...],"whole_program"}} */
json_t *ag_cubin_to_json(const ag_cubin *c);
/* Parses a ptxas/nvJitLink info log into functions (exposed for tests). */
int ag_jit_parse_info(const char *log, ag_jit_func **funcs, int *nfuncs);
/* The ptxas Argus compiles with: $ARGUS_PTXAS, the ptxas beside the nvcc
 * Argus uses ($ARGUS_NVCC or nvcc in PATH: the one nvcc itself runs), ptxas
 * in PATH, or /usr/local/cuda/bin/ptxas. Owned, or NULL when none exists. */
char *ag_jit_ptxas(void);
/* Its version ("13.0.88"; "" when it cannot be run), read once. Borrowed. */
const char *ag_jit_compiler_version(void);
/* The version of the ptxas at `ptxas` (NULL: ag_jit_ptxas's) into out ("" when
 * it cannot be run). */
void ag_jit_tool_version(const char *ptxas, char out[64]);
/* 13, 0 */
int ag_jit_version(unsigned *major, unsigned *minor);

/* How a cubin's code compares with another build of the same module (the
 * spec's "production"): identical when every executable section (.text.*)
 * is byte-identical. */
typedef struct ag_build_cmp {
  int identical;   /* 1: every .text section is byte-identical */
  ag_str summary;  /* what differs, for people: registers, sizes, words */
} ag_build_cmp;
/* Compares the .text sections of `ours` (a cubin) with `prod` (a cubin or a
 * fatbin holding an uncompressed ELF for arch). AG_EPARSE with the reason in
 * cmp->summary when prod is neither. Release cmp->summary. */
int ag_build_compare(const void *ours, size_t olen, const void *prod, size_t plen,
                     const char *arch, ag_build_cmp *cmp);

/* ------------------------------------------------------------ the GPU */

/* 0 when this machine can run CUDA work (the driver loads and sees a
 * device); otherwise AG_ENODEV with the reason in why. Loads the driver with
 * dlopen: argus itself never links it. */
int ag_collect_gpu_probe(ag_str *why);
/* The number of devices the driver sees (the GPU lanes of a plan), or
 * AG_ENODEV with the reason in why. */
int ag_collect_gpu_count(ag_str *why);

/* ------------------------------------------------- a traced harness run */

typedef struct ag_trace_run_opts {
  const char *const *argv;  /* the harness (from the program spec) */
  const char *cwd;          /* where to run it (NULL: inherit) */
  const char *cubin_path;   /* the traced variant's cubin */
  const char *sites_path;   /* its site table (JSON) */
  const char *variant_id;   /* program version ID of the variant */
  const char *module_match; /* which module load the variant replaces (NULL: first) */
  const char *out_dir;      /* created if missing; evidence lands here */
  double timeout_s;         /* the harness is killed after this (<= 0: 600 s) */
  unsigned records_per_warp; /* 0: the host runtime's default */
  unsigned max_launches;    /* 0: default */
  unsigned skip_launches;
  int device;               /* bind the run to this GPU (CUDA_VISIBLE_DEVICES); -1: any */
  int time_only;            /* 1: ARGUS_COLLECT=time: the variant (trace-free) is run and
                               each launch timed; the evidence is the timing file */
  int count_records;        /* 1: ARGUS_TRACE_COUNT: the launch before the first recorded
                               one counts the records per warp that size the others */
  unsigned warps_hint;      /* ARGUS_TRACE_WARPS: the most warps a launch has (0: unknown);
                               lets the host runtime zero and bind ahead at the load */
  const char *collect;      /* the host runtime's collection (ARGUS_COLLECT): "trace",
                               "time", "map" (a mapping variant's counters, every launch
                               timed), "sass" (CUPTI SASS metrics), "system" (CUPTI
                               activity beside the timing run), "stalls" (CUPTI PC
                               sampling), "pm" (CUPTI PM sampling beside the timing
                               run: docs/throughput.md) or "counters" (CUPTI's range
                               profiler: hardware counters); NULL: "time" when
                               time_only, else "trace". The evidence is the file that
                               collection writes (ag_trace_run_evidence_file) */
  const char *counters_metrics; /* ARGUS_COUNTERS_METRICS: metrics the counters collection
                                   reads beside its default set (comma list), or NULL */
  const char *counters_range;   /* ARGUS_COUNTERS_RANGE: "auto" (a range per launch) or
                                   "user" (the harness's ranges), or NULL: auto */
  int activity;                 /* 1: ARGUS_ACTIVITY=1 beside a trace or time run: CUPTI's
                                   activity trace of the same run, system.json
                                   (docs/system.md); the process's one CUPTI subscriber */
  const char *const *env_extra; /* more "K=V" for the harness's environment (NULL-terminated;
                                   a python spec's Triton switches: ag_triton_collect_setup),
                                   or NULL */
} ag_trace_run_opts;

/* libargus_host.so for a process that loads the host runtime itself (a
 * python spec's Triton run): $ARGUS_HOST_LIBRARY, else this build's, else
 * the installed one (<prefix>/lib/libargus_host.so.1),
 * else the soname for the loader's search. Owned. */
char *ag_collect_host_library(void);
/* The directory holding the argus Python package (python/argus) to put
 * first on PYTHONPATH: $ARGUS_PYTHONPATH, else this source tree's python/
 * when it exists; NULL: none (the package must be installed). Owned. */
char *ag_collect_python_dir(void);

/* The collection a run makes (o->collect, or its default) and the name of
 * the evidence file it writes in out_dir: "evidence.agev" (trace),
 * "timing.json" (time), "map_counts.json" (map), "sass_metrics.json"
 * (sass), "system.json" (system), "stalls.json" (stalls), "pm.json" (pm),
 * "counters.json" (counters); NULL for a collection the host runtime does not know. */
const char *ag_trace_run_collect(const ag_trace_run_opts *o);
const char *ag_trace_run_evidence_file(const char *collect);

typedef struct ag_trace_run_result {
  char *evidence_path; /* owned; NULL when the run failed */
  ag_proc_result proc;
  char *log_path;      /* the harness's stdout+stderr (owned) */
  char *timing_path;   /* the kernel times (AG_EV_TIMING_FILE; owned), or NULL */
  char *system_path;   /* the activity trace beside it (o->activity: system.json; owned),
                          or NULL */
  char *late_exit;     /* the harness did not end cleanly, but only after the host
                          runtime had finished and closed (AG_HOST_CLOSED_FILE): what
                          happened, for a warning; the run counts (owned), or NULL */
} ag_trace_run_result;

/* Runs the harness once under Argus (ARGUS_COLLECT=trace) with a timeout
 * (the hardware counters of user ranges: once per replay pass, while a run
 * leaves counters.next; docs/counters.md). Fails with a message in *why
 * (the exit status or signal, a timeout, the host runtime's own error, or a
 * missing evidence file) and AG_ECHILD / AG_ETIMEOUT / AG_ECUDA; never
 * leaves a partial evidence file. */
int ag_trace_run(const ag_trace_run_opts *o, ag_trace_run_result *res, ag_str *why);
void ag_trace_run_result_release(ag_trace_run_result *r);

/* ------------------------------------------------- hardware counters */

/* Checks hardware-counter metric names (a comma list, NULL: none) against
 * the chip's metric list through CUPTI's profiler host API, which needs no
 * GPU (docs/counters.md), and configures them with the default set: 0 and
 * the replay passes the set needs in *passes when every name is a
 * collectable metric of the chip; AG_EINVAL with one line per unknown name
 * and its closest names in *why; AG_ENODEV (the reason in *why) when this
 * machine's CUPTI cannot list the chip's metrics: the collector checks the
 * names again on the GPU. chip NULL: $ARGUS_COUNTERS_CHIP, else GH100
 * (Hopper, what Argus targets). */
int ag_counters_check(const char *chip, const char *names, size_t *passes, ag_str *why);

/* The opcodes of the cubin file at cubin_path by `nvdisasm -c`, through the
 * SASS-metrics collector's helper (ARGUS_NVDISASM, else nvdisasm beside
 * CUDA_HOME, /usr/local/cuda/bin, PATH): *text (owned, NUL-terminated) is
 * an "argus-sass-metrics" document with no metric and no row, its variant
 * `id`, for ag_sass_ev_load_mem. Without the tool, its `sass.status` says
 * why and it has no instruction (not an error). AG_ENOMEM. */
int ag_collect_disasm(const char *cubin_path, const char *id, char **text, size_t *len);

/* --------------------------------------- the multi-variant GPU worker */

/* argus-worker: one process that runs many collections while keeping its
 * CUDA context, calling the harness's library entry point (the spec's
 * "run_library", ARGUS_HARNESS_MAIN in argus/host.h) once per collection
 * (docs/probes.md). Each collection is judged as ag_trace_run judges a
 * harness process: same evidence, errors and log. */
typedef struct ag_worker ag_worker;

typedef struct ag_worker_opts {
  const char *exe;        /* the worker program; NULL: $ARGUS_WORKER, beside
                             the running program, or the build's */
  double start_timeout_s; /* for its CUDA initialization (<= 0: 120 s) */
  int device;             /* the GPU it runs on (CUDA_VISIBLE_DEVICES); -1: any */
} ag_worker_opts;

/* Starts the worker without waiting for it (its CUDA initialization
 * overlaps the caller's next steps). AG_ENOTFOUND when there is no worker
 * program. *w is owned: ag_worker_stop it. */
int ag_worker_start(const ag_worker_opts *o, ag_worker **out, ag_str *why);
/* Runs one collection (o as for ag_trace_run; `library` the harness library,
 * a bare name looked up in PATH). A job that crashes or hangs the worker, or
 * loses its CUDA context, fails with the reason; the next call starts a
 * fresh worker. Without a GPU the first call fails with AG_ENODEV. */
int ag_worker_collect(ag_worker *w, const char *library, const ag_trace_run_opts *o,
                      ag_trace_run_result *res, ag_str *why);
/* Worker processes started and jobs run so far. */
int ag_worker_stats(const ag_worker *w, int *starts, int *jobs);
/* Asks the worker to quit (killing it when it does not) and frees w. NULL
 * is a no-op. */
void ag_worker_stop(ag_worker *w);

#ifdef __cplusplus
}
#endif
#endif
