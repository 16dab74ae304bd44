"""`argus observe` on Triton kernels, end to end on the GPU (docs/triton.md, "Load-time
substitution"): the matmul and the attention forward of tests/triton/kernels.py, launched
by an unchanged Python program (run_kernels.py), with Argus's traced variant substituted
for Triton's cubin. Exit 77 without a GPU, torch or Triton.

usage: test_triton_gpu.py ARGUS SOURCE_DIR

Checks, per kernel:
- the report has every marked region's duration, observed, with occurrence counts that
  follow from the launch (warps x trips): the evidence is of the substituted, traced
  variant — Triton's own cubin has no probes and would record nothing, and the host
  runtime refuses a module whose bytes are not the variant's;
- the durations are sane: every region's mean and maximum within the traced kernel's time
  (the host runtime's events), a loop body's trips within its loop (the sum of the mean
  `step` times per trip within `mainloop`'s mean), the kernel's regions in sequence
  within the kernel (mean `mainloop` + mean `epilogue` < the kernel time);
- the perturbation values: the traced and trace-free kernel times of the same launches
  (both runs through Triton), recorded launches, no dropped records;
- the matmul's attributed signals (inst_mix, ownership: the mapping variant in Triton's
  place) and the async latency of its cp.async sites in a steady-state trip of the mainloop
  (`--scope iter=2:3`: the forced-completion probes, one run per site), and the static line:
  the trace-free variant is Triton's own cubin."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

FAILS = []


def check(cond, what, *show):
    print("%s: %s %s" % ("ok" if cond else "FAIL", what, " ".join(repr(s) for s in show)))
    if not cond:
        FAILS.append(what)


def skip_reason():
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        return "no torch (%s)" % e
    if not torch.cuda.is_available():
        return "no CUDA device"
    try:
        import triton  # noqa: F401
    except Exception as e:  # noqa: BLE001
        return "no triton (%s)" % e
    return None


def values(report, region=None, signal=None, stat=None):
    out = []
    for v in report.get("values", []):
        if region is not None and v.get("region") != region:
            continue
        if signal is not None and v.get("signal") != signal:
            continue
        if stat is not None and v.get("stat") != stat:
            continue
        out.append(v)
    return out


def one(report, region, signal, stat):
    vs = values(report, region, signal, stat)
    return vs[0]["value"] if vs else None


def observe(argus, work, name, args, kernel, region, signals="duration,occurrences",
            scope=None, script=None):
    spec = os.path.join(work, "%s.json" % name)
    with open(spec, "w") as f:
        json.dump({"python": script or os.path.join(HERE, "run_kernels.py"), "args": args,
                   "kernel": kernel}, f)
    cmd = [argus, "--json", "-W", os.path.join(work, "ws-" + name), "observe", spec,
           "--region", region, "--signals", signals, "--timeout", "300"]
    if scope:
        cmd += ["--scope", scope]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    sys.stderr.write(p.stderr[-6000:])
    check(p.returncode == 0, "%s: argus observe exits 0" % name, p.returncode)
    try:
        return json.loads(p.stdout)
    except ValueError:
        check(False, "%s: the report is JSON" % name, p.stdout[-2000:])
        return {}


def sane(name, r, kernel, outer, inner, after, trips, warps_per_launch):
    tk = one(r, None, "perturbation", "traced_kernel_time")
    tf = one(r, None, "perturbation", "trace_free_kernel_time")
    print("@ %s: traced kernel %s ns, trace-free %s ns, added %s ns" %
          (name, tk, tf, one(r, None, "perturbation", "added_time")))
    check(tk and tf and tk > 0 and tf > 0, "%s: traced and trace-free kernel times" % name, tk, tf)
    tb = one(r, None, "perturbation", "timed_build") or ""
    check("Triton's own build" in tb, "%s: the trace-free time is of Triton's own build" % name,
          tb)
    lv = one(r, None, "perturbation", "launches") or {}
    rec = lv.get("recorded") or []
    check(len(rec) >= 1, "%s: launches recorded (the traced variant ran in Triton's place)" %
          name, lv)
    nested = "%s/%s" % (outer, inner) if outer != inner else inner  # step is in mainloop
    for reg in dict.fromkeys((outer, nested, after)):
        q = "%s/%s" % (kernel, reg)
        cnt = one(r, q, "duration", "count")
        mean, mx = one(r, q, "duration", "mean"), one(r, q, "duration", "max")
        print("@ %s: %s count %s mean %s ns max %s ns" % (name, q, cnt, mean, mx))
        check(cnt and cnt > 0 and mean and mean > 0, "%s: %s has durations" % (name, q), cnt, mean)
        for v in values(r, q, "duration"):
            if v.get("stat") in ("mean", "max", "total", "count"):
                check(v.get("qual") == "observed", "%s: %s %s is observed" %
                      (name, q, v.get("stat")), v.get("qual"))
        if tk and mx is not None:
            check(mx <= tk * 1.02 + 1000, "%s: %s's longest occurrence within the kernel" %
                  (name, q), mx, tk)
    o, i, a = ("%s/%s" % (kernel, x) for x in (outer, nested, after))
    if outer == inner:  # attention: kv_loop is the loop body; the outer is the kernel
        i = o
    oc, ic, ac = (one(r, x, "duration", "count") for x in (o, i, a))
    om, im, am = (one(r, x, "duration", "mean") for x in (o, i, a))
    n = len(rec)
    if outer != inner:
        check(oc == warps_per_launch * n, "%s: one %s per warp per launch" % (name, outer), oc,
              warps_per_launch, n)
        check(ic == oc * trips, "%s: %d %s per %s" % (name, trips, inner, outer), ic, oc)
        check(im is not None and om is not None and im * trips <= om * 1.02 + 200,
              "%s: the %s trips within their %s" % (name, inner, outer), im, trips, om)
        check(om is not None and am is not None and tk and om + am <= tk * 1.02,
              "%s: %s then %s within the kernel" % (name, outer, after), om, am, tk)
    else:
        check(ic == warps_per_launch * n * trips, "%s: %d trips of %s per warp per launch" %
              (name, trips, inner), ic, warps_per_launch, n)
        check(ac == warps_per_launch * n, "%s: one %s per warp per launch" % (name, after), ac)
        check(im is not None and am is not None and tk and im * trips + am <= tk * 1.02,
              "%s: the %s trips then %s within the kernel" % (name, inner, after), im, am, tk)
    drops = [v for v in r.get("values", []) if "drop" in (v.get("stat") or "")
             and isinstance(v.get("value"), (int, float)) and v["value"] > 0]
    check(not drops, "%s: no record dropped" % name, drops[:3])
    check(not [m for m in r.get("missing", []) if m.get("signal") == "duration"],
          "%s: nothing of duration missing" % name, r.get("missing"))


def attributed(r):
    """The matmul's static line and attributed signals: the trace-free variant is Triton's
    own cubin (assembled as Triton does), every region owns instructions, the mix is there."""
    prod = one(r, "(module)", "static", "production") or ""
    print("@ matmul: static production: %s" % prod[:300])
    check("identical code" in prod, "matmul: the trace-free variant is Triton's cubin", prod)
    inst = [v for v in values(r, None, "inst_mix") if v.get("stat") == "kernel_total"]
    # the kernel's "pcs" is every PC; a region's own are its "static_pcs"
    own = [v for v in values(r, None, "ownership") if v.get("stat") == "static_pcs"]
    print("@ matmul: inst_mix kernel_total %s (%s), ownership static_pcs %s" %
          ([v["value"] for v in inst], [v.get("qual") for v in inst],
           [(v.get("region"), v["value"]) for v in own][:6]))
    for w in r.get("warnings", []):
        print("@ matmul: warning: %s" % str(w)[:400])
    check(inst and inst[0]["value"] > 0, "matmul: a derived or attributed instruction mix", inst)
    regs = {v.get("region") for v in own if isinstance(v.get("value"), (int, float))
            and v["value"] > 0}
    for reg in ("matmul/mainloop", "matmul/mainloop/step", "matmul/epilogue"):
        check(reg in regs, "matmul: %s owns instructions" % reg, sorted(regs))
    check(not [m for m in r.get("missing", []) if m.get("signal") in ("inst_mix", "ownership")],
          "matmul: nothing attributed is missing", r.get("missing"))


def asynchronous(r):
    """The async latency of the mainloop's cp.async sites in trip 2: an issue-to-completion
    latency per site (derived), and where the consumer waits, its exposed part (observed) no
    longer than the latency."""
    lat = [v for v in values(r, None, "async_latency") if (v.get("stat") or "").startswith(
        "latency[")]
    exp = {v["stat"][len("exposed"):]: v["value"] for v in values(r, None, "async_latency")
           if (v.get("stat") or "").startswith("exposed[")}
    print("@ matmul async: %d latencies %s; exposed %s" %
          (len(lat), [(v["stat"], v["value"]) for v in lat][:8], list(exp.items())[:8]))
    check(len(lat) >= 1, "matmul: async latencies of the mainloop's copies", r.get("missing"))
    check(not r.get("missing"), "matmul: nothing of async_latency missing", r.get("missing"))
    # a wgmma op that is not its group's last: its exposed part is the group's, said
    check(any("not separable per op" in str(w) for w in r.get("warnings", [])),
          "matmul: the per-op exposed part of grouped wgmma ops is a warning",
          r.get("warnings", [])[:3])
    for v in lat:
        check(isinstance(v.get("value"), (int, float)) and 0 < v["value"] < 1e6,
              "matmul: %s is a latency in ns" % v["stat"], v.get("value"))
        e = exp.get(v["stat"][len("latency"):])
        if isinstance(e, (int, float)):
            check(e <= v["value"] * 1.05 + 50, "matmul: %s's exposed part within it" % v["stat"],
                  e, v["value"])


def public(argus, work, src):
    """A kernel Argus did not write: Liger-Kernel's RMSNorm forward (examples/public/
    liger_rmsnorm, four markers added), run by its own script: every row's rstd then scale,
    observed; the trace-free build is Triton's cubin; what tracing cost is reported."""
    k = "_rms_norm_forward_kernel"
    rows, launches, warps = 8192, 6, 8
    r = observe(argus, work, "liger", [str(launches), str(rows)], k, k,
                "duration,occurrences,static",
                script=os.path.join(src, "examples", "public", "liger_rmsnorm", "run.py"))
    prod = one(r, "(module)", "static", "production") or ""
    print("@ liger: static production: %s" % prod[:200])
    check("identical code" in prod, "liger: the trace-free variant is Triton's cubin", prod)
    tk = one(r, None, "perturbation", "traced_kernel_time")
    tf = one(r, None, "perturbation", "trace_free_kernel_time")
    print("@ liger: traced kernel %s ns, trace-free %s ns, added %s ns" %
          (tk, tf, one(r, None, "perturbation", "added_time")))
    check(tk and tf and tk > 0 and tf > 0, "liger: traced and trace-free kernel times", tk, tf)
    n = len((one(r, None, "perturbation", "launches") or {}).get("recorded") or [])
    for reg in ("rstd", "scale"):
        q = "%s/%s" % (k, reg)
        cnt, mean = one(r, q, "duration", "count"), one(r, q, "duration", "mean")
        print("@ liger: %s count %s mean %s ns" % (q, cnt, mean))
        check(cnt == rows * warps * n and n >= 1, "liger: one %s per warp per row per launch" %
              reg, cnt, rows, warps, n)
        check(mean and 0 < mean < (tk or 0), "liger: %s within the kernel" % reg, mean, tk)
    check(not r.get("missing"), "liger: nothing missing", r.get("missing"))


