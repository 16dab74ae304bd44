/*
 * interp.c — the tile checker's symbolic interpreter: runs one kernel for a
 * symbolic thread "tid" of a symbolic block (bid.x, bid.y, bid.z) with
 * symbolic problem sizes, and records proof obligations for the solver.
 *
 * What it models (docs/check.md has the full story):
 *  - integers are symbolic expressions (hash-consed, folded); loops run over
 *    compile-time ranges and are unrolled; an `if` on a compile-time
 *    condition takes one branch, an `if` on a thread-dependent condition
 *    runs both, guards shared-memory writes with the condition, and merges
 *    register tags at the join (merge(t1, t2) in the lattice);
 *  - registers are per-thread byte arrays of tags (strong updates);
 *  - shared memory is an append-only log of writes (buffer, address as a
 *    function of the writing thread, width, per-byte tags, guard, time,
 *    barrier interval, cp.async group); a read yields, per byte, a TG_SHR
 *    tag that the solver resolves against every write that reaches it (weak
 *    updates: two writes with different tags make top; reset() clears);
 *  - global reads carry the tensor's tag function of the element's
 *    coordinates; global writes are not tracked;
 *  - mbarriers count their phases on the block's one timeline; a bulk copy
 *    is a shared write settled for the threads whose mbar_wait saw the
 *    phase it completes (do_mbar_wait).
 * A malformed program (unknown name, wrong operand shape, a view whose
 * size differs, a register index that depends on the thread, ...) stops
 * the check with a diagnostic at the offending node.
 *
 * Cost: linear in the unrolled program; the flash-attention example runs
 * ~10^4 statements in a few milliseconds.
 */
#include "../tile_xop.h"
#include "check_int.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static int log2i(int64_t v) {
  int r = 0;
  while (((int64_t)1 << r) < v)
    r++;
  return ((int64_t)1 << r) == v ? r : -1;
}

/* ------------------------------------------------------------------ errors */
_Noreturn void ag__ck_error(ag__ck *c, const ag_tile_node *n, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (ag_tile_diag(c->prog, c->diags, AG_SEV_ERROR, n, "%s", msg))
    c->fail_rc = AG_ENOMEM;
  else
    c->fail_rc = AG_EPARSE;
  longjmp(c->fail, 1);
}

/* A limit of the checker, not a malformed program, at node n: inside a
 * summary's attempt an error (the summary retries or is refused); outside
 * every summary the interpretation stops here (c->cut) and check.c decides
 * the obligations so far: their violations are real and refute the kernel,
 * and with none the message is the error. A work limit (`limit`) stops so
 * only inside a refused loop's exact prefix (ag__loop_cut), whose
 * obligations are few; elsewhere deciding everything interpreted up to the
 * limit would cost more than the limit saves, so it is the error. */
_Noreturn void ag__ck_stop(ag__ck *c, const ag_tile_node *n, int limit, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (c->summarizing || (limit && !c->cutting))
    ag__ck_error(c, n, "%s", msg);
  c->cut = ag__ck_strdup(c, msg);
  c->cut_at = n;
  c->cut_iters = -1;
  c->fail_rc = 0;
  longjmp(c->fail, 1);
}

/* ------------------------------------------------------------------ values */
static ag__value *newv(ag__ck *c, ag__vk k) {
  ag__value *v = ag__ck_alloc(c, sizeof *v);
  v->k = k;
  return v;
}
static ag__value *vint(ag__ck *c, const ag_expr *e) {
  ag__value *v = newv(c, V_INT);
  v->i = e;
  return v;
}
static ag__value *vbool(ag__ck *c, const ag__bx *b) {
  ag__value *v = newv(c, V_BOOL);
  v->b = b;
  return v;
}

static const char *kind_name(ag__vk k) {
  switch (k) {
  case V_NONE: return "nothing";
  case V_INT: return "an integer";
  case V_BOOL: return "a condition";
  case V_FLOAT: return "a floating-point constant";
  case V_TILE: return "a tile";
  case V_ELEM: return "a tile element";
  case V_DATA: return "a data value";
  case V_TUPLE: return "a tuple";
  case V_DTYPE: return "a data type";
  case V_LAYOUT: return "a layout";
  case V_SWIZZLE: return "a swizzle";
  case V_TAGFN: return "a tag function";
  case V_INTRIN: return "an intrinsic";
  case V_INTRIN_OP: return "an intrinsic operand layout";
  case V_TAGV: return "a tag";
  case V_POISON: return "a name with different values on two paths";
  case V_TMAP: return "a tensor map";
  }
  return "a value";
}

/* ------------------------------------------------------------------- scope */
static ag__scope *scope_new(ag__ck *c, ag__scope *parent) {
  ag__scope *s = ag__ck_alloc(c, sizeof *s);
  s->parent = parent;
  return s;
}


static ag__value *lookup(ag__ck *c, const char *name) {
  for (ag__scope *s = c->scope; s; s = s->parent)
    for (size_t i = s->b.n; i-- > 0;)
      if (strcmp(s->b.v[i].name, name) == 0)
        return s->b.v[i].v;
  return NULL;
}

static void bind_in(ag__ck *c, ag__scope *s, const char *name, ag__value *v) {
  for (size_t i = 0; i < s->b.n; i++)
    if (strcmp(s->b.v[i].name, name) == 0) {
      s->b.v[i].v = v;
      return;
    }
  /* bindings live in the arena (nothing to free on an error path) */
  if (s->b.n == s->b.cap) {
    size_t cap = s->b.cap ? s->b.cap * 2 : 16;
    ag__binding *nv = ag__ck_alloc(c, cap * sizeof *nv);
    if (s->b.n)
      ag__mcpy(nv, s->b.v, s->b.n * sizeof *nv);
    s->b.v = nv;
    s->b.cap = cap;
  }
  s->b.v[s->b.n].name = name;
  s->b.v[s->b.n].v = v;
  s->b.n++;
}
static void bind(ag__ck *c, const char *name, ag__value *v) { bind_in(c, c->scope, name, v); }

/* A flat copy of every binding visible now (closures of tag functions). */
static ag__scope *scope_snapshot(ag__ck *c) {
  ag__scope *s = scope_new(c, NULL);
  size_t n = 0;
  for (ag__scope *p = c->scope; p; p = p->parent)
    n += p->b.n;
  ag__binding *arr = ag__ck_alloc(c, (n ? n : 1) * sizeof *arr);
  size_t k = 0;
  /* outermost first so inner bindings shadow */
  ag__scope *chain[64];
  int depth = 0;
  for (ag__scope *p = c->scope; p && depth < 64; p = p->parent)
    chain[depth++] = p;
  for (int d = depth - 1; d >= 0; d--)
    for (size_t i = 0; i < chain[d]->b.n; i++)
      arr[k++] = chain[d]->b.v[i];
  s->b.v = arr;
  s->b.n = k;
  s->b.cap = n ? n : 1;
  return s;
}

/* --------------------------------------------------------------- forwards */
static ag__value *eval(ag__ck *c, const ag_tile_node *n);
static void exec_block(ag__ck *c, const ag_tile_list *body);
static void exec_stmt(ag__ck *c, const ag_tile_node *n);
static void need_warpgroup(ag__ck *c, const ag_tile_node *n, const char *what);
static ag__data load(ag__ck *c, const ag_tile_node *at, const ag__elem *e);
static void wg_pending_hit(ag__ck *c, const ag_tile_node *at, int buf, int64_t off, int w,
                           const char *what);

static const ag_expr *as_int(ag__ck *c, const ag_tile_node *n, ag__value *v, const char *what) {
  if (v->k == V_INT)
    return v->i;
  if (v->k == V_BOOL) {
    int b;
    if (ag__bis_const(v->b, &b))
      return ag__xc(c, b);
  }
  ag__ck_error(c, n, "%s must be an integer, not %s", what, kind_name(v->k));
}

static int64_t as_const(ag__ck *c, const ag_tile_node *n, ag__value *v, const char *what) {
  const ag_expr *e = as_int(c, n, v, what);
  int64_t x;
  if (!ag_expr_is_const(e, &x)) {
    ag_str s = AG_STR_INIT;
    ag__xprint(e, &s);
    if (s.oom)
      ag__ck_oom(c);
    char buf[200];
    snprintf(buf, sizeof buf, "%s", ag_str_cstr(&s));
    ag_str_release(&s);
    ag__ck_error(c, n,
                 "%s must be a compile-time constant, but it is '%s' (it depends on the "
                 "thread, the block or a problem size)",
                 what, buf);
  }
  return x;
}

static const ag__bx *as_bool(ag__ck *c, const ag_tile_node *n, ag__value *v) {
  if (v->k == V_BOOL)
    return v->b;
  if (v->k == V_INT)
    return ag__bcmp(c, AG_OP_NE, v->i, ag__xc(c, 0));
  ag__ck_error(c, n, "a condition must be a comparison or an integer, not %s", kind_name(v->k));
}

/* ---------------------------------------------------------- tag utilities */
/* The tag of one element of data: the join of its bytes' tags. */
static const ag__tag *elem_tag(ag__ck *c, const ag__data *d, int off, int size) {
  const ag__tag *t = ag__tag_bot(c);
  for (int j = 0; j < size && off + j < d->n; j++)
    t = ag__tag_join(c, t, d->tags[off + j]);
  return t;
}

static ag__data data_new(ag__ck *c, ag__dt dt, int n) {
  ag__data d;
  d.dt = dt;
  d.n = n;
  d.tags = ag__ck_alloc(c, (size_t)(n ? n : 1) * sizeof *d.tags);
  for (int i = 0; i < n; i++)
    d.tags[i] = ag__tag_bot(c);
  d.ptag = NULL;
  d.pgran = 0;
  return d;
}

static ag__data data_fill(ag__ck *c, ag__dt dt, int n, const ag__tag *t) {
  ag__data d = data_new(c, dt, n);
  for (int i = 0; i < n; i++)
    d.tags[i] = t;
  d.ptag = t;
  d.pgran = n;
  return d;
}

/* ------------------------------------------------------- tuples, layouts */
static ag_tuple *to_tuple(ag__ck *c, const ag_tile_node *n, ag__value *v, const char *what) {
  if (v->k == V_TUPLE) {
    if (v->n == 0)
      ag__ck_error(c, n, "%s must not be empty", what);
    ag_tuple **kids = ag__ck_alloc(c, (size_t)v->n * sizeof *kids);
    for (int i = 0; i < v->n; i++)
      kids[i] = to_tuple(c, n, &v->items[i], what);
    ag_tuple *t = ag_tuple_make(&c->lc, v->n, kids);
    if (!t)
      ag__ck_oom(c);
    return t;
  }
  int64_t x = as_const(c, n, v, what);
  ag_tuple *t = ag_tuple_leaf(&c->lc, x);
  if (!t)
    ag__ck_oom(c);
  return t;
}

static int64_t tuple_size(const ag_tuple *t) {
  if (t->is_leaf)
    return t->value;
  int64_t s = 1;
  for (int i = 0; i < t->n; i++)
    s *= tuple_size(t->child[i]);
  return s;
}

/* Row-major strides for a (nested) shape: the last leaf is fastest. */
static ag_tuple *rowmajor_stride(ag__ck *c, const ag_tuple *shape, int64_t *running) {
  if (shape->is_leaf) {
    ag_tuple *t = ag_tuple_leaf(&c->lc, *running);
    if (!t)
      ag__ck_oom(c);
    *running *= shape->value;
    return t;
  }
  ag_tuple **kids = ag__ck_alloc(c, (size_t)shape->n * sizeof *kids);
  for (int i = shape->n - 1; i >= 0; i--)
    kids[i] = rowmajor_stride(c, shape->child[i], running);
  ag_tuple *t = ag_tuple_make(&c->lc, shape->n, kids);
  if (!t)
    ag__ck_oom(c);
  return t;
}

static void check_shape(ag__ck *c, const ag_tile_node *n, const ag_tuple *t) {
  if (t->is_leaf) {
    if (t->value <= 0 || t->value > ((int64_t)1 << 24))
      ag__ck_error(c, n, "a tile extent must be between 1 and 2^24, not %lld",
                   (long long)t->value);
    return;
  }
  for (int i = 0; i < t->n; i++)
    check_shape(c, n, t->child[i]);
}

/* A layout from a value: an explicit layout, or a shape (row-major). */
static ag_layout layout_of(ag__ck *c, const ag_tile_node *n, ag__value *v) {
  if (v->k == V_LAYOUT)
    return v->layout;
  ag_tuple *shape = to_tuple(c, n, v, "a tile shape");
  check_shape(c, n, shape);
  if (tuple_size(shape) > ((int64_t)1 << 24))
    ag__ck_error(c, n, "tile of %lld elements is too large (at most 2^24)",
                 (long long)tuple_size(shape));
  if (shape->is_leaf) {
    ag_tuple *k[1] = {shape};
    shape = ag_tuple_make(&c->lc, 1, k);
    if (!shape)
      ag__ck_oom(c);
  }
  int64_t run = 1;
  ag_tuple *stride = rowmajor_stride(c, shape, &run);
  ag_layout l;
  if (ag_layout_make(&c->lc, shape, stride, &l))
    ag__ck_error(c, n, "bad layout: %s", ag_str_cstr(&c->lc.err));
  return l;
}

/* Every offset of l, in index order (concrete): in c->offs, valid until the next call. */
static int64_t *layout_offsets(ag__ck *c, const ag_tile_node *n, const ag_layout *l,
                               int64_t *count) {
  int64_t sz = ag_layout_size(l);
  if (sz > c->offs_cap) {
    int64_t *no = ag_realloc(c->offs, (size_t)sz * sizeof *no);
    if (!no)
      ag__ck_oom(c);
    c->offs = no;
    c->offs_cap = sz;
  }
  int64_t *o = c->offs;
  for (int64_t i = 0; i < sz; i++)
    if (ag_layout_eval_index(l, i, &o[i]))
      ag__ck_error(c, n, "cannot evaluate the layout at index %lld", (long long)i);
  *count = sz;
  return o;
}

/* 1 when l maps [0, size) one-to-one onto [0, size). */
static int layout_compact(ag__ck *c, const ag_tile_node *n, const ag_layout *l) {
  int64_t cnt;
  int64_t *o = layout_offsets(c, n, l, &cnt);
  unsigned char *seen = ag_calloc((size_t)(cnt ? cnt : 1), 1);
  if (!seen)
    ag__ck_oom(c);
  int ok = 1;
  for (int64_t i = 0; i < cnt && ok; i++) {
    if (o[i] < 0 || o[i] >= cnt || seen[o[i]])
      ok = 0;
    else
      seen[o[i]] = 1;
  }
  ag_free(seen);
  return ok;
}

/* ------------------------------------------------------------------ tiles */
static ag__tile *tile_new(ag__ck *c) { return ag__ck_alloc(c, sizeof(ag__tile)); }

/* A value for a whole new buffer (shared or register) seen through l. */
static ag__value *buffer_value(ag__ck *c, ag__tile *t, ag__space sp, ag__dt dt, int buf,
                               ag_layout l) {
  t->sp = sp;
  t->dt = dt;
  t->buf = buf;
  t->base = ag__xc(c, 0);
  t->layout = l;
  ag__value *v = ag__ck_alloc(c, sizeof *v);
  v->k = V_TILE;
  v->t = t;
  return v;
}

static const ag_expr *swizzled(ag__ck *c, const ag__tile *t, const ag_expr *byteoff) {
  if (!t->swizzled)
    return byteoff;
  const ag_expr *r = ag_swizzle_apply_x(&c->lc, t->swz, byteoff);
  if (!r)
    ag__ck_oom(c);
  return r;
}

static const ag_expr *mode_offset(ag__ck *c, const ag_tile_node *n, const ag_layout *mode,
                                  const ag_expr *idx) {
  ag_xtuple leaf = {1, idx, 0, NULL};
  const ag_expr *off = NULL;
  if (ag_layout_eval_coord_x(&c->lc, mode, &leaf, &off) || !off) {
    /* a 1-D index into the mode: evaluate through its linear index */
    if (ag_layout_eval_index_x(&c->lc, mode, idx, &off) || !off)
      ag__ck_error(c, n, "cannot index the tile: %s", ag_str_cstr(&c->lc.err));
  }
  return off;
}


/* Memory safety: index idx of mode `mode` of `name` (extent ext) at node ix
 * of the access `site` must lie in [0, ext). Decided here when the index's
 * range is known (it depends on the thread and constants only); otherwise an
 * obligation for the solver, checked like an integer assertion under the
 * current path, so an index past its mode is a violation and never an alias
 * of the next row. */
static void in_bounds(ag__ck *c, const ag_tile_node *site, const char *name, int mode,
                      const ag_expr *idx, const ag_expr *ext) {
  int64_t lo, hi, e;
  if (c->replay)
    return; /* a summary's replayed iteration: checked as its own instance */
  if (ag_expr_is_const(ext, &e) && !ag__xbounds(c, idx, &lo, &hi) && lo >= 0 && hi < e)
    return;
  const ag__bx *cond = ag__bcmp(c, AG_OP_LT, idx, ext);
  int v;
  if (ag__bis_const(cond, &v) && v)
    return;
  ag__oblig o;
  memset(&o, 0, sizeof o);
  o.k = OB_INT;
  o.at = site;
  o.path = c->path;
  o.cond = cond;
  o.bidx = idx;
  o.bext = ext;
  o.bmode = mode;
  o.bname = site->a && site->a->kind == AG_TN_NAME ? site->a->name : name ? name : "?";
  o.stmt = ag__ck_stmt(c, site);
  c->asserts.v[o.stmt].bounds = 1;
  o.nloops = (int)c->loops.n;
  o.loops = ag__ck_alloc(c, (size_t)(o.nloops ? o.nloops : 1) * sizeof *o.loops);
  ag__mcpy(o.loops, c->loops.v, (size_t)o.nloops * sizeof *o.loops);
  if (ag_vec_push(&c->obligs, o))
    ag__ck_oom(c);
}

/* Indexes a shared or register tile; returns an element (every mode fixed)
 * or a sub-tile (modes given as ':' or 'a:b' kept). */
static ag__value *index_local(ag__ck *c, const ag_tile_node *n, ag__tile *t) {
  int rank = ag_layout_rank(&t->layout);
  if (n->list.n > rank)
    ag__ck_error(c, n, "%d indices for tile '%s' of rank %d", n->list.n,
                 t->name ? t->name : "?", rank);
  const ag_expr *off = ag__xc(c, 0);
  ag_tuple **kshape = ag__ck_alloc(c, (size_t)rank * sizeof *kshape);
  ag_tuple **kstride = ag__ck_alloc(c, (size_t)rank * sizeof *kstride);
  int kept = 0;
  for (int i = 0; i < rank; i++) {
    ag_layout mode;
    if (ag_layout_mode(&c->lc, &t->layout, i, &mode))
      ag__ck_error(c, n, "cannot take mode %d of the tile: %s", i, ag_str_cstr(&c->lc.err));
    const ag_tile_node *ix = i < n->list.n ? n->list.v[i] : NULL;
    if (!ix || ix->kind == AG_TN_SLICE) {
      if (ix && (ix->a || ix->b)) {
        if (!mode.shape->is_leaf)
          ag__ck_error(c, ix, "a range 'a:b' needs a mode with a single extent");
        int64_t ext = mode.shape->value;
        int64_t lo = ix->a ? as_const(c, ix->a, eval(c, ix->a), "a range bound") : 0;
        int64_t hi = ix->b ? as_const(c, ix->b, eval(c, ix->b), "a range bound") : ext;
        if (lo < 0 || hi > ext || lo >= hi)
          ag__ck_error(c, ix, "range %lld:%lld is outside mode %d of extent %lld",
                       (long long)lo, (long long)hi, i, (long long)ext);
        off = ag__x(c, AG_X_ADD, off, ag__xc(c, lo * mode.stride->value));
        kshape[kept] = ag_tuple_leaf(&c->lc, hi - lo);
        kstride[kept] = ag_tuple_leaf(&c->lc, mode.stride->value);
        if (!kshape[kept] || !kstride[kept])
          ag__ck_oom(c);
      } else {
        kshape[kept] = mode.shape;
        kstride[kept] = mode.stride;
      }
      kept++;
      continue;
    }
    const ag_expr *idx = as_int(c, ix, eval(c, ix), "a tile index");
    int64_t iv, ext = ag_layout_size(&mode);
    if (ag_expr_is_const(idx, &iv) && (iv < 0 || iv >= ext))
      ag__ck_error(c, ix, "index %lld is out of range for mode %d of extent %lld",
                   (long long)iv, i, (long long)ext);
    if (t->sp == SP_SHARED)
      in_bounds(c, n, t->name, i, idx, ag__xc(c, ext));
    off = ag__x(c, AG_X_ADD, off, mode_offset(c, ix, &mode, idx));
  }
  int esz = ag__dt_size(t->dt);
  const ag_expr *byteoff = ag__x(c, AG_X_ADD, t->base, ag__x(c, AG_X_MUL, off, ag__xc(c, esz)));
  if (kept == 0) {
    ag__value *v = newv(c, V_ELEM);
    v->e.tile = t;
    if (t->sp == SP_REG) {
      int64_t b;
      if (!ag_expr_is_const(byteoff, &b))
        ag__ck_error(c, n,
                     "a register tile index must be a compile-time constant (registers are "
                     "not addressable by the thread index)");
      v->e.addr = byteoff;
    } else {
      v->e.addr = swizzled(c, t, byteoff);
    }
    return v;
  }
  ag__tile *s = tile_new(c);
  *s = *t;
  s->base = byteoff;
  ag_tuple *shape = ag_tuple_make(&c->lc, kept, kshape);
  ag_tuple *stride = ag_tuple_make(&c->lc, kept, kstride);
  if (!shape || !stride || ag_layout_make(&c->lc, shape, stride, &s->layout))
    ag__ck_oom(c);
  if (t->sp == SP_REG && !ag_expr_is_const(byteoff, NULL))
    ag__ck_error(c, n, "a register tile index must be a compile-time constant");
  ag__value *v = newv(c, V_TILE);
  v->t = s;
  return v;
}

/* Indexes a global view. */
static ag__value *index_global(ag__ck *c, const ag_tile_node *n, ag__tile *t) {
  const ag__gview *g = &t->g;
  const ag__param *p = &c->params.v[g->tensor];
  if (n->list.n > g->rank)
    ag__ck_error(c, n, "%d indices for '%s' of rank %d", n->list.n, t->name, g->rank);
  ag__tile *s = tile_new(c);
  *s = *t;
  ag__gview *h = &s->g;
  h->origin = ag__ck_alloc(c, (size_t)p->rank * sizeof *h->origin);
  ag__mcpy(h->origin, g->origin, (size_t)p->rank * sizeof *h->origin);
  h->lbase = g->lbase;
  int kept = 0;
  h->dims = ag__ck_alloc(c, (size_t)g->rank * sizeof *h->dims);
  h->tdim = ag__ck_alloc(c, (size_t)g->rank * sizeof *h->tdim);
  h->mult = ag__ck_alloc(c, (size_t)g->rank * sizeof *h->mult);
  h->lstride = ag__ck_alloc(c, (size_t)g->rank * sizeof *h->lstride);
  for (int i = 0; i < g->rank; i++) {
    const ag_tile_node *ix = i < n->list.n ? n->list.v[i] : NULL;
    if (!ix || ix->kind == AG_TN_SLICE) {
      const ag_expr *lo = ag__xc(c, 0), *ext = g->dims[i];
      if (ix && (ix->a || ix->b)) {
        if (ix->a)
          lo = as_int(c, ix->a, eval(c, ix->a), "a range bound");
        const ag_expr *hi = ix->b ? as_int(c, ix->b, eval(c, ix->b), "a range bound") : g->dims[i];
        ext = ag__x(c, AG_X_SUB, hi, lo);
      }
      if (g->linear) {
        h->lbase = ag__x(c, AG_X_ADD, h->lbase, ag__x(c, AG_X_MUL, lo, g->lstride[i]));
        h->lstride[kept] = g->lstride[i];
      } else {
        int k = g->tdim[i];
        h->origin[k] = ag__x(c, AG_X_ADD, h->origin[k], ag__x(c, AG_X_MUL, lo, g->mult[i]));
        h->tdim[kept] = k;
        h->mult[kept] = g->mult[i];
      }
      h->dims[kept] = ext;
      kept++;
      continue;
    }
    const ag_expr *idx = as_int(c, ix, eval(c, ix), "a tensor index");
    in_bounds(c, n, t->name, i, idx, g->dims[i]);
    if (g->linear) {
      h->lbase = ag__x(c, AG_X_ADD, h->lbase, ag__x(c, AG_X_MUL, idx, g->lstride[i]));
    } else {
      int k = g->tdim[i];
      h->origin[k] = ag__x(c, AG_X_ADD, h->origin[k], ag__x(c, AG_X_MUL, idx, g->mult[i]));
    }
  }
  h->rank = kept;
  if (kept == 0) {
    ag__value *v = newv(c, V_ELEM);
    v->e.tile = s;
    if (g->linear)
      v->e.gbyte = h->lbase;
    else
      v->e.tcoord = h->origin;
    return v;
  }
  ag__value *v = newv(c, V_TILE);
  v->t = s;
  return v;
}

/* ------------------------------------------------------- monomials (views) */
/* A product c * a1 * a2 * ... with a rational coefficient; x / k for a
 * constant k contributes 1/k. Used to match a view's dims against the
 * tensor's dims, assuming the divisions are exact (which the view's size
 * check then demands). */
typedef struct mono {
  int64_t num, den;
  int n;
  const ag_expr *atom[16];
  int ok;
} mono;

