#!/usr/bin/env python3
"""probe_designs.py - hand-made probe designs for the tracing-overhead benchmark.

Reads the trace-free overhead PTX (examples/overhead compiled with markers)
and writes one PTX module per design, each with the same descriptor symbol
as the real traced variant, so bench/trace_overhead can time them side by
side with `--candidate NAME=FILE`. Exploration only: the product's probe is
src/ptx/xform_trace.c; this script is how its design was chosen
(bench/RESULTS.md, "Probe designs").

  probe_designs.py TRACE_FREE.ptx OUTDIR
  probe_designs.py --from-traced TRACED.ptx OUTDIR

The second form edits the product's own traced PTX (`argus variant --kind
traced`) at its end markers, so a design differs from the shipped probe in
the end marker only and the rest of the code sits where it sits there.
"""
import re
import sys

REGS = """\t.reg .b64 %agt_a, %agt_c, %agt_x, %agt_y, %agt_d, %agt_d2;
\t.reg .b32 %agt_plo, %agt_phi, %agt_lim, %agt_slot, %agt_ce, %agt_ge, %agt_t<16>, %agt_b<6>, %agt_e, %agt_w, %agt_z, %agt_s<4>, %agt_ni, %agt_acc, %agt_pad;
\t.reg .pred %agt_p, %agt_q, %agt_never;
"""

PROLOGUE = """\tmov.u32 %agt_ce, %clock;
\tmov.u32 %agt_ge, %globaltimer_lo;
\tld.const.u64 %agt_a, [__argus_trace];
\tld.const.v2.u32 {%agt_t0, %agt_t1}, [__argus_trace+16];
\tmov.u32 %agt_t2, %tid.x;
\tmov.u32 %agt_t5, %ntid.x;
\tadd.u32 %agt_t5, %agt_t5, 31;
\tshr.u32 %agt_t5, %agt_t5, 5;
\tmov.u32 %agt_t8, %ctaid.x;
\tmov.u32 %agt_t9, %ctaid.y;
\tmov.u32 %agt_t10, %ctaid.z;
\tmov.u32 %agt_t11, %nctaid.x;
\tmov.u32 %agt_t12, %nctaid.y;
\tmad.lo.u32 %agt_t10, %agt_t10, %agt_t12, %agt_t9;
\tmad.lo.u32 %agt_t8, %agt_t10, %agt_t11, %agt_t8;
\tshr.u32 %agt_t3, %agt_t2, 5;
\tmad.lo.u32 %agt_slot, %agt_t8, %agt_t5, %agt_t3;
\tand.b32 %agt_t2, %agt_t2, 31;
\tsetp.ne.u32 %agt_p, %agt_t1, 0;
\tsetp.eq.and.u32 %agt_p, %agt_t2, 0, %agt_p;
\tmul.lo.u32 %agt_t6, %agt_slot, %agt_t0;
\tmad.wide.u32 %agt_a, %agt_t6, 16, %agt_a;
\tmov.b64 {%agt_plo, %agt_phi}, %agt_a;
\tshl.b32 %agt_t7, %agt_t0, 4;
\tselp.u32 %agt_t7, %agt_t7, 0, %agt_p;
\tadd.u32 %agt_lim, %agt_plo, %agt_t7;
\tsetp.lt.u32 %agt_q, %agt_plo, %agt_lim;
\tmov.b64 %agt_d, {%agt_plo, %agt_phi};
\tmov.u32 %agt_z, 0;
\tmov.u32 %agt_ni, 2147483647;
\tmov.u32 %agt_s0, SITE0;
\tmov.u32 %agt_s1, SITE1;
\tmov.u32 %agt_acc, %tid.x;
"""

