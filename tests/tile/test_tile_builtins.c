/*
 * test_tile_builtins.c — every row of the builtin table (src/tile/tile_builtin.h)
 * in each of its three users. For each builtin and each floating-point type
 * (f32, f64, bf16, f16) a kernel of one call checks clean (the checker),
 * lowers (the lowering) and runs in the value interpreter, whose result for
 * each of 32 threads must equal a reference computed here in C; the rows
 * that fold two integers (max, min) do so in an index, and the rows with
 * integer semantics check and lower on i32 and u32 data. All kernels go
 * through NVRTC in one module (skipped without NVRTC). A row this test has
 * no reference for fails it: a new builtin needs one here. The comparison
 * can fail: each builtin's result differs from another builtin's reference.
 * The warp exchange (shfl_xor) also: on integer data of every width in two
 * warps, its tags in the checker, and what is refused where (a split warp,
 * a mask out of range or not the same in every lane, a partial warp).
 */
#include "argus/tile_check.h"
#include "argus/tile_lower.h"
#include "argus/tile_run.h"
#include "check.h"

#include <math.h>

#include "../../src/tile/run/run_int.h"
#define TILE_PIPE_FILE "builtins.tile"
#include "tile_pipe.h"

#define NT 32 /* threads, elements per tensor */

static const ag__dt floats[] = {DT_F32, DT_F64, DT_BF16, DT_F16};

/* Inputs: multiples of 1/8 in [-2, 2), exact in every float type; X < 0 in
 * half the threads (sqrt of them is NaN in both the interpreter and here). */
static double in_x(int i) { return ((i * 7) % 32 - 16) / 8.0; }
static double in_y(int i) { return ((i * 11 + 5) % 32 - 16) / 8.0; }

/* The value of v in type dt (round to nearest even). */
static double round_to(ag__dt dt, double v) {
  switch (dt) {
  case DT_F64: return v;
  case DT_F32: return (float)v;
  case DT_BF16: return ag__bf2f(ag__f2bf((float)v));
  default: return ag__h2f(ag__f2h((float)v));
  }
}

/* The reference of an element-wise builtin: f64 in double, the other types
 * in float, as the lowered CUDA C computes them; *known = 0 for a name this
 * test does not know. */
static double ref1(const char *name, ag__dt dt, double x, double y, int *known) {
  int d = dt == DT_F64;
  float fx = (float)x, fy = (float)y;
  *known = 1;
  if (!strcmp(name, "exp2"))
    return round_to(dt, d ? exp2(x) : exp2f(fx));
  if (!strcmp(name, "exp"))
    return round_to(dt, d ? exp(x) : expf(fx));
  if (!strcmp(name, "sqrt"))
    return round_to(dt, d ? sqrt(x) : sqrtf(fx));
  if (!strcmp(name, "rcp"))
    return round_to(dt, d ? 1.0 / x : 1.0f / fx);
  if (!strcmp(name, "abs"))
    return round_to(dt, d ? fabs(x) : fabsf(fx));
  if (!strcmp(name, "max"))
    return round_to(dt, d ? fmax(x, y) : fmaxf(fx, fy));
  if (!strcmp(name, "min"))
    return round_to(dt, d ? fmin(x, y) : fminf(fx, fy));
  if (!strcmp(name, "add")) /* reduce_sum's step */
    return round_to(dt, d ? x + y : (double)(fx + fy));
  *known = 0;
  return 0;
}
/* What the lowered CUDA C of a builtin (a reduction: of its step) must
 * contain for type dt, written here independently of the table; NULL for a
 * name this test does not know. */
static const char *cuda_want(const char *name, ag__dt dt) {
  static const char *const w[][3] = {
      {"exp2", "exp2f(", "exp2("},          {"exp", "expf(", "exp("},
      {"sqrt", "sqrtf(", "sqrt("},          {"rcp", "(1.0f / ", "(1.0 / "},
      {"abs", "fabsf(", "fabs("},           {"max", "fmaxf(", "fmax("},
      {"min", "fminf(", "fmin("},           {"reduce_max", "fmaxf(", "fmax("},
      {"reduce_min", "fminf(", "fmin("},    {"reduce_sum", " + ", " + "},
      {"shfl_xor", "__shfl_xor_sync(0xffffffffu, ", "__shfl_xor_sync(0xffffffffu, "},
  };
  for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
    if (!strcmp(w[i][0], name))
      return w[i][dt == DT_F64 ? 2 : 1];
  return NULL;
}

