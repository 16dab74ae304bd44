/*
 * test_agent.c — `argus optimize` on the CPU (docs/optimize.md): task files
 * and their errors, every knowledge-base entry applied to its example and
 * validated, the validator's steps and the planted reward hacks, the loop's
 * trajectory in the workspace, stop and resume, the llm protocol with a
 * scripted fake policy, and the command line's errors.
 */
#include "argus/agent.h"
#include "argus/collect.h"
#include "argus/store.h"
#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

static char pbuf[8][1024];
static const char *src_path(int slot, const char *rel) {
  const char *s = getenv("ARGUS_SOURCE_DIR");
  snprintf(pbuf[slot], sizeof pbuf[slot], "%s/%s", s ? s : ".", rel);
  return pbuf[slot];
}
static const char *tmp_path(int slot, const char *rel) {
  const char *b = getenv("ARGUS_BUILD_DIR");
  snprintf(pbuf[slot], sizeof pbuf[slot], "%s/test_agent.d/%s", b ? b : ".", rel);
  return pbuf[slot];
}
static const char *write_tmp(int slot, const char *name, const char *text) {
  const char *p = tmp_path(slot, name);
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", p);
  *strrchr(dir, '/') = 0;
  ag_mkdir_p(dir, 0755);
  CHECK(ag_file_write_atomic(p, text, strlen(text)) == 0);
  return p;
}

/* A task over gemm_naive.tile at 64 x 64 x 64 (the program path absolute). */
static const char *task_file(int slot, const char *name, const char *extra) {
  char text[8192];
  snprintf(text, sizeof text,
           "{\n  \"name\": \"%s\",\n  \"program\": \"%s\",\n  \"sizes\": {\"M\": 64, \"N\": 64, "
           "\"K\": 64},\n  \"reference\": {\"outputs\": [\"C\"]},\n  \"seeds\": [1, 2]%s\n}\n",
           name, src_path(7, "examples/tile/gemm_naive.tile"), extra);
  char fn[256];
  snprintf(fn, sizeof fn, "%s.task.json", name);
  return write_tmp(slot, fn, text);
}

static ag_opt_task *load_task(const char *path) {
  ag_diags d;
  ag_diags_init(&d);
  ag_opt_task *t = NULL;
  int rc = ag_opt_task_load(path, &d, &t);
  if (rc) {
    ag_str s = AG_STR_INIT;
    ag_diags_format(&d, &s);
    fprintf(stderr, "%s", ag_str_cstr(&s));
    ag_str_release(&s);
  }
  ag_diags_release(&d);
  return t;
}

/* The diagnostics of a task file that must not load. */
static void task_error(const char *name, const char *text, const char *want, int line) {
  const char *p = write_tmp(0, name, text);
  ag_diags d;
  ag_diags_init(&d);
  ag_opt_task *t = NULL;
  CHECK_EQ_INT(ag_opt_task_load(p, &d, &t), AG_EPARSE);
  CHECK(t == NULL);
  ag_str s = AG_STR_INIT;
  ag_diags_format(&d, &s);
  CHECK_CONTAINS(ag_str_cstr(&s), want);
  if (line) {
    CHECK(d.items.n >= 1);
    CHECK_EQ_INT(d.items.v[0].line, line);
    CHECK(d.items.v[0].col > 0);
  }
  ag_str_release(&s);
  ag_diags_release(&d);
}

TEST(test_task_file) {
  ag_opt_task *t = load_task(src_path(0, "tests/agent/gemm_naive.task.json"));
  CHECK(t != NULL);
  if (!t)
    return;
  CHECK_EQ_STR(t->name, "gemm-naive");
  CHECK_EQ_STR(t->sizes, "M=64,N=64,K=64");
  CHECK_EQ_INT(t->noutputs, 1);
  CHECK_EQ_STR(t->outputs[0], "C");
  CHECK_EQ_INT(t->nseeds, 2);
  CHECK_EQ_INT(t->samples, 50);
  CHECK_EQ_STR(t->reference, t->program); /* no reference program: the start */
  CHECK_CONTAINS(t->program, "tests/agent/../../examples/tile/gemm_naive.tile");
  ag_opt_task_free(t);

  task_error("bad1.json", "{\n  \"name\": \"x\",\n  \"sizes\": {\"M\": 64,}\n}\n", "bad1.json:3:",
             3);
  task_error("bad2.json", "{\"name\": \"x\", \"program\": \"nope.tile\",\n \"sizez\": {}}\n",
             "unknown key 'sizez'", 2);
  task_error("bad3.json", "{\"name\": \"x\",\n \"program\": \"nope.tile\"}\n", "cannot read", 2);
  task_error("bad4.json", "{\"name\": \"has space\"}\n", "'name' must be", 1);
  char text[8192];
  snprintf(text, sizeof text,
           "{\"name\": \"x\", \"program\": \"%s\",\n \"sizes\": {\"M\": 0},\n \"reference\": "
           "{\"outputs\": [\"C\"]}}\n", src_path(1, "examples/tile/gemm_naive.tile"));
  task_error("bad5.json", text, "size 'M' must be a positive integer", 2);
  snprintf(text, sizeof text,
           "{\"name\": \"x\", \"program\": \"%s\", \"sizes\": {\"M\": 64},\n \"reference\": "
           "{\"outputs\": [\"C\"], \"atol\": 0.1}}\n", src_path(1, "examples/tile/gemm_naive.tile"));
  task_error("bad6.json", text, "give both 'atol' and 'rtol'", 2);
  snprintf(text, sizeof text,
           "{\"name\": \"x\", \"program\": \"%s\", \"sizes\": {\"M\": 64}, \"reference\": "
           "{\"outputs\": [\"C\"]},\n \"objective\": {\"metric\": \"tflops\"}}\n",
           src_path(1, "examples/tile/gemm_naive.tile"));
  task_error("bad7.json", text, "'metric' must be \"time\"", 2);
  snprintf(text, sizeof text,
           "{\"name\": \"x\", \"program\": \"%s\", \"sizes\": {\"M\": 64}, \"reference\": "
           "{\"outputs\": []},\n \"seeds\": [1, -2]}\n", src_path(1, "examples/tile/gemm_naive.tile"));
  task_error("bad8.json", text, "'outputs' must be a non-empty array", 1);
  task_error("bad9.json", "[1, 2]\n", "a task file is a JSON object", 0);
  snprintf(text, sizeof text,
           "{\"name\": \"x\", \"program\": \"%s\", \"sizes\": {\"M\": 64}, \"reference\":\n "
           "{\"outputs\": [\"C\", \"\"]}}\n", src_path(1, "examples/tile/gemm_naive.tile"));
  task_error("bad10.json", text, "'outputs' must be an array of tensor names (strings)", 2);

  /* time_sizes: the timing sizes, the same names as sizes */
  t = load_task(task_file(0, "timed", ",\n  \"time_sizes\": {\"M\": 2048, \"N\": 1024, \"K\": 4096}"));
  CHECK(t != NULL);
  if (t) {
    CHECK_EQ_STR(t->sizes, "M=64,N=64,K=64");
    CHECK_EQ_STR(t->time_sizes, "M=2048,N=1024,K=4096");
    ag_opt_task_free(t);
  }
  t = load_task(src_path(0, "tests/agent/gemm_naive.task.json"));
  CHECK(t && t->time_sizes == NULL); /* none: timing at sizes */
  ag_opt_task_free(t);
  static const struct {
    const char *extra, *want;
  } bad_ts[] = {
      {",\n  \"time_sizes\": {\"M\": 2048, \"N\": 2048}", "'time_sizes' has no 'K'"},
      {",\n  \"time_sizes\": {\"M\": 2048, \"N\": 2048, \"K\": 64, \"Q\": 1}",
       "'time_sizes' names 'Q', which 'sizes' does not"},
      {",\n  \"time_sizes\": {\"M\": 2048, \"N\": -1, \"K\": 64}",
       "size 'N' must be a positive integer below 2^32"},
      {",\n  \"time_sizes\": [2048]", "'time_sizes' must be a non-empty object"},
  };
  for (size_t i = 0; i < sizeof bad_ts / sizeof bad_ts[0]; i++) {
    ag_diags d;
    ag_diags_init(&d);
    ag_opt_task *bt = NULL;
    CHECK_EQ_INT(ag_opt_task_load(task_file(0, "badts", bad_ts[i].extra), &d, &bt), AG_EPARSE);
    CHECK(bt == NULL);
    ag_str s = AG_STR_INIT;
    ag_diags_format(&d, &s);
    CHECK_CONTAINS(ag_str_cstr(&s), bad_ts[i].want);
    CHECK_CONTAINS(ag_str_cstr(&s), "badts.task.json:7:"); /* at the key's line */
    ag_str_release(&s);
    ag_diags_release(&d);
  }
}

static ag_opt_task *example_task(const ag_kb_entry *e) {
  json_t *ex = json_object_get(e->j, "example");
  char text[8192], sizes[512];
  ag_str obj = AG_STR_INIT;
  snprintf(sizes, sizeof sizes, "%s", json_string_value(json_object_get(ex, "sizes")));
  for (char *tok = strtok(sizes, ","); tok; tok = strtok(NULL, ",")) {
    char *eq = strchr(tok, '=');
    *eq = 0;
    ag_str_printf(&obj, "%s\"%s\": %s", obj.len ? ", " : "", tok, eq + 1);
  }
  json_t *outs = json_object_get(ex, "outputs");
  char *otext = outs ? json_dumps(outs, JSON_COMPACT) : NULL;
  snprintf(text, sizeof text,
           "{\"name\": \"kb-%s\", \"program\": \"%s\", \"sizes\": {%s}, \"reference\": "
           "{\"outputs\": %s}, \"seeds\": [7]}\n", e->id,
           src_path(1, json_string_value(json_object_get(ex, "program"))), ag_str_cstr(&obj),
           otext ? otext : "[\"C\"]");
  free(otext);
  ag_str_release(&obj);
  char fn[256];
  snprintf(fn, sizeof fn, "kb-%s.json", e->id);
  return load_task(write_tmp(0, fn, text));
}

static int validate_src(const ag_opt_task *t, const char *src, const ag_kb_entry *e,
                        ag_opt_verdict *v) {
  char err[1024];
  int rc = ag_opt_validate(t, src, strlen(src), "candidate.tile", e, AG_OPT_DEVICE_CPU, v, err,
                           sizeof err);
  if (rc)
    fprintf(stderr, "validate: %s\n", err);
  return rc;
}

/* Every entry of the shipped KB, applied to its example: the edited program
 * checks clean (its invariant templates hold), lowers, binds and computes
 * what the unedited one computes. */
TEST(test_kb_entries) {
  ag_diags d;
  ag_diags_init(&d);
  ag_kb kb;
  CHECK_EQ_INT(ag_kb_load(src_path(0, "src/agent/kb"), &d, &kb), 0);
  ag_diags_release(&d);
  CHECK(kb.n >= 4);
  int seen_rewrite = 0, seen_const = 0, seen_splice = 0;
  for (int i = 0; i < kb.n; i++) {
    ag_kb_entry *e = &kb.e[i];
    ag_opt_task *t = example_task(e);
    CHECK(t != NULL);
    if (!t)
      continue;
    char *src = NULL;
    size_t len;
    CHECK(ag_file_read(t->program, &src, &len) == 0);
    ag_str why = AG_STR_INIT;
    CHECK(ag_kb_applies(e, src, &why));
    const json_t *vals = ag_kb_values(e);
    char *out = NULL, *what = NULL;
    CHECK_EQ_INT(ag_kb_apply(e, src, vals ? json_array_get(vals, 0) : NULL, &out, &what, &why), 0);
    CHECK(out && strcmp(out, src));
    CHECK_CONTAINS(what, e->id);
    ag_opt_verdict v;
    CHECK_EQ_INT(validate_src(t, out, e, &v), 0);
    if (!v.ok)
      fprintf(stderr, "%s: %s\n", e->id, json_dumps(v.feedback, 0));
    CHECK(v.ok);
    CHECK_EQ_STR(v.step, "");
    /* the result has the edit; applied again it changes nothing new */
    const char *kind = json_string_value(json_object_get(json_object_get(e->j, "edit"), "kind"));
    if (!strcmp(kind, "splice")) {
      /* the structure changed once: the precondition no longer holds, and
         the anchors the splice needs are gone */
      seen_splice = 1;
      CHECK(!ag_kb_applies(e, out, NULL));
      char *again = NULL, *w2 = NULL;
      ag_str_clear(&why);
      CHECK_EQ_INT(ag_kb_apply(e, out, vals ? json_array_get(vals, 0) : NULL, &again, &w2, &why),
                   AG_EINVAL);
      CHECK_CONTAINS(ag_str_cstr(&why), "splice step ");
      ag_free(again);
      ag_free(w2);
    } else if (!strcmp(kind, "rewrite")) {
      seen_rewrite = 1;
      CHECK_CONTAINS(out, json_string_value(json_object_get(json_object_get(e->j, "edit"), "to")));
      CHECK(!ag_kb_applies(e, out, NULL)); /* precondition: no swizzle yet */
    } else {
      seen_const = 1;
      const char *name = json_string_value(json_object_get(json_object_get(e->j, "edit"), "name"));
      int64_t val;
      CHECK_EQ_INT(ag_tile_src_const(out, name, &val), 0);
      CHECK_EQ_INT(val, json_integer_value(json_array_get(vals, 0)));
      const char *rn = json_string_value(json_object_get(json_object_get(e->j, "edit"), "rename"));
      if (rn) { /* the instruction's shape follows the constant: none of the old one left */
        int64_t old;
        char tn[128], to[128];
        CHECK_EQ_INT(ag_tile_src_const(src, name, &old), 0);
        const char *pc = strchr(rn, '%');
        snprintf(tn, sizeof tn, "%.*s%lld%s", (int)(pc - rn), rn, (long long)val, pc + 1);
        snprintf(to, sizeof to, "%.*s%lld%s", (int)(pc - rn), rn, (long long)old, pc + 1);
        CHECK_CONTAINS(src, to);
        CHECK_CONTAINS(out, tn);
        CHECK(!strstr(out, to));
        CHECK(!ag_kb_applies(e, out, NULL));
      }
      char *again = NULL, *w2 = NULL;
      ag_str_clear(&why);
      CHECK_EQ_INT(ag_kb_apply(e, out, json_array_get(vals, 0), &again, &w2, &why), AG_EINVAL);
      CHECK_CONTAINS(ag_str_cstr(&why), "already");
    }
    ag_opt_verdict_release(&v);
    ag_str_release(&why);
    ag_free(out);
    ag_free(what);
    ag_free(src);
    ag_opt_task_free(t);
  }
  CHECK(seen_rewrite && seen_const && seen_splice);
  /* preconditions that fail */
  const ag_kb_entry *stages = NULL;
  for (int i = 0; i < kb.n; i++)
    if (!strcmp(kb.e[i].id, "pipeline-stages"))
      stages = &kb.e[i];
  CHECK(stages != NULL);
  if (stages) {
    ag_str why = AG_STR_INIT;
    CHECK(!ag_kb_applies(stages, "STAGES = 4\ncp_async_wait(STAGES - 1)\n", &why));
    CHECK_CONTAINS(ag_str_cstr(&why), "STAGES is 4, not lt 4");
    ag_str_clear(&why);
    CHECK(ag_kb_applies(stages, "STAGES = 3\ncp_async_wait(STAGES - 1)\n", &why));
    CHECK(!ag_kb_applies(stages, "STAGES = 1\n", &why));
    CHECK_CONTAINS(ag_str_cstr(&why), "does not contain 'cp_async_wait(STAGES - 1)'");
    ag_str_clear(&why);
    CHECK(!ag_kb_applies(stages, "X = 1\n", &why));
    CHECK_CONTAINS(ag_str_cstr(&why), "no module-level constant 'STAGES");
    ag_str_release(&why);
  }
  ag_kb_release(&kb);
  /* constants: only a plain module-level integer counts */
  int64_t v;
  CHECK_EQ_INT(ag_tile_src_const("BM = 64\nWM = BM / 2\n", "BM", &v), 0);
  CHECK_EQ_INT(v, 64);
  CHECK_EQ_INT(ag_tile_src_const("BM = 64\nWM = BM / 2\n", "WM", &v), AG_ENOTFOUND);
  CHECK_EQ_INT(ag_tile_src_const("    BM = 64\n", "BM", &v), AG_ENOTFOUND);
  CHECK_EQ_INT(ag_tile_src_const("BMX = 64\nBM = 8 # c\n", "BM", &v), 0);
  CHECK_EQ_INT(v, 8);
}

