/*
 * scores.c - pre-softmax attention logits of one sequence, per head with
 * grouped-query attention: one sgemm per head, then scale and bias in
 * double with one rounding.
 */
#include <cblas.h>
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
        /* Heads run one after another and each sgemm uses the BLAS's own
         * threads; an OpenMP loop around the calls would nest the two. */
        for (size_t h = 0; h < heads; h++) {
            size_t g = h / group;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)t, (blasint)t,
                        (blasint)head_dim, 1.0f, q + h * head_dim, (blasint)q_stride,
                        k + g * head_dim, (blasint)k_stride, 0.0f, scores + h * tt, (blasint)t);
        }
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
