#!/usr/bin/env python3
"""probe_edits.py - probe designs made by editing the product's traced PTX.

  probe_edits.py TRACED.ptx OUTDIR

TRACED.ptx is `argus variant overhead.ptx --kind traced` (the overhead
benchmark's PTX, build/tests/data/ptx/overhead.ptx). Each design changes
the shipped probe in one respect and leaves the rest where ptxas puts it
for the product, so `trace_overhead --candidate NAME=FILE[:check]` times
exactly that change side by side with the product (bench/RESULTS.md,
"Probe designs, second round"). Exploration only: the product's probe is
src/ptx/xform_trace.c. The designs of round 1 edit the probe of commit
f6bd823 (the record address computed at the end marker: the argus of
701948d makes it); those of rounds 2 and 3 the probe of 49e9e45 (the
address at the begin marker: the argus of c44c1f1 makes it); those of
round 4 the probe of b96d648 (evidence format 3, round 3's spbs); those of
round 5 the same probe as made by the argus of ce017b3 (before the prologue
moved after the kernel's leading code); those of round 6 the probe of
d45e800 (the prologue after the kernel's leading code). Given
the trace-free PTX (`--kind trace-free`), it writes round 0: the trace-free
build moved by 1-8 never-taken stores (placement alone). The script writes
the designs that fit the input.
"""
import re
import sys

# ---- round 1 (base: the f6bd823 probe). Its end marker is
#   mov.u32 %agt_e, %clock; <address>; @%agt_q st.global.v4.u32 [%agt_a], {B, %agt_e, SITE, I};
# The begin marker writes B (and I) right after the previous record's store,
# so it waits until that store has read its registers (ncu: long_sb on the
# loop's first instruction). The designs below try to give the store
# registers nothing rewrites soon: a select on the store's own predicate
# (ptxas cannot fold it: when %agt_q is false nothing is stored), values
# kept live past the store by an accumulator stored at exit, values ptxas
# cannot recompute.
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

STICKY_STORE = re.compile(r"\tmov\.u32 %agt_e, %clock;\n((?:\t(?:cvt|add)[^\n]*\n)*)"
                          r"(\t@%agt_q st\.global\.v4\.u32 [^\n]*\n)")

def sticky2(kt):
    """one kernel's end markers rewritten for traced_sticky2, its per-site
    words declared and set after the prologue's opaque zero"""
    kt = iter_opaque(kt)
    kt = STICKY_STORE.sub(lambda m: m.group(1) + STORE.sub(traced_sticky2, m.group(2)), kt)
    bs = sorted(set(re.findall(r"%agt_w(\d+)_0", kt)), key=int)
    if not bs:
        return kt
    decl = "".join(f"\t.reg .b32 %agt_w{n}_<4>;\n" for n in bs)
    sites = dict(re.findall(r"// sticky (\d+) (\w+)", kt))
    init = "".join(f"\tmov.u32 %agt_w{n}_0, 0;\n\tmov.u32 %agt_w{n}_1, 0;\n"
                   f"\tmov.u32 %agt_w{n}_3, 0;\n"
                   f"\tadd.u32 %agt_w{n}_2, %agt_m, {sites[n]};\n" for n in bs)
    kt = kt.replace(ACC_DECL[1], ACC_DECL[1] + decl, 1)
    return kt.replace("\tshr.u32 %agt_m, %agt_cl, 31;\n", "\tshr.u32 %agt_m, %agt_cl, 31;\n" + init, 1)

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


# ---- stores of another kind (round 1)
def store_kind(kind):
    def edit(src):
        return src.replace("@%agt_q st.global.v4.u32", f"@%agt_q {kind}.v4.u32")
    return edit

def two_v2(src):
    """the record as two 8-byte stores"""
    return re.sub(r"\t@%agt_q st\.global\.v4\.u32 \[%agt_a\], \{([^,]+), ([^,]+), ([^,]+), ([^}]+)\};",
                  lambda m: f"\t@%agt_q st.global.v2.u32 [%agt_a], {{{m.group(1)}, {m.group(2)}}};\n"
                            f"\t@%agt_q st.global.v2.u32 [%agt_a+8], {{{m.group(3)}, {m.group(4)}}};", src)

# ---- the record address at the begin marker (round 1: ab-after is what
# the product now emits; ab-before puts it before the iteration and clock)
ADDR = "\tcvt.u64.u32 %agt_a, %agt_k;\n\tadd.u64 %agt_a, %agt_a, %agt_rb;\n"
LEAF_BEGIN = re.compile(r"(\tnot\.b32 %agt_i\d+, [^;]+;\n)(\tmov\.u32 %agt_b\d+, %clock;\n)")
LEAF_END = re.compile(r"(\tmov\.u32 %agt_e, %clock;\n)" + re.escape(ADDR) +
                      r"(\tadd\.u32 %agt_k, %agt_k, 16;\n\t@%agt_q st\.global\.v4\.u32 "
                      r"\[%agt_a\], \{%agt_b\d+, %agt_e, \w+, %agt_i)")

def addr_at_begin(after):
    """for the regions with an iteration operand (step: nothing between its
    begin and its end records), the address at the begin marker"""
    def edit(src):
        src = LEAF_BEGIN.sub(lambda m: m.group(1) + m.group(2) + ADDR if after
                             else ADDR + m.group(1) + m.group(2), src)
        return LEAF_END.sub(lambda m: m.group(1) + m.group(2), src)
    return edit

# ---- round 2 (base: the 49e9e45 probe)
READY_STORE = re.compile(r"(\t@%agt_q st\.global\.v4\.u32 \[%agt_a\], \{%agt_b\d+, %agt_e, \d+, "
                         r"%agt_i\d+\};\n)\tsetp\.lt\.u32 %agt_q, %agt_k, %agt_cl;\n")
BEGIN_ADDR = re.compile(r"(\tnot\.b32 %agt_i\d+, [^;]+;\n\tmov\.u32 %agt_b\d+, %clock;\n" +
                        re.escape(ADDR) + ")")

def pred_at_begin(src):
    """qb: the store predicate computed at the begin marker, not after the
    previous store (right before the loop's back branch)"""
    src = READY_STORE.sub(r"\1", src)
    return re.sub(r"(\tmov\.u32 %agt_b\d+, %clock;\n" + re.escape(ADDR) + ")",
                  lambda m: m.group(1) + "\tsetp.lt.u32 %agt_q, %agt_k, %agt_cl;\n", src)

def k_at_begin(src):
    """kb: k advanced at the begin marker (valid here: nothing records
    between step's begin and end)"""
    src = re.sub(r"(\tmov\.u32 %agt_e, %clock;\n)\tadd\.u32 %agt_k, %agt_k, 16;\n"
                 r"(\t@%agt_q st\.global\.v4\.u32 \[%agt_a\], \{%agt_b\d+, %agt_e, \d+, %agt_i\d+\};\n)",
                 r"\1\2", src)
    return BEGIN_ADDR.sub(lambda m: m.group(1) + "\tadd.u32 %agt_k, %agt_k, 16;\n", src)

def eight_bytes(src):
    """w2: 8-byte records {begin, end} (no site, no iteration: timing only,
    the records fail the check)"""
    return re.sub(r"st\.global\.v4\.u32 \[%agt_a\], \{(%agt_b\d+), %agt_e, \d+, %agt_i\d+\}",
                  r"st.global.v2.u32 [%agt_a], {\1, %agt_e}", src)

