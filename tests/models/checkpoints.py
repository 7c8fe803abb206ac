"""Small random checkpoints with each architecture's real Hugging Face tensor
names, shapes and config keys, written as a model directory (config.json +
model.safetensors, or shards + model.safetensors.index.json).

Each builder returns a Checkpoint: the config dict, the tensors as
(name, dtype, float32 array), and `weights()`: the float64 values a reader
of the file gets back, keyed by tensor name, for the references. Tensors a
layer does not need (MLPs, output projections, GPT-2's attn.bias mask,
BERT's position_ids) are included so the loader must skip them.
"""
import json
import os

import numpy as np

import st_write


class Checkpoint:
    def __init__(self, config, tensors):
        self.config = config
        self.tensors = tensors  # list of (name, dtype, array)

    def weights(self):
        return {n: st_write.stored(a, dt) for n, dt, a in self.tensors if dt in ("F32", "F16", "BF16")}

    def write(self, directory, shards=0, config=None):
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, "config.json"), "w") as fh:
            json.dump(self.config if config is None else config, fh, indent=1)
        if shards:
            st_write.write_sharded(directory, self.tensors, shards)
        else:
            st_write.write(os.path.join(directory, "model.safetensors"), self.tensors)
        return directory


class Gen:
    """Random float32 arrays of a fixed seed, stored with one dtype."""

    def __init__(self, seed, dtype):
        self.rng = np.random.default_rng(seed)
        self.dtype = dtype
        self.out = []

    def add(self, name, shape, scale=0.3, center=0.0, dtype=None):
        a = (center + scale * self.rng.standard_normal(shape)).astype(np.float32)
        self.out.append((name, dtype or self.dtype, a))

    def raw(self, name, dtype, array):
        self.out.append((name, dtype, array))


def llama(seed=1, dtype="F32", prefix="model.", layers=2, d=32, heads=4, kv_heads=2,
          head_dim=None, vocab=50, bias=False, model_type="llama", **extra):
    hd = head_dim or d // heads
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": model_type, "hidden_size": d,
           "intermediate_size": 2 * d, "num_attention_heads": heads, "num_key_value_heads": kv_heads,
           "num_hidden_layers": layers, "rms_norm_eps": 1e-5, "max_position_embeddings": 64,
           "rope_theta": 10000.0, "vocab_size": vocab, "hidden_act": "silu",
           "tie_word_embeddings": False, "torch_dtype": "float32", "attention_bias": bias}
    if head_dim:
        cfg["head_dim"] = head_dim
    cfg.update(extra)
    g = Gen(seed, dtype)
    g.add(prefix + "embed_tokens.weight", (vocab, d), 1.0)
    for L in range(layers):
        p = f"{prefix}layers.{L}."
        g.add(p + "input_layernorm.weight", (d,), 0.1, 1.0)
        g.add(p + "post_attention_layernorm.weight", (d,), 0.1, 1.0)
        for n, out in (("q", heads * hd), ("k", kv_heads * hd), ("v", kv_heads * hd)):
            g.add(p + f"self_attn.{n}_proj.weight", (out, d))
            if bias:
                g.add(p + f"self_attn.{n}_proj.bias", (out,), 0.2)
        g.add(p + "self_attn.o_proj.weight", (d, heads * hd))
        g.add(p + "mlp.gate_proj.weight", (2 * d, d))
        g.add(p + "mlp.up_proj.weight", (2 * d, d))
        g.add(p + "mlp.down_proj.weight", (d, 2 * d))
    g.add(prefix + "norm.weight", (d,), 0.1, 1.0)
    g.add("lm_head.weight", (vocab, d))
    return Checkpoint(cfg, g.out)


def gpt2(seed=2, dtype="F32", prefix="", layers=2, d=24, heads=4, vocab=50, n_pos=40, **extra):
    cfg = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": d, "n_head": heads,
           "n_layer": layers, "n_positions": n_pos, "n_ctx": n_pos, "vocab_size": vocab,
           "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new",
           "scale_attn_weights": True}
    cfg.update(extra)
    g = Gen(seed, dtype)
    g.add(prefix + "wte.weight", (vocab, d), 1.0)
    g.add(prefix + "wpe.weight", (n_pos, d), 0.5)
    for L in range(layers):
        p = f"{prefix}h.{L}."
        g.add(p + "ln_1.weight", (d,), 0.1, 1.0)
        g.add(p + "ln_1.bias", (d,), 0.1)
        g.raw(p + "attn.bias", "U8", np.tril(np.ones((1, 1, n_pos, n_pos), np.uint8)))
        g.add(p + "attn.c_attn.weight", (d, 3 * d))
        g.add(p + "attn.c_attn.bias", (3 * d,), 0.2)
        g.add(p + "attn.c_proj.weight", (d, d))
        g.add(p + "attn.c_proj.bias", (d,))
        g.add(p + "ln_2.weight", (d,), 0.1, 1.0)
        g.add(p + "ln_2.bias", (d,), 0.1)
        g.add(p + "mlp.c_fc.weight", (d, 4 * d))
    g.add(prefix + "ln_f.weight", (d,), 0.1, 1.0)
    g.add(prefix + "ln_f.bias", (d,), 0.1)
    return Checkpoint(cfg, g.out)


def bert(seed=3, dtype="F32", prefix="bert.", layers=2, d=24, heads=3, vocab=50, n_pos=40,
         **extra):
    cfg = {"architectures": ["BertForMaskedLM"], "model_type": "bert", "hidden_size": d,
           "num_attention_heads": heads, "num_hidden_layers": layers, "intermediate_size": 2 * d,
           "max_position_embeddings": n_pos, "type_vocab_size": 2, "vocab_size": vocab,
           "layer_norm_eps": 1e-12, "position_embedding_type": "absolute", "hidden_act": "gelu"}
    cfg.update(extra)
    g = Gen(seed, dtype)
    e = prefix + "embeddings."
    g.add(e + "word_embeddings.weight", (vocab, d), 1.0)
    g.add(e + "position_embeddings.weight", (n_pos, d), 0.5)
    g.add(e + "token_type_embeddings.weight", (2, d), 0.5)
    g.add(e + "LayerNorm.weight", (d,), 0.1, 1.0)
    g.add(e + "LayerNorm.bias", (d,), 0.1)
    g.raw(e + "position_ids", "I64", np.arange(n_pos, dtype=np.int64)[None, :])
    for L in range(layers):
        p = f"{prefix}encoder.layer.{L}."
        for n in ("query", "key", "value"):
            g.add(p + f"attention.self.{n}.weight", (d, d))
            g.add(p + f"attention.self.{n}.bias", (d,), 0.2)
        g.add(p + "attention.output.dense.weight", (d, d))
        g.add(p + "attention.output.LayerNorm.weight", (d,), 0.1, 1.0)
        g.add(p + "attention.output.LayerNorm.bias", (d,), 0.1)
    g.add("cls.predictions.bias", (vocab,))
    return Checkpoint(cfg, g.out)


