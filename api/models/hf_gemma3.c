/*
 * hf_gemma3.c - Gemma 3 text (model_type gemma3_text: gemma-3-1b, and the
 * text tower of the larger ones): Gemma's RMSNorm as x * (1 + w), q_norm
 * and k_norm per head (also x * (1 + w)) before the rotation, two RoPE
 * bases (sliding layers: rope_local_base_freq, default rope; global
 * layers: rope_theta and rope_scaling), query_pre_attn_scalar as the score
 * scale, and the embedding scale on token ids only.
 *
 * Hugging Face's Gemma3TextModel (modeling_gemma3.py): embed_tokens is a
 * Gemma3TextScaledWordEmbedding, whose forward returns
 * embedding(ids) * embed_scale.to(weight.dtype) with embed_scale =
 * tensor(hidden_size ** 0.5): token ids are scaled (the product in the
 * table's dtype), inputs_embeds are not. Gemma3DecoderLayer:
 * z = input_layernorm(h) (Gemma3RMSNorm: float32 x * rsqrt(mean(x^2) + eps)
 * * (1.0 + w.float())); Gemma3Attention.forward: q/k/v_proj viewed per
 * head, q = q_norm(q), k = k_norm(k) (Gemma3RMSNorm(head_dim,
 * rms_norm_eps)), then apply_rotary_pos_emb with the layer's cos/sin:
 * rotary_emb_local (a config copy with rope_theta = rope_local_base_freq
 * and rope_scaling {"rope_type": "default"}) when the layer is sliding,
 * else rotary_emb (rope_theta, default 1e6, and rope_scaling). A layer is
 * sliding when layer_types[L] is "sliding_attention", or, without
 * layer_types, when (L + 1) % sliding_window_pattern != 0 (default 6).
 * eager_attention_forward: scores = q.k^T * query_pre_attn_scalar ** -0.5,
 * soft-capped when attn_logit_softcapping is set (default None).
 *
 * Folded into the loaded weights, exactly: (1 + w) in float32 for the three
 * norms; the token table holds round_dtype(E * s) (hf_scale_embeddings).
 *
 * Config keys read: hidden_size, num_attention_heads, num_key_value_heads,
 * head_dim (default 256), num_hidden_layers, rms_norm_eps (default 1e-6),
 * attention_bias, rope_theta, rope_scaling, rope_local_base_freq (default
 * 10000), layer_types, sliding_window_pattern, query_pre_attn_scalar
 * (default 256), attn_logit_softcapping.
 *
 * Tensors: [model.]embed_tokens.weight, [model.]layers.L.input_layernorm.
 * weight, [model.]layers.L.self_attn.{q,k,v}_proj.{weight,bias},
 * [model.]layers.L.self_attn.{q,k}_norm.weight ([head_dim] each).
 */
#include <string.h>

#include "models/hf.h"

/* Whether layer L is a sliding-window layer (rotated with the local base). */
static int layer_is_sliding(hf_load *h, bool *sliding, model_error *err)
{
    const json_t *types = hf_get(h, HF_KEYS("layer_types"), NULL);
    size_t L = h->layer;

    if (types) {
        int64_t layers;
        if (!json_is_array(types))
            return hf_config_fail(h, err, "layer_types must be a list of strings");
        if (hf_int(h, HF_KEYS("num_hidden_layers"), false, (int64_t)json_array_size(types), 1,
                   INT64_MAX, &layers, err))
            return -1;
        if ((size_t)layers != json_array_size(types))
            return hf_value_fail(h, err,
                                 "layer_types has %zu entries but num_hidden_layers "
                                 "is %lld",
                                 json_array_size(types), (long long)layers);
        if (L >= json_array_size(types))
            return hf_value_fail(h, err, "layer_types has %zu entries: none for layer %zu",
                                 json_array_size(types), L);
        const char *t = json_string_value(json_array_get(types, L));
        if (!t)
            return hf_config_fail(h, err, "layer_types[%zu] must be a string", L);
        if (strcmp(t, "sliding_attention") != 0 && strcmp(t, "full_attention") != 0)
            return hf_value_fail(h, err,
                                 "layer_types[%zu] is '%.40s', not sliding_attention "
                                 "or full_attention",
                                 L, t);
        *sliding = strcmp(t, "sliding_attention") == 0;
        return 0;
    }
    int64_t pattern;
    if (hf_int(h, HF_KEYS("sliding_window_pattern"), false, 6, 1, INT64_MAX, &pattern, err))
        return -1;
    *sliding = (L + 1) % (uint64_t)pattern != 0;
    return 0;
}

