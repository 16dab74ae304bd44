#!/usr/bin/env python3
"""fuzz_check.py — runs `argus check` on generated tile programs under a
sanitizer build and fails on anything outside its contract.

  fuzz_check.py --argus BUILD-ASAN/tools/argus/argus [--seeds A:B] [--date-seed]
                [--seconds S] [--jobs J] [--timeout T] [--rss MIB] [--out DIR]
  fuzz_check.py --argus BIN --replay FILE|DIR ...     regression inputs
  fuzz_check.py --argus BIN --minimize FILE [--out DIR]

Each input (tilegen.program(seed): a generated kernel, or a mutation of an
example or of a generated kernel) is written to a file and checked once, with
options drawn from the seed, under a CPU-time bound (--timeout, default 10 s; 12 times that in wall time)
and a resident-memory bound (--rss, default 2048 MiB, enforced by the
sanitizer runtime's hard_rss_limit_mb). An input FAILS when the process

  - dies of a signal, or prints a sanitizer report (AddressSanitizer,
    LeakSanitizer, UndefinedBehaviorSanitizer), or hits the memory bound;
  - runs past the time bound (a hang: the checker promises bounded time);
  - exits with a code outside the documented set 0, 1, 2 (docs/check.md);
  - exits 2 with no diagnostic on stderr (bad input gets a clear error).

Failing inputs are saved to --out (default fuzz-failures/) as seed-N.tile with
seed-N.log (command line, exit, the end of stderr). The seeds run are the fixed
range --seeds first, then, with --date-seed, consecutive seeds from a base
derived from today's date (printed) until --seconds have passed since the
start (the fixed seeds always run to the end); rerun one with
--seeds N:N+1. The summary gives the share of inputs that got past the parser,
and past the type checks into the checker (exit 0 or 1).

--replay runs saved inputs (files, or every *.tile of a directory) with the
same contract; a file may say what it must do on a line `# expect: exit N` and
`# expect: output TEXT` (a substring of stdout or stderr) and `# expect: cpu below S`
(default: half of --timeout). Exit status: 0 when nothing failed.
"""
import argparse
import concurrent.futures as cf
import datetime
import os
import random
import resource
import signal
import re
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tilegen  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# diagnostics of the lexer and parser (src/tile/front): an exit-2 input whose
# first error is one of these did not get past the parser
FRONT = re.compile(r"error: (expected |unexpected |found |empty block|chained assignment|"
                   r"integer literal|number literal|malformed number|digit '|string is not closed|"
                   r"non-ASCII byte|NUL byte|blocks nested|expression or block nested|"
                   r"a kernel \('def'\) must be at the top|'[^']*' without a matching|"
                   r"'[^']*' takes exactly one target|\d+ targets but \d+ values|"
                   r"positional argument after|tab in indentation|inconsistent dedent|"
                   r"dedent|indentation)")
SANITIZER = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|"
                       r"UndefinedBehaviorSanitizer|hard rss limit exceeded|"
                       r"AddressSanitizer:DEADLYSIGNAL")
ASAN_EXIT, UBSAN_EXIT = 86, 87
# wall-clock backstop, in CPU bounds: a CPU-starved run (load 10 on 2 cores
# was seen) must not read as a hang
WALL_FACTOR = 12


def sanitizer_env(rss_mib):
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = ("exitcode=%d:detect_leaks=1:hard_rss_limit_mb=%d:"
                           "abort_on_error=0:symbolize=1:allocator_may_return_null=0"
                           % (ASAN_EXIT, rss_mib))
    env["UBSAN_OPTIONS"] = "exitcode=%d:print_stacktrace=1:halt_on_error=1" % UBSAN_EXIT
    env["LSAN_OPTIONS"] = "exitcode=%d" % ASAN_EXIT
    return env


def options_for(seed):
    """argus check options drawn from the seed (mostly the defaults)."""
    r = random.Random(seed * 31 + 7)
    o = ["--rlimit", "1000000"]
    if r.random() < 0.1:
        o.append("--all")
    if r.random() < 0.1:
        o.append("--strict")
    if r.random() < 0.2:
        o.insert(0, "--json")
    if r.random() < 0.05:
        o += ["--set", "K=%d" % r.choice([0, 16, 64, 256])]
    if r.random() < 0.05:
        o += ["--max-steps", str(r.choice([1, 50, 1000]))]
    if r.random() < 0.05:
        o += ["--max-writes", str(r.choice([1, 8]))]
    if r.random() < 0.1:
        o += ["--batch", str(r.choice([1, 2, 4096]))]
    if r.random() < 0.03:
        o += ["--max-memory", "1"]
    return o


