/*
 * cli.h — the argus command-line framework: commands and their options are
 * declared as data (one table in main.c, one option array per cmd_<name>.c),
 * and usage text is generated from them. Commands print; the library does not.
 */
#ifndef ARGUS_CLI_H
#define ARGUS_CLI_H

#include "argus/core.h"

enum { AG_EXIT_OK = 0, AG_EXIT_FAIL = 1, AG_EXIT_USAGE = 2 };

typedef struct ag_cli_opt {
  const char *name; /* long name without dashes */
  char shortc;      /* 0 if none */
  const char *arg;  /* metavariable, NULL for a flag; "[=NAME]": an optional value,
                       given as --name=value only ("" when absent) */
  const char *help;
} ag_cli_opt;

#define AG_CLI_MAX_OPTS 32
#define AG_CLI_MAX_POS 64

typedef struct ag_cli {
  const struct ag_cli_cmd *cmd;
  const char *values[AG_CLI_MAX_OPTS]; /* NULL: not given; flags get "1" */
  const char *pos[AG_CLI_MAX_POS];
  int npos;
  /* global options, valid for every command */
  int json;
  int verbose;
  const char *workspace; /* --workspace, ARGUS_WORKSPACE, or ".argus" */
} ag_cli;

typedef int (*ag_cli_fn)(ag_cli *cli);

enum { AG_CMD_NEEDS_WORKSPACE = 1 };

typedef struct ag_cli_cmd {
  const char *name;
  ag_cli_fn fn;
  unsigned flags;
  const char *synopsis; /* "[options] SPEC" */
  const char *summary;  /* one line */
  const char *details;  /* optional paragraph(s) for --help */
  const ag_cli_opt *opts; /* terminated by {0} */
} ag_cli_cmd;

/* Value of option `name` (NULL if absent). */
const char *ag_cli_get(const ag_cli *cli, const char *name);
int ag_cli_flag(const ag_cli *cli, const char *name);
/* Prints usage for cmd to f. */
void ag_cli_usage(const ag_cli_cmd *cmd, FILE *f);
/* Reports a usage error on stderr and returns AG_EXIT_USAGE. */
int ag_cli_usage_error(const ag_cli *cli, const char *fmt, ...) AG_PRINTF(2, 3);
/* Reports a failure: "argus CMD: msg: error text", returns AG_EXIT_FAIL. */
int ag_cli_fail(const ag_cli *cli, int err, const char *fmt, ...) AG_PRINTF(3, 4);
/* Reports a failure over what the user gave (a file that cannot be read, is
 * a directory or is malformed; an unknown name): like ag_cli_fail, but
 * returns ag_cli_input_exit(err). */
int ag_cli_fail_input(const ag_cli *cli, int err, const char *fmt, ...) AG_PRINTF(3, 4);
/* AG_EXIT_USAGE for an error that means the input is wrong (AG_EPARSE,
 * AG_EINVAL, AG_ENOTFOUND, AG_EISDIR, AG_EIO, AG_ERANGE, AG_ECORRUPT), else
 * AG_EXIT_FAIL. */
int ag_cli_input_exit(int err);
/* Reports "argus CMD: msg" on stderr (and for --json). */
void ag_cli_error(const ag_cli *cli, const char *fmt, ...) AG_PRINTF(2, 3);
/* Moves out what was reported since the last call (the first message, or
 * NULL; the diagnostics' JSON array, or NULL): `argus mcp` puts them in a
 * tool's result. Both owned (ag_free, json_decref). */
void ag_cli_take_errors(char **msg, json_t **diags);
/* Records an error message already printed, for the --json error object. */
void ag_cli_note_error(const char *msg);
/* 0 when path names a readable file; else reports why ("cannot read 'x': no
 * such file") and returns AG_EXIT_USAGE. */
int ag_cli_input_file(const ag_cli *cli, const char *path);
/* Prints diagnostics to stderr (and keeps them for the --json error). */
void ag_cli_print_diags(const ag_diags *d);
/* Prints a JSON value to stdout (indented), with a newline. With --json, a
 * command that fails without printing JSON gets the error object instead:
 * {"schema": "argus.error/1", "command", "exit_code", "error", "diagnostics"}. */
