#!/bin/sh
# pack.sh — builds Argus for the GPU machine and puts what it needs into
# <checkout>/.carry/gpu (git-ignored), to be sent with the device tool:
#
#   sh scripts/gpu/pack.sh [CHECKOUT]      # CHECKOUT: where `run` sends from
#                                          # (default /work/main)
#   ARGUS_PACK_NAME=NAME sh scripts/gpu/pack.sh ...   # a pack of its own:
#       staged in /tmp/argus-NAME, put in CHECKOUT/.carry/NAME, started as
#       .carry/NAME/scripts/gpu/run.sh (default NAME: gpu), so several
#       worktrees can pack for the same checkout without overwriting each other
#   then, on the device:  bash .carry/gpu/scripts/gpu/run.sh
#   (the device tool call names ".carry" in carry).
#
# The build happens here (Debian 12), in /tmp/argus-gpu/{src,build}: the GPU
# machine mounts the carried copy at the same absolute path, so CTest files,
# baked-in paths (the include directory for nvcc) and test data resolve
# there unchanged. Debian's libjansson and libcrypto travel along in lib/
# (Debian 12 binaries run on the GPU machine's glibc 2.39). Object files are
# left behind; what travels is sources, executables, PTX/cubins and CTest
# files (a few MB).
set -eu
REPO=$(cd "$(dirname "$0")/../.." && pwd)
DEST_ROOT=${1:-/work/main}
NAME=${ARGUS_PACK_NAME:-gpu}
case "$NAME" in
  ''|*[!a-z0-9-]*) echo "pack: ARGUS_PACK_NAME '$NAME' must be lowercase letters, digits and '-'" >&2; exit 2 ;;
esac
STAGE=/tmp/argus-$NAME
mkdir -p "$STAGE/src" "$STAGE/lib"
# sources: tracked and untracked-not-ignored files of this checkout; tar keeps
# their mtimes, so unchanged files do not rebuild
(cd "$REPO" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) |
  (cd "$STAGE/src" && tar -xf -)
if [ ! -f "$STAGE/build/build.ninja" ]; then
  cmake -S "$STAGE/src" -B "$STAGE/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
ninja -C "$STAGE/build" -j 2
for l in libjansson.so.4 libcrypto.so.3 libsqlite3.so.0 libzstd.so.1 libz3.so.4; do
  p=$(ldconfig -p | awk -v l="$l" '$1 == l && /x86-64/ {print $NF; exit}')
  [ -n "$p" ] && cp -L "$p" "$STAGE/lib/$l"
done
DEST="$DEST_ROOT/.carry/$NAME"
rm -rf "$DEST"
mkdir -p "$DEST"
(cd "$STAGE" && tar --exclude='CMakeFiles' --exclude='*.o' --exclude='*.a' --exclude='*.d' \
  --exclude='fuzz_*' \
  --exclude='.ninja_*' --exclude='Testing' --exclude='.argus' -cf - src build lib) |
  (cd "$DEST" && tar -xf -)
# what travels is capped at 64 MiB: no debug info (the fuzzers stay behind too)
find "$DEST/build" "$DEST/lib" -type f \( -perm -u+x -o -name '*.so*' \) \
  -exec strip --strip-debug {} + 2>/dev/null || true
# the commit packed (with -dirty when tracked files differ from it): the
# copy of the sources is no checkout, so run.sh exports it as ARGUS_COMMIT
# for the benchmarks' RESULTS.md sections
c=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$REPO" diff --quiet HEAD 2>/dev/null || c="$c-dirty"
echo "$c" > "$DEST/COMMIT"
# run.sh is started as .carry/NAME/scripts/gpu/run.sh
mkdir -p "$DEST/scripts/gpu"
cp "$REPO/scripts/gpu/run.sh" "$DEST/scripts/gpu/run.sh"
grep -qx '/.carry/' "$DEST_ROOT/.gitignore" 2>/dev/null ||
  grep -qx '/.carry/' "$DEST_ROOT/.git/info/exclude" 2>/dev/null ||
  echo '/.carry/' >> "$(git -C "$DEST_ROOT" rev-parse --git-common-dir)/info/exclude"
du -sh "$DEST" | awk '{print "pack: " $1 " in " $2}'
