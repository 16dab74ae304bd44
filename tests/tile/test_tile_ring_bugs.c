/*
 * test_tile_ring_bugs.c — every planted bug of the Hopper rings (issue 23: mbarrier
 * full/empty rings, warp-specialized roles, nested persistent loops) refuted under a
 * symbolic trip count, never refused (docs/check.md, "Refute, don't refuse"): the table
 * lists each examples/tile/bugs .mut file applied to its kernel, the size made symbolic and the
 * statement whose violation must be reported, with a counterexample naming the thread, the
 * data (a byte of a race, the element or shared byte a tag came through) and the iteration.
 * Bugs that leave an inner ring's phases half done (a wrong parity) stop the summary: the
 * refused loop's first iterations are checked exactly and refute the kernel. ~2.5 min of CPU
 * (gemm_hopper's nested summaries): labelled slow in sanitized builds, as test_tile_nested.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tile_util.h"

static const struct {
  const char *mut, *sym, *line, *loop;
} bugs[] = {
    /* the mbarrier ring (ring_bulk.tile), --symbolic R */
    {"ring-parity", "R", "assert tag(x)", "i"},
    {"ring-stage", "R", "assert tag(x)", "i"},
    {"ring-expect", "R", "assert tag(x)", "i"},
    {"ring-bytes", "R", "assert tag(x)", "i"},
    {"ring-release", "R", "bulk_copy(buf[s, 0]", "i"},
    {"ring-early-release", "R", "bulk_copy(buf[s, 0]", "i"},
    /* warp-specialized ws_gemm.tile (a tile loop around the k ring), --symbolic K */
    {"ws-parity", "K", "cp_async(sAc[s", "kt"},
    {"ws-release", "K", "cp_async(sAc[s", "kt"},
    {"ws-stage", "K", "cp_async(sAc[s", "kt"},
    /* attention_hopper.tile (TMA ring, wgmma), --symbolic skv */
    {"attnh-parity", "skv", "tma_load(tmK, kt * Bc", "kt"},
    {"attnh-vstage", "skv", "tma_load(tmV, kt * Bc", "kt"},
    {"attnh-nowait", "skv", "rs[nt, v] = exp2(rs[nt, v] * sl2", "kt"},
    {"attnh-pfrag", "skv", "assert tag(fp[kk, e])", "kt"},
    /* gemm_hopper.tile (nested summaries), --symbolic K */
    {"hopper-parity", "K", "tma_load(tmA", "kt"},
    {"hopper-early-release", "K", "tma_load(tmA", "kt"},
};

TEST(test_ring_bugs_symbolic) {
  for (size_t i = 0; i < sizeof bugs / sizeof bugs[0]; i++) {
    int line;
    char *src = tu_mutate_at(bugs[i].mut, bugs[i].line, &line);
    if (!src)
      continue;
    ag_diags d;
    ag_diags_init(&d);
    ag_tile_check_opts o;
    memset(&o, 0, sizeof o);
    const char *sym[] = {bugs[i].sym};
    o.symbolic = sym;
    o.nsymbolic = 1;
    o.max_steps = 40000000; /* gemm_hopper's budgets (docs/check.md, "Nested summaries") */
    o.max_memory_mib = 2048;
    int rc;
    ag_tile_report *r = tu_check(src, bugs[i].mut, &d, &rc, &o);
    /* refuted: a report (not a refusal), failing, with the statement violated */
    const ag_tile_assert_result *a = r ? tu_find(r, line) : NULL;
    int ok = rc == 0 && r && !ag_tile_report_ok(r) && a && a->status == AG_TILE_VIOLATED &&
             a->cex && a->cex->thread >= 0 && tu_loop(a->cex, bugs[i].loop) >= 0 &&
             tu_size(a->cex, bugs[i].sym) > 0;
    /* the data: a race (or a register a wgmma may still write) names the byte, a tag
     * its element or the shared byte it came through */
    if (ok)
      ok = (a->cex->reason && strstr(a->cex->reason, "byte") != NULL) ||
           (!a->race && (a->cex->lhs.element || a->cex->lhs.via));
    if (!ok) {
      ag_str f = AG_STR_INIT;
      ag_diags_format(&d, &f);
      fprintf(stderr, "%s --symbolic %s: line %d (%s) not refuted (rc %d): %s\n", bugs[i].mut,
              bugs[i].sym, line, bugs[i].line, rc, ag_str_cstr(&f));
      ag_str_release(&f);
    }
    CHECK(ok);
    ag_tile_report_free(r);
    ag_diags_release(&d);
    free(src);
  }
}

RUN_TESTS({"test_ring_bugs_symbolic", test_ring_bugs_symbolic})
