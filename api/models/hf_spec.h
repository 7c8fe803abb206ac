/*
 * hf_spec.h - Hugging Face decoder architectures as data: one hf_spec per
 * architecture (its model_type values, config keys with their defaults and
 * aliases, tensor names, fused layouts, norms, scheme and rope settings,
 * position rule and the options it refuses), read by one generic loader
 * (hf_decoder.c). What an architecture computes differently from the
 * others lives in small hooks the spec points to (hf_<arch>.c).
 *
 * Adding a variation of an existing architecture (a Llama with other
 * defaults or keys) is a new entry in hf_specs.c plus its test fixture.
 */
#ifndef HF_SPEC_H
#define HF_SPEC_H

#include "models/hf.h"

/* Where the config's eps goes. */
typedef enum hf_eps_target {
    HF_EPS_NORM = 0,   /* m->norm_eps (and the q/k norms' and the embed norm's) */
    HF_EPS_EMBED_NORM, /* m->embed_norm_eps (BERT: the embedding LayerNorm's only) */
    HF_EPS_QK_NORM     /* m->qk_norm_eps (OLMo 2: no norm before attention) */
} hf_eps_target;

/* How q, k and v are stored. */
typedef enum hf_qkv_kind {
    HF_QKV_SEPARATE = 0, /* three nn.Linear, [out][in]: names q, k, v */
    HF_QKV_FUSED,        /* one nn.Linear stacking them (plan.fused): name q */
    HF_QKV_CONV1D,       /* GPT-2's Conv1D c_attn, [in][3*d], columns q | k | v: name q */
    HF_QKV_HOOK          /* the weights hook reads them (DeepSeek's MLA) */
} hf_qkv_kind;

/* What happens to the token embedding table (layer 0). */
typedef enum hf_embed_scale {
    HF_EMBED_PLAIN = 0,
    HF_EMBED_GEMMA_FOLD, /* Gemma / Gemma 2: sqrt(hidden) folded into table and eps */
    HF_EMBED_GEMMA_IDS   /* Gemma 3, MiniCPM: the table scaled (in its dtype), inputs_embeds
                          * not; the scale is sqrt(hidden), or embed_scale_key's value */
} hf_embed_scale;

/* How the q/k norms' weights are stored (spec.qk_norm). */
typedef enum hf_qk_norm_tensors {
    HF_QK_NORM_VECTOR = 0, /* q_norm.weight, k_norm.weight: [head_dim], or the width */
    HF_QK_NORM_MATRIX,     /* [heads][head_dim] and [kv_heads][head_dim] (Cohere) */
    HF_QK_NORM_EACH_HEAD   /* q_norm.<h>.weight of [head_dim] for every head h (StableLM's
                            * q_layernorm.norms.<h>), read into one [heads*head_dim] */
} hf_qk_norm_tensors;

/* A config option posenc does not model (or ignores with a warning). */
typedef enum hf_refusal_kind {
    HF_REFUSE_TRUE = 0, /* a boolean (default false): true stops the load */
    HF_REFUSE_FALSE,    /* a boolean (default true): false stops the load */
    HF_WARN_TRUE,       /* a boolean (default false): true is warned about */
    HF_REFUSE_STRING,   /* a string (default allowed[0]) not in allowed stops the load */
    HF_REFUSE_PRESENT   /* any value but null (or absence) stops the load */
} hf_refusal_kind;

/* Layers without rope, chosen by no_rope_layers (hf_layer_uses_rope). */
typedef enum hf_nope_rule {
    HF_NOPE_NEVER = 0,
    HF_NOPE_EMPTY_DEFAULT, /* an empty list is the interval default (Llama 4) */
    HF_NOPE_LIST           /* only an absent list is (SmolLM3) */
} hf_nope_rule;

typedef struct hf_refusal {
    const char *key; /* NULL ends the list */
    hf_refusal_kind kind;
    const char *const *allowed; /* HF_REFUSE_STRING: the accepted values */
    const char *message;        /* the whole message; "%s" marks a string's value */
} hf_refusal;

/* The config keys of the attention's shape (NULL-terminated alias lists). */
typedef struct hf_shape_keys {
    const char *const *hidden, *const *heads;
    const char *const *kv_heads; /* NULL: kv_heads = heads, not read */
    const char *const *layers;
    const char *const *head_dim; /* NULL: not read */
    bool head_dim_required;
    const char *hidden_name; /* named when heads do not divide it; NULL: the key found */
    bool check_kv;           /* heads must be a multiple of kv_heads */
} hf_shape_keys;

