/*
 * test_attrib_signal.c — the attributed signals of argus observe
 * (ag_attr_signal, src/synth/attrib_signal.c) on evidence recorded on the
 * H200 (tests/data/evidence/README.md: attrib_truth.map_counts.json and
 * attrib_truth.map.sass.json): the layout is the mapping variant of the
 * ground truth's PTX and the cubin its ptxas -lineinfo build, both remade
 * here. The ground truth: the helper `mix` runs 3 times per warp under A and
 * 5 under B (16 warps), so of its 1152 warp instructions A gets 3/8 (432)
 * and B 5/8 (720); C and the kernel's root own their PCs alone.
 *   - inst_mix: A 800, B 1280, C 736, root 240 = CUPTI's 3056; shared parts
 *     432 and 720, none for C; nothing unattributed;
 *   - barriers: every barrier class per region; branch: efficiency 1 (no
 *     divergence), pred_on_share as CUPTI's sums give;
 *   - ownership: A and B share the helper's PCs, C none;
 *   - the queried region selects its subtree;
 *   - refusals: metrics of another program version (not_joined, no value),
 *     a cubin of another version, a wrong map (conservation warning), an
 *     unknown signal, missing inputs.
 * Skips (77) without nvcc and ptxas.
 */
#include "argus/attrib.h"
#include "argus/sass_ev.h"
#include "argus/variant.h"
#include "check.h"
#include "sass_util.h"

#include <math.h>

typedef struct fx {
  ag_variant *v;
  ag_attr_layout *L;
  uint64_t *slots;
  size_t nslots;
  ag_sass_cubin *cub;
  ag_sass_ev *ev;
} fx;

static void fx_free(fx *f) {
  ag_variant_free(f->v);
  ag_attr_layout_free(f->L);
  ag_free(f->slots);
  ag_sass_cubin_free(f->cub);
  ag_sass_ev_free(f->ev);
}

/* 0: ready; 77: no toolkit; else a failure (checked) */
static int fx_load(fx *f) {
  memset(f, 0, sizeof *f);
  char *ptx = NULL, *bin = NULL, *js = NULL;
  size_t len = 0, blen = 0, jlen = 0;
  if (su_cuda_ptx("tests/data/cuda/attrib_truth.cu", &ptx, &len))
    return 77;
  ag_diags d;
  ag_diags_init(&d);
  ag_variant_opts o = {AG_VARIANT_MAPPING, NULL, 0, 0};
  ag_str err = AG_STR_INIT;
  char p[4096];
  json_t *j = NULL;
  int rc = 1;
  if (ag_variant_make(ptx, len, "attrib_truth.ptx", &o, &d, &f->v) ||
      ag_attr_layout_from_json(f->v->probes, &d, &f->L))
    goto out;
  if (su_ptxas("sm_90a", 1, ptx, len, &bin, &blen, &err)) {
    rc = 77;
    goto out;
  }
  if (ag_sass_cubin_parse(bin, blen, "attrib_truth.lineinfo.cubin", &d, &f->cub))
    goto out;
  snprintf(p, sizeof p, "%s/tests/data/evidence/attrib_truth.map_counts.json",
           getenv("ARGUS_SOURCE_DIR"));
  if (ag_file_read(p, &js, &jlen) || !(j = json_loads(js, 0, NULL)) ||
      ag_attr_counts_from_json(j, &d, &f->slots, &f->nslots))
    goto out;
  snprintf(p, sizeof p, "%s/tests/data/evidence/attrib_truth.map.sass.json",
           getenv("ARGUS_SOURCE_DIR"));
  if (ag_sass_ev_load(p, &d, &f->ev))
    goto out;
  rc = 0;
out:
  if (rc == 1) {
    ag_str s = AG_STR_INIT;
    ag_diags_format(&d, &s);
    fprintf(stderr, "fixture: %s\n", ag_str_cstr(&s));
    ag_str_release(&s);
  }
  json_decref(j);
  ag_free(js);
  ag_free(bin);
  ag_free(ptx);
  ag_str_release(&err);
  ag_diags_release(&d);
  return rc;
}

