/*
 * argus/variant.h — program variants made for measurement by transforms on
 * the parsed PTX (include/argus/ptx.h):
 *
 *   trace-free  the module unchanged (byte-identical PTX);
 *   traced      the reference-trace probes at the markers of the selected
 *               regions, plus per-warp entry/exit anchors in every kernel
 *               (the probe's design and its cost: docs/tracing.md; the
 *               records it writes: include/argus/evidence.h); with `waits`
 *               also the waits that complete asynchronous operations, each
 *               timed as a synthetic region (the exposed wait of
 *               async_latency, docs/probes.md);
 *   mapping     per-warp execution counts of every basic block of every
 *               kernel and .func per (block, current region), for the
 *               PC-to-region map of attribution (docs/attribution.md); its
 *               `probes` field is the map layout ("argus-map", read by
 *               ag_attr_layout_from_json);
 *   probe       one forced-completion probe for one dynamic instance (site,
 *               occurrence) of an asynchronous operation, on the per-warp
 *               anchors of the traced variant: a timestamp at issue, a forced
 *               completion right after issue, a timestamp at completion, in
 *               the reference trace's record format (docs/probes.md).
 *
 * Each variant records its parent (SHA-256 of the original PTX), the
 * transform and its options, and, for a traced variant, the probe table
 * ("probes": regions, sites, roles) that names every record it can write.
 */
#ifndef ARGUS_VARIANT_H
#define ARGUS_VARIANT_H

#include "argus/core.h"
#include "argus/ptx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of what the transforms emit (probe code, record layout). It is
 * part of every memoized task's identity in a workspace (src/run/observe.c),
 * so evidence and variants made by an older probe are never reused by a
 * newer argus: bump it whenever a transform's output or the evidence it
 * leads to changes meaning. 4: records stored at their end marker at base +
 * a bounded byte offset, iteration complemented (evidence format 2). 5: the
 * record address computed at the begin marker and reused by the end marker
 * when no record comes between (same records). 6: records taken at the
 * begin marker and written in two halves, a trash slot instead of a store
 * predicate per record (evidence format 3). 7: the prologue after the
 * kernel's leading straight-line code (same records; the entry anchors a
 * few instructions later). */
#define AG_VARIANT_XFORM_VERSION 7

typedef enum ag_variant_kind {
  AG_VARIANT_TRACE_FREE,
  AG_VARIANT_TRACED,
  AG_VARIANT_PROBE,
  AG_VARIANT_MAPPING
} ag_variant_kind;

/* "trace-free", "traced", "probe", "mapping" */
const char *ag_variant_kind_name(ag_variant_kind k);
int ag_variant_kind_parse(const char *s, ag_variant_kind *k); /* AG_EINVAL */

typedef struct ag_variant_opts {
  ag_variant_kind kind;
  /* traced: regions to probe, by qualified name ("gemm_tma/mainloop") or
   * local name ("mainloop": every region of that name); each selection takes
   * its subtree. NULL/0: every region. Role markers are always probed. */
  const char *const *regions;
  int nregions;
  /* traced: only the per-warp entry/exit anchors (each kernel's root
   * region), no probes at markers; measures the probe's fixed cost */
  int anchors_only;
} ag_variant_opts;

typedef struct ag_variant {
  ag_variant_kind kind;
  char *ptx;          /* the variant's PTX (owned) */
  size_t len;
  char parent[65];    /* SHA-256 of the parent PTX */
  char id[65];        /* SHA-256 of the variant PTX */
  json_t *probes;     /* {"format":"argus-probes","regions":[...],"sites":[...],
                         "roles":[...]} (owned); trace-free: sites empty */
  int nsites;         /* probes inserted */
  json_t *transform;  /* {"kind":..., "regions":[...], "parent":...} (owned) */
} ag_variant;

/* What async_latency adds to a variant (docs/probes.md). Kept apart from
 * ag_variant_opts so that its positional initializers stay valid. */
