/*
 * hf_gpt_neox.c - GPT-NeoX (model_type gpt_neox: Pythia): partial rotary,
 * LayerNorm before attention, one fused query_key_value projection laid out
 * per head.
 *
 * Hugging Face's GPTNeoXModel (modeling_gpt_neox.py): h = embed_in[ids]
 * (no scaling); layer L computes z = input_layernorm(h) (LayerNorm,
 * layer_norm_eps) and qkv = query_key_value(z) (nn.Linear with bias when
 * attention_bias, default true), viewed [T][heads][3*head_dim] and chunked
 * into q, k, v per head (GPTNeoXAttention.forward), so stored rows
 * (head*3 + j)*head_dim + c hold part j of head `head`. q and k are then
 * rotated on their first int(head_dim * rotary_pct) channels in the
 * rotate_half layout (apply_rotary_pos_emb splits on cos.shape[-1]), with
 * base rotary_emb_base (the config's rope_theta) and the usual
 * rope_scaling. Scores scale by 1/sqrt(head_dim). Layers differ only in
 * their input and weights.
 *
 * Config keys read: hidden_size, num_attention_heads, num_hidden_layers,
 * layer_norm_eps, attention_bias, rotary_pct (or partial_rotary_factor;
 * default 0.25), rotary_emb_base (or rope_theta), rope_scaling. A
 * use_parallel_residual of either value does not change the attention
 * input.
 *
 * Tensors: [gpt_neox.]embed_in.weight, [gpt_neox.]layers.L.input_layernorm.
 * {weight,bias}, [gpt_neox.]layers.L.attention.query_key_value.{weight,bias}
 * (the attention.bias / masked_bias / rotary_emb.inv_freq buffers of older
 * checkpoints are not read).
 */
#include <stdio.h>

#include "models/hf.h"

int hf_gpt_neox_load(hf_load *h, model_error *err)
{
    model *m = h->m;
    int64_t hidden, heads;
    size_t head_dim, L = h->layer;
    bool bias;
    char w[80], b[80];
    const hf_rope_keys keys = {.theta = HF_KEYS("rotary_emb_base", "rope_theta"),
                               .partial = HF_KEYS("rotary_pct", "partial_rotary_factor"),
                               .partial_default = 0.25};

    if (hf_int(h, HF_KEYS("hidden_size"), true, 0, 1, SCHEME_MAX_DIM, &hidden, err) ||
        hf_int(h, HF_KEYS("num_attention_heads"), true, 0, 1, SCHEME_MAX_DIM, &heads, err) ||
        hf_check_layer(h, HF_KEYS("num_hidden_layers"), err) ||
        hf_number(h, "layer_norm_eps", 1e-5, true, &m->norm_eps, err) ||
        hf_bool(h, "attention_bias", true, &bias, err) ||
        hf_head_dim(h, "hidden_size", (size_t)hidden, (size_t)heads, &head_dim, err))
        return -1;
    m->d_model = (size_t)hidden;
    m->heads = m->kv_heads = (size_t)heads;
    m->head_dim = head_dim;
    m->scheme = SCHEME_ROPE;
    m->norm = PE_NORM_LAYER;
    if (hf_rope_params(h, head_dim, &keys, &m->params, err))
        return -1;

    size_t d = m->d_model;
    snprintf(w, sizeof w, "layers.%zu.attention.query_key_value.weight", L);
    snprintf(b, sizeof b, "layers.%zu.attention.query_key_value.bias", L);
    if (hf_pick_prefix(h, HF_KEYS("gpt_neox.", ""), err, "%s", w) ||
        hf_split_fused(h, HF_FUSED_PER_HEAD, w, bias ? b : NULL, err) ||
        hf_weight(h, W_NORM_WEIGHT, 1, d, 0, err, "layers.%zu.input_layernorm.weight", L) ||
        hf_weight(h, W_NORM_BIAS, 1, d, 0, err, "layers.%zu.input_layernorm.bias", L))
        return -1;
    if (L == 0 && hf_weight(h, W_TOKEN_EMBEDDING, 2, 0, d, err, "embed_in.weight"))
        return -1;
    return 0;
}