static int64_t gcd64(int64_t a, int64_t b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a ? a : 1;
}

static void mono_norm(mono *m) {
  int64_t g = gcd64(m->num, m->den);
  m->num /= g;
  m->den /= g;
}

static mono mono_of(const ag_expr *e) {
  mono m;
  memset(&m, 0, sizeof m);
  m.num = m.den = 1;
  m.ok = 1;
  int64_t v;
  if (ag_expr_is_const(e, &v)) {
    m.num = v;
    return m;
  }
  if (e->op == AG_X_MUL) {
    mono a = mono_of(e->a), b = mono_of(e->b);
    if (!a.ok || !b.ok || a.n + b.n > 16 || __builtin_mul_overflow(a.num, b.num, &m.num) ||
        __builtin_mul_overflow(a.den, b.den, &m.den)) {
      m.ok = 0;
      return m;
    }
    m.n = 0;
    for (int i = 0; i < a.n; i++) m.atom[m.n++] = a.atom[i];
    for (int i = 0; i < b.n; i++) m.atom[m.n++] = b.atom[i];
    mono_norm(&m);
    return m;
  }
  if (e->op == AG_X_DIV && ag_expr_is_const(e->b, &v) && v > 0) {
    m = mono_of(e->a);
    if (m.ok && !__builtin_mul_overflow(m.den, v, &m.den))
      mono_norm(&m);
    else
      m.ok = 0;
    return m;
  }
  m.atom[0] = e;
  m.n = 1;
  return m;
}

static int mono_eq(mono a, mono b) {
  if (!a.ok || !b.ok || a.n != b.n)
    return 0;
  if ((__int128)a.num * b.den != (__int128)b.num * a.den)
    return 0;
  int used[16] = {0};
  for (int i = 0; i < a.n; i++) {
    int found = 0;
    for (int j = 0; j < b.n && !found; j++)
      if (!used[j] && a.atom[i] == b.atom[j])
        used[j] = found = 1;
    if (!found)
      return 0;
  }
  return 1;
}

/* Every x / k inside e must be exact: an `assume x % m == 0` with k | m, or
 * x a constant multiple of k. Returns the first inexact division. */
static const ag_expr *inexact_div(ag__ck *c, const ag_expr *e) {
  if (e->op == AG_X_CONST || e->op == AG_X_SYM)
    return NULL;
  int64_t k;
  if (e->op == AG_X_DIV && ag_expr_is_const(e->b, &k) && k > 0) {
    int64_t xv;
    int exact = ag_expr_is_const(e->a, &xv) && xv % k == 0;
    for (size_t i = 0; i < c->assumes.n && !exact; i++) {
      const ag__bx *b = c->assumes.v[i];
      int64_t zero, m;
      if (b->k == BX_CMP && b->op == AG_OP_EQ && ag_expr_is_const(b->b, &zero) && zero == 0 &&
          b->a->op == AG_X_MOD && b->a->a == e->a && ag_expr_is_const(b->a->b, &m) && m % k == 0)
        exact = 1;
    }
    if (!exact)
      return e;
  }
  const ag_expr *r = inexact_div(c, e->a);
  return r ? r : inexact_div(c, e->b);
}

static const ag_expr *prod(ag__ck *c, const ag_expr **v, int n, const ag_expr *init) {
  const ag_expr *r = init;
  for (int i = 0; i < n; i++)
    r = ag__x(c, AG_X_MUL, r, v[i]);
  return r;
}

/* X.view(shape, dtype) for a tensor parameter's root view. */
static ag__value *view_global(ag__ck *c, const ag_tile_node *n, ag__tile *t, ag__value *shapev,
                              ag__dt dt) {
  const ag__param *p = &c->params.v[t->g.tensor];
  if (t->g.rank != p->rank || t->g.linear || t->dt != p->dt)
    ag__ck_error(c, n,
                 "view() applies to a tensor parameter itself; view the tensor first, then "
                 "index or slice the view");
  int m = shapev->k == V_TUPLE ? shapev->n : 1;
  if (m > 16)
    ag__ck_error(c, n, "a view has at most 16 dims");
  const ag_expr **vd = ag__ck_alloc(c, (size_t)m * sizeof *vd);
  for (int i = 0; i < m; i++) {
    ag__value *iv = shapev->k == V_TUPLE ? &shapev->items[i] : shapev;
    if (iv->k == V_TUPLE)
      ag__ck_error(c, n, "a global view's shape is a flat tuple of extents");
    vd[i] = as_int(c, n, iv, "a view extent");
  }
  int es = ag__dt_size(p->dt), vs = ag__dt_size(dt);
  /* memory safety: the view covers exactly the tensor's bytes */
  const ag_expr *tbytes = prod(c, p->dims, p->rank, ag__xc(c, es));
  const ag_expr *vbytes = prod(c, vd, m, ag__xc(c, vs));
  const ag_expr *bad = inexact_div(c, vbytes);
  if (!bad)
    bad = inexact_div(c, tbytes);
  if (bad) {
    ag_str s = AG_STR_INIT;
    ag__xprint(bad, &s);
    char txt[200];
    snprintf(txt, sizeof txt, "%s", ag_str_cstr(&s));
    ag_str_release(&s);
    ag__ck_error(c, n,
                 "view size is not provably the tensor's size: '%s' is exact only when the "
                 "division leaves no remainder; add an 'assume ... %% ... == 0'",
                 txt);
  }
  if (!mono_eq(mono_of(tbytes), mono_of(vbytes))) {
    ag_str a = AG_STR_INIT, b = AG_STR_INIT;
    ag__xprint(vbytes, &a);
    ag__xprint(tbytes, &b);
    char ta[200], tb[200];
    snprintf(ta, sizeof ta, "%s", ag_str_cstr(&a));
    snprintf(tb, sizeof tb, "%s", ag_str_cstr(&b));
    ag_str_release(&a);
    ag_str_release(&b);
    ag__ck_error(c, n,
                 "view of %s bytes does not cover tensor '%s' of %s bytes (view() must keep "
                 "the memory size)",
                 ta, p->name, tb);
  }
  ag__tile *s = tile_new(c);
  *s = *t;
  s->dt = dt;
  ag__gview *g = &s->g;
  g->rank = m;
  g->dims = vd;
  g->tdim = ag__ck_alloc(c, (size_t)m * sizeof *g->tdim);
  g->mult = ag__ck_alloc(c, (size_t)m * sizeof *g->mult);
  g->origin = ag__ck_alloc(c, (size_t)p->rank * sizeof *g->origin);
  for (int k = 0; k < p->rank; k++)
    g->origin[k] = ag__xc(c, 0);
  /* match view dims to tensor dims from the innermost side */
  int k = p->rank - 1, ok = 1;
  const ag_expr *used = ag__xc(c, vs);
  const ag_expr *ext = ag__x(c, AG_X_MUL, p->dims[k], ag__xc(c, es));
  for (int i = m - 1; i >= 0 && ok; i--) {
    while (k >= 0 && mono_eq(mono_of(ext), mono_of(ag__xc(c, 1))) && k > 0) {
      k--;
      ext = p->dims[k];
    }
    if (k < 0) {
      ok = 0;
      break;
    }
    g->tdim[i] = k;
    g->mult[i] = used;
    used = ag__x(c, AG_X_MUL, used, vd[i]);
    if (mono_eq(mono_of(used), mono_of(ext))) {
      k--;
      used = ag__xc(c, 1);
      if (k >= 0)
        ext = p->dims[k];
    }
  }
  int64_t one;
  if (ok && k >= 0) {
    /* leftover tensor dims must all be 1 */
    if (!(ag_expr_is_const(used, &one) && one == 1))
      ok = 0;
    for (int j = k; j >= 0 && ok; j--) {
      int64_t d;
      if (!(ag_expr_is_const(p->dims[j], &d) && d == 1))
        ok = 0;
    }
  }
  if (!ok) {
    /* fall back to linear byte addressing */
    g->linear = 1;
    g->lbase = ag__xc(c, 0);
    g->lstride = ag__ck_alloc(c, (size_t)m * sizeof *g->lstride);
    const ag_expr *st = ag__xc(c, vs);
    for (int i = m - 1; i >= 0; i--) {
      g->lstride[i] = st;
      st = ag__x(c, AG_X_MUL, st, vd[i]);
    }
  }
  ag__value *v = newv(c, V_TILE);
  v->t = s;
  return v;
}

/* t.view(shape_or_layout, dtype) on a shared or register tile. */
static ag__value *view_local(ag__ck *c, const ag_tile_node *n, ag__tile *t, ag__value *lv,
                             ag__dt dt, ag__value *swz) {
  if (!layout_compact(c, n, &t->layout))
    ag__ck_error(c, n,
                 "view() needs a tile whose elements are contiguous in memory; this tile is "
                 "a strided slice");
  ag_layout nl = layout_of(c, n, lv);
  int64_t old = ag_layout_size(&t->layout) * ag__dt_size(t->dt);
  int64_t new_ = ag_layout_cosize(&nl) * ag__dt_size(dt);
  if (old != new_)
    ag__ck_error(c, n,
                 "view of %lld bytes does not match the tile's %lld bytes (view() must keep "
                 "the memory size)",
                 (long long)new_, (long long)old);
  ag__tile *s = tile_new(c);
  *s = *t;
  s->dt = dt;
  s->layout = nl;
  if (swz) {
    /* reinterpret the bytes under another swizzle (in units of dt) */
    if (t->sp != SP_SHARED)
      ag__ck_error(c, n, "only shared tiles are swizzled");
    int64_t base;
    if (!ag_expr_is_const(t->base, &base))
      ag__ck_error(c, n, "a swizzled view needs a tile at a compile-time offset");
    s->swizzled = 1;
    s->swz = swz->swz;
    s->swz.m += log2i(ag__dt_size(dt));
    int64_t span = (int64_t)1 << (s->swz.b + s->swz.m + s->swz.s);
    if (base % span || new_ % span)
      ag__ck_error(c, n,
                   "a swizzled view must start and end on its %lld-byte swizzle period "
                   "(it starts at byte %lld and covers %lld bytes)",
                   (long long)span, (long long)base, (long long)new_);
  }
  if (s->swizzled && ag__dt_size(dt) > (1 << s->swz.m))
    ag__ck_error(c, n, "a %s element would straddle the tile's %d-byte swizzle unit",
                 ag__dt_name(dt), 1 << s->swz.m);
  ag__value *v = newv(c, V_TILE);
  v->t = s;
  return v;
}

/* --------------------------------------------------------------- memory */
/* A register tile's bytes, for operands: contiguous, base constant. */
static void reg_range(ag__ck *c, const ag_tile_node *n, const ag__value *v, const char *what,
                      int *buf, int64_t *base, int64_t *size, ag__dt *dt) {
  if (v->k == V_ELEM && v->e.tile->sp == SP_REG) {
    *buf = v->e.tile->buf;
    ag_expr_is_const(v->e.addr, base);
    *size = ag__dt_size(v->e.tile->dt);
    *dt = v->e.tile->dt;
    return;
  }
  if (v->k != V_TILE || v->t->sp != SP_REG)
    ag__ck_error(c, n, "%s must be a register tile (make_local), not %s", what,
                 v->k == V_TILE ? (v->t->sp == SP_SHARED ? "a shared tile" : "a global tile")
                                : kind_name(v->k));
  if (!layout_compact(c, n, &v->t->layout))
    ag__ck_error(c, n, "%s must be contiguous registers, not a strided slice", what);
  *buf = v->t->buf;
  if (!ag_expr_is_const(v->t->base, base))
    ag__ck_error(c, n, "%s must sit at a compile-time register offset", what);
  *size = ag_layout_size(&v->t->layout) * ag__dt_size(v->t->dt);
  *dt = v->t->dt;
}

/* e / k when every term of e is visibly a multiple of k; NULL otherwise. */
static const ag_expr *xdiv_exact(ag__ck *c, const ag_expr *e, int64_t k) {
  int64_t v;
  if (k == 1)
    return e;
  if (ag_expr_is_const(e, &v))
    return v % k == 0 ? ag__xc(c, v / k) : NULL;
  if (e->op == AG_X_ADD || e->op == AG_X_SUB) {
    const ag_expr *a = xdiv_exact(c, e->a, k), *b = a ? xdiv_exact(c, e->b, k) : NULL;
    return b ? ag__x(c, e->op, a, b) : NULL;
  }
  if (e->op == AG_X_MUL) {
    const ag_expr *a = xdiv_exact(c, e->a, k);
    if (a)
      return ag__x(c, AG_X_MUL, a, e->b);
    const ag_expr *b = xdiv_exact(c, e->b, k);
    return b ? ag__x(c, AG_X_MUL, e->a, b) : NULL;
  }
  if (e->op == AG_X_SHL && ag_expr_is_const(e->b, &v) && v >= 0 && v < 32 &&
      ((int64_t)1 << v) % k == 0)
    return ag__x(c, AG_X_MUL, e->a, ag__xc(c, ((int64_t)1 << v) / k));
  return NULL;
}

/* The tag function of tensor p applied to element coordinates. */
static const ag__tag *apply_tagfn(ag__ck *c, const ag_tile_node *at, ag__tagfn *fn,
                                  const ag_expr **coord) {
  ag__scope *saved = c->scope;
  ag__scope *s = scope_new(c, fn->env);
  for (int i = 0; i < fn->rank; i++)
    bind_in(c, s, fn->vars[i], vint(c, coord[i]));
  c->scope = s;
  if (fn->active) /* its body reads its own tensor's tags, directly or through others */
    ag__ck_error(c, fn->body,
                 "tag function%s%s%s of '%s' depends on the tags of '%s' itself (through "
                 "tag(...)); compute the tuple from the element's coordinates",
                 fn->name ? " '" : "", fn->name ? fn->name : "", fn->name ? "'" : "",
                 fn->target, fn->target);
  fn->active = 1;
  ag__value *v = eval(c, fn->body);
  fn->active = 0;
  c->scope = saved;
  const ag__tag *t;
  if (v->k == V_TAGV) {
    if (!v->tv.literal || v->tv.proj >= 0)
      ag__ck_error(c, fn->body, "a tag function returns a tuple of integers, 'top' or 'bot'");
    t = v->tv.tag;
  } else {
    int nc = v->k == V_TUPLE ? v->n : 1;
    const ag_expr **comp = ag__ck_alloc(c, (size_t)nc * sizeof *comp);
    for (int i = 0; i < nc; i++)
      comp[i] = as_int(c, fn->body, v->k == V_TUPLE ? &v->items[i] : v, "a tag component");
    const ag_expr **cc = ag__ck_alloc(c, (size_t)fn->rank * sizeof *cc);
    ag__mcpy(cc, coord, (size_t)fn->rank * sizeof *cc);
    t = ag__tag_tup(c, nc, comp, fn, cc);
  }
  (void)at;
  return t;
}

static ag__data load(ag__ck *c, const ag_tile_node *at, const ag__elem *e) {
  const ag__tile *t = e->tile;
  int w = ag__dt_size(t->dt);
  ag__data d = data_new(c, t->dt, w);
  switch (t->sp) {
  case SP_REG: {
    int64_t off;
    ag_expr_is_const(e->addr, &off);
    wg_pending_hit(c, at, t->buf, off, w, "reads");
    const ag__rbuf *r = &c->rbufs.v[t->buf];
    for (int j = 0; j < w; j++)
      d.tags[j] = r->bytes[off + j];
    break;
  }
  case SP_SHARED:
    for (int j = 0; j < w; j++)
      d.tags[j] = ag__tag_shr(c, t->buf, ag__x(c, AG_X_ADD, e->addr, ag__xc(c, j)), at);
    ag__race_read(c, at, t->buf, e->addr, w, c->path);
    break;
  case SP_GLOBAL: {
    const ag__param *p = &c->params.v[t->g.tensor];
    if (!p->tagfn)
      break; /* no tag function: bottom */
    int es = ag__dt_size(p->dt), r = p->rank;
    const ag_expr **co = ag__ck_alloc(c, (size_t)r * sizeof *co);
    if (t->g.linear) {
      /* element index and unravel, row-major */
      c->params.v[t->g.tensor].linear_used = 1;
      for (int j = 0; j < w; j++) {
        const ag_expr *el = ag__x(c, AG_X_DIV, ag__x(c, AG_X_ADD, e->gbyte, ag__xc(c, j)),
                                  ag__xc(c, es));
        for (int k = r - 1; k >= 0; k--) {
          co[k] = k ? ag__x(c, AG_X_MOD, el, p->dims[k]) : el;
          el = ag__x(c, AG_X_DIV, el, p->dims[k]);
        }
        d.tags[j] = apply_tagfn(c, at, p->tagfn, co);
      }
      break;
    }
    for (int k = 0; k < r - 1; k++)
      co[k] = e->tcoord[k];
    const ag_expr *b = e->tcoord[r - 1]; /* bytes along the innermost dim */
    const ag_expr *b_el = xdiv_exact(c, b, es);
    const ag__tag *prev = NULL;
    int64_t prev_el = -1;
    for (int j = 0; j < w; j++) {
      const ag_expr *el;
      if (b_el)
        el = ag__x(c, AG_X_ADD, b_el, ag__xc(c, j / es));
      else
        el = ag__x(c, AG_X_DIV, ag__x(c, AG_X_ADD, b, ag__xc(c, j)), ag__xc(c, es));
      if (prev && b_el && j / es == prev_el) {
        d.tags[j] = prev;
        continue;
      }
      co[r - 1] = el;
      d.tags[j] = prev = apply_tagfn(c, at, p->tagfn, co);
      prev_el = j / es;
    }
    if (b_el && w > es) {
      /* the same tags as one parametric tag of the byte index */
      const ag_expr *byte = ag_expr_sym(&c->lc, "@byte");
      if (!byte)
        ag__ck_oom(c);
      co[r - 1] = ag__x(c, AG_X_ADD, b_el, ag__x(c, AG_X_DIV, byte, ag__xc(c, es)));
      d.ptag = apply_tagfn(c, at, p->tagfn, co);
      d.pgran = es;
    }
    break;
  }
  }
  return d;
}

static void tst_pending_hit(ag__ck *c, const ag_tile_node *at, int buf, int64_t lo, int64_t hi);

static int access_width_ok(int w) { return w == 1 || w == 2 || w == 4 || w == 8 || w == 16; }

static void shared_write(ag__ck *c, const ag_tile_node *at, const ag_expr *addr, int buf,
                         const ag__data *d, int group) {
  ag__wrec w;
  memset(&w, 0, sizeof w);
  w.buf = buf;
  w.addr = addr;
  w.width = d->n;
  if (d->tags == c->tma_wide) {
    w.tags = c->tma_wide; /* shared and read-only: a TMA box's bytes (do_tma_load) */
  } else {
    w.tags = ag__ck_alloc(c, (size_t)d->n * sizeof *w.tags);
    ag__mcpy(w.tags, d->tags, (size_t)d->n * sizeof *w.tags);
  }
  w.ptag = d->ptag;
  w.pgran = d->pgran;
  w.guard = c->path;
  w.pc = c->pc;
  w.epoch = c->epoch;
  w.group = group;
  if (group < 0) {
    w.done_pc = c->pc;
    w.vis_epoch = c->epoch + 1;
  } else {
    w.done_pc = INT64_MAX;
    w.vis_epoch = INT_MAX;
  }
  w.at = at;
  w.mbar = c->next_mbar;
  w.mphase = c->next_mphase;
  c->next_mbar = 0;
  int64_t lo, hi;
  if (ag__xbounds(c, addr, &lo, &hi) == 0) {
    w.lo = lo;
    w.hi = hi + d->n;
  } else {
    w.lo = 0;
    w.hi = c->sbufs.v[buf].size;
  }
  if (w.lo < 0 || w.hi > c->sbufs.v[buf].size) {
    /* bounds come from the layout, so this only happens for manual indexing */
    if (w.hi > c->sbufs.v[buf].size && w.lo >= c->sbufs.v[buf].size)
      ag__ck_error(c, at, "write to shared '%s' at bytes [%lld, %lld) is outside its %lld bytes",
                   c->sbufs.v[buf].name, (long long)w.lo, (long long)w.hi,
                   (long long)c->sbufs.v[buf].size);
  }
  int64_t max_writes = c->opts->max_writes ? c->opts->max_writes : AG_TILE_MAX_WRITES;
  if ((int64_t)c->wrecs.n >= max_writes)
    ag__ck_error(c, at,
                 "more than %lld shared-memory writes after unrolling (each store or cp.async "
                 "instance is one, and each read is checked against all of them); make the "
                 "compile-time sizes smaller for checking or raise the limit with --max-writes",
                 (long long)max_writes);
  tst_pending_hit(c, at, buf, w.lo, w.hi);
  if (ag_vec_push(&c->wrecs, w))
    ag__ck_oom(c);
  ag__race_write(c, &c->wrecs.v[c->wrecs.n - 1]);
}

static void store(ag__ck *c, const ag_tile_node *at, const ag__elem *e, const ag__data *d) {
  const ag__tile *t = e->tile;
  int w = ag__dt_size(t->dt);
  if (d->n != w)
    ag__ck_error(c, at,
                 "cannot store %d-byte %s data into a %d-byte %s element (sizes must match; "
                 "use view() to reinterpret)",
                 d->n, ag__dt_name(d->dt), w, ag__dt_name(t->dt));
  switch (t->sp) {
  case SP_REG: {
    int64_t off;
    ag_expr_is_const(e->addr, &off);
    wg_pending_hit(c, at, t->buf, off, w, "writes");
    ag__rbuf *r = &c->rbufs.v[t->buf];
    for (int j = 0; j < w; j++)
      r->bytes[off + j] = d->tags[j];
    break;
  }
  case SP_SHARED:
    if (!access_width_ok(w))
      ag__ck_error(c, at, "a shared-memory store moves 1, 2, 4, 8 or 16 bytes, not %d", w);
    shared_write(c, at, e->addr, t->buf, d, -1);
    break;
  case SP_GLOBAL:
    if (!access_width_ok(w))
      ag__ck_error(c, at, "a global store moves 1, 2, 4, 8 or 16 bytes, not %d", w);
    break; /* global writes carry no tags */
  }
}

/* Converts a value to data of `dt` (n bytes): loads elements, turns
 * constants into bottom-tagged data. */
static ag__data to_data(ag__ck *c, const ag_tile_node *n, ag__value *v, ag__dt dt) {
  switch (v->k) {
  case V_DATA: return v->d;
  case V_ELEM: {
    if (v->e.tile->sp != SP_REG && ag__dt_size(v->e.tile->dt) > 16)
      ag__ck_error(c, n, "a memory access moves at most 16 bytes");
    if (v->e.tile->sp != SP_REG && !access_width_ok(ag__dt_size(v->e.tile->dt)))
      ag__ck_error(c, n, "a memory access moves 1, 2, 4, 8 or 16 bytes, not %d",
                   ag__dt_size(v->e.tile->dt));
    return load(c, n, &v->e);
  }
  case V_INT:
  case V_FLOAT:
  case V_BOOL:
    if (dt == DT_NONE)
      ag__ck_error(c, n, "the type of this constant is unknown here");
    if (v->k == V_FLOAT && !ag__dt_is_float(dt) && v->f != floor(v->f))
      ag__ck_error(c, n, "the constant %g is not an integer, so it cannot be %s data", v->f,
                   ag__dt_name(dt));
    return data_new(c, dt, ag__dt_size(dt));
  case V_TILE:
    if (v->t->sp == SP_REG && ag_layout_size(&v->t->layout) == 1) {
      ag__elem e = {v->t, v->t->base, NULL, NULL};
      return load(c, n, &e);
    }
    ag__ck_error(c, n, "expected a value or a tile element, not a whole tile (index it)");
  default:
    ag__ck_error(c, n, "expected a data value, not %s", kind_name(v->k));
  }
}

static ag__dt data_dt(ag__value *v) {
  if (v->k == V_DATA)
    return v->d.dt;
  if (v->k == V_ELEM)
    return v->e.tile->dt;
  return DT_NONE;
}

static int is_dataish(ag__value *v) { return v->k == V_DATA || v->k == V_ELEM || v->k == V_FLOAT; }

/* Elementwise arithmetic: the result's tag is the join of the operands'. */
static ag__value *data_arith(ag__ck *c, const ag_tile_node *n, ag__value **ops, int nops) {
  ag__dt dt = DT_NONE;
  for (int i = 0; i < nops; i++) {
    ag__dt d = data_dt(ops[i]);
    if (d == DT_NONE)
      continue;
    if (dt != DT_NONE && d != dt)
      ag__ck_error(c, n, "operands have different types (%s and %s); convert with cvt()",
                   ag__dt_name(dt), ag__dt_name(d));
    dt = d;
  }
  if (dt == DT_NONE)
    ag__ck_error(c, n, "arithmetic on constants only; give one operand a type");
  if (ag__dt_size(dt) > 8)
    ag__ck_error(c, n,
                 "arithmetic needs scalar elements; %s is a vector type (view the tile with an "
                 "element type such as bf16)",
                 ag__dt_name(dt));
  const ag__tag *t = ag__tag_bot(c);
  for (int i = 0; i < nops; i++) {
    ag__data d = to_data(c, n, ops[i], dt);
    t = ag__tag_join(c, t, elem_tag(c, &d, 0, d.n));
  }
  ag__value *v = newv(c, V_DATA);
  v->d = data_fill(c, dt, ag__dt_size(dt), t);
  return v;
}

/* -------------------------------------------------------------- builtins */

