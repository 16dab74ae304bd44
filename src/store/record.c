/*
 * record.c — program versions, queries and reports, refs and the ref log,
 * name resolution ("v12", "t3", hash prefixes, ref names), the history log
 * and workspace statistics.
 *
 * Invariants: a version's parent is older than it (so ancestry is a finite
 * chain); a version is identified by (parent, module, transform, origin) and
 * creating it twice returns the first; a ref points at exactly one existing
 * version or artifact; every ref change appends to ref_log.
 */
#include "store_int.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ------------------------------------------------------------ versions */
typedef struct vc_ctx {
  const ag_version_spec *spec;
  const char *origin;
  int64_t id;
} vc_ctx;

static int exists_id(ag_store *st, ag_obj_kind kind, int64_t id, int *yes) {
  int rc = ag__record_exists(st, kind, id);
  *yes = rc > 0;
  return rc < 0 ? rc : 0;
}

static int exists_hash(ag_store *st, const char *hash, int *yes) {
  int rc = ag__artifact_exists(st, hash);
  *yes = rc > 0;
  return rc < 0 ? rc : 0;
}

static int vcreate_body(ag_store *st, void *vctx) {
  vc_ctx *c = vctx;
  const ag_version_spec *sp = c->spec;
  int rc, yes = 0;
  c->id = 0;
  if ((rc = exists_hash(st, sp->module, &yes)))
    return rc;
  if (!yes)
    return ag__fail(AG_ENOTFOUND, "module %s of the new version is not in the workspace",
                    sp->module);
  if (sp->parent) {
    if ((rc = exists_id(st, AG_OBJ_VERSION, sp->parent, &yes)))
      return rc;
    if (!yes)
      return ag__fail(AG_ENOTFOUND, "parent version v%lld does not exist", (long long)sp->parent);
  }
  if (sp->task_id) {
    if ((rc = exists_id(st, AG_OBJ_TASK, sp->task_id, &yes)))
      return rc;
    if (!yes)
      return ag__fail(AG_ENOTFOUND, "task t%lld does not exist", (long long)sp->task_id);
  }
  sqlite3_stmt *s;
  static const char find[] = "SELECT id FROM versions WHERE IFNULL(parent, 0) = ? AND module = ? "
                             "AND IFNULL(transform, '') = IFNULL(?, '') AND origin = ?";
  if ((rc = ag__stmt(st, find, &s)) || (rc = ag__bind_i64(st, s, 1, sp->parent)) ||
      (rc = ag__bind_text(st, s, 2, sp->module)) || (rc = ag__bind_text(st, s, 3, sp->transform)) ||
      (rc = ag__bind_text(st, s, 4, c->origin)))
    return rc;
  rc = AG__SQL(st, sqlite3_step(s));
  if (rc < 0)
    return rc;
  if (rc == SQLITE_ROW) {
    c->id = sqlite3_column_int64(s, 0);
    sqlite3_reset(s);
    return 0;
  }
  static const char ins[] = "INSERT INTO versions(parent, module, transform, origin, task_id, "
                            "created_ns) VALUES(?, ?, ?, ?, ?, ?)";
  if ((rc = ag__stmt(st, ins, &s)) || (rc = ag__bind_id(st, s, 1, sp->parent)) ||
      (rc = ag__bind_text(st, s, 2, sp->module)) || (rc = ag__bind_text(st, s, 3, sp->transform)) ||
      (rc = ag__bind_text(st, s, 4, c->origin)) || (rc = ag__bind_id(st, s, 5, sp->task_id)) ||
      (rc = ag__bind_i64(st, s, 6, (int64_t)ag_wall_time_ns())))
    return rc;
  if ((rc = AG__SQL(st, sqlite3_step(s))) < 0)
    return rc;
  c->id = sqlite3_last_insert_rowid(st->db);
  return 0;
}

int ag_store_version_create(ag_store *st, const ag_version_spec *spec, int64_t *id_out) {
  *id_out = 0;
  if (!spec || !ag__hash_valid(spec->module))
    return ag__fail(AG_EINVAL, "a program version needs its module's artifact hash (got '%s')",
                    spec && spec->module ? spec->module : "(null)");
  if (spec->parent < 0 || spec->task_id < 0)
    return ag__fail(AG_EINVAL, "invalid parent or task id");
  if (spec->parent && (!spec->transform || !*spec->transform))
    return ag__fail(AG_EINVAL, "a version derived from v%lld must name the transform that made it",
                    (long long)spec->parent);
  if (!spec->parent && spec->transform)
    return ag__fail(AG_EINVAL, "a root version has no transform ('%s' given without a parent)",
                    spec->transform);
  if (spec->origin && !json_is_object(spec->origin))
    return ag__fail(AG_EINVAL, "a version's origin must be a JSON object");
  char *origin = spec->origin ? ag_json_canonical(spec->origin) : ag_strdup("{}");
  if (!origin)
    return ag__fail(AG_ENOMEM, "out of memory recording a version");
  vc_ctx c = {spec, origin, 0};
  int rc = ag__txn(st, AG__WRITE, vcreate_body, &c);
  ag_free(origin);
  if (!rc)
    *id_out = c.id;
  return rc;
}

void ag_store_version_release(ag_version *v) {
  if (!v)
    return;
  ag_free(v->transform);
  ag_free(v->origin);
  memset(v, 0, sizeof *v);
}

