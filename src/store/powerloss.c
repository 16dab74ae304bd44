/*
 * powerloss.c — a power-loss simulation for the store's tests (library
 * argus_store_powerloss; never linked into argus).
 *
 * A kill -9 keeps the page cache, so it cannot tell a durable write from one
 * that merely reached the kernel. This layer sees every file-system call
 * that matters for durability — the blob writes through the store's I/O
 * hook (store_test.h) and SQLite's files through a VFS shim over the default
 * VFS — and remembers what a disk with a volatile write cache could still
 * lose:
 *
 *   content    per file (by inode), the bytes as of its last fsync: before a
 *              write or truncate the old bytes of the range below the synced
 *              size are saved (an undo log); an fsync of the file empties it;
 *   names      creations, mkdirs and renames, each pending until an fsync of
 *              the directory that holds the name (a rename: of both
 *              directories, each half on its own).
 *
 * At the crash point it undoes, on disk, everything still pending — the undo
 * logs in reverse and a truncation to the synced size, then the name
 * operations in reverse — and exits: the next process to open the workspace
 * sees what a machine that lost power at that instant would have kept, the
 * worst case of SQLite's crash tests (test6.c), where every unsynced write
 * is dropped. Real fsyncs are skipped (the model decides durability), so a
 * round costs no disk flushes. SQLite's own directory sync is mirrored as
 * os_unix.c does it: the first sync of a journal or WAL file it opened with
 * SQLITE_OPEN_CREATE also syncs that file's directory. Deletions count as
 * durable at once: they only remove files that hold no record (temp files,
 * a checkpointed WAL).
 *
 * Single-threaded use in one process (the test's forked writer); memory
 * grows with the unsynced writes only.
 */
#include "store_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------ the model */
typedef struct pl_undo {
  off_t off;
  size_t n;
  unsigned char *old;
} pl_undo;

typedef struct pl_file {
  dev_t dev;
  ino_t ino;
  int fd;            /* our own descriptor, kept open until the crash */
  off_t synced_size; /* size as of the last fsync */
  pl_undo *u;
  size_t nu, cu;
} pl_file;

enum { PL_CREATE, PL_MKDIR, PL_RENAME };

typedef struct pl_op {
  int kind;
  char a[PATH_MAX], b[PATH_MAX]; /* CREATE/MKDIR: a; RENAME: a -> b */
  char stash[PATH_MAX];          /* RENAME over an existing b: the old b, linked here */
  int a_pending, b_pending;      /* directory entries not yet durable */
} pl_op;

#define PL_MAXFD 4096

static struct {
  int on;
  long events, crash_at;
  char stash[PATH_MAX];
  long nstash;
  pl_file **files;
  size_t nfiles, cfiles;
  pl_op *ops;
  size_t nops, cops;
  pl_file *by_fd[PL_MAXFD]; /* the store's descriptors of tracked files */
  char *dir_fd[PL_MAXFD];   /* the store's descriptors of directories */
} pl;

static void *grow(void *v, size_t *cap, size_t n, size_t elem) {
  if (n < *cap)
    return v;
  size_t c = *cap ? 2 * *cap : 16;
  void *nv = realloc(v, c * elem);
  if (!nv)
    abort(); /* a test helper: out of memory ends the test */
  *cap = c;
  return nv;
}

/* "dir/name" with dir made canonical (it must exist). */
static void canon(const char *path, char out[PATH_MAX]) {
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s", path);
  char *slash = strrchr(tmp, '/');
  const char *name = slash ? slash + 1 : tmp;
  char dir[PATH_MAX];
  if (!realpath(slash ? (slash == tmp ? "/" : (*slash = 0, tmp)) : ".", dir))
    snprintf(dir, sizeof dir, "%s", slash ? tmp : ".");
  if (snprintf(out, PATH_MAX, "%s/%s", dir, name) >= PATH_MAX)
    abort(); /* test paths are short */
}

static void dir_of(const char *canon_path, char out[PATH_MAX]) {
  snprintf(out, PATH_MAX, "%s", canon_path);
  char *slash = strrchr(out, '/');
  if (slash && slash != out)
    *slash = 0;
}

static pl_file *track(int fd, int fresh) {
  struct stat sb;
  if (fstat(fd, &sb) != 0)
    return NULL;
  for (size_t i = 0; i < pl.nfiles; i++)
    if (pl.files[i]->dev == sb.st_dev && pl.files[i]->ino == sb.st_ino)
      return pl.files[i];
  pl_file *f = calloc(1, sizeof *f);
  if (!f)
    abort();
  f->dev = sb.st_dev;
  f->ino = sb.st_ino;
  f->fd = dup(fd);
  f->synced_size = fresh ? 0 : sb.st_size;
  pl.files = grow(pl.files, &pl.cfiles, pl.nfiles, sizeof *pl.files);
  pl.files[pl.nfiles++] = f;
  return f;
}

