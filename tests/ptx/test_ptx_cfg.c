/*
 * test_ptx_cfg.c — CFGs of hand-written PTX with known blocks, edges,
 * dominators and loops, and dominators of every corpus function checked
 * against the brute-force definition (a dominates b iff b is unreachable
 * from the entry once a is removed), with a corrupted tree that must fail.
 */
#include "argus/ptx.h"
#include "check.h"
#include "corpus.h"

static ag_ptx_module *load_hand(void) {
  ag_diags d;
  ag_diags_init(&d);
  ag_ptx_module *m = NULL;
  CHECK_EQ_INT(ag_ptx_parse_file(corpus_path("tests/data/ptx/hand/cfg_cases.ptx", 0), &d, &m), 0);
  ag_diags_release(&d);
  return m;
}

static ag_ptx_cfg *cfg_of(ag_ptx_module *m, const char *fn) {
  ag_diags d;
  ag_diags_init(&d);
  ag_ptx_cfg *g = NULL;
  ag_ptx_func *f = ag_ptx_find_func(m, fn);
  CHECK(f != NULL);
  if (f)
    CHECK_EQ_INT(ag_ptx_cfg_build(m, f, &d, &g), 0);
  ag_diags_release(&d);
  return g;
}

static int has_edge(const ag_ptx_cfg *g, int a, int b) {
  for (int i = 0; i < g->blocks[a].nsucc; i++)
    if (g->blocks[a].succ[i].to == b)
      return 1;
  return 0;
}

TEST(diamond) {
  ag_ptx_module *m = load_hand();
  if (!m)
    return;
  ag_ptx_cfg *g = cfg_of(m, "diamond");
  CHECK_EQ_INT(g->nblocks, 5); /* 4 + exit */
  CHECK_EQ_INT(g->exit, 4);
  CHECK(has_edge(g, 0, 1) && has_edge(g, 0, 2));
  CHECK(has_edge(g, 1, 3) && has_edge(g, 2, 3) && has_edge(g, 3, 4));
  CHECK(!has_edge(g, 1, 2));
  CHECK_EQ_INT(g->blocks[1].idom, 0);
  CHECK_EQ_INT(g->blocks[2].idom, 0);
  CHECK_EQ_INT(g->blocks[3].idom, 0);
  CHECK(ag_ptx_dominates(g, 0, 3));
  CHECK(!ag_ptx_dominates(g, 1, 3)); /* deliberately wrong claim */
  CHECK_EQ_INT(g->nloops, 0);
  CHECK(g->blocks[3].terminator);
  ag_ptx_module_free(m);
}

TEST(nested_loops) {
  ag_ptx_module *m = load_hand();
  if (!m)
    return;
  ag_ptx_cfg *g = cfg_of(m, "nested");
  CHECK_EQ_INT(g->nblocks, 6); /* entry, outer, inner, latch, ret, exit */
  CHECK_EQ_INT(g->nloops, 2);
  int outer = g->blocks[1].loop, inner = g->blocks[2].loop;
  CHECK(outer >= 0 && inner >= 0 && outer != inner);
  CHECK_EQ_INT(g->loops[outer].header, 1);
  CHECK_EQ_INT(g->loops[inner].header, 2);
  CHECK_EQ_INT(g->loops[outer].nblocks, 3);
  CHECK_EQ_INT(g->loops[inner].nblocks, 1);
  CHECK_EQ_INT(g->loops[inner].parent, outer);
  CHECK_EQ_INT(g->loops[inner].depth, 2);
  CHECK_EQ_INT(g->loops[outer].depth, 1);
  CHECK_EQ_INT(g->blocks[3].loop, outer);
  CHECK_EQ_INT(g->blocks[4].loop, -1);
  CHECK_EQ_INT(g->loops[inner].latches[0], 2);
  ag_ptx_module_free(m);
}

TEST(scoped_labels) {
  ag_ptx_module *m = load_hand();
  if (!m)
    return;
  ag_ptx_cfg *g = cfg_of(m, "scoped");
  /* two spin loops, each a self loop on its own block */
  CHECK_EQ_INT(g->nloops, 2);
  for (int l = 0; l < g->nloops; l++) {
    CHECK_EQ_INT(g->loops[l].nblocks, 1);
    int h = g->loops[l].header;
    CHECK(has_edge(g, h, h));
  }
  CHECK(g->loops[0].header != g->loops[1].header);
  ag_ptx_module_free(m);
}

TEST(jump_table_and_exits) {
  ag_ptx_module *m = load_hand();
  if (!m)
    return;
  ag_ptx_cfg *g = cfg_of(m, "jumptable");
  CHECK_EQ_INT(g->nblocks, 5);
  CHECK_EQ_INT(g->blocks[0].nsucc, 3);
  for (int b = 1; b <= 3; b++) {
    CHECK(has_edge(g, 0, b));
    CHECK(has_edge(g, b, g->exit));
    CHECK_EQ_INT(g->blocks[b].idom, 0);
  }
  ag_ptx_module_free(m);
}

TEST(unknown_label) {
  const char *t = ".version 8.4\n.target sm_90a\n.address_size 64\n.entry f()\n{\n\tbra.uni $NOWHERE;\n}\n";
  ag_diags d;
  ag_diags_init(&d);
  ag_ptx_module *m;
  CHECK_EQ_INT(ag_ptx_parse(t, strlen(t), "u.ptx", &d, &m), 0);
  ag_ptx_cfg *g;
  CHECK_EQ_INT(ag_ptx_cfg_build(m, m->funcs[0], &d, &g), AG_EPARSE);
  CHECK(d.items.n == 1 && strstr(d.items.v[0].msg, "unknown label '$NOWHERE'"));
  CHECK(d.items.n == 1 && d.items.v[0].line == 6);
  ag_ptx_module_free(m);
  ag_diags_release(&d);
}

