/*
 * comm.c — the `comm` signal (argus/comm.h, docs/comm.md): NCCL's
 * collectives on the system timeline. Every NCCL kernel is matched to its
 * launch call (the API record of its correlation ID), to the NVTX ranges
 * around that call (NCCL's own, and the harness's "argus.comm" declaration
 * of bytes and ranks) and to the compute kernels of its device that ran
 * while it did. Invariants: every time is on CUPTI's one clock (no
 * alignment error enters a difference); a value is null, never guessed,
 * when its input is not in the evidence. Load: O(kernels x records) per
 * collection, once.
 */
#include "argus/comm.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
  const char *name, *token, *range; /* snake case, kernel-name token, NCCL's NVTX range */
} ops[] = {
    {"all_gather", "AllGather", "ncclAllGather"},
    {"reduce_scatter", "ReduceScatter", "ncclReduceScatter"},
    {"all_reduce", "AllReduce", "ncclAllReduce"},
    {"broadcast", "Broadcast", "ncclBroadcast"},
    {"reduce", "Reduce", "ncclReduce"},
    {"send_recv", "SendRecv", "ncclSend"},
    {"other", NULL, NULL},
};
#define NOPS ((int)(sizeof ops / sizeof ops[0]))

const char *ag_comm_op_name(ag_comm_op op) {
  return op >= 0 && (int)op < NOPS ? ops[op].name : NULL;
}

ag_comm_op ag_comm_op_parse(const char *name) {
  for (int i = 0; name && i < NOPS; i++)
    if (!strcmp(name, ops[i].name))
      return (ag_comm_op)i;
  return AG_COMM_NONE;
}

ag_comm_op ag_comm_op_of_kernel(const char *name) {
  static const char *const prefix[] = {"ncclDevKernel_", "ncclKernel_"};
  for (int p = 0; name && p < 2; p++) {
    size_t n = strlen(prefix[p]);
    if (strncmp(name, prefix[p], n))
      continue;
    const char *t = name + n;
    size_t len = strcspn(t, "_(");
    for (int i = 0; i < NOPS; i++)
      if (ops[i].token && strlen(ops[i].token) == len && !strncmp(t, ops[i].token, len))
        return (ag_comm_op)i;
    return AG_COMM_OTHER;
  }
  return AG_COMM_NONE;
}

ag_comm_op ag_comm_op_of_range(const char *name) {
  for (int i = 0; name && i < NOPS; i++)
    if (ops[i].range && !strcmp(name, ops[i].range))
      return (ag_comm_op)i;
  if (name && !strcmp(name, "ncclRecv"))
    return AG_COMM_SEND_RECV;
  return AG_COMM_NONE;
}

double ag_comm_bus_factor(ag_comm_op op, int nranks) {
  if (nranks < 1)
    return 0;
  double n = nranks;
  switch (op) {
  case AG_COMM_ALL_REDUCE:
    return 2.0 * (n - 1) / n;
  case AG_COMM_ALL_GATHER:
  case AG_COMM_REDUCE_SCATTER:
    return (n - 1) / n;
  case AG_COMM_BROADCAST:
  case AG_COMM_REDUCE:
  case AG_COMM_SEND_RECV:
    return 1.0;
  default:
    return 0;
  }
}

#define DECL "argus.comm"

static int parse_u64(const char *v, size_t len, uint64_t *out) {
  char buf[32];
  if (!len || len >= sizeof buf)
    return -1;
  memcpy(buf, v, len);
  buf[len] = 0;
  for (size_t i = 0; i < len; i++)
    if (!isdigit((unsigned char)buf[i]))
      return -1;
  errno = 0;
  unsigned long long x = strtoull(buf, NULL, 10);
  if (errno)
    return -1;
  *out = x;
  return 0;
}