/* The layer's rope: rope_scaling is read (and checked) for every layer, as
 * Hugging Face builds both rotary embeddings; a sliding layer then takes
 * the default rope of rope_local_base_freq. */
static int layer_rope(hf_load *h, bool sliding, model_error *err)
{
    model *m = h->m;
    double local;

    if (hf_rope_params(h, m->head_dim, NULL, &m->params, err) ||
        hf_number(h, "rope_local_base_freq", 10000.0, true, &local, err))
        return -1;
    /* hf_rope_params took theta from rope_scaling / rope_parameters, else
     * the top level, else 10000; Gemma3TextConfig's default is 1e6 */
    const json_t *rs = hf_get(h, HF_KEYS("rope_scaling"), NULL);
    const json_t *rp = hf_get(h, HF_KEYS("rope_parameters"), NULL);
    bool block_theta = (json_is_object(rs) && json_object_get(rs, "rope_theta")) ||
                       (json_is_object(rp) && json_object_get(rp, "rope_theta"));
    if (!sliding && !hf_get(h, HF_KEYS("rope_theta"), NULL) && !block_theta)
        return json_object_set_new(m->params, "base", json_real(1e6)) /* Gemma3TextConfig's */
                   ? model_nomem(err, "the model")
                   : 0;
    if (!sliding)
        return 0;
    json_decref(m->params);
    m->params = json_pack("{s:f, s:s}", "base", local, "layout", "half");
    return m->params ? 0 : model_nomem(err, "the model");
}

static void one_plus(tensor *t)
{
    for (size_t i = 0; i < t->dim[0]; i++)
        t->data[i] = 1.0f + t->data[i]; /* (1.0 + weight.float()), a float32 sum */
}

int hf_gemma3_load(hf_load *h, model_error *err)
{
    model *m = h->m;
    hf_attention_heads a;
    size_t L = h->layer;
    bool bias, sliding = false;

    if (hf_read_attention_heads(h, &a, err) ||
        hf_number(h, "rms_norm_eps", 1e-6, true, &m->norm_eps, err) ||
        hf_bool(h, "attention_bias", false, &bias, err) ||
        hf_int(h, HF_KEYS("head_dim"), false, 256, 1, SCHEME_MAX_DIM, &a.head_dim, err) ||
        layer_is_sliding(h, &sliding, err))
        return -1;
    if (hf_check_kv_heads(h, &a, err))
        return -1;
    if (hf_set_attention_heads(h, &a, err))
        return -1;
    m->scheme = SCHEME_ROPE;
    m->norm = PE_NORM_RMS;
    m->qk_norm = MODEL_QK_NORM_PER_HEAD;
    m->qk_norm_eps = m->norm_eps;
    if (layer_rope(h, sliding, err) || hf_score_transforms(h, 0.0, err))
        return -1;

    size_t d = m->d_model;
    if (hf_qkv_proj_weights(h, err) ||
        hf_weight(h, W_NORM_WEIGHT, 1, d, 0, err, "layers.%zu.input_layernorm.weight", L) ||
        hf_weight(h, W_Q_NORM_WEIGHT, 1, m->head_dim, 0, err, "layers.%zu.self_attn.q_norm.weight",
                  L) ||
        hf_weight(h, W_K_NORM_WEIGHT, 1, m->head_dim, 0, err, "layers.%zu.self_attn.k_norm.weight",
                  L))
        return -1;
    if (bias && hf_qkv_proj_biases(h, err))
        return -1;
    one_plus(&m->weights[W_NORM_WEIGHT]);
    one_plus(&m->weights[W_Q_NORM_WEIGHT]);
    one_plus(&m->weights[W_K_NORM_WEIGHT]);
    /* token ids are scaled by the embedding itself; inputs_embeds are not */
    double s;
    if (L == 0 && (hf_weight(h, W_TOKEN_EMBEDDING, 2, 0, d, err, "embed_tokens.weight") ||
                   hf_scale_embeddings(h, &s, err)))
        return -1;
    return 0;
}
