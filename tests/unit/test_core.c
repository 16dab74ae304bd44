/* test_core.c — unit tests for src/core: errors, allocation fault hook,
 * arena, strings, vectors, maps, diagnostics, SHA-256, JSON, files,
 * processes. */
#include "argus/core.h"
#include "check.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

TEST(test_errors) {
  CHECK_EQ_STR(ag_err_name(AG_ENOMEM), "AG_ENOMEM");
  CHECK_EQ_STR(ag_strerror(AG_ENOMEM), "out of memory");
  CHECK_EQ_STR(ag_err_name(AG_OK), "AG_OK");
  CHECK_EQ_STR(ag_strerror(12345), "unknown error");
  CHECK(AG_ENOMEM < 0 && AG_EFULL < 0);
  /* every code has a distinct name */
  CHECK(strcmp(ag_err_name(AG_EPARSE), ag_err_name(AG_EIO)) != 0);
}

TEST(test_alloc_fail) {
  ag_alloc_fail_at(2);
  void *a = ag_malloc(10);
  void *b = ag_malloc(10);
  void *c = ag_malloc(10);
  CHECK(a != NULL);
  CHECK(b == NULL);
  CHECK(c != NULL);
  ag_free(a);
  ag_free(c);
  ag_alloc_fail_at(0);
}

TEST(test_arena) {
  ag_arena a;
  ag_arena_init(&a, 128);
  char *s = ag_arena_strdup(&a, "hello");
  CHECK_EQ_STR(s, "hello");
  for (int i = 0; i < 1000; i++) {
    int *p = ag_arena_alloc(&a, sizeof(int) * 3);
    CHECK(p && ((uintptr_t)p & 15) == 0 && p[0] == 0);
  }
  char *big = ag_arena_alloc(&a, 10000);
  CHECK(big != NULL);
  CHECK_EQ_STR(ag_arena_printf(&a, "%d-%s", 42, "x"), "42-x");
  CHECK_EQ_STR(s, "hello");
  ag_arena_release(&a);
}

TEST(test_str) {
  ag_str s = AG_STR_INIT;
  CHECK_EQ_STR(ag_str_cstr(&s), "");
  ag_str_puts(&s, "abc");
  ag_str_printf(&s, "-%d-", 7);
  for (int i = 0; i < 100; i++)
    ag_str_printf(&s, "%0100d", i);
  CHECK_EQ_INT(s.len, 3 + 3 + 100 * 100);
  CHECK(strncmp(s.p, "abc-7-000", 9) == 0);
  ag_str_clear(&s);
  ag_str_json_quote(&s, "a\"b\\c\n\x01");
  CHECK_EQ_STR(ag_str_cstr(&s), "\"a\\\"b\\\\c\\n\\u0001\"");
  char *d = ag_str_detach(&s);
  CHECK(s.p == NULL && s.len == 0);
  ag_free(d);
  /* OOM leaves the contents intact and sets the sticky flag */
  ag_str t = AG_STR_INIT;
  ag_str_puts(&t, "keep");
  ag_alloc_fail_at(1);
  char junk[200];
  memset(junk, 'x', sizeof junk);
  CHECK_EQ_INT(ag_str_append(&t, junk, sizeof junk), AG_ENOMEM);
  ag_alloc_fail_at(0);
  CHECK(t.oom);
  CHECK_EQ_STR(ag_str_cstr(&t), "keep");
  ag_str_release(&t);
}

/* ag_str_suggest's text for word among names; "(n named)" appended when the
 * count it returns is not the number of names in the text. */
static const char *suggest(const char *word, const char *const *names, size_t n) {
  static char buf[256];
  ag_str s = AG_STR_INIT;
  int k = ag_str_suggest(&s, word, names, n), quoted = 0;
  for (const char *p = ag_str_cstr(&s); *p; p++)
    quoted += *p == '\'';
  snprintf(buf, sizeof buf, "%s", ag_str_cstr(&s));
  if (quoted != 2 * k)
    snprintf(buf + strlen(buf), sizeof buf - strlen(buf), " (%d named)", k);
  ag_str_release(&s);
  return buf;
}

