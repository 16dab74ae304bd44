/*
 * tuple.c — nested integer tuples and layouts: construction and validation,
 * the queries (size, cosize, rank, depth, modes), printing in CuTe's
 * notation, JSON, and concrete evaluation (index or coordinate -> offset,
 * idx2crd, crd2idx).
 *
 * Invariants of a valid layout (ag_layout_make checks them): shape and
 * stride are congruent, no tuple is empty, every extent is >= 1, and size
 * and cosize fit in an int64_t. Evaluation follows CuTe exactly, including
 * its extension past the domain: an index >= size runs on along the last
 * mode. Everything lives in the caller's arena; evaluation allocates
 * nothing and costs O(leaves).
 */
#include "layout_int.h"

#include <stdarg.h>
#include <stdlib.h>

void ag_layout_ctx_init(ag_layout_ctx *c, ag_arena *arena) {
  memset(c, 0, sizeof *c);
  c->arena = arena;
  ag_str_init(&c->err);
}

void ag_layout_ctx_release(ag_layout_ctx *c) {
  ag_str_release(&c->err);
  ag_free(c->xtab);
  c->xtab = NULL;
  c->xcap = c->xcount = 0;
}

int ag__lfail(ag_layout_ctx *c, int code, const char *fmt, ...) {
  ag_str_clear(&c->err);
  c->err.oom = 0;
  va_list ap;
  va_start(ap, fmt);
  ag_str_vprintf(&c->err, fmt, ap);
  va_end(ap);
  return code;
}

int ag__loom(ag_layout_ctx *c) { return ag__lfail(c, AG_ENOMEM, "out of memory"); }

/* ------------------------------------------------------------ construction */

ag_tuple *ag_tuple_leaf(ag_layout_ctx *c, int64_t v) {
  ag_tuple *t = ag_arena_alloc(c->arena, sizeof *t);
  if (t) {
    t->is_leaf = 1;
    t->value = v;
  }
  return t;
}

ag_tuple *ag_tuple_make(ag_layout_ctx *c, int n, ag_tuple *const *children) {
  if (n < 0)
    return NULL;
  for (int i = 0; i < n; i++)
    if (!children[i])
      return NULL; /* a failed constructor below: propagate */
  ag_tuple *t = ag_arena_alloc(c->arena, sizeof *t + (size_t)n * sizeof(ag_tuple *));
  if (!t)
    return NULL;
  t->n = n;
  t->child = (ag_tuple **)(t + 1);
  for (int i = 0; i < n; i++)
    t->child[i] = children[i];
  return t;
}

int ag_tuple_leaves(const ag_tuple *t) {
  if (t->is_leaf)
    return 1;
  int n = 0;
  for (int i = 0; i < t->n; i++)
    n += ag_tuple_leaves(t->child[i]);
  return n;
}

int64_t ag__tsize(const ag_tuple *t) {
  if (t->is_leaf)
    return t->value;
  int64_t p = 1;
  for (int i = 0; i < t->n; i++)
    p *= ag__tsize(t->child[i]);
  return p;
}

ag_tuple *ag__mode(ag_tuple *t, int i) {
  if (t->is_leaf)
    return i == 0 ? t : NULL;
  return i >= 0 && i < t->n ? t->child[i] : NULL;
}

int ag__rank(const ag_tuple *t) { return t->is_leaf ? 1 : t->n; }

int ag_tuple_equal(const ag_tuple *a, const ag_tuple *b) {
  if (a->is_leaf != b->is_leaf)
    return 0;
  if (a->is_leaf)
    return a->value == b->value;
  if (a->n != b->n)
    return 0;
  for (int i = 0; i < a->n; i++)
    if (!ag_tuple_equal(a->child[i], b->child[i]))
      return 0;
  return 1;
}

int ag_layout_equal(const ag_layout *a, const ag_layout *b) {
  return ag_tuple_equal(a->shape, b->shape) && ag_tuple_equal(a->stride, b->stride);
}

static void flat_fill(const ag_tuple *s, const ag_tuple *d, ag__flat *f) {
  if (s->is_leaf) {
    f->s[f->n] = s->value;
    f->d[f->n] = d->value;
    f->n++;
    return;
  }
  for (int i = 0; i < s->n; i++)
    flat_fill(s->child[i], d->child[i], f);
}

void ag__flat_fill(const ag_layout *l, ag__flat *f) {
  f->n = 0;
  flat_fill(l->shape, l->stride, f);
}

