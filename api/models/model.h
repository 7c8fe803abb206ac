/*
 * model.h - a served model: dimensions, default scheme, its input stage
 * (norms, an added vector) and weights, with the Q/K/V projection fused
 * once at construction.
 *
 * Models come from the built-in generator (model_new_default), from an
 * inline JSON object in a request (model_from_json), or from a model
 * directory (model_dir.h: posenc's own format or a Hugging Face
 * checkpoint). A model is immutable after construction and may be shared
 * by threads.
 *
 * The attention input of every model is
 *     z = norm(embed_norm(embed_scale*x + PE + input_bias))
 * where each of embed_norm, input_bias and norm may be absent. Inline and
 * posenc-format models have only `norm` (the contract's pipeline); the
 * other two let a loaded checkpoint reproduce its architecture's own path:
 * BERT adds its token-type-0 embedding and applies the embedding LayerNorm
 * (and, being post-norm, nothing else); BLOOM applies
 * word_embeddings_layernorm, then input_layernorm.
 */
#ifndef MODEL_H
#define MODEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "models/model_error.h"
#include "posenc.h"
#include "models/scheme.h"
#include "json/tensor.h"

typedef enum weight_id {
    W_WQ = 0,
    W_WK,
    W_WV,
    W_BQ,
    W_BK,
    W_BV,
    W_NORM_WEIGHT,
    W_NORM_BIAS,
    W_POSITION_TABLE,
    W_T5_BIAS,
    W_TOKEN_EMBEDDING,
    W_CONTRACT_COUNT,                /* the weights above are the contract's (inline models) */
    W_INPUT_BIAS = W_CONTRACT_COUNT, /* [d_model], added with the PE */
    W_EMBED_NORM_WEIGHT,             /* [d_model], the embed_norm's */
    W_EMBED_NORM_BIAS,               /* [d_model], layernorm only */
    W_Q_NORM_WEIGHT,                 /* q norm's: [head_dim] per head, or [heads*head_dim] */
    W_K_NORM_WEIGHT,                 /* k norm's: [head_dim] per head, or [kv_heads*head_dim] */
    W_Q_NORM_BIAS,                   /* q norm's bias, as its weight (layernorm only) */
    W_K_NORM_BIAS,                   /* k norm's bias, as its weight (layernorm only) */
    /* Multi-head latent attention (DeepSeek), [in][out] like wq: */
    W_MLA_Q_A,       /* q_a_proj [d_model][q_lora_rank] (absent without q_lora_rank) */
    W_MLA_Q_A_NORM,  /* q_a_layernorm [q_lora_rank] */
    W_MLA_Q_B,       /* q_b_proj [q_lora_rank][heads*qk_head_dim], or q_proj from d_model */
    W_MLA_KV_A,      /* kv_a_proj_with_mqa [d_model][kv_lora_rank + qk_rope_head_dim] */
    W_MLA_KV_A_NORM, /* kv_a_layernorm [kv_lora_rank] */
    W_MLA_KV_B,      /* kv_b_proj [kv_lora_rank][heads*(qk_nope_head_dim + v_head_dim)] */
    W_ATTN_SINKS,    /* [heads]: gpt_oss's per-head sink logits, reported, not in scores */
    /* Gated attention (Qwen3-Next, Qwen3.5): the gate half of q_proj, [in][out] like wq */
    W_GATE,      /* [d_model][heads*head_dim] */
    W_GATE_BIAS, /* [heads*head_dim] */
    W_COUNT
} weight_id;

/* Names of the weights, indexed by weight_id (the contract's first). */
extern const char *const weight_names[W_COUNT];

/* Where a q/k norm normalises: each head over head_dim with one weight
 * [head_dim] the heads share (Qwen3, Gemma 3, EXAONE 4), the whole
 * projection of q (k) before it is split into heads (OLMo 2), or each head
 * over head_dim with weights of its own, [heads*head_dim] for q and
 * [kv_heads*head_dim] for k (Cohere's q_norm/k_norm of shape [heads,
 * head_dim], StableLM's one LayerNorm per head; qk_norm_type layernorm).
 * A layernorm's bias, when it has one (Phi's qk_layernorm), is stored and
 * shared like its weight. */
typedef enum model_qk_norm {
    MODEL_QK_NORM_NONE = 0,
    MODEL_QK_NORM_PER_HEAD,
    MODEL_QK_NORM_WIDTH,
    MODEL_QK_NORM_HEAD_WEIGHTS
} model_qk_norm;

/* How the architecture's Hugging Face forward pass derives positions from
 * an attention mask (contract v1.1, "Padding-aware positions"); what a
 * request's attention_mask turns into (request_positions_from_mask). */
typedef enum model_position_rule {
    MODEL_POSITIONS_CUMSUM = 0, /* cumsum(mask) - 1, 1 where the mask is 0 (the default) */
    MODEL_POSITIONS_BLOOM,      /* ALiBi key positions (cumsum(mask) - 1) * mask */
    MODEL_POSITIONS_SLOT,       /* MPT: the slot index, the mask ignored */
    MODEL_POSITIONS_PAD_IDS,    /* RoBERTa: cumsum(ids != pad) * (ids != pad) + pad */
    MODEL_POSITIONS_OPT,        /* cumsum(mask) * mask - 1 (then table_offset) */
} model_position_rule;

