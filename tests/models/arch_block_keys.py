"""Model keys inside a rope block, honoured where the architecture reads
them: Ministral 3 (ministral3) multiplies q after the rotation, on every
layer, by 1 + beta * log(1 + floor(position_id / orig)) with beta the
block's llama_4_scaling_beta and orig its original_max_position_embeddings
(modeling_ministral3.py, get_llama_4_attn_scale). Checked in the v5 flat
form (rope_parameters), the legacy form (rope_scaling + rope_theta) and
without a block (Ministral3Config's default yarn block), F32 and BF16:
layer 0 from token_ids, a later layer from embeddings, positions across
orig = 16384, a left-padded batch (the scale follows the position ids),
/info's q_scale, no warning about the block's model keys, and the configs
Hugging Face cannot run refused naming the key."""
import os

import numpy as np

import checkpoints as ck
import hf_ref
from harness import Server, run_failing, sanitizer_clean
from mask_models import _masked_close

RNG = np.random.default_rng(2609)
MINISTRAL_YARN = {"type": "yarn", "rope_theta": 1000000.0, "factor": 16.0,
                  "original_max_position_embeddings": 16384, "max_position_embeddings": 262144,
                  "beta_fast": 32.0, "beta_slow": 1.0, "mscale_all_dim": 1.0, "mscale": 1.0,
                  "llama_4_scaling_beta": 0.1}
# HF's get_llama_4_attn_scale at these positions (beta 0.1, orig 16384)
KNOWN = ((0, 1.0), (1, 1.0), (16383, 1.0), (16384, 1.0693), (40000, 1.1099), (262143, 1.2773))


def query_scale(positions, beta, orig):
    """1 + beta * log(1 + floor(p / orig)), float32 step by step as torch."""
    t = np.floor(positions.astype(np.float32) / np.float32(orig))
    return (np.float32(1) + np.float32(beta) * np.log(np.float32(1) + t)).astype(np.float64)


def ministral3_ckpt(seed=2691, dtype="F32", form="v5", layers=2, d=32, heads=4, kv_heads=2,
                    head_dim=16, **extra):
    """Ministral-3-3B's text config keys (Ministral3ForCausalLM: head_dim,
    yarn with llama_4_scaling_beta, max_position_embeddings 262144) over
    Llama's tensor names. form: "v5" (rope_parameters), "legacy"
    (rope_scaling and a top-level rope_theta) or "none" (no block)."""
    c = ck.llama(seed=seed, dtype=dtype, layers=layers, d=d, heads=heads,
                 kv_heads=kv_heads or 8, head_dim=head_dim or 128)
    cfg = dict(c.config, architectures=["Ministral3ForCausalLM"], model_type="ministral3",
               max_position_embeddings=262144, rope_theta=None, head_dim=head_dim,
               num_key_value_heads=kv_heads, attention_bias=None,
               transformers_version="5.0.0")
    if form == "v5":
        cfg["rope_parameters"] = dict(MINISTRAL_YARN)
    elif form == "legacy":
        cfg["rope_scaling"] = {k: v for k, v in MINISTRAL_YARN.items() if k != "rope_theta"}
        cfg["rope_theta"] = MINISTRAL_YARN["rope_theta"]
    cfg.update(extra)
    return ck.Checkpoint({k: v for k, v in cfg.items() if v is not None}, c.tensors)


