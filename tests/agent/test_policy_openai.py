#!/usr/bin/env python3
"""test_policy_openai.py - scripts/policy_openai.py against a local OpenAI-compatible
server (127.0.0.1, a thread of this test; no network): the request it sends, the
candidates it prints for a code-block answer and a KB answer, and its errors (HTTP 500,
an answer without a candidate, no key, a request that is not Argus's, an endpoint that is
not there); then, given the argus executable, `argus optimize --policy llm` through it
for one trial. Usage: test_policy_openai.py SOURCE_DIR [ARGUS]"""
import http.server
import json
import os
import subprocess
import shutil
import sys
import tempfile
import threading

SRC = sys.argv[1]
SCRIPT = os.path.join(SRC, "scripts", "policy_openai.py")
FAILS = []
SEEN = []
REPLY = {"status": 200, "content": ""}


def check(ok, what, *detail):
    print("%s: %s%s" % ("ok" if ok else "FAIL", what, "" if ok else " %r" % (detail,)))
    if not ok:
        FAILS.append(what)


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        SEEN.append({"path": self.path, "auth": self.headers.get("Authorization"),
                     "body": body})
        if REPLY["status"] != 200:
            self.send_response(REPLY["status"])
            self.end_headers()
            self.wfile.write(b"overloaded")
            return
        out = json.dumps({"choices": [{"message": {"role": "assistant",
                                                   "content": REPLY["content"]}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *a):
        pass


def run(req, *args, key="k-test"):
    env = dict(os.environ)
    env.pop("OPENAI_API_KEY", None)
    if key:
        env["OPENAI_API_KEY"] = key
    p = subprocess.run([sys.executable, SCRIPT, "--model", "m1", *args],
                       input=req if isinstance(req, str) else json.dumps(req),
                       capture_output=True, text=True, env=env, timeout=60)
    return p.returncode, p.stdout, p.stderr


def main():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    base = "http://127.0.0.1:%d/v1" % srv.server_address[1]
    prog = open(os.path.join(SRC, "examples", "tile", "gemm_naive.tile")).read()
    req = {"protocol": "argus-optimize/1",
           "task": {"name": "gemm-naive", "sizes": "M=64,N=64,K=64", "objective": "time"},
           "parent": "v3", "program": prog, "feedback": {"ok": False, "failed_step": "bind"},
           "evidence": None, "evidence_missing": "no GPU",
           "kb": [{"id": "pipeline-stages", "title": "t", "doc": "d", "edit": {}}],
           "history": [{"trial": 0, "edit": "start", "valid": True, "median_ms": 0.35}],
           "history_omitted": 2}

    # a code-block answer: the program, the line before it as the edit
    new = prog.replace("STAGES = 1\n", "STAGES = 2\n")
    REPLY["content"] = "Two stages hide the load latency.\n```tile\n%s```\n" % new
    rc, out, err = run(req, "--base-url", base)
    check(rc == 0, "a code-block answer is a candidate", rc, err)
    c = json.loads(out) if rc == 0 else {}
    check(c.get("program") == new, "the program is the block's text")
    check(c.get("edit") == "Two stages hide the load latency.", "the edit is the line before",
          c.get("edit"))
    s = SEEN[-1]
    check(s["path"] == "/v1/chat/completions", "POST to base-url/chat/completions", s["path"])
    check(s["auth"] == "Bearer k-test", "the key from OPENAI_API_KEY", s["auth"])
    check(s["body"]["model"] == "m1", "the model", s["body"]["model"])
    user = s["body"]["messages"][1]["content"]
    check(prog in user, "the program verbatim in the user message")
    check("failed_step" in user and "no GPU" in user and "pipeline-stages" in user,
          "feedback, why no evidence, the KB entries", user[:200])
    check("2 older trials left out" in user, "the omitted history is said")

    # a KB answer
    REPLY["content"] = 'Use the entry: {"kb": "pipeline-stages", "value": 3}'
    rc, out, err = run(req, "--base-url", base)
    check(rc == 0 and json.loads(out) == {"kb": "pipeline-stages", "value": 3},
          "a KB answer", rc, out, err)

    # failures, each with its exit code and words
    REPLY["content"] = "I would make the tiles bigger."
    rc, out, err = run(req, "--base-url", base)
    check(rc == 4 and "holds no candidate" in err and not out, "no candidate: exit 4", rc, err)
    REPLY["status"] = 500
    rc, out, err = run(req, "--base-url", base)
    check(rc == 3 and "HTTP 500" in err and "overloaded" in err, "HTTP 500: exit 3", rc, err)
    REPLY["status"] = 200
    rc, out, err = run(req, "--base-url", base, key=None)
    check(rc == 2 and "OPENAI_API_KEY is not set" in err, "no key: exit 2", rc, err)
    rc, out, err = run(req, "--base-url", base, "--api-key-env", "", key=None)
    check(rc == 4 and SEEN[-1]["auth"] is None, "--api-key-env '': no Authorization", rc, err)
    rc, out, err = run("not json", "--base-url", base)
    check(rc == 2 and "not JSON" in err, "stdin not JSON: exit 2", rc, err)
    rc, out, err = run({"protocol": "other"}, "--base-url", base)
    check(rc == 2 and "argus-optimize/1" in err, "another protocol: exit 2", rc, err)
    # the loop through it: argus optimize runs the adapter, the local model picks an entry
    if len(sys.argv) > 2:
        REPLY["content"] = '{"kb": "pipeline-stages", "value": 2}'
        ws = tempfile.mkdtemp(prefix="argus-policy-openai-")
        try:
            p = subprocess.run([sys.argv[2], "-W", ws, "optimize",
                                os.path.join(SRC, "tests", "agent", "gemm_naive.task.json"),
                                "--cpu", "--trials", "1", "--policy", "llm", "--",
                                sys.executable, SCRIPT, "--model", "m1", "--base-url", base,
                                "--api-key-env", ""], capture_output=True, text=True,
                               timeout=300)
        finally:
            shutil.rmtree(ws, ignore_errors=True)
        check(p.returncode == 0 and
              "v2 from v1 by kb:pipeline-stages(STAGES=2): valid" in p.stdout,
              "argus optimize --policy llm through the adapter", p.returncode, p.stdout[-300:],
              p.stderr[-300:])
        check("argus-optimize" not in SEEN[-1]["body"]["messages"][1]["content"] and
              "gemm-naive" in SEEN[-1]["body"]["messages"][1]["content"],
              "argus's request reached the model as the task's words")
    srv.shutdown()
    srv.server_close()
    rc, out, err = run(req, "--base-url", base, "--timeout", "5")
    check(rc == 3 and "cannot reach" in err, "no server: exit 3", rc, err)
    if FAILS:
        print("%d checks failed" % len(FAILS))
        sys.exit(1)


if __name__ == "__main__":
    main()
