/*
 * observe.c — the executors of `argus observe` and the glue that binds a
 * query to a program version in the workspace. Each executor reads its
 * inputs as artifacts (by content hash) from the workspace, does one step —
 * discover, make a variant, compile it, run the harness, synthesize a signal,
 * join the report — and publishes its outputs as artifacts; a task's outputs
 * are {name: artifact hash} only, which is what makes memoization through the
 * workspace exact. Called once per task: the cost is the step itself.
 */
#include "argus/observe.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "argus/collect.h"
#include "argus/ptx.h"
#include "argus/report.h"
#include "argus/report_trace.h"
#include "argus/spec.h"
#include "argus/store.h"
#include "argus/synth.h"
#include "argus/variant.h"

typedef struct obs {
  ag_store *st;
  ag_spec *spec;
  const ag_observe_opts *o;
  ag_query query;
  char ptx_hash[65];
  char program[80];
  int64_t root_version;
  int64_t query_id;
  char *rundir; /* <workspace>/runs */
  ag_plan *plan;
  /* multi-variant GPU workers, one per device lane (spec "run_library"),
   * or NULL: a harness process per collection */
  ag_worker **workers;
  int nworkers;
} obs;

/* ------------------------------------------------------------ helpers */

static int fail(ag_task *t, int rc, const char *fmt, ...) AG_PRINTF(3, 4);
static int fail(ag_task *t, int rc, const char *fmt, ...) {
  ag_str e = AG_STR_INIT;
  va_list ap;
  va_start(ap, fmt);
  ag_str_vprintf(&e, fmt, ap);
  va_end(ap);
  ag_free(t->error);
  t->error = ag_str_detach(&e);
  return rc ? rc : AG_EINVAL;
}

static int fail_diags(ag_task *t, int rc, const char *what, const ag_diags *d) {
  ag_str s = AG_STR_INIT;
  ag_diags_format(d, &s);
  while (s.len && s.p[s.len - 1] == '\n')
    s.p[--s.len] = 0;
  int r = fail(t, rc, "%s%s%s", what, s.len ? ":\n" : "", ag_str_cstr(&s));
  ag_str_release(&s);
  return r;
}

static int put(obs *ob, ag_task *t, const char *name, const void *data, size_t len,
               const char *kind) {
  char hash[65];
  ag_put_opts po = {kind, 0};
  int rc = ag_store_put(ob->st, data, len, &po, hash);
  if (rc)
    return fail(t, rc, "cannot store %s: %s", name, ag_store_errmsg());
  if (!t->outputs)
    t->outputs = json_object();
  json_object_set_new(t->outputs, name, json_string(hash));
  return 0;
}

static int put_json(obs *ob, ag_task *t, const char *name, json_t *j, const char *kind) {
  char *s = json_dumps(j, JSON_INDENT(1) | JSON_SORT_KEYS);
  if (!s)
    return fail(t, AG_ENOMEM, "cannot serialize %s", name);
  int rc = put(ob, t, name, s, strlen(s), kind);
  free(s);
  return rc;
}

/* The artifact hash named `name` among t's dependencies' outputs. */
static const char *input(const ag_plan *p, const ag_task *t, const char *name) {
  for (size_t i = 0; i < t->deps.n; i++) {
    const ag_task *d = ag_plan_task(p, t->deps.v[i]);
    const char *h = d && d->outputs ? json_string_value(json_object_get(d->outputs, name)) : NULL;
    if (h)
      return h;
  }
  return NULL;
}

static int get(obs *ob, ag_task *t, const char *hash, const char *what, char **data,
               size_t *len) {
  void *p = NULL;
  *data = NULL; /* out-parameters set on failure too (and gcc -O3 sees it) */
  *len = 0;
  int rc = hash ? ag_store_get(ob->st, hash, &p, len) : AG_ENOTFOUND;
  if (rc)
    return fail(t, rc, "cannot read %s (%s) from the workspace: %s", what, hash ? hash : "none",
                hash ? ag_store_errmsg() : "no such input");
  *data = p;
  return 0;
}

static int get_json(obs *ob, ag_task *t, const char *hash, const char *what, json_t **out) {
  char *data;
  size_t len;
  int rc = get(ob, t, hash, what, &data, &len);
  if (rc)
    return rc;
  *out = json_loadb(data, len, 0, NULL);
  ag_free(data);
  return *out ? 0 : fail(t, AG_ECORRUPT, "%s (%s) is not JSON", what, hash);
}

/* Ancestors of t (t included), for provenance. */
static json_t *lineage(const ag_plan *p, const ag_task *t) {
  json_t *ids = json_array();
  int stack[256], n = 0;
  char *seen = ag_calloc(p->tasks.n + 1, 1);
  if (!seen)
    return ids;
  stack[n++] = t->id;
  while (n) {
    int id = stack[--n];
    if (seen[id])
      continue;
    seen[id] = 1;
    const ag_task *x = ag_plan_task(p, id);
    for (size_t i = 0; i < x->deps.n && n < 256; i++)
      stack[n++] = x->deps.v[i];
  }
  for (size_t i = 0; i < p->tasks.n; i++)
    if (seen[i])
      json_array_append_new(ids, json_integer((json_int_t)i));
  ag_free(seen);
  return ids;
}

