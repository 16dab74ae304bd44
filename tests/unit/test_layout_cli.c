/*
 * test_layout_cli.c — `argus layout`, run as a process (ARGUS_BIN): every
 * subcommand's one-line result, --json, the drawings of `print`, malformed
 * input (exit 2, a diagnostic with column and caret), undefined operations
 * (exit 1, the message naming the modes) and usage errors.
 */
#include "argus/core.h"
#include "check.h"

#include <stdarg.h>
#include <stdlib.h>

static ag_str out, err;

static const char *bin(void) {
  const char *b = getenv("ARGUS_BIN");
  return b ? b : "argus";
}

/* Runs argus with the given arguments (NULL-terminated); returns the exit
 * code, stdout in out and stderr in err. */
static int run(const char *a0, ...) {
  const char *argv[32];
  int n = 0;
  argv[n++] = bin();
  va_list ap;
  va_start(ap, a0);
  for (const char *a = a0; a && n < 31; a = va_arg(ap, const char *))
    argv[n++] = a;
  va_end(ap);
  argv[n] = NULL;
  ag_str_clear(&out);
  ag_str_clear(&err);
  ag_proc_opts o = {.argv = argv, .capture_out = &out, .capture_err = &err, .timeout_s = 30};
  ag_proc_result r;
  if (ag_proc_run(&o, &r) || !r.exited)
    return -1;
  return r.exit_code;
}

#define OK_LINE(expect, ...)                                                   \
  do {                                                                         \
    CHECK_EQ_INT(run(__VA_ARGS__, NULL), 0);                                   \
    CHECK_EQ_STR(ag_str_cstr(&out), expect "\n");                              \
  } while (0)

TEST(test_subcommands) {
  OK_LINE("10", "layout", "eval", "(6,2):(8,2)", "7");
  OK_LINE("10", "layout", "eval", "(6,2):(8,2)", "(1,1)");
  OK_LINE("77", "layout", "eval", "((2,4),(3,5)):((3,6),(1,24))", "(1,(2,3))");
  OK_LINE("216", "layout", "eval", "1024:1", "200", "--swizzle", "3,4,3");
  OK_LINE("12:1", "layout", "coalesce", "(2,(1,6)):(1,(6,2))");
  OK_LINE("(2,6):(1,2)", "layout", "coalesce", "--by-mode", "(2,(1,6)):(1,(6,2))");
  OK_LINE("((2,2),3):((24,2),8)", "layout", "compose", "(6,2):(8,2)", "(4,3):(3,1)");
  OK_LINE("(3,(2,4)):(236,(26,1))", "layout", "compose", "(12,(4,8)):(59,(13,1))", "<3:4,8:2>");
  OK_LINE("(3,2):(2,12)", "layout", "complement", "(2,2):(1,6)", "24");
  OK_LINE("2:1", "layout", "complement", "(4,2):(2,0)");
  OK_LINE("(2,4):(4,1)", "layout", "right_inverse", "(4,2):(2,1)");
  OK_LINE("(2,4):(4,1)", "layout", "left_inverse", "4:2");
  OK_LINE("((2,2),(2,3)):((4,1),(2,8))", "layout", "logical_divide", "(4,2,3):(2,1,8)", "4:2");
  OK_LINE("((3,(2,4)),(3,(2,2))):((177,(13,2)),(59,(26,1)))", "layout", "zipped_divide",
          "(9,(4,8)):(59,(13,1))", "<3:3,(2,4):(1,8)>");
  OK_LINE("((3,(2,4)),3,(2,2)):((177,(13,2)),59,(26,1))", "layout", "tiled_divide",
          "(9,(4,8)):(59,(13,1))", "<3:3,(2,4):(1,8)>");
  OK_LINE("((2,2),(2,3)):((4,1),(2,8))", "layout", "logical_product", "(2,2):(4,1)", "6");
  OK_LINE("((2,3),(5,4)):((5,10),(1,30))", "layout", "blocked_product", "(2,5):(5,1)", "(3,4):(1,3)");
  OK_LINE("((3,2),(4,5)):((10,5),(30,1))", "layout", "raked_product", "(2,5):(5,1)", "(3,4):(1,3)");
  OK_LINE("216", "layout", "swizzle", "3", "4", "3", "200");
  OK_LINE("((4,8),(2,2)):((32,1),(16,8))", "layout", "coalesce", "--by-mode", "@mma.m16n8k16.c");
}

