#!/bin/sh
# pydeps.sh — the Python packages Argus's tests need beyond Debian's: triton==3.6.0, for the
# Triton tests (tests/triton; a 188 MB wheel, downloaded once). They go into one virtual
# environment made from Debian's python3 with --system-site-packages (pytest comes from
# python3-pytest, which scripts/deps.sh installs); Debian 12's python3 refuses pip installs
# outside one (PEP 668).
#
#   sh scripts/pydeps.sh            installs what is missing; quiet and idempotent (nothing
#                                   is downloaded when the environment is complete); exit 1
#                                   saying why when pip fails (no network)
#   sh scripts/pydeps.sh --python   prints the environment's python when it is complete,
#                                   else exits 1 (the tests then skip, exit 77)
#
# The environment: $ARGUS_PYENV, default ${XDG_CACHE_HOME:-$HOME/.cache}/argus/pyenv, shared
# by every checkout and build. ARGUS_WHEELS=DIR installs from the wheels in DIR, without
# network (pip --no-index --find-links DIR). ARGUS_PYDEPS=0 skips the install (the Triton
# tests are then skipped).
set -eu
TRITON=3.6.0
env_dir=${ARGUS_PYENV:-${XDG_CACHE_HOME:-$HOME/.cache}/argus/pyenv}
py=/usr/bin/python3

complete() {
  [ -x "$env_dir/bin/python" ] || return 1
  for d in "$env_dir"/lib/python3*/site-packages/triton-$TRITON.dist-info; do
    [ -d "$d" ] && return 0
  done
  return 1
}

if [ "${1:-}" = --python ]; then
  complete || exit 1
  echo "$env_dir/bin/python"
  exit 0
fi
[ "$#" -eq 0 ] || { echo "usage: pydeps.sh [--python]" >&2; exit 2; }
if [ "${ARGUS_PYDEPS:-1}" = 0 ]; then
  echo "pydeps: ARGUS_PYDEPS=0: triton==$TRITON not installed; the Triton tests will be skipped"
  exit 0
fi
if complete; then
  echo "pydeps: triton $TRITON present in $env_dir"
  exit 0
fi
"$py" -c "import venv, pytest" 2>/dev/null || {
  echo "pydeps: Debian's python3-venv and python3-pytest are needed first (scripts/deps.sh)" >&2
  exit 1; }
mkdir -p "$env_dir"
log="$env_dir/pip.log"
[ -x "$env_dir/bin/python" ] || "$py" -m venv --system-site-packages "$env_dir"
if [ -n "${ARGUS_WHEELS:-}" ]; then
  src="--no-index --find-links $ARGUS_WHEELS"
  where="the wheels in $ARGUS_WHEELS"
else
  src="--retries 2 --timeout 30"
  where="PyPI"
fi
echo "pydeps: installing triton==$TRITON from $where into $env_dir (once; about 190 MB)"
# shellcheck disable=SC2086 # $src is a list of options
if ! "$env_dir/bin/python" -m pip install -q --disable-pip-version-check $src \
     "triton==$TRITON" >"$log" 2>&1; then
  tail -5 "$log" >&2
  echo "pydeps: error: pip could not install triton==$TRITON from $where (no network?; the" \
       "whole log: $log). Retry with network, or set ARGUS_WHEELS=DIR (a directory holding" \
       "the wheel), or ARGUS_PYDEPS=0 to go on without it (the Triton tests are then" \
       "skipped)" >&2
  exit 1
fi
complete || { echo "pydeps: error: pip ran but triton $TRITON is not in $env_dir" >&2; exit 1; }
echo "pydeps: triton $TRITON installed in $env_dir"
