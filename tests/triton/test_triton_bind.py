"""The binding of a Triton-launched kernel to libargus_host, on the CPU
(docs/triton.md, "Load-time substitution"): argus._triton_run's wrappers around a
stand-in of Triton 3.6's CompiledKernel (the same attributes and launcher call),
the real libargus_host.so, and the stand-in CUDA driver (tests/probes/fake_cuda.c,
through ARGUS_LIBCUDA). Needs no Triton and no GPU.

usage: test_triton_bind.py LIBARGUS_HOST FAKE_CUDA PYTHON_DIR
Each case runs in a process of its own (one ag_host per process, and the fake
driver keeps global state)."""
import ctypes
import json
import os
import subprocess
import sys
import tempfile

HOST, FAKE, PYDIR = sys.argv[1:4] if len(sys.argv) >= 4 else (None, None, None)
FAILS = []


def check(cond, what, *show):
    if not cond:
        FAILS.append(what)
        print("FAIL: %s %s" % (what, " ".join(repr(s) for s in show)), file=sys.stderr)


# ------------------------------------------------------- inside a case's process

class FakeMeta:
    """What the binding reads of Triton's KernelMetadata."""

    def __init__(self, num_warps=4, num_ctas=1, shared=1536):
        self.num_warps, self.num_ctas, self.shared = num_warps, num_ctas, shared


class StandIn:
    """Triton 3.6's CompiledKernel as the binding sees it: name, kernel (the cubin
    bytes Triton loads), metadata, module/function set by _init_handles (which
    loads the image, here with the fake driver's cuModuleLoadData), _run the
    launcher called as (gridX, gridY, gridZ, stream, function, *args)."""
    calls = []

    def __init__(self, name, image, meta, fail=False):
        self.name, self.kernel, self.metadata, self.fail = name, image, meta, fail
        self.module = self.function = self._run = None

    def _init_handles(self):
        if self.module is not None:
            return
        fake = ctypes.CDLL(os.environ["ARGUS_LIBCUDA"])
        m = ctypes.c_void_p()
        assert fake.cuModuleLoadData(ctypes.byref(m), ctypes.c_char_p(self.kernel)) == 0
        self.module, self.function = m.value, 1
        ck = self

        meta = self.metadata

        def launcher(*a):  # as Triton's launcher: cuLaunchKernelEx with these dimensions
            StandIn.calls.append(a)
            if ck.fail:
                raise RuntimeError("the launch failed")
            gx, gy, gz, stream, function = a[:5]
            if gx * gy * gz == 0:  # Triton's launcher queues nothing then
                return
            u = ctypes.c_uint
            assert fake.cuLaunchKernel(ctypes.c_void_p(function), u(gx * meta.num_ctas), u(gy),
                                       u(gz), u(32 * meta.num_warps), u(1), u(1), u(meta.shared),
                                       ctypes.c_void_p(stream), None, None) == 0
        self._run = launcher


