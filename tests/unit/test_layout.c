/*
 * test_layout.c — the layout library's unit tests: CuTe's documented
 * examples (media/docs/cpp/cute/01_layout.md, 02_layout_algebra.md) with
 * their documented results, parsing and its diagnostics (one test per kind
 * of malformed input), printing and JSON, evaluation, the messages of
 * undefined operations, an out-of-memory fault loop, and random byte
 * strings into the parsers.
 */
#include "check.h"
#include "layout_ref.h"

#include <stdlib.h>

static ag_layout L(lctx *t, const char *text) {
  ag_layout l = {NULL, NULL};
  int rc = ag_layout_parse(&t->c, text, NULL, &l);
  if (rc)
    fprintf(stderr, "parse '%s': %s\n", text, ag_str_cstr(&t->c.err));
  CHECK_EQ_INT(rc, 0);
  return l;
}

static ag_tiler TL(lctx *t, const char *text) {
  ag_tiler tl;
  int rc = ag_tiler_parse(&t->c, text, NULL, &tl);
  CHECK_EQ_INT(rc, 0);
  return tl;
}

/* ----------------------------------------------- CuTe's documented examples */

TEST(test_golden_coalesce) {
  lctx t;
  lctx_init(&t);
  ag_layout a = L(&t, "(2,(1,6)):(1,(6,2))"), r;
  CHECK_EQ_INT(ag_layout_coalesce(&t.c, &a, &r), 0);
  CHECK_EQ_STR(lstr(&r), "12:1"); /* 02_layout_algebra.md, Coalesce */
  CHECK_EQ_INT(ag_layout_coalesce_by_mode(&t.c, &a, &r), 0);
  CHECK_EQ_STR(lstr(&r), "(2,6):(1,2)"); /* By-mode Coalesce */
  /* the four cases of two modes */
  ag_layout x = L(&t, "(4,1):(3,7)");
  CHECK_EQ_INT(ag_layout_coalesce(&t.c, &x, &r), 0);
  CHECK_EQ_STR(lstr(&r), "4:3");
  x = L(&t, "(1,4):(7,3)");
  CHECK_EQ_INT(ag_layout_coalesce(&t.c, &x, &r), 0);
  CHECK_EQ_STR(lstr(&r), "4:3");
  x = L(&t, "(2,4):(3,6)");
  CHECK_EQ_INT(ag_layout_coalesce(&t.c, &x, &r), 0);
  CHECK_EQ_STR(lstr(&r), "8:3");
  x = L(&t, "(2,4):(3,5)");
  CHECK_EQ_INT(ag_layout_coalesce(&t.c, &x, &r), 0);
  CHECK_EQ_STR(lstr(&r), "(2,4):(3,5)");
  x = L(&t, "(1,1):(5,6)");
  CHECK_EQ_INT(ag_layout_coalesce(&t.c, &x, &r), 0);
  CHECK_EQ_STR(lstr(&r), "1:0");
  lctx_free(&t);
}

TEST(test_golden_composition) {
  lctx t;
  lctx_init(&t);
  struct {
    const char *a, *b, *r;
  } g[] = {
      {"(6,2):(8,2)", "(4,3):(3,1)", "((2,2),3):((24,2),8)"}, /* Composition, Example 1 */
      {"20:2", "(5,4):(4,1)", "(5,4):(8,2)"},                  /* Example 2 */
      {"(10,2):(16,4)", "(5,4):(1,5)", "(5,(2,2)):(16,(80,4))"}, /* Example 3 (static) */
      /* (3,6,2,8):(w,x,y,z) o 16:9 = (1,2,2,4):(9w,3x,y,z), with w,x,y,z = 1,5,100,1000
       * and the extent-1 mode dropped as CuTe does for static extents */
      {"(3,6,2,8):(1,5,100,1000)", "16:9", "(2,2,4):(15,100,1000)"},
      {"4:2", "4:1", "4:2"},
      {"(4,2):(2,1)", "8:0", "8:0"},
  };
  for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
    ag_layout a = L(&t, g[i].a), b = L(&t, g[i].b), r;
    CHECK_EQ_INT(ag_layout_compose(&t.c, &a, &b, &r), 0);
    CHECK_EQ_STR(lstr(&r), g[i].r);
  }
  /* By-mode composition with a tiler, and with a shape as tiler */
  ag_layout a = L(&t, "(12,(4,8)):(59,(13,1))"), r;
  ag_tiler tl = TL(&t, "<3:4,8:2>");
  CHECK_EQ_INT(ag_layout_compose_tiler(&t.c, &a, &tl, &r), 0);
  CHECK_EQ_STR(lstr(&r), "(3,(2,4)):(236,(26,1))");
  tl = TL(&t, "<3,8>");
  CHECK_EQ_INT(ag_layout_compose_tiler(&t.c, &a, &tl, &r), 0);
  CHECK_EQ_STR(lstr(&r), "(3,(4,2)):(59,(13,1))");
  lctx_free(&t);
}

