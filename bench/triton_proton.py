"""Argus's traced variant beside Triton's Proton (instrumentation mode) on the same Triton
kernel, in one run (issue 22; docs/triton.md, "Proton side by side").

usage: triton_proton.py ARGUS [--launches N] [--results FILE]

The kernel: bench/triton/kernels.py, 128 programs x 256 threads, 64 trips of 8
multiply-adds, one scope/region around each trip (64 occurrences per warp) — once with
Argus's markers (work_argus), once with Proton's scopes (work_proton), the same body.

- baseline: work_argus launched here, outside Argus (its markers emit no machine code:
  test_triton), N launches;
- Proton: work_proton compiled and run under proton.start(backend="instrumentation") with
  the Triton semantic enabled, N launches, then proton.finalize();
- Argus: `argus observe` on a python spec whose program (bench/triton/argus_run.py) launches
  work_argus N times unchanged; it times its launches in each run it is run in (discovery:
  plain Triton; the timing run; the traced run, Argus's traced variant substituted).

Each launch is timed the same way for every tool: the kernel by CUPTI's activity records
(torch.profiler: the kernel's start and end on the GPU), the host by the wall time of the
launch call; beside them the stream time (CUDA events around the launch call, queued
behind a sleep kernel), which also holds what a tool queues around the kernel. Added
kernel time = median(tool) - median(baseline); host time per launch = median launch call
(tool) - median launch call (baseline), plus for Proton its finalize() spread over the
launches. The Argus run records every launch after the first (observe's default
selection: the first launch counts the records per warp, and 2 x LAUNCHES whole
launches fit the record budget), so every launch the profiler times is a recorded one. Goals (issue 22): Argus's added
kernel time <= 0.5 x Proton's, Argus's host time <= 1 ms per launch; exit 1 when a goal
is not met, 77 without a GPU, torch or Proton."""
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)


def goal(name, value, limit, unit):
    met = value == value and value <= limit  # NaN never meets a goal
    print("goal: %s: %s (%.4g %s, goal <= %.4g %s)" % (name, "met" if met else "NOT met", value,
                                                      unit, limit, unit))
    return met


def skip_reason():
    sys.path.insert(0, os.path.join(SRC, "tests", "triton", "gpu"))
    from test_triton_gpu import skip_reason as gpu_skip  # torch, a CUDA device, Triton
    why = gpu_skip()
    if why:
        return why
    try:
        import triton.profiler  # noqa: F401
        import triton.profiler.language  # noqa: F401
    except Exception as e:  # noqa: BLE001
        return "no Proton (triton.profiler: %s)" % e
    return None


def proton_kept(path):
    """What Proton's profile (its hatchet JSON) holds for the scope "step": the sum of the
    metrics named count over the nodes of that frame, as text; what was found otherwise."""
    try:
        with open(path) as f:
            tree = json.load(f)
    except (OSError, ValueError) as e:
        return "- (%s)" % e
    total, names, stack = 0, set(), list(tree if isinstance(tree, list) else [tree])
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        frame = node.get("frame") or {}
        metrics = node.get("metrics") or {}
        names.update(metrics)
        if frame.get("name") == "step":
            total += sum(v for k, v in metrics.items()
                         if k.startswith("count") and isinstance(v, (int, float)))
        stack.extend(node.get("children") or [])
    return "%d" % total if total else "- (no count for 'step'; metrics %s)" % sorted(names)


