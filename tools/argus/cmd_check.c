/*
 * cmd_check.c — `argus check FILE`: parses a tile program, proves its tag
 * assertions, prints the verdict and counterexamples (text, or --json).
 * Exit 0 when every assertion holds, 1 when one is violated or unknown,
 * 2 when the program is malformed (diagnostics with line, column, caret).
 */
#include "argus/tile_check.h"
#include "cli.h"

#include <stdlib.h>
#include <string.h>

const ag_cli_opt cmd_check_opts[] = {
    {"set", 'D', "NAME=VALUE[,NAME=VALUE]", "override const parameters (a list: -D a=1,b=2, or the option repeated)"},
    {"symbolic", 0, "NAME[,NAME]", "check a const parameter for every value (a problem size)"},
    {"unroll", 0, NULL, "unroll every loop with constant bounds (no loop summaries)"},
    {"rlimit", 0, "N", "solver resource limit per query (default 20000000)"},
    {"batch", 0, "N", "assertion instances per solver query (default 32)"},
    {"all", 0, NULL, "look for a counterexample in every instance, not just the first"},
    {"strict", 0, NULL, "an assertion never reached under the sizes is an error, not a warning"},
    {"max-steps", 0, "N", "interpreted statements per kernel after unrolling (default 1000000)"},
    {"max-writes", 0, "N", "shared-memory writes per kernel after unrolling (default 4096)"},
    {"max-memory", 0, "MIB", "the interpreter's memory per kernel in MiB (default 128)"},
    {0},
};

const char cmd_check_details[] =
    "Interprets each kernel for a symbolic thread, block and problem sizes, propagates\n"
    "tags through registers, shared memory and intrinsics, and proves every 'assert\n"
    "tag(...) == ...' with Z3. A violation is reported with a counterexample: block,\n"
    "thread, loop iteration, the data element and the two tags. See docs/check.md.";

static int parse_u64(const char *s, uint64_t *out) {
  char *end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  if (!s[0] || *end || s[0] == '-')
    return -1;
  *out = v;
  return 0;
}

int ag_cli_sets(ag_cli *cli, const char **defs, int max, int *n, char **copy) {
  *n = 0;
  *copy = NULL;
  const char *set = ag_cli_get(cli, "set");
  if (!set)
    return 0;
  char *setcopy = ag_strdup(set);
  if (!setcopy)
    return ag_cli_fail(cli, AG_ENOMEM, "cannot parse --set");
  for (char *tok = strtok(setcopy, ","); tok && *n < max; tok = strtok(NULL, ",")) {
    char *eq = strchr(tok, '=');
    char *end = NULL;
    if (!eq || eq == tok || (strtoll(eq + 1, &end, 0), !eq[1] || *end)) {
      int rc = ag_cli_usage_error(cli, "--set takes NAME=INTEGER, not '%s'", tok);
      ag_free(setcopy);
      return rc;
    }
    defs[(*n)++] = tok;
  }
  *copy = setcopy;
  return 0;
}

