"""Phi's qk_layernorm (refused before it was modeled): modeling_phi.py,
PhiAttention builds q_layernorm / k_layernorm as nn.LayerNorm(hidden_size //
num_attention_heads, eps=layer_norm_eps, elementwise_affine=True), one
weight and one bias every head shares, and applies them to q and k viewed
[batch][heads][T][head_dim] after the projections and before the partial
rotary embedding. Q, K, V and scores over HTTP against a numpy port, layer
0 from token_ids (F32), a later layer from embeddings (BF16, GQA), a
left-padded batch with attention_mask and causal, what /info says, and a
checkpoint without k_layernorm.bias stopping start-up naming it."""
import os

import numpy as np

import checkpoints as ck
import hf_ref
from harness import Server, run_failing, sanitizer_clean

RNG = np.random.default_rng(1819)
RET = ["q", "k", "v", "scores"]


def phi_qk_layernorm(cfg, w, x, positions, layer, prefix="model."):
    """PhiDecoderLayer.forward: z = input_layernorm(x) (LayerNorm with
    bias); PhiAttention.forward: biased q/k/v_proj, viewed per head; with
    qk_layernorm, q_layernorm(q) and k_layernorm(k) over head_dim; then the
    first int(head_dim * partial_rotary_factor) channels rotated
    (rotate_half), the rest passed; scores q.k / sqrt(head_dim)."""
    p = f"{prefix}layers.{layer}.self_attn."
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    hd = cfg["hidden_size"] // H
    eps = cfg.get("layer_norm_eps", 1e-5)
    ln = f"{prefix}layers.{layer}.input_layernorm."
    z = hf_ref.layer_norm(x, w[ln + "weight"], w[ln + "bias"], eps)
    q, k, v = (z @ w[p + f"{n}_proj.weight"].T + w[p + f"{n}_proj.bias"] for n in "qkv")
    T = x.shape[0]
    q, k = q.reshape(T, H, hd), k.reshape(T, KV, hd)
    if cfg.get("qk_layernorm", False):
        q = hf_ref.layer_norm(q, w[p + "q_layernorm.weight"], w[p + "q_layernorm.bias"], eps)
        k = hf_ref.layer_norm(k, w[p + "k_layernorm.weight"], w[p + "k_layernorm.bias"], eps)
    rc = dict(cfg, partial_rotary_factor=cfg.get("partial_rotary_factor", 0.5))
    inv, att = hf_ref.rope_init(rc, int(positions.max()) + 1)
    q = hf_ref.apply_rope(q, positions, inv, att).reshape(T, -1)
    k = hf_ref.apply_rope(k, positions, inv, att).reshape(T, -1)
    return {"q": q, "k": k, "v": v, "scores": hf_ref.scores(q, k, H, KV, hd, hd ** -0.5)}


def phi_ln_checkpoint(seed, dtype="F32", skip=(), **kw):
    """ck.phi with qk_layernorm true and each layer's q_layernorm /
    k_layernorm weight ([head_dim], around 1) and bias, less `skip`."""
    ckpt = ck.phi(seed=seed, dtype=dtype, qk_layernorm=True, **kw)
    hd = ckpt.config["hidden_size"] // ckpt.config["num_attention_heads"]
    g = ck.Gen(seed + 100, dtype)
    for L in range(ckpt.config["num_hidden_layers"]):
        for n in ("q", "k"):
            p = f"model.layers.{L}.self_attn.{n}_layernorm."
            g.add(p + "weight", (hd,), 0.3, 1.0)
            g.add(p + "bias", (hd,), 0.4)
    ckpt.tensors += [t for t in g.out if t[0] not in skip]
    return ckpt


def _cases():
    """name: (checkpoint, layer); hd 10 with 4 rotated, hd 8 with 4 rotated."""
    f32 = phi_ln_checkpoint(1901)
    bf16 = phi_ln_checkpoint(1902, dtype="BF16", layers=3, d=48, heads=6, kv_heads=2,
                             partial_rotary_factor=0.5, layer_norm_eps=1e-4)
    return {"phi_qkln": (f32, 0), "phi_qkln_bf16_l2": (bf16, 2)}


def _close(C, what, got, want, keep=None):
    got = np.array(got, np.float64)
    if keep is not None:
        keep = np.broadcast_to(keep, want.shape)
        got, want = got[keep], want[keep]
    C.close(what, got, want)


def _ref(ckpt, x, positions, layer):
    return phi_qk_layernorm(ckpt.config, ckpt.weights(), x.astype(np.float64), positions, layer)


