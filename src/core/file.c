/*
 * file.c — whole-file reads, crash-safe writes (temp file, fsync, rename,
 * directory fsync), mkdir -p, why a path cannot be read, and where an
 * installed Argus keeps its files (relative to the running binary).
 */
#define _GNU_SOURCE /* dladdr */
#include "argus/core.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int err_from_errno(int e) {
  switch (e) {
  case ENOENT: return AG_ENOTFOUND;
  case EEXIST: return AG_EEXISTS;
  case EISDIR: return AG_EISDIR;
  case ENOMEM: return AG_ENOMEM;
  default: return AG_EIO;
  }
}

char *ag_install_path(const char *rel) {
  Dl_info info;
  if (!dladdr((void *)ag_install_path, &info) || !info.dli_fname)
    return NULL;
  char *self = realpath(info.dli_fname, NULL);
  if (!self)
    return NULL;
  char *slash = strrchr(self, '/');
  ag_str p = AG_STR_INIT;
  if (slash) {
    *slash = 0;
    ag_str_printf(&p, "%s/../%s", self, rel);
  }
  free(self);
  if (!p.p || p.oom || access(p.p, F_OK) != 0) {
    ag_str_release(&p);
    return NULL;
  }
  return ag_str_detach(&p);
}

static const char *errno_text(int e) {
  return e == ENOENT ? "no such file" : e == EACCES ? "permission denied" : strerror(e);
}

int ag_file_problem(const char *path, const char **why) {
  struct stat st;
  *why = NULL;
  if (stat(path, &st) != 0) {
    int e = errno;
    *why = errno_text(e);
    return e == ENOENT ? AG_ENOTFOUND : AG_EIO;
  }
  if (S_ISDIR(st.st_mode)) {
    *why = "it is a directory, not a file";
    return AG_EISDIR;
  }
  if (access(path, R_OK) != 0) {
    *why = errno_text(errno);
    return AG_EIO;
  }
  return 0;
}

int ag_file_read(const char *path, char **data, size_t *len) {
  *data = NULL;
  *len = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return err_from_errno(errno);
  ag_str s = AG_STR_INIT;
  int rc = 0;
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    rc = AG_EISDIR;
    goto out;
  }
  if (fstat(fd, &st) == 0 && st.st_size > 0 && ag_str_reserve(&s, (size_t)st.st_size)) {
    rc = AG_ENOMEM;
    goto out;
  }
  for (;;) {
    if (ag_str_reserve(&s, 65536)) {
      rc = AG_ENOMEM;
      goto out;
    }
    ssize_t n = read(fd, s.p + s.len, s.cap - s.len - 1);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      rc = AG_EIO;
      goto out;
    }
    if (n == 0)
      break;
    s.len += (size_t)n;
    s.p[s.len] = 0;
  }
  *len = s.len;
  *data = ag_str_detach(&s);
  if (!*data)
    rc = AG_ENOMEM;
out:
  close(fd);
  ag_str_release(&s);
  return rc;
}

static int write_all(int fd, const void *data, size_t len) {
  const char *p = data;
  while (len) {
    ssize_t n = write(fd, p, len);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return AG_EIO;
    }
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

int ag_file_write_atomic(const char *path, const void *data, size_t len) {
  ag_str tmp = AG_STR_INIT;
  ag_str_printf(&tmp, "%s.tmp.%ld", path, (long)getpid());
  if (tmp.oom)
    return AG_ENOMEM;
  int rc = 0;
  int fd = open(tmp.p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    rc = err_from_errno(errno);
    goto out;
  }
  rc = write_all(fd, data, len);
  if (!rc && fsync(fd) != 0)
    rc = AG_EIO;
  close(fd);
  if (!rc && rename(tmp.p, path) != 0)
    rc = err_from_errno(errno);
  if (rc) {
    unlink(tmp.p);
    goto out;
  }
  {
    char *dcopy = ag_strdup(path);
    if (dcopy) {
      int dfd = open(dirname(dcopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
      }
      ag_free(dcopy);
    }
  }
out:
  ag_str_release(&tmp);
  return rc;
}

char *ag_path_abs(const char *path) {
  if (!path)
    return NULL;
  if (path[0] == '/')
    return ag_strdup(path);
  char cwd[4096];
  if (!getcwd(cwd, sizeof cwd))
    return NULL;
  ag_str s = AG_STR_INIT;
  ag_str_printf(&s, "%s/%s", cwd, path);
  if (s.oom) {
    ag_str_release(&s);
    return NULL;
  }
  return ag_str_detach(&s);
}

int ag_remove_tree(const char *path) {
  struct stat sb;
  if (lstat(path, &sb) != 0)
    return errno == ENOENT ? 0 : -1;
  if (!S_ISDIR(sb.st_mode))
    return unlink(path);
  DIR *d = opendir(path);
  if (!d)
    return -1;
  int rc = 0;
  struct dirent *de;
  char sub[4096];
  while ((de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
      continue;
    if (snprintf(sub, sizeof sub, "%s/%s", path, de->d_name) >= (int)sizeof sub ||
        ag_remove_tree(sub) != 0)
      rc = -1;
  }
  closedir(d);
  return rmdir(path) == 0 ? rc : -1;
}

int ag_mkdir_p(const char *path, int mode) {
  char *p = ag_strdup(path);
  if (!p)
    return AG_ENOMEM;
  int rc = 0;
  for (char *s = p + 1;; s++) {
    if (*s == '/' || *s == 0) {
      char c = *s;
      *s = 0;
      if (mkdir(p, (mode_t)mode) != 0 && errno != EEXIST) {
        rc = err_from_errno(errno);
        break;
      }
      *s = c;
      if (!c)
        break;
    }
  }
  ag_free(p);
  return rc;
}
