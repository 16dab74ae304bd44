/*
 * test_python_spec.c — python specs ({"python": FILE, "args": [...],
 * "kernel": NAME}, docs/triton.md) on the CPU: a valid spec's fields, each
 * kind of malformed one with its diagnostic at the right line and column;
 * the discovery (ag_spec_python_discover) with a stand-in for python that
 * writes Triton's dump layout: the kernel chosen, its PTX, the environment
 * and directory the script ran in, and each refusal (several kernels, a
 * kernel compiled twice, none, a failing script); Triton's override path.
 * The same discovery with real Triton is tests/triton/test_triton.py's.
 */
#include "argus/spec.h"
#include "check.h"
#include "diag_case.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/argus-pyspec-XXXXXX";

static void put(const char *name, const char *text, int mode);
static void cleanup(void) { ag_remove_tree(dir); }

/* The scratch directory with the script bench.py, made once; removed at exit. */
static void setup(void) {
  static int done;
  if (done++)
    return;
  if (!mkdtemp(dir))
    abort();
  atexit(cleanup);
  put("bench.py", "print('the discovery runs fake-python, not this')\n", 0644);
}

static void put(const char *name, const char *text, int mode) {
  char p[600];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  CHECK_EQ_INT(ag_file_write_atomic(p, text, strlen(text)), 0);
  CHECK_EQ_INT(chmod(p, (mode_t)mode), 0);
}

static ag_spec *load(const char *text, ag_diags *d, int want_rc) {
  setup();
  char p[600];
  snprintf(p, sizeof p, "%s/spec.json", dir);
  ag_spec *s = NULL;
  int rc = ag_spec_load_str(text, p, d, &s);
  if (rc != want_rc && d->items.n)
    fprintf(stderr, "%d:%d %s\n", d->items.v[0].line, d->items.v[0].col, d->items.v[0].msg);
  CHECK_EQ_INT(rc, want_rc);
  return s;
}

/* The spec both tests start from: bench.py --n 64, kernel matmul. */
static ag_spec *load_bench(ag_diags *d) {
  return load("{\"python\": \"bench.py\", \"args\": [\"--n\", \"64\"], "
              "\"kernel\": \"matmul\"}", d, 0);
}

TEST(valid) {
  ag_diags d;
  ag_diags_init(&d);
  ag_spec *s = load_bench(&d);
  char want[600];
  snprintf(want, sizeof want, "%s/bench.py", dir);
  if (s) {
    CHECK_EQ_STR(s->python, want); /* resolved against the spec's directory */
    CHECK_EQ_INT(s->npython_args, 2);
    CHECK_EQ_STR(s->python_args[1], "64");
    CHECK(s->python_args[2] == NULL);
    CHECK_EQ_STR(s->python_kernel, "matmul");
    CHECK_EQ_STR(s->name, "matmul"); /* the kernel's, without "name" */
    CHECK(s->ptx == NULL && s->cuda == NULL && s->run == NULL && s->triton_key == NULL);
    char **argv = ag_spec_python_argv(s);
    CHECK(argv && !strcmp(argv[0], ag_spec_python_exe()) && !strcmp(argv[1], want) &&
          !strcmp(argv[2], "--n") && !strcmp(argv[3], "64") && argv[4] == NULL);
    ag_spec_options_free(argv);
  }
  ag_spec_free(s);
  s = load("{\"python\": \"bench.py\"}", &d, 0); /* no args, no kernel: the script's name */
  if (s) {
    CHECK_EQ_STR(s->name, "bench");
    CHECK_EQ_INT(s->npython_args, 0);
    CHECK(s->python_args && s->python_args[0] == NULL);
    CHECK(s->python_kernel == NULL);
  }
  ag_spec_free(s);
  s = load("{\"name\": \"gemm\", \"python\": \"bench.py\", \"kernel\": \"k\"}", &d, 0);
  if (s)
    CHECK_EQ_STR(s->name, "gemm");
  ag_spec_free(s);
  CHECK_EQ_INT(d.items.n, 0);
  ag_diags_release(&d);
}

