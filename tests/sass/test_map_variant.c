/*
 * test_map_variant.c — the mapping variant (src/ptx/xform_map.c):
 *   - on the ground-truth kernel (tests/data/cuda/map_truth.cu): the layout
 *     has one unit per (block, marker span), the helper's units inherit the
 *     caller's region (one slot per region), the kernel's are static; every
 *     unit has exactly one counter; the calls pass region 'a' K1 times and
 *     'b' K2 times; the variant assembles (ptxas) and parses again with its
 *     markers intact; a variant of it is refused;
 *   - the variant of examples/gemm_tma, of the recorded Triton PTX and of
 *     every module of the PTX corpus assembles with ptxas;
 *   - bad input: an indirect call and an old target are refused with a
 *     diagnostic; a kernel without markers maps everything to its root.
 * Skips (77) without nvcc and ptxas.
 */
#include "argus/attrib.h"
#include "argus/variant.h"
#include "check.h"
#include "sass_util.h"

static ag_variant *mapping(const char *ptx, size_t len, ag_diags *d) {
  ag_variant_opts o = {AG_VARIANT_MAPPING, NULL, 0, 0};
  ag_variant *v = NULL;
  int rc = ag_variant_make(ptx, len, "test.ptx", &o, d, &v);
  if (rc) {
    ag_str s = AG_STR_INIT;
    ag_diags_format(d, &s);
    fprintf(stderr, "mapping variant: %s\n%s", ag_strerror(rc), ag_str_cstr(&s));
    ag_str_release(&s);
  }
  return v;
}

static int assembles(const ag_variant *v, const char *arch) {
  char *bin = NULL;
  size_t blen = 0;
  ag_str err = AG_STR_INIT;
  int ok = su_ptxas(arch, 0, v->ptx, v->len, &bin, &blen, &err) == 0;
  if (!ok)
    fprintf(stderr, "ptxas: %s\n", ag_str_cstr(&err));
  ag_str_release(&err);
  ag_free(bin);
  return ok;
}

