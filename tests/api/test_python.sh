#!/bin/sh
# test_python.sh — `pip install ./python` with Debian's python3 (into a
# virtual environment that sees the system's pytest; no network, no
# compiler: --no-build-isolation --no-index), then the package's pytest tests
# from outside the source tree against this build's libargus.so.
#   test_python.sh SOURCE_DIR BUILD_DIR LIBARGUS [TESTS]   TESTS: test_cpu.py (default)
# Exit 77 when Debian's python3, its venv module or pytest is missing
# (scripts/deps.sh installs them); test_gpu.py exits 77 without a GPU.
# ARGUS_PYTHON names another python3 (the GPU machine's, which holds torch;
# pytest may come through PYTHONPATH there: docs/gpu-testing.md).
set -eu
src=$1 bld=$2 lib=$3 tests=${4:-test_cpu.py}
if [ -n "${ARGUS_SANITIZED:-}" ]; then
  echo "a sanitized build: its libargus.so needs the ASan runtime loaded first; the plain build runs this test: skipped"
  exit 77
fi
py=${ARGUS_PYTHON:-/usr/bin/python3}
[ -x "$py" ] || { echo "no python3 at $py: skipped"; exit 77; }
"$py" -c "import venv, pytest" 2>/dev/null || {
  echo "python3-venv or python3-pytest is missing (scripts/deps.sh): skipped"; exit 77; }
if [ "$tests" = test_gpu.py ]; then
  why=$("$py" -c "import sys; sys.path.insert(0, '$src/python/tests'); import conftest; print(conftest.gpu_reason() or '')")
  [ -z "$why" ] || { echo "$why: skipped"; exit 77; }
fi
work=$(mktemp -d /tmp/argus-py-XXXXXX)
trap 'rm -rf "$work"' EXIT
"$py" -m venv --system-site-packages "$work/venv"
# pip builds in a copy of python/, so the source tree stays clean
cp -r "$src/python" "$work/pkg"
"$work/venv/bin/python" -m pip install -q --no-build-isolation --no-index "$work/pkg" \
  > "$work/pip.log" 2>&1 || { cat "$work/pip.log"; echo "pip install ./python failed"; exit 1; }
cd "$work"
# the installed package, not the source tree's, is the one imported
ARGUS_LIBRARY=$lib ARGUS_BUILD_DIR=$bld ARGUS_SOURCE_DIR=$src "$work/venv/bin/python" -c \
  "import argus, sys; assert argus.__file__.startswith('$work/venv'), argus.__file__"
ARGUS_LIBRARY=$lib ARGUS_BUILD_DIR=$bld ARGUS_SOURCE_DIR=$src \
  "$work/venv/bin/python" -m pytest -q -p no:cacheprovider "$src/python/tests/$tests"
