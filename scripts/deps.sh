#!/bin/sh
# deps.sh — installs the Debian 12 packages Argus needs to build and test.
# Idempotent: does nothing when everything is present. As root it runs
# apt-get; otherwise it prints the exact command to run.
set -eu
PKGS="build-essential cmake ninja-build pkg-config git python3
libsqlite3-dev libjansson-dev libssl-dev libzstd-dev libz3-dev
clang libclang-rt-14-dev"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "deps: all packages present"
  exit 0
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
