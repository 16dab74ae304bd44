/*
 * test_gpu_hw.c — the activity and PC-sampling collectors on the H200
 * (docs/system.md, docs/stalls.md), on tests/data/cuda/hw_truth.cu:
 *
 *   system        the harness under ARGUS_COLLECT=system, 4 launches over 2
 *                 streams: system.json has the 4 kernels with their grid,
 *                 block and registers on 2 streams, the memcpys and the
 *                 memset, the synchronizations, no dropped record, and the
 *                 two calibration kernels that align CUPTI's clock with
 *                 %globaltimer (offset and error printed)
 *   nvtx_graph    the harness with NVTX ranges and a CUDA graph (--nvtx
 *                 --graph 3) under ARGUS_COLLECT=system: the NVTX markers
 *                 reach CUPTI (NVTX_INJECTION64_PATH set by the host
 *                 runtime), "hw/launches" encloses the 4 stream launches,
 *                 "hw/graph" (nested in "hw/all") the 6 graph kernels, the
 *                 instant marker is seen; the graph kernels carry one graph
 *                 ID and two node IDs, and group into 3 graph launches of 2
 *                 (the graph launch's correlation ID)
 *   system_trace  the traced variant under ARGUS_COLLECT=trace with
 *                 ARGUS_ACTIVITY=1: trace.agev and system.json of one run
 *   stalls        the mapping run, then the -lineinfo cubin of the same PTX
 *                 under ARGUS_COLLECT=stalls: PC-level records come back,
 *                 and through the map region `wait` has a barrier stall on
 *                 top, region `issue` another one; then the period sweep
 *   held          another tool holds CUPTI's subscriber: both collections
 *                 fail with the reason, no evidence
 * The evidence goes to $ARGUS_EVIDENCE_OUT (tests/data/evidence/hw.*).
 * Exit 77 without a GPU, nvcc or ptxas.
 */
#include <stdlib.h>
#include <unistd.h>

#include "argus/collect.h"
#include "argus/stalls.h"
#include "argus/system_ev.h"
#include "argus/variant.h"
#include "check.h"
#include "../trace/gpu_util.h"
#include "../sass/sass_util.h"
#include "hw_util.h"

#ifndef HW_PTX
#define HW_PTX "hw_truth.ptx"
#endif
#ifndef HW_CUBIN
#define HW_CUBIN "hw_truth.cubin"
#endif

static void print_diags(ag_diags *d) {
  ag_str msg = {0};
  ag_diags_format(d, &msg);
  fprintf(stderr, "%s", msg.p ? msg.p : "");
  ag_str_release(&msg);
}

static json_int_t geti(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return json_is_integer(v) ? json_integer_value(v) : -1;
}

/* The harness with `args` under ARGUS_COLLECT=system into dir, its output
 * printed, system.json kept as $ARGUS_EVIDENCE_OUT/save_as: 0, 77 (no
 * GPU) or 1. */
static int run_system(const char *dir, const char *const *args, const char *save_as) {
  ag_str out = {0};
  ag_proc_result pr;
  CHECK_EQ_INT(hw_run(dir, "system", HW_CUBIN, HW_CUBIN, args, NULL, &out, &pr), 0);
  printf("%s", out.p ? out.p : "");
  ag_str_release(&out);
  if (pr.exited && pr.exit_code == 77)
    return 77;
  CHECK(pr.exited && pr.exit_code == 0);
  char p[1200];
  snprintf(p, sizeof p, "%s/system.json", dir);
  evidence_out(p, save_as);
  return pr.exited && pr.exit_code == 0 ? 0 : 1;
}

