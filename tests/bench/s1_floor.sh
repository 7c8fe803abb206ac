#!/bin/sh
# tests/bench/s1_floor.sh - what S1's goal (posenc >= 40% of the ceiling's
# req/s) leaves for posenc's own work, measured on this harness: S1
# (/encode 16x64 JSON, make bench's body, wrk -t2 -c64) against posenc, the
# ceiling, and the ceiling burning a fixed CPU time per request
# (ceiling --work-us N) before its canned answer, side by side in one run.
#
# On two cores shared with wrk, a request's cost is not only the server's:
# wrk's own CPU per request grows when the server is slower (fewer answers
# per wake-up), so "ceiling + N us" is the throughput of a server that
# does exactly N us more than the ceiling. The default N, 30, is S1's
# number text at the libraries' rates (1,024 numbers parsed at fast_float's
# and 1,024 written at Dragonbox's ~15 ns each on the developers' machine;
# `make bench` measures both, "Number text against the libraries").
#
# FLOOR_WORK_US (30: a list, e.g. "30 45"), FLOOR_ROUNDS (3, alternating,
# the order rotating), FLOOR_SECONDS (5). Prints the machine, every round,
# and per contender the median req/s, its worst round, the server's CPU
# per request (core-us, from /proc) and the median's share of the ceiling's.
#
#   tests/bench/s1_floor.sh [build/posenc-server]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$here/../../build
server=${1:-$build/posenc-server}
ceiling=$build/bench/ceiling
works=${FLOOR_WORK_US:-30}
rounds=${FLOOR_ROUNDS:-3}
seconds=${FLOOR_SECONDS:-5}
python=/usr/bin/python3 # Debian's, with numpy (tools/install-deps.sh bench)
tmp=$(mktemp -d)
pids=""
trap 'for p in $pids; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"' EXIT INT TERM
. "$here/bench_common.sh"

for tool in wrk curl; do
    command -v $tool >/dev/null 2>&1 || { echo "s1_floor: $tool missing (tools/install-deps.sh bench)" >&2; exit 1; }
done
[ -x "$server" ] || { echo "s1_floor: no $server (make)" >&2; exit 1; }
[ -x "$ceiling" ] || { echo "s1_floor: no $ceiling (make build/bench/ceiling)" >&2; exit 1; }

# start NAME BANNER COMMAND...: runs it; its pid goes to $tmp/NAME.pid and
# its URL to $tmp/NAME.url once it prints "BANNER listening on URL".
start() {
    name=$1
    banner=$2
    shift 2
    "$@" >"$tmp/$name.out" 2>"$tmp/$name.log" &
    echo $! >"$tmp/$name.pid"
    pids="$pids $!"
    await_listening "$name" "$banner" s1_floor
}

echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; $(uname -r)"
"$python" "$here/gen_bodies.py" "$tmp" s1 >/dev/null
start posenc posenc env -u OMP_WAIT_POLICY "$server" --host 127.0.0.1 --port 0 \
    --threads 2 --omp-threads 2
curl -sf -H 'Content-Type: application/json' --data-binary @"$tmp/s1.json" \
    "$(cat "$tmp/posenc.url")/encode" -o "$tmp/s1.resp.json"
names="posenc ceiling"
start ceiling ceiling "$ceiling" --port 0 --threads 2 --body "$tmp/s1.resp.json"
for w in $works; do
    start "ceiling+$w" ceiling "$ceiling" --port 0 --threads 2 --body "$tmp/s1.resp.json" \
        --work-us "$w"
    names="$names ceiling+$w"
done

ticks=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$(cat "$tmp/$1.pid")/stat"; }
# one NAME SECONDS: a wrk run; appends req/s to NAME.rates and the server's
# core-us per request to NAME.cpu, prints req/s
one() {
    t0=$(cpu_ticks "$1")
    wrk -t2 -c64 -d"$2"s -s "$here/encode.lua" "$(cat "$tmp/$1.url")" -- "$tmp/s1.json" >"$tmp/wrk.out"
    t1=$(cpu_ticks "$1")
    awk -v t="$((t1 - t0))" -v hz="$ticks" -v rates="$tmp/$1.rates" -v cpu="$tmp/$1.cpu" '
        /requests in/ {n = $1}
        /^Requests\/sec/ {r = $2}
        END {print r >> rates; if (n > 0) print t * 1e6 / hz / n >> cpu; print r}' "$tmp/wrk.out"
}
for n in $names; do one "$n" 1 >/dev/null; done
for n in $names; do rm -f "$tmp/$n.rates" "$tmp/$n.cpu"; done

r=1
while [ $r -le "$rounds" ]; do
    line="round $r:"
    for n in $(rotated $((r - 1)) $names); do
        line="$line $n $(one "$n" "$seconds")"
    done
    echo "$line req/s"
    r=$((r + 1))
done

median() { sort -n "$1" | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
base=$(median "$tmp/ceiling.rates")
echo "S1 /encode 16x64 JSON (make bench's body), wrk -t2 -c64, $rounds rounds x $seconds s:"
for n in $names; do
    printf '  %-12s median %9.1f req/s  worst %9.1f  server %6.1f core-us/req  %5.1f%% of the ceiling\n' \
        "$n" "$(median "$tmp/$n.rates")" "$(sort -n "$tmp/$n.rates" | head -n 1)" \
        "$(median "$tmp/$n.cpu")" "$(echo "$(median "$tmp/$n.rates") $base" | awk '{print 100 * $1 / $2}')"
done
