/*
 * blob.c — the content-addressed blob store and artifact records.
 *
 * A put streams its input once: SHA-256 over the content, zstd over the
 * first 1 MiB to decide whether compression pays (it must save at least
 * 1/32), then either compressed or raw output into a sink that stays in
 * memory up to AG__INLINE_MAX stored bytes (the blob then lives in the
 * database row) and otherwise spills to a temp file in tmp/, which is
 * fsynced and renamed to objects/ab/cdef… before the row is committed.
 * Blob writers hold the workspace lock shared, so gc (exclusive) never sees
 * a file whose row is about to be committed.
 *
 * A put of content that has a record already reads the stored blob back
 * through the same verification, and when it is missing or damaged the new
 * copy replaces it (renamed over the file, or rewritten in the row): a
 * re-put repairs. Every file-system call of a blob write goes through
 * ag__io (store_test.h), so the power-loss test can order and drop them.
 *
 * A get streams the stored bytes back through zstd and SHA-256 and hands
 * nothing to the caller unless size and hash match; damage it finds is
 * remembered (ag__mark_damaged) for ag_store_health. Memory use is bounded
 * by two chunks (1 MiB each) plus, for ag_store_get, the content itself.
 * Load: 10^4 small puts take a few seconds (one fsync'd commit each); large
 * blobs run at the speed of SHA-256 + zstd (see bench/RESULTS.md).
 */
#include "store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#define ZLEVEL 1 /* on trace-like evidence: faster and smaller than 3 (docs/workspace.md) */

const char *ag_store_zstd_version(void) { return ZSTD_versionString(); }

/* ------------------------------------------------------------- writer */
typedef struct bw {
  ag_store *st;
  ag_sha256 sha;
  int sha_live;
  ZSTD_CCtx *cctx;
  int mode; /* 0 undecided, 1 raw, 2 zstd */
  long long pledged; /* content size if known, else -1 */
  uint64_t size;     /* content bytes seen */
  uint64_t stored;   /* bytes written to the sink */
  unsigned char *mem; /* sink while small */
  size_t mlen, mcap;
  int fd; /* sink once spilled to tmp/ */
  char *tmp_path;
  unsigned char *zout;
  size_t zcap;
} bw;

static int sink_write(bw *w, const void *p, size_t n) {
  if (!n)
    return 0;
  if (w->fd < 0 && w->mlen + n <= AG__INLINE_MAX) {
    if (w->mlen + n > w->mcap) {
      size_t cap = w->mcap ? w->mcap : 256;
      while (cap < w->mlen + n)
        cap *= 2;
      unsigned char *m = ag_realloc(w->mem, cap);
      if (!m)
        return ag__fail(AG_ENOMEM, "out of memory buffering a blob");
      w->mem = m;
      w->mcap = cap;
    }
    memcpy(w->mem + w->mlen, p, n);
    w->mlen += n;
    w->stored += n;
    return 0;
  }
  if (w->fd < 0) { /* spill to a temp file in the workspace */
    ag_str t = AG_STR_INIT;
    ag_str_printf(&t, "%s/put-%ld-XXXXXX", w->st->tmp, (long)getpid());
    if (t.oom) {
      ag_str_release(&t);
      return ag__fail(AG_ENOMEM, "out of memory naming a temp file");
    }
    w->tmp_path = ag_str_detach(&t);
    if (!w->tmp_path)
      return ag__fail(AG_ENOMEM, "out of memory naming a temp file");
    ag__io->mkdir(w->st->tmp, 0755); /* recreated if someone removed it */
    w->fd = ag__io->mkstemp(w->tmp_path);
    if (w->fd < 0) {
      int e = errno;
      ag_free(w->tmp_path);
      w->tmp_path = NULL;
      return ag__fail(AG_EIO, "cannot create a temp file in '%s': %s", w->st->tmp, strerror(e));
    }
    const unsigned char *q = w->mem;
    size_t left = w->mlen;
    w->mlen = 0;
    w->stored -= left;
    int rc = sink_write(w, q, left);
    if (rc)
      return rc;
  }
  const unsigned char *q = p;
  size_t left = n;
  while (left) {
    ssize_t k = ag__io->write(w->fd, q, left);
    if (k < 0) {
      if (errno == EINTR)
        continue;
      return ag__fail(AG_EIO, "cannot write temp file '%s': %s", w->tmp_path, strerror(errno));
    }
    q += k;
    left -= (size_t)k;
  }
  w->stored += n;
  return 0;
}

