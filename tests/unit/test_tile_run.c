/*
 * test_tile_run.c — the host half of `argus run` (docs/run.md) without a
 * GPU: the evaluator of the lowering's C expressions, `--size` parsing, the
 * binding of sizes to a lowered kernel (every violated `assume` refused,
 * naming its line), the GEMM-shape test, and the CLI's answers to bad
 * input (exit 2 before any launch; 1 for a program that does not check).
 */
#include "argus/tile_run.h"
#include "check.h"

static uint64_t ev(const char *e, int bits, int *rc) {
  static const char *const names[] = {"M", "N", "sq"};
  static const uint64_t vals[] = {4096, 100, 64};
  uint64_t v = 0;
  char err[128];
  *rc = ag_tile_cexpr_eval(e, names, vals, 3, bits, &v, err, sizeof err);
  return v;
}

TEST(test_cexpr) {
  int rc;
  CHECK_EQ_U64(ev("M / 64", 32, &rc), 64);
  CHECK_EQ_INT(rc, 0);
  CHECK_EQ_U64(ev("M % 64 == 0u", 32, &rc), 1);
  CHECK_EQ_U64(ev("N % 64 == 0u", 32, &rc), 0);
  CHECK_EQ_U64(ev("1u + 2u * 3u", 32, &rc), 7);
  CHECK_EQ_U64(ev("(1u + 2u) * 3u", 32, &rc), 9);
  CHECK_EQ_U64(ev("10 - 2 - 3", 32, &rc), 5);          /* left-associative */
  CHECK_EQ_U64(ev("1 << 4 >> 2", 32, &rc), 4);
  CHECK_EQ_U64(ev("N < 128 && M >= 4096", 32, &rc), 1);
  CHECK_EQ_U64(ev("N <= 99 || sq != 64", 32, &rc), 0);
  CHECK_EQ_U64(ev("!(N == 100)", 32, &rc), 0);
  CHECK_EQ_U64(ev("N > 1 ? sq : M", 32, &rc), 64);
  CHECK_EQ_U64(ev("6 & 3 | 8 ^ 1", 32, &rc), 11);
  CHECK_EQ_U64(ev("0u - 1u", 32, &rc), 0xffffffffu);   /* unsigned 32-bit, as C */
  CHECK_EQ_U64(ev("M * M * M", 32, &rc), 0);           /* 2^36 wraps to 0 in 32 bits */
  CHECK_EQ_U64(ev("M * M * M", 64, &rc), (uint64_t)1 << 36);
  ev("M / (N - 100)", 32, &rc);
  CHECK_EQ_INT(rc, AG_ERANGE);
  ev("M + K", 32, &rc);
  CHECK_EQ_INT(rc, AG_EPARSE);
  ev("M +", 32, &rc);
  CHECK_EQ_INT(rc, AG_EPARSE);
  ev("(M", 32, &rc);
  CHECK_EQ_INT(rc, AG_EPARSE);
  ev("M M", 32, &rc);
  CHECK_EQ_INT(rc, AG_EPARSE);
}

static const char *src_file(const char *rel) {
  static char buf[1024];
  const char *s = getenv("ARGUS_SOURCE_DIR");
  snprintf(buf, sizeof buf, "%s/%s", s ? s : ".", rel);
  return buf;
}

/* Parses, splits the sizes, lowers and binds; the rc of the first failure. */
static int bind_file(const char *file, const char *spec, ag_str *msg, ag_tile_bound *b,
                     ag_tile_lowered **low, ag_tile_program **p) {
  ag_diags d;
  ag_diags_init(&d);
  ag_tile_run_sizes s;
  memset(&s, 0, sizeof s);
  *low = NULL;
  int rc = ag_tile_parse_file(src_file(file), &d, p);
  if (!rc)
    rc = ag_tile_run_sizes_parse(*p, NULL, spec, &d, &s);
  if (!rc) {
    ag_tile_lower_opts o;
    memset(&o, 0, sizeof o);
    o.defines = (const char *const *)s.defines;
    o.ndefines = s.ndefines;
    rc = ag_tile_lower(*p, &o, &d, low);
  }
  if (!rc)
    rc = ag_tile_run_bind(*p, &(*low)->kernels[0], &s, &d, b);
  ag_str_clear(msg);
  ag_diags_format(&d, msg);
  ag_tile_run_sizes_release(&s);
  ag_diags_release(&d);
  return rc;
}

