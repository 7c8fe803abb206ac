"""q/k norms misplaced by a port, restated from Hugging Face's attention
code in our own numpy (none of their code is here):

- CohereAttention with use_qk_norm (Command R+): CohereLayerNorm (mean
  removed, no bias) of each head with weights [heads, head_dim], before
  the rotation (interleaved pairs, theta 8e6); a port that normalises the
  whole projection at once with the weights flattened, drops the norm, or
  applies it to the rotated q/k.
- Llama4TextAttention: the rotation (complex pairs), then a weightless
  L2 norm of each head (use_qk_norm); a port that normalises before the
  rotation (the same values: a right answer is `match`, nothing false)
  or drops it.
- HunYuanDenseV1Attention: the rotation (rotate_half, NTK-alpha base),
  then query_layernorm / key_layernorm (RMSNorm with weights); a port
  that normalises before the rotation, or drops the norm.

Each is claimed with the model loaded from a checkpoint of the
architecture's config keys and tensor names (run.py writes them).
"""
import os
import sys

import numpy as np

from cases import F32, Case, flat, rotate_half_layout, rotate_pairs_layout
from cases_ports import finding, llama3_inv

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))


def models():
    import arch_block_keys
    import checkpoints
    return {"cohere_qk": checkpoints.cohere(seed=42, layers=1, qk_norm=True),
            "llama4_tiny": checkpoints.llama4_text(seed=22, layers=1),
            "hunyuan_tiny": arch_block_keys.hunyuan_ckpt(seed=2698, layers=1)}


def tensors(name):
    return {n: a for n, _, a in models()[name].tensors}


def layer_norm(a, w, eps):
    """CohereLayerNorm: (x - mean) / sqrt(var + eps) * w over the last axis."""
    a = a.astype(np.float64)
    mu = a.mean(-1, keepdims=True)
    var = ((a - mu) ** 2).mean(-1, keepdims=True)
    return (w * (a - mu) / np.sqrt(var + eps)).astype(F32)


def rms(a, w, eps):
    a = a.astype(np.float64)
    out = a / np.sqrt((a * a).mean(-1, keepdims=True) + eps)
    return (out if w is None else w * out).astype(F32)


def cos_sin(pos, inv):
    ang = (np.asarray(pos, np.float64)[:, None] * inv[None, :])
    return np.cos(ang).astype(F32), np.sin(ang).astype(F32)


def per_head(a, hd):
    return a.reshape(a.shape[0], -1, hd)


def where_check(where):
    def check(answer):
        f = finding(answer, "qk_norm_mismatch")
        if f and f["evidence"].get("where") != where:
            return f"evidence.where {f['evidence'].get('where')}, want {where}"
        return None
    return check


def variant_cases(prefix, source, model, x, make, wanted):
    """make(where) -> {"q", "k", "v"}; wanted: where -> (verdict, codes)."""
    out = []
    for where, (verdict, codes) in wanted.items():
        arrays = make(where)
        body = {"model": model, "embeddings": x.tolist()}
        body.update({n: arrays[n].tolist() for n in "qkv"})
        out.append(Case(f"{prefix}_{where}", f"{source}: {where.replace('_', ' ')}", body,
                        verdict, codes, check=where_check(where) if codes else None))
    return out


def cohere_cases():
    t = tensors("cohere_qk")
    p = "model.layers.0."
    hd, eps, T = 8, 1e-5, 9
    x = np.random.default_rng(131).standard_normal((T, 32)).astype(F32)
    h = layer_norm(x, t[p + "input_layernorm.weight"], eps)
    raw = {n: (h @ t[p + f"self_attn.{n}_proj.weight"].T).astype(F32) for n in "qkv"}
    wn = {"q": t[p + "self_attn.q_norm.weight"], "k": t[p + "self_attn.k_norm.weight"]}
    inv = 1.0 / 8000000.0 ** (np.arange(0, hd, 2) / hd)
    c, s = cos_sin(np.arange(T), inv)

    def rot(a):
        return flat(rotate_pairs_layout(per_head(a, hd), c, s, hd))

    def norm(n, a):  # each head with its own weights [heads][head_dim]
        return flat(layer_norm(per_head(a, hd), wn[n], eps))

    def whole(n, a):  # nn.LayerNorm(heads*head_dim) with the weights flattened
        return layer_norm(a, wn[n].reshape(-1), eps)

    def make(where):
        qk = {"right": lambda n: rot(norm(n, raw[n])),
              "missing": lambda n: rot(raw[n]),
              "after_rope": lambda n: norm(n, rot(raw[n])),
              "whole_projection": lambda n: rot(whole(n, raw[n]))}[where]
        return {"q": qk("q"), "k": qk("k"), "v": raw["v"]}
    return variant_cases("cohere_qk_norm", "HF CohereAttention use_qk_norm (LayerNorm per head "
                         "with its own weights)", "cohere_qk", x, make,
                         {"right": ("match", ()),
                          "missing": ("explained", ["qk_norm_mismatch"]),
                          "after_rope": ("explained", ["qk_norm_mismatch"]),
                          "whole_projection": ("explained", ["qk_norm_mismatch"])})


