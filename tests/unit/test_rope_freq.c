/*
 * test_rope_freq.c - RoPE scaling: inverse frequencies and attention
 * factors against known numpy float64 vectors (head_dim 8), the short/long
 * choice of longrope, the proportional rope's pairs, and the
 * configurations that cannot be computed.
 */
#include <math.h>
#include <string.h>

#include "check.h"
#include "test_list.h"
#include "posenc.h"

static pe_rope cfg(double base, pe_rope_scaling_type type, double factor)
{
    pe_rope r;
    memset(&r, 0, sizeof r);
    r.base = base;
    r.head_dim = 8;
    r.rotary_dim = 8;
    r.layout = PE_ROPE_HALF;
    r.scaling.type = type;
    r.scaling.factor = factor;
    r.scaling.has_factor = true;
    r.scaling.truncate = true;
    return r;
}

static void llama3(void)
{
    static const struct {
        double theta, orig, scaled[4], divisor[4];
    } cases[] = {
        {500000, 8192, {1.000000, 0.037606, 0.000525, 0.000007}, {1, 1, 2.694530, 8}},
        {10000, 1024, {1.000000, 0.100000, 0.003087, 0.000125}, {1, 1, 3.239642, 8}},
    };
    for (size_t c = 0; c < ARRAY_LEN(cases); c++) {
        pe_rope r = cfg(cases[c].theta, PE_ROPE_SCALING_LLAMA3, 8);
        pe_rope plain = cfg(cases[c].theta, PE_ROPE_SCALING_NONE, 0);
        double inv[4], def[4], div[4], att;
        r.scaling.low_freq_factor = 1;
        r.scaling.high_freq_factor = 4;
        r.scaling.original_max_position_embeddings = cases[c].orig;
        CHECK(pe_rope_frequencies(&r, 1, inv, &att) == PE_OK && att == 1.0,
              "llama3 PE_OK, attention factor 1");
        pe_rope_frequencies(&plain, 1, def, &att);
        for (size_t i = 0; i < 4; i++)
            div[i] = def[i] / inv[i];
        CHECK_CLOSE_D(inv, cases[c].scaled, 4, 1e-6, "llama3 inv_freq, 11.3");
        CHECK_CLOSE_D(div, cases[c].divisor, 4, 1e-6,
                      "llama3 divisor (llama.cpp rope_freqs), 11.3");
    }
    static const double def500k[4] = {1.000000, 0.037606, 0.001414, 0.000053};
    pe_rope plain = cfg(500000, PE_ROPE_SCALING_NONE, 0);
    double def[4], att;
    pe_rope_frequencies(&plain, 1, def, &att);
    CHECK_CLOSE_D(def, def500k, 4, 1e-6, "default inv_freq theta 5e5, 11.3");
}

static void yarn(void)
{
    pe_rope r = cfg(10000, PE_ROPE_SCALING_YARN, 4);
    double inv[4], att;
    r.scaling.original_max_position_embeddings = 2048;

    /* truncate: low/high (1,3), e = [1, 1, 0.5, 0], w = [1, .1, .01, .001]. */
    static const double want_t[4] = {1, 0.1, 0.01 * 0.5 + 0.0025 * 0.5, 0.001 / 4};
    CHECK(pe_rope_frequencies(&r, 1, inv, &att) == PE_OK, "yarn PE_OK");
    CHECK_CLOSE_D(inv, want_t, 4, 1e-15, "yarn truncate inv_freq, 11.3");
    CHECK_NEAR(att, 1 + 0.1 * log(4.0), 1e-15, "yarn default attention factor");
    CHECK_NEAR(att, 1.138629, 1e-6, "yarn attention factor 1.138629, 11.3");

    /* Absent and zero betas both mean 32 and 1 (HF reads them with `or`). */
    double inv_b[4], att_b;
    r.scaling.has_beta_fast = r.scaling.has_beta_slow = true;
    r.scaling.beta_fast = r.scaling.beta_slow = 0;
    pe_rope_frequencies(&r, 1, inv_b, &att_b);
    CHECK(memcmp(inv, inv_b, sizeof inv) == 0, "yarn zero betas = defaults");
    r.scaling.beta_fast = 32, r.scaling.beta_slow = 1;
    pe_rope_frequencies(&r, 1, inv_b, &att_b);
    CHECK(memcmp(inv, inv_b, sizeof inv) == 0, "yarn explicit 32/1 = defaults");

    /* No truncation: low/high (1.008, 2.513), e2 = 0.340930. */
    r.scaling.truncate = false;
    static const double want_nt[4] = {1, 0.1, 0.005057, 0.00025};
    pe_rope_frequencies(&r, 1, inv, &att);
    CHECK_CLOSE_D(inv, want_nt, 4, 1e-6, "yarn no-truncate inv_freq, 11.3");
    CHECK_NEAR((inv[2] - 0.0025) / 0.0075, 0.340930, 1e-6, "yarn no-truncate ramp weight e2, 11.3");

    /* A huge context and beta_fast: low 2, high ceil(8.2) clamped to
     * dim - 1 = 7, so e3 = 1 - (3 - 2)/(7 - 2) = 0.8. */
    pe_rope wide = cfg(10000, PE_ROPE_SCALING_YARN, 4);
    wide.scaling.original_max_position_embeddings = 1e9;
    wide.scaling.has_beta_fast = true;
    wide.scaling.beta_fast = 1e6;
    static const double want_wide[4] = {1, 0.1, 0.01, 0.001 * 0.8 + 0.00025 * 0.2};
    pe_rope_frequencies(&wide, 1, inv, &att);
    CHECK_CLOSE_D(inv, want_wide, 4, 1e-15, "yarn high clamped to dim - 1");

    r.scaling.has_mscale = r.scaling.has_mscale_all_dim = true;
    r.scaling.mscale = 1, r.scaling.mscale_all_dim = 1;
    pe_rope_frequencies(&r, 1, inv, &att);
    CHECK(att == 1.0, "yarn mscale = mscale_all_dim: factor 1 (got %.17g)", att);
    r.scaling.mscale_all_dim = 0.707;
    pe_rope_frequencies(&r, 1, inv, &att);
    CHECK_NEAR(att, 1.036993, 1e-6, "yarn mscale 1 / all_dim 0.707, 11.3");
    r.scaling.has_attention_factor = true;
    r.scaling.attention_factor = 0.5;
    pe_rope_frequencies(&r, 1, inv, &att);
    CHECK(att == 0.5, "yarn explicit attention_factor wins");
}

