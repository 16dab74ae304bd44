/*
 * observe.c — the generic driver of `argus observe`: the glue that binds a
 * query to a program version in the workspace, and the generic executors.
 * Each executor reads its inputs as artifacts (by content hash) from the
 * workspace, does one step — discover, make a variant, compile it, run the
 * harness, join the report — and publishes its outputs as artifacts; a
 * task's outputs are {name: artifact hash} only, which is what makes
 * memoization through the workspace exact. What is particular to a backend
 * (its synthesis rules, what its collector needs, its options, its
 * expansion) lives in its adapter, src/run/backend_<name>.c, behind
 * argus/backend.h (docs/backends.md). Called once per task: the cost is the
 * step itself.
 */
#include "argus/observe.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "argus/collect.h"
#include "argus/ptx.h"
#include "argus/report.h"
#include "argus/spec.h"
#include "argus/store.h"
#include "argus/synth.h"
#include "argus/variant.h"
#include "observe_int.h"

/* ------------------------------------------------------------ helpers */

int ag__obs_fail(ag_task *t, int rc, const char *fmt, ...) {
  ag_str e = AG_STR_INIT;
  va_list ap;
  va_start(ap, fmt);
  ag_str_vprintf(&e, fmt, ap);
  va_end(ap);
  ag_free(t->error);
  t->error = ag_str_detach(&e);
  return rc ? rc : AG_EINVAL;
}

int ag__obs_fail_diags(ag_task *t, int rc, const char *what, const ag_diags *d) {
  ag_str s = AG_STR_INIT;
  ag_diags_format(d, &s);
  while (s.len && s.p[s.len - 1] == '\n')
    s.p[--s.len] = 0;
  int r = ag__obs_fail(t, rc, "%s%s%s", what, s.len ? ":\n" : "", ag_str_cstr(&s));
  ag_str_release(&s);
  return r;
}

int ag__obs_put(obs *ob, ag_task *t, const char *name, const void *data, size_t len,
                const char *kind) {
  char hash[65];
  ag_put_opts po = {kind, 0};
  int rc = ag_store_put(ob->st, data, len, &po, hash);
  if (rc)
    return ag__obs_fail(t, rc, "cannot store %s: %s", name, ag_store_errmsg());
  if (!t->outputs)
    t->outputs = json_object();
  json_object_set_new(t->outputs, name, json_string(hash));
  return 0;
}

int ag__obs_put_json(obs *ob, ag_task *t, const char *name, json_t *j, const char *kind) {
  char *s = json_dumps(j, JSON_INDENT(1) | JSON_SORT_KEYS);
  if (!s)
    return ag__obs_fail(t, AG_ENOMEM, "cannot serialize %s", name);
  int rc = ag__obs_put(ob, t, name, s, strlen(s), kind);
  free(s);
  return rc;
}

/* The artifact hash named `name` among t's dependencies' outputs. */
const char *ag__obs_input(const ag_plan *p, const ag_task *t, const char *name) {
  for (size_t i = 0; i < t->deps.n; i++) {
    const ag_task *d = ag_plan_task(p, t->deps.v[i]);
    const char *h = d && d->outputs ? json_string_value(json_object_get(d->outputs, name)) : NULL;
    if (h)
      return h;
  }
  return NULL;
}

int ag__obs_get(obs *ob, ag_task *t, const char *hash, const char *what, char **data, size_t *len) {
  void *p = NULL;
  *data = NULL; /* out-parameters set on failure too (and gcc -O3 sees it) */
  *len = 0;
  int rc = hash ? ag_store_get(ob->st, hash, &p, len) : AG_ENOTFOUND;
  if (rc)
    return ag__obs_fail(t, rc, "cannot read %s (%s) from the workspace: %s", what,
                        hash ? hash : "none", hash ? ag_store_errmsg() : "no such input");
  *data = p;
  return 0;
}

int ag__obs_get_json(obs *ob, ag_task *t, const char *hash, const char *what, json_t **out) {
  char *data;
  size_t len;
  int rc = ag__obs_get(ob, t, hash, what, &data, &len);
  if (rc)
    return rc;
  *out = json_loadb(data, len, 0, NULL);
  ag_free(data);
  return *out ? 0 : ag__obs_fail(t, AG_ECORRUPT, "%s (%s) is not JSON", what, hash);
}

int ag__obs_evidence_decode(const void *data, size_t len, const char *what, ag_diags *d,
                            void **out) {
  return ag_evidence_load_mem(data, len, what, d, (ag_evidence **)out);
}

void ag__obs_evidence_release(void *ev) { ag_evidence_free(ev); }

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
  int rc = ag__obs_get(ob, t, ob->ptx_hash, "the program's PTX", &ptx, &len);
  if (rc)
    return rc;
  ag_diags d;
  ag_diags_init(&d);
  ag_ptx_module *m = NULL;
  ag_ptx_regions *r = NULL;
  json_t *j = NULL;
  if ((rc = ag_ptx_parse(ptx, len, ob->spec->name, &d, &m)) || (rc = ag_ptx_discover(m, &d, &r))) {
    rc = ag__obs_fail_diags(t, rc, "discovery failed", &d);
    goto out;
  }
  j = ag_ptx_regions_to_json(m, r);
  /* the outputs are properties of the module alone (not of the query), so
   * every query on this program shares the variants built from them */
  int nsel = 0;
  ag_str known = AG_STR_INIT, near = AG_STR_INIT;
  /* the qualified names, then their own (last) names: a mistyped name is
   * suggested as the one it is close to */
  const char **names = ag_calloc(2 * (size_t)r->nregions + 1, sizeof *names);
  for (int i = 0; i < r->nregions; i++) {
    const ag_ptx_region *g = &r->regions[i];
    if (!strcmp(g->qname, ob->query.region) || !strcmp(g->name, ob->query.region))
      nsel++;
    ag_str_printf(&known, "%s%s", i ? ", " : "", g->qname);
    if (names)
      names[i] = g->qname, names[r->nregions + i] = g->name;
  }
  if (!nsel && names)
    ag_str_suggest(&near, ob->query.region, names, 2 * (size_t)r->nregions);
  if (!nsel)
    rc = ag__obs_fail(t, AG_ENOTFOUND, "unknown region '%s' in %s%s%s (known: %s)",
                      ob->query.region, ob->spec->name, near.len ? ": " : "", ag_str_cstr(&near),
                      ag_str_cstr(&known));
  ag_free(names);
  ag_str_release(&near);
  ag_str_release(&known);
  if (!rc && !(rc = ag__obs_put(ob, t, "ptx", ptx, len, "ptx")))
    rc = ag__obs_put_json(ob, t, "regions", j, "json");
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
    return ag__obs_fail(t, AG_EINVAL, "unknown variant kind '%s'", vk ? vk : "");
  /* --trace: the regions the traced variant probes (their subtrees) */
  const char *sel[64];
  json_t *rs = json_object_get(t->config, "regions");
  for (size_t i = 0; i < json_array_size(rs) && i < 64; i++)
    sel[vo.nregions++] = json_string_value(json_array_get(rs, i));
  if (vo.nregions)
    vo.regions = sel;
  char *ptx;
  size_t len;
  int rc = ag__obs_get(ob, t, ag__obs_input(cx->plan, t, "ptx"), "the program's PTX", &ptx, &len);
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
    rc = ag__obs_fail_diags(t, rc, "cannot make the variant", &d);
    goto out;
  }
  if ((rc = ag__obs_put(ob, t, "ptx", v->ptx, v->len, "ptx")) ||
      (rc = ag__obs_put_json(ob, t, "probes", v->probes, "json")))
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
    rc = ag__obs_put_json(ob, t, "variant", ver, "json");
    json_decref(ver);
  }