EPILOGUE = """\tmov.u64 %agt_c, %clock64;
\tmov.u64 %agt_y, %globaltimer;
\tld.const.v2.u64 {%agt_a, %agt_x}, [__argus_trace];
\tld.const.v4.u32 {%agt_t0, %agt_t1, %agt_t13, %agt_t14}, [__argus_trace+16];
\tmul.lo.u32 %agt_t6, %agt_slot, %agt_t0;
\tmad.wide.u32 %agt_a, %agt_t6, 16, %agt_a;
\tcvt.u32.u64 %agt_t6, %agt_a;
\tsub.u32 %agt_t6, %agt_plo, %agt_t6;
\tshr.u32 %agt_t6, %agt_t6, RECSHIFT;
\tmad.wide.u32 %agt_x, %agt_slot, 64, %agt_x;
\tactivemask.b32 %agt_t3;
\tredux.sync.max.u32 %agt_t4, %agt_t6, %agt_t3;
\tneg.s32 %agt_t5, %agt_t3;
\tand.b32 %agt_t5, %agt_t5, %agt_t3;
\tmov.u32 %agt_t10, %lanemask_eq;
\tsetp.ne.u32 %agt_p, %agt_t1, 0;
\tsetp.eq.and.u32 %agt_q, %agt_t5, %agt_t10, %agt_p;
\t@%agt_q red.global.max.u32 [%agt_x+48], %agt_t4;
\tmov.u32 %agt_t2, %laneid;
\tsetp.eq.and.u32 %agt_p, %agt_t2, 0, %agt_p;
\tcvt.u32.u64 %agt_t9, %agt_c;
\tsub.u32 %agt_t9, %agt_t9, %agt_ce;
\tcvt.u64.u32 %agt_d, %agt_t9;
\tsub.u64 %agt_d, %agt_c, %agt_d;
\tcvt.u32.u64 %agt_t9, %agt_y;
\tsub.u32 %agt_t9, %agt_t9, %agt_ge;
\tcvt.u64.u32 %agt_d2, %agt_t9;
\tsub.u64 %agt_d2, %agt_y, %agt_d2;
\tmov.u32 %agt_t7, %smid;
\tmov.u32 %agt_t9, 1;
\t@%agt_p st.global.v2.u64 [%agt_x], {%agt_d, %agt_d2};
\t@%agt_p st.global.v2.u64 [%agt_x+16], {%agt_c, %agt_y};
\t@%agt_p st.global.v4.u32 [%agt_x+32], {%agt_t7, %agt_t6, %agt_t9, %agt_t13};
\t@%agt_p st.global.u32 [%agt_x+52], %agt_acc;
"""

# per design: begin(region index, iteration register or None),
#             end(region index, site register, site number, iteration register or None)
def begin_clock(k, it):
    return f"\tmov.u32 %agt_b{k}, %clock;\n"

def record(vals, w="", pre=False, setp=True, vec="v4"):
    """the end marker of most designs: the clock, `w` (the iteration word's
    computation, if any), then the store of `vals` with the pointer advanced
    before (pre) or after it, and the next record's predicate (setp)"""
    st = f"\t@%agt_q st.global.{vec}.u32 [%agt_a{'+-16' if pre else ''}], {{{vals}}};\n"
    adv = "\tadd.u32 %agt_plo, %agt_plo, 16;\n"
    addr = "\tmov.b64 %agt_a, {%agt_plo, %agt_phi};\n"
    return ("\tmov.u32 %agt_e, %clock;\n" + w + (adv + addr + st if pre else addr + st + adv) +
            ("\tsetp.lt.u32 %agt_q, %agt_plo, %agt_lim;\n" if setp else ""))

def end_v4(k, sreg, site, it):
    return record(f"%agt_b{k}, %agt_e, {sreg}, {it or '%agt_ni'}")

def begin_itcopy(k, it):
    return ((f"\tmov.u32 %agt_t{k + 12}, {it};\n" if it else "") +
            f"\tmov.u32 %agt_b{k}, %clock;\n")

def end_v4_itcopy(k, sreg, site, it):
    return end_v4(k, sreg, site, f"%agt_t{k + 12}" if it else None)