TEST(test_golden_complement) {
  lctx t;
  lctx_init(&t);
  struct {
    const char *l;
    int64_t cot;
    const char *r;
  } g[] = {
      {"4:1", 24, "6:4"},          {"6:4", 24, "4:1"},       {"(4,6):(1,4)", 24, "1:0"},
      {"4:2", 24, "(2,3):(1,8)"}, {"(2,4):(1,6)", 24, "3:2"}, {"(2,2):(1,6)", 24, "(3,2):(2,12)"},
      {"4:0", 8, "8:1"},           {"(4,2):(2,0)", 0, "2:1"},
  };
  for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
    ag_layout l = L(&t, g[i].l), r;
    CHECK_EQ_INT(ag_layout_complement(&t.c, &l, g[i].cot, &r), 0);
    CHECK_EQ_STR(lstr(&r), g[i].r);
  }
  lctx_free(&t);
}

TEST(test_golden_divide_product) {
  lctx t;
  lctx_init(&t);
  ag_layout r;
  /* Logical Divide 1-D example */
  ag_layout a = L(&t, "(4,2,3):(2,1,8)");
  ag_tiler b = TL(&t, "4:2");
  CHECK_EQ_INT(ag_layout_logical_divide(&t.c, &a, &b, &r), 0);
  CHECK_EQ_STR(lstr(&r), "((2,2),(2,3)):((4,1),(2,8))");
  /* Logical Divide 2-D example: the tile is (3,(2,4)):(177,(13,2)) */
  a = L(&t, "(9,(4,8)):(59,(13,1))");
  b = TL(&t, "<3:3,(2,4):(1,8)>");
  CHECK_EQ_INT(ag_layout_logical_divide(&t.c, &a, &b, &r), 0);
  CHECK_EQ_STR(lstr(&r), "((3,3),((2,4),(2,2))):((177,59),((13,2),(26,1)))");
  /* Zipped divide: shape ((3,8),(3,4)) after grouping sizes; its mode 0 is
   * composition(a, b) */
  CHECK_EQ_INT(ag_layout_zipped_divide(&t.c, &a, &b, &r), 0);
  CHECK_EQ_STR(lstr(&r), "((3,(2,4)),(3,(2,2))):((177,(13,2)),(59,(26,1)))");
  ag_layout z0, comp;
  CHECK_EQ_INT(ag_layout_mode(&t.c, &r, 0, &z0), 0);
  CHECK_EQ_INT(ag_layout_compose_tiler(&t.c, &a, &b, &comp), 0);
  CHECK(ag_layout_equal(&z0, &comp));
  CHECK_EQ_INT(ag_layout_tiled_divide(&t.c, &a, &b, &r), 0);
  CHECK_EQ_STR(lstr(&r), "((3,(2,4)),3,(2,2)):((177,(13,2)),59,(26,1))");
  /* Logical Product 1-D example */
  a = L(&t, "(2,2):(4,1)");
  b = TL(&t, "6:1");
  CHECK_EQ_INT(ag_layout_logical_product(&t.c, &a, &b, &r), 0);
  CHECK_EQ_STR(lstr(&r), "((2,2),(2,3)):((4,1),(2,8))");
  /* ... "identical to the result of the 1-D Logical Divide example" */
  /* blocked and raked: a 2x5 row-major block over a 3x4 column-major
   * arrangement (hand-computed; the property tests check the definition) */
  a = L(&t, "(2,5):(5,1)");
  ag_layout bb = L(&t, "(3,4):(1,3)");
  CHECK_EQ_INT(ag_layout_blocked_product(&t.c, &a, &bb, &r), 0);
  CHECK_EQ_STR(lstr(&r), "((2,3),(5,4)):((5,10),(1,30))");
  CHECK_EQ_INT(ag_layout_raked_product(&t.c, &a, &bb, &r), 0);
  CHECK_EQ_STR(lstr(&r), "((3,2),(4,5)):((10,5),(30,1))");
  /* rank-sensitive: a rank-1 block over a rank-2 arrangement is padded */
  a = L(&t, "4:1");
  CHECK_EQ_INT(ag_layout_blocked_product(&t.c, &a, &bb, &r), 0);
  CHECK_EQ_STR(lstr(&r), "((4,3),(1,4)):((1,4),(0,12))");
  lctx_free(&t);
}

