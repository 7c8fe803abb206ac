#!/usr/bin/python3
"""Example client flow: text -> tokenizer -> token_ids -> posenc /apply -> Q, K, V.

Standard library only. It asks the tokenizer sidecar for the token ids of a
text, then asks posenc for position-aware Q, K and V of those tokens, and
checks the answer against a local float64 reference.

The model is an INLINE model object sent with the request (so the flow
needs no checkpoint download; a loaded checkpoint works the same way by name): a `token_embedding` table [vocab][d_model]
sized to the tokenizer's vocabulary, plus wq, wk, wv, all generated here
deterministically (SplitMix64, seed --seed), the same on every machine. The
numbers are therefore meaningless as language features; the flow, the shapes
and the positional encoding are real.

  client.py [--text TEXT] [--wait SECONDS] [--d-model 64] [--heads 4]
            [--kv-heads 2] [--seed 2024]

TOKENIZER_URL (default http://127.0.0.1:8081) and POSENC_URL (default
http://127.0.0.1:8080) say where the two services are; POSENC_API_KEY, when
set, is sent as a bearer token. Exit status 0 when the flow worked and the
answer matched the reference.
"""
import argparse
import base64
import json
import math
import os
import struct
import sys
import time
import urllib.error
import urllib.request

MASK64 = (1 << 64) - 1


def splitmix64(seed):
    state = seed & MASK64
    while True:
        state = (state + 0x9E3779B97F4A7C15) & MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        yield z ^ (z >> 31)


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def uniform_matrix(gen, rows, cols, limit):
    """rows x cols float32 values in [-limit, limit), row-major."""
    return [[f32(limit * (2.0 * (next(gen) >> 11) * 2.0 ** -53 - 1.0))
             for _ in range(cols)] for _ in range(rows)]


def b64(matrix):
    flat = [v for row in matrix for v in row]
    return base64.b64encode(struct.pack(f"<{len(flat)}f", *flat)).decode()


def unb64(text, shape):
    raw = base64.b64decode(text)
    flat = struct.unpack(f"<{len(raw) // 4}f", raw)
    rows, cols = shape
    return [list(flat[r * cols:(r + 1) * cols]) for r in range(rows)]


def call(url, body=None, api_key=None, timeout=30):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="GET" if body is None else "POST")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if api_key:
        req.add_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        raise SystemExit(f"client: {url}: HTTP {e.code}: {e.read().decode(errors='replace')}")


def wait_for(url, seconds):
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=3) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError) as e:
            if time.monotonic() >= deadline:
                raise SystemExit(f"client: {url} not ready after {seconds} s: {e}")
        time.sleep(0.5)


def sinusoidal(pos, d, base=10000.0):
    """PE[p][2i] = sin(p / base^(2i/d)), PE[p][2i+1] = cos(...) (interleaved)."""
    row = []
    for j in range(d):
        angle = pos / base ** ((j - j % 2) / d)
        row.append(math.sin(angle) if j % 2 == 0 else math.cos(angle))
    return row


def matmul(rows, w):
    cols = len(w[0])
    return [[sum(r[i] * w[i][c] for i in range(len(r))) for c in range(cols)] for r in rows]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--text", default="The dog bites the man, and the man bites the dog.")
    ap.add_argument("--wait", type=float, default=0, help="wait this long for both services")
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=2024)
    args = ap.parse_args()
    tok_url = os.environ.get("TOKENIZER_URL", "http://127.0.0.1:8081").rstrip("/")
    pe_url = os.environ.get("POSENC_URL", "http://127.0.0.1:8080").rstrip("/")
    api_key = os.environ.get("POSENC_API_KEY") or None

    if args.wait > 0:
        wait_for(tok_url + "/healthz", args.wait)
        wait_for(pe_url + "/readyz", args.wait)

    # 1. text -> token ids (tokenizer sidecar)
    info = call(tok_url + "/info")
    vocab = info["vocab_size"]
    tok = call(tok_url + "/tokenize", {"text": args.text})
    ids = tok["token_ids"]
    print(f"text:      {args.text}")
    print(f"pieces:    {' '.join(tok['pieces'])}")
    print(f"token_ids: {ids}")

    # 2. an inline model sized to the tokenizer's vocabulary (no checkpoint
    #    loading yet): generated, deterministic weights.
    d, heads, kv_heads = args.d_model, args.heads, args.kv_heads
    head_dim = d // heads
    gen = splitmix64(args.seed)
    emb = uniform_matrix(gen, vocab, d, 1.0)
    wq = uniform_matrix(gen, d, heads * head_dim, math.sqrt(6.0 / (d + heads * head_dim)))
    wk = uniform_matrix(gen, d, kv_heads * head_dim, math.sqrt(6.0 / (d + kv_heads * head_dim)))
    wv = uniform_matrix(gen, d, kv_heads * head_dim, math.sqrt(6.0 / (d + kv_heads * head_dim)))
    model = {
        "d_model": d, "heads": heads, "kv_heads": kv_heads, "head_dim": head_dim,
        "scheme": "sinusoidal", "params": {"base": 10000, "layout": "interleaved"},
        "weights": {
            "token_embedding": b64(emb), "token_embedding_shape": [vocab, d],
            "wq": b64(wq), "wq_shape": [d, heads * head_dim],
            "wk": b64(wk), "wk_shape": [d, kv_heads * head_dim],
            "wv": b64(wv), "wv_shape": [d, kv_heads * head_dim],
        },
    }
    print(f"model:     inline, generated (SplitMix64 seed {args.seed}), not a checkpoint: "
          f"vocab {vocab}, d_model {d}, {heads} heads / {kv_heads} kv heads of {head_dim}, sinusoidal")

    # 3. token ids -> position-aware Q, K, V (posenc)
    res = call(pe_url + "/apply", {"model": model, "token_ids": ids,
                                   "return": ["q", "k", "v"], "encoding": "base64"},
               api_key=api_key)
    out = {name: unb64(res[name], res[name + "_shape"]) for name in ("q", "k", "v")}
    print(f"shape:     {json.dumps(res['shape'], sort_keys=True)}")
    for name in ("q", "k", "v"):
        print(f"{name}:         {res[name + '_shape']}, {name}[0][:4] = "
              f"{[round(x, 6) for x in out[name][0][:4]]}")

    # 4. the same computation locally, in float64: z = E[id] + PE(pos); q = z Wq ...
    z = [[f32(e + p) for e, p in zip(emb[t], sinusoidal(pos, d))] for pos, t in enumerate(ids)]
    ref = {"q": matmul(z, wq), "k": matmul(z, wk), "v": matmul(z, wv)}
    worst = 0.0
    for name in ("q", "k", "v"):
        want, got = ref[name], out[name]
        if len(want) != len(got) or len(want[0]) != len(got[0]):
            raise SystemExit(f"client: {name} shape {len(got)}x{len(got[0])}, "
                             f"expected {len(want)}x{len(want[0])}")
        for rw, rg in zip(want, got):
            for a, b in zip(rw, rg):
                worst = max(worst, abs(a - b) / (1.0 + abs(a)))
    if worst > 1e-4:
        raise SystemExit(f"client: posenc's answer differs from the local reference "
                         f"(max relative difference {worst:.3g})")
    print(f"check:     q, k, v match a local float64 reference "
          f"(max relative difference {worst:.2g})")
    print("ok: text -> tokenizer -> token_ids -> posenc /apply -> Q, K, V")
    return 0


if __name__ == "__main__":
    sys.exit(main())
