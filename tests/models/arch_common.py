"""What the architecture modules of 2026 (arch_wrappers.py, arch_families.py,
arch_hybrid.py) share: a Llama-style checkpoint builder with the real tensor
names, a numpy restatement of the decoder attention path up to Q, K and V
that each architecture's reference parametrises with its Hugging Face
modeling code's choices, and the runners (requests over HTTP, /info, the
malformed configs that stop start-up naming their key)."""
import os

import numpy as np

import checkpoints as ck
import hf_ref
from harness import Server, run_failing, sanitizer_clean


# ------------------------------------------------------------ checkpoints
def decoder_ckpt(cfg, seed, dtype, prefix, layers, d, heads, kv, hd, bias=False, qk=None,
                 input_norm=True, vocab=50, extra=(), attn_layers=None, rename=()):
    """cfg (None values dropped) and the tensors of a decoder with Llama's
    names: embed_tokens, per layer input_layernorm, self_attn.q/k/v/o_proj
    (biases when bias), the q/k norms (qk "vector": [head_dim]), the
    post-attention norm and the gated MLP; then norm and lm_head. extra:
    (name, shape) tensors a loader must skip (vision towers, experts).
    attn_layers: the layers that have attention (None: all), for hybrids;
    rename: (old, new) substitutions in the tensor names."""
    cfg = {k: v for k, v in cfg.items() if v is not None}
    g = ck.Gen(seed, dtype)
    g.add(prefix + "embed_tokens.weight", (vocab, d), 1.0)
    ck._decoder_layers(g, prefix, layers, d, heads, kv, hd, bias=bias, qk=qk,
                       input_norm=input_norm)
    if attn_layers is not None:  # the other layers hold a mixer instead
        g.out = [t for t in g.out if not any(t[0].startswith(f"{prefix}layers.{L}.")
                                             for L in range(layers) if L not in attn_layers)]
        for L in range(layers):
            if L not in attn_layers:
                g.add(f"{prefix}layers.{L}.mixer.in_proj.weight", (3 * d, d))
    for old, new in rename:  # the architecture's own tensor names
        g.out = [(n.replace(old, new), dt, a) for n, dt, a in g.out]
    g.add(prefix + "norm.weight", (d,), 0.1, 1.0)
    g.add("lm_head.weight", (vocab, d))
    for name, shape in extra:
        g.add(name, shape)
    return ck.Checkpoint(cfg, g.out)


def wrap(ckpt, outer, text_key=True, **outer_keys):
    """A wrapper config around ckpt's (the text model's) keys: text_config
    holds them (text_key), or they sit at the top level (Qwen2-VL as
    released); a vision_config and the wrapper's keys beside."""
    vision = {"model_type": outer + "_vision", "hidden_size": 16, "depth": 1}
    if text_key:
        cfg = {"architectures": ["ForConditionalGeneration"], "model_type": outer,
               "text_config": ckpt.config, "vision_config": vision}
    else:
        cfg = dict(ckpt.config, model_type=outer, vision_config=vision)
    cfg.update(outer_keys)
    return ck.Checkpoint(cfg, ckpt.tensors + [
        ("model.visual.blocks.0.attn.qkv.weight", "F32", np.ones((48, 16), np.float32)),
        ("model.visual.blocks.0.attn.qkv.bias", "F32", np.ones((48,), np.float32))])


# ------------------------------------------------------------- reference
def heads_of(cfg, kv_default=None, head_dim="head_dim", hd_default=None):
    """(heads, kv_heads, head_dim): num_key_value_heads (absent:
    kv_default, else heads); head_dim from its key (absent: hd_default,
    else hidden / heads) or, with head_dim None, always hidden / heads."""
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or kv_default or H
    hd = (cfg.get(head_dim) if head_dim else None) or hd_default or cfg["hidden_size"] // H
    return H, KV, hd


