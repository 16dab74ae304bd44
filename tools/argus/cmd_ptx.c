/*
 * cmd_ptx.c — `argus ptx FILE`: parses a PTX module and prints it back
 * (byte-identical to the input), or shows its functions' control-flow
 * graphs (--cfg) or a JSON summary (--json; with --cfg, each function's
 * CFG too).
 */
#include "cli.h"

#include "argus/ptx.h"

#include <string.h>

const ag_cli_opt cmd_ptx_opts[] = {
    {"cfg", 0, NULL, "print each function's basic blocks, edges, dominators and loops"},
    {0},
};

/* The CFG of each function with a body: as text into out, or (json) as the
 * "cfg" member of the function's entry in fa. */
static int cfgs(ag_cli *cli, ag_ptx_module *m, ag_diags *d, ag_str *out, json_t *fa) {
  for (int i = 0; i < m->nfuncs; i++) {
    ag_ptx_cfg *g;
    if (m->funcs[i]->is_decl)
      continue;
    int rc = ag_ptx_cfg_build(m, m->funcs[i], d, &g);
    if (rc) {
      ag_cli_print_diags(d);
      return ag_cli_fail_input(cli, rc, "cannot build the CFG of '%s'", m->funcs[i]->name);
    }
    if (!fa) {
      ag_ptx_cfg_format(g, out);
      continue;
    }
    json_t *gj = ag_ptx_cfg_to_json(g);
    if (!gj || json_object_set_new(json_array_get(fa, (size_t)i), "cfg", gj))
      return ag_cli_fail(cli, AG_ENOMEM, "JSON");
  }
  return AG_EXIT_OK;
}

int cmd_ptx(ag_cli *cli) {
  if (cli->npos != 1)
    return ag_cli_usage_error(cli, "expected one PTX file");
  int exit_code = ag_cli_input_file(cli, cli->pos[0]);
  if (exit_code)
    return exit_code;
  ag_diags d;
  ag_diags_init(&d);
  ag_ptx_module *m = NULL;
  int rc = ag_ptx_parse_file(cli->pos[0], &d, &m);
  ag_str out = AG_STR_INIT;
  if (rc) {
    ag_cli_print_diags(&d);
    exit_code = ag_cli_fail_input(cli, rc, "cannot parse '%s'", cli->pos[0]);
    goto out;
  }
  if (cli->json) {
    json_t *j = json_pack("{s:s,s:s?,s:s?,s:i}", "module", cli->pos[0], "version", m->version,
                          "target", m->target, "address_size", m->address_size);
    json_t *fa = json_array();
    for (int i = 0; j && fa && i < m->nfuncs; i++) {
      const ag_ptx_func *f = m->funcs[i];
      int ninstr = 0;
      if (f->body_open)
        for (const ag_ptx_stmt *s = f->body_open; s; s = s->next) {
          ninstr += s->kind == AG_PTX_INSTR;
          if (s == f->body_close)
            break;
        }
      json_t *pa = json_array();
      for (int k = 0; pa && k < f->nparams; k++)
        json_array_append_new(pa, json_string(f->params[k].name));
      json_array_append_new(fa, json_pack("{s:s,s:b,s:b,s:o,s:i,s:i}", "name", f->name, "kernel",
                                          f->is_entry, "declaration", f->is_decl, "params", pa,
                                          "statements", f->nstmts, "instructions", ninstr));
    }
    if (!j || !fa || json_array_size(fa) != (size_t)m->nfuncs) {
      json_decref(j);
      json_decref(fa);
      exit_code = ag_cli_fail(cli, AG_ENOMEM, "JSON");
      goto out;
    }
    json_object_set_new(j, "functions", fa);
    if (ag_cli_flag(cli, "cfg") && (exit_code = cfgs(cli, m, &d, NULL, fa))) {
      json_decref(j);
      goto out;
    }
    ag_cli_print_json(j);
    json_decref(j);
    goto out;
  }
  if (ag_cli_flag(cli, "cfg")) {
    if ((exit_code = cfgs(cli, m, &d, &out, NULL)))
      goto out;
  } else {
    rc = ag_ptx_print(m, &out);
  }
  if (out.oom) {
    exit_code = ag_cli_fail(cli, AG_ENOMEM, "printing");
    goto out;
  }
  fwrite(out.p ? out.p : "", 1, out.len, stdout);
out:
  ag_str_release(&out);
  ag_ptx_module_free(m);
  ag_diags_release(&d);
  return exit_code;
}
