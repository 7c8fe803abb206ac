/*
 * test_errors.c - every error row of the contract: status, code, field and
 * message of the JSON error body; then auth (401 before anything, also
 * before 413) and the limits (413 by Content-Length, by chunked body and
 * before the body is read; 422 too_large past --max-tokens), each on its
 * own server instance. After each burst the server must still answer.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cases.h"
#include "refs.h"
#include "tests.h"

/* One JSON POST that must fail: route, body, status, error code, field
 * (see expect_error) and '|'-separated substrings of the message (or
 * NULL). The label is "POST route body". */
#define ERR(route_, body_, status_, code_, field_, msg_has_)                                       \
    {                                                                                              \
        .route = (route_), .body = (body_), .status = (status_), .code = (code_),                  \
        .field = (field_), .msg_has = (msg_has_)                                                   \
    }

/* An identity 2x2 model, for bodies that need an inline model. */
#define W2 "\"wq\":[[1,0],[0,1]],\"wk\":[[1,0],[0,1]],\"wv\":[[1,0],[0,1]]"
#define I4 "[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]]"
#define I43 "[[1,0,0],[0,1,0],[0,0,1],[0,0,0]]"
#define M2(extra) "{\"d_model\":2,\"heads\":1,\"scheme\":\"sinusoidal\",\"weights\":{" W2 extra "}}"

