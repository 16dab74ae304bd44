/*
 * attrib_signal.c — the attributed signals of `argus observe` (ownership,
 * inst_mix, barriers, branch; docs/attribution.md, "Signals") from the
 * mapping run's layout and counts, the -lineinfo build's cubin and, but for
 * ownership, the SASS-metrics evidence of the same program version (inst_mix
 * and barriers without it: derived from the map and the cubin's opcodes). Pure
 * CPU: the backend adapters (src/run/backend_map.c, backend_sass.c) read
 * the artifacts and call ag_attr_signal; the CPU tests call it on evidence
 * recorded on the H200.
 */
#include <math.h>
#include <string.h>

#include "argus/attrib.h"
#include "argus/sass_ev.h"
#include "argus/stalls.h"

#define WARP_LANES 32.0

/* 1 when region qname, with code in kernel `kernel`, is the queried region
 * (its qualified or its own name) or inside it; the kernel's name selects
 * every region with code in it, the regions of the helpers it calls too
 * (hstep/inner is no kernel's by name: docs/attribution.md, "Regions
 * inside a helper"). */
static int selected(const char *qname, const char *kernel, const char *q) {
  if (!q || !*q || !strcmp(q, kernel))
    return 1;
  size_t n = strlen(q), l = strlen(qname);
  if (!strcmp(qname, q))
    return 1;
  /* its own name: the last component */
  if (l > n && qname[l - n - 1] == '/' && !strcmp(qname + l - n, q))
    return 1;
  /* inside: a component path that starts with q's qualified or own name */
  for (const char *p = qname; (p = strstr(p, q)); p++)
    if ((p == qname || p[-1] == '/') && p[n] == '/')
      return 1;
  return 0;
}

static void value_q(json_t *vals, const char *region, const char *signal, const char *stat,
                    json_t *v, const char *unit, const char *qual) {
  json_array_append_new(vals, json_pack("{s:s,s:s,s:s,s:o,s:s,s:s}", "region", region, "signal",
                                        signal, "stat", stat, "value", v, "unit", unit, "qual",
                                        qual));
}

static void value(json_t *vals, const char *region, const char *signal, const char *stat,
                  json_t *v, const char *unit) {
  value_q(vals, region, signal, stat, v, unit, "attributed");
}

static void note(json_t *arr, const char *what, const char *why) {
  json_array_append_new(arr, json_pack("{s:s,s:s}", "what", what, "why", why));
}

/* The diagnostics' messages, joined. */
static void diag_text(const ag_diags *d, ag_str *out) {
  for (size_t i = 0; i < d->items.n; i++)
    ag_str_printf(out, "%s%s", i ? "; " : "", d->items.v[i].msg);
}

/* One PC-keyed metric of `kernel` from the evidence: section PCs ascending,
 * values, opcodes (borrowed). *np = 0 when the evidence has no row of it. */
typedef struct pcs {
  uint64_t *pc;
  double *v;
  const char **op;
  int n;
} pcs;

static void pcs_free(pcs *m) {
  ag_free(m->pc);
  ag_free(m->v);
  ag_free(m->op);
  memset(m, 0, sizeof *m);
}

static int metric_of(const ag_sass_ev *e, const ag_sass_cubin *cub, const char *kernel,
                     const char *name, pcs *out, ag_str *why) {
  memset(out, 0, sizeof *out);
  int c = ag_sass_ev_metric(e, name);
  if (c < 0) {
    ag_str_printf(why, "the SASS-metrics evidence has no metric '%s'", name);
    return AG_ENOTFOUND;
  }
  out->pc = ag_calloc(e->nrows + 1, sizeof *out->pc);
  out->v = ag_calloc(e->nrows + 1, sizeof *out->v);
  out->op = ag_calloc(e->nrows + 1, sizeof *out->op);
  if (!out->pc || !out->v || !out->op) {
    pcs_free(out);
    return AG_ENOMEM;
  }
  for (size_t i = 0; i < e->nrows; i++) {
    const ag_sass_ev_row *r = &e->rows[i];
    if (!r->variant || strcmp(r->function, kernel))
      continue;
    uint64_t spc = 0;
    if (ag_sass_cubin_section_pc(cub, kernel, r->function, r->pc, &spc)) {
      ag_str_printf(why, "PC 0x%x of '%s' in the SASS metrics is not in the line-info cubin",
                    r->pc, r->function);
      pcs_free(out);
      return AG_EINVAL;
    }
    const ag_sass_insn *in = ag_sass_ev_insn(e, r->function, r->pc);
    out->pc[out->n] = spc;
    out->op[out->n] = in ? in->op : NULL;
    out->v[out->n++] = (double)r->v[c];
  }
  return 0;
}

