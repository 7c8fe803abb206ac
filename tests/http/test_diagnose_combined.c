/*
 * test_diagnose_combined.c - POST /diagnose over HTTP where mistakes come
 * together and where the evidence must agree with itself:
 *
 *  - x + the concatenated [sin | cos] table (Marian, fairseq) at fairseq's
 *    positions 2, 3, ... claimed as the paper's interleaved table: layout
 *    and offset reproduce it exactly, so nothing else is reported (no base
 *    off by a few parts in a thousand under a float16 envelope);
 *  - a sinusoidal table cast to float16: error_after is what best leaves,
 *    the largest float16 rounding error of the table, computed here;
 *  - a cos/sin cache at positions rounded to bfloat16: the message shows
 *    the first position that differs from the claimed ones.
 *
 * Subjects come from refs.h's sinusoid or the formulas here (double,
 * libm). Run as part of the "diagnose" group (test_diagnose_v2 calls it).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refs.h"
#include "tests.h"

static void put(sbuf *b, const char *key, const float *v, size_t rows, size_t cols)
{
    sb_printf(b, "\"%s\":", key);
    sb_farray(b, v, 2, (size_t[]){rows, cols});
}

static double ev_number(const json_t *f, const char *key)
{
    const json_t *v = f ? json_object_get(json_object_get(f, "evidence"), key) : NULL;
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static double best_error(const http_resp *r)
{
    const json_t *v = json_object_get(json_object_get(r->json, "best"), "max_abs_error");
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* POST {head, "k1": a1, "k2": a2} (both [rows][cols]) and check the
 * verdict. */
static bool post_pair(const server *s, const char *label, const char *head, const char *k1,
                      const float *a1, const char *k2, const float *a2, size_t rows, size_t cols,
                      const char *verdict, http_resp *r)
{
    sbuf b;
    sb_init(&b);
    sb_printf(&b, "{%s,", head);
    put(&b, k1, a1, rows, cols);
    sb_puts(&b, ",");
    put(&b, k2, a2, rows, cols);
    sb_puts(&b, "}");
    bool ok = expect_diagnosis(s, label, b.s, verdict, r);
    sb_free(&b);
    return ok;
}

/* The findings are exactly `codes` (n of them), in any order. */
static void expect_codes(const char *label, const http_resp *r, const char *const *codes, size_t n)
{
    const json_t *list = json_object_get(r->json, "findings");
    CHECK(json_array_size(list) == n, label, "%zu findings, want %zu: %.700s",
          json_array_size(list), n, r->body);
    for (size_t k = 0; k < n; k++)
        CHECK(diagnose_finding(r, codes[k]) != NULL, label, "no %s: %.700s", codes[k], r->body);
}

/* x + split PE at positions 2.. for T x D subjects, claimed interleaved. */
static void split_from_two(const server *s, size_t T, size_t D, uint64_t seed)
{
    float *x = malloc(T * D * sizeof *x), *y = malloc(T * D * sizeof *y);
    double *want = malloc(T * D * sizeof *want);
    int64_t *pos = malloc(T * sizeof *pos);
    char label[160];
    snprintf(label, sizeof label,
             "combined: x + [sin | cos] from position 2, %zux%zu, claimed the paper's -> "
             "layout_swapped + position_offset, nothing else",
             T, D);
    trng g;
    trng_seed(&g, seed);
    trng_fill(&g, x, T * D, -2, 2);
    for (size_t t = 0; t < T; t++)
        pos[t] = (int64_t)t + 2;
    ref_absolute_sinusoidal(x, 1.0, 10000.0L, true, pos, T, D, want);
    for (size_t e = 0; e < T * D; e++)
        y[e] = (float)want[e];
    http_resp r;
    if (post_pair(s, label, "\"scheme\":\"sinusoidal\",\"params\":{\"layout\":\"interleaved\"}",
                  "embeddings", x, "encoded", y, T, D, "explained", &r)) {
        static const char *const codes[] = {"layout_swapped", "position_offset"};
        expect_codes(label, &r, codes, 2);
        const json_t *f = diagnose_finding(&r, "position_offset");
        CHECK(ev_number(f, "offset") == 2, label, "offset %g, want 2", ev_number(f, "offset"));
        const json_t *params = json_object_get(json_object_get(r.json, "best"), "params");
        const json_t *base = json_object_get(params, "base");
        CHECK(!base || json_number_value(base) == 10000, label, "best base %s, want 10000", r.body);
        CHECK(best_error(&r) <= 1e-5 && ev_number(f, "error_after") <= 1e-5, label,
              "best.max_abs_error %g, error_after %g, want <= 1e-5", best_error(&r),
              ev_number(f, "error_after"));
    }
    http_resp_free(&r);
    free(x);
    free(y);
    free(want);
    free(pos);
}

