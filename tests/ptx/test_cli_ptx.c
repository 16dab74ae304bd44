/*
 * test_cli_ptx.c — `argus regions` and `argus ptx` end to end: golden text
 * output compared with diff, JSON from a program spec compiled by nvcc,
 * and the exit codes and messages of bad input (usage 2, failures 1).
 */
#include "argus/core.h"
#include "check.h"
#include "corpus.h"

#include <unistd.h>

static int run(const char *const *argv, ag_str *out, ag_str *err) {
  return run_capture(argv, out, err, NULL);
}

static char *src(const char *rel) {
  static char buf[8][4096];
  static int k;
  char *b = buf[k++ % 8];
  snprintf(b, 4096, "%s/%s", getenv("ARGUS_SOURCE_DIR"), rel);
  return b;
}

/* output of argv compared with a golden file by diff(1) */
static void golden(const char *const *argv, const char *gold) {
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  CHECK_EQ_INT(run(argv, &out, &err), 0);
  char tmp[] = "/tmp/argus-golden-XXXXXX";
  int fd = mkstemp(tmp);
  CHECK(fd >= 0 && write(fd, out.p ? out.p : "", out.len) == (ssize_t)out.len);
  close(fd);
  char *diff = ag_which("diff");
  const char *dargv[] = {diff, "-u", gold, tmp, NULL};
  ag_str dout = AG_STR_INIT;
  int rc = run(dargv, &dout, &err);
  if (rc != 0)
    fprintf(stderr, "%s", ag_str_cstr(&dout));
  CHECK_EQ_INT(rc, 0);
  unlink(tmp);
  ag_free(diff);
  ag_str_release(&out);
  ag_str_release(&err);
  ag_str_release(&dout);
}

TEST(golden_text) {
  const char *bin = getenv("ARGUS_BIN");
  const char *a1[] = {bin, "regions", src("tests/data/ptx/hand/triton_style.ptx"), NULL};
  golden(a1, src("tests/data/ptx/golden/triton_style.regions.txt"));
  const char *a2[] = {bin, "ptx", "--cfg", src("tests/data/ptx/hand/cfg_cases.ptx"), NULL};
  golden(a2, src("tests/data/ptx/golden/cfg_cases.cfg.txt"));
}

TEST(spec_json) {
  /* nvcc where argus looks (ag_spec_nvcc): $ARGUS_NVCC when set, else PATH
   * or /usr/local/cuda */
  const char *e = getenv("ARGUS_NVCC");
  char *w = e && *e ? NULL : ag_which("nvcc");
  int have = e && *e ? access(e, X_OK) == 0 : w || access("/usr/local/cuda/bin/nvcc", X_OK) == 0;
  ag_free(w);
  if (!have)
    SKIP("no nvcc: the spec cannot be compiled");
  const char *bin = getenv("ARGUS_BIN");
  const char *a[] = {bin, "--json", "regions", src("examples/overhead/spec.json"), NULL};
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  CHECK_EQ_INT(run(a, &out, &err), 0);
  json_error_t je;
  json_t *j = json_loads(ag_str_cstr(&out), 0, &je);
  CHECK(j != NULL);
  json_t *regs = json_object_get(j, "regions");
  CHECK_EQ_INT(json_array_size(regs), 6);
  int steps = 0;
  for (size_t i = 0; i < json_array_size(regs); i++) {
    json_t *r = json_array_get(regs, i);
    const char *q = json_string_value(json_object_get(r, "qname"));
    if (q && strstr(q, "/work/step")) {
      steps++;
      const char *it = json_string_value(json_object_get(r, "iter"));
      CHECK(it && it[0] == '%');
    }
  }
  CHECK_EQ_INT(steps, 2);
  json_decref(j);
  /* a .cu given directly, with flags */
  ag_str_clear(&out);
  const char *b[] = {bin, "regions", "--flags", "-arch=sm_90a -O3",
                     src("examples/gemm_tma/gemm_tma.cu"), NULL};
  CHECK_EQ_INT(run(b, &out, &err), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "tma_load");
  CHECK_CONTAINS(ag_str_cstr(&out), "bar [%r");
  /* a compile error reports nvcc's message */
  ag_str_clear(&err);
  const char *c[] = {bin, "regions", "--flags", "-arch=sm_1", src("examples/gemm_tma/gemm_tma.cu"),
                     NULL};
  CHECK_EQ_INT(run(c, &out, &err), 1);
  CHECK_CONTAINS(ag_str_cstr(&err), "nvcc failed");
  ag_str_release(&out);
  ag_str_release(&err);
}

