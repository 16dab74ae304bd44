/*
 * test_map_bind.c — the mapping run's counter binding in libargus_host
 * (src/collect/map_bind.c) against a fake driver table: the descriptor
 * written {slots, capacity, enabled}, the slots zeroed, the counts file
 * written and read back (ag_attr_counts_from_json); a module that is not a
 * mapping variant is left alone; bad modules and failed driver calls are
 * errors that say why. Then libargus_host end to end: a harness (the fake
 * one) under Argus with a mapping variant and the stand-in driver writes
 * the counts. Pure CPU.
 */
#include "argus/attrib.h"
#include "argus/host.h"
#include "argus/collect.h"
#include "check.h"
#include "map_bind.h"

#include <stdlib.h>
#include <unistd.h>

static uint8_t g_desc[AG_MAP_DESC_BYTES + 8];
static uint32_t g_need;
static size_t desc_bytes = AG_MAP_DESC_BYTES;
static int have_desc, have_need, fail_alloc;
static void *last_alloc;

static CUresult f_get_global(CUdeviceptr *d, size_t *bytes, CUmodule mod, const char *name) {
  (void)mod;
  if (!strcmp(name, AG_MAP_DESC_SYMBOL) && have_desc) {
    *d = (CUdeviceptr)(uintptr_t)g_desc;
    *bytes = desc_bytes;
    return CUDA_SUCCESS;
  }
  if (!strcmp(name, AG_MAP_SLOTS_SYMBOL) && have_need) {
    *d = (CUdeviceptr)(uintptr_t)&g_need;
    *bytes = 4;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_NOT_FOUND;
}
static CUresult f_alloc(CUdeviceptr *d, size_t n) {
  if (fail_alloc)
    return CUDA_ERROR_OUT_OF_MEMORY;
  last_alloc = malloc(n);
  memset(last_alloc, 0xab, n); /* garbage: the binding must zero it */
  *d = (CUdeviceptr)(uintptr_t)last_alloc;
  return CUDA_SUCCESS;
}
static CUresult f_free(CUdeviceptr d) {
  free((void *)(uintptr_t)d);
  return CUDA_SUCCESS;
}
static CUresult f_memset(CUdeviceptr d, unsigned char v, size_t n, CUstream s) {
  (void)s;
  memset((void *)(uintptr_t)d, v, n);
  return CUDA_SUCCESS;
}
static CUresult f_htod(CUdeviceptr d, const void *src, size_t n, CUstream s) {
  (void)s;
  memcpy((void *)(uintptr_t)d, src, n);
  return CUDA_SUCCESS;
}
static CUresult f_dtoh(void *dst, CUdeviceptr src, size_t n) {
  memcpy(dst, (const void *)(uintptr_t)src, n);
  return CUDA_SUCCESS;
}

static const ag__map_cu cu = {f_get_global, f_alloc, f_free, f_memset, f_htod, f_dtoh};

/* binds a fresh module that asks for `need` slots, at most max_slots (0: all) */
static int bind_fresh(uint32_t need, uint32_t max_slots, ag__map_binding *b, char *why,
                      size_t n) {
  have_desc = have_need = 1;
  g_need = need;
  memset(g_desc, 0, sizeof g_desc);
  return ag__map_bind(&cu, NULL, NULL, max_slots, b, why, n);
}

TEST(bind_count_write_read) {
  ag__map_binding b;
  char why[512] = "";
  CHECK_EQ_INT(bind_fresh(7, 0, &b, why, sizeof why), 0);
  CHECK(b.bound);
  CHECK_EQ_INT((int)b.nslots, 7);
  uint64_t p;
  uint32_t cap, on;
  memcpy(&p, g_desc, 8);
  memcpy(&cap, g_desc + 8, 4);
  memcpy(&on, g_desc + 12, 4);
  CHECK(p == (uint64_t)(uintptr_t)last_alloc);
  CHECK_EQ_INT((int)cap, 7);
  CHECK_EQ_INT((int)on, 1);
  uint64_t *slots = last_alloc;
  for (int i = 0; i < 7; i++)
    CHECK(slots[i] == 0);
  /* what the kernel's counters would do */
  slots[0] = 2; /* dropped */
  slots[3] = 40;
  slots[6] = 5;
  char dir[] = "/tmp/argus-mapbind-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  CHECK_EQ_INT(ag__map_write(&cu, &b, dir, why, sizeof why), 0);
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, AG_MAP_COUNTS_FILE);
  json_error_t je;
  json_t *j = json_load_file(path, 0, &je);
  CHECK(j != NULL);
  ag_diags d;
  ag_diags_init(&d);
  uint64_t *back = NULL;
  size_t n = 0;
  CHECK_EQ_INT(ag_attr_counts_from_json(j, &d, &back, &n), 0);
  CHECK_EQ_INT((int)n, 7);
  for (size_t i = 0; back && i < n; i++)
    CHECK(back[i] == slots[i]);
  CHECK_EQ_INT((int)json_integer_value(json_object_get(j, "dropped")), 2);
  ag_free(back);
  json_decref(j);
  /* a counts file of the wrong shape */
  j = json_loads("{\"format\":\"argus-map-counts\",\"slots\":3,\"counts\":[1,2]}", 0, NULL);
  CHECK_EQ_INT(ag_attr_counts_from_json(j, &d, &back, &n), AG_EINVAL);
  CHECK(back == NULL);
  json_decref(j);
  ag_diags_release(&d);
  ag__map_unbind(&cu, &b);
  CHECK(!b.bound && b.slots == 0);
  unlink(path);
  rmdir(dir);
}

