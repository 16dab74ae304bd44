/*
 * discover.c — region and site discovery over a parsed PTX module.
 *
 * Markers are comment statements ("// @argus begin|end|role <hash> <name>
 * [<iter>]", docs/markers.md). Per function, the open-region stack is
 * propagated along the CFG: every statement must be reached with one stack
 * on all paths, an end must close the innermost open region, and no region
 * may be open at a return. Violations are diagnostics naming the region, the
 * function and the PTX line. Every function is an implicit root region; a
 * region's stable ID is the FNV-1a hash of its qualified name
 * (kernel/outer/inner). Sites (async copies, wgmma, mbarrier operations,
 * barriers) get op IDs "region-id:ordinal" in PTX order and their completion
 * (group commit/wait, or the mbarrier waits on the same barrier).
 *
 * Load: linear in the module for the markers and regions; completion search
 * is a forward CFG walk per async site that stops at the first commit/wait.
 */
#include "ptx_internal.h"

#include "argus/demangle.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Standard FNV-1a 64 (offset basis 0xcbf29ce484222325). Not ag_hash64: that
 * one's offset basis differs from the published constant, and region IDs
 * must be computable by any front end (region.cuh, Triton, scripts). */
uint64_t ag_ptx_fnv1a(const void *data, size_t n) { return ag_hash64(data, n); }

uint64_t ag_ptx_region_id(const char *qualified_name) {
  return ag_ptx_fnv1a(qualified_name, strlen(qualified_name));
}

/* -------------------------------------------------------------- markers */

static int span_eq(const char *p, size_t n, const char *lit) {
  return strlen(lit) == n && memcmp(p, lit, n) == 0;
}

static int mark_err(const ag_ptx_module *m, const ag_ptx_stmt *s, ag_diags *d,
                    const char *fmt, ...) AG_PRINTF(4, 5);
static int mark_err(const ag_ptx_module *m, const ag_ptx_stmt *s, ag_diags *d,
                    const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ag_diags_add(d, AG_SEV_ERROR, m->path, s->line, s->col, s->line ? s->text : NULL,
               s->text_len, "%s", msg);
  return AG_EPARSE;
}

/* ".loc F L C" or ".file F \"PATH\"": the file number at *p, advancing. */
static long dir_num(const char **p, const char *end) {
  while (*p < end && (**p == ' ' || **p == '\t'))
    (*p)++;
  if (*p >= end || !isdigit((unsigned char)**p))
    return -1;
  long v = 0;
  while (*p < end && isdigit((unsigned char)**p) && v < 100000000)
    v = v * 10 + (*(*p)++ - '0');
  return v;
}

static int is_dir(const ag_ptx_stmt *s, const char *name) {
  return s->kind == AG_PTX_DIRECTIVE && s->name && !strcmp(s->name, name) && s->args;
}

int ag_ptx_source_pos(const ag_ptx_module *m, const ag_ptx_stmt *s, const char **path,
                      size_t *plen, int *line) {
  *path = NULL;
  *plen = 0;
  *line = 0;
  long file = -1, ln = 0;
  for (const ag_ptx_stmt *t = s; t && t->func == s->func && file < 0; t = t->prev) {
    if (!is_dir(t, ".loc"))
      continue;
    const char *p = t->args, *end = p + strlen(p);
    long f = dir_num(&p, end), l = dir_num(&p, end);
    if (f >= 0 && l > 0) /* line 0: code without a source line; look further back */
      file = f, ln = l;
  }
  if (file < 0)
    return 0;
  for (const ag_ptx_stmt *t = m->first; t; t = t->next) {
    if (!is_dir(t, ".file"))
      continue;
    const char *p = t->args, *end = p + strlen(p);
    if (dir_num(&p, end) != file)
      continue;
    while (p < end && *p != '"')
      p++;
    const char *q = p < end ? memchr(p + 1, '"', (size_t)(end - p - 1)) : NULL;
    if (!q)
      return 0;
    *path = p + 1;
    *plen = (size_t)(q - p - 1);
    *line = (int)ln;
    return 1;
  }
  return 0;
}

/* " (PATH:LINE)", the source position of s (ag_ptx_source_pos), into buf; "" without one. */
static const char *src_at(const ag_ptx_module *m, const ag_ptx_stmt *s, char *buf, size_t n) {
  const char *p;
  size_t pl;
  int line;
  buf[0] = 0;
  if (s && ag_ptx_source_pos(m, s, &p, &pl, &line))
    snprintf(buf, n, " (%.*s:%d)", (int)(pl > 300 ? 300 : pl), p, line);
  return buf;
}

static const char *word(const char **p, const char *end, size_t *n) {
  while (*p < end && (**p == ' ' || **p == '\t'))
    (*p)++;
  const char *w = *p;
  while (*p < end && **p != ' ' && **p != '\t' && **p != '\r' && **p != '\n')
    (*p)++;
  *n = (size_t)(*p - w);
  return *n ? w : NULL;
}

static int valid_name(const char *w, size_t n) {
  if (!n || !(isalpha((unsigned char)w[0]) || w[0] == '_'))
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!(isalnum((unsigned char)w[i]) || w[i] == '_' || w[i] == '.' || w[i] == '-'))
      return 0;
  return 1;
}

/* A decimal or 0x integer, optionally negative. */
static int valid_int(const char *w) {
  w += *w == '-';
  int hex = w[0] == '0' && (w[1] == 'x' || w[1] == 'X');
  w += 2 * hex;
  if (!*w)
    return 0;
  for (; *w; w++)
    if (!(hex ? isxdigit((unsigned char)*w) : isdigit((unsigned char)*w)))
      return 0;
  return 1;
}

/* The register an iteration is read from: 16, 32 or 64 bits (what the
 * probes convert to 32), declared in the function. */
static int iter_bits_ok(const ag_ptx_func *f, const char *reg) {
  int bits = ag__ptx_reg_bits(f, reg);
  return bits == 16 || bits == 32 || bits == 64;
}

int ag_ptx_marker_parse(const ag_ptx_module *m, const ag_ptx_stmt *s, ag_diags *diags,
                        ag_ptx_marker *mk) {
  if (s->kind != AG_PTX_COMMENT || s->block_comment || s->text_len < 2)
    return 0;
  const char *p = s->text + 2, *end = s->text + s->text_len;
  size_t n;
  const char *w = word(&p, end, &n);
  if (!w || !span_eq(w, n, "@argus"))
    return 0;
  memset(mk, 0, sizeof *mk);
  mk->stmt = (ag_ptx_stmt *)s;
  mk->line = s->line;
  mk->region = -1;
  w = word(&p, end, &n);
  if (w && span_eq(w, n, "begin"))
    mk->kind = AG_PTX_MARK_BEGIN;
  else if (w && span_eq(w, n, "end"))
    mk->kind = AG_PTX_MARK_END;
  else if (w && span_eq(w, n, "role"))
    mk->kind = AG_PTX_MARK_ROLE;
  else
    return mark_err(m, s, diags, "malformed marker: expected 'begin', 'end' or 'role' after "
                                 "'@argus' (see docs/markers.md)");
  const char *hw = word(&p, end, &n);
  size_t hn = n;
  if (!hw)
    return mark_err(m, s, diags, "malformed marker: missing the name hash");
  const char *nw = word(&p, end, &n);
  size_t nn = n;
  if (!nw || !valid_name(nw, nn))
    return mark_err(m, s, diags, "malformed marker: missing or invalid region name (a C "
                                 "identifier)");
  ag_ptx_module *mm = (ag_ptx_module *)m;
  if (!(mk->name = ag_arena_strndup(&mm->arena, nw, nn)))
    return AG_ENOMEM;
  uint64_t want = ag_ptx_fnv1a(nw, nn);
  if (span_eq(hw, hn, "-")) {
    mk->name_hash = want;
  } else {
    char buf[32];
    if (hn >= sizeof buf)
      return mark_err(m, s, diags, "malformed marker hash '%.*s'", (int)hn, hw);
    memcpy(buf, hw, hn);
    buf[hn] = 0;
    char *e;
    errno = 0;
    uint64_t v;
    if (buf[0] == '-')
      v = (uint64_t)strtoll(buf, &e, 10);
    else
      v = strtoull(buf, &e, 0);
    if (*e || errno || e == buf)
      return mark_err(m, s, diags, "malformed marker hash '%s': expected a decimal or 0x "
                                   "number, or '-'", buf);
    if (v != want)
      return mark_err(m, s, diags,
                      "marker hash %s of region '%s' does not match its name (FNV-1a gives "
                      "%llu): the marker was not written by region.cuh or the name was edited",
                      buf, mk->name, (unsigned long long)want);
    mk->name_hash = v;
  }
  const char *iw = word(&p, end, &n);
  if (iw) {
    if (mk->kind != AG_PTX_MARK_BEGIN)
      return mark_err(m, s, diags, "malformed marker: unexpected '%.*s' after the name of an "
                                   "%s marker", (int)n, iw,
                      mk->kind == AG_PTX_MARK_END ? "end" : "role");
    if (!(mk->iter = ag_arena_strndup(&mm->arena, iw, n)))
      return AG_ENOMEM;
    if (word(&p, end, &n))
      return mark_err(m, s, diags, "malformed marker: too many fields");
    if (mk->iter[0] != '%' ? !valid_int(mk->iter) : !s->func || !iter_bits_ok(s->func, mk->iter))
      return mark_err(m, s, diags,
                      "iteration operand '%s' of region '%s' is not an integer or a 16-, 32- "
                      "or 64-bit register declared in '%s'",
                      mk->iter, mk->name, s->func ? s->func->name : "its function");
  }
  return 1;
}

