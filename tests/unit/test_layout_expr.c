/*
 * test_layout_expr.c — symbolic expressions and symbolic layout evaluation.
 * Random expression trees are built twice: as ag_exprs (hash-consed, folded,
 * simplified) and as a plain reference tree evaluated here with C's
 * semantics; wherever the reference is defined the two must agree, and
 * references with a deliberate slip in one operator (division rounding
 * down, a logical shift right, ...) must each disagree somewhere. Symbolic
 * evaluation of random layouts, with every symbol bound, must equal the
 * library's concrete evaluation and the independent reference evaluator;
 * a perturbed layout must be caught by the same comparison.
 */
#include "check.h"
#include "layout_ref.h"

#include <stdlib.h>

static const char *P(const ag_expr *e) {
  ag_str s = AG_STR_INIT;
  ag_expr_print(e, &s);
  return ring(&s);
}

/* -------------------------------------------------------- symbol bindings */

typedef struct env {
  int n;
  const char *name[16];
  int64_t value[16];
} env;

static int lookup(void *ud, const char *name, int64_t *v) {
  env *e = ud;
  for (int i = 0; i < e->n; i++)
    if (!strcmp(e->name[i], name)) {
      *v = e->value[i];
      return 0;
    }
  return -1;
}

/* ------------------------------------------------------- reference trees */

typedef struct rnode {
  int op; /* ag_expr_op */
  int64_t v;
  int sym;
  struct rnode *a, *b;
} rnode;

static const char *syms[] = {"x", "y", "z"};

/* Deliberately wrong semantics, each a plausible slip in an implementation
 * of one operator. The reference evaluated with one of them must disagree
 * with the library somewhere in the random trees: otherwise the trees never
 * exercise what tells the right semantics from that slip, and the
 * comparison with the right reference could not catch it. */
enum { W_NONE = -1, W_DIV_FLOOR, W_MOD_FLOOR, W_SHR_LOGICAL, W_SHL_32, W_SUB_SWAPPED, NWRONG };
static const char *wrong_name[NWRONG] = {"division rounding down", "modulo taking the divisor's sign",
                                         "logical shift right", "shift left in 32 bits",
                                         "subtraction operands swapped"};

/* C's semantics, written independently of expr.c, or with the slip `wrong`
 * (W_NONE: none). 1 = undefined. */
static int ref_op(int op, int64_t a, int64_t b, int wrong, int64_t *r) {
  switch (op) {
  case AG_X_ADD: *r = (int64_t)((uint64_t)a + (uint64_t)b); return 0;
  case AG_X_SUB:
    *r = wrong == W_SUB_SWAPPED ? (int64_t)((uint64_t)b - (uint64_t)a)
                                : (int64_t)((uint64_t)a - (uint64_t)b);
    return 0;
  case AG_X_MUL: *r = (int64_t)((uint64_t)a * (uint64_t)b); return 0;
  case AG_X_DIV:
    if (!b || (a == INT64_MIN && b == -1))
      return 1;
    *r = a / b - (wrong == W_DIV_FLOOR && a % b != 0 && (a < 0) != (b < 0));
    return 0;
  case AG_X_MOD:
    if (!b || (a == INT64_MIN && b == -1))
      return 1;
    *r = a % b;
    if (wrong == W_MOD_FLOOR && *r != 0 && (*r < 0) != (b < 0))
      *r += b;
    return 0;
  case AG_X_XOR: *r = a ^ b; return 0;
  case AG_X_AND: *r = a & b; return 0;
  case AG_X_OR: *r = a | b; return 0;
  case AG_X_SHL:
    if (b < 0 || b > 63)
      return 1;
    *r = (int64_t)((uint64_t)a << b);
    if (wrong == W_SHL_32)
      *r = (int64_t)(int32_t)(uint32_t)*r;
    return 0;
  case AG_X_SHR:
    if (b < 0 || b > 63)
      return 1;
    *r = wrong == W_SHR_LOGICAL ? (int64_t)((uint64_t)a >> b) : a >> b; /* gcc: arithmetic */
    return 0;
  }
  return 1;
}

static int ref_eval_tree(const rnode *n, const int64_t *vals, int wrong, int64_t *out) {
  if (n->op == AG_X_CONST) {
    *out = n->v;
    return 0;
  }
  if (n->op == AG_X_SYM) {
    *out = vals[n->sym];
    return 0;
  }
  int64_t a, b;
  if (ref_eval_tree(n->a, vals, wrong, &a) || ref_eval_tree(n->b, vals, wrong, &b))
    return 1;
  return ref_op(n->op, a, b, wrong, out);
}