def end_x4(k, sreg, site, it, ptr="lo", pre=False):
    """immediate store; the iteration word is a fresh register (it ^ 2^31) so
    no register of the stored quad is rewritten right after the store"""
    w = (f"\txor.b32 %agt_w, {it}, -2147483648;\n" if it else
         "\tmov.u32 %agt_w, 2147483647;\n")
    if ptr == "64":
        return (f"\tmov.u32 %agt_e, %clock;\n" + w +
                f"\t@%agt_q st.global.v4.u32 [%agt_d], {{%agt_b{k}, %agt_e, {sreg}, %agt_w}};\n"
                f"\tadd.u64 %agt_d, %agt_d, 16;\n"
                f"\tmov.b64 {{%agt_plo, %agt_phi}}, %agt_d;\n"
                f"\tsetp.lt.u32 %agt_q, %agt_plo, %agt_lim;\n")
    return record(f"%agt_b{k}, %agt_e, {sreg}, %agt_w", w, pre)

def end_x4_64(k, sreg, site, it):
    return end_x4(k, sreg, site, it, ptr="64")

def end_x4_pre(k, sreg, site, it):
    return end_x4(k, sreg, site, it, pre=True)

def begin_x4b(k, it):
    """the iteration is captured at the begin marker (before the clock), so
    the loop's own induction update is free to move"""
    return ((f"\txor.b32 %agt_t{k + 12}, {it}, -2147483648;\n" if it else "") +
            f"\tmov.u32 %agt_b{k}, %clock;\n")

def end_x4b(k, sreg, site, it, pre=True):
    w = f"%agt_t{k + 12}" if it else "%agt_ni"
    return record(f"%agt_b{k}, %agt_e, {sreg}, {w}", pre=pre)

def end_x4b_post(k, sreg, site, it):
    return end_x4b(k, sreg, site, it, pre=False)

def begin_x4c(k, it):
    """x4b, and the store predicate is computed at the begin marker"""
    return ((f"\txor.b32 %agt_t{k + 12}, {it}, -2147483648;\n" if it else "") +
            "\tsetp.lt.u32 %agt_q, %agt_plo, %agt_lim;\n"
            f"\tmov.u32 %agt_b{k}, %clock;\n")

def end_x4c(k, sreg, site, it):
    w = f"%agt_t{k + 12}" if it else "%agt_ni"
    return record(f"%agt_b{k}, %agt_e, {sreg}, {w}", setp=False)

def end_x4d(k, sreg, site, it):
    """x4c with the pointer advanced before the store"""
    w = f"%agt_t{k + 12}" if it else "%agt_ni"
    return record(f"%agt_b{k}, %agt_e, {sreg}, {w}", pre=True, setp=False)

def end_clk2v(k, sreg, site, it):
    return (f"\tmov.u32 %agt_e, %clock;\n"
            f"\tsub.u32 %agt_t15, %agt_e, %agt_b{k};\n"
            f"\txor.b32 %agt_acc, %agt_acc, %agt_t15;\n")

def end_pack(k, sreg, site, it):
    w = (f"\tadd.u32 %agt_w, {it}, {site << 24};\n" if it else
         f"\tmov.u32 %agt_w, {(site << 24) | 0xffffff};\n")
    return record(f"%agt_b{k}, %agt_e, %agt_w, %agt_z", w)

def end_v2(k, sreg, site, it):
    return record(f"%agt_b{k}, %agt_e", vec="v2")

def end_clk(k, sreg, site, it):
    return (f"\tmov.u32 %agt_e, %clock;\n"
            f"\tsub.u32 %agt_t15, %agt_e, %agt_b{k};\n"
            f"\tadd.u32 %agt_acc, %agt_acc, %agt_t15;\n")

def none(*a):
    return ""

