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
701948d makes it); those of round 2 the probe of 49e9e45 (the address at
the begin marker). The script writes the designs that fit the input.
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

def main():
    src = open(sys.argv[1]).read()
    round2 = "\tmov.b64 %agt_a, %agt_rb;\n" in src
    for name, fn in (ROUND2 if round2 else ROUND1).items():
        out = fn(src)
        if out == src:
            sys.exit(f"probe_edits.py: design {name} changed nothing: not the probe it expects")
        with open(f"{sys.argv[2]}/{name}.ptx", "w") as f:
            f.write(out)
    print(f"round {2 if round2 else 1}: {len(ROUND2 if round2 else ROUND1)} designs in {sys.argv[2]}")

if __name__ == "__main__":
    main()
