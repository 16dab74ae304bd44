/*
 * task.c — task records, task keys and memoization.
 *
 * A task key is SHA-256 over "argus-task/1", the type, the canonical config,
 * the number of inputs, the sorted input hashes and the Argus version, each
 * followed by a NUL byte (none of them can contain one), so two different
 * tuples never share a key preimage. Attempts of one key are rows of
 * `tasks`; at most one is running at a time (per live process), the first
 * that finished ok is the memoized answer, failed ones stay as history.
 *
 * Load: the planner asks ag_store_task_begin once per plan node; a memoized
 * answer is one indexed lookup in a read transaction (p99 well under 1 ms
 * with 10^5 tasks: bench/RESULTS.md).
 */
#include "store_int.h"

#include <stdlib.h>
#include <string.h>

static const char *const type_names[] = {"transform", "collect", "synthesize", "control"};
static const char *const status_names[] = {"pending", "running", "ok", "failed"};

const char *ag_store_task_status_name(ag_store_task_status s) {
  return (unsigned)s < 4 ? status_names[s] : "?";
}

int ag__task_type_parse(const char *s, ag_task_type *t) {
  for (int i = 0; s && i < 4; i++)
    if (!strcmp(s, type_names[i])) {
      *t = (ag_task_type)i;
      return 0;
    }
  return AG_EINVAL;
}

int ag__task_status_parse(const char *s, ag_store_task_status *t) {
  for (int i = 0; s && i < 4; i++)
    if (!strcmp(s, status_names[i])) {
      *t = (ag_store_task_status)i;
      return 0;
    }
  return AG_EINVAL;
}

/* ------------------------------------------------------------- keys */
static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int ag__task_key_raw(const char *type, const char *canon_config, const char *const *inputs,
                     size_t ninputs, const char *version, char key[65]) {
  key[0] = 0;
  const char **sorted = ag_malloc((ninputs ? ninputs : 1) * sizeof *sorted);
  if (!sorted)
    return ag__fail(AG_ENOMEM, "out of memory computing a task key");
  for (size_t i = 0; i < ninputs; i++)
    sorted[i] = inputs[i];
  qsort(sorted, ninputs, sizeof *sorted, cmp_str);
  ag_sha256 h;
  int rc = ag_sha256_begin(&h);
  if (rc) {
    ag_free(sorted);
    return ag__fail(rc, "cannot start sha-256");
  }
  char count[24];
  snprintf(count, sizeof count, "%zu", ninputs);
  const char *parts[] = {"argus-task/1", type, canon_config, count};
  for (size_t i = 0; i < 4; i++)
    ag_sha256_update(&h, parts[i], strlen(parts[i]) + 1);
  for (size_t i = 0; i < ninputs; i++)
    ag_sha256_update(&h, sorted[i], strlen(sorted[i]) + 1);
  ag_sha256_update(&h, version, strlen(version) + 1);
  ag_free(sorted);
  rc = ag_sha256_end(&h, NULL, key);
  return rc ? ag__fail(rc, "sha-256 failed") : 0;
}

/* Validates a spec and returns its canonical config (owned). */
static int spec_prepare(const ag_store_task_spec *spec, char **canon) {
  *canon = NULL;
  if (!spec)
    return ag__fail(AG_EINVAL, "no task spec");
  if ((unsigned)spec->type > AG_TASK_CONTROL)
    return ag__fail(AG_EINVAL, "invalid task type %d (transform, collect, synthesize, control)",
                    (int)spec->type);
  if (spec->config && !json_is_object(spec->config))
    return ag__fail(AG_EINVAL, "task config must be a JSON object");
  if (spec->ninputs && !spec->inputs)
    return ag__fail(AG_EINVAL, "task spec has %zu inputs but no input array", spec->ninputs);
  for (size_t i = 0; i < spec->ninputs; i++)
    if (!ag__hash_valid(spec->inputs[i]))
      return ag__fail(AG_EINVAL, "task input %zu '%s' is not an artifact hash (64 lowercase hex)",
                      i, spec->inputs[i] ? spec->inputs[i] : "(null)");
  if (spec->argus_version && (!*spec->argus_version || strlen(spec->argus_version) > 31))
    return ag__fail(AG_EINVAL, "invalid argus version '%s' in task spec", spec->argus_version);
  if (spec->worker && strlen(spec->worker) > 1000)
    return ag__fail(AG_EINVAL, "task worker name is longer than 1000 characters");
  if (spec->query_id < 0)
    return ag__fail(AG_EINVAL, "invalid query id %lld", (long long)spec->query_id);
  if (spec->config) {
    *canon = ag_json_canonical(spec->config);
  } else {
    *canon = ag_strdup("{}");
  }
  if (!*canon)
    return ag__fail(AG_ENOMEM, "out of memory canonicalizing a task config");
  return 0;
}