out:
  ag_variant_free(v);
  ag_diags_release(&d);
  ag_free(ptx);
  return rc;
}

/* The outputs[name] of the first dependency of t whose op is `op`. */
const char *ag__obs_dep_output(const ag_plan *p, const ag_task *t, const char *op,
                               const char *name) {
  for (size_t i = 0; i < t->deps.n; i++) {
    const ag_task *d = ag_plan_task(p, t->deps.v[i]);
    if (d && !strcmp(d->op, op) && d->outputs)
      return json_string_value(json_object_get(d->outputs, name));
  }
  return NULL;
}

/* The register bound of a variant compiled within its baseline's occupancy
 * (docs/tracing.md, "Perturbation"): each function's trace-free registers
 * and bucket and its registers as compiled. Appends to *capped the PTX with
 * `.maxnreg` set on every function above its bucket; returns how many. */
static int occupancy_cap(const json_t *base, const ag_cubin *cb, const char *ptx, size_t len,
                         json_t *note, ag_str *capped) {
  json_t *fs = json_array();
  int over = 0;
  ag_str cur = AG_STR_INIT, next = AG_STR_INIT;
  ag_str_append(&cur, ptx, len);
  for (int i = 0; i < cb->nfuncs; i++) {
    const ag_jit_func *f = &cb->funcs[i];
    int tf = -1;
    size_t k;
    json_t *bf;
    json_array_foreach(json_object_get(base, "functions"), k, bf) if (
        !strcmp(json_string_value(json_object_get(bf, "name")), f->name)) tf =
        (int)json_integer_value(json_object_get(bf, "registers"));
    int hi = ag_occ_reg_bucket_max(tf);
    json_t *fj = json_pack("{s:s,s:i,s:i,s:i,s:i}", "name", f->name, "trace_free_registers", tf,
                           "bucket_max", hi, "registers_uncapped", f->registers, "maxnreg", 0);
    if (hi > 0 && f->registers > hi) {
      ag_str_clear(&next);
      if (ag_ptx_set_maxnreg(ag_str_cstr(&cur), cur.len, f->name, hi, &next) == 0) {
        ag_str t = cur;
        cur = next;
        next = t;
        json_object_set_new(fj, "maxnreg", json_integer(hi));
        over++;
      }
    }
    json_array_append_new(fs, fj);
  }
  json_object_set_new(note, "functions", fs);
  if (over)
    ag_str_append(capped, cur.p, cur.len);
  ag_str_release(&cur);
  ag_str_release(&next);
  return over;
}

/* "the user's build (nvcc -cubin FLAGS, markers off)" */
void ag__obs_user_build_label(const ag_spec *sp, ag_str *w) {
  ag_str_puts(w, "the user's build (nvcc -cubin");
  for (int i = 0; i < sp->nflags; i++)
    ag_str_printf(w, " %s", sp->flags[i]);
  ag_str_puts(w, sp->nflags ? ", markers off)" : " -arch=sm_90a, markers off)");
}

/* The trace-free build against the user's: the spec's "production" file,
 * or else the module compiled without markers with the same options. How
 * they compare goes into res["production"]; the user's build itself is the
 * compile's "production" output: the build the timing run loads. */
static int compare_production(obs *ob, ag_task *t, const ag_cubin *cb, json_t *res) {
  char *prod = NULL;
  size_t plen = 0;
  ag_cubin *user = NULL;
  ag_str label = AG_STR_INIT;
  int rc = 0;
  if (ob->spec->production) {
    if ((rc = ag_file_read(ob->spec->production, &prod, &plen)))
      return ag__obs_fail(t, rc, "cannot read the production build '%s' named in %s: %s",
                          ob->spec->production, ob->spec->path, ag_strerror(rc));
    if (ob->spec->python) /* discovery took it from Triton's dump */
      ag_str_printf(&label, "Triton's build of '%s'", ob->spec->python_kernel);
    else
      ag_str_puts(&label, ob->spec->production);
  } else { /* the same source, flags and options, markers off */
    ag_diags d;
    ag_diags_init(&d);
    ag_str uptx = AG_STR_INIT;
    rc = ag_spec_compile_user_ptx(ob->spec->cuda, (const char *const *)ob->spec->flags, &d,
                                  &uptx);
    if (!rc)
      rc = ag_jit_compile_ex(uptx.p, uptx.len, ob->spec->name, NULL,
                             (const char *const *)ob->ptxas_opts, &d, &user);
    ag_str_release(&uptx);
    if (rc) { /* the variant compiled: say why there is no comparison, measure on */
      ag_str why = AG_STR_INIT;
      ag_diags_format(&d, &why);
      json_object_set_new(res, "production",
                          json_pack("{s:s,s:b,s:b,s:s,s:b}", "path", "the user's build",
                                    "compared", 0, "identical", 0, "summary",
                                    ag_str_cstr(&why), "file", 0));
      ag_str_release(&why);
      ag_diags_release(&d);
      return 0;
    }
    ag_diags_release(&d);
    prod = (char *)user->data;
    plen = user->len;
    ag__obs_user_build_label(ob->spec, &label);
  }
  ag_build_cmp cmp;
  memset(&cmp, 0, sizeof cmp);
  if ((rc = ag__obs_put(ob, t, "production", prod, plen, "cubin"))) {
    if (!user)
      ag_free(prod);
    ag_cubin_free(user);
    ag_str_release(&label);
    return rc;
  }
  rc = ag_build_compare(cb->data, cb->len, prod, plen, cb->arch, &cmp);
  if (!user)
    ag_free(prod);
  ag_cubin_free(user);
  if (rc == AG_ENOMEM) {
    ag_str_release(&cmp.summary);
    ag_str_release(&label);
    return ag__obs_fail(t, rc, "out of memory");
  }
  json_object_set_new(res, "production",
                      json_pack("{s:s,s:b,s:b,s:s,s:b}", "path", ag_str_cstr(&label), "compared",
                                rc == 0, "identical", rc == 0 && cmp.identical, "summary",
                                ag_str_cstr(&cmp.summary), "file",
                                ob->spec->production != NULL && !ob->spec->python));
  ag_str_release(&cmp.summary);
  ag_str_release(&label);
  return 0;
}

/* Transform: PTX -> cubin with ptxas and the options of the user's build
 * (every variant alike); the compiler's report becomes the `resources`
 * artifact (registers, spills, shared memory, stack, how it was built and,
 * for the trace-free variant, how it compares with the spec's production
 * build). A variant with "occupancy_of" is kept within that build's
 * occupancy: a function that needs more registers than its trace-free
 * build's bucket allows is compiled again with `.maxnreg` at the bucket's
 * top, and the report says so ("occupancy"). */
