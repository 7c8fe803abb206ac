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
# /diagnose: per-case medians of the big subjects and the mix's median and
# 90th percentile per request (issues 19, 20)
# The same section goes to the end of the report (not for BENCH_QUICK runs,
# which never overwrite the kept results).
out=${BENCH_OUT:-$here/results}
section=$(mktemp)
trap 'rm -f "$section"' EXIT
{
    echo
    echo "## /diagnose"
    echo
    echo "tests/bench/diagnose.py --runs ${BENCH_DIAGNOSE_RUNS:-5}: wall time per request over loopback, base64 bodies; same machine and run."
    echo
    /usr/bin/python3 "$here/diagnose.py" --runs "${BENCH_DIAGNOSE_RUNS:-5}"
} | tee "$section"
if [ "${BENCH_QUICK:-0}" != 1 ] && [ -f "$out/latest.md" ]; then
    cat "$section" >>"$out/latest.md"
fi
