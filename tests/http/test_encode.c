/*
 * test_encode.c - POST /encode against independent references: every
 * scheme, layouts, odd widths, offsets and explicit positions, batching,
 * base64 both ways, long positions, and exact float32 round trips.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "refs.h"
#include "tests.h"

/* ---------------------------------------------------------------------- */
/* Shared helpers (also used by test_apply.c)                               */
/* ---------------------------------------------------------------------- */

bool post_read(const server *s, const char *path, const char *label, const char *body,
               const char *key, int ndim, const size_t *shape, http_resp *resp, farr *out)
{
    http_resp local;
    http_resp *r = resp ? resp : &local;
    http_post_json(s, path, body, r);
    bool ok = expect_ok(label, r);
    farr a = {0};
    if (ok) {
        ok = get_farr(label, r, key, &a);
        if (ok)
            ok = check_shape(label, key, &a, ndim, shape);
    }
    if (out && ok)
        *out = a;
    else
        farr_free(&a);
    if (!resp)
        http_resp_free(&local);
    return ok;
}

bool post_compare(const server *s, const char *path, const char *label, const char *body,
                  const char *key, int ndim, const size_t *shape, const double *want,
                  double abs_tol, double ulps)
{
    farr a;
    if (!post_read(s, path, label, body, key, ndim, shape, NULL, &a))
        return false;
    bool ok = check_close(label, key, &a, want, a.n, abs_tol, ulps);
    farr_free(&a);
    return ok;
}

/* Check the "scheme" and "shape" members of an /encode response. */
static void check_encode_meta(const char *label, const http_resp *r, const char *scheme, int ndim,
                              const size_t *shape)
{
    if (!r->json)
        return;
    const char *sc = jstr(r->json, "scheme");
    CHECK(sc && strcmp(sc, scheme) == 0, label, "\"scheme\" is %s, want %s", sc ? sc : "(none)",
          scheme);
    json_t *sh = json_object_get(r->json, "shape");
    bool same = json_is_array(sh) && json_array_size(sh) == (size_t)ndim;
    for (int i = 0; same && i < ndim; i++)
        same = json_integer_value(json_array_get(sh, (size_t)i)) == (json_int_t)shape[i];
    CHECK(same, label, "\"shape\" does not echo the input shape");
}

/* How an encode_case's body carries its embeddings. */
typedef enum {
    ENC_NO_INPUT, /* none (a bare table, or the head carries them) */
    ENC_JSON,     /* "embeddings": x as nested numbers of the case's shape */
    ENC_BASE64    /* "embeddings": x in base64 (the head carries "shape") */
} enc_input;

/* One /encode request whose answer is compared with a reference. The body
 * is {head, embeddings, tail} (the parts present, in this order). */
typedef struct encode_case {
    const char *name;
    const char *head; /* members before the embeddings, or NULL */
    enc_input input;
    const float *x;   /* with ENC_JSON/ENC_BASE64: shape-many floats */
    const char *tail; /* members after the embeddings, or NULL */
    int ndim;         /* the answer's shape (and the input's) */
    size_t shape[3];
    const char *key;    /* the array compared: NULL "encoded" */
    const char *what;   /* what the comparison is called: NULL the key */
    const double *want; /* the reference within abs_tol + ulps ulp ... */
    double abs_tol, ulps;
    const float *want_exact; /* ... or bit for bit (then want is NULL) */
    const char *meta_scheme; /* check "scheme" and the "shape" echo (NULL: not) */
} encode_case;

static size_t shape_count(int ndim, const size_t *shape)
{
    size_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    return n;
}

static void encode_body(sbuf *b, const encode_case *c)
{
    bool comma = false;
    sb_puts(b, "{");
    if (c->head) {
        sb_puts(b, c->head);
        comma = true;
    }
    if (c->input != ENC_NO_INPUT) {
        sb_puts(b, comma ? ",\"embeddings\":" : "\"embeddings\":");
        if (c->input == ENC_BASE64)
            sb_base64_floats(b, c->x, shape_count(c->ndim, c->shape));
        else
            sb_farray(b, c->x, c->ndim, c->shape);
        comma = true;
    }
    if (c->tail) {
        sb_puts(b, comma ? "," : "");
        sb_puts(b, c->tail);
    }
    sb_puts(b, "}");
}

static void run_encode_case(const server *s, const encode_case *c)
{
    const char *key = c->key ? c->key : "encoded";
    const char *what = c->what ? c->what : key;
    sbuf b;
    sb_init(&b);
    encode_body(&b, c);
    http_resp r;
    farr a;
    if (post_read(s, "/encode", c->name, b.s, key, c->ndim, c->shape, &r, &a)) {
        if (c->want_exact)
            check_exact(c->name, what, &a, c->want_exact, a.n);
        else
            check_close(c->name, what, &a, c->want, a.n, c->abs_tol, c->ulps);
        if (c->meta_scheme)
            check_encode_meta(c->name, &r, c->meta_scheme, c->ndim, c->shape);
        farr_free(&a);
    }
    http_resp_free(&r);
    sb_free(&b);
}

static void run_encode_cases(const server *s, const encode_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++)
        run_encode_case(s, &cases[i]);
}

#define RUN_ENCODE_CASES(s, table)                                                                 \
    run_encode_cases((s), (table), sizeof(table) / sizeof((table)[0]))

/* ---------------------------------------------------------------------- */
/* Sinusoidal                                                              */
/* ---------------------------------------------------------------------- */

