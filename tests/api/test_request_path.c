/*
 * test_request_path.c - see test_request_path.h. Every case names the bug
 * it pins down; expected values come from the contract and from formulas
 * computed here in double, never from the code under test.
 */
#include "test_request_path.h"
#include "test_list.h"

#include <jansson.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "../unit/check.h"
#include "api.h"
#include "json/json_doc.h"
#include "json/strbuf.h"

void test_collect(api_response *r, size_t chunk)
{
    strbuf sb = {0};

    if (!r->stream.read)
        return;
    for (;;) {
        char *at = strbuf_reserve(&sb, chunk);
        size_t n = at ? r->stream.read(r->stream.state, at, chunk) : API_STREAM_FAILED;
        if (n == 0 || n == API_STREAM_FAILED)
            break;
        strbuf_advance(&sb, n);
    }
    r->stream.free(r->stream.state);
    r->stream = (api_body_stream){0};
    r->body = strbuf_detach(&sb, &r->body_len);
}

typedef struct answer {
    int status;
    char *body; /* owned */
    size_t len;
} answer;

static answer ask(const api_service *svc, bool apply, const char *body, size_t len)
{
    api_response r;
    answer a;

    if (apply)
        api_apply(svc, NULL, body, len, &r);
    else
        api_encode(svc, NULL, body, len, &r);
    test_collect(&r, 4096);
    a.status = r.status;
    a.len = r.body_len;
    a.body = r.body;
    r.body = NULL;
    api_response_free(&r);
    return a;
}

static const char *code_of(const answer *a, char *buf, size_t cap)
{
    json_t *doc = json_loadb(a->body, a->len, 0, NULL);
    const char *c = json_string_value(json_object_get(json_object_get(doc, "error"), "code"));
    snprintf(buf, cap, "%s", c ? c : "-");
    json_decref(doc);
    return buf;
}

/* `{"scheme":"none","embeddings":[[FIRST, 1, ...]] x rows, 64 wide}` with
 * `pad` spaces before the end: the same request at any body size. */
static char *number_body(const char *first, size_t rows, size_t pad, bool scheme_last)
{
    strbuf sb = {0};

    strbuf_puts(&sb, scheme_last ? "{\"embeddings\":[" : "{\"scheme\":\"none\",\"embeddings\":[");
    for (size_t r = 0; r < rows; r++) {
        strbuf_puts(&sb, r ? ",[" : "[");
        strbuf_puts(&sb, r == 0 ? first : "2");
        for (size_t c = 1; c < 64; c++)
            strbuf_puts(&sb, ",1");
        strbuf_putc(&sb, ']');
    }
    strbuf_puts(&sb, scheme_last ? "],\"scheme\":\"none\"" : "]");
    for (size_t i = 0; i < pad; i++)
        strbuf_putc(&sb, ' ');
    strbuf_putc(&sb, '}');
    return strbuf_detach(&sb, NULL);
}

/* The first number of "encoded" in a 200 answer, as text. */
static void first_encoded(const answer *a, char *buf, size_t cap)
{
    const char *p = a->body ? strstr(a->body, "\"encoded\":[[") : NULL;
    size_t n = 0;

    if (p)
        for (p += strlen("\"encoded\":[["); *p && *p != ',' && n + 1 < cap; p++)
            buf[n++] = *p;
    buf[n] = '\0';
}

/* Number grammar: small bodies (< 2 KiB) went through jansson's
 * doubles, big ones through the float32 scanner; now both must give the
 * same status, code and first value, and that value must be right. */
