/*
 * argus/evidence.h — the binary layout of reference-trace evidence: what the
 * probe writes on the device, and the file the host runtime writes from it.
 * Plain C with no dependencies: the device probe (PTX made by
 * src/ptx/xform_trace.c), the host runtime (src/collect/host.c, libc only)
 * and the reader (src/synth/evidence.c) all follow this header.
 * docs/evidence.md describes the same layout for people.
 *
 * Everything is little-endian.
 *
 * On the device
 *   The traced module holds a constant descriptor `__argus_trace`
 *   (ag_ev_desc). Each warp owns a slot: slot = cta_linear * warps_per_cta +
 *   warp_in_cta, where cta_linear = ctaid.x + nctaid.x*(ctaid.y +
 *   nctaid.y*ctaid.z) and the warp is the linear thread index / 32. Slot s
 *   records into records + s*cap*16 bytes and its metadata is meta + s*64.
 *   One lane (lane 0) writes one 16-byte record per region occurrence (and
 *   per role marker and async probe); every lane counts, so divergence is
 *   detected. A record's place is taken when the occurrence begins: record
 *   n of the warp goes to index min(n, cap - 1), so the last index is a
 *   trash slot that records past the first cap - 1 overwrite (they are
 *   counted, not kept): a warp keeps min(count, cap - 1) records.
 *
 * In the file
 *   ag_ev_file_header (32 bytes), then data_len bytes of binary data, then
 *   header_len bytes of JSON (the header: device, clock, variant, sites,
 *   launches; docs/evidence.md). The data holds, per recorded launch, the
 *   warp metadata array (warps * 64 bytes) followed by the records of each
 *   warp back to back (warp 0's min(count, cap) records, then warp 1's, ...),
 *   where a launch's cap is the records a warp can keep (the descriptor's
 *   slots minus the trash slot); the JSON gives each launch's offsets. The JSON comes last so the writer
 *   can stream the data. checksum is FNV-1a 64 over the data and the JSON.
 */
#ifndef ARGUS_EVIDENCE_H
#define ARGUS_EVIDENCE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AG_EV_MAGIC "ARGUSEV1" /* 8 bytes, no terminator in the file */
#define AG_EV_VERSION 3u /* 3: records in begin order, written in two halves */
#define AG_EV_FILE_NAME "trace.agev"
/* Beside it (and alone in a timing run, ARGUS_COLLECT=time): every launch of
 * the variant with its kernel time and occupancy (JSON; docs/evidence.md). */
#define AG_EV_TIMING_FILE "timing.json"
/* Written by ag_host_close as its last act, after a finish that wrote the
 * evidence: a harness that dies after it (a library's exit-time teardown)
 * left complete evidence (docs/harness.md, "A harness that dies at exit"). */
#define AG_HOST_CLOSED_FILE "host-closed.txt"

/* The constant the host binds before each recorded launch. enabled == 0:
 * the probes store nothing (a traced module loaded outside Argus, or a launch
 * past the recorded ones). */
typedef struct ag_ev_desc {
  uint64_t records; /* device address of this launch's record area */
  uint64_t meta;    /* device address of this launch's warp metadata */
  uint32_t cap;     /* record slots per warp (the last one is the trash slot) */
  uint32_t enabled; /* 1: record */
  uint32_t launch;  /* launch index (for the record's owner) */
  uint32_t pad;
} ag_ev_desc;
#define AG_EV_DESC_BYTES 32u
#define AG_EV_DESC_SYMBOL "__argus_trace"