TEST(test_golden_inverses) {
  lctx t;
  lctx_init(&t);
  ag_layout r;
  ag_layout l = L(&t, "(4,2):(2,1)");
  CHECK_EQ_INT(ag_layout_right_inverse(&t.c, &l, &r), 0);
  CHECK_EQ_STR(lstr(&r), "(2,4):(4,1)");
  CHECK_EQ_INT(ag_layout_left_inverse(&t.c, &l, &r), 0);
  CHECK_EQ_STR(lstr(&r), "(2,4):(4,1)");
  /* CuTe's left inverse, right_inverse(make_layout(L, complement(L)))
   * (cute/layout.hpp), worked by hand: 4:2 has complement 2:1, (4,2):(2,1)
   * has right inverse (2,4):(4,1); the odd offsets go to the complement's
   * coordinate (issue 16: was (2,4):(0,1), valid but not CuTe's) */
  l = L(&t, "4:2");
  CHECK_EQ_INT(ag_layout_left_inverse(&t.c, &l, &r), 0);
  CHECK_EQ_STR(lstr(&r), "(2,4):(4,1)");
  static const char *const cute_left[][2] = {
      {"((2,2),(2,4)):((1,4),(32,128))", "(2,2,2,4,2,2,4):(1,32,2,64,4,256,8)"},
      {"(4,2):(0,2)", "(2,2):(8,4)"}, /* complement 2:1 of the stride-2 mode */
      {"(2,4):(0,1)", "4:2"},
      {"4:0", "1:0"},
      {"(2,3):(3,1)", "(3,2):(2,1)"},
      {"(3,2):(1,4)", "(4,2):(1,3)"}, /* no complement: the mode-by-mode inverse */
  };
  for (size_t i = 0; i < sizeof cute_left / sizeof *cute_left; i++) {
    l = L(&t, cute_left[i][0]);
    CHECK_EQ_INT(ag_layout_left_inverse(&t.c, &l, &r), 0);
    CHECK_EQ_STR(lstr(&r), cute_left[i][1]);
  }
  l = L(&t, "4:2");
  CHECK_EQ_INT(ag_layout_right_inverse(&t.c, &l, &r), 0);
  CHECK_EQ_STR(lstr(&r), "1:0");
  l = L(&t, "((4,8),(2,2)):((32,1),(16,8))"); /* mma C: a bijection onto 128 */
  CHECK_EQ_INT(ag_layout_right_inverse(&t.c, &l, &r), 0);
  CHECK_EQ_INT(ag_layout_size(&r), 128);
  lctx_free(&t);
}

TEST(test_swizzle_values) {
  lctx t;
  lctx_init(&t);
  ag_swizzle s = {3, 4, 3}; /* the 128-byte swizzle on 16-byte units */
  CHECK_EQ_INT(ag_swizzle_check(&t.c, s), 0);
  CHECK_EQ_INT(ag_swizzle_apply(s, 200), 216);
  CHECK_EQ_INT(ag_swizzle_apply(s, 0), 0);
  CHECK_EQ_INT(ag_swizzle_apply(s, 1023), 1023 ^ (7 << 4));
  CHECK_EQ_INT(ag_swizzle_apply((ag_swizzle){2, 0, -3}, 2), 2 ^ (2 << 3));
  CHECK_EQ_INT(ag_swizzle_check(&t.c, (ag_swizzle){3, 4, 2}), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "|S| must be at least B");
  lctx_free(&t);
}

/* ----------------------------------------------------- queries, eval, JSON */

