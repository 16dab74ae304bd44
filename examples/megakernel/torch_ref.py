#!/usr/bin/env python3
"""torch_ref.py - the decode megakernel's PyTorch baselines (issue 25,
docs/megakernel.md "PyTorch baselines").

Loads a model from an ARGUSMK1 weight file (megakernel_harness
--save-weights FILE writes one: docs/megakernel.md "Weight file"), draws the
same seeded KV-cache context as the harness (--ctx positions of unit-variance
K and V, streams 1000 + 2 layer and 1001 + 2 layer, over a cache of
--ctx + --steps positions), and decodes with the same operators as the
megakernel: RMSNorm in fp32, bf16 GEMVs (torch.nn.functional.linear, fp32
accumulation, bf16 out), RoPE in fp32, the new K and V written into the bf16
cache, attention over the cache (scaled_dot_product_attention, bf16, a mask
beyond the position), SiLU gating, the fp32 residual stream, greedy argmax.
Batch 1. Two modes on the same code: PyTorch eager, and the step captured
once as a CUDA graph and replayed (the position and the token live on the
device, so the captured step serves every position).

The check (--tokens FILE: the megakernel's tokens, megakernel_harness
--tokens-out): teacher-forced on the megakernel's tokens, at every step the
megakernel's next token must be PyTorch's argmax, or a near-tie: PyTorch's
logit of its own argmax at most TIE (0.1) above its logit of the megakernel's
token (bf16 activations round each GEMV's output to 8 bits of mantissa; logits
are of order 1 to 4). Exit 1 when a step fails. The free-running tokens of the
timed runs are compared too (printed: equal steps before the first
difference).

Timing: --runs repetitions of --steps back-to-back steps from the context's
end, one CUDA event pair around each repetition; ms/token is its time over
--steps; the median and the spread are printed, and one JSON line
"torch_ref: {...}" for bench/megakernel_bench.py.

  python3 examples/megakernel/torch_ref.py --weights W.bin --ctx 1024 \\
      [--steps 64] [--seed 1] [--tokens T.txt] [--runs 5] [--modes eager,graph]

Without torch (any machine): --selftest FILE --seed S reads FILE's header,
checks its length, and compares sampled weights of every tensor with this
file's pure-Python copy of the seeded generator (mk_model.h): exit 0 equal, 1
a difference, 2 a bad file (the test test_megakernel_torch_ref). torch is
needed for the rest: exit 77 without it or without a GPU.
"""
import argparse
import json
import os
import statistics
import struct
import sys

MAGIC = b"ARGUSMK1"
HEADER = 64
HEAD_DIM = 64
MAX_K = 8192
MAX_QPG = 16
TIE = 0.1
M64 = (1 << 64) - 1
GOLD = 0x9E3779B97F4A7C15
MUL1 = 0xBF58476D1CE4E5B9
MUL2 = 0x94D049BB133111EB
SQRT3 = struct.unpack("<f", struct.pack("<f", 1.7320508))[0]  # the C code's 1.7320508f
WHO = "torch_ref"


class BadFile(Exception):
    pass


def f32(v):
    """v rounded to float32 (round to nearest even), as a Python float"""
    return struct.unpack("<f", struct.pack("<f", v))[0]


