/*
 * test_cli_errors.c — what every argus command says when it fails: the exit
 * code of docs/cli.md (2: usage, a missing/unreadable/directory file,
 * malformed input; 1: the command ran and failed), the same message for a
 * missing file in every command, and, with --json, an error object on
 * stdout (never empty output). Runs the built binary (ARGUS_BIN) on files
 * it writes to a scratch directory; needs no GPU and no nvcc.
 */
#include "argus/core.h"
#include "check.h"

#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/argus-clierr-XXXXXX";

static void remove_dir(void) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd))
    fprintf(stderr, "cannot remove %s\n", dir);
}

/* The scratch directory, made on first use and removed at exit. */
static void scratch(void) {
  static int made;
  if (made++)
    return;
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    exit(1);
  }
  atexit(remove_dir);
}

static const char *bin(void) {
  const char *b = getenv("ARGUS_BIN");
  return b ? b : "argus";
}

/* dir/name, in one of 16 rotating buffers */
static const char *path(const char *name) {
  static char buf[16][512];
  static int k;
  char *b = buf[k++ % 16];
  scratch();
  snprintf(b, 512, "%s/%s", dir, name);
  return b;
}

static const char *put(const char *name, const char *text, size_t len) {
  const char *p = path(name);
  CHECK_EQ_INT(ag_file_write_atomic(p, text, len), 0);
  return p;
}

static const char *put_s(const char *name, const char *text) {
  return put(name, text, strlen(text));
}

static int run_argv(ag_str *out, ag_str *err, const char **argv);

/* Runs argus with the NULL-terminated arguments; returns the exit code. */
static int argus(ag_str *out, ag_str *err, ...) {
  const char *argv[32];
  int n = 0;
  argv[n++] = bin();
  va_list ap;
  va_start(ap, err);
  for (const char *a; n < 31 && (a = va_arg(ap, const char *));)
    argv[n++] = a;
  va_end(ap);
  argv[n] = NULL;
  return run_argv(out, err, argv);
}

/* argus [pre] a... [post] (a NULL-terminated, pre and post may be NULL). */
static int argus_case(ag_str *out, ag_str *err, const char *pre, const char *const *a,
                      const char *post) {
  const char *argv[32];
  int n = 0;
  argv[n++] = bin();
  if (pre)
    argv[n++] = pre;
  for (; *a && n < 30; a++)
    argv[n++] = *a;
  if (post)
    argv[n++] = post;
  argv[n] = NULL;
  return run_argv(out, err, argv);
}

static int run_argv(ag_str *out, ag_str *err, const char **argv) {
  ag_str_clear(out);
  ag_str_clear(err);
  char ws[600];
  scratch();
  snprintf(ws, sizeof ws, "ARGUS_WORKSPACE=%s/ws", dir);
  const char *env[] = {ws, "ARGUS_PTX_CACHE=0", NULL};
  ag_proc_opts o = {.argv = argv, .env_add = env, .capture_out = out, .capture_err = err,
                    .timeout_s = 60};
  ag_proc_result r;
  if (ag_proc_run(&o, &r) || !r.exited)
    return -1;
  return r.exit_code;
}

/* Case i, argv a, exits with code (says which case when not). */
static void expect_exit(ag_str *out, ag_str *err, const char *const *a, int code, size_t i) {
  int rc = argus_case(out, err, NULL, a, NULL);
  if (rc != code)
    fprintf(stderr, "case %zu (%s): exit %d\n%s", i, a[0], rc, ag_str_cstr(err));
  CHECK_EQ_INT(rc, code);
}

/* The --json error object on stdout: the schema, the exit code, an error
 * message containing want; returns it (owned) for more checks. */
static json_t *error_object(const ag_str *out, int code, const char *want) {
  json_error_t je;
  json_t *j = json_loads(ag_str_cstr(out), 0, &je);
  if (!j)
    fprintf(stderr, "stdout is not JSON (%s):\n%s\n", je.text, ag_str_cstr(out));
  CHECK(json_is_object(j));
  CHECK_EQ_STR(json_string_value(json_object_get(j, "schema")), "argus.error/1");
  CHECK_EQ_INT(json_integer_value(json_object_get(j, "exit_code")), code);
  const char *e = json_string_value(json_object_get(j, "error"));
  CHECK(e != NULL);
  CHECK_CONTAINS(e ? e : "", want);
  CHECK(json_is_array(json_object_get(j, "diagnostics")));
  return j;
}

