"""Triton kernels with wrong markers, for test_triton.py: argus regions must refuse each,
naming the marker's line in this file. The tests find the lines by the marker calls' text,
so each offending call is unique here."""
import triton
import triton.language as tl

import argus.triton as at


@triton.jit
def open_in_loop(x_ptr, n, B: tl.constexpr):
    """`loop` begins in each trip and never ends."""
    acc = tl.zeros([B], dtype=tl.float32)
    at.begin("outer")
    for i in range(0, n):
        at.begin("loop", i)
        acc += tl.load(x_ptr + i * B + tl.arange(0, B))
    at.end("outer")
    tl.store(x_ptr + tl.arange(0, B), acc)


@triton.jit
def end_without_begin(x_ptr, n, B: tl.constexpr):
    acc = tl.load(x_ptr + tl.arange(0, B))
    at.end("never_begun")
    tl.store(x_ptr + tl.arange(0, B), acc + 1.0)


@triton.jit
def crossing(x_ptr, n, B: tl.constexpr):
    at.begin("first")
    acc = tl.load(x_ptr + tl.arange(0, B))
    at.begin("second")
    acc = acc * 2.0
    at.end("first")
    tl.store(x_ptr + tl.arange(0, B), acc)
    at.end("second")


@triton.jit
def open_at_return(x_ptr, n, B: tl.constexpr):
    acc = tl.load(x_ptr + tl.arange(0, B))
    at.begin("unclosed")
    tl.store(x_ptr + tl.arange(0, B), acc + 1.0)


SIG = ({"x_ptr": "*fp32", "n": "i32", "B": "constexpr"}, {"B": 128})