/* Forgets what was written (back to an empty in-memory sink). */
static void sink_reset(bw *w) {
  w->mlen = 0;
  w->stored = 0;
  if (w->fd >= 0) {
    ag__io->close(w->fd);
    w->fd = -1;
    unlink(w->tmp_path);
    ag_free(w->tmp_path);
    w->tmp_path = NULL;
  }
}

static int zfeed(bw *w, const void *p, size_t n, ZSTD_EndDirective op) {
  ZSTD_inBuffer in = {p, n, 0};
  for (;;) {
    ZSTD_outBuffer out = {w->zout, w->zcap, 0};
    size_t r = ZSTD_compressStream2(w->cctx, &out, &in, op);
    if (ZSTD_isError(r)) {
      if (ZSTD_getErrorCode(r) == ZSTD_error_srcSize_wrong)
        return ag__fail(AG_EIO, "the input changed size while it was being stored");
      return ag__fail(ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation ? AG_ENOMEM : AG_EIO,
                      "zstd: %s", ZSTD_getErrorName(r));
    }
    int rc = sink_write(w, w->zout, out.pos);
    if (rc)
      return rc;
    if (op == ZSTD_e_continue ? in.pos == in.size : r == 0)
      return 0;
  }
}

/* Feeds the next piece of content; last = no more after this one. */
static int bw_feed(bw *w, const void *p, size_t n, int last) {
  int rc;
  if (n && (rc = ag_sha256_update(&w->sha, p, n)))
    return ag__fail(rc, "sha-256 failed");
  w->size += n;
  if (w->mode == 1)
    return sink_write(w, p, n);
  if (w->mode == 2)
    return zfeed(w, p, n, last ? ZSTD_e_end : ZSTD_e_continue);
  /* the first piece decides */
  if (n < 64 && last) {
    w->mode = 1;
    return sink_write(w, p, n);
  }
  w->zcap = ZSTD_compressBound(n < 65536 ? n : 65536) + 64;
  w->zout = ag_malloc(w->zcap);
  w->cctx = ZSTD_createCCtx();
  if (!w->zout || !w->cctx)
    return ag__fail(AG_ENOMEM, "out of memory starting compression");
  ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, ZLEVEL);
  if (w->pledged >= 0)
    ZSTD_CCtx_setPledgedSrcSize(w->cctx, (unsigned long long)w->pledged);
  if ((rc = zfeed(w, p, n, last ? ZSTD_e_end : ZSTD_e_flush)))
    return rc;
  if (w->stored <= n - n / 32) {
    w->mode = 2;
    return 0;
  }
  w->mode = 1; /* compression does not pay: store raw */
  ZSTD_freeCCtx(w->cctx);
  w->cctx = NULL;
  sink_reset(w);
  return sink_write(w, p, n);
}

static void bw_release(bw *w) {
  if (w->sha_live)
    ag_sha256_abort(&w->sha);
  ZSTD_freeCCtx(w->cctx);
  ag_free(w->mem);
  ag_free(w->zout);
  if (w->fd >= 0)
    ag__io->close(w->fd);
  if (w->tmp_path) {
    unlink(w->tmp_path);
    ag_free(w->tmp_path);
  }
}

/* ------------------------------------------------------------- commit */
typedef struct put_ctx {
  const char *hash;
  const char *kind;
  int64_t task_id;
  uint64_t size, stored;
  int codec;
  const void *data; /* inline bytes, or NULL */
  size_t dlen;
  int exists; /* out of exists_body */
  int repair; /* the existing record's blob failed verification: replace it */
} put_ctx;

static int exists_body(ag_store *st, void *vc) {
  put_ctx *c = vc;
  int rc = ag__artifact_exists(st, c->hash);
  if (rc < 0)
    return rc;
  c->exists = rc;
  return 0;
}

