/*
 * report.c — qualified reports. Values are kept as JSON objects in insertion
 * order; rendering sorts regions by their largest time, so the text summary
 * leads with where the time goes. A report holds at most thousands of values:
 * everything is linear.
 */
#include "argus/report.h"

#include "argus/demangle.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

struct ag_report {
  json_t *root;
  json_t *values;
  json_t *missing;
  json_t *not_joined;
  json_t *warnings;
};

ag_report *ag_report_new(const ag_query *q, const char *program) {
  ag_report *r = ag_calloc(1, sizeof *r);
  if (!r)
    return NULL;
  json_t *sigs = json_array();
  for (int i = 0; q && i < q->nsignals; i++)
    json_array_append_new(sigs, json_string(q->signals[i]));
  ag_str sc = AG_STR_INIT;
  if (q)
    ag_scope_format(&q->scope, &sc);
  char ts[32];
  ag_iso8601(ag_wall_time_ns(), ts);
  r->values = json_array();
  r->missing = json_array();
  r->not_joined = json_array();
  r->warnings = json_array();
  r->root = json_pack("{s:s,s:s,s:s,s:{s:s?,s:o,s:s},s:s,s:O,s:O,s:O,s:O}", "schema",
                      AG_REPORT_SCHEMA, "argus", AG_VERSION_STRING, "created", ts, "query",
                      "region", q ? q->region : NULL, "signals", sigs, "scope",
                      ag_str_cstr(&sc), "program", program ? program : "", "values",
                      r->values, "missing", r->missing, "not_joined", r->not_joined,
                      "warnings", r->warnings);
  ag_str_release(&sc);
  if (!r->root || !r->values || !r->missing || !r->not_joined || !r->warnings) {
    ag_report_free(r);
    return NULL;
  }
  return r;
}

void ag_report_free(ag_report *r) {
  if (!r)
    return;
  json_decref(r->values);
  json_decref(r->missing);
  json_decref(r->not_joined);
  json_decref(r->warnings);
  json_decref(r->root);
  ag_free(r);
}

static json_t *prov_json(const ag_provenance *p) {
  json_t *tasks = json_array();
  for (int i = 0; p && i < p->ntasks; i++)
    json_array_append_new(tasks, json_integer(p->tasks[i]));
  return json_pack("{s:o,s:s?,s:s?,s:s,s:s?}", "tasks", tasks, "program",
                   p ? p->program : NULL, "variant", p ? p->variant : NULL, "scope",
                   p && p->scope ? p->scope : "", "collector", p ? p->collector : NULL);
}

static int add_obj(ag_report *r, const char *region, const char *signal, const char *stat,
                   json_t *value, const char *unit, ag_qual qual, double entropy,
                   const ag_provenance *prov) {
  json_t *o = json_pack("{s:s?,s:s,s:s?,s:o,s:s,s:s,s:o}", "region", region, "signal", signal,
                        "stat", stat, "value", value, "unit", unit ? unit : "", "qual",
                        ag_qual_name(qual), "provenance", prov_json(prov));
  if (!o)
    return AG_ENOMEM;
  if (qual == AG_QUAL_ATTRIBUTED && entropy >= 0)
    json_object_set_new(o, "entropy", json_real(entropy));
  return json_array_append_new(r->values, o) ? AG_ENOMEM : 0;
}

int ag_report_add(ag_report *r, const char *region, const char *signal, const char *stat,
                  double value, const char *unit, ag_qual qual, double entropy,
                  const ag_provenance *prov) {
  json_t *v = isfinite(value) ? json_real(value) : json_null();
  if (value == floor(value) && fabs(value) < 9e15)
    v = (json_decref(v), json_integer((json_int_t)value));
  return add_obj(r, region, signal, stat, v, unit, qual, entropy, prov);
}

int ag_report_add_flagged(ag_report *r, const char *region, const char *signal,
                          const char *stat, double raw, const char *unit, ag_qual qual,
                          const char *why, const ag_provenance *prov) {
  int rc = add_obj(r, region, signal, stat, json_null(), unit, qual, -1, prov);
  json_t *o = rc ? NULL : json_array_get(r->values, json_array_size(r->values) - 1);
  if (o) {
    json_object_set_new(o, "raw", isfinite(raw) ? json_real(raw) : json_null());
    json_object_set_new(o, "flag", json_string(why ? why : "flagged"));
  }
  return rc;
}