void ag_store_versions_free(ag_version *v, size_t n) {
  for (size_t i = 0; v && i < n; i++)
    ag_store_version_release(&v[i]);
  ag_free(v);
}

#define VER_COLS "id, IFNULL(parent, 0), module, transform, origin, IFNULL(task_id, 0), created_ns"

static int fill_version(sqlite3_stmt *s, ag_version *v) {
  memset(v, 0, sizeof *v);
  int ok = 1;
  v->id = sqlite3_column_int64(s, 0);
  v->parent = sqlite3_column_int64(s, 1);
  ag__col_copy(s, 2, v->module, sizeof v->module);
  v->transform = ag__col_strdup(s, 3, &ok);
  v->origin = ag__col_strdup(s, 4, &ok);
  v->task_id = sqlite3_column_int64(s, 5);
  v->created_ns = (uint64_t)sqlite3_column_int64(s, 6);
  if (!ok || !v->origin) {
    ag_store_version_release(v);
    return ag__fail(AG_ENOMEM, "out of memory loading a version");
  }
  return 0;
}

typedef struct vlist_ctx {
  int64_t id; /* > 0: just this one */
  const ag_list_opts *o;
  ag_version *v;
  size_t n, cap;
} vlist_ctx;

static int vlist_body(ag_store *st, void *vctx) {
  vlist_ctx *c = vctx;
  for (size_t i = 0; i < c->n; i++)
    ag_store_version_release(&c->v[i]);
  c->n = 0;
  sqlite3_stmt *s;
  static const char one[] = "SELECT " VER_COLS " FROM versions WHERE id = ?";
  static const char all[] = "SELECT " VER_COLS " FROM versions ORDER BY id DESC LIMIT ? OFFSET ?";
  int rc;
  if (c->id) {
    if ((rc = ag__stmt(st, one, &s)) || (rc = ag__bind_i64(st, s, 1, c->id)))
      return rc;
  } else if ((rc = ag__stmt(st, all, &s)) ||
             (rc = ag__bind_i64(st, s, 1, c->o->limit ? (int64_t)c->o->limit : -1)) ||
             (rc = ag__bind_i64(st, s, 2, (int64_t)c->o->offset))) {
    return rc;
  }
  while ((rc = AG__SQL(st, sqlite3_step(s))) == SQLITE_ROW) {
    if ((rc = ag__grow(&c->v, &c->cap, c->n, sizeof *c->v)))
      return rc;
    if ((rc = fill_version(s, &c->v[c->n])))
      return rc;
    c->n++;
  }
  return rc < 0 ? rc : 0;
}

int ag_store_version_get(ag_store *st, int64_t id, ag_version *out) {
  memset(out, 0, sizeof *out);
  vlist_ctx c = {id, NULL, NULL, 0, 0};
  int rc = id > 0 ? ag__txn(st, AG__READ, vlist_body, &c) : 0;
  if (!rc && c.n == 0)
    rc = ag__fail(AG_ENOTFOUND, "version v%lld does not exist", (long long)id);
  if (!rc) {
    *out = c.v[0];
    c.n = 0;
  }
  ag_store_versions_free(c.v, c.n);
  return rc;
}

int ag_store_versions(ag_store *st, const ag_list_opts *opts, ag_version **out, size_t *n) {
  *out = NULL;
  *n = 0;
  ag_list_opts none = {0, 0, NULL};
  vlist_ctx c = {0, opts ? opts : &none, NULL, 0, 0};
  int rc = ag__txn(st, AG__READ, vlist_body, &c);
  if (rc) {
    ag_store_versions_free(c.v, c.n);
    return rc;
  }
  *out = c.v;
  *n = c.n;
  return 0;
}

typedef struct anc_ctx {
  int64_t id;
  int64_t *ids;
  size_t n, cap;
} anc_ctx;

static int anc_body(ag_store *st, void *vctx) {
  anc_ctx *c = vctx;
  c->n = 0;
  sqlite3_stmt *s;
  /* parent < id always holds, so the walk ends */
  static const char sql[] =
      "WITH RECURSIVE chain(id, parent, depth) AS ("
      "  SELECT id, parent, 0 FROM versions WHERE id = ?"
      "  UNION ALL SELECT v.id, v.parent, depth + 1 FROM versions v JOIN chain ON v.id = "
      "chain.parent WHERE v.id < chain.id) "
      "SELECT id FROM chain ORDER BY depth";
  int rc;
  if ((rc = ag__stmt(st, sql, &s)) || (rc = ag__bind_i64(st, s, 1, c->id)))
    return rc;
  while ((rc = AG__SQL(st, sqlite3_step(s))) == SQLITE_ROW) {
    if ((rc = ag__grow(&c->ids, &c->cap, c->n, sizeof *c->ids)))
      return rc;
    c->ids[c->n++] = sqlite3_column_int64(s, 0);
  }
  return rc < 0 ? rc : 0;
}

int ag_store_version_ancestry(ag_store *st, int64_t id, int64_t **ids, size_t *n) {
  *ids = NULL;
  *n = 0;
  anc_ctx c = {id, NULL, 0, 0};
  int rc = ag__txn(st, AG__READ, anc_body, &c);
  if (!rc && c.n == 0)
    rc = ag__fail(AG_ENOTFOUND, "version v%lld does not exist", (long long)id);
  if (rc) {
    ag_free(c.ids);
    return rc;
  }
  *ids = c.ids;
  *n = c.n;
  return 0;
}

