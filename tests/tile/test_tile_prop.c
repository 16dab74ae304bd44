/*
 * test_tile_prop.c — the CPU side of the property test (tile_gen.h; the GPU
 * side is test_gpu_tile_prop): every generated program checks (argus
 * check's bounds and race proofs included: the generator stays in the
 * checked subset), lowers, runs in the value reference without error, writes
 * every element of Z with a finite value of bounded size, and is
 * deterministic; the first programs also compile with NVRTC. Over the
 * default seeds every builtin of the table (src/tile/tile_builtin.h), fill
 * and cvt to an integer type are called. A changed
 * program must give another result (the comparison can fail).
 * Seeds: ARGUS_PROP_SEEDS=FIRST:COUNT (default 1:60); each is printed.
 */
#include "argus/tile_check.h"
#include "argus/tile_run.h"
#include "check.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>

#include "../../src/tile/run/run_int.h"
#include "tile_gen.h"

#define PROP_N 256 /* elements per tensor: 2..8 blocks */

typedef struct prog {
  ag_tile_program *p;
  ag_tile_lowered *low;
  ag_tile_run_sizes s;
  ag_tile_bound b;
  void *t[8]; /* by parameter: X, Y, B, Z, then the size N (NULL) */
} prog;

static void release(prog *g) {
  for (int i = 0; i < 4; i++)
    free(g->t[i]);
  ag_tile_bound_release(&g->b);
  ag_tile_run_sizes_release(&g->s);
  ag_tile_lowered_free(g->low);
  ag_tile_program_free(g->p);
  memset(g, 0, sizeof *g);
}

/* Parses, (checks), lowers, binds; fills X, Y, B, Z from seed. 0 or the failing step's code,
 * with the diagnostics in msg. */
static int setup(prog *g, const char *text, int check, uint64_t seed, ag_str *msg) {
  ag_diags d;
  ag_diags_init(&d);
  memset(g, 0, sizeof *g);
  char spec[32];
  snprintf(spec, sizeof spec, "N=%d", PROP_N);
  int rc = ag_tile_parse(text, strlen(text), "prop.tile", &d, &g->p);
  if (!rc)
    rc = ag_tile_run_sizes_parse(g->p, NULL, spec, &d, &g->s);
  if (!rc && check) {
    ag_tile_check_opts co;
    memset(&co, 0, sizeof co);
    ag_tile_report *r = NULL;
    rc = ag_tile_check(g->p, &co, &d, &r);
    if (!rc && !ag_tile_report_ok(r)) {
      ag_str_puts(msg, "the checker refutes it");
      rc = AG_EVIOLATION;
    }
    if (r && r->bounds_proved == 0)
      rc = rc ? rc : AG_EINVAL, ag_str_puts(msg, "no access proved in bounds");
    ag_tile_report_free(r);
  }
  if (!rc) {
    ag_tile_lower_opts o;
    memset(&o, 0, sizeof o);
    rc = ag_tile_lower(g->p, &o, &d, &g->low);
  }
  if (!rc)
    rc = ag_tile_run_bind(g->p, &g->low->kernels[0], &g->s, &d, &g->b);
  ag_diags_format(&d, msg);
  ag_diags_release(&d);
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 7;
  for (int i = 0; !rc && i < 4; i++) {
    const ag_tile_lparam *prm = &g->low->kernels[0].params[i];
    g->t[i] = calloc(1, g->b.bytes[i]);
    for (int e = 0; e < PROP_N; e++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      float f = (float)((double)(s >> 40) / 16777216.0 - 0.5);
      if (!strcmp(prm->dtype, "bf16"))
        ((uint16_t *)g->t[i])[e] = ag__f2bf(f);
      else
        ((float *)g->t[i])[e] = i == 3 ? f + 100.0f : f; /* Z: a fill no result has */
    }
  }
  return rc;
}

static int interp(prog *g, ag_str *msg) {
  char err[512] = "";
  int rc = ag_tile_interp(g->p, &g->b, NULL, 0, g->t, err, sizeof err);
  if (rc)
    ag_str_printf(msg, "value reference: %s", err);
  return rc;
}

static void seeds(uint64_t *first, int *count) {
  const char *e = getenv("ARGUS_PROP_SEEDS");
  *first = 1;
  *count = 60;
  if (e) {
    unsigned long long f = 1;
    int c = 60;
    if (sscanf(e, "%llu:%d", &f, &c) >= 1) {
      *first = f;
      *count = c;
    }
  }
}