DESIGNS = {
    # name: (begin, end, prologue+epilogue?, pad)
    "new-anchors": (none, none, True, 0),
    "new-v4": (begin_clock, end_v4, True, 0),
    "new-v4-itcopy": (begin_itcopy, end_v4_itcopy, True, 0),
    "x4": (begin_clock, end_x4, True, 0),
    "x4-p64": (begin_clock, end_x4_64, True, 0),
    "x4-pre": (begin_clock, end_x4_pre, True, 0),
    "x4b": (begin_x4b, end_x4b, True, 0),
    "x4b-post": (begin_x4b, end_x4b_post, True, 0),
    "x4c": (begin_x4c, end_x4c, True, 0),
    "x4d": (begin_x4c, end_x4d, True, 0),
    "clk2v": (begin_clock, end_clk2v, True, 0),
    "new-pack": (begin_clock, end_pack, True, 0),
    "new-v2": (begin_clock, end_v2, True, 0),
    "new-clocks": (begin_clock, end_clk, True, 0),
    "pad4": (none, none, False, 4),
    "pad8": (none, none, False, 8),
}

def make(src, design):
    bfn, efn, probes, pad = DESIGNS[design]
    out = []
    if probes:
        src = src.replace(".address_size 64\n",
                          ".address_size 64\n\n.const .align 8 .b8 __argus_trace[32];\n", 1)
    kernels = re.split(r"(?=\.visible \.entry )", src)
    site_base = 0
    for kt in kernels:
        if not kt.startswith(".visible .entry"):
            out.append(kt)
            continue
        regions, sites = {}, {}
        def region_index(rid):
            if rid not in regions:
                regions[rid] = len(regions) + 1
            return regions[rid]
        iters = {}
        lines = kt.split("\n")
        res = []
        opened = False
        for ln in lines:
            if ln == "{" and not opened:
                opened = True
                res.append(ln)
                if probes:
                    res.append(REGS + PROLOGUE.replace("SITE0", str(site_base)).replace(
                        "SITE1", str(site_base + 1)))
                if pad:
                    # never-taken stores ptxas must keep: they move the kernel's
                    # own code by pad instructions (code placement)
                    res.append("\t.reg .pred %agt_never;\n\t.reg .b32 %agt_pv;\n"
                               "\t.reg .b64 %agt_pa;\n"
                               "\tmov.u32 %agt_pv, %tid.x;\n"
                               "\tcvt.u64.u32 %agt_pa, %agt_pv;\n"
                               "\tsetp.eq.u32 %agt_never, %agt_pv, 4096;\n")
                    for i in range(pad):
                        res.append(f"\t@%agt_never st.global.u32 [%agt_pa+{4096*i}], %agt_pv;\n")
                continue
            m = re.match(r"\s*// @argus begin (\S+) (\S+)(?: (%\w+))?", ln)
            if m and probes:
                k = region_index(m.group(1))
                iters[m.group(1)] = m.group(3)
                res.append(ln)
                res.append(bfn(k, m.group(3)))
                continue
            m = re.match(r"\s*// @argus end (\S+) (\S+)", ln)
            if m and probes:
                k = region_index(m.group(1))
                s = len(sites)
                sites[m.group(1)] = s
                res.append(ln)
                res.append(efn(k, f"%agt_s{s}", site_base + s, iters.get(m.group(1))))
                continue
            if ln.strip() == "ret;" and probes:
                res.append(EPILOGUE.replace("RECSHIFT", "4"))
            res.append(ln)
        site_base += 2
        out.append("\n".join(res))
    return "".join(out)

# --from-traced designs: the shipped end marker is
#   mov.u32 %agt_e, %clock; <address>; @%agt_q st.global.v4.u32 [%agt_a], {B, %agt_e, SITE, I};
# The begin marker wrote B (and I) right after the previous record's store,
# so it waits until that store has read its registers. A design below gives
# the store fresh registers written at the end marker, by a select on the
# store's own predicate (a value ptxas cannot fold: when %agt_q is false
# nothing is stored, so the select's other arm is never seen).
STORE = re.compile(r"\t@%agt_q st\.global\.v4\.u32 \[%agt_a\], \{(%agt_b\d+), %agt_e, (\w+), (%?\w+)\};\n")

