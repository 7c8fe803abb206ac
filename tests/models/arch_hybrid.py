"""Hybrid stacks (attention layers beside linear-attention, convolution,
Mamba or MLP blocks): LFM2 / LFM2-MoE (layer_types, else full_attn_idxs;
operator_norm, q/k RMSNorm per head), Granite 4.0-H (granitemoehybrid:
layer_types or layers_block_type in the legacy mamba / attention names,
NoPE unless position_embedding_type is "rope", Granite's multipliers),
Nemotron-H (hybrid_override_pattern or layers_block_type, NoPE attention
mixers under backbone.) and Falcon-H1 (attention on every layer with
attention_in_multiplier, key_multiplier and embedding_multiplier). Their
attention layers are served against numpy restatements of the modeling
code; a chosen layer of another type is refused by name."""
import numpy as np

import arch_common as ac
import hf_ref

RNG = np.random.default_rng(2700)
LINEAR, FULL = "linear_attention", "full_attention"


def _cfg(model_type, layers=4, heads=4, kv=2, hd=8, **keys):
    cfg = {"architectures": ["ForCausalLM"], "model_type": model_type, "hidden_size": 32,
           "intermediate_size": 64, "num_attention_heads": heads, "num_key_value_heads": kv,
           "head_dim": hd, "num_hidden_layers": layers, "max_position_embeddings": 4096,
           "vocab_size": 50, "tie_word_embeddings": False}
    cfg.update(keys)
    return cfg


# ------------------------------------------------------------------ LFM2
LFM2_NAMES = (("input_layernorm", "operator_norm"), ("self_attn.q_norm", "self_attn.q_layernorm"),
              ("self_attn.k_norm", "self_attn.k_layernorm"), ("o_proj", "out_proj"),
              ("mixer.in_proj", "conv.in_proj"))


def lfm2_ckpt(seed, dtype, attn, model_type="lfm2", **keys):
    """LFM2-1.2B's keys (norm_eps, rope_theta 1e6, conv_L_cache,
    full_attn_idxs or layer_types) and tensor names (operator_norm,
    self_attn.q_layernorm / k_layernorm / out_proj, conv.in_proj)."""
    keys = dict({"norm_eps": 1e-5, "rope_theta": 1000000.0, "conv_L_cache": 3,
                 "conv_bias": False, "block_dim": 32}, **keys)
    cfg = _cfg(model_type, **keys)
    return ac.decoder_ckpt(cfg, seed, dtype, "model.", 4, 32, 4, 2, 8, qk="vector",
                           attn_layers=attn, rename=LFM2_NAMES)


def lfm2(cfg, w, x, pos, layer, prefix, **_):
    """Lfm2DecoderLayer: operator_norm (Lfm2RMSNorm, norm_eps) before
    Lfm2Attention: q_layernorm(q_proj(z) per head), k_layernorm(k_proj(z)),
    v_proj (no biases), rotate_half over the whole head, rope_theta
    default 1e6."""
    return ac.attention(cfg, w, x, pos, layer, prefix, ac.heads_of(cfg), 1e-5, False,
                        qk_norm=("q_layernorm", "k_layernorm"), rope=(1e6,),
                        norm="operator_norm", eps_key="norm_eps")


# -------------------------------------------------------------- Granite 4.0-H
def granite_h_ckpt(seed, dtype, attn, **keys):
    """granite-4.0-h-tiny's keys: layer_types (layers_block_type in older
    configs), position_embedding_type, attention_multiplier,
    embedding_multiplier, residual_multiplier, mamba_* keys."""
    keys = dict({"embedding_multiplier": 12.0}, **keys)
    cfg = _cfg("granitemoehybrid", rms_norm_eps=0.5, attention_multiplier=0.0078125,
               residual_multiplier=0.22, logits_scaling=6.0, mamba_n_heads=8,
               mamba_d_state=16, rope_theta=10000.0, **keys)
    return ac.decoder_ckpt(cfg, seed, dtype, "model.", 4, 32, 4, 2, 8, attn_layers=attn,
                           rename=(("mixer.in_proj", "mamba.in_proj"),))


