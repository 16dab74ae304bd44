/*
 * test_tile_front.c — the tile DSL front end: parsing the examples, the
 * print/parse round trip, one diagnostic test per kind of malformed input
 * (line, column, caret), a bounded random-mutation fuzz run (no crash, no
 * hang, diagnostics for every rejected input) and an out-of-memory loop.
 */
#include "argus/tile.h"
#include "check.h"
#include "tile_util.h"

#include <time.h>

static char *read_example(const char *name, size_t *len) {
  char rel[256];
  snprintf(rel, sizeof rel, "examples/tile/%s", name);
  return tu_read(rel, len);
}

static const char *examples[] = {"gemm.tile", "attention.tile"};

/* Parses text; returns the canonical print (owned) or NULL with *d filled. */
static char *roundtrip(const char *text, size_t len, ag_diags *d, int *rc) {
  ag_tile_program *p = NULL;
  *rc = ag_tile_parse(text, len, "t.tile", d, &p);
  if (*rc)
    return NULL;
  ag_str s = AG_STR_INIT;
  ag_tile_print_program(p, &s);
  ag_tile_program_free(p);
  return ag_str_detach(&s);
}

TEST(test_examples_roundtrip) {
  for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++) {
    size_t len;
    char *src = read_example(examples[i], &len);
    CHECK(src != NULL);
    if (!src)
      continue;
    ag_diags d;
    ag_diags_init(&d);
    int rc;
    char *once = roundtrip(src, len, &d, &rc);
    CHECK_EQ_INT(rc, 0);
    CHECK(once != NULL);
    char *twice = once ? roundtrip(once, strlen(once), &d, &rc) : NULL;
    CHECK_EQ_INT(rc, 0);
    if (once && twice)
      CHECK_EQ_STR(once, twice);
    CHECK_EQ_INT(d.nerrors, 0);
    ag_free(once);
    ag_free(twice);
    ag_free(src);
    ag_diags_release(&d);
  }
}

TEST(test_ast_shape) {
  const char *text = "@threads(64)\n"
                     "def k(A: Tensor(M, 8, bf16), n: const = 4):\n"
                     "    x, y = 1 + 2 * 3, -4\n"
                     "    T = A[i, j] -> (i % 8, j)\n"
                     "    for i in range(n):\n"
                     "        if 0 <= i < 3:\n"
                     "            pass\n"
                     "        elif i == 3:\n"
                     "            x += 1\n"
                     "        else:\n"
                     "            assert tag(A[i, 0]) != top, \"msg\"\n";
  ag_diags d;
  ag_diags_init(&d);
  ag_tile_program *p = NULL;
  CHECK_EQ_INT(ag_tile_parse(text, strlen(text), "k.tile", &d, &p), 0);
  if (!p)
    return;
  CHECK_EQ_INT(p->top.n, 1);
  const ag_tile_node *k = p->top.v[0];
  CHECK_EQ_INT(k->kind, AG_TN_KERNEL);
  CHECK_EQ_STR(k->name, "k");
  CHECK(k->a && k->a->list.n == 1 && k->a->list.v[0]->kind == AG_TN_CALL);
  CHECK_EQ_INT(k->list.n, 2);
  CHECK_EQ_INT(k->list2.n, 3);
  const ag_tile_node *as = k->list2.v[0];
  CHECK_EQ_INT(as->kind, AG_TN_ASSIGN);
  CHECK_EQ_INT(as->list.n, 2);
  /* precedence: 1 + (2 * 3) */
  CHECK_EQ_INT(as->list2.v[0]->op, AG_OP_ADD);
  CHECK_EQ_INT(as->list2.v[0]->b->op, AG_OP_MUL);
  CHECK_EQ_INT(k->list2.v[1]->list2.v[0]->kind, AG_TN_ARROW);
  const ag_tile_node *f = k->list2.v[2];
  CHECK_EQ_INT(f->kind, AG_TN_FOR);
  const ag_tile_node *iff = f->list.v[0];
  CHECK_EQ_INT(iff->kind, AG_TN_IF);
  CHECK_EQ_INT(iff->a->kind, AG_TN_LAND); /* chained comparison */
  CHECK_EQ_INT(iff->list2.n, 1);
  CHECK_EQ_INT(iff->list2.v[0]->kind, AG_TN_IF); /* elif */
  const ag_tile_node *el = iff->list2.v[0]->list2.v[0];
  CHECK_EQ_INT(el->kind, AG_TN_ASSERT);
  CHECK(el->b && el->b->kind == AG_TN_STR);
  CHECK_EQ_INT(el->line, 11);
  CHECK_EQ_INT(el->col, 13);
  ag_tile_program_free(p);
  ag_diags_release(&d);
}

