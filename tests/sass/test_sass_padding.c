/*
 * test_sass_padding.c — the padding after a function's last RET or EXIT
 * (src/sass/padding.c; docs/attribution.md, "SASS line info"):
 *   - the rule on constructed listings: padding after a RET and after an
 *     EXIT is found; a real self-loop BRA that is not after the last RET is
 *     code, and so is the suffix when the RET/EXIT before it is guarded, a
 *     BRA jumps into it, it holds other code, or the self-branch is guarded;
 *   - the same through the cubin's code: a constructed sm_90 section with a
 *     kernel and a helper placed in it (the kernel's symbol covers both);
 *     other architectures are refused, nothing marked; bad PCs;
 *   - the decoder on real SASS: every instruction of the recorded ground
 *     truth's nvdisasm listing (tests/data/evidence/attrib_truth.map.sass.json)
 *     against ptxas's rebuild of that cubin (opcode kinds, guards, BRA
 *     targets consistent with the listing's labels, the helper's 16 padding
 *     PCs); branches farther than 1 KiB forward and back, checked against
 *     the -lineinfo table of PTX made here; an sm_80 cubin is not decoded.
 * The real-SASS cases skip without nvcc/ptxas or with a ptxas whose cubin is
 * not the recording's.
 */
#include "argus/sass.h"
#include "argus/sass_ev.h"
#include "check.h"
#include "sass_util.h"

/* ------------------------------------------------ constructed listings */
enum { O = AG_SASS_CTL_OTHER, N = AG_SASS_CTL_NOP, B = AG_SASS_CTL_BRA, E = AG_SASS_CTL_EXIT,
       R = AG_SASS_CTL_RET };

typedef struct li {
  int kind, guarded, target; /* target: instruction index, -1 none */
} li;

/* the padding start of a listing given as (kind, guarded, target index) */
static int start_of(const li *l, int n) {
  ag_sass_ctl ins[32];
  for (int i = 0; i < n; i++) {
    ins[i].pc = (uint64_t)i * 16 + 0x100;
    ins[i].kind = (ag_sass_ctl_kind)l[i].kind;
    ins[i].guarded = l[i].guarded;
    ins[i].target = l[i].target < 0 ? -1 : (int64_t)l[i].target * 16 + 0x100;
  }
  return ag_sass_padding_start(ins, n);
}

TEST(rule_listings) {
  /* a helper: code, RET, the BRA to itself, NOPs */
  li ret[] = {{O, 0, -1}, {O, 0, -1}, {R, 0, -1}, {B, 0, 3}, {N, 0, -1}, {N, 0, -1}};
  CHECK_EQ_INT(start_of(ret, 6), 3);
  /* an EXIT-terminated function with an early guarded EXIT */
  li ex[] = {{O, 0, -1}, {E, 1, -1}, {O, 0, -1}, {E, 0, -1}, {B, 0, 4}, {N, 0, -1}};
  CHECK_EQ_INT(start_of(ex, 6), 4);
  /* NOPs alone after the EXIT */
  li nops[] = {{O, 0, -1}, {E, 0, -1}, {N, 0, -1}, {N, 0, -1}};
  CHECK_EQ_INT(start_of(nops, 4), 2);
  /* a real self-loop (a spin) in the middle is code; the trailing padding is not */
  li spin[] = {{O, 0, -1}, {B, 0, 1}, {B, 1, 2}, {O, 0, -1}, {R, 0, -1}, {B, 0, 5}, {N, 0, -1}};
  CHECK_EQ_INT(start_of(spin, 7), 5);
  /* a self-loop BRA right before the last RET is not after it */
  li before[] = {{O, 0, -1}, {B, 0, 1}, {R, 0, -1}};
  CHECK_EQ_INT(start_of(before, 3), 3);
  /* a self-loop BRA that ends the function, after code: no RET/EXIT before it */
  li tail[] = {{R, 0, -1}, {O, 0, -1}, {B, 0, 2}, {N, 0, -1}};
  CHECK_EQ_INT(start_of(tail, 4), 4);
  /* the RET before it is guarded: control falls through into the BRA */
  li gret[] = {{O, 0, -1}, {R, 1, -1}, {B, 0, 2}, {N, 0, -1}};
  CHECK_EQ_INT(start_of(gret, 4), 4);
  /* a branch into the suffix: a deliberate hang, code */
  li into[] = {{B, 1, 4}, {O, 0, -1}, {E, 0, -1}, {B, 0, 3}, {N, 0, -1}};
  CHECK_EQ_INT(start_of(into, 5), 5);
  /* a branch to the RET itself is fine */
  li toret[] = {{B, 1, 2}, {O, 0, -1}, {E, 0, -1}, {B, 0, 3}, {N, 0, -1}};
  CHECK_EQ_INT(start_of(toret, 5), 3);
  /* a guarded self-branch, a BRA elsewhere or other code in the suffix: code */
  li gself[] = {{O, 0, -1}, {E, 0, -1}, {B, 1, 2}, {N, 0, -1}};
  CHECK_EQ_INT(start_of(gself, 4), 4);
  li away[] = {{O, 0, -1}, {E, 0, -1}, {B, 0, 0}, {N, 0, -1}};
  CHECK_EQ_INT(start_of(away, 4), 4);
  li mixed[] = {{E, 0, -1}, {B, 0, 1}, {O, 0, -1}, {N, 0, -1}};
  CHECK_EQ_INT(start_of(mixed, 4), 4);
  /* nothing after the EXIT, nothing at all, padding alone */
  li end[] = {{O, 0, -1}, {E, 0, -1}};
  CHECK_EQ_INT(start_of(end, 2), 2);
  CHECK_EQ_INT(start_of(end, 0), 0);
  li only[] = {{B, 0, 0}, {N, 0, -1}};
  CHECK_EQ_INT(start_of(only, 2), 2);
}