static void sinusoidal_anchors(const server *s)
{
    const char *L = "POST /encode sinusoidal bare [3,4] (known vector)";
    static const double want[] = {0.000000, 1.000000, 0.000000, 1.000000,  0.841471, 0.540302,
                                  0.010000, 0.999950, 0.909297, -0.416147, 0.019999, 0.999800};
    size_t sh[] = {3, 4};
    http_resp r;
    farr a;
    if (post_read(s, "/encode", L, "{\"shape\":[3,4]}", "encoded", 2, sh, &r, &a)) {
        check_close(L, "encoded vs anchors", &a, want, 12, 6e-7, 0);
        check_encode_meta(L, &r, "sinusoidal", 2, sh);
        farr_free(&a);
    }
    http_resp_free(&r);

    L = "POST /encode sinusoidal interleaved bare [6,8] row 5 (known vector)";
    static const double row5[] = {-0.958924, 0.283662, 0.479426, 0.877583,
                                  0.049979,  0.998750, 0.005000, 0.999988};
    size_t sh2[] = {6, 8};
    if (post_read(s, "/encode", L,
                  "{\"shape\":[6,8],\"scheme\":\"sinusoidal\",\"params\":{\"layout\":"
                  "\"interleaved\"}}",
                  "encoded", 2, sh2, NULL, &a)) {
        farr row = a;
        row.v = a.v + 5 * 8;
        row.n = 8;
        row.ndim = 1;
        row.shape[0] = 8;
        check_close(L, "row 5 vs anchor", &row, row5, 8, 6e-7, 0);
        farr_free(&a);
    }

    L = "POST /encode sinusoidal split bare [6,8] row 5 (known Marian vector)";
    static const double mrow5[] = {-0.958924, 0.479426, 0.049979, 0.005000,
                                   0.283662,  0.877583, 0.998750, 0.999988};
    if (post_read(s, "/encode", L, "{\"shape\":[6,8],\"params\":{\"layout\":\"split\"}}", "encoded",
                  2, sh2, NULL, &a)) {
        farr row = a;
        row.v = a.v + 5 * 8;
        row.n = 8;
        row.ndim = 1;
        row.shape[0] = 8;
        check_close(L, "row 5 vs anchor", &row, mrow5, 8, 6e-7, 0);
        farr_free(&a);
    }
}

/* A bare table (no embeddings) against the long double reference. */
static void sinusoidal_bare(const server *s, size_t t, size_t d, bool split, double base,
                            int64_t offset)
{
    char label[160], body[256];
    snprintf(label, sizeof label, "POST /encode sinusoidal %s bare [%zu,%zu] base %g offset %lld",
             split ? "split" : "interleaved", t, d, base, (long long)offset);
    snprintf(body, sizeof body,
             "{\"shape\":[%zu,%zu],\"offset\":%lld,\"params\":{\"layout\":\"%s\",\"base\":%.17g}}",
             t, d, (long long)offset, split ? "split" : "interleaved", base);
    int64_t *pos = xmalloc(t * sizeof *pos);
    for (size_t i = 0; i < t; i++)
        pos[i] = offset + (int64_t)i;
    double *want = xmalloc(t * d * sizeof *want);
    ref_absolute_sinusoidal(NULL, 1, base, split, pos, t, d, want);
    size_t sh[] = {t, d};
    post_compare(s, "/encode", label, body, "encoded", 2, sh, want, ABS_ONCE, ULPS_ONCE);
    free(want);
    free(pos);
}

static void sinusoidal_embeddings(const server *s)
{
    trng g;
    trng_seed(&g, 11);
    float x48[32], x238[48], x236[36];
    trng_fill(&g, x48, 32, -2, 2);
    trng_fill(&g, x238, 48, -1, 1);
    trng_fill(&g, x236, 36, -1, 1);
    int64_t p0[] = {0, 1, 2, 3}, p5[] = {5, 6, 7}, p7[] = {7, 0, 1000};
    int64_t rows0[] = {0, 1, 2}, rows1[] = {10, 20, 30};
    double w48[32], w238[48], w236[36], w236rows[36];
    /* embed_scale sqrt(d) with [4][8] embeddings, offset 0 */
    ref_absolute_sinusoidal(x48, sqrt(8.0), 10000, false, p0, 4, 8, w48);
    /* batch [2][3][8] with offset 5: every row gets positions 5, 6, 7 */
    ref_absolute_sinusoidal(x238, 1, 10000, false, p5, 3, 8, w238);
    ref_absolute_sinusoidal(x238 + 24, 1, 10000, false, p5, 3, 8, w238 + 24);
    /* explicit positions: one list for every row, then one per row */
    ref_absolute_sinusoidal(x236, 1, 10000, true, p7, 3, 6, w236);
    ref_absolute_sinusoidal(x236 + 18, 1, 10000, true, p7, 3, 6, w236 + 18);
    ref_absolute_sinusoidal(x236, 1, 10000, false, rows0, 3, 6, w236rows);
    ref_absolute_sinusoidal(x236 + 18, 1, 10000, false, rows1, 3, 6, w236rows + 18);
    char scale[64];
    snprintf(scale, sizeof scale, "\"embed_scale\":%.17g", sqrt(8.0));
    const encode_case cases[] = {
        {.name = "POST /encode sinusoidal embeddings [4,8] embed_scale sqrt(8)",
         .input = ENC_JSON,
         .x = x48,
         .tail = scale,
         .ndim = 2,
         .shape = {4, 8},
         .want = w48,
         .abs_tol = ABS_ONCE,
         .ulps = ULPS_ONCE,
         .meta_scheme = "sinusoidal"},
        {.name = "POST /encode sinusoidal batch [2,3,8] offset 5",
         .input = ENC_JSON,
         .x = x238,
         .tail = "\"offset\":5",
         .ndim = 3,
         .shape = {2, 3, 8},
         .want = w238,
         .abs_tol = ABS_ONCE,
         .ulps = ULPS_ONCE,
         .meta_scheme = "sinusoidal"},
        {.name = "POST /encode sinusoidal batch [2,3,6] positions [7,0,1000]",
         .input = ENC_JSON,
         .x = x236,
         .tail = "\"positions\":[7,0,1000],\"params\":{\"layout\":\"split\"}",
         .ndim = 3,
         .shape = {2, 3, 6},
         .want = w236,
         .abs_tol = ABS_ONCE,
         .ulps = ULPS_ONCE},
        {.name = "POST /encode sinusoidal batch [2,3,6] per-row positions",
         .input = ENC_JSON,
         .x = x236,
         .tail = "\"positions\":[[0,1,2],[10,20,30]]",
         .ndim = 3,
         .shape = {2, 3, 6},
         .want = w236rows,
         .abs_tol = ABS_ONCE,
         .ulps = ULPS_ONCE},
    };
    RUN_ENCODE_CASES(s, cases);
}