def ministral3(cfg, w, x, positions, layer, prefix="model.", seq_len=None):
    """Llama's attention (Ministral3Config: head_dim 128 and 8 kv heads when
    absent; its default yarn block when none), then q times the query scale
    of the position ids; scores head_dim ** -0.5."""
    rc = dict(cfg)
    rc.setdefault("head_dim", 128)
    rc.setdefault("num_key_value_heads", 8)
    if not rc.get("rope_scaling") and rc.get("rope_parameters") is None:
        rc["rope_parameters"] = {k: v for k, v in MINISTRAL_YARN.items()
                                 if k != "max_position_embeddings"}
    block = rc.get("rope_scaling") or rc["rope_parameters"]
    out = hf_ref.llama(rc, w, x, positions, layer, prefix=prefix)
    H, KV, hd = rc["num_attention_heads"], rc["num_key_value_heads"], rc["head_dim"]
    q = out["q"] * query_scale(positions, block["llama_4_scaling_beta"],
                               block["original_max_position_embeddings"])[:, None]
    return {"q": q, "k": out["k"], "v": out["v"],
            "scores": hf_ref.scores(q, out["k"], H, KV, hd, hd ** -0.5)}


def _cases():
    v5 = ministral3_ckpt()
    legacy = ministral3_ckpt(seed=2692, dtype="BF16", form="legacy")
    none = ministral3_ckpt(seed=2693, form="none", heads=8, kv_heads=None, head_dim=None)
    beta = ministral3_ckpt(seed=2694, dtype="BF16",
                           rope_parameters=dict(MINISTRAL_YARN, llama_4_scaling_beta=0.5,
                                                original_max_position_embeddings=1000))
    return {"ministral3": (v5, 0), "ministral3_l1": (v5, 1),
            "ministral3_legacy_bf16": (legacy, 0), "ministral3_legacy_bf16_l1": (legacy, 1),
            "ministral3_default_block": (none, 0), "ministral3_beta_l1": (beta, 1)}


def _table(ckpt):
    return ckpt.weights()["model.embed_tokens.weight"]


def _requests(C, srv, name, ckpt, layer):
    d = ckpt.config["hidden_size"]
    x = RNG.standard_normal((6, d)).astype(np.float32)
    asks = [("embeddings", x, x.tolist(), np.array([p for p, _ in KNOWN])),
            ("embeddings", x, x.tolist(), np.arange(6) + 999)]
    if layer == 0:
        ids = RNG.integers(0, 50, 6)
        asks.append(("token_ids", _table(ckpt)[ids], ids.tolist(), np.array([0, 1, 2, 16384,
                                                                               16385, 50000])))
    for key, rows, value, pos in asks:
        what = f"{name} {key} at {pos.tolist()}"
        st, r = srv.request("/apply", {"model": name, key: value, "positions": pos.tolist(),
                                       "return": ["q", "k", "v", "scores"]})
        if C.check(st == 200, f"{what}: status {st} {r}"):
            want = ministral3(ckpt.config, ckpt.weights(), rows.astype(np.float64), pos, layer)
            for k in ("q", "k", "v", "scores"):
                C.close(f"{what}: {k}", np.array(r[k], np.float64), want[k])


def _padded(C, srv, name, ckpt, layer, S=8, ret=("q", "k", "v", "scores")):
    """Left padding: the position ids are cumsum(mask) - 1 (pads 1), and the
    scale follows them, not the slot (they differ across orig when S > orig
    in the padded row)."""
    mask = np.ones((2, S), np.int64)
    mask[0, :5] = 0
    pos = np.where(mask == 1, np.cumsum(mask, axis=1) - 1, 1)
    x = RNG.standard_normal((2, S, ckpt.config["hidden_size"])).astype(np.float32)
    st, r = srv.request("/apply", {"model": name, "embeddings": x.tolist(),
                                   "attention_mask": mask.tolist(), "return": list(ret)})
    if not C.check(st == 200, f"{name} padded batch of {S}: status {st} {r}"):
        return
    for b in range(2):
        want = ministral3(ckpt.config, ckpt.weights(), x[b].astype(np.float64), pos[b], layer)
        for k in ret:
            if k != "scores":
                C.close(f"{name} padded row {b} of {S}: {k}", np.array(r[k][b], np.float64),
                        want[k])
        if "scores" in ret:
            _masked_close(C, f"{name} padded row {b}: scores", r["scores"][b], want["scores"],
                          mask[b].astype(bool)[None, None, :])


