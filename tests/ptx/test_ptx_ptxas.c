/*
 * test_ptx_ptxas.c — every corpus module, printed by Argus and edited (a
 * register declared, a clock read inserted in every function), assembles
 * with ptxas -arch=sm_90a; a deliberately broken edit does not, so the
 * check can fail. Skips (77) when ptxas is absent.
 */
#include "argus/ptx.h"
#include "check.h"
#include "corpus.h"

#define corpus (*the_corpus())

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
  int ok = run_capture(argv, NULL, err, NULL) == 0;
  unlink(in);
  unlink(outp);
  return ok;
}

TEST(ptxas_accepts_printed_and_edited) {
  char *as = cuda_tool("ptxas");
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

RUN_TESTS(T(ptxas_accepts_printed_and_edited))
