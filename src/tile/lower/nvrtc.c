/*
 * nvrtc.c — lowered CUDA C → PTX through NVRTC, in this process, with a
 * content-addressed cache (docs/lower.md, "PTX").
 *
 * The key is the SHA-256 of everything the compilation reads: NVRTC's
 * version, the options, Argus's region.cuh (the only header the lowered
 * source includes) and the source. An entry is <key>.ptx under
 * <$ARGUS_CACHE_DIR or $XDG_CACHE_HOME/argus or ~/.cache/argus>/nvrtc,
 * written atomically; ARGUS_PTX_CACHE=0 turns the cache off, as for the PTX
 * of specs. A cache that cannot be used only costs the compilation.
 * Load: one NVRTC compilation per distinct source (about a second for the
 * examples), a hash and a file read when cached.
 */
#include "argus/tile_lower.h"

#include <stdlib.h>
#include <string.h>

#ifndef ARGUS_INCLUDE_DIR
#define ARGUS_INCLUDE_DIR "include"
#endif

char *ag__tile_cache_dir(const char *sub) {
  const char *off = getenv("ARGUS_PTX_CACHE");
  if (off && (!strcmp(off, "0") || !strcmp(off, "off") || !strcmp(off, "no")))
    return NULL;
  const char *d = getenv("ARGUS_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
  ag_str p = AG_STR_INIT;
  if (d && *d)
    ag_str_printf(&p, "%s/%s", d, sub);
  else if (x && *x)
    ag_str_printf(&p, "%s/argus/%s", x, sub);
  else if (h && *h)
    ag_str_printf(&p, "%s/.cache/argus/%s", h, sub);
  else
    return NULL;
  if (p.oom) {
    ag_str_release(&p);
    return NULL;
  }
  return ag_str_detach(&p);
}

#if ARGUS_HAVE_NVRTC
#include <nvrtc.h>

#define NVRTC_CHECK(call)                                                                    \
  do {                                                                                       \
    nvrtcResult r_ = (call);                                                                 \
    if (r_ != NVRTC_SUCCESS) {                                                               \
      ag_diags_add(d, AG_SEV_ERROR, "nvrtc", 0, 0, NULL, 0, "%s failed: %s", #call,         \
                   nvrtcGetErrorString(r_));                                                 \
      rc = AG_EJIT;                                                                          \
      goto out;                                                                              \
    }                                                                                        \
  } while (0)

int ag_tile_nvrtc_ptx(const char *cuda, size_t len, const char *arch, ag_diags *d,
                      ag_str *ptx, int *cached) {
  if (cached)
    *cached = 0;
  char archopt[64];
  snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", arch ? arch : "sm_90a");
  /* region.cuh: from the source tree this argus was built in, or $ARGUS_INCLUDE_DIR
   * (an argus moved to another machine) */
  const char *inc = getenv("ARGUS_INCLUDE_DIR");
  if (!inc || !*inc)
    inc = ARGUS_INCLUDE_DIR;
  char incopt[1024], hdrpath[1100];
  snprintf(incopt, sizeof incopt, "--include-path=%s", inc);
  snprintf(hdrpath, sizeof hdrpath, "%s/argus/region.cuh", inc);
  const char *opts[] = {archopt, "-DARGUS_MARKERS=1", "-lineinfo", incopt, "-std=c++17",
                        "--diag-suppress=68,177,550"};
  int nopts = (int)(sizeof opts / sizeof opts[0]);
  int rc = 0, major = 0, minor = 0;
  nvrtcProgram prog = NULL;
  char *src = NULL, *dir = NULL, *path = NULL, *hdr = NULL, *log = NULL, *out = NULL;
  size_t hlen = 0;
  char key[65];
  nvrtcVersion(&major, &minor);
  /* the key */
  ag_sha256 h;
  if (ag_sha256_begin(&h))
    return AG_ENOMEM;
  char ver[64];
  snprintf(ver, sizeof ver, "argus-nvrtc-1 %d.%d", major, minor);
  ag_sha256_update(&h, ver, strlen(ver) + 1);
  for (int i = 0; i < nopts; i++)
    ag_sha256_update(&h, opts[i], strlen(opts[i]) + 1);
  if (ag_file_read(hdrpath, &hdr, &hlen) == 0)
    ag_sha256_update(&h, hdr, hlen);
  ag_sha256_update(&h, cuda, len);
  unsigned char digest[32];
  ag_sha256_end(&h, digest, key);
  dir = ag__tile_cache_dir("nvrtc");
  if (dir) {
    ag_str p = AG_STR_INIT;
    ag_str_printf(&p, "%s/%s.ptx", dir, key);
    path = p.oom ? NULL : ag_str_detach(&p);
    ag_str_release(&p);
    char *data = NULL;
    size_t dlen = 0;
    if (path && ag_file_read(path, &data, &dlen) == 0 && dlen > 0) {
      rc = ag_str_append(ptx, data, dlen) ? AG_ENOMEM : 0;
      ag_free(data);
      if (cached && !rc)
        *cached = 1;
      goto out;
    }
    ag_free(data);
  }
  src = ag_strndup(cuda, len);
  if (!src) {
    rc = AG_ENOMEM;
    goto out;
  }
  NVRTC_CHECK(nvrtcCreateProgram(&prog, src, "lowered.cu", 0, NULL, NULL));
  nvrtcResult cr = nvrtcCompileProgram(prog, nopts, opts);
  size_t loglen = 0;
  nvrtcGetProgramLogSize(prog, &loglen);
  if (loglen > 1 && (log = ag_malloc(loglen + 1)) != NULL) {
    nvrtcGetProgramLog(prog, log);
    log[loglen] = 0;
  }
  if (cr != NVRTC_SUCCESS) {
    ag_diags_add(d, AG_SEV_ERROR, "nvrtc", 0, 0, NULL, 0,
                 "NVRTC %d.%d could not compile the lowered kernel (a lowering bug: please "
                 "report it with the .tile file): %s", major, minor, log ? log : "no log");
    rc = AG_EJIT;
    goto out;
  }
  size_t plen = 0;
  NVRTC_CHECK(nvrtcGetPTXSize(prog, &plen));
  out = ag_malloc(plen + 1);
  if (!out) {
    rc = AG_ENOMEM;
    goto out;
  }
  NVRTC_CHECK(nvrtcGetPTX(prog, out));
  plen = strlen(out);
  if (ag_str_append(ptx, out, plen)) {
    rc = AG_ENOMEM;
    goto out;
  }
  if (path && ag_mkdir_p(dir, 0755) == 0)
    (void)ag_file_write_atomic(path, out, plen); /* a failed store only costs the next compile */
out:
  if (prog)
    nvrtcDestroyProgram(&prog);
  ag_free(src);
  ag_free(dir);
  ag_free(path);
  ag_free(hdr);
  ag_free(log);
  ag_free(out);
  return rc;
}
#else
int ag_tile_nvrtc_ptx(const char *cuda, size_t len, const char *arch, ag_diags *d,
                      ag_str *ptx, int *cached) {
  (void)cuda;
  (void)len;
  (void)arch;
  (void)ptx;
  if (cached)
    *cached = 0;
  ag_diags_add(d, AG_SEV_ERROR, NULL, 0, 0, NULL, 0,
               "this argus was built without NVRTC (no CUDA toolkit at configure time); write "
               "the CUDA C with -o FILE.cu and compile it with nvcc");
  return AG_EUNSUPPORTED;
}
#endif
