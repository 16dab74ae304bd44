/*
 * test_gpu_optimize.c — `argus optimize` with the GPU (docs/optimize.md):
 * the validator's correctness runs go through argus run's launch path
 * (runner "gpu") and its timing step measures every valid candidate; the
 * planted reward hacks are rejected on the device too and never timed; the
 * best ref names the valid trial with the least median. The task checks
 * at 128^3 and times at 2048^3 (time_sizes); the evidence policy observes
 * every valid version's regions there (argus observe, the duration signal)
 * and ranks by them. Exit 77 without a GPU.
 */
#include "argus/agent.h"
#include "argus/spec.h"
#include "argus/store.h"
#include "argus/tile_run.h"
#include "check.h"

#include <dlfcn.h>
#include <stdlib.h>

static char pbuf[4][1024];
static const char *src_path(int slot, const char *rel) {
  const char *s = getenv("ARGUS_SOURCE_DIR");
  snprintf(pbuf[slot], sizeof pbuf[slot], "%s/%s", s ? s : ".", rel);
  return pbuf[slot];
}
static const char *tmp_path(int slot, const char *rel) {
  const char *b = getenv("ARGUS_BUILD_DIR");
  snprintf(pbuf[slot], sizeof pbuf[slot], "%s/test_gpu_optimize.d/%s", b ? b : ".", rel);
  return pbuf[slot];
}

static ag_opt_task *task(void) {
  char text[4096];
  snprintf(text, sizeof text,
           "{\"name\": \"gpu\", \"program\": \"%s\", \"sizes\": {\"M\": 128, \"N\": 128, \"K\": "
           "128}, \"time_sizes\": {\"M\": 2048, \"N\": 2048, \"K\": 2048}, \"reference\": "
           "{\"outputs\": [\"C\"]}, \"seeds\": [1, 2], \"objective\": "
           "{\"metric\": \"time\", \"samples\": 20}}\n",
           src_path(0, "examples/tile/gemm_naive.tile"));
  const char *p = tmp_path(1, "gpu.task.json");
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", p);
  *strrchr(dir, '/') = 0;
  ag_mkdir_p(dir, 0755);
  CHECK(ag_file_write_atomic(p, text, strlen(text)) == 0);
  ag_diags d;
  ag_diags_init(&d);
  ag_opt_task *t = NULL;
  CHECK_EQ_INT(ag_opt_task_load(p, &d, &t), 0);
  ag_diags_release(&d);
  return t;
}

static const json_t *step_of(const ag_opt_verdict *v, const char *name) {
  size_t i;
  json_t *s;
  json_array_foreach(json_object_get(v->feedback, "steps"), i, s) {
    if (!strcmp(json_string_value(json_object_get(s, "step")), name))
      return s;
  }
  return NULL;
}

#define STORE_LINE                                                                             \
  "                C[bm * BM + wm * WM + mi * 16 + m, bn * BN + wn * WN + ni * 8 + n] = "      \
  "acc[mi, ni, e]"

TEST(test_validator_gpu) {
  ag_opt_task *t = task();
  if (!t)
    return;
  char *src = NULL, err[1024];
  size_t len;
  CHECK(ag_file_read(t->program, &src, &len) == 0);
  ag_opt_verdict v;
  CHECK_EQ_INT(ag_opt_validate(t, src, len, "start.tile", NULL, AG_OPT_DEVICE_AUTO, &v, err,
                               sizeof err), 0);
  CHECK(v.ok);
  CHECK(v.timed);
  CHECK(v.median_ms > 0 && v.median_ms < 10);
  CHECK_EQ_STR(json_string_value(json_object_get(step_of(&v, "correctness"), "runner")), "gpu");
  CHECK_EQ_STR(json_string_value(json_object_get(step_of(&v, "timing"), "status")), "passed");
  CHECK_EQ_STR(json_string_value(json_object_get(step_of(&v, "timing"), "sizes")),
               "M=2048,N=2048,K=2048"); /* timed at the timing sizes */
  printf("start at 2048^3: %.4f ms\n", v.median_ms);
  ag_opt_verdict_release(&v);
  /* the hacks, on the device: rejected, not timed */
  const char *hacks[][2] = {
      {STORE_LINE, "                x = acc[mi, ni, e]"},
      {STORE_LINE, STORE_LINE "\n                A[bm * BM + wm * WM + mi * 16 + m, 0] = "
                              "cvt(acc[mi, ni, e], bf16)"},
  };
  for (int h = 0; h < 2; h++) {
    const char *f = strstr(src, hacks[h][0]);
    CHECK(f != NULL);
    if (!f)
      continue;
    ag_str s = AG_STR_INIT;
    ag_str_append(&s, src, (size_t)(f - src));
    ag_str_puts(&s, hacks[h][1]);
    ag_str_puts(&s, f + strlen(hacks[h][0]));
    CHECK_EQ_INT(ag_opt_validate(t, s.p, s.len, "hack.tile", NULL, AG_OPT_DEVICE_AUTO, &v, err,
                                 sizeof err), 0);
    CHECK(!v.ok);
    CHECK_EQ_STR(v.step, "correctness");
    CHECK(!v.timed);
    CHECK_EQ_STR(json_string_value(json_object_get(step_of(&v, "correctness"), "runner")), "gpu");
    ag_opt_verdict_release(&v);
    ag_str_release(&s);
  }
  ag_free(src);
  ag_opt_task_free(t);
}

