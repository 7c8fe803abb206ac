/*
 * hf_gemma.c - Gemma (model_type gemma: gemma-2b, gemma-7b): head_dim from
 * the config, embeddings scaled by sqrt(hidden_size), RMSNorm as
 * x * (1 + w), RoPE over whole heads, multi-query or grouped heads.
 *
 * Hugging Face's GemmaModel (modeling_gemma.py): h = embed_tokens[ids] (or
 * inputs_embeds) times normalizer = tensor(hidden_size ** 0.5,
 * dtype=h.dtype), the product in that dtype; layer L computes
 * z = input_layernorm(h) where GemmaRMSNorm.forward is, in float32,
 * x * rsqrt(mean(x^2) + eps) * (1.0 + w.float()); then q/k/v_proj
 * (nn.Linear, bias=attention_bias) and the Llama rotation (rotate_half,
 * rope_theta, rope_scaling) over head_dim. Scores scale by 1/sqrt(head_dim).
 *
 * Folded into the loaded weights, exactly (posenc's model has no embedding
 * scale of its own):
 * - norm_weight = (1 + w) in float32, as GemmaRMSNorm computes it;
 * - with s = sqrt(hidden_size) rounded to the embedding dtype (as the
 *   normalizer tensor is), RMSNorm_eps(s*x) = RMSNorm_{eps/s^2}(x) for any
 *   x, so layer 0 uses eps/s^2 (what /info shows) and the token table holds
 *   round_dtype(E * s) / s: then token_ids give RMSNorm_eps(round_dtype(E*s))
 *   as Hugging Face does, and embeddings give RMSNorm_eps(s*x). Later layers
 *   see the hidden state and get neither.
 *
 * Config keys read: hidden_size, num_attention_heads, num_key_value_heads,
 * head_dim (default 256, GemmaConfig's), num_hidden_layers, rms_norm_eps,
 * attention_bias, rope_theta, rope_scaling.
 *
 * Tensors: [model.]embed_tokens.weight, [model.]layers.L.input_layernorm.
 * weight, [model.]layers.L.self_attn.{q,k,v}_proj.{weight,bias}.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "models/hf.h"

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

int hf_scale_embeddings(hf_load *h, double *scale, model_error *err)
{
    model *m = h->m;
    tensor *t = &m->weights[W_TOKEN_EMBEDDING];
    const char *dtype = m->weight_dtype[W_TOKEN_EMBEDDING];
    /* torch rounds the Python float to float32, then to the dtype; its
     * half and bfloat16 products are float32 products rounded again. */
    double s = round_to_dtype((float)sqrt((double)m->d_model), dtype);
    size_t n = t->dim[0] * t->dim[1];

    for (size_t i = 0; i < n; i++) {
        double product = (double)t->data[i] * s;
        double scaled = fabs(product) <= FLT_MAX ? round_to_dtype((float)product, dtype) : INFINITY;
        if (!(fabs(scaled) <= (strcmp(dtype, "F16") == 0 ? 65504.0 : FLT_MAX)))
            return hf_value_fail(h, err,
                                 "embed_tokens.weight element %zu times the normalizer "
                                 "sqrt(hidden_size) = %g overflows %s",
                                 i, s, dtype);
        t->data[i] = (float)scaled; /* exact: scaled is a value of the dtype */
    }
    *scale = s;
    return 0;
}

/* Layer 0: the normalizer folded into the table and the norm's eps. */
static int fold_normalizer(hf_load *h, model_error *err)
{
    model *m = h->m;
    tensor *t = &m->weights[W_TOKEN_EMBEDDING];
    size_t n = t->dim[0] * t->dim[1];
    double s;

    if (hf_scale_embeddings(h, &s, err))
        return -1;
    for (size_t i = 0; i < n; i++)
        t->data[i] = (float)((double)t->data[i] / s);
    m->norm_eps /= s * s;
    return 0;
}

int hf_gemma_load(hf_load *h, model_error *err)
{
    model *m = h->m;
    hf_attention_heads a;
    size_t L = h->layer;
    bool bias;

    if (hf_read_attention_heads(h, &a, err) ||
        hf_number(h, "rms_norm_eps", 1e-6, true, &m->norm_eps, err) ||
        hf_bool(h, "attention_bias", false, &bias, err) ||
        hf_int(h, HF_KEYS("head_dim"), false, 256, 1, SCHEME_MAX_DIM, &a.head_dim, err))
        return -1;
    if (hf_check_kv_heads(h, &a, err))
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
    /* GemmaRMSNorm: (1.0 + weight.float()), a float32 sum */
    float *w = m->weights[W_NORM_WEIGHT].data;
    for (size_t i = 0; i < d; i++)
        w[i] = 1.0f + w[i];
    if (L == 0 && (hf_weight(h, W_TOKEN_EMBEDDING, 2, 0, d, err, "embed_tokens.weight") ||
                   fold_normalizer(h, err)))
        return -1;
    return 0;
}