#define HDR ".version 8.4\n.target sm_90a\n.address_size 64\n"

/* ------------------------------------------------------------------ tests */

/* A missing file, a directory: exit 2 and the same words in every command
 * that reads a file; with --json, the error object. */
TEST(missing_file_every_command) {
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  const char *nf = path("nothere.ptx"), *nj = path("nothere.json");
  const char *d = path("adir.ptx");
  CHECK_EQ_INT(mkdir(d, 0755), 0);
  struct {
    const char *argv[7];
    const char *file;
  } cases[] = {
      {{"ptx", nf}, nf},
      {{"regions", nf}, nf},
      {{"variant", "--kind", "traced", nf}, nf},
      {{"trace", nj}, nj},
      {{"trace", "--evidence", nj}, nj},
      {{"plan", nj, "--region", "a"}, nj},
      {{"observe", nj, "--region", "a"}, nj},
      {{"check", path("nothere.tile")}, NULL},
      {{"ws", "put", nf}, nf},
      {{"ptx", d}, d},
      {{"regions", d}, d},
      {{"check", d}, d},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *const *a = cases[i].argv;
    expect_exit(&out, &err, a, 2, i);
    const char *f = cases[i].file ? cases[i].file : a[1];
    char want[700];
    snprintf(want, sizeof want, "cannot read '%s': %s", f,
             f == d ? "it is a directory, not a file" : "no such file");
    CHECK_CONTAINS(ag_str_cstr(&err), want);
    CHECK_EQ_INT(out.len, 0);
    /* the same with --json: the object on stdout */
    int rc = argus_case(&out, &err, "--json", a, NULL);
    CHECK_EQ_INT(rc, 2);
    json_t *j = error_object(&out, 2, want);
    CHECK_EQ_STR(json_string_value(json_object_get(j, "command")), a[0]);
    json_decref(j);
  }
  /* a spec whose module file is missing: exit 2 before anything runs */
  const char *spec = put_s("nomod.json", "{\"name\": \"x\", \"module\": {\"ptx\": \"gone.ptx\"}}");
  CHECK_EQ_INT(argus(&out, &err, "plan", spec, "--region", "a", NULL), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "gone.ptx");
  CHECK_CONTAINS(ag_str_cstr(&err), "no such file");
  CHECK_EQ_INT(argus(&out, &err, "regions", spec, NULL), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "cannot read the PTX: no such file");
  rmdir(d);
  ag_str_release(&out);
  ag_str_release(&err);
}

/* Malformed input exits 2 in every command; --json gives the error object
 * with the diagnostics. */
