/*
 * harness.c - the all-gather + GEMM pipeline (examples/overlap,
 * docs/comm.md): one process drives every visible GPU (ranks = devices,
 * or --ranks). Each rank holds M / ranks rows of A (M x K) and all of B
 * (K x N); the pipeline all-gathers A in S chunks on a communication
 * stream (NCCL, SM reservation R: the communicator's minCTAs = maxCTAs =
 * R through ncclConfig_t) and multiplies each gathered chunk by B on a
 * compute stream with the persistent GEMM (overlap_gemm.cu, SMs - R CTAs).
 * The compute stream waits on the communication every P chunks (the
 * barrier interval): at chunk s with s % P == 0 it waits for chunk
 * min(s + P - 1, S - 1), then runs P GEMMs; an iteration's all-gathers wait
 * for the previous iteration's last GEMM. The reference path is not
 * overlapped: one all-gather of the whole shard, then one GEMM of all M
 * rows, on one stream, with NCCL's default CTAs and the full grid.
 *
 * Correctness: the pipelined C (its rows in chunk order) equals the
 * reference's bit for bit (each element is summed in the same order), and
 * the reference equals a CPU double-precision product on sampled entries.
 *
 * Rank 0's GEMM module comes through the Argus host runtime (so `argus
 * observe` traces its regions and times its launches); the other ranks
 * load the production cubin themselves. Each chunk's NCCL group is inside
 * an NVTX range "argus.comm op=all_gather bytes=B ranks=N" (B: the
 * gathered bytes, nccl-tests' size), which the comm signal reads.
 *
 * Prints one JSON line: {"S","R","P","ranks","m","n","k","iters",
 * "pipeline_ms","reference_ms","speedup","tflops","check"}. Exit 0 ok,
 * 1 failure, 2 usage, 77 fewer GPUs than --ranks asks for.
 */
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime.h>
#include <math.h>
#include <nccl.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "argus/host.h"

#define MAXR 8
#define MAXS 256
#define TILE 64

#define CK(call)                                                                   \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      fprintf(stderr, "overlap: %s failed: %s\n", #call, cudaGetErrorString(e_));  \
      goto out;                                                                    \
    }                                                                              \
  } while (0)
