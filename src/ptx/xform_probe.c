/*
 * xform_probe.c — async-operation probes on the parsed PTX (docs/probes.md):
 *
 *   ag_xform_probe  the probe variant of one dynamic instance (site,
 *                   occurrence): a timestamp at issue, a forced completion
 *                   right after issue, a timestamp at completion, stored as
 *                   one 16-byte record {issue clock, site 0, completion clock,
 *                   occurrence ^ bias} through the reference trace's record pipeline
 *                   (per-warp buffers, anchors, descriptor: xform_trace.c with
 *                   anchors_only), so the host runtime, the evidence file and
 *                   the decoder are the ones reference tracing uses;
 *   ag_xform_waits  the markers of the exposed-wait regions: every wait that
 *                   completes an asynchronous operation becomes a synthetic
 *                   child region "argus_wait_<ordinal>" of its region, which
 *                   the traced variant then times like any region; the span
 *                   timed is the one discovery recognized (a spin loop of any
 *                   shape, or the instruction: discover.c, wait_span).
 *
 * Forced completion per kind (what the probe inserts after the issue):
 *   tma_load, bulk_copy with an mbarrier: spin on the barrier for the phase
 *     the load completes. That phase is captured at run time just before the
 *     issue: `mbarrier.test_wait.parity [bar], 0` is true exactly when the
 *     barrier's current phase is odd (its preceding, even phase is complete),
 *     so the current phase's parity is that predicate; the load's complete_tx
 *     lands in the current phase, whatever the iteration. A phase completes
 *     only when every transaction the thread expects has arrived, so when the
 *     thread issues more loads (or arrives) on the same barrier later in the
 *     same straight-line code (gemm's A and B loads share one expect_tx), the
 *     wait goes after the last of them: waiting earlier would never return;
 *   cp_async: cp.async.commit_group + cp.async.wait_group 0;
 *   wgmma: wgmma.commit_group + wgmma.wait_group 0;
 *   tma_store, tma_reduce, bulk_copy with a bulk group:
 *     cp.async.bulk.commit_group + cp.async.bulk.wait_group 0.
 * An extra commit splits the program's group in two, the first part already
 * complete: every later wait_group of the program waits for at least what it
 * waited for before, so results stay correct.
 *
 * The probe fires only on the selected occurrence: the iteration operand of
 * the innermost ARGUS_BEGIN_AT region around the site (copied into a probe
 * register at that region's begin markers), or, without one, the number of
 * times the thread passed the site before. Other occurrences run as in the
 * program. Probes live in kernels (not .func bodies). Called once per probe
 * variant; linear in the module.
 */
#include "argus/variant.h"

#include "argus/evidence.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ptx_internal.h"

typedef struct px {
  ag_ptx_module *m;
  const ag_ptx_regions *r;
  ag_diags *diags;
} px;

static int err_at(px *x, const ag_ptx_stmt *s, int rc, const char *fmt, ...) AG_PRINTF(4, 5);
static int err_at(px *x, const ag_ptx_stmt *s, int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ag__ptx_vdiag(x->m, x->diags, s, fmt, ap);
  va_end(ap);
  return rc;
}

static int insert(px *x, ag_ptx_func *f, ag_ptx_stmt *at, int before, const char *text,
                  int line) {
  ag_ptx_stmt *first = NULL, *last = NULL;
  int rc = ag_ptx_parse_snippet(x->m, f, text, x->diags, &first, &last);
  if (rc || !first)
    return rc;
  for (ag_ptx_stmt *s = first; s; s = s == last ? NULL : s->next)
    s->line = line; /* inserted code reports the line it serves */
  if (before)
    ag_ptx_insert_before(x->m, at, first, last);
  else
    ag_ptx_insert_after(x->m, at, first, last);
  return 0;
}

int ag_probe_site_supported(const ag_ptx_site *s) {
  switch (s->kind) {
  case AG_PTX_SITE_TMA_LOAD:
  case AG_PTX_SITE_TMA_STORE:
  case AG_PTX_SITE_TMA_REDUCE:
  case AG_PTX_SITE_BULK_COPY:
  case AG_PTX_SITE_CP_ASYNC:
  case AG_PTX_SITE_WGMMA:
    return s->completion != AG_PTX_DONE_NONE && s->completion != AG_PTX_DONE_SYNC;
  default:
    return 0;
  }
}

