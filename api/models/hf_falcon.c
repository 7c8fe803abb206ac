/*
 * hf_falcon.c - Falcon (model_type falcon: falcon-7b, falcon-40b): RoPE,
 * LayerNorm before attention, one fused query_key_value projection in one
 * of three layouts.
 *
 * Hugging Face's FalconModel (modeling_falcon.py): h = word_embeddings[ids]
 * (no scaling, no embedding norm). FalconDecoderLayer.forward feeds the
 * attention with ln_attn(h) when new_decoder_architecture and
 * num_ln_in_parallel_attn == 2 (its default under the new architecture),
 * else with input_layernorm(h); both LayerNorm with bias, eps
 * layer_norm_epsilon. FalconAttention: fused = query_key_value(z)
 * (FalconLinear, bias when `bias`), split by _split_heads:
 * - new_decoder_architecture: viewed [num_kv_heads][heads/kv + 2][head_dim],
 *   per kv group its q heads, then its k, then its v (HF_FUSED_GROUPED; the
 *   broadcast of k and v over the group is grouped-query attention);
 * - else multi_query: [heads + 2][head_dim], all q heads, one k, one v
 *   (HF_FUSED_STACKED with one kv head);
 * - else: [heads][3][head_dim] (HF_FUSED_PER_HEAD).
 * q and k are rotated over whole heads in the rotate_half layout
 * (FalconRotaryEmbedding: rope_theta, rope_scaling / rope_parameters as
 * Llama's); scores scale by 1/sqrt(head_dim), head_dim = hidden/heads.
 *
 * Refused at start-up, naming the key:
 * - alibi = true: build_alibi_tensor rounds slope*key_position to bfloat16,
 *   and the bias is added to q.k before the 1/sqrt(head_dim) scale (the
 *   eager path then adds it a second time through the causal mask, the
 *   sdpa path once); posenc's alibi scheme adds an unscaled float32 bias
 *   after the scale, so no param choice reproduces it.
 * - a norm layout FalconDecoderLayer cannot run: __init__ builds ln_attn
 *   iff parallel_attn and num_ln_in_parallel_attn == 2, forward reads it
 *   iff new_decoder_architecture and num_ln_in_parallel_attn == 2; when
 *   they disagree Hugging Face fails on the missing module.
 * - num_kv_heads other than the head count without the new architecture
 *   and without multi_query (the [heads][3][head_dim] view has no room for
 *   it; HF's reshape fails).
 *
 * Config keys read: hidden_size (n_embed wins, as FalconConfig),
 * num_attention_heads, num_kv_heads, num_hidden_layers, layer_norm_epsilon,
 * alibi, new_decoder_architecture, multi_query (default true),
 * parallel_attn (default true), num_ln_in_parallel_attn, bias, rope_theta,
 * rope_scaling / rope_parameters.
 *
 * Tensors: [transformer.]word_embeddings.weight,
 * [transformer.]h.L.{ln_attn|input_layernorm}.{weight,bias},
 * [transformer.]h.L.self_attention.query_key_value.{weight,bias}.
 */
#include <stdio.h>

#include "models/hf.h"

typedef struct falcon_config {
    int64_t hidden, heads, kv_heads;
    bool alibi, new_arch, multi_query, parallel_attn, bias;
    int64_t num_ln; /* num_ln_in_parallel_attn after FalconDecoderLayer's default; 0: none */
} falcon_config;