/* ---------------------------------------------------------- executors */

/* Control: parse the program's PTX, validate the markers, find the queried
 * region (by qualified or local name) and list the regions and sites. */
static int ex_discover(ag_exec_ctx *cx, ag_task *t) {
  obs *ob = cx->ud;
  char *ptx;
  size_t len;
  int rc = get(ob, t, ob->ptx_hash, "the program's PTX", &ptx, &len);
  if (rc)
    return rc;
  ag_diags d;
  ag_diags_init(&d);
  ag_ptx_module *m = NULL;
  ag_ptx_regions *r = NULL;
  json_t *j = NULL;
  if ((rc = ag_ptx_parse(ptx, len, ob->spec->name, &d, &m)) || (rc = ag_ptx_discover(m, &d, &r))) {
    rc = fail_diags(t, rc, "discovery failed", &d);
    goto out;
  }
  j = ag_ptx_regions_to_json(m, r);
  /* the outputs are properties of the module alone (not of the query), so
   * every query on this program shares the variants built from them */
  int nsel = 0;
  ag_str known = AG_STR_INIT;
  for (int i = 0; i < r->nregions; i++) {
    const ag_ptx_region *g = &r->regions[i];
    if (!strcmp(g->qname, ob->query.region) || !strcmp(g->name, ob->query.region))
      nsel++;
    ag_str_printf(&known, "%s%s", i ? ", " : "", g->qname);
  }
  if (!nsel)
    rc = fail(t, AG_ENOTFOUND, "unknown region '%s' in %s (known: %s)", ob->query.region,
              ob->spec->name, ag_str_cstr(&known));
  ag_str_release(&known);
  if (!rc && !(rc = put(ob, t, "ptx", ptx, len, "ptx")))
    rc = put_json(ob, t, "regions", j, "json");
out:
  json_decref(j);
  ag_ptx_module_free(m);
  ag_diags_release(&d);
  ag_free(ptx);
  return rc;
}

/* Transform: the traced or trace-free variant, recorded as a program version
 * whose parent is the program. */
static int ex_variant(ag_exec_ctx *cx, ag_task *t) {
  obs *ob = cx->ud;
  const char *vk = json_string_value(json_object_get(t->config, "variant"));
  ag_variant_opts vo = {AG_VARIANT_TRACE_FREE, NULL, 0, 0};
  if (!vk || ag_variant_kind_parse(vk, &vo.kind))
    return fail(t, AG_EINVAL, "unknown variant kind '%s'", vk ? vk : "");
  char *ptx;
  size_t len;
  int rc = get(ob, t, input(cx->plan, t, "ptx"), "the program's PTX", &ptx, &len);
  if (rc)
    return rc;
  ag_diags d;
  ag_diags_init(&d);
  ag_variant *v = NULL;
  /* async_latency: timed waits in the reference, or one probe (docs/probes.md) */
  ag_variant_async va = {json_is_true(json_object_get(t->config, "waits")),
                         json_string_value(json_object_get(t->config, "op")),
                         (uint32_t)json_integer_value(json_object_get(t->config, "occurrence")),
                         0};
  if ((rc = ag_variant_make_ex(ptx, len, ob->spec->name, &vo, &va, &d, &v))) {
    rc = fail_diags(t, rc, "cannot make the variant", &d);
    goto out;
  }
  if ((rc = put(ob, t, "ptx", v->ptx, v->len, "ptx")) ||
      (rc = put_json(ob, t, "probes", v->probes, "json")))
    goto out;
  ag_version_spec vs = {ob->root_version,
                              json_string_value(json_object_get(t->outputs, "ptx")), vk,
                              v->transform, 0};
  int64_t vid = 0;
  if (vo.kind != AG_VARIANT_TRACE_FREE && ag_store_version_create(ob->st, &vs, &vid) == 0) {
    char buf[32];
    snprintf(buf, sizeof buf, "v%lld", (long long)vid);
    json_t *ver = json_pack("{s:s,s:s,s:i}", "version", buf, "parent", ob->program, "sites",
                            v->nsites);
    rc = put_json(ob, t, "variant", ver, "json");
    json_decref(ver);
  }
out:
  ag_variant_free(v);
  ag_diags_release(&d);
  ag_free(ptx);
  return rc;
}

/* Transform: PTX -> cubin through nvJitLink; the compiler's report becomes
 * the `resources` artifact (registers, spills, shared memory, stack). */
