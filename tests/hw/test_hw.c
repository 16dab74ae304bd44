/*
 * test_hw.c — the activity and PC-sampling collectors on the CPU
 * (docs/system.md, docs/stalls.md):
 *
 *   system_recorded  the system timeline recorded on the H200
 *                    (tests/data/evidence/hw.system.json) decodes: the 4
 *                    stall_truth launches on 2 streams with their grid,
 *                    block and registers, the copies and the set, no
 *                    dropped record, the clock aligned within its bound;
 *                    the signal and its text
 *   system_launch_scope  the scope's launch= selects the system timeline's
 *                    launches (hw.system.json, gemm_tma.system.json),
 *                    and the synthesis says which it covers
 *   chrome_same_run  the trace and the system timeline of ONE run
 *                    (hw.trace.agev, hw.trace.system.json) in one Chrome
 *                    trace: both parse, the system process is there, and
 *                    each launch's first warp entry lies inside the
 *                    kernel's CUPTI span (moved by the offset) within the
 *                    stated error: the alignment measured; the trace as
 *                    `argus observe --signals timeline,system` writes it
 *                    has the format's structure, and every region event
 *                    lies inside its launch's kernel event within the
 *                    stated error (check_nesting)
 *   stalls_recorded  the PC samples recorded on the H200 (hw.stalls.json,
 *                    with hw.ptx, hw.map_counts.json, hw.stalls.cubin)
 *                    attributed through the map: region wait's top stall
 *                    reason is the barrier's, region issue's another one;
 *                    samples are conserved; a map of another program
 *                    version is refused (the wrong case)
 *   nvtx_graphs      constructed evidence with NVTX markers and CUDA graph
 *                    kernels: start/end pairs by ID into nested ranges
 *                    (depth), an instant marker, a range never closed and
 *                    an end without its start reported; each range lists
 *                    the launches it encloses (and a launch its innermost
 *                    range); graph kernels grouped per graph launch (graph
 *                    ID and correlation ID); launch= selects; the text
 *   chrome_nvtx      NVTX ranges and a graph launch added around the
 *                    two kernels of hw.trace.system.json: the joined Chrome
 *                    trace parses, has the NVTX and graph threads, and the
 *                    range's event encloses every kernel's event
 *   bad_evidence     malformed files: a diagnostic naming what is wrong
 *   no_cupti, held, not_permitted, bad_config
 *                    the collectors' failures, through a stand-in CUPTI
 *                    (tests/sassm/fake_cupti.c) and through the host
 *                    runtime (host-error.txt: the Collect task's reason)
 */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "activity.h"
#include "argus/evidence.h"
#include "argus/host.h"
#include "argus/report_trace.h"
#include "argus/stalls.h"
#include "argus/system_ev.h"
#include "argus/variant.h"
#include "check.h"
#include "hw_util.h"
#include "pcsamp.h"


static ag_sys_ev *load_sys(const char *name) {
  char *p = hw_data_path(name);
  ag_diags d;
  ag_diags_init(&d);
  ag_sys_ev *e = NULL;
  if (ag_sys_ev_load(p, &d, &e))
    hw_print_diags(&d);
  ag_diags_release(&d);
  ag_free(p);
  return e;
}

TEST(system_recorded) {
  ag_sys_ev *e = load_sys("hw.system.json");
  CHECK(e != NULL);
  if (!e)
    return;
  CHECK_EQ_INT((int)e->dropped, 0);
  CHECK_EQ_INT(e->ncal, 2);
  /* CUPTI's clock against %globaltimer on the H200: a fixed offset, the
   * bound well under a microsecond */
  printf("@ clock: CUPTI - globaltimer = %.0f ns, error <= %.0f ns\n", e->offset_ns,
         e->error_ns);
  CHECK(e->error_ns > 0 && e->error_ns < 1000);
  json_t *sig = ag_sys_signal(e);
  CHECK(sig != NULL);
  json_t *ls = json_object_get(sig, "launches"), *o;
  CHECK_EQ_INT((int)json_array_size(ls), 4);
  CHECK_EQ_INT((int)json_integer_value(json_object_get(sig, "calibration_kernels")), 2);
  size_t i;
  json_int_t s0 = -1;
  int other_stream = 0;
  json_array_foreach(ls, i, o) {
    CHECK_EQ_STR(json_string_value(json_object_get(o, "kernel")), "stall_truth");
    CHECK_EQ_INT((int)json_integer_value(json_array_get(json_object_get(o, "grid"), 0)), 8);
    CHECK_EQ_INT((int)json_integer_value(json_array_get(json_object_get(o, "block"), 0)), 256);
    CHECK(json_integer_value(json_object_get(o, "registers")) > 0);
    CHECK(json_integer_value(json_object_get(o, "duration_ns")) > 0);
    json_int_t st = json_integer_value(json_object_get(o, "stream"));
    if (s0 < 0)
      s0 = st;
    other_stream |= st != s0;
  }
  CHECK(other_stream);
  int copies = 0, sets = 0;
  json_array_foreach(json_object_get(sig, "streams"), i, o) {
    copies += (int)json_integer_value(json_object_get(o, "memcpy"));
    sets += (int)json_integer_value(json_object_get(o, "memset"));
  }
  CHECK(copies >= 2);
  CHECK(sets >= 1);
  ag_str txt = {0};
  CHECK_EQ_INT(ag_sys_text(sig, &txt), 0);
  printf("%s", ag_str_cstr(&txt));
  CHECK_CONTAINS(ag_str_cstr(&txt), "stall_truth");
  CHECK_CONTAINS(ag_str_cstr(&txt), "4 launches on 3 streams");
  ag_str_release(&txt);
  json_decref(sig);
  ag_sys_ev_free(e);
}

/* The values of a synthesis output whose region starts with prefix. */
static int nvalues(const json_t *out, const char *prefix) {
  size_t i;
  json_t *v;
  int n = 0;
  json_array_foreach(json_object_get(out, "values"), i, v) {
    const char *r = json_string_value(json_object_get(v, "region"));
    n += r && !strncmp(r, prefix, strlen(prefix));
  }
  return n;
}

static const json_t *value_of(const json_t *out, const char *region, const char *stat) {
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(out, "values"), i, v) {
    const char *r = json_string_value(json_object_get(v, "region"));
    const char *s = json_string_value(json_object_get(v, "stat"));
    if (r && s && !strcmp(r, region) && !strcmp(s, stat))
      return json_object_get(v, "value");
  }
  return NULL;
}

static ag_scope scope_of(const char *text) {
  ag_scope s;
  CHECK_EQ_INT(ag_scope_parse(text, &s, NULL), 0);
  return s;
}

/* The launch scope of the system timeline (issue 21), on the recorded
 * evidence: launch=1:3 keeps launches 1 and 2 with their numbers and
 * fields as in the whole run, the streams count those two only (the
 * copies stay), the report's value launches_covered says which; a scope
 * past the run's launches is missing with why; coordinates the evidence
 * does not record (iter, role; the launch too when the evidence kind does
 * not retain it) are warnings and select nothing. */
