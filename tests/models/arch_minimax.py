"""MiniMax-M2 (model_type minimax_m2): an input RMSNorm, q_norm / k_norm
RMSNorm over the WHOLE q and k projections (one weight across the heads),
then the split into heads and rotate_half on the first `rotary_dim`
channels of each head, read as partial_rotary_factor = rotary_dim /
head_dim (the released checkpoints' remote code and Hugging Face's rule
after 5.16; transformers 5.16 itself rotates the whole head). Checkpoints
with the real config keys and tensor names, a numpy restatement of
MiniMaxM2Attention.forward (checked against Hugging Face's code executed in
float64 with the partial factor mapped), Q, K, V and scores over HTTP,
/info (rotary_dim_rule), and the configs that stop start-up."""
import os

import numpy as np

import arch_common as ac
import checkpoints as ck
import hf_ref
from harness import Server, fixture_args, info_models, run_failing, sanitizer_clean, stop_clean

RNG = np.random.default_rng(4202)


def minimax_ckpt(seed=4201, dtype="F32", prefix="model.", layers=2, d=32, heads=4, kv_heads=2,
                 head_dim=16, rotary_dim=8, vocab=50, experts=2, **extra):
    """MiniMax-M2's config.json keys (MiniMaxM2ForCausalLM: head_dim,
    rotary_dim, rope_theta 5e6, use_qk_norm, qk_norm_type "per_layer",
    num_local_experts...) and tensor names (self_attn.q_norm [heads*head_dim],
    k_norm [kv_heads*head_dim], block_sparse_moe.*). rotary_dim None leaves
    the key out."""
    cfg = {"architectures": ["MiniMaxM2ForCausalLM"], "model_type": "minimax_m2",
           "hidden_size": d, "intermediate_size": d, "num_attention_heads": heads,
           "num_key_value_heads": kv_heads, "num_hidden_layers": layers, "head_dim": head_dim,
           "rotary_dim": rotary_dim, "rope_theta": 5000000, "rms_norm_eps": 1e-06,
           "max_position_embeddings": 196608, "use_qk_norm": True, "qk_norm_type": "per_layer",
           "num_local_experts": experts, "num_experts_per_tok": 1, "scoring_func": "sigmoid",
           "use_routing_bias": True, "vocab_size": vocab, "hidden_act": "silu",
           "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
    cfg.update(extra)
    cfg = {k: v for k, v in cfg.items() if v is not None}
    g = ck.Gen(seed, dtype)
    g.add(prefix + "embed_tokens.weight", (vocab, d), 1.0)
    for L in range(layers):
        p = f"{prefix}layers.{L}."
        g.add(p + "input_layernorm.weight", (d,), 0.1, 1.0)
        g.add(p + "post_attention_layernorm.weight", (d,), 0.1, 1.0)
        g.add(p + "self_attn.q_proj.weight", (heads * head_dim, d))
        g.add(p + "self_attn.k_proj.weight", (kv_heads * head_dim, d))
        g.add(p + "self_attn.v_proj.weight", (kv_heads * head_dim, d))
        g.add(p + "self_attn.o_proj.weight", (d, heads * head_dim))
        g.add(p + "self_attn.q_norm.weight", (heads * head_dim,), 0.1, 1.0)
        g.add(p + "self_attn.k_norm.weight", (kv_heads * head_dim,), 0.1, 1.0)
        g.add(p + "block_sparse_moe.gate.weight", (experts, d))
        g.add(p + "block_sparse_moe.e_score_correction_bias", (experts,))
        for e in range(experts):
            for n, shape in (("w1", (d, d)), ("w2", (d, d)), ("w3", (d, d))):
                g.add(p + f"block_sparse_moe.experts.{e}.{n}.weight", shape)
    g.add(prefix + "norm.weight", (d,), 0.1, 1.0)
    g.add("lm_head.weight", (vocab, d))
    return ck.Checkpoint(cfg, g.out)


def minimax(cfg, w, x, positions, layer, prefix="model."):
    """MiniMaxM2DecoderLayer: input_layernorm (MiniMaxM2RMSNorm, w·x̂); then
    MiniMaxM2Attention.forward: q_norm(q_proj(z)) over heads*head_dim and
    k_norm(k_proj(z)) over kv_heads*head_dim, the views per head, and
    apply_rotary_pos_emb on the first R channels, R = rotary_dim (absent:
    the whole head), inv_freq = theta^(-2i/R)."""
    p = f"{prefix}layers.{layer}."
    H, KV, D = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps, T = cfg["rms_norm_eps"], x.shape[0]
    z = hf_ref.rms_norm(x, w[p + "input_layernorm.weight"], eps)
    q, k, v = (z @ w[p + f"self_attn.{n}_proj.weight"].T for n in "qkv")
    q = hf_ref.rms_norm(q, w[p + "self_attn.q_norm.weight"], eps).reshape(T, H, D)
    k = hf_ref.rms_norm(k, w[p + "self_attn.k_norm.weight"], eps).reshape(T, KV, D)
    R = cfg.get("rotary_dim", D)
    inv = 1.0 / float(cfg.get("rope_theta", 5e6)) ** (np.arange(0, R, 2, dtype=np.float64) / R)
    q = hf_ref.apply_rope(q, positions, inv, 1.0).reshape(T, -1)
    k = hf_ref.apply_rope(k, positions, inv, 1.0).reshape(T, -1)
    return {"q": q, "k": k, "v": v, "scores": hf_ref.scores(q, k, H, KV, D, D ** -0.5)}


def _cases():
    """name: (checkpoint, layer)."""
    m = minimax_ckpt()
    b = minimax_ckpt(seed=4203, dtype="BF16", heads=8, kv_heads=1, head_dim=8, rotary_dim=4)
    whole = minimax_ckpt(seed=4204, rotary_dim=None, rope_theta=None)
    return {"minimax": (m, 0), "minimax_l1": (m, 1), "minimax_bf16_l1": (b, 1),
            "minimax_whole": (whole, 0)}


def _requests(C, srv, name, ckpt, layer):
    w, cfg = ckpt.weights(), ckpt.config
    T, ret = 7, ["q", "k", "v", "scores"]
    pos = np.arange(T)
    if layer == 0:
        table = w["model.embed_tokens.weight"]
        ids = RNG.integers(0, table.shape[0], T)
        st, r = srv.request("/apply", {"model": name, "token_ids": ids.tolist(), "return": ret})
        if C.check(st == 200, f"{name} token_ids: status {st} {r}"):
            want = minimax(cfg, w, table[ids], pos, layer)
            for k in ret:
                C.close(f"{name} token_ids: {k}", np.array(r[k], np.float64), want[k])
    x = RNG.standard_normal((T, cfg["hidden_size"]))
    far = pos + 70000
    st, r = srv.request("/apply", {"model": name, "embeddings": x.tolist(),
                                   "positions": far.tolist(), "return": ret})
    if C.check(st == 200, f"{name} embeddings: status {st} {r}"):
        want = minimax(cfg, w, x, far, layer)
        for k in ret:
            C.close(f"{name} embeddings at 70000: {k}", np.array(r[k], np.float64), want[k])


def _info(C, models):
    m = models["minimax"]
    C.check(m.get("rotary_dim_rule") == "partial" and m["params"].get("rotary_dim") == 8
            and "partial_rotary_factor" not in m["params"] and m["params"].get("base") == 5000000
            and m["qk_norm"]["over"] == "width" and m["norm"]["type"] == "rmsnorm"
            and m["weights"].get("q_norm_weight") == [64]
            and m["weights"].get("k_norm_weight") == [32] and "bq" not in m["weights"],
            f"/info minimax_m2: rotary_dim 8 read as partial, theta 5e6, q/k norm over the "
            f"width: {m}")
    n = models["minimax_whole"]
    C.check("rotary_dim_rule" not in n and n["params"].get("base") == 5000000
            and n["params"].get("partial_rotary_factor", 1) == 1,
            f"/info minimax_m2 without rotary_dim: the whole head, theta default 5e6: {n}")


def _malformed(C, root):
    c = minimax_ckpt(seed=4205, layers=1)
    bad = [
        ("rotary_dim odd", {"rotary_dim": 7}, ["rotary_dim", "even"]),
        ("rotary_dim past head_dim", {"rotary_dim": 32}, ["rotary_dim"]),
        ("rotary_dim a string", {"rotary_dim": "64"}, ["rotary_dim"]),
        ("partial disagrees", {"partial_rotary_factor": 0.25},
         ["rotary_dim 8", "partial_rotary_factor 0.25"]),
        ("no q_norm", None, ["layers.0.self_attn.q_norm.weight"]),
    ]
    for label, over, want in bad:
        d = os.path.join(root, "badminimax_" + label.replace(" ", "_"))
        if over is None:
            ck.Checkpoint(c.config, [t for t in c.tensors if "q_norm" not in t[0]]).write(d)
        else:
            c.write(d, config=dict(c.config, **over))
        st, err, listened = run_failing(["--model", f"bad={d}"])
        C.check(st == 2 and not listened and all(s in err for s in want),
                f"minimax malformed ({label}): exit {st}, want {want} in: {err.strip()[:400]}")
        C.check(sanitizer_clean(err), f"minimax malformed ({label}): sanitizer clean")
    # an agreeing partial_rotary_factor beside rotary_dim is served
    d = os.path.join(root, "minimax_agreeing")
    c.write(d, config=dict(c.config, partial_rotary_factor=0.5))
    with Server(["--model", f"m={d}"]) as srv:
        _requests(C, srv, "m", c, 0)


def minimax_checks(root, C):
    cases = _cases()
    args = fixture_args(root, "minimax", {n: (c, layer, 2 if "bf16" in n else 0)
                                          for n, (c, layer) in cases.items()})
    with Server(args) as srv:
        for name, (ckpt, layer) in cases.items():
            _requests(C, srv, name, ckpt, layer)
            ac.padded(C, srv, RNG, name, (ckpt, minimax, layer, "model.", None))
        models = info_models(C, srv, "minimax")
        if models:
            _info(C, models)
        stop_clean(C, srv, "minimax")
    ac.both_forms(C, root, "minimax", {n: (c, None, layer, None, None)
                                       for n, (c, layer) in cases.items()}, RNG)
    _malformed(C, root)