static const ag_tile_node *arg(ag__ck *c, const ag_tile_node *call, int i, const char *name,
                               int required) {
  int pos = 0;
  for (int k = 0; k < call->list.n; k++) {
    const ag_tile_node *a = call->list.v[k];
    if (a->kind == AG_TN_KWARG) {
      if (name && strcmp(a->name, name) == 0)
        return a->a;
    } else if (pos++ == i) {
      return a;
    }
  }
  if (required)
    ag__ck_error(c, call, "missing argument %d ('%s')", i + 1, name ? name : "?");
  return NULL;
}

static void nargs(ag__ck *c, const ag_tile_node *call, int lo, int hi, const char *fname) {
  int n = call->list.n;
  if (n < lo || n > hi) {
    if (lo == hi)
      ag__ck_error(c, call, "%s takes %d argument%s, not %d", fname, lo, lo == 1 ? "" : "s", n);
    ag__ck_error(c, call, "%s takes %d to %d arguments, not %d", fname, lo, hi, n);
  }
}

static ag__dt as_dtype(ag__ck *c, const ag_tile_node *n) {
  ag__value *v = eval(c, n);
  if (v->k != V_DTYPE)
    ag__ck_error(c, n, "expected a data type (bf16, f16, f32, u32, u64, u128, ...), not %s",
                 kind_name(v->k));
  return v->dt;
}

static ag__value *make_local(ag__ck *c, const ag_tile_node *n) {
  nargs(c, n, 2, 2, "make_local(shape, dtype)");
  ag_layout l = layout_of(c, n, eval(c, n->list.v[0]));
  ag__dt dt = as_dtype(c, n->list.v[1]);
  int64_t bytes = ag_layout_cosize(&l) * ag__dt_size(dt);
  if (bytes > 64 * 1024)
    ag__ck_error(c, n, "a register tile of %lld bytes is larger than a thread's registers",
                 (long long)bytes);
  ag__rbuf r;
  r.name = NULL;
  r.size = bytes;
  r.bytes = ag__ck_alloc(c, (size_t)bytes * sizeof *r.bytes);
  for (int64_t i = 0; i < bytes; i++)
    r.bytes[i] = ag__tag_bot(c);
  if (ag_vec_push(&c->rbufs, r))
    ag__ck_oom(c);
  return buffer_value(c, tile_new(c), SP_REG, dt, (int)c->rbufs.n - 1, l);
}

static ag__value *make_shared(ag__ck *c, const ag_tile_node *n) {
  nargs(c, n, 2, 3, "make_shared(shape, dtype[, swizzle])");
  if (c->symbolic_if || c->uniform_if)
    ag__ck_error(c, n, "make_shared inside a thread-dependent or undecided 'if'");
  if (c->nested)
    ag__ck_error(c, n,
                 "make_shared inside a loop or an 'if' on a run-time condition: shared memory "
                 "is allocated once per block (the lowering needs it at the kernel's top "
                 "level); allocate the tile before the loop or the 'if' (one stage per "
                 "iteration: make_shared((stages, ...), dtype) indexed by the loop)");
  ag_layout l = layout_of(c, n, eval(c, arg(c, n, 0, "shape", 1)));
  ag__dt dt = as_dtype(c, arg(c, n, 1, "dtype", 1));
  ag__tile *t = tile_new(c);
  const ag_tile_node *sn = arg(c, n, 2, "swizzle", 0);
  if (sn) {
    ag__value *sv = eval(c, sn);
    if (sv->k != V_SWIZZLE)
      ag__ck_error(c, sn, "expected swizzle(B, M, S), not %s", kind_name(sv->k));
    t->swizzled = 1;
    t->swz = sv->swz;
    t->swz.m += log2i(ag__dt_size(dt)); /* element units to bytes */
  }
  int64_t bytes = ag_layout_cosize(&l) * ag__dt_size(dt);
  if (t->swizzled) {
    int64_t span = (int64_t)1 << (t->swz.b + t->swz.m + t->swz.s);
    if (bytes % span)
      ag__ck_error(c, n, "a swizzled tile must span whole %lld-byte swizzle periods",
                   (long long)span);
  }
  int64_t al = ag__tile_uses_tma(c->kernel) ? AG__TMA_SMEM_ALIGN : 128;
  c->smem_top = (c->smem_top + al - 1) / al * al;
  if (c->smem_top + bytes > 227 * 1024)
    ag__ck_error(c, n, "shared memory use %lld bytes exceeds the 227 KiB a block may have",
                 (long long)(c->smem_top + bytes));
  c->smem_top += bytes;
  ag__sbuf sb = {NULL, bytes};
  if (ag_vec_push(&c->sbufs, sb))
    ag__ck_oom(c);
  return buffer_value(c, t, SP_SHARED, dt, (int)c->sbufs.n - 1, l);
}

static ag__value *tag_of(ag__ck *c, const ag_tile_node *n) {
  nargs(c, n, 1, 1, "tag(x)");
  c->ghost++; /* an observation: no read for the race check */
  ag__value *x = eval(c, n->list.v[0]);
  ag__data d;
  if (x->k == V_TILE && x->t->sp == SP_REG && ag_layout_size(&x->t->layout) == 1) {
    ag__value *e = newv(c, V_ELEM);
    e->e.tile = x->t;
    e->e.addr = x->t->base;
    d = load(c, n, &e->e);
  } else if (x->k == V_ELEM || x->k == V_DATA) {
    d = to_data(c, n, x, DT_NONE);
  } else {
    ag__ck_error(c, n, "tag() takes a tile element or a data value, not %s", kind_name(x->k));
  }
  c->ghost--;
  ag__value *v = newv(c, V_TAGV);
  v->tv.tag = elem_tag(c, &d, 0, d.n);
  v->tv.proj = -1;
  return v;
}

static ag__value *intrin_coord(ag__ck *c, const ag_tile_node *n, ag__value *op) {
  nargs(c, n, 2, 2, "an operand layout (lane, value)");
  const ag__intrin *in = op->in;
  const char *atom = !strcmp(op->opname, "a") ? in->atom_a
                     : !strcmp(op->opname, "b") ? in->atom_b
                                                : in->atom_c;
  ag_layout tv;
  ag_atom_info info;
  if (ag_atom_layout(&c->lc, atom, &tv, &info))
    ag__ck_error(c, n, "no layout for '%s': %s", atom, ag_str_cstr(&c->lc.err));
  const ag_expr *lane = as_int(c, n->list.v[0], eval(c, n->list.v[0]), "a lane");
  const ag_expr *val = as_int(c, n->list.v[1], eval(c, n->list.v[1]), "a value index");
  int64_t vv;
  if (ag_expr_is_const(val, &vv) && (vv < 0 || vv >= info.values))
    ag__ck_error(c, n, "value index %lld is out of range: '%s' has %lld values per thread",
                 (long long)vv, atom, (long long)info.values);
  ag_xtuple kids[2] = {{1, lane, 0, NULL}, {1, val, 0, NULL}};
  ag_xtuple *kp[2] = {&kids[0], &kids[1]};
  ag_xtuple co = {0, NULL, 2, kp};
  const ag_expr *off;
  if (ag_layout_eval_coord_x(&c->lc, &tv, &co, &off))
    ag__ck_error(c, n, "cannot evaluate '%s': %s", atom, ag_str_cstr(&c->lc.err));
  ag__value *v = newv(c, V_TUPLE);
  v->n = 2;
  v->items = ag__ck_alloc(c, 2 * sizeof *v->items);
  v->items[0] = *vint(c, ag__x(c, AG_X_MOD, off, ag__xc(c, info.rows)));
  v->items[1] = *vint(c, ag__x(c, AG_X_DIV, off, ag__xc(c, info.rows)));
  return v;
}

/* -------------------------------------------------------------- intrinsics */
static void need_uniform(ag__ck *c, const ag_tile_node *n, const char *what) {
  if (c->symbolic_if)
    ag__ck_error(c, n,
                 "%s inside a thread-dependent 'if' (it must be reached by every thread of "
                 "the block or warp together)",
                 what);
}

/* A barrier, a cp.async group boundary or wait: the interpreter keeps one
 * timeline for the block, so these cannot be under an 'if' it could not
 * decide either. */
static void need_block(ag__ck *c, const ag_tile_node *n, const char *what) {
  need_uniform(c, n, what);
  if (c->uniform_if)
    ag__ck_error(c, n,
                 "%s inside an 'if' whose condition the checker cannot decide from the "
                 "assumptions (it depends on problem sizes or a summarized loop's iteration); "
                 "move it out of the 'if' or add an 'assume' that decides the condition",
                 what);
}

static void do_mma(ag__ck *c, const ag_tile_node *n, const ag__intrin *in) {
  nargs(c, n, 4, 4, "mma_m16n8k16(d, a, b, c)");
  need_uniform(c, n, in->name);
  int buf[4];
  int64_t base[4], size[4];
  ag__dt dt[4];
  static const int64_t want[4] = {16, 16, 8, 16};
  for (int i = 0; i < 4; i++) {
    ag__value *v = eval(c, n->list.v[i]);
    reg_range(c, n->list.v[i], v, in->opnames[i], &buf[i], &base[i], &size[i], &dt[i]);
    if (size[i] != want[i])
      ag__ck_error(c, n->list.v[i], "operand %s of %s is %lld bytes; it must be %lld (%s)",
                   in->opnames[i], in->name, (long long)size[i], (long long)want[i],
                   i == 1 ? "8 bf16/f16 values" : i == 2 ? "4 bf16/f16 values" : "4 f32 values");
  }
  if ((dt[1] != DT_BF16 && dt[1] != DT_F16) || dt[2] != dt[1])
    ag__ck_error(c, n,
                 "operands a and b of %s must both be bf16 or both f16 tiles (got %s and %s); "
                 "view them with .view((8,), bf16)",
                 in->name, ag__dt_name(dt[1]), ag__dt_name(dt[2]));
  if (dt[0] != DT_F32 || dt[3] != DT_F32)
    ag__ck_error(c, n, "operands d and c of %s must be f32 tiles", in->name);
  /* D takes C's tags, register by register */
  const ag__tag *tmp[16];
  for (int j = 0; j < 16; j++)
    tmp[j] = c->rbufs.v[buf[3]].bytes[base[3] + j];
  for (int j = 0; j < 16; j++)
    c->rbufs.v[buf[0]].bytes[base[0] + j] = tmp[j];
}

static void do_ldmatrix(ag__ck *c, const ag_tile_node *n, const ag__intrin *in) {
  nargs(c, n, 2, 2, "ldmatrix(dst, src)");
  need_uniform(c, n, in->name);
  ag__value *dv = eval(c, n->list.v[0]);
  int buf;
  int64_t base, size;
  ag__dt dt;
  reg_range(c, n->list.v[0], dv, "the destination", &buf, &base, &size, &dt);
  if (size != 4 * in->num)
    ag__ck_error(c, n->list.v[0], "%s writes %d bytes (%d 32-bit registers); the destination "
                 "has %lld",
                 in->name, 4 * in->num, in->num, (long long)size);
  ag__value *sv = eval(c, n->list.v[1]);
  if (sv->k != V_ELEM || sv->e.tile->sp != SP_SHARED)
    ag__ck_error(c, n->list.v[1],
                 "the source of %s is this thread's row: a shared tile element such as "
                 "sA[row, chunk]",
                 in->name);
  const ag__tile *st = sv->e.tile;
  if (st->swizzled && st->swz.m < 4)
    ag__ck_error(c, n->list.v[1], "%s reads 16-byte rows, but the tile's swizzle moves "
                 "%d-byte units",
                 in->name, 1 << st->swz.m);
  ag_layout dtv;
  ag_diags tmp;
  ag_diags_init(&tmp);
  if (ag_layout_parse(&c->lc, in->dst_tv, &tmp, &dtv)) {
    ag_diags_release(&tmp);
    ag__ck_error(c, n, "internal: bad layout for %s", in->name);
  }
  ag_diags_release(&tmp);
  int64_t rows = 8 * in->num;
  const ag_expr *lane = ag__x(c, AG_X_MOD, c->tid, ag__xc(c, 32));
  const ag_expr *warp0 = ag__x(c, AG_X_SUB, c->tid, lane);
  c->pc++;
  /* lane l < 8 * num gives the address of row l: the warp reads 16 bytes there */
  const ag__bx *rows_given =
      in->num < 4 ? ag__bcmp(c, AG_OP_LT, lane, ag__xc(c, 8 * in->num)) : NULL;
  ag__race_read(c, n, st->buf, sv->e.addr, 16,
                rows_given ? ag__band(c, c->path, rows_given) : c->path);
  for (int v = 0; v < 2 * in->num; v++) {
    ag_xtuple kids[2] = {{1, lane, 0, NULL}, {1, ag__xc(c, v), 0, NULL}};
    ag_xtuple *kp[2] = {&kids[0], &kids[1]};
    ag_xtuple co = {0, NULL, 2, kp};
    const ag_expr *off;
    if (ag_layout_eval_coord_x(&c->lc, &dtv, &co, &off))
      ag__ck_error(c, n, "internal: cannot evaluate the layout of %s", in->name);
    const ag_expr *row = ag__x(c, AG_X_MOD, off, ag__xc(c, rows));
    const ag_expr *col = ag__x(c, AG_X_DIV, off, ag__xc(c, rows));
    const ag_expr *provider = ag__x(c, AG_X_ADD, warp0, row);
    const ag_expr *addr = ag__xsubst(c, sv->e.addr, c->tid, provider);
    const ag_expr *row_start = ag__x(c, AG_X_ADD, addr, ag__x(c, AG_X_MUL, col, ag__xc(c, 2)));
    for (int j = 0; j < 2; j++) {
      const ag_expr *a = ag__x(c, AG_X_ADD, row_start, ag__xc(c, j));
      c->rbufs.v[buf].bytes[base + 2 * v + j] = ag__tag_shr(c, st->buf, a, n);
    }
  }
}

static void do_cp_async(ag__ck *c, const ag_tile_node *n, const ag__intrin *in) {
  nargs(c, n, 2, 2, "cp_async(dst, src)");
  ag__value *dv = eval(c, n->list.v[0]);
  ag__value *sv = eval(c, n->list.v[1]);
  if (dv->k != V_ELEM || dv->e.tile->sp != SP_SHARED)
    ag__ck_error(c, n->list.v[0], "the destination of cp_async is a shared tile element");
  if (sv->k != V_ELEM || sv->e.tile->sp != SP_GLOBAL)
    ag__ck_error(c, n->list.v[1], "the source of cp_async is a global tensor element");
  int w = ag__dt_size(dv->e.tile->dt);
  if (w != ag__dt_size(sv->e.tile->dt))
    ag__ck_error(c, n, "cp_async copies between elements of the same size (%d and %d bytes)", w,
                 ag__dt_size(sv->e.tile->dt));
  if (!(w == 4 || w == 8 || w == 16))
    ag__ck_error(c, n, "cp_async copies 4, 8 or 16 bytes, not %d (view the tiles as u32, u64 "
                 "or u128)",
                 w);
  ag__data d = load(c, n, &sv->e);
  c->pc++;
  shared_write(c, n, dv->e.addr, dv->e.tile->buf, &d, c->ngroups);
  c->group_open++;
}

static void do_wait(ag__ck *c, const ag_tile_node *n) {
  nargs(c, n, 1, 1, "cp_async_wait(n)");
  need_block(c, n, "cp_async_wait");
  int64_t k = as_const(c, n->list.v[0], eval(c, n->list.v[0]), "the number of pending groups");
  if (k < 0)
    ag__ck_error(c, n, "cp_async_wait needs a count >= 0");
  c->pc++;
  for (size_t i = 0; i < c->wrecs.n; i++) {
    ag__wrec *w = &c->wrecs.v[i];
    if (w->group >= 0 && w->group < c->ngroups - k && w->done_pc == INT64_MAX) {
      w->done_pc = c->pc;
      w->vis_epoch = c->epoch + 1;
    }
  }
}

static void do_reset(ag__ck *c, const ag_tile_node *n) {
  nargs(c, n, 1, 1, "reset(tile)");
  /* a role of a warp-specialized kernel resets the stage it refills: the
   * bytes lose their tags at that point of the interleaving (a reader of
   * the other role after it sees the refill, unsettled until it waits) */
  if (c->roles)
    need_warpgroup(c, n, "reset");
  else
    need_uniform(c, n, "reset");
  ag__value *v = eval(c, n->list.v[0]);
  if (v->k != V_TILE || v->t->sp != SP_SHARED)
    ag__ck_error(c, n, "reset() takes a shared tile (registers are simply overwritten)");
  ag__tile *t = v->t;
  int64_t base;
  if (!ag_expr_is_const(t->base, &base))
    ag__ck_error(c, n, "reset() needs a tile at a compile-time offset");
  int64_t cnt;
  int64_t *o = layout_offsets(c, n, &t->layout, &cnt);
  int esz = ag__dt_size(t->dt);
  int64_t lo = INT64_MAX, hi = -1;
  for (int64_t i = 0; i < cnt; i++) {
    int64_t b = base + o[i] * esz;
    if (t->swizzled)
      b = ag_swizzle_apply(t->swz, b);
    if (b < lo) lo = b;
    if (b + esz > hi) hi = b + esz;
  }
  if ((hi - lo) != cnt * esz)
    ag__ck_error(c, n, "reset() needs a tile that covers one contiguous range of bytes");
  c->pc++;
  /* under an undecided uniform 'if' the reset happens when its path holds */
  ag__reset r = {t->buf, c->pc, lo, hi, c->uniform_if ? c->path : NULL};
  if (ag_vec_push(&c->resets, r))
    ag__ck_oom(c);
}

static void do_fill(ag__ck *c, const ag_tile_node *n) {
  nargs(c, n, 2, 2, "fill(tile, value)");
  ag__value *tv = eval(c, n->list.v[0]);
  int buf;
  int64_t base, size;
  ag__dt dt;
  reg_range(c, n->list.v[0], tv, "fill's tile", &buf, &base, &size, &dt);
  ag__value *val = eval(c, n->list.v[1]);
  ag__data d = to_data(c, n, val, dt); /* a constant: bottom (a float one must fit dt) */
  wg_pending_hit(c, n, buf, base, (int)size, "fill() writes");
  const ag__tag *t = elem_tag(c, &d, 0, d.n);
  for (int64_t j = 0; j < size; j++)
    c->rbufs.v[buf].bytes[base + j] = t;
}

/* ------------------------------------------------------------- mbarriers */
static int bx_depends(const ag__bx *b, const char *sym);
/* docs/check.md, "mbarriers". The interpreter keeps one timeline for the
 * block (statements run in program order for every thread at once), so an
 * mbarrier's phases are counted as the statements arrive on it; bulk copies
 * land at a time nobody knows, so a phase whose arrivals are complete waits
 * for them (in flight) and a wait that may return before it does sees only
 * the phases below it. */

/* The part of a guard that depends on the thread: conjuncts that do not are
 * the same for the whole block (a summarized iteration's facts, an undecided
 * uniform condition), so a statement under them runs in all threads or none */
static const ag__bx *thread_part(ag__ck *c, const ag__bx *b) {
  if (!b || !bx_depends(b, "tid"))
    return NULL;
  if (b->k == BX_AND) {
    const ag__bx *x = thread_part(c, b->x), *y = thread_part(c, b->y);
    return !x ? y : !y ? x : ag__band(c, x, y);
  }
  return b;
}

/* How many threads of the block take the statement at the current path. */
static int64_t path_threads(ag__ck *c, const ag_tile_node *n, const char *what) {
  const ag__bx *g = thread_part(c, c->path);
  if (!g)
    return c->nthreads;
  int64_t cnt = 0;
  for (int64_t t = 0; t < c->nthreads; t++) {
    int v = ag__beval_tid(g, t);
    if (v < 0)
      ag__ck_error(c, n,
                   "%s under a condition the checker cannot count the threads of (it mixes "
                   "the thread index with other values); write the condition on the thread "
                   "index alone (if threadIdx.x == 0:)",
                   what);
    cnt += v;
  }
  return cnt;
}

/* An mbarrier address that is not a constant expression but one constant
 * under the assumptions and the facts of a summarized iteration (the last
 * stage of a k loop, `empty[(K / BK - 1) % S]` with K a multiple of S * BK):
 * the 8-byte element of the buffer (of `size` bytes) it always equals; -1
 * when none (or more than 64 elements to try). */
static int mbar_addr_decided(ag__ck *c, const ag_expr *x, int64_t size, int64_t *addr) {
  if (size / 8 > 64)
    return -1;
  for (int64_t a = 0; a + 8 <= size; a += 8)
    if (ag__smt_decide(c, ag__bcmp(c, AG_OP_EQ, x, ag__xc(c, a))) == 1) {
      *addr = a;
      return 0;
    }
  return -1;
}

/* The mbarrier operand of an mbar_* or bulk_copy call: its index. */
static int mbar_operand(ag__ck *c, const ag_tile_node *call, const ag_tile_node *an,
                        const char *fname, int init) {
  ag__value *v = eval(c, an);
  if (v->k != V_ELEM || v->e.tile->sp != SP_SHARED || v->e.tile->dt != DT_U64)
    ag__ck_error(c, an,
                 "the mbarrier of %s is a u64 element of a shared tile (bars = "
                 "make_shared((2,), u64), then bars[s]), not %s",
                 fname,
                 v->k == V_ELEM ? (v->e.tile->sp == SP_SHARED ? "a shared element of another type"
                                   : v->e.tile->sp == SP_GLOBAL ? "a global element"
                                                                : "a register element")
                                : kind_name(v->k));
  int64_t addr;
  if (!ag_expr_is_const(v->e.addr, &addr) &&
      mbar_addr_decided(c, v->e.addr, c->sbufs.v[v->e.tile->buf].size, &addr))
    ag__ck_error(c, an,
                 "the mbarrier of %s must be the same element for every thread and known at "
                 "each iteration (index it with constants or a ring stage such as i %% K)",
                 fname);
  if (addr % 8)
    ag__ck_error(c, an, "the mbarrier of %s is at byte %lld of '%s', not 8-byte aligned", fname,
                 (long long)addr, c->sbufs.v[v->e.tile->buf].name);
  if (c->uniform_if)
    ag__ck_error(c, call,
                 "%s inside an 'if' whose condition the checker cannot decide from the "
                 "assumptions (it depends on problem sizes or a summarized loop's iteration); "
                 "move it out of the 'if' or add an 'assume' that decides the condition",
                 fname);
  for (size_t i = 0; i < c->mbars.n; i++)
    if (c->mbars.v[i].buf == v->e.tile->buf && c->mbars.v[i].addr == addr) {
      if (init)
        ag__ck_error(c, call, "mbar_init of mbarrier '%s' again (initialized at line %d)",
                     c->mbars.v[i].name, c->mbars.v[i].at->line);
      const ag__mbar *b = &c->mbars.v[i];
      if (b->lost)
        ag__ck_stop(c, call, 0,
                     "%s on mbarrier '%s' after the summarized loop at line %d that uses it: "
                     "its phase there is not tracked (check a fixed size with --unroll, or use "
                     "the barrier inside the loop only)",
                     fname, b->name, b->lost->line);
      if (b->init_epoch >= c->epoch)
        ag__ck_error(c, call,
                     "%s on mbarrier '%s' before the syncthreads() that makes its mbar_init "
                     "(line %d) visible to every thread (mbar_init, fence_mbar_init(), then "
                     "syncthreads())",
                     fname, b->name, b->at->line);
      return (int)i;
    }
  char nm[160];
  snprintf(nm, sizeof nm, "%s[%lld]", c->sbufs.v[v->e.tile->buf].name, (long long)(addr / 8));
  if (!init)
    ag__ck_error(c, an, "%s on mbarrier '%s', which no mbar_init before it initializes", fname,
                 nm);
  ag__mbar b;
  memset(&b, 0, sizeof b);
  b.buf = v->e.tile->buf;
  b.addr = addr;
  b.name = ag__ck_strdup(c, nm);
  char why[400];
  snprintf(why, sizeof why,
           "the copy that writes it (bulk, or a cp.async the barrier tracks) completes a phase "
           "of mbarrier '%s' that no mbar_wait "
           "in this thread has seen complete before the read (a wait on the wrong parity, a "
           "wrong stage, or none)",
           nm);
  b.why_wait = ag__ck_strdup(c, why);
  snprintf(why, sizeof why,
           "the copy that writes it (bulk, or a cp.async the barrier tracks) may land after its "
           "phase of mbarrier '%s' completes: "
           "the bytes that phase expects (mbar_expect_tx) differ from the bytes copied into it",
           nm);
  b.why_late = ag__ck_strdup(c, why);
  b.at = call;
  b.init_epoch = c->epoch;
  if (ag_vec_push(&c->mbars, b))
    ag__ck_oom(c);
  return (int)c->mbars.n - 1;
}

/* The phases of mbarrier bi that every thread of g knows complete at time
 * pc: the block's `done`, a wait of g's threads on it, or (happens-before,
 * `depth` links) a wait of g's threads on another barrier's phase whose
 * arrivals came from threads that knew more when they arrived (the
 * producer of a warp-specialized ring waits on `empty[s]`, on which the
 * consumers arrived after they waited on `full[s]`). */
static int64_t mbar_known(ag__ck *c, int bi, const ag__bx *g, int64_t pc, int depth) {
  int64_t k = c->mbars.v[bi].done;
  /* every chain ends at a wait on bi before pc: nothing is known beyond the
   * latest phase such a wait saw (the scan stops once k reaches it; the
   * loop summaries' many waits made the chains quadratic) */
  int64_t most = k;
  for (size_t i = 0; i < c->msyncs.n; i++) {
    const ag__msync *w = &c->msyncs.v[i];
    if (w->wait && w->bar == bi && w->pc < pc && w->phase > most)
      most = w->phase;
  }
  for (size_t i = 0; i < c->msyncs.n && k < most; i++) {
    const ag__msync *w = &c->msyncs.v[i];
    if (!w->wait || w->pc >= pc || !ag__bx_implies(g, w->guard))
      continue;
    if (w->bar == bi) {
      k = w->phase > k ? w->phase : k;
      continue;
    }
    for (size_t j = 0; depth > 0 && j < i && k < most; j++) {
      const ag__msync *a = &c->msyncs.v[j];
      if (a->wait || a->bar != w->bar || a->phase >= w->phase || a->pc >= w->pc)
        continue;
      int64_t ka = mbar_known(c, bi, a->guard, a->pc, depth - 1);
      k = ka > k ? ka : k;
    }
  }
  return k;
}

