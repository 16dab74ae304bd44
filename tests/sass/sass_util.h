/*
 * sass_util.h — helpers of the SASS / mapping / attribution tests: PTX
 * from CUDA (nvcc -ptx, as Argus compiles a spec's source), cubins from PTX
 * (ptxas, with or without -lineinfo), the code sections of a cubin.
 */
#ifndef ARGUS_TEST_SASS_UTIL_H
#define ARGUS_TEST_SASS_UTIL_H

#include "argus/sass.h"
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

/* nvcc -ptx -arch=sm_90a -DARGUS_MARKERS=1 of a source under the repository
 * into *ptx (owned); 0 on success */
static inline int su_cuda_ptx(const char *rel_src, char **ptx, size_t *len) {
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
                        NULL};
  ag_str err = AG_STR_INIT;
  int rc = run_capture(argv, NULL, &err, NULL) == 0 ? ag_file_read(out, ptx, len) : -1;
  if (rc)
    fprintf(stderr, "nvcc failed: %s\n", ag_str_cstr(&err));
  ag_str_release(&err);
  unlink(out);
  ag_free(nvcc);
  return rc;
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

#endif