static void test_one_grammar(const api_service *svc)
{
    static const struct {
        const char *text;
        int status;
        const char *code, *first; /* first: the encoded value's text on 200 */
    } cases[] = {
        {"1.00000005960464477539062500000001", 200, "-", "1.0000001"}, /* digits past float32 */
        {"12345678901234567890", 200, "-", "1.2345679e19"},            /* integer overflow */
        {"1e400", 422, "non_finite", NULL},                            /* overflow */
        {"3.4028236e38", 422, "non_finite", NULL},
        {"-0", 200, "-", "-0"}, /* negative zero */
        {"0.1", 200, "-", "0.1"},
    };
    /* rows x pad: small (< 2 KiB), padded past 2 KiB, and an array past
     * 256 KiB (the parallel parser) */
    static const size_t shapes[][2] = {{1, 0}, {1, 4096}, {2100, 0}};

    for (size_t i = 0; i < ARRAY_LEN(cases); i++)
        for (size_t k = 0; k < ARRAY_LEN(shapes); k++)
            for (int last = 0; last < 2; last++) {
                char *body = number_body(cases[i].text, shapes[k][0], shapes[k][1], last);
                answer a = ask(svc, false, body, strlen(body));
                char code[64], first[64];
                first_encoded(&a, first, sizeof first);
                code_of(&a, code, sizeof code);
                CHECK(a.status == cases[i].status && strcmp(code, cases[i].code) == 0 &&
                          (!cases[i].first || strcmp(first, cases[i].first) == 0),
                      "%s in %zu rows + %zu spaces (scheme %s): %d %s first %s, want %d %s %s",
                      cases[i].text, shapes[k][0], shapes[k][1], last ? "last" : "first", a.status,
                      code, first, cases[i].status, cases[i].code,
                      cases[i].first ? cases[i].first : "");
                free(a.body);
                free(body);
            }
}

/* An 8 x 8 JSON matrix: `diagonal` on the diagonal, 0 elsewhere. */
static void put_matrix(strbuf *sb, int diagonal)
{
    strbuf_putc(sb, '[');
    for (int r = 0; r < 8; r++) {
        strbuf_puts(sb, r ? ",[" : "[");
        for (int c = 0; c < 8; c++)
            strbuf_printf(sb, "%s%d", c ? "," : "", r == c ? diagonal : 0);
        strbuf_putc(sb, ']');
    }
    strbuf_putc(sb, ']');
}

/* The text of the span v stands in for, or "-" when v is no stand-in. */
static const char *span_text(const json_doc *doc, const json_t *v, char *buf, size_t cap)
{
    const json_span *span = json_doc_array(doc, v);
    if (!span)
        return "-";
    snprintf(buf, cap, "%.*s", (int)(span->end - span->start), doc->text + span->start);
    return buf;
}

/* Stand-ins are told apart from the body's own `[]` by their place in
 * document order, never by content: every numeric array maps back to its
 * own text, real empty arrays to none, whatever the nesting. */
static void test_stand_ins(void)
{
    static const char body[] = "{\"a\":[],\"b\":[1, 2],\"c\":{\"d\":[],\"e\":[[3]],\"s\":\"[]\"},"
                               "\"f\":[[],[4],{\"g\":[5,6]},[[]]],\"h\":[[7,8],[9,10]]}";
    json_doc_limits limits = {.max_depth = 32, .max_values = 100};
    json_codec_error ce;
    json_doc doc;
    char buf[64];

    CHECK(json_doc_load(&doc, body, strlen(body), &limits, &ce) == 0, "load: %s", ce.message);
    const json_t *r = doc.root, *c = json_object_get(r, "c"), *f = json_object_get(r, "f");
    static const struct {
        const char *want;
    } want[] = {{"-"},   {"[1, 2]"}, {"-"}, {"[[3]]"},         {"-"},
                {"[4]"}, {"[5,6]"},  {"-"}, {"[[7,8],[9,10]]"}};
    const json_t *got[] = {json_object_get(r, "a"),
                           json_object_get(r, "b"),
                           json_object_get(c, "d"),
                           json_object_get(c, "e"),
                           json_array_get(f, 0),
                           json_array_get(f, 1),
                           json_object_get(json_array_get(f, 2), "g"),
                           json_array_get(json_array_get(f, 3), 0),
                           json_object_get(r, "h")};
    for (size_t i = 0; i < ARRAY_LEN(want); i++) {
        const char *t = span_text(&doc, got[i], buf, sizeof buf);
        CHECK(strcmp(t, want[i].want) == 0, "stand-in %zu: %s, want %s", i, t, want[i].want);
    }
    CHECK(json_is_string(json_object_get(c, "s")), "a string \"[]\" stays a string");
    json_doc_free(&doc);
}