/* A KB entry, good but for its edit (on line 2). */
#define KB_SPLICE(edit)                                                                        \
  "{\"id\": \"e\", \"title\": \"t\", \"prior\": 5, \"targets\": \"m\", \"precondition\": "          \
  "{\"program\": []}, \"invariants\": [\"races\"], \"example\": {\"program\": \"a\", \"sizes\": "   \
  "\"M=1\"},\n \"edit\": " edit "}"

TEST(test_kb_bad_entries) {
  static const struct {
    const char *text, *want;
    int line;
  } cases[] = {
      {"{\"id\": \"e\",\n \"bogus\": 1}", "unknown key 'bogus'", 2},
      {"{\"id\": \"other\", \"title\": \"t\"}", "'id' must be a string equal to the file's name", 1},
      {"{\"id\": \"e\", \"title\": \"t\", \"prior\": 5, \"targets\": \"m\",\n \"precondition\": "
       "{\"program\": []},\n \"edit\": {\"kind\": \"explode\"}, \"invariants\": [\"bounds\"], "
       "\"example\": {\"program\": \"a\", \"sizes\": \"M=1\"}}",
       "unknown edit kind 'explode'", 3},
      {"{\"id\": \"e\", \"title\": \"t\", \"prior\": 5, \"targets\": \"m\",\n \"precondition\": "
       "{\"program\": [{\"const\": \"X\", \"lt\": 2, \"gt\": 1}]},\n \"edit\": {\"kind\": "
       "\"rewrite\", \"from\": \"a\", \"to\": \"b\"}, \"invariants\": [\"bounds\"], "
       "\"example\": {\"program\": \"a\", \"sizes\": \"M=1\"}}",
       "program precondition 1 must be", 2},
      {"{\"id\": \"e\", \"title\": \"t\", \"prior\": 5, \"targets\": \"m\", \"precondition\": "
       "{\"program\": []}, \"edit\": {\"kind\": \"rewrite\", \"from\": \"a\", \"to\": \"b\"},\n "
       "\"invariants\": [\"fast\"], \"example\": {\"program\": \"a\", \"sizes\": \"M=1\"}}",
       "'invariants' must be", 2},
      {"{\"id\": \"e\", \"title\": \"t\", \"prior\": 5, \"targets\": \"m\", \"precondition\": "
       "{\"program\": []}, \"edit\": {\"kind\": \"set_const\", \"name\": \"S\", \"values\": [8], "
       "\"rename\": \"op_%_%\"},\n \"invariants\": [\"races\"], \"example\": {\"program\": \"a\", "
       "\"sizes\": \"M=1\"}}",
       "TEXT with one %", 1},
      {"{\"id\": \"e\", \"title\": \"t\", \"prior\": 5, \"targets\": \"m\", \"precondition\": "
       "{\"program\": []}, \"edit\": {\"kind\": \"set_const\", \"name\": \"S\", \"values\": [0]},\n "
       "\"invariants\": [\"races\"], \"example\": {\"program\": \"a\", \"sizes\": \"M=1\"}}",
       "a set_const edit is", 1},
      {"{\"id\": \"e\", \"title\": \"t\", \"prior\": 5, \"targets\": \"m\", \"precondition\": "
       "{\"program\": [],\n \"evidence\": [{\"region\": \"m\", \"signal\": \"stalls\", \"share_gt\": "
       "0.1}]}, \"edit\": {\"kind\": \"rewrite\", \"from\": \"a\", \"to\": \"b\"}, \"invariants\": "
       "[\"races\"], \"example\": {\"program\": \"a\", \"sizes\": \"M=1\"}}",
       "signal 'stalls' is not one the evidence collector observes (duration, inst_mix, static, "
       "hw_counters)", 2},
      {"{\"id\": \"e\", \"title\": \"t\", \"prior\": 5, \"targets\": \"m\", \"precondition\": "
       "{\"program\": [],\n \"evidence\": [{\"region\": \"m\", \"signal\": \"duration\", \"share_gt\": "
       "0.1, \"share_lt\": 0.5}]}, \"edit\": {\"kind\": \"rewrite\", \"from\": \"a\", \"to\": \"b\"}, "
       "\"invariants\": [\"races\"], \"example\": {\"program\": \"a\", \"sizes\": \"M=1\"}}",
       "evidence precondition 1 must be", 2},
      {"{\"id\": \"e\", \"title\": \"t\", \"prior\": 5, \"targets\": \"m\", \"precondition\": "
       "{\"program\": [],\n \"evidence\": [{\"region\": \"m\", \"signal\": \"duration\", \"share_lt\": "
       "1.5}]}, \"edit\": {\"kind\": \"rewrite\", \"from\": \"a\", \"to\": \"b\"}, "
       "\"invariants\": [\"races\"], \"example\": {\"program\": \"a\", \"sizes\": \"M=1\"}}",
       "evidence precondition 1 must be", 2},
      {"{\"id\": \"e\", \"title\": \"t\", \"prior\": 5, \"targets\": \"m\", \"edit\": {\"kind\": \"rewrite\", \"from\": \"a\", \"to\": \"b\"}, \"invariants\": [\"races\"], \"example\": {\"program\": \"a\", \"sizes\": \"M=1\"},\n \"precondition\": {\"program\": [], \"evidence\": [{\"region\": \"m\", \"signal\": \"static\", \"metric\": \"occupancy\", \"lt\": 0.5}]}}",
       "static's occupancy is the kernel's: no 'region'", 2},
      {"{\"id\": \"e\", \"title\": \"t\", \"prior\": 5, \"targets\": \"m\", \"edit\": {\"kind\": \"rewrite\", \"from\": \"a\", \"to\": \"b\"}, \"invariants\": [\"races\"], \"example\": {\"program\": \"a\", \"sizes\": \"M=1\"},\n \"precondition\": {\"program\": [], \"evidence\": [{\"signal\": \"inst_mix\", \"metric\": \"loads_per_mma\", \"gt\": 2}]}}",
       "inst_mix's loads_per_mma is of a region", 2},
      {"{\"id\": \"e\", \"title\": \"t\", \"prior\": 5, \"targets\": \"m\", \"edit\": {\"kind\": \"rewrite\", \"from\": \"a\", \"to\": \"b\"}, \"invariants\": [\"races\"], \"example\": {\"program\": \"a\", \"sizes\": \"M=1\"},\n \"precondition\": {\"program\": [], \"evidence\": [{\"region\": \"m\", \"signal\": \"inst_mix\", \"metric\": \"flops\", \"gt\": 2}]}}",
       "'flops' is not a metric of signal 'inst_mix' (docs/optimize.md: duration: share; "
       "inst_mix: loads_per_mma, load_share, shared_share; static: occupancy, registers; "
       "hw_counters: bank_conflict_share)", 2},
      {"{\"id\": \"e\", \"title\": \"t\", \"prior\": 5, \"targets\": \"m\", \"edit\": {\"kind\": \"rewrite\", \"from\": \"a\", \"to\": \"b\"}, \"invariants\": [\"races\"], \"example\": {\"program\": \"a\", \"sizes\": \"M=1\"},\n \"precondition\": {\"program\": [], \"evidence\": [{\"signal\": \"static\", \"metric\": \"occupancy\", \"lt\": 2}]}}",
       "evidence precondition 1 must be", 2},
      {"{\"id\": \"e\", \"title\": \"t\", \"prior\": 5, \"targets\": \"m\", \"edit\": {\"kind\": \"rewrite\", \"from\": \"a\", \"to\": \"b\"}, \"invariants\": [\"races\"], \"example\": {\"program\": \"a\", \"sizes\": \"M=1\"},\n \"precondition\": {\"program\": []}, \"gain\": [{\"signal\": \"static\", \"metric\": \"registers\"}]}",
       "gain factor 1: a factor is", 2},
      {"{\"id\": \"e\", \"title\": \"t\", \"prior\": 5, \"targets\": \"m\", \"edit\": {\"kind\": \"rewrite\", \"from\": \"a\", \"to\": \"b\"}, \"invariants\": [\"races\"], \"example\": {\"program\": \"a\", \"sizes\": \"M=1\"},\n \"precondition\": {\"program\": []}, \"gain\": [{\"intensity\": [\"BM\"]}]}",
       "gain factor 1: {\"intensity\": [GROWN, OTHER]}", 2},
      {"{\"id\": \"e\", \"title\": \"t\", \"prior\": 5, \"targets\": \"m\", \"edit\": {\"kind\": \"rewrite\", \"from\": \"a\", \"to\": \"b\"}, \"invariants\": [\"races\"], \"example\": {\"program\": \"a\", \"sizes\": \"M=1\"},\n \"precondition\": {\"program\": []}, \"gain\": [{\"scale\": 0}]}",
       "gain factor 1: {\"scale\": X}", 2},
      {"{\"id\": \"e\", \"title\": \"t\", \"prior\": 5, \"targets\": \"m\", \"edit\": {\"kind\": \"rewrite\", \"from\": \"a\", \"to\": \"b\"}, \"invariants\": [\"races\"], \"example\": {\"program\": \"a\", \"sizes\": \"M=1\"},\n \"precondition\": {\"program\": []}, \"gain\": [{\"signal\": \"hw_counters\", \"metric\": \"bank_conflict_share\", \"unobserved\": 1.5}]}",
       "\"unobserved\": X]} of a metric in 0..1 (X in 0..1", 2},
      {"{\"id\": \"e\", \"title\": \"t\", \"prior\": 5, \"targets\": \"m\", \"edit\": {\"kind\": \"rewrite\", \"from\": \"a\", \"to\": \"b\"}, \"invariants\": [\"races\"], \"example\": {\"program\": \"a\", \"sizes\": \"M=1\"},\n \"precondition\": {\"program\": []}, \"gain\": [{\"signal\": \"hw_counters\", \"metric\": \"bank_conflict_share\", \"unobserved\": \"0.2\"}]}",
       "\"unobserved\": X]} of a metric in 0..1 (X in 0..1", 2},
      {"{\"id\": \"e\", \"title\": \"t\", \"prior\": 5, \"targets\": \"m\", \"edit\": {\"kind\": \"rewrite\", \"from\": \"a\", \"to\": \"b\"}, \"invariants\": [\"races\"], \"example\": {\"program\": \"a\", \"sizes\": \"M=1\"},\n \"precondition\": {\"program\": []}, \"gain\": [{\"region\": \"m\", \"signal\": \"hw_counters\", \"metric\": \"bank_conflict_share\"}]}",
       "hw_counters's bank_conflict_share is the kernel's: no 'region'", 2},
      {"{\"id\": \"e\", \"title\": \"t\", \"prior\": 5, \"targets\": \"m\", \"edit\": {\"kind\": \"rewrite\", \"from\": \"a\", \"to\": \"b\"}, \"invariants\": [\"races\"], \"example\": {\"program\": \"a\", \"sizes\": \"M=1\"},\n \"precondition\": {\"program\": []}, \"gain\": {\"scale\": 0.5}}",
       "'gain' must be an array", 2},
      {"{\"id\": \"e\", \"title\": \"t\", \"prior\": 5, \"targets\": \"m\", \"precondition\": "
       "{\"program\": []}, \"edit\": {\"kind\": \"rewrite\", \"from\": \"a\", \"to\": \"b\"}, "
       "\"invariants\": [\"races\"],\n \"example\": {\"program\": \"a\", \"sizes\": \"M=1\", "
       "\"outputs\": []}}",
       "'example' must be", 2},
      /* splice edits */
      {KB_SPLICE("{\"kind\": \"splice\"}"), "'steps' must be a non-empty array", 2},
      {KB_SPLICE("{\"kind\": \"splice\", \"steps\": [{\"at\": \"x\", \"replace\": [], \"after\": [\"y\"]}]}"),
       "step 1 must be {\"at\": TEXT (one line's), and one action}", 2},
      {KB_SPLICE("{\"kind\": \"splice\", \"steps\": [{\"at\": \"\", \"replace\": []}]}"),
       "step 1 must be", 2},
      {KB_SPLICE("{\"kind\": \"splice\", \"steps\": [{\"at\": \"x\", \"where\": []}]}"),
       "step 1 must be", 2},
      {KB_SPLICE("{\"kind\": \"splice\", \"steps\": [{\"at\": \"x\", \"replace\": [], \"where\": 1}]}"),
       "step 1 must be", 2},
      {KB_SPLICE("{\"kind\": \"splice\", \"steps\": [{\"at\": \"x\", \"replace\": []}, {\"at\": \"y\", \"indent\": 0}]}"),
       "step 2: 'indent' must be an integer in 1..16", 2},
      {KB_SPLICE("{\"kind\": \"splice\", \"values\": [2], \"steps\": [{\"at\": \"x\", \"replace\": [\"N = {V}\"]}]}"),
       "'name' (a string) and 'values' (a non-empty array) go together", 2},
      {KB_SPLICE("{\"kind\": \"splice\", \"name\": \"N\", \"values\": [0], \"steps\": [{\"at\": \"x\", \"replace\": [\"N = {V}\"]}]}"),
       "value 1 is not a positive integer", 2},
      {KB_SPLICE("{\"kind\": \"splice\", \"steps\": [{\"at\": \"x\", \"replace\": [\"N = {V}\"]}]}"),
       "a line uses {V} but the edit has no values", 2},
      {KB_SPLICE("{\"kind\": \"splice\", \"name\": \"N\", \"values\": [2], \"steps\": [{\"at\": \"x\", \"replace\": [\"N = 2\"]}]}"),
       "it has values but no line uses {V}", 2},
      {KB_SPLICE("{\"kind\": \"splice\", \"steps\": [{\"at\": \"x\", \"before\": [\"a\\nb\"]}]}"),
       "step 1: line 1 must be a string without a newline", 2},
      {KB_SPLICE("{\"kind\": \"splice\", \"steps\": [{\"at\": \"x\", \"after\": []}]}"),
       "step 1: the lines must be an array of strings (at least one)", 2},
      {KB_SPLICE("{\"kind\": \"splice\", \"steps\": [{\"at\": \"x\", \"replace\": \"y\"}]}"),
       "step 1: the lines must be an array of strings", 2},
      {KB_SPLICE("{\"kind\": \"splice\", \"steps\": [{\"at\": \"x\", \"after\": [\"y\"], \"through\": \"z\"}]}"),
       "step 1: 'through' must be TEXT (one line's), with 'replace'", 2},
      {KB_SPLICE("{\"kind\": \"splice\", \"steps\": [{\"at\": \"x\", \"replace\": [], \"through\": \"\"}]}"),
       "step 1: 'through' must be TEXT (one line's), with 'replace'", 2},
      {KB_SPLICE("{\"kind\": \"splice\", \"steps\": [{\"at\": \"x\", \"replace\": [], \"through\": 3}]}"),
       "step 1: 'through' must be TEXT (one line's), with 'replace'", 2},
      {KB_SPLICE("{\"kind\": \"splice\", \"steps\": [{\"at\": \"x\", \"replace\": [], \"through\": \"a\\nb\"}]}"),
       "step 1: 'through' must be TEXT (one line's), with 'replace'", 2},
      {KB_SPLICE("{\"kind\": \"splice\", \"steps\": [{\"at\": \"x\", \"replace\": [], \"through\": \"y\", \"where\": 1}]}"),
       "step 1 must be", 2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char dir[64];
    snprintf(dir, sizeof dir, "kbbad%zu/e.json", i);
    write_tmp(0, dir, cases[i].text);
    char *slash = strrchr(pbuf[0], '/');
    *slash = 0;
    ag_diags d;
    ag_diags_init(&d);
    ag_kb kb;
    CHECK_EQ_INT(ag_kb_load(pbuf[0], &d, &kb), AG_EPARSE);
    ag_str s = AG_STR_INIT;
    ag_diags_format(&d, &s);
    CHECK_CONTAINS(ag_str_cstr(&s), cases[i].want);
    CHECK_CONTAINS(ag_str_cstr(&s), "e.json:");
    CHECK(d.items.n >= 1 && d.items.v[0].line == cases[i].line);
    ag_str_release(&s);
    ag_diags_release(&d);
  }
  ag_diags d;
  ag_diags_init(&d);
  ag_kb kb;
  CHECK_EQ_INT(ag_kb_load(tmp_path(0, "no-such-kb"), &d, &kb), AG_ENOTFOUND);
  ag_diags_release(&d);
}

static char *gemm_src(void) {
  char *src = NULL;
  size_t len;
  CHECK(ag_file_read(src_path(0, "examples/tile/gemm_naive.tile"), &src, &len) == 0);
  return src;
}

static char *replace(const char *s, const char *from, const char *to) {
  const char *f = strstr(s, from);
  CHECK(f != NULL);
  if (!f)
    return ag_strdup(s);
  ag_str o = AG_STR_INIT;
  ag_str_append(&o, s, (size_t)(f - s));
  ag_str_puts(&o, to);
  ag_str_puts(&o, f + strlen(from));
  return o.p;
}

static const json_t *step_of(const ag_opt_verdict *v, const char *name) {
  size_t i;
  json_t *s;
  json_array_foreach(json_object_get(v->feedback, "steps"), i, s) {
    if (!strcmp(json_string_value(json_object_get(s, "step")), name))
      return s;
  }
  return NULL;
}

/* The entry id of kb (NULL: not there). */
static const ag_kb_entry *kb_entry(const ag_kb *kb, const char *id) {
  for (int i = 0; i < kb->n; i++)
    if (!strcmp(kb->e[i].id, id))
      return &kb->e[i];
  return NULL;
}

/* The validator's verdict on src for e's example task: the step that
 * failed ("" when none). */
static void example_verdict(const ag_kb_entry *e, const char *src, char *step, size_t cap) {
  ag_opt_task *t = example_task(e);
  ag_opt_verdict v;
  memset(&v, 0, sizeof v);
  snprintf(step, cap, "(no verdict)");
  if (t && validate_src(t, src, e, &v) == 0)
    snprintf(step, cap, "%s", v.step);
  ag_opt_verdict_release(&v);
  ag_opt_task_free(t);
}

/* e applied to src with value val validates at e's example, its result
 * holding want. */
static void kb_value_validates(const ag_kb_entry *e, const char *src, const json_t *val,
                               const char *want) {
  char *out = NULL, *what = NULL, step[64];
  ag_str why = AG_STR_INIT;
  CHECK_EQ_INT(ag_kb_apply(e, src, val, &out, &what, &why), 0);
  CHECK_CONTAINS(out, want);
  example_verdict(e, out ? out : "", step, sizeof step);
  CHECK_EQ_STR(step, "");
  ag_free(out);
  ag_free(what);
  ag_str_release(&why);
}

/* got is hand from hand's first constant line "\nBM = " on. */
static void same_text_from_bm(const char *got, const char *hand) {
  const char *g = got ? strstr(got, "\nBM = ") : NULL, *h = hand ? strstr(hand, "\nBM = ") : NULL;
  CHECK(g && h);
  if (g && h)
    CHECK_EQ_STR(g, h);
}

/* e applied with its first value to the example file start_rel (into
 * *src, the result *out, its name *what, which must be want); *hand: the
 * file hand_rel the result is compared with. Returns e's values (2 of them). */
static const json_t *kb_apply_to_file(const ag_kb_entry *e, const char *start_rel,
                                      const char *hand_rel, const char *want, char **src,
                                      char **hand, char **out, char **what) {
  size_t len;
  ag_str why = AG_STR_INIT;
  CHECK(ag_file_read(src_path(1, start_rel), src, &len) == 0);
  CHECK(ag_file_read(src_path(1, hand_rel), hand, &len) == 0);
  const json_t *vals = ag_kb_values(e);
  CHECK_EQ_INT(json_array_size(vals), 2);
  CHECK_EQ_INT(ag_kb_apply(e, *src ? *src : "", json_array_get(vals, 0), out, what, &why), 0);
  CHECK_EQ_STR(*what, want);
  ag_str_release(&why);
  return vals;
}

/* The structural (splice) entries on their own: each output is what the
 * hand-written kernel is, or correct at every value, and the parts of the
 * edit that make it right are needed (without them the validator refuses
 * the program). */
TEST(test_kb_structural) {
  ag_diags d;
  ag_diags_init(&d);
  ag_kb kb;
  CHECK_EQ_INT(ag_kb_load(src_path(0, "src/agent/kb"), &d, &kb), 0);
  ag_diags_release(&d);
  const ag_kb_entry *cs = kb_entry(&kb, "attn-causal-skip"), *gp = kb_entry(&kb, "gemm-persistent");
  const ag_kb_entry *tl = kb_entry(&kb, "tma-loads"), *ws = kb_entry(&kb, "warp-specialize");
  CHECK(cs && gp && tl && ws);
  char step[64], *src = NULL, *out = NULL, *what = NULL, *hand = NULL;
  size_t len;
  ag_str why = AG_STR_INIT;
  if (cs) {
    /* causal skipping: the result is attention_hopper.tile (which skips by
       hand) from its first constant on */
    CHECK(ag_file_read(src_path(1, "examples/tile/attention_causal_naive.tile"), &src, &len) == 0);
    CHECK(ag_file_read(src_path(1, "examples/tile/attention_hopper.tile"), &hand, &len) == 0);
    CHECK_EQ_INT(ag_kb_apply(cs, src, NULL, &out, &what, &why), 0);
    CHECK_EQ_STR(what, "kb:attn-causal-skip(2 steps)");
    if (out && hand && strstr(out, "\nBc = ") && strstr(hand, "\nBc = "))
      CHECK_EQ_STR(strstr(out, "\nBc = "), strstr(hand, "\nBc = "));
    /* the hand-written kernel has no mask-free key loop to limit */
    CHECK(!ag_kb_applies(cs, hand, &why));
    CHECK_CONTAINS(ag_str_cstr(&why), "does not contain 'nkv = skv / Bc'");
    /* a bound one tile short checks clean but is wrong: the correctness
       step is what refuses it (the entry's bound is not) */
    char *shortb = out ? replace(out, "((qb * 64 + 63) / Bc + 1)", "((qb * 64 + 63) / Bc)") : NULL;
    example_verdict(cs, shortb ? shortb : "", step, sizeof step);
    CHECK_EQ_STR(step, "correctness");
    ag_free(shortb);
    ag_free(out);
    ag_free(what);
    ag_free(hand);
    ag_free(src);
    out = what = src = NULL;
  }
  if (tl) {
    /* TMA loads: from wgmma_gemm.tile the result is tma_gemm.tile from its
       first constant on, but for two words of the signature the edit keeps:
       the kernel's name and K's default (256 for the cp.async form, whose
       check at 512 exceeds the solver's default limit; 512 for the ring,
       two laps of its 4 stages) */
    const json_t *vals =
        kb_apply_to_file(tl, "examples/tile/wgmma_gemm.tile", "examples/tile/tma_gemm.tile",
                         "kb:tma-loads(S=4)", &src, &hand, &out, &what);
    char *named0 = out ? replace(out, "def wgmma_gemm(", "def tma_gemm(") : NULL;
    char *named = named0 ? replace(named0, "K: const = 256):", "K: const = 512):") : NULL;
    ag_free(named0);
    same_text_from_bm(named, hand);
    /* the hand-written kernel has no cp.async stages to replace */
    ag_str_clear(&why);
    CHECK(!ag_kb_applies(tl, hand, &why));
    CHECK_CONTAINS(ag_str_cstr(&why), "does not contain");
    /* a box's bytes missing from the expected count: the wait returns
       before the stage is whole, and the check refuses it */
    char *short_tx = out ? replace(out, "mbar_expect_tx(full[sj], tmA.bytes + tmB.bytes)",
                                   "mbar_expect_tx(full[sj], tmA.bytes)")
                         : NULL;
    example_verdict(tl, short_tx ? short_tx : "", step, sizeof step);
    CHECK_EQ_STR(step, "check");
    ag_free(short_tx);
    ag_free(named);
    ag_free(out);
    ag_free(what);
    /* two stages (one k-tile in flight) validate too */
    kb_value_validates(tl, src, json_array_get(vals, 1), "\nS = 2          # stages\n");
    /* the epilogue's end missing: the step's 'through' is on no line */
    char *noend = replace(src, "C[bm * BM + m, bn * BN + n] = acc[v]", "C[bm * BM + m, bn * BN + n] = 0");
    ag_str_clear(&why);
    CHECK_EQ_INT(ag_kb_apply(tl, noend, json_array_get(vals, 0), &out, &what, &why), AG_EINVAL);
    CHECK_CONTAINS(ag_str_cstr(&why), "splice step 8: '= acc[v]' is on no line after "
                                      "'# epilogue: each thread stores'");
    CHECK(out == NULL && what == NULL);
    ag_free(noend);
    ag_free(hand);
    ag_free(src);
    out = what = src = hand = NULL;
  }
  if (ws) {
    /* warp specialization: from tma_gemm.tile the result is tma_ws_gemm.tile
       from its first constant on (the kernel's name aside) */
    const json_t *vals =
        kb_apply_to_file(ws, "examples/tile/tma_gemm.tile", "examples/tile/tma_ws_gemm.tile",
                         "kb:warp-specialize(REGS=232)", &src, &hand, &out, &what);
    char *named = out ? replace(out, "def tma_gemm(", "def tma_ws_gemm(") : NULL;
    same_text_from_bm(named, hand);
    ag_str_clear(&why);
    CHECK(!ag_kb_applies(ws, hand, &why));
    CHECK_CONTAINS(ag_str_cstr(&why), "the program");
    /* without the consumer's release the producer's wait on empty in the
       ring's second lap never returns: the check refuses it */
    char *norel = out ? replace(out, "            mbar_arrive(empty[s])\n", "") : NULL;
    example_verdict(ws, norel ? norel : "", step, sizeof step);
    CHECK_EQ_STR(step, "check");
    ag_free(norel);
    /* chained on wgmma_gemm.tile, tma-loads then warp-specialize give the
       same text (K's default and the name are wgmma_gemm's) */
    char *t1 = NULL, *t2 = NULL, *w1 = NULL, *w2 = NULL, *cp = NULL;
    CHECK(ag_file_read(src_path(1, "examples/tile/wgmma_gemm.tile"), &cp, &len) == 0);
    if (tl && cp) {
      CHECK_EQ_INT(ag_kb_apply(tl, cp, ag_kb_values(tl) ? json_array_get(ag_kb_values(tl), 0) : NULL,
                               &t1, &w1, &why), 0);
      CHECK(t1 && ag_kb_applies(ws, t1, NULL));
      CHECK_EQ_INT(ag_kb_apply(ws, t1 ? t1 : "", json_array_get(vals, 0), &t2, &w2, &why), 0);
      char *c0 = t2 ? replace(t2, "def wgmma_gemm(", "def tma_ws_gemm(") : NULL;
      char *c1 = c0 ? replace(c0, "K: const = 256):", "K: const = 512):") : NULL;
      same_text_from_bm(c1, hand);
      ag_free(c0);
      ag_free(c1);
    }
    ag_free(t1);
    ag_free(t2);
    ag_free(w1);
    ag_free(w2);
    ag_free(cp);
    ag_free(named);
    ag_free(out);
    ag_free(what);
    /* the other register split validates too */
    kb_value_validates(ws, src, json_array_get(vals, 1), "        setmaxnreg_inc(256)\n");
    ag_free(hand);
    ag_free(src);
    out = what = src = hand = NULL;
  }
  if (gp) {
    /* persistent: every value validates (NB = 8 leaves blocks past the 4
       row blocks with no tile) */
    src = gemm_src();
    const json_t *vals = ag_kb_values(gp);
    CHECK_EQ_INT(json_array_size(vals), 3);
    for (size_t i = 0; i < json_array_size(vals); i++) {
      CHECK_EQ_INT(ag_kb_apply(gp, src, json_array_get(vals, i), &out, &what, &why), 0);
      char nb[64];
      snprintf(nb, sizeof nb, "kb:gemm-persistent(NB=%lld)",
               (long long)json_integer_value(json_array_get(vals, i)));
      CHECK_EQ_STR(what, nb);
      CHECK_CONTAINS(out, "@grid(NB, N / BN)\n");
      CHECK_CONTAINS(out, "    for j in range((M / BM + NB - 1 - blockIdx.x) / NB):\n"
                          "        bm = blockIdx.x + j * NB\n        fill(acc, 0)\n");
      CHECK_CONTAINS(out, "\n                    C[bm * BM"); /* the epilogue moved into the loop */
      CHECK(!strstr(out, "\n    bm = blockIdx.x\n"));
      example_verdict(gp, out ? out : "", step, sizeof step);
      CHECK_EQ_STR(step, "");
      if (i == 0) {
        /* without the prologue's resets the next tile's cp.asyncs land on
           the last one's tags: the check refuses it */
        char *a = replace(out, "                reset(sA[s, :, :])\n", "");
        char *b = replace(a, "                reset(sB[s, :, :])\n", "");
        char *c = replace(b, "STAGES = 1\n", "STAGES = 2\n");
        example_verdict(gp, c, step, sizeof step);
        CHECK_EQ_STR(step, "check");
        ag_free(a);
        ag_free(b);
        ag_free(c);
      }
      ag_free(out);
      ag_free(what);
    }
    /* a value is needed, and a program without the anchors is refused */
    ag_str_clear(&why);
    CHECK_EQ_INT(ag_kb_apply(gp, src, NULL, &out, &what, &why), AG_EINVAL);
    CHECK_CONTAINS(ag_str_cstr(&why), "gemm-persistent needs a positive integer value");
    char *nofill = replace(src, "    fill(acc, 0)\n", "    fill(acc, 1 - 1)\n");
    ag_str_clear(&why);
    CHECK(!ag_kb_applies(gp, nofill, NULL));
    CHECK_EQ_INT(ag_kb_apply(gp, nofill, json_array_get(vals, 0), &out, &what, &why), AG_EINVAL);
    CHECK_CONTAINS(ag_str_cstr(&why), "splice step 5: '    fill(acc, 0)' is on no line");
    char *twice = replace(src, "    fill(acc, 0)\n", "    fill(acc, 0)\n    fill(acc, 0)\n");
    ag_str_clear(&why);
    CHECK_EQ_INT(ag_kb_apply(gp, twice, json_array_get(vals, 0), &out, &what, &why), AG_EINVAL);
    CHECK_CONTAINS(ag_str_cstr(&why), "splice step 5: '    fill(acc, 0)' is on more than one line");
    CHECK(out == NULL && what == NULL);
    ag_free(twice);
    ag_free(nofill);
    ag_free(src);
  }
  /* the steps on their own: an indent ends with its block (a blank line
     and a comment inside it do not end it), before / after / replace
     write at the anchor's indentation, {V} is the value, steps see the
     previous ones' result */
  json_error_t je;
  ag_kb_entry fake = {"fake", "fake.json",
                      json_loads("{\"edit\": {\"kind\": \"splice\", \"name\": \"N\", \"values\": "
                                 "[7], \"steps\": [{\"at\": \"b = 1\", \"before\": [\"for i in range({V}):\"]}, "
                                 "{\"at\": \"b = 1\", \"indent\": 4}, {\"at\": "
                                 "\"c = 2\", \"after\": [\"e = {V} + {V}\"]}, {\"at\": \"x:\", "
                                 "\"replace\": [\"y:\", \"z\"]}, {\"at\": \"a = 0\", \"through\": \"= \", "
                                 "\"replace\": [\"f = 5\"]}]}}", 0, &je)};
  CHECK(fake.j != NULL);
  json_t *seven = json_integer(7);
  CHECK_EQ_INT(ag_kb_apply(&fake, "x:\n  a = 0\n  b = 1\n  c = 2\n\n # k\nd = 3", seven, &out,
                           &what, &why), 0);
  json_decref(seven);
  CHECK_EQ_STR(out, "y:\nz\n  f = 5\n      c = 2\n      e = 7 + 7\n"
                    "\n     # k\nd = 3");
  CHECK_EQ_STR(what, "kb:fake(N=7)");
  ag_free(out);
  ag_free(what);
  json_decref(fake.j);
  ag_str_release(&why);
  ag_kb_release(&kb);
}

#define STORE_LINE                                                                             \
  "                C[bm * BM + wm * WM + mi * 16 + m, bn * BN + wn * WN + ni * 8 + n] = "      \
  "acc[mi, ni, e]"

/* The validator's steps, and the reward hacks it must reject. */
/* Timing sizes: checked and compared at sizes, bound (and timed, on a GPU)
 * at time_sizes; an assume the timing sizes violate is a bind failure. */
TEST(test_validator_time_sizes) {
  char *src = gemm_src();
  ag_opt_verdict v;
  ag_opt_task *t = load_task(
      task_file(0, "valts", ",\n  \"time_sizes\": {\"M\": 4096, \"N\": 2048, \"K\": 4096}"));
  CHECK(t != NULL);
  if (t && src) {
    CHECK_EQ_INT(validate_src(t, src, NULL, &v), 0);
    CHECK(v.ok);
    const json_t *b = step_of(&v, "bind");
    CHECK_EQ_STR(json_string_value(json_object_get(b, "time_sizes")), "M=4096,N=2048,K=4096");
    CHECK_EQ_STR(json_string_value(json_object_get(step_of(&v, "correctness"), "runner")),
                 "interp"); /* the correctness runs at 64^3 */
    ag_opt_verdict_release(&v);
  }
  ag_opt_task_free(t);
  t = load_task(task_file(0, "valts2", ",\n  \"time_sizes\": {\"M\": 4096, \"N\": 2000, \"K\": 4096}"));
  CHECK(t != NULL);
  if (t && src) {
    CHECK_EQ_INT(validate_src(t, src, NULL, &v), 0);
    CHECK(!v.ok);
    CHECK_EQ_STR(v.step, "bind");
    const json_t *b = step_of(&v, "bind");
    CHECK_EQ_STR(json_string_value(json_object_get(b, "sizes")), "time_sizes");
    CHECK_CONTAINS(json_string_value(json_object_get(b, "message")), "N % BN == 0");
    CHECK(step_of(&v, "correctness") == NULL); /* never run */
    ag_opt_verdict_release(&v);
    /* the searches' filter says the same before anything is checked */
    char why[512];
    CHECK_EQ_INT(ag_opt_admissible(t, src, "cand", why, sizeof why), 1);
    CHECK_CONTAINS(why, "N % BN == 0");
  }
  ag_opt_task_free(t);
  /* admissible: binds at sizes and time_sizes; refused at sizes; unparsable */
  t = load_task(task_file(0, "valts", ",\n  \"time_sizes\": {\"M\": 4096, \"N\": 2048, \"K\": 4096}"));
  CHECK(t != NULL);
  if (t && src) {
    char why[512];
    CHECK_EQ_INT(ag_opt_admissible(t, src, "cand", why, sizeof why), 0);
    CHECK_EQ_STR(why, "");
    char *big = ag_strdup(src), *at = big ? strstr(big, "\nBM = 32") : NULL;
    CHECK(at != NULL);
    if (at) { /* BM = 128 at M = 64 */
      memcpy(at, "\nBM =128", 8);
      CHECK_EQ_INT(ag_opt_admissible(t, big, "cand", why, sizeof why), 1);
      CHECK_CONTAINS(why, "M % BM == 0");
    }
    ag_free(big);
    CHECK_EQ_INT(ag_opt_admissible(t, "def (", "cand", why, sizeof why), 1);
    CHECK_CONTAINS(why, "cand:1:");
  }
  ag_opt_task_free(t);
  ag_free(src);
}

TEST(test_validator) {
  ag_opt_task *t = load_task(task_file(0, "val", ""));
  CHECK(t != NULL);
  if (!t)
    return;
  char *src = gemm_src();
  ag_opt_verdict v;
  /* the start: valid; on the CPU nothing is timed, and it says so */
  CHECK_EQ_INT(validate_src(t, src, NULL, &v), 0);
  CHECK(v.ok);
  CHECK(!v.timed);
  const json_t *tm = step_of(&v, "timing");
  CHECK(tm != NULL);
  CHECK_EQ_STR(json_string_value(json_object_get(tm, "status")), "not run");
  CHECK_EQ_STR(json_string_value(json_object_get(step_of(&v, "correctness"), "runner")), "interp");
  CHECK_EQ_INT(json_array_size(json_object_get(step_of(&v, "correctness"), "seeds")), 2); /* every seed ran */
  CHECK(json_object_get(tm, "median_ms") == NULL);
  ag_opt_verdict_release(&v);

  /* hack 1: a cached output. The candidate never stores C, so it passes only
   * where its output buffer already holds the reference's result */
  char *hack = replace(src, STORE_LINE, "                x = acc[mi, ni, e]");
  CHECK_EQ_INT(validate_src(t, hack, NULL, &v), 0);
  CHECK(!v.ok);
  CHECK_EQ_STR(v.step, "correctness");
  CHECK_CONTAINS(json_string_value(json_object_get(step_of(&v, "correctness"), "message")), "C[");
  CHECK(json_integer_value(json_object_get(step_of(&v, "correctness"), "wrong")) > 4000);
  CHECK(step_of(&v, "timing") == NULL); /* never timed */
  ag_opt_verdict_release(&v);
  ag_free(hack);

  /* hack 2: computes C right, and writes its input A */
  char with[1024];
  snprintf(with, sizeof with, "%s\n%s", STORE_LINE,
           "                A[bm * BM + wm * WM + mi * 16 + m, 0] = cvt(acc[mi, ni, e], bf16)");
  hack = replace(src, STORE_LINE, with);
  CHECK_EQ_INT(validate_src(t, hack, NULL, &v), 0);
  CHECK(!v.ok);
  CHECK_EQ_STR(v.step, "correctness");
  CHECK_CONTAINS(json_string_value(json_object_get(step_of(&v, "correctness"), "message")),
                 "input 'A' was modified");
  ag_opt_verdict_release(&v);
  ag_free(hack);

  /* a wrong ldmatrix row: argus check's counterexample is the feedback */
  hack = replace(src, "r = wm * WM + mi * 16 + lane % 16", "r = wm * WM + mi * 16 + lane % 8");
  CHECK_EQ_INT(validate_src(t, hack, NULL, &v), 0);
  CHECK(!v.ok);
  CHECK_EQ_STR(v.step, "check");
  const json_t *ck = step_of(&v, "check");
  CHECK(json_array_size(json_object_get(ck, "violated")) >= 1);
  CHECK(json_object_get(json_array_get(json_object_get(ck, "violated"), 0), "counterexample"));
  CHECK_CONTAINS(json_string_value(json_object_get(ck, "text")), "violated");
  CHECK(step_of(&v, "lower") == NULL);
  ag_opt_verdict_release(&v);
  ag_free(hack);

  /* a syntax error; sizes that violate an assume; removed assertions */
  CHECK_EQ_INT(validate_src(t, "def (:\n", NULL, &v), 0);
  CHECK_EQ_STR(v.step, "parse");
  CHECK_CONTAINS(json_string_value(json_object_get(step_of(&v, "parse"), "text")), "candidate.tile:1:");
  ag_opt_verdict_release(&v);
  hack = replace(src, "BM = 32\n", "BM = 128\n");
  CHECK_EQ_INT(validate_src(t, hack, NULL, &v), 0);
  CHECK_EQ_STR(v.step, "bind");
  CHECK_CONTAINS(json_string_value(json_object_get(step_of(&v, "bind"), "message")), "M % BM == 0");
  ag_opt_verdict_release(&v);
  ag_free(hack);
  ag_kb_entry fake = {"fake", "fake.json", json_pack("{s:[s]}", "invariants", "assertions")};
  hack = replace(src, "            assert tag(sAh[st, r, tid % 4 * 8]) != top\n", "");
  CHECK_EQ_INT(validate_src(t, hack, &fake, &v), 0);
  CHECK_EQ_STR(v.step, "invariants");
  CHECK_CONTAINS(json_string_value(json_object_get(step_of(&v, "invariants"), "message")),
                 "removed tag assertions: 3 in the program, 4");
  ag_opt_verdict_release(&v);
  CHECK_EQ_INT(validate_src(t, src, &fake, &v), 0);
  CHECK(v.ok);
  ag_opt_verdict_release(&v);
  json_decref(fake.j);
  ag_free(hack);

  /* another kernel signature than the reference's */
  hack = replace(src, "C: Tensor(M, N, f32)", "C: Tensor(M, N, bf16)");
  char *h2 = replace(hack, "= acc[mi, ni, e]", "= cvt(acc[mi, ni, e], bf16)");
  CHECK_EQ_INT(validate_src(t, h2, NULL, &v), 0);
  CHECK_EQ_STR(v.step, "correctness");
  CHECK_CONTAINS(json_string_value(json_object_get(step_of(&v, "correctness"), "message")),
                 "differ from the reference's");
  ag_opt_verdict_release(&v);
  ag_free(hack);
  ag_free(h2);
  ag_free(src);
  ag_opt_task_free(t);

  /* a tolerance the task sets: tiny enough that bf16 products in another
   * order (BN 64: another warp split) still pass, zero-width fails is not
   * expressible (must be > 0); a huge one accepts an off-by-one-ulp change */
  t = load_task(task_file(0, "tol", ""));
  CHECK(t != NULL);
  if (t) {
    src = gemm_src();
    hack = replace(src, STORE_LINE, "                C[bm * BM + wm * WM + mi * 16 + m, bn * BN + "
                                    "wn * WN + ni * 8 + n] = acc[mi, ni, e] * 1.01");
    CHECK_EQ_INT(validate_src(t, hack, NULL, &v), 0);
    CHECK_EQ_STR(v.step, "correctness"); /* 1 % off: beyond f32's 1e-3 */
    ag_opt_verdict_release(&v);
    t->atol = 0.5;
    t->rtol = 0.05;
    CHECK_EQ_INT(validate_src(t, hack, NULL, &v), 0);
    CHECK(v.ok); /* within the task's own tolerance */
    ag_opt_verdict_release(&v);
    ag_free(hack);
    ag_free(src);
    ag_opt_task_free(t);
  }
}

static ag_store *open_ws(const char *name) {
  const char *p = tmp_path(0, name);
  ag_remove_tree(p);
  ag_store *st = NULL;
  CHECK_EQ_INT(ag_store_open(p, AG_STORE_CREATE, &st), 0);
  return st;
}

/* The options of a run on the CPU. */
static ag_opt_opts cpu_opts(const char *policy, int trials, const char *kb_dir) {
  ag_opt_opts o;
  memset(&o, 0, sizeof o);
  o.policy = policy;
  o.trials = trials;
  o.kb_dir = kb_dir;
  o.device = AG_OPT_DEVICE_CPU;
  return o;
}

static int run_opt(ag_store *st, const ag_opt_task *t, const char *policy, int trials, int resume,
                   ag_opt_result *r, char *err) {
  ag_opt_opts o = cpu_opts(policy, trials, src_path(5, "src/agent/kb"));
  o.resume = resume;
  return ag_opt_run(st, t, &o, r, err, 1024);
}

static const char *const evidence_path[] = {
    "start", "kb:pipeline-stages(STAGES=2)", "kb:pipeline-stages(STAGES=3)",
    "kb:pipeline-stages(STAGES=4)", "kb:block-tile-m(BM=64)", "kb:block-tile-n(BN=64)"};

/* The loop: the evidence policy's trajectory as versions in the workspace,
 * the refs, the log; stop and resume give the uninterrupted run's path. */
TEST(test_loop) {
  ag_opt_task *t = load_task(task_file(0, "loop", ""));
  CHECK(t != NULL);
  if (!t)
    return;
  char err[1024];
  ag_opt_result r;
  ag_store *st = open_ws("ws-loop");
  CHECK_EQ_INT(run_opt(st, t, "evidence", 4, 0, &r, err), 0);
  CHECK_EQ_INT(r.ntrials, 5);
  CHECK_EQ_INT(r.stopped, 0);
  for (int i = 0; i < r.ntrials && i < 5; i++) {
    CHECK_EQ_INT(r.trials[i].n, i);
    CHECK_EQ_STR(r.trials[i].edit, evidence_path[i]);
    CHECK(r.trials[i].valid);
    CHECK(!r.trials[i].timed);
    CHECK_EQ_INT(r.trials[i].version, i + 1);
    CHECK_EQ_INT(r.trials[i].parent, i); /* a chain: each forked from the last valid one */
  }
  CHECK_EQ_INT(r.best, 1); /* nothing timed: the start */
  /* the workspace: versions forked from their parents by their edits */
  ag_version v;
  CHECK_EQ_INT(ag_store_version_get(st, 3, &v), 0);
  CHECK_EQ_INT(v.parent, 2);
  CHECK_EQ_STR(v.transform, "kb:pipeline-stages(STAGES=3)");
  CHECK(v.task_id > 0);
  void *data;
  size_t len;
  CHECK_EQ_INT(ag_store_get(st, v.module, &data, &len), 0);
  CHECK_CONTAINS((char *)data, "STAGES = 3\n");
  ag_free(data);
  ag_store_version_release(&v);
  ag_ref ref;
  CHECK_EQ_INT(ag_store_ref_get(st, "optimize/loop/best", &ref), 0);
  CHECK_EQ_INT(ref.target.kind, AG_OBJ_VERSION);
  CHECK_EQ_INT(ref.target.id, 1);
  CHECK_EQ_INT(ag_store_ref_get(st, "optimize/loop/state", &ref), 0);
  CHECK_EQ_STR(ref.target.hash, r.state);
  CHECK_EQ_INT(ag_store_get(st, r.state, &data, &len), 0);
  CHECK_CONTAINS((char *)data, "\"policy\":\"evidence\"");
  ag_free(data);
  ag_log_entry *log;
  size_t nlog;
  CHECK_EQ_INT(ag_store_log(st, 0, &log, &nlog), 0);
  ag_str all = AG_STR_INIT;
  for (size_t i = 0; i < nlog; i++)
    ag_str_printf(&all, "%s\n", log[i].text);
  CHECK_CONTAINS(ag_str_cstr(&all), "v2 from v1 by kb:pipeline-stages(STAGES=2)");
  CHECK_CONTAINS(ag_str_cstr(&all), "v5 from v4 by kb:block-tile-m(BM=64)");
  CHECK_CONTAINS(ag_str_cstr(&all), "collect ok");
  ag_str_release(&all);
  ag_store_log_free(log, nlog);
  ag_opt_result_release(&r);
  /* a second run without --resume is refused; resume continues */
  CHECK_EQ_INT(run_opt(st, t, "evidence", 4, 0, &r, err), AG_EEXISTS);
  CHECK_CONTAINS(err, "--resume");
  ag_opt_result_release(&r);
  CHECK_EQ_INT(run_opt(st, t, "blind", 6, 1, &r, err), AG_EINVAL);
  CHECK_CONTAINS(err, "used policy 'evidence'");
  ag_opt_result_release(&r);
  ag_store_close(st);

  /* stop after 2, resume to 5: the same path as one run of 5 */
  st = open_ws("ws-resume");
  CHECK_EQ_INT(run_opt(st, t, "evidence", 5, 1, &r, err), AG_ENOTFOUND);
  CHECK_CONTAINS(err, "holds no run");
  ag_opt_result_release(&r);
  CHECK_EQ_INT(run_opt(st, t, "evidence", 2, 0, &r, err), 0);
  CHECK_EQ_INT(r.ntrials, 3);
  ag_opt_result_release(&r);
  CHECK_EQ_INT(run_opt(st, t, "evidence", 5, 1, &r, err), 0);
  CHECK_EQ_INT(r.ntrials, 6);
  for (int i = 0; i < r.ntrials && i < 6; i++)
    CHECK_EQ_STR(r.trials[i].edit, evidence_path[i]);
  if (r.ntrials == 6) { /* BM 128 > M 64: not proposed, and said so (no trial spent) */
    CHECK(r.trials[5].valid);
    CHECK_CONTAINS(r.trials[5].rank,
                   "not proposed, the task's sizes refuse them: kb:block-tile-m(BM=128)");
  }
  ag_opt_result_release(&r);
  /* resumed at its end: nothing more to do */
  CHECK_EQ_INT(run_opt(st, t, "evidence", 5, 1, &r, err), 0);
  CHECK_EQ_INT(r.ntrials, 6);
  ag_opt_result_release(&r);
  ag_store_close(st);

  /* the budget stops before a trial; blind is deterministic for its seed */
  st = open_ws("ws-budget");
  ag_opt_opts o;
  memset(&o, 0, sizeof o);
  o.policy = "evidence";
  o.trials = 5;
  o.budget_s = 1e-9;
  o.kb_dir = src_path(5, "src/agent/kb");
  o.device = AG_OPT_DEVICE_CPU;
  CHECK_EQ_INT(ag_opt_run(st, t, &o, &r, err, sizeof err), 0);
  CHECK_EQ_INT(r.stopped, 1);
  CHECK_EQ_INT(r.ntrials, 1);
  ag_opt_result_release(&r);
  ag_store_close(st);
  char first[6][128];
  for (int k = 0; k < 2; k++) {
    st = open_ws(k ? "ws-blind2" : "ws-blind1");
    CHECK_EQ_INT(run_opt(st, t, "blind", 5, 0, &r, err), 0);
    CHECK_EQ_INT(r.ntrials, 6);
    int same_as_evidence = 1;
    for (int i = 0; i < r.ntrials && i < 6; i++) {
      if (!k)
        snprintf(first[i], sizeof first[i], "%s", r.trials[i].edit);
      else
        CHECK_EQ_STR(r.trials[i].edit, first[i]);
      same_as_evidence &= !strcmp(r.trials[i].edit, evidence_path[i]);
    }
    CHECK(!same_as_evidence); /* blind ignores the KB's ranking */
    ag_opt_result_release(&r);
    ag_store_close(st);
  }
  /* --seed: another seed, another blind order (the same for the same seed), recorded in the
   * state; a resume keeps it and refuses another */
  {
    static const uint64_t seeds[2] = {7, 11};
    char order[2][6][128];
    ag_store *st7 = NULL;
    for (int k = 0; k < 2; k++) {
      st = open_ws(k ? "ws-seed11" : "ws-seed7");
      ag_opt_opts os = cpu_opts("blind", 5, src_path(5, "src/agent/kb"));
      os.seed = seeds[k];
      CHECK_EQ_INT(ag_opt_run(st, t, &os, &r, err, sizeof err), 0);
      CHECK_EQ_INT(r.ntrials, 6);
      for (int i = 0; i < 6 && i < r.ntrials; i++)
        snprintf(order[k][i], sizeof order[k][i], "%s", r.trials[i].edit);
      ag_opt_result_release(&r);
      if (k)
        ag_store_close(st);
      else
        st7 = st; /* resumed below */
    }
    int differ = 0, differ_default = 0;
    for (int i = 1; i < 6; i++) {
      differ |= strcmp(order[0][i], order[1][i]) != 0;
      differ_default |= strcmp(order[0][i], first[i]) != 0;
    }
    CHECK(differ);         /* seeds 7 and 11 order the KB differently */
    CHECK(differ_default); /* and 7 is not the task's own seed's order */
    st = st7;
    ag_opt_opts os = cpu_opts("blind", 6, src_path(5, "src/agent/kb"));
    os.resume = 1;
    os.seed = 11;
    CHECK_EQ_INT(ag_opt_run(st, t, &os, &r, err, sizeof err), AG_EINVAL);
    CHECK_CONTAINS(err, "was started with --seed 7, not 11");
    ag_opt_result_release(&r);
    os.seed = 0; /* a resume without --seed keeps 7: the trials so far, then one more */
    CHECK_EQ_INT(ag_opt_run(st, t, &os, &r, err, sizeof err), 0);
    CHECK_EQ_INT(r.ntrials, 7);
    for (int i = 0; i < 6 && i < r.ntrials; i++)
      CHECK_EQ_STR(r.trials[i].edit, order[0][i]);
    ag_opt_result_release(&r);
    ag_store_close(st);
  }
  /* the search runs dry: every edit from every valid version tried (a KB of
   * the swizzle alone: one edit, then nothing applies) */
  char *entry = NULL;
  size_t elen;
  CHECK(ag_file_read(src_path(1, "src/agent/kb/smem-swizzle.json"), &entry, &elen) == 0);
  write_tmp(2, "kb-one/smem-swizzle.json", entry ? entry : "");
  ag_free(entry);
  st = open_ws("ws-dry");
  memset(&o, 0, sizeof o);
  o.policy = "evidence";
  o.trials = 5;
  o.kb_dir = tmp_path(5, "kb-one");
  o.device = AG_OPT_DEVICE_CPU;
  CHECK_EQ_INT(ag_opt_run(st, t, &o, &r, err, sizeof err), 0);
  CHECK_EQ_INT(r.stopped, 2);
  CHECK_EQ_INT(r.ntrials, 2);
  ag_opt_result_release(&r);
  ag_store_close(st);
  ag_opt_task_free(t);
}

static int have_python(void) {
  char *p = ag_which("python3");
  ag_free(p);
  return p != NULL;
}

/* The llm protocol with a scripted fake policy (tests/agent/fake_policy.py). */
TEST(test_llm_policy) {
  if (!have_python()) {
    SKIP("no python3 for the fake policy");
    return;
  }
  ag_opt_task *t = load_task(task_file(0, "llm", ""));
  CHECK(t != NULL);
  if (!t)
    return;
  char err[1024];
  ag_opt_result r;
  ag_opt_opts o = cpu_opts("llm", 4, src_path(5, "src/agent/kb"));
  const char *argv[] = {"python3", src_path(4, "tests/agent/fake_policy.py"), "script", NULL};
  o.llm_argv = argv;
  ag_store *st = open_ws("ws-llm");
  int rc = ag_opt_run(st, t, &o, &r, err, sizeof err);
  if (rc)
    fprintf(stderr, "llm: %s\n", err);
  CHECK_EQ_INT(rc, 0);
  CHECK_EQ_INT(r.ntrials, 5);
  if (r.ntrials == 5) {
    CHECK_EQ_STR(r.trials[1].edit, "kb:smem-swizzle(2 sites)");
    CHECK(r.trials[1].valid);
    CHECK_EQ_STR(r.trials[2].edit, "llm:write-input");
    CHECK(!r.trials[2].valid); /* the planted hack: rejected, and the run goes on */
    CHECK_EQ_STR(r.trials[2].step, "correctness");
    CHECK_EQ_INT(r.trials[2].parent, 2);
    CHECK_EQ_STR(r.trials[3].edit, "llm:two stages");
    CHECK(r.trials[3].valid);
    CHECK_EQ_INT(r.trials[3].parent, 2); /* from the newest valid version, not the hack */
    CHECK_EQ_STR(r.trials[4].edit, "llm:cached-output");
    CHECK(!r.trials[4].valid);
    CHECK_EQ_STR(r.trials[4].step, "correctness");
    CHECK_EQ_INT(r.best, 1); /* no rejected candidate is ever the best */
  }
  ag_opt_result_release(&r);
  ag_store_close(st);

  /* the token budget: the same script with a log of each request; then a budget 100
   * bytes under the last request: the oldest trials are left out, said, and every request
   * with a history fits (one whose other fields exceed it goes with none) */
  const char *lg = tmp_path(2, "llm-requests.log");
  unlink(lg);
  const char *argl[] = {"python3", src_path(4, "tests/agent/fake_policy.py"), "script", lg, NULL};
  o.llm_argv = argl;
  st = open_ws("ws-llm-log");
  CHECK_EQ_INT(ag_opt_run(st, t, &o, &r, err, sizeof err), 0);
  ag_opt_result_release(&r);
  ag_store_close(st);
  FILE *lf = fopen(lg, "r");
  long h0 = -1, om0 = -1, b0 = -1, blast = -1, h, om, b;
  int nreq = 0;
  while (lf && fscanf(lf, "%ld %ld %ld", &h, &om, &b) == 3) {
    if (!nreq++)
      h0 = h, om0 = om, b0 = b;
    blast = b;
    CHECK_EQ_INT((int)om, 0); /* the default budget holds every trial */
    CHECK_EQ_INT((int)h, nreq);
  }
  if (lf)
    fclose(lf);
  CHECK_EQ_INT(nreq, 4);
  CHECK(h0 == 1 && om0 == 0 && b0 > 0);
  unlink(lg);
  o.llm_tokens = (int)((blast - 100) / 4);
  st = open_ws("ws-llm-budget");
  CHECK_EQ_INT(ag_opt_run(st, t, &o, &r, err, sizeof err), 0);
  CHECK_EQ_INT(r.ntrials, 5); /* the script's path, trimmed history or not */
  ag_opt_result_release(&r);
  ag_store_close(st);
  lf = fopen(lg, "r");
  int trimmed = 0;
  nreq = 0;
  while (lf && fscanf(lf, "%ld %ld %ld", &h, &om, &b) == 3) {
    nreq++;
    CHECK_EQ_INT((int)(h + om), nreq); /* kept + left out = every trial so far */
    CHECK(h == 0 || b <= 4L * o.llm_tokens);
    trimmed += om > 0;
  }
  if (lf)
    fclose(lf);
  CHECK_EQ_INT(nreq, 4);
  CHECK(trimmed >= 1);
  o.llm_tokens = 0;

  static const struct {
    const char *mode;
    int rc;
    const char *want;
  } bad[] = {
      {"crash", AG_ECHILD, "failed (exit 3); its stderr ends: fake policy: boom"},
      {"garbage", AG_EPARSE, "printed something that is not a candidate: 'I think"},
      {"unknown-kb", AG_EPARSE, "asked for KB entry 'no-such-entry', which does not exist"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *a2[] = {"python3", src_path(4, "tests/agent/fake_policy.py"), bad[i].mode, NULL};
    o.llm_argv = a2;
    st = open_ws("ws-llm-bad");
    CHECK_EQ_INT(ag_opt_run(st, t, &o, &r, err, sizeof err), bad[i].rc);
    CHECK_CONTAINS(err, bad[i].want);
    CHECK_EQ_INT(r.ntrials, 1); /* the start only: nothing recorded for a bad answer */
    ag_opt_result_release(&r);
    ag_store_close(st);
  }
  const char *nope[] = {"/no/such/policy", NULL};
  o.llm_argv = nope;
  st = open_ws("ws-llm-bad");
  CHECK_EQ_INT(ag_opt_run(st, t, &o, &r, err, sizeof err), AG_ECHILD);
  CHECK_CONTAINS(err, "cannot start the policy command '/no/such/policy'");
  ag_opt_result_release(&r);
  o.policy = "magic";
  CHECK_EQ_INT(ag_opt_run(st, t, &o, &r, err, sizeof err), AG_EPARSE);
  CHECK_CONTAINS(err, "unknown policy 'magic'");
  ag_opt_result_release(&r);
  o.policy = "llm";
  o.llm_argv = NULL;
  CHECK_EQ_INT(ag_opt_run(st, t, &o, &r, err, sizeof err), AG_EPARSE);
  CHECK_CONTAINS(err, "needs a command");
  ag_opt_result_release(&r);
  ag_store_close(st);
  ag_opt_task_free(t);
}


/* The naive attention start (examples/tile/attention_naive.tile: Bc = 16, no
 * swizzle) computes what the hand-written attention.tile computes: its
 * bench task names attention.tile as the reference, interpreted on the same
 * seeded Q, K, V; and a planted bug (a row's sum over 2 of its 4 lanes) is
 * caught. */
TEST(test_attention_naive) {
  ag_opt_task *t = load_task(src_path(0, "bench/optimize/attention_naive.task.json"));
  CHECK(t != NULL);
  if (!t)
    return;
  CHECK_CONTAINS(t->reference, "examples/tile/attention.tile");
  CHECK_EQ_STR(t->time_sizes, "sq=4096,hq=32,hkv=8,skv=4096,d=64");
  char *src = NULL;
  size_t len;
  CHECK(ag_file_read(t->program, &src, &len) == 0);
  ag_opt_verdict v;
  if (src && validate_src(t, src, NULL, &v) == 0) {
    if (!v.ok)
      fprintf(stderr, "attention_naive: %s\n", json_dumps(v.feedback, 0));
    CHECK(v.ok);
    CHECK_EQ_INT(json_array_size(json_object_get(step_of(&v, "correctness"), "seeds")), 2);
    ag_opt_verdict_release(&v);
  }
  const char *scale = "rl[rr] = rcp(sr + shfl_xor(sr, 2))";
  char *f = src ? strstr(src, scale) : NULL;
  CHECK(f != NULL);
  if (f) {
    ag_str bad = AG_STR_INIT;
    ag_str_append(&bad, src, (size_t)(f - src));
    ag_str_puts(&bad, "rl[rr] = rcp(sr)");
    ag_str_puts(&bad, f + strlen(scale));
    CHECK_EQ_INT(validate_src(t, bad.p, NULL, &v), 0);
    CHECK(!v.ok);
    CHECK_EQ_STR(v.step, "correctness");
    CHECK_CONTAINS(json_string_value(json_object_get(step_of(&v, "correctness"), "message")),
                   "O[");
    ag_opt_verdict_release(&v);
    ag_str_release(&bad);
  }
  ag_free(src);
  ag_opt_task_free(t);
}

/* ------------------------------------------------------------- evidence */

/* A report as `argus observe` writes it (its "values"): gemm's duration,
 * its mainloop 80 % and epilogue 10 %, and values the evidence ignores
 * (another kernel, another signal). */
static json_t *fake_report(void) {
  return json_pack(
      "{s:[{s:s,s:s,s:s,s:f}, {s:s,s:s,s:s,s:f}, {s:s,s:s,s:s,s:i}, {s:s,s:s,s:s,s:f},"
      " {s:s,s:s,s:s,s:f}, {s:s,s:s,s:s,s:f}]}",
      "values", "region", "gemm", "signal", "duration", "stat", "total", "value", 1000.0,
      "region", "gemm/mainloop", "signal", "duration", "stat", "total", "value", 800.0,
      "region", "gemm/mainloop", "signal", "duration", "stat", "count", "value", 2,
      "region", "gemm/epilogue", "signal", "duration", "stat", "total", "value", 100.0,
      "region", "other/mainloop", "signal", "duration", "stat", "total", "value", 990.0,
      "region", "gemm/prologue", "signal", "stalls", "stat", "total", "value", 999.0);
}

static int ev_calls, ev_mode; /* ev_mode 1: evidence; 0: none (as without a GPU) */

static int fake_evidence(const ag_opt_task *t, const ag_opt_opts *o, const char *src,
                         const char *workdir, json_t **ev, char *why, size_t whylen) {
  ev_calls++;
  if (!ev_mode) {
    snprintf(why, whylen, "no GPU in this test");
    return AG_ENODEV;
  }
  json_t *rep = fake_report();
  int rc = ag_opt_evidence_from_report(rep, "gemm", t->sizes, ev, why, whylen);
  json_decref(rep);
  return rc;
}

/* A KB of three entries over gemm_naive's knobs: ev-tile-m targets the
 * epilogue (prior 90); ev-stages the mainloop (prior 10) when it takes over
 * half the time; ev-tile-n the mainloop (prior 50) when it takes under half. */
static const char *evidence_kb(void) {
  static const char *const e[][2] = {
      {"ev-tile-m", "\"targets\": \"epilogue\", \"prior\": 90, \"precondition\": {\"program\": "
                    "[{\"const\": \"BM\", \"lt\": 128}]}, \"edit\": {\"kind\": \"set_const\", "
                    "\"name\": \"BM\", \"values\": [64]}"},
      {"ev-stages", "\"targets\": \"mainloop\", \"prior\": 10, \"precondition\": {\"program\": "
                    "[], \"evidence\": [{\"region\": \"mainloop\", \"signal\": \"duration\", "
                    "\"share_gt\": 0.5}]}, \"edit\": {\"kind\": \"set_const\", \"name\": "
                    "\"STAGES\", \"values\": [2]}"},
      {"ev-tile-n", "\"targets\": \"mainloop\", \"prior\": 50, \"precondition\": {\"program\": "
                    "[], \"evidence\": [{\"region\": \"mainloop\", \"signal\": \"duration\", "
                    "\"share_lt\": 0.5}]}, \"edit\": {\"kind\": \"set_const\", \"name\": \"BN\", "
                    "\"values\": [64]}"},
  };
  for (int i = 0; i < 3; i++) {
    char text[2048], fn[64];
    snprintf(text, sizeof text,
             "{\"id\": \"%s\", \"title\": \"t\", %s, \"invariants\": [\"assertions\"], "
             "\"example\": {\"program\": \"examples/tile/gemm_naive.tile\", \"sizes\": "
             "\"M=64,N=64,K=64\"}}\n", e[i][0], e[i][1]);
    snprintf(fn, sizeof fn, "kb-ev/%s.json", e[i][0]);
    write_tmp(2, fn, text);
  }
  return tmp_path(5, "kb-ev");
}

/* A constructed report (not a measurement) of gemm_naive.tile's kernel in
 * the knobs of src: the mainloop 80 % of the time; its warp instructions per
 * warp and k-tile counted from the program's loops (cp.async BM / 32 + BN /
 * 32, ldmatrix 2 (WM / 16 + WN / 16), mma 2 (WM / 16)(WN / 8)); registers
 * as ptxas 12.x gives for the lowered kernel at K = 2048 (38, 55, 72 at
 * 32 x 32, 64 x 32, 64 x 64 with one stage), 128 otherwise. Another
 * kernel's static values and inst_mix's total are there to be ignored. */
static json_t *gemm_report(const char *src) {
  int64_t bm = 32, bn = 32, stg = 1;
  ag_tile_src_const(src, "BM", &bm);
  ag_tile_src_const(src, "BN", &bn);
  ag_tile_src_const(src, "STAGES", &stg);
  int64_t wm = bm / 2, wn = bn / 2;
  int regs = stg == 1 && bm == 32 && bn == 32 ? 38 : stg == 1 && bm * bn == 2048 ? 55
             : stg == 1 && bm == 64 && bn == 64 ? 72 : 128;
  /* CUPTI's shared-memory wavefronts and bank conflicts per launch: ldmatrix on unswizzled
   * 64-byte rows conflicts (0.6 of the wavefronts over two launches), swizzled hardly; a
   * launch of another kernel is not gemm's */
  int sw = strstr(src, "swizzle(") != NULL;
  json_t *hw = json_pack(
      "[{s:s,s:s,s:s,s:i}, {s:s,s:s,s:s,s:i}, {s:s,s:s,s:s,s:i}, {s:s,s:s,s:s,s:i},"
      " {s:s,s:s,s:s,s:i}]",
      "region", "(launch 0 gemm)", "signal", "hw_counters", "stat",
      "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", "value", 1000, "region",
      "(launch 0 gemm)", "signal", "hw_counters", "stat",
      "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", "value", sw ? 20 : 500, "region",
      "(launch 1 gemm)", "signal", "hw_counters", "stat",
      "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", "value", 1000, "region",
      "(launch 1 gemm)", "signal", "hw_counters", "stat",
      "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", "value", sw ? 20 : 700, "region",
      "(launch 0 gemm_other)", "signal", "hw_counters", "stat",
      "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", "value", 999999);
  json_t *rep = json_pack(
      "{s:[{s:s,s:s,s:s,s:f}, {s:s,s:s,s:s,s:f}, {s:s,s:s,s:s,s:I}, {s:s,s:s,s:s,s:I},"
      " {s:s,s:s,s:s,s:I}, {s:s,s:s,s:s,s:I}, {s:s,s:s,s:s,s:i}, {s:s,s:s,s:s,s:i},"
      " {s:s,s:s,s:s,s:i}]}",
      "values", "region", "gemm", "signal", "duration", "stat", "total", "value", 1000.0,
      "region", "gemm/mainloop", "signal", "duration", "stat", "total", "value", 800.0,
      "region", "gemm/mainloop", "signal", "inst_mix", "stat", "ldgsts", "value",
      (json_int_t)(bm / 32 + bn / 32), "region", "gemm/mainloop", "signal", "inst_mix", "stat",
      "mem_shared", "value", (json_int_t)(2 * (wm / 16 + wn / 16)), "region", "gemm/mainloop",
      "signal", "inst_mix", "stat", "tensor", "value", (json_int_t)(2 * (wm / 16) * (wn / 8)),
      "region", "gemm/mainloop", "signal", "inst_mix", "stat", "integer", "value",
      (json_int_t)40, "region", "gemm/mainloop", "signal", "inst_mix", "stat", "total", "value",
      1, "region", "gemm", "signal", "static", "stat", "registers", "value", regs, "region",
      "other", "signal", "static", "stat", "registers", "value", 255);
  if (rep && hw)
    json_array_extend(json_object_get(rep, "values"), hw);
  json_decref(hw);
  return rep;
}

/* gemm_report's evidence with the occupancy of 128 threads and the
 * program's dynamic shared memory (STAGES (BM + BN) 64 bytes). */
static json_t *gemm_evidence(const char *src) {
  json_t *rep = gemm_report(src), *ev = NULL;
  char why[256];
  int64_t bm = 32, bn = 32, stg = 1;
  ag_tile_src_const(src, "BM", &bm);
  ag_tile_src_const(src, "BN", &bn);
  ag_tile_src_const(src, "STAGES", &stg);
  if (!ag_opt_evidence_from_report(rep, "gemm", "M=2048", &ev, why, sizeof why))
    ag_opt_evidence_occupancy(ev, 128, (unsigned)(stg * (bm + bn) * 64));
  json_decref(rep);
  return ev;
}

static int gemm_evidence_fn(const ag_opt_task *t, const ag_opt_opts *o, const char *src,
                            const char *workdir, json_t **ev, char *why, size_t whylen) {
  (void)t, (void)workdir;
  ev_calls++;
  CHECK_EQ_STR(o->evidence_signals, "duration,hw_counters,inst_mix,static"); /* the KB's */
  *ev = gemm_evidence(src);
  snprintf(why, whylen, "constructed");
  return *ev ? 0 : AG_ENOMEM;
}

static double kb_gain(const ag_kb *kb, const char *id, const json_t *ev, const char *src,
                      int *holds, ag_str *how) {
  for (int i = 0; i < kb->n; i++)
    if (!strcmp(kb->e[i].id, id)) {
      *holds = ag_kb_evidence_holds(&kb->e[i], ev, how);
      return ag_kb_gain(&kb->e[i], ev, src, how);
    }
  *holds = -2;
  return -1;
}

/* The metrics the gemm entries read, and how they rank the entries: at
 * 32 x 32 (occupancy 0.75) the pipeline is refuted and the block tiles
 * lead; at 64 x 32 growing N gains more than growing M; at 64 x 64
 * (occupancy 0.4375) the pipeline applies and leads. */
TEST(test_evidence_metrics) {
  char *src = NULL;
  size_t len;
  CHECK(ag_file_read(src_path(0, "examples/tile/gemm_naive.tile"), &src, &len) == 0);
  if (!src)
    return;
  json_t *ev = gemm_evidence(src);
  CHECK(ev != NULL);
  double x;
  CHECK(ag_opt_evidence_metric(ev, "mainloop", "inst_mix", "loads_per_mma", &x));
  CHECK(fabs(x - 1.5) < 1e-12); /* (2 + 4) / 4 */
  CHECK(ag_opt_evidence_metric(ev, "mainloop", "inst_mix", "load_share", &x));
  CHECK(fabs(x - 0.6) < 1e-12);
  CHECK(ag_opt_evidence_metric(ev, "mainloop", "inst_mix", "shared_share", &x));
  CHECK(fabs(x - 0.4) < 1e-12);
  CHECK(ag_opt_evidence_metric(ev, NULL, "static", "registers", &x));
  CHECK(x == 38);
  CHECK(ag_opt_evidence_metric(ev, NULL, "static", "occupancy", &x));
  CHECK(fabs(x - 0.75) < 1e-12); /* 12 CTAs of 4 warps */
  CHECK(ag_opt_evidence_metric(ev, "mainloop", "duration", "share", &x));
  CHECK(fabs(x - 0.8) < 1e-12);
  CHECK(!ag_opt_evidence_metric(ev, "epilogue", "inst_mix", "loads_per_mma", &x)); /* no mma */
  CHECK(!ag_opt_evidence_metric(NULL, "mainloop", "duration", "share", &x));
  /* bank conflicts over shared wavefronts, gemm's two launches summed, not gemm_other's */
  CHECK(ag_opt_evidence_metric(ev, NULL, "hw_counters", "bank_conflict_share", &x));
  CHECK(fabs(x - 0.6) < 1e-12);
  json_t *sig = json_object_get(ev, "signals");
  CHECK_EQ_INT((int)json_array_size(sig), 4);
  CHECK_EQ_STR(json_string_value(json_array_get(sig, 1)), "inst_mix");
  CHECK_EQ_STR(json_string_value(json_array_get(sig, 3)), "hw_counters");
  CHECK_EQ_INT((int)json_integer_value(json_object_get(json_object_get(ev, "static"),
                                                       "ctas_per_sm")), 12);
  CHECK(json_object_get(json_object_get(json_object_get(json_object_get(ev, "regions"), "mainloop"),
                                        "inst_mix"), "total") == NULL);
  /* shared memory limits it too: 100,000 bytes a CTA, two fit */
  json_t *big = json_deep_copy(ev);
  CHECK_EQ_INT(ag_opt_evidence_occupancy(big, 128, 100000), 0);
  CHECK(ag_opt_evidence_metric(big, NULL, "static", "occupancy", &x));
  CHECK(fabs(x - 0.125) < 1e-12);
  CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(big, "static"), "occupancy_limit")),
               "shared memory");
  json_decref(big);
  /* without registers no occupancy */
  json_t *bare = json_pack("{s:{}}", "static");
  CHECK_EQ_INT(ag_opt_evidence_occupancy(bare, 128, 0), AG_ENOTFOUND);
  json_decref(bare);

  ag_kb kb;
  ag_diags d;
  ag_diags_init(&d);
  CHECK_EQ_INT(ag_kb_load(src_path(1, "src/agent/kb"), &d, &kb), 0);
  ag_diags_release(&d);
  ag_str h = AG_STR_INIT;
  CHECK_EQ_INT(ag_kb_signals(&kb, &h), 0);
  CHECK_EQ_STR(ag_str_cstr(&h), "duration,hw_counters,inst_mix,static");
  ag_str_clear(&h);
  int holds;
  double gm = kb_gain(&kb, "block-tile-m", ev, src, &holds, &h);
  CHECK_EQ_INT(holds, 1);
  CHECK(fabs(gm - 0.8 * 0.6 * 0.25) < 1e-12); /* intensity 16 -> 21.3 */
  CHECK_CONTAINS(ag_str_cstr(&h), "mainloop 0.800 x load_share 0.600 x intensity(BM) 0.250 = 0.120");
  ag_str_clear(&h);
  double gs = kb_gain(&kb, "pipeline-stages", ev, src, &holds, &h);
  CHECK_EQ_INT(holds, 0);
  CHECK_CONTAINS(ag_str_cstr(&h), "the kernel's static occupancy 0.750 is not < 0.5");
  CHECK(fabs(gs - 0.8 * 0.25) < 1e-12);
  ag_str_clear(&h);
  double gw = kb_gain(&kb, "smem-swizzle", ev, src, &holds, &h);
  CHECK_EQ_INT(holds, 1);
  CHECK(fabs(gw - 0.8 * 0.6) < 1e-12); /* the conflicts are the part it removes */
  CHECK_CONTAINS(ag_str_cstr(&h), "mainloop 0.800 x bank_conflict_share 0.600 = 0.480");
  CHECK(gw > gm);
  /* without the counters: the entry's stand-in for the factor, said */
  json_array_remove(json_object_get(ev, "signals"), 3);
  ag_str_clear(&h);
  gw = kb_gain(&kb, "smem-swizzle", ev, src, &holds, &h);
  CHECK_EQ_INT(holds, -1); /* its conflicts precondition: unknown, so not refuted */
  CHECK(fabs(gw - 0.8 * 0.25) < 1e-12);
  CHECK_CONTAINS(ag_str_cstr(&h), "x bank_conflict_share ? 0.25 = 0.200");
  json_decref(ev);
  /* 64 x 32: N's growth first */
  char *s2 = NULL, *what = NULL;
  const ag_kb_entry *tm = NULL;
  for (int i = 0; i < kb.n; i++)
    if (!strcmp(kb.e[i].id, "block-tile-m"))
      tm = &kb.e[i];
  CHECK(tm != NULL);
  json_t *v64 = json_integer(64);
  if (tm && !ag_kb_apply(tm, src, v64, &s2, &what, NULL)) {
    ev = gemm_evidence(s2);
    gm = kb_gain(&kb, "block-tile-m", ev, s2, &holds, &h);
    double gn = kb_gain(&kb, "block-tile-n", ev, s2, &holds, &h);
    CHECK(gn > gm);
    CHECK(fabs(gn - 0.8 * 9.0 / 17 * (1 - (64.0 * 32 / 96) / 32)) < 1e-12);
    kb_gain(&kb, "pipeline-stages", ev, s2, &holds, NULL);
    CHECK_EQ_INT(holds, 0); /* occupancy 0.5625 (9 CTAs) */
    json_decref(ev);
    /* without the static signal the pipeline's precondition is unknown and
     * its factor is left out */
    ev = gemm_evidence(s2);
    json_array_remove(json_object_get(ev, "signals"), 2);
    ag_str_clear(&h);
    kb_gain(&kb, "pipeline-stages", ev, s2, &holds, &h);
    CHECK_EQ_INT(holds, -1);
    CHECK_CONTAINS(ag_str_cstr(&h), "x occupancy ?");
    json_decref(ev);
  }
  json_decref(v64);
  ag_free(s2);
  ag_free(what);
  ag_str_release(&h);
  ag_kb_release(&kb);
  ag_free(src);

  /* the policy with the real KB over constructed evidence: the swizzle (0.6 of the
   * shared wavefronts are conflicts), then M, then N */
  ag_opt_task *t = load_task(task_file(0, "evm", ""));
  CHECK(t != NULL);
  if (!t)
    return;
  ag_opt_opts o = cpu_opts("evidence", 3, src_path(1, "src/agent/kb"));
  o.evidence = gemm_evidence_fn;
  ev_calls = 0;
  ag_store *st = open_ws("ws-evm");
  ag_opt_result r;
  char err[1024];
  CHECK_EQ_INT(ag_opt_run(st, t, &o, &r, err, sizeof err), 0);
  CHECK_EQ_INT(r.ntrials, 4);
  if (r.ntrials == 4) {
    CHECK_EQ_STR(r.trials[1].edit, "kb:smem-swizzle(2 sites)");
    CHECK_EQ_STR(r.trials[2].edit, "kb:block-tile-m(BM=64)");
    CHECK_EQ_STR(r.trials[3].edit, "kb:block-tile-n(BN=64)");
    CHECK_CONTAINS(r.trials[1].rank, "pipeline-stages refuted: the kernel's static occupancy 0.750");
    CHECK_CONTAINS(r.trials[1].rank, "smem-swizzle mainloop 0.800 x bank_conflict_share 0.600");
    CHECK_CONTAINS(r.trials[3].rank, "block-tile-n mainloop 0.800 x load_share 0.529 x "
                                     "intensity(BN) 0.333");
  }
  ag_opt_result_release(&r);
  ag_store_close(st);
  ag_opt_task_free(t);
}

