/*
 * test_errors.c - every error row of the contract: status, code, field and
 * message of the JSON error body; then auth (401 before anything, also
 * before 413) and the limits (413 by Content-Length, by chunked body and
 * before the body is read; 422 too_large past --max-tokens), each on its
 * own server instance. After each burst the server must still answer.
 *
 * The plain request -> answer cases are data, read at run time
 * (tests/http/cases/errors, auth and tokenlimit; README.md there); this
 * file keeps the cases whose requests or checks need C.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cases.h"
#include "refs.h"
#include "tests.h"

/* An identity 2x2 model's weights, for bodies that need an inline model. */
#define W2 "\"wq\":[[1,0],[0,1]],\"wk\":[[1,0],[0,1]],\"wv\":[[1,0],[0,1]]"

#define SHAPE12 "{\"shape\":[1,2]}"

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
    run_case_suite(s, "errors");
    special_cases(s);
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
/* A macro that is a brace list: clang-format 14 and 19 lay it out apart. */
/* clang-format off */
#define UNAUTHORIZED(name_, method_, route_, ctype_, body_, headers_)                              \
    {                                                                                              \
        .name = (name_), .method = (method_), .route = (route_), .ctype = (ctype_),                \
        .body = (body_), .headers = (headers_), .status = 401, .code = "unauthorized"              \
    }
/* clang-format on */
#define KEYS(...) ((const char *const[]){__VA_ARGS__, NULL})
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

void test_auth(void)
{
    server s;
    const char *args[] = {"--api-key", "s3cret", "--max-body-bytes", "4096", NULL};
    if (!server_start(&s, "apikey", args, NULL))
        return;
    run_case_suite(&s, "auth"); /* on --api-key s3cret */
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
    run_case_suite(&s, "tokenlimit"); /* on --max-tokens 8 */
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