static int64_t pick_const(void) {
  static const int64_t k[] = {0, 1, -1, 2, 3, 4, 7, 8, 63, 64, -3, INT64_MAX, INT64_MIN, 1000};
  return rnd(0, 3) == 0 ? rnd(-100, 100) : k[rnd(0, 13)];
}

static rnode *gen_tree(ag_layout_ctx *c, int depth, int nsym, const ag_expr **e) {
  rnode *n = ag_arena_alloc(c->arena, sizeof *n);
  if (depth == 0 || rnd(0, 3) == 0) {
    if (nsym && rnd(0, 1)) {
      n->op = AG_X_SYM;
      n->sym = (int)rnd(0, nsym - 1);
      *e = ag_expr_sym(c, syms[n->sym]);
    } else {
      n->op = AG_X_CONST;
      n->v = pick_const();
      *e = ag_expr_const(c, n->v);
    }
    return n;
  }
  n->op = (int)rnd(AG_X_ADD, AG_X_SHR);
  const ag_expr *ea, *eb;
  n->a = gen_tree(c, depth - 1, nsym, &ea);
  n->b = gen_tree(c, depth - 1, nsym, &eb);
  *e = ag_expr_bin(c, n->op, ea, eb);
  return n;
}

TEST(test_expr_matches_reference) {
  rng_seed(21);
  int compared = 0, folded = 0, caught[NWRONG] = {0};
  for (int it = 0; it < 20000; it++) {
    lctx t;
    lctx_init(&t);
    int nsym = (int)rnd(0, 3);
    const ag_expr *e;
    rnode *n = gen_tree(&t.c, (int)rnd(1, 5), nsym, &e);
    CHECK(e != NULL);
    for (int b = 0; b < 8; b++) {
      int64_t vals[3];
      env en = {3, {"x", "y", "z"}, {0}};
      for (int i = 0; i < 3; i++)
        en.value[i] = vals[i] = rnd(0, 1) ? rnd(-20, 20) : pick_const();
      int64_t want, got;
      if (ref_eval_tree(n, vals, W_NONE, &want))
        continue; /* undefined: simplification may remove the culprit (x*0) */
      int rc = ag_expr_eval(e, lookup, &en, &got);
      if (rc || got != want)
        fprintf(stderr, "%s with x=%lld y=%lld z=%lld: %lld (rc %d), want %lld\n", P(e),
                (long long)vals[0], (long long)vals[1], (long long)vals[2], (long long)got, rc,
                (long long)want);
      CHECK_EQ_INT(rc, 0);
      CHECK_EQ_INT(got, want);
      compared++;
      /* the deliberately wrong oracles: where one is defined and differs
       * from the library, the comparison would have caught that slip */
      for (int w = 0; w < NWRONG; w++) {
        int64_t bad;
        caught[w] += !ref_eval_tree(n, vals, w, &bad) && bad != got;
      }
    }
    if (nsym == 0) {
      int64_t want;
      if (!ref_eval_tree(n, NULL, W_NONE, &want)) {
        int64_t v;
        CHECK(ag_expr_is_const(e, &v)); /* constants fold completely */
        CHECK_EQ_INT(v, want);
        folded++;
      }
    }
    lctx_free(&t);
  }
  printf("expressions: %d evaluations compared, %d constant trees folded\n", compared, folded);
  CHECK(compared > 50000);
  CHECK(folded > 1000);
  for (int w = 0; w < NWRONG; w++) {
    printf("  wrong oracle '%s': caught in %d evaluations\n", wrong_name[w], caught[w]);
    if (caught[w] < 10)
      fprintf(stderr, "the trees barely tell %s from C's semantics\n", wrong_name[w]);
    CHECK(caught[w] >= 10);
  }
}

