/*
 * test_mla.c - pe_mla_project (DeepSeek's multi-head latent attention
 * projection) against a reference written here with plain loops in long
 * double, for a low-rank q (DeepSeek-V3) and a plain q_proj (V2-Lite).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_list.h"
#include "posenc.h"

enum { N = 3, D = 10, H = 3, QL = 6, KVL = 5, NOPE = 4, ROPE = 2, V = 3 };
enum { QKH = NOPE + ROPE, QD = H * QKH, WIDTH = 2 * QD + H * V };

static void fill(float *x, size_t n, uint64_t *rng)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)test_uniform(rng, -1.0, 1.0);
}

/* y[out] = x[in] . w[in][out], then RMSNorm with weight when norm_w */
static void ref_linear(const long double *x, size_t in, const float *w, size_t out, long double *y)
{
    for (size_t o = 0; o < out; o++) {
        long double s = 0;
        for (size_t i = 0; i < in; i++)
            s += x[i] * w[i * out + o];
        y[o] = s;
    }
}

static void ref_rms(long double *x, size_t n, const float *w, long double eps)
{
    long double ss = 0;
    for (size_t i = 0; i < n; i++)
        ss += x[i] * x[i];
    long double r = sqrtl(ss / n + eps);
    for (size_t i = 0; i < n; i++)
        x[i] = x[i] / r * w[i];
}

static void run(bool low_rank)
{
    uint64_t rng = low_rank ? 41 : 42;
    float z[N * D], q_a[D * QL], q_a_norm[QL], q_b[D * QD] /* big enough for both */;
    float kv_a[D * (KVL + ROPE)], kv_a_norm[KVL], kv_b[KVL * H * (NOPE + V)], out[N * WIDTH];
    fill(z, ARRAY_LEN(z), &rng);
    fill(q_a, ARRAY_LEN(q_a), &rng);
    fill(q_b, ARRAY_LEN(q_b), &rng);
    fill(kv_a, ARRAY_LEN(kv_a), &rng);
    fill(kv_b, ARRAY_LEN(kv_b), &rng);
    for (size_t i = 0; i < QL; i++)
        q_a_norm[i] = (float)test_uniform(&rng, 0.5, 1.5);
    for (size_t i = 0; i < KVL; i++)
        kv_a_norm[i] = (float)test_uniform(&rng, 0.5, 1.5);
    pe_mla_weights w = {.d_model = D,
                        .heads = H,
                        .q_lora_rank = low_rank ? QL : 0,
                        .kv_lora_rank = KVL,
                        .nope_dim = NOPE,
                        .rope_dim = ROPE,
                        .v_dim = V,
                        .q_norm_eps = 1e-6,
                        .kv_norm_eps = 1e-5,
                        .q_a = low_rank ? q_a : NULL,
                        .q_a_norm = q_a_norm,
                        .q_b = q_b,
                        .kv_a = kv_a,
                        .kv_a_norm = kv_a_norm,
                        .kv_b = kv_b};
    CHECK(pe_mla_width(&w) == WIDTH && pe_mla_qk_width(&w) == QD, "mla widths");
    CHECK(pe_mla_project(&w, z, N, out) == PE_OK, "mla project ok");
    for (size_t t = 0; t < N; t++) {
        long double x[D], qa[QL], q[QD], kva[KVL + ROPE], kvb[H * (NOPE + V)];
        double want[WIDTH];
        for (size_t i = 0; i < D; i++)
            x[i] = z[t * D + i];
        if (low_rank) {
            ref_linear(x, D, q_a, QL, qa);
            ref_rms(qa, QL, q_a_norm, 1e-6L);
            ref_linear(qa, QL, q_b, QD, q);
        } else {
            ref_linear(x, D, q_b, QD, q);
        }
        ref_linear(x, D, kv_a, KVL + ROPE, kva);
        ref_rms(kva, KVL, kv_a_norm, 1e-5L);
        ref_linear(kva, KVL, kv_b, H * (NOPE + V), kvb);
        for (size_t h = 0; h < H; h++) {
            for (size_t j = 0; j < QKH; j++) {
                want[h * QKH + j] = (double)q[h * QKH + j];
                want[QD + h * QKH + j] = (double)(j < NOPE ? kvb[h * (NOPE + V) + j]
                                                           : kva[KVL + j - NOPE]);
            }
            for (size_t j = 0; j < V; j++)
                want[2 * QD + h * V + j] = (double)kvb[h * (NOPE + V) + NOPE + j];
        }
        CHECK_CLOSE(out + t * WIDTH, want, WIDTH, 2e-5,
                    low_rank ? "mla q (low rank), k, v against long double"
                             : "mla q (q_proj), k, v against long double");
    }
}

void test_mla(void)
{
    run(true);
    run(false);
}