/* ------------------------------------------------------------- queries */
typedef struct qa_ctx {
  const char *spec;
  int64_t version_id, id;
  const char *hash;
} qa_ctx;

static int qadd_body(ag_store *st, void *vctx) {
  qa_ctx *c = vctx;
  int rc, yes = 0;
  if (c->version_id) {
    if ((rc = exists_id(st, AG_OBJ_VERSION, c->version_id, &yes)))
      return rc;
    if (!yes)
      return ag__fail(AG_ENOTFOUND, "version v%lld does not exist", (long long)c->version_id);
  }
  sqlite3_stmt *s;
  static const char sql[] = "INSERT INTO queries(spec, version_id, created_ns) VALUES(?, ?, ?)";
  if ((rc = ag__stmt(st, sql, &s)) || (rc = ag__bind_text(st, s, 1, c->spec)) ||
      (rc = ag__bind_id(st, s, 2, c->version_id)) ||
      (rc = ag__bind_i64(st, s, 3, (int64_t)ag_wall_time_ns())))
    return rc;
  if ((rc = AG__SQL(st, sqlite3_step(s))) < 0)
    return rc;
  c->id = sqlite3_last_insert_rowid(st->db);
  return 0;
}

int ag_store_query_add(ag_store *st, const json_t *spec, int64_t version_id, int64_t *id_out) {
  *id_out = 0;
  if (!spec || !json_is_object(spec))
    return ag__fail(AG_EINVAL, "a query spec must be a JSON object");
  if (version_id < 0)
    return ag__fail(AG_EINVAL, "invalid version id %lld", (long long)version_id);
  char *canon = ag_json_canonical(spec);
  if (!canon)
    return ag__fail(AG_ENOMEM, "out of memory recording a query");
  qa_ctx c = {canon, version_id, 0, NULL};
  int rc = ag__txn(st, AG__WRITE, qadd_body, &c);
  ag_free(canon);
  if (!rc)
    *id_out = c.id;
  return rc;
}

static int radd_body(ag_store *st, void *vctx) {
  qa_ctx *c = vctx;
  int rc, yes = 0;
  if ((rc = exists_id(st, AG_OBJ_QUERY, c->id, &yes)))
    return rc;
  if (!yes)
    return ag__fail(AG_ENOTFOUND, "query q%lld does not exist", (long long)c->id);
  if ((rc = exists_hash(st, c->hash, &yes)))
    return rc;
  if (!yes)
    return ag__fail(AG_ENOTFOUND, "report artifact %s is not in the workspace", c->hash);
  sqlite3_stmt *s;
  static const char sql[] = "INSERT INTO reports(query_id, artifact, created_ns) VALUES(?, ?, ?)";
  if ((rc = ag__stmt(st, sql, &s)) || (rc = ag__bind_i64(st, s, 1, c->id)) ||
      (rc = ag__bind_text(st, s, 2, c->hash)) ||
      (rc = ag__bind_i64(st, s, 3, (int64_t)ag_wall_time_ns())))
    return rc;
  rc = AG__SQL(st, sqlite3_step(s));
  return rc < 0 ? rc : 0;
}

int ag_store_report_add(ag_store *st, int64_t query_id, const char *hash) {
  if (!ag__hash_valid(hash))
    return ag__fail(AG_EINVAL, "'%s' is not an artifact hash", hash ? hash : "(null)");
  qa_ctx c = {NULL, 0, query_id, hash};
  return ag__txn(st, AG__WRITE, radd_body, &c);
}

void ag_store_query_release(ag_store_query *q) {
  if (!q)
    return;
  ag_free(q->spec);
  ag_free(q->reports);
  ag_free(q->tasks);
  memset(q, 0, sizeof *q);
}

void ag_store_queries_free(ag_store_query *q, size_t n) {
  for (size_t i = 0; q && i < n; i++)
    ag_store_query_release(&q[i]);
  ag_free(q);
}

typedef struct ql_ctx {
  int64_t id; /* > 0: one, with reports and tasks */
  const ag_list_opts *o;
  ag_store_query *v;
  size_t n, cap;
} ql_ctx;

