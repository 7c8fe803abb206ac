/*
 * hf.h - what the Hugging Face loader (hf_decoder.c, driven by the
 * architecture table of hf_spec.h) and its per-architecture hooks share:
 * the load in progress, config.json readers and tensor readers whose
 * errors (model_error.h) name the file and the key or tensor, the rope
 * parameters and the splitting of fused projections.
 *
 * A load maps one architecture's config keys and tensors onto a model
 * (model.h) so that /apply reproduces that architecture's path from token
 * embeddings (layer 0) or the hidden state (later layers) to the Q, K and V
 * of the chosen layer's first attention. Weights end in the contract's
 * orientation ([d_model][out], Q = Z.W); model_dir.c fuses them afterwards.
 */
#ifndef HF_H
#define HF_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "models/model.h"
#include "models/model_error.h"
#include "models/safetensors.h"

/* A Hugging Face checkpoint being loaded. */
typedef struct hf_load {
    const char *config_path; /* for messages */
    const json_t *config;    /* config.json, an object */
    st_set *weights;
    size_t layer;    /* the chosen layer */
    char prefix[32]; /* tensor-name prefix, "" or e.g. "model." */
    /* a wrapper's candidate prefixes, tried in place of the spec's (static;
     * NULL: the spec's) */
    const char *const *prefixes;
    model *m;                 /* being filled; freed by the caller on error */
    const model_warner *warn; /* borrowed; where accepted oddities are reported */
} hf_load;

/* Gemma's embedding scale (hf_gemma.c): m's loaded token table becomes
 * round_dtype(E * s) with s = value (sqrt(hidden_size), or MiniCPM's
 * scale_emb) rounded to float32 and then to the table's dtype, as Hugging
 * Face's normalizer tensor (Gemma3TextScaledWordEmbedding's embed_scale)
 * and its product in that dtype; *scale = s. An overflow of the dtype
 * fails, naming `what` (the scale's name). */
int hf_scale_embeddings(hf_load *h, double value, const char *what, double *scale,
                        model_error *err);

/* Gemma 2 and 3's scores (hf_gemma.c): params.score_scale =
 * query_pre_attn_scalar ** -0.5 (default 256) and m->score_softcap =
 * attn_logit_softcapping (absent: softcap_default; null or 0 default: none). */
int hf_score_transforms(hf_load *h, double softcap_default, model_error *err);

/* ---- config.json --------------------------------------------------------- */

/* The value of the first of `keys` (NULL-terminated aliases, in order of
 * precedence) that is present and not null, or NULL; *which gets its name. */
const json_t *hf_get(const hf_load *h, const char *const *keys, const char **which);

/* An integer in [lo, hi] under one of `keys`; absent: dflt, or an error
 * when required. */
int hf_int(const hf_load *h, const char *const *keys, bool required, int64_t dflt, int64_t lo,
           int64_t hi, int64_t *out, model_error *err);

/* A number (JSON integer or real); absent: dflt. positive: must be > 0. */
int hf_number(const hf_load *h, const char *key, double dflt, bool positive, double *out,
              model_error *err);

/* The same under the first present of `keys` (aliases in precedence order). */
int hf_number_of(const hf_load *h, const char *const *keys, double dflt, bool positive, double *out,
                 model_error *err);

/* A boolean; absent: dflt. */
int hf_bool(const hf_load *h, const char *key, bool dflt, bool *out, model_error *err);

/* A string; absent: dflt (may be NULL). Borrowed from the config. */
int hf_string(const hf_load *h, const char *key, const char *dflt, const char **out,
              model_error *err);

/* layer_types (under the first present of `keys`: a list of one string
 * per layer, num_hidden_layers long, in
 * transformers 5's vocabulary): whether layer L is "sliding_attention"
 * (else full or chunked attention); a value transformers does not know, at
 * any layer, stops the load naming the entry, and so does layer L of a
 * type posenc does not serve (hf_serve_layer_type). */
int hf_layer_type(const hf_load *h, const char *const *keys, bool *sliding, model_error *err);

/* Layer L's type from `key`, a list of the attention layers' indices
 * (LFM2's full_attn_idxs; absent: every layer): full_attention when L is
 * listed, else linear_attention (refused, hf_serve_layer_type). */
int hf_attention_layer_list(const hf_load *h, const char *key, bool *sliding, model_error *err);

/* Layer L's type from the pattern string under `key` (NemotronHConfig's
 * _pattern_to_list: M linear_attention, E moe, * full_attention, - mlp),
 * num_hidden_layers characters long. */
int hf_pattern_layer_type(const hf_load *h, const char *key, bool *sliding, model_error *err);

