/*
 * test_api.c - tests of the api/ layer without any network: the number
 * writer, base64, and request handlers called directly (as h2o's t/00unit
 * tests its handlers). The HTTP suite covers the same behaviour through the
 * real server; these pin down the pieces it relies on.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "api.h"
#include "json/base64.h"
#include "json/json_doc.h"
#include "json/tensor.h"
#include "json/float_text.h"
#include "json/strbuf.h"
#include "test_codecs.h"
#include "test_list.h"
#include "test_request_path.h"

/* Reference for the shortest digits: try every precision from 1 up with
 * "%.*g" and keep the first that reads back. (float_to_text searches by
 * bisection in scientific notation; this is the plain linear definition.) */
static int shortest_digits(float v)
{
    char buf[64];
    for (int p = 1; p <= 9; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, (double)v);
        if (strtof(buf, NULL) == v)
            return p;
    }
    return 99;
}

static int significant_digits(const char *text)
{
    int n = 0, leading = 1, trailing_zeros = 0;
    for (const char *p = text; *p && *p != 'e'; p++) {
        if (*p < '0' || *p > '9')
            continue;
        if (leading && *p == '0')
            continue;
        leading = 0;
        n++;
        trailing_zeros = *p == '0' ? trailing_zeros + 1 : 0;
    }
    /* "100" has one significant digit: trailing zeros before the point are
     * placeholders */
    return n - trailing_zeros > 0 ? n - trailing_zeros : 1;
}

void test_float_text(void)
{
    uint64_t state = 42;
    char text[FLOAT_TEXT_MAX];
    int bad_roundtrip = 0, not_shortest = 0, not_json = 0;
    static const struct {
        float v;
        const char *want;
    } known[] = {{0.1f, "0.1"},
                 {1.0f, "1"},
                 {-2.5f, "-2.5"},
                 {1e-7f, "1e-7"},
                 {3e38f, "3e38"},
                 {123456.0f, "123456"},
                 {0.0f, "0"},
                 {-0.0f, "-0"},
                 {16777216.0f, "16777216"},
                 {1.17549435e-38f, "1.1754944e-38"},
                 {0.84147096f, "0.84147096"}};

    for (size_t i = 0; i < ARRAY_LEN(known); i++) {
        float_to_text(known[i].v, text);
        CHECK(strcmp(text, known[i].want) == 0, "float_to_text(%.9g) = %s, want %s",
              (double)known[i].v, text, known[i].want);
    }
    for (int i = 0; i < 200000; i++) {
        /* random bit patterns cover every exponent; skip non-finite ones */
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        uint32_t bits = (uint32_t)(state >> 32);
        float v;
        memcpy(&v, &bits, sizeof v);
        if (!isfinite(v))
            continue;
        float_to_text(v, text);
        float back = strtof(text, NULL);
        if (memcmp(&back, &v, sizeof v) != 0 && !(v == 0 && back == 0))
            bad_roundtrip++;
        if (v != 0 && significant_digits(text) > shortest_digits(v))
            not_shortest++;
        json_error_t jerr;
        json_t *parsed = json_loads(text, JSON_DECODE_ANY, &jerr);
        if (!json_is_number(parsed))
            not_json++;
        json_decref(parsed);
    }
    CHECK(bad_roundtrip == 0, "%d floats did not read back exactly", bad_roundtrip);
    CHECK(not_shortest == 0, "%d floats were written with more digits than needed", not_shortest);
    CHECK(not_json == 0, "%d texts are not JSON numbers", not_json);
}

