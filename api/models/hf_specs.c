/*
 * hf_specs.c - the table of Hugging Face architectures posenc loads (see
 * hf_spec.h): per architecture, what its modeling_<arch>.py reads from the
 * config and the checkpoint on the way from token embeddings (layer 0) or
 * the hidden state (later layers) to the Q, K and V of a layer's attention.
 *
 * What each entry encodes, in Hugging Face's terms:
 * - llama, mistral, mixtral, arcee, qwen2: h = embed_tokens[ids]; z =
 *   input_layernorm(h) (RMSNorm, rms_norm_eps); q/k/v_proj (nn.Linear,
 *   biases when attention_bias; Qwen2Attention always has them and never
 *   reads the key); rotate_half over the whole head (rope_theta,
 *   rope_scaling). The "model." prefix is what *ForCausalLM checkpoints carry.
 * - qwen3: Llama plus q_norm / k_norm (RMSNorm over head_dim, rms_norm_eps)
 *   before the rotation; head_dim default 128.
 * - olmo2: no norm before attention; q_norm / k_norm over the whole q and k
 *   projections (rms_norm_eps, default 1e-5); head_dim default hidden/heads.
 * - starcoder2: LayerNorm (norm_epsilon) with bias; biases when use_bias
 *   (default true).
 * - phi: LayerNorm (layer_norm_eps), biased projections, the first
 *   int(head_dim * partial_rotary_factor) channels rotated (default 0.5);
 *   with qk_layernorm, q_layernorm / k_layernorm (LayerNorm over head_dim
 *   with bias, layer_norm_eps, shared by the heads) before the rotation.
 * - phi3: one qkv_proj stacked [q; k; v], no bias (attention_bias true is
 *   ignored with a warning), RMSNorm, partial rotary (default 1), longrope.
 * - gpt_neox: embed_in, LayerNorm, query_key_value laid out per head
 *   [heads][3][head_dim] (biases when attention_bias, default true),
 *   rotary_pct (0.25) of each head, base rotary_emb_base.
 * - gemma, gemma2, gemma3_text: RMSNorm as x * (1 + w) (folded into the
 *   weights), head_dim default 256, the sqrt(hidden_size) normalizer
 *   (hf_gemma.c); Gemma 2 and 3: query_pre_attn_scalar ** -0.5 as score
 *   scale and the tanh soft cap (default 50 and none); Gemma 3: q/k norms
 *   per head, a rope block per layer type (hf_rope_block.c).
 * - bloom: word_embeddings_layernorm then input_layernorm (LayerNorm,
 *   layer_norm_epsilon), query_key_value per head, ALiBi form "bloom" with
 *   key positions (cumsum(mask) - 1) * mask.
 * - falcon, mpt: fused layouts and refused options in hf_falcon.c, hf_mpt.c.
 * - gpt2, opt, bert, roberta, t5: learned or relative positions
 *   (hf_gpt2.c, hf_opt.c, hf_bert.c, hf_t5.c).
 * - llama4_text: Llama with the interleaved rotation, rope_theta default
 *   500000 and NoPE layers (hf_llama4.c).
 * - deepseek_v2, deepseek_v3: multi-head latent attention (hf_deepseek.c).
 * - granite, smollm3: Llama variations, table entries only (see there).
 * - the text models of wrapper configs (their model_type in text_config,
 *   hf_text_model.c): qwen2_vl_text, qwen2_5_vl_text (Qwen2's layer),
 *   qwen3_vl_text, qwen3_vl_moe_text (Qwen3's), glm4v_text (GLM's
 *   interleaved pairs), glm4v_moe_text (rotate_half on half the head);
 *   their M-RoPE (params.mrope, from the rope block's mrope_section or the
 *   architecture's default) is 1-D RoPE for text positions.
 * - families of 2025-26 that differ from the above only in keys and
 *   defaults: qwen3_moe (Qwen3's attention), qwen2_moe (Qwen2's, qkv_bias),
 *   glm4_moe (rotate_half on half the head, use_qk_norm), seed_oss,
 *   apertus (Qwen3's q/k norms, llama3 rope by default), ernie4_5,
 *   ernie4_5_moe (GLM's pairs over the whole head), exaone_moe (EXAONE 4's
 *   attention after an input norm), glm4_moe_lite (DeepSeek-V3's
 *   multi-head latent attention, hf_deepseek.c), afmoe (q/k norms, rope on sliding
 *   layers only; hf_afmoe.c); arcee is Llama's.
 * - hybrid stacks, their attention layers: lfm2, lfm2_moe (q/k norms per
 *   head; full_attn_idxs), granitemoehybrid (Granite's multipliers, NoPE
 *   unless position_embedding_type is "rope"), nemotron_h (NoPE;
 *   hybrid_override_pattern), falcon_h1 (every layer; its multipliers in
 *   hf_falcon_h1.c); a chosen layer of another type is refused by name.
 * - olmo3 (hf_olmo3.c): OLMo 2's layer; layer_types (3 sliding : 1 full by
 *   default) pick each layer's block of a nested rope_parameters, a legacy
 *   rope_scaling (YaRN) going into the full_attention block only.
 * - modernbert (hf_modernbert.c): an encoder; the embedding LayerNorm feeds
 *   layer 0 (no attn_norm there), fused Wqkv stacked, LayerNorms without
 *   bias, global / local rope thetas by layer type, slot positions.
 * - ministral3 (hf_ministral.c): Llama's layer, head_dim default 128, q
 *   multiplied after the rotation by Mistral's query scale (the block's
 *   llama_4_scaling_beta; Ministral3Config's default block when none).
 * - hunyuan_v1_dense, hunyuan_v1_moe (hf_hunyuan.c): Llama's layer, head_dim
 *   required; a dynamic block's alpha is NTK-alpha; query_layernorm /
 *   key_layernorm (with weights) after the rotation.
 * - gemma4_text, gemma3n_text (hf_gemma4.c): x*w norms, v's weightless
 *   norm, scores scaled by 1, kv-shared layers; Gemma 4's head_dim and kv
 *   heads per layer type, proportional rope on full layers and k_eq_v;
 *   Gemma 3n's layer 0 from embeddings only (AltUp's stream).
 * Gemma 3, OLMo 3 and ModernBERT read their rope by layer type
 * (hf_rope_block.c).
 *
 * layer_types (qwen2, qwen3, gemma2, gemma3_text, smollm3, ...: transformers
 * 5's vocabulary; full, sliding and chunked attention differ only in the
 * mask, except Gemma 3's rope) is checked for every layer: a value
 * transformers does not know stops the load naming the entry, and a chosen
 * layer of another type (linear_attention, ...) is refused by name.
 * Llama 4's layer_types ("chunked_attention" for its rope layers,
 * Llama4TextConfig's default) is not read: no_rope_layers decides there.
 *
 * A new architecture that differs from one here only in its keys, defaults
 * or tensor names is a new entry (and a fixture in tests/models); the
 * unsupported-model_type message lists the entries in this order.
 */
#include <stdio.h>
#include <string.h>

#include "models/hf_spec.h"

/* ---- config keys ----------------------------------------------------------- */

static const hf_shape_keys llama_shape = {
    .hidden = HF_KEYS("hidden_size"),
    .heads = HF_KEYS("num_attention_heads"),
    .kv_heads = HF_KEYS("num_key_value_heads"),
    .layers = HF_KEYS("num_hidden_layers"),
    .head_dim = HF_KEYS("head_dim"),
    .check_kv = true,
};
/* head_dim is always hidden / heads: a config head_dim is not read
 * (Cohere2Config sets it so; StableLmAttention computes it) */
