/*
 * test_attrib_src.c — ownership's view by source file (ag_attr_sources,
 * src/synth/attrib_src.c; docs/attribution.md, "By source file"):
 *   - a constructed map and PTX: every row exact (files, inlined function
 *     from the .debug_str bytes, the PTX function, lines), a `.loc` with
 *     line 0 keeping the position before it, a PC before any `.loc` counted
 *     apart, the padding and unexecuted PCs in no row, a region selection;
 *     refusals: a PTX without .loc (AG_ENOTFOUND, the reason named);
 *   - the ground truth recorded on the H200 (attrib_truth.map_counts.json)
 *     through ag_attr_signal("ownership") on the PTX compiled -lineinfo:
 *     the regions' dynamic the same as without line info (the same map),
 *     the file rows plus the unplaced part = the regions' total, the helper
 *     `mix` = 16 warps x (k1 + k2) x its executed PCs (counted here from
 *     the cubin's symbols, not from attrib_src.c), its first statement's
 *     source line among the lines; a subregion's query: its executions
 *     alone; without .loc a warning and no file row.
 * The recorded part skips (77) without nvcc and ptxas.
 */
#include "argus/attrib.h"
#include "check.h"
#include "sass_util.h"

#include <math.h>

#define NEAR(a, b) CHECK(fabs((a) - (b)) < 1e-9)

/* the row of `view` whose `key` is `name` (and line `line` when > 0) */
static json_t *row_of(json_t *src, const char *view, const char *key, const char *name,
                      int line) {
  size_t i;
  json_t *r;
  json_array_foreach(json_object_get(src, view), i, r) {
    const char *k = json_string_value(json_object_get(r, key));
    if (k && !strcmp(k, name) &&
        (line <= 0 || json_integer_value(json_object_get(r, "line")) == line))
      return r;
  }
  return NULL;
}

static double dyn(json_t *r) { return r ? json_number_value(json_object_get(r, "dynamic")) : -1; }

/* lines: 1-3 header, 4-15 the kernel, 16-21 a .func, 22-29 the strings
 * (_Z3muli and _Z3mulf: two overloads of `mul`, one function row) */
static const char ptx_text[] =
    ".version 8.0\n"                                                /* 1 */
    ".file\t1 \"/src/a.cu\"\n"                                      /* 2 */
    ".file\t2 \"/src/h.cuh\"\n"                                     /* 3 */
    ".visible .entry kern(\n"                                       /* 4 */
    ")\n"                                                           /* 5 */
    "{\n"                                                           /* 6 */
    "\t.loc\t1 10 3\n"                                              /* 7 */
    "\tadd.s32 %r1, %r1, 1;\n"                                      /* 8 */
    "\t.loc\t2 5 1, function_name $L__info_string0, inlined_at 1 11 2\n" /* 9 */
    "\tmul.lo.s32 %r1, %r1, 3;\n"                                   /* 10 */
    "\t.loc\t1 0 0\n"                                               /* 11 */
    "\tsub.s32 %r1, %r1, 1;\n"                                      /* 12 */
    "\t.loc\t2 7 1, function_name $L__info_string1, inlined_at 1 12 2\n" /* 13 */
    "\tmul.f32 %f1, %f1, 0f40400000;\n"                             /* 14 */
    "}\n"                                                           /* 15 */
    ".func (.param .b32 r) helper(\n"                               /* 16 */
    "{\n"                                                           /* 17 */
    "\tld.param.b32 %r2, [r];\n"                                    /* 18 */
    "\t.loc\t1 20 1\n"                                              /* 19 */
    "\tst.param.b32 [r], %r2;\n"                                    /* 20 */
    "}\n"                                                           /* 21 */
    "\t.section\t.debug_str\n"                                      /* 22 */
    "\t{\n"                                                         /* 23 */
    "$L__info_string0:\n"                                           /* 24 */
    ".b8 95,90,51,109,117\n"                                        /* 25 */
    ".b8 108,105,0\n"                                               /* 26 */
    "$L__info_string1:\n"                                           /* 27 */
    ".b8 95,90,51,109,117,108,102,0\n"                              /* 28 */
    "\t}\n";

enum { NP = 8, NR = 2 };

