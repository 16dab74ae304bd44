/*
 * test_gpu_map_truth.c — the mapping run and the join on the GPU
 * (docs/attribution.md, "On the GPU: the ground truth"), on the ground-truth
 * kernel tests/data/cuda/attrib_truth.cu:
 *
 *   1. its PTX (nvcc -ptx at build time, markers on) -> the mapping variant
 *      (ag_variant_make, AG_VARIANT_MAPPING) -> attrib_truth_harness under
 *      ARGUS_COLLECT=time with ARGUS_VARIANT = the variant's PTX: the
 *      harness's result is still right, map_counts.json follows the rule of
 *      map_truth_check.h (helper units k1 x warps under A and k2 x warps
 *      under B, every kernel unit in its one region, dropped 0);
 *   2. the -lineinfo cubin of the SAME PTX (ptxas, so the map's program
 *      version is the metric's) under ARGUS_COLLECT=sass: its evidence
 *      follows truth_check.h, and attributed through the map with
 *      ag_attr_apply: alpha(A) = k1 / (k1 + k2) on every helper PC, entropy
 *      0 elsewhere, sum_r m_r = the kernel's total (map_truth_join); the
 *      helper's padding after its RET is excluded from the map (some PCs)
 *      and CUPTI counted none of it.
 * The recorded evidence (tests/data/evidence/attrib_truth.sass.json) is of
 * the build without markers, another program: a fresh run is needed.
 * map_counts.json and the sass evidence go to $ARGUS_EVIDENCE_OUT.
 * Exit 77 without a GPU or without nvcc and ptxas.
 */
#include <stdlib.h>
#include <unistd.h>

#include "argus/collect.h"
#include "argus/variant.h"
#include "check.h"
#include "../trace/gpu_util.h"
#include "map_truth_check.h"
#include "../sass/sass_util.h"

#ifndef ATTRIB_TRUTH_HARNESS
#define ATTRIB_TRUTH_HARNESS "attrib_truth_harness"
#endif
#ifndef ATTRIB_TRUTH_PTX
#define ATTRIB_TRUTH_PTX "attrib_truth.ptx"
#endif

/* The harness on the ground truth (TRUTH_* sizes) under ARGUS_COLLECT=mode
 * with ARGUS_VARIANT=variant, into dir. */
static int run_harness(const char *dir, const char *mode, const char *variant, const char *id,
                       ag_str *out, ag_proc_result *res) {
  char envc[64], envout[1200], envvar[1200], envid[200], b[16], t[16], a[16], bb[16], c[16];
  snprintf(envc, sizeof envc, "ARGUS_COLLECT=%s", mode);
  snprintf(envout, sizeof envout, "ARGUS_OUT=%s", dir);
  snprintf(envvar, sizeof envvar, "ARGUS_VARIANT=%s", variant);
  snprintf(envid, sizeof envid, "ARGUS_VARIANT_ID=%s", id);
  snprintf(b, sizeof b, "%d", TRUTH_BLOCKS);
  snprintf(t, sizeof t, "%d", TRUTH_THREADS);
  snprintf(a, sizeof a, "%d", TRUTH_K1);
  snprintf(bb, sizeof bb, "%d", TRUTH_K2);
  snprintf(c, sizeof c, "%d", TRUTH_K3);
  const char *env[] = {envc, envout, envvar, envid, NULL};
  const char *argv[] = {ATTRIB_TRUTH_HARNESS, "--module", ATTRIB_TRUTH_PTX, "--blocks", b,
                        "--threads", t, "--k1", a, "--k2", bb, "--k3", c, NULL};
  ag_proc_opts o = {.argv = argv, .env_add = env, .capture_out = out, .timeout_s = 180};
  return ag_proc_run(&o, res);
}




static void print_diags(ag_diags *d) {
  ag_str msg = {0};
  ag_diags_format(d, &msg);
  fprintf(stderr, "%s", msg.p ? msg.p : "");
  ag_str_release(&msg);
}