int ag_store_task_key(const ag_store_task_spec *spec, char key_out[65]) {
  key_out[0] = 0;
  char *canon = NULL;
  int rc = spec_prepare(spec, &canon);
  if (!rc)
    rc = ag__task_key_raw(type_names[spec->type], canon, spec->inputs, spec->ninputs,
                          spec->argus_version ? spec->argus_version : AG_VERSION_STRING, key_out);
  ag_free(canon);
  return rc;
}

/* ------------------------------------------------------------ outputs */
int ag__load_outputs(ag_store *st, int64_t id, ag_store_output **out, size_t *n) {
  *out = NULL;
  *n = 0;
  sqlite3_stmt *s;
  static const char sql[] = "SELECT name, hash FROM task_outputs WHERE task_id = ? ORDER BY name";
  int rc;
  if ((rc = ag__stmt(st, sql, &s)) || (rc = ag__bind_i64(st, s, 1, id)))
    return rc;
  size_t cap = 0;
  ag_store_output *v = NULL;
  while ((rc = AG__SQL(st, sqlite3_step(s))) == SQLITE_ROW) {
    if ((rc = ag__grow(&v, &cap, *n, sizeof *v)))
      break;
    ag__col_copy(s, 0, v[*n].name, sizeof v[*n].name);
    ag__col_copy(s, 1, v[*n].hash, sizeof v[*n].hash);
    (*n)++;
  }
  if (rc < 0) {
    ag_free(v);
    *n = 0;
    return rc;
  }
  *out = v;
  return 0;
}


/* -------------------------------------------------------------- begin */
typedef struct begin_ctx {
  const ag_store_task_spec *spec;
  unsigned flags;
  const char *canon, *version;
  ag_store_claim *claim;
  int hit; /* fast path: found a memoized answer */
} begin_ctx;

static void claim_reset(ag_store_claim *c) {
  ag_free(c->outputs);
  c->outputs = NULL;
  c->noutputs = 0;
  c->task_id = 0;
  c->status = AG_STORE_TASK_PENDING;
}

static int memo_lookup(ag_store *st, begin_ctx *c) {
  c->hit = 0;
  sqlite3_stmt *s;
  static const char sql[] =
      "SELECT id FROM tasks WHERE key = ? AND status = 'ok' ORDER BY id LIMIT 1";
  int rc = ag__row_text(st, sql, c->claim->key, &s);
  if (rc <= 0)
    return rc;
  int64_t id = sqlite3_column_int64(s, 0);
  sqlite3_reset(s);
  if ((rc = ag__load_outputs(st, id, &c->claim->outputs, &c->claim->noutputs)))
    return rc;
  c->claim->task_id = id;
  c->claim->status = AG_STORE_TASK_OK;
  c->hit = 1;
  return 0;
}

static int memo_body(ag_store *st, void *vc) {
  begin_ctx *c = vc;
  claim_reset(c->claim);
  return memo_lookup(st, c);
}

static int link_query(ag_store *st, int64_t qid, int64_t tid) {
  sqlite3_stmt *s;
  int rc = ag__record_exists(st, AG_OBJ_QUERY, qid);
  if (rc < 0)
    return rc;
  if (rc == 0)
    return ag__fail(AG_ENOTFOUND, "query q%lld does not exist", (long long)qid);
  static const char ins[] = "INSERT OR IGNORE INTO query_tasks(query_id, task_id) VALUES(?, ?)";
  if ((rc = ag__stmt(st, ins, &s)) || (rc = ag__bind_i64(st, s, 1, qid)) ||
      (rc = ag__bind_i64(st, s, 2, tid)))
    return rc;
  rc = AG__SQL(st, sqlite3_step(s));
  return rc < 0 ? rc : 0;
}

