/*
 * test_rope.c - pe_rope_apply against known numpy float64 vectors, a
 * complex-multiplication reference, the layout permutation identity,
 * relative-position invariance, strides, and large positions.
 */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_list.h"
#include "posenc.h"

static pe_rope rope_cfg(size_t head_dim, size_t rotary_dim, pe_rope_layout layout)
{
    pe_rope r;
    memset(&r, 0, sizeof r);
    r.base = 10000.0;
    r.head_dim = head_dim;
    r.rotary_dim = rotary_dim;
    r.layout = layout;
    return r;
}

/* Rotates n rows of width floats with the configuration's own frequencies. */
static void rotate(const pe_rope *rope, const int64_t *pos, size_t n, size_t width, const float *x,
                   float *out)
{
    double inv[256], att = 0;
    if (pe_rope_frequencies(rope, 1.0, inv, &att) != PE_OK || att != 1.0)
        CHECK(false, "default frequencies, attention factor 1");
    pe_rope_apply(rope, inv, att, pos, n, width, x, width, out, width);
}

static void anchor_vectors(void)
{
    static const struct {
        size_t d;
        pe_rope_layout layout;
        double want[8];
    } cases[] = {
        {4, PE_ROPE_HALF, {-1.413353, 1.879118, -2.828857, 4.058191}},
        {4, PE_ROPE_INTERLEAVED, {-1.272233, -1.838865, 2.878668, 4.088187}},
        {8,
         PE_ROPE_HALF,
         {-1.695593, 0.137552, 2.788682, 3.975982, -4.808842, 6.323059, 7.086837, 8.011964}},
        {8,
         PE_ROPE_INTERLEAVED,
         {-1.272233, -1.838865, 1.683929, 4.707907, 4.817777, 6.147278, 6.975969, 8.020964}},
    };
    static const float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    static const double norms[2] = {5.477226, 14.282857};
    int64_t p = 3;

    for (size_t c = 0; c < ARRAY_LEN(cases); c++) {
        pe_rope rope = rope_cfg(cases[c].d, cases[c].d, cases[c].layout);
        float out[8];
        double norm = 0;
        rotate(&rope, &p, 1, cases[c].d, x, out);
        CHECK_CLOSE(out, cases[c].want, cases[c].d, 1.5e-6, "rope at position 3, anchor 11.2");
        for (size_t j = 0; j < cases[c].d; j++)
            norm += (double)out[j] * out[j];
        CHECK_NEAR(sqrt(norm), norms[cases[c].d == 8], 2e-6, "rotation preserves the norm");
    }

    /* Partial rotary: head 8, rotary 4 (frequencies from 4), half. */
    pe_rope partial = rope_cfg(8, 4, PE_ROPE_HALF);
    static const double want_partial[8] = {-1.413353, 1.879118, -2.828857, 4.058191, 5, 6, 7, 8};
    float out[8];
    rotate(&partial, &p, 1, 8, x, out);
    CHECK_CLOSE(out, want_partial, 8, 1.5e-6, "partial rotary, anchor 11.2");

    /* x NULL, half: vLLM's cos_sin_cache row [cos x4 | sin x4]. */
    static const double want_vllm[8] = {-0.989992, 0.955336, 0.999550, 0.999996,
                                        0.141120,  0.295520, 0.029996, 0.003000};
    pe_rope full = rope_cfg(8, 8, PE_ROPE_HALF);
    rotate(&full, &p, 1, 8, NULL, out);
    CHECK_CLOSE(out, want_vllm, 8, 1e-6, "bare half table = vLLM cos_sin row");
}

/* x NULL: [c0,s0,c1,s1 | 1 1 1 1] per head (interleaved, partial), and the
 * attention factor scales cos and sin but not the pass-through. */
static void bare_tables(void)
{
    pe_rope rope = rope_cfg(8, 4, PE_ROPE_INTERLEAVED);
    double inv[2] = {1.0, 0.01};
    int64_t p = 3;
    float out[16];
    double want[16];

    for (size_t h = 0; h < 2; h++) {
        double *w = want + h * 8;
        w[0] = 1.5 * cos(3.0), w[1] = 1.5 * sin(3.0);
        w[2] = 1.5 * cos(0.03), w[3] = 1.5 * sin(0.03);
        w[4] = w[5] = w[6] = w[7] = 1.0;
    }
    pe_rope_apply(&rope, inv, 1.5, &p, 1, 16, NULL, 16, out, 16);
    CHECK_CLOSE(out, want, 16, 2e-7, "bare interleaved table, two heads, attention factor 1.5");
}

