/*
 * test_norm.c - layernorm and rmsnorm of one row against a two-pass long
 * double reference written here.
 */
#include <math.h>
#include <string.h>

#include "check.h"
#include "test_list.h"
#include "posenc.h"

enum { D = 37 };

/* Reference: long double, mean and variance in separate passes. */
static void ref_layer(const double *z, size_t d, const float *w, const float *b, long double eps,
                      double *out)
{
    long double mean = 0, var = 0;
    for (size_t j = 0; j < d; j++)
        mean += z[j];
    mean /= d;
    for (size_t j = 0; j < d; j++)
        var += (z[j] - mean) * (z[j] - mean);
    var /= d;
    for (size_t j = 0; j < d; j++)
        out[j] = (double)((z[j] - mean) / sqrtl(var + eps) * w[j] + (b ? b[j] : 0.0L));
}

static void ref_rms(const double *z, size_t d, const float *w, long double eps, double *out)
{
    long double ss = 0;
    for (size_t j = 0; j < d; j++)
        ss += (long double)z[j] * z[j];
    long double rms = sqrtl(ss / d + eps);
    for (size_t j = 0; j < d; j++)
        out[j] = (double)(z[j] / rms * w[j]);
}

void test_norm(void)
{
    uint64_t rng = 7;
    double z[D], got[D], want[D];
    float w[D], b[D];

    for (size_t j = 0; j < D; j++) {
        z[j] = test_uniform(&rng, -3.0, 5.0);
        w[j] = (float)test_uniform(&rng, 0.5, 1.5);
        b[j] = (float)test_uniform(&rng, -0.2, 0.2);
    }
    CHECK(pe_norm_default_eps(PE_NORM_LAYER) == 1e-5, "layernorm eps 1e-5");
    CHECK(pe_norm_default_eps(PE_NORM_RMS) == 1e-6, "rmsnorm eps 1e-6");

    pe_norm ln = {PE_NORM_LAYER, 1e-5, w, b};
    pe_norm_row(&ln, z, D, got);
    ref_layer(z, D, w, b, 1e-5L, want);
    CHECK_CLOSE_D(got, want, D, 1e-13, "layernorm with bias");

    pe_norm ln_nb = {PE_NORM_LAYER, 1e-5, w, NULL};
    pe_norm_row(&ln_nb, z, D, got);
    ref_layer(z, D, w, NULL, 1e-5L, want);
    CHECK_CLOSE_D(got, want, D, 1e-13, "layernorm without bias");

    pe_norm rms = {PE_NORM_RMS, 1e-6, w, NULL};
    pe_norm_row(&rms, z, D, got);
    ref_rms(z, D, w, 1e-6L, want);
    CHECK_CLOSE_D(got, want, D, 1e-13, "rmsnorm");

    /* In place gives the same bits as out of place. */
    memcpy(want, got, sizeof got);
    memcpy(got, z, sizeof z);
    pe_norm_row(&rms, got, D, got);
    CHECK(memcmp(got, want, sizeof got) == 0, "rmsnorm in place");

    /* A constant row: variance 0, eps keeps it finite and centred at 0. */
    double flat[4] = {2, 2, 2, 2}, out4[4];
    float ones[4] = {1, 1, 1, 1};
    pe_norm ln4 = {PE_NORM_LAYER, 1e-5, ones, NULL};
    pe_norm_row(&ln4, flat, 4, out4);
    CHECK(out4[0] == 0.0 && out4[3] == 0.0, "layernorm of a constant row is 0");

    /* NULL and PE_NORM_NONE copy. */
    pe_norm_row(NULL, z, D, got);
    CHECK(memcmp(got, z, sizeof z) == 0, "NULL norm copies");
    pe_norm none = {PE_NORM_NONE, 0.0, NULL, NULL};
    pe_norm_row(&none, z, D, got);
    CHECK(memcmp(got, z, sizeof z) == 0, "PE_NORM_NONE copies");
}