/* base64 in, out, and both; results identical to the JSON round. */
static void sinusoidal_base64(const server *s)
{
    trng g;
    trng_seed(&g, 12);
    float x[2 * 3 * 5];
    trng_fill(&g, x, 30, -3, 3);
    size_t sh[] = {2, 3, 5};
    int64_t pos[] = {4, 5, 6};
    double want[30];
    ref_absolute_sinusoidal(x, 1, 10000, false, pos, 3, 5, want);
    ref_absolute_sinusoidal(x + 15, 1, 10000, false, pos, 3, 5, want + 15);

    sbuf bj, bb;
    sb_init(&bj);
    sb_puts(&bj, "{\"embeddings\":");
    sb_farray(&bj, x, 3, sh);
    sb_puts(&bj, ",\"offset\":4,\"encoding\":\"base64\"}");
    sb_init(&bb);
    sb_puts(&bb, "{\"embeddings\":");
    sb_base64_floats(&bb, x, 30);
    sb_puts(&bb, ",\"shape\":[2,3,5],\"offset\":4}");

    farr a_json_in = {0}, a_b64_in = {0};
    const char *L1 = "POST /encode sinusoidal JSON in, base64 out [2,3,5]";
    http_resp r;
    if (post_read(s, "/encode", L1, bj.s, "encoded", 3, sh, &r, &a_json_in)) {
        CHECK(a_json_in.base64, L1, "\"encoded\" is not a base64 string");
        check_close(L1, "encoded", &a_json_in, want, 30, ABS_ONCE, ULPS_ONCE);
        json_t *es = json_object_get(r.json, "encoded_shape");
        CHECK(json_is_array(es) && json_array_size(es) == 3 &&
                  json_integer_value(json_array_get(es, 2)) == 5,
              L1, "\"encoded_shape\" is not [2,3,5]");
    }
    http_resp_free(&r);
    const char *L2 = "POST /encode sinusoidal base64 in, JSON out [2,3,5]";
    if (post_read(s, "/encode", L2, bb.s, "encoded", 3, sh, NULL, &a_b64_in)) {
        CHECK(!a_b64_in.base64, L2, "\"encoded\" should be JSON numbers by default");
        check_close(L2, "encoded", &a_b64_in, want, 30, ABS_ONCE, ULPS_ONCE);
        if (a_json_in.n == 30)
            check_exact(L2, "encoded vs the base64-out response", &a_b64_in, a_json_in.v, 30);
    }
    sb_free(&bb);
    sb_init(&bb);
    sb_puts(&bb, "{\"embeddings\":");
    sb_base64_floats(&bb, x, 30);
    sb_puts(&bb, ",\"shape\":[2,3,5],\"offset\":4,\"encoding\":\"base64\"}");
    const char *L3 = "POST /encode sinusoidal base64 in and out [2,3,5]";
    farr a3;
    if (post_read(s, "/encode", L3, bb.s, "encoded", 3, sh, NULL, &a3)) {
        CHECK(a3.base64, L3, "\"encoded\" is not a base64 string");
        if (a_b64_in.n == 30)
            check_exact(L3, "encoded vs the JSON-out response", &a3, a_b64_in.v, 30);
        farr_free(&a3);
    }
    farr_free(&a_json_in);
    farr_free(&a_b64_in);
    sb_free(&bj);
    sb_free(&bb);
}

/* Positions in the millions: double-precision angles. */
static void sinusoidal_long_positions(const server *s)
{
    const char *L = "POST /encode sinusoidal bare [3,64] positions [1000000,2999999,123457]";
    int64_t pos[] = {1000000, 2999999, 123457};
    double want[3 * 64];
    ref_absolute_sinusoidal(NULL, 1, 10000, false, pos, 3, 64, want);
    size_t sh[] = {3, 64};
    post_compare(s, "/encode", L, "{\"shape\":[3,64],\"positions\":[1000000,2999999,123457]}",
                 "encoded", 2, sh, want, 1e-6, 0);
    L = "POST /encode sinusoidal bare [2,16] offset 999999";
    int64_t pos2[] = {999999, 1000000};
    double want2[32];
    ref_absolute_sinusoidal(NULL, 1, 10000, false, pos2, 2, 16, want2);
    size_t sh2[] = {2, 16};
    post_compare(s, "/encode", L, "{\"shape\":[2,16],\"offset\":999999}", "encoded", 2, sh2, want2,
                 1e-6, 0);
}

/* ---------------------------------------------------------------------- */
/* Learned (inline model)                                                  */
/* ---------------------------------------------------------------------- */

/* Floats that must survive the round trip bit for bit. */
static const float SPECIAL[] = {0.1f,
                                -0.3f,
                                1.0f / 3.0f,
                                3.40282347e38f,
                                -1.17549435e-38f,
                                1.40129846e-45f,
                                16777216.0f,
                                123456.789f,
                                1e-7f,
                                3.14159274f,
                                -2.5e-20f,
                                65504.0f,
                                1.00000012f,
                                0.99999994f,
                                -7.0f,
                                0.0f,
                                2.0e-44f,
                                1e30f,
                                -9.99999975e-6f,
                                0.5f};
#define NSPECIAL (sizeof SPECIAL / sizeof SPECIAL[0])

/* An inline model object with d_model 4, 2 heads, the given scheme and
 * extra weights text (e.g. "\"position_table\":[[..]]"). */
static void inline_model4(sbuf *b, const char *scheme, const char *params, const char *extra)
{
    float w[16];
    for (int i = 0; i < 16; i++)
        w[i] = (i % 5 == 0) ? 1.0f : 0.0f;
    size_t sh[] = {4, 4};
    sb_printf(b, "{\"d_model\":4,\"heads\":2,\"scheme\":\"%s\"", scheme);
    if (params)
        sb_printf(b, ",\"params\":%s", params);
    sb_puts(b, ",\"weights\":{\"wq\":");
    sb_farray(b, w, 2, sh);
    sb_puts(b, ",\"wk\":");
    sb_farray(b, w, 2, sh);
    sb_puts(b, ",\"wv\":");
    sb_farray(b, w, 2, sh);
    if (extra)
        sb_printf(b, ",%s", extra);
    sb_puts(b, "}}");
}