static int ex_compile(ag_exec_ctx *cx, ag_task *t) {
  obs *ob = cx->ud;
  char *ptx;
  size_t len;
  int rc = ag__obs_get(ob, t, ag__obs_input(cx->plan, t, "ptx"), "the variant's PTX", &ptx, &len);
  if (rc)
    return rc;
  ag_diags d;
  ag_diags_init(&d);
  ag_cubin *cb = NULL;
  json_t *base = NULL, *occ = NULL;
  const char *of = json_string_value(json_object_get(t->config, "occupancy_of"));
  json_t *res = NULL;
  /* -lineinfo (attribution's builds): the same SASS with the SASS -> PTX
   * line table (docs/attribution.md) */
  const char *opts[64];
  size_t no = 0;
  for (char **o = ob->ptxas_opts; o && *o; o++)
    if (no < 62)
      opts[no++] = *o;
    else {
      ag_free(ptx);
      return ag__obs_fail(t, AG_EINVAL, "the build has more than 62 ptxas options");
    }
  int has_li = 0; /* Triton's options have it already */
  for (size_t i = 0; i < no; i++)
    has_li |= !strcmp(opts[i], "-lineinfo");
  if (json_is_true(json_object_get(t->config, "lineinfo")) && !has_li)
    opts[no++] = "-lineinfo";
  opts[no] = NULL;
  if ((rc = ag_jit_compile_with(ob->ptxas, ptx, len, ob->spec->name, NULL, no ? opts : NULL, &d,
                                &cb))) {
    rc = ag__obs_fail_diags(t, rc, "compilation failed", &d);
    goto out;
  }
  if (of) {
    occ = json_pack("{s:s,s:i,s:b,s:n}", "of", of, "capped", 0, "kept", 1, "why");
    const char *bh = ag__obs_dep_output(cx->plan, t, "compile", "resources");
    if (!bh || ag__obs_get_json(ob, t, bh, "the trace-free build's compiler report", &base)) {
      json_object_set_new(occ, "kept", json_false());
      json_object_set_new(occ, "why", json_string("the trace-free build's register counts "
                                                  "are not known"));
    } else {
      ag_str capped = AG_STR_INIT;
      int ncap = occupancy_cap(base, cb, ptx, len, occ, &capped);
      if (ncap > 0) {
        ag_cubin *c2 = NULL;
        ag_diags_release(&d);
        ag_diags_init(&d);
        if (ag_jit_compile_with(ob->ptxas, capped.p, capped.len, ob->spec->name, NULL,
                                no ? opts : NULL, &d,
                              &c2) == 0) {
          ag_cubin_free(cb);
          cb = c2;
          json_object_set_new(occ, "capped", json_integer(ncap));
        } else {
          json_object_set_new(occ, "why", json_string("the compile with .maxnreg failed"));
        }
      }
      ag_str_release(&capped);
      /* what was compiled: is every function within its bucket? */
      size_t k;
      json_t *f;
      json_array_foreach(json_object_get(occ, "functions"), k, f) {
        int hi = (int)json_integer_value(json_object_get(f, "bucket_max"));
        const char *nm = json_string_value(json_object_get(f, "name"));
        for (int i = 0; i < cb->nfuncs; i++)
          if (!strcmp(cb->funcs[i].name, nm)) {
            json_object_set_new(f, "registers", json_integer(cb->funcs[i].registers));
            json_object_set_new(f, "spill_store_bytes",
                                json_integer(cb->funcs[i].spill_store_bytes));
            if (hi > 0 && cb->funcs[i].registers > hi)
              json_object_set_new(occ, "kept", json_false());
          }
      }
      if (!json_is_true(json_object_get(occ, "kept")) &&
          json_is_null(json_object_get(occ, "why")))
        json_object_set_new(occ, "why", json_string("the capped compile still needs more "
                                                    "registers than the bucket allows"));
    }
  }
  res = ag_cubin_to_json(cb);
  if (occ)
    json_object_set(res, "occupancy", occ);
  json_object_set(json_object_get(res, "build"), "as", json_object_get(ob->build, "as"));
  const char *variant = ag__obs_input(cx->plan, t, "variant");
  if (!variant && (ob->spec->production || ob->spec->cuda) &&
      (rc = compare_production(ob, t, cb, res)))
    goto out;
  if (!(rc = ag__obs_put(ob, t, "cubin", cb->data, cb->len, "cubin")) &&
      !(rc = ag__obs_put(ob, t, "log", cb->info_log ? cb->info_log : "",
                         cb->info_log ? strlen(cb->info_log) : 0, "log")))
    rc = ag__obs_put_json(ob, t, "resources", res, "json");
  const char *probes = ag__obs_input(cx->plan, t, "probes");
  if (!rc && probes)
    json_object_set_new(t->outputs, "probes", json_string(probes));
  if (!rc && variant)
    json_object_set_new(t->outputs, "variant", json_string(variant));
  /* a PTX module is shipped as itself: the timing run loads the program's PTX */
  if (!rc && !variant && !ob->spec->production && !ob->spec->cuda && ob->ptx_hash[0])
    json_object_set_new(t->outputs, "production", json_string(ob->ptx_hash));
out:
  json_decref(res);
  json_decref(base);
  json_decref(occ);
  ag_cubin_free(cb);
  ag_diags_release(&d);
  ag_free(ptx);
  return rc;
}

int ag__obs_has_backend(const ag_task *t, const char *b) {
  size_t k;
  json_t *v;
  json_array_foreach(json_object_get(t->config, "backends"), k, v) if (
      !strcmp(json_string_value(v), b)) return 1;
  return 0;
}

/* The first dependency of t that is a Collect task with backend `b`. */
const ag_task *ag__obs_collect_dep(const ag_plan *p, const ag_task *t, const char *b) {
  for (size_t i = 0; i < t->deps.n; i++) {
    const ag_task *d = ag_plan_task(p, t->deps.v[i]);
    if (d && d->type == AG_TASK_COLLECT && ag__obs_has_backend(d, b))
      return d;
  }
  return NULL;
}

/* Collect: runs the spec's harness once on the compiled variant, in its own
 * process with a timeout; the evidence file becomes an artifact. The
 * collect hook of each backend adapter whose collector the task lists sets
 * what its collector needs first (argus/backend.h): the "time" backend
 * runs the user's build with every launch timed; a traced run after it
 * records the launches size_launches chose. */
