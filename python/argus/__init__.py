"""argus — the Python client of Argus (docs/api.md).

A thin, typed binding over libargus.so (ctypes; nothing is compiled at
install time):

    argus.plan(spec, region=, signals=, scope=)      the measurement plan (dict)
    argus.observe(spec, region=, signals=, scope=)   a Report: values with qual,
                                                     unit and provenance
    argus.check(path, set=, symbolic=, ...)          a CheckResult
    argus.Workspace(path)                            refs, versions, fork, reports

Every failure raises ArgusError (or a subclass: SchemaError, NotFoundError,
MalformedError, PlanFailedError, UnsupportedError, OutOfRangeError, which is
also a ValueError) carrying the library's
message and diagnostics; an argument of the wrong type raises TypeError
naming the parameter. Without libargus, `import argus` works (argus.triton,
the region markers for Triton kernels, needs no library) and the first call
raises ImportError saying why.
"""
from __future__ import annotations

import builtins
import ctypes
import json
import os
import weakref
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _lib
from ._lib import (ArgusError, MalformedError, NotFoundError, OutOfRangeError, PlanFailedError,
                   SchemaError, UnsupportedError)

__all__ = ["plan", "observe", "check", "Workspace", "Report", "Value", "Version", "CheckResult",
           "ArgusError", "SchemaError", "NotFoundError", "MalformedError", "PlanFailedError",
           "UnsupportedError", "OutOfRangeError", "API_VERSION", "__version__",
           "SUMMARY_BYTES_PER_TOKEN", "SUMMARY_MIN_TOKENS", "SUMMARY_DEFAULT_TOKENS",
           "SUMMARY_MAX_TOKENS"]

API_VERSION = _lib.API_VERSION
if _lib.loaded:
    __version__ = _lib.dec(_lib.lib.argus_version())
else:
    def __getattr__(name: str) -> Any:
        if name == "__version__":  # without libargus: its ImportError, saying why
            return _lib.dec(_lib.lib.argus_version())
        raise AttributeError("module 'argus' has no attribute '%s'" % name)

PathLike = Union[str, "os.PathLike[str]"]
Scope = Union[str, Mapping[str, Union[str, int, Tuple[int, int]]], None]


# ----------------------------------------------------------------- arguments
def _path(v: Any, name: str) -> str:
    if isinstance(v, (str, os.PathLike)) and not isinstance(v, bytes):
        return os.fspath(v)
    raise TypeError("argus: '%s' must be a path (str or os.PathLike), not %s"
                    % (name, type(v).__name__))


def _str(v: Any, name: str, optional: bool = False) -> Optional[str]:
    if v is None and optional:
        return None
    if isinstance(v, str):
        return v
    raise TypeError("argus: '%s' must be a str%s, not %s"
                    % (name, " or None" if optional else "", type(v).__name__))


def _signals(v: Any) -> Optional[str]:
    if v is None:
        return None
    if isinstance(v, str):
        return v
    if isinstance(v, (list, tuple)) and all(isinstance(s, str) for s in v):
        return ",".join(v)
    raise TypeError("argus: 'signals' must be a list of str (or one str), not %s"
                    % type(v).__name__)


def _scope(v: Any) -> Optional[str]:
    """"iter=0:8,role=consumer", or {"iter": (0, 8), "role": "consumer"}."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, Mapping):
        parts = []
        for k, x in v.items():
            if not isinstance(k, str):
                raise TypeError("argus: 'scope' keys must be str, not %s" % type(k).__name__)
            if isinstance(x, bool):
                raise TypeError("argus: 'scope' value of '%s' must be a str, an int or a "
                                "(lo, hi) pair, not bool" % k)
            if isinstance(x, (str, int)):
                parts.append("%s=%s" % (k, x))
            elif (isinstance(x, tuple) and len(x) == 2
                  and all(isinstance(e, int) and not isinstance(e, bool) for e in x)):
                parts.append("%s=%d:%d" % (k, x[0], x[1]))
            else:
                raise TypeError("argus: 'scope' value of '%s' must be a str, an int or a "
                                "(lo, hi) pair, not %s" % (k, type(x).__name__))
        return ",".join(parts)
    raise TypeError("argus: 'scope' must be a str or a dict, not %s" % type(v).__name__)


def _options(**kw: Any) -> Optional[bytes]:
    """The options JSON of the given keyword arguments (None values left out);
    the library checks the values' types and ranges."""
    o = {k: v for k, v in kw.items() if v is not None}
    return json.dumps(o).encode() if o else None