def run_one(argv0, path, opts, timeout, env):
    """Runs one check; returns (outcome, exit code, stderr, CPU seconds, argv).
    outcome: 'checked', 'malformed' or a failure kind. The time bound is on
    CPU time (RLIMIT_CPU: the 2-core CI machine is shared, wall time moves
    with its load), with WALL_FACTOR times as much wall time as a backstop."""
    cmd = [argv0] + (["--json"] if "--json" in opts else []) + ["check"] + \
          [o for o in opts if o != "--json"] + [path]
    lim = max(1, int(timeout))

    def bound():
        resource.setrlimit(resource.RLIMIT_CPU, (lim, lim + 1))
    t0 = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as errf:
        p = subprocess.Popen(cmd, stdout=out, stderr=errf, env=env, preexec_fn=bound)
        killer = threading.Timer(WALL_FACTOR * timeout, p.kill)
        killer.start()
        _, status, ru = os.wait4(p.pid, 0)  # its own CPU time, whatever the load
        p.returncode = os.waitstatus_to_exitcode(status)
        killer.cancel()
        errf.seek(0)
        err = errf.read().decode("utf-8", "replace")
        out.seek(0)
        run_one.stdout = out.read().decode("utf-8", "replace")
    wall = time.monotonic() - t0
    dt = ru.ru_utime + ru.ru_stime
    rc = p.returncode
    if rc == -signal.SIGKILL and wall >= WALL_FACTOR * timeout * 0.99:
        return "hang (wall %.0f s)" % wall, rc, err, dt, cmd
    if rc in (-signal.SIGXCPU, -signal.SIGKILL) and dt >= lim * 0.9 or rc == -signal.SIGXCPU:
        return "hang (over %d s of CPU)" % lim, rc, err, dt, cmd
    if SANITIZER.search(err) or rc in (ASAN_EXIT, UBSAN_EXIT):
        return "sanitizer", rc, err, dt, cmd
    if rc < 0:
        return "signal %d" % -rc, rc, err, dt, cmd
    if rc not in (0, 1, 2):
        return "exit %d" % rc, rc, err, dt, cmd
    if rc == 2 and "error" not in err:
        return "silent exit 2", rc, err, dt, cmd
    if rc == 2:
        return "malformed", rc, err, dt, cmd
    return "checked", rc, err, dt, cmd


def first_error(err):
    for line in err.splitlines():
        if "error:" in line:
            return line
    return ""


def save(outdir, name, text, outcome, rc, err, cmd):
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, name + ".tile"), "w") as f:
        f.write(text)
    with open(os.path.join(outdir, name + ".log"), "w") as f:
        f.write("command: %s\noutcome: %s\nexit: %s\n--- stderr (end)\n%s\n"
                % (" ".join(cmd), outcome, rc, err[-8000:]))


def sources():
    """The programs to mutate: the examples and their planted bugs."""
    out = []
    d = os.path.join(ROOT, "examples", "tile")
    for n in sorted(os.listdir(d)):
        if n.endswith(".tile"):
            with open(os.path.join(d, n)) as f:
                out.append(f.read())
    bugs = os.path.join(d, "bugs")
    with tempfile.TemporaryDirectory(prefix="fuzz_src.") as tmp:
        for n in sorted(os.listdir(bugs)):
            if n.endswith(".mut"):
                o = os.path.join(tmp, n + ".tile")
                subprocess.run(["sh", os.path.join(bugs, "apply.sh"), os.path.join(bugs, n), o],
                               check=True, stdout=subprocess.DEVNULL)
                with open(o) as f:
                    out.append(f.read())
    return out


