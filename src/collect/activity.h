/*
 * activity.h — the CUPTI activity collector of libargus_host (activity.c,
 * docs/system.md): the system timeline of a harness run — kernels (grid,
 * block, registers, static and dynamic shared memory, local memory,
 * cluster), memcpy and memset, synchronization, stream creation — each
 * with its stream and correlation ID, in CUPTI's timestamps, written into
 * the evidence file system.json.
 *
 *   ag_act_open    dlopens CUPTI, becomes the process's one CUPTI
 *                  subscriber, registers the buffer callbacks and enables
 *                  the activity kinds (before the first launch to record)
 *   ag_act_flush   forces CUPTI to hand back every buffer (after the
 *                  device is idle); counts the records CUPTI dropped
 *   ag_act_json    the evidence members (the caller adds the header)
 *   ag_act_close   disables the kinds and unsubscribes
 *
 * CUPTI's buffer callbacks carry no user pointer: one collector per
 * process (a second open is AG_HOST_EBUSY). Errors are AG_HOST_* with the
 * reason in `err`; nothing here prints or exits.
 */
#ifndef ARGUS_COLLECT_ACTIVITY_H
#define ARGUS_COLLECT_ACTIVITY_H

#include <stddef.h>
#include <stdint.h>

#include "evwrite.h"

#define AG_ACT_FILE "system.json"
#define AG_ACT_FORMAT "argus-system"
#define AG_ACT_VERSION 1

typedef struct ag_act ag_act;

/* names: the kinds, "kernel,memcpy,..." (as ARGUS_ACTIVITY_KINDS), or NULL
 * for $ARGUS_ACTIVITY_KINDS, else every kind. NVTX_INJECTION64_PATH is set
 * only when the nvtx kind is on. */
int ag_act_open(ag_act **out, const char *names, char *err, size_t errlen);
int ag_act_flush(ag_act *a, char *err, size_t errlen);
/* CUPTI's timestamp now (the records' clock), 0 when unavailable. */
uint64_t ag_act_now(const ag_act *a);
/* Records kept so far: all kinds, and kernels named `name` (NULL: all). */
size_t ag_act_records(const ag_act *a);
size_t ag_act_kernels(const ag_act *a, const char *name);
/* The start and end (CUPTI clock) of the i-th kernel record named
 * `name`, 0 when there is none. */
int ag_act_kernel_span(const ag_act *a, const char *name, size_t i, uint64_t *start,
                       uint64_t *end);
void ag_act_json(const ag_act *a, ag_jb *j);
void ag_act_close(ag_act *a);

#endif
