/*
 * system_ev.c — reads the system timeline's evidence and makes the `system`
 * signal (argus/system_ev.h, docs/system.md). Checks the format and
 * version, every record's kind and fields, and the calibration; one pass
 * plus a sort; called once per collection.
 */
#include "argus/system_ev.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CALIB_KERNEL "argus_calibrate"
#define GT_STEP_NS 32.0

typedef struct rd {
  const char *path;
  ag_diags *diags;
} rd;

static int bad(rd *r, const char *fmt, ...) AG_PRINTF(2, 3);
static int bad(rd *r, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ag_diags_add(r->diags, AG_SEV_ERROR, r->path, 0, 0, NULL, 0, "%s", msg);
  return AG_EPARSE;
}

static int get_i64(json_t *o, const char *k, int64_t *v) {
  json_t *x = json_object_get(o, k);
  if (!json_is_integer(x))
    return -1;
  *v = json_integer_value(x);
  return 0;
}

static int get_dim(json_t *o, const char *k, int d[3]) {
  json_t *a = json_object_get(o, k);
  if (!json_is_array(a) || json_array_size(a) != 3)
    return -1;
  for (int i = 0; i < 3; i++) {
    if (!json_is_integer(json_array_get(a, (size_t)i)))
      return -1;
    d[i] = (int)json_integer_value(json_array_get(a, (size_t)i));
  }
  return 0;
}

static int cmp_rec(const void *a, const void *b) {
  const ag_sys_rec *x = a, *y = b;
  if (x->start != y->start)
    return x->start < y->start ? -1 : 1;
  return (x->corr > y->corr) - (x->corr < y->corr);
}

static const char *const kind_names[] = {"kernel", "memcpy", "memset", "sync", "stream", "api"};
#define NKINDS ((int)(sizeof kind_names / sizeof kind_names[0]))
/* (the "nvtx" records are markers: read_nvtx) */

static int read_rec(rd *r, json_t *o, size_t i, ag_sys_rec *s) {
  const char *k = json_string_value(json_object_get(o, "kind"));
  int kind = -1;
  for (int j = 0; k && j < NKINDS; j++)
    if (!strcmp(k, kind_names[j]))
      kind = j;
  if (kind < 0)
    return bad(r, "records[%zu]: kind '%s' is none of kernel, memcpy, memset, sync, stream, api, "
                  "nvtx", i, k ? k : "(missing)");
  s->kind = (ag_sys_kind)kind;
  int64_t v;
  if (get_i64(o, "corr", &v) || v < 0)
    return bad(r, "records[%zu]: no correlation ID 'corr'", i);
  s->corr = (uint32_t)v;
  if (kind == AG_SYS_API) { /* a host call: its thread, no stream */
    s->api = json_string_value(json_object_get(o, "api"));
    if (!s->api || get_i64(o, "tid", &v) || v < 0)
      return bad(r, "records[%zu] (api): needs 'api' (runtime or driver) and the thread 'tid'", i);
    s->tid = (uint32_t)v;
  } else if (get_i64(o, "stream", &v) || v < 0) {
    return bad(r, "records[%zu]: no 'stream'", i);
  }
  s->stream = kind == AG_SYS_API ? 0 : (uint32_t)v;
  if (!get_i64(o, "context", &v))
    s->context = (uint32_t)v;
  if (kind != AG_SYS_STREAM) {
    if (get_i64(o, "start", &s->start) || get_i64(o, "end", &s->end) || s->end < s->start)
      return bad(r, "records[%zu] (%s): needs 'start' <= 'end' (CUPTI ns)", i, k);
  }
  if (kind == AG_SYS_KERNEL) {
    int64_t reg = 0, ss = 0, ds = 0, lm = 0;
    s->name = json_string_value(json_object_get(o, "name"));
    if (!s->name || get_dim(o, "grid", s->grid) || get_dim(o, "block", s->block) ||
        get_i64(o, "registers", &reg))
      return bad(r, "records[%zu] (kernel): needs 'name', 'grid', 'block' and 'registers'", i);
    get_dim(o, "cluster", s->cluster);
    get_i64(o, "static_smem", &ss);
    get_i64(o, "dynamic_smem", &ds);
    get_i64(o, "local_per_thread", &lm);
    s->registers = (int)reg, s->static_smem = (int)ss, s->dynamic_smem = (int)ds;
    s->local_per_thread = (int)lm;
    s->argus = !strcmp(s->name, CALIB_KERNEL);
  } else if (kind == AG_SYS_MEMCPY || kind == AG_SYS_MEMSET) {
    if (get_i64(o, "bytes", &v) || v < 0)
      return bad(r, "records[%zu] (%s): no 'bytes'", i, k);
    s->bytes = (uint64_t)v;
    if (!get_i64(o, "copy_kind", &v))
      s->copy_kind = (int)v;
  }
  if (kind <= AG_SYS_MEMSET && !get_i64(o, "device", &v) && v >= 0)
    s->device = (int)v;
  if (kind <= AG_SYS_MEMSET) { /* launched from a CUDA graph: its IDs */
    if (!get_i64(o, "graph", &v) && v > 0)
      s->graph = (uint32_t)v;
    if (!get_i64(o, "graph_node", &v) && v > 0)
      s->graph_node = (uint64_t)v;
  } else if (kind == AG_SYS_SYNC && !get_i64(o, "sync_type", &v)) {
    s->sync_type = (int)v;
  }
  return 0;
}

