/*
 * layout_int.h — what the files of src/tile/layout share: error helpers,
 * checked arithmetic, and the flat (flattened) form of a layout that the
 * algebra works on. Not a public header.
 */
#ifndef ARGUS_LAYOUT_INT_H
#define ARGUS_LAYOUT_INT_H

#include "argus/layout.h"

#include <string.h>

/* Sets c->err to the formatted message and returns code. */
int ag__lfail(ag_layout_ctx *c, int code, const char *fmt, ...) AG_PRINTF(3, 4);
int ag__loom(ag_layout_ctx *c); /* "out of memory", AG_ENOMEM */

static inline int ag__mul(int64_t a, int64_t b, int64_t *r) {
  return __builtin_mul_overflow(a, b, r) ? AG_ERANGE : 0;
}
static inline int ag__add(int64_t a, int64_t b, int64_t *r) {
  return __builtin_add_overflow(a, b, r) ? AG_ERANGE : 0;
}

/* The flattened modes of a layout: extents s[i], strides d[i], in order. */
typedef struct ag__flat {
  int n;
  int64_t *s, *d;
} ag__flat;

/* Fills f->s, f->d (room for every leaf) with l's flat modes; sets f->n. */
void ag__flat_fill(const ag_layout *l, ag__flat *f);
/* Flattens l into arrays from the arena (n = number of leaves). */
int ag__flatten(ag_layout_ctx *c, const ag_layout *l, ag__flat *f);
/* Allocates two tuple nodes (shape and stride) with n child slots each. */
int ag__pair_nodes(ag_layout_ctx *c, int n, ag_tuple **s, ag_tuple **d);
/* Builds a layout from n flat modes: a leaf when n == 1, else a flat tuple. */
int ag__from_flat(ag_layout_ctx *c, int n, const int64_t *s, const int64_t *d, ag_layout *out);
/* Checks that size and cosize of (shape, stride) fit in 64 bits. */
int ag__range_check(ag_layout_ctx *c, const ag_layout *l);
/* size of a tuple (product of leaves); no overflow check (valid layouts). */
int64_t ag__tsize(const ag_tuple *t);
/* Mode i of a tuple: the tuple itself when it is a leaf and i == 0. */
ag_tuple *ag__mode(ag_tuple *t, int i);
int ag__rank(const ag_tuple *t);
/* Appends the path of leaf k (flat order) in t: "1", or "1.0" when nested. */
void ag__leaf_path(const ag_tuple *t, int k, ag_str *out);

#endif
