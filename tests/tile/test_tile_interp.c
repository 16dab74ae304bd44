/*
 * test_tile_interp.c — the value reference (src/tile/run/interp.c) on the
 * CPU: gemm.tile against C = A B^T in double, a naive GEMM written in the
 * DSL and the same with a planted bug (which must mismatch, at row 5),
 * attention.tile against true attention in double (attention_ref.h, the
 * same reference the GPU kernel is compared with), at head dims 64 and 128,
 * an intrinsic's registers in the operand's byte order, and the errors for
 * what it does not model and for an access out of bounds.
 */
#include "argus/tile_run.h"
#include "check.h"

#include "attention_ref.h"

typedef struct prog {
  ag_tile_program *p;
  ag_tile_lowered *low;
  ag_tile_run_sizes s;
  ag_tile_bound b;
  void *t[8];
} prog;

static uint64_t seed = 99;
static float urand(void) {
  seed = seed * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((seed >> 40) / 16777216.0 - 0.5);
}

/* Parses text (or the file path), lowers, binds and fills every tensor. */
static int setup(prog *g, const char *path, const char *text, const char *spec, float amp) {
  ag_diags d;
  ag_diags_init(&d);
  memset(g, 0, sizeof *g);
  int rc = text ? ag_tile_parse(text, strlen(text), "t.tile", &d, &g->p)
                : ag_tile_parse_file(path, &d, &g->p);
  if (!rc)
    rc = ag_tile_run_sizes_parse(g->p, NULL, spec, &d, &g->s);
  if (!rc) {
    ag_tile_lower_opts o;
    memset(&o, 0, sizeof o);
    o.defines = (const char *const *)g->s.defines;
    o.ndefines = g->s.ndefines;
    rc = ag_tile_lower(g->p, &o, &d, &g->low);
  }
  if (!rc)
    rc = ag_tile_run_bind(g->p, &g->low->kernels[0], &g->s, &d, &g->b);
  if (rc) {
    ag_str m = AG_STR_INIT;
    ag_diags_format(&d, &m);
    printf("  setup: %s\n", ag_str_cstr(&m));
    ag_str_release(&m);
  }
  ag_diags_release(&d);
  for (int i = 0; !rc && i < g->low->kernels[0].nparams; i++) {
    const ag_tile_lparam *prm = &g->low->kernels[0].params[i];
    if (prm->kind != AG_TILE_PARAM_TENSOR)
      continue;
    g->t[i] = calloc(1, g->b.bytes[i]);
    if (!strcmp(prm->dtype, "bf16"))
      for (uint64_t e = 0; e < g->b.bytes[i] / 2; e++)
        ((uint16_t *)g->t[i])[e] = f2bf(urand() * 2 * amp);
    else if (!strcmp(prm->dtype, "f32"))
      for (uint64_t e = 0; e < g->b.bytes[i] / 4; e++)
        ((float *)g->t[i])[e] = urand();
  }
  return rc;
}
static int interp(prog *g, char *err, size_t n) {
  return ag_tile_interp(g->p, &g->b, (const char *const *)g->s.defines, g->s.ndefines, g->t, err,
                        n);
}
static void release(prog *g) {
  for (int i = 0; i < 8; i++)
    free(g->t[i]);
  ag_tile_bound_release(&g->b);
  ag_tile_run_sizes_release(&g->s);
  ag_tile_lowered_free(g->low);
  ag_tile_program_free(g->p);
}
static const char *ex(const char *name) {
  static char buf[1024];
  const char *s = getenv("ARGUS_SOURCE_DIR");
  snprintf(buf, sizeof buf, "%s/examples/tile/%s", s ? s : ".", name);
  return buf;
}

/* Mismatches of C (f32, M x N) against A B^T; the first one's row in *row. */
static long gemm_bad(const prog *g, int M, int N, int K, int *row) {
  const uint16_t *A = g->t[0], *B = g->t[1];
  const float *C = g->t[2];
  long bad = 0;
  *row = -1;
  for (int m = 0; m < M; m++)
    for (int n = 0; n < N; n++) {
      double s = 0;
      for (int k = 0; k < K; k++)
        s += (double)bf2f(A[m * K + k]) * bf2f(B[n * K + k]);
      if (!(fabs(C[m * N + n] - s) <= 1e-3 + 1e-3 * fabs(s))) {
        if (!bad++)
          *row = m;
      }
    }
  return bad;
}