TEST(system_launch_scope) {
  ag_sys_ev *e = load_sys("hw.system.json");
  CHECK(e != NULL);
  if (!e)
    return;
  const unsigned retained = ag_evidence_find("system")->retained_scope;
  CHECK_EQ_INT((int)retained, 1 << AG_SCOPE_LAUNCH);
  json_t *all = ag_sys_signal(e);
  ag_scope s = scope_of("launch=1:3");
  json_t *sig = ag_sys_signal_in(e, &s), *o;
  json_t *ls = json_object_get(sig, "launches");
  CHECK_EQ_INT((int)json_array_size(ls), 2);
  size_t i;
  json_array_foreach(ls, i, o) {
    json_int_t n = json_integer_value(json_object_get(o, "launch"));
    CHECK_EQ_INT((int)n, (int)i + 1);
    CHECK(json_equal(o, json_array_get(json_object_get(all, "launches"), (size_t)n)));
  }
  int kernels = 0, copies = 0, copies_all = 0;
  json_array_foreach(json_object_get(sig, "streams"), i, o) {
    kernels += (int)json_integer_value(json_object_get(o, "kernels"));
    copies += (int)json_integer_value(json_object_get(o, "memcpy"));
  }
  json_array_foreach(json_object_get(all, "streams"), i, o)
      copies_all += (int)json_integer_value(json_object_get(o, "memcpy"));
  CHECK_EQ_INT(kernels, 2);
  CHECK_EQ_INT(copies, copies_all);
  json_t *sel = json_object_get(sig, "selection");
  CHECK_EQ_STR(json_string_value(json_object_get(sel, "scope")), "launch=1:3");
  CHECK_EQ_INT((int)json_integer_value(json_object_get(sel, "launches_in_run")), 4);
  CHECK_EQ_INT((int)json_array_size(json_object_get(sel, "covered")), 2);
  CHECK(json_object_get(all, "selection") == NULL);
  ag_str txt = AG_STR_INIT;
  CHECK_EQ_INT(ag_sys_text(sig, &txt), 0);
  CHECK_CONTAINS(ag_str_cstr(&txt), "2 launches on 3 streams");
  CHECK_CONTAINS(ag_str_cstr(&txt), "scope launch=1:3: launches 1, 2 of the run's 4");
  ag_str_release(&txt);
  json_decref(sig);
  /* the synthesis: values of launches 1 and 2 only, and which it covers;
   * iter and role are not recorded: warnings, every launch's values kept */
  json_t *out = NULL;
  s = scope_of("launch=1:3,iter=0:2,role=consumer");
  CHECK_EQ_INT(ag_sys_synth(e, &s, retained, &out), 0);
  CHECK_EQ_INT(nvalues(out, "(launch "), 2 * 9);
  CHECK(value_of(out, "(launch 1 stall_truth)", "duration_ns") != NULL);
  CHECK(value_of(out, "(launch 0 stall_truth)", "duration_ns") == NULL);
  const json_t *cov = value_of(out, "(system)", "launches_covered");
  CHECK_EQ_INT((int)json_integer_value(json_array_get(json_object_get(cov, "covered"), 1)), 2);
  json_t *w = json_object_get(out, "warnings");
  CHECK_EQ_INT((int)json_array_size(w), 2);
  CHECK_CONTAINS(json_string_value(json_array_get(w, 0)), "records launches, not iter");
  CHECK_CONTAINS(json_string_value(json_array_get(w, 1)), "role=consumer does not select");
  CHECK_EQ_INT((int)json_array_size(json_object_get(out, "missing")), 0);
  json_decref(out);
  /* no scope: every launch, nothing said of a selection */
  CHECK_EQ_INT(ag_sys_synth(e, NULL, retained, &out), 0);
  CHECK_EQ_INT(nvalues(out, "(launch "), 4 * 9);
  CHECK(value_of(out, "(system)", "launches_covered") == NULL);
  CHECK_EQ_INT((int)json_array_size(json_object_get(out, "warnings")), 0);
  json_decref(out);
  /* past the run's launches: nothing covered, missing with why */
  s = scope_of("launch=7:9");
  CHECK_EQ_INT(ag_sys_synth(e, &s, retained, &out), 0);
  CHECK_EQ_INT(nvalues(out, "(launch "), 0);
  CHECK(value_of(out, "(system)", "launches_covered") == NULL);
  json_t *m = json_array_get(json_object_get(out, "missing"), 0);
  CHECK_EQ_STR(json_string_value(json_object_get(m, "why")),
               "the scope's launch=7:9 selects none of the 4 launches the run made (launches "
               "are counted from 0)");
  json_decref(out);
  /* an evidence kind that does not retain the launch: the scope selects nothing */
  s = scope_of("launch=1:3");
  CHECK_EQ_INT(ag_sys_synth(e, &s, 0, &out), 0);
  CHECK_EQ_INT(nvalues(out, "(launch "), 4 * 9);
  CHECK_CONTAINS(json_string_value(json_array_get(json_object_get(out, "warnings"), 0)),
                 "records launches, not launch");
  json_decref(out);
  json_decref(all);
  ag_sys_ev_free(e);
  /* gemm_tma's 21 launches: two ranges, the first and the last */
  e = load_sys("gemm_tma.system.json");
  CHECK(e != NULL);
  if (!e)
    return;
  s = scope_of("launch=20,launch=0");
  CHECK_EQ_INT(ag_sys_synth(e, &s, retained, &out), 0);
  CHECK_EQ_INT(nvalues(out, "(launch "), 2 * 9);
  CHECK(value_of(out, "(launch 0 gemm_tma)", "grid") != NULL);
  CHECK(value_of(out, "(launch 20 gemm_tma)", "grid") != NULL);
  cov = value_of(out, "(system)", "launches_covered");
  CHECK_EQ_STR(json_string_value(json_object_get(cov, "scope")), "launch=0:1,launch=20:21");
  CHECK_EQ_INT((int)json_integer_value(json_object_get(cov, "launches_in_run")), 21);
  json_decref(out);
  ag_sys_ev_free(e);
}

static int file(const char *name, char **data, size_t *len);

/* hw.trace.agev with its probe table: the GPU test ran the traced variant
 * without ARGUS_SITES, so the table (the traced variant's of hw.ptx, made
 * again here: the same PTX gives the same table) is put into the header
 * and the checksum made again, in memory. The records are as recorded. */
static int load_trace(ag_diags *d, char **bytes, ag_evidence **ev) {
  char *f = NULL, *ptx = NULL;
  size_t n = 0, len = 0;
  ag_variant *v = NULL;
  ag_variant_opts o = {AG_VARIANT_TRACED, NULL, 0, 0};
  int rc = file("hw.trace.agev", &f, &n);
  if (!rc)
    rc = file("hw.ptx", &ptx, &len);
  if (!rc)
    rc = ag_variant_make(ptx, len, "hw.ptx", &o, d, &v);
  ag_ev_file_header h;
  if (!rc && n < AG_EV_FILE_HEADER_BYTES)
    rc = AG_EPARSE;
  json_t *hdr = NULL;
  if (!rc) {
    memcpy(&h, f, sizeof h);
    hdr = json_loadb(f + AG_EV_FILE_HEADER_BYTES + h.data_len, h.header_len, 0, NULL);
    rc = hdr ? 0 : AG_EPARSE;
  }
  char *js = NULL;
  if (!rc) {
    json_object_set(hdr, "probes", v->probes);
    js = json_dumps(hdr, JSON_COMPACT);
    rc = js ? 0 : AG_ENOMEM;
  }
  if (!rc) {
    size_t jl = strlen(js), total = AG_EV_FILE_HEADER_BYTES + h.data_len + jl;
    *bytes = ag_malloc(total);
    memcpy(*bytes, f, AG_EV_FILE_HEADER_BYTES + h.data_len);
    memcpy(*bytes + AG_EV_FILE_HEADER_BYTES + h.data_len, js, jl);
    h.header_len = (uint32_t)jl;
    h.checksum = ag_ev_fnv(AG_EV_FNV_INIT, *bytes + AG_EV_FILE_HEADER_BYTES, h.data_len + jl);
    memcpy(*bytes, &h, sizeof h);
    rc = ag_evidence_load_mem(*bytes, total, "hw.trace.agev", d, ev);
  }
  free(js);
  json_decref(hdr);
  ag_variant_free(v);
  ag_free(ptx);
  ag_free(f);
  return rc;
}

