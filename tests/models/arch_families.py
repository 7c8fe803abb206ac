"""Families of 2025-26 served as entries of the architecture table
(api/models/hf_specs.c): Qwen3-MoE, Qwen1.5/2-MoE, GLM-4.5 (glm4_moe),
Seed-OSS, Apertus, ERNIE 4.5 (dense and MoE), K-EXAONE (exaone_moe), Arcee
Trinity (afmoe), GLM-4.7-Flash (glm4_moe_lite: DeepSeek-V3's attention) and
Arcee AFM. Checkpoints with each family's config keys and tensor names (MoE
experts included, for the loader to skip), numpy restatements of each
modeling_<type>.py attention up to Q, K and V (arch_common.attention with
the family's choices), F32 and BF16, layer 0 from token_ids and a later
layer from embeddings, /info, and a malformed key per family."""
import numpy as np

import arch_common as ac
import checkpoints as ck
import hf_ref

RNG = np.random.default_rng(2680)
LLAMA3 = {"rope_type": "llama3", "rope_theta": 12000000.0, "factor": 8.0,
          "original_max_position_embeddings": 8192, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0}


def fam_ckpt(model_type, seed, dtype="F32", prefix="model.", layers=2, heads=4, kv=2, hd=8,
             bias=False, qk=None, input_norm=True, **keys):
    """A checkpoint of hidden size 32 with the family's keys (None drops
    one) and two routed experts per layer under mlp.experts."""
    cfg = {"architectures": ["ForCausalLM"], "model_type": model_type, "hidden_size": 32,
           "intermediate_size": 64, "moe_intermediate_size": 16, "num_attention_heads": heads,
           "num_key_value_heads": kv, "head_dim": hd, "num_hidden_layers": layers,
           "rms_norm_eps": 1e-5, "max_position_embeddings": 4096, "rope_theta": 10000.0,
           "vocab_size": 50, "hidden_act": "silu", "tie_word_embeddings": False,
           "num_experts": 2, "num_experts_per_tok": 1}
    cfg.update(keys)
    real_kv = cfg.get("num_key_value_heads") or keys.get("_kv", heads)
    extra = [(f"{prefix}layers.{L}.mlp.experts.{e}.up_proj.weight", (16, 32))
             for L in range(layers) for e in range(2)]
    cfg.pop("_kv", None)
    cfg.pop("_hd", None)
    return ac.decoder_ckpt(cfg, seed, dtype, prefix, layers, 32, heads, real_kv,
                           cfg.get("head_dim") or keys.get("_hd", hd), bias=bias, qk=qk,
                           input_norm=input_norm, extra=extra)


def qwen3_moe(cfg, w, x, pos, layer, prefix, **_):
    """Qwen3MoeAttention: q/k_proj then q_norm / k_norm (RMSNorm over
    head_dim) per head, rotate_half over the whole head; head_dim default
    hidden // heads, num_key_value_heads 4, rms_norm_eps 1e-6."""
    return ac.attention(cfg, w, x, pos, layer, prefix, ac.heads_of(cfg, 4), 1e-6,
                        cfg.get("attention_bias", False), qk_norm=("q_norm", "k_norm"),
                        rope=(10000.0,))


def qwen2_moe(cfg, w, x, pos, layer, prefix, **_):
    """Qwen2MoeAttention: q/k/v_proj with bias = qkv_bias (default true),
    num_key_value_heads default 16, rotate_half over the whole head."""
    return ac.attention(cfg, w, x, pos, layer, prefix, ac.heads_of(cfg, 16), 1e-6,
                        cfg.get("qkv_bias", True), rope=(10000.0,))


def glm4_moe(cfg, w, x, pos, layer, prefix, **_):
    """Glm4MoeAttention: biases when attention_bias, q_norm / k_norm per head
    when use_qk_norm, rotate_half over int(head_dim * partial_rotary_factor)
    channels (Glm4MoeConfig's default 0.5), the rest passed."""
    return ac.attention(cfg, w, x, pos, layer, prefix, ac.heads_of(cfg, 8), 1e-5,
                        cfg.get("attention_bias", False),
                        qk_norm=("q_norm", "k_norm") if cfg.get("use_qk_norm") else None,
                        rope=(10000.0, "partial_rotary_factor", 0.5))


def seed_oss(cfg, w, x, pos, layer, prefix, **_):
    """SeedOssAttention: head_dim from the config (default 128), biases when
    attention_bias (default true), num_key_value_heads default 8."""
    return ac.attention(cfg, w, x, pos, layer, prefix, ac.heads_of(cfg, 8, hd_default=128),
                        1e-6, cfg.get("attention_bias", True), rope=(10000.0,))