def llama4_cases():
    t = tensors("llama4_tiny")
    p = "language_model.model.layers.0."
    hd, eps, T = 16, 1e-5, 10
    x = np.random.default_rng(132).standard_normal((T, 32)).astype(F32)
    h = rms(x, t[p + "input_layernorm.weight"], eps)
    raw = {n: (h @ t[p + f"self_attn.{n}_proj.weight"].T).astype(F32) for n in "qkv"}
    inv = llama3_inv(500000.0, hd, 8.0, 1.0, 4.0, 8192).astype(np.float64)
    c, s = cos_sin(np.arange(T), inv)

    def rot(a):
        return flat(rotate_pairs_layout(per_head(a, hd), c, s, hd))

    def l2(a):
        return flat(rms(per_head(a, hd), None, eps))

    def make(where):
        qk = {"right": lambda a: l2(rot(a)), "before_rope": lambda a: rot(l2(a)),
              "missing": rot}[where]
        return {"q": qk(raw["q"]), "k": qk(raw["k"]), "v": raw["v"]}
    return variant_cases("llama4_qk_norm", "HF Llama4TextAttention (L2 norm per head after the "
                         "rotation)", "llama4_tiny", x, make,
                         {"right": ("match", ()),
                          # weightless: the same values either side of the rotation
                          "before_rope": ("match", ()),
                          "missing": ("explained", ["qk_norm_mismatch"])})


def hunyuan_cases():
    t = tensors("hunyuan_tiny")
    cfg = models()["hunyuan_tiny"].config
    p = "model.layers.0."
    hd, eps, T = 16, cfg.get("rms_norm_eps", 1e-5), 8
    x = np.random.default_rng(133).standard_normal((T, cfg["hidden_size"])).astype(F32)
    h = rms(x, t[p + "input_layernorm.weight"], eps)
    raw = {n: (h @ t[p + f"self_attn.{n}_proj.weight"].T).astype(F32) for n in "qkv"}
    base = 10000.0 * 1000.0 ** (hd / (hd - 2))  # NTK-alpha within the context
    inv = 1.0 / base ** (np.arange(0, hd, 2) / hd)
    c, s = cos_sin(np.arange(T), inv)
    wn = {"q": t[p + "self_attn.query_layernorm.weight"],
          "k": t[p + "self_attn.key_layernorm.weight"]}

    def rot(a):
        return flat(rotate_half_layout(per_head(a, hd), c, s, hd))

    def norm(n, a):
        return flat(rms(per_head(a, hd), wn[n], eps))

    def make(where):
        qk = {"right": lambda n: norm(n, rot(raw[n])),
              "before_rope": lambda n: rot(norm(n, raw[n])),
              "missing": lambda n: rot(raw[n])}[where]
        return {"q": qk("q"), "k": qk("k"), "v": raw["v"]}
    return variant_cases("hunyuan_qk_norm", "HF HunYuanDenseV1Attention (weighted RMSNorm per "
                         "head after the rotation)", "hunyuan_tiny", x, make,
                         {"right": ("match", ()),
                          "before_rope": ("explained", ["qk_norm_mismatch"]),
                          "missing": ("explained", ["qk_norm_mismatch"])})


def all_cases():
    return cohere_cases() + llama4_cases() + hunyuan_cases()
