/*
 * sass_ev.c — reads SASS-metrics evidence (argus/sass_ev.h,
 * docs/sass-metrics.md) and checks it before anyone uses it: the format and
 * version, the metric columns, every row's shape and types, every
 * instruction entry, and that no (cubin, function, pc) row appears twice.
 * Any failure is a diagnostic naming the file and the part that is wrong
 * ("rows[12]: 17 values for 15 metrics"). One pass over the rows plus a
 * sort; called once per collection.
 */
#include "argus/sass_ev.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct rd {
  const char *path;
  ag_diags *diags;
  const char *format; /* "argus-sass-metrics", or "argus-stalls" (same rows) */
} rd;

static int bad(rd *r, const char *fmt, ...) AG_PRINTF(2, 3);
static int bad(rd *r, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ag_diags_add(r->diags, AG_SEV_ERROR, r->path, 0, 0, NULL, 0, "%s", msg);
  return AG_EPARSE;
}

static int u64_of(json_t *v, uint64_t *out) {
  if (!json_is_integer(v) || json_integer_value(v) < 0)
    return -1;
  *out = (uint64_t)json_integer_value(v);
  return 0;
}

static int cmp_row(const void *a, const void *b) {
  const ag_sass_ev_row *x = a, *y = b;
  if (x->crc != y->crc)
    return x->crc < y->crc ? -1 : 1;
  int c = strcmp(x->function, y->function);
  return c ? c : (x->pc > y->pc) - (x->pc < y->pc);
}

static int cmp_insn(const void *a, const void *b) {
  const ag_sass_insn *x = a, *y = b;
  int c = strcmp(x->function, y->function);
  return c ? c : (x->pc > y->pc) - (x->pc < y->pc);
}

static int read_rows(rd *r, ag_sass_ev *e) {
  json_t *rows = json_object_get(e->root, "rows");
  if (!json_is_array(rows))
    return bad(r, "field 'rows' is missing or not an array");
  e->nrows = json_array_size(rows);
  e->rows = ag_calloc(e->nrows ? e->nrows : 1, sizeof *e->rows);
  e->values = ag_calloc(e->nrows * (size_t)e->nmetrics + 1, sizeof *e->values);
  if (!e->rows || !e->values)
    return AG_ENOMEM;
  for (size_t i = 0; i < e->nrows; i++) {
    json_t *a = json_array_get(rows, i);
    ag_sass_ev_row *w = &e->rows[i];
    uint64_t pc = 0;
    if (!json_is_array(a) || json_array_size(a) != 3 + (size_t)e->nmetrics)
      return bad(r, "rows[%zu]: not an array of cubin_crc, function, pc and %d values", i,
                 e->nmetrics);
    if (u64_of(json_array_get(a, 0), &w->crc) || !json_is_string(json_array_get(a, 1)) ||
        u64_of(json_array_get(a, 2), &pc) || pc > UINT32_MAX)
      return bad(r, "rows[%zu]: cubin_crc, function or pc has the wrong type or range", i);
    w->function = json_string_value(json_array_get(a, 1));
    w->pc = (uint32_t)pc;
    w->variant = (uint32_t)w->crc == (uint32_t)e->variant_crc;
    uint64_t *v = &e->values[i * (size_t)e->nmetrics];
    for (int c = 0; c < e->nmetrics; c++)
      if (u64_of(json_array_get(a, 3 + (size_t)c), &v[c]))
        return bad(r, "rows[%zu]: value of '%s' is not a whole number", i, e->metrics[c]);
    w->v = v;
  }
  qsort(e->rows, e->nrows, sizeof *e->rows, cmp_row);
  for (size_t i = 1; i < e->nrows; i++)
    if (!cmp_row(&e->rows[i - 1], &e->rows[i]))
      return bad(r, "rows: (cubin %llu, function '%s', pc 0x%x) appears twice",
                 (unsigned long long)e->rows[i].crc, e->rows[i].function, e->rows[i].pc);
  return 0;
}

