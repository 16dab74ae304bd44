/*
 * ptxcache.c — the cache of ag_spec_compile_ptx: CUDA source → PTX without
 * running nvcc again when nothing it read has changed (docs/observe.md,
 * "The PTX cache").
 *
 * "Direct mode", as ccache calls it. An entry is found by a key over what
 * names the compilation: the nvcc executable (its real path, size and
 * modification time: a toolkit installed over the old one changes them),
 * the source's real path, the working directory, every argument and
 * NVCC_CCBIN; compiles whose flags or include paths come from elsewhere
 * (-optf, -Xcompiler, NVCC_PREPEND_FLAGS and friends) are not cached. The
 * entry is a manifest that lists every file the compilation read, from
 * nvcc's own dependency output (-MD: the source, its headers, Argus's
 * region.cuh, the system and CUDA headers), each with the SHA-256 of its
 * content, and the SHA-256 of the PTX, stored beside it. A lookup hashes
 * the listed files again: the entry is used only when every one is
 * unchanged and the stored PTX still has its hash. So an edited header, a
 * changed -D or a new nvcc all miss, and a damaged cache file is a miss,
 * never an error. A header that did not exist at store time could shadow
 * one the compilation read (a new util.h beside the source, found before
 * the -I directory's): the manifest also keeps the modification time of
 * every directory the search could look in first (watch_search_dirs), and
 * a directory that gained or lost an entry is a miss. Nothing is stored
 * when a dependency or watched directory changed around the compile. Not
 * covered: a new header in a default system directory that held no
 * dependency (docs/observe.md).
 *
 * Layout under <cache>/ptx: <key>.json (manifests) and <sha256>.ptx. Writes
 * are atomic (temp file + rename), so concurrent argus processes share the
 * cache. At most AG_PTXC_KEEP PTX files are kept (ARGUS_PTX_CACHE_KEEP
 * changes it): a store past that removes the least recently written ones.
 * Any failure to use the cache (no directory, no permission, a full disk)
 * only costs the compilation.
 */
#include "ptxcache.h"

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define AG_PTXC_KEEP 256

char *ag__ptxc_dir(void) {
  const char *off = getenv("ARGUS_PTX_CACHE");
  if (off && (!strcmp(off, "0") || !strcmp(off, "off") || !strcmp(off, "no")))
    return NULL;
  const char *d = getenv("ARGUS_CACHE_DIR");
  ag_str p = AG_STR_INIT;
  if (d && *d) {
    ag_str_printf(&p, "%s/ptx", d);
  } else {
    const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    if (x && *x)
      ag_str_printf(&p, "%s/argus/ptx", x);
    else if (h && *h)
      ag_str_printf(&p, "%s/.cache/argus/ptx", h);
    else
      return NULL;
  }
  if (p.oom) {
    ag_str_release(&p);
    return NULL;
  }
  return ag_str_detach(&p);
}

/* Arguments after which a compile is not cached: an options file (its
 * contents would have to be part of the key) and host-compiler options,
 * which can add include directories nvcc does not report as such. */
static int uncacheable(const char *a) {
  static const char *const no[] = {"-optf", "--options-file", "-Xcompiler", "--compiler-options",
                                   NULL};
  for (int i = 0; no[i]; i++) {
    size_t n = strlen(no[i]);
    if (!strncmp(a, no[i], n) && (a[n] == 0 || a[n] == '='))
      return 1;
  }
  return 0;
}

/* Environment that changes what nvcc compiles: part of the key. */
static const char *const key_env[] = {"NVCC_CCBIN", NULL};
/* Environment that adds flags or include directories nvcc does not report
 * as such: a compile under it is not cached. */
static const char *const no_env[] = {"NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "CPATH",
                                     "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", NULL};

