/*
 * test_ptx_roundtrip.c — golden tests over the whole PTX corpus: parse then
 * print is byte-identical (library and `argus ptx` compared with diff), the
 * printed and an edited module assemble with ptxas, and a deliberately
 * broken module does not (so the ptxas check can fail).
 */
#include "argus/ptx.h"
#include "check.h"
#include "corpus.h"

#include <unistd.h>

static corpus_list corpus;

static int run_ok(const char *const *argv, ag_str *err) {
  ag_proc_opts o;
  memset(&o, 0, sizeof o);
  o.argv = argv;
  o.capture_err = err;
  o.timeout_s = 120;
  ag_proc_result r;
  if (ag_proc_run(&o, &r))
    return -1;
  return r.exited && r.exit_code == 0;
}

static char *ptxas(void) {
  char *p = ag_which("ptxas");
  if (!p && access("/usr/local/cuda/bin/ptxas", X_OK) == 0)
    p = ag_strdup("/usr/local/cuda/bin/ptxas");
  return p;
}

TEST(corpus_present) {
  /* the examples' PTX must be there whenever nvcc was found at build time */
  int want = access("/usr/local/cuda/bin/nvcc", X_OK) == 0 ? 3 : 0;
  int built = 0;
  for (size_t i = 0; i < corpus.n; i++)
    built += strstr(corpus.v[i], "/tests/data/ptx/hand/") == NULL &&
             strstr(corpus.v[i], "/tests/data/ptx/triton/") == NULL;
  CHECK(built >= want);
  CHECK(corpus.n >= 2); /* the hand-written files at least */
}

TEST(library_round_trip) {
  for (size_t i = 0; i < corpus.n; i++) {
    char *text;
    size_t len;
    CHECK_EQ_INT(ag_file_read(corpus.v[i], &text, &len), 0);
    ag_diags d;
    ag_diags_init(&d);
    ag_ptx_module *m;
    int rc = ag_ptx_parse(text, len, corpus.v[i], &d, &m);
    if (rc) {
      ag_str s = AG_STR_INIT;
      ag_diags_format(&d, &s);
      fprintf(stderr, "%s", ag_str_cstr(&s));
      ag_str_release(&s);
    }
    CHECK_EQ_INT(rc, 0);
    if (!rc) {
      ag_str out = AG_STR_INIT;
      CHECK_EQ_INT(ag_ptx_print(m, &out), 0);
      CHECK_EQ_INT(out.len, len);
      CHECK(out.len == len && memcmp(out.p, text, len) == 0);
      /* deliberately wrong: an edited module must print differently */
      ag_ptx_stmt *s = m->first;
      while (s && s->kind != AG_PTX_INSTR)
        s = s->next;
      if (s) {
        ag_ptx_stmt *a, *b;
        CHECK_EQ_INT(ag_ptx_parse_snippet(m, s->func, "\tmov.u32 %r1, 7;", &d, &a, &b), 0);
        ag_ptx_replace(m, s, a, b);
        ag_str out2 = AG_STR_INIT;
        ag_ptx_print(m, &out2);
        CHECK(out2.len != len || memcmp(out2.p, text, len) != 0);
        ag_str_release(&out2);
      }
      ag_str_release(&out);
      ag_ptx_module_free(m);
    }
    ag_diags_release(&d);
    ag_free(text);
  }
}

/* `argus ptx FILE` output compared with the input by diff(1) */
TEST(cli_round_trip_diff) {
  const char *bin = getenv("ARGUS_BIN");
  if (!bin)
    return;
  char *diff = ag_which("diff");
  if (!diff)
    return;
  for (size_t i = 0; i < corpus.n; i++) {
    char out[] = "/tmp/argus-rt-XXXXXX";
    int fd = mkstemp(out);
    CHECK(fd >= 0);
    close(fd);
    const char *argv[] = {bin, "ptx", corpus.v[i], NULL};
    ag_proc_opts o;
    memset(&o, 0, sizeof o);
    o.argv = argv;
    o.stdout_path = out;
    o.timeout_s = 60;
    ag_proc_result r;
    CHECK_EQ_INT(ag_proc_run(&o, &r), 0);
    CHECK(r.exited && r.exit_code == 0);
    const char *dargv[] = {diff, "-q", corpus.v[i], out, NULL};
    ag_str err = AG_STR_INIT;
    CHECK_EQ_INT(run_ok(dargv, &err), 1);
    ag_str_release(&err);
    unlink(out);
  }
  ag_free(diff);
}

