/*
 * xform_map.c — the mapping variant: counts, per warp, how often every
 * basic block of every kernel and .func executes under each region
 * (docs/attribution.md). Its counts are the n(r, p) of attribution, read
 * through the trace-free build's SASS -> PTX line table.
 *
 * Units. A unit is a run of instructions of one basic block between region
 * markers (a marker inside a block splits it). Discovery proves that every
 * statement of a function is reached with the same open regions on all
 * paths, so a unit's region is static — except in a .func outside its own
 * markers, where it is the caller's region at the call. Each unit has one
 * counter slot when its region is static and one per region when it is
 * inherited (slot + region index). Slot 0 counts the executions that could
 * not be kept (the bound buffer was too small), so nothing is lost silently.
 *
 * The caller's region. There is no region stack: each function keeps the
 * region it inherited in a register (%agm_in), received as an extra .param
 * (__argus_map_in) that every direct call passes: the region at the call
 * site (static, or the caller's own %agm_in). Nesting and recursion need no
 * depth limit, and there is nothing to overflow. A region a .func opens is
 * static in it (hstep/inner, whichever region calls hstep), and the calls
 * made inside it pass it. An indirect call is refused (its prototype would
 * need the parameter too).
 *
 * The counter, before a unit's first instruction: one lane of the active
 * ones (the lowest: activemask & -activemask against %lanemask_eq, as SASS
 * counts warp instructions) adds 1 to its slot with red.global.add.u64.
 * The prologue of every function reads the descriptor __argus_map {u64
 * slots, u32 capacity, u32 enabled} that the host runtime binds
 * (src/collect/map_bind.c; __argus_map_slots tells it how many); disabled
 * (a mapping module loaded outside Argus), nothing is stored; a capacity
 * below the layout's slots (ARGUS_MAP_SLOTS) sends every count to slot 0.
 *
 * Output: the variant and its layout ("argus-map" JSON: regions, functions,
 * units with their PTX lines in the parent, slots), which
 * ag_attr_layout_from_json reads. Load: linear in the module; called once
 * per mapping variant.
 */
#include "argus/variant.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

#define M "%agm_"
#define MF "%%agm_" /* the same inside printf formats */
#define MAP_SYM "__argus_map"
#define MAP_PARAM "__argus_map_in"
#define MAP_ARG "__argus_map_a"

typedef struct unit {
  ag_ptx_func *f;
  int func;  /* index among the functions with a body */
  int block;
  ag_ptx_stmt *first, *last;
  int first_line, last_line;
  int region; /* -1: inherited */
  uint32_t slot;
} unit;

typedef AG_VEC(unit) unit_vec;

typedef struct mx {
  ag_ptx_module *m;
  const ag_ptx_regions *r;
  ag_diags *diags;
  unit_vec units;
} mx;

static int mdiag(mx *x, const ag_ptx_stmt *s, int rc, const char *fmt, ...) AG_PRINTF(4, 5);
static int mdiag(mx *x, const ag_ptx_stmt *s, int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ag__ptx_vdiag(x->m, x->diags, s, fmt, ap);
  va_end(ap);
  return rc;
}

static int end_line(const ag_ptx_stmt *s) {
  int n = s->line;
  for (uint32_t i = 0; i < s->text_len; i++)
    n += s->text[i] == '\n';
  return n;
}

static int root_of(const ag_ptx_regions *r, const ag_ptx_func *f) {
  for (int i = 0; i < r->nregions; i++)
    if (r->regions[i].is_root && r->regions[i].func == f)
      return i;
  return -1;
}

