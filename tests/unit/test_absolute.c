/*
 * test_absolute.c - pe_encode_absolute: embed_scale*x + PE, norms, learned
 * tables, aliasing, the parallel path, and its error returns.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_list.h"
#include "posenc.h"

/* Reference row: long double sin/cos from exp/log frequencies, the sum,
 * then a two-pass layernorm (w, b) or rmsnorm (w only) or none. */
static void ref_row(int64_t p, const float *x, double scale, size_t d, pe_norm_kind kind,
                    const float *w, const float *b, long double eps, double *out)
{
    long double z[64], mean = 0, var = 0, ss = 0;

    for (size_t j = 0; j < d; j++) {
        long double f = expl(-((long double)(j / 2 * 2) / d) * logl(10000.0L));
        long double pe = j % 2 ? cosl(p * f) : sinl(p * f);
        z[j] = scale * (long double)x[j] + pe;
        mean += z[j];
        ss += z[j] * z[j];
    }
    mean /= d;
    for (size_t j = 0; j < d; j++)
        var += (z[j] - mean) * (z[j] - mean);
    var /= d;
    for (size_t j = 0; j < d; j++) {
        long double v = z[j];
        if (kind == PE_NORM_LAYER)
            v = (z[j] - mean) / sqrtl(var + eps) * w[j] + b[j];
        else if (kind == PE_NORM_RMS)
            v = z[j] / sqrtl(ss / d + eps) * w[j];
        out[j] = (double)v;
    }
}

static void with_norms(void)
{
    enum { N = 5, D = 12 };
    static const int64_t pos[N] = {0, 3, 7, 1000, 123456};
    static const pe_norm_kind kinds[] = {PE_NORM_NONE, PE_NORM_LAYER, PE_NORM_RMS};
    uint64_t rng = 11;
    float x[N * D], w[D], b[D], out[N * D];
    double want[N * D];
    double scale = sqrt((double)D);
    pe_absolute pe = {.kind = PE_ABS_SINUSOIDAL, .base = 10000.0, .layout = PE_SIN_INTERLEAVED};

    for (size_t e = 0; e < N * D; e++)
        x[e] = (float)test_uniform(&rng, -1, 1);
    for (size_t j = 0; j < D; j++) {
        w[j] = (float)test_uniform(&rng, 0.5, 2);
        b[j] = (float)test_uniform(&rng, -1, 1);
    }
    for (size_t k = 0; k < ARRAY_LEN(kinds); k++) {
        pe_norm norm = {kinds[k], pe_norm_default_eps(kinds[k]), w,
                        kinds[k] == PE_NORM_LAYER ? b : NULL};
        for (size_t r = 0; r < N; r++)
            ref_row(pos[r], x + r * D, scale, D, kinds[k], w, b, norm.eps, want + r * D);
        CHECK(pe_encode_absolute(&pe, &norm, scale, x, pos, N, D, out, NULL) == PE_OK,
              "encode with norm %d returns PE_OK", (int)kinds[k]);
        CHECK_CLOSE(out, want, N * D, 2e-6, "scale*x + PE, normalised");
    }

    /* out aliasing x gives the same bits. */
    pe_norm ln = {PE_NORM_LAYER, 1e-5, w, b};
    float alias[N * D];
    memcpy(alias, x, sizeof x);
    pe_encode_absolute(&pe, &ln, scale, x, pos, N, D, out, NULL);
    pe_encode_absolute(&pe, &ln, scale, alias, pos, N, D, alias, NULL);
    CHECK(memcmp(out, alias, sizeof out) == 0, "out may alias x");
}

static void learned_and_none(void)
{
    enum { ROWS = 6, D = 4 };
    float table[ROWS * D], out[3 * D], x[3 * D];
    static const int64_t pos[3] = {5, 0, 2};
    pe_absolute learned = {.kind = PE_ABS_LEARNED,
                           .layout = PE_SIN_INTERLEAVED,
                           .table = table,
                           .table_rows = ROWS};
    pe_absolute none = {.kind = PE_ABS_NONE, .layout = PE_SIN_INTERLEAVED};
    bool exact = true;

    for (size_t e = 0; e < ROWS * D; e++)
        table[e] = 0.25f * (float)e - 1.0f;
    for (size_t e = 0; e < 3 * D; e++)
        x[e] = (float)e / 8.0f;

    CHECK(pe_encode_absolute(&learned, NULL, 1.0, NULL, pos, 3, D, out, NULL) == PE_OK,
          "learned bare table PE_OK");
    for (size_t r = 0; r < 3; r++)
        exact &= memcmp(out + r * D, table + pos[r] * D, D * sizeof *out) == 0;
    CHECK(exact, "learned bare table rows are table[p]");

    pe_encode_absolute(&learned, NULL, 2.0, x, pos, 3, D, out, NULL);
    exact = true;
    for (size_t r = 0; r < 3; r++)
        for (size_t j = 0; j < D; j++)
            exact &= out[r * D + j] == 2.0f * x[r * D + j] + table[pos[r] * D + j];
    CHECK(exact, "learned: 2x + table[p], exact for these values");

    pe_encode_absolute(&none, NULL, 1.0, NULL, pos, 3, D, out, NULL);
    exact = true;
    for (size_t e = 0; e < 3 * D; e++)
        exact &= out[e] == 0.0f;
    CHECK(exact, "none, no x: zeros");
    pe_encode_absolute(NULL, NULL, 3.0, x, pos, 3, D, out, NULL);
    exact = true;
    for (size_t e = 0; e < 3 * D; e++)
        exact &= out[e] == 3.0f * x[e];
    CHECK(exact, "NULL encoding: embed_scale*x only");
}