/* Tensor names: prefix + layer_dir "." L layer_tail "." name ".weight". */
typedef struct hf_tensor_names {
    const char *layer_dir, *layer_tail;
    hf_qkv_kind qkv;
    const char *q, *k, *v;              /* k, v: HF_QKV_SEPARATE only */
    hf_fused_layout fused;              /* HF_QKV_FUSED (a hook may change it) */
    const char *norm, *q_norm, *k_norm; /* NULL: none */
    hf_qk_norm_tensors qk_norm_tensors;
    bool qk_norm_bias;          /* also q_norm.bias, k_norm.bias (HF_QK_NORM_VECTOR, Phi) */
    const char *const *embed;   /* the first present, else the last */
    const char *position_table; /* NULL: none */
    const char *embed_norm;     /* NULL: none */
    bool embed_norm_tf_names;   /* also .gamma / .beta (BERT) */
} hf_tensor_names;

typedef struct hf_spec hf_spec;

/* The load of one checkpoint by its spec: what the config decided. Hooks
 * may change it (Falcon's layout and norm, Llama 4's scheme...). */
typedef struct hf_plan {
    const hf_spec *spec;
    hf_attention_heads a;
    const char *hidden_key; /* the hidden-size key found */
    bool bias;              /* q/k/v biases */
    scheme_kind scheme;
    pe_norm_kind norm;
    const char *norm_name;
    hf_fused_layout fused;
    bool sliding; /* layer L attends a sliding window (layer_types, Gemma 3's pattern) */
    model_qk_norm qk_norm;
} hf_plan;

/* A hook: 0, or -1 with *err set. */
typedef int (*hf_hook)(hf_load *h, hf_plan *p, model_error *err);

struct hf_spec {
    const char *const *model_types;
    const hf_shape_keys *shape;
    const hf_tensor_names *names;
    const char *const *prefixes; /* candidates, picked by the first tensor; NULL: "" */
    int64_t head_dim_default;    /* absent head_dim: 0 = hidden / heads */
    int64_t kv_heads_default;    /* absent kv_heads key: 0 = heads */
    const char *eps_key;         /* NULL: eps_default, not read */
    double eps_default;
    hf_eps_target eps_into;
    const char *bias_key; /* NULL: bias_always */
    bool bias_default, bias_always;
    const hf_refusal *refusals;
    pe_norm_kind norm, embed_norm;
    bool norm_bias;     /* the pre-attention LayerNorm has a bias */
    bool norm_one_plus; /* norm weights (also q/k norms') are used as 1 + w (Gemma) */
    model_qk_norm qk_norm;
    const char *qk_norm_key;   /* NULL: qk_norm always; else only when this boolean is true */
    pe_norm_kind qk_norm_type; /* PE_NORM_NONE: RMSNorm; PE_NORM_LAYER: LayerNorm (bias: names) */
    hf_embed_scale embed_scale;
    const char *embed_scale_key; /* HF_EMBED_GEMMA_IDS: the scale's key (NULL: sqrt(hidden)) */
    double embed_scale_default;
    bool gemma_scores; /* query_pre_attn_scalar and attn_logit_softcapping */
    /* Hugging Face reads layer_types (transformers 5's vocabulary, one per
     * layer): when present, every entry is checked and plan.sliding set */
    bool reads_layer_types;
    const char *const *layer_types_keys; /* its aliases (NULL: "layer_types") */
    /* without layer_types: the key listing the attention layers, the others
     * being linear (LFM2's full_attn_idxs; absent too: all attention), or
     * the type of every layer (NULL: none) */
    const char *attn_idxs_key;
    const char *layer_types_absent;
    /* without layer_types: Nemotron-H's pattern string, one character a
     * layer (M linear, E moe, * attention, - mlp), required then */
    const char *layer_pattern_key;
    /* the layers rotate only when this string key has this value (Granite
     * 4.0-H: position_embedding_type "rope"; absent: NoPE); NULL: always */
    const char *rope_when_key, *rope_when_value;
    double softcap_default;
    scheme_kind scheme;
    bool positions_layer0_only; /* learned positions at layer 0, scheme none later */
    hf_rope_keys rope;
    double rope_theta_default; /* 0: hf_rope_params' 10000 */
    const char *rope_layout;   /* NULL: half */
    /* the rope_scaling types the architecture's own code knows (InternLM2's
     * remote code: dynamic, linear); another stops the load. NULL: any
     * that hf_rope_params reads */
    const char *const *rope_scaling_types;
    const char *alibi_form;
    hf_nope_rule nope; /* layer L may be a NoPE layer: scheme none there */
    /* a config number that is the score scale in place of head_dim ** -0.5
     * (Granite's attention_multiplier; NULL: none) and its default */
    const char *score_scale_key;
    double score_scale_default;
    /* a config number (> 0) multiplying the input embeddings, token ids' and
     * given ones alike (Granite's embedding_multiplier; NULL: none): folded
     * into layer 0's norm eps, as RMSNorm_eps(s*x) = RMSNorm_{eps/s^2}(x) */
    const char *embed_multiplier_key;
    model_position_rule position_rule;
    int64_t table_offset;
    /* layer 0 serves embeddings only: token_ids are refused with this
     * reason and the token table is not read (NULL: served) */
    const char *token_ids_refusal;
    hf_hook configure; /* after the shape, eps, bias and refusals are read */
    hf_hook params;    /* after the shape is set and the params are built */
    hf_hook weights;   /* after the generic tensors */
};

