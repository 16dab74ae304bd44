/*
 * worker.c — the parent side of the multi-variant GPU worker (argus-worker,
 * worker_main.c; docs/probes.md): starts the worker process, hands it one
 * collection at a time and judges each run exactly as a harness process of
 * its own would be judged (collect_int.h), so a collection's evidence,
 * errors and log are the same whichever way it ran.
 *
 * The worker starts at ag_worker_start without being waited for: its CUDA
 * initialization overlaps whatever the caller does next (compiling the
 * variants). Failure isolation: a job that crashes the worker, hangs past
 * its timeout (the worker's alarm, or failing that ours: the process group
 * is killed) or loses the CUDA context to a GPU fault fails alone; the next
 * job starts a fresh worker. The control channel is a socket pair (no
 * SIGPIPE when the worker dies: MSG_NOSIGNAL). One ag_worker is used by one
 * thread at a time (the scheduler's GPU lane).
 */
#define _GNU_SOURCE
#include "argus/collect.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collect_int.h"

extern char **environ;

struct ag_worker {
  char *exe;
  pid_t pid;      /* 0: not running */
  int fd;         /* our end of the socket pair */
  int ready;      /* the worker said "ready" */
  double start_timeout_s;
  int device;     /* CUDA_VISIBLE_DEVICES of the worker, -1: inherited */
  char buf[4096]; /* unread reply bytes */
  size_t nbuf;
  int starts;     /* processes started so far */
  int jobs;
};

static char *find_exe(const char *given) {
  if (given && *given)
    return ag_strdup(given);
  const char *e = getenv("ARGUS_WORKER");
  if (e && *e)
    return ag_strdup(e);
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (slash) {
      snprintf(slash + 1, sizeof self - (size_t)(slash + 1 - self), "argus-worker");
      if (access(self, X_OK) == 0)
        return ag_strdup(self);
    }
  }
  /* installed: <prefix>/bin/argus-worker beside libargus (docs/api.md) */
  char *inst = ag_install_path("bin/argus-worker");
  if (inst && access(inst, X_OK) == 0)
    return inst;
  ag_free(inst);
#ifdef ARGUS_WORKER_PATH
  if (access(ARGUS_WORKER_PATH, X_OK) == 0)
    return ag_strdup(ARGUS_WORKER_PATH);
#endif
  return NULL;
}

static void reap(ag_worker *w, ag_proc_result *pr, int kill_it) {
  if (w->fd >= 0)
    close(w->fd);
  w->fd = -1;
  if (w->pid > 0) {
    if (kill_it)
      kill(-w->pid, SIGKILL);
    int st = 0;
    while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR)
      ;
    if (pr) {
      pr->exited = WIFEXITED(st);
      pr->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 0;
      pr->signaled = WIFSIGNALED(st);
      pr->signo = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    }
  }
  w->pid = 0;
  w->ready = 0;
  w->nbuf = 0;
}

static int spawn(ag_worker *w, ag_str *why) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
    ag_str_printf(why, "cannot create the worker's channel: %s", strerror(errno));
    return AG_EIO;
  }
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&at);
  posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
  posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
  posix_spawnattr_setpgroup(&at, 0);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
  char *argv[] = {w->exe, NULL};
  /* the environment, with the worker's device */
  size_t n = 0;
  while (environ[n])
    n++;
  char **env = ag_calloc(n + 2, sizeof *env), dev[48];
  if (!env) {
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(sv[0]);
    close(sv[1]);
    return AG_ENOMEM;
  }
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (w->device < 0 || strncmp(environ[i], "CUDA_VISIBLE_DEVICES=", 21))
      env[k++] = environ[i];
  if (w->device >= 0) {
    snprintf(dev, sizeof dev, "CUDA_VISIBLE_DEVICES=%d", w->device);
    env[k++] = dev;
  }
  env[k] = NULL;
  pid_t pid = 0;
  int e = posix_spawn(&pid, w->exe, &fa, &at, argv, env);
  ag_free(env);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  close(sv[1]);
  if (e) {
    close(sv[0]);
    ag_str_printf(why, "cannot start the GPU worker '%s': %s", w->exe, strerror(e));
    return AG_ECHILD;
  }
  w->pid = pid;
  w->fd = sv[0];
  w->nbuf = 0;
  w->ready = 0;
  w->starts++;
  return 0;
}