int ag_sys_clock_fit(const ag_clock_cal *c, size_t n, double *offset_ns, double *error_ns) {
  double sum = 0, spread = 0, lo = INFINITY, hi = -INFINITY;
  int used = 0;
  for (size_t i = 0; i < n; i++) {
    if (!c[i].other_start || !c[i].other_end)
      continue; /* the other clock did not see this calibration kernel */
    double a = (double)(c[i].other_start - c[i].gt_first);
    double b = (double)(c[i].other_end - c[i].gt_last), off = 0.5 * (a + b);
    sum += off;
    spread = fmax(spread, 0.5 * fabs(b - a));
    lo = fmin(lo, off), hi = fmax(hi, off);
    used++;
  }
  *offset_ns = used ? sum / used : 0;
  *error_ns = used ? spread + (hi - lo) + GT_STEP_NS : 0;
  return used;
}

/* The offset and its error from the calibrations (see the header). */
static int read_calibration(rd *r, ag_sys_ev *e) {
  json_t *cal = json_object_get(e->root, "calibration"), *c;
  size_t i;
  if (!json_is_array(cal))
    return bad(r, "field 'calibration' is missing or not an array");
  ag_clock_cal cs[16];
  size_t n = 0;
  json_array_foreach(cal, i, c) {
    int64_t g0, g1, c0, c1;
    if (get_i64(c, "gt_first", &g0) || get_i64(c, "gt_last", &g1) ||
        get_i64(c, "cupti_start", &c0) || get_i64(c, "cupti_end", &c1))
      return bad(r, "calibration[%zu]: needs gt_first, gt_last, cupti_start, cupti_end", i);
    if (n < sizeof cs / sizeof cs[0])
      cs[n++] = (ag_clock_cal){g0, g1, c0, c1};
  }
  if (!(e->ncal = ag_sys_clock_fit(cs, n, &e->offset_ns, &e->error_ns)))
    return bad(r, "no calibration kernel was seen by the activity trace: its clock cannot be "
                  "aligned with %%globaltimer");
  return 0;
}

/* An NVTX marker record: {"kind":"nvtx","id","marker":"start"|"end"|
 * "instant","ts","pid","tid","name","domain"}, kept as a range of one
 * marker (paired by pair_ranges). */
static int read_marker(rd *r, json_t *o, size_t i, ag_sys_range *g, int *is_end) {
  const char *m = json_string_value(json_object_get(o, "marker"));
  int64_t id, ts, v;
  if (!m || (strcmp(m, "start") && strcmp(m, "end") && strcmp(m, "instant")))
    return bad(r, "records[%zu] (nvtx): 'marker' must be start, end or instant", i);
  if (get_i64(o, "id", &id) || id < 0 || get_i64(o, "ts", &ts) || ts < 0)
    return bad(r, "records[%zu] (nvtx): needs the marker 'id' and its timestamp 'ts' (CUPTI "
                  "ns)", i);
  g->id = (uint32_t)id;
  g->start = g->end = ts;
  g->instant = !strcmp(m, "instant");
  *is_end = !strcmp(m, "end");
  g->name = json_string_value(json_object_get(o, "name"));
  g->domain = json_string_value(json_object_get(o, "domain"));
  if (!get_i64(o, "tid", &v))
    g->tid = (uint32_t)v;
  if (!get_i64(o, "pid", &v))
    g->pid = (uint32_t)v;
  return 0;
}

static int cmp_range(const void *a, const void *b) {
  const ag_sys_range *x = a, *y = b;
  if (x->start != y->start)
    return x->start < y->start ? -1 : 1;
  return (x->depth > y->depth) - (x->depth < y->depth);
}

/* Pairs the markers (m, by timestamp; ends flagged in is_end) into ranges:
 * an end closes the open start of its ID; an end with none is counted
 * (e->nvtx_unmatched); a start never closed stays open. The depth of a
 * range is the number of its thread's ranges open at its start. */
static int pair_ranges(ag_sys_ev *e, ag_sys_range *m, const int *is_end, size_t n) {
  size_t *open = ag_calloc(n + 1, sizeof *open), nopen = 0;
  if (!open)
    return AG_ENOMEM;
  e->nranges = 0;
  for (size_t i = 0; i < n; i++) {
    if (!is_end[i]) {
      ag_sys_range g = m[i];
      g.open = !g.instant;
      for (size_t k = 0; k < nopen; k++)
        g.depth += e->ranges[open[k]].tid == g.tid;
      e->ranges[e->nranges] = g;
      if (!g.instant)
        open[nopen++] = e->nranges;
      e->nranges++;
      continue;
    }
    size_t k = nopen;
    while (k > 0 && e->ranges[open[k - 1]].id != m[i].id)
      k--;
    if (!k) {
      e->nvtx_unmatched++;
      continue;
    }
    ag_sys_range *g = &e->ranges[open[k - 1]];
    g->end = m[i].start, g->open = 0;
    memmove(&open[k - 1], &open[k], (nopen - k) * sizeof *open);
    nopen--;
  }
  ag_free(open);
  qsort(e->ranges, e->nranges, sizeof *e->ranges, cmp_range);
  return 0;
}