int ag__flatten(ag_layout_ctx *c, const ag_layout *l, ag__flat *f) {
  int n = ag_tuple_leaves(l->shape);
  f->n = 0;
  f->s = ag_arena_alloc(c->arena, 2 * (size_t)n * sizeof(int64_t));
  if (!f->s)
    return ag__loom(c);
  f->d = f->s + n;
  flat_fill(l->shape, l->stride, f);
  return 0;
}

int ag__pair_nodes(ag_layout_ctx *c, int n, ag_tuple **s, ag_tuple **d) {
  size_t node = (sizeof(ag_tuple) + (size_t)n * sizeof(ag_tuple *) + 15) & ~(size_t)15;
  unsigned char *m = ag_arena_alloc(c->arena, 2 * node);
  if (!m)
    return ag__loom(c);
  *s = (ag_tuple *)m;
  *d = (ag_tuple *)(m + node);
  (*s)->n = (*d)->n = n;
  (*s)->child = (ag_tuple **)(*s + 1);
  (*d)->child = (ag_tuple **)(*d + 1);
  return 0;
}

int ag__from_flat(ag_layout_ctx *c, int n, const int64_t *s, const int64_t *d, ag_layout *out) {
  /* one allocation: (for n > 1) the two tuple nodes, then 2n leaves */
  size_t node = (sizeof(ag_tuple) + (size_t)n * sizeof(ag_tuple *) + 15) & ~(size_t)15;
  size_t head = n == 1 ? 0 : 2 * node;
  unsigned char *m = ag_arena_alloc(c->arena, head + 2 * (size_t)n * sizeof(ag_tuple));
  if (!m)
    return ag__loom(c);
  ag_tuple *leaves = (ag_tuple *)(m + head);
  for (int i = 0; i < n; i++) {
    leaves[2 * i].is_leaf = leaves[2 * i + 1].is_leaf = 1;
    leaves[2 * i].value = s[i];
    leaves[2 * i + 1].value = d[i];
  }
  if (n == 1) {
    out->shape = &leaves[0];
    out->stride = &leaves[1];
    return 0;
  }
  ag_tuple *sh = (ag_tuple *)m, *st = (ag_tuple *)(m + node);
  sh->n = st->n = n;
  sh->child = (ag_tuple **)(sh + 1);
  st->child = (ag_tuple **)(st + 1);
  for (int i = 0; i < n; i++) {
    sh->child[i] = &leaves[2 * i];
    st->child[i] = &leaves[2 * i + 1];
  }
  out->shape = sh;
  out->stride = st;
  return 0;
}

/* A mode path "1.0.2" grown and shrunk while walking a tree. */
static size_t path_push(ag_str *path, int i) {
  size_t keep = path->len;
  ag_str_printf(path, "%s%d", keep ? "." : "", i);
  return keep;
}

static void path_pop(ag_str *path, size_t keep) {
  path->len = keep;
  if (path->p)
    path->p[keep] = 0;
}

/* Checks congruence, extents and emptiness; path names the mode. */
static int check_tree(ag_layout_ctx *c, const ag_tuple *s, const ag_tuple *d, ag_str *path) {
  if (s->is_leaf != d->is_leaf)
    return ag__lfail(c, AG_EINVAL,
                     "shape and stride are not congruent at mode %s: the %s has %s",
                     path->len ? ag_str_cstr(path) : "(whole layout)",
                     s->is_leaf ? "stride" : "shape", "a tuple where the other has an integer");
  if (s->is_leaf) {
    if (s->value < 1)
      return ag__lfail(c, AG_EINVAL, "extent %lld of mode %s must be positive",
                       (long long)s->value, path->len ? ag_str_cstr(path) : "0");
    return 0;
  }
  if (s->n == 0)
    return ag__lfail(c, AG_EINVAL, "empty tuple in the shape");
  if (s->n != d->n)
    return ag__lfail(c, AG_EINVAL,
                     "shape and stride are not congruent at mode %s: %d modes in the shape, "
                     "%d in the stride",
                     path->len ? ag_str_cstr(path) : "(whole layout)", s->n, d->n);
  for (int i = 0; i < s->n; i++) {
    size_t keep = path_push(path, i);
    int rc = check_tree(c, s->child[i], d->child[i], path);
    path_pop(path, keep);
    if (rc)
      return rc;
  }
  return 0;
}