TEST(system_run) {
  gpu_or_skip("test_gpu_hw");
  char dir[] = "/tmp/argus-ghw-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  const char *args[] = {"--blocks", "8", "--spin", "5", "--n", "256", "--launches", "4",
                        "--streams", "2", NULL};
  if (run_system(dir, args, "hw.system.json") == 77)
    SKIP("no GPU");
  json_t *j = hw_load(dir, "system.json");
  CHECK(j != NULL);
  if (!j)
    return;
  CHECK_EQ_INT((int)geti(j, "dropped_records"), 0);
  json_t *recs = json_object_get(j, "records"), *r;
  size_t i;
  int kern = 0, cal = 0, cpy = 0, set = 0, syn = 0;
  json_int_t s0 = -1, s1 = -1;
  json_array_foreach(recs, i, r) {
    const char *k = json_string_value(json_object_get(r, "kind"));
    const char *nm = json_string_value(json_object_get(r, "name"));
    if (!k)
      continue;
    if (!strcmp(k, "kernel") && nm && !strcmp(nm, "stall_truth")) {
      kern++;
      CHECK_EQ_INT((int)json_integer_value(json_array_get(json_object_get(r, "grid"), 0)), 8);
      CHECK_EQ_INT((int)json_integer_value(json_array_get(json_object_get(r, "block"), 0)), 256);
      CHECK(geti(r, "registers") > 0);
      CHECK(geti(r, "corr") > 0);
      CHECK(geti(r, "end") > geti(r, "start"));
      json_int_t st = geti(r, "stream");
      if (s0 < 0)
        s0 = st;
      else if (st != s0)
        s1 = st;
    }
    cal += !strcmp(k, "kernel") && nm && !strcmp(nm, "argus_calibrate");
    cpy += !strcmp(k, "memcpy");
    set += !strcmp(k, "memset");
    syn += !strcmp(k, "sync");
  }
  printf("@ system: %d stall_truth kernels on streams %lld and %lld, %d calibration kernels, "
         "%d memcpy, %d memset, %d sync records\n",
         kern, (long long)s0, (long long)s1, cal, cpy, set, syn);
  CHECK_EQ_INT(kern, 4);
  CHECK(s1 >= 0 && s1 != s0);
  CHECK_EQ_INT(cal, 2);
  CHECK(cpy >= 2);
  CHECK(set >= 1);
  CHECK(syn >= 1);
  json_t *c;
  json_array_foreach(json_object_get(j, "calibration"), i, c) {
    double a = (double)geti(c, "cupti_start") - (double)geti(c, "gt_first");
    double b = (double)geti(c, "cupti_end") - (double)geti(c, "gt_last");
    printf("@ system: calibration %s: cupti - globaltimer = %.0f ns at the start, %.0f ns at "
           "the end (spread %.0f ns)\n",
           json_string_value(json_object_get(c, "when")), a, b, b - a);
    CHECK(geti(c, "cupti_start") > 0);
  }
  json_decref(j);
}

/* the launches of range or graph entry o as "0-3" style text */
static void nv_launches(json_t *o, char *buf, size_t n) {
  json_t *ls = json_object_get(o, "launches");
  size_t k = json_array_size(ls);
  snprintf(buf, n, "%zu:%lld-%lld", k, k ? (long long)json_integer_value(json_array_get(ls, 0)) : -1LL,
           k ? (long long)json_integer_value(json_array_get(ls, k - 1)) : -1LL);
}

