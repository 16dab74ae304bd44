/*
 * evwrite.h — writes a reference-trace evidence file (include/argus/evidence.h,
 * docs/evidence.md). libc only: the host runtime uses it on the GPU machine,
 * and tests use it to make evidence files whose content they know.
 *
 * Usage: ag_evw_open; one ag_evw_launch per recorded launch, in order (each
 * gives the launch's warp metadata and its full record area, warps * cap
 * records; the writer keeps min(count, cap) records per warp); then
 * ag_evw_close with the header fields. The file appears atomically (temp
 * file + rename) only when ag_evw_close succeeds.
 */
#ifndef ARGUS_COLLECT_EVWRITE_H
#define ARGUS_COLLECT_EVWRITE_H

#include <stddef.h>
#include <stdint.h>

#include "argus/evidence.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A growable text buffer for JSON made by hand (libc only). */
typedef struct ag_jb {
  char *p;
  size_t len, cap;
  int oom;
} ag_jb;
void ag_jb_puts(ag_jb *b, const char *s);
void ag_jb_printf(ag_jb *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void ag_jb_str(ag_jb *b, const char *s); /* JSON string literal; NULL -> null */
void ag_jb_release(ag_jb *b);

/* Formats a message into err (n bytes; nothing when err is NULL or n 0):
 * the collectors' err/errlen convention. */
void ag__seterr(char *err, size_t n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

typedef struct ag_evw_launch {
  uint32_t launch;          /* launch index */
  const char *kernel;
  unsigned grid[3], block[3];
  unsigned shared_bytes;
  uint32_t warps;           /* slots: ctas * warps_per_cta */
  uint32_t warps_per_cta;
  uint32_t cap;             /* records a warp keeps */
  uint32_t stride;          /* records between warps' first records (>= cap) */
  const ag_ev_meta *meta;   /* warps entries */
  const ag_ev_record *records; /* warps * stride entries */
  /* the function as the driver reports it (written when have_attrs), and
   * the driver's CTAs per SM for this launch (when have_driver_ctas) */
  int have_attrs, registers, static_shared_bytes;
  int have_driver_ctas, driver_ctas_per_sm;
} ag_evw_launch;

typedef struct ag_evw ag_evw;

/* Starts the file `path` (a temp file beside it until close). err gets a
 * message on failure. */
int ag_evw_open(const char *path, ag_evw **out, char *err, size_t errlen);
/* Appends one recorded launch's data. */
int ag_evw_launch_add(ag_evw *w, const ag_evw_launch *l, char *err, size_t errlen);
/* Finishes: `header_fields` is the inside of the header's JSON object
 * without braces ("\"device\":{...},\"clock\":{...}"); the writer adds
 * format, version, probe and the launches array. Renames into place. */
int ag_evw_close(ag_evw *w, const char *header_fields, uint32_t launches_total,
                 char *err, size_t errlen);
/* Drops the temp file. */
void ag_evw_abort(ag_evw *w);

#ifdef __cplusplus
}
#endif
#endif
