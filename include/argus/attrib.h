/*
 * argus/attrib.h — ambiguity-aware attribution of PC-keyed metrics to
 * regions (docs/attribution.md; the paper's "Ambiguity-aware attribution").
 *
 *   layout  what the mapping variant counts (src/ptx/xform_map.c writes it
 *           as "argus-map" JSON): its units (a run of PTX lines of one basic
 *           block between markers), each with one counter slot when its
 *           region is static or one per region when it is inherited from the
 *           caller (the root of a .func), and the program version it was
 *           made from;
 *   map     n(r, p): how often the SASS instruction at PC p of one kernel
 *           executed under region r (warp-level), from the mapping run's
 *           counter slots and the cubin's SASS -> PTX line table (a PC takes
 *           the counts of the unit that holds its PTX line);
 *   apply   m_r = sum_p alpha(r,p) m(p), alpha(r,p) = n(r,p) / sum_r' n(r',p),
 *           association entropy H(p), per region the part of m_r from PCs
 *           with H > 0, and the conservation check sum_r m_r = sum_p m(p).
 *
 * A map is joined only with metrics of the same program version and kernel;
 * anything else is refused with AG_EINVAL and a diagnostic whose message is
 * the reason the report gives in not_joined (ag_report_not_joined). Pure CPU; nothing here prints.
 */
#ifndef ARGUS_ATTRIB_H
#define ARGUS_ATTRIB_H

#include "argus/core.h"
#include "argus/sass.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ag_attr_unit {
  int func;          /* index into layout funcs */
  int block;         /* CFG block in its function */
  int first_line, last_line; /* PTX lines (inclusive) of the unit */
  uint32_t slot;     /* its first counter slot (slot 0 counts dropped executions) */
  int region;        /* the region (index) when static; -1: inherited, one slot
                        per region (slot + r) */
} ag_attr_unit;

typedef struct ag_attr_func {
  char *name;
  int first_line, last_line; /* header through the closing brace */
  int is_entry;
} ag_attr_func;

typedef struct ag_attr_layout {
  char version[65];  /* SHA-256 of the PTX the map describes (the trace-free program) */
  char **regions;    /* qualified names, by index */
  int nregions;
  ag_attr_func *funcs;
  int nfuncs;
  ag_attr_unit *units; /* ascending first_line */
  int nunits;
  uint32_t nslots;   /* counter slots the variant needs, slot 0 included */
} ag_attr_layout;

/* Reads the "argus-map" table (ag_xform_map's output). Owned result. */
int ag_attr_layout_from_json(const json_t *j, ag_diags *diags, ag_attr_layout **out);
void ag_attr_layout_free(ag_attr_layout *L);
/* The unit that owns PTX line `line`: the unit holding it, else (a line of
 * a function outside every unit: its '{', declarations, labels) the
 * function's first unit after it, else its last one; -1 outside every
 * function. */
int ag_attr_unit_of_line(const ag_attr_layout *L, int line);

/* Reads a mapping run's counts ("argus-map-counts" JSON, written by the
 * host runtime: src/collect/map_bind.c) into *slots (owned, *n of them). */
int ag_attr_counts_from_json(const json_t *j, ag_diags *diags, uint64_t **slots, size_t *n);

typedef struct ag_attr_map {
  char version[65];
  char *kernel;
  char **regions;   /* borrowed from nothing: owned copies */
  int nregions;
  int npcs;
  uint64_t *pc;     /* SASS offsets in the kernel's code section, ascending */
  int *line;        /* PTX line of each PC (0: none) */
  double *n;        /* n[p * nregions + r] */
  uint64_t dropped; /* executions the run could not count (slot 0) */
  int nolines;      /* PCs without a PTX line */
  unsigned char *pad; /* per PC: 1 for the padding after a function's last RET
                         or EXIT (ag_sass_cubin_padding): never executed, so
                         ag_attr_exec_row gives it no count; its n row keeps
                         its line's unit (a PC sample there is of a warp
                         leaving through that RET/EXIT) */
  int padding;      /* how many (-1: not recognized, the SASS is not sm_90;
                       the padding then counts as its PTX line's unit) */
} ag_attr_map;

/* Builds the map of `kernel` from the layout, the mapping run's counter
 * slots (slots[0..nslots), nslots >= L->nslots) and the cubin of the
 * trace-free program compiled with -lineinfo. Every PC takes its PTX line's
 * unit's counts; the padding after a function's last RET or EXIT is marked
 * in pad (docs/attribution.md, "SASS line info"). AG_ENOTFOUND: no such kernel
 * in the cubin; AG_EINVAL: no line info, or too few slots (diagnostics). */
