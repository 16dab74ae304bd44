"""argus.triton — region markers for Triton kernels (docs/triton.md).

Inside a @triton.jit function:

    import argus.triton as at

    at.begin("mainloop")              # a region starts here
    for k in range(0, n_k):
        at.begin("step", k)           # ... with k as the occurrence's iteration index
        ...
        at.end("step")
    at.end("mainloop")                # the innermost open region, which must be "mainloop"
    at.role("producer")               # the executing warp's role from here on
    with at.region("epilogue"):       # begin at the `with`, end after its body
        ...

Each call puts one PTX comment into Triton's PTX, the grammar of docs/markers.md:

    // @argus begin <fnv1a(name)> <name> [<iteration operand>]
    // @argus end <fnv1a(name)> <name>
    // @argus role <fnv1a(name)> <name>

as an inline-asm statement with side effects (`tl.inline_asm_elementwise`, is_pure=False,
one scalar result nobody reads), so Triton keeps it in program order and every thread runs
it once. A comment emits no machine instruction (tests/triton/test_triton_markers.py counts
the SASS).

These are Triton builtins (triton.language.core.builtin): Triton's code generator calls
them while it traces the kernel, with the arguments as compile-time values, so `name` must
be a string literal or a tl.constexpr string, and its FNV-1a hash is computed here in Python
at compile time, as region.cuh does in C++. A @triton.jit wrapper could not: it would need
the hash of a string computed inside Triton code, and an inlined callee's markers would carry
the callee's source lines (argus/triton.py), not the kernel's, in the PTX debug lines that
Argus maps errors back through.

The iteration index may be a scalar integer tensor (a loop variable of `range`,
`tl.range`, a program id): its register becomes the marker's operand (16-bit values are
widened to 32 bits first); or a Python or constexpr int (a `tl.static_range` variable):
then the number itself is the operand.

This module does not need libargus: a kernel file with markers imports and runs where
Argus is not installed (markers are always on: Triton's cache does not key on an
environment variable of ours, so they cannot be switched off by one; docs/triton.md).
"""
from __future__ import annotations

import re
from typing import Any, Optional

__all__ = ["begin", "end", "role", "region", "fnv1a", "marker_text"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\Z")


def fnv1a(name: str) -> int:
    """FNV-1a, 64-bit, over the UTF-8 bytes of `name` (argus_detail::fnv1a in region.cuh,
    ag_ptx_fnv1a in the library)."""
    h = 0xcbf29ce484222325
    for b in name.encode("utf-8"):
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def _value(x: Any) -> Any:
    """A constexpr's value (tl.constexpr wraps compile-time values), else x."""
    while hasattr(x, "value") and type(x).__name__ == "constexpr":
        x = x.value
    return x


def _name(name: Any, what: str) -> str:
    n = _value(name)
    if not isinstance(n, str):
        raise TypeError("argus.triton.%s: the region name must be a compile-time string "
                        "(a literal or a tl.constexpr str), not %s" % (what, type(n).__name__))
    if not _NAME.match(n):
        raise ValueError("argus.triton.%s: invalid region name '%s': a name is "
                         "[A-Za-z_][A-Za-z0-9_.-]* and has no '/' (docs/markers.md)"
                         % (what, n))
    return n


def marker_text(kind: str, name: str, operand: Optional[str] = None) -> str:
    """The marker comment of docs/markers.md: kind "begin", "end" or "role"."""
    if kind not in ("begin", "end", "role"):
        raise ValueError("argus.triton: marker kind must be begin, end or role, not %r" % kind)
    n = _name(name, kind)
    text = "// @argus %s %d %s" % (kind, fnv1a(n), n)
    return text + " " + operand if operand is not None else text


def _emit(kind: str, name: Any, iteration: Any, _semantic: Any) -> Any:
    import triton.language as tl  # only when Triton traces a kernel

    n = _name(name, kind)
    it = _value(iteration)
    args = []
    operand = None
    if it is None:
        pass
    elif isinstance(it, bool):
        raise TypeError("argus.triton.begin('%s'): the iteration must be an integer, not bool"
                        % n)
    elif isinstance(it, int):
        if it < 0:
            raise ValueError("argus.triton.begin('%s'): a constant iteration must be >= 0, "
                             "not %d" % (n, it))
        operand = "%d" % it
    elif isinstance(it, tl.tensor):
        ty = it.type
        if ty.is_block():
            raise TypeError("argus.triton.begin('%s'): the iteration must be a scalar, not a "
                            "block of shape %s" % (n, list(ty.shape)))
        if not ty.is_int() or ty.is_bool():
            raise TypeError("argus.triton.begin('%s'): the iteration must be an integer, not "
                            "%s" % (n, ty))
        bits = ty.primitive_bitwidth
        if bits < 32:
            it = _semantic.cast(it, tl.int32)
            bits = 32
        args = [it]
        operand = "$1"
        constraint = "l" if bits == 64 else "r"
    else:
        raise TypeError("argus.triton.begin('%s'): the iteration must be an integer tensor or "
                        "int, not %s" % (n, type(it).__name__))
    asm = marker_text(kind, n, operand)
    constraints = "=r" + ("," + constraint if args else "")
    # one unused 32-bit result: Triton's inline asm must return something; nobody reads it
    return tl.inline_asm_elementwise(asm, constraints, args, dtype=tl.int32, is_pure=False,
                                     pack=1, _semantic=_semantic)


def _builtin(fn: Any) -> Any:
    """Marks fn a Triton builtin (triton.language.core.builtin) when Triton is installed;
    without Triton the markers cannot be traced anyway, and importing this module must
    still work (docs, tests of the hash)."""
    try:
        from triton.language.core import builtin
    except ImportError:
        return fn
    return builtin(fn)


@_builtin
def begin(name: Any, iteration: Any = None, _semantic: Any = None) -> None:
    """A region `name` starts here; `iteration` (optional): the occurrence's iteration
    index, a scalar integer tensor or a compile-time int."""
    _emit("begin", name, iteration, _semantic)


@_builtin
def end(name: Any, _semantic: Any = None) -> None:
    """The innermost open region, which must be `name`, ends here."""
    _emit("end", name, None, _semantic)


@_builtin
def role(name: Any, _semantic: Any = None) -> None:
    """The executing warp's role (producer, consumer, ...) from here on."""
    _emit("role", name, None, _semantic)


class _Region:
    """What `with argus.triton.region(name[, iteration]):` enters and leaves: Triton
    3.6's code generator calls the builtin with _semantic, then __enter__, the body,
    __exit__ (triton/compiler/code_generator.py, visit_With)."""

    def __init__(self, name: str, iteration: Any, semantic: Any) -> None:
        self.name, self.iteration, self.semantic = name, iteration, semantic

    def __enter__(self) -> None:
        _emit("begin", self.name, self.iteration, self.semantic)

    def __exit__(self, *exc: Any) -> None:
        _emit("end", self.name, None, self.semantic)


@_builtin
def region(name: Any, iteration: Any = None, _semantic: Any = None) -> _Region:
    """`with argus.triton.region("epilogue"):` — begin before the body, end after it."""
    return _Region(_name(name, "region"), iteration, _semantic)
