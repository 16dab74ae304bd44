/*
 * format.c — the region table and its sites as JSON and as an indented
 * text tree (what `argus regions` prints). IDs are printed as 16 hex
 * digits ("0x" in JSON strings), since 64-bit values do not fit JSON numbers.
 */
#include "ptx_internal.h"

#include "argus/demangle.h"

#include <string.h>

static json_t *idstr(uint64_t id) {
  char buf[24];
  snprintf(buf, sizeof buf, "0x%016llx", (unsigned long long)id);
  return json_string(buf);
}

static json_t *rsites_json(const ag_ptx_region_site *v, int n, int begins) {
  json_t *a = json_array();
  for (int i = 0; a && i < n; i++) {
    json_t *o = json_pack("{s:i}", "line", v[i].line);
    if (!o) {
      json_decref(a);
      return NULL;
    }
    if (begins) {
      json_object_set_new(o, "iter", v[i].iter ? json_string(v[i].iter) : json_null());
      json_object_set_new(o, "role", v[i].role ? json_string(v[i].role) : json_null());
    }
    json_array_append_new(a, o);
  }
  return a;
}

json_t *ag_ptx_regions_to_json(const ag_ptx_module *m, const ag_ptx_regions *R) {
  json_t *root = json_object();
  json_t *regs = json_array(), *sites = json_array();
  if (!root || !regs || !sites)
    goto fail;
  json_object_set_new(root, "module", m->path ? json_string(m->path) : json_null());
  json_object_set_new(root, "regions", regs);
  json_object_set_new(root, "sites", sites);
  for (int i = 0; i < R->nregions; i++) {
    const ag_ptx_region *r = &R->regions[i];
    json_t *o = json_object();
    if (!o)
      goto fail;
    json_array_append_new(regs, o);
    json_object_set_new(o, "id", idstr(r->id));
    json_object_set_new(o, "name", json_string(r->name));
    json_object_set_new(o, "qname", json_string(r->qname));
    json_object_set_new(o, "parent", r->parent >= 0 ? idstr(R->regions[r->parent].id) : json_null());
    json_object_set_new(o, "function", json_string(r->func->name));
    json_object_set_new(o, "kernel", json_boolean(r->func->is_entry));
    json_object_set_new(o, "root", json_boolean(r->is_root));
    json_object_set_new(o, "begins", rsites_json(r->begins, r->nbegins, 1));
    json_object_set_new(o, "ends", rsites_json(r->ends, r->nends, 0));
    json_object_set_new(o, "iter", r->iter ? json_string(r->iter) : json_null());
    json_object_set_new(o, "role", r->role ? json_string(r->role) : json_null());
    json_object_set_new(o, "dynamic", json_boolean(r->dynamic));
    json_t *ow = json_array(), *ch = json_array(), *si = json_array();
    for (int k = 0; k < r->nowners; k++)
      json_array_append_new(ow, idstr(R->regions[r->owners[k]].id));
    for (int k = 0; k < r->nchildren; k++)
      json_array_append_new(ch, idstr(R->regions[r->children[k]].id));
    for (int k = 0; k < r->nsites; k++)
      json_array_append_new(si, json_string(R->sites[r->sites[k]].op_id));
    json_object_set_new(o, "owners", ow);
    json_object_set_new(o, "children", ch);
    json_object_set_new(o, "sites", si);
  }
  for (int i = 0; i < R->nsites; i++) {
    const ag_ptx_site *s = &R->sites[i];
    json_t *o = json_object();
    if (!o)
      goto fail;
    json_array_append_new(sites, o);
    json_object_set_new(o, "op_id", json_string(s->op_id));
    json_object_set_new(o, "kind", json_string(ag_ptx_site_kind_name(s->kind)));
    json_object_set_new(o, "region", idstr(s->region_id));
    json_object_set_new(o, "ordinal", json_integer(s->ordinal));
    json_object_set_new(o, "function", json_string(s->func->name));
    json_object_set_new(o, "line", json_integer(s->line));
    json_object_set_new(o, "opcode", json_string(s->stmt->opcode));
    json_object_set_new(o, "completion", json_string(ag_ptx_completion_name(s->completion)));
    if (s->loop >= 0)
      json_object_set_new(o, "loop", json_pack("{s:i,s:i}", "header_line", s->loop_header_line,
                                               "depth", s->loop_depth));
    else
      json_object_set_new(o, "loop", json_null());
    if (s->has_bar) {
      json_t *b = json_pack("{s:s}", "operand", s->bar.operand);
      json_object_set_new(b, "register", s->bar.reg ? json_string(s->bar.reg) : json_null());
      json_object_set_new(b, "symbol", s->bar.sym ? json_string(s->bar.sym) : json_null());
      json_object_set_new(b, "offset", s->bar.sym && s->bar.offset_known
                                           ? json_integer(s->bar.offset)
                                           : json_null());
      json_object_set_new(o, "barrier", b);
    }
    if (s->parity)
      json_object_set_new(o, "parity", json_string(s->parity));
    if (s->group_n >= 0)
      json_object_set_new(o, "group_n", json_integer(s->group_n));
    json_t *db = json_array();
    for (int k = 0; k < s->ndone_by; k++)
      json_array_append_new(db, json_string(R->sites[s->done_by[k]].op_id));
    json_object_set_new(o, "done_by", db);
    if (s->wait_shape || s->wait_why)
      json_object_set_new(o, "wait", json_pack("{s:b,s:s?,s:s?}", "timed", s->wait_first != NULL,
                                               "shape", s->wait_first ? s->wait_shape : NULL,
                                               "why", s->wait_why));
    json_t *its = s->iter_known ? json_pack("{s:I,s:I,s:s?}", "first", (json_int_t)s->iter_first,
                                            "step", (json_int_t)s->iter_step, "from", s->iter_from)
                                : json_pack("{s:n,s:s?}", "first", "from", s->iter_from);
    if (its && s->iter_line > 0) /* the begin marker a counting run reads */
      json_object_set_new(its, "marker_line", json_integer(s->iter_line));
    json_object_set_new(o, "iterations", its);
  }
  /* the warp roles the role markers name, once each, in module order */
  json_t *roles = json_array();
  for (int i = 0; roles && i < R->nmarkers; i++) {
    if (R->markers[i].kind != AG_PTX_MARK_ROLE)
      continue;
    size_t k = 0;
    while (k < json_array_size(roles) &&
           strcmp(json_string_value(json_array_get(roles, k)), R->markers[i].name))
      k++;
    if (k == json_array_size(roles))
      json_array_append_new(roles, json_string(R->markers[i].name));
  }
  if (!roles) { /* root owns regs and sites now */
    json_decref(root);
    return NULL;
  }
  json_object_set_new(root, "roles", roles);
  return root;
fail:
  json_decref(root);
  json_decref(regs);
  json_decref(sites);
  return NULL;
}