def case(name, out):
    from argus._host import Host, HostError
    from argus._triton_run import Binding, Launch, main
    variant = os.environ.get("ARGUS_VARIANT")
    image = open(variant, "rb").read() if variant else b"CUBIN-BYTES"
    if name in ("trace", "time", "clusters"):
        host = Host()
        b = Binding(host, "matmul", StandIn)
        b.install()
        meta = FakeMeta(num_warps=8, num_ctas=2 if name == "clusters" else 1, shared=49152)
        ck = StandIn("matmul", image, meta)
        other = StandIn("softmax", b"OTHER", FakeMeta())
        ck._init_handles()
        other._init_handles()
        b.uninstall()
        check(isinstance(ck._run, Launch), "the measured kernel's launcher is wrapped")
        check(not isinstance(other._run, Launch), "another kernel's launcher is not wrapped")
        check(StandIn._init_handles.__name__ == "_init_handles" and b.orig is None,
              "uninstall restores _init_handles")
        check(host.traced(host.adopt(ck.module, image, "matmul")) == (name == "trace"),
              "adopting again gives the same module, traced in a trace run")
        for i in range(3):
            ck._run(4, 3, 1, 0x1234 + i * 0, 1, "packed", "md", None, None, "a_ptr", i)
        check(StandIn.calls[0] == (4, 3, 1, 0x1234, 1, "packed", "md", None, None, "a_ptr", 0),
              "the launcher gets Triton's arguments unchanged", StandIn.calls[0])
        check(len(StandIn.calls) == 3 and ck._run.launches == 3, "three launches")
        ck._run(0, 3, 1, 0, 1, "packed", "md", None, None)  # an empty grid: no Argus launch
        check(ck._run.launches == 3 and len(StandIn.calls) == 4, "an empty grid is passed through")
        host.finish()
        t = json.load(open(os.path.join(out, "timing.json")))
        ls = t["launches"]
        check(len(ls) == 3, "three timed launches", len(ls))
        gx = 8 if name == "clusters" else 4
        check(all(x["grid"] == [gx, 3, 1] and x["block"] == [256, 1, 1] and
                  x["shared_bytes"] == 49152 for x in ls),
              "grid gridX*num_ctas, block 32*num_warps, the metadata's shared bytes", ls[0])
        check([x["launch"] for x in ls] == [0, 1, 2], "launch indices 0, 1, 2")
        check(t["launches_total"] == 3 and all(x["kernel"] == "matmul" for x in ls),
              "the launches are the substituted kernel's", t["launches_total"])
        ev = os.path.exists(os.path.join(out, "trace.agev"))
        check(ev == (name == "trace"), "the trace evidence file (trace runs only)", ev)
        if name == "trace":
            log = open(os.environ["FAKE_CUDA_LOG"]).read().split("\n")
            rec = [x for x in log if x.startswith("launch ")]
            check(len(rec) == 3 and all(" enabled 1 " in x for x in rec),
                  "each launch ran with the trace descriptor bound and enabled", rec)
            check([x.split()[1] for x in rec] == ["0", "1", "2"],
                  "the descriptor carries each launch's index", rec)
        host.close()
    elif name == "selection":
        # the launches of bench/triton/argus_run.py under observe's default selection of
        # a traced run (launch 0 counts the records per warp, launches 1..40 recorded;
        # run_case sets ARGUS_TRACE_*), then finish and close as python -m
        # argus._triton_run does, and a launch after the close (docs/triton.md, "Limits")
        host = Host()
        b = Binding(host, "work_argus", StandIn)
        b.install()
        ck = StandIn("work_argus", image, FakeMeta(num_warps=8, shared=0))
        ck._init_handles()
        b.uninstall()
        logp = os.environ["FAKE_CUDA_LOG"]
        for i in range(41):
            ck._run(16, 1, 1, 0x55, 1, "args", i)
        before = open(logp).read().split("\n")
        host.finish()
        t = json.load(open(os.path.join(out, "timing.json")))
        whys = [x["why"].split(" ")[0] for x in t["launches"]]
        check(t["launches_total"] == 41 and whys == ["count-only:"] + ["recorded"] * 40,
              "launch 0 counted, launches 1..40 recorded", whys)
        check(os.path.exists(os.path.join(out, "trace.agev")), "the trace evidence is written")
        after = open(logp).read().split("\n")[len(before) - 1:]
        check(not [x for x in after if "load" in x],
              "the finish calibration loads and unloads no module (loaded at the open)", after)
        check([x for x in before if "load" in x][:1] == ["calibration load"] and
              sum(x == "calibration load" for x in before) == 1,
              "the calibration kernel is loaded once, at the open, before the launches",
              [x for x in before if "load" in x])
        host.close()
        check(open(logp).read().split("\n").count("unload") == 1,
              "the close unloads the calibration kernel (the adopted module is Triton's)")
        calls = []

        class Closed:
            def __getattr__(self, a):
                calls.append(a)
                raise RuntimeError("libargus_host called after ag_host_close: %s" % a)
        host.lib = Closed()
        n = len(StandIn.calls)
        try:
            ck._run(16, 1, 1, 0x55, 1, "args", 41)
        except RuntimeError as e:
            check(False, "a launch after the close reaches Triton's launcher", str(e))
        check(len(StandIn.calls) == n + 1 and not calls,
              "a launch after the close is Triton's alone (no call into the freed session)",
              calls)
        try:
            host.finish()
            check(False, "finish after the close is refused")
        except HostError as e:
            check("closed" in e.message and not calls, "finish after the close: HostError",
                  str(e), calls)
    elif name == "mismatch":
        host = Host()
        b = Binding(host, "matmul", StandIn)
        b.install()
        ck = StandIn("matmul", b"NOT-THE-VARIANT", FakeMeta())
        try:
            ck._init_handles()
            check(False, "a module that is not the variant is refused")
        except HostError as e:
            check("substitution was not applied" in str(e) and e.code == -998,
                  "the refusal says the substitution was not applied", str(e))
        err = open(os.path.join(out, "host-error.txt")).read()
        check("not the variant" in err, "the refusal is in host-error.txt for the task", err)
        host.close()
    elif name == "own":  # the timing run of Triton's own build: its bytes are not compared
        host = Host()
        b = Binding(host, "matmul", StandIn)
        b.install()
        ck = StandIn("matmul", b"TRITONS-OWN-CUBIN", FakeMeta())
        ck._init_handles()
        check(isinstance(ck._run, Launch), "Triton's own module is adopted as the variant")
        ck._run(2, 1, 1, 0, 1)
        host.finish()
        t = json.load(open(os.path.join(out, "timing.json")))
        check(len(t["launches"]) == 1, "its launch is timed", t["launches"])
        host.close()
    elif name == "errors":
        host = Host()
        try:
            host.adopt(0, None, "matmul")
            check(False, "adopting no module is refused")
        except HostError as e:
            check(e.code == -998 and "NULL" in e.message, "no module: EINVAL", str(e))
        ck = StandIn("matmul", image, FakeMeta())
        ck._init_handles()
        k = host.kernel(host.adopt(ck.module, image, "matmul"), "matmul")
        try:
            host.launch_end(k, True)
            check(False, "an end without a begin is refused")
        except HostError as e:
            check(e.code == -998 and "no launch was begun" in e.message, "end alone", str(e))
        host.launch_begin(k, (1, 1, 1), (128, 1, 1), 0, 0)
        try:
            host.launch_begin(k, (1, 1, 1), (128, 1, 1), 0, 0)
            check(False, "a second begin is refused")
        except HostError as e:
            check(e.code == -992 and "has no ag_host_launch_end" in e.message, "begin twice",
                  str(e))
        # the refused begin released the first launch's stream: the device syncs
        host.finish()
        check(os.path.exists(os.path.join(out, "timing.json")), "finish after the refusal")
        host.close()
    elif name == "fails":
        host = Host()
        b = Binding(host, "matmul", StandIn)
        b.install()
        ck = StandIn("matmul", image, FakeMeta(), fail=True)
        ck._init_handles()
        try:
            ck._run(2, 1, 1, 0, 1)
            check(False, "the launcher's exception propagates")
        except RuntimeError as e:
            check("the launch failed" in str(e), "the launcher's own exception", str(e))
        # the end ran: the next launch begins (a begin before the end is refused)
        ck.fail = False
        ck._run(3, 1, 1, 0, 1)
        host.finish()  # the fake driver fails a sync behind a closed gate
        t = json.load(open(os.path.join(out, "timing.json")))
        check([x["grid"][0] for x in t["launches"]] == [3],
              "the failed launch is not timed, the next one is", t["launches"])
        host.close()
    elif name == "main":
        script = os.path.join(out, "prog.py")
        with open(script, "w") as f:
            f.write("import sys\nprint('ran', sys.argv[1:])\nsys.exit(3)\n")
        code = main([script, "x", "y"])
        check(code == 3, "the script's exit status", code)
    if FAILS:
        sys.exit(1)


