"""The Python package on the CPU: plan, observe's static signal (no GPU
needed) read as Value objects, workspaces (refs, versions, fork, stored
reports, a newer schema refused), the prompt-sized summary of a stored report
(its token budget, its ranking, bad budgets), check, and bad arguments:
TypeError naming the parameter, ArgusError subclasses carrying the
diagnostics."""
import os
import re
import sqlite3

import pytest

import argus


def test_version():
    assert argus.API_VERSION == 1
    assert argus.__version__.count(".") == 2


def test_plan(tmp_path, spec):
    ws = argus.Workspace(tmp_path / "ws")
    p = argus.plan(spec, region="step", signals=["duration", "static"],
                   scope={"iter": (0, 8)}, workspace=ws)
    ops = [t["op"] for t in p["tasks"]]
    assert "discover" in ops and "synth.static" in ops
    assert p["query"]["scope"] == "iter=0:8"
    with pytest.raises(argus.PlanFailedError) as e:
        argus.plan(spec, region="nope", workspace=ws)
    assert "unknown region 'nope'" in str(e.value)
    assert e.value.name == "ARGUS_EFAILED"
    with pytest.raises(argus.ArgusError) as e:
        argus.plan(spec, region="work", signals=["duration", "bogus"], workspace=ws)
    assert e.value.code == -998 and "bogus" in e.value.message
    assert any("bogus" in d["message"] for d in e.value.diagnostics)
    ws.close()


def test_plan_default_workspace(tmp_path, spec, monkeypatch):
    monkeypatch.setenv("ARGUS_WORKSPACE", str(tmp_path / "envws"))
    argus.plan(spec, region="work", signals="static")
    assert (tmp_path / "envws" / "workspace.db").exists()
    argus.plan(str(spec), region="work", workspace=str(tmp_path / "pathws"))
    assert (tmp_path / "pathws" / "workspace.db").exists()


def test_observe_static_values_and_read_back(tmp_path, spec):
    with argus.Workspace(tmp_path / "ws") as ws:
        r = argus.observe(spec, region="work", signals=["static"], workspace=ws)
        assert r.complete and r.missing == []
        regs = r.get(stat="registers")
        assert regs, r.values
        for v in regs:
            assert isinstance(v, argus.Value)
            assert v.signal == "static" and v.qual == "observed" and v.unit == "registers"
            assert isinstance(v.value, int) and 0 < v.value <= 255
            assert v.provenance["variant"] == "trace-free" and v.provenance["tasks"]
            assert v.entropy is None and v.flag is None
        assert "registers" in r.text
        assert len(r.hash) == 64
        back = ws.report(r.hash[:12])
        assert back.values == r.values and back.hash == r.hash
        with pytest.raises(argus.NotFoundError):
            ws.report("feedbeef0000")
        with pytest.raises(argus.MalformedError, match="'v1' is not a report"):
            ws.report("v1")


