/*
 * hf_falcon_h1.c - Falcon-H1's attention multipliers (model_type
 * falcon_h1; its spec in hf_specs.c: Llama's layer, embedding_multiplier
 * on token ids' embeddings only).
 *
 * Hugging Face's FalconH1DecoderLayer (modeling_falcon_h1.py) runs the
 * attention beside the Mamba mixer on every layer: z = input_layernorm(h)
 * (RMSNorm, rms_norm_eps), then self_attn(z * attention_in_multiplier);
 * FalconH1Attention.forward: q_proj, k_proj(.) * key_multiplier, v_proj
 * (biases when attention_bias), rotate_half over the whole head. The
 * multipliers are linear, so they are folded into the weights: W_q, W_v
 * times attention_in_multiplier, W_k times both, b_k times
 * key_multiplier (FalconH1Config: both default 1).
 */
#include "models/hf_spec.h"

static void scale(tensor *t, double s)
{
    size_t n = t->ndim == 2 ? t->dim[0] * t->dim[1] : t->ndim == 1 ? t->dim[0] : 0;

    for (size_t i = 0; t->data && i < n; i++)
        t->data[i] = (float)(t->data[i] * s);
}

int hf_falcon_h1_weights(hf_load *h, hf_plan *p, model_error *err)
{
    model *m = h->m;
    double in, key;

    (void)p;
    if (hf_number(h, "attention_in_multiplier", 1.0, false, &in, err) ||
        hf_number(h, "key_multiplier", 1.0, false, &key, err))
        return -1;
    scale(&m->weights[W_WQ], in);
    scale(&m->weights[W_WK], in * key);
    scale(&m->weights[W_WV], in);
    scale(&m->weights[W_BK], key);
    return 0;
}
