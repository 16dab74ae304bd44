#!/usr/bin/env python3
"""ncu_parts.py NAME.src.csv...: warp-stall samples of overhead_compute split
into prologue, outer loop (the probes and the loop control), inner loop, the
instruction after it (the inner loop's exit, where ncu puts that loop's
samples too) and exit. Input: ncu_stalls.sh output. Exploration only."""
import csv, sys
def load(f):
    rows = list(csv.reader(open(f)))
    hdr = rows[1]; idx = {h: i for i, h in enumerate(hdr)}
    base = None; out = []
    for r in rows[2:]:
        if len(r) < len(hdr): continue
        a = int(r[0], 16); base = a if base is None else base
        out.append((a - base, int(r[idx["Warp Stall Sampling (All Samples)"]] or 0), int(r[idx["Instructions Executed"]] or 0), r[1].strip()))
    return out
for f in sys.argv[1:]:
    ins = load(f)
    inner = [a for a, s, e, t in ins if e > 1000000]
    lo, hi = min(inner), max(inner)
    outer = [a for a, s, e, t in ins if e == 65536]
    olo, ohi = min(outer), max(outer)
    pro = sum(s for a, s, e, t in ins if a < olo)
    out_ = sum(s for a, s, e, t in ins if olo <= a <= ohi and not (lo <= a <= hi) and a != hi + 16)
    post = sum(s for a, s, e, t in ins if a == hi + 16)
    inn = sum(s for a, s, e, t in ins if lo <= a <= hi)
    ex = sum(s for a, s, e, t in ins if a > ohi)
    tot = sum(s for a, s, e, t in ins)
    print(f"{f:16s} total {tot:6d} prologue {pro:4d} outer {out_:4d} inner {inn:6d} after-inner {post:6d} exit {ex:4d}")