def per_kernel(fn):
    def edit(src):
        return "".join(fn(k) for k in re.split(r"(?=\.visible \.entry )", src))
    return edit

def site_registers(kt):
    """sr: each site word a register set once in the prologue, from a value
    ptxas cannot fold (capacity >> 31, 0 at run time), instead of a constant
    it rematerializes right before the store"""
    if "// argus: record site" not in kt:
        return kt
    sites = sorted(set(int(x) for x in re.findall(r"// argus: record site (\d+)", kt)))
    kt = kt.replace("\tmov.u32 %agt_k, 0;\n", "\tmov.u32 %agt_k, 0;\n\t.reg .b32 %agt_m, %agt_sr<64>;\n"
                    "\tshr.u32 %agt_m, %agt_cl, 31;\n" +
                    "".join(f"\tadd.u32 %agt_sr{n}, %agt_m, {n};\n" for n in sites), 1)
    return re.sub(r"(\{%agt_\w+, %agt_e, )(\d+)(, )", lambda m: m.group(1) + "%agt_sr" + m.group(2) + m.group(3), kt)

def site_at_begin(kt):
    """sw: for an end marker that reuses the begin marker's address, the
    site word computed at that begin marker (capacity >> 31 + site)"""
    kt = kt.replace("\tmov.u32 %agt_k, 0;\n", "\tmov.u32 %agt_k, 0;\n\t.reg .b32 %agt_w<64>;\n", 1)
    ends = {}
    def end(m):
        ends[m.group(2)] = m.group(3)
        return m.group(1) + f"%agt_w{m.group(2)}" + m.group(4)
    kt = re.sub(r"(\tmov\.u32 %agt_e, %clock;\n\tadd\.u32 %agt_k, %agt_k, 16;\n\t@%agt_q "
                r"st\.global\.v4\.u32 \[%agt_a\], \{%agt_b(\d+), %agt_e, )(\d+)(, )", end, kt)
    for r, n in ends.items():
        at = f"\tmov.u32 %agt_b{r}, %clock;\n" + ADDR
        kt = kt.replace(at, at + f"\tshr.u32 %agt_w{r}, %agt_cl, 31;\n\tadd.u32 %agt_w{r}, %agt_w{r}, {n};\n")
    return kt

def padded(n, base=None):
    """the code moved by n never-taken stores after the prologue (placement)"""
    def edit(src):
        if base:
            src = base(src)
        anchor = "\tmov.u32 %agt_sl, %agt_t8;\n"
        pad = ("\t.reg .pred %agt_nv;\n\tsetp.eq.u32 %agt_nv, %agt_cl, 1;\n" +
               "".join(f"\t@%agt_nv st.global.u32 [%agt_rb+{4 * i}], %agt_k;\n" for i in range(n)))
        return src.replace(anchor, anchor + pad)
    return edit

def clock_source(src_text):
    """noclk / gt: the markers' clock reads replaced by an ALU value (no
    clock read at all: records are garbage, timing only) or by
    %globaltimer_lo"""
    def edit(src):
        return re.sub(r"\tmov\.u32 (%agt_(?:b\d+|e)), %clock;\n",
                      lambda m: f"\t{src_text.format(m.group(1))};\n", src)
    return edit

def deferred(kt):
    """dfr: the record of the region with an iteration (step) prepared at its
    end marker in registers of its own and stored by the next marker after
    that marker's clock read (step's next begin, or work's end), so that the
    store's register read overlaps the loop's own latencies"""
    m = re.search(r"\tnot\.b32 %agt_i(\d+), [^;]+;\n\tmov\.u32 %agt_b(\d+), %clock;\n", kt)
    if not m:
        return kt
    r = m.group(2)
    kt = kt.replace("\t.reg .pred %agt_p, %agt_q;\n", "\t.reg .pred %agt_p, %agt_q, %agt_qp;\n"
                    "\t.reg .b32 %agt_Q<4>;\n\t.reg .b64 %agt_ap;\n", 1)
    kt = kt.replace("\tmov.u32 %agt_k, 0;\n", "\tmov.u32 %agt_k, 0;\n\tsetp.ne.u32 %agt_qp, %agt_k, %agt_k;\n", 1)
    flush = "\t@%agt_qp st.global.v4.u32 [%agt_ap], {%agt_Q0, %agt_Q1, %agt_Q2, %agt_Q3};\n"
    end = re.compile(r"\tmov\.u32 %agt_e, %clock;\n\tadd\.u32 %agt_k, %agt_k, 16;\n\t@%agt_q "
                     r"st\.global\.v4\.u32 \[%agt_a\], \{%agt_b" + r + r", %agt_e, (\d+), %agt_i" + r +
                     r"\};\n\tsetp\.lt\.u32 %agt_q, %agt_k, %agt_cl;\n")
    kt = end.sub(lambda e: f"\tmov.u32 %agt_Q1, %clock;\n\tmov.u32 %agt_Q0, %agt_b{r};\n"
                 f"\tmov.u32 %agt_Q2, {e.group(1)};\n\tmov.u32 %agt_Q3, %agt_i{r};\n"
                 "\tmov.b64 %agt_ap, %agt_a;\n\tmov.pred %agt_qp, %agt_q;\n"
                 "\tadd.u32 %agt_k, %agt_k, 16;\n\tsetp.lt.u32 %agt_q, %agt_k, %agt_cl;\n", kt)
    at = f"\tmov.u32 %agt_b{r}, %clock;\n" + ADDR
    kt = kt.replace(at, at + flush)
    return re.sub(r"(// argus: record site \d+ \(end work\)\n\tmov\.u32 %agt_e, %clock;\n)",
                  lambda e: e.group(1) + flush, kt)

def on_stores(fn):
    return lambda src: STORE.sub(fn, src)

ROUND1 = {
    "sel-bi": on_stores(traced_sel("bi")),
    "acc-b": lambda s: with_acc(STORE.sub(traced_acc("b"), s)),
    "acc-bi": lambda s: with_acc(STORE.sub(traced_acc("bi"), s)),
    "acc-b-ie": lambda s: iter_at_begin_copy(with_acc(STORE.sub(traced_acc_iter_end, s))),
    "acc-opaque": lambda s: per_kernel(iter_opaque)(with_acc(STORE.sub(traced_opaque, s))),
    "sticky2": lambda s: per_kernel(sticky2)(with_acc(s)),
    "st-cs": store_kind("st.global.cs"),
    "st-wt": store_kind("st.global.wt"),
    "st-L1": store_kind("st.global.L1::no_allocate"),
    "st-relaxed": store_kind("st.relaxed.cta.global"),
    "st-2v2": two_v2,
    "ab-after": addr_at_begin(True),
    "ab-before": addr_at_begin(False),
}
ROUND2 = {
    "qb": pred_at_begin,
    "kb": k_at_begin,
    "w2": eight_bytes,
    "sr": per_kernel(site_registers),
    "sw": per_kernel(site_at_begin),
    "noclk": clock_source("add.u32 {}, %agt_k, 7"),
    "gt": clock_source("mov.u32 {}, %globaltimer_lo"),
    "dfr": per_kernel(deferred),
}
for _n in range(1, 5):
    ROUND2[f"new-p{_n}"] = padded(_n)
    ROUND2[f"sw-p{_n}"] = padded(_n, per_kernel(site_at_begin))

