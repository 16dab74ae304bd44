/*
 * pcsamp.h — the CUPTI PC-sampling collector of libargus_host (pcsamp.c,
 * docs/stalls.md): warp-state samples of a cubin's kernels, by stall
 * reason, keyed by (cubin CRC, function, pcOffset) as SASS metrics are, and
 * the SASS opcode of every PC, written as the evidence file stalls.json
 * (the rows format of sass_metrics.json, read by argus/sass_ev.h).
 *
 *   ag_pcs_open    dlopens CUPTI, becomes the process's one CUPTI
 *                  subscriber, enables PC sampling on the context, lists
 *                  the chip's stall reasons and configures every one of
 *                  them, the sampling period and the buffers
 *   ag_pcs_cubin   names the variant's cubin (its CRC)
 *   ag_pcs_begin   starts the sampling range (cuptiPCSamplingStart)
 *   ag_pcs_end     after the kernels finished: stops the range and reads
 *                  every PC record CUPTI holds
 *   ag_pcs_disasm  the opcodes (nvdisasm -c), as for SASS metrics
 *   ag_pcs_json    the evidence members (the caller adds the header)
 *   ag_pcs_close   disables PC sampling and unsubscribes
 *
 * The period is 2^k cycles, k in [5, 31]: ARGUS_STALLS_PERIOD=k, default
 * AG_PCS_DEFAULT_PERIOD (docs/stalls.md says why). Errors are AG_HOST_*
 * with the reason in `err`: ENODEV (no CUPTI), EBUSY (another subscriber),
 * EUNSUPPORTED (no PC sampling on this device, or profiling not
 * permitted), EINVAL (a bad period), ECUPTI. Nothing here prints or exits.
 */
#ifndef ARGUS_COLLECT_PCSAMP_H
#define ARGUS_COLLECT_PCSAMP_H

#include <stddef.h>
#include <stdint.h>

#include "evwrite.h"

#define AG_PCS_FILE "stalls.json"
#define AG_PCS_FORMAT "argus-stalls"
#define AG_PCS_VERSION 1
#define AG_PCS_DEFAULT_PERIOD 10

typedef struct ag_pcs ag_pcs;

int ag_pcs_open(void *ctx, ag_pcs **out, char *err, size_t errlen);
int ag_pcs_cubin(ag_pcs *p, const void *image, size_t bytes, char *err, size_t errlen);
int ag_pcs_begin(ag_pcs *p, char *err, size_t errlen);
int ag_pcs_end(ag_pcs *p, char *err, size_t errlen);
void ag_pcs_disasm(ag_pcs *p, const char *cubin_path);
/* Samples in the rows of the named cubins (every reason). */
uint64_t ag_pcs_samples(const ag_pcs *p);
void ag_pcs_json(const ag_pcs *p, ag_jb *j);
void ag_pcs_close(ag_pcs *p);

#endif