TEST(test_gemm_tile) {
  prog g;
  char err[512];
  CHECK_EQ_INT(setup(&g, ex("gemm.tile"), NULL, "M=128,N=64,K=64", 0.5f), 0);
  CHECK_EQ_INT(interp(&g, err, sizeof err), 0);
  if (err[0])
    printf("  %s\n", err);
  int row;
  CHECK_EQ_INT(gemm_bad(&g, 128, 64, 64, &row), 0);
  /* the comparison fails on a wrong result: two rows swapped */
  float *C = g.t[2];
  for (int n = 0; n < 64; n++) {
    float t = C[n];
    C[n] = C[64 + n];
    C[64 + n] = t;
  }
  CHECK(gemm_bad(&g, 128, 64, 64, &row) > 0);
  release(&g);
}

static const char naive[] = "@threads(64)\n"
                            "@grid(M, N / 64)\n"
                            "def naive(A: Tensor(M, K, bf16), B: Tensor(N, K, bf16), "
                            "C: Tensor(M, N, f32), K: const = 64):\n"
                            "    assume N % 64 == 0\n"
                            "    m = blockIdx.x\n"
                            "    n = blockIdx.y * 64 + threadIdx.x\n"
                            "    s = cvt(A[m, 0], f32) * cvt(B[n, 0], f32)\n"
                            "    for k in range(1, K):\n"
                            "        s = s + cvt(A[m, k], f32) * cvt(B[n, k], f32)\n"
                            "    if m == 5:\n"
                            "        s = s * 2.0\n"
                            "    C[m, n] = s\n";

TEST(test_planted_bug) {
  prog g;
  char err[512];
  CHECK_EQ_INT(setup(&g, NULL, naive, "M=8,N=64", 0.5f), 0);
  CHECK_EQ_INT(interp(&g, err, sizeof err), 0);
  int row;
  CHECK_EQ_INT(gemm_bad(&g, 8, 64, 64, &row), 64); /* row 5, doubled */
  CHECK_EQ_INT(row, 5);
  release(&g);
}

/* attention.tile is true attention: the value reference (what the program
 * computes, lane by lane, with its shfl_xor row max and row sum and its
 * rescaled accumulator) against softmax(Q K^T / sqrt(d)) V in double, at
 * head dims 64 and 128, over 4 kv tiles (the running max grows between
 * tiles and the accumulator is rescaled), with 2 kv heads (gqa 4) and
 * inputs in [-2, 2) (scores spread enough that the softmax is far from
 * flat). The comparison can fail: a result off by 1 in one element, or
 * every element 3 % off (a row sum that misses a term), is caught. */
static void attention_true(int d) {
  prog g;
  char err[512], spec[96];
  snprintf(spec, sizeof spec, "sq=64,hq=8,hkv=2,skv=128,d=%d", d);
  CHECK_EQ_INT(setup(&g, ex("attention.tile"), NULL, spec, 2.0f), 0);
  CHECK_EQ_INT(interp(&g, err, sizeof err), 0);
  if (err[0])
    printf("  %s\n", err);
  long bad = 0;
  for (int h = 0; h < 8; h++)
    bad += attention_ref_d(g.t[0], g.t[1], g.t[2], g.t[3], 8, 2, 128, 0, h, d);
  CHECK_EQ_INT(bad, 0);
  printf("  attention.tile d=%d (sq 64, 8 heads, skv 128): equals softmax(QK^T/sqrt(d))V\n", d);
  uint16_t *O = g.t[3];
  long e1 = (0 * 8 + 5) * (long)d + d - 3; /* row 0, head 5, dim d - 3 */
  float keep = bf2f(O[e1]);
  O[e1] = f2bf(keep + 1.0f);
  CHECK(attention_ref_d(g.t[0], g.t[1], g.t[2], g.t[3], 8, 2, 128, 0, 5, d) > 0);
  O[e1] = f2bf(keep);
  for (long e = 0; e < 64L * 8 * d; e++)
    O[e] = f2bf(bf2f(O[e]) * 1.03f);
  CHECK(attention_ref_d(g.t[0], g.t[1], g.t[2], g.t[3], 8, 2, 128, 0, 2, d) > 0);
  release(&g);
}
TEST(test_attention_true_d64) { attention_true(64); }
TEST(test_attention_d128) { attention_true(128); }

/* attention_hopper.tile (TMA ring, producer and consumer warpgroups run as
 * cooperating tasks, wgmma with P in registers and V^T MN-major) is true
 * attention too, causal and not, at head dims 64 and 128: 2 query blocks
 * (causal: the second sees both key tiles, the first one, masked on the
 * diagonal) over 2 key tiles of 128, 2 kv heads (gqa 4), inputs in [-2, 2).
 * The same comparison fails for a result off in one element and for the
 * non-causal result compared as causal. */