/* The joined Chrome trace j of one run as `argus observe --signals
 * timeline,system` writes it: the format's structure (every event named,
 * a known phase, complete events with ts >= 0 and dur >= 0, metadata with
 * args) and every region event inside its launch's kernel event (the
 * tid's high half is the launch), within the alignment's error bound. */
static void check_nesting(json_t *j, int nlaunches, double error_ns) {
  CHECK(json_is_object(j));
  CHECK_EQ_STR(json_string_value(json_object_get(j, "displayTimeUnit")), "ns");
  json_t *evs = json_object_get(j, "traceEvents"), *e;
  CHECK(json_array_size(evs) > 0);
  size_t i;
  int bad = 0, regions = 0, kernels = 0, meta = 0;
  double kts[8], kend[8];
  json_array_foreach(evs, i, e) {
    const char *ph = json_string_value(json_object_get(e, "ph"));
    bad += !json_is_string(json_object_get(e, "name")) || !ph ||
           !json_is_integer(json_object_get(e, "pid"));
    if (ph && !strcmp(ph, "M")) {
      meta++;
      bad += !json_is_object(json_object_get(e, "args"));
      continue;
    }
    bad += !ph || strcmp(ph, "X") || !json_is_number(json_object_get(e, "ts")) ||
           json_number_value(json_object_get(e, "ts")) < 0 ||
           json_number_value(json_object_get(e, "dur")) < 0 || !json_object_get(e, "tid");
    const char *cat = json_string_value(json_object_get(e, "cat"));
    const char *nm = json_string_value(json_object_get(e, "name"));
    if (cat && !strcmp(cat, "system") && nm && !strcmp(nm, "stall_truth") && kernels < 8) {
      kts[kernels] = json_number_value(json_object_get(e, "ts"));
      kend[kernels] = kts[kernels] + json_number_value(json_object_get(e, "dur"));
      kernels++;
    }
  }
  CHECK_EQ_INT(bad, 0);
  CHECK(meta >= 2);
  CHECK_EQ_INT(kernels, nlaunches);
  double err_us = error_ns / 1e3, worst = 0;
  json_array_foreach(evs, i, e) {
    const char *cat = json_string_value(json_object_get(e, "cat"));
    if (!cat || strcmp(cat, "region"))
      continue;
    json_int_t l = json_integer_value(json_object_get(e, "tid")) >> 32;
    CHECK(l >= 0 && l < kernels);
    if (l < 0 || l >= kernels)
      continue;
    double ts = json_number_value(json_object_get(e, "ts"));
    double te = ts + json_number_value(json_object_get(e, "dur"));
    worst = fmax(worst, fmax(kts[l] - ts, te - kend[l]));
    regions++;
  }
  printf("@ nesting: %d region events in %d kernel events; the worst overhang %.3f us "
         "(error bound %.3f us)\n", regions, kernels, worst, err_us);
  CHECK(regions > 0);
  CHECK(worst <= err_us);
}

TEST(chrome_same_run) {
  ag_sys_ev *s = load_sys("hw.trace.system.json");
  char *p = NULL;
  ag_diags d;
  ag_diags_init(&d);
  ag_evidence *ev = NULL;
  ag_trace *tr = NULL;
  CHECK(s != NULL);
  CHECK_EQ_INT(load_trace(&d, &p, &ev), 0);
  if (!ev)
    hw_print_diags(&d);
  if (!s || !ev)
    goto out;
  CHECK_EQ_INT(ag_trace_decode(ev, &tr), 0);
  if (!tr)
    goto out;
  /* the alignment on one run: each traced launch's first warp entry
   * (globaltimer) against the kernel's CUPTI start, moved by the offset */
  int k = 0;
  for (int l = 0; l < ev->nlaunches; l++) {
    const ag_ev_launch *L = &ev->launches[l];
    double first = INFINITY, last = 0;
    for (uint32_t w = 0; w < L->warps; w++)
      if (L->meta[w].flags & AG_EV_EXITED) {
        first = fmin(first, (double)L->meta[w].gtime_entry);
        last = fmax(last, (double)L->meta[w].gtime_exit);
      }
    const ag_sys_rec *r = NULL;
    for (size_t i = 0, n = 0; i < s->nrecs; i++)
      if (s->recs[i].kind == AG_SYS_KERNEL && !s->recs[i].argus && n++ == (size_t)l)
        r = &s->recs[i];
    CHECK(r != NULL);
    if (!r)
      continue;
    double ks = ag_sys_ev_gt(s, r->start), ke = ag_sys_ev_gt(s, r->end);
    printf("@ same run: launch %d: kernel start %+.0f ns before its first warp, end %+.0f ns "
           "after its last warp exit (bound %.0f ns)\n",
           l, first - ks, ke - last, s->error_ns);
    /* the warps run inside the kernel's span, up to the alignment error */
    CHECK(first >= ks - s->error_ns);
    CHECK(last <= ke + s->error_ns);
    CHECK(first - ks < 20000); /* and the launch's start is the kernel's */
    k++;
  }
  CHECK_EQ_INT(k, ev->nlaunches);
  ag_str out = {0};
  CHECK_EQ_INT(ag_report_chrome_system(tr, s, NULL, 0, &out, NULL), 0);
  json_error_t je;
  json_t *j = json_loads(ag_str_cstr(&out), 0, &je);
  CHECK(j != NULL);
  CHECK_CONTAINS(ag_str_cstr(&out), "system (CUPTI activity, aligned on %globaltimer");
  CHECK_CONTAINS(ag_str_cstr(&out), "\"cat\":\"system\"");
  CHECK_CONTAINS(ag_str_cstr(&out), "\"cat\":\"region\"");
  CHECK_CONTAINS(ag_str_cstr(&out), "\"name\":\"stream ");
  /* every event at ts >= 0: one clock, one origin */
  size_t i;
  json_t *e;
  double minimum = INFINITY;
  json_array_foreach(json_object_get(j, "traceEvents"), i, e) {
    json_t *ts = json_object_get(e, "ts");
    if (json_is_number(ts))
      minimum = fmin(minimum, json_number_value(ts));
  }
  CHECK(minimum >= 0 && minimum < 1e-3);
  check_nesting(j, ev->nlaunches, s->error_ns);
  /* each launch's region events start where its warps did: the system
   * kernel's ts plus (first warp entry - kernel start), on one clock; within
   * 1 us, as occurrences are placed from %clock64 through per-SM offsets
   * (src/synth/decode.c: 0.34 and 0.62 us off the entry anchor here) */
  for (int l = 0; l < ev->nlaunches; l++) {
    double rmin = INFINITY, kts = -1;
    int seen = 0;
    json_array_foreach(json_object_get(j, "traceEvents"), i, e) {
      const char *cat = json_string_value(json_object_get(e, "cat"));
      json_t *ts = json_object_get(e, "ts");
      if (!cat || !json_is_number(ts))
        continue;
      if (!strcmp(cat, "region") &&
          (json_integer_value(json_object_get(e, "tid")) >> 32) == (json_int_t)l)
        rmin = fmin(rmin, json_number_value(ts));
      if (!strcmp(cat, "system") &&
          !strcmp(json_string_value(json_object_get(e, "name")), "stall_truth") && seen++ == l)
        kts = json_number_value(ts);
    }
    const ag_ev_launch *L = &ev->launches[l];
    double first = INFINITY;
    for (uint32_t w = 0; w < L->warps; w++)
      if (L->meta[w].flags & AG_EV_EXITED)
        first = fmin(first, (double)L->meta[w].gtime_entry);
    const ag_sys_rec *r = NULL;
    for (size_t q = 0, n = 0; q < s->nrecs; q++)
      if (s->recs[q].kind == AG_SYS_KERNEL && !s->recs[q].argus && n++ == (size_t)l)
        r = &s->recs[q];
    double want = r ? kts + (first - ag_sys_ev_gt(s, r->start)) / 1e3 : -1;
    printf("@ same run: launch %d: region events from %.3f us, the warps' entry at %.3f us\n",
           l, rmin, want);
    CHECK(r && fabs(rmin - want) <= 1.0);
  }
  json_decref(j);
  ag_str_release(&out);
out:
  ag_trace_free(tr);
  ag_evidence_free(ev);
  ag_diags_release(&d);
  ag_free(p);
  ag_sys_ev_free(s);
}

