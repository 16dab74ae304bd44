"""Fixtures of the Python package's tests: a scratch directory, the overhead
example's PTX (built by nvcc into the build tree) in a spec whose harness is
`false`, a stored report, and a GPU probe for the GPU tests."""
import ctypes
import os
import pathlib
import subprocess

import pytest


def build_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("ARGUS_BUILD_DIR", "build")).resolve()


def source_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("ARGUS_SOURCE_DIR", ".")).resolve()


@pytest.fixture
def ptx() -> pathlib.Path:
    p = build_dir() / "tests" / "data" / "ptx" / "overhead.ptx"
    if not p.exists():
        pytest.skip("no PTX corpus (%s; built with nvcc)" % p)
    return p


@pytest.fixture
def spec(tmp_path, ptx) -> pathlib.Path:
    s = tmp_path / "spec.json"
    s.write_text('{"name": "overhead", "module": {"ptx": "%s"}, "run": ["false"]}' % ptx)
    return s


@pytest.fixture
def stored_report(tmp_path):
    """The H200 report of gemm_tma (tests/data/reports), stored with `argus ws
    put` into a workspace of its own: (workspace path, report hash)."""
    argus_bin = build_dir() / "tools" / "argus" / "argus"
    rep = source_dir() / "tests" / "data" / "reports" / "gemm_tma.h200.report.json"
    if not argus_bin.exists() or not rep.exists():
        pytest.skip("no argus binary (%s) or stored report (%s)" % (argus_bin, rep))
    ws = tmp_path / "reports-ws"
    subprocess.run([str(argus_bin), "-W", str(ws), "ws", "init"], check=True,
                   stdout=subprocess.DEVNULL)
    out = subprocess.run([str(argus_bin), "-W", str(ws), "ws", "put", str(rep)], check=True,
                         stdout=subprocess.PIPE, text=True).stdout.strip()
    assert len(out) == 64, out
    return ws, out


def gpu_reason():
    """None when a CUDA device is usable, else why not."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        return "no CUDA driver (%s)" % e
    if cuda.cuInit(0) != 0:
        return "cuInit failed"
    n = ctypes.c_int()
    if cuda.cuDeviceGetCount(ctypes.byref(n)) != 0 or n.value == 0:
        return "no CUDA device"
    return None