static int ex_compile(ag_exec_ctx *cx, ag_task *t) {
  obs *ob = cx->ud;
  char *ptx;
  size_t len;
  int rc = get(ob, t, input(cx->plan, t, "ptx"), "the variant's PTX", &ptx, &len);
  if (rc)
    return rc;
  ag_diags d;
  ag_diags_init(&d);
  ag_cubin *cb = NULL;
  if ((rc = ag_jit_compile(ptx, len, ob->spec->name, NULL, &d, &cb))) {
    rc = fail_diags(t, rc, "compilation failed", &d);
    goto out;
  }
  json_t *res = ag_cubin_to_json(cb);
  if (!(rc = put(ob, t, "cubin", cb->data, cb->len, "cubin")) &&
      !(rc = put(ob, t, "log", cb->info_log ? cb->info_log : "",
                 cb->info_log ? strlen(cb->info_log) : 0, "log")))
    rc = put_json(ob, t, "resources", res, "json");
  json_decref(res);
  const char *probes = input(cx->plan, t, "probes");
  if (!rc && probes)
    json_object_set_new(t->outputs, "probes", json_string(probes));
  const char *variant = input(cx->plan, t, "variant");
  if (!rc && variant)
    json_object_set_new(t->outputs, "variant", json_string(variant));
out:
  ag_cubin_free(cb);
  ag_diags_release(&d);
  ag_free(ptx);
  return rc;
}

/* Collect: runs the spec's harness once on the compiled variant, in its own
 * process with a timeout; the evidence file becomes an artifact. */
static int ex_collect(ag_exec_ctx *cx, ag_task *t) {
  obs *ob = cx->ud;
  if (!ob->spec->run)
    return fail(t, AG_EINVAL, "the spec '%s' has no \"run\" harness to collect with",
                ob->spec->path);
  ag_str dir = AG_STR_INIT, cubin = AG_STR_INIT, sites = AG_STR_INIT, why = AG_STR_INIT;
  ag_trace_run_result res;
  memset(&res, 0, sizeof res);
  const char *ch = input(cx->plan, t, "cubin"), *ph = input(cx->plan, t, "probes");
  ag_str_printf(&dir, "%s/%.16s-%d-%ld", ob->rundir, ch ? ch : "x", t->id, (long)getpid());
  ag_str_printf(&cubin, "%s/variant.cubin", ag_str_cstr(&dir));
  ag_str_printf(&sites, "%s/probes.json", ag_str_cstr(&dir));
  int rc = ag_mkdir_p(ag_str_cstr(&dir), 0755);
  if (rc) {
    rc = fail(t, rc, "cannot create '%s'", ag_str_cstr(&dir));
    goto out;
  }
  if (!ch || !ph || ag_store_get_file(ob->st, ch, ag_str_cstr(&cubin)) ||
      ag_store_get_file(ob->st, ph, ag_str_cstr(&sites))) {
    rc = fail(t, AG_ENOTFOUND, "cannot fetch the variant for the run: %s", ag_store_errmsg());
    goto out;
  }
  ag_trace_run_opts ro;
  memset(&ro, 0, sizeof ro);
  ro.argv = (const char *const *)ob->spec->run;
  ro.cwd = ob->spec->dir;
  ro.cubin_path = ag_str_cstr(&cubin);
  ro.sites_path = ag_str_cstr(&sites);
  ro.variant_id = ch;
  ro.out_dir = ag_str_cstr(&dir);
  ro.timeout_s = ob->o->timeout_s > 0 ? ob->o->timeout_s : 300;
  ro.records_per_warp = ob->o->records_per_warp;
  ro.max_launches = (unsigned)json_integer_value(json_object_get(t->config, "launches"));
  ro.skip_launches = (unsigned)json_integer_value(json_object_get(t->config, "skip"));
  ro.device = cx->device; /* one isolated process per collection, bound to its lane's GPU */
  ag_worker *wk = ob->workers && cx->device >= 0 && cx->device < ob->nworkers
                      ? ob->workers[cx->device]
                      : NULL;
  if (wk) { /* the lane's worker process already runs on this GPU */
    ro.device = -1;
    rc = ag_worker_collect(wk, ob->spec->run_library, &ro, &res, &why);
  } else {
    rc = ag_trace_run(&ro, &res, &why);
  }
  if (rc) {
    rc = fail(t, rc, "%s", ag_str_cstr(&why));
    goto out;
  }
  char h[65];
  ag_put_opts po = {"evidence", 0};
  if ((rc = ag_store_put_file(ob->st, res.evidence_path, &po, h))) {
    rc = fail(t, rc, "cannot store the evidence: %s", ag_store_errmsg());
    goto out;
  }
  t->outputs = json_pack("{s:s}", "evidence", h);
  po.kind = "log";
  if (res.log_path && ag_store_put_file(ob->st, res.log_path, &po, h) == 0)
    json_object_set_new(t->outputs, "log", json_string(h));
out:
  ag_trace_run_result_release(&res);
  ag_str_release(&dir);
  ag_str_release(&cubin);
  ag_str_release(&sites);
  ag_str_release(&why);
  return rc;
}

/* One value of a synthesis output: {region, signal, stat, value, unit, qual}. */
static void value(json_t *vals, const char *region, const char *signal, const char *stat,
                  json_t *v, const char *unit, const char *qual) {
  json_array_append_new(vals, json_pack("{s:s?,s:s,s:s,s:o,s:s,s:s}", "region", region, "signal",
                                        signal, "stat", stat, "value", v, "unit", unit, "qual",
                                        qual));
}

static int scope_of(const ag_task *t, ag_scope *s) {
  const char *sc = json_string_value(json_object_get(t->config, "scope"));
  return ag_scope_parse(sc ? sc : "", s, NULL);
}