static int file(const char *name, char **data, size_t *len) {
  char *p = hw_data_path(name);
  int rc = ag_file_read(p, data, len);
  ag_free(p);
  return rc;
}

TEST(stalls_recorded) {
  char *ptx = NULL, *bin = NULL, *cj = NULL;
  size_t len = 0, blen = 0, clen = 0, nslots = 0;
  ag_diags d;
  ag_diags_init(&d);
  ag_variant_opts o = {AG_VARIANT_MAPPING, NULL, 0, 0};
  ag_variant *v = NULL;
  ag_attr_layout *L = NULL;
  ag_sass_cubin *cub = NULL;
  ag_attr_map *map = NULL;
  ag_sass_ev *e = NULL;
  uint64_t *slots = NULL;
  json_t *counts = NULL, *sj = NULL, *wrong = NULL;
  CHECK_EQ_INT(file("hw.ptx", &ptx, &len), 0);
  CHECK_EQ_INT(file("hw.stalls.cubin", &bin, &blen), 0);
  CHECK_EQ_INT(file("hw.map_counts.json", &cj, &clen), 0);
  if (!ptx || !bin || !cj)
    goto done;
  CHECK_EQ_INT(ag_variant_make(ptx, len, "hw.ptx", &o, &d, &v), 0);
  if (!v || ag_attr_layout_from_json(v->probes, &d, &L)) {
    hw_print_diags(&d);
    CHECK(0);
    goto done;
  }
  counts = json_loads(cj, 0, NULL);
  CHECK(counts && ag_attr_counts_from_json(counts, &d, &slots, &nslots) == 0);
  CHECK_EQ_INT(ag_sass_cubin_parse(bin, blen, "hw.stalls.cubin", &d, &cub), 0);
  char *sp = hw_data_path("hw.stalls.json");
  if (ag_sass_ev_load_as(sp, "argus-stalls", &d, &e))
    hw_print_diags(&d);
  ag_free(sp);
  CHECK(e != NULL);
  if (!e || !cub || !slots)
    goto done;
  CHECK(e->nmetrics > 10); /* every stall reason the H200 lists */
  CHECK(e->nrows > 10);    /* PC-level records */
  CHECK_EQ_INT(ag_attr_map_build(L, slots, nslots, cub, "stall_truth", &d, &map), 0);
  if (!map) {
    hw_print_diags(&d);
    goto done;
  }
  CHECK_EQ_INT(ag_stalls_json(map, e, cub, "stall_truth", L->version, &d, &sj), 0);
  if (!sj) {
    hw_print_diags(&d);
    goto done;
  }
  CHECK(json_is_true(json_object_get(sj, "conserved")));
  /* every sample counted once: the regions' samples are CUPTI's total
   * (within the few of rows outside the kernel's code) */
  double sum = 0, total = (double)json_integer_value(json_object_get(sj, "total_samples"));
  json_t *rg;
  size_t ri;
  json_array_foreach(json_object_get(sj, "regions"), ri, rg) sum +=
      json_number_value(json_object_get(rg, "samples"));
  printf("@ stalls: regions %.0f samples of CUPTI's %.0f; barrier samples moved to their BAR: "
         "%.0f\n",
         sum, total, json_number_value(json_object_get(sj, "barrier_samples_moved")));
  CHECK(total > 0 && fabs(sum - total) <= 1e-3 * total);
  CHECK(json_number_value(json_object_get(sj, "barrier_samples_moved")) > 0);
  const char *tw = NULL, *ti = NULL;
  size_t i;
  json_t *r;
  json_array_foreach(json_object_get(sj, "regions"), i, r) {
    const char *nm = json_string_value(json_object_get(r, "region"));
    const char *top = json_string_value(json_object_get(r, "top_reason"));
    printf("@ stalls: %s: %.0f samples (%.1f %%), top %s, reason entropy %.2f bits\n", nm,
           json_number_value(json_object_get(r, "samples")),
           100 * json_number_value(json_object_get(r, "share")), top ? top : "-",
           json_number_value(json_object_get(r, "reason_entropy_bits")));
    CHECK(json_array_size(json_object_get(r, "reasons")) > 0);
    json_t *rr;
    size_t ri2;
    json_array_foreach(json_object_get(r, "reasons"), ri2, rr) if (ri2 < 3) printf(
        "@ stalls:   %s %.0f (%.1f %%)\n", json_string_value(json_object_get(rr, "reason")),
        json_number_value(json_object_get(rr, "samples")),
        100 * json_number_value(json_object_get(rr, "share")));
    if (nm && !strcmp(nm, "stall_truth/wait"))
      tw = top;
    if (nm && !strcmp(nm, "stall_truth/issue"))
      ti = top;
    json_t *tp = json_array_get(json_object_get(r, "top_pcs"), 0);
    CHECK(tp && json_string_value(json_object_get(tp, "opcode")) != NULL);
    CHECK(tp && json_integer_value(json_object_get(tp, "line")) > 0);
  }
  CHECK(tw && strstr(tw, "barrier"));
  CHECK(ti && !strstr(ti, "barrier"));
  CHECK(tw && ti && strcmp(tw, ti));
  /* the wrong case: evidence of another program version is not joined */
  CHECK_EQ_INT(ag_stalls_json(map, e, cub, "stall_truth", "0123456789abcdef", &d, &wrong),
               AG_EINVAL);
  CHECK(wrong == NULL);
  { /* the same through the signal argus observe makes (ag_attr_signal "stalls") */
    ag_attr_inputs in = {L, slots, nslots, cub, L->version, e, L->version, "stall_truth",
                         NULL, NULL, NULL, 0};
    json_t *so = NULL;
    CHECK_EQ_INT(ag_attr_signal("stalls", &in, &d, &so), 0);
    const char *w2 = NULL;
    double ws = -1, ks = -1;
    json_array_foreach(json_object_get(so, "values"), i, r) {
      const char *rg2 = json_string_value(json_object_get(r, "region"));
      const char *st = json_string_value(json_object_get(r, "stat"));
      CHECK_EQ_STR(json_string_value(json_object_get(r, "qual")), "attributed");
      if (!strcmp(rg2, "stall_truth/wait") && !strcmp(st, "top_reason"))
        w2 = json_string_value(json_object_get(r, "value"));
      if (!strcmp(rg2, "stall_truth/wait") && !strcmp(st, "samples"))
        ws = json_number_value(json_object_get(r, "value"));
      if (!strcmp(rg2, "stall_truth") && !strcmp(st, "total_samples"))
        ks = json_number_value(json_object_get(r, "value"));
    }
    CHECK(w2 && tw && !strcmp(w2, tw));
    CHECK(ws > 0 && ks >= ws);
    CHECK_EQ_INT(json_array_size(json_object_get(so, "not_joined")), 0);
    json_decref(so);
    /* samples of another program version: named in not_joined, no value */
    in.metrics_version = "0123456789abcdef";
    CHECK_EQ_INT(ag_attr_signal("stalls", &in, &d, &so), 0);
    CHECK_EQ_INT(json_array_size(json_object_get(so, "not_joined")), 1);
    CHECK_EQ_INT(json_array_size(json_object_get(so, "values")), 0);
    json_decref(so);
    /* samples on PCs the mapping run never saw execute (the hottest unit's
     * count zeroed): unattributed, and the warning says how many, not that a
     * PC was lost or counted twice */
    in.metrics_version = L->version;
    uint64_t *z = ag_malloc(nslots * sizeof *z);
    CHECK(z != NULL);
    if (z) {
      memcpy(z, slots, nslots * sizeof *z);
      size_t hot = 1;
      for (size_t k = 1; k < nslots; k++)
        if (z[k] > z[hot])
          hot = k;
      z[hot] = 0;
      in.slots = z;
      CHECK_EQ_INT(ag_attr_signal("stalls", &in, &d, &so), 0);
      const char *wt = json_string_value(json_array_get(json_object_get(so, "warnings"), 0));
      printf("@ stalls, hottest unit unmapped: %s\n", wt ? wt : "(no warning)");
      CHECK(wt && strstr(wt, "fell on PCs the mapping run never saw execute"));
      CHECK(wt && !strstr(wt, "counted twice"));
      json_decref(so);
      ag_free(z);
    }
  }
done:
  json_decref(sj);
  json_decref(counts);
  ag_attr_map_free(map);
  ag_sass_ev_free(e);
  ag_sass_cubin_free(cub);
  ag_free(slots);
  ag_attr_layout_free(L);
  ag_variant_free(v);
  ag_diags_release(&d);
  ag_free(cj);
  ag_free(bin);
  ag_free(ptx);
}

