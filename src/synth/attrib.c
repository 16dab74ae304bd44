/*
 * attrib.c — the PC-to-region map and ambiguity-aware attribution
 * (argus/attrib.h, docs/attribution.md).
 *
 * The map is built once per (mapping run, cubin): every SASS instruction of
 * the kernel's code section (16 bytes each on sm_90) takes its PTX line from
 * the -lineinfo table, the line its unit, the unit its counts; the padding
 * after a function's last RET or EXIT (ag_sass_cubin_padding) is marked,
 * and counts no execution in ownership and the derived mix. Attribution
 * is one pass over the metric's PCs: alpha from the map row, the metric
 * split by alpha, H(p) from alpha. Metric PCs the map has no executions for
 * keep their value in `unattributed`, so the conservation check sees a lost
 * PC instead of hiding it. Linear in PCs x regions.
 */
#include "argus/attrib.h"

#include <math.h>
#include <string.h>

#define SASS_INSTR_BYTES 16

static int lbad(ag_diags *d, const char *fmt, ...) AG_PRINTF(2, 3);
static int lbad(ag_diags *d, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ag_diags_add(d, AG_SEV_ERROR, NULL, 0, 0, NULL, 0, "%s", msg);
  return AG_EINVAL;
}

void ag_attr_layout_free(ag_attr_layout *L) {
  if (!L)
    return;
  for (int i = 0; i < L->nregions; i++)
    ag_free(L->regions[i]);
  for (int i = 0; i < L->nfuncs; i++)
    ag_free(L->funcs[i].name);
  ag_free(L->regions);
  ag_free(L->funcs);
  ag_free(L->units);
  ag_free(L);
}

static int int_at(const json_t *a, size_t i, int *v) {
  json_t *x = json_array_get(a, i);
  if (!json_is_integer(x))
    return -1;
  *v = (int)json_integer_value(x);
  return 0;
}

int ag_attr_layout_from_json(const json_t *j, ag_diags *diags, ag_attr_layout **out) {
  *out = NULL;
  const char *fmt = json_string_value(json_object_get(j, "format"));
  const char *ver = json_string_value(json_object_get(j, "program"));
  json_t *regs = json_object_get(j, "regions"), *funcs = json_object_get(j, "functions");
  json_t *units = json_object_get(j, "units");
  if (!fmt || strcmp(fmt, "argus-map") || !ver || strlen(ver) != 64 || !json_is_array(regs) ||
      !json_is_array(funcs) || !json_is_array(units) ||
      !json_is_integer(json_object_get(j, "slots")))
    return lbad(diags, "not an 'argus-map' table (format, program, regions, functions, units "
                       "and slots are required): make it with the mapping variant");
  ag_attr_layout *L = ag_calloc(1, sizeof *L);
  int rc = 0;
  if (!L)
    return AG_ENOMEM;
  memcpy(L->version, ver, 65);
  L->nslots = (uint32_t)json_integer_value(json_object_get(j, "slots"));
  L->regions = ag_calloc(json_array_size(regs) + 1, sizeof *L->regions);
  L->funcs = ag_calloc(json_array_size(funcs) + 1, sizeof *L->funcs);
  L->units = ag_calloc(json_array_size(units) + 1, sizeof *L->units);
  if (!L->regions || !L->funcs || !L->units) {
    rc = AG_ENOMEM;
    goto out;
  }
  for (size_t i = 0; i < json_array_size(regs); i++) {
    const char *q = json_string_value(json_array_get(regs, i));
    if (!q) {
      rc = lbad(diags, "'argus-map' region %zu is not a string", i);
      goto out;
    }
    if (!(L->regions[L->nregions++] = ag_strdup(q))) {
      rc = AG_ENOMEM;
      goto out;
    }
  }
  for (size_t i = 0; i < json_array_size(funcs); i++) {
    json_t *f = json_array_get(funcs, i), *ln = json_object_get(f, "lines");
    const char *nm = json_string_value(json_object_get(f, "name"));
    ag_attr_func *F = &L->funcs[i];
    if (!nm || int_at(ln, 0, &F->first_line) || int_at(ln, 1, &F->last_line)) {
      rc = lbad(diags, "'argus-map' function %zu needs a name and lines [first, last]", i);
      goto out;
    }
    F->is_entry = json_is_true(json_object_get(f, "entry"));
    if (!(F->name = ag_strdup(nm))) {
      rc = AG_ENOMEM;
      goto out;
    }
    L->nfuncs++;
  }
  for (size_t i = 0; i < json_array_size(units); i++) {
    json_t *u = json_array_get(units, i), *ln = json_object_get(u, "lines");
    ag_attr_unit *U = &L->units[i];
    json_t *fn = json_object_get(u, "function"), *sl = json_object_get(u, "slot");
    json_t *rg = json_object_get(u, "region"), *bk = json_object_get(u, "block");
    if (!json_is_integer(fn) || !json_is_integer(sl) || !json_is_integer(rg) ||
        int_at(ln, 0, &U->first_line) || int_at(ln, 1, &U->last_line)) {
      rc = lbad(diags, "'argus-map' unit %zu needs function, lines, slot and region", i);
      goto out;
    }
    U->func = (int)json_integer_value(fn);
    U->block = json_is_integer(bk) ? (int)json_integer_value(bk) : -1;
    U->slot = (uint32_t)json_integer_value(sl);
    U->region = (int)json_integer_value(rg);
    uint64_t width = U->region < 0 ? (uint64_t)L->nregions : 1;
    if (U->func < 0 || U->func >= L->nfuncs || U->region >= L->nregions || U->slot == 0 ||
        (uint64_t)U->slot + width > L->nslots ||
        (i && U->first_line <= L->units[i - 1].last_line)) {
      rc = lbad(diags,
                "'argus-map' unit %zu (lines %d-%d) is out of range or out of order: "
                "function %d of %d, region %d of %d, slots %u+%llu of %u",
                i, U->first_line, U->last_line, U->func, L->nfuncs, U->region, L->nregions,
                U->slot, (unsigned long long)width, L->nslots);
      goto out;
    }
    L->nunits++;
  }
out:
  if (rc) {
    ag_attr_layout_free(L);
    return rc;
  }
  *out = L;
  return 0;
}

