/*
 * cmd_mcp.c — `argus mcp`: a Model Context Protocol server on stdio, so an
 * agent framework that speaks MCP can call Argus (docs/mcp.md).
 *
 * Transport: JSON-RPC 2.0, one message per line on stdin and stdout (the
 * MCP stdio transport); nothing else is written to stdout: the server keeps
 * the real stdout for the protocol and points file descriptor 1 at stderr,
 * so a child process (nvcc) or a stray print cannot corrupt the stream.
 * Requests are served one at a time, in order. A line longer than
 * --max-line is skipped to its end and answered with an error; a last line
 * without a newline is a message too; EOF ends the server (exit 0).
 *
 * Tools: regions, plan, observe, check, report, workspace. Each is a row of
 * `tools` below: its JSON input schema (published by tools/list and the one
 * the arguments are checked against) and a function calling the library as
 * the CLI command does. Errors: not JSON -32700; not a request -32600; an
 * unknown method -32601; an unknown tool or arguments that break the schema
 * -32602 with the diagnostic in the message; a tool that fails gives a
 * result with isError true, the error and the diagnostics (argus.error/1).
 */
#include "cli.h"

#include "argus/report.h"
#include "argus/store.h"
#include "argus/tile.h"
#include "argus/tile_check.h"
#if ARGUS_HAVE_CUDA
#include "argus/observe.h"
#endif

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const ag_cli_opt cmd_mcp_opts[] = {
    {"max-line", 0, "BYTES", "longest request line accepted (default 4194304)"},
    {0},
};

const char cmd_mcp_details[] =
    "Reads JSON-RPC 2.0 requests, one per line, on standard input and answers on standard\n"
    "output (the MCP stdio transport); logs go to standard error. Tools: regions, plan,\n"
    "observe, check, report, workspace. Paths in arguments are the server's (relative to\n"
    "its working directory); the workspace is --workspace's unless a call names one.\n"
    "docs/mcp.md shows how to register it with an agent framework.";

#define MCP_MAX_LINE_DEFAULT ((size_t)4 << 20)

/* Protocol revisions this server speaks, newest first: a client's is
 * answered as asked, any other with the newest. */
static const char *const protocols[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05",
                                        NULL};

enum {
  RPC_PARSE = -32700,
  RPC_INVALID_REQUEST = -32600,
  RPC_NO_METHOD = -32601,
  RPC_INVALID_PARAMS = -32602,
  RPC_INTERNAL = -32603
};

typedef struct mcp {
  FILE *out; /* the protocol stream */
  pthread_mutex_t mu;
  ag_cli *cli;
  json_t *tools; /* tools/list's array */
  int write_failed;
} mcp;

/* One tools/call being served. */
typedef struct call {
  mcp *m;
  ag_cli cli; /* the command's view: workspace, the options of the CLI command it reuses */
  ag_cli_cmd cmd;
  json_t *token; /* progressToken, or NULL */
  json_t *structured;
  ag_str text;
  int is_error;
  int bad_args; /* the error is in the arguments (an unknown signal, a bad scope): -32602 */
  ag_str error; /* the first error, when is_error */
  json_t *diags;
} call;

/* ------------------------------------------------------------ transport */

static void send_msg(mcp *m, json_t *msg) {
  char *s = msg ? json_dumps(msg, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
  pthread_mutex_lock(&m->mu);
  if (!s || fputs(s, m->out) < 0 || fputc('\n', m->out) < 0 || fflush(m->out))
    m->write_failed = 1;
  pthread_mutex_unlock(&m->mu);
  free(s);
  json_decref(msg);
}

static void reply(mcp *m, json_t *id, json_t *result) {
  send_msg(m, json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "result",
                        result ? result : json_object()));
}

static void reply_error(mcp *m, json_t *id, int code, const char *fmt, ...) AG_PRINTF(4, 5);
static void reply_error(mcp *m, json_t *id, int code, const char *fmt, ...) {
  ag_str s = AG_STR_INIT;
  va_list ap;
  va_start(ap, fmt);
  ag_str_vprintf(&s, fmt, ap);
  va_end(ap);
  send_msg(m, json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(),
                        "error", "code", code, "message", ag_str_cstr(&s)));
  ag_str_release(&s);
}

/* Reads a line (without its newline) into line. Returns 0 at EOF with
 * nothing read, else 1; *too_long when the line passed max bytes (the rest
 * was read and dropped). A last line without a newline counts. */
static int read_line(FILE *in, ag_str *line, size_t max, int *too_long) {
  ag_str_clear(line);
  *too_long = 0;
  int any = 0;
  for (;;) {
    int ch = getc(in);
    if (ch == EOF)
      return any;
    any = 1;
    if (ch == '\n')
      return 1;
    if (line->len >= max) {
      *too_long = 1;
      continue;
    }
    ag_str_putc(line, (char)ch);
  }
}

/* ------------------------------------------------------ argument schemas */

/* Checks args against a tool's input schema (the subset used below: object
 * properties of type string, integer, number, boolean, an array of strings,
 * an object of integers; required; enum; minimum, maximum; minLength; no
 * other properties). 0, or -1 with the diagnostic in why. */
