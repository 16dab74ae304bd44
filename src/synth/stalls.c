/*
 * stalls.c — the `stalls` signal (argus/stalls.h, docs/stalls.md): PC
 * samples by stall reason, keyed by (cubin, function, pcOffset), moved to
 * kernel-section PCs (ag_sass_cubin_section_pc) and attributed per reason
 * through the map (ag_attr_apply: m_r = sum_p alpha(r,p) m(p)). Per region
 * the reasons are sorted by samples; the reason entropy is
 * -sum_k q_k log2 q_k over the region's reason shares q_k (0: one reason
 * only); the association part is ag_attr_apply's shared share. One
 * ag_attr_apply per column plus one for the sum: O(columns x PCs); called
 * once per stalls collection.
 *
 * Columns (CUPTI's names on the H200): a stall reason
 * "smsp__pcsamp_warps_issue_stalled_<r>"; its "<...>_not_issued" twin
 * counts the subset of those samples in which the warp issued nothing (so
 * it is never added to a total); "smsp__pcsamp_sample_count" and
 * "smsp__pcsamp_samples_data_dropped" are not reasons. A region's samples
 * are the sum of its reasons.
 *
 * Barrier samples: with BAR.SYNC.DEFER_BLOCKING a warp keeps issuing the
 * independent instructions after the barrier and is sampled "barrier" at
 * the first one that needs it (seen on the H200: seven FADDs after the BAR,
 * the samples on the BRA after them). Those samples (and their twin's) are
 * moved to the BAR itself, the nearest one before them in straight-line
 * code (no branch, call or exit between, at most 64 instructions back), so
 * they count for the region that waits at the barrier; the signal says how
 * many moved.
 */
#include "argus/stalls.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REASON_PREFIX "smsp__pcsamp_warps_issue_stalled_"
#define NOT_ISSUED "_not_issued"

typedef struct spc {
  uint64_t pc;          /* kernel-section offset */
  const char *function; /* CUPTI's key */
  uint32_t fpc;
  double *v;            /* per column, after the barrier move */
} spc;

static int cmp_spc(const void *a, const void *b) {
  const spc *x = a, *y = b;
  return (x->pc > y->pc) - (x->pc < y->pc);
}

typedef struct top {
  double v;
  int p;
} top;

static int cmp_top(const void *a, const void *b) {
  const top *x = a, *y = b;
  return (x->v < y->v) - (x->v > y->v);
}

/* 1: column name m is a stall reason (not a _not_issued twin nor a count). */
static int is_reason(const char *m) {
  size_t n = strlen(m), k = strlen(NOT_ISSUED);
  if (n > k && !strcmp(m + n - k, NOT_ISSUED))
    return 0;
  return !strncmp(m, REASON_PREFIX, strlen(REASON_PREFIX));
}

/* The column of reason column c's _not_issued twin, or -1. */
static int twin_of(const ag_sass_ev *e, int c) {
  char name[256];
  snprintf(name, sizeof name, "%s%s", e->metrics[c], NOT_ISSUED);
  return ag_sass_ev_metric(e, name);
}

static const char *short_name(const char *m) {
  return strncmp(m, REASON_PREFIX, strlen(REASON_PREFIX)) ? m : m + strlen(REASON_PREFIX);
}

static int ends_block(const char *op) {
  return !strncmp(op, "BRA", 3) || !strncmp(op, "EXIT", 4) || !strncmp(op, "RET", 3) ||
         !strncmp(op, "CALL", 4) || !strncmp(op, "JMP", 3) || !strncmp(op, "BRX", 3);
}

/* An instruction that waits itself (a barrier, a warpgroup or mbarrier
 * wait): samples there stay there. */
static int waits_itself(const char *op) {
  return !strncmp(op, "BAR", 3) || !strncmp(op, "WARPGROUP", 9) || !strncmp(op, "SYNCS", 5) ||
         !strncmp(op, "DEPBAR", 6) || !strncmp(op, "WARPSYNC", 8);
}

/* The pc of the BAR the warp waits at when sampled "barrier" at (function,
 * pc): the nearest BAR.SYNC / BAR.RED before it in straight-line code; the
 * pc itself when there is none, or when the instruction there waits itself
 * (WARPGROUP.DEPBAR, SYNCS, ...: seen with barrier samples in gemm_tma). */
static uint32_t barrier_home(const ag_sass_ev *e, const char *function, uint32_t pc) {
  for (uint32_t k = 0; k <= 64 && k * 16 <= pc; k++) {
    const ag_sass_insn *in = ag_sass_ev_insn(e, function, pc - 16 * k);
    if (!in || (!k && waits_itself(in->op)))
      return pc;
    if (!strncmp(in->op, "BAR.SYNC", 8) || !strncmp(in->op, "BAR.RED", 7))
      return pc - 16 * k;
    if (k && ends_block(in->op))
      return pc;
  }
  return pc;
}