TEST(test_queries_and_eval) {
  lctx t;
  lctx_init(&t);
  ag_layout l = L(&t, "((2,4),(3,5)):((3,6),(1,24))");
  CHECK_EQ_INT(ag_layout_size(&l), 120);
  CHECK_EQ_INT(ag_layout_cosize(&l), 3 + 18 + 2 + 96 + 1);
  CHECK_EQ_INT(ag_layout_rank(&l), 2);
  CHECK_EQ_INT(ag_layout_depth(&l), 2);
  ag_layout m;
  CHECK_EQ_INT(ag_layout_mode(&t.c, &l, 1, &m), 0);
  CHECK_EQ_STR(lstr(&m), "(3,5):(1,24)");
  CHECK_EQ_INT(ag_layout_mode(&t.c, &l, 2, &m), AG_ERANGE);
  ag_layout s = L(&t, "8");
  CHECK_EQ_STR(lstr(&s), "8:1");
  CHECK_EQ_INT(ag_layout_rank(&s), 1);
  CHECK_EQ_INT(ag_layout_depth(&s), 0);
  ag_layout col = L(&t, "(2,(3,4))");
  CHECK_EQ_STR(lstr(&col), "(2,(3,4)):(1,(2,6))");
  col = L(&t, "(2,1,3)"); /* CuTe's compact layout: stride 0 for an extent-1 mode */
  CHECK_EQ_STR(lstr(&col), "(2,1,3):(1,0,2)");
  ag_layout neg = L(&t, "(4,3):(-1,4)");
  CHECK_EQ_INT(ag_layout_cosize(&neg), 3 + 8 + 1); /* CuTe: |stride| */
  int64_t v;
  CHECK_EQ_INT(ag_layout_eval_index(&neg, 1, &v), 0);
  CHECK_EQ_INT(v, -1);
  /* indices past the domain run on along the last mode (CuTe) */
  ag_layout e = L(&t, "(4,2):(1,10)");
  CHECK_EQ_INT(ag_layout_eval_index(&e, 9, &v), 0);
  CHECK_EQ_INT(v, 1 + 20);
  CHECK_EQ_INT(ag_layout_eval_index(&e, -1, &v), AG_ERANGE);
  /* hierarchical coordinates */
  ag_tuple *x;
  CHECK_EQ_INT(ag_tuple_parse(&t.c, "(1,(2,3))", NULL, &x), 0);
  CHECK_EQ_INT(ag_layout_eval_coord(&l, x, &v), 0);
  CHECK_EQ_INT(v, 3 + 2 + 72);
  CHECK_EQ_INT(ag_tuple_parse(&t.c, "(7,14)", NULL, &x), 0); /* integers per mode */
  CHECK_EQ_INT(ag_layout_eval_coord(&l, x, &v), 0);
  CHECK_EQ_INT(v, 3 + 18 + 2 + 96);
  CHECK_EQ_INT(ag_layout_coord_check(&t.c, &l, x), 0);
  CHECK_EQ_INT(ag_tuple_parse(&t.c, "(1,(2,5))", NULL, &x), 0);
  CHECK_EQ_INT(ag_layout_coord_check(&t.c, &l, x), AG_ERANGE);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "coordinate 5 is outside mode 1.1, whose extent is 5");
  CHECK_EQ_INT(ag_tuple_parse(&t.c, "((1,2),2)", NULL, &x), 0);
  CHECK_EQ_INT(ag_layout_eval_coord(&s, x, &v), AG_EINVAL);
  CHECK_EQ_INT(ag_layout_coord_check(&t.c, &s, x), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "has 2 modes");
  /* idx2crd / crd2idx, colexicographic */
  ag_tuple *crd;
  CHECK_EQ_INT(ag_idx2crd(&t.c, 17, l.shape, &crd), 0);
  ag_str o = AG_STR_INIT;
  ag_tuple_print(crd, &o);
  CHECK_EQ_STR(ag_str_cstr(&o), "((1,0),(2,0))");
  int64_t idx;
  CHECK_EQ_INT(ag_crd2idx(crd, l.shape, &idx), 0);
  CHECK_EQ_INT(idx, 17);
  ag_str_release(&o);
  lctx_free(&t);
}

TEST(test_make_validates) {
  lctx t;
  lctx_init(&t);
  ag_layout l;
  ag_tuple *kids[2] = {ag_tuple_leaf(&t.c, 4), ag_tuple_leaf(&t.c, 2)};
  ag_tuple *shape = ag_tuple_make(&t.c, 2, kids);
  CHECK_EQ_INT(ag_layout_make(&t.c, shape, ag_tuple_leaf(&t.c, 1), &l), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "not congruent");
  ag_tuple *bad[2] = {ag_tuple_leaf(&t.c, 4), ag_tuple_leaf(&t.c, 0)};
  CHECK_EQ_INT(ag_layout_make(&t.c, ag_tuple_make(&t.c, 2, bad), shape, &l), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "extent 0 of mode 1 must be positive");
  CHECK_EQ_INT(ag_layout_make(&t.c, ag_tuple_make(&t.c, 0, NULL), ag_tuple_make(&t.c, 0, NULL), &l),
               AG_EINVAL);
  CHECK_EQ_INT(ag_layout_make(&t.c, NULL, shape, &l), AG_ENOMEM);
  ag_tuple *big[2] = {ag_tuple_leaf(&t.c, (int64_t)1 << 40), ag_tuple_leaf(&t.c, (int64_t)1 << 40)};
  ag_tuple *bs = ag_tuple_make(&t.c, 2, big);
  CHECK_EQ_INT(ag_layout_make(&t.c, bs, bs, &l), AG_ERANGE);
  CHECK_EQ_INT(ag_layout_compact(&t.c, shape, &l), 0);
  CHECK_EQ_STR(lstr(&l), "(4,2):(1,4)");
  lctx_free(&t);
}