int cmd_check(ag_cli *cli) {
  if (cli->npos == 0)
    return ag_cli_usage_error(cli, "expected a FILE to check");
  if (cli->npos != 1)
    return ag_cli_usage_error(cli, "expected one FILE, got %d arguments", cli->npos);
  ag_tile_check_opts o;
  memset(&o, 0, sizeof o);
  const char *defs[64];
  char *setcopy = NULL, *symcopy = NULL;
  int src = ag_cli_sets(cli, defs, 64, &o.ndefines, &setcopy);
  if (src)
    return src;
  o.defines = defs;
  const char *syms[64];
  const char *sy = ag_cli_get(cli, "symbolic");
  if (sy) {
    symcopy = ag_strdup(sy);
    if (!symcopy) {
      ag_free(setcopy);
      return ag_cli_fail(cli, AG_ENOMEM, "cannot parse --symbolic");
    }
    for (char *tok = strtok(symcopy, ","); tok && o.nsymbolic < 64; tok = strtok(NULL, ","))
      syms[o.nsymbolic++] = tok;
    o.symbolic = syms;
  }
  o.unroll = ag_cli_flag(cli, "unroll");
  uint64_t v;
  const char *rl = ag_cli_get(cli, "rlimit"), *bt = ag_cli_get(cli, "batch");
  if (rl && (parse_u64(rl, &v) || v == 0)) {
    ag_free(setcopy);
    ag_free(symcopy);
    return ag_cli_usage_error(cli, "--rlimit takes a positive integer, not '%s'", rl);
  }
  if (rl)
    o.rlimit = v;
  if (bt && (parse_u64(bt, &v) || v == 0 || v > 4096)) {
    ag_free(setcopy);
    ag_free(symcopy);
    return ag_cli_usage_error(cli, "--batch takes an integer from 1 to 4096, not '%s'", bt);
  }
  if (bt)
    o.batch = (int)v;
  o.all = ag_cli_flag(cli, "all");
  o.strict = ag_cli_flag(cli, "strict");
  static const char *const limits[] = {"max-steps", "max-writes", "max-memory"};
  int64_t *limit_of[] = {&o.max_steps, &o.max_writes, &o.max_memory_mib};
  for (int i = 0; i < 3; i++) {
    const char *lv = ag_cli_get(cli, limits[i]);
    if (lv && (parse_u64(lv, &v) || v == 0 || v > (uint64_t)1 << 40)) {
      ag_free(setcopy);
    ag_free(symcopy);
      return ag_cli_usage_error(cli, "--%s takes an integer from 1 to 2^40, not '%s'",
                                limits[i], lv);
    }
    if (lv)
      *limit_of[i] = (int64_t)v;
  }

  int exit_code = ag_cli_input_file(cli, cli->pos[0]);
  if (exit_code) {
    ag_free(setcopy);
    ag_free(symcopy);
    return exit_code;
  }
  ag_diags d;
  ag_diags_init(&d);
  ag_tile_program *p = NULL;
  ag_tile_report *r = NULL;
  int rc = ag_tile_parse_file(cli->pos[0], &d, &p);
  exit_code = AG_EXIT_USAGE;
  if (rc == 0)
    rc = ag_tile_check(p, &o, &d, &r);
  if (rc == AG_ENOMEM || rc == AG_ESOLVER || rc == AG_EIO) {
    ag_cli_print_diags(&d);
    exit_code = rc == AG_EIO ? AG_EXIT_USAGE : AG_EXIT_FAIL;
    if (rc != AG_EIO)
      ag_cli_fail(cli, rc, "checking '%s' failed", cli->pos[0]);
    goto out;
  }
  if (rc) {
    /* malformed program */
    if (cli->json) {
      const char *first = d.items.n ? d.items.v[0].msg : "malformed";
      json_t *j = json_pack("{s:i,s:s,s:s,s:s,s:o}", "schema", 1, "file", cli->pos[0], "verdict",
                            "malformed", "error", first, "diagnostics", ag_diags_to_json(&d));
      if (j)
        ag_cli_print_json(j);
      json_decref(j);
    }
    ag_cli_print_diags(&d);
    exit_code = AG_EXIT_USAGE;
    goto out;
  }
  ag_cli_print_diags(&d); /* warnings, if any */
  if (cli->json) {
    json_t *j = ag_tile_report_json(r);
    if (!j) {
      exit_code = ag_cli_fail(cli, AG_ENOMEM, "cannot render the report");
      goto out;
    }
    ag_cli_print_json(j);
    json_decref(j);
  } else {
    ag_str s = AG_STR_INIT;
    ag_tile_report_text(r, &s);
    fputs(ag_str_cstr(&s), stdout);
    ag_str_release(&s);
  }
  exit_code = ag_tile_report_ok(r) ? AG_EXIT_OK : AG_EXIT_FAIL;
out:
  ag_tile_report_free(r);
  ag_tile_program_free(p);
  ag_diags_release(&d);
  ag_free(setcopy);
  ag_free(symcopy);
  return exit_code;
}