static json_int_t int_field(const ag_sass_ev *e, const char *k) {
  json_t *v = json_object_get(e->root, k);
  return json_is_integer(v) ? json_integer_value(v) : -1;
}

/* The entry of (function, pc) in pcs[0..*np), added when new. */
static spc *entry(spc *pcs, int *np, double *cells, int C, const ag_sass_cubin *cub,
                  const char *kernel, const char *function, uint32_t pc, ag_diags *diags,
                  int *rc) {
  for (int p = 0; p < *np; p++)
    if (pcs[p].fpc == pc && !strcmp(pcs[p].function, function))
      return &pcs[p];
  spc *s = &pcs[*np];
  if (ag_sass_cubin_section_pc(cub, kernel, function, pc, &s->pc)) {
    *rc = ag_diags_add(diags, AG_SEV_ERROR, NULL, 0, 0, NULL, 0,
                       "stalls: pc 0x%x of '%s' is not in the cubin's kernel '%s': the "
                       "evidence is of another build",
                       pc, function, kernel);
    *rc = *rc ? *rc : AG_EINVAL;
    return NULL;
  }
  s->function = function, s->fpc = pc, s->v = &cells[(size_t)*np * C];
  (*np)++;
  return s;
}

/* The reasons of region k, sorted by samples, and the entropy of their
 * shares; *best the top reason's column. */
static json_t *reasons_json(const ag_sass_ev *e, const double *m, int k, int R, double tot,
                            double *entropy, int *best) {
  top *t = ag_calloc((size_t)e->nmetrics + 1, sizeof *t);
  json_t *a = json_array();
  *entropy = 0;
  *best = -1;
  if (!t || !a) {
    ag_free(t);
    json_decref(a);
    return NULL;
  }
  int n = 0;
  for (int c = 0; c < e->nmetrics; c++)
    if (is_reason(e->metrics[c]) && m[(size_t)c * R + k] > 0)
      t[n++] = (top){m[(size_t)c * R + k], c};
  qsort(t, (size_t)n, sizeof *t, cmp_top);
  for (int i = 0; i < n; i++) {
    double q = tot > 0 ? t[i].v / tot : 0;
    if (q > 0 && n > 1)
      *entropy -= q * log2(q);
    int tw = twin_of(e, t[i].p);
    json_array_append_new(a, json_pack("{s:s,s:f,s:f,s:o?}", "reason",
                                       short_name(e->metrics[t[i].p]), "samples", t[i].v,
                                       "share", q, "not_issued",
                                       tw >= 0 ? json_real(m[(size_t)tw * R + k]) : NULL));
  }
  *best = n ? t[0].p : -1;
  ag_free(t);
  return a;
}