static int ql_body(ag_store *st, void *vctx) {
  ql_ctx *c = vctx;
  for (size_t i = 0; i < c->n; i++)
    ag_store_query_release(&c->v[i]);
  c->n = 0;
  sqlite3_stmt *s;
  static const char one[] =
      "SELECT id, IFNULL(version_id, 0), spec, created_ns FROM queries WHERE id = ?";
  static const char all[] = "SELECT id, IFNULL(version_id, 0), spec, created_ns FROM queries "
                            "ORDER BY id DESC LIMIT ? OFFSET ?";
  int rc;
  if (c->id) {
    if ((rc = ag__stmt(st, one, &s)) || (rc = ag__bind_i64(st, s, 1, c->id)))
      return rc;
  } else if ((rc = ag__stmt(st, all, &s)) ||
             (rc = ag__bind_i64(st, s, 1, c->o->limit ? (int64_t)c->o->limit : -1)) ||
             (rc = ag__bind_i64(st, s, 2, (int64_t)c->o->offset))) {
    return rc;
  }
  while ((rc = AG__SQL(st, sqlite3_step(s))) == SQLITE_ROW) {
    if ((rc = ag__grow(&c->v, &c->cap, c->n, sizeof *c->v)))
      return rc;
    ag_store_query *q = &c->v[c->n];
    memset(q, 0, sizeof *q);
    int ok = 1;
    q->id = sqlite3_column_int64(s, 0);
    q->version_id = sqlite3_column_int64(s, 1);
    q->spec = ag__col_strdup(s, 2, &ok);
    q->created_ns = (uint64_t)sqlite3_column_int64(s, 3);
    if (!ok || !q->spec) {
      ag_store_query_release(q);
      return ag__fail(AG_ENOMEM, "out of memory listing queries");
    }
    c->n++;
  }
  if (rc < 0)
    return rc;
  if (!c->id || !c->n)
    return 0;
  ag_store_query *q = &c->v[0];
  static const char rep[] = "SELECT artifact FROM reports WHERE query_id = ? ORDER BY id";
  if ((rc = ag__stmt(st, rep, &s)) || (rc = ag__bind_i64(st, s, 1, q->id)))
    return rc;
  size_t cap = 0;
  while ((rc = AG__SQL(st, sqlite3_step(s))) == SQLITE_ROW) {
    if ((rc = ag__grow(&q->reports, &cap, q->nreports, sizeof *q->reports)))
      return rc;
    ag__col_copy(s, 0, q->reports[q->nreports++], sizeof q->reports[0]);
  }
  if (rc < 0)
    return rc;
  static const char tk[] = "SELECT task_id FROM query_tasks WHERE query_id = ? ORDER BY task_id";
  if ((rc = ag__stmt(st, tk, &s)) || (rc = ag__bind_i64(st, s, 1, q->id)))
    return rc;
  cap = 0;
  while ((rc = AG__SQL(st, sqlite3_step(s))) == SQLITE_ROW) {
    if ((rc = ag__grow(&q->tasks, &cap, q->ntasks, sizeof *q->tasks)))
      return rc;
    q->tasks[q->ntasks++] = sqlite3_column_int64(s, 0);
  }
  return rc < 0 ? rc : 0;
}

int ag_store_query_get(ag_store *st, int64_t id, ag_store_query *out) {
  memset(out, 0, sizeof *out);
  ql_ctx c = {id, NULL, NULL, 0, 0};
  int rc = id > 0 ? ag__txn(st, AG__READ, ql_body, &c) : 0;
  if (!rc && c.n == 0)
    rc = ag__fail(AG_ENOTFOUND, "query q%lld does not exist", (long long)id);
  if (!rc) {
    *out = c.v[0];
    c.n = 0;
  }
  ag_store_queries_free(c.v, c.n);
  return rc;
}

int ag_store_queries(ag_store *st, const ag_list_opts *opts, ag_store_query **out, size_t *n) {
  *out = NULL;
  *n = 0;
  ag_list_opts none = {0, 0, NULL};
  ql_ctx c = {0, opts ? opts : &none, NULL, 0, 0};
  int rc = ag__txn(st, AG__READ, ql_body, &c);
  if (rc) {
    ag_store_queries_free(c.v, c.n);
    return rc;
  }
  *out = c.v;
  *n = c.n;
  return 0;
}

/* ---------------------------------------------------------------- refs */
static int is_hex(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return 0;
  return 1;
}

/* "v12", "t3", "q7": the id, else 0. */
static int64_t parse_id(const char *s, char prefix) {
  if (s[0] != prefix || !s[1])
    return 0;
  int64_t v = 0;
  for (const char *p = s + 1; *p; p++) {
    if (*p < '0' || *p > '9' || v > (INT64_MAX - 9) / 10)
      return 0;
    v = v * 10 + (*p - '0');
  }
  return v;
}

int ag_store_ref_name_valid(const char *name) {
  if (!name || !*name || name[0] == '-')
    return 0;
  size_t n = strlen(name);
  if (n > AG_STORE_NAME_MAX)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char ch = name[i];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
          strchr("._@/:+-", ch)))
      return 0;
  }
  if (is_hex(name, n))
    return 0;
  for (const char *p = "vtq"; *p; p++) {
    if (name[0] == *p && n > 1) {
      size_t k = 1;
      while (k < n && name[k] >= '0' && name[k] <= '9')
        k++;
      if (k == n)
        return 0;
    }
  }
  return 1;
}

static int bad_ref_name(const char *name) {
  return ag__fail(AG_EINVAL,
                  "invalid ref name '%s': use 1 to %d of A-Z a-z 0-9 . _ @ / : + - (not starting "
                  "with '-'), with a character outside 0-9a-f, and not of the form v12, t3, q7",
                  name ? name : "(null)", AG_STORE_NAME_MAX);
}

typedef struct ref_ctx {
  const char *name;
  const ag_obj *target;
  ag_ref *out;
  int found;
} ref_ctx;

