/*
 * argus/tile_run.h — running a lowered tile program (src/tile/run):
 * `argus run FILE.tile` (docs/run.md).
 *
 * Two halves. The host half needs no GPU: it splits `--size NAME=V,...`
 * into const parameters (defines for the checker and the lowering) and
 * problem sizes, evaluates the lowering's C expressions over the sizes (the
 * launch preconditions each `assume` became, the grid, the tensor dims) and
 * says which assumption a size violates before anything is launched. The
 * device half allocates the tensors (seeded random values in their declared
 * types), launches through libargus_host with a watchdog, compares with a
 * reference (the value interpreter of interp.c at toy sizes; C = A·Bᵀ in
 * double on the CPU, or cuBLAS, for GEMM-shaped kernels) and times the
 * kernel (--bench).
 *
 * Library code: never prints, never exits; errors are AG_E* codes with
 * diagnostics (host half) or a detail message in the result (device half).
 */
#ifndef ARGUS_TILE_RUN_H
#define ARGUS_TILE_RUN_H

#include "argus/tile_lower.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Evaluates a C integer expression as the lowering writes them (decimal
 * literals with an optional u suffix, names, ( ), unary - ~ !, * / % + -
 * << >> < <= > >= == != & ^ | && || and ?:) with the given names bound.
 * bits 32: unsigned 32-bit arithmetic, as the kernel and its host-side
 * preconditions compute; bits 64: unsigned 64-bit (FLOP counts). Returns 0,
 * AG_EPARSE (malformed, or an unknown name: err says which) or AG_ERANGE
 * (division by zero). err (may be NULL) gets a message. */
int ag_tile_cexpr_eval(const char *expr, const char *const *names, const uint64_t *vals, int n,
                       int bits, uint64_t *out, char *err, size_t errlen);

/* The values of one run, parsed from "NAME=V,NAME=V" against a kernel:
 * names of const parameters become defines, the others problem sizes. */
typedef struct ag_tile_run_sizes {
  char **defines;   /* "NAME=VALUE" (owned), for ag_tile_check_opts / ag_tile_lower_opts */
  int ndefines;
  char **names;     /* problem sizes given, in the order given (owned) */
  uint64_t *vals;
  int n;
} ag_tile_run_sizes;

/* Parses spec (may be NULL: no values) for kernel `kernel` of p (NULL: the
 * first kernel). AG_EPARSE with a diagnostic for a malformed item, a value
 * that is not a positive integer below 2^32, a name given twice, or an
 * unknown kernel. Names that are not const parameters are kept as sizes;
 * ag_tile_run_bind says whether the kernel has them. */
int ag_tile_run_sizes_parse(const ag_tile_program *p, const char *kernel, const char *spec,
                            ag_diags *d, ag_tile_run_sizes *out);
void ag_tile_run_sizes_release(ag_tile_run_sizes *s);

#define AG_TILE_RUN_MAXRANK 8

/* A lowered kernel bound to concrete sizes: everything a launch needs. */
typedef struct ag_tile_bound {
  const ag_tile_lkernel *k;  /* borrowed */
  uint32_t *size_vals;       /* [k->nparams]: the value of each size parameter (0 for tensors) */
  uint64_t *dims;            /* [k->nparams * AG_TILE_RUN_MAXRANK]: tensor dims */
  uint64_t *bytes;           /* [k->nparams]: tensor sizes in bytes */
  unsigned grid[3];
} ag_tile_bound;

/* Binds k to the sizes: every size parameter must be given and every given
 * size must be a parameter; then each precondition is evaluated, in order.
 * AG_EPARSE (diagnostics at the .tile line of the `assume` a size violates,
 * or naming the missing/unknown size), AG_ERANGE (an empty grid, a tensor
 * over 2^40 bytes). */
int ag_tile_run_bind(const ag_tile_program *p, const ag_tile_lkernel *k,
                     const ag_tile_run_sizes *s, ag_diags *d, ag_tile_bound *out);