void test_base64(void)
{
    static const struct {
        const char *text;
        const char *plain;
    } vectors[] = {{"", ""},
                   {"Zg==", "f"},
                   {"Zm8=", "fo"},
                   {"Zm9v", "foo"},
                   {"Zm9vYg==", "foob"},
                   {"Zm9vYmE=", "fooba"},
                   {"Zm9vYmFy", "foobar"}};
    static const char *const invalid[] = {"Zg=",  "Zg",   "Z===", "Zm9v!A==", "Zg==Zg==",
                                          "=Zg=", "Zh==", "Zm9=", "Zm 9v"};

    for (size_t i = 0; i < ARRAY_LEN(vectors); i++) { /* RFC 4648 section 10 */
        size_t n = 0;
        const char *why = NULL;
        uint8_t *got = base64_decode(vectors[i].text, strlen(vectors[i].text), &n, &why);
        CHECK(got && n == strlen(vectors[i].plain) && memcmp(got, vectors[i].plain, n) == 0,
              "decode %s", vectors[i].text);
        free(got);
        for (size_t split = 0; split <= strlen(vectors[i].plain); split++) {
            char text[16] = {0};
            base64_writer w = {.out = text};
            base64_write(&w, vectors[i].plain, split);
            base64_write(&w, vectors[i].plain + split, strlen(vectors[i].plain) - split);
            base64_finish(&w);
            CHECK(strcmp(text, vectors[i].text) == 0 &&
                      (size_t)(w.out - text) == base64_encoded_len(strlen(vectors[i].plain)),
                  "encode \"%s\" split at %zu gave %s", vectors[i].plain, split, text);
        }
    }
    for (size_t i = 0; i < ARRAY_LEN(invalid); i++) {
        size_t n = 0;
        const char *why = NULL;
        uint8_t *got = base64_decode(invalid[i], strlen(invalid[i]), &n, &why);
        CHECK(got == NULL && why != NULL, "invalid base64 %s accepted", invalid[i]);
        free(got);
    }
}

/* Call a handler on a literal body; returns the parsed response. */
static json_t *call(const api_service *svc, bool apply, const char *body, int *status)
{
    api_response r;
    if (apply)
        api_apply(svc, NULL, body, strlen(body), &r);
    else
        api_encode(svc, NULL, body, strlen(body), &r);
    test_collect(&r, 1000);
    *status = r.status;
    json_t *doc = json_loadb(r.body, r.body_len, 0, NULL);
    api_response_free(&r);
    return doc;
}

static void expect_error(const api_service *svc, bool apply, const char *body, int status,
                         const char *code, const char *field)
{
    int got = 0;
    json_t *doc = call(svc, apply, body, &got);
    const char *got_code = json_string_value(
        json_object_get(json_object_get(doc, "error"), "code"));
    const char *got_field = json_string_value(
        json_object_get(json_object_get(doc, "error"), "field"));
    CHECK(got == status && got_code && strcmp(got_code, code) == 0 &&
              (!field || (got_field && strcmp(got_field, field) == 0)),
          "%s -> %d %s (field %s), want %d %s (field %s)", body, got, got_code ? got_code : "?",
          got_field ? got_field : "-", status, code, field ? field : "-");
    json_decref(doc);
}

void test_json_strings(void)
{
    strbuf sb = {0};
    /* valid UTF-8 passes; a cut sequence, a stray continuation byte, an
     * overlong form and a surrogate become U+FFFD; controls are escaped */
    strbuf_put_json_string(&sb,
                           "a\"\\\n\x01\xc3\xa9\xe2\x82\xac|\xe2\x82|\x80|\xc0\xaf|\xed\xa0\x80");
    const char *want = "\"a\\\"\\\\\\n\\u0001\xc3\xa9\xe2\x82\xac|\\ufffd\\ufffd|\\ufffd|"
                       "\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd\"";
    CHECK(sb.data && strcmp(sb.data, want) == 0, "json string: %s", sb.data);
    json_t *back = json_loads(sb.data ? sb.data : "", JSON_DECODE_ANY, NULL);
    CHECK(json_is_string(back), "json string text parses as JSON");
    json_decref(back);
    strbuf_free(&sb);
}