static int ref_set_body(ag_store *st, void *vctx) {
  ref_ctx *c = vctx;
  int rc, yes = 0;
  char tgt[AG_STORE_HASH_LEN + 24];
  if (c->target->kind == AG_OBJ_VERSION) {
    if ((rc = exists_id(st, AG_OBJ_VERSION, c->target->id, &yes)))
      return rc;
    if (!yes)
      return ag__fail(AG_ENOTFOUND, "version v%lld does not exist", (long long)c->target->id);
    snprintf(tgt, sizeof tgt, "v%lld", (long long)c->target->id);
  } else {
    if ((rc = exists_hash(st, c->target->hash, &yes)))
      return rc;
    if (!yes)
      return ag__fail(AG_ENOTFOUND, "artifact %s is not in the workspace", c->target->hash);
    snprintf(tgt, sizeof tgt, "%s", c->target->hash);
  }
  int64_t now = (int64_t)ag_wall_time_ns();
  sqlite3_stmt *s;
  static const char sql[] =
      "INSERT INTO refs(name, version_id, artifact, updated_ns) VALUES(?1, ?2, ?3, ?4) "
      "ON CONFLICT(name) DO UPDATE SET version_id = ?2, artifact = ?3, updated_ns = ?4";
  if ((rc = ag__stmt(st, sql, &s)) || (rc = ag__bind_text(st, s, 1, c->name)) ||
      (rc = ag__bind_id(st, s, 2, c->target->kind == AG_OBJ_VERSION ? c->target->id : 0)) ||
      (rc = ag__bind_text(st, s, 3, c->target->kind == AG_OBJ_ARTIFACT ? c->target->hash : NULL)) ||
      (rc = ag__bind_i64(st, s, 4, now)))
    return rc;
  if ((rc = AG__SQL(st, sqlite3_step(s))) < 0)
    return rc;
  static const char log[] = "INSERT INTO ref_log(name, target, time_ns) VALUES(?, ?, ?)";
  if ((rc = ag__stmt(st, log, &s)) || (rc = ag__bind_text(st, s, 1, c->name)) ||
      (rc = ag__bind_text(st, s, 2, tgt)) || (rc = ag__bind_i64(st, s, 3, now)))
    return rc;
  rc = AG__SQL(st, sqlite3_step(s));
  return rc < 0 ? rc : 0;
}

int ag_store_ref_set(ag_store *st, const char *name, const ag_obj *target) {
  if (!ag_store_ref_name_valid(name))
    return bad_ref_name(name);
  if (!target || (target->kind != AG_OBJ_VERSION && target->kind != AG_OBJ_ARTIFACT))
    return ag__fail(AG_EINVAL, "ref '%s' must point at a program version or an artifact", name);
  if (target->kind == AG_OBJ_ARTIFACT && !ag__hash_valid(target->hash))
    return ag__fail(AG_EINVAL, "'%s' is not an artifact hash", target->hash);
  if (target->kind == AG_OBJ_VERSION && target->id <= 0)
    return ag__fail(AG_EINVAL, "invalid version id %lld", (long long)target->id);
  ref_ctx c = {name, target, NULL, 0};
  return ag__txn(st, AG__WRITE, ref_set_body, &c);
}

static void fill_ref(sqlite3_stmt *s, ag_ref *r) {
  /* columns: name, version_id, artifact, updated_ns */
  memset(r, 0, sizeof *r);
  ag__col_copy(s, 0, r->name, sizeof r->name);
  if (sqlite3_column_type(s, 1) != SQLITE_NULL) {
    r->target.kind = AG_OBJ_VERSION;
    r->target.id = sqlite3_column_int64(s, 1);
  } else {
    r->target.kind = AG_OBJ_ARTIFACT;
    ag__col_copy(s, 2, r->target.hash, sizeof r->target.hash);
  }
  r->updated_ns = (uint64_t)sqlite3_column_int64(s, 3);
}

static int ref_get_body(ag_store *st, void *vctx) {
  ref_ctx *c = vctx;
  sqlite3_stmt *s;
  static const char sql[] =
      "SELECT name, version_id, artifact, updated_ns FROM refs WHERE name = ?";
  int rc = ag__row_text(st, sql, c->name, &s);
  c->found = rc > 0;
  if (c->found)
    fill_ref(s, c->out);
  return rc < 0 ? rc : 0;
}

int ag_store_ref_get(ag_store *st, const char *name, ag_ref *out) {
  memset(out, 0, sizeof *out);
  if (!ag_store_ref_name_valid(name))
    return bad_ref_name(name);
  ref_ctx c = {name, NULL, out, 0};
  int rc = ag__txn(st, AG__READ, ref_get_body, &c);
  if (!rc && !c.found)
    rc = ag__fail(AG_ENOTFOUND, "no ref named '%s'", name);
  if (rc)
    memset(out, 0, sizeof *out);
  return rc;
}

static int ref_del_body(ag_store *st, void *vctx) {
  ref_ctx *c = vctx;
  sqlite3_stmt *s;
  static const char sql[] = "DELETE FROM refs WHERE name = ?";
  int rc;
  if ((rc = ag__stmt(st, sql, &s)) || (rc = ag__bind_text(st, s, 1, c->name)))
    return rc;
  if ((rc = AG__SQL(st, sqlite3_step(s))) < 0)
    return rc;
  c->found = sqlite3_changes(st->db) > 0;
  if (!c->found)
    return 0;
  static const char log[] = "INSERT INTO ref_log(name, target, time_ns) VALUES(?, NULL, ?)";
  if ((rc = ag__stmt(st, log, &s)) || (rc = ag__bind_text(st, s, 1, c->name)) ||
      (rc = ag__bind_i64(st, s, 2, (int64_t)ag_wall_time_ns())))
    return rc;
  rc = AG__SQL(st, sqlite3_step(s));
  return rc < 0 ? rc : 0;
}