/* Each malformed input: the first diagnostic's line, column and message
 * (dc_case: diag_case.h). */
static const dc_case bads[] = {
    {"def k():\n\tx = 1\n", 2, 1, "tab in indentation"},
    {"def k():\n    x = 1\n  y = 2\n", 3, 3, "does not match the start column"},
    {"def k():\n    x = (1 +\n", 2, 9, "'(' is never closed"},
    {"def k():\n    x = 1 $ 2\n", 2, 11, "unexpected character '$'"},
    {"def k():\n    x = 1 +\n", 2, 12, "expected an expression"},
    {"def k()\n    x = 1\n", 1, 8, "expected ':' after the kernel signature"},
    {"def k():\n    for i in range(3):\n    x = 1\n", 3, 5, "expected an indented block"},
    {"def k():\n    def j():\n        pass\n", 2, 5, "must be at the top level"},
    {"def k():\n    else:\n        pass\n", 2, 5, "'else' without a matching 'if'"},
    {"def k():\n    a = b = 1\n", 2, 11, "chained assignment"},
    {"def k():\n    f(x) = 1\n", 2, 5, "cannot assign to this expression"},
    {"def k():\n    x = 99999999999999999999\n", 2, 9, "does not fit in 63 bits"},
    {"def k():\n    x = \"abc\n", 2, 9, "string is not closed"},
    {"    x = 1\n", 1, 5, "unexpected indent"},
    {"def k():\n    x = 1 ! 2\n", 2, 11, "use 'not' for negation"},
    {"@threads\ndef k():\n    pass\n", 1, 9, "expected a decorator call"},
    {"def k():\n    x = 0x\n", 2, 9, "has no digits"},
    {"def k():\n    x = 12abc\n", 2, 9, "malformed number"},
    {"def k():\n    x = 1, 2 = 3\n", 2, 14, "chained assignment"},
    {"def k(a):\n    pass\n", 1, 8, "expected ':' after the parameter name"},
    {"def k():\n    assert x, 3\n", 2, 15, "expected a message string"},
    {"def k():\n    x = f(a=1, 2)\n", 2, 16, "positional argument after a keyword"},
    {"def k():\n    x = a[]\n", 2, 11, "expected an index"},
    {"def k():\n    x = \xc3\xa9\n", 2, 9, "non-ASCII byte"},
    {"def k():\n    x = 1\0\n", 2, 10, "NUL byte"},
    {"def k():\n    x -> 3\n", 2, 5, "not a statement"},
    {"def k():\n    x = 1 if y\n", 2, 15, "expected 'else'"},
};

TEST(test_diagnostics) {
  for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
    const dc_case *b = &bads[i];
    size_t len = strlen(b->text);
    if (strstr(b->msg, "NUL"))
      len = strlen(b->text) + 2; /* the text holds a NUL */
    ag_diags d;
    ag_diags_init(&d);
    ag_tile_program *p = NULL;
    int rc = ag_tile_parse(b->text, len, "bad.tile", &d, &p);
    CHECK_EQ_INT(rc, AG_EPARSE);
    CHECK(p == NULL);
    tu_expect_diag(&d, i, b->line, b->col, b->msg);
    ag_diags_release(&d);
  }
}

