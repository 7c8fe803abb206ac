/*
 * refs.c - independent reference formulas (see refs.h).
 */
#include "refs.h"

#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* ---------------------------------------------------------------------- */
/* Sinusoidal                                                              */
/* ---------------------------------------------------------------------- */

void ref_sinusoidal_row(long double base, bool split, int64_t pos, size_t d, double *row)
{
    size_t nfreq = (d + 1) / 2; /* an odd d adds one sine-only frequency */
    size_t nsin = (d + 1) / 2;
    long double lb = logl(base);
    for (size_t k = 0; k < nfreq; k++) {
        long double w = expl(-(long double)(2 * k) / (long double)d * lb);
        long double complex e = cexpl(I * ((long double)pos * w));
        double s = (double)cimagl(e), c = (double)creall(e);
        if (split) {
            row[k] = s;
            if (nsin + k < d)
                row[nsin + k] = c;
        } else {
            row[2 * k] = s;
            if (2 * k + 1 < d)
                row[2 * k + 1] = c;
        }
    }
}

void ref_absolute_sinusoidal(const float *x, double scale, long double base, bool split,
                             const int64_t *pos, size_t n, size_t d, double *out)
{
    double *row = xmalloc(d * sizeof *row);
    for (size_t t = 0; t < n; t++) {
        ref_sinusoidal_row(base, split, pos[t], d, row);
        for (size_t j = 0; j < d; j++) {
            long double v = (long double)row[j];
            if (x)
                v += (long double)scale * (long double)x[t * d + j];
            out[t * d + j] = (double)v;
        }
    }
    free(row);
}

/* ---------------------------------------------------------------------- */
/* RoPE                                                                    */
/* ---------------------------------------------------------------------- */

static long double mscale_of(long double s, long double m)
{
    return s <= 1 ? 1.0L : 0.1L * m * logl(s) + 1.0L;
}

void ref_rope_freqs(const ref_rope_cfg *c, long double seq_len, long double *inv,
                    long double *attention_factor)
{
    size_t r = c->rotary_dim, half = r / 2;
    long double base = c->base;
    *attention_factor = 1.0L;
    if (c->scaling == REF_SCALING_DYNAMIC) {
        long double len = seq_len > c->orig ? seq_len : c->orig;
        base = base * powl(c->factor * len / c->orig - (c->factor - 1),
                           (long double)r / (long double)(r - 2));
    }
    for (size_t i = 0; i < half; i++)
        inv[i] = expl(-(long double)(2 * i) * logl(base) / (long double)r);
    switch (c->scaling) {
    case REF_SCALING_NONE:
    case REF_SCALING_DYNAMIC:
        break;
    case REF_SCALING_LINEAR:
        for (size_t i = 0; i < half; i++)
            inv[i] /= c->factor;
        break;
    case REF_SCALING_YARN: {
        const long double two_pi = 6.283185307179586476925286766559L;
        long double lo = (long double)r * logl(c->orig / (two_pi * c->beta_fast)) /
                         (2 * logl(c->base));
        long double hi = (long double)r * logl(c->orig / (two_pi * c->beta_slow)) /
                         (2 * logl(c->base));
        if (!c->unrounded) {
            lo = floorl(lo);
            hi = ceill(hi);
        }
        if (lo < 0)
            lo = 0;
        if (hi > (long double)(r - 1))
            hi = (long double)(r - 1);
        if (lo == hi)
            hi += 0.001L;
        for (size_t i = 0; i < half; i++) {
            long double ramp = ((long double)i - lo) / (hi - lo);
            ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
            long double keep = 1 - ramp; /* extrapolation weight */
            inv[i] = inv[i] * keep + inv[i] / c->factor * (1 - keep);
        }
        *attention_factor = mscale_of(c->factor, 1);
        break;
    }
    case REF_SCALING_LLAMA3: {
        const long double two_pi = 6.283185307179586476925286766559L;
        long double short_wl = c->orig / c->high_freq; /* keep below */
        long double long_wl = c->orig / c->low_freq;   /* divide above */
        for (size_t i = 0; i < half; i++) {
            long double wl = two_pi / inv[i];
            if (wl < short_wl)
                continue;
            if (wl > long_wl) {
                inv[i] /= c->factor;
                continue;
            }
            long double sm = (c->orig / wl - c->low_freq) / (c->high_freq - c->low_freq);
            inv[i] = sm * inv[i] + (1 - sm) * inv[i] / c->factor;
        }
        break;
    }
    case REF_SCALING_LONGROPE: {
        const long double *ext = seq_len > c->orig ? c->long_f : c->short_f;
        for (size_t i = 0; i < half; i++)
            inv[i] /= ext[i];
        long double f = c->factor > 0 ? c->factor : 1;
        *attention_factor = f <= 1 ? 1.0L : sqrtl(1 + logl(f) / logl(c->orig));
        break;
    }
    }
}

