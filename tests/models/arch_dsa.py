"""DeepSeek-V3.2 (model_type deepseek_v32) and GLM-5 (glm_moe_dsa): their
attention's q, k and v are DeepSeek-V3's multi-head latent attention
(DeepseekV32Attention / GlmMoeDsaAttention.forward: q_b_proj(q_a_layernorm(
q_a_proj(z))), kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj,
apply_rotary_pos_emb_interleave, the yarn mscale² score scale); the DSA
indexer only masks keys past its top-k. Their configs differ from V3's:
no rope_interleave key (always de-interleaved), q_lora_rank always set,
layer_types "deepseek_sparse_attention", indexer keys, GLM-5's defaults
(q_lora_rank 2048, qk_nope_head_dim 192, v_head_dim 256, rms_norm_eps
1e-5) and v5 rope_parameters. Checked over HTTP against hf_ref.deepseek's V3
restatement, with the indexer's tensors present for the loader to skip;
the indexer's return values are refused naming the value."""
import os

import numpy as np

import arch_common as ac
import checkpoints as ck
import hf_ref
from harness import Server, fixture_args, info_models, run_failing, sanitizer_clean, stop_clean

RNG = np.random.default_rng(3232)


def dsa_ckpt(model_type="deepseek_v32", seed=3201, dtype="F32", layers=2, heads=4, **extra):
    """ck.deepseek's V3 checkpoint with the DSA config keys and indexer
    tensors of DeepSeek-V3.2-Exp / GLM-5 (self_attn.indexer.wq_b, wk,
    k_norm, weights_proj)."""
    base = ck.deepseek(seed=seed, dtype=dtype, model_type="deepseek_v3", layers=layers,
                       heads=heads)
    cfg = dict(base.config, model_type=model_type,
               architectures=["DeepseekV32ForCausalLM" if model_type == "deepseek_v32"
                              else "GlmMoeDsaForCausalLM"],
               index_topk=2048, index_head_dim=8, index_n_heads=2,
               layer_types=["deepseek_sparse_attention"] * layers)
    if model_type == "glm_moe_dsa":
        cfg["indexer_types"] = ["full"] * layers
    cfg.update(extra)
    cfg = {k: v for k, v in cfg.items() if v is not None}
    g = ck.Gen(seed + 1, dtype)
    for L in range(layers):
        a = f"model.layers.{L}.self_attn.indexer."
        g.add(a + "wq_b.weight", (16, cfg["q_lora_rank"]))
        g.add(a + "wk.weight", (8, cfg["hidden_size"]))
        g.add(a + "k_norm.weight", (8,), 0.1, 1.0)
        g.add(a + "k_norm.bias", (8,))
        g.add(a + "weights_proj.weight", (2, cfg["hidden_size"]))
    return ck.Checkpoint(cfg, base.tensors + g.out)


def reference(cfg, w, x, positions, layer):
    """V3's q, k, v (hf_ref.deepseek) with the DSA models' fixed choices:
    the rope always de-interleaved, GLM-5's rms_norm_eps default 1e-5, and
    the mscale of a v5 rope_parameters block read as V3 reads rope_scaling
    (yarn_apply_mscale reads config.rope_parameters, which holds either)."""
    c = dict(cfg, model_type="deepseek_v3", rope_interleave=True)
    if cfg["model_type"] == "glm_moe_dsa":
        c.setdefault("rms_norm_eps", 1e-5)
    if "rope_scaling" not in c and "rope_parameters" in c:
        c["rope_scaling"] = c.pop("rope_parameters")
    return hf_ref.deepseek(c, w, x, positions, layer)


def _cases():
    v32 = dsa_ckpt()
    v32_v5 = dsa_ckpt(seed=3203, dtype="BF16", rope_scaling=None, rope_theta=None,
                      rope_interleave=False,
                      rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40,
                                       "beta_fast": 32, "beta_slow": 1, "mscale": 1.0,
                                       "mscale_all_dim": 1.0,
                                       "original_max_position_embeddings": 4096})
    glm5 = dsa_ckpt(model_type="glm_moe_dsa", seed=3205, heads=2, rms_norm_eps=None,
                    rope_scaling=None, rope_theta=None,
                    rope_parameters={"rope_theta": 1000000.0, "rope_type": "default"})
    return {"dsv32": (v32, 0), "dsv32_l1": (v32, 1), "dsv32_v5": (v32_v5, 1),
            "glm5": (glm5, 0)}


