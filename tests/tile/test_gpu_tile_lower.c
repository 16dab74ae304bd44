/*
 * test_gpu_tile_lower.c — lowered tile programs run on the GPU and match a
 * CPU reference (docs/lower.md, "Tests"): gemm.tile at toy sizes against
 * C = A B^T in double, attention.tile at a toy size (sq 64, 4 query heads on
 * one kv head, d 64, skv 64) against true attention in double
 * (attention_ref.h). Each comparison also runs on a deliberately wrong
 * result, which must fail. Through NVRTC and libargus_host; exit 77 without
 * a GPU.
 */
#include "argus/host.h"
#include "argus/tile_lower.h"
#include "check.h"

#include <dlfcn.h>
#include <math.h>

#include "attention_ref.h" /* true attention; bf2f, f2bf */

typedef int (*mem_alloc_fn)(unsigned long long *, size_t);
typedef int (*mem_free_fn)(unsigned long long);
typedef int (*htod_fn)(unsigned long long, const void *, size_t);
typedef int (*dtoh_fn)(void *, unsigned long long, size_t);
static mem_alloc_fn p_alloc;
static mem_free_fn p_free;
static htod_fn p_htod;
static dtoh_fn p_dtoh;
static ag_host *host;

static int driver(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib)
    return -1;
  p_alloc = (mem_alloc_fn)dlsym(lib, "cuMemAlloc_v2");
  p_free = (mem_free_fn)dlsym(lib, "cuMemFree_v2");
  p_htod = (htod_fn)dlsym(lib, "cuMemcpyHtoD_v2");
  p_dtoh = (dtoh_fn)dlsym(lib, "cuMemcpyDtoH_v2");
  return p_alloc && p_free && p_htod && p_dtoh ? 0 : -1;
}

static uint32_t rng = 12345;
static float urand(void) { /* [-0.5, 0.5) */
  rng = rng * 1664525u + 1013904223u;
  return (float)(rng >> 8) / 16777216.0f - 0.5f;
}

/* Lowers a file with defines, loads its PTX; 0 or -1 (diagnosed). */
static int build(const char *file, const char *const *defs, int ndefs, ag_tile_lowered **low,
                 ag_host_module **mod) {
  char path[512];
  const char *src = getenv("ARGUS_SOURCE_DIR");
  snprintf(path, sizeof path, "%s/examples/tile/%s", src ? src : ".", file);
  ag_diags d;
  ag_diags_init(&d);
  ag_tile_program *p = NULL;
  ag_str ptx = AG_STR_INIT;
  ag_tile_lower_opts o;
  memset(&o, 0, sizeof o);
  o.defines = defs;
  o.ndefines = ndefs;
  int rc = ag_tile_parse_file(path, &d, &p);
  if (!rc)
    rc = ag_tile_lower(p, &o, &d, low);
  if (!rc)
    rc = ag_tile_nvrtc_ptx((*low)->cuda, (*low)->len, "sm_90a", &d, &ptx, NULL);
  if (!rc)
    rc = ag_host_load_image(host, ag_str_cstr(&ptx), file, mod);
  if (rc) {
    ag_str s = AG_STR_INIT;
    ag_diags_format(&d, &s);
    printf("  %s: %s %s %s\n", file, ag_strerror(rc), ag_str_cstr(&s), ag_host_errmsg(host));
    ag_str_release(&s);
  }
  ag_str_release(&ptx);
  ag_tile_program_free(p);
  ag_diags_release(&d);
  return rc ? -1 : 0;
}

static unsigned long long dev_copy(const void *h, size_t n) {
  unsigned long long d = 0;
  if (p_alloc(&d, n ? n : 1) || (h && p_htod(d, h, n)))
    return 0;
  return d;
}

/* Mismatches of got against ref within atol + rtol*|ref|; prints the first. */
static long mismatches(const char *what, const float *got, const double *ref, long n, double atol,
                       double rtol, int quiet) {
  long bad = 0;
  for (long i = 0; i < n; i++)
    if (!(fabs(got[i] - ref[i]) <= atol + rtol * fabs(ref[i]))) {
      if (!bad && !quiet)
        printf("  %s: first mismatch at element %ld: %.6g, expected %.6g\n", what, i, got[i],
               ref[i]);
      bad++;
    }
  return bad;
}