int ag_report_add_json(ag_report *r, const char *region, const char *signal, const char *stat,
                       json_t *value, const char *unit, ag_qual qual,
                       const ag_provenance *prov) {
  return add_obj(r, region, signal, stat, value, unit, qual, -1, prov);
}

int ag_report_annotate_last(ag_report *r, const char *key, json_t *v) {
  json_t *o = json_array_get(r->values, json_array_size(r->values) - 1);
  if (!o || !v) {
    json_decref(v);
    return o ? AG_ENOMEM : AG_EINVAL;
  }
  return json_object_set_new(o, key, v) ? AG_ENOMEM : 0;
}

int ag_report_missing(ag_report *r, const char *region, const char *signal, const char *why) {
  /* the same failure behind several signals (one run feeds them): said once in full */
  size_t i;
  json_t *m;
  json_array_foreach(r->missing, i, m) {
    const char *w = json_string_value(json_object_get(m, "why"));
    const char *s = json_string_value(json_object_get(m, "signal"));
    const char *g = json_string_value(json_object_get(m, "region"));
    if (w && why && s && !strcmp(w, why) && strlen(why) > 80 &&
        ((!g && !region) || (g && region && !strcmp(g, region)))) {
      char same[200];
      snprintf(same, sizeof same, "the same failure as %.100s (above)", s);
      json_t *o = json_pack("{s:s?,s:s?,s:s}", "region", region, "signal", signal, "why", same);
      return !o || json_array_append_new(r->missing, o) ? AG_ENOMEM : 0;
    }
  }
  json_t *o = json_pack("{s:s?,s:s?,s:s}", "region", region, "signal", signal, "why", why);
  return !o || json_array_append_new(r->missing, o) ? AG_ENOMEM : 0;
}

int ag_report_warning(ag_report *r, const char *what) {
  json_t *o = json_string(what ? what : "?");
  return !o || json_array_append_new(r->warnings, o) ? AG_ENOMEM : 0;
}

int ag_report_not_joined(ag_report *r, const char *what, const char *why) {
  json_t *o = json_pack("{s:s,s:s}", "what", what, "why", why);
  return !o || json_array_append_new(r->not_joined, o) ? AG_ENOMEM : 0;
}

int ag_report_attach_plan(ag_report *r, const ag_plan *p) {
  json_t *j = ag_plan_to_json(p);
  if (!j)
    return AG_ENOMEM;
  json_object_set_new(r->root, "plan", j);
  return 0;
}

int ag_report_joinable(const ag_provenance *a, const ag_provenance *b, ag_str *why) {
  const char *pa = a->program ? a->program : "", *pb = b->program ? b->program : "";
  if (strcmp(pa, pb) != 0) {
    ag_str_printf(why, "different program versions (%s vs %s)", pa, pb);
    return 0;
  }
  const char *sa = a->scope ? a->scope : "", *sb = b->scope ? b->scope : "";
  if (strcmp(sa, sb) != 0) {
    ag_str_printf(why, "different scope coordinates ({%s} vs {%s})", sa, sb);
    return 0;
  }
  return 1;
}

json_t *ag_report_to_json(const ag_report *r) { return json_incref(r->root); }

/* ------------------------------------------------------------------ text */

typedef struct region_rank {
  const char *name;
  double weight; /* the region's largest total time, for ordering */
  double count;  /* then its largest other total (attributed instructions) */
} region_rank;

/* Names in natural order: runs of digits compare as numbers, so
 * "(launch 2 k)" comes before "(launch 10 k)". */
static int natcmp(const char *a, const char *b) {
  while (*a && *b) {
    if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
      while (*a == '0' && isdigit((unsigned char)a[1]))
        a++;
      while (*b == '0' && isdigit((unsigned char)b[1]))
        b++;
      size_t na = 0, nb = 0;
      while (isdigit((unsigned char)a[na]))
        na++;
      while (isdigit((unsigned char)b[nb]))
        nb++;
      if (na != nb)
        return na < nb ? -1 : 1;
      int c = strncmp(a, b, na);
      if (c)
        return c;
      a += na, b += nb;
      continue;
    }
    if (*a != *b)
      return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
    a++, b++;
  }
  return *a ? 1 : *b ? -1 : 0;
}

static int cmp_rank(const void *a, const void *b) {
  const region_rank *x = a, *y = b;
  if (x->weight != y->weight)
    return x->weight < y->weight ? 1 : -1;
  if (x->count != y->count)
    return x->count < y->count ? 1 : -1;
  return natcmp(x->name, y->name);
}