static void bar_text(const ag_ptx_barref *b, ag_str *out) {
  ag_str_puts(out, b->operand);
  if (b->sym) {
    if (b->offset_known)
      ag_str_printf(out, " = %s+%lld", b->sym, (long long)b->offset);
    else
      ag_str_printf(out, " = %s+?", b->sym);
  }
}

static void region_text(const ag_ptx_regions *R, int i, int depth, ag_str *out) {
  const ag_ptx_region *r = &R->regions[i];
  for (int d = 0; d < depth; d++)
    ag_str_puts(out, "  ");
  char disp[512];
  ag_demangle_path(r->is_root ? r->qname : r->name, disp, sizeof disp);
  ag_str_printf(out, "%s  id 0x%016llx", disp, (unsigned long long)r->id);
  if (r->is_root)
    ag_str_printf(out, "  (%s%s%s)", r->func->is_entry ? "kernel" : "function",
                  strcmp(disp, r->qname) ? " " : "", strcmp(disp, r->qname) ? r->qname : "");
  if (r->nbegins) {
    ag_str_puts(out, "  begin");
    for (int k = 0; k < r->nbegins; k++)
      ag_str_printf(out, "%s%d", k ? "," : " ", r->begins[k].line);
    ag_str_puts(out, " end");
    for (int k = 0; k < r->nends; k++)
      ag_str_printf(out, "%s%d", k ? "," : " ", r->ends[k].line);
  }
  if (r->iter)
    ag_str_printf(out, "  iter %s", r->iter);
  else {
    int any = 0;
    for (int k = 0; k < r->nbegins; k++)
      any |= r->begins[k].iter != NULL;
    if (any) {
      ag_str_puts(out, "  iter");
      for (int k = 0; k < r->nbegins; k++)
        ag_str_printf(out, "%s%s", k ? "," : " ", r->begins[k].iter ? r->begins[k].iter : "-");
    }
  }
  if (r->role)
    ag_str_printf(out, "  role %s", r->role);
  else {
    int any = 0;
    for (int k = 0; k < r->nbegins; k++)
      any |= r->begins[k].role != NULL;
    if (any) {
      ag_str_puts(out, "  roles");
      for (int k = 0; k < r->nbegins; k++)
        ag_str_printf(out, "%s%s", k ? "," : " ", r->begins[k].role ? r->begins[k].role : "-");
    }
  }
  if (r->dynamic) {
    ag_str_puts(out, "  dynamic (called from");
    for (int k = 0; k < r->nowners; k++)
      ag_str_printf(out, " %s", R->regions[r->owners[k]].qname);
    ag_str_puts(out, ")");
  }
  ag_str_putc(out, '\n');
  for (int k = 0; k < r->nsites; k++) {
    const ag_ptx_site *s = &R->sites[r->sites[k]];
    for (int d = 0; d < depth + 1; d++)
      ag_str_puts(out, "  ");
    ag_str_printf(out, "- %s %s line %d", s->op_id, ag_ptx_site_kind_name(s->kind), s->line);
    if (s->has_bar) {
      ag_str_puts(out, " bar ");
      bar_text(&s->bar, out);
    }
    if (s->parity)
      ag_str_printf(out, " parity %s", s->parity);
    if (s->group_n >= 0)
      ag_str_printf(out, " n %d", s->group_n);
    if (s->loop >= 0)
      ag_str_printf(out, " loop@%d", s->loop_header_line);
    if (s->completion != AG_PTX_DONE_SYNC) {
      ag_str_printf(out, " done %s", ag_ptx_completion_name(s->completion));
      for (int q = 0; q < s->ndone_by; q++)
        ag_str_printf(out, "%s%d", q ? "," : " by line ", R->sites[s->done_by[q]].line);
    }
    ag_str_putc(out, '\n');
  }
  for (int k = 0; k < r->nchildren; k++)
    region_text(R, r->children[k], depth + 1, out);
}

int ag_ptx_regions_format(const ag_ptx_module *m, const ag_ptx_regions *R, ag_str *out) {
  (void)m;
  for (int i = 0; i < R->nregions; i++)
    if (R->regions[i].parent < 0)
      region_text(R, i, 0, out);
  return out->oom ? AG_ENOMEM : 0;
}
