/*
 * trace_report.c — the per-region table of a reference trace, as text and as
 * JSON. Durations from a reference trace are "observed" (measured on the
 * device with region identity); ns come from cycles with each launch's
 * measured clock, and the report says which clock that was.
 */
#include "argus/report_trace.h"

#include <inttypes.h>

#include "argus/demangle.h"
#include <string.h>

static void fmt_ns(char *buf, size_t n, double ns) {
  if (ns >= 1e6)
    snprintf(buf, n, "%.3f ms", ns / 1e6);
  else if (ns >= 1e3)
    snprintf(buf, n, "%.3f us", ns / 1e3);
  else
    snprintf(buf, n, "%.1f ns", ns);
}

/* A launch's shared memory and the occupancy it and the registers allow
 * (computed with the H100/H200 limits; the driver's own figure beside it).
 * Nothing when the evidence did not record the kernel's resources. */
static void launch_resources(const ag_ev_launch *L, ag_str *out) {
  if (L->registers < 0)
    return;
  ag_occupancy_result oc;
  unsigned threads = L->block[0] * L->block[1] * L->block[2];
  ag_str_printf(out, "  shared memory %d B static + %u B dynamic, %d registers",
                L->static_shared_bytes < 0 ? 0 : L->static_shared_bytes, L->shared_bytes,
                L->registers);
  unsigned st = (unsigned)(L->static_shared_bytes < 0 ? 0 : L->static_shared_bytes);
  if (ag_occupancy(NULL, L->registers, threads, st, L->shared_bytes, &oc) == 0)
    ag_str_printf(out, ": %d CTA%s per SM (limited by %s; %.0f %% of the warps)", oc.ctas,
                  oc.ctas == 1 ? "" : "s", oc.limit, oc.occupancy * 100);
  if (L->driver_ctas_per_sm >= 0)
    ag_str_printf(out, "; the driver says %d%s", L->driver_ctas_per_sm,
                  oc.ctas == L->driver_ctas_per_sm ? "" : " (differs: check the limits)");
  ag_str_putc(out, '\n');
}

static json_t *launch_resources_json(const ag_ev_launch *L) {
  if (L->registers < 0)
    return json_null();
  ag_occupancy_result oc;
  unsigned threads = L->block[0] * L->block[1] * L->block[2];
  unsigned st = (unsigned)(L->static_shared_bytes < 0 ? 0 : L->static_shared_bytes);
  json_t *j = json_pack("{s:i,s:i,s:i}", "registers", L->registers, "static_shared_bytes", (int)st,
                        "dynamic_shared_bytes", (int)L->shared_bytes);
  if (ag_occupancy(NULL, L->registers, threads, st, L->shared_bytes, &oc) == 0)
    json_object_set_new(j, "occupancy",
                        json_pack("{s:i,s:s,s:i,s:i,s:i,s:i,s:f,s:s}", "ctas_per_sm", oc.ctas,
                                  "limit", oc.limit, "by_registers", oc.by_regs,
                                  "by_shared_memory", oc.by_smem, "by_threads", oc.by_threads,
                                  "by_ctas", oc.by_ctas, "warps_fraction", oc.occupancy,
                                  "limits", "sm_90 (H100, H200)"));
  json_object_set_new(j, "ctas_per_sm_driver",
                      L->driver_ctas_per_sm >= 0 ? json_integer(L->driver_ctas_per_sm)
                                                 : json_null());
  return j;
}

