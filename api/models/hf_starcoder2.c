/*
 * hf_starcoder2.c - StarCoder2 (model_type starcoder2): RoPE over whole
 * heads, grouped-query attention, LayerNorm before attention, biases when
 * use_bias.
 *
 * Hugging Face's Starcoder2Model (modeling_starcoder2.py): h =
 * embed_tokens[ids] (no scaling; embedding_dropout only in training);
 * layer L computes z = input_layernorm(h) (nn.LayerNorm, norm_epsilon),
 * then q/k/v_proj (nn.Linear, bias=use_bias; Starcoder2Attention.__init__),
 * and rotates q and k per head exactly as Llama does (rotate_half over
 * head_dim, base rope_theta, rope_scaling). Scores scale by
 * 1/sqrt(head_dim). sliding_window only masks scores beyond a distance
 * (not modelled in scores; it does not change q, k or v).
 *
 * Config keys read: hidden_size, num_attention_heads, num_key_value_heads,
 * head_dim, num_hidden_layers, norm_epsilon, use_bias (default true),
 * rope_theta, rope_scaling.
 *
 * Tensors: [model.]embed_tokens.weight, [model.]layers.L.input_layernorm.
 * {weight,bias}, [model.]layers.L.self_attn.{q,k,v}_proj.{weight,bias}.
 */
#include "models/hf.h"

int hf_starcoder2_load(hf_load *h, model_error *err)
{
    model *m = h->m;
    hf_attention_heads a;
    size_t L = h->layer;
    bool bias;

    if (hf_read_attention_heads(h, &a, err) ||
        hf_number(h, "norm_epsilon", 1e-5, true, &m->norm_eps, err) ||
        hf_bool(h, "use_bias", true, &bias, err) ||
        hf_int(h, HF_KEYS("head_dim"), false, 0, 1, SCHEME_MAX_DIM, &a.head_dim, err))
        return -1;
    if (hf_check_kv_heads(h, &a, err))
        return -1;
    if (hf_set_attention_heads(h, &a, err))
        return -1;
    m->scheme = SCHEME_ROPE;
    m->norm = PE_NORM_LAYER;
    if (hf_rope_params(h, m->head_dim, NULL, &m->params, err))
        return -1;

    size_t d = m->d_model;
    if (hf_qkv_proj_weights(h, err) ||
        hf_weight(h, W_NORM_WEIGHT, 1, d, 0, err, "layers.%zu.input_layernorm.weight", L) ||
        hf_weight(h, W_NORM_BIAS, 1, d, 0, err, "layers.%zu.input_layernorm.bias", L))
        return -1;
    if (bias && hf_qkv_proj_biases(h, err))
        return -1;
    if (L == 0 && hf_weight(h, W_TOKEN_EMBEDDING, 2, 0, d, err, "embed_tokens.weight"))
        return -1;
    return 0;
}