typedef struct model {
    char *name;         /* owned */
    char *source;       /* owned: "built-in ...", "inline", a file path */
    char *architecture; /* owned: "posenc", or the checkpoint's model_type */
    /* a wrapper config (a vision-language or multimodal model's) whose
     * text model was loaded: its model_type, and whether the text keys came
     * from its text_config object (else from its top level); "" otherwise */
    char wrapper[48];
    bool text_config;
    size_t layer;      /* the attention layer the weights come from */
    const char *dtype; /* static: dtype on disk ("F32", "BF16", "mixed") */
    size_t d_model, heads, kv_heads, head_dim;
    scheme_kind scheme;
    json_t *params; /* owned reference: the model's params object, as
                              given (what /info shows) */
    scheme decoded; /* owned: params decoded once (model_decode_scheme),
                              what every request starts from */
    bool has_decoded;
    pe_norm_kind norm; /* pre-attention norm; PE_NORM_NONE when none */
    double norm_eps;
    pe_norm_kind embed_norm; /* norm of the embeddings, before `norm` */
    double embed_norm_eps;
    /* Owned. A missing weight has ndim == 0. Loaded models release the data
     * of wq..bv once fused (data NULL, shape kept for /info). */
    tensor weights[W_COUNT];
    const char *weight_dtype[W_COUNT]; /* static, NULL when not from a file */
    pe_qkv_weights qkv;                /* fused projection (w_qkv NULL when wq/wk/wv missing) */
    /* After the projection, before the rotation (loaded checkpoints only):
     * RMSNorm of q and k with W_Q/K_NORM_WEIGHT (Qwen3, OLMo 2, Gemma 3),
     * and a tanh soft cap on the scaled scores (Gemma 2). */
    model_qk_norm qk_norm;
    pe_norm_kind qk_norm_type; /* PE_NORM_RMS, or PE_NORM_LAYER (Cohere, StableLM
                                  without bias; the only kind that takes
                                  MODEL_QK_NORM_HEAD_WEIGHTS; Phi's with
                                  W_Q_NORM_BIAS, W_K_NORM_BIAS) */
    double qk_norm_eps;
    double score_softcap; /* > 0: scores = cap*tanh(scores/cap) + bias; 0: none */
    bool gated;           /* gated attention: W_GATE (and W_GATE_BIAS) give the gate */
    /* Gemma 4: a weightless RMSNorm of v per head right after the
     * projection (v_norm_eps), and v taken from k's projection (wk, bk)
     * before its norm and rotation (k_eq_v: the model has no wv, bv) */
    bool v_norm, k_eq_v;
    double v_norm_eps;
    /* Gemma 4's kv-shared layers: k and v are those of layer kv_shared_from
     * (provenance, reported by /info; the weights carry it) */
    bool kv_shared;
    size_t kv_shared_from;
    /* > 0: every q, k and v value clamped to [-qkv_clip, qkv_clip] right
     * after the projection (MPT's attn_config.clip_qkv); 0: none */
    double qkv_clip;
    /* After the rotation (Llama 4): a weightless RMSNorm of q and k per head
     * (Llama4TextL2Norm, use_qk_norm, rope layers only; HunYuan's with the
     * weights W_Q/K_NORM_WEIGHT [head_dim], present only when qk_norm is
     * none), and on the layers
     * without rope the attention-temperature tuning of q,
     * q *= log(floor((pos + 1) / floor_scale) + 1) * attn_scale + 1. */
    bool post_rope_qk_norm;
    double post_rope_qk_norm_eps;
    bool attn_temperature;
    double attn_floor_scale, attn_temperature_scale;
    /* After the rotation (Ministral 3), on every layer: q *= 1 + q_scale_beta
     * * log(1 + floor(position_id / q_scale_orig)) (pe_query_scale_mistral) */
    bool q_scale;
    double q_scale_beta, q_scale_orig;
    /* Multi-head latent attention (DeepSeek-V2/V3) instead of wq|wk|wv: q
     * and k heads are [nope | rope] of head_dim = nope + rope, v heads are
     * mla_w.v_dim wide, kv_heads == heads; the rope rotates the last
     * mla_w.rope_dim channels of each head (model_mla_rotate). mla_w's
     * matrices are borrowed from weights[W_MLA_*] (set by model_fuse). */
    bool mla;
    pe_mla_weights mla_w;
    /* static: the layer type whose block of a nested rope_parameters the
     * layer's rope comes from ("full_attention"); NULL: one block for all */
    const char *rope_block;
    /* static: how the config's legacy rotary_dim was read ("partial": the
     * first rotary_dim channels of each head rotate; MiniMax-M2), or NULL */
    const char *rotary_dim_rule;
    /* static: why token_ids are not served, though the layer is 0 (Gemma
     * 3n: its attention input is AltUp's prediction); NULL: served */
    const char *token_ids_refusal;
    model_position_rule position_rule; /* positions from a mask or token_ids */
    int64_t pad_token_id;              /* MODEL_POSITIONS_PAD_IDS only */
    int64_t table_offset;              /* added to every position of a request (OPT: 2,
                              its table's first rows are never a position) */
} model;

