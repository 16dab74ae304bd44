#!/usr/bin/env python3
"""mutate.py — targeted mutation testing: every listed mutation must make a test fail.

Each file tests/mutations/*.mut lists mutations, one block each, blocks separated by blank
lines, '#' lines are comments:

    mutation: hidden-latency-sign
    file: src/synth/async.c
    find: lat - exp
    replace: lat + exp
    tests: test_async_synth test_probe_cli

`find` must occur exactly once in `file` (write more context until it does); `\\n` in find or
replace stands for a newline, `\\\\` for a backslash. `tests` names ctest tests (exact names).

The working tree is never touched: the tracked and untracked-not-ignored files are copied to
BUILD/tree, built in BUILD/b, and each mutation is applied there, built, its tests run, and
reverted. A mutation is *killed* when one of its tests fails (or the build fails, which is
reported apart: a mutation that does not compile tests nothing), and *survives* when all of
them pass. Before any mutation the named tests must pass on the unmutated tree, and a test
that skips (exit 77) there makes the run fail: it cannot kill anything on this machine.

Usage: scripts/mutate.py [--build DIR] [--only NAME[,NAME...]] [--list] [--stale] [--jobs N]
--stale builds nothing: it lists every mutation whose `find` no longer occurs exactly once in
its file, or whose file is gone (a code move leaves mutations behind; ctest's mutations_fresh
runs it), and exits 1 if there is any.
Exit: 0 every mutation killed; 1 a mutation survived, did not compile, or is stale; 2 usage.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def unescape(s):
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s) and s[i + 1] in "n\\":
            out.append("\n" if s[i + 1] == "n" else "\\")
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def parse(path):
    muts, cur, lineno = [], {}, 0
    keys = ("mutation", "file", "find", "replace", "tests")

    def close():
        if not cur:
            return
        missing = [k for k in keys if k not in cur]
        if missing:
            sys.exit(f"{path}:{cur['_line']}: mutation block lacks {', '.join(missing)}")
        muts.append(dict(cur))
        cur.clear()

    with open(path, encoding="utf-8") as f:
        for line in f:
            lineno += 1
            line = line.rstrip("\n")
            if line.startswith("#"):
                continue
            if not line.strip():
                close()
                continue
            m = re.match(r"^(\w+):\s?(.*)$", line)
            if not m or m.group(1) not in keys:
                sys.exit(f"{path}:{lineno}: expected one of {', '.join(keys)}: '{line[:80]}'")
            if not cur:
                cur["_line"] = lineno
                cur["_src"] = os.path.relpath(path, ROOT)
            cur[m.group(1)] = m.group(2)
    close()
    return muts


def staleness(m, root):
    """Why mutation m cannot be applied in the tree at root, or None."""
    try:
        with open(os.path.join(root, m["file"]), encoding="utf-8") as f:
            n = f.read().count(unescape(m["find"]))
    except OSError as e:
        return f"cannot read {m['file']}: {e.strerror}"
    return None if n == 1 else f"'find' occurs {n} times in {m['file']}"


def run(cmd, cwd, log=None):
    r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if log is not None:
        log.write(r.stdout)
    return r.returncode, r.stdout


def sync_tree(tree):
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=ROOT, stdout=subprocess.PIPE, check=True).stdout.split(b"\0")
    for rel in files:
        if not rel:
            continue
        rel = rel.decode()
        src, dst = os.path.join(ROOT, rel), os.path.join(tree, rel)
        if not os.path.isfile(src):
            continue
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if not os.path.exists(dst) or open(src, "rb").read() != open(dst, "rb").read():
            shutil.copyfile(src, dst)  # a fresh mtime: ninja rebuilds what changed
            shutil.copymode(src, dst)


def ctest(bdir, tests, jobs):
    regex = "^(" + "|".join(re.escape(t) for t in tests) + ")$"
    rc, out = run(["ctest", "--test-dir", bdir, "-R", regex, "-j", str(jobs),
                   "--output-on-failure", "--timeout", "600"], bdir)
    ran = len(re.findall(r"Test\s+#\d+:", out))
    skipped = re.findall(r"Test\s+#\d+:\s+(\S+)\s+\.+\*+Skipped", out) + \
        re.findall(r"Test\s+#\d+:\s+(\S+)\s+\.+\s*Not Run", out)
    return rc, ran, skipped, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build-mut"))
    ap.add_argument("--only", default="")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--stale", action="store_true")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    a = ap.parse_args()

    muts = []
    for p in sorted(glob.glob(os.path.join(ROOT, "tests", "mutations", "*.mut"))):
        muts += parse(p)
    names = [m["mutation"] for m in muts]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        sys.exit(f"mutate: duplicate mutation names: {', '.join(sorted(dup))}")
    if a.only:
        want = set(a.only.split(","))
        unknown = want - set(names)
        if unknown:
            print(f"mutate: no mutation named {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        muts = [m for m in muts if m["mutation"] in want]
    if a.stale:
        old = [(m, why) for m in muts for why in [staleness(m, ROOT)] if why]
        for m, why in old:
            print(f"{m['_src']}: {m['mutation']}: stale: {why}")
        print(f"mutate: {len(muts)} mutations, {len(old)} stale")
        return 1 if old else 0
    if a.list:
        for m in muts:
            print(f"{m['mutation']}\t{m['file']}\t{m['tests']}")
        return 0
    if not muts:
        print("mutate: no mutations listed under tests/mutations/", file=sys.stderr)
        return 2

    a.build = os.path.abspath(a.build)  # the commands run from the repository root
    tree, bdir = os.path.join(a.build, "tree"), os.path.join(a.build, "b")
    os.makedirs(tree, exist_ok=True)
    sync_tree(tree)
    log = open(os.path.join(a.build, "mutate.log"), "w")
    if not os.path.exists(os.path.join(bdir, "build.ninja")):
        rc, out = run(["cmake", "-S", tree, "-B", bdir, "-G", "Ninja"], ROOT, log)
        if rc:
            print(out[-3000:], file=sys.stderr)
            print("mutate: cannot configure the copy", file=sys.stderr)
            return 1
    rc, out = run(["cmake", "--build", bdir, "-j", str(a.jobs)], ROOT, log)
    if rc:
        print(out[-3000:], file=sys.stderr)
        print("mutate: the unmutated copy does not build", file=sys.stderr)
        return 1

    # Baseline: every named test exists, passes, and does not skip.
    alltests = sorted({t for m in muts for t in m["tests"].split()})
    rc, ran, skipped, out = ctest(bdir, alltests, a.jobs)
    bad = False
    if rc or ran != len(alltests):
        print(out[-4000:], file=sys.stderr)
        print(f"mutate: baseline: {ran} of {len(alltests)} named tests ran, rc {rc}", file=sys.stderr)
        bad = True
    if skipped:
        print(f"mutate: baseline: these tests skip here and cannot kill: {', '.join(skipped)}",
              file=sys.stderr)
        bad = True
    if bad:
        return 1

    killed, survived, broken, stale = [], [], [], []
    for i, m in enumerate(muts, 1):
        path = os.path.join(tree, m["file"])
        find, repl = unescape(m["find"]), unescape(m["replace"])
        why = staleness(m, tree)
        if why:
            stale.append((m, why))
            continue
        orig = open(path, encoding="utf-8").read()
        tag = f"[{i}/{len(muts)}] {m['mutation']}"
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(orig.replace(find, repl))
            rc, out = run(["cmake", "--build", bdir, "-j", str(a.jobs)], ROOT, log)
            if rc:
                broken.append(m)
                print(f"{tag}: DOES NOT COMPILE", flush=True)
                continue
            rc, ran, skipped, out = ctest(bdir, m["tests"].split(), a.jobs)
            log.write(out)
            if rc:
                killed.append(m)
                print(f"{tag}: killed", flush=True)
            else:
                survived.append(m)
                print(f"{tag}: SURVIVED ({m['_src']}:{m['_line']}; tests {m['tests']})", flush=True)
        finally:
            with open(path, "w", encoding="utf-8") as f:
                f.write(orig)
    run(["cmake", "--build", bdir, "-j", str(a.jobs)], ROOT, log)
    for m, why in stale:
        print(f"STALE {m['mutation']} ({m['_src']}:{m['_line']}): {why}")
    print(f"mutate: {len(killed)} killed, {len(survived)} survived, "
          f"{len(broken)} did not compile, {len(stale)} stale")
    return 0 if not (survived or broken or stale) else 1


if __name__ == "__main__":
    sys.exit(main())