def apertus(cfg, w, x, pos, layer, prefix, **_):
    """ApertusAttention: q_norm / k_norm per head before the rotation;
    without rope keys ApertusConfig's llama3 block (rope_theta 12e6)."""
    if not cfg.get("rope_scaling") and not cfg.get("rope_parameters"):
        cfg = dict(cfg, rope_parameters=dict(LLAMA3))
    return ac.attention(cfg, w, x, pos, layer, prefix, ac.heads_of(cfg), 1e-5,
                        cfg.get("attention_bias", False), qk_norm=("q_norm", "k_norm"),
                        rope=(12e6,))


def ernie(cfg, w, x, pos, layer, prefix, **_):
    """Ernie4_5Attention / Ernie4_5_MoeAttention: biases when use_bias;
    apply_rotary_pos_emb repeat_interleaves cos/sin's first half: adjacent
    pairs over the whole head; rope_theta default 5e5; head_dim default
    128 and num_key_value_heads 2 (MoE: hidden // heads and 4)."""
    dense = cfg["model_type"] == "ernie4_5"
    shape = ac.heads_of(cfg, 2 if dense else 4, hd_default=128 if dense else None)
    return ac.attention(cfg, w, x, pos, layer, prefix, shape, 1e-5, cfg.get("use_bias", False),
                        rope=(5e5,), layout="pairs")


def exaone_moe(cfg, w, x, pos, layer, prefix, **_):
    """ExaoneMoeDecoderLayer: input_layernorm before the attention (EXAONE
    4 has none); ExaoneMoeAttention: q_norm / k_norm per head, the rotation
    only on sliding layers when sliding_window is set (exaone4_rotates)."""
    rope = (10000.0,) if hf_ref.exaone4_rotates(cfg, layer) else None
    return ac.attention(cfg, w, x, pos, layer, prefix, ac.heads_of(cfg, 32), 1e-5, False,
                        qk_norm=("q_norm", "k_norm"), rope=rope)


def afmoe(cfg, w, x, pos, layer, prefix, **_):
    """AfmoeModel: inputs_embeds * sqrt(hidden_size) when mup_enabled;
    AfmoeAttention: q_norm / k_norm per head, the rotation only where
    layer_types[L] is sliding_attention (AfmoeConfig's default: sliding
    unless (L + 1) % global_attn_every_n_layers == 0); head_dim default
    128. The output gate acts after the attention."""
    every = cfg.get("global_attn_every_n_layers", 4)
    types = cfg.get("layer_types") or [
        "sliding_attention" if (i + 1) % every else "full_attention"
        for i in range(cfg["num_hidden_layers"])]
    if layer == 0 and cfg.get("mup_enabled"):
        x = x * cfg["hidden_size"] ** 0.5
    rope = (10000.0,) if types[layer] == "sliding_attention" else None
    return ac.attention(cfg, w, x, pos, layer, prefix, ac.heads_of(cfg, hd_default=128), 1e-5,
                        cfg.get("attention_bias", False), qk_norm=("q_norm", "k_norm"), rope=rope)


GLM_LITE = {"q_lora_rank": 768, "kv_lora_rank": 512, "qk_nope_head_dim": 192,
            "qk_rope_head_dim": 64, "v_head_dim": 256, "rms_norm_eps": 1e-5}


def glm4_moe_lite(cfg, w, x, pos, layer, prefix, **_):
    """Glm4MoeLiteAttention is DeepseekV3Attention (hf_ref.deepseek's V3
    path) under Glm4MoeLiteConfig's defaults (GLM_LITE)."""
    return hf_ref.deepseek(dict(GLM_LITE, **dict(cfg, model_type="deepseek_v3")), w, x, pos, layer,
                           prefix=prefix)


def glm_lite_ckpt(seed, dtype, defaults=False):
    """GLM-4.7-Flash's config keys (Glm4MoeLiteForCausalLM): DeepSeek-V3's
    MLA keys, or none of them (defaults) with Glm4MoeLiteConfig's sizes."""
    dims = dict(q_lora_rank=768, kv_lora_rank=512, nope=192, rope=64, v_dim=256) \
        if defaults else {}
    ckpt = ck.deepseek(seed=seed, dtype=dtype, model_type="glm4_moe_lite", **dims)
    ckpt.config["architectures"] = ["Glm4MoeLiteForCausalLM"]
    if defaults:
        for k in GLM_LITE:
            ckpt.config.pop(k)
        ckpt.config["rope_scaling"] = None
    return ckpt


def arcee(cfg, w, x, pos, layer, prefix, **_):
    """ArceeAttention is LlamaAttention (the MLP differs)."""
    return hf_ref.llama(cfg, w, x, pos, layer, prefix=prefix)