/* "did you mean": the edit distance against hand-counted cases, and the
 * names suggested for mistyped ones (none for a word far from all) */
TEST(test_suggest) {
  CHECK_EQ_U64(ag_edit_distance("", "abc"), 3);
  CHECK_EQ_U64(ag_edit_distance("abc", ""), 3);
  CHECK_EQ_U64(ag_edit_distance("abc", "abc"), 0);
  CHECK_EQ_U64(ag_edit_distance("kitten", "sitting"), 3);
  CHECK_EQ_U64(ag_edit_distance("ab", "ba"), 1); /* a transposition, not 2 substitutions */
  CHECK_EQ_U64(ag_edit_distance("sytsem", "system"), 1);
  CHECK_EQ_U64(ag_edit_distance("duraton", "duration"), 1);
  CHECK_EQ_U64(ag_edit_distance("ca", "abc"), 3); /* OSA: no edit of a transposed pair */
  static const char *const sigs[] = {"duration", "occurrences", "timeline", "static",
                                     "async_latency", "ownership", "inst_mix", "barriers",
                                     "branch", "stalls", "system"};
  const size_t n = sizeof sigs / sizeof sigs[0];
  CHECK_EQ_STR(suggest("duraton", sigs, n), "did you mean 'duration'?");
  CHECK_EQ_STR(suggest("inst-mix", sigs, n), "did you mean 'inst_mix'?");
  /* a word a name begins with: that name */
  CHECK_EQ_STR(suggest("async", sigs, n), "did you mean 'async_latency'?");
  /* a letter left out: 'static' (3 edits) is too far for 5 letters */
  CHECK_EQ_STR(suggest("stals", sigs, n), "did you mean 'stalls'?");
  /* at most 3, the earlier first among equals ('abc' is as close as they) */
  static const char *const close[] = {"abcd", "abce", "abcf", "abdd", "xbcd", "abc"};
  CHECK_EQ_STR(suggest("abcx", close, 6), "did you mean 'abcd', 'abce' or 'abcf'?");
  /* the closest first, then the earlier; a name listed twice is named once */
  static const char *const order[] = {"stalls", "status", "static", "static", NULL};
  CHECK_EQ_STR(suggest("statc", order, 5), "did you mean 'static' or 'status'?");
  /* far from every name, or too short to be close to any: nothing */
  CHECK_EQ_STR(suggest("bogus", sigs, n), "");
  CHECK_EQ_STR(suggest("x", sigs, n), "");
  CHECK_EQ_STR(suggest("", sigs, n), "");
  CHECK_EQ_STR(suggest("static", sigs, n), ""); /* itself is no suggestion */
}

TEST(test_vec) {
  AG_VEC(int) v = {0};
  for (int i = 0; i < 1000; i++)
    CHECK_EQ_INT(ag_vec_push(&v, i * 2), 0);
  CHECK_EQ_INT(v.n, 1000);
  CHECK_EQ_INT(v.v[999], 1998);
  ag_alloc_fail_at(1);
  AG_VEC(int) w = {0};
  CHECK_EQ_INT(ag_vec_push(&w, 1), AG_ENOMEM);
  ag_alloc_fail_at(0);
  CHECK_EQ_INT(w.n, 0);
  ag_vec_free(&v);
}

