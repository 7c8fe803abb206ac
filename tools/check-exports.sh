#!/bin/sh
# check-exports.sh - every symbol libposenc.a defines for its users starts
# with pe_ (as jansson's check-exports keeps its exports to json_*), so the
# library never collides with a program's own names. Lists each global
# symbol without the prefix and exits 1 if there is one.
#
#   tools/check-exports.sh build/libposenc.a
#
# The last line is "exports: N passed, M failed" (N: symbols checked).
set -u

lib=${1:-build/libposenc.a}
[ -f "$lib" ] || { echo "check-exports: $lib not built" >&2; exit 2; }
# Defined (not U), global (upper-case type letter) symbols.
syms=$(nm -g --defined-only "$lib" | awk 'NF == 3 && $2 ~ /^[A-TV-Z]$/ { print $3 }' | sort -u)
[ -n "$syms" ] || { echo "check-exports: $lib defines no global symbol" >&2; exit 2; }
passed=0
failed=0
for s in $syms; do
    case $s in
    pe_*) passed=$((passed + 1)) ;;
    *)
        echo "FAIL check-exports: $lib exports $s (rename it pe_..., or make it static)"
        failed=$((failed + 1))
        ;;
    esac
done
echo "exports: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
