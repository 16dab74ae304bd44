/*
 * argus/spec.h — program specs: how to build a kernel module and how to run
 * its harness (shared/ARCHITECTURE.md, "How a kernel is run").
 *
 *   {"name": "gemm_tma",
 *    "module": {"cuda": "gemm_tma.cu", "flags": ["-arch=sm_90a"]}   or
 *              {"ptx": "gemm_tma.ptx"},
 *    "run": ["./gemm_tma_harness", "--size", "1024"],
 *    "run_library": "libgemm_tma_harness.so"}   (optional)
 *
 * or, for a tile program (docs/harness.md), in place of "module" and "run":
 *
 *   {"tile": "gemm.tile", "kernel": "gemm", "size": {"M": 128, "N": 128},
 *    "unchecked": false}      ("name" optional: the kernel's or the file's)
 *
 * or, for a Python program that runs Triton kernels (docs/triton.md), in
 * place of "module" and "run":
 *
 *   {"python": "bench.py", "args": ["--size", "1024"], "kernel": "matmul"}
 *                         ("name" optional: the kernel's or the script's)
 *
 * Its module is found by running the script once with Triton's dump on
 * (ag_spec_python_discover): the PTX of "kernel", the only kernel when the
 * script compiles one.
 *
 * "module" may also name "production": the cubin or fatbin of the user's
 * own build, which the trace-free variant's code is compared with
 * (docs/build-fidelity.md).
 * Paths in "module" are relative to the spec file's directory, and so is
 * "run"'s argv[0] when it contains a '/' ("./harness", "bin/harness"): it
 * is resolved when the spec is loaded, so argus may start anywhere. A bare
 * argv[0] ("gemm_tma_harness") is looked up in PATH. The harness runs in
 * the spec's directory.
 * "run_library" is the same harness built as a shared library exporting
 * argus_harness_main (ARGUS_HARNESS_MAIN in argus/host.h): collections of
 * many variants then run in one GPU worker process that keeps its CUDA
 * context (docs/probes.md). A name without '/' is looked up like "run"'s
 * argv[0]: in the directories of PATH. Unknown keys
 * and wrong types are errors with the spec's line and column.
 */
#ifndef ARGUS_SPEC_H
#define ARGUS_SPEC_H

#include "argus/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ag_spec {
  char *path;    /* the spec file */
  char *dir;     /* its directory */
  char *name;
  char *cuda;    /* resolved path of the CUDA source, or NULL */
  char *ptx;     /* resolved path of the PTX module, or NULL */
  char **flags;  /* nvcc flags (NULL-terminated), for "cuda" */
  char *production; /* resolved path of the user's own build (cubin or fatbin), or NULL */
  int nflags;
  char **run;    /* harness argv (NULL-terminated); NULL when absent */
  int nrun;
  char *run_library; /* the harness as a shared library (path), or NULL */
  /* {"tile": FILE, ...}: a tile program (docs/harness.md, "A tile program as
   * the spec"). The tile builder fills ptx and run from these. */
  char *tile;        /* resolved path of the .tile file, or NULL */
  char *tile_kernel; /* "kernel", or NULL (the file's first) */
  char *tile_sizes;  /* "size" as "NAME=V,..." (problem sizes and const parameters) */
  int tile_unchecked; /* "unchecked": true */
  int ptx_is_temp;   /* ptx is a temporary file ag_spec_free removes */
  /* {"python": FILE, ...}: a Python program running Triton kernels. */
  char *python;       /* resolved path of the script, or NULL */
  char **python_args; /* "args" (NULL-terminated, maybe empty) */
  int npython_args;
  char *python_kernel; /* "kernel", or NULL; after discovery the kernel found */
  char *triton_key;    /* after discovery: Triton's directory name for that kernel
                          (the hash of its source and specialization) */
  /* After discovery, from the compiled kernel's metadata (Triton's cache
   * <name>.json) and the environment the script ran in: how Triton
   * assembled it, so that the variants are assembled the same way
   * (docs/triton.md, "Build fidelity"). NULL when the metadata was not
   * found; triton_build_note then says why. */
  char *triton_version;     /* "3.6.0" */
  char *triton_ptxas;       /* the ptxas Triton ran (path) */
  char **triton_ptxas_opts; /* its options, NULL-terminated (no -v, input, output) */
  char *triton_build_note;  /* why the three above are NULL, or NULL */
  int production_is_temp;   /* production is a temporary file ag_spec_free removes
                               (a python spec's: Triton's cubin from the dump) */
} ag_spec;

