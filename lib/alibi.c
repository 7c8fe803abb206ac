/*
 * alibi.c - ALiBi slopes (paper, BLOOM, ggml with max_bias 8, and MPT's
 * build_mpt_alibi_tensor, whose reordering gives the same slopes) and the
 * bias of one sequence in the symmetric, BLOOM or MPT form.
 */
#include <math.h>

#include "internal.h"

/* Head h of `heads`: with c the largest power of two <= heads, the first c
 * heads get (2^(-8/c))^(h+1); the rest take every other slope of the
 * 2c-head sequence, (2^(-4/c))^(2(h-c)+1). */
static double alibi_slope(size_t heads, size_t h)
{
    size_t c = 1;

    while (c <= heads / 2)
        c *= 2;
    if (h < c)
        return pow(pow(2.0, -8.0 / (double)c), (double)(h + 1));
    return pow(pow(2.0, -4.0 / (double)c), (double)(2 * (h - c) + 1));
}

void pe_alibi_slopes(size_t heads, double *slopes)
{
    for (size_t h = 0; h < heads; h++)
        slopes[h] = alibi_slope(heads, h);
}

void pe_alibi_bias(size_t heads, pe_alibi_form form, const int64_t *positions, size_t t,
                   float *bias)
{
    size_t rows = heads * t; /* row (h, i) of bias[heads][t][t] */

#pragma omp parallel for schedule(static) if (rows * t >= PE_PARALLEL_MIN_WORK)
    for (size_t r = 0; r < rows; r++) {
        size_t i = r % t;
        double slope = alibi_slope(heads, r / t);
        float *out = bias + r * t;

        if (form == PE_ALIBI_BLOOM) {
            for (size_t j = 0; j < t; j++)
                out[j] = (float)(slope * (double)positions[j]);
            continue;
        }
        if (form == PE_ALIBI_MPT) {
            /* The integer difference first: exact for every position. */
            for (size_t j = 0; j < t; j++)
                out[j] = (float)(slope * (double)(positions[j] - positions[t - 1]));
            continue;
        }
        for (size_t j = 0; j < t; j++) {
            int64_t dist = positions[i] - positions[j];
            dist = dist < 0 ? -dist : dist;
            /* 0.0 - x, not -x: distance 0 gives +0, never -0. */
            out[j] = (float)(0.0 - slope * (double)dist);
        }
    }
}
