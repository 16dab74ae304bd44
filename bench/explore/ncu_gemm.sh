#!/bin/bash
# ncu_gemm.sh BUILD [NAME=REGIONS ...]: where tracing's time goes on
# examples/gemm_tma (issue 17), on the GPU machine: ncu's warp-state and
# source counters (SASS with its stall samples) of one launch of the
# production build (markers off, nvcc -cubin), the anchors-only build, and
# one traced build per NAME=REGIONS (REGIONS: a --region list, "all" for
# every region). The traced builds run outside Argus (their descriptor is
# off: every probe instruction runs, no record is stored): under
# ARGUS_COLLECT the host runtime's timing gate (a stream wait the host
# releases after the launch) deadlocks with ncu, which replays the kernel
# inside cuLaunchKernel (seen on the H200, 2026-12-01). Writes
# NAME.details.csv and NAME.src.csv under $OUT (or .). Exit 77 without ncu.
set -eu
B=$1
shift
command -v ncu > /dev/null || { echo "ncu_gemm: skipped: no ncu"; exit 77; }
out=${OUT:-.}
src=$(cd "$(dirname "$0")/../.." && pwd)
spec=$src/examples/gemm_tma/spec.json
w=$(mktemp -d /tmp/ncu-gemm-XXXXXX)
h=$B/examples/gemm_tma_harness
nvcc -cubin -gencode=arch=compute_90a,code=sm_90a -o "$w/production.cubin" \
  "$src/examples/gemm_tma/gemm_tma.cu" -I"$src/include"
prof() { # name cubin [env...]
  local n=$1 c=$2
  shift 2
  env "$@" ncu --clock-control none --section WarpStateStats --section SourceCounters \
    --section SpeedOfLight -k gemm_tma --launch-skip 3 --launch-count 1 -f -o "$w/$n" \
    "$h" --size 1024 --reps 5 --module "$c" > "$w/$n.log" 2>&1 || { tail -5 "$w/$n.log"; return 1; }
  ncu -i "$w/$n.ncu-rep" --page details --csv > "$out/$n.details.csv"
  ncu -i "$w/$n.ncu-rep" --page source --print-source sass --csv > "$out/$n.src.csv"
}
prof production "$w/production.cubin"
variant() { # name args...
  local n=$1
  shift
  "$B/tools/argus/argus" variant --kind traced "$@" -o "$w/$n.ptx" "$spec"
  ptxas -arch=sm_90a -m64 "$w/$n.ptx" -o "$w/$n.cubin"
  prof "$n" "$w/$n.cubin"
}
variant anchors --anchors-only
for nr in "$@"; do
  n=${nr%%=*} r=${nr#*=}
  if [ "$r" = all ]; then variant "$n"; else variant "$n" --region "$r"; fi
done
rm -rf "$w"