TEST(test_json) {
  lctx t;
  lctx_init(&t);
  ag_layout l = L(&t, "((2,4),3):((1,8),2)");
  json_t *j = ag_layout_to_json(&l);
  CHECK(j != NULL);
  char *s = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
  CHECK_EQ_STR(s, "{\"cosize\":30,\"depth\":2,\"rank\":2,\"shape\":[[2,4],3],\"size\":24,"
                  "\"stride\":[[1,8],2],\"text\":\"((2,4),3):((1,8),2)\"}");
  free(s);
  json_decref(j);
  lctx_free(&t);
}

/* ------------------------------------------------------- undefined messages */

TEST(test_undefined_messages) {
  lctx t;
  lctx_init(&t);
  ag_layout r;
  struct {
    const char *a, *b, *msg;
  } comp[] = {
      {"(6,2):(1,7)", "4:4", "stride divisibility fails: mode 0 of B (4:4) steps by 4 through mode 0 of A, whose shape 6 is not a multiple of 4"},
      {"(4,3):(1,10)", "(8,2):(6,1)", "mode 0 of B (8:6) steps by 6 over mode 0 of A, and 6 is not a multiple of its shape 4"},
      {"(4,3):(1,10)", "(3,2):(2,1)", "shape divisibility fails: mode 0 of B (3:2) still needs 3 elements"},
      {"(4,3):(1,10)", "(2,2):(1,3)", "modes 0 and 1 of B overlap in mode 0 of A (shape 4)"},
      {"8:1", "(2,(2,3)):(1,(-2,4))", "mode 1.0 of B (2:-2) has a negative stride"},
  };
  for (size_t i = 0; i < sizeof comp / sizeof comp[0]; i++) {
    ag_layout a = L(&t, comp[i].a), b = L(&t, comp[i].b);
    CHECK_EQ_INT(ag_layout_compose(&t.c, &a, &b, &r), AG_EUNDEFINED);
    CHECK_CONTAINS(ag_str_cstr(&t.c.err), comp[i].msg);
  }
  ag_layout a = L(&t, "(4,3):(1,10)");
  ag_tiler tl = TL(&t, "<2:1,3:1,4:1>");
  CHECK_EQ_INT(ag_layout_compose_tiler(&t.c, &a, &tl, &r), AG_EUNDEFINED);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "the tiler has 3 modes but the layout has rank 2");
  ag_layout l = L(&t, "(2,2):(2,3)");
  CHECK_EQ_INT(ag_layout_complement(&t.c, &l, 24, &r), AG_EUNDEFINED);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "mode 1 (stride 3) overlaps mode 0 (2:2)");
  l = L(&t, "(2,2):(1,3)");
  CHECK_EQ_INT(ag_layout_complement(&t.c, &l, 24, &r), AG_EUNDEFINED);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "stride 3 of mode 1 is not a multiple of 2");
  l = L(&t, "(4,2):(-1,4)");
  CHECK_EQ_INT(ag_layout_complement(&t.c, &l, 24, &r), AG_EUNDEFINED);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "negative stride");
  l = L(&t, "(2,2):(2,3)");
  CHECK_EQ_INT(ag_layout_left_inverse(&t.c, &l, &r), AG_EUNDEFINED);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "stride 3 of mode 1 is not a multiple of stride 2 of mode 0");
  l = L(&t, "(4,2):(1,2)");
  CHECK_EQ_INT(ag_layout_left_inverse(&t.c, &l, &r), AG_EUNDEFINED);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "not injective");
  /* a divide whose tiler does not fit */
  a = L(&t, "(6,2):(1,7)");
  tl = TL(&t, "4:1");
  CHECK_EQ_INT(ag_layout_logical_divide(&t.c, &a, &tl, &r), AG_EUNDEFINED);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "logical_divide: ");
  /* CuTe's algorithm is used when it is right though the exact rules balk */
  a = L(&t, "(8,4):(0,1)");
  ag_layout b = L(&t, "4:5");
  CHECK_EQ_INT(ag_layout_compose(&t.c, &a, &b, &r), 0);
  CHECK_EQ_STR(lstr(&r), "(2,2):(0,1)");
  b = L(&t, "8:5");
  CHECK_EQ_INT(ag_layout_compose(&t.c, &a, &b, &r), AG_EUNDEFINED);
  CHECK_CONTAINS(ag_str_cstr(&t.c.err), "CuTe's algorithm would return (2,4):(0,1), which is wrong at index 5 (2 instead of 3)");
  /* negative strides in A are fine */
  a = L(&t, "4:-1");
  b = L(&t, "2:2");
  CHECK_EQ_INT(ag_layout_compose(&t.c, &a, &b, &r), 0);
  CHECK_EQ_STR(lstr(&r), "2:-2");
  lctx_free(&t);
}