void ref_rope(const ref_rope_cfg *c, const double *x, const int64_t *pos, size_t n, size_t width,
              double *out)
{
    size_t hd = c->head_dim, r = c->rotary_dim, half = r / 2;
    long double seq_len = 0;
    for (size_t t = 0; t < n; t++)
        if ((long double)pos[t] + 1 > seq_len)
            seq_len = (long double)pos[t] + 1;
    long double *inv = xmalloc(half * sizeof *inv);
    long double af;
    ref_rope_freqs(c, seq_len, inv, &af);
    for (size_t t = 0; t < n; t++) {
        for (size_t h0 = 0; h0 < width; h0 += hd) {
            const double *xh = x ? x + t * width + h0 : NULL;
            double *oh = out + t * width + h0;
            for (size_t i = 0; i < half; i++) {
                size_t a = c->interleaved ? 2 * i : i;
                size_t b = c->interleaved ? 2 * i + 1 : i + half;
                long double complex z = xh ? (long double)xh[a] + I * (long double)xh[b] : 1.0L;
                long double complex rot = af * cexpl(I * ((long double)pos[t] * inv[i]));
                long double complex y = z * rot;
                oh[a] = (double)creall(y);
                oh[b] = (double)cimagl(y);
            }
            for (size_t j = r; j < hd; j++)
                oh[j] = xh ? (double)xh[j] : 1.0;
        }
    }
    free(inv);
}

/* ---------------------------------------------------------------------- */
/* ALiBi and T5                                                            */
/* ---------------------------------------------------------------------- */

void ref_alibi_slopes(size_t heads, long double *slopes)
{
    size_t c = 1;
    while (c * 2 <= heads)
        c *= 2;
    long double m0 = exp2l(-8.0L / (long double)c);
    long double m1 = exp2l(-4.0L / (long double)c);
    for (size_t h = 0; h < heads; h++)
        slopes[h] = h < c ? powl(m0, (long double)(h + 1))
                          : powl(m1, (long double)(2 * (h - c) + 1));
}

void ref_alibi_bias(size_t heads, bool bloom, const int64_t *pos, size_t t, double *bias)
{
    long double *sl = xmalloc(heads * sizeof *sl);
    ref_alibi_slopes(heads, sl);
    for (size_t h = 0; h < heads; h++)
        for (size_t i = 0; i < t; i++)
            for (size_t j = 0; j < t; j++) {
                long double dist = (long double)llabs((long long)(pos[i] - pos[j]));
                bias[(h * t + i) * t + j] = bloom ? (double)(sl[h] * (long double)pos[j])
                                                  : (double)(-sl[h] * dist);
            }
    free(sl);
}

int ref_t5_bucket(int64_t rel, bool bidirectional, int num_buckets, int max_distance)
{
    int offset = 0;
    int64_t n;
    int nb = num_buckets;
    if (bidirectional) {
        nb /= 2;
        if (rel > 0)
            offset = nb;
        n = rel < 0 ? -rel : rel;
    } else {
        n = rel < 0 ? -rel : 0; /* future keys share bucket 0 */
    }
    int exact = nb / 2;
    if (n < exact)
        return offset + (int)n;
    /* torch: log(float(n) / exact) / float(log(max_distance / exact)) * (nb - exact) */
    float ratio = (float)n / (float)exact;
    float lg = logf(ratio) / (float)log((double)max_distance / (double)exact);
    float scaled = lg * (float)(nb - exact);
    long long b = exact + (long long)scaled;
    if (b > nb - 1)
        b = nb - 1;
    return offset + (int)b;
}

void ref_t5_bias(const float *table, int num_buckets, size_t heads, int max_distance,
                 bool bidirectional, const int64_t *pos, size_t t, float *bias)
{
    for (size_t i = 0; i < t; i++)
        for (size_t j = 0; j < t; j++) {
            int b = ref_t5_bucket(pos[j] - pos[i], bidirectional, num_buckets, max_distance);
            for (size_t h = 0; h < heads; h++)
                bias[(h * t + i) * t + j] = table[(size_t)b * heads + h];
        }
}

