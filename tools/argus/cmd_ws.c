/*
 * cmd_ws.c — `argus ws`: the versioned workspace from the command line.
 *
 *   ws init                          create the workspace (idempotent)
 *   ws ls [WHAT] [--kind K] [--limit N]
 *                                    refs, versions, tasks, artifacts, queries
 *   ws show ID                       one record: v12, t3, q7, a hash (prefix), a ref
 *   ws log [--limit N]               history, newest first
 *   ws check                         verify everything; exit 1 on a problem
 *   ws gc [--dry-run] [--grace S]    drop what nothing reaches
 *   ws put FILE|- [--kind K]         store a file; prints its hash
 *   ws get HASH [-o FILE]            content to stdout or FILE (verified first)
 *   ws ref [NAME [TARGET]] [--delete]
 *                                    list, show, set or delete named refs
 *
 * A thin client of argus/store.h: it parses, calls the library, prints.
 */
#include "argus/store.h"
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const ag_cli_opt cmd_ws_opts[] = {
    {"kind", 'k', "KIND", "artifact kind (put: default from the file name; ls: filter)"},
    {"output", 'o', "FILE", "get: write the content to FILE instead of stdout"},
    {"dry-run", 'n', NULL, "gc: list what would be removed, remove nothing"},
    {"grace", 0, "SECONDS", "gc: keep unreachable artifacts newer than this (default 3600)"},
    {"limit", 0, "N", "ls, log: show at most N entries per list (default 20; 0 = all)"},
    {"delete", 'd', NULL, "ref: delete the named ref"},
    {0},
};

const char cmd_ws_details[] =
    "subcommands:\n"
    "  init                  create the workspace (default .argus; see --workspace)\n"
    "  ls [WHAT]             list refs, versions, tasks, artifacts and queries (or one kind)\n"
    "  show ID               one record: v12 (version), t3 (task), q7 (query), a hash or a\n"
    "                        unique prefix of one (artifact), or a ref name\n"
    "  log                   history of tasks, versions, queries, reports and ref changes\n"
    "  check                 verify the database, every blob's hash and every task key\n"
    "  gc [--dry-run]        remove artifacts no ref, version, task or report reaches,\n"
    "                        and the directories of failed trace/observe runs\n"
    "  put FILE|-            store a file (or standard input); prints its SHA-256\n"
    "  get HASH [-o FILE]    write an artifact, verified, to stdout or FILE\n"
    "  ref [NAME [TARGET]]   list refs, show one, or point NAME at a version or artifact\n"
    "\n"
    "exit status: 0 ok, 1 failure (or a problem found by check), 2 usage error\n"
    "docs/workspace.md describes the layout, task keys, crash safety and gc.";

static const char *sub = "";

/* "argus ws SUB: msg" on stderr (noted for the --json error object). */
static void say(const char *fmt, ...) AG_PRINTF(1, 2);
static void say(const char *fmt, ...) {
  ag_str m = AG_STR_INIT;
  va_list ap;
  va_start(ap, fmt);
  ag_str_vprintf(&m, fmt, ap);
  va_end(ap);
  fprintf(stderr, "argus ws %s: %s\n", sub, ag_str_cstr(&m));
  ag_cli_note_error(ag_str_cstr(&m));
  ag_str_release(&m);
}

static int fail(int rc) {
  const char *m = ag_store_errmsg();
  say("%s", m && *m ? m : ag_strerror(rc));
  return AG_EXIT_FAIL;
}

static void human(uint64_t n, char buf[32]) {
  static const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)n;
  int i = 0;
  while (v >= 1024 && i < 4) {
    v /= 1024;
    i++;
  }
  if (i == 0)
    snprintf(buf, 32, "%llu B", (unsigned long long)n);
  else
    snprintf(buf, 32, "%.1f %s", v, u[i]);
}

static void when(uint64_t ns, char buf[32]) {
  if (ns)
    ag_iso8601(ns, buf);
  else
    snprintf(buf, 32, "-");
}

/* Parses a non-negative integer option. */
static int opt_uint(ag_cli *cli, const char *name, long long dflt, long long *out) {
  const char *v = ag_cli_get(cli, name);
  *out = dflt;
  if (!v)
    return 0;
  char *end = NULL;
  long long x = strtoll(v, &end, 10);
  if (!*v || *end || x < 0)
    return ag_cli_usage_error(cli, "--%s needs a whole number >= 0, not '%s'", name, v);
  *out = x;
  return 0;
}