/* Synthesize duration / occurrences / timeline from reference-trace
 * evidence: decode, select the queried region's subtree and the scope. */
static int ex_synth_trace(ag_exec_ctx *cx, ag_task *t) {
  obs *ob = cx->ud;
  const char *signal = json_string_value(json_object_get(t->config, "signal"));
  char *data;
  size_t len;
  int rc = get(ob, t, input(cx->plan, t, "evidence"), "the evidence", &data, &len);
  if (rc)
    return rc;
  ag_diags d;
  ag_diags_init(&d);
  ag_evidence *ev = NULL;
  ag_trace *tr = NULL;
  ag_region_stats *rs = NULL;
  int nrs = 0;
  int *only = NULL, nonly = 0;
  char *sel = NULL;
  json_t *out = json_object(), *vals = json_array();
  ag_scope scope;
  scope_of(t, &scope);
  if ((rc = ag_evidence_load_mem(data, len, "evidence", &d, &ev)) ||
      (rc = ag_trace_decode(ev, &tr))) {
    rc = fail_diags(t, rc, "cannot decode the evidence", &d);
    goto out;
  }
  only = ag_calloc((size_t)ev->nregions + 1, sizeof *only);
  sel = ag_calloc((size_t)ev->nregions + 1, 1);
  if (!only || !sel) {
    rc = fail(t, AG_ENOMEM, "out of memory");
    goto out;
  }
  for (int i = 0; i < ev->nregions; i++)
    if (!strcmp(ev->regions[i].qname, t->region) || !strcmp(ev->regions[i].name, t->region))
      sel[i] = 1;
  for (int i = 0; i < ev->nregions; i++) { /* parents precede children */
    if (!sel[i] && ev->regions[i].parent >= 0 && sel[ev->regions[i].parent])
      sel[i] = 1;
    if (sel[i])
      only[nonly++] = i;
  }
  if (!nonly) {
    rc = fail(t, AG_ENOTFOUND, "region '%s' is not in the evidence", t->region);
    goto out;
  }
  if (!strcmp(signal, "timeline")) {
    ag_str ct = AG_STR_INIT;
    if ((rc = ag_report_chrome_trace(tr, &scope, &ct)) == 0)
      rc = put(ob, t, "timeline", ct.p, ct.len, "timeline");
    ag_str_release(&ct);
    if (rc)
      goto out;
    value(vals, t->region, signal, "file", json_string(json_string_value(
                                                json_object_get(t->outputs, "timeline"))),
          "chrome-trace", "observed");
  } else {
    if ((rc = ag_trace_stats(tr, &scope, only, nonly, &rs, &nrs))) {
      rc = fail(t, rc, "statistics failed");
      goto out;
    }
    for (int i = 0; i < nrs; i++) {
      const char *q = ev->regions[rs[i].region].qname;
      const ag_dstats *s = &rs[i].ns;
      if (!strcmp(signal, "occurrences")) {
        value(vals, q, signal, "count", json_integer((json_int_t)s->count), "count", "observed");
        continue;
      }
      value(vals, q, signal, "count", json_integer((json_int_t)s->count), "count", "observed");
      const char *names[] = {"total", "mean", "p50", "p95", "min", "max"};
      double xs[] = {s->total, s->mean, s->p50, s->p95, s->min, s->max};
      for (int k = 0; k < 6; k++)
        value(vals, q, signal, names[k], json_real(xs[k]), "ns", "observed");
      json_t *by_sm = json_object(), *by_role = json_object();
      for (int k = 0; k < rs[i].nsm; k++) {
        char key[16];
        snprintf(key, sizeof key, "%d", rs[i].by_sm[k].key);
        json_object_set_new(by_sm, key, json_pack("{s:I,s:f}", "count",
                                                  (json_int_t)rs[i].by_sm[k].ns.count, "total",
                                                  rs[i].by_sm[k].ns.total));
      }
      for (int k = 0; k < rs[i].nrole; k++) {
        int ri = rs[i].by_role[k].key;
        json_object_set_new(by_role, ri >= 0 ? ev->roles[ri] : "(none)",
                            json_pack("{s:I,s:f,s:f}", "count",
                                      (json_int_t)rs[i].by_role[k].ns.count, "total",
                                      rs[i].by_role[k].ns.total, "mean",
                                      rs[i].by_role[k].ns.mean));
      }
      value(vals, q, signal, "by_sm", by_sm, "ns", "observed");
      value(vals, q, signal, "by_role", by_role, "ns", "observed");
    }
  }
  json_object_set_new(out, "values", vals);
  vals = NULL;
  json_object_set_new(out, "dropped", json_integer((json_int_t)tr->dropped));
  json_object_set_new(out, "nesting_errors", json_integer((json_int_t)tr->nesting_errors));
  json_object_set_new(out, "unended", json_integer((json_int_t)tr->unended));
  json_object_set_new(out, "anomalies", json_string(ag_str_cstr(&tr->anomalies)));
  json_object_set_new(out, "sm_hz", json_real(ev->sm_hz));
  rc = put_json(ob, t, "values", out, "json");
out:
  json_decref(vals);
  json_decref(out);
  ag_region_stats_free(rs, nrs);
  ag_trace_free(tr);
  ag_evidence_free(ev);
  ag_free(only);
  ag_free(sel);
  ag_diags_release(&d);
  ag_free(data);
  return rc;
}

