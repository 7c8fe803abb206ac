"""Rope blocks by layer type, as transformers 5 reads and writes them:
Gemma 3 (gemma3_text), OLMo 3 (olmo3) and ModernBERT (modernbert) keep one
block of rope_parameters per layer type. Each is checked in both config
forms, the legacy one (rope_theta, rope_scaling and the family's own theta
keys) and the nested one transformers 5 saves, in F32 and BF16: layer 0
from token_ids, later layers from embeddings, a left-padded batch with
attention_mask, /info (rope_block), both forms giving the same answers, and
malformed configs stopping start-up naming their key.

The references restate Hugging Face's code in numpy: hf_blocks is each
family's convert_rope_params_to_dict followed by standardize_rope_params'
per-layer-type case; block_rope hands the block to hf_ref.rope_init with
yarn's truncate read from the outer dict (absent: truncated)."""
import copy
import math
import os

import numpy as np

import arch_common as ac
import checkpoints as ck
import hf_ref
import rope_proportional
from harness import Server, run_failing, sanitizer_clean
from mask_models import _masked_close

RNG = np.random.default_rng(2605)

# convert_rope_params_to_dict per family: (full block's theta key, default),
# (sliding block's theta key, default), rope_scaling into both blocks
NESTING = {
    "gemma3_text": (("rope_theta", 1e6), ("rope_local_base_freq", 1e4), False),
    "olmo3": (("rope_theta", 5e5), ("rope_theta", 5e5), False),
    "modernbert": (("global_rope_theta", 160000.0), ("local_rope_theta", 10000.0), True),
}
OLMO3_YARN = {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 8192,
              "attention_factor": 1.2079441541679836, "beta_fast": 32, "beta_slow": 1}


def layer_types(cfg, family):
    """layer_types, else each config class's default pattern."""
    if cfg.get("layer_types"):
        return cfg["layer_types"]
    n = cfg["num_hidden_layers"]
    if family == "gemma3_text":
        p = cfg.get("sliding_window_pattern", 6)
        return ["sliding_attention" if (i + 1) % p else "full_attention" for i in range(n)]
    if family == "olmo3":
        return ["sliding_attention" if (i + 1) % 4 else "full_attention" for i in range(n)]
    g = cfg.get("global_attn_every_n_layers", 3)
    return ["sliding_attention" if i % g else "full_attention" for i in range(n)]


def hf_blocks(cfg, family):
    """{layer type: block}: the family's convert_rope_params_to_dict (the
    config's keys that are not dataclass fields are its kwargs, popped as
    read), then standardize_rope_params with blocks keyed by layer type."""
    (fkey, fdef), (skey, sdef), both = NESTING[family]
    kwargs = dict(cfg)
    rs = kwargs.pop("rope_scaling", None)
    rp = copy.deepcopy(cfg.get("rope_parameters"))
    if rp is None:
        rp = {"sliding_attention": {"rope_type": "default"},
              "full_attention": {"rope_type": "default"}}
    if rs is not None:
        rp["full_attention"].update(rs)
        if both:
            rp["sliding_attention"].update(rs)
    if rp.get("full_attention") is None:
        rp["full_attention"] = {"rope_type": "default"}
    rp["full_attention"].setdefault("rope_theta", kwargs.pop(fkey, fdef))
    if rp.get("sliding_attention") is None:
        rp["sliding_attention"] = {"rope_type": "default"}
    rp["sliding_attention"].setdefault("rope_theta", kwargs.pop(skey, sdef))
    for t in set(layer_types(cfg, family)):
        b = rp[t]
        b.setdefault("rope_type", b.get("type", "default"))
        if b["rope_type"] in ("llama3", "yarn", "longrope"):
            b.setdefault("original_max_position_embeddings", cfg["max_position_embeddings"])
    return rp


def to_v5(cfg, family):
    """The config transformers 5 saves: nested rope_parameters, layer_types
    written out, the legacy rope keys gone."""
    (fkey, _), (skey, _), _ = NESTING[family]
    out = {k: v for k, v in cfg.items() if k not in ("rope_scaling", fkey, skey)}
    out["rope_parameters"] = hf_blocks(cfg, family)
    out["layer_types"] = layer_types(cfg, family)
    out["transformers_version"] = "5.0.0"
    return out