TEST(test_many_errors_recover) {
  /* several broken statements: each reported, parsing goes on */
  const char *text = "def k():\n    a = (\n    b = 1\n"; /* one error: bracket never closed */
  ag_diags d;
  ag_diags_init(&d);
  ag_tile_program *p = NULL;
  CHECK_EQ_INT(ag_tile_parse(text, strlen(text), NULL, &d, &p), AG_EPARSE);
  ag_diags_release(&d);
  const char *text2 = "def k():\n    a = 1 +\n    b = = 2\n    c = 3\n    d = )\n";
  ag_diags_init(&d);
  CHECK_EQ_INT(ag_tile_parse(text2, strlen(text2), NULL, &d, &p), AG_EPARSE);
  CHECK_EQ_INT(d.nerrors, 3);
  if (d.items.n == 3) {
    CHECK_EQ_INT(d.items.v[0].line, 2);
    CHECK_EQ_INT(d.items.v[1].line, 3);
    CHECK_EQ_INT(d.items.v[2].line, 5);
  }
  ag_diags_release(&d);
  /* a flood of errors stops at the cap */
  ag_str s = AG_STR_INIT;
  ag_str_puts(&s, "def k():\n");
  for (int i = 0; i < 100; i++)
    ag_str_puts(&s, "    x = = 1\n");
  ag_diags_init(&d);
  CHECK_EQ_INT(ag_tile_parse(s.p, s.len, NULL, &d, &p), AG_EPARSE);
  CHECK(d.items.n <= AG_TILE_MAX_ERRORS + 1);
  ag_str_release(&s);
  ag_diags_release(&d);
}

TEST(test_deep_nesting) {
  ag_str s = AG_STR_INIT;
  ag_str_puts(&s, "def k():\n    x = ");
  for (int i = 0; i < 5000; i++)
    ag_str_putc(&s, '(');
  ag_str_puts(&s, "1\n");
  ag_diags d;
  ag_diags_init(&d);
  ag_tile_program *p = NULL;
  CHECK_EQ_INT(ag_tile_parse(s.p, s.len, NULL, &d, &p), AG_EPARSE);
  CHECK(d.items.n >= 1);
  ag_str_release(&s);
  ag_diags_release(&d);
  /* deep blocks */
  ag_str b = AG_STR_INIT;
  ag_str_puts(&b, "def k():\n");
  for (int i = 1; i < 300; i++) {
    for (int j = 0; j < i; j++)
      ag_str_puts(&b, " ");
    ag_str_puts(&b, "if x:\n");
  }
  ag_diags_init(&d);
  CHECK_EQ_INT(ag_tile_parse(b.p, b.len, NULL, &d, &p), AG_EPARSE);
  ag_str_release(&b);
  ag_diags_release(&d);
}

/* xorshift: a fixed seed makes every run the same */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
  uint64_t x = rng_state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return rng_state = x;
}

static const char *tokens[] = {"(", ")", "[", "]", ":", ",", "=", "==", "->", "\n", "    ",
                               "\t", "if ", "else", "for ", "def ", "@", "#", "\"", "0x",
                               "1e999", "tag(", "assert ", "\\\n", "  "};

static void mutate(ag_str *s) {
  size_t n = s->len ? s->len : 1;
  size_t at = (size_t)(rnd() % n);
  switch (rnd() % 5) {
  case 0: /* flip a byte */
    if (s->len)
      s->p[at] = (char)(rnd() & 0xff);
    break;
  case 1: { /* delete a span */
    size_t k = 1 + rnd() % 8;
    if (at + k > s->len)
      k = s->len - at;
    memmove(s->p + at, s->p + at + k, s->len - at - k + 1);
    s->len -= k;
    break;
  }
  case 2: { /* insert a token */
    const char *t = tokens[rnd() % (sizeof tokens / sizeof tokens[0])];
    size_t tl = strlen(t);
    if (ag_str_reserve(s, tl))
      return;
    memmove(s->p + at + tl, s->p + at, s->len - at + 1);
    memcpy(s->p + at, t, tl);
    s->len += tl;
    break;
  }
  case 3: { /* duplicate a span elsewhere */
    size_t k = 1 + rnd() % 40;
    if (at + k > s->len)
      k = s->len - at;
    char tmp[64];
    memcpy(tmp, s->p + at, k);
    size_t to = (size_t)(rnd() % n);
    if (ag_str_reserve(s, k))
      return;
    memmove(s->p + to + k, s->p + to, s->len - to + 1);
    memcpy(s->p + to, tmp, k);
    s->len += k;
    break;
  }
  default: /* truncate */
    s->len = at;
    s->p[at] = 0;
    break;
  }
}

