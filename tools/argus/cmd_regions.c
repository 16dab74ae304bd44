/*
 * cmd_regions.c — `argus regions SPEC | FILE.ptx | FILE.cu`: discovers the
 * regions of a kernel module and prints the region tree with the sites of
 * each region (text, or --json). A .cu file (given directly or named by a
 * spec) is compiled to PTX with nvcc first.
 */
#include "cli.h"

#include "argus/ptx.h"
#include "argus/spec.h"

#include <string.h>

const ag_cli_opt cmd_regions_opts[] = {
    {"flags", 0, "FLAGS", "nvcc flags for a .cu file, space-separated (default -arch=sm_90a)"},
    {0},
};

int ag_cli_regions(ag_cli *cli, const char *in, const char *flags_text, json_t **json,
                   ag_str *text) {
  int exit_code = AG_EXIT_OK, rc;
  ag_diags d;
  ag_diags_init(&d);
  ag_spec *spec = NULL;
  ag_ptx_module *m = NULL;
  ag_str ptx = AG_STR_INIT;
  char *flagbuf = NULL;
  const char **flags = NULL;
  if (json)
    *json = NULL;
  if (flags_text) {
    /* split --flags on blanks: argv for nvcc, never a shell */
    flagbuf = ag_strdup(flags_text);
    flags = ag_calloc(strlen(flags_text) / 2 + 2, sizeof *flags);
    if (!flagbuf || !flags) {
      exit_code = ag_cli_fail(cli, AG_ENOMEM, "flags");
      goto out;
    }
    int n = 0;
    for (char *tok = strtok(flagbuf, " \t"); tok; tok = strtok(NULL, " \t"))
      flags[n++] = tok;
    flags[n] = NULL;
  }
  if ((exit_code = ag_cli_module_ptx(cli, in, flags, &d, &ptx, &spec)))
    goto out;
  const char *name = spec ? (spec->ptx ? spec->ptx : spec->cuda) : in;
  if ((rc = ag_ptx_parse(ptx.p ? ptx.p : "", ptx.len, name, &d, &m))) {
    ag_cli_print_diags(&d);
    exit_code = ag_cli_fail_input(cli, rc, "cannot parse the PTX of '%s'", in);
    goto out;
  }
  int kernels = 0;
  for (int i = 0; i < m->nfuncs; i++)
    kernels += m->funcs[i]->is_entry;
  if (!kernels) {
    ag_cli_error(cli, "no kernel in '%s': the module has no .entry function", in);
    exit_code = AG_EXIT_USAGE;
    goto out;
  }
  ag_ptx_regions *R;
  if ((rc = ag_ptx_discover(m, &d, &R))) {
    ag_cli_print_diags(&d);
    exit_code = ag_cli_fail_input(cli, rc, "invalid region markers in '%s'", in);
    goto out;
  }
  if (json && !(*json = ag_ptx_regions_to_json(m, R))) {
    exit_code = ag_cli_fail(cli, AG_ENOMEM, "JSON");
    goto out;
  }
  if (text && ag_ptx_regions_format(m, R, text)) {
    exit_code = ag_cli_fail(cli, AG_ENOMEM, "formatting");
    goto out;
  }
  if (d.items.n)
    ag_cli_print_diags(&d); /* warnings */
out:
  if (exit_code && json) {
    json_decref(*json);
    *json = NULL;
  }
  ag_free(flagbuf);
  ag_free(flags);
  ag_str_release(&ptx);
  ag_ptx_module_free(m);
  ag_spec_free(spec);
  ag_diags_release(&d);
  return exit_code;
}

int cmd_regions(ag_cli *cli) {
  if (cli->npos != 1)
    return ag_cli_usage_error(cli, "expected one program spec, .ptx or .cu file");
  json_t *j = NULL;
  ag_str out = AG_STR_INIT;
  int exit_code = ag_cli_regions(cli, cli->pos[0], ag_cli_get(cli, "flags"),
                                 cli->json ? &j : NULL, cli->json ? NULL : &out);
  if (!exit_code && j)
    ag_cli_print_json(j);
  else if (!exit_code)
    fwrite(out.p ? out.p : "", 1, out.len, stdout);
  json_decref(j);
  ag_str_release(&out);
  return exit_code;
}