def _tokens(text):
    """The summary's token rule (docs/report.md): 3 bytes per token, rounded up."""
    return -(-len(text.encode()) // argus.SUMMARY_BYTES_PER_TOKEN)


def _shares(text):
    """(region, share %) of the summary's region lines, in their order."""
    out = []
    for line in text.splitlines():
        m = re.match(r"(\S+) ([0-9.]+)% \(", line)
        if m:
            out.append((m.group(1), float(m.group(2))))
    return out


def test_report_summary(stored_report):
    path, h = stored_report
    with argus.Workspace(path, create=False) as ws:
        r = ws.report(h[:12])
    # the handle outlives the workspace: the summary reads the report alone
    texts = {b: r.summary(max_tokens=b) for b in (64, 120, 256, 1000000)}
    for b, t in texts.items():
        assert _tokens(t) <= b, (b, t)
        assert t.startswith("argus observe mainloop on gemm_tma")
    assert r.summary() == texts[256]
    assert "more left out" in texts[64] and "more left out" not in texts[256]
    # regions by share of time, largest first; the budget cuts the smallest
    assert _shares(texts[256]) == [("gemm_tma/mainloop", 100.0), ("gemm_tma/mainloop/mma", 73.8),
                                   ("gemm_tma/mainloop/loads", 14.0)]
    assert _shares(texts[120]) == _shares(texts[256])[:2]
    assert "3 more left out (3 facts" in texts[120]


@pytest.mark.parametrize("budget", [63, 0, -256, 1000001])
def test_report_summary_budget_out_of_range(stored_report, budget):
    path, h = stored_report
    r = argus.Workspace(path, create=False).report(h)
    with pytest.raises(argus.OutOfRangeError) as e:
        r.summary(max_tokens=budget)
    assert isinstance(e.value, ValueError) and isinstance(e.value, argus.ArgusError)
    assert e.value.name == "ARGUS_ERANGE"
    assert "max_tokens takes 64 to 1000000 tokens, not %d" % budget in e.value.message


@pytest.mark.parametrize("budget", ["256", 256.0, True, None])
def test_report_summary_type_error(stored_report, budget):
    path, h = stored_report
    r = argus.Workspace(path, create=False).report(h)
    with pytest.raises(TypeError, match="'max_tokens' must be an int, not %s"
                       % type(budget).__name__):
        r.summary(max_tokens=budget)


def test_report_summary_needs_a_handle():
    with pytest.raises(ValueError, match="no library handle"):
        argus.Report({"schema": "argus.report/1", "values": []}, "").summary()


def test_observe_without_gpu_reports_missing(tmp_path, spec):
    if __import__("conftest").gpu_reason() is None:
        pytest.skip("a GPU is present: the duration is measured (test_gpu.py)")
    r = argus.observe(spec, region="work", signals=["duration"], workspace=tmp_path / "ws")
    assert not r.complete
    assert any(m.get("signal") == "duration" for m in r.missing)


def test_workspace_versions_and_fork(tmp_path, spec):
    ws = argus.Workspace(tmp_path / "ws")
    assert ws.refs() == {} and ws.versions() == []
    argus.plan(spec, region="work", signals="static", workspace=ws)
    (root,) = ws.versions()
    assert root.id == 1 and root.parent is None and len(root.module) == 64
    ws.set_ref("base", root)
    edited = tmp_path / "edited.ptx"
    edited.write_text("// an edited module\n")
    v = ws.fork("base", ptx=edited, transform="edit: unroll", ref="cand-1")
    assert v.parent == 1 and v.transform == "edit: unroll" and v.ancestry == (v.id, 1)
    assert v.module != root.module
    assert ws.refs() == {"base": "v1", "cand-1": v.name}
    assert ws.version("cand-1") == v
    same = ws.fork(1)
    assert same.module == root.module and same.transform == "fork" and ws.fork(root) == same
    assert [x.id for x in ws.versions()] == sorted([1, v.id, same.id], reverse=True)
    with pytest.raises(argus.NotFoundError, match="no version 'nope'"):
        ws.fork("nope")
    with pytest.raises(argus.ArgusError, match="invalid ref name 'v9'"):
        ws.fork(1, ref="v9")
    with pytest.raises(argus.NotFoundError, match="cannot read '.*missing.ptx': no such file"):
        ws.fork(1, ptx=tmp_path / "missing.ptx")
    ws.close()
    with pytest.raises(ValueError, match="closed"):
        ws.refs()


def test_workspace_newer_schema(tmp_path):
    argus.Workspace(tmp_path / "ws").close()
    db = sqlite3.connect(tmp_path / "ws" / "workspace.db")
    db.execute("INSERT INTO schema_version(version, applied_ns, argus) VALUES(99, 0, '9.9.9')")
    db.commit()
    db.close()
    with pytest.raises(argus.SchemaError) as e:
        argus.Workspace(tmp_path / "ws")
    assert "schema 99 is newer than this argus" in str(e.value)
    assert e.value.name == "ARGUS_ESCHEMA"


def test_workspace_missing(tmp_path):
    with pytest.raises(argus.NotFoundError, match="cannot open the workspace '.*nowhere'"):
        argus.Workspace(tmp_path / "nowhere", create=False)


OK_TILE = """@threads(32)
def k(A: Tensor(N, f32), N: const = 32):
    T = A[i] -> (i,)
    x = A[threadIdx.x]
    assert tag(x) == (threadIdx.x,)
"""
BAD_TILE = """@threads(32)
def k(A: Tensor(32, f32)):
    T = A[i] -> (i,)
    s = make_shared((32,), f32)
    s[threadIdx.x] = A[threadIdx.x]
    syncthreads()
    assert tag(s[(threadIdx.x + 1) % 32]) == (threadIdx.x,)
"""


def test_check(tmp_path):
    ok = tmp_path / "ok.tile"
    ok.write_text(OK_TILE)
    r = argus.check(ok, set={"N": 64}, unroll=True)
    assert r.ok and r.verdict == "proved" and r.assertions[0]["status"] == "proved"
    bad = tmp_path / "bad.tile"
    bad.write_text(BAD_TILE)
    r = argus.check(str(bad), all=True)
    assert not r.ok and r.verdict == "violated"
    assert r.assertions[0]["counterexample"]["reason"]
    mal = tmp_path / "mal.tile"
    mal.write_text("@threads(32)\ndef k(:):\n    pass\n")
    with pytest.raises(argus.MalformedError) as e:
        argus.check(mal)
    d = e.value.diagnostics[0]
    assert (d["line"], d["col"]) == (2, 7) and "expected a parameter name" in d["message"]
    assert "mal.tile:2:7" in str(e.value)
    with pytest.raises(argus.NotFoundError, match="no such file"):
        argus.check(tmp_path / "none.tile")
    with pytest.raises(argus.ArgusError, match="'batch' takes 1 to 4096"):
        argus.check(ok, batch=5000)


@pytest.mark.parametrize("call,param", [
    (lambda s: argus.plan(3, region="work"), "spec"),
    (lambda s: argus.plan(s, region=None), "region"),
    (lambda s: argus.plan(s, region="work", signals=[1]), "signals"),
    (lambda s: argus.plan(s, region="work", scope=5), "scope"),
    (lambda s: argus.plan(s, region="work", scope={"iter": (0, "8")}), "scope"),
    (lambda s: argus.plan(s, region="work", workspace=5), "workspace"),
    (lambda s: argus.observe(s, region="work", timeout_s="10"), "timeout_s"),
    (lambda s: argus.observe(s, region="work", records=16.5), "records"),
    (lambda s: argus.observe(s, region="work", trace=[None]), "trace"),
    (lambda s: argus.observe(s, region="work", ignore_damage=1), "ignore_damage"),
    (lambda s: argus.check(b"x.tile"), "path"),
    (lambda s: argus.check("x.tile", set={"N": "4"}), "set"),
    (lambda s: argus.check("x.tile", symbolic=[3]), "symbolic"),
    (lambda s: argus.check("x.tile", unroll="yes"), "unroll"),
    (lambda s: argus.check("x.tile", batch=True), "batch"),
    (lambda s: argus.Workspace(7), "path"),
    (lambda s: argus.Workspace(create="no"), "create"),
])
def test_type_errors_name_the_parameter(tmp_path, spec, monkeypatch, call, param):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TypeError) as e:
        call(spec)
    assert "'%s'" % param in str(e.value)


