#!/usr/bin/env python3
"""overlap_pgo.py - the PGO client of the all-gather + GEMM pipeline
(examples/overlap, docs/comm.md): profile with Argus, fit, rank, validate.

  1. profile: for a few (S, R) settings, run `argus observe SPEC --region
     mainloop --signals duration,comm --json` on a copy of the spec whose
     harness arguments carry S and R; keep each report (the JSON argus prints).
  2. fit, from the reports:
       t_comm(bytes, R) = a_R + bytes / b_R   least squares over the comm
         signal's all-gather groups (mean duration per declared size) of the
         runs with R communication SMs (one size: a_R = 0); an R that was not
         profiled takes a and b interpolated linearly in R (clamped);
       t_comp(rows, R) = waves(rows, R) x (T_main + T_epilogue)   the duration
         signal's mean mainloop and epilogue per tile (ns), waves =
         ceil(tiles / (SMs - R)), tiles = rows/64 x N/64.
  3. model: a chunk is M/S gathered rows (bytes = M/S x K x 4); the compute
     waits on the communication every P chunks, so a stage is P chunks:
       T(S, R, P) = P tc + (ceil(S/P) - 1) max(P tc, P tp) + P tp
     with tc = t_comm(chunk), tp = t_comp(chunk); for P = 1 this is the
     paper's T = t_comm + (S - 1) max(t_comm, t_comp) + t_comp.
  4. rank the (S, R, P) grid by T, run the top ones (the harness itself,
     --mode pipeline) and print predicted against measured.

Subcommands: `profile` (step 1), `rank` (steps 2-3 on saved reports),
`validate` (steps 2-4), `all` (1-4). Exit 0 ok, 1 failure, 2 usage.
"""
import argparse
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile

TILE = 64


class PgoError(Exception):
    """Bad input: what, where, what to do."""


# ----------------------------------------------------------------- reports

def load_report(path):
    try:
        with open(path) as f:
            rep = json.load(f)
    except OSError as e:
        raise PgoError(f"{path}: cannot read the report: {e.strerror}")
    except json.JSONDecodeError as e:
        raise PgoError(f"{path}:{e.lineno}:{e.colno}: not JSON ({e.msg}): pass the output of "
                       "`argus --json observe ...`")
    if not isinstance(rep, dict) or not isinstance(rep.get("values"), list):
        raise PgoError(f"{path}: not an argus report (no 'values' list)")
    return rep


def comm_points(rep, path):
    """[(bytes, mean_ns, sms)] of the report's all-gather groups with a
    declared size."""
    groups = {}
    for v in rep["values"]:
        reg = v.get("region") or ""
        if v.get("signal") != "comm" or not reg.startswith("(comm all_gather "):
            continue
        groups.setdefault(reg, {})[v.get("stat")] = v.get("value")
    pts = []
    for reg, g in sorted(groups.items()):
        if g.get("bytes") is None or g.get("mean") is None:
            continue
        if not isinstance(g["bytes"], (int, float)) or g["bytes"] <= 0 or g["mean"] <= 0:
            raise PgoError(f"{path}: {reg}: bytes {g['bytes']!r} and mean {g['mean']!r} must be "
                           "positive")
        pts.append((int(g["bytes"]), float(g["mean"]), int(g.get("sms") or 0)))
    if not pts:
        raise PgoError(f"{path}: no all-gather with a declared size in the comm signal: run "
                       "`argus observe` with --signals comm on a harness that declares its "
                       "chunks (NVTX 'argus.comm op=all_gather bytes=N ranks=R', docs/comm.md)")
    return pts


def tile_ns(rep, path):
    """T_main + T_epilogue: the duration signal's mean per tile (ns)."""
    got = {}
    for v in rep["values"]:
        reg = v.get("region") or ""
        if v.get("signal") == "duration" and v.get("stat") == "mean":
            for part in ("mainloop", "epilogue"):
                if reg.endswith("/" + part) or reg == part:
                    got[part] = v.get("value")
    missing = [p for p in ("mainloop", "epilogue") if not isinstance(got.get(p), (int, float))]
    if missing:
        raise PgoError(f"{path}: no mean duration of region {', '.join(missing)}: observe "
                       "--region mainloop --signals duration,comm (the regions of "
                       "overlap_gemm.cu)")
    return float(got["mainloop"]) + float(got["epilogue"])


# --------------------------------------------------------------------- fit

