/*
 * test_tile_nested.c — nested loop summaries on the issue-23 kernel (docs/check.md,
 * "Nested summaries"): examples/tile/gemm_hopper.tile proved under --symbolic K, and
 * refuted across tiles without its wgmma_wait(0). About 70 s of CPU: a test of its own,
 * left out of the sanitized unit run (tests/tile/CMakeLists.txt).
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tile_util.h"

/* gemm_hopper under --symbolic K (nested summaries: the tile loop j around the k ring kt,
 * docs/check.md "Nested summaries"; --max-steps 8000000, the default memory): proved for every K, and with
 * the wgmma_wait(0) after the k loop removed, refuted across tiles — the next tile's TMA box
 * overwrites a stage the last k-tile's wgmma group may still read (the wait(0) retiring every
 * in-flight read is what proves the correct kernel). */
static ag_tile_report *hopper_symbolic(const char *text) {
  ag_diags d;
  ag_diags_init(&d);
  ag_tile_check_opts o;
  memset(&o, 0, sizeof o);
  const char *sym[] = {"K"};
  o.symbolic = sym;
  o.nsymbolic = 1;
  /* --max-steps 8000000 (a race-work budget of 256M, which one interpretation of the tile
   * loop's summary fits, about 190M, but not the sum over its attempts and the inner
   * summaries': each attempt's work is dropped with it, loop.c restore) and the default
   * 128 MiB of memory (havoc writes share one array of top tags, layouts' offsets go to a
   * scratch array); it needed 40000000 and 2048 */
  o.max_steps = 8000000;
  int rc;
  ag_tile_report *r = tu_check(text, "gemm_hopper.tile", &d, &rc, &o);
  if (rc && rc != AG_EVIOLATION) {
    ag_str f = AG_STR_INIT;
    ag_diags_format(&d, &f);
    printf("  %s\n", ag_str_cstr(&f));
    ag_str_release(&f);
  }
  CHECK(rc == 0 || rc == AG_EVIOLATION);
  ag_diags_release(&d);
  return r;
}

TEST(test_hopper_symbolic) {
  char *src = tu_read("examples/tile/gemm_hopper.tile", NULL);
  CHECK(src != NULL);
  if (!src)
    return;
  ag_tile_report *r = hopper_symbolic(src);
  CHECK(r && ag_tile_report_ok(r) && r->races_proved >= 2);
  ag_str t = AG_STR_INIT;
  if (r)
    ag_tile_report_text(r, &t);
  CHECK_CONTAINS(ag_str_cstr(&t), "summarized: loop 'j'");
  CHECK_CONTAINS(ag_str_cstr(&t), "summarized: loop 'kt'");
  ag_str_release(&t);
  ag_tile_report_free(r);
  const char *w0 = "            wgmma_wait(0)\n";
  char *p0 = strstr(src, w0);
  CHECK(p0 != NULL);
  if (p0) {
    memmove(p0, p0 + strlen(w0), strlen(p0 + strlen(w0)) + 1);
    r = hopper_symbolic(src);
    CHECK(r && !ag_tile_report_ok(r));
    const ag_tile_assert_result *w = r ? tu_find(r, tu_line_of(src, "tma_load(tmA")) : NULL;
    CHECK(w && w->race && w->status == AG_TILE_VIOLATED && w->cex);
    if (w && w->cex) {
      CHECK_CONTAINS(w->cex->reason, "write-after-read race");
      int64_t j = -1; /* the tile loop's iteration: the second tile's box */
      for (int i = 0; i < w->cex->nloops; i++)
        if (!strcmp(w->cex->loops[i].name, "j"))
          j = w->cex->loops[i].value;
      CHECK(j >= 1);
    }
    ag_tile_report_free(r);
  }
  free(src);
}

RUN_TESTS({"test_hopper_symbolic", test_hopper_symbolic})
