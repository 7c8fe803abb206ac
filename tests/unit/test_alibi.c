/*
 * test_alibi.c - ALiBi slopes against known vectors and the paper's
 * recursive definition and MPT's ordering, the three bias forms, and
 * Falcon's bfloat16 rounding and divisor.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "test_list.h"
#include "posenc.h"

/* The ALiBi paper's reference code, recursively: for a power of two n,
 * start = 2^(-2^-(log2(n) - 3)) and slope k = start^(k+1); otherwise the
 * slopes of the closest power of two c, then every other slope of 2c. */
static void paper_slopes(size_t n, double *out)
{
    size_t c = 1;
    while (2 * c <= n)
        c *= 2;
    double start = pow(2.0, -pow(2.0, -(log2((double)c) - 3)));
    for (size_t k = 0; k < c; k++)
        out[k] = pow(start, (double)(k + 1));
    if (c == n)
        return;
    double twice[128];
    paper_slopes(2 * c, twice);
    for (size_t k = 0; k < n - c; k++)
        out[c + k] = twice[2 * k];
}

static void slopes(void)
{
    static const double want8[8] = {0.5,     0.25,     0.125,    0.0625,
                                    0.03125, 0.015625, 0.007812, 0.003906};
    static const double want6[6] = {0.25, 0.0625, 0.015625, 0.003906, 0.5, 0.125};
    static const double want12[12] = {0.5,      0.25,     0.125,    0.0625,   0.03125,  0.015625,
                                      0.007812, 0.003906, 0.707107, 0.353553, 0.176777, 0.088388};
    double got[64], want[64];

    pe_alibi_slopes(8, got);
    CHECK_CLOSE_D(got, want8, 8, 1e-6, "alibi slopes 8 heads, 11.4");
    pe_alibi_slopes(6, got);
    CHECK_CLOSE_D(got, want6, 6, 1e-6, "alibi slopes 6 heads, 11.4");
    pe_alibi_slopes(12, got);
    CHECK_CLOSE_D(got, want12, 12, 1e-6, "alibi slopes 12 heads, 11.4");

    bool all = true;
    for (size_t n = 1; n <= 64; n++) {
        pe_alibi_slopes(n, got);
        paper_slopes(n, want);
        for (size_t k = 0; k < n; k++)
            all &= fabs(got[k] - want[k]) <= 1e-15 * want[k];
    }
    CHECK(all, "alibi slopes 1..64 heads = paper's recursive definition");
}

static void bias_forms(void)
{
    enum { H = 8, T = 4 };
    static const int64_t pos[T] = {0, 1, 2, 3};
    float bias[H * T * T];

    /* Head 0 (slope 0.5): BLOOM keys 0..3, paper form at query 3. */
    static const double bloom_row[T] = {0, 0.5, 1.0, 1.5};
    static const double paper_row[T] = {-1.5, -1.0, -0.5, 0};
    pe_alibi_bias(H, PE_ALIBI_BLOOM, NULL, pos, T, bias);
    for (size_t i = 0; i < T; i++)
        CHECK_CLOSE(bias + i * T, bloom_row, T, 0, "BLOOM bias, any query, 11.4");
    pe_alibi_bias(H, PE_ALIBI_SYMMETRIC, NULL, pos, T, bias);
    CHECK_CLOSE(bias + 3 * T, paper_row, T, 0, "paper bias query 3, 11.4");

    bool plus_zero = true;
    for (size_t h = 0; h < H; h++)
        for (size_t i = 0; i < T; i++)
            plus_zero &= bias[(h * T + i) * T + i] == 0.0f && !signbit(bias[(h * T + i) * T + i]);
    CHECK(plus_zero, "symmetric diagonal is +0, never -0");

    /* 6 heads, unordered positions: every element. */
    enum { H6 = 6, T3 = 3 };
    static const int64_t p3[T3] = {10, 3, 700000};
    float b6[H6 * T3 * T3];
    double s6[H6], want[H6 * T3 * T3];
    paper_slopes(H6, s6);
    pe_alibi_bias(H6, PE_ALIBI_SYMMETRIC, NULL, p3, T3, b6);
    for (size_t h = 0; h < H6; h++)
        for (size_t i = 0; i < T3; i++)
            for (size_t j = 0; j < T3; j++)
                want[(h * T3 + i) * T3 + j] = -s6[h] * fabs((double)p3[i] - (double)p3[j]);
    CHECK_CLOSE(b6, want, H6 * T3 * T3, 1e-7 * 700000, "symmetric bias, 6 heads, all elements");
    pe_alibi_bias(H6, PE_ALIBI_BLOOM, NULL, p3, T3, b6);
    for (size_t h = 0; h < H6; h++)
        for (size_t i = 0; i < T3; i++)
            for (size_t j = 0; j < T3; j++)
                want[(h * T3 + i) * T3 + j] = s6[h] * (double)p3[j];
    CHECK_CLOSE(b6, want, H6 * T3 * T3, 1e-7 * 700000, "BLOOM bias, 6 heads, all elements");
}