def fit_line(pts):
    """Least squares t = a + x / b over [(x, t)]; one distinct x: a = 0.
    Returns (a, b) with b in bytes per ns (GB/s)."""
    xs = sorted({x for x, _ in pts})
    if len(xs) == 1:
        x = xs[0]
        t = sum(tt for xx, tt in pts if xx == x) / sum(1 for xx, _ in pts if xx == x)
        return 0.0, x / t
    n = len(pts)
    mx = sum(x for x, _ in pts) / n
    mt = sum(t for _, t in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    sxt = sum((x - mx) * (t - mt) for x, t in pts)
    slope = sxt / sxx
    if slope <= 0:
        raise PgoError(f"the all-gather times do not grow with the size ({pts}): the fit needs "
                       "sizes far enough apart to be above the noise")
    return mt - slope * mx, 1.0 / slope


class Model:
    """t_comm(bytes, R), t_comp(rows, R) and T(S, R, P) for one problem."""

    def __init__(self, comm, tile, m, n, k, sms, ranks):
        # comm: {R: (a, b)}; tile: {R: ns per tile}
        if not comm or not tile:
            raise PgoError("nothing to fit: no profiled run")
        if sms <= 0 or m <= 0 or n <= 0 or k <= 0 or ranks < 1:
            raise PgoError(f"the problem (m {m}, n {n}, k {k}, sms {sms}, ranks {ranks}) must "
                           "be positive")
        self.comm, self.tile = comm, tile
        self.m, self.n, self.k, self.sms, self.ranks = m, n, k, sms, ranks

    @staticmethod
    def _interp(table, r):
        rs = sorted(table)
        if r <= rs[0]:
            return table[rs[0]]
        if r >= rs[-1]:
            return table[rs[-1]]
        for lo, hi in zip(rs, rs[1:]):
            if lo <= r <= hi:
                w = (r - lo) / (hi - lo)
                a, b = table[lo], table[hi]
                if isinstance(a, tuple):
                    return tuple(x + w * (y - x) for x, y in zip(a, b))
                return a + w * (b - a)
        raise AssertionError("unreachable")

    def chunk(self, s):
        rows = self.m // s
        return rows, rows * self.k * 4

    def t_comm(self, nbytes, r):
        a, b = self._interp(self.comm, r)
        return a + nbytes / b

    def t_comp(self, rows, r):
        ctas = self.sms - r
        if ctas < 1:
            return math.inf
        tiles = (rows // TILE) * (self.n // TILE)
        return math.ceil(tiles / ctas) * self._interp(self.tile, r)

    def total(self, s, r, p):
        rows, nbytes = self.chunk(s)
        tc, tp = self.t_comm(nbytes, r), self.t_comp(rows, r)
        g = math.ceil(s / p)
        return p * tc + (g - 1) * max(p * tc, p * tp) + p * tp

    def valid(self, s, r, p):
        return (p <= s and r < self.sms and self.m % (self.ranks * s * TILE) == 0)

    def rank(self, grid_s, grid_r, grid_p):
        c = [(self.total(s, r, p), s, r, p) for s, r, p in itertools.product(grid_s, grid_r, grid_p)
             if self.valid(s, r, p)]
        if not c:
            raise PgoError("no (S, R, P) of the grid is valid: S must divide M / (ranks x 64), "
                           "P <= S, R < SMs")
        return sorted(c)


def fit(reports, m, n, k, sms, ranks):
    """reports: [(R, path)] -> Model."""
    comm_pts, tiles = {}, {}
    for r, path in reports:
        rep = load_report(path)
        for nbytes, mean, _ in comm_points(rep, path):
            comm_pts.setdefault(r, []).append((nbytes, mean))
        tiles.setdefault(r, []).append(tile_ns(rep, path))
    comm = {r: fit_line(p) for r, p in comm_pts.items()}
    tile = {r: sum(v) / len(v) for r, v in tiles.items()}
    return Model(comm, tile, m, n, k, sms, ranks)


# ------------------------------------------------------------------- runs

def spec_args(spec):
    run = spec.get("run")
    if not isinstance(run, list) or not run:
        raise PgoError("the spec has no 'run' argv")
    return run


def with_args(argv, **kw):
    """argv with --chunks/--comm-sms/--barrier/... set."""
    names = {"S": "--chunks", "R": "--comm-sms", "P": "--barrier", "mode": "--mode"}
    out = list(argv)
    for key, val in kw.items():
        flag = names[key]
        if flag in out:
            out[out.index(flag) + 1] = str(val)
        else:
            out += [flag, str(val)]
    return out


def arg_of(argv, flag, default):
    return int(argv[argv.index(flag) + 1]) if flag in argv else default


def profile(args, spec_path, out_dir):
    spec = json.load(open(spec_path))
    reports = []
    for s, r in itertools.product(args.profile_s, args.profile_r):
        sp = dict(spec)
        sp["run"] = with_args(spec_args(spec), S=s, R=r, P=1)
        base = os.path.dirname(os.path.abspath(spec_path))
        mod = dict(sp["module"])
        for key in ("cuda", "ptx"):
            if key in mod and not os.path.isabs(mod[key]):
                mod[key] = os.path.join(base, mod[key])
        sp["module"] = mod
        path = os.path.join(out_dir, f"spec_S{s}_R{r}.json")
        json.dump(sp, open(path, "w"))
        cmd = [args.argus, "--json", "observe", path, "--region", "mainloop",
               "--signals", "duration,comm"]
        print("profile:", " ".join(cmd), file=sys.stderr)
        res = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
        if res.returncode:
            raise PgoError(f"argus observe exited {res.returncode} on S={s} R={r}")
        rp = os.path.join(out_dir, f"report_S{s}_R{r}.json")
        open(rp, "w").write(res.stdout)
        reports.append((r, rp))
    return reports


def measure(harness_argv, s, r, p):
    argv = with_args(harness_argv, S=s, R=r, P=p, mode="pipeline")
    res = subprocess.run(argv, stdout=subprocess.PIPE, text=True)
    if res.returncode:
        raise PgoError(f"{' '.join(argv)} exited {res.returncode}")
    for line in res.stdout.splitlines():
        if line.startswith("{"):
            return json.loads(line)["pipeline_ms"] * 1e6
    raise PgoError(f"{' '.join(argv)} printed no JSON line")


def problem(argv, args):
    return dict(m=arg_of(argv, "--m", 4096), n=arg_of(argv, "--n", 4096),
                k=arg_of(argv, "--k", 4096), sms=args.sms, ranks=args.ranks)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("command", choices=["profile", "rank", "validate", "all"])
    ap.add_argument("--spec", help="the pipeline's program spec (examples/overlap/spec.json)")
    ap.add_argument("--argus", default="argus")
    ap.add_argument("--out", help="where reports go (default: a temporary directory)")
    ap.add_argument("--report", action="append", default=[], metavar="R:FILE",
                    help="a saved report and the R it ran with (rank, validate)")
    ap.add_argument("--profile-s", type=lambda s: [int(x) for x in s.split(",")], default=[2, 8])
    ap.add_argument("--profile-r", type=lambda s: [int(x) for x in s.split(",")], default=[8, 24])
    ap.add_argument("--grid-s", type=lambda s: [int(x) for x in s.split(",")],
                    default=[1, 2, 4, 8, 16])
    ap.add_argument("--grid-r", type=lambda s: [int(x) for x in s.split(",")],
                    default=[2, 4, 8, 16, 24, 32])
    ap.add_argument("--grid-p", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 4])
    ap.add_argument("--sms", type=int, required=True, help="the GPU's SMs (132 on an H200)")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--top", type=int, default=3)
    ap.add_argument("--harness", help="the harness argv as one string (default: the spec's run)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    try:
        if a.command in ("profile", "all", "validate") and not a.spec and not a.harness:
            raise PgoError(f"{a.command} needs --spec (or --harness for validate)")
        hargv = a.harness.split() if a.harness else spec_args(json.load(open(a.spec)))
        reports = []
        for item in a.report:
            r, sep, path = item.partition(":")
            if not sep or not r.isdigit():
                raise PgoError(f"--report {item!r}: write R:FILE (the R the run had)")
            reports.append((int(r), path))
        if a.command in ("profile", "all"):
            out = a.out or tempfile.mkdtemp(prefix="overlap_pgo.")
            os.makedirs(out, exist_ok=True)
            reports += profile(a, a.spec, out)
            if a.command == "profile":
                print(json.dumps([{"R": r, "report": p} for r, p in reports]))
                return 0
        if not reports:
            raise PgoError("no report: pass --report R:FILE or run `profile` / `all`")
        model = fit(reports, **problem(hargv, a))
        ranked = model.rank(a.grid_s, a.grid_r, a.grid_p)
        rows = []
        for i, (t, s, r, p) in enumerate(ranked):
            row = {"S": s, "R": r, "P": p, "predicted_ns": t}
            if a.command in ("validate", "all") and i < a.top:
                row["measured_ns"] = measure(hargv, s, r, p)
                row["error"] = (t - row["measured_ns"]) / row["measured_ns"]
            rows.append(row)
        fitted = {"comm": {str(r): {"a_ns": ab[0], "GBps": ab[1]} for r, ab in model.comm.items()},
                  "tile_ns": {str(r): v for r, v in model.tile.items()}}
        if a.json:
            print(json.dumps({"fit": fitted, "candidates": rows}, indent=1))
        else:
            for r, ab in sorted(model.comm.items()):
                print(f"fit R={r}: t_comm = {ab[0]:.0f} ns + bytes / {ab[1]:.2f} GB/s; "
                      f"tile {model.tile[r]:.0f} ns")
            print("   S    R    P   predicted_us  measured_us   error")
            for row in rows[:max(a.top, 10)]:
                meas = row.get("measured_ns")
                print(f"{row['S']:4d} {row['R']:4d} {row['P']:4d} {row['predicted_ns'] / 1e3:14.1f}"
                      + (f" {meas / 1e3:12.1f} {100 * row['error']:6.1f}%" if meas else ""))
        return 0
    except PgoError as e:
        print(f"overlap_pgo: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"overlap_pgo: {e.filename}: {e.strerror}" if e.filename else f"overlap_pgo: {e}",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