/* ---------------------------------------------------------- discovery */

typedef struct frame {
  int region;
  const ag_ptx_marker *begin; /* NULL for the root */
  struct frame *up;
  int depth;
} frame;

typedef struct dctx {
  ag_ptx_module *m;
  ag_diags *diags;
  ag_arena *A;
  AG_VEC(ag_ptx_region) regions;
  AG_VEC(ag_ptx_site) sites;
  AG_VEC(ag_ptx_marker) markers;
  ag_map region_by_key; /* "parent/name" -> index + 1 */
  int err;
} dctx;

static int add_region(dctx *c, int parent, const char *name, ag_ptx_func *f, int *out) {
  char key[600];
  int kn = snprintf(key, sizeof key, "%d/%s", parent, name);
  if (kn < 0 || (size_t)kn >= sizeof key)
    kn = (int)sizeof key - 1;
  void *v = parent >= 0 ? ag_map_get(&c->region_by_key, key, (size_t)kn) : NULL;
  if (v) {
    *out = (int)(intptr_t)v - 1;
    return 0;
  }
  ag_ptx_region r;
  memset(&r, 0, sizeof r);
  r.parent = parent;
  r.func = f;
  r.name = name;
  r.qname = parent >= 0 ? ag_arena_printf(c->A, "%s/%s", c->regions.v[parent].qname, name)
                        : name;
  if (!r.qname)
    return AG_ENOMEM;
  r.id = ag_ptx_region_id(r.qname);
  r.is_root = parent < 0;
  if (ag_vec_push(&c->regions, r))
    return AG_ENOMEM;
  *out = (int)c->regions.n - 1;
  if (parent >= 0 && ag_map_put(&c->region_by_key, key, (size_t)kn, (void *)(intptr_t)(*out + 1)))
    return AG_ENOMEM;
  return 0;
}

static int same_stack(const frame *a, const frame *b) {
  if (a->depth != b->depth)
    return 0;
  for (; a && b; a = a->up, b = b->up)
    if (a->region != b->region)
      return 0;
  return 1;
}

/* A region open in one of two different stacks but not in the other: the
 * deeper stack's frame just above the shallower one's depth, or for equal
 * depths the deepest frame of `a` that differs. */
static const frame *open_in_one(const frame *a, const frame *b) {
  const frame *x = a->depth >= b->depth ? a : b, *y = a->depth >= b->depth ? b : a;
  if (x->depth > y->depth) {
    while (x->depth > y->depth + 1)
      x = x->up;
    return x;
  }
  for (; x && y; x = x->up, y = y->up)
    if (x->region != y->region)
      return x;
  return NULL;
}

static int push_list(ag_arena *A, int **v, int *n, int x) {
  if ((*n & (*n - 1)) == 0) {
    int *nv = ag__ptx_grow(A, *v, (size_t)*n, *n ? (size_t)*n * 2 : 2, sizeof(int));
    if (!nv)
      return AG_ENOMEM;
    *v = nv;
  }
  (*v)[(*n)++] = x;
  return 0;
}

static int push_rsite(ag_arena *A, ag_ptx_region_site **v, int *n, ag_ptx_region_site x) {
  if ((*n & (*n - 1)) == 0) {
    ag_ptx_region_site *nv = ag__ptx_grow(A, *v, (size_t)*n, *n ? (size_t)*n * 2 : 2, sizeof x);
    if (!nv)
      return AG_ENOMEM;
    *v = nv;
  }
  (*v)[(*n)++] = x;
  return 0;
}

/* ---- site classification */

static int classify(const ag_ptx_stmt *s, ag_ptx_site_kind *k, ag_ptx_completion *done) {
  *done = AG_PTX_DONE_SYNC;
  const char *op = s->opcode;
  if (!op)
    return 0;
  if (op[0] == 'c') {
    if (ag_ptx_op_is(s, "cp.async.bulk.tensor")) {
      /* load: .shared::cluster.global / .shared::cta.global; store: .global.shared::cta */
      if (strstr(op, ".shared::cluster.global") || strstr(op, ".shared::cta.global")) {
        *k = AG_PTX_SITE_TMA_LOAD;
        *done = AG_PTX_DONE_MBARRIER;
      } else {
        *k = AG_PTX_SITE_TMA_STORE;
        *done = AG_PTX_DONE_BULK_GROUP;
      }
      return 1;
    }
    if (ag_ptx_op_is(s, "cp.reduce.async.bulk.tensor")) {
      *k = AG_PTX_SITE_TMA_REDUCE;
      *done = AG_PTX_DONE_BULK_GROUP;
      return 1;
    }
    if (ag_ptx_op_is(s, "cp.async.bulk.prefetch")) {
      *k = AG_PTX_SITE_TMA_PREFETCH;
      *done = AG_PTX_DONE_NONE;
      return 1;
    }
    if (ag_ptx_op_is(s, "cp.async.bulk.commit_group")) {
      *k = AG_PTX_SITE_BULK_COMMIT;
      return 1;
    }
    if (ag_ptx_op_is(s, "cp.async.bulk.wait_group")) {
      *k = AG_PTX_SITE_BULK_WAIT;
      return 1;
    }
    if (ag_ptx_op_is(s, "cp.async.bulk") || ag_ptx_op_is(s, "cp.reduce.async.bulk")) {
      *k = AG_PTX_SITE_BULK_COPY;
      *done = ag_ptx_op_has(s, ".mbarrier::complete_tx::bytes") ? AG_PTX_DONE_MBARRIER
                                                                 : AG_PTX_DONE_BULK_GROUP;
      return 1;
    }
    if (ag_ptx_op_is(s, "cp.async.commit_group")) {
      *k = AG_PTX_SITE_CP_ASYNC_COMMIT;
      return 1;
    }
    if (ag_ptx_op_is(s, "cp.async.wait_group") || ag_ptx_op_is(s, "cp.async.wait_all")) {
      *k = AG_PTX_SITE_CP_ASYNC_WAIT;
      return 1;
    }
    if (ag_ptx_op_is(s, "cp.async.mbarrier.arrive")) {
      *k = AG_PTX_SITE_CP_ASYNC_MBAR;
      return 1;
    }
    if (ag_ptx_op_is(s, "cp.async")) {
      *k = AG_PTX_SITE_CP_ASYNC;
      *done = AG_PTX_DONE_CP_GROUP;
      return 1;
    }
    return 0;
  }
  if (op[0] == 'w') {
    if (ag_ptx_op_is(s, "wgmma.mma_async")) {
      *k = AG_PTX_SITE_WGMMA;
      *done = AG_PTX_DONE_WGMMA_GROUP;
      return 1;
    }
    if (ag_ptx_op_is(s, "wgmma.fence")) {
      *k = AG_PTX_SITE_WGMMA_FENCE;
      return 1;
    }
    if (ag_ptx_op_is(s, "wgmma.commit_group")) {
      *k = AG_PTX_SITE_WGMMA_COMMIT;
      return 1;
    }
    if (ag_ptx_op_is(s, "wgmma.wait_group")) {
      *k = AG_PTX_SITE_WGMMA_WAIT;
      return 1;
    }
    return 0;
  }
  if (op[0] == 'm') {
    if (ag_ptx_op_is(s, "mbarrier.init")) {
      *k = AG_PTX_SITE_MBAR_INIT;
      return 1;
    }
    if (ag_ptx_op_is(s, "mbarrier.arrive") || ag_ptx_op_is(s, "mbarrier.arrive_drop")) {
      *k = AG_PTX_SITE_MBAR_ARRIVE;
      return 1;
    }
    if (ag_ptx_op_is(s, "mbarrier.expect_tx")) {
      *k = AG_PTX_SITE_MBAR_EXPECT_TX;
      return 1;
    }
    if (ag_ptx_op_is(s, "mbarrier.try_wait") || ag_ptx_op_is(s, "mbarrier.test_wait")) {
      *k = AG_PTX_SITE_MBAR_WAIT;
      return 1;
    }
    return 0;
  }
  if (op[0] == 'b') {
    if (ag_ptx_op_is(s, "bar.sync") || ag_ptx_op_is(s, "bar.arrive") ||
        ag_ptx_op_is(s, "bar.red") || ag_ptx_op_is(s, "barrier.sync") ||
        ag_ptx_op_is(s, "barrier.arrive") || ag_ptx_op_is(s, "barrier.red") ||
        ag_ptx_op_is(s, "barrier.cluster") || ag_ptx_op_is(s, "bar.cta") ||
        ag_ptx_op_is(s, "barrier.cta")) {
      *k = AG_PTX_SITE_BARRIER;
      return 1;
    }
  }
  return 0;
}

