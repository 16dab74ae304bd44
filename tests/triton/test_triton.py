"""Triton kernels with argus.triton markers, on the CPU (no GPU: triton.compile for sm_90 with
a GPUTarget), read by Argus's PTX front end (docs/triton.md):

- the regions, their nesting, IDs and iteration registers that `argus regions --json` finds
  in a matmul (tl.dot loop) and an attention forward (two dots, online softmax), and the
  other marker forms (role, `with`, 64-bit and constant iterations);
- the traced and the mapping variants of both assemble with ptxas;
- markers cost no machine code: each kernel's cubin code equals its markerless twin's
  (the same file with the marker lines deleted), byte for byte;
- wrong markers are refused naming the Python file and line of the marker;
- the builtins' own errors (a name that is not a compile-time string, a block iteration).

Run by tests/triton/test_triton.sh (ctest test_triton) with $ARGUS (the CLI), $ARGUS_PTXAS
and PYTHONPATH holding python/ and this directory.
"""
import importlib.util
import json
import os
import re
import struct
import subprocess
import sys

import pytest

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import argus.triton as at
import bad_kernels
import kernels

HERE = os.path.dirname(os.path.abspath(__file__))
ARGUS = os.environ.get("ARGUS", "argus")
MARKER_LINE = re.compile(r"^\s*at\.(begin|end|role)\(.*\)\s*$")


def ptxas():
    p = os.environ.get("ARGUS_PTXAS")
    if p and os.access(p, os.X_OK):
        return p
    # Triton's own (its wheel carries the CUDA 12.8 ptxas it compiles with)
    return os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")


def argus(*args, ok=True):
    r = subprocess.run([ARGUS, *args], capture_output=True, text=True)
    if ok:
        assert r.returncode == 0, "argus %s: exit %d\n%s" % (args, r.returncode, r.stderr)
    return r