TEST(invalid) {
  static const dc_case cases[] = {
      {"{\"python\": 3}", 1, 12, "\"python\" must be a file name"},
      {"{\"python\": \"\"}", 1, 12, "\"python\" must be a file name"},
      {"{\"python\": \"nope.py\"}", 1, 12, "cannot read the Python script"},
      {"{\"python\": \"bench.py\",\n \"args\": \"--n 64\"}", 2, 10,
       "\"args\" must be an array of strings"},
      {"{\"python\": \"bench.py\", \"args\": [\"a\", 1]}", 1, 32,
       "\"args\" must be an array of strings"},
      {"{\"python\": \"bench.py\", \"kernel\": \"a-b\"}", 1, 34,
       "\"kernel\" must be a kernel name"},
      {"{\"python\": \"bench.py\", \"kernel\": 7}", 1, 34, "\"kernel\" must be a kernel name"},
      {"{\"python\": \"bench.py\", \"name\": \"\"}", 1, 32, "\"name\" must be a non-empty"},
      {"{\"python\": \"bench.py\",\n \"module\": {\"ptx\": \"k.ptx\"}}", 2, 2,
       "a python spec has no \"module\""},
      {"{\"python\": \"bench.py\", \"run\": [\"./h\"]}", 1, 24, "a python spec has no \"run\""},
      {"{\"python\": \"bench.py\", \"size\": {\"M\": 1}}", 1, 24,
       "\"size\" belongs to a tile spec"},
      {"{\"name\": \"a\", \"module\": {\"ptx\": \"k\"}, \"args\": []}", 1, 39,
       "\"args\" belongs to a python spec: it needs \"python\""},
      {"{\"tile\": \"t.tile\", \"size\": {\"M\": 1}, \"args\": []}", 1, 38,
       "a tile spec has no \"args\""},
      {"{\"python\": \"bench.py\", \"pyhton\": 1}", 1, 24, "unknown key 'pyhton'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ag_diags d;
    ag_diags_init(&d);
    ag_spec *s = load(cases[i].text, &d, AG_EPARSE);
    CHECK(s == NULL);
    ag_spec_free(s);
    dc_expect_any(&d, i, cases[i].line, cases[i].col, cases[i].msg); /* at its place */
    ag_diags_release(&d);
  }
}

/* A stand-in for python running a Triton script: it checks Triton's dump
 * environment, then writes <TRITON_DUMP_DIR>/<key>/<name>.ptx (and .ttir)
 * for each argument NAME@KEY, saying in the PTX where it ran; NAME@KEY+N
 * also writes Triton's cubin of it (.cubin) and N cache entries
 * <TRITON_CACHE_DIR>/<hash>/<name>.json holding $FAKE_META (Triton's
 * metadata); "fail" fails. */
static const char *fake_python =
    "#!/bin/sh\n"
    "[ \"$TRITON_KERNEL_DUMP\" = 1 ] && [ \"$TRITON_ALWAYS_COMPILE\" = 1 ] || {\n"
    "  echo \"no dump environment\" >&2; exit 3; }\n"
    "case $TRITON_DUMP_DIR in /*) ;; *) echo \"relative dump dir\" >&2; exit 4;; esac\n"
    "case $TRITON_CACHE_DIR in /*) ;; *) echo \"no private cache\" >&2; exit 5;; esac\n"
    "shift\n"
    "for k in \"$@\"; do\n"
    "  [ \"$k\" = fail ] && { echo 'Traceback: ValueError: boom' >&2; exit 1; }\n"
    "  meta=${k#*+}; [ \"$meta\" = \"$k\" ] && meta=0; k=${k%%+*}\n"
    "  name=${k%@*} key=${k#*@}\n"
    "  mkdir -p \"$TRITON_DUMP_DIR/$key\"\n"
    "  printf '// kernel %s key %s in %s\\n' \"$name\" \"$key\" \"$(pwd)\" \\\n"
    "    > \"$TRITON_DUMP_DIR/$key/$name.ptx\"\n"
    "  : > \"$TRITON_DUMP_DIR/$key/$name.ttir\"\n"
    "  [ \"$meta\" = 0 ] || printf 'CUBIN %s' \"$name\" > \"$TRITON_DUMP_DIR/$key/$name.cubin\"\n"
    "  while [ \"$meta\" -gt 0 ]; do\n"
    "    mkdir -p \"$TRITON_CACHE_DIR/H$meta$key\"\n"
    "    printf '%s' \"$FAKE_META\" > \"$TRITON_CACHE_DIR/H$meta$key/$name.json\"\n"
    "    meta=$((meta - 1))\n"
    "  done\n"
    "done\n";

/* Triton 3.6's metadata of a kernel (the fields Argus reads, and some it
 * does not) */
#define META_JSON(fuse, ptx_options, arch)                                                       \
  "{\"hash\": \"2abd\", \"target\": {\"backend\": \"cuda\", \"arch\": " arch ", "                 \
  "\"warp_size\": 32}, \"num_warps\": 8, \"ptx_options\": " ptx_options ", "                      \
  "\"enable_fp_fusion\": " fuse ", \"extern_libs\": [[\"libdevice\", "                          \
  "\"/opt/tri/backends/nvidia/lib/libdevice.10.bc\"]], \"triton_version\": \"3.6.0\"}"

/* Discovers the spec {"python": "bench.py", "args": ARGS[, "kernel": K]}. */
static int run_discovery(const char *args, const char *kernel, ag_spec **out, ag_diags *d) {
  char t[600];
  snprintf(t, sizeof t, "{\"python\": \"bench.py\", \"args\": [%s]%s%s%s}", args,
           kernel ? ", \"kernel\": \"" : "", kernel ? kernel : "", kernel ? "\"" : "");
  *out = load(t, d, 0);
  return *out ? ag_spec_python_discover(*out, d) : -1;
}

static int diag_has(const ag_diags *d, const char *text) {
  for (size_t k = 0; k < d->items.n; k++)
    if (strstr(d->items.v[k].msg, text))
      return 1;
  fprintf(stderr, "no '%s' in: %s\n", text, d->items.n ? d->items.v[0].msg : "(none)");
  return 0;
}

TEST(discover) {
  setup();
  char py[600];
  snprintf(py, sizeof py, "%s/fake-python", dir);
  put("fake-python", fake_python, 0755);
  setenv("ARGUS_PYTHON", py, 1);
  CHECK_EQ_STR(ag_spec_python_exe(), py);
  ag_diags d;
  ag_diags_init(&d);
  ag_spec *s;
  /* one kernel: its PTX, name and key; the script ran in the spec's directory */
  CHECK_EQ_INT(run_discovery("\"matmul@KEYA\"", NULL, &s, &d), 0);
  char want[700];
  snprintf(want, sizeof want, "// kernel matmul key KEYA in %s\n", dir);
  char *text = NULL, *ptx = s && s->ptx ? ag_strdup(s->ptx) : NULL;
  size_t len = 0;
  if (s && s->ptx) {
    CHECK(s->ptx_is_temp);
    CHECK_EQ_INT(ag_file_read(s->ptx, &text, &len), 0);
    CHECK_EQ_STR(text, want);
    CHECK_EQ_STR(s->python_kernel, "matmul");
    CHECK_EQ_STR(s->triton_key, "KEYA");
    CHECK_EQ_INT(ag_spec_python_discover(s, &d), 0); /* once only */
    CHECK_EQ_STR(s->ptx, ptx);
  }
  ag_free(text);
  ag_spec_free(s);
  CHECK(ptx && access(ptx, F_OK) != 0); /* the spec removed its temporary PTX */
  ag_free(ptx);
  /* "kernel" picks one of several */
  CHECK_EQ_INT(run_discovery("\"zeta@K1\", \"attn@K2\", \"matmul@K3\"", "attn", &s, &d), 0);
  if (s)
    CHECK(s->triton_key && !strcmp(s->triton_key, "K2"));
  ag_spec_free(s);
  CHECK_EQ_INT(d.items.n, 0);
  /* several kernels and no "kernel": listed, sorted */
  CHECK_EQ_INT(run_discovery("\"zeta@K1\", \"attn@K2\"", NULL, &s, &d), AG_ENOTFOUND);
  CHECK(diag_has(&d, "compiled the kernels attn, zeta: name the one to measure"));
  CHECK(s && s->ptx == NULL);
  ag_spec_free(s);
  /* a "kernel" it did not compile */
  CHECK_EQ_INT(run_discovery("\"zeta@K1\", \"attn@K2\"", "gemm", &s, &d), AG_ENOTFOUND);
  CHECK(diag_has(&d, "compiled no kernel 'gemm'; it compiled attn, zeta"));
  ag_spec_free(s);
  /* one kernel compiled twice (autotuning): refused, naming the keys */
  CHECK_EQ_INT(run_discovery("\"mm@KB\", \"mm@KA\", \"other@KC\"", "mm", &s, &d), AG_ENOTFOUND);
  CHECK(diag_has(&d, "compiled kernel 'mm' 2 times"));
  CHECK(diag_has(&d, "keys KA, KB"));
  ag_spec_free(s);
  /* none */
  CHECK_EQ_INT(run_discovery("", NULL, &s, &d), AG_ENOTFOUND);
  CHECK(diag_has(&d, "compiled no Triton kernel"));
  ag_spec_free(s);
  /* the script fails: its exit and stderr */
  CHECK_EQ_INT(run_discovery("\"mm@K\", \"fail\"", NULL, &s, &d), AG_ECHILD);
  CHECK(diag_has(&d, "failed (exit 1) while Argus discovered its Triton kernels"));
  CHECK(diag_has(&d, "ValueError: boom"));
  CHECK(s && s->ptx == NULL);
  ag_spec_free(s);
  /* Triton's metadata and cubin: how it assembled the kernel, its cubin the
   * production build (both temporary files the spec removes) */
  setenv("FAKE_META", META_JSON("true", "null", "90"), 1);
  size_t before = d.items.n; /* the refusals' above */
  CHECK_EQ_INT(run_discovery("\"mm@KM+1\"", NULL, &s, &d), 0);
  char *prod = s && s->production ? ag_strdup(s->production) : NULL;
  if (s) {
    CHECK(s->production_is_temp && prod);
    CHECK_EQ_STR(s->triton_version, "3.6.0");
    CHECK_EQ_STR(s->triton_ptxas, "/opt/tri/backends/nvidia/bin/ptxas");
    CHECK(s->triton_ptxas_opts && !strcmp(s->triton_ptxas_opts[0], "-lineinfo") &&
          !strcmp(s->triton_ptxas_opts[1], "--gpu-name=sm_90a") && !s->triton_ptxas_opts[2]);
    CHECK(s->triton_build_note == NULL);
    CHECK_EQ_INT(ag_file_read(prod, &text, &len), 0);
    CHECK(text && len == 8 && !memcmp(text, "CUBIN mm", 8));
    ag_free(text);
    text = NULL;
  }
  ag_spec_free(s);
  CHECK(prod && access(prod, F_OK) != 0);
  ag_free(prod);
  /* no metadata (an older Triton, a stand-in): said, not refused */
  CHECK_EQ_INT(run_discovery("\"mm@KM\"", NULL, &s, &d), 0);
  if (s) {
    CHECK(s->triton_ptxas == NULL && s->triton_ptxas_opts == NULL && s->production == NULL);
    CHECK(s->triton_build_note && strstr(s->triton_build_note, "metadata of 'mm' was not found"));
  }
  ag_spec_free(s);
  /* metadata that is not Triton 3.6's: said in the note, not refused */
  setenv("FAKE_META", "{\"triton_version\": \"3.6.0\"}", 1);
  CHECK_EQ_INT(run_discovery("\"mm@KM+1\"", NULL, &s, &d), 0);
  if (s) {
    CHECK(s->triton_ptxas == NULL);
    CHECK(s->triton_build_note && strstr(s->triton_build_note, "lacks what Triton 3.6 writes"));
  }
  ag_spec_free(s);
  CHECK_EQ_INT((int)(d.items.n - before), 0);
  /* one source compiled twice with other options (one dump key, two builds) */
  CHECK_EQ_INT(run_discovery("\"mm@KM+2\"", NULL, &s, &d), AG_ENOTFOUND);
  CHECK(diag_has(&d, "compiled kernel 'mm' 2 times from the same source with different"));
  CHECK(s && s->ptx == NULL && s->production == NULL);
  ag_spec_free(s);
  unsetenv("FAKE_META");
  /* no such python */
  setenv("ARGUS_PYTHON", "/nonexistent/python3", 1);
  CHECK(run_discovery("\"mm@K\"", NULL, &s, &d) != 0);
  CHECK(diag_has(&d, "cannot run /nonexistent/python3"));
  ag_spec_free(s);
  unsetenv("ARGUS_PYTHON");
  CHECK_EQ_STR(ag_spec_python_exe(), "python3");
  ag_diags_release(&d);
}

/* "a b c": the options, for comparison */
static void joined(char **v, char *out, size_t n) {
  out[0] = 0;
  for (int i = 0; v && v[i]; i++)
    snprintf(out + strlen(out), n - strlen(out), "%s%s", i ? " " : "", v[i]);
}

/* How Triton 3.6's make_cubin assembles, from the metadata and its knobs. */
TEST(build_from_metadata) {
  setup();
  static const struct {
    const char *meta, *knob, *ptxas, *opts;
  } cases[] = {
      {META_JSON("true", "null", "90"), NULL, "/opt/tri/backends/nvidia/bin/ptxas",
       "-lineinfo --gpu-name=sm_90a"},
      {META_JSON("false", "\"-O3  --maxrregcount=128\"", "90"), NULL,
       "/opt/tri/backends/nvidia/bin/ptxas",
       "-lineinfo --fmad=false -O3 --maxrregcount=128 --gpu-name=sm_90a"},
      {META_JSON("true", "null", "90"), "TRITON_DISABLE_LINE_INFO=1",
       "/opt/tri/backends/nvidia/bin/ptxas", "-lineinfo -suppress-debug-info --gpu-name=sm_90a"},
      {META_JSON("true", "null", "90"), "DISABLE_PTXAS_OPT=true",
       "/opt/tri/backends/nvidia/bin/ptxas", "-g --opt-level 0 --gpu-name=sm_90a"},
      {META_JSON("true", "null", "90"), "DISABLE_PTXAS_OPT=no",
       "/opt/tri/backends/nvidia/bin/ptxas", "-lineinfo --gpu-name=sm_90a"},
      {META_JSON("true", "null", "100"), NULL, "/opt/tri/backends/nvidia/bin/ptxas-blackwell",
       "-lineinfo --gpu-name=sm_100a"},
      {META_JSON("true", "null", "80"), NULL, "/opt/tri/backends/nvidia/bin/ptxas",
       "-lineinfo --gpu-name=sm_80"},
      /* the knob's ptxas when it runs (the stand-in python is executable), else the backend's */
      {META_JSON("true", "null", "90"), "TRITON_PTXAS_PATH=@", "@",
       "-lineinfo --gpu-name=sm_90a"},
      {META_JSON("true", "null", "90"), "TRITON_PTXAS_PATH=/nonexistent/ptxas",
       "/opt/tri/backends/nvidia/bin/ptxas", "-lineinfo --gpu-name=sm_90a"},
  };
  char exe[600];
  snprintf(exe, sizeof exe, "%s/fake-python", dir);
  put("fake-python", fake_python, 0755);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char knob[700] = "", *eq;
    if (cases[i].knob) {
      snprintf(knob, sizeof knob, "%s", cases[i].knob);
      eq = strchr(knob, '=');
      *eq = 0;
      setenv(knob, !strcmp(eq + 1, "@") ? exe : eq + 1, 1);
    }
    ag_spec s;
    memset(&s, 0, sizeof s);
    ag_str why = AG_STR_INIT;
    CHECK_EQ_INT(ag_triton_build_from_metadata(&s, cases[i].meta, &why), 0);
    char got[600];
    joined(s.triton_ptxas_opts, got, sizeof got);
    if (strcmp(got, cases[i].opts) ||
        strcmp(s.triton_ptxas ? s.triton_ptxas : "", !strcmp(cases[i].ptxas, "@") ? exe
                                                                               : cases[i].ptxas))
      fprintf(stderr, "case %zu: ptxas '%s' options '%s'\n", i, s.triton_ptxas, got);
    CHECK_EQ_STR(got, cases[i].opts);
    CHECK_EQ_STR(s.triton_ptxas, !strcmp(cases[i].ptxas, "@") ? exe : cases[i].ptxas);
    CHECK_EQ_STR(s.triton_version, "3.6.0");
    ag_free(s.triton_version);
    ag_free(s.triton_ptxas);
    ag_spec_options_free(s.triton_ptxas_opts);
    ag_str_release(&why);
    if (cases[i].knob)
      unsetenv(knob);
  }
  /* what Triton 3.6 does not write: refused, saying what is missing */
  static const struct {
    const char *meta, *want;
  } bad[] = {
      {"{nope", "not JSON"},
      {"{\"target\": {\"arch\": 90}, \"enable_fp_fusion\": true, \"ptx_options\": null, "
       "\"extern_libs\": [[\"libdevice\", \"/t/lib/libdevice.bc\"]]}",
       "lacks what Triton 3.6 writes"},
      {META_JSON("true", "null", "\"90\""), "lacks what Triton 3.6 writes"},
      {META_JSON("true", "7", "90"), "lacks what Triton 3.6 writes"},
      {META_JSON("1", "null", "90"), "lacks what Triton 3.6 writes"},
      {"{\"triton_version\": \"3.6.0\", \"target\": {\"arch\": 90}, \"enable_fp_fusion\": "
       "true, \"ptx_options\": null, \"extern_libs\": []}",
       "lacks what Triton 3.6 writes"},
      {"{\"triton_version\": \"3.6.0\", \"target\": {\"arch\": 90}, \"enable_fp_fusion\": "
       "true, \"ptx_options\": null, \"extern_libs\": [[\"libdevice\", \"libdevice.bc\"]]}",
       "cannot tell where Triton's ptxas is"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ag_spec s;
    memset(&s, 0, sizeof s);
    ag_str why = AG_STR_INIT;
    CHECK_EQ_INT(ag_triton_build_from_metadata(&s, bad[i].meta, &why), AG_EPARSE);
    if (!strstr(ag_str_cstr(&why), bad[i].want))
      fprintf(stderr, "bad %zu: %s\n", i, ag_str_cstr(&why));
    CHECK(strstr(ag_str_cstr(&why), bad[i].want) != NULL);
    CHECK(s.triton_version == NULL && s.triton_ptxas == NULL && s.triton_ptxas_opts == NULL);
    ag_str_release(&why);
  }
}

TEST(scan_and_override_path) {
  setup();
  char dd[700];
  snprintf(dd, sizeof dd, "%s/dump", dir);
  ag_triton_kernel *k = NULL;
  int n = -1;
  CHECK_EQ_INT(ag_triton_scan(dd, &k, &n), AG_ENOTFOUND);
  CHECK(k == NULL && n == 0);
  put("dump", "", 0644); /* made a directory below */
  CHECK_EQ_INT(unlink(dd), 0);
  char p[800];
  snprintf(p, sizeof p, "%s/B", dd);
  CHECK_EQ_INT(ag_mkdir_p(p, 0755), 0);
  snprintf(p, sizeof p, "%s/A", dd);
  CHECK_EQ_INT(ag_mkdir_p(p, 0755), 0);
  put("dump/B/k.ptx", "x", 0644);
  put("dump/A/k.ptx", "x", 0644);
  put("dump/A/a.ptx", "x", 0644);
  put("dump/A/a.cubin", "x", 0644); /* other stages are not kernels */
  put("dump/A/.ptx", "x", 0644);
  put("dump/lock", "x", 0644);      /* a file beside the key directories */
  CHECK_EQ_INT(ag_triton_scan(dd, &k, &n), 0);
  CHECK_EQ_INT(n, 3);
  if (n == 3) {
    CHECK(!strcmp(k[0].name, "a") && !strcmp(k[0].key, "A"));
    CHECK(!strcmp(k[1].name, "k") && !strcmp(k[1].key, "A"));
    CHECK(!strcmp(k[2].name, "k") && !strcmp(k[2].key, "B"));
    snprintf(p, sizeof p, "%s/B/k.ptx", dd);
    CHECK_EQ_STR(k[2].ptx, p);
  }
  ag_triton_kernels_free(k, n);
  /* Triton 3.6 reads <TRITON_OVERRIDE_DIR>/<key>/<name>.<ext> */
  char *o = ag_triton_override_path("/ovr", "JMN22OQ", "matmul", "ptx");
  CHECK_EQ_STR(o, "/ovr/JMN22OQ/matmul.ptx");
  ag_free(o);
  o = ag_triton_override_path("o", "K", "attn_fwd", "cubin");
  CHECK_EQ_STR(o, "o/K/attn_fwd.cubin");
  ag_free(o);
}

/* The value of K in a NULL-terminated "K=V" list, or NULL. */
static const char *env_of(char **env, const char *k) {
  size_t n = strlen(k);
  for (int i = 0; env && env[i]; i++)
    if (!strncmp(env[i], k, n) && env[i][n] == '=')
      return env[i] + n + 1;
  return NULL;
}

/* The collect run of a python spec's variant (docs/triton.md, "A collect
 * run"): the variant as Triton's cubin override, the argv through
 * argus._triton_run, the environment; and each refusal. */
TEST(collect_setup) {
  ag_diags d;
  ag_diags_init(&d);
  ag_spec *s = load_bench(&d);
  if (!s)
    return;
  put("variant.cubin", "CUBIN\001bytes", 0644);
  char cub[700], run[700], want[900];
  snprintf(cub, sizeof cub, "%s/variant.cubin", dir);
  snprintf(run, sizeof run, "%s/run1", dir);
  ag_triton_collect c;
  ag_str why = AG_STR_INIT;
  /* not discovered yet: no key */
  CHECK_EQ_INT(ag_triton_collect_setup(s, run, cub, "/lib/libargus_host.so.1", NULL, &c, &why),
               AG_EINVAL);
  CHECK(strstr(ag_str_cstr(&why), "not a discovered python spec") != NULL);
  CHECK(c.argv == NULL && c.env == NULL && c.override == NULL);
  s->triton_key = ag_strdup("JMN22OQ");
  ag_str_clear(&why);
  setenv("PYTHONPATH", "/usr/old", 1);
  setenv("ARGUS_PYTHON", "/opt/py/bin/python3", 1);
  CHECK_EQ_INT(ag_triton_collect_setup(s, run, cub, "/lib/libargus_host.so.1", "/src/python", &c,
                                       &why), 0);
  snprintf(want, sizeof want, "%s/override/JMN22OQ/matmul.cubin", run);
  CHECK_EQ_STR(c.override, want);
  char *data = NULL;
  size_t len = 0;
  CHECK_EQ_INT(ag_file_read(want, &data, &len), 0);
  CHECK(len == 11 && data && !memcmp(data, "CUBIN\001bytes", 11)); /* byte for byte */
  ag_free(data);
  const char *argv_want[] = {"/opt/py/bin/python3", "-m", "argus._triton_run", NULL, "--n", "64",
                             NULL};
  snprintf(want, sizeof want, "%s/bench.py", dir);
  argv_want[3] = want;
  for (int i = 0; i < 7; i++)
    if (argv_want[i] || c.argv[i])
      CHECK_EQ_STR(c.argv[i], argv_want[i]);
  CHECK_EQ_STR(env_of(c.env, "TRITON_KERNEL_OVERRIDE"), "1");
  CHECK_EQ_STR(env_of(c.env, "TRITON_ALWAYS_COMPILE"), "1");
  snprintf(want, sizeof want, "%s/override", run);
  CHECK_EQ_STR(env_of(c.env, "TRITON_OVERRIDE_DIR"), want);
  snprintf(want, sizeof want, "%s/triton-cache", run); /* private: never the user's cache */
  CHECK_EQ_STR(env_of(c.env, "TRITON_CACHE_DIR"), want);
  CHECK_EQ_STR(env_of(c.env, "ARGUS_TRITON_KERNEL"), "matmul");
  CHECK_EQ_STR(env_of(c.env, "ARGUS_HOST_LIBRARY"), "/lib/libargus_host.so.1");
  CHECK_EQ_STR(env_of(c.env, "PYTHONPATH"), "/src/python:/usr/old");
  ag_triton_collect_release(&c);
  /* no variant: Triton's own build is timed, nothing overridden */
  CHECK_EQ_INT(ag_triton_collect_setup(s, run, NULL, "h.so", NULL, &c, &why), 0);
  CHECK(c.override == NULL && env_of(c.env, "TRITON_KERNEL_OVERRIDE") == NULL &&
        env_of(c.env, "TRITON_OVERRIDE_DIR") == NULL);
  CHECK_EQ_STR(env_of(c.env, "ARGUS_TRITON_OWN"), "1");
  CHECK_EQ_STR(env_of(c.env, "ARGUS_TRITON_KERNEL"), "matmul");
  ag_triton_collect_release(&c);
  /* no python dir: PYTHONPATH is left as it is */
  CHECK_EQ_INT(ag_triton_collect_setup(s, run, cub, "h.so", NULL, &c, &why), 0);
  CHECK(env_of(c.env, "PYTHONPATH") == NULL);
  ag_triton_collect_release(&c);
  unsetenv("PYTHONPATH");
  unsetenv("ARGUS_PYTHON");
  /* a variant that cannot be read */
  ag_str_clear(&why);
  snprintf(want, sizeof want, "%s/missing.cubin", dir);
  CHECK_EQ_INT(ag_triton_collect_setup(s, run, want, "h.so", NULL, &c, &why), AG_ENOTFOUND);
  CHECK(strstr(ag_str_cstr(&why), "cannot read the variant") != NULL);
  /* a key or name that is no single path component */
  const char *badk[] = {"../up", "a/b", "..", ""};
  for (int i = 0; i < 4; i++) {
    ag_free(s->triton_key);
    s->triton_key = ag_strdup(badk[i]);
    ag_str_clear(&why);
    CHECK_EQ_INT(ag_triton_collect_setup(s, run, cub, "h.so", NULL, &c, &why), AG_EINVAL);
    CHECK(strstr(ag_str_cstr(&why), "is not a file name Triton would override") != NULL);
  }
  ag_free(s->triton_key);
  s->triton_key = ag_strdup("K");
  ag_free(s->python_kernel);
  s->python_kernel = ag_strdup("x/y");
  CHECK_EQ_INT(ag_triton_collect_setup(s, run, cub, "h.so", NULL, &c, &why), AG_EINVAL);
  ag_str_release(&why);
  ag_spec_free(s);
  ag_diags_release(&d);
}

RUN_TESTS(T(valid), T(invalid), T(discover), T(build_from_metadata), T(scan_and_override_path),
          T(collect_setup))