static int read_config(hf_load *h, falcon_config *c, model_error *err)
{
    if (hf_int(h, HF_KEYS("n_embed", "hidden_size"), true, 0, 1, SCHEME_MAX_DIM, &c->hidden, err) ||
        hf_int(h, HF_KEYS("num_attention_heads"), true, 0, 1, SCHEME_MAX_DIM, &c->heads, err) ||
        hf_int(h, HF_KEYS("num_kv_heads"), false, c->heads, 1, SCHEME_MAX_DIM, &c->kv_heads, err) ||
        hf_check_layer(h, HF_KEYS("num_hidden_layers"), err) ||
        hf_number(h, "layer_norm_epsilon", 1e-5, true, &h->m->norm_eps, err) ||
        hf_bool(h, "alibi", false, &c->alibi, err) ||
        hf_bool(h, "new_decoder_architecture", false, &c->new_arch, err) ||
        hf_bool(h, "multi_query", true, &c->multi_query, err) ||
        hf_bool(h, "parallel_attn", true, &c->parallel_attn, err) ||
        hf_bool(h, "bias", false, &c->bias, err) ||
        hf_int(h, HF_KEYS("num_ln_in_parallel_attn"), false, c->new_arch ? 2 : 0, 1, 2, &c->num_ln,
               err))
        return -1;
    if (c->alibi)
        return hf_value_fail(h, err,
                             "alibi = true is not supported: Falcon rounds "
                             "slope*position to bfloat16 and adds it to q.k before the "
                             "1/sqrt(head_dim) scale, which posenc's alibi scheme (an unscaled "
                             "float bias after the scale) does not reproduce");
    bool builds_ln_attn = c->parallel_attn && c->num_ln == 2;
    bool reads_ln_attn = c->new_arch && c->num_ln == 2;
    if (builds_ln_attn != reads_ln_attn)
        return hf_value_fail(h, err,
                             "new_decoder_architecture = %s with parallel_attn = %s "
                             "and num_ln_in_parallel_attn = 2: Hugging Face's "
                             "FalconDecoderLayer %s ln_attn but its forward %s it",
                             c->new_arch ? "true" : "false", c->parallel_attn ? "true" : "false",
                             builds_ln_attn ? "builds" : "does not build",
                             reads_ln_attn ? "reads" : "does not read");
    if (c->new_arch) {
        if (c->heads % c->kv_heads != 0)
            return hf_value_fail(h, err,
                                 "num_attention_heads %lld is not a multiple of "
                                 "num_kv_heads %lld",
                                 (long long)c->heads, (long long)c->kv_heads);
    } else if (c->multi_query) {
        c->kv_heads = 1; /* FalconAttention: num_kv_heads ignored for multi-query */
    } else if (c->kv_heads != c->heads) {
        return hf_value_fail(h, err,
                             "num_kv_heads = %lld with new_decoder_architecture and "
                             "multi_query false: the fused [heads][3][head_dim] layout has one "
                             "k and v per head (%lld)",
                             (long long)c->kv_heads, (long long)c->heads);
    }
    return 0;
}

int hf_falcon_load(hf_load *h, model_error *err)
{
    model *m = h->m;
    falcon_config c;
    size_t head_dim, L = h->layer;
    char w[80], b[80];

    if (read_config(h, &c, err))
        return -1;
    const char *dkey;
    hf_get(h, HF_KEYS("n_embed", "hidden_size"), &dkey);
    if (hf_head_dim(h, dkey, (size_t)c.hidden, (size_t)c.heads, &head_dim, err))
        return -1;
    m->d_model = (size_t)c.hidden;
    m->heads = (size_t)c.heads;
    m->kv_heads = (size_t)c.kv_heads;
    m->head_dim = head_dim;
    m->scheme = SCHEME_ROPE;
    m->norm = PE_NORM_LAYER;
    if (hf_rope_params(h, head_dim, NULL, &m->params, err))
        return -1;

    hf_fused_layout layout = c.new_arch      ? HF_FUSED_GROUPED
                             : c.multi_query ? HF_FUSED_STACKED
                                             : HF_FUSED_PER_HEAD;
    const char *norm = c.new_arch && c.num_ln == 2 ? "ln_attn" : "input_layernorm";
    size_t d = m->d_model;
    snprintf(w, sizeof w, "h.%zu.self_attention.query_key_value.weight", L);
    snprintf(b, sizeof b, "h.%zu.self_attention.query_key_value.bias", L);
    if (hf_pick_prefix(h, HF_KEYS("transformer.", ""), err, "%s", w) ||
        hf_split_fused(h, layout, w, c.bias ? b : NULL, err) ||
        hf_weight(h, W_NORM_WEIGHT, 1, d, 0, err, "h.%zu.%s.weight", L, norm) ||
        hf_weight(h, W_NORM_BIAS, 1, d, 0, err, "h.%zu.%s.bias", L, norm))
        return -1;
    if (L == 0 && hf_weight(h, W_TOKEN_EMBEDDING, 2, 0, d, err, "word_embeddings.weight"))
        return -1;
    return 0;
}