static void attention_hopper(const char *file, int d, int causal) {
  prog g;
  char err[512], spec[128];
  snprintf(spec, sizeof spec, "sq=256,hq=8,hkv=2,skv=256,d=%d,causal=%d", d, causal);
  CHECK_EQ_INT(setup(&g, ex(file), NULL, spec, 2.0f), 0);
  CHECK_EQ_INT(interp(&g, err, sizeof err), 0);
  if (err[0])
    printf("  %s\n", err);
  long bad = 0;
  for (int qb = 0; qb < 4; qb++)
    for (int h = 0; h < 8; h += 3)
      bad += attention_ref_dc(g.t[0], g.t[1], g.t[2], g.t[3], 8, 2, 256, qb, h, d, causal);
  CHECK_EQ_INT(bad, 0);
  printf("  %s d=%d causal=%d (sq = skv = 256, 8 heads): equals softmax(QK^T/sqrt(d))V\n",
         file, d, causal);
  /* the other masking is far off (block 1's rows see keys 64..255 or not) */
  CHECK(attention_ref_dc(g.t[0], g.t[1], g.t[2], g.t[3], 8, 2, 256, 1, 4, d, !causal) > 0);
  uint16_t *O = g.t[3];
  long e1 = ((long)70 * 8 + 5) * d + d - 3; /* row 70, head 5, dim d - 3 */
  O[e1] = f2bf(bf2f(O[e1]) + 1.0f);
  CHECK(attention_ref_dc(g.t[0], g.t[1], g.t[2], g.t[3], 8, 2, 256, 1, 5, d, causal) > 0);
  release(&g);
}
TEST(test_attention_hopper_d64) { attention_hopper("attention_hopper.tile", 64, 0); }
TEST(test_attention_hopper_d128) { attention_hopper("attention_hopper.tile", 128, 0); }
TEST(test_attention_hopper_causal_d64) { attention_hopper("attention_hopper.tile", 64, 1); }
TEST(test_attention_hopper_causal_d128) { attention_hopper("attention_hopper.tile", 128, 1); }
/* the pipelined variant (softmax overlapped with P V) */
TEST(test_attention_hopper_pipe) {
  for (int c = 0; c < 4; c++)
    attention_hopper("attention_hopper_pipe.tile", c % 2 ? 128 : 64, c / 2);
}

TEST(test_attention_tile) {
  prog g;
  char err[512];
  CHECK_EQ_INT(setup(&g, ex("attention.tile"), NULL, "sq=64,hq=4,hkv=1", 0.5f), 0);
  CHECK_EQ_INT(interp(&g, err, sizeof err), 0);
  if (err[0])
    printf("  %s\n", err);
  long bad = 0;
  for (int h = 0; h < 4; h++)
    bad += attention_ref(g.t[0], g.t[1], g.t[2], g.t[3], 4, 1, 64, 0, h);
  CHECK_EQ_INT(bad, 0);
  /* ag_tile_run_compare, as argus run uses it: every tensor, the first wrong
   * element's coordinates, equal infinities equal */
  void *want[8] = {0};
  for (int i = 0; i < 4; i++) {
    want[i] = malloc(g.b.bytes[i]);
    memcpy(want[i], g.t[i], g.b.bytes[i]);
  }
  ag_tile_exec_result r;
  memset(&r, 0, sizeof r);
  ag_tile_run_compare(&g.b, g.t, want, &r);
  CHECK_EQ_U64(r.nbad, 0);
  CHECK_EQ_U64(r.nelems, 4 * 64 * 64 * 2 + 2 * 64 * 64);
  uint16_t *O = g.t[3], *W = want[3];
  O[(1 * 4 + 2) * 64 + 3] = f2bf(bf2f(O[(1 * 4 + 2) * 64 + 3]) + 1.0f);
  O[(2 * 4 + 1) * 64 + 9] = W[(2 * 4 + 1) * 64 + 9] = f2bf(INFINITY);
  ag_tile_run_compare(&g.b, g.t, want, &r);
  CHECK_EQ_U64(r.nbad, 1);
  CHECK_EQ_INT(r.compared_param, 3);
  CHECK_EQ_INT(r.bad_rank, 3);
  CHECK(r.first_bad[0] == 1 && r.first_bad[1] == 2 && r.first_bad[2] == 3);
  CHECK(fabs(r.got - r.want - 1.0) < 0.02);
  W[(1 * 4 + 2) * 64 + 3] = O[(1 * 4 + 2) * 64 + 3];
  W[0] = f2bf(bf2f(O[0]) * 1.01f); /* within bf16's tolerance */
  ag_tile_run_compare(&g.b, g.t, want, &r);
  CHECK_EQ_U64(r.nbad, 0);
  for (int i = 0; i < 4; i++)
    free(want[i]);
  O[7] = f2bf(bf2f(O[7]) + 1.0f);
  CHECK(attention_ref(g.t[0], g.t[1], g.t[2], g.t[3], 4, 1, 64, 0, 0) > 0);
  release(&g);
}