int ag_attr_map_build(const ag_attr_layout *L, const uint64_t *slots, size_t nslots,
                      const ag_sass_cubin *cubin, const char *kernel, ag_diags *diags,
                      ag_attr_map **out);
void ag_attr_map_free(ag_attr_map *m);
/* The executions of map PC index p per region (nregions values, borrowed):
 * its n row, or NULL for the padding, which never executes. Ownership and
 * the derived inst_mix count executions through it; attribution's alpha
 * uses the n row (a metric or sample at the padding goes to its unit). */
const double *ag_attr_exec_row(const ag_attr_map *map, int p);

/* The `ownership` signal from the map alone (no metric run), over the
 * executed PCs (ag_attr_exec_row: not the padding): per region
 * with any PC, {"region", "static_pcs" (PCs with n > 0), "dynamic" (sum_p
 * n(r,p): warp instructions by the mapping run's count, up to the SASS
 * duplication docs/attribution.md describes), "shared_pcs" (of its PCs,
 * those with another owner too)}, in region order, with "dropped". New
 * reference; NULL when out of memory. */
json_t *ag_attr_ownership(const ag_attr_map *map);

/* The map's executions by source position (docs/attribution.md, "By source
 * file"): what a file-, function- or line-level profiler says from the same
 * line info. Every executed PC (ag_attr_exec_row, summed over the regions
 * r with sel[r] != 0; sel NULL: all) takes
 * its PTX line's source position in `ptx` (the PTX the map's cubin was
 * compiled from): the last `.loc` with a line before it in its function,
 * the `.file` it names, and the function (the `.loc`'s function_name, the
 * inlined function, else the PTX function around it, short-demangled).
 * *out = {"kernel", "total" (warp-inst), "no_source": {"dynamic", "pcs"}
 * (PCs whose line has no position), "lines_total", "files": [{"file",
 * "dynamic", "pcs"}], "functions": [{"file", "function", "dynamic", "pcs"}],
 * "lines": [{"file", "function", "line", "dynamic", "pcs"}] (the first
 * max_lines; 0: all)}, rows by executions descending; files and no_source
 * add up to total. AG_ENOTFOUND (diagnostic) when the PTX has no .loc
 * (compiled without -lineinfo); AG_ENOMEM. */
int ag_attr_sources(const ag_attr_map *map, const unsigned char *sel, const char *ptx,
                    size_t len, size_t max_lines, ag_diags *diags, json_t **out);

/* alpha(r, p): the share of the executions at kernel-section PC `pc` that
 * ran under region `region` (0 where the map never saw pc execute), and
 * the PTX line of pc (0: none or unknown). */
double ag_attr_alpha(const ag_attr_map *map, uint64_t pc, int region);
int ag_attr_line(const ag_attr_map *map, uint64_t pc);

/* A PC-keyed metric of one kernel (e.g. smsp__sass_inst_executed). */
typedef struct ag_attr_metric {
  const char *name;
  const char *version; /* program version it was measured on */
  const char *kernel;
  const uint64_t *pc;
  const double *value;
  int npcs;
} ag_attr_metric;

typedef struct ag_attr_result {
  int nregions;
  double *m;          /* m_r */
  double *shared;     /* per region: the part of m_r from PCs with H > 0 */
  int *static_pcs;    /* per region: PCs with alpha(r,p) > 0 */
  int *shared_pcs;    /* per region: of those, PCs with 0 < alpha < 1 */
  double total;       /* sum_p m(p) */
  double unattributed; /* metric on PCs the map never saw execute */
  int unattributed_pcs;
  double *entropy;    /* H(p) in bits, per metric PC (npcs) */
  int npcs;
} ag_attr_result;

/* Attributes the metric through the map. A metric of another program
 * version or kernel is refused: AG_EINVAL with a diagnostic naming both
 * versions. */
int ag_attr_apply(const ag_attr_map *map, const ag_attr_metric *metric, ag_diags *diags,
                  ag_attr_result **out);
void ag_attr_result_free(ag_attr_result *r);
/* Per region the association entropy of its attributed value: the mean
 * H(p) over its PCs weighted by the part of m_r each gave,
 * sum_p alpha(r,p) m(p) H(p) / m_r (0 for a region with m_r = 0): 0 when
 * every PC of the region is its alone. out[nregions] is the caller's. */