/* -------------------------------------------------------------- parse errors */

static void parse_error(const char *text, int col, const char *msg) {
  lctx t;
  lctx_init(&t);
  t.c.src_name = "L";
  ag_layout l;
  int rc = ag_layout_parse(&t.c, text, &t.d, &l);
  CHECK_EQ_INT(rc, AG_EPARSE);
  CHECK_EQ_INT(t.d.items.n, 1);
  if (t.d.items.n == 1) {
    CHECK_EQ_INT(t.d.items.v[0].col, col);
    CHECK_CONTAINS(t.d.items.v[0].msg, msg);
    if (t.d.items.v[0].col != col || !strstr(t.d.items.v[0].msg, msg))
      fprintf(stderr, "  input '%s': col %d: %s\n", text, t.d.items.v[0].col, t.d.items.v[0].msg);
  }
  CHECK(l.shape == NULL);
  lctx_free(&t);
}

TEST(test_parse_errors) {
  parse_error("(4,2:(2,1)", 5, "expected ',' or ')', found ':'");
  parse_error("((4,2):(2,1)", 7, "expected ',' or ')', found ':'");
  parse_error("((4,2),(2,1)", 1, "unbalanced '(': no ')' closes it");
  parse_error("(4,2)):(2,1)", 6, "unexpected ')' after the layout");
  parse_error(")", 1, "unbalanced ')'");
  parse_error("(4,2):(2,(1,3))", 10, "the stride has a tuple where the shape has the integer 2");
  parse_error("((4,2),3):(2,1)", 12, "the stride has an integer where the shape has the tuple (4,2)");
  parse_error("(4,2):(2)", 9, "the stride has 1 modes here but the shape has 2");
  parse_error("(4,2):(2,1,3)", 11, "the stride has more modes here than the shape's 2");
  parse_error("(4,2):", 7, "expected '(' to match the shape's (4,2), found the end of the input");
  parse_error("4:", 3, "the stride ends where the shape has the integer 4");
  parse_error("(4,0):(1,2)", 4, "extent 0 in a shape must be positive");
  parse_error("(4,-2):(1,2)", 4, "extent -2 in a shape must be positive");
  parse_error("abc", 1, "expected an integer or '(', found 'a'");
  parse_error("", 1, "found the end of the input");
  parse_error("  ", 3, "found the end of the input");
  parse_error("()", 2, "empty tuple");
  parse_error("99999999999999999999", 1, "does not fit in 64 bits");
  parse_error("(4,2):(1,2) x", 13, "unexpected 'x' after the layout");
  parse_error("(4,\x80", 4, "byte 0x80");
  parse_error("(4294967296,4294967296):(1,1)", 1, "does not fit in 64 bits");
  parse_error("(4,2):(1,-)", 11, "expected an integer, found ')'");
  char deep[200];
  memset(deep, '(', 70);
  strcpy(deep + 70, "1");
  parse_error(deep, 65, "nested deeper than 64 levels");
}

