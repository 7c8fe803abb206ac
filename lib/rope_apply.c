/*
 * rope_apply.c - rotate rows of heads by position (RoPE), half-split or
 * interleaved pairs, in double with one float32 rounding.
 */
#include <math.h>

#include "internal.h"

/* cos/sin are computed for this many pairs at a time on the stack and then
 * used by every head of the row: no allocation, one sin/cos per pair. */
#define PAIR_CHUNK 64

/* Rotates pairs [i0, i0+m) of one head. x NULL is the unit input (1 at the
 * first member of each pair, 0 at the second). Both members are read before
 * either is written, so out may alias x. */
static void rotate_pairs(pe_rope_layout layout, size_t half, size_t i0, size_t m, const double *c,
                         const double *s, const float *x, float *out)
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
static void cos_sin(const double *inv_freq, size_t m, double attention_factor, double p, double *c,
                    double *s)
{
    for (size_t k = 0; k < m; k++) {
        double theta = p * inv_freq[k];
        c[k] = cos(theta) * attention_factor;
        s[k] = sin(theta) * attention_factor;
    }
}

void pe_rope_table(const double *inv_freq, size_t half, double attention_factor, size_t n,
                   double *rows)
{
#pragma omp parallel for schedule(static) if (n * half >= PE_PARALLEL_MIN_WORK)
    for (size_t p = 0; p < n; p++) {
        double c[PAIR_CHUNK], s[PAIR_CHUNK];
        double *row = rows + p * half * 2;
        for (size_t i0 = 0; i0 < half; i0 += PAIR_CHUNK) {
            size_t m = half - i0 < PAIR_CHUNK ? half - i0 : PAIR_CHUNK;
            cos_sin(inv_freq + i0, m, attention_factor, (double)p, c, s);
            for (size_t k = 0; k < m; k++) {
                row[2 * (i0 + k)] = c[k];
                row[2 * (i0 + k) + 1] = s[k];
            }
        }
    }
}

static void rope_row(const pe_rope *rope, const double *inv_freq, double attention_factor, double p,
                     size_t width, const float *x, float *out)
{
    size_t hd = rope->head_dim;
    /* Defensive: an odd or oversized rotary_dim never indexes past a head. */
    size_t rot = (rope->rotary_dim < hd ? rope->rotary_dim : hd) & ~(size_t)1;
    size_t half = rot / 2;
    double c[PAIR_CHUNK], s[PAIR_CHUNK];

    const double *cached = p < (double)rope->cache_rows ? rope->cache + (size_t)p * half * 2 : NULL;

    for (size_t i0 = 0; i0 < half; i0 += PAIR_CHUNK) {
        size_t m = half - i0 < PAIR_CHUNK ? half - i0 : PAIR_CHUNK;
        if (cached)
            for (size_t k = 0; k < m; k++) {
                c[k] = cached[2 * (i0 + k)];
                s[k] = cached[2 * (i0 + k) + 1];
            }
        else
            cos_sin(inv_freq + i0, m, attention_factor, p, c, s);
        for (size_t h0 = 0; h0 + hd <= width; h0 += hd)
            rotate_pairs(rope->layout, half, i0, m, c, s, x ? x + h0 : NULL, out + h0);
    }
    for (size_t h0 = 0; h0 + hd <= width; h0 += hd)
        for (size_t j = rot; j < hd; j++)
            out[h0 + j] = x ? x[h0 + j] : 1.0f;
}

void pe_rope_apply(const pe_rope *rope, const double *inv_freq, double attention_factor,
                   const int64_t *positions, size_t n, size_t width, const float *x,
                   size_t x_stride, float *out, size_t out_stride)
{
    if (rope->head_dim == 0)
        return;
#pragma omp parallel for schedule(static) if (n * width >= PE_PARALLEL_MIN_WORK)
    for (size_t r = 0; r < n; r++)
        rope_row(rope, inv_freq, attention_factor, (double)positions[r], width,
                 x ? x + r * x_stride : NULL, out + r * out_stride);
}
