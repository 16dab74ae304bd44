/*
 * argus/synth.h — from evidence to derived data: reading reference-trace
 * evidence files (include/argus/evidence.h), decoding raw records into
 * region occurrences with their scope coordinates, and statistics over a
 * scope. Everything here is CPU-only and works on recorded evidence.
 *
 * Durations decoded from a reference trace are qualified "observed":
 * measured on the device with region identity.
 */
#ifndef ARGUS_SYNTH_H
#define ARGUS_SYNTH_H

#include "argus/core.h"
#include "argus/evidence.h"
#include "argus/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- evidence */

/* What a record is: an occurrence of a region (written at its end marker),
 * a role change (written at a role marker), or an async probe's
 * measurement (begin = clock at issue, end = clock at forced completion;
 * written by a probe variant, docs/probes.md). */
typedef enum ag_site_kind { AG_SITE_REGION, AG_SITE_ROLE, AG_SITE_ASYNC } ag_site_kind;

typedef struct ag_ev_region {
  const char *name;  /* local name; the kernel's name for a root */
  const char *qname; /* "gemm/mainloop" */
  uint64_t id;
  int parent;        /* index or -1 */
  const char *function;
  int root;          /* the implicit region of a kernel */
} ag_ev_region;

typedef struct ag_ev_site {
  ag_site_kind kind;
  int region;        /* region: region index; role: -1 */
  int role;          /* role: index into roles; else -1 */
  int line;          /* PTX line of the end (or role) marker */
  int has_iter;      /* the region's begin markers carry an iteration */
  const char *op_id; /* async: the probed site's op ID (borrowed), else NULL */
  const char *op;    /* async: its kind ("tma_load") */
  uint32_t occurrence; /* async: the probed occurrence */
} ag_ev_site;

typedef struct ag_ev_launch {
  uint32_t launch;
  const char *kernel;
  unsigned grid[3], block[3], shared_bytes; /* shared_bytes: the launch's dynamic shared memory */
  /* the kernel as the driver saw it at this launch (-1: not recorded, older
   * evidence or a driver without the call): registers per thread, static
   * shared memory, and cuOccupancyMaxActiveBlocksPerMultiprocessor */
  int registers, static_shared_bytes, driver_ctas_per_sm;
  uint32_t warps, warps_per_cta, cap;
  uint64_t nrecords, dropped;
  const ag_ev_meta *meta;       /* warps entries, into the file's data */
  const ag_ev_record *records;  /* nrecords entries */
  uint64_t *first;              /* warps + 1 prefix offsets into records */
} ag_ev_launch;

typedef struct ag_evidence {
  char *path;
  json_t *header;               /* the JSON header (owned) */
  unsigned char *file;          /* the whole file (owned) */
  size_t file_len;
  double sm_hz;                 /* the measured SM clock of the run */
  const char *device;           /* borrowed from header */
  ag_ev_region *regions;
  int nregions;
  ag_ev_site *sites;
  int nsites;
  const char **roles;
  int nroles;
  ag_ev_launch *launches;
  int nlaunches;
  uint32_t launches_total;
} ag_evidence;

/* Reads and validates an evidence file: header, lengths, checksum, JSON
 * header fields, section bounds, per-warp counts against the records, and
 * every record's site index. Malformed input gets a diagnostic naming the
 * file and what is wrong; returns AG_EPARSE / AG_ECORRUPT / AG_EIO. */
int ag_evidence_load(const char *path, ag_diags *diags, ag_evidence **out);
/* As above on bytes in memory (copied). */
int ag_evidence_load_mem(const void *data, size_t len, const char *name,
                         ag_diags *diags, ag_evidence **out);
void ag_evidence_free(ag_evidence *ev);
/* The name reports give role index `role`: ev->roles[role], or "all" for -1
 * (code that no role marker dominates: what every warp runs before the roles
 * split, e.g. a kernel's prologue). Borrowed, never NULL. */
const char *ag_evidence_role_name(const ag_evidence *ev, int role);

/* ----------------------------------------------------------- occupancy */

/* An SM's limits (src/synth/occupancy.c). */
typedef struct ag_sm_limits {
  int regs_per_sm, regs_per_cta, max_regs_per_thread, reg_unit, subpartitions;
  int max_threads_per_sm, max_threads_per_cta, max_ctas_per_sm;
  int smem_per_sm, smem_per_cta, smem_reserved_per_cta, smem_unit;
} ag_sm_limits;
extern const ag_sm_limits AG_SM90_LIMITS; /* H100 / H200 */

typedef struct ag_occupancy_result {
  int ctas;           /* CTAs per SM: the least of the four below */
  const char *limit;  /* what sets it: "registers", "shared memory", "threads", "CTAs" */
  int by_regs, by_smem, by_threads, by_ctas;
  int warps_per_cta;
  long regs_per_cta;  /* allocated */
  long smem_per_cta;  /* allocated: static + dynamic + reserved, rounded */
  double occupancy;   /* resident warps / the SM's 64 */
} ag_occupancy_result;

/* CTAs per SM for a kernel with `regs` registers per thread, `threads` per
 * CTA and the shared memory given (lim NULL: AG_SM90_LIMITS). A CTA that
 * cannot fit gives ctas = 0 and the limit it breaks. AG_EINVAL for no
 * threads. */
int ag_occupancy(const ag_sm_limits *lim, int regs, unsigned threads, unsigned static_smem,
                 unsigned dynamic_smem, ag_occupancy_result *out);

/* ---------------------------------------------------------- occurrences */

