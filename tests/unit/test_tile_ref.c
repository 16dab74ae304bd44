/*
 * test_tile_ref.c — the symbolic tags agree with a concrete interpreter.
 *
 * For each example and a few concrete blocks and problem sizes, the
 * reference interpreter (tile_ref.c) runs every thread and records, at each
 * executed assertion, the tags of both sides computed from the actual data
 * coordinates. The checker's symbolic tags for the same assertion instance
 * are evaluated for the same thread, block and sizes (ag__tag_eval) and must
 * be the same sets. Deliberately wrong pairings must disagree: the symbolic
 * tags of the correct GEMM against a run of the buggy one, and the symbolic
 * tags evaluated for the neighbouring thread. Finally every planted bug's
 * counterexample is replayed in the reference, which must see the violation
 * at that thread and loop iteration.
 */
#include "check.h"
#include "tile_ref.h"
#include "tile_util.h"

static int cset_eq(const ag__cset *a, const ag__cset *b) {
  if (a->n != b->n)
    return 0;
  for (int i = 0; i < a->n; i++) {
    int found = 0;
    for (int j = 0; j < b->n && !found; j++)
      found = a->t[i].top == b->t[j].top && a->t[i].n == b->t[j].n &&
              (a->t[i].top || !memcmp(a->t[i].v, b->t[j].v, (size_t)a->t[i].n * sizeof a->t[i].v[0]));
    if (!found)
      return 0;
  }
  return 1;
}

static void cset_print(const ag__cset *s) {
  fprintf(stderr, "{");
  for (int i = 0; i < s->n; i++) {
    if (s->t[i].top) {
      fprintf(stderr, " top");
      continue;
    }
    fprintf(stderr, " (");
    for (int k = 0; k < s->t[i].n; k++)
      fprintf(stderr, "%s%lld", k ? "," : "", (long long)s->t[i].v[k]);
    fprintf(stderr, ")");
  }
  fprintf(stderr, " }");
}

typedef struct cfg {
  int64_t bid[3];
  const char *names[4];
  int64_t vals[4];
  int n;
} cfg;

/* Compares the symbolic tags of program `sym` with a reference run of
 * program `ref`; returns the number of disagreeing (instance, thread, side)
 * triples, -1 when the runs do not line up. thread_shift evaluates the
 * symbolic side for thread (t + shift) % T (0: the same thread). */
static long compare(const char *sym, const char *ref, const cfg *c, int thread_shift,
                    long *checked, int quiet) {
  ag_diags d;
  ag_diags_init(&d);
  ag_tile_program *ps = NULL, *pr = NULL;
  *checked = 0;
  if (ag_tile_parse(sym, strlen(sym), "sym.tile", &d, &ps) ||
      ag_tile_parse(ref, strlen(ref), "ref.tile", &d, &pr)) {
    ag_diags_release(&d);
    return -1;
  }
  ag_tile_check_opts o;
  memset(&o, 0, sizeof o);
  o.max_steps = 5000000;
  int rc;
  const ag_tile_node *k = NULL;
  for (int i = 0; i < ps->top.n && !k; i++)
    if (ps->top.v[i]->kind == AG_TN_KERNEL)
      k = ps->top.v[i];
  ag__ck *ck = ag__ck_run(ps, k, &o, &d, &rc);
  ref_cfg rcfg = {{c->bid[0], c->bid[1], c->bid[2]}, c->n, c->names, c->vals, NULL, 0};
  ref_run run;
  int rr = ref_execute(pr, &rcfg, &run);
  long bad = 0;
  if (!ck || rr) {
    fprintf(stderr, "run failed: ck=%p ref=%d %s\n", (void *)ck, rr, run.err);
    bad = -1;
    goto out;
  }
  /* the assertions' obligations, without the accesses' in-bounds ones */
  AG_VEC(const ag__oblig *) obs = {0};
  for (size_t i = 0; i < ck->obligs.n; i++)
    if (!ck->obligs.v[i].bidx && ag_vec_push(&obs, &ck->obligs.v[i]))
      bad = -1;
  if (bad || (int)obs.n != run.n) {
    fprintf(stderr, "%zu obligations, %d reference instances\n", obs.n, run.n);
    ag_vec_free(&obs);
    bad = -1;
    goto out;
  }
  ag__cenv env = {{c->bid[0], c->bid[1], c->bid[2]}, c->n, c->names, c->vals};
  for (int i = 0; i < run.n; i++) {
    const ag__oblig *ob = obs.v[i];
    const ref_inst *in = &run.inst[i];
    if (ob->at->line != in->at->line) {
      bad = -1;
      break;
    }
    if (ob->k == OB_INT)
      continue;
    for (int t = 0; t < in->nthreads; t++) {
      if (!in->active[t])
        continue;
      int64_t ts = (t + thread_shift) % in->nthreads;
      for (int side = 0; side < 2; side++) {
        const ag__tagv *tv = side ? &ob->rhs : &ob->lhs;
        ag__cset s;
        memset(&s, 0, sizeof s);
        if (ag__tag_eval(ck, tv->tag, &env, ts, tv->proj, &s)) {
          bad++;
          continue;
        }
        ag__cset rs;
        ref_side(in, t, side, &rs);
        const ag__cset *r = &rs;
        (*checked)++;
        if (!cset_eq(&s, r)) {
          if (bad < 3 && !quiet) {
            fprintf(stderr, "line %d instance %d thread %d side %d: symbolic ", ob->at->line, i, t,
                    side);
            cset_print(&s);
            fprintf(stderr, " reference ");
            cset_print(r);
            fprintf(stderr, "\n");
          }
          bad++;
        }
      }
    }
  }
  ag_vec_free(&obs);
out:
  ag__ck_free(ck);
  ref_run_free(&run);
  ag_tile_program_free(ps);
  ag_tile_program_free(pr);
  ag_diags_release(&d);
  return bad;
}

