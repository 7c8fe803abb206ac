"""Mistral 4 (model_type mistral4, Mistral Small 4): DeepSeek-V3's
multi-head latent attention (modeling_mistral4.py, Mistral4Attention) with
Ministral 3's query scale by position on every layer (q times 1 + beta *
log(1 + floor(position_id / orig)), beta the block's llama_4_scaling_beta,
orig its original_max_position_embeddings, get_llama_4_attn_scale).

Mistral4Config differs from DeepseekV3Config in its defaults (q_lora_rank
1024, kv_lora_rank 256, qk_nope_head_dim 64, v_head_dim 128, the yarn
block of __post_init__ with factor 128, orig 8192 and beta 0.1) and in its
rotary embedding: the rope is built over int(head_dim *
partial_rotary_factor) channels, head_dim being qk_head_dim and the factor
qk_rope_head_dim / qk_head_dim unless the block says otherwise; the default
rope type is built over the whole qk_head_dim, which Hugging Face's
rotation of the qk_rope_head_dim channels fails on.

Checked: the v5 flat block (partial_rotary_factor given), the legacy
rope_scaling, no block at all (the config class's), rope_interleave false,
q_proj (q_lora_rank null), F32 / BF16 / F16, sharded, the mistral3 wrapper
with a mistral4 text_config, layer 0 from token_ids, a later layer from
embeddings, positions across orig, a left-padded batch, /info, and the
configs Hugging Face cannot run refused naming the key."""
import os

import numpy as np

import checkpoints as ck
import hf_ref
from arch_block_keys import query_scale
from harness import Server, run_failing, sanitizer_clean
from mask_models import _masked_close

RNG = np.random.default_rng(2610)
# a short original context: yarn's ramp and the query scale both show
YARN = {"type": "yarn", "rope_theta": 10000.0, "factor": 128.0,
        "original_max_position_embeddings": 16, "max_position_embeddings": 1048576,
        "beta_fast": 32.0, "beta_slow": 1.0, "mscale_all_dim": 1.0, "mscale": 1.0,
        "llama_4_scaling_beta": 0.1}
# Mistral4Config.__post_init__'s block (its partial_rotary_factor is
# qk_rope_head_dim / head_dim, the MLA rope width)
DEFAULT_BLOCK = {"type": "yarn", "rope_theta": 10000.0, "factor": 128.0,
                 "original_max_position_embeddings": 8192, "beta_fast": 32.0, "beta_slow": 1.0,
                 "mscale_all_dim": 1.0, "mscale": 1.0, "llama_4_scaling_beta": 0.1}


def mistral4_ckpt(seed=2611, dtype="F32", form="v5", prefix="model.", layers=2, q_lora_rank=12,
                  **extra):
    """Mistral-Small-4's text config keys (Mistral4ForCausalLM) over
    DeepSeek's tensor names, small: 4 heads, q_lora_rank 12, kv_lora_rank
    10, qk_nope 6, qk_rope 4, v 5. form: "v5" (rope_parameters with
    partial_rotary_factor 4/10), "legacy" (rope_scaling, top-level
    rope_theta) or "none" (no block)."""
    c = ck.deepseek(seed=seed, dtype=dtype, prefix=prefix, model_type="deepseek_v3", layers=layers,
                    q_lora_rank=q_lora_rank)
    cfg = dict(c.config, architectures=["Mistral4ForCausalLM"], model_type="mistral4",
               rope_scaling=None, rope_theta=None, max_position_embeddings=1048576,
               transformers_version="5.4.0")
    if form == "v5":
        cfg["rope_parameters"] = dict(YARN, partial_rotary_factor=0.4)
    elif form == "legacy":
        cfg["rope_scaling"] = {k: v for k, v in YARN.items() if k != "rope_theta"}
        cfg["rope_theta"] = YARN["rope_theta"]
    cfg.update(extra)
    # q_lora_rank null is q_proj; the other None values are keys left out
    return ck.Checkpoint({k: v for k, v in cfg.items() if v is not None or k == "q_lora_rank"},
                         c.tensors)


def mistral4(cfg, w, x, positions, layer, prefix="model."):
    """Mistral4Attention.forward: DeepseekV3Attention's q, k, v (the
    restatement in hf_ref.deepseek) with the block (rope_parameters, else
    rope_scaling, else the config class's) over qk_rope_head_dim, the
    score scale yarn_apply_mscale's, then q (pass and rope parts) times
    the query scale of the position ids."""
    block = cfg.get("rope_parameters") or cfg.get("rope_scaling") or DEFAULT_BLOCK
    scaling = {k: v for k, v in block.items()
               if k not in ("rope_theta", "llama_4_scaling_beta", "partial_rotary_factor",
                            "max_position_embeddings")}
    v3 = dict(cfg, model_type="deepseek_v3", rope_scaling=scaling,
              rope_theta=block.get("rope_theta", cfg.get("rope_theta", 10000.0)))
    v3.pop("rope_parameters", None)
    out = hf_ref.deepseek(v3, w, x, positions, layer, prefix=prefix)
    H, qkh = cfg["num_attention_heads"], cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"]
    q = out["q"] * query_scale(positions, block["llama_4_scaling_beta"],
                               block["original_max_position_embeddings"])[:, None]
    return {"q": q, "k": out["k"], "v": out["v"],
            "scores": hf_ref.scores(q, out["k"], H, H, qkh, out["score_scale"]),
            "score_scale": out["score_scale"]}