static int assemble(const char *as, const char *text, size_t len, ag_str *err) {
  char in[] = "/tmp/argus-as-XXXXXX.ptx", outp[] = "/tmp/argus-as-XXXXXX.cubin";
  int fd = mkstemps(in, 4), fd2 = mkstemps(outp, 6);
  if (fd < 0 || fd2 < 0)
    return -1;
  close(fd2);
  if (write(fd, text, len) != (ssize_t)len) {
    close(fd);
    return -1;
  }
  close(fd);
  const char *argv[] = {as, "-arch=sm_90a", "-o", outp, in, NULL};
  int ok = run_ok(argv, err);
  unlink(in);
  unlink(outp);
  return ok;
}

TEST(ptxas_accepts_printed_and_edited) {
  char *as = ptxas();
  if (!as) {
    printf("ptxas not found: skipped\n");
    exit(77);
  }
  for (size_t i = 0; i < corpus.n; i++) {
    ag_diags d;
    ag_diags_init(&d);
    ag_ptx_module *m;
    if (ag_ptx_parse_file(corpus.v[i], &d, &m)) {
      CHECK(0);
      continue;
    }
    ag_str out = AG_STR_INIT, err = AG_STR_INIT;
    ag_ptx_print(m, &out);
    int ok = assemble(as, out.p, out.len, &err);
    if (ok != 1)
      fprintf(stderr, "%s:\n%s\n", corpus.v[i], ag_str_cstr(&err));
    CHECK_EQ_INT(ok, 1);
    /* edit every kernel: a register declaration after '{' and a clock read
     * before the first instruction; the result must still assemble */
    int edited = 0;
    for (int f = 0; f < m->nfuncs; f++) {
      ag_ptx_func *fn = m->funcs[f];
      if (fn->is_decl)
        continue;
      ag_ptx_stmt *a, *b, *ins = fn->body_open->next;
      while (ins && ins->kind != AG_PTX_INSTR)
        ins = ins->next;
      if (!ins)
        continue;
      CHECK_EQ_INT(ag_ptx_parse_snippet(m, fn, "\t.reg .b64 %argus_t0;", &d, &a, &b), 0);
      ag_ptx_insert_after(m, fn->body_open, a, b);
      CHECK_EQ_INT(ag_ptx_parse_snippet(m, fn, "\tmov.u64 \t%argus_t0, %clock64; // probe", &d,
                                        &a, &b), 0);
      ag_ptx_insert_before(m, ins, a, b);
      edited++;
    }
    ag_str_clear(&out);
    ag_str_clear(&err);
    ag_ptx_print(m, &out);
    CHECK(strstr(ag_str_cstr(&out), "%argus_t0, %clock64") != NULL || !edited);
    ok = assemble(as, out.p, out.len, &err);
    if (ok != 1)
      fprintf(stderr, "edited %s:\n%s\n", corpus.v[i], ag_str_cstr(&err));
    CHECK_EQ_INT(ok, 1);
    /* deliberately wrong: an undeclared register must be rejected by ptxas */
    if (edited) {
      ag_str bad = AG_STR_INIT;
      ag_str_append(&bad, out.p, out.len);
      char *p = strstr(bad.p, "%argus_t0, %clock64");
      memcpy(p, "%argus_tX", 9);
      CHECK_EQ_INT(assemble(as, bad.p, bad.len, &err), 0);
      ag_str_release(&bad);
    }
    ag_str_release(&out);
    ag_str_release(&err);
    ag_ptx_module_free(m);
    ag_diags_release(&d);
  }
  ag_free(as);
}

int main(int argc, char **argv) {
  corpus_collect(&corpus);
  static const chk_case cases[] = {T(corpus_present), T(library_round_trip),
                                   T(cli_round_trip_diff), T(ptxas_accepts_printed_and_edited)};
  int passed = 0, failed = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (argc > 1 ? strcmp(argv[1], cases[i].name) != 0
                 : cases[i].fn == ptxas_accepts_printed_and_edited)
      continue; /* ptxas runs as its own ctest (test_ptx_ptxas) */
    chk__cur_failed = 0;
    cases[i].fn();
    if (chk__cur_failed) {
      failed++;
      fprintf(stderr, "FAIL %s\n", cases[i].name);
    } else {
      passed++;
    }
  }
  printf("corpus: %zu files\n%d passed, %d failed\n", corpus.n, passed, failed);
  corpus_free(&corpus);
  return failed ? 1 : 0;
}