static const hf_shape_keys fixed_head_shape = {
    .hidden = HF_KEYS("hidden_size"),
    .heads = HF_KEYS("num_attention_heads"),
    .kv_heads = HF_KEYS("num_key_value_heads"),
    .layers = HF_KEYS("num_hidden_layers"),
    .check_kv = true,
};
/* hidden_size and num_attention_heads only (GPT-NeoX, BERT, OPT) */
static const hf_shape_keys mha_shape = {
    .hidden = HF_KEYS("hidden_size"),
    .heads = HF_KEYS("num_attention_heads"),
    .layers = HF_KEYS("num_hidden_layers"),
};
/* n_embed wins over hidden_size, as BloomConfig's attribute map */
static const hf_shape_keys bloom_shape = {
    .hidden = HF_KEYS("n_embed", "hidden_size"),
    .heads = HF_KEYS("n_head", "num_attention_heads"),
    .layers = HF_KEYS("n_layer", "num_hidden_layers"),
};
static const hf_shape_keys gpt2_shape = {
    .hidden = HF_KEYS("n_embd", "hidden_size"),
    .heads = HF_KEYS("n_head", "num_attention_heads"),
    .layers = HF_KEYS("n_layer", "num_hidden_layers"),
    .hidden_name = "n_embd",
};
/* num_kv_heads is settled by the architecture flags (hf_falcon.c) */
static const hf_shape_keys falcon_shape = {
    .hidden = HF_KEYS("n_embed", "hidden_size"),
    .heads = HF_KEYS("num_attention_heads"),
    .kv_heads = HF_KEYS("num_kv_heads"),
    .layers = HF_KEYS("num_hidden_layers"),
};
static const hf_shape_keys mpt_shape = {
    .hidden = HF_KEYS("d_model"),
    .heads = HF_KEYS("n_heads"),
    .layers = HF_KEYS("n_layers"),
};
/* the inner width num_heads * d_kv is independent of d_model */
static const hf_shape_keys t5_shape = {
    .hidden = HF_KEYS("d_model"),
    .heads = HF_KEYS("num_heads"),
    .layers = HF_KEYS("num_layers"),
    .head_dim = HF_KEYS("d_kv"),
    .head_dim_required = true,
};
/* head_dim is qk_nope_head_dim + qk_rope_head_dim (hf_deepseek.c) */
static const hf_shape_keys mla_shape = {
    .hidden = HF_KEYS("hidden_size"),
    .heads = HF_KEYS("num_attention_heads"),
    .kv_heads = HF_KEYS("num_key_value_heads"),
    .layers = HF_KEYS("num_hidden_layers"),
};

/* ---- tensor names ----------------------------------------------------------- */

static const hf_tensor_names llama_names = {
    .layer_dir = "layers",
    .q = "self_attn.q_proj",
    .k = "self_attn.k_proj",
    .v = "self_attn.v_proj",
    .norm = "input_layernorm",
    .embed = HF_KEYS("embed_tokens.weight"),
};
static const hf_tensor_names qk_norm_names = {
    .layer_dir = "layers",
    .q = "self_attn.q_proj",
    .k = "self_attn.k_proj",
    .v = "self_attn.v_proj",
    .norm = "input_layernorm",
    .q_norm = "self_attn.q_norm",
    .k_norm = "self_attn.k_norm",
    .embed = HF_KEYS("embed_tokens.weight"),
};
/* q_norm / k_norm: CohereLayerNorm((heads, head_dim)), weights [heads][head_dim] */
static const hf_tensor_names cohere_names = {
    .layer_dir = "layers",
    .q = "self_attn.q_proj",
    .k = "self_attn.k_proj",
    .v = "self_attn.v_proj",
    .norm = "input_layernorm",
    .q_norm = "self_attn.q_norm",
    .k_norm = "self_attn.k_norm",
    .qk_norm_tensors = HF_QK_NORM_MATRIX,
    .embed = HF_KEYS("embed_tokens.weight"),
};
/* StableLmLayerNormPerHead: one nn.LayerNorm(head_dim, bias=False) per head */
static const hf_tensor_names stablelm_names = {
    .layer_dir = "layers",
    .q = "self_attn.q_proj",
    .k = "self_attn.k_proj",
    .v = "self_attn.v_proj",
    .norm = "input_layernorm",
    .q_norm = "self_attn.q_layernorm.norms",
    .k_norm = "self_attn.k_layernorm.norms",
    .qk_norm_tensors = HF_QK_NORM_EACH_HEAD,
    .embed = HF_KEYS("embed_tokens.weight"),
};
/* PhiAttention with qk_layernorm: q_layernorm / k_layernorm, one
 * nn.LayerNorm(head_dim) (weight and bias) every head shares */
static const hf_tensor_names phi_names = {
    .layer_dir = "layers",
    .q = "self_attn.q_proj",
    .k = "self_attn.k_proj",
    .v = "self_attn.v_proj",
    .norm = "input_layernorm",
    .q_norm = "self_attn.q_layernorm",
    .k_norm = "self_attn.k_layernorm",
    .qk_norm_bias = true,
    .embed = HF_KEYS("embed_tokens.weight"),
};
static const hf_tensor_names phi3_names = {.layer_dir = "layers",
                                           .qkv = HF_QKV_FUSED,
                                           .q = "self_attn.qkv_proj",
                                           .fused = HF_FUSED_STACKED,
                                           .norm = "input_layernorm",
                                           .embed = HF_KEYS("embed_tokens.weight")};
static const hf_tensor_names neox_names = {.layer_dir = "layers",
                                           .qkv = HF_QKV_FUSED,
                                           .q = "attention.query_key_value",
                                           .fused = HF_FUSED_PER_HEAD,
                                           .norm = "input_layernorm",
                                           .embed = HF_KEYS("embed_in.weight")};
static const hf_tensor_names bloom_names = {.layer_dir = "h",
                                            .qkv = HF_QKV_FUSED,
                                            .q = "self_attention.query_key_value",
                                            .fused = HF_FUSED_PER_HEAD,
                                            .norm = "input_layernorm",
                                            .embed = HF_KEYS("word_embeddings.weight"),
                                            .embed_norm = "word_embeddings_layernorm"};
/* the layout and the norm's name follow the config (hf_falcon.c) */
static const hf_tensor_names falcon_names = {.layer_dir = "h",
                                             .qkv = HF_QKV_FUSED,
                                             .q = "self_attention.query_key_value",
                                             .norm = "input_layernorm",
                                             .embed = HF_KEYS("word_embeddings.weight")};
static const hf_tensor_names mpt_names = {.layer_dir = "blocks",
                                          .qkv = HF_QKV_FUSED,
                                          .q = "attn.Wqkv",
                                          .fused = HF_FUSED_STACKED,
                                          .norm = "norm_1",
                                          .embed = HF_KEYS("wte.weight")};
static const hf_tensor_names gpt2_names = {.layer_dir = "h",
                                           .qkv = HF_QKV_CONV1D,
                                           .q = "attn.c_attn",
                                           .norm = "ln_1",
                                           .embed = HF_KEYS("wte.weight"),
                                           .position_table = "wpe.weight"};
static const hf_tensor_names opt_names = {.layer_dir = "layers",
                                          .q = "self_attn.q_proj",
                                          .k = "self_attn.k_proj",
                                          .v = "self_attn.v_proj",
                                          .norm = "self_attn_layer_norm",
                                          .embed = HF_KEYS("embed_tokens.weight"),
                                          .position_table = "embed_positions.weight"};
static const hf_tensor_names bert_names = {
    .layer_dir = "encoder.layer",
    .q = "attention.self.query",
    .k = "attention.self.key",
    .v = "attention.self.value",
    .embed = HF_KEYS("embeddings.word_embeddings.weight"),
    .position_table = "embeddings.position_embeddings.weight",
    .embed_norm = "embeddings.LayerNorm",
    .embed_norm_tf_names = true,
};
/* many T5 checkpoints save the shared table only once */
static const hf_tensor_names t5_names = {
    .layer_dir = "encoder.block",
    .layer_tail = ".layer.0",
    .q = "SelfAttention.q",
    .k = "SelfAttention.k",
    .v = "SelfAttention.v",
    .norm = "layer_norm",
    .embed = HF_KEYS("encoder.embed_tokens.weight", "shared.weight"),
};
static const hf_tensor_names mla_names = {.layer_dir = "layers",
                                          .qkv = HF_QKV_HOOK,
                                          .norm = "input_layernorm",
                                          .embed = HF_KEYS("embed_tokens.weight")};

