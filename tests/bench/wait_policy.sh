#!/bin/sh
# tests/bench/wait_policy.sh - S1 (/encode 16x64 JSON, wrk -t2 -c16) against
# posenc started bare, with OMP_WAIT_POLICY=passive, and with libgomp's
# default spinning (GOMP_SPINCOUNT=300000: what a bare start got before the
# server set its own policy, server/omp_policy.h), side by side in one run:
# WAIT_ROUNDS rounds (3), the contenders alternating (the order rotates each
# round), WAIT_SECONDS s each (5). Prints the machine, every round and, per
# contender, the median and the worst round in req/s.
#
#   tests/bench/wait_policy.sh [build/posenc-server]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
server=${1:-$here/../../build/posenc-server}
rounds=${WAIT_ROUNDS:-3}
seconds=${WAIT_SECONDS:-5}
tmp=$(mktemp -d)
pids=""
trap 'for p in $pids; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"' EXIT INT TERM
. "$here/bench_common.sh"

command -v wrk >/dev/null 2>&1 || { echo "wait_policy: wrk missing (tools/install-deps.sh bench)" >&2; exit 1; }
[ -x "$server" ] || { echo "wait_policy: no $server (make)" >&2; exit 1; }

names="bare passive spin"
# start NAME ENV...: a server with exactly these OpenMP variables; its URL
# goes to $tmp/NAME.url.
start() {
    name=$1
    shift
    env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT "$@" "$server" --host 127.0.0.1 --port 0 \
        --threads 2 --omp-threads 2 >"$tmp/$name.out" 2>"$tmp/$name.log" &
    pids="$pids $!"
    await_listening "$name" posenc wait_policy
    printf '%-8s %s\n' "$name" "$(grep -o 'OpenMP wait policy: .*' "$tmp/$name.log")"
}

echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; $(uname -r)"
echo "server: $server"
start bare
start passive OMP_WAIT_POLICY=passive
start spin GOMP_SPINCOUNT=300000

# one NAME SECONDS: req/s of one wrk run
one() {
    wrk -t2 -c16 -d"$2"s -s "$here/encode.lua" "$(cat "$tmp/$1.url")" |
        sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p'
}
for n in $names; do one "$n" 1 >/dev/null; done

r=1
while [ $r -le "$rounds" ]; do
    line="round $r:"
    for n in $(rotated $((r - 1)) $names); do
        v=$(one "$n" "$seconds")
        echo "$v" >>"$tmp/$n.rates"
        line="$line $n $v"
    done
    echo "$line req/s"
    r=$((r + 1))
done

echo "S1 /encode 16x64 JSON, wrk -t2 -c16, $rounds rounds x $seconds s, req/s:"
for n in $names; do
    sort -n "$tmp/$n.rates" | awk -v name="$n" '{v[NR] = $1}
        END {m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
             printf "  %-8s median %9.1f  worst %9.1f\n", name, m, v[1]}'
done
