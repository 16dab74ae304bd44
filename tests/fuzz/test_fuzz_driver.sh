#!/bin/sh
# test_fuzz_driver.sh SRC — fuzz_check.py must flag every way `argus check`
# can break its contract, and pass a run that keeps it. A stand-in argus
# (a shell script) misbehaves as each input says: a signal, a sanitizer
# report, an exit code outside 0/1/2, a silent exit 2, a CPU hang; the
# well-behaved inputs exit 0, 1 and 2 (with a diagnostic). The generator is
# checked too: the same seed gives the same text, two seeds differ.
set -u
src=$1
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
cat > "$t/argus" <<'ARGUS'
#!/bin/sh
for f; do :; done
case $(cat "$f") in
  *CRASH*) kill -SEGV $$ ;;
  *ASAN*) echo "==1==ERROR: AddressSanitizer: heap-use-after-free" >&2; exit 1 ;;
  *UBSAN*) echo "x.c:1:2: runtime error: signed integer overflow" >&2; exit 1 ;;
  *EXIT3*) exit 3 ;;
  *SILENT*) exit 2 ;;
  *SPIN*) while :; do :; done ;;
  *GOOD1*) exit 1 ;;
  *BAD2*) echo "f.tile:1:1: error: unknown name 'x'" >&2; exit 2 ;;
  *) exit 0 ;;
esac
ARGUS
chmod +x "$t/argus"
mkdir "$t/bad" "$t/good"
for k in CRASH ASAN UBSAN EXIT3 SILENT SPIN; do echo "# $k" > "$t/bad/$k.tile"; done
echo "# fine" > "$t/good/ok.tile"
echo "# GOOD1" > "$t/good/violated.tile"
printf '# BAD2\n# expect: exit 2\n# expect: output unknown name\n' > "$t/good/malformed.tile"
fail=0
py="python3 $src/tests/fuzz/fuzz_check.py --argus $t/argus --timeout 1"
if ! $py --replay "$t/good" > "$t/good.out"; then
  echo "FAIL: a run that keeps the contract was flagged:"; cat "$t/good.out"; fail=1
fi
for k in CRASH ASAN UBSAN EXIT3 SILENT SPIN; do
  if $py --replay "$t/bad/$k.tile" > "$t/$k.out"; then
    echo "FAIL: '$k' was not flagged:"; cat "$t/$k.out"; fail=1
  else
    echo "ok: '$k' flagged: $(grep -m1 FAIL "$t/$k.out")"
  fi
done
# an expectation that does not hold is a failure too
printf '# fine\n# expect: exit 1\n' > "$t/wrongexit.tile"
if $py --replay "$t/wrongexit.tile" > "$t/we.out"; then
  echo "FAIL: a wrong exit code passed its '# expect: exit'"; fail=1
fi
# the generator: reproducible, and seeds matter
g="python3 $src/tests/fuzz/tilegen.py"
$g 7 > "$t/a"; $g 7 > "$t/b"; $g 8 > "$t/c"
cmp -s "$t/a" "$t/b" || { echo "FAIL: seed 7 gave two different programs"; fail=1; }
cmp -s "$t/a" "$t/c" && { echo "FAIL: seeds 7 and 8 gave the same program"; fail=1; }
# a fuzz run over the stand-in records its failures in --out
echo "CRASH" > "$t/crash-all"
mkdir "$t/o"
cat > "$t/argus2" <<'ARGUS'
#!/bin/sh
kill -SEGV $$
ARGUS
chmod +x "$t/argus2"
if python3 "$src/tests/fuzz/fuzz_check.py" --argus "$t/argus2" --seeds 0:3 --jobs 1 --out "$t/o" > "$t/run.out"; then
  echo "FAIL: a fuzz run whose every input crashed passed"; fail=1
fi
[ "$(ls "$t/o" | grep -c '\.tile$')" = 3 ] || { echo "FAIL: the 3 crashing inputs were not saved:"; ls "$t/o"; cat "$t/run.out"; fail=1; }
[ $fail = 0 ] && echo "test_fuzz_driver: all checks passed"
exit $fail
