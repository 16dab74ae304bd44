/* test_api_gpu.c — argus_observe through libargus.so on the GPU (label gpu;
 * exit 77 without one): the overhead example's durations and occurrences
 * read through the report handle (observed, ns, with provenance), then the
 * same query again, served from the workspace: the same values. */
#include "argus/argus.h"
#include "check.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A usable CUDA device, by the driver API (loaded at run time). */
static int have_gpu(void) {
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
  if (!cuda)
    return 0;
  int (*init)(unsigned) = (int (*)(unsigned))dlsym(cuda, "cuInit");
  int (*count)(int *) = (int (*)(int *))dlsym(cuda, "cuDeviceGetCount");
  int n = 0;
  return init && count && init(0) == 0 && count(&n) == 0 && n > 0;
}

static double value_of(const argus_report *r, const char *region, const char *signal,
                       const char *stat, argus_value *out) {
  for (size_t i = 0; i < argus_report_nvalues(r); i++)
    if (argus_report_value(r, i, out) == 0 && !strcmp(out->region, region) &&
        !strcmp(out->signal, signal) && !strcmp(out->stat, stat))
      return out->has_number ? out->number : -1;
  return -1;
}

TEST(test_observe_overhead) {
  if (!have_gpu()) {
    printf("no GPU: skipped\n");
    exit(77);
  }
  const char *src = getenv("ARGUS_SOURCE_DIR"), *bd = getenv("ARGUS_BUILD_DIR");
  char path[4096], spec[1024], ws_dir[64];
  snprintf(path, sizeof path, "%s/examples:%s", bd ? bd : "build", getenv("PATH"));
  setenv("PATH", path, 1);
  snprintf(spec, sizeof spec, "%s/examples/overhead/spec.json", src ? src : ".");
  snprintf(ws_dir, sizeof ws_dir, "/tmp/argus-apigpu-XXXXXX");
  CHECK(mkdtemp(ws_dir) != NULL);
  argus_ws *ws = NULL;
  CHECK_EQ_INT(argus_ws_open(ws_dir, ARGUS_WS_CREATE, &ws), 0);
  argus_report *r = NULL, *again = NULL;
  int rc = argus_observe(ws, spec, "overhead_compute/work", "duration,occurrences", NULL,
                         "{\"timeout_s\": 120}", &r);
  CHECK_EQ_INT(rc, 0);
  if (rc) {
    fprintf(stderr, "%s\n%s\n", argus_errmsg(), argus_errdiags());
    argus_ws_close(ws);
    return;
  }
  argus_value v;
  double total = value_of(r, "overhead_compute/work", "duration", "total", &v);
  CHECK(total > 0);
  CHECK_EQ_STR(v.unit, "ns");
  CHECK_EQ_STR(v.qual, "observed");
  CHECK_CONTAINS(v.provenance, "\"variant\": \"traced\"");
  CHECK(value_of(r, "overhead_compute/work/step", "occurrences", "count", &v) > 0);
  CHECK_EQ_INT(argus_observe(ws, spec, "overhead_compute/work", "duration,occurrences", NULL,
                             "{\"timeout_s\": 120}", &again),
               0);
  CHECK_EQ_INT(argus_report_nvalues(again), argus_report_nvalues(r));
  CHECK(value_of(again, "overhead_compute/work", "duration", "total", &v) == total);
  argus_report_free(again);
  argus_report_free(r);
  argus_ws_close(ws);
}

RUN_TESTS(T(test_observe_overhead))