static void msync_push(ag__ck *c, int bar, int wait, int64_t phase, const ag__bx *guard) {
  ag__msync m = {bar, wait, phase, c->pc, guard};
  if (ag_vec_push(&c->msyncs, m))
    ag__ck_oom(c);
}

/* The open phase has its arrivals and, when tx <= 0, its bytes (tx < 0: more
 * bytes copied than expected, so it may complete before they land). */
static void mbar_close(ag__ck *c, int bi) {
  ag__mbar *b = &c->mbars.v[bi];
  if (b->pending > 0 || b->tx > 0)
    return;
  int flight = 0;
  for (size_t i = 0; i < c->wrecs.n; i++) {
    ag__wrec *w = &c->wrecs.v[i];
    if (w->mbar == bi + 1 && w->mphase == b->open) {
      if (b->tx < 0)
        w->mlate = 1;
      flight |= !w->mlate;
    }
  }
  if (!flight && b->done == b->open)
    b->done++;
  b->open++;
  b->pending = b->count;
  b->tx = 0;
  b->open_copies = 0;
}

static void do_mbar_init(ag__ck *c, const ag_tile_node *n, const ag__intrin *in) {
  nargs(c, n, 2, 2, "mbar_init(bar, count)");
  int bi = mbar_operand(c, n, n->list.v[0], in->name, 1);
  int64_t cnt = as_const(c, n->list.v[1], eval(c, n->list.v[1]), "the arrival count");
  if (cnt < 1 || cnt >= (1 << 20))
    ag__ck_error(c, n->list.v[1], "mbar_init needs an arrival count in 1 .. 2^20 - 1, not %lld",
                 (long long)cnt);
  c->pc++;
  ag__mbar *b = &c->mbars.v[bi];
  b->count = b->pending = cnt;
}

static void do_mbar_arrive(ag__ck *c, const ag_tile_node *n, const ag__intrin *in) {
  if (in->tx)
    nargs(c, n, 2, 2, "mbar_expect_tx(bar, bytes)");
  else
    nargs(c, n, 1, 1, "mbar_arrive(bar)");
  int bi = mbar_operand(c, n, n->list.v[0], in->name, 0);
  int64_t bytes = 0;
  if (in->tx) {
    bytes = as_const(c, n->list.v[1], eval(c, n->list.v[1]), "the transaction bytes");
    if (bytes < 0 || bytes >= (1 << 20))
      ag__ck_error(c, n->list.v[1],
                   "mbar_expect_tx needs a byte count in 0 .. 2^20 - 1, not %lld",
                   (long long)bytes);
  }
  int64_t k = path_threads(c, n, in->name);
  c->pc++;
  ag__mbar *b = &c->mbars.v[bi];
  /* the arriving threads release what they did before (all threads, or a
   * role's: race.c pairs it with the accesses of those threads) */
  msync_push(c, bi, 0, b->open, k == c->nthreads ? NULL : thread_part(c, c->path));
  /* each thread: expect its bytes, then arrive; a phase that completes
   * passes the remaining arrivals on to the next one */
  while (k > 0) {
    b = &c->mbars.v[bi];
    b->tx += bytes;
    b->pending--;
    k--;
    mbar_close(c, bi);
  }
}

static void do_mbar_wait(ag__ck *c, const ag_tile_node *n, const ag__intrin *in) {
  nargs(c, n, 2, 2, "mbar_wait(bar, parity)");
  int bi = mbar_operand(c, n, n->list.v[0], in->name, 0);
  ag__value *pv = eval(c, n->list.v[1]);
  const ag_expr *pe = as_int(c, n->list.v[1], pv, "the phase parity");
  int64_t par;
  if (!ag_expr_is_const(pe, &par))
    ag__ck_error(c, n->list.v[1],
                 "mbar_wait needs a phase parity known at each wait (a constant, or "
                 "(i / K) %% 2 of a loop variable i and the ring's K)");
  if (par != 0 && par != 1)
    ag__ck_error(c, n->list.v[1], "mbar_wait's phase parity is 0 or 1, not %lld",
                 (long long)par);
  (void)path_threads(c, n, in->name);
  c->pc++;
  ag__mbar *b = &c->mbars.v[bi];
  /* try_wait.parity returns once the current phase's parity differs from
   * par: at once when phase `done` (not yet complete) has the other parity,
   * else when phase `done` completes; `done` is what the waiting threads
   * know complete */
  int64_t done = mbar_known(c, bi, thread_part(c, c->path), c->pc, 2);
  int64_t upto;
  if (done % 2 != par)
    upto = done;
  else if (done < b->open)
    upto = done + 1;
  else
    ag__ck_error(c, n,
                 "mbar_wait(%s, %lld) can never return here: it waits for phase %lld of "
                 "mbarrier '%s', which still needs %lld arrivals and %lld transaction bytes "
                 "that nothing before it provides (a wrong parity, a missing arrive, or an "
                 "mbar_expect_tx larger than the bytes copied)",
                 b->name, (long long)par, (long long)done, b->name, (long long)b->pending,
                 (long long)(b->tx > 0 ? b->tx : 0));
  const ag__bx *g = thread_part(c, c->path);
  /* every thread waited: the phase is complete from here. In a role split
   * the waiting role is the one the barrier signals (consumers on `full`,
   * the producer on `empty`): the phase is complete for the phase count
   * too; a thread of another role that did not synchronize with the wait
   * and touches the stage is a race (race.c) */
  if ((!g || c->roles) && upto > b->done)
    b->done = upto;
  msync_push(c, bi, 1, upto, g);
  for (size_t i = 0; i < c->wrecs.n; i++) {
    ag__wrec *w = &c->wrecs.v[i];
    if (w->mbar != bi + 1 || w->mphase >= upto || w->mlate || (w->mset && !w->mset->guard) ||
        w->pc < c->msettle_from)
      continue;
    ag__mset *m = ag__ck_alloc(c, sizeof *m);
    m->pc = c->pc;
    m->guard = g;
    m->next = w->mset;
    w->mset = m;
    if (w->vis_epoch > c->epoch + 1)
      w->vis_epoch = c->epoch + 1; /* a barrier after the wait shows it to every thread */
  }
}

/* A copy that completes on mbarrier bi (at node n) needs the
 * fence_mbar_init() after its init. */
static void need_fenced(ag__ck *c, const ag_tile_node *n, int bi, const char *fname) {
  if (!c->mbars.v[bi].fenced)
    ag__ck_error(c, n,
                 "%s completes on mbarrier '%s', but no fence_mbar_init() follows its "
                 "mbar_init (line %d): the copy engine may not see the initialized barrier",
                 fname, c->mbars.v[bi].name, c->mbars.v[bi].at->line);
}

/* Issues a copy that completes transaction bytes on mbarrier bi (a bulk
 * copy, a TMA load) by k threads: a shared write of d at addr of buffer
 * buf, settled only by a wait on the phase it completes; bcond (or NULL)
 * says which bytes hold data (ag__wrec). */
static void bulk_issue(ag__ck *c, const ag_tile_node *n, int bi, int64_t k, const ag_expr *addr,
                       int buf, const ag__data *d, const ag__bx *bcond) {
  int64_t bytes = d->n;
  c->pc++;
  ag__mbar *b = &c->mbars.v[bi];
  /* the barrier's current phase in the hardware is the first one not
   * complete: with a phase in flight (its copies not landed), this copy's
   * bytes may count against it, which then completes before its own copies
   * land, and this copy against none it was meant for */
  int64_t known = mbar_known(c, bi, thread_part(c, c->path), c->pc, 2);
  int early = known < b->open;
  for (size_t i = 0; early && i < c->wrecs.n; i++)
    if (c->wrecs.v[i].mbar == bi + 1 && c->wrecs.v[i].mphase >= known)
      c->wrecs.v[i].mlate = 1;
  c->next_mbar = bi + 1;
  c->next_mphase = b->open;
  shared_write(c, n, addr, buf, d, -1);
  ag__wrec *w = &c->wrecs.v[c->wrecs.n - 1];
  w->done_pc = INT64_MAX; /* not even the issuing thread sees it before a wait */
  w->vis_epoch = INT_MAX;
  w->bcond = bcond;
  b = &c->mbars.v[bi];
  b->tx -= k * bytes;
  b->open_copies++;
  if (b->tx < 0 || early)
    w->mlate = 1; /* bytes the phase does not expect: it may complete without them */
  mbar_close(c, bi);
}

static void do_bulk_copy(ag__ck *c, const ag_tile_node *n, const ag__intrin *in) {
  nargs(c, n, 4, 4, "bulk_copy(dst, src, bytes, bar)");
  ag__value *dv = eval(c, n->list.v[0]);
  ag__value *sv = eval(c, n->list.v[1]);
  if (dv->k != V_ELEM || dv->e.tile->sp != SP_SHARED)
    ag__ck_error(c, n->list.v[0],
                 "the destination of bulk_copy is the shared element its bytes start at");
  if (sv->k != V_ELEM || sv->e.tile->sp != SP_GLOBAL)
    ag__ck_error(c, n->list.v[1],
                 "the source of bulk_copy is the global tensor element its bytes start at");
  int64_t bytes = as_const(c, n->list.v[2], eval(c, n->list.v[2]), "the byte count");
  int al = in->align;
  if (bytes <= 0 || bytes % al || bytes >= (1 << 20))
    ag__ck_error(c, n->list.v[2],
                 "bulk_copy moves a positive multiple of %d bytes below 2^20, not %lld", al,
                 (long long)bytes);
  const ag__tile *dt = dv->e.tile, *st = sv->e.tile;
  if (dt->swizzled)
    ag__ck_error(c, n->list.v[0],
                 "bulk_copy writes bytes in order: its destination tile must not be swizzled");
  if (ag__xalign(c, dv->e.addr) < al)
    ag__ck_error(c, n->list.v[0],
                 "the shared destination of bulk_copy must be %d-byte aligned; its byte offset "
                 "is not a provable multiple of %d",
                 al, al);
  const ag__param *p = &c->params.v[st->g.tensor];
  int es = ag__dt_size(p->dt);
  if (st->g.linear)
    ag__ck_error(c, n->list.v[1],
                 "bulk_copy reads along the innermost dimension of its tensor; take the "
                 "source from the tensor or a view that keeps its dimensions");
  /* the global address: every stride is a multiple of the row (innermost
   * dim x element size), and the innermost offset is in bytes */
  const ag_expr *row = ag__x(c, AG_X_MUL, p->dims[p->rank - 1], ag__xc(c, es));
  const ag_expr *inner = sv->e.tcoord[p->rank - 1];
  if (ag__xalign(c, inner) < al || (p->rank > 1 && ag__xalign(c, row) < al))
    ag__ck_error(c, n->list.v[1],
                 "the global source of bulk_copy must be %d-byte aligned: the byte offset in "
                 "the row and the row's size (%s's last dimension times %d bytes) must be "
                 "provable multiples of %d (assume a size is a multiple if it is)",
                 al, p->name, es, al);
  /* the bytes stay in the row: the last element read is in bounds */
  const ag_expr *last = ag__x(c, AG_X_DIV, ag__x(c, AG_X_ADD, inner, ag__xc(c, bytes - 1)),
                              ag__xc(c, es));
  in_bounds(c, n->list.v[1], p->name, p->rank - 1, last, p->dims[p->rank - 1]);
  {
    int64_t lo = 0, hi = 0;
    if (bytes > c->sbufs.v[dt->buf].size ||
        (ag__xbounds(c, dv->e.addr, &lo, &hi) == 0 && hi + bytes > c->sbufs.v[dt->buf].size))
      ag__ck_error(c, n->list.v[0],
                   "bulk_copy of %lld bytes at byte %lld of shared '%s' runs past its %lld "
                   "bytes",
                   (long long)bytes, (long long)(bytes > c->sbufs.v[dt->buf].size ? 0 : hi),
                   c->sbufs.v[dt->buf].name,
                   (long long)c->sbufs.v[dt->buf].size);
  }
  int bi = mbar_operand(c, n, n->list.v[3], in->name, 0);
  need_fenced(c, n->list.v[3], bi, in->name);
  int64_t k = path_threads(c, n, in->name);
  /* the data: the source's tags, byte by byte (one parametric tag) */
  ag__data d = data_new(c, p->dt, (int)bytes);
  const ag_expr **co = ag__ck_alloc(c, (size_t)p->rank * sizeof *co);
  for (int j = 0; j < p->rank - 1; j++)
    co[j] = sv->e.tcoord[j];
  const ag_expr *b_el = ag__x(c, AG_X_DIV, inner, ag__xc(c, es));
  if (p->tagfn) {
    for (int64_t j = 0; j < bytes; j += es) {
      co[p->rank - 1] = ag__x(c, AG_X_ADD, b_el, ag__xc(c, j / es));
      const ag__tag *t = apply_tagfn(c, n, p->tagfn, co);
      for (int b = 0; b < es; b++)
        d.tags[j + b] = t;
    }
    const ag_expr *byte = ag_expr_sym(&c->lc, "@byte");
    if (!byte)
      ag__ck_oom(c);
    co[p->rank - 1] = ag__x(c, AG_X_ADD, b_el, ag__x(c, AG_X_DIV, byte, ag__xc(c, es)));
    d.ptag = apply_tagfn(c, n, p->tagfn, co);
    d.pgran = es;
  }
  bulk_issue(c, n, bi, k, dv->e.addr, dt->buf, &d, NULL);
}


static void refute_here(ag__ck *c, const ag_tile_node *at, const char *why);

/* -------------------------------------------------------------------- TMA
 * tma_map(A, box=(b0, ..., bn), swizzle=S) names the box of tensor
 * parameter A that a TMA copy moves (a CUtensorMap the host encodes with
 * cuTensorMapEncodeTiled). The driver's rules are the layout module's
 * (ag_tma_map_check: rank, element size, box extents, inner box bytes
 * against the swizzle span); what depends on problem sizes (the global
 * strides, a multiple of 16 bytes) must be provable here. tma_load is a
 * bulk copy of the box (bulk_issue) whose bytes are placed as the hardware
 * places them: box element j packed row after row, then the map's swizzle
 * permuting 16-byte chunks by the absolute address (ag_tma_box_elem; the
 * buffer starts on a 1024-byte boundary); the data of byte b is the source
 * element that lands there, and an element outside the tensor is zero
 * (bottom). tma_store reads the box's bytes at its issue (the race check)
 * and keeps them pending until a tma_store_wait retires its group: a write
 * to them before is refuted. */

static ag__value *make_tma_map(ag__ck *c, const ag_tile_node *n) {
  if (c->symbolic_if || c->uniform_if || c->nested)
    ag__ck_error(c, n,
                 "tma_map inside a loop or an 'if': a tensor map is a kernel parameter the host "
                 "encodes once; declare it at the kernel's top level");
  const ag_tile_node *an = arg(c, n, 0, "tensor", 1);
  ag__value *tv = eval(c, an);
  if (tv->k != V_TILE || tv->t->sp != SP_GLOBAL)
    ag__ck_error(c, an,
                 "the first argument of tma_map is a tensor parameter (tma_map(A, box=(64, 64), "
                 "swizzle=128)), not %s",
                 tv->k == V_TILE ? "a shared or register tile" : kind_name(tv->k));
  const ag__param *p = &c->params.v[tv->t->g.tensor];
  if (an->kind != AG_TN_NAME || strcmp(an->name, p->name) || tv->t->g.linear ||
      tv->t->g.rank != p->rank)
    ag__ck_error(c, an,
                 "tma_map takes the tensor parameter itself ('%s'), not a view or a slice of it: "
                 "the box and the coordinates of each copy select the part",
                 p->name);
  ag__tmap *m = ag__ck_alloc(c, sizeof *m);
  memset(m, 0, sizeof *m);
  m->param = tv->t->g.tensor;
  m->rank = p->rank;
  const ag_tile_node *bn = arg(c, n, 1, "box", 1);
  ag__value *bv = eval(c, bn);
  int nb = bv->k == V_TUPLE ? bv->n : 1;
  if (nb != p->rank || (bv->k != V_TUPLE && bv->k != V_INT))
    ag__ck_error(c, bn,
                 "the box of tma_map has one extent per dimension of '%s' (%d, in its order), "
                 "not %d",
                 p->name, p->rank, nb);
  int es = ag__dt_size(p->dt);
  m->bytes = es;
  for (int i = 0; i < nb; i++) {
    ag__value *iv = bv->k == V_TUPLE ? &bv->items[i] : bv;
    m->box[i] = as_const(c, bn, iv, "a box extent");
    if (m->box[i] < 1 || m->box[i] > 256)
      ag__ck_error(c, bn, "box extent %d of tma_map is %lld: TMA boxes hold 1 to 256 elements "
                          "per dimension",
                   i, (long long)m->box[i]);
    m->bytes *= m->box[i];
  }
  const ag_tile_node *sn = arg(c, n, 2, "swizzle", 0);
  int64_t swz = sn ? as_const(c, sn, eval(c, sn), "the swizzle span") : 0;
  if (swz != 0 && swz != 32 && swz != 64 && swz != 128)
    ag__ck_error(c, sn, "the swizzle of tma_map is a span in bytes: 0 (none), 32, 64 or 128, "
                        "not %lld",
                 (long long)swz);
  ag_tma_map *tm = &m->map;
  tm->rank = p->rank;
  tm->elem_bytes = es;
  tm->elem_float = ag__dt_is_float(p->dt);
  for (int i = 0; i < p->rank; i++) {
    tm->dim[i] = 1; /* the run's: checked by argus run before encoding */
    tm->box[i] = (uint32_t)m->box[p->rank - 1 - i];
    tm->estride[i] = 1;
    if (i + 1 < p->rank)
      tm->stride[i] = 16;
  }
  tm->swizzle = (ag_swz_mode)swz;
  int64_t j0[5] = {0};
  int32_t o0[5] = {0};
  ag_tma_elem e0;
  if (ag_tma_map_check(&c->lc, tm) || ag_tma_box_elem(&c->lc, tm, o0, 0, j0, &e0))
    ag__ck_error(c, n, "tma_map of '%s': %s (TMA's dimension 0 is the tensor's last)", p->name,
                 ag_str_cstr(&c->lc.err));
  /* the global strides: every one is a multiple of the row's bytes */
  if (p->rank > 1) {
    const ag_expr *row = ag__x(c, AG_X_MUL, p->dims[p->rank - 1], ag__xc(c, es));
    if (ag__xalign(c, row) < 16 &&
        ag__smt_decide(c, ag__bcmp(c, AG_OP_EQ, ag__x(c, AG_X_MOD, row, ag__xc(c, 16)),
                                   ag__xc(c, 0))) != 1)
      ag__ck_error(c, an,
                   "tma_map of '%s': a row of '%s' (its last dimension times %d bytes) must be "
                   "a provable multiple of 16 bytes, the TMA's global stride rule (assume the "
                   "size is a multiple of %d if it is)",
                   p->name, p->name, es, 16 / es > 1 ? 16 / es : 1);
  }
  ag__value *v = newv(c, V_TMAP);
  v->tm = m;
  return v;
}

/* The destination or source of a TMA copy: a shared tile (its first
 * element) or element; its byte address in the buffer, aligned as the copy
 * needs. */
static const ag_expr *tma_smem(ag__ck *c, const ag_tile_node *tn, const ag__tmap *m,
                               const char *fname, int *buf) {
  ag__value *tv = eval(c, tn);
  const ag_expr *addr;
  int64_t room = -1, al = 128, period = 128;
  if (tv->k == V_TILE && tv->t->sp == SP_SHARED) {
    addr = tv->t->base;
    *buf = tv->t->buf;
    room = ag_layout_cosize(&tv->t->layout) * ag__dt_size(tv->t->dt);
    if (tv->t->swizzled)
      period = (int64_t)1 << (tv->t->swz.b + tv->t->swz.m + tv->t->swz.s);
  } else if (tv->k == V_ELEM && tv->e.tile->sp == SP_SHARED) {
    addr = tv->e.addr;
    *buf = tv->e.tile->buf;
  } else {
    ag__ck_error(c, tn, "the shared side of %s is a shared tile (s[st, :, :]) or the shared "
                        "element the box starts at, not %s",
                 fname, tv->k == V_TILE || tv->k == V_ELEM ? "global or register memory"
                                                          : kind_name(tv->k));
  }
  if (m->map.swizzle != AG_SWZ_NONE)
    al = 8 * (int64_t)m->map.swizzle; /* the pattern repeats every 8 swizzle rows */
  if (period > al)
    al = period;
  if (ag__xalign(c, addr) < al)
    ag__ck_error(c, tn,
                 "the shared side of %s must start on a %lld-byte boundary (TMA needs 128 bytes; "
                 "a swizzle repeats every 8 of its rows, and the checker places the box where "
                 "the pattern starts): its byte offset in '%s' is not a provable multiple of "
                 "%lld",
                 fname, (long long)al, c->sbufs.v[*buf].name, (long long)al);
  if (room >= 0 && room < m->bytes)
    ag__ck_error(c, tn, "the box of %s is %lld bytes; the shared tile holds %lld", fname,
                 (long long)m->bytes, (long long)room);
  int64_t lo = 0, hi = 0;
  if (m->bytes > c->sbufs.v[*buf].size ||
      (ag__xbounds(c, addr, &lo, &hi) == 0 && hi + m->bytes > c->sbufs.v[*buf].size))
    ag__ck_error(c, tn, "the box of %s (%lld bytes) at byte %lld of shared '%s' runs past its "
                        "%lld bytes",
                 fname, (long long)m->bytes, (long long)(m->bytes > c->sbufs.v[*buf].size ? 0 : hi),
                 c->sbufs.v[*buf].name, (long long)c->sbufs.v[*buf].size);
  return addr;
}

/* The map operand and the coordinates of a TMA copy (the tensor's order). */
static const ag__tmap *tma_args(ag__ck *c, const ag_tile_node *n, const ag__intrin *in,
                                const ag_expr **co) {
  if (n->list.n < 1)
    ag__ck_error(c, n, "%s takes a tensor map first (tma_map(...))", in->name);
  ag__value *mv = eval(c, n->list.v[0]);
  if (mv->k != V_TMAP)
    ag__ck_error(c, n->list.v[0], "the first argument of %s is a tensor map (tm = tma_map(A, "
                                  "box=...)), not %s",
                 in->name, kind_name(mv->k));
  const ag__tmap *m = mv->tm;
  int load = in->kind == IK_TMA_LOAD, want = 1 + m->rank + (load ? 2 : 1);
  if (n->list.n != want)
    ag__ck_error(c, n,
                 "%s(map, %d coordinate%s, %s) takes %d arguments for the rank-%d map of '%s', "
                 "not %d",
                 in->name, m->rank, m->rank == 1 ? "" : "s", load ? "dst, bar" : "src", want,
                 m->rank, c->params.v[m->param].name, n->list.n);
  for (int i = 0; i < m->rank; i++)
    co[i] = as_int(c, n->list.v[1 + i], eval(c, n->list.v[1 + i]), "a box coordinate");
  return m;
}

static void do_tma_load(ag__ck *c, const ag_tile_node *n, const ag__intrin *in) {
  const ag_expr *org[5];
  const ag__tmap *m = tma_args(c, n, in, org);
  int r = m->rank, buf = 0;
  const ag__param *p = &c->params.v[m->param];
  const ag_expr *addr = tma_smem(c, n->list.v[1 + r], m, in->name, &buf);
  int bi = mbar_operand(c, n, n->list.v[2 + r], in->name, 0);
  need_fenced(c, n->list.v[2 + r], bi, in->name);
  int64_t k = path_threads(c, n, in->name);
  int es = m->map.elem_bytes;
  ag__data d = p->tagfn ? (ag__data){p->dt, (int)m->bytes, NULL, NULL, 0}
                        : data_new(c, p->dt, (int)m->bytes);
  /* byte @byte of the box's range: the chunk swizzle (its own inverse) gives
   * the packed offset, which names the box element; element-wide reads take
   * the parametric tag, wider ones are not tracked (top) */
  const ag_expr *byte = ag_expr_sym(&c->lc, "@byte");
  if (!byte)
    ag__ck_oom(c);
  const ag_expr *lin = byte;
  int64_t ch = m->map.swizzle == AG_SWZ_NONE ? 1 : (int64_t)m->map.swizzle / 16;
  if (ch > 1)
    lin = ag__x(c, AG_X_XOR, byte,
                ag__x(c, AG_X_SHL,
                      ag__x(c, AG_X_AND, ag__x(c, AG_X_SHR, byte, ag__xc(c, 7)), ag__xc(c, ch - 1)),
                      ag__xc(c, 4)));
  const ag_expr *co[5];
  const ag__bx *inb = NULL;
  int64_t inner = m->box[r - 1] * es;
  const ag_expr *rest = ag__x(c, AG_X_DIV, lin, ag__xc(c, inner));
  for (int i = r - 1; i >= 0; i--) {
    const ag_expr *j;
    if (i == r - 1)
      j = ag__x(c, AG_X_DIV, ag__x(c, AG_X_MOD, lin, ag__xc(c, inner)), ag__xc(c, es));
    else {
      j = i ? ag__x(c, AG_X_MOD, rest, ag__xc(c, m->box[i])) : rest;
      rest = ag__x(c, AG_X_DIV, rest, ag__xc(c, m->box[i]));
    }
    co[i] = ag__x(c, AG_X_ADD, org[i], j);
    const ag__bx *in_i = ag__bcmp(c, AG_OP_LT, co[i], p->dims[i]);
    inb = inb ? ag__band(c, inb, in_i) : in_i;
  }
  /* a box the assumptions keep inside the tensor has no zeros */
  const ag__bx *all_in = NULL;
  for (int i = 0; i < r; i++) {
    const ag__bx *in_i = ag__bcmp(c, AG_OP_LE, ag__x(c, AG_X_ADD, org[i], ag__xc(c, m->box[i])),
                                  p->dims[i]);
    all_in = all_in ? ag__band(c, all_in, in_i) : in_i;
  }
  if (ag__smt_decide(c, all_in) == 1)
    inb = NULL;
  if (p->tagfn) {
    /* one array for every box (a box has at most 227 KiB) */
    if (c->tma_wide_n < m->bytes) {
      const ag__tag *wide = ag__tag_top(c, "a read wider than one element of a TMA box (the "
                                           "checker tags a box element by element)");
      c->tma_wide = ag__ck_alloc(c, (size_t)m->bytes * sizeof *c->tma_wide);
      for (int64_t j = 0; j < m->bytes; j++)
        c->tma_wide[j] = wide;
      c->tma_wide_n = m->bytes;
    }
    d.tags = c->tma_wide;
    d.ptag = apply_tagfn(c, n, p->tagfn, co);
    d.pgran = es;
  }
  bulk_issue(c, n, bi, k, addr, buf, &d, inb);
}

