"""The kernel of the Proton side-by-side benchmark (bench/triton_proton.py): the same body
twice, once with Argus's markers (argus.triton), once with Proton's scopes
(triton.profiler.language), so each tool instruments the same code. The shape is the one
Proton was measured on here (shared/GPU.md, 2026-12-01): 128 programs x 256 threads, a
loop of 64 trips (64 scope occurrences per warp), 8 dependent multiply-adds per trip."""
import triton
import triton.language as tl
import triton.profiler.language as pl

import argus.triton as at

TRIPS, INNER, PROGRAMS, WARPS = 64, 8, 128, 8
B = 32 * WARPS  # one element per thread


@triton.jit
def work_argus(x_ptr, y_ptr, trips, INNER: tl.constexpr, B: tl.constexpr):
    offs = tl.program_id(0) * B + tl.arange(0, B)
    acc = tl.load(x_ptr + offs)
    for i in range(0, trips):
        at.begin("step", i)
        for _ in tl.static_range(INNER):
            acc = acc * 0.999 + 0.5
        at.end("step")
    tl.store(y_ptr + offs, acc)


@triton.jit
def work_proton(x_ptr, y_ptr, trips, INNER: tl.constexpr, B: tl.constexpr):
    offs = tl.program_id(0) * B + tl.arange(0, B)
    acc = tl.load(x_ptr + offs)
    for i in range(0, trips):
        pl.enter_scope("step")
        for _ in tl.static_range(INNER):
            acc = acc * 0.999 + 0.5
        pl.exit_scope("step")
    tl.store(y_ptr + offs, acc)


def launch(kernel, x, y):
    kernel[(PROGRAMS,)](x, y, TRIPS, INNER=INNER, B=B, num_warps=WARPS)


def timed_launches(kernel, x, y, n, sleep_cycles=20_000_000):
    """n launches, each timed two ways: the host's wall time of the launch call, and the
    stream time of the launch (CUDA events around the launch call, queued behind a sleep
    kernel so the host's submission is not in them, unless the call itself waits for the
    GPU). Returns (stream_ms, host_ms) lists."""
    import time

    import torch
    kms, hms = [], []
    for _ in range(n):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(sleep_cycles)
        a.record()
        t0 = time.perf_counter()
        launch(kernel, x, y)
        t1 = time.perf_counter()
        b.record()
        torch.cuda.synchronize()
        kms.append(a.elapsed_time(b))
        hms.append((t1 - t0) * 1e3)
    return kms, hms


def kernel_times(kernel, x, y, n):
    """The kernel's own GPU time in ms for n launches, as CUPTI's activity records give it
    (torch.profiler): the start and end of the kernel on the GPU, whatever the host does
    around the launch. [] when the profiler recorded none of it."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            launch(kernel, x, y)
        torch.cuda.synchronize()
    name = kernel.fn.__name__
    out = []
    for e in prof.events():
        if e.name == name and str(getattr(e, "device_type", "")).endswith("CUDA"):
            out.append(e.time_range.elapsed_us() / 1e3)
    return out


def median(v):
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
