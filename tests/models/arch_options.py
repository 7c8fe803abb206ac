"""Architecture options once refused, now modeled: MPT's
attn_config.clip_qkv (modeling_mpt.py, MptAttention.forward: the fused
Wqkv output clamped to [-clip, clip] before it is chunked into q, k, v).
Q, K, V, bias and scores over HTTP against a numpy port, layer 0 from
token_ids (F32) and layer 1 from embeddings (BF16), a left-padded batch
with attention_mask and causal, and what /info says (the malformed values
are test_models.py's malformed_checks)."""
import math
import os

import numpy as np

import checkpoints as ck
import hf_ref
from harness import Server, sanitizer_clean

RNG = np.random.default_rng(1818)
CLIP = 0.6


def mpt_clip(cfg, w, x, layer, prefix="transformer."):
    """MptBlock.forward then MptAttention.forward: z = norm_1(x) (LayerNorm
    without bias), qkv = Wqkv(z), qkv.clamp(-clip, clip) when clip_qkv is
    truthy, chunk(3); scores = q.k * softmax_scale + slope*(j - (T-1))."""
    d, H = cfg["d_model"], cfg["n_heads"]
    hd = d // H
    p = f"{prefix}blocks.{layer}."
    z = hf_ref.layer_norm(x, w[p + "norm_1.weight"], 0.0, cfg.get("layer_norm_epsilon", 1e-5))
    qkv = z @ w[p + "attn.Wqkv.weight"].T
    ac = cfg.get("attn_config") or {}
    clip = ac.get("clip_qkv")
    clipped = 0
    if clip:
        clipped = int((np.abs(qkv) > clip).sum())
        qkv = np.clip(qkv, -clip, clip)
    q, k, v = np.split(qkv, 3, axis=-1)
    scale = ac.get("softmax_scale") or 1 / math.sqrt(hd)
    T = x.shape[0]
    slopes = hf_ref.mpt_slopes(H)
    bias = (np.arange(T, dtype=np.float64) - (T - 1))[None, None, :] * slopes[:, None, None]
    bias = np.broadcast_to(bias, (H, T, T))
    return {"q": q, "k": k, "v": v, "bias": bias,
            "scores": hf_ref.scores(q, k, H, H, hd, scale, bias), "clipped": clipped}


def _cases():
    """name: (checkpoint, layer, prefix)."""
    f32 = ck.mpt(seed=1801, attn={"clip_qkv": CLIP})
    bf16 = ck.mpt(seed=1802, dtype="BF16", prefix="", heads=12,
                  attn={"clip_qkv": CLIP, "softmax_scale": 0.3})
    return {"mpt_clip": (f32, 0, "transformer."), "mpt_clip_bf16_l1": (bf16, 1, "")}


def close_kept(C, what, got, want, keep=None):
    """C.close over the entries keep selects (None: all)."""
    got = np.array(got, np.float64)
    if keep is not None:
        keep = np.broadcast_to(keep, want.shape)
        got, want = got[keep], want[keep]
    C.close(what, got, want)


def masked_batch(C, srv, name, ret, x, ref):
    """/apply of the two rows x with row 0 left-padded by two, attention_mask
    and causal; ref(row, mask_row) gives the reference dict of that row. q,
    k, v in full; bias and scores where the key is visible (the masked keys'
    entries carry the mask, checked by mask_models)."""
    T = x.shape[1]
    mask = np.array([[0, 0] + [1] * (T - 2), [1] * T])
    st, r = srv.request("/apply", {"model": name, "embeddings": x.tolist(),
                                   "attention_mask": mask.tolist(), "causal": True,
                                   "return": ret})
    if not C.check(st == 200, f"{name} attention_mask + causal: status {st} {r}"):
        return
    slots = np.arange(T)
    for row in range(2):
        want = ref(row, mask[row])
        for k in ("q", "k", "v"):
            close_kept(C, f"{name} attention_mask row {row}: {k}", r[k][row], want[k])
        keep = mask[row].astype(bool)[None, :] & (slots[None, :] <= slots[:, None])
        for k in ("bias", "scores"):
            close_kept(C, f"{name} attention_mask + causal row {row}: {k}", r[k][row], want[k],
                       keep[None])


def _requests(C, srv, name, case):
    ckpt, layer, prefix = case
    cfg, w = ckpt.config, ckpt.weights()
    ret = ["q", "k", "v", "bias", "scores"]
    T = 6
    if layer == 0:
        table = w[prefix + "wte.weight"]
        ids = RNG.integers(0, table.shape[0], T)
        st, r = srv.request("/apply", {"model": name, "token_ids": ids.tolist(), "return": ret})
        if C.check(st == 200, f"{name} token_ids: status {st} {r}"):
            want = mpt_clip(cfg, w, table[ids].astype(np.float64), layer, prefix)
            C.check(want["clipped"] > 0, f"{name}: the clamp bites ({want['clipped']} values)")
            for k in ret:
                close_kept(C, f"{name} token_ids: {k}", r[k], want[k])
    x = RNG.standard_normal((2, T, cfg["d_model"])).astype(np.float32)
    st, r = srv.request("/apply", {"model": name, "embeddings": x[0].tolist(), "return": ret})
    if C.check(st == 200, f"{name} embeddings: status {st} {r}"):
        want = mpt_clip(cfg, w, x[0].astype(np.float64), layer, prefix)
        C.check(want["clipped"] > 0, f"{name}: the clamp bites ({want['clipped']} values)")
        for k in ret:
            close_kept(C, f"{name} embeddings: {k}", r[k], want[k])
    masked_batch(C, srv, name, ret, x,
                 lambda row, _: mpt_clip(cfg, w, x[row].astype(np.float64), layer, prefix))


def option_checks(root, C):
    cases = _cases()
    args = []
    for name, (ckpt, layer, _) in cases.items():
        ckpt.config = {k: v for k, v in ckpt.config.items() if v is not None}
        d = os.path.join(root, "option_" + name)
        ckpt.write(d)
        args += ["--model", f"{name}={d}" + (f":{layer}" if layer else "")]
    with Server(args) as srv:
        for name, case in cases.items():
            _requests(C, srv, name, case)
        st, info = srv.request("/info")
        if C.check(st == 200, f"options /info: status {st}"):
            models = {m["name"]: m for m in info["models"]}
            for name in cases:
                C.check(models[name].get("clip_qkv") == CLIP,
                        f"/info {name}: clip_qkv {CLIP}: {models[name]}")
        status = srv.stop()
        C.check(status == 0, f"options: server exits 0 (got {status})")
        C.check(sanitizer_clean(srv.stderr()), f"server stderr clean: {srv.stderr()[-800:]}")