/* Over the parallel threshold, the result is the bits of row-by-row calls. */
static void parallel_matches_serial(void)
{
    enum { N = 600, D = 64 };
    float *x = malloc(N * D * sizeof *x), *all = malloc(N * D * sizeof *all);
    float *one = malloc(D * sizeof *one), w[D];
    int64_t *pos = malloc(N * sizeof *pos);
    uint64_t rng = 5;
    bool same = true;

    if (!x || !all || !one || !pos) {
        CHECK(false, "out of memory");
        goto done;
    }
    for (size_t e = 0; e < N * D; e++)
        x[e] = (float)test_uniform(&rng, -2, 2);
    for (size_t j = 0; j < D; j++)
        w[j] = (float)test_uniform(&rng, 0.5, 1.5);
    for (size_t r = 0; r < N; r++)
        pos[r] = (int64_t)(r * 37 % 5000);
    pe_norm rms = {PE_NORM_RMS, 1e-6, w, NULL};
    pe_absolute pe = {.kind = PE_ABS_SINUSOIDAL, .base = 10000.0, .layout = PE_SIN_SPLIT};
    pe_encode_absolute(&pe, &rms, 8.0, x, pos, N, D, all, NULL);
    for (size_t r = 0; r < N; r++) {
        pe_encode_absolute(&pe, &rms, 8.0, x + r * D, pos + r, 1, D, one, NULL);
        same &= memcmp(one, all + r * D, D * sizeof *one) == 0;
    }
    CHECK(same, "parallel rows equal serial rows bit for bit");
done:
    free(x);
    free(all);
    free(one);
    free(pos);
}

static void errors(void)
{
    float table[4 * 2] = {0}, out[5 * 4];
    static const int64_t pos[5] = {0, 1, 5, 2, 7};
    pe_absolute learned = {.kind = PE_ABS_LEARNED,
                           .layout = PE_SIN_INTERLEAVED,
                           .table = table,
                           .table_rows = 4};
    size_t bad = 99;

    CHECK(pe_encode_absolute(&learned, NULL, 1.0, NULL, pos, 5, 2, out, &bad) == PE_ERANGE,
          "position past the learned table: PE_ERANGE");
    CHECK(bad == 2, "PE_ERANGE names the first bad row (got %zu, want 2)", bad);
    CHECK(pe_encode_absolute(&learned, NULL, 1.0, NULL, pos, 5, 2, out, NULL) == PE_ERANGE,
          "PE_ERANGE with bad_index NULL");

    /* 10 * 3e38 overflows float32: flat index 1*4+2 = 6 comes first. */
    float x[3 * 4] = {1, 1, 1, 1, 1, 1, 3e38f, 1, -3e38f, 1, 1, 1};
    static const int64_t p3[3] = {0, 1, 2};
    pe_absolute sin_pe = {.kind = PE_ABS_SINUSOIDAL, .base = 10000.0, .layout = PE_SIN_INTERLEAVED};
    bad = 99;
    CHECK(pe_encode_absolute(&sin_pe, NULL, 10.0, x, p3, 3, 4, out, &bad) == PE_ENONFINITE,
          "float32 overflow: PE_ENONFINITE");
    CHECK(bad == 6, "PE_ENONFINITE names flat index (got %zu, want 6)", bad);
    CHECK(isinf(out[6]) && out[5] == (float)(10.0 + cos(1.0)),
          "overflowing element is inf, neighbours computed");

    /* The norm sees the unrounded sum, which is finite in double. */
    float w[4] = {1, 1, 1, 1};
    pe_norm ln = {PE_NORM_LAYER, 1e-5, w, NULL};
    CHECK(pe_encode_absolute(&sin_pe, &ln, 10.0, x, p3, 3, 4, out, &bad) == PE_OK,
          "layernorm of a sum past FLT_MAX is finite");

    float big[1];
    int64_t p0 = 0;
    CHECK(pe_encode_absolute(&sin_pe, NULL, 1.0, NULL, &p0, 1, SIZE_MAX / 4, big, NULL) ==
              PE_ENOMEM,
          "scratch size overflow: PE_ENOMEM, nothing written");
    pe_absolute bad_base = {.kind = PE_ABS_SINUSOIDAL, .base = 0.0, .layout = PE_SIN_INTERLEAVED};
    CHECK(pe_encode_absolute(&bad_base, NULL, 1.0, NULL, &p0, 1, 4, out, NULL) == PE_EINVAL,
          "base 0: PE_EINVAL");
    CHECK(pe_encode_absolute(&sin_pe, NULL, 1.0, NULL, &p0, 0, 4, out, NULL) == PE_OK,
          "n = 0 is a no-op");
}

