/*
 * tile_util.h — helpers shared by the tile checker tests: reading examples,
 * checking source text, and applying a planted-bug mutation (.mut) the way
 * examples/tile/bugs/apply.sh does, in C, so tests do not depend on awk.
 * Include after check.h.
 */
#ifndef ARGUS_TEST_TILE_UTIL_H
#define ARGUS_TEST_TILE_UTIL_H

#include "argus/tile_check.h"
#include "diag_case.h"

static inline char *tu_read(const char *rel, size_t *len) {
  const char *src = getenv("ARGUS_SOURCE_DIR");
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", src ? src : ".", rel);
  char *data = NULL;
  size_t l = 0;
  if (ag_file_read(path, &data, &l)) {
    fprintf(stderr, "cannot read %s\n", path);
    return NULL;
  }
  if (len)
    *len = l;
  return data;
}

static inline const char *tu_strip(const char *s) {
  while (*s == ' ' || *s == '\t')
    s++;
  return s;
}

/* Splits text into lines (owned array of owned strings). */
static inline char **tu_lines(const char *text, int *n) {
  int cap = 16, k = 0;
  char **v = malloc((size_t)cap * sizeof *v);
  const char *p = text;
  while (*p) {
    const char *e = strchr(p, '\n');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    if (k == cap)
      v = realloc(v, (size_t)(cap *= 2) * sizeof *v);
    v[k] = malloc(l + 1);
    memcpy(v[k], p, l);
    v[k][l] = 0;
    k++;
    p += l + (e ? 1 : 0);
  }
  *n = k;
  return v;
}

static inline void tu_free_lines(char **v, int n) {
  for (int i = 0; i < n; i++)
    free(v[i]);
  free(v);
}

/* Applies examples/tile/bugs/NAME.mut to its base; returns the buggy source
 * (malloc'd) or NULL when a block does not match exactly once. */
static inline char *tu_mutate(const char *name) {
  char rel[256];
  snprintf(rel, sizeof rel, "examples/tile/bugs/%s.mut", name);
  char *mut = tu_read(rel, NULL);
  if (!mut)
    return NULL;
  int nm;
  char **ml = tu_lines(mut, &nm);
  char base[128] = "";
  for (int i = 0; i < nm; i++)
    if (!strncmp(ml[i], "base: ", 6))
      snprintf(base, sizeof base, "examples/tile/%s", ml[i] + 6);
  char *src = tu_read(base, NULL);
  if (!src) {
    tu_free_lines(ml, nm);
    free(mut);
    return NULL;
  }
  int ns;
  char **sl = tu_lines(src, &ns);
  /* blocks: runs of "- " lines, then "+ " lines */
  int ok = 1;
  int *replaced = calloc((size_t)ns + 1, sizeof *replaced); /* 1: drop, 2+k: block k here */
  int bstart[32], bold[32], bnew[32], nb = 0;
  for (int i = 0; i < nm && ok;) {
    if (strncmp(ml[i], "- ", 2)) {
      i++;
      continue;
    }
    bstart[nb] = i;
    bold[nb] = 0;
    while (i < nm && !strncmp(ml[i], "- ", 2))
      bold[nb]++, i++;
    bnew[nb] = 0;
    while (i < nm && !strncmp(ml[i], "+ ", 2))
      bnew[nb]++, i++;
    int hits = 0, at = -1;
    for (int s = 0; s + bold[nb] <= ns; s++) {
      int m = 1;
      for (int j = 0; j < bold[nb] && m; j++)
        m = !strcmp(tu_strip(sl[s + j]), tu_strip(ml[bstart[nb] + j] + 2));
      if (m)
        hits++, at = s;
    }
    if (hits != 1) {
      fprintf(stderr, "%s: block %d matches %d places\n", name, nb, hits);
      ok = 0;
      break;
    }
    replaced[at] = 2 + nb;
    for (int j = 1; j < bold[nb]; j++)
      replaced[at + j] = 1;
    nb++;
  }
  ag_str o = AG_STR_INIT;
  for (int s = 0; ok && s < ns; s++) {
    if (replaced[s] == 1)
      continue;
    if (replaced[s] >= 2) {
      int b = replaced[s] - 2;
      size_t ind = (size_t)(tu_strip(sl[s]) - sl[s]);
      for (int j = 0; j < bnew[b]; j++) {
        ag_str_append(&o, sl[s], ind);
        ag_str_puts(&o, tu_strip(ml[bstart[b] + bold[b] + j] + 2));
        ag_str_putc(&o, '\n');
      }
      continue;
    }
    ag_str_puts(&o, sl[s]);
    ag_str_putc(&o, '\n');
  }
  free(replaced);
  tu_free_lines(sl, ns);
  tu_free_lines(ml, nm);
  free(src);
  free(mut);
  if (!ok) {
    ag_str_release(&o);
    return NULL;
  }
  char *r = ag_str_detach(&o);
  char *m = r ? strdup(r) : NULL;
  ag_free(r);
  return m;
}

/* The 1-based line of the first line of text containing needle (0: none). */
static inline int tu_line_of(const char *text, const char *needle) {
  int line = 1;
  for (const char *p = text; *p; p++) {
    const char *e = strchr(p, '\n');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    char buf[512];
    snprintf(buf, sizeof buf, "%.*s", (int)(l < 511 ? l : 511), p);
    if (strstr(buf, needle))
      return line;
    if (!e)
      break;
    p = e;
    line++;
  }
  return 0;
}

