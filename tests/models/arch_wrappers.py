"""Wrapper configs (vision-language and multimodal checkpoints): a config
with a text_config object serves its text model, the keys from text_config
(its model_type picks the architecture, or the wrapper's own text class, as
the wrapper's configuration_<type>.py fixes it), the tensors under
model.language_model., language_model.model. or model.; Qwen2-VL, Qwen2.5-VL
and GLM-4.1V configs written before transformers 5 keep the text keys at the
top level. Q, K, V and scores over HTTP against the text model's numpy
reference (for text tokens multimodal RoPE is 1-D RoPE), /info's
text_config and wrapper, and the configs refused naming their key or the
text model's model_type."""
import numpy as np

import arch_common as ac
import arch_gated
import arch_hybrid
import checkpoints as ck
import hf_ref

RNG = np.random.default_rng(2650)
VISION = [("vision_tower.vision_model.encoder.layers.0.self_attn.q_proj.weight", (16, 16)),
          ("multi_modal_projector.linear_1.weight", (32, 16))]


# ------------------------------------------------------------- text models
def qwen2_vl_text(seed, dtype, prefix, model_type="qwen2_vl_text", **over):
    """Qwen2-VL-7B-Instruct's text keys (Qwen2VLTextConfig): hidden / heads
    = head_dim, rms_norm_eps 1e-6, rope_theta 1e6, rope_scaling {"type":
    "mrope", "mrope_section": [16, 24, 24]} (here [2, 1, 1] of head_dim
    8), use_sliding_window false; q/k/v_proj with biases."""
    cfg = {"model_type": model_type, "hidden_size": 32, "intermediate_size": 64,
           "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2,
           "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "max_position_embeddings": 32768,
           "rope_scaling": {"type": "mrope", "mrope_section": [2, 1, 1]},
           "use_sliding_window": False, "sliding_window": 32768, "max_window_layers": 28,
           "vocab_size": 50, "hidden_act": "silu", "tie_word_embeddings": False}
    cfg.update(over)
    return ac.decoder_ckpt(cfg, seed, dtype, prefix, 2, 32, 4, 2, 8, bias=True, extra=VISION)


def qwen2_vl_ref(cfg, w, x, pos, layer, prefix, **_):
    """Qwen2VLTextAttention (modeling_qwen2_vl.py): head_dim = hidden //
    heads, q/k/v_proj bias=True; apply_multimodal_rotary_pos_emb with
    t = h = w (text): rotate_half over the whole head, rope_theta (1e6);
    "mrope" is read as "default" (convert_rope_params_to_dict)."""
    cfg = dict(cfg)
    for key in ("rope_scaling", "rope_parameters"):
        block = cfg.get(key)
        if block and block.get("rope_type", block.get("type")) == "mrope":
            cfg[key] = dict(block, rope_type="default")
    return ac.attention(cfg, w, x, pos, layer, prefix, ac.heads_of(cfg, head_dim=None), 1e-5,
                        True, rope=(1e6,))


def qwen3_vl_text(seed, dtype, prefix, model_type="qwen3_vl_text", head_dim=16, **over):
    """Qwen3-VL-8B's text_config keys: head_dim 128, rope_scaling
    {"mrope_interleaved": true, "mrope_section": [24, 20, 20], "rope_type":
    "default"} (here [4, 2, 2]), rope_theta 5e6, attention_bias false."""
    cfg = {"model_type": model_type, "hidden_size": 32, "intermediate_size": 64,
           "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2,
           "head_dim": head_dim, "rms_norm_eps": 1e-6, "rope_theta": 5000000,
           "rope_scaling": {"mrope_interleaved": True, "mrope_section": [4, 2, 2],
                            "rope_type": "default"},
           "max_position_embeddings": 262144, "attention_bias": False, "vocab_size": 50,
           "tie_word_embeddings": False, "dtype": "bfloat16"}
    cfg.update(over)
    return ac.decoder_ckpt(cfg, seed, dtype, prefix, 2, 32, 4, 2, head_dim or 8, qk="vector",
                           extra=VISION)


