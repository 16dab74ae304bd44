/*
 * tilespec.c — a program spec that names a tile program ({"tile": FILE,
 * "kernel": NAME, "size": {...}}, docs/harness.md): the tile program becomes
 * the spec's module and `argus run` its harness.
 *
 * At load (ag_spec_load calls the builder argus registers): parse, split the
 * sizes, lower, bind (a missing size or one that violates an `assume` is
 * refused here, at the .tile line), check unless "unchecked" (a program
 * whose assertions do not all hold is refused, naming the first), compile
 * through NVRTC (its cache) and write the PTX to a file: the spec's "ptx".
 * The harness is `argus run FILE --kernel K --size ... --unchecked` (the
 * spec was checked here): the launch path of `argus run` (seeded inputs,
 * the decorators' grid and block, libargus_host, whose ag_host_load_image
 * loads the variant a Collect task names in place of the lowered PTX). So
 * `argus observe` measures the regions the lowering emitted, with no
 * second launcher. One load per command; the checker's time at the sizes
 * given dominates (a toy size: a fraction of a second).
 */
#include "argus/spec.h"
#include "argus/tile_check.h"
#include "argus/tile_run.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Refuses a program whose assertions do not all hold, naming the first. */
static int check_program(const ag_spec *s, const ag_tile_program *p, const ag_tile_run_sizes *sz,
                         ag_diags *d) {
  ag_tile_check_opts co;
  memset(&co, 0, sizeof co);
  co.defines = (const char *const *)sz->defines;
  co.ndefines = sz->ndefines;
  ag_tile_report *r = NULL;
  int rc = ag_tile_check(p, &co, d, &r);
  if (!rc && !ag_tile_report_ok(r)) {
    for (int i = 0; i < r->nasserts; i++) {
      const ag_tile_assert_result *a = &r->asserts[i];
      if (a->status == AG_TILE_PROVED)
        continue;
      ag_diags_add(d, AG_SEV_ERROR, s->path, 0, 0, NULL, 0,
                   "'%s' does not check: %s:%d: '%s' is %s (see argus check; \"unchecked\": "
                   "true in the spec runs it anyway)",
                   s->tile, s->tile, a->line, a->text,
                   a->status == AG_TILE_VIOLATED  ? "violated"
                   : a->status == AG_TILE_UNKNOWN ? "not proved (unknown)"
                                                  : "never reached");
      break;
    }
    rc = AG_EVIOLATION;
  }
  ag_tile_report_free(r);
  return rc;
}

/* Writes the PTX where the spec's "ptx" names it: <cache>/tile/<sha256>.ptx
 * (content-addressed, stable across loads), or a temporary file the spec
 * removes when the cache is off. */
static int write_ptx(ag_spec *s, const ag_str *ptx, ag_diags *d) {
  char key[65];
  if (ag_sha256_hex(ptx->p, ptx->len, key))
    return AG_ENOMEM;
  char *dir = ag__tile_cache_dir("tile");
  int rc = 0;
  if (dir && ag_mkdir_p(dir, 0755) == 0) {
    ag_str p = AG_STR_INIT;
    ag_str_printf(&p, "%s/%s.ptx", dir, key);
    char *path = p.oom ? NULL : ag_str_detach(&p);
    ag_str_release(&p);
    ag_free(dir);
    if (!path)
      return AG_ENOMEM;
    if ((rc = ag_file_write_atomic(path, ptx->p, ptx->len)) == 0) {
      s->ptx = path;
      return 0;
    }
    ag_free(path); /* an unusable cache: a temporary file instead */
  } else {
    ag_free(dir);
  }
  const char *tmp = getenv("TMPDIR");
  ag_str t = AG_STR_INIT;
  ag_str_printf(&t, "%s/argus-tile-XXXXXX.ptx", tmp && *tmp ? tmp : "/tmp");
  if (t.oom) {
    ag_str_release(&t);
    return AG_ENOMEM;
  }
  char *path = ag_str_detach(&t);
  int fd = path ? mkstemps(path, 4) : -1;
  if (fd < 0 || write(fd, ptx->p, ptx->len) != (ssize_t)ptx->len) {
    ag_diags_add(d, AG_SEV_ERROR, s->path, 0, 0, NULL, 0,
                 "cannot write the lowered PTX of '%s' to '%s'", s->tile, path ? path : "?");
    if (fd >= 0) {
      close(fd);
      unlink(path);
    }
    ag_free(path);
    return path ? AG_EIO : AG_ENOMEM;
  }
  close(fd);
  s->ptx = path;
  s->ptx_is_temp = 1;
  return 0;
}

