#!/bin/sh
# test_triton.sh — the Triton tests on the CPU (tests/triton/test_triton.py; docs/triton.md):
#   test_triton.sh SOURCE_DIR ARGUS PTXAS [PYTEST ARGS...]
# with the python of scripts/pydeps.sh's environment (triton 3.6.0, Debian's pytest), the
# source tree's python/ on PYTHONPATH and no libargus (ARGUS_LIBRARY names none: markers need
# none), a fresh Triton cache. PTXAS: the CUDA toolkit's, or - for Triton's own. Exit 77 when
# that environment is missing (scripts/deps.sh makes it; ARGUS_PYDEPS=0 skipped it).
set -eu
src=$1 argus=$2 ptxas=$3
shift 3
[ "$ptxas" != - ] || ptxas=
py=$(sh "$src/scripts/pydeps.sh" --python) || {
  echo "no Python environment with triton 3.6.0 (sh scripts/pydeps.sh makes it): skipped"
  exit 77; }
work=$(mktemp -d /tmp/argus-triton-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
ARGUS=$argus ARGUS_PTXAS=$ptxas ARGUS_SOURCE_DIR=$src ARGUS_LIBRARY=$work/no-libargus.so \
  TRITON_CACHE_DIR=$work/triton-cache TRITON_HOME=$work PYTHONDONTWRITEBYTECODE=1 \
  PYTHONPATH="$src/python:$src/tests/triton" \
  "$py" -m pytest -q -p no:cacheprovider "$src/tests/triton/test_triton.py" "$@"
