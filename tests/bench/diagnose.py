#!/usr/bin/python3
"""POST /diagnose benchmark: the wall time of N requests for
  T1  a [4096][128] sinusoidal table computed with the split layout and
      positions from 1 (two findings), base64;
  T2  a [4096][128] random table (the adversarial case: nothing explains it);
  T3  q/k/v of 2048 tokens on the default model (d_model 512, 8 heads of 64),
      rotated with base 500000 where 10000 is claimed, base64;
  T4  2048 tokens x 1024 of RoPE pairs (embeddings + encoded, interleaved
      where half is claimed), base64;
and the mix: every subject of tests/diagnose_real (restated from real
implementations, small) once per run, plus T1-T4; its median and 90th
percentile per request are the figures docs/diagnose.md quotes.
Not a timed unit test: it prints numbers, it asserts only the verdicts of T1-T4.

  tests/bench/diagnose.py [--runs N] [--server build/posenc-server]

Starts its own server (--threads 2 --omp-threads 2) on a free loopback port
and stops it. Needs numpy (/usr/bin/python3). The time includes sending the
body and reading the answer over loopback; the server's own share is in
/metrics (posenc_request_duration_seconds{route="/diagnose"}), printed too.
"""
import argparse
import base64
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np


def b64(a):
    return base64.b64encode(np.ascontiguousarray(a, dtype="<f4").tobytes()).decode()


def post(url, body):
    req = urllib.request.Request(url, json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.load(r)


def sinusoidal(T, d, offset, split):
    pos = np.arange(T)[:, None] + offset
    ang = pos / 10000.0 ** (np.arange(d // 2) * 2.0 / d)
    if split:
        return np.concatenate([np.sin(ang), np.cos(ang)], axis=1)
    out = np.empty((T, d))
    out[:, 0::2], out[:, 1::2] = np.sin(ang), np.cos(ang)
    return out


def rope_half(x, base, hd=64):
    t = x.shape[0]
    x = x.reshape(t, -1, hd)
    ang = np.arange(t)[:, None] / base ** (np.arange(0, hd, 2) / hd)
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    x1, x2 = x[..., :hd // 2], x[..., hd // 2:]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], -1).reshape(t, -1)


def rope_pairs(x, base, hd=64):
    t = x.shape[0]
    x = x.reshape(t, -1, hd)
    ang = np.arange(t)[:, None] / base ** (np.arange(0, hd, 2) / hd)
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    out = np.empty_like(x)
    out[..., 0::2] = x[..., 0::2] * c - x[..., 1::2] * s
    out[..., 1::2] = x[..., 0::2] * s + x[..., 1::2] * c
    return out.reshape(t, -1)


def real_code_path():
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "diagnose_real"))
    sys.path.insert(0, os.path.join(here, "..", "models"))


def real_code_bodies():
    """The subjects of tests/diagnose_real, restated from real code."""
    real_code_path()
    import cases  # noqa: E402
    return {"real: " + c.name: (c.body, None) for c in cases.all_cases()}


def model_args(directory):
    """--model name=dir for the checkpoints those subjects claim."""
    real_code_path()
    import cases_ports  # noqa: E402
    args = []
    for name, ckpt in cases_ports.models().items():
        ckpt.write(os.path.join(directory, name))
        args += ["--model", "%s=%s" % (name, os.path.join(directory, name))]
    return args


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--server", default=os.path.join(os.environ.get("BUILD", "build"),
                                                     "posenc-server"))
    args = ap.parse_args()
    port = free_port()
    models = tempfile.TemporaryDirectory()
    srv = subprocess.Popen([args.server, "--port", str(port), "--threads", "2",
                            "--omp-threads", "2"] + model_args(models.name),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = "http://127.0.0.1:%d" % port
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(base + "/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.05)
        T, d = 4096, 128
        bodies = {
            "T1 [4096][128] split + offset 1": (
                {"scheme": "sinusoidal", "encoding": "base64",
                 "table": b64(sinusoidal(T, d, 1, True)), "table_shape": [T, d]}, "explained"),
            "T2 [4096][128] random": (
                {"scheme": "sinusoidal", "encoding": "base64",
                 "table": b64(np.random.default_rng(1).uniform(-1, 1, (T, d))),
                 "table_shape": [T, d]}, "unexplained"),
        }
        n = 2048
        x = np.random.default_rng(2).uniform(-1, 1, (n, 512)).astype(np.float32)
        pre = post(base + "/apply", {"scheme": "none", "embeddings": b64(x), "shape": [n, 512],
                                     "encoding": "base64"})
        q0, k0, v0 = (np.frombuffer(base64.b64decode(pre[k]), "<f4").reshape(n, 512)
                      for k in ("q", "k", "v"))
        bodies["T3 q/k/v 2048 tokens, default model"] = (
            {"scheme": "rope", "encoding": "base64", "embeddings": b64(x), "shape": [n, 512],
             "q": b64(rope_half(q0, 500000.0)), "q_shape": [n, 512],
             "k": b64(rope_half(k0, 500000.0)), "k_shape": [n, 512],
             "v": b64(v0), "v_shape": [n, 512]}, "explained")
        m = 2048
        xr = np.random.default_rng(3).uniform(-1, 1, (m, 1024)).astype(np.float32)
        bodies["T4 RoPE pairs 2048 x 1024"] = (
            {"scheme": "rope", "params": {"layout": "half", "head_dim": 64}, "encoding": "base64",
             "embeddings": b64(xr), "embeddings_shape": [m, 1024],
             "encoded": b64(rope_pairs(xr, 10000.0)), "encoded_shape": [m, 1024]}, "explained")
        mix = dict(bodies, **real_code_bodies())
        times = {name: [] for name in mix}
        for _ in range(args.runs):  # rounds: every case once per round, in turn
            for name, (body, want) in mix.items():
                t0 = time.perf_counter()
                r = post(base + "/diagnose", body)
                times[name].append(time.perf_counter() - t0)
                if want and r["verdict"] != want:
                    sys.exit("%s: verdict %s, want %s" % (name, r["verdict"], want))
        print("| case | verdict | median s | min s | runs |")
        print("| --- | --- | --- | --- | --- |")
        for name, (body, want) in bodies.items():
            print("| %s | %s | %.3f | %.3f | %d |" % (name, want, statistics.median(times[name]),
                                                      min(times[name]), args.runs))
        per_case = sorted(statistics.median(t) for t in times.values())
        p90 = per_case[int(0.9 * (len(per_case) - 1))]
        print("mix of %d cases (T1-T4 and tests/diagnose_real), the median of each over %d "
              "rounds: median %.1f ms, 90th percentile %.1f ms, worst %.1f ms"
              % (len(per_case), args.runs, 1e3 * statistics.median(per_case), 1e3 * p90,
                 1e3 * per_case[-1]))
        metrics = urllib.request.urlopen(base + "/metrics").read().decode()
        for line in metrics.splitlines():
            if 'route="/diagnose"' in line and ("_sum" in line or "_count" in line):
                print(line)
    finally:
        srv.terminate()
        srv.wait(10)
        models.cleanup()


if __name__ == "__main__":
    main()
