/*
 * backend_map.c — the mapping run (docs/attribution.md): the mapping
 * variant (src/ptx/xform_map.c) run under the host runtime's "map"
 * collection, which binds its counter slots and writes what they counted
 * (src/collect/map_bind.c); with the trace-free build compiled -lineinfo
 * it makes the PC-to-region map n(r, p). Signal `ownership` is the map
 * itself; the attributed signals of SASS metrics (backend_sass.c) join it.
 *
 * ag__obs_synth_attributed, the synthesis of every attributed signal, is
 * here: it reads the artifacts the plan's tasks made and calls
 * ag_attr_signal (src/synth/attrib_signal.c); so does stalls
 * (backend_stalls.c), with PC samples in place of SASS metrics.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "argus/attrib.h"
#include "argus/collect.h"
#include "argus/sass_ev.h"
#include "observe_int.h"

/* The -lineinfo compile among t's dependencies, or the one a Collect
 * dependency of collector `via` ran. */
static const ag_task *lineinfo_compile(const ag_plan *p, const ag_task *t, const char *via) {
  const ag_task *c = via ? ag__obs_collect_dep(p, t, via) : NULL;
  if (c)
    return c->deps.n ? ag_plan_task(p, c->deps.v[0]) : NULL;
  for (size_t i = 0; i < t->deps.n; i++) {
    const ag_task *d = ag_plan_task(p, t->deps.v[i]);
    if (d && !strcmp(d->op, "compile") && json_is_true(json_object_get(d->config, "lineinfo")))
      return d;
  }
  return NULL;
}

/* The -lineinfo cubin's opcodes (ag_collect_disasm) into *out, for inst_mix
 * and barriers derived from the map when the SASS-metrics run failed. No
 * disassembler: an evidence with no instruction whose status says why. */
static int disasm_of(ag_task *t, const char *cubin, size_t len, const char *id, ag_diags *d,
                     ag_sass_ev **out) {
  const char *td = getenv("TMPDIR");
  char path[4096], *text = NULL;
  size_t tlen = 0;
  snprintf(path, sizeof path, "%s/argus-disasm-XXXXXX", td && *td ? td : "/tmp");
  int fd = mkstemp(path), rc;
  if (fd < 0)
    return ag__obs_fail(t, AG_EIO, "cannot write the -lineinfo cubin for nvdisasm: %s: %s",
                        path, strerror(errno));
  ssize_t w = write(fd, cubin, len);
  close(fd);
  if (w != (ssize_t)len) {
    unlink(path);
    return ag__obs_fail(t, AG_EIO, "cannot write the -lineinfo cubin for nvdisasm: %s", path);
  }
  rc = ag_collect_disasm(path, id, &text, &tlen);
  unlink(path);
  if (!rc)
    rc = ag_sass_ev_load_mem(text, tlen, "the -lineinfo cubin's disassembly", d, out);
  ag_free(text);
  return rc ? ag__obs_fail_diags(t, rc, "cannot read the -lineinfo cubin's opcodes", d) : 0;
}

static const char *out_of(const ag_task *t, const char *name) {
  return t && t->outputs ? json_string_value(json_object_get(t->outputs, name)) : NULL;
}

/* The program version a compile built: the hash of the PTX it compiled. */
static const char *compiled_version(const ag_plan *p, const ag_task *compile) {
  return compile ? ag__obs_input(p, compile, "ptx") : NULL;
}

