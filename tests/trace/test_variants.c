/*
 * test_variants.c — measurement variants against a real tool: the traced
 * (all regions), anchors-only and per-region variants of every example
 * kernel, the spin kernels, the Triton corpus (tests/data/ptx/triton) and
 * the hand-written PTX (tests/data/ptx/hand)
 * assemble with ptxas; trace-free is byte-identical to its parent; every
 * end/role marker of a selected region got a record probe. A deliberately
 * broken variant must fail ptxas (the check can fail). Errors: an unknown
 * region, names the probe would collide with, markers in a device function.
 */
#include "check.h"

#include <dirent.h>
#include <unistd.h>

#include "argus/variant.h"
#include "trace_util.h"



static int nfiles;

static void check_file(const char *path) {
  char *ptx = NULL;
  size_t len = 0;
  if (ag_file_read(path, &ptx, &len)) {
    fprintf(stderr, "cannot read %s\n", path);
    CHECK(0);
    return;
  }
  nfiles++;
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  ag_diags d;
  ag_diags_init(&d);
  ag_variant *v = NULL;
  /* trace-free: the parent itself */
  ag_variant_opts free_o = {AG_VARIANT_TRACE_FREE, NULL, 0, 0};
  CHECK_EQ_INT(ag_variant_make(ptx, len, path, &free_o, &d, &v), 0);
  if (v) {
    CHECK(v->len == len && memcmp(v->ptx, ptx, len) == 0);
    CHECK_EQ_STR(v->id, v->parent);
  }
  ag_variant_free(v);
  /* traced, all regions */
  ag_variant_opts tr = {AG_VARIANT_TRACED, NULL, 0, 0};
  CHECK_EQ_INT(ag_variant_make(ptx, len, path, &tr, &d, &v), 0);
  if (v) {
    char tag[2400];
    snprintf(tag, sizeof tag, "%s-traced", base);
    CHECK_EQ_INT(tu_assemble(v->ptx, v->len, tag), 0);
    /* one record site per begin and role marker of the parent, and a
     * probe at every end marker */
    size_t marks = tu_count(ptx, "@argus begin ") + tu_count(ptx, "@argus role ");
    CHECK_EQ_U64(tu_count(v->ptx, "(record site "), marks);
    CHECK_EQ_U64(tu_count(v->ptx, "// argus: end "), tu_count(ptx, "@argus end "));
    CHECK_EQ_U64((size_t)v->nsites, marks);
    CHECK_EQ_U64(json_array_size(json_object_get(v->probes, "sites")), marks);
    CHECK(strcmp(v->id, v->parent) != 0);
    /* each selected region's variant, when there are regions */
    json_t *regs = json_object_get(v->probes, "regions"), *g;
    size_t i;
    json_array_foreach(regs, i, g) {
      if (json_is_true(json_object_get(g, "root")))
        continue;
      const char *q = json_string_value(json_object_get(g, "qname"));
      ag_variant_opts one = {AG_VARIANT_TRACED, &q, 1, 0};
      ag_variant *w = NULL;
      CHECK_EQ_INT(ag_variant_make(ptx, len, path, &one, &d, &w), 0);
      if (w) {
        snprintf(tag, sizeof tag, "%s-region%zu", base, i);
        CHECK_EQ_INT(tu_assemble(w->ptx, w->len, tag), 0);
        CHECK(w->nsites <= v->nsites);
      }
      ag_variant_free(w);
    }
  }
  ag_variant_free(v);
  ag_variant_opts an = {AG_VARIANT_TRACED, NULL, 0, 1};
  CHECK_EQ_INT(ag_variant_make(ptx, len, path, &an, &d, &v), 0);
  if (v) {
    char tag[2400];
    snprintf(tag, sizeof tag, "%s-anchors", base);
    CHECK_EQ_INT(tu_assemble(v->ptx, v->len, tag), 0);
    CHECK_EQ_INT(v->nsites, 0);
  }
  ag_variant_free(v);
  if (d.nerrors) {
    ag_str s = AG_STR_INIT;
    ag_diags_format(&d, &s);
    fprintf(stderr, "%s", ag_str_cstr(&s));
    ag_str_release(&s);
  }
  ag_diags_release(&d);
  ag_free(ptx);
}