TEST(test_fuzz_mutations) {
  /* random mutations of the examples: the parser answers every input with
   * a tree or diagnostics, and accepted inputs round-trip; bounded in time */
  size_t lens[2];
  char *srcs[2];
  for (int i = 0; i < 2; i++)
    srcs[i] = read_example(examples[i], &lens[i]);
  CHECK(srcs[0] && srcs[1]);
  if (!srcs[0] || !srcs[1])
    return;
  uint64_t t0 = ag_now_ns();
  int runs = 0, accepted = 0, rejected = 0;
  while (runs < 20000 && ag_now_ns() - t0 < 8ull * 1000000000ull) {
    int which = (int)(rnd() % 2);
    ag_str s = AG_STR_INIT;
    ag_str_append(&s, srcs[which], lens[which]);
    int nm = 1 + (int)(rnd() % 6);
    for (int m = 0; m < nm; m++)
      mutate(&s);
    ag_diags d;
    ag_diags_init(&d);
    int rc;
    char *once = roundtrip(s.p ? s.p : "", s.len, &d, &rc);
    CHECK(rc == 0 || rc == AG_EPARSE);
    if (rc == 0) {
      accepted++;
      ag_diags dd;
      ag_diags_init(&dd);
      int rc2;
      char *twice = roundtrip(once, strlen(once), &dd, &rc2);
      CHECK_EQ_INT(rc2, 0);
      if (twice && strcmp(once, twice)) {
        CHECK_EQ_STR(once, twice);
        fprintf(stderr, "input:\n%s\n", s.p);
      }
      ag_free(twice);
      ag_diags_release(&dd);
    } else {
      rejected++;
      CHECK(d.items.n >= 1); /* a rejected input always says why */
      for (size_t k = 0; k < d.items.n; k++)
        CHECK(d.items.v[k].line >= 0 && d.items.v[k].col >= 0);
    }
    ag_free(once);
    ag_diags_release(&d);
    ag_str_release(&s);
    runs++;
  }
  printf("fuzz: %d inputs, %d accepted, %d rejected\n", runs, accepted, rejected);
  CHECK(runs >= 1000);
  CHECK(accepted > 0 && rejected > 0);
  ag_free(srcs[0]);
  ag_free(srcs[1]);
}

TEST(test_oom_loop) {
  /* every allocation of a parse can fail: AG_ENOMEM, never a crash or a
   * leak (the ASan build checks the latter) */
  size_t len;
  char *src = read_example("attention.tile", &len);
  CHECK(src != NULL);
  if (!src)
    return;
  int saw_oom = 0, done = 0;
  for (long n = 1; n < 200000 && !done; n += (n < 2000 ? 1 : 37)) {
    ag_diags d;
    ag_diags_init(&d);
    ag_tile_program *p = NULL;
    ag_alloc_fail_at(n);
    int rc = ag_tile_parse(src, len, "attention.tile", &d, &p);
    ag_alloc_fail_at(0);
    if (rc == AG_ENOMEM) {
      saw_oom = 1;
      CHECK(p == NULL);
    } else {
      CHECK_EQ_INT(rc, 0);
      done = 1;
    }
    ag_tile_program_free(p);
    ag_diags_release(&d);
  }
  CHECK(saw_oom);
  CHECK(done);
  ag_free(src);
}

RUN_TESTS(T(test_examples_roundtrip), T(test_ast_shape), T(test_diagnostics),
          T(test_many_errors_recover), T(test_deep_nesting), T(test_fuzz_mutations),
          T(test_oom_loop))