static int ex_collect(ag_exec_ctx *cx, ag_task *t) {
  obs *ob = cx->ud;
  if (!ob->spec->run && !ob->spec->python)
    return ag__obs_fail(t, AG_EINVAL, "the spec '%s' has no \"run\" harness to collect with",
                        ob->spec->path);
  ag_str dir = AG_STR_INIT, cubin = AG_STR_INIT, sites = AG_STR_INIT, why = AG_STR_INIT;
  ag_triton_collect tc; /* a python spec: Triton runs the variant (docs/triton.md) */
  memset(&tc, 0, sizeof tc);
  char *host_lib = NULL, *pydir = NULL;
  ag_trace_run_result res;
  memset(&res, 0, sizeof res);
  ag_trace_run_opts ro;
  memset(&ro, 0, sizeof ro);
  ag_collect_job job = {ag__obs_input(cx->plan, t, "cubin"), &ro, "evidence", json_object(), 0, 0};
  const char *ph = ag__obs_input(cx->plan, t, "probes");
  int rc = 0;
  ro.argv = (const char *const *)ob->spec->run;
  ro.cwd = ob->spec->dir;
  ro.timeout_s = ob->o->timeout_s > 0 ? ob->o->timeout_s : 300;
  ro.records_per_warp = ob->o->records_per_warp;
  ro.max_launches = (unsigned)json_integer_value(json_object_get(t->config, "launches"));
  ro.skip_launches = (unsigned)json_integer_value(json_object_get(t->config, "skip"));
  size_t k;
  json_t *bv;
  json_array_foreach(json_object_get(t->config, "backends"), k, bv) {
    const ag_backend *b = ag_backend_collector(ob->backends, json_string_value(bv));
    if (b && b->output)
      job.output = b->output;
    if (b && (rc = b->collect(cx, t, &job)))
      goto out;
  }
  const char *ch = job.cubin;
  ag_str_printf(&dir, "%s/%.16s-%d-%ld", ob->rundir, ch ? ch : "x", t->id, (long)getpid());
  ag_str_printf(&cubin, "%s/variant.cubin", ag_str_cstr(&dir));
  ag_str_printf(&sites, "%s/probes.json", ag_str_cstr(&dir));
  rc = ag_mkdir_p(ag_str_cstr(&dir), 0755);
  if (rc) {
    rc = ag__obs_fail(t, rc, "cannot create '%s'", ag_str_cstr(&dir));
    goto out;
  }
  if (!ch || !ph || ag_store_get_file(ob->st, ch, ag_str_cstr(&cubin)) ||
      ag_store_get_file(ob->st, ph, ag_str_cstr(&sites))) {
    rc = ag__obs_fail(t, AG_ENOTFOUND, "cannot fetch the variant for the run: %s",
                      ch ? ag_store_errmsg() : "it was not compiled");
    goto out;
  }
  ro.cubin_path = ag_str_cstr(&cubin);
  ro.sites_path = ag_str_cstr(&sites);
  ro.variant_id = ch;
  ro.out_dir = ag_str_cstr(&dir);
  /* one isolated process per collection, bound to its lane's GPU (or, for a
   * multi-GPU harness, seeing them all) */
  ro.device = job.all_devices ? -1 : cx->device;
  if (ob->spec->python) { /* the script runs; Triton loads the variant as its cubin */
    host_lib = ag_collect_host_library();
    pydir = ag_collect_python_dir();
    if (!host_lib) {
      rc = ag__obs_fail(t, AG_ENOMEM, "out of memory");
      goto out;
    }
    /* the timing run of the user's build: Triton's own cubin, not overridden */
    const char *prod = ag__obs_input(cx->plan, t, "production");
    int own = ro.time_only && prod && job.cubin && !strcmp(job.cubin, prod);
    if ((rc = ag_triton_collect_setup(ob->spec, ag_str_cstr(&dir),
                                      own ? NULL : ag_str_cstr(&cubin), host_lib, pydir, &tc,
                                      &why))) {
      rc = ag__obs_fail(t, rc, "%s", ag_str_cstr(&why));
      goto out;
    }
    ro.argv = (const char *const *)tc.argv;
    ro.env_extra = (const char *const *)tc.env;
  }
  int pooled = !job.own_process && !ob->spec->python && ob->workers && cx->device >= 0 &&
               cx->device < ob->nworkers;
  ag_worker *wk = pooled ? ob->workers[cx->device] : NULL;
  if (wk) { /* the lane's worker process already runs on this GPU */
    ro.device = -1;
    rc = ag_worker_collect(wk, ob->spec->run_library, &ro, &res, &why);
  } else {
    rc = ag_trace_run(&ro, &res, &why);
  }
  if (rc) {
    rc = ag__obs_fail(t, rc, "%s", ag_str_cstr(&why));
    goto out;
  }
  char h[65];
  ag_put_opts po = {job.output, 0};
  if ((rc = ag_store_put_file(ob->st, res.evidence_path, &po, h))) {
    rc = ag__obs_fail(t, rc, "cannot store the evidence: %s", ag_store_errmsg());
    goto out;
  }
  t->outputs = json_pack("{s:s}", job.output, h);
  po.kind = "timing";
  if (!ro.time_only && res.timing_path && ag_store_put_file(ob->st, res.timing_path, &po, h) == 0)
    json_object_set_new(t->outputs, "timing", json_string(h));
  po.kind = "system"; /* the activity trace beside a traced run (ro.activity) */
  if (res.system_path && ag_store_put_file(ob->st, res.system_path, &po, h) == 0)
    json_object_set_new(t->outputs, "system", json_string(h));
  po.kind = "log";
  if (res.log_path && ag_store_put_file(ob->st, res.log_path, &po, h) == 0)
    json_object_set_new(t->outputs, "log", json_string(h));
  if (res.late_exit) /* the evidence counts; the report warns (ex_report) */
    json_object_set_new(job.extra, "late_exit", json_pack("{s:s}", "warning", res.late_exit));
  const char *name;
  json_t *x;
  json_object_foreach(job.extra, name, x) { /* the hooks' notes: launch_plan, baseline */
    if ((rc = ag__obs_put_json(ob, t, name, x, "json")))
      break;
  }
out:
  ag_triton_collect_release(&tc);
  ag_free(host_lib);
  ag_free(pydir);
  json_decref(job.extra);
  ag_trace_run_result_release(&res);
  ag_str_release(&dir);
  ag_str_release(&cubin);
  ag_str_release(&sites);
  ag_str_release(&why);
  return rc;
}

/* One value of a synthesis output: {region, signal, stat, value, unit, qual}. */
void ag__obs_value(json_t *vals, const char *region, const char *signal, const char *stat,
                   json_t *v, const char *unit, const char *qual) {
  json_array_append_new(vals, json_pack("{s:s?,s:s,s:s,s:o,s:s,s:s}", "region", region, "signal",
                                        signal, "stat", stat, "value", v, "unit", unit, "qual",
                                        qual));
}

/* The first dependency of t of this type, or NULL. */
const ag_task *ag__obs_dep_of(const ag_plan *p, const ag_task *t, ag_task_type type) {
  for (size_t i = 0; i < t->deps.n; i++) {
    const ag_task *d = ag_plan_task(p, t->deps.v[i]);
    if (d && d->type == type)
      return d;
  }
  return NULL;
}

/* The program version a collection's evidence belongs to: this plan's
 * program when the variant the evidence names is the cubin that collection
 * ran; otherwise the variant it names (evidence of another build, which is
 * never joined with this program's: docs/report.md). */
void ag__obs_evidence_program(const obs *ob, const ag_plan *p, const ag_task *collect,
                              const ag_evidence *ev, ag_str *out) {
  const char *want = collect ? ag__obs_input(p, collect, "cubin") : NULL;
  const char *got =
      json_string_value(json_object_get(json_object_get(ev->header, "variant"), "id"));
  if (want && got && !strcmp(want, got))
    ag_str_puts(out, ob->program);
  else if (got && *got)
    ag_str_printf(out, "the build of variant %.12s", got);
  else
    ag_str_puts(out, "a build that names no variant");
}

int ag__obs_scope_of(const ag_task *t, ag_scope *s) {
  const char *sc = json_string_value(json_object_get(t->config, "scope"));
  return ag_scope_parse(sc ? sc : "", s, NULL);
}

/* The collection that recorded the evidence synthesis s read (its values'
 * provenance "collector", docs/report.md): the collect backend of its
 * signal's evidence in the recipe table (the host runtime's ARGUS_COLLECT
 * value); for a synthesis of no recipe (what tracing cost) the backends of
 * the Collect tasks it reads, in their order, joined by '+'. "" when no run
 * recorded it (the compiler's report). */
static const char *collector_of(const ag_plan *p, const ag_task *s, const char *signal,
                                char *buf, size_t n) {
  const ag_recipe *r = ag_recipe_find(signal);
  const ag_evidence_kind *ek = r ? ag_evidence_find(r->evidence) : NULL;
  size_t len = 0;
  buf[0] = 0;
  if (r)
    return ek ? ek->backend : NULL;
  for (size_t i = 0; i < s->deps.n; i++) {
    const ag_task *d = ag_plan_task(p, s->deps.v[i]);
    size_t k;
    json_t *b;
    if (d && d->type == AG_TASK_COLLECT)
      json_array_foreach(json_object_get(d->config, "backends"), k, b) if (len < n)
          len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? "+" : "",
                                  json_string_value(b));
  }
  return buf[0] ? buf : NULL;
}

/* Synthesize the report: every value with its qualification and provenance;
 * what failed is said, not hidden. */