static const cfg gemm_cfgs[] = {
    {{0, 0, 0}, {"M", "N"}, {64, 64}, 2},
    {{1, 2, 0}, {"M", "N"}, {128, 192}, 2},
};
static const cfg attn_cfgs[] = {
    {{0, 0, 0}, {"sq", "hq", "hkv"}, {64, 4, 1}, 3},
    {{1, 5, 0}, {"sq", "hq", "hkv"}, {128, 8, 2}, 3},
};

TEST(test_symbolic_matches_reference) {
  char *gemm = tu_read("examples/tile/gemm.tile", NULL);
  char *attn = tu_read("examples/tile/attention.tile", NULL);
  CHECK(gemm && attn);
  if (!gemm || !attn)
    return;
  for (size_t i = 0; i < 2; i++) {
    long n;
    long bad = compare(gemm, gemm, &gemm_cfgs[i], 0, &n, 0);
    printf("gemm config %zu: %ld tag sets compared, %ld differ\n", i, n, bad);
    CHECK_EQ_INT(bad, 0);
    CHECK(n > 10000);
    bad = compare(attn, attn, &attn_cfgs[i], 0, &n, 0);
    printf("attention config %zu: %ld tag sets compared, %ld differ\n", i, n, bad);
    CHECK_EQ_INT(bad, 0);
    CHECK(n > 10000);
  }
  free(gemm);
  free(attn);
}

TEST(test_reference_sees_no_violation_in_examples) {
  static const char *files[] = {"examples/tile/gemm.tile", "examples/tile/attention.tile"};
  const cfg *cfgs[] = {&gemm_cfgs[1], &attn_cfgs[1]};
  for (int f = 0; f < 2; f++) {
    char *src = tu_read(files[f], NULL);
    ag_diags d;
    ag_diags_init(&d);
    ag_tile_program *p = NULL;
    CHECK_EQ_INT(ag_tile_parse(src, strlen(src), files[f], &d, &p), 0);
    ref_cfg rc = {{cfgs[f]->bid[0], cfgs[f]->bid[1], 0}, cfgs[f]->n, cfgs[f]->names,
                  cfgs[f]->vals, NULL, 0};
    ref_run run;
    CHECK_EQ_INT(ref_execute(p, &rc, &run), 0);
    long viol = 0, inst = 0;
    for (int i = 0; i < run.n; i++)
      for (int t = 0; t < run.inst[i].nthreads; t++)
        if (run.inst[i].active[t]) {
          inst++;
          viol += run.inst[i].violated[t];
        }
    CHECK_EQ_INT(viol, 0);
    CHECK(inst > 0);
    ref_run_free(&run);
    ag_tile_program_free(p);
    ag_diags_release(&d);
    free(src);
  }
}

TEST(test_wrong_pairings_disagree) {
  /* the comparison must be able to fail */
  char *gemm = tu_read("examples/tile/gemm.tile", NULL);
  char *bug = tu_mutate("gemm-swizzle");
  CHECK(gemm && bug);
  if (!gemm || !bug)
    return;
  long n;
  long bad = compare(gemm, bug, &gemm_cfgs[0], 0, &n, 1);
  printf("correct symbolic vs buggy reference: %ld of %ld differ\n", bad, n);
  CHECK(bad > 0);
  bad = compare(gemm, gemm, &gemm_cfgs[0], 1, &n, 1);
  printf("symbolic at the neighbouring thread: %ld of %ld differ\n", bad, n);
  CHECK(bad > 0);
  free(gemm);
  free(bug);
}