def _typed(v: Any, name: str, types: Tuple[type, ...], what: str) -> Any:
    if v is None or (isinstance(v, types) and not (isinstance(v, bool) and bool not in types)):
        return v
    raise TypeError("argus: '%s' must be %s, not %s" % (name, what, type(v).__name__))


# ----------------------------------------------------------------- workspace
@dataclass(frozen=True)
class Version:
    """A program version: `id` (v<id>), its `parent` (None for a root), the
    PTX `module` hash, the `transform` that made it, its `origin`, and, from
    Workspace.version, its `ancestry` (id, parent, ..., root)."""
    id: int
    parent: Optional[int]
    module: str
    transform: Optional[str]
    origin: Dict[str, Any]
    created: str
    ancestry: Tuple[int, ...] = ()

    @classmethod
    def _from(cls, j: Dict[str, Any]) -> "Version":
        return cls(j["id"], j.get("parent"), j["module"], j.get("transform"),
                   j.get("origin") or {}, j.get("created", ""), tuple(j.get("ancestry", ())))

    @property
    def name(self) -> str:
        return "v%d" % self.id


class Workspace:
    """An Argus workspace (docs/workspace.md): `path` None means
    $ARGUS_WORKSPACE, else ".argus". `create` makes it when missing. A
    workspace written by a newer argus raises SchemaError."""

    def __init__(self, path: Optional[PathLike] = None, create: bool = True):
        p = None if path is None else _path(path, "path")
        _typed(create, "create", (bool,), "a bool")
        h = ctypes.c_void_p()
        _lib.check(_lib.lib.argus_ws_open(_lib.enc(p), 1 if create else 0, ctypes.byref(h)))
        self._h: Optional[ctypes.c_void_p] = h

    def _handle(self) -> ctypes.c_void_p:
        if self._h is None:
            raise ValueError("argus: the workspace is closed")
        return self._h

    @property
    def path(self) -> str:
        return _lib.dec(_lib.lib.argus_ws_path(self._handle()))

    def close(self) -> None:
        if self._h is not None:
            _lib.lib.argus_ws_close(self._h)
            self._h = None

    def __enter__(self) -> "Workspace":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        return "Workspace(%r)" % (self.path if self._h is not None else "<closed>")

    def refs(self) -> Dict[str, str]:
        """Ref name -> target ("v3", or an artifact hash)."""
        out = ctypes.c_void_p()
        _lib.check(_lib.lib.argus_ws_refs(self._handle(), ctypes.byref(out)))
        return {r["name"]: r["target"] for r in _lib.take_json(out)}

    def versions(self, limit: int = 0) -> List[Version]:
        """Program versions, newest first (limit 0: all)."""
        _typed(limit, "limit", (int,), "an int")
        if limit < 0:
            raise ValueError("argus: 'limit' must be >= 0")
        out = ctypes.c_void_p()
        _lib.check(_lib.lib.argus_ws_versions(self._handle(), limit, ctypes.byref(out)))
        return [Version._from(v) for v in _lib.take_json(out)]

    def version(self, id: Union[str, int]) -> Version:
        """One version ("v3", 3, or a ref naming a version) with its ancestry."""
        text = "v%d" % id if isinstance(id, int) and not isinstance(id, bool) else _str(id, "id")
        out = ctypes.c_void_p()
        _lib.check(_lib.lib.argus_ws_version(self._handle(), _lib.enc(text), ctypes.byref(out)))
        return Version._from(_lib.take_json(out))

    def set_ref(self, name: str, target: Union[str, int, Version]) -> None:
        """Points ref `name` at a version (Version, 3, "v3"), an artifact or another ref."""
        t = target.name if isinstance(target, Version) else (
            "v%d" % target if isinstance(target, int) and not isinstance(target, bool)
            else _str(target, "target"))
        _lib.check(_lib.lib.argus_ws_ref_set(self._handle(), _lib.enc(_str(name, "name")),
                                             _lib.enc(t)))

    def fork(self, source: Union[str, int, Version], ptx: Optional[PathLike] = None,
             transform: Optional[str] = None, ref: Optional[str] = None) -> Version:
        """A new version whose parent is `source` (a Version, an id, "v3" or a
        ref) and whose module is the PTX file `ptx` (None: the parent's),
        made by `transform` (free text; None: "fork"); `ref`, when given, is
        pointed at it."""
        s = source.name if isinstance(source, Version) else (
            "v%d" % source if isinstance(source, int) and not isinstance(source, bool)
            else _str(source, "source"))
        p = None if ptx is None else _path(ptx, "ptx")
        vid = ctypes.c_int64()
        _lib.check(_lib.lib.argus_ws_fork(self._handle(), _lib.enc(s), _lib.enc(p),
                                          _lib.enc(_str(transform, "transform", True)),
                                          _lib.enc(_str(ref, "ref", True)), ctypes.byref(vid)))
        return self.version(vid.value)

    def report(self, id: str) -> "Report":
        """A stored report by hash, unique prefix or ref."""
        h = ctypes.c_void_p()
        _lib.check(_lib.lib.argus_report_read(self._handle(), _lib.enc(_str(id, "id")),
                                              ctypes.byref(h)))
        return Report._take(h)