/* What turns a tile spec into a module and a harness: lowers s->tile
 * (checked unless s->tile_unchecked) and sets s->ptx (a file holding the
 * lowered PTX) and s->run (the `argus run` argv that launches it). Returns
 * 0 or an AG_E* code with diagnostics. The tile lowering provides one
 * (ag_tile_spec_build, argus/tile_run.h); a program that loads tile specs
 * registers it once, before loading any (ud is passed back). Without one,
 * a tile spec is refused, saying so. */
typedef int (*ag_spec_tile_fn)(ag_spec *s, void *ud, ag_diags *d);
void ag_spec_set_tile_builder(ag_spec_tile_fn fn, void *ud);

/* Loads and validates a spec. *out is owned (ag_spec_free). AG_EPARSE with
 * diagnostics on malformed specs; AG_EIO when the file cannot be read. */
int ag_spec_load(const char *path, ag_diags *diags, ag_spec **out);
int ag_spec_load_str(const char *text, const char *path, ag_diags *diags, ag_spec **out);
void ag_spec_free(ag_spec *s);

/* ------------------------------------------------ Python programs (Triton)
 * docs/triton.md. Triton 3.6 names each compiled kernel by a directory
 * <key> (a hash of its source and specialization) and a file name <name>
 * (the kernel's): TRITON_KERNEL_DUMP=1 writes <TRITON_DUMP_DIR>/<key>/
 * <name>.{ttir,ttgir,llir,ptx,cubin}; TRITON_KERNEL_OVERRIDE=1 reads a stage
 * from <TRITON_OVERRIDE_DIR>/<key>/<name>.<ext> in place of compiling it. */
typedef struct ag_triton_kernel {
  char *name; /* the kernel: Triton's file name, the PTX .entry */
  char *key;  /* the directory Triton names after its source hash */
  char *ptx;  /* the dumped PTX (path) */
} ag_triton_kernel;

/* The interpreter of python specs: $ARGUS_PYTHON, else "python3" (looked
 * up in PATH when run). Borrowed (the environment's, or a literal). */
const char *ag_spec_python_exe(void);
/* The argv of a python spec: python, the script, its args (NULL-terminated;
 * owned, free with ag_spec_options_free). NULL on out of memory. */
char **ag_spec_python_argv(const ag_spec *s);
/* Runs the spec's script once, in the spec's directory, with Triton's dump
 * on (TRITON_KERNEL_DUMP=1, TRITON_DUMP_DIR=dump_dir, TRITON_ALWAYS_COMPILE=1
 * so that cached kernels are compiled and dumped too) and a timeout;
 * cache_dir (NULL: the user's) becomes TRITON_CACHE_DIR, where Triton keeps
 * each kernel's metadata (<hash>/<name>.json). A script that fails is
 * AG_ECHILD with its exit and the tail of its stderr. */
int ag_triton_dump(const ag_spec *s, const char *dump_dir, const char *cache_dir,
                   double timeout_s, ag_diags *d);
/* How Triton 3.6 assembled a kernel, from its metadata (the JSON text of
 * <name>.json) and the environment (Triton's knobs: TRITON_PTXAS_PATH,
 * TRITON_DISABLE_LINE_INFO, DISABLE_PTXAS_OPT), as its make_cubin does:
 * sets s->triton_version, s->triton_ptxas and s->triton_ptxas_opts. The
 * ptxas is $TRITON_PTXAS_PATH when executable, else bin/ptxas of the
 * nvidia backend directory the metadata's libdevice lies in. AG_EPARSE
 * (why says it) for metadata without the fields Triton 3.6 writes. */
int ag_triton_build_from_metadata(ag_spec *s, const char *json_text, ag_str *why);
/* The kernels of a dump directory, sorted by name, then key. *out is owned
 * (ag_triton_kernels_free); a directory with none gives *n 0. AG_ENOTFOUND
 * when dump_dir cannot be read. */
int ag_triton_scan(const char *dump_dir, ag_triton_kernel **out, int *n);
void ag_triton_kernels_free(ag_triton_kernel *k, int n);
/* Where Triton 3.6 reads an override of stage `ext` ("ptx", "cubin") of the
 * kernel <key>/<name>: <override_dir>/<key>/<name>.<ext>. Owned. */
char *ag_triton_override_path(const char *override_dir, const char *key, const char *name,
                              const char *ext);