def traced_sel(which):
    def edit(m):
        b, site, it = m.group(1), m.group(2), m.group(3)
        pre = ""
        if "b" in which:
            pre += f"\tselp.b32 %agt_t14, {b}, 0, %agt_q;\n"
            b = "%agt_t14"
        if "i" in which and it.startswith("%"):
            pre += f"\tselp.b32 %agt_t15, {it}, 0, %agt_q;\n"
            it = "%agt_t15"
        return pre + f"\t@%agt_q st.global.v4.u32 [%agt_a], {{{b}, %agt_e, {site}, {it}}};\n"
    return edit

def traced_acc(which):
    """the selects of traced_sel, and the begin values folded into an
    accumulator after the store, so each stays live past its select and
    ptxas cannot give the select's result the begin value's register (it
    did in traced_sel: SEL R4, R4, RZ, P0); the accumulator is stored in the
    warp's metadata (pad[0]) at exit"""
    sel = traced_sel(which)
    def edit(m):
        b, it = m.group(1), m.group(3)
        folds = [b] if "b" in which else []
        if "i" in which and it.startswith("%"):
            folds.append(it)
        return sel(m) + "".join(f"\txor.b32 %agt_acc, %agt_acc, {v};\n" for v in folds)
    return edit

def traced_acc_iter_end(m):
    """acc-b, and the iteration's complement computed at the end marker from
    a plain copy taken at the begin marker (see iter_at_begin_copy)"""
    b, site, it = m.group(1), m.group(2), m.group(3)
    pre = f"\tselp.b32 %agt_t14, {b}, 0, %agt_q;\n"
    if it.startswith("%"):
        pre += (f"\tnot.b32 %agt_t15, {it};\n"
                f"\tselp.b32 %agt_t15, %agt_t15, 0, %agt_q;\n")
        it = "%agt_t15"
    return (pre + f"\t@%agt_q st.global.v4.u32 [%agt_a], {{%agt_t14, %agt_e, {site}, {it}}};\n"
            f"\txor.b32 %agt_acc, %agt_acc, {b};\n")

def traced_sticky(m):
    """every register the store reads stays live until the next record of
    the same site, so ptxas cannot hand it to other code right after the
    store (in acc-b-ie it gave one to the loop's next constant load, which
    then waited for the store): the previous record's words are folded into
    the accumulator just before they are rewritten; the site word is a
    register set once (from the descriptor's zero pad word, a value ptxas
    cannot fold) instead of a constant it rematerializes"""
    b, site, it = m.group(1), m.group(2), m.group(3)
    n = b[len("%agt_b"):]
    w = [f"%agt_w{n}_{j}" for j in range(4)]
    i = it if it.startswith("%") else "%agt_z"
    return (f"\t// sticky {n} {site}\n"
            f"\txor.b32 %agt_acc, %agt_acc, {w[0]};\n"
            f"\txor.b32 %agt_acc, %agt_acc, {w[1]};\n"
            f"\txor.b32 %agt_acc, %agt_acc, {w[3]};\n"
            f"\tmov.u32 {w[1]}, %clock;\n"
            f"\tselp.b32 {w[0]}, {b}, 0, %agt_q;\n"
            f"\tselp.b32 {w[3]}, {i}, 0, %agt_q;\n"
            f"\t@%agt_q st.global.v4.u32 [%agt_a], {{{w[0]}, {w[1]}, {w[2]}, {w[3]}}};\n")

STICKY_STORE = re.compile(r"\tmov\.u32 %agt_e, %clock;\n((?:\t(?:cvt|add)[^\n]*\n)*)"
                          r"(\t@%agt_q st\.global\.v4\.u32 [^\n]*\n)")

