/*
 * test_diagnose_bias.c - pe_diagnose on ALiBi and T5 subjects. Biases come
 * from the references below (ALiBi paper / BLOOM build_alibi_tensor, HF T5
 * _relative_position_bucket, written here in double from the formulas), not
 * from posenc's kernels; best is checked against pe_alibi_bias / pe_t5_bias.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_list.h"
#include "diagnose/pe_diagnose.h"

static const pe_dx_tolerance tol = {1e-4, 1e-4};

/* The paper's slopes: the geometric sequence 2^(-8/n) for n a power of
 * two; otherwise the closest power of two's plus every other one of twice
 * that (written from the paper's recipe, not from lib/alibi.c). */
static void ref_slopes(size_t heads, double *out)
{
    size_t p2 = 1;
    while (2 * p2 <= heads)
        p2 *= 2;
    double start = pow(2.0, -8.0 / (double)p2);
    for (size_t h = 0; h < p2; h++)
        out[h] = pow(start, (double)(h + 1));
    double start2 = pow(2.0, -8.0 / (double)(2 * p2));
    for (size_t h = p2, k = 0; h < heads; h++, k += 2)
        out[h] = pow(start2, (double)(k + 1));
}

static void ref_alibi(const double *slopes, size_t heads, int bloom, double sign,
                      const int64_t *pos, size_t t, float *out)
{
    for (size_t h = 0; h < heads; h++)
        for (size_t i = 0; i < t; i++)
            for (size_t j = 0; j < t; j++) {
                double v = bloom ? slopes[h] * (double)pos[j]
                                 : -slopes[h] * fabs((double)(pos[i] - pos[j]));
                out[(h * t + i) * t + j] = (float)(sign * v);
            }
}

static bool has_code(const pe_dx_result *r, pe_dx_code c)
{
    for (size_t k = 0; k < r->n_findings; k++)
        if (r->findings[k].code == c)
            return true;
    return false;
}

static void show(const char *what, const pe_dx_result *r)
{
    fprintf(stderr, "  %s: %s:", what, pe_dx_verdict_name(r->verdict));
    for (size_t k = 0; k < r->n_findings; k++)
        fprintf(stderr, " %s (%s)", pe_dx_code_name(r->findings[k].code), r->findings[k].message);
    fprintf(stderr, "\n");
}

static void alibi(void)
{
    enum { H = 12, T = 16 };
    double slopes[H], naive[H];
    int64_t pos[T];
    static float bias[H * T * T], again[H * T * T];
    pe_dx_result r;
    pe_dx_variant c;

    for (size_t t = 0; t < T; t++)
        pos[t] = (int64_t)t;
    ref_slopes(H, slopes);
    pe_dx_variant_init(&c);
    pe_dx_subject s = {.kind = PE_DX_SUBJ_ALIBI_BIAS,
                       .rows = T,
                       .heads = H,
                       .a = bias,
                       .positions = pos};

    ref_alibi(slopes, H, 0, 1.0, pos, T, bias);
    CHECK(pe_diagnose(&s, &c, tol, &r) == PE_OK && r.verdict == PE_DX_MATCH && r.n_findings == 0,
          "paper slopes, symmetric: match");
    pe_dx_result_free(&r);

    /* the power-of-two formula used for 12 heads */
    for (size_t h = 0; h < H; h++)
        naive[h] = pow(2.0, -8.0 * (double)(h + 1) / H);
    ref_alibi(naive, H, 0, 1.0, pos, T, bias);
    bool ok = pe_diagnose(&s, &c, tol, &r) == PE_OK && r.verdict == PE_DX_EXPLAINED &&
              r.n_findings == 1 && has_code(&r, PE_DX_ALIBI_SLOPES);
    CHECK(ok, "2^(-8(h+1)/12) slopes: alibi_slopes");
    if (!ok)
        show("naive slopes", &r);
    if (ok) {
        size_t differ = 0;
        for (size_t h = 0; h < H; h++) {
            differ += r.slopes_differ[h];
            CHECK(fabs(r.best.slopes[h] - naive[h]) <= 1e-12, "evidence: slope of head %zu", h);
        }
        for (size_t h = 0; h < H; h++)
            CHECK(r.slopes_differ[h] == (fabs(naive[h] - slopes[h]) > 1e-9),
                  "evidence: head %zu differs or not", h);
        CHECK(differ >= 8, "evidence: most heads differ (%zu)", differ);
    }
    pe_dx_result_free(&r);

    /* bloom form where symmetric was claimed; and a flipped sign */
    ref_alibi(slopes, H, 1, 1.0, pos, T, bias);
    ok = pe_diagnose(&s, &c, tol, &r) == PE_OK && r.verdict == PE_DX_EXPLAINED &&
         r.n_findings == 1 && has_code(&r, PE_DX_ALIBI_FORM) &&
         r.best.alibi_form == PE_ALIBI_BLOOM && r.best.alibi_sign == 1.0;
    CHECK(ok, "bloom bias: alibi_form bloom, sign 1");
    if (ok) { /* best through posenc's kernel */
        pe_alibi_bias(H, PE_ALIBI_BLOOM, NULL, pos, T, again);
        double d = 0;
        for (size_t e = 0; e < (size_t)H * T * T; e++)
            d = fmax(d, fabs((double)again[e] - bias[e]));
        CHECK(d <= 1e-6, "pe_alibi_bias with best reproduces (%.3g)", d);
    }
    pe_dx_result_free(&r);

    ref_alibi(slopes, H, 0, -1.0, pos, T, bias);
    ok = pe_diagnose(&s, &c, tol, &r) == PE_OK && r.verdict == PE_DX_EXPLAINED &&
         r.n_findings == 1 && has_code(&r, PE_DX_ALIBI_FORM) && r.best.alibi_sign == -1.0 &&
         r.best.alibi_form == PE_ALIBI_SYMMETRIC;
    CHECK(ok, "flipped sign: alibi_form, sign -1");
    pe_dx_result_free(&r);

    /* a pair: naive slopes in the bloom form */
    ref_alibi(naive, H, 1, 1.0, pos, T, bias);
    ok = pe_diagnose(&s, &c, tol, &r) == PE_OK && r.verdict == PE_DX_EXPLAINED &&
         r.n_findings == 2 && has_code(&r, PE_DX_ALIBI_FORM) && has_code(&r, PE_DX_ALIBI_SLOPES);
    CHECK(ok, "naive slopes, bloom form: both found");
    pe_dx_result_free(&r);

    /* slopes alone */
    float sl[H];
    for (size_t h = 0; h < H; h++)
        sl[h] = (float)naive[h];
    pe_dx_subject ss = {.kind = PE_DX_SUBJ_ALIBI_SLOPES,
                        .rows = 1,
                        .heads = H,
                        .a = sl,
                        .positions = pos};
    ok = pe_diagnose(&ss, &c, tol, &r) == PE_OK && r.verdict == PE_DX_EXPLAINED &&
         r.n_findings == 1 && has_code(&r, PE_DX_ALIBI_SLOPES);
    CHECK(ok, "slopes subject: alibi_slopes");
    pe_dx_result_free(&r);
    for (size_t h = 0; h < H; h++)
        sl[h] = (float)slopes[h];
    CHECK(pe_diagnose(&ss, &c, tol, &r) == PE_OK && r.verdict == PE_DX_MATCH,
          "paper slopes subject: match");
    pe_dx_result_free(&r);
}

