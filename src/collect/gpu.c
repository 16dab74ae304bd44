/*
 * gpu.c — does this machine have a GPU argus can run work on? Opens the
 * driver with dlopen (argus never links libcuda, so it runs on machines
 * without one), calls cuInit and counts devices. Called once per command
 * that needs a GPU, before anything is built for the run.
 */
#include "argus/collect.h"

#include <cuda.h>
#include <dlfcn.h>

int ag_collect_gpu_count(ag_str *why) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    if (why)
      ag_str_printf(why, "no CUDA driver on this machine (libcuda.so.1: %s)", dlerror());
    return AG_ENODEV;
  }
  int rc = AG_ENODEV;
  CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(lib, "cuInit");
  CUresult (*count)(int *) = (CUresult(*)(int *))dlsym(lib, "cuDeviceGetCount");
  CUresult (*ename)(CUresult, const char **) =
      (CUresult(*)(CUresult, const char **))dlsym(lib, "cuGetErrorName");
  int n = 0;
  if (!init || !count) {
    if (why)
      ag_str_puts(why, "the CUDA driver lacks cuInit/cuDeviceGetCount");
    goto out;
  }
  CUresult r = init(0);
  if (r != CUDA_SUCCESS) {
    const char *nm = NULL;
    if (ename)
      ename(r, &nm);
    if (why)
      ag_str_printf(why, "the CUDA driver found no usable GPU (cuInit: %s)",
                    nm ? nm : "error");
    goto out;
  }
  if (count(&n) != CUDA_SUCCESS || n == 0) {
    if (why)
      ag_str_puts(why, "the CUDA driver sees no GPU");
    goto out;
  }
  rc = n;
out:
  dlclose(lib);
  return rc;
}

int ag_collect_gpu_probe(ag_str *why) {
  int n = ag_collect_gpu_count(why);
  return n > 0 ? 0 : n;
}
