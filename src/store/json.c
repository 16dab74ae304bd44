/*
 * json.c — workspace records as JSON: the shapes `argus ws --json` prints
 * and the client API (argus.h) returns, in one place. Pure conversion: no
 * database access; called once per record listed.
 */
#include "argus/store.h"

#include <stdio.h>

static void when(uint64_t ns, char buf[32]) {
  if (ns)
    ag_iso8601(ns, buf);
  else
    snprintf(buf, 32, "-");
}

void ag_store_obj_text(const ag_obj *o, char *buf, size_t cap) {
  switch (o->kind) {
  case AG_OBJ_VERSION: snprintf(buf, cap, "v%lld", (long long)o->id); break;
  case AG_OBJ_TASK: snprintf(buf, cap, "t%lld", (long long)o->id); break;
  case AG_OBJ_QUERY: snprintf(buf, cap, "q%lld", (long long)o->id); break;
  case AG_OBJ_ARTIFACT: snprintf(buf, cap, "%s", o->hash); break;
  default: snprintf(buf, cap, "-"); break;
  }
}

json_t *ag_store_version_json(const ag_version *v) {
  char t[32];
  when(v->created_ns, t);
  json_t *origin = json_loads(v->origin ? v->origin : "{}", 0, NULL);
  json_t *j = json_pack("{s:I,s:s,s:o,s:s}", "id", (json_int_t)v->id, "module", v->module,
                        "origin", origin ? origin : json_object(), "created", t);
  if (j) {
    json_object_set_new(j, "parent", v->parent ? json_integer(v->parent) : json_null());
    json_object_set_new(j, "transform", v->transform ? json_string(v->transform) : json_null());
    json_object_set_new(j, "task", v->task_id ? json_integer(v->task_id) : json_null());
  }
  return j;
}

json_t *ag_store_ref_json(const ag_ref *r) {
  char t[32], tgt[80];
  when(r->updated_ns, t);
  ag_store_obj_text(&r->target, tgt, sizeof tgt);
  return json_pack("{s:s,s:s,s:s,s:s}", "name", r->name, "target_type",
                   r->target.kind == AG_OBJ_VERSION ? "version" : "artifact", "target", tgt,
                   "updated", t);
}