def bf16_bits(v):
    """mk_bf16: float32 v's bf16 bits, round to nearest even"""
    u = struct.unpack("<I", struct.pack("<f", v))[0]
    return ((u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFFFFFF) >> 16


def uniform(seed, stream, i):
    """mk_uniform: element i of stream, uniform in [-1, 1) (exact in a double)"""
    z = ((seed * GOLD) & M64) ^ ((stream << 40) & M64) ^ i
    z = (z + GOLD) & M64
    z = ((z ^ (z >> 30)) * MUL1) & M64
    z = ((z ^ (z >> 27)) * MUL2) & M64
    z ^= z >> 31
    return (z >> 40) * (1.0 / 8388608.0) - 1.0


def draw_bits(base, scale, u):
    """mk_draw_value: bf16 bits of (float)((double)base + (double)scale * u)"""
    return bf16_bits(f32(base + scale * u))


def layout(c):
    """mk_layout_of: offsets in bf16 elements, and the seeded draws (offset,
    count, stream, base, scale) in file order, as mk_draws"""
    h, f, v = c["hidden"], c["ffn"], c["vocab"]
    qkv = (c["heads"] + 2 * c["kv_heads"]) * c["head_dim"]
    sh, sf = f32((f32(3.0 / h)) ** 0.5), f32((f32(3.0 / f)) ** 0.5)
    names = [("attn_norm", h, 1.0, 0.1), ("wqkv", qkv * h, 0.0, sh), ("wo", h * h, 0.0, sh),
             ("mlp_norm", h, 1.0, 0.1), ("w_gate", f * h, 0.0, sh), ("w_up", f * h, 0.0, sh),
             ("w_down", h * f, 0.0, sf)]
    L = {"embed": 0}
    draws = [(0, v * h, 0, 0.0, SQRT3)]
    o = v * h
    layers = []
    for l in range(c["layers"]):
        t = {}
        for name, n, base, scale in names:
            t[name] = o
            draws.append((o, n, len(draws), base, f32(scale)))
            o += n
        layers.append(t)
    L["layers"] = layers
    L["final_norm"] = o
    draws.append((o, h, len(draws), 1.0, f32(0.1)))
    o += h
    L["lm_head"] = o
    draws.append((o, v * h, len(draws), 0.0, sh))
    o += v * h
    L["total"] = o
    return L, draws


def read_header(path):
    """the header's configuration, checked as mk_weights_read_header does; BadFile names the
    file, the bytes and what to do"""
    try:
        with open(path, "rb") as fh:
            head = fh.read(HEADER)
            size = os.fstat(fh.fileno()).st_size
    except OSError as e:
        raise BadFile(f"cannot read the weight file '{path}': {e.strerror}")
    if len(head) < HEADER:
        raise BadFile(f"'{path}': {len(head)} bytes, shorter than the {HEADER}-byte header: "
                      "not a weight file (write one with megakernel_harness --save-weights)")
    if head[:8] != MAGIC:
        raise BadFile(f"'{path}': bytes 0-7 are not the magic \"ARGUSMK1\": not a weight file "
                      "(write one with megakernel_harness --save-weights)")
    version = struct.unpack("<I", head[8:12])[0]
    if version != 1:
        raise BadFile(f"'{path}': version {version} at byte 8; this reader knows version 1")
    vals = struct.unpack("<7I", head[12:40])
    eps, theta = struct.unpack("<2f", head[40:48])
    c = dict(zip(("hidden", "layers", "heads", "kv_heads", "head_dim", "ffn", "vocab"), vals))
    c["eps"], c["theta"] = eps, theta
    why = None
    if min(vals) <= 0:
        why = "every size must be positive"
    elif c["head_dim"] != HEAD_DIM:
        why = f"head_dim {c['head_dim']}: the kernels are written for head_dim {HEAD_DIM}"
    elif c["heads"] * HEAD_DIM != c["hidden"]:
        why = f"heads x head_dim = {c['heads']} x {HEAD_DIM} is not hidden {c['hidden']}"
    elif c["heads"] % c["kv_heads"] or c["heads"] // c["kv_heads"] > MAX_QPG:
        why = f"{c['heads']} query heads over {c['kv_heads']} KV heads do not divide (<= {MAX_QPG})"
    elif c["hidden"] % 8 or c["ffn"] % 8 or c["hidden"] > MAX_K or c["ffn"] > MAX_K:
        why = f"hidden {c['hidden']} and ffn {c['ffn']} must be multiples of 8, at most {MAX_K}"
    elif not (0 < eps < 1) or not (1 < theta < 1e9):
        why = f"rms_eps {eps} must be in (0, 1) and rope_theta {theta} in (1, 1e9)"
    if why:
        raise BadFile(f"'{path}': header (bytes 12-47) describes a model the kernels cannot run: "
                      f"{why}")
    total = layout(c)[0]["total"]
    want = HEADER + 2 * total
    if size != want:
        raise BadFile(f"'{path}': {size} bytes, its header's model needs {want}: the file is "
                      f"{'truncated' if size < want else 'longer than its model'}")
    return c


def samples(n):
    """the indices of a tensor of n elements the self-test compares"""
    idx = set(range(min(n, 64))) | set(range(max(0, n - 64), n))
    idx |= {(k * 2654435761) % n for k in range(256)}
    return sorted(idx)


def selftest(path, seed):
    c = read_header(path)
    L, draws = layout(c)
    bad = 0
    with open(path, "rb") as fh:
        for off, n, stream, base, scale in draws:
            for i in samples(n):
                fh.seek(HEADER + 2 * (off + i))
                got = struct.unpack("<H", fh.read(2))[0]
                want = draw_bits(base, scale, uniform(seed, stream, i))
                if got != want:
                    if bad < 5:
                        print(f"{WHO}: tensor {stream} element {i}: file 0x{got:04x}, "
                              f"generator 0x{want:04x}", file=sys.stderr)
                    bad += 1
    print(f"{WHO}: selftest: {len(draws)} tensors of '{path}' "
          f"({c['layers']} layers, hidden {c['hidden']}) against the seed {seed}: "
          f"{bad} sampled weights differ")
    return 1 if bad else 0


# ---- PyTorch (the GPU machine) ---------------------------------------------------------------

def to_signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def t_draw(torch, seed, stream, idx, base, scale):
    """mk_draw_value(base, scale, mk_uniform(seed, stream, idx)) for an int64 tensor idx, in
    int64 arithmetic (wrapping as uint64; a logical shift is an arithmetic one masked)"""
    def lsr(z, k):
        return (z >> k) & ((1 << (64 - k)) - 1)
    z = idx ^ to_signed(((seed * GOLD) & M64) ^ ((stream << 40) & M64))
    z = z + to_signed(GOLD)
    z = (z ^ lsr(z, 30)) * to_signed(MUL1)
    z = (z ^ lsr(z, 27)) * to_signed(MUL2)
    z = z ^ lsr(z, 31)
    u = lsr(z, 40).to(torch.float64) * (1.0 / 8388608.0) - 1.0
    return (base + scale * u).to(torch.float32).to(torch.bfloat16)


def kv_context(torch, c, seed, ctx, max_pos, dev):
    """the harness's context (mk_fill_cache): K and V [layer][kv head][max_pos][64] bf16,
    positions below ctx drawn, the rest zero; sampled against the pure-Python generator"""
    G = c["kv_heads"]
    per = G * max_pos * HEAD_DIM
    idx = torch.arange(per, device=dev, dtype=torch.int64)
    live = ((idx // HEAD_DIM) % max_pos) < ctx
    kc = torch.empty(c["layers"], G, max_pos, HEAD_DIM, dtype=torch.bfloat16, device=dev)
    vc = torch.empty_like(kc)
    for l in range(c["layers"]):
        for cache, stream in ((kc, 1000 + 2 * l), (vc, 1001 + 2 * l)):
            vals = t_draw(torch, seed, stream, idx, 0.0, SQRT3)
            cache[l].view(-1).copy_(torch.where(live, vals, torch.zeros_like(vals)))
    for l in (0, c["layers"] - 1):
        for i in samples(min(per, ctx * HEAD_DIM)):
            want = draw_bits(0.0, SQRT3, uniform(seed, 1000 + 2 * l, i))
            got = kc[l].view(-1)[i].view(torch.int16).item() & 0xFFFF
            if got != want:
                raise SystemExit(f"{WHO}: the device's context differs from the generator at "
                                 f"layer {l} element {i}: 0x{got:04x}, 0x{want:04x}")
    return kc, vc


class Decoder:
    """one decode step of the model in PyTorch; tok and pos are device tensors, so the same
    step can be captured as a CUDA graph"""

    def __init__(self, torch, c, w, kc, vc, ctx):
        self.t, self.c, self.kc, self.vc = torch, c, kc, vc
        L, _ = layout(c)
        H, F, V = c["hidden"], c["ffn"], c["vocab"]
        qkv = (c["heads"] + 2 * c["kv_heads"]) * HEAD_DIM

        def ten(off, *shape):
            n = 1
            for s in shape:
                n *= s
            return w[off:off + n].view(*shape)
        self.embed = ten(L["embed"], V, H)
        self.layers = [{
            "attn_norm": ten(t["attn_norm"], H).float(), "wqkv": ten(t["wqkv"], qkv, H),
            "wo": ten(t["wo"], H, H), "mlp_norm": ten(t["mlp_norm"], H).float(),
            "w_gate": ten(t["w_gate"], F, H), "w_up": ten(t["w_up"], F, H),
            "w_down": ten(t["w_down"], H, F)} for t in L["layers"]]
        self.final_norm = ten(L["final_norm"], H).float()
        self.lm_head = ten(L["lm_head"], V, H)
        dev = w.device
        i = torch.arange(HEAD_DIM // 2, device=dev, dtype=torch.float32)
        self.inv_freq = torch.pow(torch.tensor(c["theta"], device=dev), -(2.0 * i) / HEAD_DIM)
        self.positions = torch.arange(kc.shape[2], device=dev)
        self.tok = torch.ones(1, dtype=torch.int64, device=dev)
        self.pos = torch.full((1,), ctx, dtype=torch.int64, device=dev)
        self.ctx0 = torch.full((1,), ctx, dtype=torch.int64, device=dev)
        self.logits = torch.zeros(V, dtype=torch.float32, device=dev)
        self.hist = torch.zeros(kc.shape[2], dtype=torch.int64, device=dev)

    def rms(self, x, w):
        return x * self.t.rsqrt((x * x).mean() + self.c["eps"]) * w

    def rope(self, x, cos, sin):
        a, b = x[:, :HEAD_DIM // 2], x[:, HEAD_DIM // 2:]
        return self.t.cat((a * cos - b * sin, b * cos + a * sin), dim=1)

    def step(self):
        t, c = self.t, self.c
        F_ = t.nn.functional
        bf = t.bfloat16
        H, nh, G = c["hidden"], c["heads"], c["kv_heads"]
        ang = self.pos.float() * self.inv_freq
        cos, sin = t.cos(ang), t.sin(ang)
        mask = (self.positions <= self.pos).view(1, 1, 1, -1)
        x = self.embed.index_select(0, self.tok).float().view(H)
        for l, lw in enumerate(self.layers):
            qkv = F_.linear(self.rms(x, lw["attn_norm"]).to(bf), lw["wqkv"]).float()
            q = self.rope(qkv[:H].view(nh, HEAD_DIM), cos, sin)
            k = self.rope(qkv[H:H + G * HEAD_DIM].view(G, HEAD_DIM), cos, sin)
            v = qkv[H + G * HEAD_DIM:].view(G, HEAD_DIM)
            self.kc[l].index_copy_(1, self.pos, k.to(bf).view(G, 1, HEAD_DIM))
            self.vc[l].index_copy_(1, self.pos, v.to(bf).view(G, 1, HEAD_DIM))
            # a KV head's query heads as its queries (the grouped-query layout)
            o = F_.scaled_dot_product_attention(
                q.to(bf).view(1, G, nh // G, HEAD_DIM), self.kc[l].unsqueeze(0),
                self.vc[l].unsqueeze(0), attn_mask=mask, scale=0.125)
            x = x + F_.linear(o.reshape(H), lw["wo"]).float()
            xn = self.rms(x, lw["mlp_norm"]).to(bf)
            h = F_.silu(F_.linear(xn, lw["w_gate"]).float()) * F_.linear(xn, lw["w_up"]).float()
            x = x + F_.linear(h.to(bf), lw["w_down"]).float()
        self.logits.copy_(F_.linear(self.rms(x, self.final_norm).to(bf), self.lm_head).float())
        nxt = self.logits.argmax().view(1)
        self.hist.index_copy_(0, self.pos - self.ctx0, nxt)
        self.tok.copy_(nxt)
        self.pos.add_(1)


def load_weights(torch, path, dev):
    c = read_header(path)
    total = layout(c)[0]["total"]
    raw = torch.from_file(path, shared=False, size=HEADER + 2 * total, dtype=torch.uint8)
    w = raw[HEADER:].view(torch.bfloat16).to(dev)
    del raw
    return c, w


def check_weights(torch, c, w, seed):
    """sampled weights against the generator: the file is the seed's (else say so)"""
    _, draws = layout(c)
    bad = 0
    for off, n, stream, base, scale in (draws[0], draws[2], draws[-1]):
        for i in samples(n)[:64]:
            got = w[off + i].view(torch.int16).item() & 0xFFFF
            bad += got != draw_bits(base, scale, uniform(seed, stream, i))
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--weights")
    ap.add_argument("--ctx", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--seed", type=lambda s: int(s, 0), default=1)
    ap.add_argument("--tokens", help="the megakernel's tokens (megakernel_harness --tokens-out)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--modes", default="eager,graph")
    ap.add_argument("--selftest", metavar="FILE")
    a = ap.parse_args()
    if a.selftest:
        try:
            return selftest(a.selftest, a.seed)
        except BadFile as e:
            print(f"{WHO}: {e}", file=sys.stderr)
            return 2
    if not a.weights:
        print(f"{WHO}: --weights FILE is needed (megakernel_harness --save-weights FILE "
              "writes one)", file=sys.stderr)
        return 2
    modes = a.modes.split(",")
    if any(m not in ("eager", "graph") for m in modes) or a.ctx < 0 or a.steps < 1 or a.runs < 1:
        print(f"{WHO}: --modes takes eager and/or graph; --ctx >= 0, --steps and --runs >= 1",
              file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError:
        print(f"{WHO}: skipped: no torch")
        return 77
    if not torch.cuda.is_available():
        print(f"{WHO}: skipped: no GPU")
        return 77
    dev = torch.device("cuda")
    try:
        c, w = load_weights(torch, a.weights, dev)
    except BadFile as e:
        print(f"{WHO}: {e}", file=sys.stderr)
        return 2
    bad_w = check_weights(torch, c, w, a.seed)
    max_pos = a.ctx + a.steps
    kc, vc = kv_context(torch, c, a.seed, a.ctx, max_pos, dev)
    d = Decoder(torch, c, w, kc, vc, a.ctx)
    out = {"ctx": a.ctx, "steps": a.steps, "torch": torch.__version__,
           "gpu": torch.cuda.get_device_name(), "weights_seeded": bad_w == 0}
    rc = 0
    ref = None
    if a.tokens:
        with open(a.tokens) as fh:
            ref = [int(s) for s in fh.read().split()]
        if len(ref) < a.steps + 1:
            print(f"{WHO}: '{a.tokens}' has {len(ref)} tokens, --steps {a.steps} needs "
                  f"{a.steps + 1}", file=sys.stderr)
            return 2
        exact = ties = fails = 0
        worst = 0.0
        with torch.no_grad():
            for s in range(a.steps):
                d.tok.fill_(ref[s])
                d.pos.fill_(a.ctx + s)
                d.step()
                top = int(d.logits.argmax())
                gap = float(d.logits[top] - d.logits[ref[s + 1]])
                if top == ref[s + 1]:
                    exact += 1
                elif gap <= TIE:
                    ties += 1
                    worst = max(worst, gap)
                else:
                    fails += 1
                    print(f"{WHO}: step {s}: PyTorch's token {top}, the megakernel's "
                          f"{ref[s + 1]}: logit gap {gap:.4f} > {TIE}", file=sys.stderr)
        out.update(check_exact=exact, check_ties=ties, check_fails=fails, check_worst_gap=worst)
        print(f"{WHO}: context {a.ctx}: teacher-forced on the megakernel's tokens, {exact}/"
              f"{a.steps} equal, {ties} near-ties (largest gap {worst:.4f} <= {TIE}), "
              f"{fails} failed")
        rc = 1 if fails else 0
    torch.cuda.synchronize()
    for mode in modes:
        def run_steps(fn):
            d.tok.fill_(1)
            d.pos.fill_(a.ctx)
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(a.steps):
                fn()
            e1.record()
            e1.synchronize()
            return e0.elapsed_time(e1) / a.steps
        with torch.no_grad():
            if mode == "eager":
                fn = d.step
            else:
                d.tok.fill_(1)
                d.pos.fill_(a.ctx)
                s = torch.cuda.Stream()
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    for _ in range(3):
                        d.step()
                torch.cuda.current_stream().wait_stream(s)
                g = torch.cuda.CUDAGraph()
                d.tok.fill_(1)
                d.pos.fill_(a.ctx)
                with torch.cuda.graph(g):
                    d.step()
                fn = g.replay
            run_steps(fn)  # warm-up
            ms = [run_steps(fn) for _ in range(a.runs)]
        toks = d.hist[:a.steps].tolist()
        agree = a.steps
        if ref:
            agree = next((s for s in range(a.steps) if toks[s] != ref[s + 1]), a.steps)
        out[mode] = {"ms": ms, "median": statistics.median(ms), "free_running_equal": agree}
        print(f"{WHO}: context {a.ctx}: PyTorch {mode}: {statistics.median(ms):.3f} ms/token "
              f"(median of {a.runs}; {min(ms):.3f}-{max(ms):.3f})" +
              (f"; free-running tokens equal to the megakernel's for {agree}/{a.steps} steps"
               if ref else ""))
    print(f"{WHO}: " + json.dumps(out))
    return rc


if __name__ == "__main__":
    sys.exit(main())
