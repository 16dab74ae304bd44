/*
 * test_attrib.c — attribution (src/synth/attrib.c):
 *   - by hand: a 3-PC, 2-region map: alpha, the split metric, H(p) in bits,
 *     the shared parts, conservation; a deliberately wrong map (a PC the
 *     map never saw run) fails the check; ratio metrics lifted apart;
 *     another program version or kernel is refused, named in not_joined;
 *   - the ground truth on the CPU: the mapping layout of map_truth, the
 *     counts its run must give by construction (every kernel unit once per
 *     warp, the helper K1 = 3 times under 'a' and K2 = 5 times under 'b'),
 *     and the -lineinfo cubin: every helper PC has alpha(a) = 3/8, every
 *     other PC one owner (entropy 0), the inlined code of 'a' is 'a''s;
 *     attributed counts sum to the total; a wrong map fails;
 *   - bad layouts are errors with the field named.
 * The ground-truth case skips (77) without nvcc and ptxas.
 */
#include "argus/attrib.h"
#include "argus/report.h"
#include "argus/variant.h"
#include "check.h"
#include "sass_util.h"

#include <math.h>

static const char V1[] = "1111111111111111111111111111111111111111111111111111111111111111";
static const char V2[] = "2222222222222222222222222222222222222222222222222222222222222222";

/* a map by hand: rows n[p][r] */
static ag_attr_map *hand_map(int np, int nr, const double *n) {
  ag_attr_map *m = ag_calloc(1, sizeof *m);
  memcpy(m->version, V1, 65);
  m->kernel = ag_strdup("k");
  m->nregions = nr;
  m->regions = ag_calloc((size_t)nr, sizeof *m->regions);
  for (int r = 0; r < nr; r++) {
    char b[16];
    snprintf(b, sizeof b, "k/r%d", r);
    m->regions[r] = ag_strdup(b);
  }
  m->npcs = np;
  m->pc = ag_calloc((size_t)np, sizeof *m->pc);
  m->line = ag_calloc((size_t)np, sizeof *m->line);
  m->n = ag_calloc((size_t)(np * nr), sizeof *m->n);
  for (int p = 0; p < np; p++)
    m->pc[p] = (uint64_t)p * 16;
  memcpy(m->n, n, sizeof *n * (size_t)(np * nr));
  return m;
}

static int near(double a, double b) { return fabs(a - b) <= 1e-12 * (fabs(b) > 1 ? fabs(b) : 1); }
#define NEAR(a, b) near((a), (b))

TEST(alpha_entropy_conservation) {
  const double n[] = {4, 0, 3, 5, 0, 2};
  ag_attr_map *map = hand_map(3, 2, n);
  const uint64_t pc[] = {0, 16, 32};
  const double v[] = {8, 16, 2};
  ag_attr_metric mt = {"inst_executed", V1, "k", pc, v, 3};
  ag_diags d;
  ag_diags_init(&d);
  ag_attr_result *r = NULL;
  CHECK_EQ_INT(ag_attr_apply(map, &mt, &d, &r), 0);
  if (!r)
    return;
  CHECK(NEAR(r->m[0], 8 + 16 * 3.0 / 8)); /* 14 */
  CHECK(NEAR(r->m[1], 16 * 5.0 / 8 + 2)); /* 12 */
  CHECK(NEAR(r->total, 26));
  CHECK(ag_attr_conserved(r));
  CHECK(r->entropy[0] == 0 && r->entropy[2] == 0);
  double h = -(3.0 / 8 * log2(3.0 / 8) + 5.0 / 8 * log2(5.0 / 8));
  CHECK(NEAR(r->entropy[1], h));
  CHECK(NEAR(r->shared[0], 6) && NEAR(r->shared[1], 10));
  CHECK_EQ_INT(r->static_pcs[0], 2);
  CHECK_EQ_INT(r->shared_pcs[0], 1);
  json_t *j = ag_attr_to_json(map, &mt, r);
  CHECK(j != NULL);
  char *s = json_dumps(j, JSON_SORT_KEYS);
  CHECK_CONTAINS(s, "\"qual\": \"attributed\"");
  CHECK_CONTAINS(s, "\"conserved\": true");
  CHECK_CONTAINS(s, "\"region\": \"k/r0\"");
  free(s);
  json_decref(j);
  /* ratio metrics lift numerator and denominator apart: branch efficiency
   * = thread instructions / (32 x warp instructions) */
  const double tv[] = {8 * 32, 16 * 16, 2 * 32};
  ag_attr_metric tm = {"thread_inst_executed", V1, "k", pc, tv, 3};
  ag_attr_result *tr = NULL;
  CHECK_EQ_INT(ag_attr_apply(map, &tm, &d, &tr), 0);
  double eff[2];
  ag_attr_ratio(tr, r, 32, eff);
  CHECK(NEAR(eff[0], (8 * 32 + 16 * 16 * 3.0 / 8) / (32 * 14.0)));
  CHECK(NEAR(eff[1], (16 * 16 * 5.0 / 8 + 2 * 32) / (32 * 12.0)));
  ag_attr_result_free(tr);
  ag_attr_result_free(r);
  /* a deliberately wrong map: PC 32 never ran in it, yet has a metric */
  const double wrong[] = {4, 0, 3, 5, 0, 0};
  ag_attr_map *bad = hand_map(3, 2, wrong);
  CHECK_EQ_INT(ag_attr_apply(bad, &mt, &d, &r), 0);
  CHECK(!ag_attr_conserved(r));
  CHECK(NEAR(r->unattributed, 2));
  CHECK_EQ_INT(r->unattributed_pcs, 1);
  ag_attr_result_free(r);
  /* a metric PC the map does not have (past its code, or misaligned) */
  const uint64_t pc2[] = {0, 17, 4096};
  ag_attr_metric odd = {"inst_executed", V1, "k", pc2, v, 3};
  CHECK_EQ_INT(ag_attr_apply(map, &odd, &d, &r), 0);
  CHECK(!ag_attr_conserved(r) && NEAR(r->unattributed, 18));
  ag_attr_result_free(r);
  ag_attr_map_free(bad);
  ag_diags_release(&d);
  ag_attr_map_free(map);
}