static const http_case CASES[] = {
    /* 400 invalid_json */
    /* the message gives line and column */
    ERR("/encode", "{\n  \"shape\": [2, 4],\n  oops }", 400, "invalid_json", NULL, "line|3|col"),
    ERR("/encode", "", 400, "invalid_json", NULL, NULL),
    ERR("/encode", "{\"shape\":[2,", 400, "invalid_json", NULL, NULL),
    ERR("/apply", "{\"embeddings\":[[1,2]],}", 400, "invalid_json", NULL, NULL),
    ERR("/encode", "{\"shape\":[2,4],\"embed_scale\":NaN}", 400, "invalid_json", NULL, NULL),
    ERR("/encode", "{\"shape\":[2,4]} trailing", 400, "invalid_json", NULL, NULL),
    ERR("/encode", "{\"scheme\":\"\xff\xfe\",\"shape\":[1,2]}", 400, "invalid_json", NULL, NULL),
    /* 400 invalid_request: not an object, unknown fields, wrong types */
    ERR("/encode", "[1,2]", 400, "invalid_request", NULL, NULL),
    ERR("/encode", "null", 400, "invalid_request", NULL, NULL),
    ERR("/encode", "{\"shape\":[2,4],\"foo\":1}", 400, "invalid_request", "foo", "foo"),
    ERR("/encode", "{\"shape\":[2,4],\"params\":{\"bogus\":1}}", 400, "invalid_request",
        "params.bogus", "bogus"),
    ERR("/encode",
        "{\"scheme\":\"rope\",\"shape\":[2,4],\"params\":{\"layout\":\"half\",\"form\":\"bloom\"}}",
        400, "invalid_request", "params.form", NULL),
    ERR("/encode",
        "{\"scheme\":\"rope\",\"shape\":[1,8],\"params\":{\"scaling\":{\"type\":\"linear\","
        "\"factor\":2,\"bogus\":1}}}",
        400, "invalid_request", "params.scaling.bogus", NULL),
    ERR("/apply",
        "{\"embeddings\":[[1,2]],\"model\":{\"d_model\":2,\"heads\":1,\"bogus\":1,\"weights\":{" W2
        "}}}",
        400, "invalid_request", "model.bogus", NULL),
    ERR("/apply", "{\"embeddings\":[[1,2]],\"model\":" M2(",\"bogus\":[1]") "}", 400,
        "invalid_request", "model.weights.bogus", NULL),
    ERR("/encode", "{\"shape\":\"abc\"}", 400, "invalid_request", "shape", NULL),
    ERR("/encode", "{\"shape\":[2,4],\"offset\":\"3\"}", 400, "invalid_request", "offset", NULL),
    ERR("/encode", "{\"shape\":[2,4],\"offset\":1.5}", 400, "invalid_request", "offset", NULL),
    ERR("/encode", "{\"shape\":[2,4],\"embed_scale\":\"x\"}", 400, "invalid_request", "embed_scale",
        NULL),
    ERR("/encode", "{\"shape\":[2,4],\"encoding\":\"hex\"}", 400, "invalid_request", "encoding",
        NULL),
    ERR("/encode", "{\"shape\":[2,4],\"scheme\":\"bogus\"}", 400, "invalid_request", "scheme",
        NULL),
    ERR("/encode", "{\"shape\":[2,4],\"scheme\":5}", 400, "invalid_request", "scheme", NULL),
    ERR("/encode", "{\"shape\":[2,4],\"params\":[]}", 400, "invalid_request", "params", NULL),
    ERR("/encode", "{\"shape\":[2,4],\"params\":{\"layout\":\"diagonal\"}}", 400, "invalid_request",
        "params.layout", NULL),
    ERR("/encode", "{\"shape\":[2,4],\"params\":{\"base\":\"x\"}}", 400, "invalid_request",
        "params.base", NULL),
    ERR("/encode",
        "{\"scheme\":\"rope\",\"shape\":[1,8],\"params\":{\"scaling\":{\"type\":\"yarn\","
        "\"factor\":\"big\",\"original_max_position_embeddings\":2048}}}",
        400, "invalid_request", "params.scaling.factor", NULL),
    ERR("/encode", "{\"embeddings\":true}", 400, "invalid_request", "embeddings", NULL),
    ERR("/encode", "{\"embeddings\":[[1,\"a\"]]}", 400, "invalid_request",
        "embeddings|embeddings[0][1]", NULL),
    ERR("/encode", "{\"embeddings\":[[1,true]]}", 400, "invalid_request",
        "embeddings|embeddings[0][1]", NULL),
    ERR("/encode", "{\"embeddings\":[[1,null]]}", 400, "invalid_request",
        "embeddings|embeddings[0][1]", NULL),
    ERR("/encode", "{\"shape\":[2,4],\"positions\":[0,1.5]}", 400, "invalid_request",
        "positions|positions[1]", NULL),
    ERR("/apply", "{\"embeddings\":[[1,2]],\"model\":" M2("") ",\"return\":\"q\"}", 400,
        "invalid_request", "return", NULL),
    ERR("/apply", "{\"embeddings\":[[1,2]],\"model\":" M2("") ",\"return\":[\"q\",\"x\"]}", 400,
        "invalid_request", "return[1]|return", NULL),
    ERR("/apply", "{\"embeddings\":[[1,2]],\"model\":5}", 400, "invalid_request", "model", NULL),
    ERR("/apply", "{\"model\":" M2(",\"token_embedding\":[[1,0],[0,1]]") ",\"token_ids\":\"abc\"}",
        400, "invalid_request", "token_ids", NULL),
    ERR("/apply", "{\"model\":" M2(",\"token_embedding\":[[1,0],[0,1]]") ",\"token_ids\":[0,1.5]}",
        400, "invalid_request", "token_ids|token_ids[1]", NULL),
    ERR("/apply",
        "{\"model\":{\"d_model\":\"2\",\"heads\":1,\"weights\":{" W2 "}},\"embeddings\":[[1,2]]}",
        400, "invalid_request", "model.d_model", NULL),
    /* 400 invalid_request: missing fields */
    ERR("/encode", "{}", 400, "invalid_request", "shape|embeddings", NULL),
    ERR("/apply", "{}", 400, "invalid_request", "embeddings|token_ids", NULL),
    ERR("/apply", "{\"embeddings\":[[1,2]],\"model\":{\"heads\":1,\"weights\":{" W2 "}}}", 400,
        "invalid_request", "model.d_model", "d_model"),
    ERR("/apply", "{\"embeddings\":[[1,2]],\"model\":{\"d_model\":2,\"weights\":{" W2 "}}}", 400,
        "invalid_request", "model.heads", "heads"),
    ERR("/encode",
        "{\"scheme\":\"rope\",\"shape\":[1,8],\"params\":{\"scaling\":{\"type\":\"yarn\","
        "\"factor\":4}}}",
        400, "invalid_request", "params.scaling.original_max_position_embeddings",
        "original_max_position_embeddings"),
    /* 400 invalid_request: base64 */
    ERR("/encode", "{\"embeddings\":\"AACAPwAAAEA=\"}", 400, "invalid_request", "shape", NULL),
    ERR("/encode", "{\"embeddings\":\"AACAPwAA*EA=\",\"shape\":[1,2]}", 400, "invalid_request",
        "embeddings", NULL),
    ERR("/encode", "{\"embeddings\":\"AACAPwAAAEA\",\"shape\":[1,2]}", 400, "invalid_request",
        "embeddings", NULL),
    ERR("/encode", "{\"embeddings\":\"AACA=wAAAEA=\",\"shape\":[1,2]}", 400, "invalid_request",
        "embeddings", NULL),
    ERR("/encode", "{\"embeddings\":\"AACAPw-_AEA=\",\"shape\":[1,2]}", 400, "invalid_request",
        "embeddings", NULL),
    ERR("/encode", "{\"embeddings\":\"AAA=\",\"shape\":[1,1]}", 400, "invalid_request",
        "embeddings", NULL),
    ERR("/encode", "{\"embeddings\":\"AACAPwAA\",\"shape\":[1,1]}", 400, "invalid_request",
        "embeddings", NULL),
    ERR("/apply",
        "{\"embeddings\":[[1,2]],\"model\":{\"d_model\":2,\"heads\":1,\"weights\":{"
        "\"wq\":\"AAA*\",\"wq_shape\":[2,2],\"wk\":[[1,0],[0,1]],\"wv\":[[1,0],[0,1]]}}}",
        400, "invalid_request", "model.weights.wq", NULL),
    /* offset with positions */
    ERR("/encode", "{\"shape\":[2,4],\"offset\":1,\"positions\":[0,1]}", 400, "invalid_request",
        "offset|positions", NULL),
    /* 404 unknown_model */
    ERR("/apply", "{\"embeddings\":[[1,2]],\"model\":\"nosuch\"}", 404, "unknown_model", "model",
        "nosuch"),
    ERR("/encode", "{\"shape\":[1,2],\"model\":\"nosuch\"}", 404, "unknown_model", "model",
        "nosuch"),
    /* 422 invalid_shape */
    ERR("/encode", "{\"embeddings\":[[1,2],[3]]}", 422, "invalid_shape", "embeddings[1]", NULL),
    ERR("/encode", "{\"embeddings\":[[[1,2],[3,4]],[[5,6]]]}", 422, "invalid_shape",
        "embeddings[1]", NULL),
    ERR("/encode", "{\"embeddings\":[[1,2],[3,4]],\"shape\":[2,3]}", 422, "invalid_shape",
        "embeddings", NULL),
    ERR("/encode", "{\"embeddings\":\"AACAPwAAAEA=\",\"shape\":[1,3]}", 422, "invalid_shape",
        "embeddings", NULL),
    ERR("/encode", "{\"embeddings\":[1,2,3]}", 422, "invalid_shape", "embeddings", NULL),
    ERR("/encode", "{\"shape\":[1,1,1,1]}", 422, "invalid_shape", "shape", NULL),
    ERR("/encode", "{\"shape\":[0,4]}", 422, "invalid_shape", "shape", NULL),
    ERR("/encode", "{\"scheme\":\"rope\",\"shape\":[2,6],\"params\":{\"head_dim\":4}}", 422,
        "invalid_shape", "params.head_dim", NULL),
    ERR("/encode",
        "{\"scheme\":\"rope\",\"shape\":[2,8],\"params\":{\"head_dim\":8,\"rotary_dim\":3}}", 422,
        "invalid_shape", "params.rotary_dim", NULL),
    ERR("/encode",
        "{\"scheme\":\"rope\",\"shape\":[2,8],\"params\":{\"head_dim\":4,\"rotary_dim\":6}}", 422,
        "invalid_shape", "params.rotary_dim", NULL),
    ERR("/encode", "{\"shape\":[3,4],\"positions\":[0,1]}", 422, "invalid_shape", "positions",
        NULL),
    ERR("/encode", "{\"shape\":[2,2,4],\"positions\":[[0,1],[0,1],[0,1]]}", 422, "invalid_shape",
        "positions", NULL),
    ERR("/apply", "{\"embeddings\":[[1,2,3,4]]}", 422, "invalid_shape", "embeddings", "512"),
    ERR("/apply",
        "{\"embeddings\":[[1,2,3,4]],\"model\":{\"d_model\":4,\"heads\":3,"
        "\"weights\":{\"wq\":" I4 ",\"wk\":" I4 ",\"wv\":" I4 "}}}",
        422, "invalid_shape", "model.heads", NULL),
    ERR("/apply",
        "{\"embeddings\":[[1,2,3,4]],\"model\":{\"d_model\":4,\"heads\":4,\"kv_heads\":3,"
        "\"weights\":{\"wq\":" I4 ",\"wk\":" I43 ",\"wv\":" I43 "}}}",
        422, "invalid_shape", "model.kv_heads", NULL),
    ERR("/apply",
        "{\"embeddings\":[[1,2]],\"model\":{\"d_model\":2,\"heads\":1,\"weights\":{"
        "\"wq\":[[1,0,0],[0,1,0]],\"wk\":[[1,0],[0,1]],\"wv\":[[1,0],[0,1]]}}}",
        422, "invalid_shape", "model.weights.wq", NULL),
    ERR("/apply",
        "{\"embeddings\":[[1,2]],\"model\":{\"d_model\":2,\"heads\":1,\"weights\":{"
        "\"wq\":\"AACAPwAAAEA=\",\"wq_shape\":[2,2],\"wk\":[[1,0],[0,1]],\"wv\":[[1,0],[0,1]]}}}",
        422, "invalid_shape", "model.weights.wq", NULL),
    /* 422 out_of_range */
    ERR("/encode", "{\"shape\":[2,4],\"offset\":-1}", 422, "out_of_range", "offset", NULL),
    ERR("/encode", "{\"shape\":[2,4],\"positions\":[0,-1]}", 422, "out_of_range", "positions[1]",
        NULL),
    ERR("/encode", "{\"shape\":[2,2,4],\"positions\":[[0,1],[-5,1]]}", 422, "out_of_range",
        "positions[1][0]", NULL),
    ERR("/apply", "{\"embeddings\":[[1,2]],\"model\":" M2("") ",\"offset\":-3}", 422,
        "out_of_range", "offset", NULL),
    /* 422 non_finite */
    ERR("/encode", "{\"embeddings\":\"AACAPwAAwH8=\",\"shape\":[1,2]}", 422, "non_finite",
        "embeddings|embeddings[0][1]", NULL),
    ERR("/encode", "{\"embeddings\":\"AACAfwAAAEA=\",\"shape\":[1,2]}", 422, "non_finite",
        "embeddings|embeddings[0][0]", NULL),
    ERR("/encode",
        "{\"embeddings\":\"AACAPwAAAEAAAEBAAACA/w==\",\"shape\":[2,2],\"scheme\":\"none\"}", 422,
        "non_finite", "embeddings|embeddings[1][1]", NULL),
    ERR("/encode", "{\"embeddings\":[[3e38,0]],\"embed_scale\":10}", 422, "non_finite", NULL, NULL),
    ERR("/encode", "{\"embeddings\":[[1e39,0]]}", 422, "non_finite", "embeddings|embeddings[0][0]",
        NULL),
    ERR("/apply",
        "{\"embeddings\":[[1,2]],\"model\":{\"d_model\":2,\"heads\":1,\"weights\":{"
        "\"wq\":\"AACAPwAAwH8AAIA/"
        "AACAPw==\",\"wq_shape\":[2,2],\"wk\":[[1,0],[0,1]],\"wv\":[[1,0],[0,1]]}}}",
        422, "non_finite", "model.weights.wq|model.weights.wq[0][1]", NULL),
    ERR("/apply",
        "{\"embeddings\":[[3e38,1]],\"model\":{\"d_model\":2,\"heads\":1,\"scheme\":\"none\","
        "\"weights\":{\"wq\":[[2,0],[0,2]],\"wk\":[[1,0],[0,1]],\"wv\":[[1,0],[0,1]]}}}",
        422, "non_finite", NULL, NULL),
    /* 422 too_large: positions past 2^53 - 1, output arrays past 2^26 */
    ERR("/encode", "{\"shape\":[1,2],\"positions\":[9007199254740992]}", 422, "too_large", NULL,
        NULL),
    ERR("/encode", "{\"shape\":[2,2],\"offset\":9007199254740991}", 422, "too_large", NULL, NULL),
    ERR("/encode", "{\"scheme\":\"alibi\",\"params\":{\"heads\":64},\"shape\":[1100,1]}", 422,
        "too_large", NULL, NULL),
    /* 422 invalid_request: a table the model lacks */
    ERR("/encode", "{\"scheme\":\"learned\",\"shape\":[2,2]}", 422, "invalid_request", NULL,
        "position_table"),
    ERR("/encode", "{\"scheme\":\"t5\",\"shape\":[2,2]}", 422, "invalid_request", NULL, "t5_bias"),
    ERR("/encode", "{\"scheme\":\"learned\",\"shape\":[1,2],\"model\":" M2("") "}", 422,
        "invalid_request", NULL, "position_table"),
    ERR("/apply",
        "{\"embeddings\":[[1,2]],\"scheme\":\"t5\",\"return\":[\"scores\"],\"model\":" M2("") "}",
        422, "invalid_request", NULL, "t5_bias"),
    ERR("/apply", "{\"token_ids\":[1,2]}", 422, "invalid_request", "token_ids", "token_embedding"),
    ERR("/apply", "{\"embeddings\":[[1,2]],\"scheme\":\"learned\",\"model\":" M2("") "}", 422,
        "invalid_request", NULL, "position_table"),
    ERR("/encode", "{\"scheme\":\"learned\",\"shape\":[1,2],\"model\":\"default\"}", 422,
        "invalid_request", NULL, "position_table"),
    ERR("/apply",
        "{\"embeddings\":[[1,2]],\"model\":{\"d_model\":2,\"heads\":1,\"norm\":{\"type\":"
        "\"layernorm\"},\"weights\":{" W2 "}}}",
        422, "invalid_request", NULL, "norm_weight"),
    /* 400: norm weights without a norm, norm_bias with rmsnorm */
    ERR("/apply", "{\"embeddings\":[[1,2]],\"model\":" M2(",\"norm_weight\":[1,1]") "}", 400,
        "invalid_request", NULL, NULL),
    ERR("/apply",
        "{\"embeddings\":[[1,2]],\"model\":{\"d_model\":2,\"heads\":1,\"norm\":{\"type\":"
        "\"rmsnorm\"},\"weights\":{" W2 ",\"norm_weight\":[1,1],\"norm_bias\":[0,0]}}}",
        400, "invalid_request", NULL, NULL),
};