/* bound below the variant's need (ARGUS_MAP_SLOTS): the descriptor holds the
 * smaller capacity, the counts file its slots and the need */
TEST(bind_below_need) {
  ag__map_binding b;
  char why[512] = "";
  CHECK_EQ_INT(bind_fresh(7, 3, &b, why, sizeof why), 0);
  uint32_t cap;
  memcpy(&cap, g_desc + 8, 4);
  CHECK_EQ_INT((int)cap, 3);
  CHECK_EQ_INT((int)b.nslots, 3);
  CHECK_EQ_INT((int)b.need, 7);
  ((uint64_t *)last_alloc)[0] = 9; /* what the variant does then: every count in slot 0 */
  char dir[] = "/tmp/argus-mapbind-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  CHECK_EQ_INT(ag__map_write(&cu, &b, dir, why, sizeof why), 0);
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, AG_MAP_COUNTS_FILE);
  json_t *j = json_load_file(path, 0, NULL);
  CHECK_EQ_INT((int)json_integer_value(json_object_get(j, "slots")), 3);
  CHECK_EQ_INT((int)json_integer_value(json_object_get(j, "needed")), 7);
  CHECK_EQ_INT((int)json_integer_value(json_object_get(j, "dropped")), 9);
  CHECK_EQ_INT((int)json_array_size(json_object_get(j, "counts")), 3);
  json_decref(j);
  ag__map_unbind(&cu, &b);
  /* a limit above the need binds the need */
  CHECK_EQ_INT(ag__map_bind(&cu, NULL, NULL, 100, &b, why, sizeof why), 0);
  memcpy(&cap, g_desc + 8, 4);
  CHECK_EQ_INT((int)cap, 7);
  CHECK_EQ_INT((int)b.nslots, 7);
  ag__map_unbind(&cu, &b);
  unlink(path);
  rmdir(dir);
}