int ag_report_trace_text(const ag_trace *t, const ag_scope *scope,
                         const ag_region_stats *rs, int n, ag_str *out) {
  const ag_evidence *ev = t->ev;
  ag_str_printf(out, "reference trace on %s, %d launch(es) recorded of %u; durations are "
                     "observed\n",
                ev->device, ev->nlaunches, ev->launches_total);
  size_t w = 6;
  char name[512];
  for (int i = 0; i < n; i++) {
    size_t l = ag_demangle_path(ev->regions[rs[i].region].qname, name, sizeof name);
    if (l > w)
      w = l;
  }
  ag_str_printf(out, "%-*s %9s %12s %12s %12s %12s %12s %12s %12s\n", (int)w, "region",
                "count", "mean", "p50", "p95", "min", "max", "total", "mean cyc");
  for (int i = 0; i < n; i++) {
    const ag_region_stats *s = &rs[i];
    char c[6][32];
    double v[6] = {s->ns.mean, s->ns.p50, s->ns.p95, s->ns.min, s->ns.max, s->ns.total};
    for (int k = 0; k < 6; k++)
      fmt_ns(c[k], sizeof c[k], v[k]);
    ag_demangle_path(ev->regions[s->region].qname, name, sizeof name);
    ag_str_printf(out, "%-*s %9" PRIu64 " %12s %12s %12s %12s %12s %12s %12.1f\n", (int)w,
                  name, s->ns.count, c[0], c[1], c[2], c[3], c[4],
                  c[5], s->cycles.mean);
    if (s->nrole > 1 || (s->nrole == 1 && s->by_role[0].key >= 0))
      for (int k = 0; k < s->nrole; k++) {
        char m[32];
        fmt_ns(m, sizeof m, s->by_role[k].ns.mean);
        ag_str_printf(out, "%-*s   role %-12s %9" PRIu64 " mean %s\n", (int)w, "",
                      ag_evidence_role_name(ev, s->by_role[k].key),
                      s->by_role[k].ns.count, m);
      }
  }
  for (int i = 0; i < ev->nlaunches; i++) {
    ag_demangle_path(ev->launches[i].kernel, name, sizeof name);
    ag_str_printf(out, "launch %u: %s %ux%ux%u x %ux%ux%u, clock %.1f MHz (%s)%s\n",
                  ev->launches[i].launch, name, ev->launches[i].grid[0],
                  ev->launches[i].grid[1], ev->launches[i].grid[2], ev->launches[i].block[0],
                  ev->launches[i].block[1], ev->launches[i].block[2], t->clocks[i].hz / 1e6,
                  t->clocks[i].source, ev->launches[i].dropped ? ", records dropped" : "");
    launch_resources(&ev->launches[i], out);
  }
  if (t->dropped)
    ag_str_printf(out, "warning: %" PRIu64 " records dropped (buffers full): some occurrences "
                       "are missing; raise ARGUS_TRACE_RECORDS or narrow --region\n",
                  t->dropped);
  if (t->unended)
    ag_str_printf(out, "warning: %" PRIu64 " occurrence%s began and never ended (not in the "
                       "table; the anomalies say where)\n",
                  t->unended, t->unended == 1 ? "" : "s");
  if (t->nanomalies)
    ag_str_printf(out, "%zu anomal%s:\n%s", t->nanomalies, t->nanomalies == 1 ? "y" : "ies",
                  ag_str_cstr(&t->anomalies));
  (void)scope;
  return out->oom ? AG_ENOMEM : 0;
}

static json_t *dstats_json(const ag_dstats *d) {
  return json_pack("{s:I,s:f,s:f,s:f,s:f,s:f,s:f}", "count", (json_int_t)d->count, "total",
                   d->total, "mean", d->mean, "p50", d->p50, "p95", d->p95, "min", d->min,
                   "max", d->max);
}

