/*
 * evidence.c — region evidence for the evidence policy of `argus optimize`
 * (docs/optimize.md, "Region evidence"): a candidate's lowered kernel is
 * observed (`argus observe` on a tile spec naming it, at the task's timing
 * sizes, the `duration` signal of every region the lowering emits), and the
 * report becomes the evidence the policy reads: per region its total time
 * and its share of the kernel's. KB entries' evidence preconditions are
 * tested against it here.
 *
 * One observation per valid trial (seconds on a GPU: a build, a plain
 * launch and the traced variant); without a GPU there is none, and the
 * caller says why.
 */
#include "argus/agent.h"
#include "argus/collect.h"
#include "argus/observe.h"
#include "argus/synth.h"
#include "argus/tile_run.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ----------------------------------------------------- report -> evidence */

/* Region path's object in regions, made when absent (NULL: no memory). */
static json_t *region_of(json_t *regions, const char *path) {
  json_t *r = json_object_get(regions, path);
  if (!r && (r = json_object()) && json_object_set_new(regions, path, r))
    r = NULL;
  return r;
}

/* o[sub][key] = val (sub NULL: o[key]); AG_ENOMEM when it cannot. */
static int sub_set(json_t *o, const char *sub, const char *key, json_t *val) {
  if (sub) {
    json_t *s = json_object_get(o, sub);
    if (!s && (!(s = json_object()) || json_object_set_new(o, sub, s)))
      return AG_ENOMEM;
    o = s;
  }
  return json_object_set(o, key, val) ? AG_ENOMEM : 0;
}