static int func_index(const ag_ptx_module *m, const ag_ptx_func *f) {
  for (int i = 0; i < m->nfuncs; i++)
    if (m->funcs[i] == f)
      return i;
  return -1;
}

/* Same barrier: same base register and offset, same symbol and offset, or
 * the same operand text. */
static int same_bar(const ag_ptx_barref *a, const ag_ptx_barref *b) {
  if (a->operand && b->operand && !strcmp(a->operand, b->operand))
    return 1;
  if (a->offset_known != b->offset_known || (a->offset_known && a->offset != b->offset))
    return 0;
  if (a->reg && b->reg)
    return !strcmp(a->reg, b->reg);
  return a->offset_known && a->sym && b->sym && !strcmp(a->sym, b->sym);
}

static const ag_ptx_site *site_at(const ag_ptx_regions *r, const ag_ptx_stmt *s) {
  for (int i = 0; i < r->nsites; i++)
    if (r->sites[i].stmt == s)
      return &r->sites[i];
  return NULL;
}

/* Where the forced wait of an mbarrier-completed op goes: after the last
 * statement of its straight-line run (its CFG block) that still contributes
 * to the barrier's phase (a load or an arrive on the same barrier), stopping
 * at any mbarrier wait. */
static ag_ptx_stmt *completion_point(const ag_ptx_regions *r, const ag_ptx_cfg *g,
                                     const ag_ptx_site *site) {
  ag_ptx_stmt *p = site->stmt;
  if (!g || site->stmt->block < 0 || site->stmt->block >= g->nblocks)
    return p;
  const ag_ptx_block *B = &g->blocks[site->stmt->block];
  for (ag_ptx_stmt *s = site->stmt; s && s != B->last; ) {
    s = s->next;
    const ag_ptx_site *o = s ? site_at(r, s) : NULL;
    if (!o)
      continue;
    if (o->kind == AG_PTX_SITE_MBAR_WAIT)
      break;
    int contributes = (o->completion == AG_PTX_DONE_MBARRIER ||
                       o->kind == AG_PTX_SITE_MBAR_ARRIVE ||
                       o->kind == AG_PTX_SITE_MBAR_EXPECT_TX) &&
                      o->has_bar && same_bar(&o->bar, &site->bar);
    if (contributes)
      p = s;
  }
  return p;
}

/* The 32-bit form of an iteration operand into %agp_it (text appended). */
static int copy_iter(px *x, const ag_ptx_marker *mk, ag_str *o) {
  if (!mk->iter) {
    ag_str_puts(o, "\tmov.u32 %agp_it, -1;\n");
    return 0;
  }
  const char *it = mk->iter;
  int bits = (it[0] == '%') ? ag__ptx_reg_bits(mk->stmt->func, it) : 32;
  if (it[0] != '%' || bits == 32)
    ag_str_printf(o, "\tmov.u32 %%agp_it, %s;\n", it);
  else if (bits == 64 || bits == 16)
    ag_str_printf(o, "\tcvt.u32.u%d %%agp_it, %s;\n", bits, it);
  else
    return err_at(x, mk->stmt, AG_EUNSUPPORTED,
                  "iteration operand '%s' of region '%s' is not a 16-, 32- or 64-bit register",
                  it, mk->name);
  return 0;
}

/* The barrier operand of the site as it will be written in the probe: a copy
 * of the base register taken before the issue (pre), so a later redefinition
 * cannot move the wait to another barrier. */
