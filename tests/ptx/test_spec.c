/*
 * test_spec.c — program specs: a valid spec with paths resolved against the
 * spec's directory, and each kind of malformed spec with its diagnostic at
 * the right line and column; the PTX cache of ag_spec_compile_ptx (hits,
 * and a miss for each thing that must miss).
 */
#include "argus/spec.h"
#include "check.h"
#include "diag_case.h"

#include <dirent.h>
#include <fcntl.h>
#include <time.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

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
  CHECK_EQ_STR(s->run[0], "/x/y/./harness"); /* a path: the spec's (docs/markers.md) */
  ag_spec_free(s);
  const char *p = "{\"name\": \"p\", \"module\": {\"ptx\": \"/abs/k.ptx\"}}";
  CHECK_EQ_INT(ag_spec_load_str(p, "spec.json", &d, &s), 0);
  CHECK_EQ_STR(s->ptx, "/abs/k.ptx");
  CHECK(s->run == NULL);
  ag_spec_free(s);
  CHECK_EQ_INT(d.items.n, 0);
  ag_diags_release(&d);
}

TEST(invalid) {
  static const dc_case cases[] = {
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
    dc_expect_first(&d, i, cases[i].line, cases[i].col, cases[i].msg);
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

/* Writes a file dated 10 s ago: the cache stores nothing that changed
 * within a second of the compile's start (it may have changed under nvcc). */
static void put(const char *path, const char *text) {
  CHECK_EQ_INT(ag_file_write_atomic(path, text, strlen(text)), 0);
  struct timespec t[2];
  clock_gettime(CLOCK_REALTIME, &t[0]);
  t[0].tv_sec -= 10;
  t[1] = t[0];
  CHECK_EQ_INT(utimensat(AT_FDCWD, path, t, 0), 0);
}

/* Compiles dir/k.cu with flags; returns whether the cache served it, -1 on
 * a failed compile; *has: the PTX contains `want`. */
static int compile(const char *dir, const char *const *flags, const char *want, int *has) {
  /* file times come from a coarse clock: the cache stores nothing that
   * changed within 20 ms of a compile's start, so let what the test just
   * wrote age past that */
  struct timespec ts = {0, 40000000};
  nanosleep(&ts, NULL);
  char cu[600];
  snprintf(cu, sizeof cu, "%s/k.cu", dir);
  ag_diags d;
  ag_diags_init(&d);
  ag_str ptx = AG_STR_INIT;
  int cached = -1;
  int rc = ag_spec_compile_ptx_ex(cu, flags, &d, &ptx, &cached);
  *has = rc == 0 && strstr(ag_str_cstr(&ptx), want) != NULL;
  if (rc == 0 && !*has && getenv("DBG_PTX"))
    fprintf(stderr, "want %s in:\n%s\n", want, ag_str_cstr(&ptx));
  ag_str_release(&ptx);
  ag_diags_release(&d);
  return rc ? -1 : cached;
}

TEST(ptx_cache) {
  char *nvcc = ag_spec_nvcc();
  if (!nvcc) {
    SKIP("no nvcc: the PTX cache cannot be tested");
  }
  ag_free(nvcc);
  char dir[] = "/tmp/argus-ptxc-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char p[1400], inc[600], cache[600], flag[700];
  snprintf(inc, sizeof inc, "%s/inc dir", dir); /* a space: escaped in nvcc's -MD output */
  CHECK_EQ_INT(ag_mkdir_p(inc, 0755), 0);
  snprintf(p, sizeof p, "%s/k.cu", dir);
  put(p, "#include \"k.h\"\n"
         "extern \"C\" __global__ void k(unsigned *o) { o[0] = SCALE; o[1] = OFFSET; }\n");
  snprintf(p, sizeof p, "%s/k.h", dir);
  put(p, "#include \"off.h\"\n#define SCALE 12345u\n");
  snprintf(p, sizeof p, "%s/off.h", inc);
  put(p, "#define OFFSET 777u\n");
  snprintf(cache, sizeof cache, "%s/cache", dir);
  snprintf(p, sizeof p, "%s/ptx", cache); /* made beforehand: as usual, not in a */
  CHECK_EQ_INT(ag_mkdir_p(p, 0755), 0);   /* directory the compile searches      */
  setenv("ARGUS_CACHE_DIR", cache, 1);
  unsetenv("ARGUS_PTX_CACHE");
  snprintf(flag, sizeof flag, "-I%s", inc);
  const char *fl[] = {"-arch=sm_90a", flag, NULL};
  const char *fl2[] = {"-arch=sm_90a", flag, "-DEXTRA=1", NULL};
  int has = 0;
  CHECK_EQ_INT(compile(dir, fl, "12345", &has), 0); /* first: compiled */
  CHECK(has);
  CHECK_EQ_INT(compile(dir, fl, "12345", &has), 1); /* unchanged: the cache */
  CHECK(has);
  CHECK_EQ_INT(compile(dir, fl, "777", &has), 1);
  CHECK(has);
  snprintf(p, sizeof p, "%s/k.h", dir); /* an edited header misses */
  put(p, "#include \"off.h\"\n#define SCALE 54321u\n");
  CHECK_EQ_INT(compile(dir, fl, "54321", &has), 0);
  CHECK(has);
  CHECK_EQ_INT(compile(dir, fl, "54321", &has), 1);
  snprintf(p, sizeof p, "%s/off.h", inc); /* ... also in a directory with a space */
  put(p, "#define OFFSET 888u\n");
  CHECK_EQ_INT(compile(dir, fl, "888", &has), 0);
  CHECK(has);
  /* a new header that shadows the one used (k.h's "off.h" is now found
   * beside k.h, before the -I directory): a miss */
  snprintf(p, sizeof p, "%s/off.h", dir);
  put(p, "#define OFFSET 999u\n");
  CHECK_EQ_INT(compile(dir, fl, "999", &has), 0);
  CHECK(has);
  CHECK_EQ_INT(compile(dir, fl, "999", &has), 1);
  CHECK_EQ_INT(unlink(p), 0); /* and gone again: a miss, back to 888 */
  CHECK_EQ_INT(compile(dir, fl, "888", &has), 0);
  CHECK(has);
  CHECK_EQ_INT(compile(dir, fl2, "888", &has), 0); /* other arguments: another entry */
  CHECK(has);
  CHECK_EQ_INT(compile(dir, fl, "888", &has), 1); /* the first entry is still there */
  /* a damaged cached PTX is a miss, and the result is right */
  ag_str ptxdir = AG_STR_INIT;
  ag_str_printf(&ptxdir, "%s/ptx", cache);
  DIR *dp = opendir(ag_str_cstr(&ptxdir));
  CHECK(dp != NULL);
  struct dirent *e;
  int damaged = 0;
  while (dp && (e = readdir(dp)))
    if (strstr(e->d_name, ".ptx")) {
      snprintf(p, sizeof p, "%s/%s", ag_str_cstr(&ptxdir), e->d_name);
      put(p, "garbage");
      damaged++;
    }
  if (dp)
    closedir(dp);
  CHECK(damaged >= 2);
  CHECK_EQ_INT(compile(dir, fl, "888", &has), 0);
  CHECK(has);
  CHECK_EQ_INT(compile(dir, fl, "888", &has), 1);
  /* off: never served */
  setenv("ARGUS_PTX_CACHE", "0", 1);
  CHECK_EQ_INT(compile(dir, fl, "888", &has), 0);
  unsetenv("ARGUS_PTX_CACHE");
  /* a cache that cannot be written: compiled all the same */
  setenv("ARGUS_CACHE_DIR", "/proc/argus-cannot-write", 1);
  CHECK_EQ_INT(compile(dir, fl, "888", &has), 0);
  CHECK(has);
  CHECK_EQ_INT(compile(dir, fl, "888", &has), 0);
  /* the cache keeps the newest ARGUS_PTX_CACHE_KEEP PTX files */
  setenv("ARGUS_CACHE_DIR", cache, 1);
  setenv("ARGUS_PTX_CACHE_KEEP", "2", 1);
  const char *fl3[] = {"-arch=sm_90a", flag, "-DEXTRA=3", NULL};
  const char *fl4[] = {"-arch=sm_90a", flag, "-DEXTRA=4", NULL};
  snprintf(p, sizeof p, "%s/k.cu", dir); /* different PTX for each -DEXTRA */
  put(p, "#include \"k.h\"\n"
         "extern \"C\" __global__ void k(unsigned *o) { o[0] = SCALE; o[1] = OFFSET; "
         "o[2] = EXTRA; }\n");
  CHECK_EQ_INT(compile(dir, fl2, "888", &has), 0);
  CHECK_EQ_INT(compile(dir, fl3, "888", &has), 0);
  CHECK_EQ_INT(compile(dir, fl4, "888", &has), 0);
  int nptx = 0;
  dp = opendir(ag_str_cstr(&ptxdir));
  while (dp && (e = readdir(dp)))
    nptx += strstr(e->d_name, ".ptx") != NULL;
  if (dp)
    closedir(dp);
  CHECK_EQ_INT(nptx, 2);
  CHECK_EQ_INT(compile(dir, fl4, "888", &has), 1); /* the newest is still served */
  CHECK_EQ_INT(compile(dir, fl2, "888", &has), 0); /* the oldest was removed */
  unsetenv("ARGUS_PTX_CACHE_KEEP");
  /* a header edited while nvcc runs (an nvcc that edits it when done):
   * nothing is stored, and the next compile sees the edit */
  unsetenv("ARGUS_PTX_CACHE_KEEP");
  snprintf(p, sizeof p, "%s/k.cu", dir);
  put(p, "#include \"k.h\"\n"
         "extern \"C\" __global__ void k(unsigned *o) { o[0] = SCALE; o[1] = OFFSET; }\n");
  char *real = ag_spec_nvcc(), wrap[700];
  snprintf(wrap, sizeof wrap, "%s/nvcc-editing", dir);
  ag_str sh = AG_STR_INIT;
  ag_str_printf(&sh, "#!/bin/sh\n'%s' \"$@\" || exit $?\nprintf '#define OFFSET 4242u\\n' > '%s/off.h'\n",
                real, inc);
  CHECK_EQ_INT(ag_file_write_atomic(wrap, sh.p, sh.len), 0);
  CHECK_EQ_INT(chmod(wrap, 0755), 0);
  setenv("ARGUS_NVCC", wrap, 1);
  CHECK_EQ_INT(compile(dir, fl, "888", &has), 0); /* nvcc read 888, then the edit */
  CHECK(has);
  setenv("ARGUS_NVCC", real, 1);
  CHECK_EQ_INT(compile(dir, fl, "4242", &has), 0); /* not served the stale 888 */
  CHECK(has);
  snprintf(p, sizeof p, "%s/off.h", inc); /* the same content, dated back */
  put(p, "#define OFFSET 4242u\n");
  unsetenv("ARGUS_NVCC");
  ag_free(real);
  ag_str_release(&sh);
  /* the working directory is part of the entry (relative -I paths) */
  char here[1024];
  CHECK(getcwd(here, sizeof here) != NULL);
  CHECK_EQ_INT(chdir(dir), 0);
  CHECK_EQ_INT(compile(dir, fl, "4242", &has), 0);
  CHECK_EQ_INT(chdir(here), 0);
  /* an options file makes the compile uncacheable */
  snprintf(p, sizeof p, "%s/opts", dir);
  put(p, "-DEXTRA=7\n");
  char optf[1500];
  snprintf(optf, sizeof optf, "%s", p);
  const char *flo[] = {"-arch=sm_90a", flag, "-optf", optf, NULL};
  CHECK_EQ_INT(compile(dir, flo, "4242", &has), 0);
  CHECK_EQ_INT(compile(dir, flo, "4242", &has), 0);
  /* shadowing through a subdirectory: "cfg/opts.h" is found in the -I
   * directory; a new cfg/opts.h beside the source (cfg/ already there)
   * must be seen */
  snprintf(p, sizeof p, "%s/cfg", inc);
  CHECK_EQ_INT(ag_mkdir_p(p, 0755), 0);
  snprintf(p, sizeof p, "%s/cfg/opts.h", inc);
  put(p, "#define OPT 31337u\n");
  snprintf(p, sizeof p, "%s/cfg", dir);
  CHECK_EQ_INT(ag_mkdir_p(p, 0755), 0);
  snprintf(p, sizeof p, "%s/k.cu", dir);
  put(p, "#include \"k.h\"\n#include \"cfg/opts.h\"\n"
         "extern \"C\" __global__ void k(unsigned *o) { o[0] = SCALE; o[1] = OPT; }\n");
  CHECK_EQ_INT(compile(dir, fl, "31337", &has), 0);
  CHECK(has);
  CHECK_EQ_INT(compile(dir, fl, "31337", &has), 1);
  snprintf(p, sizeof p, "%s/cfg/opts.h", dir);
  put(p, "#define OPT 27182u\n");
  CHECK_EQ_INT(compile(dir, fl, "27182", &has), 0);
  CHECK(has);
  /* environment that adds flags or include directories: not cached */
  setenv("NVCC_APPEND_FLAGS", "-DUNUSED_BY_K=1", 1);
  CHECK_EQ_INT(compile(dir, fl, "27182", &has), 0);
  CHECK_EQ_INT(compile(dir, fl, "27182", &has), 0);
  unsetenv("NVCC_APPEND_FLAGS");
  /* an include directory in a comma list, and one that does not exist yet:
   * a header later appearing in either is seen. First the source directory's
   * cfg/opts.h goes, so "cfg/opts.h" resolves through the -I list. */
  snprintf(p, sizeof p, "%s/cfg/opts.h", dir);
  CHECK_EQ_INT(unlink(p), 0);
  char over[700], later[700], list[1500];
  snprintf(over, sizeof over, "%s/over", dir);
  snprintf(later, sizeof later, "%s/later/deeper", dir);
  CHECK_EQ_INT(ag_mkdir_p(over, 0755), 0);
  snprintf(list, sizeof list, "-I%s,%s", over, later);
  const char *flc[] = {"-arch=sm_90a", list, flag, NULL};
  CHECK_EQ_INT(compile(dir, flc, "31337", &has), 0); /* inc dir/cfg/opts.h */
  CHECK(has);
  CHECK_EQ_INT(compile(dir, flc, "31337", &has), 1);
  snprintf(p, sizeof p, "%s/unrelated.h", over); /* any new entry in a searched directory */
  put(p, "#error never read\n");
  CHECK_EQ_INT(compile(dir, flc, "31337", &has), 0);
  CHECK_EQ_INT(compile(dir, flc, "31337", &has), 1);
  snprintf(p, sizeof p, "%s/cfg", over); /* over/cfg/opts.h now shadows inc's */
  CHECK_EQ_INT(ag_mkdir_p(p, 0755), 0);
  snprintf(p, sizeof p, "%s/cfg/opts.h", over);
  put(p, "#define OPT 16180u\n");
  CHECK_EQ_INT(compile(dir, flc, "16180", &has), 0);
  CHECK(has);
  CHECK_EQ_INT(unlink(p), 0);
  CHECK_EQ_INT(compile(dir, flc, "31337", &has), 0);
  CHECK_EQ_INT(compile(dir, flc, "31337", &has), 1);
  snprintf(p, sizeof p, "%s/cfg", later); /* the missing directory appears, with a shadow */
  CHECK_EQ_INT(ag_mkdir_p(p, 0755), 0);
  snprintf(p, sizeof p, "%s/cfg/opts.h", later);
  put(p, "#define OPT 14142u\n");
  CHECK_EQ_INT(compile(dir, flc, "14142", &has), 0);
  CHECK(has);
  /* a compile error is reported, and not cached */
  setenv("ARGUS_CACHE_DIR", cache, 1);
  snprintf(p, sizeof p, "%s/k.h", dir);
  put(p, "#define SCALE this is not C\n");
  CHECK_EQ_INT(compile(dir, fl, "", &has), -1);
  CHECK_EQ_INT(compile(dir, fl, "", &has), -1);
  unsetenv("ARGUS_CACHE_DIR");
  ag_str_release(&ptxdir);
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK_EQ_INT(system(cmd), 0);
}

RUN_TESTS(T(valid), T(invalid), T(missing_file), T(ptx_cache))