/* Markers sorted by timestamp, an end after a start of the same instant. */
typedef struct mk {
  ag_sys_range g;
  int is_end;
  size_t at;
} mk;

static int cmp_mk(const void *a, const void *b) {
  const mk *x = a, *y = b;
  if (x->g.start != y->g.start)
    return x->g.start < y->g.start ? -1 : 1;
  return (x->at > y->at) - (x->at < y->at);
}

static int is_nvtx(json_t *o) {
  const char *k = json_string_value(json_object_get(o, "kind"));
  return k && !strcmp(k, "nvtx");
}

static int read_nvtx(rd *r, ag_sys_ev *e, json_t *recs) {
  json_t *nv = json_object_get(e->root, "nvtx"), *o;
  e->nvtx_on = json_is_object(nv);
  e->nvtx_injection = json_string_value(json_object_get(nv, "injection"));
  if (!e->nvtx_injection)
    e->nvtx_injection = "";
  e->nvtx_by_argus = json_is_true(json_object_get(nv, "set_by_argus"));
  size_t n = 0, i;
  json_array_foreach(recs, i, o) n += is_nvtx(o);
  mk *m = ag_calloc(n + 1, sizeof *m);
  int *is_end = ag_calloc(n + 1, sizeof *is_end);
  ag_sys_range *g = ag_calloc(n + 1, sizeof *g);
  e->ranges = ag_calloc(n + 1, sizeof *e->ranges);
  int rc = m && is_end && g && e->ranges ? 0 : AG_ENOMEM;
  size_t k = 0;
  json_array_foreach(recs, i, o) {
    if (rc || !is_nvtx(o))
      continue;
    m[k].at = k;
    rc = read_marker(r, o, i, &m[k].g, &m[k].is_end);
    k++;
  }
  if (!rc) {
    qsort(m, n, sizeof *m, cmp_mk);
    for (i = 0; i < n; i++)
      g[i] = m[i].g, is_end[i] = m[i].is_end;
    rc = pair_ranges(e, g, is_end, n);
  }
  if (!rc && n && !e->nvtx_on)
    rc = bad(r, "NVTX marker records without the 'nvtx' member that says how they were "
                "collected");
  ag_free(m);
  ag_free(is_end);
  ag_free(g);
  return rc;
}

static int read_all(rd *r, ag_sys_ev *e, const char *format) {
  json_t *fmt = json_object_get(e->root, "format"), *ver = json_object_get(e->root, "version");
  if (!json_is_string(fmt) || strcmp(json_string_value(fmt), format) != 0)
    return bad(r, "not %s evidence (format is not \"%s\")",
               strcmp(format, "argus-system") ? "PM-sampling" : "system-timeline", format);
  if (!json_is_integer(ver) || json_integer_value(ver) != 1)
    return bad(r, "system-timeline evidence version %lld: this argus reads version 1",
               json_is_integer(ver) ? (long long)json_integer_value(ver) : -1LL);
  json_t *vid = json_object_get(json_object_get(e->root, "variant"), "id");
  e->variant_id = json_is_string(vid) ? json_string_value(vid) : NULL;
  int64_t v = 0;
  if (get_i64(e->root, "dropped_records", &v) || v < 0)
    return bad(r, "field 'dropped_records' is missing");
  e->dropped = (uint64_t)v;
  json_t *lost = json_object_get(e->root, "lost_records");
  e->lost = json_is_integer(lost) ? (int)json_integer_value(lost) : 0;
  json_t *recs = json_object_get(e->root, "records"), *o;
  if (!json_is_array(recs))
    return bad(r, "field 'records' is missing or not an array");
  e->recs = ag_calloc(json_array_size(recs) + 1, sizeof *e->recs);
  if (!e->recs)
    return AG_ENOMEM;
  size_t i;
  int rc;
  json_array_foreach(recs, i, o) {
    if (is_nvtx(o))
      continue; /* read_nvtx */
    if ((rc = read_rec(r, o, i, &e->recs[e->nrecs++])))
      return rc;
  }
  qsort(e->recs, e->nrecs, sizeof *e->recs, cmp_rec);
  if ((rc = read_nvtx(r, e, recs)))
    return rc;
  return read_calibration(r, e);
}

static int load(const char *path, const void *data, size_t len, const char *format,
                ag_diags *diags, ag_sys_ev **out) {
  *out = NULL;
  rd r = {path, diags};
  ag_sys_ev *e = ag_calloc(1, sizeof *e);
  if (!e)
    return AG_ENOMEM;
  int rc = ag_json_load_doc(path, data, len, "system-timeline evidence", diags, &e->root);
  if (!rc)
    rc = json_is_object(e->root) ? read_all(&r, e, format) : bad(&r, "not a JSON object");
  if (rc) {
    ag_sys_ev_free(e);
    return rc;
  }
  *out = e;
  return 0;
}

int ag_sys_ev_load(const char *path, ag_diags *diags, ag_sys_ev **out) {
  return load(path, NULL, 0, "argus-system", diags, out);
}

