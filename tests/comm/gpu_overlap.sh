#!/bin/sh
# gpu_overlap.sh HARNESS NGPU ARGUS SPEC — the all-gather + GEMM pipeline
# (examples/overlap, docs/comm.md) on NGPU GPUs: exit 77 with fewer GPUs.
#  1. the harness, pipelined and reference paths, S = 4 with P = 1 and 2:
#     "check":"ok" (the pipelined C equals the reference bit for bit, the
#     reference the CPU on sampled entries);
#  2. `argus observe SPEC --signals duration,comm`: the GEMM's regions timed
#     (duration of mainloop), and with NGPU >= 2 the comm signal's
#     all-gather groups: count, launch overhead, bus bandwidth > 0, SMs = the
#     spec's R for the pipelined chunks; with one GPU, NCCL's one-rank
#     all-gather is a copy (no kernel): the comm signal says so (missing).
set -u
H=$1; N=$2; ARGUS=$3; SPEC=$4
count() {
  if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
    echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c .
  elif command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi -L 2>/dev/null | grep -c '^GPU'
  else
    ls /dev 2>/dev/null | grep -c '^nvidia[0-9][0-9]*$'
  fi
}
HAVE=$(count)
if [ "$HAVE" -lt "$N" ]; then
  echo "gpu_overlap: needs $N GPU(s), $HAVE visible: skipped"
  exit 77
fi
fail() { echo "gpu_overlap: FAIL: $*"; exit 1; }
# libnccl.so.2: the toolkit's, else the one torch's wheels bring (nvidia.nccl)
if ldd "$H" 2>/dev/null | grep -q 'libnccl.so.2 => not found'; then
  NL=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
  if [ -n "$NL" ] && [ -e "$NL/libnccl.so.2" ]; then
    export LD_LIBRARY_PATH="$NL${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "gpu_overlap: libnccl.so.2 from $NL"
  else
    echo "gpu_overlap: no libnccl.so.2 on this machine (not in the toolkit, no nvidia.nccl wheel): skipped"
    exit 77
  fi
fi
for P in 1 2; do
  OUT=$("$H" --ranks "$N" --m 2048 --n 1024 --k 1024 --chunks 4 --comm-sms 8 --barrier $P --iters 3)
  rc=$?
  echo "$OUT"
  [ $rc -eq 0 ] || fail "the harness exited $rc (P=$P)"
  echo "$OUT" | grep -q '"check":"ok"' || fail "the check did not pass (P=$P)"
done
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
# exit 1 is a report with something missing: with one GPU the comm signal is
# (NCCL's one-rank all-gather is a copy), which the check below expects
PATH=$(dirname "$H"):$PATH "$ARGUS" --json -W "$D/ws" observe "$SPEC" --region mainloop \
  --signals duration,comm > "$D/report.json"
rc=$?
[ $rc -eq 0 ] || { [ $rc -eq 1 ] && [ "$N" -eq 1 ]; } || fail "argus observe exited $rc"
python3 - "$D/report.json" "$N" <<'PY' || exit 1
import json, sys
rep = json.load(open(sys.argv[1])); n = int(sys.argv[2])
vals = rep["values"]
dur = [v for v in vals if v["signal"] == "duration" and v["region"].endswith("mainloop")]
assert dur, "no duration of mainloop"
comm = [v for v in vals if v["signal"] == "comm"]
groups = {}
for v in comm:
    if v["region"].startswith("(comm all_gather"):
        groups.setdefault(v["region"], {})[v["stat"]] = v["value"]
print("comm groups:", json.dumps(groups, indent=1))
if n == 1:
    miss = [m for m in rep.get("missing", []) if "NCCL kernel" in m.get("why", "")]
    assert groups or miss, "one GPU: neither all-gather kernels nor the missing entry"
    print("one GPU:", "NCCL launched kernels" if groups else "no NCCL kernel (a copy): missing")
    sys.exit(0)
assert groups, "no all_gather group in the comm signal"
# the spec: m 4096, k 4096, S 4, R 8, two ranks: chunk = 512 rows x 4096 x 4 B per rank,
# gathered 2 x that = 16 MiB; 3 timed + 1 warm-up iterations, S kernels each, per rank
pipe = [g for r, g in groups.items() if "bytes=16777216 " in r]
assert pipe, "no group of the pipelined chunks (16777216 bytes)"
g = pipe[0]
assert g["count"] == 4 * 4 * n, g["count"]
assert g["sms"] == 8, g["sms"]
assert g["launch_overhead_ns"] is not None and g["launch_overhead_ns"] > 0
assert g["busbw_GBps"] > 0 and g["algbw_GBps"] > g["busbw_GBps"]
assert 0 <= g["overlap"] <= 1
print("ok: %d all-gathers of 16 MiB, %.1f us mean, busbw %.1f GB/s, overlap %.2f" %
      (g["count"], g["mean"] / 1e3, g["busbw_GBps"], g["overlap"]))
PY
echo "gpu_overlap: ok"