def main(argv):
    if not argv or argv[0].startswith("-"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    argus, n, results = argv[0], 20, None
    i = 1
    while i < len(argv):
        if argv[i] == "--launches" and i + 1 < len(argv):
            n = int(argv[i + 1])
            i += 2
        elif argv[i] == "--results" and i + 1 < len(argv):
            results = argv[i + 1]
            i += 2
        else:
            print("triton_proton: unknown option '%s'" % argv[i], file=sys.stderr)
            return 2
    why = skip_reason()
    if why:
        print("skip: %s" % why)
        return 77
    os.environ["PYTHONPATH"] = os.path.join(SRC, "python") + (
        ":" + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")
    sys.path.insert(0, os.path.join(SRC, "python"))
    sys.path.insert(0, os.path.join(HERE, "triton"))
    import torch
    import triton.profiler as proton
    import triton.profiler.language as pl
    import kernels as K

    work = tempfile.mkdtemp(prefix="argus-proton-")
    x = torch.rand(K.PROGRAMS * K.B, device="cuda")
    y = torch.empty_like(x)
    # baseline: the kernel without instrumentation (the first launch compiles)
    bs, bh = K.timed_launches(K.work_argus, x, y, n + 1)
    bs, bh = bs[1:], bh[1:]
    bk = K.kernel_times(K.work_argus, x, y, n)
    # Proton, instrumentation mode
    pl.enable_semantic("triton")
    proton.start(os.path.join(work, "proton"), backend="instrumentation")
    ps, ph = K.timed_launches(K.work_proton, x, y, n + 1)
    ps, ph = ps[1:], ph[1:]
    try:
        pk, pk_how = K.kernel_times(K.work_proton, x, y, n), "CUPTI"
    except Exception as e:  # noqa: BLE001 (a profiler that cannot run beside Proton)
        print("triton_proton: torch.profiler beside Proton failed: %s" % e)
        pk = []
    t0 = time.perf_counter()
    proton.finalize()
    fin_ms = (time.perf_counter() - t0) * 1e3
    kept = proton_kept(os.path.join(work, "proton.hatchet"))
    if not pk:  # the stream time instead (it holds what Proton does on the GPU's clock)
        pk, pk_how = ps, "stream time (CUPTI recorded no Proton kernel)"
    # Argus: observe a python spec that launches work_argus
    spec = os.path.join(work, "spec.json")
    with open(spec, "w") as f:
        json.dump({"python": os.path.join(HERE, "triton", "argus_run.py"), "args": [str(n)],
                   "kernel": "work_argus"}, f)
    env = dict(os.environ, BENCH_OUT=work, ARGUS_PYTHON=os.environ.get("ARGUS_PYTHON",
                                                                        sys.executable))
    t0 = time.perf_counter()
    p = subprocess.run([argus, "--json", "-W", os.path.join(work, "ws"), "observe", spec,
                        "--region", "work_argus", "--signals", "duration"],
                       capture_output=True, text=True, env=env, timeout=900)
    obs_s = time.perf_counter() - t0
    if p.returncode != 0:
        sys.stderr.write(p.stderr[-4000:])
        try:  # the report's "missing" says which signal a failed task took, and why
            for m in json.loads(p.stdout).get("missing", []) or []:
                print("triton_proton: missing: %s" % json.dumps(m)[:4000])
        except ValueError:
            print(p.stdout[-4000:])
        print("triton_proton: argus observe failed (exit %d)" % p.returncode)
        return 1
    report = json.loads(p.stdout)
    runs = {}
    for r in ("plain", "time", "trace"):
        try:
            with open(os.path.join(work, "%s.json" % r)) as f:
                runs[r] = json.load(f)
        except OSError:
            print("triton_proton: the %s run left no timings" % r)
            return 1
    med = K.median
    for r in ("plain", "trace"):
        if not runs[r]["kernel_ms"]:
            print("triton_proton: CUPTI recorded no work_argus kernel in the %s run" % r)
            return 1
    base_k, base_h, base_s = med(bk), med(bh), med(bs)
    prot_add_us = (med(pk) - base_k) * 1e3
    argus_add_us = (med(runs["trace"]["kernel_ms"]) - med(runs["plain"]["kernel_ms"])) * 1e3
    prot_stream_us = (med(ps) - base_s) * 1e3
    argus_stream_us = (med(runs["trace"]["stream_ms"]) - med(runs["plain"]["stream_ms"])) * 1e3
    prot_host_ms = med(ph) - base_h + fin_ms / n
    argus_host_ms = med(runs["trace"]["host_ms"]) - med(runs["plain"]["host_ms"])
    vals = report.get("values", [])
    rep_add = [v["value"] for v in vals
               if v.get("signal") == "perturbation" and v.get("stat") == "added_time"]
    rec = [v["value"] for v in vals
           if v.get("signal") == "perturbation" and v.get("stat") == "launches"]
    drops = sum(v["value"] for v in vals if "drop" in (v.get("stat") or "")
                and isinstance(v.get("value"), (int, float)))
    nrec = len((rec[0] or {}).get("recorded") or []) if rec else 0
    if nrec < 2 * n:  # the profiled launches are the last n of 2n + 1
        print("triton_proton: only %d of the %d launches after the first were recorded: the "
              "traced kernel times would mix unrecorded launches" % (nrec, 2 * n))
        return 1
    occ = K.TRIPS
    ratio = argus_add_us / prot_add_us if prot_add_us > 0 else float("nan")
    rows = [
        ("baseline kernel (no instrumentation)", "%.2f us" % (base_k * 1e3), "CUPTI kernel time"),
        ("Proton: added kernel time", "%.2f us" % prot_add_us,
         "%.1f ns per occurrence per warp; %s" % (prot_add_us * 1e3 / occ, pk_how)),
        ("Argus traced: added kernel time", "%.2f us" % argus_add_us,
         "%.1f ns per occurrence per warp; CUPTI" % (argus_add_us * 1e3 / occ)),
        ("Argus / Proton added kernel time", "%.3f" % ratio, "goal <= 0.5"),
        ("Proton: added stream time", "%.2f us" % prot_stream_us,
         "events around the launch call, behind a sleep"),
        ("Argus traced: added stream time", "%.2f us" % argus_stream_us,
         "the same; holds the host runtime's stream operations"),
        ("Argus report's added_time", "%.2f us" % (rep_add[0] / 1e3) if rep_add else "-",
         "traced variant - Triton's own build, the host runtime's events"),
        ("Argus: launches recorded, records dropped", "%d, %d" % (nrec, drops), ""),
        ("Proton: scope occurrences in its profile", kept,
         "of %d run (%d launches x %d programs x %d warps x %d trips)"
         % ((n + 1) * K.PROGRAMS * K.WARPS * K.TRIPS, n + 1, K.PROGRAMS, K.WARPS, K.TRIPS)),
        ("Proton: host time per launch", "%.3f ms" % prot_host_ms,
         "finalize %.1f ms over %d launches" % (fin_ms, n)),
        ("Argus traced: host time per launch", "%.3f ms" % argus_host_ms, "goal <= 1 ms"),
        ("argus observe (discovery + 2 runs + synthesis)", "%.1f s" % obs_s, ""),
    ]
    table = "| figure | value | note |\n|---|---|---|\n" + "".join(
        "| %s | %s | %s |\n" % r for r in rows)
    print(table)
    ok = goal("Argus added kernel time / Proton's", ratio, 0.5, "x")
    ok &= goal("Argus host time per launch", argus_host_ms, 1.0, "ms")
    if results:
        with open(results, "a") as f:
            f.write("\n## Argus beside Proton on a Triton kernel (issue 22)\n\n%s\n"
                    "- date: %s, %d launches each, command: `python3 bench/triton_proton.py "
                    "ARGUS --launches %d`\n" % (table, time.strftime("%Y-%m-%d"), n, n))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
