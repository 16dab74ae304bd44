/*
 * trace_overhead.c — what reference tracing costs, measured side by side in
 * one run on the paper's overhead microbenchmark (examples/overhead: 128 CTAs
 * x 256 threads, 64 occurrences of region `step` inside region `work`).
 *
 * Three builds of the same PTX, compiled here through nvJitLink exactly as
 * `argus trace` compiles them: trace-free (the module unchanged), anchors
 * (per-warp entry/exit anchors only) and traced (a record per region
 * occurrence: 65 per warp). The traced builds record into a bound buffer on
 * every launch, as under `argus trace`. Samples rotate through the builds;
 * each sample is CUDA events around a batch of back-to-back launches (event
 * resolution is coarse, batches make it fine), and each build's figure is
 * the median over samples. Reported per (type, inner): trace-free time,
 * added time of anchors, of the probes without stores (traced-nostore: the
 * traced cubin bound with capacity 0) and of full tracing, the added cycles
 * per record per warp (all added time x SM clock / 65: an upper bound, as it
 * includes the per-warp fixed cost), the noise (difference of
 * two halves of the trace-free samples), and the paired estimate of full
 * tracing's added time: the median of the per-sample differences traced -
 * trace-free (the two run back to back in every sample, so drift over the
 * run cancels) with its 95 % confidence interval. The verdicts on the
 * goal are given for both estimates. Results are checked: traced outputs
 * equal trace-free outputs bit for bit, every warp wrote 65 records, none
 * dropped, and the records are the expected sequence.
 *
 * Goal (issue 4), one line each (goal.h): full tracing adds at most 1.1 us
 * at inner 8..512, by the difference of medians and by the paired
 * estimate. The added share on kernels of 0.5 ms or more is printed with no
 * goal: the former 0.1 % target is retired (issue 17; docs/tracing.md).
 *
 *   trace_overhead [--ptx FILE] [--samples N] [--batch B] [--dump DIR]
 *                  [--inners N,N,...] [--candidate NAME=FILE[:check]]...
 * A candidate is a ready-made traced module (PTX with the descriptor
 * `__argus_trace`), e.g. a probe design from bench/explore/probe_designs.py:
 * it is compiled as is, bound like the traced build and timed in the same
 * rotation; `:check` also checks its records (the evidence layout).
 * Exit 0: figures printed, all checks passed and the goal met; 1: a check
 * failed or the goal was not met; 77: no GPU.
 */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argus/collect.h"
#include "argus/evidence.h"
#include "argus/variant.h"
#include "goal.h"

#define CTAS 128
#define THREADS 256
#define WARPS (CTAS * THREADS / 32)
#define OCC 64
#define RECS (OCC + 1) /* one record per occurrence: step x 64, then work */
#define CAP 256
#define TABLE 4096
#define NB 4
#define MAXB (NB + 12)

static const char *bname[MAXB] = {"trace-free", "anchors", "traced", "traced-nostore"};

#define CK(call)                                                                   \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      fprintf(stderr, "trace_overhead: %s failed: %s (%s)\n", #call,               \
              cudaGetErrorName(e_), cudaGetErrorString(e_));                       \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_dbl);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The paired estimate of what build a adds to build b: the median over
 * samples of a[s] - b[s] (in each sample the builds run back to back, so
 * drift over the run cancels), and a distribution-free 95 % confidence
 * interval for that median from the order statistics of the differences
 * (1-based ranks r = floor(n/2 - 0.98 sqrt(n)) and n + 1 - r, the normal
 * approximation to the binomial). */
static void paired(const double *a, const double *b, int n, double *med, double *lo,
                   double *hi) {
  double *d = malloc(sizeof(double) * (size_t)n);
  if (!d) {
    fprintf(stderr, "trace_overhead: out of memory\n");
    exit(1);
  }
  for (int s = 0; s < n; s++)
    d[s] = a[s] - b[s];
  *med = median(d, n); /* sorts d */
  int k = (int)floor(0.5 * n - 0.98 * sqrt((double)n)) - 1; /* n = 41: x(14), x(28) */
  k = k < 0 ? 0 : k;
  *lo = d[k];
  *hi = d[n - 1 - k];
  free(d);
}

typedef struct build {
  cudaLibrary_t lib;
  cudaKernel_t k[2]; /* compute, memory */
  void *records, *meta;
  int regs[2];
} build;

/* which < NB: a build of the module's PTX; otherwise a candidate whose PTX
 * is used as is */