typedef struct ag_occ {
  int region;          /* index into ev->regions */
  int role;            /* index into ev->roles, -1 when the warp had none */
  uint32_t launch;     /* launch index */
  uint32_t sm, cta, warp; /* cta: linear CTA index; warp: within the CTA */
  uint32_t iter;       /* AG_EV_NO_ITER when the marker had no iteration */
  uint32_t depth;      /* nesting depth (kernel root = 0) */
  uint64_t start, end; /* %clock64 of the begin and end markers */
  double t0_ns;        /* start on the launch's common time line (ns after
                          the launch's first warp entered) */
} ag_occ;

typedef struct ag_launch_clock {
  double hz;           /* clock used for this launch's durations */
  const char *source;  /* "calibration" or "anchors" */
  double anchor_hz;    /* median over warps of cycles / globaltimer ns (0 if
                          no warp spans 20 us) */
  double span_ns;      /* median warp span */
} ag_launch_clock;

/* One async probe measurement: issue and forced-completion clocks of the
 * probed instance in one warp (the warp's lane 0 records it). */
typedef struct ag_probe_rec {
  int site;            /* index into ev->sites (kind AG_SITE_ASYNC) */
  uint32_t launch, sm, cta, warp;
  uint32_t occurrence; /* the record's occurrence (= the site's) */
  uint64_t issue, done; /* %clock64 at issue and at completion */
} ag_probe_rec;

typedef struct ag_trace {
  const ag_evidence *ev; /* borrowed */
  ag_occ *occ;
  size_t nocc;
  ag_probe_rec *probes;  /* async probe records (probe variants), in warp order */
  size_t nprobes;
  ag_launch_clock *clocks; /* per ev->launches entry */
  ag_str anomalies;       /* one line per anomaly, "" when none */
  size_t nanomalies;
  uint64_t dropped;       /* records lost to full buffers, all launches */
  uint64_t nesting_errors;
  uint64_t unended;       /* occurrences that began and never ended */
  uint32_t divergent_warps;
} ag_trace;

/* Decodes every recorded launch: per warp, records become occurrences with
 * 64-bit times (unwrapped from the entry anchor, checked against the exit
 * anchor), nested by time (each inside the innermost open one; crossings are
 * anomalies), with the role set by the latest role record before their
 * begin; the kernel itself is a root occurrence from warp entry to exit.
 * Full buffers, crossing regions, ambiguous timestamps and divergent warps
 * become anomaly lines that say which warp and which occurrences. */
int ag_trace_decode(const ag_evidence *ev, ag_trace **out);
void ag_trace_free(ag_trace *t);

/* --------------------------------------------------------------- scopes */

/* 1 when the occurrence is in the scope (argus/plan.h: launch, SM, CTA,
 * warp and iteration ranges, role). An occurrence without an iteration is
 * outside any scope that restricts iterations; one without a role is outside
 * any scope that names a role. */
int ag_scope_match(const ag_scope *s, const ag_evidence *ev, const ag_occ *o);

/* ----------------------------------------------------------- statistics */

typedef struct ag_dstats {
  uint64_t count;
  double total, mean, p50, p95, min, max;
} ag_dstats;

typedef struct ag_group_stats {
  int key;          /* SM number or role index (-1: no role) */
  ag_dstats ns;
} ag_group_stats;

typedef struct ag_region_stats {
  int region;
  ag_dstats cycles, ns;
  ag_group_stats *by_sm;
  int nsm;
  ag_group_stats *by_role;
  int nrole;
} ag_region_stats;

/* Statistics of occurrence durations per region over the scope. Regions are
 * those given by `only` (indices, n_only; NULL: all regions that occur).
 * Percentiles are nearest-rank. ns uses each launch's clock. */
int ag_trace_stats(const ag_trace *t, const ag_scope *scope, const int *only, int n_only,
                   ag_region_stats **out, int *nout);
void ag_region_stats_free(ag_region_stats *s, int n);
/* Computes count, total, mean, nearest-rank p50/p95, min, max of v (sorted in
 * place). */
void ag_dstats_of(double *v, size_t n, ag_dstats *out);

/* Finds a region by qualified name, or by local name when that is unique.
 * Returns the index, -1 when absent, -2 when a local name is ambiguous. */
int ag_evidence_find_region(const ag_evidence *ev, const char *name);

/* ---------------------------------------------------------- async_latency */

/* Synthesizes async_latency (docs/probes.md) from the program's discovery
 * (the JSON of ag_ptx_regions_to_json: its "sites" with op IDs and done_by),
 * the reference evidence of a traced variant made with waits (ref; NULL: no
 * exposed waits) and the evidence of the probe runs (one probed instance
 * each). Per instance in the scope: latency (derived: issue to forced
 * completion in the probe run), exposed (observed: the reference's waits
 * that complete the site, at the same occurrence) and hidden = latency −
 * exposed (derived); instances that cannot be joined say why ("note").
 * *out = {"instances": [...], "values": [{region, signal, stat, value, unit,
 * qual}], "notes": [...]} (new reference). */
int ag_async_synth(const json_t *discovery, const ag_evidence *ref,
                   const ag_evidence *const *probes, int nprobes, const ag_scope *scope,
                   json_t **out);

/* The counting run (docs/probes.md, "Only pairs that ran"): the records of
 * the reference ref counted per begin marker of an iterated region and per
 * iteration, over every warp of every recorded launch. *out = {"format": 1,
 * "launches": N, "dropped": records not kept, "complete": no record lost,
 * "markers": [{"line": the marker's PTX line, "region": qname, "iterations":
 * [[iteration, count], ...] ascending}]} (new reference; a marker that never
 * ran is absent). */
int ag_async_count(const ag_evidence *ref, json_t **out);

#ifdef __cplusplus
}
#endif
#endif