static void check_dir(const char *dir) {
  DIR *dp = opendir(dir);
  if (!dp)
    return;
  struct dirent *e;
  while ((e = readdir(dp)))
    if (strlen(e->d_name) > 4 && !strcmp(e->d_name + strlen(e->d_name) - 4, ".ptx")) {
      char p[2048];
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      check_file(p);
    }
  closedir(dp);
}

TEST(every_variant_assembles) {
  const char *src = getenv("ARGUS_SOURCE_DIR"), *bd = getenv("ARGUS_BUILD_DIR");
  char p[1024];
  snprintf(p, sizeof p, "%s/tests/data/ptx", bd ? bd : "build");
  check_dir(p); /* the examples, built by nvcc with markers */
  snprintf(p, sizeof p, "%s/tests/trace", bd ? bd : "build");
  check_dir(p); /* the spin kernels */
  snprintf(p, sizeof p, "%s/tests/data/ptx/triton", src ? src : ".");
  check_dir(p); /* the Triton corpus */
  snprintf(p, sizeof p, "%s/tests/data/ptx/hand", src ? src : ".");
  check_dir(p); /* hand-written PTX: scoped blocks, Triton-style markers */
  CHECK(nfiles >= 9);
  printf("%d modules, every variant assembled\n", nfiles);
}

/* The traced variant of a module, all regions; NULL, with a failed check and
 * the diagnostics printed, when the transform refuses it. */
static ag_variant *traced_of(const char *ptx, size_t len, const char *name) {
  ag_diags d;
  ag_diags_init(&d);
  ag_variant_opts tr = {AG_VARIANT_TRACED, NULL, 0, 0};
  ag_variant *v = NULL;
  CHECK_EQ_INT(ag_variant_make(ptx, len, name, &tr, &d, &v), 0);
  if (!v)
    tu_print_diags(&d);
  ag_diags_release(&d);
  return v;
}

/* The overhead benchmark's PTX (from the build) and its traced variant, all
 * regions; NULL, with a failed check, when either is missing. */
static ag_variant *traced_overhead(void) {
  size_t len = 0;
  char *ptx = tu_read_build_file("tests/data/ptx/overhead.ptx", &len);
  CHECK(ptx != NULL);
  if (!ptx)
    return NULL;
  ag_variant *v = traced_of(ptx, len, "overhead.ptx");
  ag_free(ptx);
  return v;
}

TEST(broken_variant_fails_ptxas) {
  ag_variant *v = traced_overhead();
  if (v) { /* drop the probe's register declarations */
    char *decl = strstr(v->ptx, ".reg .b32 %agt_k");
    CHECK(decl != NULL);
    if (decl)
      memcpy(decl, "//", 2);
    CHECK(tu_assemble(v->ptx, v->len, "broken") != 0);
  }
  ag_variant_free(v);
}

/* 1 when the line after the first `tag` in ptx starts with `want`. */
static int follows(const char *ptx, const char *tag, const char *want) {
  const char *at = strstr(ptx, tag);
  const char *nl = at ? strchr(at, '\n') : NULL;
  if (!nl || strncmp(nl + 1, want, strlen(want)) != 0) {
    fprintf(stderr, "after '%s' expected:\n%s\ngot:\n%.300s\n", tag, want, nl ? nl + 1 : "(none)");
    return 0;
  }
  return 1;
}

/* The probe's shape (docs/tracing.md): at a begin marker the iteration
 * (XOR the bias), the clock, the record's first half stored at once, its
 * address kept for the region's end, then the next record's address; at an
 * end marker the clock and the second half, nothing else; no store in a
 * kernel's prologue (it would hold the kernel's first loads behind the
 * descriptor's load). */