/* The share of m_r from PCs with association entropy > 0, and the
 * conservation check: the values every attributed signal carries. */
static void summary(json_t *vals, const ag_attr_map *map, const ag_attr_metric *mt,
                    const ag_attr_result *res, const char *signal, const char *q,
                    json_t *warn) {
  double *h = ag_calloc((size_t)res->nregions + 1, sizeof *h);
  if (h)
    ag_attr_region_entropy(map, mt, res, h);
  for (int r = 0; r < res->nregions; r++) {
    if (!res->static_pcs[r] || !selected(map->regions[r], map->kernel, q))
      continue;
    value(vals, map->regions[r], signal, "total", json_real(res->m[r]), "warp-inst");
    if (h) /* the association entropy of the total (the report shows H=) */
      json_object_set_new(json_array_get(vals, json_array_size(vals) - 1), "entropy",
                          json_real(h[r]));
    value(vals, map->regions[r], signal, "shared_share",
          json_real(res->m[r] > 0 ? res->shared[r] / res->m[r] : 0.0), "ratio");
  }
  /* the kernel's whole count: what the regions' totals and the unattributed part sum to */
  value(vals, map->kernel, signal, "kernel_total", json_real(res->total), "warp-inst");
  value(vals, map->kernel, signal, "unattributed", json_real(res->unattributed), "warp-inst");
  if (!ag_attr_conserved(res))
    json_array_append_new(warn, json_sprintf("%s of '%s': the regions' sum is not the kernel's "
                                             "total %.0f (a PC lost or counted twice)",
                                             signal, map->kernel, res->total));
  ag_free(h);
}

/* The kernel's PCs the mapping run saw execute in no region (all of them:
 * the kernel did not run); the padding never executes. */
static int unexecuted(const ag_attr_map *map) {
  int idle = 0;
  for (int p = 0; p < map->npcs; p++) {
    const double *row = ag_attr_exec_row(map, p);
    int any = 0;
    for (int r = 0; row && r < map->nregions && !any; r++)
      any = row[r] > 0;
    idle += !any;
  }
  return idle;
}

/* stalls: PC samples by reason per region (ag_stalls_json, docs/stalls.md) */
static int stalls_of(const ag_attr_inputs *in, const ag_attr_map *map, json_t *vals,
                     json_t *missing, json_t *nj, json_t *warn) {
  ag_diags d;
  ag_diags_init(&d);
  json_t *sj = NULL;
  ag_str why = AG_STR_INIT, what = AG_STR_INIT;
  ag_str_printf(&what, "stalls of kernel '%s'", map->kernel);
  int rc = ag_stalls_json(map, in->metrics, in->cubin, map->kernel, in->metrics_version, &d, &sj);
  if (rc == AG_EINVAL || rc == AG_ENOTFOUND) { /* another version: not joined; else missing */
    diag_text(&d, &why);
    note(strstr(ag_str_cstr(&why), "version") ? nj : missing, ag_str_cstr(&what),
         ag_str_cstr(&why));
    rc = 0;
    goto out;
  }
  if (rc)
    goto out;
  size_t i;
  json_t *r;
  json_array_foreach(json_object_get(sj, "regions"), i, r) {
    const char *reg = json_string_value(json_object_get(r, "region"));
    if (!reg || !selected(reg, map->kernel, in->region))
      continue;
    static const char *const keys[][2] = {{"samples", "samples"},
                                          {"share", "ratio"},
                                          {"shared_share", "ratio"},
                                          {"reason_entropy_bits", "bits"},
                                          {"top_reason", ""},
                                          {"reasons", "samples"},
                                          {"top_pcs", "samples"}};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
      json_t *x = json_object_get(r, keys[k][0]);
      if (x)
        value(vals, reg, "stalls", keys[k][0], json_incref(x), keys[k][1]);
    }
  }
  static const char *const kk[] = {"total_samples", "unattributed", "dropped_samples",
                                   "period_cycles", "barrier_samples_moved"};
  for (size_t k = 0; k < sizeof kk / sizeof kk[0]; k++) {
    json_t *x = json_object_get(sj, kk[k]);
    if (x)
      value(vals, map->kernel, "stalls", kk[k], json_incref(x),
            k == 3 ? "cycles" : "samples");
  }
  json_int_t dropped = json_integer_value(json_object_get(sj, "dropped_samples"));
  if (dropped > 0)
    json_array_append_new(warn, json_sprintf("stalls of '%s': CUPTI dropped %lld samples (raise "
                                             "the period: ARGUS_STALLS_PERIOD)",
                                             map->kernel, (long long)dropped));
  if (json_integer_value(json_object_get(sj, "hw_buffer_full")) > 0)
    json_array_append_new(warn, json_sprintf("stalls of '%s': the hardware sample buffer filled",
                                             map->kernel));
  if (!json_is_true(json_object_get(sj, "conserved"))) {
    /* samples on PCs the mapping run never saw execute stay unattributed (the
     * regions' sum plus those is the kernel's: said with their share); any
     * other difference is a PC lost or counted twice */
    double sum = 0, tot = json_number_value(json_object_get(sj, "samples")),
           un = json_number_value(json_object_get(sj, "unattributed"));
    size_t ri;
    json_t *rg;
    json_array_foreach(json_object_get(sj, "regions"), ri, rg)
        sum += json_number_value(json_object_get(rg, "samples"));
    if (un > 0 && fabs(sum + un - tot) <= 1e-9 * (tot > 1 ? tot : 1))
      json_array_append_new(warn, json_sprintf("stalls of '%s': %.0f of %.0f samples (%.2g %%) "
                                               "fell on PCs the mapping run never saw execute "
                                               "and stay unattributed",
                                               map->kernel, un, tot, 100.0 * un / tot));
    else
      json_array_append_new(warn, json_sprintf("stalls of '%s': the regions' samples are not "
                                               "the kernel's (a PC lost or counted twice)",
                                               map->kernel));
  }
