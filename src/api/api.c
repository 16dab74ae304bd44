/*
 * api.c — the client API (argus/argus.h) over the library's modules: the
 * same calls the argus CLI makes (ag_observe for plan and observe, the store
 * for workspaces, refs and versions, the tile checker), with options as JSON
 * and every failure recorded as the calling thread's last error (a message
 * and the diagnostics as JSON). Handles own what they return; nothing here
 * prints or exits. Called once per client request; the work is in the
 * modules.
 */
#include "argus/argus.h"

#include "argus/core.h"
#include "argus/report.h"
#include "argus/store.h"
#include "argus/tile_check.h"
#if ARGUS_HAVE_OBSERVE
#include "argus/observe.h"
#endif

#include <stdlib.h>
#include <string.h>

/* The public codes are the library's, frozen (argus.h). */
#define AG__API_CODE(name, text) _Static_assert((int)ARGUS_E##name == (int)AG_E##name, "ARGUS_E" #name);
AG_ERRNO_MAP(AG__API_CODE)
#undef AG__API_CODE
_Static_assert((int)ARGUS_EFAILED > (int)AG__ERR_LAST, "ARGUS_EFAILED is outside the AG_E* range");

/* ------------------------------------------------------------- errors */
static _Thread_local char *last_msg;
static _Thread_local char *last_diags;

/* A JSON value as owned text (ag_free), or NULL when out of memory. */
static char *dump(const json_t *j, size_t flags) {
  char *s = j ? json_dumps(j, flags | JSON_ENCODE_ANY) : NULL;
  char *o = s ? ag_strdup(s) : NULL;
  free(s);
  return o;
}

/* Records the thread's last error: the message (and the diagnostics of d,
 * which may be NULL). Returns rc. */
static int fail(int rc, const ag_diags *d, const char *fmt, ...) AG_PRINTF(3, 4);
static int fail(int rc, const ag_diags *d, const char *fmt, ...) {
  ag_str m = AG_STR_INIT;
  va_list ap;
  va_start(ap, fmt);
  ag_str_vprintf(&m, fmt, ap);
  va_end(ap);
  ag_free(last_msg);
  last_msg = ag_str_detach(&m);
  ag_free(last_diags);
  last_diags = NULL;
  if (d && d->items.n) {
    json_t *j = ag_diags_to_json(d);
    last_diags = dump(j, 0);
    json_decref(j);
  }
  return rc;
}

/* The first error diagnostic's message, for a one-line error. */
static const char *first_error(const ag_diags *d) {
  for (size_t i = 0; i < d->items.n; i++)
    if (d->items.v[i].sev == AG_SEV_ERROR)
      return d->items.v[i].msg;
  return d->items.n ? d->items.v[0].msg : ag_strerror(AG_EINVAL);
}

int argus_api_version(void) { return ARGUS_API_VERSION; }
const char *argus_version(void) { return AG_VERSION_STRING; }
const char *argus_strerror(int code) {
  return code == ARGUS_EFAILED ? "the work ran and failed" : ag_strerror(code);
}
const char *argus_error_name(int code) {
  static _Thread_local char buf[48];
  if (code == ARGUS_EFAILED || code == 0)
    return code ? "ARGUS_EFAILED" : "ARGUS_OK";
  snprintf(buf, sizeof buf, "ARGUS_%s", ag_err_name(code) + 3); /* "AG_ENOMEM" */
  return buf;
}
const char *argus_errmsg(void) { return last_msg ? last_msg : ""; }
const char *argus_errdiags(void) { return last_diags ? last_diags : "[]"; }
void argus_free(void *p) { ag_free(p); }

static int out_json(json_t *j, char **out) {
  *out = dump(j, 0);
  json_decref(j);
  return *out ? 0 : fail(ARGUS_ENOMEM, NULL, "out of memory");
}

#define NEED(p, name)                                                                          \
  do {                                                                                         \
    if (!(p))                                                                                  \
      return fail(ARGUS_EINVAL, NULL, "'%s' must not be NULL", name);                        \
  } while (0)

/* ------------------------------------------------------------ options */
typedef enum { OPT_BOOL, OPT_NUM, OPT_POSINT, OPT_STR, OPT_STRLIST, OPT_INTMAP } opt_type;
typedef struct opt_def {
  const char *name;
  opt_type type;
} opt_def;

