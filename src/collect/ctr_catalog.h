/*
 * ctr_catalog.h — a chip's hardware-counter metrics through CUPTI's profiler
 * host API (cupti_profiler_host.h), for the range-profiler collector
 * (counters.c), the PM sampler (pmsamp.c: its configuration image and the
 * evaluation of its samples) and for checking metric names on the CPU before a plan runs
 * (docs/counters.md). The host API needs no GPU: it is initialized with a
 * chip name ("GH100"), lists the chip's metrics, gives a metric's type,
 * unit and description, builds the configuration image and its number of
 * replay passes, and evaluates metric values from a counter-data image the
 * GPU side filled.
 *
 * A name is `base.rollup[.submetric]` (dram__bytes_read.sum,
 * sm__throughput.avg.pct_of_peak_sustained_elapsed); a name the chip lacks
 * is refused with the closest names it has (edit distance), so a typo says
 * what was meant. The default set (ag_ctr_default) is the one a kernel
 * engineer reads first; docs/counters.md says why each is there.
 *
 * libc only (libargus_host): CUPTI is loaded with dlopen. Errors are
 * AG_HOST_* with the reason in err: ENODEV (no CUPTI, or one without the
 * host API), EINVAL (an unknown metric), EUNSUPPORTED (a chip CUPTI does
 * not know), ECUPTI. Load: one catalog per collection or per query; a
 * lookup of an unknown name is O(metrics x name length^2).
 */
#ifndef ARGUS_COLLECT_CTR_CATALOG_H
#define ARGUS_COLLECT_CTR_CATALOG_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "../core/edit_distance.h"

#define AG_CTR_DEFAULT_CHIP "GH100"

/* What CUPTI says of one metric (copied: CUPTI reuses its strings).
 * type: 0 counter, 1 ratio, 2 throughput. */
typedef struct ag_ctr_props {
  int type;
  char hw_unit[32], unit[64], description[400];
} ag_ctr_props;

typedef struct ag_ctr_cat ag_ctr_cat;

/* Whose metrics: the range profiler's (counters.c) or the PM sampler's
 * (pmsamp.c); CUPTI lists different sets for the two (3,650 and 1,279 base
 * metrics on GH100). */
typedef enum ag_ctr_kind { AG_CTR_RANGE = 0, AG_CTR_PM = 1 } ag_ctr_kind;

/* The default metric set, NULL-terminated (docs/counters.md, "The default
 * set"): every name on GH100's list (test_counters checks it there). */
extern const char *const ag_ctr_default[];

/* Opens the `kind` catalog of `chip` (NULL: AG_CTR_DEFAULT_CHIP) with the counter
 * availability image of the device (NULL on a machine without one). `lib`:
 * a dlopen'd libcupti, or NULL to load one (ag__cupti_lib; then closed with
 * the catalog). */
int ag_ctr_cat_open(void *lib, ag_ctr_kind kind, const char *chip, const uint8_t *avail,
                    ag_ctr_cat **out, char *err, size_t errlen);
void ag_ctr_cat_close(ag_ctr_cat *c);
const char *ag_ctr_cat_chip(const ag_ctr_cat *c);
/* The chip's base metrics (counters, ratios, throughputs). */
size_t ag_ctr_cat_count(const ag_ctr_cat *c);
/* A metric's properties: 0, or AG_HOST_EINVAL with "'NAME' is not a metric
 * of chip GH100" and the closest names ("did you mean ...") in err. A base
 * metric without its rollup (dram__bytes_read) has properties but cannot be
 * collected: refused, with its rollups as the close names. */
int ag_ctr_cat_lookup(ag_ctr_cat *c, const char *name, ag_ctr_props *p, char *err,
                      size_t errlen);
/* Up to `max` names of the chip closest to `name` by edit distance (at most
 * a third of the name's length apart, at least 3), best first, into
 * out[] (borrowed from the catalog or written into buf). Returns how many. */
int ag_ctr_cat_close_matches(ag_ctr_cat *c, const char *name, char *buf, size_t buflen,
                             const char **out, int max);
/* The configuration image of the n metrics (malloc'd *image; free it) and
 * the number of replay passes it needs. */
int ag_ctr_cat_config(ag_ctr_cat *c, const char *const *names, size_t n, uint8_t **image,
                      size_t *size, size_t *passes, char *err, size_t errlen);
/* The values of the n metrics in range `range` of a decoded counter-data
 * image (cuptiProfilerHostEvaluateToGpuValues). */
int ag_ctr_cat_eval(ag_ctr_cat *c, const uint8_t *image, size_t size, size_t range,
                    const char *const *names, size_t n, double *values, char *err,
                    size_t errlen);

/* The edit distance between a and b (core's, src/core/edit_distance.h,
 * with libc's allocator; exposed for tests); SIZE_MAX out of memory. */
static inline size_t ag_ctr_edit_distance(const char *a, const char *b) {
  return ag__edit_distance(a, b, malloc, free);
}

#endif
