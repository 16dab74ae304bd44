#!/bin/sh
# test_harness_doc.sh — follows docs/harness.md literally: every ```sh block
# of the page, in order, in one shell, in an empty directory (ARGUS and
# ARGUS_BUILD point at this checkout and build). Compile-only: the harness
# and the production cubin must be built and `argus regions` must read the
# spec; nothing runs on a GPU. Exit 77 when nvcc is missing.
#   test_harness_doc.sh SOURCE_DIR BUILD_DIR
set -eu
src=$1
bld=$2
cuda=${CUDA:-/usr/local/cuda}
if [ ! -x "$cuda/bin/nvcc" ]; then
  echo "no nvcc at $cuda/bin/nvcc: skipped"
  exit 77
fi
if [ -n "${ARGUS_SANITIZED:-}" ]; then
  echo "a sanitized build: the page's commands link libargus_host without the sanitizer runtime; the plain build runs this test: skipped"
  exit 77
fi
if [ ! -f "$bld/src/collect/libargus_host.a" ]; then
  echo "no $bld/src/collect/libargus_host.a: build argus first" >&2
  exit 1
fi
work=$(mktemp -d /tmp/argus-harness-doc-XXXXXX)
trap 'rm -rf "$work"' EXIT
# the page's sh blocks, as written
awk '/^```sh$/ {on = 1; next} /^```/ {on = 0} on {print}' "$src/docs/harness.md" > "$work/page.sh"
nblocks=$(grep -c '^```sh$' "$src/docs/harness.md")
if [ "$nblocks" -lt 5 ]; then
  echo "docs/harness.md has $nblocks sh blocks; expected the setup, kernel, harness, spec, build and check" >&2
  exit 1
fi
cd "$work"
ARGUS=$src ARGUS_BUILD=$bld CUDA=$cuda sh -eu "$work/page.sh" > "$work/out.txt" 2>&1 || {
  echo "a command of docs/harness.md failed:" >&2
  cat "$work/out.txt" >&2
  exit 1
}
cat "$work/out.txt"
for f in scale/scale.cubin scale/harness scale/spec.json; do
  if [ ! -s "$work/$f" ]; then
    echo "docs/harness.md did not make $f" >&2
    exit 1
  fi
done
# the page's claim about what argus regions prints
grep -q '^scale<4>  id 0x[0-9a-f]*  (kernel _Z5scaleILi4EEvPffi)$' "$work/out.txt" || {
  echo "argus regions did not print the demangled kernel the page shows" >&2
  exit 1
}
grep -q '^  body  id 0x' "$work/out.txt" || {
  echo "argus regions did not list the region 'body'" >&2
  exit 1
}
# the harness links libargus_host (its symbols are in the program)
nm "$work/scale/harness" | grep -q ' T ag_host_open$' || {
  echo "the harness does not contain libargus_host" >&2
  exit 1
}
echo "docs/harness.md: built as written"
