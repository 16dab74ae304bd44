/*
 * store_test.h — hooks for the store's own tests (not public API): run raw
 * SQL to damage a workspace on purpose, and open with a substitute migration
 * list to exercise schema upgrades and the newer-schema refusal.
 */
#ifndef ARGUS_STORE_TEST_H
#define ARGUS_STORE_TEST_H

#include "argus/store.h"

#include <sys/types.h>

int ag__store_exec(ag_store *st, const char *sql);
/* Like ag_store_open, with migrations[0..n) instead of the built-in list:
 * the schema version it brings a workspace to is n. */
int ag__store_open_with(const char *path, unsigned flags, const char *const *migrations, int n,
                        ag_store **out);
/* The built-in migration list. */
const char *const *ag__store_migrations(int *n);

/* ------------------------------------------------- blob file I/O hook */
/* Every call a blob write makes on the file system: the temp file
 * (mkstemp, write, fsync, close), the directories (mkdir, open + fsync +
 * close of a directory) and the rename into objects/. A test substitutes
 * them to see and order them (the power-loss simulation below); the store
 * uses the system calls otherwise. Set before opening a store; not
 * thread-safe. NULL restores the system calls. */
typedef struct ag__io_ops {
  int (*mkstemp)(char *tmpl);
  int (*open)(const char *path, int flags, mode_t mode);
  ssize_t (*write)(int fd, const void *p, size_t n);
  int (*fsync)(int fd);
  int (*close)(int fd);
  int (*mkdir)(const char *path, mode_t mode);
  int (*rename)(const char *from, const char *to);
} ag__io_ops;
void ag__store_set_io(const ag__io_ops *ops);

/* ------------------------------------------------ power-loss simulation */
/* src/store/powerloss.c (library argus_store_powerloss, for tests only).
 * After ag__powerloss_begin, this process's blob writes (through the hook
 * above) and its SQLite files (through a VFS shim over the default VFS,
 * registered as the default) are tracked as a disk with a volatile cache
 * would see them. At the crash point — the crash_at-th tracked operation
 * (1-based, before it happens; 0 = never) or a call of
 * ag__powerloss_crash — every write not followed by an fsync of its file,
 * and every creation, mkdir and rename not followed by an fsync of its
 * directory, is undone on disk, as SQLite's own crash tests drop unsynced
 * writes; then the process exits with AG__POWERLOSS_EXIT. Deletions are
 * taken as durable at once (they only ever remove files that hold no
 * record). stash_dir: an empty directory on the same file system, for the
 * files a rename replaced. Call before the first ag_store_open in the
 * process (a forked child). */
#define AG__POWERLOSS_EXIT 86
int ag__powerloss_begin(const char *stash_dir, long crash_at);
/* Tracked operations so far. */
long ag__powerloss_events(void);
/* Crashes now; does not return. */
void ag__powerloss_crash(void);

#endif