static int ex_report(ag_exec_ctx *cx, ag_task *t) {
  obs *ob = cx->ud;
  ag_report *r = ag_report_new(&ob->query, ob->program);
  if (!r)
    return ag__obs_fail(t, AG_ENOMEM, "out of memory");
  int rc = 0;
  /* what every joined value must share: this program version, the query's scope */
  ag_str qs = AG_STR_INIT;
  ag_scope_format(&ob->query.scope, &qs);
  ag_provenance want = {NULL, 0, ob->program, NULL, ag_str_cstr(&qs), NULL};
  for (size_t i = 0; i < t->deps.n; i++) {
    const ag_task *s = ag_plan_task(cx->plan, t->deps.v[i]);
    const char *signal = json_string_value(json_object_get(s->config, "signal"));
    if (s->status != AG_TS_OK && s->status != AG_TS_CACHED) {
      ag_report_missing(r, s->region, signal, s->error ? s->error : "not run");
      continue;
    }
    json_t *out = NULL;
    if ((rc = ag__obs_get_json(ob, t, json_string_value(json_object_get(s->outputs, "values")),
                               "a synthesis output", &out)))
      break;
    json_t *ids = lineage(cx->plan, s);
    int tasks[64], nt = 0;
    size_t k;
    json_t *id;
    json_array_foreach(ids, k, id) if (nt < 64) tasks[nt++] = (int)json_integer_value(id);
    json_decref(ids);
    /* the variant of the evidence the synthesis read: its first input's
     * chain (collect -> compile -> transform.<variant>); else (per-instance
     * synthesis, whose first input is the discovery) the lineage's last */
    const char *variant = NULL;
    for (const ag_task *x = s->deps.n ? ag_plan_task(cx->plan, s->deps.v[0]) : NULL; x;
         x = x->deps.n ? ag_plan_task(cx->plan, x->deps.v[0]) : NULL)
      if (!strncmp(x->op, "transform.", 10)) {
        variant = x->op + 10;
        break;
      }
    for (int k2 = 0; !variant && k2 < nt; k2++) {
      const ag_task *a = ag_plan_task(cx->plan, tasks[k2]);
      if (a->type == AG_TASK_TRANSFORM && !strncmp(a->op, "transform.", 10))
        variant = a->op + 10;
    }
    const char *sc = json_string_value(json_object_get(s->config, "scope"));
    const char *prog = json_string_value(json_object_get(out, "program"));
    char col[128];
    ag_provenance pv = {tasks, nt, prog ? prog : ob->program, variant, sc ? sc : "",
                        collector_of(cx->plan, s, signal, col, sizeof col)};
    json_t *v;
    /* the synthesis's own not-joined evidence (e.g. a probe of another build) */
    json_array_foreach(json_object_get(out, "not_joined"), k, v)
        ag_report_not_joined(r, json_string_value(json_object_get(v, "what")),
                             json_string_value(json_object_get(v, "why")));
    ag_str apart = AG_STR_INIT;
    /* a synthesis planned without a scope (what tracing cost) holds
     * whole-kernel values: joined on the program alone, and its values'
     * provenance says scope "" (before: every scoped query lost it) */
    ag_provenance whole = want;
    if (!sc)
      whole.scope = "";
    if (!ag_report_joinable(&whole, &pv, &apart)) { /* never joined silently */
      ag_str what = AG_STR_INIT;
      ag_str_printf(&what, "%s of '%s' (t%d)", signal ? signal : s->op,
                    s->region ? s->region : "", s->id);
      ag_report_not_joined(r, ag_str_cstr(&what), ag_str_cstr(&apart));
      ag_report_missing(r, s->region, signal,
                        "its evidence is not this program's: see not_joined");
      ag_str_release(&what);
      ag_str_release(&apart);
      json_decref(out);
      continue;
    }
    ag_str_release(&apart);
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
      const char *flag = json_string_value(json_object_get(v, "flag"));
      if (flag && json_is_number(val))
        ag_report_add_flagged(r, reg, sig, stat, json_number_value(val), unit, qual, flag, &pv);
      else if (json_is_number(val))
        ag_report_add(r, reg, sig, stat, json_number_value(val), unit, qual,
                      json_is_number(json_object_get(v, "entropy"))
                          ? json_number_value(json_object_get(v, "entropy"))
                          : -1,
                      &pv);
      else
        ag_report_add_json(r, reg, sig, stat, json_incref(val), unit, qual, &pv);
      if (json_object_get(v, "dist")) /* a pooled value's spread */
        ag_report_annotate_last(r, "dist", json_incref(json_object_get(v, "dist")));
    }
    json_t *miss;
    json_array_foreach(json_object_get(out, "missing"), k, miss) {
      ag_str why = AG_STR_INIT;
      ag_str_printf(&why, "%s: %s", json_string_value(json_object_get(miss, "what")),
                    json_string_value(json_object_get(miss, "why")));
      ag_report_missing(r, s->region, signal, ag_str_cstr(&why));
      ag_str_release(&why);
    }
    json_t *w;
    json_array_foreach(json_object_get(out, "warnings"), k, w)
        ag_report_warning(r, json_string_value(w));
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
  /* a harness that died after the host runtime had closed: its evidence
   * counts, the report says what happened (docs/harness.md) */
  for (size_t i = 0; !rc && i < cx->plan->tasks.n; i++) {
    const ag_task *c = cx->plan->tasks.v[i];
    const char *h = json_string_value(json_object_get(c->outputs, "late_exit"));
    json_t *note = NULL;
    if (c->type != AG_TASK_COLLECT || !h ||
        (rc = ag__obs_get_json(ob, t, h, "a collection's note on its harness's exit", &note)))
      continue;
    ag_str w = AG_STR_INIT;
    ag_str_printf(&w, "collection %d: %s", c->id,
                  json_string_value(json_object_get(note, "warning")));
    rc = w.oom ? AG_ENOMEM : ag_report_warning(r, ag_str_cstr(&w));
    ag_str_release(&w);
    json_decref(note);
  }
  if (!rc) {
    ag_report_attach_plan(r, cx->plan);
    json_t *j = ag_report_to_json(r);
    rc = ag__obs_put_json(ob, t, "report", j, "report");
    json_decref(j);
  }
  ag_report_free(r);
  ag_str_release(&qs);
  return rc;
}

/* A scope's role must be one the module's role markers name (the discovery
 * lists them; one recorded before it did is not checked). */
static int check_role(obs *ob, ag_task *control, const json_t *disc) {
  const char *want = ob->query.scope.role;
  const json_t *roles = json_object_get(disc, "roles");
  if (!want[0] || !json_is_array(roles))
    return 0;
  ag_str known = AG_STR_INIT;
  for (size_t i = 0; i < json_array_size(roles); i++) {
    const char *r = json_string_value(json_array_get(roles, i));
    if (r && !strcmp(r, want)) {
      ag_str_release(&known);
      return 0;
    }
    ag_str_printf(&known, "%s%s", i ? ", " : "", r ? r : "");
  }
  int rc = json_array_size(roles)
               ? ag__obs_fail(control, AG_EINVAL,
                              "unknown role '%s' in the scope: the roles of %s are %s", want,
                              ob->spec->name, ag_str_cstr(&known))
               : ag__obs_fail(control, AG_EINVAL,
                              "unknown role '%s' in the scope: %s has no role markers (ARGUS_ROLE)",
                              want, ob->spec->name);
  ag_str_release(&known);
  return rc;
}

/* Does a signal of the plan need an evidence kind that adapter b provides? */
static int plan_needs(const obs *ob, const ag_plan *p, const ag_backend *b) {
  for (size_t i = 0; i < p->tasks.n; i++) {
    const char *sig = json_string_value(json_object_get(p->tasks.v[i]->config, "signal"));
    const ag_recipe *r = sig ? ag_recipe_find(sig) : NULL;
    if (r && ag_backend_for_evidence(ob->backends, r->evidence) == b)
      return 1;
  }
  return 0;
}

