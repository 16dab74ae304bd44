/*
 * test_ptx_discover.c — discovery on the examples' PTX (built by nvcc at
 * build time) and on hand-written PTX: the region tree, IDs, iteration
 * registers and roles; every TMA load of the GEMM with its barrier (counted
 * against the PTX text); completion links; marker validation errors, with
 * the marker's source line from the PTX debug lines (.loc/.file); and
 * dynamically owned regions of a .func called from several regions.
 */
#include "argus/ptx.h"
#include "check.h"
#include "corpus.h"

static ag_ptx_module *load(const char *path, ag_ptx_regions **R, int want_rc, ag_diags *d) {
  ag_ptx_module *m = NULL;
  *R = NULL;
  if (ag_ptx_parse_file(path, d, &m)) {
    CHECK(0);
    return NULL;
  }
  int rc = ag_ptx_discover(m, d, R);
  if (rc != want_rc) {
    ag_str s = AG_STR_INIT;
    ag_diags_format(d, &s);
    fprintf(stderr, "%s", ag_str_cstr(&s));
    ag_str_release(&s);
  }
  CHECK_EQ_INT(rc, want_rc);
  return m;
}

static int find_region(const ag_ptx_regions *R, const char *qname) {
  for (int i = 0; i < R->nregions; i++)
    if (!strcmp(R->regions[i].qname, qname))
      return i;
  return -1;
}

static int count_substr(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
    n++;
  return n;
}

