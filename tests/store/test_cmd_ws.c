/* test_cmd_ws.c — `argus ws` end to end through the built binary
 * (ARGUS_BIN): every subcommand in text and --json, exit codes 0/1/2, the
 * hash printed by put against a reference SHA-256, corruption reported by
 * check and get (and no corrupted byte on stdout), gc, refs, and the clear
 * errors for a missing workspace and a newer schema. */
#include "util.h"

#include "argus/core.h"
#include "check.h"
#include "store_test.h"

static const char *ws;

static int run(ag_str *out, ag_str *err, const char *a0, ...) {
  const char *argv[32];
  int n = 0;
  const char *b = getenv("ARGUS_BIN");
  argv[n++] = b ? b : "argus";
  argv[n++] = "--workspace";
  argv[n++] = ws;
  va_list ap;
  va_start(ap, a0);
  for (const char *a = a0; a && n < 31; a = va_arg(ap, const char *))
    argv[n++] = a;
  va_end(ap);
  argv[n] = NULL;
  ag_str_clear(out);
  ag_str_clear(err);
  ag_proc_opts o = {.argv = argv, .capture_out = out, .capture_err = err, .timeout_s = 60};
  ag_proc_result r;
  if (ag_proc_run(&o, &r) || !r.exited)
    return -1;
  return r.exit_code;
}

static json_t *parse(const ag_str *out) {
  json_t *j = json_loads(ag_str_cstr(out), 0, NULL);
  if (!j)
    fprintf(stderr, "not JSON:\n%s\n", ag_str_cstr(out));
  return j;
}

#define RUN(...) run(&out, &err, __VA_ARGS__, NULL)

