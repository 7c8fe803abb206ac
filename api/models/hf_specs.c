/*
 * hf_specs.c - the table of Hugging Face architectures posenc loads (see
 * hf_spec.h): per architecture, what its modeling_<arch>.py reads from the
 * config and the checkpoint on the way from token embeddings (layer 0) or
 * the hidden state (later layers) to the Q, K and V of a layer's attention.
 *
 * What each entry encodes, in Hugging Face's terms:
 * - llama, mistral, mixtral, qwen2: h = embed_tokens[ids]; z =
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
 *   per head, two rope bases by layer type (hf_gemma.c).
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
 *
 * layer_types (qwen2, qwen3, gemma2, gemma3_text, smollm3: sliding_attention
 * or full_attention per layer; only the mask differs, except Gemma 3's
 * rope) is checked for every layer: another value stops the load naming the entry.
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

/* Gated attention (hf_qwen3_next.c): q_proj holds [query | gate] per head */
static const hf_tensor_names gated_names = {
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

/* ---- the architectures ------------------------------------------------------------ */

#define LLAMA_PREFIXES HF_KEYS("model.", "")
#define TRANSFORMER_PREFIXES HF_KEYS("transformer.", "")

static const hf_spec specs[] = {
    {.model_types = HF_KEYS("llama", "mistral", "mixtral"),
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
     .rope_theta_default = 1e6,
     .configure = hf_gemma3_configure,
     .params = hf_gemma3_params},
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
     * rope_scaling {"type": "dynamic" | "linear", "factor"} as Llama's */
    {.model_types = HF_KEYS("internlm2"),
     .shape = &fixed_head_shape,
     .names = &internlm2_names,
     .prefixes = LLAMA_PREFIXES,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-6,
     .bias_key = "bias",
     .bias_default = true,
     .norm = PE_NORM_RMS,
     .scheme = SCHEME_ROPE},
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
    /* ---- the layer math of 2026 (one block) ---- */
    /* Qwen3-Next, Qwen3.5 / 3.6 text: gated attention, q/k RMSNorm per head
     * and the input norm as x*(1 + w), rotate_half on the first
     * partial_rotary_factor (0.25) of each 256-wide head; linear_attention
     * layers refused by name (hf_qwen3_next.c). The tensors of a Qwen3.5
     * checkpoint are under model.language_model. */
    {.model_types = HF_KEYS("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"),
     .shape = &llama_shape,
     .names = &gated_names,
     .prefixes = HF_KEYS("model.language_model.", "model.", ""),
     .head_dim_default = 256,
     .eps_key = "rms_norm_eps",
     .eps_default = 1e-6,
     .bias_key = "attention_bias",
     .norm = PE_NORM_RMS,
     .norm_one_plus = true,
     .qk_norm = MODEL_QK_NORM_PER_HEAD,
     .scheme = SCHEME_ROPE,
     .rope = {.partial = HF_KEYS("partial_rotary_factor"), .partial_default = 0.25},
     .configure = hf_qwen3_next_configure,
     .weights = hf_qwen3_next_weights},
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
