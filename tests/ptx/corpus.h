/*
 * corpus.h — the PTX corpus the golden tests iterate over: the PTX built
 * from the examples by the installed nvcc ($ARGUS_BUILD_DIR/tests/data/ptx),
 * the hand-written inputs and the Triton PTX recorded on the GPU machine
 * (tests/data/ptx/{hand,triton}). New files there are picked up as they land.
 */
#ifndef ARGUS_TEST_CORPUS_H
#define ARGUS_TEST_CORPUS_H

#include "argus/core.h"

#include <dirent.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

typedef AG_VEC(char *) corpus_list;

static inline void corpus_add_dir(corpus_list *l, const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n > 4 && !strcmp(e->d_name + n - 4, ".ptx")) {
      size_t len = strlen(dir) + n + 2;
      char *p = ag_malloc(len);
      snprintf(p, len, "%s/%s", dir, e->d_name);
      ag_vec_push(l, p);
    }
  }
  closedir(d);
}

static inline int corpus_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Fills l; returns the number of files built by nvcc (0 without nvcc). */
static inline int corpus_collect(corpus_list *l) {
  const char *src = getenv("ARGUS_SOURCE_DIR"), *bld = getenv("ARGUS_BUILD_DIR");
  char buf[4096];
  int built = 0;
  if (bld) {
    snprintf(buf, sizeof buf, "%s/tests/data/ptx", bld);
    corpus_add_dir(l, buf);
    built = (int)l->n;
  }
  if (src) {
    snprintf(buf, sizeof buf, "%s/tests/data/ptx/hand", src);
    corpus_add_dir(l, buf);
    snprintf(buf, sizeof buf, "%s/tests/data/ptx/triton", src);
    corpus_add_dir(l, buf);
  }
  qsort(l->v, l->n, sizeof *l->v, corpus_cmp);
  return built;
}

static inline void corpus_free(corpus_list *l) {
  for (size_t i = 0; i < l->n; i++)
    ag_free(l->v[i]);
  ag_vec_free(l);
}

static inline char *corpus_path(const char *rel_src_or_build, int build) {
  const char *base = getenv(build ? "ARGUS_BUILD_DIR" : "ARGUS_SOURCE_DIR");
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s/%s", base ? base : ".", rel_src_or_build);
  return buf;
}

#endif