/* pe_encode_input: scale*x + PE + add through two norms (BLOOM-like:
 * layernorm then layernorm; BERT-like: add then one layernorm), against a
 * long double reference; with add and pre_norm NULL it is bit-identical to
 * pe_encode_absolute. */
static void ref_layernorm(long double *z, size_t d, const float *w, const float *b, long double eps)
{
    long double mean = 0, var = 0;
    for (size_t j = 0; j < d; j++)
        mean += z[j];
    mean /= d;
    for (size_t j = 0; j < d; j++)
        var += (z[j] - mean) * (z[j] - mean);
    var /= d;
    for (size_t j = 0; j < d; j++)
        z[j] = (z[j] - mean) / sqrtl(var + eps) * w[j] + b[j];
}

static void input_stage(void)
{
    enum { N = 4, D = 10 };
    static const int64_t pos[N] = {0, 2, 9, 31};
    uint64_t rng = 23;
    float x[N * D], add[D], w1[D], b1[D], w2[D], b2[D], table[32 * D];
    float out[N * D], plain[N * D];
    double want[N * D];

    for (size_t e = 0; e < N * D; e++)
        x[e] = (float)test_uniform(&rng, -1, 1);
    for (size_t e = 0; e < 32 * D; e++)
        table[e] = (float)test_uniform(&rng, -0.5, 0.5);
    for (size_t j = 0; j < D; j++) {
        add[j] = (float)test_uniform(&rng, -1, 1);
        w1[j] = (float)test_uniform(&rng, 0.5, 2);
        b1[j] = (float)test_uniform(&rng, -1, 1);
        w2[j] = (float)test_uniform(&rng, 0.5, 2);
        b2[j] = (float)test_uniform(&rng, -1, 1);
    }
    pe_absolute learned = {.kind = PE_ABS_LEARNED,
                           .layout = PE_SIN_INTERLEAVED,
                           .table = table,
                           .table_rows = 32};
    pe_norm ln1 = {PE_NORM_LAYER, 1e-12, w1, b1}, ln2 = {PE_NORM_LAYER, 1e-5, w2, b2};

    /* BERT-like: LN(x + table[p] + add) */
    for (size_t r = 0; r < N; r++) {
        long double z[D];
        for (size_t j = 0; j < D; j++)
            z[j] = (long double)x[r * D + j] + table[pos[r] * D + j] + add[j];
        ref_layernorm(z, D, w1, b1, 1e-12L);
        for (size_t j = 0; j < D; j++)
            want[r * D + j] = (double)z[j];
    }
    pe_input bert = {.pe = &learned, .embed_scale = 1.0, .add = add, .pre_norm = &ln1};
    CHECK(pe_encode_input(&bert, x, pos, N, D, out, NULL) == PE_OK, "input stage: PE_OK");
    CHECK_CLOSE(out, want, N * D, 2e-6, "LN(x + PE + add)");

    /* BLOOM-like: LN2(LN1(x)), no PE */
    for (size_t r = 0; r < N; r++) {
        long double z[D];
        for (size_t j = 0; j < D; j++)
            z[j] = x[r * D + j];
        ref_layernorm(z, D, w1, b1, 1e-12L);
        ref_layernorm(z, D, w2, b2, 1e-5L);
        for (size_t j = 0; j < D; j++)
            want[r * D + j] = (double)z[j];
    }
    pe_input bloom = {.embed_scale = 1.0, .pre_norm = &ln1, .norm = &ln2};
    CHECK(pe_encode_input(&bloom, x, pos, N, D, out, NULL) == PE_OK, "two norms: PE_OK");
    CHECK_CLOSE(out, want, N * D, 2e-6, "LN2(LN1(x))");

    /* Without the new steps it is pe_encode_absolute, bit for bit. */
    pe_input same = {.pe = &learned, .embed_scale = 2.0, .norm = &ln2};
    pe_encode_input(&same, x, pos, N, D, out, NULL);
    pe_encode_absolute(&learned, &ln2, 2.0, x, pos, N, D, plain, NULL);
    CHECK(memcmp(out, plain, sizeof out) == 0, "add/pre_norm NULL == pe_encode_absolute");

    /* The add vector alone, exact for these sums of two floats in double. */
    pe_input add_only = {.embed_scale = 1.0, .add = add};
    pe_encode_input(&add_only, x, pos, N, D, out, NULL);
    bool exact = true;
    for (size_t e = 0; e < N * D; e++)
        exact &= out[e] == (float)((double)x[e] + (double)add[e % D]);
    CHECK(exact, "x + add rounded once");

    size_t bad = 0;
    int64_t far[1] = {40};
    CHECK(pe_encode_input(&bert, x, far, 1, D, out, &bad) == PE_ERANGE && bad == 0,
          "input stage keeps PE_ERANGE for a learned table");
}

void test_absolute(void)
{
    with_norms();
    learned_and_none();
    parallel_matches_serial();
    errors();
    input_stage();
}