int ag_worker_start(const ag_worker_opts *o, ag_worker **out, ag_str *why) {
  *out = NULL;
  ag_worker *w = ag_calloc(1, sizeof *w);
  if (!w)
    return AG_ENOMEM;
  w->fd = -1;
  w->start_timeout_s = o && o->start_timeout_s > 0 ? o->start_timeout_s : 120;
  w->device = o ? o->device : -1;
  w->exe = find_exe(o ? o->exe : NULL);
  if (!w->exe) {
    ag_str_printf(why, "cannot find the GPU worker program argus-worker (beside argus, or "
                       "set ARGUS_WORKER)");
    ag_free(w);
    return AG_ENOTFOUND;
  }
  int rc = spawn(w, why);
  if (rc) {
    ag_free(w->exe);
    ag_free(w);
    return rc;
  }
  *out = w;
  return 0;
}

/* Reads one reply line within timeout_s. Returns 0 and the line (owned by w,
 * valid until the next call), AG_ETIMEOUT, or AG_ECHILD when the worker
 * closed the channel (it died). */
static int read_line(ag_worker *w, double timeout_s, const char **line) {
  uint64_t end = ag_now_ns() + (uint64_t)(timeout_s * 1e9);
  for (;;) {
    char *nl = memchr(w->buf, '\n', w->nbuf);
    if (nl) {
      static __thread char out[sizeof w->buf];
      size_t n = (size_t)(nl - w->buf);
      memcpy(out, w->buf, n);
      out[n] = 0;
      memmove(w->buf, nl + 1, w->nbuf - n - 1);
      w->nbuf -= n + 1;
      *line = out;
      return 0;
    }
    if (w->nbuf == sizeof w->buf) /* a line longer than the buffer: keep its end */
      w->nbuf = 0;
    uint64_t now = ag_now_ns();
    if (now >= end)
      return AG_ETIMEOUT;
    struct pollfd p = {w->fd, POLLIN, 0};
    int ms = (int)((end - now) / 1000000) + 1;
    int r = poll(&p, 1, ms);
    if (r < 0 && errno == EINTR)
      continue;
    if (r == 0)
      continue;
    ssize_t n = recv(w->fd, w->buf + w->nbuf, sizeof w->buf - w->nbuf, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return AG_ECHILD;
    w->nbuf += (size_t)n;
  }
}

static int send_line(ag_worker *w, const char *text) {
  size_t n = strlen(text);
  while (n) {
    ssize_t s = send(w->fd, text, n, MSG_NOSIGNAL);
    if (s < 0 && errno == EINTR)
      continue;
    if (s <= 0)
      return AG_ECHILD;
    text += s;
    n -= (size_t)s;
  }
  return 0;
}

/* Waits for "ready" (once per worker process). */
static int await_ready(ag_worker *w, ag_str *why) {
  if (w->ready)
    return 0;
  const char *line = NULL;
  int rc = read_line(w, w->start_timeout_s, &line);
  if (rc == 0 && !strcmp(line, "ready")) {
    w->ready = 1;
    return 0;
  }
  if (rc == 0 && !strncmp(line, "fail ", 5)) {
    ag_str_printf(why, "the GPU worker could not start: %s", line + 5);
    rc = strstr(line, "no CUDA") || strstr(line, "no CUDA device") || strstr(line, "NO_DEVICE")
             ? AG_ENODEV
             : AG_ECUDA;
  } else if (rc == AG_ETIMEOUT) {
    ag_str_printf(why, "the GPU worker did not start within %.0f s", w->start_timeout_s);
  } else {
    ag_str_printf(why, "the GPU worker exited before it was ready");
    rc = AG_ECHILD;
  }
  reap(w, NULL, 1);
  return rc;
}

static char *find_lib(const char *lib) {
  if (strchr(lib, '/'))
    return access(lib, R_OK) == 0 ? ag_strdup(lib) : NULL;
  const char *path = getenv("PATH");
  for (const char *p = path; p && *p;) {
    const char *e = strchr(p, ':');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    ag_str c = AG_STR_INIT;
    ag_str_printf(&c, "%.*s/%s", (int)n, p, lib);
    if (!c.oom && access(ag_str_cstr(&c), R_OK) == 0)
      return ag_str_detach(&c);
    ag_str_release(&c);
    p += n + (e ? 1 : 0);
  }
  return NULL;
}

static int write_job(const char *path, const char *lib, const ag_trace_run_opts *o,
                     const char *logp, ag_str e[], int ne) {
  ag_str j = AG_STR_INIT;
  char abs[4096];
  const char *cwd = o->cwd;
  if (!cwd && getcwd(abs, sizeof abs))
    cwd = abs;
  ag_str_printf(&j, "lib=%s\nlog=%s\ntimeout=%.3f\n", lib, logp,
                o->timeout_s > 0 ? o->timeout_s : 600.0);
  if (cwd)
    ag_str_printf(&j, "cwd=%s\n", cwd);
  for (int i = 0; i < ne; i++)
    ag_str_printf(&j, "env=%s\n", ag_str_cstr(&e[i]));
  for (int i = 0; o->argv[i]; i++)
    ag_str_printf(&j, "arg=%s\n", o->argv[i]);
  int rc = j.oom ? AG_ENOMEM : ag_file_write_atomic(path, j.p, j.len);
  ag_str_release(&j);
  return rc;
}

static int has_newline(const char *s) { return s && strchr(s, '\n'); }

int ag_worker_collect(ag_worker *w, const char *library, const ag_trace_run_opts *o,
                      ag_trace_run_result *res, ag_str *why) {
  memset(res, 0, sizeof *res);
  ag_str ev = AG_STR_INIT, herr = AG_STR_INIT, logp = AG_STR_INIT, jobp = AG_STR_INIT,
         req = AG_STR_INIT;
  ag_str e[AG__RUN_ENV_MAX];
  int ne = 0;
  char *lib = NULL;
  uint64_t t0 = ag_now_ns();
  int rc = ag__run_env(o, e, &ne);
  if (rc)
    goto out;
  for (int i = 0; o->argv[i]; i++)
    if (has_newline(o->argv[i])) {
      ag_str_printf(why, "argument %d of the harness contains a newline", i);
      rc = AG_EINVAL;
      goto out;
    }
  if (!(lib = find_lib(library))) {
    ag_str_printf(why, "cannot find the harness library '%s' (a bare name is looked up in "
                       "PATH)",
                  library);
    rc = AG_ENOTFOUND;
    goto out;
  }
  if ((rc = ag__run_prepare(o, &ev, &herr, &logp, why)))
    goto out;
  ag_str_printf(&jobp, "%s/worker-job.txt", o->out_dir);
  if (jobp.oom || (rc = write_job(ag_str_cstr(&jobp), lib, o, ag_str_cstr(&logp), e, ne))) {
    ag_str_printf(why, "cannot write the worker's job file in '%s'", o->out_dir);
    rc = rc ? rc : AG_ENOMEM;
    goto out;
  }
  if (!w->pid && (rc = spawn(w, why)))
    goto out;
  if ((rc = await_ready(w, why)))
    goto out;
  ag_str_printf(&req, "run %s\n", ag_str_cstr(&jobp));
  double limit = (o->timeout_s > 0 ? o->timeout_s : 600.0) + 30.0;
  const char *line = NULL;
  res->log_path = ag_str_detach(&logp);
  rc = send_line(w, ag_str_cstr(&req));
  if (!rc)
    rc = read_line(w, limit, &line);
  w->jobs++;
  if (rc == 0 && !strncmp(line, "fail ", 5)) {
    ag_str_printf(why, "the GPU worker could not run the harness: %s", line + 5);
    rc = AG_EINVAL;
    goto out;
  }
  if (rc == 0 && !strncmp(line, "done ", 5)) {
    res->proc.exited = 1;
    res->proc.exit_code = atoi(line + 5);
    int lost = strstr(line, " lost") != NULL;
    res->proc.wall_s = (double)(ag_now_ns() - t0) / 1e9;
    rc = ag__run_outcome(ag_str_cstr(&ev), ag_str_cstr(&herr), res,
                         o->timeout_s > 0 ? o->timeout_s : 600.0, 0, why);
    if (lost) {
      if (!rc) /* the job ended, and then the context was found broken */
        ag_str_printf(why, "the GPU context was lost after this run");
      reap(w, NULL, 1);
      if (!rc) {
        rc = AG_ECUDA;
        ag_free(res->evidence_path);
        res->evidence_path = NULL;
        ag_free(res->timing_path);
        res->timing_path = NULL;
      }
    }
    goto out;
  }
  /* the worker died or hung during this job: it was this job's doing */
  int timed_out = rc == AG_ETIMEOUT;
  ag_proc_result pr;
  memset(&pr, 0, sizeof pr);
  reap(w, &pr, 1);
  res->proc = pr;
  res->proc.timed_out = timed_out || (pr.signaled && pr.signo == SIGALRM);
  res->proc.wall_s = (double)(ag_now_ns() - t0) / 1e9;
  if (!res->proc.timed_out && pr.exited) {
    /* the harness called exit() (or a sanitizer ended the worker on a
     * crash): the worker went with it */
    ag_str_printf(why, "the GPU worker ended (exit %d) while argus_harness_main ran: a "
                       "harness run by the worker must return, not call exit()",
                  pr.exit_code);
    if (res->log_path)
      ag_str_printf(why, "; see %s", res->log_path);
    rc = AG_ECHILD;
    goto out;
  }
  /* a harness function that crashes after its close took the worker with
   * it: a crash in the harness, never an exit-time teardown (0: no late exit) */
  rc = ag__run_outcome(ag_str_cstr(&ev), ag_str_cstr(&herr), res,
                       o->timeout_s > 0 ? o->timeout_s : 600.0, 0, why);
  if (!rc) /* cannot happen: a dead worker wrote no verdict */
    rc = AG_ECHILD;
out:
  for (int i = 0; i < AG__RUN_ENV_MAX; i++)
    ag_str_release(&e[i]);
  ag_str_release(&ev);
  ag_str_release(&herr);
  ag_str_release(&logp);
  ag_str_release(&jobp);
  ag_str_release(&req);
  ag_free(lib);
  return rc;
}

int ag_worker_stats(const ag_worker *w, int *starts, int *jobs) {
  if (starts)
    *starts = w ? w->starts : 0;
  if (jobs)
    *jobs = w ? w->jobs : 0;
  return 0;
}

void ag_worker_stop(ag_worker *w) {
  if (!w)
    return;
  if (w->pid > 0) {
    send_line(w, "quit\n");
    /* give it a moment to release the device, then make sure */
    for (int i = 0; i < 200; i++) {
      int st;
      pid_t r = waitpid(w->pid, &st, WNOHANG);
      if (r == w->pid) {
        w->pid = 0;
        break;
      }
      usleep(10000);
    }
    reap(w, NULL, 1);
  }
  if (w->fd >= 0)
    close(w->fd);
  ag_free(w->exe);
  ag_free(w);
}
