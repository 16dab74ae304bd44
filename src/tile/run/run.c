/*
 * run.c — one call from a .tile file to a finished run (docs/run.md):
 * parse, split the sizes, lower (unchecked: the caller checks when it
 * wants to), bind, compile with NVRTC, run. For tests and benchmarks; the
 * CLI goes step by step so it can check and print between the steps.
 */
#include "argus/tile_run.h"

#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int ag_tile_run_file(const char *path, const char *spec, const ag_tile_exec_opts *o,
                     ag_diags *dout, ag_tile_exec_result *r, double *build_s, int *cached) {
  ag_diags own, *d = dout ? dout : &own;
  if (!dout)
    ag_diags_init(&own);
  ag_tile_program *p = NULL;
  ag_tile_lowered *low = NULL;
  ag_tile_run_sizes s;
  ag_tile_bound b;
  ag_str ptx = AG_STR_INIT;
  memset(&s, 0, sizeof s);
  memset(&b, 0, sizeof b);
  memset(r, 0, sizeof *r);
  r->compared_param = -1;
  double t0 = now_s();
  int rc = ag_tile_parse_file(path, d, &p);
  if (!rc)
    rc = ag_tile_run_sizes_parse(p, NULL, spec, d, &s);
  if (!rc) {
    ag_tile_lower_opts lo;
    memset(&lo, 0, sizeof lo);
    lo.defines = (const char *const *)s.defines;
    lo.ndefines = s.ndefines;
    rc = ag_tile_lower(p, &lo, d, &low);
  }
  if (!rc)
    rc = ag_tile_run_bind(p, &low->kernels[0], &s, d, &b);
  if (!rc)
    rc = ag_tile_nvrtc_ptx(low->cuda, low->len, "sm_90a", d, &ptx, cached);
  if (build_s)
    *build_s = now_s() - t0;
  if (!rc && o) {
    ag_tile_exec_opts eo = *o; /* the value reference runs this program */
    eo.prog = p;
    eo.defines = (const char *const *)s.defines;
    eo.ndefines = s.ndefines;
    rc = ag_tile_run_exec(&b, ag_str_cstr(&ptx), &eo, r);
  }
  if (rc && !dout) { /* the diagnostics, or the device's words, in r->err */
    ag_str m = AG_STR_INIT;
    ag_diags_format(d, &m);
    if (m.len)
      snprintf(r->err, sizeof r->err, "%s", ag_str_cstr(&m));
    ag_str_release(&m);
  }
  if (!dout)
    ag_diags_release(&own);
  ag_tile_bound_release(&b);
  ag_str_release(&ptx);
  ag_tile_run_sizes_release(&s);
  ag_tile_lowered_free(low);
  ag_tile_program_free(p);
  return rc;
}
