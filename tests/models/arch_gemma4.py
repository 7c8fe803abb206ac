"""Gemma 4 text layers (gemma4_text, and the gemma4 wrapper's text_config).
Checkpoints with the real config keys (nested rope_parameters, layer_types,
per_layer_config or global_head_dim / num_global_key_value_heads,
attention_k_eq_v, num_kv_shared_layers) and tensor names (kv-shared layers
without k_proj / v_proj / k_norm, k_eq_v layers without v_proj, the
per-layer-input tensors beside them), a numpy restatement of
Gemma4TextAttention.forward (checked against Hugging Face's own code
executed in float64), Q, K, V and scores over HTTP (token_ids at layer 0,
embeddings at a sliding, a full and kv-shared layers, a left-padded causal
batch), what /info says, /info's description as an inline model, and the
configs that stop start-up naming their key."""
import math
import os

import numpy as np

import arch_common as ac
import checkpoints as ck
import hf_ref
import inline_roundtrip as ir
from mask_models import _masked_close
from harness import Server, fixture_args, info_models, stop_clean

RNG = np.random.default_rng(4404)

DEFAULT_BLOCKS = {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                  "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                     "rope_theta": 1000000.0}}


# ------------------------------------------------------------- the config
def is_3n(cfg):
    return cfg.get("model_type") == "gemma3n_text"


def layer_types(cfg):
    """Gemma4TextConfig.__post_init__: layer_types, else every 6th layer
    full; the last layer is made full_attention whatever the list says.
    Gemma3nTextConfig: every 5th layer full (35 layers), the list as given."""
    n = cfg.get("num_hidden_layers", 35 if is_3n(cfg) else 30)
    every = 5 if is_3n(cfg) else 6
    types = list(cfg.get("layer_types") or
                 ["sliding_attention" if (i + 1) % every else "full_attention" for i in range(n)])
    if not is_3n(cfg):
        types[-1] = "full_attention"
    return types


def layer_shape(cfg, layer):
    """(head_dim, kv_heads) of a layer: per_layer_config[layer] over the
    global keys; without per_layer_config, full layers get global_head_dim
    (512) and, with attention_k_eq_v, num_global_key_value_heads. Gemma 3n:
    the global keys (defaults 256 and 2) for every layer."""
    if is_3n(cfg):
        return cfg.get("head_dim", 256), cfg.get("num_key_value_heads", 2)
    hd, kv = cfg.get("head_dim", 256), cfg.get("num_key_value_heads", 4)
    plc = cfg.get("per_layer_config")
    if plc is not None:
        over = {int(k): v for k, v in plc.items()}.get(layer, {})
        return over.get("head_dim", hd), over.get("num_key_value_heads", kv)
    if layer_types(cfg)[layer] == "full_attention":
        hd = cfg.get("global_head_dim", 512)
        if cfg.get("attention_k_eq_v") and cfg.get("num_global_key_value_heads") is not None:
            kv = cfg["num_global_key_value_heads"]
    return hd, kv


def kv_source(cfg, layer):
    """The layer whose k and v layer reuses (itself when not kv-shared):
    the last layer before the shared ones with the same type."""
    types = layer_types(cfg)
    first = len(types) - cfg.get("num_kv_shared_layers", 15 if is_3n(cfg) else 0)
    if not (layer >= first > 0 if is_3n(cfg) else layer >= first >= 0):
        return layer
    prev = types[:first]
    return len(prev) - 1 - prev[::-1].index(types[layer])


def inv_freq(block, hd):
    """default: theta^(-2i/D); proportional: the first int(prf*D // 2) of
    those, zeros after, over the whole head (divided by factor)."""
    theta = block["rope_theta"]
    if block["rope_type"] == "proportional":
        n = int(block.get("partial_rotary_factor", 1.0) * hd // 2)
        inv = np.zeros(hd // 2)
        inv[:n] = 1.0 / theta ** (np.arange(0, 2 * n, 2, dtype=np.float64) / hd)
        return inv / block.get("factor", 1.0)
    inv = 1.0 / theta ** (np.arange(0, hd, 2, dtype=np.float64) / hd)
    return inv / block["factor"] if block["rope_type"] == "linear" else inv


def rope_blocks(cfg):
    """Gemma 4: rope_parameters as written (Gemma4TextConfig's when none).
    Gemma 3n (convert_rope_params_to_dict): the blocks, default rope each,
    rope_scaling merged into full_attention's; thetas rope_theta (1e6) and
    rope_local_base_freq (1e4) where a block has none."""
    if not is_3n(cfg):
        return cfg.get("rope_parameters") or DEFAULT_BLOCKS
    rp = {k: dict(v) for k, v in (cfg.get("rope_parameters") or {}).items()}
    full = rp.setdefault("full_attention", {"rope_type": "default"})
    full.update(cfg.get("rope_scaling") or {})
    full.setdefault("rope_theta", cfg.get("rope_theta", 1e6))
    sliding = rp.setdefault("sliding_attention", {"rope_type": "default"})
    sliding.setdefault("rope_theta", cfg.get("rope_local_base_freq", 1e4))
    return rp


def rms(x, eps, w=None):
    """Gemma4RMSNorm: x * (mean(x^2) + eps) ** -0.5, times w (not 1 + w)."""
    n = x * ((x ** 2).mean(-1, keepdims=True) + eps) ** -0.5
    return n if w is None else n * w


# ---------------------------------------------------------- the reference
def gemma4(cfg, w, x, positions, layer, prefix="model.language_model.", from_ids=False,
           dtype="F32"):
    """Gemma4TextAttention.forward after the decoder layer's
    input_layernorm: q = rope(q_norm(q_proj(z))); for a kv-shared layer k
    and v are the source layer's (here: from the same input through that
    layer's own input norm and projections); k = rope(k_norm(k_proj(z)));
    v = v_norm(v_proj(z)), or v_norm(k_proj(z)) on full layers with
    attention_k_eq_v; scores q.k^T * 1.0. Token ids: the table times
    sqrt(hidden_size) in its dtype (Gemma4TextScaledWordEmbedding)."""
    H, eps = cfg["num_attention_heads"], cfg.get("rms_norm_eps", 1e-6)
    t = layer_types(cfg)[layer]
    hd, KV = layer_shape(cfg, layer)
    src = kv_source(cfg, layer)
    T = x.shape[0]
    h = x
    if layer == 0 and from_ids:
        s = float(hf_ref._round_to(np.float32(math.sqrt(cfg["hidden_size"])), dtype))
        h = hf_ref._round_to((x * s).astype(np.float32), dtype)

    def lp(L, name):
        return w[f"{prefix}layers.{L}.{name}"]
    bias = cfg.get("attention_bias", False)

    def proj(L, n, z):
        out = z @ lp(L, f"self_attn.{n}_proj.weight").T
        return out + lp(L, f"self_attn.{n}_proj.bias") if bias else out
    zq = rms(h, eps, lp(layer, "input_layernorm.weight"))
    zk = rms(h, eps, lp(src, "input_layernorm.weight"))
    q = rms(proj(layer, "q", zq).reshape(T, H, hd), eps, lp(layer, "self_attn.q_norm.weight"))
    k_raw = proj(src, "k", zk)
    k_eq_v = cfg.get("attention_k_eq_v", False) and t == "full_attention"
    v_raw = k_raw if k_eq_v else proj(src, "v", zk)
    k = rms(k_raw.reshape(T, KV, hd), eps, lp(src, "self_attn.k_norm.weight"))
    v = rms(v_raw.reshape(T, KV, hd), eps).reshape(T, -1)
    block = rope_blocks(cfg)[t]
    inv = inv_freq(block, hd)
    q = hf_ref.apply_rope(q, positions, inv, 1.0).reshape(T, -1)
    k = hf_ref.apply_rope(k, positions, inv, 1.0).reshape(T, -1)
    return {"q": q, "k": k, "v": v, "scores": hf_ref.scores(q, k, H, KV, hd, 1.0)}


# ----------------------------------------------------------- checkpoints
def gemma4_ckpt(seed=4401, dtype="F32", prefix="model.language_model.", layers=6, d=32, heads=4,
                kv_heads=2, head_dim=8, full_head_dim=16, full_kv=1, k_eq_v=True, shared=2,
                form="per_layer_config", vocab=50, bias=False, wrapper=False, **extra):
    """A Gemma 4 text config as transformers 5 writes it: layer_types (a
    full layer every third), rope_parameters nested, and the full layers'
    shape in per_layer_config (form "per_layer_config") or as
    global_head_dim / num_global_key_value_heads ("global"). Norm weights
    are stored as used (x * w), around 1. wrapper: the gemma4 config with
    this as text_config."""
    types = ["sliding_attention" if (i + 1) % 3 else "full_attention" for i in range(layers)]
    cfg = {"architectures": ["Gemma4ForCausalLM"], "model_type": "gemma4_text",
           "hidden_size": d, "intermediate_size": 2 * d, "num_attention_heads": heads,
           "num_key_value_heads": kv_heads, "num_hidden_layers": layers, "head_dim": head_dim,
           "rms_norm_eps": 1e-6, "attention_bias": bias, "max_position_embeddings": 4096,
           "vocab_size": vocab, "layer_types": types, "sliding_window": 512,
           "rope_parameters": {"full_attention": {"partial_rotary_factor": 0.25,
                                                  "rope_theta": 1000000.0,
                                                  "rope_type": "proportional"},
                               "sliding_attention": {"rope_theta": 10000.0,
                                                     "rope_type": "default"}},
           "attention_k_eq_v": k_eq_v, "num_kv_shared_layers": shared,
           "hidden_size_per_layer_input": 4, "vocab_size_per_layer_input": vocab,
           "final_logit_softcapping": 30.0, "hidden_activation": "gelu_pytorch_tanh",
           "tie_word_embeddings": True, "torch_dtype": "bfloat16"}
    full = {"head_dim": full_head_dim}
    if k_eq_v:
        full["num_key_value_heads"] = full_kv
    if form == "per_layer_config":
        cfg["per_layer_config"] = {f"{i:02d}": dict(full) for i, t in enumerate(types)
                                   if t == "full_attention"}
    else:
        cfg["global_head_dim"], cfg["num_global_key_value_heads"] = full_head_dim, full_kv
    cfg.update(extra)
    cfg = {k: v for k, v in cfg.items() if v is not None}
    g = ck.Gen(seed, dtype)
    g.add(prefix + "embed_tokens.weight", (vocab, d), 1.0)
    g.add(prefix + "embed_tokens_per_layer.weight", (vocab, layers * 4))
    g.add(prefix + "per_layer_model_projection.weight", (layers * 4, d))
    g.add(prefix + "per_layer_projection_norm.weight", (4,), 0.2, 1.0)
    for L in range(layers):
        _layer(g, f"{prefix}layers.{L}.", cfg, L, d, bias)
    g.add(prefix + "norm.weight", (d,), 0.2, 1.0)
    if wrapper:
        cfg = {"architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4",
               "text_config": cfg, "vision_config": {"model_type": "gemma4_vision"},
               "image_token_id": 258880}
    return ck.Checkpoint(cfg, g.out)


def _layer(g, p, cfg, L, d, bias):
    """One decoder layer's tensors: what Gemma4TextAttention builds for it."""
    H = cfg["num_attention_heads"]
    hd, KV = layer_shape(cfg, L)
    full = layer_types(cfg)[L] == "full_attention"
    g.add(p + "input_layernorm.weight", (d,), 0.2, 1.0)
    names = [("q", H * hd)]
    if kv_source(cfg, L) == L:
        names.append(("k", KV * hd))
        if not (cfg.get("attention_k_eq_v") and full):
            names.append(("v", KV * hd))
        g.add(p + "self_attn.k_norm.weight", (hd,), 0.2, 1.0)
    g.add(p + "self_attn.q_norm.weight", (hd,), 0.2, 1.0)
    for n, rows in names:
        g.add(p + f"self_attn.{n}_proj.weight", (rows, d))
        if bias:
            g.add(p + f"self_attn.{n}_proj.bias", (rows,), 0.2)
    g.add(p + "self_attn.o_proj.weight", (d, H * hd))
    if bias:
        g.add(p + "self_attn.o_proj.bias", (d,), 0.2)
    for n in ("post_attention_layernorm", "pre_feedforward_layernorm",
              "post_feedforward_layernorm", "post_per_layer_input_norm"):
        g.add(p + n + ".weight", (d,), 0.2, 1.0)
    g.add(p + "per_layer_input_gate.weight", (4, d))
    g.add(p + "per_layer_projection.weight", (d, 4))
    g.add(p + "mlp.gate_proj.weight", (2 * d, d))
    g.add(p + "layer_scalar", (1,), 0.0, 1.0)


def gemma3n_ckpt(seed=4411, dtype="F32", prefix="model.language_model.", layers=6, d=32, heads=4,
                 kv_heads=2, head_dim=8, shared=2, vocab=50, wrapper=False, **extra):
    """A Gemma 3n text config as released (rope_theta, rope_local_base_freq,
    layer_types: a full layer every third) with AltUp's and LAuReL's tensors
    beside the attention (not read); extra keys override (None drops)."""
    types = ["sliding_attention" if (i + 1) % 3 else "full_attention" for i in range(layers)]
    cfg = {"architectures": ["Gemma3nForCausalLM"], "model_type": "gemma3n_text",
           "hidden_size": d, "intermediate_size": [2 * d] * layers, "num_attention_heads": heads,
           "num_key_value_heads": kv_heads, "num_hidden_layers": layers, "head_dim": head_dim,
           "rms_norm_eps": 1e-6, "attention_bias": False, "vocab_size": vocab,
           "layer_types": types, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
           "num_kv_shared_layers": shared, "altup_num_inputs": 4, "altup_active_idx": 0,
           "laurel_rank": 4, "hidden_size_per_layer_input": 4, "sliding_window": 512,
           "final_logit_softcapping": 30.0, "activation_sparsity_pattern": [0.0] * layers}
    cfg.update(extra)
    cfg = {k: v for k, v in cfg.items() if v is not None}
    g = ck.Gen(seed, dtype)
    g.add(prefix + "embed_tokens.weight", (vocab, d), 1.0)
    for i in range(3):
        g.add(prefix + f"altup_projections.{i}.weight", (d, d))
    for L in range(layers):
        p = f"{prefix}layers.{L}."
        _layer(g, p, cfg, L, d, False)
        g.add(p + "altup.prediction_coefs.weight", (16, 4))
        g.add(p + "altup.modality_router.weight", (4, d))
        g.add(p + "laurel.linear_left.weight", (4, d))
    g.add(prefix + "norm.weight", (d,), 0.2, 1.0)
    if wrapper:
        cfg = {"architectures": ["Gemma3nForConditionalGeneration"], "model_type": "gemma3n",
               "text_config": cfg, "vision_config": {"model_type": "gemma3n_vision"},
               "audio_config": {"model_type": "gemma3n_audio"}}
    return ck.Checkpoint(cfg, g.out)


def text_config(ckpt):
    return ckpt.config.get("text_config", ckpt.config)


def _cases():
    """name: (checkpoint, layer, prefix, shards)."""
    f32 = gemma4_ckpt()
    bf = gemma4_ckpt(seed=4402, dtype="BF16", form="global", wrapper=True, shared=1,
                     k_eq_v=False, bias=True)
    dflt = gemma4_ckpt(seed=4403, prefix="model.", layers=7, k_eq_v=False, shared=0,
                       form="global", full_head_dim=32, layer_types=None,
                       rope_parameters=None, head_dim=16)
    n3 = gemma3n_ckpt(wrapper=True, rope_scaling={"rope_type": "linear", "factor": 4.0},
                      rope_local_base_freq=100.0)
    n3b = gemma3n_ckpt(seed=4412, dtype="BF16", prefix="model.", layers=6, layer_types=None,
                       rope_theta=None, rope_local_base_freq=None, shared=0, kv_heads=1,
                       head_dim=16,
                       rope_parameters={"full_attention": {"rope_type": "default",
                                                           "rope_theta": 5000.0},
                                        "sliding_attention": {"rope_type": "default",
                                                              "rope_theta": 20.0}})
    return {"g4_l0": (f32, 0, "model.language_model.", 2),     # sliding, token_ids
            "g4_l1": (f32, 1, "model.language_model.", 2),     # sliding
            "g4_l2": (f32, 2, "model.language_model.", 2),     # full: proportional, k = v
            "g4_l4": (f32, 4, "model.language_model.", 2),     # kv-shared from 3
            "g4_l5": (f32, 5, "model.language_model.", 2),     # kv-shared from 2, k = v
            "g4bf_l0": (bf, 0, "model.language_model.", 0),
            "g4bf_l2": (bf, 2, "model.language_model.", 0),    # full, v_proj, biases
            "g4bf_l5": (bf, 5, "model.language_model.", 0),    # kv-shared from 2
            "g4d_l5": (dflt, 5, "model.", 0),                  # defaults: 6th layer full
            "g4d_l6": (dflt, 6, "model.", 0),                  # last layer forced full
            "g3n_l0": (n3, 0, "model.language_model.", 0),     # from embeddings only
            "g3n_l2": (n3, 2, "model.language_model.", 0),     # full: rope_theta, linear
            "g3n_l4": (n3, 4, "model.language_model.", 0),     # kv-shared from 3
            "g3n_l5": (n3, 5, "model.language_model.", 0),     # kv-shared from 2
            "g3nb_l3": (n3b, 3, "model.", 2),                  # defaults: sliding
            "g3nb_l4": (n3b, 4, "model.", 2)}                  # every 5th layer full


def _want(case, rows, pos, from_ids=False):
    ckpt, layer, prefix, _ = case
    return gemma4(text_config(ckpt), ckpt.weights(), np.asarray(rows, np.float64), pos, layer,
                  prefix, from_ids=from_ids, dtype=ckpt.tensors[0][1])


# ---------------------------------------------------------------- checks
def _requests(C, srv, name, case):
    ckpt, layer, prefix, _ = case
    T, ret = 6, ["q", "k", "v", "scores"]
    if layer == 0 and is_3n(text_config(ckpt)):  # AltUp's stream: not computed
        st, r = srv.request("/apply", {"model": name, "token_ids": [1, 2, 3]})
        C.check(st == 422 and r["error"]["field"] == "token_ids"
                and "AltUp" in r["error"]["message"] and "embeddings" in r["error"]["message"],
                f"{name}: token_ids refused naming token_ids and AltUp: {st} {r}")
    elif layer == 0:
        table = ckpt.weights()[prefix + "embed_tokens.weight"]
        ids = RNG.integers(0, table.shape[0], T)
        st, r = srv.request("/apply", {"model": name, "token_ids": ids.tolist(), "return": ret})
        if C.check(st == 200, f"{name} token_ids: status {st} {r}"):
            want = _want(case, table[ids], np.arange(T), from_ids=True)
            for k in ret:
                C.close(f"{name} token_ids: {k}", r[k], want[k])
    x = RNG.standard_normal((2, T, text_config(ckpt)["hidden_size"])).astype(np.float32)
    p2 = np.array([[0, 1, 2, 3, 4, 5], [7, 8, 9, 300, 3100, 40000]])
    st, r = srv.request("/apply", {"model": name, "embeddings": x.tolist(),
                                   "positions": p2.tolist(), "return": ret})
    if C.check(st == 200, f"{name} embeddings: status {st} {r}"):
        for b in range(2):
            want = _want(case, x[b], p2[b])
            for k in ret:
                C.close(f"{name} embeddings row {b}: {k}", np.array(r[k][b]), want[k])


def _padded(C, srv, name, case):
    """A left-padded causal batch: positions cumsum(mask) - 1 (pads 1);
    masked keys and future keys read float32's lowest."""
    ckpt, layer, prefix, _ = case
    S = 8
    table = ckpt.weights()[prefix + "embed_tokens.weight"]
    body, rows, pos, mask = ac.padded_batch(RNG, name, S, 3, layer, table,
                                            text_config(ckpt)["hidden_size"], causal=True)
    st, r = srv.request("/apply", body)
    if not C.check(st == 200, f"{name} padded batch: status {st} {r}"):
        return
    keep = mask.astype(bool)[:, None, :] & np.tri(S, dtype=bool)  # [row][query][key]
    wants = [_want(case, rows[b], pos[b], from_ids=layer == 0) for b in range(2)]
    for b, want in enumerate(wants):
        what = f"{name} padded row {b}"
        for k in "qkv":
            C.close(f"{what}: {k}", np.array(r[k][b]), want[k])
        _masked_close(C, f"{what}: scores (masked and future keys lowest)", r["scores"][b],
                      want["scores"], keep[b][None])


def _info(C, models):
    m = models["g4_l2"]
    C.check(m["head_dim"] == 16 and m["kv_heads"] == 1 and m.get("k_eq_v") is True
            and "kv_shared_from" not in m and m["rope_block"] == "full_attention"
            and m["params"].get("rope_type") == "proportional"
            and m["params"].get("partial_rotary_factor") == 0.25
            and m["params"].get("score_scale") == 1 and m.get("v_norm", {}).get("type") == "rmsnorm"
            and m["qk_norm"] == {"type": "rmsnorm", "over": "head", "weights": "shared",
                                 "eps": 1e-6}
            and "wv" not in m["weights"] and m["weights"]["wk"] == [32, 16],
            f"/info gemma4_text full layer: head_dim 16, 1 kv head, k_eq_v, proportional, "
            f"score scale 1, v_norm: {m}")
    s = models["g4_l1"]
    C.check(s["head_dim"] == 8 and s["kv_heads"] == 2 and "k_eq_v" not in s
            and s["rope_block"] == "sliding_attention" and s["params"]["base"] == 10000
            and "rope_type" not in s["params"] and s["weights"]["wv"] == [32, 16],
            f"/info gemma4_text sliding layer: head_dim 8, 2 kv heads, default rope: {s}")
    for name, src, hd in (("g4_l4", 3, 8), ("g4_l5", 2, 16), ("g4bf_l5", 2, 16)):
        m = models[name]
        C.check(m.get("kv_shared_from") == src and m["head_dim"] == hd,
                f"/info {name}: kv_shared_from {src}, head_dim {hd}: {m}")
    b = models["g4bf_l2"]
    C.check(b["architecture"] == "gemma4_text" and b.get("wrapper") == "gemma4"
            and b.get("text_config") is True and b["head_dim"] == 16 and b["kv_heads"] == 2
            and "k_eq_v" not in b and b["dtype"] == "BF16" and b["weights"].get("bv") == [32],
            f"/info gemma4 wrapper, global_head_dim without k_eq_v: 2 kv heads, biases: {b}")
    n = models["g3n_l2"]
    C.check(n["architecture"] == "gemma3n_text" and n.get("wrapper") == "gemma3n"
            and n["head_dim"] == 8 and n["kv_heads"] == 2 and "k_eq_v" not in n
            and n["rope_block"] == "full_attention" and n["params"]["base"] == 1000000
            and n["params"].get("scaling") == {"type": "linear", "factor": 4}
            and n["params"].get("score_scale") == 1 and n.get("v_norm", {}).get("eps") == 1e-6
            and "token_embedding" not in models["g3n_l0"]["weights"]
            and models["g3n_l4"].get("kv_shared_from") == 3
            and models["g3n_l5"].get("kv_shared_from") == 2
            and "kv_shared_from" not in models["g3nb_l4"]
            and models["g3nb_l4"]["rope_block"] == "full_attention"
            and models["g3nb_l3"]["params"]["base"] == 20,
            f"/info gemma3n_text: wrapper, one shape, Gemma 3's rope blocks, kv sharing, "
            f"no token table at layer 0: {n}")
    d = models["g4d_l6"]
    C.check(d["rope_block"] == "full_attention" and d["head_dim"] == 32
            and models["g4d_l5"]["rope_block"] == "full_attention"
            and d["params"].get("base") == 1000000,
            f"/info gemma4 defaults: layers 5 and 6 full, head_dim 512's stand-in 32: {d}")


def _effective(m, ckpt, layer, prefix):
    """The arrays in effect for /info's weights: q from the layer, k and v
    from its kv source, a shared layer's input norms folded in (norm 1)."""
    cfg, w = text_config(ckpt), ckpt.weights()
    src = kv_source(cfg, layer)
    f32 = ir.f32

    def lw(L, name):
        return f32(w[f"{prefix}layers.{L}.{name}"])
    out = {"wq": lw(layer, "self_attn.q_proj.weight").T, "wk": lw(src, "self_attn.k_proj.weight").T,
           "norm_weight": lw(layer, "input_layernorm.weight"),
           "q_norm_weight": lw(layer, "self_attn.q_norm.weight"),
           "k_norm_weight": lw(src, "self_attn.k_norm.weight")}
    if "k_eq_v" not in m:
        out["wv"] = lw(src, "self_attn.v_proj.weight").T
    for n in "qkv":
        name = f"self_attn.{n}_proj.bias"
        if f"b{n}" in m["weights"]:
            out[f"b{n}"] = lw(layer if n == "q" else src, name)
    if src != layer:
        out["wq"] = out["wq"] * out["norm_weight"][:, None]
        for n in ("wk", "wv"):
            if n in out:
                out[n] = out[n] * lw(src, "input_layernorm.weight")[:, None]
        out["norm_weight"] = np.ones_like(out["norm_weight"])
    return {k: f32(v).tolist() for k, v in out.items()}


def _round_trip(C, srv, name, m, ckpt, layer, prefix):
    model = {k: v for k, v in m.items() if k not in ir.INFO_ONLY}
    model["weights"] = _effective(m, ckpt, layer, prefix)
    listed = set(m["weights"]) - {"token_embedding"}
    if not C.check(set(model["weights"]) == listed,
                   f"{name}: inline weights are /info's: {sorted(listed ^ set(model['weights']))}"):
        return
    T, ret = 6, ["q", "k", "v", "scores"]
    x = RNG.standard_normal((T, m["d_model"])).astype(np.float32).tolist()
    for extra in ({}, {"embeddings": [x, x[2:] + x[:2]], "causal": True,
                       "attention_mask": [[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]]},
                  {"offset": 20000}):
        body = dict({"embeddings": x, "return": ret}, **extra)
        st1, a = srv.request("/apply", dict(body, model=name))
        st2, b = srv.request("/apply", dict(body, model=model))
        if C.check(st1 == st2 == 200, f"{name} inline {sorted(extra)}: {st1} {st2} {str(b)[:300]}"):
            ir._same(C, f"{name} inline {sorted(extra) or 'one row'}", a, b, ret)


def _inline_refusals(C, srv, m, ckpt, layer, prefix):
    """Gemma 4's steps in an inline model, malformed: 400 naming the key."""
    base = {k: v for k, v in m.items() if k not in ir.INFO_ONLY}
    base["weights"] = _effective(m, ckpt, layer, prefix)
    w = base["weights"]
    cases = [("v_norm type", {"v_norm": {"type": "layernorm"}}, 400, "model.v_norm.type"),
             ("v_norm without type", {"v_norm": {"eps": 1e-6}}, 400, "model.v_norm.type"),
             ("v_norm eps 0", {"v_norm": {"type": "rmsnorm", "eps": 0}}, 422, "model.v_norm.eps"),
             ("k_eq_v with wv", {"weights": dict(w, wv=w["wk"])}, 400, "model.weights.wv"),
             ("k_eq_v a string", {"k_eq_v": "yes"}, 400, "model.k_eq_v"),
             ("kv_shared_from -1", {"kv_shared_from": -1}, 422, "model.kv_shared_from"),
             ("v_norm with mla", {"qk_norm": None, "k_eq_v": None, "kv_heads": 4,
                                  "mla": {"q_lora_rank": 0, "kv_lora_rank": 4,
                                          "qk_nope_head_dim": 8, "qk_rope_head_dim": 8,
                                          "v_head_dim": 4}}, 400, "model.v_norm")]
    x = [[0.1] * base["d_model"]] * 3
    for label, over, status, field in cases:
        model = {k: v for k, v in dict(base, **over).items() if v is not None}
        st, r = srv.request("/apply", {"model": model, "embeddings": x})
        C.check(st == status and r.get("error", {}).get("field") == field,
                f"inline gemma4 ({label}) -> {status} naming {field}: {st} {r}")


def _malformed(C, root):
    c = gemma4_ckpt(seed=4405)
    plc = c.config["per_layer_config"]
    rp = c.config["rope_parameters"]
    bad = [
        ("rope_scaling", 1, {"rope_scaling": {"rope_type": "linear", "factor": 2.0}},
         ["rope_scaling", "gemma4_text"]),
        ("no sliding block", 1, {"rope_parameters": {"full_attention": rp["full_attention"]}},
         ["rope_parameters has no sliding_attention block"]),
        ("block without theta", 2, {"rope_parameters": dict(rp, full_attention={
            "rope_type": "proportional", "partial_rotary_factor": 0.25})},
         ["rope_parameters.full_attention has no rope_theta"]),
        ("plc not an index", 1, {"per_layer_config": dict(plc, x1={"head_dim": 8})},
         ["per_layer_config key 'x1'"]),
        ("plc out of range", 1, {"per_layer_config": dict(plc, **{"9": {"head_dim": 8}})},
         ["per_layer_config key '9'"]),
        ("plc head_dim string", 2, {"per_layer_config": dict(plc, **{"02": {"head_dim": "16"}})},
         ["per_layer_config.02.head_dim"]),
        ("plc global key", 2, {"per_layer_config": dict(plc, **{"02": {"head_dim": 16,
                                                                        "rms_norm_eps": 1e-5}})},
         ["per_layer_config.02.rms_norm_eps"]),
        ("plc not homogeneous", 1, {"per_layer_config": dict(plc, **{"03": {"head_dim": 16}})},
         ["per_layer_config", "layer 3 (sliding_attention)"]),
        ("chunked layer", 1, {"layer_types": ["sliding_attention", "chunked_attention"] +
                              c.config["layer_types"][2:]},
         ["layer_types[1]", "chunked_attention"]),
        ("no shared source", 5, {"num_kv_shared_layers": 5},
         ["layer 5 shares k and v", "no earlier layer is full_attention"]),
        ("top-level partial_rotary_factor", 2, {"partial_rotary_factor": 0.5},
         ["partial_rotary_factor at the top level", "rope_parameters.full_attention"]),
        ("v_proj of a k_eq_v source", 5, {"attention_k_eq_v": False},
         ["layers.2.self_attn.v_proj.weight"]),
    ]
    n3 = gemma3n_ckpt(seed=4413, layers=4, layer_types=None, shared=None)
    n3_cfg = n3.config
    bad3n = [("3n default kv sharing of 4 layers", n3, ["num_kv_shared_layers 15 with 4 layers",
                                                         "gemma3n_text", "layer_types[:-11]"],
              None, 1),
             ("3n hidden not divisible", n3, ["hidden_size 32 is not a multiple",
                                              "num_attention_heads 5"],
              dict(n3_cfg, num_attention_heads=5, num_key_value_heads=1, num_kv_shared_layers=0),
              1),
             ("4 all shared", c, ["layer 1 shares k and v", "no earlier layer"],
              dict(c.config, num_kv_shared_layers=6), 1)]
    ac.refused(C, root, "badgemma3n", bad3n)
    ac.refused(C, root, "badgemma4",
               [(label, c, want, dict(c.config, **over), layer)
                for label, layer, over, want in bad])


def _warnings(C, root):
    """A last layer listed as sliding is served full, with a warning."""
    c = gemma4_ckpt(seed=4406, shared=0)
    types = c.config["layer_types"][:-1] + ["sliding_attention"]
    d = os.path.join(root, "gemma4_last_sliding")
    c.write(d, config=dict(c.config, layer_types=types))
    with Server(["--model", f"g={d}:5"]) as srv:
        models = info_models(C, srv, "gemma4 last layer")
        C.check(models is not None and models["g"]["rope_block"] == "full_attention"
                and models["g"]["head_dim"] == 16,
                f"gemma4 last layer listed sliding: served full: {models and models['g']}")
        stop_clean(C, srv, "gemma4 last layer")
    C.check("layer_types[5] is sliding_attention" in srv.stderr(),
            f"gemma4: a warning names layer_types[5]: {srv.stderr()[-400:]}")


def gemma4_checks(root, C):
    cases = _cases()
    args = fixture_args(root, "gemma4", {n: (c[0], c[1], c[3]) for n, c in cases.items()})
    with Server(args) as srv:
        for name, case in cases.items():
            _requests(C, srv, name, case)
        for name in ("g4_l0", "g4_l2", "g4_l5", "g4bf_l5", "g3n_l5", "g3nb_l4"):
            _padded(C, srv, name, cases[name])
        models = info_models(C, srv, "gemma4")
        if models:
            _info(C, models)
            for name, (ckpt, layer, prefix, _) in cases.items():
                _round_trip(C, srv, name, models[name], ckpt, layer, prefix)
            _inline_refusals(C, srv, models["g4_l2"], *cases["g4_l2"][:3])
        stop_clean(C, srv, "gemma4")
    _malformed(C, root)
    _warnings(C, root)
