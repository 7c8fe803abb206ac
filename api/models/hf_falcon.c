/*
 * hf_falcon.c - what Falcon (model_type falcon: falcon-7b, falcon-40b;
 * its spec in hf_specs.c) decides from its architecture flags: which of
 * three layouts its fused query_key_value has, which norm feeds the
 * attention, its key/value head count, and its ALiBi (alibi = true).
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
 * Without alibi, q and k are rotated over whole heads in the rotate_half
 * layout (FalconRotaryEmbedding: rope_theta, rope_scaling / rope_parameters
 * as Llama's); scores scale by 1/sqrt(head_dim), head_dim = hidden/heads.
 *
 * alibi = true (falcon-rw-1b): no rotation. FalconModel.forward builds the
 * bias with build_alibi_tensor from the attention mask (ones without one):
 * key positions (cumsum(mask) - 1) * mask (MODEL_POSITIONS_BLOOM), BLOOM's
 * slopes in float32, then slopes.bfloat16() * positions - a bfloat16
 * product, so the slope, the position (257 becomes 256) and the product
 * are rounded to bfloat16 whatever the model's dtype. posenc follows the
 * default (sdpa) path: _update_causal_mask folds alibi / sqrt(head_dim)
 * (a float32 division) into the mask, which scaled_dot_product_attention
 * adds once to q.k / sqrt(head_dim): alibi form "bloom", bf16 true,
 * bias_divisor sqrt(head_dim). The eager path (output_attentions) adds
 * alibi before the 1/sqrt(head_dim) scale and again through that mask;
 * posenc does not model it.
 *
 * Refused at start-up, naming the key:
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
#include <math.h>

#include "models/hf_spec.h"

int hf_falcon_configure(hf_load *h, hf_plan *p, model_error *err)
{
    bool new_arch, multi_query, parallel_attn, alibi;
    int64_t num_ln; /* num_ln_in_parallel_attn after FalconDecoderLayer's default */
    hf_attention_heads *a = &p->a;

    if (hf_bool(h, "alibi", false, &alibi, err) ||
        hf_bool(h, "new_decoder_architecture", false, &new_arch, err) ||
        hf_bool(h, "multi_query", true, &multi_query, err) ||
        hf_bool(h, "parallel_attn", true, &parallel_attn, err) ||
        hf_int(h, HF_KEYS("num_ln_in_parallel_attn"), false, new_arch ? 2 : 0, 1, 2, &num_ln, err))
        return -1;
    bool builds_ln_attn = parallel_attn && num_ln == 2;
    bool reads_ln_attn = new_arch && num_ln == 2;
    if (builds_ln_attn != reads_ln_attn)
        return hf_value_fail(h, err,
                             "new_decoder_architecture = %s with parallel_attn = %s "
                             "and num_ln_in_parallel_attn = 2: Hugging Face's "
                             "FalconDecoderLayer %s ln_attn but its forward %s it",
                             new_arch ? "true" : "false", parallel_attn ? "true" : "false",
                             builds_ln_attn ? "builds" : "does not build",
                             reads_ln_attn ? "reads" : "does not read");
    if (new_arch) {
        if (a->heads % a->kv_heads != 0)
            return hf_value_fail(h, err,
                                 "num_attention_heads %lld is not a multiple of "
                                 "num_kv_heads %lld",
                                 (long long)a->heads, (long long)a->kv_heads);
    } else if (multi_query) {
        a->kv_heads = 1; /* FalconAttention: num_kv_heads ignored for multi-query */
    } else if (a->kv_heads != a->heads) {
        return hf_value_fail(h, err,
                             "num_kv_heads = %lld with new_decoder_architecture and "
                             "multi_query false: the fused [heads][3][head_dim] layout has one "
                             "k and v per head (%lld)",
                             (long long)a->kv_heads, (long long)a->heads);
    }
    p->fused = new_arch ? HF_FUSED_GROUPED : multi_query ? HF_FUSED_STACKED : HF_FUSED_PER_HEAD;
    p->norm_name = reads_ln_attn ? "ln_attn" : "input_layernorm";
    if (alibi)
        p->scheme = SCHEME_ALIBI; /* FalconAttention.forward rotates only without alibi */
    return 0;
}

/* alibi: build_alibi_tensor's bfloat16 bias over BLOOM's key positions,
 * divided by sqrt(head_dim) as the sdpa mask (the header). */
int hf_falcon_params(hf_load *h, hf_plan *p, model_error *err)
{
    model *m = h->m;

    if (p->scheme != SCHEME_ALIBI)
        return 0;
    m->position_rule = MODEL_POSITIONS_BLOOM;
    if (json_object_set_new(m->params, "form", json_string("bloom")) ||
        json_object_set_new(m->params, "bf16", json_true()) ||
        json_object_set_new(m->params, "bias_divisor", json_real(sqrt((double)m->head_dim))))
        return model_nomem(err, "the model");
    return 0;
}
