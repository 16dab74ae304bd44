/*
 * map_truth_check.h — the ground-truth rule of the mapping run of
 * tests/data/cuda/attrib_truth.cu (docs/attribution.md, "On the GPU: the
 * ground truth"), shared by the GPU test (the counts of a real run) and the
 * CPU test (counts made by the rule, and broken ones).
 *
 * With W warps and the layout of the mapping variant of its PTX:
 *   - slot 0 (dropped executions) is 0;
 *   - every unit of the kernel `attrib_truth` is static and counted W x n
 *     times with n = 1 or, in region A, B or C, its trip count k1, k2 or
 *     k3 (the loop body); the root's units run once; A, B and C each have a
 *     unit with n = k;
 *   - every unit of the helper `_Z3mixff` is inherited: its slot of A
 *     counts k1 x W, of B k2 x W, of every other region 0;
 *   - the units of the kernels not launched (collector, attrib_param,
 *     attrib_mbar) count 0.
 * Returns 0 or the number of violations, the first ones in why.
 */
#ifndef ARGUS_MAP_TRUTH_CHECK_H
#define ARGUS_MAP_TRUTH_CHECK_H

#include "argus/attrib.h"
#include <math.h>

#include "truth_check.h"

#define MAP_TRUTH_HELPER "_Z3mixff"

/* The index of region `kernel/name` (e.g. attrib_truth/A), or -1. */
static int map_truth_region(const ag_attr_layout *L, const char *kernel, const char *name) {
  char q[256];
  snprintf(q, sizeof q, "%s/%s", kernel, name);
  for (int r = 0; r < L->nregions; r++)
    if (!strcmp(L->regions[r], q))
      return r;
  return -1;
}

/* The kernel's root region: that of its first unit (before the markers). */
static int map_truth_root(const ag_attr_layout *L) {
  for (int u = 0; u < L->nunits; u++)
    if (!strcmp(L->funcs[L->units[u].func].name, TRUTH_KERNEL))
      return L->units[u].region;
  return -1;
}

static int map_truth_check(const ag_attr_layout *L, const uint64_t *slots, size_t nslots,
                           uint64_t warps, int k1, int k2, int k3, char *why, size_t wn) {
  int bad = 0;
  why[0] = 0;
  int ra = map_truth_region(L, TRUTH_KERNEL, "A"), rb = map_truth_region(L, TRUTH_KERNEL, "B");
  int rc = map_truth_region(L, TRUTH_KERNEL, "C"), root = map_truth_root(L);
  if (ra < 0 || rb < 0 || rc < 0 || root < 0 || !warps) {
    truth_add(why, wn, &bad, 0, "the layout lacks regions A, B, C or the kernel's root; ");
    return bad;
  }
  if (nslots < L->nslots) {
    truth_add(why, wn, &bad, 0, "%zu counts for %u slots; ", nslots, L->nslots);
    return bad;
  }
  if (slots[0])
    truth_add(why, wn, &bad, 0, "%llu executions dropped; ", (unsigned long long)slots[0]);
  int loops[3] = {0, 0, 0}, helper_units = 0, root_units = 0;
  const int rs[3] = {ra, rb, rc}, ks[3] = {k1, k2, k3};
  for (int u = 0; u < L->nunits; u++) {
    const ag_attr_unit *U = &L->units[u];
    const char *f = L->funcs[U->func].name;
    int kernel = !strcmp(f, TRUTH_KERNEL), helper = !strcmp(f, MAP_TRUTH_HELPER);
    if (kernel != (U->region >= 0) && (kernel || helper)) {
      truth_add(why, wn, &bad, 4, "unit %d of %s (lines %d-%d) is %s; ", u, f, U->first_line,
                U->last_line, kernel ? "inherited, want static" : "static, want inherited");
      continue;
    }
    int nown = U->region >= 0 ? 1 : L->nregions;
    for (int r = 0; r < nown; r++) {
      uint64_t v = slots[U->slot + (uint32_t)r], want = 0;
      int reg = U->region >= 0 ? U->region : r;
      if (kernel) {
        uint64_t n = v / warps;
        int i = reg == ra ? 0 : reg == rb ? 1 : reg == rc ? 2 : -1;
        int ok = v % warps == 0 && (n == 1 || (i >= 0 && n == (uint64_t)ks[i])) &&
                 (i >= 0 || reg == root);
        if (ok && i >= 0 && n == (uint64_t)ks[i])
          loops[i]++;
        root_units += reg == root;
        if (!ok)
          truth_add(why, wn, &bad, 4, "unit %d (lines %d-%d, %s): %llu for %llu warps, want 1%s "
                    "per warp; ", u, U->first_line, U->last_line, L->regions[reg],
                    (unsigned long long)v, (unsigned long long)warps,
                    i == 0 ? " or k1" : i == 1 ? " or k2" : i == 2 ? " or k3" : "");
        continue;
      }
      if (helper)
        want = reg == ra ? (uint64_t)k1 * warps : reg == rb ? (uint64_t)k2 * warps : 0;
      if (v != want)
        truth_add(why, wn, &bad, 4, "unit %d of %s (lines %d-%d) under %s: %llu, want %llu; ", u,
                  f, U->first_line, U->last_line, L->regions[reg], (unsigned long long)v,
                  (unsigned long long)want);
    }
    helper_units += helper;
  }
  if (!helper_units)
    truth_add(why, wn, &bad, 0, "no unit of the helper %s; ", MAP_TRUTH_HELPER);
  if (!root_units)
    truth_add(why, wn, &bad, 0, "no unit of the kernel's root; ");
  for (int i = 0; i < 3; i++)
    if (!loops[i])
      truth_add(why, wn, &bad, 0, "no unit of %s runs k = %d times per warp; ",
                L->regions[rs[i]], ks[i]);
  return bad;
}

