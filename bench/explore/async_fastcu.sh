#!/bin/bash
# async_fastcu.sh FASTCU [OUTDIR]: async_latency (docs/probes.md) on a real
# public Hopper TMA/mbarrier pipeline (issue 27): pranjalssh/fast.cu@38eb642e
# examples/matmul/matmul_7.cuh, matmulKernel7<128, 256, 64, 384, 3, 128>
# (3-stage mbarrier ring, one producer and two consumer warpgroups, wgmma
# m64n256k16), at 4096^3 bf16 through bench/explore/wgmma_harness --k7.
# Out of tree: FASTCU is a checkout of that repository; the script copies
# matmul_7.cuh into OUTDIR (default /tmp/async_fastcu) and adds two ARGUS
# markers there (never committed): ARGUS_BEGIN_AT(load, block_k_iter) around
# the producer's K-loop body (wait empty, expect_bytes, 2 TMA loads) and
# ARGUS_BEGIN_AT(mma, block_k_iter) around the consumers' (wait full, 16
# wgmma, commit, wait_group 0, arrive empty). Then, per query, `argus plan`
# (runs planned) and `argus observe --json` (OUTDIR/<name>.json: values,
# missing entries); prints one line per query: runs planned, wall seconds,
# and the probes the counting run dropped before they ran.
# QUERIES: ';'-separated "region scope" pairs (default the load region at
# iter=0:5 and the steady state iter=32:37; each CTA runs 4 tiles of 64 K
# blocks). Exit 77 without FASTCU's file or nvcc/GPU, 1 when observe fails.
set -u
src=${1:-}
out=${2:-/tmp/async_fastcu}
build=${ARGUS_BUILD_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/build}
h=$src/examples/matmul/matmul_7.cuh
if [ -z "$src" ] || [ ! -f "$h" ]; then
  echo "async_fastcu: skipped: no matmul_7.cuh under '${src}' (a pranjalssh/fast.cu checkout)"
  exit 77
fi
command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1 ||
  { echo "async_fastcu: skipped: no GPU"; exit 77; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
# the markers: the first K loop is the producer's, the second the consumers'
awk '/for \(int block_k_iter = 0; block_k_iter < num_blocks_k; \+\+block_k_iter, \+\+qidx\) \{/ {
       print; n++; print (n == 1 ? "ARGUS_BEGIN_AT(load, block_k_iter);" : "ARGUS_BEGIN_AT(mma, block_k_iter);"); next }
     /load_async\(&sB\[qidx/ { print; print "ARGUS_END(load);"; next }
     /if \(tid == 0\) arrive\(&empty\[qidx\], 1\);/ { print; print "ARGUS_END(mma);"; next }
     { print }' "$h" > "$out/matmul_7.cuh"
[ "$(grep -c 'ARGUS_' "$out/matmul_7.cuh")" = 4 ] ||
  { echo "async_fastcu: the marker edit did not apply to '$h' (not 38eb642e?)"; exit 1; }
cat > "$out/fc7.cu" <<'C'
#include "argus/region.cuh"
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda/barrier>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cassert>
#include <cstdio>
#include <cstdlib>
typedef __nv_bfloat16 bf16;
#define CEIL_DIV(M, N) (((M) + (N)-1) / (N))
static void cudaCheck(cudaError_t e, const char *f, int l) {
  if (e != cudaSuccess) { printf("%s:%d: %s\n", f, l, cudaGetErrorString(e)); exit(1); }
}
#define cudaCheck(err) (cudaCheck(err, __FILE__, __LINE__))
#include "matmul_7.cuh"
C
K="M7::matmulKernel7<128, 256, 64, 384, 3, 128>"
cat > "$out/spec.json" <<J
{"name": "fastcu7", "module": {"cuda": "fc7.cu", "flags": ["-std=c++17", "-O3",
  "-DNDEBUG", "-w", "--expt-relaxed-constexpr", "--expt-extended-lambda", "--use_fast_math",
  "-arch=sm_90a", "-lineinfo"]},
 "run": ["$build/bench/wgmma_harness", "--module", "none.cubin", "--kernel", "$K",
         "--k7", "--reps", "${REPS:-2}"]}
J
argus=$build/tools/argus/argus
# per query: the runs that fired (probes with a latency, plus the reference),
# then every value with its instance and spread, every missing entry's reason
summarize() {
  python3 - "$1" <<'P'
import json, sys
r = json.load(open(sys.argv[1]))
fired = {v["stat"].split("[", 1)[1] for v in r.get("values", [])
         if v.get("stat", "").split("[")[0] in ("latency", "group_latency")}
print("  fired: %d probes + the reference; %d missing entries" % (len(fired), len(r.get("missing", []))))
# the pairs the counting run dropped before they ran (warnings "... (counted: ...)")
import re
dropped = [w for w in r.get("warnings", []) if "(counted: " in w]
n = sum(int(re.search(r"at (\d+) requested", w).group(1)) for w in dropped)
print("  dropped by the counting run: %d probe(s) of %d site(s)" % (n, len(dropped)))
for w in dropped:
    print("  warning: %s" % w[:200])
for v in r.get("values", []):
    d = v.get("dist") or {}
    spread = " (n=%d, min %.0f, p50 %.0f, p95 %.0f, max %.0f)" % (
        d["count"], d["min"], d["p50"], d["p95"], d["max"]) if d else ""
    flag = " [flagged: %s]" % v["flag"][:40] if v.get("flag") else ""
    x = v["value"] if isinstance(v.get("value"), (int, float)) else v.get("raw")
    print("  %s %s %s [%s]%s%s" % (v["stat"], "%.1f" % x if isinstance(x, (int, float)) else x,
                                   v.get("unit", ""), v.get("qual"), spread, flag))
for m in r.get("missing", []):
    print("  missing: %s" % m.get("why"))
P
}
rc=0
IFS=';' read -r -a qs <<< "${QUERIES:-load iter=0:5;load iter=32:37}"
for q in "${qs[@]}"; do
  region=${q%% *}
  scope=${q#* }
  name=${region}_${scope//[=:]/_}
  ws=$out/ws_$name
  rm -rf "$ws"
  planned=$("$argus" --json -W "$ws" plan "$out/spec.json" --region "$K/$region" \
    --signals async_latency --scope "$scope" | python3 -c '
import json, sys
print(json.load(sys.stdin)["runs"])' 2>&1)
  t0=$(date +%s%N)
  "$argus" --json -W "$ws" observe "$out/spec.json" --region "$K/$region" \
    --signals async_latency --scope "$scope" > "$out/$name.json" 2> "$out/$name.err"
  r=$?
  t1=$(date +%s%N)
  echo "async_fastcu: $region $scope: planned runs $planned, observe rc $r, wall $(( (t1 - t0) / 1000000 )) ms"
  summarize "$out/$name.json"
  [ $r -le 1 ] || rc=1
done
exit $rc