/* ------------------------------------------------ constructed sm_90 code */
/* One instruction as src/sass/padding.c reads it: opcode in bits 0-11, the
 * guard in 12-15 (7: PT), a BRA's offset from the next instruction (bits
 * 2-9 in 16-23, bits 10 and up in 34-81). */
static void enc(uint8_t *code, uint64_t pc, unsigned op, int guarded, int64_t target) {
  uint64_t lo = op | (uint64_t)(guarded ? 0x8 : 0x7) << 12, hi = 0x000fc00000000000ull;
  if (target >= 0) {
    int64_t off = target - (int64_t)(pc + 16);
    uint64_t high = (uint64_t)(off >> 10);
    lo |= ((uint64_t)(off >> 2) & 0xff) << 16;
    lo |= (high & 0x3fffffffull) << 34;
    hi |= (high >> 30) & 0x3ffff;
  }
  for (int i = 0; i < 8; i++) {
    code[pc + (uint64_t)i] = (uint8_t)(lo >> (8 * i));
    code[pc + 8 + (uint64_t)i] = (uint8_t)(hi >> (8 * i));
  }
}

TEST(rule_code) {
  /* kernel k at 0 (its symbol covers the section, as ptxas writes it):
   * a spin (self-loop), a forward BRA to its EXIT, an unguarded self-loop,
   * EXIT, its padding (BRA self, NOP); then helper $k$h at 0x80: code, a
   * backward BRA, RET, BRA self, 4 NOPs */
  static uint8_t code[0x100];
  memset(code, 0, sizeof code);
  enc(code, 0x00, 0x210, 0, -1);
  enc(code, 0x10, 0x947, 1, 0x10); /* @P0 BRA self: a spin, code */
  enc(code, 0x20, 0x947, 1, 0x50);
  enc(code, 0x30, 0x947, 0, 0x30); /* an unguarded self-loop, code */
  enc(code, 0x40, 0x986, 0, -1);
  enc(code, 0x50, 0x94d, 0, -1); /* EXIT */
  enc(code, 0x60, 0x947, 0, 0x60);
  enc(code, 0x70, 0x918, 0, -1);
  enc(code, 0x80, 0x210, 0, -1);
  enc(code, 0x90, 0x947, 1, 0x80);
  enc(code, 0xa0, 0x950, 0, -1); /* RET */
  enc(code, 0xb0, 0x947, 0, 0xb0);
  for (uint64_t pc = 0xc0; pc < 0x100; pc += 16)
    enc(code, pc, 0x918, 0, -1);
  ag_sass_text text = {"k", code, sizeof code};
  ag_sass_sym syms[2] = {{"k", 0, 0, sizeof code}, {"$k$h", 0, 0x80, 0x80}};
  ag_sass_cubin c;
  memset(&c, 0, sizeof c);
  c.texts = &text;
  c.ntexts = 1;
  c.funcs = syms;
  c.nfuncs = 2;
  c.sm = 90;
  unsigned char pad[16];
  CHECK_EQ_INT(ag_sass_cubin_padding(&c, 0, pad), 7);
  for (int p = 0; p < 16; p++)
    CHECK_EQ_INT(pad[p], p == 6 || p == 7 || p >= 0xb);
  /* what was decoded */
  ag_sass_ctl x;
  CHECK_EQ_INT(ag_sass_decode_ctl(&c, 0, 0x20, &x), 0);
  CHECK(x.kind == AG_SASS_CTL_BRA && x.guarded && x.target == 0x50);
  CHECK_EQ_INT(ag_sass_decode_ctl(&c, 0, 0x90, &x), 0);
  CHECK(x.kind == AG_SASS_CTL_BRA && x.target == 0x80);
  CHECK_EQ_INT(ag_sass_decode_ctl(&c, 0, 0xa0, &x), 0);
  CHECK(x.kind == AG_SASS_CTL_RET && !x.guarded && x.target == -1);
  CHECK_EQ_INT(ag_sass_decode_ctl(&c, 0, 0x50, &x), 0);
  CHECK(x.kind == AG_SASS_CTL_EXIT);
  CHECK_EQ_INT(ag_sass_decode_ctl(&c, 0, 0xc0, &x), 0);
  CHECK(x.kind == AG_SASS_CTL_NOP);
  CHECK_EQ_INT(ag_sass_decode_ctl(&c, 0, 0x40, &x), 0);
  CHECK(x.kind == AG_SASS_CTL_OTHER && x.target == -1);
  /* bad PCs and texts */
  CHECK_EQ_INT(ag_sass_decode_ctl(&c, 0, 0x100, &x), AG_EINVAL);
  CHECK_EQ_INT(ag_sass_decode_ctl(&c, 0, 0x18, &x), AG_EINVAL);
  CHECK_EQ_INT(ag_sass_decode_ctl(&c, 1, 0, &x), AG_EINVAL);
  CHECK_EQ_INT(ag_sass_cubin_padding(&c, 1, pad), AG_EINVAL);
  CHECK_EQ_INT(ag_sass_cubin_padding(&c, -1, pad), AG_EINVAL);
  /* the helper's symbol ending at its RET: nothing after it is its padding,
   * nor the kernel's (the kernel's code ends where the helper begins) */
  syms[1].size = 0x30;
  CHECK_EQ_INT(ag_sass_cubin_padding(&c, 0, pad), 2);
  syms[1].size = 0x80;
  /* a branch of the helper into its suffix: none of it is padding */
  enc(code, 0x90, 0x947, 1, 0xd0);
  CHECK_EQ_INT(ag_sass_cubin_padding(&c, 0, pad), 2);
  enc(code, 0x90, 0x947, 1, 0x80);
  /* the kernel's own padding, as long as nothing branches into it */
  enc(code, 0x20, 0x947, 1, 0x70);
  CHECK_EQ_INT(ag_sass_cubin_padding(&c, 0, pad), 5);
  enc(code, 0x20, 0x947, 1, 0x50);
  /* other architectures: not decoded, nothing marked */
  c.sm = 80;
  memset(pad, 1, sizeof pad);
  CHECK_EQ_INT(ag_sass_cubin_padding(&c, 0, pad), AG_EUNSUPPORTED);
  for (int p = 0; p < 16; p++)
    CHECK_EQ_INT(pad[p], 0);
  CHECK_EQ_INT(ag_sass_decode_ctl(&c, 0, 0xb0, &x), AG_EUNSUPPORTED);
}