void test_handlers(void)
{
    api_limits limits = {.max_tokens = 64, .max_output_elements = 4096};
    api_error err;
    api_service *svc = api_service_new(&limits, &err);
    int status = 0;

    CHECK(svc != NULL, "service");
    if (!svc)
        return;
    /* scheme none echoes its input bit for bit, -0.0 and subnormals too */
    api_response r;
    const char *none = "{\"scheme\":\"none\",\"embeddings\":[[-0.0,1e-45,0.1]]}";
    api_encode(svc, NULL, none, strlen(none), &r);
    test_collect(&r, 1000);
    CHECK(r.status == 200 && r.body && strstr(r.body, "[[-0,1e-45,0.1]]") != NULL,
          "scheme none echo: %.*s", (int)r.body_len, r.body);
    api_response_free(&r);
    (void)status;

    expect_error(svc, false, "{\"shape\":[65,4]}", 422, "too_large", "shape");
    expect_error(svc, false, "{\"shape\":[8,1000]}", 422, "too_large", NULL);
    expect_error(svc, false, "[1,2]", 400, "invalid_request", NULL);
    expect_error(svc, false, "{\"shape\":[2,4],\"shape\":[2,4]}", 400, "invalid_json", NULL);
    expect_error(svc, false, "{\"embeddings\":\"AAAA\"}", 400, "invalid_request", "shape");
    expect_error(svc, false, "{\"embeddings\":\"AAAAAAAA\",\"shape\":[1,1]}", 400,
                 "invalid_request", "embeddings"); /* 6 bytes: not whole float32 */
    expect_error(svc, false, "{\"embeddings\":\"AAAAAAAAAAA=\",\"shape\":[1,1]}", 422,
                 "invalid_shape", "embeddings");
    expect_error(svc, false, "{\"embeddings\":\"AACAfw==\",\"shape\":[1,1]}", 422, "non_finite",
                 "embeddings");
    expect_error(svc, false, "{\"embeddings\":[[1,true]]}", 400, "invalid_request",
                 "embeddings[0][1]");
    expect_error(svc, false, "{\"shape\":[2,4],\"positions\":[0,-1]}", 422, "out_of_range",
                 "positions[1]");
    expect_error(svc, false, "{\"shape\":[2,4],\"offset\":9007199254740991}", 422, "too_large",
                 "offset");
    expect_error(svc, false,
                 "{\"shape\":[2,4],\"scheme\":\"rope\",\"params\":{\"scaling\":"
                 "{\"type\":\"yarn\",\"factor\":2}}}",
                 400, "invalid_request", "params.scaling.original_max_position_embeddings");
    expect_error(svc, false, "{\"shape\":[2,4],\"scheme\":\"t5\"}", 422, "invalid_request",
                 "model");
    expect_error(svc, true, "{\"embeddings\":[[1,2]]}", 422, "invalid_shape", "embeddings");
    /* t5 without a table is a 422 even when only q, k, v are asked for */
    expect_error(svc, true,
                 "{\"model\":{\"d_model\":2,\"heads\":1,\"scheme\":\"t5\",\"weights\":"
                 "{\"wq\":[[1,0],[0,1]],\"wk\":[[1,0],[0,1]],\"wv\":[[1,0],[0,1]]}},"
                 "\"embeddings\":[[1,2]],\"return\":[\"q\"]}",
                 422, "invalid_request", "model");
    expect_error(svc, true, "{\"model\":\"nope\",\"embeddings\":[[1,2]]}", 404, "unknown_model",
                 "model");
    expect_error(svc, true, "{\"embeddings\":[[1,2]],\"return\":[\"q\",\"x\"]}", 400,
                 "invalid_request", "return[1]");
    expect_error(svc, true,
                 "{\"model\":{\"d_model\":2,\"heads\":1,\"norm\":{\"type\":\"rmsnorm\"},"
                 "\"weights\":{\"wq\":[[1,0],[0,1]],\"wk\":[[1,0],[0,1]],\"wv\":[[1,0],[0,1]]}},"
                 "\"embeddings\":[[1,2]]}",
                 422, "invalid_request", "model.weights.norm_weight");
    expect_error(svc, true,
                 "{\"model\":{\"d_model\":2,\"heads\":1,\"weights\":{\"wq\":[[1,0],[0,1]],"
                 "\"wk\":[[1,0],[0,1]],\"wv\":[[1,0]]}},\"embeddings\":[[1,2]]}",
                 422, "invalid_shape", "model.weights.wv");
    api_service_free(svc);
}

