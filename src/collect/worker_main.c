/*
 * worker_main.c — argus-worker, the multi-variant GPU worker (docs/probes.md).
 *
 * One process per device that runs many collections while keeping its CUDA
 * context: at start it opens the driver and retains the device's primary
 * context (ag_host_open, outside Argus), which is what makes a process's
 * first CUDA call slow; then, per job, it calls the harness's entry point
 * (argus_harness_main from the spec's "run_library", ARGUS_HARNESS_MAIN in
 * argus/host.h) in-process, with the job's Argus environment, working
 * directory and a log file as stdout/stderr. The harness's own ag_host_open
 * retains the same context again, so nothing is re-created between jobs.
 *
 * Protocol (stdin requests, stdout replies, one line each; the parent is
 * src/collect/worker.c): the worker first answers "ready" or "fail <why>".
 * "run <job file>" runs one job described by the file (lines "lib=",
 * "cwd=", "log=", "timeout=", "env=K=V", "arg=" in argv order) and answers
 * "done <status>" (the entry point's return value) and, when the context
 * was lost to a GPU fault, "lost" after it, then exits: the next job gets a
 * fresh worker. A job that hangs past its timeout is ended by SIGALRM (the
 * worker dies; the parent names the job). "quit" exits.
 *
 * libc + libdl + libargus_host only. Nothing here knows the harness.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "argus/host.h"

#define MAXV 256

static int reply_fd = -1;

static void reply(const char *fmt, const char *arg) {
  char buf[2048];
  int n = snprintf(buf, sizeof buf, fmt, arg ? arg : "");
  if (n < 0)
    return;
  if (n >= (int)sizeof buf)
    n = (int)sizeof buf - 1;
  /* replies are single lines */
  for (int i = 0; i < n - 1; i++)
    if (buf[i] == '\n')
      buf[i] = ' ';
  for (int off = 0; off < n;) {
    ssize_t w = write(reply_fd, buf + off, (size_t)(n - off));
    if (w <= 0 && errno != EINTR)
      return;
    if (w > 0)
      off += (int)w;
  }
}

typedef struct job {
  char *lib, *cwd, *log;
  double timeout;
  char *env[MAXV];
  int nenv;
  char *arg[MAXV];
  int narg;
} job;

static void job_free(job *j) {
  free(j->lib);
  free(j->cwd);
  free(j->log);
  for (int i = 0; i < j->nenv; i++)
    free(j->env[i]);
  for (int i = 0; i < j->narg; i++)
    free(j->arg[i]);
  memset(j, 0, sizeof *j);
}

static int job_read(const char *path, job *j, char *why, size_t n) {
  memset(j, 0, sizeof *j);
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(why, n, "cannot open the job file '%s': %s", path, strerror(errno));
    return -1;
  }
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  int rc = 0;
  while ((len = getline(&line, &cap, f)) > 0) {
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
      line[--len] = 0;
    char *v = strchr(line, '=');
    if (!v)
      continue;
    *v++ = 0;
    if (!strcmp(line, "lib"))
      j->lib = strdup(v);
    else if (!strcmp(line, "cwd"))
      j->cwd = strdup(v);
    else if (!strcmp(line, "log"))
      j->log = strdup(v);
    else if (!strcmp(line, "timeout"))
      j->timeout = atof(v);
    else if (!strcmp(line, "env") && j->nenv < MAXV)
      j->env[j->nenv++] = strdup(v);
    else if (!strcmp(line, "arg") && j->narg < MAXV - 1)
      j->arg[j->narg++] = strdup(v);
  }
  free(line);
  fclose(f);
  if (!j->lib || !j->log || !j->narg) {
    snprintf(why, n, "the job file '%s' lacks lib=, log= or arg=", path);
    rc = -1;
  }
  return rc;
}

