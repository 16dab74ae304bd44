/*
 * argus/stalls.h — the `stalls` signal (docs/stalls.md): PC-sampling
 * evidence (stalls.json, read with ag_sass_ev_load_as(..., "argus-stalls"))
 * attributed to regions through the PC-to-region map (argus/attrib.h):
 * per region its samples by stall reason, the share of the kernel's
 * samples, the entropy of its reason distribution and of its association
 * with other regions, and its top PCs with their SASS opcode, PTX line and
 * dominant reason. Pure CPU; nothing here prints.
 */
#ifndef ARGUS_STALLS_H
#define ARGUS_STALLS_H

#include "argus/attrib.h"
#include "argus/sass.h"
#include "argus/sass_ev.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AG_STALLS_TOP_PCS 5

/* The signal's JSON (new reference in *out):
 *   {"signal":"stalls","qual":"attributed","kernel","version",
 *    "period_cycles","total_samples","dropped_samples","hw_buffer_full",
 *    "non_user_samples","samples" (the kernel's rows),"unattributed",
 *    "conserved","regions":[{"region","samples","share","shared_share",
 *      "reason_entropy_bits","top_reason","reasons":[{"reason","samples",
 *      "share"}...],"top_pcs":[{"pc","samples","opcode","line","reason"}]}]}
 * `version` is the program version the evidence was measured on (the
 * map's, or the join is refused: AG_EINVAL with the diagnostic). PCs of
 * rows not in the cubin's kernel section: AG_EINVAL. */
int ag_stalls_json(const ag_attr_map *map, const ag_sass_ev *e, const ag_sass_cubin *cub,
                   const char *kernel, const char *version, ag_diags *diags, json_t **out);

#ifdef __cplusplus
}
#endif
#endif