def _wrapper(seed):
    """Mistral Small 4 as released: a mistral3 wrapper whose text_config is
    mistral4, tensors under language_model.model."""
    t = mistral4_ckpt(seed=seed, dtype="BF16", prefix="language_model.model.")
    cfg = {"architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3",
           "text_config": t.config, "vision_config": {"model_type": "pixtral"},
           "image_token_index": 10}
    return ck.Checkpoint(cfg, t.tensors), t.config


def _cases():
    """name: (checkpoint, layer, shards, prefix, text config or None)."""
    v5 = mistral4_ckpt()
    legacy = mistral4_ckpt(seed=2612, dtype="BF16", form="legacy", rope_interleave=False)
    none = mistral4_ckpt(seed=2613, dtype="F16", form="none", q_lora_rank=None, prefix="")
    wrapped, text = _wrapper(2614)
    return {"mistral4": (v5, 0, 0, "model.", None), "mistral4_l1": (v5, 1, 0, "model.", None),
            "mistral4_legacy_bf16": (legacy, 0, 2, "model.", None),
            "mistral4_legacy_bf16_l1": (legacy, 1, 2, "model.", None),
            "mistral4_default_block": (none, 0, 0, "", None),
            "mistral4_wrapped": (wrapped, 0, 0, "language_model.model.", text)}


def _requests(C, srv, name, case):
    ckpt, layer, _, prefix, text = case
    cfg = text or ckpt.config
    w = ckpt.weights()
    x = RNG.standard_normal((6, cfg["hidden_size"])).astype(np.float32)
    asks = [("embeddings", x, x.tolist(), np.array([0, 3, 15, 16, 40, 9000])),
            ("embeddings", x, x.tolist(), np.arange(6) + 8190)]
    if layer == 0:
        ids = RNG.integers(0, 50, 6)
        table = w[prefix + "embed_tokens.weight"]
        asks.append(("token_ids", table[ids], ids.tolist(), np.array([0, 1, 2, 16, 17, 50000])))
    for key, rows, value, pos in asks:
        what = f"{name} {key} at {pos.tolist()}"
        st, r = srv.request("/apply", {"model": name, key: value, "positions": pos.tolist(),
                                       "return": ["q", "k", "v", "scores"]})
        if C.check(st == 200, f"{what}: status {st} {r}"):
            want = mistral4(cfg, w, rows.astype(np.float64), pos, layer, prefix=prefix)
            for k in ("q", "k", "v", "scores"):
                C.close(f"{what}: {k}", np.array(r[k], np.float64), want[k])


def _padded(C, srv, name, case, S=20):
    """Left padding: position ids cumsum(mask) - 1 (pads 1); the query
    scale follows them (the padded row's last slots pass orig 16, its
    position ids do not)."""
    ckpt, layer, _, prefix, _ = case
    mask = np.ones((2, S), np.int64)
    mask[0, :5] = 0
    pos = np.where(mask == 1, np.cumsum(mask, axis=1) - 1, 1)
    x = RNG.standard_normal((2, S, ckpt.config["hidden_size"])).astype(np.float32)
    ret = ["q", "k", "v", "scores"]
    st, r = srv.request("/apply", {"model": name, "embeddings": x.tolist(),
                                   "attention_mask": mask.tolist(), "causal": True,
                                   "return": ret})
    if not C.check(st == 200, f"{name} padded batch: status {st} {r}"):
        return
    causal = np.tril(np.ones((S, S), bool))
    for b in range(2):
        want = mistral4(ckpt.config, ckpt.weights(), x[b].astype(np.float64), pos[b], layer,
                        prefix=prefix)
        for k in ("q", "k", "v"):
            C.close(f"{name} padded row {b}: {k}", np.array(r[k][b], np.float64), want[k])
        _masked_close(C, f"{name} padded row {b}: scores", r["scores"][b], want["scores"],
                      (mask[b].astype(bool)[None, :] & causal)[None])