# ---- round 3 (base: the 49e9e45 probe, as round 2; this session's designs).
# What the store predicate, the per-record store and the record's shape cost.
PRED = "\tsetp.lt.u32 %agt_q, %agt_k, %agt_cl;\n"
REC = re.compile(r"\tmov\.u32 %agt_e, %clock;\n(?:" + re.escape(ADDR) + r")?\tadd\.u32 %agt_k, %agt_k, 16;\n"
                 r"\t@%agt_q st\.global\.v4\.u32 \[%agt_a\], \{%agt_b(\d+), %agt_e, (\d+), ([^}]+)\};\n" +
                 re.escape(PRED))
PRO_PRED = "\tmov.u32 %agt_k, 0;\n\tmov.b64 %agt_a, %agt_rb;\n" + PRED

def clamp_records(src):
    """clamp: no store predicate per record: the record address is
    base + min(k, trash), the warp's last slot a trash slot, and the store
    predicate (lane 0, bound) is set once at entry"""
    src = src.replace("selp.u32 %agt_cl, %agt_t7, 0, %agt_p;", "add.u32 %agt_cl, %agt_t7, -16;")
    src = src.replace(PRO_PRED, PRO_PRED.replace(PRED, "\tmov.pred %agt_q, %agt_p;\n"))
    src = src.replace("cvt.u64.u32 %agt_a, %agt_k;", "min.u32 %agt_t15, %agt_k, %agt_cl;\n\tcvt.u64.u32 %agt_a, %agt_t15;")
    return src.replace(PRED, "")

def clamp_sr(src):
    """clampsr: clamp with sr's site registers (their zero from the
    capacity, cap * 16 >> 31)"""
    out = per_kernel(site_registers)(clamp_records(src))
    return out.replace("shr.u32 %agt_m, %agt_cl, 31;", "shr.u32 %agt_m, %agt_t7, 31;")

def lane_records(src):
    """lanes: no store per record: record n is held in registers by lane
    n % 32 (predicated moves), and the warp stores 32 records at once (one
    coalesced 16-byte store per lane) when the 32nd is complete, and the
    partial group at exit"""
    labels = iter(range(1, 1000))
    def flush():
        n = next(labels)
        return ("\tadd.u32 %agt_k, %agt_k, 16;\n\tand.b32 %agt_sk, %agt_k, 496;\n"
                "\tsetp.eq.u32 %agt_s, %agt_sk, %agt_ln;\n\tsetp.ne.u32 %agt_f, %agt_sk, 0;\n"
                f"\t@%agt_f bra $Lagt_sk{n};\n\tadd.u32 %agt_fo, %agt_k, %agt_ln;\n"
                "\tsub.u32 %agt_fo, %agt_fo, 512;\n\tsetp.lt.u32 %agt_fq, %agt_fo, %agt_cl;\n"
                "\tcvt.u64.u32 %agt_fa, %agt_fo;\n\tadd.u64 %agt_fa, %agt_fa, %agt_rb;\n"
                "\t@%agt_fq st.global.v4.u32 [%agt_fa], {%agt_r0, %agt_r1, %agt_r2, %agt_r3};\n"
                f"$Lagt_sk{n}:\n")
    def kern(k):
        k = k.replace("\t.reg .pred %agt_p, %agt_q;\n",
                      "\t.reg .pred %agt_p, %agt_q, %agt_s, %agt_f, %agt_fq, %agt_p2;\n"
                      "\t.reg .b32 %agt_r<4>, %agt_ln, %agt_sk, %agt_fo;\n\t.reg .b64 %agt_fa;\n")
        k = k.replace("selp.u32 %agt_cl, %agt_t7, 0, %agt_p;",
                      "setp.ne.u32 %agt_p2, %agt_t1, 0;\n\tselp.u32 %agt_cl, %agt_t7, 0, %agt_p2;\n"
                      "\tmov.u32 %agt_ln, %laneid;\n\tshl.b32 %agt_ln, %agt_ln, 4;\n"
                      "\tmov.u32 %agt_sk, 0;\n\tsetp.eq.u32 %agt_s, %agt_ln, 0;")
        k = re.sub(r"\tnot\.b32 %agt_i\d+, ([^;]+);\n\tmov\.u32 %agt_b\d+, %clock;\n" + re.escape(ADDR),
                   r"\t@%agt_s not.b32 %agt_r3, \1;\n\t@%agt_s mov.u32 %agt_r0, %clock;\n", k)
        k = re.sub(r"\tmov\.u32 (%agt_b\d+), %clock;\n" + re.escape(ADDR), r"\tmov.u32 \1, %clock;\n", k)
        def rec(m):
            if m.group(3).startswith("%agt_i"):
                return ("\t@%agt_s mov.u32 %agt_r1, %clock;\n"
                        f"\t@%agt_s mov.u32 %agt_r2, {m.group(2)};\n" + flush())
            return (f"\tmov.u32 %agt_e, %clock;\n\t@%agt_s mov.u32 %agt_r0, %agt_b{m.group(1)};\n"
                    f"\t@%agt_s mov.u32 %agt_r1, %agt_e;\n\t@%agt_s mov.u32 %agt_r2, {m.group(2)};\n"
                    f"\t@%agt_s mov.u32 %agt_r3, {m.group(3)};\n" + flush())
        k = REC.sub(rec, k)
        return k.replace("\t// argus: warp exit anchors and counts\n",
                         "\tsetp.lt.u32 %agt_fq, %agt_ln, %agt_sk;\n\tsub.u32 %agt_fo, %agt_k, %agt_sk;\n"
                         "\tadd.u32 %agt_fo, %agt_fo, %agt_ln;\n"
                         "\tsetp.lt.and.u32 %agt_fq, %agt_fo, %agt_cl, %agt_fq;\n"
                         "\tcvt.u64.u32 %agt_fa, %agt_fo;\n\tadd.u64 %agt_fa, %agt_fa, %agt_rb;\n"
                         "\t@%agt_fq st.global.v4.u32 [%agt_fa], {%agt_r0, %agt_r1, %agt_r2, %agt_r3};\n"
                         "\t// argus: warp exit anchors and counts\n")
    return per_kernel(kern)(src)

def war_bound(src):
    """war0: timing bound on the store's register read: every record store
    reads loop-invariant registers only (the base, an opaque zero), while
    the clocks and the iteration fold into an accumulator stored at exit
    (records garbage: timing only)"""
    def kern(k):
        k = k.replace("\t.reg .pred %agt_p, %agt_q;\n", "\t.reg .pred %agt_p, %agt_q;\n\t.reg .b32 %agt_z, %agt_acc;\n")
        k = k.replace("\tmov.u32 %agt_sl, %agt_t8;\n",
                      "\tmov.u32 %agt_sl, %agt_t8;\n\tshr.u32 %agt_z, %agt_cl, 31;\n\tmov.u32 %agt_acc, 0;\n")
        def rec(m):
            out = f"\txor.b32 %agt_acc, %agt_acc, {m.group(1)};\n\txor.b32 %agt_acc, %agt_acc, %agt_e;\n"
            if m.group(3).startswith("%"):
                out += f"\txor.b32 %agt_acc, %agt_acc, {m.group(3)};\n"
            return out + "\t@%agt_q st.global.v4.u32 [%agt_rb], {%agt_z, %agt_z, %agt_z, %agt_z};\n"
        k = STORE.sub(rec, k)
        return k.replace("\t// argus: warp exit anchors and counts\n",
                         "\t@%agt_q st.global.u32 [%agt_rb+4], %agt_acc;\n\t// argus: warp exit anchors and counts\n")
    return per_kernel(kern)(src)

