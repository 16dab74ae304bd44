/*
 * xform_trace.c — the traced-variant transform: reference-trace probes at
 * region markers, on the parsed PTX.
 *
 * The probe is the product's hot path. It is built for few instructions
 * (two warps share each scheduler: in latency-bound code every instruction
 * and every wait lands on the warp's own path) and so that nothing it does
 * waits on its own results (docs/tracing.md has the design and the measured
 * cost):
 *   - kernel entry, once per thread: the low 32 bits of the entry anchors
 *     (%clock, %globaltimer_lo) in two registers, the warp's record base,
 *     its record offset k (bytes), a capacity (bytes) that is the buffer's
 *     for lane 0 and 0 for the other lanes (one compare serves "one lane
 *     records" and "the buffer is full") and the store predicate
 *     k < capacity. The prologue stores nothing: a store there would hold
 *     the kernel's own first loads behind the descriptor's load;
 *   - begin marker of region R: the complement of the iteration operand into
 *     R's own register (a fresh register, so the program's induction update
 *     stays free to move), then the low 32 bits of the clock, then the next
 *     record's address base + k (address_ready below);
 *   - end marker of R: the clock first, then R's record {begin, end, site,
 *     ~iteration} is stored at once at base + k (its data is ready: the
 *     clock read is a fixed-latency instruction; the address too when no
 *     record came after the last begin marker, otherwise it is computed
 *     here), k advances by 16 and the predicate for the next record is
 *     computed, long before it is needed.
 *     A store can only land in the warp's own buffer: the address is base +
 *     k, 64-bit, and the predicate bounds k (k counts every record, past
 *     the capacity too, and wraps only after 2^28 records);
 *   - exit, once per warp (with the slot kept from entry): the exit anchors
 *     (the 64-bit entry anchors are rebuilt from them and the low words kept
 *     at entry), lane 0's count k / 16 (records past the capacity are
 *     counted, never written), the largest count over the lanes (redux.sync
 *     + red.max: divergent markers are detected), %smid and the launch index.
 *   Two equally correct encodings of the record address (k in records with
 *   mad.wide, or in bytes) moved the overhead benchmark's inner loop by 16
 *   bytes and its cost by up to 3x (bench/RESULTS.md): code placement, not
 *   the probe; this one is the measured better.
 * The descriptor (record area, metadata area, capacity, enabled, launch) is
 * the module constant __argus_trace, bound by the host runtime before each
 * launch; enabled = 0 (a traced module loaded outside Argus) stores nothing.
 *
 * Markers in .func bodies are refused (the per-warp state lives in the
 * kernel's registers); nvcc inlines device functions unless told not to.
 * Load: linear in the module; called once per traced variant.
 */
#include "argus/variant.h"

#include <inttypes.h>

#include "ptx_internal.h"
#include <stdlib.h>
#include <string.h>

#define P "%agt_"   /* prefix of the probe's registers */
#define PF "%%agt_" /* the same inside printf formats */

/* The warp's slot (t8) and lane (t2) from the special registers; clobbers
 * t2..t12. The linear thread index and warps per CTA come first, for 3-D
 * blocks or for blocks the kernel declares one-dimensional (.reqntid or
 * .maxntid N, 1, 1: tid.y = tid.z = 0); the CTA part is common. */
static const char slot_head_3d[] =
    "\tmov.u32 " P "t2, %tid.x;\n"
    "\tmov.u32 " P "t3, %tid.y;\n"
    "\tmov.u32 " P "t4, %tid.z;\n"
    "\tmov.u32 " P "t5, %ntid.x;\n"
    "\tmov.u32 " P "t6, %ntid.y;\n"
    "\tmov.u32 " P "t7, %ntid.z;\n"
    "\tmad.lo.u32 " P "t4, " P "t4, " P "t6, " P "t3;\n"
    "\tmad.lo.u32 " P "t2, " P "t4, " P "t5, " P "t2;\n"
    "\tmul.lo.u32 " P "t5, " P "t5, " P "t6;\n"
    "\tmul.lo.u32 " P "t5, " P "t5, " P "t7;\n";