static double val(json_t *o, const char *region, const char *stat) {
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(o, "values"), i, v) {
    const char *r = json_string_value(json_object_get(v, "region"));
    const char *s = json_string_value(json_object_get(v, "stat"));
    if (r && s && !strcmp(r, region) && !strcmp(s, stat)) {
      CHECK_EQ_STR(json_string_value(json_object_get(v, "qual")), "attributed");
      return json_number_value(json_object_get(v, "value"));
    }
  }
  return -1;
}

static json_t *signal_of(const fx *f, const char *signal, const char *region,
                         const char *metric_version) {
  ag_attr_inputs in = {f->L,  f->slots, f->nslots, f->cub, f->L->version,
                       f->ev, metric_version ? metric_version : f->L->version, region};
  ag_diags d;
  ag_diags_init(&d);
  json_t *o = NULL;
  CHECK_EQ_INT(ag_attr_signal(signal, &in, &d, &o), 0);
  ag_diags_release(&d);
  return o;
}

#define NEAR(a, b) CHECK(fabs((a) - (b)) < 1e-6)

TEST(test_inst_mix_truth) {
  fx f;
  int rc = fx_load(&f);
  if (rc == 77) {
    fx_free(&f);
    SKIP("no nvcc or ptxas");
  }
  CHECK_EQ_INT(rc, 0);
  if (rc)
    goto out;
  json_t *o = signal_of(&f, "inst_mix", "attrib_truth", NULL);
  CHECK(o != NULL);
  if (!o)
    goto out;
  CHECK_EQ_INT(json_array_size(json_object_get(o, "missing")), 0);
  CHECK_EQ_INT(json_array_size(json_object_get(o, "not_joined")), 0);
  CHECK_EQ_INT(json_array_size(json_object_get(o, "warnings")), 0);
  NEAR(val(o, "attrib_truth", "kernel_total"), 3056);
  NEAR(val(o, "attrib_truth", "unattributed"), 0);
  NEAR(val(o, "attrib_truth/A", "total"), 800);
  NEAR(val(o, "attrib_truth/B", "total"), 1280);
  NEAR(val(o, "attrib_truth/C", "total"), 736);
  NEAR(val(o, "attrib_truth", "total"), 240);
  /* the helper's 1152 warp instructions split 3/8 : 5/8 */
  NEAR(val(o, "attrib_truth/A", "shared_share") * 800, 432);
  NEAR(val(o, "attrib_truth/B", "shared_share") * 1280, 720);
  NEAR(val(o, "attrib_truth/C", "shared_share"), 0);
  /* the entropy of A's total: 432 of its 800 from PCs of H = H(3/8, 5/8) */
  {
    double hp = -(0.375 * log2(0.375) + 0.625 * log2(0.625)), ha = -1, hc = -1;
    size_t k;
    json_t *x;
    json_array_foreach(json_object_get(o, "values"), k, x) {
      const char *r = json_string_value(json_object_get(x, "region"));
      if (strcmp(json_string_value(json_object_get(x, "stat")), "total"))
        continue;
      if (!strcmp(r, "attrib_truth/A"))
        ha = json_number_value(json_object_get(x, "entropy"));
      if (!strcmp(r, "attrib_truth/C"))
        hc = json_number_value(json_object_get(x, "entropy"));
    }
    NEAR(ha, 432.0 * hp / 800.0);
    NEAR(hc, 0);
  }
  /* the classes of a region sum to its total */
  double sum = 0;
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(o, "values"), i, v) {
    const char *r = json_string_value(json_object_get(v, "region"));
    const char *s = json_string_value(json_object_get(v, "stat"));
    if (!strcmp(r, "attrib_truth/A") && strcmp(s, "total") && strcmp(s, "shared_share"))
      sum += json_number_value(json_object_get(v, "value"));
  }
  NEAR(sum, 800);
  CHECK(val(o, "attrib_truth/A", "fp32") > 0);
  json_decref(o);
  /* the queried region selects its subtree: A alone */
  o = signal_of(&f, "inst_mix", "A", NULL);
  NEAR(val(o, "attrib_truth/A", "total"), 800);
  CHECK(val(o, "attrib_truth/B", "total") < 0);
  json_decref(o);
  /* barriers: every class listed per region */
  o = signal_of(&f, "barriers", "attrib_truth", NULL);
  CHECK(val(o, "attrib_truth/A", "barrier") >= 0);
  CHECK(val(o, "attrib_truth/A", "syncs") >= 0);
  CHECK(val(o, "attrib_truth/C", "membar") >= 0);
  CHECK(val(o, "attrib_truth/C", "warpsync") >= 0);
  NEAR(val(o, "attrib_truth/B", "total"), 1280);
  json_decref(o);
  /* branch: no divergence; pred-on share from CUPTI's sums (94720 / 97792 over the kernel) */
  o = signal_of(&f, "branch", "attrib_truth", NULL);
  NEAR(val(o, "attrib_truth/A", "efficiency"), 1.0);
  NEAR(val(o, "attrib_truth/C", "efficiency"), 1.0);
  double ps = val(o, "attrib_truth/A", "pred_on_share");
  CHECK(ps > 0.9 && ps <= 1.0);
  NEAR(val(o, "attrib_truth/A", "total"), 800); /* warp instructions, as inst_mix's */
  NEAR(val(o, "attrib_truth", "kernel_total"), 3056);
  json_decref(o);
  /* ownership from the map alone: A and B share the helper's PCs */
  o = signal_of(&f, "ownership", "attrib_truth", NULL);
  double sa = val(o, "attrib_truth/A", "shared_pcs"), sb = val(o, "attrib_truth/B", "shared_pcs");
  CHECK(sa > 0 && sa == sb);
  NEAR(val(o, "attrib_truth/C", "shared_pcs"), 0);
  CHECK(val(o, "attrib_truth", "pcs") > 0);
  /* every PC is executed by some region or counted as unexecuted (the helper's
   * PCs, shared by exactly A and B, are in both their counts) */
  double distinct = val(o, "attrib_truth", "static_pcs") + val(o, "attrib_truth/A", "static_pcs") +
                    val(o, "attrib_truth/B", "static_pcs") + val(o, "attrib_truth/C", "static_pcs") -
                    sa;
  CHECK(val(o, "attrib_truth", "unexecuted_pcs") >= 0);
  NEAR(distinct + val(o, "attrib_truth", "unexecuted_pcs"), val(o, "attrib_truth", "pcs"));
  json_decref(o);
