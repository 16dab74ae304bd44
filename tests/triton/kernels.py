"""Triton kernels with Argus region markers (argus.triton), for the CPU tests of
test_triton.py: compiled for sm_90 without a GPU (triton.compile with a GPUTarget).

Adapted from scripts/triton_kernels.py (the kernels recorded on the H200). Every marker is a
statement of its own line, so test_triton.py can make the markerless twin of this file by
deleting those lines. A real file: @triton.jit reads the kernel source.
"""
import triton
import triton.language as tl

import argus.triton as at


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K,
           stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
           GROUP_M: tl.constexpr):
    """C = A @ B: a tl.dot loop, `mainloop` around it, `step` (with its iteration k) around
    each trip, `epilogue` around the store."""
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_in_group = GROUP_M * num_pid_n
    group_id = pid // num_in_group
    first_m = group_id * GROUP_M
    group_size = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % num_in_group) % group_size)
    pid_n = (pid % num_in_group) // group_size
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    at.begin("mainloop")
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        at.begin("step", k)
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
        at.end("step")
    at.end("mainloop")
    at.begin("epilogue")
    c = acc.to(tl.float16)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))
    at.end("epilogue")


@triton.jit
def attention_fwd(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale, N_CTX,
                  stride_z, stride_m, HEAD_DIM: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Non-causal attention forward (two dots, online softmax): `kv_loop` with its
    iteration start_n, and inside it `qk` (the first dot), `softmax` and `pv` (the second
    dot); `normalize` after the loop."""
    start_m = tl.program_id(0)
    off_z = tl.program_id(1)
    base = off_z * stride_z
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + base + offs_m[:, None] * stride_m + offs_d[None, :])
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    for start_n in range(0, N_CTX, BLOCK_N):
        at.begin("kv_loop", start_n)
        at.begin("qk")
        kt = tl.load(k_ptr + base + (start_n + offs_n)[None, :] * stride_m + offs_d[:, None])
        qk = tl.dot(q, kt)
        at.end("qk")
        at.begin("softmax")
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        l_ij = tl.sum(p, 1)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        at.end("softmax")
        at.begin("pv")
        v = tl.load(v_ptr + base + (start_n + offs_n)[:, None] * stride_m + offs_d[None, :])
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_ij
        at.end("pv")
        at.end("kv_loop")
    at.begin("normalize")
    acc = acc / l_i[:, None]
    tl.store(o_ptr + base + offs_m[:, None] * stride_m + offs_d[None, :], acc.to(tl.float16))
    at.end("normalize")


@triton.jit
def forms(x_ptr, y_ptr, n, B: tl.constexpr):
    """The other forms: role, the `with` form, a 64-bit iteration, a constexpr iteration
    (tl.static_range), and a program id as the iteration."""
    pid = tl.program_id(0)
    at.role("consumer")
    acc = tl.zeros([B], dtype=tl.float32)
    with at.region("sum", pid):
        for i in range(0, n):
            at.begin("wide", i.to(tl.int64))
            acc += tl.load(x_ptr + i * B + tl.arange(0, B))
            at.end("wide")
    for j in tl.static_range(2):
        at.begin("unrolled", j)
        acc = acc * 2.0
        at.end("unrolled")
    tl.store(y_ptr + pid * B + tl.arange(0, B), acc)


# What a launch on 16-byte aligned tensors of sizes divisible by 16 specializes, for
# triton.compile: the signature (argument types), the constexprs (a stride of 1 becomes
# one), the arguments known divisible by 16 (Triton's "D" specialization: pointers and
# sizes), the options.
SIGS = {
    "matmul": (
        {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32",
         "K": "i32", "stride_am": "i32", "stride_ak": "constexpr", "stride_bk": "i32",
         "stride_bn": "constexpr", "stride_cm": "i32", "stride_cn": "constexpr",
         "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr",
         "GROUP_M": "constexpr"},
        {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "BLOCK_M": 128, "BLOCK_N": 128,
         "BLOCK_K": 64, "GROUP_M": 8},
        ["a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm"],
        {"num_warps": 8, "num_stages": 3}),
    "attention_fwd": (
        {"q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16", "o_ptr": "*fp16",
         "sm_scale": "fp32", "N_CTX": "i32", "stride_z": "i32", "stride_m": "i32",
         "HEAD_DIM": "constexpr", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr"},
        {"HEAD_DIM": 64, "BLOCK_M": 64, "BLOCK_N": 64},
        ["q_ptr", "k_ptr", "v_ptr", "o_ptr", "N_CTX", "stride_z", "stride_m"],
        {"num_warps": 4, "num_stages": 2}),
    "forms": (
        {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "B": "constexpr"},
        {"B": 128},
        ["x_ptr", "y_ptr"],
        {"num_warps": 4}),
}


def compile(name, fn=None):
    """Compiles kernel `name` (or `fn`, a kernel of that name's signature) for sm_90 with
    Triton, no GPU needed: the CompiledKernel (asm["ptx"], asm["cubin"])."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    sig, constexprs, aligned, options = SIGS[name]
    fn = fn or globals()[name]
    attrs = {(fn.arg_names.index(a),): [["tt.divisibility", 16]] for a in aligned}
    src = ASTSource(fn=fn, signature=sig, constexprs=constexprs, attrs=attrs)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options)
