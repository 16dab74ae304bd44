#!/bin/sh
# gpu-ptx-examples.sh — runs issue 3's GPU work on the GPU machine, from a
# build directory made on the CPU machine (the harnesses are C programs on
# the CUDA driver API; their cubins sit beside them):
#   sh scripts/gpu-ptx-examples.sh [BUILD_DIR] [OUT_DIR]
# 1. the overhead microbenchmark harness, compute and memory type, inner
#    iterations 8..512, checked against its CPU reference;
# 2. the TMA GEMM harness at two sizes, checked against its CPU reference;
# 3. the examples from PTX instead of cubin (the module path a variant uses);
# 4. the Triton PTX recorder (writes tests/data/ptx/triton/*.ptx);
# 5. with cuobjdump present, the marker SASS comparison (test_markers_sass).
# Every step's output goes to OUT_DIR; the exit code is nonzero if any
# harness reports a mismatch or fails.
set -u
build=${1:-build}
out=${2:-gpu-results}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
fail=0
run() { # name, command...
  name=$1; shift
  echo "== $name: $*"
  if "$@" > "$out/$name.out" 2> "$out/$name.err"; then
    cat "$out/$name.out"
  else
    echo "FAILED ($?): see $out/$name.err"; cat "$out/$name.err"; fail=1
  fi
}
for t in compute memory; do
  for n in 8 32 128 512; do
    run "overhead_${t}_$n" "$build/examples/overhead_harness" --type $t --inner $n --reps 50
  done
done
run gemm_tma_1024 "$build/examples/gemm_tma_harness" --size 1024 --reps 50
run gemm_tma_4096 "$build/examples/gemm_tma_harness" --m 4096 --n 4096 --k 2048 --reps 20
run overhead_from_ptx "$build/examples/overhead_harness" --module "$build/tests/data/ptx/overhead.ptx"
run gemm_from_ptx "$build/examples/gemm_tma_harness" --module "$build/tests/data/ptx/gemm_tma.ptx"
run triton_record sh "$here/scripts/record-triton-ptx.sh" "$here/tests/data/ptx/triton"
if command -v cuobjdump >/dev/null 2>&1 && [ -x "$build/tests/ptx/test_markers_sass" ]; then
  run markers_sass env ARGUS_SOURCE_DIR="$here" ARGUS_BUILD_DIR="$build" "$build/tests/ptx/test_markers_sass"
fi
exit $fail