/* A body with `rows` x `cols` embeddings written by float_to_text, with
 * `extra` spliced in after the first number (to make it irregular). */
static char *big_body(size_t rows, size_t cols, const char *extra, const char *tail, float *values)
{
    strbuf sb = {0};
    uint64_t state = 7;
    char text[FLOAT_TEXT_MAX];

    strbuf_puts(&sb, "{\"scheme\":\"none\",\n \"embeddings\": [");
    for (size_t r = 0; r < rows; r++) {
        strbuf_puts(&sb, r ? ",\n  [" : "[");
        for (size_t c = 0; c < cols; c++) {
            float v = (float)test_uniform(&state, -3.0, 3.0) * (c % 7 == 0 ? 1e-6f : 1.0f);
            if (values)
                values[r * cols + c] = v;
            float_to_text(v, text);
            strbuf_printf(&sb, "%s%s", c ? ", " : "", text);
            if (r == 0 && c == 0 && extra)
                strbuf_puts(&sb, extra);
        }
        strbuf_putc(&sb, ']');
    }
    strbuf_printf(&sb, "]%s}", tail ? tail : "");
    return strbuf_detach(&sb, NULL);
}

/* Decimals of up to 15 digits take the exact fast paths of the array
 * parser: check it against strtof on 1 to 17 digits, exponents from -30 to
 * 30, float midpoints and the ends of the float range. */
/* The float32 values of the body's top-level `key` as the codec reads
 * them (new, caller frees; NULL when the key is not a numeric array). */
static float *doc_floats(const char *body, size_t len, const char *key, size_t *ndim, size_t *dim)
{
    json_doc doc;
    json_codec_error ce;
    json_doc_limits limits = {.max_depth = 32, .max_values = 1 << 18};
    float *values = NULL;
    size_t bad = 0;

    if (json_doc_load(&doc, body, len, &limits, &ce))
        return NULL;
    json_span *span = json_doc_array(&doc, json_object_get(doc.root, key));
    if (span && json_span_take_floats(span, doc.text, &values, &bad) == JSON_READ_OK) {
        *ndim = span->ndim;
        memcpy(dim, span->dim, sizeof span->dim);
    }
    json_doc_free(&doc);
    return values;
}

void test_fast_numbers(void)
{
    enum { N = 4096 };
    static float want[N];
    strbuf sb = {0};
    uint64_t state = 99;

    strbuf_puts(&sb, "{\"embeddings\":[[");
    for (size_t i = 0; i < N; i++) {
        char text[48];
        static const char *const midpoints[] = {
            /* exactly halfway between two floats: ties to even */
            "16777217", "16777219", "-33554434",    "33554438",       "0.5000000298023223876953125",
            "1e-45",    "7e-46",    "3.4028235e38", "1.17549435e-38", "1.1754942e-38"};
        int digits = 1 + (int)test_uniform(&state, 0, 17);
        int exponent = (int)test_uniform(&state, -30, 30);
        double mantissa = test_uniform(&state, -10, 10);
        if (i < ARRAY_LEN(midpoints))
            snprintf(text, sizeof text, "%s", midpoints[i]);
        else if (i % 3 == 0) /* plain notation, as people write by hand */
            snprintf(text, sizeof text, "%.*f", digits % 10, mantissa);
        else
            snprintf(text, sizeof text, "%.*e", digits - 1, mantissa * pow(10, exponent));
        want[i] = strtof(text, NULL);
        strbuf_printf(&sb, "%s%s", i ? "," : "", text);
    }
    strbuf_puts(&sb, "]]}");
    size_t ndim = 0, dim[TENSOR_MAX_NDIM], wrong = 0;
    float *got = doc_floats(sb.data, sb.len, "embeddings", &ndim, dim);
    CHECK(got && ndim == 2 && dim[1] == N, "the codec parsed the numbers");
    for (size_t i = 0; got && i < N; i++)
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0)
            wrong++;
    CHECK(wrong == 0, "%zu of %d numbers differ from strtof", wrong, N);
    free(got);
    strbuf_free(&sb);
}