TEST(test_map) {
  ag_map m;
  ag_map_init(&m);
  char key[32];
  static int vals[5000];
  for (int i = 0; i < 5000; i++) {
    snprintf(key, sizeof key, "k%d", i);
    vals[i] = i;
    CHECK_EQ_INT(ag_map_put_str(&m, key, &vals[i]), 0);
  }
  CHECK_EQ_INT(m.count, 5000);
  for (int i = 0; i < 5000; i += 2) {
    snprintf(key, sizeof key, "k%d", i);
    CHECK_EQ_INT(ag_map_del(&m, key, strlen(key)), 0);
  }
  CHECK_EQ_INT(m.count, 2500);
  CHECK(ag_map_get_str(&m, "k0") == NULL);
  int *p = ag_map_get_str(&m, "k4999");
  CHECK(p && *p == 4999);
  CHECK_EQ_INT(ag_map_del(&m, "k0", 2), AG_ENOTFOUND);
  /* overwrite keeps count */
  ag_map_put_str(&m, "k1", &vals[7]);
  CHECK_EQ_INT(*(int *)ag_map_get_str(&m, "k1"), 7);
  CHECK_EQ_INT(m.count, 2500);
  size_t it = 0, n = 0;
  const void *k;
  size_t kl;
  void *v;
  while (ag_map_next(&m, &it, &k, &kl, &v))
    n++;
  CHECK_EQ_INT(n, 2500);
  /* binary keys with NUL bytes */
  uint64_t bk = 0x0100;
  ag_map_put(&m, &bk, sizeof bk, &vals[1]);
  CHECK(ag_map_get(&m, &bk, sizeof bk) == &vals[1]);
  ag_map_release(&m);
}

TEST(test_diags) {
  ag_diags d;
  ag_diags_init(&d);
  const char *src = "line one\n\tbad token here\nthree";
  size_t ll;
  const char *l2 = ag_text_line(src, strlen(src), 2, &ll);
  CHECK_EQ_INT(ll, 15);
  ag_diags_add(&d, AG_SEV_ERROR, "k.ptx", 2, 6, l2, ll, "unexpected '%s'", "token");
  ag_str out = AG_STR_INIT;
  ag_diags_format(&d, &out);
  CHECK_EQ_STR(ag_str_cstr(&out),
               "k.ptx:2:6: error: unexpected 'token'\n    \tbad token here\n    \t    ^\n");
  CHECK_EQ_INT(d.nerrors, 1);
  json_t *j = ag_diags_to_json(&d);
  CHECK_EQ_INT(json_integer_value(json_object_get(json_array_get(j, 0), "col")), 6);
  json_decref(j);
  ag_str_release(&out);
  ag_diags_release(&d);
}

/* A long source line is echoed as a window around the column, marked where
 * cut, with the caret under the column; the column itself stays true. */
TEST(test_diags_long_line) {
  ag_str line = AG_STR_INIT;
  for (int i = 0; i < 20000; i++)
    ag_str_putc(&line, (char)('a' + i % 26));
  line.p[10000] = '@';
  ag_diags d;
  ag_diags_init(&d);
  ag_diags_add(&d, AG_SEV_ERROR, "k.ptx", 3, 10001, line.p, line.len, "bad '@'");
  const ag_diag *g = &d.items.v[0];
  CHECK_EQ_INT(g->col, 10001);
  CHECK_EQ_INT(strlen(g->srcline), AG_DIAG_SRC_MAX + 6);
  CHECK(!strncmp(g->srcline, "...", 3));
  CHECK(!strcmp(g->srcline + strlen(g->srcline) - 3, "..."));
  CHECK_EQ_INT(g->srcline[g->caret - 1], '@');
  ag_str out = AG_STR_INIT;
  ag_diags_format(&d, &out);
  CHECK_CONTAINS(ag_str_cstr(&out), "k.ptx:3:10001: error: bad '@'");
  CHECK(out.len < 2 * AG_DIAG_SRC_MAX + 80);
  /* the caret line puts '^' under the '@' */
  const char *src = strstr(out.p, "\n    ") + 5, *caret = strstr(src, "\n    ") + 5;
  CHECK_EQ_INT(src[strchr(caret, '^') - caret], '@');
  ag_str_release(&out);
  ag_diags_release(&d);
  /* at the start and at the end: cut on one side only */
  ag_diags_init(&d);
  ag_diags_add(&d, AG_SEV_ERROR, "k.ptx", 1, 1, line.p, line.len, "first");
  ag_diags_add(&d, AG_SEV_ERROR, "k.ptx", 1, (int)line.len, line.p, line.len, "last");
  CHECK(strncmp(d.items.v[0].srcline, "...", 3) != 0);
  CHECK_EQ_INT(d.items.v[0].caret, 1);
  CHECK_EQ_INT(strlen(d.items.v[0].srcline), AG_DIAG_SRC_MAX + 3);
  CHECK(!strncmp(d.items.v[1].srcline, "...", 3));
  CHECK_EQ_INT(d.items.v[1].srcline[d.items.v[1].caret - 1], line.p[line.len - 1]);
  CHECK_EQ_INT(d.items.v[1].caret, AG_DIAG_SRC_MAX + 3);
  ag_diags_release(&d);
  /* deliberately right: a short line is kept whole */
  ag_diags_init(&d);
  ag_diags_add(&d, AG_SEV_ERROR, "k.ptx", 1, 5, "abc def", 7, "short");
  CHECK_EQ_STR(d.items.v[0].srcline, "abc def");
  CHECK_EQ_INT(d.items.v[0].caret, 5);
  ag_diags_release(&d);
  ag_str_release(&line);
}