TEST(gemm_tma) {
  const char *path = corpus_path("tests/data/ptx/gemm_tma.ptx", 1);
  char *text;
  size_t len;
  if (ag_file_read(path, &text, &len)) {
    SKIP("no %s (nvcc absent at build time)", path);
  }
  ag_diags d;
  ag_diags_init(&d);
  ag_ptx_regions *R;
  ag_ptx_module *m = load(path, &R, 0, &d);
  if (!m || !R)
    goto out;
  int root = find_region(R, "gemm_tma"), ml = find_region(R, "gemm_tma/mainloop"),
      ld = find_region(R, "gemm_tma/mainloop/loads"), mma = find_region(R, "gemm_tma/mainloop/mma"),
      ep = find_region(R, "gemm_tma/epilogue");
  CHECK(root >= 0 && ml >= 0 && ld >= 0 && mma >= 0 && ep >= 0);
  if (root < 0 || ml < 0 || ld < 0 || mma < 0 || ep < 0)
    goto out;
  CHECK_EQ_INT(R->nregions, 5);
  CHECK(R->regions[root].is_root && R->regions[root].parent == -1);
  CHECK_EQ_INT(R->regions[ml].parent, root);
  CHECK_EQ_INT(R->regions[ld].parent, ml);
  CHECK_EQ_INT(R->regions[mma].parent, ml);
  CHECK_EQ_INT(R->regions[ep].parent, root);
  CHECK_EQ_U64(R->regions[ld].id, ag_ptx_region_id("gemm_tma/mainloop/loads"));
  CHECK(R->regions[ld].id != ag_ptx_region_id("gemm_tma/loads"));
  /* both roles run a mainloop; loads is the producer's, mma and epilogue the consumer's */
  CHECK_EQ_INT(R->regions[ml].nbegins, 2);
  CHECK(R->regions[ml].role == NULL);
  CHECK_EQ_STR(R->regions[ld].role, "producer");
  CHECK_EQ_STR(R->regions[mma].role, "consumer");
  CHECK_EQ_STR(R->regions[ep].role, "consumer");
  /* every begin of loads/mma carries an iteration register, every begin has an end */
  for (int k = 0; k < R->regions[ld].nbegins; k++)
    CHECK(R->regions[ld].begins[k].iter && R->regions[ld].begins[k].iter[0] == '%');
  for (int k = 0; k < R->regions[mma].nbegins; k++)
    CHECK(R->regions[mma].begins[k].iter != NULL);
  CHECK_EQ_INT(R->regions[ld].nbegins, R->regions[ld].nends);
  CHECK(R->regions[ep].iter == NULL);
  /* every TMA load in the text is a site with its barrier full_bar */
  int tma = 0, waits_full = 0;
  for (int i = 0; i < R->nsites; i++) {
    const ag_ptx_site *s = &R->sites[i];
    if (s->kind == AG_PTX_SITE_MBAR_WAIT && s->bar.sym && !strcmp(s->bar.sym, "full_bar"))
      waits_full++;
    if (s->kind != AG_PTX_SITE_TMA_LOAD)
      continue;
    tma++;
    CHECK_EQ_INT(s->region, ld);
    CHECK_EQ_INT(s->completion, AG_PTX_DONE_MBARRIER);
    CHECK(s->has_bar);
    CHECK_EQ_STR(s->bar.sym, "full_bar");
    CHECK(s->bar.reg != NULL);
    CHECK(s->ndone_by >= 1);
    for (int k = 0; k < s->ndone_by; k++) {
      const ag_ptx_site *w = &R->sites[s->done_by[k]];
      CHECK_EQ_INT(w->kind, AG_PTX_SITE_MBAR_WAIT);
      CHECK_EQ_STR(w->bar.sym, "full_bar");
      CHECK(w->parity != NULL);
      CHECK_EQ_INT(w->region, mma);
    }
    char want[40];
    snprintf(want, sizeof want, "%016llx:%d", (unsigned long long)R->regions[ld].id, s->ordinal);
    CHECK_EQ_STR(s->op_id, want);
  }
  CHECK_EQ_INT(tma, count_substr(text, "cp.async.bulk.tensor"));
  CHECK(tma >= 2);
  CHECK(waits_full >= 1);
  /* wgmma: completed by a commit and a wait_group in the consumer */
  int wg = 0;
  for (int i = 0; i < R->nsites; i++) {
    const ag_ptx_site *s = &R->sites[i];
    if (s->kind != AG_PTX_SITE_WGMMA)
      continue;
    wg++;
    CHECK_EQ_INT(s->completion, AG_PTX_DONE_WGMMA_GROUP);
    int commit = 0, wait = 0;
    for (int k = 0; k < s->ndone_by; k++) {
      commit += R->sites[s->done_by[k]].kind == AG_PTX_SITE_WGMMA_COMMIT;
      wait += R->sites[s->done_by[k]].kind == AG_PTX_SITE_WGMMA_WAIT &&
              R->sites[s->done_by[k]].group_n == 0;
    }
    CHECK(commit >= 1 && wait >= 1);
    CHECK(s->loop >= 0);
  }
  CHECK_EQ_INT(wg, count_substr(text, "wgmma.mma_async"));
  /* sites are listed in their regions in order */
  for (int i = 0; i < R->nregions; i++)
    for (int k = 0; k < R->regions[i].nsites; k++)
      CHECK_EQ_INT(R->sites[R->regions[i].sites[k]].ordinal, k);
  /* JSON and text views */
  json_t *j = ag_ptx_regions_to_json(m, R);
  CHECK(j && json_array_size(json_object_get(j, "regions")) == 5);
  json_decref(j);
  ag_str s = AG_STR_INIT;
  ag_ptx_regions_format(m, R, &s);
  CHECK_CONTAINS(ag_str_cstr(&s), "loads  id ");
  CHECK_CONTAINS(ag_str_cstr(&s), "tma_load");
  ag_str_release(&s);
out:
  ag_ptx_module_free(m);
  ag_diags_release(&d);
  ag_free(text);
}

TEST(overhead) {
  const char *path = corpus_path("tests/data/ptx/overhead.ptx", 1);
  if (access(path, R_OK)) {
    SKIP("no %s (nvcc absent at build time)", path);
  }
  ag_diags d;
  ag_diags_init(&d);
  ag_ptx_regions *R;
  ag_ptx_module *m = load(path, &R, 0, &d);
  if (m && R) {
    const char *kn[] = {"overhead_compute", "overhead_memory"};
    for (int k = 0; k < 2; k++) {
      char q[128];
      snprintf(q, sizeof q, "%s/work/step", kn[k]);
      int st = find_region(R, q);
      CHECK(st >= 0);
      if (st < 0)
        continue;
      CHECK(R->regions[st].iter && R->regions[st].iter[0] == '%');
      CHECK_EQ_INT(R->regions[st].nbegins, 1);
      snprintf(q, sizeof q, "%s/work", kn[k]);
      CHECK_EQ_INT(R->regions[st].parent, find_region(R, q));
    }
    /* the hashes nvcc computed from region.cuh's constexpr FNV-1a equal ours */
    CHECK(R->nmarkers >= 8);
    for (int i = 0; i < R->nmarkers; i++)
      CHECK_EQ_U64(R->markers[i].name_hash,
                   ag_ptx_fnv1a(R->markers[i].name, strlen(R->markers[i].name)));
  }
  ag_ptx_module_free(m);
  ag_diags_release(&d);
}

