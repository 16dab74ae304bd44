#!/usr/bin/env python3
"""Records the PTX that Triton emits for three Hopper kernels, for Argus's
PTX corpus (tests/data/ptx/triton). Run on the GPU machine (H100/H200,
Triton 3.x, PyTorch):

    python3 scripts/record-triton-ptx.py --out tests/data/ptx/triton

Each kernel is compiled and run on small inputs and checked against PyTorch
(exit 1 on a mismatch); then its PTX (CompiledKernel.asm['ptx']) is written
as <name>.ptx, with a manifest (versions, GPU, command) in MANIFEST.json.
"""
import argparse
import json
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import triton_kernels as tk  # noqa: E402


def check(name, got, want, atol, rtol):
    if not torch.allclose(got.float(), want.float(), atol=atol, rtol=rtol):
        err = (got.float() - want.float()).abs().max().item()
        print(f"record-triton-ptx: {name}: result mismatch (max abs error {err})",
              file=sys.stderr)
        return False
    return True


def run_pipelined(dev):
    M = N = K = 512
    a = torch.randn(M, K, device=dev, dtype=torch.float16)
    b = torch.randn(K, N, device=dev, dtype=torch.float16)
    c = torch.empty(M, N, device=dev, dtype=torch.float16)
    BM, BN, BK = 128, 128, 64
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    k = tk.matmul_pipelined[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0),
                                  b.stride(1), c.stride(0), c.stride(1), BLOCK_M=BM, BLOCK_N=BN,
                                  BLOCK_K=BK, GROUP_M=8, num_stages=3, num_warps=8)
    torch.cuda.synchronize()
    return k, check("matmul_pipelined", c, a @ b, 1e-1, 1e-2)


def run_tma_persistent(dev):
    from triton.tools.tensor_descriptor import TensorDescriptor
    M = N = K = 512
    BM, BN, BK = 128, 128, 64
    a = torch.randn(M, K, device=dev, dtype=torch.float16)
    b = torch.randn(N, K, device=dev, dtype=torch.float16)
    c = torch.empty(M, N, device=dev, dtype=torch.float16)
    a_desc = TensorDescriptor.from_tensor(a, [BM, BK])
    b_desc = TensorDescriptor.from_tensor(b, [BN, BK])
    c_desc = TensorDescriptor.from_tensor(c, [BM, BN])
    sms = torch.cuda.get_device_properties(dev).multi_processor_count
    tiles = triton.cdiv(M, BM) * triton.cdiv(N, BN)
    grid = (min(sms, tiles),)
    k = tk.matmul_tma_persistent[grid](a_desc, b_desc, c_desc, M, N, K, BLOCK_M=BM,
                                       BLOCK_N=BN, BLOCK_K=BK, NUM_SMS=grid[0], num_stages=3,
                                       num_warps=8)
    torch.cuda.synchronize()
    return k, check("matmul_tma_persistent", c, a @ b.T, 1e-1, 1e-2)


def run_attention(dev):
    Z, N_CTX, D = 4, 256, 64
    q = torch.randn(Z, N_CTX, D, device=dev, dtype=torch.float16)
    kk = torch.randn(Z, N_CTX, D, device=dev, dtype=torch.float16)
    v = torch.randn(Z, N_CTX, D, device=dev, dtype=torch.float16)
    o = torch.empty_like(q)
    scale = D ** -0.5
    BM, BN = 64, 64
    grid = (N_CTX // BM, Z)
    k = tk.attention_fwd[grid](q, kk, v, o, scale, N_CTX, q.stride(0), q.stride(1), HEAD_DIM=D,
                               BLOCK_M=BM, BLOCK_N=BN, num_stages=2, num_warps=4)
    torch.cuda.synchronize()
    ref = torch.softmax((q.float() @ kk.float().transpose(1, 2)) * scale, dim=-1) @ v.float()
    return k, check("attention_fwd", o, ref, 2e-2, 2e-2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="tests/data/ptx/triton", help="output directory")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("record-triton-ptx: no CUDA device", file=sys.stderr)
        return 1
    dev = torch.device("cuda")
    cap = torch.cuda.get_device_capability(dev)
    if cap[0] != 9:
        print(f"record-triton-ptx: need a Hopper GPU (sm_90), found sm_{cap[0]}{cap[1]}",
              file=sys.stderr)
        return 1
    os.makedirs(args.out, exist_ok=True)
    ok = True
    files = {}
    for name, fn in [("triton_matmul_pipelined", run_pipelined),
                     ("triton_matmul_tma_persistent", run_tma_persistent),
                     ("triton_attention_fwd", run_attention)]:
        kernel, good = fn(dev)
        ok &= good
        ptx = kernel.asm["ptx"]
        path = os.path.join(args.out, name + ".ptx")
        with open(path, "w") as f:
            f.write(ptx)
        files[name + ".ptx"] = {"lines": ptx.count("\n"), "checked": bool(good)}
        print(f"record-triton-ptx: wrote {path} ({ptx.count(chr(10))} lines)")
    manifest = {
        "triton": triton.__version__,
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(dev),
        "capability": f"sm_{cap[0]}{cap[1]}",
        "command": "python3 scripts/record-triton-ptx.py --out " + args.out,
        "files": files,
    }
    with open(os.path.join(args.out, "MANIFEST.json"), "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