/* A map of 7 PCs over regions kern/A and kern/B (by construction). */
static void make_map(ag_attr_map *m, char *regs[NR], uint64_t pc[NP], int line[NP],
                     double n[NP * NR], unsigned char pad[NP]) {
  static const int lines[NP] = {8, 10, 12, 18, 20, 10, 8, 14};
  static const double rows[NP][NR] = {{10, 0}, {4, 6}, {1, 1},   {0, 7},
                                      {3, 0},  {100, 0}, {0, 0}, {2, 0}};
  memset(m, 0, sizeof *m);
  for (int p = 0; p < NP; p++) {
    pc[p] = (uint64_t)p * 16;
    line[p] = lines[p];
    n[p * NR] = rows[p][0], n[p * NR + 1] = rows[p][1];
    pad[p] = p == 5; /* the padding: never executes, whatever its row */
  }
  regs[0] = "kern/A", regs[1] = "kern/B";
  m->kernel = "kern";
  m->regions = regs;
  m->nregions = NR;
  m->npcs = NP;
  m->pc = pc, m->line = line, m->n = n, m->pad = pad;
}

TEST(test_constructed) {
  ag_attr_map m;
  char *regs[NR];
  uint64_t pc[NP];
  int line[NP];
  double n[NP * NR];
  unsigned char pad[NP];
  make_map(&m, regs, pc, line, n, pad);
  ag_diags d;
  ag_diags_init(&d);
  json_t *src = NULL;
  CHECK_EQ_INT(ag_attr_sources(&m, NULL, ptx_text, strlen(ptx_text), 0, &d, &src), 0);
  CHECK(src != NULL);
  if (!src)
    return;
  /* executed: 10 + 10 + 2 + 7 + 3 (the padding's 100 and the unexecuted PC: no row) */
  NEAR(json_number_value(json_object_get(src, "total")), 34);
  /* line 16 precedes the .func's first .loc: apart */
  NEAR(dyn(json_object_get(src, "no_source")), 7);
  CHECK_EQ_INT((int)json_integer_value(json_object_get(json_object_get(src, "no_source"), "pcs")),
               1);
  /* h.cuh: line 10 (4 + 6), line 12, whose `.loc 1 0 0` keeps h.cuh:5 (1 + 1), and
   * line 14 (h.cuh:7, the other `mul`: 2) */
  NEAR(dyn(row_of(src, "files", "file", "/src/h.cuh", 0)), 14);
  NEAR(dyn(row_of(src, "files", "file", "/src/a.cu", 0)), 13);
  CHECK_EQ_INT(json_array_size(json_object_get(src, "files")), 2);
  /* files in order of executions: h.cuh (14) first */
  CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(json_object_get(src, "files"), 0),
                                                 "file")),
               "/src/h.cuh");
  /* functions: the inlined `mul` (from the .b8 bytes of _Z3muli and _Z3mulf: one row),
   * the PTX functions */
  NEAR(dyn(row_of(src, "functions", "function", "mul", 0)), 14);
  CHECK_EQ_INT(json_array_size(json_object_get(src, "functions")), 3);
  NEAR(dyn(row_of(src, "functions", "function", "kern", 0)), 10);
  NEAR(dyn(row_of(src, "functions", "function", "helper", 0)), 3);
  CHECK_EQ_STR(json_string_value(json_object_get(row_of(src, "functions", "function", "mul", 0),
                                                 "file")),
               "/src/h.cuh");
  /* lines */
  NEAR(dyn(row_of(src, "lines", "file", "/src/h.cuh", 5)), 12);
  NEAR(dyn(row_of(src, "lines", "file", "/src/a.cu", 10)), 10);
  NEAR(dyn(row_of(src, "lines", "file", "/src/a.cu", 20)), 3);
  NEAR(dyn(row_of(src, "lines", "file", "/src/h.cuh", 7)), 2);
  CHECK_EQ_INT((int)json_integer_value(json_object_get(src, "lines_total")), 4);
  json_decref(src);

  /* the lines cut to the first 1; region A alone: 10 + 4 + 1 + 3 + 2 */
  unsigned char sel[NR] = {1, 0};
  CHECK_EQ_INT(ag_attr_sources(&m, sel, ptx_text, strlen(ptx_text), 1, &d, &src), 0);
  NEAR(json_number_value(json_object_get(src, "total")), 20);
  NEAR(dyn(row_of(src, "files", "file", "/src/a.cu", 0)), 13);
  NEAR(dyn(row_of(src, "files", "file", "/src/h.cuh", 0)), 7);
  CHECK_EQ_INT((int)json_integer_value(json_object_get(json_object_get(src, "no_source"), "pcs")),
               0);
  CHECK_EQ_INT(json_array_size(json_object_get(src, "lines")), 1);
  NEAR(dyn(row_of(src, "lines", "file", "/src/a.cu", 10)), 10);
  json_decref(src);

  /* no .loc: refused with the reason */
  static const char plain[] = ".version 8.0\n.visible .entry kern(\n)\n{\n\tret;\n}\n";
  src = NULL;
  CHECK_EQ_INT(ag_attr_sources(&m, NULL, plain, strlen(plain), 0, &d, &src), AG_ENOTFOUND);
  CHECK(src == NULL);
  ag_str msg = AG_STR_INIT;
  ag_diags_format(&d, &msg);
  CHECK(strstr(ag_str_cstr(&msg), "no .loc line info") != NULL);
  CHECK(strstr(ag_str_cstr(&msg), "-lineinfo") != NULL);
  ag_str_release(&msg);
  ag_diags_release(&d);
}

