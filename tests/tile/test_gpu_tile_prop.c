/*
 * test_gpu_tile_prop.c — the property test on the GPU (label gpu; 77 without
 * one): random small tile programs from tile_gen.h (element-wise arithmetic,
 * loops, ifs, shared-memory staging, barriers; the CPU side, test_tile_prop,
 * shows that the same seeds check) are lowered, compiled with NVRTC and run
 * through argus run's launch path, and every tensor must equal what the
 * value reference computes from the same inputs (ag_tile_run_exec with
 * AG_TILE_REF_INTERP, argus run's tolerances). A failing seed prints its
 * program. Seeds: ARGUS_PROP_SEEDS=FIRST:COUNT (default 1:60), printed.
 */
#include "argus/tile_run.h"
#include "check.h"

#include <dlfcn.h>
#include <stdlib.h>

#include "tile_gen.h"

static int have_gpu(void) {
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
  int (*init)(unsigned) = cuda ? (int (*)(unsigned))dlsym(cuda, "cuInit") : NULL;
  int (*count)(int *) = cuda ? (int (*)(int *))dlsym(cuda, "cuDeviceGetCount") : NULL;
  int n = 0;
  return init && count && !init(0) && !count(&n) && n > 0;
}

TEST(test_kernel_equals_value_reference) {
  if (!have_gpu())
    SKIP("no GPU");
  uint64_t first = 1;
  int count = 60;
  const char *e = getenv("ARGUS_PROP_SEEDS");
  unsigned long long f;
  int c;
  if (e && sscanf(e, "%llu:%d", &f, &c) == 2) {
    first = f;
    count = c;
  }
  printf("  seeds %llu..%llu (ARGUS_PROP_SEEDS=%llu:%d)\n", (unsigned long long)first,
         (unsigned long long)(first + (uint64_t)count - 1), (unsigned long long)first, count);
  const char *bd = getenv("ARGUS_BUILD_DIR");
  char path[1024];
  snprintf(path, sizeof path, "%s/prop_gpu.tile", bd ? bd : ".");
  int ok = 0;
  uint64_t elems = 0;
  double worst = 0;
  for (int i = 0; i < count; i++) {
    uint64_t sd = first + (uint64_t)i;
    ag_str text = AG_STR_INIT;
    int threads;
    tile_gen(sd, &text, &threads);
    CHECK_EQ_INT(ag_file_write_atomic(path, text.p, text.len), 0);
    ag_tile_exec_opts o;
    memset(&o, 0, sizeof o);
    o.ref = AG_TILE_REF_INTERP;
    o.seed = sd;
    o.timeout_s = 20;
    ag_tile_exec_result r;
    int rc = ag_tile_run_file(path, "N=256", &o, NULL, &r, NULL, NULL);
    int bad = rc || r.nbad || !r.ref_used || strcmp(r.ref_used, "interp");
    if (bad) {
      fprintf(stderr, "seed %llu: %s; %llu of %llu elements differ", (unsigned long long)sd,
              rc ? r.err : "ran", (unsigned long long)r.nbad, (unsigned long long)r.nelems);
      if (r.nbad && r.compared_param >= 0)
        fprintf(stderr, " (first: param %d [%llu]: kernel %.9g, value reference %.9g)",
                r.compared_param, (unsigned long long)r.first_bad[0], r.got, r.want);
      fprintf(stderr, "\n%s", ag_str_cstr(&text));
    } else {
      ok++;
      elems += r.nelems;
      worst = r.max_err > worst ? r.max_err : worst;
    }
    CHECK(!bad);
    ag_tile_exec_result_release(&r);
    ag_str_release(&text);
  }
  printf("  %d of %d programs: the kernel equals the value reference (%llu elements, largest "
         "difference %.3g)\n",
         ok, count, (unsigned long long)elems, worst);
}

RUN_TESTS(T(test_kernel_equals_value_reference))