static const char *bug_names[] = {
    "gemm-stage",        "gemm-swizzle",        "gemm-ldmatrix",     "gemm-overlap",
    "gemm-trans",        "gemm-nosync",         "attention-transpose", "attention-stage",
    "attention-swizzle", "attention-overlap",   "attention-ldmatrix",
};

TEST(test_counterexamples_replay) {
  for (size_t b = 0; b < sizeof bug_names / sizeof bug_names[0]; b++) {
    char *src = tu_mutate(bug_names[b]);
    CHECK(src != NULL);
    if (!src)
      continue;
    ag_diags d;
    ag_diags_init(&d);
    int rc;
    ag_tile_report *r = tu_check(src, bug_names[b], &d, &rc, NULL);
    CHECK(r != NULL);
    ag_tile_program *p = NULL;
    ag_tile_parse(src, strlen(src), bug_names[b], &d, &p);
    int replayed = 0;
    for (int a = 0; r && p && a < r->nasserts; a++) {
      const ag_tile_cex *x = r->asserts[a].cex;
      if (!x || r->asserts[a].race)
        continue; /* a race (two threads, no tag): the reference replays assertions */
      const char *names[8];
      int64_t vals[8];
      for (int i = 0; i < x->nsizes && i < 8; i++) {
        names[i] = x->sizes[i].name;
        vals[i] = x->sizes[i].value;
      }
      ref_cfg rcfg = {{x->block[0], x->block[1], x->block[2]}, x->nsizes, names, vals, NULL, 0};
      ref_run run;
      int rr = ref_execute(p, &rcfg, &run);
      CHECK_EQ_INT(rr, 0);
      if (rr)
        fprintf(stderr, "%s: %s\n", bug_names[b], run.err);
      int found = 0;
      for (int i = 0; !rr && i < run.n; i++) {
        const ref_inst *in = &run.inst[i];
        if (in->at->line != r->asserts[a].line || in->nloops != x->nloops)
          continue;
        int same = 1;
        for (int k = 0; k < x->nloops && same; k++)
          same = in->loopval[k] == x->loops[k].value;
        if (!same)
          continue;
        found = 1;
        if (!in->active[x->thread] || !in->violated[x->thread]) {
          fprintf(stderr, "%s line %d: the reference does not see the violation at thread %lld\n",
                  bug_names[b], r->asserts[a].line, (long long)x->thread);
          CHECK(0);
        } else {
          replayed++;
        }
      }
      CHECK(found);
      ref_run_free(&run);
    }
    CHECK(replayed >= 1);
    ag_tile_program_free(p);
    ag_tile_report_free(r);
    ag_diags_release(&d);
    free(src);
  }
}

/* The intrinsic table's ldmatrix.x4 layout is the layout module's atom,
 * point by point; the .trans row is not (the wrong case). */
TEST(test_ldmatrix_table_matches_atom) {
  ag_arena a;
  ag_arena_init(&a, 0);
  ag_layout_ctx lc;
  ag_layout_ctx_init(&lc, &a);
  ag_layout atom, mine, trans;
  ag_diags d;
  ag_diags_init(&d);
  CHECK_EQ_INT(ag_atom_ldmatrix_x4(&lc, &atom), 0);
  CHECK_EQ_INT(ag_layout_parse(&lc, ag__intrin_lookup("ldmatrix_x4")->dst_tv, &d, &mine), 0);
  CHECK_EQ_INT(ag_layout_parse(&lc, ag__intrin_lookup("ldmatrix_x4_trans")->dst_tv, &d, &trans), 0);
  int same = 0, differ = 0;
  for (int64_t i = 0; i < 32 * 8; i++) {
    int64_t x, y, z;
    CHECK_EQ_INT(ag_layout_eval_index(&atom, i, &x), 0);
    CHECK_EQ_INT(ag_layout_eval_index(&mine, i, &y), 0);
    CHECK_EQ_INT(ag_layout_eval_index(&trans, i, &z), 0);
    same += x == y;
    differ += x != z;
  }
  CHECK_EQ_INT(same, 256);
  CHECK(differ > 0);
  ag_diags_release(&d);
  ag_layout_ctx_release(&lc);
  ag_arena_release(&a);
}

RUN_TESTS(T(test_ldmatrix_table_matches_atom), T(test_symbolic_matches_reference), T(test_reference_sees_no_violation_in_examples),
          T(test_wrong_pairings_disagree), T(test_counterexamples_replay))