static int range_rec(const ag_tuple *s, const ag_tuple *d, int64_t *size, int64_t *cos) {
  if (s->is_leaf) {
    int64_t ad = d->value < 0 ? -d->value : d->value, t;
    if (d->value == INT64_MIN || ag__mul(*size, s->value, size) ||
        ag__mul(s->value - 1, ad, &t) || ag__add(*cos, t, cos))
      return AG_ERANGE;
    return 0;
  }
  for (int i = 0; i < s->n; i++)
    if (range_rec(s->child[i], d->child[i], size, cos))
      return AG_ERANGE;
  return 0;
}

int ag__range_check(ag_layout_ctx *c, const ag_layout *l) {
  int64_t size = 1, cos = 0;
  if (range_rec(l->shape, l->stride, &size, &cos) || cos == INT64_MAX)
    return ag__lfail(c, AG_ERANGE, "the layout's size or cosize does not fit in 64 bits");
  return 0;
}

int ag_layout_make(ag_layout_ctx *c, ag_tuple *shape, ag_tuple *stride, ag_layout *out) {
  out->shape = out->stride = NULL;
  if (!shape || !stride)
    return ag__loom(c);
  ag_str path = AG_STR_INIT;
  int rc = check_tree(c, shape, stride, &path);
  ag_str_release(&path);
  if (rc)
    return rc;
  ag_layout l = {shape, stride};
  if ((rc = ag__range_check(c, &l)))
    return rc;
  *out = l;
  return 0;
}

static ag_tuple *compact_rec(ag_layout_ctx *c, const ag_tuple *s, int64_t *pre) {
  if (s->is_leaf) { /* CuTe gives an extent-1 mode stride 0 */
    ag_tuple *t = ag_tuple_leaf(c, s->value == 1 ? 0 : *pre);
    *pre *= s->value;
    return t;
  }
  ag_tuple **ch = ag_arena_alloc(c->arena, (size_t)s->n * sizeof *ch + 1);
  if (!ch)
    return NULL;
  for (int i = 0; i < s->n; i++)
    if (!(ch[i] = compact_rec(c, s->child[i], pre)))
      return NULL;
  return ag_tuple_make(c, s->n, ch);
}

int ag_layout_compact(ag_layout_ctx *c, ag_tuple *shape, ag_layout *out) {
  out->shape = out->stride = NULL;
  if (!shape)
    return ag__loom(c);
  /* validate the shape alone first so that the prefix products cannot overflow */
  ag_str path = AG_STR_INIT;
  int rc = check_tree(c, shape, shape, &path);
  ag_str_release(&path);
  if (rc)
    return rc;
  int64_t size = 1;
  ag_layout probe = {shape, shape};
  int64_t cos = 0;
  if (range_rec(probe.shape, probe.shape, &size, &cos))
    return ag__lfail(c, AG_ERANGE, "the shape's size does not fit in 64 bits");
  int64_t pre = 1;
  ag_tuple *stride = compact_rec(c, shape, &pre);
  if (!stride)
    return ag__loom(c);
  return ag_layout_make(c, shape, stride, out);
}

/* ----------------------------------------------------------------- queries */

int64_t ag_layout_size(const ag_layout *l) { return ag__tsize(l->shape); }

static int64_t cos_rec(const ag_tuple *s, const ag_tuple *d) {
  if (s->is_leaf)
    return (s->value - 1) * (d->value < 0 ? -d->value : d->value);
  int64_t t = 0;
  for (int i = 0; i < s->n; i++)
    t += cos_rec(s->child[i], d->child[i]);
  return t;
}

int64_t ag_layout_cosize(const ag_layout *l) { return cos_rec(l->shape, l->stride) + 1; }

int ag_layout_rank(const ag_layout *l) { return ag__rank(l->shape); }

static int depth_rec(const ag_tuple *t) {
  if (t->is_leaf)
    return 0;
  int m = 0;
  for (int i = 0; i < t->n; i++) {
    int d = depth_rec(t->child[i]);
    if (d > m)
      m = d;
  }
  return m + 1;
}

int ag_layout_depth(const ag_layout *l) { return depth_rec(l->shape); }

int ag_layout_mode(ag_layout_ctx *c, const ag_layout *l, int i, ag_layout *out) {
  ag_tuple *s = ag__mode(l->shape, i), *d = ag__mode(l->stride, i);
  if (!s)
    return ag__lfail(c, AG_ERANGE, "mode %d does not exist: the layout has rank %d", i,
                     ag__rank(l->shape));
  out->shape = s;
  out->stride = d;
  return 0;
}