static int task_exists(ag_store *st, int64_t id) {
  int rc = ag__record_exists(st, AG_OBJ_TASK, id);
  if (rc == 0)
    return ag__fail(AG_ENOTFOUND, "task t%lld does not exist", (long long)id);
  return rc < 0 ? rc : 0;
}

static int insert_body(ag_store *st, void *vc) {
  put_ctx *c = vc;
  int rc;
  if (c->task_id && (rc = task_exists(st, c->task_id)))
    return rc;
  sqlite3_stmt *s;
  static const char sql[] =
      "INSERT INTO artifacts(hash, kind, size, stored_size, codec, task_id, created_ns, "
      "last_put_ns, data) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8) "
      "ON CONFLICT(hash) DO UPDATE SET last_put_ns = excluded.last_put_ns, "
      "task_id = IFNULL(task_id, excluded.task_id)";
  /* a repair also replaces how the content is stored */
  static const char repair_sql[] =
      "INSERT INTO artifacts(hash, kind, size, stored_size, codec, task_id, created_ns, "
      "last_put_ns, data) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8) "
      "ON CONFLICT(hash) DO UPDATE SET last_put_ns = excluded.last_put_ns, "
      "task_id = IFNULL(task_id, excluded.task_id), size = excluded.size, "
      "stored_size = excluded.stored_size, codec = excluded.codec, data = excluded.data";
  if ((rc = ag__stmt(st, c->repair ? repair_sql : sql, &s)) || (rc = ag__bind_text(st, s, 1, c->hash)) ||
      (rc = ag__bind_text(st, s, 2, c->kind)) || (rc = ag__bind_i64(st, s, 3, (int64_t)c->size)) ||
      (rc = ag__bind_i64(st, s, 4, (int64_t)c->stored)) ||
      (rc = ag__bind_i64(st, s, 5, c->codec)) || (rc = ag__bind_id(st, s, 6, c->task_id)) ||
      (rc = ag__bind_i64(st, s, 7, (int64_t)ag_wall_time_ns())))
    return rc;
  if (c->data)
    rc = AG__SQL(st, sqlite3_bind_blob64(s, 8, c->dlen ? c->data : "", c->dlen, SQLITE_STATIC));
  else
    rc = AG__SQL(st, sqlite3_bind_null(s, 8));
  if (rc < 0)
    return rc;
  rc = AG__SQL(st, sqlite3_step(s));
  sqlite3_reset(s); /* drop the reference to c->data */
  return rc < 0 ? rc : 0;
}

/* Moves the finished temp file to objects/ab/cdef…, durably. */
static int publish_file(ag_store *st, bw *w, const char *hash) {
  if (ag__io->fsync(w->fd) != 0)
    return ag__fail(AG_EIO, "cannot sync temp file '%s': %s", w->tmp_path, strerror(errno));
  fchmod(w->fd, 0444); /* blobs are immutable */
  ag__io->close(w->fd);
  w->fd = -1;
  char *path = ag__object_path(st, hash);
  if (!path)
    return ag__fail(AG_ENOMEM, "out of memory naming a blob");
  int rc = 0;
  char *slash = strrchr(path, '/');
  *slash = 0;
  int made = ag__io->mkdir(path, 0755) == 0;
  if (!made && errno == ENOENT) { /* objects/ itself was removed */
    ag__io->mkdir(st->objects, 0755);
    made = ag__io->mkdir(path, 0755) == 0;
  }
  if (made) {
    if ((rc = ag__fsync_dir(st->objects)))
      goto out;
  } else if (errno != EEXIST) {
    rc = ag__fail(AG_EIO, "cannot create directory '%s': %s", path, strerror(errno));
    goto out;
  }
  *slash = '/';
  if (ag__io->rename(w->tmp_path, path) != 0) {
    rc = ag__fail(AG_EIO, "cannot move '%s' to '%s': %s", w->tmp_path, path, strerror(errno));
    goto out;
  }
  ag_free(w->tmp_path);
  w->tmp_path = NULL;
  *slash = 0;
  rc = ag__fsync_dir(path);
out:
  ag_free(path);
  return rc;
}

static int blob_sound(ag_store *st, const char *hash);