def sticky(src):
    """rewrite the product's end markers for traced_sticky and declare and
    set the per-site words in each kernel's prologue"""
    src = STICKY_STORE.sub(lambda m: m.group(1) + STORE.sub(traced_sticky, m.group(2)), src)
    out = []
    for kt in re.split(r"(?=\.visible \.entry )", src):
        bs = sorted(set(re.findall(r"%agt_w(\d+)_0", kt)), key=int)
        if bs:
            decl = "".join(f"\t.reg .b32 %agt_w{n}_<4>;\n" for n in bs) + "\t.reg .b32 %agt_z;\n"
            sites = dict(re.findall(r"// sticky (\d+) (\w+)", kt))
            init = "\tld.const.u32 %agt_z, [__argus_trace+28];\n"
            for n in bs:
                init += (f"\tmov.u32 %agt_w{n}_0, 0;\n\tmov.u32 %agt_w{n}_1, 0;\n"
                         f"\tmov.u32 %agt_w{n}_3, 0;\n"
                         f"\tadd.u32 %agt_w{n}_2, %agt_z, {sites[n]};\n")
            kt = kt.replace(ACC_DECL[1], ACC_DECL[1] + decl, 1)
            kt = kt.replace(ACC_INIT[1], ACC_INIT[1] + init, 1)
        out.append(kt)
    return "".join(out)

def traced_opaque(m):
    """acc-bi with an iteration word ptxas cannot recompute from the loop's
    induction register: the begin marker computes ~(iter ^ m), m being a
    value that is 0 at run time but unknown to ptxas (the record capacity
    in bytes shifted right by 31; the host keeps it under 2^31), see
    iter_opaque"""
    b, site, it = m.group(1), m.group(2), m.group(3)
    pre = f"\tselp.b32 %agt_t14, {b}, 0, %agt_q;\n"
    post = f"\txor.b32 %agt_acc, %agt_acc, {b};\n"
    if it.startswith("%"):
        pre += f"\tselp.b32 %agt_t15, {it}, 0, %agt_q;\n"
        post += f"\txor.b32 %agt_acc, %agt_acc, {it};\n"
        it = "%agt_t15"
    return (pre + f"\t@%agt_q st.global.v4.u32 [%agt_a], {{%agt_t14, %agt_e, {site}, {it}}};\n"
            + post)

def iter_opaque(src):
    src = src.replace("\tmov.u32 %agt_k, 0;\n",
                      "\tmov.u32 %agt_k, 0;\n\t.reg .b32 %agt_m;\n\tshr.u32 %agt_m, %agt_cl, 31;\n", 1)
    src = re.sub(r"\tnot\.b32 (%agt_i\d+), ([^;]+);",
                 lambda m: f"\tlop3.b32 {m.group(1)}, {m.group(2)}, %agt_m, 0, 0xC3;", src)
    return src

def traced_sticky2(m):
    """traced_sticky with acc-opaque's words: the select sources (begin
    clock, opaque iteration) cannot be recomputed, and the site word is
    m + site, set once per site"""
    b, site, it = m.group(1), m.group(2), m.group(3)
    n = b[len("%agt_b"):]
    w = [f"%agt_w{n}_{j}" for j in range(4)]
    i = it if it.startswith("%") else "%agt_m"
    return (f"\t// sticky {n} {site}\n"
            f"\txor.b32 %agt_acc, %agt_acc, {w[0]};\n"
            f"\txor.b32 %agt_acc, %agt_acc, {w[1]};\n"
            f"\txor.b32 %agt_acc, %agt_acc, {w[3]};\n"
            f"\tmov.u32 {w[1]}, %clock;\n"
            f"\tselp.b32 {w[0]}, {b}, 0, %agt_q;\n"
            f"\tselp.b32 {w[3]}, {i}, 0, %agt_q;\n"
            f"\t@%agt_q st.global.v4.u32 [%agt_a], {{{w[0]}, {w[1]}, {w[2]}, {w[3]}}};\n")

