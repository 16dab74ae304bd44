/*
 * test_sass_lineinfo.c — the cubin reader (src/sass/lineinfo.c) on cubins
 * ptxas makes in the test:
 *   - `ptxas -lineinfo` leaves every code section byte-identical to the
 *     plain build and gives every SASS instruction a PTX line (the
 *     ground-truth kernel, examples/gemm_tma, async_truth's three kernels,
 *     the recorded Triton PTX); Triton's PTX carries .loc, so its plain build
 *     has the table already, with the same PTX lines; deliberately wrong
 *     case: -O0 code differs;
 *   - every SASS instruction of the ground-truth kernel has a PTX line, each
 *     line is an instruction (or a function's '{'), and the .func helper's
 *     instructions come from the helper's lines;
 *   - bad input (not ELF, every truncation, a corrupted line program) is
 *     AG_EPARSE with a diagnostic, never a crash.
 * Skips (77) without nvcc and ptxas.
 */
#include "argus/sass.h"
#include "check.h"
#include "sass_util.h"

#include <elf.h>

static ag_sass_cubin *build(const char *ptx, size_t len, int lineinfo, const char *opt) {
  char arch[32], *bin = NULL;
  size_t blen = 0;
  su_target(ptx, arch, sizeof arch);
  ag_str err = AG_STR_INIT;
  ag_sass_cubin *c = NULL;
  int rc;
  if (opt) { /* -O0: through a copy of su_ptxas's argv with the option */
    char *as = cuda_tool("ptxas");
    char in[] = "/tmp/argus-li-XXXXXX.ptx", out[] = "/tmp/argus-li-XXXXXX.cubin";
    int fd = mkstemps(in, 4), fd2 = mkstemps(out, 6);
    CHECK(fd >= 0 && fd2 >= 0 && write(fd, ptx, len) == (ssize_t)len);
    close(fd);
    close(fd2);
    char a[64];
    snprintf(a, sizeof a, "-arch=%s", arch);
    const char *argv[] = {as, a, opt, "-o", out, in, NULL};
    rc = run_capture(argv, NULL, &err, NULL) == 0 ? ag_file_read(out, &bin, &blen) : -1;
    unlink(in);
    unlink(out);
    ag_free(as);
  } else {
    rc = su_ptxas(arch, lineinfo, ptx, len, &bin, &blen, &err);
  }
  if (rc)
    fprintf(stderr, "ptxas failed: %s\n", ag_str_cstr(&err));
  CHECK_EQ_INT(rc, 0);
  ag_diags d;
  ag_diags_init(&d);
  if (!rc)
    CHECK_EQ_INT(ag_sass_cubin_parse(bin, blen, "test", &d, &c), 0);
  ag_diags_release(&d);
  ag_str_release(&err);
  ag_free(bin);
  return c;
}

/* 1 when the code sections are the same bytes */
static int same_text(const ag_sass_cubin *a, const ag_sass_cubin *b) {
  if (a->ntexts != b->ntexts)
    return 0;
  for (int i = 0; i < a->ntexts; i++) {
    int j = ag_sass_cubin_text(b, a->texts[i].kernel);
    if (j < 0 || a->texts[i].size != b->texts[j].size ||
        memcmp(a->texts[i].bytes, b->texts[j].bytes, a->texts[i].size))
      return 0;
  }
  return 1;
}

/* the plain build of ptx against its -lineinfo build (the metric run's):
 * the same code, every PC a PTX line */
static void check_identical(const char *what, const char *ptx, size_t len) {
  ag_sass_cubin *plain = build(ptx, len, 0, NULL), *li = build(ptx, len, 1, NULL);
  if (plain && li) {
    printf("%s: %d code section(s), %d line rows\n", what, li->ntexts, li->nrows);
    CHECK(li->ntexts > 0);
    CHECK(same_text(plain, li));
    CHECK(li->has_lineinfo);
    CHECK(!plain->has_lineinfo || strstr(ptx, ".loc"));
    CHECK(li->nrows > 0);
    int lines = 0, missing = 0;
    for (int t = 0; t < li->ntexts; t++)
      for (uint64_t pc = 0; pc < li->texts[t].size; pc += 16) {
        int line;
        if (ag_sass_cubin_pc_line(li, t, pc, &line) == 0 && line > 0)
          lines++;
        else
          missing++;
      }
    CHECK_EQ_INT(missing, 0);
    CHECK(lines > 0);
    /* PTX with .loc has line info without -lineinfo: the same PTX lines */
    if (plain->has_lineinfo) {
      int same = 0, n = 0;
      for (uint64_t pc = 0; pc < plain->texts[0].size; pc += 16, n++) {
        int l1 = -1, l2 = -2;
        ag_sass_cubin_pc_line(plain, 0, pc, &l1);
        ag_sass_cubin_pc_line(li, 0, pc, &l2);
        same += l1 == l2;
      }
      printf("  .loc build: %d of %d PCs on the same PTX line\n", same, n);
      CHECK_EQ_INT(same, n);
    }
  }
  ag_sass_cubin_free(plain);
  ag_sass_cubin_free(li);
}