TEST(nvtx_graph) {
  gpu_or_skip("test_gpu_hw");
  char dir[] = "/tmp/argus-ghwn-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  const char *args[] = {"--blocks", "8", "--spin", "5", "--n", "256", "--launches", "4",
                        "--streams", "2", "--nvtx", "--graph", "3", NULL};
  if (run_system(dir, args, "hw.nvtx.system.json") == 77)
    SKIP("no GPU");
  char p[1200];
  snprintf(p, sizeof p, "%s/system.json", dir);
  ag_diags d;
  ag_diags_init(&d);
  ag_sys_ev *e = NULL;
  CHECK_EQ_INT(ag_sys_ev_load(p, &d, &e), 0);
  if (!e) {
    print_diags(&d);
    ag_diags_release(&d);
    return;
  }
  json_t *sig = ag_sys_signal(e);
  ag_str t = {0};
  CHECK(sig && ag_sys_text(sig, &t) == 0);
  printf("%s", ag_str_cstr(&t));
  ag_str_release(&t);
  CHECK(e->nvtx_on);
  printf("@ nvtx: injection %s (set by argus: %d), %zu ranges, %zu unmatched ends\n",
         e->nvtx_injection, e->nvtx_by_argus, e->nranges, e->nvtx_unmatched);
  CHECK(e->nvtx_by_argus);
  CHECK_EQ_INT((int)e->nvtx_unmatched, 0);
  CHECK_EQ_INT(e->dropped == 0, 1);
  json_t *all = hw_nvtx_range(sig, "hw/all"), *ln = hw_nvtx_range(sig, "hw/launches");
  json_t *gr = hw_nvtx_range(sig, "hw/graph"), *mk = hw_nvtx_range(sig, "hw/between");
  CHECK(all && ln && gr && mk);
  char buf[64];
  if (all && ln && gr && mk) {
    CHECK_EQ_INT((int)geti(all, "depth"), 0);
    CHECK_EQ_INT((int)geti(ln, "depth"), 1);
    CHECK_EQ_INT((int)geti(gr, "depth"), 1);
    CHECK(json_is_true(json_object_get(mk, "instant")));
    nv_launches(all, buf, sizeof buf);
    CHECK_EQ_STR(buf, "10:0-9"); /* the ranges enclose their kernels */
    nv_launches(ln, buf, sizeof buf);
    CHECK_EQ_STR(buf, "4:0-3");
    nv_launches(gr, buf, sizeof buf);
    CHECK_EQ_STR(buf, "6:4-9");
  }
  /* graph kernels: one graph ID, two node IDs, three graph launches of two */
  json_t *ls = json_object_get(sig, "launches"), *o;
  size_t i;
  json_int_t gid = 0, node0 = -1, node1 = -1;
  int ingraph = 0;
  json_array_foreach(ls, i, o) {
    json_int_t g = geti(o, "graph");
    if (i < 4) {
      CHECK(g == -1); /* no graph ID: not a graph kernel */
      continue;
    }
    ingraph++;
    CHECK(g > 0);
    gid = gid ? gid : g;
    CHECK(g == gid);
    json_int_t nd = geti(o, "graph_node");
    if (node0 < 0)
      node0 = nd;
    else if (nd != node0)
      node1 = nd;
    CHECK_EQ_STR(json_string_value(json_object_get(o, "nvtx")), "hw/graph");
  }
  CHECK_EQ_INT(ingraph, 6);
  CHECK(node1 >= 0 && node1 != node0);
  json_t *gs = json_object_get(sig, "graphs");
  CHECK_EQ_INT((int)json_array_size(gs), 3);
  json_array_foreach(gs, i, o) {
    CHECK_EQ_INT((int)geti(o, "kernels"), 2);
    CHECK(geti(o, "graph") == gid);
  }
  json_decref(sig);
  ag_sys_ev_free(e);
  ag_diags_release(&d);
}

TEST(system_trace) {
  gpu_or_skip("test_gpu_hw");
  char dir[] = "/tmp/argus-ghwt-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  CHECK_EQ_INT(build_variant(HW_PTX, dir, "hw.traced", AG_VARIANT_TRACED, NULL, 0), 0);
  char v[1200], p[1200];
  snprintf(v, sizeof v, "%s/hw.traced.cubin", dir);
  ag_str out = {0};
  ag_proc_result pr;
  const char *args[] = {"--blocks", "4", "--spin", "2", "--n", "64", "--launches", "2",
                        "--streams", "2", NULL};
  const char *more[] = {"ARGUS_ACTIVITY=1", NULL};
  CHECK_EQ_INT(hw_run(dir, "trace", v, HW_CUBIN, args, more, &out, &pr), 0);
  printf("%s", out.p ? out.p : "");
  CHECK(pr.exited && pr.exit_code == 0);
  snprintf(p, sizeof p, "%s/trace.agev", dir);
  CHECK(access(p, R_OK) == 0);
  evidence_out(p, "hw.trace.agev");
  snprintf(p, sizeof p, "%s/system.json", dir);
  CHECK(access(p, R_OK) == 0);
  evidence_out(p, "hw.trace.system.json");
  json_t *j = hw_load(dir, "system.json");
  CHECK(j && geti(json_object_get(j, "counts"), "kernel") >= 4);
  json_decref(j);
  ag_str_release(&out);
}

/* One stalls run of the lineinfo cubin at period 2^k (0: the default). */
static int stalls_run(const char *dir, const char *cubin, int k, ag_str *out, ag_proc_result *pr) {
  char per[64];
  snprintf(per, sizeof per, "ARGUS_STALLS_PERIOD=%d", k);
  const char *more[] = {per, NULL};
  const char *args[] = {"--spin", "40", "--n", "8192", NULL};
  return hw_run(dir, "stalls", cubin, cubin, args, k ? more : NULL, out, pr);
}

