/*
 * test_collect.c — the CPU side of collection: nvJitLink compilation (the
 * cubin, the resource report parsed from the info log, a ptxas error as a
 * diagnostic at the PTX line it names, the content-hash cache), the host
 * runtime's error codes and its refusals on a machine without a GPU or with
 * a bad environment, and the Collect task's handling of harnesses that fail,
 * hang, report a host-runtime error or leave no evidence.
 */
#include "check.h"

#include <sys/stat.h>
#include <unistd.h>

#include "argus/collect.h"
#include "argus/evidence.h"
#include "argus/host.h"
#include "trace_util.h"

/* host.h's codes are core's codes */
_Static_assert((int)AG_HOST_ENOMEM == (int)AG_ENOMEM, "codes");
_Static_assert((int)AG_HOST_EINVAL == (int)AG_EINVAL, "codes");
_Static_assert((int)AG_HOST_EIO == (int)AG_EIO, "codes");
_Static_assert((int)AG_HOST_EPARSE == (int)AG_EPARSE, "codes");
_Static_assert((int)AG_HOST_ENOTFOUND == (int)AG_ENOTFOUND, "codes");
_Static_assert((int)AG_HOST_EUNSUPPORTED == (int)AG_EUNSUPPORTED, "codes");
_Static_assert((int)AG_HOST_ENODEV == (int)AG_ENODEV, "codes");
_Static_assert((int)AG_HOST_ECUDA == (int)AG_ECUDA, "codes");
_Static_assert((int)AG_HOST_EFULL == (int)AG_EFULL, "codes");
_Static_assert((int)AG_HOST_EBUSY == (int)AG_EBUSY, "codes");
_Static_assert((int)AG_HOST_ECUPTI == (int)AG_ECUPTI, "codes");
_Static_assert(sizeof(ag_ev_record) == AG_EV_RECORD_BYTES, "layout");
_Static_assert(sizeof(ag_ev_meta) == AG_EV_META_BYTES, "layout");
_Static_assert(sizeof(ag_ev_desc) == AG_EV_DESC_BYTES, "layout");
_Static_assert(sizeof(ag_ev_file_header) == AG_EV_FILE_HEADER_BYTES, "layout");

static char *read_ptx(const char *name) {
  char rel[256];
  snprintf(rel, sizeof rel, "tests/data/ptx/%s", name);
  char *t = tu_read_build_file(rel, NULL);
  CHECK(t != NULL);
  return t;
}

TEST(jit_compiles_and_reports_resources) {
  char *ptx = read_ptx("overhead.ptx");
  if (!ptx)
    return;
  ag_diags d;
  ag_diags_init(&d);
  ag_cubin *c = NULL;
  CHECK_EQ_INT(ag_jit_compile(ptx, strlen(ptx), "overhead.ptx", NULL, &d, &c), 0);
  if (c) {
    CHECK_EQ_STR(c->arch, "sm_90a");
    CHECK(c->len > 1000 && !memcmp(c->data, "\x7f" "ELF", 4)); /* a cubin is an ELF */
    CHECK_EQ_INT(c->nfuncs, 2);
    for (int i = 0; i < c->nfuncs; i++) {
      CHECK(c->funcs[i].registers > 0 && c->funcs[i].registers < 64);
      CHECK_EQ_INT(c->funcs[i].spill_store_bytes, 0);
      CHECK_EQ_INT(c->funcs[i].stack_bytes, 0);
    }
    CHECK_CONTAINS(c->info_log, "overhead_compute");
    json_t *j = ag_cubin_to_json(c);
    CHECK(json_array_size(json_object_get(j, "functions")) == 2);
    json_decref(j);
  }
  ag_cubin_free(c);
  ag_diags_release(&d);
  ag_free(ptx);
}

TEST(jit_error_points_at_the_ptx_line) {
  char *ptx = read_ptx("overhead.ptx");
  if (!ptx)
    return;
  /* break the first add.f32 / fma: find the line of the first "fma.rn.f32" */
  char *at = strstr(ptx, "fma.rn.f32");
  CHECK(at != NULL);
  if (!at) {
    ag_free(ptx);
    return;
  }
  int line = 1;
  for (char *p = ptx; p < at; p++)
    line += *p == '\n';
  memcpy(at, "fma.rn.f33", 10);
  ag_diags d;
  ag_diags_init(&d);
  ag_cubin *c = NULL;
  CHECK_EQ_INT(ag_jit_compile(ptx, strlen(ptx), "broken.ptx", NULL, &d, &c), AG_EJIT);
  CHECK(c == NULL);
  int found = 0, wrong = 0;
  for (size_t i = 0; i < d.items.n; i++) {
    const ag_diag *g = &d.items.v[i];
    if (g->line == line && g->srcline && strstr(g->srcline, "fma.rn.f33"))
      found = 1;
    if (g->line == line + 1)
      wrong = 1; /* a diagnostic at the next line would be a wrong pointer */
  }
  CHECK(found);
  CHECK(!wrong);
  ag_str s = AG_STR_INIT;
  ag_diags_format(&d, &s);
  char want[64];
  snprintf(want, sizeof want, "broken.ptx:%d:1: error: ptxas:", line);
  CHECK_CONTAINS(ag_str_cstr(&s), want);
  ag_str_release(&s);
  ag_diags_release(&d);
  /* no .target: a clear error, not a guess */
  ag_diags_init(&d);
  CHECK_EQ_INT(ag_jit_compile(".version 8.0\n", 13, "t.ptx", NULL, &d, &c), AG_EPARSE);
  CHECK_EQ_INT(d.nerrors, 1);
  ag_diags_release(&d);
  ag_free(ptx);
}