static char *read_src(const char *rel, size_t *len) {
  char p[4096], *d = NULL;
  snprintf(p, sizeof p, "%s/%s", getenv("ARGUS_SOURCE_DIR"), rel);
  if (ag_file_read(p, &d, len))
    return NULL;
  return d;
}

TEST(lineinfo_leaves_text_identical) {
  su_need_tools();
  char *ptx;
  size_t len;
  CHECK_EQ_INT(su_cuda_ptx("tests/data/cuda/map_truth.cu", &ptx, &len), 0);
  check_identical("map_truth", ptx, len);
  /* deliberately wrong: -O0 code is other code */
  ag_sass_cubin *o0 = build(ptx, len, 0, "-O0"), *o3 = build(ptx, len, 0, NULL);
  CHECK(o0 && o3 && !same_text(o0, o3));
  ag_sass_cubin_free(o0);
  ag_sass_cubin_free(o3);
  ag_free(ptx);
  CHECK_EQ_INT(su_cuda_ptx("examples/gemm_tma/gemm_tma.cu", &ptx, &len), 0);
  check_identical("gemm_tma", ptx, len);
  ag_free(ptx);
  /* several kernels: each sequence in its own code section */
  CHECK_EQ_INT(su_cuda_ptx("tests/data/cuda/async_truth.cu", &ptx, &len), 0);
  check_identical("async_truth", ptx, len);
  ag_free(ptx);
  const char *triton[] = {"tests/data/ptx/triton/triton_matmul_pipelined.ptx",
                          "tests/data/ptx/triton/triton_attention_fwd.ptx"};
  for (int i = 0; i < 2; i++) {
    char *t = read_src(triton[i], &len);
    CHECK(t != NULL);
    if (t)
      check_identical(triton[i], t, len);
    ag_free(t);
  }
}

static const char *line_text(const char *ptx, size_t len, int line, size_t *n) {
  const char *l = ag_text_line(ptx, len, line, n);
  while (l && *n && (*l == ' ' || *l == '\t')) {
    l++;
    (*n)--;
  }
  return l;
}

TEST(every_pc_has_a_ptx_line) {
  su_need_tools();
  char *ptx;
  size_t len;
  CHECK_EQ_INT(su_cuda_ptx("tests/data/cuda/map_truth.cu", &ptx, &len), 0);
  ag_sass_cubin *c = build(ptx, len, 1, NULL);
  CHECK(c != NULL);
  if (!c) {
    ag_free(ptx);
    return;
  }
  int t = ag_sass_cubin_text(c, "map_truth");
  CHECK(t >= 0);
  CHECK_EQ_INT(ag_sass_cubin_text(c, "no_such_kernel"), -1);
  /* the helper: a local FUNC symbol in the kernel's section */
  int helper = -1;
  for (int i = 0; i < c->nfuncs; i++)
    if (strstr(c->funcs[i].name, "_Z3mixPVffi"))
      helper = i;
  CHECK(helper >= 0);
  /* CUPTI's (function, pcOffset) to a section offset */
  uint64_t spc = 0;
  CHECK_EQ_INT(ag_sass_cubin_section_pc(c, "map_truth", "_Z3mixPVffi", 16, &spc), 0);
  CHECK(helper < 0 || spc == c->funcs[helper].offset + 16);
  CHECK(helper < 0 || c->funcs[helper].offset > 0);
  CHECK_EQ_INT(ag_sass_cubin_section_pc(c, "map_truth", "map_truth", 32, &spc), 0);
  CHECK(spc == 32);
  CHECK_EQ_INT(ag_sass_cubin_section_pc(c, "map_truth", "_Z3mixPVffi", 1u << 20, &spc),
               AG_ENOTFOUND);
  CHECK_EQ_INT(ag_sass_cubin_section_pc(c, "map_truth", "nope", 0, &spc), AG_ENOTFOUND);
  CHECK_EQ_INT(ag_sass_cubin_section_pc(c, "nope", "map_truth", 0, &spc), AG_ENOTFOUND);
  const char *hdr = strstr(ptx, ".func");
  int mix_first = 1, mix_last = 0;
  for (const char *p = ptx; p < hdr; p++)
    mix_first += *p == '\n';
  const char *entry = strstr(ptx, ".entry");
  mix_last = mix_first;
  for (const char *p = hdr; p < entry; p++)
    mix_last += *p == '\n';
  int calls = 0, in_helper = 0, last_call = 0;
  for (uint64_t pc = 0; t >= 0 && pc < c->texts[t].size; pc += 16) {
    int line = 0;
    CHECK_EQ_INT(ag_sass_cubin_pc_line(c, t, pc, &line), 0);
    size_t n = 0;
    const char *l = line_text(ptx, len, line, &n);
    CHECK(l != NULL && n > 0);
    if (!l || !n)
      continue;
    /* an instruction (lower-case opcode, or a guard) or a body's '{' */
    CHECK((*l >= 'a' && *l <= 'z') || *l == '@' || *l == '{' || *l == '_' || *l == '$' ||
          *l == ')' || *l == '(');
    if (n >= 4 && !memcmp(l, "call", 4) && line != last_call) {
      calls++; /* distinct call lines */
      last_call = line;
    }
    if (ag_sass_cubin_pc_func(c, t, pc) == helper) {
      in_helper++;
      CHECK(line >= mix_first && line <= mix_last);
    }
  }
  printf("map_truth: %llu SASS instructions, %d from helper lines, %d call lines\n",
         (unsigned long long)(c->texts[t].size / 16), in_helper, calls);
  CHECK(in_helper > 0);
  CHECK_EQ_INT(calls, 8); /* the K1 + K2 call lines */
  int line = 0;
  CHECK_EQ_INT(ag_sass_cubin_pc_line(c, t, c->texts[t].size + 64, &line), AG_ENOTFOUND);
  ag_sass_cubin_free(c);
  ag_free(ptx);
}