def granite_h(cfg, w, x, pos, layer, prefix, from_ids=False, dtype="F32"):
    """GraniteMoeHybridModel: inputs_embeds * embedding_multiplier (token
    ids' and given ones; a Python float: hf_ref.times_python_float);
    rotary_emb only when position_embedding_type == "rope" (else
    position_embeddings None: NoPE); the decoder layer's input_layernorm
    (RMSNorm, rms_norm_eps), GraniteMoeHybridAttention: q/k/v_proj
    (attention_bias), scaling = attention_multiplier."""
    if layer == 0:
        x = hf_ref.times_python_float(x, cfg.get("embedding_multiplier", 1.0), dtype, from_ids)
    rope = (10000.0,) if cfg.get("position_embedding_type") == "rope" else None
    return ac.attention(cfg, w, x, pos, layer, prefix, ac.heads_of(cfg), 1e-6,
                        cfg.get("attention_bias", False), rope=rope,
                        scale=cfg.get("attention_multiplier", 1.0))


# ---------------------------------------------------------------- Nemotron-H
NEMOTRON_NAMES = (("embed_tokens", "embeddings"), ("input_layernorm", "norm"),
                  ("self_attn.", "mixer."), ("mixer.in_proj", "mixer.in_proj"))


def nemotron_ckpt(seed, dtype, prefix, attn, heads=4, kv=2, hd=8, **keys):
    """NVIDIA-Nemotron-Nano-9B-v2's keys (hybrid_override_pattern,
    layer_norm_epsilon, head_dim, mamba_* keys) and tensor names
    (backbone.embeddings, backbone.layers.L.norm, .mixer.q/k/v/o_proj)."""
    cfg = _cfg("nemotron_h", heads=heads, kv=kv, hd=hd, layer_norm_epsilon=1e-5,
               mamba_num_heads=8, mamba_head_dim=8, ssm_state_size=16, **keys)
    return ac.decoder_ckpt(cfg, seed, dtype, prefix, 4, 32, heads, kv or 8, hd or 128,
                           attn_layers=attn, rename=NEMOTRON_NAMES)


def nemotron_h(cfg, w, x, pos, layer, prefix, **_):
    """NemotronHBlock: norm (RMSNorm, layer_norm_epsilon) then the mixer;
    NemotronHAttention: q/k/v_proj (attention_bias), no rotary embedding
    (NoPE), head_dim default 128, num_key_value_heads 8."""
    w = {k.replace(".mixer.", ".self_attn.").replace(f"layers.{layer}.norm.",
                                                     f"layers.{layer}.input_layernorm."): v
         for k, v in w.items()}
    return ac.attention(cfg, w, x, pos, layer, prefix, ac.heads_of(cfg, 8, hd_default=128),
                        1e-5, cfg.get("attention_bias", False), eps_key="layer_norm_epsilon")


# ----------------------------------------------------------------- Falcon-H1
def falcon_h1_ckpt(seed, dtype, bias, **keys):
    """Falcon-H1-1.5B's keys (attention_in_multiplier, key_multiplier,
    embedding_multiplier, ssm_* and mlp multipliers, rope_theta)."""
    keys = dict({"rms_norm_eps": 1e-5, "rope_theta": 1e11, "attention_bias": bias,
                 "ssm_multipliers": [0.3, 0.2, 0.1, 0.05, 0.1], "mlp_multipliers": [0.8, 0.4]},
                **keys)
    cfg = _cfg("falcon_h1", **keys)
    return ac.decoder_ckpt(cfg, seed, dtype, "model.", 2, 32, 4, 2, 8, bias=bias,
                           extra=[(f"model.layers.{L}.mamba.in_proj.weight", (64, 32))
                                  for L in range(2)])