void ag_attr_region_entropy(const ag_attr_map *map, const ag_attr_metric *mt,
                            const ag_attr_result *r, double *out);
/* The conservation check: 1 when sum_r m_r equals sum_p m(p) within a
 * relative 1e-9 (no PC lost, none counted twice). */
int ag_attr_conserved(const ag_attr_result *r);
/* A ratio metric lifted per region: num_r / den_r, each attributed apart
 * (NaN where den_r = 0). out[nregions] is the caller's. */
void ag_attr_ratio(const ag_attr_result *num, const ag_attr_result *den, double scale,
                   double *out);

/* inst_mix and barriers: the metric attributed per (region, class) of the
 * SASS opcode at each metric PC (opcodes[p] as cuobjdump / nvdisasm / CUPTI
 * print it; NULL counts as misc). out[r * AG_SASS__NCLASS + c] is the
 * caller's (nregions x AG_SASS__NCLASS doubles). Same refusals as
 * ag_attr_apply. */
int ag_attr_mix(const ag_attr_map *map, const ag_attr_metric *metric,
                const char *const *opcodes, ag_diags *diags, double *out);

/* inst_mix and barriers from the map alone, when no metric run counted
 * (docs/attribution.md, "Without SASS metrics"): out[r * AG_SASS__NCLASS +
 * c] = sum of n(r, p) over the map's executed PCs p (ag_attr_exec_row: not
 * the padding) whose opcode (opcodes[p], one per
 * map PC; NULL counts as misc) is of class c: warp instructions executed,
 * as smsp__sass_inst_executed counts them. out is the caller's. */
void ag_attr_mix_map(const ag_attr_map *map, const char *const *opcodes, double *out);

/* The report's view: {"metric", "qual": "attributed", "version", "kernel",
 * "total", "unattributed", "conserved", "regions": [{"region", "value",
 * "shared_share", "static_pcs", "shared_pcs"}]}. New reference. */
json_t *ag_attr_to_json(const ag_attr_map *map, const ag_attr_metric *metric,
                        const ag_attr_result *r);

/* ------------------------------------------- the signals of argus observe */
struct ag_sass_ev;

/* What an attributed signal is made from (docs/attribution.md, "Signals"). */
typedef struct ag_attr_inputs {
  const ag_attr_layout *layout; /* the mapping variant's layout */
  const uint64_t *slots;        /* the mapping run's counter slots */
  size_t nslots;
  const ag_sass_cubin *cubin;   /* the -lineinfo build of the program */
  const char *cubin_version;    /* the program version (SHA-256 of the PTX) it was built from */
  const struct ag_sass_ev *metrics; /* SASS metrics of that build (NULL for ownership) */
  const char *metrics_version;  /* the program version the metric run's cubin was built from */
  const char *region;           /* the queried region: it and the regions inside it */
  /* inst_mix and barriers without metrics (NULL, or CUPTI counted nothing
   * for a kernel): the opcodes of the -lineinfo build (an evidence whose
   * `sass` section disassembles that cubin; its rows are not read), from
   * which the map alone derives them; NULL: they are missing */
  const struct ag_sass_ev *opcodes;
  const char *metrics_why; /* why there are no metrics (the failed run's reason) */
  /* ownership's view by source file (ag_attr_sources): the PTX the cubin
   * was compiled from (NULL: no such view) */
  const char *ptx;
  size_t ptx_len;
} ag_attr_inputs;

/* Makes signal `signal` (ownership, inst_mix, barriers, branch) for every
 * kernel of the layout that has code in the cubin: *out = {"values":
 * [{region, signal, stat, value, unit, qual: "attributed"}], "missing":
 * [{what, why}], "not_joined": [{what, why}], "warnings": [text]} (new
 * reference). Per region: ownership's static_pcs, shared_pcs, dynamic;
 * inst_mix's count per opcode class; barriers' per barrier class; branch's
 * efficiency (thread / (32 x warp instructions)) and pred_on_share; every
 * metric signal's total and shared_share (the part from PCs with H > 0),
 * and the kernel's unattributed part. A map or metric of another program
 * version is named in not_joined, never joined. AG_EINVAL (diagnostic) for
 * an unknown signal or missing inputs; AG_ENOMEM. */
int ag_attr_signal(const char *signal, const ag_attr_inputs *in, ag_diags *diags, json_t **out);

#ifdef __cplusplus
}
#endif
#endif
