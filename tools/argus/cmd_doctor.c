/*
 * cmd_doctor.c — `argus doctor`: what this machine can do for Argus. Useful
 * on a machine without a GPU too: it says what is missing and what that
 * means for observe and check.
 */
#include "cli.h"

#include "argus/store.h"
#include "argus/sysinfo.h"

#include <openssl/crypto.h>

const ag_cli_opt cmd_doctor_opts[] = {
    {"cuda-home", 0, "DIR", "CUDA toolkit root (default $CUDA_HOME or /usr/local/cuda)"},
    {0},
};

static const char *sget(json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}

static void print_tool(const char *label, json_t *t, const char *vkey) {
  json_t *v = json_object_get(t, vkey);
  if (json_is_string(v))
    printf("  %-10s %s\n", label, json_string_value(v));
  else if (json_is_integer(v))
    printf("  %-10s %lld\n", label, (long long)json_integer_value(v));
  else
    printf("  %-10s missing: %s\n", label, sget(t, "error"));
}

int cmd_doctor(ag_cli *cli) {
  if (cli->npos)
    return ag_cli_usage_error(cli, "unexpected argument '%s'", cli->pos[0]);
  const char *home = ag_cli_get(cli, "cuda-home");
  if (!home)
    home = getenv("CUDA_HOME");
  if (!home)
    home = "/usr/local/cuda";
  json_t *info = NULL;
  int rc = ag_sysinfo_collect(home, &info);
  if (rc)
    return ag_cli_fail(cli, rc, "cannot collect system information");
  json_t *libs = json_pack("{s:s,s:s,s:s,s:s,s:s}", "argus", AG_VERSION_STRING, "jansson",
                           JANSSON_VERSION, "openssl", OpenSSL_version(OPENSSL_VERSION),
                           "sqlite", ag_store_sqlite_version(), "zstd", ag_store_zstd_version());
  json_object_set_new(info, "libraries", libs);
  if (cli->json) {
    ag_cli_print_json(info);
    json_decref(info);
    return AG_EXIT_OK;
  }
  json_t *drv = json_object_get(info, "driver");
  json_t *devs = json_object_get(info, "devices");
  printf("argus %s\n\nGPU\n", AG_VERSION_STRING);
  if (json_is_true(json_object_get(drv, "available"))) {
    printf("  driver     CUDA %s, %zu device(s)\n", sget(drv, "version"), json_array_size(devs));
    size_t i;
    json_t *d;
    json_array_foreach(devs, i, d) {
      printf("  [%lld] %s  sm_%s  %lld SMs  %.0f MHz SM clock  %.0f MHz memory  %.1f GiB  "
             "L2 %.0f MiB\n",
             (long long)json_integer_value(json_object_get(d, "index")), sget(d, "name"),
             sget(d, "cc"), (long long)json_integer_value(json_object_get(d, "sm_count")),
             json_integer_value(json_object_get(d, "clock_khz")) / 1000.0,
             json_integer_value(json_object_get(d, "mem_clock_khz")) / 1000.0,
             json_integer_value(json_object_get(d, "memory_bytes")) / 1073741824.0,
             json_integer_value(json_object_get(d, "l2_bytes")) / 1048576.0);
    }
  } else {
    printf("  driver     unavailable: %s\n", sget(drv, "error"));
    printf("             observe plans and compiles variants here, but cannot collect\n");
  }
  json_t *tools = json_object_get(info, "tools");
  printf("\nCUDA tools\n");
  print_tool("nvcc", json_object_get(tools, "nvcc"), "version");
  print_tool("ptxas", json_object_get(tools, "ptxas"), "version");
  print_tool("nvJitLink", json_object_get(tools, "nvjitlink"), "version");
  print_tool("CUPTI", json_object_get(tools, "cupti"), "api_version");
  json_t *prof = json_object_get(info, "profiling");
  json_t *perm = json_object_get(prof, "permitted");
  printf("\nhardware profiling\n  %-10s %s (%s)\n", "permitted",
         json_is_null(perm) ? "unknown" : json_is_true(perm) ? "yes" : "no", sget(prof, "reason"));
  printf("\nlibraries\n");
  const char *k;
  json_t *v;
  json_object_foreach(libs, k, v) printf("  %-10s %s\n", k, json_string_value(v));
  json_decref(info);
  return AG_EXIT_OK;
}