int ag_sys_ev_load_mem(const void *data, size_t len, const char *name, ag_diags *diags,
                       ag_sys_ev **out) {
  return ag_sys_ev_load_mem_as(data, len, name, "argus-system", diags, out);
}

int ag_sys_ev_load_mem_as(const void *data, size_t len, const char *name, const char *format,
                          ag_diags *diags, ag_sys_ev **out) {
  static const char empty[1] = "";
  return load(name, len ? data : empty, len, format, diags, out);
}

void ag_sys_ev_free(ag_sys_ev *e) {
  if (!e)
    return;
  json_decref(e->root);
  ag_free(e->recs);
  ag_free(e->ranges);
  ag_free(e);
}

/* ---------------------------------------------------------- the signal */

typedef struct stream_acc {
  uint32_t stream;
  int kernels, memcpy, memset, sync;
  double busy, first, last;
  uint64_t bytes;
} stream_acc;

static stream_acc *stream_of(stream_acc *s, int *n, uint32_t id) {
  for (int i = 0; i < *n; i++)
    if (s[i].stream == id)
      return &s[i];
  s[*n] = (stream_acc){.stream = id, .first = INFINITY, .last = -INFINITY};
  return &s[(*n)++];
}

json_t *ag_sys_signal(const ag_sys_ev *e) { return ag_sys_signal_in(e, NULL); }

/* "launch=1:3,launch=5:6": the scope's launch ranges. */
static void launch_ranges(const ag_scope_dim *d, ag_str *out) {
  for (int i = 0; i < d->n; i++)
    ag_str_printf(out, "%slaunch=%lld:%lld", i ? "," : "", (long long)d->r[i].lo,
                  (long long)d->r[i].hi);
}

/* Range g encloses record r: r's start and end within g's (CUPTI clock). */
static int encloses(const ag_sys_range *g, const ag_sys_rec *r) {
  return !g->instant && !g->open && g->start <= r->start && r->end <= g->end;
}

/* The innermost range enclosing r (the latest start), or NULL. */
static const ag_sys_range *range_of(const ag_sys_ev *e, const ag_sys_rec *r) {
  const ag_sys_range *in = NULL;
  for (size_t i = 0; i < e->nranges; i++)
    if (encloses(&e->ranges[i], r) && (!in || e->ranges[i].start >= in->start))
      in = &e->ranges[i];
  return in;
}

/* One entry per graph launch: the selected kernels of one graph ID and one
 * correlation ID (the graph launch's). */
static json_t *graph_launches(const ag_sys_ev *e, const int *lno) {
  json_t *gs = json_array();
  for (size_t i = 0; gs && i < e->nrecs; i++) {
    const ag_sys_rec *r = &e->recs[i];
    if (lno[i] < 0 || !r->graph)
      continue;
    json_t *g = NULL, *x;
    size_t k;
    json_array_foreach(gs, k, x) if (json_integer_value(json_object_get(x, "graph")) == r->graph &&
                                     json_integer_value(json_object_get(x, "corr")) == r->corr)
        g = x;
    double t0 = ag_sys_ev_gt(e, r->start), t1 = ag_sys_ev_gt(e, r->end);
    if (!g) {
      g = json_pack("{s:I,s:I,s:I,s:i,s:[],s:f,s:f}", "graph", (json_int_t)r->graph, "corr",
                    (json_int_t)r->corr, "stream", (json_int_t)r->stream, "kernels", 0,
                    "launches", "start_ns", t0, "end_ns", t1);
      if (!g || json_array_append_new(gs, g))
        goto oom;
    }
    json_object_set_new(g, "kernels",
                        json_integer(json_integer_value(json_object_get(g, "kernels")) + 1));
    json_object_set_new(g, "start_ns",
                        json_real(fmin(json_real_value(json_object_get(g, "start_ns")), t0)));
    json_object_set_new(g, "end_ns",
                        json_real(fmax(json_real_value(json_object_get(g, "end_ns")), t1)));
    if (json_array_append_new(json_object_get(g, "launches"), json_integer(lno[i])))
      goto oom;
  }
  size_t k;
  json_t *x;
  json_array_foreach(gs, k, x) {
    double d = json_real_value(json_object_get(x, "end_ns")) -
               json_real_value(json_object_get(x, "start_ns"));
    if (json_object_set_new(x, "duration_ns", json_real(d)))
      goto oom;
  }
  return gs;
oom:
  json_decref(gs);
  return NULL;
}

/* The nvtx section: the ranges, each with the selected launches it encloses. */
static json_t *nvtx_section(const ag_sys_ev *e, const int *lno) {
  json_t *rs = json_array();
  for (size_t i = 0; rs && i < e->nranges; i++) {
    const ag_sys_range *g = &e->ranges[i];
    json_t *ls = json_array();
    for (size_t k = 0; ls && k < e->nrecs; k++)
      if (lno[k] >= 0 && encloses(g, &e->recs[k]) &&
          json_array_append_new(ls, json_integer(lno[k])))
        json_decref(ls), ls = NULL;
    json_t *o = ls ? json_pack("{s:s?,s:s?,s:I,s:i,s:f,s:o,s:b,s:b,s:o}", "name", g->name,
                               "domain", g->domain, "tid", (json_int_t)g->tid, "depth", g->depth,
                               "start_ns", ag_sys_ev_gt(e, g->start), "duration_ns",
                               g->open ? json_null() : json_integer(g->end - g->start),
                               "instant", g->instant, "open", g->open, "launches", ls)
                   : NULL;
    if (!o || json_array_append_new(rs, o)) {
      json_decref(rs);
      return NULL;
    }
  }
  return rs ? json_pack("{s:s,s:b,s:I,s:s,s:o}", "injection", e->nvtx_injection,
                        "set_by_argus", e->nvtx_by_argus, "unmatched_ends",
                        (json_int_t)e->nvtx_unmatched, "rule",
                        "a range encloses a launch when the kernel's start and end (CUPTI) lie "
                        "between the range's start and end markers (host time, the same clock)",
                        "ranges", rs)
            : NULL;
}

