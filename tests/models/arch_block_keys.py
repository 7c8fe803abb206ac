"""Model keys inside a rope block, honoured where the architecture reads
them.

HunYuan (hunyuan_v1_dense, hunyuan_v1_moe): a dynamic block's alpha is
NTK-alpha, base = theta * alpha^(D/(D-2)) while the largest position + 1 is
within max_position_embeddings, the plain dynamic formula past it (Hugging
Face's dynamic_rope_update), and query_layernorm / key_layernorm (RMSNorm
with weights) come after the rotation: legacy and v5 forms, F32 and BF16,
positions within and past the context, a padded batch, /info, refusals.

Ministral 3 (ministral3) multiplies q after the rotation, on every
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


def _check_asks(C, srv, name, asks, ref, ckpt, layer):
    """/apply for each (key, rows, value, positions) against ref."""
    for key, rows, value, pos in asks:
        what = f"{name} {key} at {pos.tolist()}"
        st, r = srv.request("/apply", {"model": name, key: value, "positions": pos.tolist(),
                                       "return": ["q", "k", "v", "scores"]})
        if C.check(st == 200, f"{what}: status {st} {r}"):
            want = ref(ckpt.config, ckpt.weights(), rows.astype(np.float64), pos, layer)
            for k in ("q", "k", "v", "scores"):
                C.close(f"{what}: {k}", np.array(r[k], np.float64), want[k])


def _refused(C, root, arch, base, bad):
    """Each (label, wanted text, config override) stops start-up (exit 2,
    before listening) with a message holding the wanted text."""
    for label, want, over in bad:
        d = os.path.join(root, f"bad_{arch}_" + label.replace(" ", "_"))
        cfg = {k: v for k, v in dict(base.config, **over).items() if v is not None}
        base.write(d, config=cfg)
        st, err, listened = run_failing(["--model", f"bad={d}"])
        C.check(st == 2 and not listened and all(w in err for w in want + ["config.json"]),
                f"malformed ({arch}: {label}): exit {st}, want {want} in: {err[:400]}")
        C.check(sanitizer_clean(err), f"malformed ({arch}: {label}): sanitizer clean")


def _serve(root, cases, tag):
    """One server for every case (a checkpoint written once)."""
    args = []
    for name, (ckpt, layer) in cases.items():
        d = os.path.join(root, f"{tag}_{id(ckpt)}")
        if not os.path.isdir(d):
            ckpt.write(d)
        args += ["--model", f"{name}={d}" + (f":{layer}" if layer else "")]
    return Server(args)


def _requests(C, srv, name, ckpt, layer):
    d = ckpt.config["hidden_size"]
    x = RNG.standard_normal((6, d)).astype(np.float32)
    asks = [("embeddings", x, x.tolist(), np.array([p for p, _ in KNOWN])),
            ("embeddings", x, x.tolist(), np.arange(6) + 999)]
    if layer == 0:
        ids = RNG.integers(0, 50, 6)
        asks.append(("token_ids", _table(ckpt)[ids], ids.tolist(), np.array([0, 1, 2, 16384,
                                                                               16385, 50000])))
    _check_asks(C, srv, name, asks, ministral3, ckpt, layer)


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
    _refused(C, root, "ministral3", base, bad)


# ------------------------------------------------------------------ HunYuan
HUNYUAN_DYNAMIC = {"alpha": 1000.0, "beta_fast": 32, "beta_slow": 1, "factor": 1.0,
                   "mscale": 1.0, "mscale_all_dim": 1.0, "type": "dynamic"}


def hunyuan_ckpt(seed=2696, dtype="F32", model_type="hunyuan_v1_dense", form="legacy", layers=2,
                 **extra):
    """Hunyuan-7B-Instruct's config keys (HunYuanDenseV1ForCausalLM: head_dim,
    rope_scaling {"type": "dynamic", "alpha": 1000, "factor": 1, ...}) over
    Llama's tensor names plus self_attn.query_layernorm / key_layernorm
    ([head_dim]); max_position_embeddings 24 so that positions pass it."""
    c = ck.llama(seed=seed, dtype=dtype, layers=layers, head_dim=16)
    cfg = dict(c.config, architectures=["HunYuanDenseV1ForCausalLM"], model_type=model_type,
               max_position_embeddings=24, rope_theta=10000.0, attention_bias=False,
               use_qk_norm=True, transformers_version="4.56.0")
    if form == "legacy":
        cfg["rope_scaling"] = dict(HUNYUAN_DYNAMIC)
    else:
        cfg["rope_parameters"] = dict(HUNYUAN_DYNAMIC, rope_theta=cfg.pop("rope_theta"))
    cfg.update(extra)
    g = ck.Gen(seed + 100, dtype)
    for L in range(layers):
        for n in ("query_layernorm", "key_layernorm"):
            g.add(f"model.layers.{L}.self_attn.{n}.weight", (16,), 0.2, 1.0)
    return ck.Checkpoint({k: v for k, v in cfg.items() if v is not None}, c.tensors + g.out)


def hunyuan(cfg, w, x, positions, layer, prefix="model.", seq_len=None):
    """HunYuanDenseV1Attention.forward: rms input_layernorm, q/k/v_proj, the
    rotation, then query_layernorm / key_layernorm per head (RMSNorm with
    weight, rms_norm_eps); the rotary embedding: alpha's base within
    max_position_embeddings, _compute_dynamic_ntk_parameters past it."""
    p = f"{prefix}layers.{layer}."
    H, KV, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps = cfg.get("rms_norm_eps", 1e-5)
    block = cfg.get("rope_scaling") or cfg["rope_parameters"]
    theta = block.get("rope_theta", cfg.get("rope_theta", 10000.0))
    mpe = cfg["max_position_embeddings"]
    n = seq_len or int(positions.max()) + 1
    if n <= mpe:
        base = theta * block["alpha"] ** (hd / (hd - 2))
    else:
        f = block["factor"]
        base = theta * ((f * n / mpe) - (f - 1)) ** (hd / (hd - 2))
    inv = 1.0 / base ** (np.arange(0, hd, 2, dtype=np.float64) / hd)
    z = hf_ref.rms_norm(x, w[p + "input_layernorm.weight"], eps)
    q, k, v = (z @ w[p + f"self_attn.{nm}_proj.weight"].T for nm in "qkv")
    T = x.shape[0]
    q = hf_ref.apply_rope(q.reshape(T, H, hd), positions, inv, 1.0)
    k = hf_ref.apply_rope(k.reshape(T, KV, hd), positions, inv, 1.0)
    q = hf_ref.rms_norm(q, w[p + "self_attn.query_layernorm.weight"], eps).reshape(T, -1)
    k = hf_ref.rms_norm(k, w[p + "self_attn.key_layernorm.weight"], eps).reshape(T, -1)
    return {"q": q, "k": k, "v": v, "scores": hf_ref.scores(q, k, H, KV, hd, hd ** -0.5)}


def _hunyuan_cases():
    dense = hunyuan_ckpt()
    moe = hunyuan_ckpt(seed=2697, dtype="BF16", model_type="hunyuan_v1_moe", form="v5")
    moe.config["rope_parameters"].update(alpha=50.0, factor=2.0)
    return {"hunyuan": (dense, 0), "hunyuan_l1": (dense, 1), "hunyuan_moe_bf16": (moe, 0),
            "hunyuan_moe_bf16_l1": (moe, 1)}


def _hunyuan_requests(C, srv, name, ckpt, layer):
    """Within the context (alpha), at its end (24 = max_position_embeddings:
    still alpha), and past it (plain dynamic)."""
    x = RNG.standard_normal((6, ckpt.config["hidden_size"])).astype(np.float32)
    asks = [("embeddings", x, x.tolist(), pos) for pos in
            (np.arange(6), np.array([0, 3, 9, 17, 22, 23]), np.array([1, 2, 5, 30, 31, 40]))]
    if layer == 0:
        ids = RNG.integers(0, 50, 6)
        asks.append(("token_ids", _table(ckpt)[ids], ids.tolist(), np.arange(6)))
    _check_asks(C, srv, name, asks, hunyuan, ckpt, layer)
    # a left-padded batch: positions cumsum(mask) - 1
    S = 10
    mask = np.ones((2, S), np.int64)
    mask[0, :4] = 0
    pos = np.where(mask == 1, np.cumsum(mask, axis=1) - 1, 1)
    xb = RNG.standard_normal((2, S, ckpt.config["hidden_size"])).astype(np.float32)
    st, r = srv.request("/apply", {"model": name, "embeddings": xb.tolist(),
                                   "attention_mask": mask.tolist(), "return": ["q", "k"]})
    if C.check(st == 200, f"{name} padded batch: status {st} {r}"):
        for b in range(2):
            want = hunyuan(ckpt.config, ckpt.weights(), xb[b].astype(np.float64), pos[b], layer,
                           seq_len=int(pos.max()) + 1)
            for k in "qk":
                C.close(f"{name} padded row {b}: {k}", np.array(r[k][b], np.float64), want[k])


def _hunyuan_info(C, models):
    for name, alpha, factor in (("hunyuan", 1000.0, 1.0), ("hunyuan_moe_bf16_l1", 50.0, 2.0)):
        m = models[name]
        sc = m["params"].get("scaling", {})
        C.check(sc.get("type") == "dynamic" and sc.get("alpha") == alpha
                and sc.get("factor") == factor and sc.get("original_max_position_embeddings") == 24
                and m.get("post_rope_qk_norm") == {"type": "rmsnorm", "over": "head",
                                                   "weights": "shared", "eps": 1e-5}
                and m["weights"].get("q_norm_weight") == [16] and "qk_norm" not in m,
                f"/info {name}: dynamic with alpha {alpha}, weighted norm after the rotation: {m}")


def _hunyuan_malformed(C, root):
    base = hunyuan_ckpt(seed=2698, layers=1)
    _refused(C, root, "hunyuan", base, (
        ("no head_dim", ["head_dim"], {"head_dim": None}),
        ("alpha a string", ["rope_scaling.alpha"],
         {"rope_scaling": dict(HUNYUAN_DYNAMIC, alpha="1000")}),
        ("alpha negative", ["rope_scaling.alpha", "> 0"],
         {"rope_scaling": dict(HUNYUAN_DYNAMIC, alpha=-2.0)})))
    # alpha in a linear block is not read by HF: served as linear, warned
    d = os.path.join(root, "hy_alpha_linear")
    base.write(d, config=dict(base.config, rope_scaling={"type": "linear", "factor": 2.0,
                                                         "alpha": 9.0}))
    with Server(["--model", f"hy={d}"]) as srv:
        st, info = srv.request("/info")
        m = next((m for m in info.get("models", []) if m["name"] == "hy"), {})
        C.check(m.get("params", {}).get("scaling") == {"type": "linear", "factor": 2.0},
                f"hunyuan: alpha in a linear block is not used: {m.get('params')}")
        srv.stop()
        C.check("rope_scaling.alpha is not used" in srv.stderr(),
                f"hunyuan: the unused alpha is warned about: {srv.stderr()[-600:]}")
    # /diagnose cannot search q/k through a weighted norm after the rotation
    with Server(["--model", f"hy={os.path.join(root, 'hy_alpha_linear')}"]) as srv:
        x = np.ones((2, 32)).tolist()
        st, r = srv.request("/diagnose", {"model": "hy", "embeddings": x,
                                          "q": np.ones((2, 64)).tolist()})
        C.check(st == 400 and r.get("error", {}).get("field") == "model",
                f"/diagnose refuses q/k of a HunYuan model naming model: {st} {r}")
        srv.stop()


def _encode_alpha(C, srv):
    """/encode's dynamic scaling with alpha: the alpha base within the
    original context, the dynamic formula past it; alpha 0 is refused."""
    x = RNG.standard_normal((3, 16)).astype(np.float32)
    for pos in (np.array([0, 5, 23]), np.array([0, 5, 40])):
        sc = {"type": "dynamic", "factor": 3.0, "original_max_position_embeddings": 24,
              "alpha": 1000.0}
        st, r = srv.request("/encode", {"scheme": "rope", "embeddings": x.tolist(),
                                        "positions": pos.tolist(), "params": {"scaling": sc}})
        n = int(pos.max()) + 1
        base = 1e4 * (1000.0 if n <= 24 else 3.0 * n / 24 - 2.0) ** (16 / 14)
        inv = 1.0 / base ** (np.arange(0, 16, 2) / 16)
        want = hf_ref.apply_rope(x.astype(np.float64)[:, None, :], pos, inv, 1.0)[:, 0, :]
        if C.check(st == 200, f"/encode dynamic alpha at {pos.tolist()}: {st} {r}"):
            C.close(f"/encode dynamic alpha at {pos.tolist()}", np.array(r["encoded"]), want)
    st, r = srv.request("/encode", {"scheme": "rope", "embeddings": x.tolist(),
                                    "params": {"scaling": dict(sc, alpha=0)}})
    C.check(st == 422 and r["error"].get("field") == "params.scaling.alpha",
            f"/encode alpha 0 refused naming params.scaling.alpha: {st} {r}")


def hunyuan_checks(root, C):
    cases = _hunyuan_cases()
    with _serve(root, cases, "hy") as srv:
        for name, (ckpt, layer) in cases.items():
            _hunyuan_requests(C, srv, name, ckpt, layer)
        _encode_alpha(C, srv)
        st, info = srv.request("/info")
        if C.check(st == 200, f"hunyuan /info: status {st}"):
            _hunyuan_info(C, {m["name"]: m for m in info["models"]})
        status = srv.stop()
        C.check(status == 0 and sanitizer_clean(srv.stderr()), f"hunyuan server: exit {status}")
    _hunyuan_malformed(C, root)


# --------------------------------------------------------------------- checks
def block_key_checks(root, C):
    hunyuan_checks(root, C)
    # the reference's scale is HF's at the positions the research notes list
    got = query_scale(np.array([p for p, _ in KNOWN]), 0.1, 16384)
    C.check(np.allclose(got, [s for _, s in KNOWN], atol=5e-5),
            f"query scale at {[p for p, _ in KNOWN]}: {got.tolist()}")
    cases = _cases()
    with _serve(root, cases, "bk") as srv:
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