def falcon_h1(cfg, w, x, pos, layer, prefix, from_ids=False, dtype="F32"):
    """FalconH1Model: embed_tokens(input_ids) * embedding_multiplier, a
    Python float (hf_ref.times_python_float; given inputs_embeds are not
    scaled); FalconH1DecoderLayer: input_layernorm, then self_attn(z *
    attention_in_multiplier); FalconH1Attention: k_proj(.) * key_multiplier;
    rotate_half over the whole head."""
    if from_ids:
        x = hf_ref.times_python_float(x, cfg.get("embedding_multiplier", 1.0), dtype, True)
    return ac.attention(cfg, w, x, pos, layer, prefix, ac.heads_of(cfg, 8), 1e-5,
                        cfg.get("attention_bias", False), rope=(10000.0,),
                        in_scale=cfg.get("attention_in_multiplier", 1.0),
                        k_scale=cfg.get("key_multiplier", 1.0))


# ----------------------------------------------------------------- cases
def _cases():
    lf = lfm2_ckpt(2701, "F32", {0, 2}, layer_types=[FULL, "conv", FULL, "conv"])
    lfm = lfm2_ckpt(2702, "BF16", {0, 3}, model_type="lfm2_moe", full_attn_idxs=[0, 3],
                    rope_theta=None, num_experts=2)
    gh = granite_h_ckpt(2703, "F32", {0, 3}, layers_block_type=["attention", "mamba", "mamba",
                                                                  "attention"])
    ghr = granite_h_ckpt(2704, "BF16", {0, 2}, layer_types=[FULL, LINEAR, FULL, LINEAR],
                         position_embedding_type="rope", embedding_multiplier=0.7071)
    nh = nemotron_ckpt(2705, "F32", "backbone.", {0, 3}, hybrid_override_pattern="*M-*")
    nhb = nemotron_ckpt(2706, "BF16", "model.", {0, 3}, heads=8, kv=None, hd=None,
                        layers_block_type=[FULL, "moe", LINEAR, FULL])
    fh = falcon_h1_ckpt(2707, "F32", True, attention_in_multiplier=0.5, key_multiplier=0.3,
                        embedding_multiplier=5.65)
    # an embedding multiplier inexact in bfloat16: the table's product is rounded to
    # bfloat16 with the multiplier in float32, as torch >= 2 computes it
    fhb = falcon_h1_ckpt(2708, "BF16", False, key_multiplier=2.0, embedding_multiplier=5.65,
                         rope_theta=None)
    return {
        "lfm2": (lf, lfm2, 0, "model.", None), "lfm2_l2": (lf, lfm2, 2, "model.", None),
        "lfm2_moe_bf16": (lfm, lfm2, 0, "model.", None, 2),
        "lfm2_moe_bf16_l3": (lfm, lfm2, 3, "model.", None, 2),
        "granite_h": (gh, granite_h, 0, "model.", None),
        "granite_h_l3": (gh, granite_h, 3, "model.", None),
        "granite_h_rope_bf16": (ghr, granite_h, 0, "model.", None),
        "granite_h_rope_bf16_l2": (ghr, granite_h, 2, "model.", None),
        "nemotron_h": (nh, nemotron_h, 0, "backbone.", None),
        "nemotron_h_l3": (nh, nemotron_h, 3, "backbone.", None),
        "nemotron_h_bf16": (nhb, nemotron_h, 0, "model.", None, 2),
        "nemotron_h_bf16_l3": (nhb, nemotron_h, 3, "model.", None, 2),
        "falcon_h1": (fh, falcon_h1, 0, "model.", None),
        "falcon_h1_l1": (fh, falcon_h1, 1, "model.", None),
        "falcon_h1_bf16": (fhb, falcon_h1, 0, "model.", None),
        "falcon_h1_bf16_l1": (fhb, falcon_h1, 1, "model.", None),
    }


