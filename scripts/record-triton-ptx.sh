#!/bin/sh
# record-triton-ptx.sh — records Triton's PTX for the corpus on the GPU machine:
#   sh scripts/record-triton-ptx.sh [OUTDIR]   (default tests/data/ptx/triton)
# Needs python3 with torch and triton 3.x and a Hopper GPU. Commit the .ptx
# files and MANIFEST.json it writes; the golden tests pick them up.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-"$here/../tests/data/ptx/triton"}
exec python3 "$here/record-triton-ptx.py" --out "$out"
