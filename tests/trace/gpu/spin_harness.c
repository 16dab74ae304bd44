/*
 * spin_harness.c - host program of the fidelity kernels (spin.cu): loads the
 * module through libargus_host, launches 132 CTAs x 128 threads once, and
 * writes the kernel's own cycle counts (the truth) to --truth FILE.
 *
 *   spin_harness --module FILE --truth FILE [--reps N] [--fault] [--hang]
 * Exit 0 ok; 1 a CUDA or file error (the reason on stderr); 2 usage.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argus/host.h"

#define CTAS 132
#define THREADS 128

int main(int argc, char **argv) {
  const char *module = NULL, *truthp = NULL;
  int reps = 4, fault = 0, forever = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--module") && i + 1 < argc)
      module = argv[++i];
    else if (!strcmp(argv[i], "--truth") && i + 1 < argc)
      truthp = argv[++i];
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--fault"))
      fault = 1;
    else if (!strcmp(argv[i], "--hang"))
      forever = 1;
    else {
      fprintf(stderr, "usage: %s --module FILE --truth FILE [--reps N] [--fault] [--hang]\n",
              argv[0]);
      return 2;
    }
  }
  if (!module || !truthp || reps < 1)
    return 2;
  ag_host *h = NULL;
  ag_host_module *m = NULL;
  ag_host_kernel *k = NULL;
  if (ag_host_open(&h) || ag_host_load(h, module, &m) || ag_host_kernel_get(m, "spin", &k)) {
    fprintf(stderr, "spin_harness: %s\n", ag_host_errmsg(h));
    ag_host_close(h);
    return 1;
  }
  size_t n = (size_t)CTAS * THREADS / 32 * 3 * (size_t)reps;
  unsigned long long *d = NULL, *t = calloc(n, sizeof *t);
  if (!t || cudaMalloc((void **)&d, n * sizeof *d) != cudaSuccess) {
    fprintf(stderr, "spin_harness: cannot allocate the truth buffer\n");
    return 1;
  }
  void *args[] = {&d, &reps, &fault, &forever};
  if (ag_host_launch(k, (ag_host_dim){CTAS, 1, 1}, (ag_host_dim){THREADS, 1, 1}, 0, NULL, args) ||
      ag_host_finish(h)) {
    fprintf(stderr, "spin_harness: %s\n", ag_host_errmsg(h));
    ag_host_close(h);
    return 1;
  }
  cudaError_t e = cudaMemcpy(t, d, n * sizeof *t, cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) {
    fprintf(stderr, "spin_harness: cudaMemcpy: %s\n", cudaGetErrorString(e));
    return 1;
  }
  FILE *f = fopen(truthp, "wb");
  if (!f || fwrite(t, sizeof *t, n, f) != n || fclose(f)) {
    fprintf(stderr, "spin_harness: cannot write %s\n", truthp);
    return 1;
  }
  cudaFree(d);
  free(t);
  ag_host_close(h);
  return 0;
}
