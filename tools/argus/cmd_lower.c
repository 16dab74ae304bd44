/*
 * cmd_lower.c — `argus lower FILE.tile`: checks the program, lowers it to
 * CUDA C (docs/lower.md) and writes the CUDA C, or the PTX NVRTC makes of
 * it (-o FILE.ptx). Exit 0 on success, 1 when the program does not check
 * (an assertion is violated or unknown; --unchecked skips the checker) or
 * NVRTC fails, 2 when it is malformed or does not lower (diagnostics at the
 * DSL line).
 */
#include "argus/tile_check.h"
#include "argus/tile_lower.h"
#include "cli.h"

#include <stdlib.h>
#include <string.h>

const ag_cli_opt cmd_lower_opts[] = {
    {"kernel", 'k', "NAME", "lower only this kernel"},
    {"set", 'D', "NAME=VALUE[,NAME=VALUE]", "override const parameters (a list: -D a=1,b=2, or the option repeated)"},
    {"output", 'o', "OUT.cu|OUT.ptx", "write CUDA C (.cu) or PTX through NVRTC (.ptx); default: CUDA C to stdout"},
    {"arch", 0, "SM", "the PTX target for .ptx output (default sm_90a)"},
    {"no-markers", 0, NULL, "emit no ARGUS region markers"},
    {"unchecked", 0, NULL, "do not run the checker: lower even a program whose assertions do not hold"},
    {0},
};

const char cmd_lower_details[] =
    "Runs the checker first (argus check) and lowers only a program whose assertions all\n"
    "hold; --unchecked skips the checker (at real sizes it can take minutes). The CUDA C\n"
    "has one statement per DSL statement where it can, each under a #line of the .tile\n"
    "file; tags and assertions emit nothing; each 'assume' becomes <kernel>_preconditions()\n"
    "on the host side. The main loop, prologue and epilogue, the other top-level loops and\n"
    "every region(\"name\") block carry ARGUS region markers. PTX is cached by content\n"
    "(ARGUS_PTX_CACHE=0 turns the cache off). See docs/lower.md.";

static int ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && !strcmp(s + a - b, suf);
}

static json_t *kernel_json(const ag_tile_lkernel *k) {
  json_t *params = json_array(), *assumes = json_array(), *regions = json_array();
  for (int i = 0; i < k->nparams; i++) {
    const ag_tile_lparam *p = &k->params[i];
    json_t *dims = json_array();
    for (int j = 0; j < p->rank; j++)
      json_array_append_new(dims, json_string(p->dims[j]));
    json_array_append_new(params, json_pack("{s:s,s:s,s:s?,s:o}", "name", p->name, "kind",
                                            p->kind == AG_TILE_PARAM_TENSOR ? "tensor" : "size",
                                            "dtype", p->dtype, "dims", dims));
  }
  for (int i = 0; i < k->nassumes; i++)
    json_array_append_new(assumes, json_pack("{s:s,s:i}", "cond", k->assumes[i], "line",
                                             k->assume_lines[i]));
  for (int i = 0; i < k->nregions; i++)
    json_array_append_new(regions, json_string(k->regions[i]));
  json_t *tmaps = json_array();
  for (int i = 0; i < k->ntmaps; i++) {
    const ag_tile_ltmap *m = &k->tmaps[i];
    json_t *box = json_array();
    for (int j = 0; j < m->rank; j++)
      json_array_append_new(box, json_integer((json_int_t)m->box[j]));
    json_array_append_new(tmaps, json_pack("{s:s,s:s,s:o,s:i}", "name", m->name, "tensor",
                                           k->params[m->tensor].name, "box", box, "swizzle",
                                           m->swizzle));
  }
  return json_pack("{s:s,s:[I,I,I],s:[s,s,s],s:I,s:o,s:o,s:o,s:o}", "name", k->name, "block",
                   (json_int_t)k->block[0], (json_int_t)k->block[1], (json_int_t)k->block[2],
                   "grid", k->grid[0], k->grid[1], k->grid[2], "smem_bytes",
                   (json_int_t)k->smem_bytes, "params", params, "preconditions", assumes,
                   "regions", regions, "tensor_maps", tmaps);
}

/* Checks the parsed program p of FILE with the defines and refuses it when an
 * assertion is not proved: an exit code (diagnostics printed). */
int ag_cli_check_program(ag_cli *cli, const char *file, const ag_tile_program *p,
                         const char *const *defs, int ndefs) {
  ag_tile_check_opts co;
  memset(&co, 0, sizeof co);
  co.defines = defs;
  co.ndefines = ndefs;
  ag_diags d;
  ag_diags_init(&d);
  ag_tile_report *r = NULL;
  int exit_code = AG_EXIT_OK;
  int rc = ag_tile_check(p, &co, &d, &r);
  if (rc) {
    ag_cli_print_diags(&d);
    exit_code = rc == AG_ENOMEM || rc == AG_ESOLVER ? AG_EXIT_FAIL : AG_EXIT_USAGE;
    if (rc == AG_ENOMEM || rc == AG_ESOLVER)
      ag_cli_fail(cli, rc, "checking '%s' failed", file);
    goto out;
  }
  if (!ag_tile_report_ok(r)) {
    for (int i = 0; i < r->nasserts; i++)
      if (r->asserts[i].status != AG_TILE_PROVED) {
        ag_cli_error(cli,
                     "'%s' does not check: %s:%d: '%s' is %s (see argus check; --unchecked "
                     "%s it anyway)",
                     file, file, r->asserts[i].line, r->asserts[i].text,
                     r->asserts[i].status == AG_TILE_VIOLATED ? "violated"
                     : r->asserts[i].status == AG_TILE_UNKNOWN ? "not proved (unknown)"
                                                               : "never reached",
                     cli->cmd->name[0] == 'r' ? "runs" : "lowers");
        break;
      }
    exit_code = AG_EXIT_FAIL;
  }
out:
  ag_tile_report_free(r);
  ag_diags_release(&d);
  return exit_code;
}

