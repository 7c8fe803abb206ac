#!/usr/bin/python3
"""Score /diagnose on subjects restated from real implementations
(cases.py): start build/posenc-server on a free loopback port, send every
case, judge each answer, print one line per case and the figures:

  right / partly right / missed / misleading / wrong, of N

A case whose `known` says today's /diagnose gets it wrong is reported but
does not fail the run; every other case must be right, and a known case
that has become right is reported so that its note can go. The last line
is "N passed, M failed" (tests/run.sh adds it up).

  BUILD=build /usr/bin/python3 tests/diagnose_real/run.py [--verbose]
"""
import collections
import json
import os
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))

import cases  # noqa: E402
import cases_ports  # noqa: E402
from harness import Server  # noqa: E402


def model_args(directory):
    """--model name=dir for the checkpoints the cases claim (cases_ports.models)."""
    args = []
    for name, ckpt in cases_ports.models().items():
        d = os.path.join(directory, name)
        ckpt.write(d)
        args += ["--model", f"{name}={d}"]
    return args


def main():
    verbose = "--verbose" in sys.argv
    tally = collections.Counter()
    passed = failed = 0
    times = []
    tmp = tempfile.TemporaryDirectory()
    with tmp, Server(model_args(tmp.name)) as srv:
        for case in cases.all_cases():
            t0 = time.perf_counter()
            st, answer = srv.request("/diagnose", case.body)
            times.append(time.perf_counter() - t0)
            if st != 200:
                judged = f"refused ({st})"
            else:
                judged = case.judge(answer)
            tally[judged] += 1
            found = [f["code"] for f in answer.get("findings", [])] if st == 200 else answer
            ok = judged == "right"
            if ok and case.known:
                print(f"NOW RIGHT {case.name}: drop its known note ({case.known})")
            if ok or case.known:
                passed += 1
            else:
                failed += 1
                print(f"FAIL: {case.name} ({case.source}): {judged}; want {case.verdict} "
                      f"{sorted(case.codes)}, got {answer.get('verdict')} {found}")
                if st == 200 and case.check and case.check(answer):
                    print(f"  evidence: {case.check(answer)}")
            if verbose or (not ok and case.known):
                print(f"  {judged:12s} {case.name}: {answer.get('verdict')} {found}"
                      + (f"  [known: {case.known}]" if case.known and not ok else ""))
        status = srv.stop()
    n = sum(tally.values())
    print("restated from real code: " + ", ".join(f"{v} {k}" for k, v in tally.most_common())
          + f" of {n}; right {100.0 * tally['right'] / n:.1f}%")
    times.sort()
    print(f"time per request: median {1e3 * times[len(times) // 2]:.1f} ms, "
          f"90th percentile {1e3 * times[int(0.9 * (len(times) - 1))]:.1f} ms")
    if status != 0:
        failed += 1
        print(f"FAIL: server exit status {status}")
    print(f"diagnose_real: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