int ag__obs_synth_attributed(ag_exec_ctx *cx, ag_task *t) {
  obs *ob = cx->ud;
  const char *signal = json_string_value(json_object_get(t->config, "signal"));
  int metric = strcmp(signal ? signal : "", "ownership") != 0;
  /* the PC-keyed evidence: CUPTI SASS metrics, or PC samples for stalls */
  int stalls = signal && !strcmp(signal, "stalls");
  const char *via = stalls ? "stalls" : "sass", *vout = stalls ? "stalls" : "sass_metrics";
  const ag_task *mc = ag__obs_collect_dep(cx->plan, t, "map");
  const ag_task *mcomp = mc && mc->deps.n ? ag_plan_task(cx->plan, mc->deps.v[0]) : NULL;
  const ag_task *lc = lineinfo_compile(cx->plan, t, metric ? via : NULL);
  const ag_task *sc = metric ? ag__obs_collect_dep(cx->plan, t, via) : NULL;
  const char *hl = out_of(mcomp, "probes"), *hc = out_of(mc, "map_counts"),
             *hb = out_of(lc, "cubin"), *hs = out_of(sc, vout);
  /* inst_mix and barriers without SASS metrics: derived from the map (the
   * recipe's optional evidence), with the -lineinfo build's opcodes */
  int derive = metric && !stalls && !hs &&
               (!strcmp(signal, "inst_mix") || !strcmp(signal, "barriers"));
  json_t *layout = NULL, *counts = NULL, *out = NULL;
  char *cub = NULL, *sm = NULL, *ptx = NULL;
  size_t cublen = 0, smlen = 0, ptxlen = 0;
  ag_attr_layout *L = NULL;
  uint64_t *slots = NULL;
  size_t nslots = 0;
  ag_sass_cubin *cubin = NULL;
  ag_sass_ev *ev = NULL, *ops = NULL;
  ag_str mver = AG_STR_INIT;
  ag_diags d;
  ag_diags_init(&d);
  int rc;
  if (!hl || !hc || !hb || (metric && !hs && !derive)) {
    rc = ag__obs_fail(t, AG_ENOTFOUND, "%s needs %s: %s", signal,
                      !hl      ? "the mapping variant's layout"
                      : !hc    ? "the mapping run's counts"
                      : !hb    ? "the -lineinfo build"
                      : stalls ? "the PC-sampling run"
                               : "the SASS-metrics run",
                      !hc && mc && mc->error   ? mc->error
                      : !hs && sc && sc->error ? sc->error
                                               : "it did not run");
    goto out;
  }
  if ((rc = ag__obs_get_json(ob, t, hl, "the mapping layout", &layout)) ||
      (rc = ag__obs_get_json(ob, t, hc, "the mapping run's counts", &counts)) ||
      (rc = ag__obs_get(ob, t, hb, "the -lineinfo cubin", &cub, &cublen)) ||
      (hs && (rc = ag__obs_get(ob, t, hs, "the SASS metrics", &sm, &smlen))))
    goto out;
  if ((rc = ag_attr_layout_from_json(layout, &d, &L)) ||
      (rc = ag_attr_counts_from_json(counts, &d, &slots, &nslots)) ||
      (rc = ag_sass_cubin_parse(cub, cublen, "the -lineinfo cubin", &d, &cubin)) ||
      (sm && (rc = ag_sass_ev_load_mem_as(sm, smlen, stalls ? "stalls.json" : "sass_metrics.json",
                                          stalls ? "argus-stalls" : "argus-sass-metrics", &d,
                                          &ev)))) {
    rc = ag__obs_fail_diags(t, rc, "cannot decode the attribution's evidence", &d);
    goto out;
  }
  if (derive && (rc = disasm_of(t, cub, cublen, hb, &d, &ops)))
    goto out;
  /* ownership's view by source file: the PTX the -lineinfo cubin was
   * compiled from (its .loc lines) */
  if (!metric && compiled_version(cx->plan, lc) &&
      (rc = ag__obs_get(ob, t, compiled_version(cx->plan, lc), "the program's PTX", &ptx,
                        &ptxlen)))
    goto out;
  /* the metric's version: the -lineinfo build's program when the run loaded
   * that very cubin (the evidence names it), else the build it names */
  if (ev && ev->variant_id && !strcmp(ev->variant_id, hb))
    ag_str_puts(&mver, compiled_version(cx->plan, lc));
  else if (ev)
    ag_str_printf(&mver, "the build of variant %.12s", ev->variant_id ? ev->variant_id : "?");
  ag_attr_inputs in = {L,     slots, nslots, cubin, compiled_version(cx->plan, lc),
                       ev,    ev ? ag_str_cstr(&mver) : NULL, t->region, ops,
                       sc && sc->error ? sc->error : "the SASS-metrics run did not run",
                       ptx,   ptxlen};
  if ((rc = ag_attr_signal(signal, &in, &d, &out))) {
    rc = ag__obs_fail_diags(t, rc, "attribution failed", &d);
    goto out;
  }
  ag_scope s;
  ag__obs_scope_of(t, &s);
  ag_str sc_text = AG_STR_INIT;
  ag_scope_format(&s, &sc_text);
  if (sc_text.len) /* counts and CUPTI metrics add up over the run */
    json_array_append_new(json_object_get(out, "warnings"),
                          json_sprintf("%s covers every launch, SM, CTA and warp of its run: the "
                                       "mapping run and CUPTI count over the whole run, so the "
                                       "scope '%s' is not applied to it",
                                       signal, ag_str_cstr(&sc_text)));
  ag_str_release(&sc_text);
  json_object_set_new(out, "program", json_string(ob->program));
  rc = ag__obs_put_json(ob, t, "values", out, "json");
out:
  json_decref(out);
  json_decref(layout);
  json_decref(counts);
  ag_attr_layout_free(L);
  ag_free(slots);
  ag_sass_cubin_free(cubin);
  ag_sass_ev_free(ev);
  ag_sass_ev_free(ops);
  ag_free(cub);
  ag_free(sm);
  ag_free(ptx);
  ag_str_release(&mver);
  ag_diags_release(&d);
  return rc;
}

/* The mapping run: the host runtime's "map" collection (the variant's
 * counters bound, every launch timed). */
static int map_collect(ag_exec_ctx *cx, ag_task *t, ag_collect_job *job) {
  job->ro->collect = "map";
  return 0;
}

static int map_decode(const void *data, size_t len, const char *what, ag_diags *d, void **out) {
  json_error_t e;
  json_t *j = json_loadb(data, len, 0, &e);
  uint64_t *slots = NULL;
  size_t n = 0;
  *out = NULL;
  if (!j) {
    ag_diags_add(d, AG_SEV_ERROR, what, e.line, e.column, NULL, 0,
                 "the mapping run's counts '%s' are not JSON: %s", what, e.text);
    return AG_ECORRUPT;
  }
  int rc = ag_attr_counts_from_json(j, d, &slots, &n);
  ag_free(slots);
  if (rc) {
    json_decref(j);
    return rc;
  }
  *out = j;
  return 0;
}

static void map_release(void *j) { json_decref(j); }

static const ag_executor map_execs[] = {{"synth.ownership", ag__obs_synth_attributed}};

static const char *const map_evidence[] = {"map_counts", NULL};

const ag_backend ag__backend_map = {
    .name = "map",
    .summary = "the mapping run: executions per (basic block, current region), the PC-to-region "
               "map with the -lineinfo build",
    .evidence = map_evidence,
    .effects = AG_EFF_PERTURBS_TIMING,
    .variant = "mapping",
    .collector = "map",
    .output = "map_counts",
    .decode = map_decode,
    .release = map_release,
    .execs = map_execs,
    .nexecs = sizeof map_execs / sizeof map_execs[0],
    .collect = map_collect,
};
