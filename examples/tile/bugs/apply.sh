#!/bin/sh
# apply.sh MUT [OUT] — writes the buggy variant that a .mut file describes.
#
# A .mut file names its base example ("base: gemm.tile") and lists edits:
# a run of "- " lines is a block of consecutive lines of the base (matched
# with indentation ignored; it must occur exactly once), the "+ " lines that
# follow replace it, indented like the block's first line. Lines starting
# with '#' are comments. Prints the name of the file it wrote.
set -eu
mut=$1
dir=$(dirname "$mut")
base=$(sed -n 's/^base: *//p' "$mut")
[ -n "$base" ] || { echo "apply.sh: $mut names no 'base:'" >&2; exit 1; }
out=${2:-${TMPDIR:-/tmp}/$(basename "$mut" .mut).tile}
awk -v mut="$mut" '
  function strip(s) { sub(/^[ \t]+/, "", s); return s }
  BEGIN {
    nb = 0; prev = ""
    while ((getline l < mut) > 0) {
      if (l ~ /^- /) {
        if (prev != "-") { nb++; nold[nb] = 0; nnew[nb] = 0 }
        old[nb, ++nold[nb]] = strip(substr(l, 3)); prev = "-"
      } else if (l ~ /^\+ /) {
        new[nb, ++nnew[nb]] = strip(substr(l, 3)); prev = "+"
      } else prev = ""
    }
  }
  { src[++n] = $0 }
  END {
    for (b = 1; b <= nb; b++) {
      hits = 0
      for (i = 1; i + nold[b] - 1 <= n; i++) {
        ok = 1
        for (j = 1; j <= nold[b] && ok; j++) if (strip(src[i + j - 1]) != old[b, j]) ok = 0
        if (ok) { hits++; at[b] = i }
      }
      if (hits != 1) {
        printf "apply.sh: the block starting \"%s\" matches %d places (needs exactly 1)\n", old[b, 1], hits > "/dev/stderr"
        exit 1
      }
    }
    for (i = 1; i <= n; i++) {
      done = 0
      for (b = 1; b <= nb; b++) if (at[b] == i) {
        ind = src[i]; body = strip(ind); ind = substr(ind, 1, length(ind) - length(body))
        for (j = 1; j <= nnew[b]; j++) print ind new[b, j]
        i += nold[b] - 1; done = 1
      }
      if (!done) print src[i]
    }
  }
' "$dir/../$base" > "$out"
echo "$out"