static int check_args(const json_t *schema, const json_t *args, ag_str *why) {
  json_t *props = json_object_get(schema, "properties");
  const char *k;
  json_t *v;
  if (!json_is_object(args)) {
    ag_str_puts(why, "'arguments' must be an object");
    return -1;
  }
  json_object_foreach((json_t *)args, k, v) {
    json_t *p = json_object_get(props, k);
    if (!p) {
      ag_str_printf(why, "unknown argument '%s' (it takes:", k);
      const char *pk;
      json_t *pv;
      json_object_foreach(props, pk, pv) ag_str_printf(why, " %s", pk);
      ag_str_putc(why, ')');
      return -1;
    }
    const char *type = json_string_value(json_object_get(p, "type"));
    json_t *items = json_object_get(p, "items");
    json_t *addl = json_object_get(p, "additionalProperties");
    int ok = !strcmp(type, "string")    ? json_is_string(v)
             : !strcmp(type, "integer") ? json_is_integer(v)
             : !strcmp(type, "number")  ? json_is_number(v)
             : !strcmp(type, "boolean") ? json_is_boolean(v)
             : !strcmp(type, "array")   ? json_is_array(v)
             : !strcmp(type, "object")  ? json_is_object(v)
                                        : 0;
    const char *what = !strcmp(type, "array")    ? "an array of strings"
                       : !strcmp(type, "object") ? "an object of integers"
                       : !strcmp(type, "integer") ? "an integer"
                       : !strcmp(type, "number") ? "a number"
                       : !strcmp(type, "boolean") ? "true or false"
                                                  : "a string";
    size_t i;
    json_t *e;
    if (ok && items)
      json_array_foreach(v, i, e) ok &= json_is_string(e) && json_string_length(e) > 0;
    const char *ek;
    if (ok && addl)
      json_object_foreach(v, ek, e) ok &= json_is_integer(e);
    if (!ok) {
      ag_str_printf(why, "argument '%s' must be %s", k, what);
      return -1;
    }
    json_t *en = json_object_get(p, "enum");
    if (en) {
      int found = 0;
      json_array_foreach(en, i, e) found |= json_equal(e, v);
      if (!found) {
        ag_str_printf(why, "argument '%s' must be one of", k);
        json_array_foreach(en, i, e) ag_str_printf(why, "%s '%s'", i ? "," : "", json_string_value(e));
        ag_str_printf(why, ", not '%s'", json_string_value(v));
        return -1;
      }
    }
    json_t *mn = json_object_get(p, "minimum"), *mx = json_object_get(p, "maximum");
    if ((mn && json_number_value(v) < json_number_value(mn)) ||
        (mx && json_number_value(v) > json_number_value(mx))) {
      ag_str_printf(why, "argument '%s' must be", k);
      if (mn)
        ag_str_printf(why, " at least %g", json_number_value(mn));
      if (mn && mx)
        ag_str_puts(why, " and");
      if (mx)
        ag_str_printf(why, " at most %g", json_number_value(mx));
      ag_str_printf(why, ", not %g", json_number_value(v));
      return -1;
    }
    json_t *ml = json_object_get(p, "minLength");
    if (ml && json_is_string(v) && json_string_length(v) < (size_t)json_integer_value(ml)) {
      ag_str_printf(why, "argument '%s' must not be empty", k);
      return -1;
    }
  }
  size_t i;
  json_t *r;
  json_array_foreach(json_object_get(schema, "required"), i, r) {
    if (!json_object_get(args, json_string_value(r))) {
      ag_str_printf(why, "argument '%s' is required", json_string_value(r));
      return -1;
    }
  }
  return 0;
}

/* ------------------------------------------------------------ tool calls */

static const char *arg_str(const json_t *a, const char *k) {
  return json_string_value(json_object_get(a, k));
}

static int arg_bool(const json_t *a, const char *k) {
  return json_is_true(json_object_get(a, k));
}

/* Marks the call failed with msg (the first one counts). Returns -1. */
static int fail(call *c, int err, const char *fmt, ...) AG_PRINTF(3, 4);
static int fail(call *c, int err, const char *fmt, ...) {
  c->is_error = 1;
  if (c->error.len)
    return -1;
  va_list ap;
  va_start(ap, fmt);
  ag_str_vprintf(&c->error, fmt, ap);
  va_end(ap);
  if (err)
    ag_str_printf(&c->error, ": %s", ag_strerror(err));
  return -1;
}

static void add_diags(call *c, const ag_diags *d) {
  json_t *a = ag_diags_to_json(d);
  if (!c->diags)
    c->diags = json_array();
  json_array_extend(c->diags, a);
  json_decref(a);
}

#if ARGUS_HAVE_CUDA /* observe's options (without the toolkit there is no observe) */
/* The CLI command's options for ag_cli_get: value of option name. */
static void set_opt(call *c, const char *name, const char *val) {
  for (int i = 0; c->cmd.opts && c->cmd.opts[i].name; i++)
    if (!strcmp(c->cmd.opts[i].name, name))
      c->cli.values[i] = val;
}
#endif

static void use_cmd(call *c, const char *name, const ag_cli_opt *opts) {
  c->cmd.name = name;
  c->cmd.synopsis = c->cmd.summary = "";
  c->cmd.opts = opts;
  c->cli.cmd = &c->cmd;
}

static int tool_regions(call *c, const json_t *a) {
  use_cmd(c, "regions", cmd_regions_opts);
  json_t *j = NULL;
  const char *in = arg_str(a, "module");
  if (ag_cli_regions(&c->cli, in, arg_str(a, "flags"), &j, &c->text))
    return fail(c, 0, "cannot list the regions of '%s'", in);
  c->structured = j;
  return 0;
}