/* One record per region occurrence, in the order the occurrences began
 * (and one per role marker and per async probe, in the order they were
 * made). The begin marker of a region takes the warp's next record and
 * writes its first half, {begin, site}; the end marker writes the second
 * half, {end, iter_x}, into the same record. So an occurrence that began
 * but never ended (lane 0 did not run the end marker, or the kernel
 * faulted in the region) keeps
 * a zero second half: ag_ev_record_ended is 0 (the host zeroes the record
 * area before each recorded launch). begin and end are the low 32 bits of
 * %clock64 at the markers; site is the begin (or role, or probe) marker's
 * index in the variant's probe table; iter_x is the iteration operand of
 * the ARGUS_BEGIN_AT that opened the region XOR 0x80000000 (AG_EV_NO_ITER
 * XOR 0x80000000 without one): the probe takes the iteration into a
 * register of its own with one instruction, and the bias keeps a finished
 * record's second half from being zero (only iteration 0x80000000 with an
 * end clock of exactly 0 mod 2^32 would look unfinished). Read it with
 * ag_ev_record_iter. A role record and an async probe's record are written
 * whole at once; a role record has begin == end. The decoder restores
 * 64-bit times from the warp's 64-bit entry anchor: region and role records
 * are in begin order, a probe's record is made right after its end, and no
 * gap between successive records (nor any region) may reach 2^32 cycles
 * (2.1 s at 2 GHz; checked against the 64-bit exit anchor). */
typedef struct ag_ev_record {
  uint32_t begin;  /* %clock64 & 0xffffffff at the begin marker */
  uint32_t site;   /* index into the header's "probes.sites" */
  uint32_t end;    /* ... at the end marker (0 with iter_x 0: not ended) */
  uint32_t iter_x; /* iteration ^ AG_EV_ITER_BIAS */
} ag_ev_record;
#define AG_EV_RECORD_BYTES 16u
#define AG_EV_NO_ITER 0xffffffffu
#define AG_EV_ITER_BIAS 0x80000000u
static inline uint32_t ag_ev_record_iter(const ag_ev_record *r) {
  return r->iter_x ^ AG_EV_ITER_BIAS;
}
static inline int ag_ev_record_ended(const ag_ev_record *r) { return r->end || r->iter_x; }

/* Exposed-wait regions (docs/probes.md): a traced variant made with waits
 * times each wait that completes an asynchronous operation as a synthetic
 * child region named AG_EV_WAIT_PREFIX "<ordinal>" of the wait's region; the
 * wait's op ID is "<that region's id in hex>:<ordinal>". */
#define AG_EV_WAIT_PREFIX "argus_wait_"

/* Per-warp metadata: lane 0 writes it when the warp exits (the entry
 * anchors are rebuilt there from their low 32 bits, read at entry: a warp
 * lives less than 2^32 cycles and 2^32 ns); every lane folds its count into
 * max_count. A slot
 * whose flags lack AG_EV_EXITED belongs to a warp that never reached an exit
 * (it did not run, or the kernel faulted). */
typedef struct ag_ev_meta {
  uint64_t clock_entry;  /* %clock64 at the prologue (after the leading code) */
  uint64_t gtime_entry;  /* %globaltimer (ns) read beside it */
  uint64_t clock_exit;   /* %clock64 at exit */
  uint64_t gtime_exit;   /* %globaltimer at exit */
  uint32_t smid;         /* %smid at exit */
  uint32_t count;        /* records lane 0 made (kept: min(count, descriptor cap - 1)) */
  uint32_t flags;        /* AG_EV_* below */
  uint32_t launch;       /* the launch index the warp saw in the descriptor */
  uint32_t max_count;    /* the largest count over the warp's lanes (red.max) */
  uint32_t pad[3];
} ag_ev_meta;
#define AG_EV_META_BYTES 64u
#define AG_EV_EXITED 1u

typedef struct ag_ev_file_header {
  char magic[8];        /* AG_EV_MAGIC */
  uint32_t version;     /* AG_EV_VERSION */
  uint32_t header_len;  /* bytes of JSON after the data */
  uint64_t data_len;    /* bytes of binary data after this header */
  uint64_t checksum;    /* FNV-1a 64 of data + JSON */
} ag_ev_file_header;
#define AG_EV_FILE_HEADER_BYTES 32u

/* FNV-1a 64, incremental: start with AG_EV_FNV_INIT. */
#define AG_EV_FNV_INIT 0xcbf29ce484222325ull
static inline uint64_t ag_ev_fnv(uint64_t h, const void *data, uint64_t n) {
  const unsigned char *p = (const unsigned char *)data;
  for (uint64_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

#ifdef __cplusplus
}
#endif
#endif
