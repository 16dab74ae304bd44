#!/bin/bash
# records_sweep.sh — on the GPU machine, after `sh scripts/gpu/pack.sh /work/main` here: argus
# observe on examples/gemm_tma with several --records and --launches last, printing the
# perturbation lines (bench/RESULTS.md, "The record area's memset"). Run there as
# `bash bench/explore/records_sweep.sh` with carry [".carry"].
[ -e /tmp/argus-gpu ] || ln -s "$PWD/.carry/gpu" /tmp/argus-gpu
export LD_LIBRARY_PATH=/tmp/argus-gpu/lib:/usr/local/cuda/lib64
export PATH=/tmp/argus-gpu/build/examples:/usr/local/cuda/bin:$PATH
A=/tmp/argus-gpu/build/tools/argus/argus; S=/tmp/argus-gpu/src/examples/gemm_tma/spec.json
for r in 4096 64 4096 64 16; do
  echo "== records $r"
  $A --workspace /tmp/ws-$r-$RANDOM observe $S --region gemm_tma --signals duration --records $r 2>&1 | grep -iE "perturbation|warning" | head -12
done
echo "== records 4096 launches last"
$A --workspace /tmp/ws-last observe $S --region gemm_tma --signals duration --launches last 2>&1 | grep -iE "perturbation|warning" | head -12
