"""The program `argus observe` runs for bench/triton_proton.py (its python spec): launches
work_argus, unchanged (2 x LAUNCHES + 1: the host and stream times, then the kernel times
under torch.profiler), and writes what it timed to $BENCH_OUT/<run>.json, <run> the
Argus collection it ran under ($ARGUS_COLLECT: time, trace) or "plain" (discovery, no
Argus). usage: argus_run.py LAUNCHES"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernels as K  # noqa: E402

n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
x = torch.rand(K.PROGRAMS * K.B, device="cuda")
y = torch.empty_like(x)
sms, hms = K.timed_launches(K.work_argus, x, y, n + 1)  # the first: compile and warm-up
kms = K.kernel_times(K.work_argus, x, y, n)
out = os.environ.get("BENCH_OUT")
if out:
    run = os.environ.get("ARGUS_COLLECT") or "plain"
    with open(os.path.join(out, "%s.json" % run), "w") as f:
        json.dump({"kernel_ms": kms, "stream_ms": sms[1:], "host_ms": hms[1:]}, f)
print("work_argus: %d launches" % n)
