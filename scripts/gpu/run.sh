#!/bin/bash
# run.sh — runs every GPU test (ctest label gpu) and every benchmark (label
# bench) of a build made by scripts/gpu/pack.sh, on the GPU machine:
#
#   bash .carry/gpu/scripts/gpu/run.sh [extra ctest args]
#
# Writes under $OUT (at most 8 files come back): summary.txt (the figures),
# gpu-tests.log, bench.log, sass.txt (the traced kernels' SASS), env.txt,
# and evidence/ (evidence files recorded by the GPU tests, for
# tests/data/evidence). Prints a short summary last, which lists every goal
# line the benchmarks printed and every goal NOT met. Exit status: 0 when all
# tests and benchmarks passed (a benchmark whose goal is not met fails).
set -u
CARRY=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/argus-gpu-out}
mkdir -p "$OUT/evidence"
# Always this call's carry: a link left by an earlier call on a warm machine
# would run another pack's build.
# The build's baked-in paths are /tmp/argus-NAME, NAME the carry folder's name
# (ARGUS_PACK_NAME at pack time; gpu by default).
R=/tmp/argus-$(basename "$CARRY")
ln -sfn "$CARRY" "$R"
B=$R/build
export LD_LIBRARY_PATH=$R/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
export ARGUS_EVIDENCE_OUT=$OUT/evidence
export ARGUS_BENCH_DUMP=$OUT/dump
# the commit pack.sh built (the copy of the sources is no checkout)
[ -s "$CARRY/COMMIT" ] && export ARGUS_COMMIT="$(cat "$CARRY/COMMIT")"
# The GPU machine's python3 (the one that holds torch) has no pytest: wheels
# carried in the checkout's .whl/ (docs/gpu-testing.md) install beside it, and
# the Python client's tests use that python3
if ls .whl/*.whl >/dev/null 2>&1 && command -v python3 >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/argus-site \
    .whl/*.whl > "$OUT/pip.log" 2>&1 &&
    export PYTHONPATH=/tmp/argus-site${PYTHONPATH:+:$PYTHONPATH} ARGUS_PYTHON=$(command -v python3)
fi
mkdir -p "$ARGUS_BENCH_DUMP"
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  uname -r
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
  nvcc --version | tail -2
  ldd "$B/tools/argus/argus" | grep -E "not found|jansson|crypto|nvJitLink"
} > "$OUT/env.txt" 2>&1
rc=0
ctest --test-dir "$B" -L gpu -V --timeout 600 "$@" > "$OUT/gpu-tests.log" 2>&1 || rc=1
ctest --test-dir "$B" -L bench -V --timeout 600 "$@" > "$OUT/bench.log" 2>&1 || rc=1
: > "$OUT/sass.txt"
for f in "$ARGUS_BENCH_DUMP"/*.cubin; do
  [ -e "$f" ] || continue
  echo "=== $(basename "$f")" >> "$OUT/sass.txt"
  cuobjdump -sass "$f" >> "$OUT/sass.txt" 2>&1
done
rm -rf "$ARGUS_BENCH_DUMP"
{
  cat "$OUT/env.txt"
  grep -hE "^[0-9]+: (@|Test|[0-9]+ passed)|tests passed|tests failed|Failed|Skipped|\*\*\*" "$OUT/gpu-tests.log"
  sed -n '/^[0-9]*: device:/,/^[0-9]*: checks:/p' "$OUT/bench.log" | grep -v '@json'
  grep -hE "tests passed|tests failed" "$OUT/bench.log"
  # every goal a benchmark states prints "goal: NAME: met|NOT met (...)" (bench/goal.h)
  echo "goals:"
  grep -hE "^[0-9]+: goal: " "$OUT/bench.log" "$OUT/gpu-tests.log" | sed 's/^[0-9]*: /  /'
  unmet=$(grep -chE "^[0-9]+: goal: .*: NOT met" "$OUT/bench.log" "$OUT/gpu-tests.log" |
    awk '{n += $1} END {print n + 0}')
  echo "unmet goals: $unmet"
  grep -hE "^[0-9]+: goal: .*: NOT met" "$OUT/bench.log" "$OUT/gpu-tests.log" | sed 's/^[0-9]*: /  /'
  ls -l "$OUT/evidence"
} > "$OUT/summary.txt"
cat "$OUT/summary.txt"
exit $rc
