#!/usr/bin/env python3
"""test_overlap_pgo.py SCRIPT - the PGO client (scripts/overlap_pgo.py) on
reports this test writes: the fit (exact on sizes chosen so), the model
(the paper's formula for P = 1, stages of P chunks), the ranking, bad input
(each with its message), and the profile / validate loops with a stand-in
argus and harness (programs this test writes that answer from a known
model), checking predicted against measured."""
import contextlib
import importlib.util
import io
import json
import math
import os
import stat
import sys
import tempfile

spec = importlib.util.spec_from_file_location("overlap_pgo", sys.argv[1])
pgo = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pgo)

failed = 0


def check(cond, what):
    global failed
    if not cond:
        failed += 1
        print("FAIL:", what)


def eq(a, b, what):
    check(a == b, f"{what}: {a!r} != {b!r}")


def report(groups, main_ns, epi_ns, sms=8):
    vals = []
    for nbytes, mean in groups:
        reg = f"(comm all_gather bytes={nbytes} sms={sms})"
        vals += [{"region": reg, "signal": "comm", "stat": "mean", "value": mean},
                 {"region": reg, "signal": "comm", "stat": "bytes", "value": nbytes},
                 {"region": reg, "signal": "comm", "stat": "sms", "value": sms}]
    vals += [{"region": "overlap_gemm/tile/mainloop", "signal": "duration", "stat": "mean",
              "value": main_ns},
             {"region": "overlap_gemm/tile/epilogue", "signal": "duration", "stat": "mean",
              "value": epi_ns},
             {"region": "overlap_gemm/tile/mainloop", "signal": "duration", "stat": "max",
              "value": 10 * main_ns}]
    return {"schema": "argus.report/1", "values": vals}


tmp = tempfile.mkdtemp(prefix="test_overlap_pgo.")


def write(name, obj):
    p = os.path.join(tmp, name)
    with open(p, "w") as f:
        f.write(obj if isinstance(obj, str) else json.dumps(obj))
    return p


