/*
 * util.h — helpers shared by the store tests: scratch directories removed at
 * the end, deterministic test content (compressible or not), and a reference
 * SHA-256 for comparisons.
 */
#ifndef ARGUS_STORE_TEST_UTIL_H
#define ARGUS_STORE_TEST_UTIL_H

#include "argus/store.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* rm -rf */
static inline void rm_rf(const char *path) {
  struct stat sb;
  if (lstat(path, &sb) != 0)
    return;
  if (S_ISDIR(sb.st_mode)) {
    chmod(path, 0755);
    DIR *d = opendir(path);
    struct dirent *de;
    while (d && (de = readdir(d))) {
      if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
        continue;
      char sub[4096];
      if (snprintf(sub, sizeof sub, "%s/%s", path, de->d_name) < (int)sizeof sub)
        rm_rf(sub);
    }
    if (d)
      closedir(d);
    rmdir(path);
  } else {
    unlink(path);
  }
}

/* A fresh directory under $TMPDIR; the caller removes it with rm_rf. */
static inline char *scratch_dir(const char *tag) {
  const char *base = getenv("TMPDIR");
  char tmpl[512];
  snprintf(tmpl, sizeof tmpl, "%s/argus-%s-XXXXXX", base && *base ? base : "/tmp", tag);
  char *d = mkdtemp(tmpl);
  if (!d) {
    perror("mkdtemp");
    exit(2);
  }
  return strdup(d);
}

/* xorshift64* */
static inline uint64_t rng_next(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 2685821657736338717ull;
}

/* Random bytes (incompressible). */
static inline void fill_random(unsigned char *p, size_t n, uint64_t seed) {
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < n; i++)
    p[i] = (unsigned char)(rng_next(&s) >> 56);
}

/* Trace-like records: increasing timestamps, few distinct ids (compressible). */
static inline void fill_trace(unsigned char *p, size_t n, uint64_t seed) {
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 7, t = 1000;
  size_t i = 0;
  while (i < n) {
    t += 20 + (rng_next(&s) >> 60);
    char rec[64];
    int k = snprintf(rec, sizeof rec, "%llu,%u,%u,mainloop\n", (unsigned long long)t,
                     (unsigned)(rng_next(&s) >> 61), (unsigned)(seed & 7));
    for (int j = 0; j < k && i < n; j++)
      p[i++] = (unsigned char)rec[j];
  }
}

#endif
