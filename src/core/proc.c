/*
 * proc.c — run a program with an argv (posix_spawn, never a shell) in its own
 * process group, optionally capturing its output and killing the whole group
 * when a timeout expires. Collect tasks run user harnesses through this, so a
 * harness that hangs or crashes fails its task with the reason.
 */
#define _GNU_SOURCE
#include "argus/core.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

char *ag_which(const char *prog) {
  if (strchr(prog, '/'))
    return access(prog, X_OK) == 0 ? ag_strdup(prog) : NULL;
  const char *path = getenv("PATH");
  if (!path)
    path = "/usr/local/bin:/usr/bin:/bin";
  ag_str cand = AG_STR_INIT;
  for (const char *p = path;;) {
    const char *e = strchr(p, ':');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    ag_str_clear(&cand);
    if (n)
      ag_str_append(&cand, p, n);
    else
      ag_str_putc(&cand, '.');
    ag_str_putc(&cand, '/');
    ag_str_puts(&cand, prog);
    struct stat st;
    if (!cand.oom && stat(cand.p, &st) == 0 && S_ISREG(st.st_mode) &&
        access(cand.p, X_OK) == 0)
      return ag_str_detach(&cand);
    if (!e)
      break;
    p = e + 1;
  }
  ag_str_release(&cand);
  return NULL;
}

/* Environment = base (envp or environ) minus keys overridden by env_add. */
static char **build_env(const ag_proc_opts *o) {
  char *const *base = o->envp ? (char *const *)o->envp : environ;
  size_t nb = 0, na = 0;
  while (base[nb])
    nb++;
  if (o->env_add)
    while (o->env_add[na])
      na++;
  char **env = ag_calloc(nb + na + 1, sizeof *env);
  if (!env)
    return NULL;
  size_t k = 0;
  for (size_t i = 0; i < nb; i++) {
    const char *eq = strchr(base[i], '=');
    size_t kl = eq ? (size_t)(eq - base[i]) : strlen(base[i]);
    int overridden = 0;
    for (size_t j = 0; j < na && !overridden; j++)
      overridden = strncmp(o->env_add[j], base[i], kl) == 0 && o->env_add[j][kl] == '=';
    if (!overridden)
      env[k++] = base[i];
  }
  for (size_t j = 0; j < na; j++)
    env[k++] = (char *)o->env_add[j];
  env[k] = NULL;
  return env;
}