def split_records(half, opaque):
    """sp<half>[z]: each record taken at its begin marker, which stores one
    half of it, the end marker the other half into the same record (the
    address kept per region); no predicate per record (clamp's trash slot).
    half 'bi': begin {begin, ~iteration}, end {end, site}; 'bs': begin
    {begin, site}, end {end, ~iteration} (evidence format 3 is 'bs').
    opaque: the end's address an opaque copy (a + 0) instead of a move.
    The record layout differs from format 2: timing only"""
    def kern(k):
        k = k.replace("\t.reg .pred %agt_p, %agt_q;\n",
                      "\t.reg .pred %agt_p, %agt_q;\n\t.reg .b64 %agt_s<8>, %agt_z;\n\t.reg .b32 %agt_m;\n")
        k = k.replace("selp.u32 %agt_cl, %agt_t7, 0, %agt_p;", "add.u32 %agt_cl, %agt_t7, -16;")
        k = k.replace(PRO_PRED, PRO_PRED.replace(PRED, "\tmov.pred %agt_q, %agt_p;\n"
                      "\tshr.u32 %agt_m, %agt_t7, 31;\n\tcvt.u64.u32 %agt_z, %agt_m;\n"))
        nxt = ("\tadd.u32 %agt_k, %agt_k, 16;\n\tmin.u32 %agt_m, %agt_k, %agt_cl;\n"
               "\tcvt.u64.u32 %agt_a, %agt_m;\n\tadd.u64 %agt_a, %agt_a, %agt_rb;\n")
        sites = {m.group(1)[len("%agt_b"):]: (m.group(2), m.group(3)) for m in STORE.finditer(k)}
        def begin(r, iline):
            site, it = sites[r]
            first = f"{{%agt_b{r}, {it}}}" if half == "bi" else f"{{%agt_b{r}, {site}}}"
            keep = f"\tadd.u64 %agt_s{r}, %agt_a, %agt_z;\n" if opaque else f"\tmov.b64 %agt_s{r}, %agt_a;\n"
            return (iline + f"\tmov.u32 %agt_b{r}, %clock;\n\t@%agt_q st.global.v2.u32 [%agt_a], {first};\n"
                    + keep + nxt)
        k = re.sub(r"(\tnot\.b32 %agt_i\d+, [^;]+;\n)\tmov\.u32 %agt_b(\d+), %clock;\n" + re.escape(ADDR),
                   lambda m: begin(m.group(2), m.group(1)), k)
        k = re.sub(r"\tmov\.u32 %agt_b(\d+), %clock;\n" + re.escape(ADDR), lambda m: begin(m.group(1), ""), k)
        def end(m):
            second = f"{{%agt_e, {m.group(2)}}}" if half == "bi" else f"{{%agt_e, {m.group(3)}}}"
            return f"\tmov.u32 %agt_e, %clock;\n\t@%agt_q st.global.v2.u32 [%agt_s{m.group(1)}+8], {second};\n"
        return REC.sub(end, k)
    return per_kernel(kern)

ROUND3 = {
    "lanes": lane_records,
    "clamp": clamp_records,
    "clampsr": clamp_sr,
    "war0": war_bound,
    "spbi": split_records("bi", False),
    "spbs": split_records("bs", False),
    "spbiz": split_records("bi", True),
    "spbsz": split_records("bs", True),
}
for _d in ("clamp", "clampsr", "spbi", "spbs", "spbiz", "spbsz", "war0"):
    for _n in (1, 2, 3):
        ROUND3[f"{_d}-p{_n}"] = padded(_n, ROUND3[_d])
for _n in (1, 2, 3):
    ROUND3[f"tr-p{_n}"] = padded(_n)
    ROUND3[f"sr-p{_n}"] = padded(_n, per_kernel(site_registers))

# ---- round 4 (base: the format-3 probe of b96d648: records taken at the
# begin marker, written in two halves; the round-3 design spbs made product)
ADV = ("\tadd.u32 %agt_k, %agt_k, 16;\n\tmin.u32 %agt_m, %agt_k, %agt_cl;\n"
       "\tcvt.u64.u32 %agt_a, %agt_m;\n\tadd.u64 %agt_a, %agt_a, %agt_rb;\n")

def advance_first(src):
    """pre: the next record's address computed before the begin clock (into
    a register of its own) instead of after the first half's store"""
    src = src.replace("\t.reg .pred %agt_p, %agt_q;\n", "\t.reg .pred %agt_p, %agt_q;\n\t.reg .b64 %agt_an;\n")
    pat = re.compile(r"(\t(?:xor\.b32|mov\.u32) %agt_i\d+, [^;]+;\n)?\tmov\.u32 (%agt_b\d+), %clock;\n"
                     r"(\t@%agt_q st\.global\.v2\.u32 \[%agt_a\], \{%agt_b\d+, \d+\};\n)"
                     r"\tmov\.b64 (%agt_s\d+), %agt_a;\n" + re.escape(ADV))
    return pat.sub(lambda m: (m.group(1) or "") + ADV.replace("cvt.u64.u32 %agt_a", "cvt.u64.u32 %agt_an")
                   .replace("add.u64 %agt_a, %agt_a", "add.u64 %agt_an, %agt_an") +
                   f"\tmov.u32 {m.group(2)}, %clock;\n" + m.group(3) +
                   f"\tmov.b64 {m.group(4)}, %agt_a;\n\tmov.b64 %agt_a, %agt_an;\n", src)

def leaf_advance_at_end(src):
    """leafend: for a region with nothing between its begin and its end
    (step), the begin marker only stores the first half at the next
    record's address, and the end marker stores the second half at that
    address + 8 and then advances (no address copy per record)"""
    pat = re.compile(r"(\txor\.b32 %agt_i\d+, [^;]+;\n\tmov\.u32 %agt_b\d+, %clock;\n"
                     r"\t@%agt_q st\.global\.v2\.u32 \[%agt_a\], \{%agt_b\d+, \d+\};\n)"
                     r"\tmov\.b64 (%agt_s\d+), %agt_a;\n" + re.escape(ADV))
    regs = [m.group(2) for m in pat.finditer(src)]
    src = pat.sub(lambda m: m.group(1), src)
    for r in regs:
        src = re.sub(r"\t@%agt_q st\.global\.v2\.u32 \[" + r + r"\+8\], (\{[^}]+\});\n",
                     lambda m: f"\t@%agt_q st.global.v2.u32 [%agt_a+8], {m.group(1)};\n" + ADV, src)
    return src