#define HDR ".version 8.4\n.target sm_90a\n.address_size 64\n"
#define KHEAD ".visible .entry k(.param .u32 k_p)\n{\n\t.reg .pred %p<3>;\n\t.reg .b32 %r<4>;\n" \
              "\tld.param.u32 %r1, [k_p];\n"

typedef struct vcase {
  const char *body;
  int line;
  const char *msg1, *msg2;
} vcase;

TEST(validation_errors) {
  static const vcase cases[] = {
      /* begin without end on one path (line numbers: the body starts at line 9) */
      {"\t// @argus begin - a\n\tsetp.eq.s32 %p1, %r1, 0;\n\t@%p1 bra $SKIP;\n"
       "\t// @argus end - a\n$SKIP:\n\tret;\n}\n",
       13, "region 'a' begun at line 9 has no end on some path in function 'k'",
       "reached both with and without it open"},
      /* end without begin */
      {"\t// @argus end - b\n\tret;\n}\n", 9, "end of region 'b' without a begin in function 'k'",
       "line 9"},
      /* crossing regions */
      {"\t// @argus begin - a\n\t// @argus begin - b\n\t// @argus end - a\n\t// @argus end - b\n"
       "\tret;\n}\n",
       11, "regions 'a' and 'b' cross in function 'k'", "begun at line 10"},
      /* open at a return */
      {"\t// @argus begin - a\n\tret;\n}\n", 10,
       "region 'a' begun at line 9 has no end on some path in function 'k'", "returns at line 10"},
      /* a region left open around a loop back edge */
      {"$L:\n\t// @argus begin - a\n\tadd.s32 %r1, %r1, 1;\n\tsetp.lt.s32 %p1, %r1, 9;\n"
       "\t@%p1 bra $L;\n\t// @argus end - a\n\tret;\n}\n",
       9, "region 'a' begun at line 10 has no end on some path", "both with and without"},
      /* hash mismatch */
      {"\t// @argus begin 1 a\n\t// @argus end - a\n\tret;\n}\n", 9, "does not match its name",
       "'a'"},
      /* With the PTX debug lines (.loc/.file, as Triton writes them: the
       * .file directives after the function), the source line of each
       * marker: the last .loc before it with a line above 0, in the file it
       * numbers. The cases above have no .loc: no position. */
      /* begin without end: the begin's .loc (file 1, line 41) */
      {"\t.loc 1 41 8\n\t// @argus begin - a\n\t.loc 2 7 1\n\t.loc 1 0 3\n\tret;\n}\n", 13,
       "region 'a' begun at line 10 (/src/k.py:41) has no end", "returns at line 13"},
      /* the nearest .loc with a line wins; .loc 2 0 is skipped; file 2 is named */
      {"\t.loc 1 5 0\n\t.loc 2 43 17\n\t.loc 2 0 4\n\t// @argus end - b\n\tret;\n}\n", 12,
       "end of region 'b' without a begin in function 'k' (line 12) (/lib/standard.py:43)", ""},
      /* crossing: both markers' positions */
      {"\t.loc 1 20 4\n\t// @argus begin - a\n\t.loc 1 21 4\n\t// @argus begin - b\n"
       "\t.loc 1 22 4\n\t// @argus end - a\n\t// @argus end - b\n\tret;\n}\n",
       14, "'a' ends at line 14 (/src/k.py:22) while 'b'", "begun at line 12 (/src/k.py:21)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ag_str t = AG_STR_INIT;
    ag_str_puts(&t, HDR KHEAD);
    ag_str_puts(&t, cases[i].body);
    ag_str_puts(&t, ".file 1 \"/src/k.py\"\n.file 2 \"/lib/standard.py\", 0, 0\n");
    ag_diags d;
    ag_diags_init(&d);
    ag_ptx_module *m;
    CHECK_EQ_INT(ag_ptx_parse(t.p, t.len, "v.ptx", &d, &m), 0);
    ag_ptx_regions *R;
    CHECK_EQ_INT(ag_ptx_discover(m, &d, &R), AG_EPARSE);
    CHECK(d.items.n >= 1);
    if (d.items.n) {
      if (d.items.v[0].line != cases[i].line)
        fprintf(stderr, "case %zu: line %d: %s\n", i, d.items.v[0].line, d.items.v[0].msg);
      CHECK_EQ_INT(d.items.v[0].line, cases[i].line);
      CHECK_CONTAINS(d.items.v[0].msg, cases[i].msg1);
      CHECK_CONTAINS(d.items.v[0].msg, cases[i].msg2);
      CHECK_EQ_STR(d.items.v[0].file, "v.ptx");
    }
    ag_ptx_module_free(m);
    ag_diags_release(&d);
    ag_str_release(&t);
  }
  /* deliberately right: balanced markers on every path are accepted */
  const char *ok = HDR KHEAD "\t// @argus begin - a\n\tsetp.eq.s32 %p1, %r1, 0;\n\t@%p1 bra $SKIP;\n"
                             "\t// @argus begin - b\n\t// @argus end - b\n$SKIP:\n"
                             "\t// @argus end - a\n\tret;\n}\n";
  ag_diags d;
  ag_diags_init(&d);
  ag_ptx_module *m;
  CHECK_EQ_INT(ag_ptx_parse(ok, strlen(ok), "ok.ptx", &d, &m), 0);
  ag_ptx_regions *R;
  CHECK_EQ_INT(ag_ptx_discover(m, &d, &R), 0);
  CHECK_EQ_INT(R->nregions, 3);
  CHECK(find_region(R, "k/a/b") >= 0);
  ag_ptx_module_free(m);
  ag_diags_release(&d);
}

/* ag_ptx_source_pos on a recorded Triton module (validation_errors has the
 * marker errors with source positions): its `ret` at .loc 1 42 in
 * triton_kernels.py; the module's header has none. */
TEST(source_positions) {
  ag_diags d;
  ag_diags_init(&d);
  ag_ptx_regions *R;
  ag_ptx_module *m =
      load(corpus_path("tests/data/ptx/triton/triton_matmul_pipelined.ptx", 0), &R, 0, &d);
  const ag_ptx_stmt *ret = NULL;
  for (const ag_ptx_stmt *s = m ? m->first : NULL; s; s = s->next)
    if (s->kind == AG_PTX_INSTR && !strcmp(s->opcode, "ret"))
      ret = s;
  CHECK(ret != NULL);
  const char *p = NULL;
  size_t pl = 0;
  int line = 0;
  if (ret) {
    CHECK_EQ_INT(ag_ptx_source_pos(m, ret, &p, &pl, &line), 1);
    CHECK_EQ_INT(line, 42);
    CHECK(pl > 17 && !memcmp(p + pl - 17, "triton_kernels.py", 17));
    /* the module's header has no position */
    CHECK_EQ_INT(ag_ptx_source_pos(m, m->first, &p, &pl, &line), 0);
    CHECK(p == NULL && line == 0);
  }
  ag_ptx_module_free(m);
  ag_diags_release(&d);
}

static const char *dyn_src(int two_callers) {
  static char buf[2048];
  snprintf(buf, sizeof buf,
           HDR ".func helper()\n{\n\t// @argus begin - inner\n\tbar.sync 0;\n"
               "\t// @argus end - inner\n\tret;\n}\n"
               ".visible .entry k()\n{\n"
               "\t// @argus begin - r1\n\tcall.uni helper, ();\n\t// @argus end - r1\n"
               "\t// @argus begin - r2\n\t%s\n\t// @argus end - r2\n\tret;\n}\n",
           two_callers ? "call.uni helper, ();" : "bar.sync 1;");
  return buf;
}

TEST(dynamic_ownership) {
  for (int two = 0; two < 2; two++) {
    const char *t = dyn_src(two);
    ag_diags d;
    ag_diags_init(&d);
    ag_ptx_module *m;
    CHECK_EQ_INT(ag_ptx_parse(t, strlen(t), "dyn.ptx", &d, &m), 0);
    ag_ptx_regions *R;
    CHECK_EQ_INT(ag_ptx_discover(m, &d, &R), 0);
    int in = find_region(R, "helper/inner");
    CHECK(in >= 0);
    if (in >= 0) {
      CHECK_EQ_INT(R->regions[in].dynamic, two);
      CHECK_EQ_INT(R->regions[in].nowners, two ? 2 : 1);
      CHECK_EQ_STR(R->regions[R->regions[in].owners[0]].qname, "k/r1");
      if (two)
        CHECK_EQ_STR(R->regions[R->regions[in].owners[1]].qname, "k/r2");
      /* the barrier inside the helper belongs to helper/inner */
      CHECK_EQ_INT(R->regions[in].nsites, 1);
    }
    ag_ptx_module_free(m);
    ag_diags_release(&d);
  }
}

TEST(hand_triton_style) {
  ag_diags d;
  ag_diags_init(&d);
  ag_ptx_regions *R;
  ag_ptx_module *m = load(corpus_path("tests/data/ptx/hand/triton_style.ptx", 0), &R, 0, &d);
  if (m && R) {
    int ld = find_region(R, "matmul_kernel/mainloop/load");
    CHECK(ld >= 0);
    int tma = 0, cp = 0;
    for (int i = 0; i < R->nsites; i++) {
      const ag_ptx_site *s = &R->sites[i];
      if (s->kind == AG_PTX_SITE_TMA_LOAD) {
        tma++;
        CHECK_EQ_INT(s->region, ld);
        CHECK_EQ_STR(s->bar.sym, "global_smem");
        CHECK(s->bar.offset_known && s->bar.offset == 16384);
        CHECK_EQ_INT(s->ndone_by, 2); /* the two scoped wait loops */
      }
      if (s->kind == AG_PTX_SITE_CP_ASYNC) {
        cp++;
        CHECK_EQ_INT(s->completion, AG_PTX_DONE_CP_GROUP);
        CHECK_EQ_INT(s->ndone_by, 2);
        CHECK_EQ_INT(R->sites[s->done_by[0]].kind, AG_PTX_SITE_CP_ASYNC_COMMIT);
        CHECK_EQ_INT(R->sites[s->done_by[1]].kind, AG_PTX_SITE_CP_ASYNC_WAIT);
      }
    }
    CHECK_EQ_INT(tma, 1);
    CHECK_EQ_INT(cp, 1);
  }
  ag_ptx_module_free(m);
  ag_diags_release(&d);
}

/* Roles (issue 16's linear rewrite): a begin marker takes the role marker
 * before it in its own block, else the last one of its nearest dominator
 * that has one; regions no role dominates have none. */
TEST(hand_roles) {
  ag_diags d;
  ag_diags_init(&d);
  ag_ptx_regions *R;
  ag_ptx_module *m = load(corpus_path("tests/data/ptx/hand/traced_cases.ptx", 0), &R, 0, &d);
  if (m && R) {
    static const char *const want[][2] = {
        {"roles/mainloop", "consumer"},   /* the role marker is in its block */
        {"roles/mainloop/step", "consumer"}, /* the loop header: from the dominator */
        {"roles/load", "producer"},
        {"roles/load/inner", "producer"},
        {"plain/whole", NULL},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
      int r = find_region(R, want[i][0]);
      CHECK(r >= 0);
      if (r < 0)
        continue;
      if (want[i][1])
        CHECK_EQ_STR(R->regions[r].role, want[i][1]);
      else
        CHECK(R->regions[r].role == NULL);
    }
  }
  ag_ptx_module_free(m);
  ag_diags_release(&d);
}

RUN_TESTS(T(gemm_tma), T(overhead), T(validation_errors), T(source_positions),
          T(dynamic_ownership), T(hand_triton_style), T(hand_roles))
