/*
 * bench_optimize.c — `argus optimize`'s two searches side by side (issue
 * 24, bench/RESULTS.md): from a deliberately naive tile program, the
 * evidence policy and the blind one, the same trial budget and the same
 * seeds, each run R times in a fresh workspace (repeat k of both with the
 * search's seed k + 1: blind's order, and evidence's ties, differ between repeats), timed at the task's
 * production sizes (time_sizes) and checked at its toy sizes.
 *
 * Per policy: the start's time, the best time reached, the speedup, the
 * trials evidence needs to reach blind's final best and the trials blind
 * needed, the ratio of the best to the hand-written DSL kernel
 * (examples/tile/gemm.tile, attention.tile), to the Hopper DSL kernel
 * (gemm_hopper.tile, attention_hopper.tile) and to the library: cuBLAS for
 * gemm, the fastest of torch's SDPA backends for attention (bench/explore/sdpa_bench.py,
 * on the GPU machine's torch; "n/a" without it), at the same sizes; medians over the repeats with their spread. Goal: evidence
 * reaches blind's final best in fewer trials than blind (the medians over
 * the repeats; within 3 %). Exit 77 without a GPU, 1 when a goal is not met
 * or a run fails.
 *
 * Usage: bench_optimize [--trials N] [--repeats R] [--only gemm_naive|attention_naive]
 *                       [--results bench/RESULTS.md]
 * (--results writes the section "bench_optimize[ NAME]" of the file.)
 */
#include "argus/agent.h"
#include "argus/spec.h"
#include "argus/tile_run.h"
#include "bench_util.h"
#include "goal.h"
#include "optimize_curve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#define MAXT 256 /* trials per run */
#define MAXR 8   /* repeats */
#define TOL 0.03 /* "reached": within 3 % of the target */

