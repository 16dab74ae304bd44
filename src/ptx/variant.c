/*
 * variant.c — program variants for measurement: parse the parent PTX,
 * discover its regions, apply the variant's transform, print, and record the
 * parent, the transform and (traced, probe) the probe table. The trace-free
 * variant is the parent's text itself; a mapping variant's table is its map
 * layout (xform_map.c). A traced variant with `waits` gets
 * the exposed-wait markers first and is discovered again. Called once per
 * variant.
 */
#include "argus/variant.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

const char *ag_variant_kind_name(ag_variant_kind k) {
  return k == AG_VARIANT_TRACED   ? "traced"
         : k == AG_VARIANT_PROBE  ? "probe"
         : k == AG_VARIANT_MAPPING ? "mapping"
                                  : "trace-free";
}

int ag_variant_kind_parse(const char *s, ag_variant_kind *k) {
  if (s && !strcmp(s, "traced"))
    *k = AG_VARIANT_TRACED;
  else if (s && !strcmp(s, "probe"))
    *k = AG_VARIANT_PROBE;
  else if (s && !strcmp(s, "mapping"))
    *k = AG_VARIANT_MAPPING;
  else if (s && !strcmp(s, "trace-free"))
    *k = AG_VARIANT_TRACE_FREE;
  else
    return AG_EINVAL;
  return 0;
}

void ag__ptx_vdiag(const ag_ptx_module *m, ag_diags *diags, const ag_ptx_stmt *s,
                   const char *fmt, va_list ap) {
  char msg[640];
  vsnprintf(msg, sizeof msg, fmt, ap);
  ag_diags_add(diags, AG_SEV_ERROR, m->path, s ? s->line : 0, s && s->line ? 1 : 0,
               s ? s->text : NULL, s ? s->text_len : 0, "%s", msg);
}

int ag__ptx_target_sm(const ag_ptx_module *m) {
  const char *d = m->target ? strstr(m->target, "sm_") : NULL;
  return d ? atoi(d + 3) : 0;
}

void ag_variant_free(ag_variant *v) {
  if (!v)
    return;
  ag_free(v->ptx);
  json_decref(v->probes);
  json_decref(v->transform);
  ag_free(v);
}

int ag_variant_make(const char *ptx, size_t len, const char *name, const ag_variant_opts *o,
                    ag_diags *diags, ag_variant **out) {
  return ag_variant_make_ex(ptx, len, name, o, NULL, diags, out);
}