/* the recorded ground truth: the mapping of attrib_truth.cu's PTX (with or
 * without -lineinfo), the recorded counter slots */
static int recorded(const char *extra, su_mapped *mp, uint64_t **slots, size_t *nslots) {
  char *ptx = NULL, *js = NULL, p[4096];
  size_t len = 0, jlen = 0;
  if (su_cuda_ptx_with("tests/data/cuda/attrib_truth.cu", extra, &ptx, &len))
    return 77;
  ag_diags d;
  ag_diags_init(&d);
  ag_str err = AG_STR_INIT;
  json_t *j = NULL;
  int rc = 1;
  if (su_mapped_make(ptx, len, "attrib_truth.ptx", &d, mp, &err)) {
    rc = mp->L && !mp->bin ? 77 : 1;
    goto out;
  }
  snprintf(p, sizeof p, "%s/tests/data/evidence/attrib_truth.map_counts.json",
           getenv("ARGUS_SOURCE_DIR"));
  if (ag_file_read(p, &js, &jlen) || !(j = json_loads(js, 0, NULL)) ||
      ag_attr_counts_from_json(j, &d, slots, nslots))
    goto out;
  rc = 0;
out:
  json_decref(j);
  ag_free(js);
  ag_str_release(&err);
  ag_diags_release(&d);
  return rc;
}

static json_t *ownership(const su_mapped *mp, const uint64_t *slots, size_t nslots,
                         const char *region, const char *ptx, size_t len) {
  ag_attr_inputs in = {mp->L, slots, nslots, mp->cub, mp->L->version, NULL, NULL, region,
                       NULL,  NULL,  ptx,  len};
  ag_diags d;
  ag_diags_init(&d);
  json_t *o = NULL;
  CHECK_EQ_INT(ag_attr_signal("ownership", &in, &d, &o), 0);
  ag_diags_release(&d);
  return o;
}

/* the value {region, stat} or -1 */
static double val(json_t *o, const char *region, const char *stat) {
  json_t *v = su_value(o, region, stat);
  return v ? json_number_value(json_object_get(v, "value")) : -1;
}

/* the sum of the values whose stat starts with `prefix` (and their qual) */
static double sum_prefix(json_t *o, const char *prefix, int *n, int *derived) {
  size_t i;
  json_t *v;
  double s = 0;
  *n = 0, *derived = 0;
  json_array_foreach(json_object_get(o, "values"), i, v) {
    const char *st = json_string_value(json_object_get(v, "stat"));
    if (!st || strncmp(st, prefix, strlen(prefix)))
      continue;
    s += json_number_value(json_object_get(v, "value"));
    (*n)++;
    *derived += !strcmp(json_string_value(json_object_get(v, "qual")), "derived");
  }
  return s;
}

static int has_warning(json_t *o, const char *needle) {
  size_t i;
  json_t *w;
  json_array_foreach(json_object_get(o, "warnings"), i, w) if (
      strstr(json_string_value(w), needle)) return 1;
  return 0;
}

