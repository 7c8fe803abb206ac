"""Llama variations served as entries of the architecture table
(api/models/hf_specs.c) with no code of their own: IBM Granite 3 (model_type
granite: attention_multiplier as the score scale, embedding_multiplier on
the input embeddings, token ids' and given ones) and SmolLM3 (smollm3:
no_rope_layers, 1 = the layer rotates, 0 = NoPE; rope_theta default 2e6).
Q, K, V and scores over HTTP against hf_ref.granite / hf_ref.smollm3, what
/info says, and the malformed values that stop start-up naming the key."""
import os

import numpy as np

import checkpoints as ck
import hf_ref
from harness import Server, run_failing, sanitizer_clean

RNG = np.random.default_rng(4321)


def _granite(**over):
    # an eps near mean(x^2): RMSNorm is scale-invariant but for eps, so only
    # a large one shows whether the multiplier reaches the norm
    cfg = {"embedding_multiplier": 12.0, "attention_multiplier": 0.0078125,
           "residual_multiplier": 0.22, "logits_scaling": 8.0, "rms_norm_eps": 0.5,
           "model_type": "granite"}
    cfg.update(over)
    return ck.llama(**cfg)


def _cases():
    """name: (checkpoint, reference, layer, prefix)."""
    g = _granite(seed=231)
    s3 = ck.llama(seed=241, model_type="smollm3", layers=4, rope_theta=None,
                  rms_norm_eps=1e-6)
    s3_list = ck.llama(seed=242, model_type="smollm3", layers=2, dtype="BF16", prefix="",
                       no_rope_layers=[1, 0], rope_theta=100000.0,
                       layer_types=["full_attention", "sliding_attention"],
                       use_sliding_window=True, sliding_window=4)
    out = {
        "granite": (g, hf_ref.granite, 0, "model."),
        "granite_l1": (g, hf_ref.granite, 1, "model."),
        # BF16: token ids' rows times the multiplier rounded to bfloat16 (12 is exact in
        # bfloat16, 0.7071 is not: the scalar stays float32), granitemoe's attention Granite's
        "granite_bf16": (_granite(seed=234, dtype="BF16"), hf_ref.granite, 0, "model."),
        "granitemoe_bf16": (_granite(seed=235, dtype="BF16", model_type="granitemoe",
                                     embedding_multiplier=0.7071, num_local_experts=4),
                            hf_ref.granite, 0, "model."),
        "granitemoe_f16": (_granite(seed=236, dtype="F16", model_type="granitemoeshared",
                                    embedding_multiplier=5.65), hf_ref.granite, 0, "model."),
        # no multipliers: both default to 1 (a score scale of 1, not head_dim ** -0.5)
        "granite_plain": (ck.llama(seed=232, model_type="granite", dtype="F16", bias=True,
                                   kv_heads=1), hf_ref.granite, 0, "model."),
        # no no_rope_layers: layers 0-2 rotate, layer 3 is NoPE; rope_theta 2e6
        "smollm3": (s3, hf_ref.smollm3, 0, "model."),
        "smollm3_l3": (s3, hf_ref.smollm3, 3, "model."),
        "smollm3_list_l1": (s3_list, hf_ref.smollm3, 1, ""),
        "smollm3_list": (s3_list, hf_ref.smollm3, 0, ""),
    }
    for ckpt, _, _, _ in out.values():
        ckpt.config = {k: v for k, v in ckpt.config.items() if v is not None}
    return out


def _close(C, what, got, want):
    C.close(what, np.array(got, np.float64), want)


def _requests(C, srv, name, case):
    ckpt, ref, layer, prefix = case
    w = ckpt.weights()
    ret = ["q", "k", "v", "scores"]
    T = 6
    if layer == 0:
        table = w[prefix + "embed_tokens.weight"]
        ids = RNG.integers(0, table.shape[0], T)
        st, r = srv.request("/apply", {"model": name, "token_ids": ids.tolist(), "return": ret})
        if C.check(st == 200, f"{name} token_ids: status {st} {r}"):
            kw = {"from_ids": True, "dtype": ckpt.tensors[0][1]} if ref is hf_ref.granite else {}
            want = ref(ckpt.config, w, table[ids].astype(np.float64), np.arange(T), layer,
                       prefix=prefix, **kw)
            for k in ret:
                _close(C, f"{name} token_ids: {k}", r[k], want[k])
    x = RNG.standard_normal((T, ckpt.config["hidden_size"])).astype(np.float32)
    for pos in (np.arange(T), np.array([2, 40, 300, 2000, 9000, 30000])):
        st, r = srv.request("/apply", {"model": name, "embeddings": x.tolist(),
                                       "positions": pos.tolist(), "return": ret})
        if C.check(st == 200, f"{name} embeddings at {pos[-1]}: status {st} {r}"):
            want = ref(ckpt.config, w, x.astype(np.float64), pos, layer, prefix=prefix)
            for k in ret:
                _close(C, f"{name} embeddings at {pos[-1]}: {k}", r[k], want[k])


