/*
 * alibi.c - ALiBi slopes (paper, BLOOM, ggml with max_bias 8, and MPT's
 * build_mpt_alibi_tensor, whose reordering gives the same slopes) and the
 * bias of one sequence in the symmetric, BLOOM or MPT form, optionally
 * rounded to bfloat16 and divided as Falcon's (pe_alibi_rounding).
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

/* slope * n (negated for the symmetric form: 0.0 - x, so that distance 0
 * gives +0, never -0), rounded and divided as r says (NULL: neither). */
static float alibi_value(double slope, int64_t n, bool negate, const pe_alibi_rounding *r)
{
    double v;

    if (r && r->bf16) /* build_alibi_tensor: slopes.bfloat16() * positions, in bfloat16 */
        v = pe_round_bfloat16(pe_round_bfloat16(slope) * pe_round_bfloat16((double)n));
    else
        v = slope * (double)n;
    float f = (float)(negate ? 0.0 - v : v);
    return r && r->divisor ? f / (float)r->divisor : f;
}

void pe_alibi_bias(size_t heads, pe_alibi_form form, const pe_alibi_rounding *rounding,
                   const int64_t *positions, size_t t, float *bias)
{
    size_t rows = heads * t; /* row (h, i) of bias[heads][t][t] */

#pragma omp parallel for schedule(static) if (rows * t >= PE_PARALLEL_MIN_WORK)
    for (size_t r = 0; r < rows; r++) {
        size_t i = r % t;
        double slope = alibi_slope(heads, r / t);
        float *out = bias + r * t;

        for (size_t j = 0; j < t; j++) {
            /* The integer term first: exact for every position. */
            int64_t n = positions[j];
            if (form == PE_ALIBI_MPT) {
                n = positions[j] - positions[t - 1];
            } else if (form == PE_ALIBI_SYMMETRIC) {
                n = positions[i] - positions[j];
                n = n < 0 ? -n : n;
            }
            out[j] = alibi_value(slope, n, form == PE_ALIBI_SYMMETRIC, rounding);
        }
    }
}
