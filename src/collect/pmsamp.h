/*
 * pmsamp.h — the CUPTI PM-sampling collector of libargus_host (pmsamp.c,
 * docs/throughput.md): the GPU's performance monitors read every
 * `interval` ns of GPU time (the fixed-frequency trigger) into a hardware
 * buffer, decoded after the run into one sample per window (its start and
 * end, one count per metric of argus/pm_metrics.h), written as the "pm"
 * member of the evidence file pm.json.
 *
 *   ag_pms_host_check  the metrics' configuration for a chip through
 *                      CUPTI's profiler host API alone (no GPU needed): the
 *                      config image's bytes and the passes it needs (the
 *                      PM sampler takes one)
 *   ag_pms_open        loads CUPTI, reads the device's chip and counter
 *                      availability, makes the configuration, enables PM
 *                      sampling on the device, sets the interval and the
 *                      hardware buffer, and starts sampling (before the
 *                      calibration kernel that aligns its clock), and a
 *                      thread that decodes while the harness runs
 *   ag_pms_end         joins that thread, stops, and decodes the hardware
 *                      buffer until its records end: every completed sample
 *                      evaluated;
 *                      overflow, incomplete and malformed samples counted
 *   ag_pms_json        the "pm" member's contents
 *   ag_pms_close       disables PM sampling and releases CUPTI's objects
 *
 * ARGUS_PM_INTERVAL=ns (default AG_PMS_DEFAULT_INTERVAL_NS: docs/throughput.md
 * says why), ARGUS_PM_BUFFER_MB (the hardware buffer, default 512),
 * ARGUS_PM_DECODE_MS (the decode thread's period, default 10). PM
 * sampling takes no CUPTI subscriber. Errors are AG_HOST_* with the reason in
 * `err`: ENODEV (no CUPTI), EUNSUPPORTED (profiling not permitted, a chip
 * CUPTI cannot configure, metrics that need more than one pass), EINVAL (a
 * bad setting), ECUPTI. Nothing here prints or exits.
 */
#ifndef ARGUS_COLLECT_PMSAMP_H
#define ARGUS_COLLECT_PMSAMP_H

#include <stddef.h>
#include <stdint.h>

#include "evwrite.h"

#define AG_PMS_FILE "pm.json"
#define AG_PMS_FORMAT "argus-pm"
#define AG_PMS_VERSION 1
#define AG_PMS_DEFAULT_INTERVAL_NS 100000
#define AG_PMS_DEFAULT_BUFFER_MB 512

typedef struct ag_pms ag_pms;

int ag_pms_host_check(const char *chip, size_t *config_bytes, size_t *passes, char *err,
                      size_t errlen);
int ag_pms_open(int device, ag_pms **out, char *err, size_t errlen);
int ag_pms_end(ag_pms *p, char *err, size_t errlen);
size_t ag_pms_samples(const ag_pms *p);
void ag_pms_json(const ag_pms *p, ag_jb *j);
void ag_pms_close(ag_pms *p);

#endif
