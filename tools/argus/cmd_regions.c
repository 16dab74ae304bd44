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

int cmd_regions(ag_cli *cli) {
  if (cli->npos != 1)
    return ag_cli_usage_error(cli, "expected one program spec, .ptx or .cu file");
  const char *in = cli->pos[0];
  int exit_code = AG_EXIT_OK, rc;
  ag_diags d;
  ag_diags_init(&d);
  ag_spec *spec = NULL;
  ag_ptx_module *m = NULL;
  ag_str text = AG_STR_INIT, out = AG_STR_INIT;
  char *flagbuf = NULL;
  const char **flags = NULL;
  if (ag_cli_get(cli, "flags")) {
    /* split --flags on blanks: argv for nvcc, never a shell */
    const char *f = ag_cli_get(cli, "flags");
    flagbuf = ag_strdup(f);
    flags = ag_calloc(strlen(f) / 2 + 2, sizeof *flags);
    if (!flagbuf || !flags) {
      exit_code = ag_cli_fail(cli, AG_ENOMEM, "flags");
      goto out;
    }
    int n = 0;
    for (char *tok = strtok(flagbuf, " \t"); tok; tok = strtok(NULL, " \t"))
      flags[n++] = tok;
    flags[n] = NULL;
  }
  if ((exit_code = ag_cli_module_ptx(cli, in, flags, &d, &text, &spec)))
    goto out;
  const char *name = spec ? (spec->ptx ? spec->ptx : spec->cuda) : in;
  if ((rc = ag_ptx_parse(text.p ? text.p : "", text.len, name, &d, &m))) {
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
  if (cli->json) {
    json_t *j = ag_ptx_regions_to_json(m, R);
    if (!j) {
      exit_code = ag_cli_fail(cli, AG_ENOMEM, "JSON");
      goto out;
    }
    ag_cli_print_json(j);
    json_decref(j);
  } else {
    if (ag_ptx_regions_format(m, R, &out)) {
      exit_code = ag_cli_fail(cli, AG_ENOMEM, "formatting");
      goto out;
    }
    fwrite(out.p ? out.p : "", 1, out.len, stdout);
  }
  if (d.items.n)
    ag_cli_print_diags(&d); /* warnings */
out:
  ag_free(flagbuf);
  ag_free(flags);
  ag_str_release(&text);
  ag_str_release(&out);
  ag_ptx_module_free(m);
  ag_spec_free(spec);
  ag_diags_release(&d);
  return exit_code;
}