/* blocks reachable from the entry avoiding `removed` */
static void reach(const ag_ptx_cfg *g, int removed, char *seen) {
  memset(seen, 0, (size_t)g->nblocks);
  int *st = malloc(sizeof(int) * (size_t)g->nblocks), sp = 0;
  if (removed != 0) {
    st[sp++] = 0;
    seen[0] = 1;
  }
  while (sp) {
    int b = st[--sp];
    for (int i = 0; i < g->blocks[b].nsucc; i++) {
      int t = g->blocks[b].succ[i].to;
      if (t != removed && !seen[t]) {
        seen[t] = 1;
        st[sp++] = t;
      }
    }
  }
  free(st);
}

/* number of (a, b) pairs where ag_ptx_dominates disagrees with brute force */
static int dom_mismatches(const ag_ptx_cfg *g) {
  int bad = 0;
  char *base = malloc((size_t)g->nblocks), *seen = malloc((size_t)g->nblocks);
  reach(g, -1, base);
  base[0] = 1;
  for (int a = 0; a < g->nblocks; a++) {
    reach(g, a, seen);
    for (int b = 0; b < g->nblocks; b++) {
      if (!base[b])
        continue;
      int brute = a == b || !seen[b];
      if (brute != ag_ptx_dominates(g, a, b))
        bad++;
    }
  }
  free(base);
  free(seen);
  return bad;
}

TEST(dominators_brute_force) {
  corpus_list files = {0};
  corpus_collect(&files);
  int funcs = 0;
  for (size_t i = 0; i < files.n; i++) {
    ag_diags d;
    ag_diags_init(&d);
    ag_ptx_module *m;
    if (ag_ptx_parse_file(files.v[i], &d, &m)) {
      CHECK(0);
      continue;
    }
    for (int f = 0; f < m->nfuncs; f++) {
      if (m->funcs[f]->is_decl)
        continue;
      ag_ptx_cfg *g;
      CHECK_EQ_INT(ag_ptx_cfg_build(m, m->funcs[f], &d, &g), 0);
      CHECK_EQ_INT(dom_mismatches(g), 0);
      /* every loop's header dominates its blocks */
      for (int l = 0; l < g->nloops; l++)
        for (int k = 0; k < g->loops[l].nblocks; k++)
          CHECK(ag_ptx_dominates(g, g->loops[l].header, g->loops[l].blocks[k]));
      funcs++;
      /* deliberately wrong: corrupt one idom, the comparison must notice */
      for (int b = 1; b < g->nblocks; b++)
        if (g->blocks[b].idom > 0) {
          int keep = g->blocks[b].idom;
          g->blocks[b].idom = 0;
          CHECK(dom_mismatches(g) > 0);
          g->blocks[b].idom = keep;
          break;
        }
    }
    ag_ptx_module_free(m);
    ag_diags_release(&d);
  }
  CHECK(funcs >= 5);
  corpus_free(&files);
}

/* A loop whose latch is its last block and whose members are found from the
 * latch backwards (B4, B3, B2): its member list is ascending; a line of
 * 6,000 blocks has no loop (issue 16: members are collected, not found by
 * a scan of every block per loop; the back-edge test walks dominators for
 * retreating edges only). */
TEST(loop_members_ascending) {
  ag_str t = AG_STR_INIT;
  ag_str_puts(&t, ".version 8.0\n.target sm_90\n.address_size 64\n"
                  ".visible .entry chain(.param .u32 n)\n{\n\t.reg .pred %p<3>;\n"
                  "\t.reg .b32 %r<4>;\n\tld.param.u32 %r1, [n];\n$L1:\n"
                  "\tadd.u32 %r2, %r2, 1;\n\tsetp.eq.u32 %p1, %r2, 3;\n\t@%p1 bra $L3;\n"
                  "$L2:\n\tadd.u32 %r3, %r3, 1;\n$L3:\n\tadd.u32 %r3, %r3, 2;\n"
                  "$L4:\n\tsetp.lt.u32 %p2, %r2, %r1;\n\t@%p2 bra $L1;\n\tret;\n}\n"
                  ".visible .entry line()\n{\n\t.reg .pred %p<2>;\n\t.reg .b32 %r<2>;\n");
  for (int i = 0; i < 3000; i++)
    ag_str_printf(&t, "\t@%%p1 bra $M%d;\n\tadd.u32 %%r1, %%r1, 1;\n$M%d:\n", i, i);
  ag_str_puts(&t, "\tret;\n}\n");
  ag_diags d;
  ag_diags_init(&d);
  ag_ptx_module *m = NULL;
  CHECK_EQ_INT(ag_ptx_parse(t.p, t.len, "chain.ptx", &d, &m), 0);
  ag_ptx_cfg *g = m ? cfg_of(m, "chain") : NULL;
  if (g) {
    CHECK_EQ_INT(g->nloops, 1);
    if (g->nloops == 1) {
      const ag_ptx_loop *L = &g->loops[0];
      CHECK(L->nblocks >= 3);
      for (int k = 1; k < L->nblocks; k++)
        CHECK(L->blocks[k - 1] < L->blocks[k]);
    }
  }
  ag_ptx_cfg *h = m ? cfg_of(m, "line") : NULL;
  if (h) {
    CHECK_EQ_INT(h->nloops, 0);
    CHECK(h->nblocks > 6000);
  }
  ag_ptx_module_free(m);
  ag_diags_release(&d);
  ag_str_release(&t);
}

RUN_TESTS(T(diamond), T(nested_loops), T(scoped_labels), T(jump_table_and_exits),
          T(unknown_label), T(dominators_brute_force), T(loop_members_ascending))
