/*
 * test_demangle.c — the kernel-name demangler (argus/demangle.h) against
 * c++filt's spelling of names nvcc gave template kernels
 * (tests/data/cuda/templates.cu, nvcc 13.0 -arch=sm_90a), the short form,
 * names it must refuse, small output buffers, and the region-path prefix
 * match. When nvcc and c++filt are on this machine it also compiles
 * templates.cu afresh and compares every .entry with c++filt.
 */
#include "check.h"

#include <unistd.h>

#include "argus/core.h"
#include "argus/demangle.h"

_Static_assert((int)AG_DEMANGLE_EINVAL == (int)AG_EINVAL, "codes");
_Static_assert((int)AG_DEMANGLE_EFULL == (int)AG_EFULL, "codes");

static const char *const names[][3] = {
    /* mangled (nvcc), full (c++filt), short */
    {"_Z5weirdILj4294967295ELc97EfEvT1_PS0_ty",
     "void weird<4294967295u, (char)97, float>(float, float*, unsigned short, unsigned long long)",
     "weird<4294967295u, (char)97, float>"},
    {"_Z3negILin3EEvPf", "void neg<-3>(float*)", "neg<-3>"},
    {"_Z5plainPf", "plain(float*)", "plain"},
    {"_Z10withstruct6ParamsPf", "withstruct(Params, float*)", "withstruct"},
    {"_Z4packIJifdEEvPi", "void pack<int, float, double>(int*)", "pack<int, float, double>"},
    {"_Z5boxedI6__halfEv3BoxIS1_IT_EEPVS2_",
     "void boxed<__half>(Box<Box<__half> >, __half volatile*)", "boxed<__half>"},
    {"_ZN4gemm5sgemmILi128ELi128ELi8EfEEvPT2_PKS1_S4_i",
     "void gemm::sgemm<128, 128, 8, float>(float*, float const*, float const*, int)",
     "gemm::sgemm<128, 128, 8, float>"},
    {"_ZN4gemm5sgemmILi64ELi32ELi16EdEEvPT2_PKS1_S4_i",
     "void gemm::sgemm<64, 32, 16, double>(double*, double const*, double const*, int)",
     "gemm::sgemm<64, 32, 16, double>"},
    {"_ZN4gemm9transposeIfLb1EEEvPT_PKS1_jl",
     "void gemm::transpose<float, true>(float*, float const*, unsigned int, long)",
     "gemm::transpose<float, true>"},
    {"_ZN4gemm9transposeIaLb0EEEvPT_PKS1_jl",
     "void gemm::transpose<signed char, false>(signed char*, signed char const*, unsigned int, "
     "long)",
     "gemm::transpose<signed char, false>"},
    {"_ZN4gemm5tiledILi256EfEEvNS_6detail4TileIXT_EXT_ET0_EEPKPKS3_",
     "void gemm::tiled<256, float>(gemm::detail::Tile<256, 256, float>, float const* const*)",
     "gemm::tiled<256, float>"},
    {"_ZN45_GLOBAL__N__2f62d544_12_templates_cu_acc5a52f4anonILl7EEEvPlm",
     "void (anonymous namespace)::anon<7l>(long*, unsigned long)",
     "(anonymous namespace)::anon<7l>"},
    /* hand-written, checked with c++filt */
    {"_Z1fI1AI1BIiEEEvv", "void f<A<B<int> > >()", "f<A<B<int> > >"},
    {"_Z1hILm5ELl3ELx2ELy1ELs4ELt6ELh7ELa8EEvv",
     "void h<5ul, 3l, 2ll, 1ull, (short)4, (unsigned short)6, (unsigned char)7, (signed char)8>()",
     "h<5ul, 3l, 2ll, 1ull, (short)4, (unsigned short)6, (unsigned char)7, (signed char)8>"},
    {"_Z1kIPKPfEvT_", "void k<float* const*>(float* const*)", "k<float* const*>"},
    {"_Z1qIJEEvv", "void q<>()", "q<>"},
    {"_ZN12_GLOBAL__N_14kernEPf", "(anonymous namespace)::kern(float*)",
     "(anonymous namespace)::kern"},
    {"_Z1gSt6vectorIiSaIiEE", "g(std::vector<int, std::allocator<int> >)", "g"},
};