static void run_gemm(int M, int N, int K) {
  char kdef[32];
  snprintf(kdef, sizeof kdef, "K=%d", K);
  const char *defs[1] = {kdef};
  ag_tile_lowered *low = NULL;
  ag_host_module *mod = NULL;
  ag_host_kernel *k = NULL;
  CHECK_EQ_INT(build("gemm.tile", defs, 1, &low, &mod), 0);
  if (!mod)
    goto out;
  CHECK_EQ_INT(ag_host_kernel_get(mod, "gemm", &k), 0);
  uint16_t *A = malloc((size_t)M * K * 2), *B = malloc((size_t)N * K * 2);
  float *C = malloc((size_t)M * N * 4);
  double *R = malloc((size_t)M * N * 8);
  for (long i = 0; i < (long)M * K; i++)
    A[i] = f2bf(urand());
  for (long i = 0; i < (long)N * K; i++)
    B[i] = f2bf(urand());
  for (int m = 0; m < M; m++)
    for (int n = 0; n < N; n++) {
      double s = 0;
      for (int kk = 0; kk < K; kk++)
        s += (double)bf2f(A[(long)m * K + kk]) * bf2f(B[(long)n * K + kk]);
      R[(long)m * N + n] = s;
    }
  unsigned long long dA = dev_copy(A, (size_t)M * K * 2), dB = dev_copy(B, (size_t)N * K * 2),
                     dC = dev_copy(NULL, (size_t)M * N * 4);
  CHECK(dA && dB && dC);
  unsigned um = (unsigned)M, un = (unsigned)N;
  void *args[] = {&dA, &dB, &dC, &um, &un};
  ag_host_dim grid = {um / 64, un / 64, 1}, block = {128, 1, 1};
  CHECK_EQ_INT(ag_host_launch(k, grid, block, (unsigned)low->kernels[0].smem_bytes, NULL, args),
               0);
  CHECK_EQ_INT(ag_host_sync(host), 0);
  CHECK_EQ_INT(p_dtoh(C, dC, (size_t)M * N * 4), 0);
  char what[64];
  snprintf(what, sizeof what, "gemm %dx%dx%d", M, N, K);
  long bad = mismatches(what, C, R, (long)M * N, 1e-4, 1e-4, 0);
  CHECK_EQ_INT(bad, 0);
  printf("  %s: %ld of %ld elements match\n", what, (long)M * N - bad, (long)M * N);
  /* the comparison fails on a wrong result: C with two rows swapped */
  for (int n = 0; n < N; n++) {
    float t = C[n];
    C[n] = C[N + n];
    C[N + n] = t;
  }
  CHECK(mismatches(what, C, R, (long)M * N, 1e-4, 1e-4, 1) > 0);
  p_free(dA);
  p_free(dB);
  p_free(dC);
  free(A);
  free(B);
  free(C);
  free(R);
out:
  ag_tile_lowered_free(low);
}

/* ARGUS_LOWER_BENCH=N: gemm.tile at N^3 (K = N), timed over 20 launches after
 * 3 warm-up launches (wall clock around launch + sync: an upper bound),
 * 512 sampled elements checked. Not part of the suite's verdict otherwise. */
#include <time.h>
static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static void bench_gemm(int n) {
  char kdef[32];
  snprintf(kdef, sizeof kdef, "K=%d", n);
  const char *defs[1] = {kdef};
  ag_tile_lowered *low = NULL;
  ag_host_module *mod = NULL;
  ag_host_kernel *k = NULL;
  double t0 = now_s();
  CHECK_EQ_INT(build("gemm.tile", defs, 1, &low, &mod), 0);
  printf("  bench: lower + NVRTC + module load at K=%d: %.2f s\n", n, now_s() - t0);
  if (!mod)
    goto out;
  CHECK_EQ_INT(ag_host_kernel_get(mod, "gemm", &k), 0);
  size_t ne = (size_t)n * n;
  uint16_t *A = malloc(ne * 2), *B = malloc(ne * 2);
  float *C = malloc(ne * 4);
  for (size_t i = 0; i < ne; i++) {
    A[i] = f2bf(urand());
    B[i] = f2bf(urand());
  }
  unsigned long long dA = dev_copy(A, ne * 2), dB = dev_copy(B, ne * 2), dC = dev_copy(NULL, ne * 4);
  unsigned un = (unsigned)n;
  void *args[] = {&dA, &dB, &dC, &un, &un};
  ag_host_dim grid = {un / 64, un / 64, 1}, block = {128, 1, 1};
  for (int i = 0; i < 3; i++)
    ag_host_launch(k, grid, block, (unsigned)low->kernels[0].smem_bytes, NULL, args);
  CHECK_EQ_INT(ag_host_sync(host), 0);
  double best = 1e9, sum = 0;
  for (int i = 0; i < 20; i++) {
    double a = now_s();
    ag_host_launch(k, grid, block, (unsigned)low->kernels[0].smem_bytes, NULL, args);
    ag_host_sync(host);
    double t = now_s() - a;
    sum += t;
    best = t < best ? t : best;
  }
  CHECK_EQ_INT(p_dtoh(C, dC, ne * 4), 0);
  long bad = 0;
  for (int s = 0; s < 512; s++) {
    long m = (long)((s * 2654435761u) % (unsigned)n), c = (long)((s * 40503u + 7) % (unsigned)n);
    double r = 0;
    for (int kk = 0; kk < n; kk++)
      r += (double)bf2f(A[m * n + kk]) * bf2f(B[c * n + kk]);
    if (fabs(C[m * n + c] - r) > 1e-3 + 1e-3 * fabs(r))
      bad++;
  }
  CHECK_EQ_INT(bad, 0);
  double fl = 2.0 * n * (double)n * n;
  printf("  bench: gemm.tile %d^3 bf16->f32: best %.3f ms (%.1f TFLOP/s), mean %.3f ms, "
         "%ld of 512 sampled elements wrong\n",
         n, best * 1e3, fl / best * 1e-12, sum / 20 * 1e3, bad);
  p_free(dA);
  p_free(dB);
  p_free(dC);
  free(A);
  free(B);
  free(C);
out:
  ag_tile_lowered_free(low);
}