/* The evidence of a real observe report (the H200's, tests/data/evidence): the
 * kernel's bank conflicts over its shared wavefronts, and its role regions' shares. */
TEST(test_evidence_recorded) {
  json_error_t je;
  json_t *rep = json_load_file(src_path(0, "tests/data/evidence/attention_hopper.observe.json"),
                               0, &je);
  CHECK(rep != NULL);
  if (!rep)
    return;
  json_t *ev = NULL;
  char why[256];
  CHECK_EQ_INT(ag_opt_evidence_from_report(rep, "attention_hopper", "sq=4096", &ev, why,
                                           sizeof why), 0);
  double x = 0;
  CHECK(ag_opt_evidence_metric(ev, NULL, "hw_counters", "bank_conflict_share", &x));
  CHECK(fabs(x - 1568.0 / 44066037.0) < 1e-15);
  CHECK(ag_opt_evidence_metric(ev, "role_88", "duration", "share", &x));
  CHECK(x > 0.4 && x < 0.5); /* the producer warps' total over all warps' */
  json_decref(ev);
  /* another kernel's launch is not this one's */
  CHECK_EQ_INT(ag_opt_evidence_from_report(rep, "attention", "sq=4096", &ev, why, sizeof why),
               AG_ENOTFOUND);
  json_decref(rep);
}