/* MPT's build_mpt_alibi_tensor written out: n2 = 2^ceil(log2 n) slopes
 * 1/2^(k*8/n2), k = 1..n2, reordered as the odd-indexed then the
 * even-indexed ones (slopes[1::2], slopes[::2]) and cut to n. */
static void mpt_slopes(size_t n, double *out)
{
    size_t n2 = 1, k = 0;
    while (n2 < n)
        n2 *= 2;
    double all[128];
    for (size_t i = 0; i < n2; i++)
        all[i] = 1.0 / pow(2.0, (double)(i + 1) * (8.0 / (double)n2));
    if (n2 == n) {
        for (size_t i = 0; i < n; i++)
            out[i] = all[i];
        return;
    }
    for (size_t i = 1; i < n2 && k < n; i += 2)
        out[k++] = all[i];
    for (size_t i = 0; i < n2 && k < n; i += 2)
        out[k++] = all[i];
}

static void mpt_form(void)
{
    double got[64], want[64];
    bool all = true;

    for (size_t n = 1; n <= 64; n++) {
        pe_alibi_slopes(n, got);
        mpt_slopes(n, want);
        for (size_t k = 0; k < n; k++)
            all &= fabs(got[k] - want[k]) <= 1e-13 * want[k]; /* pow rounding only */
    }
    CHECK(all, "alibi slopes 1..64 heads = MPT's build_mpt_alibi_tensor order");

    /* 6 heads, T = 4 from offset 5: bias = slope*(j - (T-1)), any query
     * (MPT's arange(1 - T, 1) times the slopes). */
    enum { H = 6, T = 4 };
    static const int64_t pos[T] = {5, 6, 7, 8};
    float bias[H * T * T];
    double s[H], w[H * T * T];
    mpt_slopes(H, s);
    pe_alibi_bias(H, PE_ALIBI_MPT, NULL, pos, T, bias);
    for (size_t h = 0; h < H; h++)
        for (size_t i = 0; i < T; i++)
            for (size_t j = 0; j < T; j++)
                w[(h * T + i) * T + j] = s[h] * ((double)j + 1.0 - (double)T);
    CHECK_CLOSE(bias, w, H * T * T, 1e-7, "MPT bias, 6 heads, offset 5, all elements");
    CHECK(bias[T - 1] == 0.0f && !signbit(bias[T - 1]), "MPT bias: the last key is +0");
}

/* float32 to bfloat16 and back: keep the top 16 bits, rounding to
 * nearest with ties to even (finite values). */
static double bf16_bits(double x)
{
    float f = (float)x;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Falcon's build_alibi_tensor (slopes.bfloat16() * positions, a bfloat16
 * product) divided by sqrt(head_dim) in float32, as its sdpa mask. */
static void falcon_form(void)
{
    enum { H = 12, T = 6 };
    static const int64_t pos[T] = {0, 1, 255, 257, 259, 300};
    const pe_alibi_rounding r = {.bf16 = true, .divisor = sqrt(8.0)};
    float bias[H * T * T], w[H * T * T];
    double s[H];

    paper_slopes(H, s);
    pe_alibi_bias(H, PE_ALIBI_BLOOM, &r, pos, T, bias);
    for (size_t h = 0; h < H; h++)
        for (size_t i = 0; i < T; i++)
            for (size_t j = 0; j < T; j++) {
                double a = bf16_bits(bf16_bits(s[h]) * bf16_bits((double)pos[j]));
                w[(h * T + i) * T + j] = (float)a / (float)sqrt(8.0);
            }
    CHECK(memcmp(bias, w, sizeof bias) == 0, "Falcon bias, 12 heads: bit-exact");
    /* head 8: slope 2^-0.5 -> 0.70703125; 257 -> 256, 259 -> 260 (a tie, to even) */
    const float *row = bias + 8 * T * T;
    CHECK(row[3] == 181.0f / (float)sqrt(8.0), "Falcon bias: 0.70703125 * 256 at key 257 (%.9g)",
          (double)row[3]);
    CHECK(bias[4] == 260.0f * 0.5f / (float)sqrt(8.0), "Falcon bias: key 259 rounds to 260");
    CHECK(bias[3] != (float)(0.5 * 257.0 / sqrt(8.0)), "Falcon bias differs from the unrounded");
}

void test_alibi(void)
{
    slopes();
    bias_forms();
    mpt_form();
    falcon_form();
}
