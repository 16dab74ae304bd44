/*
 * suggest.c — "did you mean" for a name someone mistyped (a signal, a scope
 * key, a region): the known names within a few edits of it, closest first.
 * Edits are insertions, deletions, substitutions and transpositions of two
 * adjacent characters, each 1 (optimal string alignment: edit_distance.h,
 * shared with the counter catalog of libargus_host). Called once per
 * refused name, over tens of names: quadratic in their lengths is nothing.
 */
#include "argus/core.h"

#include <stdint.h>
#include <string.h>

#include "edit_distance.h"

size_t ag_edit_distance(const char *a, const char *b) {
  return ag__edit_distance(a, b, ag_malloc, ag_free);
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