def block_rope(cfg, block, hd, seq_len):
    """(inv_freq, attention factor) of a standardized block. Nested, yarn
    reads truncate from the outer rope_parameters (never there): True.
    proportional: rope_proportional's formula over the whole head."""
    if block["rope_type"] == "proportional":
        return rope_proportional.proportional_inv_freq(
            block["rope_theta"], block.get("partial_rotary_factor", 1.0), hd,
            block.get("factor", 1.0)), 1.0
    rc = {"rope_parameters": {k: v for k, v in block.items() if k != "truncate"},
          "max_position_embeddings": cfg["max_position_embeddings"], "head_dim": hd,
          "hidden_size": cfg["hidden_size"], "num_attention_heads": cfg["num_attention_heads"]}
    return hf_ref.rope_init(rc, seq_len, partial=False)


def _rotate(q, k, cfg, family, layer, positions, H, KV, hd, seq_len=None):
    block = hf_blocks(cfg, family)[layer_types(cfg, family)[layer]]
    inv, att = block_rope(cfg, block, hd, seq_len or int(positions.max()) + 1)
    T = q.shape[0]
    return (hf_ref.apply_rope(q.reshape(T, H, hd), positions, inv, att).reshape(T, -1),
            hf_ref.apply_rope(k.reshape(T, KV, hd), positions, inv, att).reshape(T, -1))


# ------------------------------------------------------------------ references
def gemma3(cfg, w, x, positions, layer, prefix="model.", from_ids=False, dtype="F32",
           seq_len=None):
    """modeling_gemma3.py as hf_ref.gemma3 restates it, with the rope of the
    layer type's block (Gemma3RotaryEmbedding per layer type)."""
    p = f"{prefix}layers.{layer}."
    H, KV, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps = cfg.get("rms_norm_eps", 1e-6)
    h = x
    if layer == 0 and from_ids:
        s = float(hf_ref._round_to(np.float32(math.sqrt(cfg["hidden_size"])), dtype))
        h = hf_ref._round_to((x * s).astype(np.float32), dtype)

    def one_plus(name):
        return (np.float32(1.0) + w[p + name].astype(np.float32)).astype(np.float64)
    z = hf_ref.rms_norm(h, one_plus("input_layernorm.weight"), eps)
    q, k, v = (z @ w[p + f"self_attn.{n}_proj.weight"].T for n in "qkv")
    T = x.shape[0]
    q = hf_ref.rms_norm(q.reshape(T, H, hd), one_plus("self_attn.q_norm.weight"), eps)
    k = hf_ref.rms_norm(k.reshape(T, KV, hd), one_plus("self_attn.k_norm.weight"), eps)
    q, k = _rotate(q, k, cfg, "gemma3_text", layer, positions, H, KV, hd, seq_len)
    s = hf_ref.scores(q, k, H, KV, hd, cfg.get("query_pre_attn_scalar", 256) ** -0.5)
    return {"q": q, "k": k, "v": v.reshape(T, -1), "scores": s}


def olmo3(cfg, w, x, positions, layer, prefix="model.", seq_len=None, **_):
    """modeling_olmo3.py: Olmo3Attention is Olmo2Attention (q_norm / k_norm
    over the whole projections, no norm before attention) rotated by
    Olmo3RotaryEmbedding's block of the layer's type."""
    p = f"{prefix}layers.{layer}."
    H, KV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg["hidden_size"] // H
    eps = cfg.get("rms_norm_eps", 1e-5)
    q, k, v = (x @ w[p + f"self_attn.{n}_proj.weight"].T for n in "qkv")
    q = hf_ref.rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
    k = hf_ref.rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
    q, k = _rotate(q, k, cfg, "olmo3", layer, positions, H, KV, hd, seq_len)
    return {"q": q, "k": k, "v": v, "scores": hf_ref.scores(q, k, H, KV, hd, hd ** -0.5)}