def qwen3_vl_ref(cfg, w, x, pos, layer, prefix, **_):
    """Qwen3VLTextAttention: Qwen3's q_norm / k_norm over head_dim before
    the rotation (rotate_half over the whole head: interleaved M-RoPE with
    t = h = w); head_dim default 128 (Qwen3VLMoeTextConfig: hidden //
    heads); rope_theta default 5e5."""
    hd_default = 128 if cfg["model_type"] == "qwen3_vl_text" else None
    return ac.attention(cfg, w, x, pos, layer, prefix, ac.heads_of(cfg, hd_default=hd_default),
                        1e-6, cfg.get("attention_bias", False), qk_norm=("q_norm", "k_norm"),
                        rope=(5e5,))


def glm4v_text(seed, dtype, prefix, model_type="glm4v_text", **over):
    """GLM-4.1V-9B-Thinking's text_config keys: partial_rotary_factor 0.5,
    rope_scaling {"type": "default", "mrope_section": [8, 12, 12]} (here
    [2, 1, 1] of the 8 rotated channels), rms_norm_eps 1e-5; biases."""
    cfg = {"model_type": model_type, "hidden_size": 64, "intermediate_size": 64,
           "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2,
           "partial_rotary_factor": 0.5, "rms_norm_eps": 1e-5, "rope_theta": 10000,
           "rope_scaling": {"type": "default", "mrope_section": [2, 1, 1]},
           "max_position_embeddings": 32768, "attention_bias": True, "vocab_size": 50}
    cfg.update(over)
    return ac.decoder_ckpt(cfg, seed, dtype, prefix, 2, 64, 4, cfg.get("num_key_value_heads") or 2,
                           16, bias=cfg.get("attention_bias", True), extra=VISION)


def glm4v_ref(cfg, w, x, pos, layer, prefix, **_):
    """Glm4vTextAttention: head_dim = hidden // heads, q/k/v bias=True;
    Glm4vTextRotaryEmbedding: inv_freq over int(head_dim *
    partial_rotary_factor) channels (rope_parameters' default 1.0);
    apply_rotary_pos_emb keeps cos/sin's first half repeat_interleave(2):
    adjacent pairs over the rotated channels, the rest passed."""
    return ac.attention(cfg, w, x, pos, layer, prefix, ac.heads_of(cfg, 2, head_dim=None), 1e-5,
                        True, rope=(10000.0, "partial_rotary_factor", 1.0), layout="pairs")


def glm4v_moe_ref(cfg, w, x, pos, layer, prefix, **_):
    """Glm4vMoeTextAttention: head_dim from the config (else hidden //
    heads), biases when attention_bias (default true); rotate_half over
    int(head_dim * partial_rotary_factor) channels (default 0.5)."""
    return ac.attention(cfg, w, x, pos, layer, prefix, ac.heads_of(cfg, 8), 1e-5,
                        cfg.get("attention_bias", True),
                        rope=(10000.0, "partial_rotary_factor", 0.5))


def _gemma3_ref(dtype):
    def ref(cfg, w, x, pos, layer, prefix, from_ids=False, **_):
        return hf_ref.gemma3(cfg, w, x, pos, layer, prefix=prefix, from_ids=from_ids, dtype=dtype)
    return ref


def _text_ref(fn):
    def ref(cfg, w, x, pos, layer, prefix, **_):
        return fn(cfg, w, x, pos, layer, prefix=prefix)
    return ref