static const char *type_text(opt_type t) {
  static const char *const n[] = {"true or false", "a number", "a positive integer",
                                  "a string", "an array of strings",
                                  "an object of integers"};
  return n[t];
}

static int type_ok(const json_t *v, opt_type t) {
  size_t i;
  const char *k;
  json_t *e;
  switch (t) {
  case OPT_BOOL: return json_is_boolean(v);
  case OPT_NUM: return json_is_number(v) && json_number_value(v) > 0;
  case OPT_POSINT: return json_is_integer(v) && json_integer_value(v) > 0;
  case OPT_STR: return json_is_string(v);
  case OPT_STRLIST:
    if (!json_is_array(v))
      return 0;
    json_array_foreach(v, i, e) if (!json_is_string(e)) return 0;
    return 1;
  case OPT_INTMAP:
    if (!json_is_object(v))
      return 0;
    json_object_foreach((json_t *)v, k, e) if (!json_is_integer(e)) return 0;
    return 1;
  }
  return 0;
}

/* Parses options_json against defs: *out an object (new reference) whose
 * keys are known and whose values have their types. */
static int opts_parse(const char *text, const char *fn, const opt_def *defs, json_t **out) {
  *out = NULL;
  if (!text || !*text) {
    *out = json_object();
    return *out ? 0 : fail(ARGUS_ENOMEM, NULL, "out of memory");
  }
  ag_diags d;
  ag_diags_init(&d);
  json_t *j = NULL;
  int rc = ag_json_load_str(text, "options", &d, &j);
  if (rc) {
    rc = fail(ARGUS_EINVAL, &d, "%s: the options are not JSON: %s", fn, first_error(&d));
    ag_diags_release(&d);
    return rc;
  }
  ag_diags_release(&d);
  if (!json_is_object(j)) {
    json_decref(j);
    return fail(ARGUS_EINVAL, NULL, "%s: the options must be a JSON object", fn);
  }
  const char *k;
  json_t *v;
  json_object_foreach(j, k, v) {
    const opt_def *o = defs;
    while (o->name && strcmp(o->name, k))
      o++;
    if (!o->name) {
      ag_str known = AG_STR_INIT;
      for (o = defs; o->name; o++)
        ag_str_printf(&known, "%s%s", o == defs ? "" : ", ", o->name);
      rc = fail(ARGUS_EINVAL, NULL, "%s: unknown option '%s' (known: %s)", fn, k,
                ag_str_cstr(&known));
      ag_str_release(&known);
      json_decref(j);
      return rc;
    }
    if (!type_ok(v, o->type)) { /* the message first: k is j's */
      rc = fail(ARGUS_EINVAL, NULL, "%s: option '%s' takes %s", fn, k, type_text(o->type));
      json_decref(j);
      return rc;
    }
  }
  *out = j;
  return 0;
}

/* ---------------------------------------------------------- workspace */
struct argus_ws {
  char *path;
  ag_store *st;
};

/* A failed store call: "<what>: <the store's message>". */
static int store_fail(int rc, const char *fmt, ...) AG_PRINTF(2, 3);
static int store_fail(int rc, const char *fmt, ...) {
  ag_str w = AG_STR_INIT;
  va_list ap;
  va_start(ap, fmt);
  ag_str_vprintf(&w, fmt, ap);
  va_end(ap);
  const char *m = ag_store_errmsg();
  rc = fail(rc, NULL, "%s: %s", ag_str_cstr(&w), m && *m ? m : ag_strerror(rc));
  ag_str_release(&w);
  return rc;
}

int argus_ws_open(const char *path, unsigned flags, argus_ws **out) {
  NEED(out, "out");
  *out = NULL;
  if (!path)
    path = getenv("ARGUS_WORKSPACE") && *getenv("ARGUS_WORKSPACE") ? getenv("ARGUS_WORKSPACE")
                                                                   : ".argus";
  if (flags & ~(unsigned)ARGUS_WS_CREATE)
    return fail(ARGUS_EINVAL, NULL, "argus_ws_open: unknown flags 0x%x", flags);
  argus_ws *ws = ag_calloc(1, sizeof *ws);
  if (!ws || !(ws->path = ag_strdup(path))) {
    ag_free(ws);
    return fail(ARGUS_ENOMEM, NULL, "out of memory");
  }
  int rc = ag_store_open(path, flags & ARGUS_WS_CREATE ? AG_STORE_CREATE : 0, &ws->st);
  if (rc) {
    rc = store_fail(rc, "cannot open the workspace '%s'", path);
    argus_ws_close(ws);
    return rc;
  }
  *out = ws;
  return 0;
}