/* Routes, methods, media types, and bodies that must pass. */
#define SHAPE12 "{\"shape\":[1,2]}"
#define NOT_ALLOWED(method_, route_, body_, allow_)                                                \
    {                                                                                              \
        .name = method_ " " route_, .method = (method_), .route = (route_), .body = (body_),       \
        .status = 405, .code = "method_not_allowed", .header = "Allow", .header_has = (allow_)     \
    }
#define UNSUPPORTED(route_, ctype_label_, ctype_, body_)                                           \
    {                                                                                              \
        .name = "POST " route_ " Content-Type " ctype_label_, .route = (route_), .body = (body_),  \
        .ctype = (ctype_), .status = 415, .code = "unsupported_media_type"                         \
    }

static const http_case ROUTE_CASES[] = {
    {.name = "GET /nope", .method = "GET", .route = "/nope", .status = 404, .code = "not_found"},
    {.name = "POST /encode/extra",
     .route = "/encode/extra",
     .body = SHAPE12,
     .status = 404,
     .code = "not_found"},
    /* 405 with an Allow header; a body only on methods that carry one */
    NOT_ALLOWED("GET", "/encode", NULL, "POST"),
    NOT_ALLOWED("GET", "/apply", NULL, "POST"),
    NOT_ALLOWED("DELETE", "/apply", "{}", "POST"),
    NOT_ALLOWED("PUT", "/encode", "{}", "POST"),
    NOT_ALLOWED("POST", "/healthz", "{}", "GET"),
    NOT_ALLOWED("POST", "/info", "{}", "GET"),
    NOT_ALLOWED("DELETE", "/metrics", "{}", "GET"),
    /* 415 */
    UNSUPPORTED("/encode", "text/plain", "text/plain", SHAPE12),
    UNSUPPORTED("/encode", "application/x-www-form-urlencoded", "application/x-www-form-urlencoded",
                SHAPE12),
    UNSUPPORTED("/encode", "(none)", NO_CTYPE, SHAPE12),
    UNSUPPORTED("/apply", "text/plain", "text/plain", "{\"embeddings\":[[1,2]]}"),
    /* a media type parameter is fine; a chunked body within limits is read
     * like any other */
    {.name = "POST /encode Content-Type application/json; charset=utf-8",
     .route = "/encode",
     .body = SHAPE12,
     .ctype = "application/json; charset=utf-8"},
    {.name = "POST /encode chunked body", .route = "/encode", .body = SHAPE12, .chunked = true},
    /* redundant but consistent shape with JSON embeddings is fine */
    {.name = "POST /encode embeddings [[1,2]] with shape [1,2]",
     .route = "/encode",
     .body = "{\"embeddings\":[[1,2]],\"shape\":[1,2]}"},
};