static void drain(int *fd, ag_str *into) {
  char buf[8192];
  for (;;) {
    ssize_t n = read(*fd, buf, sizeof buf);
    if (n > 0) {
      ag_str_append(into, buf, (size_t)n);
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return;
    close(*fd); /* EOF or error */
    *fd = -1;
    return;
  }
}

int ag_proc_run(const ag_proc_opts *o, ag_proc_result *res) {
  memset(res, 0, sizeof *res);
  if (!o->argv || !o->argv[0])
    return AG_EINVAL;
  int rc = 0;
  char *prog = ag_which(o->argv[0]);
  char **env = NULL, *outp = NULL, *errp = NULL, *inp = NULL;
  const char *out_path = o->stdout_path, *err_path = o->stderr_path, *in_path = o->stdin_path;
  int pout[2] = {-1, -1}, perr[2] = {-1, -1};
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  int fa_ok = 0, at_ok = 0;
  if (!prog)
    return AG_ENOTFOUND;
  if (o->cwd) { /* the child changes directory before it opens or execs these */
    char *abs = prog[0] == '/' ? NULL : ag_path_abs(prog);
    if (abs) {
      ag_free(prog);
      prog = abs;
    }
    outp = o->stdout_path ? ag_path_abs(o->stdout_path) : NULL;
    errp = o->stderr_path ? ag_path_abs(o->stderr_path) : NULL;
    inp = o->stdin_path ? ag_path_abs(o->stdin_path) : NULL;
    if (prog[0] != '/' || (o->stdout_path && !outp) || (o->stderr_path && !errp) ||
        (o->stdin_path && !inp)) {
      rc = AG_ENOMEM;
      goto out;
    }
    out_path = outp ? outp : out_path;
    err_path = errp ? errp : err_path;
    in_path = inp ? inp : in_path;
  }
  if (!(env = build_env(o))) {
    rc = AG_ENOMEM;
    goto out;
  }
  if ((o->capture_out && pipe2(pout, O_CLOEXEC)) ||
      (o->capture_err && pipe2(perr, O_CLOEXEC))) {
    rc = AG_EIO;
    goto out;
  }
  posix_spawn_file_actions_init(&fa);
  fa_ok = 1;
  posix_spawnattr_init(&at);
  at_ok = 1;
  posix_spawnattr_setpgroup(&at, 0);
  sigset_t def;
  sigemptyset(&def);
  sigaddset(&def, SIGPIPE);
  sigaddset(&def, SIGINT);
  sigaddset(&def, SIGTERM);
  posix_spawnattr_setsigdefault(&at, &def);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);
  if (o->cwd)
    posix_spawn_file_actions_addchdir_np(&fa, o->cwd);
  if (o->capture_out)
    posix_spawn_file_actions_adddup2(&fa, pout[1], 1);
  else if (out_path)
    posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (o->capture_err)
    posix_spawn_file_actions_adddup2(&fa, perr[1], 2);
  else if (err_path && out_path && !o->capture_out && strcmp(err_path, out_path) == 0)
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
  else if (err_path)
    posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 0, in_path ? in_path : "/dev/null", O_RDONLY, 0);

  uint64_t t0 = ag_now_ns();
  pid_t pid;
  int e = posix_spawn(&pid, prog, &fa, &at, (char *const *)o->argv, env);
  if (e) {
    rc = e == ENOENT ? AG_ENOTFOUND : AG_ECHILD;
    goto out;
  }
  if (pout[1] >= 0) {
    close(pout[1]);
    pout[1] = -1;
    fcntl(pout[0], F_SETFL, O_NONBLOCK);
  }
  if (perr[1] >= 0) {
    close(perr[1]);
    perr[1] = -1;
    fcntl(perr[0], F_SETFL, O_NONBLOCK);
  }
  uint64_t deadline = o->timeout_s > 0 ? t0 + (uint64_t)(o->timeout_s * 1e9) : 0;
  int status = 0, reaped = 0;
  uint64_t reaped_at = 0;
  int sleep_us = 50;
  for (;;) {
    if (!reaped) {
      pid_t w = waitpid(pid, &status, WNOHANG);
      if (w == pid) {
        reaped = 1;
        reaped_at = ag_now_ns();
      }
    }
    int open_pipes = (pout[0] >= 0) + (perr[0] >= 0);
    if (reaped && (!open_pipes || ag_now_ns() - reaped_at > 1000000000ull))
      break; /* a grandchild holding a pipe open does not keep us waiting */
    if (!reaped && deadline && ag_now_ns() > deadline) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      reaped = 1;
      reaped_at = ag_now_ns();
      res->timed_out = 1;
    }
    if (open_pipes) {
      struct pollfd pf[2];
      int np = 0;
      if (pout[0] >= 0)
        pf[np++] = (struct pollfd){pout[0], POLLIN, 0};
      if (perr[0] >= 0)
        pf[np++] = (struct pollfd){perr[0], POLLIN, 0};
      poll(pf, (nfds_t)np, reaped ? 10 : 5);
      if (pout[0] >= 0)
        drain(&pout[0], o->capture_out);
      if (perr[0] >= 0)
        drain(&perr[0], o->capture_err);
    } else {
      struct timespec ts = {0, sleep_us * 1000L};
      nanosleep(&ts, NULL);
      if (sleep_us < 5000)
        sleep_us *= 2;
    }
  }
  res->wall_s = (double)(ag_now_ns() - t0) / 1e9;
  if (WIFEXITED(status)) {
    res->exited = 1;
    res->exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    res->signaled = 1;
    res->signo = WTERMSIG(status);
  }
out:
  for (int i = 0; i < 2; i++) {
    if (pout[i] >= 0)
      close(pout[i]);
    if (perr[i] >= 0)
      close(perr[i]);
  }
  if (fa_ok)
    posix_spawn_file_actions_destroy(&fa);
  if (at_ok)
    posix_spawnattr_destroy(&at);
  ag_free(env);
  ag_free(prog);
  ag_free(outp);
  ag_free(errp);
  ag_free(inp);
  return rc;
}

void ag_proc_describe(const ag_proc_result *r, ag_str *out) {
  if (r->timed_out)
    ag_str_printf(out, "timed out after %.1f s", r->wall_s);
  else if (r->signaled)
    ag_str_printf(out, "killed by signal %d (%s)", r->signo, strsignal(r->signo));
  else if (r->exited)
    ag_str_printf(out, "exit %d", r->exit_code);
  else
    ag_str_puts(out, "unknown status");
}
