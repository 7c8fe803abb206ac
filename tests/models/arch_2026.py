"""Architectures of 2025-26 served as entries of the architecture
table (api/models/hf_specs.c): InternLM2 (model_type internlm2: one fused
`attention.wqkv` per layer in its grouped layout, RMSNorm `attention_norm`,
`tok_embeddings`, biases when `bias`, Llama's rope with dynamic NTK or linear
scaling) and GLM-4 (model_type glm, glm4: Llama's layer with GlmConfig's
defaults and the interleaved rotation of the first half of each head) and
gpt-oss (gpt_oss: head_dim 64, YaRN, layer_types, per-head attention sinks
reported in /info beside the tokens' unchanged logits).
Checkpoint builders with the real config keys and tensor names,
numpy references restating the modeling code, Q, K, V and scores over HTTP
(layer 0 from token_ids, a later layer from embeddings, left-padded batches
with attention_mask and causal), what /info says, and the malformed configs
that stop start-up naming the key."""
import os

import numpy as np

import arch_common as ac
import checkpoints as ck
import hf_ref
from harness import Server, run_failing, sanitizer_clean
from mask_models import _masked_close

RNG = np.random.default_rng(2026)


# ------------------------------------------------------------------ InternLM2
def internlm2_ckpt(seed=2601, dtype="F32", prefix="model.", layers=2, d=32, heads=4, kv_heads=2,
                   vocab=50, bias=False, **extra):
    """internlm2-chat-7b's config keys (InternLM2ForCausalLM, remote code:
    `bias`, rms_norm_eps, rope_theta, rope_scaling {"type": "dynamic",
    "factor": 2.0}, the auto_map) and tensor names: tok_embeddings,
    layers.N.attention_norm, attention.wqkv ([(heads + 2 kv_heads) head_dim,
    hidden]), attention.wo, ffn_norm, feed_forward.w1/w2/w3, norm, output.
    kv_heads None leaves num_key_value_heads out (InternLM2Config: heads);
    bias None leaves `bias` out (InternLM2Config's default: true)."""
    hd = d // heads
    kv = kv_heads or heads
    cfg = {"architectures": ["InternLM2ForCausalLM"], "model_type": "internlm2",
           "attn_implementation": "eager", "hidden_size": d, "intermediate_size": 2 * d,
           "num_attention_heads": heads, "num_key_value_heads": kv_heads,
           "num_hidden_layers": layers, "rms_norm_eps": 1e-05, "max_position_embeddings": 16,
           "rope_theta": 1000000, "rope_scaling": {"type": "dynamic", "factor": 2.0},
           "bias": bias, "hidden_act": "silu", "initializer_range": 0.02, "vocab_size": vocab,
           "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 2, "tie_word_embeddings": False,
           "use_cache": True, "torch_dtype": "bfloat16", "transformers_version": "4.33.2",
           "auto_map": {"AutoConfig": "configuration_internlm2.InternLM2Config",
                        "AutoModelForCausalLM": "modeling_internlm2.InternLM2ForCausalLM"}}
    cfg.update(extra)
    cfg = {k: v for k, v in cfg.items() if v is not None}
    g = ck.Gen(seed, dtype)
    g.add(prefix + "tok_embeddings.weight", (vocab, d), 1.0)
    for L in range(layers):
        p = f"{prefix}layers.{L}."
        g.add(p + "attention_norm.weight", (d,), 0.1, 1.0)
        g.add(p + "attention.wqkv.weight", ((heads + 2 * kv) * hd, d))
        if bias is not False:
            g.add(p + "attention.wqkv.bias", ((heads + 2 * kv) * hd,), 0.2)
        g.add(p + "attention.wo.weight", (d, heads * hd))
        g.add(p + "ffn_norm.weight", (d,), 0.1, 1.0)
        g.add(p + "feed_forward.w1.weight", (2 * d, d))
        g.add(p + "feed_forward.w3.weight", (2 * d, d))
        g.add(p + "feed_forward.w2.weight", (d, 2 * d))
    g.add(prefix + "norm.weight", (d,), 0.1, 1.0)
    g.add("output.weight", (vocab, d))
    return ck.Checkpoint(cfg, g.out)


