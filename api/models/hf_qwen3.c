/*
 * hf_qwen3.c - Qwen3 (model_type qwen3: Qwen3-0.6B ... Qwen3-32B): the
 * Llama path plus an RMSNorm of q and of k per head, over head_dim, after
 * the projection and before the rotation; head_dim from the config.
 *
 * Hugging Face's Qwen3Model (modeling_qwen3.py): h = embed_tokens[ids] (or
 * inputs_embeds, no scaling); Qwen3DecoderLayer.forward computes
 * z = input_layernorm(h) (Qwen3RMSNorm: float32 x * rsqrt(mean(x^2) + eps),
 * times w); Qwen3Attention.forward: q = q_norm(q_proj(z).view(..., head_dim)),
 * k = k_norm(k_proj(z).view(...)) with q_norm/k_norm Qwen3RMSNorm(head_dim,
 * rms_norm_eps), v = v_proj(z); then apply_rotary_pos_emb (rotate_half,
 * the rope of rope_theta / rope_scaling over the whole head, as Llama's).
 * Projections have biases when attention_bias (Qwen3, unlike Qwen2, reads
 * the key). Scores scale by head_dim ** -0.5.
 *
 * Config keys read: hidden_size, num_attention_heads, num_key_value_heads,
 * head_dim (default 128, Qwen3Config's), num_hidden_layers, rms_norm_eps
 * (default 1e-6), attention_bias, rope_theta, rope_scaling.
 *
 * Tensors: [model.]embed_tokens.weight, [model.]layers.L.input_layernorm.
 * weight, [model.]layers.L.self_attn.{q,k,v}_proj.{weight,bias},
 * [model.]layers.L.self_attn.{q,k}_norm.weight ([head_dim] each).
 */
#include "models/hf.h"

int hf_qwen3_load(hf_load *h, model_error *err)
{
    model *m = h->m;
    hf_attention_heads a;
    size_t L = h->layer;
    bool bias;

    if (hf_read_attention_heads(h, &a, err) ||
        hf_number(h, "rms_norm_eps", 1e-6, true, &m->norm_eps, err) ||
        hf_bool(h, "attention_bias", false, &bias, err) ||
        hf_int(h, HF_KEYS("head_dim"), false, 128, 1, SCHEME_MAX_DIM, &a.head_dim, err))
        return -1;
    if (hf_check_kv_heads(h, &a, err))
        return -1;
    if (hf_set_attention_heads(h, &a, err))
        return -1;
    m->scheme = SCHEME_ROPE;
    m->norm = PE_NORM_RMS;
    m->qk_norm = MODEL_QK_NORM_PER_HEAD;
    m->qk_norm_eps = m->norm_eps; /* q_norm and k_norm take rms_norm_eps too */
    if (hf_rope_params(h, m->head_dim, NULL, &m->params, err))
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
    if (L == 0 && hf_weight(h, W_TOKEN_EMBEDDING, 2, 0, d, err, "embed_tokens.weight"))
        return -1;
    return 0;
}