/* ------------------------------------------------ NVTX ranges, CUDA graphs */

static void bad_sys(const char *json, const char *want);

#define NV_SYS                                                                 \
  "{\"format\":\"argus-system\",\"version\":1,\"dropped_records\":0,"              \
  "\"calibration\":[{\"gt_first\":1000,\"gt_last\":5000,\"cupti_start\":900,"       \
  "\"cupti_end\":4950}],\"nvtx\":{\"injection\":\"/x/libcupti.so\","                \
  "\"set_by_argus\":true},\"records\":["
#define NV_K(name, corr, t0, t1, graph, node)                                  \
  "{\"kind\":\"kernel\",\"corr\":" #corr ",\"stream\":7,\"start\":" #t0           \
  ",\"end\":" #t1 ",\"name\":\"" name "\",\"grid\":[1,1,1],\"block\":[32,1,1],"    \
  "\"registers\":8,\"graph\":" #graph ",\"graph_node\":" #node "}"
#define NV_MT(id, m, ts, name, tid)                                            \
  "{\"kind\":\"nvtx\",\"id\":" #id ",\"marker\":\"" m "\",\"ts\":" #ts             \
  ",\"pid\":1,\"tid\":" #tid ",\"name\":" name ",\"domain\":null}"
#define NV_M(id, m, ts, name) NV_MT(id, m, ts, name, 42)

static const char nv_json[] =
    NV_SYS NV_K("k", 10, 10000, 11000, 0, 0) "," NV_K("k", 11, 12000, 13000, 0, 0) ","
    NV_K("g1", 20, 20000, 21000, 5, 100) "," NV_K("g2", 20, 21100, 22000, 5, 101) ","
    NV_K("g1", 21, 23000, 24000, 5, 100) "," NV_K("g2", 21, 24100, 25000, 5, 101) ","
    NV_M(1, "start", 9000, "\"outer\"") "," NV_M(2, "start", 9500, "\"first\"") ","
    NV_M(2, "end", 13500, "null") "," NV_M(3, "start", 19000, "\"graphs\"") ","
    NV_M(3, "end", 26000, "null") "," NV_M(1, "end", 27000, "null") ","
    NV_M(4, "instant", 15000, "\"mark\"") "," NV_M(5, "start", 28000, "\"never_closed\"") ","
    NV_M(9, "end", 29000, "null") ","
    /* another thread's range, open when "first" starts: not its nesting */
    NV_MT(6, "start", 9400, "\"other\"", 43) "," NV_MT(6, "end", 9600, "null", 43) ","
    /* launch 1 starts inside this one and ends after it: not enclosed */
    NV_MT(7, "start", 11500, "\"partial\"", 44) "," NV_MT(7, "end", 12500, "null", 44) "]}";

/* "[0,1]" from a JSON array of integers */
static void ints(const json_t *a, char *buf, size_t n) {
  size_t i, k = 0;
  json_t *x;
  buf[k++] = '[';
  json_array_foreach(a, i, x) k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? "," : "",
                                                    (long long)json_integer_value(x));
  snprintf(buf + k, n - k, "]");
}