#define NC(call)                                                                   \
  do {                                                                             \
    ncclResult_t e_ = (call);                                                      \
    if (e_ != ncclSuccess) {                                                       \
      fprintf(stderr, "overlap: %s failed: %s\n", #call, ncclGetErrorString(e_));  \
      goto out;                                                                    \
    }                                                                              \
  } while (0)
#define AH(call)                                                                   \
  do {                                                                             \
    if ((call) != 0) {                                                             \
      fprintf(stderr, "overlap: %s failed: %s\n", #call, ag_host_errmsg(host));    \
      goto out;                                                                    \
    }                                                                              \
  } while (0)

typedef struct rank {
  int dev, sms;
  float *a_shard, *a_full, *b, *c, *c_ref;
  cudaStream_t comm, comp;
  cudaEvent_t ev[MAXS];
  cudaEvent_t done; /* the compute stream's end of an iteration: the next one's
                       all-gathers overwrite the gathered A only after it */
  ncclComm_t nc, nc_ref; /* R CTAs; NCCL's default */
  cudaLibrary_t lib;     /* ranks > 0: the production cubin (the CUDA runtime's
                            library API: the harness starts without libcuda) */
  cudaKernel_t fn;
} rank;

typedef struct opts {
  int m, n, k, S, R, P, iters, ranks, mode; /* mode: 0 both, 1 pipeline, 2 reference */
  const char *module;
} opts;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int usage(const char *argv0) {
  fprintf(stderr,
          "usage: %s [--m M] [--n N] [--k K] [--chunks S] [--comm-sms R] [--barrier P]\n"
          "          [--iters I] [--ranks N] [--mode both|pipeline|reference] [--module CUBIN]\n"
          "M divisible by ranks x S x 64; N by 64; K by 16; 1 <= P <= S <= %d\n",
          argv0, MAXS);
  return 2;
}

static int parse(int argc, char **argv, opts *o) {
  *o = (opts){.m = 4096, .n = 4096, .k = 4096, .S = 4, .R = 8, .P = 1, .iters = 10};
  for (int i = 1; i < argc; i += 2) { /* every option takes a value */
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int *dst = !strcmp(a, "--m")          ? &o->m
               : !strcmp(a, "--n")        ? &o->n
               : !strcmp(a, "--k")        ? &o->k
               : !strcmp(a, "--chunks")   ? &o->S
               : !strcmp(a, "--comm-sms") ? &o->R
               : !strcmp(a, "--barrier")  ? &o->P
               : !strcmp(a, "--iters")    ? &o->iters
               : !strcmp(a, "--ranks")    ? &o->ranks
                                          : NULL;
    if (!v)
      return usage(argv[0]);
    if (dst) {
      *dst = atoi(v);
    } else if (!strcmp(a, "--module")) {
      o->module = v;
    } else if (!strcmp(a, "--mode")) {
      o->mode = !strcmp(v, "both") ? 0 : !strcmp(v, "pipeline") ? 1 : !strcmp(v, "reference") ? 2 : -1;
      if (o->mode < 0)
        return usage(argv[0]);
    } else {
      return usage(argv[0]);
    }
  }
  if (o->S < 1 || o->S > MAXS || o->P < 1 || o->P > o->S || o->R < 1 || o->iters < 1 ||
      o->n % TILE || o->k % 16 || o->m <= 0 || o->n <= 0 || o->k <= 0)
    return usage(argv[0]);
  return 0;
}

/* The default module: overlap_gemm.cubin beside the harness. */
static char *default_module(const char *argv0) {
  const char *slash = strrchr(argv0, '/');
  size_t n = slash ? (size_t)(slash - argv0) + 1 : 0;
  char *p = malloc(n + 32);
  if (p) {
    memcpy(p, argv0, n);
    strcpy(p + n, "overlap_gemm.cubin");
  }
  return p;
}

static float val(unsigned i, unsigned salt) { /* small exact values: sums stay exact-ish */
  unsigned h = (i * 2654435761u) ^ (salt * 40503u);
  return (float)((int)(h % 17u) - 8) / 8.0f;
}

static dim3 dim3_of(int x) {
  dim3 d = {(unsigned)x, 1, 1};
  return d;
}

/* One GEMM launch of `rows` rows on rank r's compute stream. */
static int gemm(ag_host *host, ag_host_kernel *k0, rank *r, int is0, const float *A, float *C,
                int rows, const opts *o, int grid, cudaStream_t s) {
  int n = o->n, kk = o->k;
  void *args[] = {&A, &r->b, &C, &rows, &n, &kk};
  if (is0) {
    if (ag_host_launch(k0, (ag_host_dim){(unsigned)grid, 1, 1}, (ag_host_dim){256, 1, 1}, 0, s,
                       args)) {
      fprintf(stderr, "overlap: ag_host_launch failed: %s\n", ag_host_errmsg(host));
      return -1;
    }
    return 0;
  }
  cudaError_t e = cudaLaunchKernel((const void *)r->fn, dim3_of(grid), dim3_of(256), args, 0, s);
  if (e != cudaSuccess) {
    fprintf(stderr, "overlap: cudaLaunchKernel (rank %d) failed: %s\n", r->dev,
            cudaGetErrorString(e));
    return -1;
  }
  return 0;
}

static int sync_all(rank *rk, int n) {
  for (int i = 0; i < n; i++)
    if (cudaSetDevice(rk[i].dev) || cudaDeviceSynchronize())
      return -1;
  return 0;
}

/* One pipelined iteration: S chunked all-gathers, the GEMMs behind them. */
static int pipeline(ag_host *host, ag_host_kernel *k0, rank *rk, const opts *o) {
  int n = o->ranks;
  size_t rc = (size_t)o->m / ((size_t)n * o->S); /* rows per rank per chunk */
  size_t chunk = rc * o->k, gathered = chunk * n;
  char decl[128];
  for (int i = 0; i < n; i++)
    if (cudaSetDevice(rk[i].dev) || cudaStreamWaitEvent(rk[i].comm, rk[i].done, 0))
      return -1;
  for (int s = 0; s < o->S; s++) {
    snprintf(decl, sizeof decl, "argus.comm op=all_gather bytes=%zu ranks=%d",
             gathered * sizeof(float), n);
    nvtxRangePushA(decl);
    if (ncclGroupStart() != ncclSuccess)
      return -1;
    for (int i = 0; i < n; i++)
      if (ncclAllGather(rk[i].a_shard + s * chunk, rk[i].a_full + s * gathered, chunk, ncclFloat,
                        rk[i].nc, rk[i].comm) != ncclSuccess)
        return -1;
    if (ncclGroupEnd() != ncclSuccess)
      return -1;
    nvtxRangePop();
    for (int i = 0; i < n; i++)
      if (cudaSetDevice(rk[i].dev) || cudaEventRecord(rk[i].ev[s], rk[i].comm))
        return -1;
  }
  for (int i = 0; i < n; i++) {
    rank *r = &rk[i];
    if (cudaSetDevice(r->dev))
      return -1;
    int grid = r->sms - o->R > 0 ? r->sms - o->R : 1;
    for (int s = 0; s < o->S; s++) {
      if (s % o->P == 0) {
        int last = s + o->P - 1 < o->S ? s + o->P - 1 : o->S - 1;
        if (cudaStreamWaitEvent(r->comp, r->ev[last], 0))
          return -1;
      }
      if (gemm(host, k0, r, i == 0, r->a_full + s * gathered, r->c + s * rc * n * o->n,
               (int)(rc * n), o, grid, r->comp))
        return -1;
    }
    if (cudaEventRecord(r->done, r->comp))
      return -1;
  }
  return 0;
}

/* The reference: one all-gather, then one GEMM, one stream, no overlap. */
static int reference(ag_host *host, ag_host_kernel *k0, rank *rk, const opts *o) {
  int n = o->ranks;
  size_t shard = (size_t)o->m / n * o->k;
  char decl[128];
  snprintf(decl, sizeof decl, "argus.comm op=all_gather bytes=%zu ranks=%d",
           shard * n * sizeof(float), n);
  nvtxRangePushA(decl);
  if (ncclGroupStart() != ncclSuccess)
    return -1;
  for (int i = 0; i < n; i++)
    if (ncclAllGather(rk[i].a_shard, rk[i].a_full, shard, ncclFloat, rk[i].nc_ref,
                      rk[i].comp) != ncclSuccess)
      return -1;
  if (ncclGroupEnd() != ncclSuccess)
    return -1;
  nvtxRangePop();
  for (int i = 0; i < n; i++)
    if (cudaSetDevice(rk[i].dev) ||
        gemm(host, k0, &rk[i], i == 0, rk[i].a_full, rk[i].c_ref, o->m, o, rk[i].sms, rk[i].comp))
      return -1;
  return 0;
}

/* The pipelined C's row p (chunk order) is the reference's row orig(p). */
static size_t orig_row(size_t p, const opts *o) {
  size_t n = (size_t)o->ranks, rc = (size_t)o->m / (n * o->S);
  size_t s = p / (n * rc), r = p / rc % n, i = p % rc;
  return r * ((size_t)o->m / n) + s * rc + i;
}

ARGUS_HARNESS_MAIN(int argc, char **argv) {
  opts o;
  int rc = 1, ndev = 0, ok = 1, n = 0;
  if (parse(argc, argv, &o))
    return 2;
  ag_host *host = NULL;
  ag_host_module *mod = NULL;
  ag_host_kernel *k0 = NULL;
  rank rk[MAXR];
  memset(rk, 0, sizeof rk);
  char *defmod = o.module ? NULL : default_module(argv[0]);
  const char *module = o.module ? o.module : defmod;
  float *ha = NULL, *hb = NULL, *hc = NULL, *hr = NULL;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
    fprintf(stderr, "overlap: no CUDA device\n");
    free(defmod);
    return 77;
  }
  if (!o.ranks)
    o.ranks = ndev < MAXR ? ndev : MAXR;
  if (o.ranks > ndev || o.ranks > MAXR) {
    fprintf(stderr, "overlap: --ranks %d needs %d GPUs, %d visible\n", o.ranks, o.ranks, ndev);
    free(defmod);
    return 77;
  }
  if (o.m % (o.ranks * o.S * TILE)) {
    free(defmod);
    return usage(argv[0]);
  }
  AH(ag_host_open(&host));
  AH(ag_host_load(host, module, &mod));
  AH(ag_host_kernel_get(mod, "overlap_gemm", &k0));
  n = o.ranks;
  size_t shard = (size_t)o.m / n * o.k, full = (size_t)o.m * o.k, bsz = (size_t)o.k * o.n,
         csz = (size_t)o.m * o.n;
  ha = malloc(full * sizeof *ha), hb = malloc(bsz * sizeof *hb);
  hc = malloc(csz * sizeof *hc), hr = malloc(csz * sizeof *hr);
  if (!ha || !hb || !hc || !hr) {
    fprintf(stderr, "overlap: out of host memory\n");
    goto out;
  }
  for (size_t i = 0; i < full; i++)
    ha[i] = val((unsigned)i, 1);
  for (size_t i = 0; i < bsz; i++)
    hb[i] = val((unsigned)i, 2);
  int devs[MAXR];
  ncclUniqueId id, id_ref;
  NC(ncclGetUniqueId(&id));
  NC(ncclGetUniqueId(&id_ref));
  for (int i = 0; i < n; i++) {
    rank *r = &rk[i];
    r->dev = devs[i] = i;
    CK(cudaSetDevice(i));
    CK(cudaDeviceGetAttribute(&r->sms, cudaDevAttrMultiProcessorCount, i));
    CK(cudaMalloc((void **)&r->a_shard, shard * sizeof(float)));
    CK(cudaMalloc((void **)&r->a_full, full * sizeof(float)));
    CK(cudaMalloc((void **)&r->b, bsz * sizeof(float)));
    CK(cudaMalloc((void **)&r->c, csz * sizeof(float)));
    CK(cudaMalloc((void **)&r->c_ref, csz * sizeof(float)));
    CK(cudaMemcpy(r->a_shard, ha + i * shard, shard * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(r->b, hb, bsz * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaStreamCreateWithFlags(&r->comm, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&r->comp, cudaStreamNonBlocking));
    for (int s = 0; s < o.S; s++)
      CK(cudaEventCreateWithFlags(&r->ev[s], cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&r->done, cudaEventDisableTiming));
    if (i > 0) { /* rank 0's module is the host runtime's (ag_host_open's device 0) */
      CK(cudaLibraryLoadFromFile(&r->lib, module, NULL, NULL, 0, NULL, NULL, 0));
      CK(cudaLibraryGetKernel(&r->fn, r->lib, "overlap_gemm"));
    }
  }
  /* the communicators: R CTAs (the SM reservation), and NCCL's default */
  NC(ncclGroupStart());
  for (int i = 0; i < n; i++) {
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.minCTAs = cfg.maxCTAs = o.R;
    CK(cudaSetDevice(i));
    NC(ncclCommInitRankConfig(&rk[i].nc, n, id, i, &cfg));
  }
  NC(ncclGroupEnd());
  NC(ncclGroupStart());
  for (int i = 0; i < n; i++) {
    CK(cudaSetDevice(i));
    NC(ncclCommInitRank(&rk[i].nc_ref, n, id_ref, i));
  }
  NC(ncclGroupEnd());
  (void)devs;
  double tp = 0, tr = 0;
  /* a warm-up of each path, then the timed iterations */
  if ((o.mode != 2 && pipeline(host, k0, rk, &o)) || (o.mode != 1 && reference(host, k0, rk, &o)) ||
      sync_all(rk, n)) {
    fprintf(stderr, "overlap: the warm-up failed\n");
    goto out;
  }
  if (o.mode != 2) {
    double t0 = now_ms();
    for (int it = 0; it < o.iters; it++)
      if (pipeline(host, k0, rk, &o)) {
        fprintf(stderr, "overlap: pipeline iteration %d failed\n", it);
        goto out;
      }
    if (sync_all(rk, n))
      goto out;
    tp = (now_ms() - t0) / o.iters;
  }
  if (o.mode != 1) {
    double t0 = now_ms();
    for (int it = 0; it < o.iters; it++)
      if (reference(host, k0, rk, &o)) {
        fprintf(stderr, "overlap: reference iteration %d failed\n", it);
        goto out;
      }
    if (sync_all(rk, n))
      goto out;
    tr = (now_ms() - t0) / o.iters;
  }
  /* the check: pipeline == reference bit for bit on every rank; the
   * reference against the CPU on sampled entries */
  if (o.mode == 0) {
    for (int i = 0; i < n && ok; i++) {
      CK(cudaSetDevice(i));
      CK(cudaMemcpy(hc, rk[i].c, csz * sizeof(float), cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(hr, rk[i].c_ref, csz * sizeof(float), cudaMemcpyDeviceToHost));
      for (size_t p = 0; p < (size_t)o.m && ok; p++)
        if (memcmp(hc + p * o.n, hr + orig_row(p, &o) * o.n, (size_t)o.n * sizeof(float))) {
          fprintf(stderr, "overlap: rank %d: pipelined row %zu differs from the reference's "
                          "row %zu\n", i, p, orig_row(p, &o));
          ok = 0;
        }
    }
    for (int t = 0; t < 64 && ok; t++) {
      size_t row = (size_t)(t * 7919) % (size_t)o.m, col = (size_t)(t * 104729) % (size_t)o.n;
      double want = 0;
      for (int kk = 0; kk < o.k; kk++)
        want += (double)ha[row * o.k + kk] * hb[(size_t)kk * o.n + col];
      if (fabs(want - hr[row * o.n + col]) > 1e-3 * (1 + fabs(want))) {
        fprintf(stderr, "overlap: C[%zu][%zu] = %g, the CPU says %g\n", row, col,
                hr[row * o.n + col], want);
        ok = 0;
      }
    }
  }
  CK(cudaSetDevice(0)); /* the host runtime's device (ag_host_open's context) */
  AH(ag_host_finish(host));
  double flops = 2.0 * o.m * o.n * o.k * n;
  printf("{\"S\":%d,\"R\":%d,\"P\":%d,\"ranks\":%d,\"m\":%d,\"n\":%d,\"k\":%d,\"iters\":%d,"
         "\"pipeline_ms\":%.4f,\"reference_ms\":%.4f,\"speedup\":%.4f,\"tflops\":%.3f,"
         "\"check\":\"%s\"}\n",
         o.S, o.R, o.P, n, o.m, o.n, o.k, o.iters, tp, tr, tp > 0 && tr > 0 ? tr / tp : 0,
         tp > 0 ? flops / (tp * 1e9) : 0, o.mode ? "skipped" : ok ? "ok" : "failed");
  rc = ok ? 0 : 1;
out:
  for (int i = 0; i < n && i < MAXR; i++) {
    rank *r = &rk[i];
    if (r->nc)
      ncclCommDestroy(r->nc);
    if (r->nc_ref)
      ncclCommDestroy(r->nc_ref);
    cudaSetDevice(i);
    cudaFree(r->a_shard), cudaFree(r->a_full), cudaFree(r->b), cudaFree(r->c), cudaFree(r->c_ref);
    if (r->lib)
      cudaLibraryUnload(r->lib);
  }
  ag_host_close(host);
  free(ha), free(hb), free(hc), free(hr), free(defmod);
  return rc;
}