/* A collect run of a python spec's variant (docs/triton.md, "A collect
 * run"): the variant's cubin is copied to <run_dir>/override/<key>/<name>
 * .cubin (s->triton_key, s->python_kernel: after discovery); argv runs the
 * script through the binding, `python -m argus._triton_run SCRIPT ARGS...`;
 * env holds Triton's override switches (TRITON_KERNEL_OVERRIDE=1,
 * TRITON_OVERRIDE_DIR, TRITON_ALWAYS_COMPILE=1), a private TRITON_CACHE_DIR
 * (<run_dir>/triton-cache: an override compiled into the user's cache would
 * be served to their next run), ARGUS_TRITON_KERNEL (the kernel to
 * substitute), ARGUS_HOST_LIBRARY (host_library: libargus_host.so) and,
 * when python_dir is given, PYTHONPATH with it first (where argus/ is).
 * Both NULL-terminated and owned (ag_triton_collect_release). AG_EINVAL
 * (why says it) for a spec not discovered, a key or name that is no single
 * path component; AG_ENOTFOUND when the cubin cannot be read.
 * variant_cubin NULL: the run times Triton's own build of the kernel (the
 * user's production code, what the trace-free timing run measures): no
 * override, and ARGUS_TRITON_OWN=1 tells the binding to take the module
 * Triton compiled as the variant without comparing its bytes. */
typedef struct ag_triton_collect {
  char **argv;
  char **env;
  char *override; /* the override file (owned) */
} ag_triton_collect;
int ag_triton_collect_setup(const ag_spec *s, const char *run_dir, const char *variant_cubin,
                            const char *host_library, const char *python_dir,
                            ag_triton_collect *out, ag_str *why);
void ag_triton_collect_release(ag_triton_collect *c);
/* The discovery of a python spec's module: ag_triton_dump into a temporary
 * directory, ag_triton_scan, then the kernel named "kernel" (else the only
 * one) must have been compiled exactly once; its PTX is copied to a
 * temporary file, s->ptx (removed by ag_spec_free), and s->python_kernel and
 * s->triton_key name it; Triton's cubin of it becomes s->production (a
 * temporary file too), and its metadata sets how Triton assembled it
 * (ag_triton_build_from_metadata; when it is missing, triton_build_note
 * says so and the variants are assembled as a PTX module's). A no-op for
 * other specs and when s->ptx is set.
 * Errors are diagnostics at the spec. */
int ag_spec_python_discover(ag_spec *s, ag_diags *d);

/* The nvcc to use: $ARGUS_NVCC, nvcc in PATH, or /usr/local/cuda/bin/nvcc.
 * Owned result, or NULL when none exists. */
char *ag_spec_nvcc(void);

/* Compiles a CUDA source to PTX with `nvcc -ptx FLAGS -DARGUS_MARKERS=1
 * -I<argus include>` (argv, never a shell) and returns the PTX text in *ptx.
 * On failure the compiler's messages are a diagnostic. flags may be NULL
 * (then -arch=sm_90a). Results are cached: the PTX is reused while nvcc, the
 * arguments and every file the compilation read (nvcc -MD) are unchanged
 * (docs/observe.md, "The PTX cache"; ARGUS_PTX_CACHE=0 turns it off,
 * ARGUS_CACHE_DIR moves it). _ex also says whether the cache served it. */
int ag_spec_compile_ptx(const char *cu, const char *const *flags, ag_diags *diags,
                        ag_str *ptx);
int ag_spec_compile_ptx_ex(const char *cu, const char *const *flags, ag_diags *diags,
                           ag_str *ptx, int *cached);
/* As ag_spec_compile_ptx without -DARGUS_MARKERS=1: the PTX of the user's
 * own build, markers off (cached alike). */
int ag_spec_compile_user_ptx(const char *cu, const char *const *flags, ag_diags *diags,
                             ag_str *ptx);

/* The options nvcc passes to ptxas when it builds a cubin of `cu` with
 * `flags` (NULL: -arch=sm_90a), read from `nvcc -dryrun -cubin FLAGS`:
 * optimization level, -arch, -maxrregcount, -Xptxas options, -lineinfo
 * (--generate-line-info), -G (-g ...), -rdc (--compile-only). The input,
 * the output and nvcc's own steps are left out. With several ptxas steps,
 * the one for `arch` (NULL: the only one). *out is owned
 * (ag_spec_options_free); on failure a diagnostic says why. Nothing is
 * compiled: nvcc only prints its steps. */
int ag_spec_ptxas_options(const char *cu, const char *const *flags, const char *arch,
                          ag_diags *diags, char ***out);
void ag_spec_options_free(char **opts);

#ifdef __cplusplus
}
#endif
#endif