json_t *ag_sys_signal_in(const ag_sys_ev *e, const ag_scope *scope) {
  json_t *launches = json_array(), *streams = json_array(), *covered = json_array();
  json_t *graphs = NULL, *nvtx = NULL;
  stream_acc *acc = ag_calloc(e->nrecs + 1, sizeof *acc);
  int *lno = ag_calloc(e->nrecs + 1, sizeof *lno);
  int ns = 0, launch = 0, calib = 0, ctx_syncs = 0;
  int selects = scope && scope->dim[AG_SCOPE_LAUNCH].n > 0;
  if (!launches || !streams || !covered || !acc || !lno)
    goto oom;
  /* each kernel's launch number when the scope keeps it, else -1 */
  for (size_t i = 0, n = 0; i < e->nrecs; i++) {
    const ag_sys_rec *r = &e->recs[i];
    lno[i] = -1;
    if (r->kind != AG_SYS_KERNEL || r->argus)
      continue;
    if (!selects || ag_scope_contains(scope, AG_SCOPE_LAUNCH, (int64_t)n))
      lno[i] = (int)n;
    n++;
  }
  for (size_t i = 0; i < e->nrecs; i++) {
    const ag_sys_rec *r = &e->recs[i];
    if (r->kind == AG_SYS_KERNEL && r->argus) {
      calib++;
      continue;
    }
    /* a launch the scope leaves out: numbered, not counted */
    if (r->kind == AG_SYS_KERNEL && selects &&
        !ag_scope_contains(scope, AG_SCOPE_LAUNCH, launch)) {
      launch++;
      continue;
    }
    if (r->kind == AG_SYS_KERNEL && json_array_append_new(covered, json_integer(launch)))
      goto oom;
    if (r->kind == AG_SYS_SYNC && r->stream == UINT32_MAX) {
      ctx_syncs++; /* a context-wide synchronization: no stream */
      continue;
    }
    if (r->kind == AG_SYS_API)
      continue; /* a host call: the comm signal's (argus/comm.h), no stream */
    stream_acc *s = stream_of(acc, &ns, r->stream);
    double t0 = ag_sys_ev_gt(e, r->start), t1 = ag_sys_ev_gt(e, r->end);
    if (r->kind != AG_SYS_STREAM && r->kind != AG_SYS_SYNC) {
      s->busy += (double)(r->end - r->start);
      s->first = fmin(s->first, t0), s->last = fmax(s->last, t1);
    }
    switch (r->kind) {
    case AG_SYS_KERNEL: {
      s->kernels++;
      json_t *o = json_pack(
          "{s:i,s:s,s:I,s:I,s:f,s:I,s:[iii],s:[iii],s:[iii],s:i,s:i,s:i}", "launch", launch++,
          "kernel", r->name, "corr", (json_int_t)r->corr, "stream", (json_int_t)r->stream,
          "start_ns", t0, "duration_ns", (json_int_t)(r->end - r->start), "grid", r->grid[0],
          r->grid[1], r->grid[2], "block", r->block[0], r->block[1], r->block[2], "cluster",
          r->cluster[0], r->cluster[1], r->cluster[2], "registers", r->registers,
          "static_smem", r->static_smem, "dynamic_smem", r->dynamic_smem);
      if (!o || json_array_append_new(launches, o))
        goto oom;
      const ag_sys_range *g = range_of(e, r);
      if ((r->graph && (json_object_set_new(o, "graph", json_integer(r->graph)) ||
                        json_object_set_new(o, "graph_node", json_integer((json_int_t)r->graph_node)))) ||
          (g && json_object_set_new(o, "nvtx", g->name ? json_string(g->name) : json_null())))
        goto oom;
      break;
    }
    case AG_SYS_MEMCPY:
      s->memcpy++, s->bytes += r->bytes;
      break;
    case AG_SYS_MEMSET:
      s->memset++, s->bytes += r->bytes;
      break;
    case AG_SYS_SYNC:
      s->sync++;
      break;
    case AG_SYS_STREAM:
    case AG_SYS_API:
      break;
    }
  }
  for (int i = 0; i < ns; i++) {
    const stream_acc *s = &acc[i];
    json_t *o = json_pack("{s:I,s:i,s:i,s:i,s:i,s:f,s:I,s:o?,s:o?}", "stream",
                          (json_int_t)s->stream, "kernels", s->kernels, "memcpy", s->memcpy,
                          "memset", s->memset, "sync", s->sync, "busy_ns", s->busy, "bytes",
                          (json_int_t)s->bytes, "first_ns",
                          isfinite(s->first) ? json_real(s->first) : NULL, "last_ns",
                          isfinite(s->last) ? json_real(s->last) : NULL);
    if (!o || json_array_append_new(streams, o))
      goto oom;
  }
  ag_free(acc);
  acc = NULL;
  if (!(graphs = graph_launches(e, lno)) || (e->nvtx_on && !(nvtx = nvtx_section(e, lno))))
    goto oom;
  ag_free(lno);
  lno = NULL;
  json_t *sel = NULL;
  if (selects) {
    ag_str sc = AG_STR_INIT;
    launch_ranges(&scope->dim[AG_SCOPE_LAUNCH], &sc);
    sel = sc.oom ? NULL
                 : json_pack("{s:s,s:O,s:i}", "scope", ag_str_cstr(&sc), "covered", covered,
                             "launches_in_run", launch);
    ag_str_release(&sc);
    if (!sel)
      goto oom;
  }
  json_decref(covered);
  return json_pack("{s:s,s:s,s:{s:f,s:f,s:i,s:s},s:I,s:i,s:o,s:o,s:i,s:i,s:o*,s:o,s:o*}",
                   "signal",
                   "system",
                   "qual", "observed", "clock", "offset_ns", e->offset_ns, "error_ns",
                   e->error_ns, "calibrations", e->ncal, "rule",
                   "CUPTI minus %globaltimer: the mean of the start and end differences of "
                   "Argus's calibration kernels; error: half the largest start/end spread, the "
                   "drift between calibrations, one 32 ns timer step",
                   "dropped_records", (json_int_t)e->dropped, "lost_records", e->lost,
                   "launches", launches, "streams", streams, "calibration_kernels", calib,
                   "context_syncs", ctx_syncs, "selection", sel, "graphs", graphs, "nvtx",
                   nvtx);
oom:
  ag_free(acc);
  ag_free(lno);
  json_decref(graphs);
  json_decref(nvtx);
  json_decref(launches);
  json_decref(streams);
  json_decref(covered);
  return NULL;
}