TEST(probe_shape) {
  ag_variant *v = traced_overhead();
  if (v) {
    CHECK_EQ_INT(v->nsites, 4); /* the begins of work and step, in two kernels */
    CHECK_EQ_U64(tu_count(v->ptx, "st.global.v2.u32 [%agt_a], {%agt_b"), 4);
    CHECK_EQ_U64(tu_count(v->ptx, "st.global.v4.u32 [%agt_a]"), 0); /* no role markers */
    CHECK_EQ_U64(tu_count(v->ptx, "xor.b32 %agt_i"), 2); /* step's begin, per kernel */
    /* step's begin (site 1): iteration, clock, the record's first half, its
     * address kept for the end, then the next record's address */
    const char *beg = strstr(v->ptx, "// argus: begin step (record site 1)");
    CHECK(beg != NULL);
    static const char want_begin[] = "\txor.b32 %agt_i2, %r";
    static const char want_begin2[] = ", 2147483648;\n"
                                      "\tmov.u32 %agt_b2, %clock;\n"
                                      "\t@%agt_q st.global.v2.u32 [%agt_a], {%agt_b2, 1};\n"
                                      "\tmov.b64 %agt_s2, %agt_a;\n"
                                      "\tadd.u32 %agt_k, %agt_k, 16;\n"
                                      "\tmin.u32 %agt_m, %agt_k, %agt_cl;\n"
                                      "\tcvt.u64.u32 %agt_a, %agt_m;\n"
                                      "\tadd.u64 %agt_a, %agt_a, %agt_rb;\n";
    if (beg) {
      const char *l1 = strchr(beg, '\n') + 1;
      CHECK(strncmp(l1, want_begin, sizeof want_begin - 1) == 0);
      const char *l2 = strstr(l1, ", 2147483648;\n");
      CHECK(l2 && strncmp(l2, want_begin2, sizeof want_begin2 - 1) == 0);
    }
    /* step's end: the clock and the second half, nothing else; work's end
     * the same with "no iteration" */
    CHECK(follows(v->ptx, "// argus: end step\n",
                  "\tmov.u32 %agt_e, %clock;\n"
                  "\t@%agt_q st.global.v2.u32 [%agt_s2+8], {%agt_e, %agt_i2};\n"
                  "\t// end inline asm"));
    CHECK(follows(v->ptx, "// argus: end work\n",
                  "\tmov.u32 %agt_e, %clock;\n"
                  "\t@%agt_q st.global.v2.u32 [%agt_s1+8], {%agt_e, 2147483647};\n"));
    /* the prologue comes after the kernel's first global load and stores
     * nothing before the first marker's probe */
    const char *load = strstr(v->ptx, "ld.global.f32");
    const char *pro = strstr(v->ptx, "// argus: reference-trace prologue");
    const char *body = pro ? strstr(pro, "// argus: begin") : NULL;
    CHECK(load && pro && body && load < pro);
    if (pro && body) {
      char *cut = strndup(pro, (size_t)(body - pro));
      CHECK(cut && !strstr(cut, "st.global") && !strstr(cut, "red.global"));
      free(cut);
    }
  }
  ag_variant_free(v);
}

/* Where each record goes, on a kernel with a loop, a branch, role markers
 * and nesting: every begin and role marker is a record site, in marker
 * order, and takes the next record (the advance after it); a begin marker
 * writes the first half at that address and keeps it in its region's
 * register, and every end marker writes the second half through its own
 * region's register, which the prologue points at the trash slot until a
 * begin has run. The variant assembles. */