void argus_ws_close(argus_ws *ws) {
  if (!ws)
    return;
  ag_store_close(ws->st);
  ag_free(ws->path);
  ag_free(ws);
}

const char *argus_ws_path(const argus_ws *ws) { return ws ? ws->path : ""; }

int argus_ws_refs(argus_ws *ws, char **json_out) {
  NEED(ws, "ws");
  NEED(json_out, "json_out");
  *json_out = NULL;
  ag_ref *r = NULL;
  size_t n = 0;
  int rc = ag_store_refs(ws->st, &r, &n);
  if (rc)
    return store_fail(rc, "cannot list the refs");
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(a, ag_store_ref_json(&r[i]));
  ag_free(r);
  return out_json(a, json_out);
}

int argus_ws_versions(argus_ws *ws, size_t limit, char **json_out) {
  NEED(ws, "ws");
  NEED(json_out, "json_out");
  *json_out = NULL;
  ag_list_opts lo = {limit, 0, NULL};
  ag_version *v = NULL;
  size_t n = 0;
  int rc = ag_store_versions(ws->st, &lo, &v, &n);
  if (rc)
    return store_fail(rc, "cannot list the versions");
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(a, ag_store_version_json(&v[i]));
  ag_store_versions_free(v, n);
  return out_json(a, json_out);
}

/* The version `id` names ("v3", a ref to a version). */
static int resolve_version(argus_ws *ws, const char *id, int64_t *vid) {
  ag_obj o;
  int rc = ag_store_resolve(ws->st, id, &o);
  if (rc)
    return store_fail(rc, "no version '%s' in '%s'", id, ws->path);
  if (o.kind != AG_OBJ_VERSION)
    return fail(ARGUS_EINVAL, NULL, "'%s' is not a program version (v12 or a ref to one)", id);
  *vid = o.id;
  return 0;
}

int argus_ws_version(argus_ws *ws, const char *id, char **json_out) {
  NEED(ws, "ws");
  NEED(id, "id");
  NEED(json_out, "json_out");
  *json_out = NULL;
  int64_t vid = 0;
  int rc = resolve_version(ws, id, &vid);
  if (rc)
    return rc;
  ag_version v;
  int64_t *chain = NULL;
  size_t n = 0;
  if ((rc = ag_store_version_get(ws->st, vid, &v)))
    return store_fail(rc, "cannot read the version");
  if ((rc = ag_store_version_ancestry(ws->st, vid, &chain, &n))) {
    ag_store_version_release(&v);
    return store_fail(rc, "cannot read the version's ancestry");
  }
  json_t *j = ag_store_version_json(&v);
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(a, json_integer(chain[i]));
  json_object_set_new(j, "ancestry", a);
  ag_free(chain);
  ag_store_version_release(&v);
  return out_json(j, json_out);
}

static int ref_set(argus_ws *ws, const char *name, const ag_obj *t) {
  if (!ag_store_ref_name_valid(name))
    return fail(ARGUS_EINVAL, NULL,
                "invalid ref name '%s': 1..128 of [A-Za-z0-9._@/:+-], not v<N>, t<N>, q<N> or "
                "hex only",
                name);
  int rc = ag_store_ref_set(ws->st, name, t);
  return rc ? store_fail(rc, "cannot set the ref") : 0;
}

int argus_ws_ref_set(argus_ws *ws, const char *name, const char *target) {
  NEED(ws, "ws");
  NEED(name, "name");
  NEED(target, "target");
  ag_obj t;
  int rc = ag_store_resolve(ws->st, target, &t);
  if (rc)
    return store_fail(rc, "no '%s' in '%s'", target, ws->path);
  if (t.kind != AG_OBJ_VERSION && t.kind != AG_OBJ_ARTIFACT)
    return fail(ARGUS_EINVAL, NULL, "a ref points at a version (v12) or an artifact, not '%s'",
                target);
  return ref_set(ws, name, &t);
}