/* The argus executable that runs a tile spec (`argus run`): the one given,
 * else $ARGUS_BIN, else an installed bin/argus beside libargus, else the
 * build tree's, else PATH's (the order of the worker's lookup). Owned. */
static char *argus_cli(const char *given) {
  const char *e = given && *given ? given : getenv("ARGUS_BIN");
  if (e && *e)
    return ag_strdup(e);
  char *inst = ag_install_path("bin/argus");
  if (inst && access(inst, X_OK) == 0)
    return inst;
  ag_free(inst);
#ifdef ARGUS_CLI_PATH
  if (access(ARGUS_CLI_PATH, X_OK) == 0)
    return ag_strdup(ARGUS_CLI_PATH);
#endif
  return ag_strdup("argus");
}

int ag_tile_spec_build(ag_spec *s, void *argus_exe, ag_diags *d) {
  ag_tile_program *p = NULL;
  ag_tile_lowered *low = NULL;
  ag_tile_run_sizes sz;
  ag_tile_bound b;
  ag_str ptx = AG_STR_INIT;
  char *exe = NULL;
  memset(&sz, 0, sizeof sz);
  memset(&b, 0, sizeof b);
  int rc = ag_tile_parse_file(s->tile, d, &p);
  if (!rc)
    rc = ag_tile_run_sizes_parse(p, s->tile_kernel, s->tile_sizes, d, &sz);
  if (!rc) {
    ag_tile_lower_opts lo;
    memset(&lo, 0, sizeof lo);
    lo.kernel = s->tile_kernel;
    lo.defines = (const char *const *)sz.defines;
    lo.ndefines = sz.ndefines;
    rc = ag_tile_lower(p, &lo, d, &low);
  }
  if (!rc) /* sizes before the checker: a wrong size is refused at once */
    rc = ag_tile_run_bind(p, &low->kernels[0], &sz, d, &b);
  if (!rc && !s->tile_unchecked)
    rc = check_program(s, p, &sz, d);
  if (!rc)
    rc = ag_tile_nvrtc_ptx(low->cuda, low->len, "sm_90a", d, &ptx, NULL);
  if (!rc)
    rc = ptx.oom ? AG_ENOMEM : write_ptx(s, &ptx, d);
  if (rc)
    goto out;
  /* the harness: argus run, on what was checked here */
  exe = argus_cli(argus_exe);
  if (!exe) {
    rc = AG_ENOMEM;
    goto out;
  }
  const char *argv[] = {exe, "run", s->tile, "--kernel", low->kernels[0].name,
                        "--size", s->tile_sizes, "--unchecked", NULL};
  if (!s->tile_sizes || !*s->tile_sizes) { /* no sizes: no --size */
    argv[5] = "--unchecked";
    argv[6] = NULL;
  }
  int n = 0;
  while (argv[n])
    n++;
  if (!(s->run = ag_calloc((size_t)n + 1, sizeof *s->run))) {
    rc = AG_ENOMEM;
    goto out;
  }
  for (s->nrun = 0; s->nrun < n; s->nrun++)
    if (!(s->run[s->nrun] = ag_strdup(argv[s->nrun]))) {
      rc = AG_ENOMEM;
      goto out;
    }
out:
  ag_free(exe);
  ag_str_release(&ptx);
  ag_tile_bound_release(&b);
  ag_tile_run_sizes_release(&sz);
  ag_tile_lowered_free(low);
  ag_tile_program_free(p);
  return rc;
}