TEST(bad_cubins_are_parse_errors) {
  su_need_tools();
  ag_diags d;
  ag_diags_init(&d);
  ag_sass_cubin *c = (ag_sass_cubin *)1;
  CHECK_EQ_INT(ag_sass_cubin_parse("not an elf", 10, "x.cubin", &d, &c), AG_EPARSE);
  CHECK(c == NULL);
  CHECK(d.nerrors == 1);
  if (d.items.n)
    CHECK_CONTAINS(d.items.v[0].msg, "not a 64-bit little-endian ELF");
  ag_diags_release(&d);
  char *ptx, *bin;
  size_t len, blen;
  CHECK_EQ_INT(su_cuda_ptx("tests/data/cuda/map_truth.cu", &ptx, &len), 0);
  ag_str err = AG_STR_INIT;
  CHECK_EQ_INT(su_ptxas("sm_90a", 1, ptx, len, &bin, &blen, &err), 0);
  /* every truncation: an answer or a parse error, never a crash */
  int errors = 0;
  for (size_t n = 0; n < blen; n += n < 256 ? 1 : 61) {
    ag_diags_init(&d);
    int rc = ag_sass_cubin_parse(bin, n, "cut.cubin", &d, &c);
    CHECK(rc == 0 || rc == AG_EPARSE);
    if (rc == AG_EPARSE) {
      errors++;
      CHECK(d.nerrors > 0);
    }
    ag_sass_cubin_free(rc ? NULL : c);
    ag_diags_release(&d);
  }
  CHECK(errors > 0);
  /* out of memory at every allocation: AG_ENOMEM, never a crash or a leak */
  for (long k = 1;; k++) {
    ag_diags_init(&d);
    ag_alloc_fail_at(k);
    int rc = ag_sass_cubin_parse(bin, blen, "oom.cubin", &d, &c);
    ag_alloc_fail_at(0);
    ag_diags_release(&d);
    CHECK(rc == 0 || rc == AG_ENOMEM);
    if (rc == 0) {
      ag_sass_cubin_free(c);
      CHECK(k > 3);
      break;
    }
    CHECK(c == NULL);
  }
  /* the line program's unit length past its section */
  ag_diags_init(&d);
  CHECK_EQ_INT(ag_sass_cubin_parse(bin, blen, "ok.cubin", &d, &c), 0);
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)bin;
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(bin + eh->e_shoff);
  const char *names = bin + sh[eh->e_shstrndx].sh_offset;
  int found = 0;
  for (int i = 0; i < eh->e_shnum; i++)
    if (!strcmp(names + sh[i].sh_name, ".nv_debug_line_sass")) {
      memset(bin + sh[i].sh_offset, 0x7f, 4);
      found = 1;
    }
  CHECK(found);
  ag_sass_cubin_free(c);
  ag_diags_release(&d);
  ag_diags_init(&d);
  CHECK_EQ_INT(ag_sass_cubin_parse(bin, blen, "bad.cubin", &d, &c), AG_EPARSE);
  if (d.items.n)
    CHECK_CONTAINS(d.items.v[0].msg, "runs past the section");
  ag_diags_release(&d);
  ag_diags_init(&d);
  CHECK(ag_sass_cubin_load("/nonexistent/x.cubin", &d, &c) < 0);
  CHECK(c == NULL);
  CHECK(d.nerrors > 0);
  ag_diags_release(&d);
  ag_str_release(&err);
  ag_free(bin);
  ag_free(ptx);
}

RUN_TESTS(T(lineinfo_leaves_text_identical), T(every_pc_has_a_ptx_line),
          T(bad_cubins_are_parse_errors))