def _info(C, models):
    g, gl1, gp = models["granite"], models["granite_l1"], models["granite_plain"]
    C.check(g["params"].get("score_scale") == 0.0078125
            and gp["params"].get("score_scale") == 1.0,
            f"/info granite: score_scale attention_multiplier (default 1): {g['params']}, "
            f"{gp['params']}")
    # RMSNorm_eps(12 x) = RMSNorm_{eps/144}(x): the multiplier folded into layer 0's eps
    C.check(abs(g["norm"]["eps"] - 0.5 / 144) < 1e-17 and gl1["norm"]["eps"] == 0.5,
            f"/info granite: layer 0 eps 0.5/144, layer 1 eps 0.5: {g['norm']} {gl1['norm']}")
    s, s3 = models["smollm3"], models["smollm3_l3"]
    C.check(s["scheme"] == "rope" and s["params"].get("base") == 2e6 and s3["scheme"] == "none"
            and models["smollm3_list_l1"]["scheme"] == "none"
            and models["smollm3_list"]["params"].get("base") == 100000.0,
            f"/info smollm3: rope (base 2e6) on layer 0, none on NoPE layers: {s['scheme']} "
            f"{s['params']} {s3['scheme']}")
    for name, m in models.items():
        C.check(m["architecture"] in ("granite", "granitemoe", "granitemoeshared", "smollm3",
                                      "posenc"),
                f"/info {name}: architecture {m['architecture']}")


def _malformed(C, root):
    g1 = _granite(seed=233, layers=1)
    s1 = ck.llama(seed=243, model_type="smollm3", layers=2)
    bad = [
        ("granite: embedding_multiplier 0", g1, ["embedding_multiplier", "> 0"],
         {"embedding_multiplier": 0}),
        ("granite: embedding_multiplier negative", g1, ["embedding_multiplier", "-12"],
         {"embedding_multiplier": -12.0}),
        # GraniteModel computes inputs_embeds * None and fails
        ("granite: embedding_multiplier null", g1, ["embedding_multiplier is null"],
         {"embedding_multiplier": None}),
        ("granite: attention_multiplier a string", g1, ["attention_multiplier", "a number"],
         {"attention_multiplier": "0.1"}),
        ("smollm3: no_rope_layers entry 2", s1, ["no_rope_layers[1]", "2"],
         {"no_rope_layers": [1, 2]}),
        # SmolLM3Config keeps an empty list (only None takes the default)
        ("smollm3: no_rope_layers empty", s1, ["no_rope_layers has 0 entries",
                                              "num_hidden_layers"], {"no_rope_layers": []}),
        ("smollm3: layer_types unknown", s1, ["layer_types[1]", "global_attention"],
         {"layer_types": ["full_attention", "global_attention"]}),
        ("smollm3: layer 0 linear", s1, ["layer 0 is linear_attention", "no positional"],
         {"layer_types": ["mamba", "full_attention"]}),
    ]
    for label, ckpt, want, over in bad:
        d = os.path.join(root, "badv_" + label.split(":")[1].strip().replace(" ", "_"))
        ckpt.write(d, config=dict(ckpt.config, **over))
        st, err, listened = run_failing(["--model", f"bad={d}"])
        ok = st == 2 and not listened and all(w in err for w in want + ["config.json"])
        C.check(ok, f"malformed ({label}): exit {st}, want 2 and {want} in: {err.strip()[:400]}")
        C.check(sanitizer_clean(err), f"malformed ({label}): sanitizer clean: {err[:600]}")


def variant_checks(root, C):
    cases = _cases()
    args, dirs = [], {}
    for name, (ckpt, _, layer, _) in cases.items():
        # one directory per checkpoint, named after its first case
        d = next((dd for c, dd in dirs.values() if c is ckpt), None)
        if d is None:
            d = os.path.join(root, "variant_" + name)
            ckpt.write(d)
            dirs[name] = (ckpt, d)
        args += ["--model", f"{name}={d}" + (f":{layer}" if layer else "")]
    with Server(args) as srv:
        for name, case in cases.items():
            _requests(C, srv, name, case)
        st, info = srv.request("/info")
        if C.check(st == 200, f"variants /info: status {st}"):
            _info(C, {m["name"]: m for m in info["models"]})
        status = srv.stop()
        C.check(status == 0, f"variants: server exits 0 (got {status})")
        C.check(sanitizer_clean(srv.stderr()), f"server stderr clean: {srv.stderr()[-800:]}")
    _malformed(C, root)