def fuzz(a):
    env = sanitizer_env(a.rss)
    srcs = sources()
    lo, hi = (int(x) for x in a.seeds.split(":"))
    seeds = iter(range(lo, hi))
    base = None
    if a.date_seed:
        today = datetime.datetime.now(datetime.timezone.utc).date()
        base = int(today.strftime("%Y%m%d")) * 100000
        print("fuzz_check: fixed seeds %d:%d, then date seeds from %d (%s); rerun one with "
              "--seeds N:N+1" % (lo, hi, base, today), flush=True)

        def more():
            yield from range(lo, hi)
            k = base
            while True:
                yield k
                k += 1
        seeds = more()
    else:
        print("fuzz_check: seeds %d:%d" % (lo, hi), flush=True)
    deadline = time.monotonic() + a.seconds if a.seconds else None
    tmp = tempfile.mkdtemp(prefix="fuzz_check.")
    stats = {}
    failures = []
    slow_seeds = []
    slow = (0.0, None)
    fixed_done = 0

    def job(seed):
        kind, text = tilegen.program(seed, srcs)
        path = os.path.join(tmp, "seed-%d.tile" % seed)
        with open(path, "w") as f:
            f.write(text)
        res = run_one(a.argus, path, options_for(seed), a.timeout, env)
        os.unlink(path)
        return seed, kind, text, res

    with cf.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        pending = set()
        exhausted = False
        while True:
            while not exhausted and len(pending) < 2 * a.jobs:
                try:
                    s = next(seeds)
                except StopIteration:
                    exhausted = True
                    break
                # the fixed seeds always run (CI reruns them exactly); the time
                # budget bounds what comes after them
                if deadline and time.monotonic() > deadline and not (a.date_seed and lo <= s < hi):
                    exhausted = True
                    break
                pending.add(ex.submit(job, s))
            if not pending:
                break
            done, pending = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
            for fut in done:
                seed, kind, text, (outcome, rc, err, dt, cmd) = fut.result()
                if lo <= seed < hi:
                    fixed_done += 1
                if dt > slow[0]:
                    slow = (dt, seed)
                cls = outcome
                if outcome == "malformed":
                    cls = "parse error" if FRONT.search(first_error(err)) else "semantic error"
                k = stats.setdefault(kind, {})
                k[cls] = k.get(cls, 0) + 1
                if outcome.startswith("hang") and not (lo <= seed < hi):
                    # a seed past the fixed range that only ran out of time is
                    # reported, not failed: the bound is on a loaded machine's
                    # CPU and this seed changes with the date, so CI would fail
                    # at random; the fixed seeds enforce the bound exactly
                    slow_seeds.append(seed)
                    save(a.out, "seed-%d" % seed, text, outcome, rc, err, cmd)
                    print("SLOW seed %d (%s): %s, saved to %s/seed-%d.tile (a date seed: "
                          "reported, not failed)" % (seed, kind, outcome, a.out, seed), flush=True)
                elif outcome not in ("checked", "malformed"):
                    failures.append(seed)
                    save(a.out, "seed-%d" % seed, text, outcome, rc, err, cmd)
                    print("FAIL seed %d (%s): %s, saved to %s/seed-%d.tile"
                          % (seed, kind, outcome, a.out, seed), flush=True)
    os.rmdir(tmp)
    total = 0
    for kind in sorted(stats):
        k = stats[kind]
        n = sum(k.values())
        total += n
        parsed = n - k.get("parse error", 0)
        checked = k.get("checked", 0)
        print("%s: %d inputs, %d past the parser (%.0f%%), %d past the type checks into the "
              "checker (%.0f%%); %s" % (kind, n, parsed, 100.0 * parsed / n, checked,
                                        100.0 * checked / n,
                                        ", ".join("%s %d" % kv for kv in sorted(k.items()))))
    if hi > lo and fixed_done < hi - lo:
        print("fuzz_check: the time ran out after %d of the %d fixed seeds" % (fixed_done, hi - lo))
    print("fuzz_check: %d inputs, %d failed%s; slowest %.1f s (seed %s)"
          % (total, len(failures), (" (seeds %s)" % " ".join(map(str, failures[:20])))
             if failures else "", slow[0], slow[1]), flush=True)
    if slow_seeds:
        print("fuzz_check: %d date seeds ran past the time bound (reported, not failed): %s"
              % (len(slow_seeds), " ".join(map(str, slow_seeds[:20]))), flush=True)
    gen = stats.get("gen", {})
    ngen = sum(gen.values())
    if a.min_checked and ngen and 100.0 * gen.get("checked", 0) / ngen < a.min_checked:
        print("fuzz_check: only %.0f%% of the generated inputs got into the checker (goal %d%%)"
              % (100.0 * gen.get("checked", 0) / ngen, a.min_checked), flush=True)
        return 1
    return 1 if failures else 0


def expectations(text):
    ex, subs = None, []
    for m in re.finditer(r"^#\s*expect:\s*(exit|output)\s+(.*?)\s*$", text, re.M):
        if m.group(1) == "exit":
            ex = int(m.group(2))
        else:
            subs.append(m.group(2))
    return ex, subs


