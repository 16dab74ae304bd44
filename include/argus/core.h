/*
 * argus/core.h — the foundation every Argus module links against: error codes,
 * the allocation wrapper, arenas, growable strings and vectors, hash maps,
 * diagnostics, logging, SHA-256, JSON helpers, process spawning and clocks.
 *
 * Nothing here knows about GPUs, PTX or the workspace. Ownership follows
 * STYLE.md: _init/_release for caller-owned storage, _new/_free for heap
 * objects, _detach to take ownership of a buffer.
 */
#ifndef ARGUS_CORE_H
#define ARGUS_CORE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AG_VERSION_STRING "0.1.0"

#if defined(__GNUC__)
#define AG_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define AG_PRINTF(f, a)
#endif

/* ------------------------------------------------------------------ errors */
/* One list generates the enum, ag_err_name and ag_strerror (libuv style). */
#define AG_ERRNO_MAP(X)                                                        \
  X(NOMEM, "out of memory")                                                    \
  X(INVAL, "invalid argument")                                                 \
  X(IO, "input/output error")                                                  \
  X(PARSE, "malformed input")                                                  \
  X(NOTFOUND, "not found")                                                     \
  X(EXISTS, "already exists")                                                  \
  X(CORRUPT, "data is corrupted")                                              \
  X(BUSY, "resource busy")                                                     \
  X(UNSUPPORTED, "not supported")                                              \
  X(SCHEMA, "workspace schema is newer than this argus")                       \
  X(RANGE, "value out of range")                                               \
  X(TIMEOUT, "timed out")                                                      \
  X(CHILD, "child process failed")                                             \
  X(NODEV, "no GPU device available")                                          \
  X(CUDA, "CUDA error")                                                        \
  X(CUPTI, "CUPTI error")                                                      \
  X(JIT, "PTX compilation failed")                                             \
  X(SQL, "database error")                                                     \
  X(SOLVER, "solver error")                                                    \
  X(UNDEFINED, "operation undefined for these operands")                       \
  X(VIOLATION, "assertion violated")                                           \
  X(FULL, "buffer full")                                                       \
  X(ISDIR, "is a directory")

enum {
  AG_OK = 0,
#define AG__ERR_ENUM(name, text) AG_E##name,
  AG__ERR_FIRST = -1000,
  AG_ERRNO_MAP(AG__ERR_ENUM) AG__ERR_LAST
#undef AG__ERR_ENUM
};

const char *ag_strerror(int err); /* static text; never NULL */
const char *ag_err_name(int err); /* "AG_ENOMEM"; never NULL */

/* -------------------------------------------------------------- allocation */
/* Every allocation in Argus goes through these. ag_alloc_fail_at(n) makes the
 * n-th allocation from now fail (1 = the next one); 0 turns it off. Tests use
 * it to drive out-of-memory fault loops. */
void *ag_malloc(size_t n);
void *ag_calloc(size_t count, size_t size);
void *ag_realloc(void *p, size_t n);
void ag_free(void *p);
char *ag_strdup(const char *s);
char *ag_strndup(const char *s, size_t n);
void ag_alloc_fail_at(long n);
long ag_alloc_count(void); /* allocations made so far (for fault loops) */

/* ------------------------------------------------------------------ arena */
/* Bump allocator for graph-shaped data freed at once. Returned memory is
 * 16-byte aligned and zeroed. */
typedef struct ag_arena_chunk ag_arena_chunk;
typedef struct ag_arena {
  ag_arena_chunk *head;
  size_t chunk_size;
  size_t used_total;
} ag_arena;

void ag_arena_init(ag_arena *a, size_t chunk_size); /* 0 = default 64 KiB */
void ag_arena_release(ag_arena *a);
void *ag_arena_alloc(ag_arena *a, size_t n);         /* NULL on OOM */
char *ag_arena_strndup(ag_arena *a, const char *s, size_t n);
char *ag_arena_strdup(ag_arena *a, const char *s);
char *ag_arena_printf(ag_arena *a, const char *fmt, ...) AG_PRINTF(2, 3);

/* ----------------------------------------------------------------- strings */
/* Growable NUL-terminated buffer. A failed append sets 'oom' and leaves the
 * contents as they were, so a chain of appends is checked once at the end. */
typedef struct ag_str {
  char *p; /* always NUL-terminated once anything was appended; may be NULL */
  size_t len;
  size_t cap;
  int oom;
} ag_str;