/* ------------------------------------------------------------ real SASS */
/* the listing's opcode base as the decoder's kind */
static int kind_of(const char *op) {
  size_t n = strcspn(op, ".");
  return n == 3 && !strncmp(op, "BRA", 3)    ? AG_SASS_CTL_BRA
         : n == 4 && !strncmp(op, "EXIT", 4) ? AG_SASS_CTL_EXIT
         : n == 3 && !strncmp(op, "RET", 3)  ? AG_SASS_CTL_RET
         : n == 3 && !strncmp(op, "NOP", 3)  ? AG_SASS_CTL_NOP
                                             : AG_SASS_CTL_OTHER;
}

TEST(decode_recorded) {
  su_need_tools();
  char *ptx = NULL, *bin = NULL, p[4096];
  size_t len = 0, blen = 0;
  ag_diags d;
  ag_diags_init(&d);
  ag_str err = AG_STR_INIT;
  ag_sass_ev *ev = NULL;
  ag_sass_cubin *cub = NULL;
  unsigned char *pad = NULL;
  snprintf(p, sizeof p, "%s/tests/data/evidence/attrib_truth.map.sass.json",
           getenv("ARGUS_SOURCE_DIR"));
  CHECK_EQ_INT(ag_sass_ev_load(p, &d, &ev), 0);
  CHECK_EQ_INT(su_cuda_ptx("tests/data/cuda/attrib_truth.cu", &ptx, &len), 0);
  if (!ev || !ptx)
    goto out;
  CHECK_EQ_INT(su_ptxas("sm_90a", 1, ptx, len, &bin, &blen, &err), 0);
  json_int_t rec = json_integer_value(json_object_get(
      json_array_get(json_object_get(ev->root, "cubins"), 0), "bytes"));
  if (!bin || rec != (json_int_t)blen) {
    printf("the recorded cubin has %lld bytes, this ptxas makes %zu\n", (long long)rec, blen);
    ag_free(ptx);
    ag_free(bin);
    ag_sass_ev_free(ev);
    ag_str_release(&err);
    ag_diags_release(&d);
    SKIP("not the recording's ptxas");
  }
  CHECK_EQ_INT(ag_sass_cubin_parse(bin, blen, "attrib_truth.cubin", &d, &cub), 0);
  if (!cub)
    goto out;
  CHECK_EQ_INT(cub->sm, 90);
  int t = ag_sass_cubin_text(cub, "attrib_truth"), n = 0, bras = 0, self = 0, last = -1;
  int64_t tgt_of[64]; /* by the listing's label number .L_x_<k> */
  for (int k = 0; k < 64; k++)
    tgt_of[k] = -1;
  uint32_t ret = 0;
  for (size_t i = 0; i < ev->nins; i++) {
    const ag_sass_insn *in = &ev->ins[i];
    if (strcmp(in->function, "attrib_truth"))
      continue;
    ag_sass_ctl x;
    n++;
    CHECK_EQ_INT(ag_sass_decode_ctl(cub, t, in->pc, &x), 0);
    if ((int)x.kind != kind_of(in->op) || x.guarded != (in->pred[0] != 0))
      printf("pc 0x%x %s %s: decoded kind %d, guarded %d\n", in->pc, in->pred, in->op, x.kind,
             x.guarded);
    CHECK_EQ_INT((int)x.kind, kind_of(in->op));
    CHECK_EQ_INT(x.guarded, in->pred[0] != 0);
    if (x.kind == AG_SASS_CTL_RET)
      ret = in->pc;
    if (x.kind != AG_SASS_CTL_BRA)
      continue;
    /* "`(.L_x_<k>)": one label, one target */
    const char *l = strstr(in->args, ".L_x_");
    int k = l ? atoi(l + 5) : -1;
    CHECK(k >= 0 && k < 64);
    if (k < 0 || k >= 64)
      continue;
    bras++;
    self += x.target == (int64_t)in->pc;
    CHECK(x.target >= 0 && x.target % 16 == 0 && (uint64_t)x.target < cub->texts[t].size);
    CHECK(tgt_of[k] < 0 || tgt_of[k] == x.target);
    tgt_of[k] = x.target;
    last = k > last ? k : last;
  }
  for (int a = 0; a < 64; a++) /* and another label, another target */
    for (int b = a + 1; b < 64; b++)
      if (tgt_of[a] >= 0 && tgt_of[b] >= 0)
        CHECK(tgt_of[a] != tgt_of[b]);
  printf("%d instructions, %d BRAs (%d to itself), the RET at 0x%x\n", n, bras, self, ret);
  CHECK(n > 60 && bras >= 7 && ret);
  CHECK_EQ_INT(self, 1);
  CHECK_EQ_INT(tgt_of[last], (int64_t)ret + 16); /* the padding's BRA, right after the RET */
  /* where ptxas put the loops of A, B and C (loop heads behind their
   * back-edges) and the skips over them: each target is the instruction the
   * listing shows at the start of a block (an unguarded UIADD3 / ULOP3 loop
   * head after a UMOV, or an LDC / ULDC reading the next region's count or
   * the output pointer) */
  for (int k = 0; k < 64; k++) {
    const ag_sass_insn *in = tgt_of[k] >= 0 && k != last
                                 ? ag_sass_ev_insn(ev, "attrib_truth", (uint32_t)tgt_of[k])
                                 : NULL;
    const ag_sass_insn *prev = in ? ag_sass_ev_insn(ev, "attrib_truth", in->pc - 16) : NULL;
    if (tgt_of[k] < 0 || k == last)
      continue;
    CHECK(in && prev);
    if (!in || !prev)
      continue;
    int head = (!strncmp(in->op, "UIADD3", 6) || !strncmp(in->op, "ULOP3", 5)) &&
               !strcmp(prev->op, "UMOV");
    int next = !strncmp(in->op, "LDC", 3) || !strncmp(in->op, "ULDC", 4);
    if (!head && !next)
      printf(".L_x_%d at 0x%llx: %s after %s\n", k, (long long)tgt_of[k], in->op, prev->op);
    CHECK(head || next);
  }
  /* the padding: the helper's PCs after its RET, all of them, nothing else */
  pad = ag_calloc(cub->texts[t].size / 16 + 1, 1);
  int np = pad ? ag_sass_cubin_padding(cub, t, pad) : -1;
  CHECK_EQ_INT(np, (int)((cub->texts[t].size - ret - 16) / 16));
  for (uint64_t pc = 0; pad && pc < cub->texts[t].size; pc += 16)
    CHECK_EQ_INT(pad[pc / 16], pc > ret);
out:
  ag_free(pad);
  ag_sass_cubin_free(cub);
  ag_sass_ev_free(ev);
  ag_free(ptx);
  ag_free(bin);
  ag_str_release(&err);
  ag_diags_release(&d);
}

