/*
 * test_attrib_signal.c — the attributed signals of argus observe
 * (ag_attr_signal, src/synth/attrib_signal.c) on evidence recorded on the
 * H200 (tests/data/evidence/README.md: attrib_truth.map_counts.json and
 * attrib_truth.map.sass.json): the layout is the mapping variant of the
 * ground truth's PTX and the cubin its ptxas -lineinfo build, both remade
 * here; the metric's program version is the one the evidence names (the
 * -lineinfo build of that PTX: its SHA-256), not copied from the layout.
 * Every expected value is derived apart from attrib.c, from the construction
 * (the helper `mix` k1 = 3 times per warp under A, k2 = 5 under B, 16 warps)
 * and the recorded rows: per region its kernel PCs' counts (the PC's PTX
 * line between the region's markers) plus k/(k1+k2) of the helper's.
 *   - inst_mix: every region's total and shared part (A 800, B 1280, C 736,
 *     root 240 = CUPTI's 3056), nothing unattributed, the entropy;
 *   - barriers: every barrier class of every region, from the recorded
 *     opcodes (an independent class table) times their counts;
 *   - branch: efficiency and pred_on_share, each metric derived as above;
 *   - ownership: static and shared PCs exactly (the helper's; its padding
 *     none: padding_pcs, unexecuted), pcs, unexecuted_pcs, every region's
 *     dynamic (A's and B's: CUPTI's + the hoisted LDC);
 *   - the queried region selects its subtree;
 *   - refusals: the recorded metrics of another build (not_joined, both
 *     versions, no value), a cubin of another version, a wrong map
 *     (conservation warning), an unknown signal, missing inputs;
 *   - the overflow path: counts folded into slot 0 (a warning, no value).
 * Skips (77) without nvcc and ptxas, or with a ptxas whose cubin is not the
 * recording's.
 */
#include "argus/attrib.h"
#include "argus/plan.h"
#include "argus/sass_ev.h"
#include "argus/variant.h"
#include "check.h"
#include "sass_util.h"

#include <math.h>

typedef struct fx {
  su_mapped mp;      /* the PTX (markers on), its layout and -lineinfo cubin */
  ag_attr_layout *L; /* mp's, borrowed */
  ag_sass_cubin *cub;
  const char *ptx;
  uint64_t *slots;
  size_t nslots;
  ag_sass_ev *ev;
  char mver[65]; /* the metric's program version, from the evidence */
} fx;

static void fx_free(fx *f) {
  su_mapped_free(&f->mp);
  ag_free(f->slots);
  ag_sass_ev_free(f->ev);
}

/* 0: ready; 77: no toolkit; else a failure (checked) */
static int fx_load(fx *f) {
  memset(f, 0, sizeof *f);
  char *ptx = NULL, *js = NULL;
  size_t len = 0, jlen = 0;
  if (su_cuda_ptx("tests/data/cuda/attrib_truth.cu", &ptx, &len))
    return 77;
  ag_diags d;
  ag_diags_init(&d);
  ag_str err = AG_STR_INIT;
  char p[4096];
  json_t *j = NULL;
  int rc = 1;
  if (su_mapped_make(ptx, len, "attrib_truth.ptx", &d, &f->mp, &err)) {
    rc = f->mp.L && !f->mp.bin ? 77 : 1; /* no ptxas */
    goto out;
  }
  f->L = f->mp.L;
  f->cub = f->mp.cub;
  f->ptx = f->mp.ptx;
  size_t blen = f->mp.blen;
  snprintf(p, sizeof p, "%s/tests/data/evidence/attrib_truth.map_counts.json",
           getenv("ARGUS_SOURCE_DIR"));
  if (ag_file_read(p, &js, &jlen) || !(j = json_loads(js, 0, NULL)) ||
      ag_attr_counts_from_json(j, &d, &f->slots, &f->nslots))
    goto out;
  snprintf(p, sizeof p, "%s/tests/data/evidence/attrib_truth.map.sass.json",
           getenv("ARGUS_SOURCE_DIR"));
  if (ag_sass_ev_load(p, &d, &f->ev))
    goto out;
  /* The metric's program version, from the evidence: its variant is the
   * -lineinfo build of the PTX (README: recorded with this variant id, the
   * cubin loaded in place of attrib_truth.ptx) and of our rebuild's size, so
   * it is the version of the PTX we gave ptxas: its SHA-256 (observe joins
   * the same way: the cubin it ran names the PTX it was compiled from). */
  json_t *vj = json_object_get(f->ev->root, "variant");
  const char *rep = json_string_value(json_object_get(vj, "replaces"));
  json_int_t cbytes =
      json_integer_value(json_object_get(json_array_get(json_object_get(f->ev->root, "cubins"), 0),
                                         "bytes"));
  if (cbytes != (json_int_t)blen) { /* another ptxas: the recorded PCs are not ours */
    printf("the recorded cubin has %lld bytes, this ptxas makes %zu: skipped\n",
           (long long)cbytes, blen);
    rc = 77;
    goto out;
  }
  if (!f->ev->variant_id || strcmp(f->ev->variant_id, "attrib_truth-map-lineinfo") || !rep ||
      strlen(rep) < 16 || strcmp(rep + strlen(rep) - 16, "attrib_truth.ptx") ||
      ag_sha256_hex(ptx, len, f->mver)) {
    fprintf(stderr, "fixture: the evidence is not of the -lineinfo build of this PTX (%s, %lld "
                    "bytes; ours %zu)\n",
            f->ev->variant_id ? f->ev->variant_id : "?", (long long)cbytes, blen);
    goto out;
  }
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
  ag_str_release(&err);
  ag_diags_release(&d);
  return rc;
}