def internlm2(cfg, w, x, positions, layer, prefix="model.", seq_len=None):
    """modeling_internlm2.py (internlm/internlm2-chat-7b): the decoder layer
    applies attention_norm (InternLM2RMSNorm, rms_norm_eps, default 1e-6);
    InternLM2Attention computes wqkv(z) (bias = config.bias, default true),
    views it per token as [kv_heads][groups + 2][head_dim] (groups = heads /
    kv_heads, head_dim = hidden / heads): the first `groups` slots of each
    kv head are its query heads, then its key, then its value. Rope is
    Llama's rotate_half over the whole head (rope_theta, default 10000);
    rope_scaling "linear" divides positions by factor, "dynamic" raises the
    base once the sequence (the batch's largest position + 1) exceeds
    max_position_embeddings. Scores: head_dim ** -0.5."""
    p = f"{prefix}layers.{layer}."
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    hd = cfg["hidden_size"] // H
    grp = H // KV
    T = x.shape[0]
    z = hf_ref.rms_norm(x, w[p + "attention_norm.weight"], cfg.get("rms_norm_eps", 1e-6))
    qkv = z @ w[p + "attention.wqkv.weight"].T
    if cfg.get("bias", True):
        qkv = qkv + w[p + "attention.wqkv.bias"]
    qkv = qkv.reshape(T, KV, grp + 2, hd)
    q = qkv[:, :, :grp, :].reshape(T, H, hd)
    k, v = qkv[:, :, grp, :], qkv[:, :, grp + 1, :].reshape(T, -1)
    rc = dict(cfg, head_dim=hd)
    rc.setdefault("rope_theta", 10000.0)
    inv, att = hf_ref.rope_init(rc, seq_len or int(positions.max()) + 1, partial=False)
    q = hf_ref.apply_rope(q, positions, inv, att).reshape(T, -1)
    k = hf_ref.apply_rope(k, positions, inv, att).reshape(T, -1)
    return {"q": q, "k": k, "v": v, "scores": hf_ref.scores(q, k, H, KV, hd, hd ** -0.5)}


# ------------------------------------------------------------------ GLM-4
def glm_ckpt(seed=2611, dtype="F32", prefix="model.", model_type="glm4", layers=2, d=32, heads=4,
             kv_heads=2, head_dim=16, vocab=50, bias=True, **extra):
    """GLM-4-9B-0414's config keys (Glm4ForCausalLM; model_type glm:
    glm-4-9b-chat-hf's GlmForCausalLM) and tensor names: embed_tokens,
    input_layernorm, self_attn.q/k/v_proj with biases, o_proj,
    post_attention_layernorm, mlp.gate_up_proj / down_proj, and for glm4
    post_self_attn_layernorm and post_mlp_layernorm. kv_heads, head_dim or
    bias None leave the key out (GlmConfig: 2, 128, true)."""
    hd = head_dim or 128
    kv = kv_heads or 2
    cfg = {"architectures": ["Glm4ForCausalLM" if model_type == "glm4" else "GlmForCausalLM"],
           "model_type": model_type, "attention_bias": bias, "attention_dropout": 0.0,
           "head_dim": head_dim, "hidden_act": "silu", "hidden_size": d,
           "initializer_range": 0.02, "intermediate_size": 2 * d, "max_position_embeddings": 32768,
           "num_attention_heads": heads, "num_hidden_layers": layers,
           "num_key_value_heads": kv_heads, "pad_token_id": 0, "partial_rotary_factor": 0.5,
           "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "tie_word_embeddings": False,
           "torch_dtype": "bfloat16", "transformers_version": "4.51.0.dev0", "use_cache": True,
           "vocab_size": vocab, "eos_token_id": [3, 4, 5]}
    cfg.update(extra)
    cfg = {k: v for k, v in cfg.items() if v is not None}
    post = ["post_attention_layernorm"]
    if model_type == "glm4":
        post += ["post_self_attn_layernorm", "post_mlp_layernorm"]
    g = ck.Gen(seed, dtype)
    g.add(prefix + "embed_tokens.weight", (vocab, d), 1.0)
    for L in range(layers):
        p = f"{prefix}layers.{L}."
        g.add(p + "input_layernorm.weight", (d,), 0.1, 1.0)
        for n, out in (("q", heads * hd), ("k", kv * hd), ("v", kv * hd)):
            g.add(p + f"self_attn.{n}_proj.weight", (out, d))
            if bias is not False:
                g.add(p + f"self_attn.{n}_proj.bias", (out,), 0.2)
        g.add(p + "self_attn.o_proj.weight", (d, heads * hd))
        for n in post:
            g.add(p + n + ".weight", (d,), 0.1, 1.0)
        g.add(p + "mlp.gate_up_proj.weight", (4 * d, d))
        g.add(p + "mlp.down_proj.weight", (d, 2 * d))
    g.add(prefix + "norm.weight", (d,), 0.1, 1.0)
    g.add("lm_head.weight", (vocab, d))
    return ck.Checkpoint(cfg, g.out)