static int tool_check(call *c, const json_t *a) {
  use_cmd(c, "check", cmd_check_opts);
  const char *file = arg_str(a, "file");
  ag_tile_check_opts o;
  ag_diags d;
  ag_diags_init(&d);
  ag_tile_program *p = NULL;
  ag_tile_report *r = NULL;
  int rc = 0, out = -1;
  if (ag_tile_check_opts_from_json(a, &o)) {
    fail(c, AG_ENOMEM, "cannot check '%s'", file);
    goto out;
  }
  if (ag_cli_input_file(&c->cli, file)) {
    fail(c, 0, "cannot check '%s'", file);
    goto out;
  }
  rc = ag_tile_parse_file(file, &d, &p);
  if (!rc)
    rc = ag_tile_check(p, &o, &d, &r);
  add_diags(c, &d);
  c->bad_args = rc == AG_EINVAL; /* a --set or --symbolic name the kernel lacks */
  if (rc) { /* malformed, or the checker could not finish */
    fail(c, rc == AG_EPARSE || rc == AG_EINVAL ? 0 : rc, "%s '%s'",
         rc == AG_EPARSE || rc == AG_EINVAL ? "malformed tile program" : "cannot check", file);
    goto out;
  }
  if (!(c->structured = ag_tile_report_json(r)) || ag_tile_report_text(r, &c->text)) {
    fail(c, AG_ENOMEM, "cannot render the report of '%s'", file);
    goto out;
  }
  out = 0;
out:
  ag_tile_check_opts_release(&o);
  ag_tile_report_free(r);
  ag_tile_program_free(p);
  ag_diags_release(&d);
  return out;
}

/* The workspace a call uses: its own, else the server's. */
static const char *call_ws(call *c, const json_t *a) {
  const char *w = arg_str(a, "workspace");
  return w ? w : c->cli.workspace;
}

/* The text of a report's result: its summary and a last line naming it,
 * together within summary_tokens (default AG_SUMMARY_DEFAULT_TOKENS). */
static int summarize(call *c, const json_t *a, const json_t *report, const char *hash) {
  json_t *t = json_object_get(a, "summary_tokens");
  int tokens = t ? (int)json_integer_value(t) : AG_SUMMARY_DEFAULT_TOKENS;
  ag_str last = AG_STR_INIT;
  ag_str_printf(&last, "report %.12s\n", hash ? hash : "");
  int rc = ag_report_summary(report, tokens - (int)ag_summary_tokens(last.len), &c->text);
  if (!rc && hash && *hash)
    ag_str_puts(&c->text, ag_str_cstr(&last));
  ag_str_release(&last);
  return rc ? fail(c, rc, "cannot summarize the report") : 0;
}

static int open_store(call *c, const char *ws, unsigned flags, ag_store **st) {
  int rc = ag_store_open(ws, flags, st);
  return rc ? fail(c, 0, "cannot open the workspace '%s': %s", ws, ag_store_errmsg()) : 0;
}

/* report: one stored report (hash, prefix, ref or query qN; default the
 * latest query's latest), as JSON and its summary. */
static int tool_report(call *c, const json_t *a) {
  const char *ws = call_ws(c, a), *want = arg_str(a, "report");
  ag_store *st = NULL;
  ag_store_query q;
  memset(&q, 0, sizeof q);
  void *data = NULL;
  size_t len = 0;
  char hash[AG_STORE_HASH_LEN + 1] = "";
  int out = -1, rc;
  if (open_store(c, ws, 0, &st))
    return -1;
  ag_obj o = {AG_OBJ_QUERY, 0, ""};
  if (want && (rc = ag_store_resolve(st, want, &o))) {
    fail(c, 0, "no report '%s' in '%s': %s", want, ws, ag_store_errmsg());
    goto out;
  }
  if (!want) { /* the latest query */
    ag_list_opts lo = {1, 0, NULL};
    ag_store_query *ql = NULL;
    size_t n = 0;
    rc = ag_store_queries(st, &lo, &ql, &n);
    o.id = !rc && n ? ql[0].id : 0;
    ag_store_queries_free(ql, n);
    if (!o.id) {
      fail(c, 0, "no query in '%s' yet: run the observe tool first", ws);
      goto out;
    }
  }
  if (o.kind == AG_OBJ_QUERY) {
    if ((rc = ag_store_query_get(st, o.id, &q)) || !q.nreports) {
      fail(c, 0, "query q%lld in '%s' has no report%s", (long long)o.id, ws,
           rc ? " (it could not be read)" : "");
      goto out;
    }
    snprintf(hash, sizeof hash, "%s", q.reports[q.nreports - 1]);
  } else if (o.kind == AG_OBJ_ARTIFACT) {
    snprintf(hash, sizeof hash, "%s", o.hash);
  } else {
    fail(c, 0, "'%s' in '%s' is not a report or a query", want, ws);
    goto out;
  }
  if ((rc = ag_store_get(st, hash, &data, &len))) {
    fail(c, 0, "cannot read the report %.12s: %s", hash, ag_store_errmsg());
    goto out;
  }
  json_error_t je;
  c->structured = json_loadb(data, len, 0, &je);
  const char *schema = json_string_value(json_object_get(c->structured, "schema"));
  if (!schema || (strcmp(schema, AG_REPORT_SCHEMA) && strcmp(schema, "argus.trace/1"))) {
    json_decref(c->structured);
    c->structured = NULL;
    fail(c, 0, "artifact %.12s in '%s' is not a report", hash, ws);
    goto out;
  }
  if (summarize(c, a, c->structured, hash))
    goto out;
  out = 0;
out:
  ag_free(data);
  ag_store_query_release(&q);
  ag_store_close(st);
  return out;
}

/* workspace: init, ls (counts, refs, recent queries and their reports), ref
 * (show a ref, or point it at a version or an artifact). */
