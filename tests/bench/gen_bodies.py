#!/usr/bin/python3
"""Request bodies for the posenc benchmark suite, deterministic (fixed seeds).

    gen_bodies.py OUTDIR [NAME...]     write OUTDIR/NAME.json (default: s1..s4)

Embeddings are standard-normal float32 values written as the shortest digits
that read back as the same float32 (what a careful client sends), or as
base64 little-endian float32 with a "shape". bench.py imports this module
for the sweep bodies.
"""
import base64
import json
import os
import sys

import numpy as np


def embeddings(tokens, d, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((tokens, d)).astype(np.float32)


def json_matrix(x):
    """Nested JSON array text of a float32 matrix, shortest round-trip digits."""
    text = x.astype(str)  # numpy's float32 str: Dragon4, unique (shortest)
    return "[" + ",".join("[" + ",".join(row) + "]" for row in text) + "]"


def encode_json(tokens, d, seed):
    return '{"embeddings":' + json_matrix(embeddings(tokens, d, seed)) + "}"


def encode_b64(tokens, d, seed):
    x = embeddings(tokens, d, seed).astype("<f4")
    return json.dumps({"embeddings": base64.b64encode(x.tobytes()).decode(),
                       "shape": [tokens, d], "encoding": "base64"},
                      separators=(",", ":"))


def apply_json(tokens, seed, d=512):
    return '{"embeddings":' + json_matrix(embeddings(tokens, d, seed)) + "}"


def apply_b64(tokens, seed, d=512):
    return encode_b64(tokens, d, seed)  # same fields; /apply reads them alike


# The four scenarios of make bench: (route, wrk script, body maker).
SCENARIOS = {
    "s1": ("/encode", "encode.lua", lambda: encode_json(16, 64, 1)),
    "s2": ("/apply", "apply.lua", lambda: apply_json(128, 2)),
    "s3": ("/apply", "apply.lua", lambda: apply_b64(2048, 3)),
    "s4": ("/encode", "encode.lua", lambda: encode_json(512, 1024, 4)),
}


def write(path, text):
    with open(path, "w", encoding="ascii") as f:
        f.write(text)
    return os.path.getsize(path)


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    outdir = argv[1]
    os.makedirs(outdir, exist_ok=True)
    for name in argv[2:] or sorted(SCENARIOS):
        if name not in SCENARIOS:
            sys.stderr.write("unknown body %r (have %s)\n" % (name, ", ".join(SCENARIOS)))
            return 2
        size = write(os.path.join(outdir, name + ".json"), SCENARIOS[name][2]())
        print("%s.json %d bytes" % (name, size))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
