/* test_gpu_megakernel.c — the decode megakernel on the H200 (label gpu; exit
 * 77 without a GPU; docs/megakernel.md): the harness's check against the
 * reference at contexts 1024 and 4096 over 64 steps (its exit status is the
 * verdict: every logit within 1e-2, the same tokens), the weight file read
 * back equal to the seeded weights (the same tokens from both), and `argus
 * observe` reporting durations of the scheduler, the operators and the
 * shared helpers. Prints the harness's figures as "@ " lines. */
#define _POSIX_C_SOURCE 200809L
#include "argus/collect.h"
#include "argus/observe.h"
#include "check.h"
#include "report_util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char harness[4096];

static void gpu_setup(void) {
  ag_str why = AG_STR_INIT;
  if (ag_collect_gpu_probe(&why)) {
    printf("no GPU (%s): skipped\n", ag_str_cstr(&why));
    exit(77);
  }
  ag_str_release(&why);
  const char *bd = getenv("ARGUS_BUILD_DIR");
  snprintf(harness, sizeof harness, "%s/examples/megakernel_harness", bd ? bd : "build");
}

/* runs the harness with args; its output in out; returns its exit status */
static int run_harness(const char *args, char *out, size_t n) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "%s %s 2>&1", harness, args);
  FILE *f = popen(cmd, "r");
  size_t got = 0;
  out[0] = 0;
  if (!f)
    return -1;
  while (got + 1 < n) {
    size_t k = fread(out + got, 1, n - 1 - got, f);
    if (!k)
      break;
    got += k;
  }
  out[got] = 0;
  int st = pclose(f);
  printf("--- %s\n%s", cmd, out);
  for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n")) /* the figures, for run.sh */
    if (strstr(l, "ms/token") || strstr(l, "tokens:"))
      printf("@ %s\n", l);
  return st == -1 ? -1 : (st >> 8) & 0xff;
}

static char out[1 << 16];

TEST(test_check_ctx1024) {
  gpu_setup();
  CHECK_EQ_INT(run_harness("--ctx 1024 --steps 64", out, sizeof out), 0);
}

TEST(test_check_ctx4096) {
  gpu_setup();
  CHECK_EQ_INT(run_harness("--ctx 4096 --steps 64", out, sizeof out), 0);
}

/* the line "megakernel: tokens: ..." of a run */
static void tokens_line(const char *args, char *line, size_t n) {
  static char buf[1 << 16];
  line[0] = 0;
  CHECK_EQ_INT(run_harness(args, buf, sizeof buf), 0);
  /* run_harness tokenised buf: scan its lines */
  for (const char *p = buf; p < buf + sizeof buf && *p; p += strlen(p) + 1)
    if (!strncmp(p, "megakernel: tokens:", 19) && !strstr(p, "equal"))
      snprintf(line, n, "%.500s", p);
}

TEST(test_weight_file_round_trip) {
  gpu_setup();
  char file[] = "/tmp/argus-mk-XXXXXX", args[4200], a[512], b[512];
  int fd = mkstemp(file);
  CHECK(fd >= 0);
  close(fd);
  snprintf(args, sizeof args, "--tiny --seed 7 --save-weights %s", file);
  CHECK_EQ_INT(run_harness(args, out, sizeof out), 0);
  /* --seed 7: the context's KV cache is drawn from the seed in both runs */
  snprintf(args, sizeof args, "--weights %s --seed 7 --ctx 300 --steps 16 --no-time", file);
  tokens_line(args, a, sizeof a);
  tokens_line("--tiny --seed 7 --ctx 300 --steps 16 --no-time", b, sizeof b);
  CHECK(a[0] != 0);
  CHECK_EQ_STR(a, b);
  tokens_line("--tiny --seed 8 --ctx 300 --steps 16 --no-time", b, sizeof b);
  CHECK(strcmp(a, b) != 0); /* another seed decodes other tokens: the line says something */
  unlink(file);
}

