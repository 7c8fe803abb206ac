/*
 * rope_freq.c - RoPE inverse frequencies and attention factor for every
 * Hugging Face rope_scaling type (modeling_rope_utils.py, newest semantics).
 * The arithmetic follows the Hugging Face expressions term by term, in
 * double, so that results match a float64 port of it to the last bits.
 */
#include <math.h>
#include <stddef.h>

#include "internal.h"

static const double pi = 3.14159265358979323846;

static bool positive(double v)
{
    return v > 0.0 && isfinite(v);
}

static void default_freqs(double base, size_t dim, double *inv_freq)
{
    for (size_t i = 0; i < dim / 2; i++)
        inv_freq[i] = pe_inv_freq(base, i, dim);
}

/* HF get_mscale: 1 + 0.1*m*ln(s) for s > 1, else 1. */
static double get_mscale(double s, double m)
{
    return s <= 1.0 ? 1.0 : 0.1 * m * log(s) + 1.0;
}

/* NTK-aware: the base grows once the sequence is longer than the original
 * context M (HF dynamic_rope_update with max_position_embeddings = M);
 * with alpha, the base is theta * alpha^(dim/(dim-2)) up to M (HunYuan). */
static pe_status dynamic_freqs(const pe_rope *rope, double seq_len, double *inv_freq)
{
    const pe_rope_scaling *sc = &rope->scaling;
    size_t dim = rope->rotary_dim;
    double factor = sc->factor, m = sc->original_max_position_embeddings;

    if (dim <= 2 || !positive(factor) || !positive(m) || !(sc->alpha >= 0.0 && isfinite(sc->alpha)))
        return PE_EINVAL;
    if (sc->alpha != 0.0 && seq_len <= m) { /* HunYuan: NTK-alpha within the context */
        default_freqs(rope->base * pow(sc->alpha, (double)dim / (double)(dim - 2)), dim, inv_freq);
        return PE_OK;
    }
    double len = seq_len > m ? seq_len : m;
    double base = rope->base *
                  pow(factor * len / m - (factor - 1.0), (double)dim / (double)(dim - 2));
    default_freqs(base, dim, inv_freq);
    return PE_OK;
}

/* HF _yarn_find_correction_dim: the pair index whose wavelength makes
 * `rotations` turns over the original context. */
static double yarn_corr_dim(size_t dim, double base, double orig, double rotations)
{
    return ((double)dim * log(orig / (rotations * 2 * pi))) / (2 * log(base));
}

static pe_status yarn_freqs(const pe_rope *rope, double *inv_freq, double *attention_factor)
{
    const pe_rope_scaling *sc = &rope->scaling;
    size_t dim = rope->rotary_dim;
    double base = rope->base, factor = sc->factor;
    double orig = sc->original_max_position_embeddings;
    /* HF reads these with `or`: an absent or zero value takes the default. */
    double beta_fast = sc->has_beta_fast && sc->beta_fast != 0.0 ? sc->beta_fast : 32.0;
    double beta_slow = sc->has_beta_slow && sc->beta_slow != 0.0 ? sc->beta_slow : 1.0;

    if (!positive(factor) || !positive(orig) || base == 1.0 || !positive(beta_fast) ||
        !positive(beta_slow))
        return PE_EINVAL;

    double att;
    if (sc->has_attention_factor)
        att = sc->attention_factor;
    else if (sc->has_mscale && sc->mscale != 0.0 && sc->has_mscale_all_dim &&
             sc->mscale_all_dim != 0.0)
        att = get_mscale(factor, sc->mscale) / get_mscale(factor, sc->mscale_all_dim);
    else
        att = get_mscale(factor, 1.0);

    double low = yarn_corr_dim(dim, base, orig, beta_fast);
    double high = yarn_corr_dim(dim, base, orig, beta_slow);
    if (sc->truncate) {
        low = floor(low);
        high = ceil(high);
    }
    if (low < 0.0)
        low = 0.0;
    if (high > (double)(dim - 1))
        high = (double)(dim - 1);
    if (low == high)
        high += 0.001; /* HF: prevent a singular ramp */

    for (size_t i = 0; i < dim / 2; i++) {
        double ramp = ((double)i - low) / (high - low);
        ramp = ramp < 0.0 ? 0.0 : ramp > 1.0 ? 1.0 : ramp;
        double extrap = 1.0 - ramp;
        double pos_freq = pow(base, (double)(2 * i) / (double)dim);
        double inv_extra = 1.0 / pos_freq;
        double inv_inter = 1.0 / (factor * pos_freq);
        inv_freq[i] = inv_inter * (1.0 - extrap) + inv_extra * extrap;
    }
    *attention_factor = att;
    return PE_OK;
}

/* Llama 3.1: keep short wavelengths, divide long ones by factor, blend the
 * band in between. */