out:
  json_decref(sj);
  ag_diags_release(&d);
  ag_str_release(&why);
  ag_str_release(&what);
  return rc;
}

/* The rule of the values derived from the map alone (docs/attribution.md,
 * "Without SASS metrics"). */
#define DERIVED_RULE                                                                       \
  "from the mapping run's block counts through line info; warp instructions executed; no " \
  "thread-level or predicated-on counts, so `branch` stays missing"

/* What the map did with the padding after a function's last RET or EXIT
 * (docs/attribution.md, "SASS line info"): the rule's clause. */
static void padding_rule(const ag_attr_map *map, ag_str *out) {
  if (map->padding >= 0)
    ag_str_printf(out, "padding PCs: %d, excluded (the BRA to itself and NOPs after a "
                       "function's last RET or EXIT never run)",
                  map->padding);
  else
    ag_str_puts(out, "padding PCs: not recognized (the cubin's SASS is not sm_90), so the "
                     "BRA to itself and NOPs after a function's last RET or EXIT count with "
                     "its PTX line");
}

/* inst_mix or barriers of one kernel from the map alone, when the metric
 * run gave nothing (none_why says why): n(r, p) summed per region and
 * opcode class of the -lineinfo build (in->opcodes), qualified derived. */
static int derived(const char *signal, const ag_attr_inputs *in, const ag_attr_map *map,
                   const char *none_why, json_t *vals, json_t *missing, json_t *warn) {
  const ag_sass_ev *ops = in->opcodes;
  int R = map->nregions, rc = 0;
  ag_str what = AG_STR_INIT, why = AG_STR_INIT;
  ag_str_printf(&what, "%s of kernel '%s'", signal, map->kernel);
  if (!ops || !ops->nins) {
    ag_str_printf(&why, "%s; nor can it be derived from the map, which needs the -lineinfo "
                        "build's opcodes: %s",
                  none_why, !ops ? "no disassembly of the -lineinfo cubin"
                            : ops->sass_status ? ops->sass_status
                                               : "the disassembly has no instruction");
    note(missing, ag_str_cstr(&what), ag_str_cstr(&why));
    goto out;
  }
  const char **op = ag_calloc((size_t)map->npcs + 1, sizeof *op);
  double *mix = ag_calloc((size_t)R * AG_SASS__NCLASS + 1, sizeof *mix);
  if (!op || !mix) {
    ag_free(op);
    ag_free(mix);
    rc = AG_ENOMEM;
    goto out;
  }
  int noop = 0;
  for (int p = 0; p < map->npcs; p++) {
    const ag_sass_insn *ins = ag_sass_ev_insn(ops, map->kernel, (uint32_t)map->pc[p]);
    op[p] = ins ? ins->op : NULL;
    noop += !ins;
  }
  ag_attr_mix_map(map, op, mix);
  int bar = !strcmp(signal, "barriers");
  double kernel = 0;
  for (int r = 0; r < R; r++) {
    double total = 0;
    for (int c = 0; c < AG_SASS__NCLASS; c++)
      total += mix[(size_t)r * AG_SASS__NCLASS + c];
    kernel += total;
    if (!(total > 0) || !selected(map->regions[r], map->kernel, in->region))
      continue;
    for (int c = 0; c < AG_SASS__NCLASS; c++) {
      double x = mix[(size_t)r * AG_SASS__NCLASS + c];
      if (bar ? ag_sass_class_is_barrier((ag_sass_class)c) : x > 0)
        value_q(vals, map->regions[r], signal, ag_sass_class_name((ag_sass_class)c),
                json_real(x), "warp-inst", "derived");
    }
    value_q(vals, map->regions[r], signal, "total", json_real(total), "warp-inst", "derived");
  }
  value_q(vals, map->kernel, signal, "kernel_total", json_real(kernel), "warp-inst", "derived");
  ag_str pr = AG_STR_INIT;
  padding_rule(map, &pr);
  json_array_append_new(warn, json_sprintf("%s of '%s' is derived " DERIVED_RULE " (%s); %s",
                                           signal, map->kernel, none_why, ag_str_cstr(&pr)));
  ag_str_release(&pr);
  if (noop)
    json_array_append_new(warn, json_sprintf("%s of '%s': %d of %d PCs have no opcode in the "
                                             "disassembly: counted as misc",
                                             signal, map->kernel, noop, map->npcs));
  ag_free(op);
  ag_free(mix);
out:
  ag_str_release(&what);
  ag_str_release(&why);
  return rc;
}