/* A planted bug applied (tu_mutate) and the line of its first occurrence of needle in *line
 * (both checked: NULL or a line <= 0 fail the test); the source is malloc'd. */
static inline char *tu_mutate_at(const char *name, const char *needle, int *line) {
  char *src = tu_mutate(name);
  CHECK(src != NULL);
  *line = src ? tu_line_of(src, needle) : 0;
  CHECK(!src || *line > 0);
  return src;
}

/* Parses and checks text; returns the report (owned) or NULL with *rc. */
static inline ag_tile_report *tu_check(const char *text, const char *name, ag_diags *d, int *rc,
                                const ag_tile_check_opts *o) {
  ag_tile_program *p = NULL;
  *rc = ag_tile_parse(text, strlen(text), name, d, &p);
  if (*rc)
    return NULL;
  ag_tile_report *r = NULL;
  *rc = ag_tile_check(p, o, d, &r);
  ag_tile_program_free(p);
  return r;
}

static inline const ag_tile_assert_result *tu_find(const ag_tile_report *r, int line) {
  for (int i = 0; r && i < r->nasserts; i++)
    if (r->asserts[i].line == line)
      return &r->asserts[i];
  return NULL;
}

static inline int64_t tu_loop(const ag_tile_cex *x, const char *name) {
  for (int i = 0; i < x->nloops; i++)
    if (!strcmp(x->loops[i].name, name))
      return x->loops[i].value;
  return -1;
}

static inline int64_t tu_size(const ag_tile_cex *x, const char *name) {
  for (int i = 0; i < x->nsizes; i++)
    if (!strcmp(x->sizes[i].name, name))
      return x->sizes[i].value;
  return -1;
}

/* The first diagnostic of d is at line:col and says msg; the formatted
 * form carries file:line:col and a caret line (diag_case.h). */
static inline void tu_expect_diag(const ag_diags *d, size_t which, int line, int col,
                                  const char *msg) {
  dc_expect_caret(d, which, NULL, line, col, msg);
}

/* src does not check: its diagnostics hold msg and ":line:col: error". */
static inline void tu_expect_error(const char *src, int line, int col, const char *msg) {
  ag_diags d;
  ag_diags_init(&d);
  int rc;
  ag_tile_report *r = tu_check(src, "t.tile", &d, &rc, NULL);
  CHECK(rc != 0);
  ag_str f = AG_STR_INIT;
  ag_diags_format(&d, &f);
  char at[32];
  snprintf(at, sizeof at, ":%d:%d: error", line, col);
  if (!strstr(ag_str_cstr(&f), msg) || !strstr(ag_str_cstr(&f), at))
    printf("  expected \"%s\" at %s:\n%s\n", msg, at, ag_str_cstr(&f));
  CHECK_CONTAINS(ag_str_cstr(&f), msg);
  CHECK_CONTAINS(ag_str_cstr(&f), at);
  ag_str_release(&f);
  ag_tile_report_free(r);
  ag_diags_release(&d);
}

/* What a refutation must show: the reason, the counterexample's thread
 * (-1: any of the block) and its left side's expression, tag and the shared
 * byte it came through (NULL: not checked). */
typedef struct tu_refute {
  const char *reason;
  int64_t thread;
  const char *lhs_expr, *lhs_tag, *lhs_via;
} tu_refute;

/* src checks, and the assertion (or access) on the line holding `at` is
 * violated with a counterexample that shows w (printed, named `name`). */
static inline void tu_refuted(const char *name, const char *src, const char *at, tu_refute w) {
  int line = tu_line_of(src, at);
  CHECK(line > 0);
  ag_diags d;
  ag_diags_init(&d);
  int rc;
  ag_tile_report *r = tu_check(src, name, &d, &rc, NULL);
  CHECK_EQ_INT(rc, 0);
  CHECK(r && !ag_tile_report_ok(r));
  const ag_tile_assert_result *a = r ? tu_find(r, line) : NULL;
  CHECK(a != NULL);
  const ag_tile_cex *x = a ? a->cex : NULL;
  if (a) {
    CHECK_EQ_INT(a->status, AG_TILE_VIOLATED);
    CHECK(x != NULL);
  }
  if (x) {
    printf("  %s: line %d, thread %lld: %s | %s = %s\n", name, line, (long long)x->thread,
           x->reason, x->lhs.expr ? x->lhs.expr : "", x->lhs.tag ? x->lhs.tag : "");
    CHECK(x->thread >= 0);
    if (w.thread >= 0)
      CHECK_EQ_INT(x->thread, w.thread);
    CHECK_CONTAINS(x->reason, w.reason);
    if (w.lhs_expr)
      CHECK_CONTAINS(x->lhs.expr ? x->lhs.expr : "", w.lhs_expr);
    if (w.lhs_tag)
      CHECK_CONTAINS(x->lhs.tag ? x->lhs.tag : "", w.lhs_tag);
    if (w.lhs_via)
      CHECK_CONTAINS(x->lhs.via ? x->lhs.via : "", w.lhs_via);
  }
  ag_tile_report_free(r);
  ag_diags_release(&d);
}

/* The planted bug `bug` (examples/tile/bugs/BUG.mut) applied, then refuted as
 * tu_refuted says. */
static inline void tu_bug_refuted(const char *bug, const char *at, tu_refute w) {
  char *src = tu_mutate(bug);
  CHECK(src != NULL);
  if (src)
    tu_refuted(bug, src, at, w);
  free(src);
}

#endif
