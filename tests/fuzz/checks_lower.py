#!/usr/bin/env python3
"""checks_lower.py — "checks implies lowers": every program of the corpus that
`argus check` accepts must lower, and its CUDA C must compile.

  checks_lower.py --argus BIN [--seeds A:B] [--jobs J] [--min-checked N]

The corpus: examples/tile/*.tile, the planted bugs and correct variations
(examples/tile/bugs/*.mut, examples/tile/variants/*.mut, applied with
examples/tile/bugs/apply.sh), the saved fuzz inputs (tests/data/tile/fuzz/*.tile) and the
generated programs of tests/fuzz/tilegen.py for the seeds (default 0:40).

A program the checker accepts is one it runs to a verdict: exit 0 (every
assertion holds) or 1 (an assertion is violated or unknown). Assertions are
about tags, which the lowering drops (docs/lower.md), so a violated one does
not excuse a construct that does not lower; an exit 2 (malformed, or a form
the checker refuses at its line) leaves the program out. Each accepted
program must then `argus lower --unchecked FILE -o X.ptx` (NVRTC), or, in a
build without NVRTC, `-o X.cu` and `nvcc -ptx` compiles it. Without either
compiler the lowering is still required and the script exits 77 (skipped).

Exit: 0 all lowered and compiled; 1 a program does not lower or compile, or
fewer than --min-checked programs were accepted (the test would be vacuous);
77 no compiler; 2 usage.
"""
import argparse
import concurrent.futures as cf
import glob
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import fuzz_check  # noqa: E402  (its sources(): the programs tilegen mutates)
import tilegen  # noqa: E402


def corpus(tmp, seeds):
    """(name, path) of every program: the files, the applied .mut files, the generated."""
    out = [(os.path.relpath(p, ROOT), p) for p in sorted(glob.glob(os.path.join(
        ROOT, "examples", "tile", "*.tile")))]
    apply = os.path.join(ROOT, "examples", "tile", "bugs", "apply.sh")
    for sub in ("bugs", "variants"):
        d = os.path.join(ROOT, "examples", "tile", sub)
        for m in sorted(glob.glob(os.path.join(d, "*.mut"))):
            path = os.path.join(tmp, sub + "-" + os.path.basename(m)[:-4] + ".tile")
            subprocess.run(["sh", apply, m, path], check=True, stdout=subprocess.DEVNULL)
            out.append((os.path.relpath(m, ROOT), path))
    out += [(os.path.relpath(p, ROOT), p) for p in sorted(glob.glob(os.path.join(
        ROOT, "tests", "data", "tile", "fuzz", "*.tile")))]
    srcs = fuzz_check.sources()
    for s in range(seeds[0], seeds[1]):
        path = os.path.join(tmp, "seed-%d.tile" % s)
        kind, text = tilegen.program(s, srcs)
        with open(path, "w") as f:
            f.write(text)
        out.append(("tilegen seed %d (%s)" % (s, kind), path))
    return out


def run(cmd, timeout, env=None):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout, env=env)
        return p.returncode, p.stderr
    except subprocess.TimeoutExpired:
        return -1, "timed out after %d s" % timeout


def one(a, i, name, path, out, env, nvcc):
    """('skip' | 'ok' | 'nocc' | 'fail', checker exit, message); outputs go to out/<i>.*
    (never next to a program of the source tree)."""
    rc, err = run([a.argus, "check", path], a.timeout)
    if rc not in (0, 1):
        return "skip", rc, ""
    ptx = os.path.join(out, "%d.ptx" % i)
    lrc, lerr = run([a.argus, "lower", "--unchecked", path, "-o", ptx], a.timeout, env)
    if lrc == 0:
        return "ok", rc, ""
    if "without NVRTC" not in lerr:
        return "fail", rc, "%s: checks (exit %d) but does not lower:\n%s" % (name, rc, lerr)
    cu = os.path.join(out, "%d.cu" % i)
    lrc, lerr = run([a.argus, "lower", "--unchecked", path, "-o", cu], a.timeout, env)
    if lrc:
        return "fail", rc, "%s: checks (exit %d) but does not lower:\n%s" % (name, rc, lerr)
    if not nvcc:
        return "nocc", rc, ""
    inc = os.path.join(ROOT, "include")
    crc, cerr = run([nvcc, "-ptx", "-arch=sm_90a", "-I", inc, cu, "-o", ptx], a.timeout)
    if crc:
        return "fail", rc, "%s: the lowered CUDA C does not compile (nvcc):\n%s" % (name, cerr)
    return "ok", rc, ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--argus", required=True)
    ap.add_argument("--seeds", default="0:40")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--min-checked", type=int, default=30)
    a = ap.parse_args()
    try:
        s0, s1 = (int(x) for x in a.seeds.split(":"))
    except ValueError:
        print("checks_lower: --seeds A:B", file=sys.stderr)
        return 2
    cuda = os.environ.get("ARGUS_CUDA_HOME", "/usr/local/cuda")
    nvcc = shutil.which("nvcc") or (os.path.join(cuda, "bin", "nvcc")
                                    if os.access(os.path.join(cuda, "bin", "nvcc"), os.X_OK)
                                    else None)
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, ARGUS_CACHE_DIR=os.path.join(tmp, "cache"))
        progs = corpus(tmp, (s0, s1))
        out = os.path.join(tmp, "out")
        os.makedirs(out)
        with cf.ThreadPoolExecutor(a.jobs) as ex:
            res = list(ex.map(lambda ip: (ip[1][0],) + one(a, ip[0], ip[1][0], ip[1][1], out, env,
                                                          nvcc), enumerate(progs)))
    fails = [r for r in res if r[1] == "fail"]
    accepted = [r for r in res if r[1] != "skip"]
    clean = [r for r in accepted if r[2] == 0]
    nocc = [r for r in res if r[1] == "nocc"]
    for r in fails:
        print(r[3], file=sys.stderr)
    print("checks_lower: %d programs, %d accepted by the checker (%d with every assertion "
          "holding), %d lowered and compiled, %d failed" %
          (len(res), len(accepted), len(clean), len(accepted) - len(fails) - len(nocc),
           len(fails)))
    if fails:
        return 1
    if len(accepted) < a.min_checked:
        print("checks_lower: only %d programs accepted, fewer than %d: the corpus or the "
              "generator changed?" % (len(accepted), a.min_checked), file=sys.stderr)
        return 1
    if nocc:
        print("checks_lower: no NVRTC in argus and no nvcc: %d lowered programs not compiled "
              "(skipped)" % len(nocc))
        return 77
    return 0


if __name__ == "__main__":
    sys.exit(main())