static const char *record_ptx =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry k(.param .u32 n)\n{\n"
    "\t.reg .pred %p<3>;\n\t.reg .b32 %r<4>;\n"
    "\tld.param.u32 %r1, [n];\n\tmov.u32 %r2, 0;\n"
    "\t// @argus begin - outer\n"
    "$L_loop:\n"
    "\t// @argus begin - step %r2\n"
    "\tadd.u32 %r2, %r2, 1;\n"
    "\t// @argus end - step\n"
    "\tsetp.lt.u32 %p1, %r2, %r1;\n"
    "\t@%p1 bra $L_loop;\n"
    "\tsetp.eq.u32 %p2, %r1, 7;\n"
    "\t@%p2 bra $L_skip;\n"
    "\t// @argus begin - cond\n"
    "\t// @argus end - cond\n"
    "$L_skip:\n"
    "\t// @argus role - producer\n"
    "\t// @argus begin - last\n"
    "\t// @argus role - consumer\n"
    "\t// @argus role - producer\n"
    "\t// @argus end - last\n"
    "\t// @argus end - outer\n"
    "\tret;\n}\n";

TEST(record_sites) {
  ag_variant *v = traced_of(record_ptx, strlen(record_ptx), "records.ptx");
  if (!v)
    return;
  /* sites: outer, step, cond, producer, last, consumer, producer */
  static const char *kinds[7] = {"region", "region", "region", "role",
                                 "region", "role",   "role"};
  json_t *sites = json_object_get(v->probes, "sites");
  CHECK_EQ_INT(v->nsites, 7);
  CHECK_EQ_U64(json_array_size(sites), 7);
  for (size_t i = 0; i < 7 && i < json_array_size(sites); i++)
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(sites, i), "kind")), kinds[i]);
  /* four begins write first halves, three roles whole records; each takes
   * the next record */
  CHECK_EQ_U64(tu_count(v->ptx, "st.global.v2.u32 [%agt_a]"), 4);
  CHECK_EQ_U64(tu_count(v->ptx, "st.global.v4.u32 [%agt_a]"), 3);
  CHECK_EQ_U64(tu_count(v->ptx, "min.u32 %agt_m, %agt_k, %agt_cl;"), 7);
  /* the site numbers stored are the markers' own, in order */
  const char *p = v->ptx;
  for (int i = 0; i < 7 && p; i++) {
    char tag[48];
    snprintf(tag, sizeof tag, "(record site %d)", i);
    p = strstr(p, tag);
    CHECK(p != NULL);
    char st[24];
    snprintf(st, sizeof st, ", %d", i);
    const char *store = p ? strstr(p, "st.global.v") : NULL;
    CHECK(store && strstr(store, st) && strstr(store, st) < strchr(store, '\n'));
  }
  /* each end writes through its own region's register (regions: 1 outer,
   * 2 step, 3 cond, 4 last), set at entry to the trash slot */
  static const char *names[4] = {"outer", "step", "cond", "last"};
  for (int r = 0; r < 4; r++) {
    char tag[32], want[48], init[48];
    snprintf(tag, sizeof tag, "// argus: end %s\n", names[r]);
    snprintf(want, sizeof want, "st.global.v2.u32 [%%agt_s%d+8], {%%agt_e, ", r + 1);
    snprintf(init, sizeof init, "mov.b64 %%agt_s%d, %%agt_x;", r + 1);
    const char *e = strstr(v->ptx, tag);
    CHECK(e != NULL);
    const char *st = e ? strstr(e, "st.global") : NULL;
    CHECK(st && strncmp(st, want, strlen(want)) == 0);
    CHECK_EQ_U64(tu_count(v->ptx, init), 1);
  }
  CHECK_EQ_INT(tu_assemble(v->ptx, v->len, "records"), 0);
  ag_variant_free(v);
}

/* Where the prologue goes: after the entry block's leading straight-line
 * code (parameter and global loads, arithmetic, compares), before the
 * first control flow, label, barrier or marker; an exit there gets its
 * epilogue after the prologue. Each variant assembles. */