static void do_tma_store(ag__ck *c, const ag_tile_node *n, const ag__intrin *in) {
  const ag_expr *org[5];
  const ag__tmap *m = tma_args(c, n, in, org);
  int buf = 0;
  const ag_expr *addr = tma_smem(c, n->list.v[1 + m->rank], m, in->name, &buf);
  if (c->summarizing)
    ag__ck_error(c, n, "tma_store inside a summarized loop is not modelled (its pending reads "
                       "are not part of the loop's state); check a fixed size with --unroll");
  (void)path_threads(c, n, in->name);
  /* the copy engine reads the box now (a read for the race check) and until
   * the wait that retires its group */
  if (!c->ghost)
    ag__race_read(c, n, buf, addr, (int)m->bytes, c->path);
  c->pc++;
  ag__tstore t = {buf, 0, c->sbufs.v[buf].size, -1, n};
  int64_t lo, hi;
  if (ag__xbounds(c, addr, &lo, &hi) == 0) {
    t.lo = lo;
    t.hi = hi + m->bytes;
  }
  if (ag_vec_push(&c->tst_pend, t))
    ag__ck_oom(c);
}

static void do_tma_wait(ag__ck *c, const ag_tile_node *n) {
  nargs(c, n, 1, 1, "tma_store_wait(n)");
  int64_t k = as_const(c, n->list.v[0], eval(c, n->list.v[0]), "the group count");
  if (k < 0 || k > 7)
    ag__ck_error(c, n->list.v[0], "tma_store_wait(n) needs n in 0..7, not %lld", (long long)k);
  (void)path_threads(c, n, "tma_store_wait");
  size_t j = 0;
  for (size_t i = 0; i < c->tst_pend.n; i++) {
    const ag__tstore *t = &c->tst_pend.v[i];
    if (t->group < 0 || t->group >= c->tst_ngroups - k)
      c->tst_pend.v[j++] = *t;
  }
  c->tst_pend.n = j;
  c->pc++;
}

/* A shared write that may land on the source of a tma_store not retired. */
static void tst_pending_hit(ag__ck *c, const ag_tile_node *at, int buf, int64_t lo, int64_t hi) {
  if (c->replay)
    return;
  for (size_t i = 0; i < c->tst_pend.n; i++) {
    const ag__tstore *t = &c->tst_pend.v[i];
    if (t->buf != buf || hi <= t->lo || lo >= t->hi)
      continue;
    char msg[400];
    snprintf(msg, sizeof msg,
             "write-after-read race: this write to shared '%s' (bytes %lld..%lld) may land "
             "while the tma_store at line %d still reads them (tma_store_commit(), then "
             "tma_store_wait(0) in the storing thread and a syncthreads() before this line)",
             c->sbufs.v[buf].name, (long long)(lo > t->lo ? lo : t->lo),
             (long long)((hi < t->hi ? hi : t->hi) - 1), t->at->line);
    refute_here(c, at, msg);
    return;
  }
}

/* cp_async_mbar_arrive(bar): each calling thread arrives on bar's current
 * phase once the cp.asyncs it issued before have landed (PTX
 * cp.async.mbarrier.arrive.noinc: the arrival counts against mbar_init's
 * count). Those copies become the phase's transactions: settled for a
 * thread once its wait on the phase returns, like a bulk copy's. A copy
 * whose writers are not all among the callers stays as it was (unsettled
 * until a cp_async_wait). */
static void do_cp_mbar_arrive(ag__ck *c, const ag_tile_node *n, const ag__intrin *in) {
  nargs(c, n, 1, 1, "cp_async_mbar_arrive(bar)");
  int bi = mbar_operand(c, n, n->list.v[0], in->name, 0);
  int64_t k = path_threads(c, n, in->name);
  const ag__bx *g = thread_part(c, c->path);
  c->pc++;
  ag__mbar *b = &c->mbars.v[bi];
  int64_t known = mbar_known(c, bi, g, c->pc, 2);
  for (size_t i = 0; i < c->wrecs.n; i++) {
    ag__wrec *w = &c->wrecs.v[i];
    if (w->group < 0 || w->mbar || w->done_pc != INT64_MAX || w->pc < c->msettle_from ||
        !ag__bx_implies(thread_part(c, w->guard), g))
      continue;
    w->mbar = bi + 1;
    w->mphase = b->open;
    /* a phase of this barrier still in flight for the callers: the arrival
     * may count against it (as a bulk copy's bytes would) */
    if (known < b->open)
      w->mlate = 1;
  }
  msync_push(c, bi, 0, b->open, k == c->nthreads ? NULL : g);
  while (k > 0) {
    b = &c->mbars.v[bi];
    b->pending--;
    k--;
    mbar_close(c, bi);
  }
}

/* An instruction executed together by every thread of a group of `gs`
 * threads (128: a warpgroup's .sync.aligned setmaxnreg, wgmma; 32: a warp's
 * full-mask shfl.sync): the block is whole groups and the path takes each
 * group whole (a role split such as `if tid / 128 == 0:`, a warp role
 * `if tid / 32 < 2:`), decided by enumerating the block. */
static void need_whole(ag__ck *c, const ag_tile_node *n, const char *what, int64_t gs) {
  const char *gn = gs == 128 ? "warpgroup" : "warp";
  const char *hint = gs == 128 ? "if threadIdx.x / 128 == 0:" : "if threadIdx.x / 32 < 2:";
  if (c->nthreads % gs)
    ag__ck_error(c, n, "%s is executed by whole %ss of %lld threads; the block has %lld", what,
                 gn, (long long)gs, (long long)c->nthreads);
  /* a warpgroup's .sync.aligned instruction needs a decided condition; a
   * warp's shuffle only whole warps, which a block-wide condition keeps */
  if (c->uniform_if && gs == 128)
    ag__ck_error(c, n,
                 "%s inside an 'if' whose condition the checker cannot decide from the "
                 "assumptions; every thread of a %s must execute it (move it out of the "
                 "'if' or add an 'assume' that decides the condition)",
                 what, gn);
  const ag__bx *g = thread_part(c, c->path);
  if (!g)
    return;
  for (int64_t t = 0; t < c->nthreads; t++) {
    int v = ag__beval_tid(g, t), v0 = ag__beval_tid(g, t - t % gs);
    if (v < 0 || v != v0)
      ag__ck_error(c, n,
                   "%s inside a thread-dependent 'if' that does not take whole %ss: "
                   "thread %lld %s it and thread %lld of the same %s %lld %s (every "
                   "thread of a %s must execute it: branch on the %s, %s)",
                   what, gn, (long long)(t - t % gs), v0 > 0 ? "runs" : "does not run",
                   (long long)t, gn, (long long)(t / gs),
                   v < 0 ? "cannot be decided" : v ? "does" : "does not", gn, gn, hint);
  }
}

static void need_warpgroup(ag__ck *c, const ag_tile_node *n, const char *what) {
  need_whole(c, n, what, 128);
}

/* setmaxnreg_inc/_dec(N): PTX's rules, checked at the call */
static void do_setmaxnreg(ag__ck *c, const ag_tile_node *n, const ag__intrin *in) {
  nargs(c, n, 1, 1, in->tx ? "setmaxnreg_inc(n)" : "setmaxnreg_dec(n)");
  int64_t r = as_const(c, n->list.v[0], eval(c, n->list.v[0]), "the register count");
  if (r < 24 || r > 256 || r % 8)
    ag__ck_error(c, n->list.v[0],
                 "%s needs a register count that is a multiple of 8 in 24..256, not %lld",
                 in->name, (long long)r);
  need_warpgroup(c, n, in->name);
  c->pc++;
}

/* ------------------------------------------------------------------ wgmma
 * wgmma_m64nNk16(d, a, b): one warpgroup (128 threads) computes D += A B^T
 * asynchronously. d is the thread's N/2 f32 accumulators (the .d atom); a is
 * 8 bf16/f16 registers (the .a atom) or a 64 x 16 shared tile; b an N x 16
 * shared tile. A shared operand reaches the instruction as a matrix
 * descriptor the lowering derives from the tile's layout and swizzle; here
 * the tile must be a canonical GMMA layout of its swizzle mode (the first
 * element where it is not is the error), and every element a thread's
 * accumulators depend on (A row m, B row n over k, for each (m, n) of the
 * .d atom) must be settled for that thread: one obligation per operand,
 * for every thread, value and k at once (symbols @wg.v, @wg.k). D keeps its
 * tags (as mma's) and is pending until a wgmma_wait retires its group: a
 * read or write of a pending byte other than by a wgmma is refuted. */

/* Records o (its statement and loop instance taken here). */
static void wg_push(ag__ck *c, ag__oblig *o) {
  o->stmt = ag__ck_stmt(c, o->at);
  o->nloops = (int)c->loops.n;
  o->loops = ag__ck_alloc(c, (size_t)(o->nloops ? o->nloops : 1) * sizeof *o->loops);
  ag__mcpy(o->loops, c->loops.v, (size_t)o->nloops * sizeof *o->loops);
  if (ag_vec_push(&c->obligs, *o))
    ag__ck_oom(c);
}

/* A violation at `at` for every thread on the path, saying why. */
static void refute_here(ag__ck *c, const ag_tile_node *at, const char *why) {
  ag__oblig o;
  memset(&o, 0, sizeof o);
  o.k = OB_INT;
  o.at = at;
  o.path = c->path;
  o.cond = ag__bconst(c, 0);
  o.why = ag__ck_strdup(c, why);
  wg_push(c, &o);
}

/* The check's `why` for a pending accumulator; `what` names the access. */
static void wg_pending_hit(ag__ck *c, const ag_tile_node *at, int buf, int64_t off, int w,
                           const char *what) {
  if (c->replay)
    return;
  for (size_t i = 0; i < c->wg_pend.n; i++) {
    const ag__wgpend *p = &c->wg_pend.v[i];
    if (p->buf != buf || off + w <= p->lo || off >= p->hi)
      continue;
    char msg[400];
    snprintf(msg, sizeof msg,
             "%s register '%s' byte %lld, an accumulator of the wgmma at line %d, before a "
             "wgmma_wait retires its group (commit the group, then wgmma_wait(0) before this "
             "line)",
             what, c->rbufs.v[buf].name ? c->rbufs.v[buf].name : "?",
             (long long)((off > p->lo ? off : p->lo) - p->lo), p->at->line);
    refute_here(c, at, msg);
    return;
  }
}

/* Checks that shared tile t is a canonical GMMA operand of rows x 16; a
 * malformed one stops the check at n. */
static void wg_operand(ag__ck *c, const ag_tile_node *n, const ag__tile *t,
                       const ag__intrin *in, const char *opname, int64_t rows) {
  if (ag_layout_rank(&t->layout) != 2)
    ag__ck_error(c, n, "operand %s of %s is a rank-2 shared tile (%s x K), not rank %d", opname,
                 in->name, opname[0] == 'a' ? "M" : "N", ag_layout_rank(&t->layout));
  ag_layout m0, m1;
  if (ag_layout_mode(&c->lc, &t->layout, 0, &m0) || ag_layout_mode(&c->lc, &t->layout, 1, &m1))
    ag__ck_oom(c);
  if (ag_layout_size(&m0) != rows || ag_layout_size(&m1) != 16)
    ag__ck_error(c, n, "operand %s of %s is a %lld x 16 shared tile, not %lld x %lld (slice "
                 "16 columns of k: s[..., k0:k0 + 16])",
                 opname, in->name, (long long)rows, (long long)ag_layout_size(&m0),
                 (long long)ag_layout_size(&m1));
  int esz = ag__dt_size(t->dt);
  /* the swizzle repeats every `period` bytes from the buffer's start (the
   * lowering aligns the buffer to it): the offset's multiples of it do not
   * matter, what is left must be the same for every thread and iteration */
  int64_t period = ag__wgmma_period(t->swizzled, t->swz);
  int64_t k0;
  const ag_expr *rest = ag__xsplit_lin(c, t->base, &k0);
  int64_t rv;
  if (!(ag_expr_is_const(rest, &rv) && rv == 0) && ag__xalign(c, rest) % period)
    ag__ck_error(c, n, "operand %s of %s: the tile's offset in its buffer varies by other "
                 "than multiples of %lld bytes (the swizzle's period), so no one descriptor "
                 "layout fits every instance; index stages and rows in whole periods",
                 opname, in->name, (long long)period);
  ag_gmma_desc d;
  ag_gmma_major major;
  if (ag__wgmma_desc(&c->lc, &t->layout, t->swizzled, t->swz, esz, t->base, rows, &d, &major))
    ag__ck_error(c, n, "operand %s of %s has no wgmma descriptor: %s", opname, in->name,
                 ag_str_cstr(&c->lc.err));
}

/* The obligation that element (row, k) of shared operand t is settled for
 * the thread, for every value index and k the path bounds. */
static void wg_settled(ag__ck *c, const ag_tile_node *n, const ag__tile *t, const ag_expr *row,
                       const ag_expr *k, const ag__bx *path, const ag_expr *v, const char *why) {
  ag_xtuple kids[2] = {{1, row, 0, NULL}, {1, k, 0, NULL}};
  ag_xtuple *kp[2] = {&kids[0], &kids[1]};
  ag_xtuple co = {0, NULL, 2, kp};
  const ag_expr *off;
  if (ag_layout_eval_coord_x(&c->lc, &t->layout, &co, &off))
    ag__ck_error(c, n, "internal: cannot evaluate the operand's layout");
  int esz = ag__dt_size(t->dt);
  const ag_expr *addr =
      swizzled(c, t, ag__x(c, AG_X_ADD, t->base, ag__x(c, AG_X_MUL, off, ag__xc(c, esz))));
  ag__data d = data_new(c, t->dt, esz);
  for (int j = 0; j < esz; j++)
    d.tags[j] = ag__tag_shr(c, t->buf, ag__x(c, AG_X_ADD, addr, ag__xc(c, j)), n);
  if (c->replay)
    return;
  ag__oblig o;
  memset(&o, 0, sizeof o);
  o.k = OB_NE;
  o.at = n;
  o.path = path;
  o.lhs.tag = elem_tag(c, &d, 0, d.n);
  o.lhs.proj = -1;
  o.rhs.tag = ag__tag_top(c, NULL);
  o.rhs.proj = -1;
  o.rhs.literal = 1;
  o.why = why;
  o.wv = v;
  o.wk = k;
  wg_push(c, &o);
}

/* The shared bytes operand t (rows x 16) of a wgmma reads, for the race
 * check (race.c): the warpgroup reads them through the async proxy; thread
 * tid % 128 is named the reader of 16-byte chunks q = j * 128 + tid % 128
 * (row q / 2, columns (q % 2) * 8 ..), or of single elements where a chunk
 * is not contiguous (an MN-major tile). Every byte of the operand is read by
 * one thread of the warpgroup, so a write another thread makes before a
 * release of the warpgroup's threads is paired with it. */
static void wg_race_read(ag__ck *c, const ag_tile_node *n, int buf, const ag_expr *addr, int w,
                         const ag__bx *g, ag__wgpend *rd) {
  c->race_inflight = 1;
  ag__race_read(c, n, buf, addr, w, g);
  c->race_inflight = 0;
  ag__wgread *v = ag__ck_alloc(c, (size_t)(rd->nreads + 1) * sizeof *v);
  if (rd->nreads)
    ag__mcpy(v, rd->reads, (size_t)rd->nreads * sizeof *v);
  ag__wgread r = {n, buf, w, addr, g};
  v[rd->nreads++] = r;
  rd->reads = v;
}

static void wg_race_reads(ag__ck *c, const ag_tile_node *n, const ag__tile *t, int64_t rows,
                          ag__wgpend *rd) {
  int esz = ag__dt_size(t->dt);
  int per = 16 / esz;                       /* elements per 16-byte chunk */
  int64_t chunks = rows * (16 / per);
  const ag_expr *lt = ag__x(c, AG_X_MOD, c->tid, ag__xc(c, 128));
  for (int64_t j = 0; j * 128 < chunks; j++) {
    const ag_expr *q = ag__x(c, AG_X_ADD, lt, ag__xc(c, j * 128));
    const ag_expr *row = ag__x(c, AG_X_DIV, q, ag__xc(c, 16 / per));
    const ag_expr *col0 =
        ag__x(c, AG_X_MUL, ag__x(c, AG_X_MOD, q, ag__xc(c, 16 / per)), ag__xc(c, per));
    const ag__bx *g = c->path;
    if ((j + 1) * 128 > chunks)
      g = ag__band(c, g ? g : ag__bconst(c, 1), ag__bcmp(c, AG_OP_LT, q, ag__xc(c, chunks)));
    const ag_expr *addr[8];
    for (int e = 0; e < per && e < 8; e++) {
      ag_xtuple kids[2] = {{1, row, 0, NULL},
                           {1, ag__x(c, AG_X_ADD, col0, ag__xc(c, e)), 0, NULL}};
      ag_xtuple *kp[2] = {&kids[0], &kids[1]};
      ag_xtuple co = {0, NULL, 2, kp};
      const ag_expr *off;
      if (ag_layout_eval_coord_x(&c->lc, &t->layout, &co, &off))
        ag__ck_error(c, n, "internal: cannot evaluate the operand's layout");
      addr[e] = swizzled(c, t, ag__x(c, AG_X_ADD, t->base, ag__x(c, AG_X_MUL, off,
                                                                   ag__xc(c, esz))));
    }
    /* contiguous for every thread: the addresses depend on the thread only
     * (a constant stage) and are evaluated, or the difference folds */
    int contiguous = per <= 8;
    for (int e = 1; contiguous && e < per; e++) {
      int64_t d;
      const ag_expr *diff = ag__x(c, AG_X_SUB, addr[e], addr[0]);
      if (ag_expr_is_const(diff, &d)) {
        contiguous = d == e * esz;
        continue;
      }
      for (int64_t th = 0; contiguous && th < c->nthreads; th++) {
        int64_t a0, ae;
        contiguous = !ag__xeval_tid(addr[0], th, &a0) && !ag__xeval_tid(addr[e], th, &ae) &&
                     ae - a0 == e * esz;
      }
    }
    if (contiguous)
      wg_race_read(c, n, t->buf, addr[0], 16, g, rd);
    else
      for (int e = 0; e < per && e < 8; e++)
        wg_race_read(c, n, t->buf, addr[e], esz, g, rd);
  }
}

static void do_wgmma(ag__ck *c, const ag_tile_node *n, const ag__intrin *in) {
  nargs(c, n, 3, 3, "wgmma_m64nNk16(d, a, b)");
  if (c->symbolic_if)
    need_warpgroup(c, n, in->name); /* the warpgroup issues it together: a role's */
  if (c->nthreads % 128)
    ag__ck_error(c, n, "%s is issued by whole warpgroups of 128 threads; the block has %lld",
                 in->name, (long long)c->nthreads);
  int dbuf;
  int64_t dbase, dsize;
  ag__dt ddt;
  reg_range(c, n->list.v[0], eval(c, n->list.v[0]), "operand d", &dbuf, &dbase, &dsize, &ddt);
  if (ddt != DT_F32 || dsize != 2 * in->n)
    ag__ck_error(c, n->list.v[0], "operand d of %s is the thread's %d f32 accumulators "
                 "(make_local((%d,), f32)), not %lld bytes of %s",
                 in->name, in->n / 2, in->n / 2, (long long)dsize, ag__dt_name(ddt));
  ag__value *av = eval(c, n->list.v[1]), *bv = eval(c, n->list.v[2]);
  if (bv->k != V_TILE || bv->t->sp != SP_SHARED)
    ag__ck_error(c, n->list.v[2], "operand b of %s is an N x 16 shared tile (read through a "
                 "descriptor), not %s",
                 in->name, bv->k == V_TILE ? "a register or global tile" : kind_name(bv->k));
  ag__dt adt, bdt = bv->t->dt;
  int ashared = av->k == V_TILE && av->t->sp == SP_SHARED;
  int abuf = -1;
  int64_t abase = 0, asize = 16;
  if (ashared)
    adt = av->t->dt;
  else {
    reg_range(c, n->list.v[1], av, "operand a (registers, or a 64 x 16 shared tile)", &abuf,
              &abase, &asize, &adt);
    if (asize != 16)
      ag__ck_error(c, n->list.v[1], "operand a of %s in registers is the thread's 8 bf16/f16 "
                   "values (the .a atom), not %lld bytes",
                   in->name, (long long)asize);
  }
  if ((adt != DT_BF16 && adt != DT_F16) || bdt != adt)
    ag__ck_error(c, n, "operands a and b of %s must both be bf16 or both f16 (got %s and %s)",
                 in->name, ag__dt_name(adt), ag__dt_name(bdt));
  if (ashared)
    wg_operand(c, n->list.v[1], av->t, in, "a", 64);
  wg_operand(c, n->list.v[2], bv->t, in, "b", in->n);
  if (abuf >= 0)
    wg_pending_hit(c, n->list.v[1], abuf, abase, 16, "wgmma reads operand a from");
  c->pc++;
  /* what the thread's accumulators depend on: (m, n) = .d(t, v) for every v
   * and k; t is the thread's index in its warpgroup */
  ag_layout dtv;
  ag_atom_info info;
  if (ag_atom_layout(&c->lc, in->atom_c, &dtv, &info))
    ag__ck_error(c, n, "no layout for '%s': %s", in->atom_c, ag_str_cstr(&c->lc.err));
  const ag_expr *vs = ag_expr_sym(&c->lc, "@wg.v"), *ks = ag_expr_sym(&c->lc, "@wg.k");
  if (!vs || !ks)
    ag__ck_oom(c);
  const ag__bx *range = ag__band(c, ag__bcmp(c, AG_OP_LT, vs, ag__xc(c, in->n / 2)),
                                 ag__bcmp(c, AG_OP_LT, ks, ag__xc(c, 16)));
  const ag__bx *path = c->path ? ag__band(c, c->path, range) : range;
  ag_xtuple kids[2] = {{1, ag__x(c, AG_X_MOD, c->tid, ag__xc(c, 128)), 0, NULL},
                       {1, vs, 0, NULL}};
  ag_xtuple *kp[2] = {&kids[0], &kids[1]};
  ag_xtuple co = {0, NULL, 2, kp};
  const ag_expr *off;
  if (ag_layout_eval_coord_x(&c->lc, &dtv, &co, &off))
    ag__ck_error(c, n, "internal: cannot evaluate '%s'", in->atom_c);
  const ag_expr *m = ag__x(c, AG_X_MOD, off, ag__xc(c, 64));
  const ag_expr *nn = ag__x(c, AG_X_DIV, off, ag__xc(c, 64));
  char why[160];
  if (ashared) {
    snprintf(why, sizeof why, "%s operand a: A[m, k] of the thread's accumulator (m, n)",
             in->name);
    wg_settled(c, n->list.v[1], av->t, m, ks, path, vs, ag__ck_strdup(c, why));
  }
  snprintf(why, sizeof why, "%s operand b: B[n, k] of the thread's accumulator (m, n)", in->name);
  wg_settled(c, n->list.v[2], bv->t, nn, ks, path, vs, ag__ck_strdup(c, why));
  /* D keeps its tags; it is pending in the open group, and so are the
   * operand reads */
  ag__wgpend p = {dbuf, dbase, dbase + dsize, c->wg_ngroups, n, NULL, 0};
  if (ashared)
    wg_race_reads(c, n->list.v[1], av->t, 64, &p);
  wg_race_reads(c, n->list.v[2], bv->t, in->n, &p);
  if (ag_vec_push(&c->wg_pend, p))
    ag__ck_oom(c);
}

/* wgmma groups are counted for the block: under a role split (a
 * thread-dependent 'if' that takes whole warpgroups) one role may commit
 * and wait on them, not two */