def site_words(src):
    """sreg: each begin marker's site word a register set at entry from a
    value ptxas cannot fold (cap * 16 >> 31, 0 at run time)"""
    def kern(k):
        sites = sorted(set(int(x) for x in re.findall(r"\(record site (\d+)\)", k)))
        if not sites:
            return k
        k = k.replace("\tmov.u32 %agt_sl, %agt_t8;\n", "\tmov.u32 %agt_sl, %agt_t8;\n\t.reg .b32 %agt_w, %agt_sr<64>;\n"
                      "\tshr.u32 %agt_w, %agt_t7, 31;\n" +
                      "".join(f"\tadd.u32 %agt_sr{n}, %agt_w, {n};\n" for n in sites), 1)
        return re.sub(r"(st\.global\.v2\.u32 \[%agt_a\], \{%agt_b\d+, )(\d+)\}",
                      lambda m: m.group(1) + "%agt_sr" + m.group(2) + "}", k)
    return per_kernel(kern)(src)

def iteration_after_clock(src):
    """xafter: the begin marker reads the clock first, then takes the
    iteration"""
    return re.sub(r"(\txor\.b32 %agt_i\d+, [^;]+;\n)(\tmov\.u32 %agt_b\d+, %clock;\n)", r"\2\1", src)

ROUND4 = {"pre": advance_first, "leafend": leaf_advance_at_end, "sreg": site_words,
          "xafter": iteration_after_clock,
          "leafsreg": lambda s: site_words(leaf_advance_at_end(s))}
for _n in (1, 2, 3):
    ROUND4[f"new-p{_n}"] = padded(_n)
    for _d in ("pre", "leafend", "sreg", "leafsreg", "xafter"):
        ROUND4[f"{_d}-p{_n}"] = padded(_n, ROUND4[_d])

# ---- round 5 (base: the same b96d648 probe, the traced PTX of ce017b3's
# argus; this session's designs). Three groups: where the added time goes
# (parts of the probe removed: timing only, the records are not all kept),
# the prologue's place, and cheaper record addressing.
def kernels(fn):
    return per_kernel(lambda k: fn(k) if ".entry" in k else k)

PRO_END = "\t.reg .pred \t%p"
def prologue_late(k):
    """late: the prologue's code after the kernel's first global load, when
    that load comes before the first marker (the product since d45e800
    places it after the whole leading straight-line code)"""
    a, b = k.index("\tmov.u32 %agt_ce, %clock;\n"), k.index(PRO_END)
    pro, rest = k[a:b], k[:a] + k[b:]
    m = re.search(r"\tld\.global[^\n]*\n", rest)
    if not m or m.start() > rest.index("// @argus begin"):
        return k
    return rest[:m.end()] + pro + rest[m.end():]

def markers_removed(src):
    """anchors: every marker's probe code removed (prologue and exit only)"""
    out, skip = [], False
    for line in src.splitlines(True):
        if line.startswith("\t// argus: begin ") or line.startswith("\t// argus: end "):
            skip = True
            out.append(line)
            continue
        if skip and line.startswith("\t// end inline asm"):
            skip = False
        if not skip:
            out.append(line)
    return "".join(out)

def exit_removed(k):
    a = k.index("\t// argus: warp exit anchors and counts\n")
    return k[:a] + k[k.index("\tret;", a):]

def replaced(old, new):
    def edit(k):
        assert old in k, old
        return k.replace(old, new)
    return edit

RED = "\t@%agt_q red.global.max.u32 [%agt_x+48], %agt_t4;\n"
ST3 = "\t@%agt_p st.global.v4.u32 [%agt_x+32], {%agt_t7, %agt_t6, %agt_t9, %agt_t13};\n"
def red_last(k):
    return k.replace(RED, "").replace(ST3, ST3 + RED) if RED in k else k

def no_clock(k):
    """markers read no clock (their registers take the entry clock)"""
    return re.sub(r"\tmov\.u32 (%agt_[be]\d*), %clock;\n", r"\tmov.u32 \1, %agt_ce;\n", k)

def no_iteration(src):
    return re.sub(r"\txor\.b32 (%agt_i\d+), ([^,]+), 2147483648;\n", r"\tmov.u32 \1, 2147483648;\n", src)

def leaf_minus8(src):
    """lf8: a leaf region's end stores through the next record's address
    minus 8 (no address copy at the begin marker); two trash slots, so
    that address is a trash slot whenever the begin's was"""
    pat = re.compile(r"(\txor\.b32 %agt_i\d+, [^;]+;\n\tmov\.u32 %agt_b\d+, %clock;\n"
                     r"\t@%agt_q st\.global\.v2\.u32 \[%agt_a\], \{%agt_b\d+, \d+\};\n)"
                     r"\tmov\.b64 (%agt_s\d+), %agt_a;\n")
    regs = [m.group(2) for m in pat.finditer(src)]
    src = pat.sub(lambda m: m.group(1), src)
    for r in regs:
        src = src.replace(f"[{r}+8]", "[%agt_a+-8]")
    return src.replace("\tadd.u32 %agt_cl, %agt_t7, -16;\n", "\tadd.u32 %agt_cl, %agt_t7, -32;\n")

LO = ("\tadd.u32 %agt_k, %agt_k, 16;\n\tmin.u32 %agt_m, %agt_k, %agt_cl;\n"
      "\tmov.b64 %agt_a, {%agt_m, %agt_hi};\n")
def low_word(src):
    """lo32: records addressed by their low word only, {min(k, trash), hi}
    (no 64-bit add; needs a warp's slots inside one 4 GiB-aligned window)"""
    src = src.replace(ADV, LO)
    src = src.replace("\t.reg .pred %agt_p, %agt_q;\n",
                      "\t.reg .pred %agt_p, %agt_q;\n\t.reg .b32 %agt_lo0, %agt_hi;\n")
    old = ("\tshl.b32 %agt_t7, %agt_t0, 4;\n\tadd.u32 %agt_cl, %agt_t7, -16;\n\tmov.u32 %agt_k, 0;\n"
           "\tmov.b64 %agt_a, %agt_rb;\n")
    src = src.replace(old, "\tshl.b32 %agt_t7, %agt_t0, 4;\n\tmov.b64 {%agt_lo0, %agt_hi}, %agt_rb;\n"
                      "\tadd.u32 %agt_cl, %agt_t7, -16;\n\tadd.u32 %agt_cl, %agt_cl, %agt_lo0;\n"
                      "\tmov.u32 %agt_k, %agt_lo0;\n\tmov.b64 %agt_a, %agt_rb;\n")
    src = src.replace("\tcvt.u64.u32 %agt_x, %agt_cl;\n\tadd.u64 %agt_x, %agt_x, %agt_rb;\n",
                      "\tmov.b64 %agt_x, {%agt_cl, %agt_hi};\n")
    return src.replace("\tshr.u32 %agt_t6, %agt_k, 4;\n",
                       "\tsub.u32 %agt_t6, %agt_k, %agt_lo0;\n\tshr.u32 %agt_t6, %agt_t6, 4;\n")

def low_word_via_a(src):
    """lo32 with the high word taken from the address itself each time"""
    s = low_word(src).replace(LO, LO.replace("\tmov.b64 %agt_a, {%agt_m, %agt_hi};\n",
                                             "\tmov.b64 {%agt_lo1, %agt_hi1}, %agt_a;\n"
                                             "\tmov.b64 %agt_a, {%agt_m, %agt_hi1};\n"))
    return s.replace("\t.reg .b32 %agt_lo0, %agt_hi;\n", "\t.reg .b32 %agt_lo0, %agt_hi, %agt_lo1, %agt_hi1;\n")

