#!/usr/bin/python3
"""Detection rate of POST /diagnose over generated cases.

Every subject is made here with numpy from the formulas of the buggy
variant (not with posenc), for each finding code alone and for every
compatible pair of codes of the same subject kind, with parameters drawn
from a seeded generator; plus random subjects (must be unexplained) and
exact ones (must be match). A case is detected when the verdict is as
expected and every expected code is among the findings.

  tests/bench/diagnose_sweep.py [--server build/posenc-server] [--seed 1]

Starts its own server on a free loopback port. Prints a markdown table per
code (alone, in pairs) and the cases missed.
"""
import argparse
import itertools
import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request

import numpy as np


def post(url, body):
    req = urllib.request.Request(url, json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        return json.load(e)


def bf16(x):
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    return u.view(np.float32)


# ---- sinusoidal tables ------------------------------------------------------
SIN_CODES = ["layout_swapped", "sin_cos_swapped", "position_offset", "base_mismatch",
             "frequency_formula", "transposed", "embed_scale"]
SIN_EXCLUSIVE = [{"base_mismatch", "frequency_formula"}]


def sin_case(codes, rng, T=64, d=64):
    base = 10000.0
    if "base_mismatch" in codes:
        base = float(rng.choice([500.0, 2000.0, 5000.0, 20000.0, 100000.0]))
    exp_num = 1.0 if "frequency_formula" in codes else 2.0
    offset = int(rng.integers(1, 5)) if "position_offset" in codes else 0
    pos = np.arange(T)[:, None] + offset
    ang = pos * base ** (-exp_num * np.arange(d // 2) / d)
    s, c = np.sin(ang), np.cos(ang)
    if "sin_cos_swapped" in codes:
        s, c = c, s
    if "layout_swapped" in codes:
        pe = np.concatenate([s, c], axis=1)
    else:
        pe = np.empty((T, d))
        pe[:, 0::2], pe[:, 1::2] = s, c
    body = {"scheme": "sinusoidal"}
    if "embed_scale" in codes:
        x = rng.uniform(-1, 1, (T, d)).astype(np.float32)
        scale = float(rng.choice([np.sqrt(d), 2.0, 0.5]))
        body.update(embeddings=x.tolist(), encoded=(scale * x + pe).astype(np.float32).tolist())
    else:
        body["table"] = (pe.T if "transposed" in codes else pe).astype(np.float32).tolist()
    return body


# ---- RoPE caches ------------------------------------------------------------
ROPE_CODES = ["layout_swapped", "sin_cos_swapped", "rotation_reversed", "position_offset",
              "base_mismatch", "frequency_formula", "scaling_mismatch", "attention_factor",
              "low_precision"]
ROPE_EXCLUSIVE = [{"base_mismatch", "frequency_formula"},
                  {"base_mismatch", "scaling_mismatch"},
                  {"frequency_formula", "scaling_mismatch"}]


def rope_case(codes, rng, T=64, hd=64):
    base = 10000.0
    if "base_mismatch" in codes:
        base = float(rng.choice([500000.0, 1000000.0, 50000.0, 1000.0]))
    fd = hd - 1 if "frequency_formula" in codes else hd
    linear = float(rng.choice([2.0, 4.0, 8.0])) if "scaling_mismatch" in codes else 1.0
    att = float(rng.choice([0.5, 0.8, 1.25, 1.5])) if "attention_factor" in codes else 1.0
    offset = int(rng.integers(1, 5)) if "position_offset" in codes else 0
    w = base ** (-2.0 * np.arange(hd // 2) / fd) / linear
    p = (np.arange(T) + offset).astype(np.float64)
    if "low_precision" in codes:
        th = bf16(bf16(w)[None, :] * bf16(p)[:, None])
        c = bf16(bf16(np.cos(th)) * np.float32(att)).astype(np.float64)
        s = bf16(bf16(np.sin(th)) * np.float32(att)).astype(np.float64)
    else:
        th = p[:, None] * w[None, :]
        c, s = np.cos(th) * att, np.sin(th) * att
    if "rotation_reversed" in codes:
        s = -s
    if "layout_swapped" in codes:
        c, s = np.repeat(c, 2, axis=1), np.repeat(s, 2, axis=1)
    else:
        c, s = np.concatenate([c, c], axis=1), np.concatenate([s, s], axis=1)
    if "sin_cos_swapped" in codes:
        c, s = s, c
    return {"scheme": "rope", "params": {"head_dim": hd}, "cos": c.astype(np.float32).tolist(),
            "sin": s.astype(np.float32).tolist()}


# ---- rotated vectors: head_dim and rotary_dim -----------------------------
def rope_encoded_case(code, rng, T=32, width=128):
    x = rng.uniform(-1, 1, (T, width))
    if code == "head_dim_mismatch":
        hd, rd, fd, claim = 128, 128, 128, {"head_dim": 64}
    else:
        hd, rd, fd, claim = 64, 32, 64, {"head_dim": 64, "rotary_dim": 32}
    w = 10000.0 ** (-2.0 * np.arange(rd // 2) / fd)
    th = np.arange(T)[:, None] * w[None, :]
    y = x.copy().reshape(T, -1, hd)
    xh = x.reshape(T, -1, hd)
    a, b = xh[..., :rd // 2], xh[..., rd // 2:rd]
    c, s = np.cos(th)[:, None, :], np.sin(th)[:, None, :]
    y[..., :rd // 2], y[..., rd // 2:rd] = a * c - b * s, b * c + a * s
    return {"scheme": "rope", "params": claim, "embeddings": x.astype(np.float32).tolist(),
            "encoded": y.reshape(T, width).astype(np.float32).tolist()}


# ---- ALiBi ------------------------------------------------------------------
def alibi_paper(h):
    def pow2(n):
        start = 2 ** (-(2 ** -(np.log2(n) - 3)))
        return [start * start ** i for i in range(n)]
    if np.log2(h).is_integer():
        return np.array(pow2(h))
    c = 2 ** int(np.floor(np.log2(h)))
    return np.array(pow2(c) + pow2(2 * c)[0::2][:h - c])


def alibi_case(code, rng, T=16):
    H = int(rng.choice([6, 12, 20, 24]))
    if code == "alibi_slopes":
        sl = 2.0 ** (-8.0 * np.arange(1, H + 1) / H)
        return {"scheme": "alibi", "slopes": sl.astype(np.float32).tolist()}
    sl = alibi_paper(H)
    p = np.arange(T)
    bias = np.broadcast_to(sl[:, None, None] * p[None, None, :], (H, T, T))  # bloom form
    return {"scheme": "alibi", "params": {"form": "symmetric"},
            "bias": bias.astype(np.float32).tolist()}


def run(base, body, verdict, codes):
    r = post(base + "/diagnose", body)
    found = {f["code"] for f in r.get("findings", [])}
    ok = r.get("verdict") == verdict and set(codes) <= found
    return ok, r.get("verdict", r.get("error")), sorted(found)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(os.environ.get("BUILD", "build"),
                                                     "posenc-server"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=2, help="draws per code and per pair")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    port = free_port()
    srv = subprocess.Popen([args.server, "--port", str(port)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    base = "http://127.0.0.1:%d" % port
    stats, missed = {}, []

    def tally(key, ok, label, got):
        n, k = stats.get(key, (0, 0))
        stats[key] = (n + 1, k + ok)
        if not ok:
            missed.append("%s -> %s" % (label, got))

    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(base + "/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.05)
        families = [("sinusoidal", SIN_CODES, SIN_EXCLUSIVE, sin_case),
                    ("rope cache", ROPE_CODES, ROPE_EXCLUSIVE, rope_case)]
        for fam, codes, exclusive, make in families:
            pairs = [c for c in itertools.combinations(codes, 2)
                     if set(c) not in exclusive and not
                     ("embed_scale" in c and "transposed" in c)]
            for combo in [(c,) for c in codes] + pairs:
                for _ in range(args.repeats):
                    ok, v, found = run(base, make(set(combo), rng), "explained", combo)
                    for c in combo:
                        tally((fam, c, "alone" if len(combo) == 1 else "pairs"), ok,
                              "%s %s" % (fam, "+".join(combo)), (v, found))
        for code in ["head_dim_mismatch", "rotary_dim_mismatch"]:
            for _ in range(args.repeats):
                ok, v, found = run(base, rope_encoded_case(code, rng), "explained", [code])
                tally(("rope encoded", code, "alone"), ok, code, (v, found))
        for code in ["alibi_slopes", "alibi_form"]:
            for _ in range(args.repeats):
                ok, v, found = run(base, alibi_case(code, rng), "explained", [code])
                tally(("alibi", code, "alone"), ok, code, (v, found))
        for i in range(5 * args.repeats):
            T, d = 64, 64
            rand = rng.uniform(-1, 1, (T, d)).astype(np.float32)
            ok, v, found = run(base, {"scheme": "sinusoidal", "table": rand.tolist()},
                               "unexplained", [])
            tally(("random", "sinusoidal table", "-"), ok, "random table", (v, found))
            ok, v, found = run(base, {"scheme": "rope", "params": {"head_dim": d},
                                      "cos": rand.tolist(),
                                      "sin": rng.uniform(-1, 1, (T, d)).tolist()},
                               "unexplained", [])
            tally(("random", "rope cache", "-"), ok, "random cache", (v, found))
        for fam, make in [("exact", sin_case), ("exact", rope_case)]:
            for _ in range(args.repeats):
                ok, v, found = run(base, make(set(), rng), "match", [])
                tally((fam, make.__name__, "-"), ok, "exact " + make.__name__, (v, found))
    finally:
        srv.terminate()
        srv.wait(10)
    print("| subject | code | alone | in pairs |")
    print("| --- | --- | --- | --- |")
    keys = sorted({(f, c) for f, c, _ in stats})
    for f, c in keys:
        cells = []
        for kind in ("alone", "pairs", "-"):
            if (f, c, kind) in stats:
                n, k = stats[(f, c, kind)]
                cells.append("%d/%d" % (k, n))
        alone = cells[0] if cells else ""
        pairs = cells[1] if len(cells) > 1 else ""
        print("| %s | %s | %s | %s |" % (f, c, alone, pairs))
    total = sum(n for n, _ in stats.values())
    hit = sum(k for _, k in stats.values())
    print("\n%d of %d (code, case) detections; missed cases:" % (hit, total))
    for m in missed:
        print("  " + m)


if __name__ == "__main__":
    main()