static void learned(const server *s)
{
    /* position_table [5][4] made of special floats */
    float table[20];
    for (int i = 0; i < 20; i++)
        table[i] = SPECIAL[i % NSPECIAL];
    size_t tsh[] = {5, 4};
    sbuf tb;
    sb_init(&tb);
    sb_puts(&tb, "\"position_table\":");
    sb_farray(&tb, table, 2, tsh);
    sbuf model; /* "model": the inline model, the head of every body below */
    sb_init(&model);
    sb_puts(&model, "\"model\":");
    inline_model4(&model, "learned", NULL, tb.s);

    /* rows 4, 0, 2 of the table */
    float rows[12];
    memcpy(rows, table + 16, 16);
    memcpy(rows + 4, table, 16);
    memcpy(rows + 8, table + 8, 16);
    /* embed_scale 2 with embeddings: 2x + table[p] is exact in double, so
     * the float32 result is the correctly rounded sum. */
    trng g;
    trng_seed(&g, 21);
    float x[16];
    trng_fill(&g, x, 16, -4, 4);
    int64_t pr[4] = {0, 1, 3, 4};
    float want[16];
    for (int t = 0; t < 4; t++)
        for (int j = 0; j < 4; j++) {
            float tv = table[pr[t] * 4 + j];
            /* the table holds values up to 3.4e38: 2x + t may overflow only
             * if t is huge; rows 0..4 hold FLT_MAX in row 0, column 3 */
            want[t * 4 + j] = (float)(2.0L * (long double)x[t * 4 + j] + (long double)tv);
        }
    const encode_case cases[] = {
        {.name = "POST /encode learned inline model bare [5,4]",
         .head = model.s,
         .tail = "\"shape\":[5,4]",
         .ndim = 2,
         .shape = {5, 4},
         .what = "table rows echoed",
         .want_exact = table,
         .meta_scheme = "learned"},
        {.name = "POST /encode learned positions [4,0,2]",
         .head = model.s,
         .tail = "\"shape\":[3,4],\"positions\":[4,0,2]",
         .ndim = 2,
         .shape = {3, 4},
         .what = "rows 4,0,2",
         .want_exact = rows},
        {.name = "POST /encode learned embeddings batch [2,2,4] embed_scale 2 per-row positions",
         .head = model.s,
         .input = ENC_JSON,
         .x = x,
         .tail = "\"embed_scale\":2,\"positions\":[[0,1],[3,4]]",
         .ndim = 3,
         .shape = {2, 2, 4},
         .what = "2x + table[p]",
         .want_exact = want},
    };
    RUN_ENCODE_CASES(s, cases);

    /* Past the table: 422 out_of_range naming the position and the limit. */
    sbuf past_end, offset_past_end;
    sb_init(&past_end);
    sb_printf(&past_end, "{%s,\"shape\":[2,4],\"positions\":[1,9]}", model.s);
    sb_init(&offset_past_end);
    sb_printf(&offset_past_end, "{%s,\"shape\":[2,4],\"offset\":4}", model.s);
    const http_case errors[] = {
        {.name = "POST /encode learned positions [1,9] with max_positions 5",
         .route = "/encode",
         .body = past_end.s,
         .status = 422,
         .code = "out_of_range",
         .msg_has = "9|5"},
        {.name = "POST /encode learned offset 4 with 2 tokens, max_positions 5",
         .route = "/encode",
         .body = offset_past_end.s,
         .status = 422,
         .code = "out_of_range",
         .msg_has = "5"},
    };
    RUN_HTTP_CASES(s, errors);
    sb_free(&past_end);
    sb_free(&offset_past_end);
    sb_free(&model);
    sb_free(&tb);
}

/* ---------------------------------------------------------------------- */
/* RoPE                                                                    */
/* ---------------------------------------------------------------------- */

static void rope_anchors(const server *s)
{
    static const double h4[] = {-1.413353, 1.879118, -2.828857, 4.058191};
    static const double i4[] = {-1.272233, -1.838865, 2.878668, 4.088187};
    static const double h8[] = {-1.695593, 0.137552, 2.788682, 3.975982,
                                -4.808842, 6.323059, 7.086837, 8.011964};
    static const double i8[] = {-1.272233, -1.838865, 1.683929, 4.707907,
                                4.817777,  6.147278,  6.975969, 8.020964};
    static const double part[] = {-1.413353, 1.879118, -2.828857, 4.058191, 5, 6, 7, 8};
    static const double cache[] = {-0.989992, 0.955336, 0.999550, 0.999996,
                                   0.141120,  0.295520, 0.029996, 0.003000};
    size_t s4[] = {1, 4}, s8[] = {1, 8};
    /* 6-decimal anchors: 5e-7 print rounding + float32 rounding */
    const double tol = 1.2e-6;
    post_compare(s, "/encode", "POST /encode rope half d=4 pos 3 (known vector)",
                 "{\"scheme\":\"rope\",\"embeddings\":[[1,2,3,4]],\"positions\":[3]}", "encoded", 2,
                 s4, h4, tol, 0);
    post_compare(s, "/encode", "POST /encode rope interleaved d=4 pos 3 (known vector)",
                 "{\"scheme\":\"rope\",\"params\":{\"layout\":\"interleaved\"},"
                 "\"embeddings\":[[1,2,3,4]],\"offset\":3}",
                 "encoded", 2, s4, i4, tol, 0);
    post_compare(s, "/encode", "POST /encode rope half d=8 pos 3 (known vector)",
                 "{\"scheme\":\"rope\",\"params\":{\"layout\":\"half\"},"
                 "\"embeddings\":[[1,2,3,4,5,6,7,8]],\"positions\":[3]}",
                 "encoded", 2, s8, h8, tol, 0);
    post_compare(s, "/encode", "POST /encode rope interleaved d=8 pos 3 (known vector)",
                 "{\"scheme\":\"rope\",\"params\":{\"layout\":\"interleaved\"},"
                 "\"embeddings\":[[1,2,3,4,5,6,7,8]],\"positions\":[3]}",
                 "encoded", 2, s8, i8, tol, 0);
    post_compare(s, "/encode",
                 "POST /encode rope partial_rotary_factor 0.5 d=8 pos 3 (known vector)",
                 "{\"scheme\":\"rope\",\"params\":{\"partial_rotary_factor\":0.5},"
                 "\"embeddings\":[[1,2,3,4,5,6,7,8]],\"positions\":[3]}",
                 "encoded", 2, s8, part, tol, 0);
    post_compare(s, "/encode", "POST /encode rope bare d=8 pos 3 (known vLLM cos_sin_cache vector)",
                 "{\"scheme\":\"rope\",\"shape\":[1,8],\"positions\":[3]}", "encoded", 2, s8, cache,
                 tol, 0);
}

