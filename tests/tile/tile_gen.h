/*
 * tile_gen.h — random small tile programs within the checked subset, for the
 * property test (test_tile_prop on the CPU, test_gpu_tile_prop on the GPU):
 * the lowered kernel and the value reference must compute the same tensors.
 *
 * A program is one kernel of T threads (32, 64 or 128) per block over
 * tensors X, Y (inputs, f32), B (input, bf16) and Z (output, f32) of N
 * elements. Its body is a seeded sequence of statements over four f32 data
 * names bound at the top (a, b, c, e):
 *   - element-wise arithmetic (+, -, *, small constants, cvt to bf16 and
 *     back, cvt to i32 and back), reads of X, Y and B at the thread's
 *     element or a neighbour's;
 *   - every element-wise builtin of the table (src/tile/tile_builtin.h):
 *     a unary one on an argument in [0.5, 1.5] (abs(X[i]) + 0.5,
 *     min(abs(e), 1.0) + 0.5: in the domain of sqrt and rcp, small for exp),
 *     a binary one on two expressions;
 *   - warp exchanges shfl_xor(x, m) (the table's lane row) of an expression,
 *     with m in 1..31, except under an if on the thread (the checker refuses
 *     a warp-wide operation there, even on a warp-role branch);
 *   - a register tile rl of 4 f32: fill(rl, e), rl[k] = e (k a constant or
 *     a loop variable mod 4) and every reduction of the table over it;
 *   - loops of 1..4 trips (their variable in indices and conditions);
 *   - ifs on the thread, its warp (a role branch), the block or a loop
 *     variable, with else branches, assigning names bound before them;
 *   - shared-memory staging: every thread writes its slot, a barrier, reads
 *     another thread's slot, a barrier (so no write overtakes a read), at
 *     the top level or in loops, never under an if (the checker refuses a
 *     barrier under a condition it cannot decide);
 *   - conditional stores to Z before the final one.
 * Every name a block assigns is bound before it (docs/lower.md's scoping),
 * barriers are never under a condition, and values stay
 * small (|x| < 10): f32 results agree within argus run's tolerance even
 * where the compiler fuses a multiply-add. Include once per test program.
 */
#ifndef ARGUS_TEST_TILE_GEN_H
#define ARGUS_TEST_TILE_GEN_H

#include <stdint.h>

#include "argus/core.h"

#include "../../src/tile/tile_builtin.h"

typedef struct tgen {
  uint64_t s;
  ag_str *out;
  int threads;
  int depth;   /* nesting of loops and ifs */
  int loopv;   /* loop variables open (i0, i1, ...) */
  int in_cond; /* inside an if: no barrier */
  int split;   /* inside an if on the thread: no warp exchange */
  int budget;  /* statements left */
} tgen;

