/*
 * hf_t5.c - the T5 encoder (model_type t5, mt5): relative position
 * buckets, an RMS-style LayerNorm, no score scaling.
 *
 * Hugging Face's T5Stack (encoder): h = shared[ids] (no scaling); block L's
 * self-attention computes z = layer_norm(h) (T5LayerNorm: no mean, no bias,
 * eps layer_norm_epsilon: posenc's rmsnorm), q/k/v = z . W^T (no biases,
 * inner width num_heads*d_kv, independent of d_model), and scores
 * q.k + position_bias with no 1/sqrt(d) scaling. position_bias comes from
 * block 0's relative_attention_bias ([num_buckets][num_heads]) with the
 * bidirectional buckets of relative_attention_num_buckets and
 * relative_attention_max_distance; later blocks reuse it. So every layer
 * is scheme t5 with block 0's table and score_scale 1.
 *
 * Tensors: encoder.embed_tokens.weight or, as many checkpoints save it
 * only once, shared.weight; encoder.block.L.layer.0.layer_norm.weight,
 * encoder.block.L.layer.0.SelfAttention.{q,k,v}.weight,
 * encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight.
 */
#include "models/hf.h"

#define ATTN "encoder.block.%zu.layer.0.SelfAttention."

int hf_t5_load(hf_load *h, model_error *err)
{
    model *m = h->m;
    int64_t d, heads, d_kv, buckets, max_distance;
    size_t L = h->layer;

    if (hf_int(h, HF_KEYS("d_model"), true, 0, 1, SCHEME_MAX_DIM, &d, err) ||
        hf_int(h, HF_KEYS("num_heads"), true, 0, 1, SCHEME_MAX_DIM, &heads, err) ||
        hf_int(h, HF_KEYS("d_kv"), true, 0, 1, SCHEME_MAX_DIM, &d_kv, err) ||
        hf_check_layer(h, HF_KEYS("num_layers"), err) ||
        hf_int(h, HF_KEYS("relative_attention_num_buckets"), false, 32, 4, 1 << 20, &buckets,
               err) ||
        hf_int(h, HF_KEYS("relative_attention_max_distance"), false, 128, 1, (int64_t)1 << 40,
               &max_distance, err) ||
        hf_number(h, "layer_norm_epsilon", 1e-6, true, &m->norm_eps, err))
        return -1;
    /* The exact range of the bidirectional buckets is num_buckets/4. */
    if (max_distance <= buckets / 4)
        return hf_value_fail(h, err,
                             "relative_attention_max_distance %lld must exceed "
                             "relative_attention_num_buckets/4 = %lld",
                             (long long)max_distance, (long long)(buckets / 4));
    m->d_model = (size_t)d;
    m->heads = m->kv_heads = (size_t)heads;
    m->head_dim = (size_t)d_kv;
    m->norm = PE_NORM_RMS;
    m->scheme = SCHEME_T5;
    m->params = json_pack("{s:I, s:I, s:b, s:f}", "num_buckets", (json_int_t)buckets,
                          "max_distance", (json_int_t)max_distance, "bidirectional", 1,
                          "score_scale", 1.0);
    if (!m->params)
        return model_nomem(err, "the model");

    size_t n = m->d_model, inner = m->heads * m->head_dim;
    if (hf_linear(h, W_WQ, inner, n, err, ATTN "q.weight", L) ||
        hf_linear(h, W_WK, inner, n, err, ATTN "k.weight", L) ||
        hf_linear(h, W_WV, inner, n, err, ATTN "v.weight", L) ||
        hf_weight(h, W_NORM_WEIGHT, 1, n, 0, err, "encoder.block.%zu.layer.0.layer_norm.weight",
                  L) ||
        hf_weight(h, W_T5_BIAS, 2, (size_t)buckets, m->heads, err,
                  ATTN "relative_attention_bias.weight", (size_t)0))
        return -1;
    if (L > 0)
        return 0;
    bool own = hf_has(h, "encoder.embed_tokens.weight");
    return hf_weight(h, W_TOKEN_EMBEDDING, 2, 0, n, err, "%s",
                     own ? "encoder.embed_tokens.weight" : "shared.weight");
}