/* "positions" value: one list of t (pos), or with per_row one list per
 * row of the batch (pos holds batch * t). */
static void put_positions(sbuf *b, const int64_t *pos, size_t batch, size_t t, bool per_row)
{
    if (!per_row) {
        sb_iarray(b, pos, t);
        return;
    }
    sb_puts(b, "[");
    for (size_t r = 0; r < batch; r++) {
        if (r)
            sb_puts(b, ",");
        sb_iarray(b, pos + r * t, t);
    }
    sb_puts(b, "]");
}

/* Rope /encode with random embeddings (or a bare table when x is NULL)
 * against the complex-multiplication reference. */
static void rope_case(const server *s, const char *label, const ref_rope_cfg *c,
                      const char *params_json, const float *x, int ndim, const size_t *shape,
                      const int64_t *pos, bool per_row, const char *extra)
{
    size_t width = shape[ndim - 1], t = shape[ndim - 2];
    size_t batch = ndim == 3 ? shape[0] : 1;
    size_t n = batch * t * width;
    sbuf b;
    sb_init(&b);
    sb_printf(&b, "{\"scheme\":\"rope\",\"params\":%s", params_json);
    if (x) {
        sb_puts(&b, ",\"embeddings\":");
        sb_farray(&b, x, ndim, shape);
    } else {
        sb_printf(&b, ",\"shape\":[%zu,%zu", shape[0], shape[1]);
        if (ndim == 3)
            sb_printf(&b, ",%zu", shape[2]);
        sb_puts(&b, "]");
    }
    sb_puts(&b, ",\"positions\":");
    put_positions(&b, pos, batch, t, per_row);
    if (extra)
        sb_puts(&b, extra);
    sb_puts(&b, "}");
    double *want = xmalloc(n * sizeof *want);
    double *xd = x ? xmalloc(n * sizeof *xd) : NULL;
    if (x)
        ref_widen(x, n, xd);
    for (size_t r = 0; r < batch; r++)
        ref_rope(c, xd ? xd + r * t * width : NULL, pos + (per_row ? r * t : 0), t, width,
                 want + r * t * width);
    post_compare(s, "/encode", label, b.s, "encoded", ndim, shape, want, ABS_ONCE, ULPS_ONCE);
    free(xd);
    free(want);
    sb_free(&b);
}

static void rope_general(const server *s)
{
    trng g;
    trng_seed(&g, 31);
    float x[4 * 16];
    trng_fill(&g, x, 64, -2, 2);

    int64_t pos4[] = {0, 5, 17, 1000};
    size_t sh12[] = {4, 12};
    ref_rope_cfg c = {.base = 10000, .head_dim = 4, .rotary_dim = 4};
    rope_case(s, "POST /encode rope half d=12 head_dim 4 positions [0,5,17,1000]", &c,
              "{\"head_dim\":4}", x, 2, sh12, pos4, false, NULL);
    c.interleaved = true;
    rope_case(s, "POST /encode rope interleaved d=12 head_dim 4", &c,
              "{\"head_dim\":4,\"layout\":\"interleaved\"}", x, 2, sh12, pos4, false, NULL);

    /* rotary_dim 4 of head_dim 8: channels 4..7 of each head pass through */
    size_t sh16[] = {4, 16};
    c = (ref_rope_cfg){.base = 10000, .head_dim = 8, .rotary_dim = 4};
    rope_case(s, "POST /encode rope half d=16 head_dim 8 rotary_dim 4", &c,
              "{\"head_dim\":8,\"rotary_dim\":4}", x, 2, sh16, pos4, false, NULL);
    rope_case(s, "POST /encode rope half d=16 head_dim 8 partial_rotary_factor 0.5", &c,
              "{\"head_dim\":8,\"partial_rotary_factor\":0.5}", x, 2, sh16, pos4, false, NULL);
    c.interleaved = true;
    rope_case(s, "POST /encode rope interleaved d=16 head_dim 8 rotary_dim 4", &c,
              "{\"head_dim\":8,\"rotary_dim\":4,\"layout\":\"interleaved\"}", x, 2, sh16, pos4,
              false, NULL);
    /* pass-through channels bit for bit */
    {
        const char *L = "POST /encode rope d=16 head_dim 8 rotary_dim 4: pass-through exact";
        sbuf b;
        sb_init(&b);
        sb_puts(&b, "{\"scheme\":\"rope\",\"params\":{\"head_dim\":8,\"rotary_dim\":4},"
                    "\"embeddings\":");
        sb_farray(&b, x, 2, sh16);
        sb_puts(&b, ",\"offset\":12345}");
        farr a;
        if (post_read(s, "/encode", L, b.s, "encoded", 2, sh16, NULL, &a)) {
            float got[32], want[32];
            size_t k = 0;
            for (size_t t = 0; t < 4; t++)
                for (size_t h = 0; h < 2; h++)
                    for (size_t j = 4; j < 8; j++, k++) {
                        got[k] = a.v[t * 16 + h * 8 + j];
                        want[k] = x[t * 16 + h * 8 + j];
                    }
            farr pass = {.v = got, .n = 32, .ndim = 1, .shape = {32}};
            check_exact(L, "channels 4..7 of each head", &pass, want, 32);
            farr_free(&a);
        }
        sb_free(&b);
    }

    /* bare tables: [cos|sin|1..] (half) and [c0,s0,c1,s1|1..] (interleaved) */
    int64_t pos3[] = {0, 3, 1000};
    size_t shb[] = {3, 16};
    c = (ref_rope_cfg){.base = 10000, .head_dim = 8, .rotary_dim = 4};
    rope_case(s, "POST /encode rope bare half [3,16] head_dim 8 rotary_dim 4", &c,
              "{\"head_dim\":8,\"rotary_dim\":4}", NULL, 2, shb, pos3, false, NULL);
    c.interleaved = true;
    rope_case(s, "POST /encode rope bare interleaved [3,16] head_dim 8 rotary_dim 4", &c,
              "{\"head_dim\":8,\"rotary_dim\":4,\"layout\":\"interleaved\"}", NULL, 2, shb, pos3,
              false, NULL);

    /* batch with per-row positions, base 500000 */
    size_t shbt[] = {2, 2, 8};
    int64_t pr[] = {0, 7, 4096, 70000};
    c = (ref_rope_cfg){.base = 500000, .head_dim = 8, .rotary_dim = 8};
    rope_case(s, "POST /encode rope batch [2,2,8] base 5e5 per-row positions", &c,
              "{\"base\":500000}", x, 3, shbt, pr, true, NULL);
    /* embed_scale does not apply to rope */
    c = (ref_rope_cfg){.base = 10000, .head_dim = 8, .rotary_dim = 8};
    rope_case(s, "POST /encode rope [2,8] with embed_scale 3 (ignored by rope)", &c, "{}", x, 2,
              (size_t[]){2, 8}, pr, false, ",\"embed_scale\":3");
    /* long positions */
    int64_t plong[] = {1000000, 2500000};
    rope_case(s, "POST /encode rope [2,8] positions [1e6, 2.5e6]", &c, "{}", x, 2, (size_t[]){2, 8},
              plong, false, NULL);
}

