#!/bin/bash
# public_subsets.sh DIR [RUNS]: what tracing costs on real public kernels,
# every region alone against all regions, against the build the user ships
# (issue 17), with build/bench/trace_fidelity. Exploration, out of tree:
# DIR holds copies of public kernels with ARGUS markers added (never
# committed; docs/tracing.md, "Perturbation on public kernels", says how
# they were made):
#   DIR/sgemm10/sgemm10.cu   siboehm/SGEMM_CUDA 60cba6f9, kernel 10
#                            (sgemmWarptiling<128,128,16,64,64,4,8,4,128>),
#                            regions mainloop > ktile > load, compute; epilogue
#   DIR/fastcu4/fastcu4.cu   pranjalssh/fast.cu 38eb642e, matmulKernel4
#                            <128,128,64,256,5>: produce; consume > ktile >
#                            wait, mma; epilogue
# Harnesses: build/bench/sgemm_harness and wgmma_harness (ours). Exit 77
# when DIR lacks the copies or there is no GPU, 1 when a goal is not met.
# REPS (default 20): timed launches per harness run (each recorded: at 4096^3
# the evidence of 20 launches takes about a minute to decode per observe);
# SGEMM_TRACE / FASTCU_TRACE: the configurations besides all (';'-separated).
set -u
dir=${1:-}
runs=${2:-1}
build=${ARGUS_BUILD_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/build}
if [ -z "$dir" ] || [ ! -f "$dir/sgemm10/sgemm10.cu" ] || [ ! -f "$dir/fastcu4/fastcu4.cu" ]; then
  echo "public_subsets: skipped: no kernel copies in '${dir}' (see the header)"
  exit 77
fi
dir=$(cd "$dir" && pwd)
cat > "$dir/sgemm10/spec.json" <<J
{"name": "sgemm10", "module": {"cuda": "sgemm10.cu", "flags": ["-arch=sm_90a"]},
 "run": ["$build/bench/sgemm_harness", "--module", "none.cubin", "--kernel",
         "sgemmWarptiling<128, 128, 16, 64, 64, 4, 8, 4, 128>", "--reps", "${REPS:-20}"]}
J
cat > "$dir/fastcu4/spec.json" <<J
{"name": "fastcu4", "module": {"cuda": "fastcu4.cu", "flags": ["-std=c++17", "-O3",
  "-DNDEBUG", "-w", "--expt-relaxed-constexpr", "--expt-extended-lambda", "--use_fast_math",
  "-arch=sm_90a", "-lineinfo"]},
 "run": ["$build/bench/wgmma_harness", "--module", "none.cubin", "--kernel",
         "M4::matmulKernel4<128, 128, 64, 256, 5>", "--reps", "${REPS:-20}"]}
J
rc=0
"$build/bench/trace_fidelity" --spec "$dir/fastcu4/spec.json" --no-old --runs "$runs" \
  --region "M4::matmulKernel4<128, 128, 64, 256, 5>" \
  --trace "${FASTCU_TRACE:-produce;consume;ktile;wait;mma;epilogue}" || rc=$?
"$build/bench/trace_fidelity" --spec "$dir/sgemm10/spec.json" --no-old --runs "$runs" \
  --region "sgemmWarptiling<128, 128, 16, 64, 64, 4, 8, 4, 128>" \
  --trace "${SGEMM_TRACE:-mainloop;ktile;load;compute;epilogue}" || { r=$?; [ $rc -eq 0 ] && rc=$r; }
exit $rc
