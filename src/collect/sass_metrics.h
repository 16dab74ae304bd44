/*
 * sass_metrics.h — the CUPTI SASS-metrics collector of libargus_host
 * (sass_metrics.c, docs/sass-metrics.md): per-PC instruction counts of a
 * cubin's kernels, keyed by (cubin CRC, function, pcOffset), and the SASS
 * opcode of every PC (nvdisasm of the same cubin), written as the evidence
 * file sass_metrics.json.
 *
 * The function-level interface, for the host runtime (host.c,
 * ARGUS_COLLECT=sass) and for any other in-process user (the benchmark):
 *
 *   ag_sassm_open      dlopens CUPTI, becomes the process's one CUPTI
 *                      subscriber, resolves the metrics for the device's chip
 *                      and sets the configuration; after a context exists
 *   ag_sassm_cubin     names a cubin image (its CRC as CUPTI computes it):
 *                      the records of that cubin are the collection's
 *   ag_sassm_begin     starts a patching range (before the kernels' first
 *                      launch: lazy patching patches a function at its first
 *                      launch in the range)
 *   ag_sassm_end       after the kernels finished: flushes the range's
 *                      records into the collector and ends the range
 *   ag_sassm_disasm    the opcodes of a cubin file (nvdisasm -c), once
 *   ag_sassm_json      the evidence object (the caller adds the header)
 *   ag_sassm_close     unsets the configuration and unsubscribes
 *
 * Errors are AG_HOST_* codes with the reason in `err`: AG_HOST_ENODEV
 * (no CUPTI library), AG_HOST_EBUSY (another CUPTI subscriber, e.g. a
 * profiler, holds the process's one slot), AG_HOST_EUNSUPPORTED (the device
 * or driver does not do SASS metrics, or no requested metric exists on the
 * chip), AG_HOST_ECUPTI (a CUPTI call failed; the message names it).
 * Nothing here prints or exits.
 */
#ifndef ARGUS_COLLECT_SASS_METRICS_H
#define ARGUS_COLLECT_SASS_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "evwrite.h"

#define AG_SASSM_FILE "sass_metrics.json"
#define AG_SASSM_FORMAT "argus-sass-metrics"
#define AG_SASSM_VERSION 1
/* columns per row: SASS metrics, or the stall reasons of PC sampling
 * (pcsamp.c keeps its rows here too; the H200 lists 60 SASS metrics) */
#define AG_SASSM_MAX_METRICS 96

typedef struct ag_sassm ag_sassm;

/* The default metrics (comma list), when neither `metrics` nor
 * ARGUS_SASS_METRICS names others. */
extern const char ag_sassm_default_metrics[];

/* `ctx` is the CUcontext the kernels run in (current on this thread),
 * `device` its ordinal; `metrics`: comma-separated metric names, NULL for
 * ag_sassm_default_metrics. Requested metrics the chip lacks are left out
 * and listed in the evidence; none left is AG_HOST_EUNSUPPORTED. On failure
 * *out is NULL and everything opened is released. */
int ag_sassm_open(void *ctx, int device, const char *metrics, ag_sassm **out, char *err,
                  size_t errlen);
int ag_sassm_cubin(ag_sassm *s, const void *image, size_t bytes, char *err, size_t errlen);
int ag_sassm_begin(ag_sassm *s, char *err, size_t errlen);
int ag_sassm_end(ag_sassm *s, char *err, size_t errlen);
/* Runs the disassembler (ARGUS_NVDISASM, else nvdisasm beside CUDA_HOME's
 * bin, else on PATH) on the cubin file; a failure is not an error of the
 * collection: the evidence says why the opcodes are missing. */
void ag_sassm_disasm(ag_sassm *s, const char *cubin_path);
/* Appends the collection's fields (chip, metrics, records, opcodes, ...;
 * docs/sass-metrics.md) to j, as members of an open JSON object. */
void ag_sassm_json(const ag_sassm *s, ag_jb *j);
/* Records, merged over the ranges: the number of distinct (cubin, function,
 * pc) rows of the named cubins, and the sum of metric `name` over them (0
 * when the metric is not configured). */
size_t ag_sassm_rows(const ag_sassm *s);
/* Rows of cubins not named, and "function (crc N), ..." of them in buf. */
size_t ag_sassm_other(const ag_sassm *s, char *buf, size_t n);
uint64_t ag_sassm_total(const ag_sassm *s, const char *name);
/* What CUPTI said at the end of the last range: the records and instances
 * cuptiSassMetricsGetDataProperties reported, the records Disable dropped. */
void ag_sassm_end_state(const ag_sassm *s, size_t *records, size_t *instances,
                        size_t *dropped);
void ag_sassm_close(ag_sassm *s);

/* Parses nvdisasm -c text into the collector (exposed for the CPU test of
 * the parser); returns the instructions parsed. */
size_t ag_sassm_parse_disasm(ag_sassm *s, const char *text);
/* A collector with no CUPTI behind it, for ag_sassm_parse_disasm and
 * ag_sassm_json in CPU tests. */
ag_sassm *ag_sassm_new_offline(void);

/* The rows, cubins and opcodes part of ag_sassm_json alone ("cubins",
 * "ranges", "dropped_records", "columns", "rows", "sass"): the format
 * PC sampling's evidence shares (pcsamp.c), so one decoder reads both
 * (argus/sass_ev.h). */
void ag_sassm_json_rows(const ag_sassm *s, ag_jb *j);
/* For a collector that fills an offline table itself (pcsamp.c): a column
 * named `name` with key `id` (AG_HOST_EINVAL past AG_SASSM_MAX_METRICS), a
 * named cubin by its CRC, and `value` added to column `id` of the row
 * (crc, fidx, pc) of function `fn` (AG_HOST_ENOMEM; an unknown id is
 * ignored). */
int ag_sassm_offline_metric(ag_sassm *s, const char *name, uint64_t id);
int ag_sassm_offline_cubin(ag_sassm *s, uint64_t crc, size_t bytes);
void ag_sassm_offline_ranges(ag_sassm *s, uint32_t ranges);
int ag_sassm_offline_add(ag_sassm *s, uint32_t crc, uint32_t fidx, uint32_t pc, const char *fn,
                         uint64_t id, uint64_t value);

#endif