static const char slot_head_1d[] =
    "\tmov.u32 " P "t2, %tid.x;\n"
    "\tmov.u32 " P "t5, %ntid.x;\n";

static const char slot_tail[] =
    "\tadd.u32 " P "t5, " P "t5, 31;\n"
    "\tshr.u32 " P "t5, " P "t5, 5;\n"
    "\tmov.u32 " P "t8, %ctaid.x;\n"
    "\tmov.u32 " P "t9, %ctaid.y;\n"
    "\tmov.u32 " P "t10, %ctaid.z;\n"
    "\tmov.u32 " P "t11, %nctaid.x;\n"
    "\tmov.u32 " P "t12, %nctaid.y;\n"
    "\tmad.lo.u32 " P "t10, " P "t10, " P "t12, " P "t9;\n"
    "\tmad.lo.u32 " P "t8, " P "t10, " P "t11, " P "t8;\n"
    "\tshr.u32 " P "t3, " P "t2, 5;\n"
    "\tmad.lo.u32 " P "t8, " P "t8, " P "t5, " P "t3;\n"
    "\tand.b32 " P "t2, " P "t2, 31;\n";

static const char prologue_head[] =
    "\tmov.u32 " P "ce, %clock;\n"
    "\tmov.u32 " P "ge, %globaltimer_lo;\n"
    "\tld.const.u64 " P "a, [__argus_trace];\n"
    "\tld.const.v2.u32 {" P "t0, " P "t1}, [__argus_trace+16];\n";

static const char prologue_tail[] =
    "\tsetp.ne.u32 " P "p, " P "t1, 0;\n"
    "\tsetp.eq.and.u32 " P "p, " P "t2, 0, " P "p;\n"
    "\tmul.lo.u32 " P "t6, " P "t8, " P "t0;\n"
    "\tmad.wide.u32 " P "rb, " P "t6, 16, " P "a;\n"
    "\tshl.b32 " P "t7, " P "t0, 4;\n"
    "\tselp.u32 " P "cl, " P "t7, 0, " P "p;\n"
    "\tmov.u32 " P "k, 0;\n"
    "\tmov.b64 " P "a, " P "rb;\n"
    "\tsetp.lt.u32 " P "q, " P "k, " P "cl;\n"
    "\tmov.u32 " P "sl, " P "t8;\n";

static const char epilogue_head[] =
    "\t// argus: warp exit anchors and counts\n"
    "\tmov.u64 " P "c, %clock64;\n"
    "\tmov.u64 " P "y, %globaltimer;\n"
    "\tld.const.u64 " P "x, [__argus_trace+8];\n"
    "\tld.const.v4.u32 {" P "t0, " P "t1, " P "t13, " P "t14}, [__argus_trace+16];\n";

/* after the slot (t8) and lane (t2): the count, the lanes' largest count,
 * the entry anchors rebuilt from their low words (a warp lives < 2^32
 * cycles and ns: docs/tracing.md), the metadata */
