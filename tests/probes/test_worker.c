/*
 * test_worker.c — the multi-variant GPU worker without a GPU: a stand-in
 * driver (fake_cuda.c, through ARGUS_LIBCUDA) and a harness library whose
 * behaviour each job chooses (fake_harness.c). Many jobs share one worker
 * process; a job that fails, crashes the worker, calls exit(), hangs past
 * its timeout or loses the CUDA context fails alone, with the reason, and
 * the next job runs (in a fresh worker where the old one died). A worker
 * without a driver, a missing worker program or library, and a library
 * without the entry point are errors that say so. Each verdict is checked
 * against the files the job left: evidence and log for a success, never
 * evidence for a failure.
 */
#include "check.h"

#include <unistd.h>

#include "argus/collect.h"
#include "../trace/trace_util.h"

static char lib[1024], fake[1024], module[1100];
static char *dir;

static char *scratch_dir(const char *tag) {
  char buf[512];
  snprintf(buf, sizeof buf, "/tmp/argus-%s-XXXXXX", tag);
  char *d = mkdtemp(buf);
  return d ? ag_strdup(d) : NULL;
}

static int job(ag_worker *w, const char *mode, double timeout, ag_str *why, int *exit_code) {
  static int n;
  char out[1200];
  snprintf(out, sizeof out, "%s/job%d", dir, n++);
  const char *argv[] = {"fake_harness", mode, module, NULL};
  ag_trace_run_opts o;
  memset(&o, 0, sizeof o);
  o.argv = argv;
  o.cubin_path = module;
  o.out_dir = out;
  o.timeout_s = timeout;
  o.device = -1;
  ag_trace_run_result res;
  ag_str_clear(why);
  int rc = ag_worker_collect(w, lib, &o, &res, why);
  if (exit_code)
    *exit_code = res.proc.exited ? res.proc.exit_code : -1;
  if (rc == 0) { /* the verdict matches the files */
    CHECK(res.evidence_path && access(res.evidence_path, R_OK) == 0);
    CHECK(res.log_path && access(res.log_path, R_OK) == 0);
    char he[1300];
    snprintf(he, sizeof he, "%s/host-error.txt", out);
    CHECK(access(he, F_OK) != 0);
  } else if (res.evidence_path) {
    CHECK(0); /* a failed job never hands out evidence */
  }
  ag_trace_run_result_release(&res);
  return rc;
}

