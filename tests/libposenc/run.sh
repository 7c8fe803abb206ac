#!/bin/sh
# libposenc as a C user adopts it: `make install PREFIX=<temporary>`, then
# examples/sinusoidal_table.c compiled against the installed tree with
# `pkg-config --cflags --libs posenc` alone (no -I into the source tree),
# run, and its output checked against values computed independently:
#   - the version it prints, pkg-config's --modversion and the header's
#     PE_VERSION_STRING are one string;
#   - pe_status_name(PE_OK) is "ok";
#   - each PE[p][i] is within 1e-6 of awk's sin/cos in double
#     (angle p / 10000^(2*floor(i/2)/8), sin at even i, cos at odd i).
# Last line: "libposenc: N passed, M failed".
#
#   tests/libposenc/run.sh BUILD
set -u

BUILD=${1:-build}
passed=0
failed=0
ok() { passed=$((passed + 1)); }
fail() {
    echo "FAIL libposenc: $*"
    failed=$((failed + 1))
}
finish() {
    echo "libposenc: $passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit $?
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/posenc-install.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

if ! make --no-print-directory -s install BUILD="$BUILD" PREFIX="$tmp/prefix" >"$tmp/install.log" 2>&1; then
    cat "$tmp/install.log"
    fail "make install PREFIX=$tmp/prefix failed"
    finish
fi
for f in include/posenc.h lib/libposenc.a lib/pkgconfig/posenc.pc; do
    [ -f "$tmp/prefix/$f" ] && ok || fail "make install did not install $f"
done

export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
flags=$(pkg-config --cflags --libs posenc) || { fail "pkg-config knows no posenc"; finish; }
# A sanitized build's archive needs its runtime at link time.
san=""
nm "$tmp/prefix/lib/libposenc.a" 2>/dev/null | grep -q __asan_ && san="-fsanitize=address,undefined"
# shellcheck disable=SC2086
if ! cc -std=c11 -Wall -Wextra -Werror $san examples/sinusoidal_table.c $flags -o "$tmp/example" 2>"$tmp/cc.log"; then
    cat "$tmp/cc.log"
    fail "examples/sinusoidal_table.c does not build against the installed tree ($flags)"
    finish
fi
ok
"$tmp/example" >"$tmp/out" || fail "the example exited with status $?"

header=$(sed -n 's/^#define PE_VERSION_STRING "\(.*\)"$/\1/p' include/posenc.h)
got=$(sed -n 's/^version //p' "$tmp/out")
mod=$(pkg-config --modversion posenc)
[ -n "$header" ] && [ "$got" = "$header" ] && [ "$mod" = "$header" ] && ok ||
    fail "versions differ: pe_version() '$got', pkg-config '$mod', header '$header'"
[ "$(sed -n 's/^status //p' "$tmp/out")" = ok ] && ok || fail "pe_status_name(PE_OK) is not \"ok\""

bad=$(awk 'NF == 3 && $1 ~ /^[0-9]+$/ {
        n++
        angle = $1 / (10000 ^ (2 * int($2 / 2) / 8))
        want = ($2 % 2 == 0) ? sin(angle) : cos(angle)
        d = $3 - want
        if (d < 0) d = -d
        if (d > 1e-6) { printf "PE[%d][%d] = %s, want %.9g\n", $1, $2, $3, want; b++ }
      }
      END { if (n != 32) printf "%d values, want 32\n", n }' "$tmp/out")
[ -z "$bad" ] && ok || fail "$bad"
finish
