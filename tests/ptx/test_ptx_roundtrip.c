/*
 * test_ptx_roundtrip.c — golden tests over the whole PTX corpus: parse then
 * print is byte-identical (library and `argus ptx` compared with diff), and
 * an edited module prints differently. (ptxas: test_ptx_ptxas.c.)
 */
#include "argus/ptx.h"
#include "check.h"
#include "corpus.h"

#include <unistd.h>

#define corpus (*the_corpus())

TEST(corpus_present) {
  /* the examples' PTX must be there whenever the build made it (nvcc and
   * the CUDA toolkit found: CMake's ARGUS_CORPUS_BUILT) */
#ifdef ARGUS_CORPUS_BUILT
  int want = 3;
#else
  int want = 0;
#endif
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
    SKIP("ARGUS_BIN is not set (run it through ctest)");
  char *diff = ag_which("diff");
  if (!diff)
    SKIP("no diff(1) on PATH");
  for (size_t i = 0; i < corpus.n; i++) {
    char out[] = "/tmp/argus-rt-XXXXXX";
    int fd = mkstemp(out);
    CHECK(fd >= 0);
    close(fd);
    const char *argv[] = {bin, "ptx", corpus.v[i], NULL};
    CHECK_EQ_INT(run_capture(argv, NULL, NULL, out), 0);
    const char *dargv[] = {diff, "-q", corpus.v[i], out, NULL};
    CHECK_EQ_INT(run_capture(dargv, NULL, NULL, NULL), 0);
    unlink(out);
  }
  ag_free(diff);
}

RUN_TESTS(T(corpus_present), T(library_round_trip), T(cli_round_trip_diff))