def _info(C, models):
    for name, beta, orig in (("ministral3", 0.1, 16384), ("ministral3_legacy_bf16_l1", 0.1, 16384),
                             ("ministral3_default_block", 0.1, 16384),
                             ("ministral3_beta_l1", 0.5, 1000)):
        m = models[name]
        C.check(m.get("q_scale") == {"form": "mistral", "beta": beta,
                                     "original_max_position_embeddings": orig}
                and m["params"].get("scaling", {}).get("type") == "yarn",
                f"/info {name}: q_scale mistral beta {beta} orig {orig}: {m.get('q_scale')}")
    d = models["ministral3_default_block"]
    C.check(d["head_dim"] == 128 and d["kv_heads"] == 8 and d["params"]["base"] == 1e6
            and d["params"]["scaling"]["factor"] == 16,
            f"/info ministral3 without head_dim, kv heads or a block: 128, 8, the default "
            f"yarn block: {d}")


def _malformed(C, root):
    base = ministral3_ckpt(seed=2695, layers=1)
    bad = [
        ("beta a string", ["rope_parameters.llama_4_scaling_beta"],
         {"rope_parameters": dict(MINISTRAL_YARN, llama_4_scaling_beta="0.1")}),
        ("no beta", ["rope_parameters.llama_4_scaling_beta"],
         {"rope_parameters": {k: v for k, v in MINISTRAL_YARN.items()
                              if k != "llama_4_scaling_beta"}}),
        ("default rope without orig", ["original_max_position_embeddings", "'default'"],
         {"rope_parameters": {"rope_type": "default", "rope_theta": 1e6,
                              "llama_4_scaling_beta": 0.1}}),
    ]
    for label, want, over in bad:
        d = os.path.join(root, "badmin_" + label.replace(" ", "_"))
        cfg = {k: v for k, v in dict(base.config, **over).items() if v is not None}
        base.write(d, config=cfg)
        st, err, listened = run_failing(["--model", f"bad={d}"])
        C.check(st == 2 and not listened and all(w in err for w in want + ["config.json"]),
                f"malformed (ministral3: {label}): exit {st}, want {want} in: {err[:400]}")
        C.check(sanitizer_clean(err), f"malformed (ministral3: {label}): sanitizer clean")


def block_key_checks(root, C):
    # the reference's scale is HF's at the positions the research notes list
    got = query_scale(np.array([p for p, _ in KNOWN]), 0.1, 16384)
    C.check(np.allclose(got, [s for _, s in KNOWN], atol=5e-5),
            f"query scale at {[p for p, _ in KNOWN]}: {got.tolist()}")
    cases = _cases()
    args = []
    for name, (ckpt, layer) in cases.items():
        d = os.path.join(root, "bk_" + str(id(ckpt)))
        if not os.path.isdir(d):
            ckpt.write(d)
        args += ["--model", f"{name}={d}" + (f":{layer}" if layer else "")]
    with Server(args) as srv:
        for name, (ckpt, layer) in cases.items():
            _requests(C, srv, name, ckpt, layer)
        for name in ("ministral3", "ministral3_legacy_bf16_l1"):
            _padded(C, srv, name, *cases[name])
        # orig 1000: the padded row's last slots are past it, its position ids not
        _padded(C, srv, "ministral3_beta_l1", *cases["ministral3_beta_l1"], S=1004, ret=("q",))
        st, info = srv.request("/info")
        if C.check(st == 200, f"block keys /info: status {st}"):
            _info(C, {m["name"]: m for m in info["models"]})
        status = srv.stop()
        err = srv.stderr()
        C.check(status == 0 and sanitizer_clean(err), f"block keys server: exit {status}")
        C.check("llama_4_scaling_beta is not a key" not in err
                and "max_position_embeddings is not a key" not in err,
                f"ministral3's block keys are read, not warned about: {err[-1200:]}")
    _malformed(C, root)