def rope_of(cfg, hd, theta, partial_key=None, partial_default=1.0, seq_len=1):
    """(inv_freq, attention_scaling) of the text model's rope: rope_theta at
    the top level or in its block (absent: theta); the rotated fraction
    partial_key (top level, else the block's; absent: partial_default),
    or the whole head when the architecture never reads one."""
    block = cfg.get("rope_parameters") or cfg.get("rope_scaling") or {}
    rc = dict(cfg, head_dim=hd)
    if "rope_theta" not in cfg and "rope_theta" not in block:
        rc["rope_theta"] = theta
    if partial_key:
        rc["partial_rotary_factor"] = cfg.get(partial_key, block.get("partial_rotary_factor",
                                                                     partial_default))
    return hf_ref.rope_init(rc, seq_len, partial=bool(partial_key))


def turn(a, positions, inv, att, layout):
    """a: [T][heads][hd]; the first 2 len(inv) channels turn: "half"
    (rotate_half), "pairs" (GLM / ERNIE: cos, sin repeat_interleave'd,
    adjacent pairs)."""
    r = 2 * len(inv)
    rot = (hf_ref.apply_rope(a[..., :r], positions, inv, att) if layout == "half" else
           hf_ref.apply_rope_interleaved(a[..., :r], positions, inv, att))
    return np.concatenate([rot, a[..., r:]], -1)


def attention(cfg, w, x, positions, layer, prefix, shape, eps, bias, qk_norm=None, rope=None,
              layout="half", input_norm=True, seq_len=None, k_scale=1.0, norm="input_layernorm",
              eps_key="rms_norm_eps", scale=None, in_scale=1.0):
    """The decoder attention path as Llama's modeling code writes it and each
    architecture parametrises it: input_layernorm (RMSNorm, rms_norm_eps
    default eps; none when not input_norm), q/k/v_proj (+ biases when
    bias), viewed per head; q_norm / k_norm (RMSNorm over head_dim) when
    qk_norm; the rotation (rope: rope_of's arguments, None: NoPE);
    k_scale multiplies k after the projection (Falcon-H1's key_multiplier).
    norm / eps_key: the pre-attention norm's tensor and eps key; in_scale
    multiplies the normed input (Falcon-H1's attention_in_multiplier). Scores:
    scale, default head_dim ** -0.5."""
    p = f"{prefix}layers.{layer}."
    H, KV, hd = shape
    T = x.shape[0]
    e = cfg.get(eps_key, eps)
    z = hf_ref.rms_norm(x, w[p + norm + ".weight"], e) if input_norm else x
    q, k, v = hf_ref._linear(z * in_scale, w, p, "qkv", bias)
    k = k * k_scale
    q, k = q.reshape(T, H, hd), k.reshape(T, KV, hd)
    if qk_norm:
        q = hf_ref.rms_norm(q, w[p + "self_attn." + qk_norm[0] + ".weight"], e)
        k = hf_ref.rms_norm(k, w[p + "self_attn." + qk_norm[1] + ".weight"], e)
    if rope is not None:
        inv, att = rope_of(cfg, hd, *rope, seq_len=seq_len or int(positions.max()) + 1)
        q, k = turn(q, positions, inv, att, layout), turn(k, positions, inv, att, layout)
    q, k = q.reshape(T, -1), k.reshape(T, -1)
    return {"q": q, "k": k, "v": v,
            "scores": hf_ref.scores(q, k, H, KV, hd, hd ** -0.5 if scale is None else scale)}


# --------------------------------------------------------------- runners
def _close(C, what, got, want):
    C.close(what, np.array(got, np.float64), want)


