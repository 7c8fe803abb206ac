#!/bin/sh
# Run the posenc test suite: the unit tests of lib/ ($BUILD/test_lib), the
# API tests ($BUILD/test_api), then the HTTP tests against the real server
# ($BUILD/test_http, which starts $BUILD/posenc-server itself), then
# libposenc installed and used as a C program would (tests/libposenc), the
# model-directory tests (tests/models/test_models.py, same server), /diagnose
# on real-code subjects (tests/diagnose_real/run.py), the Python client's
# (clients/python/tests/run.py: installed into a temporary venv, against the
# same server), and last the group lists of the test programs
# (tests/check_lists.sh, which reads the runs' logs). A test binary that is
# not built is skipped, except test_http.
#
# Each binary ends with a line "... N passed, M failed"; this script adds
# them up and prints one last line, exactly "N passed, M failed" (what CI
# reads). A binary that crashes or exits non-zero without reporting a
# failure counts as one failure. Exit status: 0 only when nothing failed.
#
#   BUILD=build tests/run.sh          (default BUILD=build)
#   VALGRIND=1 tests/run.sh           unit/API tests under valgrind, and
#                                     test_http runs the server under it
#   QUICK=1 HTTP_GROUPS="a b" tests/run.sh
#                                     the quick tier (make check): unit,
#                                     API, and those HTTP groups only
set -u

BUILD=${BUILD:-build}
VALGRIND=${VALGRIND:-0}
QUICK=${QUICK:-0}
HTTP_GROUPS=${HTTP_GROUPS:-}
POSENC_SERVER=${POSENC_SERVER:-$BUILD/posenc-server}
export POSENC_SERVER VALGRIND

total_passed=0
total_failed=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/posenc-run.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

# run NAME COMMAND... : stream the output, then add up its summary line.
run() {
    name=$1
    shift
    echo "== $name"
    { "$@" 2>&1; echo $? >"$tmp/$name.rc"; } | tee "$tmp/$name.log"
    rc=$(cat "$tmp/$name.rc" 2>/dev/null || echo 127)
    summary=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$tmp/$name.log" | tail -n 1)
    # the number before "passed," and the one before "failed"
    p=$(printf '%s\n' "$summary" | awk '{for (i = 2; i <= NF; i++) if ($i == "passed,") print $(i-1)}')
    f=$(printf '%s\n' "$summary" | awk '{for (i = 2; i <= NF; i++) if ($i ~ /^failed/) print $(i-1)}')
    p=${p:-0}
    f=${f:-0}
    if [ -z "$summary" ]; then
        echo "FAIL $name: no \"N passed, M failed\" line (exit status $rc)"
        f=$((f + 1))
    elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        if [ "$rc" -gt 128 ]; then
            echo "FAIL $name: killed by signal $((rc - 128))"
        else
            echo "FAIL $name: exit status $rc with no failed check (crash or valgrind error?)"
        fi
        f=$((f + 1))
    fi
    total_passed=$((total_passed + p))
    total_failed=$((total_failed + f))
}

vg=""
if [ "$VALGRIND" != 0 ] && [ -n "$VALGRIND" ]; then
    vg="valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
        --show-leak-kinds=definite,indirect --quiet"
fi

for t in test_lib test_api; do
    if [ -x "$BUILD/$t" ]; then
        # shellcheck disable=SC2086
        run "$t" $vg "$BUILD/$t"
    else
        echo "== $t: $BUILD/$t not built, skipped"
    fi
done

if [ -x "$BUILD/test_http" ]; then
    # shellcheck disable=SC2086
    run test_http "$BUILD/test_http" $HTTP_GROUPS
else
    echo "FAIL test_http: $BUILD/test_http not built"
    total_failed=$((total_failed + 1))
fi

# The quick tier (make check) stops here.
if [ "$QUICK" != 0 ]; then
    echo "$total_passed passed, $total_failed failed"
    [ "$total_failed" -eq 0 ]
    exit
fi

# libposenc as a C user adopts it: installed into a temporary prefix, the
# example built with pkg-config alone, its output checked.
run libposenc tests/libposenc/run.sh "$BUILD"

# Model directories (tests/models): checkpoints written and references
# computed with numpy, checked against the real server over HTTP.
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
    # Under valgrind each server is one slow single-threaded process: two
    # shards of the groups at once use both cores (about half the time).
    shards=""
    [ -n "$vg" ] && shards="--jobs=2"
    # shellcheck disable=SC2086
    run test_models env BUILD="$BUILD" /usr/bin/python3 tests/models/test_models.py $shards
    # /diagnose on subjects restated from real implementations
    run diagnose_real env BUILD="$BUILD" /usr/bin/python3 tests/diagnose_real/run.py
else
    echo "FAIL test_models: needs /usr/bin/python3 with numpy (tools/install-deps.sh test)"
    total_failed=$((total_failed + 1))
fi

# The Python client (clients/python), installed offline into a temporary
# venv and tested against the real server.
if /usr/bin/python3 -c 'import numpy, ensurepip, setuptools, wheel' 2>/dev/null; then
    run test_pyclient env BUILD="$BUILD" /usr/bin/python3 clients/python/tests/run.py
else
    echo "FAIL test_pyclient: needs /usr/bin/python3 with numpy, venv, setuptools, wheel (tools/install-deps.sh test)"
    total_failed=$((total_failed + 1))
fi

# Each program's one list of groups against its command line (--list,
# --dry NAME, an unknown name), and every listed group with at least one
# check in the runs above (their logs): no group that selects nothing.
run lists tests/check_lists.sh "$BUILD" "$tmp"

echo "$total_passed passed, $total_failed failed"
[ "$total_failed" -eq 0 ]