/* The Control task's expansion: the scope's role checked against the
 * module's, then the expansion of each backend adapter whose evidence a
 * signal of the plan needs (the probe backend: one branch per (async site,
 * iteration) of each per-instance signal, ag_probe_expand, docs/probes.md). */
static int expand(ag_plan *p, ag_task *control, void *ud) {
  obs *ob = ud;
  if (strcmp(control->op, "discover")) { /* an adapter's own Control task (probe: count) */
    const ag_backend *own = ag_backend_for_op(ob->backends, control->op);
    return own && own->control_done ? own->control_done(ob, p, control) : 0;
  }
  const ag_backend_set *bs = ob->backends;
  int need = ob->query.scope.role[0] != 0;
  for (size_t i = 0; !need && i < bs->backends.n; i++)
    need = bs->backends.v[i]->expand && plan_needs(ob, p, bs->backends.v[i]);
  if (!need)
    return 0;
  json_t *disc = NULL;
  int rc =
      ag__obs_get_json(ob, control, json_string_value(json_object_get(control->outputs, "regions")),
                       "the discovery", &disc);
  if (rc)
    return rc;
  ag_str why = AG_STR_INIT;
  rc = check_role(ob, control, disc);
  for (size_t i = 0; !rc && i < bs->backends.n; i++) {
    const ag_backend *b = bs->backends.v[i];
    if (b->expand && plan_needs(ob, p, b) && (rc = b->expand(p, control, disc, &why)))
      ag__obs_fail(control, rc, "%s", ag_str_cstr(&why));
  }
  ag_str_release(&why);
  json_decref(disc);
  return rc;
}

/* The driver's generic executors; the backend adapters add theirs and the
 * variant transforms (ex_variant) of their variants (argus/backend.h). */
static const ag_executor generic_executors[] = {
    {"discover", ex_discover},
    {"compile", ex_compile},
    {"collect", ex_collect},
    {"report", ex_report},
};

/* ------------------------------------------------ memoization (store) */

/* The environment variables a harness sees that are part of a collection's
 * key (docs/observe.md, "What a collection's key holds"): the CUDA driver's
 * and runtime's settings, the dynamic loader's, and those of the Python,
 * Torch and Triton stacks a harness may run; ARGUS_KEY_ENV names more
 * (comma-separated). Argus's own ARGUS_* variables are set per run and are
 * never inherited into a key. */
static const char *const key_env_prefixes[] = {"CUDA_",  "NVIDIA_", "CUBLAS",  "CUDNN_",
                                               "NCCL_",  "LD_",     "OMP_",    "PYTHON",
                                               "TORCH_", "PYTORCH_", "TRITON_", NULL};

static int key_env(const char *name, size_t n, const char *extra) {
  for (const char *const *p = key_env_prefixes; *p; p++)
    if (n >= strlen(*p) && !strncmp(name, *p, strlen(*p)))
      return 1;
  for (const char *e = extra; e && *e;) {
    size_t k = strcspn(e, ",");
    if (k == n && !strncmp(e, name, n))
      return 1;
    e += k + (e[k] == ',');
  }
  return 0;
}

/* The content hash of a regular file, or 0 (not a file: no hash). A file
 * over 64 MiB (a large input) stands for itself by size and modification
 * time instead, so a key never reads gigabytes. */
static int file_hash(const char *path, char hex[65]) {
  struct stat sb;
  char *data = NULL;
  size_t len = 0;
  if (stat(path, &sb) || !S_ISREG(sb.st_mode))
    return 0;
  if (sb.st_size > (64 << 20)) {
    snprintf(hex, 65, "size %lld mtime %lld.%09ld", (long long)sb.st_size,
             (long long)sb.st_mtim.tv_sec, (long)sb.st_mtim.tv_nsec);
    return 1;
  }
  if (ag_file_read(path, &data, &len))
    return 0;
  int ok = ag_sha256_hex(data, len, hex) == 0;
  ag_free(data);
  return ok;
}

/* A harness argv word as the harness's process finds it: the program as
 * ag_proc_run finds it, any other word with '/' relative to the spec's
 * directory (where the harness runs). Owned, or NULL. */
static char *harness_path(const char *dir, const char *w, int program) {
  if (program)
    return ag_which(w);
  if (!strchr(w, '/'))
    return NULL;
  ag_str p = AG_STR_INIT;
  if (w[0] == '/' || !dir)
    ag_str_puts(&p, w);
  else
    ag_str_printf(&p, "%s/%s", dir, w);
  return p.oom ? (ag_str_release(&p), NULL) : ag_str_detach(&p);
}

/* What, besides the variant, decides what a collection measures: the
 * harness argv, the content of the harness program, of every argv word that
 * names a file (a script, an input) and of the run library, the directory it
 * runs in, --records, --timeout and the environment variables above. */
static json_t *harness_identity(const obs *ob) {
  const ag_spec *sp = ob->spec;
  json_t *h = json_object(), *argv = json_array(), *files = json_object(), *env = json_object();
  char hex[65];
  for (int i = 0; sp->run && sp->run[i]; i++) {
    json_array_append_new(argv, json_string(sp->run[i]));
    char *path = harness_path(sp->dir, sp->run[i], i == 0);
    if (path && file_hash(path, hex))
      json_object_set_new(files, sp->run[i], json_string(hex));
    ag_free(path);
  }
  if (sp->run_library) {
    char *path = strchr(sp->run_library, '/') ? ag_strdup(sp->run_library)
                                              : ag_which(sp->run_library);
    if (path && file_hash(path, hex))
      json_object_set_new(files, "run_library", json_string(hex));
    ag_free(path);
  }
  extern char **environ;
  const char *extra = getenv("ARGUS_KEY_ENV");
  for (char **e = environ; e && *e; e++) {
    const char *eq = strchr(*e, '=');
    if (!eq || !key_env(*e, (size_t)(eq - *e), extra))
      continue;
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(eq - *e), *e);
    json_object_set_new(env, name, json_string(eq + 1));
  }
  if (sp->python) { /* the script, its arguments, the interpreter, Triton's kernel */
    json_array_append_new(argv, json_string(ag_spec_python_exe()));
    json_array_append_new(argv, json_string(sp->python));
    for (int i = 0; i < sp->npython_args; i++)
      json_array_append_new(argv, json_string(sp->python_args[i]));
    if (file_hash(sp->python, hex))
      json_object_set_new(files, "python", json_string(hex));
    char *exe = harness_path(sp->dir, ag_spec_python_exe(), 1);
    if (exe && file_hash(exe, hex))
      json_object_set_new(files, "interpreter", json_string(hex));
    ag_free(exe);
    json_object_set_new(h, "triton", json_pack("{s:s?,s:s?,s:s?}", "kernel", sp->python_kernel,
                                               "key", sp->triton_key, "version",
                                               sp->triton_version));
  }
  json_object_set_new(h, "argv", argv);
  json_object_set_new(h, "files", files);
  json_object_set_new(h, "env", env);
  json_object_set_new(h, "run_library", sp->run_library ? json_string(sp->run_library)
                                                        : json_null());
  json_object_set_new(h, "cwd", json_string(sp->dir ? sp->dir : ""));
  json_object_set_new(h, "records", json_integer((json_int_t)ob->o->records_per_warp));
  json_object_set_new(h, "timeout_s", json_real(ob->o->timeout_s > 0 ? ob->o->timeout_s : 300));
  return h;
}

