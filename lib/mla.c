/*
 * mla.c - the projection of multi-head latent attention (DeepSeek-V2/V3):
 * q through an optional low-rank bottleneck with an RMSNorm in it, k and v
 * from a normalised compressed kv, and a rotary key part shared by every
 * head. The rotation itself is pe_rope_apply's, on the rope slices.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "posenc.h"

/* c[n][out] (row stride ldc) = a[n][in] (row stride lda) . w[in][out] */
static void matmul(const float *a, size_t n, size_t in, size_t lda, const float *w, size_t out,
                   float *c, size_t ldc)
{
    pe_matmul(a, lda, n, in, w, out, false, out, c, ldc);
}

size_t pe_mla_qk_width(const pe_mla_weights *w)
{
    return w->heads * (w->nope_dim + w->rope_dim);
}

size_t pe_mla_width(const pe_mla_weights *w)
{
    return 2 * pe_mla_qk_width(w) + w->heads * w->v_dim;
}

pe_status pe_mla_project(const pe_mla_weights *w, const float *z, size_t n, float *out)
{
    size_t qk_head = w->nope_dim + w->rope_dim, qd = pe_mla_qk_width(w);
    size_t width = pe_mla_width(w), kv_a_width = w->kv_lora_rank + w->rope_dim;
    size_t kv_b_width = w->heads * (w->nope_dim + w->v_dim);
    float *q_a = NULL;  /* owned: [n][q_lora_rank], the q bottleneck */
    float *kv_a = NULL; /* owned: [n][kv_lora_rank + rope_dim] */
    float *kv_b = NULL; /* owned: [n][heads*(nope_dim + v_dim)] */
    pe_status st = PE_ENOMEM;

    if (n == 0)
        return PE_OK;
    kv_a = malloc(n * kv_a_width * sizeof *kv_a);
    kv_b = malloc(n * kv_b_width * sizeof *kv_b);
    if (w->q_lora_rank)
        q_a = malloc(n * w->q_lora_rank * sizeof *q_a);
    if (!kv_a || !kv_b || (w->q_lora_rank && !q_a))
        goto done;
    /* q = q_b_proj(q_a_layernorm(q_a_proj(z))), or q_proj(z) */
    if (w->q_lora_rank) {
        matmul(z, n, w->d_model, w->d_model, w->q_a, w->q_lora_rank, q_a, w->q_lora_rank);
        pe_group_rms_norm(n, w->q_lora_rank, w->q_lora_rank, w->q_a_norm, w->q_norm_eps, q_a,
                          w->q_lora_rank);
        matmul(q_a, n, w->q_lora_rank, w->q_lora_rank, w->q_b, qd, out, width);
    } else {
        matmul(z, n, w->d_model, w->d_model, w->q_b, qd, out, width);
    }
    /* [compressed kv | k_rot] = kv_a_proj_with_mqa(z); kv_b_proj of the
     * normalised compressed kv gives each head's k_nope and v */
    matmul(z, n, w->d_model, w->d_model, w->kv_a, kv_a_width, kv_a, kv_a_width);
    pe_group_rms_norm(n, w->kv_lora_rank, w->kv_lora_rank, w->kv_a_norm, w->kv_norm_eps, kv_a,
                      kv_a_width);
    matmul(kv_a, n, w->kv_lora_rank, kv_a_width, w->kv_b, kv_b_width, kv_b, kv_b_width);
    size_t work = 0;
    bool parallel = !__builtin_mul_overflow(n, width, &work) && work >= PE_PARALLEL_MIN_WORK;
#pragma omp parallel for schedule(static) if (parallel)
    for (size_t t = 0; t < n; t++) {
        float *k = out + t * width + qd, *v = k + qd;
        const float *kvb = kv_b + t * kv_b_width, *k_rot = kv_a + t * kv_a_width + w->kv_lora_rank;
        for (size_t h = 0; h < w->heads; h++) {
            const float *head = kvb + h * (w->nope_dim + w->v_dim);
            memcpy(k + h * qk_head, head, w->nope_dim * sizeof *k);
            memcpy(k + h * qk_head + w->nope_dim, k_rot, w->rope_dim * sizeof *k);
            memcpy(v + h * w->v_dim, head + w->nope_dim, w->v_dim * sizeof *v);
        }
    }
    st = PE_OK;
done:
    free(q_a);
    free(kv_a);
    free(kv_b);
    return st;
}
