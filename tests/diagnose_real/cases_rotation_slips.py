"""Rotations applied where they do not belong, restated in numpy.

A port that rotates v as it rotates k (the rotation applied to every
projection of the attention layer): /diagnose must name v as rotated
(value_rotated), not say that v carries no position. Layouts: Hugging Face
rotate_half over whole heads, adjacent pairs on grouped-query heads, a
partial rotation, and a rope base other than the claim's on q, k and v.

The inverse frequencies of rotary_dim zero-padded to the head width and then
one rotate_half over the whole head (a port of a proportional partial
rotation): the pairs span the head, the exponent runs over rotary_dim, and
the pairs past rotary_dim/2 do not turn. That is rotary_dim_mismatch whose
message must not say the exponent uses head_dim, with no low_precision for
a leftover that is the zero pairs, not rounding.
"""
import numpy as np

from cases import F32, Case, flat, inv_freq_f32, rope_hf, rope_pairs, x_of


def finding(answer, code):
    return next((f for f in answer.get("findings", []) if f["code"] == code), None)


def v_named_rotated(answer):
    """A check: value_rotated names v and cuts its error below tolerance,
    and no message says v carries no position."""
    for f in answer.get("findings", []):
        if "carries no position" in f["message"]:
            return f"{f['code']} says v carries no position"
    f = finding(answer, "value_rotated")
    if f is None:
        return None
    ev = f.get("evidence", {})
    if ev.get("outputs") != ["v"] or not ev.get("error_after", 1) < 1e-4 < ev.get("error_before", 0):
        return f"value_rotated evidence {ev}"
    return None


def qkv_body(model, x, proj, rotate):
    """q, k and v, each rotated by rotate (v too: the port's slip)."""
    return {"scheme": "rope", "model": model, "embeddings": x.tolist(),
            **{n: flat(rotate(proj[n])).tolist() for n in "qkv"}}


def model_of(rng, d, heads_, kv_heads, hd, params):
    w = {n: (rng.standard_normal((d, (heads_ if n == "q" else kv_heads) * hd)) / 4).astype(F32)
         for n in "qkv"}
    m = {"d_model": d, "heads": heads_, "kv_heads": kv_heads, "scheme": "rope",
         "params": dict(params, head_dim=hd), "weights": {"w" + n: w[n].tolist() for n in "qkv"}}
    return m, w


def value_rotated_cases():
    T = 12
    rng = np.random.default_rng(4101)
    out = []
    pos = np.arange(T)
    specs = [
        # name, heads, kv_heads, hd, params (the claim), rotation of the port
        ("v_rotated_half", "HF rotate_half applied to v as to k", 2, 2, 8, {},
         lambda a, hd: rope_hf(a, hd, hd, 10000.0, pos)),
        ("v_rotated_pairs_gqa", "adjacent pairs on 4 query and 2 key/value heads, v rotated too",
         4, 2, 8, {"layout": "interleaved"}, lambda a, hd: rope_pairs(a, hd, hd, 10000.0, pos)),
        ("v_rotated_partial", "rotate_half on the first 8 of 16 channels of every head, v too",
         2, 2, 16, {"rotary_dim": 8}, lambda a, hd: rope_hf(a, hd, 8, 10000.0, pos)),
    ]
    for name, source, h, kvh, hd, params, rot in specs:
        d = h * hd
        x = x_of(T, d, len(out) + 4102)
        model, w = model_of(rng, d, h, kvh, hd, params)
        proj = {n: (x @ w[n]).astype(F32) for n in "qkv"}
        out.append(Case(name, source, qkv_body(model, x, proj, lambda a: rot(a, hd)),
                        "explained", ["value_rotated"], check=v_named_rotated))
    # q, k and v all rotated with base 500000 where the claim says 10000
    x = x_of(T, 16, 4110)
    model, w = model_of(rng, 16, 2, 2, 8, {})
    proj = {n: (x @ w[n]).astype(F32) for n in "qkv"}
    out.append(Case("v_rotated_other_base", "q, k and v rotated with rope_theta 500000 "
                    "(claimed 10000)", qkv_body(model, x, proj,
                                                lambda a: rope_hf(a, 8, 8, 500000.0, pos)),
                    "explained", ["value_rotated", "base_mismatch"], check=v_named_rotated))
    # v scaled, not rotated: still a projection difference (a rotation at
    # position 0 with a factor reads the same and must not be value_rotated)
    for name, scale in (("v_scaled_not_rotated", 1.01), ("v_doubled_not_rotated", 2.0)):
        body = qkv_body(model, x, proj, lambda a: rope_hf(a, 8, 8, 10000.0, pos))
        body["v"] = (np.asarray(proj["v"]) * F32(scale)).tolist()
        out.append(Case(name, f"v from weights scaled by {scale}, q and k right", body,
                        "unexplained", ["projection_mismatch"]))
    return out


def zero_padded_inv_freq(T):
    """inv_freq of rotary_dim 8 (base 1e7) zero-padded to the head (32),
    then one rotate_half over the whole head."""
    hd, rot = 32, 8
    x = x_of(T, 32, 1002)
    inv = np.zeros(hd // 2, F32)
    inv[: rot // 2] = inv_freq_f32(rot, 1e7)
    return x, rope_hf(x, hd, hd, 1e7, np.arange(T), inv=inv)


def zero_pairs_named(answer):
    """A check: the rotary_dim_mismatch message does not blame head_dim in
    the exponent; its evidence says 32 channels paired, exponent over 8;
    and no low_precision is claimed."""
    if finding(answer, "low_precision"):
        return "low_precision for the zero pairs' leftover"
    f = finding(answer, "rotary_dim_mismatch")
    if f is None:
        return None
    if "uses head_dim" in f["message"]:
        return "says the exponent uses head_dim"
    ev = f.get("evidence", {})
    if ev.get("rotary_dim") != 32 or ev.get("frequency_dim") != 8:
        return f"rotary_dim_mismatch evidence {ev}"
    return None


def head_dim_exponent_named(answer):
    """A check: the classic slip (exponent over head_dim on a partial
    rotation) is still named so."""
    f = finding(answer, "rotary_dim_mismatch")
    if f is not None and "uses head_dim" not in f["message"]:
        return "the head_dim exponent is not named"
    return None


def zero_padded_cases():
    out = []
    for T in (512, 2048):
        x, y = zero_padded_inv_freq(T)
        out.append(Case(f"zero_padded_inv_freq_T{T}", "rotary_dim's inv_freq zero-padded to the "
                        f"head, rotate_half over the whole head ({T} tokens)",
                        {"scheme": "rope", "embeddings": x.tolist(), "encoded": y.tolist(),
                         "params": {"layout": "half", "head_dim": 32, "rotary_dim": 8,
                                    "base": 1e7}},
                        "explained", ["rotary_dim_mismatch"], check=zero_pairs_named))
    T, hd, rot = 64, 32, 8
    x = x_of(T, 32, 1003)
    inv = inv_freq_f32(hd, 10000.0)[: rot // 2]  # exponent over head_dim, 8 channels turn
    y = rope_hf(x, hd, rot, 10000.0, np.arange(T), inv=inv)
    out.append(Case("partial_exponent_over_head_dim", "partial rotary with inv_freq over head_dim",
                    {"scheme": "rope", "embeddings": x.tolist(), "encoded": y.tolist(),
                     "params": {"head_dim": hd, "rotary_dim": rot}},
                    "explained", ["rotary_dim_mismatch"], check=head_dim_exponent_named))
    return out


def all_cases():
    return value_rotated_cases() + zero_padded_cases()
