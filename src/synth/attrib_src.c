/*
 * attrib_src.c — the source view of the PC-to-region map (argus/attrib.h,
 * docs/attribution.md, "By source file"): what a file-, function- or
 * line-level profiler would say about the same dynamic instructions.
 *
 * The map gives every SASS PC its PTX line (the -lineinfo table) and its
 * executions (ag_attr_exec_row, summed over regions); the PTX gives every
 * line its source position: the last `.loc FILE LINE COL` before it in its
 * function with LINE > 0 (as ag_ptx_source_pos reads it), the `.file` it
 * names, and the function: the `.loc`'s `function_name` (the inlined
 * function, a `$L__info_stringN` label of the `.debug_str` section, its bytes
 * `.b8` lists) or else the PTX function (.entry / .func) around the line.
 * One pass over the PTX text, one over the map's PCs; the rows are sorted by
 * executions. PCs whose line has no position are counted apart, so the rows
 * and that part add up to the map's total.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "argus/attrib.h"
#include "argus/demangle.h"

typedef struct src_pos {
  int file;  /* .file number, -1: none */
  int line;  /* source line */
  int fname; /* index into the names (inlined function or PTX function), -1 */
} src_pos;

typedef struct names {
  char **v;
  int n, cap;
} names;

static void names_free(names *t) {
  for (int i = 0; i < t->n; i++)
    ag_free(t->v[i]);
  ag_free(t->v);
}

/* The index of name[0..len) in t, added when new; -1 when out of memory. */
static int name_index(names *t, const char *name, size_t len) {
  for (int i = 0; i < t->n; i++)
    if (strlen(t->v[i]) == len && !memcmp(t->v[i], name, len))
      return i;
  if (t->n == t->cap) {
    int c = t->cap ? 2 * t->cap : 32;
    char **p = ag_realloc(t->v, (size_t)c * sizeof *p);
    if (!p)
      return -1;
    t->v = p, t->cap = c;
  }
  if (!(t->v[t->n] = ag_strndup(name, len)))
    return -1;
  return t->n++;
}

/* The decimal number after blanks at *p (before end), *p past it; -1 when
 * none or above 10^9. */
static long num(const char **p, const char *end) {
  while (*p < end && (**p == ' ' || **p == '\t'))
    (*p)++;
  char d[12];
  size_t n = 0;
  while (*p + n < end && n + 1 < sizeof d && isdigit((unsigned char)(*p)[n]))
    d[n] = (*p)[n], n++;
  d[n] = 0;
  if (!n || n > 9)
    return -1;
  *p += n;
  return strtol(d, NULL, 10);
}

static int starts(const char *p, const char *end, const char *w) {
  size_t n = strlen(w);
  return (size_t)(end - p) >= n && !memcmp(p, w, n);
}

static size_t ident_len(const char *p, const char *end) {
  size_t n = 0;
  while (p + n < end && (isalnum((unsigned char)p[n]) || p[n] == '_' || p[n] == '$' ||
                         p[n] == '.'))
    n++;
  return n;
}

/* What the scan of the PTX found: per line (1-based) its position, the
 * files by .file number, and the debug strings by label. */
typedef struct scan {
  src_pos *at; /* nlines + 1 */
  int nlines;
  names labels;   /* function_name labels and PTX functions, as written */
  char **files;   /* by .file number (nfiles) */
  int nfiles;
  char **strings; /* by labels index: the decoded bytes of that label, or NULL */
  int locs;       /* .loc directives with a line */
} scan;

static void scan_free(scan *s) {
  ag_free(s->at);
  for (int i = 0; i < s->nfiles; i++)
    ag_free(s->files[i]);
  ag_free(s->files);
  for (int i = 0; s->strings && i < s->labels.n; i++)
    ag_free(s->strings[i]);
  ag_free(s->strings);
  names_free(&s->labels);
}

