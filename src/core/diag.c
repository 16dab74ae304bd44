/*
 * diag.c — diagnostics for people: file:line:col, a message, and the source
 * line with a caret under the column. Parsers collect them; only tools print.
 */
#include "argus/core.h"

#include <string.h>

void ag_diags_init(ag_diags *d) { memset(d, 0, sizeof *d); }

void ag_diags_release(ag_diags *d) {
  for (size_t i = 0; i < d->items.n; i++) {
    ag_free(d->items.v[i].file);
    ag_free(d->items.v[i].msg);
    ag_free(d->items.v[i].srcline);
  }
  ag_vec_free(&d->items);
  d->nerrors = 0;
}

/* The source line at src (up to a newline), or a window of AG_DIAG_SRC_MAX
 * bytes of it around column col, marked "..." where cut; *caret is col's
 * position in the result. */
static char *src_window(const char *src, size_t srclen, int col, int *caret) {
  size_t n = 0;
  while (n < srclen && src[n] != '\n' && src[n] != '\r')
    n++;
  *caret = col;
  if (n <= AG_DIAG_SRC_MAX)
    return ag_strndup(src, n);
  size_t at = col > 0 ? (size_t)col - 1 : 0, lo = 0;
  if (at > n)
    at = n;
  if (at > AG_DIAG_SRC_MAX / 2)
    lo = at - AG_DIAG_SRC_MAX / 2;
  if (lo + AG_DIAG_SRC_MAX > n)
    lo = n - AG_DIAG_SRC_MAX;
  size_t hi = lo + AG_DIAG_SRC_MAX;
  ag_str w = AG_STR_INIT;
  if (lo)
    ag_str_puts(&w, "...");
  ag_str_append(&w, src + lo, hi - lo);
  if (hi < n)
    ag_str_puts(&w, "...");
  if (col > 0)
    *caret = (int)(at - lo) + 1 + (lo ? 3 : 0);
  if (w.oom) {
    ag_str_release(&w);
    return NULL;
  }
  return ag_str_detach(&w);
}

int ag_diags_add(ag_diags *d, ag_severity sev, const char *file, int line,
                 int col, const char *src, size_t srclen, const char *fmt, ...) {
  if (sev == AG_SEV_ERROR)
    d->nerrors++;
  size_t max = d->max ? (size_t)d->max : 100;
  if (d->items.n >= max)
    return 0;
  ag_diag g = {sev, NULL, line, col, NULL, NULL, 0};
  ag_str m = AG_STR_INIT;
  va_list ap;
  va_start(ap, fmt);
  ag_str_vprintf(&m, fmt, ap);
  va_end(ap);
  if (m.oom)
    goto oom;
  g.msg = ag_str_detach(&m);
  if (file && !(g.file = ag_strdup(file)))
    goto oom;
  if (src && !(g.srcline = src_window(src, srclen, col, &g.caret)))
    goto oom;
  if (ag_vec_push(&d->items, g))
    goto oom;
  return 0;
oom:
  ag_str_release(&m);
  ag_free(g.msg);
  ag_free(g.file);
  ag_free(g.srcline);
  return AG_ENOMEM;
}

static const char *sev_name(ag_severity s) {
  return s == AG_SEV_ERROR ? "error" : s == AG_SEV_WARNING ? "warning" : "note";
}

int ag_diags_format(const ag_diags *d, ag_str *out) {
  for (size_t i = 0; i < d->items.n; i++) {
    const ag_diag *g = &d->items.v[i];
    if (g->file)
      ag_str_puts(out, g->file);
    if (g->line > 0) {
      ag_str_printf(out, "%s%d", g->file ? ":" : "line ", g->line);
      if (g->col > 0)
        ag_str_printf(out, ":%d", g->col);
    }
    if (g->file || g->line > 0)
      ag_str_puts(out, ": ");
    ag_str_printf(out, "%s: %s\n", sev_name(g->sev), g->msg);
    if (g->srcline) {
      ag_str_printf(out, "    %s\n    ", g->srcline);
      /* keep tabs so the caret lines up under tab-indented source */
      for (int c = 1; c < g->caret && g->srcline[c - 1]; c++)
        ag_str_putc(out, g->srcline[c - 1] == '\t' ? '\t' : ' ');
      ag_str_puts(out, "^\n");
    }
  }
  if (d->items.n < (size_t)d->nerrors)
    ag_str_printf(out, "(%zu more errors not shown)\n",
                  (size_t)d->nerrors - d->items.n);
  return out->oom ? AG_ENOMEM : 0;
}

json_t *ag_diags_to_json(const ag_diags *d) {
  json_t *arr = json_array();
  for (size_t i = 0; arr && i < d->items.n; i++) {
    const ag_diag *g = &d->items.v[i];
    json_t *o = json_pack("{s:s,s:s?,s:i,s:i,s:s}", "severity", sev_name(g->sev),
                          "file", g->file, "line", g->line, "col", g->col,
                          "message", g->msg);
    if (!o || json_array_append_new(arr, o)) {
      json_decref(arr);
      return NULL;
    }
  }
  return arr;
}

const char *ag_text_line(const char *text, size_t len, int line, size_t *linelen) {
  const char *p = text, *end = text + len;
  for (int l = 1; l < line && p < end; l++) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl) {
      p = end;
      break;
    }
    p = nl + 1;
  }
  const char *e = p;
  while (e < end && *e != '\n')
    e++;
  *linelen = (size_t)(e - p);
  return p;
}
