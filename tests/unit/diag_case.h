/*
 * diag_case.h — the malformed-input cases of the parser and spec tests
 * (PTX, program specs, python specs, the tile DSL): an input, the place and
 * a part of the message of the diagnostic it must give, and the checks of
 * that diagnostic against what the parser left in its ag_diags. What came
 * instead is printed with the case's index.
 */
#ifndef ARGUS_TEST_DIAG_CASE_H
#define ARGUS_TEST_DIAG_CASE_H

#include "argus/core.h"
#include "check.h"

/* One malformed input and its diagnostic (line 0: one with no place). */
typedef struct dc_case {
  const char *text;
  int line, col;
  const char *msg;
} dc_case;

/* The first diagnostic of d is case `which`'s: at line:col (the column not
 * checked when line is 0) and saying msg. Returns it; NULL (a failure) when
 * d has none. */
static inline const ag_diag *dc_expect_first(const ag_diags *d, size_t which, int line, int col,
                                             const char *msg) {
  CHECK(d->items.n >= 1);
  if (d->items.n < 1) {
    fprintf(stderr, "case %zu: no diagnostic\n", which);
    return NULL;
  }
  const ag_diag *g = &d->items.v[0];
  if (g->line != line || (line && g->col != col) || !strstr(g->msg, msg))
    fprintf(stderr, "case %zu: got %d:%d %s\n", which, g->line, g->col, g->msg);
  CHECK_EQ_INT(g->line, line);
  if (line)
    CHECK_EQ_INT(g->col, col);
  CHECK_CONTAINS(g->msg, msg);
  return g;
}

/* A diagnostic of d (any of them) says msg, and each one that does is at
 * line:col. */
static inline void dc_expect_any(const ag_diags *d, size_t which, int line, int col,
                                 const char *msg) {
  int found = 0;
  for (size_t k = 0; k < d->items.n; k++)
    if (strstr(d->items.v[k].msg, msg)) {
      found = 1;
      if (d->items.v[k].line != line || d->items.v[k].col != col)
        fprintf(stderr, "case %zu: %d:%d %s\n", which, d->items.v[k].line, d->items.v[k].col,
                d->items.v[k].msg);
      CHECK_EQ_INT(d->items.v[k].line, line);
      CHECK_EQ_INT(d->items.v[k].col, col);
    }
  if (!found)
    fprintf(stderr, "case %zu: no '%s' in %s\n", which, msg,
            d->items.n ? d->items.v[0].msg : "(none)");
  CHECK(found);
}

/* dc_expect_first at a place, with the source line kept: the formatted
 * diagnostics carry "<file>:line:col: error: " (file NULL: any) and a
 * caret line. */
static inline void dc_expect_caret(const ag_diags *d, size_t which, const char *file, int line,
                                   int col, const char *msg) {
  const ag_diag *g = dc_expect_first(d, which, line, col, msg);
  if (!g)
    return;
  CHECK(g->srcline != NULL);
  ag_str s = AG_STR_INIT;
  ag_diags_format(d, &s);
  char want[300];
  snprintf(want, sizeof want, "%s:%d:%d: error: ", file ? file : "", line, col);
  CHECK_CONTAINS(ag_str_cstr(&s), want);
  CHECK_CONTAINS(ag_str_cstr(&s), "^\n");
  ag_str_release(&s);
}

#endif