/* cvt to bf16 rounds to nearest even, as the lowering's ag_f32_bf16 */
/* Unary minus (AG_OP_NEG) on a float constant, on data and on an integer: the
 * value reference dropped it (it tested AG_OP_SUB), found by the property
 * test on the GPU (test_gpu_tile_prop, seeds 1, 4, 37, 54). */
TEST(test_unary_minus) {
  static const char text[] = "@threads(32)\n"
                             "@grid(N / 32)\n"
                             "def neg(X: Tensor(N, f32), Y: Tensor(N, f32)):\n"
                             "    t = blockIdx.x * 32 + threadIdx.x\n"
                             "    u = -t\n"
                             "    Y[t] = X[t] * -0.5 + -X[(u + t + 1) % N]\n";
  prog g;
  char err[512];
  CHECK_EQ_INT(setup(&g, NULL, text, "N=64", 0.5f), 0);
  float x[64];
  memcpy(x, g.t[0], sizeof x);
  CHECK_EQ_INT(interp(&g, err, sizeof err), 0);
  const float *Y = g.t[1];
  for (int i = 0; i < 64; i++)
    if (Y[i] != x[i] * -0.5f - x[1]) {
      fprintf(stderr, "Y[%d] = %g, expected %g\n", i, Y[i], x[i] * -0.5f - x[1]);
      CHECK(0);
      break;
    }
  release(&g);
}

TEST(test_cvt_rounding) {
  prog g;
  char err[512];
  CHECK_EQ_INT(setup(&g, NULL,
                     "@threads(32)\ndef k(X: Tensor(N, f32), Y: Tensor(N, bf16)):\n"
                     "    Y[threadIdx.x] = cvt(X[threadIdx.x], bf16)\n",
                     "N=32", 0.5f), 0);
  float *X = g.t[0];
  X[0] = 1.0f + 3.0f / 512;  /* above the halfway point: up to 1 + 2^-7 */
  X[1] = 1.0f + 1.0f / 256;  /* halfway: to even, 1 */
  X[2] = 1.0f + 3.0f / 256;  /* halfway: to even, 1 + 2^-6 */
  CHECK_EQ_INT(interp(&g, err, sizeof err), 0);
  uint16_t *Y = g.t[1];
  CHECK(bf2f(Y[0]) == 1.0f + 1.0f / 128);
  CHECK(bf2f(Y[1]) == 1.0f);
  CHECK(bf2f(Y[2]) == 1.0f + 1.0f / 64);
  release(&g);
}

/* a name assigned in a branch keeps its old value in the threads that did
 * not take it (integers and data) */
TEST(test_masked_names) {
  prog g;
  char err[512];
  CHECK_EQ_INT(setup(&g, NULL,
                     "@threads(32)\ndef k(X: Tensor(N, f32), Y: Tensor(N, f32), Z: Tensor(N, f32)):\n"
                     "    x = threadIdx.x\n    v = X[threadIdx.x]\n"
                     "    if threadIdx.x < 16:\n        x = 7\n        v = v * 2.0\n"
                     "    Y[threadIdx.x] = X[x]\n    Z[threadIdx.x] = v\n",
                     "N=32", 0.5f), 0);
  CHECK_EQ_INT(interp(&g, err, sizeof err), 0);
  if (err[0])
    printf("  %s\n", err);
  const float *X = g.t[0], *Y = g.t[1], *Z = g.t[2];
  for (int t = 0; t < 32; t++) {
    CHECK(Y[t] == X[t < 16 ? 7 : t]);
    CHECK(Z[t] == (t < 16 ? X[t] * 2.0f : X[t]));
  }
  release(&g);
}

/* An intrinsic's register j is bytes 4j..4j+3 of its operand, whatever the
 * operand's element type (as the lowering passes them): an ldmatrix into 8
 * bf16 equals one into 4 u32, an mma into an f32 view of a u32 tile equals
 * one into an f32 tile. */
