/*
 * hf_gemma2.c - Gemma 2 (model_type gemma2: gemma-2-2b, -9b, -27b): Gemma's
 * path (hf_gemma.c: head_dim from the config, the sqrt(hidden_size)
 * normalizer, RMSNorm as x * (1 + w), the Llama rotation) with its own
 * score scale and a tanh soft cap on the scores; also the score transforms
 * Gemma 3 shares (hf_score_transforms).
 *
 * Hugging Face's Gemma2Model.forward (modeling_gemma2.py) multiplies
 * inputs_embeds (token embeddings or given ones) by the normalizer as
 * GemmaModel does; Gemma2DecoderLayer: z = input_layernorm(h);
 * Gemma2Attention: q/k/v_proj, apply_rotary_pos_emb, then
 * eager_attention_forward: scores = q.k^T * scaling with scaling =
 * query_pre_attn_scalar ** -0.5, then, when softcap (attn_logit_softcapping)
 * is not None, scores = tanh(scores / softcap) * softcap, then the mask.
 * Sliding and global layers differ only in the mask, not in q, k, v.
 * final_logit_softcapping acts on the LM head's logits: not read.
 *
 * Config keys read beyond gemma's: query_pre_attn_scalar (default 256,
 * Gemma2Config's), attn_logit_softcapping (default 50.0, Gemma2Config's;
 * null: no cap).
 */
#include <math.h>

#include "models/hf.h"

int hf_score_transforms(hf_load *h, double softcap_default, model_error *err)
{
    model *m = h->m;
    const json_t *q = json_object_get(h->config, "query_pre_attn_scalar");
    const json_t *cap = json_object_get(h->config, "attn_logit_softcapping");
    double scalar;

    /* HF computes None ** -0.5 and fails; posenc refuses likewise */
    if (q && json_is_null(q))
        return hf_value_fail(h, err,
                             "query_pre_attn_scalar is null: Hugging Face computes "
                             "query_pre_attn_scalar ** -0.5, so it must be a number > 0");
    if (hf_number(h, "query_pre_attn_scalar", 256.0, true, &scalar, err))
        return -1;
    if (json_object_set_new(m->params, "score_scale", json_real(pow(scalar, -0.5))))
        return model_nomem(err, "the model");
    m->score_softcap = softcap_default;
    if (cap && json_is_null(cap))
        m->score_softcap = 0.0; /* softcap None: eager attention skips the cap */
    else if (hf_number(h, "attn_logit_softcapping", softcap_default, true, &m->score_softcap, err))
        return -1;
    return 0;
}

int hf_gemma2_load(hf_load *h, model_error *err)
{
    if (hf_gemma_load(h, err))
        return -1;
    return hf_score_transforms(h, 50.0, err);
}