TEST(map_truth) {
  gpu_or_skip("test_gpu_map_truth");
  su_need_tools();
  char dir[] = "/tmp/argus-gmap-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  const uint64_t warps = TRUTH_BLOCKS * TRUTH_THREADS / 32;
  char *ptx = NULL, *bin = NULL, *json = NULL, why[2048], p[1200], vpath[1200], cpath[1200];
  size_t len = 0, blen = 0, jlen = 0;
  ag_diags d;
  ag_diags_init(&d);
  ag_variant_opts o = {AG_VARIANT_MAPPING, NULL, 0, 0};
  ag_variant *v = NULL;
  ag_attr_layout *L = NULL;
  ag_sass_cubin *cub = NULL;
  ag_attr_map *map = NULL;
  ag_attr_result *res = NULL;
  ag_sass_ev *e = NULL;
  uint64_t *slots = NULL, *mpc = NULL;
  double *mval = NULL;
  size_t nslots = 0;
  ag_str out = {0};
  ag_proc_result pr;
  json_t *j = NULL;
  /* 1. the mapping run */
  CHECK_EQ_INT(ag_file_read(ATTRIB_TRUTH_PTX, &ptx, &len), 0);
  if (!ptx)
    goto done;
  CHECK_EQ_INT(ag_variant_make(ptx, len, ATTRIB_TRUTH_PTX, &o, &d, &v), 0);
  if (!v || ag_attr_layout_from_json(v->probes, &d, &L)) {
    print_diags(&d);
    CHECK(0);
    goto done;
  }
  snprintf(vpath, sizeof vpath, "%s/attrib_truth.map.ptx", dir);
  CHECK_EQ_INT(ag_file_write_atomic(vpath, v->ptx, v->len), 0);
  CHECK_EQ_INT(run_harness(dir, "time", vpath, "attrib_truth-mapping", &out, &pr), 0);
  printf("%s", out.p ? out.p : "");
  if (pr.exited && pr.exit_code == 77) /* the harness found no device */
    SKIP("no GPU");
  CHECK(pr.exited && pr.exit_code == 0); /* the result is still right */
  CHECK_CONTAINS(out.p ? out.p : "", "attrib_truth ok");
  snprintf(p, sizeof p, "%s/map_counts.json", dir);
  CHECK_EQ_INT(ag_file_read(p, &json, &jlen), 0);
  if (!json)
    goto done;
  evidence_out(p, "attrib_truth.map_counts.json");
  j = json_loads(json, 0, NULL);
  CHECK(j != NULL);
  CHECK_EQ_INT(ag_attr_counts_from_json(j, &d, &slots, &nslots), 0);
  if (!slots)
    goto done;
  CHECK_EQ_U64(nslots, L->nslots);
  int bad = map_truth_check(L, slots, nslots, warps, TRUTH_K1, TRUTH_K2, TRUTH_K3, why, sizeof why);
  if (bad)
    fprintf(stderr, "mapping run: %s\n", why);
  CHECK_EQ_INT(bad, 0);
  uint64_t counted = 0;
  for (size_t i = 1; i < nslots; i++)
    counted += slots[i];
  printf("@ mapping run: %u slots, %d units, %llu unit executions counted, dropped %llu\n",
         L->nslots, L->nunits, (unsigned long long)counted, (unsigned long long)slots[0]);
  /* 2. the metric run of the same PTX and the join */
  ag_str err = AG_STR_INIT;
  CHECK_EQ_INT(su_ptxas("sm_90a", 1, ptx, len, &bin, &blen, &err), 0);
  ag_str_release(&err);
  if (!bin)
    goto done;
  snprintf(cpath, sizeof cpath, "%s/attrib_truth.lineinfo.cubin", dir);
  CHECK_EQ_INT(ag_file_write_atomic(cpath, bin, blen), 0);
  CHECK_EQ_INT(ag_sass_cubin_parse(bin, blen, cpath, &d, &cub), 0);
  ag_str_release(&out);
  CHECK_EQ_INT(run_harness(dir, "sass", cpath, "attrib_truth-map-lineinfo", &out, &pr), 0);
  printf("%s", out.p ? out.p : "");
  CHECK(pr.exited && pr.exit_code == 0);
  snprintf(p, sizeof p, "%s/sass_metrics.json", dir);
  if (ag_sass_ev_load(p, &d, &e))
    print_diags(&d);
  CHECK(e != NULL);
  if (!e || !cub)
    goto done;
  evidence_out(p, "attrib_truth.map.sass.json");
  CHECK_EQ_U64(truth_warps(e), warps);
  bad = truth_check(e, warps, TRUTH_K1, TRUTH_K2, TRUTH_K3, why, sizeof why);
  if (bad)
    fprintf(stderr, "metric run: %s\n", why);
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(ag_attr_map_build(L, slots, nslots, cub, TRUTH_KERNEL, &d, &map), 0);
  if (!map) {
    print_diags(&d);
    goto done;
  }
  CHECK_EQ_INT(map->nolines, 0);
  /* the helper's padding after its RET (a BRA to itself, NOPs) is in no
   * region; map_truth_join fails a padding PC that CUPTI counted */
  printf("@ join: %d padding PCs excluded from the map\n", map->padding);
  CHECK(map->padding > 0);
  int ci = ag_sass_ev_metric(e, "smsp__sass_inst_executed"), np = 0;
  mpc = ag_calloc(e->nrows + 1, sizeof *mpc);
  mval = ag_calloc(e->nrows + 1, sizeof *mval);
  for (size_t i = 0; ci >= 0 && i < e->nrows; i++) {
    const ag_sass_ev_row *r = &e->rows[i];
    if (!r->variant || strcmp(r->function, TRUTH_KERNEL))
      continue;
    uint64_t spc = 0;
    int rc = ag_sass_cubin_section_pc(cub, TRUTH_KERNEL, r->function, r->pc, &spc);
    if (rc)
      fprintf(stderr, "pc 0x%x of %s is not in the cubin\n", r->pc, r->function);
    CHECK_EQ_INT(rc, 0);
    mpc[np] = spc;
    mval[np++] = (double)r->v[ci];
  }
  CHECK(np > 0);
  /* the map's PCs ascend: so must the metric's (rows sort by pc) */
  ag_attr_metric mt = {"smsp__sass_inst_executed", L->version, TRUTH_KERNEL, mpc, mval, np};
  CHECK_EQ_INT(ag_attr_apply(map, &mt, &d, &res), 0);
  if (!res) {
    print_diags(&d);
    goto done;
  }
  int hp = 0;
  bad = map_truth_join(map, cub, &mt, res, TRUTH_K1, TRUTH_K2, &hp, why, sizeof why);
  if (bad)
    fprintf(stderr, "join: %s\n", why);
  CHECK_EQ_INT(bad, 0);
  printf("@ join: %d metric PCs, %d of the helper at alpha(A) = %d/%d, total %.0f warp "
         "instructions, unattributed %.0f, conserved %s\n",
         np, hp, TRUTH_K1, TRUTH_K1 + TRUTH_K2, res->total, res->unattributed,
         ag_attr_conserved(res) ? "yes" : "NO");
  double sum = 0;
  for (int r = 0; r < res->nregions; r++) {
    sum += res->m[r];
    if (res->m[r] > 0)
      printf("@ join: %s: %.1f warp instructions (%.1f from shared PCs, %d PCs, %d shared)\n",
             map->regions[r], res->m[r], res->shared[r], res->static_pcs[r], res->shared_pcs[r]);
  }
  printf("@ join: sum of m_r %.1f = kernel total %.1f\n", sum, res->total);
done:
  ag_str_release(&out);
  json_decref(j);
  ag_free(mval);
  ag_free(mpc);
  ag_attr_result_free(res);
  ag_attr_map_free(map);
  ag_sass_ev_free(e);
  ag_sass_cubin_free(cub);
  ag_free(slots);
  ag_attr_layout_free(L);
  ag_variant_free(v);
  ag_diags_release(&d);
  ag_free(json);
  ag_free(bin);
  ag_free(ptx);
}

RUN_TESTS(T(map_truth))
