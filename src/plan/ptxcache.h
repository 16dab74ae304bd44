/*
 * ptxcache.h — the PTX cache of ag_spec_compile_ptx (ptxcache.c; internal to
 * argus_plan).
 */
#ifndef ARGUS_PTXCACHE_H
#define ARGUS_PTXCACHE_H

#include "argus/core.h"

/* The cache directory (<$ARGUS_CACHE_DIR or $XDG_CACHE_HOME/argus or
 * ~/.cache/argus>/ptx), owned; NULL when caching is off (ARGUS_PTX_CACHE=0)
 * or there is no home. */
char *ag__ptxc_dir(void);
/* The entry's key: nvcc (real path, size, mtime), the source's real path,
 * the working directory, every argument (NULL-terminated) and NVCC_CCBIN.
 * AG_EUNSUPPORTED: the compile is not cacheable (-optf, -Xcompiler, or
 * NVCC_PREPEND_FLAGS / NVCC_APPEND_FLAGS / CPATH / C(PLUS)_INCLUDE_PATH set). */
int ag__ptxc_key(const char *nvcc, const char *cu, const char *const *args, char key[65]);
/* 1 and the PTX appended to *ptx when the entry exists, every file it
 * lists is unchanged and the stored PTX is intact; 0 otherwise. */
int ag__ptxc_lookup(const char *dir, const char key[65], ag_str *ptx);
/* Stores the PTX under key with the files listed in nvcc's dependency
 * output `depfile` and the directories a header search could use first
 * (the source's, the include options in args, the dependencies', and the
 * include's subdirectories in each). started_ns: when nvcc started
 * (CLOCK_REALTIME, ns); a dependency or watched directory changed since
 * then stores nothing.
 * Errors only mean nothing was stored. */
int ag__ptxc_store(const char *dir, const char key[65], const char *cu,
                   const char *const *args, long long started_ns, const char *depfile,
                   const char *ptx, size_t len);

#endif
