/*
 * map.c — open-addressing hash map (linear probing, tombstones) from byte
 * strings to borrowed pointers. Keys are copied. Load factor stays under 3/4.
 * Used for symbol tables, interning and region lookups: O(1) expected.
 */
#include "argus/core.h"

#include <string.h>

struct ag_map_slot {
  uint64_t hash;
  char *key; /* NULL: empty; TOMB: deleted */
  size_t klen;
  void *val;
};

static char tomb_marker;
#define TOMB (&tomb_marker)

uint64_t ag_hash64(const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t h = 14695981039346656037ull; /* FNV-1a 64 offset basis */
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

void ag_map_init(ag_map *m) { memset(m, 0, sizeof *m); }

void ag_map_release(ag_map *m) {
  for (size_t i = 0; i < m->cap; i++)
    if (m->slots[i].key && m->slots[i].key != TOMB)
      ag_free(m->slots[i].key);
  ag_free(m->slots);
  memset(m, 0, sizeof *m);
}

static ag_map_slot *find(const ag_map *m, const void *key, size_t klen,
                         uint64_t h) {
  if (!m->cap)
    return NULL;
  size_t mask = m->cap - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    ag_map_slot *s = &m->slots[i];
    if (!s->key)
      return NULL;
    if (s->key != TOMB && s->hash == h && s->klen == klen &&
        memcmp(s->key, key, klen) == 0)
      return s;
  }
}

static int grow(ag_map *m) {
  size_t nc = m->cap ? m->cap * 2 : 16;
  if (m->count * 4 < m->cap) /* mostly tombstones: rehash in place size */
    nc = m->cap;
  ag_map_slot *ns = ag_calloc(nc, sizeof *ns);
  if (!ns)
    return AG_ENOMEM;
  for (size_t i = 0; i < m->cap; i++) {
    ag_map_slot *s = &m->slots[i];
    if (!s->key || s->key == TOMB)
      continue;
    size_t j = s->hash & (nc - 1);
    while (ns[j].key)
      j = (j + 1) & (nc - 1);
    ns[j] = *s;
  }
  ag_free(m->slots);
  m->slots = ns;
  m->cap = nc;
  m->used = m->count;
  return 0;
}

int ag_map_put(ag_map *m, const void *key, size_t klen, void *val) {
  uint64_t h = ag_hash64(key, klen);
  ag_map_slot *s = find(m, key, klen, h);
  if (s) {
    s->val = val;
    return 0;
  }
  if ((m->used + 1) * 4 > m->cap * 3 && grow(m))
    return AG_ENOMEM;
  char *k = ag_malloc(klen + 1);
  if (!k)
    return AG_ENOMEM;
  memcpy(k, key, klen);
  k[klen] = 0;
  size_t mask = m->cap - 1;
  size_t i = h & mask;
  while (m->slots[i].key && m->slots[i].key != TOMB)
    i = (i + 1) & mask;
  if (!m->slots[i].key)
    m->used++;
  m->slots[i] = (ag_map_slot){h, k, klen, val};
  m->count++;
  return 0;
}

void *ag_map_get(const ag_map *m, const void *key, size_t klen) {
  ag_map_slot *s = find(m, key, klen, ag_hash64(key, klen));
  return s ? s->val : NULL;
}

int ag_map_has(const ag_map *m, const void *key, size_t klen) {
  return find(m, key, klen, ag_hash64(key, klen)) != NULL;
}

int ag_map_del(ag_map *m, const void *key, size_t klen) {
  ag_map_slot *s = find(m, key, klen, ag_hash64(key, klen));
  if (!s)
    return AG_ENOTFOUND;
  ag_free(s->key);
  s->key = TOMB;
  s->val = NULL;
  m->count--;
  return 0;
}

int ag_map_put_str(ag_map *m, const char *key, void *val) {
  return ag_map_put(m, key, strlen(key), val);
}

void *ag_map_get_str(const ag_map *m, const char *key) {
  return ag_map_get(m, key, strlen(key));
}

int ag_map_next(const ag_map *m, size_t *it, const void **key, size_t *klen,
                void **val) {
  for (; *it < m->cap; (*it)++) {
    ag_map_slot *s = &m->slots[*it];
    if (s->key && s->key != TOMB) {
      if (key)
        *key = s->key;
      if (klen)
        *klen = s->klen;
      if (val)
        *val = s->val;
      (*it)++;
      return 1;
    }
  }
  return 0;
}
