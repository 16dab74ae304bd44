/*
 * test_markers_sass.c — what markers cost in machine code. Each example
 * kernel is compiled to a cubin three ways and the executable ELF sections
 * (.text.<kernel>: the SASS) are compared:
 *   - as a production build (ARGUS_MARKERS undefined) and from a copy of the
 *     source with every marker statement deleted: byte-identical (asserted:
 *     a kernel compiled outside Argus is the same machine code);
 *   - with -DARGUS_MARKERS=1, as Argus compiles it: the same number of
 *     instructions (asserted); byte identity is printed. nvcc 13.0 reorders
 *     code around the `asm volatile` comments, so the bytes differ.
 * Deliberately wrong case: ptxas -O0 code differs in size. Skips (77)
 * without nvcc.
 */
#include "argus/core.h"
#include "check.h"
#include "corpus.h"

#include <elf.h>
#include <unistd.h>

static char *nvcc;

static int compile(const char *src, const char *arch, const char *extra, const char *out) {
  char inc[4096];
  snprintf(inc, sizeof inc, "-I%s/include", getenv("ARGUS_SOURCE_DIR"));
  const char *argv[12];
  int a = 0;
  argv[a++] = nvcc;
  argv[a++] = "-cubin";
  argv[a++] = arch;
  argv[a++] = inc;
  if (extra)
    argv[a++] = extra;
  argv[a++] = "-o";
  argv[a++] = out;
  argv[a++] = src;
  argv[a] = NULL;
  ag_str err = AG_STR_INIT;
  int ok = run_capture(argv, NULL, &err, NULL) == 0;
  if (!ok)
    fprintf(stderr, "nvcc failed: %s\n", ag_str_cstr(&err));
  ag_str_release(&err);
  return ok;
}

/* Concatenates "name:bytes" of every SHF_EXECINSTR section into out and
 * "name:size;" into sizes. */
static int text_sections(const char *path, ag_str *out, ag_str *sizes) {
  char *data;
  size_t len;
  if (ag_file_read(path, &data, &len))
    return -1;
  int rc = -1;
  if (len < sizeof(Elf64_Ehdr) || memcmp(data, ELFMAG, SELFMAG) || data[EI_CLASS] != ELFCLASS64)
    goto out;
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)data;
  if (eh->e_shoff + (size_t)eh->e_shnum * sizeof(Elf64_Shdr) > len || eh->e_shstrndx >= eh->e_shnum)
    goto out;
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(data + eh->e_shoff);
  const char *names = data + sh[eh->e_shstrndx].sh_offset;
  int n = 0;
  for (int i = 0; i < eh->e_shnum; i++) {
    if (!(sh[i].sh_flags & SHF_EXECINSTR) || sh[i].sh_offset + sh[i].sh_size > len)
      continue;
    ag_str_printf(out, "%s:%zu:", names + sh[i].sh_name, (size_t)sh[i].sh_size);
    ag_str_printf(sizes, "%s:%zu;", names + sh[i].sh_name, (size_t)sh[i].sh_size);
    ag_str_append(out, data + sh[i].sh_offset, sh[i].sh_size);
    n++;
  }
  rc = n;
out:
  ag_free(data);
  return rc;
}

static int sass_text(const char *cuobjdump, const char *cubin, ag_str *out) {
  const char *argv[] = {cuobjdump, "-sass", cubin, NULL};
  return run_capture(argv, out, NULL, NULL) == 0;
}

/* Writes a copy of src (in the same directory, so includes resolve) with
 * every ARGUS_BEGIN/END/BEGIN_AT/ROLE(...) statement deleted; returns its
 * path (owned). */
static char *strip_markers(const char *src) {
  char *text;
  size_t len;
  if (ag_file_read(src, &text, &len))
    return NULL;
  ag_str out = AG_STR_INIT;
  for (size_t i = 0; i < len;) {
    if (!strncmp(text + i, "ARGUS_", 6) && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t' ||
                                            text[i - 1] == '\n' || text[i - 1] == '{' || text[i - 1] == ';')) {
      const char *p = text + i + 6;
      if (!strncmp(p, "BEGIN_AT(", 9) || !strncmp(p, "BEGIN(", 6) || !strncmp(p, "END(", 4) ||
          !strncmp(p, "ROLE(", 5)) {
        size_t j = i;
        int depth = 0;
        while (j < len && text[j] != '(')
          j++;
        for (; j < len; j++) {
          if (text[j] == '(')
            depth++;
          else if (text[j] == ')' && --depth == 0)
            break;
        }
        j++;
        while (j < len && (text[j] == ' ' || text[j] == ';'))
          j++;
        i = j;
        continue;
      }
    }
    ag_str_putc(&out, text[i++]);
  }
  ag_free(text);
  ag_str path = AG_STR_INIT;
  ag_str_printf(&path, "%s.nomarkers.%d.cu", src, (int)getpid());
  int rc = ag_file_write_atomic(path.p, out.p, out.len);
  ag_str_release(&out);
  if (rc) {
    ag_str_release(&path);
    return NULL;
  }
  return ag_str_detach(&path);
}

