/*
 * test_qk_norm.c - pe_group_rms_norm (q/k norms per head and over the
 * whole width), pe_group_layer_norm (shared and per-head weights, with and
 * without bias) and
 * pe_softcap_scores against long double references written here, plus
 * hand-computed vectors.
 */
#include <math.h>
#include <string.h>

#include "check.h"
#include "test_list.h"
#include "posenc.h"

enum { ROWS = 5, HEADS = 3, HEAD_DIM = 6, WIDTH = HEADS * HEAD_DIM, STRIDE = WIDTH + 4 };

/* Reference: each group over its own channels, sum of squares in long
 * double, division by the root (not a multiplication by its reciprocal). */
static void ref_groups(const float *x, size_t width, size_t group, const float *w, long double eps,
                       double *out)
{
    for (size_t h = 0; h < width / group; h++) {
        long double ss = 0;
        for (size_t j = 0; j < group; j++)
            ss += (long double)x[h * group + j] * x[h * group + j];
        long double rms = sqrtl(ss / group + eps);
        for (size_t j = 0; j < group; j++)
            out[h * group + j] = (double)(x[h * group + j] / rms * w[j]);
    }
}

static void fill(float *x, size_t n, uint64_t *rng, double lo, double hi)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)test_uniform(rng, lo, hi);
}

static void test_per_head_and_width(void)
{
    uint64_t rng = 13;
    float x[ROWS * STRIDE], orig[ROWS * STRIDE], w_head[HEAD_DIM], w_width[WIDTH];
    double want[WIDTH];

    fill(orig, ROWS * STRIDE, &rng, -4.0, 4.0);
    fill(w_head, HEAD_DIM, &rng, 0.2, 2.0);
    fill(w_width, WIDTH, &rng, -1.5, 1.5);

    memcpy(x, orig, sizeof x);
    pe_group_rms_norm(ROWS, WIDTH, HEAD_DIM, w_head, 1e-6, x, STRIDE);
    for (size_t i = 0; i < ROWS; i++) {
        ref_groups(orig + i * STRIDE, WIDTH, HEAD_DIM, w_head, 1e-6L, want);
        CHECK_CLOSE(x + i * STRIDE, want, WIDTH, 2e-6, "per-head rmsnorm, one row");
        CHECK(memcmp(x + i * STRIDE + WIDTH, orig + i * STRIDE + WIDTH, 4 * sizeof *x) == 0,
              "channels past width are untouched");
    }

    memcpy(x, orig, sizeof x);
    pe_group_rms_norm(ROWS, WIDTH, WIDTH, w_width, 1e-5, x, STRIDE);
    for (size_t i = 0; i < ROWS; i++) {
        ref_groups(orig + i * STRIDE, WIDTH, WIDTH, w_width, 1e-5L, want);
        CHECK_CLOSE(x + i * STRIDE, want, WIDTH, 2e-6, "whole-width rmsnorm, one row");
    }
}

static void test_known_vectors(void)
{
    /* [3, 4]: mean square 12.5, so [3, 4] / sqrt(12.5) */
    float x[4] = {3.0f, 4.0f, -1.0f, 1.0f};
    const float ones[2] = {1.0f, 1.0f};
    const double want[4] = {0.848528137423857, 1.131370849898476, -1.0, 1.0};
    pe_group_rms_norm(1, 4, 2, ones, 1e-12, x, 4);
    CHECK_CLOSE(x, want, 4, 1e-7, "[3,4,-1,1] per pair");

    /* eps dominates a zero group: stays zero, no NaN */
    float z[3] = {0.0f, 0.0f, 0.0f};
    const float w3[3] = {2.0f, 2.0f, 2.0f};
    const double zeros[3] = {0, 0, 0};
    pe_group_rms_norm(1, 3, 3, w3, 1e-6, z, 3);
    CHECK_CLOSE(z, zeros, 3, 0.0, "a zero group stays zero");

    /* x*(1+w) as Gemma 3 folds it: weight 1 + (-0.5) halves the unit row */
    float u[2] = {1.0f, -1.0f};
    const float half[2] = {1.0f + -0.5f, 1.0f + -0.5f};
    const double uw[2] = {0.5 / sqrt(1.0 + 1e-6), -0.5 / sqrt(1.0 + 1e-6)};
    pe_group_rms_norm(1, 2, 2, half, 1e-6, u, 2);
    CHECK_CLOSE(u, uw, 2, 1e-7, "(1 + w) weight");
}

/* LayerNorm reference: mean and centred variance in long double, group h
 * with w + h*ws and b + h*ws (b NULL: none). */
static void ref_layer(const float *x, size_t width, size_t group, const float *w, const float *b,
                      size_t ws, long double eps, double *out)
{
    for (size_t h = 0; h < width / group; h++) {
        long double mean = 0, var = 0;
        for (size_t j = 0; j < group; j++)
            mean += x[h * group + j];
        mean /= group;
        for (size_t j = 0; j < group; j++)
            var += (x[h * group + j] - mean) * (x[h * group + j] - mean);
        long double sd = sqrtl(var / group + eps);
        for (size_t j = 0; j < group; j++)
            out[h * group + j] = (double)((x[h * group + j] - mean) / sd * w[h * ws + j] +
                                          (b ? (long double)b[h * ws + j] : 0.0L));
    }
}