static const char *point_ptx =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    /* a guarded early exit ends the leading code */
    ".visible .entry early(.param .u64 p, .param .u32 n)\n{\n"
    "\t.reg .pred %p<2>;\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<3>;\n"
    "\tld.param.u64 %rd1, [p];\n\tld.param.u32 %r1, [n];\n\tmov.u32 %r2, %tid.x;\n"
    "\tcvta.to.global.u64 %rd2, %rd1;\n\tld.global.u32 %r3, [%rd2];\n"
    "\tsetp.ge.u32 %p1, %r2, %r1;\n\t@%p1 ret;\n"
    "\t// @argus begin - body\n\tadd.u32 %r3, %r3, 1;\n\t// @argus end - body\n"
    "\tst.global.u32 [%rd2], %r3;\n\tret;\n}\n"
    /* a label first: the prologue right after the declarations */
    ".visible .entry looped(.param .u32 n)\n{\n"
    "\t.reg .pred %p<2>;\n\t.reg .b32 %r<3>;\n\tmov.u32 %r2, 0;\n"
    "$L_top:\n\t// @argus begin - it\n\tadd.u32 %r2, %r2, 1;\n\t// @argus end - it\n"
    "\tld.param.u32 %r1, [n];\n\tsetp.lt.u32 %p1, %r2, %r1;\n\t@%p1 bra $L_top;\n\tret;\n}\n"
    /* a barrier ends the leading code */
    ".visible .entry synced()\n{\n"
    "\t.reg .b32 %r<2>;\n\tmov.u32 %r1, %tid.x;\n\tbar.sync 0;\n"
    "\t// @argus begin - after\n\t// @argus end - after\n\tret;\n}\n"
    /* no marker, no branch: the prologue, then the exit's epilogue */
    ".visible .entry plain(.param .u64 p)\n{\n"
    "\t.reg .b64 %rd<2>;\n\tld.param.u64 %rd1, [p];\n\tret;\n}\n";

/* the text of kernel `name` in a variant */
static char *kernel_text(const char *ptx, const char *name) {
  char head[64];
  snprintf(head, sizeof head, ".entry %s(", name);
  const char *a = strstr(ptx, head);
  const char *b = a ? strstr(a + 1, ".entry ") : NULL;
  return a ? strndup(a, b ? (size_t)(b - a) : strlen(a)) : NULL;
}

/* 1 when `first` occurs in `k` and `then` occurs after it */
static int before(const char *k, const char *first, const char *then) {
  const char *a = k ? strstr(k, first) : NULL;
  const char *b = a ? strstr(a, then) : NULL;
  if (!b)
    fprintf(stderr, "expected '%s' before '%s' in:\n%.2000s\n", first, then, k ? k : "(none)");
  return b != NULL;
}

TEST(prologue_point) {
  ag_variant *v = traced_of(point_ptx, strlen(point_ptx), "point.ptx");
  if (!v)
    return;
  static const char pro[] = "// argus: reference-trace prologue";
  CHECK_EQ_U64(tu_count(v->ptx, pro), 4);
  char *k = kernel_text(v->ptx, "early");
  CHECK(before(k, "setp.ge.u32 %p1, %r2, %r1;", pro));
  CHECK(before(k, pro, "@%p1 bra $__argus_exit;"));
  CHECK(before(k, "$__argus_exit:", "warp exit anchors"));
  free(k);
  k = kernel_text(v->ptx, "looped");
  CHECK(before(k, "mov.u32 %r2, 0;", pro));
  CHECK(before(k, pro, "$L_top:"));
  free(k);
  k = kernel_text(v->ptx, "synced");
  CHECK(before(k, "mov.u32 %r1, %tid.x;", pro));
  CHECK(before(k, pro, "bar.sync 0;"));
  free(k);
  k = kernel_text(v->ptx, "plain");
  CHECK(before(k, "ld.param.u64 %rd1, [p];", pro));
  CHECK(before(k, pro, "warp exit anchors"));
  free(k);
  CHECK_EQ_INT(tu_assemble(v->ptx, v->len, "point"), 0);
  ag_variant_free(v);
}

static const char *func_ptx =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".func helper()\n{\n\t// @argus begin - inner\n\t// @argus end - inner\n\tret;\n}\n"
    ".visible .entry k()\n{\n\t// @argus begin - outer\n\tcall helper, ();\n"
    "\t// @argus end - outer\n\tret;\n}\n";

