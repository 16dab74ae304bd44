/*
 * evidence.c — reads a reference-trace evidence file and checks everything
 * before anyone decodes it: the fixed header (magic, version, lengths against
 * the file size), the FNV-1a checksum, the JSON header's fields and types,
 * each launch's sections against the data, the per-warp counts against the
 * record total, and every record's site index against the probe table.
 *
 * Any failure is a diagnostic that names the file and the part that is wrong
 * ("launch 2, warp 17: record 3 names site 40 but the variant has 12 sites").
 * The file is read whole; records stay in that buffer (no copies), so a
 * 100 MB trace costs 100 MB of memory and one pass to checksum.
 */
#include "argus/synth.h"

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

typedef struct rd {
  const char *path;
  ag_diags *diags;
} rd;

static int bad(rd *r, int rc, const char *fmt, ...) AG_PRINTF(3, 4);
static int bad(rd *r, int rc, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ag_diags_add(r->diags, AG_SEV_ERROR, r->path, 0, 0, NULL, 0, "%s", msg);
  return rc;
}

/* Field access with a path for messages: "launches[2].warps". */
static json_t *field(rd *r, json_t *obj, const char *key, const char *where, int type,
                     int *rc) {
  json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
  int ok = v && (type == JSON_INTEGER ? json_is_integer(v)
                 : type == JSON_REAL  ? json_is_number(v)
                                      : (int)json_typeof(v) == type);
  if (!ok) {
    static const char *names[] = {"an object", "an array", "a string", "an integer",
                                  "a number", "true", "false", "null"};
    *rc = bad(r, AG_EPARSE, "evidence header: field '%s%s%s' is missing or not %s", where,
              *where ? "." : "", key, names[type]);
    return NULL;
  }
  return v;
}

static int get_u64(rd *r, json_t *obj, const char *key, const char *where, uint64_t max,
                   uint64_t *out) {
  int rc = 0;
  json_t *v = field(r, obj, key, where, JSON_INTEGER, &rc);
  if (!v)
    return rc;
  json_int_t x = json_integer_value(v);
  if (x < 0 || (uint64_t)x > max)
    return bad(r, AG_EPARSE, "evidence header: '%s%s%s' = %" JSON_INTEGER_FORMAT
                             " is out of range [0, %" PRIu64 "]",
               where, *where ? "." : "", key, x, max);
  *out = (uint64_t)x;
  return 0;
}

static int get_dim3(rd *r, json_t *obj, const char *key, const char *where, unsigned d[3]) {
  int rc = 0;
  json_t *a = field(r, obj, key, where, JSON_ARRAY, &rc);
  if (!a)
    return rc;
  if (json_array_size(a) != 3)
    return bad(r, AG_EPARSE, "evidence header: '%s.%s' must have 3 elements", where, key);
  for (int i = 0; i < 3; i++) {
    json_t *e = json_array_get(a, (size_t)i);
    if (!json_is_integer(e) || json_integer_value(e) < 1 ||
        json_integer_value(e) > 0x7fffffff)
      return bad(r, AG_EPARSE, "evidence header: '%s.%s[%d]' is not a positive integer",
                 where, key, i);
    d[i] = (unsigned)json_integer_value(e);
  }
  return 0;
}

static int parse_id(const char *s, uint64_t *id) {
  char *end = NULL;
  if (!s || !*s)
    return -1;
  *id = strtoull(s, &end, 0);
  return end && *end == 0 ? 0 : -1;
}