TEST(test_bind_gemm) {
  ag_str msg = AG_STR_INIT;
  ag_tile_bound b;
  ag_tile_lowered *low = NULL;
  ag_tile_program *p = NULL;
  CHECK_EQ_INT(bind_file("examples/tile/gemm.tile", "M=256,N=128,K=512", &msg, &b, &low, &p), 0);
  CHECK_EQ_INT(b.grid[0], 4);
  CHECK_EQ_INT(b.grid[1], 2);
  CHECK_EQ_INT(b.grid[2], 1);
  CHECK_EQ_U64(b.bytes[0], 256 * 512 * 2); /* A(M, K) bf16, K from the const */
  CHECK_EQ_U64(b.bytes[1], 128 * 512 * 2);
  CHECK_EQ_U64(b.bytes[2], 256 * 128 * 4);
  CHECK_EQ_INT(b.size_vals[3], 256);
  CHECK_EQ_INT(b.size_vals[4], 128);
  int ia, ib, ic;
  CHECK_EQ_INT(ag_tile_run_gemm_shape(&low->kernels[0], &ia, &ib, &ic), 0);
  CHECK_EQ_INT(ia * 100 + ib * 10 + ic, 12);
  ag_tile_bound_release(&b);
  ag_tile_lowered_free(low);
  ag_tile_program_free(p);
  /* each assumption refused, naming its text and line */
  CHECK_EQ_INT(bind_file("examples/tile/gemm.tile", "M=100,N=128", &msg, &b, &low, &p),
               AG_EPARSE);
  CHECK_CONTAINS(ag_str_cstr(&msg), "gemm.tile:22:5: error: the sizes violate 'assume M % 64 == 0'");
  CHECK_CONTAINS(ag_str_cstr(&msg), "with M=100, N=128: not launched");
  ag_tile_lowered_free(low);
  ag_tile_program_free(p);
  CHECK_EQ_INT(bind_file("examples/tile/gemm.tile", "M=128,N=96", &msg, &b, &low, &p), AG_EPARSE);
  CHECK_CONTAINS(ag_str_cstr(&msg), "gemm.tile:23:5: error: the sizes violate 'assume N % 64 == 0'");
  ag_tile_lowered_free(low);
  ag_tile_program_free(p);
  CHECK_EQ_INT(bind_file("examples/tile/gemm.tile", "M=128", &msg, &b, &low, &p), AG_EPARSE);
  CHECK_CONTAINS(ag_str_cstr(&msg), "needs a value for its size 'N' (--size M=...,N=...)");
  ag_tile_lowered_free(low);
  ag_tile_program_free(p);
  CHECK_EQ_INT(bind_file("examples/tile/gemm.tile", "M=128,N=64,Q=2", &msg, &b, &low, &p),
               AG_EPARSE);
  CHECK_CONTAINS(ag_str_cstr(&msg), "'Q' is not a size or const parameter of kernel 'gemm' "
                                    "(its sizes: M, N; its const parameters: K)");
  ag_tile_lowered_free(low);
  ag_tile_program_free(p);
  ag_str_release(&msg);
}

TEST(test_bind_attention) {
  ag_str msg = AG_STR_INIT;
  ag_tile_bound b;
  ag_tile_lowered *low = NULL;
  ag_tile_program *p = NULL;
  CHECK_EQ_INT(bind_file("examples/tile/attention.tile", "sq=4096,hq=8,hkv=2,skv=4096,d=128",
                         &msg, &b, &low, &p), 0);
  CHECK_EQ_INT(b.grid[0], 64);
  CHECK_EQ_INT(b.grid[1], 8);
  CHECK_EQ_U64(b.bytes[1], 4096ull * 2 * 128 * 2); /* K(skv, hkv, d) */
  int ia, ib, ic;
  CHECK_EQ_INT(ag_tile_run_gemm_shape(&low->kernels[0], &ia, &ib, &ic), -1);
  ag_tile_bound_release(&b);
  ag_tile_lowered_free(low);
  ag_tile_program_free(p);
  CHECK_EQ_INT(bind_file("examples/tile/attention.tile", "sq=64,hq=5,hkv=1", &msg, &b, &low, &p),
               AG_EPARSE);
  CHECK_CONTAINS(ag_str_cstr(&msg), "attention.tile:30:5: error: the sizes violate "
                                    "'assume hq == hkv * gqa'");
  ag_tile_lowered_free(low);
  ag_tile_program_free(p);
  /* a grid of zero blocks: sq = 32 passes no assume here only if... it fails sq % 64 first */
  CHECK_EQ_INT(bind_file("examples/tile/attention.tile", "sq=32,hq=4,hkv=1", &msg, &b, &low, &p),
               AG_EPARSE);
  CHECK_CONTAINS(ag_str_cstr(&msg), "'assume sq % 64 == 0'");
  ag_tile_lowered_free(low);
  ag_tile_program_free(p);
  ag_str_release(&msg);
}