/* A reduction's reference over r[0..3], in index order, rounded after each step. */
static double ref_reduce(const char *name, ag__dt dt, const double *r, int *known) {
  const char *step = !strcmp(name, "reduce_max")   ? "max"
                     : !strcmp(name, "reduce_min") ? "min"
                     : !strcmp(name, "reduce_sum") ? "add" : NULL;
  *known = step != NULL;
  double acc = r[0];
  for (int i = 1; step && i < 4; i++)
    acc = ref1(step, dt, acc, r[i], known);
  return acc;
}
/* The register tile the reductions run over, for thread t. */
static void reduce_in(int t, double *r) {
  r[0] = in_x(t);
  r[1] = in_y(t);
  r[2] = in_x((t + 1) % NT);
  r[3] = in_y((t + 3) % NT);
}

/* The expected element of thread t for kernel (row b, type dt); *known = 0
 * when this test has no reference for the row. */
#define LANE_MASK 5 /* the lane mask of the warp-exchange kernels */
static double expected(const ag__builtin *b, ag__dt dt, int t, int *known) {
  if (b->kind == AG__BI_LANE) { /* another lane's input, bit for bit */
    *known = !strcmp(b->name, "shfl_xor");
    return round_to(dt, in_x(t ^ LANE_MASK));
  }
  if (b->kind == AG__BI_REDUCE) {
    double r[4];
    reduce_in(t, r);
    return ref_reduce(b->name, dt, r, known);
  }
  return ref1(b->name, dt, in_x(t), in_y(t), known);
}

/* The kernel of row b on type dt, appended to out; its name in name. */
static void kernel_text(ag_str *out, const ag__builtin *b, ag__dt dt, char *name, size_t n) {
  const char *tn = ag__dt_name(dt);
  snprintf(name, n, "k_%s_%s", b->name, tn);
  ag_str_printf(out, "@threads(%d)\ndef %s(X: Tensor(%d, %s), Y: Tensor(%d, %s), "
                     "Z: Tensor(%d, %s)):\n    t = threadIdx.x\n",
                NT, name, NT, tn, NT, tn, NT, tn);
  if (b->kind == AG__BI_REDUCE)
    ag_str_printf(out, "    r = make_local((4,), %s)\n    r[0] = X[t]\n    r[1] = Y[t]\n"
                       "    r[2] = X[(t + 1) %% %d]\n    r[3] = Y[(t + 3) %% %d]\n"
                       "    Z[t] = %s(r)\n",
                  tn, NT, NT, b->name);
  else if (b->kind == AG__BI_LANE)
    ag_str_printf(out, "    Z[t] = %s(X[t], %d)\n", b->name, LANE_MASK);
  else if (b->arity == 1)
    ag_str_printf(out, "    Z[t] = %s(X[t])\n", b->name);
  else
    ag_str_printf(out, "    Z[t] = %s(X[t], Y[t])\n", b->name);
}

