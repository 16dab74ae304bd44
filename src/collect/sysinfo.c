/*
 * sysinfo.c — `argus doctor`'s facts. The CUDA driver, nvJitLink and CUPTI
 * are opened with dlopen so this file builds and runs on machines without
 * them; tools are asked for their versions through ag_proc_run. Called once
 * per doctor run; a few hundred milliseconds (nvcc --version dominates).
 */
#define _GNU_SOURCE
#include "argus/sysinfo.h"

#include <cuda.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef CUresult (*fn_cuInit)(unsigned);
typedef CUresult (*fn_cuDriverGetVersion)(int *);
typedef CUresult (*fn_cuDeviceGetCount)(int *);
typedef CUresult (*fn_cuDeviceGet)(CUdevice *, int);
typedef CUresult (*fn_cuDeviceGetName)(char *, int, CUdevice);
typedef CUresult (*fn_cuDeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
typedef CUresult (*fn_cuDeviceTotalMem)(size_t *, CUdevice);
typedef CUresult (*fn_cuGetErrorString)(CUresult, const char **);

static void *open_lib(const char *cuda_home, const char *const *names) {
  for (const char *const *n = names; *n; n++) {
    void *h = dlopen(*n, RTLD_NOW | RTLD_LOCAL);
    if (h)
      return h;
    if (cuda_home) {
      char path[4096];
      snprintf(path, sizeof path, "%s/lib64/%s", cuda_home, *n);
      if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
        return h;
    }
  }
  return NULL;
}

static json_t *driver_info(json_t *devices) {
  static const char *const names[] = {"libcuda.so.1", "libcuda.so", NULL};
  void *h = open_lib(NULL, names);
  if (!h)
    return json_pack("{s:b,s:s}", "available", 0, "error",
                     "libcuda.so.1 not found: no NVIDIA driver on this machine");
  fn_cuInit init = (fn_cuInit)dlsym(h, "cuInit");
  fn_cuDriverGetVersion ver = (fn_cuDriverGetVersion)dlsym(h, "cuDriverGetVersion");
  fn_cuDeviceGetCount count = (fn_cuDeviceGetCount)dlsym(h, "cuDeviceGetCount");
  fn_cuDeviceGet get = (fn_cuDeviceGet)dlsym(h, "cuDeviceGet");
  fn_cuDeviceGetName name = (fn_cuDeviceGetName)dlsym(h, "cuDeviceGetName");
  fn_cuDeviceGetAttribute attr = (fn_cuDeviceGetAttribute)dlsym(h, "cuDeviceGetAttribute");
  fn_cuDeviceTotalMem mem = (fn_cuDeviceTotalMem)dlsym(h, "cuDeviceTotalMem_v2");
  fn_cuGetErrorString errstr = (fn_cuGetErrorString)dlsym(h, "cuGetErrorString");
  json_t *d = NULL;
  if (!init || !ver || !count || !get || !name || !attr || !mem) {
    d = json_pack("{s:b,s:s}", "available", 0, "error",
                  "libcuda.so.1 lacks the expected driver API entry points");
    goto out;
  }
  int v = 0;
  ver(&v);
  char vs[32];
  snprintf(vs, sizeof vs, "%d.%d", v / 1000, (v % 1000) / 10);
  CUresult r = init(0);
  if (r != CUDA_SUCCESS) {
    const char *es = NULL;
    if (errstr)
      errstr(r, &es);
    d = json_pack("{s:b,s:s,s:s}", "available", 0, "version", vs, "error",
                  es ? es : "cuInit failed");
    goto out;
  }
  int n = 0;
  count(&n);
  for (int i = 0; i < n; i++) {
    CUdevice dev;
    if (get(&dev, i) != CUDA_SUCCESS)
      continue;
    char nm[256] = "";
    name(nm, sizeof nm, dev);
    int maj = 0, min = 0, sms = 0, clk = 0, mclk = 0, l2 = 0;
    attr(&maj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    attr(&min, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    attr(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    attr(&clk, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev);
    attr(&mclk, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, dev);
    attr(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev);
    size_t bytes = 0;
    mem(&bytes, dev);
    char cc[16];
    snprintf(cc, sizeof cc, "%d.%d", maj, min);
    json_array_append_new(
        devices, json_pack("{s:i,s:s,s:s,s:i,s:i,s:i,s:I,s:i}", "index", i, "name", nm, "cc",
                           cc, "sm_count", sms, "clock_khz", clk, "mem_clock_khz", mclk,
                           "memory_bytes", (json_int_t)bytes, "l2_bytes", l2));
  }
  d = json_pack("{s:b,s:s}", "available", 1, "version", vs);
out:
  /* kept loaded: unloading leaves the library's static allocations unreachable */
  return d;
}

/* Runs `prog --version` and returns the line that names the release. */
static json_t *tool_info(const char *cuda_home, const char *prog) {
  char *path = ag_which(prog);
  if (!path && cuda_home) {
    char p[4096];
    snprintf(p, sizeof p, "%s/bin/%s", cuda_home, prog);
    if (access(p, X_OK) == 0)
      path = ag_strdup(p);
  }
  if (!path)
    return json_pack("{s:s}", "error", "not found in PATH or the CUDA toolkit");
  ag_str out = AG_STR_INIT;
  const char *argv[] = {path, "--version", NULL};
  ag_proc_opts o = {.argv = argv, .capture_out = &out, .timeout_s = 30};
  ag_proc_result r;
  json_t *j;
  if (ag_proc_run(&o, &r) || !r.exited || r.exit_code) {
    j = json_pack("{s:s,s:s}", "path", path, "error", "'--version' failed");
  } else {
    const char *line = strstr(ag_str_cstr(&out), "release");
    const char *s = line ? line : ag_str_cstr(&out);
    size_t n = strcspn(s, "\n");
    char *v = ag_strndup(s, n);
    j = json_pack("{s:s,s:s}", "path", path, "version", v ? v : "");
    ag_free(v);
  }
  ag_str_release(&out);
  ag_free(path);
  return j;
}

static json_t *nvjitlink_info(const char *cuda_home) {
  static const char *const names[] = {"libnvJitLink.so.13", "libnvJitLink.so", NULL};
  void *h = open_lib(cuda_home, names);
  if (!h)
    return json_pack("{s:s}", "error", "libnvJitLink.so not found");
  typedef int (*fn)(unsigned *, unsigned *);
  fn f = (fn)dlsym(h, "nvJitLinkVersion");
  json_t *j;
  unsigned maj = 0, min = 0;
  if (f && f(&maj, &min) == 0) {
    char v[32];
    snprintf(v, sizeof v, "%u.%u", maj, min);
    j = json_pack("{s:s}", "version", v);
  } else {
    j = json_pack("{s:s}", "error", "nvJitLinkVersion failed");
  }
  /* kept loaded: unloading leaves the library's static allocations unreachable */
  return j;
}

static json_t *cupti_info(const char *cuda_home) {
  static const char *const names[] = {"libcupti.so.13", "libcupti.so", NULL};
  void *h = open_lib(cuda_home, names);
  if (!h && cuda_home) {
    char p[4096];
    snprintf(p, sizeof p, "%s/extras/CUPTI/lib64/libcupti.so", cuda_home);
    h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
  }
  if (!h)
    return json_pack("{s:s}", "error", "libcupti.so not found");
  typedef int (*fn)(uint32_t *);
  fn f = (fn)dlsym(h, "cuptiGetVersion");
  uint32_t v = 0;
  json_t *j = f && f(&v) == 0 ? json_pack("{s:i}", "api_version", (int)v)
                              : json_pack("{s:s}", "error", "cuptiGetVersion failed");
  /* kept loaded: unloading leaves the library's static allocations unreachable */
  return j;
}

/* NVIDIA's driver restricts counters to admins when RmProfilingAdminOnly=1. */
static json_t *profiling_info(int have_driver) {
  char *data = NULL;
  size_t len = 0;
  int root = geteuid() == 0;
  if (ag_file_read("/proc/driver/nvidia/params", &data, &len) == 0) {
    const char *k = strstr(data, "RmProfilingAdminOnly:");
    int admin_only = k ? atoi(k + strlen("RmProfilingAdminOnly:")) : 0;
    ag_free(data);
    if (!admin_only)
      return json_pack("{s:b,s:s}", "permitted", 1, "reason",
                       "RmProfilingAdminOnly=0: any user may read hardware counters");
    return json_pack("{s:b,s:s}", "permitted", root, "reason",
                     root ? "RmProfilingAdminOnly=1, running as root"
                          : "RmProfilingAdminOnly=1 and not root: counters need root "
                            "(or the driver option NVreg_RestrictProfilingToAdminUsers=0)");
  }
  if (!have_driver)
    return json_pack("{s:n,s:s}", "permitted", "reason", "no NVIDIA driver");
  return json_pack("{s:b,s:s}", "permitted", root, "reason",
                   root ? "running as root (driver parameters not readable)"
                        : "driver parameters not readable; counters may need root");
}

int ag_sysinfo_collect(const char *cuda_home, json_t **out) {
  json_t *devices = json_array();
  json_t *driver = driver_info(devices);
  json_t *tools = json_pack("{s:o,s:o,s:o,s:o}", "nvcc", tool_info(cuda_home, "nvcc"),
                            "ptxas", tool_info(cuda_home, "ptxas"), "nvjitlink",
                            nvjitlink_info(cuda_home), "cupti", cupti_info(cuda_home));
  int have = json_is_true(json_object_get(driver, "available"));
  *out = json_pack("{s:o,s:o,s:o,s:o}", "driver", driver, "devices", devices, "tools", tools,
                   "profiling", profiling_info(have));
  return *out ? 0 : AG_ENOMEM;
}