TEST(matches_cxxfilt) {
  char buf[512];
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    int n = ag_demangle(names[i][0], buf, sizeof buf, AG_DEMANGLE_FULL);
    CHECK_EQ_STR(buf, names[i][1]);
    CHECK_EQ_INT(n, (int)strlen(names[i][1]));
    ag_demangle(names[i][0], buf, sizeof buf, AG_DEMANGLE_SHORT);
    CHECK_EQ_STR(buf, names[i][2]);
  }
}

TEST(refuses_what_it_does_not_know) {
  static const char *const bad[] = {
      "kern",                   /* not mangled: C linkage */
      "_Z",                     /* nothing after the prefix */
      "_Z3foo",                 /* no parameter list */
      "_Z4kernPFviE",           /* a function pointer parameter */
      "_Z4kernIXplLi1ELi2EEEvv", /* an expression argument */
      "_ZN3FooC1Ev",            /* a constructor */
      "_Z4kernS_",              /* a substitution that does not exist */
      "_Z4kernT_",              /* a template parameter of a non-template */
      "_Z9kernPf",              /* a source name longer than the name */
      "_Z1fIiEvT0_",            /* template parameter out of range */
      "_ZN4gemm5sgemmILi128ELi128ELi8EfEEvPT2_PKS1_S9_i", /* S9_ past the table */
      "_Z1fILi12",              /* a literal without its E */
      "_Z1fIiEvNK1A1bE",        /* a member function's qualifiers */
  };
  char buf[256];
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    strcpy(buf, "x");
    int rc = ag_demangle(bad[i], buf, sizeof buf, AG_DEMANGLE_FULL);
    if (rc != AG_DEMANGLE_EINVAL)
      fprintf(stderr, "  '%s' gave %d '%s'\n", bad[i], rc, buf);
    CHECK_EQ_INT(rc, AG_DEMANGLE_EINVAL);
    CHECK_EQ_STR(buf, "");
  }
  CHECK_EQ_INT(ag_demangle(NULL, buf, sizeof buf, 0), AG_DEMANGLE_EINVAL);
  /* deep nesting is bounded, not a stack overflow */
  char deep[4096] = "_Z1f";
  for (int i = 0; i < 1000; i++)
    strcat(deep, "P");
  strcat(deep, "i");
  CHECK_EQ_INT(ag_demangle(deep, buf, sizeof buf, 0), AG_DEMANGLE_EFULL);
}

/* every truncation and every one-byte change of the table's names gets an
 * answer (a name or a code), NUL-terminated, never a crash or an overrun
 * (the ASan build runs this too) */
TEST(damaged_names) {
  char m[512], buf[256];
  static const char alphabet[] = "_Z0123456789NEILSTKPRVOXJDbcfijlmstvxyz";
  int answers = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    size_t n = strlen(names[i][0]);
    for (size_t cut = 0; cut <= n; cut++) {
      memcpy(m, names[i][0], cut);
      m[cut] = 0;
      int rc = ag_demangle(m, buf, sizeof buf, AG_DEMANGLE_FULL);
      CHECK(rc == AG_DEMANGLE_EINVAL || rc == AG_DEMANGLE_EFULL || (rc >= 0 && (size_t)rc == strlen(buf)));
      answers++;
    }
    for (size_t at = 2; at < n; at++)
      for (const char *a = alphabet; *a; a++) {
        memcpy(m, names[i][0], n + 1);
        m[at] = *a;
        int rc = ag_demangle(m, buf, 16, AG_DEMANGLE_FULL); /* a small buffer too */
        CHECK(rc == AG_DEMANGLE_EINVAL || rc == AG_DEMANGLE_EFULL || (rc >= 0 && rc < 16));
        answers++;
      }
  }
  CHECK(answers > 10000);
}

TEST(small_buffers) {
  const char *m = "_ZN4gemm5sgemmILi128ELi128ELi8EfEEvPT2_PKS1_S4_i";
  const char *full = "void gemm::sgemm<128, 128, 8, float>(float*, float const*, float const*, int)";
  char buf[128];
  size_t n = strlen(full);
  CHECK_EQ_INT(ag_demangle(m, buf, n + 1, 0), (int)n); /* exactly fits */
  CHECK_EQ_STR(buf, full);
  CHECK_EQ_INT(ag_demangle(m, buf, n, 0), AG_DEMANGLE_EFULL);
  CHECK_EQ_STR(buf, "");
  CHECK_EQ_INT(ag_demangle(m, buf, 0, 0), AG_DEMANGLE_EINVAL);
}