#define AG_STR_INIT {NULL, 0, 0, 0}
void ag_str_init(ag_str *s);
void ag_str_release(ag_str *s);
int ag_str_reserve(ag_str *s, size_t extra);
int ag_str_append(ag_str *s, const char *data, size_t n);
int ag_str_puts(ag_str *s, const char *cstr);
int ag_str_putc(ag_str *s, char c);
int ag_str_printf(ag_str *s, const char *fmt, ...) AG_PRINTF(2, 3);
int ag_str_vprintf(ag_str *s, const char *fmt, va_list ap);
void ag_str_clear(ag_str *s);
const char *ag_str_cstr(const ag_str *s); /* "" when empty; borrowed */
char *ag_str_detach(ag_str *s);           /* owned; caller ag_free()s */
/* Appends s as a JSON string literal (with quotes). */
int ag_str_json_quote(ag_str *s, const char *cstr);

/* "Did you mean" (suggest.c). The edit distance of a and b: insertions,
 * deletions, substitutions and adjacent transpositions, 1 each; SIZE_MAX
 * when out of memory. */
size_t ag_edit_distance(const char *a, const char *b);
/* Appends "did you mean 'x'?" ("'x' or 'y'", "'x', 'y' or 'z'") naming, closest
 * first, at most 3 of the n names (NULL entries skipped) within 1 + len/4
 * edits of word and fewer than its length, or beginning with it (when it
 * has 3 characters or more); appends nothing when none is. Returns how many
 * it named. */
int ag_str_suggest(ag_str *out, const char *word, const char *const *names, size_t n);

/* ----------------------------------------------------------------- vectors */
/* Type-safe growable array: AG_VEC(int) v = {0}; ag_vec_push(&v, 3). */
#define AG_VEC(T)                                                              \
  struct {                                                                     \
    T *v;                                                                      \
    size_t n, cap;                                                             \
  }
int ag__vec_reserve(void **v, size_t *cap, size_t need, size_t elem);
#define ag_vec_reserve(vec, need)                                              \
  ag__vec_reserve((void **)&(vec)->v, &(vec)->cap, (need), sizeof *(vec)->v)
#define ag_vec_push(vec, x)                                                    \
  (ag_vec_reserve((vec), (vec)->n + 1) == 0 ? ((vec)->v[(vec)->n++] = (x), 0)  \
                                            : AG_ENOMEM)
#define ag_vec_free(vec)                                                       \
  do {                                                                         \
    ag_free((vec)->v);                                                         \
    (vec)->v = NULL;                                                           \
    (vec)->n = (vec)->cap = 0;                                                 \
  } while (0)

/* -------------------------------------------------------------------- maps */
/* Open-addressing hash map from byte-string keys to pointers. Keys are copied
 * and owned by the map; values are borrowed. */
typedef struct ag_map_slot ag_map_slot;
typedef struct ag_map {
  ag_map_slot *slots;
  size_t cap;   /* power of two, or 0 */
  size_t count; /* live entries */
  size_t used;  /* live + tombstones */
} ag_map;

void ag_map_init(ag_map *m);
void ag_map_release(ag_map *m);
int ag_map_put(ag_map *m, const void *key, size_t klen, void *val);
void *ag_map_get(const ag_map *m, const void *key, size_t klen); /* NULL: absent */
int ag_map_has(const ag_map *m, const void *key, size_t klen);
int ag_map_del(ag_map *m, const void *key, size_t klen); /* AG_ENOTFOUND */
int ag_map_put_str(ag_map *m, const char *key, void *val);
void *ag_map_get_str(const ag_map *m, const char *key);
/* Iteration: for (size_t it = 0; ag_map_next(m, &it, &k, &kl, &v);) */
int ag_map_next(const ag_map *m, size_t *it, const void **key, size_t *klen,
                void **val);
uint64_t ag_hash64(const void *data, size_t n); /* FNV-1a, 64-bit */

/* ------------------------------------------------------------- diagnostics */
typedef enum ag_severity { AG_SEV_ERROR, AG_SEV_WARNING, AG_SEV_NOTE } ag_severity;

typedef struct ag_diag {
  ag_severity sev;
  char *file;    /* may be NULL */
  int line, col; /* 1-based; 0 = unknown */
  char *msg;
  char *srcline; /* the offending source line without newline, or a window of
                    at most AG_DIAG_SRC_MAX bytes around col with "..." where
                    cut; may be NULL */
  int caret;     /* 1-based position of col in srcline (col itself when the
                    line is whole); 0 = none */
} ag_diag;