/* [1,2,3,5] -> "1-3, 5" */
static void fmt_ranges(json_t *a, ag_str *out) {
  size_t n = json_array_size(a);
  for (size_t i = 0; i < n;) {
    json_int_t lo = json_integer_value(json_array_get(a, i)), hi = lo;
    size_t k = i + 1;
    while (k < n && json_integer_value(json_array_get(a, k)) == hi + 1)
      hi++, k++;
    ag_str_printf(out, "%s%lld", i ? ", " : "", (long long)lo);
    if (hi > lo)
      ag_str_printf(out, "-%lld", (long long)hi);
    i = k;
  }
}

static void fmt_value(json_t *v, const char *unit, ag_str *out) {
  if (json_is_integer(v)) {
    ag_str_printf(out, "%lld", (long long)json_integer_value(v));
  } else if (json_is_real(v)) {
    double x = json_real_value(v);
    if (!strcmp(unit, "ns") && x >= 1e6)
      ag_str_printf(out, "%.3f ms", x / 1e6);
    else if (!strcmp(unit, "ns") && x >= 1e3)
      ag_str_printf(out, "%.2f us", x / 1e3);
    else if (!strcmp(unit, "ns"))
      ag_str_printf(out, "%.1f ns", x);
    else
      ag_str_printf(out, "%.4g", x);
    return;
  } else if (json_is_string(v)) {
    ag_str_puts(out, json_string_value(v));
    return;
  } else if (json_is_object(v) && json_is_array(json_object_get(v, "recorded"))) {
    /* the launches of a traced run: which were recorded, and why not the others */
    ag_str_puts(out, "recorded ");
    fmt_ranges(json_object_get(v, "recorded"), out);
    if (!json_array_size(json_object_get(v, "recorded")))
      ag_str_puts(out, "none");
    ag_str_printf(out, " of %lld", (long long)json_integer_value(json_object_get(v, "total")));
    const char *k;
    json_t *e;
    json_object_foreach(json_object_get(v, "unrecorded"), k, e) {
      ag_str_puts(out, "; ");
      fmt_ranges(e, out);
      ag_str_printf(out, ": %s", k);
    }
    json_t *rs = json_object_get(v, "records_sized");
    const char *from = json_string_value(json_object_get(rs, "from"));
    if (from) /* the records per warp, and from what */
      ag_str_printf(out, "; %lld records per warp (%s)",
                    (long long)json_integer_value(json_object_get(rs, "records_per_warp")),
                    !strcmp(from, "count") ? "sized from the count-only launch" : from);
    return;
  } else if (json_is_object(v)) { /* a breakdown: key: count / mean, at most 6 keys */
    const char *k;
    json_t *e;
    size_t shown = 0;
    json_object_foreach(v, k, e) {
      if (shown == 6) {
        ag_str_printf(out, " … (%zu more; --json)", json_object_size(v) - shown);
        break;
      }
      ag_str_printf(out, "%s%s: ", shown ? ", " : "", k);
      json_t *c = json_object_get(e, "count"), *m = json_object_get(e, "mean");
      if (json_is_object(e) && c) { /* a group: its count and mean (in the value's unit) */
        ag_str_printf(out, "n=%lld", (long long)json_integer_value(c));
        if (json_is_number(m)) {
          ag_str_puts(out, " mean ");
          fmt_value(m, unit, out);
        }
      } else if (json_is_number(e) || json_is_string(e)) { /* a plain field */
        fmt_value(e, "", out);
      } else {
        ag_str_puts(out, json_is_boolean(e) ? (json_is_true(e) ? "yes" : "no") : "(data)");
      }
      shown++;
    }
    return;
  } else {
    ag_str_puts(out, json_is_null(v) ? "n/a" : "(data)");
    return;
  }
  if (*unit && strcmp(unit, "count"))
    ag_str_printf(out, " %s", unit);
}