static void wg_block(ag__ck *c, const ag_tile_node *n, const char *what) {
  if (!c->symbolic_if) {
    need_block(c, n, what);
    return;
  }
  need_warpgroup(c, n, what);
  const ag__bx *g = thread_part(c, c->path);
  if (!c->wg_role)
    c->wg_role = g;
  else if (c->wg_role != g)
    ag__ck_error(c, n,
                 "%s under another thread condition than the wgmma groups before it: the "
                 "checker counts wgmma groups for the block, so only one role of a "
                 "warp-specialized kernel may commit and wait on them",
                 what);
}

static void do_wg_wait(ag__ck *c, const ag_tile_node *n) {
  nargs(c, n, 1, 1, "wgmma_wait(n)");
  wg_block(c, n, "wgmma_wait");
  int64_t k = as_const(c, n->list.v[0], eval(c, n->list.v[0]), "the number of pending groups");
  if (k < 0 || k > 7)
    ag__ck_error(c, n, "wgmma_wait needs a count in 0..7, not %lld", (long long)k);
  c->pc++;
  size_t j = 0;
  for (size_t i = 0; i < c->wg_pend.n; i++) {
    const ag__wgpend *p = &c->wg_pend.v[i];
    if (!(p->group < c->wg_ngroups - k)) {
      c->wg_pend.v[j++] = *p;
      continue;
    }
    for (int r = 0; r < p->nreads; r++)
      ag__race_read_retire(c, &p->reads[r]);
  }
  c->wg_pend.n = j;
  if (k == 0)
    ag__race_retire_all(c);
}

static ag__value *call_intrinsic(ag__ck *c, const ag_tile_node *n, const ag__intrin *in) {
  switch (in->kind) {
  case IK_MMA: do_mma(c, n, in); break;
  case IK_LDMATRIX: do_ldmatrix(c, n, in); break;
  case IK_CP_ASYNC: do_cp_async(c, n, in); break;
  case IK_CP_COMMIT:
    nargs(c, n, 0, 0, "cp_async_commit()");
    need_block(c, n, "cp_async_commit");
    c->ngroups++;
    c->group_open = 0;
    break;
  case IK_CP_WAIT: do_wait(c, n); break;
  case IK_SYNC:
    nargs(c, n, 0, 0, "syncthreads()");
    need_block(c, n, "syncthreads");
    c->epoch++;
    ag__race_barrier(c);
    c->pc++;
    break;
  case IK_WGMMA: do_wgmma(c, n, in); break;
  case IK_WG_FENCE:
    nargs(c, n, 0, 0, "wgmma_fence()");
    if (c->symbolic_if)
      need_warpgroup(c, n, "wgmma_fence");
    break;
  case IK_MBAR_INIT: do_mbar_init(c, n, in); break;
  case IK_MBAR_FENCE:
    nargs(c, n, 0, 0, "fence_mbar_init()");
    for (size_t i = 0; i < c->mbars.n; i++)
      c->mbars.v[i].fenced = 1;
    c->pc++;
    break;
  case IK_MBAR_ARRIVE: do_mbar_arrive(c, n, in); break;
  case IK_MBAR_WAIT: do_mbar_wait(c, n, in); break;
  case IK_BULK_COPY: do_bulk_copy(c, n, in); break;
  case IK_TMA_LOAD: do_tma_load(c, n, in); break;
  case IK_TMA_STORE: do_tma_store(c, n, in); break;
  case IK_TMA_COMMIT:
    nargs(c, n, 0, 0, "tma_store_commit()");
    (void)path_threads(c, n, in->name);
    for (size_t i = 0; i < c->tst_pend.n; i++)
      if (c->tst_pend.v[i].group < 0)
        c->tst_pend.v[i].group = c->tst_ngroups;
    c->tst_ngroups++;
    break;
  case IK_TMA_WAIT: do_tma_wait(c, n); break;
  case IK_WG_COMMIT:
    nargs(c, n, 0, 0, "wgmma_commit()");
    wg_block(c, n, "wgmma_commit");
    c->wg_ngroups++;
    break;
  case IK_WG_WAIT: do_wg_wait(c, n); break;
  case IK_SETMAXNREG: do_setmaxnreg(c, n, in); break;
  case IK_CP_MBAR_ARRIVE: do_cp_mbar_arrive(c, n, in); break;
  }
  return newv(c, V_NONE);
}

/* Reductions and math on data. */
static ag__value *reduce(ag__ck *c, const ag_tile_node *n) {
  nargs(c, n, 1, 1, "a reduction");
  ag__value *v = eval(c, n->list.v[0]);
  if (v->k == V_DATA || v->k == V_ELEM) {
    ag__value *r = newv(c, V_DATA);
    r->d = to_data(c, n, v, DT_NONE);
    return r;
  }
  int buf;
  int64_t base, size;
  ag__dt dt;
  if (v->k != V_TILE || v->t->sp != SP_REG)
    ag__ck_error(c, n, "reductions run over a register tile");
  ag__tile *t = v->t;
  int64_t cnt;
  int64_t *o = layout_offsets(c, n, &t->layout, &cnt);
  int64_t b0;
  if (!ag_expr_is_const(t->base, &b0))
    ag__ck_error(c, n, "register tile at a non-constant offset");
  (void)buf; (void)base; (void)size; (void)dt;
  int esz = ag__dt_size(t->dt);
  const ag__tag *tg = ag__tag_bot(c);
  for (int64_t i = 0; i < cnt; i++)
    for (int j = 0; j < esz; j++)
      tg = ag__tag_join(c, tg, c->rbufs.v[t->buf].bytes[b0 + o[i] * esz + j]);
  ag__value *r = newv(c, V_DATA);
  r->d = data_fill(c, t->dt, esz, tg);
  return r;
}

/* An element-wise builtin (tile_builtin.h): the result's tag is the join of
 * the operands'; integer data only where the row has integer semantics. */
static ag__value *builtin(ag__ck *c, const ag_tile_node *n, const ag__builtin *bi) {
  nargs(c, n, bi->arity, bi->arity, bi->name);
  ag__value *ops[2];
  int ints = 1;
  for (int i = 0; i < bi->arity; i++) {
    ops[i] = eval(c, n->list.v[i]);
    ints &= ops[i]->k == V_INT;
  }
  if (bi->ints && ints) {
    int64_t x[2] = {0, 0};
    for (int i = 0; i < bi->arity; i++)
      if (!ag_expr_is_const(ops[i]->i, &x[i]))
        ag__ck_error(c, n, "%s of integers that are not compile-time constants", bi->name);
    return vint(c, ag__xc(c, bi->ints(x[0], x[1])));
  }
  ag__value *v = data_arith(c, n, ops, bi->arity);
  if (!bi->int_data && !ag__dt_is_float(v->d.dt))
    ag__ck_error(c, n, "%s() takes floating-point data, not %s (convert it with cvt(x, f32))",
                 bi->name, ag__dt_name(v->d.dt));
  return v;
}

/* A warp exchange (AG__BI_LANE): lane l gets the value of lane l ^ mask.
 * Tags are in terms of the holding thread, so another lane's tag is not the
 * operand's: the result is top (the values no longer carry their origin;
 * relabel them to assert on them), bottom when the operand is bottom (a
 * constant in every lane). Registers only:
 * no memory is touched, so no race. Every lane of the warp takes part: not
 * under a thread-dependent 'if' that splits a warp (the lowering's full-mask
 * shfl.sync would hang or read lanes that did not arrive; a warp or
 * warpgroup role keeps warps whole), and only in blocks of whole warps. */
static ag__value *lane_xchg(ag__ck *c, const ag_tile_node *n, const ag__builtin *bi) {
  nargs(c, n, 2, 2, "shfl_xor(x, lane_mask)");
  if (c->nthreads % 32)
    ag__ck_error(c, n, "%s() needs a block of whole warps (this one has %lld threads)",
                 bi->name, (long long)c->nthreads);
  need_whole(c, n, bi->name, 32);
  ag__value *x = eval(c, n->list.v[0]);
  if (x->k != V_DATA && x->k != V_ELEM)
    ag__ck_error(c, n->list.v[0], "%s() exchanges data (a register element or a value)",
                 bi->name);
  ag__data d = to_data(c, n, x, DT_NONE);
  if (ag__dt_size(d.dt) > 8)
    ag__ck_error(c, n->list.v[0], "%s() needs a scalar element (8 bytes at most), not %s",
                 bi->name, ag__dt_name(d.dt));
  int64_t m = as_const(c, n->list.v[1], eval(c, n->list.v[1]), "the lane mask");
  if (m < 0 || m > 31)
    ag__ck_error(c, n->list.v[1], "%s() needs a lane mask in 0..31, not %lld", bi->name,
                 (long long)m);
  ag__value *r = newv(c, V_DATA);
  const ag__tag *t = elem_tag(c, &d, 0, d.n);
  r->d = data_fill(c, d.dt, d.n,
                   t->k == TG_BOT ? t : ag__tag_top(c, "a value from another lane (shfl_xor)"));
  return r;
}

static ag__value *call(ag__ck *c, const ag_tile_node *n) {
  const ag_tile_node *f = n->a;
  /* methods: x.view(...) */
  if (f->kind == AG_TN_ATTR && strcmp(f->name, "view") == 0) {
    ag__value *base = eval(c, f->a);
    nargs(c, n, 2, 3, "view(shape_or_layout, dtype[, swizzle])");
    ag__value *shape = eval(c, n->list.v[0]);
    ag__dt dt = as_dtype(c, n->list.v[1]);
    ag__value *swz = NULL;
    if (n->list.n == 3) {
      swz = eval(c, n->list.v[2]);
      if (swz->k != V_SWIZZLE)
        ag__ck_error(c, n->list.v[2], "expected swizzle(B, M, S), not %s", kind_name(swz->k));
    }
    if (base->k == V_DATA) {
      /* a register value viewed as a tile: copy it into fresh registers */
      ag__value *tmp = newv(c, V_TILE);
      ag__rbuf r = {NULL, base->d.n, NULL};
      r.bytes = ag__ck_alloc(c, (size_t)r.size * sizeof *r.bytes);
      ag__mcpy(r.bytes, base->d.tags, (size_t)r.size * sizeof *r.bytes);
      if (ag_vec_push(&c->rbufs, r))
        ag__ck_oom(c);
      ag__tile *t = tile_new(c);
      t->sp = SP_REG;
      t->dt = base->d.dt;
      t->buf = (int)c->rbufs.n - 1;
      t->base = ag__xc(c, 0);
      ag_tuple *one = ag_tuple_leaf(&c->lc, 1), *zero = ag_tuple_leaf(&c->lc, 0);
      if (!one || !zero || ag_layout_make(&c->lc, one, zero, &t->layout))
        ag__ck_oom(c);
      tmp->t = t;
      base = tmp;
    } else if (base->k == V_ELEM && base->e.tile->sp != SP_GLOBAL) {
      ag__ck_error(c, f->a, "view() of a single element: load it into a name first "
                            "(x = t[i]; x.view(...))");
    }
    if (base->k != V_TILE)
      ag__ck_error(c, f->a, "view() applies to a tile, not %s", kind_name(base->k));
    if (base->t->sp == SP_GLOBAL) {
      if (swz)
        ag__ck_error(c, n->list.v[2], "global memory is not swizzled");
      return view_global(c, n, base->t, shape, dt);
    }
    return view_local(c, n, base->t, shape, dt, swz);
  }
  if (f->kind == AG_TN_ATTR) {
    ag__value *fv = eval(c, f);
    if (fv->k == V_INTRIN_OP)
      return intrin_coord(c, n, fv);
    ag__ck_error(c, f, "'%s' is not a function", f->name);
  }
  if (f->kind != AG_TN_NAME)
    ag__ck_error(c, f, "only named functions can be called");
  const char *fn = f->name;
  ag__value *user = lookup(c, fn);
  if (user)
    ag__ck_error(c, f, "'%s' is %s, not a function", fn, kind_name(user->k));
  const ag__intrin *in = ag__intrin_lookup(fn);
  if (in)
    return call_intrinsic(c, n, in);
  if (!strcmp(fn, "make_shared"))
    return make_shared(c, n);
  if (!strcmp(fn, "make_local"))
    return make_local(c, n);
  if (!strcmp(fn, "tma_map"))
    return make_tma_map(c, n);
  if (!strcmp(fn, "tag"))
    return tag_of(c, n);
  if (!strcmp(fn, "reset")) {
    do_reset(c, n);
    return newv(c, V_NONE);
  }
  if (!strcmp(fn, "fill")) {
    do_fill(c, n);
    return newv(c, V_NONE);
  }
  if (!strcmp(fn, "layout")) {
    nargs(c, n, 2, 2, "layout(shape, stride)");
    ag_tuple *sh = to_tuple(c, n, eval(c, n->list.v[0]), "a layout shape");
    ag_tuple *st = to_tuple(c, n, eval(c, n->list.v[1]), "a layout stride");
    check_shape(c, n, sh);
    ag__value *v = newv(c, V_LAYOUT);
    if (ag_layout_make(&c->lc, sh, st, &v->layout))
      ag__ck_error(c, n, "bad layout: %s", ag_str_cstr(&c->lc.err));
    return v;
  }
  if (!strcmp(fn, "swizzle")) {
    nargs(c, n, 3, 3, "swizzle(B, M, S)");
    ag__value *v = newv(c, V_SWIZZLE);
    v->swz.b = (int)as_const(c, n->list.v[0], eval(c, n->list.v[0]), "B");
    v->swz.m = (int)as_const(c, n->list.v[1], eval(c, n->list.v[1]), "M");
    v->swz.s = (int)as_const(c, n->list.v[2], eval(c, n->list.v[2]), "S");
    if (v->swz.b < 0 || v->swz.m < 0 || v->swz.s < v->swz.b || v->swz.b + v->swz.m + v->swz.s > 24)
      ag__ck_error(c, n, "swizzle(B, M, S) needs B, M >= 0, S >= B and B + M + S <= 24");
    return v;
  }
  if (!strcmp(fn, "cvt")) {
    nargs(c, n, 2, 2, "cvt(x, dtype)");
    ag__value *x = eval(c, n->list.v[0]);
    ag__dt dt = as_dtype(c, n->list.v[1]);
    if (ag__dt_size(dt) > 8)
      ag__ck_error(c, n, "cvt converts to a scalar type");
    ag__data d = to_data(c, n, x, dt);
    if (ag__dt_size(d.dt) > 8)
      ag__ck_error(c, n, "cvt converts from a scalar type, not %s (view the value with a "
                         "scalar type first)",
                   ag__dt_name(d.dt));
    ag__value *v = newv(c, V_DATA);
    v->d = data_fill(c, dt, ag__dt_size(dt), elem_tag(c, &d, 0, d.n));
    return v;
  }
  const ag__builtin *bi = ag__builtin_lookup(fn);
  if (bi)
    return bi->kind == AG__BI_REDUCE ? reduce(c, n)
           : bi->kind == AG__BI_LANE ? lane_xchg(c, n, bi) : builtin(c, n, bi);
  if (!strcmp(fn, "range"))
    ag__ck_error(c, n, "range() is only valid in a 'for' loop");
  if (ag__dt_lookup(fn) != DT_NONE)
    ag__ck_error(c, f, "'%s' is a data type; to convert a value write cvt(x, %s)", fn, fn);
  ag__ck_error(c, f, "unknown function '%s'", fn);
}

/* -------------------------------------------------------------- evaluation */
static ag__value *name_value(ag__ck *c, const ag_tile_node *n) {
  ag__value *v = lookup(c, n->name);
  if (v && v->k == V_POISON && v->poison_at->kind == AG_TN_FOR)
    ag__ck_error(c, n,
                 "'%s' was assigned in loop 'for %s in ...' at line %d, which the checker "
                 "summarized instead of unrolling: its value from an earlier iteration is not "
                 "tracked; assign it before use in each iteration (or after the loop)",
                 n->name, v->poison_at->name, v->poison_at->line);
  if (v && v->k == V_POISON)
    ag__ck_error(c, n,
                 "'%s' was given different values on the two paths of the thread-dependent "
                 "'if' at line %d; only data values may differ there (their tags are merged). "
                 "Assign it again after the 'if'",
                 n->name, v->poison_at->line);
  if (v)
    return v;
  ag__dt dt = ag__dt_lookup(n->name);
  if (dt != DT_NONE) {
    v = newv(c, V_DTYPE);
    v->dt = dt;
    return v;
  }
  const ag__intrin *in = ag__intrin_lookup(n->name);
  if (in) {
    v = newv(c, V_INTRIN);
    v->in = in;
    return v;
  }
  if (!strcmp(n->name, "top") || !strcmp(n->name, "bot")) {
    v = newv(c, V_TAGV);
    v->tv.tag = n->name[0] == 't' ? ag__tag_top(c, "written as 'top'") : ag__tag_bot(c);
    v->tv.proj = -1;
    v->tv.literal = 1;
    return v;
  }
  ag__ck_error(c, n, "unknown name '%s'", n->name);
}

static ag__value *attr(ag__ck *c, const ag_tile_node *n) {
  const ag_tile_node *b = n->a;
  if (b->kind == AG_TN_NAME && !lookup(c, b->name) &&
      (!strcmp(b->name, "threadIdx") || !strcmp(b->name, "blockIdx"))) {
    int axis = !strcmp(n->name, "x") ? 0 : !strcmp(n->name, "y") ? 1 : !strcmp(n->name, "z") ? 2 : -1;
    if (axis < 0)
      ag__ck_error(c, n, "%s has fields x, y and z", b->name);
    if (b->name[0] == 'b')
      return vint(c, c->bid[axis]);
    const ag_expr *t = c->tid;
    if (axis == 0)
      return vint(c, c->tdim[1] * c->tdim[2] == 1 ? t : ag__x(c, AG_X_MOD, t, ag__xc(c, c->tdim[0])));
    if (axis == 1)
      return vint(c, ag__x(c, AG_X_MOD, ag__x(c, AG_X_DIV, t, ag__xc(c, c->tdim[0])),
                           ag__xc(c, c->tdim[1])));
    return vint(c, ag__x(c, AG_X_DIV, t, ag__xc(c, c->tdim[0] * c->tdim[1])));
  }
  ag__value *bv = eval(c, b);
  if (bv->k == V_TMAP) {
    if (strcmp(n->name, "bytes"))
      ag__ck_error(c, n, "a tensor map has one attribute, .bytes (what one copy of its box "
                         "moves), not .%s",
                   n->name);
    return vint(c, ag__xc(c, bv->tm->bytes));
  }
  if (bv->k == V_INTRIN) {
    if (bv->in->kind == IK_WGMMA && strcmp(n->name, "a") && strcmp(n->name, "d"))
      ag__ck_error(c, n, "%s has operand layouts .a and .d (thread in the warpgroup, value)",
                   bv->in->name);
    else if (bv->in->kind != IK_WGMMA &&
             (bv->in->kind != IK_MMA || (strcmp(n->name, "a") && strcmp(n->name, "b") && strcmp(n->name, "c"))))
      ag__ck_error(c, n, "%s has operand layouts .a, .b and .c", bv->in->name);
    ag__value *v = newv(c, V_INTRIN_OP);
    v->in = bv->in;
    v->opname = n->name;
    return v;
  }
  ag__ck_error(c, n, "%s has no attribute '%s'", kind_name(bv->k), n->name);
}

static ag__value *binop(ag__ck *c, const ag_tile_node *n) {
  ag__value *a = eval(c, n->a), *b = eval(c, n->b);
  if ((a->k == V_INT || a->k == V_BOOL) && (b->k == V_INT || b->k == V_BOOL)) {
    const ag_expr *x = as_int(c, n->a, a, "an operand"), *y = as_int(c, n->b, b, "an operand");
    int64_t yv;
    if ((n->op == AG_OP_DIV || n->op == AG_OP_FLOORDIV || n->op == AG_OP_MOD) &&
        ag_expr_is_const(y, &yv) && yv == 0)
      ag__ck_error(c, n, "division by zero");
    int64_t xv;
    if ((n->op == AG_OP_SHL || n->op == AG_OP_SHR) && ag_expr_is_const(y, &yv) &&
        (yv < 0 || yv > 62 ||
         (n->op == AG_OP_SHL && ag_expr_is_const(x, &xv) && (xv < 0 || xv > (INT64_MAX >> yv)))))
      ag__ck_error(c, n,
                   "'%s' by %lld overflows: compile-time integers have 63 bits and a shift "
                   "count must be in 0..62 with a result below 2^63",
                   ag_tile_op_text(n->op), (long long)yv);
    return vint(c, ag__x(c, ag_tile_xop(n->op), x, y));
  }
  if (is_dataish(a) || is_dataish(b)) {
    if (n->op != AG_OP_ADD && n->op != AG_OP_SUB && n->op != AG_OP_MUL && n->op != AG_OP_DIV)
      ag__ck_error(c, n, "'%s' on data values is not supported (use + - * /)",
                   ag_tile_op_text(n->op));
    ag__value *ops[2] = {a, b};
    return data_arith(c, n, ops, 2);
  }
  if (a->k == V_FLOAT && b->k == V_FLOAT) {
    ag__value *v = newv(c, V_FLOAT);
    v->f = 0;
    return v;
  }
  ag__ck_error(c, n, "'%s' cannot combine %s and %s", ag_tile_op_text(n->op), kind_name(a->k),
               kind_name(b->k));
}

static ag__value *tuple_value(ag__ck *c, const ag_tile_list *l) {
  ag__value *v = newv(c, V_TUPLE);
  v->n = l->n;
  v->items = ag__ck_alloc(c, (size_t)(l->n ? l->n : 1) * sizeof *v->items);
  for (int i = 0; i < l->n; i++)
    v->items[i] = *eval(c, l->v[i]);
  return v;
}

static ag__value *eval(ag__ck *c, const ag_tile_node *n) {
  switch (n->kind) {
  case AG_TN_INT: return vint(c, ag__xc(c, n->ival));
  case AG_TN_FLOAT: {
    ag__value *v = newv(c, V_FLOAT);
    v->f = n->fval;
    return v;
  }
  case AG_TN_BOOL: return vbool(c, ag__bconst(c, (int)n->ival));
  case AG_TN_STR: ag__ck_error(c, n, "a string is not a value here");
  case AG_TN_NAME: return name_value(c, n);
  case AG_TN_ATTR: return attr(c, n);
  case AG_TN_BINOP: return binop(c, n);
  case AG_TN_UNOP: {
    ag__value *a = eval(c, n->a);
    if (a->k == V_INT) {
      if (n->op == AG_OP_NEG)
        return vint(c, ag__x(c, AG_X_SUB, ag__xc(c, 0), a->i));
      if (n->op == AG_OP_INV)
        return vint(c, ag__x(c, AG_X_XOR, a->i, ag__xc(c, -1)));
      return a;
    }
    if (a->k == V_FLOAT)
      return a;
    if (is_dataish(a)) {
      ag__value *ops[1] = {a};
      return data_arith(c, n, ops, 1);
    }
    ag__ck_error(c, n, "'%s' needs a number, not %s", ag_tile_op_text(n->op), kind_name(a->k));
  }
  case AG_TN_CMP: {
    ag__value *a = eval(c, n->a), *b = eval(c, n->b);
    if (a->k == V_TAGV || b->k == V_TAGV)
      ag__ck_error(c, n, "tags are compared only in an 'assert'");
    return vbool(c, ag__bcmp(c, n->op, as_int(c, n->a, a, "a compared value"),
                             as_int(c, n->b, b, "a compared value")));
  }
  case AG_TN_LAND:
    return vbool(c, ag__band(c, as_bool(c, n->a, eval(c, n->a)), as_bool(c, n->b, eval(c, n->b))));
  case AG_TN_LOR:
    return vbool(c, ag__bor(c, as_bool(c, n->a, eval(c, n->a)), as_bool(c, n->b, eval(c, n->b))));
  case AG_TN_LNOT: return vbool(c, ag__bnot(c, as_bool(c, n->a, eval(c, n->a))));
  case AG_TN_TERNARY: {
    const ag__bx *cond = as_bool(c, n->b, eval(c, n->b));
    int cv;
    if (ag__bis_const(cond, &cv))
      return eval(c, cv ? n->a : n->c);
    ag__value *x = eval(c, n->a), *y = eval(c, n->c);
    if (x->k == V_INT && y->k == V_INT) {
      if (x->i == y->i)
        return x;
      ag__ck_error(c, n,
                   "an integer chosen by a thread-dependent condition is not supported; "
                   "compute it arithmetically");
    }
    /* path-insensitive select: byte by byte, the join of both arms' tags */
    ag__dt dt = data_dt(x) != DT_NONE ? data_dt(x) : data_dt(y);
    if (dt == DT_NONE)
      ag__ck_error(c, n, "a thread-dependent choice between two constants has no type");
    ag__data dx = to_data(c, n->a, x, dt), dy = to_data(c, n->c, y, dt);
    if (dx.n != dy.n)
      ag__ck_error(c, n, "the two arms have different sizes (%d and %d bytes)", dx.n, dy.n);
    ag__value *v = newv(c, V_DATA);
    v->d = data_new(c, dt, dx.n);
    for (int j = 0; j < dx.n; j++)
      v->d.tags[j] = ag__tag_join(c, dx.tags[j], dy.tags[j]);
    return v;
  }
  case AG_TN_CALL: return call(c, n);
  case AG_TN_INDEX: {
    if (n->a->kind == AG_TN_CALL && n->a->a->kind == AG_TN_NAME && !strcmp(n->a->a->name, "tag")) {
      ag__value *t = eval(c, n->a);
      if (n->list.n != 1 || n->list.v[0]->kind == AG_TN_SLICE)
        ag__ck_error(c, n, "a tag component is selected with one index: tag(x)[i]");
      int64_t k = as_const(c, n->list.v[0], eval(c, n->list.v[0]), "a tag component");
      ag__value *v = newv(c, V_TAGV);
      v->tv = t->tv;
      v->tv.proj = (int)k;
      if (k < 0 || k > 64)
        ag__ck_error(c, n, "tag component %lld is out of range", (long long)k);
      return v;
    }
    ag__value *b = eval(c, n->a);
    if (b->k == V_TUPLE) {
      if (n->list.n != 1)
        ag__ck_error(c, n, "a tuple takes one index");
      int64_t k = as_const(c, n->list.v[0], eval(c, n->list.v[0]), "a tuple index");
      if (k < 0 || k >= b->n)
        ag__ck_error(c, n, "tuple index %lld out of range (%d items)", (long long)k, b->n);
      return &b->items[k];
    }
    if (b->k == V_DATA)
      ag__ck_error(c, n, "'%s' holds a single value; view it as a tile first",
                   n->a->kind == AG_TN_NAME ? n->a->name : "this");
    if (b->k != V_TILE)
      ag__ck_error(c, n, "cannot index %s", kind_name(b->k));
    if (b->t->sp == SP_GLOBAL)
      return index_global(c, n, b->t);
    return index_local(c, n, b->t);
  }
  case AG_TN_TUPLE: return tuple_value(c, &n->list);
  case AG_TN_SLICE: ag__ck_error(c, n, "a slice ':' is valid only inside an index");
  case AG_TN_ARROW:
    ag__ck_error(c, n, "a tag function 'X[i, j] -> (...)' must be assigned to a name");
  case AG_TN_KWARG: ag__ck_error(c, n, "keyword argument outside a call");
  default: break;
  }
  ag__ck_error(c, n, "not an expression");
}