def _biased_qkv(cfg, w, x, p, kv_default, head_dim_default, eps_default):
    """Llama's input_layernorm (RMSNorm) and q/k/v_proj with biases unless
    attention_bias is false, under the architecture's config defaults:
    (heads, kv_heads, head_dim, q, k, v)."""
    z = hf_ref.rms_norm(x, w[p + "input_layernorm.weight"], cfg.get("rms_norm_eps", eps_default))
    q, k, v = hf_ref._linear(z, w, p, "qkv", cfg.get("attention_bias", True))
    return (cfg["num_attention_heads"], cfg.get("num_key_value_heads", kv_default),
            cfg.get("head_dim", head_dim_default), q, k, v)


def glm(cfg, w, x, positions, layer, prefix="model.", seq_len=None):
    """modeling_glm.py / modeling_glm4.py: input_layernorm (RMSNorm,
    rms_norm_eps, GlmConfig's default 1.5625e-7); q/k/v_proj with bias =
    attention_bias (default true), head_dim from the config (default 128),
    num_key_value_heads default 2. The rotary embedding's inv_freq spans
    dim = int(head_dim * partial_rotary_factor) (default 0.5); GLM's
    apply_rotary_pos_emb keeps cos/sin's first half, repeat_interleave(2)s
    it, so angle i sits on channels 2i and 2i+1, and its rotate_half maps
    (x[2i], x[2i+1]) to (-x[2i+1], x[2i]): the interleaved rotation of the
    first dim channels of each head, the rest passed. Scores: head_dim ** -0.5.
    The post_self_attn / post_mlp norms of glm4 act after attention."""
    H, KV, hd, q, k, v = _biased_qkv(cfg, w, x, f"{prefix}layers.{layer}.", 2, 128, 1.5625e-7)
    T = x.shape[0]
    rc = dict(cfg, head_dim=hd, partial_rotary_factor=cfg.get("partial_rotary_factor", 0.5))
    inv, att = hf_ref.rope_init(rc, seq_len or int(positions.max()) + 1)
    r = 2 * len(inv)

    def turn(a, heads):
        a = a.reshape(T, heads, hd)
        rot = hf_ref.apply_rope_interleaved(a[..., :r], positions, inv, att)
        return np.concatenate([rot, a[..., r:]], -1).reshape(T, -1)
    q, k = turn(q, H), turn(k, KV)
    return {"q": q, "k": k, "v": v, "scores": hf_ref.scores(q, k, H, KV, hd, hd ** -0.5)}


# ------------------------------------------------------------------ gpt-oss
YARN = {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
        "original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": False}