/* PTX with a branch over FAR stores forward and a loop of FAR stores back:
 * the decoded targets, against the -lineinfo table, land after the skipped
 * stores and at most on the store after SKIP (ptxas puts the reconvergence
 * BSYNC between them), and on the loop's first store. lines[]: the skipped
 * stores' first and last, the store after SKIP, the loop's first and last. */
#define FAR 120
static void far_ptx(ag_str *s, const char *arch, int lines[5]) {
  int line = 1;
  ag_str_printf(s, ".version 8.0\n.target %s\n.address_size 64\n", arch);
  line += 3;
  ag_str_puts(s, ".visible .entry far(.param .u64 p, .param .u32 n)\n{\n"
                 ".reg .pred %p<4>;\n.reg .b32 %r<8>;\n.reg .b64 %rd<4>;\n"
                 "ld.param.u64 %rd1, [p];\nld.param.u32 %r1, [n];\nmov.u32 %r2, %tid.x;\n"
                 "setp.eq.s32 %p1, %r2, 0;\n@%p1 bra SKIP;\n");
  line += 10;
  lines[0] = line;
  lines[1] = line + FAR - 1;
  for (int i = 0; i < FAR; i++, line++)
    ag_str_printf(s, "st.volatile.global.u32 [%%rd1+%d], %%r2;\n", 4 * (i + 1));
  ag_str_puts(s, "SKIP:\nst.volatile.global.u32 [%rd1], %r1;\nmov.u32 %r3, 0;\nTOP:\n");
  lines[2] = line + 1;
  line += 4;
  lines[3] = line;
  for (int i = 0; i < FAR; i++, line++)
    ag_str_printf(s, "st.volatile.global.u32 [%%rd1+%d], %%r3;\n", 1024 + 4 * i);
  lines[4] = line - 1;
  ag_str_puts(s, "add.s32 %r3, %r3, 1;\nsetp.lt.u32 %p2, %r3, %r1;\n@%p2 bra TOP;\nret;\n}\n");
}

