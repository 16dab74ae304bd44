"""The ctypes binding of libargus.so (include/argus/argus.h): loading, the
function signatures, and errors turned into exceptions. Internal: the public
names are in argus/__init__.py."""
from __future__ import annotations

import ctypes
import json
import os
import shutil
from typing import Any, List, Optional

API_VERSION = 1  # ARGUS_API_VERSION this binding was written for
SONAME = "libargus.so.%d" % API_VERSION

# argus.h's error codes
ENOMEM, EINVAL, EIO, EPARSE, ENOTFOUND = -999, -998, -997, -996, -995
ECORRUPT, EUNSUPPORTED, ESCHEMA, ERANGE, EISDIR, EFAILED = -993, -991, -990, -989, -977, -900


class ArgusError(Exception):
    """An Argus call failed. `code` is the library's (negative) error code,
    `name` its name ("ARGUS_EINVAL"), `message` one line saying what and
    where, `diagnostics` a list of {severity, file, line, col, message}."""

    def __init__(self, code: int, name: str, message: str, diagnostics: List[dict]):
        self.code = code
        self.name = name
        self.message = message
        self.diagnostics = diagnostics
        text = message
        for d in diagnostics:
            where = d.get("file") or ""
            if d.get("line"):
                where += ":%d:%d" % (d["line"], d.get("col") or 0)
            text += "\n  %s%s: %s" % (where + ": " if where else "", d.get("severity", "error"),
                                      d.get("message", ""))
        super().__init__(text)


class SchemaError(ArgusError):
    """The workspace was written by a newer argus: upgrade argus to read it."""


class NotFoundError(ArgusError):
    """No such file, workspace, ref, version or report."""


class MalformedError(ArgusError):
    """Malformed input: a spec, a tile program (see `diagnostics`), a report."""


class PlanFailedError(ArgusError):
    """The plan ran and a task failed (an unknown region, bad markers)."""


class UnsupportedError(ArgusError):
    """Not built into this libargus (no CUDA toolkit when it was built)."""


class OutOfRangeError(ArgusError, ValueError):
    """A number outside what the call takes (a summary's token budget)."""


_classes = {ESCHEMA: SchemaError, ENOTFOUND: NotFoundError, EPARSE: MalformedError,
            EFAILED: PlanFailedError, EUNSUPPORTED: UnsupportedError, ERANGE: OutOfRangeError}


class Value(ctypes.Structure):
    _fields_ = [("region", ctypes.c_char_p), ("signal", ctypes.c_char_p),
                ("stat", ctypes.c_char_p), ("unit", ctypes.c_char_p), ("qual", ctypes.c_char_p),
                ("has_number", ctypes.c_int), ("number", ctypes.c_double),
                ("entropy", ctypes.c_double), ("value_json", ctypes.c_char_p),
                ("flag", ctypes.c_char_p), ("provenance", ctypes.c_char_p)]


def _candidates() -> List[str]:
    env = os.environ.get("ARGUS_LIBRARY")
    if env:
        return [env]
    out = [SONAME]
    exe = shutil.which("argus")
    if exe:
        out.append(os.path.join(os.path.dirname(os.path.realpath(exe)), "..", "lib", SONAME))
    return out


def _load() -> ctypes.CDLL:
    errors = []
    for c in _candidates():
        try:
            return ctypes.CDLL(c)
        except OSError as e:
            errors.append("%s: %s" % (c, e))
    raise ImportError("argus: cannot load libargus (%s); install Argus (cmake --install) or set "
                      "ARGUS_LIBRARY to the path of %s" % ("; ".join(errors), SONAME))


_p = ctypes.c_void_p
_s = ctypes.c_char_p
_i = ctypes.c_int
_pp = ctypes.POINTER(ctypes.c_void_p)
_SIGS = {
    "argus_api_version": (_i, []),
    "argus_version": (_s, []),
    "argus_error_name": (_s, [_i]),
    "argus_errmsg": (_s, []),
    "argus_errdiags": (_s, []),
    "argus_free": (None, [_p]),
    "argus_ws_open": (_i, [_s, ctypes.c_uint, _pp]),
    "argus_ws_close": (None, [_p]),
    "argus_ws_path": (_s, [_p]),
    "argus_ws_refs": (_i, [_p, _pp]),
    "argus_ws_versions": (_i, [_p, ctypes.c_size_t, _pp]),
    "argus_ws_version": (_i, [_p, _s, _pp]),
    "argus_ws_ref_set": (_i, [_p, _s, _s]),
    "argus_ws_fork": (_i, [_p, _s, _s, _s, _s, ctypes.POINTER(ctypes.c_int64)]),
    "argus_plan": (_i, [_p, _s, _s, _s, _s, _s, _pp]),
    "argus_observe": (_i, [_p, _s, _s, _s, _s, _s, _pp]),
    "argus_report_read": (_i, [_p, _s, _pp]),
    "argus_report_free": (None, [_p]),
    "argus_report_json": (_s, [_p]),
    "argus_report_hash": (_s, [_p]),
    "argus_report_text": (_i, [_p, _pp]),
    "argus_report_summary": (_i, [_p, _i, _pp]),
    "argus_report_complete": (_i, [_p]),
    "argus_report_nvalues": (ctypes.c_size_t, [_p]),
    "argus_report_value": (_i, [_p, ctypes.c_size_t, ctypes.POINTER(Value)]),
    "argus_check_file": (_i, [_s, _s, _pp]),
    "argus_check_free": (None, [_p]),
    "argus_check_verdict": (_i, [_p]),
    "argus_check_json": (_s, [_p]),
    "argus_check_diagnostics": (_s, [_p]),
}

class _Missing:
    """Stands for a libargus that could not be found: `import argus` still works, so a
    Triton kernel file with argus.triton's markers (which need no library) runs where
    Argus is not installed; the first call into the library raises the ImportError that
    says why. A library of another API version is still refused at import."""

    def __init__(self, why: str):
        self.why = why

    def __getattr__(self, name: str) -> Any:
        raise ImportError(self.why)


try:
    lib: Any = _load()
    loaded = True
except ImportError as _e:
    lib = _Missing(str(_e))
    loaded = False
if loaded:
    for _name, (_res, _args) in _SIGS.items():
        _f = getattr(lib, _name)
        _f.restype = _res
        _f.argtypes = _args
    if lib.argus_api_version() != API_VERSION:
        raise ImportError("argus: libargus has API version %d, this package needs %d"
                          % (lib.argus_api_version(), API_VERSION))


def enc(s: Optional[str]) -> Optional[bytes]:
    return None if s is None else s.encode()


def dec(b: Optional[bytes]) -> str:
    return "" if b is None else b.decode("utf-8", "replace")


def check(rc: int) -> int:
    """Raises the thread's last error when rc is an error code."""
    if rc >= 0:
        return rc
    try:
        diags = json.loads(dec(lib.argus_errdiags()))
    except ValueError:
        diags = []
    cls = _classes.get(rc, ArgusError)
    raise cls(rc, dec(lib.argus_error_name(rc)), dec(lib.argus_errmsg()), diags)


def take_json(p: ctypes.c_void_p) -> Any:
    """Parses and frees a JSON string the library returned."""
    if not p.value:
        return None
    try:
        return json.loads(ctypes.string_at(p.value).decode())
    finally:
        lib.argus_free(p)
