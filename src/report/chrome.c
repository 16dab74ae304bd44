/*
 * chrome.c — the timeline of a reference trace as Chrome-trace JSON (the
 * "JSON Object Format" that Perfetto and chrome://tracing open).
 * Process = SM ("SM 12"), thread = one warp of one launch ("launch 0 cta 3
 * warp 2"); each occurrence is a complete ("X") event with its cycles,
 * iteration and role in args. Launches are laid end to end with a 1 us gap,
 * each on its own globaltimer-aligned time line, so tracks of different SMs
 * line up within a launch. ~150 bytes per occurrence. Above a limit
 * (AG_TIMELINE_MAX_EVENTS in observe) whole warp tracks are sampled.
 * With the system timeline of the same run (ag_report_chrome_system,
 * docs/system.md), every event is on the %globaltimer clock instead: each
 * launch's occurrences at its first warp's entry, CUPTI's records moved by
 * the calibrated offset, in a process "system" (a thread per stream), the
 * harness's NVTX ranges on a thread per host thread ("NVTX thread T",
 * nested by time) and its CUDA graph launches on a thread "CUDA graphs"
 * (one event per graph launch, spanning its kernels).
 */
#include "argus/report_trace.h"

#include "argus/demangle.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static int launch_index(const ag_evidence *ev, uint32_t launch) {
  for (int l = 0; l < ev->nlaunches; l++)
    if (ev->launches[l].launch == launch)
      return l;
  return -1;
}

/* %globaltimer (ns) of launch l's first warp entry: the origin of its
 * occurrences' t0_ns (src/synth/decode.c); INFINITY when no warp exited. */
static double launch_origin(const ag_ev_launch *L) {
  double t = INFINITY;
  for (uint32_t w = 0; w < L->warps; w++)
    if ((L->meta[w].flags & AG_EV_EXITED) && (double)L->meta[w].gtime_entry < t)
      t = (double)L->meta[w].gtime_entry;
  return t;
}

static const char *const sys_kind_name[] = {"kernel", "memcpy", "memset", "sync", "stream"};

/* Thread IDs of the system process beside the streams' (stream + 1) and
 * the synchronizations' (0). */
#define TID_NVTX ((uint64_t)1 << 32)  /* + the host thread's ID */
#define TID_GRAPH ((uint64_t)1 << 33)

typedef AG_VEC(uint64_t) u64vec;

/* The NVTX ranges (complete events; an instant marker an "i" event) and
 * the graph launches (the graph's kernels, by graph ID and correlation ID). */
static void nvtx_graph_events(const ag_sys_ev *sys, double origin, int *first, ag_str *out,
                              u64vec *seen) {
  for (size_t i = 0; i < sys->nranges; i++) {
    const ag_sys_range *g = &sys->ranges[i];
    uint64_t tid = TID_NVTX + g->tid;
    ag_vec_push(seen, tid);
    ag_str_printf(out, "%s{\"name\":", *first ? "" : ",\n");
    ag_str_json_quote(out, g->name ? g->name : "(unnamed)");
    ag_str_printf(out, ",\"cat\":\"nvtx\",\"ph\":\"%s\",\"ts\":%.4f,", g->instant ? "i" : "X",
                  (ag_sys_ev_gt(sys, g->start) - origin) / 1e3);
    if (g->instant)
      ag_str_puts(out, "\"s\":\"t\",");
    else
      ag_str_printf(out, "\"dur\":%.4f,", (double)(g->end - g->start) / 1e3);
    ag_str_printf(out, "\"pid\":%u,\"tid\":%" PRIu64 ",\"args\":{\"depth\":%d%s",
                  AG_CHROME_SYSTEM_PID, tid, g->depth, g->open ? ",\"open\":true" : "");
    if (g->domain) {
      ag_str_puts(out, ",\"domain\":");
      ag_str_json_quote(out, g->domain);
    }
    ag_str_puts(out, "}}");
    *first = 0;
  }
  /* graph launches: first and last kernel of each (graph, corr) */
  for (size_t i = 0; i < sys->nrecs; i++) {
    const ag_sys_rec *r = &sys->recs[i];
    int seen_before = 0, n = 0;
    int64_t t0 = r->start, t1 = r->end;
    if (r->kind != AG_SYS_KERNEL || !r->graph)
      continue;
    for (size_t k = 0; k < sys->nrecs; k++) {
      const ag_sys_rec *q = &sys->recs[k];
      if (q->kind != AG_SYS_KERNEL || q->graph != r->graph || q->corr != r->corr)
        continue;
      seen_before |= k < i;
      n++;
      t0 = q->start < t0 ? q->start : t0, t1 = q->end > t1 ? q->end : t1;
    }
    if (seen_before)
      continue;
    ag_vec_push(seen, TID_GRAPH);
    ag_str_printf(out,
                  "%s{\"name\":\"graph %u\",\"cat\":\"graph\",\"ph\":\"X\",\"ts\":%.4f,"
                  "\"dur\":%.4f,\"pid\":%u,\"tid\":%llu,\"args\":{\"graph\":%u,\"corr\":%u,"
                  "\"stream\":%u,\"kernels\":%d}}",
                  *first ? "" : ",\n", r->graph, (ag_sys_ev_gt(sys, t0) - origin) / 1e3,
                  (double)(t1 - t0) / 1e3, AG_CHROME_SYSTEM_PID, (unsigned long long)TID_GRAPH,
                  r->graph, r->corr, r->stream, n);
    *first = 0;
  }
}

