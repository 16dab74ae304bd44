/*
 * variant.c — program variants for measurement: parse the parent PTX,
 * discover its regions, apply the variant's transform, print, and record the
 * parent, the transform and (traced, probe) the probe table. The trace-free
 * variant is the parent's text itself. A traced variant with `waits` gets
 * the exposed-wait markers first and is discovered again. Called once per
 * variant.
 */
#include "argus/variant.h"

#include <string.h>

#include "ptx_internal.h"

const char *ag_variant_kind_name(ag_variant_kind k) {
  return k == AG_VARIANT_TRACED ? "traced" : k == AG_VARIANT_PROBE ? "probe" : "trace-free";
}

int ag_variant_kind_parse(const char *s, ag_variant_kind *k) {
  if (s && !strcmp(s, "traced"))
    *k = AG_VARIANT_TRACED;
  else if (s && !strcmp(s, "probe"))
    *k = AG_VARIANT_PROBE;
  else if (s && !strcmp(s, "trace-free"))
    *k = AG_VARIANT_TRACE_FREE;
  else
    return AG_EINVAL;
  return 0;
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