static int load_probes(rd *r, ag_evidence *ev, json_t *probes) {
  int rc = 0;
  json_t *regs = field(r, probes, "regions", "probes", JSON_ARRAY, &rc);
  json_t *sites = regs ? field(r, probes, "sites", "probes", JSON_ARRAY, &rc) : NULL;
  json_t *roles = sites ? field(r, probes, "roles", "probes", JSON_ARRAY, &rc) : NULL;
  if (!roles)
    return rc;
  ev->nregions = (int)json_array_size(regs);
  ev->nsites = (int)json_array_size(sites);
  ev->nroles = (int)json_array_size(roles);
  ev->regions = ag_calloc((size_t)ev->nregions + 1, sizeof *ev->regions);
  ev->sites = ag_calloc((size_t)ev->nsites + 1, sizeof *ev->sites);
  ev->roles = ag_calloc((size_t)ev->nroles + 1, sizeof *ev->roles);
  if (!ev->regions || !ev->sites || !ev->roles)
    return AG_ENOMEM;
  char where[64];
  for (int i = 0; i < ev->nroles; i++) {
    json_t *s = json_array_get(roles, (size_t)i);
    if (!json_is_string(s))
      return bad(r, AG_EPARSE, "evidence header: 'probes.roles[%d]' is not a string", i);
    ev->roles[i] = json_string_value(s);
  }
  for (int i = 0; i < ev->nregions; i++) {
    json_t *o = json_array_get(regs, (size_t)i);
    ag_ev_region *g = &ev->regions[i];
    snprintf(where, sizeof where, "probes.regions[%d]", i);
    json_t *nm = field(r, o, "name", where, JSON_STRING, &rc);
    json_t *qn = nm ? field(r, o, "qname", where, JSON_STRING, &rc) : NULL;
    json_t *id = qn ? field(r, o, "id", where, JSON_STRING, &rc) : NULL;
    json_t *pa = id ? field(r, o, "parent", where, JSON_INTEGER, &rc) : NULL;
    json_t *fn = pa ? field(r, o, "function", where, JSON_STRING, &rc) : NULL;
    if (!fn)
      return rc;
    g->name = json_string_value(nm);
    g->qname = json_string_value(qn);
    g->function = json_string_value(fn);
    g->root = json_is_true(json_object_get(o, "root"));
    if (parse_id(json_string_value(id), &g->id))
      return bad(r, AG_EPARSE, "evidence header: '%s.id' is not a number", where);
    json_int_t p = json_integer_value(pa);
    if (p < -1 || p >= i)
      return bad(r, AG_EPARSE,
                 "evidence header: '%s.parent' = %" JSON_INTEGER_FORMAT
                 " must name an earlier region or be -1",
                 where, p);
    g->parent = (int)p;
  }
  for (int i = 0; i < ev->nsites; i++) {
    json_t *o = json_array_get(sites, (size_t)i);
    ag_ev_site *s = &ev->sites[i];
    snprintf(where, sizeof where, "probes.sites[%d]", i);
    json_t *k = field(r, o, "kind", where, JSON_STRING, &rc);
    if (!k)
      return rc;
    const char *ks = json_string_value(k);
    s->region = s->role = -1;
    json_t *ln = json_object_get(o, "line");
    s->line = json_is_integer(ln) ? (int)json_integer_value(ln) : 0;
    s->has_iter = json_is_true(json_object_get(o, "iter"));
    if (!strcmp(ks, "region")) {
      s->kind = AG_SITE_REGION;
      uint64_t g = 0;
      if ((rc = get_u64(r, o, "region", where, (uint64_t)ev->nregions - 1, &g)))
        return ev->nregions ? rc : bad(r, AG_EPARSE, "evidence header: no regions");
      s->region = (int)g;
    } else if (!strcmp(ks, "role")) {
      s->kind = AG_SITE_ROLE;
      uint64_t g = 0;
      if ((rc = get_u64(r, o, "role", where, (uint64_t)ev->nroles - 1, &g)))
        return ev->nroles ? rc : bad(r, AG_EPARSE, "evidence header: no roles");
      s->role = (int)g;
    } else if (!strcmp(ks, "async")) {
      s->kind = AG_SITE_ASYNC;
      json_t *op = field(r, o, "op_id", where, JSON_STRING, &rc);
      json_t *ok = op ? field(r, o, "op", where, JSON_STRING, &rc) : NULL;
      uint64_t occ = 0;
      if (!ok || (rc = get_u64(r, o, "occurrence", where, UINT32_MAX, &occ)))
        return rc;
      s->op_id = json_string_value(op);
      s->op = json_string_value(ok);
      s->occurrence = (uint32_t)occ;
    } else {
      return bad(r, AG_EPARSE,
                 "evidence header: '%s.kind' = '%s' is not region, role or async", where, ks);
    }
  }
  return 0;
}