/* Scalars: `1e400` outside a numeric array was a 400
 * invalid_json; a non-finite value is a 422 non_finite (contract), and an
 * integer past int64 a 422 out_of_range, at any body size. */
static void test_scalar_numbers(const api_service *svc)
{
    static const struct {
        const char *body, *code;
    } cases[] = {
        {"{\"shape\":[2,4],\"embed_scale\":1e400}", "non_finite"},
        {"{\"shape\":[2,4],\"params\":{\"base\":-1.5E999}}", "non_finite"},
        {"{\"shape\":[2,4],\"offset\":12345678901234567890}", "out_of_range"},
        {"{\"shape\":[2,4],\"x\":[1e400,\"a\"]}", "non_finite"},
    };
    char code[64];

    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        answer a = ask(svc, false, cases[i].body, strlen(cases[i].body));
        CHECK(a.status == 422 && strcmp(code_of(&a, code, sizeof code), cases[i].code) == 0,
              "%s: %d %.*s, want 422 %s", cases[i].body, a.status, (int)a.len, a.body,
              cases[i].code);
        free(a.body);
    }
}

/* "\u0023posenc-array:0" spelled a marker of the old fast
 * path and was replaced by another array's data (the embeddings became wq:
 * a 200). It is an ordinary string: a base64 wq without wq_shape, a 400. */
static void test_forged_marker(const api_service *svc)
{
    strbuf sb = {0};
    char code[64];

    strbuf_puts(&sb, "{\"embeddings\":");
    put_matrix(&sb, 2);
    strbuf_puts(&sb, ",\"model\":{\"d_model\":8,\"heads\":1,\"weights\":{"
                     "\"wq\":\"\\u0023posenc-array:0\",\"wk\":");
    put_matrix(&sb, 1);
    strbuf_puts(&sb, ",\"wv\":");
    put_matrix(&sb, 1);
    strbuf_puts(&sb, "}}");
    for (int i = 0; i < 3000; i++) /* past the old fast path's 2 KiB */
        strbuf_putc(&sb, ' ');
    strbuf_putc(&sb, '}');
    answer a = ask(svc, true, sb.data, sb.len);
    CHECK(a.status == 400 && strcmp(code_of(&a, code, sizeof code), "invalid_request") == 0 &&
              strstr(a.body, "\"field\":\"model.weights.wq_shape\""),
          "a forged stand-in is an ordinary string: %d %.*s", a.status, (int)a.len, a.body);
    free(a.body);
    strbuf_free(&sb);
}

/* A model.weights.wq_shape array followed by 256 KiB of
 * body was parsed as a float blob and refused; with the embeddings first
 * the same request was a 200. Both orders must give the same bytes. */