TEST(test_loop_gpu) {
  ag_opt_task *t = task();
  if (!t)
    return;
  const char *ws = tmp_path(2, "ws");
  ag_remove_tree(ws);
  ag_store *st = NULL;
  CHECK_EQ_INT(ag_store_open(ws, AG_STORE_CREATE, &st), 0);
  ag_opt_opts o;
  memset(&o, 0, sizeof o);
  o.policy = "evidence";
  o.trials = 5;
  o.kb_dir = src_path(3, "src/agent/kb");
  o.device = AG_OPT_DEVICE_AUTO;
  ag_opt_result r;
  char err[1024];
  int rc = ag_opt_run(st, t, &o, &r, err, sizeof err);
  if (rc)
    fprintf(stderr, "optimize: %s\n", err);
  CHECK_EQ_INT(rc, 0);
  CHECK_EQ_INT(r.ntrials, 6);
  int64_t best = 0;
  double best_ms = 0;
  for (int i = 0; i < r.ntrials; i++) {
    printf("trial %d: v%lld %s %s %.4f ms\n", r.trials[i].n, (long long)r.trials[i].version,
           r.trials[i].edit, r.trials[i].valid ? "valid" : r.trials[i].step, r.trials[i].median_ms);
    CHECK_EQ_INT(r.trials[i].timed, r.trials[i].valid); /* every valid one timed, no other */
    CHECK_EQ_INT(r.trials[i].has_evidence, r.trials[i].valid); /* and observed */
    if (i) {
      printf("  ranked by %s\n", r.trials[i].rank ? r.trials[i].rank : "(none)");
      CHECK(r.trials[i].rank && !strncmp(r.trials[i].rank, "evidence of v", 13));
    }
    if (r.trials[i].valid && (!best || r.trials[i].median_ms < best_ms)) {
      best = r.trials[i].version;
      best_ms = r.trials[i].median_ms;
    }
  }
  CHECK_EQ_INT(r.best, best);
  ag_ref ref;
  CHECK_EQ_INT(ag_store_ref_get(st, "optimize/gpu/best", &ref), 0);
  CHECK_EQ_INT(ref.target.id, best);
  ag_opt_result_release(&r);
  ag_store_close(st);
  ag_opt_task_free(t);
}

int main(int argc, char **argv) {
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
  int n = 0;
  int (*init)(unsigned) = cuda ? (int (*)(unsigned))dlsym(cuda, "cuInit") : NULL;
  int (*count)(int *) = cuda ? (int (*)(int *))dlsym(cuda, "cuDeviceGetCount") : NULL;
  if (!init || !count || init(0) || count(&n) || n == 0) {
    printf("test_gpu_optimize: skipped: no GPU\n");
    return 77;
  }
  ag_spec_set_tile_builder(ag_tile_spec_build, NULL); /* $ARGUS_BIN, else the build's */
  static const chk_case cases[] = {{"test_validator_gpu", test_validator_gpu},
                                   {"test_loop_gpu", test_loop_gpu}};
  int failed = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (argc > 1 && strcmp(argv[1], cases[i].name))
      continue;
    chk__cur_failed = chk__cur_skipped = 0;
    cases[i].fn();
    if (chk__cur_failed) {
      printf("FAIL %s\n", cases[i].name);
      failed++;
    }
  }
  printf("%d failed\n", failed);
  return failed ? 1 : 0;
}
