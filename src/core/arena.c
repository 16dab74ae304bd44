/*
 * arena.c — bump allocator for graph-shaped data (ASTs, PTX IR, plan DAGs)
 * that is freed all at once. Allocation is a pointer bump in the common case;
 * requests larger than a chunk get a chunk of their own.
 */
#include "argus/core.h"

#include <string.h>

struct ag_arena_chunk {
  ag_arena_chunk *next;
  size_t size, used;
  _Alignas(16) unsigned char data[];
};

void ag_arena_init(ag_arena *a, size_t chunk_size) {
  a->head = NULL;
  a->chunk_size = chunk_size ? chunk_size : 64 * 1024;
  a->used_total = 0;
}

void ag_arena_release(ag_arena *a) {
  ag_arena_chunk *c = a->head;
  while (c) {
    ag_arena_chunk *n = c->next;
    ag_free(c);
    c = n;
  }
  a->head = NULL;
  a->used_total = 0;
}

void *ag_arena_alloc(ag_arena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (n == 0)
    n = 16;
  ag_arena_chunk *c = a->head;
  if (!c || c->size - c->used < n) {
    size_t sz = n > a->chunk_size ? n : a->chunk_size;
    ag_arena_chunk *nc = ag_malloc(sizeof *nc + sz);
    if (!nc)
      return NULL;
    nc->size = sz;
    nc->used = 0;
    if (c && n > a->chunk_size) {
      /* big one-off: keep the current chunk at the head for small requests */
      nc->next = c->next;
      c->next = nc;
    } else {
      nc->next = c;
      a->head = nc;
    }
    c = nc;
  }
  void *p = c->data + c->used;
  c->used += n;
  a->used_total += n;
  memset(p, 0, n);
  return p;
}

char *ag_arena_strndup(ag_arena *a, const char *s, size_t n) {
  char *r = ag_arena_alloc(a, n + 1);
  if (!r)
    return NULL;
  memcpy(r, s, n);
  r[n] = 0;
  return r;
}

char *ag_arena_strdup(ag_arena *a, const char *s) {
  return ag_arena_strndup(a, s, strlen(s));
}

char *ag_arena_printf(ag_arena *a, const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *r = n < 0 ? NULL : ag_arena_alloc(a, (size_t)n + 1);
  if (r)
    vsnprintf(r, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  return r;
}
