/*
 * hf_t5.c - what the T5 encoder (model_type t5, mt5; its spec in
 * hf_specs.c) adds: relative position buckets, no score scaling.
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
#include "models/hf_spec.h"

#define ATTN "encoder.block.%zu.layer.0.SelfAttention."

int hf_t5_configure(hf_load *h, hf_plan *p, model_error *err)
{
    int64_t buckets, max_distance;

    (void)p;
    if (hf_int(h, HF_KEYS("relative_attention_num_buckets"), false, 32, 4, 1 << 20, &buckets,
               err) ||
        hf_int(h, HF_KEYS("relative_attention_max_distance"), false, 128, 1, (int64_t)1 << 40,
               &max_distance, err))
        return -1;
    /* The exact range of the bidirectional buckets is num_buckets/4. */
    if (max_distance <= buckets / 4)
        return hf_value_fail(h, err,
                             "relative_attention_max_distance %lld must exceed "
                             "relative_attention_num_buckets/4 = %lld",
                             (long long)max_distance, (long long)(buckets / 4));
    h->m->params = json_pack("{s:I, s:I, s:b, s:f}", "num_buckets", (json_int_t)buckets,
                             "max_distance", (json_int_t)max_distance, "bidirectional", 1,
                             "score_scale", 1.0);
    return h->m->params ? 0 : model_nomem(err, "the model");
}

/* Block 0's relative_attention_bias, which every block uses. */
int hf_t5_weights(hf_load *h, hf_plan *p, model_error *err)
{
    model *m = h->m;
    size_t buckets = (size_t)json_integer_value(json_object_get(m->params, "num_buckets"));

    (void)p;
    return hf_weight(h, W_T5_BIAS, 2, buckets, m->heads, err, ATTN "relative_attention_bias.weight",
                     (size_t)0);
}