static const char epilogue_tail[] =
    "\tmad.wide.u32 " P "x, " P "t8, 64, " P "x;\n"
    "\tactivemask.b32 " P "t3;\n"
    "\tshr.u32 " P "t6, " P "k, 4;\n"
    "\tredux.sync.max.u32 " P "t4, " P "t6, " P "t3;\n"
    "\tneg.s32 " P "t5, " P "t3;\n"
    "\tand.b32 " P "t5, " P "t5, " P "t3;\n"
    "\tmov.u32 " P "t10, %lanemask_eq;\n"
    "\tsetp.ne.u32 " P "p, " P "t1, 0;\n"
    "\tsetp.eq.and.u32 " P "q, " P "t5, " P "t10, " P "p;\n"
    "\t@" P "q red.global.max.u32 [" P "x+48], " P "t4;\n"
    "\tsetp.eq.and.u32 " P "p, " P "t2, 0, " P "p;\n"
    "\tcvt.u32.u64 " P "t9, " P "c;\n"
    "\tsub.u32 " P "t9, " P "t9, " P "ce;\n"
    "\tcvt.u64.u32 " P "c0, " P "t9;\n"
    "\tsub.u64 " P "c0, " P "c, " P "c0;\n"
    "\tcvt.u32.u64 " P "t9, " P "y;\n"
    "\tsub.u32 " P "t9, " P "t9, " P "ge;\n"
    "\tcvt.u64.u32 " P "g0, " P "t9;\n"
    "\tsub.u64 " P "g0, " P "y, " P "g0;\n"
    "\tmov.u32 " P "t7, %smid;\n"
    "\tmov.u32 " P "t9, 1;\n"
    "\t@" P "p st.global.v2.u64 [" P "x], {" P "c0, " P "g0};\n"
    "\t@" P "p st.global.v2.u64 [" P "x+16], {" P "c, " P "y};\n"
    "\t@" P "p st.global.v4.u32 [" P "x+32], {" P "t7, " P "t6, " P "t9, " P "t13};\n";

/* The next record's address, base + k, into a. */
static void record_address(ag_str *o) {
  ag_str_puts(o, "\tcvt.u64.u32 " P "a, " P "k;\n"
                 "\tadd.u64 " P "a, " P "a, " P "rb;\n");
}

void ag__ptx_trace_record(ag_str *o, const char *begin, const char *end, int site,
                          const char *iter_inv, int addr_ready) {
  if (!addr_ready)
    record_address(o);
  ag_str_printf(o,
                "\tadd.u32 " PF "k, " PF "k, 16;\n"
                "\t@" PF "q st.global.v4.u32 [" PF "a], {%s, %s, %d, %s};\n"
                "\tsetp.lt.u32 " PF "q, " PF "k, " PF "cl;\n",
                begin, end, site, iter_inv);
}

/* Declarations: nreg regions get a begin-clock and an iteration register. */
static void decls(ag_str *o, int nreg) {
  ag_str_printf(o, "\n\t// argus: reference-trace probe state (docs/tracing.md)\n"
                   "\t.reg .b64 " PF "a, " PF "rb, " PF "c, " PF "x, " PF "y, " PF "c0, " PF
                   "g0;\n"
                   "\t.reg .b32 " PF "k, " PF "cl, " PF "ce, " PF "ge, " PF
                   "sl, " PF "e, " PF "t<16>, " PF "b<%d>, " PF "i<%d>;\n"
                   "\t.reg .pred " PF "p, " PF "q;\n",
                nreg > 0 ? nreg : 1, nreg > 0 ? nreg : 1);
}

/* ------------------------------------------------------------- helpers */

typedef struct xf {
  ag_ptx_module *m;
  const ag_ptx_regions *r;
  ag_diags *diags;
} xf;

static int insert_text(xf *x, ag_ptx_func *f, ag_ptx_stmt *at, int before, const char *text) {
  ag_ptx_stmt *first = NULL, *last = NULL;
  int rc = ag_ptx_parse_snippet(x->m, f, text, x->diags, &first, &last);
  if (rc)
    return rc;
  if (!first)
    return 0;
  if (before)
    ag_ptx_insert_before(x->m, at, first, last);
  else
    ag_ptx_insert_after(x->m, at, first, last);
  return 0;
}

static int diag_at(xf *x, int line, const ag_ptx_stmt *s, int rc, const char *fmt, ...)
    AG_PRINTF(5, 6);
static int diag_at(xf *x, int line, const ag_ptx_stmt *s, int rc, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ag_diags_add(x->diags, AG_SEV_ERROR, x->m->path, line, line ? 1 : 0,
               s ? s->text : NULL, s ? s->text_len : 0, "%s", msg);
  return rc;
}

static int is_int_text(const char *s) {
  if (*s == '-')
    s++;
  if (!*s)
    return 0;
  for (; *s; s++)
    if (!((*s >= '0' && *s <= '9') || *s == 'x' || *s == 'X' || (*s >= 'a' && *s <= 'f') ||
          (*s >= 'A' && *s <= 'F') || *s == 'U'))
      return 0;
  return 1;
}

