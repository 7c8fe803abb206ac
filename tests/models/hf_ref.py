"""Reference Q, K, V (and ALiBi / T5 biases and scores) computed with numpy in
float64, following the Hugging Face transformers modeling code of each
architecture step by step (modeling_llama.py, modeling_gpt2.py,
modeling_bert.py, modeling_bloom.py, modeling_t5.py and
modeling_rope_utils.py). Written independently of posenc's C code: nothing
here reads posenc's output or shares its arithmetic.

Weights arrive as dicts of float64 arrays under the checkpoint's own tensor
names (already rounded to their on-disk dtype), in the checkpoint's own
orientation (nn.Linear [out][in], Conv1D [in][out]).
"""
import math

import numpy as np


# --------------------------------------------------------------------- norms
def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def rms_norm(x, w, eps):
    """LlamaRMSNorm / T5LayerNorm: x * rsqrt(mean(x^2) + eps) * w."""
    var = (x ** 2).mean(-1, keepdims=True)
    return w * (x / np.sqrt(var + eps))


# ----------------------------------------------------------------------- rope
def rope_init(cfg, seq_len, partial=True):
    """(inv_freq, attention_scaling) as modeling_rope_utils.py computes them
    for the config's rope type (newest semantics: standardize_rope_params,
    then the _compute_*_parameters function). partial=False is Llama's
    LlamaRotaryEmbedding.compute_default_rope_parameters, which takes the
    whole head and never reads partial_rotary_factor."""
    rs = cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}
    rp = dict(rs)
    rp.setdefault("rope_type", rp.get("type", "default"))
    rp.setdefault("rope_theta", cfg.get("rope_theta", 10000.0))
    if cfg.get("partial_rotary_factor") is not None:
        rp["partial_rotary_factor"] = cfg["partial_rotary_factor"]
    if not partial:
        rp.pop("partial_rotary_factor", None)
    if rp["rope_type"] in ("llama3", "yarn", "longrope"):
        if "original_max_position_embeddings" in cfg:
            rp["original_max_position_embeddings"] = cfg["original_max_position_embeddings"]
        else:
            rp.setdefault("original_max_position_embeddings", cfg["max_position_embeddings"])
    base = rp["rope_theta"]
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    dim = int(head_dim * rp.get("partial_rotary_factor", 1.0))
    ar = np.arange(0, dim, 2, dtype=np.int64).astype(np.float64) / dim
    t = rp["rope_type"]
    if t == "default":
        return 1.0 / base ** ar, 1.0
    if t == "linear":
        return 1.0 / base ** ar / rp["factor"], 1.0
    if t == "dynamic":
        mpe = cfg["max_position_embeddings"]
        seq_len = max(seq_len, mpe)
        factor = rp["factor"]
        base = base * ((factor * seq_len / mpe) - (factor - 1)) ** (dim / (dim - 2))
        return 1.0 / base ** ar, 1.0
    if t == "yarn":
        factor = rp.get("factor")
        orig = rp["original_max_position_embeddings"]
        if factor is None:
            factor = cfg["max_position_embeddings"] / orig
        att, msc, msc_all = rp.get("attention_factor"), rp.get("mscale"), rp.get("mscale_all_dim")

        def get_mscale(scale, m=1):
            return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0
        if att is None:
            att = get_mscale(factor, msc) / get_mscale(factor, msc_all) if msc and msc_all \
                else get_mscale(factor)
        beta_fast = rp.get("beta_fast") or 32
        beta_slow = rp.get("beta_slow") or 1

        def corr_dim(rot):
            return (dim * math.log(orig / (rot * 2 * math.pi))) / (2 * math.log(base))
        low, high = corr_dim(beta_fast), corr_dim(beta_slow)
        if rp.get("truncate", True):
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, dim - 1)
        if low == high:
            high += 0.001
        ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0, 1)
        pos_freqs = base ** ar
        extra = 1 - ramp
        inv = (1.0 / (factor * pos_freqs)) * (1 - extra) + (1.0 / pos_freqs) * extra
        return inv, att
    if t == "longrope":
        orig = rp["original_max_position_embeddings"]
        factor = rp.get("factor")
        if factor is None:
            factor = cfg["max_position_embeddings"] / orig
        att = rp.get("attention_factor")
        if att is None:
            att = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(orig))
        ext = np.array(rp["long_factor"] if seq_len > orig else rp["short_factor"], np.float64)
        return 1.0 / (ext * base ** ar), att
    if t == "llama3":
        inv = 1.0 / base ** ar
        factor, lo, hi = rp["factor"], rp["low_freq_factor"], rp["high_freq_factor"]
        old = rp["original_max_position_embeddings"]
        lo_wl, hi_wl = old / lo, old / hi
        wl = 2 * math.pi / inv
        inv_l = np.where(wl > lo_wl, inv / factor, inv)
        medium = ~(wl < hi_wl) & ~(wl > lo_wl)
        if lo == hi:
            # no band: every wavelength is above old / lo (divided) or below
            # it (kept); HF only warns about such a config
            return inv_l, 1.0
        smooth = (old / wl - lo) / (hi - lo)
        smoothed = (1 - smooth) * inv_l / factor + smooth * inv_l
        return np.where(medium, smoothed, inv_l), 1.0
    raise ValueError(t)


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], -1)


def apply_rope(x, positions, inv_freq, att):
    """x: [T][heads][head_dim]; HF apply_rotary_pos_emb with partial rotary."""
    freqs = np.outer(positions.astype(np.float64), inv_freq)
    emb = np.concatenate([freqs, freqs], -1)
    cos, sin = np.cos(emb) * att, np.sin(emb) * att
    r = emb.shape[-1]
    rot, keep = x[..., :r], x[..., r:]
    rot = rot * cos[:, None, :] + rotate_half(rot) * sin[:, None, :]
    return np.concatenate([rot, keep], -1)