static int begin_body(ag_store *st, void *vc) {
  begin_ctx *c = vc;
  const ag_store_task_spec *sp = c->spec;
  claim_reset(c->claim);
  int rc = memo_lookup(st, c);
  if (rc)
    return rc;
  if (c->hit)
    return sp->query_id ? link_query(st, sp->query_id, c->claim->task_id) : 0;
  /* attempts in flight */
  int64_t pending = 0, running = 0;
  char running_owner[200] = "";
  int64_t dead[16];
  int ndead = 0;
  {
    sqlite3_stmt *s;
    static const char sql[] = "SELECT id, status, owner FROM tasks WHERE key = ? AND status IN "
                              "('pending', 'running') ORDER BY id";
    if ((rc = ag__stmt(st, sql, &s)) || (rc = ag__bind_text(st, s, 1, c->claim->key)))
      return rc;
    while ((rc = AG__SQL(st, sqlite3_step(s))) == SQLITE_ROW) {
      int64_t id = sqlite3_column_int64(s, 0);
      const char *status = (const char *)sqlite3_column_text(s, 1);
      const char *owner = (const char *)sqlite3_column_text(s, 2);
      if (status && !strcmp(status, "pending")) {
        if (!pending)
          pending = id;
      } else if (ag__owner_alive(st, owner)) {
        if (!running) {
          running = id;
          snprintf(running_owner, sizeof running_owner, "%s", owner ? owner : "?");
        }
      } else if (ndead < 16) {
        dead[ndead++] = id;
      }
    }
    if (rc < 0)
      return rc;
  }
  int64_t now = (int64_t)ag_wall_time_ns();
  for (int i = 0; i < ndead; i++) {
    sqlite3_stmt *s;
    static const char sql[] =
        "UPDATE tasks SET status = 'failed', end_ns = ?2, error = 'abandoned: the process ' || "
        "IFNULL(owner, '?') || ' that ran it exited before finishing' WHERE id = ?1";
    if ((rc = ag__stmt(st, sql, &s)) || (rc = ag__bind_i64(st, s, 1, dead[i])) ||
        (rc = ag__bind_i64(st, s, 2, now)))
      return rc;
    if ((rc = AG__SQL(st, sqlite3_step(s))) < 0)
      return rc;
  }
  int plan = (c->flags & AG_STORE_PLAN) != 0;
  if (running) {
    c->claim->task_id = running;
    c->claim->status = AG_STORE_TASK_RUNNING;
    if (plan)
      return 0;
    return ag__fail(AG_EBUSY, "task %.12s is already running as t%lld (process %s); wait for it",
                    c->claim->key, (long long)running, running_owner);
  }
  int64_t id = pending;
  if (id && plan) {
    c->claim->task_id = id;
    c->claim->status = AG_STORE_TASK_PENDING;
  } else if (id) {
    sqlite3_stmt *s;
    static const char sql[] = "UPDATE tasks SET status = 'running', owner = ?2, start_ns = ?3, "
                              "worker = IFNULL(?4, worker) WHERE id = ?1";
    if ((rc = ag__stmt(st, sql, &s)) || (rc = ag__bind_i64(st, s, 1, id)) ||
        (rc = ag__bind_text(st, s, 2, st->owner)) || (rc = ag__bind_i64(st, s, 3, now)) ||
        (rc = ag__bind_text(st, s, 4, sp->worker)))
      return rc;
    if ((rc = AG__SQL(st, sqlite3_step(s))) < 0)
      return rc;
    c->claim->task_id = id;
    c->claim->status = AG_STORE_TASK_RUNNING;
  } else {
    for (size_t i = 0; i < sp->ninputs; i++) {
      if ((rc = ag__artifact_exists(st, sp->inputs[i])) < 0)
        return rc;
      if (!rc)
        return ag__fail(AG_ENOTFOUND, "task input %s is not in the workspace (put it first)",
                        sp->inputs[i]);
    }
    sqlite3_stmt *s;
    static const char sql[] =
        "INSERT INTO tasks(key, type, config, argus_version, status, worker, owner, created_ns, "
        "start_ns) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)";
    if ((rc = ag__stmt(st, sql, &s)) || (rc = ag__bind_text(st, s, 1, c->claim->key)) ||
        (rc = ag__bind_text(st, s, 2, type_names[sp->type])) ||
        (rc = ag__bind_text(st, s, 3, c->canon)) || (rc = ag__bind_text(st, s, 4, c->version)) ||
        (rc = ag__bind_text(st, s, 5, plan ? "pending" : "running")) ||
        (rc = ag__bind_text(st, s, 6, sp->worker)) ||
        (rc = ag__bind_text(st, s, 7, plan ? NULL : st->owner)) ||
        (rc = ag__bind_i64(st, s, 8, now)) || (rc = ag__bind_id(st, s, 9, plan ? 0 : now)))
      return rc;
    if ((rc = AG__SQL(st, sqlite3_step(s))) < 0)
      return rc;
    id = sqlite3_last_insert_rowid(st->db);
    for (size_t i = 0; i < sp->ninputs; i++) {
      static const char in[] = "INSERT INTO task_inputs(task_id, ord, hash) VALUES(?, ?, ?)";
      if ((rc = ag__stmt(st, in, &s)) || (rc = ag__bind_i64(st, s, 1, id)) ||
          (rc = ag__bind_i64(st, s, 2, (int64_t)i)) ||
          (rc = ag__bind_text(st, s, 3, sp->inputs[i])))
        return rc;
      if ((rc = AG__SQL(st, sqlite3_step(s))) < 0)
        return rc;
    }
    c->claim->task_id = id;
    c->claim->status = plan ? AG_STORE_TASK_PENDING : AG_STORE_TASK_RUNNING;
  }
  return sp->query_id ? link_query(st, sp->query_id, c->claim->task_id) : 0;
}