/* far_ptx for arch through ptxas (-lineinfo or not), parsed; NULL: failed (checked) */
static ag_sass_cubin *far_cubin(const char *arch, int lineinfo, int L[5], ag_diags *d) {
  ag_str s = AG_STR_INIT, err = AG_STR_INIT;
  char *bin = NULL;
  size_t blen = 0;
  ag_sass_cubin *cub = NULL;
  far_ptx(&s, arch, L);
  CHECK_EQ_INT(su_ptxas(arch, lineinfo, ag_str_cstr(&s), s.len, &bin, &blen, &err), 0);
  if (bin)
    CHECK_EQ_INT(ag_sass_cubin_parse(bin, blen, arch, d, &cub), 0);
  ag_free(bin);
  ag_str_release(&s);
  ag_str_release(&err);
  return cub;
}

TEST(decode_far) {
  su_need_tools();
  ag_diags d;
  ag_diags_init(&d);
  int L[5];
  ag_sass_cubin *cub = far_cubin("sm_90a", 1, L, &d);
  if (!cub)
    goto out;
  int t = ag_sass_cubin_text(cub, "far"), fwd = 0, back = 0;
  for (uint64_t pc = 0; t >= 0 && pc < cub->texts[t].size; pc += 16) {
    ag_sass_ctl x;
    int line = 0, tl = 0;
    CHECK_EQ_INT(ag_sass_decode_ctl(cub, t, pc, &x), 0);
    if (x.kind != AG_SASS_CTL_BRA || x.target == (int64_t)pc)
      continue;
    CHECK(x.target >= 0 && (uint64_t)x.target < cub->texts[t].size);
    ag_sass_cubin_pc_line(cub, t, pc, &line);
    ag_sass_cubin_pc_line(cub, t, (uint64_t)x.target, &tl);
    printf("BRA at 0x%llx (line %d) -> 0x%llx (line %d), %+lld bytes\n", (unsigned long long)pc,
           line, (unsigned long long)x.target, tl, (long long)(x.target - (int64_t)pc));
    if (x.target > (int64_t)pc + 1024) { /* over the stores, at most to the one after SKIP */
      uint64_t first = UINT64_MAX, last = UINT64_MAX, after = UINT64_MAX;
      fwd++;
      for (uint64_t q = pc + 16; q < cub->texts[t].size; q += 16) {
        int ql = 0;
        ag_sass_cubin_pc_line(cub, t, q, &ql);
        if (ql == L[0] && first == UINT64_MAX)
          first = q;
        if (ql == L[1] && last == UINT64_MAX)
          last = q;
        if (ql == L[2] && after == UINT64_MAX)
          after = q;
      }
      /* the first and the last skipped store lie between the BRA and its target */
      CHECK(first != UINT64_MAX && last != UINT64_MAX && (int64_t)last < x.target);
      CHECK(after != UINT64_MAX && x.target <= (int64_t)after);
    } else if (x.target < (int64_t)pc - 1024) { /* the loop: to its first instruction */
      int before = 0;
      back++;
      CHECK(tl >= L[3] && tl <= L[4]);
      ag_sass_cubin_pc_line(cub, t, (uint64_t)x.target - 16, &before);
      CHECK(before < L[3] || before > L[4]);
    }
  }
  CHECK_EQ_INT(fwd, 1);
  CHECK_EQ_INT(back, 1);
  /* an sm_80 build: its SASS is not decoded, its padding not recognized */
  ag_sass_cubin_free(cub);
  if (!(cub = far_cubin("sm_80", 0, L, &d)))
    goto out;
  CHECK_EQ_INT(cub->sm, 80);
  unsigned char pad[4096];
  t = ag_sass_cubin_text(cub, "far");
  CHECK(t >= 0 && cub->texts[t].size / 16 <= sizeof pad);
  if (t >= 0 && cub->texts[t].size / 16 <= sizeof pad)
    CHECK_EQ_INT(ag_sass_cubin_padding(cub, t, pad), AG_EUNSUPPORTED);
out:
  ag_sass_cubin_free(cub);
  ag_diags_release(&d);
}

RUN_TESTS(T(rule_listings), T(rule_code), T(decode_recorded), T(decode_far))