int ag_variant_make_ex(const char *ptx, size_t len, const char *name, const ag_variant_opts *o,
                       const ag_variant_async *a, ag_diags *diags, ag_variant **out) {
  *out = NULL;
  static const ag_variant_async none = {0, NULL, 0, 0};
  if (!a)
    a = &none;
  ag_ptx_module *m = NULL;
  ag_ptx_regions *r = NULL;
  ag_str text = AG_STR_INIT;
  int rc = 0;
  ag_variant *v = ag_calloc(1, sizeof *v);
  if (!v)
    return AG_ENOMEM;
  v->kind = o->kind;
  if ((rc = ag_sha256_hex(ptx, len, v->parent)))
    goto out;
  /* a variant of a variant: refused at once, before parsing and discovery
   * (which would take the probes for code of the kernel) */
  if (o->kind != AG_VARIANT_TRACE_FREE &&
      (rc = ag__ptx_variant_check_text(ptx, len, name, diags)))
    goto out;
  if ((rc = ag_ptx_parse(ptx, len, name, diags, &m)) || (rc = ag_ptx_discover(m, diags, &r)))
    goto out;
  json_t *sel = json_array();
  for (int i = 0; i < o->nregions; i++)
    json_array_append_new(sel, json_string(o->regions[i]));
  v->transform = json_pack("{s:s,s:s,s:o,s:b}", "kind", ag_variant_kind_name(o->kind),
                           "parent", v->parent, "regions", sel, "anchors_only",
                           o->anchors_only);
  if (v->transform && o->kind == AG_VARIANT_TRACED && a->waits)
    json_object_set_new(v->transform, "waits", json_true());
  if (v->transform && o->kind == AG_VARIANT_PROBE) {
    json_object_set_new(v->transform, "op", json_string(a->probe_op ? a->probe_op : ""));
    json_object_set_new(v->transform, "occurrence", json_integer(a->probe_occurrence));
    if (a->probe_wrong_phase)
      json_object_set_new(v->transform, "wrong_phase", json_true());
  }
  if (o->kind == AG_VARIANT_PROBE) {
    if ((rc = ag_xform_probe(m, r, a, diags, &v->probes)))
      goto out;
    v->nsites = 1;
    if ((rc = ag_ptx_print(m, &text)))
      goto out;
    v->len = text.len;
    v->ptx = ag_str_detach(&text);
  } else if (o->kind == AG_VARIANT_MAPPING) {
    if ((rc = ag_xform_map(m, r, v->parent, diags, &v->probes)) ||
        (rc = ag_ptx_print(m, &text)))
      goto out;
    v->nsites = (int)json_array_size(json_object_get(v->probes, "units")); /* counters */
    v->len = text.len;
    v->ptx = ag_str_detach(&text);
  } else if (o->kind == AG_VARIANT_TRACED) {
    if (a->waits) { /* the wait markers, then the regions they make */
      int nw = 0;
      if ((rc = ag_xform_waits(m, r, diags, &nw)) || (rc = ag_ptx_discover(m, diags, &r)))
        goto out;
    }
    if ((rc = ag_xform_trace(m, r, o, diags, &v->probes, &v->nsites)))
      goto out;
    if ((rc = ag_ptx_print(m, &text)))
      goto out;
    v->len = text.len;
    v->ptx = ag_str_detach(&text);
  } else {
    /* the module unchanged: its regions, no probes */
    v->ptx = ag_strndup(ptx, len);
    v->len = len;
    json_t *regs = json_array();
    for (int i = 0; i < r->nregions; i++)
      json_array_append_new(regs, json_pack("{s:s,s:s}", "qname", r->regions[i].qname,
                                            "function",
                                            r->regions[i].func ? r->regions[i].func->name
                                                               : ""));
    v->probes = json_pack("{s:s,s:i,s:o,s:[],s:[]}", "format", "argus-probes", "version", 1,
                          "regions", regs, "sites", "roles");
  }
  if (!v->ptx || !v->probes || !v->transform) {
    rc = AG_ENOMEM;
    goto out;
  }
  rc = ag_sha256_hex(v->ptx, v->len, v->id);
out:
  ag_str_release(&text);
  ag_ptx_module_free(m);
  if (rc) {
    ag_variant_free(v);
    return rc;
  }
  *out = v;
  return 0;
}

static const char *find_text(const char *p, size_t n, const char *what, size_t wl) {
  for (size_t i = 0; i + wl <= n; i++)
    if (p[i] == what[0] && !memcmp(p + i, what, wl))
      return p + i;
  return NULL;
}

int ag_ptx_set_maxnreg(const char *ptx, size_t len, const char *func, int n, ag_str *out) {
  const char *end = ptx + len, *p = ptx;
  size_t fl = strlen(func);
  while (p < end) { /* ".entry func(" or ".entry func (" */
    const char *e = find_text(p, (size_t)(end - p), ".entry", 6);
    if (!e)
      return AG_ENOTFOUND;
    const char *q = e + 6;
    while (q < end && (*q == ' ' || *q == '\t'))
      q++;
    if ((size_t)(end - q) > fl && !memcmp(q, func, fl) &&
        (q[fl] == '(' || q[fl] == ' ' || q[fl] == '\t' || q[fl] == '\n' || q[fl] == '\r')) {
      /* the body opens at the first '{' after the parameter list's ')' */
      const char *rp = memchr(q, ')', (size_t)(end - q));
      const char *lb = rp ? memchr(rp, '{', (size_t)(end - rp)) : NULL;
      if (!lb)
        return AG_EPARSE;
      const char *mx = find_text(rp, (size_t)(lb - rp), ".maxnreg", 8);
      if (mx) { /* an existing directive: the smaller of the two */
        const char *d = mx + 8;
        while (d < lb && (*d == ' ' || *d == '\t'))
          d++;
        int old = atoi(d);
        const char *de = d;
        while (de < lb && *de >= '0' && *de <= '9')
          de++;
        ag_str_append(out, ptx, (size_t)(d - ptx));
        ag_str_printf(out, "%d", old > 0 && old < n ? old : n);
        ag_str_append(out, de, (size_t)(end - de));
      } else {
        ag_str_append(out, ptx, (size_t)(lb - ptx));
        ag_str_printf(out, ".maxnreg %d\n", n);
        ag_str_append(out, lb, (size_t)(end - lb));
      }
      return out->oom ? AG_ENOMEM : 0;
    }
    p = q;
  }
  return AG_ENOTFOUND;
}