/* ---- barrier address resolution through single definitions */

typedef struct defs {
  ag_map map; /* reg name -> stmt (or the sentinel MULTI) */
  int built;
} defs;

static ag_ptx_stmt multi_def;

static int build_defs(defs *d, ag_ptx_func *f) {
  ag_map_init(&d->map);
  d->built = 1;
  for (ag_ptx_stmt *s = f->body_open; s; s = s->next) {
    if (s->kind == AG_PTX_INSTR && s->nops && s->ops[0].kind == AG_PTX_OP_REG) {
      const char *r = s->ops[0].base;
      void *old = ag_map_get_str(&d->map, r);
      if (ag_map_put_str(&d->map, r, old ? &multi_def : s))
        return AG_ENOMEM;
    }
    if (s == f->body_close)
      break;
  }
  return 0;
}

typedef struct symoff {
  const char *sym;
  int64_t off;
  int known;
} symoff;

static void resolve_reg(defs *d, const char *reg, symoff *r, int depth) {
  ag_ptx_stmt *s = ag_map_get_str(&d->map, reg);
  if (!s || s == &multi_def || depth > 16 || s->nops < 2)
    return;
  const ag_ptx_operand *a = &s->ops[1];
  if (ag_ptx_op_is(s, "mov") || ag_ptx_op_is(s, "cvta") || ag_ptx_op_is(s, "cvt")) {
    if (a->kind == AG_PTX_OP_SYM) {
      r->sym = a->base;
      r->off = 0;
      r->known = 1;
    } else if (a->kind == AG_PTX_OP_REG) {
      resolve_reg(d, a->base, r, depth + 1);
    } else if (a->kind == AG_PTX_OP_EXPR && a->base) {
      r->sym = a->base;
      r->off = a->ival;
      r->known = 1;
    }
    return;
  }
  if ((ag_ptx_op_is(s, "add") || ag_ptx_op_is(s, "sub")) && s->nops == 3) {
    const ag_ptx_operand *b = &s->ops[2];
    int sub = ag_ptx_op_is(s, "sub");
    symoff x = {0}, y = {0};
    if (a->kind == AG_PTX_OP_REG)
      resolve_reg(d, a->base, &x, depth + 1);
    else if (a->kind == AG_PTX_OP_SYM)
      x = (symoff){a->base, 0, 1};
    if (b->kind == AG_PTX_OP_INT) {
      if (x.sym) {
        *r = x;
        r->off += sub ? -b->ival : b->ival;
      }
      return;
    }
    if (b->kind == AG_PTX_OP_REG && !sub)
      resolve_reg(d, b->base, &y, depth + 1);
    if (x.sym && !y.sym) {
      *r = x;
      r->known = 0;
    } else if (y.sym && !x.sym && !sub) {
      *r = y;
      r->known = 0;
    }
  }
}

static int resolve_bar(dctx *c, defs *d, ag_ptx_func *f, const ag_ptx_operand *o,
                       ag_ptx_barref *b) {
  memset(b, 0, sizeof *b);
  b->operand = o->text;
  if (o->kind != AG_PTX_OP_ADDR || !o->base)
    return 0;
  if (!d->built && build_defs(d, f))
    return AG_ENOMEM;
  symoff r = {0};
  if (o->base[0] == '%' || ag_map_get_str(&d->map, o->base)) {
    b->reg = o->base;
    resolve_reg(d, o->base, &r, 0);
  } else {
    r = (symoff){o->base, 0, 1};
  }
  if (r.sym) {
    b->sym = r.sym;
    b->offset = r.off + o->ival;
    b->offset_known = r.known;
  }
  (void)c;
  return 0;
}

/* ---- forward search for group commits and waits */

typedef int (*stmt_pred)(const ag_ptx_stmt *s);
typedef AG_VEC(ag_ptx_stmt *) stmt_vec;

static int is_bulk_commit(const ag_ptx_stmt *s) { return ag_ptx_op_is(s, "cp.async.bulk.commit_group"); }
static int is_bulk_wait(const ag_ptx_stmt *s) { return ag_ptx_op_is(s, "cp.async.bulk.wait_group"); }
static int is_cp_commit(const ag_ptx_stmt *s) { return ag_ptx_op_is(s, "cp.async.commit_group"); }
static int is_cp_wait(const ag_ptx_stmt *s) {
  return ag_ptx_op_is(s, "cp.async.wait_group") || ag_ptx_op_is(s, "cp.async.wait_all");
}
static int is_wg_commit(const ag_ptx_stmt *s) { return ag_ptx_op_is(s, "wgmma.commit_group"); }
static int is_wg_wait(const ag_ptx_stmt *s) { return ag_ptx_op_is(s, "wgmma.wait_group"); }

/* Collects, along every CFG path from just after `from`, the first statement
 * matching `pred`. Results appended to *out (deduplicated). */
static int find_forward(const ag_ptx_cfg *g, const ag_ptx_stmt *from, stmt_pred pred,
                        char *seen, int *queue, stmt_vec *out) {
  memset(seen, 0, (size_t)g->nblocks);
  int qh = 0, qt = 0;
  const ag_ptx_block *B = &g->blocks[from->block];
  const ag_ptx_stmt *s = from;
  int first = 1;
  for (;;) {
    int found = 0;
    if (first) {
      for (s = from == B->last ? NULL : from->next; s; s = s == B->last ? NULL : s->next)
        if (s->kind == AG_PTX_INSTR && pred(s)) {
          found = 1;
          break;
        }
      first = 0;
    } else {
      for (s = B->first; s; s = s == B->last ? NULL : s->next)
        if (s->kind == AG_PTX_INSTR && pred(s)) {
          found = 1;
          break;
        }
    }
    if (found) {
      size_t i = 0;
      for (; i < out->n; i++)
        if (out->v[i] == s)
          break;
      if (i == out->n && ag_vec_push(out, (ag_ptx_stmt *)s))
        return AG_ENOMEM;
    } else {
      for (int k = 0; k < B->nsucc; k++) {
        int t = B->succ[k].to;
        if (t == g->exit || seen[t])
          continue;
        seen[t] = 1;
        queue[qt++] = t;
      }
    }
    if (qh == qt)
      return 0;
    B = &g->blocks[queue[qh++]];
  }
}

