/*
 * rope_apply.c - rotate rows of heads by position (RoPE), half-split or
 * interleaved pairs, in double with one float32 rounding.
 */
#include <math.h>

#include "internal.h"
#include "rope_rotate.h"

void pe_rope_table(const double *inv_freq, size_t half, double attention_factor, size_t n,
                   double *rows)
{
#pragma omp parallel for schedule(static) if (n * half >= PE_PARALLEL_MIN_WORK)
    for (size_t p = 0; p < n; p++) {
        double c[PE_PAIR_CHUNK], s[PE_PAIR_CHUNK];
        double *row = rows + p * half * 2;
        for (size_t i0 = 0; i0 < half; i0 += PE_PAIR_CHUNK) {
            size_t m = half - i0 < PE_PAIR_CHUNK ? half - i0 : PE_PAIR_CHUNK;
            pe_cos_sin(inv_freq + i0, m, attention_factor, (double)p, c, s);
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
    double c[PE_PAIR_CHUNK], s[PE_PAIR_CHUNK];

    const double *cached = p < (double)rope->cache_rows ? rope->cache + (size_t)p * half * 2 : NULL;

    for (size_t i0 = 0; i0 < half; i0 += PE_PAIR_CHUNK) {
        size_t m = half - i0 < PE_PAIR_CHUNK ? half - i0 : PE_PAIR_CHUNK;
        if (cached)
            for (size_t k = 0; k < m; k++) {
                c[k] = cached[2 * (i0 + k)];
                s[k] = cached[2 * (i0 + k) + 1];
            }
        else
            pe_cos_sin(inv_freq + i0, m, attention_factor, p, c, s);
        for (size_t h0 = 0; h0 + hd <= width; h0 += hd)
            pe_rotate_pairs(rope->layout, half, i0, m, c, s, x ? x + h0 : NULL, out + h0);
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