typedef struct ag_variant_async {
  /* traced: also time every wait that completes an asynchronous operation
   * (mbarrier spin loops, cp.async / wgmma / bulk wait_group) as a synthetic
   * child region "argus_wait_<ordinal>" of the wait's region, where
   * <ordinal> is the wait site's ordinal in that region (so "<region id>:
   * <ordinal>" is the wait's op ID in the parent) */
  int waits;
  /* probe: the instance: the site's op ID ("<region id hex>:<ordinal>") and
   * its occurrence — the iteration operand of the innermost enclosing
   * ARGUS_BEGIN_AT region, or else the thread's count of earlier passes
   * through the site */
  const char *probe_op;
  uint32_t probe_occurrence;
  /* probe, tests only: wait for the preceding barrier phase instead of the
   * one the load completes (a deliberately wrong probe) */
  int probe_wrong_phase;
} ag_variant_async;

/* Makes a variant of PTX text. `name` names it in diagnostics. Errors
 * (unknown or ambiguous --region, markers the probe cannot serve, PTX that
 * does not parse or whose markers are invalid) are diagnostics; returns
 * AG_EPARSE / AG_ENOTFOUND / AG_EUNSUPPORTED. A traced or probe variant of
 * text that is an Argus variant already (it uses the probes' names %agt_,
 * %agp_, __argus_) is refused before parsing, with AG_EINVAL. */
int ag_variant_make(const char *ptx, size_t len, const char *name,
                    const ag_variant_opts *o, ag_diags *diags, ag_variant **out);
/* As ag_variant_make, with the async_latency additions (a may be NULL). A
 * probe variant (o->kind AG_VARIANT_PROBE) needs a->probe_op. */
int ag_variant_make_ex(const char *ptx, size_t len, const char *name, const ag_variant_opts *o,
                       const ag_variant_async *a, ag_diags *diags, ag_variant **out);
void ag_variant_free(ag_variant *v);

/* Caps the registers of the entry `func` at n per thread: sets its
 * `.maxnreg n` performance directive (replacing a larger one), in a copy of
 * the PTX text appended to out. This is how a traced variant is kept within
 * its trace-free build's occupancy bucket: ptxas ignores -maxrregcount for
 * an entry with `.maxntid` (launch bounds), `.maxnreg` it honours per entry
 * (docs/tracing.md, "Perturbation"). AG_ENOTFOUND when there is no such
 * entry. Text in, text out: no parse, linear in the PTX. */
int ag_ptx_set_maxnreg(const char *ptx, size_t len, const char *func, int n, ag_str *out);

/* Inserts the traced probes into a parsed, discovered module in place and
 * returns the probe table (new reference) in *probes. Exposed for tests.
 * The marker probes and the prologue's per-region moves are AG_PTX_VERBATIM
 * statements (printed, never analyzed): to analyze the variant, parse its
 * printed text. The module must not be a variant already (the check is
 * ag_variant_make_ex's). */
int ag_xform_trace(ag_ptx_module *m, const ag_ptx_regions *r, const ag_variant_opts *o,
                   ag_diags *diags, json_t **probes, int *nsites);

/* Makes the probe variant in place (probe first, then the per-warp anchors
 * and record pipeline of ag_xform_trace with anchors_only) and returns its
 * probe table (one site of kind "async") in *probes. Exposed for tests. */
int ag_xform_probe(ag_ptx_module *m, const ag_ptx_regions *r, const ag_variant_async *a,
                   ag_diags *diags, json_t **probes);
/* Inserts the synthetic wait regions of opts.waits in place (markers only;
 * discovery must run again afterwards). *nwaits: how many waits are timed. */
int ag_xform_waits(ag_ptx_module *m, const ag_ptx_regions *r, ag_diags *diags, int *nwaits);

/* Makes the mapping variant in place (src/ptx/xform_map.c) and returns its
 * layout ("argus-map": regions, functions, units with the parent's PTX
 * lines, counter slots; `program` is the parent's SHA-256, recorded in it)
 * in *layout. Refuses indirect calls and targets below sm_70
 * (AG_EUNSUPPORTED, with a diagnostic). Exposed for tests. */
int ag_xform_map(ag_ptx_module *m, const ag_ptx_regions *r, const char *program,
                 ag_diags *diags, json_t **layout);

/* Site kinds a probe can target: an asynchronous operation with a
 * completion to force (tma_load, tma_store, tma_reduce, bulk_copy,
 * cp_async, wgmma). */
int ag_probe_site_supported(const ag_ptx_site *s);

#ifdef __cplusplus
}
#endif
#endif