/* The join's rule on a warp-instruction metric of the kernel attributed
 * through the map (res = ag_attr_apply(map, mt)): every helper PC (code of
 * the helper's symbol in the cubin) has alpha(A) = k1 / (k1 + k2) and
 * alpha(B) = k2 / (k1 + k2), every other PC one owner (entropy 0); nothing
 * unattributed, sum_r m_r = the total, and the shared part of A is
 * k1 / (k1 + k2) of the helper's instructions. *helper_pcs: their number.
 * Returns 0 or the number of violations. */
static int map_truth_join(const ag_attr_map *map, const ag_sass_cubin *cub, const ag_attr_metric *mt,
                          const ag_attr_result *res, int k1, int k2, int *helper_pcs,
                          char *why, size_t wn) {
  int bad = 0, ra = -1, rb = -1, t = ag_sass_cubin_text(cub, TRUTH_KERNEL);
  why[0] = 0;
  *helper_pcs = 0;
  for (int r = 0; r < map->nregions; r++) {
    ra = !strcmp(map->regions[r], TRUTH_KERNEL "/A") ? r : ra;
    rb = !strcmp(map->regions[r], TRUTH_KERNEL "/B") ? r : rb;
  }
  if (ra < 0 || rb < 0 || t < 0 || res->npcs != mt->npcs) {
    truth_add(why, wn, &bad, 0, "the map lacks regions A and B or the kernel; ");
    return bad;
  }
  double want = (double)k1 / (k1 + k2), helper_total = 0;
  for (int p = 0; p < mt->npcs; p++) {
    int q = 0;
    while (q < map->npcs && map->pc[q] != mt->pc[p])
      q++;
    if (q == map->npcs) {
      truth_add(why, wn, &bad, 4, "metric pc 0x%llx is not in the map; ",
                (unsigned long long)mt->pc[p]);
      continue;
    }
    const double *row = &map->n[(size_t)q * (size_t)map->nregions];
    double sum = 0;
    for (int r = 0; r < map->nregions; r++)
      sum += row[r];
    if (map->pad[q]) { /* after a function's last RET or EXIT: never executed */
      if (mt->value[p] != 0 || ag_attr_exec_row(map, q))
        truth_add(why, wn, &bad, 4, "padding pc 0x%llx: metric %.17g, want 0, and no "
                  "execution in the map; ",
                  (unsigned long long)mt->pc[p], mt->value[p]);
      continue;
    }
    int f = ag_sass_cubin_pc_func(cub, t, mt->pc[p]);
    int helper = f >= 0 && strstr(cub->funcs[f].name, "$" MAP_TRUTH_HELPER) != NULL;
    if (helper) {
      ++*helper_pcs;
      helper_total += mt->value[p];
      if (!(sum > 0) || fabs(row[ra] / sum - want) > 1e-12 ||
          fabs(row[rb] / sum - (1 - want)) > 1e-12 || !(res->entropy[p] > 0))
        truth_add(why, wn, &bad, 4, "helper pc 0x%llx: alpha(A) %.6g, want %.6g, entropy %.3g; ",
                  (unsigned long long)mt->pc[p], sum > 0 ? row[ra] / sum : -1.0, want,
                  res->entropy[p]);
    } else if (res->entropy[p] != 0) {
      truth_add(why, wn, &bad, 4, "pc 0x%llx: entropy %.3g, want 0 (one owner); ",
                (unsigned long long)mt->pc[p], res->entropy[p]);
    }
  }
  if (!*helper_pcs)
    truth_add(why, wn, &bad, 0, "no helper PC among the metric's; ");
  if (res->unattributed != 0 || !ag_attr_conserved(res))
    truth_add(why, wn, &bad, 0, "%.17g unattributed (%d PCs), conservation %s; ",
              res->unattributed, res->unattributed_pcs, ag_attr_conserved(res) ? "holds" : "FAILS");
  double sa = helper_total * want;
  if (fabs(res->shared[ra] - sa) > 1e-9 * (sa > 1 ? sa : 1))
    truth_add(why, wn, &bad, 0, "A's shared part %.17g, want %.17g; ", res->shared[ra], sa);
  for (int r = 0; r < map->nregions; r++)
    if (r != ra && r != rb && res->shared[r] != 0)
      truth_add(why, wn, &bad, 0, "%s has a shared part %.17g, want 0; ", map->regions[r],
                res->shared[r]);
  return bad;
}

#endif
