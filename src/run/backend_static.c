/*
 * backend_static.c — the compiler's report (signal `static`): registers,
 * spills, shared memory and stack of the trace-free build as ptxas gives
 * them, and how the build compares with the user's. No run: its evidence
 * is the compile task's `resources` artifact.
 */
#include <string.h>

#include "observe_int.h"

/* Synthesize `static`: the compiler's report of the trace-free build. */
static int ex_synth_static(ag_exec_ctx *cx, ag_task *t) {
  obs *ob = cx->ud;
  json_t *res = NULL;
  int rc = ag__obs_get_json(ob, t, ag__obs_input(cx->plan, t, "resources"), "the compiler's report",
                            &res);
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
                                        {"smem_bytes", "shared_memory_static", "bytes"},
                                        {"stack_bytes", "stack", "bytes"},
                                        {"barriers", "barriers", "count"}};
  /* how the module was built, and whether that is the user's code */
  json_t *build = json_object_get(res, "build"), *prod = json_object_get(res, "production");
  if (build) {
    ag_str b = AG_STR_INIT;
    ag_str_printf(&b, "%s", json_string_value(json_object_get(build, "compiler")));
    size_t k;
    json_t *o;
    json_array_foreach(json_object_get(build, "options"), k, o)
        ag_str_printf(&b, " %s", json_string_value(o));
    ag_str_printf(&b, ", %s",
                  json_is_true(json_object_get(build, "whole_program"))
                      ? "whole program"
                      : "relocatable (--compile-only)");
    const char *as = json_string_value(json_object_get(build, "as"));
    if (as)
      ag_str_printf(&b, ": %s", as);
    ag__obs_value(vals, "(module)", "static", "build", json_string(ag_str_cstr(&b)), "",
                  "observed");
    ag_str_release(&b);
  }
  if (prod) {
    ag_str b = AG_STR_INIT;
    const char *sum = json_string_value(json_object_get(prod, "summary"));
    if (json_is_true(json_object_get(prod, "identical")))
      ag_str_printf(&b, "matches %s: %s", json_string_value(json_object_get(prod, "path")), sum);
    else if (json_is_true(json_object_get(prod, "compared")))
      ag_str_printf(&b, "warning: the measured build differs from %s: %s%s",
                    json_string_value(json_object_get(prod, "path")), sum,
                    json_is_true(json_object_get(prod, "file"))
                        ? ""
                        : " (the markers' asm comments moved code: docs/markers.md)");
    else
      ag_str_printf(&b, "warning: cannot compare with %s: %s",
                    json_string_value(json_object_get(prod, "path")), sum);
    ag__obs_value(vals, "(module)", "static", "production", json_string(ag_str_cstr(&b)), "",
                  "observed");
    ag_str_release(&b);
  }
  json_array_foreach(funcs, i, f) {
    const char *name = json_string_value(json_object_get(f, "name"));
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
      json_t *v = json_object_get(f, keys[k][0]);
      if (json_is_integer(v) && json_integer_value(v) >= 0) /* -1: not in the log */
        ag__obs_value(vals, name, "static", keys[k][1], json_incref(v), keys[k][2], "observed");
    }
    /* the compiler knows the static part only */
    ag__obs_value(vals, name, "static", "shared_memory_dynamic",
                  json_string("set by each launch: 'argus trace' reports each recorded launch's "
                              "dynamic shared memory and the CTAs per SM it allows"),
                  "", "observed");
  }
  json_decref(res);
  json_t *out = json_pack("{s:o}", "values", vals);
  rc = ag__obs_put_json(ob, t, "values", out, "json");
  json_decref(out);
  return rc;
}

static const ag_executor static_execs[] = {{"synth.static", ex_synth_static}};

/* compile_log: the resource report; lineinfo: the -lineinfo build the
 * attributed signals read (backend_map.c) */
static const char *const static_evidence[] = {"compile_log", "lineinfo", NULL};

const ag_backend ag__backend_static = {
    .name = "static",
    .summary = "the compiler's resource report of the trace-free build (no run)",
    .evidence = static_evidence,
    .effects = 0,
    .variant = "trace-free",
    .execs = static_execs,
    .nexecs = sizeof static_execs / sizeof static_execs[0],
};