static int tool_workspace(call *c, const json_t *a) {
  const char *ws = call_ws(c, a), *action = arg_str(a, "action");
  const char *name = arg_str(a, "name"), *target = arg_str(a, "target");
  ag_store *st = NULL;
  int create = !strcmp(action, "init");
  if (!create && !strcmp(action, "ref") && !name) {
    c->bad_args = 1;
    return fail(c, 0, "argument 'name' is required by action 'ref'");
  }
  if (open_store(c, ws, create ? AG_STORE_CREATE : 0, &st))
    return -1;
  int out = -1, rc;
  json_t *j = json_pack("{s:s}", "workspace", ws);
  if (create) {
    ag_str_printf(&c->text, "workspace '%s' ready (schema %d)\n", ws, AG_STORE_SCHEMA_VERSION);
    json_object_set_new(j, "schema", json_integer(AG_STORE_SCHEMA_VERSION));
  } else if (!strcmp(action, "ref")) {
    ag_obj o;
    if (target && ((rc = ag_store_resolve(st, target, &o)) ||
                   (rc = ag_store_ref_set(st, name, &o)))) {
      fail(c, 0, "cannot point '%s' at '%s': %s", name, target, ag_store_errmsg());
      goto out;
    }
    ag_ref r;
    if ((rc = ag_store_ref_get(st, name, &r))) {
      fail(c, 0, "no ref '%s' in '%s': %s", name, ws, ag_store_errmsg());
      goto out;
    }
    char t[80];
    if (r.target.kind == AG_OBJ_VERSION)
      snprintf(t, sizeof t, "v%lld", (long long)r.target.id);
    else
      snprintf(t, sizeof t, "%s", r.target.hash);
    json_object_set_new(j, "ref", json_pack("{s:s,s:s,s:s}", "name", r.name, "target_type",
                                            r.target.kind == AG_OBJ_VERSION ? "version"
                                                                            : "artifact",
                                            "target", t));
    ag_str_printf(&c->text, "%s -> %s\n", r.name, t);
  } else { /* ls */
    json_t *lim = json_object_get(a, "limit");
    ag_list_opts lo = {lim ? (size_t)json_integer_value(lim) : 10, 0, NULL};
    ag_store_stats s;
    ag_ref *refs = NULL;
    ag_store_query *ql = NULL;
    size_t nr = 0, nq = 0;
    if ((rc = ag_store_stats_get(st, &s)) || (rc = ag_store_refs(st, &refs, &nr)) ||
        (rc = ag_store_queries(st, &lo, &ql, &nq))) {
      ag_free(refs);
      fail(c, 0, "cannot list '%s': %s", ws, ag_store_errmsg());
      goto out;
    }
    json_object_set_new(j, "counts",
                        json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "versions", (json_int_t)s.versions,
                                  "tasks", (json_int_t)s.tasks, "artifacts",
                                  (json_int_t)s.artifacts, "queries", (json_int_t)s.queries,
                                  "reports", (json_int_t)s.reports, "bytes",
                                  (json_int_t)s.payload_bytes));
    ag_str_printf(&c->text, "workspace '%s': %llu versions, %llu tasks, %llu queries, %llu reports\n",
                  ws, (unsigned long long)s.versions, (unsigned long long)s.tasks,
                  (unsigned long long)s.queries, (unsigned long long)s.reports);
    json_t *ra = json_array(), *qa = json_array();
    for (size_t i = 0; i < nr; i++) {
      char t[80];
      if (refs[i].target.kind == AG_OBJ_VERSION)
        snprintf(t, sizeof t, "v%lld", (long long)refs[i].target.id);
      else
        snprintf(t, sizeof t, "%s", refs[i].target.hash);
      json_array_append_new(ra, json_pack("{s:s,s:s}", "name", refs[i].name, "target", t));
      ag_str_printf(&c->text, "ref %s -> %.12s\n", refs[i].name, t);
    }
    for (size_t i = 0; i < nq; i++) {
      ag_store_query q;
      json_t *reports = json_array();
      if (!ag_store_query_get(st, ql[i].id, &q)) {
        for (size_t k = 0; k < q.nreports; k++)
          json_array_append_new(reports, json_string(q.reports[k]));
        ag_store_query_release(&q);
      }
      json_t *spec = json_loads(ql[i].spec ? ql[i].spec : "{}", 0, NULL);
      ag_str_printf(&c->text, "q%lld %.100s%s%.12s\n", (long long)ql[i].id, ql[i].spec,
                    json_array_size(reports) ? " report " : "",
                    json_array_size(reports)
                        ? json_string_value(json_array_get(reports, json_array_size(reports) - 1))
                        : "");
      json_array_append_new(qa, json_pack("{s:I,s:o,s:o}", "id", (json_int_t)ql[i].id, "query",
                                          spec ? spec : json_object(), "reports", reports));
    }
    json_object_set_new(j, "refs", ra);
    json_object_set_new(j, "queries", qa);
    ag_free(refs);
    ag_store_queries_free(ql, nq);
  }
  c->structured = j;
  j = NULL;
  out = 0;
out:
  json_decref(j);
  ag_store_close(st);
  return out;
}