TEST(ground_truth_layout) {
  su_need_tools();
  char *ptx;
  size_t len;
  CHECK_EQ_INT(su_cuda_ptx("tests/data/cuda/map_truth.cu", &ptx, &len), 0);
  ag_diags d;
  ag_diags_init(&d);
  ag_variant *v = mapping(ptx, len, &d);
  CHECK(v != NULL);
  if (!v)
    goto out;
  CHECK_EQ_INT(v->kind, AG_VARIANT_MAPPING);
  CHECK(assembles(v, "sm_90a"));
  ag_attr_layout *L = NULL;
  CHECK_EQ_INT(ag_attr_layout_from_json(v->probes, &d, &L), 0);
  if (!L)
    goto out;
  CHECK_EQ_STR(L->version, v->parent);
  int a = su_region_index(L, "map_truth/a"), b = su_region_index(L, "map_truth/b");
  int root = su_region_index(L, "map_truth");
  CHECK(a >= 0 && b >= 0 && root >= 0);
  int helper = -1;
  for (int f = 0; f < L->nfuncs; f++)
    if (!strcmp(L->funcs[f].name, "_Z3mixPVffi"))
      helper = f;
  CHECK(helper >= 0);
  /* units: the helper's inherit, the kernel's are static and cover a, b
   * and the root; slots are dense, slot 0 kept for drops */
  int seen[3] = {0, 0, 0}, helper_units = 0;
  uint32_t next = 1;
  for (int u = 0; u < L->nunits; u++) {
    const ag_attr_unit *U = &L->units[u];
    CHECK_EQ_INT((int)U->slot, (int)next);
    next += U->region < 0 ? (uint32_t)L->nregions : 1;
    if (U->func == helper) {
      helper_units++;
      CHECK_EQ_INT(U->region, -1);
    } else {
      CHECK(U->region >= 0);
      seen[0] |= U->region == a;
      seen[1] |= U->region == b;
      seen[2] |= U->region == root;
    }
  }
  CHECK_EQ_INT((int)L->nslots, (int)next);
  CHECK(helper_units >= 1);
  CHECK(seen[0] && seen[1] && seen[2]);
  /* one counter per unit; K1 calls pass 'a', K2 pass 'b' */
  CHECK_EQ_INT((int)su_count(v->ptx, "red.global.add.u64"), L->nunits);
  CHECK_EQ_INT(v->nsites, L->nunits);
  char pass[64];
  snprintf(pass, sizeof pass, "st.param.b32 [__argus_map_a], %d;", a);
  CHECK_EQ_INT((int)su_count(v->ptx, pass), 3);
  snprintf(pass, sizeof pass, "st.param.b32 [__argus_map_a], %d;", b);
  CHECK_EQ_INT((int)su_count(v->ptx, pass), 5);
  CHECK_EQ_INT((int)su_count(v->ptx, ".param .b32 __argus_map_in"), 1);
  /* the host runtime reads the slots it binds from the module */
  snprintf(pass, sizeof pass, ".const .align 4 .u32 __argus_map_slots = %u;", L->nslots);
  CHECK_EQ_INT((int)su_count(v->ptx, pass), 1);
  /* the variant is PTX Argus reads, with the same regions */
  ag_ptx_module *m = NULL;
  ag_ptx_regions *r = NULL;
  CHECK_EQ_INT(ag_ptx_parse(v->ptx, v->len, "variant.ptx", &d, &m), 0);
  if (m) {
    CHECK_EQ_INT(ag_ptx_discover(m, &d, &r), 0);
    CHECK(r && r->nregions == L->nregions);
  }
  ag_ptx_module_free(m);
  /* a mapping variant of a variant is refused */
  ag_diags d2;
  ag_diags_init(&d2);
  ag_variant_opts o = {AG_VARIANT_MAPPING, NULL, 0, 0};
  ag_variant *vv = NULL;
  CHECK_EQ_INT(ag_variant_make(v->ptx, v->len, "variant.ptx", &o, &d2, &vv), AG_EINVAL);
  CHECK(vv == NULL);
  if (d2.items.n)
    CHECK_CONTAINS(d2.items.v[0].msg, "is an Argus variant already");
  ag_diags_release(&d2);
  ag_attr_layout_free(L);
out:
  ag_variant_free(v);
  ag_diags_release(&d);
  ag_free(ptx);
}

TEST(examples_and_triton_assemble) {
  su_need_tools();
  const char *triton[] = {"tests/data/ptx/triton/triton_matmul_pipelined.ptx",
                          "tests/data/ptx/triton/triton_attention_fwd.ptx"};
  char *ptx = NULL;
  size_t len;
  for (int i = -1; i < 2; i++) {
    char path[4096];
    if (i < 0) {
      CHECK_EQ_INT(su_cuda_ptx("examples/gemm_tma/gemm_tma.cu", &ptx, &len), 0);
    } else {
      snprintf(path, sizeof path, "%s/%s", getenv("ARGUS_SOURCE_DIR"), triton[i]);
      CHECK_EQ_INT(ag_file_read(path, &ptx, &len), 0);
    }
    if (!ptx)
      continue;
    ag_diags d;
    ag_diags_init(&d);
    ag_variant *v = mapping(ptx, len, &d);
    CHECK(v != NULL);
    if (v) {
      char arch[32];
      su_target(ptx, arch, sizeof arch);
      printf("%s: %d counters, %zu bytes of PTX more\n", i < 0 ? "gemm_tma" : triton[i],
             v->nsites, v->len - len);
      CHECK(v->nsites > 0);
      CHECK(assembles(v, arch));
    }
    ag_variant_free(v);
    ag_diags_release(&d);
    ag_free(ptx);
    ptx = NULL;
  }
  /* the whole PTX corpus (the examples as nvcc builds them, the hand-written
   * and the Triton PTX): every mapping variant assembles */
  corpus_list l = {0};
  corpus_collect(&l);
  int made = 0;
  for (size_t i = 0; i < l.n; i++) {
    if (ag_file_read(l.v[i], &ptx, &len))
      continue;
    ag_diags d;
    ag_diags_init(&d);
    ag_variant *v = mapping(ptx, len, &d);
    if (!v)
      fprintf(stderr, "%s: no mapping variant\n", l.v[i]);
    CHECK(v != NULL);
    if (v) {
      char arch[32];
      su_target(ptx, arch, sizeof arch);
      int ok = assembles(v, arch);
      if (!ok)
        fprintf(stderr, "%s: the mapping variant does not assemble\n", l.v[i]);
      CHECK(ok);
      made += ok;
    }
    ag_variant_free(v);
    ag_diags_release(&d);
    ag_free(ptx);
    ptx = NULL;
    ag_free(l.v[i]);
  }
  printf("corpus: %d of %zu mapping variants assemble\n", made, l.n);
  CHECK(made >= 3);
  ag_vec_free(&l);
}