def roberta(seed=201, dtype="F32", prefix="roberta.", layers=2, d=24, heads=3, vocab=50,
            n_pos=42, model_type="roberta", **extra):
    """roberta-base / xlm-roberta-base's config keys and tensor names (small):
    pad_token_id 1, max_position_embeddings = positions + pad + 1, one token
    type, the lm_head of RobertaForMaskedLM."""
    arch = "XLMRobertaForMaskedLM" if model_type == "xlm-roberta" else "RobertaForMaskedLM"
    cfg = {"architectures": [arch], "model_type": model_type, "hidden_size": d,
           "num_attention_heads": heads, "num_hidden_layers": layers, "intermediate_size": 2 * d,
           "max_position_embeddings": n_pos, "type_vocab_size": 1, "vocab_size": vocab,
           "layer_norm_eps": 1e-05, "position_embedding_type": "absolute", "hidden_act": "gelu",
           "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2,
           "attention_probs_dropout_prob": 0.1, "hidden_dropout_prob": 0.1}
    cfg.update(extra)
    g = Gen(seed, dtype)
    e = prefix + "embeddings."
    g.add(e + "word_embeddings.weight", (vocab, d), 1.0)
    g.add(e + "position_embeddings.weight", (n_pos, d), 0.5)
    g.add(e + "token_type_embeddings.weight", (1, d), 0.5)
    g.add(e + "LayerNorm.weight", (d,), 0.1, 1.0)
    g.add(e + "LayerNorm.bias", (d,), 0.1)
    for L in range(layers):
        p = f"{prefix}encoder.layer.{L}."
        for n in ("query", "key", "value"):
            g.add(p + f"attention.self.{n}.weight", (d, d))
            g.add(p + f"attention.self.{n}.bias", (d,), 0.2)
        g.add(p + "attention.output.dense.weight", (d, d))
        g.add(p + "attention.output.LayerNorm.weight", (d,), 0.1, 1.0)
        g.add(p + "attention.output.LayerNorm.bias", (d,), 0.1)
    g.add("lm_head.dense.weight", (d, d))
    g.add("lm_head.bias", (vocab,))
    return Checkpoint(cfg, g.out)


def opt(seed=211, dtype="F32", prefix="model.decoder.", layers=2, d=32, heads=4, vocab=50,
        n_pos=40, **extra):
    """opt-125m's config keys and tensor names (OPTForCausalLM, small): an
    embed_positions table of max_position_embeddings + 2 rows."""
    cfg = {"architectures": ["OPTForCausalLM"], "model_type": "opt", "hidden_size": d,
           "num_attention_heads": heads, "num_hidden_layers": layers, "ffn_dim": 4 * d,
           "max_position_embeddings": n_pos, "vocab_size": vocab, "word_embed_proj_dim": d,
           "do_layer_norm_before": True, "activation_function": "relu", "pad_token_id": 1,
           "bos_token_id": 2, "eos_token_id": 2, "dropout": 0.1, "enable_bias": True,
           "layer_norm_elementwise_affine": True, "prefix": "</s>"}
    cfg.update(extra)
    g = Gen(seed, dtype)
    g.add(prefix + "embed_tokens.weight", (vocab, d), 1.0)
    g.add(prefix + "embed_positions.weight", (n_pos + 2, d), 0.5)
    for L in range(layers):
        p = f"{prefix}layers.{L}."
        for n in ("q", "k", "v", "out"):
            g.add(p + f"self_attn.{n}_proj.weight", (d, d))
            g.add(p + f"self_attn.{n}_proj.bias", (d,), 0.2)
        g.add(p + "self_attn_layer_norm.weight", (d,), 0.1, 1.0)
        g.add(p + "self_attn_layer_norm.bias", (d,), 0.1)
        g.add(p + "fc1.weight", (4 * d, d))
        g.add(p + "final_layer_norm.weight", (d,), 0.1, 1.0)
    g.add(prefix + "final_layer_norm.weight", (d,), 0.1, 1.0)
    g.add(prefix + "final_layer_norm.bias", (d,), 0.1)
    return Checkpoint(cfg, g.out)


def bloom(seed=4, dtype="F32", prefix="transformer.", layers=2, d=48, heads=6, vocab=50, **extra):
    cfg = {"architectures": ["BloomForCausalLM"], "model_type": "bloom", "n_embed": d,
           "n_head": heads, "n_layer": layers, "layer_norm_epsilon": 1e-5, "vocab_size": vocab,
           "apply_residual_connection_post_layernorm": False, "pretraining_tp": 1}
    cfg.update(extra)
    g = Gen(seed, dtype)
    g.add(prefix + "word_embeddings.weight", (vocab, d), 1.0)
    g.add(prefix + "word_embeddings_layernorm.weight", (d,), 0.1, 1.0)
    g.add(prefix + "word_embeddings_layernorm.bias", (d,), 0.1)
    for L in range(layers):
        p = f"{prefix}h.{L}."
        g.add(p + "input_layernorm.weight", (d,), 0.1, 1.0)
        g.add(p + "input_layernorm.bias", (d,), 0.1)
        g.add(p + "self_attention.query_key_value.weight", (3 * d, d))
        g.add(p + "self_attention.query_key_value.bias", (3 * d,), 0.2)
        g.add(p + "self_attention.dense.weight", (d, d))
        g.add(p + "mlp.dense_h_to_4h.weight", (4 * d, d))
    g.add(prefix + "ln_f.weight", (d,), 0.1, 1.0)
    return Checkpoint(cfg, g.out)


def t5(seed=5, dtype="F32", layers=2, d=20, heads=3, d_kv=6, vocab=50, buckets=16, max_dist=40,
       own_embed=False, **extra):
    cfg = {"architectures": ["T5ForConditionalGeneration"], "model_type": "t5", "d_model": d,
           "d_kv": d_kv, "num_heads": heads, "num_layers": layers, "num_decoder_layers": layers,
           "d_ff": 2 * d, "relative_attention_num_buckets": buckets,
           "relative_attention_max_distance": max_dist, "layer_norm_epsilon": 1e-6,
           "vocab_size": vocab, "feed_forward_proj": "relu", "is_encoder_decoder": True}
    cfg.update(extra)
    g = Gen(seed, dtype)
    g.add("shared.weight", (vocab, d), 1.0)
    if own_embed:
        g.add("encoder.embed_tokens.weight", (vocab, d), 1.0)
    inner = heads * d_kv
    for L in range(layers):
        p = f"encoder.block.{L}.layer.0."
        g.add(p + "layer_norm.weight", (d,), 0.1, 1.0)
        for n in "qkvo":
            g.add(p + f"SelfAttention.{n}.weight", (inner, d) if n != "o" else (d, inner))
        if L == 0:
            g.add(p + "SelfAttention.relative_attention_bias.weight", (buckets, heads), 1.0)
        g.add(f"encoder.block.{L}.layer.1.DenseReluDense.wi.weight", (2 * d, d))
        g.add(f"decoder.block.{L}.layer.0.SelfAttention.q.weight", (inner, d))
    g.add("decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight", (buckets, heads))
    g.add("encoder.final_layer_norm.weight", (d,), 0.1, 1.0)
    return Checkpoint(cfg, g.out)


def posenc_format(seed=6, d=16, heads=4, kv_heads=2):
    """posenc's own format: the inline-model keys, the contract's tensor names."""
    hd = d // heads
    cfg = {"d_model": d, "heads": heads, "kv_heads": kv_heads, "scheme": "rope",
           "params": {"base": 500.0}, "norm": {"type": "rmsnorm", "eps": 1e-5}}
    g = Gen(seed, "F32")
    g.add("wq", (d, heads * hd))
    g.add("wk", (d, kv_heads * hd))
    g.add("wv", (d, kv_heads * hd))
    g.add("norm_weight", (d,), 0.1, 1.0)
    g.add("token_embedding", (30, d), 1.0)
    g.add("unrelated.extra", (3,))
    return Checkpoint(cfg, g.out)