/* C(N, N) from A(M, K), B(N, K) is not C = A B^T: no GEMM reference for it. */
TEST(test_gemm_shape) {
  static const char *const texts[2] = {
      "@threads(64)\n@grid(M, N / 64)\ndef g(A: Tensor(M, K, bf16), B: Tensor(N, K, bf16), "
      "C: Tensor(M, N, f32), K: const = 64):\n    C[blockIdx.x, threadIdx.x] = 0.0\n",
      "@threads(64)\n@grid(M, N / 64)\ndef g(A: Tensor(M, K, bf16), B: Tensor(N, K, bf16), "
      "C: Tensor(N, N, f32), K: const = 64):\n    C[threadIdx.x, blockIdx.x] = 0.0\n"};
  for (int i = 0; i < 2; i++) {
    ag_diags d;
    ag_diags_init(&d);
    ag_tile_program *p = NULL;
    ag_tile_lowered *low = NULL;
    ag_tile_lower_opts o;
    memset(&o, 0, sizeof o);
    CHECK_EQ_INT(ag_tile_parse(texts[i], strlen(texts[i]), "g.tile", &d, &p), 0);
    CHECK_EQ_INT(p ? ag_tile_lower(p, &o, &d, &low) : -1, 0);
    int ia, ib, ic;
    if (low)
      CHECK_EQ_INT(ag_tile_run_gemm_shape(&low->kernels[0], &ia, &ib, &ic), i ? -1 : 0);
    ag_tile_lowered_free(low);
    ag_tile_program_free(p);
    ag_diags_release(&d);
  }
}

TEST(test_sizes_parse) {
  static const char *const bad[][2] = {
      {"M", "--size takes NAME=VALUE items, not 'M'"},
      {"=4", "--size takes NAME=VALUE items"},
      {"M=0", "size 'M' must be a positive integer below 2^32, not '0'"},
      {"M=-3", "not '-3'"},
      {"M=4294967296", "below 2^32"},
      {"M=12x", "not '12x'"},
      {"M=64,M=64", "size 'M' is given twice"},
      {"K=64,K=128", "size 'K' is given twice"},
      {"K=-1", "const 'K' must be an integer in 0 .. 2^32 - 1, not '-1'"},
  };
  ag_tile_program *p = NULL;
  ag_diags d;
  ag_diags_init(&d);
  CHECK_EQ_INT(ag_tile_parse_file(src_file("examples/tile/gemm.tile"), &d, &p), 0);
  for (size_t i = 0; p && i < sizeof bad / sizeof bad[0]; i++) {
    ag_tile_run_sizes s;
    ag_diags_release(&d);
    ag_diags_init(&d);
    CHECK_EQ_INT(ag_tile_run_sizes_parse(p, NULL, bad[i][0], &d, &s), AG_EPARSE);
    ag_str m = AG_STR_INIT;
    ag_diags_format(&d, &m);
    CHECK_CONTAINS(ag_str_cstr(&m), bad[i][1]);
    ag_str_release(&m);
  }
  ag_tile_run_sizes s;
  CHECK_EQ_INT(ag_tile_run_sizes_parse(p, "nope", "M=64", &d, &s), AG_EPARSE);
  CHECK_EQ_INT(ag_tile_run_sizes_parse(p, NULL, "M=64,K=256,N=128", &d, &s), 0);
  CHECK_EQ_INT(s.ndefines, 1);
  CHECK_EQ_STR(s.defines[0], "K=256");
  CHECK_EQ_INT(s.n, 2);
  CHECK_EQ_STR(s.names[1], "N");
  CHECK_EQ_U64(s.vals[1], 128);
  ag_tile_run_sizes_release(&s);
  /* a const may be 0 (a flag), a size not (above) */
  CHECK_EQ_INT(ag_tile_run_sizes_parse(p, NULL, "M=64,K=0,N=128", &d, &s), 0);
  CHECK_EQ_STR(s.defines[0], "K=0");
  ag_tile_run_sizes_release(&s);
  ag_tile_program_free(p);
  ag_diags_release(&d);
}

TEST(test_tolerance) {
  double a, r;
  ag_tile_run_tolerance("f32", &a, &r);
  CHECK(a > 0 && a <= 1e-3 && r <= 1e-3);
  ag_tile_run_tolerance("bf16", &a, &r);
  CHECK(r >= 1.0 / 128 && r <= 0.05); /* bf16 has 8 significant bits */
  ag_tile_run_tolerance("i32", &a, &r);
  CHECK(a == 0 && r == 0);
}

