/*
 * t5.c - T5 relative-position buckets (Hugging Face
 * _relative_position_bucket, logarithmic part in float32) and the bias of
 * one sequence.
 */
#include <math.h>

#include "internal.h"

size_t pe_t5_bucket(int64_t rel, bool bidirectional, size_t num_buckets, int64_t max_distance)
{
    size_t nb = num_buckets, ret = 0;
    uint64_t mag = rel < 0 ? (uint64_t)0 - (uint64_t)rel : (uint64_t)rel;
    uint64_t n;

    if (bidirectional) {
        nb /= 2;
        if (rel > 0)
            ret = nb;
        n = mag;
    } else {
        n = rel < 0 ? mag : 0; /* future keys share bucket 0 */
    }

    size_t max_exact = nb / 2;
    if (n < max_exact)
        return ret + (size_t)n;
    if (max_exact == 0)
        return ret + (nb > 0 ? nb - 1 : 0);

    /* Past the exact range every step is float32, as in HF: log of a float32
     * ratio over a float32 constant, times the bucket count, truncated. */
    float log_span = (float)log((double)max_distance / (double)max_exact);
    float steps = (float)(nb - max_exact);
    if (!(log_span > 0.0f))
        return ret + nb - 1;
    float large = logf((float)n / (float)max_exact) / log_span * steps;
    if (!(large < steps)) /* max_exact + large would reach nb: capped */
        return ret + nb - 1;
    size_t bucket = max_exact + (size_t)large;
    return ret + (bucket < nb - 1 ? bucket : nb - 1);
}

void pe_t5_bias(const pe_t5 *t5, const int64_t *positions, size_t t, float *bias)
{
    size_t heads = t5->heads;

#pragma omp parallel for schedule(static) if (heads * t * t >= PE_PARALLEL_MIN_WORK)
    for (size_t i = 0; i < t; i++) {
        for (size_t j = 0; j < t; j++) {
            size_t b = pe_t5_bucket(positions[j] - positions[i], t5->bidirectional, t5->num_buckets,
                                    t5->max_distance);
            const float *col = t5->table + b * heads;
            for (size_t h = 0; h < heads; h++)
                bias[(h * t + i) * t + j] = col[h];
        }
    }
}