/* InternLM2 (remote code modeling_internlm2.py): one wqkv per layer, per kv
 * head its heads/kv_heads q heads, then its k, then its v (the einops split
 * "(h gs d)" with gs = 2 + groups); RMSNorm attention_norm; tok_embeddings */
static const hf_tensor_names internlm2_names = {.layer_dir = "layers",
                                                .qkv = HF_QKV_FUSED,
                                                .q = "attention.wqkv",
                                                .fused = HF_FUSED_GROUPED,
                                                .norm = "attention_norm",
                                                .embed = HF_KEYS("tok_embeddings.weight")};

/* LFM2 (Lfm2DecoderLayer, Lfm2Attention): operator_norm before the
 * attention, q_layernorm / k_layernorm per head, out_proj */
static const hf_tensor_names lfm2_names = {
    .layer_dir = "layers",
    .q = "self_attn.q_proj",
    .k = "self_attn.k_proj",
    .v = "self_attn.v_proj",
    .norm = "operator_norm",
    .q_norm = "self_attn.q_layernorm",
    .k_norm = "self_attn.k_layernorm",
    .embed = HF_KEYS("embed_tokens.weight"),
};

/* Nemotron-H (NemotronHBlock, NemotronHAttention): one mixer per block
 * after its norm; embeddings */
static const hf_tensor_names nemotron_h_names = {
    .layer_dir = "layers",
    .q = "mixer.q_proj",
    .k = "mixer.k_proj",
    .v = "mixer.v_proj",
    .norm = "norm",
    .embed = HF_KEYS("embeddings.weight"),
};

/* Llama's names with q/k norms, q/k/v read by the weights hook: gated
 * attention's q_proj holds [query | gate] per head (hf_qwen3_next.c);
 * Gemma 4's kv-shared layers take k, v and k_norm from another layer and
 * its k_eq_v layers have no v_proj (hf_gemma4.c) */
static const hf_tensor_names hooked_qk_norm_names = {
    .layer_dir = "layers",
    .qkv = HF_QKV_HOOK,
    .q = "self_attn.q_proj",
    .k = "self_attn.k_proj",
    .v = "self_attn.v_proj",
    .norm = "input_layernorm",
    .q_norm = "self_attn.q_norm",
    .k_norm = "self_attn.k_norm",
    .embed = HF_KEYS("embed_tokens.weight"),
};

/* ---- refused options ------------------------------------------------------------ */

static const hf_refusal phi3_refusals[] = {{"attention_bias", HF_WARN_TRUE, NULL,
                                            "attention_bias = true is ignored: Phi-3's qkv_proj "
                                            "has no bias"},
                                           {0}};
/* Hugging Face's MPT drops the biases and always uses LayerNorm */
static const hf_refusal mpt_refusals[] =
    {{"no_bias", HF_REFUSE_FALSE, NULL,
      "no_bias = false is not supported: Hugging Face's MPT has no biases and would drop the "
      "checkpoint's"},
     {"norm_type", HF_REFUSE_STRING, HF_KEYS("low_precision_layernorm", "layernorm"),
      "norm_type = '%s' is not supported (Hugging Face's MPT always uses LayerNorm)"},
     {0}};
static const hf_refusal bert_refusals[] = {{"position_embedding_type", HF_REFUSE_STRING,
                                            HF_KEYS("absolute"),
                                            "position_embedding_type '%s' is not supported (only "
                                            "absolute)"},
                                           {0}};
/* MiniCPMModel raises NotImplementedError for it */
static const hf_refusal minicpm_refusals[] = {{"sparse_config", HF_REFUSE_PRESENT, NULL,
                                               "sparse_config (InfLLM-v2 sparse attention) is not "
                                               "supported: Hugging Face's MiniCPM serves dense "
                                               "attention only and refuses it too"},
                                              {0}};
static const hf_refusal mla_refusals[] = {{"attention_bias", HF_REFUSE_TRUE, NULL,
                                           "attention_bias true (biases on q_a_proj and "
                                           "kv_a_proj_with_mqa) is not modelled by "
                                           "posenc"},
                                          {0}};

/* ---- rope blocks by layer type (hf_rope_block.c) ------------------------------------ */

/* Gemma3TextConfig.convert_rope_params_to_dict: rope_scaling into the full
 * block; thetas rope_theta (1e6) and rope_local_base_freq (1e4) */
static const hf_rope_nesting gemma3_rope_blocks = {.full_theta = "rope_theta",
                                                   .full_default = 1e6,
                                                   .sliding_theta = "rope_local_base_freq",
                                                   .sliding_default = 1e4};

/* Olmo3Config.convert_rope_params_to_dict: rope_scaling into the full block;
 * rope_theta (default 5e5) is popped for the full block, so the sliding
 * block's own pop finds nothing: its theta is always the default */
static const hf_rope_nesting olmo3_rope_blocks = {.full_theta = "rope_theta",
                                                  .full_default = 5e5,
                                                  .sliding_default = 5e5};

/* ModernBertConfig.convert_rope_params_to_dict: rope_scaling into both
 * blocks; thetas global_rope_theta (160000) and local_rope_theta (10000) */
static const hf_rope_nesting modernbert_rope_blocks = {.full_theta = "global_rope_theta",
                                                       .full_default = 160000.0,
                                                       .sliding_theta = "local_rope_theta",
                                                       .sliding_default = 10000.0,
                                                       .legacy_into_sliding = true};
/* ModernBERT: Wqkv viewed [3][heads][head_dim]; the embedding norm is read
 * by hf_modernbert_weights (it has no bias) */
static const hf_tensor_names modernbert_names = {.layer_dir = "layers",
                                                 .qkv = HF_QKV_FUSED,
                                                 .q = "attn.Wqkv",
                                                 .fused = HF_FUSED_STACKED,
                                                 .norm = "attn_norm",
                                                 .embed = HF_KEYS(
                                                     "embeddings.tok_embeddings.weight")};
static const hf_refusal modernbert_refusals[] = {{"norm_bias", HF_REFUSE_TRUE, NULL,
                                                  "norm_bias true: posenc serves ModernBERT's "
                                                  "LayerNorms without bias, as every released "
                                                  "checkpoint has them"},
                                                 {NULL}};

/* Gemma4TextConfig converts no legacy key: a rope_scaling becomes
 * rope_parameters (the property's setter), a flat block its rotary
 * embedding cannot index by layer type */
static const hf_refusal gemma4_refusals[] = {{"rope_scaling", HF_REFUSE_PRESENT, NULL,
                                              "rope_scaling: Hugging Face's gemma4_text reads "
                                              "rope_parameters by layer type only and fails on "
                                              "a legacy rope_scaling"},
                                             {NULL}};
/* Gemma4TextConfig.__post_init__'s rope_parameters when the config has none */
static const hf_rope_nesting gemma4_rope_blocks = {
    .as_written = "{\"sliding_attention\": {\"rope_type\": \"default\", \"rope_theta\": 10000.0}, "
                  "\"full_attention\": {\"rope_type\": \"proportional\", "
                  "\"partial_rotary_factor\": 0.25, \"rope_theta\": 1000000.0}}"};

/* HunYuan: head_dim required (HunYuanDenseV1Config's None fails) */
static const hf_shape_keys hunyuan_shape = {
    .hidden = HF_KEYS("hidden_size"),
    .heads = HF_KEYS("num_attention_heads"),
    .kv_heads = HF_KEYS("num_key_value_heads"),
    .layers = HF_KEYS("num_hidden_layers"),
    .head_dim = HF_KEYS("head_dim"),
    .head_dim_required = true,
    .check_kv = true,
};

/* Ministral3Config.__post_init__'s block when rope_parameters is None (its
 * max_position_embeddings key, ignored by Hugging Face, left out) */
