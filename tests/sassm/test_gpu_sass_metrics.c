/*
 * test_gpu_sass_metrics.c — the CUPTI SASS-metrics collector on the GPU
 * (docs/sass-metrics.md), on the ground-truth kernel
 * tests/data/cuda/attrib_truth.cu built with line info:
 *
 *   truth      the harness under ARGUS_COLLECT=sass: sass_metrics.json
 *              decodes, every PC's counts follow the construction
 *              (truth_check.h), and the kernel's totals equal the hardware
 *              counters ncu reads on the same launch (smsp__inst_executed,
 *              thread and predicated-on thread instructions) when ncu is
 *              on PATH; the evidence is copied to $ARGUS_EVIDENCE_OUT
 *   held       another tool holds CUPTI's subscriber (the harness takes it
 *              first): the run fails, host-error.txt says so, no evidence
 *
 * Exit 77 without a GPU.
 */
#include <stdlib.h>
#include <unistd.h>

#include "argus/collect.h"
#include "argus/sass_ev.h"
#include "check.h"
#include "../trace/gpu_util.h"
#include "truth_check.h"

#ifndef ATTRIB_TRUTH_HARNESS
#define ATTRIB_TRUTH_HARNESS "attrib_truth_harness"
#endif
#ifndef ATTRIB_TRUTH_CUBIN
#define ATTRIB_TRUTH_CUBIN "attrib_truth.cubin"
#endif


/* Runs the harness on the ground truth (TRUTH_* sizes; `extra` one more
 * argument or NULL), under ARGUS_COLLECT=sass into dir when collect, else
 * under `wrap` (ncu's argv before the harness) or alone. */
static int run_harness(const char *dir, const char *extra, int collect,
                       const char *const *wrap, ag_str *out, ag_proc_result *res) {
  char envout[1200], envvar[1200], b[16], t[16], a[16], bb[16], c[16];
  snprintf(envout, sizeof envout, "ARGUS_OUT=%s", dir);
  snprintf(envvar, sizeof envvar, "ARGUS_VARIANT=%s", ATTRIB_TRUTH_CUBIN);
  snprintf(b, sizeof b, "%d", TRUTH_BLOCKS);
  snprintf(t, sizeof t, "%d", TRUTH_THREADS);
  snprintf(a, sizeof a, "%d", TRUTH_K1);
  snprintf(bb, sizeof bb, "%d", TRUTH_K2);
  snprintf(c, sizeof c, "%d", TRUTH_K3);
  const char *env[] = {"ARGUS_COLLECT=sass", envout, envvar,
                       "ARGUS_VARIANT_ID=attrib_truth-lineinfo", NULL};
  const char *argv[24];
  int n = 0;
  for (; wrap && wrap[n]; n++)
    argv[n] = wrap[n];
  const char *tail[] = {ATTRIB_TRUTH_HARNESS, "--module", ATTRIB_TRUTH_CUBIN, "--blocks", b,
                        "--threads", t, "--k1", a, "--k2", bb, "--k3", c, extra, NULL};
  for (int i = 0; tail[i]; i++)
    argv[n++] = tail[i];
  argv[n] = NULL;
  ag_proc_opts o = {.argv = argv, .env_add = collect ? env : NULL, .capture_out = out,
                    .timeout_s = 180};
  return ag_proc_run(&o, res);
}

/* ncu's value of `metric` in its --csv output (the last column), or -1. */
static long long ncu_value(const char *csv, const char *metric) {
  char key[160];
  snprintf(key, sizeof key, "\"%s\"", metric);
  const char *p = csv ? strstr(csv, key) : NULL;
  if (!p)
    return -1;
  p = strchr(p + strlen(key), ',');
  p = p ? strchr(p + 1, ',') : NULL; /* skip the unit */
  if (!p || p[1] != '"')
    return -1;
  long long v = 0;
  for (p += 2; *p && *p != '"'; p++)
    if (*p >= '0' && *p <= '9')
      v = v * 10 + (*p - '0');
  return v;
}