static int bar_operand(px *x, const ag_ptx_site *site, ag_str *pre, ag_str *bar) {
  const ag_ptx_operand *op = NULL;
  for (int i = 0; i < site->stmt->nops; i++)
    if (site->stmt->ops[i].kind == AG_PTX_OP_ADDR && site->bar.operand &&
        !strcmp(site->stmt->ops[i].text, site->bar.operand))
      op = &site->stmt->ops[i];
  if (!op)
    return err_at(x, site->stmt, AG_EUNSUPPORTED, "cannot find the mbarrier operand of '%s'",
                  site->op_id);
  if (op->base && op->base[0] == '%' && op->nsub <= 1) {
    int bits = ag__ptx_reg_bits(site->func, op->base);
    if (bits != 32 && bits != 64)
      return err_at(x, site->stmt, AG_EUNSUPPORTED,
                    "the mbarrier address register '%s' of '%s' is not 32 or 64 bits",
                    op->base, site->op_id);
    const char *cp = bits == 32 ? "%agp_ba" : "%agp_bb";
    ag_str_printf(pre, "\tmov.b%d %s, %s;\n", bits, cp, op->base);
    if (op->ival)
      ag_str_printf(bar, "[%s+%" PRId64 "]", cp, op->ival);
    else
      ag_str_printf(bar, "[%s]", cp);
    return 0;
  }
  ag_str_puts(bar, op->text); /* a symbol (+ constant): stable */
  return 0;
}

/* Sites listed when --op names none. */
enum { PROBE_SITES_LISTED = 12 };