int ag_attr_unit_of_line(const ag_attr_layout *L, int line) {
  int lo = 0, hi = L->nunits; /* first unit with last_line >= line */
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (L->units[mid].last_line < line)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < L->nunits && L->units[lo].first_line <= line)
    return lo;
  for (int f = 0; f < L->nfuncs; f++) {
    const ag_attr_func *F = &L->funcs[f];
    if (line < F->first_line || line > F->last_line)
      continue;
    if (lo < L->nunits && L->units[lo].func == f)
      return lo; /* the function's next unit */
    for (int u = lo - 1; u >= 0; u--)
      if (L->units[u].func == f)
        return u; /* its last unit before the line */
    return -1;
  }
  return -1;
}

int ag_attr_counts_from_json(const json_t *j, ag_diags *diags, uint64_t **slots, size_t *n) {
  *slots = NULL;
  *n = 0;
  const char *fmt = json_string_value(json_object_get(j, "format"));
  json_t *c = json_object_get(j, "counts");
  if (!fmt || strcmp(fmt, "argus-map-counts") || !json_is_array(c) || !json_array_size(c) ||
      json_integer_value(json_object_get(j, "slots")) != (json_int_t)json_array_size(c))
    return lbad(diags, "not an 'argus-map-counts' file (format, slots and as many counts are "
                       "required): it is what the host runtime writes after a mapping run");
  uint64_t *v = ag_calloc(json_array_size(c), sizeof *v);
  if (!v)
    return AG_ENOMEM;
  for (size_t i = 0; i < json_array_size(c); i++) {
    json_t *x = json_array_get(c, i);
    if (!json_is_integer(x) || json_integer_value(x) < 0) {
      ag_free(v);
      return lbad(diags, "'argus-map-counts' count %zu is not a non-negative integer", i);
    }
    v[i] = (uint64_t)json_integer_value(x);
  }
  *slots = v;
  *n = json_array_size(c);
  return 0;
}

void ag_attr_map_free(ag_attr_map *m) {
  if (!m)
    return;
  for (int i = 0; i < m->nregions; i++)
    ag_free(m->regions[i]);
  ag_free(m->regions);
  ag_free(m->kernel);
  ag_free(m->pc);
  ag_free(m->line);
  ag_free(m->pad);
  ag_free(m->n);
  ag_free(m);
}