# ------------------------------------------------------------------ cases
def _cases():
    """name: (checkpoint, reference, layer, prefix, text config, shards)."""
    g3 = ac.wrap(ck.gemma3(seed=2651, prefix="language_model.model."), "gemma3")
    g3b = ac.wrap(ck.gemma3(seed=2652, dtype="BF16", prefix="model.language_model.",
                            layers=6), "gemma3")
    q25 = ac.wrap(qwen2_vl_text(2653, "F32", "model.", model_type="qwen2_5_vl"), "qwen2_5_vl",
                  text_key=False)
    q25b = ac.wrap(qwen2_vl_text(2654, "BF16", "model.language_model.",
                                 model_type="qwen2_5_vl_text",
                                 rope_scaling=None, rope_theta=None,
                                 rope_parameters={"rope_type": "mrope",
                                                  "mrope_section": [2, 1, 1]}), "qwen2_5_vl")
    q2 = ac.wrap(qwen2_vl_text(2655, "BF16", "model."), "qwen2_vl")
    q3 = ac.wrap(qwen3_vl_text(2656, "F32", "model.language_model."), "qwen3_vl")
    q3m = ac.wrap(qwen3_vl_text(2657, "BF16", "model.language_model.",
                                model_type="qwen3_vl_moe_text", head_dim=None,
                                rope_theta=None,
                                rope_scaling={"mrope_interleaved": True,
                                              "mrope_section": [2, 1, 1],
                                              "rope_type": "default"}), "qwen3_vl_moe")
    m3 = ac.wrap(ck.llama(seed=2658, prefix="language_model.model.", model_type="mistral",
                          kv_heads=1), "mistral3")
    m3b = ac.wrap(ck.llama(seed=2659, dtype="BF16", prefix="model.language_model.",
                           model_type=None, bias=None), "mistral3")
    # temperature tuning off: HF's NoPE layers scale q by the slot, which
    # explicit positions far apart would not be (tested with llama4_text)
    l4 = ac.wrap(ck.llama4_text(seed=2660, attn_temperature_tuning=False), "llama4")
    gv = ac.wrap(glm4v_text(2661, "F32", "model.language_model."), "glm4v")
    gvb = ac.wrap(glm4v_text(2662, "BF16", "model.", model_type="glm4v", partial_rotary_factor=None,
                             num_key_value_heads=None,
                             rope_scaling={"type": "default", "mrope_section": [4, 2, 2]}),
                  "glm4v", text_key=False)
    gm = ac.wrap(glm4v_text(2663, "F32", "model.language_model.", model_type="glm4v_moe_text",
                            partial_rotary_factor=None, head_dim=16), "glm4v_moe")
    gmb = ac.wrap(glm4v_text(2664, "BF16", "model.language_model.", model_type="glm4v_moe_text",
                             attention_bias=False, num_key_value_heads=4, head_dim=16,
                             partial_rotary_factor=0.25,
                             rope_scaling={"type": "default", "mrope_section": [1, 1, 0]}),
                  "glm4v_moe")
    ex = ac.wrap(ck.exaone4(seed=2665, prefix="model.language_model."), "exaone4_5")
    ex.config["text_config"]["model_type"] = "exaone4_5_text"
    exb = ac.wrap(ck.exaone4(seed=2666, dtype="BF16", prefix="language_model.model."),
                  "exaone4_5")
    # AutoConfig text models: GLM-4.6V (glm4v_text), LFM2-VL (lfm2), Kimi K2.5 (deepseek_v3)
    g46 = ac.wrap(glm4v_text(2667, "BF16", "model.language_model."), "glm46v")
    lv = ac.wrap(arch_hybrid.lfm2_ckpt(2668, "F32", {0, 1}, layer_types=["full_attention"] * 4),
                 "lfm2_vl")
    kimi = ac.wrap(ck.deepseek(seed=2669, prefix="language_model.model."), "kimi_k25")
    for c in (q25b, m3b):
        c.config["text_config"] = {k: v for k, v in c.config["text_config"].items()
                                   if v is not None}
    tc = lambda c: c.config.get("text_config", c.config)  # noqa: E731
    return {
        "gemma3": (g3, _gemma3_ref("F32"), 0, "language_model.model.", tc(g3)),
        "gemma3_l5": (g3, _gemma3_ref("F32"), 5, "language_model.model.", tc(g3)),
        "gemma3_bf16": (g3b, _gemma3_ref("BF16"), 0, "model.language_model.", tc(g3b), 2),
        "gemma3_bf16_l4": (g3b, _gemma3_ref("BF16"), 4, "model.language_model.", tc(g3b), 2),
        # released Qwen2.5-VL: text keys at the top level, model.layers
        "qwen2_5_vl": (q25, qwen2_vl_ref, 0, "model.", tc(q25)),
        "qwen2_5_vl_l1": (q25, qwen2_vl_ref, 1, "model.", tc(q25)),
        # transformers 5: text_config with rope_parameters, model.language_model.
        "qwen2_5_vl_bf16": (q25b, qwen2_vl_ref, 0, "model.language_model.", tc(q25b)),
        "qwen2_5_vl_bf16_l1": (q25b, qwen2_vl_ref, 1, "model.language_model.", tc(q25b)),
        "qwen2_vl_bf16": (q2, qwen2_vl_ref, 0, "model.", tc(q2)),
        "qwen3_vl": (q3, qwen3_vl_ref, 0, "model.language_model.", tc(q3)),
        "qwen3_vl_l1": (q3, qwen3_vl_ref, 1, "model.language_model.", tc(q3)),
        "qwen3_vl_moe_bf16": (q3m, qwen3_vl_ref, 0, "model.language_model.", tc(q3m)),
        "qwen3_vl_moe_bf16_l1": (q3m, qwen3_vl_ref, 1, "model.language_model.", tc(q3m)),
        "mistral3": (m3, _text_ref(hf_ref.llama), 0, "language_model.model.", tc(m3)),
        "mistral3_l1": (m3, _text_ref(hf_ref.llama), 1, "language_model.model.", tc(m3)),
        # text_config without model_type: Mistral3Config's default "mistral"
        "mistral3_bf16": (m3b, _text_ref(hf_ref.llama), 0, "model.language_model.", tc(m3b)),
        "llama4": (l4, _text_ref(hf_ref.llama4), 0, "language_model.model.", tc(l4)),
        "llama4_l3": (l4, _text_ref(hf_ref.llama4), 3, "language_model.model.", tc(l4)),
        "glm4v": (gv, glm4v_ref, 0, "model.language_model.", tc(gv)),
        "glm4v_l1": (gv, glm4v_ref, 1, "model.language_model.", tc(gv)),
        # GLM-4.1V's flat form: no partial_rotary_factor (whole head), kv heads 2
        "glm4v_bf16_flat": (gvb, glm4v_ref, 0, "model.", tc(gvb)),
        "glm4v_bf16_flat_l1": (gvb, glm4v_ref, 1, "model.", tc(gvb)),
        "glm4v_moe": (gm, glm4v_moe_ref, 0, "model.language_model.", tc(gm)),
        "glm4v_moe_l1": (gm, glm4v_moe_ref, 1, "model.language_model.", tc(gm)),
        "glm4v_moe_bf16": (gmb, glm4v_moe_ref, 0, "model.language_model.", tc(gmb)),
        "glm4v_moe_bf16_l1": (gmb, glm4v_moe_ref, 1, "model.language_model.", tc(gmb)),
        # Exaone4_5Config reads text model_type exaone4_5_text as exaone4
        "exaone4_5": (ex, _text_ref(hf_ref.exaone4), 0, "model.language_model.", tc(ex)),
        "exaone4_5_l3": (ex, _text_ref(hf_ref.exaone4), 3, "model.language_model.", tc(ex)),
        "exaone4_5_bf16": (exb, _text_ref(hf_ref.exaone4), 0, "language_model.model.", tc(exb)),
        "glm46v_bf16": (g46, glm4v_ref, 0, "model.language_model.", tc(g46)),
        "glm46v_bf16_l1": (g46, glm4v_ref, 1, "model.language_model.", tc(g46)),
        "lfm2_vl": (lv, arch_hybrid.lfm2, 0, "model.", tc(lv)),
        "lfm2_vl_l1": (lv, arch_hybrid.lfm2, 1, "model.", tc(lv)),
        "kimi_k25": (kimi, _text_ref(hf_ref.deepseek), 0, "language_model.model.", tc(kimi)),
        "kimi_k25_l1": (kimi, _text_ref(hf_ref.deepseek), 1, "language_model.model.", tc(kimi)),
    }


