#!/usr/bin/env python3
"""policy_openai.py - an `argus optimize --policy llm` command for any OpenAI-compatible
chat-completions endpoint (docs/optimize.md, "The llm protocol").

    argus optimize TASK.json --policy llm -- python3 scripts/policy_openai.py --model NAME \
        [--base-url URL] [--api-key-env VAR] [--temperature T] [--max-tokens N] [--timeout S]

Reads Argus's request (JSON, protocol argus-optimize/1) on stdin, asks the model for one
candidate and prints it on stdout as the protocol wants: {"kb": ENTRY[, "value": V]} when
the model answers with such a JSON object, else {"edit": SUMMARY, "program": SOURCE} from
the first fenced code block of its answer. The base URL defaults to $OPENAI_BASE_URL, else
https://api.openai.com/v1; the key is read from the environment variable --api-key-env
names (default OPENAI_API_KEY; a local server may need none: --api-key-env ''). Standard
library only. Exit 0 with a candidate; 2 for bad arguments or a request that is not
Argus's; 3 when the endpoint fails (HTTP error, timeout, not JSON); 4 when the answer holds
no candidate. Every failure says what and where on stderr, which Argus shows.
"""
import argparse
import json
import os
import re
import sys
import urllib.error
import urllib.request

SYSTEM = """You optimize one GPU kernel written in Argus's tile DSL (a Python-like language
that Argus checks, lowers to CUDA and runs on an NVIDIA H200). Each turn you get the task,
the current program, the validator's verdict on the last candidate, the region evidence
(each region's share of the kernel's time, its instruction mix, occupancy, bank conflicts),
the knowledge-base entries that apply, and the history of earlier candidates with their
times. Propose ONE candidate that keeps the kernel's signature, its tag assertions and its
results, and is faster. Answer with either
  - a JSON object {"kb": "ENTRY_ID", "value": V} to apply a knowledge-base entry (value for
    entries that set a constant), or
  - one short line saying what you changed, then the whole new program in one ```tile
    fenced block.
Nothing else."""


def fail(code, msg):
    sys.stderr.write("policy_openai: %s\n" % msg)
    sys.exit(code)


def user_message(req):
    """The request as the model reads it: the fields that matter, the program verbatim."""
    task = req.get("task", {})
    parts = ["Task %s: sizes %s%s, objective %s." % (
        task.get("name"), task.get("sizes"),
        (", timed at " + task["time_sizes"]) if task.get("time_sizes") else "",
        task.get("objective"))]
    parts.append("Current program (%s):\n```tile\n%s\n```" % (req.get("parent"), req["program"]))
    if req.get("feedback") is not None:
        parts.append("Validator verdict on the last candidate:\n" +
                     json.dumps(req["feedback"], indent=1)[:6000])
    if req.get("evidence") is not None:
        parts.append("Region evidence of the current program:\n" +
                     json.dumps(req["evidence"], indent=1)[:6000])
    elif req.get("evidence_missing"):
        parts.append("No region evidence: %s" % req["evidence_missing"])
    kb = [{k: e.get(k) for k in ("id", "title", "doc", "edit")} for e in req.get("kb", [])]
    if kb:
        parts.append("Knowledge-base entries that apply:\n" + json.dumps(kb, indent=1))
    hist = [{k: t.get(k) for k in ("trial", "parent", "edit", "valid", "step", "median_ms")
             if k in t} for t in req.get("history", [])]
    if hist:
        omitted = req.get("history_omitted", 0)
        parts.append("History (oldest first%s):\n%s" % (
            ", %d older trials left out" % omitted if omitted else "", json.dumps(hist)))
    return "\n\n".join(parts)


def candidate(text):
    """The protocol's candidate from the model's answer, or None."""
    for m in re.finditer(r"\{[^{}]*\"kb\"[^{}]*\}", text):
        try:
            obj = json.loads(m.group(0))
        except ValueError:
            continue
        if isinstance(obj.get("kb"), str):
            return {k: obj[k] for k in ("kb", "value") if k in obj}
    m = re.search(r"```[A-Za-z0-9_-]*\n(.*?)```", text, re.S)
    if not m or not m.group(1).strip():
        return None
    before = text[:m.start()].strip().splitlines()
    summary = (before[-1] if before else "model edit").strip()[:120] or "model edit"
    return {"edit": summary, "program": m.group(1)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL",
                                                         "https://api.openai.com/v1"))
    ap.add_argument("--api-key-env", default="OPENAI_API_KEY")
    ap.add_argument("--temperature", type=float, default=0.2)
    ap.add_argument("--max-tokens", type=int, default=8192)
    ap.add_argument("--timeout", type=float, default=300)
    a = ap.parse_args()
    try:
        req = json.load(sys.stdin)
    except ValueError as e:
        fail(2, "the request on stdin is not JSON: %s" % e)
    if not isinstance(req, dict) or req.get("protocol") != "argus-optimize/1" or \
            not isinstance(req.get("program"), str):
        fail(2, "stdin is not an argus-optimize/1 request (run me as argus optimize's "
                "--policy llm command)")
    headers = {"Content-Type": "application/json"}
    if a.api_key_env:
        key = os.environ.get(a.api_key_env)
        if not key:
            fail(2, "no API key: the environment variable %s is not set (or pass "
                    "--api-key-env '' for an endpoint that needs none)" % a.api_key_env)
        headers["Authorization"] = "Bearer " + key
    body = {"model": a.model, "temperature": a.temperature, "max_tokens": a.max_tokens,
            "messages": [{"role": "system", "content": SYSTEM},
                         {"role": "user", "content": user_message(req)}]}
    url = a.base_url.rstrip("/") + "/chat/completions"
    try:
        r = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
        with urllib.request.urlopen(r, timeout=a.timeout) as resp:
            reply = json.loads(resp.read().decode("utf-8", "replace"))
    except urllib.error.HTTPError as e:
        fail(3, "%s answered HTTP %d: %s" % (url, e.code,
                                             e.read().decode("utf-8", "replace")[:300]))
    except (urllib.error.URLError, OSError) as e:
        fail(3, "cannot reach %s: %s" % (url, getattr(e, "reason", e)))
    except ValueError as e:
        fail(3, "%s answered something that is not JSON: %s" % (url, e))
    try:
        text = reply["choices"][0]["message"]["content"] or ""
    except (KeyError, IndexError, TypeError):
        fail(3, "%s answered without choices[0].message.content: %.300s" % (url, reply))
    cand = candidate(text)
    if cand is None:
        fail(4, "the model's answer holds no candidate (a {\"kb\": ...} object or a fenced "
                "program): %.300s" % text)
    json.dump(cand, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
