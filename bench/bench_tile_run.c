/*
 * bench_tile_run.c — the tile programs as kernels, side by side with the
 * best library code on the same GPU in one run (issue 20, bench/RESULTS.md):
 *
 *   gemm.tile (mma.sync, as written) and wgmma_gemm.tile (one warpgroup's
 *   wgmma, issue 23) vs cuBLAS bf16 -> f32 at 4096^3 and 8192^3: TFLOP/s
 *   and the ratio, each result checked against cuBLAS;
 *   attention.tile vs torch's SDPA backends (bench/explore/sdpa_bench.py)
 *   at head dim 64 and 128 (d=128: the program at --set d=128), on the same
 *   inputs (the kernel's Q, K, V, written to a temporary directory), and its
 *   O compared with SDPA's in f32 element by element (the tolerance of
 *   tests/tile/attention_ref.h);
 *   lowering + NVRTC time per example, cold (an empty cache) and cached.
 *
 * Timing is ag_tile_run_exec's: warm-up, a memset of twice the L2 before
 * each sample, CUDA events, the median of the samples. Goals: the kernels
 * match cuBLAS, attention.tile matches SDPA at d = 64 and 128, and a
 * cached build takes under 0.5 s. Without a GPU: the
 * build figures only, then exit 77.
 * attention_hopper.tile (TMA, warp-specialized, wgmma) and
 * attention_hopper_pipe.tile (softmax overlapped with P V) the same way,
 * non-causal and causal (SDPA with is_causal; FLOPs halved).
 * Usage: bench_tile_run [SAMPLES] [hopper] ("hopper": attention_hopper.tile
 * against SDPA only)
 */
#include "argus/tile_run.h"
#include "bench_util.h"
#include "goal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int run(const char *file, const char *spec, const ag_tile_exec_opts *o,
               ag_tile_exec_result *r, double *build_s, int *cached) {
  int rc = ag_tile_run_file(bench_src(file), spec, o, NULL, r, build_s, cached);
  if (rc)
    printf("%s %s: %s: %s\n", file, spec, ag_strerror(rc), r->err);
  return rc;
}

/* dir/name gets n bytes of p; 0 or -1. */
static int write_file(const char *dir, const char *name, const void *p, size_t n) {
  char path[1200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f)
    return -1;
  size_t w = fwrite(p, 1, n, f);
  return fclose(f) == 0 && w == n ? 0 : -1;
}

/* One attention program (examples/tile/FILE) at d = 64 and 128 against
 * torch's SDPA backends (bench/explore/sdpa_bench.py) on the program's own
 * inputs, causal or not: the times, the ratios, and O compared with SDPA's
 * in f32. Causal FLOPs are half the non-causal (the keys above the diagonal
 * are skipped), as FlashAttention counts them. 1 when every comparison was
 * made and matched. */
