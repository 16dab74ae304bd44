#!/usr/bin/env python3
"""test_megakernel_bench.py - bench/megakernel_bench.py's parsing and verdict on the CPU:
the measured floor's line, the goal line with and without it, the harness's timing line.
Usage: test_megakernel_bench.py SOURCE_DIR"""
import os
import sys

sys.path.insert(0, os.path.join(sys.argv[1], "bench"))
import megakernel_bench as mb  # noqa: E402

fails = 0


def check(cond, what):
    global fails
    if not cond:
        fails += 1
        print(f"FAIL {what}")


fl = mb.parse_floor("x\nfloor: bytes=2200000000 ms=0.5000 min_ms=0.4900 max_ms=0.5200\n")
check(fl == (2200000000, 0.5, 0.49, 0.52), f"parse_floor: {fl}")
check(mb.parse_floor("floor: bytes=12 ms=oops") is None, "parse_floor of a broken line")
line = mb.floor_line(fl)
check("2.20 GB" in line and "fastest single-pass" in line and "0.500 ms" in line and "4.40 TB/s" in line, f"floor_line: {line}")
check("not measured" in mb.floor_line(None), "floor_line without a floor")
met, v = mb.verdict({1024: {"mk": [1.2, 1.4, 1.3]}}, True, fl)
check(not met and "1.300 ms = 2.60x the floor" in v and "0.500 measured" in v, f"verdict: {v}")
met, v = mb.verdict({1024: {"mk": [0.9]}}, True, None)
check(met and "the floor" not in v.split("):")[1] and "met" in v, f"verdict met: {v}")
met, v = mb.verdict({1024: {"mk": [0.3]}}, True, fl)
check(met and "no floor" in v and "x the floor" not in v, f"verdict under the floor: {v}")
met, v = mb.verdict({1024: {"mk": [0.9]}}, False, fl)
check(not met and "FAILED" in v, f"verdict with a failed check: {v}")
check(mb.parse_harness("ms/token at context 1024: megakernel 1.381, reference 4.5") ==
      (1.381, 4.5), "parse_harness")
print(f"{'FAILED' if fails else 'passed'}: {fails} failure(s)")
sys.exit(1 if fails else 0)