int ag_cli_print_json(json_t *j);

/* Subcommands (one file each). */
int cmd_version(ag_cli *cli);
int cmd_doctor(ag_cli *cli);
int cmd_ptx(ag_cli *cli);
int cmd_regions(ag_cli *cli);
int cmd_variant(ag_cli *cli);
int cmd_trace(ag_cli *cli);
int cmd_layout(ag_cli *cli); extern const ag_cli_opt cmd_layout_opts[]; extern const char cmd_layout_details[];
int cmd_check(ag_cli *cli); extern const ag_cli_opt cmd_check_opts[]; extern const char cmd_check_details[];
int cmd_lower(ag_cli *cli); extern const ag_cli_opt cmd_lower_opts[]; extern const char cmd_lower_details[];
int cmd_run(ag_cli *cli); extern const ag_cli_opt cmd_run_opts[]; extern const char cmd_run_details[];
int cmd_optimize(ag_cli *cli); extern const ag_cli_opt cmd_optimize_opts[]; extern const char cmd_optimize_details[];
int cmd_mcp(ag_cli *cli); extern const ag_cli_opt cmd_mcp_opts[]; extern const char cmd_mcp_details[];
struct ag_tile_program;
struct ag_tile_lowered;
/* cmd_lower.c: check the parsed program p of FILE (refused when an assertion
 * is not proved), and lower it (*low on 0); an exit code. */
int ag_cli_check_program(ag_cli *cli, const char *file, const struct ag_tile_program *p,
                         const char *const *defs, int ndefs);
int ag_cli_lower_program(ag_cli *cli, const char *file, const struct ag_tile_program *p,
                         const char *const *defs, int ndefs, const char *kernel, int no_markers,
                         struct ag_tile_lowered **low);
/* Parses --set NAME=INTEGER[,...] into defs (pointers into *copy, which the
 * caller frees); 0, or the exit code of a usage error already reported. */
int ag_cli_sets(ag_cli *cli, const char **defs, int max, int *n, char **copy);

extern const ag_cli_opt cmd_version_opts[];
extern const ag_cli_opt cmd_doctor_opts[];
extern const ag_cli_opt cmd_ptx_opts[];
extern const ag_cli_opt cmd_regions_opts[];
extern const ag_cli_opt cmd_variant_opts[];
extern const ag_cli_opt cmd_trace_opts[];

struct ag_spec;
/* Shared by regions, variant and trace (cmd_variant.c): the PTX of a spec,
 * .ptx or .cu (compiled with cu_flags when not NULL, else the spec's or the
 * default flags). Returns an exit code: 0, or the failure reported (2 for a
 * file that cannot be read or a malformed spec, 1 for a failed compilation). */
int ag_cli_module_ptx(const ag_cli *cli, const char *in, const char *const *cu_flags,
                      ag_diags *d, ag_str *ptx, struct ag_spec **spec_out);
char **ag_cli_split_list(const char *s, int *n);
/* Shared by regions and mcp (cmd_regions.c): the regions of a spec, .ptx or
 * .cu file (flags: nvcc flags, blank-separated, or NULL) as JSON (*json,
 * owned) and/or text (appended); either may be NULL. An exit code; a
 * failure is reported (warnings too, after success). */
int ag_cli_regions(ag_cli *cli, const char *in, const char *flags, json_t **json,
                   ag_str *text);
void ag_cli_free_list(char **v);
int cmd_ws(ag_cli *cli); extern const ag_cli_opt cmd_ws_opts[]; extern const char cmd_ws_details[];

int cmd_observe(ag_cli *cli);
int cmd_plan(ag_cli *cli);
extern const ag_cli_opt cmd_observe_opts[], cmd_plan_opts[];
struct ag_observe_opts;
/* Shared by observe and plan (cmd_observe.c): the query options. */
int ag_cli_query(ag_cli *cli, int plan_only, struct ag_observe_opts *o, char ***sigs_out,
                 const char **spec_out);

#endif
