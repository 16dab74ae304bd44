/*
 * evwrite.c — the evidence-file writer: streams each recorded launch's warp
 * metadata and compacted records into a temp file, appends the JSON header,
 * fills in the fixed header (lengths, FNV-1a checksum), fsyncs and renames.
 * A crash or an error leaves no file at the final path, never a partial one.
 *
 * libc only (it is part of libargus_host). Called once per harness run; the
 * data rate is the disk's (records are written in one pass).
 */
#include "evwrite.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------- JSON text */

static void jb_reserve(ag_jb *b, size_t extra) {
  if (b->oom || b->len + extra + 1 <= b->cap)
    return;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1)
    cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p) {
    b->oom = 1;
    return;
  }
  b->p = p;
  b->cap = cap;
}

void ag_jb_puts(ag_jb *b, const char *s) {
  size_t n = strlen(s);
  jb_reserve(b, n);
  if (b->oom)
    return;
  memcpy(b->p + b->len, s, n + 1);
  b->len += n;
}

void ag_jb_printf(ag_jb *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->oom = 1;
    return;
  }
  jb_reserve(b, (size_t)n);
  if (b->oom)
    return;
  va_start(ap, fmt);
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

void ag_jb_str(ag_jb *b, const char *s) {
  if (!s) {
    ag_jb_puts(b, "null");
    return;
  }
  ag_jb_puts(b, "\"");
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
    case '"': ag_jb_puts(b, "\\\""); break;
    case '\\': ag_jb_puts(b, "\\\\"); break;
    case '\n': ag_jb_puts(b, "\\n"); break;
    case '\r': ag_jb_puts(b, "\\r"); break;
    case '\t': ag_jb_puts(b, "\\t"); break;
    default:
      if (*p < 0x20) {
        ag_jb_printf(b, "\\u%04x", *p);
      } else {
        char c[2] = {(char)*p, 0};
        ag_jb_puts(b, c);
      }
    }
  }
  ag_jb_puts(b, "\"");
}

void ag_jb_release(ag_jb *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

/* ---------------------------------------------------------------- writer */

struct ag_evw {
  char *path, *tmp;
  int fd;
  uint64_t off;      /* bytes of data written */
  uint64_t checksum; /* over the data so far */
  ag_jb launches;    /* the "launches" array's elements */
  int nlaunches;
  uint32_t cap_max;
};

void ag__seterr(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || !errlen)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

static int write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t w = write(fd, c, n);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

static int put(ag_evw *w, const void *p, size_t n, char *err, size_t errlen) {
  if (write_all(w->fd, p, n)) {
    ag__seterr(err, errlen, "cannot write '%s': %s", w->tmp, strerror(errno));
    return -997; /* AG_EIO */
  }
  w->checksum = ag_ev_fnv(w->checksum, p, n);
  w->off += n;
  return 0;
}

int ag_evw_open(const char *path, ag_evw **out, char *err, size_t errlen) {
  *out = NULL;
  ag_evw *w = calloc(1, sizeof *w);
  if (!w)
    return -999;
  size_t n = strlen(path);
  w->path = malloc(n + 1);
  w->tmp = malloc(n + 32);
  if (!w->path || !w->tmp) {
    free(w->path);
    free(w->tmp);
    free(w);
    return -999;
  }
  memcpy(w->path, path, n + 1);
  snprintf(w->tmp, n + 32, "%s.tmp.%ld", path, (long)getpid());
  w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (w->fd < 0) {
    ag__seterr(err, errlen, "cannot create '%s': %s", w->tmp, strerror(errno));
    free(w->path);
    free(w->tmp);
    free(w);
    return -997;
  }
  w->checksum = AG_EV_FNV_INIT;
  ag_ev_file_header zero;
  memset(&zero, 0, sizeof zero);
  if (write_all(w->fd, &zero, sizeof zero)) { /* filled in by close */
    ag__seterr(err, errlen, "cannot write '%s': %s", w->tmp, strerror(errno));
    ag_evw_abort(w);
    return -997;
  }
  *out = w;
  return 0;
}

int ag_evw_launch_add(ag_evw *w, const ag_evw_launch *l, char *err, size_t errlen) {
  uint64_t meta_off = w->off;
  int rc = put(w, l->meta, (size_t)l->warps * AG_EV_META_BYTES, err, errlen);
  if (rc)
    return rc;
  uint64_t rec_off = w->off, nrec = 0, dropped = 0;
  uint32_t exited = 0, divergent = 0;
  for (uint32_t s = 0; s < l->warps; s++) {
    const ag_ev_meta *m = &l->meta[s];
    uint32_t keep = m->count < l->cap ? m->count : l->cap;
    if (m->flags & AG_EV_EXITED)
      exited++;
    else
      keep = 0; /* no count we can trust: the warp never reached an exit */
    if (m->count > l->cap)
      dropped += m->count - l->cap;
    if (m->max_count > m->count)
      divergent++;
    if (keep) {
      rc = put(w, l->records + (size_t)s * l->stride, (size_t)keep * AG_EV_RECORD_BYTES,
               err, errlen);
      if (rc)
        return rc;
    }
    nrec += keep;
  }
  ag_jb *b = &w->launches;
  if (w->nlaunches++)
    ag_jb_puts(b, ",");
  ag_jb_printf(b, "{\"launch\":%u,\"kernel\":", l->launch);
  ag_jb_str(b, l->kernel);
  ag_jb_printf(b,
               ",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"shared_bytes\":%u,"
               "\"warps\":%u,\"warps_per_cta\":%u,\"records_per_warp\":%u,"
               "\"meta_offset\":%llu,\"records_offset\":%llu,\"records\":%llu,"
               "\"dropped\":%llu,\"warps_exited\":%u,\"warps_divergent\":%u",
               l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2],
               l->shared_bytes, l->warps, l->warps_per_cta, l->cap,
               (unsigned long long)meta_off, (unsigned long long)rec_off,
               (unsigned long long)nrec, (unsigned long long)dropped, exited, divergent);
  if (l->have_attrs)
    ag_jb_printf(b, ",\"registers\":%d,\"static_shared_bytes\":%d", l->registers,
                 l->static_shared_bytes);
  if (l->have_driver_ctas)
    ag_jb_printf(b, ",\"ctas_per_sm_driver\":%d", l->driver_ctas_per_sm);
  ag_jb_puts(b, "}");
  if (b->oom) {
    ag__seterr(err, errlen, "out of memory");
    return -999;
  }
  return 0;
}