def gpt_oss_ckpt(seed=2621, dtype="F32", prefix="model.", layers=2, d=40, heads=4, kv_heads=2,
                 head_dim=None, vocab=50, sinks=None, **extra):
    """gpt-oss-20b's config keys (GptOssForCausalLM: head_dim 64 beside a
    hidden_size of 2880, attention_bias, layer_types alternating
    sliding/full, sliding_window 128, the yarn rope_scaling with truncate
    false, rope_theta 150000, the mxfp4 quantization_config) and tensor
    names: input_layernorm, self_attn.q/k/v/o_proj with biases,
    self_attn.sinks [heads], mlp.router, mlp.experts' mxfp4 blocks and scales
    (U8, which the loader must skip). head_dim / kv_heads None leave the key
    out (GptOssConfig: 64, 8); sinks: the sinks' shape (default [heads])."""
    hd = head_dim or 64
    kv = kv_heads or 8
    cfg = {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss",
           "attention_bias": True, "attention_dropout": 0.0, "eos_token_id": 3,
           "experts_per_token": 4, "head_dim": head_dim, "hidden_act": "silu", "hidden_size": d,
           "initial_context_length": 4096, "initializer_range": 0.02, "intermediate_size": d,
           "layer_types": ["sliding_attention" if (i + 1) % 2 else "full_attention"
                           for i in range(layers)],
           "max_position_embeddings": 131072, "num_attention_heads": heads,
           "num_experts_per_tok": 4, "num_hidden_layers": layers, "num_key_value_heads": kv_heads,
           "num_local_experts": 4, "output_router_logits": False, "pad_token_id": 2,
           "quantization_config": {"modules_to_not_convert": ["model.layers.*.self_attn",
                                                              "model.embed_tokens", "lm_head"],
                                   "quant_method": "mxfp4"},
           "rms_norm_eps": 1e-05, "rope_scaling": dict(YARN), "rope_theta": 150000,
           "router_aux_loss_coef": 0.9, "sliding_window": 128, "swiglu_limit": 7.0,
           "tie_word_embeddings": False, "transformers_version": "4.55.0.dev0", "use_cache": True,
           "vocab_size": vocab}
    cfg.update(extra)
    cfg = {k: v for k, v in cfg.items() if v is not None}
    g = ck.Gen(seed, dtype)
    g.add(prefix + "embed_tokens.weight", (vocab, d), 1.0)
    rng = np.random.default_rng(seed + 7)
    for L in range(layers):
        p = f"{prefix}layers.{L}."
        g.add(p + "input_layernorm.weight", (d,), 0.1, 1.0)
        for n, out in (("q", heads * hd), ("k", kv * hd), ("v", kv * hd)):
            g.add(p + f"self_attn.{n}_proj.weight", (out, d))
            g.add(p + f"self_attn.{n}_proj.bias", (out,), 0.2)
        g.add(p + "self_attn.o_proj.weight", (d, heads * hd))
        g.add(p + "self_attn.o_proj.bias", (d,), 0.2)
        g.add(p + "self_attn.sinks", sinks or (heads,), 1.0)
        g.add(p + "post_attention_layernorm.weight", (d,), 0.1, 1.0)
        g.add(p + "mlp.router.weight", (4, d))
        g.add(p + "mlp.router.bias", (4,))
        g.raw(p + "mlp.experts.gate_up_proj_blocks", "U8",
              rng.integers(0, 256, (4, 2 * d, 2, 16)).astype(np.uint8))
        g.raw(p + "mlp.experts.gate_up_proj_scales", "U8",
              rng.integers(0, 256, (4, 2 * d, 2)).astype(np.uint8))
    g.add(prefix + "norm.weight", (d,), 0.1, 1.0)
    g.add("lm_head.weight", (vocab, d))
    return ck.Checkpoint(cfg, g.out)


def gpt_oss(cfg, w, x, positions, layer, prefix="model.", seq_len=None):
    """modeling_gpt_oss.py: input_layernorm (RMSNorm, rms_norm_eps);
    GptOssAttention (Qwen2Attention's head_dim: config.head_dim, GptOssConfig's
    64 whatever the hidden size) with q/k/v_proj biased by attention_bias
    (default true); the rotation halves each head (torch.chunk: first half
    * cos - second half * sin, second * cos + first * sin: rotate_half) with
    cos and sin of GptOssRotaryEmbedding times yarn's attention_scaling
    (rope_theta default 150000). Scores: head_dim ** -0.5. The eager path
    then concatenates each head's sink (self_attn.sinks) as one extra logit
    column before the softmax and drops it after: the token logits
    returned here are unchanged by it; layer_types' sliding window is a
    mask."""
    p = f"{prefix}layers.{layer}."
    H, KV, hd, q, k, v = _biased_qkv(cfg, w, x, p, 8, 64, 1e-5)
    T = x.shape[0]
    rc = dict(cfg, head_dim=hd)
    rc.setdefault("rope_theta", 150000.0)
    inv, att = hf_ref.rope_init(rc, seq_len or int(positions.max()) + 1, partial=False)
    q = hf_ref.apply_rope(q.reshape(T, H, hd), positions, inv, att).reshape(T, -1)
    k = hf_ref.apply_rope(k.reshape(T, KV, hd), positions, inv, att).reshape(T, -1)
    return {"q": q, "k": k, "v": v, "scores": hf_ref.scores(q, k, H, KV, hd, hd ** -0.5),
            "sinks": w[p + "self_attn.sinks"]}