/* the units of one function: blocks split at begin/end markers */
static int func_units(mx *x, ag_ptx_func *f, int fi, const ag_ptx_cfg *g, const int *at,
                      const char *is_marker) {
  int root = root_of(x->r, f);
  for (int b = 0; b < g->nblocks; b++) {
    const ag_ptx_block *B = &g->blocks[b];
    if (b == g->exit || !B->first)
      continue;
    unit u = {f, fi, b, NULL, NULL, 0, 0, 0, 0};
    for (ag_ptx_stmt *s = B->first; s; s = s == B->last ? NULL : s->next) {
      if (s->kind == AG_PTX_INSTR) {
        if (!u.first)
          u.first = s, u.region = at[s->index];
        u.last = s;
      }
      int split = s->kind == AG_PTX_COMMENT && s->index >= 0 && s->index < f->nstmts &&
                  is_marker[s->index];
      if ((split || s == B->last) && u.first) {
        u.first_line = u.first->line;
        u.last_line = end_line(u.last);
        if (u.region == root && !f->is_entry)
          u.region = -1;
        if (ag_vec_push(&x->units, u))
          return AG_ENOMEM;
        u.first = u.last = NULL;
      }
    }
  }
  return 0;
}

static int unit_cmp(const void *a, const void *b) {
  const unit *p = a, *q = b;
  return (p->first_line > q->first_line) - (p->first_line < q->first_line);
}

/* The statement's text becomes o's (copied into the arena; o released). */
static int set_text(mx *x, ag_ptx_stmt *s, ag_str *o) {
  char *buf = o->oom ? NULL : ag_arena_alloc(&x->m->arena, o->len + 1);
  if (buf) {
    memcpy(buf, o->p, o->len + 1);
    s->text = buf;
    s->text_len = (uint32_t)o->len;
  }
  ag_str_release(o);
  return buf ? 0 : AG_ENOMEM;
}