/* HF _relative_position_bucket, written from its description: half the
 * buckets per direction when bidirectional (positive rel in the upper
 * half), exact below max_exact = nb/2, logarithmic up to max_distance. */
static size_t ref_bucket(int64_t rel, int bidir, size_t nb, int64_t maxd)
{
    size_t ret = 0;
    int64_t n;
    if (bidir) {
        nb /= 2;
        if (rel > 0)
            ret += nb;
        n = rel < 0 ? -rel : rel;
    } else {
        n = rel < 0 ? -rel : 0;
    }
    size_t exact = nb / 2;
    if ((size_t)n < exact)
        return ret + (size_t)n;
    float large = (float)exact + logf((float)n / (float)exact) /
                                     (float)log((double)maxd / (double)exact) * (float)(nb - exact);
    size_t v = (size_t)large;
    return ret + (v < nb - 1 ? v : nb - 1);
}

static void t5(void)
{
    enum { H = 4, T = 40, NB = 32 };
    static float table[NB * H], bias[H * T * T];
    int64_t pos[T];
    uint64_t seed = 5;
    for (size_t e = 0; e < NB * H; e++)
        table[e] = (float)test_uniform(&seed, -2.0, 2.0);
    for (size_t t = 0; t < T; t++)
        pos[t] = (int64_t)t;
    pe_dx_variant c;
    pe_dx_variant_init(&c);
    c.t5 = (pe_t5){table, NB, H, 128, true};
    pe_dx_subject s = {.kind = PE_DX_SUBJ_T5_BIAS,
                       .rows = T,
                       .heads = H,
                       .a = bias,
                       .positions = pos};
    static const struct {
        int reversed, bidir;
        size_t nb;
        int64_t maxd;
        pe_dx_code code;
        const char *what;
    } cases[] = {
        {0, 1, 32, 128, PE_DX_CODE_COUNT, "exact"},
        {1, 1, 32, 128, PE_DX_T5_DIRECTION, "query - key"},
        {0, 1, 16, 128, PE_DX_T5_BUCKETS, "16 buckets"},
        {0, 1, 32, 16, PE_DX_T5_BUCKETS, "max_distance 16"},
        {0, 0, 32, 128, PE_DX_T5_BUCKETS, "unidirectional"},
    };
    for (size_t k = 0; k < ARRAY_LEN(cases); k++) {
        for (size_t i = 0; i < T; i++)
            for (size_t j = 0; j < T; j++) {
                int64_t rel = cases[k].reversed ? pos[i] - pos[j] : pos[j] - pos[i];
                size_t b = ref_bucket(rel, cases[k].bidir, cases[k].nb, cases[k].maxd);
                for (size_t h = 0; h < H; h++)
                    bias[(h * T + i) * T + j] = table[b * H + h];
            }
        pe_dx_result r;
        bool ok = pe_diagnose(&s, &c, tol, &r) == PE_OK;
        if (cases[k].code == PE_DX_CODE_COUNT)
            ok = ok && r.verdict == PE_DX_MATCH && r.n_findings == 0;
        else
            ok = ok && r.verdict == PE_DX_EXPLAINED && r.n_findings == 1 &&
                 has_code(&r, cases[k].code) && r.best.t5.num_buckets == cases[k].nb &&
                 r.best.t5.bidirectional == (bool)cases[k].bidir &&
                 r.best.t5_reversed == (bool)cases[k].reversed;
        CHECK(ok, "t5 %s", cases[k].what);
        if (!ok)
            show(cases[k].what, &r);
        if (ok && cases[k].code != PE_DX_CODE_COUNT && !cases[k].reversed) {
            static float again[H * T * T];
            pe_t5_bias(&r.best.t5, pos, T, again);
            CHECK(memcmp(again, bias, sizeof again) == 0, "pe_t5_bias with best reproduces %s",
                  cases[k].what);
        }
        pe_dx_result_free(&r);
    }
}

void test_diagnose_bias(void)
{
    alibi();
    t5();
}