static double val(json_t *o, const char *region, const char *stat) {
  json_t *v = su_value(o, region, stat);
  if (v)
    CHECK_EQ_STR(json_string_value(json_object_get(v, "qual")), "attributed");
  return v ? json_number_value(json_object_get(v, "value")) : -1;
}

/* Loads the fixture into f, or skips the case (77: no toolkit, or not the
 * recording's), or fails it (to its label out). */
#define FX_LOAD(f)                                                             \
  do {                                                                         \
    int fx_rc_ = fx_load(&(f));                                                \
    if (fx_rc_ == 77) {                                                        \
      fx_free(&(f));                                                           \
      SKIP("no nvcc or ptxas, or not the recording's");                        \
    }                                                                          \
    CHECK_EQ_INT(fx_rc_, 0);                                                   \
    if (fx_rc_)                                                                \
      goto out;                                                                \
  } while (0)

static json_t *signal_of(const fx *f, const char *signal, const char *region,
                         const char *metric_version) {
  ag_attr_inputs in = {f->L,  f->slots, f->nslots, f->cub, f->mver,
                       f->ev, metric_version ? metric_version : f->mver, region, NULL, NULL,
                       NULL,  0};
  ag_diags d;
  ag_diags_init(&d);
  json_t *o = NULL;
  CHECK_EQ_INT(ag_attr_signal(signal, &in, &d, &o), 0);
  ag_diags_release(&d);
  return o;
}

#define NEAR(a, b) CHECK(fabs((a) - (b)) < 1e-6)

/* ---- the expected values, from the construction and the recorded rows alone ----
 * attrib_truth.cu: the helper `mix` (its own symbol in the kernel's section)
 * runs k1 = 3 times per warp under A and k2 = 5 under B; every other PC is
 * the kernel's, in the region whose markers enclose its PTX line (the
 * -lineinfo table of the rebuilt cubin, the marker lines of the PTX text),
 * the root outside them; 4 CTAs x 128 threads = 16 warps. Per region:
 * kernel PCs' counts + the helper's counts x k / (k1 + k2). Nothing of
 * attrib.c is used. */
#define TK1 3
#define TK2 5
#define TK3 7
#define TW 16
enum { RA, RB, RC, RROOT, NR };
static const char *const rname[NR] = {"attrib_truth/A", "attrib_truth/B", "attrib_truth/C",
                                      "attrib_truth"};
static const char *const bname[4] = {"barrier", "syncs", "membar", "warpsync"};

typedef struct truth {
  double total[NR], shared[NR], bar[NR][4];
  int pcs[NR];      /* PCs each region executed */
  double kernel;    /* sum over the kernel's rows */
  int helper_pcs;   /* the helper's executed PCs */
  int executed_pcs; /* the kernel's PCs with a count */
} truth;

/* the PTX line of the marker `// @argus <kind> <hash> <name>` */
static int marker_line(const char *ptx, const char *kind, const char *name) {
  int line = 1;
  char want[64];
  snprintf(want, sizeof want, "@argus %s ", kind);
  for (const char *p = ptx; *p; line++) {
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    char buf[256];
    snprintf(buf, sizeof buf, "%.*s", (int)(n < 255 ? n : 255), p);
    size_t bl = strlen(buf), nl = strlen(name);
    if (strstr(buf, want) && bl > nl && buf[bl - nl - 1] == ' ' && !strcmp(buf + bl - nl, name))
      return line;
    if (!e)
      break;
    p = e + 1;
  }
  return -1;
}

/* the barrier classes of docs/attribution.md by the opcode's base: 0 barrier,
 * 1 syncs, 2 membar, 3 warpsync, -1 none */
static int bar_class(const char *op) {
  static const char *const cls[4][6] = {{"BAR", "B2R", "R2B", NULL},
                                        {"SYNCS", NULL},
                                        {"MEMBAR", "FENCE", "ERRBAR", "CCTL", "DEPBAR", NULL},
                                        {"WARPSYNC", "BSSY", "BSYNC", NULL}};
  char base[32];
  size_t k = 0;
  while (op && op[k] && op[k] != '.' && k + 1 < sizeof base)
    base[k] = op[k], k++;
  base[k] = 0;
  for (int c = 0; c < 4; c++)
    for (int i = 0; cls[c][i]; i++)
      if (!strcmp(base, cls[c][i]))
        return c;
  return -1;
}

