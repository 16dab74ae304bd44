/*
 * attrib_truth_harness.c — host program of the attribution ground truth
 * (tests/data/cuda/attrib_truth.cu): launches `attrib_truth` once on
 * --blocks CTAs of --threads threads with trip counts k1, k2, k3 and checks
 * out[] bit for bit against the same float operations on the CPU; or, with
 * --kernel collector, the paper's collector kernel (2,048 FMAs per
 * occurrence; checked the same way); attrib_param and attrib_mbar give
 * in[t] + 1 (which kernel features CUPTI counts: docs/sass-metrics.md).
 *
 *   attrib_truth_harness [--module FILE]
 *       [--kernel attrib_truth|collector|attrib_param|attrib_mbar]
 *       [--blocks B] [--threads T] [--k1 N] [--k2 N] [--k3 N]
 *       [--smem BYTES] [--hold-cupti]
 * --hold-cupti subscribes to CUPTI itself before opening the host runtime,
 * as another tool in the process would (the collector must refuse clearly).
 * --smem launches with that much dynamic shared memory (unused by the kernel).
 * Exit 0: results match; 1: mismatch or error; 2: usage.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argus/host.h"
#include "hold_cupti.h"

static float mix(float a, float s) {
  a = fmaf(a, 1.0001f, s);
  a = fmaf(a, 0.9999f, 0.25f);
  a = fmaf(a, a, -0.5f) * 0.125f;
  return fmaf(a, 0.5f, s);
}

static float truth(float a, int k1, int k2, int k3) {
  for (int i = 0; i < k1; i++)
    a = mix(a, 1.0f);
  for (int i = 0; i < k2; i++)
    a = mix(a, 2.0f);
  for (int i = 0; i < k3; i++)
    a = fmaf(a, 0.75f, (float)(i & 3));
  return a;
}

static float collector(float a) {
  for (int o = 0; o < 8; o++)
    for (int j = 0; j < 2048; j++)
      a = fmaf(a, 1.0000001f, 0.5f);
  return a;
}

ARGUS_HARNESS_MAIN(int argc, char **argv) {
  const char *module = "attrib_truth.cubin", *kernel = "attrib_truth";
  int blocks = 4, threads = 128, k1 = 3, k2 = 5, k3 = 7, hold = 0, smem = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int more = i + 1 < argc;
    if (!strcmp(a, "--module") && more) module = argv[++i];
    else if (!strcmp(a, "--kernel") && more) kernel = argv[++i];
    else if (!strcmp(a, "--blocks") && more) blocks = atoi(argv[++i]);
    else if (!strcmp(a, "--threads") && more) threads = atoi(argv[++i]);
    else if (!strcmp(a, "--k1") && more) k1 = atoi(argv[++i]);
    else if (!strcmp(a, "--k2") && more) k2 = atoi(argv[++i]);
    else if (!strcmp(a, "--k3") && more) k3 = atoi(argv[++i]);
    else if (!strcmp(a, "--smem") && more) smem = atoi(argv[++i]);
    else if (!strcmp(a, "--hold-cupti")) hold = 1;
    else {
      fprintf(stderr, "attrib_truth: unknown argument '%s'\n", a);
      return 2;
    }
  }
  if (blocks < 1 || threads < 32 || threads % 32 || threads > 1024 || k1 < 1 || k2 < 1 ||
      k3 < 1 || smem < 0) {
    fprintf(stderr, "attrib_truth: needs blocks >= 1, threads a multiple of 32 up to 1024, "
                    "k1, k2, k3 >= 1\n");
    return 2;
  }
  if (hold && hold_cupti("attrib_truth"))
    return 1;
  int n = blocks * threads, rc = 1;
  float *in = malloc(sizeof(float) * (size_t)n), *out = malloc(sizeof(float) * (size_t)n);
  ag_host *host = NULL;
  ag_host_module *m = NULL;
  ag_host_kernel *k = NULL;
  CUdeviceptr din = 0, dout = 0;
  int r = ag_host_open(&host);
  if (r) {
    fprintf(stderr, "attrib_truth: %s\n", ag_host_errmsg(host));
    rc = r == AG_HOST_ENODEV ? 77 : 1;
    goto out;
  }
  if (!in || !out) {
    fprintf(stderr, "attrib_truth: out of memory\n");
    goto out;
  }
  for (int t = 0; t < n; t++)
    in[t] = (float)(t % 13) * 0.0625f;
  if (ag_host_load(host, module, &m) || ag_host_kernel_get(m, kernel, &k) ||
      (smem > 48 * 1024 &&
       ag_host_kernel_set_attr(k, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem))) {
    fprintf(stderr, "attrib_truth: %s\n", ag_host_errmsg(host));
    goto out;
  }
  if (cuMemAlloc(&din, sizeof(float) * (size_t)n) ||
      cuMemAlloc(&dout, sizeof(float) * (size_t)n) ||
      cuMemcpyHtoD(din, in, sizeof(float) * (size_t)n)) {
    fprintf(stderr, "attrib_truth: device memory\n");
    goto out;
  }
  int is_coll = !strcmp(kernel, "collector"), is_param = !strcmp(kernel, "attrib_param");
  int is_plus1 = is_param || !strcmp(kernel, "attrib_mbar");
  struct {
    _Alignas(64) float v[32];
  } p128;
  for (int i = 0; i < 32; i++)
    p128.v[i] = 1.0f;
  void *args_t[] = {&dout, &din, &k1, &k2, &k3};
  void *args_c[] = {&dout, &din};
  void *args_p[] = {&p128, &dout, &din};
  if (ag_host_launch(k, (ag_host_dim){(unsigned)blocks, 1, 1}, (ag_host_dim){(unsigned)threads, 1, 1},
                     (unsigned)smem, NULL,
                     is_param ? args_p : is_coll || is_plus1 ? args_c : args_t) ||
      ag_host_sync(host)) {
    fprintf(stderr, "attrib_truth: %s\n", ag_host_errmsg(host));
    goto out;
  }
  if (cuMemcpyDtoH(out, dout, sizeof(float) * (size_t)n)) {
    fprintf(stderr, "attrib_truth: copy back failed\n");
    goto out;
  }
  int wrong = 0;
  float wants[13]; /* in[t] depends on t % 13 only */
  for (int v = 0; v < 13; v++)
    wants[v] = is_plus1 ? in[v] + 1.0f : is_coll ? collector(in[v]) : truth(in[v], k1, k2, k3);
  for (int t = 0; t < n; t++) {
    float want = wants[t % 13];
    if (memcmp(&want, &out[t], sizeof want) && wrong++ < 3)
      fprintf(stderr, "attrib_truth: out[%d] = %.9g, want %.9g\n", t, out[t], want);
  }
  if (ag_host_finish(host)) {
    fprintf(stderr, "attrib_truth: %s\n", ag_host_errmsg(host));
    goto out;
  }
  printf("@ attrib_truth: %s %s, %d warps, k1 %d k2 %d k3 %d\n", kernel,
         wrong ? "MISMATCH" : "ok", n / 32, k1, k2, k3);
  rc = wrong ? 1 : 0;
out:
  if (din)
    cuMemFree(din);
  if (dout)
    cuMemFree(dout);
  ag_host_close(host);
  free(in);
  free(out);
  return rc;
}
