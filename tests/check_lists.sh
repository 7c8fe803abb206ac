#!/bin/sh
# check_lists.sh - every C test program walks one list of groups (the
# test_list.h beside its main) both to run and to select by name; this
# checks that from the outside, for build/test_lib, test_api and test_http:
#
#   - PROG --list names at least one group, each once;
#   - PROG --dry NAME selects exactly NAME, for every listed NAME, and
#     PROG --dry alone selects them all, in the same order;
#   - PROG --dry no-such-group is exit status 2 with a message;
#   - with LOGDIR: the full run's log (LOGDIR/PROG.log, as tests/run.sh
#     keeps it) shows every listed group with at least one check
#     ("group NAME: N checks, ..."), so selecting any group runs checks.
#
# The model tests (tests/models/test_models.py) the same way, but for --dry,
# which they do not have: --list names each group once, an unknown name is
# exit status 2, and each listed group ran checks in LOGDIR/test_models.log.
#
# Nothing is run twice: --list and --dry start no server and run no group.
# A program that is not built is skipped (tests/run.sh says so).
# The last line is "lists: N passed, M failed".
#
#   tests/check_lists.sh BUILD [LOGDIR]
set -u

BUILD=${1:-build}
LOGDIR=${2:-}
passed=0
failed=0

ok() { passed=$((passed + 1)); }
fail() {
    echo "FAIL check_lists: $*"
    failed=$((failed + 1))
}

for prog in test_lib test_api test_http; do
    bin=$BUILD/$prog
    [ -x "$bin" ] || continue
    names=$("$bin" --list) || { fail "$prog --list: exit status $?"; continue; }
    [ -n "$names" ] && ok || fail "$prog --list names no group"
    dups=$(printf '%s\n' "$names" | sort | uniq -d)
    [ -z "$dups" ] && ok || fail "$prog --list names twice: $dups"
    all=$("$bin" --dry)
    [ "$all" = "$names" ] && ok || fail "$prog --dry selects other groups than --list names"
    for name in $names; do
        got=$("$bin" --dry "$name")
        [ "$got" = "$name" ] && ok || fail "$prog --dry $name selects \"$got\""
        if [ -n "$LOGDIR" ] && [ -f "$LOGDIR/$prog.log" ]; then
            n=$(sed -n "s/^group $name: \([0-9][0-9]*\) checks.*/\1/p" "$LOGDIR/$prog.log" | tail -n 1)
            [ "${n:-0}" -gt 0 ] && ok || fail "$prog: group $name ran no check in the full run"
        fi
    done
    err=$("$bin" --dry no-such-group 2>&1 >/dev/null)
    rc=$?
    [ "$rc" -eq 2 ] && [ -n "$err" ] && ok ||
        fail "$prog --dry no-such-group: exit status $rc, message \"$err\" (want 2 and a message)"
done

models=tests/models/test_models.py
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
    names=$(/usr/bin/python3 "$models" --list) || fail "$models --list: exit status $?"
    [ -n "$names" ] && ok || fail "$models --list names no group"
    dups=$(printf '%s\n' "$names" | sort | uniq -d)
    [ -z "$dups" ] && ok || fail "$models --list names twice: $dups"
    err=$(/usr/bin/python3 "$models" no-such-group 2>&1 >/dev/null)
    rc=$?
    [ "$rc" -eq 2 ] && [ -n "$err" ] && ok ||
        fail "$models no-such-group: exit status $rc, message \"$err\" (want 2 and a message)"
    if [ -n "$LOGDIR" ] && [ -f "$LOGDIR/test_models.log" ]; then
        for name in $names; do
            n=$(sed -n "s/^group $name: \([0-9][0-9]*\) checks.*/\1/p" "$LOGDIR/test_models.log" | tail -n 1)
            [ "${n:-0}" -gt 0 ] && ok || fail "$models: group $name ran no check in the full run"
        done
    fi
fi

echo "lists: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
