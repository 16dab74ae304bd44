/*
 * tags.c — tags and the merge lattice: bottom < any tuple < top.
 *
 * Tags are hash-consed in the check's arena, so the interpreter can compare
 * them by pointer. A join flattens nested joins, drops bottom members
 * (merge(bot, t) = t), absorbs into top (merge(top, t) = top) and removes
 * duplicates; a join of tuples that may differ stays a join, and the solver
 * decides whether they differ for some thread (then the value is top).
 */
#include "check_int.h"

#include <stdlib.h>
#include <string.h>

static const ag__tag *intern(ag__ck *c, const ag__tag *t, const void *key, size_t klen) {
  ag__tag *hit = ag_map_get(&c->tagcons, key, klen);
  if (hit)
    return hit;
  ag__tag *n = ag__ck_alloc(c, sizeof *n);
  *n = *t;
  if (ag_map_put(&c->tagcons, key, klen, n))
    ag__ck_oom(c);
  return n;
}

const ag__tag *ag__tag_bot(ag__ck *c) {
  static const ag__tag bot = {.k = TG_BOT};
  (void)c;
  return &bot;
}

const ag__tag *ag__tag_top(ag__ck *c, const char *why) {
  ag__tag t = {.k = TG_TOP, .why = why};
  const void *key[2] = {(const void *)(uintptr_t)TG_TOP, why};
  return intern(c, &t, key, sizeof key);
}

const ag__tag *ag__tag_tup(ag__ck *c, int n, const ag_expr **comp, const ag__tagfn *fn,
                           const ag_expr **coord) {
  int nc = fn ? fn->rank : 0;
  size_t klen = (size_t)(3 + n + nc) * sizeof(void *);
  const void **key = ag_malloc(klen);
  if (!key)
    ag__ck_oom(c);
  key[0] = (const void *)(uintptr_t)TG_TUP;
  key[1] = (const void *)(uintptr_t)n;
  key[2] = fn;
  for (int i = 0; i < n; i++)
    key[3 + i] = comp[i];
  for (int i = 0; i < nc; i++)
    key[3 + n + i] = coord[i];
  ag__tag *hit = ag_map_get(&c->tagcons, key, klen);
  if (hit) {
    ag_free(key);
    return hit;
  }
  ag__tag t = {.k = TG_TUP, .n = n, .fn = fn};
  t.comp = ag__ck_alloc(c, (size_t)(n ? n : 1) * sizeof *t.comp);
  ag__mcpy(t.comp, comp, (size_t)n * sizeof *t.comp);
  if (nc) {
    t.coord = ag__ck_alloc(c, (size_t)nc * sizeof *t.coord);
    ag__mcpy(t.coord, coord, (size_t)nc * sizeof *t.coord);
  }
  ag__tag *r = ag__ck_alloc(c, sizeof *r);
  *r = t;
  int rc = ag_map_put(&c->tagcons, key, klen, r);
  ag_free(key);
  if (rc)
    ag__ck_oom(c);
  return r;
}

/* Same value for every thread: same kind and the same component expressions
 * (origin does not matter). */
static int same(const ag__tag *a, const ag__tag *b) {
  if (a == b)
    return 1;
  if (a->k != TG_TUP || b->k != TG_TUP || a->n != b->n)
    return 0;
  for (int i = 0; i < a->n; i++)
    if (a->comp[i] != b->comp[i])
      return 0;
  return 1;
}

static int cmp_ptr(const void *x, const void *y) {
  uintptr_t a = (uintptr_t) * (const ag__tag *const *)x, b = (uintptr_t) * (const ag__tag *const *)y;
  return a < b ? -1 : a > b;
}

const ag__tag *ag__tag_join(ag__ck *c, const ag__tag *a, const ag__tag *b) {
  if (a->k == TG_BOT || same(a, b))
    return b;
  if (b->k == TG_BOT)
    return a;
  if (a->k == TG_TOP)
    return a;
  if (b->k == TG_TOP)
    return b;
  int na = a->k == TG_JOIN ? a->nm : 1, nb = b->k == TG_JOIN ? b->nm : 1;
  const ag__tag **m = ag_malloc((size_t)(na + nb + 1) * sizeof *m);
  if (!m)
    ag__ck_oom(c);
  int n = 0;
  for (int s = 0; s < 2; s++) {
    const ag__tag *x = s ? b : a;
    int cnt = x->k == TG_JOIN ? x->nm : 1;
    for (int i = 0; i < cnt; i++) {
      const ag__tag *y = x->k == TG_JOIN ? x->m[i] : x;
      int dup = 0;
      for (int j = 0; j < n && !dup; j++)
        dup = same(m[j], y);
      if (!dup)
        m[n++] = y;
    }
  }
  if (n == 1) {
    const ag__tag *r = m[0];
    ag_free(m);
    return r;
  }
  qsort(m, (size_t)n, sizeof *m, cmp_ptr);
  m[n] = (const ag__tag *)(uintptr_t)TG_JOIN; /* key: members + kind */
  const ag__tag *hit = ag_map_get(&c->tagcons, m, (size_t)(n + 1) * sizeof *m);
  if (hit) {
    ag_free(m);
    return hit;
  }
  ag__tag t = {.k = TG_JOIN, .nm = n};
  t.m = ag__ck_alloc(c, (size_t)n * sizeof *t.m);
  ag__mcpy(t.m, m, (size_t)n * sizeof *t.m);
  ag__tag *r = ag__ck_alloc(c, sizeof *r);
  *r = t;
  int rc = ag_map_put(&c->tagcons, m, (size_t)(n + 1) * sizeof *m, r);
  ag_free(m);
  if (rc)
    ag__ck_oom(c);
  return r;
}

const ag__tag *ag__tag_shr(ag__ck *c, int buf, const ag_expr *addr, const ag_tile_node *at) {
  ag__tag t = {.k = TG_SHR, .buf = buf, .addr = addr, .pc = c->pc, .epoch = c->epoch,
               .nrec = (int)c->wrecs.n, .at = at};
  struct {
    intptr_t k, buf;
    const void *addr;
    int64_t pc;
    intptr_t epoch, nrec;
  } key = {TG_SHR, buf, addr, c->pc, c->epoch, (intptr_t)c->wrecs.n};
  return intern(c, &t, &key, sizeof key);
}

int ag__tag_has_shr(const ag__tag *t) {
  if (t->k == TG_SHR)
    return 1;
  if (t->k == TG_JOIN)
    for (int i = 0; i < t->nm; i++)
      if (ag__tag_has_shr(t->m[i]))
        return 1;
  return 0;
}

void ag__tag_print(const ag__tag *t, ag_str *out) {
  switch (t->k) {
  case TG_BOT: ag_str_puts(out, "bot"); break;
  case TG_TOP: ag_str_puts(out, "top"); break;
  case TG_TUP:
    ag_str_putc(out, '(');
    for (int i = 0; i < t->n; i++) {
      if (i)
        ag_str_puts(out, ", ");
      ag__xprint(t->comp[i], out);
    }
    ag_str_putc(out, ')');
    break;
  case TG_JOIN:
    ag_str_puts(out, "join(");
    for (int i = 0; i < t->nm; i++) {
      if (i)
        ag_str_puts(out, ", ");
      ag__tag_print(t->m[i], out);
    }
    ag_str_putc(out, ')');
    break;
  case TG_SHR:
    ag_str_printf(out, "shared#%d[", t->buf);
    ag__xprint(t->addr, out);
    ag_str_printf(out, "]@%lld", (long long)t->pc);
    break;
  }
}
