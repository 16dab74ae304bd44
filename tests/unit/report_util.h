/*
 * report_util.h — reading values out of an observe report (argus.report/1)
 * in tests: the first value of (region, signal, stat).
 */
#ifndef ARGUS_TESTS_REPORT_UTIL_H
#define ARGUS_TESTS_REPORT_UTIL_H

#include <jansson.h>
#include <string.h>

/* The first value of (region, signal, stat) in rep's "values" (borrowed), or
 * NULL. region NULL: a value without a region (the program-wide ones). */
__attribute__((unused)) static json_t *report_value(const json_t *rep, const char *region,
                                                    const char *signal, const char *stat) {
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(rep, "values"), i, v) {
    const char *r = json_string_value(json_object_get(v, "region"));
    const char *g = json_string_value(json_object_get(v, "signal"));
    const char *s = json_string_value(json_object_get(v, "stat"));
    if (g && s && !strcmp(g, signal) && !strcmp(s, stat) &&
        (region ? r && !strcmp(r, region) : !r))
      return json_object_get(v, "value");
  }
  return NULL;
}

#endif