def _cases():
    """name: (checkpoint, reference, layer, prefix, None, shards)."""
    types = ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"]
    c = {
        "qwen3_moe": fam_ckpt("qwen3_moe", 2681, qk="vector", hd=16, rms_norm_eps=1e-6),
        "qwen3_moe_bf16": fam_ckpt("qwen3_moe", 2682, "BF16", "", qk="vector", hd=None,
                                   kv=None, _kv=4, _hd=8, rms_norm_eps=None,
                                   attention_bias=True, bias=True),
        "qwen2_moe": fam_ckpt("qwen2_moe", 2683, bias=True, qkv_bias=True),
        "qwen2_moe_bf16": fam_ckpt("qwen2_moe", 2684, "BF16", kv=4, qkv_bias=False,
                                   rope_scaling={"rope_type": "linear", "factor": 2.0}),
        "glm4_moe": fam_ckpt("glm4_moe", 2685, qk="vector", hd=16, use_qk_norm=True,
                             partial_rotary_factor=0.5, attention_bias=True, bias=True),
        "glm4_moe_bf16": fam_ckpt("glm4_moe", 2686, "BF16", hd=16, kv=None, _kv=8, heads=8,
                                  use_qk_norm=False),
        "seed_oss": fam_ckpt("seed_oss", 2687, bias=True, attention_bias=True,
                             attention_out_bias=False, rope_theta=1e7),
        "seed_oss_bf16": fam_ckpt("seed_oss", 2688, "BF16", hd=None, _hd=128,
                                  attention_bias=None, bias=True, rope_theta=None),
        "apertus": fam_ckpt("apertus", 2689, qk="vector", rope_theta=None,
                            rope_scaling=dict(LLAMA3, rope_theta=1e6)),
        # no rope keys: ApertusConfig's llama3 block
        "apertus_bf16": fam_ckpt("apertus", 2690, "BF16", qk="vector", rope_theta=None),
        "ernie4_5": fam_ckpt("ernie4_5", 2691, use_bias=True, bias=True, rope_theta=None),
        "ernie4_5_bf16": fam_ckpt("ernie4_5", 2692, "BF16", hd=None, _hd=128, kv=None, _kv=2),
        "ernie4_5_moe": fam_ckpt("ernie4_5_moe", 2693, hd=None, _hd=8, kv=None, _kv=4,
                                 heads=4, use_bias=False),
        "exaone_moe": fam_ckpt("exaone_moe", 2694, "BF16", layers=4, qk="vector", hd=16,
                               layer_types=types, sliding_window=128),
        # mup_enabled with an eps near mean(x^2): the input scale shows in the norm
        "afmoe": fam_ckpt("afmoe", 2697, layers=4, qk="vector", mup_enabled=True,
                          rms_norm_eps=0.5, layer_types=types, sliding_window=1024),
        "afmoe_bf16": fam_ckpt("afmoe", 2698, "BF16", layers=4, qk="vector", hd=None, _hd=128,
                               global_attn_every_n_layers=2, attention_bias=True, bias=True),
        "glm4_moe_lite": glm_lite_ckpt(2675, "F32"),
        # every MLA size absent: Glm4MoeLiteConfig's (not DeepSeek-V3's)
        "glm4_moe_lite_bf16": glm_lite_ckpt(2676, "BF16", defaults=True),
        "arcee": fam_ckpt("arcee", 2695, kv=1),
        "arcee_bf16": fam_ckpt("arcee", 2696, "BF16", bias=True, attention_bias=True),
    }
    refs = {"qwen3_moe": qwen3_moe, "qwen2_moe": qwen2_moe, "glm4_moe": glm4_moe,
            "seed_oss": seed_oss, "apertus": apertus, "ernie4_5": ernie,
            "exaone_moe": exaone_moe, "arcee": arcee, "afmoe": afmoe,
            "glm4_moe_lite": glm4_moe_lite}
    out = {}
    for name, ckpt in c.items():
        ref = refs[ckpt.config["model_type"].replace("ernie4_5_moe", "ernie4_5")]
        prefix = "" if name == "qwen3_moe_bf16" else "model."
        last = 3 if name in ("exaone_moe", "afmoe", "afmoe_bf16") else 1
        out[name] = (ckpt, ref, 0, prefix, None, 2 if "bf16" in name else 0)
        out[name + "_l" + str(last)] = (ckpt, ref, last, prefix, None, 0)
    return out