#if ARGUS_HAVE_CUDA
/* The query options of plan and observe, through the CLI's own checks. */
static int query(call *c, const json_t *a, int plan_only, ag_observe_opts *o, char ***sigs,
                 ag_str *siglist) {
  use_cmd(c, plan_only ? "plan" : "observe", plan_only ? cmd_plan_opts : cmd_observe_opts);
  c->cli.workspace = call_ws(c, a);
  c->cli.pos[0] = arg_str(a, "spec");
  c->cli.npos = 1;
  set_opt(c, "region", arg_str(a, "region"));
  size_t i;
  json_t *s;
  json_array_foreach(json_object_get(a, "signals"), i, s)
      ag_str_printf(siglist, "%s%s", i ? "," : "", json_string_value(s));
  set_opt(c, "signals", siglist->len ? ag_str_cstr(siglist) : NULL);
  set_opt(c, "scope", arg_str(a, "scope"));
  const char *spec = NULL;
  if (ag_cli_query(&c->cli, plan_only, o, sigs, &spec))
    return fail(c, 0, "invalid query");
  o->progress = NULL;
  return 0;
}

static int run_observe(call *c, const ag_observe_opts *o, ag_observe_result *r) {
  ag_diags d;
  ag_diags_init(&d);
  int rc = ag_observe(o, &d, r);
  add_diags(c, &d);
  ag_diags_release(&d);
  c->bad_args = rc == AG_EINVAL; /* the query itself: signals, scope */
  return rc ? fail(c, rc == AG_EINVAL || rc == AG_EPARSE ? 0 : rc, "the query could not %s",
                   o->plan_only ? "be planned" : "run")
            : 0;
}

static int tool_plan(call *c, const json_t *a) {
  ag_observe_opts o;
  char **sigs = NULL;
  ag_str sl = AG_STR_INIT;
  ag_observe_result r;
  memset(&r, 0, sizeof r);
  int out = -1;
  if (query(c, a, 1, &o, &sigs, &sl) || run_observe(c, &o, &r))
    goto out;
  c->structured = ag_plan_to_json(r.plan);
  ag_plan_print_text(r.plan, &c->text);
  out = 0;
  /* a discovery failure (unknown region, bad markers) is a failed plan */
  for (const ag_task *f = ag_plan_next_failed(r.plan, NULL); f; f = ag_plan_next_failed(r.plan, f))
    out = fail(c, 0, "%s failed: %s", f->op, f->error ? f->error : "");
  ag_observe_result_release(&r);
out:
  ag_cli_free_list(sigs);
  ag_str_release(&sl);
  return out;
}

static void on_progress(void *ud, const ag_plan *p, const ag_task *t, int done, int total) {
  call *c = ud;
  (void)p;
  ag_str msg = AG_STR_INIT;
  ag_str_printf(&msg, "%s %s", t->op, ag_task_status_name(t->status));
  send_msg(c->m, json_pack("{s:s,s:s,s:{s:O,s:i,s:i,s:s}}", "jsonrpc", "2.0", "method",
                           "notifications/progress", "params", "progressToken", c->token,
                           "progress", done, "total", total, "message", ag_str_cstr(&msg)));
  ag_str_release(&msg);
}

static int tool_observe(call *c, const json_t *a) {
  ag_observe_opts o;
  char **sigs = NULL;
  ag_str sl = AG_STR_INIT, tr = AG_STR_INIT;
  ag_observe_result r;
  memset(&r, 0, sizeof r);
  int out = -1;
  if (query(c, a, 0, &o, &sigs, &sl))
    goto out;
  o.timeout_s = json_number_value(json_object_get(a, "timeout"));
  o.records_per_warp = (unsigned)json_integer_value(json_object_get(a, "records"));
  o.launches = arg_str(a, "launches");
  size_t i;
  json_t *s;
  json_array_foreach(json_object_get(a, "trace"), i, s)
      ag_str_printf(&tr, "%s%s", i ? "," : "", json_string_value(s));
  o.trace_regions = tr.len ? ag_str_cstr(&tr) : NULL;
  o.ignore_damage = arg_bool(a, "ignore_damage");
  if (c->token) {
    o.progress = on_progress;
    o.progress_ud = c;
  }
  if (run_observe(c, &o, &r))
    goto out;
  if (!r.report) {
    fail(c, 0, "no report was produced");
  } else if (!summarize(c, a, r.report, r.report_hash)) {
    c->structured = json_incref(r.report);
    out = 0;
  }
out:
  ag_observe_result_release(&r);
  ag_cli_free_list(sigs);
  ag_str_release(&sl);
  ag_str_release(&tr);
  return out;
}
#else
static int no_cuda(call *c, const json_t *a) {
  (void)a;
  return fail(c, 0, "this argus was built without the CUDA toolkit, which plan and observe "
                    "need; install it (README, 'Prerequisites'), reconfigure and rebuild");
}
#define tool_plan no_cuda
#define tool_observe no_cuda
#endif

/* ------------------------------------------------------------ the tools */

#define WS_PROP "\"workspace\": {\"type\": \"string\", \"minLength\": 1, \"description\": " \
                "\"workspace directory (default: the server's --workspace)\"}"
#define QUERY_PROPS                                                                            \
  "\"spec\": {\"type\": \"string\", \"minLength\": 1, \"description\": \"program spec (JSON) " \
  "path\"}, \"region\": {\"type\": \"string\", \"minLength\": 1, \"description\": \"region: "  \
  "qualified kernel/a/b or local name\"}, \"signals\": {\"type\": \"array\", \"items\": "      \
  "{\"type\": \"string\"}, \"description\": \"signals (default [duration]): duration, "        \
  "occurrences, timeline, static, async_latency\"}, \"scope\": {\"type\": \"string\", "        \
  "\"description\": \"K=V,... with role, iter, sm, cta, warp, launch (N or a:b)\"}, " WS_PROP
