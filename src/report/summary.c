/*
 * summary.c — the prompt-sized summary of a report, for agents: the few
 * facts an optimizer acts on, each with its qualification, ranked, cut to a
 * token budget (docs/report.md, "Summary").
 *
 * Reads an `argus.report/1` (argus observe) or an `argus.trace/1` (argus
 * trace --json) report. Ranking: a header and the qualifications that
 * govern every number (tracing's cost, warnings, losses) come first; then
 * the regions by their share of the query region's summed occurrence time;
 * then the async sites by their mean exposed wait; then what is missing,
 * the compiler's figures and the rest. Lines are emitted in that order
 * until the next one would pass the budget; a last line says how many were
 * left out. Tokens are counted by ag_summary_tokens (3 bytes per token,
 * rounded up), which overestimates byte-level BPE tokenizers on this text.
 * A report holds at most thousands of values: everything is linear or
 * n log n.
 */
#include "argus/report.h"

#include "argus/demangle.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One region's duration figures (ns). */
typedef struct sum_region {
  const char *name;
  double total, mean, p95;
  long long count;
  int have_total, have_mean, have_p95, have_count;
  const char *qual;
  double entropy; /* < 0: none */
} sum_region;

/* One async site: its per-iteration values pooled. */
typedef struct sum_site {
  const char *region;
  char op[96];
  double exposed, latency, hidden; /* sums */
  int nexposed, nlatency, nhidden, nflagged;
} sum_site;

/* A line of the summary and its place in the ranking. */
typedef struct sum_line {
  int tier;   /* smaller first */
  double key; /* larger first within a tier */
  int seq;    /* insertion order breaks ties */
  const char *what; /* "fact", "warning", "missing": for the left-out count */
  char *text; /* owned, no newline */
} sum_line;

typedef struct sum {
  AG_VEC(sum_region) regions;
  AG_VEC(sum_site) sites;
  AG_VEC(sum_line) lines;
  int oom;
} sum;

enum { TIER_HEAD, TIER_QUAL, TIER_TIME, TIER_ASYNC, TIER_MISSING, TIER_STATIC, TIER_OTHER };

size_t ag_summary_tokens(size_t bytes) {
  return (bytes + AG_SUMMARY_BYTES_PER_TOKEN - 1) / AG_SUMMARY_BYTES_PER_TOKEN;
}

static void add_line(sum *s, int tier, double key, const char *what, ag_str *text) {
  int oom = text->oom;
  char *t = ag_str_detach(text);
  sum_line l = {tier, key, (int)s->lines.n, what, t};
  if (!t || oom || ag_vec_push(&s->lines, l)) {
    ag_free(t);
    s->oom = 1;
  }
}

/* 3 significant digits with the unit that fits: "264 ns", "4.58 us". */
static void fmt_ns(ag_str *o, double ns) {
  static const struct { double div; const char *u; } units[] = {
      {1e9, "s"}, {1e6, "ms"}, {1e3, "us"}, {1, "ns"}};
  double a = fabs(ns);
  size_t k = 0;
  while (k + 1 < sizeof units / sizeof units[0] && a < units[k].div)
    k++;
  double v = ns / units[k].div;
  double av = fabs(v);
  ag_str_printf(o, av >= 100 ? "%.0f %s" : av >= 10 ? "%.1f %s" : "%.2f %s", v, units[k].u);
}

static void fmt_qual(ag_str *o, const char *qual, double entropy) {
  ag_str_printf(o, " [%s", qual ? qual : "?");
  if (entropy >= 0)
    ag_str_printf(o, ", H=%.2f", entropy);
  ag_str_putc(o, ']');
}

/* The region name as people read it, the kernel's part demangled. */
static void fmt_region(ag_str *o, const char *name) {
  char disp[512];
  ag_demangle_path(name, disp, sizeof disp);
  ag_str_puts(o, disp);
}