/* A body whose embeddings are `rows` x 64 floats in base64 (with `shape`
 * unless shape_text is given), optionally damaged at character `damage`. */
static char *base64_body(size_t rows, const char *shape_text, long damage, char with, float *values)
{
    strbuf sb = {0};
    uint64_t state = 11;

    strbuf_puts(&sb, "{\"scheme\":\"none\",\"embeddings\":\"");
    size_t at = sb.len, len = base64_encoded_len(rows * 64 * sizeof(float));
    base64_writer w = {.out = strbuf_reserve(&sb, len)};
    for (size_t i = 0; i < rows * 64; i++) {
        float v = (float)test_uniform(&state, -2.0, 2.0);
        values[i] = v;
        base64_write(&w, &v, sizeof v);
    }
    base64_finish(&w);
    strbuf_advance(&sb, len);
    if (damage >= 0)
        sb.data[at + (size_t)damage] = with;
    strbuf_printf(&sb, "\"%s}", shape_text ? shape_text : "");
    return strbuf_detach(&sb, NULL);
}

void test_fast_base64(void)
{
    api_limits limits = {0};
    api_error err;
    api_service *svc = api_service_new(&limits, &err);
    static float values[32 * 64];
    api_response r;

    if (!svc)
        return;
    char *body = base64_body(32, ",\"shape\":[32,64],\"encoding\":\"base64\"", -1, 0, values);
    api_encode(svc, NULL, body, strlen(body), &r);
    test_collect(&r, 1000);
    CHECK(r.status == 200, "base64 fast path status %d", r.status);
    json_t *doc = json_loadb(r.body, r.body_len, 0, NULL);
    size_t n = 0;
    const char *why = NULL;
    const char *text = json_string_value(json_object_get(doc, "encoded"));
    uint8_t *echo = text ? base64_decode(text, strlen(text), &n, &why) : NULL;
    CHECK(echo && n == sizeof values && memcmp(echo, values, n) == 0,
          "base64 in, base64 out: bit-exact echo");
    free(echo);
    json_decref(doc);
    api_response_free(&r);
    free(body);

    body = base64_body(32, NULL, -1, 0, values);
    expect_error(svc, false, body, 400, "invalid_request", "shape");
    free(body);
    body = base64_body(32, ",\"shape\":[32,64]", 100, '*', values);
    expect_error(svc, false, body, 400, "invalid_request", "embeddings");
    free(body);
    body = base64_body(32, ",\"shape\":[32,63]", -1, 0, values);
    expect_error(svc, false, body, 422, "invalid_shape", "embeddings");
    free(body);
    /* "//////" decodes to 0xFF bytes: the first float is a NaN */
    body = base64_body(32, ",\"shape\":[32,64]", -1, 0, values);
    memset(strstr(body, "embeddings\":\"") + strlen("embeddings\":\""), '/', 6);
    expect_error(svc, false, body, 422, "non_finite", "embeddings");
    free(body);
    api_service_free(svc);
}

/* The fast numeric-array path (json_doc.c) must give exactly what the
 * plain jansson path gives: the same floats, and the same errors. */
