#!/usr/bin/python3
"""Two posenc-server binaries side by side in one run: S1-S4 of make bench.

  tests/bench/before_after.py BEFORE_BINARY AFTER_BINARY [S1 S2 S3 S4]

Both servers run at the same time on free loopback ports with the flags and
the environment make bench gives posenc; each round drives BEFORE then
AFTER with the same wrk settings and bodies as bench.py (the order flips
every round), and the report gives each one's median over the rounds, its
worst round and the ratio after / before (req/s; > 1 is faster). Knobs are
bench.py's: BENCH_ROUNDS (3), BENCH_SECONDS (5). Used to show that a
restructuring lost no speed: build the older revision into its
own directory (git worktree + make) and pass both binaries.
"""
import os
import platform
import statistics
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
import gen_bodies  # noqa: E402


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    binaries = {"before": argv[1], "after": argv[2]}
    wanted = [a.upper() for a in argv[3:]] or ["S1", "S2", "S3", "S4"]
    specs = [s for s in bench.scenarios_spec() if s["name"] in wanted]
    tmp = tempfile.mkdtemp(prefix="posenc-before-after-")
    bodies = {}
    for s in specs:
        bodies[s["name"]] = os.path.join(tmp, s["body"] + ".json")
        gen_bodies.write(bodies[s["name"]], gen_bodies.SCENARIOS[s["body"]][2]())
    procs = {}
    try:
        for name, path in binaries.items():
            procs[name] = bench.Proc(name, [path, "--port", "0"] + bench.POSENC_ARGS, tmp,
                                     env=bench.POSENC_ENV)
        print("# before/after on %s, %d cores, load %s" %
              (cpu_name(), os.cpu_count(), open("/proc/loadavg").read().split()[0]))
        print("| scenario | before req/s (worst) | after req/s (worst) | after / before |")
        print("| --- | --- | --- | --- |")
        for s in specs:
            route, script = gen_bodies.SCENARIOS[s["body"]][:2]
            threads, conns = s["wrk"]
            rps = {"before": [], "after": []}
            for r in range(bench.ROUNDS):
                order = ["before", "after"] if r % 2 == 0 else ["after", "before"]
                for name in order:
                    res = bench.wrk(procs[name].url + route, script, bodies[s["name"]], threads,
                                    conns, s["seconds"])
                    if res["errors"]:
                        raise RuntimeError("%s %s: %d errors" % (name, s["name"], res["errors"]))
                    rps[name].append(res["rps"])
            med = {k: statistics.median(v) for k, v in rps.items()}
            print("| %s %s | %.1f (%.1f) | %.1f (%.1f) | %.2f |" %
                  (s["name"], s["what"], med["before"], min(rps["before"]), med["after"],
                   min(rps["after"]), med["after"] / med["before"]))
            sys.stdout.flush()
    finally:
        for p in procs.values():
            p.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
