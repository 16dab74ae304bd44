/*
 * edit_distance.h — the one edit distance of Argus, header-only so that
 * both core (ag_edit_distance: "did you mean" for signals, scope keys,
 * regions) and libargus_host, which does not link core (the counter
 * catalog's closest metric names, src/collect/ctr_catalog.h), use it with
 * their own allocator. Edits are insertions, deletions, substitutions and
 * transpositions of two adjacent characters, each 1 (optimal string
 * alignment). Three rows of strlen(b) + 1; quadratic in the lengths, for
 * names of tens of characters compared against tens to thousands of names.
 */
#ifndef ARGUS_CORE_EDIT_DISTANCE_H
#define ARGUS_CORE_EDIT_DISTANCE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The distance from a to b; SIZE_MAX when alloc fails. alloc/release: the
 * caller's allocator (ag_malloc/ag_free in core, malloc/free in libc-only
 * code). */
static inline size_t ag__edit_distance(const char *a, const char *b, void *(*alloc)(size_t),
                                       void (*release)(void *)) {
  size_t n = strlen(a), m = strlen(b);
  /* three rows: i - 2, i - 1, i */
  size_t *r = (size_t *)alloc(3 * (m + 1) * sizeof *r);
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
  release(r);
  return d;
}

#endif
