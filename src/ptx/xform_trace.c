/*
 * xform_trace.c — the traced-variant transform: reference-trace probes at
 * region markers, on the parsed PTX.
 *
 * The probe is the product's hot path. It is built for few instructions
 * (two warps share each scheduler: in latency-bound code every instruction
 * and every wait lands on the warp's own path) and so that nothing it does
 * waits on its own results (docs/tracing.md has the design and the measured
 * cost):
 *   - prologue, once per thread, after the entry block's leading
 *     straight-line code (prologue_point): the low 32 bits of the entry anchors
 *     (%clock, %globaltimer_lo) in two registers, the warp's record base,
 *     its record offset k (bytes), the offset of its trash slot (the last
 *     of its cap slots), the address of its next record, base + k, and the
 *     store predicate: lane 0, recording on, a buffer bound. The prologue
 *     stores nothing: a store there would hold the kernel's own first loads
 *     behind the descriptor's load;
 *   - begin marker of region R: the iteration operand XOR 0x80000000 into
 *     R's own register (a fresh register, so the program's induction update
 *     stays free to move), the low 32 bits of the clock, then the record's
 *     first half {begin, site} stored at once at the next record's address,
 *     which R keeps for its end; then the next record's address,
 *     base + min(k, trash), k counting every record;
 *   - end marker of R: the clock, then the record's second half {end,
 *     iteration} stored into R's record. Nothing else: no address, no count,
 *     no predicate, so the end marker's store is the only instruction on
 *     the warp's way from the region's last instruction to the next;
 *   - role marker (and an async probe, xform_probe.c): a whole record at
 *     once, then the next address as at a begin marker.
 *   A store can only land in the warp's own buffer: every record address is
 *   base + min(k, trash), 64-bit, and an end marker's is one of those (or
 *   the trash slot, set at entry, when no begin came first);
 *   - exit, once per warp (with the slot kept from entry): the exit anchors
 *     (the 64-bit entry anchors are rebuilt from them and the low words kept
 *     at entry), lane 0's count k / 16 (records past the trash slot are
 *     counted, never kept; exact up to 2^28 records per warp), the largest
 *     count over the lanes (redux.sync + red.max: divergent markers are
 *     detected), %smid and the launch index.
 * The descriptor (record area, metadata area, capacity, enabled, launch) is
 * the module constant __argus_trace, bound by the host runtime before each
 * launch; enabled = 0 (a traced module loaded outside Argus) stores nothing.
 *
 * Markers in .func bodies are refused (the per-warp state lives in the
 * kernel's registers); nvcc inlines device functions unless told not to.
 * Load: linear in the module; called once per traced variant.
 */
#include "argus/variant.h"
#include "argus/demangle.h"
#include "argus/evidence.h"

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

/* the store predicate (lane 0, recording on, slots bound), the warp's
 * base, its trash slot's offset (the last of cap slots) and its first
 * record's address */
static const char prologue_tail[] =
    "\tsetp.ne.u32 " P "p, " P "t1, 0;\n"
    "\tsetp.ne.and.u32 " P "p, " P "t0, 0, " P "p;\n"
    "\tsetp.eq.and.u32 " P "q, " P "t2, 0, " P "p;\n"
    "\tmul.lo.u32 " P "t6, " P "t8, " P "t0;\n"
    "\tmad.wide.u32 " P "rb, " P "t6, 16, " P "a;\n"
    "\tshl.b32 " P "t7, " P "t0, 4;\n"
    "\tadd.u32 " P "cl, " P "t7, -16;\n"
    "\tmov.u32 " P "k, 0;\n"
    "\tmov.b64 " P "a, " P "rb;\n"
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

/* After a record is taken: k counts it, and a becomes the next record's
 * address, base + min(k, trash offset). */