int ag_attr_map_build(const ag_attr_layout *L, const uint64_t *slots, size_t nslots,
                      const ag_sass_cubin *cubin, const char *kernel, ag_diags *diags,
                      ag_attr_map **out) {
  *out = NULL;
  int t = ag_sass_cubin_text(cubin, kernel);
  if (t < 0) {
    ag_diags_add(diags, AG_SEV_ERROR, NULL, 0, 0, NULL, 0,
                 "kernel '%s' has no code section in the cubin", kernel);
    return AG_ENOTFOUND;
  }
  if (!cubin->has_lineinfo)
    return lbad(diags, "the cubin of '%s' has no line info: compile the trace-free program "
                       "with ptxas -lineinfo",
                kernel);
  if (nslots < L->nslots)
    return lbad(diags, "the mapping run returned %zu counter slots; its layout has %u", nslots,
                L->nslots);
  ag_attr_map *m = ag_calloc(1, sizeof *m);
  if (!m)
    return AG_ENOMEM;
  int rc = 0, R = L->nregions;
  int np = (int)(cubin->texts[t].size / SASS_INSTR_BYTES);
  memcpy(m->version, L->version, 65);
  m->kernel = ag_strdup(kernel);
  m->regions = ag_calloc((size_t)R + 1, sizeof *m->regions);
  m->pc = ag_calloc((size_t)np + 1, sizeof *m->pc);
  m->line = ag_calloc((size_t)np + 1, sizeof *m->line);
  m->n = ag_calloc((size_t)np * (size_t)R + 1, sizeof *m->n);
  m->pad = ag_calloc((size_t)np + 1, 1);
  if (!m->kernel || !m->regions || !m->pc || !m->line || !m->n || !m->pad) {
    rc = AG_ENOMEM;
    goto out;
  }
  for (int r = 0; r < R; r++, m->nregions++)
    if (!(m->regions[r] = ag_strdup(L->regions[r]))) {
      rc = AG_ENOMEM;
      goto out;
    }
  m->npcs = np;
  m->dropped = slots[0];
  /* the padding after a function's last RET or EXIT carries that line but
   * never runs: marked (not recognized outside sm_90) */
  m->padding = ag_sass_cubin_padding(cubin, t, m->pad);
  if (m->padding == AG_ENOMEM) {
    rc = AG_ENOMEM;
    goto out;
  }
  if (m->padding < 0)
    m->padding = -1;
  for (int p = 0; p < np; p++) {
    m->pc[p] = (uint64_t)p * SASS_INSTR_BYTES;
    if (ag_sass_cubin_pc_line(cubin, t, m->pc[p], &m->line[p])) {
      m->nolines++;
      continue;
    }
    int u = ag_attr_unit_of_line(L, m->line[p]);
    if (u < 0)
      continue;
    const ag_attr_unit *U = &L->units[u];
    double *row = &m->n[(size_t)p * (size_t)R];
    if (U->region >= 0)
      row[U->region] = (double)slots[U->slot];
    else
      for (int r = 0; r < R; r++)
        row[r] = (double)slots[U->slot + (uint32_t)r];
  }
out:
  if (rc) {
    ag_attr_map_free(m);
    return rc;
  }
  *out = m;
  return 0;
}

const double *ag_attr_exec_row(const ag_attr_map *map, int p) {
  return map->pad[p] ? NULL : &map->n[(size_t)p * (size_t)map->nregions];
}

json_t *ag_attr_ownership(const ag_attr_map *map) {
  int R = map->nregions;
  json_t *regs = json_array();
  for (int k = 0; regs && k < R; k++) {
    int st = 0, sh = 0;
    double dyn = 0;
    for (int p = 0; p < map->npcs; p++) {
      const double *row = ag_attr_exec_row(map, p);
      if (!row || !(row[k] > 0))
        continue;
      st++;
      dyn += row[k];
      int owners = 0;
      for (int q = 0; q < R; q++)
        owners += row[q] > 0;
      sh += owners > 1;
    }
    if (!st)
      continue;
    json_t *o = json_pack("{s:s,s:i,s:f,s:i}", "region", map->regions[k], "static_pcs", st,
                          "dynamic", dyn, "shared_pcs", sh);
    if (!o || json_array_append_new(regs, o)) {
      json_decref(regs);
      return NULL;
    }
  }
  if (!regs)
    return NULL;
  return json_pack("{s:s,s:s,s:s,s:i,s:I,s:o}", "signal", "ownership", "qual", "attributed",
                   "kernel", map->kernel, "pcs", map->npcs, "dropped", (json_int_t)map->dropped,
                   "regions", regs);
}