#define SUMMARY_PROP                                                                           \
  "\"summary_tokens\": {\"type\": \"integer\", \"minimum\": 72, \"maximum\": 100000, "         \
  "\"description\": \"token budget of the text (default 256; 3 bytes per token)\"}"

typedef int (*tool_fn)(call *c, const json_t *args);

static const struct {
  const char *name, *title, *description, *schema;
  tool_fn fn;
} tools[] = {
    {"regions", "Kernel regions",
     "The regions of a kernel module (a program spec, .ptx or .cu file) and the operation sites "
     "in each: names, stable IDs, nesting, async sites (op IDs for probes).",
     "{\"type\": \"object\", \"properties\": {\"module\": {\"type\": \"string\", \"minLength\": 1, "
     "\"description\": \"program spec (.json), .ptx or .cu file\"}, \"flags\": {\"type\": "
     "\"string\", \"description\": \"nvcc flags for a .cu file, blank-separated (default "
     "-arch=sm_90a)\"}}, \"required\": [\"module\"], \"additionalProperties\": false}",
     tool_regions},
    {"plan", "Measurement plan",
     "The measurement plan of a query (tasks, variants, runs, effects) without collecting: "
     "runs discovery only, needs no GPU.",
     "{\"type\": \"object\", \"properties\": {" QUERY_PROPS "}, \"required\": [\"spec\", "
     "\"region\"], \"additionalProperties\": false}",
     tool_plan},
    {"observe", "Observe a region",
     "Measure a region of a kernel on the GPU: plans the query, runs it (memoized in the "
     "workspace) and returns the qualified report (structured) and a prompt-sized summary "
     "(text). Reports progress when the request has a progressToken.",
     "{\"type\": \"object\", \"properties\": {" QUERY_PROPS ", " SUMMARY_PROP ", \"timeout\": "
     "{\"type\": \"number\", \"minimum\": 0.001, \"description\": \"seconds before a harness run "
     "is killed (default 300)\"}, \"records\": {\"type\": \"integer\", \"minimum\": 16, "
     "\"description\": \"trace records per warp\"}, \"launches\": {\"type\": \"string\", "
     "\"description\": \"launches to record: all, last, N or a:b\"}, \"trace\": {\"type\": "
     "\"array\", \"items\": {\"type\": \"string\"}, \"description\": \"probe only these regions "
     "and their subtrees\"}, \"ignore_damage\": {\"type\": \"boolean\"}}, \"required\": "
     "[\"spec\", \"region\"], \"additionalProperties\": false}",
     tool_observe},
    {"check", "Check a tile program",
     "Prove a tile program's tag assertions; a violation comes with a counterexample (block, "
     "thread, iteration, element, the two tags).",
     "{\"type\": \"object\", \"properties\": {\"file\": {\"type\": \"string\", \"minLength\": 1, "
     "\"description\": \"the .tile file\"}, \"set\": {\"type\": \"object\", "
     "\"additionalProperties\": {\"type\": \"integer\"}, \"description\": \"const parameter "
     "overrides, e.g. {\\\"N\\\": 256}\"}, \"symbolic\": {\"type\": \"array\", \"items\": "
     "{\"type\": \"string\"}, \"description\": \"const parameters checked for every value\"}, "
     "\"unroll\": {\"type\": \"boolean\"}, \"all\": {\"type\": \"boolean\"}, \"strict\": "
     "{\"type\": \"boolean\"}, \"rlimit\": {\"type\": \"integer\", \"minimum\": 1}, \"batch\": "
     "{\"type\": \"integer\", \"minimum\": 1, \"maximum\": 4096}, \"max_steps\": {\"type\": "
     "\"integer\", \"minimum\": 1, \"maximum\": 1099511627776}, \"max_writes\": {\"type\": "
     "\"integer\", \"minimum\": 1, \"maximum\": 1099511627776}, \"max_memory_mib\": {\"type\": "
     "\"integer\", \"minimum\": 1, \"maximum\": 1099511627776}}, \"required\": [\"file\"], "
     "\"additionalProperties\": false}",
     tool_check},
    {"report", "Read a report",
     "A report stored in the workspace (a hash or unique prefix, a ref, or a query qN; default "
     "the latest query's), as JSON (structured) and its prompt-sized summary (text).",
     "{\"type\": \"object\", \"properties\": {\"report\": {\"type\": \"string\", \"minLength\": "
     "1}, " SUMMARY_PROP ", " WS_PROP "}, \"additionalProperties\": false}",
     tool_report},
    {"workspace", "Workspace",
     "The versioned workspace: init (create it), ls (counts, refs, recent queries and their "
     "reports), ref (show a ref, or point it at a version vN or an artifact with target).",
     "{\"type\": \"object\", \"properties\": {\"action\": {\"type\": \"string\", \"enum\": "
     "[\"init\", \"ls\", \"ref\"]}, \"name\": {\"type\": \"string\", \"minLength\": 1}, "
     "\"target\": {\"type\": \"string\", \"minLength\": 1}, \"limit\": {\"type\": \"integer\", "
     "\"minimum\": 0, \"description\": \"ls: queries to list (default 10; 0: all)\"}, " WS_PROP
     "}, \"required\": [\"action\"], \"additionalProperties\": false}",
     tool_workspace},
};
#define NTOOLS (sizeof tools / sizeof tools[0])

static json_t *tools_json(void) {
  json_t *arr = json_array();
  for (size_t i = 0; i < NTOOLS; i++) {
    json_error_t e;
    json_t *schema = json_loads(tools[i].schema, 0, &e);
    if (!schema) { /* a broken row is a bug of this file */
      AG_LOG(AG_LOG_ERROR, "tool '%s': schema: %s", tools[i].name, e.text);
      json_decref(arr);
      return NULL;
    }
    json_array_append_new(arr, json_pack("{s:s,s:s,s:s,s:o}", "name", tools[i].name, "title",
                                         tools[i].title, "description", tools[i].description,
                                         "inputSchema", schema));
  }
  return arr;
}

