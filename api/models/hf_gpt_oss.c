/*
 * hf_gpt_oss.c - gpt_oss (gpt-oss-20b, gpt-oss-120b): Llama's attention
 * with biases, head_dim 64 and YaRN (hf_specs.c), plus one learned sink
 * logit per head (self_attn.sinks, [num_attention_heads]).
 *
 * GptOssAttention's eager path appends each head's sink to every query
 * row's logits before the softmax and drops its column after it: the sink
 * takes probability mass, it changes no logit. posenc's `scores` stay the
 * tokens' pre-softmax logits; the sinks are read (a wrong shape stops the
 * load naming the tensor) and reported in /info as attention_sinks.
 */
#include "models/hf_spec.h"

/* GptOssConfig's rope_scaling default is a yarn block (factor 32,
 * original_max_position_embeddings 4096, beta 32/1, truncate false): a
 * config that leaves it out would be computed without it, so it is refused. */
int hf_gpt_oss_configure(hf_load *h, hf_plan *p, model_error *err)
{
    (void)p;
    /* present, or null: what the checkpoint asked for */
    if (!json_object_get(h->config, "rope_scaling") &&
        !json_object_get(h->config, "rope_parameters"))
        return hf_value_fail(h, err,
                             "rope_scaling is absent: GptOssConfig's default is a yarn block "
                             "(factor 32, original_max_position_embeddings 4096, truncate "
                             "false); give it explicitly (or null for none)");
    return 0;
}

int hf_gpt_oss_weights(hf_load *h, hf_plan *p, model_error *err)
{
    const hf_tensor_names *n = p->spec->names;

    return hf_weight(h, W_ATTN_SINKS, 1, h->m->heads, 0, err, "%s.%zu.self_attn.sinks",
                     n->layer_dir, h->layer);
}