/* Lines of the source view shown (the files and functions: all). */
#define SOURCE_LINES 12

/* ownership's view by source file, function and line (ag_attr_sources) of
 * the queried regions' executions, beside the regions': values of the
 * kernel, qual "derived" (from the line info, not from a run of its own).
 * No PTX, or a PTX without .loc: a warning says why there is no view. */
static int sources_of(const ag_attr_inputs *in, const ag_attr_map *map, json_t *vals,
                      json_t *warn) {
  if (!in->ptx) /* not asked for */
    return 0;
  unsigned char *sel = ag_calloc((size_t)map->nregions + 1, 1);
  if (!sel)
    return AG_ENOMEM;
  for (int r = 0; r < map->nregions; r++)
    sel[r] = (unsigned char)selected(map->regions[r], map->kernel, in->region);
  ag_diags d;
  ag_diags_init(&d);
  json_t *src = NULL;
  int rc = ag_attr_sources(map, sel, in->ptx, in->ptx_len, SOURCE_LINES, &d, &src);
  ag_free(sel);
  if (rc == AG_ENOTFOUND) {
    ag_str why = AG_STR_INIT;
    diag_text(&d, &why);
    json_array_append_new(warn, json_sprintf("ownership of '%s': no view by source file: %s",
                                             map->kernel, ag_str_cstr(&why)));
    ag_str_release(&why);
    rc = 0;
  }
  ag_diags_release(&d);
  if (!src)
    return rc;
  static const char *const views[] = {"files", "functions", "lines"};
  for (size_t k = 0; k < 3; k++) {
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(src, views[k]), i, r) {
      const char *f = json_string_value(json_object_get(r, "file"));
      const char *fn = json_string_value(json_object_get(r, "function"));
      ag_str stat = AG_STR_INIT;
      if (k == 0)
        ag_str_printf(&stat, "file:%s", f);
      else if (k == 1)
        ag_str_printf(&stat, "function:%s:%s", f, fn);
      else
        ag_str_printf(&stat, "line:%s:%lld (%s)", f,
                      (long long)json_integer_value(json_object_get(r, "line")), fn);
      value_q(vals, map->kernel, "ownership", ag_str_cstr(&stat),
              json_incref(json_object_get(r, "dynamic")), "warp-inst", "derived");
      ag_str_release(&stat);
    }
  }
  json_t *ns = json_object_get(src, "no_source");
  if (json_integer_value(json_object_get(ns, "pcs")))
    value_q(vals, map->kernel, "ownership", "file:(no source line)",
            json_incref(json_object_get(ns, "dynamic")), "warp-inst", "derived");
  json_array_append_new(
      warn, json_sprintf("ownership of '%s': the file:, function: and line: values are the "
                         "same executions by source position (the PTX's .loc of each PC's "
                         "line; function: the inlined function): what a file-level profiler "
                         "says, derived from the line info; line: the %d of %lld lines that "
                         "executed most",
                         map->kernel, SOURCE_LINES,
                         (long long)json_integer_value(json_object_get(src, "lines_total"))));
  json_decref(src);
  return 0;
}