def sticky2(src):
    out = []
    for kt in re.split(r"(?=\.visible \.entry )", src):
        kt = iter_opaque(kt)
        kt = STICKY_STORE.sub(lambda m: m.group(1) + STORE.sub(traced_sticky2, m.group(2)), kt)
        bs = sorted(set(re.findall(r"%agt_w(\d+)_0", kt)), key=int)
        if bs:
            decl = "".join(f"\t.reg .b32 %agt_w{n}_<4>;\n" for n in bs)
            sites = dict(re.findall(r"// sticky (\d+) (\w+)", kt))
            init = ""
            for n in bs:
                init += (f"\tmov.u32 %agt_w{n}_0, 0;\n\tmov.u32 %agt_w{n}_1, 0;\n"
                         f"\tmov.u32 %agt_w{n}_3, 0;\n"
                         f"\tadd.u32 %agt_w{n}_2, %agt_m, {sites[n]};\n")
            kt = kt.replace(ACC_DECL[1], ACC_DECL[1] + decl, 1)
            kt = kt.replace("\tshr.u32 %agt_m, %agt_cl, 31;\n", "\tshr.u32 %agt_m, %agt_cl, 31;\n" + init, 1)
        out.append(kt)
    return "".join(out)

BEGIN_NOT = re.compile(r"\tnot\.b32 (%agt_i\d+), ")

def iter_at_begin_copy(src):
    return BEGIN_NOT.sub(lambda m: f"\tmov.b32 {m.group(1)}, ", src)

ACC_DECL = ("\t.reg .pred %agt_p, %agt_q;\n",
            "\t.reg .pred %agt_p, %agt_q;\n\t.reg .b32 %agt_acc;\n")
ACC_INIT = ("\tmov.u32 %agt_k, 0;\n", "\tmov.u32 %agt_k, 0;\n\tmov.u32 %agt_acc, 0;\n")
ACC_EXIT = re.compile(r"(\t@%agt_p st\.global\.v4\.u32 \[%agt_x\+32\], [^\n]*\n)")

def with_acc(src):
    src = src.replace(*ACC_DECL).replace(*ACC_INIT)
    return ACC_EXIT.sub(lambda m: m.group(1) + "\t@%agt_p st.global.u32 [%agt_x+52], %agt_acc;\n", src)

TRACED_DESIGNS = {
    "shipped": None,
    "sel-bi": traced_sel("bi"),
    "sel-b": traced_sel("b"),
    "sel-i": traced_sel("i"),
    "acc-bi": traced_acc("bi"),
    "acc-b": traced_acc("b"),
    "acc-b-ie": traced_acc_iter_end,
    "acc-sticky": "sticky",
    "acc-opaque": traced_opaque,
    "sticky2": "sticky2",
}

def main():
    if sys.argv[1] == "--from-traced":
        src = open(sys.argv[2]).read()
        for d, fn in TRACED_DESIGNS.items():
            if fn == "sticky":
                out = sticky(with_acc(src))
            elif fn == "sticky2":
                out = sticky2(with_acc(src))
            else:
                out = src if fn is None else STORE.sub(fn, src)
                if d.startswith("acc"):
                    out = with_acc(out)
            if d == "acc-opaque":
                out = "".join(iter_opaque(k) for k in re.split(r"(?=\.visible \.entry )", out))
            if d.endswith("-ie"):
                out = iter_at_begin_copy(out)
            assert fn is None or out != src, "no end marker matched"
            with open(f"{sys.argv[3]}/{d}.ptx", "w") as f:
                f.write(out)
        return
    src = open(sys.argv[1]).read()
    for d in DESIGNS:
        with open(f"{sys.argv[2]}/{d}.ptx", "w") as f:
            f.write(make(src, d))

if __name__ == "__main__":
    main()