static uint64_t tg_next(tgen *g) { /* splitmix64 */
  uint64_t z = (g->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static int tg_pick(tgen *g, int n) { return (int)(tg_next(g) % (uint64_t)n); }

static const char *const tg_vars[] = {"a", "b", "c", "e"};

static void tg_indent(tgen *g) {
  for (int i = 0; i < g->depth + 1; i++)
    ag_str_puts(g->out, "    ");
}

/* An index into the tensors: the thread's element, a neighbour's (mod N),
 * or one a loop variable moves. */
static void tg_index(tgen *g) {
  int k = tg_pick(g, g->loopv ? 4 : 3);
  if (k == 0)
    ag_str_puts(g->out, "g");
  else if (k == 1)
    ag_str_printf(g->out, "(g + %d) %% N", 1 + tg_pick(g, 40));
  else if (k == 2)
    ag_str_printf(g->out, "(g + N - %d) %% N", 1 + tg_pick(g, 40));
  else
    ag_str_printf(g->out, "(g + i%d * %d) %% N", tg_pick(g, g->loopv), 1 + tg_pick(g, 8));
}

static void tg_expr(tgen *g, int d);

/* A random row of the builtin table of the given kind (element-wise or a reduction). */
static const ag__builtin *tg_builtin(tgen *g, ag__bikind kind) {
  int n, m = 0;
  const ag__builtin *t = ag__builtin_table(&n), *of[64];
  for (int i = 0; i < n && m < 64; i++)
    if (t[i].kind == kind)
      of[m++] = &t[i];
  return of[tg_pick(g, m)];
}

/* A call of an element-wise builtin: a unary one on an argument in [0.5,
 * 1.5], a binary one on two expressions. */
static void tg_call(tgen *g, int d) {
  const ag__builtin *b = tg_builtin(g, AG__BI_MAP);
  ag_str_printf(g->out, "%s(", b->name);
  if (b->arity == 2) {
    tg_expr(g, d - 1);
    ag_str_puts(g->out, ", ");
    tg_expr(g, d - 1);
  } else if (tg_pick(g, 2)) {
    ag_str_printf(g->out, "abs(%s[", tg_pick(g, 2) ? "X" : "Y");
    tg_index(g);
    ag_str_puts(g->out, "]) + 0.5");
  } else {
    ag_str_puts(g->out, "min(abs(");
    tg_expr(g, d - 1);
    ag_str_puts(g->out, "), 1.0) + 0.5");
  }
  ag_str_puts(g->out, ")");
}

/* An f32 data expression of bounded size and magnitude. */
static void tg_expr(tgen *g, int d) {
  int k = d <= 0 ? tg_pick(g, 2) : tg_pick(g, 12);
  if (k == 9 && g->split)
    k = 10;
  switch (k) {
  case 0: ag_str_puts(g->out, tg_vars[tg_pick(g, 4)]); break;
  case 1: {
    const char *t = tg_pick(g, 2) ? "X" : "Y";
    ag_str_printf(g->out, "%s[", t);
    tg_index(g);
    ag_str_puts(g->out, "]");
    break;
  }
  case 2:
  case 3:
    ag_str_puts(g->out, "(");
    tg_expr(g, d - 1);
    ag_str_puts(g->out, tg_pick(g, 2) ? " + " : " - ");
    tg_expr(g, d - 1);
    ag_str_puts(g->out, ")");
    break;
  case 4: { /* a product with a small constant keeps values small */
    static const char *const c[] = {"0.5", "0.25", "1.5", "0.75", "-0.5"};
    ag_str_puts(g->out, "(");
    tg_expr(g, d - 1);
    ag_str_printf(g->out, " * %s)", c[tg_pick(g, 5)]);
    break;
  }
  case 5: /* a product of two inputs: both below 0.5 in magnitude */
    ag_str_puts(g->out, "(X[");
    tg_index(g);
    ag_str_puts(g->out, "] * Y[");
    tg_index(g);
    ag_str_puts(g->out, "])");
    break;
  case 6: /* through bf16 and back: round to nearest even on both sides */
    ag_str_puts(g->out, "cvt(cvt(");
    tg_expr(g, d - 1);
    ag_str_puts(g->out, ", bf16), f32)");
    break;
  case 7:
    ag_str_puts(g->out, "cvt(B[");
    tg_index(g);
    ag_str_puts(g->out, "], f32)");
    break;
  case 8: /* float to integer and back: truncation of an exact product (no FMA to differ) */
    ag_str_printf(g->out, "(cvt(cvt(%s[", tg_pick(g, 2) ? "X" : "Y");
    tg_index(g);
    ag_str_puts(g->out, "] * 8.0, i32), f32) * 0.125)");
    break;
  case 9: /* another lane's value */
    ag_str_printf(g->out, "%s(", tg_builtin(g, AG__BI_LANE)->name);
    tg_expr(g, d - 1);
    ag_str_printf(g->out, ", %d)", 1 + tg_pick(g, 31));
    break;
  default:
    tg_call(g, d);
    break;
  }
}

/* A condition: on the thread, its warp, the block, a loop variable. */
static void tg_cond(tgen *g, int *thread_dep) {
  int k = tg_pick(g, g->loopv ? 6 : 5);
  *thread_dep = k <= 2;
  switch (k) {
  case 0: ag_str_printf(g->out, "tid %% %d == %d", 2 + tg_pick(g, 3), tg_pick(g, 2)); break;
  case 1: ag_str_printf(g->out, "tid < %d", 1 + tg_pick(g, g->threads)); break;
  case 2: ag_str_printf(g->out, "wid %s %d", tg_pick(g, 2) ? "<" : "==", tg_pick(g, 4)); break;
  case 3: ag_str_printf(g->out, "blockIdx.x %% 2 == %d", tg_pick(g, 2)); break;
  case 4: ag_str_printf(g->out, "N > %d", 64 * tg_pick(g, 8)); break;
  default: ag_str_printf(g->out, "i%d == %d", tg_pick(g, g->loopv), tg_pick(g, 3)); break;
  }
}

static void tg_block(tgen *g, int n);

static void tg_stmt(tgen *g) {
  g->budget--;
  int k = tg_pick(g, g->depth >= 2 ? 5 : 8);
  if (k == 3 && g->in_cond)
    k = 0; /* no barrier under a condition */
  switch (k) {
  case 0:
  case 1: /* in a loop, damped: the values stay small over the trips */
    tg_indent(g);
    ag_str_printf(g->out, "%s = ", tg_vars[tg_pick(g, 4)]);
    tg_expr(g, 2);
    ag_str_puts(g->out, g->loopv ? " * 0.25\n" : "\n");
    break;
  case 2: /* a conditional store, overwritten or not by the last one */
    tg_indent(g);
    ag_str_puts(g->out, "Z[g] = ");
    tg_expr(g, 1);
    ag_str_puts(g->out, "\n");
    break;
  case 3: { /* shared staging: write own slot, barrier, read another's, barrier */
    const char *v = tg_vars[tg_pick(g, 4)];
    tg_indent(g);
    ag_str_puts(g->out, "sh[tid] = ");
    tg_expr(g, 1);
    ag_str_puts(g->out, "\n");
    tg_indent(g);
    ag_str_puts(g->out, "syncthreads()\n");
    tg_indent(g);
    ag_str_printf(g->out, "%s = %s + sh[(tid + %d) %% %d]\n", v, v, 1 + tg_pick(g, g->threads - 1),
                  g->threads);
    tg_indent(g);
    ag_str_puts(g->out, "syncthreads()\n");
    break;
  }
  case 4: { /* the register tile: written whole or one element, or reduced */
    int r = tg_pick(g, 3);
    tg_indent(g);
    if (r == 0) {
      ag_str_puts(g->out, "fill(rl, ");
      tg_expr(g, 1);
      ag_str_puts(g->out, ")\n");
    } else if (r == 1) {
      if (g->loopv && tg_pick(g, 2))
        ag_str_printf(g->out, "rl[i%d %% 4] = ", tg_pick(g, g->loopv));
      else
        ag_str_printf(g->out, "rl[%d] = ", tg_pick(g, 4));
      tg_expr(g, 1);
      ag_str_puts(g->out, "\n");
    } else { /* a mean's size: the sum of 4 scaled by 0.25 */
      ag_str_printf(g->out, "%s = %s(rl) * 0.25%s\n", tg_vars[tg_pick(g, 4)],
                    tg_builtin(g, AG__BI_REDUCE)->name, g->loopv ? " * 0.25" : "");
    }
    break;
  }
  case 5:
  case 6: { /* a loop */
    tg_indent(g);
    ag_str_printf(g->out, "for i%d in range(%d):\n", g->loopv, 1 + tg_pick(g, 4));
    g->loopv++;
    g->depth++;
    tg_block(g, 1 + tg_pick(g, 3));
    g->depth--;
    g->loopv--;
    break;
  }
  default: { /* an if, maybe with an else */
    int td;
    tg_indent(g);
    ag_str_puts(g->out, "if ");
    tg_cond(g, &td);
    ag_str_puts(g->out, ":\n");
    int was = g->in_cond, split = g->split;
    g->in_cond = 1; /* the checker takes barriers under no run-time if (td or not) */
    g->split |= td;
    g->depth++;
    tg_block(g, 1 + tg_pick(g, 2));
    g->depth--;
    if (tg_pick(g, 2)) {
      tg_indent(g);
      ag_str_puts(g->out, "else:\n");
      g->depth++;
      tg_block(g, 1 + tg_pick(g, 2));
      g->depth--;
    }
    g->in_cond = was;
    g->split = split;
    break;
  }
  }
}

static void tg_block(tgen *g, int n) {
  for (int i = 0; i < n; i++)
    tg_stmt(g);
}

/* The program of seed s into out; *threads gets its block size. */
static void tile_gen(uint64_t seed, ag_str *out, int *threads) {
  tgen g = {seed * 0x2545f4914f6cdd1dull + 1, out, 0, 0, 0, 0, 0, 0};
  static const int T[] = {32, 64, 128};
  g.threads = T[tg_pick(&g, 3)];
  *threads = g.threads;
  ag_str_printf(out, "# generated by tests/tile/tile_gen.h, seed %llu\n",
                (unsigned long long)seed);
  ag_str_printf(out, "@threads(%d)\n@grid(N / %d)\n", g.threads, g.threads);
  ag_str_puts(out, "def prop(X: Tensor(N, f32), Y: Tensor(N, f32), B: Tensor(N, bf16), "
                   "Z: Tensor(N, f32)):\n");
  ag_str_printf(out, "    assume N %% %d == 0\n", g.threads);
  ag_str_puts(out, "    tid = threadIdx.x\n    wid = tid / 32\n");
  ag_str_printf(out, "    g = blockIdx.x * %d + tid\n", g.threads);
  ag_str_printf(out, "    sh = make_shared((%d,), f32)\n", g.threads);
  ag_str_puts(out, "    a = X[g]\n    b = Y[g]\n    c = X[g] * 0.5\n    e = cvt(B[g], f32)\n");
  ag_str_puts(out, "    rl = make_local((4,), f32)\n    fill(rl, 0.25)\n");
  g.budget = 4 + tg_pick(&g, 6);
  while (g.budget > 0)
    tg_stmt(&g);
  ag_str_puts(out, "    Z[g] = ");
  tg_expr(&g, 2);
  ag_str_puts(out, " + a\n");
}

#endif
