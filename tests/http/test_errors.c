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

#include "refs.h"
#include "tests.h"

/* One JSON POST that must fail. field: see expect_error(). msg_has: '|'
 * separated substrings that must all appear in the message (or NULL). */
typedef struct ecase {
    const char *path;
    const char *body;
    long status;
    const char *code;
    const char *field;
    const char *msg_has;
} ecase;

/* An identity 2x2 model, for bodies that need an inline model. */
#define W2 "\"wq\":[[1,0],[0,1]],\"wk\":[[1,0],[0,1]],\"wv\":[[1,0],[0,1]]"
#define I4 "[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]]"
#define I43 "[[1,0,0],[0,1,0],[0,0,1],[0,0,0]]"
#define M2(extra) "{\"d_model\":2,\"heads\":1,\"scheme\":\"sinusoidal\",\"weights\":{" W2 extra "}}"

static const ecase CASES[] = {
    /* 400 invalid_json */
    {"/encode", "{\n  \"shape\": [2, 4],\n  oops }", 400, "invalid_json", NULL, "line|3"},
    {"/encode", "", 400, "invalid_json", NULL, NULL},
    {"/encode", "{\"shape\":[2,", 400, "invalid_json", NULL, NULL},
    {"/apply", "{\"embeddings\":[[1,2]],}", 400, "invalid_json", NULL, NULL},
    {"/encode", "{\"shape\":[2,4],\"embed_scale\":NaN}", 400, "invalid_json", NULL, NULL},
    {"/encode", "{\"shape\":[2,4]} trailing", 400, "invalid_json", NULL, NULL},
    {"/encode", "{\"scheme\":\"\xff\xfe\",\"shape\":[1,2]}", 400, "invalid_json", NULL, NULL},
    /* 400 invalid_request: not an object, unknown fields, wrong types */
    {"/encode", "[1,2]", 400, "invalid_request", NULL, NULL},
    {"/encode", "null", 400, "invalid_request", NULL, NULL},
    {"/encode", "{\"shape\":[2,4],\"foo\":1}", 400, "invalid_request", "foo", "foo"},
    {"/encode", "{\"shape\":[2,4],\"params\":{\"bogus\":1}}", 400, "invalid_request",
     "params.bogus", "bogus"},
    {"/encode", "{\"scheme\":\"rope\",\"shape\":[2,4],\"params\":{\"layout\":\"half\",\"form\":\"bloom\"}}",
     400, "invalid_request", "params.form", NULL},
    {"/encode", "{\"scheme\":\"rope\",\"shape\":[1,8],\"params\":{\"scaling\":{\"type\":\"linear\","
     "\"factor\":2,\"bogus\":1}}}",
     400, "invalid_request", "params.scaling.bogus", NULL},
    {"/apply", "{\"embeddings\":[[1,2]],\"model\":{\"d_model\":2,\"heads\":1,\"bogus\":1,\"weights\":{" W2 "}}}",
     400, "invalid_request", "model.bogus", NULL},
    {"/apply", "{\"embeddings\":[[1,2]],\"model\":" M2(",\"bogus\":[1]") "}", 400, "invalid_request",
     "model.weights.bogus", NULL},
    {"/encode", "{\"shape\":\"abc\"}", 400, "invalid_request", "shape", NULL},
    {"/encode", "{\"shape\":[2,4],\"offset\":\"3\"}", 400, "invalid_request", "offset", NULL},
    {"/encode", "{\"shape\":[2,4],\"offset\":1.5}", 400, "invalid_request", "offset", NULL},
    {"/encode", "{\"shape\":[2,4],\"embed_scale\":\"x\"}", 400, "invalid_request", "embed_scale", NULL},
    {"/encode", "{\"shape\":[2,4],\"encoding\":\"hex\"}", 400, "invalid_request", "encoding", NULL},
    {"/encode", "{\"shape\":[2,4],\"scheme\":\"bogus\"}", 400, "invalid_request", "scheme", NULL},
    {"/encode", "{\"shape\":[2,4],\"scheme\":5}", 400, "invalid_request", "scheme", NULL},
    {"/encode", "{\"shape\":[2,4],\"params\":[]}", 400, "invalid_request", "params", NULL},
    {"/encode", "{\"shape\":[2,4],\"params\":{\"layout\":\"diagonal\"}}", 400, "invalid_request",
     "params.layout", NULL},
    {"/encode", "{\"shape\":[2,4],\"params\":{\"base\":\"x\"}}", 400, "invalid_request",
     "params.base", NULL},
    {"/encode", "{\"scheme\":\"rope\",\"shape\":[1,8],\"params\":{\"scaling\":{\"type\":\"yarn\","
     "\"factor\":\"big\",\"original_max_position_embeddings\":2048}}}",
     400, "invalid_request", "params.scaling.factor", NULL},
    {"/encode", "{\"embeddings\":true}", 400, "invalid_request", "embeddings", NULL},
    {"/encode", "{\"embeddings\":[[1,\"a\"]]}", 400, "invalid_request", "embeddings|embeddings[0][1]", NULL},
    {"/encode", "{\"embeddings\":[[1,true]]}", 400, "invalid_request", "embeddings|embeddings[0][1]", NULL},
    {"/encode", "{\"embeddings\":[[1,null]]}", 400, "invalid_request", "embeddings|embeddings[0][1]", NULL},
    {"/encode", "{\"shape\":[2,4],\"positions\":[0,1.5]}", 400, "invalid_request",
     "positions|positions[1]", NULL},
    {"/apply", "{\"embeddings\":[[1,2]],\"model\":" M2("") ",\"return\":\"q\"}", 400,
     "invalid_request", "return", NULL},
    {"/apply", "{\"embeddings\":[[1,2]],\"model\":" M2("") ",\"return\":[\"q\",\"x\"]}", 400,
     "invalid_request", "return[1]|return", NULL},
    {"/apply", "{\"embeddings\":[[1,2]],\"model\":5}", 400, "invalid_request", "model", NULL},
    {"/apply", "{\"model\":" M2(",\"token_embedding\":[[1,0],[0,1]]") ",\"token_ids\":\"abc\"}", 400,
     "invalid_request", "token_ids", NULL},
    {"/apply", "{\"model\":" M2(",\"token_embedding\":[[1,0],[0,1]]") ",\"token_ids\":[0,1.5]}", 400,
     "invalid_request", "token_ids|token_ids[1]", NULL},
    {"/apply", "{\"model\":{\"d_model\":\"2\",\"heads\":1,\"weights\":{" W2 "}},\"embeddings\":[[1,2]]}",
     400, "invalid_request", "model.d_model", NULL},
    /* 400 invalid_request: missing fields */
    {"/encode", "{}", 400, "invalid_request", "shape|embeddings", NULL},
    {"/apply", "{}", 400, "invalid_request", "embeddings|token_ids", NULL},
    {"/apply", "{\"embeddings\":[[1,2]],\"model\":{\"heads\":1,\"weights\":{" W2 "}}}", 400,
     "invalid_request", "model.d_model", "d_model"},
    {"/apply", "{\"embeddings\":[[1,2]],\"model\":{\"d_model\":2,\"weights\":{" W2 "}}}", 400,
     "invalid_request", "model.heads", "heads"},
    {"/encode", "{\"scheme\":\"rope\",\"shape\":[1,8],\"params\":{\"scaling\":{\"type\":\"yarn\","
     "\"factor\":4}}}",
     400, "invalid_request", "params.scaling.original_max_position_embeddings",
     "original_max_position_embeddings"},
    /* 400 invalid_request: base64 */
    {"/encode", "{\"embeddings\":\"AACAPwAAAEA=\"}", 400, "invalid_request", "shape", NULL},
    {"/encode", "{\"embeddings\":\"AACAPwAA*EA=\",\"shape\":[1,2]}", 400, "invalid_request",
     "embeddings", NULL},
    {"/encode", "{\"embeddings\":\"AACAPwAAAEA\",\"shape\":[1,2]}", 400, "invalid_request",
     "embeddings", NULL},
    {"/encode", "{\"embeddings\":\"AACA=wAAAEA=\",\"shape\":[1,2]}", 400, "invalid_request",
     "embeddings", NULL},
    {"/encode", "{\"embeddings\":\"AACAPw-_AEA=\",\"shape\":[1,2]}", 400, "invalid_request",
     "embeddings", NULL},
    {"/encode", "{\"embeddings\":\"AAA=\",\"shape\":[1,1]}", 400, "invalid_request", "embeddings", NULL},
    {"/encode", "{\"embeddings\":\"AACAPwAA\",\"shape\":[1,1]}", 400, "invalid_request", "embeddings",
     NULL},
    {"/apply", "{\"embeddings\":[[1,2]],\"model\":{\"d_model\":2,\"heads\":1,\"weights\":{"
     "\"wq\":\"AAA*\",\"wq_shape\":[2,2],\"wk\":[[1,0],[0,1]],\"wv\":[[1,0],[0,1]]}}}",
     400, "invalid_request", "model.weights.wq", NULL},
    /* offset with positions */
    {"/encode", "{\"shape\":[2,4],\"offset\":1,\"positions\":[0,1]}", 400, "invalid_request",
     "offset|positions", NULL},
    /* 404 unknown_model */
    {"/apply", "{\"embeddings\":[[1,2]],\"model\":\"nosuch\"}", 404, "unknown_model", "model",
     "nosuch"},
    {"/encode", "{\"shape\":[1,2],\"model\":\"nosuch\"}", 404, "unknown_model", "model", "nosuch"},
    /* 422 invalid_shape */
    {"/encode", "{\"embeddings\":[[1,2],[3]]}", 422, "invalid_shape", "embeddings[1]", NULL},
    {"/encode", "{\"embeddings\":[[[1,2],[3,4]],[[5,6]]]}", 422, "invalid_shape", "embeddings[1]",
     NULL},
    {"/encode", "{\"embeddings\":[[1,2],[3,4]],\"shape\":[2,3]}", 422, "invalid_shape", "embeddings",
     NULL},
    {"/encode", "{\"embeddings\":\"AACAPwAAAEA=\",\"shape\":[1,3]}", 422, "invalid_shape",
     "embeddings", NULL},
    {"/encode", "{\"embeddings\":[1,2,3]}", 422, "invalid_shape", "embeddings", NULL},
    {"/encode", "{\"shape\":[1,1,1,1]}", 422, "invalid_shape", "shape", NULL},
    {"/encode", "{\"shape\":[0,4]}", 422, "invalid_shape", "shape", NULL},
    {"/encode", "{\"scheme\":\"rope\",\"shape\":[2,6],\"params\":{\"head_dim\":4}}", 422,
     "invalid_shape", "params.head_dim", NULL},
    {"/encode", "{\"scheme\":\"rope\",\"shape\":[2,8],\"params\":{\"head_dim\":8,\"rotary_dim\":3}}",
     422, "invalid_shape", "params.rotary_dim", NULL},
    {"/encode", "{\"scheme\":\"rope\",\"shape\":[2,8],\"params\":{\"head_dim\":4,\"rotary_dim\":6}}",
     422, "invalid_shape", "params.rotary_dim", NULL},
    {"/encode", "{\"shape\":[3,4],\"positions\":[0,1]}", 422, "invalid_shape", "positions", NULL},
    {"/encode", "{\"shape\":[2,2,4],\"positions\":[[0,1],[0,1],[0,1]]}", 422, "invalid_shape",
     "positions", NULL},
    {"/apply", "{\"embeddings\":[[1,2,3,4]]}", 422, "invalid_shape", "embeddings", "512"},
    {"/apply", "{\"embeddings\":[[1,2,3,4]],\"model\":{\"d_model\":4,\"heads\":3,"
     "\"weights\":{\"wq\":" I4 ",\"wk\":" I4 ",\"wv\":" I4 "}}}",
     422, "invalid_shape", "model.heads", NULL},
    {"/apply", "{\"embeddings\":[[1,2,3,4]],\"model\":{\"d_model\":4,\"heads\":4,\"kv_heads\":3,"
     "\"weights\":{\"wq\":" I4 ",\"wk\":" I43 ",\"wv\":" I43 "}}}",
     422, "invalid_shape", "model.kv_heads", NULL},
    {"/apply", "{\"embeddings\":[[1,2]],\"model\":{\"d_model\":2,\"heads\":1,\"weights\":{"
     "\"wq\":[[1,0,0],[0,1,0]],\"wk\":[[1,0],[0,1]],\"wv\":[[1,0],[0,1]]}}}",
     422, "invalid_shape", "model.weights.wq", NULL},
    {"/apply", "{\"embeddings\":[[1,2]],\"model\":{\"d_model\":2,\"heads\":1,\"weights\":{"
     "\"wq\":\"AACAPwAAAEA=\",\"wq_shape\":[2,2],\"wk\":[[1,0],[0,1]],\"wv\":[[1,0],[0,1]]}}}",
     422, "invalid_shape", "model.weights.wq", NULL},
    /* 422 out_of_range */
    {"/encode", "{\"shape\":[2,4],\"offset\":-1}", 422, "out_of_range", "offset", NULL},
    {"/encode", "{\"shape\":[2,4],\"positions\":[0,-1]}", 422, "out_of_range", "positions[1]", NULL},
    {"/encode", "{\"shape\":[2,2,4],\"positions\":[[0,1],[-5,1]]}", 422, "out_of_range",
     "positions[1][0]", NULL},
    {"/apply", "{\"embeddings\":[[1,2]],\"model\":" M2("") ",\"offset\":-3}", 422, "out_of_range",
     "offset", NULL},
    /* 422 non_finite */
    {"/encode", "{\"embeddings\":\"AACAPwAAwH8=\",\"shape\":[1,2]}", 422, "non_finite",
     "embeddings|embeddings[0][1]", NULL},
    {"/encode", "{\"embeddings\":\"AACAfwAAAEA=\",\"shape\":[1,2]}", 422, "non_finite",
     "embeddings|embeddings[0][0]", NULL},
    {"/encode", "{\"embeddings\":\"AACAPwAAAEAAAEBAAACA/w==\",\"shape\":[2,2],\"scheme\":\"none\"}", 422,
     "non_finite", "embeddings|embeddings[1][1]", NULL},
    {"/encode", "{\"embeddings\":[[3e38,0]],\"embed_scale\":10}", 422, "non_finite", NULL, NULL},
    {"/encode", "{\"embeddings\":[[1e39,0]]}", 422, "non_finite", "embeddings|embeddings[0][0]", NULL},
    {"/apply", "{\"embeddings\":[[1,2]],\"model\":{\"d_model\":2,\"heads\":1,\"weights\":{"
     "\"wq\":\"AACAPwAAwH8AAIA/AACAPw==\",\"wq_shape\":[2,2],\"wk\":[[1,0],[0,1]],\"wv\":[[1,0],[0,1]]}}}",
     422, "non_finite", "model.weights.wq|model.weights.wq[0][1]", NULL},
    {"/apply", "{\"embeddings\":[[3e38,1]],\"model\":{\"d_model\":2,\"heads\":1,\"scheme\":\"none\","
     "\"weights\":{\"wq\":[[2,0],[0,2]],\"wk\":[[1,0],[0,1]],\"wv\":[[1,0],[0,1]]}}}",
     422, "non_finite", NULL, NULL},
    /* 422 too_large: positions past 2^53 - 1, output arrays past 2^26 */
    {"/encode", "{\"shape\":[1,2],\"positions\":[9007199254740992]}", 422, "too_large", NULL, NULL},
    {"/encode", "{\"shape\":[2,2],\"offset\":9007199254740991}", 422, "too_large", NULL, NULL},
    {"/encode", "{\"scheme\":\"alibi\",\"params\":{\"heads\":64},\"shape\":[1100,1]}", 422,
     "too_large", NULL, NULL},
    /* 422 invalid_request: a table the model lacks */
    {"/encode", "{\"scheme\":\"learned\",\"shape\":[2,2]}", 422, "invalid_request", NULL,
     "position_table"},
    {"/encode", "{\"scheme\":\"t5\",\"shape\":[2,2]}", 422, "invalid_request", NULL, "t5_bias"},
    {"/encode", "{\"scheme\":\"learned\",\"shape\":[1,2],\"model\":" M2("") "}", 422,
     "invalid_request", NULL, "position_table"},
    {"/apply", "{\"embeddings\":[[1,2]],\"scheme\":\"t5\",\"return\":[\"scores\"],\"model\":" M2("") "}", 422,
     "invalid_request", NULL, "t5_bias"},
    {"/apply", "{\"token_ids\":[1,2]}", 422, "invalid_request", "token_ids", "token_embedding"},
    {"/apply", "{\"embeddings\":[[1,2]],\"scheme\":\"learned\",\"model\":" M2("") "}", 422,
     "invalid_request", NULL, "position_table"},
    {"/encode", "{\"scheme\":\"learned\",\"shape\":[1,2],\"model\":\"default\"}", 422,
     "invalid_request", NULL, "position_table"},
    {"/apply", "{\"embeddings\":[[1,2]],\"model\":{\"d_model\":2,\"heads\":1,\"norm\":{\"type\":"
     "\"layernorm\"},\"weights\":{" W2 "}}}",
     422, "invalid_request", NULL, "norm_weight"},
    /* 400: norm weights without a norm, norm_bias with rmsnorm */
    {"/apply", "{\"embeddings\":[[1,2]],\"model\":" M2(",\"norm_weight\":[1,1]") "}", 400,
     "invalid_request", NULL, NULL},
    {"/apply", "{\"embeddings\":[[1,2]],\"model\":{\"d_model\":2,\"heads\":1,\"norm\":{\"type\":"
     "\"rmsnorm\"},\"weights\":{" W2 ",\"norm_weight\":[1,1],\"norm_bias\":[0,0]}}}",
     400, "invalid_request", NULL, NULL},
};