def run_main(args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = pgo.main(args)
    return rc, out.getvalue(), err.getvalue()


# R = 8: two sizes (a = 2000 ns, 128 GB/s); R = 24: one size (a = 0, 256 GB/s)
r8 = write("r8.json", report([(1048576, 10192.0), (4194304, 34768.0)], 900.0, 100.0))
r24 = write("r24.json", report([(1048576, 4096.0)], 1100.0, 100.0, sms=24))

# --- the fit
a, b = pgo.fit_line([(1048576, 10192.0), (4194304, 34768.0)])
eq((a, b), (2000.0, 128.0), "two-size fit")
eq(pgo.fit_line([(1048576, 4096.0), (1048576, 4096.0)]), (0.0, 256.0), "one-size fit")
try:
    pgo.fit_line([(1, 5.0), (2, 4.0)])
    check(False, "a fit that falls with the size must be refused")
except pgo.PgoError as e:
    check("do not grow with the size" in str(e), str(e))

prob = dict(m=4096, n=1024, k=1024, sms=132, ranks=2)
model = pgo.fit([(8, r8), (24, r24)], **prob)
eq(model.comm[8], (2000.0, 128.0), "fit R=8")
eq(model.comm[24], (0.0, 256.0), "fit R=24")
eq(model.tile[8], 1000.0, "tile R=8 (mainloop + epilogue)")
eq(model.tile[24], 1200.0, "tile R=24")

# --- the model
# S=4: 1024 gathered rows, 4 MiB; t_comm = 2000 + 4194304/128 = 34768;
# 16 x 16 = 256 tiles on 124 CTAs: 3 waves of 1000 ns
eq(model.chunk(4), (1024, 4194304), "chunk")
eq(model.t_comm(4194304, 8), 34768.0, "t_comm")
eq(model.t_comp(1024, 8), 3000.0, "t_comp")
eq(model.total(4, 8, 1), 34768.0 + 3 * 34768.0 + 3000.0, "T(4, 8, 1): the paper's formula")
eq(model.total(4, 8, 2), 2 * 34768.0 + 1 * max(2 * 34768.0, 6000.0) + 6000.0, "T(4, 8, 2)")
eq(model.total(4, 8, 4), 4 * 34768.0 + 4 * 3000.0, "T(4, 8, 4): one stage")
# R = 16 between the profiled 8 and 24: a 1000, 192 GB/s, tile 1100
tc = 1000.0 + 8388608 / 192.0
check(math.isclose(model.t_comm(8388608, 16), tc, rel_tol=1e-15), "interpolated t_comm")
eq(model.t_comp(2048, 16), 5 * 1100.0, "interpolated t_comp (512 tiles, 116 CTAs)")
check(math.isclose(model.total(2, 16, 1), tc + max(tc, 5500.0) + 5500.0, rel_tol=1e-15),
      "T(2, 16, 1)")
eq(model.t_comm(4194304, 2), 34768.0, "R below the profiled: clamped")
eq(model.t_comp(1024, 132), math.inf, "no SM left for the GEMM")
# the ranking: valid points only (4096 % (2 x 3 x 64) != 0; P <= S), sorted by T
ranked = model.rank([1, 2, 3, 4], [8, 24], [1, 2])
check(all(s != 3 and p <= s for _, s, _, p in ranked), "invalid grid points ranked")
eq([t for t, *_ in ranked], sorted(t for t, *_ in ranked), "ranked by T")
eq(len(ranked), (1 + 2 + 2) * 2, "candidates")
best = min((model.total(s, r, p), s, r, p) for s in (1, 2, 4) for r in (8, 24) for p in (1, 2)
           if p <= s)
eq(ranked[0], best, "the best candidate")
# a deliberately wrong model must not match: the formula without the overlap
wrong = 4 * (34768.0 + 3000.0)
check(model.total(4, 8, 1) != wrong, "the model equals the serial sum")

# --- bad input, each with its message
bad = [
    (write("nojson.json", "{\"values\": [\n}"), "not JSON"),
    (write("novals.json", {"schema": "x"}), "not an argus report"),
    (write("nocomm.json", {"values": [{"region": "a/mainloop", "signal": "duration",
                                       "stat": "mean", "value": 1}]}),
     "no all-gather with a declared size"),
    (write("nodur.json", {"values": report([(1024, 10.0)], 1, 1)["values"][:3]}),
     "no mean duration of region mainloop, epilogue"),
    (write("negative.json", report([(-4, 10.0)], 1, 1)), "must be positive"),
    (os.path.join(tmp, "absent.json"), "cannot read the report"),
]
for path, msg in bad:
    rc, out, err = run_main(["rank", "--sms", "132", "--report", f"8:{path}",
                             "--harness", "h --m 4096"])
    eq(rc, 1, f"exit status on {os.path.basename(path)}")
    check(msg in err, f"message {msg!r} not in {err!r}")
rc, _, err = run_main(["rank", "--sms", "132", "--report", r8, "--harness", "h"])
check(rc == 1 and "write R:FILE" in err, err)
rc, _, err = run_main(["rank", "--sms", "132", "--harness", "h"])
check(rc == 1 and "no report" in err, err)
rc, _, err = run_main(["rank", "--sms", "132", "--report", f"8:{r8}", "--harness",
                       "h --m 4096 --n 1024 --k 1024", "--grid-s", "3"])
check(rc == 1 and "no (S, R, P) of the grid is valid" in err, err)

# --- rank on saved reports (JSON)
rc, out, err = run_main(["rank", "--sms", "132", "--report", f"8:{r8}", "--report", f"24:{r24}",
                         "--harness", "h --m 4096 --n 1024 --k 1024", "--grid-s", "1,2,4",
                         "--grid-r", "8,24", "--grid-p", "1,2", "--json"])
eq(rc, 0, f"rank: {err}")
res = json.loads(out) if rc == 0 else {"candidates": []}
eq([(c["S"], c["R"], c["P"], c["predicted_ns"]) for c in res["candidates"]],
   [(s, r, p, t) for t, s, r, p in ranked if s != 3], "rank's candidates")
eq(res.get("fit", {}).get("comm", {}).get("8"), {"a_ns": 2000.0, "GBps": 128.0}, "rank's fit")

# --- validate and the whole loop, with a stand-in harness and argus
# The harness answers 1.25 x the model in ms (so error = -0.2 exactly).
harness = write("harness.py", f"""#!{sys.executable}
import json, sys
sys.path.insert(0, {os.path.dirname(os.path.abspath(sys.argv[1]))!r})
import importlib.util
sp = importlib.util.spec_from_file_location("p", {os.path.abspath(sys.argv[1])!r})
p = importlib.util.module_from_spec(sp); sp.loader.exec_module(p)
a = sys.argv
S, R, P = (int(a[a.index(f) + 1]) for f in ("--chunks", "--comm-sms", "--barrier"))
assert a[a.index("--mode") + 1] == "pipeline"
m = p.fit([(8, {r8!r}), (24, {r24!r})], m=4096, n=1024, k=1024, sms=132, ranks=2)
print(json.dumps({{"pipeline_ms": 1.25 * m.total(S, R, P) / 1e6, "check": "skipped"}}))
""")
os.chmod(harness, os.stat(harness).st_mode | stat.S_IEXEC)
hcmd = f"{harness} --m 4096 --n 1024 --k 1024 --chunks 4 --comm-sms 8 --barrier 1"
rc, out, err = run_main(["validate", "--sms", "132", "--report", f"8:{r8}", "--report",
                         f"24:{r24}", "--harness", hcmd, "--grid-s", "1,2,4", "--grid-r", "8,24",
                         "--grid-p", "1,2", "--top", "2", "--json"])
eq(rc, 0, f"validate: {err}")
res = json.loads(out) if rc == 0 else {"candidates": []}
top = [c for c in res["candidates"] if "measured_ns" in c]
eq(len(top), 2, "validated candidates")
for c in top:
    check(math.isclose(c["measured_ns"], 1.25 * c["predicted_ns"], rel_tol=1e-9), str(c))
    check(math.isclose(c["error"], -0.2, rel_tol=1e-9), str(c))

# argus stand-in: `argus --json observe SPEC ...` prints the report of the
# spec's R (its harness argv), as the R=8 / R=24 reports above
argus = write("argus.py", f"""#!{sys.executable}
import json, sys
spec = json.load(open(sys.argv[sys.argv.index("observe") + 1]))
run = spec["run"]
assert spec["module"]["cuda"].startswith("/"), "the module path must be made absolute"
assert "--signals" in sys.argv and "comm" in sys.argv[sys.argv.index("--signals") + 1]
R = int(run[run.index("--comm-sms") + 1])
print(open({r8!r} if R == 8 else {r24!r}).read())
""")
os.chmod(argus, os.stat(argus).st_mode | stat.S_IEXEC)
sp = write("spec.json", {"name": "overlap", "module": {"cuda": "overlap_gemm.cu"},
                         "run": hcmd.split()})
rc, out, err = run_main(["all", "--sms", "132", "--spec", sp, "--argus", argus,
                         "--out", os.path.join(tmp, "out"), "--profile-s", "2",
                         "--profile-r", "8,24", "--grid-s", "1,2,4", "--grid-r", "8,24",
                         "--grid-p", "1,2", "--top", "1"])
eq(rc, 0, f"all: {err}")
check("fit R=8: t_comm = 2000 ns + bytes / 128.00 GB/s; tile 1000 ns" in out, out)
check("-20.0%" in out, out)
profiled = json.load(open(os.path.join(tmp, "out", "spec_S2_R24.json")))
eq(profiled["run"][profiled["run"].index("--comm-sms") + 1], "24", "the profiled spec's R")
eq(profiled["run"][profiled["run"].index("--chunks") + 1], "2", "the profiled spec's S")

print("ok" if not failed else f"{failed} failed")
sys.exit(1 if failed else 0)