/* The source of a put: memory or a descriptor. */
typedef struct put_src {
  const unsigned char *data;
  size_t len;
  int fd; /* >= 0: read from here */
  const char *name; /* for messages */
} put_src;

static int put_common(ag_store *st, const put_src *src, const ag_put_opts *opts,
                      char hash_out[65]) {
  hash_out[0] = 0;
  const char *kind = opts && opts->kind ? opts->kind : "blob";
  int64_t task_id = opts ? opts->task_id : 0;
  if (!ag__kind_valid(kind))
    return ag__fail(AG_EINVAL,
                    "invalid artifact kind '%s': use 1 to %d of a-z 0-9 _ - . (e.g. 'ptx')", kind,
                    AG_STORE_KIND_MAX);
  if (task_id < 0)
    return ag__fail(AG_EINVAL, "invalid producing task id %lld", (long long)task_id);
  int lockfd = -1;
  int rc = ag__lock(st, 0, 0, &lockfd);
  if (rc)
    return rc;
  bw w;
  memset(&w, 0, sizeof w);
  w.st = st;
  w.fd = -1;
  w.pledged = -1;
  unsigned char *buf = NULL;
  char hex[65];
  if ((rc = ag_sha256_begin(&w.sha))) {
    rc = ag__fail(rc, "cannot start sha-256");
    goto out;
  }
  w.sha_live = 1;
  if (src->fd < 0) {
    w.pledged = (long long)src->len;
    size_t off = 0;
    do {
      size_t n = src->len - off < AG__CHUNK ? src->len - off : AG__CHUNK;
      if ((rc = bw_feed(&w, src->data + off, n, off + n == src->len)))
        goto out;
      off += n;
    } while (off < src->len);
  } else {
    struct stat sb;
    if (fstat(src->fd, &sb) == 0 && S_ISREG(sb.st_mode))
      w.pledged = (long long)sb.st_size;
    buf = ag_malloc(AG__CHUNK);
    if (!buf) {
      rc = ag__fail(AG_ENOMEM, "out of memory reading '%s'", src->name);
      goto out;
    }
    for (;;) {
      size_t got = 0;
      int eof = 0;
      while (got < AG__CHUNK) {
        ssize_t k = read(src->fd, buf + got, AG__CHUNK - got);
        if (k < 0 && errno == EINTR)
          continue;
        if (k < 0) {
          rc = ag__fail(AG_EIO, "cannot read '%s': %s", src->name, strerror(errno));
          goto out;
        }
        if (k == 0) {
          eof = 1;
          break;
        }
        got += (size_t)k;
      }
      if ((rc = bw_feed(&w, buf, got, eof)))
        goto out;
      if (eof)
        break;
    }
  }
  w.sha_live = 0;
  if ((rc = ag_sha256_end(&w.sha, NULL, hex))) {
    rc = ag__fail(rc, "sha-256 failed");
    goto out;
  }
  put_ctx c = {hex, kind, task_id, w.size, w.stored, w.mode == 2, NULL, 0, 0, 0};
  if ((rc = ag__txn(st, AG__READ, exists_body, &c)))
    goto out;
  /* content that is stored already: a put of it repairs a blob that went
   * missing or fails verification (the new copy replaces it atomically) */
  if (c.exists && (rc = blob_sound(st, hex)) != 0) {
    if (rc != AG_ECORRUPT)
      goto out;
    c.repair = 1;
    rc = 0;
  }
  if (w.fd >= 0) {
    if ((!c.exists || c.repair) && (rc = publish_file(st, &w, hex)))
      goto out;
  } else {
    c.data = w.mem ? (const void *)w.mem : (const void *)""; /* non-NULL: inline */
    c.dlen = w.mlen;
  }
  if ((rc = ag__txn(st, AG__WRITE, insert_body, &c)))
    goto out;
  memcpy(hash_out, hex, 65);
out:
  bw_release(&w);
  ag_free(buf);
  ag__unlock(lockfd);
  return rc;
}

int ag_store_put(ag_store *st, const void *data, size_t len, const ag_put_opts *opts,
                 char hash_out[65]) {
  if (!data && len)
    return ag__fail(AG_EINVAL, "no data to store");
  put_src s = {data, len, -1, "memory"};
  return put_common(st, &s, opts, hash_out);
}