json_t *ag_report_trace_json(const ag_trace *t, const ag_scope *scope,
                             const ag_region_stats *rs, int n, json_t *provenance) {
  const ag_evidence *ev = t->ev;
  json_t *regions = json_array();
  for (int i = 0; i < n; i++) {
    const ag_region_stats *s = &rs[i];
    const ag_ev_region *g = &ev->regions[s->region];
    char id[24];
    snprintf(id, sizeof id, "0x%016" PRIx64, g->id);
    json_t *bysm = json_array(), *byrole = json_array();
    for (int k = 0; k < s->nsm; k++)
      json_array_append_new(bysm, json_pack("{s:i,s:I,s:f,s:f}", "sm", s->by_sm[k].key,
                                            "count", (json_int_t)s->by_sm[k].ns.count,
                                            "mean_ns", s->by_sm[k].ns.mean, "total_ns",
                                            s->by_sm[k].ns.total));
    for (int k = 0; k < s->nrole; k++)
      json_array_append_new(
          byrole, json_pack("{s:o,s:I,s:f,s:f}", "role",
                            s->by_role[k].key >= 0 ? json_string(ev->roles[s->by_role[k].key])
                                                   : json_null(),
                            "count", (json_int_t)s->by_role[k].ns.count, "mean_ns",
                            s->by_role[k].ns.mean, "total_ns", s->by_role[k].ns.total));
    char disp[512];
    ag_demangle_path(g->qname, disp, sizeof disp);
    json_array_append_new(
        regions, json_pack("{s:s,s:s,s:s,s:b,s:s,s:o,s:o,s:o,s:o}", "region", g->qname,
                           "display", disp, "id", id, "root", g->root, "qual", "observed",
                           "cycles", dstats_json(&s->cycles), "ns", dstats_json(&s->ns),
                           "by_sm", bysm, "by_role", byrole));
  }
  json_t *launches = json_array();
  for (int i = 0; i < ev->nlaunches; i++) {
    const ag_ev_launch *L = &ev->launches[i];
    char full[1024];
    json_t *dm = ag_demangle(L->kernel, full, sizeof full, AG_DEMANGLE_FULL) > 0
                     ? json_string(full)
                     : json_null();
    json_array_append_new(
        launches,
        json_pack("{s:I,s:s,s:[i,i,i],s:[i,i,i],s:I,s:I,s:f,s:s,s:f,s:f}", "launch",
                  (json_int_t)L->launch, "kernel", L->kernel, "grid", L->grid[0], L->grid[1],
                  L->grid[2], "block", L->block[0], L->block[1], L->block[2], "records",
                  (json_int_t)L->nrecords, "dropped", (json_int_t)L->dropped, "clock_hz",
                  t->clocks[i].hz, "clock_source", t->clocks[i].source, "anchor_hz",
                  t->clocks[i].anchor_hz, "median_warp_span_ns", t->clocks[i].span_ns));
    json_t *lj = json_array_get(launches, json_array_size(launches) - 1);
    json_object_set_new(lj, "demangled", dm);
    json_object_set_new(lj, "resources", launch_resources_json(L));
  }
  json_t *anom = json_array();
  const char *a = ag_str_cstr(&t->anomalies);
  while (*a) {
    const char *nl = strchr(a, '\n');
    size_t l = nl ? (size_t)(nl - a) : strlen(a);
    json_array_append_new(anom, json_stringn(a, l));
    a += l + (nl ? 1 : 0);
  }
  json_t *prov = json_pack("{s:s,s:s}", "evidence", ev->path, "backend", "reference-trace");
  ag_str sc = AG_STR_INIT;
  if (scope)
    ag_scope_format(scope, &sc);
  json_t *vj = json_object_get(ev->header, "variant");
  if (vj)
    json_object_set(prov, "variant", vj);
  if (provenance)
    json_object_update(prov, provenance);
  json_t *j = json_pack("{s:s,s:s,s:f,s:s,s:o,s:o,s:{s:I,s:I,s:I,s:I,s:I},s:o,s:o}", "schema",
                   "argus.trace/1", "device", ev->device, "sm_hz_calibrated", ev->sm_hz,
                   "scope", ag_str_cstr(&sc), "regions",
                   regions, "launches", launches, "losses", "dropped_records",
                   (json_int_t)t->dropped, "nesting_errors", (json_int_t)t->nesting_errors,
                   "unended", (json_int_t)t->unended, "divergent_warps",
                   (json_int_t)t->divergent_warps, "anomalies", (json_int_t)t->nanomalies,
                   "anomalies", anom, "provenance", prov);
  ag_str_release(&sc);
  return j;
}