def _info(C, models, cases):
    for name, orig in (("mistral4", 16), ("mistral4_legacy_bf16_l1", 16),
                       ("mistral4_default_block", 8192), ("mistral4_wrapped", 16)):
        m = models[name]
        ckpt, _, _, prefix, text = cases[name]
        want = mistral4(text or ckpt.config, ckpt.weights(), np.zeros((1, 32)), np.arange(1), 0,
                        prefix=prefix)["score_scale"]
        C.check(m.get("q_scale") == {"form": "mistral", "beta": 0.1,
                                     "original_max_position_embeddings": orig}
                and m["params"].get("scaling", {}).get("type") == "yarn"
                and "partial_rotary_factor" not in m["params"]
                and abs(m["params"].get("score_scale", 0) - want) <= 1e-15
                and m.get("mla", {}).get("qk_rope_head_dim") == 4,
                f"/info {name}: q_scale orig {orig}, yarn over the rope part, score scale "
                f"{want}: {m}")
    d = models["mistral4_default_block"]
    C.check(d["params"]["scaling"]["factor"] == 128 and d["mla"]["q_lora_rank"] == 0,
            f"/info mistral4 without a block: Mistral4Config's yarn (factor 128), q_proj: {d}")
    w = models["mistral4_wrapped"]
    C.check(w.get("text_config") is True and w["architecture"] == "mistral4",
            f"/info mistral4 in a mistral3 wrapper: text_config, architecture: {w}")


def _defaults(C, root):
    """Mistral4Config's defaults for the MLA sizes (kv_lora_rank 256, not
    DeepSeek's 512; qk_nope 64; v 128; q_lora_rank 1024) from tensors of
    those sizes and no size keys."""
    c = ck.deepseek(seed=2615, layers=1, d=32, heads=2, q_lora_rank=1024, kv_lora_rank=256,
                    nope=64, rope=64, v_dim=128)
    cfg = {k: v for k, v in c.config.items()
           if k not in ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                        "v_head_dim", "rope_scaling", "rope_theta")}
    cfg.update(model_type="mistral4", max_position_embeddings=1048576)
    d = os.path.join(root, "m4_defaults")
    ck.Checkpoint(cfg, c.tensors).write(d)
    with Server(["--model", f"m={d}"]) as srv:
        x = RNG.standard_normal((3, 32)).astype(np.float32)
        pos = np.array([0, 8191, 8192])
        st, r = srv.request("/apply", {"model": "m", "embeddings": x.tolist(),
                                       "positions": pos.tolist(), "return": ["q", "k", "v"]})
        full = dict(cfg, q_lora_rank=1024, kv_lora_rank=256, qk_nope_head_dim=64,
                    qk_rope_head_dim=64, v_head_dim=128)
        if C.check(st == 200, f"mistral4 defaults: status {st} {r}"):
            want = mistral4(full, c.weights(), x.astype(np.float64), pos, 0)
            for k in ("q", "k", "v"):
                C.close(f"mistral4 defaults: {k}", np.array(r[k], np.float64), want[k])
        srv.stop()


def _malformed(C, root):
    base = mistral4_ckpt(seed=2616, layers=1)
    bad = [
        ("no beta", ["rope_parameters.llama_4_scaling_beta"],
         {"rope_parameters": {k: v for k, v in YARN.items() if k != "llama_4_scaling_beta"}}),
        # Mistral4RotaryEmbedding builds a default rope over qk_head_dim (10 channels)
        ("default rope", ["rope type 'default'", "qk_rope_head_dim = 4"],
         {"rope_parameters": {"rope_type": "default", "rope_theta": 1e4,
                              "llama_4_scaling_beta": 0.1}}),
        ("partial factor off the rope width", ["partial_rotary_factor", "qk_rope_head_dim 4"],
         {"rope_parameters": dict(YARN, partial_rotary_factor=0.5)}),
        ("kv heads differ", ["num_key_value_heads"], {"num_key_value_heads": 2}),
    ]
    for label, want, over in bad:
        d = os.path.join(root, "bad_mistral4_" + label.replace(" ", "_"))
        base.write(d, config={k: v for k, v in dict(base.config, **over).items() if v is not None})
        st, err, listened = run_failing(["--model", f"bad={d}"])
        C.check(st == 2 and not listened and all(w in err for w in want + ["config.json"]),
                f"malformed (mistral4: {label}): exit {st}, want {want} in: {err[:400]}")
        C.check(sanitizer_clean(err), f"malformed (mistral4: {label}): sanitizer clean")


def mistral4_checks(root, C):
    cases = _cases()
    args = []
    for name, (ckpt, layer, shards, _, _) in cases.items():
        d = os.path.join(root, f"m4_{id(ckpt)}")
        if not os.path.isdir(d):
            ckpt.write(d, shards=shards)
        args += ["--model", f"{name}={d}" + (f":{layer}" if layer else "")]
    with Server(args) as srv:
        for name, case in cases.items():
            _requests(C, srv, name, case)
        for name in ("mistral4", "mistral4_legacy_bf16_l1"):
            _padded(C, srv, name, cases[name])
        st, info = srv.request("/info")
        if C.check(st == 200, f"mistral4 /info: status {st}"):
            _info(C, {m["name"]: m for m in info["models"]}, cases)
        status = srv.stop()
        C.check(status == 0 and sanitizer_clean(srv.stderr()), f"mistral4 server: exit {status}")
        C.check("is not a key" not in srv.stderr(),
                f"mistral4's block keys are read, not warned about: {srv.stderr()[-1200:]}")
    _defaults(C, root)
    _malformed(C, root)
