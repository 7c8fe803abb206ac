"""Writing safetensors files by hand with numpy: an 8-byte little-endian
header length, the JSON header, the raw little-endian data.

Tensors are given as float32 arrays and stored as F32, F16 or BF16;
`stored()` returns what a reader gets back, so references use exactly the
values the server sees. Helpers at the bottom build the broken variants the
malformed-checkpoint tests need.
"""
import json
import struct

import numpy as np


def bf16_bits(a):
    """float32 -> bfloat16 bits, round to nearest even (no NaN inputs)."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")


def encode(a, dtype):
    """The raw bytes of array a stored as dtype (F32, F16, BF16, F64, I64, U8)."""
    a = np.asarray(a)
    if dtype == "F32":
        return a.astype("<f4").tobytes()
    if dtype == "F16":
        return a.astype("<f2").tobytes()
    if dtype == "BF16":
        return bf16_bits(a).tobytes()
    if dtype == "F64":
        return a.astype("<f8").tobytes()
    if dtype == "I64":
        return a.astype("<i8").tobytes()
    if dtype == "U8":
        return a.astype("u1").tobytes()
    raise ValueError(dtype)


def stored(a, dtype):
    """What a reader of `encode(a, dtype)` gets back, as float64."""
    a = np.asarray(a, dtype=np.float32)
    if dtype == "F16":
        return a.astype("<f2").astype(np.float64)
    if dtype == "BF16":
        bits = bf16_bits(a).astype(np.uint32) << 16
        return bits.view(np.float32).astype(np.float64).reshape(a.shape)
    return a.astype(np.float64)


def layout(tensors):
    """tensors: list of (name, dtype, array). Returns (header dict, data bytes)."""
    header, chunks, off = {}, [], 0
    for name, dtype, arr in tensors:
        raw = encode(arr, dtype)
        header[name] = {"dtype": dtype, "shape": list(np.shape(arr)),
                        "data_offsets": [off, off + len(raw)]}
        chunks.append(raw)
        off += len(raw)
    return header, b"".join(chunks)


def assemble(header, data, metadata=True):
    """The file bytes for a header dict and a data section (header padded with
    spaces to a multiple of 8 bytes, as the safetensors library writes it)."""
    h = dict(header)
    if metadata:
        h["__metadata__"] = {"format": "pt"}
    text = json.dumps(h, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def write(path, tensors):
    """Write a well-formed file; returns the header (for derived variants)."""
    header, data = layout(tensors)
    with open(path, "wb") as fh:
        fh.write(assemble(header, data))
    return header


def write_sharded(directory, tensors, n_shards):
    """model-0000i-of-0000n.safetensors files plus model.safetensors.index.json."""
    import os
    names = [f"model-{i + 1:05d}-of-{n_shards:05d}.safetensors" for i in range(n_shards)]
    weight_map, groups = {}, [[] for _ in range(n_shards)]
    for k, t in enumerate(tensors):
        groups[k % n_shards].append(t)
        weight_map[t[0]] = names[k % n_shards]
    for name, group in zip(names, groups):
        write(os.path.join(directory, name), group)
    with open(os.path.join(directory, "model.safetensors.index.json"), "w") as fh:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, fh, indent=1)
