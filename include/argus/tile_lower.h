/*
 * argus/tile_lower.h — lowering of tile programs to CUDA C and PTX
 * (src/tile/lower): the program a checker accepted becomes a kernel.
 *
 * The lowering walks each kernel once (loops stay loops, `#pragma unroll`),
 * folds layouts and swizzles through the layout algebra into index
 * expressions, and emits one C statement per DSL statement where it can,
 * each under a `#line` of the DSL source. Tags, tag functions and
 * assertions emit nothing; `assume` becomes a launch precondition the host
 * checks (ag_tile_launch_check). What it cannot lower is an error at the DSL
 * line, never wrong code. docs/lower.md holds the decisions.
 *
 * Input contract: a program ag_tile_check accepted (returned 0, whatever its
 * verdicts); the lowering relies on the checker for the language's typing
 * and memory-safety rules (view sizes, contiguity, swizzle periods).
 * Library code: never prints, never exits.
 */
#ifndef ARGUS_TILE_LOWER_H
#define ARGUS_TILE_LOWER_H

#include "argus/tile.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ag_tile_lower_opts {
  const char *kernel;          /* lower only this kernel (NULL: every kernel) */
  const char *const *defines;  /* "NAME=VALUE" overrides of const parameters */
  int ndefines;
  int no_markers;              /* 1: emit no ARGUS region markers */
} ag_tile_lower_opts;

typedef enum ag_tile_param_kind { AG_TILE_PARAM_TENSOR, AG_TILE_PARAM_SIZE } ag_tile_param_kind;

typedef struct ag_tile_lparam {
  char *name;
  ag_tile_param_kind kind;
  char *dtype;                 /* tensors: "bf16", ... (NULL for sizes) */
  int rank;                    /* tensors: number of dims */
  char **dims;                 /* tensors: each dim as a C expression over sizes */
} ag_tile_lparam;

/* A TMA tensor map (tma_map in the DSL): the entry takes it as a
 * `const __grid_constant__ CUtensorMap` after the other parameters, in this
 * order; the host encodes it with cuTensorMapEncodeTiled over tensor
 * parameter `tensor` (its dims and a packed row-major layout), the box and
 * the swizzle, zeros outside the tensor (docs/lower.md, "TMA"). */
typedef struct ag_tile_ltmap {
  char *name;                  /* the entry parameter's C name */
  int tensor;                  /* index in params */
  int rank;
  int64_t box[5];              /* elements, in the tensor's dimension order */
  int swizzle;                 /* bytes: 0 (none), 32, 64, 128 */
} ag_tile_ltmap;

/* One lowered kernel: what a launcher needs besides the module. */
typedef struct ag_tile_lkernel {
  char *name;                  /* the extern "C" entry name */
  int64_t block[3];
  char *grid[3];               /* C expressions over the size parameters ("1u" when absent) */
  int64_t smem_bytes;          /* dynamic shared memory per block */
  ag_tile_lparam *params;      /* in the entry's parameter order */
  int nparams;
  char **assumes;              /* launch preconditions, as C expressions over sizes */
  int *assume_lines;
  int nassumes;
  char **regions;              /* the regions the markers make, qualified ("gemm/mainloop") */
  int nregions;
  ag_tile_ltmap *tmaps;        /* the entry's tensor-map parameters, after params */
  int ntmaps;
} ag_tile_lkernel;

typedef struct ag_tile_lowered {
  char *cuda;                  /* the module's CUDA C source (owned) */
  size_t len;
  ag_tile_lkernel *kernels;    /* in the file's order (or the one --kernel names) */
  int nkernels;
} ag_tile_lowered;

/* Lowers the kernels of p. Returns 0 with *out set (owned), AG_EPARSE with
 * diagnostics (file:line:col of the construct that does not lower, or an
 * unknown --kernel), AG_ENOMEM. */
int ag_tile_lower(const ag_tile_program *p, const ag_tile_lower_opts *o, ag_diags *d,
                  ag_tile_lowered **out);
void ag_tile_lowered_free(ag_tile_lowered *l);

/* CUDA C → PTX through NVRTC in this process (ARGUS_HAVE_NVRTC builds),
 * for arch ("sm_90a"; NULL: sm_90a), with the region markers on. The PTX is
 * cached by the SHA-256 of NVRTC's version, the options, region.cuh and the
 * source, under <$ARGUS_CACHE_DIR or ~/.cache/argus>/nvrtc (ARGUS_PTX_CACHE=0
 * turns it off, as for spec PTX). Appends the PTX to *ptx; *cached (may be
 * NULL) says whether it came from the cache. AG_EUNSUPPORTED when built
 * without NVRTC, AG_EJIT with NVRTC's log as diagnostics. */
int ag_tile_nvrtc_ptx(const char *cuda, size_t len, const char *arch, ag_diags *d,
                      ag_str *ptx, int *cached);
/* <$ARGUS_CACHE_DIR or $XDG_CACHE_HOME/argus or ~/.cache/argus>/sub, owned;
 * NULL when the cache is off (ARGUS_PTX_CACHE=0) or there is no home. */
char *ag__tile_cache_dir(const char *sub);

#ifdef __cplusplus
}
#endif
#endif