void ag_attr_result_free(ag_attr_result *r) {
  if (!r)
    return;
  ag_free(r->m);
  ag_free(r->shared);
  ag_free(r->static_pcs);
  ag_free(r->shared_pcs);
  ag_free(r->entropy);
  ag_free(r);
}

/* the map row of a PC and its sum over regions, or NULL when the map has no
 * execution of it (PCs are ascending multiples of 16) */
static const double *row_of(const ag_attr_map *map, uint64_t pc, double *sum) {
  uint64_t i = pc / SASS_INSTR_BYTES;
  *sum = 0;
  if (pc % SASS_INSTR_BYTES || i >= (uint64_t)map->npcs || map->pc[i] != pc)
    return NULL;
  const double *row = &map->n[i * (uint64_t)map->nregions];
  for (int k = 0; k < map->nregions; k++)
    *sum += row[k];
  return *sum > 0 ? row : NULL;
}

double ag_attr_alpha(const ag_attr_map *map, uint64_t pc, int region) {
  double sum;
  const double *row = row_of(map, pc, &sum);
  return row && region >= 0 && region < map->nregions ? row[region] / sum : 0;
}

int ag_attr_line(const ag_attr_map *map, uint64_t pc) {
  uint64_t i = pc / SASS_INSTR_BYTES;
  if (pc % SASS_INSTR_BYTES || i >= (uint64_t)map->npcs || map->pc[i] != pc)
    return 0;
  return map->line[i];
}

/* the refusals of a join: another program version or another kernel */
static int check_join(const ag_attr_map *map, const ag_attr_metric *mt, ag_diags *diags) {
  if (!mt->version || strcmp(mt->version, map->version))
    return lbad(diags,
                "metric '%s' was measured on program version %.12s, the PC-to-region map was "
                "made from %.12s: attribution joins only the same program version (run the "
                "mapping again for this version)",
                mt->name ? mt->name : "?", mt->version ? mt->version : "(none)", map->version);
  if (!mt->kernel || strcmp(mt->kernel, map->kernel))
    return lbad(diags, "metric '%s' is of kernel '%s', the map of '%s'",
                mt->name ? mt->name : "?", mt->kernel ? mt->kernel : "(none)", map->kernel);
  return 0;
}

int ag_attr_apply(const ag_attr_map *map, const ag_attr_metric *mt, ag_diags *diags,
                  ag_attr_result **out) {
  *out = NULL;
  int rc = check_join(map, mt, diags);
  if (rc)
    return rc;
  int R = map->nregions;
  ag_attr_result *r = ag_calloc(1, sizeof *r);
  if (!r)
    return AG_ENOMEM;
  r->nregions = R;
  r->npcs = mt->npcs;
  r->m = ag_calloc((size_t)R + 1, sizeof *r->m);
  r->shared = ag_calloc((size_t)R + 1, sizeof *r->shared);
  r->static_pcs = ag_calloc((size_t)R + 1, sizeof *r->static_pcs);
  r->shared_pcs = ag_calloc((size_t)R + 1, sizeof *r->shared_pcs);
  r->entropy = ag_calloc((size_t)mt->npcs + 1, sizeof *r->entropy);
  if (!r->m || !r->shared || !r->static_pcs || !r->shared_pcs || !r->entropy) {
    ag_attr_result_free(r);
    return AG_ENOMEM;
  }
  for (int p = 0; p < mt->npcs; p++) {
    double v = mt->value[p], sum;
    r->total += v;
    const double *row = row_of(map, mt->pc[p], &sum);
    if (!row) {
      r->unattributed += v;
      r->unattributed_pcs += v != 0;
      continue;
    }
    double h = 0;
    int owners = 0;
    for (int k = 0; k < R; k++)
      if (row[k] > 0) {
        double a = row[k] / sum;
        h -= a * log2(a);
        owners++;
      }
    if (owners == 1)
      h = 0; /* exactly, not -1 * log2(1) rounding */
    r->entropy[p] = h;
    for (int k = 0; k < R; k++) {
      if (!(row[k] > 0))
        continue;
      double part = v * (row[k] / sum);
      r->m[k] += part;
      r->static_pcs[k]++;
      if (owners > 1) {
        r->shared[k] += part;
        r->shared_pcs[k]++;
      }
    }
  }
  *out = r;
  return 0;
}

