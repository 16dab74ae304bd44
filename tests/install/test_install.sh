#!/bin/sh
# test_install.sh — `cmake --install` into a temporary prefix, then a client
# of the API and a harness built outside the tree against it, with
# pkg-config and with find_package(Argus); the client runs (CPU only: a tile
# check and a workspace), the harness is only linked (it needs a GPU).
#   test_install.sh BUILD_DIR SOURCE_DIR
set -eu
bld=$1 src=$2
if [ -n "${ARGUS_SANITIZED:-}" ]; then
  echo "a sanitized build: its libargus.so needs the ASan runtime loaded first; the plain build runs this test: skipped"
  exit 77
fi
work=$(mktemp -d /tmp/argus-install-XXXXXX)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$bld" --prefix "$prefix" > "$work/install.log" 2>&1 || {
  cat "$work/install.log"; echo "cmake --install failed"; exit 1; }
for f in bin/argus lib/libargus.so lib/libargus.so.1 include/argus/argus.h \
         lib/pkgconfig/argus.pc lib/cmake/Argus/ArgusConfig.cmake \
         lib/cmake/Argus/ArgusConfigVersion.cmake; do
  [ -e "$prefix/$f" ] || { echo "not installed: $f"; exit 1; }
done
if [ ! -e "$prefix/lib/libargus_host.a" ]; then
  echo "no libargus_host (Argus built without the CUDA toolkit): skipped"
  exit 77
fi
for f in bin/argus-worker include/argus/host.h include/argus/region.cuh lib/pkgconfig/argus-host.pc; do
  [ -e "$prefix/$f" ] || { echo "not installed: $f"; exit 1; }
done
"$prefix/bin/argus" version > /dev/null || { echo "the installed argus does not run"; exit 1; }
cp "$src/tests/install/client.c" "$src/tests/install/harness.c" "$work/"
cat > "$work/ok.tile" <<'TILE'
@threads(32)
def k(A: Tensor(32, f32)):
    T = A[i] -> (i,)
    x = A[threadIdx.x]
    assert tag(x) == (threadIdx.x,)
TILE
# the installed tree is self-contained: nothing may point into the build or
# the source tree
if grep -rl -e "$bld" -e "$src/include" "$prefix/lib/pkgconfig" "$prefix/lib/cmake"; then
  echo "an installed package file names the build or source tree"; exit 1
fi
run_client() { # how
  out=$(LD_LIBRARY_PATH="$prefix/lib" "$work/$1/client" "$work/ok.tile" "$work/ws-$1") || {
    echo "the $1 client failed"; exit 1; }
  [ "$out" = "verdict 0
refs []" ] || { echo "the $1 client printed: $out"; exit 1; }
  nm "$work/$1/harness" | grep -q ' T ag_host_open$' || {
    echo "the $1 harness does not contain libargus_host"; exit 1; }
}
# pkg-config
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
mkdir "$work/pc"
cc -std=c11 -o "$work/pc/client" "$work/client.c" $(pkg-config --cflags --libs argus)
cc -std=c11 -o "$work/pc/harness" "$work/harness.c" $(pkg-config --cflags --libs argus-host)
run_client pc
# find_package(Argus)
cp "$src/tests/install/CMakeLists.txt.in" "$work/CMakeLists.txt"
cmake -S "$work" -B "$work/cm" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" > "$work/cm.log" 2>&1 &&
  cmake --build "$work/cm" >> "$work/cm.log" 2>&1 || { cat "$work/cm.log"; echo "find_package build failed"; exit 1; }
run_client cm
# the package refuses what it does not have
cat >> "$work/CMakeLists.txt" <<'CM'
find_package(Argus 9.0 QUIET)
if(Argus_FOUND)
  message(FATAL_ERROR "find_package(Argus 9.0) found version ${Argus_VERSION}")
endif()
CM
cmake -S "$work" -B "$work/cm2" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" > "$work/cm2.log" 2>&1 || {
  cat "$work/cm2.log"; echo "find_package(Argus 9.0) was not refused"; exit 1; }
# the installed argus compiles a spec's CUDA source with the installed
# headers (not the source tree's): a poisoned installed region.cuh must fail it
if [ -x "${ARGUS_NVCC:-/usr/local/cuda/bin/nvcc}" ] || command -v nvcc > /dev/null; then
  mkdir "$work/k"
  cat > "$work/k/k.cu" <<'CU'
#include "argus/region.cuh"
__global__ void k(float *x) {
  ARGUS_BEGIN(body);
  x[threadIdx.x] *= 2.0f;
  ARGUS_END(body);
}
CU
  echo '{"name": "k", "module": {"cuda": "k.cu"}, "run": ["./none"]}' > "$work/k/spec.json"
  ARGUS_PTX_CACHE=0 "$prefix/bin/argus" regions "$work/k/spec.json" > "$work/k/out" 2>&1 || {
    cat "$work/k/out"; echo "the installed argus cannot compile a spec's CUDA source"; exit 1; }
  grep -q '^  body  id 0x' "$work/k/out" || { cat "$work/k/out"; echo "no region 'body'"; exit 1; }
  echo '#error "the installed region.cuh"' >> "$prefix/include/argus/region.cuh"
  if ARGUS_PTX_CACHE=0 "$prefix/bin/argus" regions "$work/k/spec.json" > "$work/k/out2" 2>&1 ||
     ! grep -q 'the installed region.cuh' "$work/k/out2"; then
    cat "$work/k/out2"; echo "the installed argus did not compile with the installed headers"; exit 1
  fi
fi
echo "installed into a temporary prefix; a client and a harness built with pkg-config and find_package"
