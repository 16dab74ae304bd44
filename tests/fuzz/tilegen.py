#!/usr/bin/env python3
"""tilegen.py — seeded generator of tile-DSL programs for fuzzing `argus check`.

Two sources, both deterministic in the seed (same seed, same text):

- gen(seed): a grammar-aware generator of well-typed kernels (docs/tile-dsl.md):
  tensors with symbolic and const dims and their tag functions, assumptions,
  global views, shared tiles (some swizzled) and their views, register tiles,
  loops with constant and size-dependent bounds, compile-time and
  thread-dependent ifs, barriers, cp.async groups and waits, reset, ldmatrix,
  mma, data arithmetic, register tag functions, tag and integer assertions.
  It tracks a scope (names with their kind, shape, dtype and value bound) so
  that almost every program gets past the parser and the type checks and
  into the checker; indices are usually in bounds by construction and now and
  then not (a bounds obligation to refute).
- mutate(seed, sources): token-level edits of a program (the examples, or a
  generated one): swap the indices of a subscript, drop a barrier, wait,
  commit or reset, change an integer constant, swap an operator or a dtype,
  swap or duplicate or drop statements, rename a name; 1 to 3 edits.

program(seed, sources) picks one of the two from the seed. As a script:
  tilegen.py SEED [--mutate FILE...]   prints one program
"""
import random
import re
import sys

DTS = {"bf16": 2, "f16": 2, "f32": 4, "u8": 1, "u16": 2, "u32": 4, "u64": 8, "u128": 16,
       "i32": 4, "f64": 8}
VEC_OF = {4: "u32", 8: "u64", 16: "u128"}


