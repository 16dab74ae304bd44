/* test_discover_tma_forms.c — discovery classifies each form of the TMA
 * tensor copy by its direction: a load into shared memory, whether its
 * destination is the cluster's (.shared::cluster.global) or the CTA's own
 * (.shared::cta.global, PTX 8.6), completes on its mbarrier and is waited
 * for there; a store from shared memory (.global.shared::cta) completes in a
 * bulk group. A hand-written kernel holds one of each in one region. */
#include "argus/ptx.h"
#include "check.h"

static const char ptx[] =
    ".version 8.7\n"
    ".target sm_90a\n"
    ".address_size 64\n"
    ".extern .shared .align 16 .b8 smem[];\n"
    ".visible .entry tma_forms(\n"
    "\t.param .align 64 .b8 tma_forms_param_0[128]\n"
    ")\n"
    "{\n"
    "\t.reg .pred \t%p<4>;\n"
    "\t.reg .b32 \t%r<12>;\n"
    "\t.reg .b64 \t%rd<4>;\n"
    "\tmov.b64 \t%rd1, tma_forms_param_0;\n"
    "\tmov.u32 \t%r1, smem;\n"
    "\tadd.s32 \t%r2, %r1, 16384;\n"
    "\tadd.s32 \t%r3, %r1, 16392;\n"
    "\tmov.u32 \t%r4, %ctaid.x;\n"
    "\tmov.u32 \t%r5, 0;\n"
    "\tmbarrier.init.shared::cta.b64 [%r2], 1;\n"
    "\tmbarrier.init.shared::cta.b64 [%r3], 1;\n"
    "\tbar.sync \t0;\n"
    "\t// @argus begin - copies\n"
    "\tmbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], 8192;\n"
    "\tcp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes [%r1], "
    "[%rd1, {%r5, %r4}], [%r2];\n"
    "\tmbarrier.arrive.expect_tx.shared::cta.b64 _, [%r3], 8192;\n"
    "\tcp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1+8192], "
    "[%rd1, {%r5, %r4}], [%r3];\n"
    "$L_wait_cta:\n"
    "\tmbarrier.try_wait.parity.shared::cta.b64 %p1, [%r2], 0;\n"
    "\t@!%p1 bra \t$L_wait_cta;\n"
    "$L_wait_cluster:\n"
    "\tmbarrier.try_wait.parity.shared::cta.b64 %p2, [%r3], 0;\n"
    "\t@!%p2 bra \t$L_wait_cluster;\n"
    "\tfence.proxy.async.shared::cta;\n"
    "\tcp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd1, {%r5, %r4}], [%r1];\n"
    "\tcp.async.bulk.commit_group;\n"
    "\tcp.async.bulk.wait_group.read 0;\n"
    "\t// @argus end - copies\n"
    "\tret;\n"
    "}\n";

/* The site of the cp.async.bulk.tensor whose opcode has `form`. */
static const ag_ptx_site *site_with(const ag_ptx_regions *R, const char *form) {
  for (int i = 0; i < R->nsites; i++) {
    const char *op = R->sites[i].stmt ? R->sites[i].stmt->opcode : NULL;
    if (op && !strncmp(op, "cp.async.bulk.tensor", 20) && strstr(op, form))
      return &R->sites[i];
  }
  return NULL;
}

TEST(tma_load_forms_are_loads) {
  ag_diags d;
  ag_diags_init(&d);
  ag_ptx_module *m = NULL;
  ag_ptx_regions *R = NULL;
  CHECK_EQ_INT(ag_ptx_parse(ptx, sizeof ptx - 1, "tma_forms.ptx", &d, &m), 0);
  if (m)
    CHECK_EQ_INT(ag_ptx_discover(m, &d, &R), 0);
  if (d.items.n) {
    ag_str s = AG_STR_INIT;
    ag_diags_format(&d, &s);
    fprintf(stderr, "%s", ag_str_cstr(&s));
    ag_str_release(&s);
  }
  if (!R) {
    ag_ptx_module_free(m);
    ag_diags_release(&d);
    return;
  }
  const ag_ptx_site *cta = site_with(R, ".shared::cta.global");
  const ag_ptx_site *clu = site_with(R, ".shared::cluster.global");
  const ag_ptx_site *st = site_with(R, ".global.shared::cta");
  CHECK(cta && clu && st);
  if (cta && clu && st) {
    CHECK_EQ_INT(cta->kind, AG_PTX_SITE_TMA_LOAD);
    CHECK_EQ_INT(cta->completion, AG_PTX_DONE_MBARRIER);
    CHECK_EQ_INT(clu->kind, AG_PTX_SITE_TMA_LOAD);
    CHECK_EQ_INT(clu->completion, AG_PTX_DONE_MBARRIER);
    CHECK_EQ_INT(st->kind, AG_PTX_SITE_TMA_STORE);
    CHECK_EQ_INT(st->completion, AG_PTX_DONE_BULK_GROUP);
    /* each load is completed by the wait on its own barrier */
    CHECK(cta->ndone_by >= 1 && clu->ndone_by >= 1);
    int cta_wait = 0, clu_wait = 0;
    for (int k = 0; k < cta->ndone_by; k++)
      cta_wait |= R->sites[cta->done_by[k]].kind == AG_PTX_SITE_MBAR_WAIT;
    for (int k = 0; k < clu->ndone_by; k++)
      clu_wait |= R->sites[clu->done_by[k]].kind == AG_PTX_SITE_MBAR_WAIT;
    CHECK(cta_wait && clu_wait);
    CHECK(cta->done_by[0] != clu->done_by[0]);
  }
  ag_ptx_module_free(m);
  ag_diags_release(&d);
}

RUN_TESTS(T(tma_load_forms_are_loads))
