/*
 * scores.c - pre-softmax attention logits of one sequence, per head with
 * grouped-query attention: one pe_matmul per head (the same bits under any
 * OpenMP team), then scale and bias in double with one rounding.
 */
#include <string.h>

#include "internal.h"

void pe_attention_scores(const float *q, size_t q_stride, const float *k, size_t k_stride, size_t t,
                         size_t heads, size_t kv_heads, size_t head_dim, double scale,
                         const float *bias, float *scores)
{
    size_t tt = t * t;

    if (t == 0 || heads == 0 || kv_heads == 0)
        return;
    if (head_dim == 0) {
        memset(scores, 0, heads * tt * sizeof *scores);
    } else {
        size_t group = heads / kv_heads;
        /* Heads run one after another, each product on the OpenMP team. */
        for (size_t h = 0; h < heads; h++)
            pe_matmul(q + h * head_dim, q_stride, t, head_dim, k + h / group * head_dim, k_stride,
                      true, t, scores + h * tt, t);
    }

    size_t total = heads * tt;
#pragma omp parallel for schedule(static) if (total >= PE_PARALLEL_MIN_WORK)
    for (size_t e = 0; e < total; e++) {
        double v = scale * (double)scores[e];
        if (bias)
            v += (double)bias[e];
        scores[e] = (float)v;
    }
}