int ag_store_task_begin(ag_store *st, const ag_store_task_spec *spec, unsigned flags,
                        ag_store_claim *claim) {
  memset(claim, 0, sizeof *claim);
  char *canon = NULL;
  int rc = spec_prepare(spec, &canon);
  if (rc)
    return rc;
  begin_ctx c = {spec, flags, canon,
                 spec->argus_version ? spec->argus_version : AG_VERSION_STRING, claim, 0};
  rc = ag__task_key_raw(type_names[spec->type], canon, spec->inputs, spec->ninputs, c.version,
                        claim->key);
  if (rc)
    goto out;
  if (!spec->query_id) { /* the common case: answered without the write lock */
    rc = ag__txn(st, AG__READ, memo_body, &c);
    if (rc || c.hit)
      goto out;
  }
  rc = ag__txn(st, AG__WRITE, begin_body, &c);
out:
  ag_free(canon);
  if (rc) {
    int64_t keep_id = claim->task_id;
    ag_store_task_status keep_status = claim->status;
    claim_reset(claim);
    if (rc == AG_EBUSY) { /* tell the caller which attempt is running */
      claim->task_id = keep_id;
      claim->status = keep_status;
    }
  }
  return rc;
}

/* ------------------------------------------------------------- finish */
static int output_name_valid(const char *n) {
  if (!n || !*n || strlen(n) > AG_STORE_NAME_MAX)
    return 0;
  for (const unsigned char *p = (const unsigned char *)n; *p; p++)
    if (*p < 0x20 || *p == 0x7f)
      return 0;
  return 1;
}

typedef struct finish_ctx {
  int64_t id;
  const ag_store_result *r;
} finish_ctx;

static int finish_body(ag_store *st, void *vc) {
  finish_ctx *c = vc;
  sqlite3_stmt *s;
  int rc;
  {
    static const char sql[] = "SELECT status FROM tasks WHERE id = ?";
    if ((rc = ag__row_id(st, sql, c->id, &s)) < 0)
      return rc;
    if (rc == 0)
      return ag__fail(AG_ENOTFOUND, "task t%lld does not exist", (long long)c->id);
    const char *status = (const char *)sqlite3_column_text(s, 0);
    if (!status || strcmp(status, "running") != 0)
      return ag__fail(AG_EINVAL, "task t%lld is %s, not running: only a running task can finish",
                      (long long)c->id, status ? status : "?");
    sqlite3_reset(s);
  }
  for (size_t i = 0; i < c->r->noutputs; i++) {
    const ag_store_output *o = &c->r->outputs[i];
    if ((rc = ag__artifact_exists(st, o->hash)) < 0)
      return rc;
    if (!rc)
      return ag__fail(AG_ENOTFOUND, "output '%s' of task t%lld: artifact %s is not in the workspace",
                      o->name, (long long)c->id, o->hash);
    static const char ins[] = "INSERT INTO task_outputs(task_id, name, hash) VALUES(?, ?, ?)";
    if ((rc = ag__stmt(st, ins, &s)) || (rc = ag__bind_i64(st, s, 1, c->id)) ||
        (rc = ag__bind_text(st, s, 2, o->name)) || (rc = ag__bind_text(st, s, 3, o->hash)))
      return rc;
    if ((rc = AG__SQL(st, sqlite3_step(s))) < 0)
      return rc;
    static const char up[] = "UPDATE artifacts SET task_id = ? WHERE hash = ? AND task_id IS NULL";
    if ((rc = ag__stmt(st, up, &s)) || (rc = ag__bind_i64(st, s, 1, c->id)) ||
        (rc = ag__bind_text(st, s, 2, o->hash)))
      return rc;
    if ((rc = AG__SQL(st, sqlite3_step(s))) < 0)
      return rc;
  }
  static const char sql[] = "UPDATE tasks SET status = ?, error = ?, end_ns = ? WHERE id = ?";
  if ((rc = ag__stmt(st, sql, &s)) ||
      (rc = ag__bind_text(st, s, 1, status_names[c->r->status])) ||
      (rc = ag__bind_text(st, s, 2, c->r->status == AG_STORE_TASK_FAILED ? c->r->error : NULL)) ||
      (rc = ag__bind_i64(st, s, 3, (int64_t)ag_wall_time_ns())) ||
      (rc = ag__bind_i64(st, s, 4, c->id)))
    return rc;
  rc = AG__SQL(st, sqlite3_step(s));
  return rc < 0 ? rc : 0;
}