/* ----------------------------------------------------------- statements */
static void step(ag__ck *c, const ag_tile_node *n) {
  c->pc++;
  int64_t max_mib = c->opts->max_memory_mib ? c->opts->max_memory_mib : AG_TILE_MAX_MEMORY_MIB;
  if ((int64_t)(c->arena.used_total >> 20) >= max_mib)
    ag__ck_error(c, n,
                 "interpreting the kernel takes more than %lld MiB (after %lld statements); "
                 "make the compile-time sizes smaller for checking or raise the limit with "
                 "--max-memory",
                 (long long)max_mib, (long long)c->steps);
  if (++c->steps > c->opts->max_steps)
    ag__ck_error(c, n,
                 "the program runs more than %lld statements after unrolling; make the "
                 "compile-time sizes smaller for checking or raise the limit with --max-steps",
                 (long long)c->opts->max_steps);
}

static void define_tagfn(ag__ck *c, const ag_tile_node *stmt, const char *name,
                         const ag_tile_node *arrow) {
  const ag_tile_node *lhs = arrow->a;
  if (lhs->kind != AG_TN_INDEX || lhs->a->kind != AG_TN_NAME)
    ag__ck_error(c, lhs, "a tag function starts with 'X[i, j, ...] ->' naming a tensor or tile");
  ag__tagfn *fn = ag__ck_alloc(c, sizeof *fn);
  fn->name = name;
  fn->target = lhs->a->name;
  fn->rank = lhs->list.n;
  fn->vars = ag__ck_alloc(c, (size_t)fn->rank * sizeof *fn->vars);
  for (int i = 0; i < fn->rank; i++) {
    if (lhs->list.v[i]->kind != AG_TN_NAME)
      ag__ck_error(c, lhs->list.v[i], "the indices of a tag function are plain names");
    fn->vars[i] = lhs->list.v[i]->name;
  }
  fn->body = arrow->b;
  fn->at = stmt;
  fn->env = scope_snapshot(c);
  /* a tensor parameter? */
  for (size_t p = 0; p < c->params.n; p++) {
    ag__param *pm = &c->params.v[p];
    if (pm->is_tensor && !strcmp(pm->name, fn->target) && lookup(c, fn->target) &&
        lookup(c, fn->target)->k == V_TILE && lookup(c, fn->target)->t->sp == SP_GLOBAL &&
        lookup(c, fn->target)->t->g.tensor == (int)p) {
      if (fn->rank != pm->rank)
        ag__ck_error(c, lhs, "tensor '%s' has %d dims; the tag function names %d", pm->name,
                     pm->rank, fn->rank);
      pm->tagfn = fn;
      ag__value *v = newv(c, V_TAGFN);
      v->fn = fn;
      if (name)
        bind(c, name, v);
      return;
    }
  }
  /* a register tile: relabel its elements now */
  ag__value *tv = eval(c, lhs->a);
  if (tv->k != V_TILE || tv->t->sp != SP_REG)
    ag__ck_error(c, lhs->a,
                 "a tag function labels a tensor parameter or a register tile; '%s' is %s",
                 fn->target, tv->k == V_TILE ? "a shared tile" : kind_name(tv->k));
  ag__tile *t = tv->t;
  int rank = ag_layout_rank(&t->layout);
  if (fn->rank != rank)
    ag__ck_error(c, lhs, "tile '%s' has %d modes; the tag function names %d", fn->target, rank,
                 fn->rank);
  int64_t b0;
  if (!ag_expr_is_const(t->base, &b0))
    ag__ck_error(c, lhs, "register tile at a non-constant offset");
  int64_t ext[16];
  ag_layout modes[16];
  if (rank > 16)
    ag__ck_error(c, lhs, "too many modes");
  int64_t total = 1;
  for (int i = 0; i < rank; i++) {
    if (ag_layout_mode(&c->lc, &t->layout, i, &modes[i]))
      ag__ck_oom(c);
    ext[i] = ag_layout_size(&modes[i]);
    total *= ext[i];
  }
  int esz = ag__dt_size(t->dt);
  const ag_expr **co = ag__ck_alloc(c, (size_t)rank * sizeof *co);
  for (int64_t idx = 0; idx < total; idx++) {
    int64_t rest = idx, off = 0;
    for (int i = rank - 1; i >= 0; i--) {
      int64_t ci = rest % ext[i], o;
      rest /= ext[i];
      co[i] = ag__xc(c, ci);
      if (ag_layout_eval_index(&modes[i], ci, &o))
        ag__ck_oom(c);
      off += o;
    }
    const ag__tag *tg = apply_tagfn(c, lhs, fn, co);
    for (int j = 0; j < esz; j++)
      c->rbufs.v[t->buf].bytes[b0 + off * esz + j] = tg;
  }
  ag__value *v = newv(c, V_TAGFN);
  v->fn = fn;
  if (name)
    bind(c, name, v);
}

static void assign_target(ag__ck *c, const ag_tile_node *stmt, const ag_tile_node *t,
                          ag__value *v) {
  if (t->kind == AG_TN_NAME) {
    if (ag__intrin_lookup(t->name) || ag__dt_lookup(t->name) != DT_NONE ||
        !strcmp(t->name, "threadIdx") || !strcmp(t->name, "blockIdx"))
      ag__ck_error(c, t, "'%s' is a built-in name and cannot be assigned", t->name);
    if (v->k == V_ELEM) {
      /* a load into a register value */
      ag__value *d = newv(c, V_DATA);
      d->d = to_data(c, t, v, DT_NONE);
      v = d;
    } else if (v->k == V_NONE) {
      ag__ck_error(c, stmt, "this call returns nothing");
    } else if (v->k == V_TILE && v->t->sp == SP_SHARED && !c->sbufs.v[v->t->buf].name) {
      c->sbufs.v[v->t->buf].name = t->name; /* for messages */
    } else if (v->k == V_TILE && v->t->sp == SP_REG && !c->rbufs.v[v->t->buf].name) {
      c->rbufs.v[v->t->buf].name = t->name;
    }
    bind(c, t->name, v);
    return;
  }
  /* t is X[...] */
  ag__value *dst = eval(c, t);
  if (dst->k == V_TILE) {
    /* a sub-tile: only constants can be broadcast into it */
    if (dst->t->sp != SP_REG || (v->k != V_INT && v->k != V_FLOAT))
      ag__ck_error(c, t,
                   "assigning to a slice broadcasts a constant into register tiles only; "
                   "copy elements one by one in a loop");
    int buf;
    int64_t base, size;
    ag__dt dt;
    if (layout_compact(c, t, &dst->t->layout)) {
      reg_range(c, t, dst, "the target", &buf, &base, &size, &dt);
      for (int64_t j = 0; j < size; j++)
        c->rbufs.v[buf].bytes[base + j] = ag__tag_bot(c);
      return;
    }
    int64_t cnt, b0;
    int64_t *o = layout_offsets(c, t, &dst->t->layout, &cnt);
    ag_expr_is_const(dst->t->base, &b0);
    int esz = ag__dt_size(dst->t->dt);
    for (int64_t i = 0; i < cnt; i++)
      for (int j = 0; j < esz; j++)
        c->rbufs.v[dst->t->buf].bytes[b0 + o[i] * esz + j] = ag__tag_bot(c);
    return;
  }
  if (dst->k != V_ELEM)
    ag__ck_error(c, t, "cannot assign to %s", kind_name(dst->k));
  ag__data d = to_data(c, stmt, v, dst->e.tile->dt);
  store(c, stmt, &dst->e, &d);
}

static void exec_assign(ag__ck *c, const ag_tile_node *n) {
  if (n->list2.n == 1 && n->list2.v[0]->kind == AG_TN_ARROW) {
    if (n->list.n != 1 || n->list.v[0]->kind != AG_TN_NAME)
      ag__ck_error(c, n, "a tag function is assigned to one name: T = X[i] -> (...)");
    define_tagfn(c, n, n->list.v[0]->name, n->list2.v[0]);
    return;
  }
  if (n->op != AG_OP_NONE) {
    /* x op= y */
    ag__value *cur = eval(c, n->list.v[0]);
    ag__value *rhs = eval(c, n->list2.v[0]);
    ag__value *res;
    if (cur->k == V_INT && rhs->k == V_INT) {
      res = vint(c, ag__x(c, ag_tile_xop(n->op), cur->i, rhs->i));
    } else {
      ag__value *ops[2] = {cur, rhs};
      res = data_arith(c, n, ops, 2);
    }
    assign_target(c, n, n->list.v[0], res);
    return;
  }
  int nt = n->list.n;
  ag__value **vals = ag__ck_alloc(c, (size_t)nt * sizeof *vals);
  if (n->list2.n == nt) {
    for (int i = 0; i < nt; i++) {
      if (n->list2.v[i]->kind == AG_TN_ARROW) {
        define_tagfn(c, n, n->list.v[i]->kind == AG_TN_NAME ? n->list.v[i]->name : NULL,
                     n->list2.v[i]);
        vals[i] = NULL;
        continue;
      }
      vals[i] = eval(c, n->list2.v[i]);
      /* loads happen now, before any target is written */
      if (vals[i]->k == V_ELEM) {
        ag__value *d = newv(c, V_DATA);
        d->d = to_data(c, n->list2.v[i], vals[i], DT_NONE);
        vals[i] = d;
      }
    }
  } else {
    ag__value *tv = eval(c, n->list2.v[0]);
    if (tv->k != V_TUPLE || tv->n != nt)
      ag__ck_error(c, n, "%d targets but the value is %s", nt,
                   tv->k == V_TUPLE ? "a tuple of another length" : kind_name(tv->k));
    for (int i = 0; i < nt; i++)
      vals[i] = &tv->items[i];
  }
  for (int i = 0; i < nt; i++)
    if (vals[i])
      assign_target(c, n, n->list.v[i], vals[i]);
}

int ag__ck_stmt(ag__ck *c, const ag_tile_node *n) {
  for (size_t i = 0; i < c->asserts.n; i++)
    if (c->asserts.v[i].at == n) {
      c->asserts.v[i].instances++;
      return (int)i;
    }
  ag__stmt_info s = {n, 1, 0, 0};
  if (ag_vec_push(&c->asserts, s))
    ag__ck_oom(c);
  return (int)c->asserts.n - 1;
}

static ag__tagv tag_side(ag__ck *c, const ag_tile_node *n) {
  ag__value *v = eval(c, n);
  if (v->k == V_TAGV)
    return v->tv;
  ag__tagv tv = {NULL, -1, 1};
  if (v->k == V_TUPLE || v->k == V_INT) {
    int nc = v->k == V_TUPLE ? v->n : 1;
    const ag_expr **comp = ag__ck_alloc(c, (size_t)(nc ? nc : 1) * sizeof *comp);
    for (int i = 0; i < nc; i++)
      comp[i] = as_int(c, n, v->k == V_TUPLE ? &v->items[i] : v, "a tag component");
    tv.tag = ag__tag_tup(c, nc, comp, NULL, NULL);
    return tv;
  }
  ag__ck_error(c, n, "expected tag(x), a tuple of integers, 'top' or 'bot' here, not %s",
               kind_name(v->k));
}

static int is_tag_expr(const ag_tile_node *n) {
  if (n->kind == AG_TN_CALL && n->a->kind == AG_TN_NAME && !strcmp(n->a->name, "tag"))
    return 1;
  if (n->kind == AG_TN_INDEX && is_tag_expr(n->a))
    return 1;
  if (n->kind == AG_TN_NAME && (!strcmp(n->name, "top") || !strcmp(n->name, "bot")))
    return 1;
  return 0;
}

static void exec_assert(ag__ck *c, const ag_tile_node *n) {
  ag__oblig o;
  memset(&o, 0, sizeof o);
  o.at = n;
  o.path = c->path;
  const ag_tile_node *e = n->a;
  if (e->kind == AG_TN_CMP && (e->op == AG_OP_EQ || e->op == AG_OP_NE) &&
      (is_tag_expr(e->a) || is_tag_expr(e->b))) {
    o.k = e->op == AG_OP_EQ ? OB_EQ : OB_NE;
    o.lhs = tag_side(c, e->a);
    o.rhs = tag_side(c, e->b);
    if (o.k == OB_EQ && ((o.lhs.literal && o.lhs.tag->k == TG_TOP) ||
                         (o.rhs.literal && o.rhs.tag->k == TG_TOP)))
      ag__ck_error(c, e,
                   "'== top' is not supported: top means conflicting data; to forbid a "
                   "conflict write 'assert tag(x) != top'");
  } else {
    o.k = OB_INT;
    o.cond = as_bool(c, e, eval(c, e));
  }
  if (c->replay)
    return; /* a summary's replayed iteration: checked as its own instance */
  o.stmt = ag__ck_stmt(c, n);
  o.nloops = (int)c->loops.n;
  o.loops = ag__ck_alloc(c, (size_t)(o.nloops ? o.nloops : 1) * sizeof *o.loops);
  ag__mcpy(o.loops, c->loops.v, (size_t)o.nloops * sizeof *o.loops);
  if (ag_vec_push(&c->obligs, o))
    ag__ck_oom(c);
}

/* Register state snapshot for thread-dependent branches. */
const ag__tag ***ag__snapshot_regs(ag__ck *c) {
  const ag__tag ***s = ag__ck_alloc(c, (c->rbufs.n ? c->rbufs.n : 1) * sizeof *s);
  for (size_t i = 0; i < c->rbufs.n; i++) {
    s[i] = ag__ck_alloc(c, (size_t)(c->rbufs.v[i].size ? c->rbufs.v[i].size : 1) * sizeof **s);
    ag__mcpy(s[i], c->rbufs.v[i].bytes, (size_t)c->rbufs.v[i].size * sizeof **s);
  }
  return s;
}

static int bx_depends(const ag__bx *b, const char *sym) {
  if (!b)
    return 0;
  switch (b->k) {
  case BX_CONST: return 0;
  case BX_CMP: return ag__xdepends(b->a, sym) || ag__xdepends(b->b, sym);
  default: return bx_depends(b->x, sym) || bx_depends(b->y, sym);
  }
}

/* ------------------------------------------------------ warp specialization
 * A role split is a thread-dependent 'if' whose condition takes whole
 * warpgroups (if threadIdx.x / 128 == 0: producer, else: consumers) and
 * whose branches hold loops that synchronize through mbarriers. The roles
 * run concurrently; the interpreter runs them as two timelines interleaved
 * iteration by iteration: the branches are cut at their synchronizing loops
 * (a `for` whose body uses an mbarrier), which must match in order, variable
 * and range (evaluated: the same expression); the statements between them
 * run as segments of each role under its guard (producer, then consumers),
 * and a matched pair of loops runs as one loop whose body is again the two
 * roles' bodies, cut the same way (a persistent tile loop around a k loop).
 * Nothing orders one role's statements against the other's but the
 * mbarriers: races and settledness are decided per thread from waits,
 * arrivals and barriers (race.c, mbar_known), never from this order, and
 * the phase counts are those of this interleaving, which is every
 * execution's when the kernel is race-free (a producer can get ahead of it
 * only by refilling a stage the consumers have not released, a
 * write-after-read race reported at its copy).
 *
 * Each role sees its own names (those bound before the split and its own);
 * registers merge at each segment's join, as in an 'if'. */
typedef struct ag__roles {
  const ag_tile_node *step;   /* the loop body node this level runs (NULL: the split) */
  ag__scope *p, *q;           /* the roles' own names (producer, consumers) */
  const ag__bx *gp, *gq;      /* their guards */
  size_t np0, nq0;            /* names bound before the loop (kept across iterations) */
  struct ag__roles *up;
} ag__roles;

static const ag_tile_node role_mark; /* b of a fused loop body node */

static int sync_loop(const ag_tile_node *s) { return ag__intrin_sync_loop(s); }
static int has_sync_loop(const ag_tile_list *l) {
  for (int i = 0; i < l->n; i++)
    if (sync_loop(l->v[i]) || (l->v[i]->kind != AG_TN_FOR && (has_sync_loop(&l->v[i]->list) ||
                                                             has_sync_loop(&l->v[i]->list2))))
      return 1;
  return 0;
}

/* 1 when cond takes whole warpgroups and differs between two of them */
static int role_split(ag__ck *c, const ag__bx *cond) {
  if (c->nthreads % 128 || c->nthreads < 256)
    return 0;
  int seen[2] = {0, 0};
  for (int64_t t = 0; t < c->nthreads; t++) {
    int v = ag__beval_tid(cond, t);
    if (v < 0 || v != ag__beval_tid(cond, t - t % 128))
      return 0;
    seen[v] = 1;
  }
  return seen[0] && seen[1];
}

/* A role's view of the names: its own (own) over the scope's; role_leave
 * restores the scope's n0 bindings (neutral, returned here). */
static ag__binding *role_enter(ag__ck *c, const ag__scope *own, size_t *n0) {
  ag__scope *outer = c->scope;
  *n0 = outer->b.n;
  ag__binding *neutral = ag__ck_alloc(c, (*n0 ? *n0 : 1) * sizeof *neutral);
  ag__mcpy(neutral, outer->b.v, *n0 * sizeof *neutral);
  for (size_t i = 0; i < own->b.n; i++)
    bind_in(c, outer, own->b.v[i].name, own->b.v[i].v);
  return neutral;
}
static void role_leave(ag__ck *c, const ag__binding *neutral, size_t n0) {
  c->scope->b.n = n0;
  ag__mcpy(c->scope->b.v, neutral, n0 * sizeof *neutral);
}

/* Runs statements [from, to) of l as role r (names: own, guard: g). */
static void role_seg(ag__ck *c, ag__scope *own, const ag__bx *g, const ag_tile_list *l, int from,
                     int to) {
  if (from >= to)
    return;
  ag__scope *outer = c->scope;
  size_t n0;
  ag__binding *neutral = role_enter(c, own, &n0);
  const ag__bx *path = c->path;
  c->path = ag__band(c, path, g);
  for (int i = from; i < to; i++)
    exec_stmt(c, l->v[i]);
  c->path = path;
  for (size_t i = 0; i < outer->b.n; i++) {
    const ag__binding *x = &outer->b.v[i];
    int same = 0;
    for (size_t j = 0; j < n0 && !same; j++)
      same = neutral[j].name == x->name || !strcmp(neutral[j].name, x->name)
                 ? (neutral[j].v == x->v ? 1 : -1)
                 : 0;
    if (same != 1)
      bind_in(c, own, x->name, x->v);
  }
  role_leave(c, neutral, n0);
}

/* The two roles' segments side by side; registers merge at the join. */
static void role_pair(ag__ck *c, ag__roles *r, const ag_tile_list *lp, int p0, int p1,
                      const ag_tile_list *lq, int q0, int q1) {
  size_t nbufs = c->rbufs.n;
  const ag__tag ***before = ag__snapshot_regs(c);
  role_seg(c, r->p, r->gp, lp, p0, p1);
  const ag__tag ***after_p = ag__snapshot_regs(c);
  for (size_t i = 0; i < nbufs; i++)
    ag__mcpy(c->rbufs.v[i].bytes, before[i], (size_t)c->rbufs.v[i].size * sizeof **before);
  role_seg(c, r->q, r->gq, lq, q0, q1);
  for (size_t i = 0; i < nbufs; i++)
    for (int64_t j = 0; j < c->rbufs.v[i].size; j++)
      c->rbufs.v[i].bytes[j] = ag__tag_join(c, c->rbufs.v[i].bytes[j], after_p[i][j]);
}

/* The expressions of a loop's range(...) arguments, in role scope own. */
static void role_range(ag__ck *c, ag__scope *own, const ag_tile_node *f, const ag_expr **x) {
  const ag_tile_node *it = f->a;
  if (it->kind != AG_TN_CALL || it->a->kind != AG_TN_NAME || strcmp(it->a->name, "range") ||
      it->list.n < 1 || it->list.n > 3)
    ag__ck_error(c, it, "a loop runs over range(stop), range(start, stop) or range(start, stop, "
                        "step)");
  size_t n0;
  ag__binding *keep = role_enter(c, own, &n0);
  for (int i = 0; i < 3; i++)
    x[i] = i < it->list.n ? as_int(c, it->list.v[i], eval(c, it->list.v[i]), "a loop bound")
                          : NULL;
  role_leave(c, keep, n0);
}

static void role_fuse(ag__ck *c, ag__roles *r, const ag_tile_list *lp, const ag_tile_list *lq) {
  int ip = 0, iq = 0;
  for (;;) {
    int jp = ip, jq = iq;
    while (jp < lp->n && !sync_loop(lp->v[jp]))
      jp++;
    while (jq < lq->n && !sync_loop(lq->v[jq]))
      jq++;
    role_pair(c, r, lp, ip, jp, lq, iq, jq);
    if (jp == lp->n && jq == lq->n)
      return;
    if (jp == lp->n || jq == lq->n) {
      const ag_tile_node *f = jp < lp->n ? lp->v[jp] : lq->v[jq];
      ag__ck_error(c, f,
                   "loop 'for %s' of one role of this warp-specialized 'if' synchronizes "
                   "through mbarriers, but the other role has no loop left to run beside it: "
                   "the checker interleaves the roles loop by loop (docs/check.md, \"Warp "
                   "specialization\"); give both roles the same loops",
                   f->name);
    }
    const ag_tile_node *fp = lp->v[jp], *fq = lq->v[jq];
    const ag_expr *xp[3], *xq[3];
    role_range(c, r->p, fp, xp);
    role_range(c, r->q, fq, xq);
    if (strcmp(fp->name, fq->name) || fp->a->list.n != fq->a->list.n || xp[0] != xq[0] ||
        xp[1] != xq[1] || xp[2] != xq[2])
      ag__ck_error(c, fq,
                   "the roles' loops at lines %d ('for %s') and %d ('for %s') run side by side "
                   "(the checker interleaves the roles' mbarrier loops in order): give them the "
                   "same variable and the same range",
                   fp->line, fp->name, fq->line, fq->name);
    /* names the body uses must come from before the split or the loop */
    ag_tile_node *body = ag__ck_alloc(c, sizeof *body);
    body->kind = AG_TN_IF;
    body->line = fp->line;
    body->col = fp->col;
    body->b = (ag_tile_node *)&role_mark;
    body->list = fp->list;
    body->list2 = fq->list;
    ag_tile_node *loop = ag__ck_alloc(c, sizeof *loop);
    *loop = *fp;
    loop->list.n = 1;
    loop->list.v = ag__ck_alloc(c, sizeof *loop->list.v);
    loop->list.v[0] = body;
    /* the range, evaluated by exec_loop in the neutral scope, must mean
     * what it meant in the roles' scopes */
    const ag_expr *xn[3];
    role_range(c, scope_new(c, NULL), fp, xn);
    if (xn[0] != xp[0] || xn[1] != xp[1] || xn[2] != xp[2])
      ag__ck_error(c, fp->a,
                   "the range of loop 'for %s' uses a name bound inside a role of this "
                   "warp-specialized 'if'; bind it before the 'if' (the checker runs the "
                   "roles' loops as one)",
                   fp->name);
    /* in the arena: an error inside unwinds past this frame (loop.c's
     * attempts restore c->roles) */
    ag__roles *lvl = ag__ck_alloc(c, sizeof *lvl);
    *lvl = *r;
    lvl->step = body;
    lvl->np0 = r->p->b.n;
    lvl->nq0 = r->q->b.n;
    lvl->up = c->roles;
    c->roles = lvl;
    exec_stmt(c, loop);
    c->roles = lvl->up;
    /* names the loop bound are not visible after it */
    r->p->b.n = lvl->np0;
    r->q->b.n = lvl->nq0;
    ip = jp + 1;
    iq = jq + 1;
  }
}