# ---------------------------------------------------------------------- cases
def _cases():
    """name: (checkpoint, reference, layer, prefix, shards)."""
    dyn = internlm2_ckpt()
    lin = internlm2_ckpt(seed=2602, dtype="BF16", prefix="", kv_heads=None, bias=None,
                         rope_scaling={"type": "linear", "factor": 4.0}, rope_theta=None)
    mqa = internlm2_ckpt(seed=2603, kv_heads=1, bias=True, rope_scaling=None, layers=3)
    g4 = glm_ckpt()
    gb = glm_ckpt(seed=2612, dtype="BF16", model_type="glm", kv_heads=None, head_dim=None,
                  bias=None, partial_rotary_factor=None, rms_norm_eps=None, rope_theta=None)
    gq = glm_ckpt(seed=2613, prefix="", kv_heads=4, bias=False, partial_rotary_factor=0.25,
                  rope_scaling={"rope_type": "linear", "factor": 2.0})
    go = gpt_oss_ckpt()
    gb16 = gpt_oss_ckpt(seed=2622, dtype="BF16", prefix="", layers=3, heads=8, kv_heads=None,
                        head_dim=16, rope_theta=None, rope_scaling=None)
    gb16.config["rope_scaling"] = None
    return {
        "internlm2": (dyn, internlm2, 0, "model.", 0),
        "internlm2_l1": (dyn, internlm2, 1, "model.", 0),
        # BF16, two shards, no prefix, num_key_value_heads and bias absent
        # (heads and true), linear scaling, rope_theta absent (10000)
        "internlm2_bf16": (lin, internlm2, 0, "", 2),
        "internlm2_bf16_l1": (lin, internlm2, 1, "", 2),
        # one kv head (groups of 4), biases, no scaling, layer 2
        "internlm2_mqa": (mqa, internlm2, 0, "model.", 3),
        "internlm2_mqa_l2": (mqa, internlm2, 2, "model.", 3),
        "glm4": (g4, glm, 0, "model.", 0),
        "glm4_l1": (g4, glm, 1, "model.", 0),
        # glm, BF16, two shards: head_dim, num_key_value_heads,
        # partial_rotary_factor, attention_bias, rms_norm_eps and rope_theta
        # absent (GlmConfig's 128, 2, 0.5, true, 1.5625e-7, 10000)
        "glm_bf16": (gb, glm, 0, "model.", 2),
        "glm_bf16_l1": (gb, glm, 1, "model.", 2),
        # a quarter of each head rotates, no biases, kv heads = heads, linear
        "glm4_quarter": (gq, glm, 0, "", 0),
        # head_dim absent: 64 (hidden 40 / 4 heads would be 10)
        "gpt_oss": (go, gpt_oss, 0, "model.", 0),
        "gpt_oss_l1": (go, gpt_oss, 1, "model.", 0),
        # BF16, two shards, 8 heads over num_key_value_heads' default 8,
        # head_dim 16, rope_theta absent (150000), no scaling (null)
        "gpt_oss_bf16": (gb16, gpt_oss, 0, "", 2),
        "gpt_oss_bf16_l2": (gb16, gpt_oss, 2, "", 2),
    }


def _table(ckpt, prefix):
    w = ckpt.weights()
    return w.get(prefix + "tok_embeddings.weight", w.get(prefix + "embed_tokens.weight"))


def _close(C, what, got, want):
    C.close(what, np.array(got, np.float64), want)