int ag_store_task_finish(ag_store *st, int64_t task_id, const ag_store_result *r) {
  if (!r || (r->status != AG_STORE_TASK_OK && r->status != AG_STORE_TASK_FAILED))
    return ag__fail(AG_EINVAL, "a task finishes as ok or failed");
  if (r->status == AG_STORE_TASK_FAILED && (!r->error || !*r->error))
    return ag__fail(AG_EINVAL, "task t%lld failed without an error text: say what went wrong",
                    (long long)task_id);
  if (r->noutputs && !r->outputs)
    return ag__fail(AG_EINVAL, "task result has %zu outputs but no output array", r->noutputs);
  for (size_t i = 0; i < r->noutputs; i++) {
    if (!output_name_valid(r->outputs[i].name))
      return ag__fail(AG_EINVAL, "invalid output name '%s' (1 to %d printable characters)",
                      r->outputs[i].name, AG_STORE_NAME_MAX);
    if (!ag__hash_valid(r->outputs[i].hash))
      return ag__fail(AG_EINVAL, "output '%s': '%s' is not an artifact hash", r->outputs[i].name,
                      r->outputs[i].hash);
    for (size_t j = 0; j < i; j++)
      if (!strcmp(r->outputs[i].name, r->outputs[j].name))
        return ag__fail(AG_EINVAL, "output name '%s' appears twice", r->outputs[i].name);
  }
  finish_ctx c = {task_id, r};
  return ag__txn(st, AG__WRITE, finish_body, &c);
}

/* ---------------------------------------------------------------- get */
#define TASK_COLS                                                                               \
  "id, key, type, config, argus_version, status, worker, owner, error, created_ns, "           \
  "IFNULL(start_ns, 0), IFNULL(end_ns, 0)"

void ag_store_task_release(ag_store_task *t) {
  if (!t)
    return;
  ag_free(t->config);
  ag_free(t->worker);
  ag_free(t->owner);
  ag_free(t->error);
  ag_free(t->inputs);
  ag_free(t->outputs);
  memset(t, 0, sizeof *t);
}

static int fill_task(ag_store *st, sqlite3_stmt *s, ag_store_task *t) {
  memset(t, 0, sizeof *t);
  int ok = 1;
  t->id = sqlite3_column_int64(s, 0);
  ag__col_copy(s, 1, t->key, sizeof t->key);
  char buf[32];
  ag__col_copy(s, 2, buf, sizeof buf);
  ag__task_type_parse(buf, &t->type);
  t->config = ag__col_strdup(s, 3, &ok);
  ag__col_copy(s, 4, t->argus_version, sizeof t->argus_version);
  ag__col_copy(s, 5, buf, sizeof buf);
  ag__task_status_parse(buf, &t->status);
  t->worker = ag__col_strdup(s, 6, &ok);
  t->owner = ag__col_strdup(s, 7, &ok);
  t->error = ag__col_strdup(s, 8, &ok);
  t->created_ns = (uint64_t)sqlite3_column_int64(s, 9);
  t->start_ns = (uint64_t)sqlite3_column_int64(s, 10);
  t->end_ns = (uint64_t)sqlite3_column_int64(s, 11);
  if (!ok || !t->config) {
    ag_store_task_release(t);
    return ag__fail(AG_ENOMEM, "out of memory loading a task");
  }
  return 0;
}