/* Options each subcommand accepts; anything else is a usage error. */
static int only_opts(ag_cli *cli, const char *const *allowed) {
  for (int i = 0; cmd_ws_opts[i].name; i++) {
    if (!cli->values[i])
      continue;
    int ok = 0;
    for (const char *const *a = allowed; *a; a++)
      ok |= !strcmp(*a, cmd_ws_opts[i].name);
    if (!ok)
      return ag_cli_usage_error(cli, "option '--%s' does not apply to 'ws %s'",
                                cmd_ws_opts[i].name, sub);
  }
  return 0;
}

static int nargs(ag_cli *cli, int lo, int hi, const char *what) {
  int n = cli->npos - 1;
  if (n < lo)
    return ag_cli_usage_error(cli, "'ws %s' needs %s", sub, what);
  if (n > hi)
    return ag_cli_usage_error(cli, "unexpected argument '%s' for 'ws %s'", cli->pos[1 + hi], sub);
  return 0;
}

static int open_ws(ag_cli *cli, unsigned flags, ag_store **st) {
  int rc = ag_store_open(cli->workspace, flags, st);
  return rc ? fail(rc) : 0;
}

static int print_json(json_t *j) {
  if (!j) {
    say("out of memory");
    return AG_EXIT_FAIL;
  }
  ag_cli_print_json(j);
  json_decref(j);
  return AG_EXIT_OK;
}

/* ------------------------------------------------------------ to JSON */
static json_t *artifact_json(const ag_artifact *a) {
  char t[32];
  when(a->created_ns, t);
  json_t *j = json_pack("{s:s,s:s,s:I,s:I,s:b,s:s,s:s}", "hash", a->hash, "kind", a->kind, "size",
                        (json_int_t)a->size, "stored_size", (json_int_t)a->stored_size,
                        "compressed", a->compressed, "storage",
                        a->inline_db ? "database" : "objects", "created", t);
  if (j)
    json_object_set_new(j, "task", a->task_id ? json_integer(a->task_id) : json_null());
  return j;
}

static json_t *task_json(const ag_store_task *t) {
  char c[32], s[32], e[32];
  when(t->created_ns, c);
  when(t->start_ns, s);
  when(t->end_ns, e);
  json_t *cfg = json_loads(t->config ? t->config : "{}", 0, NULL);
  json_t *j = json_pack("{s:I,s:s,s:s,s:s,s:o,s:s,s:s,s:s,s:s}", "id", (json_int_t)t->id, "key",
                        t->key, "type", ag_task_type_name(t->type), "status",
                        ag_store_task_status_name(t->status), "config", cfg ? cfg : json_object(),
                        "argus_version", t->argus_version, "created", c, "started", s, "ended",
                        e);
  if (!j)
    return NULL;
  json_object_set_new(j, "seconds",
                      t->start_ns && t->end_ns >= t->start_ns
                          ? json_real((double)(t->end_ns - t->start_ns) / 1e9)
                          : json_null());
  json_object_set_new(j, "worker", t->worker ? json_string(t->worker) : json_null());
  json_object_set_new(j, "owner", t->owner ? json_string(t->owner) : json_null());
  json_object_set_new(j, "error", t->error ? json_string(t->error) : json_null());
  json_t *in = json_array(), *out = json_object();
  for (size_t i = 0; i < t->ninputs; i++)
    json_array_append_new(in, json_string(t->inputs[i]));
  for (size_t i = 0; i < t->noutputs; i++)
    json_object_set_new(out, t->outputs[i].name, json_string(t->outputs[i].hash));
  json_object_set_new(j, "inputs", in);
  json_object_set_new(j, "outputs", out);
  return j;
}

static json_t *query_json(const ag_store_query *q) {
  char t[32];
  when(q->created_ns, t);
  json_t *spec = json_loads(q->spec ? q->spec : "{}", 0, NULL);
  json_t *j = json_pack("{s:I,s:o,s:s}", "id", (json_int_t)q->id, "spec",
                        spec ? spec : json_object(), "created", t);
  if (!j)
    return NULL;
  json_object_set_new(j, "version", q->version_id ? json_integer(q->version_id) : json_null());
  json_t *r = json_array(), *ts = json_array();
  for (size_t i = 0; i < q->nreports; i++)
    json_array_append_new(r, json_string(q->reports[i]));
  for (size_t i = 0; i < q->ntasks; i++)
    json_array_append_new(ts, json_integer(q->tasks[i]));
  json_object_set_new(j, "reports", r);
  json_object_set_new(j, "tasks", ts);
  return j;
}