int ag_comm_decl_parse(const char *name, ag_comm_decl *d, char *why, size_t n) {
  memset(d, 0, sizeof *d);
  d->op = AG_COMM_NONE;
  size_t dl = strlen(DECL);
  if (!name || strncmp(name, DECL, dl) || (name[dl] && name[dl] != ' '))
    return 1;
  int have_bytes = 0;
  for (const char *p = name + dl; *p;) {
    while (*p == ' ')
      p++;
    if (!*p)
      break;
    size_t len = strcspn(p, " ");
    const char *eq = memchr(p, '=', len);
    if (!eq) {
      snprintf(why, n, "'%.*s' is not key=value (keys: op, bytes, ranks)", (int)len, p);
      return AG_EPARSE;
    }
    size_t kl = (size_t)(eq - p), vl = len - kl - 1;
    const char *v = eq + 1;
    uint64_t x = 0;
    if (kl == 2 && !strncmp(p, "op", 2)) {
      char buf[32] = "";
      snprintf(buf, sizeof buf, "%.*s", (int)(vl < 31 ? vl : 31), v);
      d->op = ag_comm_op_parse(buf);
      if (d->op == AG_COMM_NONE || d->op == AG_COMM_OTHER) {
        snprintf(why, n, "op '%.*s' is none of all_gather, reduce_scatter, all_reduce, "
                         "broadcast, reduce, send_recv", (int)vl, v);
        return AG_EPARSE;
      }
    } else if (kl == 5 && !strncmp(p, "bytes", 5)) {
      if (parse_u64(v, vl, &x) || !x) {
        snprintf(why, n, "bytes '%.*s' is not a positive integer", (int)vl, v);
        return AG_EPARSE;
      }
      d->bytes = x, have_bytes = 1;
    } else if (kl == 5 && !strncmp(p, "ranks", 5)) {
      if (parse_u64(v, vl, &x) || !x || x > 65536) {
        snprintf(why, n, "ranks '%.*s' is not an integer in 1..65536", (int)vl, v);
        return AG_EPARSE;
      }
      d->ranks = (int)x;
    } else {
      snprintf(why, n, "unknown key '%.*s' (keys: op, bytes, ranks)", (int)kl, p);
      return AG_EPARSE;
    }
    p += len;
  }
  if (!have_bytes || !d->ranks) {
    snprintf(why, n, "a declaration needs bytes=N and ranks=R (the collective's size in "
                     "nccl-tests' sense and the communicator's ranks)");
    return AG_EPARSE;
  }
  return 0;
}

/* ------------------------------------------------------------ joins */

/* The launch call of kernel k: the earliest API record of its correlation
 * ID (a runtime call and the driver call inside it share it), or NULL. */
static const ag_sys_rec *launch_call(const ag_sys_ev *e, const ag_sys_rec *k) {
  for (size_t i = 0; i < e->nrecs; i++)
    if (e->recs[i].kind == AG_SYS_API && e->recs[i].corr == k->corr)
      return &e->recs[i]; /* records are by start */
  return NULL;
}

/* Range g holds the kernel: its launch call's start within g, or without
 * the call, the kernel's start and end within g (one clock). */
static int holds(const ag_sys_range *g, const ag_sys_rec *call, const ag_sys_rec *k) {
  if (g->instant || g->open)
    return 0;
  if (call)
    return g->start <= call->start && call->start <= g->end;
  return g->start <= k->start && k->end <= g->end;
}

/* Nanoseconds of [s, t) during which a compute kernel of `device` ran:
 * the union of their spans cut to [s, t). `tmp` holds 2 x nrecs. */
static int64_t overlap_ns(const ag_sys_ev *e, int device, int64_t s, int64_t t, int64_t *tmp,
                          json_t *names) {
  size_t n = 0;
  for (size_t i = 0; i < e->nrecs; i++) { /* by start: the cut spans stay sorted */
    const ag_sys_rec *r = &e->recs[i];
    if (r->kind != AG_SYS_KERNEL || r->argus || r->device != device ||
        ag_comm_op_of_kernel(r->name) != AG_COMM_NONE)
      continue;
    int64_t a = r->start > s ? r->start : s, b = r->end < t ? r->end : t;
    if (a >= b)
      continue;
    tmp[2 * n] = a, tmp[2 * n + 1] = b, n++;
    int seen = 0;
    size_t k;
    json_t *x;
    json_array_foreach(names, k, x) seen |= !strcmp(json_string_value(x), r->name);
    if (!seen)
      json_array_append_new(names, json_string(r->name));
  }
  int64_t sum = 0, cs = 0, ce = -1;
  for (size_t i = 0; i < n; i++) {
    int64_t a = tmp[2 * i], b = tmp[2 * i + 1];
    if (ce < 0 || a > ce) {
      sum += ce > cs ? ce - cs : 0;
      cs = a, ce = b;
    } else if (b > ce) {
      ce = b;
    }
  }
  return sum + (ce > cs ? ce - cs : 0);
}

/* A group of NCCL kernels: one operation, one declared size, one SM count. */
typedef struct grp {
  ag_comm_op op;
  uint64_t bytes;
  int sms, ranks, count, nlaunch;
  double sum, min, max, launch, overlap;
} grp;

