/*
 * test_map_attrib_truth.c — the CPU half of the mapping run's ground truth
 * on tests/data/cuda/attrib_truth.cu (docs/attribution.md, "On the GPU: the
 * ground truth"; the GPU half is tests/sassm/test_gpu_map_truth.c):
 *   - the mapping variant of its PTX (nvcc -ptx, markers on) assembles with
 *     ptxas; its layout names regions A, B, C and the kernel's root, is of
 *     the parent PTX's version, the kernel's units static, the helper's
 *     inherited;
 *   - the rule the GPU test applies to a real run's counts
 *     (map_truth_check.h) passes on the counts the construction gives and
 *     fails on each broken one (a dropped execution, A and B swapped in the
 *     helper, a loop body counted once, a kernel that did not run counted);
 *   - the join's rule (map_truth_join) on the -lineinfo cubin of the same
 *     PTX with those counts: alpha(A) = 3/8 on every helper PC, entropy 0
 *     elsewhere, conservation; and it fails on a map that lost a unit.
 * Skips (77) without nvcc and ptxas.
 */
#include "argus/attrib.h"
#include "argus/variant.h"
#include "check.h"
#include "sass_util.h"
#include "../sassm/map_truth_check.h"

#define W 16 /* warps */

/* 1 when PTX lines [a, b] (1-based) of ptx hold `what` */
static int lines_have(const char *ptx, int a, int b, const char *what) {
  int line = 1;
  for (const char *p = ptx; *p; p++) {
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (line >= a && line <= b) {
      char buf[512];
      snprintf(buf, sizeof buf, "%.*s", (int)(n < 511 ? n : 511), p);
      if (strstr(buf, what))
        return 1;
    }
    if (!e)
      break;
    p = e;
    line++;
  }
  return 0;
}

/* The counts of a run on W warps by the construction: a loop body (its
 * block starts with the nounroll pragma, at most 4 lines before the unit's
 * first instruction: a call sequence's '{', .reg and .param come between)
 * k times per warp, other kernel
 * units once, the helper k1 times under A and k2 under B, the other
 * kernels nothing. */
static uint64_t *truth_slots(const ag_attr_layout *L, const char *ptx) {
  uint64_t *s = ag_calloc(L->nslots, sizeof *s);
  int ra = map_truth_region(L, TRUTH_KERNEL, "A"), rb = map_truth_region(L, TRUTH_KERNEL, "B");
  int rc = map_truth_region(L, TRUTH_KERNEL, "C");
  for (int u = 0; u < L->nunits; u++) {
    const ag_attr_unit *U = &L->units[u];
    const char *f = L->funcs[U->func].name;
    if (!strcmp(f, MAP_TRUTH_HELPER)) {
      s[U->slot + (uint32_t)ra] = TRUTH_K1 * W;
      s[U->slot + (uint32_t)rb] = TRUTH_K2 * W;
    } else if (!strcmp(f, TRUTH_KERNEL)) {
      int k = U->region == ra ? TRUTH_K1 : U->region == rb ? TRUTH_K2 : TRUTH_K3;
      int body = U->region >= 0 && U->region != map_truth_root(L) &&
                 lines_have(ptx, U->first_line - 4, U->last_line, "nounroll");
      s[U->slot] = body ? (uint64_t)k * W : W;
      (void)rc;
    }
  }
  return s;
}

static int first_unit(const ag_attr_layout *L, const char *f, int body, const char *ptx) {
  for (int u = 0; u < L->nunits; u++)
    if (!strcmp(L->funcs[L->units[u].func].name, f) &&
        (!body || lines_have(ptx, L->units[u].first_line - 4, L->units[u].last_line, "nounroll")))
      return u;
  return -1;
}

