/*
 * tile_pipe.h — the front of the tile pipeline for tests that run every row
 * of a shared table (test_tile_builtins, test_tile_intrin): a program text
 * parsed and checked clean, then lowered, each printing why when it fails,
 * then one kernel run in the value interpreter; and the sm_90a compile step
 * (NVRTC, then ptxas) of test_tile_wgmma and test_tile_tma.
 * Include after check.h (it includes tile_util.h); TILE_PIPE_FILE names the text in diagnostics.
 */
#ifndef ARGUS_TEST_TILE_PIPE_H
#define ARGUS_TEST_TILE_PIPE_H

#include "argus/tile_check.h"
#include "argus/tile_lower.h"
#include "argus/tile_run.h"
#include "argus/core.h"
#include "tile_util.h"

#include <unistd.h>

#ifndef TILE_PIPE_FILE
#define TILE_PIPE_FILE "t.tile"
#endif

/* Parses and checks text; NULL (with the diagnostics printed) when it does not check clean. */
static ag_tile_program *checked(const char *text) {
  ag_diags d;
  ag_diags_init(&d);
  ag_tile_program *p = NULL;
  ag_tile_report *r = NULL;
  int rc = ag_tile_parse(text, strlen(text), TILE_PIPE_FILE, &d, &p);
  if (!rc)
    rc = ag_tile_check(p, NULL, &d, &r);
  if (!rc && !ag_tile_report_ok(r))
    rc = AG_EVIOLATION;
  if (rc) {
    ag_str s = AG_STR_INIT;
    ag_diags_format(&d, &s);
    fprintf(stderr, "does not check (%s):\n%s\n%s", ag_err_name(rc), ag_str_cstr(&s), text);
    ag_str_release(&s);
    ag_tile_program_free(p);
    p = NULL;
  }
  ag_tile_report_free(r);
  ag_diags_release(&d);
  return p;
}
/* Lowers p; NULL (with the diagnostics printed) when it does not lower. */
static ag_tile_lowered *lowered(const ag_tile_program *p) {
  ag_diags d;
  ag_diags_init(&d);
  ag_tile_lowered *l = NULL;
  ag_tile_lower_opts o;
  memset(&o, 0, sizeof o);
  if (ag_tile_lower(p, &o, &d, &l)) {
    ag_str s = AG_STR_INIT;
    ag_diags_format(&d, &s);
    fprintf(stderr, "does not lower:\n%s\n", ag_str_cstr(&s));
    ag_str_release(&s);
  }
  ag_diags_release(&d);
  return l;
}

/* Runs kernel `name` of p (lowered as l) in the value interpreter over
 * tensors t (in its parameters' order); 0 or the interpreter's code (err says why). */
static int interpret_sizes(const ag_tile_program *p, const ag_tile_lowered *l, const char *name,
                           const char *sizes, void **t, char *err, size_t errn) {
  const ag_tile_lkernel *k = NULL;
  for (int i = 0; i < l->nkernels; i++)
    if (!strcmp(l->kernels[i].name, name))
      k = &l->kernels[i];
  if (!k) {
    snprintf(err, errn, "no lowered kernel %s", name);
    return AG_ENOTFOUND;
  }
  ag_diags d;
  ag_diags_init(&d);
  ag_tile_run_sizes s;
  ag_tile_bound b;
  memset(&s, 0, sizeof s);
  memset(&b, 0, sizeof b);
  int rc = ag_tile_run_sizes_parse(p, name, sizes, &d, &s);
  if (!rc)
    rc = ag_tile_run_bind(p, k, &s, &d, &b);
  if (!rc)
    rc = ag_tile_interp(p, &b, NULL, 0, t, err, errn);
  else
    snprintf(err, errn, "cannot bind %s", name);
  ag_tile_bound_release(&b);
  ag_tile_run_sizes_release(&s);
  ag_diags_release(&d);
  return rc;
}
/* ... with no sizes (every size a constant); sizes: "M=128,N=256" */
__attribute__((unused)) static int interpret(const ag_tile_program *p, const ag_tile_lowered *l,
                                             const char *name, void **t, char *err, size_t errn) {
  return interpret_sizes(p, l, name, NULL, t, err, errn);
}