/* Saves the bytes of [off, off+n) below the synced size before they change. */
static void save(pl_file *f, off_t off, size_t n) {
  if (off >= f->synced_size)
    return;
  if ((off_t)n > f->synced_size - off)
    n = (size_t)(f->synced_size - off);
  pl_undo u = {off, 0, malloc(n ? n : 1)};
  if (!u.old)
    abort();
  ssize_t k = pread(f->fd, u.old, n, off);
  u.n = k > 0 ? (size_t)k : 0;
  f->u = grow(f->u, &f->cu, f->nu, sizeof *f->u);
  f->u[f->nu++] = u;
}

static void synced(pl_file *f) {
  for (size_t i = 0; i < f->nu; i++)
    free(f->u[i].old);
  f->nu = 0;
  struct stat sb;
  if (fstat(f->fd, &sb) == 0)
    f->synced_size = sb.st_size;
}

static pl_op *add_op(int kind, const char *a, const char *b) {
  pl.ops = grow(pl.ops, &pl.cops, pl.nops, sizeof *pl.ops);
  pl_op *o = &pl.ops[pl.nops++];
  memset(o, 0, sizeof *o);
  o->kind = kind;
  snprintf(o->a, sizeof o->a, "%s", a);
  if (b)
    snprintf(o->b, sizeof o->b, "%s", b);
  o->a_pending = 1;
  o->b_pending = b != NULL;
  return o;
}

/* An fsync of directory `dir` (canonical): its entries are durable. */
static void dir_synced(const char *dir) {
  char d[PATH_MAX];
  for (size_t i = 0; i < pl.nops; i++) {
    pl_op *o = &pl.ops[i];
    dir_of(o->a, d);
    if (!strcmp(d, dir))
      o->a_pending = 0;
    if (o->kind == PL_RENAME) {
      dir_of(o->b, d);
      if (!strcmp(d, dir))
        o->b_pending = 0;
    }
  }
}

void ag__powerloss_crash(void) {
  pl.on = 0;
  for (size_t i = 0; i < pl.nfiles; i++) { /* content: back to the last fsync */
    pl_file *f = pl.files[i];
    for (size_t k = f->nu; k-- > 0;)
      if (f->u[k].n && pwrite(f->fd, f->u[k].old, f->u[k].n, f->u[k].off) < 0)
        _exit(3);
    if (ftruncate(f->fd, f->synced_size) != 0)
      _exit(3);
  }
  for (size_t i = pl.nops; i-- > 0;) { /* names: what no directory fsync made durable */
    pl_op *o = &pl.ops[i];
    switch (o->kind) {
    case PL_CREATE:
      if (o->a_pending)
        unlink(o->a);
      break;
    case PL_MKDIR:
      if (o->a_pending)
        ag_remove_tree(o->a);
      break;
    case PL_RENAME:
      if (o->a_pending && o->b_pending)
        rename(o->b, o->a);
      else if (o->a_pending)
        link(o->b, o->a);
      else if (o->b_pending)
        unlink(o->b);
      if (o->b_pending && o->stash[0])
        rename(o->stash, o->b);
      break;
    }
  }
  _exit(AG__POWERLOSS_EXIT);
}

/* Counts one tracked operation; crashes before the crash_at-th happens. */
static void event(void) {
  if (pl.on && ++pl.events == pl.crash_at)
    ag__powerloss_crash();
}

long ag__powerloss_events(void) { return pl.events; }

/* ------------------------------------------------------- blob I/O hook */
static int pl_mkstemp(char *tmpl) {
  event();
  int fd = mkstemp(tmpl);
  if (fd >= 0 && pl.on && fd < PL_MAXFD) {
    char c[PATH_MAX];
    canon(tmpl, c);
    add_op(PL_CREATE, c, NULL);
    pl.by_fd[fd] = track(fd, 1);
  }
  return fd;
}

static int pl_open(const char *path, int flags, mode_t mode) {
  int fd = open(path, flags, mode);
  if (fd >= 0 && fd < PL_MAXFD && (flags & O_DIRECTORY)) {
    char c[PATH_MAX];
    if (realpath(path, c))
      pl.dir_fd[fd] = strdup(c);
  }
  return fd;
}