/* 1 when text calls name (not as the tail of a longer name: max in reduce_max). */
static int calls(const char *text, const char *name) {
  size_t n = strlen(name);
  for (const char *p = strstr(text, name); p; p = strstr(p + 1, name))
    if ((p == text || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')) && p[n] == '(')
      return 1;
  return 0;
}

TEST(test_generated_programs) {
  uint64_t first;
  int count, compiled = 0;
  seeds(&first, &count);
  printf("  seeds %llu..%llu (ARGUS_PROP_SEEDS=%llu:%d)\n", (unsigned long long)first,
         (unsigned long long)(first + (uint64_t)count - 1), (unsigned long long)first, count);
  double worst = 0;
  /* every builtin of the table, fill and cvt to an integer are generated */
  int nb;
  const ag__builtin *tab = ag__builtin_table(&nb);
  int seen[64] = {0}, seen_fill = 0, seen_f2i = 0;
  for (int i = 0; i < count; i++) {
    uint64_t sd = first + (uint64_t)i;
    ag_str text = AG_STR_INIT, msg = AG_STR_INIT;
    int threads;
    tile_gen(sd, &text, &threads);
    for (int b = 0; b < nb && b < 64; b++)
      seen[b] |= calls(ag_str_cstr(&text), tab[b].name);
    seen_fill |= strstr(ag_str_cstr(&text), "    fill(rl, ") != NULL;
    seen_f2i |= strstr(ag_str_cstr(&text), ", i32)") != NULL;
    prog g, h;
    int rc = setup(&g, ag_str_cstr(&text), 1, sd, &msg);
    if (!rc)
      rc = interp(&g, &msg);
    int bad = rc != 0;
    const float *Z = g.t[3];
    for (int e = 0; !rc && e < PROP_N; e++) {
      double v = fabs(Z[e]);
      if (!(v < 1e3)) /* finite and small: the generator's promise */
        bad = 1;
      worst = v > worst ? v : worst;
    }
    /* every element written: none keeps its fill (the fill is 100 + [-0.5, 0.5)) */
    for (int e = 0; !rc && e < PROP_N; e++)
      if (Z[e] >= 99.5f && Z[e] < 100.5f)
        bad = 1;
    /* deterministic: the same inputs, the same result */
    if (!rc && setup(&h, ag_str_cstr(&text), 0, sd, &msg) == 0 && interp(&h, &msg) == 0)
      bad |= memcmp(g.t[3], h.t[3], PROP_N * 4) != 0;
    else if (!rc)
      bad = 1;
    if (!rc && !bad)
      release(&h);
    /* the lowered CUDA C of the first programs compiles */
    if (!rc && !bad && compiled < 4) {
      ag_diags d;
      ag_diags_init(&d);
      ag_str ptx = AG_STR_INIT;
      int nrc = ag_tile_nvrtc_ptx(g.low->cuda, g.low->len, NULL, &d, &ptx, NULL);
      if (nrc != AG_EUNSUPPORTED) {
        bad |= nrc != 0 || !strstr(ag_str_cstr(&ptx), ".entry prop(");
        ag_diags_format(&d, &msg);
        compiled++;
      }
      ag_str_release(&ptx);
      ag_diags_release(&d);
    }
    if (bad) {
      fprintf(stderr, "seed %llu fails: %s\n%s", (unsigned long long)sd, ag_str_cstr(&msg),
              ag_str_cstr(&text));
      CHECK(!bad);
    }
    release(&g);
    ag_str_release(&text);
    ag_str_release(&msg);
  }
  printf("  %d programs: checked, lowered, interpreted (largest |Z| %.3g); %d through NVRTC\n",
         count, worst, compiled);
  if (count >= 60) { /* the default seeds call each at least once */
    for (int b = 0; b < nb && b < 64; b++) {
      if (!seen[b])
        fprintf(stderr, "no generated program calls the builtin '%s'\n", tab[b].name);
      CHECK(seen[b]);
    }
    CHECK(seen_fill);
    CHECK(seen_f2i);
  }
}

/* The comparison can fail: a program with another last statement gives another Z. */
TEST(test_changed_program_differs) {
  ag_str text = AG_STR_INIT, msg = AG_STR_INIT;
  int threads;
  tile_gen(3, &text, &threads);
  prog g, h;
  CHECK_EQ_INT(setup(&g, ag_str_cstr(&text), 0, 3, &msg), 0);
  CHECK_EQ_INT(interp(&g, &msg), 0);
  char *last = strstr(text.p, " + a\n");
  CHECK(last != NULL);
  if (last)
    last[3] = 'b'; /* "... + b": Z = ... + Y[g] instead of X[g] */
  CHECK_EQ_INT(setup(&h, ag_str_cstr(&text), 0, 3, &msg), 0);
  CHECK_EQ_INT(interp(&h, &msg), 0);
  ag_tile_exec_result r;
  memset(&r, 0, sizeof r);
  ag_tile_run_compare(&g.b, h.t, g.t, &r);
  CHECK(r.nbad > 0);
  CHECK_EQ_INT(r.compared_param, 3);
  release(&g);
  release(&h);
  ag_str_release(&text);
  ag_str_release(&msg);
}

RUN_TESTS(T(test_generated_programs), T(test_changed_program_differs))