TEST(jit_info_log_parsing) {
  const char *log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'k1' for 'sm_90a'\n"
      "ptxas info    : Function properties for k1\n"
      "ptxas         .     24 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, 380 bytes cmem[0]\n"
      "info    : Function properties for 'k2':\n"
      "info    : used 16 registers, used 0 barriers, 0 stack, 64 bytes smem, 540 bytes cmem[0], 0 bytes lmem\n";
  ag_jit_func *f = NULL;
  int n = 0;
  CHECK_EQ_INT(ag_jit_parse_info(log, &f, &n), 0);
  CHECK_EQ_INT(n, 2);
  if (n == 2) {
    CHECK_EQ_STR(f[0].name, "k1");
    CHECK_EQ_INT(f[0].registers, 40);
    CHECK_EQ_INT(f[0].spill_store_bytes, 8);
    CHECK_EQ_INT(f[0].spill_load_bytes, 12);
    CHECK_EQ_INT(f[0].stack_bytes, 24);
    CHECK_EQ_INT(f[0].smem_bytes, 2048);
    CHECK_EQ_STR(f[1].name, "k2");
    CHECK_EQ_INT(f[1].registers, 16);
    CHECK_EQ_INT(f[1].cmem0_bytes, 540);
    CHECK_EQ_INT(f[1].smem_bytes, 64);
  }
  for (int i = 0; i < n; i++)
    ag_free(f[i].name);
  ag_free(f);
}

TEST(jit_cache_by_content) {
  char *ptx = read_ptx("overhead.ptx");
  if (!ptx)
    return;
  char dir[128];
  snprintf(dir, sizeof dir, "/tmp/argus-cubin-cache-%ld", (long)getpid());
  ag_diags d;
  ag_diags_init(&d);
  ag_cubin *a = NULL, *b = NULL, *c = NULL;
  CHECK_EQ_INT(ag_jit_compile_cached(dir, ptx, strlen(ptx), "o.ptx", NULL, &d, &a), 0);
  CHECK_EQ_INT(ag_jit_compile_cached(dir, ptx, strlen(ptx), "o.ptx", NULL, &d, &b), 0);
  if (a && b) {
    CHECK(!a->from_cache && b->from_cache);
    CHECK_EQ_STR(a->key, b->key);
    CHECK(a->len == b->len && !memcmp(a->data, b->data, a->len));
    CHECK_EQ_INT(b->nfuncs, 2);
    /* a different PTX is a different key; a half-present entry is a miss */
    char cub[512];
    snprintf(cub, sizeof cub, "%s/%s.log", dir, a->key);
    unlink(cub);
    CHECK_EQ_INT(ag_jit_compile_cached(dir, ptx, strlen(ptx), "o.ptx", NULL, &d, &c), 0);
    CHECK(c && !c->from_cache);
  }
  ag_cubin_free(a);
  ag_cubin_free(b);
  ag_cubin_free(c);
  ag_diags_release(&d);
  ag_free(ptx);
  tu_rm_rf(dir);
}

