"""python -m argus._triton_run SCRIPT [ARGS...]: runs a Triton program under an
Argus collection (docs/triton.md, "Load-time substitution"). `argus observe` on a
python spec runs this with Triton's override switches set (TRITON_KERNEL_OVERRIDE,
TRITON_OVERRIDE_DIR holding the variant as the kernel's cubin) and
ARGUS_TRITON_KERNEL naming the kernel to measure; the script itself runs unchanged.

Before the script runs, libargus_host is opened (ag_host_open: under Argus the
clock calibration and the collectors) and Triton's CompiledKernel is wrapped:

- after Triton loads the kernel (CompiledKernel._init_handles, where Triton 3.6 calls
  cuModuleLoadData), ag_host_adopt takes its module as the variant: the bytes Triton
  loaded must be the variant's (else the override was not applied and the run
  fails saying so), a traced variant's probe descriptor is bound, a mapping
  variant's counters; in the timing run of the user's build (ARGUS_TRITON_OWN=1, no
  override) Triton's own module is taken as it is;
- its launcher (CompiledKernel._run, which calls cuLaunchKernelEx) is wrapped in
  ag_host_launch_begin / ag_host_launch_end with the launch Triton makes: grid
  (gridX * num_ctas, gridY, gridZ), block (32 * num_warps), the metadata's shared
  bytes, Triton's stream; the end runs on the error path too;
- after the script (also when it calls sys.exit), ag_host_finish writes the
  evidence files the C harness path writes.

A script that ends with os._exit skips the finish and leaves no evidence."""
from __future__ import annotations

import os
import runpy
import sys
from typing import Any, Callable, List, Optional

from argus._host import Host, HostError


class Launch:
    """Stands in for a CompiledKernel's launcher: the same call, between
    ag_host_launch_begin and ag_host_launch_end."""

    def __init__(self, inner: Callable, host: Host, kernel: int, metadata: Any):
        self.inner = inner
        self.host = host
        self.kernel = kernel
        self.num_ctas = int(getattr(metadata, "num_ctas", 1) or 1)
        self.num_warps = int(metadata.num_warps)
        self.shared = int(metadata.shared)
        self.launches = 0

    def dims(self, gx: int, gy: int, gz: int):
        """What Triton 3.6's launcher gives cuLaunchKernelEx (backends/nvidia/driver.py)."""
        return (gx * self.num_ctas, gy, gz), (32 * self.num_warps, 1, 1), self.shared

    def __call__(self, gx, gy, gz, stream, function, *args):
        # Triton launches nothing for an empty grid; after the session's close (the
        # script's atexit handlers, threads still running) the launch is Triton's alone:
        # the kernel handle points into freed memory
        if gx * gy * gz <= 0 or self.host.closed:
            return self.inner(gx, gy, gz, stream, function, *args)
        grid, block, shared = self.dims(gx, gy, gz)
        self.host.launch_begin(self.kernel, grid, block, shared, stream)
        launched = False
        try:
            ret = self.inner(gx, gy, gz, stream, function, *args)
            launched = True
        finally:
            self.host.launch_end(self.kernel, launched)
        self.launches += 1
        return ret


class Binding:
    """Binds the kernel `name` of class `ck_class` (Triton's CompiledKernel) to
    `host` once Triton has loaded it; `install` wraps, `uninstall` restores."""

    def __init__(self, host: Host, name: str, ck_class: Any = None):
        if ck_class is None:
            from triton.compiler.compiler import CompiledKernel as ck_class
        self.host = host
        self.name = name
        self.cls = ck_class
        self.orig = None
        self.adopted: List[Any] = []

    def adopt(self, ck: Any) -> None:
        # ARGUS_TRITON_OWN=1: the run times Triton's own build (no override): its bytes
        # are not the variant file's, and are not compared
        own = os.environ.get("ARGUS_TRITON_OWN") == "1"
        m = self.host.adopt(int(ck.module), None if own else ck.kernel, ck.name)
        k = self.host.kernel(m, ck.name)
        ck._run = Launch(ck._run, self.host, k, ck.metadata)
        self.adopted.append(ck)

    def install(self) -> None:
        orig = self.orig = self.cls._init_handles
        binding = self

        def _init_handles(ck):
            fresh = ck.module is None
            orig(ck)
            if fresh and ck.module is not None and ck.name == binding.name:
                binding.adopt(ck)

        self.cls._init_handles = _init_handles

    def uninstall(self) -> None:
        if self.orig is not None:
            self.cls._init_handles = self.orig
            self.orig = None


def run(script: str, args: List[str], host: Host, binding: Optional[Binding]) -> int:
    """Runs the script as __main__ with argv [script, *args]; its exit status."""
    sys.argv = [script] + list(args)
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    code = 0
    try:
        if binding:
            binding.install()
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if not isinstance(e.code, (int, type(None))):
            print(e.code, file=sys.stderr)
    finally:
        if binding:
            binding.uninstall()
    return code


def main(argv: List[str]) -> int:
    if not argv:
        print("usage: python -m argus._triton_run SCRIPT [ARGS...]", file=sys.stderr)
        return 2
    name = os.environ.get("ARGUS_TRITON_KERNEL")
    try:
        host = Host()
    except (HostError, ImportError) as e:
        print("argus: %s" % e, file=sys.stderr)
        return 1
    binding = Binding(host, name) if name else None
    code = run(argv[0], argv[1:], host, binding)
    try:
        host.finish()  # the evidence (also after a failing script: the host says why)
    except HostError as e:
        print("argus: %s" % e, file=sys.stderr)
        code = code or 1
    host.close()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
