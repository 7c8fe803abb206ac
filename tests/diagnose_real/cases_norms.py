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
            "olmo2_tiny": checkpoints.olmo2(seed=18, layers=1),
            "stablelm_qk": checkpoints.stablelm(seed=63, layers=1, qk_norm=True, d=64, heads=4,
                                                kv_heads=4),
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


def variant_cases(prefix, source, model, x, qk, v, matches=("right",)):
    """qk: where -> (n -> q or k computed that way); v as computed. The
    variants in `matches` are right ports (a match); every other one is
    qk_norm_mismatch with that evidence.where."""
    out = []
    for where, f in qk.items():
        body = {"model": model, "embeddings": x.tolist(), "q": f("q").tolist(),
                "k": f("k").tolist(), "v": v.tolist()}
        right = where in matches
        out.append(Case(f"{prefix}_{where}", f"{source}: {where.replace('_', ' ')}", body,
                        "match" if right else "explained",
                        () if right else ["qk_norm_mismatch"],
                        check=None if right else where_check(where)))
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

    qk = {"right": lambda n: rot(norm(n, raw[n])),
          "missing": lambda n: rot(raw[n]),
          "after_rope": lambda n: norm(n, rot(raw[n])),
          "whole_projection": lambda n: rot(whole(n, raw[n]))}
    return variant_cases("cohere_qk_norm", "HF CohereAttention use_qk_norm (LayerNorm per head "
                         "with its own weights)", "cohere_qk", x, qk, raw["v"])


def stablelm_cases():
    """HF StableLmAttention with qk_layernorm (stablelm-2-12b): an
    nn.LayerNorm (no bias) per head with its own weights, before a partial
    rotation (partial_rotary_factor 0.25, rotate_half on the first
    quarter of each head); q/k/v biases; input_layernorm with bias."""
    t = tensors("stablelm_qk")
    p = "model.layers.0."
    hd, eps, T, H = 16, 1e-5, 9, 4
    rd = hd // 4
    x = np.random.default_rng(134).standard_normal((T, 64)).astype(F32)
    h = (layer_norm(x, t[p + "input_layernorm.weight"], eps) +
         t[p + "input_layernorm.bias"]).astype(F32)
    raw = {n: (h @ t[p + f"self_attn.{n}_proj.weight"].T + t[p + f"self_attn.{n}_proj.bias"])
           .astype(F32) for n in "qkv"}
    wn = {n: np.stack([t[p + f"self_attn.{n}_layernorm.norms.{k}.weight"] for k in range(H)])
          for n in "qk"}
    inv = 1.0 / 10000.0 ** (np.arange(0, rd, 2) / rd)
    c, s = cos_sin(np.arange(T), inv)

    def rot(a):
        return flat(rotate_half_layout(per_head(a, hd), c, s, rd))

    def norm(n, a):
        return flat(layer_norm(per_head(a, hd), wn[n], eps))

    qk = {"right": lambda n: rot(norm(n, raw[n])),
          "missing": lambda n: rot(raw[n]),
          "whole_projection": lambda n: rot(layer_norm(raw[n], wn[n].reshape(-1), eps))}
    return variant_cases("stablelm_qk_norm", "HF StableLmAttention qk_layernorm (LayerNorm per "
                         "head, partial rotary 0.25)", "stablelm_qk", x, qk, raw["v"])


def olmo2_cases():
    """HF Olmo2Attention: q_norm / k_norm (RMSNorm) over the whole q (k)
    projection before the rotation (theta 5e5), no input norm. Its norm
    missing or after the rotation is named; a port normalising each head
    instead (no evidence.where says that) must say nothing false:
    unexplained."""
    t = tensors("olmo2_tiny")
    p = "model.layers.0."
    hd, eps, T = 8, 1e-6, 9
    x = np.random.default_rng(135).standard_normal((T, 32)).astype(F32)
    raw = {n: (x @ t[p + f"self_attn.{n}_proj.weight"].T).astype(F32) for n in "qkv"}
    wn = {n: t[p + f"self_attn.{n}_norm.weight"] for n in "qk"}
    inv = 1.0 / 500000.0 ** (np.arange(0, hd, 2) / hd)
    c, s = cos_sin(np.arange(T), inv)

    def rot(a):
        return flat(rotate_half_layout(per_head(a, hd), c, s, hd))

    qk = {"right": lambda n: rot(rms(raw[n], wn[n], eps)),
          "missing": lambda n: rot(raw[n]),
          "after_rope": lambda n: rms(rot(raw[n]), wn[n], eps)}
    out = variant_cases("olmo2_qk_norm", "HF Olmo2Attention (RMSNorm over the whole "
                        "projection)", "olmo2_tiny", x, qk, raw["v"])
    per_head_q = {n: flat(rms(per_head(raw[n], hd), per_head(wn[n][None, :], hd)[0], eps))
                  for n in "qk"}
    body = {"model": "olmo2_tiny", "embeddings": x.tolist(), "v": raw["v"].tolist()}
    body.update({n: rot(per_head_q[n]).tolist() for n in "qk"})
    out.append(Case("olmo2_qk_norm_per_head", "an OLMo 2 port normalising each head (its slice "
                    "of the weight) instead of the whole projection", body, "unexplained",
                    allowed=["projection_mismatch"]))
    return out


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

    qk = {"right": lambda n: l2(rot(raw[n])), "before_rope": lambda n: rot(l2(raw[n])),
          "missing": lambda n: rot(raw[n])}
    # weightless: the same values either side of the rotation, a match
    return variant_cases("llama4_qk_norm", "HF Llama4TextAttention (L2 norm per head after the "
                         "rotation)", "llama4_tiny", x, qk, raw["v"],
                         matches=("right", "before_rope"))


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

    qk = {"right": lambda n: norm(n, rot(raw[n])),
          "before_rope": lambda n: rot(norm(n, raw[n])),
          "missing": lambda n: rot(raw[n])}
    return variant_cases("hunyuan_qk_norm", "HF HunYuanDenseV1Attention (weighted RMSNorm per "
                         "head after the rotation)", "hunyuan_tiny", x, qk, raw["v"])


def all_cases():
    return (cohere_cases() + stablelm_cases() + olmo2_cases() + llama4_cases() +
            hunyuan_cases())
