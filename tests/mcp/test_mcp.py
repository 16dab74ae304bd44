#!/usr/bin/env python3
"""test_mcp.py: a scripted MCP client for `argus mcp` (docs/mcp.md).

Runs the server as an agent framework does (stdio, one JSON-RPC message per
line) and checks: initialize (version negotiation), tools/list (every tool
with its input schema), tools/call for regions, plan, check, workspace and
report on the repository's examples and stored reports, observe's progress
notifications, and every error case: not JSON (-32700), not a request
(-32600), an unknown method (-32601), bad arguments and an unknown tool
(-32602, the diagnostic in the message), a failing tool (isError with the
diagnostics), a line over --max-line, a truncated last line, EOF. Every line
the server writes on stdout must be a JSON-RPC message.

usage: test_mcp.py --argus BIN --source DIR
Exit 0 when every check passed, 1 on a failure, 77 when BIN is missing.
"""
import argparse
import json
import os
import queue
import random
import shutil
import subprocess
import sys
import tempfile
import threading

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, flush=True)
    return cond


class Server:
    """One `argus mcp` process; send() writes a line, recv() reads one."""

    def __init__(self, argus, cwd, extra=(), opts=()):
        self.p = subprocess.Popen([argus, *extra, "mcp", *opts], cwd=cwd, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.q = queue.Queue()
        self.err = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.err.extend(self.p.stderr), daemon=True).start()
        self.next_id = 100

    def _read(self):
        for line in self.p.stdout:
            self.q.put(line)
        self.q.put(None)

    def send_raw(self, data):
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def send(self, obj):
        self.send_raw(json.dumps(obj).encode() + b"\n")

    def recv(self, timeout=120):
        try:
            line = self.q.get(timeout=timeout)
        except queue.Empty:
            check(False, "no answer within %d s" % timeout)
            return None
        if line is None:
            return None
        try:
            msg = json.loads(line)
        except ValueError:
            check(False, "stdout line is not JSON: %r" % line[:200])
            return None
        check(msg.get("jsonrpc") == "2.0", "every message says jsonrpc 2.0: %r" % msg)
        return msg

    def request(self, method, params=None, timeout=120):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        notes = []
        while True:
            r = self.recv(timeout)
            if r is None:
                return None, notes
            if "id" in r and r["id"] == self.next_id:
                return r, notes
            notes.append(r)

    def call(self, tool, args, meta=None, timeout=120):
        params = {"name": tool, "arguments": args}
        if meta:
            params["_meta"] = meta
        return self.request("tools/call", params, timeout)

    def close(self, timeout=30):
        self.p.stdin.close()
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            check(False, "the server did not exit at EOF")
            return None
        return rc


def result_of(r, what):
    check(r is not None and "result" in r, "%s: a result, got %r" % (what, r))
    return (r or {}).get("result", {})


def error_of(r, code, what):
    ok = check(r is not None and "error" in r and r["error"].get("code") == code,
               "%s: error %d, got %r" % (what, code, r))
    return (r or {}).get("error", {}).get("message", "") if ok else ""


def text_of(res):
    return "".join(c.get("text", "") for c in res.get("content", []) if c.get("type") == "text")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--argus", required=True)
    ap.add_argument("--source", required=True)
    a = ap.parse_args()
    a.argus = os.path.abspath(a.argus)
    if not os.access(a.argus, os.X_OK):
        print("no argus at %s: skipped" % a.argus)
        return 77
    src = os.path.abspath(a.source)
    tmp = tempfile.mkdtemp(prefix="argus-mcp-")
    have_nvcc = bool(shutil.which("nvcc") or os.path.exists("/usr/local/cuda/bin/nvcc"))
    try:
        run(a.argus, src, tmp, have_nvcc)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failures" % len(FAILS))
    return 1 if FAILS else 0