/* Outputs that record how a step ran, not what it made (the compiler's log
 * with its own timing, the resource report that quotes it, the harness's
 * output): never part of a dependent's key, so identical requests make
 * identical keys. A dependent that reads one is keyed by the key of the
 * task that made it instead ("via"), which holds everything it depends on. */
static int key_input(const char *name) {
  return strcmp(name, "log") && strcmp(name, "resources");
}

/* The workspace's task identity: type, op + configuration + program, the
 * transforms' version (a newer probe never reuses an older one's variants or
 * evidence), and the artifacts the dependencies produced. */
static int store_spec(obs *ob, const ag_task *t, json_t **cfg, const char **ins, size_t *nin) {
  *cfg = json_pack("{s:s,s:O,s:s,s:i}", "op", t->op, "config", t->config, "program",
                   t->program ? t->program : "", "xform", AG_VARIANT_XFORM_VERSION);
  if (*cfg && t->type == AG_TASK_COLLECT && ob->harness)
    json_object_set(*cfg, "harness", ob->harness);
  if (*cfg && !strcmp(t->op, "compile")) /* the compiler, its options, production */
    json_object_set(*cfg, "build", ob->build);
  *nin = 0;
  json_t *via = json_array(); /* what a left-out output depends on: its task's key */
  for (size_t i = 0; i < t->deps.n; i++) {
    const ag_task *d = ag_plan_task(ob->plan, t->deps.v[i]);
    const char *k;
    json_t *v;
    int left_out = 0;
    json_object_foreach(d->outputs, k, v) {
      if (!json_is_string(v))
        continue;
      if (!key_input(k))
        left_out = 1;
      else if (*nin < 64)
        ins[(*nin)++] = json_string_value(v);
    }
    if (left_out && d->key[0])
      json_array_append_new(via, json_string(d->key));
  }
  if (*cfg && json_array_size(via))
    json_object_set(*cfg, "via", via);
  json_decref(via);
  return *cfg ? 0 : AG_ENOMEM;
}

/* Records that t starts in the workspace, or finds how its key ended. */
static int memo_begin(obs *ob, const ag_task *t, ag_store_claim *cl, char key[65]) {
  json_t *cfg;
  const char *ins[64];
  size_t nin;
  memset(cl, 0, sizeof *cl);
  if (store_spec(ob, t, &cfg, ins, &nin))
    return AG_ENOMEM;
  ag_store_task_spec sp = {t->type, cfg, ins, nin, t->needs_gpu ? "gpu" : "cpu", ob->query_id,
                           NULL};
  int rc = ag_store_task_begin(ob->st, &sp, 0, cl);
  if (rc == 0 || rc == AG_EBUSY)
    ag_store_task_key(&sp, key);
  json_decref(cfg);
  return rc;
}

static json_t *claim_outputs(const ag_store_claim *cl) {
  json_t *o = json_object();
  for (size_t i = 0; o && i < cl->noutputs; i++)
    json_object_set_new(o, cl->outputs[i].name, json_string(cl->outputs[i].hash));
  return o;
}

static int memo_lookup(void *ud, const ag_task *ct, json_t **outputs) {
  obs *ob = ud;
  ag_task *t = (ag_task *)ct;
  if (!strcmp(t->op, "report")) /* joined afresh every time: it shows this run's plan */
    return 0;
  ag_store_claim cl;
  int hit = 0, rc = memo_begin(ob, t, &cl, t->key);
  if (rc == 0 && cl.status == AG_STORE_TASK_OK) {
    *outputs = claim_outputs(&cl);
    hit = 1;
  } else if (rc == 0) {
    t->memo_id = cl.task_id;
  } else if (rc == AG_EBUSY && cl.task_id > 0) { /* an identical request runs it now */
    t->memo_busy = cl.task_id;
  }
  ag_free(cl.outputs);
  return hit;
}

/* Waits for another process's attempt of t's key (memo_lookup found it
 * running), so identical concurrent observes run each task once: that
 * attempt's success is t's result (returns 1); its failure is t's failure,
 * with its reason (returns 1 with t->error set and no outputs). When its
 * process dies, t is claimed and runs here (returns 0). Gives up waiting
 * (and runs t unrecorded) after the harness timeout and a minute. Called in
 * a worker thread. */
