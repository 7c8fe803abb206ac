/*
 * test_llama4_qk.c - Llama 4's q/k arithmetic after the projection:
 * pe_attn_temperature (the no-RoPE layers' temperature) against values
 * worked out by hand and a long double reference, and pe_group_rms_norm
 * without a weight (Llama4TextL2Norm) against a reference that divides by
 * the root; pe_query_scale_mistral (Ministral 3's query scale) against
 * Hugging Face's values.
 */
#include <math.h>
#include <string.h>

#include "check.h"
#include "test_list.h"
#include "posenc.h"

enum { ROWS = 6, WIDTH = 8, STRIDE = WIDTH + 3 };

/* Row i of x (ROWS rows, STRIDE apart) is orig's times s[i] over WIDTH
 * channels, the channels after untouched, the first 3 rows (scale 1)
 * exactly unchanged. */
static void check_scaled_rows(const float *x, const float *orig, const double *s, const char *what)
{
    double want[WIDTH];

    for (size_t i = 0; i < ROWS; i++) {
        for (size_t j = 0; j < WIDTH; j++)
            want[j] = orig[i * STRIDE + j] * s[i];
        CHECK_CLOSE(x + i * STRIDE, want, WIDTH, 4e-7 * 3.0 * 1.3, what);
        CHECK(memcmp(x + i * STRIDE + WIDTH, orig + i * STRIDE + WIDTH, 3 * sizeof *x) == 0,
              "channels past width are untouched");
    }
    CHECK(memcmp(x, orig, 3 * STRIDE * sizeof *x) == 0, "rows of scale 1 are exactly unchanged");
}

static void test_temperature_known(void)
{
    /* Scout's floor_scale 8192 and attn_scale 0.1: positions below 8191
     * keep q; 8191 and 16383 are the first of floor 1 and 2. */
    const int64_t pos[ROWS] = {0, 1, 8190, 8191, 16383, 100000};
    const double s[ROWS] = {1.0,
                            1.0,
                            1.0,
                            1.0 + 0.1 * 0.69314718055994531,
                            1.0 + 0.1 * 1.0986122886681098,
                            1.0 + 0.1 * 2.5649493574615367 /* log(13): floor(100001/8192) = 12 */};
    float x[ROWS * STRIDE];
    uint64_t rng = 7;

    for (size_t i = 0; i < ROWS * STRIDE; i++)
        x[i] = (float)test_uniform(&rng, -3.0, 3.0);
    float orig[ROWS * STRIDE];
    memcpy(orig, x, sizeof x);
    pe_attn_temperature(ROWS, pos, 8192.0, 0.1, WIDTH, x, STRIDE);
    check_scaled_rows(x, orig, s, "temperature, Scout's scales");
}

static void test_temperature_reference(void)
{
    /* A floor_scale that is not a power of two, an attn_scale of 0.37 */
    enum { N = 40 };
    int64_t pos[N];
    float x[N], orig[N];
    double want[N];
    for (size_t i = 0; i < N; i++) {
        pos[i] = (int64_t)(i * i * 3);
        x[i] = orig[i] = (float)(0.5 + 0.1 * (double)i);
        long double f = floorl(((long double)pos[i] + 1) / 7.0L);
        want[i] = (double)(orig[i] * (logl(f + 1) * 0.37L + 1));
    }
    pe_attn_temperature(N, pos, 7.0, 0.37, 1, x, 1);
    CHECK_CLOSE(x, want, N, 2e-6 * 6.0, "temperature against long double, floor_scale 7");
}

static void test_weightless_norm(void)
{
    float x[ROWS * STRIDE], orig[ROWS * STRIDE];
    double want[WIDTH];
    uint64_t rng = 99;

    for (size_t i = 0; i < ROWS * STRIDE; i++)
        orig[i] = x[i] = (float)test_uniform(&rng, -5.0, 5.0);
    pe_group_rms_norm(ROWS, WIDTH, 4, NULL, 1e-5, x, STRIDE);
    for (size_t i = 0; i < ROWS; i++) {
        for (size_t h = 0; h < 2; h++) {
            long double ss = 0;
            for (size_t j = 0; j < 4; j++)
                ss += (long double)orig[i * STRIDE + h * 4 + j] * orig[i * STRIDE + h * 4 + j];
            long double rms = sqrtl(ss / 4 + 1e-5L);
            for (size_t j = 0; j < 4; j++)
                want[h * 4 + j] = (double)(orig[i * STRIDE + h * 4 + j] / rms);
        }
        CHECK_CLOSE(x + i * STRIDE, want, WIDTH, 1e-6, "weightless per-head norm (L2Norm)");
    }
}

static void test_query_scale_mistral(void)
{
    /* Ministral 3's beta 0.1 and orig 16384; Hugging Face's values at these
     * positions are 1, 1, 1, 1.0693, 1.1099, 1.2773 */
    const int64_t pos[ROWS] = {0, 1, 16383, 16384, 40000, 262143};
    const double s[ROWS] = {1.0,
                            1.0,
                            1.0,
                            1.0 + 0.1 * 0.69314718055994531 /* log 2 */,
                            1.0 + 0.1 * 1.0986122886681098 /* log 3 */,
                            1.0 + 0.1 * 2.7725887222397811 /* log 16 */};
    const double hf[ROWS] = {1, 1, 1, 1.0693, 1.1099, 1.2773};
    float x[ROWS * STRIDE], orig[ROWS * STRIDE];
    uint64_t rng = 11;

    for (size_t i = 0; i < ROWS * STRIDE; i++)
        orig[i] = x[i] = (float)test_uniform(&rng, -3.0, 3.0);
    pe_query_scale_mistral(ROWS, pos, 0.1, 16384, WIDTH, x, STRIDE);
    for (size_t i = 0; i < ROWS; i++)
        CHECK(fabs(s[i] - hf[i]) < 5e-5, "query scale: the hand value rounds to HF's");
    check_scaled_rows(x, orig, s, "query scale, Ministral 3's");
}

void test_llama4_qk(void)
{
    test_query_scale_mistral();
    test_temperature_known();
    test_temperature_reference();
    test_weightless_norm();
}