TEST(not_a_mapping_module_and_errors) {
  ag__map_binding b;
  char why[512] = "";
  have_desc = have_need = 0;
  CHECK_EQ_INT(ag__map_bind(&cu, NULL, NULL, 0, &b, why, sizeof why), 0);
  CHECK(!b.bound);
  CHECK_EQ_INT(ag__map_write(&cu, &b, "/nonexistent", why, sizeof why), 0); /* nothing */
  have_desc = 1; /* a descriptor without its slot count */
  CHECK_EQ_INT(ag__map_bind(&cu, NULL, NULL, 0, &b, why, sizeof why), AG_HOST_EINVAL);
  CHECK_CONTAINS(why, "no 4-byte '__argus_map_slots'");
  have_need = 1;
  desc_bytes = 8; /* the wrong size */
  CHECK_EQ_INT(ag__map_bind(&cu, NULL, NULL, 0, &b, why, sizeof why), AG_HOST_EINVAL);
  desc_bytes = AG_MAP_DESC_BYTES;
  g_need = 0;
  CHECK_EQ_INT(ag__map_bind(&cu, NULL, NULL, 0, &b, why, sizeof why), AG_HOST_EINVAL);
  CHECK_CONTAINS(why, "asks for 0 counter slots");
  g_need = AG_MAP_MAX_SLOTS + 1;
  CHECK_EQ_INT(ag__map_bind(&cu, NULL, NULL, 0, &b, why, sizeof why), AG_HOST_EINVAL);
  g_need = 4;
  fail_alloc = 1;
  CHECK_EQ_INT(ag__map_bind(&cu, NULL, NULL, 0, &b, why, sizeof why), AG_HOST_ECUDA);
  CHECK_CONTAINS(why, "cuMemAlloc(mapping counters) failed");
  CHECK(!b.bound);
  fail_alloc = 0;
  /* bound, then the output directory is missing */
  CHECK_EQ_INT(ag__map_bind(&cu, NULL, NULL, 0, &b, why, sizeof why), 0);
  CHECK_EQ_INT(ag__map_write(&cu, &b, "/nonexistent/dir", why, sizeof why), AG_HOST_EIO);
  CHECK_CONTAINS(why, "cannot write '/nonexistent/dir/map_counts.json.tmp'");
  ag__map_unbind(&cu, &b);
}

/* libargus_host end to end, with the stand-in driver (tests/probes/fake_cuda.c,
 * whose launches add i to slot i of a bound mapping module): a harness run
 * under Argus with a mapping variant writes map_counts.json */
static const char *map_slots_env; /* "ARGUS_MAP_SLOTS=N" for run_mode, or NULL */

static int run_mode(const char *mode, const char *dir, const char *variant, const char *launches,
                    ag_str *err) {
  char e0[64], e1[4200], e2[4200], e3[4200];
  snprintf(e0, sizeof e0, "ARGUS_COLLECT=%s", mode);
  snprintf(e1, sizeof e1, "ARGUS_OUT=%s", dir);
  snprintf(e2, sizeof e2, "ARGUS_VARIANT=%s", variant);
  snprintf(e3, sizeof e3, "ARGUS_LIBCUDA=%s", FAKE_CUDA_LIB);
  const char *env[] = {e0, e1, e2, e3, map_slots_env, NULL};
  const char *argv[] = {FAKE_HARNESS, "ok", "module.cubin", launches, NULL};
  ag_proc_opts o;
  memset(&o, 0, sizeof o);
  o.argv = argv;
  o.env_add = env;
  o.capture_err = err;
  o.timeout_s = 60;
  ag_proc_result r;
  if (ag_proc_run(&o, &r) || !r.exited)
    return -1;
  return r.exit_code;
}

static int run_harness(const char *dir, const char *variant, const char *launches, ag_str *err) {
  return run_mode("time", dir, variant, launches, err);
}