TEST(test_hash_consing) {
  lctx t;
  lctx_init(&t);
  for (int it = 0; it < 200; it++) {
    rng_seed(100 + it);
    const ag_expr *e1, *e2;
    gen_tree(&t.c, 4, 3, &e1);
    rng_seed(100 + it);
    gen_tree(&t.c, 4, 3, &e2);
    CHECK(e1 == e2); /* same structure, same node */
  }
  const ag_expr *x = ag_expr_sym(&t.c, "x"), *y = ag_expr_sym(&t.c, "y");
  CHECK(x == ag_expr_sym(&t.c, "x"));
  CHECK(x != y);
  const ag_expr *a = ag_expr_bin(&t.c, AG_X_ADD, x, y), *b = ag_expr_bin(&t.c, AG_X_ADD, x, y);
  CHECK(a == b);
  CHECK(a != ag_expr_bin(&t.c, AG_X_ADD, y, x)); /* no reordering of symbols */
  CHECK(ag_expr_const(&t.c, 5) == ag_expr_const(&t.c, 5));
  lctx_free(&t);
}

TEST(test_simplifications) {
  lctx t;
  lctx_init(&t);
  ag_layout_ctx *c = &t.c;
  const ag_expr *x = ag_expr_sym(c, "x"), *k0 = ag_expr_const(c, 0), *k1 = ag_expr_const(c, 1);
  CHECK(ag_expr_bin(c, AG_X_ADD, x, k0) == x);
  CHECK(ag_expr_bin(c, AG_X_ADD, k0, x) == x);
  CHECK(ag_expr_bin(c, AG_X_SUB, x, k0) == x);
  CHECK(ag_expr_bin(c, AG_X_SUB, x, x) == k0);
  CHECK(ag_expr_bin(c, AG_X_MUL, x, k1) == x);
  CHECK(ag_expr_bin(c, AG_X_MUL, k0, x) == k0);
  CHECK(ag_expr_bin(c, AG_X_DIV, x, k1) == x);
  CHECK(ag_expr_bin(c, AG_X_MOD, x, k1) == k0);
  CHECK(ag_expr_bin(c, AG_X_XOR, x, x) == k0);
  CHECK(ag_expr_bin(c, AG_X_AND, x, k0) == k0);
  CHECK(ag_expr_bin(c, AG_X_AND, x, ag_expr_const(c, -1)) == x);
  CHECK(ag_expr_bin(c, AG_X_OR, x, k0) == x);
  CHECK(ag_expr_bin(c, AG_X_SHL, x, k0) == x);
  const ag_expr *e = ag_expr_bin(c, AG_X_ADD, ag_expr_bin(c, AG_X_ADD, x, ag_expr_const(c, 3)),
                                 ag_expr_const(c, 4));
  CHECK_EQ_STR(P(e), "x + 7");
  e = ag_expr_bin(c, AG_X_DIV, ag_expr_bin(c, AG_X_DIV, x, ag_expr_const(c, 4)),
                  ag_expr_const(c, 8));
  CHECK_EQ_STR(P(e), "x / 32");
  e = ag_expr_bin(c, AG_X_MOD, ag_expr_bin(c, AG_X_MOD, x, ag_expr_const(c, 32)),
                  ag_expr_const(c, 8));
  CHECK_EQ_STR(P(e), "x % 8");
  e = ag_expr_bin(c, AG_X_MOD, ag_expr_bin(c, AG_X_MOD, x, ag_expr_const(c, 12)),
                  ag_expr_const(c, 8));
  CHECK_EQ_STR(P(e), "x % 12 % 8"); /* 8 does not divide 12: kept */
  /* undefined constant operations are kept, and evaluation reports them */
  e = ag_expr_bin(c, AG_X_DIV, ag_expr_const(c, 7), k0);
  CHECK(!ag_expr_is_const(e, NULL));
  int64_t v;
  CHECK_EQ_INT(ag_expr_eval(e, NULL, NULL, &v), AG_EUNDEFINED);
  e = ag_expr_bin(c, AG_X_SHL, x, ag_expr_const(c, 64));
  env en = {1, {"x"}, {1}};
  CHECK_EQ_INT(ag_expr_eval(e, lookup, &en, &v), AG_EUNDEFINED);
  CHECK_EQ_INT(ag_expr_eval(ag_expr_sym(c, "w"), lookup, &en, &v), AG_ENOTFOUND);
  CHECK_EQ_INT(ag_expr_eval(x, NULL, NULL, &v), AG_ENOTFOUND);
  /* wrapping and truncation */
  CHECK(ag_expr_is_const(ag_expr_bin(c, AG_X_ADD, ag_expr_const(c, INT64_MAX), k1), &v));
  CHECK_EQ_INT(v, INT64_MIN);
  CHECK(ag_expr_is_const(ag_expr_bin(c, AG_X_DIV, ag_expr_const(c, -7), ag_expr_const(c, 2)), &v));
  CHECK_EQ_INT(v, -3);
  CHECK(ag_expr_is_const(ag_expr_bin(c, AG_X_SHR, ag_expr_const(c, -7), k1), &v));
  CHECK_EQ_INT(v, -4);
  CHECK(ag_expr_bin(c, AG_X_CONST, x, x) == NULL);
  CHECK(ag_expr_bin(c, AG_X_ADD, NULL, x) == NULL);
  lctx_free(&t);
}

