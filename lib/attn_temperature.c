/*
 * attn_temperature.c - Llama 4's attention-temperature tuning of q on the
 * layers without RoPE (the scaling of arXiv 2501.19399 as Hugging Face's
 * Llama4TextAttention applies it).
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

void pe_attn_temperature(size_t n, const int64_t *positions, double floor_scale, double attn_scale,
                         size_t width, float *x, size_t stride)
{
    if (n == 0 || width == 0)
        return;
    size_t work = 0;
    bool parallel = !__builtin_mul_overflow(n, width, &work) && work >= PE_PARALLEL_MIN_WORK;

#pragma omp parallel for schedule(static) if (parallel)
    for (size_t i = 0; i < n; i++) {
        float s = temperature(positions[i], (float)floor_scale, (float)attn_scale);
        float *row = x + i * stride;
        for (size_t j = 0; j < width; j++)
            row[j] *= s;
    }
}