def iteration_at_end(src):
    """xend: the begin marker copies the iteration, the end marker XORs it"""
    s = re.sub(r"\txor\.b32 (%agt_i\d+), ([^,]+), 2147483648;\n", r"\tmov.u32 \1, \2;\n", src)
    s = s.replace("\t.reg .pred %agt_p, %agt_q;\n", "\t.reg .pred %agt_p, %agt_q;\n\t.reg .b32 %agt_ix;\n")
    def kern(k):
        own = {sr: i for i, sr in re.findall(
            r"\tmov\.u32 (%agt_i\d+), [^;]+;\n\tmov\.u32 %agt_b\d+, %clock;\n"
            r"\t@%agt_q st\.global\.v2\.u32 \[%agt_a\], \{%agt_b\d+, \d+\};\n\tmov\.b64 (%agt_s\d+), %agt_a;", k)}
        return re.sub(r"\tmov\.u32 %agt_e, %clock;\n\t@%agt_q st\.global\.v2\.u32 \[(%agt_s\d+)\+8\], "
                      r"\{%agt_e, %agt_i\d+\};\n",
                      lambda m: f"\txor.b32 %agt_ix, {own[m.group(1)]}, 2147483648;\n"
                                f"\tmov.u32 %agt_e, %clock;\n"
                                f"\t@%agt_q st.global.v2.u32 [{m.group(1)}+8], {{%agt_e, %agt_ix}};\n", k)
    return per_kernel(kern)(s)

def on_anchors(fn):
    return lambda src: kernels(fn)(markers_removed(src))

L = kernels(prologue_late)
ROUND5 = {
    # where the time goes: the anchors alone, and parts of them removed
    "fixed": markers_removed,
    "fxlate": lambda s: L(markers_removed(s)),
    "fxnoexit": on_anchors(exit_removed),
    "fxnoanc": on_anchors(lambda k: k.replace("\tmov.u32 %agt_ce, %clock;\n", "\tmov.u32 %agt_ce, 0;\n")
                          .replace("\tmov.u32 %agt_ge, %globaltimer_lo;\n", "\tmov.u32 %agt_ge, 0;\n")),
    "fxnoconst": on_anchors(lambda k: k
        .replace("\tld.const.u64 %agt_a, [__argus_trace];\n", "\tmov.u64 %agt_a, 0;\n")
        .replace("\tld.const.v2.u32 {%agt_t0, %agt_t1}, [__argus_trace+16];\n",
                 "\tmov.u32 %agt_t0, 0;\n\tmov.u32 %agt_t1, 0;\n")
        .replace("\tld.const.u64 %agt_x, [__argus_trace+8];\n", "\tmov.u64 %agt_x, 0;\n")
        .replace("\tld.const.v4.u32 {%agt_t0, %agt_t1, %agt_t13, %agt_t14}, [__argus_trace+16];\n",
                 "\tmov.u32 %agt_t0, 0;\n\tmov.u32 %agt_t1, 0;\n\tmov.u32 %agt_t13, 0;\n"
                 "\tmov.u32 %agt_t14, 0;\n")),
    "xnogt": on_anchors(replaced("\tmov.u64 %agt_y, %globaltimer;\n", "\tmov.u64 %agt_y, 0;\n")),
    "xnoclk": on_anchors(replaced("\tmov.u64 %agt_c, %clock64;\n", "\tmov.u64 %agt_c, 0;\n")),
    "xnored": on_anchors(replaced(RED, "")),
    "xredst": on_anchors(replaced(RED, RED.replace("red.global.max", "st.global"))),
    "xredlast": on_anchors(red_last),
    "xnoredux": on_anchors(replaced("\tredux.sync.max.u32 %agt_t4, %agt_t6, %agt_t3;\n",
                                    "\tmov.u32 %agt_t4, %agt_t6;\n")),
    "xnosmid": on_anchors(replaced("\tmov.u32 %agt_t7, %smid;\n", "\tmov.u32 %agt_t7, 0;\n")),
    "xgt32": on_anchors(replaced("\tmov.u64 %agt_y, %globaltimer;\n",
                                 "\tmov.u32 %agt_t15, %globaltimer_lo;\n\tcvt.u64.u32 %agt_y, %agt_t15;\n")),
    "trnored": kernels(lambda k: k.replace(RED, "")),
    "trnoexit": kernels(exit_removed),
    "trnoclk": kernels(no_clock),
    # the prologue's place, and the exit's atomic after the stores
    "trlate": L,
    "trlatenored": lambda s: kernels(lambda k: k.replace(RED, ""))(L(s)),
    "trlatenoexit": lambda s: kernels(exit_removed)(L(s)),
    "rl": kernels(red_last),
    "rllate": lambda s: L(kernels(red_last)(s)),
    # cheaper record addressing and iteration capture
    "lf8": leaf_minus8,
    "lo32": low_word,
    "lf8lo": lambda s: leaf_minus8(low_word(s)),
    "lf8lo2": lambda s: leaf_minus8(low_word_via_a(s)),
    "rllf8": lambda s: kernels(red_last)(leaf_minus8(s)),
    "Llf8": lambda s: L(leaf_minus8(s)),
    "Lxend": lambda s: L(iteration_at_end(s)),
    "Lxendrl": lambda s: kernels(red_last)(L(iteration_at_end(s))),
    "Lnoiter": lambda s: L(no_iteration(s)),
}

# ---- round 6 (base: the probe of d45e800, its prologue after the kernel's
# leading code; dfe and dfe2: SASS read, not timed; endz*: timed)
BIAS = 2147483648
END_RE = re.compile(r"\tmov\.u32 %agt_e, %clock;\n\t@%agt_q st\.global\.v2\.u32 \[%agt_s(\d+)\+8\], "
                    r"\{%agt_e, ([^}]+)\};\n")