int argus_ws_fork(argus_ws *ws, const char *from, const char *ptx_path, const char *transform,
                  const char *ref, int64_t *version_out) {
  NEED(ws, "ws");
  NEED(from, "from");
  if (version_out)
    *version_out = 0;
  if (ref && !ag_store_ref_name_valid(ref))
    return ref_set(ws, ref, NULL); /* the invalid-name error */
  int64_t parent = 0;
  int rc = resolve_version(ws, from, &parent);
  if (rc)
    return rc;
  ag_version pv;
  if ((rc = ag_store_version_get(ws->st, parent, &pv)))
    return store_fail(rc, "cannot read the version");
  char module[AG_STORE_HASH_LEN + 1];
  memcpy(module, pv.module, sizeof module);
  json_t *origin = json_loads(pv.origin ? pv.origin : "{}", 0, NULL);
  ag_store_version_release(&pv);
  if (ptx_path) {
    const char *why;
    if ((rc = ag_file_problem(ptx_path, &why))) {
      json_decref(origin);
      return fail(rc, NULL, "cannot read '%s': %s", ptx_path, why);
    }
    ag_put_opts po = {"ptx", 0};
    if ((rc = ag_store_put_file(ws->st, ptx_path, &po, module))) {
      json_decref(origin);
      return store_fail(rc, "cannot store the module");
    }
    if (json_is_object(origin))
      json_object_set_new(origin, "module_file", json_string(ptx_path));
  }
  ag_version_spec vs = {parent, module, transform ? transform : "fork", origin, 0};
  int64_t id = 0;
  rc = ag_store_version_create(ws->st, &vs, &id);
  json_decref(origin);
  if (rc)
    return store_fail(rc, "cannot create the version");
  if (ref) {
    ag_obj t = {AG_OBJ_VERSION, id, ""};
    if ((rc = ref_set(ws, ref, &t)))
      return rc;
  }
  if (version_out)
    *version_out = id;
  return 0;
}

/* ------------------------------------------------------------- reports */
struct argus_report {
  json_t *root;
  char *json;
  char hash[65];
  AG_VEC(argus_value) values;
  AG_VEC(char *) texts; /* value_json and provenance strings */
};

void argus_report_free(argus_report *r) {
  if (!r)
    return;
  for (size_t i = 0; i < r->texts.n; i++)
    ag_free(r->texts.v[i]);
  ag_vec_free(&r->texts);
  ag_vec_free(&r->values);
  json_decref(r->root);
  ag_free(r->json);
  ag_free(r);
}

static const char *str_or(const json_t *o, const char *k, const char *dflt) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : dflt;
}

static const char *keep_text(argus_report *r, const json_t *j) {
  char *s = dump(j ? j : json_null(), 0);
  if (!s || ag_vec_push(&r->texts, s)) {
    ag_free(s);
    return NULL;
  }
  return s;
}

/* A report over its JSON (stolen): its values indexed. */
static int report_new(json_t *root, const char *hash, argus_report **out) {
  *out = NULL;
  const char *schema = json_string_value(json_object_get(root, "schema"));
  if (!schema || strcmp(schema, AG_REPORT_SCHEMA) || !json_is_array(json_object_get(root, "values"))) {
    int rc = fail(ARGUS_EPARSE, NULL, "not an %s report (schema '%s')", AG_REPORT_SCHEMA,
                  schema ? schema : "none");
    json_decref(root); /* after the message: schema is in it */
    return rc;
  }
  argus_report *r = ag_calloc(1, sizeof *r);
  if (!r) {
    json_decref(root);
    return fail(ARGUS_ENOMEM, NULL, "out of memory");
  }
  r->root = root;
  snprintf(r->hash, sizeof r->hash, "%s", hash ? hash : "");
  r->json = dump(root, 0);
  int oom = !r->json;
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(root, "values"), i, v) {
    json_t *num = json_object_get(v, "value");
    argus_value x = {str_or(v, "region", ""), str_or(v, "signal", ""), str_or(v, "stat", ""),
                     str_or(v, "unit", ""), str_or(v, "qual", ""), json_is_number(num),
                     json_is_number(num) ? json_number_value(num) : 0.0,
                     json_is_number(json_object_get(v, "entropy"))
                         ? json_number_value(json_object_get(v, "entropy"))
                         : -1.0,
                     keep_text(r, num), json_string_value(json_object_get(v, "flag")),
                     keep_text(r, json_object_get(v, "provenance"))};
    oom |= !x.value_json || !x.provenance || ag_vec_push(&r->values, x);
  }
  if (oom) {
    argus_report_free(r);
    return fail(ARGUS_ENOMEM, NULL, "out of memory");
  }
  *out = r;
  return 0;
}