static int is_ws(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* o = the text t..e with `item` appended to its parenthesized list
 * open..close (the '(' and its ')'): after the last item, `sep` before it
 * when the list is not empty */
static void list_append(ag_str *o, const char *t, const char *e, const char *open,
                        const char *close, const char *sep, const char *item) {
  const char *w = close; /* after the last item's text */
  while (w > open + 1 && is_ws(w[-1]))
    w--;
  ag_str_append(o, t, (size_t)(w - t));
  if (w > open + 1)
    ag_str_puts(o, sep);
  ag_str_puts(o, item);
  ag_str_append(o, w, (size_t)(e - w));
}

/* ".func [(rets)] name(params)": the parameter __argus_map_in appended */
static int add_param(mx *x, ag_ptx_stmt *h, const char *name) {
  const char *t = h->text, *e = t + h->text_len;
  const char *p = NULL;
  size_t nl = strlen(name);
  for (const char *q = t; q + nl <= e; q++) /* the name as a whole token */
    if (!memcmp(q, name, nl) && (q == t || !(q[-1] == '_' || q[-1] == '$' || q[-1] == '.' ||
                                             (q[-1] >= '0' && q[-1] <= '9') ||
                                             ((q[-1] | 32) >= 'a' && (q[-1] | 32) <= 'z'))) &&
        (q + nl == e || q[nl] == '(' || is_ws(q[nl]) || q[nl] == ';')) {
      p = q + nl;
      break;
    }
  if (!p)
    return mdiag(x, h, AG_EPARSE, "cannot find the name of function '%s' in its header", name);
  ag_str o = AG_STR_INIT;
  const char *q = p;
  while (q < e && is_ws(*q))
    q++;
  if (q < e && *q == '(') { /* the parameter list: before its ')' */
    int depth = 0;
    const char *close = NULL;
    for (const char *c = q; c < e && !close; c++) {
      if (*c == '(')
        depth++;
      else if (*c == ')' && --depth == 0)
        close = c;
    }
    if (!close)
      return mdiag(x, h, AG_EPARSE, "unbalanced parameter list of function '%s'", name);
    list_append(&o, t, e, q, close, ",\n\t", ".param .b32 " MAP_PARAM);
  } else {
    ag_str_append(&o, t, (size_t)(p - t));
    ag_str_puts(&o, "(.param .b32 " MAP_PARAM ")");
    ag_str_append(&o, p, (size_t)(e - p));
  }
  return set_text(x, h, &o);
}

/* "call ... callee[, (args)];": the argument __argus_map_a appended */
static int add_arg(mx *x, ag_ptx_stmt *s) {
  const char *t = s->text, *e = t + s->text_len;
  int ci = -1;
  for (int i = 0; i < s->nops && ci < 0; i++)
    if (s->ops[i].kind != AG_PTX_OP_LIST)
      ci = i;
  ag_str o = AG_STR_INIT;
  if (ci >= 0 && ci + 1 < s->nops && s->ops[s->nops - 1].kind == AG_PTX_OP_LIST) {
    const char *close = e;
    while (close > t && *close != ')')
      close--;
    const char *open = close;
    int depth = 0;
    for (; open > t; open--) {
      if (*open == ')')
        depth++;
      else if (*open == '(' && --depth == 0)
        break;
    }
    list_append(&o, t, e, open, close, ", ", MAP_ARG);
  } else {
    const char *semi = e;
    while (semi > t && semi[-1] != ';')
      semi--;
    if (semi > t)
      semi--;
    ag_str_append(&o, t, (size_t)(semi - t));
    ag_str_puts(&o, ", (" MAP_ARG ")");
    ag_str_append(&o, semi, (size_t)(e - semi));
  }
  return set_text(x, s, &o);
}

static int has_body(const ag_ptx_module *m, const char *name) {
  for (int i = 0; i < m->nfuncs; i++)
    if (!m->funcs[i]->is_decl && !strcmp(m->funcs[i]->name, name))
      return 1;
  return 0;
}

static int verbatim(mx *x, ag_ptx_func *f, ag_ptx_stmt *at, int before, ag_str *t) {
  int rc = t->oom ? AG_ENOMEM : ag__ptx_insert_verbatim(x->m, f, at, before, t);
  ag_str_clear(t);
  return rc;
}

/* the region operand at a statement: a static index or the inherited one */
static void region_operand(const mx *x, const ag_ptx_func *f, int reg, char *buf, size_t n) {
  if (reg == root_of(x->r, f) && !f->is_entry)
    snprintf(buf, n, MF "in");
  else
    snprintf(buf, n, "%d", reg);
}

static int instrument_func(mx *x, ag_ptx_func *f, uint32_t nslots, const int *at,
                           const ag_ptx_cfg *g) {
  ag_str t = AG_STR_INIT;
  int rc = 0;
  /* declarations after '{'; the prologue before the first statement that
   * is not a declaration */
  ag_str_puts(&t, "\n\t// argus: mapping-run state (docs/attribution.md)\n"
                  "\t.reg .b64 " M "a, " M "b;\n"
                  "\t.reg .b32 " M "m, " M "t, " M "k, " M "le, " M "c, " M "e, " M "in, " M
                  "i;\n"
                  "\t.reg .pred " M "p, " M "on, " M "q;\n");
  if ((rc = verbatim(x, f, f->body_open, 0, &t)))
    goto out;
  ag_ptx_stmt *at0 = f->body_open->next;
  while (at0 && at0 != f->body_close &&
         (at0->kind == AG_PTX_DECL || at0->kind == AG_PTX_VERBATIM ||
          at0->kind == AG_PTX_COMMENT))
    at0 = at0->next;
  if (!at0)
    at0 = f->body_close;
  ag_str_printf(&t,
                "\n\t// argus: mapping-run prologue\n"
                "\tld.const.u64 " MF "b, [" MAP_SYM "];\n"
                "\tld.const.v2.u32 {" MF "c, " MF "e}, [" MAP_SYM "+8];\n"
                "\tsetp.ne.u32 " MF "on, " MF "e, 0;\n"
                "\tsetp.ge.u32 " MF "q, " MF "c, %u;\n"
                "\tselp.u32 " MF "k, 8, 0, " MF "q;\n"
                "\tmov.u32 " MF "le, %%lanemask_eq;\n",
                nslots);
  if (f->is_entry)
    ag_str_printf(&t, "\tmov.u32 " MF "in, %d;\n", root_of(x->r, f));
  else
    ag_str_puts(&t, "\tld.param.u32 " M "in, [" MAP_PARAM "];\n");
  if ((rc = verbatim(x, f, at0, 1, &t)))
    goto out;
  /* the counters */
  for (size_t i = 0; i < x->units.n; i++) {
    const unit *u = &x->units.v[i];
    if (u->f != f)
      continue;
    ag_str_printf(&t,
                  "\n\t// argus: count unit %zu (block %d)\n"
                  "\tactivemask.b32 " MF "m;\n"
                  "\tneg.s32 " MF "t, " MF "m;\n"
                  "\tand.b32 " MF "t, " MF "t, " MF "m;\n"
                  "\tsetp.eq.and.b32 " MF "p, " MF "t, " MF "le, " MF "on;\n",
                  i, u->block);
    if (u->region >= 0)
      ag_str_printf(&t, "\tmad.wide.u32 " MF "a, " MF "k, %u, " MF "b;\n", u->slot);
    else
      ag_str_printf(&t,
                    "\tadd.u32 " MF "i, " MF "in, %u;\n"
                    "\tmad.wide.u32 " MF "a, " MF "i, " MF "k, " MF "b;\n",
                    u->slot);
    ag_str_puts(&t, "\t@" M "p red.global.add.u64 [" M "a], 1;\n");
    if ((rc = verbatim(x, f, u->first, 1, &t)))
      goto out;
  }
  /* the calls: each passes the region at its site */
  for (int k = 0; k < g->ncalls; k++) {
    ag_ptx_stmt *s = g->calls[k].stmt;
    const char *callee = g->calls[k].callee;
    if (!callee) {
      rc = mdiag(x, s, AG_EUNSUPPORTED,
                 "indirect call in function '%s': the mapping variant passes the caller's "
                 "region to every function it calls, which an indirect call cannot "
                 "(call the function directly)",
                 f->name);
      goto out;
    }
    if (!has_body(x->m, callee))
      continue; /* an external function: not counted, nothing to pass */
    char op[32];
    region_operand(x, f, at[s->index], op, sizeof op);
    ag_str_printf(&t,
                  "\n\t{ // argus: the caller's region for '%s'\n"
                  "\t.param .b32 " MAP_ARG ";\n"
                  "\tst.param.b32 [" MAP_ARG "], %s;",
                  callee, op);
    if ((rc = verbatim(x, f, s, 1, &t)) || (rc = add_arg(x, s)))
      goto out;
    ag_str_puts(&t, "\n\t} // argus: end of the call");
    if ((rc = verbatim(x, f, s, 0, &t)))
      goto out;
  }
out:
  ag_str_release(&t);
  return rc;
}

static json_t *layout_json(const mx *x, const char *program, uint32_t nslots) {
  json_t *regs = json_array(), *funcs = json_array(), *units = json_array();
  for (int i = 0; i < x->r->nregions; i++)
    json_array_append_new(regs, json_string(x->r->regions[i].qname));
  for (int i = 0; i < x->m->nfuncs; i++) {
    const ag_ptx_func *f = x->m->funcs[i];
    if (f->is_decl || !f->body_close)
      continue;
    json_array_append_new(funcs, json_pack("{s:s,s:[i,i],s:b}", "name", f->name, "lines",
                                           f->header->line, end_line(f->body_close), "entry",
                                           f->is_entry));
  }
  for (size_t i = 0; i < x->units.n; i++) {
    const unit *u = &x->units.v[i];
    json_array_append_new(units, json_pack("{s:i,s:i,s:[i,i],s:I,s:i}", "function", u->func,
                                           "block", u->block, "lines", u->first_line,
                                           u->last_line, "slot", (json_int_t)u->slot, "region",
                                           u->region));
  }
  return json_pack("{s:s,s:i,s:s,s:o,s:o,s:o,s:I}", "format", "argus-map", "version", 1,
                   "program", program, "regions", regs, "functions", funcs, "units", units,
                   "slots", (json_int_t)nslots);
}

int ag_xform_map(ag_ptx_module *m, const ag_ptx_regions *r, const char *program,
                 ag_diags *diags, json_t **layout) {
  *layout = NULL;
  mx x = {m, r, diags, {0}};
  int rc = 0;
  char *is_marker = NULL;
  int tver = ag__ptx_target_sm(m);
  if (tver && tver < 70) {
    rc = mdiag(&x, NULL, AG_EUNSUPPORTED,
               "mapping variants need a target of sm_70 or newer (activemask); this module "
               "targets %s",
               m->target);
    goto out;
  }
  /* the units of every function with a body, in PTX line order */
  int fi = 0;
  for (int i = 0; i < m->nfuncs; i++) {
    ag_ptx_func *f = m->funcs[i];
    if (f->is_decl || !r->cfgs[i] || !r->region_at[i])
      continue;
    ag_free(is_marker);
    is_marker = ag_calloc((size_t)f->nstmts + 1, 1);
    if (!is_marker) {
      rc = AG_ENOMEM;
      goto out;
    }
    for (int k = 0; k < r->nmarkers; k++)
      if (r->markers[k].stmt->func == f && r->markers[k].kind != AG_PTX_MARK_ROLE &&
          r->markers[k].stmt->index >= 0 && r->markers[k].stmt->index < f->nstmts)
        is_marker[r->markers[k].stmt->index] = 1;
    if ((rc = func_units(&x, f, fi++, r->cfgs[i], r->region_at[i], is_marker)))
      goto out;
  }
  if (x.units.n)
    qsort(x.units.v, x.units.n, sizeof *x.units.v, unit_cmp);
  for (size_t i = 1; i < x.units.n; i++)
    if (x.units.v[i].first_line <= x.units.v[i - 1].last_line) {
      rc = mdiag(&x, x.units.v[i].first, AG_EUNSUPPORTED,
                 "PTX line %d holds statements of two basic blocks: the map attributes SASS "
                 "to PTX lines, so it needs one block per line (put the statements on lines "
                 "of their own)",
                 x.units.v[i].first_line);
      goto out;
    }
  uint64_t slot = 1; /* slot 0: executions not kept */
  for (size_t i = 0; i < x.units.n; i++) {
    x.units.v[i].slot = (uint32_t)slot;
    slot += x.units.v[i].region >= 0 ? 1 : (uint64_t)r->nregions;
  }
  if (slot > UINT32_MAX) {
    rc = mdiag(&x, NULL, AG_ERANGE,
               "the mapping variant would need %" PRIu64 " counter slots (more than 2^32)",
               slot);
    goto out;
  }
  uint32_t nslots = (uint32_t)slot;
  /* the layout first: it names the parent's lines, before any edit */
  if (!(*layout = layout_json(&x, program, nslots))) {
    rc = AG_ENOMEM;
    goto out;
  }
  /* .func definitions and prototypes take the inherited region */
  for (int i = 0; i < m->nfuncs; i++) {
    ag_ptx_func *f = m->funcs[i];
    if (!f->is_entry && has_body(m, f->name) && (rc = add_param(&x, f->header, f->name)))
      goto out;
  }
  for (int i = 0; i < m->nfuncs; i++) {
    ag_ptx_func *f = m->funcs[i];
    if (!f->is_decl && r->cfgs[i] && r->region_at[i] &&
        (rc = instrument_func(&x, f, nslots, r->region_at[i], r->cfgs[i])))
      goto out;
  }
  /* the descriptor, before the first function */
  ag_ptx_stmt *at = m->first;
  while (at && at->kind != AG_PTX_FUNC)
    at = at->next;
  if (!at) {
    rc = mdiag(&x, NULL, AG_EPARSE, "the module has no functions to map");
    goto out;
  }
  ag_ptx_stmt *first = NULL, *last = NULL;
  char dtext[256];
  snprintf(dtext, sizeof dtext,
           "\n// argus: mapping-run descriptor {slots, capacity, enabled}, bound by the host "
           "runtime, and the slots it needs\n"
           ".const .align 8 .b8 " MAP_SYM "[16];\n"
           ".const .align 4 .u32 " MAP_SYM "_slots = %u;\n",
           nslots);
  if ((rc = ag_ptx_parse_snippet(m, NULL, dtext, diags, &first, &last)))
    goto out;
  ag_ptx_insert_before(m, at, first, last);
  for (ag_ptx_stmt *s = first; s; s = s == last ? NULL : s->next) {
    s->func = NULL;
    s->depth = 0;
  }
out:
  if (rc) {
    json_decref(*layout);
    *layout = NULL;
  }
  ag_free(is_marker);
  ag_vec_free(&x.units);
  return rc;
}