def modernbert(cfg, w, x, positions, layer, prefix="model.", seq_len=None, **_):
    """modeling_modernbert.py: ModernBertEmbeddings.norm (LayerNorm without
    bias, norm_eps) on the token embeddings or inputs_embeds; layer 0's
    attn_norm is Identity, later layers' a LayerNorm without bias;
    ModernBertAttention: Wqkv(h).view(T, 3, H, D), q and k rotated by the
    layer type's block, scaling head_dim ** -0.5."""
    H = cfg["num_attention_heads"]
    hd = cfg["hidden_size"] // H
    eps = cfg.get("norm_eps", 1e-5)
    zero = np.zeros(cfg["hidden_size"])
    if layer == 0:
        z = hf_ref.layer_norm(x, w[prefix + "embeddings.norm.weight"], zero, eps)
    else:
        z = hf_ref.layer_norm(x, w[f"{prefix}layers.{layer}.attn_norm.weight"], zero, eps)
    qkv = z @ w[f"{prefix}layers.{layer}.attn.Wqkv.weight"].T
    T = x.shape[0]
    q, k, v = (qkv.reshape(T, 3, H * hd)[:, i, :] for i in range(3))
    q, k = _rotate(q, k, cfg, "modernbert", layer, positions, H, H, hd, seq_len)
    return {"q": q, "k": k, "v": v, "scores": hf_ref.scores(q, k, H, H, hd, hd ** -0.5)}


# ----------------------------------------------------------------- checkpoints
def olmo3_ckpt(seed=2651, dtype="F32", layers=4, **extra):
    """Olmo-3-7B's config keys (Olmo3ForCausalLM: layer_types 3 sliding : 1
    full, sliding_window 4096, rope_theta 5e5, YaRN rope_scaling) over
    OLMo 2's tensor names."""
    c = ck.olmo2(seed=seed, dtype=dtype, layers=layers)
    cfg = dict(c.config, architectures=["Olmo3ForCausalLM"], model_type="olmo3",
               max_position_embeddings=65536, sliding_window=4096, rope_theta=500000,
               rope_scaling=dict(OLMO3_YARN), rms_norm_eps=1e-6,
               layer_types=layer_types({"num_hidden_layers": layers}, "olmo3"))
    cfg.update(extra)
    return ck.Checkpoint({k: v for k, v in cfg.items() if v is not None}, c.tensors)


def modernbert_ckpt(seed=2661, dtype="F32", layers=4, d=32, heads=4, vocab=50, **extra):
    """ModernBERT-base's config keys (ModernBertForMaskedLM: global_rope_theta
    160000, local_rope_theta 10000, global_attn_every_n_layers 3,
    local_attention 128, norm_eps 1e-5, norm_bias false) and tensor names:
    model.embeddings.tok_embeddings / norm, layers.L.attn_norm (not layer 0),
    attn.Wqkv, attn.Wo, mlp_norm, mlp.Wi / Wo, final_norm, head, decoder."""
    cfg = {"architectures": ["ModernBertForMaskedLM"], "model_type": "modernbert",
           "hidden_size": d, "intermediate_size": 2 * d, "num_attention_heads": heads,
           "num_hidden_layers": layers, "max_position_embeddings": 8192,
           "global_rope_theta": 160000.0, "local_rope_theta": 10000.0,
           "global_attn_every_n_layers": 3, "local_attention": 128, "norm_eps": 1e-5,
           "norm_bias": False, "attention_bias": False, "mlp_bias": False,
           "hidden_activation": "gelu", "vocab_size": vocab, "pad_token_id": 3,
           "bos_token_id": 1, "eos_token_id": 2, "cls_token_id": 1, "sep_token_id": 2,
           "classifier_pooling": "mean", "torch_dtype": "float32",
           "transformers_version": "4.48.0.dev0"}
    cfg.update(extra)
    g = ck.Gen(seed, dtype)
    g.add("model.embeddings.tok_embeddings.weight", (vocab, d), 1.0)
    g.add("model.embeddings.norm.weight", (d,), 0.1, 1.0)
    for L in range(layers):
        p = f"model.layers.{L}."
        if L:
            g.add(p + "attn_norm.weight", (d,), 0.1, 1.0)
        g.add(p + "attn.Wqkv.weight", (3 * d, d))
        g.add(p + "attn.Wo.weight", (d, d))
        g.add(p + "mlp_norm.weight", (d,), 0.1, 1.0)
        g.add(p + "mlp.Wi.weight", (4 * d, d))
        g.add(p + "mlp.Wo.weight", (d, 2 * d))
    g.add("model.final_norm.weight", (d,), 0.1, 1.0)
    g.add("head.dense.weight", (d, d))
    g.add("head.norm.weight", (d,), 0.1, 1.0)
    g.add("decoder.bias", (vocab,), 0.1)
    return ck.Checkpoint({k: v for k, v in cfg.items() if v is not None}, g.out)


def _nested(ckpt, family):
    return ck.Checkpoint(to_v5(ckpt.config, family), ckpt.tensors)