TEST(test_register_operands) {
  static const char text[] =
      "@threads(32)\ndef k(S: Tensor(256, bf16), A: Tensor(128, u32), B: Tensor(128, u32),\n"
      "      C: Tensor(128, f32), D: Tensor(128, f32)):\n"
      "    t = threadIdx.x\n    s = make_shared((32, 8), bf16)\n    for j in range(8):\n"
      "        s[t, j] = S[t * 8 + j]\n    syncthreads()\n"
      "    ru = make_local((4,), u32)\n    rb = make_local((8,), bf16)\n"
      "    ldmatrix_x4(ru, s[t, 0])\n    ldmatrix_x4(rb, s[t, 0])\n"
      "    rv = rb.view((4,), u32)\n    bb = make_local((4,), bf16)\n    for j in range(4):\n"
      "        A[t * 4 + j] = ru[j]\n        B[t * 4 + j] = rv[j]\n        bb[j] = S[t + j]\n"
      "    acc = make_local((4,), f32)\n    fill(acc, 0.5)\n    cu = make_local((4,), u32)\n"
      "    cf = cu.view((4,), f32)\n    fill(cf, 0.5)\n"
      "    mma_m16n8k16(acc, rb, bb, acc)\n    mma_m16n8k16(cf, rb, bb, cf)\n"
      "    for j in range(4):\n        C[t * 4 + j] = acc[j]\n        D[t * 4 + j] = cf[j]\n";
  prog g;
  char err[512] = "";
  CHECK_EQ_INT(setup(&g, NULL, text, NULL, 0.5f), 0);
  int rc = g.b.k ? interp(&g, err, sizeof err) : -1;
  if (rc)
    printf("  %s\n", err);
  CHECK_EQ_INT(rc, 0);
  if (!rc) {
    const uint32_t *A = g.t[1], *B = g.t[2];
    const float *C = g.t[3], *D = g.t[4];
    int moved = 0, summed = 0;
    for (int i = 0; i < 128; i++) {
      CHECK_EQ_U64(A[i], B[i]);
      CHECK(C[i] == D[i]);
      moved += A[i] != 0;
      summed += C[i] != 0.5f;
    }
    CHECK(moved > 64 && summed > 64); /* the copies and the products did something */
  }
  release(&g);
}

TEST(test_errors) {
  prog g;
  char err[512];
  CHECK_EQ_INT(setup(&g, NULL,
                     "@threads(32)\n@grid(N / 32)\ndef oob(X: Tensor(N, f32), Y: Tensor(N, f32)):\n"
                     "    t = blockIdx.x * 32 + threadIdx.x\n    Y[t * 2] = X[t]\n",
                     "N=64", 0.5f), 0);
  CHECK_EQ_INT(interp(&g, err, sizeof err), AG_EUNSUPPORTED);
  CHECK_CONTAINS(err, "t.tile:5:");
  CHECK_CONTAINS(err, ": index 64 of mode 0 is outside [0, 64) in thread 0 of block (1, 0, 0)");
  release(&g);
  CHECK_EQ_INT(setup(&g, NULL,
                     "@threads(32)\ndef k(X: Tensor(N, u32), Y: Tensor(N, u32)):\n"
                     "    Y[threadIdx.x] = X[threadIdx.x] + X[threadIdx.x]\n",
                     "N=32", 0.5f), 0);
  int rc = g.b.k ? interp(&g, err, sizeof err) : -1;
  CHECK_EQ_INT(rc, AG_EUNSUPPORTED);
  CHECK_CONTAINS(err, "t.tile:3:");
  CHECK_CONTAINS(err, "arithmetic on u32 data is not interpreted");
  release(&g);
}

RUN_TESTS({"test_gemm_tile", test_gemm_tile}, {"test_planted_bug", test_planted_bug},
          {"test_attention_tile", test_attention_tile},
          {"test_attention_hopper_d64", test_attention_hopper_d64},
          {"test_attention_hopper_d128", test_attention_hopper_d128},
          {"test_attention_hopper_causal_d64", test_attention_hopper_causal_d64},
          {"test_attention_hopper_causal_d128", test_attention_hopper_causal_d128},
          {"test_attention_hopper_pipe", test_attention_hopper_pipe},
          {"test_attention_d128", test_attention_d128},
          {"test_attention_true_d64", test_attention_true_d64}, {"test_cvt_rounding", test_cvt_rounding},
          {"test_unary_minus", test_unary_minus},
          {"test_masked_names", test_masked_names},
          {"test_register_operands", test_register_operands},
          {"test_errors", test_errors})
