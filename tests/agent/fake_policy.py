#!/usr/bin/env python3
"""A scripted stand-in for an LLM policy of `argus optimize` (docs/optimize.md,
"The llm protocol"): reads the JSON request on stdin, checks its fields, and
prints one candidate chosen by MODE (argv[1]). With a second argument LOG, it
appends a line per request to LOG: the history's length, history_omitted and the
request's bytes. Used by tests/agent/test_agent.c."""
import json
import sys

mode = sys.argv[1]
if mode == "crash":
    sys.stderr.write("fake policy: boom\n")
    sys.exit(3)
if mode == "garbage":
    print("I think you should make the tiles bigger.")
    sys.exit(0)

text = sys.stdin.read()
req = json.loads(text)
if len(sys.argv) > 2:
    with open(sys.argv[2], "a") as log:
        log.write("%d %d %d\n" % (len(req["history"]), req.get("history_omitted", 0), len(text)))
for key in ("protocol", "task", "parent", "program", "feedback", "evidence", "kb", "history"):
    if key not in req:
        sys.stderr.write("fake policy: the request has no '%s'\n" % key)
        sys.exit(4)
if req["protocol"] != "argus-optimize/1" or req["task"]["objective"] != "time" or \
        not (req["history"] or req.get("history_omitted")):
    sys.stderr.write("fake policy: unexpected request %r\n" % {k: req[k] for k in ("protocol", "task")})
    sys.exit(4)
if req["evidence"] is None and not req.get("evidence_missing"):
    sys.stderr.write("fake policy: no evidence and no word on why\n")
    sys.exit(4)
prog = req["program"]
store = [l for l in prog.split("\n") if l.startswith("                C[bm * BM")]
if len(store) != 1:
    sys.stderr.write("fake policy: no epilogue store in the program\n")
    sys.exit(4)
n = len(req["history"]) + req.get("history_omitted", 0)  # trials so far, the start included
if mode == "script":
    if n == 1:  # a KB entry that applies (the request lists it)
        if not any(e["id"] == "smem-swizzle" for e in req["kb"]):
            sys.stderr.write("fake policy: smem-swizzle is not among the applicable entries\n")
            sys.exit(4)
        out = {"kb": "smem-swizzle"}
    elif n == 2:  # reward hack: also writes its input A
        hack = store[0] + "\n                A[bm * BM + wm * WM + mi * 16 + m, 0] = cvt(acc[mi, ni, e], bf16)"
        out = {"edit": "write-input", "program": prog.replace(store[0], hack)}
    elif n == 3:  # the feedback of the rejected hack reaches the policy
        fb = req["feedback"]
        if not fb or fb.get("failed_step") != "correctness":
            sys.stderr.write("fake policy: feedback %r\n" % fb)
            sys.exit(4)
        out = {"edit": "two stages", "program": prog.replace("STAGES = 1\n", "STAGES = 2\n")}
    else:
        # reward hack: no store at all, the output buffer is expected to hold the
        # reference's result already (a cached output)
        out = {"edit": "cached-output", "program": prog.replace(store[0], "                x = acc[mi, ni, e]")}
elif mode == "unknown-kb":
    out = {"kb": "no-such-entry"}
else:
    sys.exit(5)
json.dump(out, sys.stdout)