def _cases():
    """name: (checkpoint, family, reference, layer, prefix). Every family in
    both forms (legacy, and v5: nested rope_parameters) and both dtypes."""
    g3 = ck.gemma3(seed=2641, rope_scaling={"rope_type": "linear", "factor": 8.0})
    g3b = ck.gemma3(seed=2642, dtype="BF16", rope_scaling={"factor": 4.0, "rope_type": "linear"},
                    rope_local_base_freq=20.0, rope_theta=1000.0)
    # truncate false reaches the nested full block, where yarn does not read it
    # a legacy "type" merged into {"rope_type": "default"}: the default rope
    g3t = ck.gemma3(seed=2645, rope_scaling={"type": "linear", "factor": 8.0})
    o3 = olmo3_ckpt(rope_scaling=dict(OLMO3_YARN, truncate=False))
    o3b = olmo3_ckpt(seed=2652, dtype="BF16", rope_theta=10000)
    mb = modernbert_ckpt()
    mbb = modernbert_ckpt(seed=2662, dtype="BF16", global_rope_theta=500.0,
                          local_rope_theta=None, global_attn_every_n_layers=2,
                          rope_scaling={"rope_type": "linear", "factor": 2.0})
    # written nested only: a proportional full block (Gemma 4's kind of block)
    g3p = ck.gemma3(seed=2644, rope_theta=None, rope_local_base_freq=None, rope_parameters={
        "full_attention": {"rope_type": "proportional", "rope_theta": 1e6,
                           "partial_rotary_factor": 0.25},
        "sliding_attention": {"rope_type": "default", "rope_theta": 100.0}})
    g3p.config = {k: v for k, v in g3p.config.items() if v is not None}
    cases = {f"g3p_v5_l{L}": (g3p, "gemma3_text", gemma3, L, "model.") for L in (0, 5)}
    for name, ckpt, family, ref, layers in (
            ("g3", g3, "gemma3_text", gemma3, (0, 5)), ("g3b", g3b, "gemma3_text", gemma3, (0, 5)),
            ("g3t", g3t, "gemma3_text", gemma3, (5,)),
            ("o3", o3, "olmo3", olmo3, (0, 3)), ("o3b", o3b, "olmo3", olmo3, (0, 3)),
            ("mb", mb, "modernbert", modernbert, (0, 1, 3)),
            ("mbb", mbb, "modernbert", modernbert, (0, 1, 2))):
        for form, c in (("legacy", ckpt), ("v5", _nested(ckpt, family))):
            for layer in layers:
                cases[f"{name}_{form}_l{layer}"] = (c, family, ref, layer, "model.")
    return cases


# ---------------------------------------------------------------------- checks
def _table(case):
    ckpt, family, _, _, prefix = case
    key = "embeddings.tok_embeddings.weight" if family == "modernbert" else "embed_tokens.weight"
    return ckpt.weights()[prefix + key]


def _want(case, rows, pos, from_ids=False, seq_len=None):
    ckpt, _, ref, layer, prefix = case
    return ref(ckpt.config, ckpt.weights(), rows.astype(np.float64), pos, layer, prefix=prefix,
               from_ids=from_ids, dtype=ckpt.tensors[0][1], seq_len=seq_len)


def _requests(C, srv, name, case):
    """Embeddings at 0..5 and far positions (past yarn's original 8192);
    layer 0 also from token_ids. Returns the answers for the form check."""
    ckpt, _, _, layer, _ = case
    got = []
    x = RNG.standard_normal((6, ckpt.config["hidden_size"])).astype(np.float32)
    asks = [("embeddings", x, x.tolist(), pos) for pos in
            (np.arange(6), np.array([2, 40, 300, 9000, 20000, 60000]))]
    if layer == 0:
        ids = RNG.integers(0, 50, 6)
        asks.append(("token_ids", _table(case)[ids], ids.tolist(), np.arange(6)))
    for key, rows, value, pos in asks:
        what = f"{name} {key} at {pos[-1]}"
        st, r = srv.request("/apply", {"model": name, key: value, "positions": pos.tolist(),
                                       "return": ["q", "k", "v", "scores"]})
        if not C.check(st == 200, f"{what}: status {st} {r}"):
            continue
        want = _want(case, rows, pos, from_ids=key == "token_ids")
        for k in ("q", "k", "v", "scores"):
            C.close(f"{what}: {k}", np.array(r[k], np.float64), want[k])
        got.append((key, value, pos.tolist(), r))
    return got