static int set_file(scan *s, long k, const char *path, size_t len) {
  if (k < 0 || k > 100000)
    return 0;
  if (k >= s->nfiles) {
    char **p = ag_realloc(s->files, (size_t)(k + 1) * sizeof *p);
    if (!p)
      return AG_ENOMEM;
    memset(p + s->nfiles, 0, (size_t)(k + 1 - s->nfiles) * sizeof *p);
    s->files = p, s->nfiles = (int)k + 1;
  }
  ag_free(s->files[k]);
  return (s->files[k] = ag_strndup(path, len)) ? 0 : AG_ENOMEM;
}

/* Appends the `.b8` bytes of one line to the string being decoded;
 * *done once its NUL is seen. */
static int add_bytes(ag_str *str, const char *p, const char *end, int *done) {
  while (p < end && !*done) {
    long b = num(&p, end);
    if (b < 0)
      break;
    if (b == 0)
      *done = 1;
    else
      ag_str_putc(str, (char)b);
    while (p < end && (*p == ',' || *p == ' ' || *p == '\t'))
      p++;
  }
  return str->oom ? AG_ENOMEM : 0;
}

static int scan_ptx(const char *ptx, size_t len, scan *s) {
  memset(s, 0, sizeof *s);
  int lines = 1;
  for (size_t i = 0; i < len; i++)
    lines += ptx[i] == '\n';
  s->at = ag_calloc((size_t)lines + 2, sizeof *s->at);
  if (!s->at)
    return AG_ENOMEM;
  s->nlines = lines;
  src_pos cur = {-1, 0, -1}, func = {-1, 0, -1};
  int rc = 0, in_str = -1, done = 0;
  ag_str str = AG_STR_INIT;
  /* decoded strings, by label index (grown as labels are added) */
  char **dec = NULL;
  int ndec = 0;
  const char *p = ptx, *end = ptx + len;
  for (int ln = 1; p <= end && ln <= lines && !rc; ln++) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol)
      eol = end;
    const char *q = p;
    while (q < eol && (*q == ' ' || *q == '\t'))
      q++;
    if (in_str >= 0 && starts(q, eol, ".b8")) {
      rc = add_bytes(&str, q + 3, eol, &done);
      if (!rc && done) {
        if (in_str >= ndec) {
          char **nd = ag_realloc(dec, (size_t)(in_str + 1) * sizeof *nd);
          if (!nd) {
            rc = AG_ENOMEM;
            break;
          }
          memset(nd + ndec, 0, (size_t)(in_str + 1 - ndec) * sizeof *nd);
          dec = nd, ndec = in_str + 1;
        }
        ag_free(dec[in_str]);
        if (!(dec[in_str] = ag_strdup(ag_str_cstr(&str))))
          rc = AG_ENOMEM;
        in_str = -1;
      }
    } else if (*q == '$' && eol > q && eol[-1] == ':' && starts(q, eol, "$L__info_string")) {
      in_str = name_index(&s->labels, q, (size_t)(eol - 1 - q));
      rc = in_str < 0 ? AG_ENOMEM : 0;
      done = 0;
      ag_str_clear(&str);
    } else if (starts(q, eol, ".file ") || starts(q, eol, ".file\t")) {
      const char *a = q + 5;
      long k = num(&a, eol);
      const char *o = memchr(a, '"', (size_t)(eol - a));
      const char *c = o ? memchr(o + 1, '"', (size_t)(eol - o - 1)) : NULL;
      if (c)
        rc = set_file(s, k, o + 1, (size_t)(c - o - 1));
    } else if (starts(q, eol, ".loc ") || starts(q, eol, ".loc\t")) {
      const char *a = q + 4;
      long f = num(&a, eol), l = num(&a, eol);
      if (f >= 0 && l > 0) { /* line 0: no source line; the one before stands */
        cur.file = (int)f, cur.line = (int)l, cur.fname = func.fname;
        const char *fn = strstr(a, "function_name");
        if (fn && fn < eol) {
          fn += 13;
          while (fn < eol && (*fn == ' ' || *fn == '\t'))
            fn++;
          size_t n = ident_len(fn, eol);
          if (n && (cur.fname = name_index(&s->labels, fn, n)) < 0)
            rc = AG_ENOMEM;
        }
        s->locs++;
      }
    } else {
      /* a function's header: [.visible|.weak|.extern] .entry NAME( or
       * .func [(ret)] NAME(; its lines start without a position */
      const char *w = q;
      while (starts(w, eol, ".visible ") || starts(w, eol, ".weak ") || starts(w, eol, ".extern ")) {
        w += ident_len(w, eol);
        while (w < eol && (*w == ' ' || *w == '\t'))
          w++;
      }
      size_t kw = ident_len(w, eol);
      if ((kw == 6 && starts(w, eol, ".entry")) || (kw == 5 && starts(w, eol, ".func"))) {
        const char *e = w + kw;
        while (e < eol && (*e == ' ' || *e == '\t'))
          e++;
        if (e < eol && *e == '(') { /* .func's return parameter */
          const char *c = memchr(e, ')', (size_t)(eol - e));
          e = c ? c + 1 : eol;
          while (e < eol && (*e == ' ' || *e == '\t'))
            e++;
        }
        size_t n = ident_len(e, eol);
        if (n) {
          func.fname = name_index(&s->labels, e, n);
          rc = func.fname < 0 ? AG_ENOMEM : 0;
          cur = (src_pos){-1, 0, func.fname};
        }
      }
    }
    s->at[ln] = cur;
    p = eol + 1;
  }
  ag_str_release(&str);
  if (!rc) {
    s->strings = ag_calloc((size_t)s->labels.n + 1, sizeof *s->strings);
    if (!s->strings)
      rc = AG_ENOMEM;
    for (int i = 0; !rc && i < s->labels.n && i < ndec; i++)
      s->strings[i] = dec[i], dec[i] = NULL;
  }
  for (int i = 0; i < ndec; i++)
    ag_free(dec[i]);
  ag_free(dec);
  return rc;
}

