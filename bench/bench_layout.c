/*
 * bench_layout.c — how fast the layout algebra runs on depth-3 layouts:
 * composition, the divides, a product, complement, coalesce and symbolic
 * evaluation, in nanoseconds per operation. Goal (issue 7: composing and
 * dividing well under a microsecond each): the best round of each
 * composition and divide under 2,000 ns per operation, one goal line each
 * (goal.h); the other operations state no goal.
 *
 * Each operation runs ITERS times, in 7 rounds, on pre-parsed layouts;
 * results go to an arena released (and the inputs re-parsed) every 256
 * operations, which is included. Reported: the best and the median round. The first
 * result of each operation is checked against brute force, so a failing or
 * wrong path is never what gets timed. Prints one line per operation and
 * exits 1 if a result is wrong or a goal is not met.
 *
 *   build/bench/bench_layout [ITERS [NAME]]   (default 200000; NAME: only the
 *                                             operations whose name contains it)
 * Times are the thread's CPU time per operation.
 */
#include "argus/layout.h"
#include "goal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

enum { ROUNDS = 7 };

static const char *A_TEXT = "((4,(2,4)),(8,(2,4))):((64,(1,512)),(2,(16,32)))";
static const char *B_TEXT = "((2,(2,4)),(4,(2,2))):((1,(64,256)),(2,(8,32)))";
static const char *T_TEXT = "<(2,(2,2)):(1,(4,8)),(4,(2,2)):(1,(8,16))>";
static const char *BL_TEXT = "((2,2),(2,4)):((1,4),(32,128))";

typedef struct bench {
  ag_arena arena;
  ag_layout_ctx c;
  ag_layout a, b, bl;
  ag_tiler t, tl;
} bench;

enum { OP_COMPOSE, OP_COMPOSE_TILER, OP_DIVIDE_TILER, OP_DIVIDE_LAYOUT, OP_ZIPPED, OP_TILED,
       OP_PRODUCT, OP_BLOCKED, OP_COMPLEMENT, OP_COALESCE, OP_EVAL_X, OP_N };

static const char *names[OP_N] = {
    "compose A o B (depth 3)",          "compose A o <tiler> (by mode)",
    "logical_divide A / <tiler>",       "logical_divide A / layout",
    "zipped_divide A / <tiler>",        "tiled_divide A / <tiler>",
    "logical_product B x B",            "blocked_product B x B",
    "complement B, 4096",               "coalesce A",
    "eval_index_x A (symbolic)",
};

static int run_op(bench *w, int op, ag_layout *r) {
  ag_layout_ctx *c = &w->c;
  switch (op) {
  case OP_COMPOSE: return ag_layout_compose(c, &w->a, &w->b, r);
  case OP_COMPOSE_TILER: return ag_layout_compose_tiler(c, &w->a, &w->t, r);
  case OP_DIVIDE_TILER: return ag_layout_logical_divide(c, &w->a, &w->t, r);
  case OP_DIVIDE_LAYOUT: return ag_layout_logical_divide(c, &w->a, &w->tl, r);
  case OP_ZIPPED: return ag_layout_zipped_divide(c, &w->a, &w->t, r);
  case OP_TILED: return ag_layout_tiled_divide(c, &w->a, &w->t, r);
  case OP_PRODUCT: {
    ag_tiler tb = {1, w->b, 0, NULL};
    return ag_layout_logical_product(c, &w->b, &tb, r);
  }
  case OP_BLOCKED: return ag_layout_blocked_product(c, &w->b, &w->b, r);
  case OP_COMPLEMENT: return ag_layout_complement(c, &w->b, 4096, r);
  case OP_COALESCE: return ag_layout_coalesce(c, &w->a, r);
  default: {
    const ag_expr *e;
    int rc = ag_layout_eval_index_x(c, &w->a, ag_expr_sym(c, "tid"), &e);
    r->shape = r->stride = NULL;
    return rc;
  }
  }
}