def _requests(C, srv, name, ckpt, layer):
    cfg, w = ckpt.config, ckpt.weights()
    T = 6
    if layer == 0:
        table = w["model.embed_tokens.weight"]
        ids = RNG.integers(0, table.shape[0], T)
        st, r = srv.request("/apply", {"model": name, "token_ids": ids.tolist(), "return": RET})
        if C.check(st == 200, f"{name} token_ids: status {st} {r}"):
            want = _ref(ckpt, table[ids], np.arange(T), layer)
            for k in RET:
                _close(C, f"{name} token_ids: {k}", r[k], want[k])
    x = RNG.standard_normal((2, T, cfg["hidden_size"])).astype(np.float32)
    st, r = srv.request("/apply", {"model": name, "embeddings": x[0].tolist(), "return": RET})
    if C.check(st == 200, f"{name} embeddings: status {st} {r}"):
        want = _ref(ckpt, x[0], np.arange(T), layer)
        plain = phi_qk_layernorm(dict(cfg, qk_layernorm=False), w, x[0].astype(np.float64),
                                 np.arange(T), layer)
        C.check(not np.allclose(want["q"], plain["q"], atol=1e-2)
                and not np.allclose(want["k"], plain["k"], atol=1e-2),
                f"{name}: the q/k LayerNorm changes q and k")
        for k in RET:
            _close(C, f"{name} embeddings: {k}", r[k], want[k])
    mask = np.array([[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]])
    st, r = srv.request("/apply", {"model": name, "embeddings": x.tolist(),
                                   "attention_mask": mask.tolist(), "causal": True,
                                   "return": RET})
    if C.check(st == 200, f"{name} attention_mask + causal: status {st} {r}"):
        slots = np.arange(T)
        for row in range(2):
            # positions cumsum(mask) - 1, 1 where the mask is 0
            pos = np.where(mask[row] == 0, 1, np.cumsum(mask[row]) - 1)
            want = _ref(ckpt, x[row], pos, layer)
            for k in ("q", "k", "v"):
                _close(C, f"{name} attention_mask row {row}: {k}", r[k][row], want[k])
            keep = mask[row].astype(bool)[None, :] & (slots[None, :] <= slots[:, None])
            _close(C, f"{name} attention_mask + causal row {row}: scores", r["scores"][row],
                   want["scores"], keep[None])


def _info(C, models, cases):
    for name, (ckpt, _) in cases.items():
        eps = ckpt.config["layer_norm_eps"]
        m = models[name]
        C.check(m.get("qk_norm") == {"type": "layernorm", "over": "head", "weights": "shared",
                                     "bias": True, "eps": eps},
                f"/info {name}: qk_norm a shared LayerNorm with bias, eps {eps}: "
                f"{m.get('qk_norm')}")
        hd = m["head_dim"]
        ws = m.get("weights", {})
        C.check(all(ws.get(k) == [hd] for k in ("q_norm_weight", "k_norm_weight", "q_norm_bias",
                                                 "k_norm_bias")),
                f"/info {name}: q/k norm weights and biases [{hd}]: {ws}")


def _missing_bias(C, root):
    ckpt = phi_ln_checkpoint(1903, layers=1, skip=("model.layers.0.self_attn.k_layernorm.bias",))
    d = ckpt.write(os.path.join(root, "phi_qkln_no_k_bias"))
    st, err, listened = run_failing(["--model", f"bad={d}"])
    want = ["bad", "no tensor", "model.layers.0.self_attn.k_layernorm.bias"]
    C.check(st == 2 and not listened and all(s in err for s in want),
            f"phi qk_layernorm without k_layernorm.bias: exit {st}, want 2 and {want} in: "
            f"{err.strip()[:400]}")
    C.check(sanitizer_clean(err), f"phi missing bias: sanitizer clean: {err[:600]}")


def phi_checks(root, C):
    cases = _cases()
    args = []
    for name, (ckpt, layer) in cases.items():
        d = ckpt.write(os.path.join(root, "arch_" + name))
        args += ["--model", f"{name}={d}" + (f":{layer}" if layer else "")]
    with Server(args) as srv:
        for name, (ckpt, layer) in cases.items():
            _requests(C, srv, name, ckpt, layer)
        st, info = srv.request("/info")
        if C.check(st == 200, f"phi /info: status {st}"):
            _info(C, {m["name"]: m for m in info["models"]}, cases)
        status = srv.stop()
        C.check(status == 0, f"phi: server exits 0 (got {status})")
        C.check(sanitizer_clean(srv.stderr()), f"server stderr clean: {srv.stderr()[-800:]}")
    _missing_bias(C, root)