static int memo_wait(void *ud, ag_task *t, json_t **outputs) {
  obs *ob = ud;
  double limit = (ob->o->timeout_s > 0 ? ob->o->timeout_s : 300) + 60;
  uint64_t start = ag_now_ns(), until = start + (uint64_t)(limit * 1e9), probe = start;
  int64_t other = t->memo_busy;
  long nap_ms = 5;
  t->memo_busy = 0;
  while (ag_now_ns() < until) {
    struct timespec ts = {0, nap_ms * 1000000L};
    nanosleep(&ts, NULL);
    nap_ms = nap_ms < 100 ? nap_ms * 2 : 100;
    ag_store_task rec;
    if (ag_store_task_get(ob->st, other, &rec))
      return 0;
    ag_store_task_status st = rec.status;
    int abandoned = rec.error && !strncmp(rec.error, "abandoned", 9);
    if (st == AG_STORE_TASK_OK) {
      ag_store_claim cl = {0};
      cl.outputs = rec.outputs;
      cl.noutputs = rec.noutputs;
      *outputs = claim_outputs(&cl);
    } else if (st == AG_STORE_TASK_FAILED && !abandoned) {
      ag_str e = AG_STR_INIT;
      ag_str_printf(&e, "the identical run t%lld of another observe failed: %s",
                    (long long)other, rec.error ? rec.error : "no reason recorded");
      ag_free(t->error);
      t->error = ag_str_detach(&e);
    }
    ag_store_task_release(&rec);
    if (st == AG_STORE_TASK_OK || (st == AG_STORE_TASK_FAILED && !abandoned))
      return 1;
    if (st == AG_STORE_TASK_FAILED || ag_now_ns() - probe > 1000000000ull) {
      /* abandoned, or still running: is its process alive? (begin claims
       * the key when it is not) */
      probe = ag_now_ns();
      ag_store_claim cl;
      char key[65];
      int rc = memo_begin(ob, t, &cl, key), hit = rc == 0 && cl.status == AG_STORE_TASK_OK;
      if (hit)
        *outputs = claim_outputs(&cl);
      else if (rc == 0)
        t->memo_id = cl.task_id;
      ag_free(cl.outputs);
      if (rc != AG_EBUSY)
        return hit;
      other = cl.task_id > 0 ? cl.task_id : other;
    }
  }
  AG_LOG(AG_LOG_WARN, "task '%s' waited %.0f s for another process's identical run: runs again",
         t->label, limit);
  return 0;
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

/* A region named with a demangled kernel spelling ("gemm::sgemm<128, 128,
 * 8, float>/loads"): the plan is rebuilt for the mangled name the PTX uses. */
static int resolve_region(const ag_str *ptx, ag_query *q, ag_diags *d, ag_plan **p,
                          char **region) {
  ag_ptx_module *m = NULL;
  ag_diags pd;
  ag_diags_init(&pd);
  int rc = 0;
  if (ag_ptx_parse(ptx->p, ptx->len, "module", &pd, &m) == 0 &&
      (rc = ag_ptx_resolve_region(m, q->region, region)) == 0 && strcmp(*region, q->region)) {
    q->region = *region;
    ag_plan_free(*p);
    *p = NULL;
    rc = ag_plan_build(q, "", d, p);
  }
  ag_ptx_module_free(m); /* (a parse error is discovery's to report) */
  ag_diags_release(&pd);
  return rc;
}

/* How the variants are compiled: the ptxas options of the user's build of
 * the spec's module (nvcc -dryrun with the spec's flags; a PTX module gets
 * nvcc's default for its .target), and the build's identity. */
static int build_options(obs *ob, const char *ptx, size_t len, ag_diags *d) {
  char target[16];
  int rc = ag_jit_target(ptx, len, target);
  if (rc) {
    ag_diags_add(d, AG_SEV_ERROR, ob->spec->name, 0, 0, NULL, 0,
                 "the module's PTX has no .target directive: cannot tell which GPU to compile "
                 "for");
    return AG_EPARSE;
  }
  ag_str as = AG_STR_INIT;
  if (ob->spec->cuda) {
    if ((rc = ag_spec_ptxas_options(ob->spec->cuda, (const char *const *)ob->spec->flags,
                                    target, d, &ob->ptxas_opts)))
      return rc;
    ag_str_printf(&as, "as nvcc -cubin");
    for (int i = 0; i < ob->spec->nflags; i++)
      ag_str_printf(&as, " %s", ob->spec->flags[i]);
    if (!ob->spec->nflags)
      ag_str_printf(&as, " -arch=sm_90a");
    ag_str_printf(&as, " -DARGUS_MARKERS=1 compiles it");
  } else if (ob->spec->python && ob->spec->triton_ptxas) {
    /* as Triton assembles its PTX: its ptxas, its options (docs/triton.md) */
    const ag_spec *sp = ob->spec;
    int n = 0;
    while (sp->triton_ptxas_opts[n])
      n++;
    if (!(ob->ptxas_opts = ag_calloc((size_t)n + 1, sizeof *ob->ptxas_opts))) {
      ag_str_release(&as);
      return AG_ENOMEM;
    }
    for (int i = 0; i < n; i++)
      if (!(ob->ptxas_opts[i] = ag_strdup(sp->triton_ptxas_opts[i]))) {
        ag_str_release(&as);
        return AG_ENOMEM;
      }
    ob->ptxas = sp->triton_ptxas;
    ag_str_printf(&as, "as Triton %s assembles it (%s", sp->triton_version, sp->triton_ptxas);
    for (int i = 0; i < n; i++)
      ag_str_printf(&as, " %s", sp->triton_ptxas_opts[i]);
    ag_str_puts(&as, ")");
  } else if (ob->spec->python) {
    ag_str_printf(&as, "as nvcc -arch=%s compiles PTX (%s)", target,
                  ob->spec->triton_build_note ? ob->spec->triton_build_note
                                              : "Triton's build is not known");
  } else {
    ag_str_printf(&as, "as nvcc -arch=%s compiles PTX", target);
  }
  char **full = NULL;
  if ((rc = ag_jit_options(ptx, len, NULL, (const char *const *)ob->ptxas_opts, &full))) {
    ag_str_release(&as);
    return rc;
  }
  json_t *opts = json_array();
  for (int i = 0; full[i]; i++)
    json_array_append_new(opts, json_string(full[i]));
  ag_jit_options_free(full);
  /* production: the file's hash; or the markers-off build of the module,
   * which the program's PTX (in every memo key) already identifies */
  char hash[65] = "";
  if (!ob->spec->production && ob->spec->cuda)
    snprintf(hash, sizeof hash, "markers-off build");
  if (ob->spec->production) {
    char *data;
    size_t plen;
    if ((rc = ag_file_read(ob->spec->production, &data, &plen))) {
      ag_diags_add(d, AG_SEV_ERROR, ob->spec->path, 0, 0, NULL, 0,
                   "cannot read the production build '%s': %s", ob->spec->production,
                   ag_strerror(rc));
      json_decref(opts);
      ag_str_release(&as);
      return rc;
    }
    rc = ag_sha256_hex(data, plen, hash);
    ag_free(data);
  }
  char ver[64];
  ag_jit_tool_version(ob->ptxas, ver);
  ob->build = json_pack("{s:s,s:o,s:s,s:s?,s:s?}", "compiler", ver, "options", opts, "as",
                        ag_str_cstr(&as), "production", hash[0] ? hash : NULL, "ptxas",
                        ob->ptxas);
  ag_str_release(&as);
  return rc ? rc : ob->build ? 0 : AG_ENOMEM;
}

int ag_observe(const ag_observe_opts *o, ag_diags *d, ag_observe_result *res) {
  memset(res, 0, sizeof *res);
  obs ob;
  memset(&ob, 0, sizeof ob);
  ob.o = o;
  ag_str ptx = AG_STR_INIT, tmp = AG_STR_INIT;
  ag_plan *p = NULL;
  char *region = NULL;
  ag_backend_set set;
  memset(&set, 0, sizeof set);
  int rc;
  ag_query q = {o->region, o->signals, o->nsignals, {{0}, {{0}}}};
  if ((rc = ag_scope_parse(o->scope, &q.scope, d)))
    goto out;
  ag_launch_sel lsel;
  if ((rc = ag_launch_sel_parse(o->launches, &lsel, d)))
    goto out;
  /* the backend adapters and the recipe rows agree (a build that breaks
   * the contract says so before it plans) */
  if ((rc = ag_backend_set_init(&set, ag_backends_builtin(), -1, generic_executors,
                                sizeof generic_executors / sizeof generic_executors[0], ex_variant,
                                d)) ||
      (rc = ag_backend_set_check(&set, ag_recipe_builtin(), d)))
    goto out;
  ob.backends = &set;
  /* plan first: a bad query fails before anything is built */
  if ((rc = ag_plan_build(&q, "", d, &p)))
    goto out;
  if ((rc = ag_spec_load(o->spec, d, &ob.spec)) || (rc = ag_spec_python_discover(ob.spec, d)))
    goto out;
  if (!(ob.harness = harness_identity(&ob))) {
    rc = AG_ENOMEM;
    goto out;
  }
  ag_trace_begin("build module");
  rc = module_ptx(ob.spec, d, &ptx);
  ag_trace_end("build module");
  if (rc || (rc = resolve_region(&ptx, &q, d, &p, &region)) ||
      (rc = build_options(&ob, ptx.p, ptx.len, d)))
    goto out;
  /* each backend puts the query's options into its tasks (so their keys) */
  for (size_t i = 0; i < set.backends.n; i++)
    if (set.backends.v[i]->bind && (rc = set.backends.v[i]->bind(o, p, d)))
      goto out;
  if ((rc = ag_store_open(o->workspace, AG_STORE_CREATE, &ob.st))) {
    ag_diags_add(d, AG_SEV_ERROR, o->workspace, 0, 0, NULL, 0, "cannot open the workspace: %s",
                 ag_store_errmsg());
    goto out;
  }
  /* the quick check (docs/workspace.md "Health"): never write evidence into a
   * workspace known to be damaged, unless told to */
  if ((rc = ag_store_health(ob.st))) {
    if (!o->ignore_damage) {
      ag_diags_add(d, AG_SEV_ERROR, o->workspace, 0, 0, NULL, 0,
                   "refusing to write to the workspace: %s (--ignore-damage writes anyway)",
                   ag_store_errmsg());
      goto out;
    }
    ag_diags_add(d, AG_SEV_WARNING, o->workspace, 0, 0, NULL, 0,
                 "writing to a damaged workspace (--ignore-damage): %s", ag_store_errmsg());
    rc = 0;
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
                    .execs = set.execs.v,
                    .nexecs = set.execs.n,
                    .ud = &ob,
                    .memo = {memo_lookup, memo_publish, &ob, memo_wait},
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
  json_decref(ob.harness);
  ag_spec_options_free(ob.ptxas_opts);
  json_decref(ob.build);
  ag_free(ob.rundir);
  ag_str_release(&ptx);
  ag_str_release(&tmp);
  ag_free(region);
  ag_backend_set_release(&set);
  return rc;
}
