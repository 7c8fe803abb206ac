#!/usr/bin/python3
"""posenc benchmark driver (run it through tests/bench/run.sh or make bench).

Starts posenc-server, the FastAPI + numpy peer and one libmicrohttpd
"ceiling" per scenario on free loopback ports, drives them with wrk (the Lua
scripts of this folder) in alternating rounds, measures the numeric-core
baselines (OpenBLAS sgemm, jansson parse/build/dump) in the same rounds, the
server's peak memory, and a scaling sweep; prints a markdown report and
writes it to tests/bench/results/latest.md, with results/sweep.tsv and
results/sweep.png. Every number comes from this run.

Environment (all optional):
  BUILD                 build directory (build)
  BENCH_ROUNDS          rounds per scenario (3)
  BENCH_SECONDS         wrk seconds per contender per round (5; S4 uses 8/5 of it)
  BENCH_SWEEP           0 skips the scaling sweep (1)
  BENCH_THREADS         posenc --threads and ceiling threads (2)
  BENCH_OMP_THREADS     posenc --omp-threads and sgemm threads (2)
  BENCH_PEER_DIR        the peer (../shared/peers/fastapi_numpy from the repo)
  BENCH_PEER_WORKERS    peer --workers (2)
  BENCH_OUT             results directory (tests/bench/results)
  BENCH_KEEP_TMP        1 keeps the temporary directory of bodies and logs
  BENCH_QUICK           1: a smoke test of the suite itself (1 round of 1 s, no
                        sweep; S5 in full), written to $BUILD/bench-quick unless
                        BENCH_OUT says otherwise; its numbers are not a benchmark
"""
import base64
import datetime
import socket
import threading
import http.client
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, HERE)
import gen_bodies  # noqa: E402

BUILD = os.path.join(REPO, os.environ.get("BUILD", "build"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "5"))
SWEEP = os.environ.get("BENCH_SWEEP", "1") != "0"
THREADS = int(os.environ.get("BENCH_THREADS", "2"))
OMP_THREADS = int(os.environ.get("BENCH_OMP_THREADS", "2"))
PEER_DIR = os.environ.get("BENCH_PEER_DIR",
                          os.path.join(os.path.dirname(REPO), "shared", "peers", "fastapi_numpy"))
PEER_WORKERS = int(os.environ.get("BENCH_PEER_WORKERS", "2"))
OUT = os.environ.get("BENCH_OUT", os.path.join(HERE, "results"))
KEEP_TMP = os.environ.get("BENCH_KEEP_TMP", "0") == "1"
if os.environ.get("BENCH_QUICK", "0") == "1":  # never overwrites the kept results
    ROUNDS, SECONDS, SWEEP = 1, 1.0, False
    OUT = os.environ.get("BENCH_OUT", os.path.join(BUILD, "bench-quick"))
S5_REQUESTS, S5_CONNS, S5_IDLE_SECONDS, S5_LIMIT_BYTES = 20, 2, 10.0, 32 << 20

SERVER = os.path.join(BUILD, "posenc-server")
CEILING = os.path.join(BUILD, "bench", "ceiling")
SGEMM = os.path.join(BUILD, "bench", "sgemm_bench")
JANSSON = os.path.join(BUILD, "bench", "jansson_bench")
POSENC_ARGS = ["--threads", str(THREADS), "--omp-threads", str(OMP_THREADS)]
# posenc runs as `make run` and the container image run it: OpenMP threads
# wait passively between parallel regions unless BENCH is told otherwise.
POSENC_ENV = dict(os.environ, OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "passive"))
S3_SHAPE = (2048, 512, 1536)  # [tokens x d_model] . [d_model x 3*heads*head_dim], fused QKV


