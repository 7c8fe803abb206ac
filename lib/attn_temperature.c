/*
 * attn_temperature.c - position-dependent scales of q: Llama 4's
 * attention-temperature tuning on the layers without RoPE (the scaling of
 * arXiv 2501.19399 as Hugging Face's Llama4TextAttention applies it), and
 * Mistral's query scale on every layer (Ministral 3's
 * get_llama_4_attn_scale, another formula of the same paper).
 */
#include <math.h>

#include "internal.h"
#include "posenc.h"

/* torch: log(floor((cache_position.float() + 1.0) / floor_scale) + 1.0)
 * * attn_scale + 1.0, every tensor float32 (the Python floats are scalars
 * that do not promote a float32 tensor). */
static float temperature(int64_t position, float floor_scale, float attn_scale)
{
    float p1 = (float)position + 1.0f;
    float f = floorf(p1 / floor_scale);
    return logf(f + 1.0f) * attn_scale + 1.0f;
}

/* Rows i < n of x (stride apart, width channels) times scale(positions[i]),
 * one float32 product each; rows in parallel when the work is large. */
static void scale_rows(size_t n, const int64_t *positions, float (*scale)(int64_t, float, float),
                       float a, float b, size_t width, float *x, size_t stride)
{
    if (n == 0 || width == 0)
        return;
    size_t work = 0;
    bool parallel = !__builtin_mul_overflow(n, width, &work) && work >= PE_PARALLEL_MIN_WORK;

#pragma omp parallel for schedule(static) if (parallel)
    for (size_t i = 0; i < n; i++) {
        float s = scale(positions[i], a, b);
        float *row = x + i * stride;
        for (size_t j = 0; j < width; j++)
            row[j] *= s;
    }
}

void pe_attn_temperature(size_t n, const int64_t *positions, double floor_scale, double attn_scale,
                         size_t width, float *x, size_t stride)
{
    scale_rows(n, positions, temperature, (float)floor_scale, (float)attn_scale, width, x, stride);
}

/* torch: 1 + beta * log(1 + floor(position_ids / orig)), float32 throughout
 * (the int64 ids divided by a Python int give float32; beta a scalar). */
static float mistral_scale(int64_t position, float beta, float orig)
{
    float t = floorf((float)position / orig);
    return 1.0f + beta * logf(1.0f + t);
}

void pe_query_scale_mistral(size_t n, const int64_t *positions, double beta, double orig,
                            size_t width, float *x, size_t stride)
{
    scale_rows(n, positions, mistral_scale, (float)beta, (float)orig, width, x, stride);
}