static int expected(const fx *f, const char *metric, truth *t) {
  memset(t, 0, sizeof *t);
  int col = ag_sass_ev_metric(f->ev, metric), text = ag_sass_cubin_text(f->cub, "attrib_truth");
  int lo[3], hi[3];
  const char *names[3] = {"A", "B", "C"};
  for (int r = 0; r < 3; r++) {
    lo[r] = marker_line(f->ptx, "begin", names[r]);
    hi[r] = marker_line(f->ptx, "end", names[r]);
    if (lo[r] < 0 || hi[r] <= lo[r])
      return -1;
  }
  if (col < 0 || text < 0)
    return -1;
  double helper = 0, hbar[4] = {0, 0, 0, 0};
  const int k[NR] = {TK1, TK2, TK3, 1};
  for (size_t i = 0; i < f->ev->nrows; i++) {
    const ag_sass_ev_row *w = &f->ev->rows[i];
    if (!w->variant || strcmp(w->function, "attrib_truth"))
      continue;
    double m = (double)w->v[col];
    const ag_sass_insn *in = ag_sass_ev_insn(f->ev, w->function, w->pc);
    int bc = in ? bar_class(in->op) : -1;
    t->kernel += m;
    t->executed_pcs += m > 0;
    if (in && in->owner && strstr(in->owner, "mix")) {
      if (m > 0 && !strcmp(metric, "smsp__sass_inst_executed") &&
          m != (double)TW * (TK1 + TK2)) /* every helper PC k1 + k2 times per warp */
        return -1;
      helper += m;
      t->helper_pcs += m > 0;
      if (bc >= 0)
        hbar[bc] += m;
      continue;
    }
    uint64_t spc = 0;
    int line = 0;
    if (ag_sass_cubin_section_pc(f->cub, "attrib_truth", w->function, w->pc, &spc) ||
        ag_sass_cubin_pc_line(f->cub, text, spc, &line))
      return -1;
    int r = RROOT;
    for (int q = 0; q < 3; q++)
      if (line > lo[q] && line < hi[q])
        r = q;
    /* a kernel PC runs 0, 1, k or k + 1 times per warp (setup, body, test) */
    double per = m / TW;
    if (!strcmp(metric, "smsp__sass_inst_executed") && per != 0 && per != 1 && per != k[r] &&
        per != k[r] + 1)
      return -1;
    t->total[r] += m;
    t->pcs[r] += m > 0;
    if (bc >= 0)
      t->bar[r][bc] += m;
  }
  const double share[2] = {(double)TK1 / (TK1 + TK2), (double)TK2 / (TK1 + TK2)};
  for (int r = RA; r <= RB; r++) {
    t->total[r] += helper * share[r];
    t->shared[r] = helper * share[r];
    t->pcs[r] += t->helper_pcs;
    for (int c = 0; c < 4; c++)
      t->bar[r][c] += hbar[c] * share[r];
  }
  return 0;
}

/* The helper's padding in the recorded listing: the PCs after its RET (a BRA
 * to itself, NOPs; *ret its PC, 0 when there is none). */
static int helper_padding(const fx *f, uint32_t *ret) {
  int pad = 0;
  *ret = 0;
  for (size_t k = 0; k < f->ev->nins; k++) {
    const ag_sass_insn *in = &f->ev->ins[k];
    if (!strcmp(in->function, "attrib_truth") && in->owner && strstr(in->owner, "mix") &&
        !strncmp(in->op, "RET", 3))
      *ret = in->pc;
  }
  for (size_t k = 0; k < f->ev->nins; k++)
    pad += !strcmp(f->ev->ins[k].function, "attrib_truth") && *ret && f->ev->ins[k].pc > *ret;
  return pad;
}

