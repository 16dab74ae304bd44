"""The ctypes binding of libargus_host.so (include/argus/host.h): the host runtime
a Triton process loads to run Argus's variant in place of Triton's kernel
(docs/triton.md, "Load-time substitution"). Internal: argus._triton_run uses it.

libargus_host depends on libc alone (it opens the CUDA driver itself), so loading
it needs no GPU; ag_host_open does."""
from __future__ import annotations

import ctypes
import os
from typing import Optional, Sequence

SONAME = "libargus_host.so.1"

# host.h's AG_HOST_E* codes, by name for the messages
_NAMES = {-999: "ENOMEM", -998: "EINVAL", -997: "EIO", -996: "EPARSE", -995: "ENOTFOUND",
          -992: "EBUSY", -991: "EUNSUPPORTED", -986: "ENODEV", -985: "ECUDA", -984: "ECUPTI",
          -978: "EFULL"}


class HostError(RuntimeError):
    """A libargus_host call failed: `code` (negative AG_HOST_E*), `call`, `message`."""

    def __init__(self, call: str, code: int, message: str):
        self.call = call
        self.code = code
        self.message = message
        super().__init__("%s failed (AG_HOST_%s): %s" % (call, _NAMES.get(code, str(code)),
                                                          message))


class Dim(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


_p = ctypes.c_void_p
_pp = ctypes.POINTER(ctypes.c_void_p)
_SIGS = {
    "ag_host_open": (ctypes.c_int, [_pp]),
    "ag_host_close": (None, [_p]),
    "ag_host_errmsg": (ctypes.c_char_p, [_p]),
    "ag_host_under_argus": (ctypes.c_int, [_p]),
    "ag_host_adopt": (ctypes.c_int, [_p, _p, ctypes.c_char_p, ctypes.c_size_t,
                                     ctypes.c_char_p, _pp]),
    "ag_host_module_traced": (ctypes.c_int, [_p]),
    "ag_host_kernel_get": (ctypes.c_int, [_p, ctypes.c_char_p, _pp]),
    "ag_host_kernel_cufunction": (_p, [_p]),
    "ag_host_launch_begin": (ctypes.c_int, [_p, Dim, Dim, ctypes.c_uint, _p]),
    "ag_host_launch_end": (ctypes.c_int, [_p, ctypes.c_int]),
    "ag_host_sync": (ctypes.c_int, [_p]),
    "ag_host_finish": (ctypes.c_int, [_p]),
}


def load(path: Optional[str] = None) -> ctypes.CDLL:
    """libargus_host: `path`, else $ARGUS_HOST_LIBRARY, else the soname."""
    path = path or os.environ.get("ARGUS_HOST_LIBRARY") or SONAME
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise ImportError("argus: cannot load the host runtime %s (%s); set ARGUS_HOST_LIBRARY "
                          "to the path of %s" % (path, e, SONAME)) from None
    for name, (res, args) in _SIGS.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    return lib


class Host:
    """One ag_host session (one per process): opened at construction."""

    def __init__(self, path: Optional[str] = None):
        self.lib = load(path)
        h = ctypes.c_void_p()
        rc = self.lib.ag_host_open(ctypes.byref(h))
        self.h = h
        if rc:
            msg = self._msg()
            self.lib.ag_host_close(h)
            self.h = None
            raise HostError("ag_host_open", rc, msg)

    def _msg(self) -> str:
        m = self.lib.ag_host_errmsg(self.h)
        return m.decode("utf-8", "replace") if m else ""

    def _check(self, call: str, rc: int) -> None:
        if rc:
            raise HostError(call, rc, self._msg())

    @property
    def closed(self) -> bool:
        """After close(): the session's objects are freed, no call may reach them."""
        return self.h is None

    def _open(self, call: str) -> None:
        if self.h is None:
            raise HostError(call, -998, "the session is closed (ag_host_close): its modules "
                                        "and kernels are freed")

    def under_argus(self) -> bool:
        return bool(self.lib.ag_host_under_argus(self.h))

    def adopt(self, module: int, image: Optional[bytes], name: str) -> int:
        """ag_host_adopt: the module another runtime loaded (a CUmodule as an int)."""
        self._open("ag_host_adopt('%s')" % name)
        m = ctypes.c_void_p()
        data = bytes(image) if image is not None else None
        self._check("ag_host_adopt('%s')" % name,
                    self.lib.ag_host_adopt(self.h, ctypes.c_void_p(module), data,
                                           len(data) if data is not None else 0,
                                           name.encode(), ctypes.byref(m)))
        return m.value

    def traced(self, module: int) -> bool:
        self._open("ag_host_module_traced")
        return bool(self.lib.ag_host_module_traced(ctypes.c_void_p(module)))

    def kernel(self, module: int, name: str) -> int:
        self._open("ag_host_kernel_get('%s')" % name)
        k = ctypes.c_void_p()
        self._check("ag_host_kernel_get('%s')" % name,
                    self.lib.ag_host_kernel_get(ctypes.c_void_p(module), name.encode(),
                                                ctypes.byref(k)))
        return k.value

    def launch_begin(self, kernel: int, grid: Sequence[int], block: Sequence[int], shared: int,
                     stream: int) -> None:
        self._open("ag_host_launch_begin")
        self._check("ag_host_launch_begin",
                    self.lib.ag_host_launch_begin(ctypes.c_void_p(kernel), Dim(*grid),
                                                  Dim(*block), shared,
                                                  ctypes.c_void_p(stream or None)))

    def launch_end(self, kernel: int, launched: bool) -> None:
        self._open("ag_host_launch_end")
        self._check("ag_host_launch_end",
                    self.lib.ag_host_launch_end(ctypes.c_void_p(kernel), 1 if launched else 0))

    def finish(self) -> None:
        self._open("ag_host_finish")
        self._check("ag_host_finish", self.lib.ag_host_finish(self.h))

    def close(self) -> None:
        if self.h is not None:
            self.lib.ag_host_close(self.h)
            self.h = None