# ------------------------------------------------------------------ the driver

def run_case(name, collect):
    with tempfile.TemporaryDirectory() as d:
        variant = os.path.join(d, "variant.cubin")
        with open(variant, "wb") as f:
            f.write(b"VARIANT-CUBIN\x00\x01")
        env = dict(os.environ, ARGUS_LIBCUDA=FAKE, ARGUS_HOST_LIBRARY=HOST, PYTHONPATH=PYDIR,
                   FAKE_CUDA_LOG=os.path.join(d, "fake.log"))
        for k in ("ARGUS_COLLECT", "ARGUS_OUT", "ARGUS_VARIANT", "CUDA_INJECTION64_PATH"):
            env.pop(k, None)
        if collect:
            env.update(ARGUS_COLLECT=collect, ARGUS_OUT=d, ARGUS_VARIANT=variant)
        env.pop("ARGUS_TRITON_OWN", None)
        if name == "own":
            env["ARGUS_TRITON_OWN"] = "1"
        if name == "selection":  # what observe passes for 41 launches of 128 warps
            env.update(ARGUS_TRACE_SKIP="1", ARGUS_TRACE_LAUNCHES="40", ARGUS_TRACE_COUNT="1",
                       ARGUS_TRACE_WARPS="128", FAKE_CUDA_RECORDS="130")
        p = subprocess.run([sys.executable, __file__, "--case", name, d], env=env,
                           capture_output=True, text=True, timeout=120)
        sys.stderr.write(p.stderr)
        check(p.returncode == 0, "case %s (%s) passes" % (name, collect or "outside Argus"),
              p.returncode)
        if name == "main":
            check("ran ['x', 'y']" in p.stdout, "the script ran with its arguments", p.stdout)
            check("loaded no module that the variant replaces" in p.stderr,
                  "a run that never loaded the kernel says so", p.stderr[-400:])


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--case":
        sys.path.insert(0, os.environ["PYTHONPATH"])
        case(sys.argv[2], sys.argv[3])
        sys.exit(0)
    if os.environ.get("ARGUS_SANITIZED"):
        print("skip: a sanitized build: its libargus_host.so needs the ASan runtime loaded "
              "first; the plain build runs this test")
        sys.exit(77)
    if not (HOST and os.path.exists(HOST) and FAKE and os.path.exists(FAKE)):
        print("skip: no libargus_host.so or stand-in driver (a build without CUDA)")
        sys.exit(77)
    run_case("trace", "trace")
    run_case("selection", "trace")
    run_case("time", "time")
    run_case("clusters", "time")
    run_case("mismatch", "trace")
    run_case("own", "time")
    run_case("errors", "time")
    run_case("fails", "time")
    run_case("main", "trace")
    if FAILS:
        print("%d failed" % len(FAILS), file=sys.stderr)
        sys.exit(1)
    print("test_triton_bind: all passed")
