#!/bin/bash
# ncu_stalls.sh INNER NAME...: per-instruction warp-stall samples of
# overhead_compute for each NAME.ptx in this directory, on the GPU machine.
# Exploration only (bench/RESULTS.md, "Where the time goes, per
# instruction"). Build the driver first (on either machine):
#   gcc -O2 -o ncu_drv ncu_drv.c -I/usr/local/cuda/include \
#       -L/usr/local/cuda/lib64/stubs -lcuda
# NAME.ptx: `argus variant build/tests/data/ptx/overhead.ptx --kind traced`
# (or trace-free, or a design of probe_edits.py). Writes NAME.src.csv (ncu's
# source page: SASS with its samples and stall reasons) under $OUT (or .).
set -eu
cd "$(dirname "$0")"
out=${OUT:-.}
inner=$1
shift
for n in "$@"; do
  ./ncu_drv "$n.ptx" overhead_compute "$inner" 3 | tail -1
  ncu --clock-control none --section SourceCounters --section WarpStateStats \
      -k overhead_compute --launch-skip 1 --launch-count 1 -f -o "$out/$n" \
      ./ncu_drv "$n.ptx" overhead_compute "$inner" 2 > /dev/null
  ncu -i "$out/$n.ncu-rep" --page source --print-source sass --csv > "$out/$n.src.csv"
  rm -f "$out/$n.ncu-rep"
done