static void test_layer_norm(void)
{
    uint64_t rng = 17;
    float x[ROWS * STRIDE], orig[ROWS * STRIDE], w_heads[WIDTH], b_heads[WIDTH];
    double want[WIDTH];

    fill(orig, ROWS * STRIDE, &rng, -3.0, 5.0);
    fill(w_heads, WIDTH, &rng, -1.5, 1.5);
    fill(b_heads, WIDTH, &rng, -0.5, 0.5);
    for (size_t c = 0; c < 4; c++) {
        size_t ws = c % 2 ? HEAD_DIM : 0;
        const float *b = c >= 2 ? b_heads : NULL;
        memcpy(x, orig, sizeof x);
        pe_group_layer_norm(ROWS, WIDTH, HEAD_DIM, w_heads, b, ws, 1e-5, x, STRIDE);
        for (size_t i = 0; i < ROWS; i++) {
            ref_layer(orig + i * STRIDE, WIDTH, HEAD_DIM, w_heads, b, ws, 1e-5L, want);
            CHECK_CLOSE(x + i * STRIDE, want, WIDTH, 2e-6,
                        b ? (ws ? "layernorm + bias, per head" : "layernorm + bias, shared")
                          : (ws ? "layernorm, a weight per head" : "layernorm, one shared weight"));
            CHECK(memcmp(x + i * STRIDE + WIDTH, orig + i * STRIDE + WIDTH, 4 * sizeof *x) == 0,
                  "channels past width are untouched");
        }
    }
    /* [1, 3]: mean 2, variance 1, so [-1, 1]; the second head's weight 2
     * doubles [5, 9]'s [-1, 1]; a constant head is all zero */
    float k[6] = {1.0f, 3.0f, 5.0f, 9.0f, 7.0f, 7.0f};
    const float kw[6] = {1.0f, 1.0f, 2.0f, 2.0f, 1.0f, 1.0f};
    const double kwant[6] = {-1.0 / sqrt(1.0 + 1e-12),
                             1.0 / sqrt(1.0 + 1e-12),
                             -2.0 / sqrt(1.0 + 0.25e-12),
                             2.0 / sqrt(1.0 + 0.25e-12),
                             0.0,
                             0.0};
    pe_group_layer_norm(1, 6, 2, kw, NULL, 2, 1e-12, k, 6);
    CHECK_CLOSE(k, kwant, 6, 1e-7, "layernorm known heads");
    /* one shared [2] weight and bias (Phi): [1, 3] -> [-1, 1] * [2, 3] + [0.5, -4] */
    float kb[4] = {1.0f, 3.0f, 10.0f, 30.0f};
    const float bw[2] = {2.0f, 3.0f}, bb[2] = {0.5f, -4.0f};
    const double bwant[4] = {-1.5, -1.0, -1.5, -1.0};
    pe_group_layer_norm(1, 4, 2, bw, bb, 0, 1e-12, kb, 4);
    CHECK_CLOSE(kb, bwant, 4, 1e-6, "layernorm known shared weight and bias");
}

static void test_softcap(void)
{
    uint64_t rng = 29;
    enum { N = 64 };
    float s[N], orig[N], bias[N];
    double want[N];

    fill(orig, N, &rng, -300.0, 300.0);
    fill(bias, N, &rng, -2.0, 2.0);
    memcpy(s, orig, sizeof s);
    pe_softcap_scores(s, NULL, N, 50.0);
    for (size_t i = 0; i < N; i++)
        want[i] = (double)(50.0L * tanhl((long double)orig[i] / 50.0L));
    CHECK_CLOSE(s, want, N, 1e-5, "softcap 50, no bias");
    for (size_t i = 0; i < N; i++)
        CHECK(fabsf(s[i]) <= 50.0f, "softcapped score %g within the cap", (double)s[i]);

    memcpy(s, orig, sizeof s);
    pe_softcap_scores(s, bias, N, 30.0);
    for (size_t i = 0; i < N; i++)
        want[i] = (double)(30.0L * tanhl((long double)orig[i] / 30.0L) + bias[i]);
    CHECK_CLOSE(s, want, N, 1e-5, "softcap 30, then the bias");

    /* 50 * tanh(0.5) = 23.105857863000487; tanh(1) * 1 = 0.7615941559557649 */
    float k[2] = {25.0f, 1.0f};
    pe_softcap_scores(k, NULL, 1, 50.0);
    pe_softcap_scores(k + 1, NULL, 1, 1.0);
    const double kw[2] = {23.105857863000487, 0.7615941559557649};
    CHECK_CLOSE(k, kw, 2, 2e-6, "softcap known values");
}

void test_qk_norm(void)
{
    test_per_head_and_width();
    test_known_vectors();
    test_layer_norm();
    test_softcap();
}