/* Lowers the parsed program p of FILE with the defines: an exit code
 * (diagnostics printed); on 0, *low is set (owned by the caller). */
int ag_cli_lower_program(ag_cli *cli, const char *file, const ag_tile_program *p,
                         const char *const *defs, int ndefs, const char *kernel, int no_markers,
                         ag_tile_lowered **low) {
  *low = NULL;
  ag_tile_lower_opts lo;
  memset(&lo, 0, sizeof lo);
  lo.kernel = kernel;
  lo.defines = defs;
  lo.ndefines = ndefs;
  lo.no_markers = no_markers;
  ag_diags d;
  ag_diags_init(&d);
  int exit_code = AG_EXIT_OK;
  int rc = ag_tile_lower(p, &lo, &d, low);
  if (rc) {
    ag_cli_print_diags(&d);
    exit_code = rc == AG_ENOMEM ? ag_cli_fail(cli, rc, "lowering '%s' failed", file)
                                : AG_EXIT_USAGE;
    ag_tile_lowered_free(*low);
    *low = NULL;
  }
  ag_diags_release(&d);
  return exit_code;
}

/* Parses FILE, checks it (unless unchecked) with the defines and lowers it
 * (`argus lower`). Returns an exit code (diagnostics printed); on 0, *p and
 * *low are set (owned by the caller). */
static int lower_file(ag_cli *cli, const char *file, const char *const *defs, int ndefs,
                      const char *kernel, int unchecked, int no_markers, ag_tile_program **p,
                      ag_tile_lowered **low) {
  *p = NULL;
  *low = NULL;
  int exit_code = ag_cli_input_file(cli, file);
  if (exit_code)
    return exit_code;
  ag_diags d;
  ag_diags_init(&d);
  int rc = ag_tile_parse_file(file, &d, p);
  if (rc) {
    ag_cli_print_diags(&d);
    exit_code = rc == AG_ENOMEM || rc == AG_ESOLVER ? AG_EXIT_FAIL : AG_EXIT_USAGE;
    if (rc == AG_ENOMEM || rc == AG_ESOLVER)
      ag_cli_fail(cli, rc, "checking '%s' failed", file);
  }
  ag_diags_release(&d);
  if (!exit_code && !unchecked)
    exit_code = ag_cli_check_program(cli, file, *p, defs, ndefs);
  if (!exit_code)
    exit_code = ag_cli_lower_program(cli, file, *p, defs, ndefs, kernel, no_markers, low);
  if (exit_code) {
    ag_tile_program_free(*p);
    *p = NULL;
  }
  return exit_code;
}

int cmd_lower(ag_cli *cli) {
  if (cli->npos != 1)
    return ag_cli_usage_error(cli, cli->npos ? "expected one FILE, got %d arguments"
                                             : "expected a FILE.tile to lower%.0d",
                              cli->npos);
  const char *outp = ag_cli_get(cli, "output");
  if (outp && !ends_with(outp, ".cu") && !ends_with(outp, ".ptx"))
    return ag_cli_usage_error(cli, "-o takes a file ending in .cu or .ptx, not '%s'", outp);
  const char *defs[64];
  char *setcopy = NULL;
  int ndefs = 0;
  int exit_code = ag_cli_sets(cli, defs, 64, &ndefs, &setcopy);
  if (exit_code)
    return exit_code;
  ag_diags d;
  ag_diags_init(&d);
  ag_tile_program *p = NULL;
  ag_tile_lowered *low = NULL;
  ag_str ptx = AG_STR_INIT;
  int rc;
  exit_code = lower_file(cli, cli->pos[0], defs, ndefs, ag_cli_get(cli, "kernel"),
                         ag_cli_flag(cli, "unchecked"), ag_cli_flag(cli, "no-markers"), &p, &low);
  if (exit_code)
    goto out;
  const char *text = low->cuda;
  size_t len = low->len;
  int cached = 0;
  if (outp && ends_with(outp, ".ptx")) {
    rc = ag_tile_nvrtc_ptx(low->cuda, low->len, ag_cli_get(cli, "arch"), &d, &ptx, &cached);
    if (rc) {
      ag_cli_print_diags(&d);
      exit_code = ag_cli_fail(cli, rc, "compiling the lowered '%s' to PTX failed", cli->pos[0]);
      goto out;
    }
    text = ag_str_cstr(&ptx);
    len = ptx.len;
  }
  if (outp) {
    rc = ag_file_write_atomic(outp, text, len);
    if (rc) {
      exit_code = ag_cli_fail(cli, rc, "cannot write '%s'", outp);
      goto out;
    }
  }
  if (cli->json) {
    json_t *ks = json_array();
    for (int i = 0; i < low->nkernels; i++)
      json_array_append_new(ks, kernel_json(&low->kernels[i]));
    json_t *j = json_pack("{s:i,s:s,s:s?,s:b,s:o}", "schema", 1, "file", cli->pos[0], "output",
                          outp, "ptx_cached", cached, "kernels", ks);
    if (!outp && j)
      json_object_set_new(j, "cuda", json_string(low->cuda));
    if (j)
      ag_cli_print_json(j);
    json_decref(j);
  } else if (!outp) {
    fwrite(text, 1, len, stdout);
  }
  exit_code = AG_EXIT_OK;
out:
  ag_str_release(&ptx);
  ag_tile_lowered_free(low);
  ag_tile_program_free(p);
  ag_diags_release(&d);
  ag_free(setcopy);
  return exit_code;
}