/* The iteration operand of a begin marker as a 32-bit value: appends the
 * conversion to `pre` when needed and returns the operand text. */
static int iter_operand(xf *x, const ag_ptx_marker *mk, ag_str *pre, const char **op) {
  const ag_ptx_func *f = mk->stmt->func;
  *op = mk->iter;
  if (is_int_text(mk->iter))
    return 0;
  int bits = ag__ptx_reg_bits(f, mk->iter);
  if (bits == 32)
    return 0;
  if (bits == 64 || bits == 16) {
    ag_str_printf(pre, "\tcvt.u32.u%d " PF "t15, %s;\n", bits, mk->iter);
    *op = P "t15";
    return 0;
  }
  return diag_at(x, mk->line, mk->stmt, AG_EUNSUPPORTED,
                 "iteration operand '%s' of region '%s' is not a 16-, 32- or 64-bit "
                 "register declared in '%s'",
                 mk->iter, mk->name, f->name);
}

/* Where the record address is ready. Each begin marker computes the next
 * record's address (base + k) after its clock read, where the wait for the
 * previous record's store to read its registers has already been paid, so
 * that the end marker stores right after its clock read instead of waiting
 * for the address arithmetic (bench/RESULTS.md, "Probe designs, second
 * round": 0.07-0.22 µs of the overhead benchmark's 1.05-1.33). The address
 * stays right until the next record advances k, so an end or role marker
 * reuses it when a begin marker comes after the last record on every path
 * to it: a forward "must" dataflow over the kernel's CFG, with the prologue
 * as a begin (a = base, k = 0). */

/* The markers of f that get probes, by statement index (-1: none). */
static int *probed_at(const ag_ptx_regions *r, const ag_ptx_func *f, const char *probed) {
  int *at = ag_malloc(sizeof(int) * (size_t)f->nstmts);
  if (!at)
    return NULL;
  for (int i = 0; i < f->nstmts; i++)
    at[i] = -1;
  for (int i = 0; i < r->nmarkers; i++) {
    const ag_ptx_stmt *st = r->markers[i].stmt;
    if (probed[i] && st->func == f && st->index >= 0 && st->index < f->nstmts)
      at[st->index] = i;
  }
  return at;
}

/* 1 when the address is ready on entry to block b: on every reachable
 * predecessor's exit (the entry block also starts after the prologue). */
static int ready_in(const ag_ptx_cfg *g, const char *out, int b) {
  const ag_ptx_block *bl = &g->blocks[b];
  for (int p = 0; p < bl->npred; p++)
    if (g->blocks[bl->pred[p]].reachable && !out[bl->pred[p]])
      return 0;
  return 1;
}

/* Runs block bl's markers from state v (1: ready); records the state at
 * each end and role marker in ready[] when given; returns the exit state. */
static int ready_through(const ag_ptx_regions *r, const ag_ptx_func *f, const int *at,
                         const ag_ptx_block *bl, int v, char *ready) {
  for (const ag_ptx_stmt *st = bl->first; st; st = st == bl->last ? NULL : st->next) {
    int i = st->index >= 0 && st->index < f->nstmts ? at[st->index] : -1;
    if (i < 0)
      continue;
    int begin = r->markers[i].kind == AG_PTX_MARK_BEGIN;
    if (!begin && ready)
      ready[i] = (char)v;
    v = begin;
  }
  return v;
}

/* probed[i]: marker i gets a probe. Sets ready[i] (zeroed by the caller)
 * for the end and role markers that may reuse the address. */