#define MINISTRAL3_DEFAULT_ROPE                                                                    \
    "{\"type\": \"yarn\", \"rope_theta\": 1000000.0, \"factor\": 16.0, "                           \
    "\"original_max_position_embeddings\": 16384, \"beta_fast\": 32.0, \"beta_slow\": 1.0, "       \
    "\"mscale_all_dim\": 1.0, \"mscale\": 1.0, \"llama_4_scaling_beta\": 0.1}"

/* ---- the architectures ------------------------------------------------------------ */

#define LLAMA_PREFIXES HF_KEYS("model.", "")
#define TRANSFORMER_PREFIXES HF_KEYS("transformer.", "")

static const hf_spec specs[] = {
    {.model_types = HF_KEYS("llama", "mistral", "mixtral", "arcee"),
     .shape = &llama_shape,
     .names = &llama_names,
     .prefixes = LLAMA_PREFIXES,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-6,
     .bias_key = "attention_bias",
     .norm = PE_NORM_RMS,
     .scheme = SCHEME_ROPE},
    {.model_types = HF_KEYS("qwen2"),
     .shape = &llama_shape,
     .names = &llama_names,
     .prefixes = LLAMA_PREFIXES,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-6,
     .bias_key = "attention_bias",
     .bias_always = true,
     .norm = PE_NORM_RMS,
     .reads_layer_types = true,
     .scheme = SCHEME_ROPE},
    {.model_types = HF_KEYS("gpt2"),
     .shape = &gpt2_shape,
     .names = &gpt2_names,
     .prefixes = TRANSFORMER_PREFIXES,
     .eps_key = "layer_norm_epsilon",
     .eps_default = 1e-5,
     .bias_always = true,
     .norm = PE_NORM_LAYER,
     .norm_bias = true,
     .scheme = SCHEME_LEARNED,
     .positions_layer0_only = true,
     .params = hf_gpt2_params,
     .weights = hf_gpt2_weights},
    {.model_types = HF_KEYS("bert"),
     .shape = &mha_shape,
     .names = &bert_names,
     .prefixes = HF_KEYS("bert.", ""),
     .eps_key = "layer_norm_eps",
     .eps_default = 1e-12,
     .eps_into = HF_EPS_EMBED_NORM,
     .bias_always = true,
     .refusals = bert_refusals,
     .embed_norm = PE_NORM_LAYER,
     .scheme = SCHEME_LEARNED,
     .positions_layer0_only = true,
     .weights = hf_bert_weights},
    {.model_types = HF_KEYS("bloom"),
     .shape = &bloom_shape,
     .names = &bloom_names,
     .prefixes = TRANSFORMER_PREFIXES,
     .eps_key = "layer_norm_epsilon",
     .eps_default = 1e-5,
     .bias_always = true,
     .norm = PE_NORM_LAYER,
     .norm_bias = true,
     .embed_norm = PE_NORM_LAYER,
     .scheme = SCHEME_ALIBI,
     .alibi_form = "bloom",
     .position_rule = MODEL_POSITIONS_BLOOM},
    {.model_types = HF_KEYS("t5", "mt5"),
     .shape = &t5_shape,
     .names = &t5_names,
     .eps_key = "layer_norm_epsilon",
     .eps_default = 1e-6,
     .norm = PE_NORM_RMS,
     .scheme = SCHEME_T5,
     .configure = hf_t5_configure,
     .weights = hf_t5_weights},
    {.model_types = HF_KEYS("gpt_neox"),
     .shape = &mha_shape,
     .names = &neox_names,
     .prefixes = HF_KEYS("gpt_neox.", ""),
     .eps_key = "layer_norm_eps",
     .eps_default = 1e-5,
     .bias_key = "attention_bias",
     .bias_default = true,
     .norm = PE_NORM_LAYER,
     .norm_bias = true,
     .scheme = SCHEME_ROPE,
     .rope = {.theta = HF_KEYS("rotary_emb_base", "rope_theta"),
              .partial = HF_KEYS("rotary_pct", "partial_rotary_factor"),
              .partial_default = 0.25}},
    {.model_types = HF_KEYS("phi"),
     .shape = &llama_shape,
     .names = &phi_names,
     .prefixes = LLAMA_PREFIXES,
     .eps_key = "layer_norm_eps",
     .eps_default = 1e-5,
     .bias_always = true,
     .norm = PE_NORM_LAYER,
     .norm_bias = true,
     .qk_norm = MODEL_QK_NORM_PER_HEAD,
     .qk_norm_key = "qk_layernorm",
     .qk_norm_type = PE_NORM_LAYER,
     .scheme = SCHEME_ROPE,
     .rope = {.partial = HF_KEYS("partial_rotary_factor"), .partial_default = 0.5}},
    {.model_types = HF_KEYS("phi3"),
     .shape = &llama_shape,
     .names = &phi3_names,
     .prefixes = LLAMA_PREFIXES,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-5,
     .refusals = phi3_refusals,
     .norm = PE_NORM_RMS,
     .scheme = SCHEME_ROPE,
     .rope = {.partial = HF_KEYS("partial_rotary_factor"), .partial_default = 1.0}},
    {.model_types = HF_KEYS("starcoder2"),
     .shape = &llama_shape,
     .names = &llama_names,
     .prefixes = LLAMA_PREFIXES,
     .eps_key = "norm_epsilon",
     .eps_default = 1e-5,
     .bias_key = "use_bias",
     .bias_default = true,
     .norm = PE_NORM_LAYER,
     .norm_bias = true,
     .scheme = SCHEME_ROPE},
    {.model_types = HF_KEYS("gemma"),
     .shape = &llama_shape,
     .names = &llama_names,
     .prefixes = LLAMA_PREFIXES,
     .head_dim_default = 256,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-6,
     .bias_key = "attention_bias",
     .norm = PE_NORM_RMS,
     .norm_one_plus = true,
     .embed_scale = HF_EMBED_GEMMA_FOLD,
     .scheme = SCHEME_ROPE},
    {.model_types = HF_KEYS("gemma2"),
     .shape = &llama_shape,
     .names = &llama_names,
     .prefixes = LLAMA_PREFIXES,
     .head_dim_default = 256,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-6,
     .bias_key = "attention_bias",
     .norm = PE_NORM_RMS,
     .norm_one_plus = true,
     .embed_scale = HF_EMBED_GEMMA_FOLD,
     .gemma_scores = true,
     .softcap_default = 50.0,
     .reads_layer_types = true,
     .scheme = SCHEME_ROPE},
    {.model_types = HF_KEYS("gemma3_text"),
     .shape = &llama_shape,
     .names = &qk_norm_names,
     .prefixes = LLAMA_PREFIXES,
     .head_dim_default = 256,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-6,
     .bias_key = "attention_bias",
     .norm = PE_NORM_RMS,
     .norm_one_plus = true,
     .qk_norm = MODEL_QK_NORM_PER_HEAD,
     .embed_scale = HF_EMBED_GEMMA_IDS,
     .gemma_scores = true,
     .reads_layer_types = true,
     .scheme = SCHEME_ROPE,
     .rope = {.nesting = &gemma3_rope_blocks},
     .configure = hf_gemma3_configure},
    {.model_types = HF_KEYS("qwen3"),
     .shape = &llama_shape,
     .names = &qk_norm_names,
     .prefixes = LLAMA_PREFIXES,
     .head_dim_default = 128,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-6,
     .bias_key = "attention_bias",
     .norm = PE_NORM_RMS,
     .qk_norm = MODEL_QK_NORM_PER_HEAD,
     .reads_layer_types = true,
     .scheme = SCHEME_ROPE},
    {.model_types = HF_KEYS("olmo2"),
     .shape = &llama_shape,
     .names = &qk_norm_names,
     .prefixes = LLAMA_PREFIXES,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-5,
     .eps_into = HF_EPS_QK_NORM,
     .bias_key = "attention_bias",
     .norm = PE_NORM_NONE,
     .qk_norm = MODEL_QK_NORM_WIDTH,
     .scheme = SCHEME_ROPE},
    {.model_types = HF_KEYS("falcon"),
     .shape = &falcon_shape,
     .names = &falcon_names,
     .prefixes = TRANSFORMER_PREFIXES,
     .eps_key = "layer_norm_epsilon",
     .eps_default = 1e-5,
     .bias_key = "bias",
     .norm = PE_NORM_LAYER,
     .norm_bias = true,
     .scheme = SCHEME_ROPE,
     .configure = hf_falcon_configure,
     .params = hf_falcon_params},
    {.model_types = HF_KEYS("mpt"),
     .shape = &mpt_shape,
     .names = &mpt_names,
     .prefixes = TRANSFORMER_PREFIXES,
     .eps_key = "layer_norm_epsilon",
     .eps_default = 1e-5,
     .refusals = mpt_refusals,
     .norm = PE_NORM_LAYER,
     .scheme = SCHEME_ALIBI,
     .position_rule = MODEL_POSITIONS_SLOT,
     .configure = hf_mpt_configure},
    {.model_types = HF_KEYS("llama4_text"),
     .shape = &llama_shape,
     .names = &llama_names,
     .prefixes = HF_KEYS("language_model.model.", "model.", ""),
     .head_dim_default = 128,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-5,
     .bias_key = "attention_bias",
     .norm = PE_NORM_RMS,
     .scheme = SCHEME_ROPE,
     .rope_theta_default = 500000.0,
     .rope_layout = "interleaved",
     .nope = HF_NOPE_EMPTY_DEFAULT,
     .configure = hf_llama4_configure},
    /* deepseek_v32, glm_moe_dsa (DeepSeek-V3.2, GLM-5): V3's q, k and v (hf_deepseek.c) */
    {.model_types = HF_KEYS("deepseek_v2", "deepseek_v3", "deepseek_v32", "glm_moe_dsa"),
     .shape = &mla_shape,
     .names = &mla_names,
     .prefixes = LLAMA_PREFIXES,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-6,
     .refusals = mla_refusals,
     .norm = PE_NORM_RMS,
     .scheme = SCHEME_ROPE,
     .configure = hf_deepseek_configure,
     .weights = hf_deepseek_weights},
    {.model_types = HF_KEYS("roberta", "xlm-roberta"),
     .shape = &mha_shape,
     .names = &bert_names,
     .prefixes = HF_KEYS("roberta.", ""),
     .eps_key = "layer_norm_eps",
     .eps_default = 1e-12,
     .eps_into = HF_EPS_EMBED_NORM,
     .bias_always = true,
     .refusals = bert_refusals,
     .embed_norm = PE_NORM_LAYER,
     .scheme = SCHEME_LEARNED,
     .positions_layer0_only = true,
     .position_rule = MODEL_POSITIONS_PAD_IDS,
     .weights = hf_roberta_weights},
    {.model_types = HF_KEYS("opt"),
     .shape = &mha_shape,
     .names = &opt_names,
     .prefixes = HF_KEYS("model.decoder.", "decoder.", ""),
     .eps_default = 1e-5,
     .bias_key = "enable_bias",
     .bias_default = true,
     .norm = PE_NORM_LAYER,
     .norm_bias = true,
     .scheme = SCHEME_LEARNED,
     .positions_layer0_only = true,
     .position_rule = MODEL_POSITIONS_OPT,
     .table_offset = 2,
     .configure = hf_opt_configure,
     .weights = hf_opt_weights},
    /* IBM Granite 3: Llama with attention_multiplier as the score scale
     * and embedding_multiplier on inputs_embeds (modeling_granite.py:
     * GraniteModel.forward multiplies token embeddings and given ones) */
    {.model_types = HF_KEYS("granite"),
     .shape = &llama_shape,
     .names = &llama_names,
     .prefixes = LLAMA_PREFIXES,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-6,
     .bias_key = "attention_bias",
     .norm = PE_NORM_RMS,
     .scheme = SCHEME_ROPE,
     .score_scale_key = "attention_multiplier",
     .score_scale_default = 1.0,
     .embed_multiplier_key = "embedding_multiplier"},
    /* SmolLM3: Llama with NoPE layers (no_rope_layers[L] 0; absent: every
     * fourth layer), rope_theta default 2e6 (SmolLM3Config) */
    {.model_types = HF_KEYS("smollm3"),
     .shape = &llama_shape,
     .names = &llama_names,
     .prefixes = LLAMA_PREFIXES,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-6,
     .bias_key = "attention_bias",
     .norm = PE_NORM_RMS,
     .scheme = SCHEME_ROPE,
     .rope_theta_default = 2e6,
     .nope = HF_NOPE_LIST,
     .reads_layer_types = true},
    {.model_types = HF_KEYS("cohere"),
     .shape = &llama_shape,
     .names = &cohere_names,
     .prefixes = LLAMA_PREFIXES,
     .eps_key = "layer_norm_eps",
     .eps_default = 1e-5,
     .bias_key = "attention_bias",
     .norm = PE_NORM_LAYER,
     .qk_norm = MODEL_QK_NORM_HEAD_WEIGHTS,
     .qk_norm_key = "use_qk_norm",
     .qk_norm_type = PE_NORM_LAYER,
     .scheme = SCHEME_ROPE,
     .rope_theta_default = 500000.0,
     .rope_layout = "interleaved"},
    {.model_types = HF_KEYS("cohere2"),
     .shape = &fixed_head_shape,
     .names = &llama_names,
     .prefixes = LLAMA_PREFIXES,
     .eps_key = "layer_norm_eps",
     .eps_default = 1e-5,
     .bias_key = "attention_bias",
     .norm = PE_NORM_LAYER,
     .reads_layer_types = true,
     .scheme = SCHEME_ROPE,
     .rope_layout = "interleaved",
     .params = hf_cohere2_params},
    {.model_types = HF_KEYS("stablelm"),
     .shape = &fixed_head_shape,
     .names = &stablelm_names,
     .prefixes = LLAMA_PREFIXES,
     .kv_heads_default = 32,
     .eps_key = "layer_norm_eps",
     .eps_default = 1e-5,
     .bias_key = "use_qkv_bias",
     .norm = PE_NORM_LAYER,
     .norm_bias = true,
     .qk_norm = MODEL_QK_NORM_HEAD_WEIGHTS,
     .qk_norm_key = "qk_layernorm",
     .qk_norm_type = PE_NORM_LAYER,
     .scheme = SCHEME_ROPE,
     .rope = {.partial = HF_KEYS("partial_rotary_factor"), .partial_default = 0.25}},
    {.model_types = HF_KEYS("minicpm"),
     .shape = &llama_shape,
     .names = &llama_names,
     .prefixes = LLAMA_PREFIXES,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-6,
     .bias_key = "attention_bias",
     .refusals = minicpm_refusals,
     .norm = PE_NORM_RMS,
     .embed_scale = HF_EMBED_GEMMA_IDS,
     .embed_scale_key = "scale_emb",
     .embed_scale_default = 12.0,
     .scheme = SCHEME_ROPE},
    {.model_types = HF_KEYS("exaone4"),
     .shape = &llama_shape,
     .names = &qk_norm_names,
     .prefixes = LLAMA_PREFIXES,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-5,
     .eps_into = HF_EPS_QK_NORM,
     .norm = PE_NORM_NONE,
     .qk_norm = MODEL_QK_NORM_PER_HEAD,
     .reads_layer_types = true,
     .scheme = SCHEME_ROPE,
     .params = hf_exaone4_params},
    /* InternLM2: Llama's attention with the grouped wqkv, biases when
     * `bias` (InternLM2Config's default true), rms_norm_eps default 1e-6,
     * rope_scaling {"type": "dynamic" | "linear", "factor"} as Llama's; its
 * _init_rope raises for any other type, and so does posenc */
    {.model_types = HF_KEYS("internlm2"),
     .shape = &fixed_head_shape,
     .names = &internlm2_names,
     .prefixes = LLAMA_PREFIXES,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-6,
     .bias_key = "bias",
     .bias_default = true,
     .norm = PE_NORM_RMS,
     .scheme = SCHEME_ROPE,
     .rope_scaling_types = HF_KEYS("dynamic", "linear")},
    /* GLM-4 (glm: glm-4-9b-chat-hf; glm4: GLM-4-0414, whose extra
     * post_self_attn / post_mlp norms act after attention): Llama's layer
     * with GlmConfig's defaults (head_dim 128, num_key_value_heads 2,
     * rms_norm_eps 1.5625e-7, attention_bias true) and the interleaved
     * rotation of the first int(head_dim * partial_rotary_factor) channels
     * (default 0.5): repeat_interleave of the cos/sin halves, pairs (2i, 2i+1) */
    {.model_types = HF_KEYS("glm", "glm4"),
     .shape = &llama_shape,
     .names = &llama_names,
     .prefixes = LLAMA_PREFIXES,
     .head_dim_default = 128,
     .kv_heads_default = 2,
     .eps_key = "rms_norm_eps",
     .eps_default = 1.5625e-7,
     .bias_key = "attention_bias",
     .bias_default = true,
     .norm = PE_NORM_RMS,
     .scheme = SCHEME_ROPE,
     .rope = {.partial = HF_KEYS("partial_rotary_factor"), .partial_default = 0.5},
     .rope_layout = "interleaved"},
    /* gpt-oss: Llama's layer with GptOssConfig's defaults (head_dim 64,
     * num_key_value_heads 8, attention_bias true, rope_theta 150000, layer_types), YaRN from its
     * rope_scaling (refused when absent), per-head sinks (hf_gpt_oss.c) */
    {.model_types = HF_KEYS("gpt_oss"),
     .shape = &llama_shape,
     .names = &llama_names,
     .prefixes = LLAMA_PREFIXES,
     .head_dim_default = 64,
     .kv_heads_default = 8,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-5,
     .bias_key = "attention_bias",
     .bias_default = true,
     .norm = PE_NORM_RMS,
     .reads_layer_types = true,
     .scheme = SCHEME_ROPE,
     .rope_theta_default = 150000.0,
     .configure = hf_gpt_oss_configure,
     .weights = hf_gpt_oss_weights},
    /* ---- text models of wrapper configs (hf_text_model.c) ---- */
    /* Qwen2-VL / Qwen2.5-VL text (Qwen2VLTextAttention): Qwen2's layer with
     * head_dim hidden / heads, biases always, rms_norm_eps 1e-5, rope_theta
     * 1e6; M-RoPE over the whole head is 1-D RoPE for text positions */
    {.model_types = HF_KEYS("qwen2_vl_text", "qwen2_5_vl_text"),
     .shape = &fixed_head_shape,
     .names = &llama_names,
     .prefixes = LLAMA_PREFIXES,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-5,
     .bias_always = true,
     .norm = PE_NORM_RMS,
     .reads_layer_types = true,
     .scheme = SCHEME_ROPE,
     .rope = {.mrope_style = PE_MROPE_CHUNKED},
     .rope_theta_default = 1e6},
    /* Qwen3-VL text (Qwen3VLTextAttention): Qwen3's layer, rope_theta 5e5;
     * head_dim default 128 (the MoE's: hidden / heads) */
    {.model_types = HF_KEYS("qwen3_vl_text"),
     .shape = &llama_shape,
     .names = &qk_norm_names,
     .prefixes = LLAMA_PREFIXES,
     .head_dim_default = 128,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-6,
     .bias_key = "attention_bias",
     .norm = PE_NORM_RMS,
     .qk_norm = MODEL_QK_NORM_PER_HEAD,
     .scheme = SCHEME_ROPE,
     .rope = {.mrope_style = PE_MROPE_INTERLEAVED, .mrope_default = {24, 20, 20}},
     .rope_theta_default = 5e5},
    {.model_types = HF_KEYS("qwen3_vl_moe_text"),
     .shape = &llama_shape,
     .names = &qk_norm_names,
     .prefixes = LLAMA_PREFIXES,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-6,
     .bias_key = "attention_bias",
     .norm = PE_NORM_RMS,
     .qk_norm = MODEL_QK_NORM_PER_HEAD,
     .scheme = SCHEME_ROPE,
     .rope = {.mrope_style = PE_MROPE_INTERLEAVED, .mrope_default = {24, 20, 20}},
     .rope_theta_default = 5e5},
    /* GLM-4.1V text (Glm4vTextAttention): head_dim hidden / heads, biases
     * always, num_key_value_heads default 2, GLM's interleaved pairs over
     * int(head_dim * partial_rotary_factor) channels (default 1) */
    {.model_types = HF_KEYS("glm4v_text"),
     .shape = &fixed_head_shape,
     .names = &llama_names,
     .prefixes = LLAMA_PREFIXES,
     .kv_heads_default = 2,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-5,
     .bias_always = true,
     .norm = PE_NORM_RMS,
     .scheme = SCHEME_ROPE,
     .rope = {.partial = HF_KEYS("partial_rotary_factor"),
              .partial_default = 1.0,
              .mrope_style = PE_MROPE_CHUNKED,
              .mrope_default = {8, 12, 12}},
     .rope_layout = "interleaved"},
    /* GLM-4.5V text (Glm4vMoeTextAttention): rotate_half over the first half
     * of each head (partial_rotary_factor default 0.5), biases when
     * attention_bias (default true), num_key_value_heads default 8 */
    {.model_types = HF_KEYS("glm4v_moe_text"),
     .shape = &llama_shape,
     .names = &llama_names,
     .prefixes = LLAMA_PREFIXES,
     .kv_heads_default = 8,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-5,
     .bias_key = "attention_bias",
     .bias_default = true,
     .norm = PE_NORM_RMS,
     .scheme = SCHEME_ROPE,
     .rope = {.partial = HF_KEYS("partial_rotary_factor"),
              .partial_default = 0.5,
              .mrope_style = PE_MROPE_CHUNKED,
              .mrope_default = {8, 12, 12}}},
    /* ---- families of 2025-26 that are table entries ---- */
    /* Qwen3-MoE (Qwen3MoeAttention): Qwen3's attention; head_dim default
     * hidden / heads, num_key_value_heads default 4 */
    {.model_types = HF_KEYS("qwen3_moe"),
     .shape = &llama_shape,
     .names = &qk_norm_names,
     .prefixes = LLAMA_PREFIXES,
     .kv_heads_default = 4,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-6,
     .bias_key = "attention_bias",
     .norm = PE_NORM_RMS,
     .qk_norm = MODEL_QK_NORM_PER_HEAD,
     .reads_layer_types = true,
     .scheme = SCHEME_ROPE},
    /* Qwen1.5/2-MoE (Qwen2MoeAttention): Qwen2's, biases when qkv_bias
     * (default true), num_key_value_heads default 16 */
    {.model_types = HF_KEYS("qwen2_moe"),
     .shape = &llama_shape,
     .names = &llama_names,
     .prefixes = LLAMA_PREFIXES,
     .kv_heads_default = 16,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-6,
     .bias_key = "qkv_bias",
     .bias_default = true,
     .norm = PE_NORM_RMS,
     .reads_layer_types = true,
     .scheme = SCHEME_ROPE},
    /* GLM-4.5/4.6/4.7 (Glm4MoeAttention): biases when attention_bias, q/k
     * RMSNorm per head when use_qk_norm, rotate_half over
     * int(head_dim * partial_rotary_factor) channels (default 0.5) */
    {.model_types = HF_KEYS("glm4_moe"),
     .shape = &llama_shape,
     .names = &qk_norm_names,
     .prefixes = LLAMA_PREFIXES,
     .kv_heads_default = 8,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-5,
     .bias_key = "attention_bias",
     .norm = PE_NORM_RMS,
     .qk_norm = MODEL_QK_NORM_PER_HEAD,
     .qk_norm_key = "use_qk_norm",
     .scheme = SCHEME_ROPE,
     .rope = {.partial = HF_KEYS("partial_rotary_factor"), .partial_default = 0.5}},
    /* Seed-OSS (SeedOssAttention): Llama's with biases when attention_bias
     * (default true), head_dim default 128, num_key_value_heads 8 */
    {.model_types = HF_KEYS("seed_oss"),
     .shape = &llama_shape,
     .names = &llama_names,
     .prefixes = LLAMA_PREFIXES,
     .head_dim_default = 128,
     .kv_heads_default = 8,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-6,
     .bias_key = "attention_bias",
     .bias_default = true,
     .norm = PE_NORM_RMS,
     .scheme = SCHEME_ROPE},
    /* Apertus (ApertusAttention): Qwen3's q/k norms before the rotation;
     * without rope keys ApertusConfig's llama3 block (hf_text_model.c) */
    {.model_types = HF_KEYS("apertus"),
     .shape = &llama_shape,
     .names = &qk_norm_names,
     .prefixes = LLAMA_PREFIXES,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-5,
     .bias_key = "attention_bias",
     .norm = PE_NORM_RMS,
     .qk_norm = MODEL_QK_NORM_PER_HEAD,
     .scheme = SCHEME_ROPE,
     .rope_theta_default = 12e6},
    /* ERNIE 4.5 (Ernie4_5Attention): biases when use_bias, GLM's adjacent
     * pairs over the whole head, rope_theta 5e5; head_dim default 128 and
     * num_key_value_heads 2 (the MoE's: hidden / heads and 4) */
    {.model_types = HF_KEYS("ernie4_5"),
     .shape = &llama_shape,
     .names = &llama_names,
     .prefixes = LLAMA_PREFIXES,
     .head_dim_default = 128,
     .kv_heads_default = 2,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-5,
     .bias_key = "use_bias",
     .norm = PE_NORM_RMS,
     .scheme = SCHEME_ROPE,
     .rope_theta_default = 5e5,
     .rope_layout = "interleaved"},
    {.model_types = HF_KEYS("ernie4_5_moe"),
     .shape = &llama_shape,
     .names = &llama_names,
     .prefixes = LLAMA_PREFIXES,
     .kv_heads_default = 4,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-5,
     .bias_key = "use_bias",
     .norm = PE_NORM_RMS,
     .scheme = SCHEME_ROPE,
     .rope_theta_default = 5e5,
     .rope_layout = "interleaved"},
    /* K-EXAONE (ExaoneMoeDecoderLayer / ExaoneMoeAttention): EXAONE 4's
     * attention (q/k norms, NoPE full layers when sliding_window is set)
     * after input_layernorm; num_key_value_heads default 32 */
    {.model_types = HF_KEYS("exaone_moe"),
     .shape = &llama_shape,
     .names = &qk_norm_names,
     .prefixes = LLAMA_PREFIXES,
     .kv_heads_default = 32,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-5,
     .norm = PE_NORM_RMS,
     .qk_norm = MODEL_QK_NORM_PER_HEAD,
     .reads_layer_types = true,
     .scheme = SCHEME_ROPE,
     .params = hf_exaone4_params},
    /* GLM-4.7-Flash (Glm4MoeLiteAttention is DeepseekV3Attention): V3's
     * multi-head latent attention with Glm4MoeLiteConfig's defaults (ranks
     * 768 / 512, qk_nope_head_dim 192, qk_rope_head_dim 64, v_head_dim 256,
     * rms_norm_eps 1e-5) */
    {.model_types = HF_KEYS("glm4_moe_lite"),
     .shape = &mla_shape,
     .names = &mla_names,
     .prefixes = LLAMA_PREFIXES,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-5,
     .refusals = mla_refusals,
     .norm = PE_NORM_RMS,
     .scheme = SCHEME_ROPE,
     .configure = hf_deepseek_configure,
     .weights = hf_deepseek_weights},
    /* Arcee Trinity (AfmoeAttention): q/k RMSNorm per head, rope on
     * sliding layers only, mup_enabled's input scale (hf_afmoe.c) */
    {.model_types = HF_KEYS("afmoe"),
     .shape = &llama_shape,
     .names = &qk_norm_names,
     .prefixes = LLAMA_PREFIXES,
     .head_dim_default = 128,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-5,
     .bias_key = "attention_bias",
     .norm = PE_NORM_RMS,
     .qk_norm = MODEL_QK_NORM_PER_HEAD,
     .reads_layer_types = true,
     .scheme = SCHEME_ROPE,
     .configure = hf_afmoe_configure,
     .params = hf_afmoe_params},
    /* ---- hybrid stacks: their attention layers (the others refused) ---- */
    /* LFM2 / LFM2-MoE: layer_types, else full_attn_idxs (the others conv);
     * norm_eps, no biases, q/k RMSNorm per head, rope_theta 1e6 */
    {.model_types = HF_KEYS("lfm2", "lfm2_moe"),
     .shape = &llama_shape,
     .names = &lfm2_names,
     .prefixes = LLAMA_PREFIXES,
     .eps_key = "norm_eps",
     .eps_default = 1e-5,
     .norm = PE_NORM_RMS,
     .qk_norm = MODEL_QK_NORM_PER_HEAD,
     .reads_layer_types = true,
     .attn_idxs_key = "full_attn_idxs",
     .scheme = SCHEME_ROPE,
     .rope_theta_default = 1e6},
    /* Granite 4.0-H (GraniteMoeHybridAttention): Granite's multipliers;
     * layer_types (alias layers_block_type, legacy mamba / attention;
     * absent: every layer linear); rope only with position_embedding_type
     * "rope" (GraniteMoeHybridModel builds no rotary embedding otherwise) */
    {.model_types = HF_KEYS("granitemoehybrid"),
     .shape = &llama_shape,
     .names = &llama_names,
     .prefixes = LLAMA_PREFIXES,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-6,
     .bias_key = "attention_bias",
     .norm = PE_NORM_RMS,
     .reads_layer_types = true,
     .layer_types_keys = HF_KEYS("layer_types", "layers_block_type"),
     .layer_types_absent = "linear_attention",
     .rope_when_key = "position_embedding_type",
     .rope_when_value = "rope",
     .scheme = SCHEME_ROPE,
     .score_scale_key = "attention_multiplier",
     .score_scale_default = 1.0,
     .embed_multiplier_key = "embedding_multiplier"},
    /* Nemotron-H / Nemotron Nano 2: NoPE attention blocks (no rotary
     * embedding), layers_block_type (alias layer_types), else
     * hybrid_override_pattern; layer_norm_epsilon, head_dim default 128,
     * num_key_value_heads 8; tensors under backbone. (model. in v5) */
    {.model_types = HF_KEYS("nemotron_h"),
     .shape = &llama_shape,
     .names = &nemotron_h_names,
     .prefixes = HF_KEYS("backbone.", "model.", ""),
     .head_dim_default = 128,
     .kv_heads_default = 8,
     .eps_key = "layer_norm_epsilon",
     .eps_default = 1e-5,
     .bias_key = "attention_bias",
     .norm = PE_NORM_RMS,
     .reads_layer_types = true,
     .layer_types_keys = HF_KEYS("layers_block_type", "layer_types"),
     .layer_pattern_key = "hybrid_override_pattern",
     .scheme = SCHEME_NONE},
    /* Falcon-H1: Llama's attention on every layer (beside Mamba) with
     * attention_in_multiplier and key_multiplier (hf_falcon_h1.c);
     * embedding_multiplier on token ids' embeddings only */
    {.model_types = HF_KEYS("falcon_h1"),
     .shape = &llama_shape,
     .names = &llama_names,
     .prefixes = LLAMA_PREFIXES,
     .kv_heads_default = 8,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-5,
     .bias_key = "attention_bias",
     .norm = PE_NORM_RMS,
     .embed_scale = HF_EMBED_GEMMA_IDS,
     .embed_scale_key = "embedding_multiplier",
     .embed_scale_default = 1.0,
     .scheme = SCHEME_ROPE,
     .weights = hf_falcon_h1_weights},
    /* rope blocks by layer type (transformers 5): OLMo 3 */
    {.model_types = HF_KEYS("olmo3"),
     .shape = &llama_shape,
     .names = &qk_norm_names,
     .prefixes = LLAMA_PREFIXES,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-5,
     .eps_into = HF_EPS_QK_NORM,
     .bias_key = "attention_bias",
     .norm = PE_NORM_NONE,
     .qk_norm = MODEL_QK_NORM_WIDTH,
     .reads_layer_types = true,
     .scheme = SCHEME_ROPE,
     .rope = {.nesting = &olmo3_rope_blocks},
     .configure = hf_olmo3_configure},
    {.model_types = HF_KEYS("modernbert"),
     .shape = &mha_shape,
     .names = &modernbert_names,
     .prefixes = HF_KEYS("model.", ""),
     .eps_key = "norm_eps",
     .eps_default = 1e-5,
     .bias_key = "attention_bias",
     .refusals = modernbert_refusals,
     .norm = PE_NORM_LAYER,
     .reads_layer_types = true,
     .scheme = SCHEME_ROPE,
     .rope = {.nesting = &modernbert_rope_blocks},
     .position_rule = MODEL_POSITIONS_SLOT,
     .configure = hf_modernbert_configure,
     .weights = hf_modernbert_weights},
    /* model keys in a flat block: Ministral 3's query scale */
    {.model_types = HF_KEYS("ministral3"),
     .shape = &llama_shape,
     .names = &llama_names,
     .prefixes = LLAMA_PREFIXES,
     .head_dim_default = 128,
     .kv_heads_default = 8,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-5,
     .norm = PE_NORM_RMS,
     .scheme = SCHEME_ROPE,
     .rope = {.block_keys = HF_KEYS("llama_4_scaling_beta", "max_position_embeddings"),
              .default_block = MINISTRAL3_DEFAULT_ROPE},
     .params = hf_ministral3_params},
    /* HunYuan: NTK-alpha (the block's alpha), q/k norms after the rotation */
    {.model_types = HF_KEYS("hunyuan_v1_dense", "hunyuan_v1_moe"),
     .shape = &hunyuan_shape,
     .names = &llama_names,
     .prefixes = LLAMA_PREFIXES,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-5,
     .bias_key = "attention_bias",
     .norm = PE_NORM_RMS,
     .scheme = SCHEME_ROPE,
     .rope = {.block_keys = HF_KEYS("alpha")},
     .params = hf_hunyuan_params,
     .weights = hf_hunyuan_weights},
    /* ---- the layer math of 2026 (one block) ---- */
    /* Qwen3-Next, Qwen3.5 / 3.6 text: gated attention, q/k RMSNorm per head
     * and the input norm as x*(1 + w), rotate_half on the first
     * partial_rotary_factor (0.25) of each 256-wide head; linear_attention
     * layers refused by name (hf_qwen3_next.c). The tensors of a Qwen3.5
     * checkpoint are under model.language_model.; Qwen3.5's interleaved
     * M-RoPE (section default [11, 11, 10]), Qwen3-Next has none. */
    {.model_types = HF_KEYS("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"),
     .shape = &llama_shape,
     .names = &hooked_qk_norm_names,
     .prefixes = HF_KEYS("model.language_model.", "model.", ""),
     .head_dim_default = 256,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-6,
     .bias_key = "attention_bias",
     .norm = PE_NORM_RMS,
     .norm_one_plus = true,
     .qk_norm = MODEL_QK_NORM_PER_HEAD,
     .scheme = SCHEME_ROPE,
     .rope = {.partial = HF_KEYS("partial_rotary_factor"),
              .partial_default = 0.25,
              .mrope_style = PE_MROPE_INTERLEAVED,
              .mrope_default = {11, 11, 10},
              .mrope_types = HF_KEYS("qwen3_5_text", "qwen3_5_moe_text")},
     .configure = hf_qwen3_next_configure,
     .weights = hf_qwen3_next_weights},
    /* Gemma 4 text (hf_gemma4.c): x*w norms (input, q, k), v's weightless
     * norm, scores scaled by 1, head_dim and kv heads per layer type, the
     * proportional rope on full layers, k_eq_v, kv-shared layers;
     * Gemma4TextConfig's defaults: head_dim 256, 4 kv heads */
    {.model_types = HF_KEYS("gemma4_text"),
     .shape = &llama_shape,
     .names = &hooked_qk_norm_names,
     .prefixes = HF_KEYS("model.language_model.", "model.", ""),
     .head_dim_default = 256,
     .kv_heads_default = 4,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-6,
     .bias_key = "attention_bias",
     .refusals = gemma4_refusals,
     .norm = PE_NORM_RMS,
     .embed_scale = HF_EMBED_GEMMA_IDS,
     .reads_layer_types = true,
     .scheme = SCHEME_ROPE,
     .rope = {.nesting = &gemma4_rope_blocks},
     .configure = hf_gemma4_configure,
     .params = hf_gemma4_params,
     .weights = hf_gemma4_weights},
    /* Gemma 3n text (hf_gemma4.c): Gemma 4's attention with one shape for
     * every layer (Gemma3nTextConfig's defaults: head_dim 256, 2 kv heads),
     * Gemma 3's rope blocks (rope_theta, rope_local_base_freq), every 5th
     * layer full, kv-shared layers (default the last 15 of 35). The input
     * of every layer's attention is AltUp's predicted stream: embeddings
     * are that; token_ids at layer 0 are refused. */
    {.model_types = HF_KEYS("gemma3n_text"),
     .shape = &llama_shape,
     .names = &hooked_qk_norm_names,
     .prefixes = HF_KEYS("model.language_model.", "model.", ""),
     .head_dim_default = 256,
     .kv_heads_default = 2,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-6,
     .bias_key = "attention_bias",
     .norm = PE_NORM_RMS,
     .reads_layer_types = true,
     .scheme = SCHEME_ROPE,
     .rope = {.nesting = &gemma3_rope_blocks},
     .token_ids_refusal = "Gemma 3n's attention input is AltUp's predicted stream "
                          "(altup.predict over altup_num_inputs projections of the token "
                          "embeddings), which posenc does not compute; send that stream "
                          "(the input of input_layernorm) as embeddings",
     .configure = hf_gemma3n_configure,
     .params = hf_gemma4_params,
     .weights = hf_gemma4_weights},
    /* MiniMax-M2: RMSNorm input norm, q_norm / k_norm over the whole q and k
     * projections (rms_norm_eps), rotate_half on the first rotary_dim
     * channels of each head (hf_minimax_m2.c); MiniMaxM2Config's defaults:
     * head_dim 128, num_key_value_heads 8, theta 5e6; no biases */
    {.model_types = HF_KEYS("minimax_m2"),
     .shape = &llama_shape,
     .names = &qk_norm_names,
     .prefixes = LLAMA_PREFIXES,
     .head_dim_default = 128,
     .kv_heads_default = 8,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-6,
     .norm = PE_NORM_RMS,
     .qk_norm = MODEL_QK_NORM_WIDTH,
     .scheme = SCHEME_ROPE,
     .rope = {.partial = HF_KEYS("partial_rotary_factor"), .partial_default = 1.0},
     .rope_theta_default = 5e6,
     .params = hf_minimax_m2_params},
};

const hf_spec *hf_spec_find(const char *model_type)
{
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
        for (const char *const *t = specs[i].model_types; *t; t++)
            if (strcmp(*t, model_type) == 0)
                return &specs[i];
    return NULL;
}

void hf_spec_names(char *buf, size_t size)
{
    size_t n = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
        for (const char *const *t = specs[i].model_types; *t; t++) {
            int k = snprintf(buf + n, size - n, "%s%s", n ? ", " : "", *t);
            if (k < 0 || (size_t)k >= size - n) {
                buf[n] = '\0'; /* no partial name */
                return;
            }
            n += (size_t)k;
        }
}