def text_sections(cubin):
    """{kernel: the bytes of its .text.<kernel> section} of an ELF64 cubin."""
    assert cubin[:4] == b"\x7fELF" and cubin[4] == 2
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    secs = [struct.unpack_from("<IIQQQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    names = secs[shstrndx][4]
    out = {}
    for name, _typ, _flags, _addr, off, size in secs:
        n = cubin[names + name:cubin.index(b"\0", names + name)].decode()
        if n.startswith(".text."):
            out[n[len(".text."):]] = cubin[off:off + size]
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Each kernel compiled, with markers and as its markerless twin: {name: (ptx path,
    cubin bytes, twin cubin bytes or None)}."""
    d = tmp_path_factory.mktemp("triton")
    src = open(os.path.join(HERE, "kernels.py")).read().splitlines(True)
    twin_src = "".join(l for l in src if not MARKER_LINE.match(l))
    assert twin_src.count("at.begin(") == 0 and len(twin_src) < len("".join(src))
    tp = d / "kernels_twin.py"
    tp.write_text(twin_src)
    spec = importlib.util.spec_from_file_location("kernels_twin", tp)
    twin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(twin)
    out = {}
    for name in ("matmul", "attention_fwd", "forms"):
        k = kernels.compile(name)
        p = d / (name + ".ptx")
        p.write_text(k.asm["ptx"])
        # `forms` has a `with` block: deleting its lines is no twin
        tw = kernels.compile(name, getattr(twin, name)).asm["cubin"] if name != "forms" else None
        out[name] = (str(p), k.asm["cubin"], tw)
    return out


def regions(path):
    """{qname: region} of `argus regions --json`, each region's "sites" replaced by the
    sites' kinds (the sites table holds them by op ID)."""
    j = json.loads(argus("regions", "--json", path).stdout)
    kinds = {s["op_id"]: s["kind"] for s in j["sites"]}
    R = {r["qname"]: r for r in j["regions"]}
    for r in R.values():
        r["sites"] = {kinds[o] for o in r["sites"]}
    return R


def region_id(qname):
    return "0x%016x" % at.fnv1a(qname)


def loop_step(ptx, reg):
    """The constant a register is incremented by (`add.s32 %r, %r, C;`), or None."""
    m = re.search(r"add\.s32\s+%s,\s*%s,\s*(\d+);" % (re.escape(reg), re.escape(reg)), ptx)
    return int(m.group(1)) if m else None


def test_matmul_regions(built):
    path = built["matmul"][0]
    R = regions(path)
    assert set(R) == {"matmul", "matmul/mainloop", "matmul/mainloop/step", "matmul/epilogue"}
    for q, r in R.items():
        assert r["id"] == region_id(q), (q, r["id"])
    step, main = R["matmul/mainloop/step"], R["matmul/mainloop"]
    assert step["parent"] == main["id"] and main["parent"] == R["matmul"]["id"]
    assert R["matmul/epilogue"]["parent"] == R["matmul"]["id"]
    assert len(step["begins"]) == 1 and len(step["ends"]) == 1
    # the iteration is the loop variable k: a 32-bit register stepped by 1
    it = step["begins"][0]["iter"]
    assert re.fullmatch(r"%r\d+", it), it
    assert loop_step(open(path).read(), it) == 1
    assert main["begins"][0]["iter"] is None
    # the dots are in the trip; Triton's pipeliner issues the next trips' cp.async loads
    # outside the marked trip, so they belong to mainloop
    assert {"wgmma", "wgmma_commit", "wgmma_wait"} <= step["sites"]
    assert "cp_async" in main["sites"] and "cp_async" not in step["sites"]


def test_attention_regions(built):
    path = built["attention_fwd"][0]
    R = regions(path)
    k = "attention_fwd"
    want = {k, k + "/kv_loop", k + "/kv_loop/qk", k + "/kv_loop/softmax", k + "/kv_loop/pv",
            k + "/normalize"}
    assert set(R) == want
    loop = R[k + "/kv_loop"]
    assert loop["children"] == [R[k + "/kv_loop/" + c]["id"] for c in ("qk", "softmax", "pv")]
    it = loop["begins"][0]["iter"]
    assert loop_step(open(path).read(), it) == kernels.SIGS[k][1]["BLOCK_N"]  # start_n
    assert "wgmma" in R[k + "/kv_loop/qk"]["sites"]
    assert "wgmma" in R[k + "/kv_loop/pv"]["sites"]
    assert "wgmma" not in R[k + "/kv_loop/softmax"]["sites"]
    qk, pv = R[k + "/kv_loop/qk"], R[k + "/kv_loop/pv"]
    assert qk["begins"][0]["line"] < qk["ends"][0]["line"] < pv["begins"][0]["line"]


def test_other_forms(built):
    R = regions(built["forms"][0])
    assert set(R) == {"forms", "forms/sum", "forms/sum/wide", "forms/unrolled"}
    s, w, u = R["forms/sum"], R["forms/sum/wide"], R["forms/unrolled"]
    assert s["role"] == "consumer" and w["role"] == "consumer"
    assert re.fullmatch(r"%r\d+", s["begins"][0]["iter"])       # the program id
    assert re.fullmatch(r"%rd\d+", w["begins"][0]["iter"])      # a 64-bit iteration
    assert [b["iter"] for b in u["begins"]] == ["0", "1"]       # tl.static_range: constants
    assert len(s["ends"]) == 1                                   # the with form's end


@pytest.mark.parametrize("name", ["matmul", "attention_fwd"])
@pytest.mark.parametrize("kind", ["traced", "mapping"])
def test_variants_assemble(built, tmp_path, name, kind):
    v = tmp_path / ("%s.%s.ptx" % (name, kind))
    argus("variant", "--kind", kind, "-o", str(v), built[name][0])
    text = v.read_text()
    assert "__argus_" in text and text != open(built[name][0]).read()
    cubin = tmp_path / (v.name + ".cubin")
    r = subprocess.run([ptxas(), "-arch=sm_90a", str(v), "-o", str(cubin)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert name in text_sections(cubin.read_bytes())


@pytest.mark.parametrize("name", ["matmul", "attention_fwd"])
def test_markers_cost_no_code(built, name):
    _, cubin, twin = built[name]
    a, b = text_sections(cubin), text_sections(twin)
    assert list(a) == [name] and list(b) == [name]
    print("%s: %d instructions with markers, %d without" % (name, len(a[name]) // 16,
                                                            len(b[name]) // 16))
    assert len(a[name]) == len(b[name])
    assert a[name] == b[name], "the markers changed the machine code"


def bad_line(text):
    """The line of bad_kernels.py holding `text` (once)."""
    lines = open(bad_kernels.__file__).read().splitlines()
    hits = [i + 1 for i, l in enumerate(lines) if text in l]
    assert len(hits) == 1, (text, hits)
    return hits[0]


@pytest.mark.parametrize("kernel, want", [
    ("open_in_loop", ["region 'loop' begun at line", "(%s:{at.begin(\"loop\", i)})",
                      "has no end on some path"]),
    ("end_without_begin", ["end of region 'never_begun' without a begin",
                           "(%s:{at.end(\"never_begun\")})"]),
    ("crossing", ["regions 'first' and 'second' cross", "(%s:{at.end(\"first\")})",
                  "begun at line", "(%s:{at.begin(\"second\")})"]),
    ("open_at_return", ["region 'unclosed' begun at line", "(%s:{at.begin(\"unclosed\")})",
                        "returns at line"]),
])
def test_wrong_markers_name_the_python_line(tmp_path, kernel, want):
    sig, cx = bad_kernels.SIG
    k = triton.compile(ASTSource(fn=getattr(bad_kernels, kernel), signature=sig, constexprs=cx),
                       target=GPUTarget("cuda", 90, 32))
    p = tmp_path / (kernel + ".ptx")
    p.write_text(k.asm["ptx"])
    r = argus("regions", str(p), ok=False)
    assert r.returncode == 2, r.stderr
    for w in want:
        m = re.search(r"\{(.*)\}", w)
        if m:  # "(%s:{call})": the file and the line of that call
            w = w[:m.start()] % os.path.realpath(bad_kernels.__file__) + str(bad_line(m.group(1))) \
                + w[m.end():]
        assert w in r.stderr, (w, r.stderr)


@triton.jit
def _runtime_name(x_ptr, B: tl.constexpr):
    at.begin(x_ptr)
    at.end("a")


@triton.jit
def _block_iteration(x_ptr, B: tl.constexpr):
    at.begin("a", tl.arange(0, B))
    at.end("a")


@triton.jit
def _float_iteration(x_ptr, B: tl.constexpr):
    at.begin("a", tl.load(x_ptr))
    at.end("a")


@triton.jit
def _bad_name(x_ptr, B: tl.constexpr):
    at.role("pro/ducer")


@triton.jit
def _constexpr_name(x_ptr, NAME: tl.constexpr, B: tl.constexpr):
    at.begin(NAME)
    at.end(NAME)


@pytest.mark.parametrize("fn, want", [
    (_runtime_name, "must be a compile-time string"),
    (_block_iteration, "must be a scalar, not a block of shape [128]"),
    (_float_iteration, "must be an integer, not fp32"),
    (_bad_name, "invalid region name 'pro/ducer'"),
])
def test_builtin_errors(fn, want):
    src = ASTSource(fn=fn, signature={"x_ptr": "*fp32", "B": "constexpr"}, constexprs={"B": 128})
    with pytest.raises(triton.CompilationError) as e:
        triton.compile(src, target=GPUTarget("cuda", 90, 32))
    assert want in str(e.value), str(e.value)


def test_constexpr_name(tmp_path):
    src = ASTSource(fn=_constexpr_name, signature={"x_ptr": "*fp32", "NAME": "constexpr",
                                                   "B": "constexpr"},
                    constexprs={"NAME": "tile", "B": 128})
    ptx = triton.compile(src, target=GPUTarget("cuda", 90, 32)).asm["ptx"]
    assert "// @argus begin %d tile" % at.fnv1a("tile") in ptx
    assert "// @argus end %d tile" % at.fnv1a("tile") in ptx


# ------------------------------------------------------- python specs, dump, override
COMPILE = os.path.join(HERE, "compile_kernel.py")


def spec(tmp_path, args, kernel=None):
    s = {"python": COMPILE, "args": [str(tmp_path / "out")] + args}
    if kernel:
        s["kernel"] = kernel
    p = tmp_path / "spec.json"
    p.write_text(json.dumps(s))
    return str(p)


def run_py(args, **env):
    """compile_kernel.py ARGS in a child with env added: (stdout, {name: (ptx, cubin)})."""
    e = dict(os.environ, **env)
    r = subprocess.run([sys.executable, COMPILE, *args], capture_output=True, text=True, env=e)
    assert r.returncode == 0, r.stderr[-3000:]
    out = {}
    for n in args[1:]:
        base = os.path.join(args[0], n)
        out[n] = (open(base + ".ptx").read(), open(base + ".cubin", "rb").read())
    return r.stdout, out


def test_python_spec_discovery(tmp_path, monkeypatch):
    """argus runs the spec's script with Triton's dump on and takes the kernel's PTX: its
    regions are the ones the kernel compiled in this process has."""
    monkeypatch.setenv("ARGUS_PYTHON", sys.executable)
    R = regions(spec(tmp_path, ["matmul"]))
    assert "matmul/mainloop/step" in R
    # with a warm Triton cache too (TRITON_ALWAYS_COMPILE: a cached kernel is not dumped)
    R = regions(spec(tmp_path, ["forms", "attention_fwd"], kernel="attention_fwd"))
    assert set(R) >= {"attention_fwd/kv_loop/qk", "attention_fwd/kv_loop/pv"}
    r = argus("regions", spec(tmp_path, ["forms", "attention_fwd"]), ok=False)
    assert r.returncode == 1
    assert "compiled the kernels attention_fwd, forms: name the one to measure" in r.stderr
    v = tmp_path / "v.ptx"
    argus("variant", "--kind", "traced", "-o", str(v), spec(tmp_path, ["forms"]))
    assert "__argus_trace" in v.read_text()


@pytest.mark.parametrize("name", ["matmul", "attention_fwd"])
def test_variants_assembled_as_triton_does(tmp_path, monkeypatch, name):
    """A python spec's variants are assembled by Triton's ptxas with Triton's options (from the
    kernel's metadata): the trace-free variant's code is Triton's cubin's, byte for byte, and
    the report says how it was built (docs/triton.md, "Build fidelity")."""
    monkeypatch.setenv("ARGUS_PYTHON", sys.executable)
    monkeypatch.delenv("ARGUS_PTXAS", raising=False)
    r = argus("--workspace", str(tmp_path / "ws"), "observe", spec(tmp_path, [name]), "--region",
              name, "--signals", "static")
    out = r.stdout
    assert "production matches Triton's build of '%s': identical code" % name in out, out
    own = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
    assert "as Triton %s assembles it (%s -lineinfo --gpu-name=sm_90a)" % (
        triton.__version__, own) in out, out


def test_override_layout(tmp_path):
    """Triton 3.6 reads an override of stage EXT of a kernel where its dump wrote that stage,
    <dir>/<key>/<name>.EXT (ag_triton_override_path), when it compiles: a traced variant put
    there as .ptx is what Triton assembles (its cubin has the probes' descriptor); a cubin
    put there as .cubin is the cubin it returns, byte for byte; with a warm cache and no
    TRITON_ALWAYS_COMPILE the override is not read."""
    cache = str(tmp_path / "cache")
    dump = tmp_path / "dump"
    _, plain = run_py([str(tmp_path / "o0"), "matmul"], TRITON_CACHE_DIR=cache,
                      TRITON_KERNEL_DUMP="1", TRITON_DUMP_DIR=str(dump))
    (key,) = os.listdir(dump)
    assert (dump / key / "matmul.ptx").read_text() == plain["matmul"][0]
    assert {"matmul.ptx", "matmul.cubin", "matmul.ttgir"} <= set(os.listdir(dump / key))
    # the traced variant of the dumped PTX, and the cubin ptxas makes of it
    ovr = tmp_path / "override"
    (ovr / key).mkdir(parents=True)
    variant = ovr / key / "matmul.ptx"
    argus("variant", "--kind", "traced", "-o", str(variant), str(dump / key / "matmul.ptx"))
    env = dict(TRITON_CACHE_DIR=cache, TRITON_KERNEL_OVERRIDE="1", TRITON_OVERRIDE_DIR=str(ovr))
    # a warm cache, no TRITON_ALWAYS_COMPILE: Triton's cached kernel, no override
    _, got = run_py([str(tmp_path / "o1"), "matmul"], **env)
    assert got["matmul"] == plain["matmul"]
    out, got = run_py([str(tmp_path / "o2"), "matmul"], TRITON_ALWAYS_COMPILE="1", **env)
    assert "Overriding kernel with file %s" % variant in out
    assert got["matmul"][0] == variant.read_text()
    assert b"__argus_trace" in got["matmul"][1] and b"__argus_trace" not in plain["matmul"][1]
    # the cubin stage: Argus's own assembly of the variant, returned as is
    variant.rename(tmp_path / "variant.ptx")
    cubin = ovr / key / "matmul.cubin"
    r = subprocess.run([ptxas(), "-arch=sm_90a", str(tmp_path / "variant.ptx"), "-o",
                        str(cubin)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    _, got = run_py([str(tmp_path / "o3"), "matmul"], TRITON_ALWAYS_COMPILE="1", **env)
    assert got["matmul"][1] == cubin.read_bytes()
    assert got["matmul"][0] == plain["matmul"][0]  # the PTX stage was not overridden


@pytest.mark.parametrize("name", ["matmul", "attention_fwd"])
def test_triton_ptxas_rebuilds_tritons_cubin(built, tmp_path, name):
    """Triton's own ptxas (the wheel's) with the options Triton passes (make_cubin:
    -lineinfo --gpu-name=sm_90a) turns Triton's PTX into Triton's cubin code byte for byte:
    what Argus must assemble a python spec's variants with to measure the code Triton ships
    (docs/triton.md, "Build fidelity"). The CUDA toolkit's ptxas is only compared."""
    ptx, cubin, _ = built[name]
    want = text_sections(cubin)[name]
    own = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
    got = {}
    for tag, exe, opts in [("triton", own, ["-lineinfo", "--gpu-name=sm_90a"]),
                           ("toolkit", ptxas(), ["-lineinfo", "-arch=sm_90a"])]:
        out = tmp_path / (tag + ".cubin")
        r = subprocess.run([exe, *opts, ptx, "-o", str(out)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        got[tag] = text_sections(out.read_bytes())[name]
    print("%s: %s's ptxas: %s" % (name, "toolkit", "the same code" if got["toolkit"] == want
                                   else "other code, %d against %d instructions"
                                   % (len(got["toolkit"]) // 16, len(want) // 16)))
    assert got["triton"] == want


# ------------------------------------------------- a public kernel: Liger-Kernel's RMSNorm
PUBLIC = os.path.join(HERE, "..", "..", "examples", "public", "liger_rmsnorm")


def test_public_liger_rmsnorm(tmp_path, monkeypatch):
    """A kernel Argus did not write (linkedin/Liger-Kernel's RMSNorm forward, four markers
    added; examples/public/README.md), as its python spec names it, compiled without a GPU:
    its regions are found, the markers cost no machine code (the file with the "# argus"
    lines deleted compiles to the same code), and observe's trace-free variant is Triton's
    cubin byte for byte (the production line says so)."""
    monkeypatch.setenv("ARGUS_PYTHON", sys.executable)
    monkeypatch.delenv("ARGUS_PTXAS", raising=False)
    s = tmp_path / "spec.json"
    s.write_text(json.dumps({"python": os.path.join(PUBLIC, "run.py"),
                             "args": ["--compile-only", str(tmp_path / "out")],
                             "kernel": "_rms_norm_forward_kernel"}))
    r = argus("--json", "regions", str(s))
    names = {x["qname"] for x in json.loads(r.stdout)["regions"]}
    assert {"_rms_norm_forward_kernel/rstd", "_rms_norm_forward_kernel/scale"} <= names, names
    r = argus("--workspace", str(tmp_path / "ws"), "observe", str(s), "--region",
              "_rms_norm_forward_kernel", "--signals", "static")
    assert ("production matches Triton's build of '_rms_norm_forward_kernel': identical code"
            in r.stdout), r.stdout
    # the markerless twin: the upstream kernel as Liger ships it
    twin = tmp_path / "twin"
    twin.mkdir()
    for f in ("rms_norm.py", "run.py"):
        text = open(os.path.join(PUBLIC, f)).read()
        if f == "rms_norm.py":
            text = "\n".join(x for x in text.splitlines() if not x.endswith("# argus")) + "\n"
            assert "at.begin" not in text and "at.end" not in text and "import argus" not in text
        (twin / f).write_text(text)
    for d in (PUBLIC, str(twin)):
        p = subprocess.run([sys.executable, os.path.join(d, "run.py"), "--compile-only",
                            os.path.join(d if d != PUBLIC else str(tmp_path), "cc")],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr[-2000:]
    a = text_sections(open(tmp_path / "cc" / "_rms_norm_forward_kernel.cubin", "rb").read())
    b = text_sections(open(twin / "cc" / "_rms_norm_forward_kernel.cubin", "rb").read())
    assert list(a) == list(b) == ["_rms_norm_forward_kernel"]
    assert a == b, "the markers changed the machine code"