static grp *group_of(grp *g, int *n, ag_comm_op op, uint64_t bytes, int sms) {
  for (int i = 0; i < *n; i++)
    if (g[i].op == op && g[i].bytes == bytes && g[i].sms == sms)
      return &g[i];
  g[*n] = (grp){.op = op, .bytes = bytes, .sms = sms, .min = INFINITY, .max = -INFINITY};
  return &g[(*n)++];
}

static json_t *num_or_null(int have, double v) { return have ? json_real(v) : json_null(); }

static const char *const rules =
    "op: the kernel's name (ncclDevKernel_<Op>_* / ncclKernel_<Op>_*), else NCCL's NVTX "
    "range around its launch call; launch_overhead: the launch call's start (CUPTI runtime "
    "/ driver API record of the kernel's correlation ID) to the kernel's start; sms: the "
    "kernel's CTAs (one per NCCL channel, each on an SM of its own); bytes, ranks: the "
    "harness's 'argus.comm' NVTX range around the launch call (declared); algbw = bytes / "
    "duration, busbw = algbw x nccl-tests' factor (all_reduce 2(n-1)/n, all_gather and "
    "reduce_scatter (n-1)/n, else 1) (derived); overlap: the share of the kernel's span in "
    "which compute kernels of its device ran (derived: the join by time, one clock)";

int ag_comm_signal(const ag_sys_ev *e, ag_diags *d, json_t **out) {
  *out = NULL;
  int rc = AG_ENOMEM, ngrp = 0, compute = 0, calls = 0;
  json_t *list = json_array(), *groups = json_array();
  grp *g = ag_calloc(e->nrecs + 1, sizeof *g);
  int64_t *tmp = ag_calloc(2 * e->nrecs + 2, sizeof *tmp);
  if (!list || !groups || !g || !tmp)
    goto out;
  for (size_t i = 0; i < e->nrecs; i++) {
    const ag_sys_rec *k = &e->recs[i];
    if (k->kind == AG_SYS_API)
      calls++;
    if (k->kind != AG_SYS_KERNEL || k->argus)
      continue;
    ag_comm_op op = ag_comm_op_of_kernel(k->name);
    if (op == AG_COMM_NONE) {
      compute++;
      continue;
    }
    const ag_sys_rec *call = launch_call(e, k);
    const ag_sys_range *nccl = NULL, *decl = NULL;
    ag_comm_decl dc = {AG_COMM_NONE, 0, 0};
    for (size_t r = 0; r < e->nranges; r++) { /* by start: the innermost last */
      const ag_sys_range *rg = &e->ranges[r];
      if (!holds(rg, call, k))
        continue;
      if (ag_comm_op_of_range(rg->name) != AG_COMM_NONE)
        nccl = rg;
      char why[256];
      ag_comm_decl x;
      int pr = ag_comm_decl_parse(rg->name, &x, why, sizeof why);
      if (pr == AG_EPARSE) {
        ag_diags_add(d, AG_SEV_ERROR, "system.json", 0, 0, NULL, 0,
                     "nvtx range '%s' (around NCCL kernel %s, corr %u): %s", rg->name,
                     k->name, k->corr, why);
        rc = AG_EPARSE;
        goto out;
      }
      if (!pr && (x.op == AG_COMM_NONE || op == AG_COMM_OTHER || x.op == op))
        decl = rg, dc = x;
    }
    if (op == AG_COMM_OTHER && nccl)
      op = ag_comm_op_of_range(nccl->name);
    if (op == AG_COMM_OTHER && decl && dc.op != AG_COMM_NONE)
      op = dc.op;
    double dur = (double)(k->end - k->start);
    int sms = k->grid[0] * k->grid[1] * k->grid[2];
    json_t *names = json_array();
    if (!names)
      goto out;
    double ov = dur > 0 ? (double)overlap_ns(e, k->device, k->start, k->end, tmp, names) / dur
                        : 0;
    double fac = ag_comm_bus_factor(op, dc.ranks);
    double alg = decl && dur > 0 ? (double)dc.bytes / dur : 0; /* bytes per ns = GB/s */
    json_t *o = json_pack(
        "{s:s,s:s,s:i,s:I,s:I,s:f,s:f,s:o,s:o,s:i,s:o,s:o,s:o,s:o,s:f,s:o,s:o}", "op",
        ag_comm_op_name(op), "kernel", k->name, "device", k->device, "stream",
        (json_int_t)k->stream, "corr", (json_int_t)k->corr, "start_ns", ag_sys_ev_gt(e, k->start),
        "duration_ns", dur, "launch_overhead_ns",
        num_or_null(call != NULL, call ? (double)(k->start - call->start) : 0), "api",
        call ? json_string(call->api) : json_null(), "sms", sms, "bytes",
        decl ? json_integer((json_int_t)dc.bytes) : json_null(), "ranks",
        decl ? json_integer(dc.ranks) : json_null(), "algbw_GBps", num_or_null(decl != NULL, alg),
        "busbw_GBps", num_or_null(decl && fac > 0, alg * fac), "overlap", ov, "overlapped_by",
        names, "nvtx", nccl && nccl->name ? json_string(nccl->name) : json_null());
    if (!o || json_array_append_new(list, o))
      goto out;
    grp *gr = group_of(g, &ngrp, op, decl ? dc.bytes : 0, sms);
    gr->count++, gr->sum += dur, gr->overlap += ov;
    gr->min = fmin(gr->min, dur), gr->max = fmax(gr->max, dur);
    gr->ranks = decl ? dc.ranks : gr->ranks;
    if (call)
      gr->nlaunch++, gr->launch += (double)(k->start - call->start);
  }
  for (int i = 0; i < ngrp; i++) {
    const grp *x = &g[i];
    double mean = x->sum / x->count, fac = ag_comm_bus_factor(x->op, x->ranks);
    double alg = x->bytes && mean > 0 ? (double)x->bytes / mean : 0;
    json_t *o = json_pack(
        "{s:s,s:o,s:i,s:o,s:i,s:{s:f,s:f,s:f,s:f},s:o,s:o,s:o,s:f}", "op",
        ag_comm_op_name(x->op), "bytes", x->bytes ? json_integer((json_int_t)x->bytes) : json_null(),
        "sms", x->sms, "ranks", x->ranks ? json_integer(x->ranks) : json_null(), "count",
        x->count, "duration_ns", "mean", mean, "min", x->min, "max", x->max, "total", x->sum,
        "launch_overhead_ns", num_or_null(x->nlaunch > 0, x->nlaunch ? x->launch / x->nlaunch : 0),
        "algbw_GBps", num_or_null(x->bytes > 0, alg), "busbw_GBps",
        num_or_null(x->bytes > 0 && fac > 0, alg * fac), "overlap", x->overlap / x->count);
    if (!o || json_array_append_new(groups, o))
      goto out;
  }
  *out = json_pack("{s:s,s:O,s:O,s:i,s:b,s:s}", "signal", "comm", "ops", list, "groups", groups,
                   "compute_kernels", compute, "api_kind", calls > 0, "rules", rules);
  rc = *out ? 0 : AG_ENOMEM;
out:
  json_decref(list);
  json_decref(groups);
  ag_free(g);
  ag_free(tmp);
  return rc;
}