TEST(nvtx_graphs) {
  ag_diags d;
  ag_diags_init(&d);
  ag_sys_ev *e = NULL;
  CHECK_EQ_INT(ag_sys_ev_load_mem(nv_json, strlen(nv_json), "nv.json", &d, &e), 0);
  if (!e) {
    hw_print_diags(&d);
    ag_diags_release(&d);
    return;
  }
  CHECK_EQ_INT((int)e->nrecs, 6);
  CHECK_EQ_INT((int)e->nranges, 7);
  CHECK_EQ_INT((int)e->nvtx_unmatched, 1);
  CHECK(e->nvtx_on && e->nvtx_by_argus);
  /* by start: outer, other (thread 43), first (nested), partial (thread 44),
   * mark (instant, inside outer), graphs (nested), never_closed */
  static const char *const order[] = {"outer",   "other",  "first",       "partial",
                                      "mark",    "graphs", "never_closed"};
  static const int depth[] = {0, 0, 1, 0, 1, 1, 0};
  for (int i = 0; i < 7; i++) {
    CHECK_EQ_STR(e->ranges[i].name, order[i]);
    CHECK_EQ_INT(e->ranges[i].depth, depth[i]);
  }
  CHECK(e->ranges[4].instant && !e->ranges[4].open);
  CHECK(e->ranges[6].open && !e->ranges[6].instant);
  CHECK_EQ_INT((int)(e->ranges[2].end - e->ranges[2].start), 4000);
  CHECK_EQ_INT((int)e->recs[2].graph, 5);
  CHECK_EQ_INT((int)e->recs[3].graph_node, 101);
  json_t *sig = ag_sys_signal(e);
  CHECK(sig != NULL);
  char buf[128];
  struct {
    const char *range, *launches;
  } want[] = {{"outer", "[0,1,2,3,4,5]"}, {"first", "[0,1]"}, {"graphs", "[2,3,4,5]"},
              {"mark", "[]"}, {"never_closed", "[]"}, {"partial", "[]"}, {"other", "[]"}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    json_t *g = hw_nvtx_range(sig, want[i].range);
    CHECK(g != NULL);
    ints(json_object_get(g, "launches"), buf, sizeof buf);
    CHECK_EQ_STR(buf, want[i].launches);
  }
  CHECK(json_is_null(json_object_get(hw_nvtx_range(sig, "never_closed"), "duration_ns")));
  CHECK_EQ_INT((int)json_integer_value(json_object_get(hw_nvtx_range(sig, "outer"), "duration_ns")),
               18000);
  CHECK_EQ_INT((int)json_integer_value(
                   json_object_get(json_object_get(sig, "nvtx"), "unmatched_ends")), 1);
  /* a launch names its innermost range; graph kernels carry their IDs */
  json_t *ls = json_object_get(sig, "launches");
  CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(ls, 0), "nvtx")), "first");
  CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(ls, 3), "nvtx")), "graphs");
  CHECK(json_object_get(json_array_get(ls, 0), "graph") == NULL);
  CHECK_EQ_INT((int)json_integer_value(json_object_get(json_array_get(ls, 2), "graph")), 5);
  CHECK_EQ_INT((int)json_integer_value(json_object_get(json_array_get(ls, 5), "graph_node")),
               101);
  /* two graph launches of graph 5 (correlation IDs 20 and 21), two kernels each */
  json_t *gs = json_object_get(sig, "graphs");
  CHECK_EQ_INT((int)json_array_size(gs), 2);
  static const int corr[] = {20, 21};
  static const char *const gl[] = {"[2,3]", "[4,5]"};
  for (int i = 0; i < 2; i++) {
    json_t *g = json_array_get(gs, (size_t)i);
    CHECK_EQ_INT((int)json_integer_value(json_object_get(g, "corr")), corr[i]);
    CHECK_EQ_INT((int)json_integer_value(json_object_get(g, "kernels")), 2);
    CHECK(fabs(json_number_value(json_object_get(g, "duration_ns")) - 2000.0) < 1e-9);
    ints(json_object_get(g, "launches"), buf, sizeof buf);
    CHECK_EQ_STR(buf, gl[i]);
  }
  ag_str t = {0};
  CHECK_EQ_INT(ag_sys_text(sig, &t), 0);
  printf("%s", ag_str_cstr(&t));
  CHECK_CONTAINS(ag_str_cstr(&t), "graph launches: 2");
  CHECK_CONTAINS(ag_str_cstr(&t), "nvtx ranges: 7 (CUPTI markers; NVTX_INJECTION64_PATH "
                                  "/x/libcupti.so, set by argus)");
  CHECK_CONTAINS(ag_str_cstr(&t), "  2-3\n");
  CHECK_CONTAINS(ag_str_cstr(&t), "  0-5\n");
  CHECK_CONTAINS(ag_str_cstr(&t), "* mark");
  CHECK_CONTAINS(ag_str_cstr(&t), "open");
  CHECK_CONTAINS(ag_str_cstr(&t), "1 end marker(s) without their start");
  ag_str_release(&t);
  json_decref(sig);
  /* launch=2:4 keeps the first graph launch only */
  ag_scope sc = scope_of("launch=2:4");
  json_t *out = NULL;
  CHECK_EQ_INT(ag_sys_synth(e, &sc, 1u << AG_SCOPE_LAUNCH, &out), 0);
  sig = json_object_get(out, "system");
  CHECK_EQ_INT((int)json_array_size(json_object_get(sig, "graphs")), 1);
  ints(json_object_get(hw_nvtx_range(sig, "outer"), "launches"), buf, sizeof buf);
  CHECK_EQ_STR(buf, "[2,3]");
  CHECK(value_of(out, "(graph 5 corr 20)", "kernels") != NULL);
  CHECK(value_of(out, "(graph 5 corr 21)", "kernels") == NULL);
  CHECK(value_of(out, "(nvtx 0 outer)", "duration_ns") != NULL);
  CHECK(value_of(out, "(launch 2 g1)", "graph") != NULL);
  json_decref(out);
  ag_sys_ev_free(e);
  /* malformed markers */
  bad_sys(NV_SYS NV_M(1, "begin", 9000, "\"x\"") "]}", "'marker' must be start, end or instant");
  bad_sys(NV_SYS "{\"kind\":\"nvtx\",\"id\":1,\"marker\":\"start\"}]}",
             "records[0] (nvtx): needs the marker 'id' and its timestamp 'ts'");
  bad_sys("{\"format\":\"argus-system\",\"version\":1,\"dropped_records\":0,"
             "\"calibration\":[{\"gt_first\":1000,\"gt_last\":5000,\"cupti_start\":900,"
             "\"cupti_end\":4950}],\"records\":[" NV_M(1, "instant", 9000, "\"x\"") "]}",
             "NVTX marker records without the 'nvtx' member");
  ag_diags_release(&d);
}

/* The recorded system timeline of one traced run with an NVTX range
 * around its two kernels, both made one graph launch:
 * the joined Chrome trace. */
TEST(chrome_nvtx) {
  char *raw = NULL, *p = NULL;
  size_t n = 0;
  ag_diags d;
  ag_diags_init(&d);
  ag_evidence *ev = NULL;
  ag_trace *tr = NULL;
  ag_sys_ev *s = NULL;
  json_t *root = NULL, *j = NULL;
  CHECK_EQ_INT(file("hw.trace.system.json", &raw, &n), 0);
  CHECK_EQ_INT(load_trace(&d, &p, &ev), 0);
  if (!raw || !ev || ag_trace_decode(ev, &tr))
    goto out;
  root = json_loadb(raw, n, 0, NULL);
  CHECK(root != NULL);
  if (!root)
    goto out;
  json_t *recs = json_object_get(root, "records"), *o;
  size_t i;
  json_int_t lo = INT64_MAX, hi = 0;
  int nk = 0;
  json_array_foreach(recs, i, o) {
    const char *k = json_string_value(json_object_get(o, "kind"));
    const char *nm = json_string_value(json_object_get(o, "name"));
    if (strcmp(k, "kernel") || !strcmp(nm, "argus_calibrate"))
      continue;
    json_int_t a = json_integer_value(json_object_get(o, "start"));
    json_int_t b = json_integer_value(json_object_get(o, "end"));
    lo = a < lo ? a : lo, hi = b > hi ? b : hi;
    if (++nk) { /* both kernels: one graph launch */
      json_object_set_new(o, "graph", json_integer(9));
      json_object_set_new(o, "corr", json_integer(777));
    }
  }
  CHECK_EQ_INT(nk, 2);
  json_object_set_new(root, "nvtx", json_pack("{s:s,s:b}", "injection", "libcupti.so",
                                              "set_by_argus", 1));
  json_array_append_new(recs, json_pack("{s:s,s:i,s:s,s:I,s:i,s:s}", "kind", "nvtx", "id", 1,
                                        "marker", "start", "ts", lo - 500, "tid", 3, "name",
                                        "all_launches"));
  json_array_append_new(recs, json_pack("{s:s,s:i,s:s,s:I,s:i}", "kind", "nvtx", "id", 1,
                                        "marker", "end", "ts", hi + 500, "tid", 3));
  char *js = json_dumps(root, JSON_COMPACT);
  CHECK_EQ_INT(ag_sys_ev_load_mem(js, strlen(js), "nv.trace.system.json", &d, &s), 0);
  free(js);
  if (!s) {
    hw_print_diags(&d);
    goto out;
  }
  ag_str ct = {0};
  CHECK_EQ_INT(ag_report_chrome_system(tr, s, NULL, 0, &ct, NULL), 0);
  j = json_loads(ag_str_cstr(&ct), 0, NULL);
  CHECK(j != NULL);
  CHECK_CONTAINS(ag_str_cstr(&ct), "\"name\":\"NVTX thread 3\"");
  CHECK_CONTAINS(ag_str_cstr(&ct), "\"name\":\"CUDA graphs\"");
  ag_str_release(&ct);
  double r0 = -1, r1 = -1, g0 = -1, g1 = -1;
  int kernels = 0, graphs = 0, inside = 0;
  json_t *evs = json_object_get(j, "traceEvents");
  json_array_foreach(evs, i, o) {
    const char *cat = json_string_value(json_object_get(o, "cat"));
    double ts = json_number_value(json_object_get(o, "ts"));
    double du = json_number_value(json_object_get(o, "dur"));
    if (cat && !strcmp(cat, "nvtx"))
      r0 = ts, r1 = ts + du;
    if (cat && !strcmp(cat, "graph"))
      g0 = ts, g1 = ts + du, graphs++;
  }
  CHECK(r0 >= 0 && r1 > r0);
  CHECK_EQ_INT(graphs, 1);
  json_array_foreach(evs, i, o) {
    const char *cat = json_string_value(json_object_get(o, "cat"));
    const char *nm = json_string_value(json_object_get(o, "name"));
    if (!cat || strcmp(cat, "system") || strcmp(nm, "stall_truth"))
      continue;
    double ts = json_number_value(json_object_get(o, "ts"));
    double te = ts + json_number_value(json_object_get(o, "dur"));
    kernels++;
    CHECK(r0 <= ts && te <= r1); /* the range encloses every kernel */
    if (json_object_get(json_object_get(o, "args"), "graph"))
      inside += g0 <= ts + 1e-9 && te <= g1 + 1e-9; /* and the graph launch its kernels */
  }
  CHECK_EQ_INT(kernels, 2);
  CHECK_EQ_INT(inside, 2);
out:
  json_decref(j);
  json_decref(root);
  ag_sys_ev_free(s);
  ag_trace_free(tr);
  ag_evidence_free(ev);
  ag_diags_release(&d);
  ag_free(p);
  ag_free(raw);
}