out:
  fx_free(&f);
}

TEST(test_refusals) {
  fx f;
  int rc = fx_load(&f);
  if (rc == 77) {
    fx_free(&f);
    SKIP("no nvcc or ptxas");
  }
  CHECK_EQ_INT(rc, 0);
  if (rc)
    goto out;
  /* metrics of another program version: named in not_joined, no value */
  json_t *o = signal_of(&f, "inst_mix", "attrib_truth",
                        "0000000000000000000000000000000000000000000000000000000000000000");
  CHECK_EQ_INT(json_array_size(json_object_get(o, "not_joined")), 1);
  char *t = json_dumps(json_object_get(o, "not_joined"), 0);
  CHECK_CONTAINS(t ? t : "", "joins only the same program version");
  free(t);
  CHECK(val(o, "attrib_truth/A", "total") < 0);
  json_decref(o);
  /* a cubin of another version */
  ag_attr_inputs in = {f.L, f.slots, f.nslots, f.cub, "another", f.ev, f.L->version, NULL};
  ag_diags d;
  ag_diags_init(&d);
  CHECK_EQ_INT(ag_attr_signal("ownership", &in, &d, &o), 0);
  t = json_dumps(o, 0);
  CHECK_CONTAINS(t ? t : "", "the PC-to-region map");
  free(t);
  CHECK(val(o, "attrib_truth/A", "static_pcs") < 0);
  json_decref(o);
  /* a wrong map: the helper's counts lost: its instructions are unattributed
   * and the regions no longer sum to the kernel's total */
  uint64_t *s2 = ag_calloc(f.nslots, sizeof *s2);
  memcpy(s2, f.slots, f.nslots * sizeof *s2);
  for (int u = 0; u < f.L->nunits; u++)
    if (!f.L->funcs[f.L->units[u].func].is_entry)
      for (int r = 0; r < f.L->nregions; r++)
        s2[f.L->units[u].slot + (uint32_t)r] = 0;
  ag_attr_inputs bad = {f.L, s2, f.nslots, f.cub, f.L->version, f.ev, f.L->version, NULL};
  CHECK_EQ_INT(ag_attr_signal("inst_mix", &bad, &d, &o), 0);
  CHECK(val(o, "attrib_truth", "unattributed") >= 1152 - 1e-6);
  t = json_dumps(json_object_get(o, "warnings"), 0);
  CHECK_CONTAINS(t ? t : "", "not the kernel's total");
  free(t);
  json_decref(o);
  ag_free(s2);
  /* an unknown signal; inst_mix without metrics */
  CHECK_EQ_INT(ag_attr_signal("hw_counters", &in, &d, &o), AG_EINVAL);
  CHECK(o == NULL);
  ag_attr_inputs nom = {f.L, f.slots, f.nslots, f.cub, f.L->version, NULL, NULL, NULL};
  CHECK_EQ_INT(ag_attr_signal("inst_mix", &nom, &d, &o), AG_EINVAL);
  ag_str msg = AG_STR_INIT;
  ag_diags_format(&d, &msg);
  CHECK_CONTAINS(ag_str_cstr(&msg), "not an attributed signal");
  CHECK_CONTAINS(ag_str_cstr(&msg), "are all needed");
  ag_str_release(&msg);
  ag_diags_release(&d);
out:
  fx_free(&f);
}