def requests(C, srv, rng, name, case):
    """Layer 0 from token_ids; every layer from embeddings at 0..5 and at
    positions far apart. case: (checkpoint, reference(cfg, w, x, pos,
    layer, prefix), layer, prefix, text config or None)."""
    ckpt, ref, layer, prefix, text = case[:5]
    cfg = text if text is not None else ckpt.config
    w = ckpt.weights()
    ret = ["q", "k", "v", "scores"]
    x = rng.standard_normal((6, cfg["hidden_size"])).astype(np.float32)
    asks = [("embeddings", x, x.tolist(), pos) for pos in
            (np.arange(6), np.array([2, 40, 300, 2000, 9000, 30000]))]
    if layer == 0:
        ids = rng.integers(0, 50, 6)
        table = w.get(prefix + "embed_tokens.weight", w.get(prefix + "embeddings.weight"))
        asks.append(("token_ids", table[ids], ids.tolist(),
                     np.arange(6)))
    for key, rows, value, pos in asks:
        what = f"{name} {key} at {pos[-1]}"
        st, r = srv.request("/apply", {"model": name, key: value, "positions": pos.tolist(),
                                       "return": ret})
        if C.check(st == 200, f"{what}: status {st} {r}"):
            kw = {"from_ids": True} if key == "token_ids" else {}
            want = ref(cfg, w, rows.astype(np.float64), pos, layer, prefix, **kw)
            for k in ret:
                _close(C, f"{what}: {k}", r[k], want[k])


def serve(C, root, tag, cases, rng, info_check, per_server=30):
    """Every case (a directory per checkpoint) on servers of at most
    per_server models (the server's limit is 32): the requests, then
    info_check(C, {name: /info model}) over all of them."""
    dirs, models, names = {}, {}, list(cases)
    for start in range(0, len(names), per_server):
        args = []
        for name in names[start:start + per_server]:
            case = cases[name]
            ckpt, layer, shards = case[0], case[2], case[5] if len(case) > 5 else 0
            d = next((dd for c, dd in dirs.values() if c is ckpt), None)
            if d is None:
                d = os.path.join(root, f"{tag}_{name}")
                ckpt.write(d, shards=shards)
                dirs[name] = (ckpt, d)
            args += ["--model", f"{name}={d}" + (f":{layer}" if layer else "")]
        with Server(args) as srv:
            for name in names[start:start + per_server]:
                requests(C, srv, rng, name, cases[name])
            st, info = srv.request("/info")
            if C.check(st == 200, f"{tag} /info: status {st}"):
                models.update({m["name"]: m for m in info["models"]})
            status = srv.stop()
            C.check(status == 0, f"{tag}: server exits 0 (got {status})")
            C.check(sanitizer_clean(srv.stderr()), f"{tag} stderr clean: {srv.stderr()[-800:]}")
    info_check(C, models)


def padded_batch(rng, name, S, pads, layer, table, hidden, causal=False):
    """An /apply body of two rows of S slots, the first left-padded by
    pads (attention_mask; causal when asked): token_ids from table at layer
    0, else random embeddings of width hidden. Returns (body, the rows'
    inputs, positions cumsum(mask) - 1 with pads at 1, mask)."""
    mask = np.ones((2, S), np.int64)
    mask[0, :pads] = 0
    pos = np.where(mask == 1, np.cumsum(mask, axis=1) - 1, 1)
    body = {"model": name, "attention_mask": mask.tolist(), "return": ["q", "k", "v", "scores"]}
    if causal:
        body["causal"] = True
    if layer == 0:
        ids = rng.integers(0, 50, (2, S))
        body["token_ids"] = ids.tolist()
        rows = [table[i].astype(np.float64) for i in ids]
    else:
        x = rng.standard_normal((2, S, hidden)).astype(np.float32)
        body["embeddings"] = x.tolist()
        rows = [x[b].astype(np.float64) for b in range(2)]
    return body, rows, pos, mask


def refused(C, root, tag, bad):
    """Each (label, checkpoint, words, config or None, layer) stops start-up
    with exit 2 and every word in the message."""
    for i, (label, ckpt, want, cfg, layer) in enumerate(bad):
        d = os.path.join(root, f"{tag}_bad{i}")
        ckpt.write(d, config=cfg)
        st, err, listened = run_failing(["--model", f"bad={d}" + (f":{layer}" if layer else "")])
        ok = st == 2 and not listened and all(w in err for w in want)
        C.check(ok, f"refused ({label}): exit {st}, want 2 and {want} in: {err.strip()[:500]}")
        C.check(sanitizer_clean(err), f"refused ({label}): sanitizer clean: {err[:600]}")