/* ------------------------------------------------------------------ CLI */
static int run(const char *const *argv, ag_str *out, ag_str *err) {
  ag_str_clear(out);
  ag_str_clear(err);
  ag_proc_opts o = {.argv = argv, .capture_out = out, .capture_err = err, .timeout_s = 120};
  ag_proc_result r;
  if (ag_proc_run(&o, &r) || !r.exited)
    return -1;
  return r.exit_code;
}
static const char *bin(void) {
  const char *b = getenv("ARGUS_BIN");
  return b ? b : "argus";
}
static const char *write_tmp(const char *name, const char *text) {
  static char buf[1024];
  const char *b = getenv("ARGUS_BUILD_DIR");
  snprintf(buf, sizeof buf, "%s/%s", b ? b : ".", name);
  ag_file_write_atomic(buf, text, strlen(text));
  return buf;
}

TEST(test_cli_bad_input) {
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  char gemm[1024];
  snprintf(gemm, sizeof gemm, "%s", src_file("examples/tile/gemm.tile"));
  const char *a1[] = {bin(), "run", gemm, "--size", "M=100,N=64", NULL};
  CHECK_EQ_INT(run(a1, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "gemm.tile:22:5: error: the sizes violate 'assume M % 64 == 0'");
  const char *a2[] = {bin(), "run", gemm, NULL};
  CHECK_EQ_INT(run(a2, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "needs a value for its size 'M'");
  const char *a3[] = {bin(), "run", gemm, "--size", "M=64,N=64", "--ref", "gpu", NULL};
  CHECK_EQ_INT(run(a3, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "--ref takes auto, cpu, cublas or interp, not 'gpu'");
  const char *a4[] = {bin(), "run", gemm, "--size", "M=64,N=64", "--samples", "0", NULL};
  CHECK_EQ_INT(run(a4, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "--samples takes an integer in 1..100000, not '0'");
  const char *a5[] = {bin(), "run", gemm, "--size", "M=64,N=64", "--timeout", "-1", NULL};
  CHECK_EQ_INT(run(a5, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "--timeout takes seconds");
  const char *a6[] = {bin(), "run", gemm, "--size", "M=64,N=64", "--flops", "2*M*Z", NULL};
  CHECK_EQ_INT(run(a6, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "--flops: unknown name 'Z'");
  const char *a9[] = {bin(), "run", gemm, "--size", "M=64,N=64", "--amplitude", "0", NULL};
  CHECK_EQ_INT(run(a9, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "--amplitude takes a number in (0, 1e6], not '0'");
  const char *a7[] = {bin(), "run", "/nonexistent.tile", "--size", "M=64", NULL};
  CHECK_EQ_INT(run(a7, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "nonexistent.tile");
  const char *a8[] = {bin(), "run", gemm, "--kernel", "nope", "--size", "M=64", NULL};
  CHECK_EQ_INT(run(a8, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "no kernel 'nope' in the file");
  ag_str_release(&out);
  ag_str_release(&err);
}

/* A program whose assertion is violated is refused, naming the assertion;
 * --unchecked lets it through to the launch (which needs a GPU). */
TEST(test_cli_unchecked) {
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  const char *f = write_tmp("run_bad.tile", "@threads(32)\n"
                                            "@grid(N / 32)\n"
                                            "def copy(X: Tensor(N, f32), Y: Tensor(N, f32)):\n"
                                            "    assume N % 32 == 0\n"
                                            "    T_X = X[i] -> (i,)\n"
                                            "    t = blockIdx.x * 32 + threadIdx.x\n"
                                            "    v = X[t]\n"
                                            "    assert tag(v) == (t + 1,)\n"
                                            "    Y[t] = v\n");
  const char *a[] = {bin(), "run", f, "--size", "N=64", NULL};
  CHECK_EQ_INT(run(a, &out, &err), 1);
  CHECK_CONTAINS(ag_str_cstr(&err), "does not check");
  CHECK_CONTAINS(ag_str_cstr(&err), "run_bad.tile:8: 'assert tag(v) == (t + 1,)' is violated");
  CHECK_CONTAINS(ag_str_cstr(&err), "--unchecked runs it anyway");
  /* bad sizes are refused before the (slow) checker */
  const char *b[] = {bin(), "run", f, "--size", "N=33", NULL};
  CHECK_EQ_INT(run(b, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "run_bad.tile:4:5: error: the sizes violate");
  const char *c[] = {bin(), "run", f, "--size", "N=64", "--unchecked", NULL};
  int rc = run(c, &out, &err);
  CHECK(rc == 0 || rc == 1);
  CHECK(!strstr(ag_str_cstr(&err), "does not check"));
  ag_str_release(&out);
  ag_str_release(&err);
}

RUN_TESTS({"test_cexpr", test_cexpr}, {"test_bind_gemm", test_bind_gemm},
          {"test_bind_attention", test_bind_attention}, {"test_sizes_parse", test_sizes_parse},
          {"test_gemm_shape", test_gemm_shape},
          {"test_tolerance", test_tolerance}, {"test_cli_bad_input", test_cli_bad_input},
          {"test_cli_unchecked", test_cli_unchecked})
