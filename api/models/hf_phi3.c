/*
 * hf_phi3.c - Phi-3 (model_type phi3: Phi-3, Phi-3.5-mini, Phi-4-mini): one
 * fused qkv_proj stacked [q; k; v], RMSNorm before attention, longrope,
 * partial rotary.
 *
 * Hugging Face's Phi3Model (modeling_phi3.py): h = embed_tokens[ids] (no
 * scaling); layer L computes z = input_layernorm(h) (Phi3RMSNorm,
 * rms_norm_eps) and qkv = qkv_proj(z) (nn.Linear, no bias), whose first
 * heads*head_dim outputs are q, the next kv_heads*head_dim k and the rest
 * v (Phi3Attention.forward). q and k are rotated on their first
 * int(head_dim * partial_rotary_factor) channels (apply_rotary_pos_emb
 * splits on cos.shape[-1]), rotate_half layout, base rope_theta, with
 * rope_scaling (Phi-3's longrope: short_factor / long_factor of
 * rotary_dim/2 entries, original_max_position_embeddings at the top level,
 * factor max_position_embeddings / original, attention factor
 * sqrt(1 + ln(factor) / ln(original))). Scores scale by 1/sqrt(head_dim).
 *
 * Config keys read: hidden_size, num_attention_heads, num_key_value_heads,
 * head_dim, num_hidden_layers, rms_norm_eps, partial_rotary_factor
 * (default 1), rope_theta, rope_scaling, original_max_position_embeddings,
 * max_position_embeddings. attention_bias is not read by Phi3Attention
 * (qkv_proj never has a bias): true is ignored with a warning.
 *
 * Tensors: [model.]embed_tokens.weight, [model.]layers.L.input_layernorm.
 * weight, [model.]layers.L.self_attn.qkv_proj.weight.
 */
#include <stdio.h>

#include "models/hf.h"

int hf_phi3_load(hf_load *h, model_error *err)
{
    model *m = h->m;
    hf_attention_heads a;
    size_t L = h->layer;
    bool bias;
    char w[80];
    const hf_rope_keys keys = {.partial = HF_KEYS("partial_rotary_factor"), .partial_default = 1.0};

    if (hf_read_attention_heads(h, &a, err) ||
        hf_number(h, "rms_norm_eps", 1e-5, true, &m->norm_eps, err) ||
        hf_bool(h, "attention_bias", false, &bias, err) ||
        hf_int(h, HF_KEYS("head_dim"), false, 0, 1, SCHEME_MAX_DIM, &a.head_dim, err))
        return -1;
    if (bias)
        hf_warn(h, "attention_bias = true is ignored: Phi-3's qkv_proj has no bias");
    if (hf_check_kv_heads(h, &a, err))
        return -1;
    if (hf_set_attention_heads(h, &a, err))
        return -1;
    m->scheme = SCHEME_ROPE;
    m->norm = PE_NORM_RMS;
    if (hf_rope_params(h, m->head_dim, &keys, &m->params, err))
        return -1;

    size_t d = m->d_model;
    snprintf(w, sizeof w, "layers.%zu.self_attn.qkv_proj.weight", L);
    if (hf_pick_prefix(h, HF_KEYS("model.", ""), err, "%s", w) ||
        hf_split_fused(h, HF_FUSED_STACKED, w, NULL, err) ||
        hf_weight(h, W_NORM_WEIGHT, 1, d, 0, err, "layers.%zu.input_layernorm.weight", L))
        return -1;
    if (L == 0 && hf_weight(h, W_TOKEN_EMBEDDING, 2, 0, d, err, "embed_tokens.weight"))
        return -1;
    return 0;
}