/* tools/call: the arguments checked, the tool run, its result. */
static void tools_call(mcp *m, json_t *id, json_t *params) {
  const char *name = json_string_value(json_object_get(params, "name"));
  json_t *args = json_object_get(params, "arguments");
  if (!name) {
    reply_error(m, id, RPC_INVALID_PARAMS, "tools/call needs 'name', the tool to call");
    return;
  }
  size_t t = 0;
  while (t < NTOOLS && strcmp(tools[t].name, name))
    t++;
  if (t == NTOOLS) {
    reply_error(m, id, RPC_INVALID_PARAMS, "unknown tool '%s' (tools/list names them)", name);
    return;
  }
  json_t *empty = args ? NULL : json_object();
  ag_str why = AG_STR_INIT;
  if (check_args(json_object_get(json_array_get(m->tools, t), "inputSchema"),
                 args ? args : empty, &why)) {
    reply_error(m, id, RPC_INVALID_PARAMS, "tool '%s': %s", name, ag_str_cstr(&why));
    ag_str_release(&why);
    json_decref(empty);
    return;
  }
  ag_str_release(&why);
  call c;
  memset(&c, 0, sizeof c);
  c.m = m;
  c.cli.workspace = m->cli->workspace;
  c.cli.json = 1;
  c.cli.cmd = m->cli->cmd;
  json_t *tok = json_object_get(json_object_get(params, "_meta"), "progressToken");
  c.token = json_is_string(tok) || json_is_integer(tok) ? tok : NULL;
  char *msg = NULL;
  json_t *diags = NULL;
  ag_cli_take_errors(&msg, &diags); /* start clean */
  ag_free(msg);
  json_decref(diags);
  int rc = tools[t].fn(&c, args ? args : empty);
  ag_cli_take_errors(&msg, &diags); /* what the CLI helpers reported */
  json_t *result = NULL;
  if (c.bad_args) { /* -32602, the diagnostics in the message */
    ag_str text = AG_STR_INIT;
    ag_str_printf(&text, "tool '%s': %s", name, msg ? msg : ag_str_cstr(&c.error));
    json_t *all[2] = {c.diags, diags};
    for (int k = 0; k < 2; k++) {
      size_t i;
      json_t *dg;
      json_array_foreach(all[k], i, dg)
          ag_str_printf(&text, "; %s", json_string_value(json_object_get(dg, "message")));
    }
    reply_error(m, id, RPC_INVALID_PARAMS, "%s", ag_str_cstr(&text));
    ag_str_release(&text);
  } else if (rc || c.is_error) {
    if (!c.diags)
      c.diags = json_array();
    if (diags)
      json_array_extend(c.diags, diags);
    ag_str text = AG_STR_INIT;
    const char *first = msg ? msg : ag_str_cstr(&c.error);
    ag_str_printf(&text, "error: %s", first);
    if (msg && c.error.len && strcmp(msg, ag_str_cstr(&c.error)))
      ag_str_printf(&text, " (%s)", ag_str_cstr(&c.error));
    ag_str_putc(&text, '\n');
    size_t i;
    json_t *dg;
    json_array_foreach(c.diags, i, dg) {
      const char *f = json_string_value(json_object_get(dg, "file"));
      json_int_t ln = json_integer_value(json_object_get(dg, "line"));
      ag_str_printf(&text, "%s%s", f ? f : "", f ? ":" : "");
      if (f && ln)
        ag_str_printf(&text, "%lld:", (long long)ln);
      ag_str_printf(&text, "%s%s: %s\n", f ? " " : "",
                    json_string_value(json_object_get(dg, "severity")),
                    json_string_value(json_object_get(dg, "message")));
    }
    json_t *err = json_pack("{s:s,s:s,s:s,s:s,s:O}", "schema", "argus.error/1", "tool", name,
                            "error", first, "detail", c.error.len ? ag_str_cstr(&c.error) : first,
                            "diagnostics", c.diags);
    if (c.structured) /* what was made before the failure (a plan with a failed task) */
      json_object_set(err, "partial", c.structured);
    result = json_pack("{s:[{s:s,s:s}],s:o,s:b}", "content", "type", "text", "text",
                       ag_str_cstr(&text), "structuredContent", err, "isError", 1);
    ag_str_release(&text);
  } else {
    result = json_pack("{s:[{s:s,s:s}],s:O,s:b}", "content", "type", "text", "text",
                       ag_str_cstr(&c.text), "structuredContent",
                       c.structured ? c.structured : json_object(), "isError", 0);
  }
  if (result)
    reply(m, id, result);
  else if (!c.bad_args)
    reply_error(m, id, RPC_INTERNAL, "out of memory building the result of '%s'", name);
  ag_free(msg);
  json_decref(diags);
  json_decref(c.structured);
  json_decref(c.diags);
  json_decref(empty);
  ag_str_release(&c.text);
  ag_str_release(&c.error);
}