/* The system timeline's events (pid AG_CHROME_SYSTEM_PID, a thread per
 * stream, one for synchronizations), `origin` ns of globaltimer at ts 0. */
static void system_events(const ag_sys_ev *sys, double origin, int *first, ag_str *out) {
  u64vec seen = {0};
  nvtx_graph_events(sys, origin, first, out, &seen);
  for (size_t i = 0; i < sys->nrecs; i++) {
    const ag_sys_rec *r = &sys->recs[i];
    if (r->kind == AG_SYS_STREAM || r->kind == AG_SYS_API)
      continue; /* no device span (a launch call is host time) */
    uint64_t tid = r->kind == AG_SYS_SYNC ? 0 : (uint64_t)r->stream + 1;
    ag_vec_push(&seen, tid);
    double ts = (ag_sys_ev_gt(sys, r->start) - origin) / 1e3;
    double dur = (double)(r->end - r->start) / 1e3;
    char label[512];
    if (r->kind == AG_SYS_KERNEL)
      ag_demangle_path(r->name, label, sizeof label);
    else
      snprintf(label, sizeof label, "%s", sys_kind_name[r->kind]);
    ag_str_printf(out, "%s{\"name\":", *first ? "" : ",\n");
    ag_str_json_quote(out, label);
    ag_str_printf(out,
                  ",\"cat\":\"system\",\"ph\":\"X\",\"ts\":%.4f,\"dur\":%.4f,\"pid\":%u,"
                  "\"tid\":%" PRIu64 ",\"args\":{\"corr\":%u,\"stream\":%u",
                  ts, dur, AG_CHROME_SYSTEM_PID, tid, r->corr, r->stream);
    if (r->kind == AG_SYS_KERNEL)
      ag_str_printf(out, ",\"grid\":[%d,%d,%d],\"block\":[%d,%d,%d],\"registers\":%d,"
                         "\"shared\":%d%s",
                    r->grid[0], r->grid[1], r->grid[2], r->block[0], r->block[1], r->block[2],
                    r->registers, r->static_smem + r->dynamic_smem,
                    r->argus ? ",\"argus\":\"clock calibration\"" : "");
    if (r->graph)
      ag_str_printf(out, ",\"graph\":%u,\"graph_node\":%llu", r->graph,
                    (unsigned long long)r->graph_node);
    else if (r->kind != AG_SYS_SYNC)
      ag_str_printf(out, ",\"bytes\":%llu", (unsigned long long)r->bytes);
    ag_str_puts(out, "}}");
    *first = 0;
  }
  ag_str_printf(out,
                "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%u,\"args\":{\"name\":"
                "\"system (CUPTI activity, aligned on %%globaltimer within %.0f ns)\"}},\n"
                "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%u,\"args\":"
                "{\"sort_index\":-1}}",
                *first ? "" : ",\n", AG_CHROME_SYSTEM_PID, sys->error_ns, AG_CHROME_SYSTEM_PID);
  *first = 0;
  if (seen.n)
    qsort(seen.v, seen.n, sizeof *seen.v, cmp_u64);
  for (size_t i = 0; i < seen.n; i++)
    if (!i || seen.v[i] != seen.v[i - 1]) {
      if (seen.v[i] == TID_GRAPH)
        ag_str_printf(out, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%"
                           PRIu64 ",\"args\":{\"name\":\"CUDA graphs\"}}",
                      AG_CHROME_SYSTEM_PID, seen.v[i]);
      else if (seen.v[i] >= TID_NVTX)
        ag_str_printf(out, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%"
                           PRIu64 ",\"args\":{\"name\":\"NVTX thread %" PRIu64 "\"}}",
                      AG_CHROME_SYSTEM_PID, seen.v[i], seen.v[i] - TID_NVTX);
      else if (seen.v[i])
        ag_str_printf(out, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%"
                           PRIu64 ",\"args\":{\"name\":\"stream %" PRIu64 "\"}}",
                      AG_CHROME_SYSTEM_PID, seen.v[i], seen.v[i] - 1);
      else
        ag_str_printf(out, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":0,"
                           "\"args\":{\"name\":\"synchronization\"}}",
                      AG_CHROME_SYSTEM_PID);
    }
  ag_vec_free(&seen);
}