void ag_tile_bound_release(ag_tile_bound *b);

/* GEMM-shaped: three tensors A(M, K), B(N, K) of bf16 or f16 and C(M, N) of
 * f32, bf16 or f16, with C = A·Bᵀ meant. Returns the indices of A, B, C in
 * k->params, or -1 when k is not GEMM-shaped. */
int ag_tile_run_gemm_shape(const ag_tile_lkernel *k, int *ia, int *ib, int *ic);

/* Fills a tensor of dtype dt (bytes long) with the seeded values argus run
 * gives every tensor (docs/run.md, "Inputs"): floats uniform in [-amp, amp)
 * rounded to the type, integer bytes in 0..15, from the splitmix64 state
 * *seed, which advances (the tensors of a launch are filled in parameter
 * order from one state that starts at the seed). */
void ag_tile_run_fill(const char *dt, void *buf, uint64_t bytes, uint64_t *seed, double amp);

typedef enum ag_tile_ref { AG_TILE_REF_NONE, AG_TILE_REF_AUTO, AG_TILE_REF_CPU,
                           AG_TILE_REF_CUBLAS, AG_TILE_REF_INTERP } ag_tile_ref;

/* The value reference (interp.c): runs b's kernel of p on the CPU, every
 * block of the grid in turn and its threads in lockstep, over the tensors
 * (host buffers in b->k's parameter order, NULL for sizes), which it reads
 * and writes in place. defines: the const parameters given ("NAME=V").
 * Returns 0, AG_EUNSUPPORTED (a construct it does not model, or an access
 * out of bounds: err says where, file:line:col), AG_ENOMEM. For toy sizes:
 * about 10^7 thread-statements per second. */
int ag_tile_interp(const ag_tile_program *p, const ag_tile_bound *b,
                   const char *const *defines, int ndefines, void **tensors, char *err,
                   size_t errlen);

typedef struct ag_tile_exec_opts {
  uint64_t seed;         /* inputs: 0 → 1 */
  ag_tile_ref ref;       /* NONE: no comparison */
  int bench;             /* 1: time the kernel (and cuBLAS for GEMM-shaped kernels) */
  int samples;           /* bench samples (0: 50) */
  int warmup;            /* bench warm-up launches (0: 5) */
  double timeout_s;      /* watchdog per launch (0: 60 s) */
  uint64_t flops;        /* FLOPs of one launch (0: 2MNK for GEMM-shaped kernels, else unknown) */
  int keep_tensors;      /* 1: r->tensors gets every tensor after the first launch */
  double amplitude;      /* float inputs uniform in [-amplitude, amplitude) (0: 0.5) */
  const ag_tile_program *prog;  /* for AG_TILE_REF_INTERP (and AUTO on other kernels) */
  const char *const *defines;   /* the const parameters the kernel was lowered with */
  int ndefines;
} ag_tile_exec_opts;

typedef struct ag_tile_timing {
  int samples;
  double median_ms, min_ms, max_ms, p10_ms, p90_ms;
  double tflops, gbps;    /* 0 when unknown */
} ag_tile_timing;

typedef struct ag_tile_exec_result {
  /* comparison (ref != NONE) */
  const char *ref_used;   /* "cpu" (double), "cublas", "interp" or NULL; static */
  int compared_param;     /* index of the tensor compared (-1: none) */
  uint64_t nelems, nbad;
  uint64_t first_bad[AG_TILE_RUN_MAXRANK]; /* coordinates of the first wrong element */
  int bad_rank;                  /* how many of them */
  double got, want, atol, rtol, max_err;
  /* bench */
  ag_tile_timing kernel, cublas; /* cublas.samples == 0 when not timed */
  int sm_mhz, mem_mhz;           /* clocks read (NVML) after the samples; 0 when unknown */
  int sm_mhz_max, mem_mhz_max;   /* the device's maximum clocks */
  int l2_bytes;                  /* the L2 size the flush covered (twice over) */
  char device[128];
  char err[512];                 /* why it failed */
  void **tensors;                /* keep_tensors: [k->nparams] host copies (NULL for sizes),
                                    owned: ag_tile_exec_result_release */
  int ntensors;
  double tol_atol, tol_rtol;     /* in, for ag_tile_run_compare: both > 0 replace the
                                    dtype's tolerance (argus optimize's task files) */
} ag_tile_exec_result;