static ssize_t pl_write(int fd, const void *p, size_t n) {
  event();
  pl_file *f = fd >= 0 && fd < PL_MAXFD ? pl.by_fd[fd] : NULL;
  if (f)
    save(f, lseek(fd, 0, SEEK_CUR), n);
  return write(fd, p, n);
}

static int pl_fsync(int fd) {
  event();
  if (fd >= 0 && fd < PL_MAXFD && pl.by_fd[fd])
    synced(pl.by_fd[fd]);
  else if (fd >= 0 && fd < PL_MAXFD && pl.dir_fd[fd])
    dir_synced(pl.dir_fd[fd]);
  return 0; /* the model decides durability: no real flush */
}

static int pl_close(int fd) {
  if (fd >= 0 && fd < PL_MAXFD) {
    pl.by_fd[fd] = NULL;
    free(pl.dir_fd[fd]);
    pl.dir_fd[fd] = NULL;
  }
  return close(fd);
}

static int pl_mkdir(const char *path, mode_t mode) {
  event();
  int rc = mkdir(path, mode);
  if (rc == 0) {
    char c[PATH_MAX];
    canon(path, c);
    add_op(PL_MKDIR, c, NULL);
  }
  return rc;
}

static int pl_rename(const char *from, const char *to) {
  event();
  char a[PATH_MAX], b[PATH_MAX], st[PATH_MAX];
  canon(from, a);
  canon(to, b);
  st[0] = 0;
  if (access(b, F_OK) == 0) { /* keep the replaced file, in case the rename is undone */
    if (snprintf(st, sizeof st, "%s/%ld", pl.stash, pl.nstash++) >= (int)sizeof st ||
        link(b, st) != 0)
      st[0] = 0;
  }
  int rc = rename(from, to);
  if (rc == 0) {
    pl_op *o = add_op(PL_RENAME, a, b);
    snprintf(o->stash, sizeof o->stash, "%s", st);
  } else if (st[0]) {
    unlink(st);
  }
  return rc;
}

static const ag__io_ops pl_io = {pl_mkstemp, pl_open,  pl_write, pl_fsync,
                                 pl_close,   pl_mkdir, pl_rename};

/* ------------------------------------------------------ SQLite VFS shim */
typedef struct pl_sqlfile {
  sqlite3_file base;
  sqlite3_file *real; /* the default VFS's file, right after this struct */
  pl_file *f;         /* NULL: not tracked (temp files) */
  int dirsync;        /* os_unix.c: its first sync also syncs its directory */
  char dir[PATH_MAX];
} pl_sqlfile;

static sqlite3_vfs *real_vfs;
static sqlite3_vfs pl_vfs;

#define REAL(p) (((pl_sqlfile *)(p))->real)

static int x_close(sqlite3_file *p) {
  int rc = REAL(p)->pMethods->xClose(REAL(p));
  return rc; /* the pl_file stays: its undo log survives the close */
}
static int x_read(sqlite3_file *p, void *b, int n, sqlite3_int64 off) {
  return REAL(p)->pMethods->xRead(REAL(p), b, n, off);
}
static int x_write(sqlite3_file *p, const void *b, int n, sqlite3_int64 off) {
  event();
  pl_sqlfile *s = (pl_sqlfile *)p;
  if (s->f && pl.on)
    save(s->f, (off_t)off, (size_t)n);
  return REAL(p)->pMethods->xWrite(REAL(p), b, n, off);
}
static int x_truncate(sqlite3_file *p, sqlite3_int64 size) {
  event();
  pl_sqlfile *s = (pl_sqlfile *)p;
  if (s->f && pl.on) {
    struct stat sb;
    if (fstat(s->f->fd, &sb) == 0 && sb.st_size > size)
      save(s->f, (off_t)size, (size_t)(sb.st_size - size));
  }
  return REAL(p)->pMethods->xTruncate(REAL(p), size);
}
static int x_sync(sqlite3_file *p, int flags) {
  event();
  pl_sqlfile *s = (pl_sqlfile *)p;
  if (s->f && pl.on)
    synced(s->f);
  if (s->dirsync && pl.on) {
    dir_synced(s->dir);
    s->dirsync = 0;
  }
  return SQLITE_OK; /* the model decides durability: no real flush */
}
static int x_size(sqlite3_file *p, sqlite3_int64 *n) {
  return REAL(p)->pMethods->xFileSize(REAL(p), n);
}
static int x_lock(sqlite3_file *p, int l) { return REAL(p)->pMethods->xLock(REAL(p), l); }
static int x_unlock(sqlite3_file *p, int l) { return REAL(p)->pMethods->xUnlock(REAL(p), l); }
static int x_reserved(sqlite3_file *p, int *r) {
  return REAL(p)->pMethods->xCheckReservedLock(REAL(p), r);
}
static int x_fcntl(sqlite3_file *p, int op, void *a) {
  return REAL(p)->pMethods->xFileControl(REAL(p), op, a);
}
static int x_sector(sqlite3_file *p) { return REAL(p)->pMethods->xSectorSize(REAL(p)); }
static int x_devchar(sqlite3_file *p) {
  return REAL(p)->pMethods->xDeviceCharacteristics(REAL(p));
}
static int x_shmmap(sqlite3_file *p, int i, int sz, int ext, void volatile **pp) {
  return REAL(p)->pMethods->xShmMap(REAL(p), i, sz, ext, pp);
}
static int x_shmlock(sqlite3_file *p, int off, int n, int flags) {
  return REAL(p)->pMethods->xShmLock(REAL(p), off, n, flags);
}
static void x_shmbarrier(sqlite3_file *p) { REAL(p)->pMethods->xShmBarrier(REAL(p)); }
static int x_shmunmap(sqlite3_file *p, int del) {
  return REAL(p)->pMethods->xShmUnmap(REAL(p), del);
}
static int x_fetch(sqlite3_file *p, sqlite3_int64 off, int n, void **pp) {
  *pp = NULL; /* no memory-mapped reads: every read goes through xRead */
  return SQLITE_OK;
}
static int x_unfetch(sqlite3_file *p, sqlite3_int64 off, void *q) { return SQLITE_OK; }

