/*
 * counters_check.c — hardware-counter metric names checked on the CPU
 * before a plan runs (argus/collect.h, ag_counters_check): the chip's
 * catalog (ctr_catalog.c, CUPTI's profiler host API, no GPU needed), each
 * name looked up, an unknown one answered with its closest names. Once per
 * query that names metrics.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argus/collect.h"
#include "ctr_catalog.h"

int ag_counters_check(const char *chip, const char *names, size_t *passes, ag_str *why) {
  if (passes)
    *passes = 0;
  const char *env = getenv("ARGUS_COUNTERS_CHIP");
  if (!chip)
    chip = env && *env ? env : AG_CTR_DEFAULT_CHIP;
  char err[2048] = "";
  ag_ctr_cat *c = NULL;
  int rc = ag_ctr_cat_open(NULL, AG_CTR_RANGE, chip, NULL, &c, err, sizeof err);
  if (rc) {
    ag_str_printf(why, "%s", err);
    return rc == AG_EINVAL ? AG_EINVAL : AG_ENODEV;
  }
  int bad = 0;
  for (const char *p = names; p && *p;) {
    size_t n = strcspn(p, ",");
    char name[512];
    while (n && *p == ' ')
      p++, n--;
    snprintf(name, sizeof name, "%.*s", (int)(n < 511 ? n : 511), p);
    ag_ctr_props props;
    if (n && ag_ctr_cat_lookup(c, name, &props, err, sizeof err)) {
      ag_str_printf(why, "%s%s", bad++ ? "\n" : "", err);
    }
    p += n;
    p += *p == ',';
  }
  /* a name CUPTI knows may still not configure: the whole set, once */
  const char *all[160];
  size_t n = 0;
  for (; ag_ctr_default[n] && n < 128; n++)
    all[n] = ag_ctr_default[n];
  char buf[8192];
  snprintf(buf, sizeof buf, "%s", names ? names : "");
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && n < 160 && !bad;
       t = strtok_r(NULL, ",", &save)) {
    while (*t == ' ')
      t++;
    int dup = !*t;
    for (size_t i = 0; i < n && !dup; i++)
      dup = !strcmp(all[i], t);
    if (!dup) /* as the collector takes them: the default set, then each name once */
      all[n++] = t;
  }
  uint8_t *img = NULL;
  size_t size = 0, np = 0;
  if (!bad && (rc = ag_ctr_cat_config(c, all, n, &img, &size, &np, err, sizeof err))) {
    ag_str_printf(why, "the metric set cannot be configured on chip %s: %s", chip, err);
    bad = 1;
  }
  free(img);
  if (passes)
    *passes = bad ? 0 : np;
  ag_ctr_cat_close(c);
  return bad ? AG_EINVAL : 0;
}