static void rope_scaling(const server *s)
{
    int64_t pos[] = {1, 3, 100, 5000};
    size_t sh[] = {4, 8};
    ref_rope_cfg c = {.base = 10000,
                      .head_dim = 8,
                      .rotary_dim = 8,
                      .scaling = REF_SCALING_LINEAR,
                      .factor = 4};
    rope_case(s, "POST /encode rope bare scaling linear factor 4", &c,
              "{\"scaling\":{\"type\":\"linear\",\"factor\":4}}", NULL, 2, sh, pos, false, NULL);
    c = (ref_rope_cfg){.base = 10000,
                       .head_dim = 8,
                       .rotary_dim = 8,
                       .scaling = REF_SCALING_LLAMA3,
                       .factor = 8,
                       .orig = 1024,
                       .low_freq = 1,
                       .high_freq = 4};
    rope_case(s, "POST /encode rope bare scaling llama3 (factor 8, orig 1024)", &c,
              "{\"scaling\":{\"type\":\"llama3\",\"factor\":8,\"low_freq_factor\":1,"
              "\"high_freq_factor\":4,\"original_max_position_embeddings\":1024}}",
              NULL, 2, sh, pos, false, NULL);
    /* low_freq_factor == high_freq_factor: valid, no smoothed band (contract
     * 1.2): wavelength 2pi stays, 20pi, 200pi and 2000pi are above 64/2 */
    c.orig = 64;
    c.low_freq = c.high_freq = 2;
    rope_case(s, "POST /encode rope bare scaling llama3 with low == high factor (no band)", &c,
              "{\"scaling\":{\"type\":\"llama3\",\"factor\":8,\"low_freq_factor\":2,"
              "\"high_freq_factor\":2,\"original_max_position_embeddings\":64}}",
              NULL, 2, sh, pos, false, NULL);
    int64_t pdyn[] = {1, 4095};
    c = (ref_rope_cfg){.base = 10000,
                       .head_dim = 8,
                       .rotary_dim = 8,
                       .scaling = REF_SCALING_DYNAMIC,
                       .factor = 2,
                       .orig = 2048};
    rope_case(s, "POST /encode rope bare scaling dynamic (factor 2, orig 2048, seq 4096)", &c,
              "{\"scaling\":{\"type\":\"dynamic\",\"factor\":2,"
              "\"original_max_position_embeddings\":2048}}",
              NULL, 2, (size_t[]){2, 8}, pdyn, false, NULL);

    /* yarn: the attention factor multiplies cos and sin and is reported */
    c = (ref_rope_cfg){.base = 10000,
                       .head_dim = 8,
                       .rotary_dim = 8,
                       .scaling = REF_SCALING_YARN,
                       .factor = 4,
                       .orig = 2048,
                       .beta_fast = 32,
                       .beta_slow = 1};
    const char *yarn = "{\"scaling\":{\"type\":\"yarn\",\"factor\":4,"
                       "\"original_max_position_embeddings\":2048}}";
    rope_case(s, "POST /encode rope bare scaling yarn (factor 4, orig 2048)", &c, yarn, NULL, 2, sh,
              pos, false, NULL);
    {
        const char *L = "POST /encode rope yarn reports attention_factor 1.138629";
        http_resp r;
        http_post_json(s, "/encode",
                       "{\"scheme\":\"rope\",\"shape\":[1,8],\"params\":{\"scaling\":{\"type\":"
                       "\"yarn\",\"factor\":4,\"original_max_position_embeddings\":2048}}}",
                       &r);
        if (expect_ok(L, &r)) {
            json_t *af = json_object_get(r.json, "attention_factor");
            double want = 0.1 * log(4.0) + 1.0;
            CHECK(json_is_number(af) && fabs(json_number_value(af) - want) < 1e-6, L,
                  "attention_factor %g, want %.7f", json_is_number(af) ? json_number_value(af) : -1,
                  want);
        }
        http_resp_free(&r);
    }
    /* longrope: short factors until the largest position + 1 passes orig */
    static const long double sf[] = {1, 1.5L, 2, 4}, lf[] = {2, 3, 5, 8};
    c = (ref_rope_cfg){.base = 10000,
                       .head_dim = 8,
                       .rotary_dim = 8,
                       .scaling = REF_SCALING_LONGROPE,
                       .factor = 32,
                       .orig = 4096,
                       .short_f = sf,
                       .long_f = lf};
    const char *lr = "{\"scaling\":{\"type\":\"longrope\",\"factor\":32,"
                     "\"original_max_position_embeddings\":4096,"
                     "\"short_factor\":[1,1.5,2,4],\"long_factor\":[2,3,5,8]}}";
    int64_t pshort[] = {1, 100}, plong[] = {1, 5000};
    rope_case(s, "POST /encode rope bare longrope short factors (max pos 100)", &c, lr, NULL, 2,
              (size_t[]){2, 8}, pshort, false, NULL);
    rope_case(s, "POST /encode rope bare longrope long factors (max pos 5000)", &c, lr, NULL, 2,
              (size_t[]){2, 8}, plong, false, NULL);
}

