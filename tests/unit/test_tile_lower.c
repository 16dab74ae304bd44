/*
 * test_tile_lower.c — the tile lowering (src/tile/lower, docs/lower.md):
 * what the CUDA C holds (statements, #line, markers, no tags), the errors
 * for what does not lower (at the DSL line), NVRTC's PTX of every example
 * and planted-bug variant assembling with ptxas (77 without NVRTC or
 * ptxas), and the PTX cache.
 */
#include "argus/tile_check.h"
#include "argus/tile_lower.h"
#include "check.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *srcdir(void) {
  const char *s = getenv("ARGUS_SOURCE_DIR");
  return s ? s : ".";
}

/* Lowers text; returns the result (NULL on error, with the first
 * diagnostic in err). */
static ag_tile_lowered *lower_text(const char *text, const char *kernel, char *err, size_t errn) {
  ag_diags d;
  ag_diags_init(&d);
  ag_tile_program *p = NULL;
  ag_tile_lowered *l = NULL;
  err[0] = 0;
  if (ag_tile_parse(text, strlen(text), "t.tile", &d, &p) == 0) {
    ag_tile_lower_opts o;
    memset(&o, 0, sizeof o);
    o.kernel = kernel;
    ag_tile_lower(p, &o, &d, &l);
  }
  if (d.items.n)
    snprintf(err, errn, "%d: %s", d.items.v[0].line, d.items.v[0].msg);
  ag_tile_program_free(p);
  ag_diags_release(&d);
  return l;
}

static ag_tile_lowered *lower_file(const char *path, char *err, size_t errn) {
  char *text = NULL;
  size_t len = 0;
  if (ag_file_read(path, &text, &len)) {
    snprintf(err, errn, "cannot read %.400s", path); /* bounded: err is 512 bytes at the callers */
    return NULL;
  }
  ag_tile_lowered *l = lower_text(text, NULL, err, errn);
  ag_free(text);
  return l;
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
    n++;
  return n;
}