static void test_key_order(const api_service *svc)
{
    static const char model[] = "\"model\":{\"d_model\":4,\"heads\":1,\"weights\":{"
                                "\"wq\":[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]],\"wq_shape\":[4,"
                                "4],"
                                "\"wk\":[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]],"
                                "\"wv\":[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]]}}";
    strbuf rows = {0}, first = {0}, second = {0};

    strbuf_puts(&rows, "\"embeddings\":[");
    for (size_t t = 0; t < 20000; t++)
        strbuf_printf(&rows, "%s[0.25,-1.5,3,%zu]", t ? "," : "", t % 10);
    strbuf_puts(&rows, "],\"scheme\":\"none\",\"return\":[\"k\"]");
    strbuf_printf(&first, "{%s,%.*s}", model, (int)rows.len, rows.data);
    strbuf_printf(&second, "{%.*s,%s}", (int)rows.len, rows.data, model);
    CHECK(first.len > (256u << 10), "the body is past the old 256 KiB threshold");
    answer a = ask(svc, true, first.data, first.len);
    answer b = ask(svc, true, second.data, second.len);
    CHECK(a.status == 200 && b.status == 200 && a.len == b.len &&
              memcmp(a.body, b.body, a.len) == 0,
          "key order changes the answer: %d (%.80s) vs %d (%.80s)", a.status, a.body ? a.body : "",
          b.status, b.body ? b.body : "");
    free(a.body);
    free(b.body);
    strbuf_free(&rows);
    strbuf_free(&first);
    strbuf_free(&second);
}

/* `[{},{},...]` made jansson build a node per value (a
 * 64 MB body peaked at 5 GB). Past max_json_values the scanner refuses the
 * body before jansson sees it. */
static void test_envelope_bound(void)
{
    api_limits limits = {.max_json_values = 1000};
    api_error err;
    api_service *svc = api_service_new(&limits, &err);
    strbuf sb = {0};
    char code[64];

    if (!svc)
        return;
    strbuf_puts(&sb, "{\"shape\":[1,2],\"x\":[");
    for (size_t i = 0; i < 2000; i++)
        strbuf_puts(&sb, i ? ",{}" : "{}");
    strbuf_puts(&sb, "]}");
    answer a = ask(svc, false, sb.data, sb.len);
    CHECK(a.status == 422 && strcmp(code_of(&a, code, sizeof code), "too_large") == 0,
          "2000 empty objects past a limit of 1000 values: %d %s", a.status, code);
    free(a.body);
    /* numeric arrays do not count: 5000 numbers pass */
    sb.len = 0;
    strbuf_puts(&sb, "{\"scheme\":\"none\",\"embeddings\":[");
    for (size_t i = 0; i < 100; i++) {
        strbuf_puts(&sb, i ? ",[" : "[");
        for (size_t c = 0; c < 50; c++)
            strbuf_puts(&sb, c ? ",1" : "1");
        strbuf_putc(&sb, ']');
    }
    strbuf_puts(&sb, "]}");
    a = ask(svc, false, sb.data, sb.len);
    CHECK(a.status == 200, "5000 numbers in one array are not envelope values: %d", a.status);
    free(a.body);
    strbuf_free(&sb);
    api_service_free(svc);
}

/* Longrope factors were rounded to float32, so angles at
 * position 1e6 were off by ~1e-2. Reference: the double formula
 * inv_freq_i = 1 / (long_factor_i * base^(2i/d)). */
static void test_longrope_in_double(const api_service *svc)
{
    static const double long_factor[2] = {1.0000001234567, 3.3333333333333};
    const double base = 10000.0, pos = 1e6;
    char body[512];

    snprintf(body, sizeof body,
             "{\"shape\":[1,4],\"positions\":[1000000],\"scheme\":\"rope\",\"params\":{"
             "\"scaling\":{\"type\":\"longrope\",\"short_factor\":[1,1],"
             "\"long_factor\":[%.17g,%.17g],\"original_max_position_embeddings\":4096}}}",
             long_factor[0], long_factor[1]);
    answer a = ask(svc, false, body, strlen(body));
    json_t *doc = json_loadb(a.body, a.len, 0, NULL);
    json_t *row = json_array_get(json_object_get(doc, "encoded"), 0);
    double want[4];
    float got[4];
    for (size_t i = 0; i < 2; i++) {
        double inv = 1.0 / (long_factor[i] * pow(base, (double)(2 * i) / 4.0));
        want[i] = (float)cos(pos * inv);
        want[2 + i] = (float)sin(pos * inv);
    }
    for (size_t i = 0; i < 4; i++)
        got[i] = (float)json_number_value(json_array_get(row, i));
    CHECK(a.status == 200 && json_array_size(row) == 4, "longrope at 1e6: status %d", a.status);
    CHECK_CLOSE(got, want, 4, 1e-6, "longrope at position 1e6 against the double formula");
    json_decref(doc);
    free(a.body);
}