int ag_report_json_text(const json_t *root, ag_str *out) {
  json_t *values = json_object_get(root, "values");
  json_t *missing = json_object_get(root, "missing");
  json_t *not_joined = json_object_get(root, "not_joined");
  size_t n = json_array_size(values);
  region_rank *rk = ag_calloc(n + 1, sizeof *rk);
  if (!rk)
    return AG_ENOMEM;
  size_t nr = 0;
  for (size_t i = 0; i < n; i++) {
    json_t *v = json_array_get(values, i);
    const char *reg = json_string_value(json_object_get(v, "region"));
    if (!reg)
      reg = "(program)";
    size_t k = 0;
    while (k < nr && strcmp(rk[k].name, reg))
      k++;
    if (k == nr)
      rk[nr++] = (region_rank){reg, 0, 0};
    const char *stat = json_string_value(json_object_get(v, "stat"));
    const char *unit = json_string_value(json_object_get(v, "unit"));
    json_t *val = json_object_get(v, "value");
    if (!stat || strcmp(stat, "total") || !json_is_number(val))
      continue;
    /* times rank first; instruction counts are not times */
    double *w = unit && !strcmp(unit, "ns") ? &rk[k].weight : &rk[k].count;
    if (json_number_value(val) > *w)
      *w = json_number_value(val);
  }
  qsort(rk, nr, sizeof *rk, cmp_rank);
  json_t *q = json_object_get(root, "query");
  char qd[512];
  ag_demangle_path(json_string_value(json_object_get(q, "region")), qd, sizeof qd);
  ag_str_printf(out, "observe %s on %s", qd, json_string_value(json_object_get(root, "program")));
  const char *sc = json_string_value(json_object_get(q, "scope"));
  if (sc && *sc)
    ag_str_printf(out, " {%s}", sc);
  ag_str_putc(out, '\n');
  for (size_t k = 0; k < nr; k++) {
    char disp[512];
    ag_demangle_path(rk[k].name, disp, sizeof disp);
    ag_str_printf(out, "%s\n", disp);
    for (size_t i = 0; i < n; i++) {
      json_t *v = json_array_get(values, i);
      const char *reg = json_string_value(json_object_get(v, "region"));
      if (strcmp(reg ? reg : "(program)", rk[k].name))
        continue;
      const char *stat = json_string_value(json_object_get(v, "stat"));
      const char *unit = json_string_value(json_object_get(v, "unit"));
      ag_str_printf(out, "  %-12s %-10s ", json_string_value(json_object_get(v, "signal")),
                    stat ? stat : "");
      const char *flag = json_string_value(json_object_get(v, "flag"));
      if (flag) { /* not a plain number: the flag first, the raw figure beside it */
        ag_str_printf(out, "flagged (raw ");
        fmt_value(json_object_get(v, "raw"), unit ? unit : "", out);
        ag_str_printf(out, "): %s", flag);
      } else {
        fmt_value(json_object_get(v, "value"), unit ? unit : "", out);
      }
      json_t *dist = json_object_get(v, "dist");
      if (json_is_object(dist)) { /* a pooled value: its spread beside it */
        ag_str_printf(out, " (n=%lld, min ", (long long)json_integer_value(json_object_get(dist, "count")));
        fmt_value(json_object_get(dist, "min"), unit ? unit : "", out);
        ag_str_puts(out, ", p50 ");
        fmt_value(json_object_get(dist, "p50"), unit ? unit : "", out);
        ag_str_puts(out, ", p95 ");
        fmt_value(json_object_get(dist, "p95"), unit ? unit : "", out);
        ag_str_puts(out, ", max ");
        fmt_value(json_object_get(dist, "max"), unit ? unit : "", out);
        ag_str_puts(out, ")");
      }
      ag_str_printf(out, "  [%s", json_string_value(json_object_get(v, "qual")));
      json_t *e = json_object_get(v, "entropy");
      if (e)
        ag_str_printf(out, ", H=%.2f", json_number_value(e));
      ag_str_puts(out, "]\n");
    }
  }
  size_t i;
  json_t *m;
  json_array_foreach(missing, i, m) {
    const char *sig = json_string_value(json_object_get(m, "signal"));
    ag_str_printf(out, "missing %s: %s\n", sig ? sig : "", json_string_value(json_object_get(m, "why")));
  }
  json_array_foreach(json_object_get(root, "warnings"), i, m)
      ag_str_printf(out, "warning: %s\n", json_string_value(m));
  json_array_foreach(not_joined, i, m) ag_str_printf(
      out, "not joined %s: %s\n", json_string_value(json_object_get(m, "what")),
      json_string_value(json_object_get(m, "why")));
  ag_free(rk);
  return out->oom ? AG_ENOMEM : 0;
}

int ag_report_text(const ag_report *r, ag_str *out) { return ag_report_json_text(r->root, out); }