/* ---------------------------------------------------------------------- */
/* Default weights, norms, projections, scores                              */
/* ---------------------------------------------------------------------- */

/* SplitMix64 (Steele, Lea, Flood 2014), written from the published
 * constants: the state advances by the golden gamma, the output is a
 * murmur-style finaliser of it. */
static uint64_t splitmix_next(uint64_t *state)
{
    *state += UINT64_C(0x9E3779B97F4A7C15);
    uint64_t z = *state;
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

void ref_default_weights(uint64_t seed, size_t d, float *wq, float *wk, float *wv)
{
    uint64_t st = seed;
    double limit = sqrt(6.0 / (double)(d + d));
    float *dst[3] = {wq, wk, wv};
    for (int m = 0; m < 3; m++)
        for (size_t i = 0; i < d * d; i++) {
            uint64_t r = splitmix_next(&st);
            double u01 = ldexp((double)(r >> 11), -53); /* [0, 1) */
            dst[m][i] = (float)(limit * (2.0 * u01 - 1.0));
        }
}

void ref_norm_row(int kind, long double eps, const float *w, const float *b, const long double *in,
                  size_t d, long double *out)
{
    if (kind == 0) {
        memmove(out, in, d * sizeof *out);
        return;
    }
    long double mean = 0, ms = 0;
    for (size_t j = 0; j < d; j++)
        mean += in[j];
    mean /= (long double)d;
    if (kind == 1) {
        long double var = 0;
        for (size_t j = 0; j < d; j++)
            var += (in[j] - mean) * (in[j] - mean);
        var /= (long double)d;
        long double inv = 1.0L / sqrtl(var + eps);
        for (size_t j = 0; j < d; j++)
            out[j] = (in[j] - mean) * inv * (long double)w[j] + (b ? (long double)b[j] : 0);
    } else {
        for (size_t j = 0; j < d; j++)
            ms += in[j] * in[j];
        ms /= (long double)d;
        long double inv = 1.0L / sqrtl(ms + eps);
        for (size_t j = 0; j < d; j++)
            out[j] = in[j] * inv * (long double)w[j];
    }
}

void ref_project(const float *z, size_t n, size_t d, const float *w, size_t cols, const float *b,
                 double *y)
{
    for (size_t t = 0; t < n; t++)
        for (size_t c = 0; c < cols; c++) {
            double acc = b ? (double)b[c] : 0.0;
            for (size_t i = 0; i < d; i++)
                acc += (double)z[t * d + i] * (double)w[i * cols + c];
            y[t * cols + c] = acc;
        }
}

void ref_scores(const double *q, const double *k, size_t t, size_t heads, size_t kv_heads,
                size_t hd, double scale, const double *bias, double *scores)
{
    size_t group = heads / kv_heads;
    for (size_t h = 0; h < heads; h++) {
        size_t g = h / group;
        for (size_t i = 0; i < t; i++)
            for (size_t j = 0; j < t; j++) {
                double dot = 0;
                for (size_t e = 0; e < hd; e++)
                    dot += q[i * heads * hd + h * hd + e] * k[j * kv_heads * hd + g * hd + e];
                size_t o = (h * t + i) * t + j;
                scores[o] = scale * dot + (bias ? bias[o] : 0.0);
            }
    }
}

void ref_widen(const float *in, size_t n, double *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (double)in[i];
}

void ref_round_f32(const double *in, size_t n, float *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (float)in[i];
}

/* ---------------------------------------------------------------------- */
/* Self-test against known vectors (numpy float64, 6 decimals)             */
/* ---------------------------------------------------------------------- */

static bool near6(const double *got, const double *want, size_t n, double tol)
{
    for (size_t i = 0; i < n; i++)
        if (fabs(got[i] - want[i]) > tol)
            return false;
    return true;
}

void refs_selftest(void)
{
    const char *L = "refs selftest";
    double row[8];
    static const double s_d4p1[] = {0.841471, 0.540302, 0.010000, 0.999950};
    ref_sinusoidal_row(10000, false, 1, 4, row);
    CHECK(near6(row, s_d4p1, 4, 6e-7), L, "sinusoidal d=4 pos=1 vs the known vector");
    static const double s_d8p5[] = {-0.958924, 0.283662, 0.479426, 0.877583,
                                    0.049979,  0.998750, 0.005000, 0.999988};
    ref_sinusoidal_row(10000, false, 5, 8, row);
    CHECK(near6(row, s_d8p5, 8, 6e-7), L, "sinusoidal d=8 pos=5 vs the known vector");
    static const double m_d8p5[] = {-0.958924, 0.479426, 0.049979, 0.005000,
                                    0.283662,  0.877583, 0.998750, 0.999988};
    ref_sinusoidal_row(10000, true, 5, 8, row);
    CHECK(near6(row, m_d8p5, 8, 6e-7), L, "split d=8 pos=5 vs the known Marian vector");

    /* RoPE, base 10000, position 3, x = 1..d */
    double x8[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int64_t p3 = 3;
    ref_rope_cfg c = {.base = 10000, .head_dim = 4, .rotary_dim = 4};
    static const double h4[] = {-1.413353, 1.879118, -2.828857, 4.058191};
    static const double i4[] = {-1.272233, -1.838865, 2.878668, 4.088187};
    ref_rope(&c, x8, &p3, 1, 4, row);
    CHECK(near6(row, h4, 4, 6e-7), L, "rope half d=4 vs the known vector");
    c.interleaved = true;
    ref_rope(&c, x8, &p3, 1, 4, row);
    CHECK(near6(row, i4, 4, 6e-7), L, "rope interleaved d=4 vs the known vector");
    static const double h8[] = {-1.695593, 0.137552, 2.788682, 3.975982,
                                -4.808842, 6.323059, 7.086837, 8.011964};
    static const double i8[] = {-1.272233, -1.838865, 1.683929, 4.707907,
                                4.817777,  6.147278,  6.975969, 8.020964};
    c = (ref_rope_cfg){.base = 10000, .head_dim = 8, .rotary_dim = 8};
    ref_rope(&c, x8, &p3, 1, 8, row);
    CHECK(near6(row, h8, 8, 6e-7), L, "rope half d=8 vs the known vector");
    c.interleaved = true;
    ref_rope(&c, x8, &p3, 1, 8, row);
    CHECK(near6(row, i8, 8, 6e-7), L, "rope interleaved d=8 vs the known vector");
    static const double cache[] = {-0.989992, 0.955336, 0.999550, 0.999996,
                                   0.141120,  0.295520, 0.029996, 0.003000};
    c.interleaved = false;
    ref_rope(&c, NULL, &p3, 1, 8, row);
    CHECK(near6(row, cache, 8, 6e-7), L, "rope bare table vs the known vLLM cos_sin_cache");
    static const double part[] = {-1.413353, 1.879118, -2.828857, 4.058191, 5, 6, 7, 8};
    c.rotary_dim = 4;
    ref_rope(&c, x8, &p3, 1, 8, row);
    CHECK(near6(row, part, 8, 6e-7), L, "rope partial rotary vs the known vector");

    /* Scaled frequencies, known vectors (head_dim 8). */
    long double inv[4], af;
    double invd[4];
    c = (ref_rope_cfg){.base = 10000,
                       .head_dim = 8,
                       .rotary_dim = 8,
                       .scaling = REF_SCALING_LLAMA3,
                       .factor = 8,
                       .orig = 1024,
                       .low_freq = 1,
                       .high_freq = 4};
    ref_rope_freqs(&c, 1, inv, &af);
    for (int i = 0; i < 4; i++)
        invd[i] = (double)inv[i];
    static const double l3[] = {1.000000, 0.100000, 0.003087, 0.000125};
    CHECK(near6(invd, l3, 4, 6e-7), L, "llama3 inv_freq vs the known vector");
    c = (ref_rope_cfg){.base = 500000,
                       .head_dim = 8,
                       .rotary_dim = 8,
                       .scaling = REF_SCALING_LLAMA3,
                       .factor = 8,
                       .orig = 8192,
                       .low_freq = 1,
                       .high_freq = 4};
    ref_rope_freqs(&c, 1, inv, &af);
    for (int i = 0; i < 4; i++)
        invd[i] = (double)inv[i];
    static const double l3b[] = {1.000000, 0.037606, 0.000525, 0.000007};
    CHECK(near6(invd, l3b, 4, 6e-7), L, "llama3 (theta 5e5) inv_freq vs the known vector");
    c = (ref_rope_cfg){.base = 10000,
                       .head_dim = 8,
                       .rotary_dim = 8,
                       .scaling = REF_SCALING_YARN,
                       .factor = 4,
                       .orig = 2048,
                       .beta_fast = 32,
                       .beta_slow = 1};
    ref_rope_freqs(&c, 1, inv, &af);
    for (int i = 0; i < 4; i++)
        invd[i] = (double)inv[i];
    static const double yn[] = {1.000000, 0.100000, 0.006250, 0.000250};
    CHECK(near6(invd, yn, 4, 6e-7) && fabsl(af - 1.138629L) < 6e-7L, L,
          "yarn inv_freq/attention factor vs the known vector");
    c = (ref_rope_cfg){.base = 10000,
                       .head_dim = 8,
                       .rotary_dim = 8,
                       .scaling = REF_SCALING_DYNAMIC,
                       .factor = 2,
                       .orig = 2048};
    ref_rope_freqs(&c, 4096, inv, &af);
    for (int i = 0; i < 4; i++)
        invd[i] = (double)inv[i];
    static const double dy[] = {1.000000, 0.069336, 0.004807, 0.000333};
    CHECK(near6(invd, dy, 4, 6e-7), L, "dynamic inv_freq (seq 4096) vs the known vector");
    ref_rope_freqs(&c, 1000, inv, &af);
    CHECK(fabsl(inv[1] - 0.1L) < 1e-15L, L, "dynamic below original length keeps base");
    c.scaling = REF_SCALING_LINEAR;
    c.factor = 4;
    ref_rope_freqs(&c, 1, inv, &af);
    for (int i = 0; i < 4; i++)
        invd[i] = (double)inv[i];
    static const double li[] = {0.25, 0.025, 0.0025, 0.00025};
    CHECK(near6(invd, li, 4, 1e-9), L, "linear inv_freq vs the known vector");
    static const long double ext[] = {1, 1.5L, 2, 4};
    c = (ref_rope_cfg){.base = 10000,
                       .head_dim = 8,
                       .rotary_dim = 8,
                       .scaling = REF_SCALING_LONGROPE,
                       .factor = 32,
                       .orig = 4096,
                       .short_f = ext,
                       .long_f = ext};
    ref_rope_freqs(&c, 1, inv, &af);
    for (int i = 0; i < 4; i++)
        invd[i] = (double)inv[i];
    static const double lr[] = {1.000000, 0.066667, 0.005000, 0.000250};
    CHECK(near6(invd, lr, 4, 6e-7) && fabsl(af - 1.190238L) < 6e-7L, L,
          "longrope inv_freq/attention factor vs the known vector");

    /* ALiBi, known vectors */
    long double sl[12];
    ref_alibi_slopes(8, sl);
    bool ok = true;
    for (int h = 0; h < 8; h++)
        ok = ok && sl[h] == ldexpl(1.0L, -(h + 1));
    CHECK(ok, L, "alibi 8-head slopes vs the known vector");
    ref_alibi_slopes(6, sl);
    static const double s6[] = {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125};
    ok = true;
    for (int h = 0; h < 6; h++)
        ok = ok && fabsl(sl[h] - s6[h]) < 1e-15L;
    CHECK(ok, L, "alibi 6-head slopes vs the known vector");
    ref_alibi_slopes(12, sl);
    static const double s12[] = {0.707107, 0.353553, 0.176777, 0.088388};
    ok = sl[7] == 1.0L / 256;
    for (int h = 0; h < 4; h++)
        ok = ok && fabsl(sl[8 + h] - s12[h]) < 6e-7L;
    CHECK(ok, L, "alibi 12-head slopes vs the known vector");

    /* T5, known vectors */
    static const int rels[] = {-200, -128, -127, -91, -90, -64, -63, -32, -31, -16, -15,
                               -12,  -11,  -8,   -7,  -1,  0,   1,   7,   8,   11,  12,
                               16,   32,   63,   64,  90,  91,  127, 128, 200};
    static const int bi[] = {15, 15, 15, 15, 14, 14, 13, 12, 11, 10, 9,  9,  8,  8,  7, 1,
                             0,  17, 23, 24, 24, 25, 26, 28, 29, 30, 30, 31, 31, 31, 31};
    static const int de[] = {31, 31, 31, 29, 29, 26, 26, 21, 21, 16, 15, 12, 11, 8, 7, 1,
                             0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0, 0};
    int bad = -1;
    for (size_t i = 0; i < sizeof rels / sizeof rels[0]; i++)
        if (ref_t5_bucket(rels[i], true, 32, 128) != bi[i] ||
            ref_t5_bucket(rels[i], false, 32, 128) != de[i])
            bad = rels[i];
    CHECK(bad == -1, L, "t5 buckets vs the known vectors (first bad rel %d)", bad);

    /* SplitMix64 of seed 0, first output: the published value. */
    uint64_t st = 0;
    CHECK(splitmix_next(&st) == UINT64_C(0xE220A8397B1DCDAF), L, "splitmix64(0) first output");
}