static int address_ready(const ag_ptx_regions *r, const ag_ptx_module *m, const char *probed,
                         char *ready) {
  for (int fi = 0; fi < m->nfuncs; fi++) {
    const ag_ptx_cfg *g = r->cfgs ? r->cfgs[fi] : NULL;
    const ag_ptx_func *f = m->funcs[fi];
    if (!g || !f->is_entry || f->nstmts <= 0)
      continue;
    int *at = probed_at(r, f, probed);
    char *out = ag_malloc((size_t)g->nblocks);
    if (!at || !out) {
      ag_free(at);
      ag_free(out);
      return AG_ENOMEM;
    }
    /* optimistic start (an unreachable block never runs: neutral for the
     * AND), iterated down to the greatest fixed point */
    memset(out, 1, (size_t)g->nblocks);
    for (int changed = 1; changed;) {
      changed = 0;
      for (int b = 0; b < g->nblocks; b++) {
        if (b == g->exit || !g->blocks[b].reachable)
          continue;
        int v = ready_through(r, f, at, &g->blocks[b], ready_in(g, out, b), NULL);
        if (out[b] != v)
          out[b] = (char)v, changed = 1;
      }
    }
    for (int b = 0; b < g->nblocks; b++)
      if (b != g->exit && g->blocks[b].reachable)
        ready_through(r, f, at, &g->blocks[b], ready_in(g, out, b), ready);
    ag_free(at);
    ag_free(out);
  }
  return 0;
}

/* The probe for one marker. site: the record's site index (end and role
 * markers); has_iter: the region has an iteration register; ready: the
 * record address is ready (address_ready). */
static int probe_text(xf *x, const ag_ptx_marker *mk, int site, int has_iter, int ready,
                      ag_str *o) {
  int R = mk->region;
  char b[32], it[32];
  if (mk->kind == AG_PTX_MARK_BEGIN) {
    ag_str_printf(o, "\n\t// argus: begin %s\n", mk->name);
    if (has_iter) {
      const char *op = NULL;
      if (mk->iter) {
        int rc = iter_operand(x, mk, o, &op);
        if (rc)
          return rc;
        if (is_int_text(op)) { /* a constant: not.b32 takes registers */
          ag_str_printf(o, "\tmov.u32 " PF "t15, %s;\n", op);
          op = P "t15";
        }
        ag_str_printf(o, "\tnot.b32 " PF "i%d, %s;\n", R, op);
      } else {
        ag_str_printf(o, "\tmov.u32 " PF "i%d, 0;\n", R); /* ~AG_EV_NO_ITER */
      }
    }
    ag_str_printf(o, "\tmov.u32 " PF "b%d, %%clock;\n", R);
    record_address(o);
    return o->oom ? AG_ENOMEM : 0;
  }
  ag_str_printf(o, "\n\t// argus: record site %d (%s %s)\n", site,
                mk->kind == AG_PTX_MARK_END ? "end" : "role", mk->name);
  ag_str_puts(o, "\tmov.u32 " P "e, %clock;\n");
  if (mk->kind == AG_PTX_MARK_END) {
    snprintf(b, sizeof b, PF "b%d", R);
    if (has_iter)
      snprintf(it, sizeof it, PF "i%d", R);
    else
      snprintf(it, sizeof it, "0");
  } else { /* a role record: begin == end, no iteration */
    snprintf(b, sizeof b, "%s", P "e");
    snprintf(it, sizeof it, "0");
  }
  ag__ptx_trace_record(o, b, P "e", site, it, ready);
  return o->oom ? AG_ENOMEM : 0;
}

static int is_exit(const ag_ptx_stmt *s) {
  return s->kind == AG_PTX_INSTR && (ag_ptx_op_is(s, "ret") || ag_ptx_op_is(s, "exit"));
}

/* Prologue after the body's '{', epilogue before every ret/exit. */
/* 1 when the kernel declares a one-dimensional block (".reqntid N, 1, 1",
 * ".maxntid N, 1, 1" or just N). */
static int block_is_1d(const ag_ptx_func *f) {
  const ag_ptx_stmt *h = f->header;
  const char *dirs[] = {".reqntid", ".maxntid"};
  for (int k = 0; k < 2 && h; k++) {
    const char *p = NULL;
    for (uint32_t i = 0; i + 8 <= h->text_len; i++)
      if (!strncmp(h->text + i, dirs[k], 8)) {
        p = h->text + i + 8;
        break;
      }
    if (!p)
      continue;
    long v[3] = {0, 1, 1};
    int nv = 0;
    const char *end = h->text + h->text_len;
    while (p < end && nv < 3) {
      while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
        p++;
      if (p >= end || *p < '0' || *p > '9')
        break;
      v[nv++] = strtol(p, (char **)&p, 10);
    }
    if (nv >= 1 && v[1] == 1 && v[2] == 1)
      return 1;
  }
  return 0;
}