TEST(test_sha256) {
  char hex[65];
  ag_sha256_hex("abc", 3, hex);
  CHECK_EQ_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  ag_sha256_hex("", 0, hex);
  CHECK_EQ_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  ag_sha256 h;
  ag_sha256_begin(&h);
  ag_sha256_update(&h, "a", 1);
  ag_sha256_update(&h, "bc", 2);
  ag_sha256_end(&h, NULL, hex);
  CHECK_EQ_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(test_json) {
  ag_diags d;
  ag_diags_init(&d);
  json_t *j = NULL;
  CHECK_EQ_INT(ag_json_load_str("{\"b\":1,\"a\":[1,2]}", "x.json", &d, &j), 0);
  char *c = ag_json_canonical(j);
  CHECK_EQ_STR(c, "{\"a\":[1,2],\"b\":1}");
  ag_free(c);
  json_decref(j);
  CHECK_EQ_INT(ag_json_load_str("{\"a\":1,\n  \"b\": }", "bad.json", &d, &j), AG_EPARSE);
  CHECK(j == NULL);
  CHECK_EQ_INT(d.items.n, 1);
  CHECK_EQ_INT(d.items.v[0].line, 2);
  CHECK_EQ_STR(d.items.v[0].file, "bad.json");
  CHECK_EQ_INT(ag_json_load_str("{\"a\":1,\"a\":2}", "dup.json", &d, &j), AG_EPARSE);
  CHECK_EQ_INT(ag_json_load_file("/nonexistent/x.json", &d, &j), AG_ENOTFOUND);
  ag_diags_release(&d);
}

TEST(test_files) {
  char dir[] = "/tmp/argus-test-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  ag_str p = AG_STR_INIT;
  ag_str_printf(&p, "%s/a/b/c", dir);
  CHECK_EQ_INT(ag_mkdir_p(p.p, 0755), 0);
  CHECK_EQ_INT(ag_mkdir_p(p.p, 0755), 0);
  ag_str_puts(&p, "/f.txt");
  CHECK_EQ_INT(ag_file_write_atomic(p.p, "data\n", 5), 0);
  char *data;
  size_t len;
  CHECK_EQ_INT(ag_file_read(p.p, &data, &len), 0);
  CHECK_EQ_INT(len, 5);
  CHECK_EQ_STR(data, "data\n");
  ag_free(data);
  CHECK_EQ_INT(ag_file_read("/nonexistent/zz", &data, &len), AG_ENOTFOUND);
  /* a directory is said to be one */
  CHECK_EQ_INT(ag_file_read(dir, &data, &len), AG_EISDIR);
  CHECK(data == NULL);
  CHECK_EQ_STR(ag_strerror(AG_EISDIR), "is a directory");
  ag_str_clear(&p);
  ag_str_printf(&p, "rm -rf %s", dir);
  CHECK_EQ_INT(system(p.p), 0);
  ag_str_release(&p);
}

TEST(test_proc) {
  ag_str out = AG_STR_INIT, err = AG_STR_INIT;
  const char *argv[] = {"sh", "-c", "echo out; echo err >&2; exit 3", NULL};
  ag_proc_opts o = {.argv = argv, .capture_out = &out, .capture_err = &err};
  ag_proc_result r;
  CHECK_EQ_INT(ag_proc_run(&o, &r), 0);
  CHECK(r.exited);
  CHECK_EQ_INT(r.exit_code, 3);
  CHECK_EQ_STR(ag_str_cstr(&out), "out\n");
  CHECK_EQ_STR(ag_str_cstr(&err), "err\n");
  /* arguments are passed verbatim: no shell expansion */
  ag_str_clear(&out);
  const char *argv2[] = {"printf", "%s|", "$HOME", "a b", NULL};
  o = (ag_proc_opts){.argv = argv2, .capture_out = &out};
  CHECK_EQ_INT(ag_proc_run(&o, &r), 0);
  CHECK_EQ_STR(ag_str_cstr(&out), "$HOME|a b|");
  /* environment additions */
  ag_str_clear(&out);
  const char *argv3[] = {"sh", "-c", "echo $ARGUS_X", NULL};
  const char *add[] = {"ARGUS_X=42", NULL};
  o = (ag_proc_opts){.argv = argv3, .env_add = add, .capture_out = &out};
  CHECK_EQ_INT(ag_proc_run(&o, &r), 0);
  CHECK_EQ_STR(ag_str_cstr(&out), "42\n");
  /* timeout kills the whole process group, including a grandchild */
  const char *argv4[] = {"sh", "-c", "sleep 30 & sleep 30", NULL};
  o = (ag_proc_opts){.argv = argv4, .timeout_s = 0.3};
  uint64_t t0 = ag_now_ns();
  CHECK_EQ_INT(ag_proc_run(&o, &r), 0);
  CHECK(r.timed_out);
  CHECK((ag_now_ns() - t0) < 3000000000ull);
  ag_str d = AG_STR_INIT;
  ag_proc_describe(&r, &d);
  CHECK_CONTAINS(ag_str_cstr(&d), "timed out");
  /* a crash is reported as a signal */
  const char *argv5[] = {"sh", "-c", "kill -SEGV $$", NULL};
  o = (ag_proc_opts){.argv = argv5};
  CHECK_EQ_INT(ag_proc_run(&o, &r), 0);
  CHECK(r.signaled && r.signo == SIGSEGV);
  /* unknown program */
  const char *argv6[] = {"argus-no-such-program", NULL};
  o = (ag_proc_opts){.argv = argv6};
  CHECK_EQ_INT(ag_proc_run(&o, &r), AG_ENOTFOUND);
  ag_str_release(&d);
  ag_str_release(&out);
  ag_str_release(&err);
}

TEST(test_fnv1a) {
  /* published FNV-1a 64 test vectors: region IDs must match other tools */
  CHECK_EQ_U64(ag_hash64("", 0), 0xcbf29ce484222325ull);
  CHECK_EQ_U64(ag_hash64("a", 1), 0xaf63dc4c8601ec8cull);
  CHECK_EQ_U64(ag_hash64("foobar", 6), 0x85944171f73967e8ull);
}

TEST(test_log_level) {
  static int evaluated;
  ag_log_set_level(AG_LOG_WARN);
  AG_LOG(AG_LOG_DEBUG, "%d", ++evaluated);
  CHECK_EQ_INT(evaluated, 0);
  AG_LOG(AG_LOG_ERROR, "%d", ++evaluated);
  CHECK_EQ_INT(evaluated, 1);
}

RUN_TESTS(T(test_errors), T(test_alloc_fail), T(test_arena), T(test_str), T(test_vec),
          T(test_map), T(test_diags), T(test_diags_long_line), T(test_sha256), T(test_json),
          T(test_files), T(test_proc), T(test_fnv1a), T(test_log_level), T(test_suggest))
