/*
 * scope.c — scopes select the dynamic executions a query reports: a warp
 * role, and sets of iterations, SMs, CTAs, warps and launches, each a union
 * of half-open ranges. Parsed from "role=consumer,iter=0:8,sm=3".
 */
#include "argus/plan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const key_names[AG_SCOPE_NDIMS] = {"iter", "sm", "cta", "warp", "launch"};

const char *ag_scope_key_name(ag_scope_key k) {
  return (unsigned)k < AG_SCOPE_NDIMS ? key_names[k] : "?";
}

static int parse_int(const char *s, size_t n, int64_t *v) {
  char buf[32];
  if (n == 0 || n >= sizeof buf)
    return -1;
  memcpy(buf, s, n);
  buf[n] = 0;
  char *end;
  errno = 0;
  long long x = strtoll(buf, &end, 10);
  if (errno || *end || x < 0)
    return -1;
  *v = x;
  return 0;
}

static int cmp_range(const void *a, const void *b) {
  const ag_range *x = a, *y = b;
  return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : (x->hi > y->hi) - (x->hi < y->hi);
}

int ag_scope_parse(const char *text, ag_scope *out, ag_diags *d) {
  memset(out, 0, sizeof *out);
  if (!text)
    return 0;
  const char *p = text;
  while (*p) {
    const char *item = p;
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    const char *eq = memchr(p, '=', n);
    int col = (int)(item - text) + 1;
    if (!eq) {
      ag_diags_add(d, AG_SEV_ERROR, "scope", 1, col, text, strlen(text),
                   "expected key=value in scope, got '%.*s'", (int)n, p);
      return AG_EPARSE;
    }
    size_t kl = (size_t)(eq - p);
    const char *v = eq + 1;
    size_t vl = n - kl - 1;
    if (kl == 4 && !strncmp(p, "role", 4)) {
      if (vl == 0 || vl >= sizeof out->role) {
        ag_diags_add(d, AG_SEV_ERROR, "scope", 1, col, text, strlen(text),
                     "role name must have 1 to 63 characters");
        return AG_EPARSE;
      }
      memcpy(out->role, v, vl);
      out->role[vl] = 0;
    } else {
      int k = -1;
      for (int i = 0; i < AG_SCOPE_NDIMS; i++)
        if (strlen(key_names[i]) == kl && !strncmp(p, key_names[i], kl))
          k = i;
      if (k < 0) {
        static const char *const keys[] = {"role", "iter", "sm", "cta", "warp", "launch"};
        char key[64];
        ag_str near = AG_STR_INIT;
        snprintf(key, sizeof key, "%.*s", (int)(kl < 63 ? kl : 63), p);
        ag_str_suggest(&near, key, keys, sizeof keys / sizeof keys[0]);
        ag_diags_add(d, AG_SEV_ERROR, "scope", 1, col, text, strlen(text),
                     "unknown scope key '%.*s'%s%s (known: role, iter, sm, cta, warp, launch)",
                     (int)kl, p, near.len ? ": " : "", ag_str_cstr(&near));
        ag_str_release(&near);
        return AG_EPARSE;
      }
      ag_range r;
      const char *colon = memchr(v, ':', vl);
      int bad = colon ? parse_int(v, (size_t)(colon - v), &r.lo) ||
                            parse_int(colon + 1, vl - (size_t)(colon - v) - 1, &r.hi)
                      : parse_int(v, vl, &r.lo);
      if (!colon && !bad)
        r.hi = r.lo + 1;
      if (bad) {
        ag_diags_add(d, AG_SEV_ERROR, "scope", 1, (int)(v - text) + 1, text, strlen(text),
                     "'%s' needs a non-negative integer or a range a:b, got '%.*s'",
                     key_names[k], (int)vl, v);
        return AG_EPARSE;
      }
      if (r.hi <= r.lo) {
        ag_diags_add(d, AG_SEV_ERROR, "scope", 1, (int)(v - text) + 1, text, strlen(text),
                     "empty scope: %s=%.*s selects nothing (ranges are a:b with a < b)",
                     key_names[k], (int)vl, v);
        return AG_EINVAL;
      }
      ag_scope_dim *dim = &out->dim[k];
      if (dim->n >= AG_SCOPE_MAX_RANGES) {
        ag_diags_add(d, AG_SEV_ERROR, "scope", 1, col, text, strlen(text),
                     "too many ranges for '%s' (at most %d)", key_names[k],
                     AG_SCOPE_MAX_RANGES);
        return AG_EINVAL;
      }
      dim->r[dim->n++] = r;
      qsort(dim->r, (size_t)dim->n, sizeof dim->r[0], cmp_range);
    }
    p = end ? end + 1 : p + n;
  }
  return 0;
}

int ag_scope_format(const ag_scope *s, ag_str *out) {
  int first = 1;
  for (int k = 0; k < AG_SCOPE_NDIMS; k++)
    for (int i = 0; i < s->dim[k].n; i++) {
      const ag_range *r = &s->dim[k].r[i];
      ag_str_printf(out, "%s%s=%lld:%lld", first ? "" : ",", key_names[k], (long long)r->lo,
                    (long long)r->hi);
      first = 0;
    }
  if (s->role[0])
    ag_str_printf(out, "%srole=%s", first ? "" : ",", s->role);
  return out->oom ? AG_ENOMEM : 0;
}

int ag_scope_contains(const ag_scope *s, ag_scope_key k, int64_t v) {
  const ag_scope_dim *d = &s->dim[k];
  if (!d->n)
    return 1;
  for (int i = 0; i < d->n; i++)
    if (v >= d->r[i].lo && v < d->r[i].hi)
      return 1;
  return 0;
}

int ag_launch_sel_parse(const char *text, ag_launch_sel *out, ag_diags *d) {
  memset(out, 0, sizeof *out);
  if (!text || !*text || !strcmp(text, "default"))
    return 0;
  if (!strcmp(text, "all")) {
    out->kind = AG_LAUNCH_ALL;
    return 0;
  }
  if (!strcmp(text, "last")) {
    out->kind = AG_LAUNCH_LAST;
    return 0;
  }
  char *end = NULL;
  errno = 0;
  long long lo = strtoll(text, &end, 10), hi = lo + 1;
  int ok = end != text && !errno && lo >= 0 && lo < (1ll << 30);
  if (ok && *end == ':') {
    const char *b = end + 1;
    hi = strtoll(b, &end, 10);
    ok = end != b && !errno && hi <= (1ll << 30);
  }
  if (!ok || *end || hi <= lo) {
    if (d)
      ag_diags_add(d, AG_SEV_ERROR, NULL, 0, 0, NULL, 0,
                   "--launches '%s' is not a launch selection: give all, last, N or a:b "
                   "with a < b (launches a to b-1, counted from 0)",
                   text);
    return AG_EPARSE;
  }
  out->kind = AG_LAUNCH_RANGE;
  out->lo = lo;
  out->hi = hi;
  return 0;
}