TEST(inst_mix_by_class) {
  const double n[] = {4, 0, 3, 5, 0, 2, 1, 1};
  ag_attr_map *map = hand_map(4, 2, n);
  const uint64_t pc[] = {0, 16, 32, 48};
  const double v[] = {8, 16, 2, 10};
  const char *ops[] = {"FFMA", "BAR.SYNC.DEFER_BLOCKING", "@P0 BRA", NULL};
  ag_attr_metric mt = {"inst_executed", V1, "k", pc, v, 4};
  ag_diags d;
  ag_diags_init(&d);
  double mix[2 * AG_SASS__NCLASS];
  CHECK_EQ_INT(ag_attr_mix(map, &mt, ops, &d, mix), 0);
  CHECK(NEAR(mix[AG_SASS_FP32], 8));
  CHECK(NEAR(mix[AG_SASS_BARRIER], 6));
  CHECK(NEAR(mix[AG_SASS__NCLASS + AG_SASS_BARRIER], 10));
  CHECK(NEAR(mix[AG_SASS__NCLASS + AG_SASS_CONTROL], 2));
  CHECK(NEAR(mix[AG_SASS_MISC], 5) && NEAR(mix[AG_SASS__NCLASS + AG_SASS_MISC], 5));
  double total = 0;
  for (int i = 0; i < 2 * AG_SASS__NCLASS; i++)
    total += mix[i];
  CHECK(NEAR(total, 36));
  ag_attr_metric other = {"inst_executed", V2, "k", pc, v, 4};
  CHECK_EQ_INT(ag_attr_mix(map, &other, ops, &d, mix), AG_EINVAL);
  ag_diags_release(&d);
  ag_attr_map_free(map);
}

TEST(other_version_refused_not_joined) {
  const double n[] = {1, 1};
  ag_attr_map *map = hand_map(1, 2, n);
  const uint64_t pc[] = {0};
  const double v[] = {5};
  ag_attr_metric mt = {"inst_executed", V2, "k", pc, v, 1};
  ag_diags d;
  ag_diags_init(&d);
  ag_attr_result *r = (ag_attr_result *)1;
  CHECK_EQ_INT(ag_attr_apply(map, &mt, &d, &r), AG_EINVAL);
  CHECK(r == NULL);
  CHECK(d.items.n == 1);
  if (d.items.n) {
    CHECK_CONTAINS(d.items.v[0].msg, "program version 222222222222");
    CHECK_CONTAINS(d.items.v[0].msg, "made from 111111111111");
    /* the report names it in not_joined */
    ag_report *rep = ag_report_new(NULL, V1);
    CHECK(rep != NULL);
    if (rep) {
      CHECK_EQ_INT(ag_report_not_joined(rep, "inst_mix: inst_executed x PC-to-region map",
                                        d.items.v[0].msg),
                   0);
      json_t *j = ag_report_to_json(rep);
      char *s = json_dumps(json_object_get(j, "not_joined"), JSON_SORT_KEYS);
      CHECK_CONTAINS(s, "\"what\": \"inst_mix");
      CHECK_CONTAINS(s, "made from 111111111111");
      free(s);
      json_decref(j);
    }
    ag_report_free(rep);
  }
  ag_diags_release(&d);
  ag_diags_init(&d);
  ag_attr_metric other = {"inst_executed", V1, "other_kernel", pc, v, 1};
  CHECK_EQ_INT(ag_attr_apply(map, &other, &d, &r), AG_EINVAL);
  if (d.items.n)
    CHECK_CONTAINS(d.items.v[0].msg, "of kernel 'other_kernel', the map of 'k'");
  ag_diags_release(&d);
  ag_attr_map_free(map);
}