TEST(test_parse_tiler_and_tuple) {
  lctx t;
  lctx_init(&t);
  ag_tiler tl;
  CHECK_EQ_INT(ag_tiler_parse(&t.c, " < 3:4 , (2,4):(1,8) > ", &t.d, &tl), 0);
  CHECK_EQ_INT(tl.is_layout, 0);
  CHECK_EQ_INT(tl.n, 2);
  ag_str s = AG_STR_INIT;
  ag_tiler_print(&tl, &s);
  CHECK_EQ_STR(ag_str_cstr(&s), "<3:4,(2,4):(1,8)>");
  ag_str_release(&s);
  CHECK_EQ_INT(ag_tiler_parse(&t.c, "(2,4):(1,8)", &t.d, &tl), 0);
  CHECK_EQ_INT(tl.is_layout, 1);
  struct {
    const char *text;
    int col;
    const char *msg;
  } bad[] = {
      {"<3:4,8:2", 1, "unbalanced '<'"},
      {"<>", 2, "empty tiler"},
      {"<3:4;8:2>", 5, "expected ',' or '>', found ';'"},
      {"<3:4,8:2>x", 10, "unexpected 'x' after the tiler"},
      {"<3:4,(8,0)>", 9, "extent 0"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ag_diags_release(&t.d);
    ag_diags_init(&t.d);
    CHECK_EQ_INT(ag_tiler_parse(&t.c, bad[i].text, &t.d, &tl), AG_EPARSE);
    CHECK(t.d.items.n == 1 && t.d.items.v[0].col == bad[i].col);
    CHECK_CONTAINS(ag_str_cstr(&t.c.err), bad[i].msg);
  }
  ag_tuple *x;
  CHECK_EQ_INT(ag_tuple_parse(&t.c, "(0,(-3,7))", NULL, &x), 0); /* any integers */
  CHECK_EQ_INT(ag_tuple_parse(&t.c, "(0,", NULL, &x), AG_EPARSE);
  lctx_free(&t);
}

TEST(test_diag_caret) {
  lctx t;
  lctx_init(&t);
  t.c.src_name = "A";
  ag_layout l;
  CHECK_EQ_INT(ag_layout_parse(&t.c, "(4,2:(2,1)", &t.d, &l), AG_EPARSE);
  ag_str out = AG_STR_INIT;
  ag_diags_format(&t.d, &out);
  CHECK_EQ_STR(ag_str_cstr(&out), "A:1:5: error: expected ',' or ')', found ':'\n"
                                  "    (4,2:(2,1)\n"
                                  "        ^\n");
  ag_str_release(&out);
  lctx_free(&t);
}

TEST(test_print_round_trip) {
  lctx t;
  lctx_init(&t);
  const char *texts[] = {"8:1", "(4):(2)", "((2,4),(3,5)):((3,6),(1,24))", "(4,3):(-1,0)",
                         "(((2))):(((5)))"};
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
    ag_layout l = L(&t, texts[i]);
    CHECK_EQ_STR(lstr(&l), texts[i]);
  }
  lctx_free(&t);
}

/* -------------------------------------------------------- out of memory */

/* Parses and runs a few operations; returns 0, or the first error. The
 * printed results go to out. */
static int workload(ag_str *out) {
  ag_arena arena;
  ag_arena_init(&arena, 64); /* small chunks: many allocation points */
  ag_layout_ctx c;
  ag_layout_ctx_init(&c, &arena);
  ag_diags d;
  ag_diags_init(&d);
  ag_layout a, b, r;
  ag_tiler tl;
  int rc;
  if ((rc = ag_layout_parse(&c, "((2,4),(3,5)):((3,6),(1,24))", &d, &a)) ||
      (rc = ag_layout_parse(&c, "(2,(2,2)):(1,(2,4))", &d, &b)) ||
      (rc = ag_tiler_parse(&c, "<2:3,(3,5):(1,3)>", &d, &tl)))
    goto out;
  if ((rc = ag_layout_compose(&c, &a, &b, &r)) || (rc = ag_layout_print(&r, out)))
    goto out;
  if ((rc = ag_layout_logical_divide(&c, &a, &tl, &r)) || (rc = ag_layout_print(&r, out)))
    goto out;
  if ((rc = ag_layout_zipped_divide(&c, &a, &tl, &r)) || (rc = ag_layout_print(&r, out)))
    goto out;
  if ((rc = ag_layout_complement(&c, &b, 96, &r)) || (rc = ag_layout_print(&r, out)))
    goto out;
  if ((rc = ag_layout_blocked_product(&c, &b, &b, &r)) || (rc = ag_layout_print(&r, out)))
    goto out;
  if ((rc = ag_layout_left_inverse(&c, &b, &r)) || (rc = ag_layout_print(&r, out)))
    goto out;
  if ((rc = ag_layout_coalesce(&c, &a, &r)) || (rc = ag_layout_print(&r, out)))
    goto out;
  const ag_expr *off;
  if ((rc = ag_layout_eval_index_x(&c, &a, ag_expr_sym(&c, "tid"), &off)) ||
      (rc = ag_expr_print(off, out)))
    goto out;
  /* an undefined operation under memory pressure still reports cleanly */
  ag_layout u1, u2;
  if ((rc = ag_layout_parse(&c, "(8,4):(0,1)", &d, &u1)) ||
      (rc = ag_layout_parse(&c, "8:5", &d, &u2)))
    goto out;
  rc = ag_layout_compose(&c, &u1, &u2, &r);
  if (rc == AG_EUNDEFINED)
    rc = ag_str_puts(out, "undefined");
out:
  ag_diags_release(&d);
  ag_layout_ctx_release(&c);
  ag_arena_release(&arena);
  return rc;
}

