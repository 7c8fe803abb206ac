"""Writes the small model directories tests/alloc/alloc_test loads with
allocation failures injected: posenc's own format and a Hugging Face llama
checkpoint (single file), built by tests/models/checkpoints.py.

    /usr/bin/python3 tests/alloc/write_models.py DIR   -> DIR/posenc, DIR/llama
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))

import checkpoints  # noqa: E402


def main():
    out = sys.argv[1]
    checkpoints.posenc_format(d=8, heads=2, kv_heads=1).write(os.path.join(out, "posenc"))
    checkpoints.llama(layers=1, d=8, heads=2, kv_heads=1, vocab=6).write(os.path.join(out, "llama"))


if __name__ == "__main__":
    main()
