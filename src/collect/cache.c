/*
 * cache.c — the cubin cache: the one adapter between compilation and where
 * compiled artifacts are kept. The key is SHA-256 over the PTX, the target,
 * the compile options and the nvJitLink version, so a hit is the same cubin
 * nvJitLink would make. Entries are <dir>/<key>.cubin and <key>.log (the
 * info log), each written atomically; a damaged or half-present entry is a
 * miss. When the versioned workspace (include/argus/store.h) lands, these
 * two functions put and get through it instead.
 */
#include "argus/collect.h"

#include <stdio.h>
#include <string.h>

static int make_key(const char *ptx, size_t len, const char *arch, char key[65]) {
  unsigned maj = 0, min = 0;
  ag_jit_version(&maj, &min);
  char tail[96];
  int tl = snprintf(tail, sizeof tail, "%c-arch=%s -verbose%cnvJitLink %u.%u", 0, arch, 0,
                    maj, min);
  ag_sha256 h;
  int rc = ag_sha256_begin(&h);
  if (rc)
    return rc;
  if ((rc = ag_sha256_update(&h, ptx, len)) || (rc = ag_sha256_update(&h, tail, (size_t)tl))) {
    ag_sha256_abort(&h);
    return rc;
  }
  return ag_sha256_end(&h, NULL, key);
}

static int cache_get(const char *dir, const char *key, ag_cubin *c) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.cubin", dir, key);
  char *data = NULL, *log = NULL;
  size_t len = 0, ll = 0;
  if (ag_file_read(path, &data, &len))
    return AG_ENOTFOUND;
  snprintf(path, sizeof path, "%s/%s.log", dir, key);
  if (ag_file_read(path, &log, &ll)) {
    ag_free(data);
    return AG_ENOTFOUND;
  }
  c->data = (unsigned char *)data;
  c->len = len;
  c->info_log = log;
  return 0;
}

static int cache_put(const char *dir, const ag_cubin *c) {
  int rc = ag_mkdir_p(dir, 0755);
  if (rc)
    return rc;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.log", dir, c->key);
  const char *log = c->info_log ? c->info_log : "";
  if ((rc = ag_file_write_atomic(path, log, strlen(log))))
    return rc;
  snprintf(path, sizeof path, "%s/%s.cubin", dir, c->key); /* last: marks complete */
  return ag_file_write_atomic(path, c->data, c->len);
}

int ag_jit_compile_cached(const char *cache_dir, const char *ptx, size_t len,
                          const char *name, const char *arch, ag_diags *diags,
                          ag_cubin **out) {
  *out = NULL;
  char target[16];
  if (!arch) {
    if (ag_jit_target(ptx, len, target)) {
      ag_diags_add(diags, AG_SEV_ERROR, name, 0, 0, NULL, 0,
                   "the PTX has no .target directive: cannot tell which GPU to compile for");
      return AG_EPARSE;
    }
    arch = target;
  }
  char key[65];
  int rc = make_key(ptx, len, arch, key);
  if (rc)
    return rc;
  if (cache_dir) {
    ag_cubin *c = ag_calloc(1, sizeof *c);
    if (!c)
      return AG_ENOMEM;
    if (cache_get(cache_dir, key, c) == 0 && strlen(arch) < sizeof c->arch) {
      strcpy(c->arch, arch);
      memcpy(c->key, key, sizeof c->key);
      c->from_cache = 1;
      if ((rc = ag_jit_parse_info(c->info_log, &c->funcs, &c->nfuncs))) {
        ag_cubin_free(c);
        return rc;
      }
      *out = c;
      return 0;
    }
    ag_cubin_free(c);
  }
  ag_cubin *c = NULL;
  if ((rc = ag_jit_compile(ptx, len, name, arch, diags, &c)))
    return rc;
  memcpy(c->key, key, sizeof c->key);
  if (cache_dir && (rc = cache_put(cache_dir, c))) {
    ag_diags_add(diags, AG_SEV_WARNING, cache_dir, 0, 0, NULL, 0,
                 "cannot write the cubin cache: %s", ag_strerror(rc));
  }
  *out = c;
  return 0;
}