/* A yarn attention factor derived <= 0 from mscale /
 * mscale_all_dim was served (negative); get_mscale(4, -20) = 1 - 2 ln 4 < 0. */
static void test_yarn_derived_factor(const api_service *svc)
{
    static const char body[] =
        "{\"shape\":[2,8],\"scheme\":\"rope\",\"params\":{\"scaling\":{\"type\":\"yarn\","
        "\"factor\":4,\"original_max_position_embeddings\":16,\"mscale\":-20,"
        "\"mscale_all_dim\":1}}}";
    char code[64];
    answer a = ask(svc, false, body, strlen(body));
    CHECK(a.status == 422 && strcmp(code_of(&a, code, sizeof code), "out_of_range") == 0 &&
              strstr(a.body, "params.scaling.mscale"),
          "yarn with a derived attention factor <= 0: %d %.*s", a.status, (int)a.len, a.body);
    free(a.body);
}

/* Contract "Details settled": with the model's scheme, request params
 * override the model's key by key (the model keeps its scheme decoded). */
static void test_params_merge(const api_service *svc)
{
    /* an inline model with t5 num_buckets 8, max_distance 4 (exact 2 < 4):
     * a request turning bidirectional off keeps both (exact 4 >= 4: 422) */
    static const char merged[] =
        "{\"embeddings\":[[1,0],[0,1]],\"return\":[\"bias\"],\"model\":{\"d_model\":2,"
        "\"heads\":1,\"scheme\":\"t5\",\"params\":{\"num_buckets\":8,\"max_distance\":4},"
        "\"weights\":{\"wq\":[[1,0],[0,1]],\"wk\":[[1,0],[0,1]],\"wv\":[[1,0],[0,1]],"
        "\"t5_bias\":[[1],[2],[3],[4],[5],[6],[7],[8]]}},\"params\":{\"bidirectional\":false}}";
    char code[64];
    answer a = ask(svc, true, merged, strlen(merged));
    CHECK(a.status == 422 && strcmp(code_of(&a, code, sizeof code), "out_of_range") == 0 &&
              strstr(a.body, "params.max_distance"),
          "merged t5 params are checked together: %d %.*s", a.status, (int)a.len, a.body);
    free(a.body);
}

/* A budget that records what is reserved and released. */
typedef struct fake_budget {
    api_budget_answer answer;
    size_t reserved, released, calls;
} fake_budget;

static api_budget_answer fake_reserve(void *owner, size_t bytes, size_t held)
{
    fake_budget *b = owner;
    (void)held;
    b->calls++;
    if (b->answer == API_BUDGET_GRANTED)
        b->reserved += bytes;
    return b->answer;
}

static void fake_release(void *owner, size_t bytes)
{
    ((fake_budget *)owner)->released += bytes;
}

/* One body through a service, its answer read whole (a stream in chunks
 * of `chunk` bytes). */
static answer ask_budget(const api_service *svc, const api_budget *budget, bool apply,
                         const char *body, size_t chunk, bool *streamed)
{
    api_response r;
    answer a;

    if (apply)
        api_apply(svc, budget, body, strlen(body), &r);
    else
        api_encode(svc, budget, body, strlen(body), &r);
    *streamed = r.stream.read != NULL;
    test_collect(&r, chunk);
    a.status = r.status;
    a.len = r.body_len;
    a.body = r.body;
    r.body = NULL;
    api_response_free(&r);
    return a;
}