int ag_attr_mix(const ag_attr_map *map, const ag_attr_metric *mt, const char *const *opcodes,
                ag_diags *diags, double *out) {
  int R = map->nregions;
  memset(out, 0, sizeof *out * (size_t)R * AG_SASS__NCLASS);
  int rc = check_join(map, mt, diags);
  if (rc)
    return rc;
  for (int p = 0; p < mt->npcs; p++) {
    double sum;
    const double *row = row_of(map, mt->pc[p], &sum);
    if (!row)
      continue;
    ag_sass_class c = ag_sass_classify(opcodes[p]);
    for (int k = 0; k < R; k++)
      if (row[k] > 0)
        out[(size_t)k * AG_SASS__NCLASS + c] += mt->value[p] * (row[k] / sum);
  }
  return 0;
}

void ag_attr_mix_map(const ag_attr_map *map, const char *const *opcodes, double *out) {
  int R = map->nregions;
  memset(out, 0, sizeof *out * (size_t)R * AG_SASS__NCLASS);
  for (int p = 0; p < map->npcs; p++) {
    ag_sass_class c = ag_sass_classify(opcodes[p]);
    const double *row = ag_attr_exec_row(map, p);
    for (int k = 0; row && k < R; k++)
      out[(size_t)k * AG_SASS__NCLASS + c] += row[k];
  }
}

void ag_attr_region_entropy(const ag_attr_map *map, const ag_attr_metric *mt,
                            const ag_attr_result *r, double *out) {
  int R = map->nregions;
  for (int k = 0; k < R; k++)
    out[k] = 0;
  for (int p = 0; p < mt->npcs && p < r->npcs; p++) {
    double sum;
    const double *row = row_of(map, mt->pc[p], &sum);
    if (!row)
      continue;
    for (int k = 0; k < R; k++)
      if (row[k] > 0)
        out[k] += mt->value[p] * (row[k] / sum) * r->entropy[p];
  }
  for (int k = 0; k < R; k++)
    out[k] = r->m[k] > 0 ? out[k] / r->m[k] : 0.0;
}

int ag_attr_conserved(const ag_attr_result *r) {
  double s = 0;
  for (int k = 0; k < r->nregions; k++)
    s += r->m[k];
  double scale = fabs(r->total) > 1 ? fabs(r->total) : 1;
  return fabs(s - r->total) <= 1e-9 * scale;
}

void ag_attr_ratio(const ag_attr_result *num, const ag_attr_result *den, double scale,
                   double *out) {
  for (int k = 0; k < num->nregions && k < den->nregions; k++)
    out[k] = den->m[k] != 0 ? num->m[k] / (scale * den->m[k]) : NAN;
}

json_t *ag_attr_to_json(const ag_attr_map *map, const ag_attr_metric *mt,
                        const ag_attr_result *r) {
  json_t *regs = json_array();
  for (int k = 0; regs && k < r->nregions; k++) {
    if (r->static_pcs[k] == 0)
      continue; /* a region with no PC (no code, or never executed) */
    json_t *o = json_pack("{s:s,s:f,s:f,s:i,s:i}", "region", map->regions[k], "value", r->m[k],
                          "shared_share", r->m[k] > 0 ? r->shared[k] / r->m[k] : 0.0,
                          "static_pcs", r->static_pcs[k], "shared_pcs", r->shared_pcs[k]);
    if (!o || json_array_append_new(regs, o)) {
      json_decref(regs);
      return NULL;
    }
  }
  if (!regs)
    return NULL;
  return json_pack("{s:s,s:s,s:s,s:s,s:f,s:f,s:i,s:b,s:I,s:o}", "metric",
                   mt->name ? mt->name : "?", "qual", "attributed", "version", map->version,
                   "kernel", map->kernel, "total", r->total, "unattributed", r->unattributed,
                   "unattributed_pcs", r->unattributed_pcs, "conserved", ag_attr_conserved(r),
                   "dropped", (json_int_t)map->dropped, "regions", regs);
}
