/*
 * test_diagnose_abs.c - pe_diagnose on sinusoidal subjects (tables and
 * embeddings + encoded). Subjects come from the reference below, written
 * from Vaswani et al. / HF Marian's sinusoidal table, not
 * from posenc's kernels; `best` is recomputed with pe_encode_absolute.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_list.h"
#include "diagnose/pe_diagnose.h"

typedef struct ref_sin {
    double base;
    int split, swap, transposed;
    double exp_num, exp_den_delta; /* exponent exp_num*i/(d + delta) */
    int64_t offset;
    double scale; /* embed_scale */
    int f32;      /* float32 angle arithmetic */
} ref_sin;

static ref_sin ref_default(void)
{
    return (ref_sin){10000.0, 0, 0, 0, 2.0, 0.0, 0, 1.0, 0};
}

/* out[n][d] (or [d][n] transposed) = scale*x + PE; x may be NULL. */
static void ref_table(const ref_sin *r, const int64_t *pos, size_t n, size_t d, const float *x,
                      float *out)
{
    size_t half = (d + 1) / 2;
    for (size_t t = 0; t < n; t++)
        for (size_t i = 0; i < half; i++) {
            double w = exp(-r->exp_num * (double)i * log(r->base) / ((double)d + r->exp_den_delta));
            double p = (double)(pos[t] + r->offset), sv, cv;
            if (r->f32) {
                float th = (float)w * (float)p;
                sv = sinf(th);
                cv = cosf(th);
            } else {
                sv = sin(w * p);
                cv = cos(w * p);
            }
            if (r->swap) {
                double tmp = sv;
                sv = cv;
                cv = tmp;
            }
            size_t cols[2] = {r->split ? i : 2 * i, r->split ? half + i : 2 * i + 1};
            double vals[2] = {sv, cv};
            for (int k = 0; k < 2; k++) {
                if (cols[k] >= d)
                    continue;
                size_t e = t * d + cols[k];
                double v = vals[k] + (x ? r->scale * (double)x[e] : 0.0);
                out[r->transposed ? cols[k] * n + t : e] = (float)v;
            }
        }
}

static bool has_code(const pe_dx_result *r, pe_dx_code c)
{
    for (size_t k = 0; k < r->n_findings; k++)
        if (r->findings[k].code == c)
            return true;
    return false;
}

static bool codes_are(const pe_dx_result *r, const pe_dx_code *want)
{
    size_t n = 0;
    for (; want[n] != PE_DX_CODE_COUNT; n++)
        if (!has_code(r, want[n]))
            return false;
    return r->n_findings == n;
}

#define CODES(...) ((const pe_dx_code[]){__VA_ARGS__, PE_DX_CODE_COUNT})
#define NO_CODES ((const pe_dx_code[]){PE_DX_CODE_COUNT})

static const pe_dx_tolerance tol = {1e-4, 1e-4};

/* posenc's pe_encode_absolute on best, the finding's own change applied
 * (swap each sin/cos pair, transpose) where /encode cannot say it. */
static double check_best(const pe_dx_variant *b, const int64_t *pos, size_t n, size_t d,
                         const float *x, const float *subject)
{
    pe_absolute pe = {.kind = PE_ABS_SINUSOIDAL, .base = b->base, .layout = b->sin_layout};
    int64_t *p = malloc(n * sizeof *p);
    float *out = malloc(n * d * sizeof *out);
    for (size_t t = 0; t < n; t++)
        p[t] = pos[t] + b->offset;
    CHECK(pe_encode_absolute(&pe, NULL, b->embed_scale, x, p, n, d, out, NULL) == PE_OK,
          "best encodes");
    double worst = 0;
    size_t half = (d + 1) / 2;
    for (size_t t = 0; t < n; t++)
        for (size_t c = 0; c < d; c++) {
            size_t src = c;
            if (b->sin_cos_swapped) { /* the column's partner */
                if (b->sin_layout == PE_SIN_SPLIT)
                    src = c < half ? c + half : c - half;
                else
                    src = c ^ 1u;
                if (src >= d)
                    continue;
            }
            double pe_part = out[t * d + src] - (x ? b->embed_scale * x[t * d + src] : 0);
            double want = pe_part + (x ? b->embed_scale * x[t * d + c] : 0);
            double got = subject[b->transposed ? c * n + t : t * d + c];
            worst = fmax(worst, fabs(got - want));
        }
    free(p);
    free(out);
    return worst;
}