/* Synthesize `static`: the compiler's report of the trace-free build. */
static int ex_synth_static(ag_exec_ctx *cx, ag_task *t) {
  obs *ob = cx->ud;
  json_t *res = NULL;
  int rc = get_json(ob, t, input(cx->plan, t, "resources"), "the compiler's report", &res);
  if (rc)
    return rc;
  json_t *vals = json_array(), *funcs = json_object_get(res, "functions");
  if (!funcs)
    funcs = json_object_get(res, "funcs");
  size_t i;
  json_t *f;
  static const char *const keys[][3] = {{"registers", "registers", "registers"},
                                        {"spill_store_bytes", "spill_stores", "bytes"},
                                        {"spill_load_bytes", "spill_loads", "bytes"},
                                        {"smem_bytes", "shared_memory", "bytes"},
                                        {"stack_bytes", "stack", "bytes"},
                                        {"barriers", "barriers", "count"}};
  json_array_foreach(funcs, i, f) {
    const char *name = json_string_value(json_object_get(f, "name"));
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
      json_t *v = json_object_get(f, keys[k][0]);
      if (json_is_integer(v) && json_integer_value(v) >= 0) /* -1: not in the log */
        value(vals, name, "static", keys[k][1], json_incref(v), keys[k][2], "observed");
    }
  }
  json_decref(res);
  json_t *out = json_pack("{s:o}", "values", vals);
  rc = put_json(ob, t, "values", out, "json");
  json_decref(out);
  return rc;
}

/* Synthesize the report: every value with its qualification and provenance;
 * what failed is said, not hidden. */
static int ex_report(ag_exec_ctx *cx, ag_task *t) {
  obs *ob = cx->ud;
  ag_report *r = ag_report_new(&ob->query, ob->program);
  if (!r)
    return fail(t, AG_ENOMEM, "out of memory");
  int rc = 0;
  for (size_t i = 0; i < t->deps.n; i++) {
    const ag_task *s = ag_plan_task(cx->plan, t->deps.v[i]);
    const char *signal = json_string_value(json_object_get(s->config, "signal"));
    if (s->status != AG_TS_OK && s->status != AG_TS_CACHED) {
      ag_report_missing(r, s->region, signal, s->error ? s->error : "not run");
      continue;
    }
    json_t *out = NULL;
    if ((rc = get_json(ob, t, json_string_value(json_object_get(s->outputs, "values")),
                       "a synthesis output", &out)))
      break;
    json_t *ids = lineage(cx->plan, s);
    int tasks[64], nt = 0;
    size_t k;
    json_t *id;
    json_array_foreach(ids, k, id) if (nt < 64) tasks[nt++] = (int)json_integer_value(id);
    json_decref(ids);
    const char *variant = NULL;
    for (int k2 = 0; k2 < nt; k2++) {
      const ag_task *a = ag_plan_task(cx->plan, tasks[k2]);
      if (a->type == AG_TASK_TRANSFORM && !strncmp(a->op, "transform.", 10))
        variant = a->op + 10;
    }
    const char *sc = json_string_value(json_object_get(s->config, "scope"));
    ag_provenance pv = {tasks, nt, ob->program, variant, sc ? sc : ""};
    json_t *v;
    json_array_foreach(json_object_get(out, "values"), k, v) {
      json_t *val = json_object_get(v, "value");
      const char *q = json_string_value(json_object_get(v, "qual"));
      ag_qual qual = q && !strcmp(q, "derived")      ? AG_QUAL_DERIVED
                     : q && !strcmp(q, "attributed") ? AG_QUAL_ATTRIBUTED
                                                     : AG_QUAL_OBSERVED;
      const char *reg = json_string_value(json_object_get(v, "region"));
      const char *sig = json_string_value(json_object_get(v, "signal"));
      const char *stat = json_string_value(json_object_get(v, "stat"));
      const char *unit = json_string_value(json_object_get(v, "unit"));
      if (json_is_number(val))
        ag_report_add(r, reg, sig, stat, json_number_value(val), unit, qual, -1, &pv);
      else
        ag_report_add_json(r, reg, sig, stat, json_incref(val), unit, qual, &pv);
    }
    json_t *miss;
    json_array_foreach(json_object_get(out, "missing"), k, miss) {
      ag_str why = AG_STR_INIT;
      ag_str_printf(&why, "%s: %s", json_string_value(json_object_get(miss, "what")),
                    json_string_value(json_object_get(miss, "why")));
      ag_report_missing(r, s->region, signal, ag_str_cstr(&why));
      ag_str_release(&why);
    }
    json_int_t dropped = json_integer_value(json_object_get(out, "dropped"));
    if (dropped > 0) {
      char why[160];
      snprintf(why, sizeof why,
               "%lld trace records were dropped (full buffers): those occurrences are missing "
               "from the statistics; raise --records",
               (long long)dropped);
      ag_report_missing(r, s->region, signal, why);
    }
    json_decref(out);
  }
  if (!rc) {
    ag_report_attach_plan(r, cx->plan);
    json_t *j = ag_report_to_json(r);
    rc = put_json(ob, t, "report", j, "report");
    json_decref(j);
  }
  ag_report_free(r);
  return rc;
}