TEST(truth) {
  gpu_or_skip("test_gpu_sass_metrics");
  char dir[] = "/tmp/argus-sassm-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  ag_str out = {0}, path = {0};
  ag_proc_result res;
  CHECK_EQ_INT(run_harness(dir, NULL, 1, NULL, &out, &res), 0);
  printf("%s", out.p ? out.p : "");
  CHECK(res.exited && res.exit_code == 0);
  ag_str_printf(&path, "%s/sass_metrics.json", dir);
  ag_diags d;
  ag_diags_init(&d);
  ag_sass_ev *e = NULL;
  int rc = ag_sass_ev_load(path.p, &d, &e);
  if (rc) {
    ag_str msg = {0};
    ag_diags_format(&d, &msg);
    fprintf(stderr, "%s", msg.p ? msg.p : "");
    ag_str_release(&msg);
  }
  CHECK_EQ_INT(rc, 0);
  if (e) {
    char why[2048];
    uint64_t warps = truth_warps(e);
    CHECK_EQ_U64(warps, TRUTH_BLOCKS * TRUTH_THREADS / 32);
    int bad = truth_check(e, warps, TRUTH_K1, TRUTH_K2, TRUTH_K3, why, sizeof why);
    if (bad)
      fprintf(stderr, "ground truth: %s\n", why);
    CHECK_EQ_INT(bad, 0);
    uint64_t ti = ag_sass_ev_total(e, ag_sass_ev_metric(e, "smsp__sass_inst_executed"));
    uint64_t tt = ag_sass_ev_total(e, ag_sass_ev_metric(e, "smsp__sass_thread_inst_executed"));
    uint64_t tp =
        ag_sass_ev_total(e, ag_sass_ev_metric(e, "smsp__sass_thread_inst_executed_pred_on"));
    printf("@ sass metrics: chip %s, %zu rows, %zu opcodes, inst %llu, thread %llu, pred_on "
           "%llu\n",
           e->chip, e->nrows, e->nins, (unsigned long long)ti, (unsigned long long)tt,
           (unsigned long long)tp);
    /* the hardware counters on the same launch, outside Argus */
    char *ncu = ag_which("ncu");
    if (ncu) {
      const char *wrap[] = {ncu, "--metrics",
                            "smsp__inst_executed.sum,smsp__thread_inst_executed.sum,"
                            "smsp__thread_inst_executed_pred_on.sum",
                            "--csv", NULL};
      ag_str csv = {0};
      CHECK_EQ_INT(run_harness(dir, NULL, 0, wrap, &csv, &res), 0);
      long long ni = ncu_value(csv.p, "smsp__inst_executed.sum");
      long long nt = ncu_value(csv.p, "smsp__thread_inst_executed.sum");
      long long np = ncu_value(csv.p, "smsp__thread_inst_executed_pred_on.sum");
      printf("@ ncu: inst %lld, thread %lld, pred_on %lld\n", ni, nt, np);
      CHECK_EQ_U64((uint64_t)ni, ti);
      CHECK_EQ_U64((uint64_t)nt, tt);
      CHECK_EQ_U64((uint64_t)np, tp);
      ag_str totals = {0};
      ag_str_printf(&totals, "smsp__inst_executed.sum %lld\nsmsp__thread_inst_executed.sum "
                             "%lld\nsmsp__thread_inst_executed_pred_on.sum %lld\n",
                    ni, nt, np);
      char tp2[1200];
      snprintf(tp2, sizeof tp2, "%s/ncu.txt", dir);
      ag_file_write_atomic(tp2, totals.p, totals.len);
      evidence_out(tp2, "attrib_truth.ncu.txt");
      ag_str_release(&totals);
      ag_str_release(&csv);
      ag_free(ncu);
    } else {
      printf("@ ncu: not on PATH; the totals are not compared with the hardware counters\n");
    }
    evidence_out(path.p, "attrib_truth.sass.json");
  }
  ag_sass_ev_free(e);
  ag_diags_release(&d);
  ag_str_release(&out);
  ag_str_release(&path);
}

TEST(held) {
  gpu_or_skip("test_gpu_sass_metrics");
  char dir[] = "/tmp/argus-sassm-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  ag_str out = {0};
  ag_proc_result res;
  CHECK_EQ_INT(run_harness(dir, "--hold-cupti", 1, NULL, &out, &res), 0);
  printf("%s", out.p ? out.p : "");
  CHECK_CONTAINS(out.p ? out.p : "", "holding the CUPTI subscriber: yes");
  CHECK(res.exited && res.exit_code == 1);
  char p[1200], *data = NULL;
  size_t len = 0;
  snprintf(p, sizeof p, "%s/host-error.txt", dir);
  CHECK_EQ_INT(ag_file_read(p, &data, &len), 0);
  CHECK_CONTAINS(data ? data : "", "CUPTI already has a subscriber in this process");
  printf("@ held: %s", data ? data : "(none)\n");
  snprintf(p, sizeof p, "%s/sass_metrics.json", dir);
  CHECK(access(p, F_OK) != 0);
  ag_free(data);
  ag_str_release(&out);
}

RUN_TESTS(T(truth), T(held))