def gpt_neox(seed=8, dtype="F32", prefix="gpt_neox.", layers=2, d=64, heads=4, vocab=50, **extra):
    """Pythia-70m's config keys and tensor names (GPTNeoXForCausalLM)."""
    cfg = {"architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox", "hidden_size": d,
           "num_attention_heads": heads, "num_hidden_layers": layers, "intermediate_size": 4 * d,
           "layer_norm_eps": 1e-5, "max_position_embeddings": 2048, "rotary_emb_base": 10000,
           "rotary_pct": 0.25, "use_parallel_residual": True, "vocab_size": vocab,
           "hidden_act": "gelu", "tie_word_embeddings": False, "bos_token_id": 0,
           "eos_token_id": 0, "initializer_range": 0.02, "use_cache": True,
           "torch_dtype": "float16", "transformers_version": "4.24.0"}
    cfg.update(extra)
    g = Gen(seed, dtype)
    g.add(prefix + "embed_in.weight", (vocab, d), 1.0)
    hd = d // heads
    for L in range(layers):
        p = f"{prefix}layers.{L}."
        g.add(p + "input_layernorm.weight", (d,), 0.1, 1.0)
        g.add(p + "input_layernorm.bias", (d,), 0.1)
        g.add(p + "post_attention_layernorm.weight", (d,), 0.1, 1.0)
        g.add(p + "post_attention_layernorm.bias", (d,), 0.1)
        # buffers older checkpoints carry (stored in the checkpoint's dtype)
        g.raw(p + "attention.bias", "U8", np.tril(np.ones((1, 1, 16, 16), np.uint8)))
        g.raw(p + "attention.masked_bias", dtype, np.array(-1e4, np.float32))
        g.raw(p + "attention.rotary_emb.inv_freq", dtype,
              (1.0 / 10000 ** (np.arange(0, hd // 4, 2) / (hd // 4))).astype(np.float32))
        g.add(p + "attention.query_key_value.weight", (3 * d, d))
        g.add(p + "attention.query_key_value.bias", (3 * d,), 0.2)
        g.add(p + "attention.dense.weight", (d, d))
        g.add(p + "attention.dense.bias", (d,))
        g.add(p + "mlp.dense_h_to_4h.weight", (4 * d, d))
        g.add(p + "mlp.dense_4h_to_h.weight", (d, 4 * d))
    g.add(prefix + "final_layer_norm.weight", (d,), 0.1, 1.0)
    g.add("embed_out.weight", (vocab, d))
    return Checkpoint(cfg, g.out)


def phi(seed=9, dtype="F32", prefix="model.", layers=2, d=40, heads=4, kv_heads=None, vocab=50,
        **extra):
    """phi-2's config keys and tensor names (PhiForCausalLM)."""
    kv_heads = kv_heads or heads
    cfg = {"architectures": ["PhiForCausalLM"], "model_type": "phi", "hidden_size": d,
           "num_attention_heads": heads, "num_key_value_heads": kv_heads,
           "num_hidden_layers": layers, "intermediate_size": 4 * d, "layer_norm_eps": 1e-5,
           "max_position_embeddings": 2048, "partial_rotary_factor": 0.4, "qk_layernorm": False,
           "rope_scaling": None, "rope_theta": 10000.0, "vocab_size": vocab,
           "hidden_act": "gelu_new", "attention_dropout": 0.0, "embd_pdrop": 0.0,
           "resid_pdrop": 0.1, "tie_word_embeddings": False, "torch_dtype": "float16"}
    cfg.update(extra)
    g = Gen(seed, dtype)
    g.add(prefix + "embed_tokens.weight", (vocab, d), 1.0)
    for L in range(layers):
        p = f"{prefix}layers.{L}."
        g.add(p + "input_layernorm.weight", (d,), 0.1, 1.0)
        g.add(p + "input_layernorm.bias", (d,), 0.1)
        for n, out in (("q", d), ("k", kv_heads * d // heads), ("v", kv_heads * d // heads)):
            g.add(p + f"self_attn.{n}_proj.weight", (out, d))
            g.add(p + f"self_attn.{n}_proj.bias", (out,), 0.2)
        g.add(p + "self_attn.dense.weight", (d, d))
        g.add(p + "self_attn.dense.bias", (d,))
        g.add(p + "mlp.fc1.weight", (4 * d, d))
        g.add(p + "mlp.fc1.bias", (4 * d,))
        g.add(p + "mlp.fc2.weight", (d, 4 * d))
    g.add(prefix + "final_layernorm.weight", (d,), 0.1, 1.0)
    g.add(prefix + "final_layernorm.bias", (d,), 0.1)
    g.add("lm_head.weight", (vocab, d))
    g.add("lm_head.bias", (vocab,))
    return Checkpoint(cfg, g.out)


def phi3(seed=10, dtype="F32", prefix="model.", layers=2, d=32, heads=4, kv_heads=4, vocab=50,
         partial=None, **extra):
    """Phi-3-mini-128k's config keys and tensor names (Phi3ForCausalLM):
    longrope with short/long factors and original_max_position_embeddings at
    the top level. partial: Phi-4-mini's partial_rotary_factor."""
    hd = d // heads
    rot = int(hd * (partial or 1.0))
    rng = np.random.default_rng(seed + 1000)
    cfg = {"architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": d,
           "num_attention_heads": heads, "num_key_value_heads": kv_heads,
           "num_hidden_layers": layers, "intermediate_size": 2 * d, "rms_norm_eps": 1e-5,
           "max_position_embeddings": 128, "original_max_position_embeddings": 16,
           "rope_theta": 10000.0, "attention_bias": False, "sliding_window": 262144,
           "rope_scaling": {"type": "longrope",
                            "short_factor": [float(v) for v in 1 + rng.random(rot // 2)],
                            "long_factor": [float(v) for v in 1 + 8 * rng.random(rot // 2)]},
           "vocab_size": vocab, "hidden_act": "silu", "tie_word_embeddings": False,
           "pad_token_id": 0, "torch_dtype": "bfloat16"}
    if partial:
        cfg["partial_rotary_factor"] = partial
    cfg.update(extra)
    g = Gen(seed, dtype)
    g.add(prefix + "embed_tokens.weight", (vocab, d), 1.0)
    for L in range(layers):
        p = f"{prefix}layers.{L}."
        g.add(p + "input_layernorm.weight", (d,), 0.1, 1.0)
        g.add(p + "post_attention_layernorm.weight", (d,), 0.1, 1.0)
        g.add(p + "self_attn.qkv_proj.weight", (heads * hd + 2 * kv_heads * hd, d))
        g.add(p + "self_attn.o_proj.weight", (d, heads * hd))
        g.add(p + "mlp.gate_up_proj.weight", (4 * d, d))
        g.add(p + "mlp.down_proj.weight", (d, 2 * d))
    g.add(prefix + "norm.weight", (d,), 0.1, 1.0)
    g.add("lm_head.weight", (vocab, d))
    return Checkpoint(cfg, g.out)


def starcoder2(seed=14, dtype="F32", prefix="model.", layers=2, d=48, heads=6, kv_heads=2,
               vocab=50, bias=True, **extra):
    """starcoder2-3b's config keys and tensor names (Starcoder2ForCausalLM)."""
    hd = d // heads
    cfg = {"architectures": ["Starcoder2ForCausalLM"], "model_type": "starcoder2",
           "hidden_size": d, "num_attention_heads": heads, "num_key_value_heads": kv_heads,
           "num_hidden_layers": layers, "intermediate_size": 4 * d, "norm_epsilon": 1e-5,
           "max_position_embeddings": 16384, "rope_theta": 999999.4420358813,
           "sliding_window": 4096, "use_bias": bias, "vocab_size": vocab,
           "hidden_act": "gelu_pytorch_tanh", "attention_dropout": 0.1,
           "residual_dropout": 0.1, "embedding_dropout": 0.1, "mlp_type": "default",
           "torch_dtype": "bfloat16"}
    cfg.update(extra)
    g = Gen(seed, dtype)
    g.add(prefix + "embed_tokens.weight", (vocab, d), 1.0)
    for L in range(layers):
        p = f"{prefix}layers.{L}."
        g.add(p + "input_layernorm.weight", (d,), 0.1, 1.0)
        g.add(p + "input_layernorm.bias", (d,), 0.1)
        g.add(p + "post_attention_layernorm.weight", (d,), 0.1, 1.0)
        for n, out in (("q", heads * hd), ("k", kv_heads * hd), ("v", kv_heads * hd)):
            g.add(p + f"self_attn.{n}_proj.weight", (out, d))
            if bias:
                g.add(p + f"self_attn.{n}_proj.bias", (out,), 0.2)
        g.add(p + "self_attn.o_proj.weight", (d, heads * hd))
        g.add(p + "mlp.c_fc.weight", (4 * d, d))
        g.add(p + "mlp.c_proj.weight", (d, 4 * d))
    g.add(prefix + "norm.weight", (d,), 0.1, 1.0)
    g.add(prefix + "norm.bias", (d,), 0.1)
    return Checkpoint(cfg, g.out)


def gemma(seed=15, dtype="F32", prefix="model.", layers=2, d=32, heads=4, kv_heads=1,
          head_dim=16, vocab=50, **extra):
    """gemma-2b's config keys and tensor names (GemmaForCausalLM): head_dim
    from the config (not hidden/heads), multi-query, norms stored as w of
    x*(1 + w)."""
    cfg = {"architectures": ["GemmaForCausalLM"], "model_type": "gemma", "hidden_size": d,
           "num_attention_heads": heads, "num_key_value_heads": kv_heads, "head_dim": head_dim,
           "num_hidden_layers": layers, "intermediate_size": 4 * d, "rms_norm_eps": 1e-6,
           "max_position_embeddings": 8192, "rope_theta": 10000.0, "rope_scaling": None,
           "attention_bias": False, "attention_dropout": 0.0, "hidden_act": "gelu",
           "vocab_size": vocab, "pad_token_id": 0, "bos_token_id": 2, "eos_token_id": 1,
           "torch_dtype": "bfloat16"}
    cfg.update(extra)
    g = Gen(seed, dtype)
    g.add(prefix + "embed_tokens.weight", (vocab, d), 0.05)
    for L in range(layers):
        p = f"{prefix}layers.{L}."
        g.add(p + "input_layernorm.weight", (d,), 0.3)
        g.add(p + "post_attention_layernorm.weight", (d,), 0.3)
        for n, out in (("q", heads * head_dim), ("k", kv_heads * head_dim),
                       ("v", kv_heads * head_dim)):
            g.add(p + f"self_attn.{n}_proj.weight", (out, d))
        g.add(p + "self_attn.o_proj.weight", (d, heads * head_dim))
        g.add(p + "mlp.gate_proj.weight", (4 * d, d))
        g.add(p + "mlp.up_proj.weight", (4 * d, d))
        g.add(p + "mlp.down_proj.weight", (d, 4 * d))
    g.add(prefix + "norm.weight", (d,), 0.3)
    return Checkpoint(cfg, g.out)


def falcon(seed=16, dtype="F32", prefix="transformer.", layers=2, d=48, heads=6, kv_heads=None,
           new_arch=False, multi_query=True, parallel_attn=True, bias=False, vocab=50, **extra):
    """falcon-7b's (multi_query) or, with new_arch, falcon-40b's
    (new_decoder_architecture, num_kv_heads groups) config keys and tensor
    names (FalconForCausalLM)."""
    hd = d // heads
    cfg = {"architectures": ["FalconForCausalLM"], "model_type": "falcon", "hidden_size": d,
           "num_attention_heads": heads, "num_hidden_layers": layers,
           "layer_norm_epsilon": 1e-5, "alibi": False, "bias": bias,
           "new_decoder_architecture": new_arch, "multi_query": multi_query,
           "parallel_attn": parallel_attn, "apply_residual_connection_post_layernorm": False,
           "attention_dropout": 0.0, "hidden_dropout": 0.0, "bos_token_id": 11,
           "eos_token_id": 11, "initializer_range": 0.02, "use_cache": True,
           "vocab_size": vocab, "torch_dtype": "bfloat16", "transformers_version": "4.27.4"}
    if kv_heads is not None:
        cfg["num_kv_heads"] = kv_heads
    cfg.update(extra)
    kv = kv_heads or heads
    rows = (2 * kv + heads) * hd if new_arch else d + 2 * hd if multi_query else 3 * d
    num_ln = cfg.get("num_ln_in_parallel_attn") or (2 if new_arch else None)
    g = Gen(seed, dtype)
    g.add(prefix + "word_embeddings.weight", (vocab, d), 1.0)
    for L in range(layers):
        p = f"{prefix}h.{L}."
        norms = ("ln_attn", "ln_mlp") if parallel_attn and num_ln == 2 else \
            ("input_layernorm",) if parallel_attn else ("input_layernorm", "post_attention_layernorm")
        for n in norms:
            g.add(p + n + ".weight", (d,), 0.1, 1.0)
            g.add(p + n + ".bias", (d,), 0.1)
        g.add(p + "self_attention.query_key_value.weight", (rows, d))
        if bias:
            g.add(p + "self_attention.query_key_value.bias", (rows,), 0.2)
        g.add(p + "self_attention.dense.weight", (d, d))
        g.add(p + "mlp.dense_h_to_4h.weight", (4 * d, d))
        g.add(p + "mlp.dense_4h_to_h.weight", (d, 4 * d))
    g.add(prefix + "ln_f.weight", (d,), 0.1, 1.0)
    g.add(prefix + "ln_f.bias", (d,), 0.1)
    return Checkpoint(cfg, g.out)


def mpt(seed=17, dtype="F32", prefix="transformer.", layers=2, d=48, heads=6, vocab=50,
        attn=None, **extra):
    """mpt-7b's config keys (the nested attn_config included) and tensor
    names (MptForCausalLM)."""
    ac = {"alibi": True, "alibi_bias_max": 8, "attn_impl": "torch", "attn_pdrop": 0,
          "attn_type": "multihead_attention", "attn_uses_sequence_id": False, "clip_qkv": None,
          "prefix_lm": False, "qk_ln": False, "softmax_scale": None}
    ac.update(attn or {})
    cfg = {"architectures": ["MPTForCausalLM"], "model_type": "mpt", "d_model": d,
           "n_heads": heads, "n_layers": layers, "expansion_ratio": 4, "max_seq_len": 2048,
           "attn_config": ac, "no_bias": True, "norm_type": "low_precision_layernorm",
           "emb_pdrop": 0, "resid_pdrop": 0, "embedding_fraction": 1.0, "learned_pos_emb": True,
           "logit_scale": None, "use_cache": False, "verbose": 0, "vocab_size": vocab,
           "torch_dtype": "bfloat16", "transformers_version": "4.28.1"}
    cfg.update(extra)
    g = Gen(seed, dtype)
    g.add(prefix + "wte.weight", (vocab, d), 1.0)
    for L in range(layers):
        p = f"{prefix}blocks.{L}."
        g.add(p + "norm_1.weight", (d,), 0.1, 1.0)
        g.add(p + "attn.Wqkv.weight", (3 * d, d))
        g.add(p + "attn.out_proj.weight", (d, d))
        g.add(p + "norm_2.weight", (d,), 0.1, 1.0)
        g.add(p + "ffn.up_proj.weight", (4 * d, d))
        g.add(p + "ffn.down_proj.weight", (d, 4 * d))
    g.add(prefix + "norm_f.weight", (d,), 0.1, 1.0)
    return Checkpoint(cfg, g.out)


def qwen3(seed=16, dtype="F32", prefix="model.", layers=2, d=32, heads=4, kv_heads=2,
          head_dim=16, vocab=50, bias=False, **extra):
    """Qwen3-0.6B's config keys and tensor names (Qwen3ForCausalLM): head_dim
    from the config (128 there, not hidden/heads), q_norm/k_norm of
    [head_dim], tied embeddings (no lm_head)."""
    cfg = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": d,
           "intermediate_size": 3 * d, "num_attention_heads": heads,
           "num_key_value_heads": kv_heads, "head_dim": head_dim, "num_hidden_layers": layers,
           "rms_norm_eps": 1e-6, "max_position_embeddings": 40960, "rope_theta": 1000000,
           "rope_scaling": None, "attention_bias": bias, "attention_dropout": 0.0,
           "hidden_act": "silu", "sliding_window": None, "use_sliding_window": False,
           "max_window_layers": layers, "tie_word_embeddings": True, "vocab_size": vocab,
           "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "bfloat16"}
    cfg.update(extra)
    g = Gen(seed, dtype)
    g.add(prefix + "embed_tokens.weight", (vocab, d), 1.0)
    for L in range(layers):
        p = f"{prefix}layers.{L}."
        g.add(p + "input_layernorm.weight", (d,), 0.1, 1.0)
        g.add(p + "post_attention_layernorm.weight", (d,), 0.1, 1.0)
        for n, out in (("q", heads * head_dim), ("k", kv_heads * head_dim),
                       ("v", kv_heads * head_dim)):
            g.add(p + f"self_attn.{n}_proj.weight", (out, d))
            if bias:
                g.add(p + f"self_attn.{n}_proj.bias", (out,), 0.2)
        g.add(p + "self_attn.q_norm.weight", (head_dim,), 0.3, 1.0)
        g.add(p + "self_attn.k_norm.weight", (head_dim,), 0.3, 1.0)
        g.add(p + "self_attn.o_proj.weight", (d, heads * head_dim))
        g.add(p + "mlp.gate_proj.weight", (3 * d, d))
        g.add(p + "mlp.up_proj.weight", (3 * d, d))
        g.add(p + "mlp.down_proj.weight", (d, 3 * d))
    g.add(prefix + "norm.weight", (d,), 0.1, 1.0)
    return Checkpoint(cfg, g.out)


def olmo2(seed=17, dtype="F32", prefix="model.", layers=2, d=32, heads=4, kv_heads=4, vocab=50,
          **extra):
    """OLMo-2-1B's config keys and tensor names (Olmo2ForCausalLM): no
    input_layernorm, q_norm of [heads*head_dim] and k_norm of
    [kv_heads*head_dim], norms after attention and after the MLP."""
    hd = d // heads
    cfg = {"architectures": ["Olmo2ForCausalLM"], "model_type": "olmo2", "hidden_size": d,
           "intermediate_size": 4 * d, "num_attention_heads": heads,
           "num_key_value_heads": kv_heads, "num_hidden_layers": layers, "rms_norm_eps": 1e-6,
           "max_position_embeddings": 4096, "rope_theta": 500000, "rope_scaling": None,
           "attention_bias": False, "attention_dropout": 0.0, "hidden_act": "silu",
           "initializer_range": 0.02, "tie_word_embeddings": False, "vocab_size": vocab,
           "pad_token_id": 1, "eos_token_id": 2, "torch_dtype": "float32"}
    cfg.update(extra)
    g = Gen(seed, dtype)
    g.add(prefix + "embed_tokens.weight", (vocab, d), 1.0)
    for L in range(layers):
        p = f"{prefix}layers.{L}."
        for n, out in (("q", heads * hd), ("k", kv_heads * hd), ("v", kv_heads * hd)):
            g.add(p + f"self_attn.{n}_proj.weight", (out, d))
        g.add(p + "self_attn.q_norm.weight", (heads * hd,), 0.3, 1.0)
        g.add(p + "self_attn.k_norm.weight", (kv_heads * hd,), 0.3, 1.0)
        g.add(p + "self_attn.o_proj.weight", (d, heads * hd))
        g.add(p + "post_attention_layernorm.weight", (d,), 0.1, 1.0)
        g.add(p + "post_feedforward_layernorm.weight", (d,), 0.1, 1.0)
        g.add(p + "mlp.gate_proj.weight", (4 * d, d))
        g.add(p + "mlp.up_proj.weight", (4 * d, d))
        g.add(p + "mlp.down_proj.weight", (d, 4 * d))
    g.add(prefix + "norm.weight", (d,), 0.1, 1.0)
    g.add("lm_head.weight", (vocab, d))
    return Checkpoint(cfg, g.out)


def _gemma_layers(g, prefix, layers, d, heads, kv_heads, head_dim, qk_norm):
    for L in range(layers):
        p = f"{prefix}layers.{L}."
        for n in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                  "post_feedforward_layernorm"):
            g.add(p + n + ".weight", (d,), 0.3)
        for n, out in (("q", heads * head_dim), ("k", kv_heads * head_dim),
                       ("v", kv_heads * head_dim)):
            g.add(p + f"self_attn.{n}_proj.weight", (out, d))
        if qk_norm:  # stored as w of x*(1 + w)
            g.add(p + "self_attn.q_norm.weight", (head_dim,), 0.3)
            g.add(p + "self_attn.k_norm.weight", (head_dim,), 0.3)
        g.add(p + "self_attn.o_proj.weight", (d, heads * head_dim))
        g.add(p + "mlp.gate_proj.weight", (4 * d, d))
        g.add(p + "mlp.up_proj.weight", (4 * d, d))
        g.add(p + "mlp.down_proj.weight", (d, 4 * d))
    g.add(prefix + "norm.weight", (d,), 0.3)


def gemma2(seed=18, dtype="F32", prefix="model.", layers=2, d=32, heads=4, kv_heads=2,
           head_dim=16, vocab=50, **extra):
    """gemma-2-2b's config keys and tensor names (Gemma2ForCausalLM):
    query_pre_attn_scalar, attn_logit_softcapping 50, final_logit_softcapping
    30, four norms per layer."""
    cfg = {"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "hidden_size": d,
           "intermediate_size": 4 * d, "num_attention_heads": heads,
           "num_key_value_heads": kv_heads, "head_dim": head_dim, "num_hidden_layers": layers,
           "rms_norm_eps": 1e-6, "max_position_embeddings": 8192, "rope_theta": 10000.0,
           "attention_bias": False, "attention_dropout": 0.0, "attn_logit_softcapping": 50.0,
           "final_logit_softcapping": 30.0, "query_pre_attn_scalar": 256,
           "sliding_window": 4096, "cache_implementation": "hybrid",
           "hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh",
           "vocab_size": vocab, "pad_token_id": 0, "bos_token_id": 2, "eos_token_id": 1,
           "torch_dtype": "float32"}
    cfg.update(extra)
    g = Gen(seed, dtype)
    g.add(prefix + "embed_tokens.weight", (vocab, d), 0.05)
    _gemma_layers(g, prefix, layers, d, heads, kv_heads, head_dim, False)
    return Checkpoint(cfg, g.out)


def gemma3(seed=19, dtype="F32", prefix="model.", layers=7, d=32, heads=4, kv_heads=1,
           head_dim=16, vocab=50, **extra):
    """gemma-3-1b's config keys and tensor names (Gemma3ForCausalLM,
    model_type gemma3_text): q_norm/k_norm, rope_local_base_freq next to
    rope_theta, sliding_window_pattern 6 (layer 5 is the first global one)."""
    cfg = {"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text",
           "hidden_size": d, "intermediate_size": 4 * d, "num_attention_heads": heads,
           "num_key_value_heads": kv_heads, "head_dim": head_dim, "num_hidden_layers": layers,
           "rms_norm_eps": 1e-6, "max_position_embeddings": 32768, "rope_theta": 1000000,
           "rope_local_base_freq": 10000, "rope_scaling": None, "sliding_window": 512,
           "sliding_window_pattern": 6, "query_pre_attn_scalar": 256,
           "attention_bias": False, "attention_dropout": 0.0, "attn_logit_softcapping": None,
           "final_logit_softcapping": None, "cache_implementation": "hybrid",
           "hidden_activation": "gelu_pytorch_tanh", "initializer_range": 0.02,
           "vocab_size": vocab, "pad_token_id": 0, "bos_token_id": 2, "eos_token_id": 1,
           "torch_dtype": "bfloat16"}
    cfg.update(extra)
    g = Gen(seed, dtype)
    g.add(prefix + "embed_tokens.weight", (vocab, d), 0.05)
    _gemma_layers(g, prefix, layers, d, heads, kv_heads, head_dim, True)
    return Checkpoint(cfg, g.out)


def llama4_text(seed=21, dtype="F32", prefix="language_model.model.", layers=4, d=32, heads=4,
                kv_heads=2, head_dim=16, vocab=50, bias=False, **extra):
    """Llama-4-Scout-17B-16E's text_config keys (model_type llama4_text):
    llama3 rope_scaling, rope_theta 5e5, use_qk_norm, attn_temperature_tuning
    4 (an int, as published), floor_scale 8192, attn_scale 0.1,
    no_rope_layers empty (the interval-4 default: layer 3 has no rope), and
    the tensor names of Llama4ForConditionalGeneration
    (language_model.model.layers.L.*; MoE experts as Scout stores them)."""
    cfg = {"architectures": ["Llama4ForCausalLM"], "model_type": "llama4_text",
           "hidden_size": d, "intermediate_size": 2 * d, "intermediate_size_mlp": 4 * d,
           "num_attention_heads": heads, "num_key_value_heads": kv_heads, "head_dim": head_dim,
           "num_hidden_layers": layers, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
           "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                            "original_max_position_embeddings": 8192, "rope_type": "llama3"},
           "max_position_embeddings": 10485760, "attention_bias": bias,
           "attention_chunk_size": 8192, "attn_temperature_tuning": 4, "floor_scale": 8192,
           "attn_scale": 0.1, "use_qk_norm": True, "no_rope_layers": [],
           "interleave_moe_layer_step": 1, "num_experts_per_tok": 1, "num_local_experts": 2,
           "moe_layers": None, "hidden_act": "silu", "vocab_size": vocab,
           "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
           "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
    cfg.update(extra)
    g = Gen(seed, dtype)
    g.add(prefix + "embed_tokens.weight", (vocab, d), 1.0)
    for L in range(layers):
        p = f"{prefix}layers.{L}."
        g.add(p + "input_layernorm.weight", (d,), 0.1, 1.0)
        g.add(p + "post_attention_layernorm.weight", (d,), 0.1, 1.0)
        for n, out in (("q", heads * head_dim), ("k", kv_heads * head_dim),
                       ("v", kv_heads * head_dim)):
            g.add(p + f"self_attn.{n}_proj.weight", (out, d))
            if bias:
                g.add(p + f"self_attn.{n}_proj.bias", (out,), 0.2)
        g.add(p + "self_attn.o_proj.weight", (d, heads * head_dim))
        g.add(p + "feed_forward.router.weight", (2, d))
        g.add(p + "feed_forward.experts.gate_up_proj", (2, d, 4 * d))
        g.add(p + "feed_forward.experts.down_proj", (2, 2 * d, d))
        g.add(p + "feed_forward.shared_expert.gate_proj.weight", (2 * d, d))
    g.add(prefix + "norm.weight", (d,), 0.1, 1.0)
    g.add("language_model.lm_head.weight" if prefix.startswith("language_model") else
          "lm_head.weight", (vocab, d))
    return Checkpoint(cfg, g.out)


def deepseek(seed=31, dtype="F32", prefix="model.", model_type="deepseek_v3", layers=2, d=32,
             heads=4, q_lora_rank=12, kv_lora_rank=10, nope=6, rope=4, v_dim=5, vocab=50,
             **extra):
    """DeepSeek-V3's config keys (DeepseekV3ForCausalLM: q_lora_rank, yarn
    rope_scaling of type yarn with mscale/mscale_all_dim, MoE keys) or, with
    model_type deepseek_v2 and q_lora_rank None, DeepSeek-V2-Lite's (q_proj,
    mscale 0.707); tensor names of both (layer 0 dense MLP, later ones
    MoE experts and shared experts)."""
    cfg = {"architectures": ["DeepseekV3ForCausalLM" if model_type == "deepseek_v3"
                             else "DeepseekV2ForCausalLM"], "model_type": model_type,
           "hidden_size": d, "intermediate_size": 3 * d, "moe_intermediate_size": d,
           "num_attention_heads": heads, "num_key_value_heads": heads,
           "num_hidden_layers": layers, "q_lora_rank": q_lora_rank,
           "kv_lora_rank": kv_lora_rank, "qk_nope_head_dim": nope, "qk_rope_head_dim": rope,
           "v_head_dim": v_dim, "rms_norm_eps": 1e-6, "rope_theta": 10000,
           "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40,
                            "mscale": 1.0 if model_type == "deepseek_v3" else 0.707,
                            "mscale_all_dim": 1.0 if model_type == "deepseek_v3" else 0.707,
                            "original_max_position_embeddings": 4096, "type": "yarn"},
           "max_position_embeddings": 163840, "attention_bias": False,
           "attention_dropout": 0.0, "first_k_dense_replace": 1, "n_routed_experts": 2,
           "n_shared_experts": 1, "num_experts_per_tok": 1, "moe_layer_freq": 1,
           "routed_scaling_factor": 2.5 if model_type == "deepseek_v3" else 1.0,
           "topk_method": "noaux_tc" if model_type == "deepseek_v3" else "greedy",
           "n_group": 1, "topk_group": 1, "norm_topk_prob": model_type == "deepseek_v3",
           "scoring_func": "sigmoid" if model_type == "deepseek_v3" else "softmax",
           "hidden_act": "silu", "vocab_size": vocab, "bos_token_id": 0, "eos_token_id": 1,
           "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
    cfg.update(extra)
    g = Gen(seed, dtype)
    g.add(prefix + "embed_tokens.weight", (vocab, d), 1.0)
    qkh = nope + rope
    for L in range(layers):
        p = f"{prefix}layers.{L}."
        a = p + "self_attn."
        g.add(p + "input_layernorm.weight", (d,), 0.1, 1.0)
        g.add(p + "post_attention_layernorm.weight", (d,), 0.1, 1.0)
        if q_lora_rank:
            g.add(a + "q_a_proj.weight", (q_lora_rank, d))
            g.add(a + "q_a_layernorm.weight", (q_lora_rank,), 0.1, 1.0)
            g.add(a + "q_b_proj.weight", (heads * qkh, q_lora_rank))
        else:
            g.add(a + "q_proj.weight", (heads * qkh, d))
        g.add(a + "kv_a_proj_with_mqa.weight", (kv_lora_rank + rope, d))
        g.add(a + "kv_a_layernorm.weight", (kv_lora_rank,), 0.1, 1.0)
        g.add(a + "kv_b_proj.weight", (heads * (nope + v_dim), kv_lora_rank))
        g.add(a + "o_proj.weight", (d, heads * v_dim))
        if L == 0:
            g.add(p + "mlp.gate_proj.weight", (3 * d, d))
        else:
            g.add(p + "mlp.gate.weight", (2, d))
            g.add(p + "mlp.experts.0.gate_proj.weight", (d, d))
            g.add(p + "mlp.shared_experts.gate_proj.weight", (d, d))
    g.add(prefix + "norm.weight", (d,), 0.1, 1.0)
    g.add("lm_head.weight", (vocab, d))
    return Checkpoint(cfg, g.out)


# ----------------------------------------------- Cohere, StableLM, ...
def _decoder_layers(g, prefix, layers, d, heads, kv_heads, hd, bias=False, norm_bias=False,
                    input_norm=True, qk=None, post_norms=("post_attention_layernorm",)):
    """The per-layer tensors of a Llama-style decoder under their real names:
    input_layernorm (with a bias for nn.LayerNorm ones), q/k/v/o_proj, the
    q/k norms as the architecture stores them (qk "vector": q_norm /
    k_norm [head_dim]; "matrix": [heads, head_dim], Cohere; "each":
    q_layernorm.norms.<h>, StableLM), the norms after attention and the
    gated MLP."""
    for L in range(layers):
        p = f"{prefix}layers.{L}."
        if input_norm:
            g.add(p + "input_layernorm.weight", (d,), 0.1, 1.0)
            if norm_bias:
                g.add(p + "input_layernorm.bias", (d,), 0.1)
        for n, out in (("q", heads * hd), ("k", kv_heads * hd), ("v", kv_heads * hd)):
            g.add(p + f"self_attn.{n}_proj.weight", (out, d))
            if bias:
                g.add(p + f"self_attn.{n}_proj.bias", (out,), 0.2)
        if qk == "vector":
            g.add(p + "self_attn.q_norm.weight", (hd,), 0.3, 1.0)
            g.add(p + "self_attn.k_norm.weight", (hd,), 0.3, 1.0)
        elif qk == "matrix":
            g.add(p + "self_attn.q_norm.weight", (heads, hd), 0.3, 1.0)
            g.add(p + "self_attn.k_norm.weight", (kv_heads, hd), 0.3, 1.0)
        elif qk == "each":
            for n, count in (("q", heads), ("k", kv_heads)):
                for h in range(count):
                    g.add(p + f"self_attn.{n}_layernorm.norms.{h}.weight", (hd,), 0.3, 1.0)
        g.add(p + "self_attn.o_proj.weight", (d, heads * hd))
        for n in post_norms:
            g.add(p + n + ".weight", (d,), 0.1, 1.0)
        g.add(p + "mlp.gate_proj.weight", (2 * d, d))
        g.add(p + "mlp.up_proj.weight", (2 * d, d))
        g.add(p + "mlp.down_proj.weight", (d, 2 * d))


def cohere(seed=41, dtype="F32", prefix="model.", layers=2, d=32, heads=4, kv_heads=2,
           vocab=50, qk_norm=False, bias=False, **extra):
    """c4ai-command-r-v01's config keys (CohereForCausalLM; with qk_norm,
    c4ai-command-r-plus's use_qk_norm) and tensor names: CohereLayerNorm
    without bias, q_norm / k_norm of [heads, head_dim], tied embeddings."""
    hd = d // heads
    cfg = {"architectures": ["CohereForCausalLM"], "model_type": "cohere", "hidden_size": d,
           "intermediate_size": 2 * d, "num_attention_heads": heads,
           "num_key_value_heads": kv_heads, "num_hidden_layers": layers, "layer_norm_eps": 1e-05,
           "logit_scale": 0.0625, "max_position_embeddings": 8192, "rope_theta": 8000000.0,
           "rope_scaling": None, "use_qk_norm": qk_norm, "attention_bias": bias,
           "attention_dropout": 0.0, "hidden_act": "silu", "initializer_range": 0.02,
           "vocab_size": vocab, "pad_token_id": 0, "bos_token_id": 5, "eos_token_id": 255001,
           "tie_word_embeddings": True, "use_cache": True, "torch_dtype": "float16",
           "transformers_version": "4.40.0.dev0"}
    cfg.update(extra)
    g = Gen(seed, dtype)
    g.add(prefix + "embed_tokens.weight", (vocab, d), 1.0)
    _decoder_layers(g, prefix, layers, d, heads, kv_heads, hd, bias=bias,
                    qk="matrix" if qk_norm else None, post_norms=())
    g.add(prefix + "norm.weight", (d,), 0.1, 1.0)
    return Checkpoint(cfg, g.out)


def cohere2(seed=51, dtype="F32", prefix="model.", layers=4, d=32, heads=4, kv_heads=1,
            vocab=50, **extra):
    """c4ai-command-r7b-12-2024's config keys (Cohere2ForCausalLM:
    sliding_window 4096, sliding_window_pattern 4, rope_theta 50000) and
    tensor names (Cohere's without q/k norms)."""
    hd = d // heads
    cfg = {"architectures": ["Cohere2ForCausalLM"], "model_type": "cohere2", "hidden_size": d,
           "intermediate_size": 2 * d, "num_attention_heads": heads,
           "num_key_value_heads": kv_heads, "num_hidden_layers": layers, "layer_norm_eps": 1e-05,
           "logit_scale": 0.25, "max_position_embeddings": 8192, "rope_theta": 50000,
           "rope_scaling": None, "sliding_window": 4096, "sliding_window_pattern": 4,
           "order_of_interleaved_layers": "local_attn_first", "attention_bias": False,
           "attention_dropout": 0.0, "hidden_act": "silu", "vocab_size": vocab,
           "pad_token_id": 0, "bos_token_id": 5, "eos_token_id": 255001,
           "tie_word_embeddings": True, "cache_implementation": "hybrid",
           "torch_dtype": "bfloat16"}
    cfg.update(extra)
    g = Gen(seed, dtype)
    g.add(prefix + "embed_tokens.weight", (vocab, d), 1.0)
    _decoder_layers(g, prefix, layers, d, heads, kv_heads, hd, post_norms=())
    g.add(prefix + "norm.weight", (d,), 0.1, 1.0)
    return Checkpoint(cfg, g.out)


def stablelm(seed=61, dtype="F32", prefix="model.", layers=2, d=32, heads=4, kv_heads=4,
             vocab=50, qk_norm=False, bias=True, **extra):
    """stablelm-2-1_6b's config keys (StableLmForCausalLM: use_qkv_bias,
    partial_rotary_factor 0.25; with qk_norm, stablelm-2-12b's qk_layernorm
    and use_parallel_residual) and tensor names: nn.LayerNorm with biases,
    q_layernorm.norms.<h> / k_layernorm.norms.<h> per head."""
    hd = d // heads
    cfg = {"architectures": ["StableLmForCausalLM"], "model_type": "stablelm", "hidden_size": d,
           "intermediate_size": 2 * d, "num_attention_heads": heads,
           "num_key_value_heads": kv_heads, "num_hidden_layers": layers, "layer_norm_eps": 1e-05,
           "max_position_embeddings": 4096, "partial_rotary_factor": 0.25, "rope_theta": 10000,
           "rope_scaling": None, "use_qkv_bias": bias, "qk_layernorm": qk_norm,
           "use_parallel_residual": qk_norm, "hidden_dropout": 0.0, "attention_dropout": 0.0,
           "hidden_act": "silu", "initializer_range": 0.02, "vocab_size": vocab,
           "bos_token_id": 100257, "eos_token_id": 100257, "tie_word_embeddings": False,
           "use_cache": True, "torch_dtype": "float16"}
    cfg.update(extra)
    g = Gen(seed, dtype)
    g.add(prefix + "embed_tokens.weight", (vocab, d), 1.0)
    _decoder_layers(g, prefix, layers, d, heads, kv_heads, hd, bias=bias, norm_bias=True,
                    qk="each" if qk_norm else None,
                    post_norms=() if qk_norm else ("post_attention_layernorm",))
    g.add(prefix + "norm.weight", (d,), 0.1, 1.0)
    g.add(prefix + "norm.bias", (d,), 0.1)
    g.add("lm_head.weight", (vocab, d))
    return Checkpoint(cfg, g.out)


def minicpm(seed=71, dtype="F32", prefix="model.", layers=2, d=32, heads=4, kv_heads=2,
            vocab=50, longrope=False, **extra):
    """MiniCPM4-0.5B's config keys (MiniCPMForCausalLM: scale_emb 12,
    scale_depth 1.4, dim_model_base 256, the remote-code auto_map; with
    longrope, MiniCPM4-8B's longrope block with its own
    original_max_position_embeddings) and tensor names (Llama's, tied)."""
    hd = d // heads
    rng = np.random.default_rng(seed + 1000)
    cfg = {"architectures": ["MiniCPMForCausalLM"], "model_type": "minicpm", "hidden_size": d,
           "intermediate_size": 2 * d, "num_attention_heads": heads,
           "num_key_value_heads": kv_heads, "num_hidden_layers": layers, "rms_norm_eps": 1e-05,
           "max_position_embeddings": 32768, "rope_theta": 10000.0, "rope_scaling": None,
           "scale_emb": 12, "scale_depth": 1.4, "dim_model_base": 256, "hidden_act": "silu",
           "initializer_range": 0.1, "vocab_size": vocab, "bos_token_id": 1, "eos_token_id": 2,
           "tie_word_embeddings": True, "use_cache": True, "torch_dtype": "bfloat16",
           "auto_map": {"AutoConfig": "configuration_minicpm.MiniCPMConfig",
                        "AutoModelForCausalLM": "modeling_minicpm.MiniCPMForCausalLM"}}
    if longrope:
        cfg["max_position_embeddings"] = 64
        cfg["rope_scaling"] = {"rope_type": "longrope",
                               "short_factor": [float(v) for v in 1 + rng.random(hd // 2)],
                               "long_factor": [float(v) for v in 1 + 8 * rng.random(hd // 2)],
                               "original_max_position_embeddings": 16}
    cfg.update(extra)
    g = Gen(seed, dtype)
    g.add(prefix + "embed_tokens.weight", (vocab, d), 0.1)
    _decoder_layers(g, prefix, layers, d, heads, kv_heads, hd)
    g.add(prefix + "norm.weight", (d,), 0.1, 1.0)
    return Checkpoint(cfg, g.out)


def exaone4(seed=81, dtype="F32", prefix="model.", layers=4, d=32, heads=4, kv_heads=2,
            head_dim=16, vocab=50, **extra):
    """EXAONE-4.0-32B's config keys (Exaone4ForCausalLM: head_dim, llama3
    rope_scaling, sliding_window 4096, sliding_window_pattern "LLLG" next
    to layer_types) and tensor names: no input_layernorm (OLMo 2's layer),
    q_norm / k_norm of [head_dim], post_attention_layernorm and
    post_feedforward_layernorm."""
    types = ["sliding_attention" if (i + 1) % 4 else "full_attention" for i in range(layers)]
    cfg = {"architectures": ["Exaone4ForCausalLM"], "model_type": "exaone4", "hidden_size": d,
           "intermediate_size": 2 * d, "num_attention_heads": heads,
           "num_key_value_heads": kv_heads, "head_dim": head_dim, "num_hidden_layers": layers,
           "rms_norm_eps": 1e-05, "max_position_embeddings": 131072, "rope_theta": 1000000.0,
           "rope_scaling": {"factor": 16.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                            "original_max_position_embeddings": 8192, "rope_type": "llama3"},
           "sliding_window": 4096, "sliding_window_pattern": "LLLG", "layer_types": types,
           "attention_dropout": 0.0, "hidden_act": "silu", "initializer_range": 0.02,
           "vocab_size": vocab, "bos_token_id": 1, "eos_token_id": 361, "pad_token_id": 0,
           "tie_word_embeddings": False, "use_cache": True, "torch_dtype": "bfloat16"}
    cfg.update(extra)
    g = Gen(seed, dtype)
    g.add(prefix + "embed_tokens.weight", (vocab, d), 1.0)
    _decoder_layers(g, prefix, layers, d, heads, kv_heads, head_dim, input_norm=False,
                    qk="vector", post_norms=("post_attention_layernorm",
                                             "post_feedforward_layernorm"))
    g.add(prefix + "norm.weight", (d,), 0.1, 1.0)
    g.add("lm_head.weight", (vocab, d))
    return Checkpoint(cfg, g.out)