def _workspace(ws: Union[Workspace, PathLike, None]) -> Tuple[Workspace, bool]:
    """The workspace to use and whether this call opened it (and closes it)."""
    if isinstance(ws, Workspace):
        return ws, False
    if ws is None or isinstance(ws, (str, os.PathLike)):
        return Workspace(ws), True
    raise TypeError("argus: 'workspace' must be a Workspace, a path or None, not %s"
                    % type(ws).__name__)


# ------------------------------------------------------------------- reports
SUMMARY_BYTES_PER_TOKEN = 3     # argus.h's ARGUS_SUMMARY_BYTES_PER_TOKEN
SUMMARY_MIN_TOKENS = 64         # ARGUS_SUMMARY_MIN_TOKENS
SUMMARY_DEFAULT_TOKENS = 256    # ARGUS_SUMMARY_DEFAULT_TOKENS
SUMMARY_MAX_TOKENS = 1000000    # ARGUS_SUMMARY_MAX_TOKENS


def _take_text(call: Any, h: ctypes.c_void_p) -> str:
    """The owned string call(h, &out) returned, decoded and freed."""
    t = ctypes.c_void_p()
    _lib.check(call(h, ctypes.byref(t)))
    try:
        return ctypes.string_at(t.value).decode() if t.value else ""
    finally:
        _lib.lib.argus_free(t)


@dataclass(frozen=True)
class Value:
    """One reported value. `value` is a number, structured data (a dict, a
    list) or None (a flagged value: `flag` says why, docs/report.md);
    `qual` is "observed", "attributed" (then `entropy` is set) or
    "derived"; `provenance` names the plan's tasks, the program version, the
    variant and the scope."""
    region: str
    signal: str
    stat: str
    value: Any
    unit: str
    qual: str
    provenance: Dict[str, Any]
    entropy: Optional[float] = None
    flag: Optional[str] = None


