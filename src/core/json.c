/*
 * json.c — JSON through jansson, with parse errors turned into diagnostics
 * that carry line and column, and a canonical form for hashing configs.
 */
#include "argus/core.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>

#include <stdlib.h>
#include <string.h>

static int to_diag(const json_error_t *e, const char *name, const char *text,
                   size_t len, ag_diags *diags) {
  if (diags) {
    size_t ll = 0;
    const char *src = text ? ag_text_line(text, len, e->line, &ll) : NULL;
    ag_diags_add(diags, AG_SEV_ERROR, name, e->line, e->column > 0 ? e->column : 1,
                 src, ll, "invalid JSON: %s", e->text);
  }
  return AG_EPARSE;
}

int ag_json_load_str(const char *text, const char *name, ag_diags *diags,
                     json_t **out) {
  json_error_t e;
  *out = json_loads(text, JSON_REJECT_DUPLICATES, &e);
  if (!*out)
    return to_diag(&e, name, text, strlen(text), diags);
  return 0;
}

int ag_json_load_file(const char *path, ag_diags *diags, json_t **out) {
  char *text = NULL;
  size_t len = 0;
  *out = NULL;
  int rc = ag_file_read(path, &text, &len);
  if (rc) {
    if (diags)
      ag_diags_add(diags, AG_SEV_ERROR, path, 0, 0, NULL, 0,
                   "cannot read file: %s", ag_strerror(rc));
    return rc;
  }
  json_error_t e;
  *out = json_loadb(text, len, JSON_REJECT_DUPLICATES, &e);
  if (!*out)
    rc = to_diag(&e, path, text, len, diags);
  ag_free(text);
  return rc;
}

int ag_json_load_doc(const char *name, const void *data, size_t len, const char *what,
                     ag_diags *diags, json_t **out) {
  json_error_t e;
  *out = data ? json_loadb(data, len, JSON_REJECT_DUPLICATES, &e)
              : json_load_file(name, JSON_REJECT_DUPLICATES, &e);
  if (*out)
    return 0;
  int rc = diags ? ag_diags_add(diags, AG_SEV_ERROR, name, e.line, e.column, NULL, 0,
                                "cannot read %s: %s", what, e.text)
                 : 0;
  return rc ? rc : AG_EPARSE;
}

char *ag_json_canonical(const json_t *j) {
  char *s = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
  if (!s)
    return NULL;
  char *r = ag_strdup(s); /* hand back memory from our own allocator */
  free(s);
  return r;
}

/* ------------------------------------------------------ position scanner */

typedef struct scan {
  const char *p, *end, *ls;
  int line;
} scan;

static void sc_ws(scan *s) {
  while (s->p < s->end && isspace((unsigned char)*s->p)) {
    if (*s->p == '\n') {
      s->line++;
      s->ls = s->p + 1;
    }
    s->p++;
  }
}

static int sc_skip_value(scan *s, int depth);

static int sc_string(scan *s, const char **start, size_t *len) {
  if (s->p >= s->end || *s->p != '"')
    return -1;
  s->p++;
  *start = s->p;
  while (s->p < s->end && *s->p != '"') {
    if (*s->p == '\\' && s->p + 1 < s->end)
      s->p++;
    s->p++;
  }
  if (s->p >= s->end)
    return -1;
  *len = (size_t)(s->p - *start);
  s->p++;
  return 0;
}

static int sc_skip_value(scan *s, int depth) {
  sc_ws(s);
  if (s->p >= s->end || depth > 64)
    return -1;
  char c = *s->p;
  if (c == '"') {
    const char *a;
    size_t n;
    return sc_string(s, &a, &n);
  }
  if (c == '{' || c == '[') {
    char close = c == '{' ? '}' : ']';
    s->p++;
    for (;;) {
      sc_ws(s);
      if (s->p < s->end && *s->p == close) {
        s->p++;
        return 0;
      }
      if (c == '{') {
        const char *a;
        size_t n;
        if (sc_string(s, &a, &n))
          return -1;
        sc_ws(s);
        if (s->p >= s->end || *s->p != ':')
          return -1;
        s->p++;
      }
      if (sc_skip_value(s, depth + 1))
        return -1;
      sc_ws(s);
      if (s->p < s->end && *s->p == ',')
        s->p++;
    }
  }
  while (s->p < s->end && !isspace((unsigned char)*s->p) && *s->p != ',' && *s->p != '}' &&
         *s->p != ']')
    s->p++;
  return 0;
}

int ag_json_locate(const char *text, const char *const *path, int n, int want_value, int *line,
                  int *col) {
  scan s = {text, text + strlen(text), text, 1};
  for (int d = 0; d < n; d++) {
    sc_ws(&s);
    if (s.p >= s.end || *s.p != '{')
      return -1;
    s.p++;
    for (;;) {
      sc_ws(&s);
      if (s.p >= s.end || *s.p == '}')
        return -1;
      const char *kp = s.p, *k;
      int kl = s.line;
      const char *kls = s.ls;
      size_t klen;
      if (sc_string(&s, &k, &klen))
        return -1;
      sc_ws(&s);
      if (s.p >= s.end || *s.p != ':')
        return -1;
      s.p++;
      if (klen == strlen(path[d]) && !memcmp(k, path[d], klen)) {
        if (d == n - 1) {
          if (want_value) {
            sc_ws(&s);
            *line = s.line;
            *col = (int)(s.p - s.ls) + 1;
          } else {
            *line = kl;
            *col = (int)(kp - kls) + 1;
          }
          return 0;
        }
        break; /* descend */
      }
      if (sc_skip_value(&s, 0))
        return -1;
      sc_ws(&s);
      if (s.p < s.end && *s.p == ',')
        s.p++;
    }
  }
  return -1;
}

void ag_json_diag(ag_diags *d, const char *text, const char *file,
                     const char *const *path, int n, int want_value, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int line = 0, col = 0;
  if (n)
    ag_json_locate(text, path, n, want_value, &line, &col);
  size_t ll = 0;
  const char *src = line ? ag_text_line(text, strlen(text), line, &ll) : NULL;
  ag_diags_add(d, AG_SEV_ERROR, file, line, col, src, ll, "%s", msg);
}


int ag_json_all_strings(const json_t *a, int nonempty) {
  if (!json_is_array(a))
    return 0;
  for (size_t i = 0; i < json_array_size(a); i++) {
    const json_t *e = json_array_get(a, i);
    if (!json_is_string(e) || (nonempty && !json_string_length(e)))
      return 0;
  }
  return 1;
}

double ag_json_num(const json_t *o, const char *key, double dflt) {
  json_t *v = json_object_get(o, key);
  return json_is_number(v) ? json_number_value(v) : dflt;
}

int ag_json_strv(const json_t *a, char ***out, int *n) {
  size_t k = json_array_size(a);
  char **v = ag_calloc(k + 1, sizeof *v);
  *out = NULL;
  if (!v)
    return AG_ENOMEM;
  for (size_t i = 0; i < k; i++)
    if (!(v[i] = ag_strdup(json_string_value(json_array_get(a, i))))) {
      ag_strv_free(v);
      return AG_ENOMEM;
    }
  *out = v;
  *n = (int)k;
  return 0;
}

void ag_strv_free(char **v) {
  if (!v)
    return;
  for (char **p = v; *p; p++)
    ag_free(*p);
  ag_free(v);
}