int ag_stalls_json(const ag_attr_map *map, const ag_sass_ev *e, const ag_sass_cubin *cub,
                   const char *kernel, const char *version, ag_diags *diags, json_t **out) {
  *out = NULL;
  int R = map->nregions, C = e->nmetrics, rc = 0, np = 0;
  size_t cap = 2 * e->nrows + 1; /* a row's PC, and its BAR's */
  spc *pcs = ag_calloc(cap, sizeof *pcs);
  double *cells = ag_calloc(cap * (size_t)(C ? C : 1), sizeof *cells);
  uint64_t *pcv = ag_calloc(cap, sizeof *pcv);
  double *val = ag_calloc(cap, sizeof *val);
  double *m = ag_calloc((size_t)C * R + 1, sizeof *m);
  top *tp = ag_calloc(cap, sizeof *tp);
  ag_attr_result *all = NULL, *one = NULL;
  json_t *regs = NULL;
  double moved = 0;
  if (!pcs || !cells || !pcv || !val || !m || !tp) {
    rc = AG_ENOMEM;
    goto out;
  }
  int bc = ag_sass_ev_metric(e, REASON_PREFIX "barrier"), btw = bc >= 0 ? twin_of(e, bc) : -1;
  for (size_t i = 0; i < e->nrows; i++) {
    const ag_sass_ev_row *r = &e->rows[i];
    if (!r->variant || strcmp(r->function, kernel))
      continue;
    spc *s = entry(pcs, &np, cells, C, cub, kernel, r->function, r->pc, diags, &rc);
    if (!s)
      goto out;
    uint32_t home = bc >= 0 && r->v[bc] ? barrier_home(e, r->function, r->pc) : r->pc;
    spc *h = home == r->pc ? s : entry(pcs, &np, cells, C, cub, kernel, r->function, home,
                                       diags, &rc);
    if (!h)
      goto out;
    for (int c = 0; c < C; c++)
      ((c == bc || c == btw) ? h : s)->v[c] += (double)r->v[c];
    if (h != s)
      moved += (double)r->v[bc];
  }
  qsort(pcs, (size_t)np, sizeof *pcs, cmp_spc);
  for (int p = 0; p < np; p++) {
    pcv[p] = pcs[p].pc;
    for (int c = 0; c < C; c++)
      if (is_reason(e->metrics[c]))
        val[p] += pcs[p].v[c];
  }
  ag_attr_metric mt = {"pc_samples", version, kernel, pcv, val, np};
  if ((rc = ag_attr_apply(map, &mt, diags, &all)))
    goto out;
  double *col = ag_calloc((size_t)np + 1, sizeof *col);
  if (!col) {
    rc = AG_ENOMEM;
    goto out;
  }
  for (int c = 0; c < C; c++) {
    for (int p = 0; p < np; p++)
      col[p] = pcs[p].v[c];
    ag_attr_metric mc = {e->metrics[c], version, kernel, pcv, col, np};
    if ((rc = ag_attr_apply(map, &mc, diags, &one)))
      break;
    for (int k = 0; k < R; k++)
      m[(size_t)c * R + k] = one->m[k];
    ag_attr_result_free(one);
    one = NULL;
  }
  ag_free(col);
  if (rc)
    goto out;
  regs = json_array();
  for (int k = 0; regs && k < R; k++) {
    if (!(all->m[k] > 0))
      continue;
    double ent;
    int best;
    json_t *rs = reasons_json(e, m, k, R, all->m[k], &ent, &best);
    int nt = 0;
    for (int p = 0; p < np; p++) {
      double v = val[p] * ag_attr_alpha(map, pcv[p], k);
      if (v > 0)
        tp[nt++] = (top){v, p};
    }
    qsort(tp, (size_t)nt, sizeof *tp, cmp_top);
    json_t *tops = json_array();
    for (int i = 0; tops && i < nt && i < AG_STALLS_TOP_PCS; i++) {
      const spc *s = &pcs[tp[i].p];
      const ag_sass_insn *in = ag_sass_ev_insn(e, s->function, s->fpc);
      int bcol = -1;
      for (int c = 0; c < C; c++)
        if (is_reason(e->metrics[c]) && (bcol < 0 || s->v[c] > s->v[bcol]))
          bcol = c;
      json_array_append_new(tops, json_pack("{s:I,s:f,s:s?,s:i,s:s?}", "pc",
                                            (json_int_t)s->pc, "samples", tp[i].v, "opcode",
                                            in ? in->op : NULL, "line",
                                            ag_attr_line(map, s->pc), "reason",
                                            bcol >= 0 ? short_name(e->metrics[bcol]) : NULL));
    }
    json_t *o = json_pack("{s:s,s:f,s:f,s:f,s:f,s:s?,s:o,s:o}", "region", map->regions[k],
                          "samples", all->m[k], "share",
                          all->total > 0 ? all->m[k] / all->total : 0.0, "shared_share",
                          all->shared[k] / all->m[k], "reason_entropy_bits", ent, "top_reason",
                          best >= 0 ? short_name(e->metrics[best]) : NULL, "reasons",
                          rs ? rs : json_array(), "top_pcs", tops ? tops : json_array());
    if (!o || json_array_append_new(regs, o)) {
      rc = AG_ENOMEM;
      goto out;
    }
  }
  if (!regs) {
    rc = AG_ENOMEM;
    goto out;
  }
  *out = json_pack("{s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:b,s:s,s:O}", "signal",
                   "stalls", "qual", "attributed", "kernel", kernel, "version", version,
                   "period_cycles", int_field(e, "period_cycles"), "total_samples",
                   int_field(e, "total_samples"), "dropped_samples",
                   int_field(e, "dropped_samples"), "hw_buffer_full",
                   int_field(e, "hw_buffer_full"), "non_user_samples",
                   int_field(e, "non_user_samples"), "samples", all->total, "unattributed",
                   all->unattributed, "barrier_samples_moved", moved, "conserved",
                   ag_attr_conserved(all), "rule",
                   "samples attributed per stall reason through the PC-to-region map; "
                   "barrier samples at the BAR the warp waits at",
                   "regions", regs);
  if (!*out)
    rc = AG_ENOMEM;
out:
  json_decref(regs);
  ag_attr_result_free(one);
  ag_attr_result_free(all);
  ag_free(tp);
  ag_free(m);
  ag_free(val);
  ag_free(pcv);
  ag_free(cells);
  ag_free(pcs);
  return rc;
}