/* Cases with looser expectations or special requests. */
static void special_cases(const server *s)
{
    http_resp r;
    /* /apply without wq: invalid_request (400 or 422) */
    {
        const char *L = "POST /apply inline model without wq";
        http_post_json(s, "/apply",
                       "{\"embeddings\":[[1,2]],\"model\":{\"d_model\":2,\"heads\":1,\"weights\":{"
                       "\"wk\":[[1,0],[0,1]],\"wv\":[[1,0],[0,1]]}}}",
                       &r);
        json_t *e = r.json ? json_object_get(r.json, "error") : NULL;
        const char *code = e ? jstr(e, "code") : NULL;
        const char *m = e ? jstr(e, "message") : NULL;
        CHECK((r.status == 400 || r.status == 422) && code &&
                  strcmp(code, "invalid_request") == 0 && m && strstr(m, "wq"),
              L, "want 400/422 invalid_request naming wq, got %ld %.200s", r.status,
              r.body ? r.body : "");
        http_resp_free(&r);
    }
    /* norm eps must be > 0 */
    {
        const char *L = "POST /apply layernorm eps 0";
        http_post_json(s, "/apply",
                       "{\"embeddings\":[[1,2]],\"model\":{\"d_model\":2,\"heads\":1,\"norm\":{"
                       "\"type\":\"layernorm\",\"eps\":0},\"weights\":{" W2
                       ",\"norm_weight\":[1,1]}}}",
                       &r);
        json_t *e = r.json ? json_object_get(r.json, "error") : NULL;
        CHECK((r.status == 400 || r.status == 422) && e, L,
              "eps 0 should be refused (400/422), got %ld %.200s", r.status, r.body ? r.body : "");
        http_resp_free(&r);
    }
    /* the largest position, 2^53 - 1, is accepted and exact (frequency 1) */
    {
        const char *L = "POST /encode sinusoidal [1,2] position 2^53-1";
        int64_t p = INT64_C(9007199254740991);
        double want[2];
        ref_sinusoidal_row(10000, false, p, 2, want);
        post_compare(s, "/encode", L, "{\"shape\":[1,2],\"positions\":[9007199254740991]}",
                     "encoded", 2, (size_t[]){1, 2}, want, ABS_ONCE, ULPS_ONCE);
    }
    /* scores past 2^26 elements: 8 heads x 3000^2 tokens */
    {
        const char *L = "POST /apply default [3000,512] return scores (8*3000^2 > 2^26)";
        float *x = xcalloc((size_t)3000 * 512, sizeof *x);
        sbuf b;
        sb_init(&b);
        sb_puts(&b, "{\"embeddings\":");
        sb_base64_floats(&b, x, (size_t)3000 * 512);
        sb_puts(&b, ",\"shape\":[3000,512],\"return\":[\"scores\"]}");
        http_post_json(s, "/apply", b.s, &r);
        expect_error(L, &r, 422, "too_large", NULL);
        http_resp_free(&r);
        sb_free(&b);
        free(x);
    }
    /* deep nesting must not crash: 4xx */
    {
        const char *L = "POST /encode embeddings nested 100000 deep";
        size_t depth = 100000;
        char *body = xmalloc(2 * depth + 32);
        size_t o = (size_t)sprintf(body, "{\"embeddings\":");
        memset(body + o, '[', depth);
        o += depth;
        memset(body + o, ']', depth);
        o += depth;
        body[o++] = '}';
        body[o] = '\0';
        http_post_json(s, "/encode", body, &r);
        CHECK(r.status == 400 || r.status == 422, L, "want 400/422, got %ld %.200s", r.status,
              r.body ? r.body : "");
        http_resp_free(&r);
        free(body);
    }
}

