/*
 * hf_llama.c - the Llama family (model_type llama, mistral, mixtral,
 * qwen2): RoPE, grouped-query attention, RMSNorm before attention.
 *
 * Hugging Face's LlamaModel: h = embed_tokens[ids] (no scaling); layer L
 * computes z = input_layernorm(h) (RMSNorm, rms_norm_eps), then q/k/v_proj
 * (nn.Linear, stored [out][in], biases when attention_bias, always for
 * qwen2 whatever the key says), then rotates q and k per head with the rope
 * of rope_theta / rope_scaling in the half (rotate_half) layout over the
 * whole head: LlamaRotaryEmbedding ignores partial_rotary_factor for the
 * default rope (posenc warns), and a scaled rope with a factor < 1 fails
 * in Hugging Face (cos/sin narrower than the head), so it is refused.
 * The rope applies at every layer, so layer L differs from layer 0 only in
 * its input (the hidden state) and its weights.
 *
 * Tensors: [model.]embed_tokens.weight, [model.]layers.L.input_layernorm.weight,
 * [model.]layers.L.self_attn.{q,k,v}_proj.{weight,bias}. The "model." prefix
 * is what *ForCausalLM checkpoints carry; bare LlamaModel ones have none.
 */
#include <string.h>

#include "models/hf.h"

int hf_llama_load(hf_load *h, model_error *err)
{
    model *m = h->m;
    const char *arch = m->architecture;
    hf_attention_heads a;
    bool bias;
    size_t L = h->layer;

    if (hf_read_attention_heads(h, &a, err) ||
        hf_number(h, "rms_norm_eps", 1e-6, true, &m->norm_eps, err) ||
        hf_bool(h, "attention_bias", false, &bias, err))
        return -1;
    /* Qwen2Attention builds q/k/v_proj with bias=True and never reads
     * attention_bias (modeling_qwen2.py); the others follow the key. */
    if (strcmp(arch, "qwen2") == 0)
        bias = true;
    if (hf_check_kv_heads(h, &a, err))
        return -1;
    if (hf_int(h, HF_KEYS("head_dim"), false, 0, 1, SCHEME_MAX_DIM, &a.head_dim, err))
        return -1;
    if (hf_set_attention_heads(h, &a, err))
        return -1;
    m->scheme = SCHEME_ROPE;
    m->norm = PE_NORM_RMS;
    if (hf_rope_params(h, m->head_dim, NULL, &m->params, err))
        return -1;

    size_t d = m->d_model;
    if (hf_qkv_proj_weights(h, err) ||
        hf_weight(h, W_NORM_WEIGHT, 1, d, 0, err, "layers.%zu.input_layernorm.weight", L))
        return -1;
    if (bias && hf_qkv_proj_biases(h, err))
        return -1;
    if (L == 0 && hf_weight(h, W_TOKEN_EMBEDDING, 2, 0, d, err, "embed_tokens.weight"))
        return -1;
    return 0;
}