/* ------------------------------------------------------------ to text */
static void print_artifact_line(const ag_artifact *a) {
  char sz[32], stored[32];
  human(a->size, sz);
  human(a->stored_size, stored);
  printf("  %.12s  %-9s %10s", a->hash, a->kind, sz);
  if (a->compressed)
    printf("  (zstd %s)", stored);
  if (a->task_id)
    printf("  from t%lld", (long long)a->task_id);
  printf("\n");
}

static void print_version_line(const ag_version *v) {
  if (v->parent)
    printf("  v%-5lld from v%lld by %s, module %.12s\n", (long long)v->id, (long long)v->parent,
           v->transform, v->module);
  else
    printf("  v%-5lld root, module %.12s\n", (long long)v->id, v->module);
}

static void print_task_line(const ag_store_task *t) {
  printf("  t%-5lld %-10s %-7s key %.12s", (long long)t->id, ag_task_type_name(t->type),
         ag_store_task_status_name(t->status), t->key);
  if (t->start_ns && t->end_ns >= t->start_ns)
    printf("  %.3f s", (double)(t->end_ns - t->start_ns) / 1e9);
  if (t->worker)
    printf("  worker %s", t->worker);
  printf("\n");
}

static void print_ref_line(const ag_ref *r) {
  char tgt[80];
  ag_store_obj_text(&r->target, tgt, sizeof tgt);
  printf("  %-24s -> %s\n", r->name, tgt);
}

/* --------------------------------------------------------------- init */
static int ws_init(ag_cli *cli) {
  static const char *const ok[] = {NULL};
  int rc;
  if ((rc = only_opts(cli, ok)) || (rc = nargs(cli, 0, 0, "")))
    return rc;
  ag_str dbp = AG_STR_INIT;
  ag_str_printf(&dbp, "%s/workspace.db", cli->workspace);
  int existed = access(ag_str_cstr(&dbp), F_OK) == 0;
  ag_str_release(&dbp);
  ag_store *st = NULL;
  if ((rc = open_ws(cli, AG_STORE_CREATE, &st)))
    return rc;
  ag_store_close(st);
  if (cli->json)
    return print_json(json_pack("{s:s,s:i,s:b}", "workspace", cli->workspace, "schema",
                                AG_STORE_SCHEMA_VERSION, "created", !existed));
  printf("%s workspace '%s' (schema %d)\n", existed ? "existing" : "initialized",
         cli->workspace, AG_STORE_SCHEMA_VERSION);
  return AG_EXIT_OK;
}

