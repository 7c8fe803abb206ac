"""Falcon's alibi (falcon-rw-1b: alibi true, multi_query false,
new_decoder_architecture false, parallel_attn false, bias true), refused
before it was modeled. modeling_falcon.py's default (sdpa) path: build_alibi_tensor
makes slopes.bfloat16() * key positions ((cumsum(mask) - 1) * mask) in
bfloat16 whatever the model's dtype, _update_causal_mask folds
alibi / sqrt(head_dim) into the mask and scaled_dot_product_attention adds it
once to q.k / sqrt(head_dim). Q, K, V, bias and scores over HTTP against a
numpy port that rounds where Hugging Face rounds: layer 0 from token_ids
(F32, positions past 256, where bfloat16 turns 257 into 256), layer 1 from
embeddings (BF16), a left-padded batch with attention_mask and causal, and
what /info says."""
import math
import os

import numpy as np

import checkpoints as ck
import hf_ref
from arch_options import close_kept, masked_batch
from harness import Server, sanitizer_clean

RNG = np.random.default_rng(1819)


def bf16(a):
    """Round float32 values to bfloat16 (round to nearest, ties to even:
    keep the top 16 bits of the float32), back as float32."""
    bits = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def slopes_f32(n):
    """build_alibi_tensor's slopes: torch.pow of a float32 base."""
    cp = 2 ** math.floor(math.log2(n))
    base = np.float32(2 ** (-(2 ** -(math.log2(cp) - 3))))
    s = [base ** np.float32(k) for k in range(1, 1 + cp)]
    if cp != n:
        extra = np.float32(2 ** (-(2 ** -(math.log2(2 * cp) - 3))))
        s += [extra ** np.float32(k) for k in range(1, 1 + 2 * min(cp, n - cp), 2)]
    return np.array(s, np.float32)


def alibi_bias(H, hd, mask, rounded=True):
    """[H][T][T]: alibi / sqrt(head_dim) as _update_causal_mask folds it
    (before the masked keys are filled). rounded=False: the same in float64
    without any bfloat16 rounding, to show that the rounding matters."""
    kpos = (np.cumsum(mask) - 1) * mask
    T = kpos.shape[0]
    if rounded:
        # bf16 * long promotes to bfloat16: both operands, then the product
        alibi = bf16(bf16(slopes_f32(H))[:, None] * bf16(kpos.astype(np.float32))[None, :])
        bias = alibi / np.float32(math.sqrt(hd))  # a float32 division
    else:
        bias = hf_ref.bloom_slopes(H)[:, None] * kpos[None, :] / math.sqrt(hd)
    return np.broadcast_to(bias.astype(np.float64)[:, None, :], (H, T, T))


def falcon_alibi(cfg, w, x, layer, mask=None, prefix="transformer."):
    """FalconDecoderLayer.forward then FalconAttention.forward for these
    configs: z = input_layernorm(x), fused = query_key_value(z) (+ bias),
    viewed [heads][3][head_dim] (or multi-query [heads + 2][head_dim]), no
    rotation (alibi); scores =
    q.k / sqrt(head_dim) + alibi / sqrt(head_dim)."""
    d, H = cfg["hidden_size"], cfg["num_attention_heads"]
    hd = d // H
    p = f"{prefix}h.{layer}."
    z = hf_ref.layer_norm(x, w[p + "input_layernorm.weight"], w[p + "input_layernorm.bias"],
                          cfg["layer_norm_epsilon"])
    fused = z @ w[p + "self_attention.query_key_value.weight"].T
    if cfg["bias"]:
        fused = fused + w[p + "self_attention.query_key_value.bias"]
    T = x.shape[0]
    KV = 1 if cfg["multi_query"] else H
    if KV == 1:  # _split_heads: [heads + 2][head_dim], one k and one v
        fused = fused.reshape(T, H + 2, hd)
        q, k, v = fused[:, :H].reshape(T, H * hd), fused[:, H], fused[:, H + 1]
    else:  # [heads][3][head_dim]
        fused = fused.reshape(T, H, 3, hd)
        q, k, v = (fused[:, :, j, :].reshape(T, H * hd) for j in range(3))
    mask = np.ones(T, np.int64) if mask is None else np.asarray(mask, np.int64)
    bias = alibi_bias(H, hd, mask)
    return {"q": q, "k": k, "v": v, "bias": bias,
            "scores": hf_ref.scores(q, k, H, KV, hd, hd ** -0.5, bias)}


