"""Gated attention (Qwen3-Next: qwen3_next; Qwen3.5 / 3.6 text models:
qwen3_5_text, qwen3_5_moe_text). Checkpoints with the real config keys and
tensor names (full-attention layers' self_attn.q_proj holding per head
[query | gate], linear_attention layers' linear_attn.* tensors beside them),
a numpy restatement of Qwen3_5Attention.forward / Qwen3NextAttention.forward
(checked against Hugging Face's own code executed in float64), Q, K, V,
scores and the gate over HTTP (token_ids at layer 0, embeddings at later
layers, a padded batch), what /info says, and the configs that stop
start-up: a linear_attention layer chosen (named), an unknown layer type, a
layer_types list of the wrong length."""
import os

import numpy as np

import arch_common as ac
import checkpoints as ck
import hf_ref
from harness import Server, fixture_args, info_models, run_failing, sanitizer_clean, stop_clean

RNG = np.random.default_rng(3505)


def gated_ckpt(seed=3501, dtype="F32", prefix="model.language_model.", model_type="qwen3_5_text",
               layers=4, d=32, heads=4, kv_heads=2, head_dim=16, vocab=50, bias=False,
               layer_types="listed", **extra):
    """A Qwen3.5 text config as transformers 5 writes it (rope_parameters
    with mrope_section / mrope_interleaved, partial_rotary_factor 0.25 at
    the top level and in the block, layer_types, full_attention_interval)
    or, with layer_types None, Qwen3-Next's (rope_theta and
    partial_rotary_factor at the top level, layer_types left to
    full_attention_interval). Norm weights are zero-centred, as stored."""
    interval = extra.pop("full_attention_interval", 4)
    types = ["linear_attention" if (i + 1) % interval else "full_attention" for i in range(layers)]
    if isinstance(layer_types, list):
        types = layer_types
    cfg = {"architectures": ["Qwen3_5ForCausalLM" if "3_5" in model_type
                             else "Qwen3NextForCausalLM"],
           "model_type": model_type, "hidden_size": d, "intermediate_size": 2 * d,
           "num_attention_heads": heads, "num_key_value_heads": kv_heads,
           "num_hidden_layers": layers, "head_dim": head_dim, "rms_norm_eps": 1e-6,
           "attention_bias": bias, "max_position_embeddings": 64, "vocab_size": vocab,
           "full_attention_interval": interval, "linear_conv_kernel_dim": 4,
           "linear_key_head_dim": 8, "linear_value_head_dim": 8, "linear_num_key_heads": 2,
           "linear_num_value_heads": 4, "hidden_act": "silu", "tie_word_embeddings": False,
           "partial_rotary_factor": 0.25, "torch_dtype": "bfloat16"}
    if layer_types is None:
        cfg["rope_theta"] = 1000000.0
    else:
        cfg["layer_types"] = types
        cfg["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000000.0,
                                  "partial_rotary_factor": 0.25, "mrope_section": [1, 1, 0],
                                  "mrope_interleaved": True}
    cfg.update(extra)
    cfg = {k: v for k, v in cfg.items() if v is not None}
    g = ck.Gen(seed, dtype)
    g.add(prefix + "embed_tokens.weight", (vocab, d), 1.0)
    for L in range(layers):
        p = f"{prefix}layers.{L}."
        g.add(p + "input_layernorm.weight", (d,), 0.2)
        g.add(p + "post_attention_layernorm.weight", (d,), 0.2)
        if types[L] == "full_attention":
            g.add(p + "self_attn.q_proj.weight", (2 * heads * head_dim, d))
            g.add(p + "self_attn.k_proj.weight", (kv_heads * head_dim, d))
            g.add(p + "self_attn.v_proj.weight", (kv_heads * head_dim, d))
            if bias:
                g.add(p + "self_attn.q_proj.bias", (2 * heads * head_dim,), 0.2)
                g.add(p + "self_attn.k_proj.bias", (kv_heads * head_dim,), 0.2)
                g.add(p + "self_attn.v_proj.bias", (kv_heads * head_dim,), 0.2)
            g.add(p + "self_attn.q_norm.weight", (head_dim,), 0.2)
            g.add(p + "self_attn.k_norm.weight", (head_dim,), 0.2)
            g.add(p + "self_attn.o_proj.weight", (d, heads * head_dim))
        else:  # Gated DeltaNet: what the loader must leave alone
            g.add(p + "linear_attn.in_proj_qkvz.weight", (48, d))
            g.add(p + "linear_attn.in_proj_ba.weight", (8, d))
            g.add(p + "linear_attn.conv1d.weight", (32, 1, 4))
            g.add(p + "linear_attn.A_log", (4,))
            g.add(p + "linear_attn.dt_bias", (4,))
            g.add(p + "linear_attn.norm.weight", (8,), 0.1, 1.0)
            g.add(p + "linear_attn.out_proj.weight", (d, 32))
        g.add(p + "mlp.gate_proj.weight", (2 * d, d))
        g.add(p + "mlp.down_proj.weight", (d, 2 * d))
    g.add(prefix + "norm.weight", (d,), 0.2)
    g.add("lm_head.weight", (vocab, d))
    return ck.Checkpoint(cfg, g.out)