TEST(test_gemm_toy) {
  const char *b = getenv("ARGUS_LOWER_BENCH");
  if (b && atoi(b) >= 64)
    bench_gemm(atoi(b));
  run_gemm(128, 128, 128);
  run_gemm(192, 64, 256);
}

/* attention.tile against true attention, softmax(Q K^T / sqrt(d)) V in
 * double (attention_ref.h), inputs in [-2, 2). */
TEST(test_attention_toy) {
  enum { SQ = 64, HQ = 4, HKV = 1, D = 64, SKV = 64 };
  ag_tile_lowered *low = NULL;
  ag_host_module *mod = NULL;
  ag_host_kernel *k = NULL;
  CHECK_EQ_INT(build("attention.tile", NULL, 0, &low, &mod), 0);
  if (!mod)
    goto out;
  CHECK_EQ_INT(ag_host_kernel_get(mod, "attention", &k), 0);
  static uint16_t Q[SQ * HQ * D], K[SKV * HKV * D], V[SKV * HKV * D], O[SQ * HQ * D];
  for (int i = 0; i < SQ * HQ * D; i++)
    Q[i] = f2bf(4 * urand());
  for (int i = 0; i < SKV * HKV * D; i++) {
    K[i] = f2bf(4 * urand());
    V[i] = f2bf(4 * urand());
  }
  unsigned long long dQ = dev_copy(Q, sizeof Q), dK = dev_copy(K, sizeof K),
                     dV = dev_copy(V, sizeof V), dO = dev_copy(NULL, sizeof O);
  CHECK(dQ && dK && dV && dO);
  unsigned sq = SQ, hq = HQ, hkv = HKV;
  void *args[] = {&dQ, &dK, &dV, &dO, &sq, &hq, &hkv};
  CHECK_EQ_INT(low->kernels[0].nparams, 7);
  ag_host_dim grid = {SQ / 64, HQ, 1}, block = {128, 1, 1};
  CHECK_EQ_INT(ag_host_launch(k, grid, block, (unsigned)low->kernels[0].smem_bytes, NULL, args),
               0);
  CHECK_EQ_INT(ag_host_sync(host), 0);
  CHECK_EQ_INT(p_dtoh(O, dO, sizeof O), 0);
  long bad = 0;
  for (int h = 0; h < HQ; h++)
    bad += attention_ref_d(Q, K, V, O, HQ, HKV, SKV, 0, h, D);
  CHECK_EQ_INT(bad, 0);
  printf("  attention: %ld of %d elements match\n", SQ * HQ * D - bad, SQ * HQ * D);
  /* wrong on purpose: O's dims swapped in pairs, as a V read transposed within 8-dim groups */
  for (int i = 0; i < SQ * HQ * D; i += 2) {
    uint16_t t = O[i];
    O[i] = O[i + 1];
    O[i + 1] = t;
  }
  CHECK(attention_ref_d(Q, K, V, O, HQ, HKV, SKV, 0, 0, D) > 0);
  p_free(dQ);
  p_free(dK);
  p_free(dV);
  p_free(dO);
out:
  ag_tile_lowered_free(low);
}

int main(int argc, char **argv) {
  if (ag_host_open(&host) == AG_HOST_ENODEV || driver()) {
    printf("test_gpu_tile_lower: skipped: no GPU (%s)\n", host ? ag_host_errmsg(host) : "");
    ag_host_close(host);
    return 77;
  }
  static const chk_case cases[] = {{"test_gemm_toy", test_gemm_toy},
                                   {"test_attention_toy", test_attention_toy}};
  int failed = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (argc > 1 && strcmp(argv[1], cases[i].name))
      continue;
    chk__cur_failed = chk__cur_skipped = 0;
    cases[i].fn();
    printf("%s %s\n", chk__cur_failed ? "FAIL" : "ok  ", cases[i].name);
    failed += chk__cur_failed;
  }
  ag_host_close(host);
  return failed ? 1 : 0;
}
