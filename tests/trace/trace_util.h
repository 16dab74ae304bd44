/*
 * trace_util.h — small helpers shared by the reference-tracing tests: print
 * diagnostics, load an evidence file (printing why it failed), read a PTX
 * file of the build's corpus, remove a scratch directory.
 */
#ifndef ARGUS_TEST_TRACE_UTIL_H
#define ARGUS_TEST_TRACE_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argus/core.h"
#include "argus/synth.h"

__attribute__((unused)) static void tu_print_diags(const ag_diags *d) {
  ag_str s = AG_STR_INIT;
  ag_diags_format(d, &s);
  fputs(ag_str_cstr(&s), stderr);
  ag_str_release(&s);
}

/* The evidence at path, or NULL after printing the diagnostics. */
__attribute__((unused)) static ag_evidence *tu_load_evidence(const char *path) {
  ag_diags d;
  ag_diags_init(&d);
  ag_evidence *ev = NULL;
  if (ag_evidence_load(path, &d, &ev))
    tu_print_diags(&d);
  ag_diags_release(&d);
  return ev;
}

/* A file of $ARGUS_BUILD_DIR (or ./build), NUL-terminated; NULL if unreadable. */
__attribute__((unused)) static char *tu_read_build_file(const char *rel, size_t *len) {
  const char *bd = getenv("ARGUS_BUILD_DIR");
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", bd ? bd : "build", rel);
  char *t = NULL;
  size_t n = 0;
  if (ag_file_read(p, &t, &n)) {
    fprintf(stderr, "cannot read %s\n", p);
    return NULL;
  }
  if (len)
    *len = n;
  return t;
}

__attribute__((unused)) static void tu_rm_rf(const char *dir) {
  const char *argv[] = {"rm", "-rf", dir, NULL};
  ag_proc_opts o;
  memset(&o, 0, sizeof o);
  o.argv = argv;
  ag_proc_result r;
  ag_proc_run(&o, &r);
}

#endif