/* ----------------------------------------------------------------- ls */
static int ws_ls(ag_cli *cli) {
  static const char *const ok[] = {"kind", "limit", NULL};
  int rc;
  if ((rc = only_opts(cli, ok)) || (rc = nargs(cli, 0, 1, "")))
    return rc;
  long long limit;
  if ((rc = opt_uint(cli, "limit", 20, &limit)))
    return rc;
  const char *what = cli->npos > 1 ? cli->pos[1] : "all";
  static const char *const sections[] = {"refs", "versions", "tasks", "artifacts", "queries"};
  int want[5] = {0};
  int any = 0;
  for (int i = 0; i < 5; i++) {
    want[i] = !strcmp(what, "all") || !strcmp(what, sections[i]);
    any |= want[i];
  }
  if (!any)
    return ag_cli_usage_error(cli, "'ws ls' lists refs, versions, tasks, artifacts or queries, "
                                   "not '%s'", what);
  if (ag_cli_get(cli, "kind") && !want[3])
    return ag_cli_usage_error(cli, "--kind filters artifacts only");
  ag_store *st = NULL;
  if ((rc = open_ws(cli, 0, &st)))
    return rc;
  ag_store_stats s;
  if ((rc = ag_store_stats_get(st, &s))) {
    ag_store_close(st);
    return fail(rc);
  }
  ag_list_opts lo = {(size_t)limit, 0, ag_cli_get(cli, "kind")};
  json_t *j = cli->json ? json_pack("{s:s}", "workspace", cli->workspace) : NULL;
  int out = AG_EXIT_OK;
  char a[32], b[32];
  if (want[0]) {
    ag_ref *r = NULL;
    size_t n = 0;
    if ((rc = ag_store_refs(st, &r, &n))) {
      out = fail(rc);
      goto done;
    }
    size_t shown = limit && (size_t)limit < n ? (size_t)limit : n;
    if (j) {
      json_t *arr = json_array();
      for (size_t i = 0; i < shown; i++)
        json_array_append_new(arr, ag_store_ref_json(&r[i]));
      json_object_set_new(j, "refs", json_pack("{s:I,s:o}", "total", (json_int_t)n, "items", arr));
    } else {
      printf("refs (%zu)\n", n);
      for (size_t i = 0; i < shown; i++)
        print_ref_line(&r[i]);
      if (shown < n)
        printf("  … %zu more (--limit 0 shows all)\n", n - shown);
    }
    ag_free(r);
  }
  if (want[1]) {
    ag_version *v = NULL;
    size_t n = 0;
    if ((rc = ag_store_versions(st, &lo, &v, &n))) {
      out = fail(rc);
      goto done;
    }
    if (j) {
      json_t *arr = json_array();
      for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, ag_store_version_json(&v[i]));
      json_object_set_new(j, "versions",
                          json_pack("{s:I,s:o}", "total", (json_int_t)s.versions, "items", arr));
    } else {
      printf("versions (%llu)\n", (unsigned long long)s.versions);
      for (size_t i = 0; i < n; i++)
        print_version_line(&v[i]);
      if (n < s.versions)
        printf("  … %llu more (--limit 0 shows all)\n", (unsigned long long)(s.versions - n));
    }
    ag_store_versions_free(v, n);
  }
  if (want[2]) {
    ag_store_task *t = NULL;
    size_t n = 0;
    if ((rc = ag_store_tasks(st, &lo, &t, &n))) {
      out = fail(rc);
      goto done;
    }
    if (j) {
      json_t *arr = json_array();
      for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, task_json(&t[i]));
      json_object_set_new(
          j, "tasks",
          json_pack("{s:I,s:{s:I,s:I,s:I,s:I},s:o}", "total", (json_int_t)s.tasks, "by_status",
                    "pending", (json_int_t)s.tasks_by_status[0], "running",
                    (json_int_t)s.tasks_by_status[1], "ok", (json_int_t)s.tasks_by_status[2],
                    "failed", (json_int_t)s.tasks_by_status[3], "items", arr));
    } else {
      printf("tasks (%llu: %llu ok, %llu failed, %llu running, %llu pending)\n",
             (unsigned long long)s.tasks, (unsigned long long)s.tasks_by_status[2],
             (unsigned long long)s.tasks_by_status[3], (unsigned long long)s.tasks_by_status[1],
             (unsigned long long)s.tasks_by_status[0]);
      for (size_t i = 0; i < n; i++)
        print_task_line(&t[i]);
      if (n < s.tasks)
        printf("  … %llu more (--limit 0 shows all)\n", (unsigned long long)(s.tasks - n));
    }
    ag_store_tasks_free(t, n);
  }
  if (want[3]) {
    ag_artifact *v = NULL;
    size_t n = 0;
    if ((rc = ag_store_artifacts(st, &lo, &v, &n))) {
      out = fail(rc);
      goto done;
    }
    human(s.payload_bytes, a);
    human(s.stored_bytes, b);
    if (j) {
      json_t *arr = json_array();
      for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, artifact_json(&v[i]));
      json_object_set_new(j, "artifacts",
                          json_pack("{s:I,s:I,s:I,s:o}", "total", (json_int_t)s.artifacts,
                                    "bytes", (json_int_t)s.payload_bytes, "stored_bytes",
                                    (json_int_t)s.stored_bytes, "items", arr));
    } else {
      printf("artifacts (%llu, %s, stored %s)\n", (unsigned long long)s.artifacts, a, b);
      for (size_t i = 0; i < n; i++)
        print_artifact_line(&v[i]);
      if (!lo.kind && n < s.artifacts)
        printf("  … %llu more (--limit 0 shows all)\n", (unsigned long long)(s.artifacts - n));
    }
    ag_free(v);
  }
  if (want[4]) {
    ag_store_query *q = NULL;
    size_t n = 0;
    if ((rc = ag_store_queries(st, &lo, &q, &n))) {
      out = fail(rc);
      goto done;
    }
    if (j) {
      json_t *arr = json_array();
      for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, query_json(&q[i]));
      json_object_set_new(j, "queries",
                          json_pack("{s:I,s:o}", "total", (json_int_t)s.queries, "items", arr));
    } else {
      printf("queries (%llu)\n", (unsigned long long)s.queries);
      for (size_t i = 0; i < n; i++) {
        printf("  q%-5lld", (long long)q[i].id);
        if (q[i].version_id)
          printf(" on v%lld", (long long)q[i].version_id);
        printf("  %.70s\n", q[i].spec);
      }
    }
    ag_store_queries_free(q, n);
  }