TEST(test_inst_mix_truth) {
  fx f;
  FX_LOAD(f);
  truth t;
  CHECK_EQ_INT(expected(&f, "smsp__sass_inst_executed", &t), 0);
  printf("expected: A %.0f, B %.0f, C %.0f, root %.0f of %.0f; the helper's %d PCs shared\n",
         t.total[RA], t.total[RB], t.total[RC], t.total[RROOT], t.kernel, t.helper_pcs);
  /* every row is the kernel's and a region's */
  CHECK(t.kernel > 0 && t.kernel == (double)ag_sass_ev_total(f.ev, ag_sass_ev_metric(
                                          f.ev, "smsp__sass_inst_executed")));
  NEAR(t.total[RA] + t.total[RB] + t.total[RC] + t.total[RROOT], t.kernel);
  json_t *o = signal_of(&f, "inst_mix", "attrib_truth", NULL);
  CHECK(o != NULL);
  if (!o)
    goto out;
  CHECK_EQ_INT(json_array_size(json_object_get(o, "missing")), 0);
  CHECK_EQ_INT(json_array_size(json_object_get(o, "not_joined")), 0);
  CHECK_EQ_INT(json_array_size(json_object_get(o, "warnings")), 0);
  NEAR(val(o, "attrib_truth", "kernel_total"), t.kernel);
  NEAR(val(o, "attrib_truth", "unattributed"), 0);
  for (int r = 0; r < NR; r++) {
    double tot = val(o, rname[r], "total");
    NEAR(tot, t.total[r]);
    NEAR(val(o, rname[r], "shared_share") * tot, t.shared[r]);
  }
  /* the entropy of A's total: its shared part from PCs of H = H(3/8, 5/8) */
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
    NEAR(ha, t.shared[RA] * hp / t.total[RA]);
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
  NEAR(sum, t.total[RA]);
  CHECK(val(o, "attrib_truth/A", "fp32") > 0);
  json_decref(o);
  /* the queried region selects its subtree: A alone */
  o = signal_of(&f, "inst_mix", "A", NULL);
  NEAR(val(o, "attrib_truth/A", "total"), t.total[RA]);
  CHECK(val(o, "attrib_truth/B", "total") < 0);
  json_decref(o);
  /* barriers: every class of every region, as the recorded opcodes and counts give */
  o = signal_of(&f, "barriers", "attrib_truth", NULL);
  for (int r = 0; r < NR; r++)
    for (int c = 0; c < 4; c++)
      NEAR(val(o, rname[r], bname[c]), t.bar[r][c]);
  NEAR(val(o, "attrib_truth/B", "total"), t.total[RB]);
  json_decref(o);
  /* branch: no divergence; pred-on share: each metric attributed as above */
  truth th, tp;
  CHECK_EQ_INT(expected(&f, "smsp__sass_thread_inst_executed", &th), 0);
  CHECK_EQ_INT(expected(&f, "smsp__sass_thread_inst_executed_pred_on", &tp), 0);
  o = signal_of(&f, "branch", "attrib_truth", NULL);
  for (int r = 0; r < NR; r++) {
    NEAR(val(o, rname[r], "efficiency"), th.total[r] / (32.0 * t.total[r]));
    NEAR(val(o, rname[r], "pred_on_share"), tp.total[r] / th.total[r]);
  }
  NEAR(val(o, "attrib_truth/A", "efficiency"), 1.0);
  NEAR(val(o, "attrib_truth/A", "total"), t.total[RA]); /* warp instructions, as inst_mix's */
  NEAR(val(o, "attrib_truth", "kernel_total"), t.kernel);
  json_decref(o);
  /* ownership from the map alone: A and B share exactly the helper's PCs.
   * The padding after the helper's RET (a BRA to itself, NOPs: the recorded
   * listing) carries the RET's PTX line but never runs: it is no region's
   * and unexecuted, counted in padding_pcs (docs/attribution.md, "SASS line
   * info") */
  uint32_t ret = 0;
  int pad = helper_padding(&f, &ret);
  printf("expected: %d executed PCs, %d of the helper's padding\n", t.executed_pcs, pad);
  CHECK(pad > 0);
  o = signal_of(&f, "ownership", "attrib_truth", NULL);
  for (int r = 0; r < NR; r++)
    CHECK_EQ_INT((int)val(o, rname[r], "static_pcs"), t.pcs[r]);
  CHECK_EQ_INT((int)val(o, "attrib_truth/A", "shared_pcs"), t.helper_pcs);
  CHECK_EQ_INT((int)val(o, "attrib_truth/B", "shared_pcs"), t.helper_pcs);
  CHECK_EQ_INT((int)val(o, "attrib_truth/C", "shared_pcs"), 0);
  int text = ag_sass_cubin_text(f.cub, "attrib_truth");
  int npcs = text < 0 ? -1 : (int)(f.cub->texts[text].size / 16);
  CHECK_EQ_INT((int)val(o, "attrib_truth", "pcs"), npcs);
  CHECK_EQ_INT((int)val(o, "attrib_truth", "unexecuted_pcs"), npcs - t.executed_pcs);
  CHECK_EQ_INT((int)val(o, "attrib_truth", "padding_pcs"), pad);
  /* dynamic: the mapping run's warp instructions per region (sum over PCs of
   * their unit's count): the metric's where every PC runs as often as its
   * PTX block (C, the root); A and B each have one LDC that ptxas hoisted
   * out of the loop, which keeps the loop body's line: the map counts it k
   * times per warp, CUPTI once (test_derived_truth) */
  NEAR(val(o, "attrib_truth/A", "dynamic"), t.total[RA] + TW * (TK1 - 1));
  NEAR(val(o, "attrib_truth/B", "dynamic"), t.total[RB] + TW * (TK2 - 1));
  NEAR(val(o, "attrib_truth/C", "dynamic"), t.total[RC]);
  NEAR(val(o, "attrib_truth", "dynamic"), t.total[RROOT]);
  CHECK_EQ_INT((int)json_array_size(json_object_get(o, "warnings")), 0);
  json_decref(o);
out:
  fx_free(&f);
}

/* The value of signal/stat in region, or 0 when o has none (a class the
 * region did not execute); qual must be q. */