def _padded(C, srv, name, case):
    """A left-padded batch with attention_mask: positions cumsum(mask) - 1
    (pads 1), or the slot index for ModernBERT (its arange positions);
    masked keys read float32's lowest."""
    ckpt, family, _, layer, _ = case
    S = 10
    body, rows, pos, mask = ac.padded_batch(RNG, name, S, 4, layer,
                                            _table(case) if layer == 0 else None,
                                            ckpt.config["hidden_size"])
    if family == "modernbert":
        pos = np.tile(np.arange(S), (2, 1))
    st, r = srv.request("/apply", body)
    if not C.check(st == 200, f"{name} padded batch: status {st} {r}"):
        return
    for b in range(2):
        want = _want(case, rows[b], pos[b], from_ids=layer == 0)
        for k in "qkv":
            C.close(f"{name} padded batch row {b}: {k}", np.array(r[k][b], np.float64), want[k])
        keep = mask[b].astype(bool)[None, None, :]
        _masked_close(C, f"{name} padded batch row {b}: scores", r["scores"][b], want["scores"],
                      keep)


def _same_forms(C, srv, answers):
    """A legacy config and the nested one transformers 5 saves from it give
    the same bits."""
    for name, got in answers.items():
        if "_legacy_" not in name:
            continue
        twin = name.replace("_legacy_", "_v5_")
        for key, value, pos, r in got:
            if key == "token_ids" and "_l0" not in name:
                continue
            st, r5 = srv.request("/apply", {"model": twin, key: value, "positions": pos,
                                            "return": ["q", "k", "v"]})
            C.check(st == 200 and all(r5[k] == r[k] for k in "qkv"),
                    f"{twin} ({key} at {pos[-1]}) answers as {name}: status {st}")


def _info(C, models, cases):
    """/info: the block the layer uses and its params as the reference reads
    them."""
    for name, (ckpt, family, _, layer, _) in cases.items():
        m = models[name]
        t = layer_types(ckpt.config, family)[layer]
        block = hf_blocks(ckpt.config, family)[t]
        p = m.get("params", {})
        kind = p.get("rope_type") or p.get("scaling", {}).get("type", "default")
        scaled = "scaling" in p
        C.check(m.get("rope_block") == t and p.get("base") == block["rope_theta"]
                and kind == block["rope_type"]
                and (not scaled or p["scaling"].get("factor") == block["factor"])
                and p.get("partial_rotary_factor") == block.get("partial_rotary_factor"),
                f"/info {name}: rope_block {t}, base {block['rope_theta']}, "
                f"{block['rope_type']}: {m.get('rope_block')} {p}")
    o3 = models["o3_legacy_l3"]["params"]["scaling"]
    C.check(o3.get("original_max_position_embeddings") == 8192 and "truncate" not in o3
            and models["o3_legacy_l0"]["params"] == {"base": 500000.0, "layout": "half"}
            and models["o3b_v5_l0"]["params"]["base"] == 500000.0
            and models["o3b_v5_l3"]["params"]["base"] == 10000.0,
            "/info olmo3: yarn on full layers only; sliding layers at 5e5 whatever rope_theta "
            f"says: {o3} {models['o3b_v5_l0']['params']}")
    C.check(models["mb_legacy_l0"]["positions"]["rule"] == "slot"
            and models["mb_legacy_l0"].get("embed_norm", {}).get("type") == "layernorm"
            and models["mb_legacy_l0"].get("norm") is None
            and models["mb_legacy_l1"].get("norm", {}).get("type") == "layernorm"
            and "embed_norm" not in models["mb_legacy_l1"],
            f"/info modernbert: slot positions, embedding norm at layer 0 only: "
            f"{models['mb_legacy_l0']}")


def _serve(root, cases, prefix):
    args, dirs = [], {}
    for name, (ckpt, _, _, layer, _) in cases.items():
        d = next((dd for c, dd in dirs.values() if c is ckpt), None)
        if d is None:
            d = os.path.join(root, prefix + name)
            ckpt.write(d)
            dirs[name] = (ckpt, d)
        args += ["--model", f"{name}={d}" + (f":{layer}" if layer else "")]
    return Server(args)