static void compare(const char *rel, const char *arch) {
  char src[4096];
  snprintf(src, sizeof src, "%s/%s", getenv("ARGUS_SOURCE_DIR"), rel);
  char with[] = "/tmp/argus-sass-XXXXXX", without[] = "/tmp/argus-sass-XXXXXX",
       o0[] = "/tmp/argus-sass-XXXXXX";
  close(mkstemp(with));
  close(mkstemp(without));
  close(mkstemp(o0));
  char prod[] = "/tmp/argus-sass-XXXXXX", bare[] = "/tmp/argus-sass-XXXXXX";
  close(mkstemp(prod));
  close(mkstemp(bare));
  char *stripped = strip_markers(src);
  CHECK(stripped != NULL);
  CHECK(compile(src, arch, NULL, prod));
  CHECK(stripped && compile(stripped, arch, NULL, bare));
  {
    ag_str p1 = AG_STR_INIT, p2 = AG_STR_INIT, s1 = AG_STR_INIT, s2 = AG_STR_INIT;
    int n1 = text_sections(prod, &p1, &s1), n2 = text_sections(bare, &p2, &s2);
    CHECK(n1 >= 1 && n1 == n2);
    CHECK(p1.len == p2.len && memcmp(p1.p, p2.p, p1.len) == 0);
    printf("%s: production build vs source without markers: %s\n", rel,
           p1.len == p2.len && memcmp(p1.p, p2.p, p1.len) == 0 ? "byte-identical" : "DIFFERENT");
    ag_str_release(&p1);
    ag_str_release(&p2);
    ag_str_release(&s1);
    ag_str_release(&s2);
  }
  unlink(prod);
  unlink(bare);
  if (stripped) {
    unlink(stripped);
    ag_free(stripped);
  }
  CHECK(compile(src, arch, "-DARGUS_MARKERS=1", with));
  CHECK(compile(src, arch, NULL, without));
  CHECK(compile(src, arch, "-Xptxas=-O0", o0));
  ag_str a = AG_STR_INIT, b = AG_STR_INIT, c = AG_STR_INIT;
  ag_str sa = AG_STR_INIT, sb = AG_STR_INIT, sc = AG_STR_INIT;
  int na = text_sections(with, &a, &sa), nb = text_sections(without, &b, &sb),
      nc = text_sections(o0, &c, &sc);
  CHECK(na >= 1);
  CHECK_EQ_INT(na, nb);
  /* the same instructions count per kernel */
  CHECK_EQ_STR(ag_str_cstr(&sa), ag_str_cstr(&sb));
  int same = a.len == b.len && memcmp(a.p, b.p, a.len) == 0;
  printf("%s: code sections %s with markers, %s without; byte-identical: %s\n", rel,
         ag_str_cstr(&sa), ag_str_cstr(&sb), same ? "yes" : "no");
  /* deliberately wrong: unoptimized code has a different size */
  CHECK(nc >= 1);
  CHECK(strcmp(ag_str_cstr(&sa), ag_str_cstr(&sc)) != 0);
  char *cuobjdump = ag_which("cuobjdump");
  if (cuobjdump) {
    ag_str da = AG_STR_INIT, db = AG_STR_INIT;
    CHECK(sass_text(cuobjdump, with, &da) && sass_text(cuobjdump, without, &db));
    printf("cuobjdump -sass: %s\n", !strcmp(ag_str_cstr(&da), ag_str_cstr(&db))
                                        ? "identical listings"
                                        : "listings differ");
    ag_str_release(&da);
    ag_str_release(&db);
    ag_free(cuobjdump);
  } else {
    printf("cuobjdump not found: compared ELF code sections only\n");
  }
  ag_str_release(&sa);
  ag_str_release(&sb);
  ag_str_release(&sc);
  ag_str_release(&a);
  ag_str_release(&b);
  ag_str_release(&c);
  unlink(with);
  unlink(without);
  unlink(o0);
}

static void need_nvcc(void) {
  if (!nvcc && !(nvcc = cuda_tool("nvcc"))) {
    printf("nvcc not found: skipped\n");
    exit(77);
  }
}

TEST(overhead_sm90) {
  need_nvcc();
  compare("examples/overhead/overhead.cu", "-arch=sm_90");
}
TEST(gemm_tma_sm90a) {
  need_nvcc();
  compare("examples/gemm_tma/gemm_tma.cu", "-gencode=arch=compute_90a,code=sm_90a");
}

RUN_TESTS(T(overhead_sm90), T(gemm_tma_sm90a))