static void advance(ag_str *o) {
  ag_str_puts(o, "\tadd.u32 " P "k, " P "k, 16;\n"
                 "\tmin.u32 " P "m, " P "k, " P "cl;\n"
                 "\tcvt.u64.u32 " P "a, " P "m;\n"
                 "\tadd.u64 " P "a, " P "a, " P "rb;\n");
}

void ag__ptx_trace_record(ag_str *o, const char *begin, const char *end, int site,
                          const char *iter_x) {
  ag_str_printf(o, "\t@" PF "q st.global.v4.u32 [" PF "a], {%s, %d, %s, %s};\n", begin, site,
                end, iter_x);
  advance(o);
}

/* The iteration word of a record without an iteration. */
#define NO_ITER_WORD (AG_EV_NO_ITER ^ AG_EV_ITER_BIAS)

/* Declarations: nreg regions get a begin-clock, an iteration and a record
 * address register. */
static void decls(ag_str *o, int nreg) {
  int n = nreg > 0 ? nreg : 1;
  ag_str_printf(o, "\n\t// argus: reference-trace probe state (docs/tracing.md)\n"
                   "\t.reg .b64 " PF "a, " PF "rb, " PF "c, " PF "x, " PF "y, " PF "c0, " PF
                   "g0, " PF "s<%d>;\n"
                   "\t.reg .b32 " PF "k, " PF "cl, " PF "m, " PF "ce, " PF "ge, " PF
                   "sl, " PF "e, " PF "t<16>, " PF "b<%d>, " PF "i<%d>;\n"
                   "\t.reg .pred " PF "p, " PF "q;\n",
                n, n, n);
}

/* ------------------------------------------------------------- helpers */