int argus_report_read(argus_ws *ws, const char *id, argus_report **out) {
  NEED(out, "out");
  *out = NULL;
  NEED(ws, "ws");
  NEED(id, "id");
  ag_obj o;
  int rc = ag_store_resolve(ws->st, id, &o);
  if (rc)
    return store_fail(rc, "no report '%s' in '%s'", id, ws->path);
  if (o.kind != AG_OBJ_ARTIFACT)
    return fail(ARGUS_EPARSE, NULL, "'%s' is not a report (a report is an artifact)", id);
  void *data = NULL;
  size_t len = 0;
  if ((rc = ag_store_get(ws->st, o.hash, &data, &len)))
    return store_fail(rc, "cannot read the report");
  json_error_t je;
  json_t *root = json_loadb(data, len, 0, &je);
  ag_free(data);
  if (!root)
    return fail(ARGUS_EPARSE, NULL, "'%s' is not a report: %s", id, je.text);
  return report_new(root, o.hash, out);
}

const char *argus_report_json(const argus_report *r) { return r ? r->json : ""; }
const char *argus_report_hash(const argus_report *r) { return r ? r->hash : ""; }
int argus_report_complete(const argus_report *r) {
  return r && json_array_size(json_object_get(r->root, "missing")) == 0;
}
size_t argus_report_nvalues(const argus_report *r) { return r ? r->values.n : 0; }

int argus_report_value(const argus_report *r, size_t i, argus_value *out) {
  NEED(r, "r");
  NEED(out, "out");
  if (i >= r->values.n) {
    memset(out, 0, sizeof *out);
    return fail(ARGUS_ERANGE, NULL, "value %zu of a report with %zu values", i, r->values.n);
  }
  *out = r->values.v[i];
  return 0;
}

int argus_report_text(const argus_report *r, char **text_out) {
  NEED(text_out, "text_out");
  *text_out = NULL;
  NEED(r, "r");
  ag_str s = AG_STR_INIT;
  int rc = ag_report_json_text(r->root, &s);
  if (rc || s.oom) {
    ag_str_release(&s);
    return fail(rc ? rc : ARGUS_ENOMEM, NULL, "cannot render the report");
  }
  *text_out = s.p ? ag_str_detach(&s) : ag_strdup("");
  return 0;
}

/* The summary's budget and token rule are the library's (argus/report.h). */
_Static_assert(ARGUS_SUMMARY_BYTES_PER_TOKEN == AG_SUMMARY_BYTES_PER_TOKEN, "bytes per token");
_Static_assert(ARGUS_SUMMARY_MIN_TOKENS == AG_SUMMARY_MIN_TOKENS, "smallest budget");
_Static_assert(ARGUS_SUMMARY_DEFAULT_TOKENS == AG_SUMMARY_DEFAULT_TOKENS, "default budget");
_Static_assert(ARGUS_SUMMARY_MAX_TOKENS == AG_SUMMARY_MAX_TOKENS, "largest budget");

int argus_report_summary(const argus_report *r, int max_tokens, char **text_out) {
  NEED(text_out, "text_out");
  *text_out = NULL;
  NEED(r, "r");
  if (max_tokens < ARGUS_SUMMARY_MIN_TOKENS || max_tokens > ARGUS_SUMMARY_MAX_TOKENS)
    return fail(ARGUS_ERANGE, NULL,
                "argus_report_summary: max_tokens takes %d to %d tokens, not %d",
                ARGUS_SUMMARY_MIN_TOKENS, ARGUS_SUMMARY_MAX_TOKENS, max_tokens);
  ag_str s = AG_STR_INIT;
  int rc = ag_report_summary(r->root, max_tokens, &s);
  if (rc || s.oom) {
    ag_str_release(&s);
    return fail(rc ? rc : ARGUS_ENOMEM, NULL, "argus_report_summary: cannot summarize the "
                                              "report: %s", ag_strerror(rc ? rc : AG_ENOMEM));
  }
  *text_out = s.p ? ag_str_detach(&s) : ag_strdup("");
  return *text_out ? 0 : fail(ARGUS_ENOMEM, NULL, "out of memory");
}

