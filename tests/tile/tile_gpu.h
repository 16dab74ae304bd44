/*
 * tile_gpu.h — one GPU case of a tile example (argus run, docs/run.md): the
 * file under examples/tile run at a size spec against a reference, every
 * element compared; 77 (skipped) without a GPU. Include after check.h and
 * ../trace/gpu_util.h.
 */
#ifndef ARGUS_TEST_TILE_GPU_H
#define ARGUS_TEST_TILE_GPU_H

#include "argus/tile_run.h"

static void tile_gpu_case(const char *test, const char *file, const char *spec, ag_tile_ref ref,
                          const char *want_ref) {
  gpu_or_skip(test);
  char path[1024];
  const char *s = getenv("ARGUS_SOURCE_DIR");
  snprintf(path, sizeof path, "%s/examples/tile/%s", s ? s : ".", file);
  ag_tile_exec_opts o;
  memset(&o, 0, sizeof o);
  o.ref = ref;
  ag_tile_exec_result r;
  int rc = ag_tile_run_file(path, spec, &o, NULL, &r, NULL, NULL);
  if (rc)
    printf("  %s: %s: %s\n", spec, ag_strerror(rc), r.err);
  CHECK_EQ_INT(rc, 0);
  CHECK(r.ref_used && !strcmp(r.ref_used, want_ref));
  CHECK(r.nelems > 0);
  CHECK_EQ_U64(r.nbad, 0);
  printf("  %s %s vs %s: %llu elements, %llu differ, max error %.3g\n", file, spec, want_ref,
         (unsigned long long)r.nelems, (unsigned long long)r.nbad, r.max_err);
}

#endif