TEST(test_gemm_source) {
  char path[512], err[512];
  snprintf(path, sizeof path, "%s/examples/tile/gemm.tile", srcdir());
  ag_tile_lowered *l = lower_file(path, err, sizeof err);
  CHECK(l != NULL);
  if (!l) {
    printf("  %s\n", err);
    return;
  }
  CHECK_EQ_INT(l->nkernels, 1);
  const ag_tile_lkernel *k = &l->kernels[0];
  CHECK_EQ_STR(k->name, "gemm");
  CHECK_EQ_INT(k->block[0], 128);
  CHECK_EQ_STR(k->grid[0], "M / 64");
  CHECK_EQ_STR(k->grid[1], "N / 64");
  CHECK_EQ_INT(k->smem_bytes, 16384);
  /* A, B, C, then the sizes M, N (K is a const) */
  CHECK_EQ_INT(k->nparams, 5);
  CHECK_EQ_STR(k->params[0].name, "A");
  CHECK_EQ_STR(k->params[3].name, "M");
  CHECK_EQ_INT(k->params[3].kind, AG_TILE_PARAM_SIZE);
  CHECK_EQ_STR(k->params[2].dims[1], "N");
  CHECK_EQ_INT(k->nassumes, 2);
  CHECK_EQ_STR(k->assumes[0], "M % 64 == 0u");
  CHECK_EQ_INT(k->assume_lines[1], 23);
  const char *c = l->cuda;
  /* no tags, no assertions */
  CHECK(strstr(c, "tag(") == NULL);
  CHECK(strstr(c, "T_A") == NULL);
  CHECK(strstr(c, "assert ") == NULL);
  /* loops stay loops; one statement per DSL statement */
  CHECK_CONTAINS(c, "for (unsigned kt = 0u; kt < 4u; kt += 1u) {");
  CHECK_CONTAINS(c, "#line 45 \"t.tile\"");
  CHECK_EQ_INT(count(c, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"), 1);
  /* the f32 accumulator array is the mma's output itself, no temporaries */
  CHECK_CONTAINS(c, ": \"=f\"(acc[(mi_2 * 4 + ni) * 4]), ");
  CHECK(strstr(c, "ag_st<") == NULL);
  CHECK_EQ_INT(count(c, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"), 2);
  CHECK_EQ_INT(count(c, "ag_cp_async<16>("), 4);
  /* the swizzle, folded: chunk c of row r at c ^ (r / 2 % 4) */
  CHECK_CONTAINS(c, "sA + ((r * 4 + (c ^ r / 2 % 4)) * 16)");
  /* the global view (M/64, 64, K/32, 4) of u128: 16384 bytes per block row */
  CHECK_CONTAINS(c, "AG_GL(ag_u128, A, (ag_size)(bm) * 16384 + (ag_size)(r) * 256 + (ag_size)(c) * 16)");
  /* regions */
  CHECK_CONTAINS(c, "ARGUS_BEGIN_AT(mainloop, kt);");
  CHECK_EQ_INT(count(c, "ARGUS_BEGIN(prologue);"), 1);
  CHECK_EQ_INT(count(c, "ARGUS_END(prologue);"), 1);
  CHECK_EQ_INT(count(c, "ARGUS_BEGIN(epilogue);"), 1);
  CHECK_EQ_INT(count(c, "ARGUS_END(epilogue);"), 1);
  CHECK_EQ_INT(k->nregions, 5);
  CHECK_EQ_STR(k->regions[0], "gemm/prologue");
  CHECK_EQ_STR(k->regions[1], "gemm/prologue/loop_i_42");
  CHECK_EQ_STR(k->regions[2], "gemm/mainloop");
  CHECK_EQ_STR(k->regions[3], "gemm/epilogue");
  /* the loop of assertions on shared tags emits nothing */
  CHECK_CONTAINS(c, "/* line 68: assertions only (no code) */");
  /* host side */
  CHECK_CONTAINS(c, "static inline int gemm_preconditions(unsigned M, unsigned N) {");
  CHECK_CONTAINS(c, "if (!(N % 64 == 0u)) return 23;");
  ag_tile_lowered_free(l);
}

TEST(test_attention_source) {
  char path[512], err[512];
  snprintf(path, sizeof path, "%s/examples/tile/attention.tile", srcdir());
  ag_tile_lowered *l = lower_file(path, err, sizeof err);
  CHECK(l != NULL);
  if (!l) {
    printf("  %s\n", err);
    return;
  }
  const char *c = l->cuda;
  CHECK_EQ_INT(l->kernels[0].smem_bytes, 3 * 8192);
  /* run-time ifs on loop variables and on the warp */
  CHECK_CONTAINS(c, "if (j < 2u) {");
  CHECK_CONTAINS(c, "if (wid < 2u) {");
  /* the 128-byte-row swizzle(3, 3, 3) of bf16 is Swizzle<3,4,3> in bytes */
  CHECK_CONTAINS(c, "& 896) >> 3");
  /* register views: a bf16 element of a u32 tile, a u64 of a bf16 tile */
  CHECK_CONTAINS(c, "ag_ld<unsigned short>(tu, ");
  CHECK_CONTAINS(c, "ag_ld<unsigned long long>(tt, 0)");
  CHECK_CONTAINS(c, "exp2f(");
  CHECK_CONTAINS(c, "ag_f32_bf16(");
  CHECK(strstr(c, "T_P") == NULL);
  ag_tile_lowered_free(l);
}

/* What does not lower is an error at the DSL line, never code. */
TEST(test_errors_at_the_line) {
  static const struct {
    const char *body, *msg;
    int line;
  } cases[] = {
      {"    for i in range(2):\n        s = make_shared((64,), f32)\n",
       "make_shared inside a loop", 5},
      {"    for i in range(2):\n        r = i * 2\n    x = r + 1\n",
       "'r' is bound inside the loop at line 4", 6},
      {"    for i in range(2):\n        pass\n    x = i\n", "'i' is bound inside the loop", 6},
      {"    assume threadIdx.x < 64\n", "thread or block index", 4},
      {"    if threadIdx.x < 3:\n        A[0] = 1.0\n        y = 1\n    z = y\n",
       "in a branch of the 'if' at line 4", 7},
      {"    if threadIdx.x < 3:\n        y = 1\n    z = y\n", "bound inside the block at line 4",
       6},
      {"    r = make_local((4,), f32)\n    x = r[threadIdx.x % 4]\n",
       "register tile index must be a compile-time constant", 5},
      {"    q = make_local((4,), f32)\n    for i in range(2):\n        y = q[i] * 2.0\n"
       "        q = make_local((4,), bf16)\n",
       "binds it to a new kind of value", 5},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[1024], err[512];
    snprintf(text, sizeof text,
             "@threads(32)\ndef k(A: Tensor(M, f32)):\n    tid = threadIdx.x\n%s", cases[i].body);
    ag_tile_lowered *l = lower_text(text, NULL, err, sizeof err);
    CHECK(l == NULL);
    CHECK_CONTAINS(err, cases[i].msg);
    int line = atoi(err);
    CHECK_EQ_INT(line, cases[i].line);
    ag_tile_lowered_free(l);
  }
  char err[256];
  CHECK(lower_text("@threads(32)\ndef k(A: Tensor(M, f32)):\n    pass\n", "nope", err,
                   sizeof err) == NULL);
  CHECK_CONTAINS(err, "no kernel named 'nope'");
}

/* Forms the checker accepts that the lowering once refused ("checks implies
 * lowers"): each program checks clean, lowers to the CUDA C named, and (with
 * NVRTC) compiles. */
TEST(test_checked_forms_lower) {
  static const struct {
    const char *body, *want;
  } cases[] = {
      /* a register index through a counter the loop carries: a run-time index */
      {"    k = 0\n    r = make_local((4,), f32)\n    fill(r, 1.0)\n    for i in range(4):\n"
       "        A[tid] = r[k]\n        k = k + 1\n",
       "= r[k];"},
      /* shifts by a run-time count, or past 31: 0 past 31, as the checker's integers */
      {"    x = tid >> (tid % 4)\n    U[tid] = x\n", "ag_shr(tid, tid % 4)"},
      {"    x = tid << 32\n    U[tid] = x\n", "ag_shl(tid, 32u)"},
      {"    x = 1 << tid\n    U[tid] = x\n", "ag_shl(1u, tid)"},
      /* a run-time integer stored as data, and converted with cvt */
      {"    U[tid] = tid * 3\n    A[tid] = cvt(tid, f32)\n", "= (float)(tid)"},
      /* cvt from a float to an integer */
      {"    y = cvt(A[tid], i32)\n    U[tid] = cvt(y, u32)\n", "ag_f2i<int>((double)"},
      /* an mma accumulator viewed as f32 in a u32 tile: through temporaries */
      {"    a = make_local((8,), bf16)\n    b = make_local((4,), bf16)\n"
       "    cu = make_local((4,), u32)\n    fill(a, 0)\n    fill(b, 0)\n    fill(cu, 0)\n"
       "    cf = cu.view((4,), f32)\n    mma_m16n8k16(cf, a, b, cf)\n    A[tid] = cf[0]\n",
       "ag_st<float>(cu, 12, "},
      /* an ldmatrix into a bf16 tile: through temporaries */
      {"    s = make_shared((32, 8), bf16)\n    r = make_local((8,), bf16)\n"
       "    ldmatrix_x4(r, s[tid, 0])\n    A[tid] = cvt(r[7], f32)\n",
       "ag_st<unsigned>(r, 12, "},
  };
  int nvrtc = -1;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[1024], err[512];
    snprintf(text, sizeof text,
             "@threads(32)\ndef k(A: Tensor(32, f32), U: Tensor(32, u32)):\n"
             "    tid = threadIdx.x\n%s",
             cases[i].body);
    ag_diags d;
    ag_diags_init(&d);
    ag_tile_program *p = NULL;
    ag_tile_report *r = NULL;
    CHECK_EQ_INT(ag_tile_parse(text, strlen(text), "t.tile", &d, &p), 0);
    CHECK_EQ_INT(ag_tile_check(p, NULL, &d, &r), 0);
    CHECK(r && ag_tile_report_ok(r));
    ag_tile_report_free(r);
    ag_tile_program_free(p);
    ag_diags_release(&d);
    ag_tile_lowered *l = lower_text(text, NULL, err, sizeof err);
    if (!l)
      fprintf(stderr, "case %zu does not lower: %s\n", i, err);
    CHECK(l != NULL);
    if (!l)
      continue;
    CHECK_CONTAINS(l->cuda, cases[i].want);
    ag_diags_init(&d);
    ag_str ptx = AG_STR_INIT;
    int rc = ag_tile_nvrtc_ptx(l->cuda, l->len, NULL, &d, &ptx, NULL);
    if (rc != AG_EUNSUPPORTED) {
      nvrtc = nvrtc < 0 ? 0 : nvrtc;
      if (rc)
        fprintf(stderr, "case %zu: NVRTC fails:\n%s\n", i, l->cuda);
      CHECK_EQ_INT(rc, 0);
      nvrtc += rc == 0;
    }
    ag_str_release(&ptx);
    ag_diags_release(&d);
    ag_tile_lowered_free(l);
  }
  if (nvrtc < 0)
    SKIP("argus was built without NVRTC: the CUDA C was not compiled");
}

/* Python's scoping, exactly: a variable a loop reads and then assigns is one
 * C variable the loop assigns; a name bound in both blocks' bodies is new. */
TEST(test_loop_carried) {
  char err[512];
  ag_tile_lowered *l = lower_text(
      "@threads(32)\ndef k(A: Tensor(M, f32)):\n    s = A[threadIdx.x]\n    x = 0\n"
      "    for i in range(4):\n        s = s + A[i]\n        x = x + 1\n    A[x] = s\n",
      NULL, err, sizeof err);
  CHECK(l != NULL);
  if (!l) {
    printf("  %s\n", err);
    return;
  }
  CHECK_CONTAINS(l->cuda, "float s = AG_GL(float, A, (ag_size)(threadIdx.x) * 4);");
  CHECK_CONTAINS(l->cuda, "unsigned x = 0u;");
  CHECK_CONTAINS(l->cuda, "s = (s + AG_GL(float, A, (ag_size)(i) * 4));");
  CHECK_CONTAINS(l->cuda, "x = x + 1;");
  CHECK_CONTAINS(l->cuda, "AG_GL(float, A, (ag_size)(x) * 4) = s;");
  ag_tile_lowered_free(l);
}

/* A loop of at most 64 trips is unrolled (#pragma unroll); a longer one is
 * left to the compiler, so a long main loop stays one loop in the PTX. */
TEST(test_long_loops_stay_loops) {
  char err[512];
  ag_tile_lowered *l = lower_text("@threads(32)\ndef k(A: Tensor(M, f32)):\n    s = A[threadIdx.x]\n"
                                  "    for i in range(64):\n        s = s + A[i]\n"
                                  "    for j in range(65):\n        s = s + A[j]\n"
                                  "    A[threadIdx.x] = s\n",
                                  NULL, err, sizeof err);
  CHECK(l != NULL);
  if (!l) {
    printf("  %s\n", err);
    return;
  }
  const char *a = strstr(l->cuda, "for (unsigned i = 0u; i < 64u;");
  const char *b = strstr(l->cuda, "for (unsigned j = 0u; j < 65u;");
  CHECK(a && b);
  CHECK_EQ_INT(count(l->cuda, "#pragma unroll"), 1);
  const char *pr = strstr(l->cuda, "#pragma unroll");
  CHECK(pr && a && pr < a && (!b || pr < b));
  ag_tile_lowered_free(l);
}

/* region("name"): markers around the body, qualified by the open regions;
 * the body is not a scope. A malformed name is a parse error. */
TEST(test_region_statement) {
  char err[512];
  ag_tile_lowered *l = lower_text(
      "@threads(32)\ndef k(A: Tensor(M, f32)):\n    x = A[threadIdx.x]\n"
      "    for kt in range(8):\n        region(\"stage\"):\n            y = x * 2.0\n"
      "        A[kt] = y\n",
      NULL, err, sizeof err);
  CHECK(l != NULL);
  if (!l) {
    printf("  %s\n", err);
    return;
  }
  CHECK_CONTAINS(l->cuda, "ARGUS_BEGIN_AT(mainloop, kt);");
  CHECK_CONTAINS(l->cuda, "    ARGUS_BEGIN(stage);\n#line 6 \"t.tile\"\n    float y = (x * 2.0f);\n"
                          "#line 5 \"t.tile\"\n    ARGUS_END(stage);");
  CHECK_EQ_INT(l->kernels[0].nregions, 3);
  CHECK_EQ_STR(l->kernels[0].regions[1], "k/mainloop");
  CHECK_EQ_STR(l->kernels[0].regions[2], "k/mainloop/stage");
  ag_tile_lowered_free(l);
  l = lower_text("@threads(32)\ndef k(A: Tensor(M, f32)):\n    region(\"a/b\"):\n        pass\n",
                 NULL, err, sizeof err);
  CHECK(l == NULL);
  CHECK_CONTAINS(err, "region name 'a/b' must be a name");
  l = lower_text("@threads(32)\ndef k(A: Tensor(M, f32)):\n    region(\"a\"):\n"
                 "        region(\"a\"):\n            pass\n",
                 NULL, err, sizeof err);
  CHECK(l == NULL);
  CHECK_CONTAINS(err, "region 'a' inside a region of the same name");
  /* the checker runs the body in place (its assertions count), the printer keeps it */
  {
    ag_diags d0;
    ag_diags_init(&d0);
    ag_tile_program *p0 = NULL;
    ag_tile_report *r = NULL;
    const char *t0 = "@threads(32)\ndef k(A: Tensor(M, f32)):\n    region(\"a\"):\n"
                     "        x = threadIdx.x\n    assert x < 32\n";
    CHECK_EQ_INT(ag_tile_parse(t0, strlen(t0), "t.tile", &d0, &p0), 0);
    CHECK_EQ_INT(ag_tile_check(p0, NULL, &d0, &r), 0);
    CHECK(r && r->nasserts == 1 && ag_tile_report_ok(r));
    ag_str s0 = AG_STR_INIT;
    ag_tile_print_program(p0, &s0);
    CHECK_CONTAINS(ag_str_cstr(&s0), "    region(\"a\"):\n        x = threadIdx.x\n");
    ag_str_release(&s0);
    ag_tile_report_free(r);
    ag_tile_program_free(p0);
    ag_diags_release(&d0);
  }
  /* without markers, nothing of it */
  ag_diags d;
  ag_diags_init(&d);
  ag_tile_program *p = NULL;
  const char *t = "@threads(32)\ndef k(A: Tensor(M, f32)):\n    region(\"a\"):\n        A[0] = 1.0\n";
  CHECK_EQ_INT(ag_tile_parse(t, strlen(t), "t.tile", &d, &p), 0);
  ag_tile_lower_opts o;
  memset(&o, 0, sizeof o);
  o.no_markers = 1;
  CHECK_EQ_INT(ag_tile_lower(p, &o, &d, &l), 0);
  CHECK(l && !strstr(l->cuda, "ARGUS_BEGIN(a)"));
  CHECK(l && strstr(l->cuda, "AG_GL(float, A, 0) = 1.0f;"));
  ag_tile_lowered_free(l);
  ag_tile_program_free(p);
  ag_diags_release(&d);
}

/* ----------------------------------------------------------- the CLI */
static int run_cli(const char *const *argv, ag_str *out, ag_str *err) {
  ag_str_clear(out);
  ag_str_clear(err);
  ag_proc_opts o = {.argv = argv, .capture_out = out, .capture_err = err, .timeout_s = 120};
  ag_proc_result r;
  if (ag_proc_run(&o, &r) || !r.exited)
    return -1;
  return r.exit_code;
}

TEST(test_cli_lower) {
  const char *bin = getenv("ARGUS_BIN");
  if (!bin) {
    SKIP("ARGUS_BIN is not set (run under ctest)");
    return;
  }
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  char gemm[512], bad[512], tmpf[600], cmd[1400];
  snprintf(gemm, sizeof gemm, "%s/examples/tile/gemm.tile", srcdir());
  /* --json: the launch description and the CUDA C */
  const char *a[] = {bin, "--json", "lower", gemm, NULL};
  CHECK_EQ_INT(run_cli(a, &out, &err), 0);
  json_t *j = json_loads(ag_str_cstr(&out), 0, NULL);
  CHECK(j != NULL);
  json_t *k = json_array_get(json_object_get(j, "kernels"), 0);
  CHECK_EQ_STR(json_string_value(json_object_get(k, "name")), "gemm");
  CHECK_EQ_INT(json_integer_value(json_object_get(k, "smem_bytes")), 16384);
  CHECK_EQ_INT(json_array_size(json_object_get(k, "regions")), 5);
  CHECK_EQ_INT(json_array_size(json_object_get(k, "preconditions")), 2);
  CHECK_EQ_INT(json_array_size(json_object_get(k, "tensor_maps")), 0);
  CHECK_CONTAINS(json_string_value(json_object_get(j, "cuda")), "extern \"C\" __global__");
  json_decref(j);
  /* tensor maps: name, tensor, box (the tensor's order), swizzle */
  char tma[512];
  snprintf(tma, sizeof tma, "%s/examples/tile/tma_gemm.tile", srcdir());
  const char *at[] = {bin, "--json", "lower", "--unchecked", tma, NULL};
  CHECK_EQ_INT(run_cli(at, &out, &err), 0);
  j = json_loads(ag_str_cstr(&out), 0, NULL);
  CHECK(j != NULL);
  json_t *tms = json_object_get(json_array_get(json_object_get(j, "kernels"), 0), "tensor_maps");
  CHECK_EQ_INT(json_array_size(tms), 3);
  json_t *tb = json_array_get(tms, 1);
  CHECK_EQ_STR(json_string_value(json_object_get(tb, "name")), "tmB");
  CHECK_EQ_STR(json_string_value(json_object_get(tb, "tensor")), "B");
  CHECK_EQ_INT(json_integer_value(json_array_get(json_object_get(tb, "box"), 0)), 128);
  CHECK_EQ_INT(json_integer_value(json_object_get(tb, "swizzle")), 128);
  json_decref(j);
  /* a planted bug does not check: exit 1, naming the assertion; --unchecked lowers it */
  char tmp[] = "/tmp/test_tile_lower_cli_XXXXXX";
  CHECK(mkdtemp(tmp) != NULL);
  snprintf(bad, sizeof bad, "%s/stage.tile", tmp);
  snprintf(cmd, sizeof cmd, "sh '%s/examples/tile/bugs/apply.sh' '%s/examples/tile/bugs/gemm-stage.mut' '%s' >/dev/null",
           srcdir(), srcdir(), bad);
  CHECK(system(cmd) == 0);
  const char *b[] = {bin, "lower", bad, NULL};
  CHECK_EQ_INT(run_cli(b, &out, &err), 1);
  CHECK_CONTAINS(ag_str_cstr(&err), "does not check");
  CHECK_CONTAINS(ag_str_cstr(&err), "is violated");
  snprintf(tmpf, sizeof tmpf, "%s/stage.cu", tmp);
  const char *c[] = {bin, "lower", "--unchecked", bad, "-o", tmpf, NULL};
  CHECK_EQ_INT(run_cli(c, &out, &err), 0);
  CHECK_EQ_INT(access(tmpf, R_OK), 0);
  /* usage and malformed input: exit 2 */
  const char *d[] = {bin, "lower", gemm, "-o", "x.txt", NULL};
  CHECK_EQ_INT(run_cli(d, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "ending in .cu or .ptx");
  snprintf(tmpf, sizeof tmpf, "%s/bad.tile", tmp);
  const char *t1 = "@threads(32)\ndef k(A: Tensor(M, f32)):\n    A[0] = = 1\n";
  ag_file_write_atomic(tmpf, t1, strlen(t1));
  const char *e[] = {bin, "lower", tmpf, NULL};
  CHECK_EQ_INT(run_cli(e, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "bad.tile:3:");
  /* a construct that does not lower: exit 2 at its line */
  const char *t2 = "@threads(32)\ndef k(A: Tensor(M, f32)):\n    for i in range(2):\n"
                   "        s = make_shared((32,), f32)\n";
  ag_file_write_atomic(tmpf, t2, strlen(t2));
  CHECK_EQ_INT(run_cli(e, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "bad.tile:4:");
  CHECK_CONTAINS(ag_str_cstr(&err), "make_shared inside a loop");
  const char *f[] = {bin, "lower", "--kernel", "nope", gemm, NULL};
  CHECK_EQ_INT(run_cli(f, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "no kernel named 'nope'");
  /* -o OUT.ptx: PTX through NVRTC for the architecture asked, with the markers */
  char ptxf[700], *ptx = NULL;
  size_t plen = 0;
  snprintf(ptxf, sizeof ptxf, "%s/gemm.ptx", tmp);
  setenv("ARGUS_CACHE_DIR", tmp, 1);
  const char *g[] = {bin, "lower", gemm, "-o", ptxf, "--arch", "sm_80", NULL};
  int rc = run_cli(g, &out, &err);
  if (rc && strstr(ag_str_cstr(&err), "without NVRTC")) {
    CHECK_EQ_INT(rc, 1);
    ag_str_release(&out);
    ag_str_release(&err);
    SKIP("argus was built without NVRTC: -o OUT.ptx is refused, as it should be");
  }
  CHECK_EQ_INT(rc, 0);
  CHECK(ag_file_read(ptxf, &ptx, &plen) == 0);
  if (ptx) {
    CHECK_CONTAINS(ptx, ".target sm_80");
    CHECK_CONTAINS(ptx, ".entry gemm(");
    CHECK_CONTAINS(ptx, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32");
    CHECK_CONTAINS(ptx, "// @argus begin");
  }
  ag_free(ptx);
  CHECK_EQ_STR(ag_str_cstr(&out), ""); /* the PTX goes to the file, nothing to stdout */
  ag_str_release(&out);
  ag_str_release(&err);
}

/* ----------------------------------------------------------- PTX, ptxas */
static int have_ptxas(char *ptxas, size_t n) {
  snprintf(ptxas, n, "%s/bin/ptxas", getenv("CUDA_HOME") ? getenv("CUDA_HOME") : "/usr/local/cuda");
  return access(ptxas, X_OK) == 0;
}

static int assemble(const char *name, const char *cuda, size_t len, const char *ptxas,
                    const char *tmp) {
  ag_diags d;
  ag_diags_init(&d);
  ag_str ptx = AG_STR_INIT;
  int cached = 0, ok = 0;
  int rc = ag_tile_nvrtc_ptx(cuda, len, "sm_90a", &d, &ptx, &cached);
  if (rc) {
    ag_str s = AG_STR_INIT;
    ag_diags_format(&d, &s);
    printf("  %s: NVRTC: %s\n", name, ag_str_cstr(&s));
    ag_str_release(&s);
    goto out;
  }
  char path[600], cmd[1400];
  snprintf(path, sizeof path, "%s/%s.ptx", tmp, name);
  if (ag_file_write_atomic(path, ptx.p, ptx.len))
    goto out;
  snprintf(cmd, sizeof cmd, "'%s' -arch=sm_90a '%s' -o '%s/%s.cubin'", ptxas, path, tmp, name);
  ok = system(cmd) == 0;
  if (!ok)
    printf("  %s: ptxas failed: %s\n", name, cmd);
  /* markers made it to the PTX */
  if (ok && !strstr(ptx.p, "// @argus begin")) {
    printf("  %s: no region markers in the PTX\n", name);
    ok = 0;
  }
out:
  ag_str_release(&ptx);
  ag_diags_release(&d);
  return ok;
}

TEST(test_examples_assemble) {
  char ptxas[512];
  if (!have_ptxas(ptxas, sizeof ptxas)) {
    SKIP("no ptxas at %s", ptxas);
    return;
  }
  {
    ag_diags d;
    ag_diags_init(&d);
    ag_str s = AG_STR_INIT;
    int rc = ag_tile_nvrtc_ptx("", 0, NULL, &d, &s, NULL);
    ag_str_release(&s);
    ag_diags_release(&d);
    if (rc == AG_EUNSUPPORTED) {
      SKIP("argus was built without NVRTC");
      return;
    }
  }
  char tmp[] = "/tmp/test_tile_lower_XXXXXX";
  CHECK(mkdtemp(tmp) != NULL);
  setenv("ARGUS_CACHE_DIR", tmp, 1);
  char dir[512];
  int n = 0;
  /* the examples, then every planted-bug variant (they lower too: the bugs are in the
   * data), then the correct variations (examples/tile/variants, the same format) */
  for (int pass = 0; pass < 3; pass++) {
    snprintf(dir, sizeof dir, "%s/examples/tile%s", srcdir(),
             pass == 2 ? "/variants" : pass ? "/bugs" : "");
    DIR *dp = opendir(dir);
    CHECK(dp != NULL);
    if (!dp)
      return;
    struct dirent *e;
    while ((e = readdir(dp))) {
      size_t l = strlen(e->d_name);
      char path[1100], err[512];
      if (!pass && (l < 6 || strcmp(e->d_name + l - 5, ".tile")))
        continue;
      if (pass && (l < 5 || strcmp(e->d_name + l - 4, ".mut")))
        continue;
      if (pass) {
        char cmd[3072]; /* the source directory, a directory of 512, two names of 255 */
        snprintf(cmd, sizeof cmd,
                 "sh '%s/examples/tile/bugs/apply.sh' '%s/%s' '%s/%s.tile' > /dev/null",
                 srcdir(), dir, e->d_name, tmp, e->d_name);
        CHECK(system(cmd) == 0);
        snprintf(path, sizeof path, "%s/%s.tile", tmp, e->d_name);
      } else {
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      }
      ag_tile_lowered *lw = lower_file(path, err, sizeof err);
      /* a shared tile no wgmma descriptor can read (wgmma-swizzle.mut): the lowering
       * refuses it as the checker does, naming the element */
      if (!lw && pass == 1 && strstr(err, "has no wgmma descriptor: the tile is no canonical"))
        continue;
      CHECK(lw != NULL);
      if (!lw) {
        printf("  %s: %s\n", e->d_name, err);
        continue;
      }
      int ok = assemble(e->d_name, lw->cuda, lw->len, ptxas, tmp);
      CHECK(ok);
      n++;
      ag_tile_lowered_free(lw);
    }
    closedir(dp);
  }
  CHECK(n >= 23); /* 2 examples, 18 planted bugs, 3 variations */
  printf("  %d lowered programs assembled\n", n);
}

TEST(test_ptx_cache) {
  ag_diags d;
  ag_diags_init(&d);
  ag_str a = AG_STR_INIT, b = AG_STR_INIT, c = AG_STR_INIT;
  const char *src = "extern \"C\" __global__ void k(float *p) { p[threadIdx.x] = 1.0f; }\n";
  int cached = -1;
  if (ag_tile_nvrtc_ptx(src, strlen(src), NULL, &d, &c, &cached) == AG_EUNSUPPORTED) {
    SKIP("argus was built without NVRTC");
    goto out;
  }
  char tmp[] = "/tmp/test_tile_lower_cache_XXXXXX";
  CHECK(mkdtemp(tmp) != NULL);
  setenv("ARGUS_CACHE_DIR", tmp, 1);
  unsetenv("ARGUS_PTX_CACHE");
  CHECK_EQ_INT(ag_tile_nvrtc_ptx(src, strlen(src), NULL, &d, &a, &cached), 0);
  CHECK_EQ_INT(cached, 0);
  CHECK_EQ_INT(ag_tile_nvrtc_ptx(src, strlen(src), NULL, &d, &b, &cached), 0);
  CHECK_EQ_INT(cached, 1);
  CHECK_EQ_STR(ag_str_cstr(&a), ag_str_cstr(&b));
  /* another source misses; the cache off misses */
  const char *src2 = "extern \"C\" __global__ void k(float *p) { p[threadIdx.x] = 2.0f; }\n";
  ag_str_clear(&c);
  CHECK_EQ_INT(ag_tile_nvrtc_ptx(src2, strlen(src2), NULL, &d, &c, &cached), 0);
  CHECK_EQ_INT(cached, 0);
  setenv("ARGUS_PTX_CACHE", "0", 1);
  ag_str_clear(&c);
  CHECK_EQ_INT(ag_tile_nvrtc_ptx(src, strlen(src), NULL, &d, &c, &cached), 0);
  CHECK_EQ_INT(cached, 0);
  unsetenv("ARGUS_PTX_CACHE");
  /* a source NVRTC rejects is AG_EJIT with its log */
  ag_str_clear(&c);
  CHECK_EQ_INT(ag_tile_nvrtc_ptx("this is not C", 13, NULL, &d, &c, &cached), AG_EJIT);
  CHECK(d.items.n > 0);
out:
  ag_str_release(&a);
  ag_str_release(&b);
  ag_str_release(&c);
  ag_diags_release(&d);
}


/* Role markers: a branch on a warp role (a condition over the warp index,
 * threadIdx.x / 32) is a role region, each branch its own; a branch on the
 * lane, on a mix of both, on a run-time value or on loop variables alone
 * is not. */
TEST(test_role_markers) {
  char err[512];
  const char *head = "@threads(128)\n"
                     "def k(X: Tensor(N, f32)):\n"
                     "    tid = threadIdx.x\n"
                     "    wid = tid / 32\n"
                     "    lane = tid % 32\n";
  struct {
    const char *body;
    int role;
  } cases[] = {
      {"    if wid < 2:\n        X[tid] = 1.0\n    else:\n        X[tid] = 2.0\n", 2},
      {"    if tid / 64 == 1:\n        X[tid] = 1.0\n", 1},
      {"    if (tid >> 5) != 3 and blockIdx.x < N:\n        X[tid] = 1.0\n", 1},
      {"    for i in range(4):\n        if wid == i:\n            X[tid] = 1.0\n", 1},
      {"    if lane == 0:\n        X[tid] = 1.0\n", 0},
      {"    if wid < 2 and lane < 4:\n        X[tid] = 1.0\n", 0},
      {"    if tid / 16 == 1:\n        X[tid] = 1.0\n", 0},
      {"    if (tid + 16) / 32 == 1:\n        X[tid] = 1.0\n", 0},
      {"    if blockIdx.x < 2:\n        X[tid] = 1.0\n", 0},
      {"    for i in range(4):\n        if i < 2:\n            X[tid] = 1.0\n", 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[1024];
    snprintf(text, sizeof text, "%s%s", head, cases[i].body);
    ag_tile_lowered *l = lower_text(text, NULL, err, sizeof err);
    CHECK(l != NULL);
    if (!l) {
      fprintf(stderr, "case %zu: %s\n", i, err);
      continue;
    }
    int line = 6 + (strstr(cases[i].body, "for ") != NULL);
    char then[64], els[64];
    snprintf(then, sizeof then, "ARGUS_ROLE(role_%d);\n", line);
    snprintf(els, sizeof els, "ARGUS_ROLE(role_%d_else);", line);
    int got = count(l->cuda, "ARGUS_ROLE(");
    if (got != cases[i].role)
      fprintf(stderr, "case %zu:\n%s\n", i, l->cuda);
    CHECK_EQ_INT(got, cases[i].role);
    if (cases[i].role) {
      /* the role labels the branch, and a region of its name spans it */
      char span[128];
      CHECK_CONTAINS(l->cuda, then);
      snprintf(span, sizeof span, "ARGUS_ROLE(role_%d);\n    ARGUS_BEGIN(role_%d);", line, line);
      if (line == 6)
        CHECK_CONTAINS(l->cuda, span);
      snprintf(span, sizeof span, "ARGUS_END(role_%d);", line);
      CHECK_CONTAINS(l->cuda, span);
      int found = 0;
      for (int r = 0; r < l->kernels[0].nregions; r++)
        found |= strstr(l->kernels[0].regions[r], "/role_") != NULL;
      CHECK(found);
    }
    if (cases[i].role == 2)
      CHECK_CONTAINS(l->cuda, els);
    ag_tile_lowered_free(l);
  }
  /* rows of 16 threads: threadIdx.x / 32 is no warp index */
  ag_tile_lowered *l = lower_text("@threads(16, 8)\ndef k(X: Tensor(N, f32)):\n"
                                  "    if threadIdx.x / 32 == 0:\n        X[threadIdx.x] = 1.0\n"
                                  "    if threadIdx.y == 0:\n        X[threadIdx.x] = 1.0\n",
                                  NULL, err, sizeof err);
  CHECK(l != NULL);
  if (l)
    CHECK_EQ_INT(count(l->cuda, "ARGUS_ROLE("), 0);
  ag_tile_lowered_free(l);
  /* rows of whole warps: threadIdx.y is a warp index */
  l = lower_text("@threads(32, 4)\ndef k(X: Tensor(N, f32)):\n"
                 "    if threadIdx.y == 0:\n        X[threadIdx.x] = 1.0\n",
                 NULL, err, sizeof err);
  CHECK(l != NULL);
  if (l)
    CHECK_EQ_INT(count(l->cuda, "ARGUS_ROLE(role_3);"), 1);
  ag_tile_lowered_free(l);
  /* no markers: no roles either */
  ag_diags d;
  ag_diags_init(&d);
  ag_tile_program *p = NULL;
  char text[1024];
  snprintf(text, sizeof text, "%s%s", head, cases[0].body);
  CHECK_EQ_INT(ag_tile_parse(text, strlen(text), "t.tile", &d, &p), 0);
  ag_tile_lower_opts o;
  memset(&o, 0, sizeof o);
  o.no_markers = 1;
  l = NULL;
  CHECK_EQ_INT(ag_tile_lower(p, &o, &d, &l), 0);
  if (l)
    CHECK_EQ_INT(count(l->cuda, "ARGUS_ROLE(") + count(l->cuda, "ARGUS_BEGIN("), 0);
  ag_tile_lowered_free(l);
  ag_tile_program_free(p);
  ag_diags_release(&d);
}

RUN_TESTS(T(test_gemm_source), T(test_attention_source), T(test_errors_at_the_line),
          T(test_checked_forms_lower), T(test_loop_carried), T(test_long_loops_stay_loops),
          T(test_region_statement), T(test_role_markers), T(test_cli_lower),
          T(test_examples_assemble),
          T(test_ptx_cache))