@dataclass
class Report:
    """A report (schema argus.report/1): `values`, what is `missing` and why,
    `warnings`, the full `json`, and its artifact `hash` in the workspace;
    summary(max_tokens) is its prompt-sized summary for agents."""
    json: Dict[str, Any]
    hash: str
    values: List[Value] = field(default_factory=list)
    text: str = ""  # the summary `argus observe` prints
    # the library's handle, freed with the Report
    _h: Optional[ctypes.c_void_p] = field(default=None, repr=False, compare=False)

    @classmethod
    def _take(cls, h: ctypes.c_void_p) -> "Report":
        lib = _lib.lib
        try:
            r = cls(json.loads(_lib.dec(lib.argus_report_json(h))),
                    _lib.dec(lib.argus_report_hash(h)))
            r.text = _take_text(lib.argus_report_text, h)
            v = _lib.Value()
            for i in range(lib.argus_report_nvalues(h)):
                _lib.check(lib.argus_report_value(h, i, ctypes.byref(v)))
                r.values.append(Value(
                    _lib.dec(v.region), _lib.dec(v.signal), _lib.dec(v.stat),
                    json.loads(_lib.dec(v.value_json)),
                    _lib.dec(v.unit), _lib.dec(v.qual), json.loads(_lib.dec(v.provenance)),
                    None if v.entropy < 0 else v.entropy,
                    None if v.flag is None else _lib.dec(v.flag)))
        except BaseException:
            lib.argus_report_free(h)
            raise
        r._h = h
        weakref.finalize(r, lib.argus_report_free, h)
        return r

    def summary(self, max_tokens: int = SUMMARY_DEFAULT_TOKENS) -> str:
        """The prompt-sized summary (`argus observe --summary`, docs/report.md):
        the facts an optimizer acts on, each with its qualification, ranked
        (qualifications, then regions by share of time, async sites, what is
        missing), within max_tokens tokens of 3 bytes each (the length in
        bytes over 3, rounded up); the last line says what was left out. A
        budget outside 64 to 1,000,000 raises OutOfRangeError (a ValueError
        and an ArgusError)."""
        if max_tokens is None:  # _typed lets None through: here it is no budget
            raise TypeError("argus: 'max_tokens' must be an int, not NoneType")
        _typed(max_tokens, "max_tokens", (int,), "an int")
        if self._h is None:
            raise ValueError("argus: this Report has no library handle (made by hand, not "
                             "by observe or Workspace.report)")
        return _take_text(lambda h, out: _lib.lib.argus_report_summary(h, max_tokens, out),
                          self._h)

    @property
    def missing(self) -> List[Dict[str, Any]]:
        return list(self.json.get("missing", []))

    @property
    def warnings(self) -> List[str]:
        return list(self.json.get("warnings", []))

    @property
    def complete(self) -> bool:
        """Nothing asked for is missing."""
        return not self.missing

    def get(self, region: Optional[str] = None, signal: Optional[str] = None,
            stat: Optional[str] = None) -> List[Value]:
        """The values matching every given field."""
        return [v for v in self.values if (region is None or v.region == region)
                and (signal is None or v.signal == signal) and (stat is None or v.stat == stat)]


# ------------------------------------------------------------------- queries
def plan(spec: PathLike, region: str, signals: Union[Sequence[str], str, None] = None,
         scope: Scope = None, workspace: Union[Workspace, PathLike, None] = None,
         ignore_damage: Optional[bool] = None) -> Dict[str, Any]:
    """The measurement plan of observe(spec, region, signals, scope) without
    collecting (needs no GPU), as `argus plan --json` prints it. A failed
    discovery (an unknown region) raises PlanFailedError."""
    args = (_lib.enc(_path(spec, "spec")), _lib.enc(_str(region, "region")),
            _lib.enc(_signals(signals)), _lib.enc(_scope(scope)),
            _options(ignore_damage=_typed(ignore_damage, "ignore_damage", (bool,), "a bool")))
    ws, own = _workspace(workspace)
    try:
        out = ctypes.c_void_p()
        rc = _lib.lib.argus_plan(ws._handle(), *args, ctypes.byref(out))
        result = _lib.take_json(out)
        _lib.check(rc)
        return result
    finally:
        if own:
            ws.close()