static int load_launch(rd *r, ag_evidence *ev, json_t *o, int i, const unsigned char *data,
                       uint64_t data_len) {
  ag_ev_launch *L = &ev->launches[i];
  char where[48];
  snprintf(where, sizeof where, "launches[%d]", i);
  int rc = 0;
  uint64_t v, moff, roff;
  json_t *k = field(r, o, "kernel", where, JSON_STRING, &rc);
  if (!k)
    return rc;
  L->kernel = json_string_value(k);
  if ((rc = get_u64(r, o, "launch", where, UINT32_MAX, &v)))
    return rc;
  L->launch = (uint32_t)v;
  if ((rc = get_dim3(r, o, "grid", where, L->grid)) ||
      (rc = get_dim3(r, o, "block", where, L->block)))
    return rc;
  if ((rc = get_u64(r, o, "shared_bytes", where, UINT32_MAX, &v)))
    return rc;
  L->shared_bytes = (unsigned)v;
  /* optional (evidence written by a host runtime that asked the driver) */
  static const char *const opt[] = {"registers", "static_shared_bytes", "ctas_per_sm_driver"};
  int *dst[] = {&L->registers, &L->static_shared_bytes, &L->driver_ctas_per_sm};
  for (int f = 0; f < 3; f++) {
    *dst[f] = -1;
    if (json_object_get(o, opt[f])) {
      if ((rc = get_u64(r, o, opt[f], where, INT32_MAX, &v)))
        return rc;
      *dst[f] = (int)v;
    }
  }
  if ((rc = get_u64(r, o, "warps", where, UINT32_MAX, &v)))
    return rc;
  L->warps = (uint32_t)v;
  if ((rc = get_u64(r, o, "warps_per_cta", where, 32, &v)))
    return rc;
  L->warps_per_cta = (uint32_t)v;
  if ((rc = get_u64(r, o, "records_per_warp", where, UINT32_MAX, &v)))
    return rc;
  L->cap = (uint32_t)v;
  if ((rc = get_u64(r, o, "records", where, UINT64_MAX / 32, &L->nrecords)) ||
      (rc = get_u64(r, o, "dropped", where, UINT64_MAX, &L->dropped)) ||
      (rc = get_u64(r, o, "meta_offset", where, UINT64_MAX / 2, &moff)) ||
      (rc = get_u64(r, o, "records_offset", where, UINT64_MAX / 2, &roff)))
    return rc;
  uint64_t threads = (uint64_t)L->block[0] * L->block[1] * L->block[2];
  uint64_t wpc = (threads + 31) / 32;
  uint64_t warps = (uint64_t)L->grid[0] * L->grid[1] * L->grid[2] * wpc;
  if (wpc != L->warps_per_cta || warps != L->warps)
    return bad(r, AG_ECORRUPT,
               "launch %u: %u warps (%u per CTA) do not match grid %ux%ux%u and block "
               "%ux%ux%u",
               L->launch, L->warps, L->warps_per_cta, L->grid[0], L->grid[1], L->grid[2],
               L->block[0], L->block[1], L->block[2]);
  uint64_t mbytes = (uint64_t)L->warps * AG_EV_META_BYTES;
  uint64_t rbytes = L->nrecords * AG_EV_RECORD_BYTES;
  if (moff % 16 || roff % 16 || moff > data_len || mbytes > data_len - moff ||
      roff > data_len || rbytes > data_len - roff)
    return bad(r, AG_ECORRUPT,
               "launch %u: sections (metadata at %" PRIu64 ", %" PRIu64 " bytes; records at "
               "%" PRIu64 ", %" PRIu64 " bytes) lie outside the %" PRIu64 " bytes of data",
               L->launch, moff, mbytes, roff, rbytes, data_len);
  L->meta = (const ag_ev_meta *)(const void *)(data + moff);
  L->records = (const ag_ev_record *)(const void *)(data + roff);
  L->first = ag_malloc(((size_t)L->warps + 1) * sizeof *L->first);
  if (!L->first)
    return AG_ENOMEM;
  uint64_t sum = 0, dropped = 0;
  for (uint32_t w = 0; w < L->warps; w++) {
    const ag_ev_meta *m = &L->meta[w];
    L->first[w] = sum;
    if (m->flags & AG_EV_EXITED)
      sum += m->count < L->cap ? m->count : L->cap;
    if (m->count > L->cap)
      dropped += m->count - L->cap;
  }
  L->first[L->warps] = sum;
  if (sum != L->nrecords)
    return bad(r, AG_ECORRUPT,
               "launch %u: the warp counts add up to %" PRIu64 " records but the header "
               "says %" PRIu64,
               L->launch, sum, L->nrecords);
  if (dropped != L->dropped)
    return bad(r, AG_ECORRUPT,
               "launch %u: the warp counts give %" PRIu64 " dropped records but the header "
               "says %" PRIu64,
               L->launch, dropped, L->dropped);
  for (uint32_t w = 0; w < L->warps; w++)
    for (uint64_t j = L->first[w]; j < L->first[w + 1]; j++)
      if (L->records[j].site >= (uint32_t)ev->nsites)
        return bad(r, AG_ECORRUPT,
                   "launch %u, warp slot %u: record %" PRIu64 " names site %u but the "
                   "variant has %d sites",
                   L->launch, w, j - L->first[w], L->records[j].site, ev->nsites);
  return 0;
}