HERE = os.path.dirname(os.path.abspath(__file__))

if __name__ == "__main__":
    argus, src = sys.argv[1], sys.argv[2]
    why = skip_reason()
    if why:
        print("skip: %s" % why)
        sys.exit(77)
    os.environ["PYTHONPATH"] = os.path.join(src, "python") + (
        ":" + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")
    os.environ.setdefault("ARGUS_PYTHON", sys.executable)
    work = tempfile.mkdtemp(prefix="argus-triton-gpu-")
    try:
        # matmul 1024^3, 128x128 tiles: 64 programs x 8 warps; K / BLOCK_K = 16 trips
        r = observe(argus, work, "matmul", ["matmul", "6"], "matmul", "matmul")
        sane("matmul", r, "matmul", "mainloop", "step", "epilogue", 16, 64 * 8)
        attributed(observe(argus, work, "matmul", ["matmul", "6"], "matmul", "matmul",
                           "static,inst_mix,ownership"))
        asynchronous(observe(argus, work, "matmul", ["matmul", "6"], "matmul",
                             "matmul/mainloop", "async_latency", "iter=2:3"))
        # attention 4 x 1024 x 64, 64-row blocks: 16 x 4 programs x 4 warps; 1024 / 64 trips
        r = observe(argus, work, "attention", ["attention", "6"], "attention_fwd",
                    "attention_fwd")
        sane("attention", r, "attention_fwd", "kv_loop", "kv_loop", "normalize", 16, 64 * 4)
        public(argus, work, src)
    finally:
        if not os.environ.get("ARGUS_KEEP"):
            shutil.rmtree(work, ignore_errors=True)
    if FAILS:
        print("%d checks failed" % len(FAILS))
        sys.exit(1)
    print("test_triton_gpu: all passed")
