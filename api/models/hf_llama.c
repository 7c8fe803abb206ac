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
    int64_t hidden, heads, kv_heads, head_dim;
    bool bias;
    size_t L = h->layer;

    if (hf_int(h, HF_KEYS("hidden_size"), true, 0, 1, SCHEME_MAX_DIM, &hidden, err) ||
        hf_int(h, HF_KEYS("num_attention_heads"), true, 0, 1, SCHEME_MAX_DIM, &heads, err) ||
        hf_int(h, HF_KEYS("num_key_value_heads"), false, heads, 1, SCHEME_MAX_DIM, &kv_heads,
               err) ||
        hf_check_layer(h, HF_KEYS("num_hidden_layers"), err) ||
        hf_number(h, "rms_norm_eps", 1e-6, true, &m->norm_eps, err) ||
        hf_bool(h, "attention_bias", false, &bias, err))
        return -1;
    /* Qwen2Attention builds q/k/v_proj with bias=True and never reads
     * attention_bias (modeling_qwen2.py); the others follow the key. */
    if (strcmp(arch, "qwen2") == 0)
        bias = true;
    if (heads % kv_heads != 0)
        return hf_value_fail(h, err,
                             "num_attention_heads %lld is not a multiple of "
                             "num_key_value_heads %lld",
                             (long long)heads, (long long)kv_heads);
    if (hf_int(h, HF_KEYS("head_dim"), false, 0, 1, SCHEME_MAX_DIM, &head_dim, err))
        return -1;
    if (!head_dim) {
        size_t hd;
        if (hf_head_dim(h, "hidden_size", (size_t)hidden, (size_t)heads, &hd, err))
            return -1;
        head_dim = (int64_t)hd;
    }
    m->d_model = (size_t)hidden;
    m->heads = (size_t)heads;
    m->kv_heads = (size_t)kv_heads;
    m->head_dim = (size_t)head_dim;
    m->scheme = SCHEME_ROPE;
    m->norm = PE_NORM_RMS;
    if (hf_rope_params(h, m->head_dim, NULL, &m->params, err))
        return -1;

    size_t d = m->d_model, qd = m->heads * m->head_dim, kvd = m->kv_heads * m->head_dim;
    if (hf_pick_prefix(h, HF_KEYS("model.", ""), err, "layers.%zu.self_attn.q_proj.weight", L) ||
        hf_linear(h, W_WQ, qd, d, err, "layers.%zu.self_attn.q_proj.weight", L) ||
        hf_linear(h, W_WK, kvd, d, err, "layers.%zu.self_attn.k_proj.weight", L) ||
        hf_linear(h, W_WV, kvd, d, err, "layers.%zu.self_attn.v_proj.weight", L) ||
        hf_weight(h, W_NORM_WEIGHT, 1, d, 0, err, "layers.%zu.input_layernorm.weight", L))
        return -1;
    if (bias && (hf_weight(h, W_BQ, 1, qd, 0, err, "layers.%zu.self_attn.q_proj.bias", L) ||
                 hf_weight(h, W_BK, 1, kvd, 0, err, "layers.%zu.self_attn.k_proj.bias", L) ||
                 hf_weight(h, W_BV, 1, kvd, 0, err, "layers.%zu.self_attn.v_proj.bias", L)))
        return -1;
    if (L == 0 && hf_weight(h, W_TOKEN_EMBEDDING, 2, 0, d, err, "embed_tokens.weight"))
        return -1;
    return 0;
}