int ag_store_ref_delete(ag_store *st, const char *name) {
  if (!ag_store_ref_name_valid(name))
    return bad_ref_name(name);
  ref_ctx c = {name, NULL, NULL, 0};
  int rc = ag__txn(st, AG__WRITE, ref_del_body, &c);
  if (!rc && !c.found)
    rc = ag__fail(AG_ENOTFOUND, "no ref named '%s'", name);
  return rc;
}

typedef struct refs_ctx {
  ag_ref *v;
  size_t n, cap;
} refs_ctx;

static int refs_body(ag_store *st, void *vctx) {
  refs_ctx *c = vctx;
  c->n = 0;
  sqlite3_stmt *s;
  static const char sql[] =
      "SELECT name, version_id, artifact, updated_ns FROM refs ORDER BY name";
  int rc;
  if ((rc = ag__stmt(st, sql, &s)))
    return rc;
  while ((rc = AG__SQL(st, sqlite3_step(s))) == SQLITE_ROW) {
    if ((rc = ag__grow(&c->v, &c->cap, c->n, sizeof *c->v)))
      return rc;
    fill_ref(s, &c->v[c->n++]);
  }
  return rc < 0 ? rc : 0;
}

int ag_store_refs(ag_store *st, ag_ref **out, size_t *n) {
  *out = NULL;
  *n = 0;
  refs_ctx c = {NULL, 0, 0};
  int rc = ag__txn(st, AG__READ, refs_body, &c);
  if (rc) {
    ag_free(c.v);
    return rc;
  }
  *out = c.v;
  *n = c.n;
  return 0;
}

/* ------------------------------------------------------------- resolve */
typedef struct res_ctx {
  const char *text;
  ag_obj *out;
  int matches;
  char lo[AG_STORE_HASH_LEN + 1], hi[AG_STORE_HASH_LEN + 2];
} res_ctx;

static int prefix_body(ag_store *st, void *vctx) {
  res_ctx *c = vctx;
  c->matches = 0;
  sqlite3_stmt *s;
  static const char sql[] =
      "SELECT hash FROM artifacts WHERE hash >= ? AND hash < ? ORDER BY hash LIMIT 2";
  int rc;
  if ((rc = ag__stmt(st, sql, &s)) || (rc = ag__bind_text(st, s, 1, c->lo)) ||
      (rc = ag__bind_text(st, s, 2, c->hi)))
    return rc;
  while ((rc = AG__SQL(st, sqlite3_step(s))) == SQLITE_ROW) {
    if (c->matches++ == 0)
      ag__col_copy(s, 0, c->out->hash, sizeof c->out->hash);
  }
  return rc < 0 ? rc : 0;
}

static int exists_body_id(ag_store *st, void *vctx) {
  res_ctx *c = vctx;
  int yes = 0;
  int rc = exists_id(st, c->out->kind, c->out->id, &yes);
  c->matches = yes;
  return rc;
}

int ag_store_resolve(ag_store *st, const char *text, ag_obj *out) {
  memset(out, 0, sizeof *out);
  if (!text || !*text)
    return ag__fail(AG_EINVAL, "nothing to look up");
  res_ctx c;
  memset(&c, 0, sizeof c);
  c.text = text;
  c.out = out;
  static const struct {
    char p;
    ag_obj_kind k;
    const char *what;
  } ids[] = {{'v', AG_OBJ_VERSION, "version"}, {'t', AG_OBJ_TASK, "task"},
             {'q', AG_OBJ_QUERY, "query"}};
  for (int i = 0; i < 3; i++) {
    int64_t id = parse_id(text, ids[i].p);
    if (id > 0) {
      out->kind = ids[i].k;
      out->id = id;
      int rc = ag__txn(st, AG__READ, exists_body_id, &c);
      if (!rc && !c.matches)
        rc = ag__fail(AG_ENOTFOUND, "%s %s does not exist", ids[i].what, text);
      if (rc)
        memset(out, 0, sizeof *out);
      return rc;
    }
  }
  size_t n = strlen(text);
  if (is_hex(text, n)) {
    if (n < 4 || n > AG_STORE_HASH_LEN)
      return ag__fail(AG_EINVAL, "'%s': a hash prefix needs 4 to 64 hex digits", text);
    memcpy(c.lo, text, n + 1);
    memcpy(c.hi, text, n + 1);
    c.hi[n] = 'g'; /* every hash with this prefix sorts below prefix + "g" */
    c.hi[n + 1] = 0;
    out->kind = AG_OBJ_ARTIFACT;
    int rc = ag__txn(st, AG__READ, prefix_body, &c);
    if (!rc && c.matches == 0)
      rc = ag__fail(AG_ENOTFOUND, "no artifact hash starts with '%s'", text);
    if (!rc && c.matches > 1)
      rc = ag__fail(AG_EINVAL, "hash prefix '%s' is ambiguous: give more digits", text);
    if (rc)
      memset(out, 0, sizeof *out);
    return rc;
  }
  ag_ref r;
  int rc = ag_store_ref_get(st, text, &r);
  if (rc == AG_EINVAL)
    return ag__fail(AG_ENOTFOUND, "'%s' is not an id (v12, t3, q7), a hash, or a ref name", text);
  if (rc)
    return rc;
  *out = r.target;
  return 0;
}

/* ----------------------------------------------------------------- log */
void ag_store_log_free(ag_log_entry *e, size_t n) {
  for (size_t i = 0; e && i < n; i++) {
    ag_free(e[i].what);
    ag_free(e[i].text);
  }
  ag_free(e);
}