TEST(stalls) {
  gpu_or_skip("test_gpu_hw");
  su_need_tools();
  char dir[] = "/tmp/argus-ghws-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char *ptx = NULL, *bin = NULL, vpath[1200], cpath[1200], p[1200];
  size_t len = 0, blen = 0, nslots = 0;
  ag_diags d;
  ag_diags_init(&d);
  ag_variant_opts o = {AG_VARIANT_MAPPING, NULL, 0, 0};
  ag_variant *v = NULL;
  ag_attr_layout *L = NULL;
  ag_sass_cubin *cub = NULL;
  ag_attr_map *map = NULL;
  ag_sass_ev *e = NULL;
  uint64_t *slots = NULL;
  json_t *cj = NULL, *sj = NULL;
  ag_str out = {0};
  ag_proc_result pr;
  CHECK_EQ_INT(ag_file_read(HW_PTX, &ptx, &len), 0);
  if (!ptx)
    goto done;
  evidence_out(HW_PTX, "hw.ptx");
  CHECK_EQ_INT(ag_variant_make(ptx, len, HW_PTX, &o, &d, &v), 0);
  if (!v || ag_attr_layout_from_json(v->probes, &d, &L)) {
    print_diags(&d);
    CHECK(0);
    goto done;
  }
  snprintf(vpath, sizeof vpath, "%s/hw.map.ptx", dir);
  CHECK_EQ_INT(ag_file_write_atomic(vpath, v->ptx, v->len), 0);
  const char *margs[] = {"--spin", "40", "--n", "8192", NULL};
  CHECK_EQ_INT(hw_run(dir, "time", vpath, HW_CUBIN, margs, NULL, &out, &pr), 0);
  printf("%s", out.p ? out.p : "");
  CHECK(pr.exited && pr.exit_code == 0);
  snprintf(p, sizeof p, "%s/map_counts.json", dir);
  evidence_out(p, "hw.map_counts.json");
  cj = hw_load(dir, "map_counts.json");
  CHECK(cj && ag_attr_counts_from_json(cj, &d, &slots, &nslots) == 0);
  ag_str err = AG_STR_INIT;
  CHECK_EQ_INT(su_ptxas("sm_90a", 1, ptx, len, &bin, &blen, &err), 0);
  ag_str_release(&err);
  if (!bin || !slots)
    goto done;
  snprintf(cpath, sizeof cpath, "%s/hw.lineinfo.cubin", dir);
  CHECK_EQ_INT(ag_file_write_atomic(cpath, bin, blen), 0);
  evidence_out(cpath, "hw.stalls.cubin");
  CHECK_EQ_INT(ag_sass_cubin_parse(bin, blen, cpath, &d, &cub), 0);
  ag_str_release(&out);
  CHECK_EQ_INT(stalls_run(dir, cpath, 0, &out, &pr), 0);
  printf("%s", out.p ? out.p : "");
  CHECK(pr.exited && pr.exit_code == 0);
  if (!(pr.exited && pr.exit_code == 0)) {
    snprintf(p, sizeof p, "%s/host-error.txt", dir);
    char *t = NULL;
    size_t tl = 0;
    if (!ag_file_read(p, &t, &tl))
      fprintf(stderr, "host-error.txt: %s\n", t);
    ag_free(t);
    goto done;
  }
  snprintf(p, sizeof p, "%s/stalls.json", dir);
  evidence_out(p, "hw.stalls.json");
  if (ag_sass_ev_load_as(p, "argus-stalls", &d, &e))
    print_diags(&d);
  CHECK(e != NULL);
  if (!e || !cub)
    goto done;
  printf("@ stalls: %zu PC rows, %d reasons, total_samples %lld, dropped %lld, hw_full %lld\n",
         e->nrows, e->nmetrics, (long long)geti(e->root, "total_samples"),
         (long long)geti(e->root, "dropped_samples"), (long long)geti(e->root, "hw_buffer_full"));
  for (int c = 0; c < e->nmetrics; c++)
    printf("@ stalls: reason %s: %llu samples\n", e->metrics[c],
           (unsigned long long)ag_sass_ev_total(e, c));
  CHECK(e->nrows > 0);
  CHECK_EQ_INT(ag_attr_map_build(L, slots, nslots, cub, "stall_truth", &d, &map), 0);
  if (!map) {
    print_diags(&d);
    goto done;
  }
  CHECK_EQ_INT(ag_stalls_json(map, e, cub, "stall_truth", L->version, &d, &sj), 0);
  if (!sj) {
    print_diags(&d);
    goto done;
  }
  char *txt = json_dumps(sj, JSON_INDENT(1));
  printf("%s\n", txt ? txt : "");
  free(txt);
  const char *tw = NULL, *ti = NULL;
  size_t i;
  json_t *r;
  json_array_foreach(json_object_get(sj, "regions"), i, r) {
    const char *nm = json_string_value(json_object_get(r, "region"));
    const char *top = json_string_value(json_object_get(r, "top_reason"));
    if (nm && strstr(nm, "wait"))
      tw = top;
    if (nm && strstr(nm, "issue"))
      ti = top;
  }
  printf("@ stalls: top reason of wait: %s, of issue: %s\n", tw ? tw : "-", ti ? ti : "-");
  CHECK(tw && strstr(tw, "barrier"));
  CHECK(ti && !strstr(ti, "barrier"));
  CHECK(tw && ti && strcmp(tw, ti));
  /* the period sweep: samples, drops, a full buffer */
  int ks[] = {5, 7, 12, 15};
  for (size_t q = 0; q < sizeof ks / sizeof *ks; q++) {
    ag_str_release(&out);
    if (stalls_run(dir, cpath, ks[q], &out, &pr) || !pr.exited || pr.exit_code) {
      printf("@ stalls: period 2^%d: the run failed\n", ks[q]);
      continue;
    }
    json_t *x = hw_load(dir, "stalls.json");
    printf("@ stalls: period 2^%d: total_samples %lld, dropped %lld, hw_full %lld, pc_records "
           "%lld, sampled_ns %.0f\n",
           ks[q], (long long)geti(x, "total_samples"), (long long)geti(x, "dropped_samples"),
           (long long)geti(x, "hw_buffer_full"), (long long)geti(x, "pc_records"),
           json_real_value(json_object_get(json_array_get(json_object_get(x, "launches"), 0),
                                           "sampled_ns")));
    json_decref(x);
  }
done:
  json_decref(sj);
  json_decref(cj);
  ag_str_release(&out);
  ag_attr_map_free(map);
  ag_sass_ev_free(e);
  ag_sass_cubin_free(cub);
  ag_free(slots);
  ag_attr_layout_free(L);
  ag_variant_free(v);
  ag_diags_release(&d);
  ag_free(bin);
  ag_free(ptx);
}

