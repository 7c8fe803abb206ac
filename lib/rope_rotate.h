/*
 * rope_rotate.h - the two steps every rotary kernel of lib/ shares (1-D
 * RoPE, multimodal RoPE, vision 2-D RoPE): cos and sin of position times
 * frequency, and the rotation of a head's pairs by them. Inline, so each
 * kernel keeps its own loop around them (the 1-D hot path compiles as it
 * did when they were its private functions); not part of the public API.
 */
#ifndef POSENC_ROPE_ROTATE_H
#define POSENC_ROPE_ROTATE_H

#include <math.h>
#include <stddef.h>

#include "posenc.h"

/* cos/sin are computed for this many pairs at a time on the stack and then
 * used by every head of the row: no allocation, one sin/cos per pair. */
#define PE_PAIR_CHUNK 64

/* Rotates pairs [i0, i0+m) of one head whose pairs are (i, i + half) or
 * (2i, 2i+1). x NULL is the unit input (1 at the first member of each
 * pair, 0 at the second). Both members are read before either is written,
 * so out may alias x. */
static inline void pe_rotate_pairs(pe_rope_layout layout, size_t half, size_t i0, size_t m,
                                   const double *c, const double *s, const float *x, float *out)
{
    for (size_t k = 0; k < m; k++) {
        size_t i = i0 + k;
        size_t ia = layout == PE_ROPE_INTERLEAVED ? 2 * i : i;
        size_t ib = layout == PE_ROPE_INTERLEAVED ? 2 * i + 1 : i + half;
        double a = x ? (double)x[ia] : 1.0;
        double b = x ? (double)x[ib] : 0.0;
        out[ia] = (float)(a * c[k] - b * s[k]);
        out[ib] = (float)(b * c[k] + a * s[k]);
    }
}

/* c[k], s[k] = cos and sin of p*inv_freq[k], times attention_factor. */
static inline void pe_cos_sin(const double *inv_freq, size_t m, double attention_factor, double p,
                              double *c, double *s)
{
    for (size_t k = 0; k < m; k++) {
        double theta = p * inv_freq[k];
        c[k] = cos(theta) * attention_factor;
        s[k] = sin(theta) * attention_factor;
    }
}

#endif /* POSENC_ROPE_ROTATE_H */