/* The overflow path: a mapping run bound with fewer slots than the layout's
 * (ARGUS_MAP_SLOTS; tests/sass/test_map_bind.c runs the host half) counts
 * every execution in slot 0. The recorded run's executions folded so: the
 * report warns with their number and every signal is missing (the map is
 * empty). With every slot bound, executions in slot 0 are a warning and the
 * values stand. */
TEST(test_dropped) {
  fx f;
  int rc = fx_load(&f);
  if (rc == 77) {
    fx_free(&f);
    SKIP("no nvcc or ptxas");
  }
  CHECK_EQ_INT(rc, 0);
  if (rc)
    goto out;
  uint64_t folded[3] = {0, 0, 0};
  for (size_t i = 0; i < f.nslots; i++)
    folded[0] += f.slots[i];
  CHECK(folded[0] > 0);
  char want[256];
  snprintf(want, sizeof want,
           "the mapping run bound 3 counter slots, its layout needs %u (ARGUS_MAP_SLOTS): the "
           "variant counted all %llu block executions in slot 0 (dropped)",
           f.L->nslots, (unsigned long long)folded[0]);
  const char *sigs[] = {"ownership", "inst_mix"};
  for (int k = 0; k < 2; k++) {
    ag_attr_inputs in = {f.L, folded, 3, f.cub, f.L->version, f.ev, f.L->version, NULL};
    ag_diags d;
    ag_diags_init(&d);
    json_t *o = NULL;
    CHECK_EQ_INT(ag_attr_signal(sigs[k], &in, &d, &o), 0);
    char *t = json_dumps(json_object_get(o, "warnings"), 0);
    CHECK_CONTAINS(t ? t : "", want);
    free(t);
    CHECK_EQ_INT((int)json_array_size(json_object_get(o, "values")), 0);
    CHECK_EQ_INT((int)json_array_size(json_object_get(o, "missing")), 1);
    json_decref(o);
    ag_diags_release(&d);
  }
  /* every slot bound, some executions in slot 0 anyway: a warning, values kept */
  uint64_t *s2 = ag_calloc(f.nslots, sizeof *s2);
  memcpy(s2, f.slots, f.nslots * sizeof *s2);
  s2[0] = 5;
  ag_attr_inputs in = {f.L, s2, f.nslots, f.cub, f.L->version, f.ev, f.L->version, NULL};
  ag_diags d;
  ag_diags_init(&d);
  json_t *o = NULL;
  CHECK_EQ_INT(ag_attr_signal("ownership", &in, &d, &o), 0);
  char *t = json_dumps(json_object_get(o, "warnings"), 0);
  CHECK_CONTAINS(t ? t : "", "the mapping run dropped 5 block executions (slot 0)");
  free(t);
  CHECK(val(o, "attrib_truth/A", "static_pcs") > 0);
  json_decref(o);
  ag_diags_release(&d);
  ag_free(s2);
out:
  fx_free(&f);
}