typedef struct log_ctx {
  size_t limit;
  ag_log_entry *v;
  size_t n, cap;
} log_ctx;

static void dur(char *buf, size_t cap, uint64_t a, uint64_t b) {
  if (a && b && b >= a)
    snprintf(buf, cap, " in %.3f s", (double)(b - a) / 1e9);
  else
    buf[0] = 0;
}

static int log_text(ag_store *st, ag_log_entry *e, const char *extra) {
  ag_str s = AG_STR_INIT;
  int rc = 0;
  sqlite3_stmt *q;
  if (!strcmp(e->what, "task")) {
    static const char sql[] = "SELECT type, status, key, worker, error, IFNULL(start_ns, 0), "
                              "IFNULL(end_ns, 0) FROM tasks WHERE id = ?";
    if ((rc = ag__stmt(st, sql, &q)) || (rc = ag__bind_i64(st, q, 1, e->obj.id)))
      goto out;
    if ((rc = AG__SQL(st, sqlite3_step(q))) < 0)
      goto out;
    if (rc == SQLITE_ROW) {
      char d[48];
      dur(d, sizeof d, (uint64_t)sqlite3_column_int64(q, 5), (uint64_t)sqlite3_column_int64(q, 6));
      const char *worker = (const char *)sqlite3_column_text(q, 3);
      const char *err = (const char *)sqlite3_column_text(q, 4);
      ag_str_printf(&s, "t%lld %s %s%s key %.12s", (long long)e->obj.id,
                    sqlite3_column_text(q, 0), sqlite3_column_text(q, 1), d,
                    sqlite3_column_text(q, 2));
      if (worker)
        ag_str_printf(&s, " worker %s", worker);
      if (err)
        ag_str_printf(&s, ": %.*s", (int)strcspn(err, "\n"), err);
    }
  } else if (!strcmp(e->what, "version")) {
    static const char sql[] =
        "SELECT IFNULL(parent, 0), transform, module FROM versions WHERE id = ?";
    if ((rc = ag__stmt(st, sql, &q)) || (rc = ag__bind_i64(st, q, 1, e->obj.id)))
      goto out;
    if ((rc = AG__SQL(st, sqlite3_step(q))) < 0)
      goto out;
    if (rc == SQLITE_ROW) {
      int64_t parent = sqlite3_column_int64(q, 0);
      if (parent)
        ag_str_printf(&s, "v%lld from v%lld by %s, module %.12s", (long long)e->obj.id,
                      (long long)parent, sqlite3_column_text(q, 1), sqlite3_column_text(q, 2));
      else
        ag_str_printf(&s, "v%lld root, module %.12s", (long long)e->obj.id,
                      sqlite3_column_text(q, 2));
    }
  } else if (!strcmp(e->what, "query")) {
    static const char sql[] = "SELECT IFNULL(version_id, 0), spec FROM queries WHERE id = ?";
    if ((rc = ag__stmt(st, sql, &q)) || (rc = ag__bind_i64(st, q, 1, e->obj.id)))
      goto out;
    if ((rc = AG__SQL(st, sqlite3_step(q))) < 0)
      goto out;
    if (rc == SQLITE_ROW) {
      int64_t v = sqlite3_column_int64(q, 0);
      const char *spec = (const char *)sqlite3_column_text(q, 1);
      ag_str_printf(&s, "q%lld", (long long)e->obj.id);
      if (v)
        ag_str_printf(&s, " on v%lld", (long long)v);
      ag_str_printf(&s, ": %.60s%s", spec ? spec : "", spec && strlen(spec) > 60 ? "…" : "");
    }
  } else if (!strcmp(e->what, "report")) {
    ag_str_printf(&s, "report %.12s for q%lld", extra ? extra : "?", (long long)e->obj.id);
  } else { /* ref */
    ag_str_printf(&s, "ref %s", extra ? extra : "?");
  }
  rc = 0;
out:
  if (rc) {
    ag_str_release(&s);
    return rc;
  }
  if (s.oom || !(e->text = ag_str_detach(&s))) {
    ag_str_release(&s);
    return ag__fail(AG_ENOMEM, "out of memory formatting the log");
  }
  return 0;
}