static sum_region *region_of(sum *s, const char *name) {
  for (size_t i = 0; i < s->regions.n; i++)
    if (!strcmp(s->regions.v[i].name, name))
      return &s->regions.v[i];
  sum_region r = {name, 0, 0, 0, 0, 0, 0, 0, 0, NULL, -1};
  if (ag_vec_push(&s->regions, r)) {
    s->oom = 1;
    return NULL;
  }
  return &s->regions.v[s->regions.n - 1];
}

/* stat "exposed[2f8440dedd58145c:2@0]": the kind, and the op without the
 * iteration. 0 when the stat has that form. */
static int site_stat(const char *stat, char *kind, size_t kcap, char *op, size_t ocap) {
  const char *lb = stat ? strchr(stat, '[') : NULL;
  const char *at = lb ? strrchr(lb, '@') : NULL;
  size_t n = stat ? strlen(stat) : 0;
  if (!lb || !at || stat[n - 1] != ']' || (size_t)(lb - stat) >= kcap ||
      (size_t)(at - lb - 1) >= ocap)
    return -1;
  snprintf(kind, kcap, "%.*s", (int)(lb - stat), stat);
  snprintf(op, ocap, "%.*s", (int)(at - lb - 1), lb + 1);
  return 0;
}

static void add_site_value(sum *s, const char *region, const char *stat, json_t *val,
                           int flagged) {
  char kind[32], op[96];
  if (site_stat(stat, kind, sizeof kind, op, sizeof op))
    return;
  sum_site *st = NULL;
  for (size_t i = 0; i < s->sites.n && !st; i++)
    if (!strcmp(s->sites.v[i].op, op) && !strcmp(s->sites.v[i].region, region))
      st = &s->sites.v[i];
  if (!st) {
    sum_site z;
    memset(&z, 0, sizeof z);
    z.region = region;
    snprintf(z.op, sizeof z.op, "%s", op);
    if (ag_vec_push(&s->sites, z)) {
      s->oom = 1;
      return;
    }
    st = &s->sites.v[s->sites.n - 1];
  }
  if (flagged) {
    st->nflagged++;
    return;
  }
  if (!json_is_number(val))
    return;
  double x = json_number_value(val);
  if (!strcmp(kind, "exposed"))
    st->exposed += x, st->nexposed++;
  else if (!strcmp(kind, "latency"))
    st->latency += x, st->nlatency++;
  else if (!strcmp(kind, "hidden"))
    st->hidden += x, st->nhidden++;
}

/* The region the shares are of: the query's (named in full or by its last
 * parts), else the one with the largest total. */
static const sum_region *denominator(const sum *s, const char *qregion) {
  const sum_region *best = NULL;
  size_t ql = qregion ? strlen(qregion) : 0;
  for (size_t i = 0; ql && i < s->regions.n; i++) {
    const sum_region *r = &s->regions.v[i];
    size_t n = strlen(r->name);
    int match = !strcmp(r->name, qregion) ||
                (n > ql && r->name[n - ql - 1] == '/' && !strcmp(r->name + n - ql, qregion));
    if (match && r->have_total && (!best || strlen(best->name) > n))
      best = r;
  }
  if (best)
    return best;
  for (size_t i = 0; i < s->regions.n; i++) {
    const sum_region *r = &s->regions.v[i];
    if (r->have_total && (!best || r->total > best->total))
      best = r;
  }
  return best;
}

/* Is c a direct child of p among the regions with a total? */
static int direct_child(const sum *s, const char *p, const char *c) {
  size_t pl = strlen(p);
  if (strncmp(c, p, pl) || c[pl] != '/')
    return 0;
  for (size_t i = 0; i < s->regions.n; i++) {
    const char *m = s->regions.v[i].name;
    size_t ml = strlen(m);
    if (s->regions.v[i].have_total && ml > pl && ml < strlen(c) && !strncmp(c, m, ml) &&
        c[ml] == '/' && !strncmp(m, p, pl) && m[pl] == '/')
      return 0;
  }
  return 1;
}