int ag_store_put_fd(ag_store *st, int fd, const ag_put_opts *opts, char hash_out[65]) {
  put_src s = {NULL, 0, fd, "input"};
  return put_common(st, &s, opts, hash_out);
}

int ag_store_put_file(ag_store *st, const char *path, const ag_put_opts *opts,
                      char hash_out[65]) {
  hash_out[0] = 0;
  if (!strcmp(path, "-")) {
    put_src s = {NULL, 0, 0, "standard input"};
    return put_common(st, &s, opts, hash_out);
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return ag__fail(errno == ENOENT ? AG_ENOTFOUND : AG_EIO, "cannot open '%s': %s", path,
                    strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode)) {
    close(fd);
    return ag__fail(AG_EINVAL, "'%s' is a directory, not a file", path);
  }
  put_src s = {NULL, 0, fd, path};
  int rc = put_common(st, &s, opts, hash_out);
  close(fd);
  return rc;
}

/* -------------------------------------------------------------- reader */
static int corrupt(const char *hash, const char *what) {
  return ag__fail(AG_ECORRUPT, "artifact %s is corrupted: %s; run 'argus ws check'", hash, what);
}

typedef struct rd {
  ag_sha256 sha;
  ZSTD_DCtx *d;
  unsigned char *zbuf;
  size_t zcap;
  uint64_t total, size;
  size_t last_r; /* zstd: 0 when a frame just ended */
  const char *hash;
  ag__sink_fn sink;
  void *ctx;
} rd;

static int rd_piece(rd *r, const void *p, size_t n) {
  if (!r->d) {
    r->total += n;
    if (r->total > r->size)
      return corrupt(r->hash, "content is longer than recorded");
    ag_sha256_update(&r->sha, p, n);
    return r->sink(r->ctx, p, n);
  }
  ZSTD_inBuffer in = {p, n, 0};
  while (in.pos < in.size) {
    ZSTD_outBuffer out = {r->zbuf, r->zcap, 0};
    size_t z = ZSTD_decompressStream(r->d, &out, &in);
    if (ZSTD_isError(z)) {
      if (ZSTD_getErrorCode(z) == ZSTD_error_memory_allocation)
        return ag__fail(AG_ENOMEM, "out of memory decompressing artifact %s", r->hash);
      char what[160];
      snprintf(what, sizeof what, "zstd: %s", ZSTD_getErrorName(z));
      return corrupt(r->hash, what);
    }
    r->last_r = z;
    r->total += out.pos;
    if (r->total > r->size)
      return corrupt(r->hash, "content is longer than recorded");
    if (out.pos) {
      ag_sha256_update(&r->sha, r->zbuf, out.pos);
      int rc = r->sink(r->ctx, r->zbuf, out.pos);
      if (rc)
        return rc;
    }
  }
  return 0;
}