void test_errors(const server *s)
{
    RUN_HTTP_CASES(s, CASES);
    special_cases(s);
    RUN_HTTP_CASES(s, ROUTE_CASES);
    http_resp r;
    http_get(s, "/healthz", &r);
    CHECK(r.status == 200, "GET /healthz after the error burst", "got %ld (%s)", r.status,
          r.transport_error);
    http_resp_free(&r);
    /* and a real computation still gives the right answer */
    int64_t pos[] = {0, 1, 2};
    double want[3 * 4];
    ref_absolute_sinusoidal(NULL, 1, 10000, false, pos, 3, 4, want);
    post_compare(s, "/encode", "POST /encode after the error burst", "{\"shape\":[3,4]}", "encoded",
                 2, (size_t[]){3, 4}, want, ABS_ONCE, ULPS_ONCE);
}

/* ---------------------------------------------------------------------- */
/* Authentication                                                           */
/* ---------------------------------------------------------------------- */

#define GOOD_KEY "Authorization: Bearer s3cret"
#define UNAUTHORIZED(name_, method_, route_, ctype_, body_, headers_)                              \
    {                                                                                              \
        .name = (name_), .method = (method_), .route = (route_), .ctype = (ctype_),                \
        .body = (body_), .headers = (headers_), .status = 401, .code = "unauthorized"              \
    }