TEST(jobs_share_one_worker_and_fail_alone) {
  const char *bd = getenv("ARGUS_BUILD_DIR");
  snprintf(lib, sizeof lib, "%s/tests/probes/libfake_harness.so", bd ? bd : "build");
  snprintf(fake, sizeof fake, "%s/tests/probes/libfake_cuda.so", bd ? bd : "build");
  dir = scratch_dir("worker");
  snprintf(module, sizeof module, "%s/module.cubin", dir);
  CHECK_EQ_INT(ag_file_write_atomic(module, "fake", 4), 0);
  setenv("ARGUS_LIBCUDA", fake, 1);
  setenv("ARGUS_TRACE_BUDGET_MB", "4", 1);
  ag_worker *w = NULL;
  ag_str why = AG_STR_INIT;
  CHECK_EQ_INT(ag_worker_start(NULL, &w, &why), 0);
  if (!w)
    return;
  int starts = 0, jobs = 0, code = 0;
  CHECK_EQ_INT(job(w, "ok", 30, &why, &code), 0);
  CHECK_EQ_INT(code, 0);
  CHECK_EQ_INT(job(w, "env", 30, &why, NULL), 0);
  CHECK_EQ_INT(job(w, "ok", 30, &why, NULL), 0);
  ag_worker_stats(w, &starts, &jobs);
  CHECK_EQ_INT(starts, 1); /* three jobs, one process */
  CHECK_EQ_INT(jobs, 3);
  /* the harness's verdict: a mismatch fails the job, the worker stays */
  CHECK_EQ_INT(job(w, "fail", 30, &why, &code), AG_ECHILD);
  CHECK_EQ_INT(code, 3);
  CHECK_CONTAINS(ag_str_cstr(&why), "the harness failed (exit 3)");
  CHECK_CONTAINS(ag_str_cstr(&why), "results do not match"); /* the log's tail */
  CHECK_EQ_INT(job(w, "noevidence", 30, &why, NULL), AG_ECHILD);
  CHECK_CONTAINS(ag_str_cstr(&why), "without writing evidence");
  ag_worker_stats(w, &starts, NULL);
  CHECK_EQ_INT(starts, 1);
  /* a crash takes the worker down: this job fails, the next one restarts it */
  CHECK(job(w, "crash", 30, &why, NULL) != 0);
  /* (under a sanitizer the crash ends the worker with an exit status) */
  CHECK(strstr(ag_str_cstr(&why), "signal 11") ||
        strstr(ag_str_cstr(&why), "GPU worker ended (exit"));
  CHECK_EQ_INT(job(w, "ok", 30, &why, NULL), 0);
  ag_worker_stats(w, &starts, NULL);
  CHECK_EQ_INT(starts, 2);
  /* a harness function that aborts after its close crashed (no exit-time
   * teardown in a worker): the job fails, saying how */
  CHECK(job(w, "abortafterclose", 30, &why, NULL) != 0);
  CHECK(strstr(ag_str_cstr(&why), "signal 6") ||
        strstr(ag_str_cstr(&why), "GPU worker ended (exit"));
  CHECK_EQ_INT(job(w, "ok", 30, &why, NULL), 0);
  ag_worker_stats(w, &starts, NULL);
  CHECK_EQ_INT(starts, 3);
  /* exit() inside the entry point */
  CHECK_EQ_INT(job(w, "exit", 30, &why, NULL), AG_ECHILD);
  CHECK_CONTAINS(ag_str_cstr(&why), "GPU worker ended (exit 5) while argus_harness_main ran");
  CHECK_EQ_INT(job(w, "ok", 30, &why, NULL), 0);
  /* a hang past the job's timeout */
  uint64_t t0 = ag_now_ns();
  CHECK_EQ_INT(job(w, "hang", 1, &why, NULL), AG_ETIMEOUT);
  CHECK((double)(ag_now_ns() - t0) / 1e9 < 20);
  CHECK_CONTAINS(ag_str_cstr(&why), "did not finish within 1 s");
  CHECK_EQ_INT(job(w, "ok", 30, &why, NULL), 0);
  /* a GPU fault: the job fails, the context is not reused */
  CHECK_EQ_INT(job(w, "poison", 30, &why, NULL), AG_ECUDA);
  CHECK_CONTAINS(ag_str_cstr(&why), "context was lost");
  ag_worker_stats(w, &starts, NULL);
  int before = starts;
  CHECK_EQ_INT(job(w, "ok", 30, &why, NULL), 0);
  ag_worker_stats(w, &starts, NULL);
  CHECK_EQ_INT(starts, before + 1);
  /* a library without the entry point */
  snprintf(lib, sizeof lib, "%s", fake);
  CHECK_EQ_INT(job(w, "ok", 30, &why, NULL), AG_EINVAL);
  CHECK_CONTAINS(ag_str_cstr(&why), "does not export argus_harness_main");
  snprintf(lib, sizeof lib, "%s/no/such/lib.so", dir);
  CHECK_EQ_INT(job(w, "ok", 30, &why, NULL), AG_ENOTFOUND);
  CHECK_CONTAINS(ag_str_cstr(&why), "cannot find the harness library");
  ag_worker_stop(w);
  ag_str_release(&why);
}

TEST(worker_errors) {
  ag_str why = AG_STR_INIT;
  ag_worker *w = NULL;
  /* no worker program */
  ag_worker_opts o = {"/no/such/argus-worker", 0, -1};
  CHECK(ag_worker_start(&o, &w, &why) != 0);
  CHECK(w == NULL);
  CHECK_CONTAINS(ag_str_cstr(&why), "cannot start the GPU worker");
  /* no driver: the first job says why */
  const char *bd = getenv("ARGUS_BUILD_DIR");
  snprintf(lib, sizeof lib, "%s/tests/probes/libfake_harness.so", bd ? bd : "build");
  setenv("ARGUS_LIBCUDA", "/no/such/libcuda.so.1", 1);
  ag_str_clear(&why);
  CHECK_EQ_INT(ag_worker_start(NULL, &w, &why), 0);
  if (w) {
    CHECK_EQ_INT(job(w, "ok", 30, &why, NULL), AG_ENODEV);
    CHECK_CONTAINS(ag_str_cstr(&why), "no CUDA driver");
  }
  ag_worker_stop(w);
  ag_worker_stop(NULL);
  ag_str_release(&why);
  tu_rm_rf(dir);
}

RUN_TESTS(T(jobs_share_one_worker_and_fail_alone), T(worker_errors))