static bool abs_case(const char *what, const ref_sin *ref, const pe_dx_variant *claim, size_t n,
                     size_t d, int64_t first, bool with_x, pe_dx_verdict want_verdict,
                     const pe_dx_code *want, pe_dx_result *keep)
{
    uint64_t seed = 99;
    float *x = with_x ? malloc(n * d * sizeof *x) : NULL;
    float *y = malloc(n * d * sizeof *y);
    int64_t *pos = malloc(n * sizeof *pos);
    if (x)
        for (size_t e = 0; e < n * d; e++)
            x[e] = (float)test_uniform(&seed, -1.0, 1.0);
    for (size_t t = 0; t < n; t++)
        pos[t] = first + (int64_t)t;
    ref_table(ref, pos, n, d, x, y);
    /* a transposed table is sent as [d][n]: the claim reads it so */
    pe_dx_subject s = {.kind = with_x ? PE_DX_SUBJ_ABS_ENCODED : PE_DX_SUBJ_TABLE,
                       .rows = ref->transposed ? d : n,
                       .cols = ref->transposed ? n : d,
                       .x = x,
                       .a = y,
                       .positions = pos};
    int64_t *pos_t = NULL;
    if (ref->transposed) {
        pos_t = malloc(d * sizeof *pos_t);
        for (size_t t = 0; t < d; t++)
            pos_t[t] = first + (int64_t)t;
        s.positions = pos_t;
    }
    pe_dx_result r;
    bool ok = pe_diagnose(&s, claim, tol, &r) == PE_OK;
    ok = ok && r.verdict == want_verdict && codes_are(&r, want);
    if (ok && want_verdict == PE_DX_EXPLAINED) {
        double dd = check_best(&r.best, pos, n, d, x, y);
        ok = dd <= 2e-4;
        if (!ok)
            fprintf(stderr, "  %s: best through posenc differs by %.3g\n", what, dd);
    }
    if (!ok) {
        fprintf(stderr, "  %s: %s, claimed %.3g, best %.3g:", what, pe_dx_verdict_name(r.verdict),
                r.claimed.max_abs, r.best_errors.max_abs);
        for (size_t k = 0; k < r.n_findings; k++)
            fprintf(stderr, " %s", pe_dx_code_name(r.findings[k].code));
        fprintf(stderr, "\n");
    }
    if (keep)
        *keep = r;
    else
        pe_dx_result_free(&r);
    free(x);
    free(y);
    free(pos);
    free(pos_t);
    return ok;
}

static pe_dx_variant claim_sin(void)
{
    pe_dx_variant v;
    pe_dx_variant_init(&v);
    v.base = 10000.0;
    v.sin_layout = PE_SIN_INTERLEAVED;
    return v;
}

