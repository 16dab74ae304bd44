/*
 * test_tile_spec.c — program specs naming a tile program ({"tile": ...},
 * docs/harness.md), on the CPU: the builder lowers the program to a PTX file
 * and makes `argus run` its harness; bad input (a program that does not
 * check, a missing size, sizes that violate an `assume`, keys of the other
 * kind of spec) is refused with the reason; and `argus plan` / `argus
 * regions` on a tile spec see the emitted regions. NVRTC is needed for the
 * successful loads (77 without it).
 */
#include "argus/spec.h"
#include "argus/tile_run.h"
#include "check.h"

#include <stdlib.h>
#include <unistd.h>

static const char *src_file(const char *rel) {
  static char buf[1024];
  const char *s = getenv("ARGUS_SOURCE_DIR");
  snprintf(buf, sizeof buf, "%s/%s", s ? s : ".", rel);
  return buf;
}
static const char *bin(void) {
  const char *b = getenv("ARGUS_BIN");
  return b ? b : "argus";
}
static const char *write_tmp(const char *name, const char *text) {
  static char buf[4][1024];
  static int k;
  const char *b = getenv("ARGUS_BUILD_DIR");
  char *p = buf[k++ % 4];
  snprintf(p, 1024, "%s/%s", b ? b : ".", name);
  ag_file_write_atomic(p, text, strlen(text));
  return p;
}

/* Loads spec text (at ARGUS_BUILD_DIR/<name>): the code, the diagnostics in *msg. */
static int load(const char *name, const char *text, ag_spec **s, ag_str *msg) {
  const char *path = write_tmp(name, text);
  ag_diags d;
  ag_diags_init(&d);
  int rc = ag_spec_load(path, &d, s);
  ag_str_clear(msg);
  ag_diags_format(&d, msg);
  ag_diags_release(&d);
  return rc;
}

/* The builder registered, as argus does; 0 without NVRTC. */
static int setup(void) {
  ag_spec_set_tile_builder(ag_tile_spec_build, (void *)bin());
  ag_diags d;
  ag_diags_init(&d);
  ag_str p = AG_STR_INIT;
  int rc = ag_tile_nvrtc_ptx("extern \"C\" __global__ void k() {}\n", 35, NULL, &d, &p, NULL);
  ag_str_release(&p);
  ag_diags_release(&d);
  return rc != AG_EUNSUPPORTED;
}
#define SETUP()                                                                                \
  do {                                                                                         \
    if (!setup())                                                                              \
      SKIP("no NVRTC in this build");                                                          \
  } while (0)

static const char copy_tile[] = "@threads(32)\n"
                                "@grid(N / 32)\n"
                                "def copy(X: Tensor(N, f32), Y: Tensor(N, f32)):\n"
                                "    assume N % 32 == 0\n"
                                "    T_X = X[i] -> (i,)\n"
                                "    t = blockIdx.x * 32 + threadIdx.x\n"
                                "    v = X[t]\n"
                                "    assert tag(v) == (t + 1,)\n"
                                "    Y[t] = v\n";

TEST(test_gemm_spec) {
  SETUP();
  ag_str m = AG_STR_INIT;
  ag_spec *s = NULL;
  char text[2048];
  snprintf(text, sizeof text,
           "{\"tile\": \"%s\", \"kernel\": \"gemm\", \"size\": {\"M\": 128, \"N\": 64}}",
           src_file("examples/tile/gemm.tile"));
  int rc = load("tspec_gemm.json", text, &s, &m);
  if (rc)
    fprintf(stderr, "%s", ag_str_cstr(&m));
  CHECK_EQ_INT(rc, 0);
  CHECK_EQ_STR(s->name, "gemm");
  CHECK(s->ptx != NULL && s->cuda == NULL);
  char *ptx = NULL;
  size_t len = 0;
  CHECK_EQ_INT(ag_file_read(s->ptx, &ptx, &len), 0);
  CHECK_CONTAINS(ptx, ".entry gemm(");
  CHECK_CONTAINS(ptx, "// @argus begin"); /* the lowering's markers, none by hand */
  CHECK_CONTAINS(ptx, " mainloop");
  ag_free(ptx);
  /* the harness is argus run on what was checked */
  CHECK_EQ_INT(s->nrun, 8);
  CHECK_EQ_STR(s->run[0], bin());
  CHECK_EQ_STR(s->run[1], "run");
  CHECK(s->run[2][0] == '/'); /* absolute: the harness runs in the spec's directory */
  CHECK_CONTAINS(s->run[2], "examples/tile/gemm.tile");
  CHECK_EQ_STR(s->run[3], "--kernel");
  CHECK_EQ_STR(s->run[4], "gemm");
  CHECK_EQ_STR(s->run[5], "--size");
  CHECK(!strcmp(s->run[6], "M=128,N=64") || !strcmp(s->run[6], "N=64,M=128"));
  CHECK_EQ_STR(s->run[7], "--unchecked");
  CHECK(s->run[8] == NULL);
  /* the same PTX at the same path the next time (content-addressed) */
  char first[1024];
  snprintf(first, sizeof first, "%s", s->ptx);
  ag_spec_free(s);
  CHECK_EQ_INT(load("tspec_gemm.json", text, &s, &m), 0);
  CHECK_EQ_STR(s->ptx, first);
  ag_spec_free(s);
  /* the cache off: a temporary file, removed with the spec */
  setenv("ARGUS_PTX_CACHE", "0", 1);
  CHECK_EQ_INT(load("tspec_gemm.json", text, &s, &m), 0);
  snprintf(first, sizeof first, "%s", s->ptx);
  CHECK(s->ptx_is_temp);
  CHECK(access(first, R_OK) == 0);
  ag_spec_free(s);
  CHECK(access(first, F_OK) != 0);
  unsetenv("ARGUS_PTX_CACHE");
  /* a const parameter among the sizes; the name from the file without a kernel */
  snprintf(text, sizeof text, "{\"tile\": \"%s\", \"size\": {\"M\": 64, \"N\": 64, \"K\": 64}}",
           src_file("examples/tile/gemm.tile"));
  CHECK_EQ_INT(load("tspec_gemm2.json", text, &s, &m), 0);
  CHECK_EQ_STR(s->name, "gemm");
  CHECK_CONTAINS(s->run[6], "K=64");
  ag_spec_free(s);
  ag_str_release(&m);
}

