/* test_megakernel_torch_ref.c — the PyTorch baseline's file reader and
 * seeded generator (examples/megakernel/torch_ref.py, docs/megakernel.md
 * "PyTorch baselines") against the C ones (mk_model.c), on the CPU without
 * torch: a tiny model's weight file written by mk_weights_save must read back
 * through the script's header parser, and its sampled weights must equal the
 * script's pure-Python generator for the same seed (and differ for another);
 * bad files are refused with their reason and exit 2. Skipped without python3. */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "mk_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char err[512], out[8192];
static char script[4096];

/* runs the script with args; its output (stdout and stderr) into out; the exit status */
static int py(const char *args) {
  char cmd[8192];
  if (!script[0]) {
    const char *src = getenv("ARGUS_SOURCE_DIR");
    snprintf(script, sizeof script, "%s/examples/megakernel/torch_ref.py", src ? src : ".");
  }
  snprintf(cmd, sizeof cmd, "python3 '%s' %s 2>&1", script, args);
  FILE *p = popen(cmd, "r");
  if (!p)
    return -1;
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = 0;
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void write_tiny(const char *path, uint64_t seed) {
  mk_config c = {128, 2, 2, 1, 64, 192, 100, 1e-5f, 10000.0f};
  mk_layout L = mk_layout_of(&c);
  uint16_t *w = malloc(L.total * 2);
  CHECK(w != NULL);
  mk_weights_generate(&c, seed, w);
  CHECK_EQ_INT(mk_weights_save(path, &c, w, err, sizeof err), 0);
  free(w);
}

/* rewrites byte `at` of path (or, at < 0, drops its last two bytes) */
static void damage(const char *path, long at, unsigned char v) {
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL);
  if (!f)
    return;
  unsigned char *b = malloc(1 << 22);
  long n = (long)fread(b, 1, 1 << 22, f);
  fclose(f);
  if (at >= 0)
    b[at] = v;
  else
    n -= 2;
  f = fopen(path, "wb");
  CHECK(f && fwrite(b, 1, (size_t)n, f) == (size_t)n);
  if (f)
    fclose(f);
  free(b);
}

/* python3 on PATH (the script needs nothing else for --selftest) */
static int have_python(void) { return system("python3 -c 1 >/dev/null 2>&1") == 0; }

TEST(test_same_generator) {
  if (!have_python())
    SKIP("no python3");
  char path[] = "/tmp/mk-torchref-XXXXXX", args[4200];
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  close(fd);
  write_tiny(path, 42);
  snprintf(args, sizeof args, "--selftest %s --seed 42", path);
  CHECK_EQ_INT(py(args), 0);
  CHECK_CONTAINS(out, "0 sampled weights differ");
  CHECK_CONTAINS(out, "2 layers, hidden 128");
  snprintf(args, sizeof args, "--selftest %s --seed 43", path); /* another seed: found */
  CHECK_EQ_INT(py(args), 1);
  CHECK_CONTAINS(out, "tensor 0 element 0");
  unlink(path);
}

TEST(test_bad_files) {
  if (!have_python())
    SKIP("no python3");
  static const struct {
    long at;
    unsigned char v;
    const char *why;
  } cases[] = {{3, 'X', "bytes 0-7 are not the magic"},
               {8, 2, "version 2 at byte 8"},
               {28, 32, "head_dim 32"},
               {-1, 0, "the file is truncated"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char path[] = "/tmp/mk-torchref-XXXXXX", args[4200];
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    write_tiny(path, 42);
    damage(path, cases[i].at, cases[i].v);
    snprintf(args, sizeof args, "--selftest %s --seed 42", path);
    CHECK_EQ_INT(py(args), 2);
    CHECK_CONTAINS(out, cases[i].why);
    CHECK_CONTAINS(out, path); /* where */
    unlink(path);
  }
  CHECK_EQ_INT(py("--selftest /tmp/mk-torchref-none --seed 1"), 2);
  CHECK_CONTAINS(out, "cannot read the weight file");
  CHECK_EQ_INT(py("--ctx 16"), 2); /* no --weights: said what to do */
  CHECK_CONTAINS(out, "--save-weights");
}

RUN_TESTS(T(test_same_generator), T(test_bad_files))