def _malformed(C, root):
    """Each refused config names its key (exit 2, before listening)."""
    g3 = _nested(ck.gemma3(seed=2643, layers=6), "gemma3_text")
    o3 = olmo3_ckpt(seed=2653)
    mb = modernbert_ckpt(seed=2663, layers=2)
    rp = g3.config["rope_parameters"]
    bad = [
        ("gemma3 flat rope_parameters", g3, ["rope_parameters.rope_type", "layer type"],
         {"rope_parameters": {"rope_type": "default", "rope_theta": 1e6}}),
        ("gemma3 block not an object", g3, ["rope_parameters.sliding_attention", "object"],
         {"rope_parameters": dict(rp, sliding_attention=5)}),
        ("gemma3 block of an unknown type", g3, ["rope_parameters.full_attention", "ntk9"],
         {"rope_parameters": dict(rp, full_attention={"rope_type": "ntk9"})}),
        ("gemma3 block theta 0", g3, ["rope_parameters.sliding_attention.rope_theta", "> 0"],
         {"rope_parameters": dict(rp, sliding_attention={"rope_type": "default",
                                                         "rope_theta": 0})}),
        ("gemma3 rope_scaling beside blocks without full", g3,
         ["rope_scaling", "full_attention"],
         {"rope_scaling": {"rope_type": "linear", "factor": 2.0},
          "rope_parameters": {"sliding_attention": rp["sliding_attention"]}}),
        ("olmo3 yarn factor a string", o3, ["rope_parameters.full_attention.factor", "number"],
         {"rope_scaling": None,
          "rope_parameters": {"full_attention": dict(OLMO3_YARN, factor="8"),
                              "sliding_attention": {"rope_type": "default"}}}),
        ("olmo3 rope_scaling a list", o3, ["rope_scaling", "object"], {"rope_scaling": [1]}),
        ("olmo3 layer_types unknown", o3, ["layer_types[0]"],
         {"layer_types": ["bogus_attention"] * 4}),
        ("modernbert local_rope_theta 0", mb, ["local_rope_theta", "> 0"],
         {"local_rope_theta": 0}),
        ("modernbert norm_bias", mb, ["norm_bias"], {"norm_bias": True}),
        ("modernbert global_attn_every_n_layers 0", mb, ["global_attn_every_n_layers"],
         {"global_attn_every_n_layers": 0}),
    ]
    for label, ckpt, want, over in bad:
        d = os.path.join(root, "badrb_" + label.replace(" ", "_"))
        cfg = {k: v for k, v in dict(ckpt.config, **over).items() if v is not None}
        ckpt.write(d, config=cfg)
        st, err, listened = run_failing(["--model", f"bad={d}:1"])
        ok = st == 2 and not listened and all(w in err for w in want + ["config.json"])
        C.check(ok, f"malformed ({label}): exit {st}, want 2 and {want} in: {err.strip()[:400]}")
        C.check(sanitizer_clean(err), f"malformed ({label}): sanitizer clean: {err[:600]}")


def _warnings(C, stderr):
    """The OLMo 3 BF16 fixture's rope_theta 10000 reaches full layers only;
    the F32 one's truncate is not read; Gemma 3's legacy {"type": "linear"}
    is shadowed by the block's rope_type."""
    C.check("rope_theta 10000 is not used by sliding_attention layers" in stderr,
            f"olmo3: the unused rope_theta is warned about: {stderr[-1500:]}")
    C.check("rope_parameters.full_attention.truncate is ignored" in stderr,
            f"olmo3: the nested block's truncate is warned about: {stderr[-1500:]}")
    C.check("rope_scaling.type 'linear' is not used" in stderr,
            f"gemma3: a legacy type under rope_type default is warned about: {stderr[-1500:]}")


def rope_block_checks(root, C):
    cases = _cases()
    with _serve(root, cases, "rb_") as srv:
        answers = {name: _requests(C, srv, name, case) for name, case in cases.items()}
        for name, case in cases.items():
            if name.startswith(("g3_", "g3p_", "o3b_", "mb_")):
                _padded(C, srv, name, case)
        _same_forms(C, srv, answers)
        st, info = srv.request("/info")
        if C.check(st == 200, f"rope blocks /info: status {st}"):
            _info(C, {m["name"]: m for m in info["models"]}, cases)
        status = srv.stop()
        C.check(status == 0, f"rope blocks: server exits 0 (got {status})")
        C.check(sanitizer_clean(srv.stderr()), f"server stderr clean: {srv.stderr()[-800:]}")
        _warnings(C, srv.stderr())
    _malformed(C, root)