static int attention_vs_sdpa(const char *file, int causal, int samples) {
  enum { SQ = 4096, SKV = 4096, HQ = 32, HKV = 8 };
  int ok = 1;
  printf("\n%s (%s, bf16, sq = skv = %d, %d query heads on %d kv heads, batch 1; "
         "FLOPs = 4 sq skv d hq%s):\n", file, causal ? "causal" : "non-causal", SQ, HQ, HKV,
         causal ? " / 2" : "");
  double tile_ms[2] = {0, 0}; /* d = 64, 128 */
  char io[] = "/tmp/argus-bench-sdpa-XXXXXX"; /* the kernel's Q, K, V and O, for SDPA */
  int have_io = mkdtemp(io) != NULL;
  char path[96];
  snprintf(path, sizeof path, "examples/tile/%s", file);
  for (int di = 0; di < 2; di++) {
    int d = di ? 128 : 64;
    char spec[128];
    snprintf(spec, sizeof spec, "sq=%d,hq=%d,hkv=%d,skv=%d,d=%d%s", SQ, HQ, HKV, SKV, d,
             causal ? ",causal=1" : "");
    ag_tile_exec_opts o;
    memset(&o, 0, sizeof o);
    o.bench = 1;
    o.samples = samples;
    o.keep_tensors = 1;
    o.flops = 4ull * SQ * SKV * (unsigned long long)d * HQ / (causal ? 2 : 1);
    ag_tile_exec_result r;
    if (run(path, spec, &o, &r, NULL, NULL) == 0) {
      tile_ms[di] = r.kernel.median_ms;
      printf("  %s d=%d: median %.4f ms (p10 %.4f, p90 %.4f) %.1f TFLOP/s; SM %d MHz\n", file,
             d, r.kernel.median_ms, r.kernel.p10_ms, r.kernel.p90_ms, r.kernel.tflops,
             r.sm_mhz);
      printf("@json {\"bench\":\"tile_attention\",\"file\":\"%s\",\"causal\":%d,"
             "\"d\":%d,\"tile_ms\":%.5f}\n",
             file, causal, d, r.kernel.median_ms);
      /* Q, K, V, O: (sq, hq, d), (skv, hkv, d), (skv, hkv, d), (sq, hq, d) bf16 */
      size_t qb = (size_t)SQ * HQ * d * 2, kb = (size_t)SKV * HKV * d * 2;
      const size_t bytes[4] = {qb, kb, kb, qb};
      static const char *const nm[4] = {"q", "k", "v", "o"};
      for (int t = 0; have_io && t < 4; t++) {
        char f[32];
        snprintf(f, sizeof f, "d%d.%s", d, nm[t]);
        if (!r.tensors || r.ntensors < 4 || write_file(io, f, r.tensors[t], bytes[t]))
          printf("  %s d=%d: cannot write %s/%s for SDPA\n", file, d, io, f);
      }
      ag_tile_exec_result_release(&r);
    } else {
      ok = 0;
    }
  }
  char a[5][16];
  snprintf(a[0], 16, "%d", SQ);
  snprintf(a[1], 16, "%d", SKV);
  snprintf(a[2], 16, "%d", HQ);
  snprintf(a[3], 16, "%d", HKV);
  snprintf(a[4], 16, "%d", samples);
  const char *argv2[] = {"python3", bench_src("bench/explore/sdpa_bench.py"), a[0], a[1], a[2],
                         a[3], a[4], "64", "128", "--inputs", io, causal ? "--causal" : NULL,
                         NULL};
  ag_str out = AG_STR_INIT;
  ag_proc_opts po = {.argv = argv2, .capture_out = &out, .capture_err = &out, .timeout_s = 300};
  ag_proc_result pr;
  if (ag_proc_run(&po, &pr))
    printf("  sdpa: not measured (no python3)\n");
  int compared[2] = {0, 0};
  for (char *save = NULL, *l = strtok_r(out.len ? out.p : NULL, "\n", &save); l;
       l = strtok_r(NULL, "\n", &save)) {
    printf("  %s\n", l);
    double ms = 0;
    unsigned long long off = 0;
    const char *m = strstr(l, "median_ms="), *c = strstr(l, "elements_off=");
    int di = strstr(l, "d=64 ") ? 0 : strstr(l, "d=128 ") ? 1 : -1;
    if (di >= 0 && tile_ms[di] > 0 && m && sscanf(m, "median_ms=%lf", &ms) == 1)
      printf("    ratio %s / this backend: %.3f\n", file, ms / tile_ms[di]);
    if (di >= 0 && !strncmp(l, "sdpa check ", 11) && c &&
        sscanf(c, "elements_off=%llu", &off) == 1) {
      char g[128];
      snprintf(g, sizeof g, "%s d=%d%s matches SDPA (elements off)", file, di ? 128 : 64,
               causal ? " causal" : "");
      ok &= bench_goal(g, (double)off, 0, 0, "elements");
      compared[di] = 1;
    }
  }
  for (int di = 0; di < 2; di++)
    if (tile_ms[di] > 0 && !compared[di]) {
      printf("%s d=%d: not compared with SDPA (no 'sdpa check' line above)\n", file,
             di ? 128 : 64);
      ok = 0;
    }
  for (int di = 0; have_io && di < 2; di++)
    for (int t = 0; t < 4; t++) {
      char f[1200];
      snprintf(f, sizeof f, "%s/d%d.%c", io, di ? 128 : 64, "qkvo"[t]);
      unlink(f);
    }
  if (have_io)
    rmdir(io);
  ag_str_release(&out);
  return ok;
}

