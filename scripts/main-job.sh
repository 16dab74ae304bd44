#!/bin/sh
# main-job.sh — the README's main job: `argus observe` on the example TMA GEMM.
# On a machine with an H100/H200 it traces the kernel and prints the region
# report; on a machine without a GPU it plans the query, builds and compiles
# the variants, reports what it could (static resources) and says plainly
# what it could not collect. The workspace is .argus/ in the current directory.
set -eu
B=${1:-build}
A="$B/tools/argus/argus"
SPEC=examples/gemm_tma/spec.json
export PATH="$(cd "$B/examples" && pwd):$PATH" # the spec's harness
"$A" version
"$A" doctor
echo
echo "== argus plan $SPEC --region mainloop --signals duration,occurrences,static"
"$A" plan "$SPEC" --region mainloop --signals duration,occurrences,static
echo
echo "== argus observe $SPEC --region mainloop --signals duration,occurrences,static"
if "$A" observe "$SPEC" --region mainloop --signals duration,occurrences,static; then
  exit 0
fi
if "$A" --json doctor | grep -q '"available": true'; then
  echo "main job: observe failed on a machine with a GPU" >&2
  exit 1
fi
echo "main job: no GPU on this machine: the plan, the variants and the static signal are above;"
echo "          the trace signals need an H100/H200 (see docs/gpu-testing.md)"
