/*
 * qkv.c - fused Q/K/V projection weights and the projection itself (one
 * pe_matmul per call: batch-invariant, see internal.h).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

size_t pe_qkv_width(const pe_qkv_weights *w)
{
    return (w->heads + 2 * w->kv_heads) * w->head_dim;
}

/* Columns of one fused row, checked: false on overflow. */
static bool fused_widths(size_t heads, size_t kv_heads, size_t head_dim, size_t *q_cols,
                         size_t *kv_cols, size_t *width)
{
    if (__builtin_mul_overflow(heads, head_dim, q_cols) ||
        __builtin_mul_overflow(kv_heads, head_dim, kv_cols) || *kv_cols > (SIZE_MAX - *q_cols) / 2)
        return false;
    *width = *q_cols + 2 * *kv_cols;
    return true;
}

/* Copies the three biases (a NULL one counts as zeros) into b[width]. */
static void fuse_bias(const float *bq, const float *bk, const float *bv, size_t q_cols,
                      size_t kv_cols, float *b)
{
    const float *src[3] = {bq, bk, bv};
    size_t len[3] = {q_cols, kv_cols, kv_cols};

    for (int part = 0; part < 3; part++) {
        if (src[part])
            memcpy(b, src[part], len[part] * sizeof *b);
        else
            memset(b, 0, len[part] * sizeof *b);
        b += len[part];
    }
}

pe_status pe_qkv_weights_init(pe_qkv_weights *out, size_t d_model, size_t heads, size_t kv_heads,
                              size_t head_dim, const float *wq, const float *wk, const float *wv,
                              const float *bq, const float *bk, const float *bv)
{
    pe_qkv_weights w = {d_model, heads, kv_heads, head_dim, NULL, NULL, NULL};
    size_t q_cols, kv_cols, width, count, bytes;
    pe_status status = PE_ENOMEM;

    memset(out, 0, sizeof *out);
    if (d_model == 0 || heads == 0 || kv_heads == 0 || head_dim == 0 || heads % kv_heads != 0)
        return PE_EINVAL;
    if (!fused_widths(heads, kv_heads, head_dim, &q_cols, &kv_cols, &width) ||
        __builtin_mul_overflow(d_model, width, &count) ||
        __builtin_mul_overflow(count, sizeof(float), &bytes))
        goto fail;

    w.w_qkv = malloc(bytes);
    if (!w.w_qkv)
        goto fail;
    for (size_t r = 0; r < d_model; r++) {
        float *row = w.w_qkv + r * width;
        memcpy(row, wq + r * q_cols, q_cols * sizeof *row);
        memcpy(row + q_cols, wk + r * kv_cols, kv_cols * sizeof *row);
        memcpy(row + q_cols + kv_cols, wv + r * kv_cols, kv_cols * sizeof *row);
    }
    size_t packed = pe_matmul_packed_count(d_model, width);
    if (packed == 0 || __builtin_mul_overflow(packed, sizeof(float), &bytes))
        goto fail;
    w.w_packed = malloc(bytes);
    if (!w.w_packed)
        goto fail;
    pe_matmul_pack(w.w_qkv, width, false, d_model, width, w.w_packed);

    if (bq || bk || bv) {
        w.b_qkv = malloc(width * sizeof *w.b_qkv);
        if (!w.b_qkv)
            goto fail;
        fuse_bias(bq, bk, bv, q_cols, kv_cols, w.b_qkv);
    }
    *out = w;
    return PE_OK;

fail:
    pe_qkv_weights_free(&w);
    return status;
}

void pe_qkv_weights_free(pe_qkv_weights *w)
{
    if (!w)
        return;
    free(w->w_qkv);
    free(w->b_qkv);
    free(w->w_packed);
    memset(w, 0, sizeof *w);
}

void pe_project_qkv(const pe_qkv_weights *w, const float *z, size_t n, float *qkv)
{
    size_t width = pe_qkv_width(w);

    if (n == 0 || width == 0)
        return;
    pe_matmul_packed(z, w->d_model, n, w->d_model, w->w_packed, width, qkv, width);
    if (!w->b_qkv)
        return;
#pragma omp parallel for schedule(static) if (n * width >= PE_PARALLEL_MIN_WORK)
    for (size_t t = 0; t < n; t++)
        for (size_t c = 0; c < width; c++)
            qkv[t * width + c] += w->b_qkv[c];
}

void pe_project_linear(const float *w, const float *b, size_t d_in, size_t d_out, const float *z,
                       size_t n, float *out)
{
    if (n == 0 || d_out == 0)
        return;
    pe_matmul(z, d_in, n, d_in, w, d_out, false, d_out, out, d_out);
    if (!b)
        return;
#pragma omp parallel for schedule(static) if (n * d_out >= PE_PARALLEL_MIN_WORK)
    for (size_t t = 0; t < n; t++)
        for (size_t c = 0; c < d_out; c++)
            out[t * d_out + c] += b[c];
}