/* The exit sequence: anchors, counts, metadata. The slot was kept from
 * the prologue (one register: recomputing it here put some 15 instructions
 * on every warp's way out). */
static void epilogue(ag_str *t) {
  ag_str_puts(t, epilogue_head);
  ag_str_puts(t, "\tmov.u32 " P "t8, " P "sl;\n"
                 "\tmov.u32 " P "t2, %laneid;\n");
  ag_str_puts(t, epilogue_tail);
}

static int instrument_entry(xf *x, ag_ptx_func *f) {
  int nreg = x->r->nregions;
  const char *slot_head = block_is_1d(f) ? slot_head_1d : slot_head_3d;
  ag_str t = AG_STR_INIT;
  int rc = 0;
  /* guarded exits become branches to one exit block at the end */
  int guarded = 0;
  for (ag_ptx_stmt *s = f->body_open->next; s && s != f->body_close; s = s->next)
    if (is_exit(s) && s->guard)
      guarded++;
  for (ag_ptx_stmt *s = f->body_open->next; s && s != f->body_close;) {
    ag_ptx_stmt *next = s->next;
    if (is_exit(s)) {
      ag_str_clear(&t);
      if (s->guard) {
        ag_str_printf(&t, "\n\t@%s%s bra $__argus_exit;", s->guard_neg ? "!" : "", s->guard);
        ag_ptx_stmt *a = NULL, *b = NULL;
        if ((rc = ag_ptx_parse_snippet(x->m, f, ag_str_cstr(&t), x->diags, &a, &b)))
          goto out;
        ag_ptx_replace(x->m, s, a, b);
      } else {
        ag_str_puts(&t, "\n");
        epilogue(&t);
        if (t.oom || (rc = insert_text(x, f, s, 1, ag_str_cstr(&t))))
          goto out;
      }
    }
    s = next;
  }
  if (guarded) {
    ag_str_clear(&t);
    ag_str_puts(&t, "\n$__argus_exit:\n");
    epilogue(&t);
    ag_str_puts(&t, "\tret;\n");
    if (t.oom || (rc = insert_text(x, f, f->body_close, 1, ag_str_cstr(&t))))
      goto out;
  }
  /* declarations and prologue right after '{' (declarations first) */
  ag_str_clear(&t);
  decls(&t, nreg);
  ag_str_puts(&t, prologue_head);
  ag_str_puts(&t, slot_head);
  ag_str_puts(&t, slot_tail);
  ag_str_puts(&t, prologue_tail);
  if (t.oom) {
    rc = AG_ENOMEM;
    goto out;
  }
  rc = insert_text(x, f, f->body_open, 0, ag_str_cstr(&t));
out:
  ag_str_release(&t);
  return rc;
}

/* 1 when the module already has names the probe uses. */
static int uses_probe_names(const ag_ptx_module *m) {
  for (const ag_ptx_stmt *s = m->first; s; s = s->next) {
    if (s->kind == AG_PTX_COMMENT)
      continue;
    for (uint32_t i = 0; i + 5 <= s->text_len; i++)
      if ((s->text[i] == '%' && !strncmp(s->text + i, P, 5)) ||
          (s->text[i] == '_' && i + 8 <= s->text_len && !strncmp(s->text + i, "__argus_", 8)))
        return 1;
  }
  return 0;
}

static int selected_by(const ag_ptx_regions *r, int reg, const char *sel) {
  const ag_ptx_region *g = &r->regions[reg];
  return !strcmp(g->qname, sel) || !strcmp(g->name, sel);
}

