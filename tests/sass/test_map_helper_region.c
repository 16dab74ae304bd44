/*
 * test_map_helper_region.c — a region opened inside a helper that two
 * regions call (docs/attribution.md, "Regions inside a helper") on
 * tests/data/cuda/map_helper_region.cu: `hstep` opens `inner` and calls
 * `hleaf` inside it; the kernel calls `hstep` K1 = 3 times from A and K2 = 5
 * times from B. The semantics, checked here on the CPU:
 *   - the layout: hstep's units between its `inner` markers (lines read off
 *     the PTX text) are static, owned by hstep/inner; its units outside them
 *     and all of hleaf's inherit the caller's region;
 *   - the variant (it assembles): the kernel's calls pass A K1 times and B K2
 *     times, the call inside `inner` passes hstep/inner (not the caller's);
 *   - the join on the -lineinfo cubin with the counts of the construction:
 *     every PC on a line of hstep outside `inner` has alpha(A) = 3/8 and
 *     alpha(B) = 5/8; every PC inside it and every PC of hleaf belongs to
 *     hstep/inner alone (entropy 0); the kernel's own PCs to the region
 *     whose markers enclose their line;
 *   - the report: a query of the kernel lists hstep/inner (its code runs in
 *     the kernel); a query of A does not (it is not A's by name); a query of
 *     `inner` lists it alone.
 * Skips (77) without nvcc and ptxas.
 */
#include "argus/attrib.h"
#include "argus/variant.h"
#include "check.h"
#include "sass_util.h"

#include <math.h>

#define K1 3
#define K2 5
#define W 16 /* warps */
#define KERNEL "map_helper_region"

/* the PTX line (1-based) of the first line holding both a and b, after line `from` */
static int line_of(const char *ptx, int from, const char *a, const char *b) {
  int line = 1;
  for (const char *p = ptx; *p; line++) {
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    char buf[512];
    snprintf(buf, sizeof buf, "%.*s", (int)(n < 511 ? n : 511), p);
    if (line > from && strstr(buf, a) && strstr(buf, b))
      return line;
    if (!e)
      break;
    p = e + 1;
  }
  return -1;
}

static int func_index(const ag_attr_layout *L, const char *name) {
  for (int f = 0; f < L->nfuncs; f++)
    if (!strcmp(L->funcs[f].name, name))
      return f;
  return -1;
}

/* the value of (region, stat) in a signal's values, or -1 */
static double val(json_t *o, const char *region, const char *stat) {
  json_t *v = su_value(o, region, stat);
  return v ? json_number_value(json_object_get(v, "value")) : -1;
}

static json_t *ownership(const ag_attr_layout *L, const uint64_t *slots,
                         const ag_sass_cubin *cub, const char *query) {
  ag_attr_inputs in = {L, slots, L->nslots, cub, L->version, NULL, NULL, query, NULL, NULL,
                       NULL, 0};
  ag_diags d;
  ag_diags_init(&d);
  json_t *o = NULL;
  CHECK_EQ_INT(ag_attr_signal("ownership", &in, &d, &o), 0);
  ag_diags_release(&d);
  return o;
}