/* The evidence policy ranks the entries the evidence does not refute by the
 * share of time of their target region; without evidence it says so and
 * ranks by prior; blind never asks for evidence. */
TEST(test_evidence) {
  json_t *rep = fake_report(), *ev = NULL;
  char why[512] = "";
  CHECK_EQ_INT(ag_opt_evidence_from_report(rep, "gemm", "M=64", &ev, why, sizeof why), 0);
  CHECK(ev != NULL);
  CHECK(fabs(ag_opt_evidence_share(ev, "mainloop") - 0.8) < 1e-12);
  CHECK(fabs(ag_opt_evidence_share(ev, "epilogue") - 0.1) < 1e-12);
  CHECK(ag_opt_evidence_share(ev, "prologue") == 0); /* no duration of it: no time */
  CHECK_EQ_INT(json_integer_value(json_object_get(
                   json_object_get(json_object_get(ev, "regions"), "mainloop"), "count")), 2);
  CHECK(fabs(json_number_value(json_object_get(ev, "total_ns")) - 1000) < 1e-9);
  json_t *ev2 = NULL;
  CHECK_EQ_INT(ag_opt_evidence_from_report(rep, "attn", "M=64", &ev2, why, sizeof why),
               AG_ENOTFOUND);
  CHECK(ev2 == NULL);
  CHECK_CONTAINS(why, "no duration of kernel 'attn'");
  CHECK_EQ_STR(json_string_value(json_object_get(ev, "share_of")), "kernel");
  /* without the kernel's own duration: the shares are of its top-level regions' sum */
  json_array_remove(json_object_get(rep, "values"), 0);
  CHECK_EQ_INT(ag_opt_evidence_from_report(rep, "gemm", "M=64", &ev2, why, sizeof why), 0);
  CHECK(fabs(ag_opt_evidence_share(ev2, "mainloop") - 800.0 / 900.0) < 1e-12);
  CHECK_EQ_STR(json_string_value(json_object_get(ev2, "share_of")), "top-level regions");
  json_decref(ev2);
  json_decref(rep);

  ag_kb kb;
  ag_diags d;
  ag_diags_init(&d);
  CHECK_EQ_INT(ag_kb_load(evidence_kb(), &d, &kb), 0);
  ag_diags_release(&d);
  if (kb.n == 3 && ev) {
    const ag_kb_entry *stages = &kb.e[0], *tm = &kb.e[1], *tn = &kb.e[2]; /* by name */
    CHECK_EQ_STR(stages->id, "ev-stages");
    ag_str w = AG_STR_INIT;
    CHECK_EQ_INT(ag_kb_evidence_holds(stages, ev, &w), 1);
    CHECK_EQ_INT(ag_kb_evidence_holds(tn, ev, &w), 0);
    CHECK_CONTAINS(ag_str_cstr(&w), "mainloop's duration share 0.800 is not < 0.5");
    CHECK_EQ_INT(ag_kb_evidence_holds(tm, ev, NULL), 1);     /* no evidence precondition */
    CHECK_EQ_INT(ag_kb_evidence_holds(stages, NULL, NULL), -1); /* no evidence: unknown */
    CHECK_EQ_INT(ag_kb_evidence_holds(tm, NULL, NULL), 1);
    json_object_set_new(ev, "signals", json_array()); /* a signal it did not observe */
    CHECK_EQ_INT(ag_kb_evidence_holds(tn, ev, NULL), -1);
    ag_str_release(&w);
  }
  ag_kb_release(&kb);
  json_decref(ev);

  ag_opt_task *t = load_task(task_file(0, "ev", ""));
  CHECK(t != NULL);
  if (!t)
    return;
  /* the default collector (argus observe): none with --cpu, nor without a GPU */
  {
    ag_opt_opts co = cpu_opts("evidence", 1, NULL);
    json_t *none = NULL;
    char w[1024] = "";
    CHECK_EQ_INT(ag_opt_evidence_observe(t, &co, "x", tmp_path(6, "obs"), &none, w, sizeof w),
                 AG_ENODEV);
    CHECK(none == NULL);
    CHECK_CONTAINS(w, "the CPU was asked for (--cpu)");
    ag_str gw = AG_STR_INIT;
    if (ag_collect_gpu_probe(&gw)) { /* this machine has no GPU */
      co.device = AG_OPT_DEVICE_AUTO;
      CHECK_EQ_INT(ag_opt_evidence_observe(t, &co, "x", tmp_path(6, "obs"), &none, w, sizeof w),
                   AG_ENODEV);
      CHECK_CONTAINS(w, "no GPU");
      CHECK(none == NULL);
    }
    ag_str_release(&gw);
  }
  char err[1024];
  ag_opt_result r;
  /* evidence: the mainloop's 80 % first, the refuted entry never */
  ag_opt_opts o = cpu_opts("evidence", 2, evidence_kb());
  o.evidence = fake_evidence;
  ev_mode = 1;
  ev_calls = 0;
  ag_store *st = open_ws("ws-ev");
  CHECK_EQ_INT(ag_opt_run(st, t, &o, &r, err, sizeof err), 0);
  CHECK_EQ_INT(r.ntrials, 3);
  CHECK_EQ_INT(ev_calls, 3); /* each valid version observed once */
  if (r.ntrials == 3) {
    CHECK_EQ_STR(r.trials[1].edit, "kb:ev-stages(STAGES=2)");
    CHECK_EQ_STR(r.trials[2].edit, "kb:ev-tile-m(BM=64)");
    CHECK(r.trials[0].has_evidence && r.trials[1].has_evidence && r.trials[2].has_evidence);
    CHECK_CONTAINS(r.trials[1].rank, "evidence of v1: ev-stages mainloop 0.800");
    CHECK_CONTAINS(r.trials[1].rank, "ev-tile-n refuted");
    CHECK_CONTAINS(r.trials[2].rank, "evidence of v2");
  }
  ag_opt_result_release(&r);
  /* resumed: the recorded evidence is read back, only the new version is
   * observed; from v3 and v2 nothing new applies (ev-tile-n stays refuted),
   * so v1 gets ev-tile-m; then the search is exhausted */
  o.trials = 5;
  o.resume = 1;
  CHECK_EQ_INT(ag_opt_run(st, t, &o, &r, err, sizeof err), 0);
  CHECK_EQ_INT(r.ntrials, 4);
  CHECK_EQ_INT(r.stopped, 2);
  CHECK_EQ_INT(ev_calls, 4);
  if (r.ntrials == 4) {
    CHECK_EQ_STR(r.trials[3].edit, "kb:ev-tile-m(BM=64)");
    CHECK_EQ_INT(r.trials[3].parent, 1);
    CHECK_CONTAINS(r.trials[3].rank, "evidence of v1");
  }
  ag_opt_result_release(&r);
  ag_store_close(st);
  /* no evidence: said, and the prior ranks (ev-tile-m's 90 first) */
  o.trials = 1;
  o.resume = 0;
  ev_mode = 0;
  st = open_ws("ws-ev-none");
  CHECK_EQ_INT(ag_opt_run(st, t, &o, &r, err, sizeof err), 0);
  CHECK_EQ_INT(r.ntrials, 2);
  if (r.ntrials == 2) {
    CHECK_EQ_STR(r.trials[1].edit, "kb:ev-tile-m(BM=64)");
    CHECK(!r.trials[0].has_evidence);
    CHECK_CONTAINS(r.trials[1].rank, "prior: no evidence of v1 (no GPU in this test)");
  }
  ag_opt_result_release(&r);
  ag_store_close(st);
  /* blind: never asks for evidence, even where there is some */
  ev_mode = 1;
  ev_calls = 0;
  o.policy = "blind";
  o.trials = 3;
  st = open_ws("ws-ev-blind");
  CHECK_EQ_INT(ag_opt_run(st, t, &o, &r, err, sizeof err), 0);
  CHECK_EQ_INT(r.ntrials, 4);
  CHECK_EQ_INT(ev_calls, 0);
  for (int i = 0; i < r.ntrials; i++) {
    CHECK(!r.trials[i].has_evidence);
    if (i)
      CHECK_EQ_STR(r.trials[i].rank, "blind: seeded order");
  }
  void *data;
  size_t len;
  CHECK_EQ_INT(ag_store_get(st, r.state, &data, &len), 0);
  CHECK(!strstr((char *)data, "evidence")); /* nor a reason for its absence */
  ag_free(data);
  ag_opt_result_release(&r);
  ag_store_close(st);
  ag_opt_task_free(t);
}