/* ------------------------------------------------------- the synthesis */

int ag_sys_value(json_t *vals, const char *signal, const char *region, const char *stat,
                 json_t *v, const char *unit, const char *qual) {
  return json_array_append_new(vals, json_pack("{s:s,s:s,s:s,s:o,s:s,s:s}", "region", region,
                                               "signal", signal, "stat", stat, "value", v,
                                               "unit", unit, "qual", qual));
}

json_t *ag_sys_field(const json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return v ? json_deep_copy(v) : json_null();
}

static int value(json_t *vals, const char *region, const char *stat, json_t *v,
                 const char *unit) {
  return ag_sys_value(vals, "system", region, stat, v, unit, "observed");
}

static json_t *field(const json_t *o, const char *k) { return ag_sys_field(o, k); }

/* Warnings for the scope's coordinates the evidence does not record: the
 * values cover all of them. */
static int unretained(const ag_scope *scope, unsigned retained, json_t *warn) {
  ag_str w = AG_STR_INIT;
  int rc = 0;
  for (int k = 0; k < AG_SCOPE_NDIMS && !rc; k++) {
    if (!scope->dim[k].n || (retained & (1u << k)))
      continue;
    ag_str_clear(&w);
    ag_str_printf(&w, "the system timeline records launches, not %s: the scope's %s ranges do "
                      "not select its values (they cover every %s)",
                  ag_scope_key_name((ag_scope_key)k), ag_scope_key_name((ag_scope_key)k),
                  ag_scope_key_name((ag_scope_key)k));
    rc = w.oom || json_array_append_new(warn, json_string(ag_str_cstr(&w)));
  }
  if (!rc && scope->role[0]) {
    ag_str_clear(&w);
    ag_str_printf(&w, "the system timeline records launches, not warp roles: role=%s does not "
                      "select its values (they cover every warp)",
                  scope->role);
    rc = w.oom || json_array_append_new(warn, json_string(ag_str_cstr(&w)));
  }
  ag_str_release(&w);
  return rc ? AG_ENOMEM : 0;
}