void test_fast_arrays(void)
{
    api_limits limits = {0};
    api_error err;
    api_service *svc = api_service_new(&limits, &err);
    float values[40 * 24];
    api_response r;

    if (!svc)
        return;
    char *body = big_body(40, 24, NULL, NULL, values);
    json_error_t jerr;
    size_t ndim = 0, dim[TENSOR_MAX_NDIM];
    float *taken = doc_floats(body, strlen(body), "embeddings", &ndim, dim);
    CHECK(taken && ndim == 2 && dim[0] == 40 && dim[1] == 24, "the codec took the embeddings");
    free(taken);
    api_encode(svc, NULL, body, strlen(body), &r);
    test_collect(&r, 1000);
    json_t *doc = json_loadb(r.body, r.body_len, 0, NULL);
    json_t *enc = json_object_get(doc, "encoded");
    size_t mismatches = 0;
    for (size_t i = 0; i < 40 * 24; i++) {
        json_t *v = json_array_get(json_array_get(enc, i / 24), i % 24);
        if ((float)json_number_value(v) != values[i])
            mismatches++;
    }
    CHECK(r.status == 200 && mismatches == 0, "fast path echo: status %d, %zu mismatches", r.status,
          mismatches);
    json_decref(doc);
    api_response_free(&r);
    free(body);

    static const struct {
        const char *extra, *tail, *code, *field;
    } irregular[] = {
        {", true", NULL, "invalid_request", "embeddings[0][1]"},
        {", 1e39", NULL, "non_finite", "embeddings[0][1]"},
        {", 2", NULL, "invalid_shape", "embeddings[1]"},
        {NULL, ", \"embeddings\": 1", "invalid_json", NULL},
        {NULL, ", \"offset\": \"#posenc-array:0\"", "invalid_request", "offset"},
        {", 01", NULL, "invalid_json", NULL},
        {NULL, ", \"x\": tru", "invalid_json", NULL},
    };
    for (size_t i = 0; i < ARRAY_LEN(irregular); i++) {
        body = big_body(40, 24, irregular[i].extra, irregular[i].tail, NULL);
        expect_error(svc, false, body,
                     irregular[i].code[0] == 'i' && strcmp(irregular[i].code, "invalid_shape") == 0
                         ? 422
                     : strcmp(irregular[i].code, "non_finite") == 0 ? 422
                                                                    : 400,
                     irregular[i].code, irregular[i].field);
        /* jansson's line and column for the broken text, as without the fast path */
        if (strcmp(irregular[i].code, "invalid_json") == 0) {
            char want[64];
            json_t *plain = json_loads(body, JSON_REJECT_DUPLICATES, &jerr);
            json_decref(plain);
            snprintf(want, sizeof want, "line %d column %d", jerr.line, jerr.column);
            api_encode(svc, NULL, body, strlen(body), &r);
            test_collect(&r, 1000);
            CHECK(r.body && strstr(r.body, want) != NULL, "error position: want %s in %.*s", want,
                  (int)r.body_len, r.body);
            api_response_free(&r);
        }
        free(body);
    }
    api_service_free(svc);
}

/* Bodies past 256 KiB take the parallel row parser (json_rows.c): the same
 * values as strtof gives, and irregular arrays fall back to the exact
 * errors of the plain path. */
/* A json_charge that keeps the balance of what the codec holds, and
 * refuses any one take of `refuse` bytes (0: none). */
typedef struct charge_book {
    size_t taken, given, refuse;
} charge_book;

static bool book_take(void *ctx, size_t bytes)
{
    charge_book *b = ctx;
    if (b->refuse && bytes == b->refuse) {
        b->refuse = 0; /* the first such take alone */
        return false;
    }
    b->taken += bytes;
    return true;
}

static void book_give(void *ctx, size_t bytes)
{
    ((charge_book *)ctx)->given += bytes;
}

/* What the codec still holds of the charge once body is loaded (the doc
 * kept, then freed), -1 when it does not load. */
static long long charge_left(const char *body, charge_book *book)
{
    json_doc doc;
    json_codec_error ce;
    json_doc_limits limits = {.max_depth = JSON_MAX_DEPTH,
                              .max_values = 1u << 20,
                              .charge = {.take = book_take, .give = book_give, .ctx = book}};
    if (json_doc_load(&doc, body, strlen(body), &limits, &ce))
        return -1;
    json_doc_free(&doc);
    return (long long)book->taken - (long long)book->given;
}

/* The charges of the codec's buffers: what it hands over stays charged,
 * what it frees itself (a failed parse attempt, the row index, the
 * scanner's string buffer) is given back. */