static void time_facts(sum *s, const char *qregion) {
  const sum_region *d = denominator(s, qregion);
  double D = d && d->total > 0 ? d->total : 0;
  double children = 0;
  int nchildren = 0;
  for (size_t i = 0; i < s->regions.n; i++) {
    const sum_region *r = &s->regions.v[i];
    if (!r->have_total && !r->have_mean)
      continue;
    ag_str t = AG_STR_INIT;
    double share = D > 0 && r->have_total ? 100.0 * r->total / D : -1;
    fmt_region(&t, r->name);
    if (share >= 0)
      ag_str_printf(&t, r == d ? " 100%%" : " %.1f%%", share);
    ag_str_puts(&t, " (");
    if (r->have_total)
      fmt_ns(&t, r->total);
    if (r->have_count)
      ag_str_printf(&t, "%s%lld occurrences", r->have_total ? " over " : "", r->count);
    if (r->have_mean) {
      ag_str_puts(&t, ", mean ");
      fmt_ns(&t, r->mean);
    }
    if (r->have_p95) {
      ag_str_puts(&t, ", p95 ");
      fmt_ns(&t, r->p95);
    }
    ag_str_putc(&t, ')');
    fmt_qual(&t, r->qual, r->entropy);
    add_line(s, TIER_TIME, r->have_total ? r->total : 0, "fact", &t);
    if (d && r != d && r->have_total && direct_child(s, d->name, r->name)) {
      children += r->total;
      nchildren++;
    }
  }
  /* time of the query region in none of its child regions */
  if (D > 0 && nchildren && children <= D && (D - children) / D >= 0.05) {
    ag_str t = AG_STR_INIT;
    ag_str_printf(&t, "%.1f%% in none of ", 100.0 * (D - children) / D);
    fmt_region(&t, d->name);
    ag_str_printf(&t, "'s %d child region%s (", nchildren, nchildren == 1 ? "" : "s");
    fmt_ns(&t, D - children);
    ag_str_puts(&t, ") [derived]");
    add_line(s, TIER_TIME, D - children, "fact", &t);
  }
}

static void async_facts(sum *s) {
  for (size_t i = 0; i < s->sites.n; i++) {
    const sum_site *st = &s->sites.v[i];
    if (!st->nexposed && !st->nlatency && !st->nflagged)
      continue;
    ag_str t = AG_STR_INIT;
    ag_str_puts(&t, "async site ");
    ag_str_puts(&t, st->op);
    ag_str_puts(&t, " in ");
    fmt_region(&t, st->region);
    ag_str_puts(&t, ":");
    if (st->nexposed) {
      ag_str_puts(&t, " exposed wait mean ");
      fmt_ns(&t, st->exposed / st->nexposed);
      ag_str_printf(&t, " over %d iteration%s [observed]", st->nexposed,
                    st->nexposed == 1 ? "" : "s");
    }
    if (st->nlatency) {
      ag_str_puts(&t, st->nexposed ? "; latency mean " : " latency mean ");
      fmt_ns(&t, st->latency / st->nlatency);
      ag_str_puts(&t, " [derived]");
    }
    if (st->nhidden) {
      ag_str_puts(&t, "; hidden mean ");
      fmt_ns(&t, st->hidden / st->nhidden);
      ag_str_puts(&t, " [derived]");
    }
    if (st->nflagged)
      ag_str_printf(&t, "; %d value%s flagged (--json)", st->nflagged,
                    st->nflagged == 1 ? "" : "s");
    add_line(s, TIER_ASYNC, st->nexposed ? st->exposed / st->nexposed : 0, "fact", &t);
  }
}

/* At most `max` bytes of text, else cut at a word (or a character) with
 * " …" (4 bytes more). */
