/*
 * gpu_util.h — helpers shared by the GPU tests of reference tracing: skip
 * (exit 77) without a GPU, make a variant of a PTX file and compile it
 * through nvJitLink into files a harness can load, a scratch directory, and
 * a copy of evidence for $ARGUS_EVIDENCE_OUT.
 */
#ifndef ARGUS_TEST_GPU_UTIL_H
#define ARGUS_TEST_GPU_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "argus/collect.h"
#include "argus/variant.h"

static void gpu_or_skip(const char *test) {
  ag_str why = AG_STR_INIT;
  if (ag_collect_gpu_probe(&why)) {
    printf("%s: skipped: %s\n", test, ag_str_cstr(&why));
    exit(77);
  }
  ag_str_release(&why);
}

/* Copies the file `from` to $ARGUS_EVIDENCE_OUT/<name> when that is set
 * (scripts/gpu/run.sh brings it back, for tests/data/evidence). */
__attribute__((unused)) static void evidence_out(const char *from, const char *name) {
  const char *dir = getenv("ARGUS_EVIDENCE_OUT");
  char *data = NULL;
  size_t len = 0;
  if (!dir || !*dir || ag_file_read(from, &data, &len))
    return;
  char to[1200];
  snprintf(to, sizeof to, "%s/%s", dir, name);
  ag_file_write_atomic(to, data, len);
  ag_free(data);
}

/* A fresh directory under $TMPDIR (or /tmp); owned string. */
__attribute__((unused)) static char *scratch_dir(const char *tag) {
  const char *t = getenv("TMPDIR");
  char buf[512];
  snprintf(buf, sizeof buf, "%s/argus-%s-XXXXXX", t && *t ? t : "/tmp", tag);
  char *d = mkdtemp(buf);
  return d ? ag_strdup(d) : NULL;
}

/* Writes <dir>/<stem>.cubin (and .ptx, .probes.json) for the variant of the
 * PTX file; returns 0 or prints the diagnostics and returns an error. */
__attribute__((unused)) static int build_variant(const char *ptxpath, const char *dir, const char *stem,
                         ag_variant_kind kind, const char *const *regions, int nregions) {
  char *ptx = NULL;
  size_t len = 0;
  ag_diags d;
  ag_diags_init(&d);
  ag_variant *v = NULL;
  ag_cubin *c = NULL;
  ag_variant_opts o = {kind, regions, nregions, 0};
  int rc = ag_file_read(ptxpath, &ptx, &len);
  if (rc) {
    fprintf(stderr, "cannot read %s: %s\n", ptxpath, ag_strerror(rc));
    return rc;
  }
  if ((rc = ag_variant_make(ptx, len, ptxpath, &o, &d, &v)) ||
      (rc = ag_jit_compile(v->ptx, v->len, stem, NULL, &d, &c))) {
    ag_str s = AG_STR_INIT;
    ag_diags_format(&d, &s);
    fprintf(stderr, "cannot build %s: %s\n%s", stem, ag_strerror(rc), ag_str_cstr(&s));
    ag_str_release(&s);
  } else {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.cubin", dir, stem);
    rc = ag_file_write_atomic(path, c->data, c->len);
    snprintf(path, sizeof path, "%s/%s.ptx", dir, stem);
    if (!rc)
      rc = ag_file_write_atomic(path, v->ptx, v->len);
    char *js = json_dumps(v->probes, JSON_COMPACT);
    snprintf(path, sizeof path, "%s/%s.probes.json", dir, stem);
    if (!rc)
      rc = js ? ag_file_write_atomic(path, js, strlen(js)) : AG_ENOMEM;
    free(js);
  }
  ag_cubin_free(c);
  ag_variant_free(v);
  ag_free(ptx);
  ag_diags_release(&d);
  return rc;
}

/* The spin kernels' traced and trace-free builds in dir (spin.traced.*,
 * spin.free.*), from the build's spin.ptx; the harness path in harness. */
__attribute__((unused)) static int build_spin_variants(const char *dir, char *harness,
                                                       size_t hlen) {
  const char *bd = getenv("ARGUS_BUILD_DIR");
  char ptx[1024];
  snprintf(ptx, sizeof ptx, "%s/tests/trace/spin.ptx", bd ? bd : "build");
  snprintf(harness, hlen, "%s/tests/trace/spin_harness", bd ? bd : "build");
  int rc = build_variant(ptx, dir, "spin.traced", AG_VARIANT_TRACED, NULL, 0);
  return rc ? rc : build_variant(ptx, dir, "spin.free", AG_VARIANT_TRACE_FREE, NULL, 0);
}

#endif