static void parallel_rows_charges(void)
{
    enum { ROWS = 700, COLS = 48 };
    char *body = big_body(ROWS, COLS, NULL, NULL, NULL);
    charge_book book = {0};
    long long left = charge_left(body, &book);
    CHECK(left == ROWS * COLS * (long long)sizeof(float) && book.given > 0,
          "a big array keeps its values charged, its row index is given back: %zu taken, %zu "
          "given",
          book.taken, book.given);
    /* the row index's first 256 rows (16 bytes each), refused: parsed
     * without it, the values charged as they come */
    book = (charge_book){.refuse = 256 * 16};
    left = charge_left(body, &book);
    CHECK(left >= ROWS * COLS * (long long)sizeof(float) && left < 2 * ROWS * COLS * 4,
          "a refused row index: parsed without it, %lld bytes left charged", left);
    /* a ragged row (one number short) in the middle: both parsers fail
     * and give back what they charged; the array is then built as plain
     * JSON whose rows are numeric arrays of their own, each charged at
     * most the first room of 256 floats */
    char *row = strstr(body + strlen(body) / 2, "\n  [");
    char *comma = row ? strchr(row, ',') : NULL;
    if (comma)
        memset(row + 4, ' ', (size_t)(comma + 1 - (row + 4)));
    book = (charge_book){0};
    left = charge_left(body, &book);
    CHECK(comma && left > 0 && left <= ROWS * 256 * (long long)sizeof(float) &&
              book.taken > (size_t)ROWS * COLS * sizeof(float),
          "a ragged big array gives back what both parsers charged: %zu taken, %zu given",
          book.taken, book.given);
    free(body);
    /* a 100000-character string with an escape: jansson's copy (n + 1)
     * stays charged, the scanner's buffer is given back */
    strbuf sb = {0};
    strbuf_puts(&sb, "{\"s\":\"\\n");
    for (int i = 0; i < 99999; i++)
        strbuf_putc(&sb, 'a');
    strbuf_puts(&sb, "\"}");
    strbuf_putc(&sb, '\0');
    book = (charge_book){0};
    left = charge_left(sb.data, &book);
    CHECK(left == 100001 && book.given > 0,
          "an escaped string of 100000 characters: %zu taken, %zu given", book.taken, book.given);
    strbuf_free(&sb);
}

void test_parallel_rows(void)
{
    enum { ROWS = 700, COLS = 48 };
    static float values[ROWS * COLS];
    api_limits limits = {0};
    api_error err;
    api_service *svc = api_service_new(&limits, &err);

    if (!svc)
        return;
    char *body = big_body(ROWS, COLS, NULL, NULL, values);
    CHECK(strlen(body) > (256u << 10), "the body is big enough for the parallel parser");
    size_t ndim = 0, dim[TENSOR_MAX_NDIM];
    float *got = doc_floats(body, strlen(body), "embeddings", &ndim, dim);
    CHECK(got && ndim == 2 && dim[0] == ROWS && dim[1] == COLS &&
              memcmp(got, values, sizeof values) == 0,
          "parallel rows: shape and bit-exact values");
    free(got);
    free(body);

    /* a short row late in the array, and a bad number in the last row */
    body = big_body(ROWS, COLS, NULL, NULL, values);
    char *last = strrchr(body, '[');
    char *comma = strchr(last, ',');
    memcpy(comma, "]]}", 4); /* the last row now has one number */
    expect_error(svc, false, body, 422, "invalid_shape", "embeddings[699]");
    free(body);
    body = big_body(ROWS, COLS, NULL, NULL, values);
    last = strrchr(body, '[');
    last[1] = 'x';
    expect_error(svc, false, body, 400, "invalid_json", NULL);
    free(body);
    api_service_free(svc);
    parallel_rows_charges();
}

/* Base64 answers past 65536 elements are encoded in parallel chunks
 * (array_writer.c): a dense echo must be bit-exact, and the strided Q, K, V
 * of /apply must equal their JSON rendering number for number. */