TEST(test_recorded_truth) {
  su_mapped li = {0}, plain = {0};
  uint64_t *s1 = NULL, *s2 = NULL;
  size_t n1 = 0, n2 = 0;
  json_t *o = NULL, *o0 = NULL;
  int r1 = recorded("-lineinfo", &li, &s1, &n1), r2 = r1 ? r1 : recorded(NULL, &plain, &s2, &n2);
  if (r1 == 77 || r2 == 77) {
    su_mapped_free(&li);
    su_mapped_free(&plain);
    ag_free(s1);
    ag_free(s2);
    SKIP("no nvcc or ptxas");
  }
  CHECK_EQ_INT(r1, 0);
  CHECK_EQ_INT(r2, 0);
  if (r1 || r2)
    goto out;
  CHECK(strstr(li.ptx, ".loc") != NULL);
  o = ownership(&li, s1, n1, "attrib_truth", li.ptx, li.len);
  o0 = ownership(&plain, s2, n2, "attrib_truth", plain.ptx, plain.len);
  if (!o || !o0)
    goto out;
  /* the same map with or without line info: every region's dynamic */
  static const char *const regs[] = {"attrib_truth", "attrib_truth/A", "attrib_truth/B",
                                     "attrib_truth/C"};
  double regions = 0;
  for (int r = 0; r < 4; r++) {
    double a = val(o, regs[r], "dynamic"), b = val(o0, regs[r], "dynamic");
    CHECK(a > 0);
    NEAR(a, b);
    regions += a;
  }
  /* the file rows (with the unplaced part) add up to the regions' total */
  int nf = 0, df = 0, nfn = 0, dfn = 0, nl = 0, dl = 0;
  double files = sum_prefix(o, "file:", &nf, &df);
  double funcs = sum_prefix(o, "function:", &nfn, &dfn);
  sum_prefix(o, "line:", &nl, &dl);
  CHECK(nf >= 1);
  CHECK_EQ_INT(df, nf); /* derived, every one */
  CHECK_EQ_INT(dfn, nfn);
  CHECK(nl >= 1 && nl <= 12);
  NEAR(files, regions);
  NEAR(funcs + (val(o, "attrib_truth", "file:(no source line)") > 0
                    ? val(o, "attrib_truth", "file:(no source line)")
                    : 0),
       regions);
  /* the helper: 16 warps x (3 + 5) per executed PC of its symbol (the cubin's) */
  char cu[4096];
  snprintf(cu, sizeof cu, "%s/tests/data/cuda/attrib_truth.cu", getenv("ARGUS_SOURCE_DIR"));
  int t = ag_sass_cubin_text(li.cub, "attrib_truth"), helper_pcs = 0;
  CHECK(t >= 0);
  ag_attr_map *map = NULL;
  ag_diags d;
  ag_diags_init(&d);
  CHECK_EQ_INT(ag_attr_map_build(li.L, s1, n1, li.cub, "attrib_truth", &d, &map), 0);
  ag_diags_release(&d);
  for (int p = 0; map && p < map->npcs; p++) {
    int f = ag_sass_cubin_pc_func(li.cub, t, map->pc[p]);
    const double *row = ag_attr_exec_row(map, p);
    if (f >= 0 && strstr(li.cub->funcs[f].name, "mix") && row && row[1] + row[2] > 0)
      helper_pcs++;
  }
  ag_attr_map_free(map);
  CHECK(helper_pcs > 4);
  ag_str stat = AG_STR_INIT;
  ag_str_printf(&stat, "function:%s:mix", cu);
  NEAR(val(o, "attrib_truth", ag_str_cstr(&stat)), 16.0 * (3 + 5) * helper_pcs);
  /* the helper's first statement's line, by the text of the source */
  char *text = NULL;
  size_t tl = 0;
  CHECK_EQ_INT(ag_file_read(cu, &text, &tl), 0);
  const char *at = text ? strstr(text, "a = fmaf(a, 1.0001f, s);") : NULL;
  int ln = 1;
  for (const char *c = text; at && c < at; c++)
    ln += *c == '\n';
  ag_str_clear(&stat);
  ag_str_printf(&stat, "line:%s:%d (mix)", cu, ln);
  double lv = val(o, "attrib_truth", ag_str_cstr(&stat));
  CHECK(lv > 0);
  NEAR(fmod(lv, 16.0 * (3 + 5)), 0);
  ag_free(text);
  ag_str_release(&stat);
  CHECK(has_warning(o, "what a file-level profiler says"));
  /* without .loc: no file row, a warning naming -lineinfo */
  CHECK(has_warning(o0, "no view by source file"));
  CHECK(has_warning(o0, "-lineinfo"));
  sum_prefix(o0, "file:", &nf, &df);
  CHECK_EQ_INT(nf, 0);
  /* the queried region's executions only: B's file rows add up to B's dynamic */
  json_t *ob = ownership(&li, s1, n1, "attrib_truth/B", li.ptx, li.len);
  double fb = ob ? sum_prefix(ob, "file:", &nf, &df) : -1;
  CHECK(nf >= 1);
  NEAR(fb, val(o, "attrib_truth/B", "dynamic"));
  CHECK(fb < regions);
  json_decref(ob);
  /* no PTX given: no view, and nothing said of it */
  json_t *o2 = ownership(&li, s1, n1, "attrib_truth", NULL, 0);
  CHECK(o2 && !has_warning(o2, "by source"));
  sum_prefix(o2, "file:", &nf, &df);
  CHECK_EQ_INT(nf, 0);
  json_decref(o2);
out:
  json_decref(o);
  json_decref(o0);
  su_mapped_free(&li);
  su_mapped_free(&plain);
  ag_free(s1);
  ag_free(s2);
}

RUN_TESTS(T(test_constructed), T(test_recorded_truth))
