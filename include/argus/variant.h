/*
 * argus/variant.h — program variants made for measurement by transforms on
 * the parsed PTX (include/argus/ptx.h):
 *
 *   trace-free  the module unchanged (byte-identical PTX);
 *   traced      the reference-trace probes at the markers of the selected
 *               regions, plus per-warp entry/exit anchors in every kernel
 *               (the probe's design and its cost: docs/tracing.md; the
 *               records it writes: include/argus/evidence.h).
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

typedef enum ag_variant_kind { AG_VARIANT_TRACE_FREE, AG_VARIANT_TRACED } ag_variant_kind;

const char *ag_variant_kind_name(ag_variant_kind k); /* "trace-free", "traced" */
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

/* Makes a variant of PTX text. `name` names it in diagnostics. Errors
 * (unknown or ambiguous --region, markers the probe cannot serve, PTX that
 * does not parse or whose markers are invalid) are diagnostics; returns
 * AG_EPARSE / AG_ENOTFOUND / AG_EUNSUPPORTED. */
int ag_variant_make(const char *ptx, size_t len, const char *name,
                    const ag_variant_opts *o, ag_diags *diags, ag_variant **out);
void ag_variant_free(ag_variant *v);

/* Inserts the traced probes into a parsed, discovered module in place and
 * returns the probe table (new reference) in *probes. Exposed for tests. */
int ag_xform_trace(ag_ptx_module *m, const ag_ptx_regions *r, const ag_variant_opts *o,
                   ag_diags *diags, json_t **probes, int *nsites);

#ifdef __cplusplus
}
#endif
#endif