def _one_plus_rms(x, w, eps):
    """Qwen3_5RMSNorm / Qwen3NextRMSNorm: x * rsqrt(mean(x^2) + eps) * (1 + w)."""
    return x / np.sqrt((x ** 2).mean(-1, keepdims=True) + eps) * (1.0 + w)


def gated(cfg, w, x, positions, layer, prefix="model.language_model."):
    """Qwen3_5Attention.forward / Qwen3NextAttention.forward after the
    decoder layer's input_layernorm: q_proj(z) viewed [T][H][2D] splits into
    query | gate; q = q_norm(query), k = k_norm(k_proj(z)) (per head, 1 + w),
    v = v_proj(z); apply_rotary_pos_emb rotates the first
    R = D * partial_rotary_factor channels (rotate_half over R) with
    inv_freq = theta^(-2i/R); text positions make Qwen3.5's interleaved
    M-RoPE the same angles. gate = the second half, [T][H*D]."""
    p = f"{prefix}layers.{layer}."
    H, KV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D = cfg.get("head_dim", 256)
    eps = cfg.get("rms_norm_eps", 1e-6)
    T = x.shape[0]
    z = _one_plus_rms(x, w[p + "input_layernorm.weight"], eps)
    lin = {n: z @ w[p + f"self_attn.{n}_proj.weight"].T for n in "qkv"}
    if cfg.get("attention_bias", False):
        lin = {n: a + w[p + f"self_attn.{n}_proj.bias"] for n, a in lin.items()}
    qg = lin["q"].reshape(T, H, 2 * D)
    query, gate = qg[..., :D], qg[..., D:].reshape(T, H * D)
    q = _one_plus_rms(query, w[p + "self_attn.q_norm.weight"], eps)
    k = _one_plus_rms(lin["k"].reshape(T, KV, D), w[p + "self_attn.k_norm.weight"], eps)
    rp = cfg.get("rope_parameters") or {}
    theta = rp.get("rope_theta", cfg.get("rope_theta", 10000.0))
    R = int(D * cfg.get("partial_rotary_factor", rp.get("partial_rotary_factor", 0.25)))
    inv = 1.0 / theta ** (np.arange(0, R, 2, dtype=np.float64) / R)
    q = hf_ref.apply_rope(q, positions, inv, 1.0).reshape(T, -1)
    k = hf_ref.apply_rope(k, positions, inv, 1.0).reshape(T, -1)
    return {"q": q, "k": k, "v": lin["v"], "gate": gate,
            "scores": hf_ref.scores(q, k, H, KV, D, D ** -0.5)}


def _cases():
    """name: (checkpoint, layer, prefix, shards)."""
    c35 = gated_ckpt()
    nxt = gated_ckpt(seed=3502, dtype="BF16", prefix="model.", model_type="qwen3_next",
                     layer_types=None, bias=True, full_attention_interval=2, kv_heads=1)
    moe = gated_ckpt(seed=3503, dtype="F16", prefix="model.", model_type="qwen3_5_moe_text",
                     layers=2, layer_types=["full_attention", "linear_attention"], heads=2,
                     head_dim=32, rope_parameters={"rope_type": "default",
                                                   "rope_theta": 10000000.0,
                                                   "partial_rotary_factor": 0.25,
                                                   "mrope_section": [2, 1, 1],
                                                   "mrope_interleaved": True})
    return {"qwen3_5_l3": (c35, 3, "model.language_model.", 0),
            "qwen3_next_l1": (nxt, 1, "model.", 2),
            "qwen3_next_l3": (nxt, 3, "model.", 2),
            "qwen3_5_moe": (moe, 0, "model.", 0)}


def _close(C, what, got, want):
    C.close(what, np.asarray(got, np.float64), want)


def _requests(C, srv, name, case):
    ckpt, layer, prefix, _ = case
    w, cfg = ckpt.weights(), ckpt.config
    T, ret = 6, ["q", "k", "v", "scores", "gate"]
    pos = np.arange(T)
    if layer == 0:
        table = w[prefix + "embed_tokens.weight"]
        ids = RNG.integers(0, table.shape[0], T)
        st, r = srv.request("/apply", {"model": name, "token_ids": ids.tolist(), "return": ret})
        if C.check(st == 200, f"{name} token_ids: status {st} {r}"):
            want = gated(cfg, w, table[ids], pos, layer, prefix)
            for k in ret:
                _close(C, f"{name} token_ids: {k}", r[k], want[k])
    x = RNG.standard_normal((2, T, cfg["hidden_size"]))
    p2 = np.array([[0, 1, 2, 3, 4, 5], [7, 8, 9, 30, 31, 32]])
    st, r = srv.request("/apply", {"model": name, "embeddings": x.tolist(),
                                   "positions": p2.tolist(), "return": ret})
    if C.check(st == 200, f"{name} embeddings: status {st} {r}"):
        for b in range(2):
            want = gated(cfg, w, x[b], p2[b], layer, prefix)
            for k in ret:
                _close(C, f"{name} embeddings row {b}: {k}", np.array(r[k][b]), want[k])
    # the gate alone, and q/k/v without it, are the same bits as together
    st2, r2 = srv.request("/apply", {"model": name, "embeddings": x.tolist(),
                                     "positions": p2.tolist()})
    st3, r3 = srv.request("/apply", {"model": name, "embeddings": x.tolist(),
                                     "positions": p2.tolist(), "return": ["gate"]})
    C.check(st == st2 == st3 == 200 and all(r[k] == r2[k] for k in "qkv")
            and r3["gate"] == r["gate"] and list(r3) == ["model", "scheme", "shape", "gate"],
            f"{name}: q, k, v alike with and without the gate; the gate alone: {st2} {st3}")


