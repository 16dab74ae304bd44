/*
 * ptx_internal.h — declarations shared by the files of src/ptx (not part of
 * the public interface).
 */
#ifndef ARGUS_PTX_INTERNAL_H
#define ARGUS_PTX_INTERNAL_H

#include "argus/ptx.h"

/* Arena array growth: returns a copy of v (n elements of size sz) with room
 * for cap elements, or NULL. */
void *ag__ptx_grow(ag_arena *a, void *v, size_t n, size_t cap, size_t sz);

/* 1 when the statement ends control flow unconditionally or conditionally. */
int ag__ptx_is_branch(const ag_ptx_stmt *s);
int ag__ptx_is_terminator(const ag_ptx_stmt *s); /* ret, exit, trap */

/* Width in bits of register `reg` from the function's declarations
 * ("%r<12>" covers %r0..%r11; ".pred" is 1); 0 when undeclared. */
int ag__ptx_reg_bits(const ag_ptx_func *f, const char *reg);
/* The innermost region around region `reg` (index) whose begin markers
 * carry an iteration operand, or -1 (discover.c). */
int ag__ptx_iter_region(const ag_ptx_region *regions, int reg);

/* The reference-trace record store (xform_trace.c), for probes that record
 * through the traced variant's pipeline: appends PTX that stores a whole
 * record {begin, site, end, iter_x} (register names or constants; iter_x is
 * the iteration XOR AG_EV_ITER_BIAS) into the warp's next record when its
 * predicate allows, then advances to the record after it. */
void ag__ptx_trace_record(ag_str *o, const char *begin, const char *end, int site,
                          const char *iter_x);

/* Places PTX text before / after `at` as one AG_PTX_VERBATIM statement of
 * function f: printed as a parse of the text would print, never analyzed
 * (xform_trace.c; the mapping variant's counters use it too). */
int ag__ptx_insert_verbatim(ag_ptx_module *m, ag_ptx_func *f, ag_ptx_stmt *at, int before,
                            const ag_str *text);

/* An error diagnostic at statement s (its line and text; none when s is
 * NULL) of module m: the transforms' refusals. */
void ag__ptx_vdiag(const ag_ptx_module *m, ag_diags *diags, const ag_ptx_stmt *s,
                   const char *fmt, va_list ap);

/* The number of the module's .target sm_<n> (90 for sm_90a), 0 when it
 * names none: the transforms' minimum-target refusals. */
int ag__ptx_target_sm(const ag_ptx_module *m);

/* AG_EINVAL with a diagnostic (file:line:col) when PTX text is an Argus
 * variant already: it uses the probes' names (%agt_, %agp_, %agm_, __argus_)
 * outside comments and strings. One pass over the text, before parsing:
 * ag_variant_make_ex refuses a variant of a variant at once (parsing and
 * discovering a traced module first took most of the time). */
int ag__ptx_variant_check_text(const char *text, size_t len, const char *path,
                               ag_diags *diags);

#endif