static double val_or0(json_t *o, const char *region, const char *stat, const char *q) {
  json_t *v = su_value(o, region, stat);
  if (v)
    CHECK_EQ_STR(json_string_value(json_object_get(v, "qual")), q);
  return v ? json_number_value(json_object_get(v, "value")) : 0;
}

/* inst_mix and barriers from the map alone (docs/attribution.md, "Without
 * SASS metrics"), against the CUPTI-attributed ones of the same recorded run.
 * The padding after the helper's RET (a BRA to itself, then NOPs: the
 * recorded listing's PCs after the RET) carries the RET's PTX line but the
 * map excludes it: the map's count, sum_r n(r, p), equals CUPTI's (0) on
 * every one of them, and the rule text says how many were excluded. The
 * map's count differs from CUPTI's m(p) only where explained, recognized from
 * the recorded listing and the construction: one LDC per loop of A and B
 * that ptxas hoisted out of the loop, CUPTI 16 (once per warp), the map
 * k x 16 (it keeps the loop body's PTX line). So per region and class,
 * derived - attributed is: A mem_const 16 (k1 - 1); B 16 (k2 - 1); C and the
 * root 0; barriers 0 everywhere. A wrong sum (a class, a region, the map's
 * counts taken twice, the padding counted) breaks one of them. */
TEST(test_derived_truth) {
  fx f;
  ag_diags d;
  ag_diags_init(&d);
  ag_attr_map *map = NULL;
  json_t *att = NULL, *der = NULL, *bder = NULL, *batt = NULL;
  double *m = NULL;
  FX_LOAD(f);
  ag_attr_inputs in = {f.L,  f.slots, f.nslots, f.cub, f.mver, NULL, NULL, "attrib_truth",
                       f.ev, "no SASS metrics in this test", NULL, 0};
  CHECK_EQ_INT(ag_attr_map_build(f.L, f.slots, f.nslots, f.cub, "attrib_truth", &d, &map), 0);
  CHECK_EQ_INT(ag_attr_signal("inst_mix", &in, &d, &der), 0);
  CHECK_EQ_INT(ag_attr_signal("barriers", &in, &d, &bder), 0);
  att = signal_of(&f, "inst_mix", "attrib_truth", NULL);
  batt = signal_of(&f, "barriers", "attrib_truth", NULL);
  if (!map || !der || !att || !bder || !batt)
    goto out;
  CHECK_EQ_INT(json_array_size(json_object_get(der, "missing")), 0);
  char *w = json_dumps(json_object_get(der, "warnings"), 0);
  CHECK_CONTAINS(w ? w : "", "inst_mix of 'attrib_truth' is derived from the mapping run's "
                             "block counts through line info; warp instructions executed; no "
                             "thread-level or predicated-on counts, so `branch` stays missing");
  CHECK_CONTAINS(w ? w : "", "no SASS metrics in this test");
  /* the rule names the excluded padding: the helper's, as the listing has it */
  uint32_t ret = 0;
  int pad = helper_padding(&f, &ret);
  char rule[96];
  snprintf(rule, sizeof rule, "(no SASS metrics in this test); padding PCs: %d, excluded", pad);
  CHECK_CONTAINS(w ? w : "", rule);
  free(w);
  /* the map's PCs: CUPTI's count, and the helper's RET (the padding follows it) */
  int R = map->nregions, col = ag_sass_ev_metric(f.ev, "smsp__sass_inst_executed");
  int ka = -1, kb = -1, npad = 0, nhoist[2] = {0, 0};
  for (int q = 0; q < R; q++) {
    ka = strcmp(map->regions[q], rname[RA]) ? ka : q;
    kb = strcmp(map->regions[q], rname[RB]) ? kb : q;
  }
  m = ag_calloc((size_t)map->npcs + 1, sizeof *m);
  CHECK(ka >= 0 && kb >= 0 && ret && m);
  if (ka < 0 || kb < 0 || !ret || !m)
    goto out;
  for (size_t i = 0; i < f.ev->nrows; i++) {
    const ag_sass_ev_row *r = &f.ev->rows[i];
    uint64_t spc;
    if (r->variant && !strcmp(r->function, "attrib_truth") &&
        !ag_sass_cubin_section_pc(f.cub, "attrib_truth", r->function, r->pc, &spc) &&
        spc / 16 < (uint64_t)map->npcs)
      m[spc / 16] = (double)r->v[col];
  }
  for (int p = 0; p < map->npcs; p++) {
    /* the executions the map counts at p (those derived inst_mix sums) */
    const double *row = ag_attr_exec_row(map, p);
    double sum = 0;
    for (int r = 0; row && r < R; r++)
      sum += row[r];
    const ag_sass_insn *x = ag_sass_ev_insn(f.ev, "attrib_truth", (uint32_t)map->pc[p]);
    const char *op = x ? x->op : "?";
    if (map->pc[p] > ret) { /* the padding: exactly CUPTI's count, 0 */
      CHECK(!strncmp(op, "BRA", 3) || !strcmp(op, "NOP"));
      CHECK(sum == 0 && m[p] == 0);
      npad += sum == m[p];
    }
    if (sum == m[p])
      continue;
    printf("pc 0x%llx %s: the map %.0f, CUPTI %.0f\n", (unsigned long long)map->pc[p], op, sum,
           m[p]);
    if (row && !strncmp(op, "LDC", 3) && m[p] == TW && (sum == row[ka] || sum == row[kb]) &&
             (row[ka] == TW * TK1 || row[kb] == TW * TK2))
      nhoist[row[ka] > 0 ? 0 : 1]++;
    else
      CHECK(!"a PC whose map count is not CUPTI's, and not explained");
  }
  CHECK_EQ_INT(npad, pad);
  CHECK_EQ_INT(map->padding, pad);
  CHECK_EQ_INT(nhoist[0], 1);
  CHECK_EQ_INT(nhoist[1], 1);
  /* per region and class: derived - attributed as explained */
  int cldc = ag_sass_classify("LDC");
  const int kk[NR] = {TK1, TK2, 0, 0};
  double dk = 0;
  for (int r = 0; r < NR; r++) {
    double dt = 0;
    for (int c = 0; c < AG_SASS__NCLASS; c++) {
      const char *cn = ag_sass_class_name((ag_sass_class)c);
      double x = val_or0(der, rname[r], cn, "derived");
      double y = val_or0(att, rname[r], cn, "attributed");
      double want = 0;
      if (kk[r] && c == cldc)
        want = TW * (kk[r] - 1);
      if (fabs(x - y - want) > 1e-6)
        printf("%s %s: derived %.3f, attributed %.3f, %.0f explained\n", rname[r], cn, x, y,
               want);
      NEAR(x - y, want);
      dt += want;
      if (ag_sass_class_is_barrier((ag_sass_class)c))
        NEAR(val_or0(bder, rname[r], cn, "derived"), val_or0(batt, rname[r], cn, "attributed"));
    }
    NEAR(val_or0(der, rname[r], "total", "derived") - val(att, rname[r], "total"), dt);
    dk += dt;
  }
  NEAR(val_or0(der, "attrib_truth", "kernel_total", "derived") -
           val(att, "attrib_truth", "kernel_total"),
       dk);
  /* the query selects A alone, as for the attributed values */
  json_decref(der);
  der = NULL;
  in.region = "A";
  CHECK_EQ_INT(ag_attr_signal("inst_mix", &in, &d, &der), 0);
  CHECK(der && su_value(der, rname[RA], "total") && !su_value(der, rname[RB], "total"));
out:
  ag_free(m);
  json_decref(att);
  json_decref(der);
  json_decref(batt);
  json_decref(bder);
  ag_attr_map_free(map);
  ag_diags_release(&d);
  fx_free(&f);
}

