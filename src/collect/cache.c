/*
 * cache.c — the cubin cache: the one adapter between compilation and where
 * compiled artifacts are kept. The key is SHA-256 over the PTX, the target,
 * the ptxas options (the target among them) and the ptxas version, so a hit
 * is the same cubin ptxas would make. Entries are <dir>/<key>.cubin and <key>.log (the
 * info log), each written atomically; a damaged or half-present entry is a
 * miss. When the versioned workspace (include/argus/store.h) lands, these
 * two functions put and get through it instead.
 */
#include "argus/collect.h"

#include <stdio.h>
#include <string.h>

static int make_key(const char *ptx, size_t len, char *const *opts, char key[65]) {
  ag_sha256 h;
  int rc = ag_sha256_begin(&h);
  if (rc)
    return rc;
  ag_str tail = AG_STR_INIT;
  for (int i = 0; opts[i]; i++)
    ag_str_printf(&tail, "%c%s", 0, opts[i]);
  ag_str_printf(&tail, "%cptxas %s", 0, ag_jit_compiler_version());
  if (tail.oom)
    rc = AG_ENOMEM;
  if (rc || (rc = ag_sha256_update(&h, ptx, len)) ||
      (rc = ag_sha256_update(&h, tail.p, tail.len))) {
    ag_sha256_abort(&h);
    ag_str_release(&tail);
    return rc;
  }
  ag_str_release(&tail);
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
  return ag_jit_compile_cached_ex(cache_dir, ptx, len, name, arch, NULL, diags, out);
}

int ag_jit_compile_cached_ex(const char *cache_dir, const char *ptx, size_t len,
                             const char *name, const char *arch, const char *const *opts,
                             ag_diags *diags, ag_cubin **out) {
  *out = NULL;
  char **full = NULL;
  int rc = ag_jit_options(ptx, len, arch, opts, &full);
  if (rc == AG_ENOMEM)
    return rc;
  if (rc) /* the compile says why */
    return ag_jit_compile_ex(ptx, len, name, arch, opts, diags, out);
  char key[65];
  if ((rc = make_key(ptx, len, full, key)))
    goto out;
  if (cache_dir) {
    ag_cubin *c = ag_calloc(1, sizeof *c);
    if (!c) {
      rc = AG_ENOMEM;
      goto out;
    }
    const char *a = NULL;
    for (int i = 0; full[i]; i++)
      if (!strncmp(full[i], "-arch=", 6))
        a = full[i] + 6;
    if (cache_get(cache_dir, key, c) == 0 && a && strlen(a) < sizeof c->arch) {
      strcpy(c->arch, a);
      memcpy(c->key, key, sizeof c->key);
      snprintf(c->compiler, sizeof c->compiler, "ptxas %s", ag_jit_compiler_version());
      c->options = full;
      full = NULL;
      c->from_cache = 1;
      if ((rc = ag_jit_parse_info(c->info_log, &c->funcs, &c->nfuncs))) {
        ag_cubin_free(c);
        goto out;
      }
      *out = c;
      goto out;
    }
    ag_cubin_free(c);
  }
  ag_cubin *c = NULL;
  if ((rc = ag_jit_compile_ex(ptx, len, name, arch, opts, diags, &c)))
    goto out;
  memcpy(c->key, key, sizeof c->key);
  int wrc = cache_dir ? cache_put(cache_dir, c) : 0;
  if (wrc)
    ag_diags_add(diags, AG_SEV_WARNING, cache_dir, 0, 0, NULL, 0,
                 "cannot write the cubin cache: %s", ag_strerror(wrc));
  *out = c;
out:
  ag_jit_options_free(full);
  return rc;
}
