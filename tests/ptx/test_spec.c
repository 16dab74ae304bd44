/*
 * test_spec.c — program specs: a valid spec with paths resolved against the
 * spec's directory, and each kind of malformed spec with its diagnostic at
 * the right line and column.
 */
#include "argus/spec.h"
#include "check.h"

TEST(valid) {
  const char *t = "{\n  \"name\": \"gemm\",\n  \"module\": {\"cuda\": \"k.cu\", \"flags\": [\"-arch=sm_90a\", \"-O3\"]},\n"
                  "  \"run\": [\"./harness\", \"--size\", \"64\"]\n}\n";
  ag_diags d;
  ag_diags_init(&d);
  ag_spec *s;
  CHECK_EQ_INT(ag_spec_load_str(t, "/x/y/spec.json", &d, &s), 0);
  CHECK_EQ_STR(s->name, "gemm");
  CHECK_EQ_STR(s->cuda, "/x/y/k.cu");
  CHECK(s->ptx == NULL);
  CHECK_EQ_INT(s->nflags, 2);
  CHECK_EQ_STR(s->flags[1], "-O3");
  CHECK(s->flags[2] == NULL);
  CHECK_EQ_INT(s->nrun, 3);
  CHECK_EQ_STR(s->run[0], "./harness");
  ag_spec_free(s);
  const char *p = "{\"name\": \"p\", \"module\": {\"ptx\": \"/abs/k.ptx\"}}";
  CHECK_EQ_INT(ag_spec_load_str(p, "spec.json", &d, &s), 0);
  CHECK_EQ_STR(s->ptx, "/abs/k.ptx");
  CHECK(s->run == NULL);
  ag_spec_free(s);
  CHECK_EQ_INT(d.items.n, 0);
  ag_diags_release(&d);
}

typedef struct bad {
  const char *text;
  int line, col;
  const char *msg;
} bad;

TEST(invalid) {
  static const bad cases[] = {
      {"{\"name\": \"a\",\n \"modul\": {}}", 2, 2, "unknown key 'modul'"},
      {"{\"name\": 3, \"module\": {\"ptx\": \"a\"}}", 1, 10, "\"name\" must be a non-empty string"},
      {"{\"name\": \"a\", \"module\": \"k.cu\"}", 1, 25, "\"module\" must be an object"},
      {"{\"name\": \"a\", \"module\": {\"cuda\": \"k.cu\",\n   \"ptx\": \"k.ptx\"}}", 2, 4,
       "both \"cuda\" and \"ptx\""},
      {"{\"name\": \"a\", \"module\": {}}", 1, 25, "needs \"cuda\" or \"ptx\""},
      {"{\"name\": \"a\", \"module\": {\"cuda\": \"k.cu\", \"flags\": \"-O3\"}}", 1, 51,
       "\"flags\" must be an array of strings"},
      {"{\"name\": \"a\", \"module\": {\"ptx\": \"k\", \"flags\": [\"-O3\"]}}", 1, 38,
       "\"flags\" apply to a \"cuda\" module only"},
      {"{\"name\": \"a\", \"module\": {\"ptx\": \"k\", \"opt\": 1}}", 1, 38, "unknown key 'opt' in \"module\""},
      {"{\"name\": \"a\", \"module\": {\"ptx\": \"k\"}, \"run\": []}", 1, 46, "\"run\" must be a non-empty array"},
      {"{\"name\": \"a\", \"module\": {\"ptx\": \"k\"}, \"run\": [1]}", 1, 46, "\"run\" must be a non-empty array"},
      {"{\"name\": \"a\", \"module\": {\"ptx\": 7}}", 1, 33, "\"ptx\" must be a file name"},
      {"{\"module\": {\"ptx\": \"k\"}}", 0, 0, "no \"name\""},
      {"[1, 2]", 0, 0, "a program spec is a JSON object"},
      {"{\"name\": \"a\",", 1, 13, ""}, /* JSON syntax error from the loader */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ag_diags d;
    ag_diags_init(&d);
    ag_spec *s = NULL;
    CHECK_EQ_INT(ag_spec_load_str(cases[i].text, "spec.json", &d, &s), AG_EPARSE);
    CHECK(s == NULL);
    CHECK(d.items.n >= 1);
    if (d.items.n) {
      if (d.items.v[0].line != cases[i].line || d.items.v[0].col != cases[i].col)
        fprintf(stderr, "case %zu: %d:%d %s\n", i, d.items.v[0].line, d.items.v[0].col,
                d.items.v[0].msg);
      CHECK_EQ_INT(d.items.v[0].line, cases[i].line);
      if (cases[i].line)
        CHECK_EQ_INT(d.items.v[0].col, cases[i].col);
      CHECK_CONTAINS(d.items.v[0].msg, cases[i].msg);
    }
    ag_diags_release(&d);
  }
}

TEST(missing_file) {
  ag_diags d;
  ag_diags_init(&d);
  ag_spec *s;
  CHECK(ag_spec_load("/nonexistent/spec.json", &d, &s) != 0);
  CHECK(d.items.n == 1 && strstr(d.items.v[0].msg, "cannot read program spec"));
  ag_diags_release(&d);
}

RUN_TESTS(T(valid), T(invalid), T(missing_file))