static int parse(rd *r, ag_evidence *ev) {
  const unsigned char *f = ev->file;
  size_t n = ev->file_len;
  if (n < AG_EV_FILE_HEADER_BYTES)
    return bad(r, n >= 8 && memcmp(f, AG_EV_MAGIC, 8) == 0 ? AG_ECORRUPT : AG_EPARSE,
               "not an argus evidence file: %zu bytes, shorter than the %u-byte header%s", n,
               AG_EV_FILE_HEADER_BYTES,
               n >= 8 && memcmp(f, AG_EV_MAGIC, 8) == 0 ? " (truncated)" : "");
  ag_ev_file_header h;
  memcpy(&h, f, sizeof h);
  if (memcmp(h.magic, AG_EV_MAGIC, 8) != 0)
    return bad(r, AG_EPARSE, "not an argus evidence file (bad magic; expected '%s')",
               AG_EV_MAGIC);
  if (h.version != AG_EV_VERSION)
    return bad(r, AG_EPARSE,
               "evidence format version %u; this argus reads version %u (record it again "
               "with this argus: argus trace or argus observe)",
               h.version, AG_EV_VERSION);
  uint64_t want = AG_EV_FILE_HEADER_BYTES + h.data_len + (uint64_t)h.header_len;
  if (h.data_len > n || want > n)
    return bad(r, AG_ECORRUPT,
               "truncated: the header promises %" PRIu64 " bytes (%" PRIu64
               " of data, %u of JSON) but the file has %zu",
               want, h.data_len, h.header_len, n);
  if (want < n)
    return bad(r, AG_ECORRUPT, "%zu bytes of trailing garbage after the evidence",
               n - (size_t)want);
  uint64_t sum = ag_ev_fnv(AG_EV_FNV_INIT, f + AG_EV_FILE_HEADER_BYTES,
                           h.data_len + h.header_len);
  if (sum != h.checksum)
    return bad(r, AG_ECORRUPT,
               "checksum mismatch (stored %016" PRIx64 ", computed %016" PRIx64
               "): the file is corrupted",
               h.checksum, sum);
  const char *js = (const char *)f + AG_EV_FILE_HEADER_BYTES + h.data_len;
  json_error_t je;
  ev->header = json_loadb(js, h.header_len, JSON_REJECT_DUPLICATES, &je);
  if (!ev->header) {
    ag_diags_add(r->diags, AG_SEV_ERROR, r->path, 0, 0, NULL, 0,
                 "evidence header is not valid JSON (line %d, column %d of the header): %s",
                 je.line, je.column, je.text);
    return AG_EPARSE;
  }
  int rc = 0;
  json_t *fmt = field(r, ev->header, "format", "", JSON_STRING, &rc);
  if (!fmt)
    return rc;
  if (strcmp(json_string_value(fmt), "argus-evidence") != 0)
    return bad(r, AG_EPARSE, "evidence header: format '%s' is not argus-evidence",
               json_string_value(fmt));
  json_t *clock = field(r, ev->header, "clock", "", JSON_OBJECT, &rc);
  json_t *hz = clock ? field(r, clock, "sm_hz", "clock", JSON_REAL, &rc) : NULL;
  if (!hz)
    return rc;
  ev->sm_hz = json_number_value(hz);
  if (!(ev->sm_hz > 1e6 && ev->sm_hz < 1e10))
    return bad(r, AG_EPARSE, "evidence header: clock.sm_hz = %g is not a plausible SM clock",
               ev->sm_hz);
  json_t *dev = json_object_get(ev->header, "device");
  json_t *dn = json_is_object(dev) ? json_object_get(dev, "name") : NULL;
  ev->device = json_is_string(dn) ? json_string_value(dn) : "?";
  json_t *probes = json_object_get(ev->header, "probes");
  if (!json_is_object(probes))
    return bad(r, AG_EPARSE,
               "evidence has no probe table ('probes'): the run was made without "
               "ARGUS_SITES, so records cannot be named");
  if ((rc = load_probes(r, ev, probes)))
    return rc;
  uint64_t tot = 0;
  if ((rc = get_u64(r, ev->header, "launches_total", "", UINT32_MAX, &tot)))
    return rc;
  ev->launches_total = (uint32_t)tot;
  json_t *ls = field(r, ev->header, "launches", "", JSON_ARRAY, &rc);
  if (!ls)
    return rc;
  ev->nlaunches = (int)json_array_size(ls);
  ev->launches = ag_calloc((size_t)ev->nlaunches + 1, sizeof *ev->launches);
  if (!ev->launches)
    return AG_ENOMEM;
  const unsigned char *data = f + AG_EV_FILE_HEADER_BYTES;
  for (int i = 0; i < ev->nlaunches; i++)
    if ((rc = load_launch(r, ev, json_array_get(ls, (size_t)i), i, data, h.data_len)))
      return rc;
  return 0;
}

