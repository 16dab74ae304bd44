/*
 * test_gpu_tile_observe.c — `argus observe` on a tile program (label gpu; 77
 * without a GPU): a spec naming examples/tile/gemm.tile ({"tile": ...},
 * docs/harness.md) is lowered, run by argus run's launch path, and the
 * report has the durations of the regions the lowering emitted (prologue,
 * mainloop, epilogue; no marker written by hand), with the counts the
 * kernel's structure gives: K / BK = 4 main-loop iterations per epilogue.
 */
#include "argus/observe.h"
#include "argus/spec.h"
#include "argus/tile_run.h"
#include "check.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

static double val(json_t *rep, const char *region, const char *stat) {
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(rep, "values"), i, v) {
    const char *r = json_string_value(json_object_get(v, "region"));
    const char *s = json_string_value(json_object_get(v, "stat"));
    if (r && s && !strcmp(r, region) && !strcmp(s, stat))
      return json_number_value(json_object_get(v, "value"));
  }
  return -1;
}

static int have_gpu(void) {
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
  int (*init)(unsigned) = cuda ? (int (*)(unsigned))dlsym(cuda, "cuInit") : NULL;
  int (*count)(int *) = cuda ? (int (*)(int *))dlsym(cuda, "cuDeviceGetCount") : NULL;
  int n = 0;
  return init && count && !init(0) && !count(&n) && n > 0;
}

TEST(test_observe_gemm_tile) {
  if (!have_gpu())
    SKIP("no GPU");
  const char *src = getenv("ARGUS_SOURCE_DIR");
  ag_spec_set_tile_builder(ag_tile_spec_build, NULL); /* $ARGUS_BIN, else the build's */
  char ws[64], spec[128], text[1024];
  snprintf(ws, sizeof ws, "/tmp/argus-tileobs-XXXXXX");
  CHECK(mkdtemp(ws) != NULL);
  snprintf(spec, sizeof spec, "%s/spec.json", ws);
  snprintf(text, sizeof text,
           "{\"tile\": \"%s/examples/tile/gemm.tile\", \"kernel\": \"gemm\",\n"
           " \"size\": {\"M\": 256, \"N\": 128}}\n",
           src ? src : ".");
  CHECK_EQ_INT(ag_file_write_atomic(spec, text, strlen(text)), 0);
  char wsd[80];
  snprintf(wsd, sizeof wsd, "%s/ws", ws);
  const char *sigs[] = {"duration"};
  ag_observe_opts o = {.spec = spec, .workspace = wsd, .region = "gemm", .signals = sigs,
                       .nsignals = 1, .ndevices = -1, .timeout_s = 120};
  ag_diags d;
  ag_diags_init(&d);
  ag_observe_result r;
  memset(&r, 0, sizeof r);
  int rc = ag_observe(&o, &d, &r);
  if (rc) {
    ag_str s = AG_STR_INIT;
    ag_diags_format(&d, &s);
    fprintf(stderr, "%s", ag_str_cstr(&s));
    ag_str_release(&s);
  }
  CHECK_EQ_INT(rc, 0);
  if (!rc) {
    static const char *const regs[] = {"gemm/prologue", "gemm/mainloop", "gemm/epilogue",
                                       "gemm/prologue/loop_i_42", "gemm/epilogue/loop_mi_102"};
    for (int i = 0; i < 5; i++) {
      double n = val(r.report, regs[i], "count"), mean = val(r.report, regs[i], "mean");
      printf("  %-28s count %6.0f  mean %10.1f ns  total %12.1f ns\n", regs[i], n, mean,
             val(r.report, regs[i], "total"));
      CHECK(n > 0);
      CHECK(mean > 0);
    }
    double pro = val(r.report, "gemm/prologue", "count"),
           ml = val(r.report, "gemm/mainloop", "count"),
           epi = val(r.report, "gemm/epilogue", "count");
    CHECK(pro == epi);
    CHECK(ml == 4 * epi); /* K / BK iterations of the main loop per block */
    CHECK(val(r.report, "gemm/nope", "count") < 0);
  }
  ag_observe_result_release(&r);
  ag_diags_release(&d);
}

RUN_TESTS(T(test_observe_gemm_tile))