/* ------------------------------------------------------------------ CLI */
static int run_cli(const char *const *argv, ag_str *out, ag_str *errs) {
  ag_str_clear(out);
  ag_str_clear(errs);
  ag_proc_opts o = {.argv = argv, .capture_out = out, .capture_err = errs, .timeout_s = 300};
  ag_proc_result r;
  if (ag_proc_run(&o, &r) || !r.exited)
    return -1;
  return r.exit_code;
}

TEST(test_cli) {
  const char *bin = getenv("ARGUS_BIN");
  bin = bin ? bin : "argus";
  ag_str out = AG_STR_INIT, errs = AG_STR_INIT;
  const char *task = task_file(1, "cli", "");
  char ws[1024];
  snprintf(ws, sizeof ws, "%s", tmp_path(0, "ws-cli"));
  ag_remove_tree(ws);
  const char *ok[] = {bin, "-W", ws, "optimize", task, "--trials", "3", "--cpu", NULL};
  CHECK_EQ_INT(run_cli(ok, &out, &errs), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "trial 1: v2 from v1 by kb:pipeline-stages(STAGES=2): valid, not timed");
  CHECK_CONTAINS(ag_str_cstr(&out), "best: v1 (ref optimize/cli/best); nothing was timed");
  /* the evidence policy says it had none, and why */
  CHECK_CONTAINS(ag_str_cstr(&out), "  ranked by prior: no evidence of v1 (the CPU was asked for "
                                    "(--cpu): nothing is observed)");
  const char *log[] = {bin, "-W", ws, "ws", "log", NULL};
  CHECK_EQ_INT(run_cli(log, &out, &errs), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "v4 from v3 by kb:pipeline-stages(STAGES=4)");
  CHECK_CONTAINS(ag_str_cstr(&out), "optimize/cli/best -> v1");
  const char *again[] = {bin, "-W", ws, "optimize", task, "--trials", "4", "--cpu", "--json", NULL};
  CHECK_EQ_INT(run_cli(again, &out, &errs), 2);
  CHECK_CONTAINS(ag_str_cstr(&errs), "continue it with --resume");
  const char *res[] = {bin, "-W", ws, "optimize", task, "--trials", "4", "--cpu", "--resume",
                       "--json", NULL};
  CHECK_EQ_INT(run_cli(res, &out, &errs), 0);
  CHECK_CONTAINS(ag_str_cstr(&out), "\"schema\": \"argus.optimize/1\"");
  CHECK_CONTAINS(ag_str_cstr(&out), "kb:block-tile-m(BM=64)");
  CHECK_CONTAINS(ag_str_cstr(&out), "\"rank\": \"prior: no evidence of v4");
  CHECK_CONTAINS(ag_str_cstr(&out), "\"evidence\": false");
  static const struct {
    const char *a1, *a2, *want;
    int code;
  } bad[] = {
      {"--policy", "magic", "unknown policy 'magic' (evidence, blind, llm)", 2},
      {"--policy", "llm", "--policy llm needs its command after '--'", 2},
      {"--trials", "0", "--trials must be a number in 1..10000", 2},
      {"--trials", "2.5", "--trials must be an integer", 2},
      {"--budget-seconds", "soon", "--budget-seconds must be a number", 2},
      {"--policy-tokens", "100", "--policy-tokens must be a number in 1024..1e+08", 2},
      {"--policy-tokens", "2048.5", "--policy-tokens must be an integer", 2},
      {"--seed", "0", "--seed must be a number in 1..4.29497e+09", 2},
      {"--seed", "3.5", "--seed must be an integer", 2},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *a[] = {bin, "-W", ws, "optimize", task, bad[i].a1, bad[i].a2, NULL};
    CHECK_EQ_INT(run_cli(a, &out, &errs), bad[i].code);
    CHECK_CONTAINS(ag_str_cstr(&errs), bad[i].want);
  }
  const char *malformed = write_tmp(2, "malformed.json", "{\"name\": \"m\",\n  \"program\": 3}\n");
  const char *m[] = {bin, "-W", ws, "optimize", malformed, NULL};
  CHECK_EQ_INT(run_cli(m, &out, &errs), 2);
  CHECK_CONTAINS(ag_str_cstr(&errs), "malformed.json:2:14: error: 'program' must be a non-empty string");
  CHECK_CONTAINS(ag_str_cstr(&errs), "the task file");
  const char *none[] = {bin, "-W", ws, "optimize", tmp_path(3, "absent.json"), NULL};
  CHECK_EQ_INT(run_cli(none, &out, &errs), 2);
  CHECK_CONTAINS(ag_str_cstr(&errs), "absent.json");
  if (have_python()) {
    const char *task2 = task_file(1, "cli-llm", "");
    const char *crash[] = {bin, "-W", ws, "optimize", task2, "--cpu", "--policy", "llm", "--",
                           "python3", src_path(4, "tests/agent/fake_policy.py"), "crash", NULL};
    CHECK_EQ_INT(run_cli(crash, &out, &errs), 1);
    CHECK_CONTAINS(ag_str_cstr(&errs), "the policy command 'python3' failed (exit 3)");
    const char *garb[] = {bin, "-W", ws, "optimize", task2, "--cpu", "--resume", "--policy", "llm",
                          "--", "python3", src_path(4, "tests/agent/fake_policy.py"), "garbage",
                          NULL};
    CHECK_EQ_INT(run_cli(garb, &out, &errs), 1);
    CHECK_CONTAINS(ag_str_cstr(&errs), "not a candidate");
    /* --policy-tokens reaches the request: 1024 tokens hold no trial of the history */
    const char *lg = tmp_path(2, "cli-llm.log");
    unlink(lg);
    const char *tok[] = {bin, "-W", ws, "optimize", task_file(1, "cli-llm2", ""), "--cpu",
                         "--trials", "1", "--policy", "llm", "--policy-tokens", "1024", "--",
                         "python3", src_path(4, "tests/agent/fake_policy.py"), "script", lg,
                         NULL};
    CHECK_EQ_INT(run_cli(tok, &out, &errs), 0);
    FILE *lf = fopen(lg, "r");
    long h = -1, om = -1, b = -1;
    CHECK(lf && fscanf(lf, "%ld %ld %ld", &h, &om, &b) == 3);
    CHECK(h == 0 && om == 1);
    if (lf)
      fclose(lf);
  }
  ag_str_release(&out);
  ag_str_release(&errs);
}

RUN_TESTS({"task_file", test_task_file}, {"kb_entries", test_kb_entries},
          {"kb_bad_entries", test_kb_bad_entries},
          {"kb_structural", test_kb_structural}, {"validator", test_validator},
          {"validator_time_sizes", test_validator_time_sizes}, {"evidence", test_evidence},
          {"evidence_recorded", test_evidence_recorded},
          {"evidence_metrics", test_evidence_metrics},
          {"attention_naive", test_attention_naive},
          {"loop", test_loop}, {"llm_policy", test_llm_policy}, {"cli", test_cli})