static const char indirect_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".func (.param .b32 r) f(.param .b32 a)\n{\n.reg .b32 %r<2>;\n"
    "ld.param.b32 %r1, [a];\nst.param.b32 [r], %r1;\nret;\n}\n"
    ".visible .entry k(.param .u64 p)\n{\n.reg .b64 %rd<2>;\n.reg .b32 %r<2>;\n"
    "mov.u64 %rd1, f;\n{\n.param .b32 a0;\n.param .b32 r0;\nst.param.b32 [a0], 1;\n"
    "proto: .callprototype (.param .b32 _) _ (.param .b32 _);\n"
    "call (r0), %rd1, (a0), proto;\nld.param.b32 %r1, [r0];\n}\nret;\n}\n";

static const char nomarker_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry plain(.param .u64 p)\n{\n.reg .b64 %rd<3>;\n.reg .b32 %r<3>;\n"
    ".reg .pred %p<2>;\n"
    "ld.param.u64 %rd1, [p];\nmov.u32 %r1, %tid.x;\nsetp.eq.u32 %p1, %r1, 0;\n"
    "@%p1 bra DONE;\nst.global.u32 [%rd1], %r1;\nDONE:\nret;\n}\n";

/* a helper calling a helper: the inner call passes the region inherited */
static const char nested_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".func inner()\n{\nret;\n}\n"
    ".func outer()\n{\ncall.uni inner, ();\nret;\n}\n"
    ".visible .entry k()\n{\n// @argus begin - a\ncall.uni outer, ();\n"
    "// @argus end - a\nret;\n}\n";

TEST(nested_calls_pass_the_inherited_region) {
  su_need_tools();
  ag_diags d;
  ag_diags_init(&d);
  ag_variant *v = mapping(nested_ptx, strlen(nested_ptx), &d);
  CHECK(v != NULL);
  if (v) {
    CHECK_EQ_INT((int)su_count(v->ptx, "st.param.b32 [__argus_map_a], %agm_in;"), 1);
    CHECK_EQ_INT((int)su_count(v->ptx, "__argus_map_in"), 4); /* 2 params, 2 loads */
    CHECK(assembles(v, "sm_90"));
    ag_attr_layout *L = NULL;
    CHECK_EQ_INT(ag_attr_layout_from_json(v->probes, &d, &L), 0);
    int a = L ? su_region_index(L, "k/a") : -1;
    CHECK(a >= 0);
    char pass[64];
    snprintf(pass, sizeof pass, "st.param.b32 [__argus_map_a], %d;", a);
    CHECK_EQ_INT((int)su_count(v->ptx, pass), 1);
    ag_attr_layout_free(L);
  }
  ag_variant_free(v);
  ag_diags_release(&d);
}

TEST(bad_input_and_no_markers) {
  su_need_tools();
  ag_diags d;
  ag_diags_init(&d);
  ag_variant_opts o = {AG_VARIANT_MAPPING, NULL, 0, 0};
  ag_variant *v = NULL;
  CHECK_EQ_INT(ag_variant_make(indirect_ptx, strlen(indirect_ptx), "ind.ptx", &o, &d, &v),
               AG_EUNSUPPORTED);
  CHECK(v == NULL);
  if (d.items.n)
    CHECK_CONTAINS(d.items.v[0].msg, "indirect call in function 'k'");
  CHECK(d.items.n && d.items.v[0].line == 21); /* the call */
  ag_diags_release(&d);
  /* an old target */
  ag_diags_init(&d);
  char old[sizeof nomarker_ptx + 8];
  snprintf(old, sizeof old, "%s", nomarker_ptx);
  memcpy(strstr(old, "sm_90"), "sm_60", 5);
  CHECK_EQ_INT(ag_variant_make(old, strlen(old), "old.ptx", &o, &d, &v), AG_EUNSUPPORTED);
  if (d.items.n)
    CHECK_CONTAINS(d.items.v[0].msg, "sm_70 or newer");
  ag_diags_release(&d);
  /* out of memory at every allocation of the mapping variant's making */
  for (long k = 1;; k++) {
    ag_diags_init(&d);
    ag_alloc_fail_at(k);
    int rc = ag_variant_make(nomarker_ptx, strlen(nomarker_ptx), "oom.ptx", &o, &d, &v);
    ag_alloc_fail_at(0);
    ag_diags_release(&d);
    CHECK(rc == 0 || rc == AG_ENOMEM);
    if (rc == 0) {
      ag_variant_free(v);
      v = NULL;
      break;
    }
    CHECK(v == NULL);
  }
  /* no markers: every unit is the kernel root's */
  ag_diags_init(&d);
  v = mapping(nomarker_ptx, strlen(nomarker_ptx), &d);
  CHECK(v != NULL);
  if (v) {
    ag_attr_layout *L = NULL;
    CHECK_EQ_INT(ag_attr_layout_from_json(v->probes, &d, &L), 0);
    CHECK(L && L->nregions == 1 && L->nunits == 3);
    for (int u = 0; L && u < L->nunits; u++)
      CHECK_EQ_INT(L->units[u].region, 0);
    CHECK(assembles(v, "sm_90"));
    ag_attr_layout_free(L);
  }
  ag_variant_free(v);
  ag_diags_release(&d);
}

/* argus variant --kind mapping: the variant and its layout */
TEST(cli_writes_variant_and_layout) {
  su_need_tools();
  const char *bin = getenv("ARGUS_BIN");
  CHECK(bin != NULL);
  if (!bin)
    return;
  char in[] = "/tmp/argus-mv-XXXXXX.ptx", out[] = "/tmp/argus-mv-XXXXXX.ptx",
       lay[] = "/tmp/argus-mv-XXXXXX.json";
  int a = mkstemps(in, 4), b = mkstemps(out, 4), c = mkstemps(lay, 5);
  CHECK(a >= 0 && b >= 0 && c >= 0);
  CHECK(write(a, nomarker_ptx, strlen(nomarker_ptx)) == (ssize_t)strlen(nomarker_ptx));
  close(a);
  close(b);
  close(c);
  const char *argv[] = {bin, "variant", "--kind", "mapping", "-o", out, "--probes", lay, in, NULL};
  ag_str o = AG_STR_INIT, e = AG_STR_INIT;
  CHECK_EQ_INT(run_capture(argv, &o, &e, NULL), 0);
  CHECK_CONTAINS(ag_str_cstr(&o), "mapping variant of");
  char *text = NULL;
  size_t len = 0;
  CHECK_EQ_INT(ag_file_read(out, &text, &len), 0);
  CHECK(text && strstr(text, ".const .align 8 .b8 __argus_map[16];"));
  ag_free(text);
  CHECK_EQ_INT(ag_file_read(lay, &text, &len), 0);
  CHECK(text && strstr(text, "\"format\": \"argus-map\""));
  ag_free(text);
  ag_str_release(&o);
  ag_str_release(&e);
  unlink(in);
  unlink(out);
  unlink(lay);
}

RUN_TESTS(T(ground_truth_layout), T(cli_writes_variant_and_layout), T(examples_and_triton_assemble),
          T(nested_calls_pass_the_inherited_region), T(bad_input_and_no_markers))
