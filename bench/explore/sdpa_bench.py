#!/usr/bin/env python3
"""sdpa_bench.py — torch's scaled-dot-product attention backends, timed the
way bench_tile_run times attention.tile (warm-up, a memset of twice the L2
before each sample, CUDA events, median of the samples), for the figures of
bench/RESULTS.md. One line per (head dim, backend):

  sdpa d=64 backend=cudnn median_ms=0.91 min_ms=0.90 max_ms=0.95 tflops=301.2 gqa=native

Usage: sdpa_bench.py SQ SKV HQ HKV SAMPLES [D ...]. Non-causal, batch 1, bf16;
FLOPs = 4 * sq * skv * d * hq (the two products). GQA runs natively
(enable_gqa) where the backend takes it, else with K and V repeated to hq
heads (the line says which).
"""
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


def main():
    sq, skv, hq, hkv, samples = (int(a) for a in sys.argv[1:6])
    dims = [int(a) for a in sys.argv[6:]] or [64, 128]
    torch.manual_seed(0)
    backends = [("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION),
                ("efficient", SDPBackend.EFFICIENT_ATTENTION)]
    for d in dims:
        q = (torch.rand(1, hq, sq, d, device="cuda") - 0.5).to(torch.bfloat16)
        k = (torch.rand(1, hkv, skv, d, device="cuda") - 0.5).to(torch.bfloat16)
        v = (torch.rand(1, hkv, skv, d, device="cuda") - 0.5).to(torch.bfloat16)
        kx = k.repeat_interleave(hq // hkv, dim=1)
        vx = v.repeat_interleave(hq // hkv, dim=1)
        flops = 4.0 * sq * skv * d * hq
        for name, be in backends:
            res = None
            for gqa in ("native", "repeated"):
                try:
                    with sdpa_kernel(be):
                        if gqa == "native":
                            fn = lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
                        else:
                            fn = lambda: F.scaled_dot_product_attention(q, kx, vx)
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
                print(f"sdpa d={d} backend={name} median_ms={med:.4f} min_ms={lo:.4f} "
                      f"max_ms={hi:.4f} tflops={flops / (med * 1e-3) * 1e-12:.1f} gqa={gqa}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