static int one_kernel(const char *signal, const ag_attr_inputs *in, const ag_attr_map *map,
                      json_t *vals, json_t *missing, json_t *nj, json_t *warn) {
  const char *q = in->region;
  int derivable = !strcmp(signal, "inst_mix") || !strcmp(signal, "barriers");
  if (derivable && !in->metrics)
    return derived(signal, in, map,
                   in->metrics_why ? in->metrics_why : "the SASS-metrics run gave no evidence",
                   vals, missing, warn);
  if (!strcmp(signal, "ownership")) {
    json_t *o = ag_attr_ownership(map);
    size_t k;
    json_t *r;
    if (!o)
      return AG_ENOMEM;
    json_array_foreach(json_object_get(o, "regions"), k, r) {
      const char *reg = json_string_value(json_object_get(r, "region"));
      if (!selected(reg, map->kernel, q))
        continue;
      value(vals, reg, signal, "static_pcs", json_incref(json_object_get(r, "static_pcs")),
            "count");
      value(vals, reg, signal, "shared_pcs", json_incref(json_object_get(r, "shared_pcs")),
            "count");
      value(vals, reg, signal, "dynamic", json_incref(json_object_get(r, "dynamic")),
            "warp-inst");
    }
    value(vals, map->kernel, signal, "pcs", json_integer(map->npcs), "count");
    /* PCs the mapping run saw in no region: code that never ran (the other
     * side of a branch, the padding after a RET or EXIT) or PCs without a
     * PTX line */
    value(vals, map->kernel, signal, "unexecuted_pcs", json_integer(unexecuted(map)), "count");
    /* of those, the padding: excluded by rule, not by the run */
    if (map->padding >= 0)
      value(vals, map->kernel, signal, "padding_pcs", json_integer(map->padding), "count");
    else {
      ag_str pr = AG_STR_INIT;
      padding_rule(map, &pr);
      json_array_append_new(warn, json_sprintf("ownership of '%s': %s", map->kernel,
                                               ag_str_cstr(&pr)));
      ag_str_release(&pr);
    }
    json_decref(o);
    return sources_of(in, map, vals, warn);
  }
  if (!strcmp(signal, "stalls"))
    return stalls_of(in, map, vals, missing, nj, warn);
  ag_str why = AG_STR_INIT, what = AG_STR_INIT;
  pcs a = {0}, b = {0};
  ag_attr_result *ra = NULL, *rb = NULL;
  double *mix = NULL, *ratio = NULL;
  ag_diags d;
  ag_diags_init(&d);
  int rc;
  const char *m0 = !strcmp(signal, "branch") ? "smsp__sass_thread_inst_executed"
                                             : "smsp__sass_inst_executed";
  ag_str_printf(&what, "%s of kernel '%s'", signal, map->kernel);
  if ((rc = metric_of(in->metrics, in->cubin, map->kernel, m0, &a, &why)))
    goto out;
  if (!a.n) {
    ag_str_printf(&why, "CUPTI counted no instruction of '%s' (some kernels count nothing, "
                        "cause unknown: docs/sass-metrics.md)",
                  map->kernel);
    if (derivable) { /* the metric run's own opcodes, else the ones given */
      ag_attr_inputs din = *in;
      if (in->metrics->nins)
        din.opcodes = in->metrics;
      rc = derived(signal, &din, map, ag_str_cstr(&why), vals, missing, warn);
      goto done;
    }
    rc = AG_ENOTFOUND;
    goto out;
  }
  ag_attr_metric ma = {m0, in->metrics_version, map->kernel, a.pc, a.v, a.n};
  if ((rc = ag_attr_apply(map, &ma, &d, &ra))) {
    diag_text(&d, &why);
    if (rc == AG_EINVAL) { /* another program version or kernel: not joined */
      note(nj, ag_str_cstr(&what), ag_str_cstr(&why));
      ag_str_release(&why);
      rc = 0;
    }
    goto out;
  }
  if (!strcmp(signal, "inst_mix") || !strcmp(signal, "barriers")) {
    int R = map->nregions;
    mix = ag_calloc((size_t)R * AG_SASS__NCLASS + 1, sizeof *mix);
    if (!mix) {
      rc = AG_ENOMEM;
      goto out;
    }
    if ((rc = ag_attr_mix(map, &ma, a.op, &d, mix))) {
      diag_text(&d, &why);
      goto out;
    }
    int bar = !strcmp(signal, "barriers");
    for (int r = 0; r < R; r++) {
      if (!ra->static_pcs[r] || !selected(map->regions[r], map->kernel, q))
        continue;
      for (int c = 0; c < AG_SASS__NCLASS; c++) {
        double x = mix[(size_t)r * AG_SASS__NCLASS + c];
        if (bar ? ag_sass_class_is_barrier((ag_sass_class)c) : x > 0)
          value(vals, map->regions[r], signal, ag_sass_class_name((ag_sass_class)c), json_real(x),
                "warp-inst");
      }
    }
    int noop = 0;
    for (int p = 0; p < a.n; p++)
      noop += !a.op[p];
    if (noop)
      json_array_append_new(warn, json_sprintf("%s of '%s': %d of %d PCs have no opcode in the "
                                               "evidence (CUPTI did not give the SASS): "
                                               "counted as misc",
                                               signal, map->kernel, noop, a.n));
  } else { /* branch: thread / (32 x warp) and pred-on / thread, each attributed apart */
    const char *m1 = "smsp__sass_inst_executed", *m2 = "smsp__sass_thread_inst_executed_pred_on";
    int R = map->nregions;
    ratio = ag_calloc((size_t)R * 2 + 1, sizeof *ratio);
    if (!ratio) {
      rc = AG_ENOMEM;
      goto out;
    }
    ag_attr_result *rp = NULL;
    pcs c = {0};
    if ((rc = metric_of(in->metrics, in->cubin, map->kernel, m1, &b, &why)) ||
        (rc = metric_of(in->metrics, in->cubin, map->kernel, m2, &c, &why))) {
      pcs_free(&c);
      goto out;
    }
    ag_attr_metric mb = {m1, in->metrics_version, map->kernel, b.pc, b.v, b.n};
    ag_attr_metric mc = {m2, in->metrics_version, map->kernel, c.pc, c.v, c.n};
    if ((rc = ag_attr_apply(map, &mb, &d, &rb)) || (rc = ag_attr_apply(map, &mc, &d, &rp))) {
      diag_text(&d, &why);
      pcs_free(&c);
      goto out;
    }
    ag_attr_ratio(ra, rb, WARP_LANES, ratio);
    ag_attr_ratio(rp, ra, 1.0, ratio + R);
    for (int r = 0; r < R; r++) {
      if (!ra->static_pcs[r] || !selected(map->regions[r], map->kernel, q) || isnan(ratio[r]))
        continue;
      value(vals, map->regions[r], signal, "efficiency", json_real(ratio[r]), "ratio");
      if (!isnan(ratio[R + r]))
        value(vals, map->regions[r], signal, "pred_on_share", json_real(ratio[R + r]), "ratio");
    }
    /* the totals in warp instructions, as every attributed signal's */
    summary(vals, map, &mb, rb, signal, q, warn);
    ag_attr_result_free(rp);
    pcs_free(&c);
    goto out;
  }
  summary(vals, map, &ma, ra, signal, q, warn);
out:
  if (rc && rc != AG_ENOMEM) {
    note(missing, ag_str_cstr(&what), ag_str_cstr(&why));
    rc = 0;
  }
done:
  ag_diags_release(&d);
  ag_free(mix);
  ag_free(ratio);
  ag_attr_result_free(ra);
  ag_attr_result_free(rb);
  pcs_free(&a);
  pcs_free(&b);
  ag_str_release(&why);
  ag_str_release(&what);
  return rc;
}