def run(argus, src, tmp, have_nvcc):
    ws = os.path.join(tmp, "ws")
    s = Server(argus, tmp, ["--workspace", ws])

    # ---- initialize: the client's version when known, else the newest
    r, _ = s.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "test", "version": "0"}})
    res = result_of(r, "initialize")
    check(res.get("protocolVersion") == "2025-06-18", "initialize answers the client's version")
    check(res.get("serverInfo", {}).get("name") == "argus", "serverInfo names argus")
    check("tools" in res.get("capabilities", {}), "the tools capability is declared")
    s.send({"jsonrpc": "2.0", "method": "notifications/initialized"})  # never answered
    r, _ = s.request("initialize", {"protocolVersion": "1999-01-01"})
    check(result_of(r, "initialize old").get("protocolVersion") == "2025-11-25",
          "an unknown version is answered with the newest")
    r, notes = s.request("ping")
    check(result_of(r, "ping") == {} and not notes, "ping answers {} (and nothing came for the notification)")

    # ---- tools/list: six tools, each with an object schema
    r, _ = s.request("tools/list")
    tools = {t["name"]: t for t in result_of(r, "tools/list").get("tools", [])}
    check(sorted(tools) == sorted(["regions", "plan", "observe", "check", "report", "workspace"]),
          "tools/list names the six tools: %s" % sorted(tools))
    for name, t in tools.items():
        sc = t.get("inputSchema", {})
        check(sc.get("type") == "object" and isinstance(sc.get("properties"), dict) and
              sc.get("additionalProperties") is False and t.get("description"),
              "tool %s has an object input schema and a description" % name)
    check(tools.get("plan", {}).get("inputSchema", {}).get("required") == ["spec", "region"],
          "plan requires spec and region")
    check(tools.get("check", {}).get("inputSchema", {}).get("required") == ["file"],
          "check requires file")

    # ---- regions: a hand-written PTX file, and an example's spec (nvcc)
    ptx = os.path.join(src, "tests/data/ptx/hand/triton_style.ptx")
    r, _ = s.call("regions", {"module": ptx})
    res = result_of(r, "regions ptx")
    check(res.get("isError") is False and res.get("structuredContent"),
          "regions of a PTX file: structured content")
    if have_nvcc:
        r, _ = s.call("regions", {"module": os.path.join(src, "examples/overhead/spec.json")})
        res = result_of(r, "regions example")
        body = json.dumps(res.get("structuredContent"))
        check(res.get("isError") is False and "overhead_compute/work/step" in body,
              "regions of examples/overhead: its regions, got %s" % body[:300])
        check("work" in text_of(res), "regions: a text summary too")
    else:
        print("no nvcc: the example's regions not checked")
    r, _ = s.call("regions", {"module": os.path.join(tmp, "missing.ptx")})
    res = result_of(r, "regions missing")
    check(res.get("isError") is True and "no such file" in text_of(res) and
          res.get("structuredContent", {}).get("schema") == "argus.error/1",
          "regions of a missing file: isError with the reason, got %r" % res)

    # ---- plan: the example's plan, a failing discovery, a bad signal, a bad scope
    spec = os.path.join(src, "examples/overhead/spec.json")
    plan_ok = False
    if have_nvcc:
        r, _ = s.call("plan", {"spec": spec, "region": "work", "signals": ["duration", "static"]})
        res = result_of(r, "plan")
        if "without the CUDA toolkit" in text_of(res):
            print("argus built without CUDA: plan and observe not checked")
        else:
            plan_ok = True
            body = res.get("structuredContent", {})
            check(res.get("isError") is False and len(body.get("tasks", [])) >= 10,
                  "plan: the DAG's tasks (%d)" % len(body.get("tasks", [])))
            check("plan for observe(work" in text_of(res), "plan: its text")
            r, _ = s.call("plan", {"spec": spec, "region": "nosuch"})
            res = result_of(r, "plan unknown region")
            check(res.get("isError") is True and "unknown region 'nosuch'" in text_of(res),
                  "plan of an unknown region: isError naming it, got %r" % text_of(res)[:300])
            m = error_of(s.call("plan", {"spec": spec, "region": "work",
                                         "signals": ["bogus"]})[0], -32602, "unknown signal")
            check("unknown signal 'bogus'" in m, "the -32602 message carries the diagnostic: %r" % m)
            m = error_of(s.call("plan", {"spec": spec, "region": "work", "scope": "iter=4:4"})[0],
                         -32602, "empty scope")
            check("empty scope" in m, "bad scope: the diagnostic in the message: %r" % m)

    # ---- check: an example that holds, one with a planted bug, a malformed file
    r, _ = s.call("check", {"file": os.path.join(src, "examples/tile/gemm.tile")})
    res = result_of(r, "check gemm")
    body = json.dumps(res.get("structuredContent"))
    check(res.get("isError") is False and "proved" in text_of(res) and "violated" not in body,
          "check of examples/tile/gemm.tile: proved")
    bad = os.path.join(tmp, "bad.tile")
    with open(bad, "w") as f:
        f.write("def k(:\n  oops\n")
    r, _ = s.call("check", {"file": bad})
    res = result_of(r, "check malformed")
    diags = res.get("structuredContent", {}).get("diagnostics", [])
    check(res.get("isError") is True and diags and diags[0].get("line"),
          "a malformed tile program: isError with located diagnostics, got %r" % res)
    r, _ = s.call("check", {"file": os.path.join(src, "examples/tile/gemm.tile"),
                            "set": {"nosuch": 3}})
    res = result_of(r, "check bad set")
    check(res.get("isError") is True and "no constant parameter" in text_of(res),
          "check with an unknown --set name: isError with the diagnostic")

    # ---- workspace: init, ls, ref
    r, _ = s.call("workspace", {"action": "init"})
    check(result_of(r, "ws init").get("isError") is False, "workspace init")
    r, _ = s.call("workspace", {"action": "ls"})
    res = result_of(r, "ws ls")
    counts = res.get("structuredContent", {}).get("counts", {})
    check(res.get("isError") is False and "versions" in counts, "workspace ls: counts %r" % counts)
    if plan_ok:
        check(counts.get("versions", 0) >= 1, "the plan bound a program version")
        r, _ = s.call("workspace", {"action": "ref", "name": "base", "target": "v1"})
        res = result_of(r, "ws ref set")
        check(res.get("structuredContent", {}).get("ref", {}).get("target") == "v1",
              "ref base -> v1, got %r" % res)
    r, _ = s.call("workspace", {"action": "ref", "name": "nosuch-ref"})
    check(result_of(r, "ws ref missing").get("isError") is True, "an unknown ref: isError")
    r, _ = s.call("workspace", {"action": "ls", "workspace": os.path.join(tmp, "none")})
    res = result_of(r, "ws missing")
    check(res.get("isError") is True and "cannot open the workspace" in text_of(res),
          "a missing workspace: isError")

    # ---- report: a stored H200 report, summarized within its budget
    put = subprocess.run([argus, "--workspace", ws, "ws", "put", "--kind", "report",
                          os.path.join(src, "tests/data/reports/gemm_tma.h200.report.json")],
                         capture_output=True, text=True)
    h = put.stdout.split()[0] if put.returncode == 0 and put.stdout else ""
    check(len(h) == 64, "ws put of the stored report: %r %r" % (put.stdout, put.stderr))
    for budget in list(range(72, 400, 3)) + [256]:
        r, _ = s.call("report", {"report": h[:12], "summary_tokens": budget})
        res = result_of(r, "report")
        t = text_of(res)
        check(res.get("structuredContent", {}).get("schema") == "argus.report/1",
              "report: the report JSON as structured content")
        check((len(t.encode()) + 2) // 3 <= budget,
              "report text fits %d tokens (3 bytes each): %d bytes" % (budget, len(t.encode())))
        check(("report " + h[:12]) in t and t.startswith("argus observe mainloop"),
              "report text: the header and the report's name: %r" % t)
        check(budget < 256 or "gemm_tma/mainloop/mma 73.8%" in t,
              "report text at %d tokens: the top fact: %r" % (budget, t))
    r, _ = s.call("report", {"report": "ffffffffffff"})
    check(result_of(r, "report missing").get("isError") is True, "an unknown report: isError")

    # ---- observe: progress notifications, then the report (no GPU: with what is missing)
    if plan_ok:
        r, notes = s.call("observe", {"spec": spec, "region": "work", "signals": ["static"],
                                      "summary_tokens": 128}, meta={"progressToken": "tok-1"},
                          timeout=300)
        res = result_of(r, "observe")
        prog = [n for n in notes if n.get("method") == "notifications/progress"]
        check(prog and all(n["params"].get("progressToken") == "tok-1" for n in prog),
              "observe reports progress with the request's token (%d notes)" % len(prog))
        vals = [n["params"]["progress"] for n in prog]
        check(vals == sorted(vals) and all(n["params"].get("total") for n in prog),
              "progress rises, with a total: %r" % vals)
        check(res.get("isError") is False and
              res.get("structuredContent", {}).get("schema") == "argus.report/1",
              "observe: the report as structured content, got %r" % text_of(res)[:300])
        check((len(text_of(res).encode()) + 2) // 3 <= 128, "observe's text fits its budget")
        r, notes = s.call("observe", {"spec": spec, "region": "work", "signals": ["static"]})
        check(not [n for n in notes if n.get("method") == "notifications/progress"],
              "no progress without a progressToken")
        r, _ = s.call("report", {})
        check(result_of(r, "report latest").get("structuredContent", {}).get("schema") ==
              "argus.report/1", "report without arguments: the latest query's")

    # ---- the CLI's summary: argus observe --summary[=TOKENS]
    if plan_ok:
        base = [argus, "--workspace", ws, "observe", spec, "--region", "work", "--signals",
                "static"]
        for opt, budget in (("--summary=100", 100), ("--summary", 256)):
            p = subprocess.run(base + [opt], capture_output=True, text=True, cwd=tmp)
            check(p.stdout.startswith("argus observe work on ") and
                  (len(p.stdout.encode()) + 2) // 3 <= budget,
                  "observe %s: a summary within %d tokens: %r" % (opt, budget, p.stdout))
            check("report " in p.stderr, "observe %s: the report's hash on stderr" % opt)
        p = subprocess.run(base + ["--json", "--summary=80"], capture_output=True, text=True,
                           cwd=tmp)
        j = json.loads(p.stdout or "{}")
        check(j.get("schema") == "argus.summary/1" and j.get("max_tokens") == 80 and
              j.get("tokens", 999) <= 80 and j.get("text", "").startswith("argus observe"),
              "observe --json --summary: the argus.summary/1 object: %r" % j)
        p = subprocess.run(base + ["--summary=10"], capture_output=True, text=True, cwd=tmp)
        check(p.returncode == 2 and "from 64 to" in p.stderr,
              "observe --summary=10: a usage error: %r" % p.stderr)

    # ---- protocol errors
    s.send_raw(b"this is not json\n")
    m = error_of(s.recv(), -32700, "not JSON")
    check("parse error" in m, "parse error message: %r" % m)
    s.send_raw(b'{"jsonrpc":"2.0","id":5,"method":"ping"\xff}\n')
    error_of(s.recv(), -32700, "invalid UTF-8")
    s.send_raw(b'{"jsonrpc":"2.0","id":6,"method":"p\\u0000ing"}\n')
    m = error_of(s.recv(), -32700, "a NUL in a string")
    check("not allowed" in m, "NUL refused by the parser: %r" % m)
    s.send_raw(b"\n   \n")  # blank lines: nothing
    error_of(s.request("no/such/method")[0], -32601, "unknown method")
    s.send({"jsonrpc": "2.0", "method": "no/such/notification"})  # never answered
    s.send({"id": 7, "method": "ping"})
    error_of(s.recv(), -32600, "no jsonrpc member")
    s.send([{"jsonrpc": "2.0", "id": 8, "method": "ping"}])
    error_of(s.recv(), -32600, "a batch")
    s.send({"jsonrpc": "2.0", "id": None, "method": "ping"})
    error_of(s.recv(), -32600, "a null id")
    s.send({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": [1]})
    error_of(s.recv(), -32602, "params not an object")
    m = error_of(s.call("nosuch", {})[0], -32602, "unknown tool")
    check("unknown tool 'nosuch'" in m, "unknown tool named: %r" % m)
    cases = [
        ({"region": "work"}, "argument 'spec' is required"),
        ({"spec": 3, "region": "work"}, "argument 'spec' must be a string"),
        ({"spec": spec, "region": "work", "signals": "duration"},
         "argument 'signals' must be an array of strings"),
        ({"spec": spec, "region": "work", "colour": 1}, "unknown argument 'colour'"),
        ({"spec": "", "region": "work"}, "argument 'spec' must not be empty"),
    ]
    for args, want in cases:
        m = error_of(s.call("plan", args)[0], -32602, "plan %r" % args)
        check(want in m, "plan %r: %r in %r" % (args, want, m))
    m = error_of(s.call("workspace", {"action": "drop"})[0], -32602, "enum")
    check("must be one of 'init', 'ls', 'ref'" in m, "enum violation: %r" % m)
    m = error_of(s.call("workspace", {"action": "ref"})[0], -32602, "ref without name")
    check("argument 'name' is required by action 'ref'" in m, "ref without a name: %r" % m)
    m = error_of(s.call("check", {"file": "x.tile", "batch": 0})[0], -32602, "minimum")
    check("'batch' must be at least 1" in m, "minimum violation: %r" % m)
    m = error_of(s.call("report", {"summary_tokens": 10})[0], -32602, "budget too small")
    check("at least 72" in m, "a budget under the minimum: %r" % m)
    # ---- every argument given every kind of value: an answer each, never a crash
    rng = random.Random(22)
    kinds = [1, -7, 1.5, "", "x", [], ["a"], [1], {}, {"a": 1}, {"a": "b"}, None, True]
    nowhere = os.path.join(tmp, "nowhere")
    for name, t in tools.items():
        sc = t["inputSchema"]
        base = {k: (nowhere if sc["properties"][k]["type"] == "string" else 1)
                for k in sc.get("required", [])}
        if name == "workspace":
            base = {"action": "ls", "workspace": nowhere}
        for prop in sc["properties"]:
            for v in kinds:
                args = dict(base, **{prop: v})
                if prop != "workspace" and "workspace" in sc["properties"]:
                    args.setdefault("workspace", nowhere)
                r, _ = s.call(name, args)
                check(r is not None and ("result" in r or r.get("error", {}).get("code") == -32602),
                      "%s %r: a result or -32602, got %r" % (name, args, r))
    # ---- random damage to valid requests: every line answered by JSON-RPC or ignored
    good = [json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"name": "check", "arguments": {"file": nowhere}}}),
            json.dumps({"jsonrpc": "2.0", "id": "a", "method": "tools/list"}),
            json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})]
    for i in range(300):
        b = bytearray(rng.choice(good).encode())
        for _ in range(rng.randint(1, 4)):
            op, k = rng.randint(0, 2), rng.randrange(len(b))
            if op == 0:
                del b[k]
            elif op == 1:
                b.insert(k, rng.randrange(256))
            else:
                b[k:] = b[k:k + rng.randint(0, 8)]
            if not b:
                b = bytearray(b"{")
        s.send_raw(bytes(b).replace(b"\n", b" ") + b"\n")
    r, notes = s.request("ping")
    check(result_of(r, "ping after the damaged lines") == {},
          "the server still serves after %d damaged lines (%d answers)" % (300, len(notes)))
    r, _ = s.request("ping")
    check(result_of(r, "ping after errors") == {}, "the server still serves after the errors")
    rc = s.close()
    check(rc == 0, "EOF ends the server with exit 0, got %r" % rc)

    # ---- usage errors of the command itself
    for extra, want in ((["mcp", "extra"], "takes no arguments"),
                        (["mcp", "--max-line", "5"], "from 1024 to 2^30")):
        p = subprocess.run([argus] + extra, capture_output=True, text=True, input="")
        check(p.returncode == 2 and want in p.stderr and not p.stdout,
              "argus %s: exit 2 with %r, got %d %r" % (" ".join(extra), want, p.returncode, p.stderr))

    # ---- a client that stops reading: the server exits 1 and says so
    p = subprocess.Popen([argus, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    p.stdout.close()
    try:
        p.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n' * 3)
        p.stdin.close()
    except BrokenPipeError:
        pass
    try:
        rc, err = p.wait(30), p.stderr.read()
    except subprocess.TimeoutExpired:
        p.kill()
        rc, err = None, b""
    check(rc == 1 and b"cannot write to the client" in err,
          "a client gone: exit 1 with the reason, got %r %r" % (rc, err))

    # ---- a line over --max-line is refused, and the server goes on
    s = Server(argus, tmp, ["--workspace", ws], ["--max-line", "1024"])
    s.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"x" * 5000 + b'"}}\n')
    m = error_of(s.recv(), -32600, "line too long")
    check("longer than 1024 bytes" in m, "too long a line: %r" % m)
    r, _ = s.request("ping")
    check(result_of(r, "ping after a long line") == {}, "served after a long line")
    # ---- a truncated last line (no newline, EOF): a parse error, then exit 0
    s.send_raw(b'{"jsonrpc":"2.0","id":2,"meth')
    s.p.stdin.close()
    error_of(s.recv(), -32700, "truncated last line")
    try:
        rc = s.p.wait(30)
    except subprocess.TimeoutExpired:
        s.p.kill()
        rc = None
    check(rc == 0, "exit 0 after a truncated last line, got %r" % rc)
    check(s.recv(5) is None, "nothing more on stdout")



if __name__ == "__main__":
    sys.exit(main())
