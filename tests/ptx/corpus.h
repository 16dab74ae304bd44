/*
 * corpus.h — helpers of the PTX tests: running a program, and the PTX
 * corpus the golden tests iterate over: the PTX built
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

/* Runs argv (no shell); captures stdout/stderr when given. Returns the
 * exit code, or -1 when it could not run or did not exit normally. */
static inline int run_capture(const char *const *argv, ag_str *out, ag_str *err,
                              const char *stdout_path) {
  ag_proc_opts o;
  memset(&o, 0, sizeof o);
  o.argv = argv;
  o.capture_out = out;
  o.capture_err = err;
  o.stdout_path = stdout_path;
  o.timeout_s = 300;
  ag_proc_result r;
  if (ag_proc_run(&o, &r) || !r.exited)
    return -1;
  return r.exit_code;
}

/* A CUDA tool from PATH or /usr/local/cuda/bin; owned, or NULL. */
static inline char *cuda_tool(const char *name) {
  char *p = ag_which(name);
  char buf[256];
  snprintf(buf, sizeof buf, "/usr/local/cuda/bin/%s", name);
  if (!p && access(buf, X_OK) == 0)
    p = ag_strdup(buf);
  return p;
}

/* The one lazily collected corpus of a test program. */
static corpus_list the_corpus_list;
static inline corpus_list *the_corpus(void) {
  static int done;
  if (!done) {
    corpus_collect(&the_corpus_list);
    done = 1;
  }
  return &the_corpus_list;
}

#endif