static void dynamic_linear(void)
{
    pe_rope plain = cfg(10000, PE_ROPE_SCALING_NONE, 0);
    pe_rope dyn = cfg(10000, PE_ROPE_SCALING_DYNAMIC, 2);
    double def[4], inv[4], att;
    dyn.scaling.original_max_position_embeddings = 2048;
    pe_rope_frequencies(&plain, 1, def, &att);

    pe_rope_frequencies(&dyn, 1000, inv, &att);
    CHECK(memcmp(inv, def, sizeof inv) == 0, "dynamic seq 1000: base unchanged");
    pe_rope_frequencies(&dyn, 2048, inv, &att);
    CHECK(memcmp(inv, def, sizeof inv) == 0, "dynamic seq 2048: base unchanged");
    static const double want[4] = {1.000000, 0.069336, 0.004807, 0.000333};
    CHECK(pe_rope_frequencies(&dyn, 4096, inv, &att) == PE_OK && att == 1.0,
          "dynamic PE_OK, attention factor 1");
    CHECK_CLOSE_D(inv, want, 4, 1e-6, "dynamic seq 4096, 11.3");
    CHECK_NEAR(pow(inv[1], -4.0), 43267.487109, 1e-5, "dynamic seq 4096: base 43267.487109, 11.3");

    /* HunYuan's NTK-alpha: base 10000 * 16^(8/6) = 10000 * 40.3175 within
     * the context, the dynamic base past it (alpha unread there) */
    pe_rope alpha = dyn;
    alpha.scaling.alpha = 16;
    CHECK(pe_rope_frequencies(&alpha, 2048, inv, &att) == PE_OK, "alpha PE_OK");
    CHECK_NEAR(pow(inv[1], -4.0), 10000 * pow(16.0, 8.0 / 6.0), 1e-6,
               "alpha within the context: base 10000 * 16^(8/6)");
    pe_rope_frequencies(&alpha, 4096, inv, &att);
    CHECK_NEAR(pow(inv[1], -4.0), 43267.487109, 1e-5, "alpha past the context: the dynamic base");
    alpha.scaling.alpha = -1;
    CHECK(pe_rope_frequencies(&alpha, 1, inv, &att) == PE_EINVAL, "alpha -1: PE_EINVAL");

    pe_rope lin = cfg(10000, PE_ROPE_SCALING_LINEAR, 4);
    static const double want_lin[4] = {0.25, 0.025, 0.0025, 0.00025};
    pe_rope_frequencies(&lin, 1, inv, &att);
    CHECK_CLOSE_D(inv, want_lin, 4, 1e-15, "linear factor 4, 11.3");
}

static void longrope(void)
{
    static const double short_f[4] = {1, 1.5, 2, 4};
    static const double long_f[4] = {2, 2, 2, 2};
    pe_rope r = cfg(10000, PE_ROPE_SCALING_LONGROPE, 131072.0 / 4096.0);
    double inv[4], att;
    r.scaling.original_max_position_embeddings = 4096;
    r.scaling.short_factor = short_f;
    r.scaling.long_factor = long_f;

    static const double want_short[4] = {1, 0.066667, 0.005, 0.00025};
    CHECK(pe_rope_frequencies(&r, 4096, inv, &att) == PE_OK, "longrope PE_OK");
    CHECK_CLOSE_D(inv, want_short, 4, 1e-6, "longrope short factors, 11.3");
    CHECK_NEAR(att, 1.190238, 1e-6, "longrope attention factor, 11.3");
    CHECK_NEAR(att, sqrt(1 + log(32.0) / log(4096.0)), 1e-15, "longrope attention factor formula");

    static const double want_long[4] = {0.5, 0.05, 0.005, 0.0005};
    pe_rope_frequencies(&r, 4097, inv, &att);
    CHECK_CLOSE_D(inv, want_long, 4, 1e-15, "longrope seq > orig: long factors");

    r.scaling.has_factor = false;
    pe_rope_frequencies(&r, 1, inv, &att);
    CHECK(att == 1.0, "longrope without factor: attention factor 1");
    r.scaling.has_attention_factor = true;
    r.scaling.attention_factor = 1.25;
    pe_rope_frequencies(&r, 1, inv, &att);
    CHECK(att == 1.25, "longrope explicit attention_factor wins");
}