done:
  ag_store_close(st);
  if (j) {
    if (out == AG_EXIT_OK)
      return print_json(j);
    json_decref(j);
  }
  return out;
}

/* --------------------------------------------------------------- show */
static int ws_show(ag_cli *cli) {
  static const char *const ok[] = {NULL};
  int rc;
  if ((rc = only_opts(cli, ok)) || (rc = nargs(cli, 1, 1, "an ID (v12, t3, q7, a hash or a ref)")))
    return rc;
  ag_store *st = NULL;
  if ((rc = open_ws(cli, 0, &st)))
    return rc;
  ag_obj o;
  if ((rc = ag_store_resolve(st, cli->pos[1], &o))) {
    ag_store_close(st);
    return fail(rc);
  }
  json_t *j = NULL;
  char t[32], sz[32];
  switch (o.kind) {
  case AG_OBJ_ARTIFACT: {
    ag_artifact a;
    if ((rc = ag_store_artifact(st, o.hash, &a)))
      break;
    if (cli->json) {
      j = artifact_json(&a);
      json_object_set_new(j, "record", json_string("artifact"));
      break;
    }
    when(a.created_ns, t);
    human(a.size, sz);
    printf("artifact %s\n  kind     %s\n  size     %s (%llu bytes)\n", a.hash, a.kind, sz,
           (unsigned long long)a.size);
    human(a.stored_size, sz);
    printf("  stored   %s%s, in the %s\n", sz, a.compressed ? " zstd" : " raw",
           a.inline_db ? "database" : "blob store");
    if (a.task_id)
      printf("  made by  t%lld\n", (long long)a.task_id);
    printf("  created  %s\n", t);
    break;
  }
  case AG_OBJ_VERSION: {
    ag_version v;
    if ((rc = ag_store_version_get(st, o.id, &v)))
      break;
    int64_t *chain = NULL;
    size_t n = 0;
    if ((rc = ag_store_version_ancestry(st, o.id, &chain, &n))) {
      ag_store_version_release(&v);
      break;
    }
    if (cli->json) {
      j = ag_store_version_json(&v);
      json_object_set_new(j, "record", json_string("version"));
      json_t *arr = json_array();
      for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, json_integer(chain[i]));
      json_object_set_new(j, "ancestry", arr);
    } else {
      when(v.created_ns, t);
      printf("version v%lld\n  module    %s\n", (long long)v.id, v.module);
      if (v.parent)
        printf("  parent    v%lld\n  transform %s\n", (long long)v.parent, v.transform);
      else
        printf("  root version\n");
      printf("  origin    %s\n", v.origin);
      if (v.task_id)
        printf("  made by   t%lld\n", (long long)v.task_id);
      printf("  created   %s\n  ancestry ", t);
      for (size_t i = 0; i < n; i++)
        printf(" %sv%lld", i ? "<- " : "", (long long)chain[i]);
      printf("\n");
    }
    ag_free(chain);
    ag_store_version_release(&v);
    break;
  }
  case AG_OBJ_TASK: {
    ag_store_task tk;
    if ((rc = ag_store_task_get(st, o.id, &tk)))
      break;
    if (cli->json) {
      j = task_json(&tk);
      json_object_set_new(j, "record", json_string("task"));
    } else {
      printf("task t%lld\n  type     %s\n  status   %s\n  key      %s\n  config   %s\n",
             (long long)tk.id, ag_task_type_name(tk.type), ag_store_task_status_name(tk.status), tk.key,
             tk.config);
      printf("  argus    %s\n", tk.argus_version);
      if (tk.worker)
        printf("  worker   %s\n", tk.worker);
      if (tk.owner)
        printf("  process  %s\n", tk.owner);
      when(tk.start_ns, t);
      printf("  started  %s\n", t);
      if (tk.end_ns && tk.start_ns) {
        when(tk.end_ns, t);
        printf("  ended    %s (%.3f s)\n", t, (double)(tk.end_ns - tk.start_ns) / 1e9);
      }
      for (size_t i = 0; i < tk.ninputs; i++)
        printf("  input    %s\n", tk.inputs[i]);
      for (size_t i = 0; i < tk.noutputs; i++)
        printf("  output   %-10s %s\n", tk.outputs[i].name, tk.outputs[i].hash);
      if (tk.error)
        printf("  error    %s\n", tk.error);
    }
    ag_store_task_release(&tk);
    break;
  }
  case AG_OBJ_QUERY: {
    ag_store_query q;
    if ((rc = ag_store_query_get(st, o.id, &q)))
      break;
    if (cli->json) {
      j = query_json(&q);
      json_object_set_new(j, "record", json_string("query"));
    } else {
      when(q.created_ns, t);
      printf("query q%lld\n  spec     %s\n", (long long)q.id, q.spec);
      if (q.version_id)
        printf("  version  v%lld\n", (long long)q.version_id);
      printf("  created  %s\n", t);
      for (size_t i = 0; i < q.ntasks; i++)
        printf("  task     t%lld\n", (long long)q.tasks[i]);
      for (size_t i = 0; i < q.nreports; i++)
        printf("  report   %s\n", q.reports[i]);
    }
    ag_store_query_release(&q);
    break;
  }
  default:
    rc = AG_EINVAL;
    break;
  }
  ag_store_close(st);
  if (rc) {
    json_decref(j);
    return fail(rc);
  }
  return j ? print_json(j) : AG_EXIT_OK;
}