static int site_of_stmt(const dctx *c, int first_site, const ag_ptx_stmt *s) {
  for (int i = first_site; i < (int)c->sites.n; i++)
    if (c->sites.v[i].stmt == s)
      return i;
  return -1;
}

static int link_groups(dctx *c, const ag_ptx_cfg *g, int first_site, ag_ptx_site *st,
                       stmt_pred commit, stmt_pred wait, char *seen, int *queue) {
  stmt_vec commits = {0};
  stmt_vec waits = {0};
  int rc = find_forward(g, st->stmt, commit, seen, queue, &commits);
  for (size_t i = 0; !rc && i < commits.n; i++)
    rc = find_forward(g, commits.v[i], wait, seen, queue, &waits);
  for (size_t i = 0; !rc && i < commits.n + waits.n; i++) {
    const ag_ptx_stmt *x = i < commits.n ? commits.v[i] : waits.v[i - commits.n];
    int si = site_of_stmt(c, first_site, x);
    if (si >= 0)
      rc = push_list(c->A, &st->done_by, &st->ndone_by, si);
  }
  ag_vec_free(&commits);
  ag_vec_free(&waits);
  return rc;
}

static int bars_match(const ag_ptx_barref *a, const ag_ptx_barref *b) {
  if (a->sym && b->sym) {
    if (strcmp(a->sym, b->sym))
      return 0;
    if (a->offset_known && b->offset_known)
      return a->offset == b->offset;
    return 1; /* same variable, offset known only at run time: may match */
  }
  if (!a->sym && !b->sym && a->reg && b->reg)
    return !strcmp(a->reg, b->reg);
  return 0;
}

/* ---- the span of a wait (docs/probes.md, "The exposed wait")
 *
 * A wait is timed by what it does, whatever its shape: an mbarrier
 * try_wait/test_wait that writes a predicate P, inside the innermost loop
 * around it, is a spin loop when that loop does nothing else (more waits of
 * the same barrier and phase writing P, branches, nanosleep; labels,
 * declarations and comments) and leaves it exactly once, when P is true
 * (`@P bra DONE`, or falling out of `@!P bra WAIT`). nvcc's one-block loop,
 * CUTLASS's two blocks in a `{ }` scope and a try_wait with a suspend-time
 * hint are all such loops. The span begins before the header (entered by
 * falling into it, once) and ends right after the exit (after the exiting
 * block, or after the exit target's label when that target has no other
 * way in). A wait outside every loop is the instruction itself. */

static int is_nanosleep(const ag_ptx_stmt *s) { return ag_ptx_op_is(s, "nanosleep"); }

static int same_wait(const ag_ptx_stmt *a, const ag_ptx_stmt *b) {
  return a->nops >= 3 && b->nops >= 3 && !strcmp(a->ops[0].text, b->ops[0].text) &&
         !strcmp(a->ops[1].text, b->ops[1].text) && !strcmp(a->ops[2].text, b->ops[2].text);
}

static int in_loop(const ag_ptx_loop *L, int b) {
  for (int k = 0; k < L->nblocks; k++)
    if (L->blocks[k] == b)
      return 1;
  return 0;
}

static const char *wait_reason(dctx *c, ag_ptx_site *w, const char *fmt, ...) AG_PRINTF(3, 4);
static const char *wait_reason(dctx *c, ag_ptx_site *w, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  w->wait_first = w->wait_last = NULL;
  return w->wait_why = ag_arena_strdup(c->A, msg);
}

static int wait_span(dctx *c, const ag_ptx_cfg *g, ag_ptx_site *w) {
  ag_ptx_stmt *s = w->stmt;
  w->wait_first = w->wait_last = s;
  w->wait_shape = "instruction";
  if (w->kind != AG_PTX_SITE_MBAR_WAIT || w->loop < 0)
    return 0;
  const ag_ptx_loop *L = &g->loops[w->loop];
  const char *P = s->nops >= 1 && (s->ops[0].kind == AG_PTX_OP_REG || s->ops[0].kind == AG_PTX_OP_SYM)
                      ? s->ops[0].text
                      : NULL;
  if (!P)
    return wait_reason(c, w, "the wait at line %d writes no predicate to loop on", s->line)
               ? 0 : AG_ENOMEM;
  /* what the loop does: only this wait, branches and sleeps */
  int nexit = 0, exit_from = -1, exit_to = -1, exit_kind = 0;
  for (int k = 0; k < L->nblocks; k++) {
    const ag_ptx_block *B = &g->blocks[L->blocks[k]];
    for (ag_ptx_stmt *x = B->first; x; x = x == B->last ? NULL : x->next) {
      if (x->kind != AG_PTX_INSTR)
        continue;
      int ok = (ag_ptx_op_is(x, "mbarrier.try_wait") || ag_ptx_op_is(x, "mbarrier.test_wait"))
                   ? same_wait(x, s)
                   : ag__ptx_is_branch(x) ? !x->guard || !strcmp(x->guard, P)
                                          : is_nanosleep(x);
      if (!ok)
        return wait_reason(c, w, "the loop around the wait at line %d does more than wait "
                                 "(line %d: '%s'): not a spin loop, so the exposed wait cannot "
                                 "be timed apart from that work", s->line, x->line,
                           x->opcode ? x->opcode : "?") ? 0 : AG_ENOMEM;
    }
    for (int e = 0; e < B->nsucc; e++)
      if (B->succ[e].to == g->exit || !in_loop(L, B->succ[e].to)) {
        nexit++;
        exit_from = B->id;
        exit_to = B->succ[e].to;
        exit_kind = B->succ[e].kind;
      }
  }
  if (nexit != 1 || exit_to == g->exit)
    return wait_reason(c, w, "the spin loop of the wait at line %d has %d ways out: it must "
                             "leave once, when the wait succeeds", s->line, nexit) ? 0 : AG_ENOMEM;
  /* it leaves when P is true: `@P bra OUT` taken, or `@!P bra BACK` not taken */
  const ag_ptx_block *X = &g->blocks[exit_from];
  const ag_ptx_stmt *br = X->last;
  while (br && br != X->first && br->kind != AG_PTX_INSTR)
    br = br->prev; /* the block's last instruction: its branch */
  int on_p = br && br->kind == AG_PTX_INSTR && br->guard && !strcmp(br->guard, P) &&
             (exit_kind == AG_PTX_EDGE_BRANCH ? !br->guard_neg : br->guard_neg);
  if (!on_p)
    return wait_reason(c, w, "the spin loop of the wait at line %d leaves at line %d on "
                             "another condition than the wait's success", s->line,
                       br ? br->line : 0) ? 0 : AG_ENOMEM;
  /* one way in, by falling into the header */
  const ag_ptx_block *H = &g->blocks[L->header];
  int entries = 0, fall = 1;
  for (int k = 0; k < H->npred; k++) {
    if (in_loop(L, H->pred[k]))
      continue;
    entries++;
    const ag_ptx_block *Pb = &g->blocks[H->pred[k]];
    for (int e = 0; e < Pb->nsucc; e++)
      if (Pb->succ[e].to == H->id && Pb->succ[e].kind != AG_PTX_EDGE_FALL)
        fall = 0;
  }
  if (entries != 1 || !fall)
    return wait_reason(c, w, "the spin loop of the wait at line %d is entered %s: its start "
                             "cannot be marked on the way in only", s->line,
                       entries != 1 ? "from several places" : "by a branch") ? 0 : AG_ENOMEM;
  ag_ptx_stmt *last = X->last;
  if (exit_kind == AG_PTX_EDGE_BRANCH) {
    const ag_ptx_block *T = &g->blocks[exit_to];
    if (T->npred != 1 || T->first->kind != AG_PTX_LABEL)
      return wait_reason(c, w, "the spin loop of the wait at line %d leaves to line %d, "
                               "which is also reached another way: its end cannot be marked "
                               "on the way out only", s->line, T->first->line) ? 0 : AG_ENOMEM;
    last = T->first;
  }
  w->wait_first = H->first;
  w->wait_last = last;
  w->wait_shape = L->nblocks == 1 ? "spin loop (1 block)" : "spin loop (blocks)";
  return 0;
}

