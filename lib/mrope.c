/*
 * mrope.c - multimodal RoPE (Qwen2-VL and successors, GLM-4.xV,
 * ERNIE-4.5-VL): a token's position is a triple [t, h, w] and each
 * frequency slot turns by the component its style assigns (posenc.h).
 * The cos/sin and the rotation are 1-D RoPE's own (rope_rotate.h), so a
 * text token (t == h == w) gets exactly the bits of pe_rope_apply.
 */
#include "internal.h"
#include "rope_rotate.h"

unsigned pe_mrope_axis(const pe_mrope *m, size_t j)
{
    const size_t *sec = m->section;

    switch (m->style) {
    case PE_MROPE_CHUNKED:
        return j < sec[0] ? 0u : j < sec[0] + sec[1] ? 1u : 2u;
    case PE_MROPE_INTERLEAVED:
        if (j % 3 == 1 && j < 3 * sec[1])
            return 1u;
        if (j % 3 == 2 && j < 3 * sec[2])
            return 2u;
        return 0u;
    case PE_MROPE_ERNIE:
        return j < 2 * sec[1] ? 1u + (unsigned)(j % 2) : 0u;
    case PE_MROPE_NONE:
        break;
    }
    return 0u;
}

pe_status pe_mrope_check(const pe_mrope *m, size_t half)
{
    const size_t *sec = m->section;

    if (m->style == PE_MROPE_NONE)
        return PE_OK;
    /* each section at most half: the sum below cannot wrap */
    if (sec[0] > half || sec[1] > half || sec[2] > half || sec[0] + sec[1] + sec[2] != half)
        return PE_EINVAL;
    return m->style == PE_MROPE_ERNIE && sec[1] != sec[2] ? PE_EINVAL : PE_OK;
}

/* c[k], s[k] for slots [i0, i0+m) of one row: 1-D RoPE's expression with
 * the component the slot's axis picks. */
static void mrope_cos_sin(const pe_mrope *mrope, const double *inv_freq, size_t i0, size_t m,
                          double attention_factor, const int64_t *pos3, double *c, double *s)
{
    for (size_t k = 0; k < m; k++)
        pe_cos_sin(inv_freq + i0 + k, 1, attention_factor,
                   (double)pos3[pe_mrope_axis(mrope, i0 + k)], c + k, s + k);
}

static void mrope_row(const pe_rope *rope, const pe_mrope *mrope, const double *inv_freq,
                      double attention_factor, const int64_t *pos3, size_t width, const float *x,
                      float *out)
{
    size_t hd = rope->head_dim;
    size_t rot = (rope->rotary_dim < hd ? rope->rotary_dim : hd) & ~(size_t)1;
    size_t half = rot / 2;
    double c[PE_PAIR_CHUNK], s[PE_PAIR_CHUNK];

    for (size_t i0 = 0; i0 < half; i0 += PE_PAIR_CHUNK) {
        size_t m = half - i0 < PE_PAIR_CHUNK ? half - i0 : PE_PAIR_CHUNK;
        mrope_cos_sin(mrope, inv_freq, i0, m, attention_factor, pos3, c, s);
        for (size_t h0 = 0; h0 + hd <= width; h0 += hd)
            pe_rotate_pairs(rope->layout, half, i0, m, c, s, x ? x + h0 : NULL, out + h0);
    }
    for (size_t h0 = 0; h0 + hd <= width; h0 += hd)
        for (size_t j = rot; j < hd; j++)
            out[h0 + j] = x ? x[h0 + j] : 1.0f;
}

void pe_mrope_apply(const pe_rope *rope, const pe_mrope *mrope, const double *inv_freq,
                    double attention_factor, const int64_t *positions, size_t n, size_t width,
                    const float *x, size_t x_stride, float *out, size_t out_stride)
{
    if (rope->head_dim == 0)
        return;
#pragma omp parallel for schedule(static) if (n * width >= PE_PARALLEL_MIN_WORK)
    for (size_t r = 0; r < n; r++)
        mrope_row(rope, mrope, inv_freq, attention_factor, positions + 3 * r, width,
                  x ? x + r * x_stride : NULL, out + r * out_stride);
}