def observe(spec: PathLike, region: str, signals: Union[Sequence[str], str, None] = None,
            scope: Scope = None, workspace: Union[Workspace, PathLike, None] = None,
            timeout_s: Optional[float] = None, records: Optional[int] = None,
            launches: Optional[str] = None, trace: Union[Sequence[str], str, None] = None,
            ignore_damage: Optional[bool] = None) -> Report:
    """Plans and runs the query (memoized in the workspace) and returns its
    Report; values that could not be measured (no GPU, a failed run) are in
    `report.missing` with the reason."""
    opts = _options(
        timeout_s=_typed(timeout_s, "timeout_s", (int, float), "a number"),
        records=_typed(records, "records", (int,), "an int"),
        launches=_str(launches, "launches", True),
        trace=None if trace is None else (trace if isinstance(trace, str) else
                                          _signals_named(trace, "trace")),
        ignore_damage=_typed(ignore_damage, "ignore_damage", (bool,), "a bool"))
    args = (_lib.enc(_path(spec, "spec")), _lib.enc(_str(region, "region")),
            _lib.enc(_signals(signals)), _lib.enc(_scope(scope)), opts)
    ws, own = _workspace(workspace)
    try:
        h = ctypes.c_void_p()
        _lib.check(_lib.lib.argus_observe(ws._handle(), *args, ctypes.byref(h)))
        return Report._take(h)
    finally:
        if own:
            ws.close()


def _signals_named(v: Any, name: str) -> str:
    if isinstance(v, (list, tuple)) and all(isinstance(s, str) for s in v):
        return ",".join(v)
    raise TypeError("argus: '%s' must be a list of str (or one str), not %s"
                    % (name, type(v).__name__))


# --------------------------------------------------------------------- check
@dataclass(frozen=True)
class CheckResult:
    """The verdict of `argus check` on a tile program: "proved", "violated"
    or "unknown"; `json` as `argus check --json` prints it (assertions,
    counterexamples); `diagnostics` the checker's warnings."""
    verdict: str
    json: Dict[str, Any]
    diagnostics: List[Dict[str, Any]]

    @property
    def ok(self) -> bool:
        return self.verdict == "proved"

    @property
    def assertions(self) -> List[Dict[str, Any]]:
        return list(self.json.get("assertions", []))


_VERDICTS = {0: "proved", 1: "violated", 2: "unknown"}


def check(path: PathLike, set: Optional[Mapping[str, int]] = None,
          symbolic: Optional[Iterable[str]] = None, unroll: Optional[bool] = None,
          all: Optional[bool] = None, strict: Optional[bool] = None,
          rlimit: Optional[int] = None, batch: Optional[int] = None,
          max_steps: Optional[int] = None, max_writes: Optional[int] = None,
          max_memory_mib: Optional[int] = None) -> CheckResult:
    """Checks a tile program's tag assertions (docs/check.md). A malformed
    program raises MalformedError with the diagnostics (file, line, col)."""
    p = _path(path, "path")
    if set is not None:
        if not isinstance(set, Mapping) or not builtins.all(
                isinstance(k, str) and isinstance(x, int) and not isinstance(x, bool)
                for k, x in set.items()):
            raise TypeError("argus: 'set' must be a dict of str to int, not %s"
                            % type(set).__name__)
        set = dict(set)
    if symbolic is not None:
        if isinstance(symbolic, str):
            symbolic = [symbolic]
        elif not isinstance(symbolic, (list, tuple)) or not builtins.all(
                isinstance(s, str) for s in symbolic):
            raise TypeError("argus: 'symbolic' must be a list of str, not %s"
                            % type(symbolic).__name__)
        symbolic = list(symbolic)
    flags = {k: _typed(v, k, (bool,), "a bool")
             for k, v in (("unroll", unroll), ("all", all), ("strict", strict))}
    ints = {k: _typed(v, k, (int,), "an int")
            for k, v in (("rlimit", rlimit), ("batch", batch), ("max_steps", max_steps),
                         ("max_writes", max_writes), ("max_memory_mib", max_memory_mib))}
    opts = _options(set=set, symbolic=symbolic, **flags, **ints)
    h = ctypes.c_void_p()
    _lib.check(_lib.lib.argus_check_file(_lib.enc(p), opts, ctypes.byref(h)))
    try:
        lib = _lib.lib
        return CheckResult(_VERDICTS.get(lib.argus_check_verdict(h), "unknown"),
                           json.loads(_lib.dec(lib.argus_check_json(h))),
                           json.loads(_lib.dec(lib.argus_check_diagnostics(h))))
    finally:
        _lib.lib.argus_check_free(h)


