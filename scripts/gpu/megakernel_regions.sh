#!/bin/bash
# megakernel_regions.sh — the figures of docs/megakernel.md, "Ownership by
# region" and "Stalls by region", in one run on the GPU machine, from a pack
# of scripts/gpu/pack.sh:
#
#   ARGUS_PACK_NAME=NAME sh scripts/gpu/pack.sh /work/main        # CPU machine
#   bash .carry/NAME/src/scripts/gpu/megakernel_regions.sh        # GPU machine
#
# 1. The SASS-metrics collection (ARGUS_COLLECT=sass) run straight on the
#    harnesses, to say for which kernels and settings CUPTI counts
#    (docs/sass-metrics.md, "Not every kernel counts"): the megakernel as
#    built, with CUDA_MODULE_LOADING=EAGER, with ARGUS_SASS_LAZY=0, the
#    reference kernels' module as the variant in the same process, the tiny
#    model; gemm_tma; the ground truth attrib_truth (the control). Each
#    run's message (host-error.txt) and whether sass_metrics.json came.
# 2. argus observe examples/megakernel/spec_lineinfo.json (the spec's build
#    with -lineinfo, for ownership's view by source file) --region
#    mk_decode_step --signals ownership,inst_mix,barriers,stalls, in a fresh
#    workspace: the report as JSON and as text. When a setting of 1 made the
#    megakernel count and the default did not, the observe runs with it.
# Writes under $OUT: diag.txt, observe.json, observe.txt, observe.err.
set -u
# started from the pack's copy of the sources (.carry/NAME/src/scripts/gpu)
# or from beside run.sh (.carry/NAME/scripts/gpu): the pack is where build/ is
CARRY=$(cd "$(dirname "$0")/../.." && pwd)
[ -d "$CARRY/build" ] || CARRY=$(cd "$CARRY/.." && pwd)
OUT=${OUT:-/tmp/argus-mk-out}
mkdir -p "$OUT"
R=/tmp/argus-$(basename "$CARRY")
ln -sfn "$CARRY" "$R"
B=$R/build
export LD_LIBRARY_PATH=$R/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=$B/examples:$B/tools/argus:/usr/local/cuda/bin:$PATH
D=/tmp/argus-mk-diag
rm -rf "$D"
# diag NAME ENV... -- CMD...: one SASS-metrics collection of CMD's first module
diag() {
  local name=$1 d=$D/$1
  shift
  mkdir -p "$d"
  local t0=$(date +%s.%N)
  env ARGUS_COLLECT=sass ARGUS_OUT="$d" "$@" > "$d/log" 2>&1
  local rc=$? t1=$(date +%s.%N)
  {
    printf '== %s: exit %d, %.1f s, evidence: %s\n' "$name" "$rc" "$(awk "BEGIN{print $t1 - $t0}")" \
      "$([ -s "$d/sass_metrics.json" ] && echo yes || echo no)"
    [ -s "$d/host-error.txt" ] && head -c 1200 "$d/host-error.txt" && echo
    [ -s "$d/sass_metrics.json" ] && python3 -c "
import json,sys
j=json.load(open('$d/sass_metrics.json'))
v=j['variant']; rows=j['rows']; cr=[c['crc'] for c in j['cubins']]
mine=[r for r in rows if r[0] in cr]
print('rows', len(rows), 'of the variant', len(mine), 'inst_executed', sum(r[3] for r in mine), 'dropped', j['dropped_records'])"
    tail -3 "$d/log"
  } >> "$OUT/diag.txt"
}
MK="$B/examples/megakernel_harness --ctx 1024 --steps 1 --no-time"
diag mk ARGUS_VARIANT="$B/examples/megakernel.cubin" timeout 40 $MK
diag mk_eager CUDA_MODULE_LOADING=EAGER ARGUS_VARIANT="$B/examples/megakernel.cubin" timeout 40 $MK
diag mk_nolazy ARGUS_SASS_LAZY=0 ARGUS_VARIANT="$B/examples/megakernel.cubin" timeout 40 $MK
# the same process, the reference kernels' module as the variant (loaded
# after the megakernel's, the range opened then): a kernel's module or the
# process?
diag mk_ref ARGUS_MODULE=reference ARGUS_VARIANT="$B/examples/reference.cubin" timeout 40 $MK
diag mk_tiny ARGUS_VARIANT="$B/examples/megakernel.cubin" timeout 40 $MK --tiny
diag gemm ARGUS_VARIANT="$B/examples/gemm_tma.cubin" timeout 30 \
  "$B/examples/gemm_tma_harness" --size 1024
diag truth ARGUS_VARIANT="$B/tests/sassm/attrib_truth.cubin" timeout 30 \
  "$B/tests/sassm/attrib_truth_harness" --module "$B/tests/sassm/attrib_truth.cubin"
# a setting that made the megakernel count, when the default did not
if [ ! -s "$D/mk/sass_metrics.json" ]; then
  if [ -s "$D/mk_eager/sass_metrics.json" ]; then
    export CUDA_MODULE_LOADING=EAGER
    echo "observe: CUDA_MODULE_LOADING=EAGER (the default did not count, eager did)" >> "$OUT/diag.txt"
  elif [ -s "$D/mk_nolazy/sass_metrics.json" ]; then
    export ARGUS_SASS_LAZY=0
    echo "observe: ARGUS_SASS_LAZY=0 (the default did not count, this did)" >> "$OUT/diag.txt"
  fi
fi
cd "$R/src" || exit 1
W=/tmp/argus-mk-ws
rm -rf "$W"
Q=(observe examples/megakernel/spec_lineinfo.json --region mk_decode_step
   --signals ownership,inst_mix,barriers,stalls)
argus -W "$W" --json "${Q[@]}" > "$OUT/observe.json" 2> "$OUT/observe.err"
echo "observe exit $?" >> "$OUT/observe.err"
argus -W "$W" "${Q[@]}" > "$OUT/observe.txt" 2>> "$OUT/observe.err"
tail -5 "$OUT/diag.txt"
grep -E "tasks:|failed" "$OUT/observe.err" | head -8