TEST(helper_region) {
  su_need_tools();
  char *ptx = NULL;
  size_t len = 0;
  ag_diags d;
  ag_diags_init(&d);
  su_mapped mp;
  memset(&mp, 0, sizeof mp);
  ag_attr_map *map = NULL;
  uint64_t *slots = NULL;
  ag_str err = AG_STR_INIT;
  json_t *o = NULL;
  CHECK_EQ_INT(su_cuda_ptx("tests/data/cuda/map_helper_region.cu", &ptx, &len), 0);
  if (!ptx)
    goto out;
  if (su_mapped_make(ptx, len, "map_helper_region.ptx", &d, &mp, &err)) {
    ag_str t = AG_STR_INIT;
    ag_diags_format(&d, &t);
    fprintf(stderr, "mapping: %s%s\n", ag_str_cstr(&t), ag_str_cstr(&err));
    ag_str_release(&t);
    CHECK(0);
    goto out;
  }
  ptx = mp.ptx;
  const ag_variant *v = mp.v;
  const ag_attr_layout *L = mp.L;
  /* the variant assembles */
  char *vbin = NULL;
  size_t vlen = 0;
  int vok = su_ptxas("sm_90a", 0, v->ptx, v->len, &vbin, &vlen, &err);
  if (vok)
    fprintf(stderr, "ptxas: %s\n", ag_str_cstr(&err));
  CHECK_EQ_INT(vok, 0);
  ag_free(vbin);
  int ra = su_region_index(L, KERNEL "/A"), rb = su_region_index(L, KERNEL "/B");
  int root = su_region_index(L, KERNEL), ri = su_region_index(L, "hstep/inner");
  int fs = func_index(L, "hstep"), fl = func_index(L, "hleaf"), fk = func_index(L, KERNEL);
  CHECK(ra >= 0 && rb >= 0 && root >= 0 && ri >= 0 && fs >= 0 && fl >= 0 && fk >= 0);
  if (ra < 0 || rb < 0 || root < 0 || ri < 0 || fs < 0 || fl < 0 || fk < 0)
    goto out;
  /* no region is qualified under a caller: hstep/inner is one region */
  CHECK(su_region_index(L, KERNEL "/A/inner") < 0);
  CHECK(su_region_index(L, KERNEL "/A/hstep/inner") < 0);
  /* the markers' lines in the parent PTX */
  int ib = line_of(ptx, 0, "@argus begin", " inner"), ie = line_of(ptx, 0, "@argus end", " inner");
  int ab = line_of(ptx, 0, "@argus begin", " A"), ae = line_of(ptx, 0, "@argus end", " A");
  int bb = line_of(ptx, 0, "@argus begin", " B"), be = line_of(ptx, 0, "@argus end", " B");
  CHECK(ib > 0 && ie > ib && ab > ie && ae > ab && bb > ae && be > bb);
  /* the layout: inside `inner` static hstep/inner, outside inherited */
  int inside = 0, outside = 0;
  for (int u = 0; u < L->nunits; u++) {
    const ag_attr_unit *U = &L->units[u];
    if (U->func == fs) {
      int in = U->first_line > ib && U->last_line < ie;
      CHECK(in || U->last_line < ib || U->first_line > ie); /* no unit spans a marker */
      CHECK_EQ_INT(U->region, in ? ri : -1);
      inside += in;
      outside += !in;
    } else if (U->func == fl) {
      CHECK_EQ_INT(U->region, -1);
    } else if (U->func == fk) {
      int want = U->first_line > ab && U->last_line < ae   ? ra
                 : U->first_line > bb && U->last_line < be ? rb
                                                           : root;
      CHECK_EQ_INT(U->region, want);
    }
  }
  CHECK(inside >= 1 && outside >= 2);
  /* the calls: A K1 times, B K2 times, hstep/inner once (hleaf, from inside) */
  char pass[64];
  snprintf(pass, sizeof pass, "st.param.b32 [__argus_map_a], %d;", ra);
  CHECK_EQ_INT((int)su_count(v->ptx, pass), K1);
  snprintf(pass, sizeof pass, "st.param.b32 [__argus_map_a], %d;", rb);
  CHECK_EQ_INT((int)su_count(v->ptx, pass), K2);
  snprintf(pass, sizeof pass, "st.param.b32 [__argus_map_a], %d;", ri);
  CHECK_EQ_INT((int)su_count(v->ptx, pass), 1);
  CHECK_EQ_INT((int)su_count(v->ptx, ".param .b32 __argus_map_in"), 2); /* hstep, hleaf */
  /* the counts of the construction on W warps */
  slots = ag_calloc(L->nslots, sizeof *slots);
  for (int u = 0; slots && u < L->nunits; u++) {
    const ag_attr_unit *U = &L->units[u];
    if (U->func == fk)
      slots[U->slot] = W; /* straight-line: every unit once per warp */
    else if (U->func == fs && U->region == ri)
      slots[U->slot] = (K1 + K2) * W;
    else if (U->func == fs) {
      slots[U->slot + (uint32_t)ra] = K1 * W;
      slots[U->slot + (uint32_t)rb] = K2 * W;
    } else if (U->func == fl)
      slots[U->slot + (uint32_t)ri] = (K1 + K2) * W;
  }
  if (ag_attr_map_build(L, slots, L->nslots, mp.cub, KERNEL, &d, &map)) {
    CHECK(0);
    goto out;
  }
  /* per PC, by its PTX line alone: who owns it */
  const ag_attr_func *S = &L->funcs[fs], *F = &L->funcs[fl];
  int n_in = 0, n_out = 0, n_leaf = 0, n_k = 0, n_pad = 0;
  for (int p = 0; p < map->npcs; p++) {
    uint64_t pc = map->pc[p];
    int line = ag_attr_line(map, pc);
    double a = ag_attr_alpha(map, pc, ra), b = ag_attr_alpha(map, pc, rb);
    double i = ag_attr_alpha(map, pc, ri), r = ag_attr_alpha(map, pc, root);
    if (map->pad[p]) { /* after a function's last RET or EXIT: never executed */
      n_pad++;
      CHECK(ag_attr_exec_row(map, p) == NULL);
    } else if (line >= F->first_line && line <= F->last_line) {
      n_leaf++;
      CHECK(i == 1.0 && a == 0 && b == 0);
    } else if (line > ib && line < ie) {
      n_in++;
      CHECK(i == 1.0 && a == 0 && b == 0);
    } else if (line >= S->first_line && line <= S->last_line) {
      n_out++;
      CHECK(fabs(a - 3.0 / 8) < 1e-12 && fabs(b - 5.0 / 8) < 1e-12 && i == 0);
    } else if (line > ab && line < ae) {
      n_k++;
      CHECK(a == 1.0);
    } else if (line > bb && line < be) {
      n_k++;
      CHECK(b == 1.0);
    } else if (line > 0 && a + b + i + r > 0) { /* executed: the kernel's root */
      n_k++;
      CHECK(r == 1.0);
    }
  }
  printf("PCs: %d inside hstep/inner, %d of hstep outside it, %d of hleaf, %d of the kernel, "
         "%d padding\n",
         n_in, n_out, n_leaf, n_k, n_pad);
  CHECK(n_in > 0 && n_out > 0 && n_leaf > 0 && n_k > 0);
  CHECK(n_pad > 0);
  CHECK_EQ_INT(n_pad, map->padding);
  /* the report: the kernel's query lists hstep/inner, A's does not, its own lists it alone */
  o = ownership(L, slots, mp.cub, KERNEL);
  CHECK_EQ_INT((int)val(o, "hstep/inner", "static_pcs"), n_in + n_leaf);
  CHECK_EQ_INT((int)val(o, "hstep/inner", "shared_pcs"), 0);
  CHECK_EQ_INT((int)val(o, KERNEL "/A", "shared_pcs"), n_out);
  CHECK(fabs(val(o, "hstep/inner", "dynamic") - (double)(n_in + n_leaf) * (K1 + K2) * W) < 1e-6);
  json_decref(o);
  o = ownership(L, slots, mp.cub, "A");
  CHECK(val(o, KERNEL "/A", "static_pcs") > 0);
  CHECK(val(o, "hstep/inner", "static_pcs") < 0);
  json_decref(o);
  o = ownership(L, slots, mp.cub, "inner");
  CHECK_EQ_INT((int)val(o, "hstep/inner", "static_pcs"), n_in + n_leaf);
  CHECK(val(o, KERNEL "/A", "static_pcs") < 0);
out:
  json_decref(o);
  ag_attr_map_free(map);
  ag_free(slots);
  if (mp.ptx)
    su_mapped_free(&mp);
  else
    ag_free(ptx);
  ag_str_release(&err);
  ag_diags_release(&d);
}

RUN_TESTS(T(helper_region))