int ag_attr_signal(const char *signal, const ag_attr_inputs *in, ag_diags *diags, json_t **out) {
  *out = NULL;
  static const char *const known[] = {"ownership", "inst_mix", "barriers", "branch", "stalls"};
  int ok = 0;
  for (size_t i = 0; signal && i < sizeof known / sizeof known[0]; i++)
    ok |= !strcmp(signal, known[i]);
  int derivable = ok && (!strcmp(signal, "inst_mix") || !strcmp(signal, "barriers"));
  if (!ok || !in->layout || !in->slots || !in->cubin ||
      (strcmp(signal, "ownership") && !in->metrics && !(derivable && in->opcodes))) {
    ag_diags_add(diags, AG_SEV_ERROR, NULL, 0, 0, NULL, 0,
                 "attributed signal '%s': %s", signal ? signal : "(none)",
                 ok ? "the map's layout, counts and line-info cubin, and (but for ownership) "
                      "the SASS metrics (inst_mix, barriers: or the cubin's opcodes), are all "
                      "needed"
                    : "not an attributed signal (ownership, inst_mix, barriers, branch, "
                      "stalls)");
    return AG_EINVAL;
  }
  json_t *o = json_pack("{s:[],s:[],s:[],s:[]}", "values", "missing", "not_joined", "warnings");
  if (!o)
    return AG_ENOMEM;
  json_t *vals = json_object_get(o, "values"), *missing = json_object_get(o, "missing"),
         *nj = json_object_get(o, "not_joined"), *warn = json_object_get(o, "warnings");
  const ag_attr_layout *L = in->layout;
  int rc = 0;
  /* the map describes one program version: the cubin must be its build */
  if (!in->cubin_version || strcmp(in->cubin_version, L->version)) {
    ag_str why = AG_STR_INIT;
    ag_str_printf(&why, "the line-info cubin was built from program version %.12s, the "
                        "mapping run's layout is of %.12s",
                  in->cubin_version ? in->cubin_version : "(unknown)", L->version);
    note(nj, "the PC-to-region map", ag_str_cstr(&why));
    note(missing, signal, "its map is not of this program version: see not_joined");
    ag_str_release(&why);
    *out = o;
    return 0;
  }
  /* slot 0: the variant counts there when its counter buffer holds fewer
   * slots than the layout's (docs/attribution.md, "Descriptor and overflow") */
  if (in->nslots < L->nslots) {
    json_array_append_new(warn, json_sprintf("the mapping run bound %zu counter slots, its "
                                             "layout needs %u (ARGUS_MAP_SLOTS): the variant "
                                             "counted all %llu block executions in slot 0 "
                                             "(dropped), so the map is empty",
                                             in->nslots, L->nslots,
                                             (unsigned long long)in->slots[0]));
    note(missing, signal, "the mapping run kept no count: see warnings");
    *out = o;
    return 0;
  }
  if (in->slots[0] > 0)
    json_array_append_new(warn, json_sprintf("the mapping run dropped %llu block executions "
                                             "(slot 0): the map misses them",
                                             (unsigned long long)in->slots[0]));
  int kernels = 0;
  for (int f = 0; f < L->nfuncs && !rc; f++) {
    if (!L->funcs[f].is_entry)
      continue;
    ag_attr_map *map = NULL;
    ag_diags md;
    ag_diags_init(&md);
    rc = ag_attr_map_build(L, in->slots, in->nslots, in->cubin, L->funcs[f].name, &md, &map);
    if (rc == AG_ENOTFOUND) { /* a kernel the build dropped: nothing ran */
      rc = 0;
    } else if (rc == AG_EINVAL) {
      ag_str why = AG_STR_INIT;
      diag_text(&md, &why);
      note(missing, L->funcs[f].name, ag_str_cstr(&why));
      ag_str_release(&why);
      rc = 0;
    } else if (!rc && unexecuted(map) == map->npcs) { /* not launched in the mapping run */
    } else if (!rc) {
      kernels++;
      if (map->nolines)
        json_array_append_new(warn, json_sprintf("%d SASS PCs of '%s' have no PTX line: they "
                                                 "are attributed to no region",
                                                 map->nolines, map->kernel));
      rc = one_kernel(signal, in, map, vals, missing, nj, warn);
    }
    ag_diags_release(&md);
    ag_attr_map_free(map);
  }
  if (!rc && !kernels)
    note(missing, signal, "no kernel of the mapping layout ran in the mapping run with code in "
                          "the line-info cubin");
  if (rc) {
    json_decref(o);
    return rc;
  }
  *out = o;
  return 0;
}