static void invalid(void)
{
    double inv[4], att;
    pe_rope dyn = cfg(10000, PE_ROPE_SCALING_DYNAMIC, 2);
    dyn.scaling.original_max_position_embeddings = 2048;
    dyn.rotary_dim = 2;
    CHECK(pe_rope_frequencies(&dyn, 4096, inv, &att) == PE_EINVAL,
          "dynamic with rotary_dim 2: PE_EINVAL");
    pe_rope lin = cfg(10000, PE_ROPE_SCALING_LINEAR, 0);
    CHECK(pe_rope_frequencies(&lin, 1, inv, &att) == PE_EINVAL, "linear factor 0: PE_EINVAL");
    pe_rope yarn = cfg(10000, PE_ROPE_SCALING_YARN, -1);
    yarn.scaling.original_max_position_embeddings = 2048;
    CHECK(pe_rope_frequencies(&yarn, 1, inv, &att) == PE_EINVAL, "yarn factor -1: PE_EINVAL");
    pe_rope odd = cfg(10000, PE_ROPE_SCALING_NONE, 0);
    odd.rotary_dim = 7;
    CHECK(pe_rope_frequencies(&odd, 1, inv, &att) == PE_EINVAL, "odd rotary_dim: PE_EINVAL");
    pe_rope lr = cfg(10000, PE_ROPE_SCALING_LONGROPE, 1);
    static const double sf[4] = {1, 1, 1, 1};
    lr.scaling.original_max_position_embeddings = 16;
    lr.scaling.short_factor = sf;
    CHECK(pe_rope_frequencies(&lr, 17, inv, &att) == PE_EINVAL,
          "longrope past orig without long factors: PE_EINVAL");
    CHECK(pe_rope_frequencies(&lr, 16, inv, &att) == PE_OK,
          "longrope within orig uses the short factors");
}

/* proportional: 1/theta^(2i/8) for i < floor(p * 8 / 2), then 0; a linear
 * factor divides them; only over the whole head and with none or linear. */
static void proportional(void)
{
    static const struct {
        double p;
        double inv[4];
    } cases[] = {
        {0.25, {1, 0, 0, 0}},
        {0.5, {1, 0.1, 0, 0}},
        {0.7, {1, 0.1, 0, 0}}, /* 2.8 pairs: 2 */
        {1.0, {1, 0.1, 0.01, 0.001}},
    };
    double inv[4], att;
    for (size_t c = 0; c < ARRAY_LEN(cases); c++) {
        pe_rope r = cfg(10000, PE_ROPE_SCALING_NONE, 0);
        r.proportional = true;
        r.proportion = cases[c].p;
        CHECK(pe_rope_frequencies(&r, 1, inv, &att) == PE_OK && att == 1.0,
              "proportional PE_OK, attention factor 1");
        CHECK_CLOSE_D(inv, cases[c].inv, 4, 1e-15, "proportional inv_freq");
    }
    pe_rope lin = cfg(10000, PE_ROPE_SCALING_LINEAR, 4);
    lin.proportional = true;
    lin.proportion = 0.5;
    static const double quarter[4] = {0.25, 0.025, 0, 0};
    CHECK(pe_rope_frequencies(&lin, 1, inv, &att) == PE_OK, "proportional linear PE_OK");
    CHECK_CLOSE_D(inv, quarter, 4, 1e-15, "proportional divided by the linear factor");
    pe_rope narrow = cfg(10000, PE_ROPE_SCALING_NONE, 0);
    narrow.proportional = true;
    narrow.proportion = 0.5;
    narrow.rotary_dim = 4;
    CHECK(pe_rope_frequencies(&narrow, 1, inv, &att) == PE_EINVAL,
          "proportional over part of the head: PE_EINVAL");
    pe_rope yarn = cfg(10000, PE_ROPE_SCALING_YARN, 2);
    yarn.scaling.original_max_position_embeddings = 2048;
    yarn.proportional = true;
    yarn.proportion = 0.5;
    CHECK(pe_rope_frequencies(&yarn, 1, inv, &att) == PE_EINVAL, "proportional yarn: PE_EINVAL");
    narrow.rotary_dim = 8;
    narrow.proportion = 0;
    CHECK(pe_rope_frequencies(&narrow, 1, inv, &att) == PE_EINVAL, "proportion 0: PE_EINVAL");
}

void test_rope_freq(void)
{
    proportional();
    llama3();
    yarn();
    dynamic_linear();
    longrope();
    invalid();
}