int main(int argc, char **argv) {
  int samples = argc > 1 ? atoi(argv[1]) : 50, ok = 1;
  /* "hopper": only attention_hopper(_pipe).tile against SDPA (the GEMMs and
   * attention.tile skipped) */
  int hopper_only = argc > 2 && !strcmp(argv[2], "hopper");
  /* 1. lowering + NVRTC, cold and cached */
  char cache[] = "/tmp/argus-bench-nvrtc-XXXXXX";
  if (!mkdtemp(cache))
    return 1;
  setenv("ARGUS_CACHE_DIR", cache, 1);
  static const char *const builds[][2] = {{"gemm.tile", "M=64,N=64"},
                                          {"gemm.tile", "M=64,N=64,K=8192"},
                                          {"attention.tile", "sq=64,hq=4,hkv=1"},
                                          {"attention.tile", "sq=64,hq=4,hkv=1,skv=4096"},
                                          {"attention.tile", "sq=64,hq=4,hkv=1,d=128"},
                                          {"attention_hopper.tile", "sq=64,hq=4,hkv=1,d=128"}};
  printf("lowering + NVRTC (parse, lower, bind, PTX; wall clock):\n");
  double worst_cached = 0;
  for (size_t i = 0; i < sizeof builds / sizeof builds[0]; i++) {
    char file[64];
    snprintf(file, sizeof file, "examples/tile/%s", builds[i][0]);
    double cold = 0, warm = 0;
    int c0 = 0, c1 = 0;
    ag_tile_exec_result r;
    if (run(file, builds[i][1], NULL, &r, &cold, &c0) || run(file, builds[i][1], NULL, &r, &warm, &c1))
      ok = 0;
    printf("  %-21s %-28s cold %.3f s%s, cached %.3f s%s\n", builds[i][0], builds[i][1], cold,
           c0 ? " (hit?!)" : "", warm, c1 ? "" : " (miss?!)");
    ok &= !c0 && c1;
    worst_cached = warm > worst_cached ? warm : worst_cached;
  }
  ok &= bench_goal("tile build from the PTX cache (slowest example)", worst_cached, 1, 0.5, "s");

  if (bench_gpu_count() == 0) {
    printf("bench_tile_run: skipped: no GPU\n");
    return 77;
  }
  /* 2. gemm.tile vs cuBLAS */
  if (hopper_only)
    goto attention;
  ag_tile_exec_opts o;
  memset(&o, 0, sizeof o);
  o.bench = 1;
  o.samples = samples;
  o.ref = AG_TILE_REF_CUBLAS;
  printf("\ngemm.tile and wgmma_gemm.tile vs cuBLAS (bf16 in, f32 out, C = A B^T; %d samples, "
         "L2 flushed):\n",
         samples);
  printf("  %-15s %-6s %12s %10s %12s %10s %7s  %s\n", "program", "size", "tile ms", "TFLOP/s",
         "cuBLAS ms", "TFLOP/s", "ratio", "check");
  static const int sizes[] = {4096, 8192};
  /* gemm.tile: mma.sync; wgmma_gemm.tile: one warpgroup's wgmma from
   * swizzled shared tiles (issue 23's starting point) */
  static const char *const gemms[] = {"gemm.tile", "wgmma_gemm.tile"};
  for (int i = 0; i < 4; i++) {
    const char *gf = gemms[i / 2];
    char spec[96], path[64];
    snprintf(spec, sizeof spec, "M=%d,N=%d,K=%d", sizes[i % 2], sizes[i % 2], sizes[i % 2]);
    snprintf(path, sizeof path, "examples/tile/%s", gf);
    ag_tile_exec_result r;
    if (run(path, spec, &o, &r, NULL, NULL)) {
      ok = 0;
      continue;
    }
    printf("  %-15s %-6d %12.4f %10.1f %12.4f %10.1f %7.3f  %llu of %llu elements off (max "
           "error %.3g)\n",
           gf, sizes[i % 2], r.kernel.median_ms, r.kernel.tflops, r.cublas.median_ms,
           r.cublas.tflops,
           r.cublas.median_ms / r.kernel.median_ms, (unsigned long long)r.nbad,
           (unsigned long long)r.nelems, r.max_err);
    printf("         spread: tile p10 %.4f p90 %.4f, cuBLAS p10 %.4f p90 %.4f ms; SM %d MHz "
           "(max %d), memory %d MHz\n",
           r.kernel.p10_ms, r.kernel.p90_ms, r.cublas.p10_ms, r.cublas.p90_ms, r.sm_mhz,
           r.sm_mhz_max, r.mem_mhz);
    char g[96];
    snprintf(g, sizeof g, "%s %d^3 matches cuBLAS (elements off)", gf, sizes[i % 2]);
    ok &= bench_goal(g, (double)r.nbad, 0, 0, "elements");
    printf("@json {\"bench\":\"tile_gemm\",\"file\":\"%s\",\"n\":%d,\"tile_ms\":%.5f,"
           "\"cublas_ms\":%.5f}\n",
           gf, sizes[i % 2], r.kernel.median_ms, r.cublas.median_ms);
  }

  /* 3. attention.tile (non-causal) and attention_hopper.tile (non-causal
   * and causal) vs SDPA */
  ok &= attention_vs_sdpa("attention.tile", 0, samples);
attention:
  ok &= attention_vs_sdpa("attention_hopper.tile", 0, samples);
  ok &= attention_vs_sdpa("attention_hopper.tile", 1, samples);
  ok &= attention_vs_sdpa("attention_hopper_pipe.tile", 0, samples);
  ok &= attention_vs_sdpa("attention_hopper_pipe.tile", 1, samples);
  return ok ? 0 : 1;
}
