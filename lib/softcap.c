/*
 * softcap.c - the tanh soft cap of attention scores (Gemma 2's
 * attn_logit_softcapping): s = cap * tanh(s / cap), then the bias.
 */
#include <math.h>

#include "internal.h"
#include "posenc.h"

void pe_softcap_scores(float *scores, const float *bias, size_t n, double cap)
{
    bool parallel = n >= PE_PARALLEL_MIN_WORK;

#pragma omp parallel for schedule(static) if (parallel)
    for (size_t i = 0; i < n; i++) {
        double s = cap * tanh((double)scores[i] / cap);
        scores[i] = (float)(bias ? s + (double)bias[i] : s);
    }
}