static void bad_sys(const char *json, const char *want) {
  ag_diags d;
  ag_diags_init(&d);
  ag_sys_ev *e = NULL;
  CHECK(ag_sys_ev_load_mem(json, strlen(json), "bad.json", &d, &e) != 0);
  CHECK(e == NULL);
  ag_str msg = {0};
  ag_diags_format(&d, &msg);
  if (!strstr(ag_str_cstr(&msg), want))
    fprintf(stderr, "want '%s' in: %s\n", want, ag_str_cstr(&msg));
  CHECK_CONTAINS(ag_str_cstr(&msg), want);
  CHECK_CONTAINS(ag_str_cstr(&msg), "bad.json");
  ag_str_release(&msg);
  ag_diags_release(&d);
}

#define SYS "{\"format\":\"argus-system\",\"version\":1,\"dropped_records\":0,"
#define CAL "\"calibration\":[{\"gt_first\":1000,\"gt_last\":5000,\"cupti_start\":900," \
            "\"cupti_end\":4950}]"

TEST(bad_evidence) {
  bad_sys("[1]", "not a JSON object");
  bad_sys("{\"format\":\"argus-sass-metrics\",\"version\":1}", "not system-timeline evidence");
  bad_sys("{\"format\":\"argus-system\",\"version\":2}", "version 2");
  bad_sys("{\"format\":\"argus-system\",\"version\":1,\"records\":[]}", "'dropped_records'");
  bad_sys(SYS "\"records\":[{\"kind\":\"fft\",\"corr\":1,\"stream\":7}]," CAL "}",
          "records[0]: kind 'fft'");
  bad_sys(SYS "\"records\":[{\"kind\":\"memcpy\",\"corr\":1,\"stream\":7,\"start\":9,"
              "\"end\":3,\"bytes\":4}]," CAL "}",
          "records[0] (memcpy): needs 'start' <= 'end'");
  bad_sys(SYS "\"records\":[{\"kind\":\"kernel\",\"corr\":1,\"stream\":7,\"start\":3,"
              "\"end\":9}]," CAL "}",
          "needs 'name', 'grid', 'block' and 'registers'");
  bad_sys(SYS "\"records\":[]}", "'calibration' is missing");
  bad_sys(SYS "\"records\":[],\"calibration\":[{\"gt_first\":1,\"gt_last\":2,"
              "\"cupti_start\":0,\"cupti_end\":0}]}",
          "no calibration kernel was seen by the activity trace");
  /* a minimal good one: the offset is the mean of -100 and -50 */
  const char *ok = SYS "\"records\":[{\"kind\":\"memset\",\"corr\":3,\"stream\":7,\"start\":"
                       "2000,\"end\":2100,\"bytes\":64}]," CAL "}";
  ag_diags d;
  ag_diags_init(&d);
  ag_sys_ev *e = NULL;
  CHECK_EQ_INT(ag_sys_ev_load_mem(ok, strlen(ok), "ok.json", &d, &e), 0);
  if (e) {
    CHECK(fabs(e->offset_ns - -75.0) < 1e-9);
    CHECK(fabs(e->error_ns - (25.0 + 32.0)) < 1e-9);
    CHECK(fabs(ag_sys_ev_gt(e, 2000) - 2075.0) < 1e-9);
  }
  ag_sys_ev_free(e);
  /* PC-sampling evidence: the format is checked as SASS metrics' is */
  char path[] = "/tmp/argus-hwev-XXXXXX";
  int fd = mkstemp(path);
  const char *sm = "{\"format\":\"argus-sass-metrics\",\"version\":1}";
  CHECK(write(fd, sm, strlen(sm)) == (ssize_t)strlen(sm));
  close(fd);
  ag_sass_ev *se = NULL;
  CHECK(ag_sass_ev_load_as(path, "argus-stalls", &d, &se) != 0);
  ag_str msg = {0};
  ag_diags_format(&d, &msg);
  CHECK_CONTAINS(ag_str_cstr(&msg), "not PC-sampling evidence (format is not \"argus-stalls\")");
  ag_str_release(&msg);
  unlink(path);
  ag_diags_release(&d);
}

TEST(no_cupti) {
  setenv("ARGUS_LIBCUPTI", "/nonexistent/libcupti.so", 1);
  char err[1024] = "";
  ag_act *a = NULL;
  ag_pcs *p = NULL;
  CHECK_EQ_INT(ag_act_open(&a, NULL, err, sizeof err), AG_HOST_ENODEV);
  CHECK(a == NULL);
  CHECK_CONTAINS(err, "no CUPTI: cannot load /nonexistent/libcupti.so");
  CHECK_CONTAINS(err, "the activity trace needs libcupti.so");
  CHECK_EQ_INT(ag_pcs_open(NULL, &p, err, sizeof err), AG_HOST_ENODEV);
  CHECK(p == NULL);
  CHECK_CONTAINS(err, "PC sampling needs libcupti.so");
  unsetenv("ARGUS_LIBCUPTI");
}

TEST(held) {
  setenv("ARGUS_LIBCUPTI", FAKE_CUPTI, 1);
  unsetenv("FAKE_CUPTI_SUBSCRIBE"); /* 39: another tool holds it */
  char err[1024] = "";
  ag_act *a = NULL;
  ag_pcs *p = NULL;
  CHECK_EQ_INT(ag_act_open(&a, NULL, err, sizeof err), AG_HOST_EBUSY);
  CHECK_CONTAINS(err, "CUPTI already has a subscriber in this process");
  CHECK_CONTAINS(err, "the activity trace needs the process's one CUPTI subscriber");
  CHECK_EQ_INT(ag_pcs_open(NULL, &p, err, sizeof err), AG_HOST_EBUSY);
  CHECK_CONTAINS(err, "PC sampling needs the process's one CUPTI subscriber");
  CHECK(a == NULL && p == NULL);
  /* through the host runtime: a clear failed task */
  char why[1200];
  CHECK_EQ_INT(host_open("system", why, sizeof why), AG_HOST_EBUSY);
  CHECK_CONTAINS(why, "the activity trace needs the process's one CUPTI subscriber");
  CHECK_EQ_INT(host_open("stalls", why, sizeof why), AG_HOST_EBUSY);
  CHECK_CONTAINS(why, "PC sampling needs the process's one CUPTI subscriber");
  unsetenv("ARGUS_LIBCUPTI");
}