void test_parallel_base64_out(void)
{
    enum { ROWS = 900, COLS = 96 }; /* 86400 floats; 900 is not a multiple of 4*3*team */
    static float values[ROWS * 64 > ROWS * COLS ? ROWS * 64 : ROWS * COLS];
    api_limits limits = {0};
    api_error err;
    api_service *svc = api_service_new(&limits, &err);
    api_response r;

    if (!svc)
        return;
    char *body = base64_body(ROWS * COLS / 64, ",\"shape\":[900,96],\"encoding\":\"base64\"", -1, 0,
                             values);
    api_encode(svc, NULL, body, strlen(body), &r);
    test_collect(&r, 1000);
    json_t *doc = json_loadb(r.body, r.body_len, 0, NULL);
    const char *text = json_string_value(json_object_get(doc, "encoded"));
    size_t n = 0;
    const char *why = NULL;
    uint8_t *echo = text ? base64_decode(text, strlen(text), &n, &why) : NULL;
    CHECK(echo && n == ROWS * COLS * sizeof(float) && memcmp(echo, values, n) == 0,
          "parallel base64 writer: bit-exact echo of %d floats", ROWS * COLS);
    free(echo);
    json_decref(doc);
    api_response_free(&r);
    free(body);

    /* 160 tokens of the default model: q is 160 x 512 = 81920 floats, a
     * strided view into the fused projection */
    strbuf sb = {0};
    strbuf_puts(&sb, "{\"return\":[\"q\",\"v\"],\"embeddings\":[");
    for (size_t t = 0; t < 160; t++) {
        strbuf_puts(&sb, t ? ",[" : "[");
        for (size_t j = 0; j < 512; j++)
            strbuf_printf(&sb, "%s%d", j ? "," : "", (int)((t * 7 + j * 3) % 11) - 5);
        strbuf_putc(&sb, ']');
    }
    strbuf_puts(&sb, "]");
    size_t mark = sb.len;
    strbuf_puts(&sb, "}");
    api_response as_json, as_b64;
    api_apply(svc, NULL, sb.data, sb.len, &as_json);
    test_collect(&as_json, 1000);
    sb.len = mark;
    strbuf_puts(&sb, ",\"encoding\":\"base64\"}");
    api_apply(svc, NULL, sb.data, sb.len, &as_b64);
    test_collect(&as_b64, 1000);
    json_t *dj = json_loadb(as_json.body, as_json.body_len, 0, NULL);
    json_t *db = json_loadb(as_b64.body, as_b64.body_len, 0, NULL);
    size_t mismatches = 0, checked = 0;
    for (int k = 0; k < 2; k++) {
        const char *name = k ? "v" : "q";
        const char *b64 = json_string_value(json_object_get(db, name));
        uint8_t *raw = b64 ? base64_decode(b64, strlen(b64), &n, &why) : NULL;
        const float *f = (const float *)(const void *)raw;
        for (size_t i = 0; raw && i < n / 4; i++, checked++) {
            json_t *row = json_array_get(json_object_get(dj, name), i / 512);
            if ((float)json_number_value(json_array_get(row, i % 512)) != f[i])
                mismatches++;
        }
        free(raw);
    }
    CHECK(checked == 2 * 160 * 512 && mismatches == 0,
          "strided base64 q, v equal their JSON text (%zu checked, %zu differ)", checked,
          mismatches);
    json_decref(dj);
    json_decref(db);
    api_response_free(&as_json);
    api_response_free(&as_b64);
    strbuf_free(&sb);
    api_service_free(svc);
}

static const check_group GROUPS[] = {
#define API_GROUP_ENTRY(name, function) {#name, function},
    API_GROUPS(API_GROUP_ENTRY)
#undef API_GROUP_ENTRY
};

/* build/test_api [--list | --dry] [GROUP...] (see check_core.h) */
int main(int argc, char **argv)
{
    return check_main("api", GROUPS, ARRAY_LEN(GROUPS), argc, argv);
}
