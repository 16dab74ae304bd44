/*
 * map_bind.c — the mapping run's counter slots in a harness (map_bind.h):
 * one allocation per mapping module, zeroed once, read once at finish.
 * libc alone. Load: one bind per module, one copy of at most
 * AG_MAP_MAX_SLOTS * 8 bytes at finish.
 */
#include "map_bind.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argus/host.h"

static int cu_err(CUresult r, const char *call, char *why, size_t n) {
  snprintf(why, n, "%s failed: CUDA error %d", call, (int)r);
  return AG_HOST_ECUDA;
}

int ag__map_bind(const ag__map_cu *cu, CUmodule mod, CUstream s, uint32_t max_slots,
                 ag__map_binding *b, char *why, size_t whylen) {
  memset(b, 0, sizeof *b);
  CUdeviceptr desc = 0, need = 0;
  size_t bytes = 0, nbytes = 0;
  if (cu->get_global(&desc, &bytes, mod, AG_MAP_DESC_SYMBOL) != CUDA_SUCCESS)
    return 0; /* not a mapping variant */
  if (bytes != AG_MAP_DESC_BYTES ||
      cu->get_global(&need, &nbytes, mod, AG_MAP_SLOTS_SYMBOL) != CUDA_SUCCESS ||
      nbytes != sizeof(uint32_t)) {
    snprintf(why, whylen,
             "the module has '%s' (%zu bytes) but no 4-byte '%s': it is not a mapping "
             "variant of this argus (make it again with argus variant --kind mapping)",
             AG_MAP_DESC_SYMBOL, bytes, AG_MAP_SLOTS_SYMBOL);
    return AG_HOST_EINVAL;
  }
  uint32_t n = 0;
  CUresult r = cu->dtoh(&n, need, sizeof n);
  if (r != CUDA_SUCCESS)
    return cu_err(r, "cuMemcpyDtoH(" AG_MAP_SLOTS_SYMBOL ")", why, whylen);
  if (n == 0 || n > AG_MAP_MAX_SLOTS) {
    snprintf(why, whylen, "the mapping variant asks for %u counter slots (1 to %u)", n,
             AG_MAP_MAX_SLOTS);
    return AG_HOST_EINVAL;
  }
  uint32_t asked = n;
  if (max_slots && n > max_slots) /* the variant then counts every execution in slot 0 */
    n = max_slots;
  size_t sz = (size_t)n * 8;
  if ((r = cu->mem_alloc(&b->slots, sz)) != CUDA_SUCCESS) {
    b->slots = 0;
    return cu_err(r, "cuMemAlloc(mapping counters)", why, whylen);
  }
  uint64_t p = (uint64_t)b->slots;
  uint32_t cap = n, on = 1;
  memcpy(b->desc, &p, 8);
  memcpy(b->desc + 8, &cap, 4);
  memcpy(b->desc + 12, &on, 4);
  if ((r = cu->memset_d8(b->slots, 0, sz, s)) != CUDA_SUCCESS ||
      (r = cu->htod(desc, b->desc, sizeof b->desc, s)) != CUDA_SUCCESS) {
    cu->mem_free(b->slots);
    b->slots = 0;
    return cu_err(r, "binding the mapping counters (cuMemsetD8Async / cuMemcpyHtoDAsync)", why,
                  whylen);
  }
  b->nslots = n;
  b->need = asked;
  b->bound = 1;
  return 0;
}

int ag__map_write(const ag__map_cu *cu, const ag__map_binding *b, const char *dir, char *why,
                  size_t whylen) {
  if (!b->bound)
    return 0;
  uint64_t *v = malloc((size_t)b->nslots * 8);
  if (!v) {
    snprintf(why, whylen, "out of memory for %u mapping counters", b->nslots);
    return AG_HOST_ENOMEM;
  }
  CUresult r = cu->dtoh(v, b->slots, (size_t)b->nslots * 8);
  if (r != CUDA_SUCCESS) {
    free(v);
    return cu_err(r, "cuMemcpyDtoH(mapping counters)", why, whylen);
  }
  char path[4096], tmp[4200];
  snprintf(path, sizeof path, "%s/%s", dir, AG_MAP_COUNTS_FILE);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  int rc = 0;
  if (!f) {
    snprintf(why, whylen, "cannot write '%s': %s", tmp, strerror(errno));
    free(v);
    return AG_HOST_EIO;
  }
  fprintf(f,
          "{\"format\": \"argus-map-counts\", \"version\": 1, \"slots\": %u, \"needed\": %u, "
          "\"dropped\": %llu, \"counts\": [",
          b->nslots, b->need, (unsigned long long)v[0]);
  for (uint32_t i = 0; i < b->nslots; i++)
    fprintf(f, "%s%llu", i ? (i % 16 ? ", " : ",\n") : "", (unsigned long long)v[i]);
  fputs("]}\n", f);
  if (ferror(f) | fclose(f) || rename(tmp, path)) {
    snprintf(why, whylen, "cannot write '%s': %s", path, strerror(errno));
    remove(tmp);
    rc = AG_HOST_EIO;
  }
  free(v);
  return rc;
}

void ag__map_unbind(const ag__map_cu *cu, ag__map_binding *b) {
  if (b->slots)
    cu->mem_free(b->slots);
  memset(b, 0, sizeof *b);
}
