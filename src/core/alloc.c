/*
 * alloc.c — the one allocation wrapper. Counts allocations and can be told
 * to fail the N-th one, so parsers and the store can be driven through their
 * out-of-memory paths in tests (SQLite's fault loops are the model).
 */
#include "argus/core.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_long fail_at;  /* 0: off; otherwise fail when count reaches it */
static atomic_long n_allocs; /* allocations attempted */

void ag_alloc_fail_at(long n) {
  atomic_store(&fail_at, n > 0 ? atomic_load(&n_allocs) + n : 0);
}

long ag_alloc_count(void) { return atomic_load(&n_allocs); }

static int should_fail(void) {
  long k = atomic_fetch_add(&n_allocs, 1) + 1;
  long f = atomic_load(&fail_at);
  return f != 0 && k == f;
}

void *ag_malloc(size_t n) {
  if (should_fail())
    return NULL;
  return malloc(n ? n : 1);
}

void *ag_calloc(size_t count, size_t size) {
  if (should_fail())
    return NULL;
  return calloc(count ? count : 1, size ? size : 1);
}

void *ag_realloc(void *p, size_t n) {
  if (should_fail())
    return NULL;
  return realloc(p, n ? n : 1);
}

void ag_free(void *p) { free(p); }

char *ag_strndup(const char *s, size_t n) {
  size_t len = strnlen(s, n);
  char *r = ag_malloc(len + 1);
  if (!r)
    return NULL;
  memcpy(r, s, len);
  r[len] = 0;
  return r;
}

char *ag_strdup(const char *s) { return ag_strndup(s, strlen(s)); }