def _requests(C, srv, name, case):
    """Layer 0 from token_ids (positions 0..5); every layer from embeddings at
    0..5 and at positions far past max_position_embeddings."""
    ckpt, ref, layer, prefix, _ = case
    w = ckpt.weights()
    ret = ["q", "k", "v", "scores"]
    x = RNG.standard_normal((6, ckpt.config["hidden_size"])).astype(np.float32)
    asks = [("embeddings", x, x.tolist(), pos) for pos in
            (np.arange(6), np.array([2, 40, 300, 2000, 9000, 30000]))]
    if layer == 0:
        ids = RNG.integers(0, 50, 6)
        asks.append(("token_ids", _table(ckpt, prefix)[ids], ids.tolist(), np.arange(6)))
    for key, rows, value, pos in asks:
        what = f"{name} {key} at {pos[-1]}"
        st, r = srv.request("/apply", {"model": name, key: value, "positions": pos.tolist(),
                                       "return": ret})
        if C.check(st == 200, f"{what}: status {st} {r}"):
            want = ref(ckpt.config, w, rows.astype(np.float64), pos, layer, prefix=prefix)
            for k in ret:
                _close(C, f"{what}: {k}", r[k], want[k])


def _padded(C, srv, name, case):
    """A left-padded batch with attention_mask and causal: positions
    cumsum(mask) - 1 (pads 1), masked keys float32's lowest, causal by slot;
    a dynamic rope sized by the whole batch's largest position (17 > 16)."""
    ckpt, ref, layer, prefix, _ = case
    w = ckpt.weights()
    S = 18
    body, rows, pos, mask = ac.padded_batch(RNG, name, S, 13, layer,
                                            _table(ckpt, prefix) if layer == 0 else None,
                                            ckpt.config["hidden_size"], causal=True)
    st, r = srv.request("/apply", body)
    if not C.check(st == 200, f"{name} padded batch: status {st} {r}"):
        return
    slots = np.arange(S)
    for b in range(2):
        want = ref(ckpt.config, w, rows[b], pos[b], layer, prefix=prefix,
                   seq_len=int(pos.max()) + 1)
        for k in "qkv":
            _close(C, f"{name} padded batch row {b}: {k}", np.array(r[k][b]), want[k])
        keep = mask[b].astype(bool)[None, :] & (slots[None, :] <= slots[:, None])
        _masked_close(C, f"{name} padded batch + causal row {b}: scores", r["scores"][b],
                      want["scores"], keep[None])


def _batch_max(C, srv, name, case):
    """Dynamic NTK is sized by the largest position of the whole batch (as
    Hugging Face's max over position_ids): a short row beside a long one
    gets the long row's base."""
    ckpt, ref, layer, prefix, _ = case
    pos = np.array([[0, 1, 2, 3], [20, 21, 22, 23]])
    x = RNG.standard_normal((2, 4, ckpt.config["hidden_size"])).astype(np.float32)
    st, r = srv.request("/apply", {"model": name, "embeddings": x.tolist(),
                                   "positions": pos.tolist(), "return": ["q", "k"]})
    if not C.check(st == 200, f"{name} batch over max_position_embeddings: status {st} {r}"):
        return
    for b in range(2):
        want = ref(ckpt.config, ckpt.weights(), x[b].astype(np.float64), pos[b], layer,
                   prefix=prefix, seq_len=24)
        for k in "qk":
            _close(C, f"{name} batch row {b} sized by position 23: {k}", r[k][b], want[k])


def _info(C, models):
    m, b, q = models["internlm2"], models["internlm2_bf16"], models["internlm2_mqa_l2"]
    C.check(m["architecture"] == "internlm2" and m["kv_heads"] == 2 and m["heads"] == 4
            and m["params"].get("scaling", {}).get("type") == "dynamic"
            and m["params"].get("base") == 1000000 and "bq" not in m["weights"],
            f"/info internlm2: 4 heads over 2 kv heads, dynamic, base 1e6, no bias: {m}")
    C.check(b["kv_heads"] == 4 and b["params"].get("scaling", {}).get("type") == "linear"
            and b["params"].get("base") == 10000 and "bq" in b["weights"]
            and b["norm"]["type"] == "rmsnorm" and b["norm"]["eps"] == 1e-5,
            f"/info internlm2 bf16: kv_heads = heads, linear, base 10000, bias by default: {b}")
    C.check(q["kv_heads"] == 1 and "scaling" not in q["params"] and "bq" in q["weights"],
            f"/info internlm2 mqa: one kv head, no scaling, biases: {q}")
    g, gb, gq = models["glm4"], models["glm_bf16"], models["glm4_quarter"]
    C.check(g["architecture"] == "glm4" and g["head_dim"] == 16
            and g["params"] == {"base": 10000.0, "layout": "interleaved",
                                "partial_rotary_factor": 0.5} and "bq" in g["weights"],
            f"/info glm4: interleaved, half of each head, biases: {g}")
    C.check(gb["architecture"] == "glm" and gb["head_dim"] == 128 and gb["kv_heads"] == 2
            and gb["norm"]["eps"] == 1.5625e-7 and "bq" in gb["weights"]
            and gb["params"].get("partial_rotary_factor") == 0.5,
            f"/info glm: GlmConfig's defaults (head_dim 128, kv 2, eps 1.5625e-7, bias): {gb}")
    C.check(gq["params"].get("partial_rotary_factor") == 0.25 and "bq" not in gq["weights"]
            and gq["params"].get("scaling", {}).get("type") == "linear",
            f"/info glm4 quarter: 0.25, no biases, linear: {gq}")