TEST(variant_errors) {
  const char *p = "overhead.ptx";
  size_t len = 0;
  char *ptx = tu_read_build_file("tests/data/ptx/overhead.ptx", &len);
  CHECK(ptx != NULL);
  if (!ptx)
    return;
  ag_diags d;
  ag_diags_init(&d);
  ag_variant *v = NULL;
  const char *nope = "nosuchregion";
  ag_variant_opts o = {AG_VARIANT_TRACED, &nope, 1, 0};
  CHECK_EQ_INT(ag_variant_make(ptx, len, p, &o, &d, &v), AG_ENOTFOUND);
  ag_str s = AG_STR_INIT;
  ag_diags_format(&d, &s);
  CHECK_CONTAINS(ag_str_cstr(&s), "no region 'nosuchregion' in the module (regions: ");
  CHECK_CONTAINS(ag_str_cstr(&s), "overhead_compute/work/step");
  ag_str_clear(&s);
  ag_diags_release(&d);
  /* a traced variant of a traced variant: the names collide */
  ag_diags_init(&d);
  ag_variant_opts tr = {AG_VARIANT_TRACED, NULL, 0, 0};
  CHECK_EQ_INT(ag_variant_make(ptx, len, p, &tr, &d, &v), 0);
  ag_variant *v2 = NULL;
  if (v) {
    CHECK_EQ_INT(ag_variant_make(v->ptx, v->len, "traced.ptx", &tr, &d, &v2), AG_EINVAL);
    ag_diags_format(&d, &s);
    CHECK_CONTAINS(ag_str_cstr(&s), "an Argus variant already");
    CHECK_CONTAINS(ag_str_cstr(&s), "traced.ptx:");
    ag_str_clear(&s);
    ag_diags_release(&d);
    /* refused before parsing: the variant followed by text that does not
     * parse still gets the variant error, not a parse error */
    ag_diags_init(&d);
    ag_str bad = AG_STR_INIT;
    ag_str_append(&bad, v->ptx, v->len);
    ag_str_puts(&bad, "\n{ this is not ptx\n");
    CHECK_EQ_INT(ag_variant_make(bad.p, bad.len, "bad.ptx", &tr, &d, &v2), AG_EINVAL);
    ag_diags_format(&d, &s);
    CHECK_CONTAINS(ag_str_cstr(&s), "an Argus variant already");
    ag_str_clear(&s);
    ag_str_release(&bad);
  }
  ag_variant_free(v);
  ag_diags_release(&d);
  /* markers in a device function */
  ag_diags_init(&d);
  v = NULL;
  CHECK_EQ_INT(ag_variant_make(func_ptx, strlen(func_ptx), "func.ptx", &tr, &d, &v),
               AG_EUNSUPPORTED);
  ag_diags_format(&d, &s);
  CHECK_CONTAINS(ag_str_cstr(&s), "in the device function 'helper'");
  CHECK_CONTAINS(ag_str_cstr(&s), "func.ptx:6:");
  ag_str_release(&s);
  ag_diags_release(&d);
  ag_free(ptx);
}

/* The variant check reads the text before parsing (issue 16): probe names
 * in code are refused with their line and column, in comments and strings
 * they are not; a probe variant's %agp_ names are refused as well. */
static const char *names_ptx =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".file 1 \"/src/__argus_kernel.cu\"\n"
    "// a comment may name %agt_a and __argus_trace\n"
    "/* and so may a block comment: %agp_it */\n"
    ".visible .entry k()\n{\n\t// @argus begin - r\n\t// @argus end - r\n\tret;\n}\n";

