/*
 * sass_util.h — helpers of the SASS / mapping / attribution tests: PTX
 * from CUDA (nvcc -ptx, as Argus compiles a spec's source), cubins from PTX
 * (ptxas, with or without -lineinfo), the code sections of a cubin, a
 * program's mapping variant with its -lineinfo cubin, the values of an
 * attributed signal.
 */
#ifndef ARGUS_TEST_SASS_UTIL_H
#define ARGUS_TEST_SASS_UTIL_H

#include "argus/attrib.h"
#include "argus/sass.h"
#include "argus/variant.h"
#include "../ptx/corpus.h"

#include <stdio.h>
#include <unistd.h>

/* Exits 77 (skipped) without nvcc and ptxas. */
static inline void su_need_tools(void) {
  char *a = cuda_tool("ptxas"), *b = cuda_tool("nvcc");
  int ok = a && b;
  ag_free(a);
  ag_free(b);
  if (!ok) {
    printf("nvcc/ptxas not found: skipped\n");
    exit(77);
  }
}

/* nvcc -ptx -arch=sm_90a -DARGUS_MARKERS=1 [extra] of a source under the
 * repository into *ptx (owned); 0 on success */
static inline int su_cuda_ptx_with(const char *rel_src, const char *extra, char **ptx,
                                   size_t *len) {
  char *nvcc = cuda_tool("nvcc");
  if (!nvcc)
    return -1;
  char src[4096], inc[4096], out[] = "/tmp/argus-su-XXXXXX.ptx";
  snprintf(src, sizeof src, "%s/%s", getenv("ARGUS_SOURCE_DIR"), rel_src);
  snprintf(inc, sizeof inc, "-I%s/include", getenv("ARGUS_SOURCE_DIR"));
  int fd = mkstemps(out, 4);
  if (fd < 0)
    return -1;
  close(fd);
  const char *argv[] = {nvcc, "-ptx", "-arch=sm_90a", "-DARGUS_MARKERS=1", inc, "-o", out, src,
                        extra, NULL};
  ag_str err = AG_STR_INIT;
  int rc = run_capture(argv, NULL, &err, NULL) == 0 ? ag_file_read(out, ptx, len) : -1;
  if (rc)
    fprintf(stderr, "nvcc failed: %s\n", ag_str_cstr(&err));
  ag_str_release(&err);
  unlink(out);
  ag_free(nvcc);
  return rc;
}

static inline int su_cuda_ptx(const char *rel_src, char **ptx, size_t *len) {
  return su_cuda_ptx_with(rel_src, NULL, ptx, len);
}

/* ptxas -arch=<arch> [-lineinfo] of PTX text into a cubin image (owned);
 * 0 on success, the log in err */
static inline int su_ptxas(const char *arch, int lineinfo, const char *text, size_t len,
                           char **cubin, size_t *clen, ag_str *err) {
  char *as = cuda_tool("ptxas");
  if (!as)
    return -1;
  char in[] = "/tmp/argus-su-XXXXXX.ptx", out[] = "/tmp/argus-su-XXXXXX.cubin";
  int fd = mkstemps(in, 4), fd2 = mkstemps(out, 6);
  if (fd < 0 || fd2 < 0)
    return -1;
  close(fd2);
  int ok = write(fd, text, len) == (ssize_t)len;
  close(fd);
  char a[64];
  snprintf(a, sizeof a, "-arch=%s", arch);
  const char *argv[] = {as, a, "-o", out, in, lineinfo ? "-lineinfo" : NULL, NULL};
  int rc = ok && run_capture(argv, NULL, err, NULL) == 0 ? ag_file_read(out, cubin, clen) : -1;
  unlink(in);
  unlink(out);
  ag_free(as);
  return rc;
}

/* The .target of PTX text ("sm_90a"), default sm_90a. */
static inline void su_target(const char *ptx, char *arch, size_t n) {
  const char *t = strstr(ptx, ".target");
  snprintf(arch, n, "sm_90a");
  if (!t)
    return;
  t += 7;
  while (*t == ' ' || *t == '\t')
    t++;
  size_t k = 0;
  while (k + 1 < n && t[k] && (t[k] == '_' || (t[k] >= 'a' && t[k] <= 'z') ||
                               (t[k] >= '0' && t[k] <= '9')))
    k++;
  if (k) {
    memcpy(arch, t, k);
    arch[k] = 0;
  }
}

/* occurrences of needle in hay */
static inline size_t su_count(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
    n++;
  return n;
}

/* the index of region q (qualified name) in a mapping layout, or -1 */
static inline int su_region_index(const ag_attr_layout *L, const char *q) {
  for (int i = 0; i < L->nregions; i++)
    if (!strcmp(L->regions[i], q))
      return i;
  return -1;
}

/* the value entry {region, stat} of an attributed signal's "values" (borrowed), or NULL */
static inline json_t *su_value(json_t *o, const char *region, const char *stat) {
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(o, "values"), i, v) {
    const char *r = json_string_value(json_object_get(v, "region"));
    const char *s = json_string_value(json_object_get(v, "stat"));
    if (r && s && !strcmp(r, region) && !strcmp(s, stat))
      return v;
  }
  return NULL;
}

/* A program's mapping: its PTX, mapping variant and layout, and the
 * ptxas -lineinfo cubin of the same PTX (all owned). */
typedef struct su_mapped {
  char *ptx;
  size_t len;
  ag_variant *v;
  ag_attr_layout *L;
  char *bin;
  size_t blen;
  ag_sass_cubin *cub;
} su_mapped;

static inline void su_mapped_free(su_mapped *m) {
  ag_sass_cubin_free(m->cub);
  ag_free(m->bin);
  ag_attr_layout_free(m->L);
  ag_variant_free(m->v);
  ag_free(m->ptx);
  memset(m, 0, sizeof *m);
}

/* Makes m from PTX text (taken: m owns it from here on, also on failure);
 * 0 on success, else -1 with the diagnostics in d and ptxas's log in err. */
static inline int su_mapped_make(char *ptx, size_t len, const char *name, ag_diags *d,
                                 su_mapped *m, ag_str *err) {
  memset(m, 0, sizeof *m);
  m->ptx = ptx;
  m->len = len;
  ag_variant_opts o = {AG_VARIANT_MAPPING, NULL, 0, 0};
  if (ag_variant_make(ptx, len, name, &o, d, &m->v) ||
      ag_attr_layout_from_json(m->v->probes, d, &m->L) ||
      su_ptxas("sm_90a", 1, ptx, len, &m->bin, &m->blen, err) ||
      ag_sass_cubin_parse(m->bin, m->blen, name, d, &m->cub))
    return -1;
  return 0;
}

#endif