/* ------------------------------------------------------------- queries */
#if ARGUS_HAVE_OBSERVE
static const opt_def query_opts[] = {{"timeout_s", OPT_NUM},     {"records", OPT_POSINT},
                                     {"launches", OPT_STR},      {"trace", OPT_STR},
                                     {"ignore_damage", OPT_BOOL}, {NULL, 0}};

/* Runs ag_observe for the query (plan_only: argus plan). */
static int run_query(argus_ws *ws, const char *spec, const char *region, const char *signals,
                     const char *scope, const char *options_json, int plan_only,
                     ag_observe_result *res) {
  const char *fn = plan_only ? "argus_plan" : "argus_observe";
  memset(res, 0, sizeof *res);
  NEED(ws, "ws");
  NEED(spec, "spec");
  NEED(region, "region");
  const char *why;
  int rc = ag_file_problem(spec, &why);
  if (rc)
    return fail(rc, NULL, "cannot read '%s': %s", spec, why);
  json_t *op = NULL;
  if ((rc = opts_parse(options_json, fn, query_opts, &op)))
    return rc;
  char *sigcopy = ag_strdup(signals && *signals ? signals : "duration");
  const char *sigs[64];
  int n = 0;
  for (char *t = sigcopy ? strtok(sigcopy, ",") : NULL; t && n < 64; t = strtok(NULL, ","))
    sigs[n++] = t;
  if (!n) {
    ag_free(sigcopy);
    json_decref(op);
    return fail(ARGUS_EINVAL, NULL, "%s: 'signals' names no signal", fn);
  }
  json_t *rec = json_object_get(op, "records");
  if (rec && json_integer_value(rec) < 16) {
    ag_free(sigcopy);
    json_decref(op);
    return fail(ARGUS_EINVAL, NULL, "%s: option 'records' needs a number >= 16", fn);
  }
  ag_observe_opts o = {.spec = spec, .workspace = ws->path, .region = region, .signals = sigs,
                       .nsignals = n, .scope = scope, .plan_only = plan_only,
                       .ignore_damage = json_is_true(json_object_get(op, "ignore_damage")),
                       .ndevices = plan_only ? 0 : -1,
                       .timeout_s = json_number_value(json_object_get(op, "timeout_s")),
                       .records_per_warp = (unsigned)json_integer_value(rec),
                       .launches = json_string_value(json_object_get(op, "launches")),
                       .trace_regions = json_string_value(json_object_get(op, "trace"))};
  ag_diags d;
  ag_diags_init(&d);
  rc = ag_observe(&o, &d, res);
  if (rc)
    fail(rc, &d, "%s: %s", fn, first_error(&d));
  ag_diags_release(&d);
  ag_free(sigcopy);
  json_decref(op);
  return rc;
}

int argus_plan(argus_ws *ws, const char *spec, const char *region, const char *signals,
               const char *scope, const char *options_json, char **plan_json) {
  NEED(plan_json, "plan_json");
  *plan_json = NULL;
  ag_observe_result r;
  int rc = run_query(ws, spec, region, signals, scope, options_json, 1, &r);
  if (rc)
    return rc;
  if ((rc = out_json(ag_plan_to_json(r.plan), plan_json)))
    goto out;
  /* a discovery failure (unknown region, bad markers) is a failed plan */
  const ag_task *f = ag_plan_next_failed(r.plan, NULL);
  if (f)
    rc = fail(ARGUS_EFAILED, NULL, "argus_plan: %s failed: %s", f->op, f->error ? f->error : "");
out:
  ag_observe_result_release(&r);
  return rc;
}

int argus_observe(argus_ws *ws, const char *spec, const char *region, const char *signals,
                  const char *scope, const char *options_json, argus_report **out) {
  NEED(out, "out");
  *out = NULL;
  ag_observe_result r;
  int rc = run_query(ws, spec, region, signals, scope, options_json, 0, &r);
  if (rc)
    return rc;
  if (!r.report)
    rc = fail(ARGUS_EFAILED, NULL, "argus_observe: no report was produced%s%s",
              r.nogpu_reason[0] ? ": " : "", r.nogpu_reason);
  else
    rc = report_new(json_incref(r.report), r.report_hash, out);
  ag_observe_result_release(&r);
  return rc;
}
#else
int argus_plan(argus_ws *ws, const char *spec, const char *region, const char *signals,
               const char *scope, const char *options_json, char **plan_json) {
  if (plan_json)
    *plan_json = NULL;
  return fail(ARGUS_EUNSUPPORTED, NULL, "argus_plan: this libargus was built without the CUDA "
                                        "toolkit (README, 'Prerequisites')");
}