/* The spec serving model_type, or NULL. */
const hf_spec *hf_spec_find(const char *model_type);

/* The supported model_type values, ", "-separated, into buf (cut at a
 * whole name when buf is too small). */
void hf_spec_names(char *buf, size_t size);

/* Load h's checkpoint as spec s describes. */
int hf_decoder_load(hf_load *h, const hf_spec *s, model_error *err);

/* ---- hooks (hf_<arch>.c) ---------------------------------------------------- */
int hf_falcon_configure(hf_load *h, hf_plan *p, model_error *err);
int hf_falcon_params(hf_load *h, hf_plan *p, model_error *err);
int hf_mpt_configure(hf_load *h, hf_plan *p, model_error *err);
int hf_gpt2_params(hf_load *h, hf_plan *p, model_error *err);
int hf_gpt2_weights(hf_load *h, hf_plan *p, model_error *err);
int hf_opt_configure(hf_load *h, hf_plan *p, model_error *err);
int hf_opt_weights(hf_load *h, hf_plan *p, model_error *err);
int hf_bert_weights(hf_load *h, hf_plan *p, model_error *err);
int hf_roberta_weights(hf_load *h, hf_plan *p, model_error *err);
int hf_t5_configure(hf_load *h, hf_plan *p, model_error *err);
int hf_t5_weights(hf_load *h, hf_plan *p, model_error *err);
int hf_gemma3_configure(hf_load *h, hf_plan *p, model_error *err);
int hf_llama4_configure(hf_load *h, hf_plan *p, model_error *err);
int hf_cohere2_params(hf_load *h, hf_plan *p, model_error *err);
int hf_exaone4_params(hf_load *h, hf_plan *p, model_error *err);
int hf_deepseek_configure(hf_load *h, hf_plan *p, model_error *err);
int hf_deepseek_weights(hf_load *h, hf_plan *p, model_error *err);
int hf_gpt_oss_configure(hf_load *h, hf_plan *p, model_error *err);
int hf_gpt_oss_weights(hf_load *h, hf_plan *p, model_error *err);
int hf_falcon_h1_weights(hf_load *h, hf_plan *p, model_error *err);
int hf_afmoe_configure(hf_load *h, hf_plan *p, model_error *err);
int hf_afmoe_params(hf_load *h, hf_plan *p, model_error *err);
int hf_olmo3_configure(hf_load *h, hf_plan *p, model_error *err);
int hf_modernbert_configure(hf_load *h, hf_plan *p, model_error *err);
int hf_modernbert_weights(hf_load *h, hf_plan *p, model_error *err);
int hf_ministral3_params(hf_load *h, hf_plan *p, model_error *err);
int hf_hunyuan_params(hf_load *h, hf_plan *p, model_error *err);
int hf_hunyuan_weights(hf_load *h, hf_plan *p, model_error *err);
int hf_qwen3_next_configure(hf_load *h, hf_plan *p, model_error *err);
int hf_qwen3_next_weights(hf_load *h, hf_plan *p, model_error *err);
int hf_minimax_m2_params(hf_load *h, hf_plan *p, model_error *err);
int hf_gemma4_configure(hf_load *h, hf_plan *p, model_error *err);
int hf_gemma4_params(hf_load *h, hf_plan *p, model_error *err);
int hf_gemma4_weights(hf_load *h, hf_plan *p, model_error *err);
int hf_gemma3n_configure(hf_load *h, hf_plan *p, model_error *err);

/* Gemma's embedding scale at layer 0 (hf_gemma.c): fold (Gemma, Gemma 2)
 * or scale the table only (Gemma 3; MiniCPM by scale_emb). */
int hf_gemma_embed_scale(hf_load *h, const hf_spec *s, model_error *err);

/* Whether layer L is sliding (hf_gemma.c): layer_types was read into
 * p->sliding when present; else (L + 1) % sliding_window_pattern != 0,
 * the pattern (an integer >= 1) defaulting to pattern_default. */
int hf_sliding_pattern(hf_load *h, hf_plan *p, int64_t pattern_default, model_error *err);

#endif /* HF_SPEC_H */
