/*
 * test_async_fastcu.c — discovery and plan sizes on a real public Hopper
 * GEMM that nobody here wrote: pranjalssh/fast.cu@38eb642e matmul.cu,
 * matmulKernel7 (TMA loads into a 3-stage mbarrier ring, wgmma, producer and
 * consumer warpgroups; nvcc unrolls its producer loop into 7 copies, 14 TMA
 * sites). Its code is never committed: ARGUS_FASTCU_PTX names its PTX,
 * compiled out of tree with the flags of /tmp/pub/specs/fastcu.json
 * (nvcc -ptx -arch=sm_90a -O3 ...); without it the test exits 77.
 *
 * Checked: every mbarrier wait of the kernel (CUTLASS-style two-block loops
 * in { } scopes) is a timed spin loop (before issue 27: none was); every TMA
 * load is completed by timed waits; the traced variant with waits marks
 * every timed async wait of the module (brute force over the discovery);
 * the plan of async_latency for iter=0:4 on the kernel has one probe per
 * async site (14 TMA, 12 wgmma) and iteration plus the reference (the kernel has no markers, so
 * occurrences are counted at run time and every pair may execute).
 */
#include "check.h"

#include <stdlib.h>

#include "argus/variant.h"
#include "plan_util.h"

#define K7 "matmulKernel7"

TEST(fastcu_waits_and_plan) {
  const char *path = getenv("ARGUS_FASTCU_PTX");
  if (!path || !*path)
    SKIP("ARGUS_FASTCU_PTX is not set (the PTX of pranjalssh/fast.cu matmul.cu)");
  char *ptx = NULL;
  size_t len = 0;
  if (ag_file_read(path, &ptx, &len))
    SKIP("cannot read ARGUS_FASTCU_PTX '%s'", path);
  ag_diags d;
  ag_diags_init(&d);
  ag_ptx_module *m = NULL;
  ag_ptx_regions *r = NULL;
  CHECK_EQ_INT(ag_ptx_parse(ptx, len, path, &d, &m), 0);
  CHECK_EQ_INT(ag_ptx_discover(m, &d, &r), 0);
  int tma = 0, wgmma = 0, waits = 0, timed = 0, async_waits = 0;
  const char *kernel = NULL;
  for (int i = 0; r && i < r->nsites; i++) {
    const ag_ptx_site *s = &r->sites[i];
    int completes = 0;
    for (int j = 0; j < r->nsites; j++)
      for (int k = 0; k < r->sites[j].ndone_by; k++)
        completes |= r->sites[j].done_by[k] == i &&
                     (r->sites[j].kind == AG_PTX_SITE_TMA_LOAD || r->sites[j].kind == AG_PTX_SITE_WGMMA ||
                      r->sites[j].kind == AG_PTX_SITE_BULK_COPY || r->sites[j].kind == AG_PTX_SITE_CP_ASYNC ||
                      r->sites[j].kind == AG_PTX_SITE_TMA_STORE || r->sites[j].kind == AG_PTX_SITE_TMA_REDUCE);
    async_waits += completes && s->wait_first != NULL;
    if (!strstr(s->func->name, K7))
      continue;
    kernel = s->func->name;
    tma += s->kind == AG_PTX_SITE_TMA_LOAD;
    wgmma += s->kind == AG_PTX_SITE_WGMMA;
    if (s->kind == AG_PTX_SITE_MBAR_WAIT) {
      waits++;
      timed += s->wait_first != NULL;
      if (!s->wait_first)
        fprintf(stderr, "untimed wait %s line %d: %s\n", s->op_id, s->line, s->wait_why);
    }
    for (int k = 0; s->kind == AG_PTX_SITE_TMA_LOAD && k < s->ndone_by; k++)
      CHECK(r->sites[s->done_by[k]].wait_first != NULL);
  }
  CHECK(kernel != NULL);
  CHECK_EQ_INT(tma, 14);
  CHECK_EQ_INT(waits, 10);
  CHECK_EQ_INT(timed, 10);
  /* the traced variant with waits: exactly the timed async waits */
  ag_variant_opts tr = {AG_VARIANT_TRACED, NULL, 0, 0};
  ag_variant_async wa = {1, NULL, 0, 0};
  ag_variant *v = NULL;
  CHECK_EQ_INT(ag_variant_make_ex(ptx, len, path, &tr, &wa, &d, &v), 0);
  size_t marked = 0;
  for (const char *q = v ? strstr(v->ptx, "argus: begin argus_wait_") : NULL; q;
       q = strstr(q + 1, "argus: begin argus_wait_"))
    marked++;
  CHECK_EQ_U64(marked, (size_t)async_waits);
  printf("fast.cu: %d timed async waits in the module; %s: %d TMA sites, %d/%d mbarrier waits "
         "timed\n", async_waits, K7, tma, timed, waits);
  ag_variant_free(v);
  /* the plan: 26 async sites x 4 iterations + the reference */
  discovery = r ? ag_ptx_regions_to_json(m, r) : NULL;
  int rc = 0;
  ag_plan *p = kernel ? plan_and_expand(kernel, "iter=0:4", &rc) : NULL;
  CHECK_EQ_INT(rc, 0);
  int refs = 0;
  int probes = p ? probe_runs(p, &refs) : -2;
  CHECK_EQ_INT(wgmma, 12);
  CHECK_EQ_INT(probes, (tma + wgmma) * 4);
  CHECK_EQ_INT(refs, 1);
  printf("fast.cu %s, iter=0:4: %d runs planned (%d probes + %d reference)\n", K7,
         probes + refs, probes, refs);
  ag_plan_free(p);
  json_decref(discovery);
  ag_ptx_module_free(m);
  ag_diags_release(&d);
  ag_free(ptx);
}

RUN_TESTS(T(fastcu_waits_and_plan))