def _info(C, models):
    m = models["qwen3_5_l3"]
    C.check(m.get("gate") == "sigmoid" and m["head_dim"] == 16
            and m["params"].get("partial_rotary_factor") == 0.25
            and m["params"].get("base") == 10000000
            and m["qk_norm"]["over"] == "head" and m["qk_norm"]["type"] == "rmsnorm"
            and m["weights"].get("w_gate") == [32, 64] and m["weights"].get("wq") == [32, 64]
            and m["params"].get("mrope") == {"section": [1, 1, 0], "style": "interleaved"},
            f"/info qwen3_5_text: gate, rotary 0.25 of 16, theta 1e7, q/k norm per head, "
            f"interleaved mrope [1, 1, 0]: {m}")
    n = models["qwen3_next_l1"]
    C.check(n.get("gate") == "sigmoid" and n["params"].get("base") == 1000000
            and n["weights"].get("b_gate") == [64] and n["dtype"] == "BF16"
            and "mrope" not in n["params"],
            f"/info qwen3_next: theta 1e6, gate bias, BF16, no mrope: {n}")


def _gate_refused(C, srv):
    st, r = srv.request("/apply", {"embeddings": [[0.1] * 512], "return": ["q", "gate"]})
    C.check(st == 400 and r["error"]["field"] == "return[1]" and "gate" in r["error"]["message"],
            f"return gate of the built-in model (no gate) -> 400 naming return[1]: {st} {r}")
    st, r = srv.request("/apply", {"embeddings": [[0.1] * 512], "return": ["gates"]})
    C.check(st == 400 and "gate" in r["error"]["message"],
            f"return 'gates' -> 400 listing gate among the names: {st} {r}")


def _malformed(C, root):
    c = gated_ckpt(seed=3504, layers=4)
    nxt = gated_ckpt(seed=3506, prefix="model.", model_type="qwen3_next", layer_types=None)
    bad = [
        ("linear layer listed", c, 0, {}, ["layer 0 is linear_attention", "layer_types"]),
        ("linear layer by interval", nxt, 2, {},
         ["layer 2 is linear_attention", "full_attention_interval"]),
        ("legacy mamba", c, 3, {"layer_types": ["attention", "mamba", "mamba", "mamba"]},
         ["layer 3 is linear_attention"]),
        ("sliding type", c, 3, {"layer_types": ["linear_attention"] * 3 + ["sliding_attention"]},
         ["layer_types[3]", "sliding_attention"]),
        ("short layer_types", c, 3, {"layer_types": ["full_attention"] * 2},
         ["layer_types has 2 entries", "num_hidden_layers is 4"]),
        ("q_proj rows", None, 3, {}, ["layers.3.self_attn.q_proj.weight"]),
    ]
    for label, ckpt, layer, over, want in bad:
        d = os.path.join(root, "badgated_" + label.replace(" ", "_"))
        if ckpt is None:  # q_proj without the gate half
            ckpt = gated_ckpt(seed=3507)
            ckpt = ck.Checkpoint(ckpt.config, [
                (n, dt, a[: a.shape[0] // 2] if n.endswith("3.self_attn.q_proj.weight") else a)
                for n, dt, a in ckpt.tensors])
        ckpt.write(d, config=dict(ckpt.config, **over))
        st, err, listened = run_failing(["--model", f"bad={d}:{layer}"])
        C.check(st == 2 and not listened and all(s in err for s in want),
                f"gated malformed ({label}): exit {st}, want {want} in: {err.strip()[:400]}")
        C.check(sanitizer_clean(err), f"gated malformed ({label}): sanitizer clean")


def gated_checks(root, C):
    cases = _cases()
    args = fixture_args(root, "gated", {n: (c[0], c[1], c[3]) for n, c in cases.items()})
    with Server(args) as srv:
        for name, case in cases.items():
            _requests(C, srv, name, case)
            ckpt, layer, prefix, _ = case
            ac.padded(C, srv, RNG, name, (ckpt, gated, layer, prefix, None))
        _gate_refused(C, srv)
        models = info_models(C, srv, "gated")
        if models:
            _info(C, models)
        stop_clean(C, srv, "gated")
    ac.both_forms(C, root, "gated", {n: (c[0], None, c[1], None, None)
                                     for n, c in cases.items()}, RNG)
    _malformed(C, root)
