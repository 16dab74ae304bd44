#!/bin/sh
# test_api_symbols.sh — libargus.so exports exactly the symbols of
# src/api/argus.map, argus.h declares each of them (and no other argus_
# function), and the soname carries ARGUS_API_VERSION.
#   test_api_symbols.sh LIBRARY MAP HEADER
set -eu
lib=$1 map=$2 hdr=$3
work=$(mktemp -d /tmp/argus-syms-XXXXXX)
trap 'rm -rf "$work"' EXIT
# the map's list: the lines "    name;" between "global:" and "local:"
awk '/global:/ {on = 1; next} /local:/ {on = 0} on {gsub(/[ ;]/, ""); if ($0 != "") print}' "$map" | sort > "$work/listed"
# what the library exports (defined dynamic symbols; the version node dropped)
nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | grep -v '^ARGUS_1$' | sort > "$work/exported"
# what the header declares: every "argus_name(" at the start of a declaration
grep -o '^[a-z_ ]*[ *]argus_[a-z_]*(' "$hdr" | sed 's/.*\(argus_[a-z_]*\)(/\1/' | sort -u > "$work/declared"
fail=0
if ! diff -u "$work/listed" "$work/exported" > "$work/d1"; then
  echo "libargus exports other symbols than src/api/argus.map lists (- listed, + exported):"
  cat "$work/d1"
  fail=1
fi
if ! diff -u "$work/listed" "$work/declared" > "$work/d2"; then
  echo "argus.h declares other functions than src/api/argus.map lists (- listed, + declared):"
  cat "$work/d2"
  fail=1
fi
n=$(wc -l < "$work/listed")
if [ "$n" -lt 20 ]; then
  echo "only $n symbols listed: the map was not read"
  fail=1
fi
api=$(sed -n 's/^#define ARGUS_API_VERSION \([0-9]*\).*/\1/p' "$hdr")
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" {print $2}')
if [ "$soname" != "libargus.so.$api" ]; then
  echo "soname '$soname', expected 'libargus.so.$api' (ARGUS_API_VERSION)"
  fail=1
fi
[ "$fail" -eq 0 ] && echo "libargus.so ($soname): $n symbols, as listed and declared"
exit "$fail"