/* ---- the iterations a site executes at
 *
 * A site's occurrence is the iteration operand of the begin marker of its
 * iteration region (the innermost region around it with one) that reaches
 * it. When that operand is an integer, or a register whose only value is an
 * induction variable plus a constant (an unrolled loop's copy j reads
 * k + j), the iterations are known: an induction I is a register whose every
 * definition is `mov I, A` (the same constant A) or one `add I, I, S`, so I
 * is A + S*m everywhere, in the loop's copies and in the remainder copies
 * after it. Exactly which m execute (the trip count) is left to the run. */

static int is_add(const ag_ptx_stmt *s) { return ag_ptx_op_is(s, "add"); }

static int64_t gcd64(int64_t a, int64_t b) {
  a = a < 0 ? -a : a;
  b = b < 0 ? -b : b;
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* reg as base + *off through single definitions (mov, cvt, add or sub of a
 * constant); the base is a register defined several times (or not at all),
 * or `self`, or NULL for a constant. 0 when reg is anything else. */
static int affine(defs *d, const char *reg, const char *self, const char **base, int64_t *off,
                  int depth) {
  ag_ptx_stmt *s = ag_map_get_str(&d->map, reg);
  if ((self && !strcmp(reg, self)) || !s || s == &multi_def) {
    *base = reg;
    *off = 0;
    return 1;
  }
  if (depth > 8 || s->guard || s->nops < 2)
    return 0;
  const ag_ptx_operand *x = &s->ops[1], *y = s->nops == 3 ? &s->ops[2] : NULL;
  if ((ag_ptx_op_is(s, "mov") || ag_ptx_op_is(s, "cvt")) && s->nops == 2) {
    if (x->kind == AG_PTX_OP_INT) {
      *base = NULL;
      *off = x->ival;
      return 1;
    }
    return x->kind == AG_PTX_OP_REG && affine(d, x->base, self, base, off, depth + 1);
  }
  int sub = ag_ptx_op_is(s, "sub");
  if ((!is_add(s) && !sub) || !y)
    return 0;
  const ag_ptx_operand *r = x->kind == AG_PTX_OP_REG ? x : y, *k = r == x ? y : x;
  if (r->kind != AG_PTX_OP_REG || k->kind != AG_PTX_OP_INT || (sub && r != x) ||
      !affine(d, r->base, self, base, off, depth + 1))
    return 0;
  *off += sub ? -k->ival : k->ival;
  return 1;
}

/* 1 when reg is an induction: each definition sets it to one constant A,
 * adds a constant to its own value (through single definitions: nvcc's
 * unrolled `I = (I + 1) + 3`), or sets it to another induction's value plus
 * a constant within the same progression. Then reg is A + S*m, m >= 0,
 * everywhere (S: the steps' gcd, all of one sign). */
static int induction(defs *d, ag_ptx_func *f, const char *reg, int64_t *a, int64_t *step,
                     int depth) {
  int ninit = 0;
  int64_t st = 0, other[8][2];
  int nother = 0;
  *a = *step = 0;
  if (depth > 2)
    return 0;
  for (ag_ptx_stmt *s = f->body_open; s; s = s == f->body_close ? NULL : s->next) {
    if (s->kind != AG_PTX_INSTR || !s->nops || s->ops[0].kind != AG_PTX_OP_REG ||
        strcmp(s->ops[0].base, reg))
      continue;
    if (s->guard)
      return 0;
    if (ag_ptx_op_is(s, "mov") && s->nops == 2 && s->ops[1].kind == AG_PTX_OP_INT) {
      if (ninit++ && *a != s->ops[1].ival)
        return 0;
      *a = s->ops[1].ival;
      continue;
    }
    /* the rest of the definition as base + offset: the definition itself
     * with its destination read as a fresh name */
    const char *b = NULL;
    int64_t off = 0;
    int sub = ag_ptx_op_is(s, "sub"), mv = ag_ptx_op_is(s, "mov") || ag_ptx_op_is(s, "cvt");
    const ag_ptx_operand *x = s->nops >= 2 ? &s->ops[1] : NULL, *y = s->nops == 3 ? &s->ops[2] : NULL;
    if (mv && s->nops == 2 && x->kind == AG_PTX_OP_REG) {
      if (!affine(d, x->base, reg, &b, &off, 0))
        return 0;
    } else if ((is_add(s) || sub) && y) {
      const ag_ptx_operand *r = x->kind == AG_PTX_OP_REG ? x : y, *k = r == x ? y : x;
      if (r->kind != AG_PTX_OP_REG || k->kind != AG_PTX_OP_INT || (sub && r != x) ||
          !affine(d, r->base, reg, &b, &off, 0))
        return 0;
      off += sub ? -k->ival : k->ival;
    } else {
      return 0;
    }
    if (b && !strcmp(b, reg)) { /* a step */
      if (!off || (st && (st > 0) != (off > 0)))
        return 0;
      st = st ? (st > 0 ? gcd64(st, off) : -gcd64(st, off)) : off;
    } else if (b && nother < 8) { /* another induction's value */
      int64_t ja, js;
      if (!induction(d, f, b, &ja, &js, depth + 1))
        return 0;
      other[nother][0] = ja + off;
      other[nother++][1] = js;
    } else {
      return 0;
    }
  }
  if (!ninit || !st)
    return 0;
  for (int k = 0; k < nother; k++) { /* within the progression */
    int64_t dv = other[k][0] - *a;
    if (other[k][1] % st || dv % st || (st > 0 ? dv < 0 : dv > 0) ||
        (st > 0) != (other[k][1] > 0))
      return 0;
  }
  *step = st;
  return 1;
}

/* The innermost region around `reg` whose begin markers carry an iteration
 * operand, or -1 (the probes' occurrence rule). */
int ag__ptx_iter_region(const ag_ptx_region *regions, int reg) {
  for (; reg >= 0; reg = regions[reg].parent)
    for (int k = 0; k < regions[reg].nbegins; k++)
      if (regions[reg].begins[k].iter)
        return reg;
  return -1;
}

/* The begin marker of region `reg` that reaches s: the nearest one before
 * it in its block or in the blocks that dominate it. */
static const ag_ptx_marker *reaching_begin(const dctx *c, size_t mk_first, const ag_ptx_cfg *g,
                                           const ag_ptx_stmt *s, int reg) {
  int b = s->block;
  for (const ag_ptx_stmt *x = s; b >= 0;) {
    const ag_ptx_block *B = &g->blocks[b];
    for (; x; x = x == B->first ? NULL : x->prev)
      if (x->kind == AG_PTX_COMMENT)
        for (size_t i = mk_first; i < c->markers.n; i++)
          if (c->markers.v[i].stmt == x && c->markers.v[i].region == reg &&
              c->markers.v[i].kind == AG_PTX_MARK_BEGIN)
            return &c->markers.v[i];
    b = B->idom;
    x = b >= 0 ? g->blocks[b].last : NULL;
  }
  return NULL;
}

static void site_iterations(dctx *c, defs *d, size_t mk_first, const ag_ptx_cfg *g,
                            ag_ptx_site *st) {
  int ireg = ag__ptx_iter_region(c->regions.v, st->region);
  st->iter_known = 0;
  st->iter_line = 0;
  if (ireg < 0) {
    if (st->loop < 0) { /* counted, and it runs once */
      st->iter_known = 1;
      st->iter_from = "outside every loop: its only occurrence is 0";
    } else {
      st->iter_from = "no iteration region: occurrences are counted at run time";
    }
    return;
  }
  const ag_ptx_marker *mk = reaching_begin(c, mk_first, g, st->stmt, ireg);
  if (!mk || !mk->iter) {
    st->iter_from = "no begin marker with an iteration reaches it";
    return;
  }
  st->iter_line = mk->line;
  if (mk->iter[0] != '%') {
    st->iter_known = 1;
    st->iter_first = strtoll(mk->iter, NULL, 0);
    st->iter_from = ag_arena_printf(c->A, "the constant iteration %s of '%s' at line %d",
                                    mk->iter, mk->name, mk->line);
    return;
  }
  const char *base = NULL;
  int64_t off = 0, a = 0, step = 0;
  if ((!d->built && build_defs(d, st->func)) || !affine(d, mk->iter, NULL, &base, &off, 0) ||
      (base && !induction(d, st->func, base, &a, &step, 0))) {
    st->iter_from = ag_arena_printf(c->A, "iteration %s of '%s' at line %d is not an induction "
                                    "plus a constant", mk->iter, mk->name, mk->line);
    return;
  }
  st->iter_known = 1;
  st->iter_first = a + off;
  st->iter_step = step;
  st->iter_from = base ? ag_arena_printf(c->A, "iteration %s of '%s' at line %d: %lld %+lld*m "
                                         "(induction %s)", mk->iter, mk->name, mk->line,
                                         (long long)(a + off), (long long)step, base)
                       : ag_arena_printf(c->A, "iteration %s of '%s' at line %d: constant",
                                         mk->iter, mk->name, mk->line);
}

/* ---- per-function walk */

/* The role in force at the end of block b: its last role marker, else that
 * of its nearest dominator with one (NULL for b < 0 or none). Memoized in
 * last_role (done[b] set once resolved), so all blocks together take time
 * linear in the CFG. */
static const ag_ptx_marker *dom_role(const ag_ptx_cfg *g, ag_ptx_marker **last_role, char *done,
                                     int b, int *stack) {
  int n = 0;
  while (b >= 0 && !done[b] && !last_role[b]) {
    stack[n++] = b;
    b = g->blocks[b].idom;
  }
  ag_ptx_marker *r = b >= 0 ? last_role[b] : NULL;
  if (b >= 0)
    done[b] = 1;
  while (n--) {
    last_role[stack[n]] = r;
    done[stack[n]] = 1;
  }
  return r;
}

static int func_regions(dctx *c, ag_ptx_func *f, ag_ptx_cfg *g, int root, int **region_at) {
  ag_ptx_module *m = c->m;
  int rc = 0;
  int n = f->nstmts;
  int *at = ag_arena_alloc(c->A, sizeof(int) * (size_t)(n ? n : 1));
  frame **in = ag_calloc((size_t)g->nblocks, sizeof *in);
  int *work = ag_malloc(sizeof(int) * (size_t)g->nblocks * 2 + sizeof(int));
  char *queued = ag_calloc((size_t)g->nblocks, 1);
  /* role markers: last one in each block; then (dom_role) the nearest one
   * in the block or its dominators */
  ag_ptx_marker **last_role = ag_calloc((size_t)g->nblocks, sizeof *last_role);
  char *dom_done = ag_calloc((size_t)g->nblocks, 1);
  int *dom_stack = ag_malloc(sizeof(int) * ((size_t)g->nblocks + 1));
  const ag_ptx_marker **role_in = NULL;
  size_t mk_first = c->markers.n;
  if (!at || !in || !work || !queued || !last_role || !dom_done || !dom_stack) {
    rc = AG_ENOMEM;
    goto out;
  }
  for (int i = 0; i < n; i++)
    at[i] = root;
  /* parse the markers of this function */
  for (ag_ptx_stmt *s = f->body_open; s; s = s->next) {
    if (s->kind == AG_PTX_COMMENT) {
      ag_ptx_marker mk;
      int r = ag_ptx_marker_parse(m, s, c->diags, &mk);
      if (r < 0) {
        if (r == AG_ENOMEM) {
          rc = r;
          goto out;
        }
        c->err = AG_EPARSE;
      } else if (r == 1 && ag_vec_push(&c->markers, mk)) {
        rc = AG_ENOMEM;
        goto out;
      }
    }
    if (s == f->body_close)
      break;
  }
  if (c->err)
    goto out;
  size_t mk_end = c->markers.n;
  /* marker lookup by statement: markers are in statement order */
  size_t mi = mk_first;
  ag_ptx_marker **mk_at = ag_calloc((size_t)(n ? n : 1), sizeof *mk_at);
  if (!mk_at) {
    rc = AG_ENOMEM;
    goto out;
  }
  for (; mi < mk_end; mi++)
    mk_at[c->markers.v[mi].stmt->index] = &c->markers.v[mi];
  for (int b = 0; b < g->nblocks; b++) {
    if (b == g->exit)
      continue;
    for (ag_ptx_stmt *s = g->blocks[b].first; s; s = s == g->blocks[b].last ? NULL : s->next)
      if (mk_at[s->index] && mk_at[s->index]->kind == AG_PTX_MARK_ROLE)
        last_role[b] = mk_at[s->index];
  }

  /* the role marker before each begin marker in its block, found by the walk */
  role_in = ag_calloc(mk_end - mk_first + 1, sizeof *role_in);
  frame *rootf = ag_arena_alloc(c->A, sizeof *rootf);
  if (!rootf || !role_in) {
    rc = AG_ENOMEM;
    goto out_mk;
  }
  rootf->region = root;
  in[0] = rootf;
  int wn = 0;
  work[wn++] = 0;
  queued[0] = 1;
  while (wn && !c->err) {
    int b = work[--wn];
    const ag_ptx_block *B = &g->blocks[b];
    frame *st = in[b];
    const ag_ptx_stmt *last_instr = NULL;
    const ag_ptx_marker *brole = NULL;
    for (ag_ptx_stmt *s = B->first; s; s = s == B->last ? NULL : s->next) {
      ag_ptx_marker *mk = mk_at[s->index];
      if (mk && mk->kind == AG_PTX_MARK_ROLE)
        brole = mk;
      if (mk && mk->kind == AG_PTX_MARK_BEGIN) {
        int r;
        role_in[mk - c->markers.v - mk_first] = brole;
        if ((rc = add_region(c, st->region, mk->name, f, &r)))
          goto out_mk;
        mk->region = r;
        frame *nf = ag_arena_alloc(c->A, sizeof *nf);
        if (!nf) {
          rc = AG_ENOMEM;
          goto out_mk;
        }
        nf->region = r;
        nf->begin = mk;
        nf->up = st;
        nf->depth = st->depth + 1;
        st = nf;
      } else if (mk && mk->kind == AG_PTX_MARK_END) {
        if (st->begin && !strcmp(c->regions.v[st->region].name, mk->name)) {
          mk->region = st->region;
          st = st->up;
        } else {
          const frame *x = st;
          while (x && !(x->begin && !strcmp(c->regions.v[x->region].name, mk->name)))
            x = x->up;
          char sa[320], sb[320];
          if (x)
            mark_err(m, s, c->diags,
                     "regions '%s' and '%s' cross in function '%s': '%s' ends at line %d%s "
                     "while '%s', begun at line %d%s inside it, is still open",
                     mk->name, c->regions.v[st->region].name, f->name, mk->name, s->line,
                     src_at(m, s, sa, sizeof sa), c->regions.v[st->region].name,
                     st->begin->line, src_at(m, st->begin->stmt, sb, sizeof sb));
          else
            mark_err(m, s, c->diags,
                     "end of region '%s' without a begin in function '%s' (line %d)%s%s%s%s",
                     mk->name, f->name, s->line, src_at(m, s, sa, sizeof sa),
                     st->begin ? ": the innermost open region is '" : "",
                     st->begin ? c->regions.v[st->region].name : "", st->begin ? "'" : "");
          c->err = AG_EPARSE;
          goto out_mk;
        }
      }
      at[s->index] = st->region;
      if (s->kind == AG_PTX_INSTR)
        last_instr = s;
    }
    for (int k = 0; k < B->nsucc; k++) {
      int t = B->succ[k].to;
      if (t == g->exit) {
        if (st->begin) {
          const ag_ptx_stmt *where = last_instr ? last_instr : B->last;
          char sb[320];
          mark_err(m, where, c->diags,
                   "region '%s' begun at line %d%s has no end on some path in function '%s': "
                   "the function returns at line %d with it open",
                   c->regions.v[st->region].name, st->begin->line,
                   src_at(m, st->begin->stmt, sb, sizeof sb), f->name, where->line);
          c->err = AG_EPARSE;
          goto out_mk;
        }
        continue;
      }
      if (!in[t]) {
        in[t] = st;
        if (!queued[t]) {
          queued[t] = 1;
          work[wn++] = t;
        }
      } else if (!same_stack(in[t], st)) {
        const frame *open = open_in_one(in[t], st);
        const ag_ptx_stmt *where = g->blocks[t].first;
        char sb[320];
        if (open && open->begin)
          mark_err(m, where, c->diags,
                   "region '%s' begun at line %d%s has no end on some path in function '%s': "
                   "line %d is reached both with and without it open",
                   c->regions.v[open->region].name, open->begin->line,
                   src_at(m, open->begin->stmt, sb, sizeof sb), f->name, where->line);
        else
          mark_err(m, where, c->diags,
                   "regions are nested differently on different paths to line %d in "
                   "function '%s'", where->line, f->name);
        c->err = AG_EPARSE;
        goto out_mk;
      }
    }
  }
  if (c->err)
    goto out_mk;
  /* record begin/end sites and roles */
  for (mi = mk_first; mi < mk_end; mi++) {
    ag_ptx_marker *mk = &c->markers.v[mi];
    if (mk->kind == AG_PTX_MARK_ROLE || mk->region < 0)
      continue; /* unreachable markers keep region -1 */
    ag_ptx_region *r = &c->regions.v[mk->region];
    ag_ptx_region_site rs = {mk->line, mk->iter, NULL};
    if (mk->kind == AG_PTX_MARK_BEGIN) {
      /* nearest dominating role marker: before it in its block, else the
       * last one of the nearest dominator that has one */
      const ag_ptx_marker *role = role_in[mi - mk_first];
      if (!role)
        role = dom_role(g, last_role, dom_done, g->blocks[mk->stmt->block].idom, dom_stack);
      rs.role = role ? role->name : NULL;
      if ((rc = push_rsite(c->A, &r->begins, &r->nbegins, rs)))
        goto out_mk;
    } else if ((rc = push_rsite(c->A, &r->ends, &r->nends, rs))) {
      goto out_mk;
    }
  }
  *region_at = at;
out_mk:
  ag_free(mk_at);
  ag_free(role_in);
out:
  ag_free(in);
  ag_free(work);
  ag_free(queued);
  ag_free(last_role);
  ag_free(dom_done);
  ag_free(dom_stack);
  return rc;
}

static int func_sites(dctx *c, ag_ptx_func *f, ag_ptx_cfg *g, const int *at, int *ordinal) {
  int rc = 0;
  int first_site = (int)c->sites.n;
  defs d;
  memset(&d, 0, sizeof d);
  char *seen = ag_malloc((size_t)g->nblocks + 1);
  int *queue = ag_malloc(sizeof(int) * ((size_t)g->nblocks + 1));
  if (!seen || !queue) {
    rc = AG_ENOMEM;
    goto out;
  }
  for (ag_ptx_stmt *s = f->body_open; s; s = s->next) {
    ag_ptx_site_kind k;
    ag_ptx_completion done;
    if (s->kind == AG_PTX_INSTR && classify(s, &k, &done)) {
      ag_ptx_site st;
      memset(&st, 0, sizeof st);
      st.kind = k;
      st.completion = done;
      st.region = at[s->index];
      st.region_id = c->regions.v[st.region].id;
      st.ordinal = ordinal[st.region]++;
      snprintf(st.op_id, sizeof st.op_id, "%016llx:%d", (unsigned long long)st.region_id,
               st.ordinal);
      st.stmt = s;
      st.line = s->line;
      st.func = f;
      st.group_n = -1;
      st.loop = s->block >= 0 ? g->blocks[s->block].loop : -1;
      if (st.loop >= 0) {
        const ag_ptx_loop *L = &g->loops[st.loop];
        st.loop_depth = L->depth;
        st.loop_header_line = g->blocks[L->header].first->line;
      }
      /* the mbarrier operand */
      const ag_ptx_operand *bar = NULL;
      if (done == AG_PTX_DONE_MBARRIER && s->nops)
        bar = &s->ops[s->nops - 1];
      else if (k == AG_PTX_SITE_MBAR_INIT || k == AG_PTX_SITE_MBAR_EXPECT_TX ||
               k == AG_PTX_SITE_CP_ASYNC_MBAR)
        bar = s->nops ? &s->ops[0] : NULL;
      else if (k == AG_PTX_SITE_MBAR_ARRIVE || k == AG_PTX_SITE_MBAR_WAIT)
        bar = s->nops >= 2 ? &s->ops[1] : NULL;
      if (bar && bar->kind == AG_PTX_OP_ADDR) {
        if ((rc = resolve_bar(c, &d, f, bar, &st.bar)))
          goto out;
        st.has_bar = 1;
      }
      if (k == AG_PTX_SITE_MBAR_WAIT && s->nops >= 3)
        st.parity = s->ops[2].text;
      if ((k == AG_PTX_SITE_BULK_WAIT || k == AG_PTX_SITE_CP_ASYNC_WAIT ||
           k == AG_PTX_SITE_WGMMA_WAIT) &&
          s->nops >= 1 && s->ops[0].kind == AG_PTX_OP_INT)
        st.group_n = (int)s->ops[0].ival;
      if (k == AG_PTX_SITE_CP_ASYNC_WAIT && ag_ptx_op_is(s, "cp.async.wait_all"))
        st.group_n = 0;
      if (ag_vec_push(&c->sites, st)) {
        rc = AG_ENOMEM;
        goto out;
      }
      if ((rc = push_list(c->A, &c->regions.v[st.region].sites, &c->regions.v[st.region].nsites,
                          (int)c->sites.n - 1)))
        goto out;
    }
    if (s == f->body_close)
      break;
  }
  /* completion links */
  for (int i = first_site; i < (int)c->sites.n; i++) {
    ag_ptx_site *st = &c->sites.v[i];
    switch (st->completion) {
    case AG_PTX_DONE_MBARRIER:
      if (st->has_bar)
        for (int j = first_site; j < (int)c->sites.n; j++)
          if (c->sites.v[j].kind == AG_PTX_SITE_MBAR_WAIT && bars_match(&st->bar, &c->sites.v[j].bar) &&
              (rc = push_list(c->A, &st->done_by, &st->ndone_by, j)))
            goto out;
      break;
    case AG_PTX_DONE_BULK_GROUP:
      rc = link_groups(c, g, first_site, st, is_bulk_commit, is_bulk_wait, seen, queue);
      break;
    case AG_PTX_DONE_CP_GROUP:
      rc = link_groups(c, g, first_site, st, is_cp_commit, is_cp_wait, seen, queue);
      break;
    case AG_PTX_DONE_WGMMA_GROUP:
      rc = link_groups(c, g, first_site, st, is_wg_commit, is_wg_wait, seen, queue);
      break;
    default:
      break;
    }
    if (rc)
      goto out;
  }
  /* what the reference times of each wait; the iterations of each site */
  for (int i = first_site; i < (int)c->sites.n; i++) {
    ag_ptx_site *st = &c->sites.v[i];
    if ((st->kind == AG_PTX_SITE_MBAR_WAIT || st->kind == AG_PTX_SITE_CP_ASYNC_WAIT ||
         st->kind == AG_PTX_SITE_WGMMA_WAIT || st->kind == AG_PTX_SITE_BULK_WAIT) &&
        (rc = wait_span(c, g, st)))
      goto out;
    site_iterations(c, &d, 0, g, st);
  }
out:
  if (d.built)
    ag_map_release(&d.map);
  ag_free(seen);
  ag_free(queue);
  return rc;
}

int ag_ptx_discover(ag_ptx_module *m, ag_diags *diags, ag_ptx_regions **out) {
  *out = NULL;
  dctx c;
  memset(&c, 0, sizeof c);
  c.m = m;
  c.diags = diags;
  c.A = &m->arena;
  ag_map_init(&c.region_by_key);
  int rc = 0;
  int nf = m->nfuncs;
  ag_ptx_regions *R = ag_arena_alloc(c.A, sizeof *R);
  ag_ptx_cfg **cfgs = ag_arena_alloc(c.A, sizeof *cfgs * (size_t)(nf ? nf : 1));
  int *roots = ag_malloc(sizeof(int) * (size_t)(nf ? nf : 1));
  /* the region at each statement, per function: kept as R->region_at */
  int **at = ag_arena_alloc(c.A, sizeof *at * (size_t)(nf ? nf : 1));
  int *ordinal = NULL;
  if (!R || !cfgs || !roots || !at) {
    rc = AG_ENOMEM;
    goto out;
  }
  for (int i = 0; i < nf; i++) {
    ag_ptx_func *f = m->funcs[i];
    roots[i] = -1;
    if (f->is_decl)
      continue;
    if ((rc = ag_ptx_cfg_build(m, f, diags, &cfgs[i]))) {
      if (rc != AG_EPARSE)
        goto out;
      c.err = rc;
      rc = 0;
      cfgs[i] = NULL;
      continue;
    }
    if ((rc = add_region(&c, -1, f->name, f, &roots[i])))
      goto out;
    int saved = c.err;
    c.err = 0;
    if ((rc = func_regions(&c, f, cfgs[i], roots[i], &at[i])))
      goto out;
    if (c.err)
      at[i] = NULL;
    else
      c.err = saved;
  }
  if (c.err) {
    rc = c.err;
    goto out;
  }
  /* sites */
  ordinal = ag_calloc(c.regions.n ? c.regions.n : 1, sizeof(int));
  if (!ordinal) {
    rc = AG_ENOMEM;
    goto out;
  }
  for (int i = 0; i < nf; i++)
    if (at[i] && (rc = func_sites(&c, m->funcs[i], cfgs[i], at[i], ordinal)))
      goto out;
  /* hierarchy */
  for (size_t i = 0; i < c.regions.n; i++) {
    ag_ptx_region *r = &c.regions.v[i];
    if (r->parent >= 0 &&
        (rc = push_list(c.A, &c.regions.v[r->parent].children, &c.regions.v[r->parent].nchildren,
                        (int)i)))
      goto out;
    /* the iteration register when all begins agree */
    for (int k = 0; k < r->nbegins; k++) {
      const char *it = r->begins[k].iter;
      if (k == 0)
        r->iter = it;
      else if (!it || !r->iter || strcmp(it, r->iter)) {
        r->iter = NULL;
        break;
      }
    }
    for (int k = 0; k < r->nbegins; k++) {
      const char *ro = r->begins[k].role;
      if (k == 0)
        r->role = ro;
      else if (!ro || !r->role || strcmp(ro, r->role)) {
        r->role = NULL;
        break;
      }
    }
  }
  /* dynamic ownership: regions of a .func called from several regions */
  for (int i = 0; i < nf; i++) {
    if (!cfgs[i] || !at[i])
      continue;
    for (int k = 0; k < cfgs[i]->ncalls; k++) {
      const ag_ptx_call *cl = &cfgs[i]->calls[k];
      if (!cl->callee)
        continue;
      int owner = at[i][cl->stmt->index];
      for (int j = 0; j < nf; j++) {
        if (roots[j] < 0 || strcmp(m->funcs[j]->name, cl->callee))
          continue;
        ag_ptx_region *fr = &c.regions.v[roots[j]];
        int dup = 0;
        for (int q = 0; q < fr->nowners; q++)
          dup |= fr->owners[q] == owner;
        if (!dup && (rc = push_list(c.A, &fr->owners, &fr->nowners, owner)))
          goto out;
      }
    }
  }
  for (size_t i = 0; i < c.regions.n; i++) {
    ag_ptx_region *r = &c.regions.v[i];
    int fi = 0;
    while (fi < nf && m->funcs[fi] != r->func)
      fi++;
    if (fi < nf && roots[fi] >= 0) {
      const ag_ptx_region *fr = &c.regions.v[roots[fi]];
      r->dynamic = fr->nowners > 1;
      if (&c.regions.v[i] != fr) {
        r->owners = fr->owners;
        r->nowners = fr->nowners;
      }
    }
  }
  /* move the tables into the arena */
  R->nregions = (int)c.regions.n;
  R->nsites = (int)c.sites.n;
  R->nmarkers = (int)c.markers.n;
  R->regions = ag_arena_alloc(c.A, sizeof *R->regions * (c.regions.n ? c.regions.n : 1));
  R->sites = ag_arena_alloc(c.A, sizeof *R->sites * (c.sites.n ? c.sites.n : 1));
  R->markers = ag_arena_alloc(c.A, sizeof *R->markers * (c.markers.n ? c.markers.n : 1));
  if (!R->regions || !R->sites || !R->markers) {
    rc = AG_ENOMEM;
    goto out;
  }
  if (c.regions.n)
    memcpy(R->regions, c.regions.v, sizeof *R->regions * c.regions.n);
  if (c.sites.n)
    memcpy(R->sites, c.sites.v, sizeof *R->sites * c.sites.n);
  if (c.markers.n)
    memcpy(R->markers, c.markers.v, sizeof *R->markers * c.markers.n);
  R->cfgs = cfgs;
  R->region_at = at;
  *out = R;
out:
  ag_free(roots);
  ag_free(ordinal);
  ag_vec_free(&c.regions);
  ag_vec_free(&c.sites);
  ag_vec_free(&c.markers);
  ag_map_release(&c.region_by_key);
  return rc;
}

const char *ag_ptx_site_kind_name(ag_ptx_site_kind k) {
  static const char *const names[] = {
      "tma_load",     "tma_store",    "tma_reduce",   "tma_prefetch",  "bulk_copy",
      "bulk_commit",  "bulk_wait",    "cp_async",     "cp_async_commit", "cp_async_wait",
      "cp_async_mbarrier_arrive", "wgmma", "wgmma_fence", "wgmma_commit", "wgmma_wait",
      "mbarrier_init", "mbarrier_arrive", "mbarrier_expect_tx", "mbarrier_wait", "barrier"};
  return (unsigned)k < AG_PTX_SITE__COUNT ? names[k] : "?";
}

const char *ag_ptx_completion_name(ag_ptx_completion c) {
  static const char *const names[] = {"sync", "mbarrier", "bulk_group", "cp_async_group",
                                      "wgmma_group", "none"};
  return (unsigned)c <= AG_PTX_DONE_NONE ? names[c] : "?";
}

int ag__ptx_reg_bits(const ag_ptx_func *f, const char *reg) {
  size_t rl = strlen(reg);
  for (const ag_ptx_stmt *s = f->body_open; s; s = s->next) {
    if (s->kind == AG_PTX_DECL && s->name && !strcmp(s->name, ".reg") && s->type) {
      for (int i = 0; i < s->nnames; i++) {
        const ag_ptx_decl_name *d = &s->names[i];
        size_t nl = strlen(d->name);
        int match = 0;
        if (d->count > 0) {
          if (rl > nl && !strncmp(reg, d->name, nl)) {
            char *e = NULL;
            long k = strtol(reg + nl, &e, 10);
            match = e && *e == 0 && reg[nl] >= '0' && reg[nl] <= '9' && k >= 0 &&
                    k < d->count;
          }
        } else {
          match = rl == nl && !strcmp(reg, d->name);
        }
        if (match) {
          const char *t = s->type;
          if (!strcmp(t, ".pred"))
            return 1;
          int b = atoi(t + 2);
          return b > 0 ? b : 0;
        }
      }
    }
    if (s == f->body_close)
      break;
  }
  return 0;
}

int ag_ptx_resolve_region(const ag_ptx_module *m, const char *query, char **out) {
  const char **names = ag_calloc((size_t)m->nfuncs + 1, sizeof *names);
  char buf[4096];
  int n = 0, rc;
  *out = NULL;
  for (int i = 0; names && i < m->nfuncs; i++)
    if (m->funcs[i]->is_entry)
      names[n++] = m->funcs[i]->name;
  rc = names ? ag_demangle_resolve(query, names, n, buf, sizeof buf) : AG_ENOMEM;
  ag_free(names);
  if (rc == AG_DEMANGLE_EFULL || rc == AG_DEMANGLE_EINVAL)
    return rc == AG_DEMANGLE_EFULL ? AG_EFULL : AG_EINVAL;
  if (rc < 0)
    return rc;
  return (*out = ag_strdup(buf)) ? 0 : AG_ENOMEM;
}
