# tests/bench/bench_common.sh - shell helpers of the side-by-side scripts
# (wait_policy.sh, s1_floor.sh); sourced, with $tmp set to their scratch
# directory.

# await_listening NAME BANNER SCRIPT: waits up to 10 s for
# "BANNER listening on URL" in $tmp/NAME.out (the server's stdout), then
# writes URL to $tmp/NAME.url; exits the script when the server never says
# it (its stderr, $tmp/NAME.log, is shown).
await_listening() {
    i=0
    until grep -q "^$2 listening on" "$tmp/$1.out" 2>/dev/null; do
        i=$((i + 1))
        [ $i -lt 100 ] || { echo "$3: $1 did not start" >&2; cat "$tmp/$1.log" >&2; exit 1; }
        sleep 0.1
    done
    sed -n "s/^$2 listening on \(http:[^ ]*\).*/\1/p" "$tmp/$1.out" >"$tmp/$1.url"
}

# rotated K WORD...: the words rotated left by K (mod their count), the
# order of a round's contenders.
rotated() {
    k=$1
    shift
    k=$((k % $#))
    while [ $k -gt 0 ]; do
        first=$1
        shift
        set -- "$@" "$first"
        k=$((k - 1))
    done
    echo "$@"
}