def _ckpt(seed, dtype, heads, prefix):
    return ck.falcon(seed=seed, dtype=dtype, prefix=prefix, heads=heads, alibi=True,
                     multi_query=False, new_arch=False, parallel_attn=False, bias=True)


def _cases():
    """name: (checkpoint, layer, prefix). 12 heads: slopes 2^-0.5... that
    bfloat16 rounds; 6 heads: head_dim 8, a divisor sqrt(8) not exact.
    falcon_alibi_mq: the checkpoint whose start-up refusal test_models.py
    asserted before it was modeled (falcon-7b's flags with alibi true: multi-query,
    parallel attention, no biases), now served."""
    return {"falcon_alibi": (_ckpt(1803, "F32", 12, "transformer."), 0, "transformer."),
            "falcon_alibi_bf16_l1": (_ckpt(1804, "BF16", 6, ""), 1, ""),
            "falcon_alibi_mq": (ck.falcon(layers=1, alibi=True), 0, "transformer.")}


def _long_ids(C, srv, name, case):
    """Layer 0 from 264 token ids: key positions 257.. round to bfloat16."""
    ckpt, layer, prefix = case
    cfg, w = ckpt.config, ckpt.weights()
    ret = ["q", "k", "v", "bias", "scores"]
    table = w[prefix + "word_embeddings.weight"]
    T = 264
    ids = RNG.integers(0, table.shape[0], T)
    st, r = srv.request("/apply", {"model": name, "token_ids": ids.tolist(), "return": ret})
    if not C.check(st == 200, f"{name} token_ids: status {st} {str(r)[:300]}"):
        return
    want = falcon_alibi(cfg, w, table[ids].astype(np.float64), layer, prefix=prefix)
    H, hd = cfg["num_attention_heads"], cfg["hidden_size"] // cfg["num_attention_heads"]
    plain = alibi_bias(H, hd, np.ones(T, np.int64), rounded=False)
    gap = np.abs(plain - want["bias"])[:, 0, 257:].max()
    C.check(gap > 1e-2, f"{name}: bfloat16 rounding past position 256 matters ({gap:.3g})")
    for k in ret:
        close_kept(C, f"{name} token_ids (T {T}): {k}", r[k], want[k])


def _requests(C, srv, name, case):
    ckpt, layer, prefix = case
    cfg, w = ckpt.config, ckpt.weights()
    ret = ["q", "k", "v", "bias", "scores"]
    T = 6
    x = RNG.standard_normal((2, T, cfg["hidden_size"])).astype(np.float32)
    st, r = srv.request("/apply", {"model": name, "embeddings": x[0].tolist(), "return": ret})
    if C.check(st == 200, f"{name} embeddings: status {st} {r}"):
        want = falcon_alibi(cfg, w, x[0].astype(np.float64), layer, prefix=prefix)
        for k in ret:
            close_kept(C, f"{name} embeddings: {k}", r[k], want[k])
    masked_batch(C, srv, name, ret, x,
                 lambda row, m: falcon_alibi(cfg, w, x[row].astype(np.float64), layer, m, prefix))


def _info(C, models, name, cfg):
    m = models[name]
    hd = cfg["hidden_size"] // cfg["num_attention_heads"]
    params = m.get("params") or {}
    C.check(m.get("scheme") == "alibi" and params.get("form") == "bloom" and
            params.get("bf16") is True and
            abs(params.get("bias_divisor", 0) - math.sqrt(hd)) < 1e-12 and
            (m.get("positions") or {}).get("rule") == "bloom",
            f"/info {name}: alibi, bloom form, bf16, bias_divisor sqrt({hd}): {m}")


def falcon_alibi_checks(root, C):
    cases = _cases()
    args = []
    for name, (ckpt, layer, _) in cases.items():
        d = os.path.join(root, "falcon_alibi_" + name)
        ckpt.write(d)
        args += ["--model", f"{name}={d}" + (f":{layer}" if layer else "")]
    with Server(args) as srv:
        _long_ids(C, srv, "falcon_alibi", cases["falcon_alibi"])
        for name, case in cases.items():
            _requests(C, srv, name, case)
        st, info = srv.request("/info")
        if C.check(st == 200, f"falcon alibi /info: status {st}"):
            models = {m["name"]: m for m in info["models"]}
            for name, (ckpt, _, _) in cases.items():
                _info(C, models, name, ckpt.config)
        status = srv.stop()
        C.check(status == 0, f"falcon alibi: server exits 0 (got {status})")
        C.check(sanitizer_clean(srv.stderr()), f"server stderr clean: {srv.stderr()[-800:]}")