TEST(test_json_output) {
  CHECK_EQ_INT(run("--json", "layout", "compose", "(6,2):(8,2)", "(4,3):(3,1)", NULL), 0);
  json_t *j = json_loads(ag_str_cstr(&out), 0, NULL);
  CHECK(j != NULL);
  json_t *r = json_object_get(j, "result");
  CHECK_EQ_STR(json_string_value(json_object_get(j, "op")), "compose");
  CHECK_EQ_STR(json_string_value(json_object_get(r, "text")), "((2,2),3):((24,2),8)");
  CHECK_EQ_INT(json_integer_value(json_object_get(r, "size")), 12);
  CHECK_EQ_INT(json_array_size(json_object_get(r, "shape")), 2);
  json_decref(j);
  CHECK_EQ_INT(run("layout", "eval", "(6,2):(8,2)", "7", "--json", NULL), 0);
  j = json_loads(ag_str_cstr(&out), 0, NULL);
  CHECK_EQ_INT(json_integer_value(json_object_get(j, "offset")), 10);
  CHECK_EQ_STR(json_string_value(json_object_get(j, "coordinate")), "(1,1)");
  json_decref(j);
  CHECK_EQ_INT(run("layout", "swizzle", "3", "4", "3", "200", "--json", NULL), 0);
  j = json_loads(ag_str_cstr(&out), 0, NULL);
  CHECK_EQ_INT(json_integer_value(json_object_get(j, "offset")), 216);
  json_decref(j);
  CHECK_EQ_INT(run("layout", "print", "(2,3):(3,1)", "--json", NULL), 0);
  j = json_loads(ag_str_cstr(&out), 0, NULL);
  json_t *cells = json_object_get(j, "cells");
  CHECK_EQ_INT(json_array_size(cells), 2);
  CHECK_EQ_INT(json_integer_value(json_array_get(json_array_get(cells, 1), 2)), 5);
  json_decref(j);
  CHECK_EQ_INT(run("layout", "print", "@mma.m16n8k16.c", "--tv", "--json", NULL), 0);
  j = json_loads(ag_str_cstr(&out), 0, NULL);
  json_t *c = json_array_get(json_array_get(json_object_get(j, "cells"), 8), 1);
  CHECK_EQ_INT(json_integer_value(json_object_get(c, "t")), 0); /* c3: row 8, col 1 */
  CHECK_EQ_INT(json_integer_value(json_object_get(c, "v")), 3);
  json_decref(j);
}

