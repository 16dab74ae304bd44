/*
 * check.h — the unit-test harness: assertion macros that print both sides,
 * a test registry run from main, SKIP for a case whose precondition is
 * missing here, and the closing "N passed, N failed, N skipped" line. The
 * program exits 1 when a case failed, else 77 (ctest: Skipped) when a case
 * skipped, else 0: a test that could not run never reads as passed.
 * Include once per test program (it defines main).
 */
#ifndef ARGUS_TEST_CHECK_H
#define ARGUS_TEST_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int chk__failed_asserts;
static int chk__cur_failed;
static int chk__cur_skipped;

/* SKIP("no nvcc") in a case: its precondition is missing on this machine
 * (no GPU, no nvcc, a corpus file nvcc builds). Prints why and returns from
 * the case; the other cases still run, and the program exits 77 unless one
 * of them failed. */
#define SKIP(...)                                                              \
  do {                                                                         \
    printf("skipped: ");                                                       \
    printf(__VA_ARGS__);                                                       \
    printf("\n");                                                              \
    chk__cur_skipped = 1;                                                      \
    return;                                                                    \
  } while (0)

/* CHK_UNDER_ASAN: built with AddressSanitizer. CUPTI's profiler host API
 * opens libnvperf_host.so with RTLD_DEEPBIND, which the sanitizer runtime
 * refuses (it aborts the process): the cases that load the real CUPTI host
 * API skip there, and the plain build runs them. */
#if defined(__SANITIZE_ADDRESS__)
#define CHK_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CHK_UNDER_ASAN 1
#endif
#endif
#define CHK_SKIP_UNDER_ASAN_CUPTI_HOST()                                       \
  do {                                                                         \
    if (CHK_ASAN_ON)                                                           \
      SKIP("CUPTI opens libnvperf_host.so with RTLD_DEEPBIND, which "          \
           "AddressSanitizer refuses (the plain build runs this case)");       \
  } while (0)
#ifdef CHK_UNDER_ASAN
#define CHK_ASAN_ON 1
#else
#define CHK_ASAN_ON 0
#endif

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
      chk__failed_asserts++;                                                   \
      chk__cur_failed = 1;                                                     \
    }                                                                          \
  } while (0)

#define CHECK_EQ_INT(a, b)                                                     \
  do {                                                                         \
    long long chk_a = (long long)(a), chk_b = (long long)(b);                  \
    if (chk_a != chk_b) {                                                      \
      fprintf(stderr, "%s:%d: %s == %s failed: %lld vs %lld\n", __FILE__,     \
              __LINE__, #a, #b, chk_a, chk_b);                                 \
      chk__failed_asserts++;                                                   \
      chk__cur_failed = 1;                                                     \
    }                                                                          \
  } while (0)

#define CHECK_EQ_U64(a, b)                                                     \
  do {                                                                         \
    uint64_t chk_a = (uint64_t)(a), chk_b = (uint64_t)(b);                     \
    if (chk_a != chk_b) {                                                      \
      fprintf(stderr, "%s:%d: %s == %s failed: %" PRIu64 " vs %" PRIu64 "\n",  \
              __FILE__, __LINE__, #a, #b, chk_a, chk_b);                       \
      chk__failed_asserts++;                                                   \
      chk__cur_failed = 1;                                                     \
    }                                                                          \
  } while (0)

#define CHECK_EQ_STR(a, b)                                                     \
  do {                                                                         \
    const char *chk_a = (a), *chk_b = (b);                                     \
    if (!chk_a || !chk_b || strcmp(chk_a, chk_b) != 0) {                       \
      fprintf(stderr, "%s:%d: %s == %s failed:\n  left:  \"%s\"\n  right: \"%s\"\n", \
              __FILE__, __LINE__, #a, #b, chk_a ? chk_a : "(null)",             \
              chk_b ? chk_b : "(null)");                                       \
      chk__failed_asserts++;                                                   \
      chk__cur_failed = 1;                                                     \
    }                                                                          \
  } while (0)

#define CHECK_CONTAINS(hay, needle)                                            \
  do {                                                                         \
    const char *chk_h = (hay), *chk_n = (needle);                              \
    if (!chk_h || !strstr(chk_h, chk_n)) {                                     \
      fprintf(stderr, "%s:%d: \"%s\" not found in:\n%s\n", __FILE__, __LINE__, \
              chk_n, chk_h ? chk_h : "(null)");                                \
      chk__failed_asserts++;                                                   \
      chk__cur_failed = 1;                                                     \
    }                                                                          \
  } while (0)

typedef void (*chk_fn)(void);
typedef struct {
  const char *name;
  chk_fn fn;
} chk_case;

#define TEST(name) static void name(void)

/* RUN_TESTS({"name", fn}, ...) runs each case, prints a line per failing
 * or skipped case and the closing summary; exit 1 when anything failed, 77
 * when nothing failed but a case skipped. */
#define RUN_TESTS(...)                                                         \
  int main(int argc, char **argv) {                                            \
    static const chk_case cases[] = {__VA_ARGS__};                             \
    int passed = 0, failed = 0, skipped = 0;                                   \
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {              \
      if (argc > 1 && strcmp(argv[1], cases[i].name) != 0)                     \
        continue;                                                              \
      chk__cur_failed = chk__cur_skipped = 0;                                  \
      cases[i].fn();                                                           \
      if (chk__cur_failed) {                                                   \
        failed++;                                                              \
        fprintf(stderr, "FAIL %s\n", cases[i].name);                          \
      } else if (chk__cur_skipped) {                                           \
        skipped++;                                                             \
        printf("SKIP %s\n", cases[i].name);                                    \
      } else {                                                                 \
        passed++;                                                              \
      }                                                                        \
    }                                                                          \
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);     \
    return failed ? 1 : skipped ? 77 : 0;                                      \
  }

#define T(fn) {#fn, fn}

#endif