#define KEYS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define GUARDED(route_)                                                                            \
    UNAUTHORIZED("GET " route_ " without a key", "GET", route_, NULL, NULL, NULL),                 \
    {                                                                                              \
        .name = "GET " route_ " with the key", .method = "GET", .route = (route_),                 \
        .headers = KEYS(GOOD_KEY), .status_only = true                                             \
    }

/* json followed by spaces up to total bytes (malloc'd, caller frees). */
static char *padded_body(const char *json, size_t total)
{
    char *b = xmalloc(total + 1);
    memset(b, ' ', total);
    memcpy(b, json, strlen(json));
    b[total] = '\0';
    return b;
}

/* A POST /encode announcing a 100 MB body and sending one byte of it: the
 * answer (status want) must come before the body. */
static void expect_status_before_body(const server *s, const char *label, long want)
{
    char resp[4096];
    const char *raw = "POST /encode HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      "Content-Length: 100000000\r\n\r\n{";
    long st = raw_request(s, raw, strlen(raw), under_valgrind() ? 120 : 20, resp, sizeof resp);
    CHECK(st == want, label, "want %ld before the body, got %ld: %.200s", want, st, resp);
}

/* On a server with --api-key s3cret (and --max-body-bytes 4096). */
static const http_case AUTH_CASES[] = {
    UNAUTHORIZED("POST /encode without a key", "POST", "/encode", NULL, SHAPE12, NULL),
    UNAUTHORIZED("POST /encode wrong key", "POST", "/encode", NULL, SHAPE12,
                 KEYS("Authorization: Bearer nope")),
    UNAUTHORIZED("POST /encode key prefix", "POST", "/encode", NULL, SHAPE12,
                 KEYS("Authorization: Bearer s3cre")),
    UNAUTHORIZED("POST /encode Basic scheme", "POST", "/encode", NULL, SHAPE12,
                 KEYS("Authorization: Basic s3cret")),
    {.name = "POST /encode with the key",
     .route = "/encode",
     .body = SHAPE12,
     .headers = KEYS(GOOD_KEY)},
    /* 401 before 415, 400 and 404 */
    UNAUTHORIZED("POST /encode text/plain without a key", "POST", "/encode", "text/plain", "x",
                 NULL),
    UNAUTHORIZED("POST /apply bad JSON without a key", "POST", "/apply", NULL, "{oops", NULL),
    UNAUTHORIZED("GET /nope without a key", "GET", "/nope", NULL, NULL, NULL),
    /* every route but the probes */
    GUARDED("/info"),
    GUARDED("/metrics"),
    GUARDED("/openapi.json"),
    GUARDED("/openapi.yaml"),
    {.name = "GET /healthz without a key",
     .method = "GET",
     .route = "/healthz",
     .status_only = true},
    {.name = "GET /readyz without a key", .method = "GET", .route = "/readyz", .status_only = true},
};

void test_auth(void)
{
    server s;
    const char *args[] = {"--api-key", "s3cret", "--max-body-bytes", "4096", NULL};
    if (!server_start(&s, "apikey", args, NULL))
        return;
    RUN_HTTP_CASES(&s, AUTH_CASES);
    /* 401 before 413 */
    char *payload = padded_body(SHAPE12, 8192);
    const http_case over_limit[] = {
        UNAUTHORIZED("POST /encode 8 KiB over a 4 KiB limit without a key", "POST", "/encode", NULL,
                     payload, NULL),
        {.name = "POST /encode 8 KiB over a 4 KiB limit with the key",
         .route = "/encode",
         .body = payload,
         .headers = KEYS(GOOD_KEY),
         .status = 413,
         .code = "payload_too_large"},
    };
    RUN_HTTP_CASES(&s, over_limit);
    free(payload);
    /* unauthenticated huge Content-Length: 401 without the body */
    expect_status_before_body(&s, "POST /encode Content-Length 1e8 without a key (body not sent)",
                              401);
    run_http_case(&s, &(http_case){.name = "GET /healthz after the auth burst",
                                   .method = "GET",
                                   .route = "/healthz",
                                   .status_only = true});
    server_stop(&s);
}

/* ---------------------------------------------------------------------- */
/* Body and token limits                                                    */
/* ---------------------------------------------------------------------- */

#define TOO_LARGE(body_)                                                                           \
    {                                                                                              \
        .name = "POST /encode " body_ " (--max-tokens 8)", .route = "/encode", .body = (body_),    \
        .status = 422, .code = "too_large"                                                         \
    }
#define FITS(body_)                                                                                \
    {                                                                                              \
        .name = "POST /encode " body_ " (--max-tokens 8)", .route = "/encode", .body = (body_)     \
    }

/* On a server with --max-tokens 8 (and POSENC_MAX_TOKENS=100: the flag wins). */
static const http_case TOKEN_LIMIT_CASES[] = {
    FITS("{\"shape\":[8,4]}"),
    TOO_LARGE("{\"shape\":[9,4]}"),
    FITS("{\"shape\":[2,4,4]}"),
    TOO_LARGE("{\"shape\":[3,3,4]}"),
    TOO_LARGE("{\"scheme\":\"alibi\",\"params\":{\"heads\":2},\"shape\":[9,1]}"),
    TOO_LARGE("{\"scheme\":\"none\",\"embeddings\":[[1],[2],[3],[4],[5],[6],[7],[8],[9]]}"),
};

/* {"embeddings": <tokens x 512 zeros in base64>, "shape": shape} (caller frees). */
static char *zeros_body(size_t tokens, const char *shape)
{
    float *x = xcalloc(tokens * 512, sizeof *x);
    sbuf b;
    sb_init(&b);
    sb_puts(&b, "{\"embeddings\":");
    sb_base64_floats(&b, x, tokens * 512);
    sb_printf(&b, ",\"shape\":%s}", shape);
    free(x);
    return b.s; /* owned by the caller now */
}

static void body_limit(void)
{
    server s;
    const char *env[] = {"POSENC_MAX_BODY_BYTES=1024", NULL};
    if (!server_start(&s, "bodylimit", NULL, env))
        return;
    char *under = padded_body(SHAPE12, 1000), *over = padded_body(SHAPE12, 2000);
    char *chunked = padded_body(SHAPE12, 65536);
    const http_case cases[] = {
        {.name = "POST /encode 1000-byte body under a 1024-byte limit",
         .route = "/encode",
         .body = under},
        {.name = "POST /encode 2000-byte body over a 1024-byte limit (Content-Length)",
         .route = "/encode",
         .body = over,
         .status = 413,
         .code = "payload_too_large"},
        {.name = "POST /encode 64 KiB chunked body over a 1024-byte limit",
         .route = "/encode",
         .body = chunked,
         .chunked = true,
         .status = 413,
         .code = "payload_too_large"},
    };
    RUN_HTTP_CASES(&s, cases);
    free(under);
    free(over);
    free(chunked);
    /* 413 is said before the body is read: the body is never sent */
    expect_status_before_body(&s, "POST /encode Content-Length 1e8, body not sent", 413);
    run_http_case(&s, &(http_case){.name = "GET /healthz after 413s",
                                   .method = "GET",
                                   .route = "/healthz",
                                   .status_only = true});
    server_stop(&s);
}

static void token_limit(void)
{
    server s;
    const char *args[] = {"--max-tokens", "8", NULL};
    const char *env[] = {"POSENC_MAX_TOKENS=100", NULL};
    if (!server_start(&s, "tokenlimit", args, env))
        return;
    RUN_HTTP_CASES(&s, TOKEN_LIMIT_CASES);
    /* /apply on the default model (base64) */
    char *nine = zeros_body(9, "[9,512]"), *eight = zeros_body(8, "[2,4,512]");
    const http_case cases[] = {
        {.name = "POST /apply [9,512] (--max-tokens 8)",
         .route = "/apply",
         .body = nine,
         .status = 422,
         .code = "too_large"},
        {.name = "POST /apply [2,4,512] (--max-tokens 8)", .route = "/apply", .body = eight},
    };
    RUN_HTTP_CASES(&s, cases);
    free(nine);
    free(eight);
    server_stop(&s);
}

void test_limits(void)
{
    body_limit();
    token_limit();
}