TEST(test_ws_cli) {
  char *dir = scratch_dir("cli");
  char wsbuf[600], file[600], big[600], outf[600];
  snprintf(wsbuf, sizeof wsbuf, "%s/ws", dir);
  ws = wsbuf;
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  /* no workspace yet */
  CHECK_EQ_INT(RUN("ws", "ls"), 1);
  CHECK_CONTAINS(ag_str_cstr(&err), "argus ws init");
  CHECK_EQ_INT(RUN("ws", "init"), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "initialized workspace");
  CHECK_EQ_INT(RUN("--json", "ws", "init"), 0);
  json_t *j = parse(&out);
  CHECK(j && json_is_false(json_object_get(j, "created")));
  json_decref(j);
  /* put: the printed hash is the SHA-256 of the file */
  snprintf(file, sizeof file, "%s/kernel.ptx", dir);
  const char *ptx = ".version 8.0\n.target sm_90a\n.entry gemm() { ret; }\n";
  CHECK_EQ_INT(ag_file_write_atomic(file, ptx, strlen(ptx)), 0);
  char want[65];
  ag_sha256_hex(ptx, strlen(ptx), want);
  CHECK_EQ_INT(RUN("ws", "put", file), 0);
  char line[80];
  snprintf(line, sizeof line, "%s\n", want);
  CHECK_EQ_STR(ag_str_cstr(&out), line);
  CHECK_EQ_INT(RUN("--json", "ws", "put", file), 0);
  j = parse(&out);
  CHECK_EQ_STR(json_string_value(json_object_get(j, "kind")), "ptx");
  CHECK_EQ_STR(json_string_value(json_object_get(j, "hash")), want);
  CHECK_EQ_INT(json_integer_value(json_object_get(j, "size")), (long long)strlen(ptx));
  json_decref(j);
  /* a big compressible one, and a wrong reference that must not match */
  snprintf(big, sizeof big, "%s/trace.bin", dir);
  size_t bn = 3u << 20;
  unsigned char *bb = malloc(bn);
  fill_trace(bb, bn, 11);
  CHECK_EQ_INT(ag_file_write_atomic(big, bb, bn), 0);
  char bigh[65];
  ag_sha256_hex(bb, bn, bigh);
  CHECK_EQ_INT(RUN("ws", "put", "--kind", "evidence", big), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), bigh);
  bb[0] ^= 1;
  char wrong[65];
  ag_sha256_hex(bb, bn, wrong);
  CHECK(strstr(ag_str_cstr(&out), wrong) == NULL);
  bb[0] ^= 1;
  /* get: stdout, a file, a prefix */
  CHECK_EQ_INT(RUN("ws", "get", want), 0);
  CHECK_EQ_STR(ag_str_cstr(&out), ptx);
  snprintf(outf, sizeof outf, "%s/back.bin", dir);
  char prefix[16];
  snprintf(prefix, sizeof prefix, "%.10s", bigh);
  CHECK_EQ_INT(RUN("ws", "get", prefix, "-o", outf), 0);
  char *back = NULL;
  size_t blen = 0;
  CHECK_EQ_INT(ag_file_read(outf, &back, &blen), 0);
  CHECK(blen == bn && memcmp(back, bb, bn) == 0);
  ag_free(back);
  CHECK_EQ_INT(RUN("--json", "ws", "get", want), 2); /* content is not JSON */
  CHECK_EQ_INT(RUN("ws", "get", "0000000000"), 1);
  CHECK_CONTAINS(ag_str_cstr(&err), "no artifact hash starts with");
  /* records made through the library, shown by the CLI */
  ag_store *st = NULL;
  CHECK_EQ_INT(ag_store_open(ws, 0, &st), 0);
  json_t *origin = json_pack("{s:s}", "ptx", "kernel.ptx");
  ag_version_spec vs = {0, want, NULL, origin, 0};
  int64_t v1 = 0, v2 = 0, q = 0;
  CHECK_EQ_INT(ag_store_version_create(st, &vs, &v1), 0);
  json_decref(origin);
  const char *in[] = {want};
  json_t *cfg = json_pack("{s:s}", "backend", "trace");
  ag_store_task_spec ts = {AG_TASK_COLLECT, cfg, in, 1, "gpu0", 0, NULL};
  ag_store_claim c;
  CHECK_EQ_INT(ag_store_task_begin(st, &ts, 0, &c), 0);
  ag_store_output o;
  snprintf(o.name, sizeof o.name, "trace");
  memcpy(o.hash, bigh, 65);
  ag_store_result res = {AG_STORE_TASK_OK, &o, 1, NULL};
  CHECK_EQ_INT(ag_store_task_finish(st, c.task_id, &res), 0);
  ag_version_spec vs2 = {v1, want, "trace", NULL, c.task_id};
  CHECK_EQ_INT(ag_store_version_create(st, &vs2, &v2), 0);
  json_t *qs = json_pack("{s:s}", "region", "gemm/mainloop");
  CHECK_EQ_INT(ag_store_query_add(st, qs, v2, &q), 0);
  json_decref(qs);
  json_decref(cfg);
  ag_store_close(st);
  CHECK_EQ_INT(RUN("ws", "show", "v2"), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "parent    v1");
  CHECK_CONTAINS(ag_str_cstr(&out), "v2 <- v1");
  CHECK_EQ_INT(RUN("--json", "ws", "show", "v2"), 0);
  j = parse(&out);
  CHECK_EQ_STR(json_string_value(json_object_get(j, "record")), "version");
  CHECK_EQ_INT(json_array_size(json_object_get(j, "ancestry")), 2);
  CHECK_EQ_INT(json_integer_value(json_object_get(j, "task")), c.task_id);
  json_decref(j);
  CHECK_EQ_INT(RUN("ws", "show", "t1"), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "status   ok");
  CHECK_CONTAINS(ag_str_cstr(&out), bigh);
  CHECK_EQ_INT(RUN("--json", "ws", "show", "t1"), 0);
  j = parse(&out);
  CHECK_EQ_STR(json_string_value(json_object_get(j, "type")), "collect");
  CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(j, "outputs"), "trace")), bigh);
  json_decref(j);
  CHECK_EQ_INT(RUN("ws", "show", "q1"), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "gemm/mainloop");
  CHECK_EQ_INT(RUN("ws", "show", "t99"), 1);
  CHECK_CONTAINS(ag_str_cstr(&err), "task t99 does not exist");
  CHECK_EQ_INT(RUN("ws", "show"), 2);
  /* refs */
  CHECK_EQ_INT(RUN("ws", "ref", "gemm@baseline", "v1"), 0);
  CHECK_EQ_STR(ag_str_cstr(&out), "gemm@baseline -> v1\n");
  CHECK_EQ_INT(RUN("ws", "ref", "trace@latest", prefix), 0);
  CHECK_EQ_INT(RUN("--json", "ws", "ref"), 0);
  j = parse(&out);
  CHECK_EQ_INT(json_array_size(j), 2);
  json_decref(j);
  CHECK_EQ_INT(RUN("ws", "show", "gemm@baseline"), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "version v1");
  CHECK_EQ_INT(RUN("ws", "ref", "bad name", "v1"), 1);
  CHECK_CONTAINS(ag_str_cstr(&err), "invalid ref name");
  CHECK_EQ_INT(RUN("ws", "ref", "to-task", "t1"), 1);
  CHECK_EQ_INT(RUN("ws", "ref", "--delete"), 2);
  /* ls and log */
  CHECK_EQ_INT(RUN("ws", "ls"), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "artifacts (2,");
  CHECK_CONTAINS(ag_str_cstr(&out), "gemm@baseline");
  CHECK_EQ_INT(RUN("--json", "ws", "ls"), 0);
  j = parse(&out);
  CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(j, "artifacts"), "total")), 2);
  CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(j, "versions"), "total")), 2);
  CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(j, "tasks"), "total")), 1);
  json_decref(j);
  CHECK_EQ_INT(RUN("--json", "ws", "ls", "artifacts", "--kind", "ptx"), 0);
  j = parse(&out);
  CHECK_EQ_INT(json_array_size(json_object_get(json_object_get(j, "artifacts"), "items")), 1);
  CHECK(json_object_get(j, "tasks") == NULL);
  json_decref(j);
  CHECK_EQ_INT(RUN("ws", "ls", "things"), 2);
  CHECK_EQ_INT(RUN("ws", "ls", "--limit", "x"), 2);
  CHECK_EQ_INT(RUN("ws", "init", "--kind", "x"), 2);
  CHECK_CONTAINS(ag_str_cstr(&err), "does not apply");
  CHECK_EQ_INT(RUN("ws", "log"), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "t1 collect ok");
  CHECK_CONTAINS(ag_str_cstr(&out), "ref gemm@baseline -> v1");
  CHECK_EQ_INT(RUN("--json", "ws", "log", "--limit", "2"), 0);
  j = parse(&out);
  CHECK_EQ_INT(json_array_size(j), 2);
  json_decref(j);
  CHECK_EQ_INT(RUN("ws"), 2);
  CHECK_EQ_INT(RUN("ws", "frobnicate"), 2);
  /* check */
  CHECK_EQ_INT(RUN("ws", "check"), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "is sound");
  /* gc */
  char stray[600];
  snprintf(stray, sizeof stray, "%s/stray.txt", dir);
  CHECK_EQ_INT(ag_file_write_atomic(stray, "unreferenced", 12), 0);
  char strayh[65];
  ag_sha256_hex("unreferenced", 12, strayh);
  CHECK_EQ_INT(RUN("ws", "put", stray), 0);
  CHECK_EQ_INT(RUN("ws", "gc"), 0); /* default grace keeps it */
  CHECK_CONTAINS(ag_str_cstr(&out), "removed 0 artifact(s)");
  CHECK_EQ_INT(RUN("ws", "gc", "--dry-run", "--grace", "0"), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "would remove 1 artifact(s)");
  CHECK_CONTAINS(ag_str_cstr(&out), strayh);
  CHECK_EQ_INT(RUN("--json", "ws", "gc", "--grace", "0"), 0);
  j = parse(&out);
  CHECK_EQ_INT(json_array_size(json_object_get(j, "artifacts")), 1);
  json_decref(j);
  CHECK_EQ_INT(RUN("ws", "get", strayh), 1);
  CHECK_EQ_INT(RUN("ws", "gc", "--grace", "-1"), 2);
  /* gc says which failed run directories it removed */
  char rund[800];
  snprintf(rund, sizeof rund, "%s/trace/0123456789abcdef-1700000000-999999999", ws);
  CHECK_EQ_INT(ag_mkdir_p(rund, 0755), 0);
  CHECK_EQ_INT(RUN("ws", "gc", "--grace", "0"), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "removed failed run directory");
  CHECK_CONTAINS(ag_str_cstr(&out), "0123456789abcdef-1700000000-999999999");
  CHECK_CONTAINS(ag_str_cstr(&out), "1 failed run directory");
  CHECK(access(rund, F_OK) != 0);
  /* corruption: check exits 1, get prints nothing and fails */
  char obj[800];
  snprintf(obj, sizeof obj, "%s/objects/%.2s/%s", ws, bigh, bigh + 2);
  chmod(obj, 0644);
  FILE *f = fopen(obj, "r+b");
  CHECK(f != NULL);
  if (f) {
    fseek(f, 1000, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, 1000, SEEK_SET);
    fputc(ch ^ 0x10, f);
    fclose(f);
  }
  CHECK_EQ_INT(RUN("ws", "check"), 1);
  CHECK_CONTAINS(ag_str_cstr(&out), "problem: ");
  CHECK_CONTAINS(ag_str_cstr(&out), bigh);
  CHECK_EQ_INT(RUN("--json", "ws", "check"), 1);
  j = parse(&out);
  CHECK(json_is_false(json_object_get(j, "ok")));
  CHECK_EQ_INT(json_array_size(json_object_get(j, "problems")), 1);
  json_decref(j);
  CHECK_EQ_INT(RUN("ws", "get", bigh), 1);
  CHECK_EQ_INT(out.len, 0);
  CHECK_CONTAINS(ag_str_cstr(&err), "corrupted");
  /* a workspace from a newer argus */
  CHECK_EQ_INT(ag_store_open(ws, 0, &st), 0);
  CHECK_EQ_INT(ag__store_exec(st, "INSERT INTO schema_version VALUES(7, 0, 'x')"), 0);
  ag_store_close(st);
  CHECK_EQ_INT(RUN("ws", "ls"), 1);
  CHECK_CONTAINS(ag_str_cstr(&err), "workspace schema 7 is newer than this argus");
  /* a zero-length database beside blob files: nothing initializes over it */
  char db[800];
  snprintf(db, sizeof db, "%s/workspace.db", ws);
  CHECK_EQ_INT(truncate(db, 0), 0);
  const char *cmds[][2] = {{"init", NULL}, {"ls", NULL}, {"check", NULL}};
  for (int i = 0; i < 3; i++) {
    CHECK_EQ_INT(RUN("ws", cmds[i][0]), 1);
    CHECK_CONTAINS(ag_str_cstr(&err), "will not initialize over it");
  }
  struct stat sb;
  CHECK(stat(db, &sb) == 0 && sb.st_size == 0);
  free(bb);
  ag_str_release(&out);
  ag_str_release(&err);
  rm_rf(dir);
  free(dir);
}

RUN_TESTS(T(test_ws_cli))