static void make_build(build *b, const char *ptx, size_t len, int which, const char *dump) {
  ag_variant_opts o = {which == 0 ? AG_VARIANT_TRACE_FREE : AG_VARIANT_TRACED, NULL, 0,
                       which == 1};
  /* traced-nostore: the traced cubin bound with capacity 0, so every probe
   * runs but stores no record: separates the stores' cost from the rest */
  ag_variant *v = NULL;
  ag_cubin *c = NULL;
  ag_diags d;
  ag_diags_init(&d);
  const char *vptx = ptx;
  size_t vlen = len;
  int bad = 0;
  if (which < NB) {
    bad = ag_variant_make(ptx, len, "overhead.ptx", &o, &d, &v) != AG_OK;
    if (!bad) {
      vptx = v->ptx;
      vlen = v->len;
    }
  }
  if (bad || ag_jit_compile(vptx, vlen, bname[which], "sm_90a", &d, &c)) {
    ag_str s = AG_STR_INIT;
    ag_diags_format(&d, &s);
    fprintf(stderr, "trace_overhead: cannot build %s:\n%s", bname[which], ag_str_cstr(&s));
    exit(1);
  }
  for (int i = 0; i < c->nfuncs; i++)
    b->regs[strstr(c->funcs[i].name, "memory") ? 1 : 0] = c->funcs[i].registers;
  if (dump && which != 3) {
    char path[4096];
    snprintf(path, sizeof path, "%s/overhead.%s.cubin", dump, bname[which]);
    ag_file_write_atomic(path, c->data, c->len);
    snprintf(path, sizeof path, "%s/overhead.%s.ptx", dump, bname[which]);
    ag_file_write_atomic(path, vptx, vlen);
  }
  CK(cudaLibraryLoadData(&b->lib, c->data, NULL, NULL, 0, NULL, NULL, 0));
  CK(cudaLibraryGetKernel(&b->k[0], b->lib, "overhead_compute"));
  CK(cudaLibraryGetKernel(&b->k[1], b->lib, "overhead_memory"));
  void *desc = NULL;
  size_t bytes = 0;
  if (which >= NB && cudaLibraryGetGlobal(&desc, &bytes, b->lib, AG_EV_DESC_SYMBOL)) {
    cudaGetLastError(); /* a candidate without probes (code placement) */
    which = 0;
  }
  if (which) {
    CK(cudaLibraryGetGlobal(&desc, &bytes, b->lib, AG_EV_DESC_SYMBOL));
    if (bytes != AG_EV_DESC_BYTES) {
      fprintf(stderr, "trace_overhead: descriptor is %zu bytes\n", bytes);
      exit(1);
    }
    size_t rb = (size_t)WARPS * CAP * AG_EV_RECORD_BYTES;
    CK(cudaMalloc(&b->records, rb));
    CK(cudaMemset(b->records, 0, rb));
    CK(cudaMalloc(&b->meta, (size_t)WARPS * AG_EV_META_BYTES));
    ag_ev_desc dd = {(uint64_t)(uintptr_t)b->records, (uint64_t)(uintptr_t)b->meta,
                     which == 3 ? 0u : CAP, 1, 0, 0};
    CK(cudaMemcpy(desc, &dd, sizeof dd, cudaMemcpyHostToDevice));
  }
  ag_cubin_free(c);
  ag_variant_free(v);
  ag_diags_release(&d);
}

/* Checks the last launch's records: 65 per warp, none dropped, step's 64
 * occurrences with iterations 0..63 in order after work's record (records
 * are taken when occurrences begin), work containing them.
 * Returns the median SM clock from the anchors (Hz). */