/* ptxas -arch=sm_90a on ptx: 1 assembled, 0 refused (err), -1 no ptxas. */
static inline int pipe_assemble(const char *ptx, ag_str *err) {
  char *as = ag_which("ptxas");
  if (!as && access("/usr/local/cuda/bin/ptxas", X_OK) == 0)
    as = ag_strdup("/usr/local/cuda/bin/ptxas");
  if (!as)
    return -1;
  char in[] = "/tmp/argus-wg-XXXXXX.ptx", outp[] = "/tmp/argus-wg-XXXXXX.cubin";
  int fd = mkstemps(in, 4), fd2 = mkstemps(outp, 6);
  int ok = 0;
  if (fd >= 0 && fd2 >= 0 && write(fd, ptx, strlen(ptx)) == (ssize_t)strlen(ptx)) {
    const char *argv[] = {as, "-arch=sm_90a", "-o", outp, in, NULL};
    ag_proc_opts o;
    memset(&o, 0, sizeof o);
    o.argv = argv;
    o.capture_err = err;
    o.timeout_s = 300;
    ag_proc_result r;
    ok = !ag_proc_run(&o, &r) && r.exited && r.exit_code == 0;
  }
  if (fd >= 0)
    close(fd), unlink(in);
  if (fd2 >= 0)
    close(fd2), unlink(outp);
  ag_free(as);
  return ok;
}

/* NVRTC then ptxas on l's CUDA C: 1 when both ran and accepted it, 0 when one
 * refused, -1 when either is missing. */
static inline int pipe_compiles(const ag_tile_lowered *l) {
  ag_diags d;
  ag_diags_init(&d);
  ag_str ptx = AG_STR_INIT, err = AG_STR_INIT;
  int rc = ag_tile_nvrtc_ptx(l->cuda, strlen(l->cuda), "sm_90a", &d, &ptx, NULL);
  int r = rc == AG_EUNSUPPORTED ? -1 : rc ? 0 : pipe_assemble(ag_str_cstr(&ptx), &err);
  if (r == 0) {
    ag_str s = AG_STR_INIT;
    ag_diags_format(&d, &s);
    printf("  does not compile: %s%s\n", ag_str_cstr(&s), ag_str_cstr(&err));
    ag_str_release(&s);
  }
  ag_str_release(&ptx);
  ag_str_release(&err);
  ag_diags_release(&d);
  return r;
}


/* Integers in -8..7, exact in bf16 and in sums of 512 products in f32, with
 * no short period in i (an element read from the wrong place shows). */
static inline float pipe_small(int i, int k) {
  return (float)((int)(((uint32_t)i * 2654435761u + (uint32_t)k * 40503u) >> 28) - 8);
}

/* Kernel `name` of a GEMM example in the value interpreter (sizes: its size
 * spec, or NULL; K: the kernel's const, as given) over bf16 A (M x K), B (N x K)
 * against C = A B^T summed in double: the number of elements that differ, or
 * -1 when it does not run. */
static inline long pipe_gemm_interp(const ag_tile_program *p, const ag_tile_lowered *l,
                                    const char *name, const char *sizes, int M, int N, int K) {
  uint16_t *A = malloc((size_t)M * K * 2), *B = malloc((size_t)N * K * 2);
  float *C = calloc((size_t)M * N, 4);
  long bad = -1;
  if (A && B && C) {
    for (int i = 0; i < M * K; i++)
      A[i] = ag__f2bf(pipe_small(i, 3));
    for (int i = 0; i < N * K; i++)
      B[i] = ag__f2bf(pipe_small(i, 5));
    void *t[3] = {A, B, C};
    char err[512] = "";
    int rc = interpret_sizes(p, l, name, sizes, t, err, sizeof err);
    if (rc)
      printf("  interp: %s\n", err);
    for (int m = 0, n; !rc && m < M; m++)
      for (n = 0, bad = bad < 0 ? 0 : bad; n < N; n++) {
        double sum = 0;
        for (int kk = 0; kk < K; kk++)
          sum += (double)ag__bf2f(A[m * K + kk]) * ag__bf2f(B[n * K + kk]);
        bad += C[m * N + n] != (float)sum;
      }
  }
  free(A), free(B), free(C);
  return bad;
}

/* pipe_gemm_interp at "M=M,N=N" after the sm_90a compile step. */
static inline long pipe_gemm_example(const ag_tile_program *p, const ag_tile_lowered *l,
                                     const char *name, int M, int N, int K) {
  int c = pipe_compiles(l);
  if (c < 0)
    printf("  NVRTC or ptxas missing: the compile step is skipped\n");
  if (c == 0)
    return -1;
  char sizes[64];
  snprintf(sizes, sizeof sizes, "M=%d,N=%d", M, N);
  return pipe_gemm_interp(p, l, name, sizes, M, N, K);
}

/* The example file rel (relative to the source tree) checked clean and
 * lowered: *l (owned, or NULL when a step fails: the failure is recorded);
 * returns the program (owned, or NULL). */
static inline ag_tile_program *pipe_example(const char *rel, ag_tile_lowered **l) {
  *l = NULL;
  char *src = tu_read(rel, NULL);
  CHECK(src != NULL);
  ag_tile_program *p = src ? checked(src) : NULL;
  CHECK(p != NULL);
  *l = p ? lowered(p) : NULL;
  CHECK(*l != NULL);
  free(src);
  return p;
}

#endif
