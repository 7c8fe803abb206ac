"""The proportional rope (Hugging Face's rope_type "proportional", Gemma 4's
full-attention layers) on /encode: params.rope_type "proportional" with
partial_rotary_factor rotates the whole head, pairs (i, i + head_dim/2),
pair i turning at base^(-2i/head_dim) for i < floor(factor * head_dim / 2)
and not at all beyond. Checked against a numpy restatement of
_compute_proportional_rope_parameters and apply_rotary_pos_emb, with the
pairs that do not turn returned bit for bit; the refused combinations name
their field."""
import math

import numpy as np

from harness import Server

RNG = np.random.default_rng(2607)


def proportional_inv_freq(base, prf, head_dim, factor=1.0):
    """inv[i] = base^(-2i/head_dim) for i < int(prf * head_dim // 2), else 0,
    all divided by factor."""
    k = int(prf * head_dim // 2)
    i = np.arange(head_dim // 2, dtype=np.float64)
    return np.where(i < k, 1.0 / base ** (2.0 * i / head_dim), 0.0) / factor


def rotate(x, positions, inv, layout="half"):
    """x [T][heads][head_dim] turned by inv over the whole head: rotate_half
    pairs (i, i + D/2), or adjacent pairs (2i, 2i + 1)."""
    ang = np.outer(positions.astype(np.float64), inv)[:, None, :]
    c, s = np.cos(ang), np.sin(ang)
    if layout == "half":
        h = x.shape[-1] // 2
        a, b = x[..., :h], x[..., h:]
        return np.concatenate([a * c - b * s, b * c + a * s], -1)
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = a * c - b * s, a * s + b * c
    return out


def _encode(C, srv, what, params, head_dim, heads, positions, layout="half", factor=1.0):
    x = RNG.standard_normal((len(positions), heads * head_dim)).astype(np.float32)
    st, r = srv.request("/encode", {"scheme": "rope", "params": dict(params, head_dim=head_dim),
                                    "embeddings": x.tolist(),
                                    "positions": positions.tolist()})
    if not C.check(st == 200, f"{what}: status {st} {r}"):
        return
    inv = proportional_inv_freq(params.get("base", 10000.0),
                                params.get("partial_rotary_factor", 1.0), head_dim, factor)
    xs = x.astype(np.float64).reshape(len(positions), heads, head_dim)
    want = rotate(xs, positions, inv, layout).reshape(len(positions), -1)
    got = np.array(r["encoded"], np.float64)
    C.close(what, got, want)
    # the pairs that do not turn come back as sent
    still = np.zeros(head_dim, bool)
    k = int(np.count_nonzero(inv))
    if layout == "half":
        still[k:head_dim // 2] = still[head_dim // 2 + k:] = True
    else:
        still[2 * k:] = True
    still = np.tile(still, heads)
    C.check(np.array_equal(np.float32(got[:, still]), x[:, still]),
            f"{what}: the {int(still.sum()) // heads} channels per head of pairs that do not "
            f"turn are returned unchanged")


def _values(C, srv):
    pos = np.array([0, 1, 5, 300, 4096, 123456])
    for base, prf, hd, heads in ((1e6, 0.25, 512, 1), (1e4, 0.5, 16, 3), (1e6, 0.3, 24, 2),
                                 (500.0, 1.0, 8, 2), (1e6, 0.25, 256, 1), (10.0, 0.2, 10, 1)):
        params = {"base": base, "rope_type": "proportional", "partial_rotary_factor": prf}
        _encode(C, srv, f"proportional base {base} factor {prf} head_dim {hd}", params, hd,
                heads, pos)
    # absent partial_rotary_factor: every pair turns (the default rope of the head)
    _encode(C, srv, "proportional without partial_rotary_factor",
            {"base": 1e4, "rope_type": "proportional"}, 16, 2, pos)
    # HF divides by factor: linear scaling
    _encode(C, srv, "proportional with linear factor 4",
            {"base": 1e4, "rope_type": "proportional", "partial_rotary_factor": 0.5,
             "scaling": {"type": "linear", "factor": 4.0}}, 16, 2, pos, factor=4.0)
    _encode(C, srv, "proportional interleaved",
            {"base": 1e4, "rope_type": "proportional", "partial_rotary_factor": 0.5,
             "layout": "interleaved"}, 16, 1, pos, layout="interleaved")
    # the same factor without rope_type rotates floor(head_dim * factor) channels
    x = RNG.standard_normal((3, 16)).astype(np.float32)
    bodies = [{"scheme": "rope", "embeddings": x.tolist(), "positions": [0, 7, 90],
               "params": dict({"partial_rotary_factor": 0.5}, **extra)}
              for extra in ({}, {"rope_type": "proportional"}, {"rope_type": "default"})]
    (s1, r1), (s2, r2), (s3, r3) = (srv.request("/encode", b) for b in bodies)
    C.check(s1 == s2 == s3 == 200 and r1["encoded"] == r3["encoded"]
            and r1["encoded"] != r2["encoded"],
            f"rope_type default is the partial rotation, proportional another: {s1} {s2} {s3}")


def _refused(C, srv):
    x = np.ones((2, 16)).tolist()
    for what, params, field in (
            ("rotary_dim", {"rope_type": "proportional", "rotary_dim": 8}, "params.rotary_dim"),
            ("yarn", {"rope_type": "proportional",
                      "scaling": {"type": "yarn", "factor": 2.0,
                                  "original_max_position_embeddings": 64}}, "params.scaling"),
            ("an unknown rope_type", {"rope_type": "ntk"}, "params.rope_type"),
            ("a number", {"rope_type": 1}, "params.rope_type")):
        st, r = srv.request("/encode", {"scheme": "rope", "embeddings": x, "params": params})
        C.check(st == 400 and r.get("error", {}).get("field") == field,
                f"proportional with {what}: 400 naming {field}, got {st} {r}")
    st, r = srv.request("/diagnose", {"scheme": "rope", "params": {"rope_type": "proportional"},
                                      "cos": x, "sin": x})
    C.check(st == 400 and r.get("error", {}).get("field") == "params.rope_type",
            f"/diagnose refuses a proportional claim naming params.rope_type: {st} {r}")


def proportional_checks(root, C):
    del root  # nothing written
    with Server([]) as srv:
        _values(C, srv)
        _refused(C, srv)
        status = srv.stop()
        C.check(status == 0, f"proportional: server exits 0 (got {status})")
    # the formula's first pair count, as Gemma 4's (head_dim 512, factor 0.25)
    C.check(int(np.count_nonzero(proportional_inv_freq(1e6, 0.25, 512))) == 64
            and math.isclose(proportional_inv_freq(1e6, 0.25, 512)[63], 1e6 ** (-126 / 512)),
            "proportional: 64 turning pairs for head_dim 512 and factor 0.25")