INNER = {"gemma3": "gemma3_text", "qwen2_5_vl": "qwen2_5_vl_text", "qwen2_vl": "qwen2_vl_text",
         "qwen3_vl": "qwen3_vl_text", "qwen3_vl_moe": "qwen3_vl_moe_text", "mistral3": "mistral",
         "llama4": "llama4_text", "glm4v": "glm4v_text", "glm4v_moe": "glm4v_moe_text",
         "exaone4_5": "exaone4", "glm46v": "glm4v_text", "lfm2_vl": "lfm2",
         "kimi_k25": "deepseek_v3"}


def _info(C, models):
    for name, m in models.items():
        if name == "default":
            continue
        outer = next(o for o in sorted(INNER, key=len, reverse=True) if name.startswith(o))
        flat = name in ("qwen2_5_vl", "qwen2_5_vl_l1", "glm4v_bf16_flat", "glm4v_bf16_flat_l1")
        C.check(m.get("wrapper") == outer and m["architecture"] == INNER[outer]
                and m.get("text_config") is (not flat),
                f"/info {name}: wrapper {outer}, architecture {INNER[outer]}, text_config "
                f"{not flat}: {m.get('wrapper')} {m['architecture']} {m.get('text_config')}")
    g, q = models["gemma3"], models["qwen2_5_vl"]
    C.check(g["head_dim"] == 16 and g["params"].get("base") == 10000
            and models["gemma3_l5"]["params"].get("base") == 1000000,
            f"/info gemma3: the text model's local and global bases: {g['params']}")
    C.check(q["params"].get("base") == 1000000.0 and "scaling" not in q["params"]
            and "bq" in q["weights"] and q["head_dim"] == 8,
            f"/info qwen2_5_vl: mrope read as default rope, base 1e6, biases: {q}")
    C.check(models["qwen3_vl_moe_bf16"]["head_dim"] == 8
            and models["qwen3_vl_moe_bf16"]["params"].get("base") == 5e5
            and models["qwen3_vl"]["head_dim"] == 16,
            f"/info qwen3_vl(_moe): head_dim 16 given, 8 = hidden / heads; base 5e5 by default")
    C.check(models["glm4v"]["params"].get("layout") == "interleaved"
            and models["glm4v"]["params"].get("partial_rotary_factor") == 0.5
            and models["glm4v_bf16_flat"]["kv_heads"] == 2
            and models["glm4v_moe"]["params"].get("partial_rotary_factor") == 0.5
            and models["glm4v_moe"]["params"].get("layout", "half") == "half",
            f"/info glm4v: pairs, 0.5; glm4v_moe: half, 0.5: {models['glm4v']['params']} "
            f"{models['glm4v_moe']['params']}")


