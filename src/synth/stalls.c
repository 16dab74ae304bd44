/*
 * stalls.c — the `stalls` signal (argus/stalls.h, docs/stalls.md): PC
 * samples by stall reason, keyed by (cubin, function, pcOffset), moved to
 * kernel-section PCs (ag_sass_cubin_section_pc) and attributed per reason
 * through the map (ag_attr_apply: m_r = sum_p alpha(r,p) m(p)). Per region
 * the reasons are sorted by samples; the reason entropy is
 * -sum_k q_k log2 q_k over the region's reason shares q_k (0: one reason
 * only); the association part is ag_attr_apply's shared share. One
 * ag_attr_apply per reason column plus one for the sum: O(reasons x PCs);
 * called once per stalls collection.
 */
#include "argus/stalls.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct spc {
  uint64_t pc;       /* kernel-section offset */
  const ag_sass_ev_row *row;
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

static json_int_t int_field(const ag_sass_ev *e, const char *k) {
  json_t *v = json_object_get(e->root, k);
  return json_is_integer(v) ? json_integer_value(v) : -1;
}

/* The reasons of region k, sorted by samples, and the entropy of their
 * shares. */
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
    if (m[(size_t)c * R + k] > 0)
      t[n++] = (top){m[(size_t)c * R + k], c};
  qsort(t, (size_t)n, sizeof *t, cmp_top);
  for (int i = 0; i < n; i++) {
    double q = tot > 0 ? t[i].v / tot : 0;
    if (q > 0 && n > 1)
      *entropy -= q * log2(q);
    json_array_append_new(a, json_pack("{s:s,s:f,s:f}", "reason", e->metrics[t[i].p],
                                       "samples", t[i].v, "share", q));
  }
  *best = n ? t[0].p : -1;
  ag_free(t);
  return a;
}

int ag_stalls_json(const ag_attr_map *map, const ag_sass_ev *e, const ag_sass_cubin *cub,
                   const char *kernel, const char *version, ag_diags *diags, json_t **out) {
  *out = NULL;
  int R = map->nregions, C = e->nmetrics, rc = 0, np = 0;
  spc *pcs = ag_calloc(e->nrows + 1, sizeof *pcs);
  uint64_t *pcv = ag_calloc(e->nrows + 1, sizeof *pcv);
  double *val = ag_calloc(e->nrows + 1, sizeof *val);
  double *m = ag_calloc((size_t)C * R + 1, sizeof *m);
  top *tp = ag_calloc(e->nrows + 1, sizeof *tp);
  ag_attr_result *all = NULL, *one = NULL;
  json_t *regs = NULL;
  if (!pcs || !pcv || !val || !m || !tp) {
    rc = AG_ENOMEM;
    goto out;
  }
  for (size_t i = 0; i < e->nrows; i++) {
    const ag_sass_ev_row *r = &e->rows[i];
    if (!r->variant || strcmp(r->function, kernel))
      continue;
    if (ag_sass_cubin_section_pc(cub, kernel, r->function, r->pc, &pcs[np].pc)) {
      rc = ag_diags_add(diags, AG_SEV_ERROR, NULL, 0, 0, NULL, 0,
                        "stalls: pc 0x%x of '%s' is not in the cubin's kernel '%s': the "
                        "evidence is of another build",
                        r->pc, r->function, kernel);
      rc = rc ? rc : AG_EINVAL;
      goto out;
    }
    pcs[np++].row = r;
  }
  qsort(pcs, (size_t)np, sizeof *pcs, cmp_spc);
  for (int p = 0; p < np; p++) {
    pcv[p] = pcs[p].pc;
    for (int c = 0; c < C; c++)
      val[p] += (double)pcs[p].row->v[c];
  }
  ag_attr_metric mt = {"pc_samples", version, kernel, pcv, val, np};
  if ((rc = ag_attr_apply(map, &mt, diags, &all)))
    goto out;
  for (int c = 0; c < C; c++) {
    for (int p = 0; p < np; p++)
      val[p] = (double)pcs[p].row->v[c];
    ag_attr_metric mc = {e->metrics[c], version, kernel, pcv, val, np};
    if ((rc = ag_attr_apply(map, &mc, diags, &one)))
      goto out;
    for (int k = 0; k < R; k++)
      m[(size_t)c * R + k] = one->m[k];
    ag_attr_result_free(one);
    one = NULL;
  }
  regs = json_array();
  for (int k = 0; regs && k < R; k++) {
    if (!(all->m[k] > 0))
      continue;
    double ent;
    int best;
    json_t *rs = reasons_json(e, m, k, R, all->m[k], &ent, &best);
    int nt = 0;
    for (int p = 0; p < np; p++) {
      double total = 0;
      for (int c = 0; c < C; c++)
        total += (double)pcs[p].row->v[c];
      double v = total * ag_attr_alpha(map, pcv[p], k);
      if (v > 0)
        tp[nt++] = (top){v, p};
    }
    qsort(tp, (size_t)nt, sizeof *tp, cmp_top);
    json_t *tops = json_array();
    for (int i = 0; tops && i < nt && i < AG_STALLS_TOP_PCS; i++) {
      const ag_sass_ev_row *r = pcs[tp[i].p].row;
      const ag_sass_insn *in = ag_sass_ev_insn(e, r->function, r->pc);
      int bc = 0;
      for (int c = 1; c < C; c++)
        if (r->v[c] > r->v[bc])
          bc = c;
      json_array_append_new(tops, json_pack("{s:I,s:f,s:s?,s:i,s:s}", "pc",
                                            (json_int_t)pcv[tp[i].p], "samples", tp[i].v,
                                            "opcode", in ? in->op : NULL, "line",
                                            ag_attr_line(map, pcv[tp[i].p]), "reason",
                                            e->metrics[bc]));
    }
    json_t *o = json_pack("{s:s,s:f,s:f,s:f,s:f,s:s?,s:o,s:o}", "region", map->regions[k],
                          "samples", all->m[k], "share",
                          all->total > 0 ? all->m[k] / all->total : 0.0, "shared_share",
                          all->shared[k] / all->m[k], "reason_entropy_bits", ent, "top_reason",
                          best >= 0 ? e->metrics[best] : NULL, "reasons",
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
  *out = json_pack("{s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:f,s:f,s:b,s:O}", "signal", "stalls",
                   "qual", "attributed", "kernel", kernel, "version", version, "period_cycles",
                   int_field(e, "period_cycles"), "total_samples", int_field(e, "total_samples"),
                   "dropped_samples", int_field(e, "dropped_samples"), "hw_buffer_full",
                   int_field(e, "hw_buffer_full"), "non_user_samples",
                   int_field(e, "non_user_samples"), "samples", all->total, "unattributed",
                   all->unattributed, "conserved", ag_attr_conserved(all), "regions", regs);
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
  ag_free(pcs);
  return rc;
}