static void put(ag__dt dt, void *buf, int i, double v) {
  switch (dt) {
  case DT_F64: ((double *)buf)[i] = v; break;
  case DT_F32: ((float *)buf)[i] = (float)v; break;
  case DT_BF16: ((uint16_t *)buf)[i] = ag__f2bf((float)v); break;
  default: ((uint16_t *)buf)[i] = ag__f2h((float)v); break;
  }
}
static double get(ag__dt dt, const void *buf, int i) {
  switch (dt) {
  case DT_F64: return ((const double *)buf)[i];
  case DT_F32: return ((const float *)buf)[i];
  case DT_BF16: return ag__bf2f(((const uint16_t *)buf)[i]);
  default: return ag__h2f(((const uint16_t *)buf)[i]);
  }
}
static int same(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

/* Parses text ("t.tile") into *p and checks it into *r; the first nonzero code. */
static int parse_check(const char *text, ag_diags *d, ag_tile_program **p, ag_tile_report **r) {
  *p = NULL;
  *r = NULL;
  int rc = ag_tile_parse(text, strlen(text), "t.tile", d, p);
  return rc ? rc : ag_tile_check(*p, NULL, d, r);
}


/* The CUDA C of kernel name in cuda (owned; "" when absent). */
static char *section(const char *cuda, const char *name) {
  char key[96];
  snprintf(key, sizeof key, " %s(", name);
  const char *a = strstr(cuda, key);
  const char *b = a ? strstr(a, "extern \"C\"") : NULL;
  size_t n = !a ? 0 : b ? (size_t)(b - a) : strlen(a);
  char *s = malloc(n + 1);
  if (s) {
    memcpy(s, a ? a : "", n);
    s[n] = 0;
  }
  return s;
}

/* cvt from a float to an integer type: truncation toward zero, saturated
 * to the type's range, NaN to 0 (PTX cvt.rzi), written here with each
 * type's limits. The kernel f2i_<type> converts X (f32) into I and D (f64)
 * into J. */
static const ag__dt ints[] = {DT_I8, DT_U8, DT_I16, DT_U16, DT_I32, DT_U32, DT_I64, DT_U64};
static uint64_t want_f2i(ag__dt dt, double f) {
  static const struct {
    ag__dt dt;
    int64_t lo;
    uint64_t hi;
  } lim[] = {{DT_I8, INT8_MIN, INT8_MAX},     {DT_U8, 0, UINT8_MAX},
             {DT_I16, INT16_MIN, INT16_MAX},  {DT_U16, 0, UINT16_MAX},
             {DT_I32, INT32_MIN, INT32_MAX},  {DT_U32, 0, UINT32_MAX},
             {DT_I64, INT64_MIN, INT64_MAX},  {DT_U64, 0, UINT64_MAX}};
  size_t i = 0;
  while (lim[i].dt != dt)
    i++;
  int sz = ag__dt_size(dt);
  uint64_t mask = sz == 8 ? UINT64_MAX : ((uint64_t)1 << (8 * sz)) - 1;
  if (isnan(f))
    return 0;
  if (f <= (double)lim[i].lo)
    return (uint64_t)lim[i].lo & mask;
  if (f >= (double)lim[i].hi + 1.0) /* the maximum + 1: a power of two */
    return lim[i].hi;
  return (lim[i].lo < 0 ? (uint64_t)(int64_t)f : (uint64_t)f) & mask;
}
static const double f2i_in[NT] = {
    NAN,          INFINITY,     -INFINITY,    -1.5,        -0.5,         0.5,
    1.5,          127.75,       128.0,        -128.75,     -129.0,       255.5,
    256.0,        32767.5,      65536.0,      -32769.0,    2147483520.0, 2147483648.0,
    -2147483904., 4294967296.0, 1e19,         1.5e19,      2e19,         -1e19,
    3.75,         -3.75,        0.0,          -0.0,        4294967040.0, 9.2e18,
    -9.3e18,      100.25};
static void f2i_text(ag_str *out, ag__dt dt) {
  const char *tn = ag__dt_name(dt);
  ag_str_printf(out, "@threads(%d)\ndef f2i_%s(X: Tensor(%d, f32), D: Tensor(%d, f64), "
                     "I: Tensor(%d, %s), J: Tensor(%d, %s)):\n    t = threadIdx.x\n"
                     "    I[t] = cvt(X[t], %s)\n    J[t] = cvt(D[t], %s)\n",
                NT, tn, NT, NT, NT, tn, NT, tn, tn, tn);
}

/* The program of every (row, float type) kernel and every f2i kernel. */
static void all_kernels(ag_str *text) {
  int nb;
  const ag__builtin *tab = ag__builtin_table(&nb);
  for (int i = 0; i < nb; i++)
    for (size_t j = 0; j < sizeof floats / sizeof floats[0]; j++) {
      char name[64];
      kernel_text(text, &tab[i], floats[j], name, sizeof name);
    }
  for (size_t j = 0; j < sizeof ints / sizeof ints[0]; j++)
    f2i_text(text, ints[j]);
}

TEST(test_every_builtin_checks_lowers_and_interprets) {
  int nb;
  const ag__builtin *tab = ag__builtin_table(&nb);
  CHECK(nb >= 10); /* exp2 exp sqrt rcp abs max min and the three reductions, at least */
  ag_str text = AG_STR_INIT;
  all_kernels(&text);
  ag_tile_program *p = checked(ag_str_cstr(&text));
  CHECK(p != NULL);
  ag_tile_lowered *l = p ? lowered(p) : NULL;
  CHECK(l != NULL);
  int ran = 0;
  for (int i = 0; l && i < nb; i++) {
    const ag__builtin *b = &tab[i];
    for (size_t j = 0; j < sizeof floats / sizeof floats[0]; j++) {
      ag__dt dt = floats[j];
      int sz = ag__dt_size(dt), known = 1;
      char name[64], err[512] = "";
      snprintf(name, sizeof name, "k_%s_%s", b->name, ag__dt_name(dt));
      /* its CUDA C spells the operation for this type */
      const char *cu = cuda_want(b->name, dt);
      char *sec = section(l->cuda, name);
      if (!cu)
        fprintf(stderr, "no CUDA C for builtin '%s' in test_tile_builtins.c: add it\n",
                b->name);
      CHECK(cu != NULL);
      CHECK_CONTAINS(sec, cu ? cu : "");
      if (b->kind == AG__BI_LANE) /* the mask, as written */
        CHECK_CONTAINS(sec, ", 5)");
      free(sec);
      void *t[3] = {calloc(NT, (size_t)sz), calloc(NT, (size_t)sz), calloc(NT, (size_t)sz)};
      for (int e = 0; e < NT; e++) {
        put(dt, t[0], e, in_x(e));
        put(dt, t[1], e, in_y(e));
        put(dt, t[2], e, 99.0);
      }
      int rc = interpret(p, l, name, t, err, sizeof err);
      if (rc)
        fprintf(stderr, "%s: %s\n", name, err);
      CHECK_EQ_INT(rc, 0);
      int bad = 0, differs = 0;
      for (int e = 0; !rc && e < NT; e++) {
        double want = expected(b, dt, e, &known), got = get(dt, t[2], e);
        if (!known)
          break;
        if (!same(got, want) && bad++ < 3)
          fprintf(stderr, "%s: Z[%d] = %.9g, want %.9g\n", name, e, got, want);
        /* another row's reference: the comparison can fail */
        const ag__builtin *o = &tab[(i + 1) % nb];
        int k2;
        differs |= !same(got, expected(o, dt, e, &k2));
      }
      if (!known)
        fprintf(stderr, "no reference for builtin '%s' in test_tile_builtins.c: add one\n",
                b->name);
      CHECK(known);
      CHECK_EQ_INT(bad, 0);
      CHECK(rc || differs);
      ran += !rc && known && !bad;
      for (int k = 0; k < 3; k++)
        free(t[k]);
    }
  }
  printf("  %d builtins x %d types: checked, lowered, interpreted as the reference (%d)\n", nb,
         (int)(sizeof floats / sizeof floats[0]), ran);
  ag_tile_lowered_free(l);
  ag_tile_program_free(p);
  ag_str_release(&text);
}

/* Two integers fold (max, min): in an assertion (the checker) and an index
 * (the lowering and the interpreter), as compile-time constants. */
TEST(test_integer_folds) {
  int nb, n = 0;
  const ag__builtin *tab = ag__builtin_table(&nb);
  for (int i = 0; i < nb; i++) {
    const ag__builtin *b = &tab[i];
    if (!b->ints)
      continue;
    int64_t want = !strcmp(b->name, "max") ? 7 : !strcmp(b->name, "min") ? 2 : -1;
    if (want < 0)
      fprintf(stderr, "no reference for '%s' of two integers in test_tile_builtins.c\n",
              b->name);
    CHECK(want >= 0);
    char text[512];
    snprintf(text, sizeof text,
             "@threads(%d)\ndef k(X: Tensor(%d, f32), Y: Tensor(%d, f32), Z: Tensor(%d, f32)):\n"
             "    t = threadIdx.x\n    assert %s(7, 2) == %d\n    Z[t] = X[(t + %s(7, 2)) %% %d]\n",
             NT, NT, NT, NT, b->name, (int)want, b->name, NT);
    ag_tile_program *p = checked(text);
    CHECK(p != NULL);
    ag_tile_lowered *l = p ? lowered(p) : NULL;
    CHECK(l != NULL);
    if (l) {
      char idx[64];
      snprintf(idx, sizeof idx, "(t + %d) %% %d", (int)want, NT);
      CHECK_CONTAINS(l->cuda, idx);
      void *t[3] = {calloc(NT, 4), calloc(NT, 4), calloc(NT, 4)};
      for (int e = 0; e < NT; e++)
        ((float *)t[0])[e] = (float)e;
      char err[512] = "";
      CHECK_EQ_INT(interpret(p, l, "k", t, err, sizeof err), 0);
      for (int e = 0; e < NT; e++)
        CHECK_EQ_INT((int)((float *)t[2])[e], (e + want) % NT);
      for (int k = 0; k < 3; k++)
        free(t[k]);
      n++;
    }
    ag_tile_lowered_free(l);
    ag_tile_program_free(p);
  }
  CHECK(n >= 2);
}

/* Rows with integer semantics check and lower on integer data; the others
 * are refused by the checker at the call (they would not lower). */
TEST(test_integer_data) {
  int nb;
  const ag__builtin *tab = ag__builtin_table(&nb);
  for (int i = 0; i < nb; i++) {
    const ag__builtin *b = &tab[i];
    for (int u = 0; u < 2; u++) {
      const char *tn = u ? "u32" : "i32";
      char text[640];
      if (b->kind == AG__BI_REDUCE)
        snprintf(text, sizeof text,
                 "@threads(32)\ndef k(I: Tensor(32, %s), J: Tensor(32, %s)):\n"
                 "    t = threadIdx.x\n    r = make_local((2,), %s)\n    r[0] = I[t]\n"
                 "    r[1] = J[t]\n    I[t] = %s(r)\n",
                 tn, tn, tn, b->name);
      else
        snprintf(text, sizeof text,
                 "@threads(32)\ndef k(I: Tensor(32, %s), J: Tensor(32, %s)):\n"
                 "    t = threadIdx.x\n    I[t] = %s(I[t]%s)\n",
                 tn, tn, b->name,
                 b->kind == AG__BI_LANE ? ", 3" : b->arity == 2 ? ", J[t]" : "");
      ag_diags d;
      ag_diags_init(&d);
      ag_tile_program *p;
      ag_tile_report *r;
      int rc = parse_check(text, &d, &p, &r);
      CHECK(p != NULL);
      if (b->int_data) {
        CHECK_EQ_INT(rc, 0);
        CHECK(r && ag_tile_report_ok(r));
        ag_tile_lowered *l = rc ? NULL : lowered(p);
        CHECK(l != NULL);
        if (l && b->cuda_int)
          CHECK_CONTAINS(l->cuda, b->kind == AG__BI_LANE ? "__shfl_xor_sync(0xffffffffu, "
                                  : b->cuda_int[0] == '(' ? " ? " : "");
        ag_tile_lowered_free(l);
      } else {
        CHECK(rc != 0);
        CHECK(d.items.n > 0);
        if (d.items.n) {
          CHECK_CONTAINS(d.items.v[0].msg, "takes floating-point data");
          CHECK_EQ_INT(d.items.v[0].line, 4);
        }
      }
      ag_tile_report_free(r);
      ag_tile_program_free(p);
      ag_diags_release(&d);
    }
  }
}

/* The warp exchange on integer data of 1, 2, 4 and 8 bytes, in a block of
 * two warps: lane l of warp w gets lane l ^ m of the same warp, bit for bit
 * (the interpreter against the index arithmetic here), in a loop too. */
TEST(test_lane_exchange_data) {
  static const ag__dt dts[] = {DT_I8, DT_U16, DT_U32, DT_I64};
  for (size_t j = 0; j < sizeof dts / sizeof dts[0]; j++) {
    const char *tn = ag__dt_name(dts[j]);
    int sz = ag__dt_size(dts[j]);
    char text[512];
    snprintf(text, sizeof text,
             "@threads(64)\ndef k(I: Tensor(64, %s), J: Tensor(64, %s)):\n"
             "    t = threadIdx.x\n    v = I[t]\n    for s in range(3):\n"
             "        v = shfl_xor(v, 6 + 7 * (s %% 2))\n    J[t] = shfl_xor(v, 9)\n",
             tn, tn);
    ag_tile_program *p = checked(text);
    CHECK(p != NULL);
    ag_tile_lowered *l = p ? lowered(p) : NULL;
    CHECK(l != NULL);
    if (!l) {
      ag_tile_program_free(p);
      continue;
    }
    unsigned char *in = calloc(64, (size_t)sz), *out = calloc(64, (size_t)sz);
    for (int e = 0; e < 64; e++)
      for (int b = 0; b < sz; b++)
        in[e * sz + b] = (unsigned char)(e * 37 + b * 11 + 1);
    void *t[2] = {in, out};
    char err[512] = "";
    int rc = interpret(p, l, "k", t, err, sizeof err);
    if (rc)
      fprintf(stderr, "%s: %s\n", tn, err);
    CHECK_EQ_INT(rc, 0);
    int bad = 0;
    for (int e = 0; !rc && e < 64; e++) {
      int from = (e & ~31) | ((e & 31) ^ 6 ^ 13 ^ 6 ^ 9); /* the exchanges compose */
      bad += memcmp(out + e * sz, in + from * sz, (size_t)sz) != 0;
    }
    CHECK_EQ_INT(bad, 0);
    /* the comparison can fail: without the exchange J would be I */
    CHECK(memcmp(out, in, (size_t)sz) != 0);
    free(in);
    free(out);
    ag_tile_lowered_free(l);
    ag_tile_program_free(p);
  }
}

/* Tags: another lane's value is top (its tag named the other thread), so
 * '!= top' on it is violated, with the reason; a constant's stays bottom; the
 * lane's own load keeps its tag. A mask of loop variables (1 << k) checks. */
TEST(test_lane_exchange_tags) {
  const char *text = "@threads(32)\ndef k(X: Tensor(32, f32), Z: Tensor(32, f32)):\n"
                     "    T_X = X[i] -> (i,)\n    t = threadIdx.x\n    r = make_local((3,), f32)\n"
                     "    r[0] = X[t]\n    assert tag(r[0]) == (t,)\n    for k in range(2):\n"
                     "        r[1] = shfl_xor(X[t], 1 << k)\n        assert tag(r[1]) != top\n"
                     "    r[2] = shfl_xor(cvt(3, f32), 1)\n    assert tag(r[2]) == bot\n"
                     "    Z[t] = r[1] + r[2]\n";
  ag_diags d;
  ag_diags_init(&d);
  ag_tile_program *p;
  ag_tile_report *r;
  CHECK_EQ_INT(parse_check(text, &d, &p, &r), 0);
  int seen = 0;
  for (int i = 0; r && i < r->nasserts; i++) {
    const ag_tile_assert_result *a = &r->asserts[i];
    if (a->bounds || a->race)
      continue;
    seen++;
    CHECK_EQ_INT(a->status, a->line == 10 ? AG_TILE_VIOLATED : AG_TILE_PROVED);
  }
  CHECK_EQ_INT(seen, 3);
  ag_str s = AG_STR_INIT;
  if (r)
    ag_tile_report_text(r, &s);
  CHECK_CONTAINS(ag_str_cstr(&s), "a value from another lane (shfl_xor)");
  ag_str_release(&s);
  ag_tile_report_free(r);
  ag_tile_program_free(p);
  ag_diags_release(&d);
}

/* What cannot exchange is refused, by the checker at the call and by the
 * lowering (which `argus run --unchecked` reaches without the checker). */
TEST(test_lane_exchange_refused) {
  static const struct {
    const char *body; /* after t = threadIdx.x, in a kernel of `threads` threads */
    int threads, line, lower_refuses; /* the call's line; 1: the lowering's case, else the checker's */
    const char *msg;
  } cases[] = {
      {"    if t < 5:\n        X[t] = shfl_xor(X[t], 1)\n", 32, 5, 1, "may differ between the lanes"},
      {"    if t < 5:\n        X[t] = shfl_xor(X[t], 1)\n", 32, 5, 0, "thread-dependent 'if'"},
      {"    X[t] = shfl_xor(X[t], 32)\n", 32, 4, 1, "lane mask in 0..31"},
      {"    X[t] = shfl_xor(X[t], t)\n", 32, 4, 1, "the same in every lane"},
      {"    for s in range(2):\n        X[t] = shfl_xor(X[t], 31 + s)\n", 32, 5, 1,
       "lane mask in 0..31, not 32"},
      {"    for s in range(2):\n        X[t] = shfl_xor(X[t], 31 + s)\n", 32, 5, 0,
       "lane mask in 0..31, not 32"},
      {"    X[t] = shfl_xor(X[t], 1)\n", 48, 4, 1, "whole warps"},
      {"    X[t] = shfl_xor(X[t], 1)\n", 48, 4, 0, "whole warps"},
      {"    X[t] = shfl_xor(3, 1)\n", 32, 4, 1, "exchanges data"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[512];
    snprintf(text, sizeof text, "@threads(%d)\ndef k(X: Tensor(64, f32)):\n    t = threadIdx.x\n%s",
             cases[i].threads, cases[i].body);
    ag_diags d;
    ag_diags_init(&d);
    ag_tile_program *p = NULL;
    CHECK_EQ_INT(ag_tile_parse(text, strlen(text), "t.tile", &d, &p), 0);
    if (cases[i].lower_refuses) {
      ag_tile_lowered *l = NULL;
      ag_tile_lower_opts o;
      memset(&o, 0, sizeof o);
      CHECK(ag_tile_lower(p, &o, &d, &l) != 0);
      CHECK(d.items.n > 0);
      if (d.items.n) {
        CHECK_CONTAINS(d.items.v[0].msg, cases[i].msg);
        CHECK_EQ_INT(d.items.v[0].line, cases[i].line);
      }
      ag_tile_lowered_free(l);
    } else {
      ag_tile_report *r = NULL;
      CHECK(ag_tile_check(p, NULL, &d, &r) != 0);
      CHECK(d.items.n > 0);
      if (d.items.n) {
        CHECK_CONTAINS(d.items.v[0].msg, cases[i].msg);
        CHECK_EQ_INT(d.items.v[0].line, cases[i].line);
      }
      ag_tile_report_free(r);
    }
    ag_tile_program_free(p);
    ag_diags_release(&d);
  }
}

/* cvt from f32 and f64 to every integer type: checked, lowered (ag_f2i),
 * interpreted bit for bit as the reference above, the special values
 * included (NaN, infinities, out of range both ways, -0.5 to unsigned). */
TEST(test_float_to_int) {
  ag_str text = AG_STR_INIT;
  for (size_t j = 0; j < sizeof ints / sizeof ints[0]; j++)
    f2i_text(&text, ints[j]);
  ag_tile_program *p = checked(ag_str_cstr(&text));
  CHECK(p != NULL);
  ag_tile_lowered *l = p ? lowered(p) : NULL;
  CHECK(l != NULL);
  int bad = 0;
  for (size_t j = 0; l && j < sizeof ints / sizeof ints[0]; j++) {
    ag__dt dt = ints[j];
    int sz = ag__dt_size(dt);
    char name[64], want_c[96], err[512] = "";
    snprintf(name, sizeof name, "f2i_%s", ag__dt_name(dt));
    char *sec = section(l->cuda, name);
    snprintf(want_c, sizeof want_c, "ag_f2i<%s>((double)", ag__dt_ctype(dt));
    CHECK_CONTAINS(sec, want_c);
    /* the bounds: the minimum (or 0) and the maximum + 1 */
    uint64_t mx = want_f2i(dt, INFINITY), mn = want_f2i(dt, -INFINITY);
    int sg = (mn >> (8 * sz - 1)) & 1;
    snprintf(want_c, sizeof want_c, ", %.1f, %.1f)",
             sg ? -ldexp(1, 8 * sz - 1) : 0.0, (double)mx + 1.0);
    CHECK_CONTAINS(sec, want_c);
    free(sec);
    float *x = calloc(NT, 4);
    double *dd = calloc(NT, 8);
    void *t[4] = {x, dd, calloc(NT, (size_t)sz), calloc(NT, (size_t)sz)};
    for (int e = 0; e < NT; e++) {
      x[e] = (float)f2i_in[e];
      dd[e] = f2i_in[e];
    }
    int rc = interpret(p, l, name, t, err, sizeof err);
    if (rc)
      fprintf(stderr, "%s: %s\n", name, err);
    CHECK_EQ_INT(rc, 0);
    for (int e = 0; !rc && e < NT; e++)
      for (int k = 0; k < 2; k++) {
        uint64_t got = 0, want = want_f2i(dt, k ? dd[e] : (double)x[e]);
        memcpy(&got, (unsigned char *)t[2 + k] + (size_t)e * (size_t)sz, (size_t)sz);
        if (got != want && bad++ < 5)
          fprintf(stderr, "%s: cvt(%.17g from %s) = 0x%llx, want 0x%llx\n", name,
                  k ? dd[e] : (double)x[e], k ? "f64" : "f32", (unsigned long long)got,
                  (unsigned long long)want);
      }
    for (int k = 0; k < 4; k++)
      free(t[k]);
  }
  CHECK_EQ_INT(bad, 0);
  /* the comparison can fail: 2.5 does not truncate to 3 */
  CHECK(want_f2i(DT_I32, 2.5) == 2 && want_f2i(DT_U8, -7.0) == 0 && want_f2i(DT_I8, 1e9) == 127);
  ag_tile_lowered_free(l);
  ag_tile_program_free(p);
  ag_str_release(&text);
}

/* A DSL name that is a C function a builtin calls is renamed in the CUDA C
 * (a variable 'fmaxf' would hide fmaxf()). */
TEST(test_c_names) {
  const char *text = "@threads(32)\ndef k(X: Tensor(32, f32), Z: Tensor(32, f32)):\n"
                     "    fmaxf = X[threadIdx.x]\n    exp = fmaxf * 2.0\n"
                     "    Z[threadIdx.x] = max(fmaxf, exp)\n";
  ag_tile_program *p = checked(text);
  CHECK(p != NULL);
  ag_tile_lowered *l = p ? lowered(p) : NULL;
  CHECK(l != NULL);
  if (l) {
    CHECK_CONTAINS(l->cuda, "float fmaxf_ = ");
    CHECK_CONTAINS(l->cuda, "float exp_ = ");
    CHECK_CONTAINS(l->cuda, "fmaxf(fmaxf_, exp_)");
  }
  ag_tile_lowered_free(l);
  ag_tile_program_free(p);
}

/* The lowered CUDA C of every kernel compiles: one module, one NVRTC call. */
TEST(test_builtins_compile) {
  ag_diags d;
  ag_diags_init(&d);
  ag_str s = AG_STR_INIT;
  if (ag_tile_nvrtc_ptx("", 0, NULL, &d, &s, NULL) == AG_EUNSUPPORTED) {
    ag_str_release(&s);
    ag_diags_release(&d);
    SKIP("argus was built without NVRTC");
  }
  ag_str text = AG_STR_INIT;
  all_kernels(&text);
  ag_tile_program *p = NULL;
  CHECK_EQ_INT(ag_tile_parse(text.p, text.len, "builtins.tile", &d, &p), 0);
  ag_tile_lowered *l = p ? lowered(p) : NULL;
  CHECK(l != NULL);
  if (l) {
    ag_str_clear(&s);
    int rc = ag_tile_nvrtc_ptx(l->cuda, l->len, NULL, &d, &s, NULL);
    if (rc) {
      ag_str m = AG_STR_INIT;
      ag_diags_format(&d, &m);
      fprintf(stderr, "NVRTC: %s\n", ag_str_cstr(&m));
      ag_str_release(&m);
    }
    CHECK_EQ_INT(rc, 0);
    for (int i = 0; !rc && i < l->nkernels; i++) {
      char entry[96];
      snprintf(entry, sizeof entry, ".entry %s(", l->kernels[i].name);
      CHECK_CONTAINS(ag_str_cstr(&s), entry);
    }
    /* the warp exchange is a full-mask butterfly shuffle in the PTX */
    if (!rc)
      CHECK_CONTAINS(ag_str_cstr(&s), "shfl.sync.bfly.b32");
    printf("  %d kernels through NVRTC\n", l->nkernels);
  }
  ag_tile_lowered_free(l);
  ag_tile_program_free(p);
  ag_str_release(&text);
  ag_str_release(&s);
  ag_diags_release(&d);
}

RUN_TESTS(T(test_every_builtin_checks_lowers_and_interprets), T(test_integer_folds),
          T(test_integer_data), T(test_lane_exchange_data), T(test_lane_exchange_refused),
          T(test_lane_exchange_tags),
          T(test_float_to_int), T(test_c_names),
          T(test_builtins_compile))