static int load_io(ag_store *st, ag_store_task *t) {
  sqlite3_stmt *s;
  static const char sql[] = "SELECT hash FROM task_inputs WHERE task_id = ? ORDER BY ord";
  int rc;
  if ((rc = ag__stmt(st, sql, &s)) || (rc = ag__bind_i64(st, s, 1, t->id)))
    return rc;
  size_t cap = 0;
  while ((rc = AG__SQL(st, sqlite3_step(s))) == SQLITE_ROW) {
    if ((rc = ag__grow(&t->inputs, &cap, t->ninputs, sizeof *t->inputs)))
      return rc;
    ag__col_copy(s, 0, t->inputs[t->ninputs], sizeof t->inputs[0]);
    t->ninputs++;
  }
  if (rc < 0)
    return rc;
  return ag__load_outputs(st, t->id, &t->outputs, &t->noutputs);
}

typedef struct get_ctx {
  int64_t id;
  ag_store_task *t;
  int found;
} get_ctx;

static int get_body(ag_store *st, void *vc) {
  get_ctx *c = vc;
  ag_store_task_release(c->t);
  c->found = 0;
  sqlite3_stmt *s;
  static const char sql[] = "SELECT " TASK_COLS " FROM tasks WHERE id = ?";
  int rc = ag__row_id(st, sql, c->id, &s);
  if (rc <= 0)
    return rc;
  c->found = 1;
  if ((rc = fill_task(st, s, c->t)))
    return rc;
  sqlite3_reset(s);
  return load_io(st, c->t);
}

int ag_store_task_get(ag_store *st, int64_t id, ag_store_task *out) {
  memset(out, 0, sizeof *out);
  get_ctx c = {id, out, 0};
  int rc = ag__txn(st, AG__READ, get_body, &c);
  if (!rc && !c.found)
    rc = ag__fail(AG_ENOTFOUND, "task t%lld does not exist", (long long)id);
  if (rc)
    ag_store_task_release(out);
  return rc;
}

void ag_store_tasks_free(ag_store_task *t, size_t n) {
  for (size_t i = 0; t && i < n; i++)
    ag_store_task_release(&t[i]);
  ag_free(t);
}

typedef struct tlist_ctx {
  const ag_list_opts *o;
  ag_store_task *v;
  size_t n, cap;
} tlist_ctx;

static int tlist_body(ag_store *st, void *vc) {
  tlist_ctx *c = vc;
  for (size_t i = 0; i < c->n; i++)
    ag_store_task_release(&c->v[i]);
  c->n = 0;
  sqlite3_stmt *s;
  static const char sql[] = "SELECT " TASK_COLS " FROM tasks ORDER BY id DESC LIMIT ? OFFSET ?";
  int rc;
  if ((rc = ag__stmt(st, sql, &s)) ||
      (rc = ag__bind_i64(st, s, 1, c->o->limit ? (int64_t)c->o->limit : -1)) ||
      (rc = ag__bind_i64(st, s, 2, (int64_t)c->o->offset)))
    return rc;
  while ((rc = AG__SQL(st, sqlite3_step(s))) == SQLITE_ROW) {
    if ((rc = ag__grow(&c->v, &c->cap, c->n, sizeof *c->v)))
      return rc;
    if ((rc = fill_task(st, s, &c->v[c->n])))
      return rc;
    c->n++;
  }
  if (rc < 0)
    return rc;
  for (size_t i = 0; i < c->n; i++)
    if ((rc = load_io(st, &c->v[i])))
      return rc;
  return 0;
}

int ag_store_tasks(ag_store *st, const ag_list_opts *opts, ag_store_task **out, size_t *n) {
  *out = NULL;
  *n = 0;
  ag_list_opts none = {0, 0, NULL};
  tlist_ctx c = {opts ? opts : &none, NULL, 0, 0};
  int rc = ag__txn(st, AG__READ, tlist_body, &c);
  if (rc) {
    ag_store_tasks_free(c.v, c.n);
    return rc;
  }
  *out = c.v;
  *n = c.n;
  return 0;
}
