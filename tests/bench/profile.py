#!/usr/bin/python3
"""Where posenc-server spends its time on one scenario, under callgrind.

    tests/bench/profile.py [S1|S2|S3|S4] [REQUESTS]     (default S1, 2000 / 3 for S3, S4)

Starts build/posenc-server (--threads 1 --omp-threads 1) under
valgrind --tool=callgrind, sends REQUESTS copies of the scenario's body on one
keep-alive connection, stops the server and prints the top of
callgrind_annotate, exclusive (self) cost then inclusive. The profile file is
left in build/bench/callgrind.SCENARIO.out. Instruction counts, not time:
it shows where the work is, not I/O waits. Use perf instead where the machine
has hardware counters (`perf stat -e instructions true` works).
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, HERE)
import bench  # noqa: E402
import gen_bodies  # noqa: E402


def main(argv):
    name = (argv[1] if len(argv) > 1 else "S1").upper()
    key = name.lower()
    if key not in gen_bodies.SCENARIOS:
        sys.stderr.write(__doc__)
        return 2
    count = int(argv[2]) if len(argv) > 2 else (3 if key in ("s3", "s4") else 2000)
    route, _, make = gen_bodies.SCENARIOS[key]
    body = make().encode()
    out = os.path.join(bench.BUILD, "bench", "callgrind.%s.out" % name)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="posenc-profile-") as tmp:
        p = bench.Proc("posenc-callgrind",
                       ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
                        bench.SERVER, "--port", "0", "--threads", "1", "--omp-threads", "1"],
                       tmp)
        try:
            conn = bench.connect(p)
            for _ in range(count):
                st, data, _ = bench.post(conn, route, body)
                if st != 200:
                    raise RuntimeError("status %d: %s" % (st, data[:200]))
            conn.close()
        finally:
            p.stop()
    print("%s: %d requests of %d bytes to %s; profile in %s" % (name, count, len(body), route, out))
    for inclusive in ("no", "yes"):
        r = subprocess.run(["callgrind_annotate", "--inclusive=" + inclusive, "--threshold=99",
                            out], capture_output=True, text=True)
        lines = [l for l in r.stdout.splitlines() if l.strip()]
        start = next((i for i, l in enumerate(lines) if "file:function" in l), 0)
        print("\n--- %s ---" % ("inclusive" if inclusive == "yes" else "self"))
        print("\n".join(lines[max(0, start - 2):start + 26]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
