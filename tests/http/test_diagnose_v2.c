/*
 * test_diagnose_v2.c - POST /diagnose, contract 1.2 "/diagnose, version 2"
 * over HTTP: significance and the negative set, finite
 * max_rel_error, the i/(d/2 - 1) formula, value-stage half precision,
 * MPT's ALiBi form, positions recovered from the phase, the head size
 * searched, and the search's time bound.
 *
 * Subjects are computed here from the papers' formulas and from the way
 * real implementations are written (restated, not copied): fairseq's and
 * tensor2tensor's sinusoid (sin block then cos block, exponent i/(half-1)),
 * GPT-NeoX's fp16 cos/sin cache, Transformer-XL's descending positions.
 * Run as part of the "diagnose" group (test_diagnose calls it).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refs.h"
#include "tests.h"

/* ---- helpers ---------------------------------------------------------- */

static const json_t *evidence(const json_t *f, const char *key)
{
    return f ? json_object_get(json_object_get(f, "evidence"), key) : NULL;
}

static double ev_number(const json_t *f, const char *key)
{
    const json_t *v = evidence(f, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *ev_string(const json_t *f, const char *key)
{
    const json_t *v = evidence(f, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* POST and check the verdict; the body is freed. */
static bool post(const server *s, const char *label, sbuf *b, const char *verdict, http_resp *r)
{
    bool ok = expect_diagnosis(s, label, b->s, verdict, r);
    sb_free(b);
    return ok;
}

/* Only low_precision (or `allowed`, may be NULL) among the findings; best
 * has no negative position; both max_rel_error are numbers. */
static void expect_no_structure(const char *label, const http_resp *r, const char *allowed)
{
    const json_t *list = r->json ? json_object_get(r->json, "findings") : NULL;
    size_t i;
    const json_t *f;
    json_array_foreach (list, i, f) {
        const char *c = jstr(f, "code");
        bool ok = c && (strcmp(c, "low_precision") == 0 || (allowed && strcmp(c, allowed) == 0));
        CHECK(ok, label, "structural finding %s: %s", c ? c : "?", jstr(f, "message"));
    }
    const json_t *best = r->json ? json_object_get(r->json, "best") : NULL;
    const json_t *pos = best ? json_object_get(best, "positions") : NULL;
    const json_t *p;
    json_array_foreach (pos, i, p)
        CHECK(json_integer_value(p) >= 0, label, "best has position %lld",
              (long long)json_integer_value(p));
    const json_t *off = best ? json_object_get(best, "offset") : NULL;
    CHECK(!off || json_integer_value(off) >= 0, label, "best has offset %lld",
          (long long)json_integer_value(off));
    const json_t *claimed = r->json ? json_object_get(r->json, "claimed") : NULL;
    CHECK(json_is_number(json_object_get(claimed, "max_rel_error")) &&
              json_is_number(json_object_get(best, "max_rel_error")),
          label, "max_rel_error is a number in claimed and best");
}

static void put(sbuf *b, const char *key, const float *v, size_t rows, size_t cols)
{
    sb_printf(b, "\"%s\":", key);
    sb_farray(b, v, 2, (size_t[]){rows, cols});
}

/* Vaswani et al. 3.5 in double: interleaved sin/cos, exponent 2i/d. */
static void vaswani_table(size_t T, size_t d, int64_t first, float *out)
{
    for (size_t t = 0; t < T; t++)
        for (size_t k = 0; k < d; k++) {
            double ang = (double)(first + (int64_t)t) /
                         pow(10000.0, (double)(k - k % 2) / (double)d);
            out[t * d + k] = (float)(k % 2 ? cos(ang) : sin(ang));
        }
}

/* POST a table subject (claim: the default sinusoidal) with `extra`
 * members (JSON text, may be ""). */
static bool post_table(const server *s, const char *label, const float *tab, size_t T, size_t D,
                       const char *extra, const char *verdict, http_resp *r)
{
    sbuf b;
    sb_init(&b);
    sb_printf(&b, "{%s%s", extra, *extra ? "," : "");
    put(&b, "table", tab, T, D);
    sb_puts(&b, "}");
    return post(s, label, &b, verdict, r);
}

/* ---- 1. significance: the negative set -------------------------------- */

static void negative_set(const server *s)
{
    enum { T = 48, D = 32 };
    float tab[T * D], x[T * D];
    trng g;
    trng_seed(&g, 19);
    static const char *const labels[] = {"v2 random table -> unexplained, no finding",
                                         "v2 constant table -> unexplained, no finding"};
    for (int k = 0; k < 2; k++) {
        for (size_t e = 0; e < T * D; e++)
            tab[e] = k == 0 ? trng_uniform(&g, -1, 1) : 0.25f;
        http_resp r;
        post_table(s, labels[k], tab, T, D, "", "unexplained", &r);
        expect_no_structure(labels[k], &r, NULL);
        CHECK(json_array_size(json_object_get(r.json, "findings")) == 0, labels[k],
              "no finding at all");
        http_resp_free(&r);
    }

    /* encoded == embeddings under a sinusoidal claim: nothing was added */
    const char *label = "v2 sinusoidal encoded == embeddings -> unexplained, best is the claim";
    for (size_t e = 0; e < T * D; e++)
        x[e] = trng_uniform(&g, -3, 3);
    sbuf b;
    sb_init(&b);
    sb_puts(&b, "{");
    put(&b, "embeddings", x, T, D);
    sb_puts(&b, ",");
    put(&b, "encoded", x, T, D);
    sb_puts(&b, "}");
    http_resp r;
    post(s, label, &b, "unexplained", &r);
    expect_no_structure(label, &r, NULL);
    CHECK(json_array_size(json_object_get(r.json, "findings")) == 0, label, "no finding");
    http_resp_free(&r);

    /* the right table with noise: 1e-7 and 1e-5 match with no finding, 1e-3
     * is unexplained without structure */
    static const double amps[] = {1e-7, 1e-5, 1e-3};
    static const char *const nl[] = {"v2 table + noise 1e-7 -> match, no finding",
                                     "v2 table + noise 1e-5 -> match, no finding",
                                     "v2 table + noise 1e-3 -> unexplained, no structure"};
    for (int k = 0; k < 3; k++) {
        vaswani_table(T, D, 0, tab);
        for (size_t e = 0; e < T * D; e++)
            tab[e] += trng_uniform(&g, (float)-amps[k], (float)amps[k]);
        post_table(s, nl[k], tab, T, D, "", k < 2 ? "match" : "unexplained", &r);
        expect_no_structure(nl[k], &r, NULL);
        if (k < 2)
            CHECK(json_array_size(json_object_get(r.json, "findings")) == 0, nl[k], "no finding");
        http_resp_free(&r);
    }
}

/* A finding's evidence carries the error before and after. */
static void evidence_errors(const server *s)
{
    enum { T = 32, D = 32 };
    float tab[T * D];
    const char *label = "v2 offset +1 -> evidence error_before > error_after";
    vaswani_table(T, D, 1, tab);
    http_resp r;
    if (post_table(s, label, tab, T, D, "", "explained", &r)) {
        const json_t *f = diagnose_finding(&r, "position_offset");
        CHECK(f != NULL, label, "position_offset found");
        double before = ev_number(f, "error_before"), after = ev_number(f, "error_after");
        CHECK(before > 0.1 && after <= 1e-4, label, "error_before %g, error_after %g", before,
              after);
    }
    http_resp_free(&r);
}

/* ---- 2. max_rel_error is finite ---------------------------------------- */

static void max_rel_finite(const server *s)
{
    enum { T = 4, D = 8 };
    float tab[T * D];
    const char *label = "v2 max_rel_error where want is 0 -> 0.5 / atol";
    vaswani_table(T, D, 0, tab);
    tab[0] = 0.5f; /* sin(0) = 0 wanted */
    http_resp r;
    post_table(s, label, tab, T, D, "", "unexplained", &r);
    const json_t *rel = json_object_get(json_object_get(r.json, "claimed"), "max_rel_error");
    CHECK(json_is_number(rel) && fabs(json_number_value(rel) - 5000.0) < 1, label,
          "max_rel_error %s", r.body);
    http_resp_free(&r);
}

/* ---- 3. the half-1 denominator ---------------------------------------- */

/* fairseq's sinusoid (restated): half = d/2, step ln(10000)/(half - 1),
 * sin block then cos block, positions from padding_idx + 1 = 2. */
static void fairseq_table(size_t T, size_t d, float *out)
{
    size_t half = d / 2;
    double step = log(10000.0) / (double)(half - 1);
    for (size_t t = 0; t < T; t++)
        for (size_t j = 0; j < half; j++) {
            double a = (double)(t + 2) * exp(-(double)j * step);
            out[t * d + j] = (float)sin(a);
            out[t * d + half + j] = (float)cos(a);
        }
}

static void half_minus_one(const server *s)
{
    enum { T = 40, D = 64 };
    float tab[T * D];
    const char *label = "v2 fairseq table, split claim -> frequency_formula i/(d/2-1) + offset 2";
    fairseq_table(T, D, tab);
    http_resp r;
    if (post_table(s, label, tab, T, D, "\"params\":{\"layout\":\"split\"}", "explained", &r)) {
        const json_t *f = diagnose_finding(&r, "frequency_formula");
        const char *words = ev_string(f, "formula");
        CHECK(words && strstr(words, "d/2-1"), label, "formula %s", words ? words : "(none)");
        double want = pow(10000.0, (double)D / (D - 2));
        CHECK(fabs(ev_number(f, "base") - want) < 1e-6 * want, label, "base %.9g, want %.9g",
              ev_number(f, "base"), want);
        CHECK(ev_number(diagnose_finding(&r, "position_offset"), "offset") == 2, label, "offset 2");
        CHECK(diagnose_finding(&r, "base_mismatch") == NULL, label, "no base_mismatch");
    }
    http_resp_free(&r);
}

/* ---- 4. values stored in half precision -------------------------------- */

/* GPT-NeoX's cache in a float16 model (restated): float32 inverse
 * frequencies and angles, cos/sin in float32, cast to float16. */
static void values_stage(const server *s)
{
    enum { T = 128, RD = 32 };
    float cv[T * RD], sv[T * RD];
    for (size_t t = 0; t < T; t++)
        for (size_t col = 0; col < RD; col++) {
            float inv = 1.0f / powf(10000.0f, (float)(2 * (col % (RD / 2))) / (float)RD);
            float ang = (float)(t + 600) * inv;
            cv[t * RD + col] = (float)(_Float16)cosf(ang);
            sv[t * RD + col] = (float)(_Float16)sinf(ang);
        }
    const char *label = "v2 float16 cos/sin cache -> low_precision float16, stage values";
    sbuf b;
    sb_init(&b);
    sb_puts(&b, "{\"scheme\":\"rope\",\"offset\":600,\"params\":{\"head_dim\":32},");
    put(&b, "cos", cv, T, RD);
    sb_puts(&b, ",");
    put(&b, "sin", sv, T, RD);
    sb_puts(&b, "}");
    http_resp r;
    if (post(s, label, &b, "explained", &r)) {
        const json_t *f = diagnose_finding(&r, "low_precision");
        const char *prec = ev_string(f, "precision"), *stage = ev_string(f, "stage");
        CHECK(prec && strcmp(prec, "float16") == 0 && stage && strcmp(stage, "values") == 0, label,
              "precision %s, stage %s", prec ? prec : "-", stage ? stage : "-");
        CHECK(json_array_size(json_object_get(r.json, "findings")) == 1, label,
              "low_precision alone (no base_mismatch): %.500s", r.body);
    }
    http_resp_free(&r);
}

/* ---- 5. MPT's ALiBi form ------------------------------------------------ */

static void mpt_form(const server *s)
{
    enum { H = 4, T = 6 };
    float bias[H * T * T];
    for (size_t h = 0; h < H; h++) /* MPT: slope * (j - (T - 1)), every row alike */
        for (size_t i = 0; i < T; i++)
            for (size_t j = 0; j < T; j++)
                bias[(h * T + i) * T + j] = (float)(pow(2.0, -8.0 * (double)(h + 1) / H) *
                                                    ((double)j - (double)(T - 1)));
    static const char *const claims[] = {"mpt", "symmetric"};
    static const char *const labels[] = {"v2 MPT bias under form mpt -> match",
                                         "v2 MPT bias under form symmetric -> alibi_form mpt"};
    for (int k = 0; k < 2; k++) {
        sbuf b;
        sb_init(&b);
        sb_printf(&b, "{\"scheme\":\"alibi\",\"params\":{\"form\":\"%s\"},\"bias\":", claims[k]);
        sb_farray(&b, bias, 3, (size_t[]){H, T, T});
        sb_puts(&b, "}");
        http_resp r;
        if (post(s, labels[k], &b, k == 0 ? "match" : "explained", &r)) {
            const json_t *claimed = json_object_get(r.json, "claimed");
            const char *form = jstr(json_object_get(claimed, "params"), "form");
            CHECK(form && strcmp(form, claims[k]) == 0, labels[k], "claimed form %s",
                  form ? form : "(none)");
            if (k == 1) {
                const char *found = ev_string(diagnose_finding(&r, "alibi_form"), "form");
                CHECK(found && strcmp(found, "mpt") == 0, labels[k], "found form %s",
                      found ? found : "(none)");
            }
        }
        http_resp_free(&r);
    }
}

/* ---- 6. positions from the phase ----------------------------------------- */

/* evidence.positions[0] and best.positions both equal want[T]. */
static void check_positions(const char *label, const http_resp *r, const int64_t *want, size_t T,
                            const char *pattern)
{
    const json_t *f = diagnose_finding(r, "positions_mismatch");
    const char *pat = ev_string(f, "pattern");
    CHECK(pat && strcmp(pat, pattern) == 0, label, "pattern %s, want %s", pat ? pat : "(none)",
          pattern);
    const json_t *rows = evidence(f, "positions");
    const json_t *row = json_array_get(rows, 0);
    const json_t *best = json_object_get(r->json, "best");
    const json_t *bp = json_object_get(best, "positions");
    bool ok = json_array_size(rows) == 1 && json_array_size(row) == T && json_array_size(bp) == T;
    for (size_t t = 0; ok && t < T; t++)
        ok = json_integer_value(json_array_get(row, t)) == want[t] &&
             json_integer_value(json_array_get(bp, t)) == want[t];
    CHECK(ok, label,
          "evidence.positions [[...]] and best.positions are the positions found: %.600s", r->body);
    CHECK(diagnose_finding(r, "sin_cos_swapped") == NULL &&
              diagnose_finding(r, "rotation_reversed") == NULL &&
              diagnose_finding(r, "position_offset") == NULL,
          label, "no sin_cos_swapped, rotation_reversed or position_offset");
}

static void positions_mismatch(const server *s)
{
    enum { T = 40, D = 32 };
    float tab[T * D];
    int64_t want[T];
    /* Transformer-XL (restated): positions klen-1 ... 0, cat(sin, cos) */
    for (size_t t = 0; t < T; t++) {
        want[t] = (int64_t)(T - 1 - t);
        for (size_t i = 0; i < D / 2; i++) {
            double a = (double)want[t] / pow(10000.0, (double)(2 * i) / D);
            tab[t * D + i] = (float)sin(a);
            tab[t * D + D / 2 + i] = (float)cos(a);
        }
    }
    const char *label = "v2 Transformer-XL table -> positions_mismatch reversed";
    http_resp r;
    if (post_table(s, label, tab, T, D, "\"params\":{\"layout\":\"split\"}", "explained", &r))
        check_positions(label, &r, want, T, "reversed");
    http_resp_free(&r);

    /* RoPE with all-zero position ids: the vectors come back unrotated */
    enum { W = 64 };
    float x[T * W];
    trng g;
    trng_seed(&g, 6);
    trng_fill(&g, x, T * W, -1, 1);
    for (size_t t = 0; t < T; t++)
        want[t] = 0;
    label = "v2 rope at all-zero position ids -> positions_mismatch constant";
    sbuf b;
    sb_init(&b);
    sb_puts(&b, "{\"scheme\":\"rope\",\"params\":{\"head_dim\":32},");
    put(&b, "embeddings", x, T, W);
    sb_puts(&b, ",");
    put(&b, "encoded", x, T, W);
    sb_puts(&b, "}");
    if (post(s, label, &b, "explained", &r)) {
        check_positions(label, &r, want, T, "constant");
        expect_no_structure(label, &r, "positions_mismatch");
    }
    http_resp_free(&r);
}

/* ---- 7. the head size searched ------------------------------------------- */

/* GPT-NeoX's rotation (half layout) of x[T][W] in heads of hd, base theta,
 * at positions 0, 1, ... */
static void neox_heads(const float *x, size_t T, size_t W, size_t hd, double theta, float *y)
{
    for (size_t t = 0; t < T; t++)
        for (size_t h = 0; h < W / hd; h++)
            for (size_t i = 0; i < hd / 2; i++) {
                double a = (double)t * pow(theta, -2.0 * (double)i / (double)hd);
                size_t ea = t * W + h * hd + i, eb = ea + hd / 2;
                y[ea] = (float)(x[ea] * cos(a) - x[eb] * sin(a));
                y[eb] = (float)(x[eb] * cos(a) + x[ea] * sin(a));
            }
}

static void free_head_size(const server *s)
{
    enum { T = 32, W = 128, HD = 32 };
    float x[T * W], y[T * W];
    trng g;
    trng_seed(&g, 7);
    trng_fill(&g, x, T * W, -1, 1);
    neox_heads(x, T, W, HD, 10000.0, y); /* 4 heads of 32 */
    const char *label = "v2 rope without head_dim, 4 heads of 32 -> head_dim_mismatch 32";
    sbuf b;
    sb_init(&b);
    sb_puts(&b, "{\"scheme\":\"rope\",");
    put(&b, "embeddings", x, T, W);
    sb_puts(&b, ",");
    put(&b, "encoded", y, T, W);
    sb_puts(&b, "}");
    http_resp r;
    if (post(s, label, &b, "explained", &r)) {
        const json_t *f = diagnose_finding(&r, "head_dim_mismatch");
        CHECK(ev_number(f, "head_dim") == HD, label, "evidence.head_dim %g",
              ev_number(f, "head_dim"));
        const json_t *params = json_object_get(json_object_get(r.json, "best"), "params");
        CHECK(jint(params, "head_dim", 0) == HD, label, "best.params.head_dim %lld",
              jint(params, "head_dim", 0));
        CHECK(json_array_size(json_object_get(r.json, "findings")) == 1, label,
              "head_dim_mismatch alone: %.500s", r.body);
    }
    http_resp_free(&r);
}

/* ---- 8. the time bound ---------------------------------------------------- */

/* A server whose /diagnose budget is 1 ms: a subject that needs the search
 * answers with what was found, and says truncated. */
static void time_bound(void)
{
    enum { T = 512, W = 128, HD = 64 };
    float *x = xmalloc(T * W * sizeof *x), *y = xmalloc(T * W * sizeof *y);
    trng g;
    trng_seed(&g, 8);
    trng_fill(&g, x, T * W, -1, 1);
    neox_heads(x, T, W, HD, 500000.0, y); /* 10000 is claimed */
    const char *label = "v2 --diagnose-ms 1: a search cut short says truncated";
    server s;
    const char *args[] = {"--diagnose-ms", "1", NULL};
    if (server_start(&s, "diagnose-ms", args, NULL)) {
        sbuf b;
        sb_init(&b);
        sb_printf(&b, "{\"scheme\":\"rope\",\"params\":{\"head_dim\":%d},", HD);
        put(&b, "embeddings", x, T, W);
        sb_puts(&b, ",");
        put(&b, "encoded", y, T, W);
        sb_puts(&b, "}");
        http_resp r;
        http_post_json(&s, "/diagnose", b.s, &r);
        sb_free(&b);
        if (expect_ok(label, &r))
            CHECK(json_is_true(json_object_get(r.json, "truncated")), label,
                  "truncated: true (body %.300s)", r.body);
        http_resp_free(&r);
        server_stop(&s);
    }
    free(x);
    free(y);
}

void test_diagnose_v2(const server *s)
{
    time_bound();
    free_head_size(s);
    positions_mismatch(s);
    mpt_form(s);
    values_stage(s);
    half_minus_one(s);
    negative_set(s);
    evidence_errors(s);
    max_rel_finite(s);
    test_diagnose_batch(s);
    test_diagnose_combined(s);
}
