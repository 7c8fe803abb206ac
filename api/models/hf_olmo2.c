/*
 * hf_olmo2.c - OLMo 2 (model_type olmo2: OLMo-2-1B, -7B, -13B): no norm
 * before attention, an RMSNorm of the whole q projection and of the whole
 * k projection (before they are split into heads), then the rotation.
 *
 * Hugging Face's Olmo2Model (modeling_olmo2.py): h = embed_tokens[ids] (or
 * inputs_embeds, no scaling); Olmo2DecoderLayer.forward passes h itself to
 * self_attn and normalises afterwards (post_attention_layernorm), so the
 * attention input is the hidden state; Olmo2Attention.forward:
 * q = q_norm(q_proj(h)), k = k_norm(k_proj(h)) with
 * q_norm = Olmo2RMSNorm(heads * head_dim) and k_norm =
 * Olmo2RMSNorm(kv_heads * head_dim), both rms_norm_eps (float32
 * x * rsqrt(mean(x^2) + eps), times w), v = v_proj(h); then the views per
 * head and apply_rotary_pos_emb (rotate_half, rope_theta / rope_scaling
 * over the whole head). Scores scale by head_dim ** -0.5.
 *
 * Config keys read: hidden_size, num_attention_heads, num_key_value_heads,
 * head_dim (absent: hidden_size / num_attention_heads, as Olmo2Attention's
 * getattr), num_hidden_layers, rms_norm_eps (default 1e-5, Olmo2Config's),
 * attention_bias, rope_theta, rope_scaling.
 *
 * Tensors: [model.]embed_tokens.weight, [model.]layers.L.self_attn.
 * {q,k,v}_proj.{weight,bias}, [model.]layers.L.self_attn.q_norm.weight
 * ([heads*head_dim]) and k_norm.weight ([kv_heads*head_dim]).
 */
#include "models/hf.h"

int hf_olmo2_load(hf_load *h, model_error *err)
{
    model *m = h->m;
    hf_attention_heads a;
    size_t L = h->layer;
    bool bias;

    if (hf_read_attention_heads(h, &a, err) ||
        hf_number(h, "rms_norm_eps", 1e-5, true, &m->qk_norm_eps, err) ||
        hf_bool(h, "attention_bias", false, &bias, err) ||
        hf_int(h, HF_KEYS("head_dim"), false, 0, 1, SCHEME_MAX_DIM, &a.head_dim, err))
        return -1;
    if (hf_check_kv_heads(h, &a, err))
        return -1;
    if (hf_set_attention_heads(h, &a, err))
        return -1;
    m->scheme = SCHEME_ROPE;
    m->norm = PE_NORM_NONE; /* OLMo 2 normalises after attention, not before */
    m->qk_norm = MODEL_QK_NORM_WIDTH;
    if (hf_rope_params(h, m->head_dim, NULL, &m->params, err))
        return -1;

    size_t d = m->d_model, qd = m->heads * m->head_dim, kvd = m->kv_heads * m->head_dim;
    if (hf_qkv_proj_weights(h, err) ||
        hf_weight(h, W_Q_NORM_WEIGHT, 1, qd, 0, err, "layers.%zu.self_attn.q_norm.weight", L) ||
        hf_weight(h, W_K_NORM_WEIGHT, 1, kvd, 0, err, "layers.%zu.self_attn.k_norm.weight", L))
        return -1;
    if (bias && hf_qkv_proj_biases(h, err))
        return -1;
    if (L == 0 && hf_weight(h, W_TOKEN_EMBEDDING, 2, 0, d, err, "embed_tokens.weight"))
        return -1;
    return 0;
}
