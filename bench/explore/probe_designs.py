#!/usr/bin/env python3
"""probe_designs.py - hand-made probe designs for the tracing-overhead benchmark.

Reads the trace-free overhead PTX (examples/overhead compiled with markers)
and writes one PTX module per design, each with the same descriptor symbol
as the real traced variant, so bench/trace_overhead can time them side by
side with `--candidate NAME=FILE`. Exploration only: the product's probe is
src/ptx/xform_trace.c; this script is how its design was chosen
(bench/RESULTS.md, "Probe designs").

  probe_designs.py TRACE_FREE.ptx OUTDIR
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

def main():
    src = open(sys.argv[1]).read()
    for d in DESIGNS:
        with open(f"{sys.argv[2]}/{d}.ptx", "w") as f:
            f.write(make(src, d))

if __name__ == "__main__":
    main()