int ag__blob_read(ag_store *st, const char *hash, uint64_t size, uint64_t stored_size, int codec,
                  const void *inline_data, int is_inline, ag__sink_fn sink, void *ctx) {
  rd r;
  memset(&r, 0, sizeof r);
  r.size = size;
  r.hash = hash;
  r.sink = sink;
  r.ctx = ctx;
  r.last_r = 1;
  int rc = ag_sha256_begin(&r.sha);
  if (rc)
    return ag__fail(rc, "cannot start sha-256");
  int fd = -1;
  unsigned char *buf = NULL;
  char *path = NULL;
  if (codec) {
    r.d = ZSTD_createDCtx();
    r.zcap = ZSTD_DStreamOutSize();
    if (size + 1 < r.zcap)
      r.zcap = (size_t)size + 1;
    r.zbuf = ag_malloc(r.zcap);
    if (!r.d || !r.zbuf) {
      rc = ag__fail(AG_ENOMEM, "out of memory reading artifact %s", hash);
      goto out;
    }
  }
  if (is_inline) {
    if ((rc = rd_piece(&r, inline_data, (size_t)stored_size)))
      goto out;
  } else {
    if (!(path = ag__object_path(st, hash))) {
      rc = ag__fail(AG_ENOMEM, "out of memory naming a blob");
      goto out;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      rc = errno == ENOENT ? ag__fail(AG_ECORRUPT,
                                      "artifact %s is corrupted: its blob file '%s' is missing; "
                                      "run 'argus ws check'", hash, path)
                           : ag__fail(AG_EIO, "cannot open '%s': %s", path, strerror(errno));
      goto out;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || (uint64_t)sb.st_size != stored_size) {
      char what[200];
      snprintf(what, sizeof what, "blob file '%s' has %lld bytes, expected %llu", path,
               (long long)sb.st_size, (unsigned long long)stored_size);
      rc = corrupt(hash, what);
      goto out;
    }
    size_t cap = stored_size < AG__CHUNK ? (size_t)stored_size + 1 : AG__CHUNK;
    if (!(buf = ag_malloc(cap))) {
      rc = ag__fail(AG_ENOMEM, "out of memory reading artifact %s", hash);
      goto out;
    }
    for (;;) {
      ssize_t k = read(fd, buf, cap);
      if (k < 0 && errno == EINTR)
        continue;
      if (k < 0) {
        rc = ag__fail(AG_EIO, "cannot read '%s': %s", path, strerror(errno));
        goto out;
      }
      if (k == 0)
        break;
      if ((rc = rd_piece(&r, buf, (size_t)k)))
        goto out;
    }
  }
  if (codec && r.last_r != 0) {
    rc = corrupt(hash, "compressed data ends early");
    goto out;
  }
  if (r.total != size) {
    char what[120];
    snprintf(what, sizeof what, "content has %llu bytes, expected %llu",
             (unsigned long long)r.total, (unsigned long long)size);
    rc = corrupt(hash, what);
    goto out;
  }
  {
    char hex[65];
    rc = ag_sha256_end(&r.sha, NULL, hex);
    r.sha.ctx = NULL;
    if (rc) {
      rc = ag__fail(rc, "sha-256 failed");
      goto out;
    }
    if (strcmp(hex, hash) != 0) {
      char what[160];
      snprintf(what, sizeof what, "content hash is %.16s…, expected %.16s…", hex, hash);
      rc = corrupt(hash, what);
      goto out;
    }
  }
out:
  if (r.sha.ctx)
    ag_sha256_abort(&r.sha);
  ZSTD_freeDCtx(r.d);
  ag_free(r.zbuf);
  ag_free(buf);
  ag_free(path);
  if (fd >= 0)
    close(fd);
  return rc;
}

/* ----------------------------------------------------------------- get */
typedef struct row_ctx {
  const char *hash;
  ag_artifact *a;
  int want_data;
  void *data; /* owned copy of the inline bytes */
  int found;
} row_ctx;

static void fill_artifact(sqlite3_stmt *s, ag_artifact *a) {
  /* columns: hash kind size stored_size codec inline task_id created_ns */
  memset(a, 0, sizeof *a);
  ag__col_copy(s, 0, a->hash, sizeof a->hash);
  ag__col_copy(s, 1, a->kind, sizeof a->kind);
  a->size = (uint64_t)sqlite3_column_int64(s, 2);
  a->stored_size = (uint64_t)sqlite3_column_int64(s, 3);
  a->compressed = sqlite3_column_int(s, 4) == 1;
  a->inline_db = sqlite3_column_int(s, 5);
  a->task_id = sqlite3_column_int64(s, 6);
  a->created_ns = (uint64_t)sqlite3_column_int64(s, 7);
}

#define ART_COLS "hash, kind, size, stored_size, codec, data IS NOT NULL, IFNULL(task_id, 0), created_ns"

static int row_body(ag_store *st, void *vc) {
  row_ctx *c = vc;
  ag_free(c->data);
  c->data = NULL;
  c->found = 0;
  sqlite3_stmt *s;
  static const char sql[] = "SELECT " ART_COLS ", data FROM artifacts WHERE hash = ?";
  int rc = ag__row_text(st, sql, c->hash, &s);
  if (rc <= 0)
    return rc;
  c->found = 1;
  fill_artifact(s, c->a);
  if (c->want_data && c->a->inline_db) {
    const void *b = sqlite3_column_blob(s, 8);
    int n = sqlite3_column_bytes(s, 8);
    if (!b && n > 0)
      return ag__fail(AG_ENOMEM, "out of memory reading artifact %s", c->hash);
    c->data = ag_malloc((size_t)n + 1);
    if (!c->data)
      return ag__fail(AG_ENOMEM, "out of memory reading artifact %s", c->hash);
    if (n)
      memcpy(c->data, b, (size_t)n);
    if ((uint64_t)n != c->a->stored_size) {
      c->a->stored_size = (uint64_t)n; /* let the reader report the damage */
    }
  }
  sqlite3_reset(s);
  return 0;
}