int ag_xform_probe(ag_ptx_module *m, const ag_ptx_regions *r, const ag_variant_async *o,
                   ag_diags *diags, json_t **probes) {
  *probes = NULL;
  px x = {m, r, diags};
  ag_str pre = AG_STR_INIT, post = AG_STR_INIT, bar = AG_STR_INIT, t = AG_STR_INIT;
  json_t *table = NULL;
  int rc = 0;
  const ag_ptx_site *site = NULL;
  for (int i = 0; i < r->nsites && o->probe_op; i++)
    if (!strcmp(r->sites[i].op_id, o->probe_op))
      site = &r->sites[i];
  if (!site) {
    /* the error, then one note per site a probe can take (a few, then a count) */
    int n = 0;
    for (int i = 0; i < r->nsites; i++)
      n += ag_probe_site_supported(&r->sites[i]);
    rc = err_at(&x, NULL, AG_ENOTFOUND, "no site '%s' in the module; %s",
                o->probe_op ? o->probe_op : "(none given)",
                n ? "the sites a probe can take follow ('argus regions' lists every site)"
                  : "it has no asynchronous site a probe can take");
    for (int i = 0, k = 0; i < r->nsites && k <= PROBE_SITES_LISTED; i++) {
      if (!ag_probe_site_supported(&r->sites[i]))
        continue;
      if (k++ == PROBE_SITES_LISTED)
        ag_diags_add(diags, AG_SEV_NOTE, NULL, 0, 0, NULL, 0, "... and %d more", n - k + 1);
      else
        ag_diags_add(diags, AG_SEV_NOTE, NULL, 0, 0, NULL, 0, "probe site %s: %s at line %d",
                     r->sites[i].op_id, ag_ptx_site_kind_name(r->sites[i].kind),
                     r->sites[i].line);
    }
    goto out;
  }
  if (!ag_probe_site_supported(site)) {
    rc = err_at(&x, site->stmt, AG_EUNSUPPORTED,
                "site '%s' is a %s (completes by %s): a probe needs an asynchronous operation "
                "with a completion to force (tma_load, tma_store, tma_reduce, bulk_copy, "
                "cp_async, wgmma)",
                site->op_id, ag_ptx_site_kind_name(site->kind),
                ag_ptx_completion_name(site->completion));
    goto out;
  }
  ag_ptx_func *f = site->func;
  if (!f || !f->is_entry) {
    rc = err_at(&x, site->stmt, AG_EUNSUPPORTED,
                "site '%s' is in the device function '%s': probes live in kernels (inline "
                "the function)",
                site->op_id, f ? f->name : "?");
    goto out;
  }
  int fi = func_index(m, f);
  const ag_ptx_cfg *g = fi >= 0 && r->cfgs ? r->cfgs[fi] : NULL;
  int mbar = site->completion == AG_PTX_DONE_MBARRIER;
  if (mbar && !site->has_bar) {
    rc = err_at(&x, site->stmt, AG_EUNSUPPORTED, "site '%s' has no mbarrier operand",
                site->op_id);
    goto out;
  }
  /* plan on the pristine module: where the wait goes, where occurrences come from */
  ag_ptx_stmt *done_at = mbar ? completion_point(r, g, site) : site->stmt;
  int ireg = ag__ptx_iter_region(r->regions, site->region);
  uint32_t occ = o->probe_occurrence;
  /* the per-warp anchors and record pipeline the probe stores through */
  ag_variant_opts an = {AG_VARIANT_TRACED, NULL, 0, 1};
  int nsites = 0;
  if ((rc = ag_xform_trace(m, r, &an, diags, &table, &nsites)))
    goto out;
  /* probe state: declarations and the occurrence's initial value */
  ag_str_printf(&t, "\n\t// argus: async probe state (docs/probes.md)\n"
                    "\t.reg .b32 %%agp_it, %%agp_t0, %%agp_t1, %%agp_par, %%agp_ba;\n"
                    "\t.reg .b64 %%agp_bb;\n"
                    "\t.reg .pred %%agp_f, %%agp_w;\n"
                    "\tmov.u32 %%agp_it, %s;\n",
                ireg >= 0 ? "-1" : "0");
  if (t.oom || (rc = insert(&x, f, f->body_open, 0, ag_str_cstr(&t), 0)))
    goto oom_or_out;
  /* occurrences from the iteration region's begin markers */
  for (int i = 0; i < r->nmarkers && ireg >= 0; i++) {
    const ag_ptx_marker *mk = &r->markers[i];
    if (mk->kind != AG_PTX_MARK_BEGIN || mk->region != ireg || mk->stmt->func != f)
      continue;
    ag_str_clear(&t);
    ag_str_puts(&t, "\n");
    if ((rc = copy_iter(&x, mk, &t)))
      goto out;
    if (t.oom || (rc = insert(&x, f, mk->stmt, 0, ag_str_cstr(&t), mk->line)))
      goto oom_or_out;
  }
  /* before the issue: fire test, phase capture, issue timestamp */
  ag_str_printf(&pre, "\n\t// argus: probe %s occurrence %u (%s, forced completion by %s)\n"
                      "\tsetp.eq.u32 %%agp_f, %%agp_it, %u;\n",
                site->op_id, occ, ag_ptx_site_kind_name(site->kind),
                ag_ptx_completion_name(site->completion), occ);
  if (ireg < 0)
    ag_str_puts(&pre, "\tadd.u32 %agp_it, %agp_it, 1;\n");
  if (site->stmt->guard) /* the op does not issue: neither does the probe */
    ag_str_printf(&pre, "\t@%s%s setp.ne.u32 %%agp_f, %%agp_it, %%agp_it;\n",
                  site->stmt->guard_neg ? "" : "!", site->stmt->guard);
  if (mbar) {
    if ((rc = bar_operand(&x, site, &pre, &bar)))
      goto out;
    ag_str_printf(&pre, "\t@%%agp_f mbarrier.test_wait.parity.shared::cta.b64 %%agp_w, %s, 0;\n"
                        "\tselp.u32 %%agp_par, %s, %%agp_w;\n",
                  ag_str_cstr(&bar), o->probe_wrong_phase ? "0, 1" : "1, 0");
  }
  ag_str_puts(&pre, "\t@%agp_f mov.u32 %agp_t0, %clock;\n");
  /* after the issue (or the last op the phase needs): forced completion,
   * completion timestamp, the record */
  ag_str_puts(&post, "\n\t// argus: forced completion and the probe's record\n"
                     "\t@!%agp_f bra $agp_done;\n");
  switch (site->completion) {
  case AG_PTX_DONE_MBARRIER:
    ag_str_printf(&post, "$agp_wait:\n"
                         "\tmbarrier.try_wait.parity.shared::cta.b64 %%agp_w, %s, %%agp_par;\n"
                         "\t@!%%agp_w bra $agp_wait;\n",
                  ag_str_cstr(&bar));
    break;
  case AG_PTX_DONE_CP_GROUP:
    ag_str_puts(&post, "\tcp.async.commit_group;\n\tcp.async.wait_group 0;\n");
    break;
  case AG_PTX_DONE_WGMMA_GROUP:
    ag_str_puts(&post, "\twgmma.commit_group.sync.aligned;\n\twgmma.wait_group.sync.aligned 0;\n");
    break;
  default: /* bulk group */
    ag_str_puts(&post, "\tcp.async.bulk.commit_group;\n\tcp.async.bulk.wait_group 0;\n");
    break;
  }
  ag_str_puts(&post, "\tmov.u32 %agp_t1, %clock;\n");
  char occ_x[16];
  snprintf(occ_x, sizeof occ_x, "%u", (uint32_t)occ ^ AG_EV_ITER_BIAS);
  ag__ptx_trace_record(&post, "%agp_t0", "%agp_t1", 0, occ_x);
  ag_str_puts(&post, "$agp_done:\n");
  if (pre.oom || post.oom || bar.oom)
    goto oom_or_out;
  if ((rc = insert(&x, f, done_at, 0, ag_str_cstr(&post), site->line)) ||
      (rc = insert(&x, f, site->stmt, 1, ag_str_cstr(&pre), site->line)))
    goto out;
  /* the probe table: the anchors' regions and roles, one async site */
  const ag_ptx_region *ir = ireg >= 0 ? &r->regions[ireg] : NULL;
  json_t *js = json_pack("{s:i,s:s,s:s,s:s,s:i,s:i,s:s,s:s,s:s,s:s,s:i}", "site", 0, "kind",
                         "async", "op_id", site->op_id, "op", ag_ptx_site_kind_name(site->kind),
                         "occurrence", (json_int_t)occ, "line", site->line, "function", f->name,
                         "completion", ag_ptx_completion_name(site->completion),
                         "occurrence_from", ir ? "iteration" : "count", "region",
                         r->regions[site->region].qname, "completion_line", done_at->line);
  if (js && ir)
    json_object_set_new(js, "iteration_region", json_string(ir->qname));
  if (js && o->probe_wrong_phase)
    json_object_set_new(js, "wrong_phase", json_true());
  if (!js || json_array_append_new(json_object_get(table, "sites"), js))
    goto oom_or_out;
  *probes = table;
  table = NULL;
  goto out;
oom_or_out:
  if (!rc)
    rc = AG_ENOMEM;
out:
  json_decref(table);
  ag_str_release(&pre);
  ag_str_release(&post);
  ag_str_release(&bar);
  ag_str_release(&t);
  return rc;
}