static const sqlite3_io_methods pl_methods = {
    3,         x_close,  x_read,   x_write,     x_truncate,  x_sync,
    x_size,    x_lock,   x_unlock, x_reserved,  x_fcntl,     x_sector,
    x_devchar, x_shmmap, x_shmlock, x_shmbarrier, x_shmunmap, x_fetch,
    x_unfetch};

static int x_open(sqlite3_vfs *v, const char *name, sqlite3_file *p, int flags, int *out) {
  pl_sqlfile *s = (pl_sqlfile *)p;
  memset(s, 0, sizeof *s);
  s->real = (sqlite3_file *)(s + 1);
  int existed = name && access(name, F_OK) == 0;
  if (name && !existed)
    event();
  int rc = real_vfs->xOpen(real_vfs, name, s->real, flags, out);
  if (rc != SQLITE_OK) {
    p->pMethods = NULL;
    return rc;
  }
  p->pMethods = &pl_methods;
  if (!name || !pl.on)
    return rc;
  char c[PATH_MAX];
  canon(name, c);
  dir_of(c, s->dir);
  if (!existed)
    add_op(PL_CREATE, c, NULL);
  int t = flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_MAIN_JOURNAL | SQLITE_OPEN_WAL |
                   SQLITE_OPEN_SUPER_JOURNAL);
  s->dirsync = (flags & SQLITE_OPEN_CREATE) && t && t != SQLITE_OPEN_MAIN_DB;
  int fd = open(name, O_RDWR | O_CLOEXEC); /* never closed: closing would drop SQLite's locks */
  if (fd >= 0) {
    s->f = track(fd, !existed);
    /* track() dup()s: keep ours open too, for the same reason */
  }
  return rc;
}

static int x_delete(sqlite3_vfs *v, const char *name, int dirsync) {
  return real_vfs->xDelete(real_vfs, name, dirsync); /* durable at once (see the header) */
}

int ag__powerloss_begin(const char *stash_dir, long crash_at) {
  ag__sqlite_setup(); /* SQLite's memory configuration comes first */
  real_vfs = sqlite3_vfs_find(NULL);
  if (!real_vfs)
    return AG_EIO;
  pl_vfs = *real_vfs;
  pl_vfs.zName = "argus-powerloss";
  pl_vfs.szOsFile = (int)sizeof(pl_sqlfile) + real_vfs->szOsFile;
  pl_vfs.pNext = NULL;
  pl_vfs.xOpen = x_open;
  pl_vfs.xDelete = x_delete;
  pl_vfs.iVersion = real_vfs->iVersion < 3 ? real_vfs->iVersion : 3;
  if (sqlite3_vfs_register(&pl_vfs, 1) != SQLITE_OK)
    return AG_EIO;
  if (!realpath(stash_dir, pl.stash))
    return AG_ENOTFOUND;
  pl.crash_at = crash_at;
  pl.on = 1;
  ag__store_set_io(&pl_io);
  return 0;
}
