#!/bin/bash
# async_gpu.sh — issue 27's device figures in one call (brief A): run on the
# GPU machine from a pack made with
#   ARGUS_PACK_NAME=async sh scripts/gpu/pack.sh /work/main
# plus, out of tree and never committed, a copy of pranjalssh/fast.cu@38eb642e's
# examples/matmul/matmul_7.cuh under .carry/async/fastcu/examples/matmul/:
#   bash .carry/async/src/bench/explore/async_gpu.sh
# Steps (each under a timeout, so what ran comes back):
#   1. test_gpu_async: the counting run on the ground truth (exact counts);
#   2. trace_fidelity --host-only: gemm_tma's host phase (a 0.18 ms kernel,
#      every launch recorded, 8 batches of 5 launches), 3 runs, with the
#      stream-write binding (ARGUS_TRACE_AHEAD=2) beside it once;
#   3. async_fastcu.sh on matmulKernel7 (load iter=0:5): runs planned vs run;
#   4. the same kernel's host phase (trace_fidelity --host-only --host-spec,
#      --reps 40 --batch 5: 8 batches), 3 runs.
# Writes $OUT/async-gpu.log; exits 77 without a GPU.
set -u
CARRY=$(cd "$(dirname "$0")/../../.." && pwd)
R=/tmp/argus-$(basename "$CARRY")
ln -sfn "$CARRY" "$R"
B=$R/build
export LD_LIBRARY_PATH=$R/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$B/examples:$PATH
export ARGUS_SOURCE_DIR=$R/src ARGUS_BUILD_DIR=$B
OUT=${OUT:-/tmp/argus-async-out}
mkdir -p "$OUT"
nvidia-smi -L > /dev/null 2>&1 || { echo "async_gpu: skipped: no GPU"; exit 77; }
step() {
  local t=$1
  shift
  local t0=$(date +%s%N)
  echo "=== $*"
  timeout "$t" "$@"
  echo "=== rc $? after $(( ($(date +%s%N) - t0) / 1000000 )) ms"
}
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  step "${T1:-45}" ctest --test-dir "$B" -R '^test_gpu_async$' -V
  step "${T2:-70}" "$B/bench/trace_fidelity" --host-only --runs 3
  FC=$CARRY/fastcu
  if [ -f "$FC/examples/matmul/matmul_7.cuh" ]; then
    QUERIES="load iter=0:5" REPS=2 step "${T3:-50}" bash "$R/src/bench/explore/async_fastcu.sh" "$FC" "$OUT/fc"
    K="M7::matmulKernel7<128, 256, 64, 384, 3, 128>"
    sed 's/"--reps", "2"\]/"--reps", "40", "--batch", "5"]/' "$OUT/fc/spec.json" > "$OUT/fc/host.json"
    grep -q '"--batch"' "$OUT/fc/host.json" &&
      step "${T4:-80}" "$B/bench/trace_fidelity" --host-only --no-old --runs 3 \
        --host-spec "$OUT/fc/host.json" --region "$K"
  else
    echo "async_gpu: no fast.cu copy under $FC: steps 3-4 skipped"
  fi
} 2>&1 | tee "$OUT/async-gpu.log"