# ------------------------------------------------------------------- scores
def scores(q, k, heads, kv_heads, head_dim, scale, bias=None):
    """[heads][T][T] pre-softmax logits, GQA head grouping."""
    T = q.shape[0]
    qh = q.reshape(T, heads, head_dim)
    kh = k.reshape(T, kv_heads, head_dim)
    g = heads // kv_heads
    out = np.stack([qh[:, h, :] @ kh[:, h // g, :].T for h in range(heads)]) * scale
    return out if bias is None else out + bias


# --------------------------------------------------------------- per model
def llama(cfg, w, x, positions, layer, prefix="model."):
    """x: [T][d] (embeddings for layer 0 or the hidden state)."""
    p = f"{prefix}layers.{layer}."
    H, KV = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    hd = cfg.get("head_dim") or cfg["hidden_size"] // H
    z = rms_norm(x, w[p + "input_layernorm.weight"], cfg.get("rms_norm_eps", 1e-6))
    q, k, v = (z @ w[p + f"self_attn.{n}_proj.weight"].T for n in "qkv")
    # Qwen2Attention: q/k/v_proj always have bias=True (attention_bias unread)
    if cfg.get("model_type") == "qwen2" or cfg.get("attention_bias", False):
        q, k, v = (a + w[p + f"self_attn.{n}_proj.bias"] for a, n in zip((q, k, v), "qkv"))
    inv, att = rope_init(cfg, int(positions.max()) + 1, partial=False)
    T = x.shape[0]
    q = apply_rope(q.reshape(T, H, hd), positions, inv, att).reshape(T, -1)
    k = apply_rope(k.reshape(T, KV, hd), positions, inv, att).reshape(T, -1)
    return {"q": q, "k": k, "v": v, "scores": scores(q, k, H, KV, hd, hd ** -0.5),
            "attention_factor": att}


def gpt2(cfg, w, x, positions, layer, prefix=""):
    """Layer 0: x = wte[ids] (inputs_embeds); wpe is added here."""
    p = f"{prefix}h.{layer}."
    d, H = cfg["n_embd"], cfg["n_head"]
    hd = d // H
    h = x + w[prefix + "wpe.weight"][positions] if layer == 0 else x
    z = layer_norm(h, w[p + "ln_1.weight"], w[p + "ln_1.bias"], cfg.get("layer_norm_epsilon", 1e-5))
    qkv = z @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
    q, k, v = qkv[:, :d], qkv[:, d:2 * d], qkv[:, 2 * d:]
    scale = hd ** -0.5 if cfg.get("scale_attn_weights", True) else 1.0
    if cfg.get("scale_attn_by_inverse_layer_idx", False):
        scale /= layer + 1
    return {"q": q, "k": k, "v": v, "scores": scores(q, k, H, H, hd, scale)}


def bert(cfg, w, x, positions, layer, prefix="bert."):
    d, H = cfg["hidden_size"], cfg["num_attention_heads"]
    hd = d // H
    if layer == 0:
        e = x + w[prefix + "embeddings.token_type_embeddings.weight"][0] + \
            w[prefix + "embeddings.position_embeddings.weight"][positions]
        z = layer_norm(e, w[prefix + "embeddings.LayerNorm.weight"],
                       w[prefix + "embeddings.LayerNorm.bias"], cfg.get("layer_norm_eps", 1e-12))
    else:
        z = x
    p = f"{prefix}encoder.layer.{layer}.attention.self."
    q, k, v = (z @ w[p + n + ".weight"].T + w[p + n + ".bias"] for n in ("query", "key", "value"))
    return {"q": q, "k": k, "v": v, "scores": scores(q, k, H, H, hd, hd ** -0.5)}


def roberta_positions_from_ids(ids, pad):
    """modeling_roberta.py create_position_ids_from_input_ids (past 0):
    mask = ids.ne(padding_idx); (cumsum(mask) * mask) + padding_idx."""
    m = (np.asarray(ids) != pad).astype(np.int64)
    return np.cumsum(m, axis=-1) * m + pad


def roberta_positions_from_embeds(T, pad):
    """RobertaEmbeddings.create_position_ids_from_inputs_embeds:
    arange(padding_idx + 1, T + padding_idx + 1)."""
    return np.arange(pad + 1, T + pad + 1)


def roberta(cfg, w, x, positions, layer, prefix="roberta."):
    """RobertaEmbeddings.forward then RobertaSelfAttention: BERT's path
    (token type 0, the embedding LayerNorm, nn.Linear q/k/v with biases)
    with the positions the caller derived by the functions above."""
    return bert(cfg, w, x, positions, layer, prefix=prefix)


def opt_positions(mask):
    """modeling_opt.py OPTLearnedPositionalEmbedding.forward (past 0):
    (cumsum(mask) * mask - 1), looked up at + offset 2."""
    mask = np.asarray(mask, np.int64)
    return np.cumsum(mask, axis=-1) * mask - 1


def opt(cfg, w, x, positions, layer, prefix="model.decoder."):
    """OPTDecoder.forward: h = embed_tokens(ids) + embed_positions(mask)
    (positions are OPT's own, the table row is + 2); OPTDecoderLayer:
    self_attn_layer_norm first when do_layer_norm_before; OPTAttention:
    q/k/v nn.Linear (biases), scores q.k * head_dim^-0.5 (q_proj(h) is
    returned without the scaling)."""
    d, H = cfg["hidden_size"], cfg["num_attention_heads"]
    hd = d // H
    h = x
    if layer == 0:
        h = x + w[prefix + "embed_positions.weight"][np.asarray(positions) + 2]
    if cfg.get("do_layer_norm_before", True):
        p = f"{prefix}layers.{layer}.self_attn_layer_norm."
        h = layer_norm(h, w[p + "weight"], w[p + "bias"], 1e-5)
    p = f"{prefix}layers.{layer}.self_attn."
    q, k, v = (h @ w[p + n + "_proj.weight"].T + w[p + n + "_proj.bias"] for n in "qkv")
    return {"q": q, "k": k, "v": v, "scores": scores(q, k, H, H, hd, hd ** -0.5)}


def bloom_slopes(n):
    """build_alibi_tensor's slopes."""
    cp = 2 ** math.floor(math.log2(n))
    base = 2 ** (-(2 ** -(math.log2(cp) - 3)))
    slopes = [base ** k for k in range(1, 1 + cp)]
    if cp != n:
        extra = 2 ** (-(2 ** -(math.log2(2 * cp) - 3)))
        rem = min(cp, n - cp)
        slopes += [extra ** k for k in range(1, 1 + 2 * rem, 2)]
    return np.array(slopes, np.float64)


def bloom(cfg, w, x, positions, layer, prefix="transformer.", mask=None):
    """positions are unused: BLOOM's alibi uses key positions from the mask
    (0..T-1 without padding, the default), build_alibi_tensor's
    (cumsum(mask) - 1) * mask."""
    d = cfg.get("n_embed", cfg.get("hidden_size"))
    H = cfg.get("n_head", cfg.get("num_attention_heads"))
    hd = d // H
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    h = x
    if layer == 0:
        h = layer_norm(x, w[prefix + "word_embeddings_layernorm.weight"],
                       w[prefix + "word_embeddings_layernorm.bias"], eps)
    p = f"{prefix}h.{layer}."
    z = layer_norm(h, w[p + "input_layernorm.weight"], w[p + "input_layernorm.bias"], eps)
    fused = z @ w[p + "self_attention.query_key_value.weight"].T + \
        w[p + "self_attention.query_key_value.bias"]
    T = x.shape[0]
    fused = fused.reshape(T, H, 3, hd)
    q, k, v = (fused[:, :, j, :].reshape(T, H * hd) for j in range(3))
    mask = np.ones(T) if mask is None else np.asarray(mask, np.float64)
    kpos = (np.cumsum(mask) - 1) * mask
    bias = np.broadcast_to(bloom_slopes(H)[:, None, None] * kpos[None, None, :], (H, T, T))
    return {"q": q, "k": k, "v": v, "bias": bias, "scores": scores(q, k, H, H, hd, hd ** -0.5, bias)}


def t5_bucket(rel, bidirectional, num_buckets, max_distance):
    """_relative_position_bucket, the log part in float32 as torch does it."""
    rel = np.asarray(rel, np.int64)
    buckets = np.zeros_like(rel)
    if bidirectional:
        num_buckets //= 2
        buckets += (rel > 0).astype(np.int64) * num_buckets
        rel = np.abs(rel)
    else:
        rel = -np.minimum(rel, 0)
    max_exact = num_buckets // 2
    small = rel < max_exact
    with np.errstate(divide="ignore", invalid="ignore"):
        large = max_exact + (np.log(rel.astype(np.float32) / np.float32(max_exact)) /
                             np.float32(math.log(max_distance / max_exact)) *
                             np.float32(num_buckets - max_exact)).astype(np.int64)
    large = np.minimum(large, num_buckets - 1)
    return buckets + np.where(small, rel, large)


def t5(cfg, w, x, positions, layer):
    H, hd = cfg["num_heads"], cfg["d_kv"]
    p = f"encoder.block.{layer}.layer.0."
    z = rms_norm(x, w[p + "layer_norm.weight"], cfg.get("layer_norm_epsilon", 1e-6))
    q, k, v = (z @ w[p + f"SelfAttention.{n}.weight"].T for n in "qkv")
    rel = positions[None, :] - positions[:, None]  # memory - context
    b = t5_bucket(rel, True, cfg.get("relative_attention_num_buckets", 32),
                  cfg.get("relative_attention_max_distance", 128))
    table = w["encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"]
    bias = np.transpose(table[b], (2, 0, 1))
    return {"q": q, "k": k, "v": v, "bias": bias, "scores": scores(q, k, H, H, hd, 1.0, bias)}


# ------------------------------ GPT-NeoX, Phi, Phi-3, StarCoder2, Gemma
def _rope_qk(q, k, positions, cfg, H, KV, hd, partial=True):
    inv, att = rope_init(cfg, int(positions.max()) + 1, partial=partial)
    T = q.shape[0]
    return (apply_rope(q.reshape(T, H, hd), positions, inv, att).reshape(T, -1),
            apply_rope(k.reshape(T, KV, hd), positions, inv, att).reshape(T, -1), att)


def gpt_neox(cfg, w, x, positions, layer, prefix="gpt_neox."):
    """modeling_gpt_neox.py: GPTNeoXLayer.forward (input_layernorm), then
    GPTNeoXAttention.forward: query_key_value viewed [T][heads][3*head_dim]
    and chunked into q, k, v; apply_rotary_pos_emb on the first
    int(head_dim * rotary_pct) channels (GPTNeoXConfig: rope_theta =
    rotary_emb_base, partial_rotary_factor = rotary_pct)."""
    p = f"{prefix}layers.{layer}."
    d, H = cfg["hidden_size"], cfg["num_attention_heads"]
    hd = d // H
    z = layer_norm(x, w[p + "input_layernorm.weight"], w[p + "input_layernorm.bias"],
                   cfg.get("layer_norm_eps", 1e-5))
    qkv = z @ w[p + "attention.query_key_value.weight"].T
    if cfg.get("attention_bias", True):
        qkv = qkv + w[p + "attention.query_key_value.bias"]
    T = x.shape[0]
    qkv = qkv.reshape(T, H, 3 * hd)
    q, k, v = (qkv[:, :, j * hd:(j + 1) * hd].reshape(T, d) for j in range(3))
    rc = dict(cfg, rope_theta=cfg.get("rotary_emb_base", 10000),
              partial_rotary_factor=cfg.get("rotary_pct", 0.25))
    rc.pop("rotary_emb_base", None)
    q, k, att = _rope_qk(q, k, positions, rc, H, H, hd)
    return {"q": q, "k": k, "v": v, "scores": scores(q, k, H, H, hd, hd ** -0.5),
            "attention_factor": att}


def phi(cfg, w, x, positions, layer, prefix="model."):
    """modeling_phi.py: PhiDecoderLayer.forward (input_layernorm, a
    LayerNorm), PhiAttention.forward: biased q/k/v_proj, query_rot /
    query_pass split at int(head_dim * partial_rotary_factor)."""
    p = f"{prefix}layers.{layer}."
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    hd = cfg.get("head_dim") or cfg["hidden_size"] // H
    z = layer_norm(x, w[p + "input_layernorm.weight"], w[p + "input_layernorm.bias"],
                   cfg.get("layer_norm_eps", 1e-5))
    q, k, v = (z @ w[p + f"self_attn.{n}_proj.weight"].T + w[p + f"self_attn.{n}_proj.bias"]
               for n in "qkv")
    rc = dict(cfg, partial_rotary_factor=cfg.get("partial_rotary_factor", 0.5))
    q, k, att = _rope_qk(q, k, positions, rc, H, KV, hd)
    return {"q": q, "k": k, "v": v, "scores": scores(q, k, H, KV, hd, hd ** -0.5),
            "attention_factor": att}


def phi3(cfg, w, x, positions, layer, prefix="model."):
    """modeling_phi3.py: Phi3DecoderLayer.forward (input_layernorm,
    Phi3RMSNorm), Phi3Attention.forward: qkv_proj sliced at heads*head_dim
    and + kv_heads*head_dim; apply_rotary_pos_emb rotates the first
    cos.shape[-1] channels (longrope from modeling_rope_utils.py)."""
    p = f"{prefix}layers.{layer}."
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    hd = cfg.get("head_dim") or cfg["hidden_size"] // H
    z = rms_norm(x, w[p + "input_layernorm.weight"], cfg.get("rms_norm_eps", 1e-5))
    qkv = z @ w[p + "self_attn.qkv_proj.weight"].T
    q, k, v = qkv[:, :H * hd], qkv[:, H * hd:(H + KV) * hd], qkv[:, (H + KV) * hd:]
    q, k, att = _rope_qk(q, k, positions, cfg, H, KV, hd)
    return {"q": q, "k": k, "v": v, "scores": scores(q, k, H, KV, hd, hd ** -0.5),
            "attention_factor": att}


def starcoder2(cfg, w, x, positions, layer, prefix="model."):
    """modeling_starcoder2.py: Starcoder2DecoderLayer.forward
    (input_layernorm, nn.LayerNorm with norm_epsilon), Starcoder2Attention:
    q/k/v_proj with bias=use_bias, the Llama rotation over head_dim."""
    p = f"{prefix}layers.{layer}."
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    hd = cfg.get("head_dim") or cfg["hidden_size"] // H
    z = layer_norm(x, w[p + "input_layernorm.weight"], w[p + "input_layernorm.bias"],
                   cfg.get("norm_epsilon", 1e-5))
    q, k, v = (z @ w[p + f"self_attn.{n}_proj.weight"].T for n in "qkv")
    if cfg.get("use_bias", True):
        q, k, v = (a + w[p + f"self_attn.{n}_proj.bias"] for a, n in zip((q, k, v), "qkv"))
    q, k, att = _rope_qk(q, k, positions, cfg, H, KV, hd, partial=False)
    return {"q": q, "k": k, "v": v, "scores": scores(q, k, H, KV, hd, hd ** -0.5),
            "attention_factor": att}


def _round_to(a, dtype):
    """torch's rounding of a float32 array to dtype (F32: none)."""
    a = np.asarray(a, np.float32)
    shape = a.shape
    a = np.atleast_1d(a)
    if dtype == "F16":
        out = a.astype(np.float16).astype(np.float64)
    elif dtype == "BF16":  # round to nearest even on the top 16 bits
        u = a.view(np.uint32).astype(np.uint64)
        one, half = np.uint64(1), np.uint64(0x7FFF)
        bits = (((u + half + ((u >> np.uint64(16)) & one)) >> np.uint64(16)) << np.uint64(16))
        out = bits.astype(np.uint32).view(np.float32).astype(np.float64)
    else:
        out = a.astype(np.float64)
    return out.reshape(shape)


def gemma(cfg, w, x, positions, layer, prefix="model.", from_ids=False, dtype="F32"):
    """modeling_gemma.py: GemmaModel.forward multiplies the embeddings by
    normalizer = tensor(hidden_size ** 0.5, dtype=hidden_states.dtype)
    (token embeddings: the product in the embedding dtype); GemmaRMSNorm:
    x * rsqrt(mean(x^2) + eps) * (1.0 + w.float()); GemmaAttention: head_dim
    from the config, the Llama rotation."""
    p = f"{prefix}layers.{layer}."
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    hd = cfg.get("head_dim", 256)
    h = x
    if layer == 0:
        s = float(_round_to(np.float32(math.sqrt(cfg["hidden_size"])), dtype))
        h = _round_to((x * s).astype(np.float32), dtype) if from_ids else x * s
    one_plus_w = (np.float32(1.0) + w[p + "input_layernorm.weight"].astype(np.float32))
    z = rms_norm(h, one_plus_w.astype(np.float64), cfg.get("rms_norm_eps", 1e-6))
    q, k, v = (z @ w[p + f"self_attn.{n}_proj.weight"].T for n in "qkv")
    if cfg.get("attention_bias", False):
        q, k, v = (a + w[p + f"self_attn.{n}_proj.bias"] for a, n in zip((q, k, v), "qkv"))
    q, k, att = _rope_qk(q, k, positions, dict(cfg, head_dim=hd), H, KV, hd, partial=False)
    return {"q": q, "k": k, "v": v, "scores": scores(q, k, H, KV, hd, hd ** -0.5),
            "attention_factor": att}


def falcon(cfg, w, x, positions, layer, prefix="transformer."):
    """modeling_falcon.py: FalconDecoderLayer.forward (ln_attn when
    new_decoder_architecture and num_ln_in_parallel_attn == 2, its default
    there; else input_layernorm), FalconAttention._split_heads for the three
    fused layouts, apply_rotary_pos_emb over whole heads
    (FalconRotaryEmbedding), scores / sqrt(head_dim). k and v stay per kv
    head: HF's broadcast_to over the group is the GQA head mapping."""
    d = cfg.get("n_embed") or cfg["hidden_size"]
    H = cfg["num_attention_heads"]
    hd = d // H
    new, mq = cfg.get("new_decoder_architecture", False), cfg.get("multi_query", True)
    num_ln = cfg.get("num_ln_in_parallel_attn")
    if num_ln is None and new:
        num_ln = 2
    p = f"{prefix}h.{layer}."
    norm = "ln_attn" if new and num_ln == 2 else "input_layernorm"
    z = layer_norm(x, w[p + norm + ".weight"], w[p + norm + ".bias"],
                   cfg.get("layer_norm_epsilon", 1e-5))
    fused = z @ w[p + "self_attention.query_key_value.weight"].T
    if cfg.get("bias", False):
        fused = fused + w[p + "self_attention.query_key_value.bias"]
    T = x.shape[0]
    if new:
        KV = cfg.get("num_kv_heads") or H
        g = H // KV
        qkv = fused.reshape(T, KV, g + 2, hd)
        q, k, v = (qkv[:, :, :g].reshape(T, H * hd), qkv[:, :, g].reshape(T, KV * hd),
                   qkv[:, :, g + 1].reshape(T, KV * hd))
    elif not mq:
        KV = H
        qkv = fused.reshape(T, H, 3, hd)
        q, k, v = (qkv[:, :, j].reshape(T, d) for j in range(3))
    else:
        KV = 1
        qkv = fused.reshape(T, H + 2, hd)
        q, k, v = qkv[:, :H].reshape(T, d), qkv[:, H], qkv[:, H + 1]
    rc = dict(cfg, hidden_size=d)
    q, k, att = _rope_qk(q, k, positions, rc, H, KV, hd, partial=False)
    return {"q": q, "k": k, "v": v, "scores": scores(q, k, H, KV, hd, hd ** -0.5),
            "attention_factor": att}


def mpt_slopes(n, alibi_bias_max=8):
    """build_mpt_alibi_tensor's slopes (modeling_mpt.py)."""
    n2 = 2 ** math.ceil(math.log2(n))
    base = np.arange(1, n2 + 1, dtype=np.float64) * (alibi_bias_max / n2)
    slopes = 1.0 / np.power(2.0, base)
    if n2 != n:
        slopes = np.concatenate([slopes[1::2], slopes[::2]])[:n]
    return slopes


def mpt(cfg, w, x, positions, layer, prefix="transformer."):
    """modeling_mpt.py: MptBlock.forward (norm_1, a LayerNorm whose bias is
    None), MptAttention.forward (Wqkv without bias, chunk(3); scores =
    q.k * softmax_scale + position_bias). HF's raw bias is
    slope*(j - (T-1)) (build_mpt_alibi_tensor over max_seq_len keys, the
    last T kept), what posenc's alibi form "mpt" serves: "bias" and "scores"
    (also as "hf_bias"/"hf_scores"). "bloom_bias"/"bloom_scores" are the
    same with the per-head constant slope*(T-1) added back, slope*j (equal
    after the causal mask and softmax)."""
    d, H = cfg["d_model"], cfg["n_heads"]
    hd = d // H
    p = f"{prefix}blocks.{layer}."
    z = layer_norm(x, w[p + "norm_1.weight"], 0.0, cfg.get("layer_norm_epsilon", 1e-5))
    q, k, v = np.split(z @ w[p + "attn.Wqkv.weight"].T, 3, axis=-1)
    ac = cfg.get("attn_config") or {}
    scale = ac.get("softmax_scale") or 1 / math.sqrt(d / H)
    T = x.shape[0]
    slopes = mpt_slopes(H)
    max_len = cfg.get("max_seq_len", 2048)
    full = np.arange(1 - max_len, 1, dtype=np.float64)[None, None, :] * slopes[:, None, None]
    hf_bias = np.broadcast_to(full[:, :, max_len - T:], (H, T, T))
    bloom_bias = hf_bias + (slopes * (T - 1))[:, None, None]
    hf_scores = scores(q, k, H, H, hd, scale, hf_bias)
    return {"q": q, "k": k, "v": v, "bias": hf_bias, "scores": hf_scores,
            "hf_bias": hf_bias, "hf_scores": hf_scores, "bloom_bias": bloom_bias,
            "bloom_scores": scores(q, k, H, H, hd, scale, bloom_bias)}


# ------------------------------------------------ q/k norms and score transforms
def qwen3(cfg, w, x, positions, layer, prefix="model."):
    """modeling_qwen3.py: Qwen3DecoderLayer.forward (input_layernorm,
    Qwen3RMSNorm), Qwen3Attention.forward: q_norm(q_proj(z).view(T, H, hd))
    and k_norm(k_proj(z).view(T, KV, hd)) (Qwen3RMSNorm over head_dim), then
    apply_rotary_pos_emb; head_dim from the config (Qwen3Config: 128)."""
    p = f"{prefix}layers.{layer}."
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    hd = cfg.get("head_dim", 128)
    eps = cfg.get("rms_norm_eps", 1e-6)
    z = rms_norm(x, w[p + "input_layernorm.weight"], eps)
    q, k, v = (z @ w[p + f"self_attn.{n}_proj.weight"].T for n in "qkv")
    if cfg.get("attention_bias", False):
        q, k, v = (a + w[p + f"self_attn.{n}_proj.bias"] for a, n in zip((q, k, v), "qkv"))
    T = x.shape[0]
    q = rms_norm(q.reshape(T, H, hd), w[p + "self_attn.q_norm.weight"], eps).reshape(T, -1)
    k = rms_norm(k.reshape(T, KV, hd), w[p + "self_attn.k_norm.weight"], eps).reshape(T, -1)
    q, k, att = _rope_qk(q, k, positions, dict(cfg, head_dim=hd), H, KV, hd, partial=False)
    return {"q": q, "k": k, "v": v, "scores": scores(q, k, H, KV, hd, hd ** -0.5),
            "attention_factor": att}


def olmo2(cfg, w, x, positions, layer, prefix="model."):
    """modeling_olmo2.py: Olmo2DecoderLayer.forward hands the hidden state to
    self_attn unnormalised (post_attention_layernorm comes after);
    Olmo2Attention.forward: q_norm(q_proj(h)), k_norm(k_proj(h)) with
    Olmo2RMSNorm over the whole projection width, then the views per head and
    apply_rotary_pos_emb."""
    p = f"{prefix}layers.{layer}."
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    hd = cfg.get("head_dim") or cfg["hidden_size"] // H
    eps = cfg.get("rms_norm_eps", 1e-5)
    q, k, v = (x @ w[p + f"self_attn.{n}_proj.weight"].T for n in "qkv")
    if cfg.get("attention_bias", False):
        q, k, v = (a + w[p + f"self_attn.{n}_proj.bias"] for a, n in zip((q, k, v), "qkv"))
    q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
    k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
    q, k, att = _rope_qk(q, k, positions, cfg, H, KV, hd, partial=False)
    return {"q": q, "k": k, "v": v, "scores": scores(q, k, H, KV, hd, hd ** -0.5),
            "attention_factor": att}


def softcap(s, cap):
    """eager_attention_forward (modeling_gemma2.py): tanh(s / cap) * cap."""
    return s if cap is None else np.tanh(s / cap) * cap


def gemma2(cfg, w, x, positions, layer, prefix="model.", from_ids=False, dtype="F32"):
    """modeling_gemma2.py: Gemma2Model.forward scales inputs_embeds by the
    normalizer as GemmaModel does (gemma() above), Gemma2Attention: scaling =
    query_pre_attn_scalar ** -0.5 (Gemma2Config: 256), then the soft cap of
    attn_logit_softcapping (Gemma2Config: 50.0; None: no cap)."""
    out = gemma(cfg, w, x, positions, layer, prefix, from_ids, dtype)
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    hd = cfg.get("head_dim", 256)
    s = scores(out["q"], out["k"], H, KV, hd, cfg.get("query_pre_attn_scalar", 256) ** -0.5)
    out["scores"] = softcap(s, cfg.get("attn_logit_softcapping", 50.0))
    return out


def gemma3_is_sliding(cfg, layer):
    """Gemma3TextConfig: layer_types, else sliding unless (L + 1) is a
    multiple of sliding_window_pattern (default 6)."""
    types = cfg.get("layer_types")
    if types is not None:
        return types[layer] == "sliding_attention"
    return bool((layer + 1) % cfg.get("sliding_window_pattern", 6))


def gemma3(cfg, w, x, positions, layer, prefix="model.", from_ids=False, dtype="F32"):
    """modeling_gemma3.py: Gemma3TextScaledWordEmbedding scales token ids by
    embed_scale.to(weight.dtype) (inputs_embeds are not scaled);
    Gemma3DecoderLayer: input_layernorm (Gemma3RMSNorm, x * (1 + w));
    Gemma3Attention.forward: q_norm / k_norm (Gemma3RMSNorm over head_dim)
    after the views per head, apply_rotary_pos_emb with rotary_emb_local
    (rope_local_base_freq, default rope) on sliding layers and rotary_emb
    (rope_theta, default 1e6, rope_scaling) on global ones;
    eager_attention_forward with scaling = query_pre_attn_scalar ** -0.5 and
    the soft cap of attn_logit_softcapping (default None)."""
    p = f"{prefix}layers.{layer}."
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    hd = cfg.get("head_dim", 256)
    eps = cfg.get("rms_norm_eps", 1e-6)
    h = x
    if layer == 0 and from_ids:
        s = float(_round_to(np.float32(math.sqrt(cfg["hidden_size"])), dtype))
        h = _round_to((x * s).astype(np.float32), dtype)

    def one_plus(name):
        return (np.float32(1.0) + w[p + name].astype(np.float32)).astype(np.float64)
    z = rms_norm(h, one_plus("input_layernorm.weight"), eps)
    q, k, v = (z @ w[p + f"self_attn.{n}_proj.weight"].T for n in "qkv")
    if cfg.get("attention_bias", False):
        q, k, v = (a + w[p + f"self_attn.{n}_proj.bias"] for a, n in zip((q, k, v), "qkv"))
    T = x.shape[0]
    q = rms_norm(q.reshape(T, H, hd), one_plus("self_attn.q_norm.weight"), eps).reshape(T, -1)
    k = rms_norm(k.reshape(T, KV, hd), one_plus("self_attn.k_norm.weight"), eps).reshape(T, -1)
    if gemma3_is_sliding(cfg, layer):
        rc = dict(cfg, rope_theta=cfg.get("rope_local_base_freq", 10000.0), rope_scaling=None,
                  rope_parameters=None, head_dim=hd)
    else:
        rc = dict(cfg, rope_theta=cfg.get("rope_theta", 1000000.0), head_dim=hd)
    q, k, att = _rope_qk(q, k, positions, rc, H, KV, hd, partial=False)
    s = scores(q, k, H, KV, hd, cfg.get("query_pre_attn_scalar", 256) ** -0.5)
    return {"q": q, "k": k, "v": v, "scores": softcap(s, cfg.get("attn_logit_softcapping")),
            "attention_factor": att}


# --------------------------------------------------------------- Llama 4
def llama4_uses_rope(cfg, layer):
    """Llama4TextConfig: no_rope_layers (1 = rope), or when empty/absent
    int((L + 1) % no_rope_layer_interval != 0), interval 4."""
    nrl = cfg.get("no_rope_layers") or [int((L + 1) % cfg.get("no_rope_layer_interval", 4) != 0)
                                        for L in range(cfg["num_hidden_layers"])]
    return bool(nrl[layer])


def llama4(cfg, w, x, positions, layer, prefix="language_model.model.", cache_start=0):
    """modeling_llama4.py: Llama4TextDecoderLayer.forward (input_layernorm,
    Llama4TextRMSNorm), Llama4TextAttention.forward: q/k/v_proj viewed per
    head; on rope layers apply_rotary_emb (view_as_complex of adjacent
    pairs times freqs_cis = polar(1, pos*inv_freq) * attention_scaling from
    Llama4TextRotaryEmbedding), then, with use_qk_norm, Llama4TextL2Norm
    (x * rsqrt(mean(x^2) + rms_norm_eps), no weight) on q and k; on NoPE
    layers with attn_temperature_tuning, q *= log(floor((slot + 1) /
    floor_scale) + 1) * attn_scale + 1, slot = cache_position
    (cache_start + arange(T)). Scores: head_dim ** -0.5."""
    p = f"{prefix}layers.{layer}."
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    hd = cfg.get("head_dim", 128)
    eps = cfg.get("rms_norm_eps", 1e-5)
    T = x.shape[0]
    z = rms_norm(x, w[p + "input_layernorm.weight"], eps)
    q, k, v = (z @ w[p + f"self_attn.{n}_proj.weight"].T for n in "qkv")
    if cfg.get("attention_bias", False):
        q, k, v = (a + w[p + f"self_attn.{n}_proj.bias"] for a, n in zip((q, k, v), "qkv"))
    q, k = q.reshape(T, H, hd), k.reshape(T, KV, hd)
    att = 1.0
    if llama4_uses_rope(cfg, layer):
        rc = dict(cfg, head_dim=hd)
        rc.setdefault("rope_theta", 500000.0)
        inv, att = rope_init(rc, int(positions.max()) + 1, partial=False)
        freqs_cis = np.exp(1j * np.outer(positions.astype(np.float64), inv)) * att  # [T][hd/2]

        def rot(a):
            c = a[..., 0::2] + 1j * a[..., 1::2]          # view_as_complex(reshape(..., -1, 2))
            out = c * freqs_cis[:, None, :]
            return np.stack([out.real, out.imag], -1).reshape(a.shape)  # view_as_real.flatten
        q, k = rot(q), rot(k)
        if cfg.get("use_qk_norm", True):
            q = q / np.sqrt((q ** 2).mean(-1, keepdims=True) + eps)
            k = k / np.sqrt((k ** 2).mean(-1, keepdims=True) + eps)
    elif cfg.get("attn_temperature_tuning", True):
        # Llama4TextAttention reads cache_position (the slot in the row
        # after cache_start cached ones), not position_ids: they differ in a
        # left-padded row (contract 1.2)
        slots = cache_start + np.arange(T, dtype=np.float64)
        s = np.log(np.floor((slots + 1.0) / cfg.get("floor_scale", 8192)) + 1.0) \
            * cfg.get("attn_scale", 0.1) + 1.0
        q = q * s[:, None, None]
    q, k = q.reshape(T, -1), k.reshape(T, -1)
    return {"q": q, "k": k, "v": v, "scores": scores(q, k, H, KV, hd, hd ** -0.5),
            "attention_factor": att}


# --------------------------------------------------- DeepSeek-V2/V3 MLA
def deepseek(cfg, w, x, positions, layer, prefix="model."):
    """modeling_deepseek_v3.py DeepseekV3Attention.forward and
    modeling_deepseek_v2.py DeepseekV2Attention.forward: q = q_b_proj(
    q_a_layernorm(q_a_proj(z))) or q_proj(z); [c | k_rot] =
    kv_a_proj_with_mqa(z); [k_nope | v] = kv_b_proj(kv_a_layernorm(c)) per
    head (both norms DeepseekV*RMSNorm(rank), eps 1e-6); the rope over
    qk_rope_head_dim: V3 apply_rotary_pos_emb_interleave (view (d/2, 2),
    transpose, rotate_half; the result stays permuted) or, with
    rope_interleave false, apply_rotary_pos_emb; V2 apply_rotary_emb
    (view_as_complex * freqs_cis). k_rot is expanded to every head. Scores:
    qk_head_dim ** -0.5, times yarn_get_mscale(factor, mscale_all_dim)**2
    when rope_scaling has a non-zero mscale_all_dim: V3's attention does so,
    and V2 does the same (DeepSeek's own V2 code always did; the contract's
    architecture settlement)."""
    p = f"{prefix}layers.{layer}."
    a = p + "self_attn."
    H = cfg["num_attention_heads"]
    ql = cfg["q_lora_rank"] if "q_lora_rank" in cfg else 1536
    kvl = cfg.get("kv_lora_rank", 512)
    nope, rope, vd = (cfg.get("qk_nope_head_dim", 128), cfg.get("qk_rope_head_dim", 64),
                      cfg.get("v_head_dim", 128))
    qkh = nope + rope
    T = x.shape[0]
    z = rms_norm(x, w[p + "input_layernorm.weight"], cfg.get("rms_norm_eps", 1e-6))
    if ql:
        q = rms_norm(z @ w[a + "q_a_proj.weight"].T, w[a + "q_a_layernorm.weight"], 1e-6) \
            @ w[a + "q_b_proj.weight"].T
    else:
        q = z @ w[a + "q_proj.weight"].T
    q = q.reshape(T, H, qkh)
    q_pass, q_rot = q[..., :nope], q[..., nope:]
    ckv = z @ w[a + "kv_a_proj_with_mqa.weight"].T
    c, k_rot = ckv[:, :kvl], ckv[:, None, kvl:]
    kv = (rms_norm(c, w[a + "kv_a_layernorm.weight"], 1e-6) @ w[a + "kv_b_proj.weight"].T)
    kv = kv.reshape(T, H, nope + vd)
    k_pass, v = kv[..., :nope], kv[..., nope:]
    inv, att = rope_init(dict(cfg, head_dim=rope), int(positions.max()) + 1, partial=False)
    v3 = cfg["model_type"] == "deepseek_v3"
    if v3:
        def perm(t):
            n, h, dd = t.shape
            return t.reshape(n, h, dd // 2, 2).transpose(0, 1, 3, 2).reshape(n, h, dd)
        if cfg.get("rope_interleave", True):
            q_rot, k_rot = perm(q_rot), perm(k_rot)
        q_rot, k_rot = apply_rope(q_rot, positions, inv, att), apply_rope(k_rot, positions, inv, att)
    else:
        freqs_cis = np.exp(1j * np.outer(positions.astype(np.float64), inv)) * att

        def rot(t):
            cplx = (t[..., 0::2] + 1j * t[..., 1::2]) * freqs_cis[:, None, :]
            return np.stack([cplx.real, cplx.imag], -1).reshape(t.shape)
        q_rot, k_rot = rot(q_rot), rot(k_rot)
    k_rot = np.broadcast_to(k_rot, (T, H, rope))
    q = np.concatenate([q_pass, q_rot], -1).reshape(T, -1)
    k = np.concatenate([k_pass, k_rot], -1).reshape(T, -1)
    scale = qkh ** -0.5
    rs = cfg.get("rope_scaling")
    if rs is not None and rs.get("mscale_all_dim", 0):
        f = rs["factor"]
        ms = 1.0 if f <= 1 else 0.1 * rs["mscale_all_dim"] * math.log(f) + 1.0
        scale = scale * ms * ms
    return {"q": q, "k": k, "v": v.reshape(T, -1), "scores": scores(q, k, H, H, qkh, scale),
            "attention_factor": att, "score_scale": scale}


# -------------------------------------- Llama variations as spec entries
def _llama_like(cfg, w, h, positions, layer, prefix, rotate, theta, scale):
    """The Llama attention input and projections of h, rotated or not."""
    p = f"{prefix}layers.{layer}."
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    hd = cfg.get("head_dim") or cfg["hidden_size"] // H
    T = h.shape[0]
    z = rms_norm(h, w[p + "input_layernorm.weight"], cfg.get("rms_norm_eps", 1e-6))
    q, k, v = (z @ w[p + f"self_attn.{n}_proj.weight"].T for n in "qkv")
    if cfg.get("attention_bias", False):
        q, k, v = (a + w[p + f"self_attn.{n}_proj.bias"] for a, n in zip((q, k, v), "qkv"))
    att = 1.0
    if rotate:
        rc = dict(cfg)
        if rc.get("rope_theta") is None:
            rc["rope_theta"] = theta
        inv, att = rope_init(rc, int(positions.max()) + 1, partial=False)
        q = apply_rope(q.reshape(T, H, hd), positions, inv, att).reshape(T, -1)
        k = apply_rope(k.reshape(T, KV, hd), positions, inv, att).reshape(T, -1)
    if scale is None:
        scale = hd ** -0.5
    return {"q": q, "k": k, "v": v, "scores": scores(q, k, H, KV, hd, scale),
            "attention_factor": att, "score_scale": scale}


def times_python_float(x, s, dtype, from_ids):
    """inputs_embeds * s for a Python float s, as torch >= 2 computes it: a
    looked-up table row of a half or bfloat16 checkpoint is multiplied in
    float32 (the scalar rounded to float32, not to the dtype) and the product
    rounded to the dtype; given embeddings (float32) are x * s."""
    if not from_ids:
        return x * s
    return _round_to((x * float(np.float32(s))).astype(np.float32), dtype)


def granite(cfg, w, x, positions, layer, prefix="model.", from_ids=False, dtype="F32"):
    """modeling_granite.py (IBM Granite 3; granitemoe and granitemoeshared
    alike): GraniteModel.forward scales the decoder's input, inputs_embeds
    whether looked up from input_ids or passed in, by
    config.embedding_multiplier (default 1), in the embeddings' dtype
    (times_python_float); the layers after the first see the hidden state
    unscaled. GraniteAttention is Llama's (RMSNorm input_layernorm,
    q/k/v_proj with attention_bias, rotate_half rope, head_dim
    hidden/heads) except that its scores are multiplied by
    config.attention_multiplier (default 1) instead of head_dim ** -0.5."""
    h = x
    if layer == 0:
        h = times_python_float(x, cfg.get("embedding_multiplier", 1.0), dtype, from_ids)
    return _llama_like(cfg, w, h, positions, layer, prefix, True, 10000.0,
                       cfg.get("attention_multiplier", 1.0))


def smollm3_uses_rope(cfg, layer):
    """SmolLM3Config: no_rope_layers[L] (1: the layer rotates, 0: NoPE);
    when the key is absent (None), int((L + 1) % no_rope_layer_interval !=
    0) with interval 4: every fourth layer has no rope."""
    nrl = cfg.get("no_rope_layers")
    if nrl is None:
        every = cfg.get("no_rope_layer_interval", 4)
        nrl = [int((i + 1) % every != 0) for i in range(cfg["num_hidden_layers"])]
    return bool(nrl[layer])


def smollm3(cfg, w, x, positions, layer, prefix="model."):
    """modeling_smollm3.py: SmolLM3Attention applies apply_rotary_pos_emb
    only when use_rope = config.no_rope_layers[layer_idx] is 1; the rope is
    Llama's with SmolLM3Config's rope_theta default 2e6. No embedding scale;
    scores head_dim ** -0.5 on every layer."""
    return _llama_like(cfg, w, x, positions, layer, prefix, smollm3_uses_rope(cfg, layer),
                       2e6, None)


# -------------------------------------- Cohere, StableLM, MiniCPM, EXAONE 4
def apply_rope_interleaved(x, positions, inv_freq, att):
    """modeling_cohere.py: cos/sin are repeat_interleave(freqs, 2) (each
    angle on channels 2i and 2i+1), and its rotate_half maps the pair
    (a, b) = (x[2i], x[2i+1]) to (-b, a): x*cos + rotate_half(x)*sin turns
    each adjacent pair by its angle. x: [T][heads][head_dim]."""
    ang = np.outer(positions.astype(np.float64), inv_freq)           # [T][hd/2]
    cos = np.repeat(np.cos(ang), 2, axis=-1)[:, None, :] * att
    sin = np.repeat(np.sin(ang), 2, axis=-1)[:, None, :] * att
    turned = np.empty_like(x)
    turned[..., 0::2], turned[..., 1::2] = -x[..., 1::2], x[..., 0::2]
    return x * cos + turned * sin


def _linear(z, w, p, names, bias):
    out = [z @ w[p + f"self_attn.{n}_proj.weight"].T for n in names]
    if bias:
        out = [a + w[p + f"self_attn.{n}_proj.bias"] for a, n in zip(out, names)]
    return out


def _head_layer_norm(a, weight, eps):
    """LayerNorm without bias over the last axis of [T][heads][head_dim],
    weight broadcast as given ([heads][head_dim]: one per head)."""
    mean = a.mean(-1, keepdims=True)
    var = ((a - mean) ** 2).mean(-1, keepdims=True)
    return (a - mean) / np.sqrt(var + eps) * weight


def cohere(cfg, w, x, positions, layer, prefix="model.", seq_len=None):
    """modeling_cohere.py: CohereDecoderLayer applies input_layernorm
    (CohereLayerNorm: mean and variance in float32, weight, no bias,
    layer_norm_eps); CohereAttention (LlamaAttention's projections with
    attention_bias; head_dim = config.head_dim if given, else hidden/heads)
    views q and k per head and, with use_qk_norm, applies q_norm / k_norm:
    CohereLayerNorm of shape (heads, head_dim), so each head has its own
    weights; then Cohere's interleaved rotation (CohereRotaryEmbedding,
    LlamaRotaryEmbedding's frequencies; rope_theta defaults to
    CohereConfig.default_theta, 500000). Scores: head_dim ** -0.5.
    logit_scale multiplies the LM head's logits only."""
    p = f"{prefix}layers.{layer}."
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    hd = cfg.get("head_dim") or cfg["hidden_size"] // H
    eps = cfg.get("layer_norm_eps", 1e-5)
    T = x.shape[0]
    z = layer_norm(x, w[p + "input_layernorm.weight"], 0.0, eps)
    q, k, v = _linear(z, w, p, "qkv", cfg.get("attention_bias", False))
    q, k = q.reshape(T, H, hd), k.reshape(T, KV, hd)
    if cfg.get("use_qk_norm", False):
        q = _head_layer_norm(q, w[p + "self_attn.q_norm.weight"], eps)
        k = _head_layer_norm(k, w[p + "self_attn.k_norm.weight"], eps)
    rc = dict(cfg, head_dim=hd)
    rc.setdefault("rope_theta", 500000.0)
    # dynamic NTK sizes itself by the batch's largest position (seq_len)
    inv, att = rope_init(rc, seq_len or int(positions.max()) + 1, partial=False)
    q = apply_rope_interleaved(q, positions, inv, att).reshape(T, -1)
    k = apply_rope_interleaved(k, positions, inv, att).reshape(T, -1)
    return {"q": q, "k": k, "v": v, "scores": scores(q, k, H, KV, hd, hd ** -0.5),
            "attention_factor": att}


def cohere2_rotates(cfg, layer):
    """Cohere2Config: layer_types, else sliding unless (L + 1) is a multiple
    of sliding_window_pattern (4); Cohere2Attention rotates only where its
    sliding_window (config.sliding_window on sliding layers) is not None."""
    types = cfg.get("layer_types") or [
        "sliding_attention" if (i + 1) % cfg.get("sliding_window_pattern", 4) else
        "full_attention" for i in range(cfg["num_hidden_layers"])]
    return types[layer] == "sliding_attention" and cfg.get("sliding_window", 4096) is not None


def cohere2(cfg, w, x, positions, layer, prefix="model."):
    """modeling_cohere2.py: Cohere's layer (CohereLayerNorm, q/k/v_proj) with
    head_dim = hidden / heads always (Cohere2Config sets it), no q/k norms,
    and the interleaved rotation on sliding layers only (rope_theta default
    10000)."""
    p = f"{prefix}layers.{layer}."
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    hd = cfg["hidden_size"] // H
    T = x.shape[0]
    z = layer_norm(x, w[p + "input_layernorm.weight"], 0.0, cfg.get("layer_norm_eps", 1e-5))
    q, k, v = _linear(z, w, p, "qkv", cfg.get("attention_bias", False))
    att = 1.0
    if cohere2_rotates(cfg, layer):
        inv, att = rope_init(dict(cfg, head_dim=hd), int(positions.max()) + 1, partial=False)
        q = apply_rope_interleaved(q.reshape(T, H, hd), positions, inv, att).reshape(T, -1)
        k = apply_rope_interleaved(k.reshape(T, KV, hd), positions, inv, att).reshape(T, -1)
    return {"q": q, "k": k, "v": v, "scores": scores(q, k, H, KV, hd, hd ** -0.5),
            "attention_factor": att}


def stablelm(cfg, w, x, positions, layer, prefix="model."):
    """modeling_stablelm.py: StableLmDecoderLayer: input_layernorm
    (nn.LayerNorm with bias, layer_norm_eps); StableLmAttention: q/k/v_proj
    with bias=use_qkv_bias, head_dim = hidden / heads, kv heads
    num_key_value_heads (StableLmConfig's default 32); with qk_layernorm,
    StableLmLayerNormPerHead splits q (k) by head and gives each its own
    nn.LayerNorm(head_dim, bias=False); then the first
    int(head_dim * partial_rotary_factor) channels (default 0.25) rotate
    with rotate_half, the rest pass."""
    p = f"{prefix}layers.{layer}."
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads", 32)
    hd = cfg["hidden_size"] // H
    eps = cfg.get("layer_norm_eps", 1e-5)
    T = x.shape[0]
    z = layer_norm(x, w[p + "input_layernorm.weight"], w[p + "input_layernorm.bias"], eps)
    q, k, v = _linear(z, w, p, "qkv", cfg.get("use_qkv_bias", False))
    q, k = q.reshape(T, H, hd), k.reshape(T, KV, hd)
    if cfg.get("qk_layernorm", False):
        def per_head(name, count):
            return np.stack([w[p + f"self_attn.{name}.norms.{h}.weight"] for h in range(count)])
        q = _head_layer_norm(q, per_head("q_layernorm", H), eps)
        k = _head_layer_norm(k, per_head("k_layernorm", KV), eps)
    rc = dict(cfg, head_dim=hd, partial_rotary_factor=cfg.get("partial_rotary_factor", 0.25))
    inv, att = rope_init(rc, int(positions.max()) + 1)
    q = apply_rope(q, positions, inv, att).reshape(T, -1)
    k = apply_rope(k, positions, inv, att).reshape(T, -1)
    return {"q": q, "k": k, "v": v, "scores": scores(q, k, H, KV, hd, hd ** -0.5),
            "attention_factor": att}


def minicpm(cfg, w, x, positions, layer, prefix="model.", from_ids=False, dtype="F32",
            seq_len=None):
    """modeling_minicpm.py (transformers' MiniCPM, openbmb/MiniCPM4):
    MiniCPMScaledWordEmbedding is Gemma 3's scaled embedding with
    embed_scale = scale_emb (default 12): token ids give
    embed_tokens(ids) * scale_emb.to(weight dtype), the product in that
    dtype; inputs_embeds are used as given. Then Llama's layer (RMSNorm,
    q/k/v_proj, rotate_half) with MiniCPMRotaryEmbedding, whose longrope
    picks long_factor when the batch's largest position + 1 exceeds
    original_max_position_embeddings (seq_len: that batch-wide length)."""
    p = f"{prefix}layers.{layer}."
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    hd = cfg.get("head_dim") or cfg["hidden_size"] // H
    T = x.shape[0]
    h = x
    if layer == 0 and from_ids:
        s = float(_round_to(np.float32(cfg.get("scale_emb", 12)), dtype))
        h = _round_to((x * s).astype(np.float32), dtype)
    z = rms_norm(h, w[p + "input_layernorm.weight"], cfg.get("rms_norm_eps", 1e-6))
    q, k, v = _linear(z, w, p, "qkv", cfg.get("attention_bias", False))
    inv, att = rope_init(cfg, seq_len or int(positions.max()) + 1, partial=False)
    q = apply_rope(q.reshape(T, H, hd), positions, inv, att).reshape(T, -1)
    k = apply_rope(k.reshape(T, KV, hd), positions, inv, att).reshape(T, -1)
    return {"q": q, "k": k, "v": v, "scores": scores(q, k, H, KV, hd, hd ** -0.5),
            "attention_factor": att}


def exaone4_rotates(cfg, layer):
    """Exaone4Attention: rope when config.sliding_window is None or the
    layer is sliding (layer_types, else (L + 1) % sliding_window_pattern)."""
    if cfg.get("sliding_window", 4096) is None:
        return True
    types = cfg.get("layer_types") or [
        "sliding_attention" if (i + 1) % cfg.get("sliding_window_pattern", 4) else
        "full_attention" for i in range(cfg["num_hidden_layers"])]
    return types[layer] == "sliding_attention"


def exaone4(cfg, w, x, positions, layer, prefix="model."):
    """modeling_exaone4.py: Exaone4DecoderLayer is OLMo 2's (the hidden
    state goes to attention unnormalised); Exaone4Attention: bias-free
    q/k/v_proj, q_norm / k_norm (Exaone4RMSNorm over head_dim, rms_norm_eps)
    per head, then apply_rotary_pos_emb only where exaone4_rotates says
    (global NoPE layers in the hybrid models); head_dim from the config,
    else hidden / heads. Scores: head_dim ** -0.5."""
    p = f"{prefix}layers.{layer}."
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    hd = cfg.get("head_dim") or cfg["hidden_size"] // H
    eps = cfg.get("rms_norm_eps", 1e-5)
    T = x.shape[0]
    q, k, v = _linear(x, w, p, "qkv", False)
    q = rms_norm(q.reshape(T, H, hd), w[p + "self_attn.q_norm.weight"], eps)
    k = rms_norm(k.reshape(T, KV, hd), w[p + "self_attn.k_norm.weight"], eps)
    att = 1.0
    if exaone4_rotates(cfg, layer):
        inv, att = rope_init(dict(cfg, head_dim=hd), int(positions.max()) + 1, partial=False)
        q, k = apply_rope(q, positions, inv, att), apply_rope(k, positions, inv, att)
    q, k = q.reshape(T, -1), k.reshape(T, -1)
    return {"q": q, "k": k, "v": v, "scores": scores(q, k, H, KV, hd, hd ** -0.5),
            "attention_factor": att}