/* ---------------------------------------------------------------- log */
static int ws_log(ag_cli *cli) {
  static const char *const ok[] = {"limit", NULL};
  int rc;
  if ((rc = only_opts(cli, ok)) || (rc = nargs(cli, 0, 0, "")))
    return rc;
  long long limit;
  if ((rc = opt_uint(cli, "limit", 20, &limit)))
    return rc;
  ag_store *st = NULL;
  if ((rc = open_ws(cli, 0, &st)))
    return rc;
  ag_log_entry *e = NULL;
  size_t n = 0;
  rc = ag_store_log(st, (size_t)limit, &e, &n);
  ag_store_close(st);
  if (rc)
    return fail(rc);
  json_t *arr = cli->json ? json_array() : NULL;
  for (size_t i = 0; i < n; i++) {
    char t[32], id[80];
    when(e[i].time_ns, t);
    ag_store_obj_text(&e[i].obj, id, sizeof id);
    if (arr)
      json_array_append_new(arr, json_pack("{s:s,s:s,s:s,s:s}", "time", t, "what", e[i].what,
                                           "id", id, "text", e[i].text));
    else
      printf("%s  %-7s %s\n", t, e[i].what, e[i].text);
  }
  ag_store_log_free(e, n);
  return arr ? print_json(arr) : AG_EXIT_OK;
}

/* -------------------------------------------------------------- check */
static int ws_check(ag_cli *cli) {
  static const char *const ok[] = {NULL};
  int rc;
  if ((rc = only_opts(cli, ok)) || (rc = nargs(cli, 0, 0, "")))
    return rc;
  ag_store *st = NULL;
  if ((rc = open_ws(cli, 0, &st)))
    return rc;
  ag_check_report r;
  rc = ag_store_check(st, &r);
  ag_store_close(st);
  if (rc)
    return fail(rc);
  int sound = r.nproblems == 0;
  if (cli->json) {
    json_t *p = json_array(), *nt = json_array();
    for (size_t i = 0; i < r.nproblems; i++)
      json_array_append_new(p, json_string(r.problems[i]));
    for (size_t i = 0; i < r.nnotes; i++)
      json_array_append_new(nt, json_string(r.notes[i]));
    print_json(json_pack("{s:b,s:o,s:o,s:I,s:I}", "ok", sound, "problems", p, "notes", nt,
                         "blobs_checked", (json_int_t)r.blobs_checked, "bytes_checked",
                         (json_int_t)r.bytes_checked));
  } else {
    for (size_t i = 0; i < r.nproblems; i++)
      printf("problem: %s\n", r.problems[i]);
    for (size_t i = 0; i < r.nnotes; i++)
      printf("note: %s\n", r.notes[i]);
    char b[32];
    human(r.bytes_checked, b);
    if (sound)
      printf("workspace '%s' is sound: %llu blobs (%s) verified\n", cli->workspace,
             (unsigned long long)r.blobs_checked, b);
    else
      printf("workspace '%s': %zu problem(s) found\n", cli->workspace, r.nproblems);
  }
  ag_store_check_release(&r);
  return sound ? AG_EXIT_OK : AG_EXIT_FAIL;
}