/* One iteration of a fused loop: the roles' bodies. */
static void exec_role_step(ag__ck *c, const ag_tile_node *n) {
  ag__roles *r = c->roles;
  while (r && r->step != n)
    r = r->up;
  if (!r)
    ag__ck_error(c, n, "internal: a role step outside its loop");
  /* a name a role bound in an earlier iteration is not carried over (a
   * summarized loop's iterations are independent), and one from before the
   * loop must keep its value in a summarized loop */
  r->p->b.n = r->np0;
  r->q->b.n = r->nq0;
  ag__binding *kp = ag__ck_alloc(c, (r->np0 + r->nq0 + 1) * sizeof *kp);
  ag__mcpy(kp, r->p->b.v, r->np0 * sizeof *kp);
  ag__mcpy(kp + r->np0, r->q->b.v, r->nq0 * sizeof *kp);
  role_fuse(c, r, &n->list, &n->list2);
  for (size_t i = 0; c->summarizing && i < r->np0 + r->nq0; i++) {
    const ag__binding *now = i < r->np0 ? &r->p->b.v[i] : &r->q->b.v[i - r->np0];
    if (now->v != kp[i].v)
      ag__ck_error(c, n,
                   "a role of this warp-specialized loop assigns '%s', bound before the loop, "
                   "in a summarized loop: its value would carry from one iteration to the "
                   "next; assign it inside the loop only",
                   now->name);
  }
}

static void exec_roles(ag__ck *c, const ag_tile_node *n, const ag__bx *cond) {
  ag__roles r;
  memset(&r, 0, sizeof r);
  r.p = scope_new(c, NULL);
  r.q = scope_new(c, NULL);
  r.gp = cond;
  r.gq = ag__bnot(c, cond);
  r.up = c->roles;
  c->roles = &r;
  c->symbolic_if++;
  role_fuse(c, &r, &n->list, &n->list2);
  c->symbolic_if--;
  c->roles = r.up;
}

static void exec_if(ag__ck *c, const ag_tile_node *n) {
  const ag__bx *cond = as_bool(c, n->a, eval(c, n->a));
  int cv;
  if (ag__bis_const(cond, &cv)) {
    exec_block(c, cv ? &n->list : &n->list2);
    return;
  }
  /* the same for every thread of the block (problem sizes, a summarized
   * loop's iteration): the assumptions may decide it; the lowering still
   * tests it at run time */
  int uniform = !bx_depends(cond, "tid");
  int nested = c->nested++;
  if (!uniform && (has_sync_loop(&n->list) || has_sync_loop(&n->list2)) &&
      role_split(c, cond)) {
    exec_roles(c, n, cond); /* warp specialization: the roles run side by side */
    c->nested = nested;
    return;
  }
  if (uniform && (cv = ag__smt_decide(c, cond)) >= 0) {
    exec_block(c, cv ? &n->list : &n->list2);
    c->nested = nested;
    return;
  }
  /* both branches; registers merge at the join */
  size_t nbufs = c->rbufs.n;
  const ag__tag ***before = ag__snapshot_regs(c);
  ag__scope *outer = c->scope;
  size_t nbind = outer->b.n;
  ag__binding *saved = ag__ck_alloc(c, (nbind ? nbind : 1) * sizeof *saved);
  ag__mcpy(saved, outer->b.v, nbind * sizeof *saved);
  const ag__bx *path = c->path;
  if (uniform)
    c->uniform_if++;
  else
    c->symbolic_if++;
  c->path = ag__band(c, path, cond);
  exec_block(c, &n->list);
  const ag__tag ***after_then = ag__snapshot_regs(c);
  size_t nb_then = outer->b.n;
  ag__binding *then_b = ag__ck_alloc(c, (nb_then ? nb_then : 1) * sizeof *then_b);
  ag__mcpy(then_b, outer->b.v, nb_then * sizeof *then_b);
  /* restore and run the else branch */
  for (size_t i = 0; i < nbufs; i++)
    ag__mcpy(c->rbufs.v[i].bytes, before[i], (size_t)c->rbufs.v[i].size * sizeof **before);
  outer->b.n = nbind;
  ag__mcpy(outer->b.v, saved, nbind * sizeof *saved);
  c->path = ag__band(c, path, ag__bnot(c, cond));
  exec_block(c, &n->list2);
  c->path = path;
  c->nested = nested;
  if (uniform)
    c->uniform_if--;
  else
    c->symbolic_if--;
  /* merge registers allocated before the if */
  for (size_t i = 0; i < nbufs; i++)
    for (int64_t j = 0; j < c->rbufs.v[i].size; j++)
      c->rbufs.v[i].bytes[j] = ag__tag_join(c, c->rbufs.v[i].bytes[j], after_then[i][j]);
  /* merge names: a name bound on only one side is dropped; equal values
   * stay; data values join; anything else must agree */
  size_t nb_else = outer->b.n;
  ag__binding *else_b = ag__ck_alloc(c, (nb_else ? nb_else : 1) * sizeof *else_b);
  ag__mcpy(else_b, outer->b.v, nb_else * sizeof *else_b);
  outer->b.n = 0;
  for (size_t i = 0; i < nb_then; i++) {
    const char *name = then_b[i].name;
    ag__value *tv = then_b[i].v, *ev = NULL;
    for (size_t k = 0; k < nb_else && !ev; k++)
      if (!strcmp(else_b[k].name, name))
        ev = else_b[k].v;
    if (!ev)
      continue;
    ag__value *m = tv;
    if (ev != tv) {
      if (ev->k == V_DATA && tv->k == V_DATA && ev->d.n == tv->d.n) {
        m = newv(c, V_DATA);
        m->d = data_new(c, tv->d.dt, tv->d.n);
        for (int j = 0; j < tv->d.n; j++)
          m->d.tags[j] = ag__tag_join(c, ev->d.tags[j], tv->d.tags[j]);
      } else if (!(ev->k == V_INT && tv->k == V_INT && ev->i == tv->i)) {
        /* usable again only after a new assignment */
        m = newv(c, V_POISON);
        m->poison_at = n;
      }
    }
    bind_in(c, outer, name, m);
  }
}

/* a * b, saturating at INT64_MAX (both >= 0) */
static int64_t sat_mul(int64_t a, int64_t b) {
  return a && b > INT64_MAX / a ? INT64_MAX : a * b;
}
static int64_t sat_add(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }

/* A lower bound on the statements one run of body interprets, known before
 * running it: every statement counts one, a nested loop whose bounds are
 * integer literals counts its trips times its body, an if its cheaper
 * branch. Blocks nest at most AG_TILE_MAX_DEPTH deep (the parser). */
static int64_t trips_of(int64_t start, int64_t stop, int64_t stepv) {
  if (stepv > 0 ? start >= stop : start <= stop)
    return 0;
  /* in unsigned arithmetic: stop - start may not fit in int64 */
  uint64_t span = stepv > 0 ? (uint64_t)stop - (uint64_t)start : (uint64_t)start - (uint64_t)stop;
  uint64_t st = stepv > 0 ? (uint64_t)stepv : 0 - (uint64_t)stepv;
  uint64_t t = (span - 1) / st + 1;
  return t > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)t;
}
int64_t ag__block_cost(const ag_tile_list *body) {
  int64_t sum = 0;
  for (int i = 0; i < body->n; i++) {
    const ag_tile_node *s = body->v[i];
    int64_t k = 1;
    if (s->kind == AG_TN_FOR && s->a->kind == AG_TN_CALL && s->a->list.n >= 1 &&
        s->a->list.n <= 3) {
      int64_t a[3] = {0, 0, 1}, lit = 1;
      for (int j = 0; j < s->a->list.n; j++) {
        const ag_tile_node *x = s->a->list.v[j];
        if (x->kind == AG_TN_INT)
          a[j] = x->ival;
        else
          lit = 0;
      }
      if (lit && s->a->list.n == 1)
        a[1] = a[0], a[0] = 0;
      if (lit && a[2] != 0)
        k = sat_add(1, sat_mul(trips_of(a[0], a[1], a[2]), ag__block_cost(&s->list)));
    } else if (s->kind == AG_TN_IF) {
      int64_t t = ag__block_cost(&s->list), e = ag__block_cost(&s->list2);
      k = sat_add(1, t < e ? t : e);
    } else if (s->kind == AG_TN_REGION) {
      k = sat_add(1, ag__block_cost(&s->list));
    }
    sum = sat_add(sum, k);
  }
  return sum;
}

/* Loops run over range(start, stop[, step]) with a compile-time start and
 * step. A loop of constant bounds is unrolled, unless it runs at least
 * AG__SUMMARY_TRIPS iterations and loop.c can summarize it (cheaper: a few
 * iterations stand for all); a loop whose stop depends on problem sizes is
 * summarized or refused, naming the loop and the reason. */
#define AG__SUMMARY_TRIPS 16

static void exec_loop(ag__ck *c, const ag_tile_node *n) {
  const ag_tile_node *it = n->a;
  if (it->kind != AG_TN_CALL || it->a->kind != AG_TN_NAME || strcmp(it->a->name, "range"))
    ag__ck_error(c, it, "a loop runs over range(stop), range(start, stop) or range(start, stop, "
                        "step)");
  nargs(c, it, 1, 3, "range");
  const ag_expr *x[3] = {NULL, NULL, NULL};
  for (int i = 0; i < it->list.n; i++)
    x[i] = as_int(c, it->list.v[i], eval(c, it->list.v[i]), "a loop bound");
  const ag_expr *stopx = it->list.n == 1 ? x[0] : x[1];
  int64_t start = 0, stop = 0, stepv = 1;
  if (it->list.n >= 2)
    start = as_const(c, it->list.v[0], vint(c, x[0]),
                     "a loop's start (the checker needs compile-time starts and steps)");
  if (it->list.n == 3)
    stepv = as_const(c, it->list.v[2], vint(c, x[2]),
                     "a loop's step (the checker needs compile-time starts and steps)");
  if (stepv == 0)
    ag__ck_error(c, it, "range() step must not be zero");
  const char *why = NULL;
  if (!ag_expr_is_const(stopx, &stop)) {
    /* a trip count that depends on problem sizes: summarized, or refused */
    if (stepv != 1)
      ag__ck_error(c, it, "loop 'for %s in range(...)' has a bound that depends on problem "
                          "sizes and a step other than 1; the checker summarizes such loops "
                          "only with step 1",
                   n->name);
    int prefix = 0;
    if (ag__loop_summarize(c, n, start, stopx, &why, &prefix) == 0)
      return;
    char msg[512];
    snprintf(msg, sizeof msg,
             "loop 'for %s in range(...)' has a trip count that depends on problem sizes "
             "and cannot be summarized soundly: %s; make its bound a const parameter (and "
             "check chosen sizes with --set)",
             n->name, why);
    /* outside every summary: its first iterations are checked exactly, and a
     * violation there refutes the kernel (inside one, the enclosing summary
     * retries or is refused in turn) */
    if (!c->summarizing)
      ag__loop_cut(c, n, it, start, stopx, prefix, msg);
    ag__ck_error(c, it, "%s", msg);
  }
  int64_t trips = trips_of(start, stop, stepv);
  /* (iterations past 2^31 do not fit the checker's 32-bit integers) */
  if (trips >= AG__SUMMARY_TRIPS && stepv == 1 && start >= 0 && stop < ((int64_t)1 << 31) &&
      !c->summarizing && !c->opts->unroll && ag__loop_summarize(c, n, start, stopx, &why, NULL) == 0)
    return;
  /* the whole unrolled loop must fit the statement limit: refuse it before
   * running any of it */
  int64_t need = sat_mul(trips, ag__block_cost(&n->list));
  if (need > c->opts->max_steps - c->steps)
    ag__ck_error(c, it,
                 "loop 'for %s in range(...)' unrolls to %lld iterations of at least %lld "
                 "statements each, more than the limit of %lld interpreted statements (%lld "
                 "already run)%s%s; make the compile-time sizes smaller for checking or raise "
                 "the limit with --max-steps",
                 n->name, (long long)trips, (long long)ag__block_cost(&n->list),
                 (long long)c->opts->max_steps, (long long)c->steps,
                 why ? ", and it cannot be summarized: " : "", why ? why : "");
  ag__loopvar lv = {n->name, 0, NULL};
  if (ag_vec_push(&c->loops, lv))
    ag__ck_oom(c);
  for (int64_t i = start; stepv > 0 ? i < stop : i > stop; i += stepv) {
    c->loops.v[c->loops.n - 1].value = i;
    bind(c, n->name, vint(c, ag__xc(c, i)));
    exec_block(c, &n->list);
  }
  c->loops.n--;
}

static void exec_for(ag__ck *c, const ag_tile_node *n) {
  int nested = c->nested++; /* a C loop in the lowering, unrolled or summarized here */
  exec_loop(c, n);
  c->nested = nested;
}

void ag__exec_block(ag__ck *c, const ag_tile_list *body) { exec_block(c, body); }
void ag__bind(ag__ck *c, const char *name, const ag_expr *value) { bind(c, name, vint(c, value)); }
int ag__name_const(ag__ck *c, const char *name, int64_t *v) {
  ag__value *x = lookup(c, name);
  return x && x->k == V_INT && ag_expr_is_const(x->i, v) ? 0 : -1;
}

static void exec_stmt(ag__ck *c, const ag_tile_node *n) {
  step(c, n);
  switch (n->kind) {
  case AG_TN_ASSIGN: exec_assign(c, n); break;
  case AG_TN_EXPR: {
    const ag_tile_node *e = n->a;
    if (e->kind != AG_TN_CALL)
      ag__ck_error(c, e, "this expression has no effect (did you mean an assignment?)");
    eval(c, e);
    break;
  }
  case AG_TN_FOR: exec_for(c, n); break;
  case AG_TN_IF:
    if (n->b == &role_mark)
      exec_role_step(c, n);
    else
      exec_if(c, n);
    break;
  case AG_TN_REGION: exec_block(c, &n->list); break; /* a region only marks code */
  case AG_TN_ASSERT: exec_assert(c, n); break;
  case AG_TN_ASSUME: {
    /* an assumption is a launch precondition (docs/lower.md): over the sizes, at the top */
    if (c->nested)
      ag__ck_error(c, n,
                   "'assume' inside a loop or an 'if' on a run-time condition: an assumption "
                   "is a launch precondition, checked before the kernel runs; move it to the "
                   "kernel's top level");
    const ag__bx *b = as_bool(c, n->a, eval(c, n->a));
    if (bx_depends(b, "tid") || bx_depends(b, "bid.x") || bx_depends(b, "bid.y") ||
        bx_depends(b, "bid.z"))
      ag__ck_error(c, n,
                   "an assumption over the thread or block index cannot be checked before a "
                   "launch: bound the index with @threads or @grid, or test it with an 'if'");
    if (c->path)
      b = ag__bor(c, ag__bnot(c, c->path), b);
    int v;
    if (ag__bis_const(b, &v) && !v)
      ag__ck_error(c, n, "this assumption is false");
    if (c->replay)
      break; /* a replayed iteration's assumption is its own instance's */
    if (ag_vec_push(&c->assumes, b))
      ag__ck_oom(c);
    break;
  }
  case AG_TN_PASS: break;
  case AG_TN_KERNEL: ag__ck_error(c, n, "a kernel cannot be nested in another");
  default: ag__ck_error(c, n, "not a statement");
  }
}

static void exec_block(ag__ck *c, const ag_tile_list *body) {
  for (int i = 0; i < body->n; i++)
    exec_stmt(c, body->v[i]);
}

/* ---------------------------------------------------------------- kernel */
static int64_t define_value(ag__ck *c, const char *name, int *found) {
  *found = 0;
  for (int i = 0; i < c->opts->ndefines; i++) {
    const char *d = c->opts->defines[i];
    size_t l = strlen(name);
    if (!strncmp(d, name, l) && d[l] == '=') {
      *found = 1;
      return strtoll(d + l + 1, NULL, 0);
    }
  }
  return 0;
}

static int is_symbolic(ag__ck *c, const char *name) {
  for (int i = 0; i < c->opts->nsymbolic; i++)
    if (!strcmp(c->opts->symbolic[i], name))
      return 1;
  return 0;
}

static void setup_params(ag__ck *c) {
  const ag_tile_node *k = c->kernel;
  for (int i = 0; i < k->list.n; i++)
    for (int j = 0; j < i; j++)
      if (!strcmp(k->list.v[i]->name, k->list.v[j]->name))
        ag__ck_error(c, k->list.v[i], "parameter '%s' is declared twice (first at column %d)",
                     k->list.v[i]->name, k->list.v[j]->col);
  /* constants first: tensor shapes may name them */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < k->list.n; i++) {
      const ag_tile_node *p = k->list.v[i];
      const ag_tile_node *ty = p->a;
      int is_const = ty->kind == AG_TN_NAME && !strcmp(ty->name, "const");
      int is_tensor = ty->kind == AG_TN_CALL && ty->a->kind == AG_TN_NAME &&
                      !strcmp(ty->a->name, "Tensor");
      if (!is_const && !is_tensor)
        ag__ck_error(c, ty, "a parameter is 'name: Tensor(dims..., dtype)' or 'name: const = "
                            "value'");
      if (is_const && pass == 0 && is_symbolic(c, p->name)) {
        /* checked for every value (--symbolic): a problem size */
        int found;
        define_value(c, p->name, &found);
        if (found)
          ag__ck_error(c, p, "'%s' is given both --set and --symbolic", p->name);
        const ag_expr *sym = ag_expr_sym(&c->lc, p->name);
        if (!sym)
          ag__ck_oom(c);
        bind(c, p->name, vint(c, sym));
        if (ag_vec_push(&c->sizes, p->name))
          ag__ck_oom(c);
        ag__param pm;
        memset(&pm, 0, sizeof pm);
        pm.name = p->name;
        if (ag_vec_push(&c->params, pm))
          ag__ck_oom(c);
      } else if (is_const && pass == 0) {
        int found;
        int64_t v = define_value(c, p->name, &found);
        if (!found) {
          if (!p->b)
            ag__ck_error(c, p, "constant '%s' needs a value: '%s: const = 64' (or --set %s=64)",
                         p->name, p->name, p->name);
          v = as_const(c, p->b, eval(c, p->b), "a constant parameter's value");
        }
        bind(c, p->name, vint(c, ag__xc(c, v)));
        ag__param pm;
        memset(&pm, 0, sizeof pm);
        pm.name = p->name;
        if (ag_vec_push(&c->params, pm))
          ag__ck_oom(c);
      } else if (is_tensor && pass == 1) {
        if (p->b)
          ag__ck_error(c, p->b, "a tensor parameter has no default value");
        int n = ty->list.n;
        if (n < 2)
          ag__ck_error(c, ty, "Tensor(dims..., dtype) needs at least one dim and a dtype");
        ag__param pm;
        memset(&pm, 0, sizeof pm);
        pm.name = p->name;
        pm.is_tensor = 1;
        pm.dt = as_dtype(c, ty->list.v[n - 1]);
        pm.rank = n - 1;
        pm.dims = ag__ck_alloc(c, (size_t)pm.rank * sizeof *pm.dims);
        for (int d = 0; d < pm.rank; d++) {
          const ag_tile_node *dn = ty->list.v[d];
          if (dn->kind == AG_TN_NAME && !lookup(c, dn->name)) {
            if (!strcmp(dn->name, "tid") || ag__dt_lookup(dn->name) != DT_NONE)
              ag__ck_error(c, dn, "'%s' is reserved and cannot name a problem size", dn->name);
            /* a new problem size */
            const ag_expr *s = ag_expr_sym(&c->lc, dn->name);
            if (!s)
              ag__ck_oom(c);
            bind_in(c, c->scope, dn->name, vint(c, s));
            if (ag_vec_push(&c->sizes, dn->name))
              ag__ck_oom(c);
          }
          pm.dims[d] = as_int(c, dn, eval(c, dn), "a tensor dim");
        }
        if (ag_vec_push(&c->params, pm))
          ag__ck_oom(c);
        ag__tile *t = tile_new(c);
        t->sp = SP_GLOBAL;
        t->dt = pm.dt;
        t->name = p->name;
        ag__gview *g = &t->g;
        g->tensor = (int)c->params.n - 1;
        g->rank = pm.rank;
        g->dims = pm.dims;
        g->tdim = ag__ck_alloc(c, (size_t)pm.rank * sizeof *g->tdim);
        g->mult = ag__ck_alloc(c, (size_t)pm.rank * sizeof *g->mult);
        g->origin = ag__ck_alloc(c, (size_t)pm.rank * sizeof *g->origin);
        for (int d = 0; d < pm.rank; d++) {
          g->tdim[d] = d;
          g->mult[d] = ag__xc(c, d == pm.rank - 1 ? ag__dt_size(pm.dt) : 1);
          g->origin[d] = ag__xc(c, 0);
        }
        ag__value *v = newv(c, V_TILE);
        v->t = t;
        bind(c, p->name, v);
      }
    }
  for (int i = 0; i < c->opts->ndefines; i++) {
    const char *d = c->opts->defines[i];
    const char *eq = strchr(d, '=');
    int ok = 0;
    for (int j = 0; j < k->list.n && eq; j++) {
      const ag_tile_node *p = k->list.v[j];
      if (strlen(p->name) == (size_t)(eq - d) && !strncmp(p->name, d, (size_t)(eq - d)) &&
          p->a->kind == AG_TN_NAME && !strcmp(p->a->name, "const"))
        ok = 1;
    }
    if (!ok)
      ag__ck_error(c, k, "--set %s: kernel '%s' has no constant parameter by that name", d,
                   k->name);
  }
  for (int i = 0; i < c->opts->nsymbolic; i++) {
    int ok = 0;
    for (int j = 0; j < k->list.n; j++)
      ok |= !strcmp(k->list.v[j]->name, c->opts->symbolic[i]) &&
            k->list.v[j]->a->kind == AG_TN_NAME && !strcmp(k->list.v[j]->a->name, "const");
    if (!ok)
      ag__ck_error(c, k, "--symbolic %s: kernel '%s' has no constant parameter by that name",
                   c->opts->symbolic[i], k->name);
  }
}

int ag__interp_kernel(ag__ck *c) {
  const ag_tile_node *k = c->kernel;
  /* @threads(x[, y[, z]]), and optionally @grid(x[, y[, z]]) */
  c->tdim[0] = c->tdim[1] = c->tdim[2] = 1;
  const ag_tile_node *deco = NULL;
  c->grid = NULL;
  for (int i = 0; k->a && i < k->a->list.n; i++) {
    const ag_tile_node *d = k->a->list.v[i];
    const char *dn = d->a->kind == AG_TN_NAME ? d->a->name : "";
    if (!strcmp(dn, "threads")) {
      if (deco)
        ag__ck_error(c, d, "@threads given twice");
      deco = d;
    } else if (!strcmp(dn, "grid")) {
      if (c->grid)
        ag__ck_error(c, d, "@grid given twice");
      c->grid = d;
    } else {
      ag__ck_error(c, d, "unknown decorator '@%s' (known: @threads, @grid)", dn);
    }
  }
  if (!deco)
    ag__ck_error(c, k,
                 "a kernel declares its thread-block size first: @threads(128) before 'def'");
  nargs(c, deco, 1, 3, "@threads(x[, y[, z]])");
  c->nthreads = 1;
  for (int i = 0; i < deco->list.n; i++) {
    c->tdim[i] = as_const(c, deco->list.v[i], eval(c, deco->list.v[i]), "a block dimension");
    if (c->tdim[i] < 1 || c->tdim[i] > 1024)
      ag__ck_error(c, deco->list.v[i], "a block dimension is between 1 and 1024");
    c->nthreads *= c->tdim[i];
  }
  if (c->nthreads > 1024)
    ag__ck_error(c, deco, "a block has at most 1024 threads, not %lld", (long long)c->nthreads);
  c->tid = ag_expr_sym(&c->lc, "tid");
  c->bid[0] = ag_expr_sym(&c->lc, "bid.x");
  c->bid[1] = ag_expr_sym(&c->lc, "bid.y");
  c->bid[2] = ag_expr_sym(&c->lc, "bid.z");
  if (!c->tid || !c->bid[0] || !c->bid[1] || !c->bid[2])
    ag__ck_oom(c);
  setup_params(c);
  if (c->grid) {
    /* blockIdx.a < grid dim a: symbolic extents, checked by the solver */
    nargs(c, c->grid, 1, 3, "@grid(x[, y[, z]])");
    for (int i = 0; i < 3; i++) {
      const ag_expr *ext = i < c->grid->list.n
                               ? as_int(c, c->grid->list.v[i], eval(c, c->grid->list.v[i]),
                                        "a grid dimension")
                               : ag__xc(c, 1);
      const ag__bx *b = ag__bcmp(c, AG_OP_LT, c->bid[i], ext);
      int v;
      if (ag__bis_const(b, &v) && !v)
        ag__ck_error(c, c->grid, "grid dimension %d is empty", i);
      if (ag_vec_push(&c->assumes, b))
        ag__ck_oom(c);
    }
  }
  exec_block(c, &k->list2);
  /* copies never committed or waited for stay unsettled: reads of them are
   * top, which the solver reports */
  return 0;
}

/* Module-level statements: constants shared by the kernels. */
void ag__interp_module(ag__ck *c, const ag_tile_program *p);
void ag__interp_module(ag__ck *c, const ag_tile_program *p) {
  for (int i = 0; i < p->top.n; i++) {
    const ag_tile_node *n = p->top.v[i];
    if (n->kind == AG_TN_KERNEL)
      continue;
    if (n->kind != AG_TN_ASSIGN && n->kind != AG_TN_PASS)
      ag__ck_error(c, n, "at the top level of a file only constants ('BM = 64') and kernels "
                         "may appear");
    if (n->kind == AG_TN_ASSIGN) {
      exec_assign(c, n);
      for (int j = 0; j < n->list.n; j++) {
        ag__value *v = lookup(c, n->list.v[j]->name);
        if (!v || v->k != V_INT || !ag_expr_is_const(v->i, NULL))
          ag__ck_error(c, n, "a top-level name must be an integer constant");
      }
    }
  }
}