/* Longest source line a diagnostic echoes whole; a longer one is cut to a
 * window of this many bytes around the column. */
#define AG_DIAG_SRC_MAX 160

typedef struct ag_diags {
  AG_VEC(ag_diag) items;
  int nerrors;
  int max; /* stop recording after this many (0 = 100) */
} ag_diags;

void ag_diags_init(ag_diags *d);
void ag_diags_release(ag_diags *d);
/* srcline may point into a larger buffer: srclen bytes are copied (stopping
 * at a newline), cut to a window around col when longer than
 * AG_DIAG_SRC_MAX. Returns 0 or AG_ENOMEM. */
int ag_diags_add(ag_diags *d, ag_severity sev, const char *file, int line,
                 int col, const char *srcline, size_t srclen, const char *fmt,
                 ...) AG_PRINTF(8, 9);
/* "file:line:col: error: msg\n    src\n    ^\n" for each diagnostic. */
int ag_diags_format(const ag_diags *d, ag_str *out);
/* JSON array of {severity,file,line,col,message}. New reference. */
json_t *ag_diags_to_json(const ag_diags *d);
/* Finds the line `line` (1-based) in text; returns its start and length. */
const char *ag_text_line(const char *text, size_t len, int line, size_t *linelen);

/* ----------------------------------------------------------------- logging */
typedef enum ag_log_level {
  AG_LOG_ERROR = 0,
  AG_LOG_WARN = 1,
  AG_LOG_INFO = 2,
  AG_LOG_DEBUG = 3,
  AG_LOG_TRACE = 4
} ag_log_level;
typedef void (*ag_log_sink)(ag_log_level lvl, const char *file, int line,
                            const char *msg, void *ud);
extern int ag__log_level;
void ag_log_set_level(int lvl);
void ag_log_set_sink(ag_log_sink sink, void *ud); /* NULL drops messages */
void ag__log(ag_log_level lvl, const char *file, int line, const char *fmt, ...)
    AG_PRINTF(4, 5);
/* Tests the level before evaluating the arguments. */
#define AG_LOG(lvl, ...)                                                       \
  do {                                                                         \
    if ((int)(lvl) <= ag__log_level)                                           \
      ag__log((lvl), __FILE__, __LINE__, __VA_ARGS__);                         \
  } while (0)

/* ----------------------------------------------------------------- hashing */
#define AG_SHA256_HEX_LEN 64
typedef struct ag_sha256 {
  void *ctx; /* EVP_MD_CTX */
} ag_sha256;
int ag_sha256_begin(ag_sha256 *h);
int ag_sha256_update(ag_sha256 *h, const void *data, size_t n);
/* Writes 32 raw bytes to out (may be NULL) and 64 hex chars + NUL to hex
 * (may be NULL); releases the context. */
int ag_sha256_end(ag_sha256 *h, unsigned char out[32], char hex[65]);
void ag_sha256_abort(ag_sha256 *h);
int ag_sha256_hex(const void *data, size_t n, char hex[65]);

/* -------------------------------------------------------------------- JSON */
/* Loads a JSON file; on a parse error adds a diagnostic with line and column
 * and returns AG_EPARSE. *out is a new reference. */
int ag_json_load_file(const char *path, ag_diags *diags, json_t **out);
int ag_json_load_str(const char *text, const char *name, ag_diags *diags,
                     json_t **out);
/* An evidence document: the file `name` (data NULL) or the bytes data[0..len)
 * named `name`; a parse error is one diagnostic "cannot read <what>: ..."
 * at its line and column, and AG_EPARSE. *out is a new reference. */
int ag_json_load_doc(const char *name, const void *data, size_t len, const char *what,
                     ag_diags *diags, json_t **out);
/* Positions in JSON text, which jansson does not keep: finds the key
 * path[n-1] inside the objects path[0..n-2] of text (want_value: the
 * position of its value instead of the key) and sets *line and *col
 * (1-based). 0 if found, -1 if not. */
int ag_json_locate(const char *text, const char *const *path, int n, int want_value, int *line,
                   int *col);
/* Adds an error diagnostic at the key (or value) path[0..n-1] of text
 * (ag_json_locate; n 0 or not found: no position), echoing its line. */
void ag_json_diag(ag_diags *d, const char *text, const char *file, const char *const *path,
                  int n, int want_value, const char *fmt, ...) AG_PRINTF(7, 8);