TEST(host_runtime_writes_counts) {
  char dir[] = "/tmp/argus-maphost-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char var[4200], counts[4200];
  snprintf(var, sizeof var, "%s/variant.ptx", dir);
  snprintf(counts, sizeof counts, "%s/%s", dir, AG_MAP_COUNTS_FILE);
  const char text[] = "// a mapping variant, for the stand-in driver\n"
                      ".const .align 4 .u32 __argus_map_slots = 5;\n";
  CHECK_EQ_INT(ag_file_write_atomic(var, text, strlen(text)), 0);
  ag_str err = AG_STR_INIT;
  int rc = run_harness(dir, var, "3", &err);
  if (rc)
    fprintf(stderr, "harness: %s\n", ag_str_cstr(&err));
  CHECK_EQ_INT(rc, 0);
  json_t *j = json_load_file(counts, 0, NULL);
  CHECK(j != NULL);
  ag_diags d;
  ag_diags_init(&d);
  uint64_t *v = NULL;
  size_t n = 0;
  if (j)
    CHECK_EQ_INT(ag_attr_counts_from_json(j, &d, &v, &n), 0);
  CHECK_EQ_INT((int)n, 5);
  for (size_t i = 0; v && i < n; i++)
    CHECK(v[i] == 3 * i); /* 3 launches, slot i counted i per launch */
  ag_free(v);
  v = NULL;
  json_decref(j);
  /* a variant that is not a mapping one writes no counts */
  unlink(counts);
  CHECK_EQ_INT(ag_file_write_atomic(var, "// plain\n", 9), 0);
  ag_str_clear(&err);
  CHECK_EQ_INT(run_harness(dir, var, "1", &err), 0);
  CHECK(access(counts, F_OK) != 0);
  /* ARGUS_COLLECT=map (the mapping run of argus observe) refuses a variant
   * that is not a mapping one, and counts one that is */
  ag_str_clear(&err);
  CHECK(run_mode("map", dir, var, "1", &err) != 0);
  CHECK_CONTAINS(ag_str_cstr(&err), "has no counter descriptor __argus_map");
  CHECK(access(counts, F_OK) != 0);
  CHECK_EQ_INT(ag_file_write_atomic(var, text, strlen(text)), 0);
  ag_str_clear(&err);
  CHECK_EQ_INT(run_mode("map", dir, var, "2", &err), 0);
  CHECK(access(counts, F_OK) == 0);
  /* ARGUS_MAP_SLOTS below the need: the stand-in kernel, as the variant,
   * counts every execution in slot 0: 2 launches x (1 + 2 + 3 + 4) dropped */
  map_slots_env = "ARGUS_MAP_SLOTS=3";
  ag_str_clear(&err);
  CHECK_EQ_INT(run_mode("map", dir, var, "2", &err), 0);
  map_slots_env = NULL;
  j = json_load_file(counts, 0, NULL);
  CHECK(j != NULL);
  if (j)
    CHECK_EQ_INT(ag_attr_counts_from_json(j, &d, &v, &n), 0);
  CHECK_EQ_INT((int)n, 3);
  CHECK_EQ_INT((int)json_integer_value(json_object_get(j, "needed")), 5);
  CHECK_EQ_INT((int)json_integer_value(json_object_get(j, "dropped")), 20);
  for (size_t i = 0; v && i < n; i++)
    CHECK(v[i] == (i ? 0 : 20));
  ag_free(v);
  v = NULL;
  json_decref(j);
  map_slots_env = "ARGUS_MAP_SLOTS=0"; /* not a slot count */
  ag_str_clear(&err);
  CHECK(run_mode("map", dir, var, "1", &err) != 0);
  CHECK_CONTAINS(ag_str_cstr(&err), "ARGUS_MAP_SLOTS='0' is not a whole number in [1, ");
  map_slots_env = NULL;
  ag_diags_release(&d);
  /* the evidence file each collection writes */
  CHECK_EQ_STR(ag_trace_run_evidence_file("map"), AG_MAP_COUNTS_FILE);
  CHECK_EQ_STR(ag_trace_run_evidence_file("sass"), "sass_metrics.json");
  CHECK_EQ_STR(ag_trace_run_evidence_file("time"), "timing.json");
  CHECK(ag_trace_run_evidence_file("sassy") == NULL);
  /* a mapping variant asking for no slots: the run fails saying why */
  const char bad[] = ".const .align 4 .u32 __argus_map_slots = 0;\n";
  CHECK_EQ_INT(ag_file_write_atomic(var, bad, strlen(bad)), 0);
  ag_str_clear(&err);
  CHECK(run_harness(dir, var, "1", &err) != 0);
  CHECK_CONTAINS(ag_str_cstr(&err), "asks for 0 counter slots");
  ag_str_release(&err);
  char cmd[4300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK_EQ_INT(system(cmd), 0);
}

RUN_TESTS(T(bind_count_write_read), T(bind_below_need), T(not_a_mapping_module_and_errors),
          T(host_runtime_writes_counts))