static void put_cut(ag_str *o, const char *text, size_t max) {
  size_t n = text ? strlen(text) : 0;
  if (n <= max) {
    ag_str_puts(o, text ? text : "");
    return;
  }
  size_t k = max;
  while (k > max / 2 && text[k] != ' ')
    k--;
  while (k > 0 && ((unsigned char)text[k] & 0xC0) == 0x80) /* not inside a UTF-8 character */
    k--;
  ag_str_append(o, text, k);
  ag_str_puts(o, " …");
}

#define CUT 200 /* bytes of one warning or reason */
#define PROSE_MIN 64 /* the shortest room a warning or reason is cut to */

static void report_values(sum *s, const json_t *root) {
  json_t *values = json_object_get(root, "values");
  size_t i;
  json_t *v;
  ag_str statics = AG_STR_INIT;
  const char *static_region = NULL;
  double added_share = NAN, added_time = NAN;
  json_array_foreach(values, i, v) {
    const char *region = json_string_value(json_object_get(v, "region"));
    const char *sig = json_string_value(json_object_get(v, "signal"));
    const char *stat = json_string_value(json_object_get(v, "stat"));
    const char *qual = json_string_value(json_object_get(v, "qual"));
    json_t *val = json_object_get(v, "value");
    int flagged = json_object_get(v, "flag") != NULL;
    if (!sig || !stat)
      continue;
    if (!strcmp(sig, "duration") && region && json_is_number(val) && !flagged) {
      sum_region *r = region_of(s, region);
      double x = json_number_value(val);
      if (!r)
        continue;
      if (!strcmp(stat, "total"))
        r->total = x, r->have_total = 1, r->qual = qual;
      else if (!strcmp(stat, "mean"))
        r->mean = x, r->have_mean = 1, r->qual = r->qual ? r->qual : qual;
      else if (!strcmp(stat, "p95"))
        r->p95 = x, r->have_p95 = 1;
      else if (!strcmp(stat, "count"))
        r->count = (long long)x, r->have_count = 1;
      json_t *e = json_object_get(v, "entropy");
      if (json_is_number(e))
        r->entropy = json_number_value(e);
    } else if (!strcmp(sig, "async_latency") && region) {
      add_site_value(s, region, stat, val, flagged);
    } else if (!strcmp(sig, "perturbation") && json_is_number(val)) {
      if (!strcmp(stat, "added_share"))
        added_share = json_number_value(val);
      else if (!strcmp(stat, "added_time"))
        added_time = json_number_value(val);
    } else if (!strcmp(sig, "static")) {
      const char *txt = json_string_value(val);
      if (!strcmp(stat, "production") && txt && !strncmp(txt, "warning: ", 9)) {
        ag_str t = AG_STR_INIT;
        ag_str_puts(&t, "warning: ");
        put_cut(&t, txt + 9, CUT);
        add_line(s, TIER_QUAL, 0, "warning", &t);
      } else if (json_is_integer(val) && region && strcmp(region, "(module)")) {
        const char *unit = json_string_value(json_object_get(v, "unit"));
        if (!static_region || strcmp(static_region, region)) {
          if (static_region) {
            ag_str_puts(&statics, " [observed]");
            add_line(s, TIER_STATIC, 0, "fact", &statics);
          }
          ag_str_init(&statics);
          ag_str_puts(&statics, "compiler: ");
          fmt_region(&statics, region);
          static_region = region;
        }
        ag_str_printf(&statics, ", %s %lld%s%s", stat, (long long)json_integer_value(val),
                      unit && *unit && strcmp(unit, "count") && strcmp(unit, stat) ? " " : "",
                      unit && *unit && strcmp(unit, "count") && strcmp(unit, stat) ? unit : "");
      }
    }
  }
  if (static_region) {
    ag_str_puts(&statics, " [observed]");
    add_line(s, TIER_STATIC, 0, "fact", &statics);
  }
  ag_str_release(&statics);
  if (isfinite(added_share) || isfinite(added_time)) {
    ag_str t = AG_STR_INIT;
    ag_str_puts(&t, "tracing added ");
    if (isfinite(added_time))
      fmt_ns(&t, added_time);
    if (isfinite(added_share))
      ag_str_printf(&t, "%s%.1f%%%s", isfinite(added_time) ? " (" : "", added_share,
                    isfinite(added_time) ? ")" : "");
    ag_str_puts(&t, " to the kernel time; durations are of the traced build [derived]");
    add_line(s, TIER_QUAL, 1, "fact", &t);
  }
}