def replay(a):
    env = sanitizer_env(a.rss)
    files = []
    for p in a.replay:
        if os.path.isdir(p):
            files += [os.path.join(p, n) for n in sorted(os.listdir(p)) if n.endswith(".tile")]
        else:
            files.append(p)
    if not files:
        print("fuzz_check: nothing to replay in %s" % " ".join(a.replay), file=sys.stderr)
        return 2
    bad = 0
    for f in files:
        with open(f, errors="replace") as fh:
            text = fh.read()
        want, subs = expectations(text)
        m = re.search(r"^#\s*options:\s*(.*?)\s*$", text, re.M)
        opts = m.group(1).split() if m else ["--rlimit", "2000000"]
        outcome, rc, err, dt, cmd = run_one(a.argus, f, opts, a.timeout, env)
        why = []
        if outcome not in ("checked", "malformed"):
            why.append(outcome)
        if want is not None and rc != want:
            why.append("exit %s, expected %d" % (rc, want))
        for s in subs:
            if s not in err and s not in getattr(run_one, "stdout", ""):
                why.append("the output lacks '%s'" % s)
        m = re.search(r"^#\s*expect:\s*cpu below\s+([0-9.]+)", text, re.M)
        cpu = (float(m.group(1)) if m else a.timeout / 2) * a.cpu_scale
        if dt > cpu:
            why.append("took %.1f s of CPU (at most %g s)" % (dt, cpu))
        print("%s %s (exit %s, %.2f s)%s" % ("ok  " if not why else "FAIL", f, rc, dt,
                                             ": " + "; ".join(why) if why else ""))
        if why:
            bad += 1
            sys.stdout.write("    " + "\n    ".join(err.splitlines()[-12:]) + "\n")
    print("fuzz_check: %d replayed, %d failed" % (len(files), bad))
    return 1 if bad else 0


def minimize(a):
    """Drops lines (a line with its indented block) while the failure kind stays."""
    env = sanitizer_env(a.rss)
    with open(a.minimize) as f:
        lines = f.read().split("\n")
    tmp = tempfile.mkdtemp(prefix="fuzz_min.")
    path = os.path.join(tmp, "min.tile")
    opts = ["--rlimit", "2000000"]

    def kind_of(ls):
        with open(path, "w") as f:
            f.write("\n".join(ls))
        r = run_one(a.argus, path, opts, a.timeout, env)
        return r[0]

    want = kind_of(lines)
    print("minimize: %s: %s" % (a.minimize, want))
    if want in ("checked", "malformed"):
        return 1
    changed = True
    while changed:
        changed = False
        i = len(lines) - 1
        while i >= 0:
            ind = len(lines[i]) - len(lines[i].lstrip())
            j = i + 1
            while j < len(lines) and lines[j].strip() and len(lines[j]) - len(lines[j].lstrip()) > ind:
                j += 1
            for cand in (lines[:i] + lines[j:], lines[:i] + lines[i + 1:]):
                if cand != lines and kind_of(cand) == want:
                    lines = cand
                    changed = True
                    break
            i = min(i, len(lines)) - 1
    out = os.path.join(a.out, os.path.basename(a.minimize).replace(".tile", "") + ".min.tile")
    os.makedirs(a.out, exist_ok=True)
    with open(out, "w") as f:
        f.write("\n".join(lines))
    os.unlink(path)
    os.rmdir(tmp)
    print("minimize: %d lines, written to %s" % (len(lines), out))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--argus", required=True, help="the argus binary (an ASan+UBSan build)")
    ap.add_argument("--seeds", default="0:200", help="fixed seed range A:B (default 0:200)")
    ap.add_argument("--date-seed", action="store_true",
                    help="after the fixed seeds, seeds derived from today's date until --seconds")
    ap.add_argument("--seconds", type=float, default=0,
                    help="time budget: with --date-seed, for the date seeds after the fixed "
                         "ones; else for the fixed seeds (0: run them all)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=10, help="CPU seconds per input (default 10)")
    ap.add_argument("--cpu-scale", type=float, default=1,
                    help="multiplies each replayed file's 'cpu below' bound (a sanitized "
                         "Debug build runs several times slower; default 1)")
    ap.add_argument("--rss", type=int, default=2048, help="MiB per input (default 2048)")
    ap.add_argument("--out", default="fuzz-failures", help="directory for failing inputs")
    ap.add_argument("--min-checked", type=int, default=0,
                    help="fail when fewer than this percentage of the generated inputs "
                         "get past the type checks into the checker")
    ap.add_argument("--replay", nargs="+", help="check these files (or directories) only")
    ap.add_argument("--minimize", help="shrink a failing input, keeping its failure kind")
    a = ap.parse_args()
    if not os.access(a.argus, os.X_OK):
        print("fuzz_check: no argus binary at '%s' (build it: make asan)" % a.argus,
              file=sys.stderr)
        return 2
    if a.replay:
        return replay(a)
    if a.minimize:
        return minimize(a)
    return fuzz(a)


if __name__ == "__main__":
    sys.exit(main())
