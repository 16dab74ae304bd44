#!/usr/bin/env python3
"""sdpa_bench.py — torch's scaled-dot-product attention backends, timed the
way bench_tile_run times attention.tile (warm-up, a memset of twice the L2
before each sample, CUDA events, median of the samples), for the figures of
bench/RESULTS.md. One line per (head dim, backend):

  sdpa d=64 backend=cudnn median_ms=0.91 min_ms=0.90 max_ms=0.95 tflops=301.2 gqa=native

Usage: sdpa_bench.py SQ SKV HQ HKV SAMPLES [D ...] [--inputs DIR] [--causal].
Batch 1, bf16; FLOPs = 4 * sq * skv * d * hq (the two products), halved with
--causal (is_causal=True: query row r sees keys 0 .. r; the lines then say
causal=1). GQA runs
natively (enable_gqa) where the backend takes it, else with K and V repeated
to hq heads (the line says which).

--inputs DIR: DIR/d<D>.q, .k, .v and .o are attention.tile's Q (sq, hq, d),
K and V (skv, hkv, d) and its output O (sq, hq, d), bf16, as bench_tile_run
writes them. The backends then run on those inputs, and O is compared with
SDPA in f32 on them, element by element, within attention_ref.h's tolerance
(|O - ref| <= 4e-3 |ref| + 4e-3 max|V of the kv head|), in one line:

  sdpa check d=64 reference=sdpa-f32 elements_off=0 of=8388608 max_abs_err=0.0012
"""
import os
import sys

try:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
except Exception as e:  # the line bench_tile_run reports
    print(f"sdpa unavailable: {type(e).__name__}: {e}")
    sys.exit(0)


def timed(fn, samples, warm=5):
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
    for _ in range(warm):
        fn()
    ts = []
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for i in range(samples):
        flush.fill_(i & 255)
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e))
    ts.sort()
    n = len(ts)
    med = ts[n // 2] if n % 2 else (ts[n // 2 - 1] + ts[n // 2]) / 2
    return med, ts[0], ts[-1]


def load(path, shape):
    """A bf16 tensor of this shape from raw bytes, on the GPU; None when absent."""
    if not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        raw = bytearray(f.read())
    return torch.frombuffer(raw, dtype=torch.bfloat16).reshape(shape).cuda()


def check(o_tile, q, k, v, hq, hkv, d, causal):
    """attention.tile's O against SDPA in f32 on the same inputs."""
    g = hq // hkv
    ref = F.scaled_dot_product_attention(q.float(), k.float().repeat_interleave(g, dim=1),
                                         v.float().repeat_interleave(g, dim=1),
                                         is_causal=causal)
    vmax = v.float().abs().amax(dim=(0, 2, 3)).repeat_interleave(g)  # per query head
    got = o_tile.float()
    err = (got - ref).abs()
    tol = 4e-3 * ref.abs() + 4e-3 * vmax.view(1, hq, 1, 1)
    off = int((~(err <= tol)).sum().item())
    print(f"sdpa check d={d} causal={int(causal)} reference=sdpa-f32 elements_off={off} of={err.numel()} "
          f"max_abs_err={err.max().item():.4g}")


def main():
    args = sys.argv[1:]
    inputs = None
    causal = "--causal" in args
    if causal:
        args.remove("--causal")
    if "--inputs" in args:
        i = args.index("--inputs")
        inputs = args[i + 1]
        del args[i:i + 2]
    sq, skv, hq, hkv, samples = (int(a) for a in args[0:5])
    dims = [int(a) for a in args[5:]] or [64, 128]
    torch.manual_seed(0)
    backends = [("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION),
                ("efficient", SDPBackend.EFFICIENT_ATTENTION)]
    for d in dims:
        q = (torch.rand(1, hq, sq, d, device="cuda") - 0.5).to(torch.bfloat16)
        k = (torch.rand(1, hkv, skv, d, device="cuda") - 0.5).to(torch.bfloat16)
        v = (torch.rand(1, hkv, skv, d, device="cuda") - 0.5).to(torch.bfloat16)
        if inputs:  # the kernel's own inputs: (s, h, d) rows, as (1, h, s, d) views
            t = [load(os.path.join(inputs, f"d{d}.{n}"), shp) for n, shp in
                 (("q", (sq, hq, d)), ("k", (skv, hkv, d)), ("v", (skv, hkv, d)),
                  ("o", (sq, hq, d)))]
            if any(x is None for x in t):
                print(f"sdpa check d={d}: no inputs in {inputs}")
            else:
                q, k, v, o_tile = (x.permute(1, 0, 2).unsqueeze(0).contiguous() for x in t)
                check(o_tile, q, k, v, hq, hkv, d, causal)
            sys.stdout.flush()
        kx = k.repeat_interleave(hq // hkv, dim=1)
        vx = v.repeat_interleave(hq // hkv, dim=1)
        flops = 4.0 * sq * skv * d * hq / (2 if causal else 1)
        for name, be in backends:
            res = None
            for gqa in ("native", "repeated"):
                try:
                    with sdpa_kernel(be):
                        if gqa == "native":
                            fn = lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True,
                                                                    is_causal=causal)
                        else:
                            fn = lambda: F.scaled_dot_product_attention(q, kx, vx, is_causal=causal)
                        fn()
                        torch.cuda.synchronize()
                        med, lo, hi = timed(fn, samples)
                    if res is None or med < res[0]:
                        res = (med, lo, hi, gqa)
                except Exception as e:  # this backend does not take these inputs
                    err = f"{type(e).__name__}"
            if res is None:
                print(f"sdpa d={d} backend={name} error={err}")
            else:
                med, lo, hi, gqa = res
                print(f"sdpa d={d} causal={int(causal)} backend={name} median_ms={med:.4f} min_ms={lo:.4f} "
                      f"max_ms={hi:.4f} tflops={flops / (med * 1e-3) * 1e-12:.1f} gqa={gqa}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