TEST(test_print_drawings) {
  CHECK_EQ_INT(run("layout", "print", "(2,3):(3,1)", NULL), 0);
  CHECK_EQ_STR(ag_str_cstr(&out), "(2,3):(3,1)\n"
                                  "     0   1   2\n"
                                  "   +---+---+---+\n"
                                  " 0 | 0 | 1 | 2 |\n"
                                  " 1 | 3 | 4 | 5 |\n"
                                  "   +---+---+---+\n");
  CHECK_EQ_INT(run("layout", "print", "(2,2):(1,2)", "--tv", "--tile", "2,2", NULL), 0);
  CHECK_EQ_STR(ag_str_cstr(&out), "(2,2):(1,2) on a 2x2 tile (offset = row + 2*col): cell = TthreadVvalue\n"
                                  "        0      1\n"
                                  "   +------+------+\n"
                                  " 0 | T0V0 | T0V1 |\n"
                                  " 1 | T1V0 | T1V1 |\n"
                                  "   +------+------+\n");
  /* replicated and unheld elements are marked */
  CHECK_EQ_INT(run("layout", "print", "(2,2):(0,1)", "--tv", "--tile", "3,1", NULL), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "| T0V0* |");
  CHECK_CONTAINS(ag_str_cstr(&out), "|     . |");
  CHECK_CONTAINS(ag_str_cstr(&out), "* held by more than one");
  CHECK_CONTAINS(ag_str_cstr(&out), ". held by no (thread, value): 1 of 3");
  CHECK_EQ_INT(run("layout", "print", "@wgmma.m64n16k16.d", "--tv", NULL), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "wgmma.m64n16k16.d = ((4,8,4),(2,2,2)):((128,1,16),(64,8,512)) on a 64x16 tile");
  CHECK_CONTAINS(ag_str_cstr(&out), " 63 | T124V2 | T124V3 | T125V2 |");
  OK_LINE("Swizzle<3,3,3> o ((8,8),(64,1)):((64,512),(1,4096))", "layout", "gmma", "K", "128",
          "64", "64");
  OK_LINE("Swizzle<0,3,3> o ((8,2),(8,2)):((1,128),(8,64))", "layout", "gmma", "MN", "none",
          "16", "16");
  CHECK_EQ_INT(run("layout", "gmma", "K", "64", "64", "32", "--json", NULL), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "\"b\": 2,\n    \"m\": 3,\n    \"s\": 3\n");
  CHECK_CONTAINS(ag_str_cstr(&out), "\"text\": \"((8,8),(32,1)):((32,256),(1,2048))\"");
  CHECK_CONTAINS(ag_str_cstr(&out), "\"swizzle_bytes\": 64");
  CHECK_EQ_INT(run("layout", "gmma", "K", "128", "64", "32", NULL), 1);
  CHECK_CONTAINS(ag_str_cstr(&err), "K-major tile cols (K) is 32: with 128B swizzle");
  CHECK_EQ_INT(run("layout", "gmma", "K", "48", "64", "64", NULL), 1);
  CHECK_CONTAINS(ag_str_cstr(&err), "swizzle 48 is no swizzle mode");
  CHECK_EQ_INT(run("layout", "gmma", "T", "128", "64", "64", NULL), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "MAJOR is 'T': K or MN");
  CHECK_EQ_INT(run("layout", "gmma", "K", "128", "0", "64", NULL), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "ROWS:1:1: error: 0 is out of range");
  CHECK_EQ_INT(run("layout", "gmma", "K", "128B", "64", "64", NULL), 2);
  CHECK_EQ_INT(run("layout", "gmma", "K", "128", "64", "x", NULL), 2);
  CHECK_EQ_INT(run("layout", "print", "(8,8):(1,8)", "--swizzle", "1,1,1", NULL), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "Swizzle<1,1,1> o (8,8):(1,8)");
  CHECK_CONTAINS(ag_str_cstr(&out), " 4 |  6 |");
}

static void malformed(const char *where, const char *caret, const char *a0, ...) {
  const char *argv[8];
  int n = 0;
  va_list ap;
  va_start(ap, a0);
  for (const char *a = a0; a && n < 7; a = va_arg(ap, const char *))
    argv[n++] = a;
  va_end(ap);
  while (n < 7)
    argv[n++] = NULL;
  CHECK_EQ_INT(run(argv[0], argv[1], argv[2], argv[3], argv[4], argv[5], argv[6], NULL), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), where);
  CHECK_CONTAINS(ag_str_cstr(&err), caret);
  CHECK_EQ_STR(ag_str_cstr(&out), "");
}

TEST(test_malformed_input) {
  malformed("A:1:5: error: expected ',' or ')', found ':'", "    (4,2:(2,1)\n        ^\n",
            "layout", "compose", "(4,2:(2,1)", "4:1", NULL);
  malformed("L:1:1: error: unbalanced '('", "    ((4,2),(2,1)\n    ^\n", "layout", "coalesce",
            "((4,2),(2,1)", NULL);
  malformed("L:1:10: error: the stride has a tuple where the shape has the integer 2", "^",
            "layout", "coalesce", "(4,2):(2,(1,3))", NULL);
  malformed("L:1:4: error: extent 0 in a shape must be positive", "       ^", "layout", "eval",
            "(4,0):(1,2)", "1", NULL);
  malformed("L:1:4: error: extent -3 in a shape", "^", "layout", "print", "(4,-3):(1,2)", NULL);
  malformed("B:1:1: error: expected an integer or '(', found 'g'", "^", "layout", "compose",
            "4:1", "garbage", NULL);
  malformed("B:1:1: error: unbalanced '<'", "^", "layout", "logical_divide", "8:1", "<2:1,2:2",
            NULL);
  malformed("X:1:3: error: expected ',' or ')'", "^", "layout", "eval", "8:1", "(1;2)", NULL);
  malformed("S:1:1: error: expected an integer or '('", "^", "layout", "swizzle", "3", "4", "x",
            "5", NULL);
  malformed("COTARGET:1:1: error: 0 is out of range", "^", "layout", "complement", "4:1", "0", NULL);
  CHECK_EQ_INT(run("layout", "swizzle", "3", "4", "2", "5", NULL), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "|S| must be at least B");
  CHECK_EQ_INT(run("layout", "print", "@nope", NULL), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "unknown atom 'nope'");
}

