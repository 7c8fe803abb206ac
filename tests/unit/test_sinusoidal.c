/*
 * test_sinusoidal.c - sinusoidal rows against known numpy float64 vectors,
 * an angle-addition recurrence in long double, odd widths, and accuracy at
 * positions in the millions.
 */
#include <math.h>
#include <string.h>
#include <stdlib.h>

#include "check.h"
#include "test_list.h"
#include "posenc.h"

/* w_i = exp(-(2i/d) ln base), in long double: another route to base^(-2i/d). */
static long double ref_freq(long double base, size_t i, size_t d)
{
    return expl(-((long double)(2 * i) / d) * logl(base));
}

static void anchor_vectors(void)
{
    static const struct {
        pe_sin_layout layout;
        int64_t pos;
        size_t d;
        double want[8];
    } cases[] = {
        {PE_SIN_INTERLEAVED, 0, 4, {0, 1, 0, 1}},
        {PE_SIN_INTERLEAVED, 1, 4, {0.841471, 0.540302, 0.010000, 0.999950}},
        {PE_SIN_INTERLEAVED, 2, 4, {0.909297, -0.416147, 0.019999, 0.999800}},
        {PE_SIN_INTERLEAVED,
         5,
         8,
         {-0.958924, 0.283662, 0.479426, 0.877583, 0.049979, 0.998750, 0.005000, 0.999988}},
        {PE_SIN_SPLIT,
         5,
         8,
         {-0.958924, 0.479426, 0.049979, 0.005000, 0.283662, 0.877583, 0.998750, 0.999988}},
    };
    for (size_t c = 0; c < ARRAY_LEN(cases); c++) {
        double row[8];
        float out[8];
        pe_absolute pe = {.kind = PE_ABS_SINUSOIDAL, .base = 10000.0, .layout = cases[c].layout};

        pe_sinusoidal_row(10000.0, cases[c].layout, cases[c].pos, cases[c].d, row);
        CHECK_CLOSE_D(row, cases[c].want, cases[c].d, 1e-6, "sinusoidal row, anchor 11.1");
        CHECK(pe_encode_absolute(&pe, NULL, 1.0, NULL, &cases[c].pos, 1, cases[c].d, out, NULL) ==
                  PE_OK,
              "bare sinusoidal table returns PE_OK");
        CHECK_CLOSE(out, cases[c].want, cases[c].d, 1e-6, "bare sinusoidal table, anchor 11.1");
    }
}

/* d = 5: the third frequency has a sine only, last column interleaved, last
 * sine column (index 2) split. */
static void odd_width(void)
{
    double inter[5], split[5], want_i[5], want_s[5];
    long double s[3], c[3];

    for (size_t i = 0; i < 3; i++) {
        s[i] = sinl(3 * ref_freq(10000.0L, i, 5));
        c[i] = cosl(3 * ref_freq(10000.0L, i, 5));
    }
    double wi[5] = {(double)s[0], (double)c[0], (double)s[1], (double)c[1], (double)s[2]};
    double ws[5] = {(double)s[0], (double)s[1], (double)s[2], (double)c[0], (double)c[1]};
    for (size_t j = 0; j < 5; j++) {
        want_i[j] = wi[j];
        want_s[j] = ws[j];
    }
    pe_sinusoidal_row(10000.0, PE_SIN_INTERLEAVED, 3, 5, inter);
    pe_sinusoidal_row(10000.0, PE_SIN_SPLIT, 3, 5, split);
    CHECK_CLOSE_D(inter, want_i, 5, 1e-14, "odd d interleaved: last is a sine");
    CHECK_CLOSE_D(split, want_s, 5, 1e-14, "odd d split: 3 sines, 2 cosines");
}

/* Rows 0..n-1 by rotating (sin, cos) one step per position:
 * sin((p+1)w) = sin(pw)cos(w) + cos(pw)sin(w), and likewise for cos. */