/* ---------------------------------------------------------------- printing */

int ag_tuple_print(const ag_tuple *t, ag_str *out) {
  if (t->is_leaf)
    return ag_str_printf(out, "%lld", (long long)t->value);
  ag_str_putc(out, '(');
  for (int i = 0; i < t->n; i++) {
    if (i)
      ag_str_putc(out, ',');
    ag_tuple_print(t->child[i], out);
  }
  ag_str_putc(out, ')');
  return out->oom ? AG_ENOMEM : 0;
}

int ag_layout_print(const ag_layout *l, ag_str *out) {
  ag_tuple_print(l->shape, out);
  ag_str_putc(out, ':');
  ag_tuple_print(l->stride, out);
  return out->oom ? AG_ENOMEM : 0;
}

int ag_tiler_print(const ag_tiler *t, ag_str *out) {
  if (t->is_layout)
    return ag_layout_print(&t->layout, out);
  ag_str_putc(out, '<');
  for (int i = 0; i < t->n; i++) {
    if (i)
      ag_str_putc(out, ',');
    ag_layout_print(&t->modes[i], out);
  }
  ag_str_putc(out, '>');
  return out->oom ? AG_ENOMEM : 0;
}

void ag__leaf_path(const ag_tuple *t, int k, ag_str *out) {
  /* walk down, recording the child index at each level */
  int idx[64], depth = 0;
  const ag_tuple *cur = t;
  while (!cur->is_leaf && depth < 64) {
    int i = 0;
    for (; i < cur->n; i++) {
      int n = ag_tuple_leaves(cur->child[i]);
      if (k < n)
        break;
      k -= n;
    }
    if (i == cur->n)
      break;
    idx[depth++] = i;
    cur = cur->child[i];
  }
  if (depth == 0)
    ag_str_puts(out, "0");
  for (int i = 0; i < depth; i++)
    ag_str_printf(out, "%s%d", i ? "." : "", idx[i]);
}

static json_t *tuple_json(const ag_tuple *t) {
  if (t->is_leaf)
    return json_integer(t->value);
  json_t *a = json_array();
  for (int i = 0; a && i < t->n; i++) {
    json_t *ch = tuple_json(t->child[i]);
    if (!ch || json_array_append_new(a, ch)) {
      json_decref(a);
      return NULL;
    }
  }
  return a;
}

json_t *ag_layout_to_json(const ag_layout *l) {
  ag_str text = AG_STR_INIT;
  if (ag_layout_print(l, &text)) {
    ag_str_release(&text);
    return NULL;
  }
  json_t *sh = tuple_json(l->shape), *st = tuple_json(l->stride);
  json_t *o = NULL;
  if (sh && st)
    o = json_pack("{s:s,s:O,s:O,s:I,s:I,s:i,s:i}", "text", ag_str_cstr(&text), "shape", sh,
                  "stride", st, "size", (json_int_t)ag_layout_size(l), "cosize",
                  (json_int_t)ag_layout_cosize(l), "rank", ag_layout_rank(l), "depth",
                  ag_layout_depth(l));
  json_decref(sh);
  json_decref(st);
  ag_str_release(&text);
  return o;
}

/* -------------------------------------------------------------- evaluation */

/* CuTe's crd2idx for an integral coordinate: split idx colexicographically
 * over the modes of s; the last mode takes what is left. */
static int eval_idx(const ag_tuple *s, const ag_tuple *d, int64_t idx, int64_t *acc) {
  if (s->is_leaf) {
    int64_t p;
    if (ag__mul(idx, d->value, &p) || ag__add(*acc, p, acc))
      return AG_ERANGE;
    return 0;
  }
  for (int i = 0; i < s->n - 1; i++) {
    int64_t sz = ag__tsize(s->child[i]);
    if (eval_idx(s->child[i], d->child[i], idx % sz, acc))
      return AG_ERANGE;
    idx /= sz;
  }
  return eval_idx(s->child[s->n - 1], d->child[s->n - 1], idx, acc);
}

int ag_layout_eval_index(const ag_layout *l, int64_t idx, int64_t *offset) {
  *offset = 0;
  if (idx < 0)
    return AG_ERANGE;
  int64_t acc = 0;
  int rc = eval_idx(l->shape, l->stride, idx, &acc);
  *offset = rc ? 0 : acc;
  return rc;
}