TEST(test_undefined_operations) {
  CHECK_EQ_INT(run("layout", "compose", "(6,2):(1,7)", "4:4", NULL), 1);
  CHECK_CONTAINS(ag_str_cstr(&err), "argus layout: compose: stride divisibility fails: mode 0 of B (4:4)");
  CHECK_EQ_STR(ag_str_cstr(&out), "");
  CHECK_EQ_INT(run("layout", "complement", "(2,2):(2,3)", NULL), 1);
  CHECK_CONTAINS(ag_str_cstr(&err), "overlaps mode 0");
  CHECK_EQ_INT(run("layout", "left_inverse", "(2,2):(2,3)", NULL), 1);
  CHECK_CONTAINS(ag_str_cstr(&err), "not a multiple");
  CHECK_EQ_INT(run("layout", "compose", "(4,3):(1,10)", "<2:1,3:1,4:1>", NULL), 1);
  CHECK_CONTAINS(ag_str_cstr(&err), "the tiler has 3 modes but the layout has rank 2");
  CHECK_EQ_INT(run("layout", "eval", "(4,2):(1,4)", "8", NULL), 1);
  CHECK_CONTAINS(ag_str_cstr(&err), "index 8 is outside the domain [0,8)");
  CHECK_EQ_INT(run("layout", "eval", "(4,2):(1,4)", "(4,0)", NULL), 1);
  CHECK_CONTAINS(ag_str_cstr(&err), "coordinate 4 is outside mode 0");
  CHECK_EQ_INT(run("layout", "print", "(2,2,2):(1,2,4)", NULL), 1);
  CHECK_CONTAINS(ag_str_cstr(&err), "rank 3");
  CHECK_EQ_INT(run("layout", "print", "(2,2):(1,2)", "--tv", "--tile", "9223372036854775807,4", NULL), 1);
  CHECK_CONTAINS(ag_str_cstr(&err), "too large to draw");
  CHECK_EQ_INT(run("layout", "print", "(4,2):(1,4)", "--tv", "--tile", "2,2", NULL), 1);
  CHECK_CONTAINS(ag_str_cstr(&err), "thread 0 value 1 maps to offset 4, outside the 2x2 tile");
}

TEST(test_usage_errors) {
  CHECK_EQ_INT(run("layout", NULL), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "missing subcommand");
  CHECK_EQ_INT(run("layout", "frobnicate", "4:1", NULL), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "unknown subcommand 'frobnicate'");
  CHECK_EQ_INT(run("layout", "compose", "4:1", NULL), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "usage: argus layout compose A B (got 1 argument)");
  CHECK_EQ_INT(run("layout", "print", "(2,2):(1,2)", "--tv", NULL), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "--tv needs --tile M,N");
  CHECK_EQ_INT(run("layout", "print", "(2,2):(1,2)", "--tv", "--tile", "2x", NULL), 2);
  CHECK_EQ_INT(run("layout", "print", "(2,2):(1,2)", "--swizzle", "1,2", NULL), 2);
  CHECK_EQ_INT(run("layout", "--help", NULL), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "usage: argus layout SUBCOMMAND ARG...");
  CHECK_CONTAINS(ag_str_cstr(&out), "raked_product A B");
  CHECK_CONTAINS(ag_str_cstr(&out), "--swizzle B,M,S");
}

static void cleanup(void) {
  ag_str_release(&out);
  ag_str_release(&err);
}

TEST(test_zz_cleanup) { cleanup(); }

RUN_TESTS(T(test_subcommands), T(test_json_output), T(test_print_drawings),
          T(test_malformed_input), T(test_undefined_operations), T(test_usage_errors),
          T(test_zz_cleanup))
