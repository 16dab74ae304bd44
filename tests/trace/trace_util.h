/*
 * trace_util.h — small helpers shared by the reference-tracing tests: print
 * diagnostics, load an evidence file (printing why it failed), read a PTX
 * file of the build's corpus, count a string's occurrences, remove a
 * scratch directory.
 */
#ifndef ARGUS_TEST_TRACE_UTIL_H
#define ARGUS_TEST_TRACE_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* How many times needle occurs in hay (overlaps counted). */
__attribute__((unused)) static size_t tu_count(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
    n++;
  return n;
}

__attribute__((unused)) static void tu_rm_rf(const char *dir) {
  const char *argv[] = {"rm", "-rf", dir, NULL};
  ag_proc_opts o;
  memset(&o, 0, sizeof o);
  o.argv = argv;
  ag_proc_result r;
  ag_proc_run(&o, &r);
}

/* Runs $ARGUS_BIN (or argus in PATH) with args (NULL-terminated) and
 * ARGUS_WORKSPACE=ws, capturing stdout and stderr; returns the exit status,
 * -1 when it did not exit. */
__attribute__((unused)) static int tu_argus(const char *const *args, const char *ws, ag_str *out,
                                            ag_str *err) {
  const char *bin = getenv("ARGUS_BIN");
  const char *argv[32];
  int n = 0;
  argv[n++] = bin ? bin : "argus";
  for (; *args && n < 31; args++)
    argv[n++] = *args;
  argv[n] = NULL;
  char wse[1100];
  snprintf(wse, sizeof wse, "ARGUS_WORKSPACE=%s", ws);
  const char *env[] = {wse, NULL};
  ag_proc_opts o;
  memset(&o, 0, sizeof o);
  o.argv = argv;
  o.env_add = env;
  o.capture_out = out;
  o.capture_err = err;
  o.timeout_s = 120;
  ag_proc_result r;
  if (ag_proc_run(&o, &r) || !r.exited)
    return -1;
  return r.exit_code;
}

/* Assembles PTX with ptxas for sm_90a (ptxas from PATH or /usr/local/cuda);
 * 0 when it assembles. Prints ptxas's messages unless tag is "broken" (a
 * variant that is meant to fail). */
__attribute__((unused)) static int tu_assemble(const char *ptx, size_t len, const char *tag) {
  static char *ptxas;
  if (!ptxas && !(ptxas = ag_which("ptxas")))
    ptxas = ag_strdup("/usr/local/cuda/bin/ptxas");
  char in[2600], out[2600];
  snprintf(in, sizeof in, "/tmp/argus-variant-%ld-%s.ptx", (long)getpid(), tag);
  snprintf(out, sizeof out, "/tmp/argus-variant-%ld-%s.cubin", (long)getpid(), tag);
  if (ag_file_write_atomic(in, ptx, len))
    return -1;
  const char *argv[] = {ptxas, "-arch=sm_90a", in, "-o", out, NULL};
  ag_str err = AG_STR_INIT;
  ag_proc_opts o;
  memset(&o, 0, sizeof o);
  o.argv = argv;
  o.capture_err = &err;
  o.timeout_s = 120;
  ag_proc_result r;
  int rc = ag_proc_run(&o, &r);
  int ok = rc == 0 && r.exited && r.exit_code == 0;
  if (!ok && strcmp(tag, "broken"))
    fprintf(stderr, "ptxas failed on %s:\n%s\n", tag, ag_str_cstr(&err));
  ag_str_release(&err);
  unlink(in);
  unlink(out);
  return ok ? 0 : 1;
}

#endif