def log(msg):
    sys.stderr.write("[bench %s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


# --------------------------------------------------------------------------
# processes

class Proc:
    """A server we started: its own session, stdout and stderr in files."""

    def __init__(self, name, cmd, tmp, cwd=None, env=None):
        self.name = name
        self.out_path = os.path.join(tmp, name + ".stdout")
        self.err_path = os.path.join(tmp, name + ".stderr")
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.p = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                      cwd=cwd, env=env, start_new_session=True)
        self.host, self.port = self._wait_listening()
        self.url = "http://%s:%d" % (self.host, self.port)

    def _wait_listening(self, timeout=60):
        deadline = time.time() + timeout
        pat = re.compile(r"listening on http://([^\s:]+|\[[^\]]+\]):(\d+)")
        while time.time() < deadline:
            with open(self.out_path, errors="replace") as f:
                m = pat.search(f.read())
            if m:
                return m.group(1), int(m.group(2))
            if self.p.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        with open(self.err_path, errors="replace") as f:
            tail = f.read()[-2000:]
        raise RuntimeError("%s did not start (exit %s):\n%s" % (self.name, self.p.returncode, tail))

    @property
    def pid(self):
        return self.p.pid

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(15)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        try:  # workers the peer forked, in the session we created for it
            os.killpg(self.p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def proc_status_kb(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def reset_hwm(pid):
    """Resets VmHWM to the current RSS (Linux clear_refs 5); False if refused."""
    try:
        with open("/proc/%d/clear_refs" % pid, "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def post(conn, path, body):
    """POST body on a keep-alive connection; returns (status, response bytes, seconds)."""
    t0 = time.perf_counter()
    conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    return r.status, data, time.perf_counter() - t0


def connect(proc):
    return http.client.HTTPConnection(proc.host, proc.port, timeout=300)


# --------------------------------------------------------------------------
# wrk

def wrk(url, script, body_file, threads, conns, seconds):
    cmd = ["wrk", "-t%d" % threads, "-c%d" % conns, "-d%ds" % max(1, round(seconds)),
           "--latency", "--timeout", "60s", "-s", os.path.join(HERE, script), url,
           "--", body_file]
    env = dict(os.environ, POSENC_BENCH_JSON="1")
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    m = re.search(r"^POSENC_BENCH (\{.*\})$", p.stdout, re.M)
    if p.returncode != 0 or not m:
        raise RuntimeError("wrk failed (%s):\n%s\n%s" % (" ".join(cmd), p.stdout, p.stderr))
    r = json.loads(m.group(1))
    r["rps"] = r["requests"] / (r["duration_us"] / 1e6)
    r["errors"] = sum(r[k] for k in r if k.startswith("err_"))
    # Time per request: at one connection the mean latency (wrk's duration
    # cuts the last, unfinished request off, which skews 1/rate for slow
    # requests); with several connections the inverse rate.
    if conns == 1 and r["requests"] > 0:
        r["ms_per_req"] = r["lat_mean_us"] / 1e3
    else:
        r["ms_per_req"] = 1000.0 / r["rps"] if r["rps"] > 0 else float("inf")
    return r


def sgemm(shapes, seconds=1.0):
    cmd = [SGEMM, "--threads", str(OMP_THREADS), "--seconds", str(seconds)]
    cmd += ["%dx%dx%d" % s for s in shapes]
    env = dict(os.environ, OMP_NUM_THREADS=str(OMP_THREADS))
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
    res = {}
    for line in out.splitlines():
        f = line.split()
        res[(int(f[1]), int(f[2]), int(f[3]))] = {"ms": float(f[4]), "min_ms": float(f[5]),
                                                  "gflops": float(f[6]), "reps": int(f[7])}
    return res


def jansson(req_file, resp_file, seconds=3.0):
    out = subprocess.run([JANSSON, "--seconds", str(seconds), req_file, resp_file],
                         capture_output=True, text=True, check=True).stdout.split()
    return {"parse_ms": float(out[1]), "build_ms": float(out[2]), "dump_ms": float(out[3]),
            "ms": float(out[4]), "reps": int(out[5]), "dump_bytes": int(out[6])}


def machine_facts():
    """CPU model, OpenBLAS build and the kernels it chose, memory bandwidth
    (memcpy) and loopback TCP bandwidth (both from sgemm_bench --machine)."""
    facts = {"cpu": "?", "openblas_core": "?", "openblas_config": "?", "membw_gbps": None,
             "loopback_gbps": None}
    try:
        with open("/proc/cpuinfo") as f:
            facts["cpu"] = re.search(r"model name\s*:\s*(.*)", f.read()).group(1)
    except (OSError, AttributeError):
        pass
    out = subprocess.run([SGEMM, "--machine"], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        key, _, value = line.partition(" ")
        if key in ("membw", "loopback"):
            facts[key + "_gbps"] = float(value) or None
        elif key in facts:
            facts[key] = value
    return facts


def s5_memory(tmp, body_file):
    """S5: a fresh posenc, warmed by one S1 request; RSS idle; then
    S5_REQUESTS S3 requests over S5_CONNS connections at once; then
    S5_IDLE_SECONDS of idling. Resident memory must come back to within
    S5_LIMIT_BYTES of the idle figure."""
    with open(body_file["s3"], "rb") as f:
        body = f.read()
    with open(body_file["s1"], "rb") as f:
        warm = f.read()
    p = Proc("posenc-s5", [SERVER, "--port", "0"] + POSENC_ARGS, tmp, env=POSENC_ENV)
    try:
        conn = connect(p)
        if post(conn, "/encode", warm)[0] != 200:
            raise RuntimeError("S5 warm-up request failed")
        time.sleep(1.0)
        idle_kb = proc_status_kb(p.pid, "VmRSS")
        reset_hwm(p.pid)
        statuses, times = [], []

        def client(n):
            c = connect(p)
            for _ in range(n):
                st, _, sec = post(c, "/apply", body)
                statuses.append(st)
                times.append(sec)
            c.close()

        t0 = time.time()
        per = [S5_REQUESTS // S5_CONNS + (i < S5_REQUESTS % S5_CONNS) for i in range(S5_CONNS)]
        threads = [threading.Thread(target=client, args=(n,)) for n in per]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        burst_s = time.time() - t0
        end_kb = proc_status_kb(p.pid, "VmRSS")
        peak_kb = proc_status_kb(p.pid, "VmHWM")
        time.sleep(S5_IDLE_SECONDS)
        after_kb = proc_status_kb(p.pid, "VmRSS")
        conn.close()
    finally:
        p.stop()
    if any(st != 200 for st in statuses):
        raise RuntimeError("S5: statuses %s" % sorted(set(statuses)))
    return {"idle_kb": idle_kb, "end_kb": end_kb, "peak_kb": peak_kb, "after_kb": after_kb,
            "burst_s": burst_s, "ms_per_req": median(times) * 1e3,
            "excess_bytes": (after_kb - idle_kb) * 1024}


# --------------------------------------------------------------------------
# response checks

def arrays_of(doc):
    """The numeric arrays of a response, by name, as float32 numpy arrays."""
    res = {}
    for key in ("encoded", "q", "k", "v", "bias", "scores"):
        if key not in doc:
            continue
        v = doc[key]
        if isinstance(v, str):
            a = np.frombuffer(base64.b64decode(v), dtype="<f4")
            res[key] = a.reshape(doc.get(key + "_shape", [-1]))
        else:
            res[key] = np.asarray(v, dtype=np.float32)
    return res


def compare(a_bytes, b_bytes, values=True):
    """Whether two responses carry the same arrays with the same shapes, and
    (values=True) the largest |a - b| over them."""
    a, b = arrays_of(json.loads(a_bytes)), arrays_of(json.loads(b_bytes))
    if not a or set(a) != set(b) or any(a[k].shape != b[k].shape for k in a):
        return "arrays or shapes differ: %s vs %s" % (
            {k: v.shape for k, v in a.items()}, {k: v.shape for k, v in b.items()})
    shapes = ", ".join("%s %s" % (k, "x".join(map(str, a[k].shape))) for k in sorted(a))
    if not values:
        return "same arrays (%s); values not compared: the default models' weight " \
               "generators differ by design" % shapes
    worst = max(float(np.max(np.abs(a[k].astype(np.float64) - b[k]))) for k in a)
    return "same arrays (%s), max abs diff %.3g" % (shapes, worst)


# --------------------------------------------------------------------------
# the run

def median(xs):
    return statistics.median(xs) if xs else float("nan")


def fmt_bytes(n):
    for unit, div in (("MB", 1e6), ("kB", 1e3)):
        if n >= div:
            return "%.1f %s" % (n / div, unit)
    return "%d B" % n


def scenarios_spec():
    s4_seconds = SECONDS * 8 / 5
    return [
        # name, description, body, wrk threads/conns, seconds, contenders
        # "floats": the float32 arrays in and out of the arithmetic, and the
        # projection (M, K, N) for /apply; the floors below count them.
        {"name": "S1", "what": "/encode 16x64 JSON, keep-alive", "body": "s1",
         "wrk": (2, 64), "seconds": SECONDS, "floats": 2 * 16 * 64, "gemm": None},
        {"name": "S2", "what": "/apply default model, 128 tokens, JSON in/out", "body": "s2",
         "wrk": (2, 4), "seconds": SECONDS, "floats": 128 * 512 * 4, "gemm": (128, 512, 1536)},
        {"name": "S3", "what": "/apply default model, 2048 tokens, base64 in/out", "body": "s3",
         "wrk": (1, 1), "seconds": SECONDS, "floats": 2048 * 512 * 4, "gemm": S3_SHAPE},
        {"name": "S4", "what": "/encode 512x1024 JSON (~5 MB each way)", "body": "s4",
         "wrk": (1, 2), "seconds": s4_seconds, "floats": 2 * 512 * 1024, "gemm": None},
    ]


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return float("nan")


def run(tmp):
    global SERVER, CEILING, SGEMM, JANSSON
    t_start = time.time()
    load_start = loadavg()
    if load_start > 0.5:
        log("load average %.2f before starting: other work on this machine will skew the "
            "numbers" % load_start)
    for exe in (SERVER, CEILING, SGEMM, JANSSON):
        if not os.access(exe, os.X_OK):
            raise RuntimeError("missing %s: run make bench (or make all %s)" % (exe, exe))
    # Run copies, so that a rebuild during the run cannot swap binaries under it.
    bindir = os.path.join(tmp, "bin")
    os.makedirs(bindir)
    SERVER, CEILING, SGEMM, JANSSON = (shutil.copy2(exe, bindir)
                                       for exe in (SERVER, CEILING, SGEMM, JANSSON))
    bodies = os.path.join(tmp, "bodies")
    os.makedirs(bodies)
    log("writing request bodies to %s" % bodies)
    body_file = {}
    for name, (route, script, make) in gen_bodies.SCENARIOS.items():
        body_file[name] = os.path.join(bodies, name + ".json")
        gen_bodies.write(body_file[name], make())

    log("machine facts: CPU, OpenBLAS kernels, memory and loopback bandwidth")
    facts = machine_facts()
    log("  %s; OpenBLAS %s; memcpy %.1f GB/s; loopback %.2f GB/s"
        % (facts["cpu"], facts["openblas_core"], facts["membw_gbps"] or 0,
           facts["loopback_gbps"] or 0))
    procs = []
    try:
        posenc = Proc("posenc", [SERVER, "--port", "0"] + POSENC_ARGS, tmp, env=POSENC_ENV)
        procs.append(posenc)
        log("posenc %s (pid %d) %s" % (posenc.url, posenc.pid, " ".join(POSENC_ARGS)))
        peer = None
        if os.path.isfile(os.path.join(PEER_DIR, "run.sh")):
            peer = Proc("peer", [os.path.join(PEER_DIR, "run.sh"), "--port", "0",
                                 "--workers", str(PEER_WORKERS)], tmp, cwd=PEER_DIR)
            procs.append(peer)
            log("peer %s (pid %d, %d workers)" % (peer.url, peer.pid, PEER_WORKERS))
        else:
            log("no peer at %s: peer columns stay empty" % PEER_DIR)

        # One reference response per scenario: the ceiling's canned body, the
        # response size, and the posenc/peer agreement check.
        scen = scenarios_spec()
        c_pos, c_peer = connect(posenc), connect(peer) if peer else None
        for s in scen:
            route = gen_bodies.SCENARIOS[s["body"]][0]
            with open(body_file[s["body"]], "rb") as f:
                body = f.read()
            st, data, _ = post(c_pos, route, body)
            if st != 200:
                raise RuntimeError("posenc answered %d to %s: %s" % (st, s["name"], data[:300]))
            s["req_bytes"], s["resp_bytes"] = len(body), len(data)
            s["resp_file"] = os.path.join(bodies, s["body"] + ".resp.json")
            with open(s["resp_file"], "wb") as f:
                f.write(data)
            s["agree"] = None
            if c_peer:
                pst, pdata, _ = post(c_peer, route, body)
                s["peer_status"] = pst
                if pst == 200:
                    s["agree"] = compare(data, pdata, values=(route == "/encode"))
                    s["peer_resp_bytes"] = len(pdata)
            s["ceiling"] = Proc("ceiling-" + s["name"], [CEILING, "--port", "0", "--threads",
                                                         str(THREADS), "--body", s["resp_file"]], tmp)
            procs.append(s["ceiling"])
        c_pos.close()
        if c_peer:
            c_peer.close()

        results = {}  # (scenario, contender) -> list of wrk dicts (or baseline dicts)
        hwm = {}
        for s in scen:
            name, (wt, wc) = s["name"], s["wrk"]
            script = gen_bodies.SCENARIOS[s["body"]][1]
            contenders = [("posenc", posenc, wt, wc), ("ceiling", s["ceiling"], wt, wc)]
            if peer:
                contenders.insert(1, ("peer", peer, wt, wc))
            if name == "S4":
                contenders.append(("posenc c=1", posenc, 1, 1))
            log("%s: %s; wrk -t%d -c%d, %d rounds x %d s" % (name, s["what"], wt, wc, ROUNDS,
                                                            round(s["seconds"])))
            for label, p, t, c in contenders:  # warm-up, discarded
                wrk(p.url, script, body_file[s["body"]], t, c, 1)
            base_rss = proc_status_kb(posenc.pid, "VmRSS")
            hwm_ok = reset_hwm(posenc.pid)
            for r in range(ROUNDS):
                order = contenders[r % len(contenders):] + contenders[:r % len(contenders)]
                for label, p, t, c in order:
                    res = wrk(p.url, script, body_file[s["body"]], t, c, s["seconds"])
                    results.setdefault((name, label), []).append(res)
                    log("  round %d %-10s %9.1f req/s  p50 %8.2f ms  errors %d"
                        % (r + 1, label, res["rps"], res["lat_p50_us"] / 1e3, res["errors"]))
                if name == "S3":
                    res = sgemm([S3_SHAPE], seconds=2.0)[S3_SHAPE]
                    results.setdefault((name, "sgemm"), []).append(res)
                    log("  round %d sgemm %dx%dx%d %.2f ms" % ((r + 1,) + S3_SHAPE + (res["ms"],)))
                if name == "S4":
                    res = jansson(body_file["s4"], s["resp_file"])
                    results.setdefault((name, "jansson"), []).append(res)
                    log("  round %d jansson parse+build+dump %.1f ms" % (r + 1, res["ms"]))
            if hwm_ok:
                hwm[name] = {"base_kb": base_rss, "hwm_kb": proc_status_kb(posenc.pid, "VmHWM")}

        log("S4 peak memory: a fresh posenc per trial, one request in flight")
        mem = s4_memory(tmp, body_file)
        log("S5: %d S3 requests over %d connections, then %g s idle"
            % (S5_REQUESTS, S5_CONNS, S5_IDLE_SECONDS))
        s5 = s5_memory(tmp, body_file)
        log("  idle %s, peak %s, after the burst %s, %g s later %s"
            % (fmt_bytes(s5["idle_kb"] * 1024), fmt_bytes(s5["peak_kb"] * 1024),
               fmt_bytes(s5["end_kb"] * 1024), S5_IDLE_SECONDS, fmt_bytes(s5["after_kb"] * 1024)))
        sweep = run_sweep(tmp) if SWEEP else []
    finally:
        for p in procs:
            p.stop()
    return {"scen": scen, "results": results, "hwm": hwm, "mem": mem, "sweep": sweep,
            "facts": facts, "s5": s5,
            "elapsed": time.time() - t_start, "load": (load_start, loadavg())}


def fresh_request_peak(tmp, name, route, body, warm, reps=1, min_seconds=0.0):
    """Starts a posenc, warms it with one small request, then sends body `reps`
    times (more while under min_seconds, at most 10) on one connection.
    Returns the per-request seconds, the RSS before, the peak (VmHWM) after and
    the response size."""
    p = Proc(name, [SERVER, "--port", "0"] + POSENC_ARGS, tmp, env=POSENC_ENV)
    try:
        conn = connect(p)
        st, _, _ = post(conn, warm[0], warm[1])
        if st != 200:
            raise RuntimeError("warm-up request got %d" % st)
        base = proc_status_kb(p.pid, "VmRSS")
        reset_hwm(p.pid)
        times, t0, resp_len, peak = [], time.time(), 0, None
        while len(times) < reps or (time.time() - t0 < min_seconds and len(times) < 10):
            st, data, sec = post(conn, route, body)
            if st != 200:
                raise RuntimeError("%s: status %d: %s" % (name, st, data[:300]))
            if peak is None:  # the peak of the first request alone
                peak = proc_status_kb(p.pid, "VmHWM")
            times.append(sec)
            resp_len = len(data)
        conn.close()
        return {"times": times, "base_kb": base, "hwm_kb": peak, "resp_bytes": resp_len}
    finally:
        p.stop()


def s4_memory(tmp, body_file):
    with open(body_file["s4"], "rb") as f:
        body = f.read()
    with open(body_file["s1"], "rb") as f:
        warm = ("/encode", f.read())
    trials = []
    for i in range(3):
        r = fresh_request_peak(tmp, "posenc-mem%d" % i, "/encode", body, warm)
        r["peak_bytes"] = (r["hwm_kb"] - r["base_kb"]) * 1024
        r["io_bytes"] = len(body) + r["resp_bytes"]
        trials.append(r)
    return {"req_bytes": len(body), "resp_bytes": trials[0]["resp_bytes"],
            "peak_bytes": median([t["peak_bytes"] for t in trials]),
            "base_kb": median([t["base_kb"] for t in trials]),
            "ratio": median([t["peak_bytes"] / t["io_bytes"] for t in trials])}


def run_sweep(tmp):
    toks = [64, 128, 256, 512, 1024, 2048, 4096, 8192]
    dims = [64, 128, 256, 512, 1024, 2048, 4096]
    points = [("encode-json tokens", "/encode", t, 512) for t in toks]
    points += [("encode-json d_model", "/encode", 512, d) for d in dims]
    points += [("apply-b64 tokens", "/apply", t, 512) for t in toks]
    warm = ("/encode", b'{"shape":[16,64]}')
    log("sweep: %d points, a fresh posenc each" % len(points))
    sg = sgemm([(t, 512, 1536) for t in toks], seconds=0.5)
    rows = []
    for i, (series, route, t, d) in enumerate(points):
        seed = 100 + i
        if route == "/encode":
            body = gen_bodies.encode_json(t, d, seed).encode()
        else:
            body = gen_bodies.apply_b64(t, seed).encode()
        r = fresh_request_peak(tmp, "posenc-sweep", route, body, warm, reps=3, min_seconds=1.0)
        ms = median(r["times"]) * 1e3
        peak = (r["hwm_kb"] - r["base_kb"]) * 1024
        row = {"series": series, "route": route, "tokens": t, "d_model": d,
               "req_bytes": len(body), "resp_bytes": r["resp_bytes"], "ms": ms,
               "reps": len(r["times"]), "peak_bytes": peak,
               "sgemm_ms": sg[(t, 512, 1536)]["ms"] if route == "/apply" else None}
        rows.append(row)
        log("  %-20s %5d x %4d  %9.2f ms  peak +%s  (req %s, resp %s)"
            % (series, t, d, ms, fmt_bytes(peak), fmt_bytes(len(body)), fmt_bytes(r["resp_bytes"])))
    return rows


# --------------------------------------------------------------------------
# report

def check(ok):
    return "**met**" if ok else "**MISSED**"


def report(res):
    scen, results, mem = res["scen"], res["results"], res["mem"]

    def med(s, c, key="rps"):
        rs = results.get((s, c))
        return median([r[key] for r in rs]) if rs else None

    lines = []
    w = lines.append
    rev = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"],
                         capture_output=True, text=True).stdout.strip() or "?"
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = re.search(r"model name\s*:\s*(.*)", f.read()).group(1)
    except (OSError, AttributeError):
        pass
    w("# posenc benchmark")
    w("")
    w("Run %s, commit `%s`, %d CPUs (%s), Linux %s; took %.0f s; 1-minute load average "
      "%.2f before, %.2f after (the bench itself adds about 1-2)."
      % (datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), rev, os.cpu_count(), cpu,
         platform.release(), res["elapsed"], res["load"][0], res["load"][1]))
    w("posenc-server `%s`; peer: FastAPI + numpy, %d uvicorn workers; ceiling: libmicrohttpd, "
      "%d threads, canned posenc response. wrk: %d rounds per scenario, contenders alternating, "
      "%g s each (S4 %g s); medians over rounds. All on 127.0.0.1, sharing the same cores as wrk."
      % (" ".join(POSENC_ARGS) + " (OMP_WAIT_POLICY=" + POSENC_ENV["OMP_WAIT_POLICY"] + ")", PEER_WORKERS, THREADS, ROUNDS, SECONDS, SECONDS * 8 / 5))
    w("")
    w("## Throughput")
    w("")
    w("| scenario | contender | wrk | req/s median (min-max) | ms/req | p50 ms | p99 ms | errors |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for s in scen:
        labels = ["posenc", "peer", "ceiling"] + (["posenc c=1"] if s["name"] == "S4" else [])
        for c in labels:
            rs = results.get((s["name"], c))
            if not rs:
                continue
            rps = [r["rps"] for r in rs]
            t, cc = (1, 1) if c == "posenc c=1" else s["wrk"]
            w("| %s | %s | -t%d -c%d | %.1f (%.1f-%.1f) | %.2f | %.2f | %.2f | %d |"
              % (s["name"], c, t, cc, median(rps), min(rps), max(rps),
                 median([r["ms_per_req"] for r in rs]),
                 median([r["lat_p50_us"] for r in rs]) / 1e3,
                 median([r["lat_p99_us"] for r in rs]) / 1e3, sum(r["errors"] for r in rs)))
    w("")
    w("ms/req: mean latency at -c1, else 1000 / (req/s), the time per request at that "
      "concurrency. Errors = socket errors, timeouts and non-2xx answers (any makes the row "
      "suspect).")
    w("")
    w("| scenario | what | request | response | posenc vs peer responses |")
    w("| --- | --- | --- | --- | --- |")
    for s in scen:
        agree = s.get("agree") or "n/a"
        if s.get("peer_status", 200) != 200:
            agree = "peer status %d" % s["peer_status"]
        w("| %s | %s | %s | %s | %s |" % (s["name"], s["what"], fmt_bytes(s["req_bytes"]),
                                          fmt_bytes(s["resp_bytes"]), agree))
    w("")

    w("## Targets (ratios of medians from this run)")
    w("")
    w("| target | measured | goal | status |")
    w("| --- | --- | --- | --- |")
    targets = []

    def target(label, value, goal_text, ok, unit="x"):
        if value is None:
            w("| %s | n/a | %s | not measured |" % (label, goal_text))
            return
        shown = {"%": "%.1f%%" % (value * 100), "MiB": "%.1f MiB" % value}.get(unit,
                                                                           "%.2fx" % value)
        w("| %s | %s | %s | %s |" % (label, shown, goal_text, check(ok(value))))
        targets.append((label, value, ok(value)))

    def ratio(a, b):
        return a / b if a and b else None

    # The benchmark's targets; the S2 and S4 ceilings answer
    # posenc's own response, so they are same-size ceilings.
    target("S1 posenc / peer req/s", ratio(med("S1", "posenc"), med("S1", "peer")), ">= 20x",
           lambda v: v >= 20)
    target("S1 posenc / ceiling req/s", ratio(med("S1", "posenc"), med("S1", "ceiling")), ">= 40%",
           lambda v: v >= 0.40, unit="%")
    target("S2 posenc / same-size ceiling req/s", ratio(med("S2", "posenc"), med("S2", "ceiling")),
           ">= 25%", lambda v: v >= 0.25, unit="%")
    target("S2 posenc / peer req/s", ratio(med("S2", "posenc"), med("S2", "peer")), ">= 15x",
           lambda v: v >= 15)
    sg = med("S3", "sgemm", "ms")
    target("S3 posenc ms/req (c=1) / sgemm %dx%d.%dx%d ms" % (S3_SHAPE[0], S3_SHAPE[1],
                                                               S3_SHAPE[1], S3_SHAPE[2]),
           ratio(med("S3", "posenc", "ms_per_req"), sg), "<= 1.5x", lambda v: v <= 1.5)
    target("S4 jansson parse+build+dump ms / posenc ms/req (c=1)",
           ratio(med("S4", "jansson", "ms"), med("S4", "posenc c=1", "ms_per_req")), ">= 20x",
           lambda v: v >= 20)
    target("S4 posenc / peer req/s", ratio(med("S4", "posenc"), med("S4", "peer")), ">= 10x",
           lambda v: v >= 10)
    target("S4 posenc / same-size ceiling req/s (no goal)",
           ratio(med("S4", "posenc"), med("S4", "ceiling")), "-", lambda v: True, unit="%")
    target("S4 peak memory per in-flight request / (request + response bytes)",
           mem["ratio"], "<= 3x", lambda v: v <= 3)
    s5 = res.get("s5")
    target("S5 RSS %g s after a burst of %d S3 requests (-c%d) minus idle RSS, MiB"
           % (S5_IDLE_SECONDS, S5_REQUESTS, S5_CONNS),
           s5["excess_bytes"] / 2**20 if s5 else None, "<= %d MiB" % (S5_LIMIT_BYTES >> 20),
           lambda v: v * 2**20 <= S5_LIMIT_BYTES, unit="MiB")
    w("")

    w("## Baselines measured in the same rounds")
    w("")
    w("| baseline | median | detail |")
    w("| --- | --- | --- |")
    rs = results.get(("S3", "sgemm"), [])
    if rs:
        w("| OpenBLAS sgemm [%d x %d] . [%d x %d], %d threads | %.2f ms | %.1f GFLOP/s |"
          % (S3_SHAPE[0], S3_SHAPE[1], S3_SHAPE[1], S3_SHAPE[2], OMP_THREADS, sg,
             median([r["gflops"] for r in rs])))
    rs = results.get(("S4", "jansson"), [])
    if rs:
        w("| jansson 2.14 on the S4 documents, 1 thread | %.1f ms | parse %.1f + build %.1f + "
          "dump %.1f ms (dump at %%.9g: %s) |"
          % (median([r["ms"] for r in rs]), median([r["parse_ms"] for r in rs]),
             median([r["build_ms"] for r in rs]), median([r["dump_ms"] for r in rs]),
             fmt_bytes(rs[0]["dump_bytes"])))
    w("")

    facts = res.get("facts") or {}
    w("## Machine")
    w("")
    w("| fact | value |")
    w("| --- | --- |")
    w("| CPU | %s, %d CPUs |" % (facts.get("cpu", "?"), os.cpu_count()))
    w("| BLAS | %s |" % facts.get("openblas_config", "?"))
    w("| BLAS kernels (openblas_get_corename) | %s |" % facts.get("openblas_core", "?"))
    rs = results.get(("S3", "sgemm"), [])
    if rs:
        w("| sgemm %dx%d.%dx%d, %d threads | %.1f GFLOP/s |"
          % (S3_SHAPE[0], S3_SHAPE[1], S3_SHAPE[1], S3_SHAPE[2], OMP_THREADS,
             median([r["gflops"] for r in rs])))
    if facts.get("membw_gbps"):
        w("| memory bandwidth (memcpy 256 MiB, 1 thread, read + write) | %.1f GB/s |"
          % facts["membw_gbps"])
    if facts.get("loopback_gbps"):
        w("| loopback TCP, one connection | %.2f GB/s |" % facts["loopback_gbps"])
    w("")
    w("## Floors from first principles")
    w("")
    w("Per request, what no server can skip: the request and response text and the float32 "
      "arrays in and out of the arithmetic touched once at the memory bandwidth, the text "
      "carried once over loopback, and for /apply the projection's flops at the sgemm rate "
      "measured for S3. posenc ms/req is from the throughput table (1000 / req/s at the "
      "scenario's concurrency, so with %d CPUs working at once; S4 at -c1). Both bandwidths "
      "are single-stream: a ceiling with several connections can beat the floor."
      % os.cpu_count())
    w("")
    w("| scenario | text in + out | floats | memory ms | loopback ms | sgemm ms | floor ms "
      "| ceiling ms/req | posenc ms/req | posenc / floor |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    bw, lo = facts.get("membw_gbps"), facts.get("loopback_gbps")
    rate = med("S3", "sgemm", "gflops")
    for sc in scen:
        if not bw or not lo:
            w("| %s | bandwidths not measured | | | | | | | | |" % sc["name"])
            continue
        text = sc["req_bytes"] + sc["resp_bytes"]
        floats = 4 * sc["floats"]
        mem_ms = (text + floats) / (bw * 1e9) * 1e3
        lo_ms = text / (lo * 1e9) * 1e3
        sg_ms = None
        if sc["gemm"] and rate:
            m, k, n = sc["gemm"]
            sg_ms = 2.0 * m * k * n / (rate * 1e9) * 1e3
        floor = mem_ms + lo_ms + (sg_ms or 0.0)
        meas = med(sc["name"], "posenc c=1" if sc["name"] == "S4" else "posenc", "ms_per_req")
        ceil_ms = med(sc["name"], "ceiling", "ms_per_req")
        w("| %s | %s | %s | %.3f | %.3f | %s | %.3f | %s | %s | %s |"
          % (sc["name"], fmt_bytes(text), fmt_bytes(floats), mem_ms, lo_ms,
             "%.2f" % sg_ms if sg_ms else "-", floor, "%.3f" % ceil_ms if ceil_ms else "-",
             "%.3f" % meas if meas else "-", "%.1fx" % (meas / floor) if meas else "-"))
    w("")
    w("## Memory")
    w("")
    s5 = res.get("s5")
    if s5:
        w("S5: a fresh posenc, warmed by one S1 request: idle RSS **%s**; %d S3 requests over "
          "%d connections at once (%.1f s, median %.1f ms each): peak %s, RSS at the end %s; "
          "%g s later **%s** (%+.1f MiB from idle; the limit is %d MiB)."
          % (fmt_bytes(s5["idle_kb"] * 1024), S5_REQUESTS, S5_CONNS, s5["burst_s"],
             s5["ms_per_req"], fmt_bytes(s5["peak_kb"] * 1024), fmt_bytes(s5["end_kb"] * 1024),
             S5_IDLE_SECONDS, fmt_bytes(s5["after_kb"] * 1024), s5["excess_bytes"] / 2**20,
             S5_LIMIT_BYTES >> 20))
        w("")

    w("S4 alone: a fresh posenc, warmed by one S1 request, then one S4 request; peak = VmHWM "
      "after it minus VmRSS before it (median of 3 servers): **%s** for %s in + %s out "
      "= **%.2fx** the request + response bytes (idle RSS %s)."
      % (fmt_bytes(mem["peak_bytes"]), fmt_bytes(mem["req_bytes"]), fmt_bytes(mem["resp_bytes"]),
         mem["ratio"], fmt_bytes(mem["base_kb"] * 1024)))
    if res["hwm"]:
        w("")
        w("Under the wrk rounds (the long-running posenc; VmHWM reset before each scenario):")
        w("")
        w("| scenario | RSS before | peak RSS | growth | in flight (posenc) |")
        w("| --- | --- | --- | --- | --- |")
        for s in scen:
            h = res["hwm"].get(s["name"])
            if h:
                w("| %s | %s | %s | %s | up to %d |"
                  % (s["name"], fmt_bytes(h["base_kb"] * 1024), fmt_bytes(h["hwm_kb"] * 1024),
                     fmt_bytes((h["hwm_kb"] - h["base_kb"]) * 1024), s["wrk"][1]))
    w("")

    if res["sweep"]:
        w("## Scaling sweep")
        w("")
        w("One request at a time on a fresh posenc per point (median of >= 3 requests, client-"
          "observed, keep-alive); peak = VmHWM during the first request minus RSS before it. "
          "Plot: `sweep.png`; data: `sweep.tsv`.")
        w("")
        w("| series | tokens | d_model | request | response | ms | peak | peak / (req+resp) "
          "| sgemm ms |")
        w("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for r in res["sweep"]:
            w("| %s | %d | %d | %s | %s | %.2f | %s | %.2f | %s |"
              % (r["series"], r["tokens"], r["d_model"], fmt_bytes(r["req_bytes"]),
                 fmt_bytes(r["resp_bytes"]), r["ms"], fmt_bytes(r["peak_bytes"]),
                 r["peak_bytes"] / (r["req_bytes"] + r["resp_bytes"]),
                 "%.2f" % r["sgemm_ms"] if r["sgemm_ms"] is not None else ""))
        w("")
    return "\n".join(lines) + "\n", targets


def write_sweep(rows, out):
    tsv = os.path.join(out, "sweep.tsv")
    with open(tsv, "w") as f:
        f.write("# series\troute\ttokens\td_model\telements\treq_bytes\tresp_bytes\tms\t"
                "peak_bytes\tsgemm_ms\n")
        for i, series in enumerate(("encode-json tokens", "encode-json d_model",
                                    "apply-b64 tokens")):
            f.write("%s# %s\n" % ("\n\n" if i else "", series))  # gnuplot: index i
            for r in rows:
                if r["series"] == series:
                    f.write("%s\t%s\t%d\t%d\t%d\t%d\t%d\t%.3f\t%d\t%s\n"
                            % (series.replace(" ", "_"), r["route"], r["tokens"], r["d_model"],
                               r["tokens"] * r["d_model"], r["req_bytes"], r["resp_bytes"],
                               r["ms"], r["peak_bytes"],
                               "%.3f" % r["sgemm_ms"] if r["sgemm_ms"] is not None else "NaN"))
    png = os.path.join(out, "sweep.png")
    if shutil.which("gnuplot") is None:
        log("gnuplot not found: no sweep.png")
        return
    p = subprocess.run(["gnuplot", "-e", "datafile='%s'; outfile='%s'" % (tsv, png),
                        os.path.join(HERE, "sweep.gp")], capture_output=True, text=True)
    if p.returncode != 0:
        log("gnuplot failed: %s" % p.stderr.strip())


def main():
    tmp = tempfile.mkdtemp(prefix="posenc-bench-")
    try:
        res = run(tmp)
        text, targets = report(res)
        os.makedirs(OUT, exist_ok=True)
        with open(os.path.join(OUT, "latest.md"), "w") as f:
            f.write(text)
        if res["sweep"]:
            write_sweep(res["sweep"], OUT)
        sys.stdout.write(text)
        missed = [t for t in targets if not t[2]]
        log("%d targets met, %d missed; wrote %s" % (len(targets) - len(missed), len(missed),
                                                      os.path.relpath(OUT, REPO)))
        return 0
    finally:
        if KEEP_TMP:
            log("kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