def deferred_end(xend):
    """dfe: an end marker only reads its clock into its region's register;
    the region's next begin stores that second half (then zeroes it), and so
    does the exit. dfe2: and the iteration XORed at the end marker into a
    register of its own (the begin keeps a plain copy), so the begin's
    store does not read a register the begin rewrites right after"""
    def kern(k):
        ends = END_RE.findall(k)
        if not ends:
            return k
        word = {r: (f"%agt_J{r}" if xend and w.startswith("%agt_i") else w) for r, w in ends}
        k = k.replace("\t.reg .pred %agt_p, %agt_q;\n",
                      "\t.reg .pred %agt_p, %agt_q;\n\t.reg .b32 %agt_E<6>, %agt_J<6>;\n", 1)
        init = "".join(f"\tmov.u32 %agt_E{r}, 0;\n" +
                       (f"\tmov.u32 %agt_J{r}, {BIAS};\n" if word[r].startswith("%agt_J") else "")
                       for r in word)
        k = k.replace("\tmov.u32 %agt_sl, %agt_t8;\n", "\tmov.u32 %agt_sl, %agt_t8;\n" + init, 1)
        def end_sub(m):
            r = m.group(1)
            pre = f"\txor.b32 %agt_J{r}, %agt_i{r}, {BIAS};\n" if word[r].startswith("%agt_J") else ""
            return pre + f"\tmov.u32 %agt_E{r}, %clock;\n"
        k = END_RE.sub(end_sub, k)
        def flush(r):
            return (f"\t@%agt_q st.global.v2.u32 [%agt_s{r}+8], {{%agt_E{r}, {word[r]}}};\n"
                    f"\tmov.u32 %agt_E{r}, 0;\n")
        def beg_iter(m):
            r, head = m.group(2), m.group(1)
            if r not in word:
                return head
            if word[r].startswith("%agt_J"):
                head = head.replace(f"\txor.b32 %agt_i{r}, ", f"\tmov.u32 %agt_i{r}, ").replace(f", {BIAS};\n", ";\n")
            return flush(r) + head
        k = re.sub(r"(\txor\.b32 %agt_i(\d+), [^;]+;\n)(?=\tmov\.u32 %agt_b\2, %clock;\n)", beg_iter, k)
        k = re.sub(r"(\(record site \d+\)\n)(\tmov\.u32 %agt_b(\d+), %clock;\n)",
                   lambda m: m.group(1) + (flush(m.group(3)) if m.group(3) in word else "") + m.group(2), k)
        fl = "".join(f"\t@%agt_q st.global.v2.u32 [%agt_s{r}+8], {{%agt_E{r}, {word[r]}}};\n" for r in word)
        return k.replace("\t// argus: warp exit anchors and counts\n", fl + "\t// argus: warp exit anchors and counts\n")
    return kern

def end_word_fresh(clock_first, fresh_address=False):
    """endz/endz2: the end marker stores the iteration word through an add of
    a value that is 0 at run time but opaque to ptxas (cap >> 31), so the
    begin's XOR no longer writes a register the end store still reads
    (clock first / the add first); endz3: endz2 with the record's address
    made the same way, for the same reason"""
    def edit(s):
        s = s.replace("\t.reg .pred %agt_p, %agt_q;\n",
                      "\t.reg .pred %agt_p, %agt_q;\n\t.reg .b32 %agt_z, %agt_w;\n")
        s = s.replace("\tmov.u32 %agt_sl, %agt_t8;\n", "\tmov.u32 %agt_sl, %agt_t8;\n\tshr.u32 %agt_z, %agt_t0, 31;\n")
        if fresh_address:
            s = s.replace("\t.reg .b32 %agt_z, %agt_w;\n", "\t.reg .b32 %agt_z, %agt_w;\n\t.reg .b64 %agt_z64, %agt_ea;\n")
            s = s.replace("\tshr.u32 %agt_z, %agt_t0, 31;\n",
                          "\tshr.u32 %agt_z, %agt_t0, 31;\n\tcvt.u64.u32 %agt_z64, %agt_z;\n")
        def sub(m):
            clk = "\tmov.u32 %agt_e, %clock;\n"
            add = f"\tadd.u32 %agt_w, {m.group(2)}, %agt_z;\n"
            addr = m.group(1)
            if fresh_address:
                add += f"\tadd.u64 %agt_ea, {addr}, %agt_z64;\n"
                addr = "%agt_ea"
            return ((clk + add) if clock_first else (add + clk)) + \
                f"\t@%agt_q st.global.v2.u32 [{addr}+8], {{%agt_e, %agt_w}};\n"
        return re.sub(r"\tmov\.u32 %agt_e, %clock;\n\t@%agt_q st\.global\.v2\.u32 \[(%agt_s\d+)\+8\], "
                      r"\{%agt_e, (%agt_i\d+)\};\n", sub, s)
    return edit

ROUND6 = {"dfe": kernels(deferred_end(False)), "dfe2": kernels(deferred_end(True)),
          "endz": end_word_fresh(True), "endz2": end_word_fresh(False),
          "endz3": end_word_fresh(False, True)}

# ---- round 7 (base: the probe of d45e800 or later): the floor. Each design
# keeps the product's prologue and exit and gives every marker less work
# than any real probe can do, so its added time is a lower bound for all
# probes that do at least that much per occurrence; e4a and e4b are the
# product with its record layout changed. Timing only: the records are
# garbage or not the bench's layout (no :check). -p1: moved by one store.
# Also round 6's deferred end as timed now (dfeL, dfe-p1, dfe2-p1: valid
# records, :check).
BEGIN_RE = re.compile(r"(\t// argus: begin \S+ \(record site (\d+)\)\n)(.*?)(?=\t// end inline asm\n)", re.S)
ENDM_RE = re.compile(r"(\t// argus: end \S+\n)(.*?)(?=\t// end inline asm\n)", re.S)
ACC = "\t.reg .pred %agt_p, %agt_q;\n"

def floor(begin, end, acc=False):
    """begin(site) and end(site) give each marker's whole code; %agt_rb is
    the warp's first record, %agt_F<site> the begin's clock; with acc, the
    clocks are XORed into one register that the exit stores (so that ptxas
    keeps the reads)"""
    def kern(k):
        if "// argus: begin" not in k:
            return k
        k = k.replace(ACC, ACC + "\t.reg .b32 %agt_F<8>, %agt_g, %agt_acc;\n", 1)
        k = k.replace("\tmov.u32 %agt_sl, %agt_t8;\n", "\tmov.u32 %agt_sl, %agt_t8;\n\tmov.u32 %agt_acc, 0;\n", 1)
        site = dict(re.findall(r"\t// argus: begin (\S+) \(record site (\d+)\)", k))
        k = BEGIN_RE.sub(lambda m: m.group(1) + begin(m.group(2)), k)
        k = ENDM_RE.sub(lambda m: m.group(1) + end(site[m.group(1).split()[3]]), k)
        if acc:
            k = k.replace("\t// argus: warp exit anchors and counts\n",
                          "\t// argus: warp exit anchors and counts\n"
                          "\t@%agt_q st.global.u32 [%agt_rb+4], %agt_acc;\n", 1)
        return k
    return kernels(kern)

def clk_f(s):
    return f"\tmov.u32 %agt_F{s}, %clock;\n"
CLK_G = "\tmov.u32 %agt_g, %clock;\n"
def end_word_at_begin(quad):
    """e4a / e4b: records {begin, site, iteration word, end}: the begin
    marker stores the iteration word too (e4a: a second, 4-byte store;
    e4b: one 16-byte store {begin, site, word, begin}, an end word equal to
    the begin's meaning not ended), so the end marker stores its clock
    alone, 4 bytes (timing only: not the bench's record layout)"""
    def kern(k):
        words = {r: w for r, w in END_RE.findall(k)}
        if not words:
            return k
        k = END_RE.sub(lambda m: f"\tmov.u32 %agt_e, %clock;\n\t@%agt_q st.global.u32 [%agt_s{m.group(1)}+12], %agt_e;\n", k)
        def beg(m):
            b, site, r = m.group(1), m.group(2), m.group(3)
            w = words.get(r)
            if w is None:
                return m.group(0)
            if quad:
                st = f"\t@%agt_q st.global.v4.u32 [%agt_a], {{{b}, {site}, {w}, {b}}};\n"
            else:
                st = (f"\t@%agt_q st.global.v2.u32 [%agt_a], {{{b}, {site}}};\n"
                      f"\t@%agt_q st.global.u32 [%agt_a+8], {w};\n")
            return f"\tmov.u32 {b}, %clock;\n" + st + f"\tmov.b64 %agt_s{r}, %agt_a;\n"
        return re.sub(r"\tmov\.u32 (%agt_b\d+), %clock;\n\t@%agt_q st\.global\.v2\.u32 \[%agt_a\], "
                      r"\{%agt_b\d+, (\d+)\};\n\tmov\.b64 %agt_s(\d+), %agt_a;\n", beg, k)
    return kernels(kern)