def _info(C, models):
    want = {"qwen3_moe": (16, 2, True), "qwen3_moe_bf16": (8, 4, True), "glm4_moe": (16, 2, True),
            "glm4_moe_bf16": (16, 8, False), "seed_oss_bf16": (128, 2, False),
            "ernie4_5_bf16": (128, 2, False), "ernie4_5_moe": (8, 4, False),
            "exaone_moe": (16, 2, True)}
    for name, (hd, kv, qk) in want.items():
        m = models[name]
        C.check(m["architecture"] == name.replace("_bf16", "") and m["head_dim"] == hd
                and m["kv_heads"] == kv and ("q_norm_weight" in m["weights"]) == qk,
                f"/info {name}: head_dim {hd}, kv_heads {kv}, q/k norms {qk}: {m}")
    C.check(models["glm4_moe"]["params"].get("partial_rotary_factor") == 0.5
            and models["ernie4_5"]["params"].get("layout") == "interleaved"
            and models["ernie4_5"]["params"].get("base") == 5e5
            and models["apertus_bf16"]["params"].get("scaling", {}).get("type") == "llama3"
            and models["apertus_bf16"]["params"].get("base") == 12e6
            and models["exaone_moe_l3"]["scheme"] == "none"
            and models["exaone_moe"]["norm"]["type"] == "rmsnorm"
            and models["afmoe_l3"]["scheme"] == "none" and models["afmoe"]["scheme"] == "rope"
            and models["afmoe_bf16_l3"]["scheme"] == "none"
            and models["afmoe_bf16"]["head_dim"] == 128
            and abs(models["afmoe"]["norm"]["eps"] - 0.5 / 32) < 1e-17
            and models["afmoe_l3"]["norm"]["eps"] == 0.5,
            "/info: glm4_moe half of each head, ernie pairs at 5e5, apertus llama3 at 12e6 by "
            "default, exaone_moe's full layer NoPE after an input norm, afmoe NoPE full layers "
            "and mup folded into layer 0's eps")
    lite = models["glm4_moe_lite_bf16"].get("mla", {})
    C.check(lite == {"q_lora_rank": 768, "kv_lora_rank": 512, "qk_nope_head_dim": 192,
                     "qk_rope_head_dim": 64, "v_head_dim": 256, "eps": 1e-6}
            and models["glm4_moe_lite_bf16"]["norm"]["eps"] == 1e-5
            and models["glm4_moe_lite"]["params"].get("layout") == "half",
            f"/info glm4_moe_lite: Glm4MoeLiteConfig's MLA sizes and eps by default, V3's "
            f"half layout: {lite}")
    C.check(models["seed_oss"]["params"].get("base") == 1e7 and "bq" in models["seed_oss"]["weights"]
            and "bq" not in models["qwen2_moe_bf16"]["weights"]
            and "bq" in models["qwen2_moe"]["weights"],
            "/info: seed_oss biases by default, qwen2_moe biases by qkv_bias")


def _refused(C, root):
    def over(name, **keys):
        ckpt = fam_ckpt(name, 2699, layers=1, qk="vector")
        return ckpt, dict(ckpt.config, **keys)
    bad = [("qwen3_moe kv", *over("qwen3_moe", num_key_value_heads=3), ["num_key_value_heads"]),
           ("qwen2_moe qkv_bias", *over("qwen2_moe", qkv_bias="yes"), ["qkv_bias"]),
           ("glm4_moe use_qk_norm", *over("glm4_moe", use_qk_norm="no"), ["use_qk_norm"]),
           ("glm4_moe partial", *over("glm4_moe", partial_rotary_factor=3),
            ["partial_rotary_factor"]),
           ("seed_oss attention_bias", *over("seed_oss", attention_bias="true"),
            ["attention_bias"]),
           ("apertus rms_norm_eps", *over("apertus", rms_norm_eps="x"), ["rms_norm_eps"]),
           ("ernie4_5 use_bias", *over("ernie4_5", use_bias=1), ["use_bias"]),
           ("ernie4_5_moe head_dim", *over("ernie4_5_moe", head_dim=0), ["head_dim"]),
           ("exaone_moe layer_types", *over("exaone_moe", layer_types=["global_attention"]),
            ["layer_types[0]", "global_attention"]),
           ("arcee heads", *over("arcee", num_attention_heads="4"), ["num_attention_heads"]),
           ("afmoe mup_enabled", *over("afmoe", mup_enabled="yes"), ["mup_enabled"]),
           ("afmoe global_attn_every_n_layers", *over("afmoe", global_attn_every_n_layers=0),
            ["global_attn_every_n_layers"])]
    ac.refused(C, root, "fam", [(label, ckpt, want + ["config.json"], cfg, 0)
                                for label, ckpt, cfg, want in bad])


def family_checks(root, C):
    ac.serve(C, root, "fam", _cases(), RNG, _info)
    ac.both_forms(C, root, "fam", _cases(), RNG)
    _refused(C, root)