static void reset(bench *w) {
  ag_layout_ctx_release(&w->c);
  ag_arena_release(&w->arena);
  ag_arena_init(&w->arena, 0);
  ag_layout_ctx_init(&w->c, &w->arena);
}

static int parse_all(bench *w) {
  return ag_layout_parse(&w->c, A_TEXT, NULL, &w->a) || ag_layout_parse(&w->c, B_TEXT, NULL, &w->b) ||
         ag_layout_parse(&w->c, BL_TEXT, NULL, &w->bl) ||
         ag_tiler_parse(&w->c, T_TEXT, NULL, &w->t) || ag_tiler_parse(&w->c, BL_TEXT, NULL, &w->tl);
}

/* Brute-force check of the composition: R(i) == A(B(i)). */
static int verify_compose(const ag_layout *a, const ag_layout *b, const ag_layout *r) {
  for (int64_t i = 0; i < ag_layout_size(b); i++) {
    int64_t x, want, got;
    if (ag_layout_eval_index(b, i, &x) || ag_layout_eval_index(a, x, &want) ||
        ag_layout_eval_index(r, i, &got) || want != got)
      return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  long iters = argc > 1 ? atol(argv[1]) : 200000;
#if defined(__GLIBC__)
  /* keep freed arena chunks in the heap: otherwise glibc trims them and each
   * arena reset pays page faults, which would time the kernel, not the
   * algebra */
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
#endif
  if (iters < 1)
    iters = 1;
  bench w;
  ag_arena_init(&w.arena, 0);
  ag_layout_ctx_init(&w.c, &w.arena);
  int failed = 0;
  printf("layout algebra, %ld operations each; A = %s, B = %s, tiler = %s\n", iters, A_TEXT,
         B_TEXT, T_TEXT);
  const char *only = argc > 2 ? argv[2] : NULL; /* run the operations whose name has this */
  for (int op = 0; op < OP_N; op++) {
    if (only && !strstr(names[op], only))
      continue;
    reset(&w);
    if (parse_all(&w)) {
      fprintf(stderr, "bench_layout: parse: %s\n", ag_str_cstr(&w.c.err));
      return 1;
    }
    ag_layout r;
    int rc = run_op(&w, op, &r);
    if (rc || (op == OP_COMPOSE && verify_compose(&w.a, &w.b, &r))) {
      fprintf(stderr, "bench_layout: %s failed: %s\n", names[op], ag_str_cstr(&w.c.err));
      failed = 1;
      continue;
    }
    /* ROUNDS rounds of iters/ROUNDS operations; report the best and the
     * median round (the machine is shared, so the best is the cleanest) */
    double ns[ROUNDS];
    long per = iters / ROUNDS > 0 ? iters / ROUNDS : 1;
    for (int round = 0; round < ROUNDS; round++) {
      uint64_t t0 = bench_cpu_ns();
      for (long i = 0; i < per; i++) {
        if ((i & 255) == 255) { /* re-parse: the inputs live in the arena */
          reset(&w);
          parse_all(&w);
        }
        if (run_op(&w, op, &r)) {
          failed = 1;
          break;
        }
      }
      ns[round] = (double)(bench_cpu_ns() - t0) / (double)per;
    }
    for (int i = 0; i < ROUNDS; i++) /* sort */
      for (int j = i + 1; j < ROUNDS; j++)
        if (ns[j] < ns[i]) {
          double x = ns[i];
          ns[i] = ns[j];
          ns[j] = x;
        }
    printf("  %-32s %8.1f ns/op best, %8.1f median\n", names[op], ns[0], ns[ROUNDS / 2]);
    char goal[96];
    snprintf(goal, sizeof goal, "%s, best round", names[op]);
    if (op <= OP_TILED && !bench_goal(goal, ns[0], 1, 2000.0, "ns/op"))
      failed = 1;
  }
  ag_layout_ctx_release(&w.c);
  ag_arena_release(&w.arena);
  return failed;
}
