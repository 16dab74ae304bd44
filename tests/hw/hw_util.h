/*
 * hw_util.h — what the system-timeline, stalls, PM-sampling and hardware-counter
 * tests share: running tests/hw/hw_harness under a collection, reading a JSON
 * evidence file, the recorded evidence's path, printing diagnostics, the
 * options of a hardware-counter run through ag_trace_run, and opening the
 * host runtime with stand-ins (CPU tests), an NVTX range of the system
 * signal by name.
 */
#ifndef ARGUS_TEST_HW_UTIL_H
#define ARGUS_TEST_HW_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argus/core.h"

#ifndef HW_HARNESS
#define HW_HARNESS "hw_harness"
#endif

/* The harness on `module` with extra arguments `args` (NULL-terminated),
 * under ARGUS_COLLECT=mode (NULL: outside Argus) with ARGUS_VARIANT =
 * variant and the extra "K=V" entries of `more`, into dir. */
__attribute__((unused)) static int hw_run(const char *dir, const char *mode, const char *variant,
                                          const char *module, const char *const *args,
                                          const char *const *more, ag_str *out,
                                          ag_proc_result *res) {
  char envc[64], envout[1280], envvar[1280]; /* paths of up to 1200 bytes, and the name */
  snprintf(envc, sizeof envc, "ARGUS_COLLECT=%s", mode ? mode : "");
  snprintf(envout, sizeof envout, "ARGUS_OUT=%s", dir);
  snprintf(envvar, sizeof envvar, "ARGUS_VARIANT=%s", variant ? variant : "");
  const char *env[16] = {envc, envout, envvar, "ARGUS_VARIANT_ID=hw_truth"};
  int ne = 4;
  for (int i = 0; more && more[i] && ne < 15; i++)
    env[ne++] = more[i];
  env[ne] = NULL;
  const char *argv[32] = {HW_HARNESS, "--module", module};
  int n = 3;
  for (int i = 0; args && args[i] && n < 31; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  ag_proc_opts o = {.argv = argv, .env_add = mode ? env : NULL, .capture_out = out,
                    .timeout_s = 180};
  return ag_proc_run(&o, res);
}

__attribute__((unused)) static json_t *hw_load(const char *dir, const char *name) {
  char p[1200];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  json_error_t je;
  json_t *j = json_load_file(p, 0, &je);
  if (!j)
    fprintf(stderr, "cannot read %s: %s\n", p, je.text);
  return j;
}

/* A signal's entry for region `name` in its "regions" (borrowed), or NULL. */
__attribute__((unused)) static const json_t *hw_region(const json_t *sig, const char *name) {
  size_t i;
  json_t *r;
  json_array_foreach(json_object_get(sig, "regions"), i, r) if (
      !strcmp(json_string_value(json_object_get(r, "region")), name)) return r;
  return NULL;
}

/* o[k] as a number, NAN when it is not one. */
__attribute__((unused)) static double hw_num(const json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

#ifdef FAKE_CUDA
#include <stdlib.h>
#include <unistd.h>

#include "argus/host.h"

/* ag_host_open under ARGUS_COLLECT=mode with the stand-ins (the stand-in
 * driver FAKE_CUDA; CUPTI as ARGUS_LIBCUPTI says): its code, and the
 * reason in host-error.txt. */
__attribute__((unused)) static int host_open(const char *mode, char *why, size_t n) {
  char dir[] = "/tmp/argus-hwh-XXXXXX";
  if (!mkdtemp(dir))
    return -1;
  setenv("ARGUS_LIBCUDA", FAKE_CUDA, 1);
  setenv("ARGUS_COLLECT", mode, 1);
  setenv("ARGUS_OUT", dir, 1);
  setenv("ARGUS_VARIANT", "/nonexistent.cubin", 1);
  ag_host *h = NULL;
  int rc = ag_host_open(&h);
  ag_host_close(h);
  char p[1200], *txt = NULL;
  size_t len = 0;
  snprintf(p, sizeof p, "%s/host-error.txt", dir);
  why[0] = 0;
  if (!ag_file_read(p, &txt, &len))
    snprintf(why, n, "%s", txt);
  ag_free(txt);
  unlink(p);
  rmdir(dir);
  unsetenv("ARGUS_COLLECT");
  unsetenv("ARGUS_OUT");
  unsetenv("ARGUS_VARIANT");
  unsetenv("ARGUS_LIBCUDA");
  return rc;
}
#endif

/* tests/data/evidence/<name> (owned). */
__attribute__((unused)) static char *hw_data_path(const char *name) {
  const char *src = getenv("ARGUS_SOURCE_DIR");
  ag_str p = {0};
  ag_str_printf(&p, "%s/tests/data/evidence/%s", src ? src : ".", name);
  return ag_str_detach(&p);
}

/* The system signal's NVTX range named `name` (borrowed), or NULL. */
__attribute__((unused)) static json_t *hw_nvtx_range(json_t *sig, const char *name) {
  size_t i;
  json_t *o;
  json_array_foreach(json_object_get(json_object_get(sig, "nvtx"), "ranges"), i, o) {
    const char *n = json_string_value(json_object_get(o, "name"));
    if (n && !strcmp(n, name))
      return o;
  }
  return NULL;
}

__attribute__((unused)) static void hw_print_diags(ag_diags *d) {
  ag_str msg = {0};
  ag_diags_format(d, &msg);
  fprintf(stderr, "%s", msg.p ? msg.p : "");
  ag_str_release(&msg);
}

#ifdef ARGUS_COUNTERS_EV_H
/* The counters evidence at path decoded, or NULL (its diagnostics printed). */
__attribute__((unused)) static ag_ctr_ev *hw_ctr_load_path(const char *path) {
  ag_diags d;
  ag_diags_init(&d);
  ag_ctr_ev *e = NULL;
  if (ag_ctr_ev_load(path, &d, &e))
    hw_print_diags(&d);
  ag_diags_release(&d);
  return e;
}

/* <dir>/counters.json decoded, or NULL (its diagnostics printed). */
__attribute__((unused)) static ag_ctr_ev *hw_ctr_load(const char *dir) {
  char p[1200];
  snprintf(p, sizeof p, "%s/counters.json", dir);
  return hw_ctr_load_path(p);
}

/* tests/data/evidence/<name> decoded, or NULL (its diagnostics printed). */
__attribute__((unused)) static ag_ctr_ev *hw_ctr_data(const char *name) {
  char *p = hw_data_path(name);
  ag_ctr_ev *e = p ? hw_ctr_load_path(p) : NULL;
  ag_free(p);
  return e;
}
#endif

#ifdef ARGUS_COLLECT_H
/* A harness run under the hardware counters (argv: the harness), into dir. */
__attribute__((unused)) static void hw_ctr_opts(ag_trace_run_opts *o, const char *const *argv,
                                                const char *cubin, const char *dir) {
  memset(o, 0, sizeof *o);
  o->argv = argv;
  o->cubin_path = cubin;
  o->out_dir = dir;
  o->device = -1;
  o->timeout_s = 300;
  o->collect = "counters";
}
#endif

#endif