/* One job: the entry point with the job's environment, directory and log. */
static int run_job(const job *j, int *status, char *why, size_t n) {
  void *h = dlopen(j->lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(why, n, "cannot load the harness library '%s': %s", j->lib, dlerror());
    return -1;
  }
  ag_harness_main_fn entry = NULL;
  *(void **)(&entry) = dlsym(h, ARGUS_HARNESS_ENTRY);
  if (!entry) {
    snprintf(why, n, "'%s' does not export %s (build the harness with "
                     "-DARGUS_HARNESS_LIBRARY and ARGUS_HARNESS_MAIN)",
             j->lib, ARGUS_HARNESS_ENTRY);
    return -1;
  }
  int here = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (j->cwd && chdir(j->cwd)) {
    snprintf(why, n, "cannot enter '%s': %s", j->cwd, strerror(errno));
    if (here >= 0)
      close(here);
    return -1;
  }
  int logfd = open(j->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (logfd < 0) {
    snprintf(why, n, "cannot create the log '%s': %s", j->log, strerror(errno));
    if (here >= 0) {
      if (fchdir(here)) { /* stays where the job wanted */
      }
      close(here);
    }
    return -1;
  }
  char *names[MAXV];
  int nn = 0;
  for (int i = 0; i < j->nenv; i++) {
    char *eq = strchr(j->env[i], '=');
    if (!eq)
      continue;
    names[nn] = strndup(j->env[i], (size_t)(eq - j->env[i]));
    if (names[nn]) {
      setenv(names[nn], eq + 1, 1);
      nn++;
    }
  }
  char *argv[MAXV];
  for (int i = 0; i < j->narg; i++)
    argv[i] = strdup(j->arg[i]); /* the harness may edit its argv */
  argv[j->narg] = NULL;
  fflush(stdout);
  fflush(stderr);
  int o1 = dup(1), o2 = dup(2);
  dup2(logfd, 1);
  dup2(logfd, 2);
  optind = 0; /* a harness using getopt starts afresh */
  if (j->timeout > 0)
    alarm((unsigned)ceil(j->timeout));
  *status = entry(j->narg, argv);
  alarm(0);
  fflush(stdout);
  fflush(stderr);
  dup2(o1, 1);
  dup2(o2, 2);
  close(o1);
  close(o2);
  close(logfd);
  for (int i = 0; i < j->narg; i++)
    free(argv[i]);
  for (int i = 0; i < nn; i++) {
    unsetenv(names[i]);
    free(names[i]);
  }
  if (here >= 0) {
    if (fchdir(here)) {
    }
    close(here);
  }
  return 0;
}

int main(int argc, char **argv) {
  (void)argc;
  (void)argv;
  /* replies go to the original stdout; the harnesses' output goes to logs */
  reply_fd = dup(1);
  if (reply_fd < 0)
    return 1;
  int devnull = open("/dev/null", O_WRONLY);
  if (devnull >= 0) {
    dup2(devnull, 1);
    close(devnull);
  }
  unsetenv("ARGUS_COLLECT"); /* the keeper session is not a collection */
  ag_host *keeper = NULL;
  if (ag_host_open(&keeper)) {
    reply("fail %s\n", ag_host_errmsg(keeper));
    ag_host_close(keeper);
    return 1;
  }
  reply("ready%s\n", NULL);
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  int rc = 0;
  while ((len = getline(&line, &cap, stdin)) > 0) {
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
      line[--len] = 0;
    if (!strcmp(line, "quit"))
      break;
    if (strncmp(line, "run ", 4)) {
      reply("fail unknown request '%s'\n", line);
      continue;
    }
    job j;
    char why[1024];
    int status = 0;
    if (job_read(line + 4, &j, why, sizeof why) || run_job(&j, &status, why, sizeof why)) {
      job_free(&j);
      reply("fail %s\n", why);
      continue;
    }
    job_free(&j);
    /* a GPU fault leaves the context unusable: say so and make way for a
     * fresh worker */
    if (ag_host_sync(keeper)) {
      char buf[64];
      snprintf(buf, sizeof buf, "done %d lost\n", status);
      reply("%s", buf);
      rc = 2;
      break;
    }
    char buf[32];
    snprintf(buf, sizeof buf, "done %d\n", status);
    reply("%s", buf);
  }
  free(line);
  if (rc != 2)
    ag_host_close(keeper);
  return rc;
}
