/*
 * hw_harness.c — host program of the system-timeline and stalls ground
 * truth (tests/data/cuda/hw_truth.cu `stall_truth`), of the throughput
 * ground truth (tests/data/cuda/pm_truth.cu `pm_truth`: --mb MiB copied
 * --passes times, then --n MMA steps), or of the paper's collector kernel
 * (tests/data/cuda/attrib_truth.cu `collector`, for
 * bench/bench_collect_costs.c). Copies the input in (cuMemcpyHtoD), clears the
 * output (cuMemsetD32), launches --launches times alternating over
 * --streams streams, synchronizes each stream, copies back and checks every
 * result bit for bit against the same float operations on the CPU.
 *
 *   hw_harness [--module FILE] [--kernel stall_truth|collector|pm_truth]
 *       [--blocks B] [--threads T] [--spin N] [--n N] [--launches L]
 *       [--streams S] [--mb MB] [--passes P] [--range NAME] [--hold-cupti]
 *       [--nvtx] [--graph G]
 * --range opens a user range around the launches (ag_host_range_push/pop:
 * the hardware counters' ranges, docs/counters.md). --graph G captures two
 * launches on the first stream into a CUDA graph and launches it G times
 * after the others (stall_truth only). --nvtx wraps the run in NVTX ranges
 * (docs/system.md): "hw/all" around everything from the first launch to
 * the last synchronization, inside it "hw/launches" (the launch loop and
 * the streams' synchronization) and "hw/graph" (the graph launches and
 * their synchronization), and an instant marker "hw/between" between them.
 * Prints "@ hw: ... host_us_per_launch X e2e_us_per_launch Y": the launch
 * loop's host time, and until every stream finished, per launch.
 * Exit 0: results match; 1: mismatch or error; 2: usage; 77: no GPU.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "argus/host.h"
#include "../sassm/hold_cupti.h"
#include <nvtx3/nvToolsExt.h>

static float stall_truth(float x, int n) {
  float a[8];
  for (int c = 0; c < 8; c++)
    a[c] = c ? x + (float)c : x;
  for (int i = 0; i < n; i++)
    for (int c = 0; c < 8; c++)
      a[c] = fmaf(a[c], 0.999f, 0.5f);
  return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

/* pm_truth's out[t] for x = (t % 13) / 16 (tests/data/cuda/pm_truth.cu) */
static float pm_truth(float x, int iters) {
  float a[8];
  for (int c = 0; c < 8; c++)
    a[c] = c ? x + (float)c : x;
  for (int i = 0; i < iters; i++)
    for (int c = 0; c < 8; c++)
      a[c] = fmaf(a[c], 0.999f, 0.5f);
  return (float)(2 * iters) + (((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])));
}