/* Independent reference: each pair as a complex number times e^(i p w). */
static void complex_reference(pe_rope_layout layout)
{
    enum { HD = 16, HEADS = 3, W = HD * HEADS, N = 5 };
    static const int64_t pos[N] = {0, 1, 17, 4096, 99999};
    uint64_t rng = 3;
    float x[N * W], out[N * W];
    double want[N * W];

    for (size_t e = 0; e < N * W; e++)
        x[e] = (float)test_uniform(&rng, -2, 2);
    for (size_t r = 0; r < N; r++)
        for (size_t h = 0; h < HEADS; h++)
            for (size_t i = 0; i < HD / 2; i++) {
                size_t a = layout == PE_ROPE_HALF ? i : 2 * i;
                size_t b = layout == PE_ROPE_HALF ? i + HD / 2 : 2 * i + 1;
                const float *xh = x + r * W + h * HD;
                double w = exp(-(2.0 * (double)i / HD) * log(10000.0));
                double complex z = xh[a] + xh[b] * I;
                z *= cexp(I * ((double)pos[r] * w));
                want[r * W + h * HD + a] = creal(z);
                want[r * W + h * HD + b] = cimag(z);
            }
    pe_rope rope = rope_cfg(HD, HD, layout);
    rotate(&rope, pos, N, W, x, out);
    CHECK_CLOSE(out, want, N * W, 1e-6, "rope vs complex multiplication");

    /* In place gives the same bits. */
    float inplace[N * W];
    memcpy(inplace, x, sizeof x);
    rotate(&rope, pos, N, W, inplace, inplace);
    CHECK(memcmp(inplace, out, sizeof out) == 0, "rope in place");
}

/* P = [evens, odds] within each head: neox(x[P]) == interleaved(x)[P]. */
static void permutation_identity(void)
{
    enum { HD = 8, W = 16 };
    static const size_t P[HD] = {0, 2, 4, 6, 1, 3, 5, 7};
    static const int64_t pos[2] = {5, 12345};
    uint64_t rng = 9;
    float x[2 * W], xp[2 * W], half[2 * W], inter[2 * W];
    bool same = true;

    for (size_t e = 0; e < 2 * W; e++)
        x[e] = (float)test_uniform(&rng, -1, 1);
    for (size_t r = 0; r < 2; r++)
        for (size_t h = 0; h < W / HD; h++)
            for (size_t k = 0; k < HD; k++)
                xp[r * W + h * HD + k] = x[r * W + h * HD + P[k]];
    pe_rope neox = rope_cfg(HD, HD, PE_ROPE_HALF);
    pe_rope gptj = rope_cfg(HD, HD, PE_ROPE_INTERLEAVED);
    rotate(&neox, pos, 2, W, xp, half);
    rotate(&gptj, pos, 2, W, x, inter);
    for (size_t r = 0; r < 2; r++)
        for (size_t h = 0; h < W / HD; h++)
            for (size_t k = 0; k < HD; k++)
                same &= half[r * W + h * HD + k] == inter[r * W + h * HD + P[k]];
    CHECK(same, "neox(x[P]) == interleaved(x)[P] exactly");
}

static double dot8(const float *a, const float *b)
{
    double s = 0;
    for (size_t j = 0; j < 8; j++)
        s += (double)a[j] * b[j];
    return s;
}

/* q.k depends on the distance only: (7,3) and (104,100) agree. */
static void relative_invariance(void)
{
    static const float q[8] = {0.3f, -1.2f, 0.8f, 2.0f, -0.5f, 0.1f, 1.7f, -0.9f};
    static const float k[8] = {1.1f, 0.4f, -0.7f, 0.2f, 0.9f, -1.5f, 0.6f, 0.05f};
    static const int64_t pq[2] = {7, 104}, pk[2] = {3, 100};

    for (int l = 0; l < 2; l++) {
        pe_rope rope = rope_cfg(8, 8, l ? PE_ROPE_INTERLEAVED : PE_ROPE_HALF);
        float rq[8], rk[8];
        double dots[2];
        for (int c = 0; c < 2; c++) {
            rotate(&rope, &pq[c], 1, 8, q, rq);
            rotate(&rope, &pk[c], 1, 8, k, rk);
            dots[c] = dot8(rq, rk);
        }
        CHECK_NEAR(dots[0], dots[1], 1e-5, "q.k at (7,3) equals (104,100)");
        CHECK(fabs(dots[0] - dot8(q, k)) > 1e-2,
              "and differs from the unrotated q.k (the test can fail)");
    }
}

/* Row strides: padding between rows is neither read into nor written. */
static void strides(void)
{
    enum { N = 3, W = 8, XS = 11, OS = 13 };
    static const int64_t pos[N] = {2, 40, 900};
    float x[N * XS], packed[N * W], out[N * OS], want[N * W];
    uint64_t rng = 21;
    bool same = true, untouched = true;

    for (size_t e = 0; e < N * XS; e++)
        x[e] = (float)test_uniform(&rng, -1, 1);
    for (size_t r = 0; r < N; r++)
        memcpy(packed + r * W, x + r * XS, W * sizeof *x);
    for (size_t e = 0; e < N * OS; e++)
        out[e] = 42.0f;
    pe_rope rope = rope_cfg(4, 4, PE_ROPE_HALF);
    double inv[2], att;
    pe_rope_frequencies(&rope, 1.0, inv, &att);
    pe_rope_apply(&rope, inv, att, pos, N, W, x, XS, out, OS);
    pe_rope_apply(&rope, inv, att, pos, N, W, packed, W, want, W);
    for (size_t r = 0; r < N; r++) {
        same &= memcmp(out + r * OS, want + r * W, W * sizeof *out) == 0;
        for (size_t j = W; j < OS; j++)
            untouched &= out[r * OS + j] == 42.0f;
    }
    CHECK(same, "strided rows equal packed rows");
    CHECK(untouched, "stride padding untouched");
}

