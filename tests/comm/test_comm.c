/*
 * test_comm.c — the comm signal (docs/comm.md) on system-timeline evidence
 * the test writes: two GPUs' all-gather kernels with their launch calls and
 * the harness's declaration, a generic NCCL kernel NCCL's range names, the
 * compute kernels they overlap; every derived number checked exactly (the
 * inputs are chosen so the figures are exact in binary floating point);
 * bad declarations and records; the plan (the comm run sees every GPU and
 * reads the launch calls).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "argus/backend.h"
#include "argus/comm.h"
#include "check.h"

#define HEAD                                                                   \
  "{\"format\":\"argus-system\",\"version\":1,\"dropped_records\":0,"          \
  "\"calibration\":[{\"gt_first\":1000,\"gt_last\":2000,\"cupti_start\":1500," \
  "\"cupti_end\":2500}],\"nvtx\":{\"injection\":\"/x/libcupti.so\","           \
  "\"set_by_argus\":true},\"records\":["
#define CAL                                                                    \
  "{\"kind\":\"kernel\",\"corr\":1,\"stream\":7,\"start\":1500,\"end\":2500,"  \
  "\"name\":\"argus_calibrate\",\"device\":0,\"grid\":[1,1,1],\"block\":[1,1,1]," \
  "\"registers\":8}"
#define K(corr, dev, s, e, name, g)                                            \
  ",{\"kind\":\"kernel\",\"corr\":" #corr ",\"stream\":" #dev ",\"device\":" #dev \
  ",\"start\":" #s ",\"end\":" #e ",\"name\":\"" name "\",\"grid\":[" #g       \
  ",1,1],\"block\":[512,1,1],\"registers\":32}"
#define API(corr, s, which)                                                    \
  ",{\"kind\":\"api\",\"corr\":" #corr ",\"start\":" #s ",\"end\":" #s        \
  ",\"api\":\"" which "\",\"cbid\":1,\"pid\":1,\"tid\":42}"
#define RANGE(id, s, e, name)                                                  \
  ",{\"kind\":\"nvtx\",\"id\":" #id ",\"marker\":\"start\",\"ts\":" #s         \
  ",\"tid\":42,\"name\":\"" name "\",\"domain\":null}"                         \
  ",{\"kind\":\"nvtx\",\"id\":" #id ",\"marker\":\"end\",\"ts\":" #e ",\"tid\":42}"

#define AG "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
#define GEN "ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)"

/* two ranks' all-gather (1 MB declared, 4 CTAs), a generic kernel that NCCL's
 * range says is a reduce-scatter (4000 B), and the compute kernels */
static const char ev_full[] =
    HEAD CAL K(3, 0, 10000, 20000, "gemm", 132) K(4, 1, 10000, 16000, "gemm", 132)
    K(7, 0, 12000, 22000, AG, 4) K(8, 1, 15000, 25000, AG, 4)
    API(7, 11000, "runtime") API(7, 11100, "driver") API(8, 11600, "driver")
    RANGE(1, 10500, 11800, "argus.comm op=all_gather bytes=1000000 ranks=2")
    RANGE(2, 10900, 11700, "ncclAllGather")
    K(9, 0, 30000, 34000, GEN, 2) K(10, 0, 31000, 32000, "gemm", 66)
    K(11, 0, 31500, 33000, "gemm_tail", 66)
    RANGE(3, 28000, 36000, "argus.comm bytes=4000 ranks=2")
    RANGE(4, 29000, 35000, "ncclReduceScatter") "]}";

static ag_sys_ev *load(const char *text, ag_diags *d) {
  ag_sys_ev *e = NULL;
  int rc = ag_sys_ev_load_mem(text, strlen(text), "system.json", d, &e);
  CHECK_EQ_INT(rc, 0);
  return e;
}

