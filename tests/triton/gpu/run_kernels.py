"""A user's Triton program, run unchanged under `argus observe` by test_triton_gpu.py:
launches the matmul or the attention forward of tests/triton/kernels.py (their
argus.triton markers) LAUNCHES times on the GPU and checks the result against torch.

usage: run_kernels.py matmul|attention [LAUNCHES]"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from kernels import attention_fwd, matmul  # noqa: E402


def run_matmul(launches):
    M = N = K = 1024
    torch.manual_seed(0)
    a = torch.randn((M, K), device="cuda", dtype=torch.float16)
    b = torch.randn((K, N), device="cuda", dtype=torch.float16)
    c = torch.empty((M, N), device="cuda", dtype=torch.float16)
    grid = (triton_cdiv(M, 128) * triton_cdiv(N, 128),)
    for _ in range(launches):
        matmul[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                     c.stride(0), c.stride(1), BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8,
                     num_warps=8, num_stages=3)
    torch.cuda.synchronize()
    ref = (a.float() @ b.float()).half()
    err = (c.float() - ref.float()).abs().max().item()
    if err > 0.5:
        sys.exit("matmul: wrong result (max error %g)" % err)


def run_attention(launches):
    Z, N_CTX, D = 4, 1024, 64
    torch.manual_seed(0)
    q, k, v = (torch.randn((Z, N_CTX, D), device="cuda", dtype=torch.float16) for _ in range(3))
    o = torch.empty_like(q)
    scale = D ** -0.5
    grid = (N_CTX // 64, Z)
    for _ in range(launches):
        attention_fwd[grid](q, k, v, o, scale, N_CTX, q.stride(0), q.stride(1), HEAD_DIM=D,
                            BLOCK_M=64, BLOCK_N=64, num_warps=4, num_stages=2)
    torch.cuda.synchronize()
    ref = torch.softmax((q.float() @ k.float().transpose(1, 2)) * scale, dim=-1) @ v.float()
    err = (o.float() - ref).abs().max().item()
    if err > 0.05:
        sys.exit("attention: wrong result (max error %g)" % err)


def triton_cdiv(a, b):
    return (a + b - 1) // b


if __name__ == "__main__":
    which = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    {"matmul": run_matmul, "attention": run_attention}[which](n)
    print("%s: %d launches, result checked" % (which, n))