static void recurrence(void)
{
    enum { N = 1200, D = 16 }; /* N*D over the parallel threshold */
    int64_t *pos = malloc(N * sizeof *pos);
    float *out = malloc(N * D * sizeof *out);
    double *want = malloc(N * D * sizeof *want);
    long double s[D / 2] = {0}, c[D / 2], sw[D / 2], cw[D / 2];

    if (!pos || !out || !want) {
        CHECK(false, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < D / 2; i++) {
        c[i] = 1;
        sw[i] = sinl(ref_freq(10000.0L, i, D));
        cw[i] = cosl(ref_freq(10000.0L, i, D));
    }
    for (size_t p = 0; p < N; p++) {
        pos[p] = (int64_t)p;
        for (size_t i = 0; i < D / 2; i++) {
            want[p * D + 2 * i] = (double)s[i];
            want[p * D + 2 * i + 1] = (double)c[i];
            long double sn = s[i] * cw[i] + c[i] * sw[i];
            c[i] = c[i] * cw[i] - s[i] * sw[i];
            s[i] = sn;
        }
    }
    pe_absolute pe = {.kind = PE_ABS_SINUSOIDAL, .base = 10000.0, .layout = PE_SIN_INTERLEAVED};
    CHECK(pe_encode_absolute(&pe, NULL, 1.0, NULL, pos, N, D, out, NULL) == PE_OK,
          "recurrence table returns PE_OK");
    CHECK_CLOSE(out, want, N * D, 1e-6, "table vs angle-addition recurrence");
done:
    free(pos);
    free(out);
    free(want);
}

/* At 1e6 and 1e7 the double-angle table matches long double to 1e-6, while
 * float32 angles (what most libraries compute) are off by more than 1e-3:
 * the test can tell the two apart. */
static void large_positions(void)
{
    enum { D = 128 };
    static const int64_t positions[] = {1000000, 10000000};
    pe_absolute pe = {.kind = PE_ABS_SINUSOIDAL, .base = 10000.0, .layout = PE_SIN_INTERLEAVED};

    for (size_t k = 0; k < ARRAY_LEN(positions); k++) {
        int64_t p = positions[k];
        float out[D];
        double want[D];
        double naive_err = 0;

        for (size_t i = 0; i < D / 2; i++) {
            long double theta = (long double)p * ref_freq(10000.0L, i, D);
            want[2 * i] = (double)sinl(theta);
            want[2 * i + 1] = (double)cosl(theta);

            float wf = 1.0f / powf(10000.0f, (float)(2 * i) / (float)D);
            float tf = (float)p * wf;
            naive_err = fmax(naive_err, fabs((double)sinf(tf) - want[2 * i]));
            naive_err = fmax(naive_err, fabs((double)cosf(tf) - want[2 * i + 1]));
        }
        CHECK(pe_encode_absolute(&pe, NULL, 1.0, NULL, &p, 1, D, out, NULL) == PE_OK,
              "large position returns PE_OK");
        CHECK_CLOSE(out, want, D, 1e-6, "sinusoidal at a large position");
        CHECK(naive_err > 1e-3, "float32 angles at %lld err %.3g, want > 1e-3", (long long)p,
              naive_err);
    }
}

/* A cached table (pe_absolute.cache) gives bit-identical rows, below and
 * past its last row, in both layouts and for odd d. */
static void cached_table(void)
{
    enum { D = 37, ROWS = 50, N = 6 };
    static double table[ROWS * D];
    const int64_t positions[N] = {0, 1, 49, 50, 123456, 7};
    float with[N * D], without[N * D], x[N * D];
    uint64_t state = 5;

    for (size_t i = 0; i < N * D; i++)
        x[i] = (float)test_uniform(&state, -1, 1);
    for (int layout = 0; layout < 2; layout++) {
        pe_absolute pe = {.kind = PE_ABS_SINUSOIDAL,
                          .base = 500.0,
                          .layout = (pe_sin_layout)layout};
        pe_sinusoidal_table(pe.base, pe.layout, D, ROWS, table);
        CHECK(pe_encode_absolute(&pe, NULL, 1.5, x, positions, N, D, without, NULL) == PE_OK,
              "uncached");
        pe.cache = table;
        pe.cache_rows = ROWS;
        CHECK(pe_encode_absolute(&pe, NULL, 1.5, x, positions, N, D, with, NULL) == PE_OK,
              "cached");
        CHECK(memcmp(with, without, sizeof with) == 0,
              "cached rows equal computed rows (layout %d)", layout);
    }
}

void test_sinusoidal(void)
{
    cached_table();
    anchor_vectors();
    odd_width();
    recurrence();
    large_positions();
}