def _requests(C, srv, name, ckpt, layer):
    w, cfg = ckpt.weights(), ckpt.config
    ret, T = ["q", "k", "v", "scores"], 6
    if layer == 0:
        table = w["model.embed_tokens.weight"]
        ids = RNG.integers(0, table.shape[0], T)
        st, r = srv.request("/apply", {"model": name, "token_ids": ids.tolist(), "return": ret})
        if C.check(st == 200, f"{name} token_ids: status {st} {r}"):
            want = reference(cfg, w, table[ids], np.arange(T), layer)
            for k in ret:
                C.close(f"{name} token_ids: {k}", np.array(r[k], np.float64), want[k])
    x = RNG.standard_normal((T, cfg["hidden_size"]))
    pos = np.array([0, 7, 300, 5000, 60000, 60001])
    st, r = srv.request("/apply", {"model": name, "embeddings": x.tolist(),
                                   "positions": pos.tolist(), "return": ret})
    if C.check(st == 200, f"{name} embeddings: status {st} {r}"):
        want = reference(cfg, w, x, pos, layer)
        for k in ret:
            C.close(f"{name} embeddings, far positions: {k}", np.array(r[k], np.float64),
                    want[k])


def _info(C, models):
    v5, g = models["dsv32_v5"], models["glm5"]
    scale = 10 ** -0.5 * (0.1 * np.log(40) + 1) ** 2
    C.check(v5["params"].get("layout") == "half" and v5.get("mla", {}).get("v_head_dim") == 5
            and abs(v5["params"].get("score_scale", 0) - scale) < 1e-12
            and v5["params"].get("scaling", {}).get("type") == "yarn",
            f"/info deepseek_v32 (rope_parameters): half layout, yarn, mscale² scale: {v5}")
    C.check(g["architecture"] == "glm_moe_dsa" and g["norm"]["eps"] == 1e-5
            and g["params"].get("base") == 1000000 and "scaling" not in g["params"],
            f"/info glm_moe_dsa: rms_norm_eps default 1e-5, theta 1e6: {g}")


def _indexer_refused(C, srv):
    """The DSA indexer is not served: each of its return values is a 400
    naming return[i] and the value; /info lists none of its weights."""
    for i, value in enumerate(("index_q", "index_k", "index_scores")):
        ret = ["q"] * i + [value]
        st, r = srv.request("/apply", {"model": "dsv32", "embeddings": [[0.1] * 32] * 2,
                                       "return": ret})
        err = r.get("error", {})
        C.check(st == 400 and err.get("field") == f"return[{i}]"
                and f"'{value}' is not served" in err.get("message", "")
                and "indexer" in err.get("message", ""),
                f"return {ret}: 400 naming return[{i}] and {value}, the indexer not served: "
                f"{st} {r}")


def _malformed(C, root):
    c = dsa_ckpt(seed=3207, layers=1)
    for label, over, want in (
            ("q_lora_rank null", {"q_lora_rank": None}, ["q_lora_rank null", "deepseek_v32"]),
            ("kv heads", {"num_key_value_heads": 2}, ["num_key_value_heads 2"]),
            ("mscale_all_dim a string", {"rope_scaling": None, "rope_parameters": {
                "rope_type": "yarn", "factor": 4, "mscale_all_dim": "1"}},
             ["rope_parameters.mscale_all_dim"])):
        d = os.path.join(root, "baddsa_" + label.replace(" ", "_"))
        cfg = dict(c.config, **over)
        if label == "q_lora_rank null":  # an explicit null, not an absent key
            cfg["q_lora_rank"] = None
        c.write(d, config=cfg)
        st, err, listened = run_failing(["--model", f"bad={d}"])
        C.check(st == 2 and not listened and all(s in err for s in want),
                f"dsa malformed ({label}): exit {st}, want {want} in: {err.strip()[:400]}")
        C.check(sanitizer_clean(err), f"dsa malformed ({label}): sanitizer clean")


def dsa_checks(root, C):
    cases = _cases()
    args = fixture_args(root, "dsa", {n: (c, layer, 2 if n == "dsv32_v5" else 0)
                                      for n, (c, layer) in cases.items()})
    with Server(args) as srv:
        for name, (ckpt, layer) in cases.items():
            _requests(C, srv, name, ckpt, layer)
            ac.padded(C, srv, RNG, name, (ckpt, lambda cfg, w, x, p, lay, _: reference(
                cfg, w, x, p, lay), layer, "model.", None))
        _indexer_refused(C, srv)
        models = info_models(C, srv, "dsa")
        if models:
            _info(C, models)
            C.check(not any("index" in k for k in models["dsv32"]["weights"]),
                    f"/info deepseek_v32: no indexer weight: {models['dsv32']['weights']}")
        stop_clean(C, srv, "dsa")
    ac.both_forms(C, root, "dsa", {n: (c, None, layer, None, None)
                                   for n, (c, layer) in cases.items()}, RNG)
    _malformed(C, root)