int ag_opt_evidence_from_report(const json_t *report, const char *kernel, const char *sizes,
                                json_t **out, char *why, size_t whylen) {
  *out = NULL;
  size_t kl = strlen(kernel), i;
  json_t *v, *regions = json_object(), *stat_o = json_object();
  double root = -1, conflicts = 0, wavefronts = 0;
  int hw = 0;
  if (!regions || !stat_o)
    goto oom;
  json_array_foreach(json_object_get(report, "values"), i, v) {
    const char *reg = json_string_value(json_object_get(v, "region"));
    const char *sig = json_string_value(json_object_get(v, "signal"));
    const char *stat = json_string_value(json_object_get(v, "stat"));
    json_t *val = json_object_get(v, "value");
    if (!reg || !sig || !stat || !json_is_number(val))
      continue;
    if (!strcmp(sig, "hw_counters")) { /* per launch: "(launch N KERNEL)", summed */
      const char *k = !strncmp(reg, "(launch ", 8) ? strchr(reg + 8, ' ') : NULL;
      if (!k || strncmp(k + 1, kernel, kl) || strcmp(k + 1 + kl, ")"))
        continue;
      if (!strcmp(stat, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"))
        conflicts += json_number_value(val), hw |= 1;
      else if (!strcmp(stat, "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"))
        wavefronts += json_number_value(val), hw |= 2;
      continue;
    }
    if (strncmp(reg, kernel, kl) || (reg[kl] && reg[kl] != '/'))
      continue; /* another kernel's region */
    if (!strcmp(sig, "static") && !reg[kl]) { /* the compiler's report of the kernel */
      if (sub_set(stat_o, NULL, stat, val))
        goto oom;
      continue;
    }
    if (!strcmp(sig, "inst_mix") && reg[kl] && strcmp(stat, "total")) {
      json_t *r = region_of(regions, reg + kl + 1);
      if (!r || sub_set(r, "inst_mix", stat, val))
        goto oom;
      continue;
    }
    if (strcmp(sig, "duration"))
      continue;
    if (!reg[kl]) {
      if (!strcmp(stat, "total"))
        root = json_number_value(val);
      continue;
    }
    if (strcmp(stat, "total") && strcmp(stat, "count"))
      continue;
    json_t *r = region_of(regions, reg + kl + 1);
    if (!r)
      goto oom;
    json_object_set(r, !strcmp(stat, "total") ? "total_ns" : "count", val);
  }
  const char *key;
  json_t *r;
  const char *denom = "kernel";
  if (root <= 0) { /* no duration of the kernel itself: its top-level regions' */
    double sum = 0;
    json_object_foreach(regions, key, r) {
      if (!strchr(key, '/'))
        sum += json_number_value(json_object_get(r, "total_ns"));
    }
    if (sum > 0) {
      root = sum;
      denom = "top-level regions";
    }
  }
  if (root <= 0) {
    json_decref(regions);
    json_decref(stat_o);
    const char *miss = NULL;
    json_array_foreach(json_object_get(report, "missing"), i, v) {
      const char *w = json_string_value(json_object_get(v, "why"));
      if (w && !miss)
        miss = w;
    }
    snprintf(why, whylen, "the report has no duration of kernel '%s'%s%s", kernel,
             miss ? ": " : "", miss ? miss : "");
    return AG_ENOTFOUND;
  }
  int mix = 0;
  json_object_foreach(regions, key, r) {
    json_t *tot = json_object_get(r, "total_ns");
    json_object_set_new(r, "share", json_real(tot ? json_number_value(tot) / root : 0));
    mix |= json_object_get(r, "inst_mix") != NULL;
  }
  /* the signals observed: duration, and those the report has values of */
  json_t *sigs = json_pack("[s]", "duration");
  if (!sigs)
    goto oom;
  if (mix)
    json_array_append_new(sigs, json_string("inst_mix"));
  if (json_object_size(stat_o))
    json_array_append_new(sigs, json_string("static"));
  if (hw == 3) /* both counters of every launch: the kernel's shared-memory wavefronts */
    json_array_append_new(sigs, json_string("hw_counters"));
  *out = json_pack("{s:s, s:s, s:o, s:f, s:s, s:o}", "kernel", kernel, "sizes",
                   sizes ? sizes : "", "signals", sigs, "total_ns", root, "share_of", denom,
                   "regions", regions);
  regions = NULL;
  if (*out && json_object_size(stat_o))
    json_object_set(*out, "static", stat_o);
  if (*out && hw == 3 &&
      json_object_set_new(*out, "hw_counters",
                          json_pack("{s:f, s:f}", "bank_conflicts", conflicts,
                                    "shared_wavefronts", wavefronts)))
    goto oom_out;
  json_decref(stat_o);
  return *out ? 0 : AG_ENOMEM;
oom_out:
  json_decref(*out);
  *out = NULL;
  json_decref(stat_o);
  return AG_ENOMEM;
oom:
  json_decref(regions);
  json_decref(stat_o);
  return AG_ENOMEM;
}

/* ------------------------------------------------------------- metrics */

/* The metrics evidence preconditions and gains read (docs/optimize.md,
 * "Evidence preconditions"): signal, metric, whether it is of a region,
 * whether it lies in 0..1. */
static const struct {
  const char *signal, *metric;
  int region, unit;
} metrics[] = {
    {"duration", "share", 1, 1},        /* the region's share of the kernel's time */
    {"inst_mix", "loads_per_mma", 1, 0}, /* load instructions per tensor instruction */
    {"inst_mix", "load_share", 1, 1},    /* loads / (loads + tensor) */
    {"inst_mix", "shared_share", 1, 1},  /* shared-memory loads / (loads + tensor) */
    {"static", "occupancy", 0, 1},       /* resident warps / 64, from registers and smem */
    {"static", "registers", 0, 0},       /* per thread, the compiler's */
    /* shared-memory bank conflicts / shared-memory wavefronts of the kernel (CUPTI) */
    {"hw_counters", "bank_conflict_share", 0, 1},
};

int ag_opt_metric_known(const char *signal, const char *metric, int *region, int *unit) {
  for (size_t i = 0; i < sizeof metrics / sizeof metrics[0]; i++)
    if (!strcmp(metrics[i].signal, signal) && (!metric || !strcmp(metrics[i].metric, metric))) {
      if (region)
        *region = metrics[i].region;
      if (unit)
        *unit = metrics[i].unit;
      return 1;
    }
  return 0;
}

void ag_opt_metric_list(int with_metrics, char *buf, size_t cap) {
  size_t n = 0, N = sizeof metrics / sizeof metrics[0];
  buf[0] = 0;
  for (size_t i = 0; i < N && n < cap; i++) {
    int first = !i || strcmp(metrics[i - 1].signal, metrics[i].signal);
    const char *sep = !i ? "" : first ? (with_metrics ? "; " : ", ") : ", ";
    int w = 0;
    if (first)
      w = snprintf(buf + n, cap - n, "%s%s%s%s", sep, metrics[i].signal,
                   with_metrics ? ": " : "", with_metrics ? metrics[i].metric : "");
    else if (with_metrics)
      w = snprintf(buf + n, cap - n, "%s%s", sep, metrics[i].metric);
    n += w > 0 ? (size_t)w : 0;
  }
}

static int observed(const json_t *ev, const char *signal) {
  size_t k;
  json_t *s;
  json_array_foreach(json_object_get(ev, "signals"), k, s) {
    if (json_is_string(s) && !strcmp(json_string_value(s), signal))
      return 1;
  }
  return 0;
}

static double mix_of(const json_t *mix, const char *cls) {
  return json_number_value(json_object_get(mix, cls));
}

int ag_opt_evidence_metric(const json_t *ev, const char *region, const char *signal,
                           const char *metric, double *v) {
  *v = 0;
  if (!ev || !observed(ev, signal))
    return 0;
  json_t *r = region ? json_object_get(json_object_get(ev, "regions"), region) : NULL;
  if (!strcmp(signal, "duration")) {
    *v = r ? json_number_value(json_object_get(r, "share")) : 0; /* absent: no time */
    return 1;
  }
  if (!strcmp(signal, "static")) {
    json_t *x = json_object_get(json_object_get(ev, "static"), metric);
    *v = json_number_value(x);
    return json_is_number(x);
  }
  if (!strcmp(signal, "hw_counters")) {
    json_t *h = json_object_get(ev, "hw_counters");
    double w = json_number_value(json_object_get(h, "shared_wavefronts"));
    *v = w > 0 ? json_number_value(json_object_get(h, "bank_conflicts")) / w : 0;
    return w > 0;
  }
  /* inst_mix: the region's load and tensor warp instructions */
  json_t *mix = json_object_get(r, "inst_mix");
  double shared = mix_of(mix, "mem_shared");
  double loads = mix_of(mix, "mem_global") + shared + mix_of(mix, "ldgsts") + mix_of(mix, "tma");
  double tensor = mix_of(mix, "tensor");
  if (!strcmp(metric, "loads_per_mma")) {
    *v = tensor > 0 ? loads / tensor : 0;
    return tensor > 0;
  }
  *v = loads + tensor > 0 ? (!strcmp(metric, "load_share") ? loads : shared) / (loads + tensor)
                          : 0;
  return loads + tensor > 0;
}

int ag_opt_evidence_occupancy(json_t *ev, unsigned threads, unsigned dynamic_smem) {
  json_t *st = json_object_get(ev, "static");
  json_t *regs = json_object_get(st, "registers");
  if (!json_is_integer(regs))
    return AG_ENOTFOUND;
  ag_occupancy_result o;
  int rc = ag_occupancy(NULL, (int)json_integer_value(regs), threads,
                        (unsigned)json_integer_value(json_object_get(st, "shared_memory_static")),
                        dynamic_smem, &o);
  if (rc)
    return rc;
  json_object_set_new(st, "threads", json_integer(threads));
  json_object_set_new(st, "shared_memory_dynamic", json_integer(dynamic_smem));
  json_object_set_new(st, "ctas_per_sm", json_integer(o.ctas));
  json_object_set_new(st, "occupancy_limit", json_string(o.limit ? o.limit : ""));
  return json_object_set_new(st, "occupancy", json_real(o.occupancy)) ? AG_ENOMEM : 0;
}

/* --------------------------------------------------------- preconditions */

/* A precondition's or a gain factor's metric: the old duration form
 * {"share_gt"/"share_lt"} reads "share". */
static const char *metric_of(const json_t *c) {
  const char *m = json_string_value(json_object_get(c, "metric"));
  return m ? m : "share";
}

int ag_kb_evidence_holds(const ag_kb_entry *e, const json_t *evidence, ag_str *why) {
  json_t *pre = json_object_get(json_object_get(e->j, "precondition"), "evidence");
  size_t i;
  json_t *c;
  int unknown = 0;
  if (!evidence)
    return json_array_size(pre) ? -1 : 1;
  json_array_foreach(pre, i, c) {
    const char *reg = json_string_value(json_object_get(c, "region"));
    const char *sig = json_string_value(json_object_get(c, "signal"));
    const char *met = metric_of(c);
    json_t *gt = json_object_get(c, "share_gt"), *lt = json_object_get(c, "share_lt");
    if (!gt && !lt) {
      gt = json_object_get(c, "gt");
      lt = json_object_get(c, "lt");
    }
    double x;
    if (!ag_opt_evidence_metric(evidence, reg, sig, met, &x)) {
      unknown = 1; /* not observed (or not defined: no tensor instruction) */
      continue;
    }
    double th = json_number_value(gt ? gt : lt);
    if (gt ? !(x > th) : !(x < th)) {
      if (why)
        ag_str_printf(why, "%s%s%s %s %.3f is not %s %g", reg ? reg : "", reg ? "'s " : "the kernel's ",
                      sig, met, x, gt ? ">" : "<", th);
      return 0;
    }
  }
  return unknown ? -1 : 1;
}

double ag_opt_evidence_share(const json_t *evidence, const char *region) {
  json_t *r = json_object_get(json_object_get(evidence, "regions"), region);
  return r ? json_number_value(json_object_get(r, "share")) : 0;
}

/* ----------------------------------------------------------------- gain */

/* Output tile a x b per block loads (a + b) rows per k step for 2ab
 * FLOPs: intensity a b / (a + b). */
static double intensity(double a, double b) {
  return a + b > 0 ? a * b / (a + b) : 0;
}

/* The factor {"intensity": [A, B]} of entry e on src: the part of the
 * loads per FLOP that growing A to the entry's next value removes. */
static double intensity_factor(const ag_kb_entry *e, const json_t *f, const char *src) {
  json_t *names = json_object_get(f, "intensity");
  int64_t a, b, next = 0;
  if (!src || ag_tile_src_const(src, json_string_value(json_array_get(names, 0)), &a) ||
      ag_tile_src_const(src, json_string_value(json_array_get(names, 1)), &b))
    return 0;
  size_t i;
  json_t *v;
  json_array_foreach(ag_kb_values(e), i, v) {
    int64_t x = (int64_t)json_integer_value(v);
    if (x > a && (!next || x < next))
      next = x;
  }
  double in = intensity((double)next, (double)b);
  return next && in > 0 ? 1 - intensity((double)a, (double)b) / in : 0;
}

double ag_kb_gain(const ag_kb_entry *e, const json_t *ev, const char *src, ag_str *how) {
  const char *tg = json_string_value(json_object_get(e->j, "targets"));
  double g = ag_opt_evidence_share(ev, tg);
  if (how)
    ag_str_printf(how, "%s %.3f", tg, g);
  size_t i;
  json_t *f;
  json_array_foreach(json_object_get(e->j, "gain"), i, f) {
    double x;
    if (json_object_get(f, "intensity")) {
      x = intensity_factor(e, f, src);
      if (how)
        ag_str_printf(how, " x intensity(%s) %.3f",
                      json_string_value(json_array_get(json_object_get(f, "intensity"), 0)), x);
    } else if (json_object_get(f, "scale")) {
      x = json_number_value(json_object_get(f, "scale"));
      if (how)
        ag_str_printf(how, " x %.3g", x);
    } else {
      const char *met = metric_of(f), *reg = json_string_value(json_object_get(f, "region"));
      int cpl = json_is_true(json_object_get(f, "complement"));
      if (!ag_opt_evidence_metric(ev, reg, json_string_value(json_object_get(f, "signal")), met,
                                  &x)) {
        json_t *un = json_object_get(f, "unobserved"); /* not observed: its stand-in, */
        if (!un) {                                      /* else no factor */
          if (how)
            ag_str_printf(how, " x %s ?", met);
          continue;
        }
        g *= json_number_value(un);
        if (how)
          ag_str_printf(how, " x %s ? %.3g", met, json_number_value(un));
        continue;
      }
      x = x < 0 ? 0 : x > 1 ? 1 : x;
      if (cpl)
        x = 1 - x;
      if (how)
        ag_str_printf(how, " x %s%s %.3f", cpl ? "1-" : "", met, x);
    }
    g *= x;
  }
  if (how)
    ag_str_printf(how, " = %.3f", g);
  return g;
}

/* ------------------------------------------------------ the observation */

/* "M=64,N=64" as {"M": 64, "N": 64}. */
static json_t *sizes_object(const char *sizes) {
  json_t *o = json_object();
  const char *p = sizes;
  while (o && p && *p) {
    const char *eq = strchr(p, '='), *comma = strchr(p, ',');
    if (!eq || (comma && comma < eq))
      break;
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)(eq - p), p);
    json_object_set_new(o, name, json_integer((json_int_t)strtoll(eq + 1, NULL, 10)));
    p = comma ? comma + 1 : NULL;
  }
  return o;
}