/* Frees what r owns (the kept tensors). */
void ag_tile_exec_result_release(ag_tile_exec_result *r);

/* The tolerance a comparison of dtype uses: |got - want| <= atol + rtol |want|. */
void ag_tile_run_tolerance(const char *dtype, double *atol, double *rtol);

/* Compares every tensor of b (host buffers in parameter order, NULL for
 * sizes) of got with want, element by element in its dtype within
 * ag_tile_run_tolerance (or r->tol_atol, r->tol_rtol when both are set;
 * a tensor NULL in got or want is skipped): sets r->nelems, nbad, max_err, and for the first
 * wrong element its tensor (compared_param), coordinates (first_bad,
 * bad_rank), got, want and the tolerance. */
void ag_tile_run_compare(const ag_tile_bound *b, void *const *got, void *const *want,
                         ag_tile_exec_result *r);

/* Runs b's kernel from its PTX on the GPU (libargus_host): allocates and
 * fills the tensors, launches, waits at most timeout_s, compares with the
 * reference, times it. Returns 0 (also when elements mismatch: r->nbad),
 * AG_ENODEV (no GPU), AG_ECUDA (a fault: r->err has the driver's words),
 * AG_ETIMEOUT (the watchdog: the kernel did not finish), AG_EUNSUPPORTED
 * (no reference for this kernel, or no cuBLAS), AG_ENOMEM. */
int ag_tile_run_exec(const ag_tile_bound *b, const char *ptx, const ag_tile_exec_opts *o,
                     ag_tile_exec_result *r);

/* Parses path, splits spec, lowers the first kernel (unchecked), binds,
 * compiles through NVRTC (*cached says whether the PTX came from the cache;
 * *build_s gets the time of these steps; both may be NULL) and, when o is
 * not NULL, runs it (ag_tile_run_exec; the value reference gets this
 * program). The first failure's code; the diagnostics in d, the device's
 * words in r->err (d NULL: the diagnostics too, formatted). */
int ag_tile_run_file(const char *path, const char *spec, const ag_tile_exec_opts *o,
                     ag_diags *d, ag_tile_exec_result *r, double *build_s, int *cached);

struct ag_spec;
/* The tile builder of program specs (argus/spec.h, ag_spec_set_tile_builder;
 * tilespec.c): lowers s->tile with s->tile_sizes (refusing a missing size,
 * sizes that violate an `assume`, and, unless s->tile_unchecked, a program
 * whose assertions do not all hold: AG_EVIOLATION, naming the first),
 * compiles it through NVRTC and sets s->ptx (a file with the PTX) and
 * s->run (`argus_exe run FILE --kernel K --size ... --unchecked`).
 * argus_exe: the argus executable (const char *; NULL: $ARGUS_BIN, else an
 * installed bin/argus, else the build tree's, else "argus" in PATH). */
int ag_tile_spec_build(struct ag_spec *s, void *argus_exe, ag_diags *d);

/* --ref auto takes the value reference for kernels that are not GEMM-shaped
 * up to this many threads in the grid (attention.tile at skv 64: 128 blocks,
 * some seconds of interpretation). */
#define AG_TILE_INTERP_MAX_THREADS (1 << 14)

/* The H200's peaks used for the ratios (dense, boost clock; NVIDIA's data sheet). */
#define AG_H200_PEAK_BF16_TFLOPS 989.4
#define AG_H200_PEAK_HBM_GBPS 4800.0

#ifdef __cplusplus
}
#endif
#endif