static void report_lists(sum *s, const json_t *root) {
  size_t i;
  json_t *m;
  json_array_foreach(json_object_get(root, "warnings"), i, m) {
    ag_str t = AG_STR_INIT;
    ag_str_puts(&t, "warning: ");
    put_cut(&t, json_string_value(m), CUT);
    add_line(s, TIER_QUAL, 0, "warning", &t);
  }
  json_array_foreach(json_object_get(root, "missing"), i, m) {
    ag_str t = AG_STR_INIT;
    const char *sig = json_string_value(json_object_get(m, "signal"));
    const char *reg = json_string_value(json_object_get(m, "region"));
    ag_str_printf(&t, "missing %s", sig ? sig : "value");
    if (reg) {
      ag_str_puts(&t, " of ");
      fmt_region(&t, reg);
    }
    ag_str_puts(&t, ": ");
    put_cut(&t, json_string_value(json_object_get(m, "why")), CUT);
    add_line(s, TIER_MISSING, 0, "missing", &t);
  }
  size_t nj = json_array_size(json_object_get(root, "not_joined"));
  if (nj) {
    ag_str t = AG_STR_INIT;
    ag_str_printf(&t, "%zu piece%s of evidence not joined (other program version or scope; "
                      "--json 'not_joined')", nj, nj == 1 ? "" : "s");
    add_line(s, TIER_QUAL, 0, "warning", &t);
  }
}

/* argus.trace/1: regions with ns statistics, and the losses. */
static void trace_values(sum *s, const json_t *root) {
  size_t i;
  json_t *g;
  json_array_foreach(json_object_get(root, "regions"), i, g) {
    const char *name = json_string_value(json_object_get(g, "region"));
    json_t *ns = json_object_get(g, "ns");
    sum_region *r = name && json_is_object(ns) ? region_of(s, name) : NULL;
    if (!r)
      continue;
    r->qual = json_string_value(json_object_get(g, "qual"));
    json_t *x;
    if (json_is_number(x = json_object_get(ns, "total")))
      r->total = json_number_value(x), r->have_total = 1;
    if (json_is_number(x = json_object_get(ns, "mean")))
      r->mean = json_number_value(x), r->have_mean = 1;
    if (json_is_number(x = json_object_get(ns, "p95")))
      r->p95 = json_number_value(x), r->have_p95 = 1;
    if (json_is_number(x = json_object_get(ns, "count")))
      r->count = (long long)json_number_value(x), r->have_count = 1;
  }
  const char *k;
  json_t *v;
  ag_str t = AG_STR_INIT;
  json_object_foreach(json_object_get(root, "losses"), k, v) {
    if (json_is_integer(v) && json_integer_value(v) > 0)
      ag_str_printf(&t, "%s%s %lld", t.len ? ", " : "losses: ", k,
                    (long long)json_integer_value(v));
  }
  if (t.len) {
    ag_str_puts(&t, " (the figures leave these out)");
    add_line(s, TIER_QUAL, 0, "warning", &t);
  }
  ag_str_release(&t);
}