/* Large answers are streamed a window at a time; the
 * bytes must be those of the answer written whole, for every layout the
 * writer has (nested 2-D and 3-D, base64, strided q/k/v, scores). */
static void test_streamed_answers(void)
{
    api_limits whole_limits = {.stream_min_bytes = SIZE_MAX};
    api_limits small_limits = {.stream_min_bytes = 4096};
    api_error err;
    api_service *whole = api_service_new(&whole_limits, &err);
    api_service *streamer = api_service_new(&small_limits, &err);
    static const struct {
        bool apply;
        const char *body;
    } cases[] = {
        {false, "{\"shape\":[300,70]}"},
        {false, "{\"shape\":[3,100,70],\"offset\":5}"},
        {false, "{\"shape\":[301,70],\"encoding\":\"base64\"}"},
        {false, "{\"shape\":[64,16],\"scheme\":\"alibi\",\"params\":{\"heads\":4}}"},
        {false, "{\"shape\":[40,64],\"scheme\":\"rope\",\"params\":{\"scaling\":{"
                "\"type\":\"yarn\",\"factor\":4,\"original_max_position_embeddings\":16}}}"},
        /* past 2^14 values a window: written by a team of two below */
        {false, "{\"shape\":[2000,40]}"},
        {false, "{\"shape\":[2001,40],\"encoding\":\"base64\"}"},
        {false, "{\"shape\":[4,500,40],\"offset\":3}"},
        {false, NULL}, /* built below: 700 x 64 embeddings */
        {true, NULL},  /* built below: q, v, scores of the default model */
        {true, NULL},  /* the same in base64 */
    };
    strbuf apply_body = {0}, encode_body = {0};

    CHECK(whole && streamer, "services");
    if (!whole || !streamer)
        goto out;
    for (int b64 = 0; b64 < 2; b64++) {
        strbuf_puts(&apply_body, "{\"return\":[\"v\",\"scores\",\"q\"],\"embeddings\":[");
        for (size_t t = 0; t < 7; t++) {
            strbuf_puts(&apply_body, t ? ",[" : "[");
            for (size_t j = 0; j < 512; j++)
                strbuf_printf(&apply_body, "%s%d", j ? "," : "", (int)((t * 5 + j) % 9) - 4);
            strbuf_putc(&apply_body, ']');
        }
        strbuf_puts(&apply_body, b64 ? "],\"encoding\":\"base64\"}" : "]}");
        strbuf_putc(&apply_body, '\0');
    }
    const char *apply_bodies[2] = {apply_body.data, apply_body.data + strlen(apply_body.data) + 1};
    strbuf_puts(&encode_body, "{\"embeddings\":[");
    for (size_t t = 0; t < 700; t++) {
        strbuf_puts(&encode_body, t ? ",[" : "[");
        for (size_t j = 0; j < 64; j++)
            strbuf_printf(&encode_body, "%s%d.%d", j ? "," : "", (int)((t * 3 + j) % 7) - 3,
                          (int)(t + j) % 10);
        strbuf_putc(&encode_body, ']');
    }
    strbuf_puts(&encode_body, "]}");
    int threads = omp_get_max_threads();
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        const char *body = cases[i].body               ? cases[i].body
                           : i + 2 >= ARRAY_LEN(cases) ? apply_bodies[i + 2 - ARRAY_LEN(cases)]
                                                       : encode_body.data;
        bool streamed = false;
        /* the reference: the whole text by one thread; the streams below
         * have two (a window past 2^14 values is then written by both) */
        omp_set_num_threads(1);
        answer want = ask_budget(whole, NULL, cases[i].apply, body, 4096, &streamed);
        omp_set_num_threads(2);
        CHECK(want.status == 200 && !streamed, "case %zu written whole: %d", i, want.status);
        static const size_t chunks[] = {1, 997, 65536};
        for (size_t c = 0; c < ARRAY_LEN(chunks); c++) {
            answer got = ask_budget(streamer, NULL, cases[i].apply, body, chunks[c], &streamed);
            CHECK(streamed && got.status == 200 && got.len == want.len &&
                      memcmp(got.body, want.body, want.len) == 0,
                  "case %zu streamed in chunks of %zu: %s, %zu bytes vs %zu", i, chunks[c],
                  streamed ? "streamed" : "whole", got.len, want.len);
            free(got.body);
        }
        free(want.body);
    }
    omp_set_num_threads(threads);