/* Without SASS metrics and without opcodes (no nvdisasm: the disassembly's
 * status says why), inst_mix is missing with both reasons; branch, which
 * needs thread-level counts, cannot be had from the map at all. */
TEST(test_derived_without_opcodes) {
  fx f;
  ag_diags d;
  ag_diags_init(&d);
  json_t *o = NULL;
  ag_sass_ev *none = NULL, *zero = NULL;
  char *t = NULL;
  FX_LOAD(f);
  const char *js = "{\"format\":\"argus-sass-metrics\",\"version\":1,\"cubins\":[{\"crc\":0}],"
                   "\"columns\":[\"cubin_crc\",\"function\",\"pc\"],\"rows\":[],\"sass\":"
                   "{\"tool\":\"nvdisasm\",\"status\":\"cannot run 'nvdisasm': No such file or "
                   "directory\",\"functions\":[]}}";
  CHECK_EQ_INT(ag_sass_ev_load_mem(js, strlen(js), "none.json", &d, &none), 0);
  ag_attr_inputs in = {f.L,  f.slots, f.nslots, f.cub, f.mver, NULL, NULL, "attrib_truth",
                       none, "the SASS-metrics run failed: CUPTI held", NULL, 0};
  CHECK_EQ_INT(ag_attr_signal("barriers", &in, &d, &o), 0);
  if (!o)
    goto out;
  CHECK_EQ_INT(json_array_size(json_object_get(o, "values")), 0);
  t = json_dumps(json_object_get(o, "missing"), 0);
  CHECK_CONTAINS(t ? t : "", "barriers of kernel 'attrib_truth'");
  CHECK_CONTAINS(t ? t : "", "the SASS-metrics run failed: CUPTI held");
  CHECK_CONTAINS(t ? t : "", "cannot run 'nvdisasm'");
  free(t);
  json_decref(o);
  o = NULL;
  CHECK_EQ_INT(ag_attr_signal("branch", &in, &d, &o), AG_EINVAL);
  CHECK(o == NULL);
  /* evidence in which CUPTI counted nothing for the kernel (gemm_tma's
   * case when the run itself succeeds): derived, with that reason */
  const char *zs = "{\"format\":\"argus-sass-metrics\",\"version\":1,\"cubins\":[{\"crc\":0}],"
                   "\"columns\":[\"cubin_crc\",\"function\",\"pc\",\"smsp__sass_inst_executed\"],"
                   "\"rows\":[],\"sass\":{\"tool\":\"nvdisasm\",\"status\":null,\"functions\":[]}}";
  CHECK_EQ_INT(ag_sass_ev_load_mem(zs, strlen(zs), "zero.json", &d, &zero), 0);
  ag_attr_inputs zin = {f.L,  f.slots, f.nslots, f.cub, f.mver, zero, f.mver, "attrib_truth",
                        f.ev, NULL, NULL, 0};
  CHECK_EQ_INT(ag_attr_signal("inst_mix", &zin, &d, &o), 0);
  CHECK(o && su_value(o, rname[RC], "total"));
  if (o) {
    json_t *v = su_value(o, rname[RC], "total");
    CHECK_EQ_STR(v ? json_string_value(json_object_get(v, "qual")) : "", "derived");
    t = json_dumps(json_object_get(o, "warnings"), 0);
    CHECK_CONTAINS(t ? t : "", "is derived from the mapping run's block counts");
    CHECK_CONTAINS(t ? t : "", "CUPTI counted no instruction of 'attrib_truth'");
    free(t);
  }
out:
  json_decref(o);
  ag_sass_ev_free(zero);
  ag_sass_ev_free(none);
  ag_diags_release(&d);
  fx_free(&f);
}