static json_t *probes_regions(const ag_ptx_regions *r) {
  json_t *a = json_array();
  for (int i = 0; i < r->nregions; i++) {
    const ag_ptx_region *g = &r->regions[i];
    char id[24];
    snprintf(id, sizeof id, "0x%016" PRIx64, g->id);
    json_array_append_new(a, json_pack("{s:i,s:s,s:s,s:s,s:i,s:s,s:b,s:b}", "index", i, "id",
                                       id, "name", g->name, "qname", g->qname, "parent",
                                       g->parent, "function", g->func ? g->func->name : "",
                                       "root", g->is_root, "entry",
                                       g->func && g->func->is_entry));
  }
  return a;
}

int ag_xform_trace(ag_ptx_module *m, const ag_ptx_regions *r, const ag_variant_opts *o,
                   ag_diags *diags, json_t **probes, int *nsites) {
  const char *const *regions = o->regions;
  int nregions = o->nregions;
  *probes = NULL;
  *nsites = 0;
  xf x = {m, r, diags};
  int rc = 0;
  char *sel = ag_calloc((size_t)r->nregions + 1, 1);
  json_t *sites = json_array(), *roles = json_array();
  ag_str t = AG_STR_INIT;
  if (!sel || !sites || !roles) {
    rc = AG_ENOMEM;
    goto out;
  }
  if (uses_probe_names(m)) {
    rc = diag_at(&x, 0, NULL, AG_EUNSUPPORTED,
                 "the module already uses names starting with '%s' or '__argus_': it is "
                 "an Argus variant already, or the names collide",
                 P);
    goto out;
  }
  int tver = 0;
  if (m->target) {
    const char *d = strstr(m->target, "sm_");
    tver = d ? atoi(d + 3) : 0;
  }
  if (tver && tver < 80) {
    rc = diag_at(&x, 0, NULL, AG_EUNSUPPORTED,
                 "traced variants need a target of sm_80 or newer (redux.sync); this "
                 "module targets %s",
                 m->target);
    goto out;
  }
  /* which regions: the selections and their subtrees */
  if (!regions || nregions == 0) {
    memset(sel, 1, (size_t)r->nregions);
  } else {
    for (int k = 0; k < nregions; k++) {
      int any = 0;
      for (int i = 0; i < r->nregions; i++)
        if (selected_by(r, i, regions[k]))
          sel[i] = 1, any = 1;
      if (!any) {
        ag_str names = AG_STR_INIT;
        for (int i = 0; i < r->nregions && i < 40; i++)
          ag_str_printf(&names, "%s%s", i ? ", " : "", r->regions[i].qname);
        rc = diag_at(&x, 0, NULL, AG_ENOTFOUND, "no region '%s' in the module (regions: %s)",
                     regions[k], ag_str_cstr(&names));
        ag_str_release(&names);
        goto out;
      }
    }
    for (int i = 0; i < r->nregions; i++) /* parents come before children */
      if (!sel[i] && r->regions[i].parent >= 0 && sel[r->regions[i].parent])
        sel[i] = 1;
  }
  /* roles: distinct names in marker order */
  for (int i = 0; i < r->nmarkers; i++) {
    const ag_ptx_marker *mk = &r->markers[i];
    if (mk->kind != AG_PTX_MARK_ROLE)
      continue;
    size_t k = 0;
    for (; k < json_array_size(roles); k++)
      if (!strcmp(json_string_value(json_array_get(roles, k)), mk->name))
        break;
    if (k == json_array_size(roles))
      json_array_append_new(roles, json_string(mk->name));
  }
  /* regions with an iteration operand on any begin marker */
  char *has_iter = ag_calloc((size_t)r->nregions + 1, 1);
  if (!has_iter) {
    rc = AG_ENOMEM;
    goto out;
  }
  for (int i = 0; i < r->nmarkers; i++)
    if (r->markers[i].kind == AG_PTX_MARK_BEGIN && r->markers[i].iter &&
        r->markers[i].region >= 0)
      has_iter[r->markers[i].region] = 1;
  /* which markers get probes, and where the record address is ready */
  char *probed = ag_calloc((size_t)r->nmarkers + 1, 1);
  char *ready = ag_calloc((size_t)r->nmarkers + 1, 1);
  if (!probed || !ready) {
    rc = AG_ENOMEM;
  } else {
    for (int i = 0; i < r->nmarkers; i++) {
      const ag_ptx_marker *mk = &r->markers[i];
      probed[i] = !o->anchors_only && (mk->kind == AG_PTX_MARK_ROLE ||
                                       (mk->region >= 0 && sel[mk->region]));
    }
    rc = address_ready(r, m, probed, ready);
  }
  /* probes; record sites are the end and role markers */
  int site = 0;
  for (int i = 0; i < r->nmarkers && rc == 0; i++) {
    const ag_ptx_marker *mk = &r->markers[i];
    if (!probed[i])
      continue;
    ag_ptx_func *f = mk->stmt->func;
    if (!f || !f->is_entry) {
      rc = diag_at(&x, mk->line, mk->stmt, AG_EUNSUPPORTED,
                   "marker of '%s' is in the device function '%s': traced variants probe "
                   "markers in kernels only (inline the function, or trace a region "
                   "around its call)",
                   mk->name, f ? f->name : "?");
      break;
    }
    int is_begin = mk->kind == AG_PTX_MARK_BEGIN;
    ag_str_clear(&t);
    if ((rc = probe_text(&x, mk, is_begin ? -1 : site, mk->region >= 0 && has_iter[mk->region],
                         ready[i], &t)) ||
        (rc = insert_text(&x, f, mk->stmt, 0, ag_str_cstr(&t))))
      break;
    if (is_begin)
      continue;
    json_t *js = json_pack("{s:i,s:s,s:i,s:s}", "site", site, "kind",
                           mk->kind == AG_PTX_MARK_END ? "region" : "role", "line", mk->line,
                           "function", f->name);
    if (mk->kind == AG_PTX_MARK_ROLE) {
      for (size_t k = 0; k < json_array_size(roles); k++)
        if (!strcmp(json_string_value(json_array_get(roles, k)), mk->name))
          json_object_set_new(js, "role", json_integer((json_int_t)k));
    } else {
      json_object_set_new(js, "region", json_integer(mk->region));
      json_object_set_new(js, "iter", json_boolean(has_iter[mk->region]));
    }
    json_array_append_new(sites, js);
    site++;
  }
  ag_free(has_iter);
  ag_free(probed);
  ag_free(ready);
  if (rc)
    goto out;
  /* every kernel: prologue and epilogues (the kernel's root region) */
  for (int i = 0; i < m->nfuncs; i++) {
    ag_ptx_func *f = m->funcs[i];
    if (f->is_entry && !f->is_decl && f->body_open && (rc = instrument_entry(&x, f)))
      goto out;
  }
  /* the descriptor, before the first function */
  ag_ptx_stmt *at = m->first;
  while (at && at->kind != AG_PTX_FUNC)
    at = at->next;
  if (!at) {
    rc = diag_at(&x, 0, NULL, AG_EPARSE, "the module has no functions to trace");
    goto out;
  }
  ag_ptx_stmt *d0 = at->prev;
  if ((rc = insert_text(&x, NULL, at, 1,
                        "\n// argus: reference-trace descriptor, bound by the host runtime\n"
                        ".const .align 8 .b8 __argus_trace[32];\n")))
    goto out;
  for (ag_ptx_stmt *s = d0 ? d0->next : m->first; s && s != at; s = s->next) {
    s->func = NULL; /* module level */
    s->depth = 0;
  }
  *probes = json_pack("{s:s,s:i,s:o,s:o,s:o}", "format", "argus-probes", "version", 1,
                      "regions", probes_regions(r), "sites", sites, "roles", roles);
  sites = roles = NULL;
  *nsites = site;
  if (!*probes)
    rc = AG_ENOMEM;
out:
  json_decref(sites);
  json_decref(roles);
  ag_free(sel);
  ag_str_release(&t);
  return rc;
}