/* The paper's table cast to float16: error_after is the table's largest
 * float16 rounding error, never above best's error. */
static void float16_table(const server *s)
{
    enum { T = 512, D = 32 };
    float *tab = malloc(T * D * sizeof *tab);
    double worst = 0;
    for (size_t t = 0; t < T; t++)
        for (size_t k = 0; k < D; k++) {
            double ang = (double)t / pow(10000.0, (double)(k - k % 2) / D);
            float v = (float)(k % 2 ? cos(ang) : sin(ang));
            tab[t * D + k] = (float)(_Float16)v;
            worst = fmax(worst, fabs((double)tab[t * D + k] - (double)v));
        }
    const char *label = "combined: a float16 sinusoidal table -> error_after = its largest "
                        "float16 rounding error";
    sbuf b;
    sb_init(&b);
    sb_puts(&b, "{\"scheme\":\"sinusoidal\",");
    put(&b, "table", tab, T, D);
    sb_puts(&b, "}");
    http_resp r;
    if (expect_diagnosis(s, label, b.s, "explained", &r)) {
        const json_t *f = diagnose_finding(&r, "low_precision");
        double after = ev_number(f, "error_after");
        CHECK(fabs(after - worst) <= 1e-6, label, "error_after %g, want %g", after, worst);
        CHECK(after <= best_error(&r), label, "error_after %g above best.max_abs_error %g", after,
              best_error(&r));
    }
    http_resp_free(&r);
    sb_free(&b);
    free(tab);
}

/* A half-layout cos/sin cache at positions bf16(t): the message names the
 * first index whose position differs and the positions found there. */
static void bfloat16_positions(const server *s)
{
    enum { T = 1024, HD = 32 };
    float *cv = malloc(T * HD * sizeof *cv), *sv = malloc(T * HD * sizeof *sv);
    size_t first = T;
    for (size_t t = 0; t < T; t++) {
        float p = diagnose_bf16((float)t);
        if (first == T && p != (float)t)
            first = t;
        for (size_t c = 0; c < HD; c++) {
            float inv = 1.0f / powf(10000.0f, (float)(2 * (c % (HD / 2))) / (float)HD);
            float ang = p * inv;
            cv[t * HD + c] = cosf(ang);
            sv[t * HD + c] = sinf(ang);
        }
    }
    const char *label = "combined: cos/sin at bfloat16 positions -> positions_mismatch names "
                        "the first position that differs";
    char want[96];
    snprintf(want, sizeof want, "index %zu: %.0f, %.0f", first, (double)diagnose_bf16((float)first),
             (double)diagnose_bf16((float)(first + 1)));
    http_resp r;
    if (post_pair(s, label, "\"scheme\":\"rope\",\"params\":{\"head_dim\":32}", "cos", cv, "sin",
                  sv, T, HD, "explained", &r)) {
        const json_t *f = diagnose_finding(&r, "positions_mismatch");
        const char *m = f ? jstr(f, "message") : NULL;
        CHECK(m && strstr(m, want), label, "message %s, want it to contain '%s'", m ? m : "(none)",
              want);
    }
    http_resp_free(&r);
    free(cv);
    free(sv);
}

void test_diagnose_combined(const server *s)
{
    split_from_two(s, 32, 32, 5);
    split_from_two(s, 8, 8, 5);
    float16_table(s);
    bfloat16_positions(s);
}