/* ------------------------------------------------------- the synthesis */

static int value(json_t *vals, const char *region, const char *stat, json_t *v,
                 const char *unit, const char *qual) {
  return ag_sys_value(vals, "comm", region, stat, v, unit, qual);
}

static json_t *field(const json_t *o, const char *k) { return ag_sys_field(o, k); }

/* "(comm all_gather bytes=N sms=S)": a group's region name. */
static void group_name(const json_t *x, char *buf, size_t n) {
  json_t *b = json_object_get(x, "bytes");
  char bs[32] = "undeclared";
  if (json_is_integer(b))
    snprintf(bs, sizeof bs, "%lld", (long long)json_integer_value(b));
  snprintf(buf, n, "(comm %s bytes=%s sms=%lld)", json_string_value(json_object_get(x, "op")),
           bs, (long long)json_integer_value(json_object_get(x, "sms")));
}

int ag_comm_synth(const ag_sys_ev *e, ag_diags *d, json_t **out) {
  *out = NULL;
  json_t *sig = NULL;
  int rc = ag_comm_signal(e, d, &sig);
  if (rc)
    return rc;
  json_t *o = json_pack("{s:[],s:O,s:[],s:[]}", "values", "comm", sig, "warnings", "missing");
  json_decref(sig);
  if (!o)
    return AG_ENOMEM;
  sig = json_object_get(o, "comm");
  json_t *vals = json_object_get(o, "values"), *x;
  json_t *warn = json_object_get(o, "warnings"), *miss = json_object_get(o, "missing");
  json_t *gs = json_object_get(sig, "groups");
  int bad = 0, undeclared = 0;
  size_t i;
  char name[160];
  json_array_foreach(gs, i, x) {
    group_name(x, name, sizeof name);
    json_t *dur = json_object_get(x, "duration_ns");
    bad |= value(vals, name, "count", field(x, "count"), "count", "observed");
    bad |= value(vals, name, "mean", field(dur, "mean"), "ns", "observed");
    bad |= value(vals, name, "min", field(dur, "min"), "ns", "observed");
    bad |= value(vals, name, "max", field(dur, "max"), "ns", "observed");
    bad |= value(vals, name, "launch_overhead_ns", field(x, "launch_overhead_ns"), "ns",
                 "observed");
    bad |= value(vals, name, "sms", field(x, "sms"), "count", "observed");
    bad |= value(vals, name, "bytes", field(x, "bytes"), "bytes", "derived");
    bad |= value(vals, name, "algbw_GBps", field(x, "algbw_GBps"), "GB/s", "derived");
    bad |= value(vals, name, "busbw_GBps", field(x, "busbw_GBps"), "GB/s", "derived");
    bad |= value(vals, name, "overlap", field(x, "overlap"), "fraction", "derived");
    undeclared |= json_is_null(json_object_get(x, "bytes"));
  }
  bad |= value(vals, "(comm)", "compute_kernels", field(sig, "compute_kernels"), "count",
               "observed");
  if (!json_array_size(gs))
    bad |= json_array_append_new(miss, json_pack("{s:s,s:s}", "what", "comm", "why",
                                                 "the run launched no NCCL kernel "
                                                 "(ncclDevKernel_* / ncclKernel_*)"));
  if (json_array_size(gs) && !json_is_true(json_object_get(sig, "api_kind")))
    bad |= json_array_append_new(warn, json_string(
                                           "the evidence has no launch calls (activity kind "
                                           "'api' off): launch overheads are null"));
  if (undeclared)
    bad |= json_array_append_new(warn, json_string(
                                           "NCCL kernels without an 'argus.comm bytes=N "
                                           "ranks=R' NVTX range around their launch: their bytes "
                                           "and bandwidths are null (docs/comm.md)"));
  if (bad) {
    json_decref(o);
    return AG_ENOMEM;
  }
  *out = o;
  return 0;
}

