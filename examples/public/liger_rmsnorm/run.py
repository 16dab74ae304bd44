"""Runs Liger-Kernel's RMSNorm forward (rms_norm.py beside this file) the way Liger's
LigerRMSNormFunction launches it for a Llama model: bf16 rows of 4096, one program per row,
BLOCK_SIZE = next_power_of_2(n_cols), num_warps from Liger's calculate_settings (8 at 4096),
casting mode "llama", a weight, offset 0. Written for Argus; checks Y and RSTD against torch.

usage: run.py [LAUNCHES] [ROWS]        on the GPU (needs torch)
       run.py --compile-only OUTDIR    compiles it for sm_90 without a GPU (Triton's
                                       triton.compile with the launch's specialization) and
                                       writes OUTDIR/_rms_norm_forward_kernel.{ptx,cubin}"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rms_norm import _CASTING_MODE_LLAMA, _rms_norm_forward_kernel  # noqa: E402

N_COLS = 4096
BLOCK_SIZE = 4096  # triton.next_power_of_2(N_COLS)
NUM_WARPS = 8      # Liger's calculate_settings(4096)
EPS = 1e-6


def compile_only(out):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    fn = _rms_norm_forward_kernel
    sig = {"Y_ptr": "*bf16", "Y_row_stride": "i32", "X_ptr": "*bf16", "X_row_stride": "i32",
           "W_ptr": "*bf16", "W_row_stride": "constexpr", "RSTD_ptr": "*fp32",
           "RSTD_row_stride": "constexpr", "n_cols": "i32", "eps": "fp32", "offset": "fp32",
           "casting_mode": "constexpr", "elementwise_affine": "constexpr",
           "BLOCK_SIZE": "constexpr"}
    const = {"W_row_stride": 1, "RSTD_row_stride": 1, "casting_mode": 0,
             "elementwise_affine": True, "BLOCK_SIZE": BLOCK_SIZE}
    aligned = ["Y_ptr", "Y_row_stride", "X_ptr", "X_row_stride", "W_ptr", "RSTD_ptr", "n_cols"]
    attrs = {(fn.arg_names.index(a),): [["tt.divisibility", 16]] for a in aligned}
    k = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=const, attrs=attrs),
                       target=GPUTarget("cuda", 90, 32), options={"num_warps": NUM_WARPS})
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, fn.__name__ + ".ptx"), "w") as f:
        f.write(k.asm["ptx"])
    with open(os.path.join(out, fn.__name__ + ".cubin"), "wb") as f:
        f.write(k.asm["cubin"])


def run(launches, rows):
    import torch
    torch.manual_seed(0)
    x = torch.randn((rows, N_COLS), device="cuda", dtype=torch.bfloat16)
    w = torch.randn((N_COLS,), device="cuda", dtype=torch.bfloat16)
    y = torch.empty_like(x)
    rstd = torch.empty((rows,), device="cuda", dtype=torch.float32)
    for _ in range(launches):
        _rms_norm_forward_kernel[(rows,)](y, y.stride(0), x, x.stride(0), w, w.stride(0), rstd,
                                          rstd.stride(0), N_COLS, EPS, 0.0,
                                          _CASTING_MODE_LLAMA, elementwise_affine=True,
                                          BLOCK_SIZE=BLOCK_SIZE, num_warps=NUM_WARPS)
    torch.cuda.synchronize()
    xf = x.float()
    r = torch.rsqrt(xf.pow(2).mean(dim=1) + EPS)
    ref = (xf * r[:, None]).to(torch.bfloat16) * w
    err_r = (rstd - r).abs().max().item()
    err_y = (y.float() - ref.float()).abs().max().item()
    if err_r > 1e-3 or err_y > 0.1:
        sys.exit("rms_norm: wrong result (rstd error %g, y error %g)" % (err_r, err_y))
    print("rms_norm: %d launches of %d rows, result checked" % (launches, rows))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--compile-only":
        compile_only(sys.argv[2])
    else:
        run(int(sys.argv[1]) if len(sys.argv) > 1 else 6,
            int(sys.argv[2]) if len(sys.argv) > 2 else 8192)
