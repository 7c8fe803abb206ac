/*
 * hf_gemma.c - what the Gemma family computes differently (model_type
 * gemma, gemma2, gemma3_text; their specs in hf_specs.c): the embedding
 * normalizer, Gemma 2 and 3's score scale and soft cap, and Gemma 3's two
 * rope bases by layer type.
 *
 * The normalizer. GemmaModel and Gemma2Model (modeling_gemma.py,
 * modeling_gemma2.py) multiply inputs_embeds (token embeddings or given
 * ones) by normalizer = tensor(hidden_size ** 0.5, dtype=h.dtype), the
 * product in that dtype. Folded into the loaded weights, exactly (posenc's
 * model has no embedding scale of its own): with s = sqrt(hidden_size)
 * rounded to the embedding dtype, RMSNorm_eps(s*x) = RMSNorm_{eps/s^2}(x)
 * for any x, so layer 0 uses eps/s^2 (what /info shows) and the token
 * table holds round_dtype(E * s) / s: token_ids give RMSNorm_eps(round(E*s))
 * as Hugging Face does, and embeddings give RMSNorm_eps(s*x). Gemma 3's
 * Gemma3TextScaledWordEmbedding scales token ids only (the product in the
 * table's dtype), inputs_embeds not: its table holds round_dtype(E * s).
 * GemmaRMSNorm is x * rsqrt(mean(x^2) + eps) * (1.0 + w.float()): the spec's
 * norm_one_plus. Later layers see the hidden state and get no scale.
 *
 * Scores (Gemma 2 and 3, eager_attention_forward): q.k^T * scaling with
 * scaling = query_pre_attn_scalar ** -0.5, then, when softcap
 * (attn_logit_softcapping) is not None, tanh(scores / softcap) * softcap.
 * Sliding and global layers differ only in the mask (Gemma 2), or also in
 * the rope (Gemma 3: each layer type has its block of rope_parameters,
 * hf_rope_block.c; a legacy config's rope_theta, default 1e6, and
 * rope_scaling make the full_attention block, its rope_local_base_freq,
 * default 1e4, the sliding_attention block's theta). A layer is sliding
 * when layer_types[L] is "sliding_attention", or, without layer_types,
 * when (L + 1) % sliding_window_pattern != 0 (default 6).
 * final_logit_softcapping acts on the LM head's logits: not read.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "models/hf_spec.h"

/* x rounded to nearest-even with `bits` significant bits, exponents below
 * min_exp losing bits as subnormals do. x must be exact in double. */
static double round_significand(double x, int bits, int min_exp)
{
    int e;

    if (x == 0.0 || !isfinite(x))
        return x;
    frexp(x, &e);
    if (e < min_exp)
        e = min_exp;
    return ldexp(nearbyint(ldexp(x, bits - e)), e - bits);
}

/* x rounded to the dtype on disk (F32, F16, BF16; F64 reads as float32). */
static double round_to_dtype(double x, const char *dtype)
{
    if (strcmp(dtype, "F16") == 0)
        return round_significand(x, 11, -13);
    if (strcmp(dtype, "BF16") == 0)
        return round_significand(x, 8, -125);
    return round_significand(x, 24, -125);
}

int hf_scale_embeddings(hf_load *h, double value, const char *what, bool scalar_in_dtype,
                        double *scale, model_error *err)
{
    model *m = h->m;
    tensor *t = &m->weights[W_TOKEN_EMBEDDING];
    const char *dtype = m->weight_dtype[W_TOKEN_EMBEDDING];
    /* A scale tensor of the table's dtype holds the value rounded to
     * float32 and then to the dtype; a Python float stays float32 (torch's
     * mul with a scalar on half and bfloat16 tensors computes in float32).
     * The products are float32 products rounded to the dtype. */
    double s = scalar_in_dtype ? round_to_dtype((float)value, dtype) : (double)(float)value;
    size_t n = t->dim[0] * t->dim[1];

    for (size_t i = 0; i < n; i++) {
        double product = (double)t->data[i] * s;
        double scaled = fabs(product) <= FLT_MAX ? round_to_dtype((float)product, dtype) : INFINITY;
        if (!(fabs(scaled) <= (strcmp(dtype, "F16") == 0 ? 65504.0 : FLT_MAX)))
            return hf_value_fail(h, err,
                                 "embed_tokens.weight element %zu times %s = %g overflows %s", i,
                                 what, s, dtype);
        t->data[i] = (float)scaled; /* exact: scaled is a value of the dtype */
    }
    *scale = s;
    return 0;
}

/* The fold: the token table holds round_dtype(E * s) / s and layer 0's
 * norm eps / s^2, so token ids give norm(round_dtype(E * s)) and given
 * embeddings norm(s * x). */
static int fold_embed_scale(hf_load *h, double value, const char *what, bool scalar_in_dtype,
                            model_error *err)
{
    model *m = h->m;
    tensor *t = &m->weights[W_TOKEN_EMBEDDING];
    size_t n = t->dim[0] * t->dim[1];
    double s;

    if (hf_scale_embeddings(h, value, what, scalar_in_dtype, &s, err))
        return -1;
    for (size_t i = 0; i < n; i++)
        t->data[i] = (float)((double)t->data[i] / s);
    m->norm_eps /= s * s;
    return 0;
}

int hf_gemma_embed_scale(hf_load *h, const hf_spec *spec, model_error *err)
{
    double value = sqrt((double)h->m->d_model), s;
    char what[64] = "the normalizer sqrt(hidden_size)";
    bool in_dtype = !spec->embed_scale_float32;

    if (spec->embed_scale_key) {
        if (hf_number(h, spec->embed_scale_key, spec->embed_scale_default, true, &value, err))
            return -1;
        snprintf(what, sizeof what, "%s", spec->embed_scale_key);
    }
    if (spec->embed_scale == HF_EMBED_GEMMA_FOLD)
        return fold_embed_scale(h, value, what, in_dtype, err);
    /* token ids are scaled by the embedding itself; inputs_embeds are not */
    return hf_scale_embeddings(h, value, what, in_dtype, &s, err);
}

int hf_embed_multiplier(hf_load *h, const char *key, double value, model_error *err)
{
    return fold_embed_scale(h, value, key, false, err);
}

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

int hf_sliding_pattern(hf_load *h, hf_plan *p, int64_t pattern_default, model_error *err)
{
    int64_t pattern;

    if (hf_get(h, HF_KEYS("layer_types"), NULL))
        return 0; /* the loader read it into p->sliding */
    if (hf_int(h, HF_KEYS("sliding_window_pattern"), false, pattern_default, 1, INT64_MAX, &pattern,
               err))
        return -1;
    p->sliding = (h->layer + 1) % (uint64_t)pattern != 0;
    return 0;
}

/* Gemma 3: whether layer L is a sliding-window layer, from layer_types or
 * sliding_window_pattern (default 6). */
int hf_gemma3_configure(hf_load *h, hf_plan *p, model_error *err)
{
    return hf_sliding_pattern(h, p, 6, err);
}
