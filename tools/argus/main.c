/*
 * main.c — the argus CLI: a dispatch table of subcommands, option parsing
 * driven by each command's option table, and the global options every
 * command takes (--json, --workspace, -v, --help).
 */
#include "argus/spec.h"
#include "argus/tile_run.h"
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The GPU-facing commands need the CUDA toolkit at build time; built without
 * it (CMake's ARGUS_HAVE_CUDA), their entries stay, with no function, and
 * main says why (tools/argus/CMakeLists.txt). */
#if ARGUS_HAVE_CUDA
#define CUDA_FN(x) x
#else
#define CUDA_FN(x) NULL
#endif

static const ag_cli_cmd commands[] = {
    {"version", cmd_version, 0, "", "print the version of argus and its libraries",
     NULL, cmd_version_opts},
    {"observe", CUDA_FN(cmd_observe), AG_CMD_NEEDS_WORKSPACE, "SPEC --region NAME [--signals LIST] [--scope K=V,...]",
     "measure a region: plan the query, run it across variants, print the qualified report",
     "Every artifact and result lands in the workspace; a task that already succeeded there is\n"
     "not run again, so a zoom-in query reuses earlier evidence. docs/observe.md.",
     CUDA_FN(cmd_observe_opts)},
    {"plan", CUDA_FN(cmd_plan), AG_CMD_NEEDS_WORKSPACE, "SPEC --region NAME [--signals LIST] [--scope K=V,...]",
     "print the measurement plan of a query (runs discovery only; no GPU needed)", NULL,
     CUDA_FN(cmd_plan_opts)},
    {"doctor", CUDA_FN(cmd_doctor), 0, "",
     "say what this machine can do: GPUs, CUDA tools, profiling permission, libraries",
     "Works on a machine without a GPU too: it then says what is missing.", CUDA_FN(cmd_doctor_opts)},
    {"regions", cmd_regions, 0, "[--flags F] SPEC.json|FILE.ptx|FILE.cu", "show the regions of a kernel and the operation sites in each", NULL, cmd_regions_opts},
    {"variant", cmd_variant, 0,
     "--kind trace-free|traced|probe|mapping [--region R,...] [--op OPID [--occurrence N]] [-o OUT] "
     "SPEC|FILE.ptx|FILE.cu",
     "write a measurement variant's PTX (trace-free, traced, the probe of one async site, or the "
     "PC-to-region mapping run's)",
     NULL, cmd_variant_opts},
    {"trace", CUDA_FN(cmd_trace), 0, "[--region R] [--scope K=V,...] [--timeline FILE] SPEC | --evidence FILE", "run the traced variant once and print the per-region timing table", NULL, CUDA_FN(cmd_trace_opts)},
    {"ptx", cmd_ptx, 0, "[--cfg] FILE.ptx", "parse a PTX module and print it back (or its CFGs)", NULL, cmd_ptx_opts},
    {"layout", cmd_layout, 0, "SUBCOMMAND ARG...", "CuTe layout algebra: eval, compose, divide, product, print", cmd_layout_details, cmd_layout_opts},
    {"ws", cmd_ws, AG_CMD_NEEDS_WORKSPACE, "init|ls|show|log|check|gc|put|get|ref [ARGS] [options]",
     "the versioned workspace: artifacts, program versions, tasks, refs", cmd_ws_details, cmd_ws_opts},
    {"check", cmd_check, 0, "[options] FILE", "prove a tile program's tag assertions (exit 1: violated, 2: malformed)", cmd_check_details, cmd_check_opts},
    {"lower", cmd_lower, 0, "[options] FILE.tile", "lower a tile program to CUDA C or PTX (exit 1: it does not check, 2: malformed)", cmd_lower_details, cmd_lower_opts},
    {"run", cmd_run, 0, "[options] FILE.tile --size NAME=V,...", "run a tile program on the GPU: against a reference (--check-ref), timed (--bench)", cmd_run_details, cmd_run_opts},
    {"optimize", cmd_optimize, 0, "TASK.json [--policy NAME] [--trials N] [--budget-seconds S] [--resume] [-- POLICY-COMMAND...]",
     "the optimization loop: candidates as workspace versions, checked, lowered, run against the reference, timed",
     cmd_optimize_details, cmd_optimize_opts},
    {"mcp", cmd_mcp, 0, "[--max-line BYTES]", "serve Argus's tools to an agent: a Model Context Protocol server on stdio", cmd_mcp_details, cmd_mcp_opts},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const ag_cli_opt global_opts[] = {
    {"json", 0, NULL, "print results as JSON"},
    {"workspace", 'W', "DIR", "workspace directory (default $ARGUS_WORKSPACE or .argus)"},
    {"verbose", 'v', NULL, "more log output on stderr (repeatable)"},
    {"help", 'h', NULL, "show help"},
    {0},
};

static const char *prog_cmd = "argus";

static void print_opts(const ag_cli_opt *opts, FILE *f) {
  for (const ag_cli_opt *o = opts; o && o->name; o++) {
    char left[64];
    int opt = o->arg && o->arg[0] == '['; /* "[=TOKENS]": an optional value */
    if (opt)
      snprintf(left, sizeof left, "    --%s%s", o->name, o->arg);
    else if (o->shortc)
      snprintf(left, sizeof left, "-%c, --%s%s%s", o->shortc, o->name, o->arg ? " " : "",
               o->arg ? o->arg : "");
    else
      snprintf(left, sizeof left, "    --%s%s%s", o->name, o->arg ? " " : "",
               o->arg ? o->arg : "");
    fprintf(f, "  %-28s %s\n", left, o->help);
  }
}

void ag_cli_usage(const ag_cli_cmd *cmd, FILE *f) {
  fprintf(f, "usage: argus %s %s\n\n%s\n", cmd->name, cmd->synopsis, cmd->summary);
  if (cmd->details)
    fprintf(f, "\n%s\n", cmd->details);
  if (cmd->opts && cmd->opts[0].name) {
    fprintf(f, "\noptions:\n");
    print_opts(cmd->opts, f);
  }
  fprintf(f, "\nglobal options:\n");
  print_opts(global_opts, f);
}

static void main_usage(FILE *f) {
  fprintf(f, "usage: argus [--json] [--workspace DIR] [-v] <command> [options]\n\n"
             "Argus: region-level evidence for GPU kernel optimization.\n\ncommands:\n");
  for (size_t i = 0; i < NCOMMANDS; i++)
    fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
  fprintf(f, "\n'argus <command> --help' shows a command's options.\n");
}

const char *ag_cli_get(const ag_cli *cli, const char *name) {
  for (int i = 0; cli->cmd->opts && cli->cmd->opts[i].name; i++)
    if (strcmp(cli->cmd->opts[i].name, name) == 0)
      return cli->values[i];
  return NULL;
}

int ag_cli_flag(const ag_cli *cli, const char *name) { return ag_cli_get(cli, name) != NULL; }

/* What a failing command said, for the --json error object. */
static struct {
  ag_str msg;       /* the first error message */
  json_t *diags;    /* the diagnostics printed */
  int printed_json; /* the command printed JSON on stdout */
} errs = {AG_STR_INIT, NULL, 0};

void ag_cli_take_errors(char **msg, json_t **diags) {
  *msg = errs.msg.len ? ag_str_detach(&errs.msg) : NULL;
  ag_str_release(&errs.msg);
  *diags = errs.diags;
  errs.diags = NULL;
}

void ag_cli_note_error(const char *msg) {
  if (!errs.msg.len && msg)
    ag_str_puts(&errs.msg, msg);
}

/* "argus CMD: msg[: error text]" on stderr, noted for --json. */
static void vreport(const ag_cli *cli, int err, const char *fmt, va_list ap) {
  ag_str m = AG_STR_INIT;
  ag_str_vprintf(&m, fmt, ap);
  if (err)
    ag_str_printf(&m, ": %s", ag_strerror(err));
  if (cli && cli->cmd)
    fprintf(stderr, "argus %s: %s\n", cli->cmd->name, ag_str_cstr(&m));
  else
    fprintf(stderr, "argus: %s\n", ag_str_cstr(&m));
  ag_cli_note_error(ag_str_cstr(&m));
  ag_str_release(&m);
}

int ag_cli_usage_error(const ag_cli *cli, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport(cli, 0, fmt, ap);
  va_end(ap);
  fprintf(stderr, "(see 'argus %s --help')\n", cli && cli->cmd ? cli->cmd->name : "");
  return AG_EXIT_USAGE;
}

int ag_cli_fail(const ag_cli *cli, int err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport(cli, err, fmt, ap);
  va_end(ap);
  return AG_EXIT_FAIL;
}

int ag_cli_input_exit(int err) {
  switch (err) {
  case AG_EPARSE:
  case AG_EINVAL:
  case AG_ENOTFOUND:
  case AG_EISDIR:
  case AG_EIO:
  case AG_ERANGE:
  case AG_ECORRUPT:
    return AG_EXIT_USAGE;
  default:
    return AG_EXIT_FAIL;
  }
}

int ag_cli_fail_input(const ag_cli *cli, int err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport(cli, err, fmt, ap);
  va_end(ap);
  return ag_cli_input_exit(err);
}

void ag_cli_error(const ag_cli *cli, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport(cli, 0, fmt, ap);
  va_end(ap);
}

int ag_cli_input_file(const ag_cli *cli, const char *path) {
  const char *why;
  if (!ag_file_problem(path, &why))
    return 0;
  ag_cli_error(cli, "cannot read '%s': %s", path, why);
  return AG_EXIT_USAGE;
}

void ag_cli_print_diags(const ag_diags *d) {
  ag_str s = AG_STR_INIT;
  ag_diags_format(d, &s);
  fputs(ag_str_cstr(&s), stderr);
  ag_str_release(&s);
  json_t *a = ag_diags_to_json(d);
  if (!errs.diags)
    errs.diags = json_array();
  json_array_extend(errs.diags, a);
  json_decref(a);
}

int ag_cli_print_json(json_t *j) {
  char *s = json_dumps(j, JSON_INDENT(2) | JSON_ENCODE_ANY);
  if (!s)
    return AG_ENOMEM;
  puts(s);
  free(s);
  errs.printed_json = 1;
  return 0;
}

/* The command's end: with --json, a failure that printed no JSON prints the
 * error object (what it said on stderr) on stdout. Returns rc. */
/* An option whose metavariable reads "X[,X]" takes a comma-separated list:
 * repeating it extends the list (--set a=1 --set b=2 is --set a=1,b=2);
 * another option keeps its last value. */
static int is_list_opt(const ag_cli_opt *o) { return o->arg && strstr(o->arg, "[,") != NULL; }

/* The joined values of repeated list options, freed by finish(). */
static ag_str joined[AG_CLI_MAX_OPTS * 4];
static int njoined;

static ag_str *list_join(const char *a, const char *b) {
  if (njoined == (int)(sizeof joined / sizeof *joined))
    return NULL;
  ag_str *j = &joined[njoined];
  *j = (ag_str)AG_STR_INIT;
  if (ag_str_printf(j, "%s,%s", a, b)) {
    ag_str_release(j);
    return NULL;
  }
  njoined++;
  return j;
}

static int finish(const ag_cli *cli, int rc) {
  if (cli->json && rc != AG_EXIT_OK && !errs.printed_json) {
    const char *msg = errs.msg.len ? ag_str_cstr(&errs.msg) : NULL;
    for (size_t i = 0; !msg && i < json_array_size(errs.diags); i++)
      msg = json_string_value(json_object_get(json_array_get(errs.diags, i), "message"));
    json_t *j = json_pack("{s:s,s:s?,s:i,s:s,s:O?}", "schema", "argus.error/1", "command",
                          cli->cmd ? cli->cmd->name : NULL, "exit_code", rc, "error",
                          msg ? msg : "failed", "diagnostics", errs.diags);
    if (j && !errs.diags)
      json_object_set_new(j, "diagnostics", json_array());
    if (j)
      ag_cli_print_json(j);
    json_decref(j);
  }
  json_decref(errs.diags);
  errs.diags = NULL;
  ag_str_release(&errs.msg);
  for (int i = 0; i < njoined; i++)
    ag_str_release(&joined[i]);
  njoined = 0;
  fflush(stdout);
  return rc;
}

/* A negative number ("-3") is an operand, not an option. */
static int is_negative_number(const char *a) {
  return a[0] == '-' && a[1] >= '0' && a[1] <= '9';
}

static void stderr_sink(ag_log_level lvl, const char *file, int line, const char *msg,
                        void *ud) {
  static const char *names[] = {"error", "warning", "info", "debug", "trace"};
  if (lvl >= AG_LOG_DEBUG)
    fprintf(stderr, "argus %s: %s: %s (%s:%d)\n", prog_cmd, names[lvl], msg, file, line);
  else
    fprintf(stderr, "argus %s: %s: %s\n", prog_cmd, names[lvl], msg);
}

/* Matches argv[*i] against opts; returns the option index or -1. Handles
 * --name=value, --name value, -x value. */
static int match_opt(const ag_cli_opt *opts, int argc, char **argv, int *i,
                     const char **val, int *err) {
  const char *a = argv[*i];
  *err = 0;
  for (int k = 0; opts && opts[k].name; k++) {
    const ag_cli_opt *o = &opts[k];
    size_t nl = strlen(o->name);
    int is_long = a[0] == '-' && a[1] == '-' && strncmp(a + 2, o->name, nl) == 0 &&
                  (a[2 + nl] == 0 || a[2 + nl] == '=');
    int is_short = o->shortc && a[0] == '-' && a[1] == o->shortc && a[2] == 0;
    if (!is_long && !is_short)
      continue;
    if (!o->arg) {
      if (is_long && a[2 + nl] == '=') {
        *err = 1;
        return k;
      }
      *val = "1";
      return k;
    }
    if (is_long && a[2 + nl] == '=') {
      *val = a + 3 + nl;
    } else if (o->arg[0] == '[') { /* optional value, given only as --name=value */
      *val = "";
    } else if (*i + 1 < argc) {
      *val = argv[++*i];
    } else {
      *err = 2;
    }
    return k;
  }
  return -1;
}

int main(int argc, char **argv) {
  ag_log_set_sink(stderr_sink, NULL);
  /* a spec naming a .tile file is lowered and run by this argus (docs/harness.md) */
  static char self[4096];
  ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
  if (sl > 0)
    self[sl] = 0;
  ag_spec_set_tile_builder(ag_tile_spec_build, sl > 0 ? self : argv[0]);
  ag_cli cli;
  memset(&cli, 0, sizeof cli);
  int i = 1;
  /* --json anywhere before "--" asks for JSON errors too, even about the
   * options that precede it */
  for (int k = 1; k < argc && strcmp(argv[k], "--"); k++)
    cli.json |= !strcmp(argv[k], "--json");
  /* global options before the command */
  for (; i < argc && argv[i][0] == '-'; i++) {
    const char *val = NULL;
    int err = 0;
    int k = match_opt(global_opts, argc, argv, &i, &val, &err);
    if (k < 0 || err) {
      ag_cli_error(NULL, "unknown or incomplete option '%s'", argv[i]);
      main_usage(stderr);
      return finish(&cli, AG_EXIT_USAGE);
    }
    if (!strcmp(global_opts[k].name, "json")) cli.json = 1;
    else if (!strcmp(global_opts[k].name, "workspace")) cli.workspace = val;
    else if (!strcmp(global_opts[k].name, "verbose")) cli.verbose++;
    else { main_usage(stdout); return AG_EXIT_OK; }
  }
  if (i >= argc) {
    ag_cli_note_error("no command given");
    main_usage(stderr);
    return finish(&cli, AG_EXIT_USAGE);
  }
  if (!strcmp(argv[i], "help")) {
    main_usage(stdout);
    return AG_EXIT_OK;
  }
  for (size_t c = 0; c < NCOMMANDS; c++)
    if (!strcmp(commands[c].name, argv[i]))
      cli.cmd = &commands[c];
  if (!cli.cmd) {
    ag_cli_error(NULL, "unknown command '%s'", argv[i]);
    main_usage(stderr);
    return finish(&cli, AG_EXIT_USAGE);
  }
  prog_cmd = cli.cmd->name;
  if (!cli.cmd->fn) { /* built without the CUDA toolkit */
#ifdef ARGUS_CUDA_HOME_USED
    fprintf(stderr, "argus %s: this argus was built without the CUDA toolkit (none at %s when it "
                    "was configured), which '%s' needs; install the toolkit (README, "
                    "'Prerequisites'), then reconfigure and rebuild\n",
            cli.cmd->name, ARGUS_CUDA_HOME_USED, cli.cmd->name);
#endif
    return AG_EXIT_FAIL;
  }
  int only_pos = 0;
  for (i++; i < argc; i++) {
    const char *a = argv[i];
    if (only_pos || a[0] != '-' || a[1] == 0 || is_negative_number(a)) {
      if (cli.npos >= AG_CLI_MAX_POS)
        return finish(&cli, ag_cli_usage_error(&cli, "too many arguments"));
      cli.pos[cli.npos++] = a;
      continue;
    }
    if (!strcmp(a, "--")) {
      only_pos = 1;
      continue;
    }
    const char *val = NULL;
    int err = 0;
    int k = match_opt(cli.cmd->opts, argc, argv, &i, &val, &err);
    if (k >= 0) {
      if (err == 1)
        return finish(&cli, ag_cli_usage_error(&cli, "option '--%s' takes no value",
                                               cli.cmd->opts[k].name));
      if (err == 2)
        return finish(&cli, ag_cli_usage_error(&cli, "option '%s' needs a value (%s)", a,
                                               cli.cmd->opts[k].arg));
      if (cli.values[k] && val && is_list_opt(&cli.cmd->opts[k])) {
        /* a repeated list option extends the list */
        ag_str *j = list_join(cli.values[k], val);
        if (!j)
          return finish(&cli, ag_cli_fail(&cli, AG_ENOMEM, "cannot join '--%s' values",
                                          cli.cmd->opts[k].name));
        val = ag_str_cstr(j);
      }
      cli.values[k] = val;
      continue;
    }
    k = match_opt(global_opts, argc, argv, &i, &val, &err);
    if (k < 0 || err)
      return finish(&cli, ag_cli_usage_error(&cli, "unknown or incomplete option '%s'", a));
    if (!strcmp(global_opts[k].name, "json")) cli.json = 1;
    else if (!strcmp(global_opts[k].name, "workspace")) cli.workspace = val;
    else if (!strcmp(global_opts[k].name, "verbose")) cli.verbose++;
    else { ag_cli_usage(cli.cmd, stdout); return AG_EXIT_OK; }
  }
  if (!cli.workspace)
    cli.workspace = getenv("ARGUS_WORKSPACE");
  if (!cli.workspace || !*cli.workspace)
    cli.workspace = ".argus";
  ag_log_set_level(AG_LOG_WARN + cli.verbose);
  ag_trace_begin(cli.cmd->name);
  int rc = cli.cmd->fn(&cli);
  ag_trace_end(cli.cmd->name);
  ag_trace_flush();
  return finish(&cli, rc);
}