def flush_after_store(src):
    """dfeL: dfe with the flush of the region's previous end after this
    begin's own first-half store (that store first after the clock read)"""
    pat = re.compile(r"(\t@%agt_q st\.global\.v2\.u32 \[%agt_s\d+\+8\], \{%agt_E\d+, [^}]+\};\n)"
                     r"(\tmov\.u32 %agt_E\d+, 0;\n)((?:\txor\.b32 %agt_i\d+, [^;]+;\n)?)"
                     r"(\tmov\.u32 %agt_b\d+, %clock;\n\t@%agt_q st\.global\.v2\.u32 \[%agt_a\], \{%agt_b\d+, \d+\};\n)")
    return pat.sub(lambda m: m.group(4) + m.group(1) + m.group(2) + m.group(3), src)

ROUND7 = {
    # two clock reads per occurrence, nothing stored (XORed into a register;
    # ptxas reads these clocks with S2UR into uniform registers, variable
    # latency, so this is not a floor: timed, 1.9-54 µs)
    "flclk": floor(lambda s: clk_f(s) + f"\txor.b32 %agt_acc, %agt_acc, %agt_F{s};\n",
                   lambda s: CLK_G + "\txor.b32 %agt_acc, %agt_acc, %agt_g;\n", acc=True),
    # two clock reads and two 8-byte stores to one fixed address each
    # (no record addressing, no iteration word)
    "flc2s2": floor(lambda s: clk_f(s) + f"\t@%agt_q st.global.v2.u32 [%agt_rb], {{%agt_F{s}, {s}}};\n",
                    lambda s: CLK_G + f"\t@%agt_q st.global.v2.u32 [%agt_rb+8], {{%agt_g, {BIAS}}};\n"),
    # two clock reads, one 16-byte store at the end (record at the end)
    "flc2s1": floor(clk_f, lambda s: CLK_G + f"\t@%agt_q st.global.v4.u32 [%agt_rb], "
                                             f"{{%agt_F{s}, {s}, %agt_g, {BIAS}}};\n"),
    # one clock read and one 8-byte store per occurrence (the end's only)
    "flc1s1": floor(lambda s: "",
                    lambda s: CLK_G + f"\t@%agt_q st.global.v2.u32 [%agt_rb+8], {{%agt_g, {BIAS}}};\n"),
    # flc2s2 with the end's store 4 bytes (the least a probe recording both can do)
    "flc2w": floor(lambda s: clk_f(s) + f"\t@%agt_q st.global.v2.u32 [%agt_rb], {{%agt_F{s}, {s}}};\n",
                   lambda s: CLK_G + "\t@%agt_q st.global.u32 [%agt_rb+8], %agt_g;\n"),
    # the product with a 4-byte end store (its iteration word stored at the begin)
    "e4a": end_word_at_begin(False),
    "e4b": end_word_at_begin(True),
    # nothing at the markers (the prologue and exit only)
    "fl0": floor(lambda s: "", lambda s: ""),
    # the end's clock alone: a 4-byte store; with a register as the second
    # word (no constant to materialize); %clock64 stored whole
    "flc1w": floor(lambda s: "", lambda s: CLK_G + "\t@%agt_q st.global.u32 [%agt_rb+8], %agt_g;\n"),
    "flc1r": floor(lambda s: "", lambda s: CLK_G + "\t@%agt_q st.global.v2.u32 [%agt_rb+8], {%agt_g, %agt_sl};\n"),
    "flc64": floor(lambda s: "", lambda s: "\tmov.u64 %agt_c, %clock64;\n\t@%agt_q st.global.u64 [%agt_rb+8], %agt_c;\n"),
    # the same at the begin marker only
    "flc1s1b": floor(lambda s: clk_f(s) + f"\t@%agt_q st.global.v2.u32 [%agt_rb], {{%agt_F{s}, {s}}};\n",
                     lambda s: ""),
    # one 8-byte store per occurrence, no clock (loop-invariant words)
    "fls1": floor(lambda s: "", lambda s: f"\t@%agt_q st.global.v2.u32 [%agt_rb+8], {{%agt_sl, {BIAS}}};\n"),
    # one ALU instruction per occurrence (acc = 3 acc + 1, stored at exit)
    "flalu": floor(lambda s: "", lambda s: "\tmad.lo.u32 %agt_acc, %agt_acc, 3, 1;\n", acc=True),
}
for _d in list(ROUND7):
    ROUND7[f"{_d}-p1"] = padded(1, ROUND7[_d])
# the deferred end of round 6, timed now
ROUND7["dfeL"] = lambda src: flush_after_store(ROUND6["dfe"](src))
for _d in ("dfe", "dfe2"):
    ROUND7[f"{_d}-p1"] = padded(1, ROUND6[_d])

# ---- placement of the trace-free build (input: the trace-free PTX): tfp<n>
# moves each kernel's code by n never-taken stores after its first
# parameter load, to measure how much placement alone moves the benchmark
def trace_free_padded(n):
    def kern(k):
        m = re.search(r"\tld\.param\.u64 \t(%rd\d+), \[\w+_param_0\];\n", k)
        ins = ("\t.reg .pred %pz;\n\t.reg .b32 %rz;\n\tmov.u32 %rz, %nctaid.y;\n"
               "\tsetp.eq.u32 %pz, %rz, 77777;\n" +
               "".join(f"\t@%pz st.global.u32 [{m.group(1)}+{4 * i}], %rz;\n" for i in range(n)))
        return k[:m.end()] + ins + k[m.end():]
    return per_kernel(lambda k: kern(k) if ".entry" in k else k)

ROUND0 = {f"tfp{_n}": trace_free_padded(_n) for _n in range(1, 9)}

def main():
    src = open(sys.argv[1]).read()
    if "__argus_trace" not in src:
        rounds = {0: ROUND0}
    elif "reference-trace prologue" in src:
        rounds = {6: ROUND6, 7: ROUND7}
    elif "st.global.v2.u32 [%agt_a]" in src and "reference-trace prologue" not in src:
        rounds = {4: ROUND4, 5: ROUND5}
    elif "\tmov.b64 %agt_a, %agt_rb;\n" in src:
        rounds = {2: ROUND2, 3: ROUND3}
    else:
        rounds = {1: ROUND1}
    for r, designs in rounds.items():
        for name, fn in designs.items():
            out = fn(src)
            if out == src:
                sys.exit(f"probe_edits.py: design {name} changed nothing: not the probe it expects")
            with open(f"{sys.argv[2]}/{name}.ptx", "w") as f:
                f.write(out)
        print(f"round {r}: {len(designs)} designs in {sys.argv[2]}")

if __name__ == "__main__":
    main()