def _info_sinks(C, models, cases):
    """/info reports each gpt_oss layer's sinks: the shortest text of the
    stored value (float32 exactly)."""
    for name in ("gpt_oss", "gpt_oss_l1", "gpt_oss_bf16", "gpt_oss_bf16_l2"):
        ckpt, _, layer, prefix, _ = cases[name]
        m, want = models[name], ckpt.weights()[f"{prefix}layers.{layer}.self_attn.sinks"]
        got = np.array(m.get("attention_sinks", []), np.float64).astype(np.float32)
        C.check(got.shape == want.shape and np.array_equal(got, want.astype(np.float32))
                and m["weights"].get("attention_sinks") == [len(want)],
                f"/info {name}: attention_sinks {m.get('attention_sinks')}, want {want}")
    g, b = models["gpt_oss"], models["gpt_oss_bf16"]
    C.check(g["head_dim"] == 64 and g["params"].get("base") == 150000
            and g["params"].get("scaling", {}).get("type") == "yarn"
            and g["params"]["scaling"].get("truncate") is False and "bq" in g["weights"],
            f"/info gpt_oss: head_dim 64 by default, yarn without truncation, biases: {g}")
    C.check(b["kv_heads"] == 8 and "scaling" not in b["params"] and b["head_dim"] == 16,
            f"/info gpt_oss bf16: num_key_value_heads default 8, rope_scaling null: {b}")