/* ------------------------------------------------------------- waits */

/* 1 when site w completes some probe-able async op (it is in a done_by). */
static int completes_async(const ag_ptx_regions *r, int w) {
  for (int i = 0; i < r->nsites; i++) {
    const ag_ptx_site *s = &r->sites[i];
    if (!ag_probe_site_supported(s))
      continue;
    for (int k = 0; k < s->ndone_by; k++)
      if (s->done_by[k] == w)
        return 1;
  }
  return 0;
}

int ag_xform_waits(ag_ptx_module *m, const ag_ptx_regions *r, ag_diags *diags, int *nwaits) {
  *nwaits = 0;
  px x = {m, r, diags};
  ag_str t = AG_STR_INIT;
  int rc = 0;
  for (int i = 0; i < r->nsites && rc == 0; i++) {
    const ag_ptx_site *w = &r->sites[i];
    int is_wait = w->kind == AG_PTX_SITE_MBAR_WAIT || w->kind == AG_PTX_SITE_CP_ASYNC_WAIT ||
                  w->kind == AG_PTX_SITE_WGMMA_WAIT || w->kind == AG_PTX_SITE_BULK_WAIT;
    if (!is_wait || !w->func || !w->func->is_entry || !completes_async(r, i))
      continue;
    ag_ptx_stmt *first = w->wait_first, *last = w->wait_last;
    if (!first || !last)
      continue; /* not timed (discovery says why): the synthesis lists it missing */
    char name[48];
    snprintf(name, sizeof name, AG_EV_WAIT_PREFIX "%d", w->ordinal);
    unsigned long long h = (unsigned long long)ag_ptx_fnv1a(name, strlen(name));
    ag_str_clear(&t);
    ag_str_printf(&t, "\n\t// @argus begin %llu %s\n", h, name);
    if (t.oom || (rc = insert(&x, w->func, first, 1, ag_str_cstr(&t), w->line)))
      break;
    ag_str_clear(&t);
    ag_str_printf(&t, "\n\t// @argus end %llu %s\n", h, name);
    if (t.oom || (rc = insert(&x, w->func, last, 0, ag_str_cstr(&t), w->line)))
      break;
    (*nwaits)++;
  }
  if (!rc && t.oom)
    rc = AG_ENOMEM;
  ag_str_release(&t);
  return rc;
}