out:
    strbuf_free(&apply_body);
    strbuf_free(&encode_body);
    api_service_free(whole);
    api_service_free(streamer);
}

/* The budget hooks of api.h: a request reserves after its plan, gives it
 * all back when its answer is gone (for a stream: when the stream is
 * freed); busy is a 503, more than the whole budget a 422 too_large. A
 * streamed answer holds a window, not its text. */
static void test_budget(const api_service *svc)
{
    fake_budget fb = {.answer = API_BUDGET_GRANTED};
    api_budget budget = {.owner = &fb, .reserve = fake_reserve, .release = fake_release};
    static const char big[] = "{\"shape\":[2048,1024]}";
    bool streamed = false;
    char code[64];

    answer a = ask_budget(svc, &budget, false, big, 65536, &streamed);
    /* one call for the decoded shape (limit decode-charge), one after the plan */
    CHECK(a.status == 200 && streamed && fb.calls == 2 && fb.released == fb.reserved,
          "granted: %d, %s, reserved %zu released %zu", a.status, streamed ? "streamed" : "whole",
          fb.reserved, fb.released);
    /* positions (16 KiB) + the table (8 MiB) + a window: far below the text */
    CHECK(fb.reserved < (size_t)9 << 20 && a.len > (size_t)16 << 20,
          "a streamed answer of %zu bytes held %zu", a.len, fb.reserved);
    free(a.body);
    fb = (fake_budget){.answer = API_BUDGET_GRANTED};
    a = ask_budget(svc, &budget, true, "{\"embeddings\":[[1,2]]}", 4096, &streamed);
    CHECK(fb.calls == 1 && fb.released == fb.reserved && a.status == 422,
          "a request refused in decoding gives back what decoding reserved");
    free(a.body);
    fb = (fake_budget){.answer = API_BUDGET_BUSY};
    a = ask_budget(svc, &budget, false, "{\"shape\":[4,8]}", 4096, &streamed);
    CHECK(a.status == 503 && strcmp(code_of(&a, code, sizeof code), "unavailable") == 0,
          "busy budget: %d %s", a.status, code);
    free(a.body);
    fb = (fake_budget){.answer = API_BUDGET_NEVER};
    a = ask_budget(svc, &budget, true, "{\"embeddings\":[[1,2,3,4,5,6,7,8]]}", 4096, &streamed);
    CHECK(a.status == 422 || a.status == 503, "never: %d", a.status);
    free(a.body);
    fb = (fake_budget){.answer = API_BUDGET_NEVER};
    a = ask_budget(svc, &budget, false, "{\"shape\":[4,8]}", 4096, &streamed);
    CHECK(a.status == 422 && strcmp(code_of(&a, code, sizeof code), "too_large") == 0 &&
              fb.released == 0,
          "a request past the whole budget: %d %s", a.status, code);
    free(a.body);
}

void test_request_path(void)
{
    api_limits limits = {0};
    api_error err;
    api_service *svc = api_service_new(&limits, &err);

    CHECK(svc != NULL, "service");
    if (!svc)
        return;
    test_one_grammar(svc);
    test_stand_ins();
    test_forged_marker(svc);
    test_scalar_numbers(svc);
    test_key_order(svc);
    test_longrope_in_double(svc);
    test_yarn_derived_factor(svc);
    test_params_merge(svc);
    test_envelope_bound();
    test_streamed_answers();
    test_budget(svc);
    api_service_free(svc);
}