static int cmp_line(const void *a, const void *b) {
  const sum_line *x = a, *y = b;
  if (x->tier != y->tier)
    return x->tier < y->tier ? -1 : 1;
  if (x->key != y->key)
    return x->key > y->key ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

#define TRAILER "… %zu more left out (%d facts, %d warnings, %d missing): --json\n"

int ag_report_summary(const json_t *report, int max_tokens, ag_str *out) {
  const char *schema = json_string_value(json_object_get(report, "schema"));
  int is_trace = schema && !strcmp(schema, "argus.trace/1");
  if (!schema || (!is_trace && strcmp(schema, AG_REPORT_SCHEMA)))
    return AG_EINVAL;
  if (max_tokens < AG_SUMMARY_MIN_TOKENS)
    return AG_ERANGE;
  sum s;
  memset(&s, 0, sizeof s);
  json_t *q = json_object_get(report, "query");
  const char *qregion = json_string_value(json_object_get(q, "region"));
  ag_str h = AG_STR_INIT;
  if (is_trace) {
    ag_str_printf(&h, "argus trace on %s", json_string_value(json_object_get(report, "device"))
                                              ? json_string_value(json_object_get(report, "device"))
                                              : "?");
    trace_values(&s, report);
  } else {
    ag_str_puts(&h, "argus observe ");
    fmt_region(&h, qregion ? qregion : "(all)");
    ag_str_printf(&h, " on %s", json_string_value(json_object_get(report, "program"))
                                    ? json_string_value(json_object_get(report, "program"))
                                    : "?");
    report_values(&s, report);
    report_lists(&s, report);
  }
  const char *sc = json_string_value(json_object_get(is_trace ? report : q, "scope"));
  if (sc && *sc)
    ag_str_printf(&h, " {%s}", sc);
  const sum_region *d = denominator(&s, qregion);
  if (d) {
    ag_str_puts(&h, "; % = share of ");
    fmt_region(&h, d->name);
    ag_str_puts(&h, "'s summed occurrence time");
  }
  add_line(&s, TIER_HEAD, 0, "fact", &h);
  time_facts(&s, qregion);
  async_facts(&s);
  int rc = s.oom ? AG_ENOMEM : 0;
  qsort(s.lines.v, s.lines.n, sizeof *s.lines.v, cmp_line);
  /* emit in rank order while the next line and the trailer still fit */
  size_t budget = (size_t)max_tokens * AG_SUMMARY_BYTES_PER_TOKEN;
  /* room for the last line: its longest form, with every count at its largest */
  char tb[160];
  size_t nl = s.lines.n;
  size_t trailer = (size_t)snprintf(tb, sizeof tb, TRAILER, nl, (int)nl, (int)nl, (int)nl);
  size_t used = 0, k = 0;
  for (; !rc && k < s.lines.n; k++) {
    size_t n = strlen(s.lines.v[k].text) + 1;
    size_t room = budget - (k + 1 < s.lines.n ? trailer : 0);
    if (used + n > room) {
      /* prose (the header, a warning, a reason) is cut to the room left when
       * that still says something; a fact is whole or not at all */
      size_t left = room > used ? room - used : 0;
      if (k == 0 || (strcmp(s.lines.v[k].what, "fact") && left >= PROSE_MIN)) {
        ag_str t = AG_STR_INIT;
        put_cut(&t, s.lines.v[k].text, left > 6 ? left - 6 : 0); /* " …\n" */
        ag_str_printf(out, "%s\n", ag_str_cstr(&t));
        used += t.len + 1;
        ag_str_release(&t);
        continue;
      }
      break;
    }
    ag_str_printf(out, "%s\n", s.lines.v[k].text);
    used += n;
  }
  if (!rc && k < s.lines.n) {
    int nf = 0, nw = 0, nm = 0;
    for (size_t i = k; i < s.lines.n; i++) {
      const char *w = s.lines.v[i].what;
      nf += !strcmp(w, "fact"), nw += !strcmp(w, "warning"), nm += !strcmp(w, "missing");
    }
    ag_str_printf(out, TRAILER, s.lines.n - k, nf, nw, nm);
  }
  for (size_t i = 0; i < s.lines.n; i++)
    ag_free(s.lines.v[i].text);
  ag_vec_free(&s.lines);
  ag_vec_free(&s.regions);
  ag_vec_free(&s.sites);
  if (!rc && out->oom)
    rc = AG_ENOMEM;
  return rc;
}
