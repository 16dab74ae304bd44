#!/bin/sh
# deps.sh — installs the Debian 12 packages Argus needs to build and test,
# then the Python test packages (scripts/pydeps.sh: triton, into a virtual
# environment). Idempotent: does nothing when everything is present. As root
# it runs apt-get; otherwise it prints the exact command to run.
set -eu
here=$(dirname "$0")
PKGS="build-essential cmake ninja-build pkg-config git python3
python3-venv python3-pip python3-setuptools python3-pytest
libsqlite3-dev libjansson-dev libssl-dev libzstd-dev libz3-dev
clang libclang-rt-14-dev"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# The CUDA toolkit is not a Debian package here: check it, say what to do.
cuda_home="${ARGUS_CUDA_HOME:-/usr/local/cuda}"
cuda_ok=1
for f in include/cuda.h bin/ptxas bin/nvcc; do
  [ -e "$cuda_home/$f" ] || cuda_ok=0
done
if [ "$cuda_ok" -eq 0 ]; then
  echo "deps: no CUDA toolkit at $cuda_home (needs include/cuda.h, bin/ptxas," \
       "bin/nvcc): install CUDA 12.x or 13.x (https://developer.nvidia.com/cuda-downloads)," \
       "or set ARGUS_CUDA_HOME and configure with -DARGUS_CUDA_HOME=DIR; without it only the" \
       "CPU parts build (README, 'Prerequisites')" >&2
fi
if [ -z "$missing" ]; then
  if [ "$cuda_ok" -eq 1 ]; then
    echo "deps: all packages present, CUDA toolkit at $cuda_home"
  else
    echo "deps: all packages present; the CUDA toolkit is missing (see above)"
  fi
  exec sh "$here/pydeps.sh"
fi
echo "deps: missing:$missing"
cmd="apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" -ne 0 ]; then
  echo "deps: not root; run: sudo apt-get update && sudo $cmd" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
$cmd
exec sh "$here/pydeps.sh"