/* ---------------------------------------------------------------------- */
/* ALiBi                                                                   */
/* ---------------------------------------------------------------------- */

static void alibi_case(const server *s, const char *label, size_t heads, bool bloom, size_t batch,
                       size_t t, const int64_t *pos, bool per_row)
{
    sbuf b;
    sb_init(&b);
    sb_printf(&b, "{\"scheme\":\"alibi\",\"params\":{\"heads\":%zu%s},", heads,
              bloom ? ",\"form\":\"bloom\"" : "");
    if (batch > 1)
        sb_printf(&b, "\"shape\":[%zu,%zu,2],\"positions\":", batch, t);
    else
        sb_printf(&b, "\"shape\":[%zu,2],\"positions\":", t);
    put_positions(&b, pos, batch, t, per_row);
    sb_puts(&b, "}");
    size_t per = heads * t * t;
    double *want = xmalloc(batch * per * sizeof *want);
    for (size_t r = 0; r < batch; r++)
        ref_alibi_bias(heads, bloom, pos + (per_row ? r * t : 0), t, want + r * per);
    size_t shape[4];
    int nd = 0;
    if (batch > 1)
        shape[nd++] = batch;
    shape[nd++] = heads;
    shape[nd++] = t;
    shape[nd++] = t;
    http_resp r;
    farr a;
    if (post_read(s, "/encode", label, b.s, "bias", nd, shape, &r, &a)) {
        check_close(label, "bias", &a, want, batch * per, ABS_ONCE, ULPS_ONCE);
        CHECK(json_object_get(r.json, "encoded") == NULL, label,
              "alibi response should carry bias instead of encoded");
        farr_free(&a);
    }
    http_resp_free(&r);
    free(want);
    sb_free(&b);
}

static void alibi(const server *s)
{
    /* Known vector: BLOOM head 0 over keys 0..3 is [0, 0.5, 1, 1.5]; the paper
     * form for query 3 is [-1.5, -1, -0.5, 0]. */
    {
        const char *L = "POST /encode alibi 8 heads bloom [4,2] (known vector)";
        size_t sh[] = {8, 4, 4};
        farr a;
        if (post_read(s, "/encode", L,
                      "{\"scheme\":\"alibi\",\"params\":{\"heads\":8,\"form\":\"bloom\"},"
                      "\"shape\":[4,2]}",
                      "bias", 3, sh, NULL, &a)) {
            static const double want[] = {0, 0.5, 1.0, 1.5};
            farr row = {.v = a.v + 2 * 4, .n = 4, .ndim = 1, .shape = {4}}; /* h0, query 2 */
            check_close(L, "head 0 keys 0..3", &row, want, 4, 0, 0);
            farr_free(&a);
        }
        L = "POST /encode alibi 8 heads symmetric [4,2] (known vector)";
        if (post_read(s, "/encode", L,
                      "{\"scheme\":\"alibi\",\"params\":{\"heads\":8},\"shape\":[4,2]}", "bias", 3,
                      sh, NULL, &a)) {
            static const double want[] = {-1.5, -1.0, -0.5, 0};
            farr row = {.v = a.v + 3 * 4, .n = 4, .ndim = 1, .shape = {4}}; /* h0, query 3 */
            check_close(L, "head 0 query 3", &row, want, 4, 0, 0);
            farr_free(&a);
        }
    }
    int64_t p4[] = {0, 3, 1, 10};
    alibi_case(s, "POST /encode alibi 8 heads symmetric positions [0,3,1,10]", 8, false, 1, 4, p4,
               false);
    alibi_case(s, "POST /encode alibi 6 heads bloom positions [0,3,1,10]", 6, true, 1, 4, p4,
               false);
    alibi_case(s, "POST /encode alibi 12 heads symmetric positions [0,3,1,10]", 12, false, 1, 4, p4,
               false);
    alibi_case(s, "POST /encode alibi 12 heads bloom positions [0,3,1,10]", 12, true, 1, 4, p4,
               false);
    int64_t pb[] = {0, 1, 2, 5, 9, 20};
    alibi_case(s, "POST /encode alibi 6 heads symmetric batch [2,3,2] per-row positions", 6, false,
               2, 3, pb, true);
    alibi_case(s, "POST /encode alibi 12 heads bloom batch [2,3,2] per-row positions", 12, true, 2,
               3, pb, true);
    alibi_case(s, "POST /encode alibi 8 heads symmetric batch [2,3,2] shared positions", 8, false,
               2, 3, pb + 3, false);
}

/* ---------------------------------------------------------------------- */
/* T5                                                                      */
/* ---------------------------------------------------------------------- */

static void t5_case(const server *s, const char *label, int num_buckets, int max_distance,
                    bool bidir, const char *model_params, const char *req_params,
                    const int64_t *pos, size_t t)
{
    size_t heads = 2;
    float *table = xmalloc((size_t)num_buckets * heads * sizeof *table);
    for (int bk = 0; bk < num_buckets; bk++)
        for (size_t h = 0; h < heads; h++)
            table[(size_t)bk * heads + h] = (float)bk + 0.25f * (float)h + 0.1f;
    size_t tsh[] = {(size_t)num_buckets, heads};
    sbuf tb;
    sb_init(&tb);
    sb_puts(&tb, "\"t5_bias\":");
    sb_farray(&tb, table, 2, tsh);
    sbuf model;
    sb_init(&model);
    inline_model4(&model, "t5", model_params, tb.s);
    sbuf b;
    sb_init(&b);
    sb_printf(&b, "{\"model\":%s,\"shape\":[%zu,4],\"positions\":", model.s, t);
    sb_iarray(&b, pos, t);
    if (req_params)
        sb_printf(&b, ",\"params\":%s", req_params);
    sb_puts(&b, "}");
    float *want = xmalloc(heads * t * t * sizeof *want);
    ref_t5_bias(table, num_buckets, heads, max_distance, bidir, pos, t, want);
    size_t sh[] = {heads, t, t};
    http_resp r;
    farr a;
    if (post_read(s, "/encode", label, b.s, "bias", 3, sh, &r, &a)) {
        check_exact(label, "bias (table entries)", &a, want, heads * t * t);
        check_encode_meta(label, &r, "t5", 2, (size_t[]){t, 4});
        farr_free(&a);
    }
    http_resp_free(&r);
    free(want);
    free(table);
    sb_free(&b);
    sb_free(&model);
    sb_free(&tb);
}