/* one row of a view: its key and what the map's PCs under it executed */
typedef struct srow {
  char *key;
  int file, line, fname;
  double dynamic;
  int pcs;
} srow;

typedef struct view {
  srow *v;
  int n, cap;
} view;

static void view_free(view *w) {
  for (int i = 0; i < w->n; i++)
    ag_free(w->v[i].key);
  ag_free(w->v);
}

static int view_add(view *w, const char *key, src_pos at, int by_line, int by_func, double x) {
  for (int i = 0; i < w->n; i++) {
    srow *r = &w->v[i];
    if (r->file == at.file && (!by_line || r->line == at.line) &&
        (!by_func || r->fname == at.fname) && !strcmp(r->key, key)) {
      r->dynamic += x, r->pcs++;
      return 0;
    }
  }
  if (w->n == w->cap) {
    int c = w->cap ? 2 * w->cap : 64;
    srow *p = ag_realloc(w->v, (size_t)c * sizeof *p);
    if (!p)
      return AG_ENOMEM;
    w->v = p, w->cap = c;
  }
  srow *r = &w->v[w->n];
  if (!(r->key = ag_strdup(key)))
    return AG_ENOMEM;
  r->file = at.file, r->line = by_line ? at.line : 0, r->fname = by_func ? at.fname : -1;
  r->dynamic = x, r->pcs = 1;
  w->n++;
  return 0;
}

static int cmp_row(const void *a, const void *b) {
  const srow *x = a, *y = b;
  if (x->dynamic != y->dynamic)
    return x->dynamic < y->dynamic ? 1 : -1;
  return strcmp(x->key, y->key);
}

/* The function's name for people: the decoded string of its label (else the
 * label: a PTX function's name), demangled to its short form when it is a
 * mangled name the demangler knows. */
static void func_name(const scan *s, int fname, char *out, size_t cap) {
  if (fname < 0) {
    snprintf(out, cap, "?");
    return;
  }
  const char *raw = s->strings && s->strings[fname] ? s->strings[fname] : s->labels.v[fname];
  if (ag_demangle(raw, out, cap, AG_DEMANGLE_SHORT) < 0)
    snprintf(out, cap, "%s", raw);
}

