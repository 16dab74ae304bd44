/*
 * trace_util.h — small helpers shared by the reference-tracing tests: print
 * diagnostics, load an evidence file (printing why it failed), read a PTX
 * file of the build's corpus, count a string's occurrences, remove a
 * scratch directory, compare statistics to a brute-force oracle (and check
 * that the comparison rejects deliberately wrong oracles).
 */
#ifndef ARGUS_TEST_TRACE_UTIL_H
#define ARGUS_TEST_TRACE_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <math.h>

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

/* The brute-force oracle's comparison of statistics: 1 when got equals want
 * field by field, the count and the order statistics (p50, p95, min, max)
 * exactly, the total within tol and the mean within tol / count (the mean
 * of a total off by tol). Prints the first field that differs when loud. */
__attribute__((unused)) static int tu_dstats_match(const ag_dstats *got, const ag_dstats *want,
                                                   double tol, int loud) {
  const char *bad = NULL;
  double g = 0, w = 0;
#define TU_FIELD(f, ok)                                                                            \
  if (!bad && !(ok)) {                                                                             \
    bad = #f;                                                                                      \
    g = (double)got->f;                                                                            \
    w = (double)want->f;                                                                           \
  }
  TU_FIELD(count, got->count == want->count)
  TU_FIELD(total, fabs(got->total - want->total) <= tol)
  TU_FIELD(mean, want->count && fabs(got->mean - want->mean) * (double)want->count <= tol)
  TU_FIELD(p50, got->p50 == want->p50)
  TU_FIELD(p95, got->p95 == want->p95)
  TU_FIELD(min, got->min == want->min)
  TU_FIELD(max, got->max == want->max)
#undef TU_FIELD
  if (bad && loud)
    fprintf(stderr, "statistics differ from the oracle in %s: %.17g vs %.17g\n", bad, g, w);
  return bad == NULL;
}

/* The deliberately wrong oracles: want with one field moved by the least
 * the statistics resolve (one cycle in a total, an order statistic or the
 * count; a total one cycle larger in the mean). Returns how many of them
 * tu_dstats_match accepts against got: 0 unless the comparison has lost a
 * field or its tolerance has grown to a cycle (tol must be under 1). */
__attribute__((unused)) static int tu_dstats_wrong_accepted(const ag_dstats *got,
                                                            const ag_dstats *want, double tol) {
  int accepted = 0;
  for (int f = 0; f < 7; f++) {
    ag_dstats w = *want;
    switch (f) {
    case 0: w.count++; break;
    case 1: w.total += 1; break;
    case 2: w.mean += 1.0 / (double)(w.count ? w.count : 1); break;
    case 3: w.p50 += 1; break;
    case 4: w.p95 += 1; break;
    case 5: w.min -= 1; break;
    case 6: w.max += 1; break;
    }
    if (tu_dstats_match(got, &w, tol, 0)) {
      fprintf(stderr, "a wrong oracle (field %d moved by one) was accepted\n", f);
      accepted++;
    }
  }
  return accepted;
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