TEST(test_print) {
  lctx t;
  lctx_init(&t);
  ag_layout_ctx *c = &t.c;
  ag_layout l;
  CHECK_EQ_INT(ag_layout_parse(c, "(4,8):(8,1)", NULL, &l), 0);
  const ag_expr *off;
  CHECK_EQ_INT(ag_layout_eval_index_x(c, &l, ag_expr_sym(c, "tid"), &off), 0);
  CHECK_EQ_STR(P(off), "tid % 4 * 8 + tid / 4");
  const ag_expr *x = ag_expr_sym(c, "x"), *y = ag_expr_sym(c, "y"), *z = ag_expr_sym(c, "z");
  CHECK_EQ_STR(P(ag_expr_bin(c, AG_X_SUB, x, ag_expr_bin(c, AG_X_SUB, y, z))), "x - (y - z)");
  CHECK_EQ_STR(P(ag_expr_bin(c, AG_X_MUL, x, ag_expr_bin(c, AG_X_DIV, y, z))), "x * (y / z)");
  CHECK_EQ_STR(P(ag_expr_bin(c, AG_X_ADD, x, ag_expr_bin(c, AG_X_ADD, y, z))), "x + y + z");
  CHECK_EQ_STR(P(ag_expr_bin(c, AG_X_XOR, x, ag_expr_bin(c, AG_X_SHR, ag_expr_bin(c, AG_X_AND, x, ag_expr_const(c, 896)), ag_expr_const(c, 3)))),
               "x ^ (x & 896) >> 3");
  CHECK_EQ_STR(P(ag_expr_bin(c, AG_X_AND, ag_expr_bin(c, AG_X_OR, x, y), z)), "(x | y) & z");
  CHECK_EQ_STR(P(ag_expr_bin(c, AG_X_MUL, x, ag_expr_const(c, -2))), "x * (-2)");
  lctx_free(&t);
}

/* ------------------------------------------------ symbolic layout evaluation */

static int mismatch_index(ag_layout_ctx *c, const ag_layout *sym_of, const ag_layout *conc) {
  const ag_expr *off;
  if (ag_layout_eval_index_x(c, sym_of, ag_expr_sym(c, "i"), &off))
    return -2;
  int64_t n = ag_layout_size(conc);
  for (int64_t i = 0; i < 2 * n; i++) {
    env en = {1, {"i"}, {i}};
    int64_t got, want;
    if (ag_expr_eval(off, lookup, &en, &got) || ag_layout_eval_index(conc, i, &want) ||
        got != want || want != ref_eval(conc, i))
      return (int)i;
  }
  return -1;
}

/* An xtuple mirroring the shape down to a random depth, leaves named k0..;
 * the matching concrete coordinate gets random in-range values. */
static ag_xtuple *gen_xcoord(ag_layout_ctx *c, const ag_tuple *s, env *en, ag_tuple **conc) {
  ag_xtuple *x = ag_arena_alloc(c->arena, sizeof *x);
  if (s->is_leaf || rnd(0, 3) == 0) {
    ag_layout tmp = {(ag_tuple *)s, (ag_tuple *)s};
    int64_t v = rnd(0, ref_size(&tmp) - 1);
    char *name = ag_arena_printf(c->arena, "k%d", en->n);
    x->is_leaf = 1;
    if (rnd(0, 4) == 0) {
      x->value = ag_expr_const(c, v); /* mixed: some leaves are constants */
    } else {
      x->value = ag_expr_sym(c, name);
      en->name[en->n] = name;
      en->value[en->n++] = v;
    }
    *conc = ag_tuple_leaf(c, v);
    return x;
  }
  x->n = s->n;
  x->child = ag_arena_alloc(c->arena, (size_t)s->n * sizeof *x->child);
  ag_tuple *ch[16];
  for (int i = 0; i < s->n; i++)
    x->child[i] = gen_xcoord(c, s->child[i], en, &ch[i]);
  *conc = ag_tuple_make(c, s->n, ch);
  return x;
}