/* ----------------------------------------------------------------- gc */
static int ws_gc(ag_cli *cli) {
  static const char *const ok[] = {"dry-run", "grace", NULL};
  int rc;
  if ((rc = only_opts(cli, ok)) || (rc = nargs(cli, 0, 0, "")))
    return rc;
  long long grace;
  if ((rc = opt_uint(cli, "grace", 3600, &grace)))
    return rc;
  ag_store *st = NULL;
  if ((rc = open_ws(cli, 0, &st)))
    return rc;
  ag_gc_opts o = {ag_cli_flag(cli, "dry-run"), grace};
  ag_gc_report r;
  rc = ag_store_gc(st, &o, &r);
  ag_store_close(st);
  if (rc)
    return fail(rc);
  if (cli->json) {
    json_t *arr = json_array();
    for (size_t i = 0; i < r.nremoved; i++)
      json_array_append_new(arr, json_string(r.removed[i]));
    json_t *runs = json_array();
    for (size_t i = 0; i < r.nrun_dirs; i++)
      json_array_append_new(runs, json_string(r.run_dirs[i]));
    print_json(json_pack("{s:b,s:o,s:I,s:I,s:I,s:o}", "dry_run", o.dry_run, "artifacts", arr,
                         "bytes", (json_int_t)r.removed_bytes, "orphan_files",
                         (json_int_t)r.orphan_files, "temp_files", (json_int_t)r.temp_files,
                         "run_dirs", runs));
  } else {
    const char *verb = o.dry_run ? "would remove" : "removed";
    for (size_t i = 0; i < r.nremoved; i++)
      printf("%s %s\n", verb, r.removed[i]);
    for (size_t i = 0; i < r.nrun_dirs; i++)
      printf("%s failed run directory %s\n", verb, r.run_dirs[i]);
    char b[32];
    human(r.removed_bytes, b);
    printf("%s %zu artifact(s) (%s stored), %zu orphan blob file(s), %zu temp file(s), %zu failed "
           "run director%s\n",
           verb, r.nremoved, b, r.orphan_files, r.temp_files, r.nrun_dirs,
           r.nrun_dirs == 1 ? "y" : "ies");
  }
  ag_store_gc_release(&r);
  return AG_EXIT_OK;
}

/* ---------------------------------------------------------------- put */
static const char *kind_from_name(const char *path) {
  static const struct {
    const char *ext, *kind;
  } m[] = {{".ptx", "ptx"},   {".cubin", "cubin"}, {".json", "json"}, {".log", "log"},
           {".txt", "log"},   {".cu", "source"},   {".py", "source"}, {".map", "map"},
           {".sass", "sass"}, {".trace", "evidence"}};
  const char *dot = strrchr(path, '.');
  for (size_t i = 0; dot && i < sizeof m / sizeof m[0]; i++)
    if (!strcmp(dot, m[i].ext))
      return m[i].kind;
  return "blob";
}

static int ws_put(ag_cli *cli) {
  static const char *const ok[] = {"kind", NULL};
  int rc;
  if ((rc = only_opts(cli, ok)) || (rc = nargs(cli, 1, 1, "a FILE (or - for standard input)")))
    return rc;
  const char *path = cli->pos[1];
  if (strcmp(path, "-") && (rc = ag_cli_input_file(cli, path)))
    return rc;
  const char *kind = ag_cli_get(cli, "kind");
  ag_put_opts o = {kind ? kind : kind_from_name(path), 0};
  ag_store *st = NULL;
  if ((rc = open_ws(cli, 0, &st)))
    return rc;
  char h[65];
  ag_artifact a;
  rc = ag_store_put_file(st, path, &o, h);
  if (!rc)
    rc = ag_store_artifact(st, h, &a);
  ag_store_close(st);
  if (rc)
    return fail(rc);
  if (cli->json)
    return print_json(artifact_json(&a));
  printf("%s\n", h);
  return AG_EXIT_OK;
}