/* Over the parallel threshold the rows are the bits of one-row calls. */
static void parallel_matches_serial(void)
{
    enum { N = 300, W = 64 };
    float *x = malloc(N * W * sizeof *x), *all = malloc(N * W * sizeof *all);
    int64_t *pos = malloc(N * sizeof *pos);
    float one[W];
    uint64_t rng = 33;
    bool same = true;

    if (!x || !all || !pos) {
        CHECK(false, "out of memory");
        goto done;
    }
    for (size_t e = 0; e < N * W; e++)
        x[e] = (float)test_uniform(&rng, -1, 1);
    for (size_t r = 0; r < N; r++)
        pos[r] = (int64_t)(r * r);
    pe_rope rope = rope_cfg(32, 24, PE_ROPE_INTERLEAVED);
    rotate(&rope, pos, N, W, x, all);
    for (size_t r = 0; r < N; r++) {
        rotate(&rope, pos + r, 1, W, x + r * W, one);
        same &= memcmp(one, all + r * W, sizeof one) == 0;
    }
    CHECK(same, "parallel rope rows equal serial rows");
done:
    free(x);
    free(all);
    free(pos);
}

/* At 1e6 and 1e7 the bare table matches long double to 1e-6; HF-style
 * float32 angles miss by more than 1e-3. */
static void large_positions(void)
{
    enum { D = 128 };
    static const int64_t positions[] = {1000000, 10000000};
    pe_rope rope = rope_cfg(D, D, PE_ROPE_HALF);

    for (size_t k = 0; k < ARRAY_LEN(positions); k++) {
        int64_t p = positions[k];
        float out[D];
        double want[D], naive_err = 0;
        for (size_t i = 0; i < D / 2; i++) {
            long double w = 1.0L / powl(10000.0L, (long double)(2 * i) / D);
            want[i] = (double)cosl(p * w);
            want[i + D / 2] = (double)sinl(p * w);
            float wf = 1.0f / powf(10000.0f, (float)(2 * i) / (float)D);
            float tf = (float)p * wf;
            naive_err = fmax(naive_err, fabs((double)cosf(tf) - want[i]));
        }
        rotate(&rope, &p, 1, D, NULL, out);
        CHECK_CLOSE(out, want, D, 1e-6, "rope cos/sin at a large position");
        CHECK(naive_err > 1e-3, "float32 rope angles at %lld err %.3g > 1e-3", (long long)p,
              naive_err);
    }
}

/* A cos/sin table (pe_rope.cache) gives bit-identical rotations for
 * positions inside and past it, partial rotary, both layouts, with an
 * attention factor. */
static void cached_table(void)
{
    enum { HD = 12, ROT = 8, W = 2 * HD, ROWS = 40, N = 5 };
    const int64_t positions[N] = {0, 3, 39, 40, 100000};
    double inv_freq[ROT / 2], table[ROWS * ROT];
    float x[N * W], with[N * W], without[N * W];
    uint64_t state = 3;

    for (size_t i = 0; i < N * W; i++)
        x[i] = (float)test_uniform(&state, -2, 2);
    for (int layout = 0; layout < 2; layout++) {
        pe_rope rope = {.base = 500.0,
                        .head_dim = HD,
                        .rotary_dim = ROT,
                        .layout = (pe_rope_layout)layout};
        double af = 0;
        CHECK(pe_rope_frequencies(&rope, 1.0, inv_freq, &af) == PE_OK, "frequencies");
        af = 1.1386; /* as a yarn scaling would give */
        pe_rope_apply(&rope, inv_freq, af, positions, N, W, x, W, without, W);
        pe_rope_table(inv_freq, ROT / 2, af, ROWS, table);
        rope.cache = table;
        rope.cache_rows = ROWS;
        pe_rope_apply(&rope, inv_freq, af, positions, N, W, x, W, with, W);
        CHECK(memcmp(with, without, sizeof with) == 0, "cached rope equals computed (layout %d)",
              layout);
    }
}

void test_rope(void)
{
    cached_table();
    anchor_vectors();
    bare_tables();
    complex_reference(PE_ROPE_HALF);
    complex_reference(PE_ROPE_INTERLEAVED);
    permutation_identity();
    relative_invariance();
    strides();
    parallel_matches_serial();
    large_positions();
}