def _malformed(C, root):
    c1 = internlm2_ckpt(seed=2604, layers=1)
    g1 = glm_ckpt(seed=2614, layers=1)
    o1 = gpt_oss_ckpt(seed=2623)
    bad = [
        ("internlm2: bias a string", c1, ["bias"], {"bias": "no"}),
        ("internlm2: kv heads 3", c1, ["num_key_value_heads", "3"],
         {"num_key_value_heads": 3}),
        ("internlm2: rope_scaling type", c1, ["rope_scaling", "ntk"],
         {"rope_scaling": {"type": "ntk", "factor": 2.0}}),
        # InternLM2's own _init_rope knows linear and dynamic only
        ("internlm2: rope_scaling yarn", c1, ["rope_scaling.type", "'yarn'", "dynamic, linear"],
         {"rope_scaling": {"type": "yarn", "factor": 2.0,
                           "original_max_position_embeddings": 16}}),
        ("internlm2: dynamic factor 0", c1, ["factor"],
         {"rope_scaling": {"type": "dynamic", "factor": 0}}),
        ("internlm2: rms_norm_eps a string", c1, ["rms_norm_eps"], {"rms_norm_eps": "1e-5"}),
        ("internlm2: no hidden_size", c1, ["hidden_size"], {"hidden_size": None}),
        ("glm4: partial_rotary_factor 2", g1, ["partial_rotary_factor"],
         {"partial_rotary_factor": 2.0}),
        ("glm4: attention_bias a string", g1, ["attention_bias"], {"attention_bias": "true"}),
        ("glm4: head_dim 0", g1, ["head_dim"], {"head_dim": 0}),
        ("glm4: num_key_value_heads 3", g1, ["num_key_value_heads", "3"],
         {"num_key_value_heads": 3}),
        ("gpt_oss: rope_scaling absent", o1, ["rope_scaling", "yarn"], {"rope_scaling": None}),
        ("gpt_oss: layer_types unknown", o1, ["layer_types[1]", "global_attention"],
         {"layer_types": ["sliding_attention", "global_attention"]}),
        ("gpt_oss: layer 0 compressed", o1, ["layer 0 is compressed_sparse_attention"],
         {"layer_types": ["compressed_sparse_attention", "full_attention"]}),
        ("gpt_oss: yarn truncate a string", o1, ["truncate"],
         {"rope_scaling": dict(YARN, truncate="no")}),
    ]
    for label, ckpt, want, over in bad:
        d = os.path.join(root, "bad26_" + label.split(":")[1].strip().replace(" ", "_"))
        cfg = {k: v for k, v in dict(ckpt.config, **over).items() if v is not None}
        ckpt.write(d, config=cfg)
        st, err, listened = run_failing(["--model", f"bad={d}"])
        ok = st == 2 and not listened and all(w in err for w in want + ["config.json"])
        C.check(ok, f"malformed ({label}): exit {st}, want 2 and {want} in: {err.strip()[:400]}")
        C.check(sanitizer_clean(err), f"malformed ({label}): sanitizer clean: {err[:600]}")
    # sinks of the wrong shape, or none, are refused naming the tensor
    for label, over in (("[heads + 1]", {"sinks": (5,)}), ("[1, heads]", {"sinks": (1, 4)})):
        d = os.path.join(root, "bad26_sinks_" + str(len(over["sinks"])))
        gpt_oss_ckpt(seed=2624, **over).write(d)
        st, err, listened = run_failing(["--model", f"bad={d}"])
        C.check(st == 2 and not listened and "layers.0.self_attn.sinks" in err,
                f"malformed (gpt_oss: sinks {label}): exit {st}: {err[:400]}")
    d = os.path.join(root, "bad26_no_sinks")
    ck.Checkpoint(o1.config, [t for t in o1.tensors if "sinks" not in t[0]]).write(d)
    st, err, listened = run_failing(["--model", f"bad={d}"])
    C.check(st == 2 and not listened and "layers.0.self_attn.sinks" in err,
            f"malformed (gpt_oss: no sinks): exit {st}: {err[:400]}")
    # a wqkv of the wrong row count is refused naming the tensor
    d = os.path.join(root, "bad26_wqkv_rows")
    ckpt = internlm2_ckpt(seed=2605, layers=1, kv_heads=4)
    ckpt.write(d, config=dict(ckpt.config, num_key_value_heads=2))
    st, err, listened = run_failing(["--model", f"bad={d}"])
    C.check(st == 2 and not listened and "attention.wqkv.weight" in err,
            f"malformed (internlm2: wqkv rows for 4 kv heads, config 2): exit {st}: {err[:400]}")


def arch_checks(root, C):
    cases = _cases()
    args, dirs = [], {}
    for name, (ckpt, _, layer, _, shards) in cases.items():
        d = next((dd for c, dd in dirs.values() if c is ckpt), None)
        if d is None:
            d = os.path.join(root, "arch26_" + name)
            ckpt.write(d, shards=shards)
            dirs[name] = (ckpt, d)
        args += ["--model", f"{name}={d}" + (f":{layer}" if layer else "")]
    with Server(args) as srv:
        for name, case in cases.items():
            _requests(C, srv, name, case)
        for name in ("internlm2", "internlm2_l1", "internlm2_mqa_l2", "glm4", "glm_bf16_l1",
                     "gpt_oss", "gpt_oss_bf16_l2"):
            _padded(C, srv, name, cases[name])
        _batch_max(C, srv, "internlm2_l1", cases["internlm2_l1"])
        st, info = srv.request("/info")
        if C.check(st == 200, f"arch_2026 /info: status {st}"):
            _info(C, {m["name"]: m for m in info["models"]})
            _info_sinks(C, {m["name"]: m for m in info["models"]}, cases)
        status = srv.stop()
        C.check(status == 0, f"arch_2026: server exits 0 (got {status})")
        C.check(sanitizer_clean(srv.stderr()), f"server stderr clean: {srv.stderr()[-800:]}")
    _malformed(C, root)