static void tables(void)
{
    pe_dx_result res;
    pe_dx_variant c = claim_sin();
    ref_sin r = ref_default();

    CHECK(abs_case("exact", &r, &c, 64, 64, 0, false, PE_DX_MATCH, NO_CODES, NULL),
          "an exact table matches");
    r.f32 = 1;
    CHECK(abs_case("f32", &r, &c, 64, 64, 0, false, PE_DX_MATCH, NO_CODES, NULL),
          "a float32 table at ordinary positions matches");
    CHECK(abs_case("f32 1e5", &r, &c, 32, 64, 100000, false, PE_DX_MATCH,
                   CODES(PE_DX_LOW_PRECISION), &res),
          "a float32 table at 1e5: match + low_precision");
    CHECK(res.best.precision == PE_DX_FLOAT32, "evidence: float32");
    pe_dx_result_free(&res);

    r = ref_default();
    r.split = 1;
    CHECK(abs_case("split", &r, &c, 64, 64, 0, false, PE_DX_EXPLAINED, CODES(PE_DX_LAYOUT_SWAPPED),
                   &res),
          "split table for interleaved: layout_swapped");
    CHECK(res.best.sin_layout == PE_SIN_SPLIT, "evidence: split");
    pe_dx_result_free(&res);

    r = ref_default();
    r.swap = 1;
    CHECK(abs_case("swap", &r, &c, 64, 64, 0, false, PE_DX_EXPLAINED, CODES(PE_DX_SIN_COS_SWAPPED),
                   NULL),
          "cos where sin belongs: sin_cos_swapped");

    r = ref_default();
    r.offset = 2;
    CHECK(abs_case("offset", &r, &c, 64, 64, 0, false, PE_DX_EXPLAINED,
                   CODES(PE_DX_POSITION_OFFSET), &res),
          "OPT-style offset 2: position_offset");
    CHECK(res.best.offset == 2, "evidence: offset 2 (got %lld)", (long long)res.best.offset);
    pe_dx_result_free(&res);

    r = ref_default();
    r.base = 1000.0;
    CHECK(abs_case("base", &r, &c, 64, 64, 0, false, PE_DX_EXPLAINED, CODES(PE_DX_BASE_MISMATCH),
                   &res),
          "base 1000: base_mismatch");
    CHECK(fabs(res.best.base - 1000.0) < 1e-9, "evidence: base 1000 (got %.9g)", res.best.base);
    pe_dx_result_free(&res);

    r = ref_default();
    r.exp_den_delta = -1; /* d-1 in the denominator */
    CHECK(abs_case("formula", &r, &c, 64, 64, 0, false, PE_DX_EXPLAINED,
                   CODES(PE_DX_FREQUENCY_FORMULA), &res),
          "d-1 in the exponent: frequency_formula");
    CHECK(res.best.formula == PE_DX_FORMULA_D_MINUS_1, "evidence: d-1");
    pe_dx_result_free(&res);

    r = ref_default();
    r.transposed = 1;
    CHECK(abs_case("transposed", &r, &c, 48, 32, 0, false, PE_DX_EXPLAINED, CODES(PE_DX_TRANSPOSED),
                   NULL),
          "a [d][tokens] table: transposed");

    r = ref_default();
    r.scale = 8.0; /* sqrt(64), claimed 1 */
    CHECK(abs_case("embed scale", &r, &c, 32, 64, 0, true, PE_DX_EXPLAINED,
                   CODES(PE_DX_EMBED_SCALE), &res),
          "sqrt(d) scale not claimed: embed_scale");
    CHECK(res.best.embed_scale == 8.0, "evidence: embed_scale 8 (got %.9g)", res.best.embed_scale);
    pe_dx_result_free(&res);

    /* pairs */
    r = ref_default();
    r.split = 1;
    r.offset = 1;
    CHECK(abs_case("split+offset", &r, &c, 64, 64, 0, false, PE_DX_EXPLAINED,
                   CODES(PE_DX_LAYOUT_SWAPPED, PE_DX_POSITION_OFFSET), NULL),
          "split table starting at 1: both found");
    r = ref_default();
    r.scale = 2.5;
    r.base = 500.0;
    CHECK(abs_case("scale+base", &r, &c, 32, 64, 0, true, PE_DX_EXPLAINED,
                   CODES(PE_DX_EMBED_SCALE, PE_DX_BASE_MISMATCH), NULL),
          "scale 2.5 and base 500: both found");
}

/* Generated sinusoidal cases: one or two bugs among layout, swap, offset,
 * base, formula, embed_scale and transposition. Prints the rates. */