int ag__ptxc_key(const char *nvcc, const char *cu, const char *const *args, char key[65]) {
  char nv[PATH_MAX], src[PATH_MAX], cwd[PATH_MAX];
  struct stat st;
  if (!realpath(nvcc, nv) || stat(nv, &st) || !realpath(cu, src) || !getcwd(cwd, sizeof cwd))
    return AG_ENOTFOUND;
  for (int i = 0; args[i]; i++)
    if (uncacheable(args[i]))
      return AG_EUNSUPPORTED;
  for (int i = 0; no_env[i]; i++) {
    const char *v = getenv(no_env[i]);
    if (v && *v)
      return AG_EUNSUPPORTED;
  }
  ag_str k = AG_STR_INIT;
  ag_str_printf(&k, "argus-ptx-cache 3\nnvcc %s %lld %lld.%09ld\nsource %s\ncwd %s\n", nv,
                (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, src, cwd);
  for (int i = 0; args[i]; i++)
    ag_str_printf(&k, "arg %s\n", args[i]);
  for (int i = 0; key_env[i]; i++) {
    const char *v = getenv(key_env[i]);
    if (v)
      ag_str_printf(&k, "env %s=%s\n", key_env[i], v);
  }
  int rc = k.oom ? AG_ENOMEM : ag_sha256_hex(k.p, k.len, key);
  ag_str_release(&k);
  return rc;
}

static int file_sha(const char *path, char hex[65]) {
  char *data = NULL;
  size_t len = 0;
  int rc = ag_file_read(path, &data, &len);
  if (rc == 0)
    rc = ag_sha256_hex(data, len, hex);
  ag_free(data);
  return rc;
}

static int dir_mtime(const char *d, char out[40]) {
  struct stat st;
  if (stat(d, &st) || !S_ISDIR(st.st_mode))
    return AG_ENOTFOUND;
  snprintf(out, 40, "%lld.%09ld", (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  return 0;
}

/* Adds directory d (made absolute) with its mtime, once. */
static int add_dir(json_t *dirs, const char *d) {
  char abs[PATH_MAX], mt[40];
  if (!realpath(d, abs) || dir_mtime(abs, mt))
    return 0; /* gone or not a directory: nothing to watch */
  size_t i;
  json_t *x;
  json_array_foreach(dirs, i, x) {
    if (!strcmp(json_string_value(json_object_get(x, "path")), abs))
      return 0;
  }
  return json_array_append_new(dirs, json_pack("{s:s,s:s}", "path", abs, "mtime", mt)) ? AG_ENOMEM
                                                                                          : 0;
}

int ag__ptxc_lookup(const char *dir, const char key[65], ag_str *ptx) {
  ag_str p = AG_STR_INIT;
  json_t *m = NULL;
  char *data = NULL;
  size_t len = 0;
  int hit = 0;
  ag_str_printf(&p, "%s/%s.json", dir, key);
  if (p.oom || ag_file_read(ag_str_cstr(&p), &data, &len))
    goto out;
  m = json_loadb(data, len, 0, NULL);
  ag_free(data);
  data = NULL;
  json_t *deps = json_object_get(m, "deps");
  const char *want = json_string_value(json_object_get(m, "ptx_sha256"));
  if (!json_is_array(deps) || json_array_size(deps) == 0 || !want || strlen(want) != 64)
    goto out;
  size_t i;
  json_t *d;
  json_array_foreach(deps, i, d) {
    const char *path = json_string_value(json_object_get(d, "path"));
    const char *sha = json_string_value(json_object_get(d, "sha256"));
    char now[65];
    if (!path || !sha || file_sha(path, now) || strcmp(now, sha))
      goto out; /* a file the compilation read has changed (or is gone) */
  }
  json_t *dirs = json_object_get(m, "dirs");
  if (!json_is_array(dirs))
    goto out;
  json_array_foreach(dirs, i, d) {
    const char *path = json_string_value(json_object_get(d, "path"));
    const char *mt = json_string_value(json_object_get(d, "mtime"));
    char now[40];
    if (!path || !mt || dir_mtime(path, now) || strcmp(now, mt))
      goto out; /* an entry was added or removed: a header may now shadow another */
  }
  ag_str_clear(&p);
  ag_str_printf(&p, "%s/%s.ptx", dir, want);
  char got[65];
  if (p.oom || ag_file_read(ag_str_cstr(&p), &data, &len) || ag_sha256_hex(data, len, got) ||
      strcmp(got, want))
    goto out; /* missing or damaged: compile again */
  if (ag_str_append(ptx, data, len))
    goto out;
  hit = 1;
out:
  ag_free(data);
  json_decref(m);
  ag_str_release(&p);
  return hit;
}

/* The prerequisites of a make rule as nvcc -MD writes it: "target: a b \
 * c", where a backslash before a space escapes it. */
static json_t *parse_deps(const char *text) {
  const char *s = strchr(text, ':');
  while (s && s[1] && s[1] != ' ' && s[1] != '\t' && s[1] != '\n' && s[1] != '\\')
    s = strchr(s + 1, ':'); /* a ':' inside the target's path */
  if (!s)
    return NULL;
  json_t *a = json_array();
  ag_str w = AG_STR_INIT;
  for (s++;; s++) {
    if (*s == '\\' && (s[1] == '\n' || (s[1] == '\r' && s[2] == '\n'))) {
      s += s[1] == '\r' ? 2 : 1;
      continue;
    }
    if (*s == '\\' && s[1] == ' ') {
      ag_str_append(&w, " ", 1);
      s++;
      continue;
    }
    if (*s == 0 || *s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') {
      if (w.len) {
        char sha[65], abs[PATH_MAX];
        /* absolute (nvcc names some relative to its cwd): argus runs from
         * anywhere */
        const char *path = realpath(ag_str_cstr(&w), abs) ? abs : ag_str_cstr(&w);
        if (w.oom || !a || file_sha(path, sha) ||
            json_array_append_new(a, json_pack("{s:s,s:s}", "path", path, "sha256", sha))) {
          json_decref(a);
          a = NULL;
          break;
        }
        ag_str_clear(&w);
      }
      if (*s == 0 || *s == '\n')
        break; /* one rule: nvcc writes no phony targets without -MP */
      continue;
    }
    ag_str_append(&w, s, 1);
  }
  ag_str_release(&w);
  return a;
}

static size_t keep_max(void) {
  const char *e = getenv("ARGUS_PTX_CACHE_KEEP");
  long v = e && *e ? strtol(e, NULL, 10) : 0;
  return v >= 1 && v <= 1000000 ? (size_t)v : AG_PTXC_KEEP;
}

struct ent {
  char name[80];
  long long t;
};

/* Removes the oldest entries of v beyond keep. */
static void drop_oldest(const char *dir, struct ent *v, size_t n, size_t keep) {
  while (n > keep) { /* one at a time: n is small */
    size_t old = 0;
    for (size_t i = 1; i < n; i++)
      if (v[i].t < v[old].t)
        old = i;
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", dir, v[old].name);
    unlink(p);
    v[old] = v[--n];
  }
}

/* Keeps the newest keep_max() PTX files and 4 times as many manifests (by
 * modification time), and removes the temporary files of writes that died
 * more than an hour ago. */
static void trim(const char *dir) {
  size_t keep = keep_max();
  DIR *dp = opendir(dir);
  if (!dp)
    return;
  struct ent *v[2] = {NULL, NULL};
  size_t n[2] = {0, 0}, cap[2] = {0, 0};
  struct dirent *e;
  time_t now = time(NULL);
  while ((e = readdir(dp))) {
    size_t l = strlen(e->d_name);
    int kind = l == 68 && !strcmp(e->d_name + 64, ".ptx")    ? 0
               : l == 69 && !strcmp(e->d_name + 64, ".json") ? 1
               : strstr(e->d_name, ".tmp.")                  ? 2
                                                             : -1;
    if (kind < 0)
      continue;
    char p[PATH_MAX];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    if (stat(p, &st))
      continue;
    if (kind == 2) {
      if (st.st_mtim.tv_sec < now - 3600)
        unlink(p);
      continue;
    }
    if (n[kind] == cap[kind]) {
      size_t nc = cap[kind] ? cap[kind] * 2 : 64;
      struct ent *nv = ag_realloc(v[kind], nc * sizeof *nv);
      if (!nv)
        break;
      v[kind] = nv;
      cap[kind] = nc;
    }
    memcpy(v[kind][n[kind]].name, e->d_name, l + 1); /* l <= 69 */
    v[kind][n[kind]++].t = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
  }
  closedir(dp);
  drop_oldest(dir, v[0], n[0], keep);
  drop_oldest(dir, v[1], n[1], 4 * keep);
  ag_free(v[0]);
  ag_free(v[1]);
}

/* 1 when path's content or metadata changed at or after t_ns (less the
 * coarse clock's lag): mtime can be set back by cp -p or tar, ctime not. */
static int changed_since(const char *path, long long t_ns) {
  struct stat st;
  if (!path || stat(path, &st))
    return 1;
  long long slack = 20000000LL; /* 20 ms: file times lag the real-time clock */
  long long m = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
  long long c = (long long)st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;
  return m >= t_ns - slack || c >= t_ns - slack;
}

/* distinct absolute directories, owned */
typedef AG_VEC(char *) dlist;

static int dl_push(dlist *l, const char *abs) {
  for (size_t i = 0; i < l->n; i++)
    if (!strcmp(l->v[i], abs))
      return 0;
  char *d = ag_strdup(abs);
  if (!d || ag_vec_push(l, d)) {
    ag_free(d);
    return AG_ENOMEM;
  }
  return 0;
}

/* Adds search directory d (absolute, to l) and watches it; a directory
 * that does not exist yet is watched through its nearest existing ancestor
 * (creating it changes that ancestor). */
static int add_search(json_t *dirs, dlist *l, const char *d) {
  char abs[PATH_MAX];
  if (realpath(d, abs)) {
    int rc = dl_push(l, abs);
    return rc ? rc : add_dir(dirs, abs);
  }
  char up[PATH_MAX];
  snprintf(up, sizeof up, "%s", d);
  for (char *sl = strrchr(up, '/'); sl; sl = strrchr(up, '/')) {
    *(sl == up ? sl + 1 : sl) = 0;
    if (realpath(up, abs))
      return add_dir(dirs, abs);
    if (sl == up)
      break;
  }
  return add_dir(dirs, ".");
}

/* The directories a header search could look in before the one it used:
 * the search path (the source's directory, each include option's
 * directories, comma lists split as nvcc does), every dependency's
 * directory (a quoted include looks beside its includer first), and under
 * each of these the subdirectories an include such as "cfg/opts.h" goes
 * through. */
static int watch_search_dirs(json_t *dirs, const char *cu, const char *const *args,
                             json_t *deps) {
  static const char *const iopt[] = {"-I", "-isystem", "-iquote", "--include-path",
                                     "--system-include", NULL};
  dlist l = {0};
  char d[PATH_MAX];
  snprintf(d, sizeof d, "%s", cu);
  char *sl = strrchr(d, '/');
  if (sl)
    *(sl == d ? sl + 1 : sl) = 0;
  else
    snprintf(d, sizeof d, ".");
  int rc = add_search(dirs, &l, d);
  for (int i = 0; args[i] && rc == 0; i++)
    for (int o = 0; iopt[o]; o++) {
      size_t n = strlen(iopt[o]);
      if (strncmp(args[i], iopt[o], n))
        continue;
      const char *v = args[i][n] == '=' ? args[i] + n + 1 : args[i][n] ? args[i] + n : args[i + 1];
      if (!args[i][n] && args[i + 1])
        i++;
      for (const char *p = v; p && *p && rc == 0;) { /* "a,b,c" */
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len && len < sizeof d) {
          memcpy(d, p, len);
          d[len] = 0;
          rc = add_search(dirs, &l, d);
        }
        p = c ? c + 1 : NULL;
      }
      break;
    }
  size_t k;
  json_t *dp;
  json_array_foreach(deps, k, dp) {
    const char *path = json_string_value(json_object_get(dp, "path"));
    snprintf(d, sizeof d, "%s", path);
    if ((sl = strrchr(d, '/')) && sl != d) {
      *sl = 0;
      if (rc == 0)
        rc = add_search(dirs, &l, d);
    }
  }
  size_t nbase = l.n;
  json_array_foreach(deps, k, dp) {
    const char *path = json_string_value(json_object_get(dp, "path"));
    for (size_t i = 0; i < nbase && rc == 0; i++) {
      size_t n = strlen(l.v[i]);
      if (strncmp(path, l.v[i], n) || path[n] != '/')
        continue;
      const char *rel = path + n + 1, *last = strrchr(rel, '/');
      for (const char *q = rel; last && q <= last && rc == 0; q++) {
        if (*q != '/')
          continue; /* each directory prefix of rel, under every search directory */
        for (size_t j = 0; j < nbase && rc == 0; j++)
          if (snprintf(d, sizeof d, "%s/%.*s", l.v[j], (int)(q - rel), rel) < (int)sizeof d)
            rc = add_dir(dirs, d);
      }
    }
  }
  for (size_t i = 0; i < l.n; i++)
    ag_free(l.v[i]);
  ag_vec_free(&l);
  return rc;
}

int ag__ptxc_store(const char *dir, const char key[65], const char *cu,
                   const char *const *args, long long started_ns, const char *depfile,
                   const char *ptx, size_t len) {
  char *dtext = NULL;
  size_t dlen = 0;
  char sha[65];
  json_t *deps = NULL, *dirs = json_array(), *m = NULL;
  char *js = NULL;
  ag_str p = AG_STR_INIT;
  int rc = dirs ? ag_mkdir_p(dir, 0755) : AG_ENOMEM;
  if (rc == 0)
    rc = ag_file_read(depfile, &dtext, &dlen);
  if (rc == 0)
    rc = ag_sha256_hex(ptx, len, sha);
  if (rc)
    goto out;
  deps = parse_deps(dtext);
  if (!deps || json_array_size(deps) == 0) {
    rc = AG_EPARSE;
    goto out;
  }
  rc = watch_search_dirs(dirs, cu, args, deps);
  /* a dependency or watched directory changed while nvcc ran (or just
   * before: file timestamps come from a coarse clock) may not be what nvcc
   * saw: store nothing */
  size_t k;
  json_t *dp;
  json_array_foreach(deps, k, dp) {
    if (rc == 0 && changed_since(json_string_value(json_object_get(dp, "path")), started_ns))
      rc = AG_EBUSY;
  }
  json_array_foreach(dirs, k, dp) {
    if (rc == 0 && changed_since(json_string_value(json_object_get(dp, "path")), started_ns))
      rc = AG_EBUSY;
  }
  if (rc)
    goto out;
  m = json_pack("{s:i,s:O,s:O,s:s}", "version", 2, "deps", deps, "dirs", dirs, "ptx_sha256",
                sha);
  js = m ? json_dumps(m, JSON_INDENT(1)) : NULL;
  ag_str_printf(&p, "%s/%s.ptx", dir, sha);
  if (!js || p.oom) {
    rc = AG_ENOMEM;
    goto out;
  }
  /* the PTX first: a manifest never names a PTX file that is not there */
  if ((rc = ag_file_write_atomic(ag_str_cstr(&p), ptx, len)))
    goto out;
  ag_str_clear(&p);
  ag_str_printf(&p, "%s/%s.json", dir, key);
  if (p.oom || (rc = ag_file_write_atomic(ag_str_cstr(&p), js, strlen(js))))
    goto out;
  trim(dir);
out:
  free(js);
  json_decref(m);
  json_decref(deps);
  json_decref(dirs);
  ag_free(dtext);
  ag_str_release(&p);
  return rc;
}