/* The first kernel's name of src at sizes (a lowering without markers). */
static int kernel_name(const char *src, const char *sizes, char *name, size_t cap,
                       unsigned *threads, unsigned *smem, ag_diags *d) {
  ag_tile_program *p = NULL;
  ag_tile_run_sizes sz;
  ag_tile_lowered *low = NULL;
  memset(&sz, 0, sizeof sz);
  int rc = ag_tile_parse(src, strlen(src), "candidate.tile", d, &p);
  if (!rc)
    rc = ag_tile_run_sizes_parse(p, NULL, sizes, d, &sz);
  ag_tile_lower_opts lo = {NULL, (const char *const *)sz.defines, sz.ndefines, 1};
  if (!rc)
    rc = ag_tile_lower(p, &lo, d, &low);
  if (!rc) {
    const ag_tile_lkernel *k = &low->kernels[0];
    snprintf(name, cap, "%s", k->name);
    *threads = (unsigned)(k->block[0] * k->block[1] * k->block[2]);
    *smem = (unsigned)k->smem_bytes;
  }
  ag_tile_lowered_free(low);
  ag_tile_run_sizes_release(&sz);
  ag_tile_program_free(p);
  return rc;
}

int ag_opt_evidence_observe(const ag_opt_task *t, const ag_opt_opts *o, const char *src,
                            const char *workdir, json_t **out, char *why, size_t whylen) {
  *out = NULL;
  const char *sizes = t->time_sizes ? t->time_sizes : t->sizes;
  if (o->device == AG_OPT_DEVICE_CPU) {
    snprintf(why, whylen, "the CPU was asked for (--cpu): nothing is observed");
    return AG_ENODEV;
  }
  ag_str gw = AG_STR_INIT;
  if (ag_collect_gpu_probe(&gw)) {
    snprintf(why, whylen, "no GPU (%s): nothing is observed on the CPU", ag_str_cstr(&gw));
    ag_str_release(&gw);
    return AG_ENODEV;
  }
  ag_str_release(&gw);
  char kernel[128], dir[4096], path[4200], ws[4200];
  ag_diags d;
  ag_diags_init(&d);
  json_t *spec = NULL;
  char *text = NULL;
  unsigned threads = 0, smem = 0;
  int rc = kernel_name(src, sizes, kernel, sizeof kernel, &threads, &smem, &d);
  dir[0] = 0;
  if (rc) {
    ag_str s = AG_STR_INIT;
    ag_diags_format(&d, &s);
    snprintf(why, whylen, "the candidate does not lower at %s: %s", sizes, ag_str_cstr(&s));
    ag_str_release(&s);
    goto out;
  }
  snprintf(dir, sizeof dir, "%s/optimize-evidence-XXXXXX", workdir);
  if ((rc = ag_mkdir_p(workdir, 0755)) || !mkdtemp(dir)) {
    snprintf(why, whylen, "cannot make a directory under '%s'", workdir);
    dir[0] = 0;
    rc = AG_EIO;
    goto out;
  }
  spec = json_pack("{s:s, s:s, s:o, s:b}", "tile", "candidate.tile", "kernel", kernel, "size",
                   sizes_object(sizes), "unchecked", 1);
  if (!spec || !(text = ag_json_canonical(spec))) {
    rc = AG_ENOMEM;
    goto out;
  }
  static const char *const names[] = {"candidate.tile", "spec.json"};
  for (int i = 0; i < 2; i++) {
    const char *body = i ? text : src;
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    if ((rc = ag_file_write_atomic(path, body, strlen(body)))) {
      snprintf(why, whylen, "cannot write '%s'", path);
      goto out;
    }
  }
  /* one observation workspace for the run (its build and PTX caches) */
  snprintf(ws, sizeof ws, "%s/optimize-observe", workdir);
  /* the signals the policy asks for (the KB's; duration always) */
  const char *sigs[8];
  char list[256];
  int ns = 0;
  snprintf(list, sizeof list, "%s", o->evidence_signals ? o->evidence_signals : "duration");
  for (char *p = list, *q; p && *p && ns < 8; p = q) {
    if ((q = strchr(p, ',')))
      *q++ = 0;
    sigs[ns++] = p;
  }
  ag_observe_opts oo;
  memset(&oo, 0, sizeof oo);
  oo.spec = path;
  oo.workspace = ws;
  oo.region = kernel;
  oo.signals = sigs;
  oo.nsignals = ns;
  oo.ndevices = -1;
  oo.timeout_s = 300;
  ag_observe_result r;
  memset(&r, 0, sizeof r);
  rc = ag_observe(&oo, &d, &r);
  if (rc) {
    ag_str s = AG_STR_INIT;
    ag_diags_format(&d, &s);
    snprintf(why, whylen, "argus observe failed: %s", s.len ? ag_str_cstr(&s) : ag_strerror(rc));
    ag_str_release(&s);
  } else if (r.nogpu_reason[0]) {
    snprintf(why, whylen, "no GPU (%s): nothing is observed", r.nogpu_reason);
    rc = AG_ENODEV;
  } else {
    rc = ag_opt_evidence_from_report(r.report, kernel, sizes, out, why, whylen);
    if (!rc) {
      json_object_set_new(*out, "report", json_string(r.report_hash));
      if (threads)
        ag_opt_evidence_occupancy(*out, threads, smem); /* none without registers */
    }
  }
  ag_observe_result_release(&r);
out:
  if (dir[0]) {
    snprintf(path, sizeof path, "%s/candidate.tile", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/spec.json", dir);
    unlink(path);
    rmdir(dir);
  }
  ag_free(text);
  json_decref(spec);
  ag_diags_release(&d);
  return rc;
}