TEST(not_permitted) {
  setenv("ARGUS_LIBCUPTI", FAKE_CUPTI, 1);
  setenv("FAKE_CUPTI_SUBSCRIBE", "0", 1);
  char err[1024] = "";
  ag_pcs *p = NULL;
  ag_act *a = NULL;
  /* RmProfilingAdminOnly: PC sampling's enable is refused */
  CHECK_EQ_INT(ag_pcs_open(NULL, &p, err, sizeof err), AG_HOST_EUNSUPPORTED);
  CHECK(p == NULL);
  CHECK_CONTAINS(err, "cuptiPCSamplingEnable failed: profiling is not permitted");
  CHECK_CONTAINS(err, "RmProfilingAdminOnly=1");
  char why[1200];
  CHECK_EQ_INT(host_open("stalls", why, sizeof why), AG_HOST_EUNSUPPORTED);
  CHECK_CONTAINS(why, "profiling is not permitted");
  /* the activity trace, refused the same way */
  setenv("FAKE_CUPTI_ACTIVITY", "35", 1);
  CHECK_EQ_INT(ag_act_open(&a, NULL, err, sizeof err), AG_HOST_EUNSUPPORTED);
  CHECK(a == NULL);
  CHECK_CONTAINS(err, "cuptiActivityEnable(CONCURRENT_KERNEL) failed: profiling is not permitted");
  /* a kind CUPTI does not support on this device */
  setenv("FAKE_CUPTI_ACTIVITY", "27", 1);
  CHECK_EQ_INT(ag_act_open(&a, NULL, err, sizeof err), AG_HOST_EUNSUPPORTED);
  CHECK_CONTAINS(err, "CUPTI_ERROR_NOT_SUPPORTED");
  unsetenv("FAKE_CUPTI_ACTIVITY");
  /* kernels only (PM sampling's): no NVTX injection is set */
  unsetenv("NVTX_INJECTION64_PATH");
  CHECK_EQ_INT(ag_act_open(&a, "kernel", err, sizeof err), 0);
  CHECK(a != NULL && getenv("NVTX_INJECTION64_PATH") == NULL);
  ag_act_close(a);
  a = NULL;
  CHECK_EQ_INT(ag_act_open(&a, "kernel,fft", err, sizeof err), AG_HOST_EINVAL);
  CHECK_CONTAINS(err, "the activity kinds='kernel,fft': 'fft' is not an activity kind");
  /* one that opens (the stand-in's activity API succeeds), every kind: NVTX's
   * injection names the CUPTI library; and closes */
  CHECK_EQ_INT(ag_act_open(&a, NULL, err, sizeof err), 0);
  CHECK(a != NULL);
  CHECK(getenv("NVTX_INJECTION64_PATH") && strstr(getenv("NVTX_INJECTION64_PATH"), "cupti"));
  unsetenv("NVTX_INJECTION64_PATH");
  ag_act *b = NULL;
  CHECK_EQ_INT(ag_act_open(&b, NULL, err, sizeof err), AG_HOST_EBUSY); /* one per process */
  CHECK_CONTAINS(err, "already open");
  CHECK_EQ_INT((int)ag_act_records(a), 0);
  ag_act_close(a);
  unsetenv("FAKE_CUPTI_SUBSCRIBE");
  unsetenv("ARGUS_LIBCUPTI");
}

TEST(bad_config) {
  setenv("ARGUS_LIBCUPTI", FAKE_CUPTI, 1);
  setenv("FAKE_CUPTI_SUBSCRIBE", "0", 1);
  char err[1024] = "";
  ag_pcs *p = NULL;
  ag_act *a = NULL;
  const char *bad_periods[] = {"4", "32", "10x", "-1"};
  for (size_t i = 0; i < 4; i++) {
    setenv("ARGUS_STALLS_PERIOD", bad_periods[i], 1);
    CHECK_EQ_INT(ag_pcs_open(NULL, &p, err, sizeof err), AG_HOST_EINVAL);
    CHECK_CONTAINS(err, "is not a whole number in [5, 31]");
  }
  unsetenv("ARGUS_STALLS_PERIOD");
  setenv("ARGUS_ACTIVITY_KINDS", "kernel,fft", 1);
  CHECK_EQ_INT(ag_act_open(&a, NULL, err, sizeof err), AG_HOST_EINVAL);
  CHECK_CONTAINS(err, "'fft' is not an activity kind");
  CHECK_CONTAINS(err, "(known: kernel, memcpy, memset, sync, stream, nvtx, api)");
  unsetenv("ARGUS_ACTIVITY_KINDS");
  /* the api kind (the comm signal's launch calls): CUPTI's RUNTIME (5) and
   * DRIVER (4) kinds, off by default: a device refusing RUNTIME fails the
   * open only when api is named */
  setenv("FAKE_CUPTI_ACTIVITY", "27", 1);
  setenv("FAKE_CUPTI_ACTIVITY_KIND", "5", 1);
  unsetenv("NVTX_INJECTION64_PATH");
  CHECK_EQ_INT(ag_act_open(&a, NULL, err, sizeof err), 0);
  if (a) {
    ag_jb j = {0};
    ag_act_json(a, &j);
    CHECK_CONTAINS(j.p, "\"kinds\":[\"kernel\",\"memcpy\",\"memset\",\"sync\",\"stream\","
                        "\"nvtx\"]");
    CHECK_CONTAINS(j.p, "\"api\":0}");
    ag_jb_release(&j);
    ag_act_close(a);
    a = NULL;
  }
  CHECK_EQ_INT(ag_act_open(&a, "kernel,api", err, sizeof err), AG_HOST_EUNSUPPORTED);
  CHECK_CONTAINS(err, "cuptiActivityEnable(RUNTIME) failed");
  setenv("FAKE_CUPTI_ACTIVITY_KIND", "4", 1);
  CHECK_EQ_INT(ag_act_open(&a, "kernel,api", err, sizeof err), AG_HOST_EUNSUPPORTED);
  CHECK_CONTAINS(err, "cuptiActivityEnable(DRIVER) failed");
  unsetenv("FAKE_CUPTI_ACTIVITY_KIND");
  unsetenv("FAKE_CUPTI_ACTIVITY");
  CHECK_EQ_INT(ag_act_open(&a, "kernel,api", err, sizeof err), 0);
  if (a) {
    ag_jb j = {0};
    ag_act_json(a, &j);
    CHECK_CONTAINS(j.p, "\"kinds\":[\"kernel\",\"api\"]");
    ag_jb_release(&j);
    ag_act_close(a);
    a = NULL;
  }
  unsetenv("FAKE_CUPTI_SUBSCRIBE");
  unsetenv("ARGUS_LIBCUPTI");
}

RUN_TESTS(T(system_recorded), T(system_launch_scope), T(chrome_same_run), T(nvtx_graphs),
          T(chrome_nvtx), T(stalls_recorded),
          T(bad_evidence), T(no_cupti), T(held), T(not_permitted), T(bad_config))