TEST(region_prefix) {
  const char *m = "_ZN4gemm5sgemmILi128ELi128ELi8EfEEvPT2_PKS1_S4_i";
  CHECK_EQ_INT((int)ag_demangle_prefix(m, m), (int)strlen(m));
  CHECK_EQ_INT((int)ag_demangle_prefix(m, "gemm::sgemm<128, 128, 8, float>/mainloop"), 31);
  CHECK_EQ_INT((int)ag_demangle_prefix(m, "gemm::sgemm<128, 128, 8, float>"), 31);
  const char *full = "void gemm::sgemm<128, 128, 8, float>(float*, float const*, float const*, int)";
  CHECK_EQ_INT((int)ag_demangle_prefix(m, full), (int)strlen(full));
  char q[600];
  snprintf(q, sizeof q, "%s/loads", m);
  CHECK_EQ_INT((int)ag_demangle_prefix(m, q), (int)strlen(m));
  CHECK_EQ_INT((int)ag_demangle_prefix(m, "gemm::sgemm<128, 128, 8, float>x"), 0);
  CHECK_EQ_INT((int)ag_demangle_prefix(m, "gemm::sgemm<64, 32, 16, double>"), 0);
  CHECK_EQ_INT((int)ag_demangle_prefix(m, "gemm::sgemm"), 0);
  CHECK_EQ_INT((int)ag_demangle_prefix("plain", "plain/work"), 5);
  CHECK_EQ_INT((int)ag_demangle_prefix("plain", "plainer"), 0);
}

/* templates.cu through this machine's nvcc, every entry against c++filt */
TEST(fresh_nvcc_names) {
  char *nvcc = ag_which("nvcc");
  if (!nvcc && access("/usr/local/cuda/bin/nvcc", X_OK) == 0)
    nvcc = ag_strdup("/usr/local/cuda/bin/nvcc");
  char *filt = ag_which("c++filt");
  if (!nvcc || !filt) {
    printf("no nvcc or c++filt here: the fixed table above is the check\n");
    ag_free(nvcc);
    ag_free(filt);
    return;
  }
  const char *src = getenv("ARGUS_SOURCE_DIR");
  char cu[1024], ptx[128];
  snprintf(cu, sizeof cu, "%s/tests/data/cuda/templates.cu", src ? src : ".");
  snprintf(ptx, sizeof ptx, "/tmp/argus-demangle-%ld.ptx", (long)getpid());
  const char *argv[] = {nvcc, "-ptx", "-arch=sm_90a", cu, "-o", ptx, NULL};
  ag_proc_opts o;
  memset(&o, 0, sizeof o);
  o.argv = argv;
  o.timeout_s = 120;
  ag_proc_result r;
  CHECK_EQ_INT(ag_proc_run(&o, &r), 0);
  CHECK(r.exited && r.exit_code == 0);
  char *text = NULL;
  size_t len = 0;
  CHECK_EQ_INT(ag_file_read(ptx, &text, &len), 0);
  unlink(ptx);
  int n = 0;
  for (const char *p = text ? strstr(text, ".entry ") : NULL; p; p = strstr(p + 1, ".entry ")) {
    char name[512];
    if (sscanf(p + 7, "%511[^( \n]", name) != 1)
      continue;
    ag_str out = AG_STR_INIT;
    const char *fa[] = {filt, name, NULL};
    memset(&o, 0, sizeof o);
    o.argv = fa;
    o.capture_out = &out;
    o.timeout_s = 30;
    CHECK_EQ_INT(ag_proc_run(&o, &r), 0);
    while (out.len && out.p[out.len - 1] == '\n')
      out.p[--out.len] = 0;
    char buf[1024];
    int rc = ag_demangle(name, buf, sizeof buf, 0);
    if (!strncmp(name, "_Z", 2)) {
      CHECK(rc > 0);
      CHECK_EQ_STR(buf, ag_str_cstr(&out));
    }
    ag_str_release(&out);
    n++;
  }
  CHECK(n >= 12);
  printf("%d kernels of templates.cu demangled as c++filt does\n", n);
  ag_free(text);
  ag_free(nvcc);
  ag_free(filt);
}

RUN_TESTS(T(matches_cxxfilt), T(refuses_what_it_does_not_know), T(damaged_names),
          T(small_buffers),
          T(region_prefix), T(fresh_nvcc_names))
