#!/bin/sh
# tests/bench/run.sh - the posenc benchmark suite (make bench runs it after
# building). Needs build/posenc-server and build/bench/{ceiling,sgemm_bench,
# jansson_bench}, wrk, gnuplot and the peer's Python packages
# (tools/install-deps.sh bench). Knobs: see the docstring of bench.py.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
for tool in wrk /usr/bin/python3; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "bench: $tool missing (tools/install-deps.sh bench)" >&2
        exit 1
    }
done
/usr/bin/python3 "$here/bench.py" "$@"
# Sections after the report, printed and appended to results/latest.md
# (not for BENCH_QUICK runs, which never overwrite the kept results).
out=${BUILD:-build}
results=${BENCH_OUT:-$here/results}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
append() {
    tee "$scratch/section"
    if [ "${BENCH_QUICK:-0}" != 1 ] && [ -f "$results/latest.md" ]; then
        cat "$scratch/section" >>"$results/latest.md"
    fi
}
# Number text against fast_float and Dragonbox on the S1
# and S4 bodies.
/usr/bin/python3 "$here/gen_bodies.py" "$scratch" s1 s4 >/dev/null
{
    echo
    echo "## Number text against the libraries (one thread, same run)"
    echo
    for body in s1 s4; do
        "$out/bench/number_bench" "$scratch/$body.json" 51
        echo
    done
} | append
# /diagnose: per-case medians of the big subjects and the mix's median and
# 90th percentile per request
{
    echo
    echo "## /diagnose"
    echo
    echo "tests/bench/diagnose.py --runs ${BENCH_DIAGNOSE_RUNS:-5}: wall time per request over loopback, base64 bodies; same machine and run."
    echo
    /usr/bin/python3 "$here/diagnose.py" --runs "${BENCH_DIAGNOSE_RUNS:-5}"
} | append