TEST(test_symbolic_layout_eval) {
  rng_seed(22);
  int caught = 0, consts = 0;
  for (int it = 0; it < 2000; it++) {
    lctx t;
    lctx_init(&t);
    ag_layout l = gen_layout(&t.c, (int)rnd(0, 3), 256, (int)rnd(0, 3)), bad;
    int m = mismatch_index(&t.c, &l, &l);
    if (m != -1)
      fprintf(stderr, "%s: symbolic and concrete differ at %d\n", lstr(&l), m);
    CHECK_EQ_INT(m, -1);
    if (perturb(&t.c, &l, &bad)) { /* the same comparison catches a wrong layout */
      CHECK(mismatch_index(&t.c, &bad, &l) >= 0);
      caught++;
    }
    /* a constant index folds to the concrete offset */
    int64_t idx = rnd(0, 3 * ag_layout_size(&l)), v, want;
    const ag_expr *off;
    CHECK_EQ_INT(ag_layout_eval_index_x(&t.c, &l, ag_expr_const(&t.c, idx), &off), 0);
    CHECK(ag_expr_is_const(off, &v));
    CHECK_EQ_INT(ag_layout_eval_index(&l, idx, &want), 0);
    CHECK_EQ_INT(v, want);
    consts++;
    /* coordinates: symbolic leaves anywhere in the hierarchy */
    for (int k = 0; k < 10; k++) {
      env en = {0, {0}, {0}};
      ag_tuple *crd;
      ag_xtuple *xc = gen_xcoord(&t.c, l.shape, &en, &crd);
      CHECK_EQ_INT(ag_layout_eval_coord_x(&t.c, &l, xc, &off), 0);
      int64_t got;
      CHECK_EQ_INT(ag_expr_eval(off, lookup, &en, &got), 0);
      CHECK_EQ_INT(ag_layout_eval_coord(&l, crd, &want), 0);
      CHECK_EQ_INT(got, want);
    }
    lctx_free(&t);
  }
  CHECK(caught > 1000);
  CHECK_EQ_INT(consts, 2000);
}

TEST(test_symbolic_coord_errors) {
  lctx t;
  lctx_init(&t);
  ag_layout l;
  CHECK_EQ_INT(ag_layout_parse(&t.c, "8:1", NULL, &l), 0);
  ag_xtuple leaf = {1, ag_expr_sym(&t.c, "a"), 0, NULL};
  ag_xtuple *kids[2] = {&leaf, &leaf};
  ag_xtuple pairx = {0, NULL, 2, kids};
  const ag_expr *off;
  CHECK_EQ_INT(ag_layout_eval_coord_x(&t.c, &l, &pairx, &off), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "the coordinate has 2 modes where the shape 8 has 1");
  CHECK(off == NULL);
  lctx_free(&t);
}

TEST(test_symbolic_swizzle) {
  lctx t;
  lctx_init(&t);
  int checked = 0;
  for (int b = 0; b <= 3; b++)
    for (int m = 0; m <= 3; m++)
      for (int s = -4; s <= 4; s++) {
        ag_swizzle sw = {b, m, s};
        if (ag_swizzle_check(&t.c, sw))
          continue;
        const ag_expr *e = ag_swizzle_apply_x(&t.c, sw, ag_expr_sym(&t.c, "x"));
        int wrong = 0;
        for (int64_t x = 0; x < 1024; x++) {
          env en = {1, {"x"}, {x}};
          int64_t got;
          CHECK_EQ_INT(ag_expr_eval(e, lookup, &en, &got), 0);
          CHECK_EQ_INT(got, ag_swizzle_apply(sw, x));
          wrong |= got != (x ^ ((x >> (m + (s > 0 ? s : 0) + b)) & 1)); /* unrelated formula */
          int64_t k;
          CHECK(ag_expr_is_const(ag_swizzle_apply_x(&t.c, sw, ag_expr_const(&t.c, x)), &k));
          CHECK_EQ_INT(k, ag_swizzle_apply(sw, x));
        }
        CHECK(b == 0 || wrong);
        checked++;
      }
  CHECK(checked > 40);
  lctx_free(&t);
}

RUN_TESTS(T(test_expr_matches_reference), T(test_hash_consing), T(test_simplifications),
          T(test_print), T(test_symbolic_layout_eval), T(test_symbolic_coord_errors),
          T(test_symbolic_swizzle))
