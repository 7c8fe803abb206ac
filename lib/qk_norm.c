/*
 * qk_norm.c - RMSNorm or LayerNorm of q or k after the projection and
 * before the rotation, over groups of channels: per head (Qwen3, Gemma 3:
 * group = head_dim) or over the whole projection width (OLMo 2: group =
 * width); without a weight it is Llama 4's Llama4TextL2Norm (after the
 * rotation). The LayerNorm may give each head its own weights (Cohere,
 * StableLM, no bias) or add a bias (Phi's qk_layernorm, shared by the heads).
 */
#include <math.h>

#include "internal.h"
#include "posenc.h"

/* One group: g = g * 1/sqrt(mean(g^2) + eps) * weight (1 when weight is
 * NULL), in double, rounded once. */
static void rms_norm_group(float *g, size_t group, const float *weight, const float *bias,
                           double eps)
{
    (void)bias; /* RMSNorm has none */
    double ms = 0.0;

    for (size_t j = 0; j < group; j++)
        ms += (double)g[j] * (double)g[j];
    double inv = 1.0 / sqrt(ms / (double)group + eps);
    for (size_t j = 0; j < group; j++)
        g[j] = (float)((double)g[j] * inv * (weight ? (double)weight[j] : 1.0));
}

/* One group's norm, in place (bias: LayerNorm only). */
typedef void (*group_norm_fn)(float *g, size_t group, const float *weight, const float *bias,
                              double eps);

/* norm over each of the width / group groups of each of n rows (row i at
 * x + i*stride), group h with weight + h*weight_stride and bias +
 * h*weight_stride (each NULL: none). */
static void for_each_group(group_norm_fn norm, size_t n, size_t width, size_t group,
                           const float *weight, const float *bias, size_t weight_stride, double eps,
                           float *x, size_t stride)
{
    if (n == 0 || width == 0 || group == 0)
        return;
    size_t groups = width / group, work = 0;
    bool parallel = !__builtin_mul_overflow(n, width, &work) && work >= PE_PARALLEL_MIN_WORK;

#pragma omp parallel for schedule(static) if (parallel)
    for (size_t i = 0; i < n; i++)
        for (size_t h = 0; h < groups; h++)
            norm(x + i * stride + h * group, group, weight ? weight + h * weight_stride : NULL,
                 bias ? bias + h * weight_stride : NULL, eps);
}

void pe_group_rms_norm(size_t n, size_t width, size_t group, const float *weight, double eps,
                       float *x, size_t stride)
{
    for_each_group(rms_norm_group, n, width, group, weight, NULL, 0, eps, x, stride);
}

/* One group: g = (g - mean) / sqrt(var + eps) * weight + bias, population
 * variance over the centred values (torch's LayerNorm), in double. */
static void layer_norm_group(float *g, size_t group, const float *weight, const float *bias,
                             double eps)
{
    double mean = 0.0, var = 0.0;

    for (size_t j = 0; j < group; j++)
        mean += (double)g[j];
    mean /= (double)group;
    for (size_t j = 0; j < group; j++)
        var += ((double)g[j] - mean) * ((double)g[j] - mean);
    double inv = 1.0 / sqrt(var / (double)group + eps);
    for (size_t j = 0; j < group; j++)
        g[j] = (float)(((double)g[j] - mean) * inv * (weight ? (double)weight[j] : 1.0) +
                       (bias ? (double)bias[j] : 0.0));
}

void pe_group_layer_norm(size_t n, size_t width, size_t group, const float *weight,
                         const float *bias, size_t weight_stride, double eps, float *x,
                         size_t stride)
{
    for_each_group(layer_norm_group, n, width, group, weight, bias, weight_stride, eps, x, stride);
}
