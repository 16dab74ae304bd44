/*
 * collect_int.h — what the Collect side shares between its files (not part
 * of the public interface): the run environment of a harness under Argus
 * and the checks of a run's outcome, used by a harness process of its own
 * (trace_run.c) and by the multi-variant worker (worker.c).
 */
#ifndef ARGUS_COLLECT_INT_H
#define ARGUS_COLLECT_INT_H

#include "argus/collect.h"

#define AG__RUN_ENV_MAX 16

/* The "K=V" environment of a run (ARGUS_COLLECT, ARGUS_OUT, ...) into e[0..n). */
int ag__run_env(const ag_trace_run_opts *o, ag_str e[AG__RUN_ENV_MAX], int *n);
/* Creates the output directory, removes an earlier run's evidence and host
 * error, and names the evidence, host-error and log paths. */
int ag__run_prepare(const ag_trace_run_opts *o, ag_str *ev, ag_str *herr, ag_str *logp,
                    ag_str *why);
/* Judges a finished run (res->proc, res->log_path set): timeout, exit
 * status, the host runtime's error, the evidence file. On success sets
 * res->evidence_path; on failure removes any evidence and says why (with the
 * tail of the log). allow_late: a harness process killed by a signal after
 * the host runtime closed (AG_HOST_CLOSED_FILE) succeeds, with
 * res->late_exit saying so (0 for the worker: its harness is a function). */
int ag__run_outcome(const char *ev, const char *herr, ag_trace_run_result *res, double timeout_s,
                    int allow_late, ag_str *why);

#endif
