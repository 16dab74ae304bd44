#!/bin/bash
# hw.sh — on the GPU machine, records the evidence of the system timeline and
# stalls collectors (docs/system.md, docs/stalls.md) in one call: the GPU
# tests and the benchmark of tests/hw (through run.sh), the activity trace
# and PC sampling on examples/gemm_tma (TMA + wgmma), and `argus observe
# --signals duration,system` and `--signals timeline,system` (the joined
# Chrome trace) on it. Everything recorded comes back packed in
# $OUT/evidence.tgz (the device tool returns at most 8 files).
#
#   ARGUS_PACK_NAME=h sh scripts/gpu/pack.sh /work/main    # CPU machine
#   bash .carry/h/src/scripts/gpu/hw.sh                     # device tool, carry .carry/h
set -u
CARRY=$(cd "$(dirname "$0")/../../.." && pwd)
OUT=${OUT:-/tmp/argus-gpu-out}
bash "$CARRY/scripts/gpu/run.sh" -R 'test_gpu_hw|test_gpu_counters|bench_collect_costs'
R=/tmp/argus-$(basename "$CARRY")
B=$R/build
S=$R/src
export LD_LIBRARY_PATH=$R/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=$B/examples:/usr/local/cuda/bin:$PATH
EV=$OUT/evidence
W=$(mktemp -d)
{
  # the collectors on a TMA + wgmma kernel (SASS metrics count nothing there)
  nvcc -cubin -arch=sm_90a -lineinfo -I"$S/include" -o "$W/gemm_tma.lineinfo.cubin" \
    "$S/examples/gemm_tma/gemm_tma.cu"
  for c in stalls system; do
    mkdir -p "$W/$c"
    ARGUS_COLLECT=$c ARGUS_OUT=$W/$c ARGUS_VARIANT=$W/gemm_tma.lineinfo.cubin \
      ARGUS_VARIANT_ID=gemm_tma-lineinfo gemm_tma_harness --size 1024 \
      --module "$B/examples/gemm_tma.cubin"
    echo "gemm_tma under ARGUS_COLLECT=$c: exit $?"
    cat "$W/$c/host-error.txt" 2>/dev/null
    cp "$W/$c/$c.json" "$EV/gemm_tma.$c.json" 2>/dev/null
  done
  # argus observe end to end, text and JSON
  cd "$S/examples/gemm_tma" || exit 1
  "$B/tools/argus/argus" --workspace "$W/ws" plan spec.json --region gemm_tma \
    --signals duration,system
  "$B/tools/argus/argus" --workspace "$W/ws" observe spec.json --region gemm_tma \
    --signals duration,system
  echo "observe: exit $?"
  "$B/tools/argus/argus" --workspace "$W/ws" --json observe spec.json --region gemm_tma \
    --signals duration,system > "$EV/gemm_tma.observe.json"
  # the timeline and the system timeline of one traced run in one Chrome trace
  "$B/tools/argus/argus" --workspace "$W/ws" plan spec.json --region gemm_tma \
    --signals timeline,system
  "$B/tools/argus/argus" --workspace "$W/ws" observe spec.json --region gemm_tma \
    --signals timeline,system --timeline "$EV/gemm_tma.joined.trace.json"
  echo "observe timeline,system: exit $?"
} > "$OUT/hw.txt" 2>&1
tar -C "$OUT" -czf "$OUT/evidence.tgz" evidence && rm -rf "$OUT/evidence" "$OUT/sass.txt"
tail -40 "$OUT/hw.txt"