TEST(test_oom_loop) {
  ag_str ref = AG_STR_INIT;
  CHECK_EQ_INT(workload(&ref), 0);
  int ok = 0, n;
  for (n = 1; n < 20000 && !ok; n++) {
    ag_str out = AG_STR_INIT;
    ag_alloc_fail_at(n);
    int rc = workload(&out);
    ag_alloc_fail_at(0);
    if (rc == 0) {
      ok = 1;
      CHECK_EQ_STR(ag_str_cstr(&out), ag_str_cstr(&ref));
    } else if (rc != AG_ENOMEM) {
      fprintf(stderr, "allocation %d: %s\n", n, ag_err_name(rc));
      CHECK_EQ_INT(rc, AG_ENOMEM);
    }
    ag_str_release(&out);
  }
  printf("oom loop: the workload succeeded once allocation %d was allowed to fail\n", n - 1);
  CHECK(ok);
  CHECK(n > 50); /* the loop did exercise failures */
  ag_str_release(&ref);
}

/* ---------------------------------------------------------------- fuzzing */

/* Random strings over the notation's alphabet with stray bytes, and
 * valid layouts with a few bytes mutated; a few hundred thousand inputs,
 * well under a second (a few seconds under ASan). */
TEST(test_fuzz_parsers) {
  static const char alphabet[] = "()<>,:-0123456789 ()(),,::1248";
  static const char *seeds[] = {"((2,4),(3,5)):((3,6),(1,24))", "<3:4,(2,4):(1,8)>",
                                "(12,(4,8)):(59,(13,1))", "((4,8),(2,2)):((32,1),(16,8))"};
  uint64_t st = 12345;
  int parsed = 0, iters = 300000;
  for (int it = 0; it < iters; it++) {
    char buf[72];
    st = st * 6364136223846793005ull + 1442695040888963407ull;
    if (it % 2) {
      int len = (int)((st >> 33) % 64);
      for (int i = 0; i < len; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        unsigned r = (unsigned)(st >> 33);
        buf[i] = (r % 16 == 0) ? (char)(1 + (r >> 8) % 255)
                               : alphabet[(r >> 8) % (sizeof alphabet - 1)];
      }
      buf[len] = 0;
    } else {
      const char *sd = seeds[(st >> 33) % 4];
      int len = (int)strlen(sd);
      memcpy(buf, sd, (size_t)len + 1);
      for (int k = 0; k < 3; k++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        unsigned r = (unsigned)(st >> 33);
        buf[r % len] = alphabet[(r >> 8) % (sizeof alphabet - 1)];
      }
    }
    lctx t;
    lctx_init(&t);
    ag_layout l;
    ag_tiler tl;
    ag_tuple *x;
    int rc = ag_layout_parse(&t.c, buf, &t.d, &l);
    CHECK(rc == 0 || rc == AG_EPARSE);
    if (rc == AG_EPARSE)
      CHECK(t.d.items.n == 1 && t.d.items.v[0].col >= 1 &&
            t.d.items.v[0].col <= (int)strlen(buf) + 1);
    if (rc == 0) {
      parsed++;
      /* round trip, and a few operations must not crash */
      ag_layout l2, r;
      CHECK_EQ_INT(ag_layout_parse(&t.c, lstr(&l), NULL, &l2), 0);
      CHECK(ag_layout_equal(&l, &l2));
      ag_layout_coalesce(&t.c, &l, &r);
      ag_layout_complement(&t.c, &l, 0, &r);
      ag_layout_compose(&t.c, &l, &l, &r);
      ag_layout_right_inverse(&t.c, &l, &r);
      ag_layout_left_inverse(&t.c, &l, &r);
    }
    rc = ag_tiler_parse(&t.c, buf, NULL, &tl);
    CHECK(rc == 0 || rc == AG_EPARSE);
    rc = ag_tuple_parse(&t.c, buf, NULL, &x);
    CHECK(rc == 0 || rc == AG_EPARSE);
    lctx_free(&t);
  }
  printf("fuzz: %d inputs, %d parsed as layouts\n", iters, parsed);
  CHECK(parsed > 1000);
}

RUN_TESTS(T(test_golden_coalesce), T(test_golden_composition), T(test_golden_complement),
          T(test_golden_divide_product), T(test_golden_inverses), T(test_swizzle_values),
          T(test_queries_and_eval), T(test_make_validates), T(test_json),
          T(test_undefined_messages), T(test_parse_errors), T(test_parse_tiler_and_tuple),
          T(test_diag_caret), T(test_print_round_trip), T(test_oom_loop), T(test_fuzz_parsers))