TEST(host_refuses_clearly) {
  ag_host *h = NULL;
  /* no driver (ARGUS_LIBCUDA names one that does not exist) */
  setenv("ARGUS_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
  CHECK_EQ_INT(ag_host_open(&h), AG_HOST_ENODEV);
  CHECK_CONTAINS(ag_host_errmsg(h), "no CUDA driver: cannot load /nonexistent/libcuda.so.1");
  ag_host_close(h);
  /* under Argus, the environment is checked first */
  setenv("ARGUS_COLLECT", "sample", 1);
  CHECK_EQ_INT(ag_host_open(&h), AG_HOST_EUNSUPPORTED);
  CHECK_CONTAINS(ag_host_errmsg(h), "ARGUS_COLLECT='sample'");
  ag_host_close(h);
  setenv("ARGUS_COLLECT", "trace", 1);
  unsetenv("ARGUS_OUT");
  CHECK_EQ_INT(ag_host_open(&h), AG_HOST_EINVAL);
  CHECK_CONTAINS(ag_host_errmsg(h), "needs ARGUS_OUT");
  ag_host_close(h);
  setenv("ARGUS_OUT", "/tmp", 1);
  setenv("ARGUS_VARIANT", "/tmp/x.cubin", 1);
  setenv("ARGUS_TRACE_RECORDS", "12x", 1);
  CHECK_EQ_INT(ag_host_open(&h), AG_HOST_EINVAL);
  CHECK_CONTAINS(ag_host_errmsg(h), "ARGUS_TRACE_RECORDS='12x' is not a whole number");
  ag_host_close(h);
  unsetenv("ARGUS_COLLECT");
  unsetenv("ARGUS_OUT");
  unsetenv("ARGUS_VARIANT");
  unsetenv("ARGUS_TRACE_RECORDS");
  unsetenv("ARGUS_LIBCUDA");
  ag_host_close(NULL);
  /* the probe for argus itself */
  setenv("ARGUS_LIBCUDA", "/nonexistent", 1); /* (not used by the probe) */
  ag_str why = AG_STR_INIT;
  int rc = ag_collect_gpu_probe(&why);
  CHECK(rc == 0 || (rc == AG_ENODEV && why.len > 0));
  ag_str_release(&why);
  unsetenv("ARGUS_LIBCUDA");
}

/* Runs argv as a "harness" under the Collect task. */
static int run_harness(const char *const *argv, double timeout, ag_str *why, char **ev) {
  char out[128];
  snprintf(out, sizeof out, "/tmp/argus-collect-test-%ld", (long)getpid());
  ag_trace_run_opts o;
  memset(&o, 0, sizeof o);
  o.argv = argv;
  o.cubin_path = "/tmp/none.cubin";
  o.out_dir = out;
  o.timeout_s = timeout;
  ag_trace_run_result r;
  int rc = ag_trace_run(&o, &r, why);
  *ev = r.evidence_path ? ag_strdup(r.evidence_path) : NULL;
  ag_trace_run_result_release(&r);
  return rc;
}

TEST(harness_failures_fail_the_task) {
  ag_str why = AG_STR_INIT;
  char *ev = NULL;
  const char *t[] = {"/bin/true", NULL};
  CHECK_EQ_INT(run_harness(t, 10, &why, &ev), AG_ECHILD);
  CHECK_CONTAINS(ag_str_cstr(&why), "exited without writing evidence");
  CHECK(ev == NULL);
  ag_str_clear(&why);
  const char *f[] = {"/bin/sh", "-c", "echo boom >&2; exit 3", NULL};
  CHECK_EQ_INT(run_harness(f, 10, &why, &ev), AG_ECHILD);
  CHECK_CONTAINS(ag_str_cstr(&why), "the harness failed (exit 3)");
  CHECK_CONTAINS(ag_str_cstr(&why), "boom");
  ag_str_clear(&why);
  const char *s[] = {"/bin/sleep", "30", NULL};
  CHECK_EQ_INT(run_harness(s, 0.5, &why, &ev), AG_ETIMEOUT);
  CHECK_CONTAINS(ag_str_cstr(&why), "did not finish within");
  ag_str_clear(&why);
  /* the host runtime's own report of a GPU fault; its partial evidence is
   * not taken */
  const char *g[] = {"/bin/sh", "-c",
                     "echo 'cuCtxSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS' > "
                     "$ARGUS_OUT/host-error.txt; echo x > $ARGUS_OUT/trace.agev; exit 1",
                     NULL};
  CHECK_EQ_INT(run_harness(g, 10, &why, &ev), AG_ECUDA);
  CHECK_CONTAINS(ag_str_cstr(&why), "CUDA_ERROR_ILLEGAL_ADDRESS");
  char p[160];
  snprintf(p, sizeof p, "/tmp/argus-collect-test-%ld/trace.agev", (long)getpid());
  CHECK(access(p, F_OK) != 0);
  ag_str_clear(&why);
  /* a harness that writes evidence succeeds, and sees the environment */
  const char *k[] = {"/bin/sh", "-c",
                     "test \"$ARGUS_COLLECT\" = trace && test -n \"$ARGUS_VARIANT\" && "
                     "echo ok > $ARGUS_OUT/trace.agev",
                     NULL};
  CHECK_EQ_INT(run_harness(k, 10, &why, &ev), 0);
  CHECK(ev != NULL);
  ag_free(ev);
  ag_str_release(&why);
  char dir[160];
  snprintf(dir, sizeof dir, "/tmp/argus-collect-test-%ld", (long)getpid());
  tu_rm_rf(dir);
}

RUN_TESTS(T(jit_compiles_and_reports_resources), T(jit_error_points_at_the_ptx_line),
          T(jit_info_log_parsing), T(jit_cache_by_content), T(host_refuses_clearly),
          T(harness_failures_fail_the_task))