/* A layer type's name in transformers 5's vocabulary, legacy names
 * ("mamba", "conv", "attention") remapped; NULL when unknown. */
const char *hf_layer_type_name(const char *t);

/* Layer L of type `type` (hf_layer_type_name's): full, sliding (*sliding)
 * and chunked attention are served; another type fails naming it. */
int hf_serve_layer_type(const hf_load *h, const char *type, bool *sliding, model_error *err);

/* Whether layer L rotates (Llama 4, SmolLM3): no_rope_layers[L] (1 rope,
 * 0 none; a list of num_hidden_layers), or, when the list is absent (or
 * empty with empty_is_default), (L + 1) % no_rope_layer_interval != 0
 * (interval 4). */
int hf_layer_uses_rope(const hf_load *h, bool empty_is_default, bool *rope, model_error *err);

/* The layer must be < the layer count under `keys` (when present). */
int hf_check_layer(const hf_load *h, const char *const *keys, model_error *err);

/* `d` must equal heads*head_dim: "<what> %zu is not divisible by ...". */
int hf_head_dim(const hf_load *h, const char *hidden_key, size_t hidden, size_t heads,
                size_t *head_dim, model_error *err);

/* The attention shape every decoder config gives (hidden_size,
 * num_attention_heads, num_key_value_heads, head_dim). */
typedef struct hf_attention_heads {
    int64_t hidden, heads, kv_heads;
    int64_t head_dim; /* 0: hidden / heads */
} hf_attention_heads;

/* heads must be a multiple of kv_heads: "num_attention_heads %lld is not a
 * multiple of num_key_value_heads %lld". */
int hf_check_kv_heads(const hf_load *h, const hf_attention_heads *a, model_error *err);

/* Fail naming the config file: "<config_path>: <message>". A key that is
 * missing or of the wrong type (MODEL_E_KEY)... */