static pe_status llama3_freqs(const pe_rope *rope, double *inv_freq)
{
    const pe_rope_scaling *sc = &rope->scaling;
    size_t dim = rope->rotary_dim;
    double factor = sc->factor, orig = sc->original_max_position_embeddings;
    double low_ff = sc->low_freq_factor, high_ff = sc->high_freq_factor;

    if (!positive(factor) || !positive(orig) || !positive(low_ff) || !positive(high_ff))
        return PE_EINVAL;
    double low_wl = orig / low_ff, high_wl = orig / high_ff;

    for (size_t i = 0; i < dim / 2; i++) {
        double inv = pe_inv_freq(rope->base, i, dim);
        double wl = 2 * pi / inv;
        if (wl < high_wl) {
            inv_freq[i] = inv;
        } else if (wl > low_wl) {
            inv_freq[i] = inv / factor;
        } else {
            /* With low == high the band is one point; vLLM takes smooth 0
             * there where HF would divide 0 by 0. */
            double smooth = high_ff == low_ff ? 0.0 : (orig / wl - low_ff) / (high_ff - low_ff);
            inv_freq[i] = (1 - smooth) * inv / factor + smooth * inv;
        }
    }
    return PE_OK;
}

/* LongRoPE (Phi-3): per-pair divisors, long ones past the original context. */
static pe_status longrope_freqs(const pe_rope *rope, double seq_len, double *inv_freq,
                                double *attention_factor)
{
    const pe_rope_scaling *sc = &rope->scaling;
    size_t dim = rope->rotary_dim;
    double orig = sc->original_max_position_embeddings;
    double factor = sc->has_factor ? sc->factor : 1.0;

    if (!positive(factor) || !positive(orig))
        return PE_EINVAL;
    double att;
    if (sc->has_attention_factor)
        att = sc->attention_factor;
    else if (factor <= 1.0)
        att = 1.0;
    else if (orig > 1.0)
        att = sqrt(1 + log(factor) / log(orig));
    else
        return PE_EINVAL;

    const double *ext = seq_len > orig ? sc->long_factor : sc->short_factor;
    if (!ext)
        return PE_EINVAL;
    for (size_t i = 0; i < dim / 2; i++) {
        if (!positive(ext[i]))
            return PE_EINVAL;
        inv_freq[i] = 1.0 / (ext[i] * pow(rope->base, (double)(2 * i) / (double)dim));
    }
    *attention_factor = att;
    return PE_OK;
}

/* Hugging Face's _compute_proportional_rope_parameters: the default
 * frequencies of the whole head for the first int(proportion * head_dim // 2)
 * pairs, 0 for the others, then divided by factor (linear scaling). */
static pe_status proportional_freqs(const pe_rope *rope, double *inv_freq)
{
    const pe_rope_scaling *sc = &rope->scaling;
    size_t dim = rope->rotary_dim, half = dim / 2;
    double p = rope->proportion;

    if (dim != rope->head_dim || !(p > 0.0 && p <= 1.0) ||
        (sc->type != PE_ROPE_SCALING_NONE && sc->type != PE_ROPE_SCALING_LINEAR) ||
        (sc->type == PE_ROPE_SCALING_LINEAR && !positive(sc->factor)))
        return PE_EINVAL;
    /* Python: int(p * head_dim // 2), the float floor division exact for 2 */
    size_t turning = (size_t)floor(p * (double)dim / 2.0);
    double factor = sc->type == PE_ROPE_SCALING_LINEAR ? sc->factor : 1.0;
    for (size_t i = 0; i < half; i++)
        inv_freq[i] = i < turning ? pe_inv_freq(rope->base, i, dim) / factor : 0.0;
    return PE_OK;
}

pe_status pe_rope_frequencies(const pe_rope *rope, double seq_len, double *inv_freq,
                              double *attention_factor)
{
    size_t dim = rope->rotary_dim;
    const pe_rope_scaling *sc = &rope->scaling;

    if (dim < 2 || dim % 2 != 0 || !positive(rope->base))
        return PE_EINVAL;
    *attention_factor = 1.0;
    if (rope->proportional)
        return proportional_freqs(rope, inv_freq);
    switch (sc->type) {
    case PE_ROPE_SCALING_NONE:
        default_freqs(rope->base, dim, inv_freq);
        return PE_OK;
    case PE_ROPE_SCALING_LINEAR:
        if (!positive(sc->factor))
            return PE_EINVAL;
        default_freqs(rope->base, dim, inv_freq);
        for (size_t i = 0; i < dim / 2; i++)
            inv_freq[i] /= sc->factor;
        return PE_OK;
    case PE_ROPE_SCALING_DYNAMIC:
        return dynamic_freqs(rope, seq_len, inv_freq);
    case PE_ROPE_SCALING_YARN:
        return yarn_freqs(rope, inv_freq, attention_factor);
    case PE_ROPE_SCALING_LLAMA3:
        return llama3_freqs(rope, inv_freq);
    case PE_ROPE_SCALING_LONGROPE:
        return longrope_freqs(rope, seq_len, inv_freq, attention_factor);
    }
    return PE_EINVAL;
}