int ag_evw_close(ag_evw *w, const char *header_fields, uint32_t launches_total,
                 char *err, size_t errlen) {
  ag_jb j = {0};
  ag_jb_printf(&j, "{\"format\":\"argus-evidence\",\"version\":%u,\"kind\":\"trace\","
                   "\"probe\":{\"record_bytes\":%u,\"meta_bytes\":%u},",
               AG_EV_VERSION, AG_EV_RECORD_BYTES, AG_EV_META_BYTES);
  if (header_fields && *header_fields) {
    ag_jb_puts(&j, header_fields);
    ag_jb_puts(&j, ",");
  }
  ag_jb_printf(&j, "\"launches_total\":%u,\"launches_recorded\":%d,\"launches\":[",
               launches_total, w->nlaunches);
  ag_jb_puts(&j, w->launches.p ? w->launches.p : "");
  ag_jb_puts(&j, "]}\n");
  int rc = 0;
  if (j.oom || w->launches.oom) {
    ag__seterr(err, errlen, "out of memory");
    rc = -999;
    goto fail;
  }
  if (j.len > 0xffffffffu) {
    ag__seterr(err, errlen, "evidence header too large");
    rc = -998;
    goto fail;
  }
  uint64_t data_len = w->off;
  if ((rc = put(w, j.p, j.len, err, errlen)))
    goto fail;
  ag_ev_file_header h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, AG_EV_MAGIC, 8);
  h.version = AG_EV_VERSION;
  h.header_len = (uint32_t)j.len;
  h.data_len = data_len;
  h.checksum = w->checksum;
  if (pwrite(w->fd, &h, sizeof h, 0) != (ssize_t)sizeof h || fsync(w->fd)) {
    ag__seterr(err, errlen, "cannot write '%s': %s", w->tmp, strerror(errno));
    rc = -997;
    goto fail;
  }
  close(w->fd);
  w->fd = -1;
  if (rename(w->tmp, w->path)) {
    ag__seterr(err, errlen, "cannot rename '%s' to '%s': %s", w->tmp, w->path, strerror(errno));
    rc = -997;
    goto fail;
  }
  ag_jb_release(&j);
  ag_jb_release(&w->launches);
  free(w->path);
  free(w->tmp);
  free(w);
  return 0;
fail:
  ag_jb_release(&j);
  ag_evw_abort(w);
  return rc;
}

void ag_evw_abort(ag_evw *w) {
  if (!w)
    return;
  if (w->fd >= 0)
    close(w->fd);
  unlink(w->tmp);
  ag_jb_release(&w->launches);
  free(w->path);
  free(w->tmp);
  free(w);
}
