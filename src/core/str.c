/*
 * str.c — growable strings and vectors. A failed append marks the string
 * (oom) and leaves its contents intact, so callers may chain appends and
 * check once.
 */
#include "argus/core.h"

#include <string.h>

void ag_str_init(ag_str *s) { memset(s, 0, sizeof *s); }

void ag_str_release(ag_str *s) {
  ag_free(s->p);
  memset(s, 0, sizeof *s);
}

int ag_str_reserve(ag_str *s, size_t extra) {
  if (s->len + extra + 1 <= s->cap)
    return 0;
  size_t cap = s->cap ? s->cap : 64;
  while (cap < s->len + extra + 1)
    cap *= 2;
  char *p = ag_realloc(s->p, cap);
  if (!p) {
    s->oom = 1;
    return AG_ENOMEM;
  }
  s->p = p;
  s->cap = cap;
  return 0;
}

int ag_str_append(ag_str *s, const char *data, size_t n) {
  if (ag_str_reserve(s, n))
    return AG_ENOMEM;
  if (n)
    memcpy(s->p + s->len, data, n);
  s->len += n;
  s->p[s->len] = 0;
  return 0;
}

int ag_str_puts(ag_str *s, const char *c) { return ag_str_append(s, c, strlen(c)); }

int ag_str_putc(ag_str *s, char c) { return ag_str_append(s, &c, 1); }

int ag_str_vprintf(ag_str *s, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  char small[256];
  int n = vsnprintf(small, sizeof small, fmt, ap);
  int rc = 0;
  if (n < 0) {
    rc = AG_EINVAL;
  } else if ((size_t)n < sizeof small) {
    rc = ag_str_append(s, small, (size_t)n);
  } else if ((rc = ag_str_reserve(s, (size_t)n)) == 0) {
    vsnprintf(s->p + s->len, (size_t)n + 1, fmt, ap2);
    s->len += (size_t)n;
  }
  va_end(ap2);
  return rc;
}

int ag_str_printf(ag_str *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = ag_str_vprintf(s, fmt, ap);
  va_end(ap);
  return rc;
}

void ag_str_clear(ag_str *s) {
  s->len = 0;
  if (s->p)
    s->p[0] = 0;
}

const char *ag_str_cstr(const ag_str *s) { return s->p ? s->p : ""; }

char *ag_str_detach(ag_str *s) {
  char *p = s->p;
  if (!p)
    p = ag_strdup("");
  memset(s, 0, sizeof *s);
  return p;
}

int ag_str_json_quote(ag_str *s, const char *c) {
  int rc = ag_str_putc(s, '"');
  for (const unsigned char *p = (const unsigned char *)c; *p && !rc; p++) {
    switch (*p) {
    case '"': rc = ag_str_puts(s, "\\\""); break;
    case '\\': rc = ag_str_puts(s, "\\\\"); break;
    case '\n': rc = ag_str_puts(s, "\\n"); break;
    case '\r': rc = ag_str_puts(s, "\\r"); break;
    case '\t': rc = ag_str_puts(s, "\\t"); break;
    default:
      if (*p < 0x20)
        rc = ag_str_printf(s, "\\u%04x", *p);
      else
        rc = ag_str_putc(s, (char)*p);
    }
  }
  return rc ? rc : ag_str_putc(s, '"');
}

int ag__vec_reserve(void **v, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap)
    return 0;
  size_t nc = *cap ? *cap : 8;
  while (nc < need)
    nc *= 2;
  void *p = ag_realloc(*v, nc * elem);
  if (!p)
    return AG_ENOMEM;
  *v = p;
  *cap = nc;
  return 0;
}
