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
  CHECK_EQ_INT(run(b, &out, &err), 1);
  CHECK_CONTAINS(ag_str_cstr(&err), "cannot read PTX file");
  /* malformed spec: diagnostic with line and column */
  char spec[] = "/tmp/argus-spec-XXXXXX.json";
  int fd = mkstemps(spec, 5);
  const char *txt = "{\"name\": \"x\",\n \"module\": {\"ptx\": \"k.ptx\"},\n \"runn\": []}\n";
  CHECK(fd >= 0 && write(fd, txt, strlen(txt)) == (ssize_t)strlen(txt));
  close(fd);
  const char *c[] = {bin, "regions", spec, NULL};
  ag_str_clear(&err);
  CHECK_EQ_INT(run(c, &out, &err), 1);
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
  CHECK_EQ_INT(run(d, &out, &err), 1);
  CHECK_CONTAINS(ag_str_cstr(&err), ":7:2: error: region 'a' begun at line 6 has no end");
  CHECK_CONTAINS(ag_str_cstr(&err), "function 'k'");
  unlink(ptx);
  ag_str_release(&out);
  ag_str_release(&err);
}

RUN_TESTS(T(golden_text), T(spec_json), T(errors))