static void t5(const server *s)
{
    /* relative distances of the known vectors: 0..±200 */
    int64_t pos[] = {0, 1, 8, 12, 16, 23, 32, 64, 91, 128, 200, 7};
    size_t t = sizeof pos / sizeof pos[0];
    t5_case(s, "POST /encode t5 inline model, default (bidirectional) buckets", 32, 128, true, NULL,
            NULL, pos, t);
    t5_case(s, "POST /encode t5 bidirectional false (request params)", 32, 128, false, NULL,
            "{\"bidirectional\":false}", pos, t);
    t5_case(s, "POST /encode t5 model params bidirectional false", 32, 128, false,
            "{\"bidirectional\":false}", NULL, pos, t);
    t5_case(s, "POST /encode t5 num_buckets 16 max_distance 64", 16, 64, true,
            "{\"num_buckets\":16,\"max_distance\":64}", NULL, pos, t);
}

/* ---------------------------------------------------------------------- */
/* none, and the exact float32 round trip                                   */
/* ---------------------------------------------------------------------- */

/* The first characters of the "encoded" value as written, white space
 * left out (at most n - 1 of them). */
static void encoded_text_start(const http_resp *r, char *buf, size_t n)
{
    const char *p = r->body ? strstr(r->body, "\"encoded\"") : NULL;
    size_t k = 0;
    if (p) {
        p = strchr(p, ':');
        for (p = p ? p + 1 : ""; *p && k + 1 < n; p++)
            if (*p != ' ' && *p != '\n' && *p != '\t' && *p != '\r')
                buf[k++] = *p;
    }
    buf[k] = '\0';
}

static void none_and_roundtrip(const server *s)
{
    static const float zeros[6] = {0};
    /* decimal input reads as the nearest float32 */
    static const float nearest[] = {0.1f, 3.0f, 1e-45f, 0.333333343f};
    const encode_case cases[] = {
        {.name = "POST /encode none bare [2,3]",
         .head = "\"scheme\":\"none\",\"shape\":[2,3]",
         .ndim = 2,
         .shape = {2, 3},
         .what = "zeros",
         .want_exact = zeros,
         .meta_scheme = "none"},
        {.name = "POST /encode none decimal input rounding",
         .head = "\"scheme\":\"none\",\"embeddings\":[[0.10000000149011612,3,1.4e-45,"
                 "0.33333333333333333333]]",
         .ndim = 2,
         .shape = {1, 4},
         .what = "nearest float32",
         .want_exact = nearest},
        /* base64 in, none: exact */
        {.name = "POST /encode none base64 in, base64 out: bytes echoed",
         .head = "\"scheme\":\"none\",\"encoding\":\"base64\",\"shape\":[2,10]",
         .input = ENC_BASE64,
         .x = SPECIAL,
         .ndim = 2,
         .shape = {2, 10},
         .what = "echo",
         .want_exact = SPECIAL},
        {.name = "POST /encode none batch [2,2,5] echo",
         .head = "\"scheme\":\"none\"",
         .input = ENC_JSON,
         .x = SPECIAL,
         .ndim = 3,
         .shape = {2, 2, 5},
         .what = "echo",
         .want_exact = SPECIAL},
    };
    RUN_ENCODE_CASES(s, cases);

    /* Every input float comes back bit-identical (embed_scale does not
     * apply to none), and 0.1f is written "0.1", the shortest text that
     * reads back. */
    const char *L = "POST /encode none echoes special floats exactly (embed_scale 2 ignored)";
    size_t shx[] = {2, NSPECIAL / 2};
    sbuf b;
    sb_init(&b);
    sb_puts(&b, "{\"scheme\":\"none\",\"embed_scale\":2,\"embeddings\":");
    sb_farray(&b, SPECIAL, 2, shx);
    sb_puts(&b, "}");
    http_resp r;
    farr a;
    if (post_read(s, "/encode", L, b.s, "encoded", 2, shx, &r, &a)) {
        check_exact(L, "echo", &a, SPECIAL, NSPECIAL);
        char compact[16];
        encoded_text_start(&r, compact, 9);
        CHECK(strncmp(compact, "[[0.1,", 6) == 0, L, "0.1f should be written 0.1, got \"%s...\"",
              compact);
        farr_free(&a);
    }
    http_resp_free(&r);
    sb_free(&b);
}

void test_encode(const server *s)
{
    sinusoidal_anchors(s);
    sinusoidal_bare(s, 5, 8, false, 10000, 0);
    sinusoidal_bare(s, 4, 7, false, 10000, 3);
    sinusoidal_bare(s, 4, 7, true, 10000, 3);
    sinusoidal_bare(s, 3, 5, true, 10000, 100);
    sinusoidal_bare(s, 3, 1, false, 10000, 2);
    sinusoidal_bare(s, 5, 6, false, 500, 10);
    sinusoidal_bare(s, 5, 6, true, 500, 10);
    sinusoidal_bare(s, 2, 32, false, 10000, 65535);
    sinusoidal_embeddings(s);
    sinusoidal_base64(s);
    sinusoidal_long_positions(s);
    learned(s);
    rope_anchors(s);
    rope_general(s);
    rope_scaling(s);
    alibi(s);
    t5(s);
    none_and_roundtrip(s);
}