static void initialize(mcp *m, json_t *id, json_t *params) {
  const char *want = json_string_value(json_object_get(params, "protocolVersion"));
  if (!want) {
    reply_error(m, id, RPC_INVALID_PARAMS, "initialize needs 'protocolVersion' (a string)");
    return;
  }
  const char *v = protocols[0];
  for (int i = 0; protocols[i]; i++)
    if (!strcmp(protocols[i], want))
      v = protocols[i];
  reply(m, id,
        json_pack("{s:s,s:{s:{s:b}},s:{s:s,s:s,s:s},s:s}", "protocolVersion", v, "capabilities",
                  "tools", "listChanged", 0, "serverInfo", "name", "argus", "title", "Argus",
                  "version", AG_VERSION_STRING, "instructions",
                  "Argus measures GPU kernels per semantic region (regions, plan, observe, "
                  "report) and proves tile programs' data flow (check). Every number carries "
                  "its qualification: observed, attributed or derived."));
}

/* One line: a request, a notification, or garbage. */
static void handle(mcp *m, const char *line, size_t len) {
  json_error_t e;
  json_t *msg = json_loadb(line, len, 0, &e);
  if (!msg) {
    reply_error(m, NULL, RPC_PARSE, "parse error: the request is not JSON: %s (column %d)",
                e.text, e.column);
    return;
  }
  json_t *id = json_object_get(msg, "id");
  const char *method = json_string_value(json_object_get(msg, "method"));
  int id_ok = json_is_string(id) || json_is_integer(id);
  if (json_is_array(msg)) {
    reply_error(m, NULL, RPC_INVALID_REQUEST, "invalid request: batches are not supported; "
                                              "send one request per line");
  } else if (!json_is_object(msg) ||
             !json_is_string(json_object_get(msg, "jsonrpc")) ||
             strcmp(json_string_value(json_object_get(msg, "jsonrpc")), "2.0")) {
    reply_error(m, id_ok ? id : NULL, RPC_INVALID_REQUEST,
                "invalid request: expected a JSON-RPC 2.0 object with \"jsonrpc\": \"2.0\"");
  } else if (!method && (json_object_get(msg, "result") || json_object_get(msg, "error"))) {
    ; /* a response to a request of ours: the server sends none */
  } else if (!method) {
    reply_error(m, id_ok ? id : NULL, RPC_INVALID_REQUEST,
                "invalid request: 'method' (a string) is missing");
  } else if (!id) {
    ; /* a notification (initialized, cancelled, ...): never answered */
  } else if (!id_ok) {
    reply_error(m, NULL, RPC_INVALID_REQUEST, "invalid request: 'id' must be a string or an "
                                              "integer");
  } else {
    json_t *params = json_object_get(msg, "params");
    if (params && !json_is_object(params))
      reply_error(m, id, RPC_INVALID_PARAMS, "'params' of '%s' must be an object", method);
    else if (!strcmp(method, "initialize"))
      initialize(m, id, params);
    else if (!strcmp(method, "ping"))
      reply(m, id, json_object());
    else if (!strcmp(method, "tools/list"))
      reply(m, id, json_pack("{s:O}", "tools", m->tools));
    else if (!strcmp(method, "tools/call"))
      tools_call(m, id, params);
    else
      reply_error(m, id, RPC_NO_METHOD, "method '%s' not found (this server has initialize, "
                                        "ping, tools/list, tools/call)", method);
  }
  json_decref(msg);
}

static void on_sigpipe(int sig) { (void)sig; }

int cmd_mcp(ag_cli *cli) {
  if (cli->npos)
    return ag_cli_usage_error(cli, "takes no arguments, got '%s'", cli->pos[0]);
  size_t max = MCP_MAX_LINE_DEFAULT;
  const char *ml = ag_cli_get(cli, "max-line");
  if (ml) {
    char *end = NULL;
    long long v = strtoll(ml, &end, 10);
    if (!*ml || *end || v < 1024 || v > (1LL << 30))
      return ag_cli_usage_error(cli, "--max-line takes a number of bytes from 1024 to 2^30, "
                                     "not '%s'", ml);
    max = (size_t)v;
  }
  mcp m;
  memset(&m, 0, sizeof m);
  m.cli = cli;
  if (!(m.tools = tools_json()))
    return ag_cli_fail(cli, AG_ENOMEM, "cannot build the tool list");
  /* the protocol gets the real stdout; fd 1 (children, stray prints) goes to stderr */
  fflush(stdout);
  int fd = dup(1);
  if (fd < 0 || !(m.out = fdopen(fd, "w")) || dup2(2, 1) < 0) {
    json_decref(m.tools);
    return ag_cli_fail(cli, AG_EIO, "cannot set up standard output");
  }
  /* a client gone makes a write fail (EPIPE) rather than kill the server; a
   * handler, not SIG_IGN, so the programs it runs get the default back at exec */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigpipe;
  sigaction(SIGPIPE, &sa, NULL);
  pthread_mutex_init(&m.mu, NULL);
  ag_str line = AG_STR_INIT;
  int too_long;
  while (!m.write_failed && read_line(stdin, &line, max, &too_long)) {
    size_t n = line.len;
    if (n && line.p[n - 1] == '\r')
      n--;
    if (too_long) {
      reply_error(&m, NULL, RPC_INVALID_REQUEST,
                  "invalid request: the line is longer than %zu bytes (argus mcp --max-line)",
                  max);
      continue;
    }
    size_t k = 0;
    while (k < n && (line.p[k] == ' ' || line.p[k] == '\t'))
      k++;
    if (k < n)
      handle(&m, line.p, n);
  }
  int rc = m.write_failed ? ag_cli_fail(cli, AG_EIO, "cannot write to the client") : AG_EXIT_OK;
  ag_str_release(&line);
  json_decref(m.tools);
  fclose(m.out);
  pthread_mutex_destroy(&m.mu);
  return rc;
}