static int chrome(const ag_trace *t, const ag_sys_ev *sys, const ag_scope *scope,
                  uint64_t max_events, ag_str *out, ag_timeline_info *info);

int ag_report_chrome_trace(const ag_trace *t, const ag_scope *scope, ag_str *out) {
  return chrome(t, NULL, scope, 0, out, NULL);
}

int ag_report_chrome_trace_ex(const ag_trace *t, const ag_scope *scope, uint64_t max_events,
                              ag_str *out, ag_timeline_info *info) {
  return chrome(t, NULL, scope, max_events, out, info);
}

int ag_report_chrome_system(const ag_trace *t, const ag_sys_ev *sys, const ag_scope *scope,
                            uint64_t max_events, ag_str *out, ag_timeline_info *info) {
  return chrome(t, sys, scope, max_events, out, info);
}

/* Without sys, launches follow one another, each on its own time line;
 * with it, everything is on the %globaltimer clock. */
static int chrome(const ag_trace *t, const ag_sys_ev *sys, const ag_scope *scope,
                  uint64_t max_events, ag_str *out, ag_timeline_info *info) {
  const ag_evidence *ev = t->ev;
  int rc = 0;
  uint64_t inscope = 0, written = 0;
  for (size_t i = 0; i < t->nocc; i++)
    inscope += !scope || ag_scope_match(scope, ev, &t->occ[i]);
  uint32_t every = 1;
  if (max_events && inscope > max_events) { /* the smallest stride that fits */
    for (every = (uint32_t)((inscope + max_events - 1) / max_events);; every++) {
      uint64_t kept = 0;
      for (size_t i = 0; i < t->nocc; i++) {
        const ag_occ *o = &t->occ[i];
        int l = launch_index(ev, o->launch);
        kept += l >= 0 && (!scope || ag_scope_match(scope, ev, o)) &&
                ((uint64_t)o->cta * ev->launches[l].warps_per_cta + o->warp) % every == 0;
      }
      if (kept <= max_events)
        break;
    }
  }
  double *base = ag_calloc((size_t)ev->nlaunches + 1, sizeof *base);
  double *len = ag_calloc((size_t)ev->nlaunches + 1, sizeof *len);
  AG_VEC(uint64_t) seen = {0}; /* launch << 48 | sm << 32 | slot: names, once */
  if (!base || !len) {
    rc = AG_ENOMEM;
    goto out;
  }
  for (size_t i = 0; i < t->nocc; i++) {
    const ag_occ *o = &t->occ[i];
    int l = launch_index(ev, o->launch);
    if (l < 0)
      continue;
    double e = o->t0_ns + (double)(o->end - o->start) * 1e9 / t->clocks[l].hz;
    if (e > len[l])
      len[l] = e;
  }
  for (int l = 1; l <= ev->nlaunches; l++)
    base[l] = base[l - 1] + len[l - 1] + 1000.0;
  double origin = INFINITY;
  if (sys) { /* one clock: every launch at its first warp's entry */
    for (int l = 0; l < ev->nlaunches; l++)
      origin = fmin(origin, launch_origin(&ev->launches[l]));
    for (size_t i = 0; i < sys->nrecs; i++)
      if (sys->recs[i].kind != AG_SYS_STREAM)
        origin = fmin(origin, ag_sys_ev_gt(sys, sys->recs[i].start));
    for (size_t i = 0; i < sys->nranges; i++)
      origin = fmin(origin, ag_sys_ev_gt(sys, sys->ranges[i].start));
    for (int l = 0; l < ev->nlaunches; l++) {
      double o = launch_origin(&ev->launches[l]);
      base[l] = isfinite(o) ? o - origin : 0;
    }
  }
  ag_str_puts(out, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
  int first = 1;
  for (size_t i = 0; i < t->nocc; i++) {
    const ag_occ *o = &t->occ[i];
    if (scope && !ag_scope_match(scope, ev, o))
      continue;
    int l = launch_index(ev, o->launch);
    if (l < 0)
      continue;
    const ag_ev_launch *L = &ev->launches[l];
    uint64_t slot = (uint64_t)o->cta * L->warps_per_cta + o->warp;
    if (slot % every)
      continue;
    written++;
    uint64_t tid = ((uint64_t)l << 32) | slot;
    if (ag_vec_push(&seen, ((uint64_t)l << 48) | ((uint64_t)(o->sm & 0xffff) << 32) | slot)) {
      rc = AG_ENOMEM;
      goto out;
    }
    double ts = (base[l] + o->t0_ns) / 1e3;
    double dur = (double)(o->end - o->start) * 1e9 / t->clocks[l].hz / 1e3;
    char name[512]; /* a C++ kernel's part demangled: what Perfetto shows */
    ag_demangle_path(ev->regions[o->region].qname, name, sizeof name);
    ag_str_printf(out, "%s{\"name\":", first ? "" : ",\n");
    ag_str_json_quote(out, name);
    ag_str_printf(out,
                  ",\"cat\":\"region\",\"ph\":\"X\",\"ts\":%.4f,\"dur\":%.4f,\"pid\":%u,"
                  "\"tid\":%" PRIu64 ",\"args\":{\"cycles\":%" PRIu64,
                  ts, dur, o->sm, tid, o->end - o->start);
    if (o->iter != AG_EV_NO_ITER)
      ag_str_printf(out, ",\"iter\":%u", o->iter);
    if (o->role >= 0) {
      ag_str_puts(out, ",\"role\":");
      ag_str_json_quote(out, ev->roles[o->role]);
    }
    ag_str_puts(out, "}}");
    first = 0;
  }
  if (sys)
    system_events(sys, origin, &first, out);
  if (seen.n)
    qsort(seen.v, seen.n, sizeof *seen.v, cmp_u64);
  uint32_t last_sm = UINT32_MAX;
  for (size_t i = 0; i < seen.n; i++) {
    if (i && seen.v[i] == seen.v[i - 1])
      continue;
    uint32_t l = (uint32_t)(seen.v[i] >> 48);
    uint32_t sm = (uint32_t)((seen.v[i] >> 32) & 0xffff);
    uint64_t slot = seen.v[i] & 0xffffffffu;
    const ag_ev_launch *L = &ev->launches[l];
    if (sm != last_sm) {
      ag_str_printf(out,
                    "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%u,\"args\":"
                    "{\"name\":\"SM %u\"}},\n{\"name\":\"process_sort_index\",\"ph\":"
                    "\"M\",\"pid\":%u,\"args\":{\"sort_index\":%u}}",
                    first ? "" : ",\n", sm, sm, sm, sm);
      first = 0;
      last_sm = sm;
    }
    ag_str_printf(out,
                  ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%" PRIu64
                  ",\"args\":{\"name\":\"launch %u cta %" PRIu64 " warp %" PRIu64 "\"}}",
                  sm, ((uint64_t)l << 32) | slot, L->launch, slot / L->warps_per_cta,
                  slot % L->warps_per_cta);
  }
  ag_str_puts(out, "\n]");
  if (every > 1)
    ag_str_printf(out, ",\"metadata\":{\"argus-sampled\":\"every %u-th warp of each launch: "
                       "%llu of %llu events (more than %llu); narrow with --scope\"}",
                  every, (unsigned long long)written, (unsigned long long)inscope,
                  (unsigned long long)max_events);
  ag_str_puts(out, "}\n");
  if (info) {
    info->events = inscope;
    info->written = written;
    info->every_nth = every;
  }
  if (out->oom)
    rc = AG_ENOMEM;
out:
  ag_vec_free(&seen);
  ag_free(base);
  ag_free(len);
  return rc;
}