int ag_evidence_load_mem(const void *data, size_t len, const char *name, ag_diags *diags,
                         ag_evidence **out) {
  *out = NULL;
  ag_evidence *ev = ag_calloc(1, sizeof *ev);
  if (!ev)
    return AG_ENOMEM;
  ev->path = ag_strdup(name ? name : "(evidence)");
  ev->file = ag_malloc(len ? len : 1);
  if (!ev->path || !ev->file) {
    ag_evidence_free(ev);
    return AG_ENOMEM;
  }
  memcpy(ev->file, data, len);
  ev->file_len = len;
  rd r = {ev->path, diags};
  int rc = parse(&r, ev);
  if (rc) {
    ag_evidence_free(ev);
    return rc;
  }
  *out = ev;
  return 0;
}

int ag_evidence_load(const char *path, ag_diags *diags, ag_evidence **out) {
  *out = NULL;
  char *data = NULL;
  size_t len = 0;
  int rc = ag_file_read(path, &data, &len);
  if (rc) {
    ag_diags_add(diags, AG_SEV_ERROR, path, 0, 0, NULL, 0, "cannot read evidence: %s",
                 ag_strerror(rc));
    return rc == AG_ENOTFOUND ? rc : AG_EIO;
  }
  ag_evidence *ev = ag_calloc(1, sizeof *ev);
  if (!ev || !(ev->path = ag_strdup(path))) {
    ag_free(ev);
    ag_free(data);
    return AG_ENOMEM;
  }
  ev->file = (unsigned char *)data; /* ag_file_read's buffer: 16-byte aligned */
  ev->file_len = len;
  rd r = {ev->path, diags};
  rc = parse(&r, ev);
  if (rc) {
    ag_evidence_free(ev);
    return rc;
  }
  *out = ev;
  return 0;
}

void ag_evidence_free(ag_evidence *ev) {
  if (!ev)
    return;
  for (int i = 0; i < ev->nlaunches; i++)
    ag_free(ev->launches[i].first);
  ag_free(ev->launches);
  ag_free(ev->regions);
  ag_free(ev->sites);
  ag_free(ev->roles);
  json_decref(ev->header);
  ag_free(ev->file);
  ag_free(ev->path);
  ag_free(ev);
}

int ag_evidence_find_region(const ag_evidence *ev, const char *name) {
  int found = -1;
  for (int i = 0; i < ev->nregions; i++)
    if (!strcmp(ev->regions[i].qname, name))
      return i;
  for (int i = 0; i < ev->nregions; i++)
    if (!strcmp(ev->regions[i].name, name)) {
      if (found >= 0)
        return -2;
      found = i;
    }
  return found;
}

const char *ag_evidence_role_name(const ag_evidence *ev, int role) {
  return ev && role >= 0 && role < ev->nroles ? ev->roles[role] : "all";
}