static int read_sass(rd *r, ag_sass_ev *e) {
  json_t *sass = json_object_get(e->root, "sass");
  json_t *fns = json_object_get(sass, "functions");
  if (!json_is_object(sass) || !json_is_array(fns))
    return bad(r, "field 'sass.functions' is missing or not an array");
  json_t *st = json_object_get(sass, "status");
  e->sass_status = json_is_string(st) ? json_string_value(st) : NULL;
  size_t n = 0, fi;
  json_t *f;
  json_array_foreach(fns, fi, f) n += json_array_size(json_object_get(f, "code"));
  e->ins = ag_calloc(n ? n : 1, sizeof *e->ins);
  if (!e->ins)
    return AG_ENOMEM;
  json_array_foreach(fns, fi, f) {
    json_t *name = json_object_get(f, "name"), *code = json_object_get(f, "code");
    json_t *labels = json_object_get(f, "labels");
    if (!json_is_string(name) || !json_is_array(code) || !json_is_array(labels))
      return bad(r, "sass.functions[%zu]: needs a name, labels and code", fi);
    size_t k;
    json_t *c;
    json_array_foreach(code, k, c) {
      uint64_t pc;
      if (!json_is_array(c) || json_array_size(c) != 4 || u64_of(json_array_get(c, 0), &pc) ||
          pc > UINT32_MAX || !json_is_string(json_array_get(c, 1)) ||
          !json_is_string(json_array_get(c, 2)) || !json_is_string(json_array_get(c, 3)))
        return bad(r, "sass.functions[%zu].code[%zu]: not [pc, pred, opcode, operands]", fi, k);
      ag_sass_insn *in = &e->ins[e->nins++];
      in->function = json_string_value(name);
      in->pc = (uint32_t)pc;
      in->pred = json_string_value(json_array_get(c, 1));
      in->op = json_string_value(json_array_get(c, 2));
      in->args = json_string_value(json_array_get(c, 3));
      /* owner: the last non-local label at or before the pc */
      in->owner = in->function;
      uint32_t best = 0;
      size_t li;
      json_t *l;
      json_array_foreach(labels, li, l) {
        uint64_t lp;
        const char *ln = json_string_value(json_array_get(l, 0));
        if (ln && !u64_of(json_array_get(l, 1), &lp) && lp <= pc && lp >= best &&
            strncmp(ln, ".L", 2) != 0) {
          best = (uint32_t)lp;
          in->owner = ln;
        }
      }
    }
  }
  qsort(e->ins, e->nins, sizeof *e->ins, cmp_insn);
  return 0;
}

static int read_all(rd *r, ag_sass_ev *e) {
  json_t *fmt = json_object_get(e->root, "format"), *ver = json_object_get(e->root, "version");
  const char *what = strcmp(r->format, "argus-stalls") ? "SASS-metrics" : "PC-sampling";
  if (!json_is_string(fmt) || strcmp(json_string_value(fmt), r->format) != 0)
    return bad(r, "not %s evidence (format is not \"%s\")", what, r->format);
  if (!json_is_integer(ver) || json_integer_value(ver) != 1)
    return bad(r, "%s evidence version %lld: this argus reads version 1", what,
               json_is_integer(ver) ? (long long)json_integer_value(ver) : -1LL);
  json_t *chip = json_object_get(e->root, "chip");
  e->chip = json_is_string(chip) ? json_string_value(chip) : NULL;
  json_t *vid = json_object_get(json_object_get(e->root, "variant"), "id");
  e->variant_id = json_is_string(vid) ? json_string_value(vid) : NULL;
  uint64_t x = 0;
  if (!u64_of(json_object_get(e->root, "launches_total"), &x))
    e->launches_total = (uint32_t)x;
  if (!u64_of(json_object_get(e->root, "ranges"), &x))
    e->ranges = (uint32_t)x;
  u64_of(json_object_get(e->root, "dropped_records"), &e->dropped_records);
  json_t *cubins = json_object_get(e->root, "cubins");
  if (!json_is_array(cubins) || !json_array_size(cubins) ||
      u64_of(json_object_get(json_array_get(cubins, 0), "crc"), &e->variant_crc))
    return bad(r, "field 'cubins' names no cubin with its crc (the variant's)");
  json_t *cols = json_object_get(e->root, "columns");
  if (!json_is_array(cols) || json_array_size(cols) < 3)
    return bad(r, "field 'columns' is missing or has fewer than 3 entries");
  e->nmetrics = (int)json_array_size(cols) - 3;
  e->metrics = ag_calloc((size_t)e->nmetrics + 1, sizeof *e->metrics);
  if (!e->metrics)
    return AG_ENOMEM;
  for (int c = 0; c < e->nmetrics; c++) {
    json_t *m = json_array_get(cols, 3 + (size_t)c);
    if (!json_is_string(m))
      return bad(r, "columns[%d] is not a metric name", 3 + c);
    e->metrics[c] = json_string_value(m);
  }
  int rc = read_rows(r, e);
  return rc ? rc : read_sass(r, e);
}

