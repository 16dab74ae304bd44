/*
 * padding.c — the control-flow fields of sm_90 SASS read from a cubin's
 * code, and the padding ptxas puts after a function's last RET or EXIT
 * (argus/sass.h; docs/attribution.md, "SASS line info").
 *
 * After a function's last instruction ptxas writes a BRA to itself and NOPs
 * up to the section's alignment. They never run, but they carry the RET's or
 * EXIT's PTX line, so the -lineinfo join would give them that unit's count.
 * The rule is decided from the function's own SASS: its instructions after
 * the last RET or EXIT are padding when that RET/EXIT is unguarded (no fall
 * through), every one of them is a NOP or an unguarded BRA to itself, and
 * no BRA of the function targets one of them but itself.
 *
 * Only what the rule needs is decoded, from the first 64-bit word of each
 * 16-byte instruction (checked against nvdisasm's listing of the recorded
 * ground truth and against ptxas's line table, tests/sass/test_sass_padding.c):
 *   bits 0-11   opcode: BRA 0x947, EXIT 0x94d, RET 0x950, NOP 0x918;
 *   bits 12-15  guard: predicate (0-2, 7 = PT) and its negation (bit 15);
 *   BRA's target, relative to the next instruction, in bytes: bits 2-9 of
 *   the offset in bits 16-23, bits 10 and up (signed) in bits 34-81.
 * Other architectures encode these differently (sm_80 keeps a byte offset
 * in bits 32-81): their padding is not recognized (AG_EUNSUPPORTED). Linear
 * in the code's size; called once per map.
 */
#include "argus/sass.h"

#include <string.h>

#define INSN_BYTES 16
#define GUARD_PT 7 /* the guard field of an unguarded instruction */

static uint64_t word(const uint8_t *b, int k) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = v << 8 | b[8 * k + i];
  return v;
}

int ag_sass_decode_ctl(const ag_sass_cubin *c, int text, uint64_t pc, ag_sass_ctl *out) {
  memset(out, 0, sizeof *out);
  out->pc = pc;
  out->target = -1;
  if (c->sm != 90)
    return AG_EUNSUPPORTED;
  if (text < 0 || text >= c->ntexts || pc % INSN_BYTES ||
      pc + INSN_BYTES > c->texts[text].size)
    return AG_EINVAL;
  const uint8_t *b = c->texts[text].bytes + pc;
  uint64_t lo = word(b, 0), hi = word(b, 1);
  unsigned op = (unsigned)(lo & 0xfff);
  out->guarded = ((lo >> 12) & 0xf) != GUARD_PT;
  out->kind = op == 0x947   ? AG_SASS_CTL_BRA
              : op == 0x94d ? AG_SASS_CTL_EXIT
              : op == 0x950 ? AG_SASS_CTL_RET
              : op == 0x918 ? AG_SASS_CTL_NOP
                            : AG_SASS_CTL_OTHER;
  if (out->kind == AG_SASS_CTL_BRA) {
    /* bits 34-81: offset bits 10..57, signed (bit 81 the sign) */
    uint64_t high = (lo >> 34) | (hi & 0x3ffff) << 30;
    int64_t h = (int64_t)(high << 16) >> 16; /* sign-extend the 48-bit field */
    int64_t off = h * 1024 + (int64_t)(((lo >> 16) & 0xff) << 2);
    out->target = (int64_t)pc + INSN_BYTES + off;
  }
  return 0;
}

int ag_sass_padding_start(const ag_sass_ctl *ins, int n) {
  int s = n;
  while (s > 0 && (ins[s - 1].kind == AG_SASS_CTL_NOP ||
                   (ins[s - 1].kind == AG_SASS_CTL_BRA && !ins[s - 1].guarded &&
                    ins[s - 1].target == (int64_t)ins[s - 1].pc)))
    s--;
  /* the instruction before: the function's last RET or EXIT, unguarded */
  if (s == n || s == 0 || ins[s - 1].guarded ||
      (ins[s - 1].kind != AG_SASS_CTL_RET && ins[s - 1].kind != AG_SASS_CTL_EXIT))
    return n;
  /* nothing branches into it (a self-branch targets only itself) */
  for (int i = 0; i < n; i++)
    if (ins[i].kind == AG_SASS_CTL_BRA && ins[i].target != (int64_t)ins[i].pc &&
        ins[i].target >= (int64_t)ins[s].pc && ins[i].target <= (int64_t)ins[n - 1].pc)
      return n;
  return s;
}

/* The end of function f's code: its symbol's end, or the start of the next
 * function placed inside it (a kernel's symbol covers the device functions
 * ptxas put in its section). */
static uint64_t func_end(const ag_sass_cubin *c, int f) {
  const ag_sass_sym *F = &c->funcs[f];
  uint64_t end = F->offset + F->size;
  if (end > c->texts[F->text].size)
    end = c->texts[F->text].size;
  for (int g = 0; g < c->nfuncs; g++)
    if (c->funcs[g].text == F->text && c->funcs[g].offset > F->offset &&
        c->funcs[g].offset < end)
      end = c->funcs[g].offset;
  return end;
}

int ag_sass_cubin_padding(const ag_sass_cubin *c, int text, unsigned char *pad) {
  if (text < 0 || text >= c->ntexts)
    return AG_EINVAL;
  uint64_t np = c->texts[text].size / INSN_BYTES;
  memset(pad, 0, (size_t)np);
  if (c->sm != 90)
    return AG_EUNSUPPORTED;
  ag_sass_ctl *ins = ag_calloc((size_t)np + 1, sizeof *ins);
  if (!ins)
    return AG_ENOMEM;
  int total = 0;
  for (int f = 0; f < c->nfuncs; f++) {
    const ag_sass_sym *F = &c->funcs[f];
    if (F->text != text || F->offset % INSN_BYTES)
      continue;
    uint64_t end = func_end(c, f);
    int n = 0;
    for (uint64_t pc = F->offset; pc + INSN_BYTES <= end; pc += INSN_BYTES)
      ag_sass_decode_ctl(c, text, pc, &ins[n++]); /* in range: cannot fail */
    for (int i = ag_sass_padding_start(ins, n); i < n; i++)
      if (!pad[ins[i].pc / INSN_BYTES]) {
        pad[ins[i].pc / INSN_BYTES] = 1;
        total++;
      }
  }
  ag_free(ins);
  return total;
}