TEST(malformed_input_exits_2) {
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  const char *bad = put_s("bad.ptx", HDR ".visible .entry k()\n{\n\tadd.s32 %r1, , 1;\n}\n");
  const char *badmk =
      put_s("badmk.ptx", HDR ".visible .entry k()\n{\n\t// @argus begin - a\n\tret;\n}\n");
  const char *badspec = put_s("badspec.json", "{\"name\": \"x\",\n \"modul\": {}}\n");
  const char *badev = put_s("badev.json", "{\"schema\": 1}");
  const char *badtile = put_s("bad.tile", "kernel k( {\n");
  struct {
    const char *argv[8];
    const char *err;
  } cases[] = {
      {{"ptx", bad}, "unexpected"},
      {{"regions", bad}, "unexpected"},
      {{"variant", "--kind", "traced", bad}, "unexpected"},
      {{"regions", badmk}, "has no end"},
      {{"variant", "--kind", "traced", badmk}, "has no end"},
      {{"regions", badspec}, "unknown key 'modul'"},
      {{"variant", "--kind", "trace-free", badspec}, "unknown key 'modul'"},
      {{"trace", badspec}, "unknown key 'modul'"},
      {{"plan", badspec, "--region", "a"}, "unknown key 'modul'"},
      {{"observe", badspec, "--region", "a"}, "unknown key 'modul'"},
      {{"trace", "--evidence", badev}, ""},
      {{"check", badtile}, ""},
      {{"layout", "compose", "(2,4", "3:1"}, ""},
      {{"layout", "swizzle", "3", "4", "x", "200"}, ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *const *a = cases[i].argv;
    expect_exit(&out, &err, a, 2, i);
    CHECK_CONTAINS(ag_str_cstr(&err), cases[i].err);
    int rc = argus_case(&out, &err, "--json", a, NULL);
    CHECK_EQ_INT(rc, 2);
    json_t *j = json_loads(ag_str_cstr(&out), 0, NULL);
    if (!json_is_object(j))
      fprintf(stderr, "case %zu (%s): --json stdout is not an object:\n%s\n", i, a[0],
              ag_str_cstr(&out));
    CHECK(json_is_object(j));
    CHECK(json_is_string(json_object_get(j, "error")));
    json_t *dg = json_object_get(j, "diagnostics");
    CHECK(json_is_array(dg));
    /* the diagnostics that explain it travel in the object */
    int found = !cases[i].err[0];
    for (size_t k = 0; k < json_array_size(dg); k++) {
      const char *m = json_string_value(json_object_get(json_array_get(dg, k), "message"));
      found |= m && strstr(m, cases[i].err) != NULL;
    }
    CHECK(found);
    json_decref(j);
  }
  ag_str_release(&out);
  ag_str_release(&err);
}

/* Usage errors of every command, with --json: an object, never nothing. */
TEST(json_usage_errors_every_command) {
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  struct {
    const char *argv[5];
    const char *err;
  } cases[] = {
      {{"version", "extra"}, "unexpected argument 'extra'"},
      {{"doctor", "extra"}, "unexpected argument 'extra'"},
      {{"ptx"}, "expected one PTX file"},
      {{"regions"}, "expected one"},
      {{"variant", "x.ptx"}, "--kind"},
      {{"trace"}, "expected one program spec"},
      {{"plan", "x.json"}, "--region NAME is required"},
      {{"observe", "x.json"}, "--region NAME is required"},
      {{"ws", "frob"}, "unknown subcommand 'frob'"},
      {{"layout", "frob"}, "unknown subcommand 'frob'"},
      {{"check"}, "expected a FILE"},
      {{"ptx", "--bogus", "x"}, "unknown or incomplete option '--bogus'"},
      {{"frobnicate"}, "unknown command 'frobnicate'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *const *a = cases[i].argv;
    CHECK_EQ_INT(argus_case(&out, &err, NULL, a, NULL), 2);
    CHECK_CONTAINS(ag_str_cstr(&err), cases[i].err);
    /* --json after the bad option too */
    CHECK_EQ_INT(argus_case(&out, &err, NULL, a, "--json"), 2);
    json_decref(error_object(&out, 2, cases[i].err));
  }
  /* a failure of a command that ran (exit 1) gives the object too */
  CHECK_EQ_INT(argus(&out, &err, "ws", "init", NULL), 0);
  CHECK_EQ_INT(argus(&out, &err, "--json", "ws", "show", "v999", NULL), 1);
  json_decref(error_object(&out, 1, "v999"));
  /* a command that fails after printing its JSON result keeps the result */
  CHECK_EQ_INT(argus(&out, &err, "--json", "check", put_s("v.tile", "kernel k( {\n"), NULL), 2);
  json_t *j = json_loads(ag_str_cstr(&out), 0, NULL);
  CHECK_EQ_STR(json_string_value(json_object_get(j, "verdict")), "malformed");
  CHECK(json_is_string(json_object_get(j, "error")));
  json_decref(j);
  ag_str_release(&out);
  ag_str_release(&err);
}

/* Negative numbers are operands; "--" ends the options. */
TEST(negative_operands) {
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  /* Swizzle<3,4,-3>(200) = 200 ^ ((200 & 0x70) << 3) = 712 */
  CHECK_EQ_INT(argus(&out, &err, "layout", "swizzle", "3", "4", "-3", "200", NULL), 0);
  CHECK_EQ_STR(ag_str_cstr(&out), "712\n");
  CHECK_EQ_INT(argus(&out, &err, "layout", "swizzle", "--", "3", "4", "-3", "200", NULL), 0);
  CHECK_EQ_STR(ag_str_cstr(&out), "712\n");
  /* deliberately wrong: a dash word that is not a number is still an option */
  CHECK_EQ_INT(argus(&out, &err, "layout", "swizzle", "3", "4", "-x", "200", NULL), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "unknown or incomplete option '-x'");
  ag_str_release(&out);
  ag_str_release(&err);
}

/* --help of variant names every kind; a bad --op lists the probe sites on
 * short lines and exits 2. */
TEST(variant_help_and_bad_op) {
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  CHECK_EQ_INT(argus(&out, &err, "variant", "--help", NULL), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "trace-free|traced|probe|mapping");
  CHECK_CONTAINS(ag_str_cstr(&out), "--op OPID");
  /* 30 cp.async sites: more than are listed */
  ag_str t = AG_STR_INIT;
  ag_str_puts(&t, HDR ".visible .entry k(.param .u64 p)\n{\n\t.reg .b32 %r<2>;\n"
                  "\t.reg .b64 %rd<2>;\n\tld.param.u64 %rd1, [p];\n\tmov.u32 %r1, 0;\n");
  for (int i = 0; i < 30; i++)
    ag_str_puts(&t, "\tcp.async.cg.shared.global [%r1], [%rd1], 16;\n"
                    "\tcp.async.commit_group;\n\tcp.async.wait_group 0;\n");
  ag_str_puts(&t, "\tret;\n}\n");
  const char *p = put("sites.ptx", t.p, t.len);
  CHECK_EQ_INT(argus(&out, &err, "variant", "--kind", "probe", "--op", "nope", p, NULL), 2);
  const char *e = ag_str_cstr(&err);
  CHECK_CONTAINS(e, "no site 'nope' in the module");
  CHECK_CONTAINS(e, "note: probe site ");
  CHECK_CONTAINS(e, ": cp_async at line 10");
  CHECK_CONTAINS(e, "... and 18 more");
  int lines = 0;
  size_t longest = 0;
  for (const char *q = e; *q;) {
    const char *nl = strchr(q, '\n');
    size_t l = nl ? (size_t)(nl - q) : strlen(q);
    longest = l > longest ? l : longest;
    lines++;
    q += l + (nl ? 1 : 0);
  }
  if (longest > 200)
    fprintf(stderr, "a line of %zu characters:\n%s", longest, e);
  CHECK(longest <= 200);
  CHECK(lines >= 14);
  ag_str_release(&t);
  ag_str_release(&out);
  ag_str_release(&err);
}

/* plan --scope role=R: R must be a role of the module; the message lists
 * the roles it has. */
TEST(plan_scope_role) {
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  put_s("roles.ptx", HDR ".visible .entry k()\n{\n\t// @argus role - producer\n"
                         "\t// @argus begin - a\n\tmov.u32 %r1, 1;\n\t// @argus end - a\n"
                         "\t// @argus role - consumer\n\tret;\n}\n");
  const char *spec =
      put_s("roles.json", "{\"name\": \"roles\", \"module\": {\"ptx\": \"roles.ptx\"}}");
  CHECK_EQ_INT(argus(&out, &err, "plan", spec, "--region", "a", "--scope", "role=nosuchrole",
                     NULL),
               1);
  CHECK_CONTAINS(ag_str_cstr(&err),
                 "unknown role 'nosuchrole' in the scope: the roles of roles are producer, "
                 "consumer");
  /* deliberately right: a role the module has plans */
  CHECK_EQ_INT(argus(&out, &err, "plan", spec, "--region", "a", "--scope", "role=consumer",
                     NULL),
               0);
  /* and the cached discovery checks it again */
  CHECK_EQ_INT(argus(&out, &err, "plan", spec, "--region", "a", "--scope", "role=nosuchrole",
                     NULL),
               1);
  CHECK_CONTAINS(ag_str_cstr(&err), "unknown role 'nosuchrole'");
  /* a module without role markers says so */
  put_s("noroles.ptx", HDR ".visible .entry k()\n{\n\t// @argus begin - a\n"
                           "\tmov.u32 %r1, 1;\n\t// @argus end - a\n\tret;\n}\n");
  spec = put_s("noroles.json", "{\"name\": \"nr\", \"module\": {\"ptx\": \"noroles.ptx\"}}");
  CHECK_EQ_INT(argus(&out, &err, "plan", spec, "--region", "a", "--scope", "role=producer", NULL),
               1);
  CHECK_CONTAINS(ag_str_cstr(&err), "nr has no role markers");
  ag_str_release(&out);
  ag_str_release(&err);
}

RUN_TESTS(T(missing_file_every_command), T(malformed_input_exits_2),
          T(json_usage_errors_every_command), T(negative_operands), T(variant_help_and_bad_op),
          T(plan_scope_role))