class Tile:
    def __init__(self, space, shape, dt, swz=None, dims=None):
        self.space = space          # "global", "shared", "reg"
        self.shape = list(shape)    # int extents (global: symbolic dims in dims)
        self.dt = dt
        self.swz = swz
        self.dims = dims            # global: list of (text, bound or None)


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.out = []
        self.ind = 1
        self.ints = {}      # name -> bound (value in [0, bound)) or None
        self.consts = {}    # name -> compile-time value (loop vars, const params)
        self.tiles = {}     # name -> Tile
        self.data = {}      # name -> dtype (register scalars)
        self.nid = 0
        self.depth = 0
        self.symbolic_if = 0
        self.budget = 0

    # ------------------------------------------------------------ helpers
    def chance(self, p):
        return self.r.random() < p

    def fresh(self, stem):
        self.nid += 1
        return "%s%d" % (stem, self.nid)

    def emit(self, text):
        self.out.append("    " * self.ind + text)
        self.budget -= 1

    def int_atom(self):
        r = self.r
        pool = ["tid", "lane", "wid", "threadIdx.x", "blockIdx.x", "blockIdx.y"]
        pool += list(self.ints) + list(self.consts)
        k = r.random()
        if k < 0.3:
            return str(r.choice([0, 1, 2, 3, 4, 7, 8, 16, 31, 32, 64, 127, 128]))
        return r.choice(pool)

    def int_expr(self, d=0, minus=True):
        """An integer expression; minus=False leaves out '-' (an index must
        not fold to a negative constant, which is an error at once)."""
        r = self.r
        if d > 2 or self.chance(0.35):
            return self.int_atom()
        ops = ["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "//"]
        op = r.choice(ops if minus else ops[:1] + ops[2:])
        a = self.int_expr(d + 1, minus)
        if op in ("/", "%", "//"):
            b = str(r.choice([1, 2, 3, 4, 8, 16, 32, 64]))
        elif op in ("<<", ">>"):
            b = str(r.randint(0, 5))
        else:
            b = self.int_expr(d + 1, minus)
        e = "%s %s %s" % (a, op, b)
        return "(%s)" % e if d else e

    def const_expr(self, bound):
        """A compile-time value in [0, bound): a literal or a loop variable."""
        cands = [n for n, v in self.consts.items() if isinstance(v, int) and 0 < v <= bound
                 and n in self.loopvars]
        if cands and self.chance(0.6):
            v = self.r.choice(cands)
            b = self.consts[v]
            return v if b <= bound else "%s %% %d" % (v, bound)
        return str(self.r.randrange(bound))

    def idx(self, extent, oob=0.03):
        """An index expression, in [0, extent) unless the dice say otherwise."""
        r = self.r
        if isinstance(extent, str):  # a symbolic extent
            return self.r.choice(["0", "%s - 1" % extent,
                                  "(%s) %% %s" % (self.int_expr(minus=False), extent)])
        if self.chance(oob):
            return r.choice(["tid + %d" % extent, "lane + %d" % (extent - 1), "tid * %d" % extent])
        k = r.random()
        if k < 0.25:
            return str(r.randrange(extent))
        if k < 0.45:
            fit = [n for n, b in self.ints.items() if b is not None and b <= extent]
            fit += [n for n in self.loopvars if self.consts.get(n, 1 << 30) <= extent]
            if fit:
                return r.choice(fit)
        if k < 0.6 and extent in (1, 2, 4, 8, 16, 32, 64, 128, 256) and self.threads % extent == 0:
            return r.choice(["tid %% %d" % extent, "lane %% %d" % extent if extent <= 32 else
                             "tid %% %d" % extent, "tid / %d" % (self.threads // extent)])
        return "(%s) %% %d" % (self.int_expr(1, minus=False), extent)

    def reg_idx(self, extent):
        return self.const_expr(extent)

    def elem(self, name, reg=False, oob=0.03):
        t = self.tiles[name]
        if t.space == "global":
            return "%s[%s]" % (name, ", ".join(self.gidx(t, i) for i in range(len(t.dims))))
        if reg or t.space == "reg":
            return "%s[%s]" % (name, ", ".join(self.reg_idx(e) for e in t.shape))
        return "%s[%s]" % (name, ", ".join(self.idx(e, oob) for e in t.shape))

    def gidx(self, t, i):
        text, bound = t.dims[i]
        if bound is not None:
            return self.idx(bound)
        if text in self.gridded and self.chance(0.7):
            blk, per = self.gridded[text]
            return "%s * %d + %s" % (blk, per, self.idx(per, oob=0.01))
        return self.idx(text)

    def tiles_of(self, space, sizes=None):
        return [n for n, t in self.tiles.items() if t.space == space and
                (sizes is None or DTS[t.dt] in sizes)]

    # ------------------------------------------------------------ program
    def program(self):
        r = self.r
        self.threads = r.choice([32, 64, 128, 128, 256])
        lines = []
        lines.append("BM = 64")
        K = r.choice([32, 64, 128])
        lines.append("")
        if self.chance(0.2) and self.threads >= 64:
            lines.append("@threads(32, %d)" % (self.threads // 32))
        else:
            lines.append("@threads(%d)" % self.threads)
        self.gridded = {}
        if self.chance(0.8):
            lines.append(r.choice(["@grid(M / 64, N / 64)", "@grid(M / BM, N / 64, 2)"]))
            self.gridded = {"M": ("blockIdx.x", 64), "N": ("blockIdx.y", 64)}
        adt = r.choice(["bf16", "bf16", "f16", "u32", "f32"])
        params = ["A: Tensor(M, K, %s)" % adt, "B: Tensor(N, K, %s)" % adt,
                  "C: Tensor(M, N, f32)"]
        if self.chance(0.3):
            params.append("D: Tensor(N, 8, K, u8)")
        params.append("K: const = %d" % K)
        if self.chance(0.3):
            params.append("S: const = %d" % r.choice([1, 2, 3, 4]))
            self.consts["S"] = None
        lines.append("def k%d(%s):" % (r.randrange(100), ", ".join(params)))
        self.loopvars = []
        self.consts["K"] = None
        self.tiles["A"] = Tile("global", [], adt, dims=[("M", None), ("K", K)])
        self.tiles["B"] = Tile("global", [], adt, dims=[("N", None), ("K", K)])
        self.tiles["C"] = Tile("global", [], "f32", dims=[("M", None), ("N", None)])
        if any(p.startswith("D:") for p in params):
            self.tiles["D"] = Tile("global", [], "u8", dims=[("N", None), ("", 8), ("K", K)])
        self.K = K
        self.out = []
        self.prologue(adt, K)
        self.budget = r.randint(15, 60)
        while self.budget > 0:
            self.stmt()
        if self.chance(0.2):
            self.out.append("")
            self.out.append("    pass")
        text = "\n".join(lines + self.out) + "\n"
        if self.chance(0.1):
            other = Gen(r.randrange(1 << 30)).program()
            text += "\n" + "\n".join(l for l in other.split("\n") if l != "BM = 64")
        return text

    def prologue(self, adt, K):
        r = self.r
        for a in ["assume M % 64 == 0", "assume N % 64 == 0"]:
            self.emit(a)
        if self.chance(0.2):
            self.emit(r.choice(["assume M <= 4096", "assume N == M", "assume M >= 128",
                                "assume M < 64", "assume 1 == 2", "assume M * N <= 65536"]))
        if self.chance(0.85):
            self.emit("T_A = A[m, k] -> (m, k)")
        if self.chance(0.7):
            self.emit(r.choice(["T_B = B[n, k] -> (n, k)", "T_B = B[n, k] -> (n, k % 8)",
                                "T_B = B[n, k] -> (n / 2, k, 1)", "T_B = B[n, k] -> top",
                                "T_B = B[n, k] -> bot"]))
        self.emit("tid = threadIdx.x")
        self.ints["tid"] = self.threads
        self.emit("lane = tid % 32")
        self.ints["lane"] = 32
        self.emit("wid = tid / 32")
        self.ints["wid"] = max(1, self.threads // 32)
        # global views: 16-byte and 4-byte chunks of A and B
        es = DTS[adt]
        for src in ("A", "B"):
            if self.chance(0.8):
                per = 16 // es
                g = "g" + src
                rows = "M" if src == "A" else "N"
                if self.chance(0.7):
                    self.emit("%s = %s.view((%s / 64, 64, %d), u128)" % (g, src, rows, K // per))
                    self.tiles[g] = Tile("global", [], "u128",
                                         dims=[(rows + "/64", None), ("", 64), ("", K // per)])
                    self.gridded[rows + "/64"] = (("blockIdx.x" if rows == "M" else "blockIdx.y"), 1)
                else:
                    self.emit("%s = %s.view((%s, %d), u128)" % (g, src, rows, K // per))
                    self.tiles[g] = Tile("global", [], "u128", dims=[(rows, None), ("", K // per)])
        # a shared staging buffer, maybe swizzled
        rows = self.r.choice([32, 64])
        chunks = K * es // 16 if K * es // 16 <= 8 else 8
        swz = None
        if self.chance(0.5):
            swz = r.choice(["swizzle(2, 0, 3)", "swizzle(1, 0, 3)", "swizzle(3, 0, 3)",
                            "swizzle(2, 0, 2)"])
        st = r.choice([1, 2])
        text = "sA = make_shared((%d, %d, %d), u128%s)" % (st, rows, chunks,
                                                          ", " + swz if swz else "")
        self.emit(text)
        self.tiles["sA"] = Tile("shared", [st, rows, chunks], "u128", swz)
        if self.chance(0.5):
            self.emit("sAh = sA.view((%d, %d, %d), bf16)" % (st, rows, chunks * 8))
            self.tiles["sAh"] = Tile("shared", [st, rows, chunks * 8], "bf16", swz)
        if self.chance(0.4):
            self.emit("sF = make_shared((%d,), f32)" % self.threads)
            self.tiles["sF"] = Tile("shared", [self.threads], "f32")
        if self.chance(0.3):
            self.emit("sm = make_shared((4096,), u8)")
            self.tiles["sm"] = Tile("shared", [4096], "u8")
            self.emit("sW = sm[0:2048].view((64, 32), u8)")
            self.tiles["sW"] = Tile("shared", [64, 32], "u8")
            if self.chance(0.5):
                self.emit("sX = sm[2048:4096].view((16, 8), u128, swizzle(2, 0, 3))")
                self.tiles["sX"] = Tile("shared", [16, 8], "u128", "swizzle(2, 0, 3)")
        if self.chance(0.3):
            shape, stride, n = r.choice([("(8, 16)", "(16, 1)", [8, 16]), ("(8, 16)", "(1, 8)", [8, 16]),
                                         ("((2, 4), 8)", "((8, 1), 16)", [8, 8]),
                                         ("(4, 4)", "(8, 1)", [4, 4]), ("(16,)", "(2,)", [16])])
            self.emit("sL = make_shared(layout(%s, %s), %s)" % (shape, stride, r.choice(["f32", "u32", "u64"])))
            self.tiles["sL"] = Tile("shared", n, "f32")
            self.tiles["sL"].dt = self.out[-1].rsplit(", ", 1)[1].rstrip(")")
        self.emit("acc = make_local((4,), f32)")
        self.tiles["acc"] = Tile("reg", [4], "f32")
        if self.chance(0.8):
            self.emit("fill(acc, 0)")

    # ---------------------------------------------------------- statements
    def stmt(self):
        r = self.r
        kinds = [
            (6, self.s_int), (8, self.s_cp_async), (4, self.s_commit), (4, self.s_wait),
            (5, self.s_sync), (6, self.s_for), (4, self.s_if), (5, self.s_load_store),
            (5, self.s_assert), (3, self.s_ldmatrix), (2, self.s_mma), (2, self.s_reset),
            (3, self.s_data), (1, self.s_tagfn), (2, self.s_global_store), (1, self.s_view),
            (1, self.s_local), (3, self.s_misc), (1, self.s_slice),
        ]
        if self.depth > 2:
            kinds = [k for k in kinds if k[1] not in (self.s_for, self.s_if)]
        if self.symbolic_if:
            kinds = [k for k in kinds if k[1] not in
                     (self.s_commit, self.s_wait, self.s_sync, self.s_ldmatrix, self.s_mma,
                      self.s_reset, self.s_local, self.s_view, self.s_slice)]
        tot = sum(w for w, _ in kinds)
        x = r.uniform(0, tot)
        for w, f in kinds:
            x -= w
            if x <= 0:
                f()
                return
        kinds[-1][1]()

    def s_int(self):
        n = self.fresh(self.r.choice(["r", "c", "ii", "xx"]))
        if self.chance(0.4):
            b = self.r.choice([2, 4, 8, 16, 32, 64])
            self.emit("%s = %s" % (n, self.idx(b, oob=0)))
            self.ints[n] = b if not self.symbolic_if else None
        else:
            self.emit("%s = %s" % (n, self.int_expr()))
            self.ints[n] = None
        if self.symbolic_if:
            self.if_locals.append(n)

    def s_cp_async(self):
        dsts = self.tiles_of("shared", {4, 8, 16})
        srcs = self.tiles_of("global", {4, 8, 16})
        if not dsts or not srcs:
            return self.s_int()
        d = self.r.choice(dsts)
        same = [s for s in srcs if DTS[self.tiles[s].dt] == DTS[self.tiles[d].dt]]
        if not same:
            return self.s_int()
        s = self.r.choice(same)
        self.emit("cp_async(%s, %s)" % (self.elem(d, oob=0), self.elem(s)))

    def s_commit(self):
        self.emit("cp_async_commit()")

    def s_wait(self):
        self.emit("cp_async_wait(%d)" % self.r.choice([0, 0, 1, 1, 2]))

    def s_sync(self):
        self.emit("syncthreads()")

    def s_reset(self):
        sh = self.tiles_of("shared")
        if not sh:
            return self.s_sync()
        s = self.r.choice(sh)
        t = self.tiles[s]
        if len(t.shape) > 1 and self.chance(0.6):
            self.emit("reset(%s[%s%s])" % (s, self.reg_idx(t.shape[0]), ", :" * (len(t.shape) - 1)))
        else:
            self.emit("reset(%s)" % s)

    def s_for(self):
        r = self.r
        v = self.fresh(self.r.choice(["kt", "it", "j", "e"]))
        k = r.random()
        if k < 0.5:
            n = r.randint(0, 4)
            head, trips = "range(%d)" % n, n
        elif k < 0.7:
            head, trips = "range(K / %d)" % r.choice([32, 64, 16]), None
        elif k < 0.8 and "S" in self.consts:
            head, trips = "range(S)", None
        else:
            a, b = r.randint(0, 2), r.randint(1, 5)
            s = r.choice([1, 1, 2, 3])
            head, trips = "range(%d, %d, %d)" % (a, b, s), b
        self.emit("for %s in %s:" % (v, head))
        bound = trips if trips else self.K // 16
        self.enter_block(v, bound)

    def enter_block(self, loopvar, bound):
        saved = (dict(self.ints), dict(self.tiles), dict(self.data), dict(self.consts),
                 list(self.loopvars))
        if loopvar:
            self.consts[loopvar] = max(bound, 1)
            self.loopvars.append(loopvar)
        self.ind += 1
        self.depth += 1
        n = self.r.randint(1, 6)
        b0 = self.budget
        for _ in range(n):
            self.stmt()
        if self.budget == b0:
            self.emit("pass")
        self.ind -= 1
        self.depth -= 1
        (self.ints, self.tiles, self.data, self.consts, self.loopvars) = saved

    def s_if(self):
        r = self.r
        if self.loopvars and self.chance(0.4):
            v = r.choice(self.loopvars)
            cond = r.choice(["%s == 0" % v, "%s + 1 < K / 32" % v, "%s %% 2 == 1" % v,
                             "%s >= 1" % v])
            self.emit("if %s:" % cond)
            self.enter_block(None, 0)
            if self.chance(0.4):
                self.emit("else:")
                self.enter_block(None, 0)
            return
        cond = r.choice(["tid < %d" % (self.threads // 2), "wid % 2 == 0", "lane < 16",
                         "blockIdx.x + 1 < M / 64", "tid == 0", "%s < 8" % self.int_expr(),
                         "tid < 64 and lane % 2 == 0", "not (tid >= 32)", "M > 64"])
        self.emit("if %s:" % cond)
        self.symbolic_if += 1
        saved_locals = getattr(self, "if_locals", [])
        self.if_locals = []
        self.enter_block(None, 0)
        if self.chance(0.4):
            self.emit(r.choice(["else:", "elif tid < 96:"]))
            self.enter_block(None, 0)
        self.if_locals = saved_locals
        self.symbolic_if -= 1

    def s_load_store(self):
        """x = src[...]; dst[...] = x with matching element sizes."""
        r = self.r
        srcs = self.tiles_of("global") + self.tiles_of("shared")
        s = r.choice(srcs)
        x = self.fresh("v")
        self.emit("%s = %s" % (x, self.elem(s)))
        self.data[x] = self.tiles[s].dt
        size = DTS[self.tiles[s].dt]
        dsts = [n for n in self.tiles_of("shared") if DTS[self.tiles[n].dt] == size]
        if dsts and self.chance(0.8):
            self.emit("%s = %s" % (self.elem(r.choice(dsts), oob=0), x))
        if self.chance(0.4):
            self.emit("assert tag(%s) %s" % (x, r.choice(["!= top", "== bot", "!= bot",
                                                          "== tag(%s)" % self.elem(s)])))

    def s_global_store(self):
        if self.data and self.chance(0.7):
            x = self.r.choice(list(self.data))
            if DTS[self.data[x]] == 4:
                self.emit("%s = %s" % (self.elem("C"), x))
                return
            self.emit("%s = cvt(%s, f32)" % (self.elem("C"), x))
            return
        self.emit("%s = %s" % (self.elem("C"), self.elem("acc", reg=True)))

    def s_data(self):
        r = self.r
        xs = [n for n, d in self.data.items() if DTS[d] <= 8 and d[0] in "bf"]
        if not xs:
            return self.s_load_store()
        x = r.choice(xs)
        y = self.fresh("y")
        same = [n for n in xs if self.data[n] == self.data[x]]
        e = r.choice(["%s * 0.5" % x, "exp2(%s)" % x, "max(%s, %s)" % (x, r.choice(same)),
                      "%s + %s" % (x, r.choice(same)), "-%s" % x,
                      "%s if tid < 64 else 0" % x, "sqrt(%s) - 1.0" % x])
        self.emit("%s = %s" % (y, e))
        self.data[y] = self.data[x]
        if self.chance(0.3):
            z = self.fresh("z")
            self.emit("%s = cvt(%s, %s)" % (z, y, r.choice(["bf16", "f32", "f16"])))
            self.data[z] = "bf16"  # only its size matters below; cvt keeps the check honest
            self.data.pop(z)

    def s_assert(self):
        r = self.r
        sh = self.tiles_of("shared")
        k = r.random()
        if k < 0.4 and sh:
            s = r.choice(sh)
            self.emit("assert tag(%s) != top" % self.elem(s))
        elif k < 0.55 and sh:
            s = r.choice(sh)
            self.emit("assert tag(%s) == (%s, %s)" % (self.elem(s), self.int_expr(), self.int_expr()))
        elif k < 0.7:
            self.emit("assert %s < %d" % (self.int_expr(), r.choice([1, 32, 64, 128, 1 << 20])))
        elif k < 0.8:
            self.emit("assert tag(%s) == bot" % self.elem("acc", reg=True))
        elif k < 0.9 and self.data:
            a, b = r.choice(list(self.data)), r.choice(list(self.data))
            self.emit("assert tag(%s) == tag(%s)%s" % (a, b, ", \"same data\"" if self.chance(0.3) else ""))
        else:
            self.emit("assert tag(%s)[0] == %s" % (self.elem("A"), self.int_expr()))

    def s_ldmatrix(self):
        r = self.r
        src = [n for n in self.tiles_of("shared", {16})]
        if not src:
            return self.s_sync()
        s = r.choice(src)
        num = r.choice([1, 2, 4])
        trans = "_trans" if self.chance(0.3) else ""
        d = self.fresh("ra")
        self.emit("%s = make_local((%d,), u32)" % (d, num))
        self.tiles[d] = Tile("reg", [num], "u32")
        self.emit("ldmatrix_x%d%s(%s, %s)" % (num, trans, d, self.elem(s)))
        if num >= 2 and self.chance(0.7):
            f = self.fresh("fa")
            self.emit("%s = %s.view((%d,), bf16)" % (f, d, 2 * num))
            self.tiles[f] = Tile("reg", [2 * num], "bf16")
            e = self.reg_idx(2 * num)
            if self.chance(0.5):
                self.emit("m, k = mma_m16n8k16.a(lane, %s)" % (self.reg_idx(8)))
                self.ints["m"], self.ints["k"] = 16, 16
                self.emit("assert tag(%s[%s]) == (%s, %s)" % (f, e, r.choice(["m", "blockIdx.x * 64 + m", "lane / 4"]),
                                                             r.choice(["k", "k + 8", "lane % 4 * 2"])))
            else:
                self.emit("assert tag(%s[%s]) != top" % (f, e))

    def s_mma(self):
        a, b = self.fresh("ra"), self.fresh("rb")
        self.emit("%s = make_local((4,), u32)" % a)
        self.emit("%s = make_local((2,), u32)" % b)
        src = self.tiles_of("shared", {16})
        if src and self.chance(0.8):
            s = self.r.choice(src)
            self.emit("ldmatrix_x4(%s, %s)" % (a, self.elem(s)))
            self.emit("ldmatrix_x2%s(%s, %s)" % ("_trans" if self.chance(0.3) else "", b, self.elem(s)))
        fa, fb = self.fresh("fa"), self.fresh("fb")
        self.emit("%s = %s.view((8,), bf16)" % (fa, a))
        self.emit("%s = %s.view((4,), bf16)" % (fb, b))
        self.emit("mma_m16n8k16(acc, %s, %s, acc)" % (fa, fb))
        self.tiles[fa] = Tile("reg", [8], "bf16")
        self.tiles[fb] = Tile("reg", [4], "bf16")
        if self.chance(0.5):
            self.emit("m, n = mma_m16n8k16.c(lane, %s)" % self.reg_idx(4))
            self.ints["m"], self.ints["n"] = 16, 8
            self.emit("assert tag(acc[%s]) %s" % (self.reg_idx(4), self.r.choice(
                ["== bot", "!= top", "== (m, n)"])))

    def s_tagfn(self):
        regs = [n for n, t in self.tiles.items() if t.space == "reg" and len(t.shape) == 1]
        if not regs:
            return self.s_int()
        t = self.r.choice(regs)
        n = self.fresh("T_R")
        self.emit("%s = %s[v] -> %s" % (n, t, self.r.choice(
            ["(v, lane)", "(lane / 4, v * 2, blockIdx.x)", "top", "bot", "(v,)"])))

    def s_view(self):
        sh = [n for n, t in self.tiles.items() if t.space == "shared" and t.dt == "u128"
              and len(t.shape) == 3]
        if not sh:
            return self.s_int()
        s = self.r.choice(sh)
        t = self.tiles[s]
        n = self.fresh("sv")
        dt = self.r.choice(["u32", "bf16", "u64"])
        per = 16 // DTS[dt]
        self.emit("%s = %s.view((%d, %d, %d), %s)" % (n, s, t.shape[0], t.shape[1], t.shape[2] * per, dt))
        self.tiles[n] = Tile("shared", [t.shape[0], t.shape[1], t.shape[2] * per], dt, t.swz)

    def s_local(self):
        n = self.fresh("rl")
        shape = self.r.choice([(2, 4), (8,), (2, 2, 2)])
        dt = self.r.choice(["f32", "u32", "bf16"])
        self.emit("%s = make_local((%s,), %s)" % (n, ", ".join(map(str, shape)), dt))
        self.tiles[n] = Tile("reg", list(shape), dt)
        # an integer tile takes integer constants only (1.5 is not u32 data)
        vals = ["0", "1.5"] if dt[0] in "bf" else ["0", "1"]
        self.emit("fill(%s, %s)" % (n, self.r.choice(vals)))
        x = self.fresh("q")
        self.emit("%s = %s" % (x, self.elem(n)))
        self.data[x] = dt
        if self.chance(0.5):
            self.emit("%s = %s(%s)" % (self.fresh("q"), self.r.choice(["reduce_max", "reduce_sum", "reduce_min"]), n))


    def s_misc(self):
        r = self.r
        k = r.random()
        a, b = self.fresh("p"), self.fresh("q")
        if k < 0.2:
            self.emit("%s, %s = %s, %s" % (a, b, self.int_expr(), self.idx(8, oob=0)))
            self.ints[a], self.ints[b] = None, None if self.symbolic_if else 8
        elif k < 0.35:
            self.emit("%s = %s" % (a, self.int_expr()))
            self.emit("%s %s %s" % (a, r.choice(["+=", "-=", "*="]), self.int_atom()))
            self.ints[a] = None
        elif k < 0.5:
            self.emit("assert %s" % r.choice([
                "0 <= tid < %d" % self.threads, "not (tid >= %d)" % self.threads, "True",
                "lane < 32 and wid < %d" % max(1, self.threads // 32), "tid < 64 or tid >= 64",
                "%s < %s" % (self.int_expr(), self.int_expr()), "blockIdx.x < M / 64",
                "threadIdx.y == 0", "M >= 64"]))
        elif k < 0.65:
            self.emit("%s = %s if %s else %s" % (a, self.int_expr(), r.choice(
                ["K > 32", "True", "BM == 64", "K // 2 < 32"]), self.int_expr()))
            self.ints[a] = None
        elif k < 0.8 and self.data:
            x = r.choice(list(self.data))
            self.emit("assert tag(%s)[%d] %s tag(%s)[%d]" % (x, r.randint(0, 1), r.choice(["==", "!="]),
                                                         r.choice(list(self.data)), r.randint(0, 1)))
        elif k < 0.9:
            self.emit("%s = %s" % (a, r.choice(["BM", "K // 2", "max(3, 8)", "min(K, 64)",
                                                "threadIdx.y", "blockIdx.z", "K * 2 >> 1"])))
            self.ints[a] = None
        elif self.ind > 1:  # an assume is a launch precondition: at the top level only
            self.emit("pass")
        else:
            self.emit(r.choice(["pass", "assume K >= 16", "assume M <= 1 << 20",
                                "assume N % 128 == 0 or N == 64"]))

    def s_slice(self):
        sh = [n for n, t in self.tiles.items() if t.space == "shared" and len(t.shape) == 3]
        if not sh:
            return self.s_int()
        s = self.r.choice(sh)
        t = self.tiles[s]
        n = self.fresh("sl")
        h = max(1, t.shape[1] // 2)
        lo = self.r.choice([0, h])
        self.emit("%s = %s[%s, %d:%d, :]" % (n, s, self.reg_idx(t.shape[0]), lo, lo + h))
        self.tiles[n] = Tile("shared", [h, t.shape[2]], t.dt, t.swz)
        if self.chance(0.4):
            self.emit("reset(%s)" % n)


def gen(seed):
    return Gen(seed).program()


# ---------------------------------------------------------------- mutation
TOKEN = re.compile(r"\s+|#[^\n]*|0x[0-9a-fA-F]+|\d+\.\d*|\d+|[A-Za-z_]\w*|//|<<|>>|==|!=|<=|>=|->|\+=|-=|\*=|.", re.S)
OPS = ["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "//"]
CMPS = ["==", "!=", "<", "<=", ">", ">="]
SYNC = re.compile(r"^\s*(syncthreads|cp_async_wait|cp_async_commit|reset)\(")


def _lines_mut(r, src):
    lines = src.split("\n")
    k = r.random()
    body = [i for i, l in enumerate(lines) if l.startswith("    ") and l.strip()
            and not l.strip().startswith("#")]
    if not body:
        return src
    if k < 0.35:
        syn = [i for i in body if SYNC.match(lines[i])]
        i = r.choice(syn or body)
        ind = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
        lines[i] = ind + "pass"
    elif k < 0.55:
        i = r.choice(body)
        j = i + 1
        if j < len(lines) and lines[j].startswith("    "):
            li = len(lines[i]) - len(lines[i].lstrip())
            lj = len(lines[j]) - len(lines[j].lstrip())
            if li == lj and not lines[i].rstrip().endswith(":") and not lines[j].rstrip().endswith(":"):
                lines[i], lines[j] = lines[j], lines[i]
    elif k < 0.75:
        i = r.choice(body)
        if not lines[i].rstrip().endswith(":"):
            lines.insert(r.choice(body), lines[i])
    else:
        i = r.choice(body)
        if not lines[i].rstrip().endswith(":"):
            del lines[i]
    return "\n".join(lines)


def _swap_items(r, toks):
    """Swaps two top-level items of a subscript or an argument list."""
    opens = [i for i, t in enumerate(toks) if t in "[("]
    if not opens:
        return
    i = r.choice(opens)
    depth, items, start = 0, [], i + 1
    for j in range(i + 1, len(toks)):
        t = toks[j]
        if t in "[(":
            depth += 1
        elif t in "])":
            if depth == 0:
                items.append((start, j))
                break
            depth -= 1
        elif t == "," and depth == 0:
            items.append((start, j))
            start = j + 1
    else:
        return
    items = [(a, b) for a, b in items if b > a]
    if len(items) < 2:
        return
    x, y = r.sample(range(len(items)), 2)
    (a0, a1), (b0, b1) = sorted([items[x], items[y]])
    toks[a0:b1] = toks[b0:b1] + toks[a1:b0] + toks[a0:a1]


def _tok_mut(r, src):
    """One token-level edit, weighted towards the ones that keep a program
    well-typed (so the checker, not the type checks, sees it)."""
    toks = TOKEN.findall(src)
    k = r.random()
    ints = [i for i, t in enumerate(toks) if t.isdigit()]
    if k < 0.4 and ints:
        i = r.choice(ints)
        v = int(toks[i])
        toks[i] = str(r.choice([v + 1, max(v - 1, 0), v + 1, max(v - 1, 0), 0, 1, v * 2, v // 2,
                                1 << r.randint(5, 40), v + 32, 3, 63, 100000000]))
    elif k < 0.7:
        _swap_items(r, toks)
    elif k < 0.82:
        ops = [i for i, t in enumerate(toks) if t in OPS or t in CMPS]
        if ops:
            i = r.choice(ops)
            toks[i] = r.choice(OPS if toks[i] in OPS else CMPS)
    elif k < 0.88:
        dts = [i for i, t in enumerate(toks) if t in DTS]
        if dts:
            toks[r.choice(dts)] = r.choice(list(DTS) + ["u256", "i8"])
    else:
        names = [i for i, t in enumerate(toks) if re.match(r"[A-Za-z_]\w*$", t)]
        if names:
            i, j = r.choice(names), r.choice(names)
            toks[i] = toks[j]
    return "".join(toks)


def mutate(seed, src):
    r = random.Random(seed)
    for _ in range(r.choice([1, 1, 1, 2, 2, 3])):
        src = _lines_mut(r, src) if r.random() < 0.35 else _tok_mut(r, src)
    return src


def program(seed, sources):
    """The fuzz input of a seed: 2 in 3 generated, 1 in 3 a mutated source
    (an example, or half of the time a generated program)."""
    r = random.Random(seed * 7919 + 17)
    if sources and r.random() < 1 / 3:
        if r.random() < 0.5:
            base = sources[r.randrange(len(sources))]
        else:
            base = gen(seed ^ 0x5bd1e995)
        return "mutate", mutate(seed, base)
    return "gen", gen(seed)


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    seed = int(argv[1])
    if len(argv) > 2 and argv[2] == "--mutate":
        srcs = [open(f).read() for f in argv[3:]]
        sys.stdout.write(mutate(seed, srcs[seed % len(srcs)]))
    else:
        sys.stdout.write(gen(seed))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