def _refused(C, root):
    q35 = ac.wrap(arch_gated.gated_ckpt(seed=2670, layers=1, layer_types=["full_attention"]),
                  "qwen3_5")
    g1 = ac.wrap(ck.gemma3(seed=2671, layers=1, prefix="language_model.model."), "gemma3")
    m1 = ac.wrap(ck.llama(seed=2672, layers=1, prefix="language_model.model.",
                          model_type="mistral"), "mistral3")
    no_text = {k: v for k, v in g1.config.items() if k != "text_config"}
    bad = [
        ("gemma3 without text_config", g1, ["text_config", "gemma3_text", "config.json"],
         no_text, 0),
        ("text_config a string", g1, ["text_config must be an object"],
         dict(g1.config, text_config="gemma3_text"), 0),
        ("text_config.model_type a number", m1, ["text_config.model_type"],
         dict(m1.config, text_config=dict(m1.config["text_config"], model_type=7)), 0),
        ("unknown text model", m1, ["mistral3", "'bert2'", "not supported", "gemma3_text"],
         dict(m1.config, text_config=dict(m1.config["text_config"], model_type="bert2")), 0),
        ("a malformed text key", g1, ["num_attention_heads"],
         dict(g1.config, text_config=dict(g1.config["text_config"], num_attention_heads="4")),
         0),
        ("no tensors under any wrapper prefix", ac.wrap(ck.gemma3(seed=2673, layers=1,
                                                                  prefix="text."), "gemma3"),
         ["model.language_model.layers.0"], None, 0),
        ("deepseek_v4", m1, ["deepseek_v4", "compressed"], dict(m1.config,
                                                                model_type="deepseek_v4"), 0),
        ("mimo_v2_flash", m1, ["mimo_v2_flash", "sinks"],
         dict(m1.config, model_type="mimo_v2_flash"), 0),
        ("a vision tower", m1, ["qwen2_5_vl_vision", "vision or audio tower"],
         {"model_type": "qwen2_5_vl_vision", "hidden_size": 1280}, 0),
        ("an audio tower", m1, ["whisper", "vision or audio tower"],
         {"model_type": "whisper", "d_model": 384}, 0),
    ]
    ac.refused(C, root, "wrap", bad)
    # Qwen3.5's text model (gated attention, hf_specs.c) is served from
    # either wrapper
    for outer in ("qwen3_5", "qwen3_5_moe"):
        d = q35.write(f"{root}/wrap_{outer}", config=dict(q35.config, model_type=outer))
        st, err, listened = ac.run_failing(["--model", f"q={d}"])
        C.check(listened, f"{outer}: its text model {outer}_text served: {st} {err[-300:]}")


def wrapper_checks(root, C):
    ac.serve(C, root, "wrap", _cases(), RNG, _info)
    _refused(C, root)