int hf_config_fail(const hf_load *h, model_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* ...or a value posenc cannot take or does not model (MODEL_E_VALUE). */
int hf_value_fail(const hf_load *h, model_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* One warning line "<config_path>: <message>" to h->warn. */
void hf_warn(const hf_load *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- tensors --------------------------------------------------------------- */

/* Choose h->prefix: the first of `prefixes` under which the tensor named by
 * the format (given the layer) exists. None: an error naming the tensor. */
int hf_pick_prefix(hf_load *h, const char *const *prefixes, model_error *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Whether prefix+name exists. */
bool hf_has(const hf_load *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Read prefix+name into m->weights[w] as is: shape [d0] (ndim 1) or
 * [d0][d1] (ndim 2); a 0 accepts any size. Records the dtype. */
int hf_weight(hf_load *h, weight_id w, size_t ndim, size_t d0, size_t d1, model_error *err,
              const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* Read an nn.Linear weight stored [out][in] into m->weights[w] as
 * [in][out] (the contract's orientation). */
int hf_linear(hf_load *h, weight_id w, size_t out_features, size_t in_features, model_error *err,
              const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Read prefix+name (any float dtype) as a plain tensor of the given shape
 * (0 = any), for loaders that split or reorder it. *dtype as st_set_read. */
int hf_tensor(hf_load *h, size_t ndim, size_t d0, size_t d1, tensor *out, const char **dtype,
              model_error *err, const char *fmt, ...) __attribute__((format(printf, 8, 9)));

/* A new [rows][cols] tensor (uninitialised) for loaders that build a weight. */
int hf_new_matrix(tensor *t, size_t rows, size_t cols, model_error *err);

/* ---- RoPE ---------------------------------------------------------------- */

/* How an architecture's convert_rope_params_to_dict nests its rope blocks
 * by layer type (Gemma 3, OLMo 3, ModernBERT): rope_parameters is then
 * {"full_attention": {...}, "sliding_attention": {...}}, and a legacy
 * rope_scaling / top-level theta is moved into those blocks. */
typedef struct hf_rope_nesting {
    /* the top-level key that gives each block's rope_theta when the block
     * has none (Gemma 3: rope_theta and rope_local_base_freq; ModernBERT:
     * global_rope_theta and local_rope_theta), and its default. NULL: the
     * default only (OLMo 3's sliding block: its rope_theta was popped for
     * the full block already) */
    const char *full_theta, *sliding_theta;
    double full_default, sliding_default;
    bool legacy_into_sliding; /* rope_scaling goes into both blocks (ModernBERT),
                               * else into full_attention only */
    /* Gemma 4 (written nested already, no conversion): each block is used
     * as written, so a missing block, rope_type or rope_theta fails; the
     * whole rope_parameters (JSON text) when the config has none. NULL:
     * the conversion above */
    const char *as_written;
} hf_rope_nesting;

/* Where an architecture keeps its rope settings in config.json. */
typedef struct hf_rope_keys {
    const char *const *theta; /* rope_theta's aliases, in order (NULL: "rope_theta") */
    /* partial_rotary_factor's aliases: the architecture rotates
     * int(head_dim * factor) channels of each head (GPT-NeoX, Phi, Phi-3).
     * NULL: it rotates whole heads (Llama, Starcoder2, Gemma); then a
     * top-level or block partial_rotary_factor is ignored with a warning
     * for the default rope and refused for a scaled one, where Hugging
     * Face's own rotation would fail (cos/sin narrower than the head). */
    const char *const *partial;
    double partial_default; /* when no alias is present (with partial) */
    /* keys of a block that the architecture reads itself (Ministral's
     * llama_4_scaling_beta, HunYuan's alpha): not warned about. NULL: none */
    const char *const *block_keys;
    /* multimodal rope: the style the architecture turns a block's
     * mrope_section by (PE_MROPE_NONE: it reads no such key), and the
     * section its rotary embedding falls back to without one ({0}: none,
     * the model is 1-D); the block's mrope_interleaved is read as well */
    pe_mrope_style mrope_style;
    size_t mrope_default[3];
    const char *const *mrope_types; /* the entry's model_types it applies to (NULL: all) */
    const hf_rope_nesting *nesting; /* NULL: one flat block for every layer */
    /* a flat architecture's block (JSON text) when config.json has neither
     * rope_parameters nor a non-empty rope_scaling (Ministral3Config's
     * __post_init__ default); NULL: none, the default rope */
    const char *default_block;
} hf_rope_keys;

/* The rope block that serves layers of `layer_type` ("full_attention",
 * "sliding_attention"; ignored by a flat architecture), standardized as
 * Hugging Face's convert_rope_params_to_dict and standardize_rope_params
 * make it: rope_type and rope_theta always set, original_max_position_
 * embeddings where the type needs it (see hf_rope_block.c). New reference
 * in *block (NULL with *name NULL when the architecture has no block at
 * all: the default rope with the top-level theta); *name (static) names
 * where it came from for messages and /info: "rope_scaling",
 * "rope_parameters" or "rope_parameters.<layer_type>". *nested tells a
 * block of a nested rope_parameters (yarn's truncate is then not read,
 * and a top-level original_max_position_embeddings not used). */
int hf_rope_block(const hf_load *h, const hf_rope_keys *keys, const char *layer_type,
                  json_t **block, const char **name, bool *nested, model_error *err);

/* The rope params object of a config for layers of `layer_type` (NULL:
 * a flat architecture's only block): base (rope_theta), layout "half",
 * partial_rotary_factor, rope_type "proportional" when so, and the scaling
 * object with Hugging Face's defaults made explicit (see hf_rope.c).
 * head_dim is the model's; keys NULL is Llama's. Keys of the block that
 * Hugging Face does not read for its type are warned about. New reference
 * in *params; *block_name (static, may be NULL) as hf_rope_block's. This
 * is what a spec hook calls for an architecture whose layers take blocks
 * by type (Gemma 4: full_attention's proportional, sliding_attention's
 * default). */
int hf_rope_layer_params(const hf_load *h, size_t head_dim, const hf_rope_keys *keys,
                         const char *layer_type, json_t **params, const char **block_name,
                         model_error *err);

/* hf_rope_layer_params of a flat architecture. */
int hf_rope_params(const hf_load *h, size_t head_dim, const hf_rope_keys *keys, json_t **params,
                   model_error *err);

/* ---- fused projections ---------------------------------------------------- */

/* How a fused nn.Linear [rows][in] stacks Q, K and V in its rows. */
typedef enum hf_fused_layout {
    HF_FUSED_PER_HEAD, /* per head: q, k, v blocks of head_dim (BLOOM, GPT-NeoX) */
    HF_FUSED_STACKED,  /* all of q, then k, then v (Phi-3's qkv_proj, MPT's Wqkv) */
    HF_FUSED_GROUPED   /* per kv head: its heads/kv_heads q heads, then its k, then
                        * its v (Falcon's new_decoder_architecture) */
} hf_fused_layout;

/* Read the fused weight `weight_name` (and `bias_name`, NULL for none;
 * both with the prefix) and split it into W_WQ/W_WK/W_WV (and the biases)
 * in the contract's orientation. PER_HEAD needs kv_heads == heads. */
int hf_split_fused(hf_load *h, hf_fused_layout layout, const char *weight_name,
                   const char *bias_name, model_error *err);

#define HF_KEYS(...) ((const char *const[]){__VA_ARGS__, NULL})

#endif /* HF_H */