TEST(bad_layouts) {
  static const char *bad[] = {
      "{}",
      "{\"format\":\"argus-map\",\"program\":\"abc\",\"regions\":[],\"functions\":[],"
      "\"units\":[],\"slots\":1}",
      "{\"format\":\"argus-map\",\"program\":\"%s\",\"regions\":[\"k\"],\"functions\":[{"
      "\"name\":\"k\",\"lines\":[1,9]}],\"units\":[{\"function\":0,\"lines\":[2,3],\"slot\":1,"
      "\"region\":3}],\"slots\":2}",
      "{\"format\":\"argus-map\",\"program\":\"%s\",\"regions\":[\"k\"],\"functions\":[{"
      "\"name\":\"k\",\"lines\":[1,9]}],\"units\":[{\"function\":0,\"lines\":[2,3],\"slot\":1,"
      "\"region\":0}],\"slots\":1}",
      "{\"format\":\"argus-map\",\"program\":\"%s\",\"regions\":[\"k\"],\"functions\":[{"
      "\"name\":\"k\",\"lines\":[1,9]}],\"units\":[{\"function\":0,\"lines\":[4,5],\"slot\":1,"
      "\"region\":0},{\"function\":0,\"lines\":[2,3],\"slot\":2,\"region\":0}],\"slots\":3}",
  };
  const char *why[] = {"not an 'argus-map' table", "not an 'argus-map' table",
                       "out of range", "out of range", "out of order"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char text[1024];
    snprintf(text, sizeof text, bad[i], V1);
    json_t *j = json_loads(text, 0, NULL);
    CHECK(j != NULL);
    ag_diags d;
    ag_diags_init(&d);
    ag_attr_layout *L = (ag_attr_layout *)1;
    CHECK_EQ_INT(ag_attr_layout_from_json(j, &d, &L), AG_EINVAL);
    CHECK(L == NULL);
    if (d.items.n)
      CHECK_CONTAINS(d.items.v[0].msg, why[i]);
    ag_diags_release(&d);
    json_decref(j);
  }
  /* a good one, and the line rule */
  char text[1024];
  snprintf(text, sizeof text,
           "{\"format\":\"argus-map\",\"program\":\"%s\",\"regions\":[\"k\",\"k/a\"],"
           "\"functions\":[{\"name\":\"k\",\"lines\":[10,30],\"entry\":true}],\"units\":["
           "{\"function\":0,\"lines\":[12,14],\"slot\":1,\"region\":0},"
           "{\"function\":0,\"lines\":[16,20],\"slot\":2,\"region\":1}],\"slots\":3}",
           V1);
  json_t *j = json_loads(text, 0, NULL);
  ag_diags d;
  ag_diags_init(&d);
  ag_attr_layout *L = NULL;
  CHECK_EQ_INT(ag_attr_layout_from_json(j, &d, &L), 0);
  if (L) {
    CHECK_EQ_INT(ag_attr_unit_of_line(L, 13), 0);
    CHECK_EQ_INT(ag_attr_unit_of_line(L, 11), 0); /* '{': the next unit */
    CHECK_EQ_INT(ag_attr_unit_of_line(L, 15), 1); /* a label: the next unit */
    CHECK_EQ_INT(ag_attr_unit_of_line(L, 25), 1); /* after the last: the last */
    CHECK_EQ_INT(ag_attr_unit_of_line(L, 5), -1); /* outside every function */
    CHECK_EQ_INT(ag_attr_unit_of_line(L, 31), -1);
  }
  ag_attr_layout_free(L);
  ag_diags_release(&d);
  json_decref(j);
}

/* ---------------------------------------------------------- ground truth */

#define K1 3
#define K2 5
#define WARPS 4

