/*
 * hf_phi.c - Phi (model_type phi: phi-1, phi-1.5, phi-2): partial rotary,
 * LayerNorm before attention, biased q/k/v projections.
 *
 * Hugging Face's PhiModel (modeling_phi.py): h = embed_tokens[ids] (no
 * scaling); layer L computes z = input_layernorm(h) (LayerNorm,
 * layer_norm_eps), then q/k/v_proj (nn.Linear, always with bias;
 * PhiAttention.__init__), and rotates the first int(head_dim *
 * partial_rotary_factor) channels of each q and k head (rotate_half
 * layout; PhiAttention.forward splits query_rot / query_pass), base
 * rope_theta, the usual rope_scaling. Scores scale by 1/sqrt(head_dim).
 *
 * Config keys read: hidden_size, num_attention_heads, num_key_value_heads,
 * head_dim, num_hidden_layers, layer_norm_eps, partial_rotary_factor
 * (default 0.5), rope_theta, rope_scaling, qk_layernorm. qk_layernorm true
 * (a LayerNorm on each q and k head before the rotation) is not modelled
 * yet and stops start-up.
 *
 * Tensors: [model.]embed_tokens.weight, [model.]layers.L.input_layernorm.
 * {weight,bias}, [model.]layers.L.self_attn.{q,k,v}_proj.{weight,bias}.
 */
#include "models/hf.h"

int hf_phi_load(hf_load *h, model_error *err)
{
    model *m = h->m;
    hf_attention_heads a;
    size_t L = h->layer;
    bool qk_layernorm;
    const hf_rope_keys keys = {.partial = HF_KEYS("partial_rotary_factor"), .partial_default = 0.5};

    if (hf_read_attention_heads(h, &a, err) ||
        hf_number(h, "layer_norm_eps", 1e-5, true, &m->norm_eps, err) ||
        hf_bool(h, "qk_layernorm", false, &qk_layernorm, err) ||
        hf_int(h, HF_KEYS("head_dim"), false, 0, 1, SCHEME_MAX_DIM, &a.head_dim, err))
        return -1;
    if (qk_layernorm)
        return hf_value_fail(h, err,
                             "qk_layernorm = true (a LayerNorm on each q and k head) is "
                             "not supported yet");
    if (hf_check_kv_heads(h, &a, err))
        return -1;
    if (hf_set_attention_heads(h, &a, err))
        return -1;
    m->scheme = SCHEME_ROPE;
    m->norm = PE_NORM_LAYER;
    if (hf_rope_params(h, m->head_dim, &keys, &m->params, err))
        return -1;

    size_t d = m->d_model;
    if (hf_qkv_proj_weights(h, err) || hf_qkv_proj_biases(h, err) ||
        hf_weight(h, W_NORM_WEIGHT, 1, d, 0, err, "layers.%zu.input_layernorm.weight", L) ||
        hf_weight(h, W_NORM_BIAS, 1, d, 0, err, "layers.%zu.input_layernorm.bias", L))
        return -1;
    if (L == 0 && hf_weight(h, W_TOKEN_EMBEDDING, 2, 0, d, err, "embed_tokens.weight"))
        return -1;
    return 0;
}