TEST(variant_of_variant_text) {
  ag_variant_opts tr = {AG_VARIANT_TRACED, NULL, 0, 0};
  ag_diags d;
  ag_diags_init(&d);
  ag_variant *v = NULL;
  CHECK_EQ_INT(ag_variant_make(names_ptx, strlen(names_ptx), "names.ptx", &tr, &d, &v), 0);
  ag_variant_free(v);
  ag_diags_release(&d);
  static const char *const bad[] = {"\t.reg .b32 %agp_it;\n", "\tmov.u32 %r1, %agt_k;\n",
                                    "\tld.const.u64 %rd1, [__argus_trace];\n"};
  static const char *const name[] = {"'%agp_'", "'%agt_'", "'__argus_'"};
  static const char *const where[] = {"k.ptx:10:12:", "k.ptx:10:15:", "k.ptx:10:22:"};
  for (int i = 0; i < 3; i++) {
    ag_str p = AG_STR_INIT, s = AG_STR_INIT;
    ag_str_puts(&p, ".version 8.0\n.target sm_90\n.address_size 64\n"
                    "// %agt_ in a comment is fine\n.visible .entry k()\n{\n"
                    "\t.reg .b32 %r<2>;\n\t.reg .b64 %rd<2>;\n\t// @argus begin - r\n");
    ag_str_puts(&p, bad[i]);
    ag_str_puts(&p, "\t// @argus end - r\n\tret;\n}\n");
    ag_diags_init(&d);
    v = NULL;
    CHECK_EQ_INT(ag_variant_make(p.p, p.len, "k.ptx", &tr, &d, &v), AG_EINVAL);
    CHECK(v == NULL);
    ag_diags_format(&d, &s);
    CHECK_CONTAINS(ag_str_cstr(&s), name[i]);
    CHECK_CONTAINS(ag_str_cstr(&s), where[i]);
    /* the trace-free variant is the module itself: not refused */
    ag_variant_opts tf = {AG_VARIANT_TRACE_FREE, NULL, 0, 0};
    ag_diags_release(&d);
    ag_diags_init(&d);
    if (i == 1) {
      CHECK_EQ_INT(ag_variant_make(p.p, p.len, "k.ptx", &tf, &d, &v), 0);
      ag_variant_free(v);
    }
    ag_diags_release(&d);
    ag_str_release(&p);
    ag_str_release(&s);
  }
}

/* The traced variant of hand-written kernels (roles in a block and from a
 * dominator, nested regions, iteration operands of 32 and 64 bits and a
 * constant, a loop, a guarded exit, two kernels) is byte for byte the
 * golden file made before issue 16's rewrite of the transform (verbatim
 * probes), and so is its probe table. */
TEST(golden_traced) {
  const char *src = getenv("ARGUS_SOURCE_DIR");
  char in[1024], gold[1024], gp[1024];
  snprintf(in, sizeof in, "%s/tests/data/ptx/hand/traced_cases.ptx", src ? src : ".");
  snprintf(gold, sizeof gold, "%s/tests/data/ptx/golden/traced_cases.traced.ptx", src ? src : ".");
  snprintf(gp, sizeof gp, "%s/tests/data/ptx/golden/traced_cases.probes.json", src ? src : ".");
  char *ptx = NULL, *want = NULL, *wantp = NULL;
  size_t len = 0, wlen = 0, wplen = 0;
  CHECK_EQ_INT(ag_file_read(in, &ptx, &len), 0);
  CHECK_EQ_INT(ag_file_read(gold, &want, &wlen), 0);
  CHECK_EQ_INT(ag_file_read(gp, &wantp, &wplen), 0);
  ag_variant_opts tr = {AG_VARIANT_TRACED, NULL, 0, 0};
  ag_diags d;
  ag_diags_init(&d);
  ag_variant *v = NULL;
  CHECK_EQ_INT(ag_variant_make(ptx, len, "traced_cases.ptx", &tr, &d, &v), 0);
  if (v && want) {
    CHECK_EQ_U64(v->len, wlen);
    size_t i = 0;
    while (i < v->len && i < wlen && v->ptx[i] == want[i])
      i++;
    if (i < v->len || i < wlen)
      fprintf(stderr, "traced variant differs from the golden file at byte %zu: ...%.60s\n", i,
              v->ptx + (i > 20 ? i - 20 : 0));
    CHECK(i == v->len && i == wlen);
  }
  if (v && wantp) {
    json_t *g = json_loadb(wantp, wplen, 0, NULL);
    CHECK(g && json_equal(g, v->probes));
    json_decref(g);
  }
  ag_variant_free(v);
  ag_diags_release(&d);
  ag_free(ptx);
  ag_free(want);
  ag_free(wantp);
}

RUN_TESTS(T(every_variant_assembles), T(broken_variant_fails_ptxas), T(probe_shape),
          T(record_sites), T(prologue_point), T(variant_errors), T(variant_of_variant_text), T(golden_traced))

