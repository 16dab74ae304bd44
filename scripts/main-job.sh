#!/bin/sh
# main-job.sh — the README's main job: what Argus can do on this machine.
# Later issues make this `argus observe` on the example GEMM.
set -eu
B=${1:-build}
A="$B/tools/argus/argus"
"$A" version
"$A" doctor