TEST(held) {
  gpu_or_skip("test_gpu_hw");
  const char *modes[] = {"system", "stalls"};
  for (int m = 0; m < 2; m++) {
    char dir[] = "/tmp/argus-ghwh-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    ag_str out = {0};
    ag_proc_result pr;
    const char *args[] = {"--blocks", "2", "--spin", "1", "--n", "16", "--hold-cupti", NULL};
    CHECK_EQ_INT(hw_run(dir, modes[m], HW_CUBIN, HW_CUBIN, args, NULL, &out, &pr), 0);
    printf("%s", out.p ? out.p : "");
    CHECK(pr.exited && pr.exit_code != 0);
    char p[1200], *t = NULL;
    size_t tl = 0;
    snprintf(p, sizeof p, "%s/host-error.txt", dir);
    CHECK_EQ_INT(ag_file_read(p, &t, &tl), 0);
    printf("@ held (%s): %s", modes[m], t ? t : "(none)\n");
    CHECK_CONTAINS(t ? t : "", "already has a subscriber");
    snprintf(p, sizeof p, "%s/%s.json", dir, m ? "stalls" : "system");
    CHECK(access(p, F_OK) != 0);
    ag_free(t);
    ag_str_release(&out);
  }
}

RUN_TESTS(T(system_run), T(nvtx_graph), T(system_trace), T(stalls), T(held))