static int eval_crd(const ag_tuple *x, const ag_tuple *s, const ag_tuple *d, int64_t *acc) {
  if (x->is_leaf) {
    if (x->value < 0)
      return AG_ERANGE;
    return eval_idx(s, d, x->value, acc);
  }
  if (s->is_leaf || s->n != x->n)
    return AG_EINVAL;
  for (int i = 0; i < x->n; i++) {
    int rc = eval_crd(x->child[i], s->child[i], d->child[i], acc);
    if (rc)
      return rc;
  }
  return 0;
}

int ag_layout_eval_coord(const ag_layout *l, const ag_tuple *coord, int64_t *offset) {
  int64_t acc = 0;
  int rc = eval_crd(coord, l->shape, l->stride, &acc);
  *offset = rc ? 0 : acc;
  return rc;
}

static int check_crd(ag_layout_ctx *c, const ag_tuple *x, const ag_tuple *s, ag_str *path) {
  const char *where = path->len ? ag_str_cstr(path) : "the layout";
  if (x->is_leaf) {
    int64_t sz = ag__tsize(s);
    if (x->value < 0 || x->value >= sz)
      return ag__lfail(c, AG_ERANGE, "coordinate %lld is outside %s%s, whose extent is %lld",
                       (long long)x->value, path->len ? "mode " : "", where, (long long)sz);
    return 0;
  }
  if (s->is_leaf || s->n != x->n)
    return ag__lfail(c, AG_EINVAL, "the coordinate has %d modes where %s%s has %d",
                     x->n, path->len ? "mode " : "", where, ag__rank(s));
  for (int i = 0; i < x->n; i++) {
    size_t keep = path_push(path, i);
    int rc = check_crd(c, x->child[i], s->child[i], path);
    path_pop(path, keep);
    if (rc)
      return rc;
  }
  return 0;
}

int ag_layout_coord_check(ag_layout_ctx *c, const ag_layout *l, const ag_tuple *coord) {
  ag_str path = AG_STR_INIT;
  int rc = check_crd(c, coord, l->shape, &path);
  ag_str_release(&path);
  return rc;
}

static ag_tuple *idx2crd_rec(ag_layout_ctx *c, int64_t idx, const ag_tuple *s) {
  if (s->is_leaf)
    return ag_tuple_leaf(c, idx);
  ag_tuple **ch = ag_arena_alloc(c->arena, (size_t)s->n * sizeof *ch);
  if (!ch)
    return NULL;
  for (int i = 0; i < s->n; i++) {
    if (i == s->n - 1) {
      ch[i] = idx2crd_rec(c, idx, s->child[i]);
    } else {
      int64_t sz = ag__tsize(s->child[i]);
      ch[i] = idx2crd_rec(c, idx % sz, s->child[i]);
      idx /= sz;
    }
    if (!ch[i])
      return NULL;
  }
  return ag_tuple_make(c, s->n, ch);
}

int ag_idx2crd(ag_layout_ctx *c, int64_t idx, const ag_tuple *shape, ag_tuple **out) {
  *out = NULL;
  if (idx < 0)
    return ag__lfail(c, AG_ERANGE, "index %lld is negative", (long long)idx);
  *out = idx2crd_rec(c, idx, shape);
  return *out ? 0 : ag__loom(c);
}

static int crd2idx_rec(const ag_tuple *x, const ag_tuple *s, int64_t *idx) {
  if (x->is_leaf) {
    if (x->value < 0)
      return AG_ERANGE;
    *idx = x->value;
    return 0;
  }
  if (s->is_leaf || s->n != x->n)
    return AG_EINVAL;
  int64_t acc = 0, pre = 1;
  for (int i = 0; i < x->n; i++) {
    int64_t sub, t;
    int rc = crd2idx_rec(x->child[i], s->child[i], &sub);
    if (rc)
      return rc;
    if (ag__mul(sub, pre, &t) || ag__add(acc, t, &acc) ||
        (i < x->n - 1 && ag__mul(pre, ag__tsize(s->child[i]), &pre)))
      return AG_ERANGE;
  }
  *idx = acc;
  return 0;
}

int ag_crd2idx(const ag_tuple *coord, const ag_tuple *shape, int64_t *idx) {
  int64_t v = 0;
  int rc = crd2idx_rec(coord, shape, &v);
  *idx = rc ? 0 : v;
  return rc;
}