def _info(C, models):
    C.check(models["granite_h"]["scheme"] == "none" and models["granite_h_l3"]["scheme"] == "none"
            and models["granite_h_rope_bf16"]["scheme"] == "rope"
            and models["granite_h"]["params"].get("score_scale") == 0.0078125,
            "/info granitemoehybrid: NoPE unless position_embedding_type rope, score scale")
    C.check(models["nemotron_h"]["scheme"] == "none"
            and models["nemotron_h_bf16"]["head_dim"] == 128
            and models["nemotron_h_bf16"]["kv_heads"] == 8,
            "/info nemotron_h: NoPE, head_dim 128 and 8 kv heads by default")
    C.check(models["lfm2"]["params"].get("base") == 1000000.0
            and "q_norm_weight" in models["lfm2_moe_bf16"]["weights"]
            and models["lfm2"]["norm"]["eps"] == 1e-5,
            "/info lfm2: base 1e6, q/k norms, norm_eps")
    C.check(models["falcon_h1"]["params"].get("base") == 1e11
            and "bk" in models["falcon_h1"]["weights"],
            "/info falcon_h1: rope_theta, biases")


def _refused(C, root):
    lf = lfm2_ckpt(2711, "F32", {0, 2}, layer_types=[FULL, "conv", FULL, "conv"])
    lfi = lfm2_ckpt(2712, "F32", {0, 2}, full_attn_idxs=[0, 2])
    gh = granite_h_ckpt(2713, "F32", {0, 3}, layer_types=["attention", "mamba", "mamba",
                                                            "attention"])
    nh = nemotron_ckpt(2714, "F32", "backbone.", {0, 3}, hybrid_override_pattern="*M-*")
    no_types = {k: v for k, v in gh.config.items() if k != "layer_types"}
    no_pattern = {k: v for k, v in nh.config.items() if k != "hybrid_override_pattern"}
    msg = ["is linear_attention: it has no positional encoding or Q/K/V"]
    bad = [("lfm2 conv layer", lf, ["layer 1"] + msg, None, 1),
           ("lfm2 layer outside full_attn_idxs", lfi, ["layer 3"] + msg, None, 3),
           ("lfm2 full_attn_idxs a string", lfi, ["full_attn_idxs"],
            dict(lfi.config, full_attn_idxs="0,2"), 0),
           ("granite-h mamba layer", gh, ["layer 1"] + msg, None, 1),
           ("granite-h without layer types: every layer mamba", gh, ["layer 0"] + msg,
            no_types, 0),
           ("granite-h layer_types entry unknown", gh, ["layer_types[2]", "ssm"],
            dict(gh.config, layer_types=["attention", "mamba", "ssm", "attention"]), 0),
           ("nemotron_h mamba block", nh, ["layer 1"] + msg, None, 1),
           ("nemotron_h mlp block", nh, ["layer 2 is mlp"], None, 2),
           ("nemotron_h pattern character", nh, ["hybrid_override_pattern[1]", "'X'"],
            dict(nh.config, hybrid_override_pattern="*X-*"), 0),
           ("nemotron_h pattern length", nh, ["hybrid_override_pattern", "num_hidden_layers"],
            dict(nh.config, hybrid_override_pattern="*M"), 0),
           ("nemotron_h no pattern", nh, ["missing key 'hybrid_override_pattern'"],
            no_pattern, 0),
           ("falcon_h1 key_multiplier a string", falcon_h1_ckpt(2715, "F32", False), ["key_multiplier"],
            dict(falcon_h1_ckpt(2715, "F32", False).config, key_multiplier="0.3"), 0)]
    ac.refused(C, root, "hyb", bad)


def hybrid_checks(root, C):
    ac.serve(C, root, "hyb", _cases(), RNG, _info)
    ac.both_forms(C, root, "hyb", _cases(), RNG)
    _refused(C, root)