/* Canonical form: sorted keys, compact, no trailing newline. Owned. */
char *ag_json_canonical(const json_t *j);
/* 1 when a is an array of strings (nonempty: each of at least one char). */
int ag_json_all_strings(const json_t *a, int nonempty);
/* The strings of array a (every element a string: ag_json_all_strings) as a
 * NULL-terminated vector *out (owned: ag_strv_free) of *n; AG_ENOMEM. */
int ag_json_strv(const json_t *a, char ***out, int *n);
/* Frees a NULL-terminated vector of owned strings (NULL: nothing). */
void ag_strv_free(char **v);
/* The number at o[key], else dflt (no such key, or not a number). */
double ag_json_num(const json_t *o, const char *key, double dflt);

/* ---------------------------------------------------------------- files */
/* Reads a whole file; *data is owned and NUL-terminated. */
int ag_file_read(const char *path, char **data, size_t *len);
/* 0 when path names a readable file that is not a directory; else
 * AG_ENOTFOUND, AG_EISDIR or AG_EIO with *why saying it ("no such file",
 * static text): the message of every "cannot read 'F': ..." error. */
int ag_file_problem(const char *path, const char **why);
/* <dir>/../rel, where <dir> holds the program or shared library this code
 * is linked into (an installed bin/argus or lib/libargus.so: the prefix),
 * when that path exists; else NULL. Owned. How an installed Argus finds its
 * headers and argus-worker (docs/api.md). */
char *ag_install_path(const char *rel);
/* Writes atomically: temp file in the same directory, fsync, rename, fsync
 * of the directory. A crash leaves either the old file or the new one. */
int ag_file_write_atomic(const char *path, const void *data, size_t len);
int ag_mkdir_p(const char *path, int mode);
/* rm -rf: plain files and directories (a symbolic link is removed, never
 * followed). 0, or -1 when something could not be removed (errno); a path
 * that does not exist is 0. */
int ag_remove_tree(const char *path);
/* path made absolute against the current directory (not normalized: "a/../b"
 * stays as written); an absolute path is copied. Owned, or NULL (out of
 * memory, or no current directory). For paths handed to a process that runs
 * in another directory. */
char *ag_path_abs(const char *path);

/* --------------------------------------------------------------- processes */
typedef struct ag_proc_opts {
  const char *const *argv;    /* argv[0] is looked up in PATH if it has no '/' */
  const char *const *envp;    /* NULL: inherit */
  const char *const *env_add; /* "K=V" entries added to the environment */
  const char *cwd;            /* NULL: inherit. Relative paths in these options
                                 (argv[0], stdout_path, stderr_path, stdin_path) are the
                                 caller's, not cwd's: they are made absolute
                                 before the child changes directory */
  const char *stdout_path;    /* NULL: inherit; file is created/truncated */
  const char *stderr_path;    /* NULL: inherit; may equal stdout_path */
  const char *stdin_path;     /* NULL: /dev/null; else the file read as standard input */
  ag_str *capture_out;        /* if set, stdout is captured here (and stdout_path ignored) */
  ag_str *capture_err;        /* if set, stderr is captured here */
  double timeout_s;           /* <= 0: none. On expiry the process group is killed */
} ag_proc_opts;

typedef struct ag_proc_result {
  int exited;    /* 1 if it exited normally */
  int exit_code; /* valid when exited */
  int signaled;  /* 1 if killed by a signal */
  int signo;
  int timed_out; /* 1 if we killed it for the timeout */
  double wall_s;
} ag_proc_result;

/* Runs argv with execve (never a shell) in its own process group and waits.
 * Returns 0 when the process ran (whatever its status: see *res), or an error
 * when it could not be started (AG_ENOTFOUND for an unknown program). */
int ag_proc_run(const ag_proc_opts *o, ag_proc_result *res);
/* "exit 3", "signal 11 (Segmentation fault)", "timed out after 5.0 s". */
void ag_proc_describe(const ag_proc_result *r, ag_str *out);
/* Finds a program in PATH; owned result or NULL. */
char *ag_which(const char *prog);

/* ------------------------------------------------------------------- time */
uint64_t ag_now_ns(void);      /* monotonic */
uint64_t ag_wall_time_ns(void); /* realtime, for records people read */
void ag_iso8601(uint64_t wall_ns, char buf[32]);

/* ------------------------------------------------------------ self-tracing */
/* ARGUS_TRACE=file: Argus's own timing regions as Chrome-trace JSON. */
void ag_trace_begin(const char *name);
void ag_trace_end(const char *name);
int ag_trace_flush(void); /* writes the file if ARGUS_TRACE is set */

#ifdef __cplusplus
}
#endif
#endif
