/*
 * suggest.c — "did you mean" for a name someone mistyped (a signal, a scope
 * key, a region): the known names within a few edits of it, closest first.
 * Edits are insertions, deletions, substitutions and transpositions of two
 * adjacent characters, each 1 (optimal string alignment). Called once per
 * refused name, over tens of names: quadratic in their lengths is nothing.
 */
#include "argus/core.h"

#include <stdint.h>
#include <string.h>

size_t ag_edit_distance(const char *a, const char *b) {
  size_t n = strlen(a), m = strlen(b);
  /* three rows: i - 2, i - 1, i */
  size_t *r = ag_malloc(3 * (m + 1) * sizeof *r);
  if (!r)
    return SIZE_MAX;
  size_t *r2 = r, *r1 = r + m + 1, *r0 = r + 2 * (m + 1);
  for (size_t j = 0; j <= m; j++)
    r1[j] = j;
  for (size_t i = 1; i <= n; i++) {
    r0[0] = i;
    for (size_t j = 1; j <= m; j++) {
      size_t sub = r1[j - 1] + (a[i - 1] != b[j - 1]);
      size_t del = r1[j] + 1, ins = r0[j - 1] + 1;
      size_t d = sub < del ? sub : del;
      d = d < ins ? d : ins;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && r2[j - 2] + 1 < d)
        d = r2[j - 2] + 1;
      r0[j] = d;
    }
    size_t *t = r2;
    r2 = r1, r1 = r0, r0 = t;
  }
  size_t d = r1[m];
  ag_free(r);
  return d;
}

int ag_str_suggest(ag_str *out, const char *word, const char *const *names, size_t n) {
  enum { MAX = 3 };
  size_t len = strlen(word), best[MAX], dist[MAX], k = 0;
  size_t limit = 1 + len / 4;
  for (size_t i = 0; i < n; i++) {
    if (!names[i] || !strcmp(names[i], word))
      continue;
    size_t d = ag_edit_distance(word, names[i]);
    /* a name the word begins counts as one edit away */
    if (len >= 3 && !strncmp(names[i], word, len))
      d = 1;
    int dup = 0; /* a name listed twice (qualified and own names) is named once */
    for (size_t q = 0; q < k; q++)
      dup |= !strcmp(names[best[q]], names[i]);
    if (d > limit || d >= len || dup)
      continue;
    /* insert by distance; the earlier name first among equals */
    size_t at = k;
    while (at > 0 && dist[at - 1] > d)
      at--;
    if (at >= MAX)
      continue;
    for (size_t j = (k < MAX ? k : MAX - 1); j > at; j--)
      best[j] = best[j - 1], dist[j] = dist[j - 1];
    best[at] = i, dist[at] = d;
    if (k < MAX)
      k++;
  }
  for (size_t j = 0; j < k; j++)
    ag_str_printf(out, "%s'%s'", j == 0 ? "did you mean " : j + 1 == k ? " or " : ", ",
                  names[best[j]]);
  if (k)
    ag_str_putc(out, '?');
  return (int)k;
}
