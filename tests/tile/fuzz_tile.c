/*
 * fuzz_tile.c — libFuzzer target for the tile DSL: any input must parse or
 * be rejected with diagnostics; a parsed program must print and parse back
 * to the same text; and interpreting it (no solver, a small step budget)
 * must finish with obligations or diagnostics, never a crash or a hang.
 */
#include "../../src/tile/check/check_int.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1 << 16)
    return 0;
  ag_diags d;
  ag_diags_init(&d);
  ag_tile_program *p = NULL;
  int rc = ag_tile_parse((const char *)data, size, "fuzz.tile", &d, &p);
  if (rc == 0) {
    ag_str a = AG_STR_INIT, b = AG_STR_INIT;
    ag_tile_print_program(p, &a);
    ag_tile_program *q = NULL;
    ag_diags d2;
    ag_diags_init(&d2);
    if (ag_tile_parse(a.p ? a.p : "", a.len, "again.tile", &d2, &q))
      abort(); /* printed text must parse */
    ag_tile_print_program(q, &b);
    if (strcmp(ag_str_cstr(&a), ag_str_cstr(&b)))
      abort(); /* and print the same */
    ag_tile_program_free(q);
    ag_diags_release(&d2);
    ag_str_release(&a);
    ag_str_release(&b);
    ag_tile_check_opts o;
    memset(&o, 0, sizeof o);
    o.max_steps = 20000;
    for (int i = 0; i < p->top.n; i++) {
      if (p->top.v[i]->kind != AG_TN_KERNEL)
        continue;
      int rr;
      ag__ck *c = ag__ck_run(p, p->top.v[i], &o, &d, &rr);
      if (!c && rr != AG_EPARSE && rr != AG_ENOMEM)
        abort();
      if (!c && rr == AG_EPARSE && d.nerrors == 0)
        abort(); /* a rejected program says why */
      ag__ck_free(c);
    }
  } else if (rc != AG_EPARSE || d.nerrors == 0) {
    abort();
  }
  ag_tile_program_free(p);
  ag_diags_release(&d);
  return 0;
}