TEST(test_refusals) {
  fx f;
  FX_LOAD(f);
  /* metrics of another program version: named in not_joined, no value */
  json_t *o = signal_of(&f, "inst_mix", "attrib_truth",
                        "0000000000000000000000000000000000000000000000000000000000000000");
  CHECK_EQ_INT(json_array_size(json_object_get(o, "not_joined")), 1);
  char *t = json_dumps(json_object_get(o, "not_joined"), 0);
  CHECK_CONTAINS(t ? t : "", "joins only the same program version");
  free(t);
  CHECK(val(o, "attrib_truth/A", "total") < 0);
  json_decref(o);
  /* the recorded SASS metrics of another build (tests/data/evidence/README.md:
   * attrib_truth.sass.json, nvcc -cubin -lineinfo of the source without
   * markers): its variant is not the -lineinfo build of the layout's PTX,
   * so its version is that build's (as observe names it), not the layout's:
   * refused, named in not_joined with both versions, no value */
  {
    char p2[4096];
    snprintf(p2, sizeof p2, "%s/tests/data/evidence/attrib_truth.sass.json",
             getenv("ARGUS_SOURCE_DIR"));
    ag_sass_ev *ev2 = NULL;
    ag_diags d2;
    ag_diags_init(&d2);
    CHECK_EQ_INT(ag_sass_ev_load(p2, &d2, &ev2), 0);
    char v2[128];
    snprintf(v2, sizeof v2, "the build of variant %s", ev2 ? ev2->variant_id : "?");
    CHECK(strcmp(v2, f.mver) != 0);
    ag_attr_inputs in2 = {f.L, f.slots, f.nslots, f.cub, f.mver, ev2, v2, NULL, NULL, NULL,
                          NULL, 0};
    json_t *o2 = NULL;
    CHECK_EQ_INT(ag_attr_signal("inst_mix", &in2, &d2, &o2), 0);
    CHECK_EQ_INT(json_array_size(json_object_get(o2, "not_joined")), 1);
    CHECK_EQ_INT(json_array_size(json_object_get(o2, "missing")), 0);
    char *t2 = json_dumps(json_object_get(o2, "not_joined"), 0);
    char both[64];
    snprintf(both, sizeof both, "made from %.12s", f.L->version);
    CHECK_CONTAINS(t2 ? t2 : "", "measured on program version the build o");
    CHECK_CONTAINS(t2 ? t2 : "", both);
    CHECK_CONTAINS(t2 ? t2 : "", "inst_mix of kernel 'attrib_truth'");
    free(t2);
    CHECK(val(o2, "attrib_truth/A", "total") < 0);
    CHECK(val(o2, "attrib_truth", "kernel_total") < 0);
    json_decref(o2);
    ag_sass_ev_free(ev2);
    ag_diags_release(&d2);
  }
  /* a cubin of another version */
  ag_attr_inputs in = {f.L, f.slots, f.nslots, f.cub, "another", f.ev, f.mver, NULL, NULL, NULL,
                       NULL, 0};
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
  ag_attr_inputs bad = {f.L, s2, f.nslots, f.cub, f.mver, f.ev, f.mver, NULL, NULL, NULL, NULL, 0};
  CHECK_EQ_INT(ag_attr_signal("inst_mix", &bad, &d, &o), 0);
  truth tr;
  CHECK_EQ_INT(expected(&f, "smsp__sass_inst_executed", &tr), 0);
  NEAR(val(o, "attrib_truth", "unattributed"), tr.shared[RA] + tr.shared[RB]); /* the helper's */
  t = json_dumps(json_object_get(o, "warnings"), 0);
  CHECK_CONTAINS(t ? t : "", "not the kernel's total");
  free(t);
  json_decref(o);
  ag_free(s2);
  /* an unknown signal, and hw_counters, a signal (observed per launch, its
   * own synthesis: docs/counters.md) that is not attributed; inst_mix
   * without metrics */
  CHECK_EQ_INT(ag_attr_signal("no_such_signal", &in, &d, &o), AG_EINVAL);
  CHECK(o == NULL);
  CHECK(ag_recipe_find("hw_counters") && ag_recipe_find("hw_counters")->qual == AG_QUAL_OBSERVED);
  CHECK_EQ_INT(ag_attr_signal("hw_counters", &in, &d, &o), AG_EINVAL);
  CHECK(o == NULL);
  ag_attr_inputs nom = {f.L, f.slots, f.nslots, f.cub, f.mver, NULL, NULL, NULL, NULL, NULL,
                        NULL, 0};
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
  FX_LOAD(f);
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
    ag_attr_inputs in = {f.L, folded, 3, f.cub, f.mver, f.ev, f.mver, NULL, NULL, NULL, NULL, 0};
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
  ag_attr_inputs in = {f.L, s2, f.nslots, f.cub, f.mver, f.ev, f.mver, NULL, NULL, NULL, NULL, 0};
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
  char *ptx = NULL;
  size_t len = 0;
  if (su_cuda_ptx("tests/data/cuda/attrib_truth.cu", &ptx, &len))
    SKIP("no nvcc");
  for (char *m = ptx; (m = strstr(m, "// @argus"));) /* a marker: a comment line */
    for (; *m && *m != '\n'; m++)
      *m = ' ';
  ag_diags d;
  ag_diags_init(&d);
  su_mapped mp;
  uint64_t *slots = NULL;
  json_t *out = NULL;
  ag_str err = AG_STR_INIT;
  int made = su_mapped_make(ptx, len, "nomarkers.ptx", &d, &mp, &err);
  CHECK_EQ_INT(made, 0);
  if (made)
    goto out;
  const ag_attr_layout *L = mp.L;
  const ag_sass_cubin *cub = mp.cub;
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
  ag_attr_inputs in = {L,    slots, L->nslots, cub, L->version, NULL, NULL, "attrib_truth",
                       NULL, NULL, NULL, 0};
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
  su_mapped_free(&mp);
  ag_str_release(&err);
  ag_diags_release(&d);
}

