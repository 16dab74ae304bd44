/*
 * truth_check.h — the ground-truth rule of tests/data/cuda/attrib_truth.cu
 * on decoded SASS-metrics evidence, shared by the GPU test (a fresh run) and
 * the CPU test (the run recorded on the H200, tests/data/evidence).
 *
 * With W warps, every PC p of the kernel executed n(p) times per warp:
 *   - the helper's PCs (owner `$attrib_truth$_Z3mixff`, ptxas's copy of the
 *     __noinline__ helper in the kernel's section) from its entry through
 *     its RET: n = k1 + k2, each of them, and none missing;
 *   - every other PC: n in {1, k1, k2, k3} (straight code once, the three
 *     loops' bodies and latches k times: the guards run once);
 *   - the call sites: one CALL with n = k1 (region A), one with n = k2 (B);
 *     at least one FFMA with n = k3 (region C, the inlined step);
 *   - thread instructions = 32 x warp instructions (no divergence, full
 *     warps); predicated-on thread instructions = thread instructions on
 *     unguarded PCs, at most that on guarded ones;
 *   - no record dropped; every row has an opcode.
 * Returns 0 or the number of violations, with the first ones in why.
 */
#ifndef ARGUS_TRUTH_CHECK_H
#define ARGUS_TRUTH_CHECK_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "argus/sass_ev.h"

#define TRUTH_K1 3
#define TRUTH_K2 5
#define TRUTH_K3 7
#define TRUTH_BLOCKS 4
#define TRUTH_THREADS 128
#define TRUTH_KERNEL "attrib_truth"
#define TRUTH_HELPER "$attrib_truth$_Z3mixff"

/* Appends a violation to why: the first 4 per-PC ones (cap 4), every
 * summary one (cap 0). */
static void truth_add(char *why, size_t n, int *bad, int cap, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void truth_add(char *why, size_t n, int *bad, int cap, const char *fmt, ...) {
  if ((*bad)++ < cap || !cap) {
    size_t len = strlen(why);
    va_list ap;
    va_start(ap, fmt);
    if (len < n)
      vsnprintf(why + len, n - len, fmt, ap);
    va_end(ap);
  }
}

static int truth_check(const ag_sass_ev *e, uint64_t warps, int k1, int k2, int k3, char *why,
                       size_t wn) {
  int bad = 0, calls_a = 0, calls_b = 0, ffma_c = 0;
  why[0] = 0;
  int ci = ag_sass_ev_metric(e, "smsp__sass_inst_executed");
  int ct = ag_sass_ev_metric(e, "smsp__sass_thread_inst_executed");
  int cp = ag_sass_ev_metric(e, "smsp__sass_thread_inst_executed_pred_on");
  if (ci < 0 || ct < 0 || cp < 0 || !warps) {
    truth_add(why, wn, &bad, 0, "the evidence lacks the instruction metrics; ");
    return bad;
  }
  if (e->dropped_records)
    truth_add(why, wn, &bad, 0, "%llu records dropped; ", (unsigned long long)e->dropped_records);
  if (e->sass_status)
    truth_add(why, wn, &bad, 0, "no opcodes: %s; ", e->sass_status);
  size_t helper_rows = 0;
  for (size_t i = 0; i < e->nrows; i++) {
    const ag_sass_ev_row *r = &e->rows[i];
    if (!r->variant || strcmp(r->function, TRUTH_KERNEL))
      continue;
    const ag_sass_insn *in = ag_sass_ev_insn(e, r->function, r->pc);
    uint64_t v = r->v[ci], n = v / warps;
    if (!in) {
      truth_add(why, wn, &bad, 4, "pc 0x%x has no opcode; ", r->pc);
      continue;
    }
    if (v % warps)
      truth_add(why, wn, &bad, 4, "pc 0x%x (%s): %llu is not a multiple of %llu warps; ", r->pc,
                 in->op, (unsigned long long)v, (unsigned long long)warps);
    int helper = !strcmp(in->owner, TRUTH_HELPER);
    helper_rows += helper;
    if (helper && n != (uint64_t)(k1 + k2))
      truth_add(why, wn, &bad, 4, "helper pc 0x%x (%s): %llu per warp, want k1 + k2 = %d; ",
                 r->pc, in->op, (unsigned long long)n, k1 + k2);
    if (!helper && n != 1 && n != (uint64_t)k1 && n != (uint64_t)k2 && n != (uint64_t)k3)
      truth_add(why, wn, &bad, 4, "pc 0x%x (%s): %llu per warp, want 1, k1, k2 or k3; ", r->pc,
                 in->op, (unsigned long long)n);
    if (!strncmp(in->op, "CALL", 4)) {
      calls_a += n == (uint64_t)k1;
      calls_b += n == (uint64_t)k2;
    }
    ffma_c += !helper && n == (uint64_t)k3 && !strncmp(in->op, "FFMA", 4);
    if (r->v[ct] != 32 * v)
      truth_add(why, wn, &bad, 4, "pc 0x%x: %llu thread instructions for %llu warp instructions; ",
                 r->pc, (unsigned long long)r->v[ct], (unsigned long long)v);
    if (in->pred[0] ? r->v[cp] > r->v[ct] : r->v[cp] != r->v[ct])
      truth_add(why, wn, &bad, 4, "pc 0x%x (%s%s): %llu predicated-on of %llu thread "
                 "instructions; ", r->pc, in->pred, in->op, (unsigned long long)r->v[cp],
                 (unsigned long long)r->v[ct]);
  }
  /* every helper PC through its RET executed */
  size_t helper_pcs = 0;
  int in_helper = 0;
  for (size_t i = 0; i < e->nins; i++) {
    const ag_sass_insn *in = &e->ins[i];
    if (strcmp(in->function, TRUTH_KERNEL) || strcmp(in->owner, TRUTH_HELPER))
      continue;
    if (in_helper < 0)
      break;
    helper_pcs++;
    in_helper = strncmp(in->op, "RET", 3) ? 1 : -1;
  }
  if (!helper_pcs || helper_rows != helper_pcs)
    truth_add(why, wn, &bad, 0, "%zu helper PCs executed of %zu through its RET; ", helper_rows,
               helper_pcs);
  if (calls_a != 1 || calls_b != 1)
    truth_add(why, wn, &bad, 0, "call sites: %d with k1, %d with k2 (want 1 and 1); ", calls_a,
               calls_b);
  if (!ffma_c)
    truth_add(why, wn, &bad, 0, "no FFMA runs k3 times (the inlined step); ");
  return bad;
}

/* The warps of the evidence's launch of the kernel (launches[0]). */
static uint64_t truth_warps(const ag_sass_ev *e) {
  json_t *l = json_array_get(json_object_get(e->root, "launches"), 0);
  json_t *g = json_object_get(l, "grid"), *b = json_object_get(l, "block");
  uint64_t ctas = 1, thr = 1;
  for (size_t i = 0; i < 3; i++) {
    ctas *= (uint64_t)json_integer_value(json_array_get(g, i));
    thr *= (uint64_t)json_integer_value(json_array_get(b, i));
  }
  return ctas * ((thr + 31) / 32);
}

#endif