static void run_cases(const server *s)
{
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const ecase *c = &CASES[i];
        char label[200];
        snprintf(label, sizeof label, "POST %s %.120s", c->path, c->body);
        for (char *p = label; *p; p++)
            if (*p == '\n')
                *p = ' ';
        http_resp r;
        http_post_json(s, c->path, c->body, &r);
        if (expect_error(label, &r, c->status, c->code, c->field) && c->msg_has) {
            const char *m = jstr(json_object_get(r.json, "error"), "message");
            char want[128];
            snprintf(want, sizeof want, "%s", c->msg_has);
            for (char *tok = strtok(want, "|"); tok; tok = strtok(NULL, "|"))
                CHECK(m && strstr(m, tok), label, "message should mention \"%s\": %s", tok,
                      m ? m : "(none)");
        }
        http_resp_free(&r);
    }
}

/* Cases with looser expectations or special requests. */
static void special_cases(const server *s)
{
    http_resp r;
    /* invalid_json: the message gives line and column */
    {
        const char *L = "POST /encode malformed JSON on line 3";
        http_post_json(s, "/encode", "{\n  \"shape\": [2, 4],\n  oops }", &r);
        const char *m = r.json ? jstr(json_object_get(r.json, "error"), "message") : NULL;
        CHECK(m && strstr(m, "line") && strstr(m, "col"), L,
              "message should give line and column: %s", m ? m : "(none)");
        http_resp_free(&r);
    }
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
        CHECK((r.status == 400 || r.status == 422) && code && strcmp(code, "invalid_request") == 0 &&
                  m && strstr(m, "wq"),
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
    /* redundant but consistent shape with JSON embeddings is fine */
    http_post_json(s, "/encode", "{\"embeddings\":[[1,2]],\"shape\":[1,2]}", &r);
    expect_ok("POST /encode embeddings [[1,2]] with shape [1,2]", &r);
    http_resp_free(&r);
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
    /* 404 and 405 */
    http_get(s, "/nope", &r);
    expect_error("GET /nope", &r, 404, "not_found", NULL);
    http_resp_free(&r);
    http_post_json(s, "/encode/extra", "{\"shape\":[1,2]}", &r);
    expect_error("POST /encode/extra", &r, 404, "not_found", NULL);
    http_resp_free(&r);
    static const struct {
        const char *method, *path, *allow;
    } m405[] = {{"GET", "/encode", "POST"}, {"GET", "/apply", "POST"}, {"DELETE", "/apply", "POST"},
                {"PUT", "/encode", "POST"}, {"POST", "/healthz", "GET"},
                {"POST", "/info", "GET"},   {"DELETE", "/metrics", "GET"}};
    for (size_t i = 0; i < sizeof m405 / sizeof m405[0]; i++) {
        char label[96];
        snprintf(label, sizeof label, "%s %s", m405[i].method, m405[i].path);
        bool post_like = strcmp(m405[i].method, "GET") != 0;
        http_request(s, m405[i].method, m405[i].path, post_like ? "application/json" : NULL,
                     post_like ? "{}" : NULL, post_like ? 2 : 0, NULL, false, &r);
        expect_error(label, &r, 405, "method_not_allowed", NULL);
        char allow[128] = "";
        CHECK(http_header(&r, "Allow", allow, sizeof allow) && strstr(allow, m405[i].allow), label,
              "Allow header \"%s\" should list %s", allow, m405[i].allow);
        http_resp_free(&r);
    }
    /* 415 */
    static const char *ctypes[] = {"text/plain", "application/x-www-form-urlencoded", NULL};
    for (size_t i = 0; i < 3; i++) {
        char label[96];
        snprintf(label, sizeof label, "POST /encode Content-Type %s", ctypes[i] ? ctypes[i] : "(none)");
        http_request(s, "POST", "/encode", ctypes[i], "{\"shape\":[1,2]}", 15, NULL, false, &r);
        expect_error(label, &r, 415, "unsupported_media_type", NULL);
        http_resp_free(&r);
    }
    http_request(s, "POST", "/apply", "text/plain", "{\"embeddings\":[[1,2]]}", 22, NULL, false, &r);
    expect_error("POST /apply Content-Type text/plain", &r, 415, "unsupported_media_type", NULL);
    http_resp_free(&r);
    http_request(s, "POST", "/encode", "application/json; charset=utf-8", "{\"shape\":[1,2]}", 15,
                 NULL, false, &r);
    expect_ok("POST /encode Content-Type application/json; charset=utf-8", &r);
    http_resp_free(&r);
    /* a chunked body within limits is read like any other */
    http_request(s, "POST", "/encode", "application/json", "{\"shape\":[1,2]}", 15, NULL, true, &r);
    expect_ok("POST /encode chunked body", &r);
    http_resp_free(&r);
}

void test_errors(const server *s)
{
    run_cases(s);
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

void test_auth(void)
{
    server s;
    const char *args[] = {"--api-key", "s3cret", "--max-body-bytes", "4096", NULL};
    if (!server_start(&s, "apikey", args, NULL))
        return;
    http_resp r;
    const char *body = "{\"shape\":[1,2]}";
    const char *good[] = {"Authorization: Bearer s3cret", NULL};
    const char *wrong[] = {"Authorization: Bearer nope", NULL};
    const char *basic[] = {"Authorization: Basic s3cret", NULL};
    const char *prefix[] = {"Authorization: Bearer s3cre", NULL};

    http_post_json(&s, "/encode", body, &r);
    expect_error("POST /encode without a key", &r, 401, "unauthorized", NULL);
    http_resp_free(&r);
    http_request(&s, "POST", "/encode", "application/json", body, strlen(body), wrong, false, &r);
    expect_error("POST /encode wrong key", &r, 401, "unauthorized", NULL);
    http_resp_free(&r);
    http_request(&s, "POST", "/encode", "application/json", body, strlen(body), prefix, false, &r);
    expect_error("POST /encode key prefix", &r, 401, "unauthorized", NULL);
    http_resp_free(&r);
    http_request(&s, "POST", "/encode", "application/json", body, strlen(body), basic, false, &r);
    expect_error("POST /encode Basic scheme", &r, 401, "unauthorized", NULL);
    http_resp_free(&r);
    http_request(&s, "POST", "/encode", "application/json", body, strlen(body), good, false, &r);
    expect_ok("POST /encode with the key", &r);
    http_resp_free(&r);
    /* 401 before 415, 400 and 404 */
    http_request(&s, "POST", "/encode", "text/plain", "x", 1, NULL, false, &r);
    expect_error("POST /encode text/plain without a key", &r, 401, "unauthorized", NULL);
    http_resp_free(&r);
    http_post_json(&s, "/apply", "{oops", &r);
    expect_error("POST /apply bad JSON without a key", &r, 401, "unauthorized", NULL);
    http_resp_free(&r);
    http_get(&s, "/nope", &r);
    expect_error("GET /nope without a key", &r, 401, "unauthorized", NULL);
    http_resp_free(&r);
    /* every route but the probes */
    static const char *guarded[] = {"/info", "/metrics", "/openapi.json", "/openapi.yaml"};
    for (size_t i = 0; i < 4; i++) {
        char label[64];
        snprintf(label, sizeof label, "GET %s without a key", guarded[i]);
        http_get(&s, guarded[i], &r);
        expect_error(label, &r, 401, "unauthorized", NULL);
        http_resp_free(&r);
        snprintf(label, sizeof label, "GET %s with the key", guarded[i]);
        http_request(&s, "GET", guarded[i], NULL, NULL, 0, good, false, &r);
        CHECK(r.status == 200, label, "got %ld", r.status);
        http_resp_free(&r);
    }
    http_get(&s, "/healthz", &r);
    CHECK(r.status == 200, "GET /healthz without a key", "got %ld", r.status);
    http_resp_free(&r);
    http_get(&s, "/readyz", &r);
    CHECK(r.status == 200, "GET /readyz without a key", "got %ld", r.status);
    http_resp_free(&r);
    /* 401 before 413 */
    size_t big = 8192;
    char *payload = xmalloc(big + 1);
    memset(payload, ' ', big);
    memcpy(payload, body, strlen(body));
    payload[big] = '\0';
    http_request(&s, "POST", "/encode", "application/json", payload, big, NULL, false, &r);
    expect_error("POST /encode 8 KiB over a 4 KiB limit without a key", &r, 401, "unauthorized",
                 NULL);
    http_resp_free(&r);
    http_request(&s, "POST", "/encode", "application/json", payload, big, good, false, &r);
    expect_error("POST /encode 8 KiB over a 4 KiB limit with the key", &r, 413, "payload_too_large",
                 NULL);
    http_resp_free(&r);
    free(payload);
    /* unauthenticated huge Content-Length: 401 without the body */
    char resp[4096];
    const char *raw = "POST /encode HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      "Content-Length: 100000000\r\n\r\n{";
    long st = raw_request(&s, raw, strlen(raw), under_valgrind() ? 120 : 20, resp, sizeof resp);
    CHECK(st == 401, "POST /encode Content-Length 1e8 without a key (body not sent)",
          "want 401 before the body, got %ld: %.200s", st, resp);
    http_get(&s, "/healthz", &r);
    CHECK(r.status == 200, "GET /healthz after the auth burst", "got %ld", r.status);
    http_resp_free(&r);
    server_stop(&s);
}

/* ---------------------------------------------------------------------- */
/* Body and token limits                                                    */
/* ---------------------------------------------------------------------- */

static char *padded_body(const char *json, size_t total)
{
    char *b = xmalloc(total + 1);
    memset(b, ' ', total);
    memcpy(b, json, strlen(json));
    b[total] = '\0';
    return b;
}

void test_limits(void)
{
    http_resp r;
    /* body limit from the environment variable (no flag) */
    server s;
    const char *env[] = {"POSENC_MAX_BODY_BYTES=1024", NULL};
    if (server_start(&s, "bodylimit", NULL, env)) {
        char *ok = padded_body("{\"shape\":[1,2]}", 1000);
        http_post_json(&s, "/encode", ok, &r);
        expect_ok("POST /encode 1000-byte body under a 1024-byte limit", &r);
        http_resp_free(&r);
        free(ok);
        char *over = padded_body("{\"shape\":[1,2]}", 2000);
        http_post_json(&s, "/encode", over, &r);
        expect_error("POST /encode 2000-byte body over a 1024-byte limit (Content-Length)", &r, 413,
                     "payload_too_large", NULL);
        http_resp_free(&r);
        free(over);
        char *chunked = padded_body("{\"shape\":[1,2]}", 65536);
        http_request(&s, "POST", "/encode", "application/json", chunked, 65536, NULL, true, &r);
        expect_error("POST /encode 64 KiB chunked body over a 1024-byte limit", &r, 413,
                     "payload_too_large", NULL);
        http_resp_free(&r);
        free(chunked);
        /* 413 is said before the body is read: the body is never sent */
        char resp[4096];
        const char *raw = "POST /encode HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          "Content-Length: 100000000\r\n\r\n{";
        long st = raw_request(&s, raw, strlen(raw), under_valgrind() ? 120 : 20, resp, sizeof resp);
        CHECK(st == 413, "POST /encode Content-Length 1e8, body not sent",
              "want 413 before the body, got %ld: %.200s", st, resp);
        http_get(&s, "/healthz", &r);
        CHECK(r.status == 200, "GET /healthz after 413s", "got %ld", r.status);
        http_resp_free(&r);
        server_stop(&s);
    }

    /* token limit: the flag wins over the variable */
    const char *args[] = {"--max-tokens", "8", NULL};
    const char *env2[] = {"POSENC_MAX_TOKENS=100", NULL};
    if (server_start(&s, "tokenlimit", args, env2)) {
        static const struct {
            const char *path, *body;
            bool ok;
        } cases[] = {
            {"/encode", "{\"shape\":[8,4]}", true},
            {"/encode", "{\"shape\":[9,4]}", false},
            {"/encode", "{\"shape\":[2,4,4]}", true},
            {"/encode", "{\"shape\":[3,3,4]}", false},
            {"/encode", "{\"scheme\":\"alibi\",\"params\":{\"heads\":2},\"shape\":[9,1]}", false},
            {"/encode", "{\"scheme\":\"none\",\"embeddings\":[[1],[2],[3],[4],[5],[6],[7],[8],[9]]}",
             false},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            char label[160];
            snprintf(label, sizeof label, "POST %s %s (--max-tokens 8)", cases[i].path,
                     cases[i].body);
            http_post_json(&s, cases[i].path, cases[i].body, &r);
            if (cases[i].ok)
                expect_ok(label, &r);
            else
                expect_error(label, &r, 422, "too_large", NULL);
            http_resp_free(&r);
        }
        /* /apply on the default model with 9 tokens (base64) */
        float *x = xcalloc(9 * 512, sizeof *x);
        sbuf b;
        sb_init(&b);
        sb_puts(&b, "{\"embeddings\":");
        sb_base64_floats(&b, x, 9 * 512);
        sb_puts(&b, ",\"shape\":[9,512]}");
        http_post_json(&s, "/apply", b.s, &r);
        expect_error("POST /apply [9,512] (--max-tokens 8)", &r, 422, "too_large", NULL);
        http_resp_free(&r);
        sb_free(&b);
        sb_init(&b);
        sb_puts(&b, "{\"embeddings\":");
        sb_base64_floats(&b, x, 8 * 512);
        sb_puts(&b, ",\"shape\":[2,4,512]}");
        http_post_json(&s, "/apply", b.s, &r);
        expect_ok("POST /apply [2,4,512] (--max-tokens 8)", &r);
        http_resp_free(&r);
        sb_free(&b);
        free(x);
        server_stop(&s);
    }
}