static int log_body(ag_store *st, void *vctx) {
  log_ctx *c = vctx;
  for (size_t i = 0; i < c->n; i++) {
    ag_free(c->v[i].what);
    ag_free(c->v[i].text);
  }
  c->n = 0;
  sqlite3_stmt *s;
  static const char sql[] =
      "SELECT what, id, extra, t FROM ("
      " SELECT 'task' AS what, id, NULL AS extra, IFNULL(start_ns, created_ns) AS t FROM tasks"
      " UNION ALL SELECT 'version', id, NULL, created_ns FROM versions"
      " UNION ALL SELECT 'query', id, NULL, created_ns FROM queries"
      " UNION ALL SELECT 'report', query_id, artifact, created_ns FROM reports"
      " UNION ALL SELECT 'ref', id, name || ' -> ' || IFNULL(target, '(deleted)'), time_ns"
      "   FROM ref_log"
      ") ORDER BY t DESC, what, id DESC LIMIT ?";
  int rc;
  if ((rc = ag__stmt(st, sql, &s)) ||
      (rc = ag__bind_i64(st, s, 1, c->limit ? (int64_t)c->limit : -1)))
    return rc;
  /* collect first: formatting uses other cached statements */
  char **extras = NULL;
  size_t ecap = 0;
  while ((rc = AG__SQL(st, sqlite3_step(s))) == SQLITE_ROW) {
    if (c->n == c->cap || c->n == ecap) {
      size_t cap = c->cap ? 2 * c->cap : 16;
      ag_log_entry *v = ag_realloc(c->v, cap * sizeof *v);
      if (v)
        c->v = v, c->cap = cap;
      char **ne = v ? ag_realloc(extras, cap * sizeof *ne) : NULL;
      if (ne)
        extras = ne, ecap = cap;
      if (!v || !ne) {
        rc = ag__fail(AG_ENOMEM, "out of memory reading the log");
        break;
      }
    }
    ag_log_entry *e = &c->v[c->n];
    memset(e, 0, sizeof *e);
    int ok = 1;
    e->what = ag__col_strdup(s, 0, &ok);
    extras[c->n] = ag__col_strdup(s, 2, &ok);
    e->time_ns = (uint64_t)sqlite3_column_int64(s, 3);
    int64_t id = sqlite3_column_int64(s, 1);
    c->n++;
    if (!ok || !e->what) {
      rc = ag__fail(AG_ENOMEM, "out of memory reading the log");
      break;
    }
    if (!strcmp(e->what, "task"))
      e->obj.kind = AG_OBJ_TASK, e->obj.id = id;
    else if (!strcmp(e->what, "version"))
      e->obj.kind = AG_OBJ_VERSION, e->obj.id = id;
    else if (!strcmp(e->what, "query") || !strcmp(e->what, "report"))
      e->obj.kind = AG_OBJ_QUERY, e->obj.id = id;
  }
  if (rc >= 0) {
    sqlite3_reset(s);
    rc = 0;
    for (size_t i = 0; i < c->n && !rc; i++)
      rc = log_text(st, &c->v[i], extras[i]);
  }
  for (size_t i = 0; i < c->n; i++)
    ag_free(extras[i]);
  ag_free(extras);
  return rc;
}

int ag_store_log(ag_store *st, size_t limit, ag_log_entry **out, size_t *n) {
  *out = NULL;
  *n = 0;
  log_ctx c = {limit, NULL, 0, 0};
  int rc = ag__txn(st, AG__READ, log_body, &c);
  if (rc) {
    ag_store_log_free(c.v, c.n);
    return rc;
  }
  *out = c.v;
  *n = c.n;
  return 0;
}

/* --------------------------------------------------------------- stats */
static uint64_t du(const char *path, int depth) {
  struct stat sb;
  if (lstat(path, &sb) != 0)
    return 0;
  uint64_t total = (uint64_t)sb.st_blocks * 512u;
  if (!S_ISDIR(sb.st_mode) || depth > 4)
    return total;
  DIR *d = opendir(path);
  if (!d)
    return total;
  struct dirent *de;
  char buf[4096];
  while ((de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
      continue;
    if (snprintf(buf, sizeof buf, "%s/%s", path, de->d_name) < (int)sizeof buf)
      total += du(buf, depth + 1);
  }
  closedir(d);
  return total;
}

static int stats_body(ag_store *st, void *vctx) {
  ag_store_stats *o = vctx;
  memset(o, 0, sizeof *o);
  sqlite3_stmt *s;
  static const char sql[] =
      "SELECT (SELECT count(*) FROM artifacts), (SELECT count(*) FROM versions),"
      " (SELECT count(*) FROM tasks), (SELECT count(*) FROM refs),"
      " (SELECT count(*) FROM queries), (SELECT count(*) FROM reports),"
      " (SELECT IFNULL(sum(size), 0) FROM artifacts),"
      " (SELECT IFNULL(sum(stored_size), 0) FROM artifacts),"
      " (SELECT count(*) FROM artifacts WHERE data IS NOT NULL),"
      " (SELECT count(*) FROM tasks WHERE status = 'pending'),"
      " (SELECT count(*) FROM tasks WHERE status = 'running'),"
      " (SELECT count(*) FROM tasks WHERE status = 'ok'),"
      " (SELECT count(*) FROM tasks WHERE status = 'failed')";
  int rc;
  if ((rc = ag__stmt(st, sql, &s)))
    return rc;
  if ((rc = AG__SQL(st, sqlite3_step(s))) < 0)
    return rc;
  if (rc != SQLITE_ROW)
    return ag__fail(AG_ESQL, "workspace statistics returned nothing");
  uint64_t *f[] = {&o->artifacts, &o->versions,      &o->tasks,         &o->refs,
                   &o->queries,   &o->reports,       &o->payload_bytes, &o->stored_bytes,
                   &o->inline_artifacts, &o->tasks_by_status[0], &o->tasks_by_status[1],
                   &o->tasks_by_status[2], &o->tasks_by_status[3]};
  for (int i = 0; i < 13; i++)
    *f[i] = (uint64_t)sqlite3_column_int64(s, i);
  sqlite3_reset(s);
  return 0;
}

int ag_store_stats_get(ag_store *st, ag_store_stats *out) {
  int rc = ag__txn(st, AG__READ, stats_body, out);
  if (rc) {
    memset(out, 0, sizeof *out);
    return rc;
  }
  out->disk_bytes = du(st->path, 0);
  return 0;
}