static double check_records(build *b, int type, int *bad) {
  static ag_ev_meta meta[WARPS];
  static ag_ev_record rec[WARPS * CAP];
  CK(cudaMemcpy(meta, b->meta, sizeof meta, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(rec, b->records, sizeof rec, cudaMemcpyDeviceToHost));
  static double hz[WARPS];
  /* sites (begin markers): compute's work 0, step 1; memory's work 2, step 3 */
  uint32_t s0 = type == 0 ? 0 : 2;
  for (int w = 0; w < WARPS; w++) {
    const ag_ev_meta *m = &meta[w];
    hz[w] = (double)(m->clock_exit - m->clock_entry) * 1e9 /
            (double)(m->gtime_exit - m->gtime_entry + 1);
    if (!(m->flags & AG_EV_EXITED) || m->count != RECS || m->max_count != RECS) {
      if (*bad < 5)
        fprintf(stderr, "trace_overhead: warp %d: flags %u count %u max %u (want %d)\n", w,
                m->flags, m->count, m->max_count, RECS);
      ++*bad;
      continue;
    }
    const ag_ev_record *wk = &rec[(size_t)w * CAP], *r = wk + 1;
    int ok = wk->site == s0 && ag_ev_record_iter(wk) == AG_EV_NO_ITER &&
             ag_ev_record_ended(wk) && (uint32_t)(r[0].begin - wk->begin) < (1u << 31) &&
             (uint32_t)(wk->end - r[OCC - 1].end) < (1u << 31);
    for (int i = 0; i < OCC && ok; i++)
      ok = r[i].site == s0 + 1 && ag_ev_record_iter(&r[i]) == (uint32_t)i &&
           ag_ev_record_ended(&r[i]) && (uint32_t)(r[i].end - r[i].begin) < (1u << 31) &&
           (i == 0 || (uint32_t)(r[i].begin - r[i - 1].end) < (1u << 31));
    if (!ok) {
      if (*bad < 5)
        fprintf(stderr, "trace_overhead: warp %d: unexpected record sequence\n", w);
      ++*bad;
    }
  }
  return median(hz, WARPS);
}

int main(int argc, char **argv) {
  const char *ptxpath = NULL, *dump = NULL;
  int samples = 41, batch = 10;
  /* 544: the compute kernel's shortest of 0.5 ms or more (0.51 ms), where
   * the added share is largest */
  int inners[16] = {8, 16, 32, 64, 128, 256, 512, 544, 1024, 4096}, ninner = 10;
  const char *cpath[MAXB] = {0};
  int ccheck[MAXB] = {0}, nb = NB;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--ptx") && i + 1 < argc)
      ptxpath = argv[++i];
    else if (!strcmp(argv[i], "--samples") && i + 1 < argc)
      samples = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
      batch = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--dump") && i + 1 < argc)
      dump = argv[++i];
    else if (!strcmp(argv[i], "--inners") && i + 1 < argc) {
      char *p = argv[++i];
      for (ninner = 0; *p && ninner < 16; ninner++) {
        inners[ninner] = (int)strtol(p, &p, 10);
        if (inners[ninner] < 1 || (*p && *p++ != ','))
          return 2;
      }
    } else if (!strcmp(argv[i], "--candidate") && i + 1 < argc && nb < MAXB) {
      char *spec = argv[++i], *eq = strchr(spec, '=');
      if (!eq)
        return 2;
      *eq = 0;
      char *colon = strrchr(eq + 1, ':');
      if (colon && !strcmp(colon, ":check")) {
        *colon = 0;
        ccheck[nb] = 1;
      }
      bname[nb] = spec;
      cpath[nb++] = eq + 1;
    } else {
      fprintf(stderr,
              "usage: %s [--ptx FILE] [--samples N] [--batch B] [--dump DIR] "
              "[--inners N,...] [--candidate NAME=FILE[:check]]...\n",
              argv[0]);
      return 2;
    }
  }
  if (samples < 3 || batch < 1)
    return 2;
  if (!dump && getenv("ARGUS_BENCH_DUMP") && *getenv("ARGUS_BENCH_DUMP"))
    dump = getenv("ARGUS_BENCH_DUMP");
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    printf("trace_overhead: no GPU, skipped\n");
    return 77;
  }
  char defptx[4096];
  if (!ptxpath) {
    const char *bd = getenv("ARGUS_BUILD_DIR");
    snprintf(defptx, sizeof defptx, "%s/tests/data/ptx/overhead.ptx", bd ? bd : "build");
    ptxpath = defptx;
  }
  char *ptx = NULL;
  size_t len = 0;
  if (ag_file_read(ptxpath, &ptx, &len)) {
    fprintf(stderr, "trace_overhead: cannot read %s\n", ptxpath);
    return 1;
  }
  struct cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  build b[MAXB];
  memset(b, 0, sizeof b);
  for (int i = 0; i < NB; i++)
    make_build(&b[i], ptx, len, i, dump);
  for (int i = NB; i < nb; i++) {
    char *cp = NULL;
    size_t cl = 0;
    if (ag_file_read(cpath[i], &cp, &cl)) {
      fprintf(stderr, "trace_overhead: cannot read %s\n", cpath[i]);
      return 1;
    }
    make_build(&b[i], cp, cl, i, dump);
    ag_free(cp);
  }
  printf("device: %s, %d SMs; %d CTAs x %d threads, %d occurrences, %d records per warp; "
         "%d samples x %d launches per build; registers compute %d/%d/%d memory %d/%d/%d\n",
         prop.name, prop.multiProcessorCount, CTAS, THREADS, OCC, RECS, samples, batch,
         b[0].regs[0], b[1].regs[0], b[2].regs[0], b[0].regs[1], b[1].regs[1], b[2].regs[1]);

  const int n = CTAS * THREADS;
  float *seed = malloc(sizeof(float) * n), *table = malloc(sizeof(float) * TABLE);
  float *out0 = malloc(sizeof(float) * n), *out1 = malloc(sizeof(float) * n);
  double *t[MAXB];
  for (int i = 0; i < nb; i++)
    t[i] = malloc(sizeof(double) * (size_t)samples);
  for (int i = 0; i < n; i++)
    seed[i] = (float)((i * 37) % 101) / 101.0f;
  for (int i = 0; i < TABLE; i++)
    table[i] = (float)((i * 53) % 97) / 97.0f;
  float *d_seed, *d_table, *d_out[MAXB];
  CK(cudaMalloc((void **)&d_seed, sizeof(float) * n));
  CK(cudaMalloc((void **)&d_table, sizeof(float) * TABLE));
  for (int i = 0; i < nb; i++)
    CK(cudaMalloc((void **)&d_out[i], sizeof(float) * n));
  CK(cudaMemcpy(d_seed, seed, sizeof(float) * n, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_table, table, sizeof(float) * TABLE, cudaMemcpyHostToDevice));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));

  int bad = 0;
  double worst_small = 0, worst_big_pct = 0, worst_small_p = 0, worst_small_hi = 0;
  double worst_big_p = 0, worst_big_hi = 0;
  dim3 grid = {CTAS, 1, 1}, block = {THREADS, 1, 1};
  printf("\n%-7s %6s %11s %11s %11s %11s %8s %11s %9s %8s %9s %s\n", "type", "inner", "free_us",
         "+anchors_us", "+nostore_us", "+traced_us", "added_%", "cyc/rec<=", "noise_us",
         "clk_MHz", "paired_us", "paired 95% CI");
  for (int type = 0; type < 2; type++) {
    for (int ii = 0; ii < ninner; ii++) {
      int inner = inners[ii], tsize = TABLE;
      void *args[MAXB][4];
      for (int i = 0; i < nb; i++) {
        args[i][0] = &d_out[i];
        args[i][1] = type == 0 ? (void *)&d_seed : (void *)&d_table;
        args[i][2] = type == 0 ? (void *)&inner : (void *)&tsize;
        args[i][3] = &inner;
      }
      int bt = inner >= 1024 ? (batch + 4) / 5 : batch;
      for (int s = -3; s < samples; s++) { /* 3 warm-up rounds */
        for (int j = 0; j < nb; j++) {
          int i = (s + 3 + j) % nb; /* rotate which build goes first */
          CK(cudaEventRecord(e0, 0));
          for (int k = 0; k < bt; k++)
            CK(cudaLaunchKernel((const void *)b[i].k[type], grid, block, args[i], 0, 0));
          CK(cudaEventRecord(e1, 0));
          CK(cudaEventSynchronize(e1));
          float ms = 0;
          CK(cudaEventElapsedTime(&ms, e0, e1));
          if (s >= 0)
            t[i][s] = ms * 1000.0 / bt;
        }
      }
      CK(cudaGetLastError());
      /* the probes must not change what the kernel computes */
      CK(cudaMemcpy(out0, d_out[0], sizeof(float) * n, cudaMemcpyDeviceToHost));
      for (int i = 1; i < nb; i++) {
        CK(cudaMemcpy(out1, d_out[i], sizeof(float) * n, cudaMemcpyDeviceToHost));
        if (memcmp(out0, out1, sizeof(float) * n)) {
          fprintf(stderr, "trace_overhead: %s output differs from trace-free (%s inner %d)\n",
                  bname[i], type ? "memory" : "compute", inner);
          bad++;
        }
      }
      double hz = check_records(&b[2], type, &bad);
      for (int i = NB; i < nb; i++)
        if (ccheck[i])
          check_records(&b[i], type, &bad);
      /* noise: the two halves of the trace-free samples */
      int h = samples / 2;
      double *half = malloc(sizeof(double) * (size_t)samples);
      memcpy(half, t[0], sizeof(double) * (size_t)h);
      double m1 = median(half, h);
      memcpy(half, t[0] + h, sizeof(double) * (size_t)(samples - h));
      double m2 = median(half, samples - h);
      free(half);
      double med[MAXB], pm[MAXB], lo[MAXB], hi[MAXB];
      for (int i = 0; i < nb; i++)
        med[i] = median(t[i], samples);
      for (int i = 0; i < nb; i++)
        paired(t[i], t[0], samples, &pm[i], &lo[i], &hi[i]);
      double added = med[2] - med[0], anch = med[1] - med[0];
      /* all added time charged to the records: an upper bound per record */
      double cyc = added * 1e-6 * hz / RECS;
      double pct = 100.0 * added / med[0];
      printf("%-7s %6d %11.3f %11.3f %11.3f %11.3f %8.3f %11.2f %9.3f %8.1f %9.3f %8.3f..%.3f\n",
             type ? "memory" : "compute", inner, med[0], anch, med[3] - med[0], added, pct, cyc,
             fabs(m1 - m2), hz / 1e6, pm[2], lo[2], hi[2]);
      printf("@json {\"bench\":\"trace_overhead\",\"type\":\"%s\",\"inner\":%d,\"free_us\":%.4f,"
             "\"anchors_added_us\":%.4f,\"nostore_added_us\":%.4f,\"traced_added_us\":%.4f,"
             "\"added_pct\":%.4f,\"cycles_per_record\":%.3f,\"noise_us\":%.4f,\"sm_mhz\":%.1f,"
             "\"paired_us\":%.4f,\"paired_ci95_us\":[%.4f,%.4f]}\n",
             type ? "memory" : "compute", inner, med[0], anch, med[3] - med[0], added, pct, cyc,
             fabs(m1 - m2), hz / 1e6, pm[2], lo[2], hi[2]);
      for (int i = NB; i < nb; i++) {
        printf("  candidate %-16s added %8.3f us  (%6.3f %%)  paired %8.3f us (%.3f..%.3f)\n",
               bname[i], med[i] - med[0], 100.0 * (med[i] - med[0]) / med[0], pm[i], lo[i],
               hi[i]);
        printf("@json {\"bench\":\"trace_overhead\",\"type\":\"%s\",\"inner\":%d,"
               "\"candidate\":\"%s\",\"added_us\":%.4f,\"paired_us\":%.4f,"
               "\"paired_ci95_us\":[%.4f,%.4f]}\n",
               type ? "memory" : "compute", inner, bname[i], med[i] - med[0], pm[i], lo[i], hi[i]);
      }
      if (inner <= 512) {
        worst_small = fmax(worst_small, added);
        worst_small_p = fmax(worst_small_p, pm[2]);
        worst_small_hi = fmax(worst_small_hi, hi[2]);
      }
      if (med[0] >= 500.0) {
        worst_big_pct = fmax(worst_big_pct, pct);
        worst_big_p = fmax(worst_big_p, 100.0 * pm[2] / med[0]);
        worst_big_hi = fmax(worst_big_hi, 100.0 * hi[2] / med[0]);
      }
    }
  }
  /* the goal (issue 4): at most 1.1 us added at inner 8..512, by both the
   * difference of medians and the paired estimate; the paired interval's
   * upper end is reported beside it. The former "<= 0.1 % on kernels of
   * 0.5 ms or more" is retired (docs/tracing.md, bench/RESULTS.md "The
   * floor"): no probe that records both ends of each occurrence meets it
   * here; the share is printed as a figure, with no goal. */
  printf("\nworst added time at inner 8..512: %.3f us; paired: %.3f us, 95%% CI upper %.3f us "
         "(%s)\n",
         worst_small, worst_small_p, worst_small_hi,
         bench_paired_verdict(worst_small_p, worst_small_hi, 1.1));
  printf("worst added share on kernels >= 0.5 ms: %.4f %%; paired: %.4f %%, 95%% CI upper "
         "%.4f %% (no goal)\n",
         worst_big_pct, worst_big_p, worst_big_hi);
  int met = bench_goal("traced added time at inner 8..512, difference of medians", worst_small,
                       0, 1.1, "us");
  met &= bench_goal("traced added time at inner 8..512, paired estimate", worst_small_p, 0, 1.1,
                    "us");
  printf("checks: %s\n", bad ? "FAILED" : "traced outputs equal trace-free, 65 records per "
                                          "warp, none dropped, sequences as expected");
  for (int i = 0; i < nb; i++) {
    cudaFree(d_out[i]);
    cudaFree(b[i].records);
    cudaFree(b[i].meta);
    cudaLibraryUnload(b[i].lib);
    free(t[i]);
  }
  cudaFree(d_seed);
  cudaFree(d_table);
  free(seed);
  free(table);
  free(out0);
  free(out1);
  ag_free(ptx);
  return bad || !met ? 1 : 0;
}