/* Synthesize async_latency (docs/probes.md): the discovery's site table,
 * the reference run with timed waits (observed) and each probe run
 * (derived), joined by op ID and occurrence. Runs with the probe runs that
 * succeeded; the others are reported missing, with their reason. */
static int ex_synth_async(ag_exec_ctx *cx, ag_task *t) {
  obs *ob = cx->ud;
  json_t *disc = NULL, *out = NULL, *missing = json_array();
  ag_evidence *ref = NULL, **probes = ag_calloc(t->deps.n + 1, sizeof *probes);
  int np = 0, rc = 0;
  ag_diags d;
  ag_diags_init(&d);
  if (!probes || !missing) {
    rc = fail(t, AG_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < t->deps.n; i++) {
    const ag_task *dt = ag_plan_task(cx->plan, t->deps.v[i]);
    int ok = dt->status == AG_TS_OK || dt->status == AG_TS_CACHED;
    if (dt->type == AG_TASK_CONTROL) {
      if (!ok || (rc = get_json(ob, t, json_string_value(json_object_get(dt->outputs, "regions")),
                                "the discovery", &disc)))
        goto out;
      continue;
    }
    if (dt->type != AG_TASK_COLLECT)
      continue;
    const char *vk = json_string_value(json_object_get(dt->config, "variant"));
    int is_probe = vk && !strcmp(vk, "probe");
    if (!ok) {
      json_array_append_new(missing, json_pack("{s:s,s:s}", "what", dt->label, "why",
                                               dt->error ? dt->error : "not run"));
      continue;
    }
    char *data;
    size_t len;
    ag_evidence *ev = NULL;
    if ((rc = get(ob, t, json_string_value(json_object_get(dt->outputs, "evidence")),
                  "the evidence", &data, &len)))
      goto out;
    rc = ag_evidence_load_mem(data, len, dt->label, &d, &ev);
    ag_free(data);
    if (rc) {
      rc = fail_diags(t, rc, "cannot read the evidence", &d);
      goto out;
    }
    if (is_probe)
      probes[np++] = ev;
    else if (!ref)
      ref = ev;
    else
      ag_evidence_free(ev);
  }
  if (!disc) {
    rc = fail(t, AG_EINVAL, "async_latency needs the discovery's site table");
    goto out;
  }
  ag_scope scope;
  scope_of(t, &scope);
  if ((rc = ag_async_synth(disc, ref, (const ag_evidence *const *)probes, np, &scope, &out))) {
    rc = fail(t, rc, "async_latency synthesis failed: %s", ag_strerror(rc));
    goto out;
  }
  json_object_set_new(out, "missing", missing);
  missing = NULL;
  rc = put_json(ob, t, "values", out, "json");
out:
  for (int i = 0; i < np; i++)
    ag_evidence_free(probes[i]);
  ag_free(probes);
  ag_evidence_free(ref);
  json_decref(disc);
  json_decref(out);
  json_decref(missing);
  ag_diags_release(&d);
  return rc;
}

/* The Control task's expansion: one probe branch per (async site, iteration)
 * of each per-instance signal (ag_probe_expand, docs/probes.md). */
static int expand(ag_plan *p, ag_task *control, void *ud) {
  obs *ob = ud;
  if (strcmp(control->op, "discover"))
    return 0;
  int any = 0;
  for (size_t i = 0; i < p->tasks.n; i++) {
    const char *sig = json_string_value(json_object_get(p->tasks.v[i]->config, "signal"));
    const ag_recipe *r = sig ? ag_recipe_find(sig) : NULL;
    const ag_evidence_kind *ek = r ? ag_evidence_find(r->evidence) : NULL;
    any |= ek && ek->per_instance;
  }
  if (!any)
    return 0;
  json_t *disc = NULL;
  int rc = get_json(ob, control, json_string_value(json_object_get(control->outputs, "regions")),
                    "the discovery", &disc);
  if (rc)
    return rc;
  ag_str why = AG_STR_INIT;
  if ((rc = ag_probe_expand(p, control, disc, &why)))
    fail(control, rc, "%s", ag_str_cstr(&why));
  ag_str_release(&why);
  json_decref(disc);
  return rc;
}

static const ag_executor executors[] = {
    {"discover", ex_discover},         {"transform.traced", ex_variant},
    {"transform.trace-free", ex_variant}, {"transform.probe", ex_variant},
    {"synth.async_latency", ex_synth_async}, {"compile", ex_compile},
    {"collect", ex_collect},           {"synth.duration", ex_synth_trace},
    {"synth.occurrences", ex_synth_trace}, {"synth.timeline", ex_synth_trace},
    {"synth.static", ex_synth_static}, {"report", ex_report},
};

/* ------------------------------------------------ memoization (store) */

/* The workspace's task identity: type, op + configuration + program, the
 * transforms' version (a newer probe never reuses an older one's variants or
 * evidence), and the artifacts the dependencies produced. */
static int store_spec(obs *ob, const ag_task *t, json_t **cfg, const char **ins, size_t *nin) {
  *cfg = json_pack("{s:s,s:O,s:s,s:i}", "op", t->op, "config", t->config, "program",
                   t->program ? t->program : "", "xform", AG_VARIANT_XFORM_VERSION);
  *nin = 0;
  for (size_t i = 0; i < t->deps.n; i++) {
    const ag_task *d = ag_plan_task(ob->plan, t->deps.v[i]);
    const char *k;
    json_t *v;
    json_object_foreach(d->outputs, k, v) if (json_is_string(v) && *nin < 64) ins[(*nin)++] =
        json_string_value(v);
  }
  return *cfg ? 0 : AG_ENOMEM;
}

static int memo_lookup(void *ud, const ag_task *ct, json_t **outputs) {
  obs *ob = ud;
  ag_task *t = (ag_task *)ct;
  if (!strcmp(t->op, "report")) /* joined afresh every time: it shows this run's plan */
    return 0;
  json_t *cfg;
  const char *ins[64];
  size_t nin;
  if (store_spec(ob, t, &cfg, ins, &nin))
    return 0;
  ag_store_task_spec sp = {t->type, cfg, ins, nin, t->needs_gpu ? "gpu" : "cpu", ob->query_id,
                           NULL};
  ag_store_claim cl;
  int hit = 0;
  if (ag_store_task_begin(ob->st, &sp, 0, &cl) == 0) {
    memcpy(t->key, cl.key, sizeof t->key);
    if (cl.status == AG_STORE_TASK_OK) {
      *outputs = json_object();
      for (size_t i = 0; i < cl.noutputs; i++)
        json_object_set_new(*outputs, cl.outputs[i].name, json_string(cl.outputs[i].hash));
      hit = 1;
    } else {
      t->memo_id = cl.task_id;
    }
    ag_free(cl.outputs);
  }
  json_decref(cfg);
  return hit;
}

static int memo_publish(void *ud, const ag_task *t) {
  obs *ob = ud;
  if (!t->memo_id)
    return 0;
  ag_store_output outs[32];
  size_t n = 0;
  const char *k;
  json_t *v;
  json_object_foreach(t->outputs, k, v) {
    if (n >= 32 || !json_is_string(v) || strlen(k) > AG_STORE_NAME_MAX)
      continue;
    snprintf(outs[n].name, sizeof outs[n].name, "%s", k);
    snprintf(outs[n].hash, sizeof outs[n].hash, "%s", json_string_value(v));
    n++;
  }
  ag_store_result r = {t->status == AG_TS_OK ? AG_STORE_TASK_OK : AG_STORE_TASK_FAILED,
                       outs, t->status == AG_TS_OK ? n : 0,
                       t->error ? t->error : "failed"};
  return ag_store_task_finish(ob->st, t->memo_id, &r);
}

/* -------------------------------------------------------------- driver */

void ag_observe_result_release(ag_observe_result *res) {
  ag_plan_free(res->plan);
  json_decref(res->report);
  memset(res, 0, sizeof *res);
}

/* The program's PTX: the spec's module, compiled with nvcc if it is CUDA. */
static int module_ptx(const ag_spec *spec, ag_diags *d, ag_str *ptx) {
  if (spec->ptx) {
    char *data;
    size_t len;
    int rc = ag_file_read(spec->ptx, &data, &len);
    if (rc) {
      ag_diags_add(d, AG_SEV_ERROR, spec->ptx, 0, 0, NULL, 0, "cannot read the module: %s",
                   ag_strerror(rc));
      return rc;
    }
    rc = ag_str_append(ptx, data, len);
    ag_free(data);
    return rc;
  }
  return ag_spec_compile_ptx(spec->cuda, (const char *const *)spec->flags, d, ptx);
}

int ag_observe(const ag_observe_opts *o, ag_diags *d, ag_observe_result *res) {
  memset(res, 0, sizeof *res);
  obs ob;
  memset(&ob, 0, sizeof ob);
  ob.o = o;
  ag_str ptx = AG_STR_INIT, tmp = AG_STR_INIT;
  ag_plan *p = NULL;
  int rc;
  ag_query q = {o->region, o->signals, o->nsignals, {{0}, {{0}}}};
  if ((rc = ag_scope_parse(o->scope, &q.scope, d)))
    goto out;
  /* plan first: a bad query fails before anything is built */
  if ((rc = ag_plan_build(&q, "", d, &p)))
    goto out;
  if ((rc = ag_spec_load(o->spec, d, &ob.spec)))
    goto out;
  ag_trace_begin("build module");
  rc = module_ptx(ob.spec, d, &ptx);
  ag_trace_end("build module");
  if (rc)
    goto out;
  if ((rc = ag_store_open(o->workspace, AG_STORE_CREATE, &ob.st))) {
    ag_diags_add(d, AG_SEV_ERROR, o->workspace, 0, 0, NULL, 0, "cannot open the workspace: %s",
                 ag_store_errmsg());
    goto out;
  }
  ag_put_opts po = {"ptx", 0};
  if ((rc = ag_store_put(ob.st, ptx.p, ptx.len, &po, ob.ptx_hash)))
    goto store_err;
  snprintf(ob.program, sizeof ob.program, "%s@%.12s", ob.spec->name, ob.ptx_hash);
  json_t *origin = json_pack("{s:s,s:s?,s:s?}", "spec", ob.spec->path, "cuda", ob.spec->cuda,
                             "ptx", ob.spec->ptx);
  ag_version_spec vs = {0, ob.ptx_hash, NULL, origin, 0};
  rc = ag_store_version_create(ob.st, &vs, &ob.root_version);
  json_decref(origin);
  if (rc)
    goto store_err;
  { /* absolute: harnesses run in the spec's directory */
    char *abs = realpath(o->workspace, NULL);
    ag_str_printf(&tmp, "%s/runs", abs ? abs : o->workspace);
    free(abs);
    ob.rundir = ag_str_detach(&tmp);
  }
  /* bind the plan to the program version */
  p->program = ag_arena_strdup(&p->arena, ob.ptx_hash);
  for (size_t i = 0; i < p->tasks.n; i++)
    p->tasks.v[i]->program = p->program;
  ob.query = p->query;
  ob.plan = p;
  if (!o->plan_only) { /* a query that runs is recorded (argus ws log, --retry-failed) */
    json_t *qj = ag_plan_to_json(p);
    char *abs = realpath(ob.spec->path, NULL);
    json_object_set_new(json_object_get(qj, "query"), "spec",
                        json_string(abs ? abs : ob.spec->path));
    free(abs);
    ag_store_query_add(ob.st, json_object_get(qj, "query"), ob.root_version, &ob.query_id);
    json_decref(qj);
  }
  res->query_id = ob.query_id;
  snprintf(res->program, sizeof res->program, "%s", ob.program);

  int ndev = o->ndevices;
  if (ndev < 0) { /* one lane per device the driver sees */
    ag_str why = AG_STR_INIT;
    ndev = ag_collect_gpu_count(&why);
    if (ndev < 0)
      ndev = 0;
    if (!ndev)
      snprintf(res->nogpu_reason, sizeof res->nogpu_reason, "%s",
               why.len ? ag_str_cstr(&why) : "the CUDA driver lists no device");
    ag_str_release(&why);
  }
  p->expand = expand;
  p->expand_ud = &ob;
  /* collections through the multi-variant worker: started now, so their
   * CUDA initialization overlaps discovery and compilation */
  if (!o->plan_only && ndev > 0 && ob.spec->run_library && ob.spec->run &&
      (ob.workers = ag_calloc((size_t)ndev, sizeof *ob.workers))) {
    ob.nworkers = ndev;
    for (int dv = 0; dv < ndev; dv++) {
      ag_str why = AG_STR_INIT;
      ag_worker_opts wo = {NULL, 0, dv};
      if (ag_worker_start(&wo, &ob.workers[dv], &why))
        AG_LOG(AG_LOG_WARN, "no GPU worker for device %d (%s): a process per collection", dv,
               ag_str_cstr(&why));
      ag_str_release(&why);
    }
  }
  ag_run_opts ro = {.cpu_workers = 0,
                    .ndevices = ndev,
                    .execs = executors,
                    .nexecs = sizeof executors / sizeof executors[0],
                    .ud = &ob,
                    .memo = {memo_lookup, memo_publish, &ob},
                    .progress = o->progress,
                    .progress_ud = o->progress_ud,
                    .types = o->plan_only ? 1u << AG_TASK_CONTROL : 0};
  ag_trace_begin("run plan");
  rc = ag_run_plan(p, &ro, &res->stats);
  ag_trace_end("run plan");
  if (rc)
    goto out;
  ag_task *rep = ag_plan_task(p, p->report_task);
  const char *rh = rep && rep->outputs ? json_string_value(json_object_get(rep->outputs, "report"))
                                       : NULL;
  if (rh) {
    snprintf(res->report_hash, sizeof res->report_hash, "%s", rh);
    void *data;
    size_t len;
    if (ag_store_get(ob.st, rh, &data, &len) == 0) {
      res->report = json_loadb(data, len, 0, NULL);
      ag_free(data);
    }
    ag_store_report_add(ob.st, ob.query_id, rh);
  }
  goto out;
store_err:
  ag_diags_add(d, AG_SEV_ERROR, o->workspace, 0, 0, NULL, 0, "workspace: %s", ag_store_errmsg());
out:
  if (!rc) {
    res->plan = p;
    p = NULL;
  }
  ag_plan_free(p);
  for (int dv = 0; dv < ob.nworkers; dv++)
    ag_worker_stop(ob.workers[dv]);
  ag_free(ob.workers);
  ag_store_close(ob.st);
  ag_spec_free(ob.spec);
  ag_free(ob.rundir);
  ag_str_release(&ptx);
  ag_str_release(&tmp);
  return rc;
}