/* A kernel with no markers: its root region owns every PC, alone. The
 * ground truth's PTX with its marker comments blanked (the lines stay, so
 * the layout's and the cubin's line numbers agree), every unit counted 16
 * times under the kernel that calls it. */
TEST(test_no_markers) {
  char *ptx = NULL, *bin = NULL;
  size_t len = 0, blen = 0;
  if (su_cuda_ptx("tests/data/cuda/attrib_truth.cu", &ptx, &len))
    SKIP("no nvcc");
  for (char *m = ptx; (m = strstr(m, "// @argus"));) /* a marker: a comment line */
    for (; *m && *m != '\n'; m++)
      *m = ' ';
  ag_diags d;
  ag_diags_init(&d);
  ag_variant_opts o = {AG_VARIANT_MAPPING, NULL, 0, 0};
  ag_variant *v = NULL;
  ag_attr_layout *L = NULL;
  ag_sass_cubin *cub = NULL;
  uint64_t *slots = NULL;
  json_t *out = NULL;
  ag_str err = AG_STR_INIT;
  CHECK_EQ_INT(ag_variant_make(ptx, len, "nomarkers.ptx", &o, &d, &v), 0);
  if (!v || ag_attr_layout_from_json(v->probes, &d, &L) ||
      su_ptxas("sm_90a", 1, ptx, len, &bin, &blen, &err) ||
      ag_sass_cubin_parse(bin, blen, "nomarkers.cubin", &d, &cub)) {
    CHECK(0);
    goto out;
  }
  int root = -1;
  for (int r = 0; r < L->nregions; r++) {
    CHECK(strchr(L->regions[r], '/') == NULL); /* kernels' roots only */
    if (!strcmp(L->regions[r], "attrib_truth"))
      root = r;
  }
  CHECK(root >= 0);
  slots = ag_calloc(L->nslots, sizeof *slots);
  int skipped = 0; /* the kernel's last unit never ran: its PCs are unexecuted */
  for (int u = L->nunits - 1; u >= 0 && root >= 0; u--) {
    const ag_attr_unit *U = &L->units[u];
    if (U->region < 0)
      slots[U->slot + (uint32_t)root] = 16; /* the helper, called from attrib_truth */
    else if (U->region == root && skipped++)
      slots[U->slot] = 16;
  }
  ag_attr_inputs in = {L, slots, L->nslots, cub, L->version, NULL, NULL, "attrib_truth"};
  CHECK_EQ_INT(ag_attr_signal("ownership", &in, &d, &out), 0);
  CHECK(val(out, "attrib_truth", "static_pcs") > 0);
  NEAR(val(out, "attrib_truth", "shared_pcs"), 0);
  CHECK(val(out, "attrib_truth", "unexecuted_pcs") > 0);
  NEAR(val(out, "attrib_truth", "static_pcs") + val(out, "attrib_truth", "unexecuted_pcs"),
       val(out, "attrib_truth", "pcs"));
  size_t i;
  json_t *x;
  json_array_foreach(json_object_get(out, "values"), i, x)
      CHECK_EQ_STR(json_string_value(json_object_get(x, "region")), "attrib_truth");
  CHECK_EQ_INT(json_array_size(json_object_get(out, "missing")), 0);
out:
  json_decref(out);
  ag_free(slots);
  ag_sass_cubin_free(cub);
  ag_attr_layout_free(L);
  ag_variant_free(v);
  ag_str_release(&err);
  ag_diags_release(&d);
  ag_free(bin);
  ag_free(ptx);
}

RUN_TESTS(T(test_inst_mix_truth), T(test_refusals), T(test_dropped), T(test_no_markers))