/* Reads the file (data NULL) or the bytes data[0..len), named `path`, of
 * `format` ("argus-sass-metrics", "argus-stalls"). */
static int load(const char *path, const char *format, const void *data, size_t len,
                ag_diags *diags, ag_sass_ev **out) {
  *out = NULL;
  rd r = {path, diags, format};
  ag_sass_ev *e = ag_calloc(1, sizeof *e);
  if (!e)
    return AG_ENOMEM;
  int rc = ag_json_load_doc(path, data, len,
                            strcmp(format, "argus-stalls") ? "SASS-metrics evidence"
                                                           : "PC-sampling evidence",
                            diags, &e->root);
  if (!rc)
    rc = json_is_object(e->root) ? read_all(&r, e) : bad(&r, "not a JSON object");
  if (rc) {
    ag_sass_ev_free(e);
    return rc;
  }
  *out = e;
  return 0;
}

int ag_sass_ev_load(const char *path, ag_diags *diags, ag_sass_ev **out) {
  return load(path, "argus-sass-metrics", NULL, 0, diags, out);
}

int ag_sass_ev_load_as(const char *path, const char *format, ag_diags *diags, ag_sass_ev **out) {
  return load(path, format, NULL, 0, diags, out);
}

int ag_sass_ev_load_mem(const void *data, size_t len, const char *name, ag_diags *diags,
                        ag_sass_ev **out) {
  return ag_sass_ev_load_mem_as(data, len, name, "argus-sass-metrics", diags, out);
}

int ag_sass_ev_load_mem_as(const void *data, size_t len, const char *name, const char *format,
                           ag_diags *diags, ag_sass_ev **out) {
  static const char empty[1] = "";
  return load(name, format, len ? data : empty, len, diags, out);
}

void ag_sass_ev_free(ag_sass_ev *e) {
  if (!e)
    return;
  json_decref(e->root);
  ag_free(e->metrics);
  ag_free(e->rows);
  ag_free(e->values);
  ag_free(e->ins);
  ag_free(e);
}

int ag_sass_ev_metric(const ag_sass_ev *e, const char *name) {
  for (int c = 0; c < e->nmetrics; c++)
    if (!strcmp(e->metrics[c], name))
      return c;
  return -1;
}

const ag_sass_insn *ag_sass_ev_insn(const ag_sass_ev *e, const char *function, uint32_t pc) {
  ag_sass_insn key = {.function = function, .pc = pc};
  return bsearch(&key, e->ins, e->nins, sizeof *e->ins, cmp_insn);
}

uint64_t ag_sass_ev_total(const ag_sass_ev *e, int c) {
  uint64_t t = 0;
  for (size_t i = 0; c >= 0 && c < e->nmetrics && i < e->nrows; i++)
    if (e->rows[i].variant)
      t += e->rows[i].v[c];
  return t;
}