TEST(errors) {
  const char *bin = getenv("ARGUS_BIN");
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  const char *a[] = {bin, "regions", NULL};
  CHECK_EQ_INT(run(a, &out, &err), 2);
  const char *b[] = {bin, "ptx", "/nonexistent.ptx", NULL};
  ag_str_clear(&err);
  CHECK_EQ_INT(run(b, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "cannot read '/nonexistent.ptx': no such file");
  /* malformed spec: diagnostic with line and column */
  char spec[] = "/tmp/argus-spec-XXXXXX.json";
  int fd = mkstemps(spec, 5);
  const char *txt = "{\"name\": \"x\",\n \"module\": {\"ptx\": \"k.ptx\"},\n \"runn\": []}\n";
  CHECK(fd >= 0 && write(fd, txt, strlen(txt)) == (ssize_t)strlen(txt));
  close(fd);
  const char *c[] = {bin, "regions", spec, NULL};
  ag_str_clear(&err);
  CHECK_EQ_INT(run(c, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), ":3:2: error: unknown key 'runn'");
  unlink(spec);
  /* invalid markers: the region, function and line are named */
  char ptx[] = "/tmp/argus-bad-XXXXXX.ptx";
  fd = mkstemps(ptx, 4);
  const char *p = ".version 8.4\n.target sm_90a\n.address_size 64\n.entry k()\n{\n"
                  "\t// @argus begin - a\n\tret;\n}\n";
  CHECK(fd >= 0 && write(fd, p, strlen(p)) == (ssize_t)strlen(p));
  close(fd);
  const char *d[] = {bin, "regions", ptx, NULL};
  ag_str_clear(&err);
  CHECK_EQ_INT(run(d, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), ":7:2: error: region 'a' begun at line 6 has no end");
  CHECK_CONTAINS(ag_str_cstr(&err), "function 'k'");
  unlink(ptx);
  ag_str_release(&out);
  ag_str_release(&err);
}

/* Writes text to a fresh /tmp file with suffix; returns its path (static). */
static const char *tmpfile_with(const char *suffix, const char *text, size_t len) {
  static char paths[8][64];
  static int k;
  char *p = paths[k++ % 8];
  snprintf(p, 64, "/tmp/argus-diag-XXXXXX%s", suffix);
  int fd = mkstemps(p, (int)strlen(suffix));
  CHECK(fd >= 0 && write(fd, text, len) == (ssize_t)len);
  close(fd);
  return p;
}

#define HDR ".version 8.4\n.target sm_90a\n.address_size 64\n"

/* PTX diagnostics as a user sees them: the right line and column, the
 * brace that is not closed, a bounded echo of a huge line, no silent
 * success on an empty file, exit 2 for all of them. */
TEST(ptx_diagnostics) {
  const char *bin = getenv("ARGUS_BIN");
  ag_str out = AG_STR_INIT, err = AG_STR_INIT, t = AG_STR_INIT;
  /* a NUL byte on line 30, column 4 */
  ag_str_puts(&t, HDR ".visible .entry k()\n{\n");
  for (int l = 6; l < 30; l++)
    ag_str_puts(&t, "\tret;\n");
  ag_str_puts(&t, "\tre");
  ag_str_putc(&t, 0);
  ag_str_puts(&t, "t;\n}\n");
  const char *nul = tmpfile_with(".ptx", t.p, t.len);
  const char *a[] = {bin, "ptx", nul, NULL};
  CHECK_EQ_INT(run(a, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), ":30:4: error: NUL byte in PTX text");
  unlink(nul);
  /* an unclosed '{': where it was opened */
  const char *uc =
      HDR ".visible .entry k()\n{\n\t{\n\tret;\n}\n.visible .entry k2()\n{\n\tret;\n}\n";
  const char *unc = tmpfile_with(".ptx", uc, strlen(uc));
  const char *b[] = {bin, "ptx", unc, NULL};
  CHECK_EQ_INT(run(b, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), ":9:1: error: '{' opened at 5:1 in function 'k' is not "
                                    "closed before '.visible' starts another function");
  unlink(unc);
  /* a 200 KB line: the diagnostic stays short, the caret under the column */
  ag_str_clear(&t);
  ag_str_puts(&t, HDR ".visible .entry k()\n{\n\t");
  while (t.len < 200000)
    ag_str_puts(&t, "add.s32 %r1, %r1, 1; ");
  size_t col = t.len - (strrchr(t.p, '\n') - t.p);
  ag_str_puts(&t, "@@ ;\n}\n");
  const char *lng = tmpfile_with(".ptx", t.p, t.len);
  const char *c[] = {bin, "ptx", lng, NULL};
  CHECK_EQ_INT(run(c, &out, &err), 2);
  char want[64];
  snprintf(want, sizeof want, ":6:%zu: error:", col + 1); /* at the second '@' */
  CHECK_CONTAINS(ag_str_cstr(&err), want);
  CHECK_CONTAINS(ag_str_cstr(&err), "\n    ...");
  CHECK_CONTAINS(ag_str_cstr(&err), "@@ ;\n");
  if (err.len >= 1000)
    fprintf(stderr, "%zu bytes of diagnostics\n", err.len);
  CHECK(err.len < 1000);
  unlink(lng);
  /* an empty file is an error, not an empty module */
  const char *emp = tmpfile_with(".ptx", "", 0);
  const char *d[] = {bin, "ptx", emp, NULL};
  CHECK_EQ_INT(run(d, &out, &err), 2);
  CHECK_EQ_INT(out.len, 0);
  CHECK_CONTAINS(ag_str_cstr(&err), ":1:1: error: no PTX module here");
  const char *e[] = {bin, "regions", emp, NULL};
  CHECK_EQ_INT(run(e, &out, &err), 2);
  unlink(emp);
  /* a module with no kernel has no regions: said, exit 2 */
  const char *nk = HDR ".func f()\n{\n\tret;\n}\n";
  const char *nkp = tmpfile_with(".ptx", nk, strlen(nk));
  const char *f[] = {bin, "regions", nkp, NULL};
  CHECK_EQ_INT(run(f, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "no kernel in '");
  unlink(nkp);
  /* a directory says it is one */
  const char *g[] = {bin, "ptx", "/tmp", NULL};
  CHECK_EQ_INT(run(g, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "cannot read '/tmp': it is a directory, not a file");
  ag_str_release(&t);
  ag_str_release(&out);
  ag_str_release(&err);
}

/* A marker's iteration operand is checked by discovery, not later by the
 * variant. */
TEST(marker_operands) {
  const char *bin = getenv("ARGUS_BIN");
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  const char *bad = HDR ".visible .entry k()\n{\n\t.reg .b32 %r<2>;\n"
                        "\t// @argus begin - a notareg\n"
                        "\tmov.u32 %r1, 1;\n\t// @argus end - a\n\tret;\n}\n";
  const char *p = tmpfile_with(".ptx", bad, strlen(bad));
  const char *a[] = {bin, "regions", p, NULL};
  CHECK_EQ_INT(run(a, &out, &err), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), ":7:2: error: iteration operand 'notareg' of region 'a' is "
                                    "not an integer or a 16-, 32- or 64-bit register declared "
                                    "in 'k'");
  unlink(p);
  /* deliberately right: a declared register is accepted */
  const char *good = HDR ".visible .entry k()\n{\n\t.reg .b32 %r<2>;\n"
                         "\t// @argus begin - a %r1\n"
                         "\tmov.u32 %r1, 1;\n\t// @argus end - a\n\tret;\n}\n";
  p = tmpfile_with(".ptx", good, strlen(good));
  const char *b[] = {bin, "regions", p, NULL};
  CHECK_EQ_INT(run(b, &out, &err), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "iter %r1");
  unlink(p);
  ag_str_release(&out);
  ag_str_release(&err);
}

/* --json --cfg: the CFGs are in the JSON */
TEST(json_cfg) {
  const char *bin = getenv("ARGUS_BIN");
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  const char *a[] = {bin, "--json", "ptx", "--cfg", src("tests/data/ptx/hand/cfg_cases.ptx"),
                     NULL};
  CHECK_EQ_INT(run(a, &out, &err), 0);
  json_t *j = json_loads(ag_str_cstr(&out), 0, NULL);
  json_t *fa = json_object_get(j, "functions");
  CHECK(json_array_size(fa) > 0);
  size_t withcfg = 0, loops = 0;
  for (size_t i = 0; i < json_array_size(fa); i++) {
    json_t *g = json_object_get(json_array_get(fa, i), "cfg");
    if (!g)
      continue;
    withcfg++;
    CHECK_EQ_STR(json_string_value(json_object_get(g, "function")),
                 json_string_value(json_object_get(json_array_get(fa, i), "name")));
    CHECK(json_array_size(json_object_get(g, "blocks")) >= 2);
    loops += json_array_size(json_object_get(g, "loops"));
  }
  CHECK(withcfg > 0);
  CHECK(loops > 0);
  /* deliberately right: without --cfg there is none */
  const char *b[] = {bin, "--json", "ptx", src("tests/data/ptx/hand/cfg_cases.ptx"), NULL};
  CHECK_EQ_INT(run(b, &out, &err), 0);
  json_decref(j);
  j = json_loads(ag_str_cstr(&out), 0, NULL);
  CHECK(json_object_get(json_array_get(json_object_get(j, "functions"), 0), "cfg") == NULL);
  json_decref(j);
  ag_str_release(&out);
  ag_str_release(&err);
}

RUN_TESTS(T(golden_text), T(spec_json), T(errors), T(ptx_diagnostics), T(marker_operands),
          T(json_cfg))