static void detection_rates(void)
{
    uint64_t seed = 31337;
    int tried[PE_DX_CODE_COUNT] = {0}, found[PE_DX_CODE_COUNT] = {0};
    int pairs = 0, pairs_ok = 0, alone = 0, alone_ok = 0;
    pe_dx_variant c = claim_sin();

    for (int k = 0; k < 120; k++) {
        ref_sin r = ref_default();
        int b[2] = {(int)test_uniform(&seed, 0, 7), (int)test_uniform(&seed, 0, 10)};
        /* base and formula both move the base; transposition is tried on
         * bare tables only, embed_scale on embeddings only */
        if (b[1] == b[0] || (b[0] == 3 && b[1] == 4) || (b[0] == 4 && b[1] == 3) ||
            (b[0] == 5 && b[1] == 6) || (b[0] == 6 && b[1] == 5))
            b[1] = 9;
        pe_dx_code want[3];
        size_t nw = 0;
        bool with_x = b[0] == 5 || b[1] == 5;
        for (int q = 0; q < 2; q++) {
            switch (b[q]) {
            case 0:
                r.split = 1;
                want[nw++] = PE_DX_LAYOUT_SWAPPED;
                break;
            case 1:
                r.swap = 1;
                want[nw++] = PE_DX_SIN_COS_SWAPPED;
                break;
            case 2:
                r.offset = (int64_t)test_uniform(&seed, 1, 30);
                want[nw++] = PE_DX_POSITION_OFFSET;
                break;
            case 3:
                r.base = round(test_uniform(&seed, 2, 80)) * 500;
                if (r.base == 10000.0)
                    r.base = 20500.0;
                want[nw++] = PE_DX_BASE_MISMATCH;
                break;
            case 4:
                if (test_uniform(&seed, 0, 2) < 1)
                    r.exp_num = 1.0;
                else
                    r.exp_den_delta = test_uniform(&seed, 0, 2) < 1 ? -1 : 1;
                want[nw++] = PE_DX_FREQUENCY_FORMULA;
                break;
            case 5:
                r.scale = round(test_uniform(&seed, 2, 40)) / 4;
                if (r.scale == 1.0)
                    r.scale = 2.5;
                want[nw++] = PE_DX_EMBED_SCALE;
                break;
            case 6:
                r.transposed = 1;
                want[nw++] = PE_DX_TRANSPOSED;
                break;
            default:
                break;
            }
        }
        want[nw] = PE_DX_CODE_COUNT;
        bool ok = abs_case("generated", &r, &c, 48, 64, 0, with_x, PE_DX_EXPLAINED, want, NULL);
        if (!ok)
            fprintf(stderr, "    bugs %d %d\n", b[0], b[1]);
        for (size_t q = 0; q < nw; q++) {
            tried[want[q]]++;
            found[want[q]] += ok;
        }
        pairs += nw == 2;
        pairs_ok += nw == 2 && ok;
        alone += nw == 1;
        alone_ok += nw == 1 && ok;
    }
    int total = 0, hit = 0;
    fprintf(stderr, "diagnose sinusoidal detection (48x64):");
    for (int q = 0; q < PE_DX_CODE_COUNT; q++)
        if (tried[q]) {
            fprintf(stderr, " %s %d/%d", pe_dx_code_name((pe_dx_code)q), found[q], tried[q]);
            total += tried[q];
            hit += found[q];
        }
    fprintf(stderr, "; alone %d/%d, pairs %d/%d\n", alone_ok, alone, pairs_ok, pairs);
    CHECK(hit == total, "every generated finding detected (%d/%d)", hit, total);
}

/* Random and constant tables: unexplained, in bounded time. */
static void adversarial(void)
{
    enum { N = 40, D = 32 };
    static float t[N * D];
    int64_t pos[N];
    uint64_t seed = 8;
    pe_dx_variant c = claim_sin();
    pe_dx_result r;
    for (size_t k = 0; k < N; k++)
        pos[k] = (int64_t)k;
    pe_dx_subject s = {.kind = PE_DX_SUBJ_TABLE, .rows = N, .cols = D, .a = t, .positions = pos};
    for (size_t e = 0; e < N * D; e++)
        t[e] = (float)test_uniform(&seed, -1, 1);
    CHECK(pe_diagnose(&s, &c, tol, &r) == PE_OK && r.verdict == PE_DX_UNEXPLAINED,
          "random table: unexplained");
    pe_dx_result_free(&r);
    for (size_t e = 0; e < N * D; e++)
        t[e] = 0.70710678f; /* every pair on the unit circle, no rotation */
    CHECK(pe_diagnose(&s, &c, tol, &r) == PE_OK && r.verdict == PE_DX_UNEXPLAINED,
          "constant unit-norm table: unexplained");
    pe_dx_result_free(&r);
    for (size_t e = 0; e < N * D; e++)
        t[e] = -3.4e38f;
    CHECK(pe_diagnose(&s, &c, tol, &r) == PE_OK && r.verdict == PE_DX_UNEXPLAINED,
          "huge table: unexplained");
    pe_dx_result_free(&r);
}

void test_diagnose_abs(void)
{
    tables();
    detection_rates();
    adversarial();
}