/* The built-in `default` model (contract "The default model"). Allocates;
 * NULL on allocation failure. */
model *model_new_default(void);

/* An inline model object at JSON path `path` ("model") of doc. Validates
 * every key, shape and the params of its scheme. NULL + *err on failure. */
model *model_from_json(json_doc *doc, const json_t *obj, const char *path, desc_error *err);

/* Decode m->params of m->scheme into m->decoded, once, when the model is
 * built (the service calls it for every loaded model). */
int model_decode_scheme(model *m, desc_error *err);

/* The names /info writes and inline models read: norm types by
 * pe_norm_kind ("none", "layernorm", "rmsnorm") and position rules by
 * model_position_rule; both NULL-terminated. */
extern const char *const model_norm_names[];
extern const char *const model_position_rule_names[];

/* The norm object obj[key] ({type, eps}; absent or null: none) at path. */
int model_parse_norm(const json_doc *doc, const json_t *obj, const char *path, const char *key,
                     pe_norm_kind *kind, double *eps, desc_error *err);

/* The steps of an inline model object beyond the contract's pipeline, under
 * /info's names (embed_norm, qk_norm, post_rope_qk_norm, attn_temperature,
 * positions, mla, attention_sinks, gate, rotary_dim_rule, v_norm, k_eq_v,
 * kv_shared_from, score_softcap, clip_qkv), after its dimensions and weights were read; then every weight
 * against what the steps need (a weight no step uses, a missing or
 * misshapen one fails). */
int model_parse_steps(json_doc *doc, const json_t *obj, const char *path, model *m,
                      desc_error *err);

/* Frees a model; accepts NULL. */
void model_free(model *m);

/* A zeroed model with its name, source and architecture copied (NULL on
 * allocation failure). */
model *model_alloc(const char *name, const char *source, const char *architecture);

/* The description keys of an inline model object or of a posenc-format
 * config.json: d_model, heads, kv_heads, head_dim, scheme, params and norm
 * into *m. `weights` is allowed only when with_weights (then the caller
 * parses it). Unknown keys: DESC_E_JSON. */
int model_parse_description(const json_t *obj, const char *path, bool with_weights, model *m,
                            desc_error *err);

/* Fuse wq|wk|wv (+ biases) into m->qkv once the three are present. */
int model_fuse(model *m, desc_error *err);

/* The q/k norms of m (none: nothing) on qkv[rows][q | k | v] as
 * pe_project_qkv lays them out, in place: RMSNorm, or LayerNorm (with the
 * q/k norm biases when loaded), as m->qk_norm_type says. */
void model_apply_qk_norm(const model *m, size_t rows, float *qkv);

/* What m does to q and k after the rotation (Llama 4's L2 norm and
 * attention temperature; none: nothing), on qkv[rows][q | k | v] in place;
 * positions[rows] are the rows' positions. */
void model_apply_post_rope(const model *m, size_t rows, const int64_t *positions, float *qkv);

/* Mistral's query scale of m (none: nothing) on the q of qkv[rows][q | k | v]
 * in place, from the rows' position ids. */
void model_apply_q_scale(const model *m, size_t rows, const int64_t *position_ids, float *qkv);

/* [rows][q | k | v] = the projection of z[rows][d_model]: the fused sgemm,
 * or multi-head latent attention's, then the model's v norm (Gemma 4). 0,
 * or -1 when out of memory (the only way it can fail). */
int model_project(const model *m, const float *z, size_t rows, float *qkv);

/* Gated attention: out[rows][heads*head_dim] = z.w_gate + b_gate, the
 * gate before its sigmoid (which multiplies the attention's output, so q,
 * k and v do not depend on it). Only for a model with W_GATE. */
void model_project_gate(const model *m, const float *z, size_t rows, float *out);

/* Width of v: heads*v_dim for MLA, else kv_heads*head_dim. */
static inline size_t model_v_width(const model *m)
{
    return m->mla ? m->heads * m->mla_w.v_dim : m->kv_heads * m->head_dim;
}

/* MLA: rotate the rope part (the last mla_w.rope_dim channels) of every
 * head of q and k in qkv[rows][q | k | v], in place, with `rope` (whose
 * head_dim and rotary_dim are mla_w.rope_dim). */
void model_mla_rotate(const model *m, const pe_rope *rope, const double *inv_freq,
                      double attention_factor, const int64_t *positions, size_t rows, float *qkv);

/* Whether weight w is present with its data. */
static inline bool model_has(const model *m, weight_id w)
{
    return m->weights[w].data != NULL;
}

/* Whether m's norm after the rotation has weights (HunYuan's). */
static inline bool model_post_rope_weighted(const model *m)
{
    return m->post_rope_qk_norm && !m->qk_norm && model_has(m, W_Q_NORM_WEIGHT);
}

#endif /* MODEL_H */
