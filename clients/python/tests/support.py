"""What the client tests share: the real build/posenc-server started on a
free loopback port (one for the whole run, stopped at exit; more with other
flags on demand, through tests/models/harness.py's Server), and independent
numpy references of the encodings.

The server is $POSENC_SERVER, else $BUILD/posenc-server (BUILD=build),
relative to the repository root; VALGRIND=1 runs it under valgrind.
"""
import atexit
import os
import sys
import unittest

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def _server_path():
    path = os.environ.get("POSENC_SERVER") or os.path.join(
        os.environ.get("BUILD", "build"), "posenc-server")
    return path if os.path.isabs(path) else os.path.join(ROOT, path)


os.environ["POSENC_SERVER"] = _server_path()  # harness reads it when imported
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
from harness import Server, sanitizer_clean  # noqa: E402  (start, .url, .stop())

_shared = None


def url():
    """The URL of the shared server, started on first use."""
    global _shared
    if _shared is None:
        _shared = Server([])
        atexit.register(_shared.stop)
    return _shared.url


def stopped_cleanly(server):
    """Stop ``server`` (SIGTERM); None when it exited 0 with no sanitizer or
    valgrind report, else what went wrong."""
    status = server.stop()
    err = server.stderr()
    if status != 0 or not sanitizer_clean(err):
        return f"exit status {status}, stderr: {err[-800:]}"
    return None


class OwnServerTest(unittest.TestCase):
    """Tests with a server of their own, started with ``server_args`` for the
    class and required to stop cleanly after it."""
    server_args = ()

    @classmethod
    def setUpClass(cls):
        cls.server = Server(list(cls.server_args))

    @classmethod
    def tearDownClass(cls):
        problem = stopped_cleanly(cls.server)
        if problem:
            raise AssertionError(f"the server with {' '.join(cls.server_args)}: {problem}")


def stop_shared():
    """Stop the shared server if it was started: (started, stopped_cleanly's
    answer)."""
    global _shared
    if _shared is None:
        return False, None
    server, _shared = _shared, None
    return True, stopped_cleanly(server)


# ---------------------------------------------------------------- references
def sinusoidal(tokens, d, base=10000.0, offset=0, layout="interleaved"):
    """Vaswani et al.: PE[p][2i] = sin(p / base^(2i/d)), PE[p][2i+1] = cos(...)
    (even d); ``split``: all sines, then all cosines."""
    pos = np.arange(offset, offset + tokens, dtype=np.float64)[:, None]
    angles = pos / base ** (np.arange(0, d, 2, dtype=np.float64) / d)
    if layout == "split":
        return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)
    table = np.empty((tokens, d))
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles)
    return table


def rope_angles(positions, rotary_dim, base=10000.0):
    inv_freq = base ** (-np.arange(0, rotary_dim, 2, dtype=np.float64) / rotary_dim)
    return np.asarray(positions, dtype=np.float64)[..., :, None] * inv_freq


def rope(x, head_dim, positions=None, base=10000.0, layout="half"):
    """RoPE over every head of ``x`` ``[..., tokens, heads*head_dim]``: pairs
    (i, i + head_dim/2) (``half``, GPT-NeoX / HF Llama) or (2i, 2i+1)
    (``interleaved``, GPT-J / Meta Llama), each rotated by p·base^(-2i/head_dim)."""
    x = np.asarray(x, dtype=np.float64)
    tokens = x.shape[-2]
    if positions is None:
        positions = np.arange(tokens)
    angle = rope_angles(positions, head_dim, base)
    cos, sin = np.cos(angle), np.sin(angle)
    out = x.copy()
    half = head_dim // 2
    for start in range(0, x.shape[-1], head_dim):
        if layout == "half":
            a = x[..., start:start + half]
            b = x[..., start + half:start + head_dim]
            out[..., start:start + half] = a * cos - b * sin
            out[..., start + half:start + head_dim] = b * cos + a * sin
        else:
            a = x[..., start:start + head_dim:2]
            b = x[..., start + 1:start + head_dim:2]
            out[..., start:start + head_dim:2] = a * cos - b * sin
            out[..., start + 1:start + head_dim:2] = b * cos + a * sin
    return out


def hf_cos_sin(tokens, head_dim, base=10000.0, interleaved=False):
    """A Hugging Face style cos/sin cache [tokens, head_dim]: the halves
    duplicated (cat(freqs, freqs)), or, with ``interleaved``, each frequency
    repeated twice (repeat_interleave: the GPT-J pairing)."""
    angle = rope_angles(np.arange(tokens), head_dim, base)
    if interleaved:
        emb = np.repeat(angle, 2, axis=-1)
    else:
        emb = np.concatenate([angle, angle], axis=-1)
    return np.cos(emb), np.sin(emb)


def alibi_slopes(heads):
    """The ALiBi paper's slopes for a power-of-two head count."""
    return 2.0 ** (-8.0 * np.arange(1, heads + 1) / heads)