int ag_sys_synth(const ag_sys_ev *e, const ag_scope *scope, unsigned retained, json_t **out) {
  *out = NULL;
  ag_scope none;
  memset(&none, 0, sizeof none);
  const ag_scope *sel = scope && (retained & (1u << AG_SCOPE_LAUNCH)) ? scope : &none;
  json_t *sig = ag_sys_signal_in(e, sel);
  json_t *o = sig ? json_pack("{s:[],s:O,s:[],s:[]}", "values", "system", sig, "warnings",
                              "missing")
                  : NULL;
  json_decref(sig);
  if (!o)
    return AG_ENOMEM;
  json_t *vals = json_object_get(o, "values"), *l;
  sig = json_object_get(o, "system");
  int bad = scope ? unretained(scope, retained, json_object_get(o, "warnings")) : 0;
  size_t i;
  char name[320];
  json_array_foreach(json_object_get(sig, "launches"), i, l) {
    snprintf(name, sizeof name, "(launch %lld %s)",
             (long long)json_integer_value(json_object_get(l, "launch")),
             json_string_value(json_object_get(l, "kernel")));
    static const char *const ks[][2] = {{"duration_ns", "ns"}, {"start_ns", "ns"},
                                        {"stream", ""},       {"corr", ""},
                                        {"registers", "registers"}, {"static_smem", "bytes"},
                                        {"dynamic_smem", "bytes"}, {"grid", ""},
                                        {"block", ""}};
    for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++)
      bad |= value(vals, name, ks[k][0], field(l, ks[k][0]), ks[k][1]);
    static const char *const opt[] = {"graph", "graph_node", "nvtx"}; /* when it has them */
    for (size_t k = 0; k < sizeof opt / sizeof opt[0]; k++)
      if (json_object_get(l, opt[k]))
        bad |= value(vals, name, opt[k], field(l, opt[k]), "");
  }
  json_array_foreach(json_object_get(sig, "streams"), i, l) {
    snprintf(name, sizeof name, "(stream %lld)",
             (long long)json_integer_value(json_object_get(l, "stream")));
    static const char *const ks[][2] = {{"kernels", "count"}, {"memcpy", "count"},
                                        {"memset", "count"},  {"sync", "count"},
                                        {"busy_ns", "ns"},    {"bytes", "bytes"}};
    for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++)
      bad |= value(vals, name, ks[k][0], field(l, ks[k][0]), ks[k][1]);
  }
  json_array_foreach(json_object_get(sig, "graphs"), i, l) {
    snprintf(name, sizeof name, "(graph %lld corr %lld)",
             (long long)json_integer_value(json_object_get(l, "graph")),
             (long long)json_integer_value(json_object_get(l, "corr")));
    bad |= value(vals, name, "kernels", field(l, "kernels"), "count");
    bad |= value(vals, name, "duration_ns", field(l, "duration_ns"), "ns");
    bad |= value(vals, name, "launches", field(l, "launches"), "");
  }
  json_array_foreach(json_object_get(json_object_get(sig, "nvtx"), "ranges"), i, l) {
    const char *rn = json_string_value(json_object_get(l, "name"));
    snprintf(name, sizeof name, "(nvtx %zu %s)", i, rn ? rn : "(unnamed)");
    bad |= value(vals, name, "duration_ns", field(l, "duration_ns"), "ns");
    bad |= value(vals, name, "launches", field(l, "launches"), "");
  }
  json_t *clk = json_object_get(sig, "clock");
  bad |= value(vals, "(system)", "clock_offset_ns", field(clk, "offset_ns"), "ns");
  bad |= value(vals, "(system)", "clock_error_ns", field(clk, "error_ns"), "ns");
  bad |= value(vals, "(system)", "dropped_records", field(sig, "dropped_records"), "count");
  /* which launches the values cover, when the scope selects */
  json_t *s = json_object_get(sig, "selection");
  json_t *cov = json_object_get(s, "covered");
  if (s && json_array_size(cov)) {
    bad |= value(vals, "(system)", "launches_covered", json_deep_copy(s), "");
  } else if (s) {
    ag_str why = AG_STR_INIT;
    json_int_t n = json_integer_value(json_object_get(s, "launches_in_run"));
    ag_str_printf(&why, "the scope's %s selects none of the %lld launch%s the run made "
                        "(launches are counted from 0)",
                  json_string_value(json_object_get(s, "scope")), (long long)n,
                  n == 1 ? "" : "es");
    bad |= why.oom || json_array_append_new(json_object_get(o, "missing"),
                                           json_pack("{s:s,s:s}", "what", "launches", "why",
                                                     ag_str_cstr(&why)));
    ag_str_release(&why);
  }
  if (bad) {
    json_decref(o);
    return AG_ENOMEM;
  }
  *out = o;
  return 0;
}

/* o[k], else 0 */
static double num(const json_t *o, const char *k) { return ag_json_num(o, k, 0); }

/* "0-3, 5" then a newline; "-" for none. */
static void list_launches(const json_t *ls, ag_str *out) {
  size_t n = json_array_size(ls);
  if (!n)
    ag_str_puts(out, "-");
  for (size_t i = 0; i < n;) {
    long long a = (long long)json_integer_value(json_array_get(ls, i)), b = a;
    size_t j = i + 1;
    while (j < n && (long long)json_integer_value(json_array_get(ls, j)) == b + 1)
      b++, j++;
    ag_str_printf(out, "%s%lld", i ? ", " : "", a);
    if (b > a)
      ag_str_printf(out, "-%lld", b);
    i = j;
  }
  ag_str_puts(out, "\n");
}