/* The value of size NAME in "A=1,B=2", or 0. */
static long size_of(const char *sizes, const char *name) {
  size_t l = strlen(name);
  for (const char *p = sizes; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
    if (!strncmp(p, name, l) && p[l] == '=')
      return strtol(p + l + 1, NULL, 10);
  return 0;
}

/* gemm_hopper.tile's sizes for a gemm task's M, N, K: it counts 128 x 256 block tiles
 * (MT, NT), runs NB persistent blocks (its default, 2, is a checking size: one per SM, at
 * most one per tile) and groups GM block rows (8 as at 4096^3, or the largest power of two
 * dividing MT); 0 where the task's sizes are not whole tiles */
static int gemm_hopper_sizes(const char *tsz, char *out, size_t n) {
  long m = size_of(tsz, "M"), nn = size_of(tsz, "N"), k = size_of(tsz, "K");
  long sms = bench_gpu_sms();
  if (m <= 0 || nn <= 0 || k <= 0 || m % 128 || nn % 256 || sms <= 0)
    return 0;
  long mt = m / 128, nt = nn / 256, gm = 8;
  while (mt % gm)
    gm /= 2;
  snprintf(out, n, "MT=%ld,NT=%ld,K=%ld,NB=%ld,GM=%ld", mt, nt, k, sms < mt * nt ? sms : mt * nt,
           gm);
  return 1;
}

/* attention_hopper.tile takes attention.tile's sizes */
static int same_sizes(const char *tsz, char *out, size_t n) {
  snprintf(out, n, "%s", tsz);
  return 1;
}

static const struct problem {
  const char *name, *task, *hand, *hopper; /* hopper: the Hopper DSL kernel (issue 23) */
  int cublas; /* 1: time cuBLAS beside the hand-written kernel */
  int sdpa;   /* 1: time torch's SDPA backends at the task's sq, skv, hq, hkv, d */
  int (*hopper_sizes)(const char *tsz, char *out, size_t n);
} problems[] = {
    {"gemm_naive", "bench/optimize/gemm_naive.task.json", "examples/tile/gemm.tile",
     "examples/tile/gemm_hopper.tile", 1, 0, gemm_hopper_sizes},
    {"attention_naive", "bench/optimize/attention_naive.task.json",
     "examples/tile/attention.tile", "examples/tile/attention_hopper.tile", 0, 1, same_sizes},
};

typedef struct run_fig {
  int n;                   /* trials, the start included */
  double ms[MAXT], best[MAXT];
  int valid[MAXT];
  double start_ms, final_ms;
} run_fig;

static const char *const policies[2] = {"evidence", "blind"};

/* One run of policy pol in a fresh workspace under dir. */
static int one_run(const ag_opt_task *t, const char *pol, int trials, const char *dir, int k,
                   run_fig *f) {
  char ws[1200], err[2048];
  snprintf(ws, sizeof ws, "%s/%s%d", dir, pol, k);
  ag_store *st = NULL;
  if (ag_store_open(ws, AG_STORE_CREATE, &st)) {
    printf("  %s run %d: cannot open the workspace '%s'\n", pol, k, ws);
    return 1;
  }
  ag_opt_opts o;
  memset(&o, 0, sizeof o);
  o.policy = pol;
  o.trials = trials;
  o.seed = (uint64_t)k + 1; /* repeat k of both policies: the search's seed k + 1 */
  o.kb_dir = bench_src("src/agent/kb");
  o.device = AG_OPT_DEVICE_AUTO;
  ag_opt_result r;
  double t0 = bench_now_ms();
  int rc = ag_opt_run(st, t, &o, &r, err, sizeof err);
  memset(f, 0, sizeof *f);
  if (rc)
    printf("  %s run %d: argus optimize failed: %s\n", pol, k, err);
  for (int i = 0; i < r.ntrials && i < MAXT; i++) {
    ag_opt_trial *x = &r.trials[i];
    f->ms[i] = x->timed ? x->median_ms : 0;
    f->valid[i] = x->valid && x->timed;
    f->n = i + 1;
  }
  opt_best_so_far(f->ms, f->valid, f->n, f->best);
  f->start_ms = f->n ? f->ms[0] : 0;
  f->final_ms = f->n ? f->best[f->n - 1] : 0;
  printf("  %s run %d (%.1f s, %d trials%s):\n", pol, k, (bench_now_ms() - t0) / 1e3, f->n,
         r.stopped == 2 ? ", the search ran dry" : "");
  for (int i = 0; i < f->n; i++) {
    ag_opt_trial *x = &r.trials[i];
    char what[64];
    if (x->timed)
      snprintf(what, sizeof what, "%.4f ms", x->median_ms);
    else
      snprintf(what, sizeof what, "%s%.40s", x->valid ? "not timed" : "rejected at ",
               x->valid ? "" : x->step);
    printf("    %2d v%-3lld %-34s %-24s best %.4f ms%s%.100s\n", x->n, (long long)x->version,
           x->edit, what, f->best[i], x->rank ? "  | " : "", x->rank ? x->rank : "");
  }
  /* the table cuts the ranking note; why evidence was absent, whole, once */
  for (int i = 0; i < f->n; i++)
    if (r.trials[i].rank && strstr(r.trials[i].rank, "no evidence")) {
      printf("    (trial %d) %s\n", r.trials[i].n, r.trials[i].rank);
      break;
    }
  if (!rc && (!f->n || f->start_ms <= 0)) {
    printf("  %s run %d: the start was not timed\n", pol, k);
    rc = 1;
  }
  ag_opt_result_release(&r);
  ag_store_close(st);
  return rc ? 1 : 0;
}

/* The fastest of torch's SDPA backends (bench/explore/sdpa_bench.py: median of `samples`,
 * L2 flushed, as the tile kernels are timed) at the attention sizes tsz (sq, skv, hq,
 * hkv, d; non-causal, batch 1, bf16): its median in ms and its name in be; 0 when it
 * was not measured (the reason printed). */
static double sdpa_best_ms(const char *tsz, int samples, char *be, size_t n) {
  static const char *const nm[5] = {"sq", "skv", "hq", "hkv", "d"};
  char a[6][24];
  for (int i = 0; i < 5; i++) {
    long v = size_of(tsz, nm[i]);
    if (v <= 0) {
      printf("  sdpa: not measured (the task's time_sizes %s name no %s)\n", tsz, nm[i]);
      return 0;
    }
    snprintf(a[i], sizeof a[i], "%ld", v);
  }
  snprintf(a[5], sizeof a[5], "%d", samples > 0 ? samples : 50);
  const char *argv[] = {"python3", bench_src("bench/explore/sdpa_bench.py"), a[0], a[1], a[2],
                        a[3], a[5], a[4], NULL};
  ag_str out = AG_STR_INIT;
  ag_proc_opts po = {.argv = argv, .capture_out = &out, .capture_err = &out, .timeout_s = 300};
  ag_proc_result pr;
  double best = 0;
  if (ag_proc_run(&po, &pr)) {
    printf("  sdpa: not measured (python3 did not run)\n");
    ag_str_release(&out);
    return 0;
  }
  for (char *save = NULL, *l = strtok_r(out.len ? out.p : NULL, "\n", &save); l;
       l = strtok_r(NULL, "\n", &save)) {
    printf("  %s\n", l);
    const char *m = strstr(l, "median_ms="), *b = strstr(l, "backend=");
    double ms;
    if (m && b && sscanf(m, "median_ms=%lf", &ms) == 1 && ms > 0 && (best == 0 || ms < best)) {
      best = ms;
      snprintf(be, n, "%.*s", (int)strcspn(b + 8, " "), b + 8);
    }
  }
  if (best == 0)
    printf("  sdpa: not measured (no backend timed above)\n");
  ag_str_release(&out);
  return best;
}

/* median, min and max of v[0..n) */
static void spread(const double *v, int n, double *med, double *lo, double *hi) {
  *med = bench_median(v, n);
  *lo = *hi = n ? v[0] : 0;
  for (int i = 1; i < n; i++) {
    *lo = v[i] < *lo ? v[i] : *lo;
    *hi = v[i] > *hi ? v[i] : *hi;
  }
}

int main(int argc, char **argv) {
  int trials = 12, repeats = 2, failed = 0;
  const char *results = NULL, *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--trials") && i + 1 < argc)
      trials = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--repeats") && i + 1 < argc)
      repeats = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--results") && i + 1 < argc)
      results = argv[++i];
    else if (!strcmp(argv[i], "--only") && i + 1 < argc)
      only = argv[++i];
    else
      trials = -1;
  }
  if (trials < 1 || trials >= MAXT || repeats < 2 || repeats > MAXR) {
    fprintf(stderr, "usage: bench_optimize [--trials 1..%d] [--repeats 2..%d] [--only NAME] "
                    "[--results FILE]\n", MAXT - 1, MAXR);
    return 2;
  }
  int ndev = bench_gpu_count();
  if (ndev == 0) {
    printf("bench_optimize: skipped: no GPU\n");
    return 77;
  }
  /* the tile harness is `argus run`: ag_tile_spec_build finds the build tree's */
  ag_spec_set_tile_builder(ag_tile_spec_build, NULL);
  char dir[] = "/tmp/argus-bench-optimize-XXXXXX";
  if (!mkdtemp(dir))
    return 1;
  ag_str sec = AG_STR_INIT;
  char device[128] = "?";
  ag_str_puts(&sec, "| program | policy | start ms | best ms, median (min-max) | speedup | "
                    "trials to reach blind's best, per run | best / hand-written | best / "
                    "Hopper DSL | best / library |\n|---|---|---|---|---|---|---|---|---|\n");
  ag_str goals = AG_STR_INIT, curves = AG_STR_INIT;
  for (size_t p = 0; p < sizeof problems / sizeof problems[0]; p++) {
    const struct problem *pb = &problems[p];
    if (only && strcmp(only, pb->name))
      continue;
    ag_diags d;
    ag_diags_init(&d);
    ag_opt_task *t = NULL;
    if (ag_opt_task_load(bench_src(pb->task), &d, &t)) {
      ag_str s = AG_STR_INIT;
      ag_diags_format(&d, &s);
      printf("%s: the task does not load: %s\n", pb->name, ag_str_cstr(&s));
      ag_str_release(&s);
      ag_diags_release(&d);
      failed = 1;
      continue;
    }
    ag_diags_release(&d);
    const char *tsz = t->time_sizes ? t->time_sizes : t->sizes;
    printf("\n%s: checked at %s, timed at %s; %d trials per run, %d runs per policy\n",
           pb->name, t->sizes, tsz, trials, repeats);
    /* the hand-written kernel (and cuBLAS) at the timing sizes */
    ag_tile_exec_opts xo;
    memset(&xo, 0, sizeof xo);
    xo.bench = 1;
    xo.samples = t->samples;
    xo.ref = pb->cublas ? AG_TILE_REF_CUBLAS : AG_TILE_REF_NONE;
    ag_tile_exec_result hr;
    memset(&hr, 0, sizeof hr);
    double hand_ms = 0, cublas_ms = 0;
    if (ag_tile_run_file(bench_src(pb->hand), tsz, &xo, NULL, &hr, NULL, NULL) == 0) {
      hand_ms = hr.kernel.median_ms;
      cublas_ms = hr.cublas.samples ? hr.cublas.median_ms : 0;
      snprintf(device, sizeof device, "%s", hr.device);
      printf("  %s: %.4f ms%s", pb->hand, hand_ms, cublas_ms > 0 ? "" : "\n");
      if (cublas_ms > 0)
        printf("; cuBLAS %.4f ms\n", cublas_ms);
    } else {
      printf("  %s at %s: %s\n", pb->hand, tsz, hr.err);
    }
    ag_tile_exec_result_release(&hr);
    /* the Hopper DSL kernel at the same sizes (its own consts at their defaults) */
    double hop_ms = 0;
    char hsz[256];
    xo.ref = AG_TILE_REF_NONE;
    memset(&hr, 0, sizeof hr);
    if (!pb->hopper_sizes(tsz, hsz, sizeof hsz))
      printf("  %s: the sizes %s are not whole tiles of it\n", pb->hopper, tsz);
    else if (ag_tile_run_file(bench_src(pb->hopper), hsz, &xo, NULL, &hr, NULL, NULL) == 0) {
      hop_ms = hr.kernel.median_ms;
      printf("  %s at %s: %.4f ms\n", pb->hopper, hsz, hop_ms);
    } else {
      printf("  %s at %s: %s\n", pb->hopper, hsz, hr.err);
    }
    ag_tile_exec_result_release(&hr);
    /* the library: cuBLAS came with the hand-written kernel; SDPA from torch */
    double lib_ms = cublas_ms;
    char lib[32] = "cuBLAS";
    if (pb->sdpa)
      lib_ms = sdpa_best_ms(tsz, t->samples, lib, sizeof lib);
    run_fig *f = calloc(2 * (size_t)repeats, sizeof *f);
    if (!f)
      return 1;
    for (int k = 0; k < repeats; k++)
      for (int q = 0; q < 2; q++)
        failed |= one_run(t, policies[q], trials, dir, k, &f[q * repeats + k]);
    /* trials to reach blind's final best of the same repeat */
    int ttr[2][MAXR];
    for (int q = 0; q < 2; q++)
      for (int k = 0; k < repeats; k++)
        ttr[q][k] = opt_trials_to_reach(f[q * repeats + k].best, f[q * repeats + k].n,
                                        f[repeats + k].final_ms, TOL);
    for (int q = 0; q < 2; q++) {
      double fin[MAXR], sp[MAXR], st0[MAXR], med, lo, hi, smed, slo, shi, s0, s0l, s0h;
      for (int k = 0; k < repeats; k++) {
        run_fig *x = &f[q * repeats + k];
        fin[k] = x->final_ms;
        st0[k] = x->start_ms;
        sp[k] = x->final_ms > 0 ? x->start_ms / x->final_ms : 0;
      }
      spread(fin, repeats, &med, &lo, &hi);
      spread(sp, repeats, &smed, &slo, &shi);
      spread(st0, repeats, &s0, &s0l, &s0h);
      char reach[256] = "";
      for (int k = 0; k < repeats; k++) {
        size_t l = strlen(reach);
        if (ttr[q][k] < 0)
          snprintf(reach + l, sizeof reach - l, "%snever", k ? ", " : "");
        else
          snprintf(reach + l, sizeof reach - l, "%s%d", k ? ", " : "", ttr[q][k]);
      }
      char hand[64] = "n/a", hop[64] = "n/a", cub[96] = "n/a";
      if (hand_ms > 0)
        snprintf(hand, sizeof hand, "%.2f", med / hand_ms);
      if (hop_ms > 0)
        snprintf(hop, sizeof hop, "%.2f", med / hop_ms);
      if (lib_ms > 0)
        snprintf(cub, sizeof cub, "%.2f (%s%s %.4f ms)", med / lib_ms, pb->sdpa ? "SDPA " : "",
                 lib, lib_ms);
      ag_str_printf(&sec, "| %s at %s | %s | %.4f | %.4f (%.4f-%.4f) | %.2fx (%.2f-%.2f) | %s "
                          "| %s | %s | %s |\n",
                    pb->name, tsz, policies[q], s0, med, lo, hi, smed, slo, shi, reach, hand,
                    hop, cub);
    }
    /* the best-so-far curves, every run */
    for (int q = 0; q < 2; q++)
      for (int k = 0; k < repeats; k++) {
        const run_fig *x = &f[q * repeats + k];
        ag_str_printf(&curves, "- %s, %s run %d, best ms after trials 0..%d:", pb->name,
                      policies[q], k, x->n - 1);
        for (int i = 0; i < x->n; i++)
          ag_str_printf(&curves, " %.4f", x->best[i]);
        ag_str_puts(&curves, "\n");
      }
    double em, bm;
    int met = opt_fewer_trials(ttr[0], ttr[1], repeats, trials, &em, &bm);
    char g[200];
    snprintf(g, sizeof g, "%s: evidence reaches blind's final best in fewer trials than blind "
                          "(median %.1f vs %.1f)", pb->name, em, bm);
    char line[512];
    bench_goal_line(line, sizeof line, g, em, 1, bm, "trials");
    printf("%s\n", line);
    ag_str_printf(&goals, "- %s\n", line);
    failed |= !met;
    free(f);
    ag_opt_task_free(t);
  }
  /* the section */
  char date[64], commit[64];
  time_t now = time(NULL);
  strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
  bench_commit(bench_src(""), commit, sizeof commit);
  struct utsname un;
  uname(&un);
  ag_str r = AG_STR_INIT;
  ag_str_printf(&r, "## argus optimize: evidence vs blind (issue 24)\n\n"
                    "- date: %s, commit %s\n- machine: %s (%s), %d GPU(s)\n"
                    "- command: `build/bench/bench_optimize%s%s --trials %d --repeats %d "
                    "--results bench/RESULTS.md` (ctest: `bench_optimize`, "
                    "`bench_optimize_attention`, label bench)\n"
                    "- what: each policy %d times in a fresh workspace, %d trials a run (the "
                    "start is trial 0), repeat k of both policies with the search's seed k + 1 (`--seed`: blind's order and evidence's ties; the task's seeds for the inputs); a candidate is checked at the task's "
                    "`sizes` against the value interpreter and timed at its `time_sizes` "
                    "(median of the task's samples, L2 flushed); \"reach\": the first trial "
                    "whose best so far is within 3 %% of blind's final best of the same repeat "
                    "(blind's own row: when blind got there)\n%s\n",
                date, commit, device, un.nodename, ndev, only ? " --only " : "",
                only ? only : "", trials, repeats, repeats, trials,
                ag_str_cstr(&goals));
  ag_str_puts(&r, ag_str_cstr(&sec));
  ag_str_printf(&r, "\nThe best-so-far curves (trial 0 is the start; a run that ran dry "
                    "ends early):\n\n%s\n", ag_str_cstr(&curves));
  printf("\n%s", ag_str_cstr(&r));
  char key[128]; /* one section per program set, so that the runs of --only do not overwrite */
  snprintf(key, sizeof key, "bench_optimize%s%.64s", only ? " " : "", only ? only : "");
  if (results && bench_results_section(results, key, ag_str_cstr(&r)))
    failed = 1;
  ag_str_release(&r);
  ag_str_release(&sec);
  ag_str_release(&goals);
  ag_str_release(&curves);
  ag_remove_tree(dir);
  return failed ? 1 : 0;
}