/* ---------------------------------------------------------------- get */
static int ws_get(ag_cli *cli) {
  static const char *const ok[] = {"output", NULL};
  int rc;
  if ((rc = only_opts(cli, ok)) || (rc = nargs(cli, 1, 1, "a HASH (or prefix, or ref)")))
    return rc;
  const char *out = ag_cli_get(cli, "output");
  if (cli->json && !out)
    return ag_cli_usage_error(cli, "--json needs -o FILE (the content is not JSON)");
  ag_store *st = NULL;
  if ((rc = open_ws(cli, 0, &st)))
    return rc;
  ag_obj o;
  rc = ag_store_resolve(st, cli->pos[1], &o);
  if (!rc && o.kind != AG_OBJ_ARTIFACT) {
    ag_store_close(st);
    say("'%s' is not an artifact (try 'argus ws show %s')", cli->pos[1], cli->pos[1]);
    return AG_EXIT_FAIL;
  }
  void *data = NULL;
  size_t len = 0;
  ag_artifact a;
  if (!rc)
    rc = out ? ag_store_get_file(st, o.hash, out) : ag_store_get(st, o.hash, &data, &len);
  if (!rc && cli->json)
    rc = ag_store_artifact(st, o.hash, &a);
  ag_store_close(st);
  if (rc)
    return fail(rc);
  if (out) {
    if (cli->json) {
      json_t *j = artifact_json(&a);
      json_object_set_new(j, "path", json_string(out));
      return print_json(j);
    }
    return AG_EXIT_OK;
  }
  size_t w = fwrite(data, 1, len, stdout);
  ag_free(data);
  if (w != len || fflush(stdout) != 0) {
    say("cannot write standard output");
    return AG_EXIT_FAIL;
  }
  return AG_EXIT_OK;
}

/* ---------------------------------------------------------------- ref */
static int ws_ref(ag_cli *cli) {
  static const char *const ok[] = {"delete", NULL};
  int rc;
  if ((rc = only_opts(cli, ok)) || (rc = nargs(cli, 0, 2, "")))
    return rc;
  int del = ag_cli_flag(cli, "delete");
  if (del && cli->npos != 2)
    return ag_cli_usage_error(cli, "'ws ref --delete' takes exactly one NAME");
  ag_store *st = NULL;
  if ((rc = open_ws(cli, 0, &st)))
    return rc;
  if (cli->npos == 1) { /* list */
    ag_ref *r = NULL;
    size_t n = 0;
    rc = ag_store_refs(st, &r, &n);
    ag_store_close(st);
    if (rc)
      return fail(rc);
    json_t *arr = cli->json ? json_array() : NULL;
    for (size_t i = 0; i < n; i++) {
      if (arr)
        json_array_append_new(arr, ag_store_ref_json(&r[i]));
      else
        print_ref_line(&r[i]);
    }
    ag_free(r);
    return arr ? print_json(arr) : AG_EXIT_OK;
  }
  const char *name = cli->pos[1];
  if (del) {
    rc = ag_store_ref_delete(st, name);
    ag_store_close(st);
    if (rc)
      return fail(rc);
    if (cli->json)
      return print_json(json_pack("{s:s,s:b}", "name", name, "deleted", 1));
    printf("deleted ref '%s'\n", name);
    return AG_EXIT_OK;
  }
  if (cli->npos == 3) { /* set */
    ag_obj t;
    rc = ag_store_resolve(st, cli->pos[2], &t);
    if (!rc && t.kind != AG_OBJ_VERSION && t.kind != AG_OBJ_ARTIFACT) {
      ag_store_close(st);
      say("a ref points at a version (v12) or an artifact, not '%s'", cli->pos[2]);
      return AG_EXIT_FAIL;
    }
    if (!rc)
      rc = ag_store_ref_set(st, name, &t);
    if (rc) {
      ag_store_close(st);
      return fail(rc);
    }
  }
  ag_ref r;
  rc = ag_store_ref_get(st, name, &r);
  ag_store_close(st);
  if (rc)
    return fail(rc);
  if (cli->json)
    return print_json(ag_store_ref_json(&r));
  char tgt[80];
  ag_store_obj_text(&r.target, tgt, sizeof tgt);
  printf("%s -> %s\n", r.name, tgt);
  return AG_EXIT_OK;
}

/* ----------------------------------------------------------- dispatch */
int cmd_ws(ag_cli *cli) {
  static const struct {
    const char *name;
    int (*fn)(ag_cli *);
  } subs[] = {{"init", ws_init}, {"ls", ws_ls},   {"show", ws_show}, {"log", ws_log},
              {"check", ws_check}, {"gc", ws_gc}, {"put", ws_put},   {"get", ws_get},
              {"ref", ws_ref}};
  if (cli->npos < 1)
    return ag_cli_usage_error(cli, "missing subcommand: init, ls, show, log, check, gc, put, "
                                   "get or ref");
  for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
    if (!strcmp(cli->pos[0], subs[i].name)) {
      sub = subs[i].name;
      return subs[i].fn(cli);
    }
  return ag_cli_usage_error(cli, "unknown subcommand '%s' (init, ls, show, log, check, gc, put, "
                                 "get, ref)", cli->pos[0]);
}
