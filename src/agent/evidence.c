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
#include "argus/tile_run.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ----------------------------------------------------- report -> evidence */

int ag_opt_evidence_from_report(const json_t *report, const char *kernel, const char *sizes,
                                json_t **out, char *why, size_t whylen) {
  *out = NULL;
  size_t kl = strlen(kernel), i;
  json_t *v, *regions = json_object();
  double root = -1;
  if (!regions)
    return AG_ENOMEM;
  json_array_foreach(json_object_get(report, "values"), i, v) {
    const char *reg = json_string_value(json_object_get(v, "region"));
    const char *sig = json_string_value(json_object_get(v, "signal"));
    const char *stat = json_string_value(json_object_get(v, "stat"));
    json_t *val = json_object_get(v, "value");
    if (!reg || !sig || !stat || strcmp(sig, "duration") || !json_is_number(val))
      continue;
    if (strncmp(reg, kernel, kl) || (reg[kl] && reg[kl] != '/'))
      continue; /* another kernel's region */
    if (!reg[kl]) {
      if (!strcmp(stat, "total"))
        root = json_number_value(val);
      continue;
    }
    if (strcmp(stat, "total") && strcmp(stat, "count"))
      continue;
    json_t *r = json_object_get(regions, reg + kl + 1);
    if (!r) {
      r = json_object();
      if (!r || json_object_set_new(regions, reg + kl + 1, r)) {
        json_decref(regions);
        return AG_ENOMEM;
      }
    }
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
  json_object_foreach(regions, key, r) {
    json_t *tot = json_object_get(r, "total_ns");
    json_object_set_new(r, "share", json_real(tot ? json_number_value(tot) / root : 0));
  }
  *out = json_pack("{s:s, s:s, s:[s], s:f, s:s, s:o}", "kernel", kernel, "sizes",
                   sizes ? sizes : "", "signals", "duration", "total_ns", root, "share_of", denom,
                   "regions", regions);
  return *out ? 0 : AG_ENOMEM;
}

/* --------------------------------------------------------- preconditions */

int ag_kb_evidence_holds(const ag_kb_entry *e, const json_t *evidence, ag_str *why) {
  json_t *pre = json_object_get(json_object_get(e->j, "precondition"), "evidence");
  size_t i;
  json_t *c;
  int unknown = 0;
  if (!evidence)
    return json_array_size(pre) ? -1 : 1;
  json_t *regions = json_object_get(evidence, "regions");
  json_array_foreach(pre, i, c) {
    const char *reg = json_string_value(json_object_get(c, "region"));
    const char *sig = json_string_value(json_object_get(c, "signal"));
    json_t *gt = json_object_get(c, "share_gt"), *lt = json_object_get(c, "share_lt");
    json_t *r = json_object_get(regions, reg);
    int observed = 0;
    size_t k;
    json_t *s;
    json_array_foreach(json_object_get(evidence, "signals"), k, s) observed |=
        json_is_string(s) && !strcmp(json_string_value(s), sig);
    if (!observed) {
      unknown = 1;
      continue;
    }
    /* a region the kernel does not have takes no time */
    double share = r ? json_number_value(json_object_get(r, "share")) : 0;
    double th = json_number_value(gt ? gt : lt);
    if (gt ? !(share > th) : !(share < th)) {
      if (why)
        ag_str_printf(why, "%s's %s share %.3f is not %s %g", reg, sig, share, gt ? ">" : "<",
                      th);
      return 0;
    }
  }
  return unknown ? -1 : 1;
}

double ag_opt_evidence_share(const json_t *evidence, const char *region) {
  json_t *r = json_object_get(json_object_get(evidence, "regions"), region);
  return r ? json_number_value(json_object_get(r, "share")) : 0;
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
static int kernel_name(const char *src, const char *sizes, char *name, size_t cap, ag_diags *d) {
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
  if (!rc)
    snprintf(name, cap, "%s", low->kernels[0].name);
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
  int rc = kernel_name(src, sizes, kernel, sizeof kernel, &d);
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
  const char *sigs[] = {"duration"};
  ag_observe_opts oo;
  memset(&oo, 0, sizeof oo);
  oo.spec = path;
  oo.workspace = ws;
  oo.region = kernel;
  oo.signals = sigs;
  oo.nsignals = 1;
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
    if (!rc)
      json_object_set_new(*out, "report", json_string(r.report_hash));
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