static json_t *rows_json(const scan *s, view *w, const char *what, size_t limit) {
  qsort(w->v, (size_t)w->n, sizeof *w->v, cmp_row);
  json_t *a = json_array();
  for (int i = 0; a && i < w->n && (size_t)i < limit; i++) {
    const srow *r = &w->v[i];
    json_t *o = json_pack("{s:s,s:f,s:i}", "file", s->files[r->file], "dynamic", r->dynamic, "pcs",
                          r->pcs);
    if (o && !strcmp(what, "function")) /* the row's key is the function's name */
      json_object_set_new(o, "function", json_string(r->key));
    if (o && !strcmp(what, "line")) {
      char fn[512];
      func_name(s, r->fname, fn, sizeof fn);
      json_object_set_new(o, "function", json_string(fn));
    }
    if (o && !strcmp(what, "line"))
      json_object_set_new(o, "line", json_integer(r->line));
    if (!o || json_array_append_new(a, o)) {
      json_decref(a);
      return NULL;
    }
  }
  return a;
}

int ag_attr_sources(const ag_attr_map *map, const unsigned char *sel, const char *ptx,
                    size_t len, size_t max_lines, ag_diags *diags, json_t **out) {
  *out = NULL;
  scan s;
  int rc = scan_ptx(ptx, len, &s);
  view files = {0}, funcs = {0}, lines = {0};
  double total = 0, none = 0;
  int none_pcs = 0;
  if (rc)
    goto out;
  if (!s.locs) {
    ag_diags_add(diags, AG_SEV_ERROR, NULL, 0, 0, NULL, 0,
                 "the PTX of '%s' has no .loc line info: compile the program with -lineinfo "
                 "(the spec's flags) for the view by source file",
                 map->kernel);
    rc = AG_ENOTFOUND;
    goto out;
  }
  for (int p = 0; p < map->npcs && !rc; p++) {
    const double *row = ag_attr_exec_row(map, p);
    double x = 0;
    for (int r = 0; row && r < map->nregions; r++)
      x += !sel || sel[r] ? row[r] : 0;
    if (!(x > 0))
      continue; /* never executed (or padding): no row gets it */
    total += x;
    int ln = map->line[p];
    src_pos at = ln > 0 && ln <= s.nlines ? s.at[ln] : (src_pos){-1, 0, -1};
    if (at.file < 0 || at.file >= s.nfiles || !s.files[at.file]) {
      none += x, none_pcs++;
      continue;
    }
    const char *f = s.files[at.file];
    char fn[512];
    func_name(&s, at.fname, fn, sizeof fn);
    /* functions by name (overloads of one name: one row), lines by position */
    if ((rc = view_add(&files, f, at, 0, 0, x)) || (rc = view_add(&funcs, fn, at, 0, 0, x)) ||
        (rc = view_add(&lines, f, at, 1, 1, x)))
      break;
  }
  if (rc)
    goto out;
  json_t *fj = rows_json(&s, &files, "file", (size_t)files.n);
  json_t *gj = rows_json(&s, &funcs, "function", (size_t)funcs.n);
  json_t *lj = rows_json(&s, &lines, "line", max_lines ? max_lines : (size_t)lines.n);
  if (fj && gj && lj)
    *out = json_pack("{s:s,s:f,s:{s:f,s:i},s:i,s:o,s:o,s:o}", "kernel", map->kernel, "total",
                     total, "no_source", "dynamic", none, "pcs", none_pcs, "lines_total", lines.n,
                     "files", fj, "functions", gj, "lines", lj);
  else {
    json_decref(fj);
    json_decref(gj);
    json_decref(lj);
  }
  rc = *out ? 0 : AG_ENOMEM;
out:
  view_free(&files);
  view_free(&funcs);
  view_free(&lines);
  scan_free(&s);
  return rc;
}