static float collector(float a) {
  for (int o = 0; o < 8; o++)
    for (int j = 0; j < 2048; j++)
      a = fmaf(a, 1.0000001f, 0.5f);
  return a;
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

ARGUS_HARNESS_MAIN(int argc, char **argv) {
  const char *module = "hw_truth.cubin", *kernel = "stall_truth", *range = NULL;
  int blocks = 132, threads = 256, spin = 50, n = 4096, launches = 1, nstreams = 1, hold = 0;
  int mb = 256, passes = 40, nvtx = 0, graphs = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int more = i + 1 < argc;
    if (!strcmp(a, "--module") && more) module = argv[++i];
    else if (!strcmp(a, "--kernel") && more) kernel = argv[++i];
    else if (!strcmp(a, "--blocks") && more) blocks = atoi(argv[++i]);
    else if (!strcmp(a, "--threads") && more) threads = atoi(argv[++i]);
    else if (!strcmp(a, "--spin") && more) spin = atoi(argv[++i]);
    else if (!strcmp(a, "--n") && more) n = atoi(argv[++i]);
    else if (!strcmp(a, "--launches") && more) launches = atoi(argv[++i]);
    else if (!strcmp(a, "--streams") && more) nstreams = atoi(argv[++i]);
    else if (!strcmp(a, "--mb") && more) mb = atoi(argv[++i]);
    else if (!strcmp(a, "--passes") && more) passes = atoi(argv[++i]);
    else if (!strcmp(a, "--range") && more) range = argv[++i];
    else if (!strcmp(a, "--hold-cupti")) hold = 1;
    else if (!strcmp(a, "--nvtx")) nvtx = 1;
    else if (!strcmp(a, "--graph") && more) graphs = atoi(argv[++i]);
    else {
      fprintf(stderr, "hw: unknown argument '%s'\n", a);
      return 2;
    }
  }
  int coll = !strcmp(kernel, "collector"), pm = !strcmp(kernel, "pm_truth");
  if (blocks < 1 || threads < 32 || threads % 32 || threads > 256 || spin < 0 || n < 1 ||
      launches < 1 || nstreams < 1 || nstreams > 4 || mb < 1 || passes < 0 ||
      (!coll && !pm && strcmp(kernel, "stall_truth")) || (pm && n >= 1 << 23) || graphs < 0 ||
      (graphs && (coll || pm))) {
    fprintf(stderr, "hw: needs blocks >= 1, threads a multiple of 32 up to 256, n, launches, "
                    "mb >= 1, 1 to 4 streams, kernel stall_truth, collector or pm_truth (n "
                    "below 2^23); --graph G >= 0 with stall_truth only\n");
    return 2;
  }
  if (hold && hold_cupti("hw"))
    return 1;
  int total = blocks * threads, rc = 1;
  float *in = malloc(sizeof(float) * (size_t)total), *out = malloc(sizeof(float) * (size_t)total);
  ag_host *host = NULL;
  ag_host_module *m = NULL;
  ag_host_kernel *k = NULL;
  CUdeviceptr din = 0, dout = 0, dsrc = 0, ddst = 0;
  size_t bytes = (size_t)mb << 20;
  unsigned long long n4 = bytes / 16;
  float *hsrc = pm ? malloc(bytes) : NULL, *hdst = pm ? malloc(bytes) : NULL;
  CUstream st[4] = {0};
  CUgraph graph = NULL;
  CUgraphExec exec = NULL;
  int r = ag_host_open(&host);
  if (r) {
    fprintf(stderr, "hw: %s\n", ag_host_errmsg(host));
    rc = r == AG_HOST_ENODEV ? 77 : 1;
    goto out;
  }
  if (!in || !out || (pm && (!hsrc || !hdst)))
    goto out;
  for (int t = 0; t < total; t++)
    in[t] = (float)(t % 13) * 0.0625f;
  if (ag_host_load(host, module, &m) || ag_host_kernel_get(m, kernel, &k)) {
    fprintf(stderr, "hw: %s\n", ag_host_errmsg(host));
    goto out;
  }
  for (int s = 0; s < nstreams; s++)
    if (cuStreamCreate(&st[s], CU_STREAM_NON_BLOCKING)) {
      fprintf(stderr, "hw: cuStreamCreate failed\n");
      goto out;
    }
  if (cuMemAlloc(&din, sizeof(float) * (size_t)total) ||
      cuMemAlloc(&dout, sizeof(float) * (size_t)total) ||
      cuMemcpyHtoD(din, in, sizeof(float) * (size_t)total) ||
      cuMemsetD32(dout, 0, (size_t)total)) {
    fprintf(stderr, "hw: device memory\n");
    goto out;
  }
  if (pm) { /* pm_truth: the buffer it copies */
    for (size_t i = 0; i < bytes / 4; i++)
      hsrc[i] = (float)(i % 1021);
    if (cuMemAlloc(&dsrc, bytes) || cuMemAlloc(&ddst, bytes) || cuMemcpyHtoD(dsrc, hsrc, bytes) ||
        cuMemsetD32(ddst, 0, bytes / 4)) {
      fprintf(stderr, "hw: device memory for pm_truth (%d MiB twice)\n", mb);
      goto out;
    }
  }
  void *args_s[] = {&dout, &din, &spin, &n};
  void *args_c[] = {&dout, &din};
  void *args_p[] = {&ddst, &dsrc, &n4, &passes, &n, &dout};
  double t0 = now_us();
  if (nvtx)
    nvtxRangePushA("hw/all"), nvtxRangePushA("hw/launches");
  if (range && ag_host_range_push(host, range)) {
    fprintf(stderr, "hw: %s\n", ag_host_errmsg(host));
    goto out;
  }
  for (int l = 0; l < launches; l++)
    if (ag_host_launch(k, (ag_host_dim){(unsigned)blocks, 1, 1},
                       (ag_host_dim){(unsigned)threads, 1, 1}, 0, st[l % nstreams],
                       coll ? args_c : pm ? args_p : args_s)) {
      fprintf(stderr, "hw: %s\n", ag_host_errmsg(host));
      goto out;
    }
  if (range && ag_host_range_pop(host)) {
    fprintf(stderr, "hw: %s\n", ag_host_errmsg(host));
    goto out;
  }
  double t1 = now_us();
  for (int s = 0; s < nstreams; s++)
    if (cuStreamSynchronize(st[s])) {
      fprintf(stderr, "hw: cuStreamSynchronize failed\n");
      goto out;
    }
  double t2 = now_us();
  if (nvtx)
    nvtxRangePop(), nvtxMarkA("hw/between");
  if (graphs) { /* two launches captured into one graph, launched `graphs` times */
    CUfunction f = (CUfunction)ag_host_kernel_cufunction(k);
    if (nvtx)
      nvtxRangePushA("hw/graph");
    int bad = cuStreamBeginCapture(st[0], CU_STREAM_CAPTURE_MODE_RELAXED) != CUDA_SUCCESS;
    for (int c = 0; c < 2 && !bad; c++)
      bad = cuLaunchKernel(f, (unsigned)blocks, 1, 1, (unsigned)threads, 1, 1, 0, st[0], args_s,
                           NULL) != CUDA_SUCCESS;
    bad |= cuStreamEndCapture(st[0], &graph) != CUDA_SUCCESS;
    bad = bad || cuGraphInstantiate(&exec, graph, 0) != CUDA_SUCCESS;
    for (int g = 0; g < graphs && !bad; g++)
      bad = cuGraphLaunch(exec, st[0]) != CUDA_SUCCESS;
    if (bad || cuStreamSynchronize(st[0])) {
      fprintf(stderr, "hw: the CUDA graph (capture, instantiate, launch) failed\n");
      goto out;
    }
    if (nvtx)
      nvtxRangePop();
  }
  if (nvtx)
    nvtxRangePop();
  if (cuMemcpyDtoH(out, dout, sizeof(float) * (size_t)total)) {
    fprintf(stderr, "hw: copy back failed\n");
    goto out;
  }
  int wrong = 0;
  float wants[13];
  for (int v = 0; v < 13; v++)
    wants[v] = coll ? collector(in[v]) : pm ? pm_truth((float)v * 0.0625f, n)
                                            : stall_truth(in[v], n);
  for (int t = 0; t < total; t++)
    if (memcmp(&wants[t % 13], &out[t], sizeof(float)) && wrong++ < 3)
      fprintf(stderr, "hw: out[%d] = %.9g, want %.9g\n", t, out[t], wants[t % 13]);
  if (pm && passes > 0) {
    if (cuMemcpyDtoH(hdst, ddst, bytes)) {
      fprintf(stderr, "hw: copy back failed\n");
      goto out;
    }
    if (memcmp(hdst, hsrc, bytes)) {
      fprintf(stderr, "hw: pm_truth's copy differs from its source\n");
      wrong++;
    }
  }
  if (ag_host_finish(host)) {
    fprintf(stderr, "hw: %s\n", ag_host_errmsg(host));
    goto out;
  }
  printf("@ hw: %s %s, %d launches on %d streams, host_us_per_launch %.3f "
         "e2e_us_per_launch %.3f\n",
         kernel, wrong ? "MISMATCH" : "ok", launches, nstreams, (t1 - t0) / launches,
         (t2 - t0) / launches);
  rc = wrong ? 1 : 0;
out:
  if (exec)
    cuGraphExecDestroy(exec);
  if (graph)
    cuGraphDestroy(graph);
  for (int s = 0; s < nstreams; s++)
    if (st[s])
      cuStreamDestroy(st[s]);
  if (din)
    cuMemFree(din);
  if (dout)
    cuMemFree(dout);
  if (dsrc)
    cuMemFree(dsrc);
  if (ddst)
    cuMemFree(ddst);
  free(hsrc);
  free(hdst);
  ag_host_close(host);
  free(in);
  free(out);
  return rc;
}
