/*
 * argus/sass_ev.h — SASS-metrics evidence (sass_metrics.json, written by
 * libargus_host under ARGUS_COLLECT=sass; docs/sass-metrics.md), decoded and
 * checked for the CPU side: per-PC metric rows keyed by (cubin CRC,
 * function, pcOffset) and the SASS opcode of every PC of the variant.
 *
 * Everything lives in the ag_sass_ev (strings borrowed from its JSON). A
 * malformed file gets a diagnostic naming the file and the part that is
 * wrong; rows of a cubin other than the variant's are kept and marked.
 */
#ifndef ARGUS_SASS_EV_H
#define ARGUS_SASS_EV_H

#include "argus/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ag_sass_ev_row {
  uint64_t crc;
  const char *function;
  uint32_t pc;
  int variant;       /* 1: the row is the variant cubin's */
  const uint64_t *v; /* one value per metric (ag_sass_ev.metrics) */
} ag_sass_ev_row;

typedef struct ag_sass_insn {
  const char *function; /* the kernel whose code section holds it */
  const char *owner;    /* the symbol whose code this is: the kernel, or a
                           device function ptxas placed in its section */
  uint32_t pc;
  const char *pred, *op, *args; /* "@!P0" or "", "CALL.REL.NOINC", operands */
} ag_sass_insn;

typedef struct ag_sass_ev {
  json_t *root;
  const char *chip, *variant_id;
  uint64_t variant_crc;
  uint32_t launches_total, ranges;
  uint64_t dropped_records;
  const char **metrics;
  int nmetrics;
  ag_sass_ev_row *rows; /* sorted by (crc, function, pc) */
  size_t nrows;
  uint64_t *values; /* nrows * nmetrics */
  ag_sass_insn *ins; /* sorted by (function, pc) */
  size_t nins;
  const char *sass_status; /* NULL: the opcodes were read; else why not */
} ag_sass_ev;

int ag_sass_ev_load(const char *path, ag_diags *diags, ag_sass_ev **out);
/* The same from bytes (an artifact of the workspace), named `name` in diagnostics. */
int ag_sass_ev_load_mem(const void *data, size_t len, const char *name, ag_diags *diags,
                        ag_sass_ev **out);
/* The same for evidence of another format with these rows: "argus-stalls"
 * (PC sampling, docs/stalls.md: one column per stall reason). */
int ag_sass_ev_load_as(const char *path, const char *format, ag_diags *diags, ag_sass_ev **out);
int ag_sass_ev_load_mem_as(const void *data, size_t len, const char *name, const char *format,
                           ag_diags *diags, ag_sass_ev **out);
void ag_sass_ev_free(ag_sass_ev *e);
/* The column of metric `name`, or -1. */
int ag_sass_ev_metric(const ag_sass_ev *e, const char *name);
/* The instruction at (function, pc), or NULL. */
const ag_sass_insn *ag_sass_ev_insn(const ag_sass_ev *e, const char *function, uint32_t pc);
/* Sum of metric column c over the variant's rows. */
uint64_t ag_sass_ev_total(const ag_sass_ev *e, int c);

#ifdef __cplusplus
}
#endif
#endif