static double num(const json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

static const json_t *group(const json_t *sig, const char *op) {
  size_t i;
  json_t *g;
  json_array_foreach(json_object_get(sig, "groups"), i, g) if (
      !strcmp(json_string_value(json_object_get(g, "op")), op)) return g;
  return NULL;
}

TEST(names) {
  CHECK_EQ_INT(ag_comm_op_of_kernel(AG), AG_COMM_ALL_GATHER);
  CHECK_EQ_INT(ag_comm_op_of_kernel("ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)"),
               AG_COMM_ALL_GATHER);
  CHECK_EQ_INT(ag_comm_op_of_kernel("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(x)"),
               AG_COMM_REDUCE_SCATTER);
  CHECK_EQ_INT(ag_comm_op_of_kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_SIMPLE(x)"),
               AG_COMM_ALL_REDUCE);
  CHECK_EQ_INT(ag_comm_op_of_kernel("ncclDevKernel_Reduce_Sum_f32_RING_LL(x)"), AG_COMM_REDUCE);
  CHECK_EQ_INT(ag_comm_op_of_kernel("ncclDevKernel_SendRecv(x)"), AG_COMM_SEND_RECV);
  CHECK_EQ_INT(ag_comm_op_of_kernel(GEN), AG_COMM_OTHER);
  CHECK_EQ_INT(ag_comm_op_of_kernel("gemm_AllGather"), AG_COMM_NONE);
  CHECK_EQ_INT(ag_comm_op_of_kernel("ncclAllGather"), AG_COMM_NONE);
  CHECK_EQ_INT(ag_comm_op_of_range("ncclReduceScatter"), AG_COMM_REDUCE_SCATTER);
  CHECK_EQ_INT(ag_comm_op_of_range("ncclRecv"), AG_COMM_SEND_RECV);
  CHECK_EQ_INT(ag_comm_op_of_range("ncclGroupEnd"), AG_COMM_NONE);
  /* nccl-tests' factors */
  CHECK(ag_comm_bus_factor(AG_COMM_ALL_REDUCE, 4) == 1.5);
  CHECK(ag_comm_bus_factor(AG_COMM_ALL_GATHER, 4) == 0.75);
  CHECK(ag_comm_bus_factor(AG_COMM_REDUCE_SCATTER, 2) == 0.5);
  CHECK(ag_comm_bus_factor(AG_COMM_BROADCAST, 8) == 1.0);
  CHECK(ag_comm_bus_factor(AG_COMM_ALL_GATHER, 1) == 0.0);
  CHECK(ag_comm_bus_factor(AG_COMM_ALL_GATHER, 0) == 0.0);
  CHECK(ag_comm_bus_factor(AG_COMM_OTHER, 2) == 0.0);
}

TEST(declarations) {
  ag_comm_decl d;
  char why[256] = "";
  CHECK_EQ_INT(ag_comm_decl_parse("argus.comm op=reduce_scatter ranks=4 bytes=4096", &d, why,
                                  sizeof why), 0);
  CHECK_EQ_INT(d.op, AG_COMM_REDUCE_SCATTER);
  CHECK_EQ_U64(d.bytes, 4096);
  CHECK_EQ_INT(d.ranks, 4);
  CHECK_EQ_INT(ag_comm_decl_parse("argus.comm  bytes=8 ranks=2 ", &d, why, sizeof why), 0);
  CHECK_EQ_INT(d.op, AG_COMM_NONE);
  CHECK_EQ_INT(ag_comm_decl_parse("argus.community", &d, why, sizeof why), 1);
  CHECK_EQ_INT(ag_comm_decl_parse("ncclAllGather", &d, why, sizeof why), 1);
  CHECK_EQ_INT(ag_comm_decl_parse(NULL, &d, why, sizeof why), 1);
  static const struct {
    const char *name, *why;
  } bad[] = {
      {"argus.comm op=all_gathr bytes=1 ranks=2", "op 'all_gathr' is none of all_gather"},
      {"argus.comm op=other bytes=1 ranks=2", "op 'other' is none"},
      {"argus.comm bytes=0 ranks=2", "bytes '0' is not a positive integer"},
      {"argus.comm bytes=1e6 ranks=2", "bytes '1e6' is not a positive integer"},
      {"argus.comm bytes=10 ranks=0", "ranks '0' is not an integer in 1..65536"},
      {"argus.comm bytes=10", "needs bytes=N and ranks=R"},
      {"argus.comm ranks=2", "needs bytes=N and ranks=R"},
      {"argus.comm size=10 ranks=2", "unknown key 'size'"},
      {"argus.comm bytes", "'bytes' is not key=value"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    why[0] = 0;
    CHECK_EQ_INT(ag_comm_decl_parse(bad[i].name, &d, why, sizeof why), AG_EPARSE);
    CHECK_CONTAINS(why, bad[i].why);
  }
}

TEST(signal) {
  ag_diags d;
  ag_diags_init(&d);
  ag_sys_ev *e = load(ev_full, &d);
  json_t *sig = NULL;
  if (!e)
    goto out;
  CHECK_EQ_INT(ag_comm_signal(e, &d, &sig), 0);
  if (!sig)
    goto out;
  CHECK_EQ_INT((int)num(sig, "compute_kernels"), 4);
  CHECK(json_is_true(json_object_get(sig, "api_kind")));
  json_t *ops = json_object_get(sig, "ops");
  CHECK_EQ_INT((int)json_array_size(ops), 3);
  /* rank 0's all-gather: launched by the runtime call at 11000 (the driver
   * call inside it shares its ID), 8000 of its 10000 ns beside gemm */
  json_t *a0 = json_array_get(ops, 0), *a1 = json_array_get(ops, 1), *rs = json_array_get(ops, 2);
  CHECK_EQ_STR(json_string_value(json_object_get(a0, "op")), "all_gather");
  CHECK(num(a0, "duration_ns") == 10000);
  CHECK(num(a0, "launch_overhead_ns") == 1000);
  CHECK_EQ_STR(json_string_value(json_object_get(a0, "api")), "runtime");
  CHECK(num(a0, "overlap") == 0.8);
  CHECK(num(a0, "algbw_GBps") == 100);
  CHECK(num(a0, "busbw_GBps") == 50);
  CHECK(num(a0, "start_ns") == 11500); /* CUPTI 12000 - offset 500 */
  CHECK_EQ_INT((int)num(a0, "sms"), 4);
  CHECK_EQ_INT((int)num(a0, "device"), 0);
  CHECK_EQ_STR(json_string_value(json_object_get(a0, "nvtx")), "ncclAllGather");
  CHECK_EQ_STR(json_string_value(json_array_get(json_object_get(a0, "overlapped_by"), 0)),
               "gemm");
  /* rank 1's: its driver call at 11600; gemm on its device ends at 16000 */
  CHECK_EQ_INT((int)num(a1, "device"), 1);
  CHECK(num(a1, "launch_overhead_ns") == 3400);
  CHECK(num(a1, "overlap") == 0.1);
  /* the generic kernel: NCCL's range names it; no launch call; two compute
   * kernels overlapping each other cover 31000..33000 of its 30000..34000 */
  CHECK_EQ_STR(json_string_value(json_object_get(rs, "op")), "reduce_scatter");
  CHECK(json_is_null(json_object_get(rs, "launch_overhead_ns")));
  CHECK(num(rs, "overlap") == 0.5);
  CHECK(num(rs, "algbw_GBps") == 1.0);
  CHECK(num(rs, "busbw_GBps") == 0.5);
  CHECK_EQ_INT((int)json_array_size(json_object_get(rs, "overlapped_by")), 2);
  /* the groups */
  const json_t *g = group(sig, "all_gather");
  CHECK(g != NULL);
  if (g) {
    CHECK_EQ_INT((int)num(g, "count"), 2);
    CHECK(num(json_object_get(g, "duration_ns"), "mean") == 10000);
    CHECK(num(json_object_get(g, "duration_ns"), "total") == 20000);
    CHECK(num(g, "launch_overhead_ns") == 2200);
    CHECK(num(g, "overlap") == 0.45);
    CHECK(num(g, "busbw_GBps") == 50);
    CHECK_EQ_INT((int)num(g, "bytes"), 1000000);
    CHECK_EQ_INT((int)num(g, "ranks"), 2);
  }
  ag_str t = AG_STR_INIT;
  CHECK_EQ_INT(ag_comm_text(sig, &t), 0);
  CHECK_CONTAINS(ag_str_cstr(&t), "comm: 3 NCCL kernels in 2 groups, 4 compute kernels\n");
  CHECK_CONTAINS(ag_str_cstr(&t), "  all_gather         1000000      2    4      2    10.000"
                                  "      2.200      100.00       50.00    45.0%");
  CHECK_CONTAINS(ag_str_cstr(&t), "  reduce_scatter        4000      2    2      1     4.000"
                                  "          -        1.00        0.50    50.0%");
  ag_str_release(&t);
out:
  json_decref(sig);
  ag_sys_ev_free(e);
  ag_diags_release(&d);
}

static const json_t *val(const json_t *vals, const char *region, const char *stat) {
  size_t i;
  json_t *v;
  json_array_foreach(vals, i, v) if (
      !strcmp(json_string_value(json_object_get(v, "region")), region) &&
      !strcmp(json_string_value(json_object_get(v, "stat")), stat)) return v;
  return NULL;
}

TEST(synth) {
  ag_diags d;
  ag_diags_init(&d);
  ag_sys_ev *e = load(ev_full, &d);
  json_t *o = NULL;
  if (!e || ag_comm_synth(e, &d, &o) || !o)
    goto out;
  json_t *vals = json_object_get(o, "values");
  const json_t *v = val(vals, "(comm all_gather bytes=1000000 sms=4)", "busbw_GBps");
  CHECK(v && num(v, "value") == 50);
  CHECK(v && !strcmp(json_string_value(json_object_get(v, "qual")), "derived"));
  v = val(vals, "(comm all_gather bytes=1000000 sms=4)", "mean");
  CHECK(v && num(v, "value") == 10000);
  CHECK(v && !strcmp(json_string_value(json_object_get(v, "qual")), "observed"));
  v = val(vals, "(comm reduce_scatter bytes=4000 sms=2)", "launch_overhead_ns");
  CHECK(v && json_is_null(json_object_get(v, "value")));
  v = val(vals, "(comm)", "compute_kernels");
  CHECK(v && num(v, "value") == 4);
  CHECK_EQ_INT((int)json_array_size(json_object_get(o, "warnings")), 0);
  CHECK_EQ_INT((int)json_array_size(json_object_get(o, "missing")), 0);
out:
  json_decref(o);
  ag_sys_ev_free(e);
  ag_diags_release(&d);
}

/* no launch calls, no declaration: nulls and warnings; no NCCL kernel: missing */
TEST(partial) {
  static const char undeclared[] = HEAD CAL K(3, 0, 100, 200, "gemm", 1)
      K(7, 0, 150, 250, AG, 8) "]}";
  static const char none[] = HEAD CAL K(3, 0, 100, 200, "gemm", 1) "]}";
  ag_diags d;
  ag_diags_init(&d);
  json_t *o = NULL;
  ag_sys_ev *e = load(undeclared, &d);
  if (e && !ag_comm_synth(e, &d, &o) && o) {
    json_t *w = json_object_get(o, "warnings");
    CHECK_EQ_INT((int)json_array_size(w), 2);
    CHECK_CONTAINS(json_string_value(json_array_get(w, 0)), "launch overheads are null");
    CHECK_CONTAINS(json_string_value(json_array_get(w, 1)), "argus.comm bytes=N ranks=R");
    json_t *op = json_array_get(json_object_get(json_object_get(o, "comm"), "ops"), 0);
    CHECK(json_is_null(json_object_get(op, "bytes")));
    CHECK(json_is_null(json_object_get(op, "busbw_GBps")));
    CHECK(num(op, "overlap") == 0.5);
    CHECK(val(json_object_get(o, "values"), "(comm all_gather bytes=undeclared sms=8)", "count"));
  } else {
    CHECK(0);
  }
  json_decref(o);
  o = NULL;
  ag_sys_ev_free(e);
  e = load(none, &d);
  if (e && !ag_comm_synth(e, &d, &o) && o) {
    json_t *m = json_object_get(o, "missing");
    CHECK_EQ_INT((int)json_array_size(m), 1);
    CHECK_CONTAINS(json_string_value(json_object_get(json_array_get(m, 0), "why")),
                   "no NCCL kernel");
  } else {
    CHECK(0);
  }
  json_decref(o);
  ag_sys_ev_free(e);
  ag_diags_release(&d);
}

static void expect_fail(const char *text, int at_load, const char *msg) {
  ag_diags d;
  ag_diags_init(&d);
  ag_sys_ev *e = NULL;
  json_t *sig = NULL;
  int rc = ag_sys_ev_load_mem(text, strlen(text), "system.json", &d, &e);
  if (!at_load && !rc)
    rc = ag_comm_signal(e, &d, &sig);
  CHECK_EQ_INT(rc, AG_EPARSE);
  CHECK(sig == NULL);
  ag_str s = AG_STR_INIT;
  ag_diags_format(&d, &s);
  CHECK_CONTAINS(ag_str_cstr(&s), msg);
  ag_str_release(&s);
  ag_sys_ev_free(e);
  ag_diags_release(&d);
}

TEST(bad_input) {
  /* a malformed declaration around an NCCL kernel's launch: named, with why */
  expect_fail(HEAD CAL K(7, 0, 150, 250, AG, 8) API(7, 100, "driver")
                  RANGE(1, 90, 120, "argus.comm op=allgather bytes=64 ranks=2") "]}",
              0, "nvtx range 'argus.comm op=allgather bytes=64 ranks=2' (around NCCL kernel "
                 "ncclDevKernel_AllGather");
  expect_fail(HEAD CAL K(7, 0, 150, 250, AG, 8) API(7, 100, "driver")
                  RANGE(1, 90, 120, "argus.comm bytes=64") "]}",
              0, "needs bytes=N and ranks=R");
  /* a launch call without its thread or API family */
  expect_fail(HEAD CAL ",{\"kind\":\"api\",\"corr\":7,\"start\":1,\"end\":2}]}", 1,
              "records[1] (api): needs 'api' (runtime or driver) and the thread 'tid'");
  expect_fail(HEAD CAL ",{\"kind\":\"api\",\"corr\":7,\"start\":1,\"end\":2,\"api\":\"driver\"}]}",
              1, "records[1] (api): needs 'api' (runtime or driver) and the thread 'tid'");
  expect_fail(HEAD CAL ",{\"kind\":\"api\",\"corr\":7,\"start\":3,\"end\":2,\"api\":\"driver\","
                       "\"tid\":1}]}",
              1, "records[1] (api): needs 'start' <= 'end'");
  expect_fail(HEAD CAL ",{\"kind\":\"fft\",\"corr\":7}]}", 1,
              "kind 'fft' is none of kernel, memcpy, memset, sync, stream, api, nvtx");
}

/* The collect task of evidence `ev` in plan p. */
static ag_task *collect_of(const ag_plan *p, const char *synth) {
  for (size_t i = 0; i < p->tasks.n; i++) {
    ag_task *t = p->tasks.v[i];
    if (strcmp(t->op, synth))
      continue;
    for (size_t k = 0; k < t->deps.n; k++) {
      ag_task *c = ag_plan_task(p, t->deps.v[k]);
      if (c && c->type == AG_TASK_COLLECT)
        return c;
    }
  }
  return NULL;
}

/* The plan: comm's own run, with the launch calls, seeing every GPU; the
 * system signal's run bound to its lane with the default kinds. */
TEST(plan) {
  const ag_recipe *r = ag_recipe_find("comm");
  CHECK(r != NULL);
  if (!r)
    return;
  CHECK_EQ_STR(r->evidence, "comm");
  CHECK_EQ_STR(r->synth, "synth.comm");
  const ag_evidence_kind *k = ag_evidence_find("comm");
  CHECK(k && !strcmp(k->backend, "system") && strstr(k->transform, "\"api\":true"));
  const char *sigs[] = {"system", "comm"};
  ag_query q;
  memset(&q, 0, sizeof q);
  q.region = "k";
  q.signals = sigs;
  q.nsignals = 2;
  ag_diags d;
  ag_diags_init(&d);
  ag_plan *p = NULL;
  ag_backend_set s;
  CHECK_EQ_INT(ag_plan_build(&q, "prog", &d, &p), 0);
  CHECK_EQ_INT(ag_backend_set_init(&s, ag_backends_builtin(), -1, NULL, 0, NULL, &d), 0);
  const ag_backend *sys = ag_backend_for_evidence(&s, "comm");
  CHECK(sys && !strcmp(sys->name, "system"));
  CHECK(ag_backend_for_op(&s, "synth.comm") == sys);
  ag_task *tc = p ? collect_of(p, "synth.comm") : NULL, *ts = p ? collect_of(p, "synth.system") : NULL;
  CHECK(tc && ts && tc != ts && tc->run != ts->run); /* two runs */
  if (sys && tc && ts) {
    ag_exec_ctx cx = {p, 0, NULL};
    ag_trace_run_opts ro;
    memset(&ro, 0, sizeof ro);
    ag_collect_job job = {"c", &ro, "system", NULL, 0, 0};
    CHECK_EQ_INT(sys->collect(&cx, tc, &job), 0);
    CHECK_EQ_INT(job.all_devices, 1);
    CHECK_EQ_INT(job.own_process, 1);
    CHECK_EQ_STR(ro.collect, "system");
    CHECK(ro.env_extra && !strcmp(ro.env_extra[0],
                                  "ARGUS_ACTIVITY_KINDS=kernel,memcpy,memset,sync,stream,nvtx,api"));
    ag_trace_run_opts ro2;
    memset(&ro2, 0, sizeof ro2);
    ag_collect_job j2 = {"c", &ro2, "system", NULL, 0, 0};
    CHECK_EQ_INT(sys->collect(&cx, ts, &j2), 0);
    CHECK_EQ_INT(j2.all_devices, 0);
    CHECK(ro2.env_extra == NULL);
    /* a run with an environment of its own already: refused, with why */
    static const char *const mine[] = {"X=1", NULL};
    ro2.env_extra = mine;
    CHECK_EQ_INT(sys->collect(&cx, tc, &j2), AG_EINVAL);
    CHECK_CONTAINS(tc->error, "sets ARGUS_ACTIVITY_KINDS");
  }
  ag_backend_set_release(&s);
  ag_plan_free(p);
  ag_diags_release(&d);
}

RUN_TESTS(T(names), T(declarations), T(signal), T(synth), T(partial), T(bad_input), T(plan))