static int check_hash_arg(const char *hash) {
  if (!ag__hash_valid(hash))
    return ag__fail(AG_EINVAL, "'%s' is not an artifact hash (64 lowercase hex digits)",
                    hash ? hash : "(null)");
  return 0;
}

static int load_row(ag_store *st, const char *hash, ag_artifact *a, void **data) {
  row_ctx c = {hash, a, data != NULL, NULL, 0};
  int rc = ag__txn(st, AG__READ, row_body, &c);
  if (!rc && !c.found)
    rc = ag__fail(AG_ENOTFOUND, "artifact %s is not in the workspace", hash);
  if (rc) {
    ag_free(c.data);
    return rc;
  }
  if (data)
    *data = c.data;
  return 0;
}

/* After a read failed on a missing file: did gc remove the artifact meanwhile? */
static int recheck_gone(ag_store *st, const char *hash, int rc) {
  if (rc != AG_ECORRUPT)
    return rc;
  ag_artifact a;
  char saved[1024];
  snprintf(saved, sizeof saved, "%s", ag_store_errmsg());
  int rc2 = load_row(st, hash, &a, NULL);
  if (rc2 == AG_ENOTFOUND)
    return rc2;
  ag__mark_damaged(st, saved); /* until a sound check: commands refuse to write */
  ag__fail(rc, "%s", saved);
  return rc;
}

typedef struct membuf {
  unsigned char *p;
  size_t len, cap;
} membuf;

static int mem_sink(void *ctx, const void *p, size_t n) {
  membuf *m = ctx;
  if (m->len + n > m->cap)
    return ag__fail(AG_ECORRUPT, "content is longer than recorded");
  memcpy(m->p + m->len, p, n);
  m->len += n;
  return 0;
}

/* The record of `hash` and, for a blob kept in the database, its stored bytes. */
static int load_for_read(ag_store *st, const char *hash, ag_artifact *a, void **inl) {
  *inl = NULL;
  int rc = check_hash_arg(hash);
  return rc ? rc : load_row(st, hash, a, inl);
}

static int discard(void *ctx, const void *p, size_t n) { return 0; }

/* 0 when the stored blob of `hash` (which has a record) reads back intact,
 * AG_ECORRUPT when it does not (missing file, wrong size or hash), or
 * another error. Reads every stored byte once. */
static int blob_sound(ag_store *st, const char *hash) {
  ag_artifact a;
  void *inl = NULL;
  int rc = load_row(st, hash, &a, &inl);
  if (rc)
    return rc;
  rc = ag__blob_read(st, hash, a.size, a.stored_size, a.compressed, inl, a.inline_db, discard,
                     NULL);
  ag_free(inl);
  return rc;
}

int ag_store_get(ag_store *st, const char *hash, void **data, size_t *len) {
  *data = NULL;
  *len = 0;
  ag_artifact a;
  void *inl = NULL;
  int rc = load_for_read(st, hash, &a, &inl);
  if (rc)
    return rc;
  if (a.size > (uint64_t)SIZE_MAX - 1) {
    ag_free(inl);
    return ag__fail(AG_ERANGE, "artifact %s is too large for memory", hash);
  }
  membuf m = {ag_malloc((size_t)a.size + 1), 0, (size_t)a.size};
  if (!m.p) {
    ag_free(inl);
    return ag__fail(AG_ENOMEM, "out of memory reading artifact %s (%llu bytes)", hash,
                    (unsigned long long)a.size);
  }
  rc = ag__blob_read(st, hash, a.size, a.stored_size, a.compressed, inl, a.inline_db, mem_sink,
                     &m);
  ag_free(inl);
  if (rc) {
    ag_free(m.p);
    return recheck_gone(st, hash, rc);
  }
  m.p[m.len] = 0;
  *data = m.p;
  *len = m.len;
  return 0;
}