TEST(attrib_truth_mapping) {
  (void)truth_check, (void)truth_warps; /* truth_check.h's rule of the metric run: GPU only */
  su_need_tools();
  char *ptx = NULL, *bin = NULL, *vbin = NULL;
  size_t len = 0, blen = 0, vlen = 0;
  CHECK_EQ_INT(su_cuda_ptx("tests/data/cuda/attrib_truth.cu", &ptx, &len), 0);
  if (!ptx)
    return;
  ag_diags d;
  ag_diags_init(&d);
  ag_variant_opts o = {AG_VARIANT_MAPPING, NULL, 0, 0};
  ag_variant *v = NULL;
  ag_attr_layout *L = NULL;
  ag_sass_cubin *cub = NULL;
  ag_attr_map *map = NULL;
  ag_attr_result *res = NULL;
  uint64_t *slots = NULL;
  double *val = NULL;
  char why[2048];
  CHECK_EQ_INT(ag_variant_make(ptx, len, "attrib_truth.ptx", &o, &d, &v), 0);
  if (!v || ag_attr_layout_from_json(v->probes, &d, &L))
    goto out;
  /* the variant assembles; the layout is of the parent's version */
  ag_str err = AG_STR_INIT;
  CHECK_EQ_INT(su_ptxas("sm_90a", 0, v->ptx, v->len, &vbin, &vlen, &err), 0);
  if (err.len && !vbin)
    fprintf(stderr, "ptxas: %s\n", ag_str_cstr(&err));
  ag_str_release(&err);
  CHECK_EQ_STR(L->version, v->parent);
  int ra = map_truth_region(L, TRUTH_KERNEL, "A"), rb = map_truth_region(L, TRUTH_KERNEL, "B");
  int rc = map_truth_region(L, TRUTH_KERNEL, "C"), root = map_truth_root(L);
  printf("layout: %d regions, %d units, %u slots; A %d, B %d, C %d, root %d (%s)\n",
         L->nregions, L->nunits, L->nslots, ra, rb, rc, root, root >= 0 ? L->regions[root] : "-");
  CHECK(ra >= 0 && rb >= 0 && rc >= 0 && root >= 0);
  CHECK(root != ra && root != rb && root != rc);
  if (ra < 0 || rb < 0 || rc < 0 || root < 0)
    goto out;
  /* the rule on the construction's counts, then on broken ones */
  slots = truth_slots(L, ptx);
  int bad = map_truth_check(L, slots, L->nslots, W, TRUTH_K1, TRUTH_K2, TRUTH_K3, why, sizeof why);
  if (bad) {
    fprintf(stderr, "rule: %s\n", why);
    for (int u = 0; u < L->nunits; u++)
      fprintf(stderr, "  unit %d: %s lines %d-%d region %d slot %u count %llu\n", u,
              L->funcs[L->units[u].func].name, L->units[u].first_line, L->units[u].last_line,
              L->units[u].region, L->units[u].slot, (unsigned long long)slots[L->units[u].slot]);
  }
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(map_truth_check(L, slots, L->nslots - 1, W, TRUTH_K1, TRUTH_K2, TRUTH_K3, why,
                               sizeof why) > 0, 1);
  slots[0] = 1;
  CHECK(map_truth_check(L, slots, L->nslots, W, TRUTH_K1, TRUTH_K2, TRUTH_K3, why, sizeof why) > 0);
  CHECK_CONTAINS(why, "dropped");
  slots[0] = 0;
  int hu = first_unit(L, MAP_TRUTH_HELPER, 0, ptx), bu = first_unit(L, TRUTH_KERNEL, 1, ptx);
  int cu = first_unit(L, "collector", 0, ptx);
  CHECK(hu >= 0 && bu >= 0 && cu >= 0);
  if (hu < 0 || bu < 0 || cu < 0)
    goto out;
  uint32_t hs = L->units[hu].slot;
  uint64_t x = slots[hs + (uint32_t)ra];
  slots[hs + (uint32_t)ra] = slots[hs + (uint32_t)rb], slots[hs + (uint32_t)rb] = x;
  CHECK(map_truth_check(L, slots, L->nslots, W, TRUTH_K1, TRUTH_K2, TRUTH_K3, why, sizeof why) > 0);
  CHECK_CONTAINS(why, MAP_TRUTH_HELPER);
  slots[hs + (uint32_t)rb] = slots[hs + (uint32_t)ra], slots[hs + (uint32_t)ra] = x;
  x = slots[L->units[bu].slot];
  slots[L->units[bu].slot] = W;
  CHECK(map_truth_check(L, slots, L->nslots, W, TRUTH_K1, TRUTH_K2, TRUTH_K3, why, sizeof why) > 0);
  CHECK_CONTAINS(why, "runs k =");
  slots[L->units[bu].slot] = x;
  slots[L->units[cu].slot] = W;
  CHECK(map_truth_check(L, slots, L->nslots, W, TRUTH_K1, TRUTH_K2, TRUTH_K3, why, sizeof why) > 0);
  CHECK_CONTAINS(why, "collector");
  slots[L->units[cu].slot] = 0;
  CHECK_EQ_INT(map_truth_check(L, slots, L->nslots, W, TRUTH_K1, TRUTH_K2, TRUTH_K3, why,
                               sizeof why), 0);
  /* the join through the -lineinfo cubin of the same PTX */
  ag_str err2 = AG_STR_INIT;
  CHECK_EQ_INT(su_ptxas("sm_90a", 1, ptx, len, &bin, &blen, &err2), 0);
  ag_str_release(&err2);
  CHECK_EQ_INT(ag_sass_cubin_parse(bin, blen, "attrib_truth.cubin", &d, &cub), 0);
  if (!cub)
    goto out;
  CHECK_EQ_INT(ag_attr_map_build(L, slots, L->nslots, cub, TRUTH_KERNEL, &d, &map), 0);
  if (!map)
    goto out;
  CHECK_EQ_INT((int)map->dropped, 0);
  CHECK_EQ_INT(map->nolines, 0);
  /* a metric where every SASS instruction runs as its block: warp
   * instructions per PC, the map's own executions (0 on the padding) */
  val = ag_calloc((size_t)map->npcs, sizeof *val);
  for (int p = 0; p < map->npcs; p++) {
    const double *ex = ag_attr_exec_row(map, p);
    for (int r = 0; ex && r < map->nregions; r++)
      val[p] += ex[r];
  }
  ag_attr_metric mt = {"smsp__sass_inst_executed", L->version, TRUTH_KERNEL, map->pc, val,
                       map->npcs};
  CHECK_EQ_INT(ag_attr_apply(map, &mt, &d, &res), 0);
  if (!res)
    goto out;
  int hp = 0;
  bad = map_truth_join(map, cub, &mt, res, TRUTH_K1, TRUTH_K2, &hp, why, sizeof why);
  if (bad)
    fprintf(stderr, "join: %s\n", why);
  CHECK_EQ_INT(bad, 0);
  printf("join: %d PCs, %d of the helper (alpha(A) = 3/8)\n", map->npcs, hp);
  CHECK(hp > 0);
  /* the join's rule on a map whose helper counts say 1:1 */
  ag_attr_result_free(res);
  res = NULL;
  ag_attr_map_free(map);
  map = NULL;
  slots[hs + (uint32_t)ra] = slots[hs + (uint32_t)rb];
  CHECK_EQ_INT(ag_attr_map_build(L, slots, L->nslots, cub, TRUTH_KERNEL, &d, &map), 0);
  if (map) { /* the metric's PCs were the freed map's: the same cubin's, from this one */
    CHECK_EQ_INT(map->npcs, mt.npcs);
    mt.pc = map->pc;
  }
  if (map && map->npcs == mt.npcs && ag_attr_apply(map, &mt, &d, &res) == 0) {
    CHECK(map_truth_join(map, cub, &mt, res, TRUTH_K1, TRUTH_K2, &hp, why, sizeof why) > 0);
    CHECK_CONTAINS(why, "alpha(A)");
  }
out:
  ag_free(val);
  ag_attr_result_free(res);
  ag_attr_map_free(map);
  ag_free(slots);
  ag_sass_cubin_free(cub);
  ag_attr_layout_free(L);
  ag_variant_free(v);
  ag_diags_release(&d);
  ag_free(bin);
  ag_free(vbin);
  ag_free(ptx);
}

RUN_TESTS(T(attrib_truth_mapping))