/* A cubin whose SASS is not sm_90 (the decoder reads sm_90 only): the
 * padding is not recognized, so the map counts it with the RET's unit as
 * before, and the report says so: ownership warns and has no padding_pcs,
 * derived inst_mix's rule names it. The values are the recorded cubin's,
 * its architecture field changed. */
TEST(test_padding_other_sm) {
  fx f;
  json_t *o = NULL, *der = NULL;
  ag_diags d;
  ag_diags_init(&d);
  FX_LOAD(f);
  truth t;
  uint32_t ret = 0;
  int pad = helper_padding(&f, &ret);
  CHECK_EQ_INT(expected(&f, "smsp__sass_inst_executed", &t), 0);
  CHECK_EQ_INT(f.cub->sm, 90);
  f.cub->sm = 80;
  o = signal_of(&f, "ownership", "attrib_truth", NULL);
  char *w = o ? json_dumps(json_object_get(o, "warnings"), 0) : NULL;
  CHECK_CONTAINS(w ? w : "", "ownership of 'attrib_truth': padding PCs: not recognized (the "
                             "cubin's SASS is not sm_90)");
  free(w);
  CHECK(!su_value(o, "attrib_truth", "padding_pcs"));
  CHECK_EQ_INT((int)val(o, "attrib_truth/A", "static_pcs"), t.pcs[RA] + pad);
  CHECK_EQ_INT((int)val(o, "attrib_truth/B", "shared_pcs"), t.helper_pcs + pad);
  NEAR(val(o, "attrib_truth/A", "dynamic"), t.total[RA] + TW * (TK1 - 1) + pad * TW * TK1);
  ag_attr_inputs in = {f.L,  f.slots, f.nslots, f.cub, f.mver, NULL, NULL, "attrib_truth",
                       f.ev, "no SASS metrics here", NULL, 0};
  CHECK_EQ_INT(ag_attr_signal("inst_mix", &in, &d, &der), 0);
  w = der ? json_dumps(json_object_get(der, "warnings"), 0) : NULL;
  CHECK_CONTAINS(w ? w : "", "(no SASS metrics here); padding PCs: not recognized");
  free(w);
out:
  json_decref(o);
  json_decref(der);
  ag_diags_release(&d);
  fx_free(&f);
}

RUN_TESTS(T(test_inst_mix_truth), T(test_derived_truth), T(test_derived_without_opcodes),
          T(test_refusals), T(test_dropped), T(test_no_markers), T(test_padding_other_sm))