/* (region, signal, stat)'s number in the report, -1 if absent */
static double val(json_t *rep, const char *region, const char *signal, const char *stat) {
  json_t *v = report_value(rep, region, signal, stat);
  return v ? json_number_value(v) : -1;
}

TEST(test_observe_durations) {
  gpu_setup();
  const char *bd = getenv("ARGUS_BUILD_DIR"), *src = getenv("ARGUS_SOURCE_DIR");
  char path[8192], spec[4096], ws[] = "/tmp/argus-mkobs-XXXXXX";
  snprintf(path, sizeof path, "%s/examples:%s", bd ? bd : "build", getenv("PATH"));
  setenv("PATH", path, 1); /* the spec's harness */
  snprintf(spec, sizeof spec, "%s/examples/megakernel/spec.json", src ? src : ".");
  CHECK(mkdtemp(ws) != NULL);
  const char *sigs[] = {"duration", "occurrences"};
  ag_observe_opts o = {.spec = spec, .workspace = ws, .region = "mk_decode_step", .signals = sigs,
                       .nsignals = 2, .ndevices = -1, .timeout_s = 300};
  ag_diags d;
  ag_diags_init(&d);
  ag_observe_result r;
  int rc = ag_observe(&o, &d, &r);
  if (rc) {
    ag_str s = AG_STR_INIT;
    ag_diags_format(&d, &s);
    fprintf(stderr, "%s", ag_str_cstr(&s));
    ag_str_release(&s);
  }
  ag_diags_release(&d);
  CHECK_EQ_INT(rc, 0);
  if (rc || !r.report)
    return;
  char *js = json_dumps(r.report, JSON_COMPACT);
  printf("report: %.200000s\n", js ? js : "?");
  free(js);
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(r.report, "values"), i, v) { /* every value, one line each */
    char *vs = json_dumps(json_object_get(v, "value"), JSON_COMPACT | JSON_ENCODE_ANY);
    printf("@ value %s %s %s = %.200s\n", json_string_value(json_object_get(v, "region")),
           json_string_value(json_object_get(v, "signal")),
           json_string_value(json_object_get(v, "stat")), vs ? vs : "?");
    free(vs);
  }
  static const char *const regions[] = {
      "mk_decode_step/core_loop", "mk_decode_step/core_loop/scheduler",
      "mk_decode_step/core_loop/dispatch", "mk_decode_step/core_loop/dispatch/qkv",
      "mk_decode_step/core_loop/dispatch/attention", "mk_decode_step/core_loop/dispatch/gate_up",
      "mk_decode_step/core_loop/dispatch/down", "mk_decode_step/core_loop/dispatch/logits",
      "mk_decode_step/core_loop/dispatch/qkv/gemv", "mk_decode_step/core_loop/dispatch/qkv/rmsnorm",
      "mk_decode_step/core_loop/dispatch/down/gemv", "mk_decode_step/core_loop/dispatch/signal",
      "mk_decode_step/core_loop/dispatch/attention/combine"};
  for (i = 0; i < sizeof regions / sizeof regions[0]; i++) {
    double t = val(r.report, regions[i], "duration", "total");
    double n = val(r.report, regions[i], "duration", "count");
    printf("@ observe %s: count %.0f total %.0f\n", regions[i], n, t);
    CHECK(n > 0);
    CHECK(t > 0);
  }
  /* the L2 prefetch is off by default (--prefetch): its region never runs */
  double np = val(r.report, "mk_decode_step/core_loop/scheduler/prefetch", "duration", "count");
  printf("@ observe prefetch (off by default): count %.0f\n", np);
  CHECK(np == 0);
  ag_observe_result_release(&r);
}

RUN_TESTS(T(test_check_ctx1024), T(test_check_ctx4096), T(test_weight_file_round_trip),
          T(test_observe_durations))
