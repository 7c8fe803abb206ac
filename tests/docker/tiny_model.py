#!/usr/bin/python3
"""A tiny model directory in posenc's own format, for the /models volume check.

  tiny_model.py write DIR          config.json + model.safetensors in DIR
  tiny_model.py check RESPONSE     exit 0 when RESPONSE (a file holding the
                                   /apply answer for token_ids [2, 1, 0],
                                   return ["q", "v"]) is right

d_model 4, one head, sinusoidal; wq = wk = I, wv = 2I, so q = E[id] + PE(pos)
and v = 2q. The safetensors file is written by hand (8-byte header length,
JSON header, little-endian float32 data).
"""
import json
import math
import os
import struct
import sys

EMB = [[0.0] * 4, [0.5, -0.5, 0.25, -0.25], [1.0] * 4]


def write(d):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as fh:
        json.dump({"d_model": 4, "heads": 1, "scheme": "sinusoidal"}, fh)
    eye = [[float(i == j) for j in range(4)] for i in range(4)]
    tensors = {"wq": eye, "wk": eye, "wv": [[2 * x for x in r] for r in eye],
               "token_embedding": EMB}
    header, blob = {}, b""
    for name, rows in tensors.items():
        flat = [x for r in rows for x in r]
        header[name] = {"dtype": "F32", "shape": [len(rows), len(rows[0])],
                        "data_offsets": [len(blob), len(blob) + 4 * len(flat)]}
        blob += struct.pack(f"<{len(flat)}f", *flat)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(os.path.join(d, "model.safetensors"), "wb") as fh:
        fh.write(struct.pack("<Q", len(h)) + h + blob)


def check(path):
    with open(path) as fh:
        d = json.load(fh)
    ids = [2, 1, 0]
    want = []
    for p, t in enumerate(ids):
        pe = [(math.sin if j % 2 == 0 else math.cos)(p / 10000 ** ((j - j % 2) / 4)) for j in range(4)]
        want.append([e + x for e, x in zip(EMB[t], pe)])
    return d.get("model") == "tiny" and len(d["q"]) == 3 and all(
        abs(a - b) < 1e-6 and abs(2 * a - c) < 2e-6
        for rw, rq, rv in zip(want, d["q"], d["v"]) for a, b, c in zip(rw, rq, rv))


if __name__ == "__main__":
    if sys.argv[1:2] == ["write"]:
        write(sys.argv[2])
    elif sys.argv[1:2] == ["check"]:
        sys.exit(0 if check(sys.argv[2]) else 1)
    else:
        sys.exit("usage: tiny_model.py write DIR | check RESPONSE")
