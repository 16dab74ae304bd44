/*
 * report_util.h — reading values out of an observe report (argus.report/1)
 * in tests: the first entry of (region, signal, stat), and its value.
 */
#ifndef ARGUS_TESTS_REPORT_UTIL_H
#define ARGUS_TESTS_REPORT_UTIL_H

#include <jansson.h>
#include <string.h>

/* The first entry of (region, signal, stat) in rep's "values" (borrowed), or
 * NULL. region NULL: an entry without a region (the program-wide ones). */
__attribute__((unused)) static json_t *report_entry(const json_t *rep, const char *region,
                                                    const char *signal, const char *stat) {
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(rep, "values"), i, v) {
    const char *r = json_string_value(json_object_get(v, "region"));
    const char *g = json_string_value(json_object_get(v, "signal"));
    const char *s = json_string_value(json_object_get(v, "stat"));
    if (g && s && !strcmp(g, signal) && !strcmp(s, stat) &&
        (region ? r && !strcmp(r, region) : !r))
      return v;
  }
  return NULL;
}

/* Its value (borrowed), or NULL. */
__attribute__((unused)) static json_t *report_value(const json_t *rep, const char *region,
                                                    const char *signal, const char *stat) {
  return json_object_get(report_entry(rep, region, signal, stat), "value");
}

#endif