/* o[k], else NaN */
static double num(const json_t *o, const char *k) { return ag_json_num(o, k, NAN); }

/* A number right-aligned in `w` columns, "-" when null (NaN). */
static void cell(ag_str *out, int w, int prec, double v) {
  if (isnan(v))
    ag_str_printf(out, " %*s", w, "-");
  else
    ag_str_printf(out, " %*.*f", w, prec, v);
}

int ag_comm_text(const json_t *sig, ag_str *out) {
  json_t *gs = json_object_get(sig, "groups"), *x;
  size_t i;
  ag_str_printf(out, "comm: %zu NCCL kernel%s in %zu group%s, %d compute kernel%s%s\n",
                json_array_size(json_object_get(sig, "ops")),
                json_array_size(json_object_get(sig, "ops")) == 1 ? "" : "s",
                json_array_size(gs), json_array_size(gs) == 1 ? "" : "s",
                (int)num(sig, "compute_kernels"), num(sig, "compute_kernels") == 1 ? "" : "s",
                json_is_true(json_object_get(sig, "api_kind")) ? "" : " (no launch calls)");
  if (json_array_size(gs))
    ag_str_puts(out, "  op              bytes  ranks  sms  count   mean_us  launch_us  "
                     "algbw_GB/s  busbw_GB/s  overlap\n");
  json_array_foreach(gs, i, x) {
    json_t *b = json_object_get(x, "bytes");
    double l = num(x, "launch_overhead_ns"), al = num(x, "algbw_GBps"), bu = num(x, "busbw_GBps");
    ag_str_printf(out, "  %-14s %11lld %6d %4d %6d %9.3f", json_string_value(json_object_get(x, "op")),
                  json_is_integer(b) ? (long long)json_integer_value(b) : -1LL,
                  isnan(num(x, "ranks")) ? 0 : (int)num(x, "ranks"), (int)num(x, "sms"),
                  (int)num(x, "count"), num(json_object_get(x, "duration_ns"), "mean") / 1e3);
    cell(out, 10, 3, l / 1e3);
    cell(out, 11, 2, al);
    cell(out, 11, 2, bu);
    ag_str_printf(out, "  %6.1f%%\n", 100 * num(x, "overlap"));
  }
  return out->oom ? AG_ENOMEM : 0;
}