TEST(ground_truth_on_the_cpu) {
  su_need_tools();
  char *ptx, *bin = NULL;
  size_t len, blen = 0;
  CHECK_EQ_INT(su_cuda_ptx("tests/data/cuda/map_truth.cu", &ptx, &len), 0);
  ag_diags d;
  ag_diags_init(&d);
  ag_variant_opts o = {AG_VARIANT_MAPPING, NULL, 0, 0};
  ag_variant *v = NULL;
  ag_attr_layout *L = NULL;
  ag_sass_cubin *cub = NULL;
  ag_attr_map *map = NULL, *wrong = NULL;
  uint64_t *slots = NULL;
  CHECK_EQ_INT(ag_variant_make(ptx, len, "map_truth.ptx", &o, &d, &v), 0);
  if (!v || ag_attr_layout_from_json(v->probes, &d, &L))
    goto out;
  ag_str err = AG_STR_INIT;
  CHECK_EQ_INT(su_ptxas("sm_90a", 1, ptx, len, &bin, &blen, &err), 0);
  ag_str_release(&err);
  CHECK_EQ_INT(ag_sass_cubin_parse(bin, blen, "map_truth.cubin", &d, &cub), 0);
  if (!cub)
    goto out;
  int ra = -1, rb = -1;
  for (int r = 0; r < L->nregions; r++) {
    ra = !strcmp(L->regions[r], "map_truth/a") ? r : ra;
    rb = !strcmp(L->regions[r], "map_truth/b") ? r : rb;
  }
  CHECK(ra >= 0 && rb >= 0);
  /* the counts the run gives by construction (every thread in range) */
  slots = ag_calloc(L->nslots, sizeof *slots);
  for (int u = 0; u < L->nunits; u++) {
    const ag_attr_unit *U = &L->units[u];
    if (U->region >= 0) {
      slots[U->slot] = WARPS;
    } else {
      slots[U->slot + (uint32_t)ra] = K1 * WARPS;
      slots[U->slot + (uint32_t)rb] = K2 * WARPS;
    }
  }
  slots[0] = 7; /* executions the run could not keep */
  CHECK_EQ_INT(ag_attr_map_build(L, slots, L->nslots, cub, "map_truth", &d, &map), 0);
  if (!map)
    goto out;
  CHECK_EQ_INT(map->nolines, 0);
  CHECK_EQ_INT((int)map->dropped, 7);
  int helper = -1, t = ag_sass_cubin_text(cub, "map_truth");
  for (int i = 0; i < cub->nfuncs; i++)
    if (strstr(cub->funcs[i].name, "_Z3mixPVffi"))
      helper = i;
  CHECK(helper >= 0);
  int helper_pcs = 0, owned = 0, a_pcs = 0, pads = 0;
  for (int p = 0; p < map->npcs; p++) {
    const double *row = &map->n[(size_t)p * (size_t)map->nregions];
    double sum = 0;
    int owners = 0;
    for (int r = 0; r < map->nregions; r++) {
      sum += row[r];
      owners += row[r] > 0;
    }
    /* the padding after the last function's RET never executes; its row
     * keeps the RET's unit (the helper's: alpha 3/8), for PC samples */
    CHECK((ag_attr_exec_row(map, p) == NULL) == (map->pad[p] != 0));
    CHECK(sum > 0); /* every PC has an owner */
    if (map->pad[p]) {
      pads++;
      CHECK(NEAR(row[ra] / sum, (double)K1 / (K1 + K2)));
      continue;
    }
    if (ag_sass_cubin_pc_func(cub, t, map->pc[p]) == helper) {
      helper_pcs++;
      CHECK(NEAR(row[ra] / sum, (double)K1 / (K1 + K2)));
      CHECK(NEAR(row[rb] / sum, (double)K2 / (K1 + K2)));
    } else {
      owned++;
      CHECK_EQ_INT(owners, 1);
      a_pcs += row[ra] > 0;
    }
  }
  printf("map_truth: %d PCs, %d of the helper (alpha(a) = 3/8), %d with one owner (%d of "
         "'a')\n",
         map->npcs, helper_pcs, owned, a_pcs);
  CHECK(helper_pcs > 0 && a_pcs > 0);
  CHECK(pads > 0);
  CHECK_EQ_INT(pads, map->padding);
  /* ownership from the map alone: the helper's PCs shared by 'a' and 'b' */
  json_t *own = ag_attr_ownership(map);
  CHECK(own != NULL);
  json_t *oa = NULL, *ob = NULL;
  size_t oi;
  json_t *ov;
  json_array_foreach(json_object_get(own, "regions"), oi, ov) {
    const char *q = json_string_value(json_object_get(ov, "region"));
    oa = q && !strcmp(q, "map_truth/a") ? ov : oa;
    ob = q && !strcmp(q, "map_truth/b") ? ov : ob;
  }
  CHECK(oa && ob);
  if (oa && ob) {
    CHECK_EQ_INT((int)json_integer_value(json_object_get(oa, "shared_pcs")), helper_pcs);
    CHECK_EQ_INT((int)json_integer_value(json_object_get(ob, "shared_pcs")), helper_pcs);
    CHECK_EQ_INT((int)json_integer_value(json_object_get(oa, "static_pcs")), helper_pcs + a_pcs);
    /* b: the helper's PCs K2 times per warp, plus its own code once */
    double db = json_real_value(json_object_get(ob, "dynamic"));
    CHECK(db >= (double)helper_pcs * K2 * WARPS);
  }
  CHECK_EQ_INT((int)json_integer_value(json_object_get(own, "dropped")), 7);
  json_decref(own);
  /* the metric a GPU gives where every SASS instruction runs as its block
   * (this helper is straight-line): warp instructions per PC, none on the
   * padding */
  double *val = ag_calloc((size_t)map->npcs, sizeof *val);
  for (int p = 0; p < map->npcs; p++) {
    const double *ex = ag_attr_exec_row(map, p);
    for (int r = 0; ex && r < map->nregions; r++)
      val[p] += ex[r];
  }
  ag_attr_metric mt = {"smsp__sass_inst_executed", L->version, "map_truth", map->pc, val,
                       map->npcs};
  ag_attr_result *res = NULL;
  CHECK_EQ_INT(ag_attr_apply(map, &mt, &d, &res), 0);
  if (res) {
    CHECK(ag_attr_conserved(res));
    /* the helper's instructions: 3/8 to 'a', 5/8 to 'b'; entropy > 0 there */
    double ha = (double)helper_pcs * (K1 + K2) * WARPS * K1 / (K1 + K2);
    CHECK(res->shared[ra] > 0 && NEAR(res->shared[ra], ha));
    CHECK(NEAR(res->shared[rb], (double)helper_pcs * K2 * WARPS));
    ag_attr_result_free(res);
  }
  /* a deliberately wrong map: one kernel unit said never to run */
  for (int u = 0; u < L->nunits; u++)
    if (L->units[u].region == ra) {
      slots[L->units[u].slot] = 0;
      break;
    }
  CHECK_EQ_INT(ag_attr_map_build(L, slots, L->nslots, cub, "map_truth", &d, &wrong), 0);
  if (wrong) {
    CHECK_EQ_INT(ag_attr_apply(wrong, &mt, &d, &res), 0);
    CHECK(res && !ag_attr_conserved(res) && res->unattributed > 0);
    ag_attr_result_free(res);
  }
  /* out of memory at every allocation: layout, map, attribution */
  for (long k = 1;; k++) {
    ag_attr_layout *L2 = NULL;
    ag_attr_map *m2 = NULL;
    ag_attr_result *r2 = NULL;
    ag_alloc_fail_at(k);
    int rc = ag_attr_layout_from_json(v->probes, &d, &L2);
    if (!rc)
      rc = ag_attr_map_build(L2, slots, L2->nslots, cub, "map_truth", &d, &m2);
    if (!rc)
      rc = ag_attr_apply(m2, &mt, &d, &r2);
    ag_alloc_fail_at(0);
    CHECK(rc == 0 || rc == AG_ENOMEM);
    ag_attr_result_free(r2);
    ag_attr_map_free(m2);
    ag_attr_layout_free(L2);
    if (rc == 0)
      break;
  }
  ag_free(val);
  /* too few slots; a kernel the cubin lacks */
  ag_attr_map *none = NULL;
  CHECK_EQ_INT(ag_attr_map_build(L, slots, 1, cub, "map_truth", &d, &none), AG_EINVAL);
  CHECK_EQ_INT(ag_attr_map_build(L, slots, L->nslots, cub, "nope", &d, &none), AG_ENOTFOUND);
  CHECK(none == NULL);
out:
  ag_attr_map_free(map);
  ag_attr_map_free(wrong);
  ag_free(slots);
  ag_sass_cubin_free(cub);
  ag_attr_layout_free(L);
  ag_variant_free(v);
  ag_diags_release(&d);
  ag_free(bin);
  ag_free(ptx);
}

RUN_TESTS(T(alpha_entropy_conservation), T(inst_mix_by_class), T(other_version_refused_not_joined),
          T(bad_layouts),
          T(ground_truth_on_the_cpu))
