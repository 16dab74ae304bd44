"""Fixtures of the Python package's tests: a scratch directory, the overhead
example's PTX (built by nvcc into the build tree) in a spec whose harness is
`false`, and a GPU probe for the GPU tests."""
import ctypes
import os
import pathlib

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