int ag_sys_text(const json_t *sig, ag_str *out) {
  json_t *ls = json_object_get(sig, "launches"), *ss = json_object_get(sig, "streams"), *o;
  json_t *clk = json_object_get(sig, "clock");
  size_t i;
  ag_str_printf(out, "system timeline: %zu launch%s on %zu stream%s (observed, CUPTI activity)\n",
                json_array_size(ls), json_array_size(ls) == 1 ? "" : "es", json_array_size(ss),
                json_array_size(ss) == 1 ? "" : "s");
  json_t *sel = json_object_get(sig, "selection");
  if (sel) {
    ag_str_printf(out, "  scope %s: launches ", json_string_value(json_object_get(sel, "scope")));
    json_array_foreach(json_object_get(sel, "covered"), i, o)
        ag_str_printf(out, "%s%lld", i ? ", " : "", (long long)json_integer_value(o));
    if (!json_array_size(json_object_get(sel, "covered")))
      ag_str_puts(out, "none");
    ag_str_printf(out, " of the run's %lld\n", (long long)num(sel, "launches_in_run"));
  }
  ag_str_puts(out, "  launch  kernel                      stream    start_us   dur_us  grid "
                   "x block         regs  smem\n");
  double t0 = json_array_size(ls) ? num(json_array_get(ls, 0), "start_ns") : 0;
  json_array_foreach(ls, i, o) {
    json_t *g = json_object_get(o, "grid"), *b = json_object_get(o, "block");
    char gb[64];
    snprintf(gb, sizeof gb, "%lldx%lldx%lld x %lldx%lldx%lld",
             (long long)json_integer_value(json_array_get(g, 0)),
             (long long)json_integer_value(json_array_get(g, 1)),
             (long long)json_integer_value(json_array_get(g, 2)),
             (long long)json_integer_value(json_array_get(b, 0)),
             (long long)json_integer_value(json_array_get(b, 1)),
             (long long)json_integer_value(json_array_get(b, 2)));
    ag_str_printf(out, "  %6d  %-26.26s %7lld %11.3f %8.3f  %-20s %4d %5d\n",
                  (int)num(o, "launch"), json_string_value(json_object_get(o, "kernel")),
                  (long long)num(o, "stream"), (num(o, "start_ns") - t0) / 1e3,
                  num(o, "duration_ns") / 1e3, gb, (int)num(o, "registers"),
                  (int)(num(o, "static_smem") + num(o, "dynamic_smem")));
  }
  ag_str_puts(out, "  stream  kernels  memcpy  memset  sync   busy_us      bytes\n");
  json_array_foreach(ss, i, o)
    ag_str_printf(out, "  %6lld  %7d  %6d  %6d  %4d  %8.3f  %9lld\n", (long long)num(o, "stream"),
                  (int)num(o, "kernels"), (int)num(o, "memcpy"), (int)num(o, "memset"),
                  (int)num(o, "sync"), num(o, "busy_ns") / 1e3, (long long)num(o, "bytes"));
  json_t *gs = json_object_get(sig, "graphs");
  if (json_array_size(gs)) {
    ag_str_printf(out, "  graph launches: %zu (kernels grouped by graph ID and the graph "
                       "launch's correlation ID)\n", json_array_size(gs));
    ag_str_puts(out, "   graph      corr  stream  kernels    start_us   dur_us  launches\n");
    json_array_foreach(gs, i, o) {
      ag_str_printf(out, "  %6lld  %8lld  %6lld  %7d %11.3f %8.3f  ",
                    (long long)num(o, "graph"), (long long)num(o, "corr"),
                    (long long)num(o, "stream"), (int)num(o, "kernels"),
                    (num(o, "start_ns") - t0) / 1e3, num(o, "duration_ns") / 1e3);
      list_launches(json_object_get(o, "launches"), out);
    }
  }
  json_t *nv = json_object_get(sig, "nvtx");
  if (nv) {
    json_t *rs = json_object_get(nv, "ranges");
    const char *inj = json_string_value(json_object_get(nv, "injection"));
    ag_str_printf(out, "  nvtx ranges: %zu (CUPTI markers; NVTX_INJECTION64_PATH %s%s)\n",
                  json_array_size(rs), inj && *inj ? inj : "unset: no marker can come",
                  json_is_true(json_object_get(nv, "set_by_argus")) ? ", set by argus" : "");
    if (json_array_size(rs))
      ag_str_puts(out, "  range                           thread  depth    start_us     dur_us  "
                       "launches\n");
    json_array_foreach(rs, i, o) {
      const char *rn = json_string_value(json_object_get(o, "name"));
      char nm[40];
      snprintf(nm, sizeof nm, "%s%.*s", json_is_true(json_object_get(o, "instant")) ? "* " : "",
               30, rn ? rn : "(unnamed)");
      ag_str_printf(out, "  %-30.30s %7lld %6d %11.3f ", nm, (long long)num(o, "tid"),
                    (int)num(o, "depth"), (num(o, "start_ns") - t0) / 1e3);
      if (json_is_true(json_object_get(o, "open")))
        ag_str_puts(out, "      open  ");
      else
        ag_str_printf(out, "%10.3f  ", num(o, "duration_ns") / 1e3);
      list_launches(json_object_get(o, "launches"), out);
    }
    if (num(nv, "unmatched_ends") > 0)
      ag_str_printf(out, "  nvtx: %lld end marker(s) without their start\n",
                    (long long)num(nv, "unmatched_ends"));
  }
  ag_str_printf(out, "  context synchronizations: %d\n", (int)num(sig, "context_syncs"));
  ag_str_printf(out, "  clock: CUPTI - %%globaltimer = %.0f ns (error <= %.0f ns, %d "
                     "calibrations); dropped records: %lld\n",
                num(clk, "offset_ns"), num(clk, "error_ns"), (int)num(clk, "calibrations"),
                (long long)num(sig, "dropped_records"));
  return out->oom ? AG_ENOMEM : 0;
}