def test_workspace_method_type_errors(tmp_path):
    ws = argus.Workspace(tmp_path / "ws")
    for call, param in [(lambda: ws.fork(1.5), "source"), (lambda: ws.fork(1, ptx=3), "ptx"),
                        (lambda: ws.fork(1, ref=3), "ref"), (lambda: ws.set_ref(3, "v1"), "name"),
                        (lambda: ws.version(None), "id"), (lambda: ws.versions("3"), "limit"),
                        (lambda: ws.report(5), "id")]:
        with pytest.raises(TypeError, match="'%s'" % param):
            call()
    ws.close()


def test_triton_markers_without_triton_or_libargus(tmp_path):
    """argus.triton imports without Triton and without libargus (a kernel file with
    markers runs where Argus is not installed); the library's calls then raise ImportError
    saying why. Its hash is region.cuh's FNV-1a (docs/markers.md's value for 'loads')."""
    import subprocess
    import sys
    code = ("import sys; sys.modules['triton'] = None\n"  # as if Triton were not installed
            "import argus, argus.triton as at\n"
            "print(at.fnv1a('loads'), at.fnv1a(''))\n"
            "print(at.marker_text('begin', 'step', '%r7'))\n"
            "try:\n    argus.plan('s.json', region='r')\nexcept ImportError as e:\n"
            "    print('ImportError', e)\n"
            "try:\n    argus.__version__\nexcept ImportError:\n    print('no version')\n")
    env = dict(os.environ, ARGUS_LIBRARY=str(tmp_path / "nonexistent.so"))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[0] == "1571128134944098478 14695981039346656037", out
    assert out[1] == "// @argus begin 12613261051159514351 step %r7", out
    assert out[2].startswith("ImportError argus: cannot load libargus") and "nonexistent" in out[2]
    assert out[3] == "no version", out


def test_triton_marker_names():
    import argus.triton as at
    for bad in ["", "a/b", "1x", "a b", "x;"]:
        with pytest.raises(ValueError, match="invalid region name"):
            at.marker_text("end", bad)
    with pytest.raises(TypeError, match="compile-time string"):
        at.marker_text("end", 3)
    with pytest.raises(ValueError, match="begin, end or role"):
        at.marker_text("start", "x")
    assert at.marker_text("role", "a.b-c_1") == "// @argus role %d a.b-c_1" % at.fnv1a("a.b-c_1")