int argus_observe(argus_ws *ws, const char *spec, const char *region, const char *signals,
                  const char *scope, const char *options_json, argus_report **out) {
  if (out)
    *out = NULL;
  return fail(ARGUS_EUNSUPPORTED, NULL, "argus_observe: this libargus was built without the "
                                        "CUDA toolkit (README, 'Prerequisites')");
}
#endif

/* --------------------------------------------------------------- check */
struct argus_check {
  int verdict;
  char *json;
  char *diags;
};

void argus_check_free(argus_check *c) {
  if (!c)
    return;
  ag_free(c->json);
  ag_free(c->diags);
  ag_free(c);
}

int argus_check_verdict(const argus_check *c) { return c ? c->verdict : ARGUS_CHECK_UNKNOWN; }
const char *argus_check_json(const argus_check *c) { return c ? c->json : ""; }
const char *argus_check_diagnostics(const argus_check *c) { return c ? c->diags : "[]"; }

static const opt_def check_opts[] = {
    {"set", OPT_INTMAP},       {"symbolic", OPT_STRLIST},  {"unroll", OPT_BOOL},
    {"all", OPT_BOOL},         {"strict", OPT_BOOL},       {"rlimit", OPT_POSINT},
    {"batch", OPT_POSINT},     {"max_steps", OPT_POSINT},  {"max_writes", OPT_POSINT},
    {"max_memory_mib", OPT_POSINT}, {NULL, 0}};

int argus_check_file(const char *path, const char *options_json, argus_check **out) {
  NEED(out, "out");
  *out = NULL;
  NEED(path, "path");
  const char *why;
  int rc = ag_file_problem(path, &why);
  if (rc)
    return fail(rc, NULL, "cannot read '%s': %s", path, why);
  json_t *op = NULL;
  if ((rc = opts_parse(options_json, "argus_check_file", check_opts, &op)))
    return rc;
  if (json_integer_value(json_object_get(op, "batch")) > 4096) {
    json_decref(op);
    return fail(ARGUS_EINVAL, NULL, "argus_check_file: option 'batch' takes 1 to 4096");
  }
  ag_tile_check_opts o;
  ag_diags d;
  ag_diags_init(&d);
  ag_tile_program *p = NULL;
  ag_tile_report *r = NULL;
  argus_check *c = NULL;
  json_t *j = NULL;
  if (ag_tile_check_opts_from_json(op, &o)) {
    rc = fail(ARGUS_ENOMEM, NULL, "out of memory");
    goto out;
  }
  rc = ag_tile_parse_file(path, &d, &p);
  if (rc == 0)
    rc = ag_tile_check(p, &o, &d, &r);
  if (rc) {
    rc = fail(rc, &d, "%s '%s': %s", rc == AG_EPARSE ? "malformed tile program" : "cannot check",
              path, first_error(&d));
    goto out;
  }
  c = ag_calloc(1, sizeof *c);
  j = ag_tile_report_json(r);
  json_t *dj = ag_diags_to_json(&d);
  if (c) {
    c->json = dump(j, 0);
    c->diags = dump(dj, 0);
  }
  json_decref(dj);
  if (!c || !c->json || !c->diags) {
    argus_check_free(c);
    c = NULL;
    rc = fail(ARGUS_ENOMEM, NULL, "out of memory");
    goto out;
  }
  c->verdict = ARGUS_CHECK_PROVED;
  for (int a = 0; a < r->nasserts; a++)
    if (r->asserts[a].status == AG_TILE_VIOLATED)
      c->verdict = ARGUS_CHECK_VIOLATED;
    else if (r->asserts[a].status != AG_TILE_PROVED && c->verdict == ARGUS_CHECK_PROVED)
      c->verdict = ARGUS_CHECK_UNKNOWN;
  if (c->verdict == ARGUS_CHECK_PROVED && !ag_tile_report_ok(r))
    c->verdict = ARGUS_CHECK_UNKNOWN;
  *out = c;
out:
  json_decref(j);
  ag_tile_report_free(r);
  ag_tile_program_free(p);
  ag_diags_release(&d);
  ag_tile_check_opts_release(&o);
  json_decref(op);
  return rc;
}