TEST(test_bad_specs) {
  SETUP();
  ag_str m = AG_STR_INIT;
  ag_spec *s = NULL;
  char gemm[1024], text[2048];
  snprintf(gemm, sizeof gemm, "%s", src_file("examples/tile/gemm.tile"));
  char bad[1024];
  snprintf(bad, sizeof bad, "%s", write_tmp("tspec_bad.tile", copy_tile));
  struct {
    const char *fmt, *file;
    int rc;
    const char *msg;
  } cases[] = {
      /* a program that does not check, naming the assertion */
      {"{\"tile\": \"%s\", \"size\": {\"N\": 64}}", bad, AG_EVIOLATION,
       "tspec_bad.tile:8: 'assert tag(v) == (t + 1,)' is violated"},
      /* a missing size */
      {"{\"tile\": \"%s\", \"size\": {\"M\": 64}}", gemm, AG_EPARSE,
       "needs a value for its size 'N'"},
      {"{\"tile\": \"%s\"}", gemm, AG_EPARSE, "tile spec has no \"size\""},
      /* sizes that violate an assume */
      {"{\"tile\": \"%s\", \"size\": {\"M\": 100, \"N\": 64}}", gemm, AG_EPARSE,
       "gemm.tile:22:5: error: the sizes violate 'assume M % 64 == 0'"},
      {"{\"tile\": \"%s\", \"size\": {\"M\": 64, \"N\": 64, \"Q\": 1}}", gemm, AG_EPARSE, "'Q'"},
      {"{\"tile\": \"%s\", \"size\": {\"M\": -64, \"N\": 64}}", gemm, AG_EPARSE,
       "size 'M' must be a positive integer below 2^32"},
      {"{\"tile\": \"%s\", \"size\": {\"M\": \"64\", \"N\": 64}}", gemm, AG_EPARSE,
       "size 'M' must be a positive integer"},
      {"{\"tile\": \"%s\", \"size\": [64, 64]}", gemm, AG_EPARSE, "\"size\" must be an object"},
      {"{\"tile\": \"%s\", \"kernel\": \"nope\", \"size\": {\"M\": 64}}", gemm, AG_EPARSE,
       "no kernel 'nope'"},
      {"{\"tile\": \"%s\", \"size\": {\"M\": 64, \"N\": 64}, \"unchecked\": 1}", gemm,
       AG_EPARSE, "\"unchecked\" must be true or false"},
      /* the keys of the other kind of spec */
      {"{\"tile\": \"%s\", \"size\": {\"M\": 64, \"N\": 64}, \"run\": [\"./h\"]}", gemm,
       AG_EPARSE, "a tile spec has no \"run\""},
      {"{\"tile\": \"%s\", \"size\": {\"M\": 64, \"N\": 64}, \"module\": {\"ptx\": \"x\"}}",
       gemm, AG_EPARSE, "a tile spec has no \"module\""},
      {"{\"name\": \"x\", \"module\": {\"ptx\": \"x.ptx\"}, \"size\": {\"M\": 1}, \"x\": %s}",
       "1", AG_EPARSE, "\"size\" belongs to a tile spec: it needs \"tile\""},
      {"{\"tile\": \"%s\", \"size\": {\"M\": 64}}", "/nonexistent/x.tile", AG_EPARSE,
       "cannot read the tile program '/nonexistent/x.tile'"},
      {"{\"tile\": %s, \"size\": {\"M\": 64}}", "7", AG_EPARSE, "\"tile\" must be a file name"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    snprintf(text, sizeof text, cases[i].fmt, cases[i].file);
    int rc = load("tspec_bad.json", text, &s, &m);
    if (rc != cases[i].rc || !strstr(ag_str_cstr(&m), cases[i].msg))
      fprintf(stderr, "case %zu: %s\n", i, text);
    CHECK_EQ_INT(rc, cases[i].rc);
    CHECK(s == NULL);
    CHECK_CONTAINS(ag_str_cstr(&m), cases[i].msg);
  }
  /* "unchecked": true lets the program through */
  snprintf(text, sizeof text, "{\"tile\": \"%s\", \"size\": {\"N\": 64}, \"unchecked\": true}",
           bad);
  CHECK_EQ_INT(load("tspec_bad.json", text, &s, &m), 0);
  CHECK_EQ_STR(s ? s->name : "", "tspec_bad");
  ag_spec_free(s);
  /* no builder registered: refused, saying so */
  ag_spec_set_tile_builder(NULL, NULL);
  CHECK_EQ_INT(load("tspec_bad.json", text, &s, &m), AG_EUNSUPPORTED);
  CHECK_CONTAINS(ag_str_cstr(&m), "names a tile program, and this program cannot lower one");
  ag_spec_set_tile_builder(ag_tile_spec_build, (void *)bin());
  ag_str_release(&m);
}

static int run(const char *const *argv, ag_str *out, ag_str *err) {
  ag_str_clear(out);
  ag_str_clear(err);
  ag_proc_opts o = {.argv = argv, .capture_out = out, .capture_err = err, .timeout_s = 120};
  ag_proc_result r;
  if (ag_proc_run(&o, &r) || !r.exited)
    return -1;
  return r.exit_code;
}

/* argus regions / plan on a tile spec: the emitted regions, no markers by hand */
TEST(test_cli) {
  SETUP();
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  char text[2048];
  snprintf(text, sizeof text,
           "{\"tile\": \"%s\", \"kernel\": \"gemm\", \"size\": {\"M\": 64, \"N\": 64}}",
           src_file("examples/tile/gemm.tile"));
  const char *spec = write_tmp("tspec_cli.json", text);
  const char *a1[] = {bin(), "regions", spec, NULL};
  CHECK_EQ_INT(run(a1, &out, &err), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "gemm  id");
  CHECK_CONTAINS(ag_str_cstr(&out), "  prologue  id");
  CHECK_CONTAINS(ag_str_cstr(&out), "  mainloop  id");
  CHECK_CONTAINS(ag_str_cstr(&out), "  epilogue  id");
  char ws[1100];
  snprintf(ws, sizeof ws, "%s/tspec_ws", getenv("ARGUS_BUILD_DIR") ? getenv("ARGUS_BUILD_DIR") : ".");
  const char *a2[] = {bin(), "--workspace", ws, "plan", spec, "--region", "gemm/mainloop",
                      "--signals", "duration", NULL};
  CHECK_EQ_INT(run(a2, &out, &err), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "plan for observe(gemm/mainloop, [duration]");
  /* bad input through the CLI: exit 2 for sizes, 1 for a program that does not check */
  snprintf(text, sizeof text, "{\"tile\": \"%s\", \"size\": {\"M\": 100, \"N\": 64}}",
           src_file("examples/tile/gemm.tile"));
  const char *bad = write_tmp("tspec_cli_bad.json", text);
  const char *a3[] = {bin(), "--workspace", ws, "plan", bad, "--region", "gemm", "--signals",
                      "duration", NULL};
  CHECK_EQ_INT(run(a3, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "the sizes violate 'assume M % 64 == 0'");
  snprintf(text, sizeof text, "{\"tile\": \"%s\", \"size\": {\"N\": 64}}",
           write_tmp("tspec_cli_bad.tile", copy_tile));
  bad = write_tmp("tspec_cli_bad2.json", text);
  const char *a4[] = {bin(), "--workspace", ws, "plan", bad, "--region", "copy", "--signals",
                      "duration", NULL};
  CHECK_EQ_INT(run(a4, &out, &err), 1);
  CHECK_CONTAINS(ag_str_cstr(&err), "does not check");
  ag_str_release(&out);
  ag_str_release(&err);
}

RUN_TESTS(T(test_gemm_spec), T(test_bad_specs), T(test_cli))