typedef struct fd_sink_ctx {
  int fd;
  const char *path;
} fd_sink_ctx;

static int fd_sink(void *ctx, const void *p, size_t n) {
  fd_sink_ctx *f = ctx;
  const unsigned char *q = p;
  while (n) {
    ssize_t k = write(f->fd, q, n);
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0)
      return ag__fail(AG_EIO, "cannot write '%s': %s", f->path, strerror(errno));
    q += k;
    n -= (size_t)k;
  }
  return 0;
}

int ag_store_get_file(ag_store *st, const char *hash, const char *path) {
  ag_artifact a;
  void *inl = NULL;
  int rc = load_for_read(st, hash, &a, &inl);
  if (rc)
    return rc;
  ag_str t = AG_STR_INIT;
  ag_str_printf(&t, "%s.tmp.XXXXXX", path);
  if (t.oom) {
    ag_free(inl);
    ag_str_release(&t);
    return ag__fail(AG_ENOMEM, "out of memory");
  }
  int fd = mkstemp(t.p);
  if (fd < 0) {
    rc = ag__fail(AG_EIO, "cannot create '%s': %s", t.p, strerror(errno));
    goto out;
  }
  fchmod(fd, 0644);
  fd_sink_ctx f = {fd, t.p};
  rc = ag__blob_read(st, hash, a.size, a.stored_size, a.compressed, inl, a.inline_db, fd_sink, &f);
  if (!rc && fsync(fd) != 0)
    rc = ag__fail(AG_EIO, "cannot sync '%s': %s", t.p, strerror(errno));
  close(fd);
  if (!rc && rename(t.p, path) != 0)
    rc = ag__fail(AG_EIO, "cannot write '%s': %s", path, strerror(errno));
  if (rc)
    unlink(t.p);
out:
  ag_free(inl);
  ag_str_release(&t);
  if (rc)
    rc = recheck_gone(st, hash, rc);
  return rc;
}

int ag_store_artifact(ag_store *st, const char *hash, ag_artifact *out) {
  memset(out, 0, sizeof *out);
  int rc = check_hash_arg(hash);
  if (rc)
    return rc;
  rc = load_row(st, hash, out, NULL);
  if (rc)
    memset(out, 0, sizeof *out);
  return rc;
}

/* --------------------------------------------------------------- lists */
typedef struct list_ctx {
  const ag_list_opts *o;
  ag_artifact *v;
  size_t n, cap;
} list_ctx;

static int list_body(ag_store *st, void *vc) {
  list_ctx *c = vc;
  c->n = 0;
  sqlite3_stmt *s;
  static const char sql[] = "SELECT " ART_COLS " FROM artifacts WHERE ?1 IS NULL OR kind = ?1 "
                            "ORDER BY rowid DESC LIMIT ?2 OFFSET ?3";
  int rc;
  if ((rc = ag__stmt(st, sql, &s)) || (rc = ag__bind_text(st, s, 1, c->o->kind)) ||
      (rc = ag__bind_i64(st, s, 2, c->o->limit ? (int64_t)c->o->limit : -1)) ||
      (rc = ag__bind_i64(st, s, 3, (int64_t)c->o->offset)))
    return rc;
  while ((rc = AG__SQL(st, sqlite3_step(s))) == SQLITE_ROW) {
    if ((rc = ag__grow(&c->v, &c->cap, c->n, sizeof *c->v)))
      return rc;
    fill_artifact(s, &c->v[c->n++]);
  }
  return rc < 0 ? rc : 0;
}

int ag_store_artifacts(ag_store *st, const ag_list_opts *opts, ag_artifact **out, size_t *n) {
  *out = NULL;
  *n = 0;
  ag_list_opts none = {0, 0, NULL};
  list_ctx c = {opts ? opts : &none, NULL, 0, 0};
  int rc = ag__txn(st, AG__READ, list_body, &c);
  if (rc) {
    ag_free(c.v);
    return rc;
  }
  *out = c.v;
  *n = c.n;
  return 0;
}