typedef struct xf {
  ag_ptx_module *m;
  const ag_ptx_regions *r;
  ag_diags *diags;
  const char *ended; /* ended[R]: a probed end marker of region R exists */
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

/* Places a marker's probe text after the marker as one AG_PTX_VERBATIM
 * statement: printed exactly as a parse of the text would print (the text's
 * leading whitespace is its lead, trailing whitespace dropped), without
 * making IR for it. The traced variant of a 20,000-region kernel has some
 * 280,000 probe instructions; parsing them was half of the transform's time
 * and most of its memory. Nothing after the probes are placed reads them:
 * prologue_point stops at the first marker, before any of them. */
int ag__ptx_insert_verbatim(ag_ptx_module *m, ag_ptx_func *f, ag_ptx_stmt *at, int before,
                            const ag_str *text) {
  const char *p = ag_str_cstr(text), *e = p + text->len;
  const char *t = p;
  while (t < e && (*t == ' ' || *t == '\t' || *t == '\n' || *t == '\r'))
    t++;
  while (e > t && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
    e--;
  if (t == e)
    return 0;
  int nl = memchr(p, '\n', (size_t)(t - p)) != NULL; /* a parse starts it on a new line */
  size_t ln = (size_t)(t - p) + !nl, tn = (size_t)(e - t);
  ag_ptx_stmt *st = ag_arena_alloc(&m->arena, sizeof *st);
  char *buf = ag_arena_alloc(&m->arena, ln + tn + 1);
  if (!st || !buf)
    return AG_ENOMEM;
  if (!nl)
    buf[0] = '\n';
  memcpy(buf + !nl, p, (size_t)(t - p));
  memcpy(buf + ln, t, tn);
  st->kind = AG_PTX_VERBATIM;
  st->lead = buf;
  st->lead_len = (uint32_t)ln;
  st->text = buf + ln;
  st->text_len = (uint32_t)tn;
  st->depth = 1;
  st->func = f;
  st->block = -1;
  if (before)
    ag_ptx_insert_before(m, at, st, st);
  else
    ag_ptx_insert_after(m, at, st, st);
  return 0;
}

static int insert_verbatim(xf *x, ag_ptx_func *f, ag_ptx_stmt *at, int before,
                           const ag_str *text) {
  return ag__ptx_insert_verbatim(x->m, f, at, before, text);
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

/* Appends the decimal text of v: the probe text of 20,000 regions is some
 * 100,000 numbers, and printf's format parsing was a tenth of the
 * transform's time. */
static void put_num(ag_str *o, long long v) {
  char b[24];
  int n = 0;
  unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
  do
    b[sizeof b - 1 - n++] = (char)('0' + u % 10);
  while ((u /= 10) && n < 22);
  if (v < 0)
    b[sizeof b - 1 - n++] = '-';
  ag_str_append(o, b + sizeof b - n, (size_t)n);
}

/* The probe for one marker. site: the record's site index (begin and role
 * markers); has_iter: the region has an iteration register. */
static int probe_text(xf *x, const ag_ptx_marker *mk, int site, int has_iter, ag_str *o) {
  int R = mk->region;
  if (mk->kind == AG_PTX_MARK_BEGIN) {
    ag_str_puts(o, "\n\t// argus: begin ");
    ag_str_puts(o, mk->name);
    ag_str_puts(o, " (record site ");
    put_num(o, site);
    ag_str_puts(o, ")\n");
    if (has_iter) {
      const char *op = NULL;
      if (!mk->iter) {
        ag_str_printf(o, "\tmov.u32 " PF "i%d, %u;\n", R, NO_ITER_WORD);
      } else {
        int rc = iter_operand(x, mk, o, &op);
        if (rc)
          return rc;
        if (is_int_text(op))
          ag_str_printf(o, "\tmov.u32 " PF "i%d, %u;\n", R,
                        (uint32_t)strtoll(op, NULL, 0) ^ AG_EV_ITER_BIAS);
        else {
          ag_str_puts(o, "\txor.b32 " P "i");
          put_num(o, R);
          ag_str_puts(o, ", ");
          ag_str_puts(o, op);
          ag_str_puts(o, ", ");
          put_num(o, AG_EV_ITER_BIAS);
          ag_str_puts(o, ";\n");
        }
      }
    }
    /* mov.u32 %agt_bR, %clock; @%agt_q st.global.v2.u32 [%agt_a],
     * {%agt_bR, site}; mov.b64 %agt_sR, %agt_a */
    ag_str_puts(o, "\tmov.u32 " P "b");
    put_num(o, R);
    ag_str_puts(o, ", %clock;\n\t@" P "q st.global.v2.u32 [" P "a], {" P "b");
    put_num(o, R);
    ag_str_puts(o, ", ");
    put_num(o, site);
    ag_str_puts(o, "};\n\tmov.b64 " P "s");
    put_num(o, R);
    ag_str_puts(o, ", " P "a;\n");
    advance(o);
    return o->oom ? AG_ENOMEM : 0;
  }
  if (mk->kind == AG_PTX_MARK_END) {
    char it[32];
    if (has_iter)
      snprintf(it, sizeof it, PF "i%d", R);
    else
      snprintf(it, sizeof it, "%u", NO_ITER_WORD);
    ag_str_puts(o, "\n\t// argus: end ");
    ag_str_puts(o, mk->name);
    ag_str_puts(o, "\n\tmov.u32 " P "e, %clock;\n\t@" P "q st.global.v2.u32 [" P "s");
    put_num(o, R);
    ag_str_puts(o, "+8], {" P "e, ");
    ag_str_puts(o, it);
    ag_str_puts(o, "};\n");
    return o->oom ? AG_ENOMEM : 0;
  }
  /* a role record: begin == end, no iteration */
  char it[16];
  snprintf(it, sizeof it, "%u", NO_ITER_WORD);
  ag_str_printf(o, "\n\t// argus: role %s (record site %d)\n\tmov.u32 " PF "e, %%clock;\n",
                mk->name, site);
  ag__ptx_trace_record(o, P "e", P "e", site, it);
  return o->oom ? AG_ENOMEM : 0;
}

static int is_exit(const ag_ptx_stmt *s) {
  /* the first letter first: this runs over every statement of the variant */
  return s->kind == AG_PTX_INSTR && s->opcode && (s->opcode[0] == 'r' || s->opcode[0] == 'e') &&
         (ag_ptx_op_is(s, "ret") || ag_ptx_op_is(s, "exit"));
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

/* Opcodes the prologue may follow: no control flow, no synchronization,
 * no asynchronous operation (an async probe's site) */
static int passable_op(const ag_ptx_stmt *s) {
  static const char *const ops[] = {
      "ld",   "ldu",  "mov",  "cvta", "cvt",  "add",  "sub",   "mul",  "mad",  "mul24",
      "mad24", "fma", "shl",  "shr",  "and",  "or",   "xor",   "not",  "cnot", "neg",
      "abs",  "min",  "max",  "setp", "selp", "set",  "slct",  "lop3", "shf",  "prmt",
      "bfe",  "bfi",  "popc", "clz",  "brev", "div",  "rem",   "sad",  "rcp",  "sqrt",
      "rsqrt", "ex2", "lg2",  "sin",  "cos",  "testp", "copysign"};
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    if (ag_ptx_op_is(s, ops[i]))
      return 1;
  return 0;
}

/* Where the prologue goes: after the entry block's leading straight-line
 * code (parameter and global loads, address arithmetic), before the first
 * label, marker, control flow, barrier, call or asynchronous operation.
 * The kernel's own first loads then issue before the prologue's special
 * register reads and descriptor load, whose latency overlaps theirs (on
 * the compute benchmark, whose first instruction of note is a global load
 * its whole chain waits for, this took 0.1-0.2 us off the added time;
 * bench/RESULTS.md). Everything after the point is dominated by it: the
 * leading code has one way through. */
static ag_ptx_stmt *prologue_point(xf *x, ag_ptx_func *f) {
  ag_ptx_stmt *s = f->body_open->next;
  for (; s && s != f->body_close; s = s->next) {
    if (s->kind == AG_PTX_INSTR) {
      if (!passable_op(s))
        break;
    } else if (s->kind == AG_PTX_COMMENT) {
      int marker = 0;
      for (int i = 0; i < x->r->nmarkers && !marker; i++)
        marker = x->r->markers[i].stmt == s;
      if (marker)
        break;
    } else if (s->kind != AG_PTX_DECL && s->kind != AG_PTX_DIRECTIVE) {
      break; /* a label or a nested scope */
    }
  }
  if (!s)
    s = f->body_close;
  /* before the comments that lead into it ("// begin inline asm") */
  while (s->prev && s->prev != f->body_open && s->prev->kind == AG_PTX_COMMENT)
    s = s->prev;
  return s;
}

static int instrument_entry(xf *x, ag_ptx_func *f) {
  int nreg = x->r->nregions;
  const char *slot_head = block_is_1d(f) ? slot_head_1d : slot_head_3d;
  ag_str t = AG_STR_INIT;
  int rc = 0;
  /* the prologue's place; then the exits' epilogues (an exit may be the point) */
  ag_ptx_stmt *at = prologue_point(x, f);
  /* declarations right after '{', the prologue at its point */
  decls(&t, nreg);
  if (t.oom || (rc = insert_text(x, f, f->body_open, 0, ag_str_cstr(&t))))
    goto out;
  ag_str_clear(&t);
  ag_str_puts(&t, "\n\t// argus: reference-trace prologue\n");
  ag_str_puts(&t, prologue_head);
  ag_str_puts(&t, slot_head);
  ag_str_puts(&t, slot_tail);
  ag_str_puts(&t, prologue_tail);
  /* an end marker stores into its region's record, whose address the
   * begin marker sets; until one has run, the trash slot's (ptxas drops
   * this where every path to the end passes a begin). One move per region,
   * placed verbatim after the rest of the prologue (as the marker probes) */
  ag_str mv = AG_STR_INIT;
  for (int R = 0; R < nreg; R++)
    if (x->ended[R] && x->r->regions[R].func == f) {
      if (!mv.len)
        ag_str_puts(&t, "\tcvt.u64.u32 " P "x, " P "cl;\n\tadd.u64 " P "x, " P "x, " P "rb;\n");
    {
      ag_str_puts(&mv, "\tmov.b64 " P "s");
      put_num(&mv, R);
      ag_str_puts(&mv, ", " P "x;\n");
    }
    }
  if (t.oom || mv.oom)
    rc = AG_ENOMEM;
  else if (!(rc = insert_text(x, f, at, 1, ag_str_cstr(&t))))
    rc = insert_verbatim(x, f, at, 1, &mv);
  ag_str_release(&mv);
  if (rc)
    goto out;
  /* guarded exits become branches to one exit block at the end */
  int guarded = 0;
  for (ag_ptx_stmt *s = f->body_open->next; s && s != f->body_close;) {
    ag_ptx_stmt *next = s->next;
    if (is_exit(s)) {
      ag_str_clear(&t);
      if (s->guard) {
        guarded++;
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
out:
  ag_str_release(&t);
  return rc;
}

/* The length of the probe name at p (%agt_, %agp_, %agm_, __argus_), else 0. */
static size_t probe_name_at(const char *p, const char *end) {
  if (*p == '%' && end - p >= 5 && p[1] == 'a' && p[2] == 'g' &&
      (p[3] == 't' || p[3] == 'p' || p[3] == 'm') && p[4] == '_')
    return 5;
  if (*p == '_' && end - p >= 8 && !memcmp(p, "__argus_", 8))
    return 8;
  return 0;
}

static int variant_diag(ag_diags *diags, const char *path, int line, int col, const char *src,
                        size_t srclen, const char *name, size_t n) {
  ag_diags_add(diags, AG_SEV_ERROR, path, line, col, src, srclen,
               "the module is an Argus variant already (it uses the probe name '%.*s'): make "
               "variants of the original PTX, not of a traced or probe variant, or rename "
               "the colliding name",
               (int)n, name);
  return AG_EINVAL;
}

int ag__ptx_variant_check_text(const char *text, size_t len, const char *path,
                               ag_diags *diags) {
  const char *p = text, *end = text + len, *ls = text;
  int line = 1;
  while (p < end) {
    char c = *p;
    if (c == '\n') {
      line++;
      ls = ++p;
    } else if (c == '/' && p + 1 < end && p[1] == '/') { /* a line comment */
      while (p < end && *p != '\n')
        p++;
    } else if (c == '/' && p + 1 < end && p[1] == '*') { /* a block comment */
      for (p += 2; p < end && !(*p == '*' && p + 1 < end && p[1] == '/'); p++)
        if (*p == '\n') {
          line++;
          ls = p + 1;
        }
      p = p < end ? p + 2 : end;
    } else if (c == '"') { /* a string: .file names */
      for (p++; p < end && *p != '"' && *p != '\n'; p++)
        ;
      if (p < end && *p == '"')
        p++;
    } else {
      size_t n = probe_name_at(p, end);
      if (n) {
        const char *le = memchr(p, '\n', (size_t)(end - p));
        return variant_diag(diags, path, line, (int)(p - ls) + 1, ls,
                            (size_t)((le ? le : end) - ls), p, n);
      }
      p++;
    }
  }
  return 0;
}

/* By qualified or local name; the kernel part of a qualified name may be
 * spelled demangled ("gemm::sgemm<128, 128, 8, float>/loads"). */
static int selected_by(const ag_ptx_regions *r, int reg, const char *sel) {
  const ag_ptx_region *g = &r->regions[reg];
  if (!strcmp(g->qname, sel) || !strcmp(g->name, sel))
    return 1;
  const char *root = g->func ? g->func->name : NULL;
  size_t rl = root ? strlen(root) : 0;
  size_t k = rl && !strncmp(g->qname, root, rl) ? ag_demangle_prefix(root, sel) : 0;
  return k && !strcmp(sel + k, g->qname + rl);
}

static json_t *probes_regions(const ag_ptx_regions *r) {
  json_t *a = json_array();
  for (int i = 0; i < r->nregions; i++) {
    const ag_ptx_region *g = &r->regions[i];
    char id[24];
    snprintf(id, sizeof id, "0x%016" PRIx64, g->id);
    /* built key by key: json_pack parses its format for every one of
     * (with 20,000 regions) 20,000 objects */
    json_t *o = json_object();
    json_object_set_new(o, "index", json_integer(i));
    json_object_set_new(o, "id", json_string(id));
    json_object_set_new(o, "name", json_string(g->name));
    json_object_set_new(o, "qname", json_string(g->qname));
    json_object_set_new(o, "parent", json_integer(g->parent));
    json_object_set_new(o, "function", json_string(g->func ? g->func->name : ""));
    json_object_set_new(o, "root", json_boolean(g->is_root));
    json_object_set_new(o, "entry", json_boolean(g->func && g->func->is_entry));
    json_array_append_new(a, o);
  }
  return a;
}

int ag_xform_trace(ag_ptx_module *m, const ag_ptx_regions *r, const ag_variant_opts *o,
                   ag_diags *diags, json_t **probes, int *nsites) {
  const char *const *regions = o->regions;
  int nregions = o->nregions;
  *probes = NULL;
  *nsites = 0;
  xf x = {m, r, diags, NULL};
  int rc = 0;
  char *sel = ag_calloc((size_t)r->nregions + 1, 1);
  char *has_iter = NULL, *probed = NULL, *ended = NULL;
  json_t *sites = json_array(), *roles = json_array();
  ag_str t = AG_STR_INIT;
  if (!sel || !sites || !roles) {
    rc = AG_ENOMEM;
    goto out;
  }
  int tver = ag__ptx_target_sm(m);
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
  has_iter = ag_calloc((size_t)r->nregions + 1, 1);
  probed = ag_calloc((size_t)r->nmarkers + 1, 1);
  ended = ag_calloc((size_t)r->nregions + 1, 1);
  if (!has_iter || !probed || !ended) {
    rc = AG_ENOMEM;
    goto out;
  }
  for (int i = 0; i < r->nmarkers; i++)
    if (r->markers[i].kind == AG_PTX_MARK_BEGIN && r->markers[i].iter &&
        r->markers[i].region >= 0)
      has_iter[r->markers[i].region] = 1;
  /* which markers get probes; which regions have an end marker probed */
  for (int i = 0; i < r->nmarkers; i++) {
    const ag_ptx_marker *mk = &r->markers[i];
    probed[i] = !o->anchors_only &&
                (mk->kind == AG_PTX_MARK_ROLE || (mk->region >= 0 && sel[mk->region]));
    if (probed[i] && mk->kind == AG_PTX_MARK_END)
      ended[mk->region] = 1;
  }
  x.ended = ended;
  /* probes; record sites are the begin and role markers */
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
    int is_end = mk->kind == AG_PTX_MARK_END;
    ag_str_clear(&t);
    if ((rc = probe_text(&x, mk, is_end ? -1 : site, mk->region >= 0 && has_iter[mk->region],
                         &t)) ||
        (rc = insert_verbatim(&x, f, mk->stmt, 0, &t)))
      break;
    if (is_end)
      continue;
    json_t *js = json_object(); /* key by key, as probes_regions */
    json_object_set_new(js, "site", json_integer(site));
    json_object_set_new(js, "kind", json_string(mk->kind == AG_PTX_MARK_BEGIN ? "region" : "role"));
    json_object_set_new(js, "line", json_integer(mk->line));
    json_object_set_new(js, "function", json_string(f->name));
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
  ag_free(has_iter);
  ag_free(probed);
  ag_free(ended);
  ag_str_release(&t);
  return rc;
}
